/* The engine loop: event pool, clock, dispatch table, statistics. Handlers own all meaning;
 * the engine only guarantees order (time, then insertion) and that time never goes back. */
#include "des/des.h"

#include "core/ss_alloc.h"
#include "core/ss_err.h"
#include "des/queue.h"

#include <string.h>

#define POOL_CHUNK 256

typedef struct pool_chunk {
    struct pool_chunk *next;
    des_event ev[POOL_CHUNK];
} pool_chunk;

struct des_engine {
    ss_time now;                        /* time of the event being or last dispatched */
    uint64_t next_seq;                  /* insertion counter */
    des_queue q;                        /* pending events */
    des_handler_fn *handlers[DES_MAX_KINDS];
    void *ctx;                          /* borrowed, passed to handlers */
    des_event *free_list;               /* recycled events */
    pool_chunk *chunks;                 /* owned; freed only at destroy */
    int stop;                           /* set by des_stop */
    int dispatched_any;                 /* tie counting starts after the first event */
    uint16_t last_kind;                 /* kind and target of the event dispatched last */
    uint32_t last_target;
    des_stats st;
    des_progress_fn *progress;
    void *progress_ud;
    uint64_t progress_every;
    uint64_t progress_next;             /* n_events at which the callback is due next */
    size_t pending_kind[DES_MAX_KINDS]; /* events of each kind in the queue */
};

int des_engine_create(des_engine **e_out, void *ctx)
{
    des_engine *e = ss_calloc(1, sizeof *e);
    if (!e)
        return SS_ENOMEM;
    des__queue_init(&e->q);
    e->ctx = ctx;
    *e_out = e;
    return SS_OK;
}

void des_engine_destroy(des_engine **ep)
{
    des_engine *e = *ep;
    if (!e)
        return;
    des__queue_fini(&e->q);
    while (e->chunks) {
        pool_chunk *c = e->chunks;
        e->chunks = c->next;
        ss_free(c);
    }
    ss_free(e);
    *ep = NULL;
}

int des_handler_set(des_engine *e, uint16_t kind, des_handler_fn *fn)
{
    if (kind >= DES_MAX_KINDS)
        return SS_EINVAL;
    e->handlers[kind] = fn;
    return SS_OK;
}

static des_event *pool_get(des_engine *e)
{
    if (!e->free_list) {
        pool_chunk *c = ss_malloc(sizeof *c);
        if (!c)
            return NULL;
        c->next = e->chunks;
        e->chunks = c;
        for (int i = POOL_CHUNK - 1; i >= 0; i--) {
            c->ev[i].data.next_free = e->free_list;
            e->free_list = &c->ev[i];
        }
        e->st.pool_events += POOL_CHUNK;
    }
    des_event *ev = e->free_list;
    e->free_list = ev->data.next_free;
    return ev;
}

static void pool_put(des_engine *e, des_event *ev)
{
    ev->data.next_free = e->free_list;
    e->free_list = ev;
}

void des_engine_reset(des_engine *e, void *ctx)
{
    des_event *ev;
    while ((ev = des__queue_pop(&e->q)))
        pool_put(e, ev);
    des_queue q = e->q;
    des_event *free_list = e->free_list;
    pool_chunk *chunks = e->chunks;
    size_t pool_events = e->st.pool_events;
    memset(e, 0, sizeof *e);
    e->q = q;
    e->free_list = free_list;
    e->chunks = chunks;
    e->st.pool_events = pool_events;
    e->ctx = ctx;
}

des_event *des__schedule(des_engine *e, ss_time at, uint16_t kind, uint32_t target,
                         const char *file, int line)
{
    if (at < e->now)
        ss_fatal(file, line, "event kind %u scheduled into the past: at %lld ns < now %lld ns",
                 (unsigned)kind, (long long)at, (long long)e->now);
    if (kind >= DES_MAX_KINDS || !e->handlers[kind])
        ss_fatal(file, line, "event kind %u has no handler", (unsigned)kind);
    des_event *ev = pool_get(e);
    if (!ev)
        return NULL;
    ev->at = at;
    ev->seq = e->next_seq;
    ev->kind = kind;
    ev->flags = 0;
    ev->target = target;
    memset(&ev->data, 0, sizeof ev->data);
    if (des__queue_push(&e->q, ev)) {
        pool_put(e, ev);
        return NULL;
    }
    e->next_seq++;
    e->pending_kind[kind]++;
    e->st.n_scheduled++;
    if (des__queue_size(&e->q) > e->st.peak_queue)
        e->st.peak_queue = des__queue_size(&e->q);
    return ev;
}

void des_cancel(des_engine *e, des_event *ev)
{
    (void)e;
    ev->flags |= DES_EV_CANCELLED;
}

/* Pop cancelled events off the top so that the head is live; returns it or NULL. */
static des_event *live_head(des_engine *e)
{
    des_event *ev;
    while ((ev = des__queue_peek(&e->q)) && (ev->flags & DES_EV_CANCELLED)) {
        des__queue_pop(&e->q);
        e->st.n_cancelled++;
        e->pending_kind[ev->kind]--;
        pool_put(e, ev);
    }
    return ev;
}

static void dispatch(des_engine *e, des_event *ev)
{
    if (e->dispatched_any && ev->at == e->now)
        e->st.n_ties++;
    e->dispatched_any = 1;
    e->now = ev->at;
    e->last_kind = ev->kind;
    e->last_target = ev->target;
    e->st.n_events++;
    e->pending_kind[ev->kind]--;
    e->handlers[ev->kind](e, ev, e->ctx);
    pool_put(e, ev);
}

int des_step(des_engine *e)
{
    if (!live_head(e))
        return 0;
    dispatch(e, des__queue_pop(&e->q));
    return 1;
}

uint64_t des_run(des_engine *e, ss_time until)
{
    uint64_t n = 0;
    e->stop = 0;
    des_event *ev;
    while (!e->stop && (ev = live_head(e)) && ev->at <= until) {
        dispatch(e, des__queue_pop(&e->q));
        n++;
        if (e->progress_every && e->st.n_events >= e->progress_next) {
            e->progress_next = (e->st.n_events / e->progress_every + 1) * e->progress_every;
            e->progress(e, e->progress_ud);
        }
    }
    return n;
}

void des_stop(des_engine *e) { e->stop = 1; }
ss_time des_now(const des_engine *e) { return e->now; }

void des_start_at(des_engine *e, ss_time t)
{
    if (e->dispatched_any || des__queue_peek(&e->q))
        ss_fatal(SS_LOC, "des_start_at: the engine has already run or has events pending");
    e->now = t;
}
size_t des_pending(const des_engine *e) { return des__queue_size(&e->q); }

size_t des_pending_kind(const des_engine *e, uint16_t kind)
{
    return kind < DES_MAX_KINDS ? e->pending_kind[kind] : 0;
}

void des_note_handled(des_engine *e, uint64_t n) { e->st.n_events += n; }

ss_time des_next_time(des_engine *e)
{
    des_event *ev = live_head(e);
    return ev ? ev->at : SS_TIME_MAX;
}

const des_stats *des_get_stats(const des_engine *e) { return &e->st; }

void des_last_event(const des_engine *e, uint16_t *kind, uint32_t *target)
{
    *kind = e->last_kind;
    *target = e->last_target;
}

void des_progress_set(des_engine *e, des_progress_fn *fn, void *ud, uint64_t every)
{
    e->progress = fn;
    e->progress_ud = ud;
    e->progress_every = fn ? every : 0;
    e->progress_next = every ? (e->st.n_events / every + 1) * every : 0;
}
