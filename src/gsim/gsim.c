/* Global simulator, fast path: one ARRIVAL event per distinct arrival time (the next trace
 * record is read only when its predecessor is admitted, so the trace streams) and one
 * ITER_DONE event per iteration. Batching decisions are validated and applied here: queue
 * moves, KV blocks, swaps, rejections, and the iteration's cost. */
#include "gsim/gsim.h"

#include "core/ss_alloc.h"
#include "core/ss_log.h"
#include "core/ss_rng.h"
#include "policy/policy.h"
#include "gsim/check.h"
#include "gsim/slice.h"

#include "config.h"

#include <stdio.h>
#include <string.h>

enum {
    EV_ARRIVAL = 1, EV_ITER_DONE = 2, EV_CLUSTER_TICK = 3, EV_CTR_READY = 4, EV_MIG_STAGE = 5,
    EV_GUEST = 6,        /* the last placed chunk of an offloaded prefill ends */
    EV_OFFLOAD_DONE = 7, /* an offloaded prefill's first token and KV are home */
    EV_SLICE_TICK = 8,   /* SliceScheduler decides */
    EV__COUNT
};

/* Each event kind's name and what its target id is (NULL: none), for --check's messages. */
static const struct { const char *name, *target; } ev_names[EV__COUNT] = {
    [EV_ARRIVAL] = {"ARRIVAL", NULL},          [EV_ITER_DONE] = {"ITER_DONE", "container"},
    [EV_CLUSTER_TICK] = {"CLUSTER_TICK", NULL}, [EV_CTR_READY] = {"CTR_READY", "container"},
    [EV_MIG_STAGE] = {"MIG_STAGE", "migration"}, [EV_GUEST] = {"GUEST", "offload"},
    [EV_OFFLOAD_DONE] = {"OFFLOAD_DONE", "offload"}, [EV_SLICE_TICK] = {"SLICE_TICK", NULL},
};

/* A live migration in progress (Llumnix): stages copy the KV blocks the request holds on the
 * source while it keeps decoding there; the last stage stops it and copies what is left. */
typedef struct migration {
    gmg_id req, from, to;
    uint32_t stage;       /* stages started */
    uint32_t copied;      /* blocks copied (or being copied) so far */
    uint32_t reserved;    /* blocks reserved at the destination */
    uint8_t final;        /* the stop-and-copy stage is running */
    uint8_t want_final;   /* stop-and-copy waits for the source's iteration to end */
    uint8_t aborted;      /* ended early; its stage event is ignored */
    gmg_id next_free;     /* free-list link */
} migration;

/* A tenant during the run: its configuration and the containers that take its requests. */
typedef struct tenant_state {
    gsim_tenant t;               /* copy of the configuration (strings borrowed) */
    gmg_ctr_spec spec;           /* how its containers are built */
    gmg_id *cands;               /* owned: active containers serving it, ascending ids */
    uint32_t n_cands, cap;
    uint32_t n_incoming;         /* containers being drained or loaded for it */
    gmg_id *standby;             /* owned: its standby containers (auto-scaling), ascending */
    uint32_t n_standby;
} tenant_state;

/* A prefill offloaded by SliceScheduler: request `req` of container `home` is prefilled, chunk
 * by chunk (0: embedding, 1..L: the decoder layers, L + 1: final norm and LM head), on the
 * GPUs of container `helper`, in their idle time (see guest_place). Each chunk's weights are
 * streamed from home ahead of it (double-buffered), each layer's KV goes home after it; the
 * request rejoins home, with its first token, once both are done. */
typedef struct offload {
    gmg_id req, home, helper;
    uint32_t n_chunks, next;     /* chunks in all; the first one not yet placed */
    ss_time head_ns, layer_ns, tail_ns; /* chunk durations on the helper */
    double w_head, w_layer, w_tail;     /* weight bytes per GPU streamed for each chunk */
    double kv_layer;             /* KV bytes per GPU of one layer */
    double buffers;              /* bytes held on each helper GPU while it runs */
    uint32_t n_ops;              /* operators of the prefill (host work not included) */
    ss_time w_ready;             /* when the next unplaced chunk's weights have arrived */
    ss_time kv_ready;            /* when the latest layer's KV has arrived home */
    ss_time event_at;            /* pending EV_GUEST (end of the last placed chunk), 0: none */
    des_event *ev;               /* that event */
    ss_time done_at;             /* pending EV_OFFLOAD_DONE time, 0: none */
    ss_time predicted;           /* the what-if's predicted first token (0: none) */
    gmg_id next_free;            /* free-list link; GMG_NONE also marks a job in use */
    uint8_t in_use;
} offload;

/* Per-container engine state for cluster policies and guest work. */
typedef struct ctr_state {
    int next_tenant;             /* DRAINING/LOADING: tenant it goes to */
    gmg_id guest;                /* offload running on its GPUs, GMG_NONE if none */
    ss_time guest_until;         /* end of the last guest chunk placed on its GPUs */
    const cat_model *staged;     /* another model's weights staged on its GPUs, NULL if none */
    uint32_t staged_blocks;      /* KV blocks lent to them */
    ss_time stage_ready;         /* when they have arrived */
    uint64_t epoch;              /* bumped whenever something outside its own evolution reaches
                                    it (an arrival, an offload, a migration, a cluster action):
                                    a what-if taken before is then out of date */
} ctr_state;

struct gsim {
    gsim_config cfg;
    tenant_state *ten;           /* owned, cfg.n_tenants (or 1) entries */
    uint32_t n_ten;
    gsim_tenant single;          /* the tenant made from the single-tenant shortcut */
    uint64_t n_finished;         /* requests completed or rejected, warm-up included */
    uint64_t n_completed, n_rejected; /* the two kinds of n_finished, apart */
    gsim_checker chk;            /* --check's memory between events */
    int tier_ordered;            /* waiting queues in (tier, arrival) order */
    gmg *g;
    des_engine *des;
    pol_route *route;
    pol_cluster *cluster;
    ctr_state *cs;               /* owned, one per container */
    pol_tenant_view *views;      /* owned scratch for cluster ticks */
    pol_cluster_decision cd;     /* owned scratch arrays */
    migration *migs;             /* owned: live migrations, recycled through free_mig */
    uint32_t n_migs, cap_migs;
    gmg_id free_mig;
    pol_batch *batch;            /* one instance; per-container state in gmg_container.batch_priv */
    ss_rng route_rng;
    metrics m;
    pol_batch_decision dec;      /* scratch, arrays sized by ensure_decision */
    size_t dec_cap;
    gsim_source_fn *src;
    void *src_ud;
    gsim_sink_fn *sink;
    void *sink_ud;
    trace_rec next;              /* the next request to arrive */
    int have_next;
    int rc;                      /* first error; stops the run */
    ss_errbuf *eb;
    uint64_t iterations;
    gsim_progress_fn *progress;
    void *progress_ud;
    gsim_observer obs;           /* optional callbacks */
    int fork;                    /* a what-if copy: borrows the batching policy and costs */
    offload *offs;               /* owned: offloaded prefills, recycled through free_off */
    uint32_t n_offs, cap_offs;
    gmg_id free_off;
    ss_time max_overrun;         /* a guest chunk may end this long after its host phase */
    slice_sched *slice;          /* owned: SliceScheduler, NULL under "home" placement */
};

static void maybe_drained(gsim *s, gmg_container *c);
static void maybe_abort_migration(gsim *s, gmg_req *q);
static migration *mig_at(gsim *s, gmg_id m);
static void mig_begin_final(gsim *s, gmg_id mid);
static void maybe_evict(gsim *s, gmg_container *h);
static void unstage(gsim *s, gmg_container *h);
static void guest_idle(gsim *s, gmg_container *h);
static ss_time guest_fill(gsim *s, gmg_container *h, ss_time from, ss_time until);

void gsim_config_defaults(gsim_config *c)
{
    memset(c, 0, sizeof *c);
    c->replicas = 1;
    c->tp = 1;
    c->pp = 1;
    c->batching = "vllm";
    c->routing = NULL; /* the cluster policy's choice: rr for container */
    c->cost = "roofline";
    c->seed = 1;
    c->gpu_mem_util = 0.9;
    c->block_tokens = 16;
    c->max_model_len = 16384;
    c->runtime_reserve = 1073741824.0;
    c->swap_bytes = 4.0 * 1073741824.0;
    c->guest_overrun = 1 * SS_NS_PER_MS;
#if SS_CHECK_DEFAULT && !defined(NDEBUG)
    c->check = 1; /* a debug build checks every invariant after every event */
#endif
}

/* ---- errors ----------------------------------------------------------------------------- */

static void fail(gsim *s, int rc)
{
    if (!s->rc)
        s->rc = rc;
    des_stop(s->des);
}

/* The clock would pass the end of the simulated time range: times are summed with
 * ss_time_add, so such a time saturates at SS_TIME_MAX. Fails the run (the first failure's
 * message is kept); returns its code. */
static int past_range(gsim *s, const des_engine *e)
{
    if (!s->rc)
        fail(s, ss_err(s->eb, SS_EINVAL, "simulated time would pass the end of its range "
                       "(%.4g s) after %.9g s: the run's iterations, transfers or loads take "
                       "too long", ss_time_to_s(SS_TIME_MAX), ss_time_to_s(des_now(e))));
    return s->rc;
}

/* Schedule an event on e (s's engine) at `at`. A time past the simulated time range or a full
 * event pool fails the run (the first failure's message is kept) and gives NULL. */
#define sched(s, e, at, kind, target) sched_at((s), (e), (at), (kind), (target), __FILE__, __LINE__)
static des_event *sched_at(gsim *s, des_engine *e, ss_time at, uint16_t kind, uint32_t target,
                           const char *file, int line)
{
    if (at == SS_TIME_MAX) {
        past_range(s, e);
        return NULL;
    }
    des_event *ev = des__schedule(e, at, kind, target, file, line);
    if (!ev && !s->rc)
        fail(s, ss_err(s->eb, SS_ENOMEM, "event queue: out of memory"));
    return ev;
}

/* ---- request state changes ------------------------------------------------------------- */

static void notify(gsim *s, const gmg_container *c, const gmg_req *q, gsim_req_event what)
{
    if (s->obs.on_request)
        s->obs.on_request(s->obs.ud, s->g, c, q, what, des_now(s->des));
}

/* Which SLA bounds q broke (METRICS_SLA_* bits), on the client-side times: TTFT and E2E
 * include the engine's front-end latency fe_ns. Its own TBT p99 breaks the bound when more
 * gaps exceed it than the 1 % the nearest-rank p99 may leave above. A rejected request breaks
 * its SLA if it has one: without any bound, nothing is violated. */
static uint8_t sla_bits(const gmg_req *q, int rejected, ss_time fe_ns)
{
    if (rejected)
        return q->sla_ttft || q->sla_tbt || q->sla_e2e ? METRICS_SLA_REJECTED : 0;
    uint8_t b = 0;
    if (q->sla_ttft && q->first_token + fe_ns - q->arrival > q->sla_ttft)
        b |= METRICS_SLA_TTFT;
    if (q->sla_e2e && q->finish + fe_ns - q->arrival > q->sla_e2e)
        b |= METRICS_SLA_E2E;
    uint32_t gaps = q->generated > 1 ? q->generated - 1 : 0;
    uint32_t rank = (uint32_t)((gaps * 99u + 99u) / 100u); /* ceil(0.99 * gaps) */
    if (q->sla_tbt && gaps && q->tbt_over > gaps - rank)
        b |= METRICS_SLA_TBT;
    return b;
}

/* The metrics' name for a batching policy's reason to reject (pol_reject_why). */
static uint8_t reject_reason(uint32_t why)
{
    switch (why) {
    case POL_REJECT_TOO_LONG: return METRICS_REJ_TOO_LONG;
    case POL_REJECT_BATCH_TOKENS: return METRICS_REJ_BATCH_TOKENS;
    case POL_REJECT_KV: return METRICS_REJ_KV;
    case POL_REJECT_PREEMPTED: return METRICS_REJ_PREEMPTED;
    default: return METRICS_REJ_OTHER;
    }
}

/* Tenant t's serving engine (NULL for an unknown tenant). */
static const cat_engine *tenant_engine(const gsim *s, uint16_t t)
{
    return t < s->n_ten ? s->ten[t].t.engine : NULL;
}

/* The front-end latency of tenant t's engine (API server, tokenisation, detokenisation,
 * streaming) that a client adds to the server-side TTFT and E2E, ns. */
static ss_time frontend_ns(const gsim *s, uint16_t t)
{
    const cat_engine *e = tenant_engine(s, t);
    return e && e->frontend_s > 0 ? ss_time_from_s(e->frontend_s) : 0;
}

/* Record q's outcome: completed, or rejected for reason why (METRICS_REJ_*). The record holds
 * client-side times: a completed request's first token and finish are shifted by the engine's
 * front-end latency and its async-scheduling lag (server-side scheduling never sees them). */
static void emit_result(gsim *s, const gmg_req *q, int rejected, uint8_t why)
{
    ss_time fe = rejected ? 0 : ss_time_add(frontend_ns(s, q->tenant), q->sched_lag);
    metrics_req r = {
        .trace_id = q->trace_id, .tenant = q->tenant, .tier = q->tier, .rejected = (uint8_t)rejected,
        .reject_why = rejected ? why : 0, .sla = sla_bits(q, rejected, fe), .measured = q->measured,
        .container = q->container, .prompt = q->prompt, .output_asked = q->output_asked,
        .generated = q->generated, .preemptions = q->preemptions, .migrations = q->migrations,
        .arrival = q->arrival, .first_token = q->first_token, .finish = q->finish + fe,
        .tbt_sum = q->tbt_sum, .tbt_max = q->tbt_max,
    };
    if (r.first_token >= 0)
        r.first_token += fe;
    if (!s->fork) /* a fork's predictions are its requests and its sink's records */
        metrics_add_req(&s->m, &r);
    s->n_finished++;
    if (rejected)
        s->n_rejected++;
    else
        s->n_completed++;
    if (s->m.oom)
        fail(s, ss_err(s->eb, SS_ENOMEM, "metrics: out of memory"));
    else if (s->sink) {
        int rc = s->sink(s->sink_ud, &r, s->eb);
        if (rc)
            fail(s, rc);
    }
}

/* Waiting-queue moves keep the container's waiting_blocks (routing demand) current. */
static void wait_push(gsim *s, gmg_container *c, gmg_id r, int front)
{
    gmg_req *q = gmg_req_at(s->g, r);
    q->wait_blocks = gmg_blocks_for(c, (uint64_t)q->prompt + q->generated);
    c->waiting_blocks += q->wait_blocks;
    q->state = GMG_REQ_WAITING;
    if (front) {
        gmg_list_push_front(s->g, &c->waiting, r);
    } else if (s->tier_ordered) {
        /* (tier, arrival) order: after the last request of the same or a better tier */
        gmg_id after = c->waiting.tail;
        while (after != GMG_NONE && s->g->reqs[after].tier > q->tier &&
               s->g->reqs[after].preemptions == 0)
            after = s->g->reqs[after].prev;
        gmg_list_insert_after(s->g, &c->waiting, after, r);
    } else {
        gmg_list_push_back(s->g, &c->waiting, r);
    }
}

static void wait_remove(gsim *s, gmg_container *c, gmg_id r)
{
    gmg_req *q = gmg_req_at(s->g, r);
    c->waiting_blocks -= q->wait_blocks;
    q->wait_blocks = 0;
    gmg_list_remove(s->g, &c->waiting, r);
}

/* Take r out of whatever queue it is in, releasing its GPU and host KV blocks. */
static void unlink_request(gsim *s, gmg_container *c, gmg_id r)
{
    gmg_req *q = gmg_req_at(s->g, r);
    switch (q->state) {
    case GMG_REQ_WAITING: wait_remove(s, c, r); break;
    case GMG_REQ_RUNNING:
        gmg_list_remove(s->g, &c->running, r);
        gmg_req_set_blocks(s->g, c, q, 0);
        break;
    case GMG_REQ_SWAPPED:
        gmg_list_remove(s->g, &c->swapped, r);
        gmg_req_swap_in(s->g, c, q); /* return the host blocks... */
        gmg_req_set_blocks(s->g, c, q, 0); /* ...and drop them */
        break;
    default: ss_fatal(SS_LOC, "request %llu in state %u cannot leave its container",
                      (unsigned long long)q->trace_id, q->state);
    }
}

static void reject(gsim *s, gmg_container *c, gmg_id r, uint32_t why)
{
    gmg_req *q = gmg_req_at(s->g, r);
    maybe_abort_migration(s, q);
    s->m.aborted += q->state != GMG_REQ_WAITING || q->preemptions > 0;
    unlink_request(s, c, r);
    q->state = GMG_REQ_REJECTED;
    q->finish = des_now(s->des);
    notify(s, c, q, GSIM_REQ_REJECT);
    emit_result(s, q, 1, reject_reason(why));
    gmg_req_free(s->g, r);
}

static void finish(gsim *s, gmg_container *c, gmg_id r)
{
    gmg_req *q = gmg_req_at(s->g, r);
    maybe_abort_migration(s, q);
    unlink_request(s, c, r);
    q->state = GMG_REQ_DONE;
    q->finish = des_now(s->des);
    notify(s, c, q, GSIM_REQ_FINISH);
    emit_result(s, q, 0, 0);
    gmg_req_free(s->g, r);
}

/* ---- starting an iteration -------------------------------------------------------------- */

enum { DEC_ARRAYS = 8 }; /* run, q_tokens, hold, preempt, swap_out, swap_in, reject, why */

static int ensure_decision(gsim *s, size_t need)
{
    if (need <= s->dec_cap)
        return SS_OK;
    size_t cap = s->dec_cap ? s->dec_cap : 64;
    while (cap < need)
        cap *= 2;
    /* one block holds the eight arrays (all 32-bit) */
    uint32_t *b = ss_realloc(s->dec.run, cap * DEC_ARRAYS * sizeof *b);
    if (!b)
        return SS_ENOMEM;
    pol_batch_decision *d = &s->dec;
    d->run = b;
    d->q_tokens = b + cap;
    d->hold = b + 2 * cap;
    d->preempt = b + 3 * cap;
    d->swap_out = b + 4 * cap;
    d->swap_in = b + 5 * cap;
    d->reject = b + 6 * cap;
    d->reject_why = b + 7 * cap;
    s->dec_cap = cap;
    return SS_OK;
}

static gmg_req *running_req(gsim *s, gmg_id r, const char *what)
{
    gmg_req *q = gmg_req_at(s->g, r);
    if (q->state != GMG_REQ_RUNNING)
        ss_fatal(SS_LOC, "policy chose to %s request %llu, which is not running (state %u)", what,
                 (unsigned long long)q->trace_id, q->state);
    return q;
}

static void preempt(gsim *s, gmg_container *c, gmg_id r)
{
    gmg_req *q = running_req(s, r, "preempt");
    maybe_abort_migration(s, q);
    gmg_list_remove(s->g, &c->running, r);
    gmg_req_set_blocks(s->g, c, q, 0);
    q->computed = 0;
    q->pc_registered = 0; /* its recomputed prompt blocks join the cache again */
    q->preemptions++;
    wait_push(s, c, r, 1);
    notify(s, c, q, GSIM_REQ_PREEMPT);
}

static void swap_out(gsim *s, gmg_container *c, gmg_id r)
{
    gmg_req *q = running_req(s, r, "swap out");
    maybe_abort_migration(s, q);
    gmg_list_remove(s->g, &c->running, r);
    c->iter.swap_blocks += q->blocks;
    gmg_req_swap_out(s->g, c, q);
    q->state = GMG_REQ_SWAPPED;
    q->preemptions++;
    s->m.swap_outs++;
    gmg_list_push_back(s->g, &c->swapped, r);
    notify(s, c, q, GSIM_REQ_SWAP_OUT);
}

static void swap_in(gsim *s, gmg_container *c, gmg_id r)
{
    gmg_req *q = gmg_req_at(s->g, r);
    if (q->state != GMG_REQ_SWAPPED)
        ss_fatal(SS_LOC, "policy swapped in request %llu, which is not swapped (state %u)",
                 (unsigned long long)q->trace_id, q->state);
    gmg_list_remove(s->g, &c->swapped, r);
    c->iter.swap_blocks += q->swapped_blocks;
    gmg_req_swap_in(s->g, c, q);
    q->state = GMG_REQ_RUNNING;
    gmg_list_push_back(s->g, &c->running, r);
    notify(s, c, q, GSIM_REQ_SWAP_IN);
}

/* A request admitted with nothing computed reads the longest cached prefix of its tokens: those
 * count as computed and the iteration computes only the rest (at least one token, as vLLM).
 * The policy sized the admission without the hit; when the idle cached blocks it takes (they
 * leave the free pool) and its new blocks do not fit, it takes a shorter prefix. Returns the
 * query tokens left of q_tok. */
static uint32_t prefix_hit(gsim *s, gmg_container *c, gmg_req *q, uint32_t q_tok, uint32_t hold)
{
    uint32_t bt = c->block_tokens, total = q->prompt + q->generated, h = 0, idle = 0;
    uint32_t lim = gmg_pc_blocks(q, bt);
    if (lim > (total - 1) / bt)
        lim = (total - 1) / bt;
    /* One walk down the chain: h is the longest cached prefix whose idle blocks and the
     * request's new ones fit in the free pool. */
    uint64_t key = 0;
    for (uint32_t n = 1; n <= lim; n++) {
        key = gmg_pc_key(q, bt, n - 1, key);
        int st = gmg_pc_state(c, key);
        if (st < 0)
            break;
        idle += (uint32_t)st;
        uint32_t left = total - n * bt, qt = q_tok < left ? q_tok : left;
        uint64_t blocks = gmg_blocks_for(c, (uint64_t)n * bt + qt);
        if (hold > blocks)
            blocks = hold;
        if (idle + blocks - n <= c->blocks_free)
            h = n;
    }
    if (!s->fork)
        metrics_add_prefix(&s->m, q->tenant, q->measured, !q->preemptions, q->prompt,
                           gmg_pc_blocks(q, bt), h, h * bt);
    if (!h)
        return q_tok;
    gmg_pc_take(s->g, c, q, h);
    q->computed = h * bt;
    return q_tok < total - q->computed ? q_tok : total - q->computed;
}

/* Put request r into the batch for q_tok tokens of its pending work, admitting it when it is
 * waiting and growing its KV blocks to what its tokens (or the policy's reservation) need. */
static void admit(gsim *s, gmg_container *c, gmg_id r, uint32_t q_tok, uint32_t hold)
{
    gmg_req *q = gmg_req_at(s->g, r);
    uint32_t pending = q->prompt + q->generated - q->computed;
    if (q_tok - 1 >= pending) /* q_tok < 1 or q_tok > pending */
        ss_fatal(SS_LOC, "policy scheduled %u tokens of request %llu, which has %u pending",
                 q_tok, (unsigned long long)q->trace_id, pending);
    if (q->state != GMG_REQ_RUNNING || q->q_tokens) {
        if (q->state != GMG_REQ_WAITING)
            ss_fatal(SS_LOC, "policy scheduled request %llu in state %u%s",
                     (unsigned long long)q->trace_id, q->state, q->q_tokens ? " twice" : "");
        wait_remove(s, c, r);
        gmg_list_push_back(s->g, &c->running, r);
        q->state = GMG_REQ_RUNNING;
        if (c->pc && !q->computed && !q->blocks) {
            q_tok = prefix_hit(s, c, q, q_tok, hold);
            pending = q->prompt + q->generated - q->computed;
        }
    }
    uint64_t tokens = (uint64_t)q->computed + q_tok;
    if (!gmg_blocks_hold(c, q->blocks, tokens) || hold > q->blocks) {
        uint32_t blocks = gmg_blocks_for(c, tokens);
        gmg_req_set_blocks(s->g, c, q, hold > blocks ? hold : blocks);
    }
    if (pending == 1 && q->generated > 0)
        cost_batch_add_decode(&c->iter.batch, tokens);
    else
        cost_batch_add_prefill(&c->iter.batch, q_tok, q->computed);
    q->q_tokens = q_tok;
    c->iter.reqs[c->iter.n_reqs++] = r;
}

static int ensure_iter(gmg_container *c, uint32_t n)
{
    if (n <= c->iter.cap)
        return SS_OK;
    size_t cap = c->iter.cap;
    if (ss_grow((void **)&c->iter.reqs, &cap, n, sizeof *c->iter.reqs))
        return SS_ENOMEM;
    c->iter.cap = (uint32_t)cap;
    return SS_OK;
}

/* Apply one decision; returns the number of requests in the batch. */
static uint32_t apply(gsim *s, gmg_container *c)
{
    const pol_batch_decision *d = &s->dec;
    for (uint32_t i = 0; i < d->n_reject; i++)
        reject(s, c, d->reject[i], d->reject_why[i]);
    for (uint32_t i = 0; i < d->n_preempt; i++)
        preempt(s, c, d->preempt[i]);
    for (uint32_t i = 0; i < d->n_swap_out; i++)
        swap_out(s, c, d->swap_out[i]);
    for (uint32_t i = 0; i < d->n_swap_in; i++)
        swap_in(s, c, d->swap_in[i]);
    for (uint32_t i = 0; i < d->n_run; i++)
        admit(s, c, d->run[i], d->q_tokens[i], d->hold[i]);
    cost_batch_merge(&c->iter.batch, &d->extra);
    return d->n_run;
}

/* KV swap transfers of the iteration: each GPU of the TP group moves its shard over its own
 * PCIe link, before the forward pass (vLLM swaps synchronously in the step). */
static ss_time swap_time(const gsim *s, const gmg_container *c)
{
    if (!c->iter.swap_blocks)
        return 0;
    double bytes = gmg_swap_bytes_per_gpu(s->g, c, c->iter.swap_blocks);
    return ss_time_from_ns_sat(bytes / s->cfg.gpu->pcie_bw * 1e9);
}

/* Ask the policy until it runs something or has nothing left to change. */
static int decide_batch(gsim *s, gmg_container *c)
{
    for (;;) {
        uint32_t n = c->waiting.n + c->running.n + c->swapped.n;
        if (n == 0 || s->rc)
            return 0;
        if (ensure_decision(s, n) || ensure_iter(c, n)) {
            fail(s, ss_err(s->eb, SS_ENOMEM, "scheduler: out of memory"));
            return 0;
        }
        pol_batch_decide(s->batch, c->batch_priv, s->g, c, &s->dec);
        const pol_batch_decision *d = &s->dec;
        int changed = d->n_reject || d->n_preempt || d->n_swap_out || d->n_swap_in;
        if (apply(s, c))
            return 1;
        if (!changed && c->waiting.n + c->running.n + c->swapped.n)
            ss_fatal(SS_LOC, "container %u: batching policy '%s' stalled with %u waiting, %u "
                     "running and %u swapped requests", c->id, pol_batch_name(s->batch),
                     c->waiting.n, c->running.n, c->swapped.n);
    }
}

/* GPU u idles from its last compute phase until `until`: record that slice, if any, with the
 * memory free now, and how much of it (in the window) lies in the latest host phase. */
static void idle_until(gsim *s, gmg_gpu *u, ss_time until)
{
    if (until <= u->dev_free)
        return;
    ss_time len = metrics_add_slice(&s->m, u->dev_free, until, gmg_gpu_free_bytes(u));
    u->idle_slices += len > 0;
    u->idle_ns += len;
    ss_time a = until - len > u->host_from ? until - len : u->host_from;
    ss_time b = until < u->host_to ? until : u->host_to;
    if (len > 0 && b > a)
        u->host_ns += b - a;
}

/* The GPUs of stage st of c compute over [from, to). */
static void compute_phase(gsim *s, const gmg_container *c, uint32_t st, ss_time from, ss_time to)
{
    for (uint32_t k = 0; k < c->tp; k++) {
        gmg_gpu *u = &s->g->gpus[gmg_stage_gpu(c, st) + k];
        idle_until(s, u, from);
        u->dev_busy_ns += to - from;
        if (to > u->dev_free)
            u->dev_free = to;
    }
}

/* Time the decided batch through the replica's pipeline: each stage runs its layers (the first
 * also swaps and the head, the last the tail, the others end by sending the activations) as
 * soon as the previous stage is done and the stage is free of earlier micro-batches. With one
 * stage this is the whole iteration, starting now. */
static int schedule_stages(gsim *s, gmg_container *c, ss_time now)
{
    gmg_replica *rep = &s->g->replicas[c->replica];
    cost_split sp;
    cost_iteration_split(c->cost, &c->iter.batch, &sp);
    ss_time t = now;
    for (uint32_t st = 0; st < c->pp; st++) {
        ss_time d = sp.layer_ns * (ss_time)cost_stage_layers(c->model, c->pp, st);
        if (st == 0)
            d += c->iter.swap_ns + sp.head_ns;
        if (st + 1 == c->pp)
            d += sp.tail_ns;
        else
            d += gmg_stage_send_ns(s->g, c, st, NULL);
        ss_time begin = t > rep->stage_free[st] ? t : rep->stage_free[st];
        /* the host phase (scheduling, input preparation, sampling) opens the first stage; guest
         * chunks may fill it, and its compute waits for the last of them */
        ss_time host = st == 0 ? sp.host_ns : 0, dev = ss_time_add(begin, host), wait = 0;
        if (st == 0) {
            for (uint32_t k = 0; k < c->tp; k++) {
                s->g->gpus[gmg_stage_gpu(c, 0) + k].host_from = begin;
                s->g->gpus[gmg_stage_gpu(c, 0) + k].host_to = dev;
            }
            ss_time free_at = guest_fill(s, c, begin, dev);
            if (free_at > dev)
                wait = free_at - dev;
            c->iter.wait_ns = wait;
        }
        ss_time end = ss_time_add(ss_time_add(begin, wait), d);
        if (end == SS_TIME_MAX) /* nothing is accounted */
            return past_range(s, s->des);
        c->iter.stage_start[st] = begin;
        c->iter.stage_end[st] = end;
        rep->stage_free[st] = end;
        gmg_account_busy(s->g, c, st, d);
        compute_phase(s, c, st, dev + wait, end);
        t = end;
    }
    c->iter.start = c->iter.stage_start[0];
    c->iter.end = t;
    return SS_OK;
}

static void start_iteration(gsim *s, gmg_container *c)
{
    maybe_evict(s, c);
    memset(&c->iter.batch, 0, sizeof c->iter.batch);
    c->iter.n_reqs = 0;
    c->iter.swap_blocks = 0;
    if (!decide_batch(s, c))
        return;
    c->iter.swap_ns = swap_time(s, c);
    c->busy = 1;
    c->iter.seq++;
    if (schedule_stages(s, c, des_now(s->des)))
        return;
    if (s->obs.on_iter)
        s->obs.on_iter(s->obs.ud, s->g, c);
    sched(s, s->des, c->iter.end, EV_ITER_DONE, c->id);
}

/* ---- iteration completion --------------------------------------------------------------- */

/* Advance q by the tokens it computed this iteration; returns 1 if that emitted a token. */
static int advance(gsim *s, gmg_req *q, ss_time now)
{
    q->computed += q->q_tokens;
    q->q_tokens = 0;
    if (q->computed < q->prompt + q->generated)
        return 0; /* a prefill chunk: no token yet */
    if (!q->pc_registered && q->state == GMG_REQ_RUNNING && s->g->ctrs[q->container].pc)
        gmg_pc_register(s->g, &s->g->ctrs[q->container], q);
    q->generated++;
    if (q->first_token < 0) {
        q->first_token = now;
    } else {
        ss_time gap = now - q->last_token;
        q->tbt_sum += gap;
        if (gap > q->tbt_max)
            q->tbt_max = gap;
        q->tbt_over += q->sla_tbt && gap > q->sla_tbt;
        if (q->measured && !s->fork)
            metrics_add_gap(&s->m, q->tenant, q->tier, gap);
    }
    q->last_token = now;
    return 1;
}

static void on_iter_done(des_engine *e, des_event *ev, void *ctx)
{
    gsim *s = ctx;
    gmg_container *c = &s->g->ctrs[ev->target];
    ss_time now = des_now(e);
    for (uint32_t i = 0; i < c->iter.n_reqs; i++) {
        gmg_id r = c->iter.reqs[i];
        gmg_req *q = gmg_req_at(s->g, r);
        if (advance(s, q, now) && q->generated >= q->output)
            finish(s, c, r);
        else if (q->mig != GMG_NONE && mig_at(s, q->mig)->want_final)
            mig_begin_final(s, q->mig);
    }
    c->iter.n_reqs = 0;
    c->busy = 0;
    c->iterations++;
    s->iterations++;
    c->prev_step_ns = c->iter.end - c->iter.start;
    start_iteration(s, c);
    if (!c->busy) {
        c->prev_step_ns = 0;
        guest_idle(s, c);
    }
    if (c->status == GMG_CTR_DRAINING && !c->busy)
        maybe_drained(s, c);
}

/* ---- offloaded prefills: guest work on other containers' GPUs ------------------------------- */

/* Move per_gpu bytes from each GPU of container a's TP group to b's (gmg_transfer), no earlier
 * than `earliest`. Returns the arrival time. */
static ss_time link_send(gsim *s, const gmg_container *a, const gmg_container *b, double per_gpu,
                         uint32_t tp, ss_time earliest)
{
    return gmg_transfer(s->g, a->gpu0, b->gpu0, tp, per_gpu, earliest);
}

static ss_time chunk_ns(const offload *o, uint32_t k)
{
    return k == 0 ? o->head_ns : k + 1 == o->n_chunks ? o->tail_ns : o->layer_ns;
}

static double chunk_weights(const offload *o, uint32_t k)
{
    return k == 0 ? o->w_head : k + 1 == o->n_chunks ? o->w_tail : o->w_layer;
}

/* (Re)schedule the job's one EV_GUEST at `at`, the end of its last placed chunk. */
static void guest_event(gsim *s, gmg_id oid, ss_time at)
{
    offload *o = &s->offs[oid];
    if (o->ev)
        des_cancel(s->des, o->ev);
    o->ev = sched(s, s->des, at, EV_GUEST, oid);
    o->event_at = at;
}

/* Place the job's next chunk on the helper's GPUs at `at` (or once its weights are in and the
 * previous chunk is done): its compute time, the stream of the following chunk's weights, the
 * KV it produces sent home. Returns its end. */
static ss_time guest_place(gsim *s, gmg_id oid, ss_time at)
{
    offload *o = &s->offs[oid];
    gmg_container *h = &s->g->ctrs[o->helper], *home = &s->g->ctrs[o->home];
    ctr_state *cs = &s->cs[o->helper];
    uint32_t k = o->next++;
    ss_time start = at, weights_at = o->w_ready;
    if (o->w_ready > start)
        start = o->w_ready;
    if (cs->guest_until > start)
        start = cs->guest_until;
    ss_time end = ss_time_add(start, chunk_ns(o, k));
    s->m.slices_used += start != cs->guest_until; /* not a continuation of guest work */
    for (uint32_t i = 0; i < h->tp; i++) {
        gmg_gpu *u = &s->g->gpus[h->gpu0 + i];
        idle_until(s, u, start);
        u->dev_busy_ns += end - start;
        u->guest_ns += end - start;
        u->dev_free = end;
    }
    cs->guest_until = end;
    s->m.offload_chunks++;
    if (s->obs.on_guest)
        s->obs.on_guest(s->obs.ud, s->g, h, gmg_req_at(s->g, o->req), k, o->n_chunks, start, end,
                        weights_at);
    if (o->next < o->n_chunks) { /* double buffering: the next chunk's weights come meanwhile */
        o->w_ready = link_send(s, home, h, chunk_weights(o, o->next), h->tp, start);
        s->m.offload_bytes += chunk_weights(o, o->next) * h->tp;
    }
    if (k > 0 && k + 1 < o->n_chunks) { /* a decoder layer: its KV goes home */
        ss_time kv = link_send(s, h, home, o->kv_layer, h->tp, end);
        if (kv > o->kv_ready)
            o->kv_ready = kv;
        s->m.offload_bytes += o->kv_layer * h->tp;
    }
    return end;
}

/* The helper idles now: run one more chunk (one at a time, so that a request arriving at the
 * helper waits at most one chunk). */
static void guest_idle(gsim *s, gmg_container *h)
{
    gmg_id oid = s->cs[h->id].guest;
    if (oid == GMG_NONE || h->busy)
        return;
    offload *o = &s->offs[oid];
    ss_time now = des_now(s->des);
    if (o->next >= o->n_chunks || s->cs[h->id].guest_until > now)
        return; /* all placed, or one still running: its EV_GUEST comes back here */
    guest_event(s, oid, guest_place(s, oid, now));
}

/* The helper's iteration starts at `from` with a host phase until `until`: fill it with the
 * chunks that start before its end and overrun it by at most max_overrun. Returns when the
 * helper's GPUs are free of guest work again. */
static ss_time guest_fill(gsim *s, gmg_container *h, ss_time from, ss_time until)
{
    ctr_state *cs = &s->cs[h->id];
    gmg_id oid = cs->guest;
    if (oid == GMG_NONE)
        return cs->guest_until;
    offload *o = &s->offs[oid];
    int placed = 0;
    while (o->next < o->n_chunks) {
        ss_time start = from;
        if (o->w_ready > start)
            start = o->w_ready;
        if (cs->guest_until > start)
            start = cs->guest_until;
        if (start >= until ||
            ss_time_add(start, chunk_ns(o, o->next)) > ss_time_add(until, s->max_overrun))
            break;
        guest_place(s, oid, start);
        placed = 1;
    }
    if (placed)
        guest_event(s, oid, cs->guest_until);
    return cs->guest_until;
}

static void offload_free(gsim *s, gmg_id oid)
{
    offload *o = &s->offs[oid];
    o->in_use = 0;
    o->next_free = s->free_off;
    s->free_off = oid;
}

/* EV_GUEST: the job's placed chunks are done. */
static void on_guest(des_engine *e, des_event *ev, void *ctx)
{
    gsim *s = ctx;
    gmg_id oid = ev->target;
    offload *o = &s->offs[oid];
    o->ev = NULL;
    o->event_at = 0;
    gmg_container *h = &s->g->ctrs[o->helper];
    if (o->next < o->n_chunks) {
        guest_idle(s, h);
        return;
    }
    /* every chunk ran: free the helper, and the request is ready once its KV is home */
    for (uint32_t i = 0; i < h->tp; i++)
        s->g->gpus[h->gpu0 + i].mem.transfer -= o->buffers;
    s->cs[o->helper].guest = GMG_NONE;
    o->done_at = o->kv_ready > des_now(e) ? o->kv_ready : des_now(e);
    sched(s, e, o->done_at, EV_OFFLOAD_DONE, oid);
}

/* EV_OFFLOAD_DONE: the request rejoins its container with its first token. */
static void on_offload_done(des_engine *e, des_event *ev, void *ctx)
{
    gsim *s = ctx;
    gmg_id oid = ev->target;
    offload *o = &s->offs[oid];
    gmg_container *home = &s->g->ctrs[o->home];
    gmg_req *q = gmg_req_at(s->g, o->req);
    ss_time now = des_now(e);
    s->cs[o->home].epoch++;
    s->m.offloads_done++;
    s->m.offload_ops += o->n_ops;
    if (o->predicted > 0) {
        ss_time err = now > o->predicted ? now - o->predicted : o->predicted - now;
        s->m.offload_pred_err_ns += err;
        s->m.offload_predicted++;
    }
    home->blocks_offloaded -= q->blocks;
    home->n_offloaded--;
    q->computed = q->prompt;
    q->generated = 1;
    q->first_token = now;
    q->last_token = now;
    gmg_id r = o->req;
    offload_free(s, oid);
    if (q->generated >= q->output) {
        q->state = GMG_REQ_RUNNING; /* finish() takes it from the running list */
        gmg_list_push_back(s->g, &home->running, r);
        finish(s, home, r);
    } else {
        q->state = GMG_REQ_RUNNING;
        gmg_list_push_back(s->g, &home->running, r);
    }
    if (!home->busy && home->status != GMG_CTR_LOADING && home->status != GMG_CTR_STANDBY)
        start_iteration(s, home);
    if (home->status == GMG_CTR_DRAINING && !home->busy)
        maybe_drained(s, home);
}

static gmg_id offload_alloc(gsim *s)
{
    if (s->free_off == GMG_NONE) {
        size_t cap = s->cap_offs;
        if (ss_grow((void **)&s->offs, &cap, s->n_offs + 1, sizeof *s->offs))
            return GMG_NONE;
        s->cap_offs = (uint32_t)cap;
        s->offs[s->n_offs].next_free = GMG_NONE;
        s->free_off = s->n_offs++;
    }
    gmg_id oid = s->free_off;
    s->free_off = s->offs[oid].next_free;
    memset(&s->offs[oid], 0, sizeof s->offs[oid]);
    s->offs[oid].in_use = 1;
    return oid;
}

/* The job's shape: chunk durations from the home container's cost model (the helper's GPUs
 * are of the same kind and TP degree), weights and KV per GPU, the helper's buffers. */
static void offload_shape(const gsim *s, offload *o, const gmg_container *home,
                          const gmg_req *q, int staged)
{
    const cat_model *m = home->model;
    cost_batch b = {0};
    cost_batch_add_prefill(&b, q->prompt, 0);
    cost_split sp;
    cost_iteration_split(home->cost, &b, &sp);
    o->n_chunks = m->layers + 2;
    o->head_ns = sp.head_ns - sp.host_ns; /* the embedding; home's host time is not repeated */
    o->layer_ns = sp.layer_ns;
    o->tail_ns = sp.tail_ns;
    double tp = home->tp, dt = m->dtype_bytes;
    double vocab = (double)m->vocab * m->hidden * dt / tp;
    double total = cost_weight_bytes_per_gpu(m, home->tp, 1);
    o->w_head = vocab;
    o->w_tail = vocab;
    o->w_layer = (total - vocab * (m->tied_embeddings ? 1 : 2)) / m->layers;
    o->kv_layer = (double)q->prompt * cat_model_kv_bytes_per_token(m) / m->layers / tp;
    double act = (double)q->prompt * (4.0 * m->hidden + 2.0 * m->ffn / tp) * dt;
    double w = o->w_layer > o->w_head ? o->w_layer : o->w_head;
    o->buffers = 2 * w + act + o->kv_layer;
    if (staged) { /* the weights are (or will be) resident: nothing to stream per chunk */
        o->w_head = o->w_tail = o->w_layer = 0;
        o->buffers = act + o->kv_layer;
    }
    cost_op ops[COST_OP__COUNT + 4];
    ss_time ns[COST_OP__COUNT + 4];
    size_t n = cost_iteration_ops(home->cost, &b, ops, ns, COST_OP__COUNT + 4);
    o->n_ops = 0;
    for (size_t i = 0; i < n; i++)
        if (ops[i].kind != COST_OP_HOST)
            o->n_ops += ops[i].count;
    (void)s;
}

/* KV blocks of helper h that staging home's model weights would take. */
static uint32_t stage_blocks_needed(const gmg_container *home, const gmg_container *h)
{
    double bytes = cost_weight_bytes_per_gpu(home->model, home->tp, 1);
    return (uint32_t)((bytes + h->block_bytes - 1) / h->block_bytes);
}

/* Whether home's weights are staged on h, or can be: h lends free KV blocks while keeping a
 * fifth of its pool plus its queue's demand free (another model staged there is evicted). */
static int can_stage(const gsim *s, const gmg_container *home, const gmg_container *h)
{
    const ctr_state *cs = &s->cs[h->id];
    if (s->cfg.guest_weights == GSIM_WEIGHTS_STREAM)
        return 0;
    if (cs->staged == home->model)
        return 1;
    uint64_t avail = (uint64_t)h->blocks_free + cs->staged_blocks;
    uint64_t need = stage_blocks_needed(home, h) + h->blocks_total / 5 + h->waiting_blocks;
    return avail >= need;
}

static void unstage(gsim *s, gmg_container *h)
{
    ctr_state *cs = &s->cs[h->id];
    if (!cs->staged)
        return;
    gmg_unstage_blocks(s->g, h, cs->staged_blocks);
    cs->staged = NULL;
    cs->staged_blocks = 0;
}

/* Memory pressure: the helper's own queue needs the blocks its staged guest weights hold. */
static void maybe_evict(gsim *s, gmg_container *h)
{
    ctr_state *cs = &s->cs[h->id];
    if (cs->staged && cs->guest == GMG_NONE && h->waiting_blocks &&
        h->blocks_free < h->waiting_blocks + h->blocks_total / 100) {
        unstage(s, h);
        s->m.evictions++;
        cs->epoch++;
    }
}

int gsim_offload_check(const gsim *s, gmg_id r, gmg_id helper, ss_errbuf *eb)
{
    if (r >= s->g->n_slots || s->g->reqs[r].state != GMG_REQ_WAITING)
        return ss_err(eb, SS_EINVAL, "offload: request slot %u is not waiting", r);
    const gmg_req *q = gmg_req_at(s->g, r);
    if (q->computed || q->generated || q->preemptions || q->mig != GMG_NONE)
        return ss_err(eb, SS_EINVAL, "offload: request %llu has started already",
                      (unsigned long long)q->trace_id);
    const gmg_container *home = &s->g->ctrs[q->container];
    if (helper >= s->g->n_ctrs || helper == home->id)
        return ss_err(eb, SS_EINVAL, "offload: container %u cannot help container %u", helper,
                      home->id);
    const gmg_container *h = &s->g->ctrs[helper];
    if (home->pp != 1 || h->pp != 1 || h->tp != home->tp || h->status != GMG_CTR_ACTIVE ||
        home->status != GMG_CTR_ACTIVE)
        return ss_err(eb, SS_EINVAL, "offload: containers %u and %u must be active, unpipelined "
                      "and of the same TP degree", home->id, helper);
    if (s->cs[helper].guest != GMG_NONE)
        return ss_err(eb, SS_EINVAL, "offload: container %u already runs a guest prefill",
                      helper);
    uint32_t need = pol_batch_offload_hold(s->batch, home, q);
    if (need == POL_NO_OFFLOAD)
        return ss_err(eb, SS_EINVAL, "offload: batching '%s' cannot take request %llu back from "
                      "another container's GPUs now", pol_batch_name(s->batch),
                      (unsigned long long)q->trace_id);
    if (need > home->blocks_free)
        return ss_err(eb, SS_EINVAL, "offload: container %u has %u free KV blocks, request %llu "
                      "needs %u", home->id, home->blocks_free, (unsigned long long)q->trace_id,
                      need);
    offload shape = {0};
    offload_shape(s, &shape, home, q, can_stage(s, home, h));
    if (s->cfg.guest_weights == GSIM_WEIGHTS_STAGE && !can_stage(s, home, h))
        return ss_err(eb, SS_EINVAL, "offload: container %u has too few free KV blocks to stage "
                      "%s's weights", helper, home->model->name);
    for (uint32_t i = 0; i < h->tp; i++)
        if (gmg_gpu_spare_bytes(&s->g->gpus[h->gpu0 + i]) < shape.buffers)
            return ss_err(eb, SS_EINVAL, "offload: GPU %u has %.2f GiB spare, the prefill needs "
                          "%.2f GiB", h->gpu0 + i,
                          gmg_gpu_spare_bytes(&s->g->gpus[h->gpu0 + i]) / 1073741824.0,
                          shape.buffers / 1073741824.0);
    return SS_OK;
}

int gsim_offload(gsim *s, gmg_id r, gmg_id helper, ss_time predicted, ss_errbuf *eb)
{
    int rc = gsim_offload_check(s, r, helper, eb);
    if (rc)
        return rc;
    gmg_req *q = gmg_req_at(s->g, r);
    gmg_container *home = &s->g->ctrs[q->container], *h = &s->g->ctrs[helper];
    uint32_t need = pol_batch_offload_hold(s->batch, home, q);
    int staged = can_stage(s, home, h);
    offload shape = {0};
    offload_shape(s, &shape, home, q, staged);
    gmg_id oid = offload_alloc(s);
    if (oid == GMG_NONE)
        return ss_err(eb, SS_ENOMEM, "offload: out of memory");
    offload *o = &s->offs[oid];
    *o = shape;
    o->in_use = 1;
    o->next_free = GMG_NONE;
    o->req = r, o->home = home->id, o->helper = helper;
    ss_time now = des_now(s->des);
    o->predicted = predicted;
    wait_remove(s, home, r);
    gmg_req_set_blocks(s->g, home, q, need);
    home->blocks_offloaded += need;
    home->n_offloaded++;
    q->state = GMG_REQ_OFFLOADED;
    for (uint32_t i = 0; i < h->tp; i++)
        s->g->gpus[h->gpu0 + i].mem.transfer += o->buffers;
    ctr_state *hs = &s->cs[helper];
    if (staged && hs->staged != home->model) { /* stage: lend blocks, copy the whole model */
        unstage(s, h);
        hs->staged_blocks = stage_blocks_needed(home, h);
        gmg_stage_blocks(s->g, h, hs->staged_blocks);
        hs->staged = home->model;
        double bytes = cost_weight_bytes_per_gpu(home->model, home->tp, 1);
        hs->stage_ready = link_send(s, home, h, bytes, h->tp, now);
        s->m.offload_bytes += bytes * h->tp;
        s->m.stagings++;
    }
    if (staged)
        o->w_ready = hs->stage_ready > now ? hs->stage_ready : now;
    else
        o->w_ready = link_send(s, home, h, o->w_head, h->tp, now);
    s->m.offload_bytes += o->w_head * h->tp;
    s->cs[helper].guest = oid;
    s->cs[helper].epoch++;
    s->cs[home->id].epoch++;
    s->m.offloads++;
    guest_idle(s, h);
    return SS_OK;
}

/* ---- cluster policies: re-allocation, draining, loading ------------------------------------ */

static void cands_remove(tenant_state *t, gmg_id c)
{
    uint32_t j = 0;
    for (uint32_t i = 0; i < t->n_cands; i++)
        if (t->cands[i] != c)
            t->cands[j++] = t->cands[i];
    t->n_cands = j;
}

static void cands_insert(tenant_state *t, gmg_id c)
{
    uint32_t i = t->n_cands++;
    for (; i > 0 && t->cands[i - 1] > c; i--)
        t->cands[i] = t->cands[i - 1];
    t->cands[i] = c;
}

/* Move the queued requests of a container that stops taking requests to the other active
 * containers of its tenant (chosen by the router, as if they had just arrived). */
static void reroute_waiting(gsim *s, gmg_container *c)
{
    tenant_state *t = &s->ten[c->tenant];
    while (c->waiting.head != GMG_NONE && t->n_cands) {
        gmg_id r = c->waiting.head;
        wait_remove(s, c, r);
        gmg_id to = pol_route_pick(s->route, s->g, r, t->cands, t->n_cands);
        gmg_req_at(s->g, r)->container = to;
        wait_push(s, &s->g->ctrs[to], r, 0);
        if (!s->g->ctrs[to].busy)
            start_iteration(s, &s->g->ctrs[to]);
    }
}

/* A draining container with nothing left starts loading its next tenant's weights. */
static void maybe_drained(gsim *s, gmg_container *c)
{
    if (c->busy || c->waiting.n || c->running.n || c->swapped.n || c->migrating_out ||
        c->blocks_reserved || c->blocks_offloaded || s->cs[c->id].guest != GMG_NONE)
        return;
    unstage(s, c); /* guest weights go with the container */
    if (s->cs[c->id].next_tenant < 0) { /* scaled down: back to standby */
        tenant_state *t = &s->ten[c->tenant];
        c->status = GMG_CTR_STANDBY;
        t->standby[t->n_standby++] = c->id;
        return;
    }
    const tenant_state *to = &s->ten[s->cs[c->id].next_tenant];
    double bytes = cost_weight_bytes_per_gpu(to->t.model, to->t.tp, to->t.pp);
    c->status = GMG_CTR_LOADING;
    c->ready_at = ss_time_add(ss_time_add(des_now(s->des), s->cd.setup_ns),
                              ss_time_from_ns_sat(bytes / s->cd.load_bw * 1e9));
    sched(s, s->des, c->ready_at, EV_CTR_READY, c->id);
}

static void on_ctr_ready(des_engine *e, des_event *ev, void *ctx)
{
    (void)e;
    gsim *s = ctx;
    gmg_container *c = &s->g->ctrs[ev->target];
    tenant_state *to = &s->ten[s->cs[c->id].next_tenant];
    int moved = c->tenant != to->spec.tenant;
    int rc = gmg_container_retarget(s->g, c, &to->spec, s->eb);
    if (rc) {
        fail(s, rc);
        return;
    }
    size_t sz = pol_batch_ctr_priv_size(s->batch);
    if (sz)
        memset(c->batch_priv, 0, sz);
    s->m.reallocations += moved;
    c->status = GMG_CTR_ACTIVE;
    to->n_incoming--;
    cands_insert(to, c->id);
}

/* Apply one re-allocation if it is still valid: the container is active, its tenant keeps at
 * least one other, and the receiving tenant stays within its max_replicas. */
static void apply_realloc(gsim *s, const pol_realloc *ra)
{
    if (ra->ctr >= s->g->n_ctrs || ra->to >= s->n_ten)
        return;
    gmg_container *c = &s->g->ctrs[ra->ctr];
    tenant_state *from = &s->ten[c->tenant], *to = &s->ten[ra->to];
    if (c->status != GMG_CTR_ACTIVE || ra->to == c->tenant || from->n_cands < 2 ||
        to->n_cands + to->n_incoming >= to->t.max_replicas || c->pp != 1 ||
        to->t.tp != c->tp || to->t.pp != 1)
        return;
    cands_remove(from, c->id);
    to->n_incoming++;
    s->cs[c->id].next_tenant = ra->to;
    c->status = GMG_CTR_DRAINING;
    reroute_waiting(s, c);
    maybe_drained(s, c);
}

/* ---- live migration (Llumnix) ----------------------------------------------------------- */

static migration *mig_at(gsim *s, gmg_id m) { return &s->migs[m]; }

static gmg_id mig_alloc(gsim *s)
{
    if (s->free_mig == GMG_NONE) {
        size_t cap = s->cap_migs;
        if (ss_grow((void **)&s->migs, &cap, s->n_migs + 1, sizeof *s->migs))
            return GMG_NONE;
        s->cap_migs = (uint32_t)cap;
        s->migs[s->n_migs].next_free = GMG_NONE;
        s->free_mig = s->n_migs++;
    }
    gmg_id m = s->free_mig;
    s->free_mig = s->migs[m].next_free;
    memset(&s->migs[m], 0, sizeof s->migs[m]);
    return m;
}

static void mig_free(gsim *s, gmg_id m)
{
    s->migs[m].next_free = s->free_mig;
    s->free_mig = m;
}

/* Copy `blocks` KV blocks from the source to the destination over the link between them,
 * queueing behind earlier transfers on it; schedules the stage's end. 0 or SS_ENOMEM. */
static int mig_copy(gsim *s, gmg_id mid, uint32_t blocks)
{
    migration *m = mig_at(s, mid);
    gmg_container *from = &s->g->ctrs[m->from], *to = &s->g->ctrs[m->to];
    double per_gpu = gmg_swap_bytes_per_gpu(s->g, from, blocks);
    /* every GPU of the replica (tp x pp) sends its shard of the blocks to its counterpart */
    ss_time end = gmg_transfer(s->g, from->gpu0, to->gpu0, from->tp * from->pp, per_gpu,
                               des_now(s->des));
    s->m.migration_bytes += per_gpu * from->tp * from->pp;
    m->copied += blocks;
    m->stage++;
    des_event *ev = sched(s, s->des, end, EV_MIG_STAGE, mid);
    return ev ? SS_OK : s->rc;
}

/* Reserve n more blocks at the destination; 0 when it has no room (the migration aborts). */
static int mig_reserve(gsim *s, migration *m, uint32_t n)
{
    gmg_container *to = &s->g->ctrs[m->to];
    if (to->status != GMG_CTR_ACTIVE || n > to->blocks_free)
        return 0;
    gmg_reserve_blocks(s->g, to, n);
    m->reserved += n;
    return 1;
}

static void mig_end(gsim *s, gmg_id mid)
{
    migration *m = mig_at(s, mid);
    gmg_req_at(s->g, m->req)->mig = GMG_NONE;
    s->g->ctrs[m->from].migrating_out--;
    m->aborted = 1; /* a stage event still pending finds it ended */
}

/* The request finished, was preempted or rejected, or the destination is full: give the
 * reservation back. The request stays where it is. */
static void mig_abort(gsim *s, gmg_id mid)
{
    migration *m = mig_at(s, mid);
    if (m->aborted)
        return;
    gmg_release_reserved(s->g, &s->g->ctrs[m->to], m->reserved);
    m->reserved = 0;
    s->m.migrations_aborted++;
    mig_end(s, mid);
}

static void maybe_abort_migration(gsim *s, gmg_req *q)
{
    if (q->mig != GMG_NONE)
        mig_abort(s, q->mig);
}

/* Stop the request on the source and copy what is left. */
static void mig_begin_final(gsim *s, gmg_id mid)
{
    migration *m = mig_at(s, mid);
    gmg_req *q = gmg_req_at(s->g, m->req);
    gmg_container *from = &s->g->ctrs[m->from];
    uint32_t left = q->blocks - m->copied;
    if (!mig_reserve(s, m, left)) {
        mig_abort(s, mid);
        return;
    }
    gmg_list_remove(s->g, &from->running, m->req);
    from->blocks_in_transit += gmg_req_private(q);
    from->pc_shared_in_transit += q->pc_shared;
    q->state = GMG_REQ_MIGRATING;
    m->final = 1;
    m->want_final = 0;
    if (mig_copy(s, mid, left))
        fail(s, ss_err(s->eb, SS_ENOMEM, "event queue: out of memory"));
}

/* The request resumes on the destination with the copied blocks. */
static void mig_commit(gsim *s, gmg_id mid)
{
    migration *m = mig_at(s, mid);
    gmg_req *q = gmg_req_at(s->g, m->req);
    gmg_container *from = &s->g->ctrs[m->from], *to = &s->g->ctrs[m->to];
    uint32_t blocks = q->blocks;
    from->blocks_in_transit -= gmg_req_private(q);
    from->pc_shared_in_transit -= q->pc_shared;
    gmg_req_set_blocks(s->g, from, q, 0);
    gmg_release_reserved(s->g, to, m->reserved);
    gmg_req_set_blocks(s->g, to, q, blocks);
    q->state = GMG_REQ_RUNNING;
    q->container = to->id;
    q->migrations++;
    gmg_list_push_back(s->g, &to->running, m->req);
    s->m.migrations++;
    mig_end(s, mid);
    mig_free(s, mid);
    if (!to->busy)
        start_iteration(s, to);
    if (!from->busy)
        start_iteration(s, from);
    if (from->status == GMG_CTR_DRAINING && !from->busy)
        maybe_drained(s, from);
}

static void on_mig_stage(des_engine *e, des_event *ev, void *ctx)
{
    (void)e;
    gsim *s = ctx;
    gmg_id mid = ev->target;
    migration *m = mig_at(s, mid);
    s->cs[m->from].epoch++;
    s->cs[m->to].epoch++;
    if (m->aborted) { /* ended while this stage was copying */
        mig_free(s, mid);
        return;
    }
    if (m->final) {
        mig_commit(s, mid);
        return;
    }
    gmg_req *q = gmg_req_at(s->g, m->req);
    uint32_t delta = q->blocks - m->copied;
    if (delta < s->cd.stop_copy_blocks || m->stage >= s->cd.max_stages) {
        if (q->q_tokens) /* in the source's executing iteration: stop it when that ends */
            m->want_final = 1;
        else
            mig_begin_final(s, mid);
        return;
    }
    if (!mig_reserve(s, m, delta))
        mig_abort(s, mid);
    else if (mig_copy(s, mid, delta))
        fail(s, ss_err(s->eb, SS_ENOMEM, "event queue: out of memory"));
}

/* Start one migration the policy asked for, if it is still valid. */
static void start_migration(gsim *s, const pol_migration *pm)
{
    if (pm->req >= s->g->n_slots || pm->from >= s->g->n_ctrs || pm->to >= s->g->n_ctrs)
        return;
    gmg_req *q = gmg_req_at(s->g, pm->req);
    gmg_container *from = &s->g->ctrs[pm->from], *to = &s->g->ctrs[pm->to];
    if (q->state != GMG_REQ_RUNNING || q->container != pm->from || q->mig != GMG_NONE ||
        pm->from == pm->to || from->tenant != to->tenant || to->status != GMG_CTR_ACTIVE ||
        from->block_bytes != to->block_bytes)
        return;
    gmg_id mid = mig_alloc(s);
    if (mid == GMG_NONE) {
        fail(s, ss_err(s->eb, SS_ENOMEM, "migrations: out of memory"));
        return;
    }
    migration *m = mig_at(s, mid);
    *m = (migration){.req = pm->req, .from = pm->from, .to = pm->to, .next_free = GMG_NONE};
    q->mig = mid;
    from->migrating_out++;
    uint32_t n = q->blocks;
    if (!mig_reserve(s, m, n)) {
        mig_abort(s, mid); /* destination full */
        mig_free(s, mid);
        return;
    }
    if (mig_copy(s, mid, n))
        fail(s, ss_err(s->eb, SS_ENOMEM, "event queue: out of memory"));
}

/* ---- auto-scaling ------------------------------------------------------------------------ */

static void standby_remove(tenant_state *t, gmg_id c)
{
    uint32_t j = 0;
    for (uint32_t i = 0; i < t->n_standby; i++)
        if (t->standby[i] != c)
            t->standby[j++] = t->standby[i];
    t->n_standby = j;
}

static void scale_up(gsim *s, gmg_id id)
{
    if (id >= s->g->n_ctrs || s->g->ctrs[id].status != GMG_CTR_STANDBY)
        return;
    gmg_container *c = &s->g->ctrs[id];
    tenant_state *t = &s->ten[c->tenant];
    standby_remove(t, id);
    t->n_incoming++;
    s->cs[id].next_tenant = c->tenant;
    maybe_drained(s, c); /* empty: starts loading at once */
    s->m.scale_ups++;
}

static void scale_down(gsim *s, gmg_id id)
{
    if (id >= s->g->n_ctrs || s->g->ctrs[id].status != GMG_CTR_ACTIVE)
        return;
    gmg_container *c = &s->g->ctrs[id];
    tenant_state *t = &s->ten[c->tenant];
    if (t->n_cands <= t->t.replicas)
        return;
    cands_remove(t, id);
    s->cs[id].next_tenant = -1; /* to standby */
    c->status = GMG_CTR_DRAINING;
    reroute_waiting(s, c);
    maybe_drained(s, c);
    s->m.scale_downs++;
}

static void build_views(gsim *s)
{
    for (uint32_t i = 0; i < s->n_ten; i++) {
        const tenant_state *t = &s->ten[i];
        s->views[i] = (pol_tenant_view){
            .name = t->t.name, .model = t->t.model, .tp = t->t.tp, .pp = t->t.pp,
            .replicas = t->t.replicas, .max_replicas = t->t.max_replicas, .tiers = t->t.tiers,
            .active = t->cands, .n_active = t->n_cands, .standby = t->standby,
            .n_standby = t->n_standby,
        };
    }
}

static void on_slice_tick(des_engine *e, des_event *ev, void *ctx)
{
    (void)ev;
    gsim *s = ctx;
    int rc = slice_tick(s->slice, s, s->eb);
    if (rc)
        fail(s, rc);
    else if (s->have_next || s->g->in_flight)
        sched(s, e, ss_time_add(des_now(e), slice_period(s->slice)), EV_SLICE_TICK, 0);
}

static void on_cluster_tick(des_engine *e, des_event *ev, void *ctx)
{
    (void)ev;
    gsim *s = ctx;
    build_views(s);
    pol_cluster_view v = {.now = des_now(e), .tenants = s->views, .n_tenants = s->n_ten};
    pol_cluster_tick(s->cluster, s->g, &v, &s->cd);
    if (s->cd.n_realloc || s->cd.n_migrate || s->cd.n_scale_up || s->cd.n_scale_down)
        for (uint32_t i = 0; i < s->g->n_ctrs; i++)
            s->cs[i].epoch++;
    for (uint32_t i = 0; i < s->cd.n_realloc; i++)
        apply_realloc(s, &s->cd.realloc[i]);
    for (uint32_t i = 0; i < s->cd.n_migrate; i++)
        start_migration(s, &s->cd.migrate[i]);
    for (uint32_t i = 0; i < s->cd.n_scale_up; i++)
        scale_up(s, s->cd.scale_up[i]);
    for (uint32_t i = 0; i < s->cd.n_scale_down; i++)
        scale_down(s, s->cd.scale_down[i]);
    /* keep ticking while anything can still happen */
    if ((s->have_next || s->g->in_flight) && !s->rc)
        sched(s, e, ss_time_add(des_now(e), pol_cluster_period(s->cluster)), EV_CLUSTER_TICK, 0);
}

static int alloc_cluster_state(gsim *s, ss_errbuf *eb)
{
    pol_cluster_decision *d = &s->cd;
    s->free_mig = GMG_NONE;
    d->stop_copy_blocks = 16;
    d->max_stages = 3;
    d->cap_migrate = 256;
    d->cap_realloc = d->cap_scale_up = d->cap_scale_down = 16;
    s->cs = ss_calloc(s->g->n_ctrs ? s->g->n_ctrs : 1, sizeof *s->cs);
    for (uint32_t i = 0; s->cs && i < s->g->n_ctrs; i++)
        s->cs[i].guest = GMG_NONE;
    s->views = ss_calloc(s->n_ten, sizeof *s->views);
    d->migrate = ss_calloc(d->cap_migrate, sizeof *d->migrate);
    d->realloc = ss_calloc(d->cap_realloc, sizeof *d->realloc);
    d->scale_up = ss_calloc(d->cap_scale_up, sizeof *d->scale_up);
    d->scale_down = ss_calloc(d->cap_scale_down, sizeof *d->scale_down);
    if (!s->cs || !s->views || !d->migrate || !d->realloc || !d->scale_up || !d->scale_down)
        return ss_err(eb, SS_ENOMEM, "cluster policy: out of memory");
    return SS_OK;
}

static void free_cluster_state(gsim *s)
{
    ss_free(s->cs);
    ss_free(s->views);
    ss_free(s->cd.migrate);
    ss_free(s->cd.realloc);
    ss_free(s->cd.scale_up);
    ss_free(s->cd.scale_down);
    ss_free(s->migs);
    ss_free(s->offs);
}

/* ---- arrivals --------------------------------------------------------------------------- */

static int read_next(gsim *s)
{
    int rc = s->src(s->src_ud, &s->next, s->eb);
    if (rc < 0) {
        fail(s, rc);
        return 0;
    }
    s->have_next = rc == 1;
    return s->have_next;
}

/* Create the request for s->next and route it; returns its container or NULL. */
/* The request's SLA: its tier's, with any bound the trace gives the request itself. */
static void set_sla(gmg_req *q, const gsim_sla *tier, const trace_rec *t)
{
    q->sla_ttft = t->has_slo & 1 ? t->slo_ttft_ns : tier->ttft;
    q->sla_tbt = t->has_slo & 2 ? t->slo_tbt_ns : tier->tbt_p99;
    q->sla_e2e = tier->e2e;
}

/* With async scheduling the engine chooses step n+1's batch while step n runs: a request that
 * arrives during step n joins step n+2 at the earliest, one step later than the simulated
 * schedule admits it. That step n+1 is charged to its client-side TTFT and E2E. Its length is
 * estimated from the steps around it without the request (the simulated step n+1 holds the
 * request itself, which reality's does not): the shorter of step n and step n-1, so that a
 * long prefill step n, followed in reality by a short decode step, does not count in full;
 * 0 when step n followed an idle engine (the next step is then the decode of step n's
 * requests, short, or none). The schedule is not delayed: metrics only, an approximation that
 * holds while the request would be admitted at once (not behind a queue, where one step of
 * visibility matters less). */
static ss_time sched_lag_ns(const gsim *s, const gmg_container *c)
{
    const cat_engine *e = tenant_engine(s, c->tenant);
    if (!e || !e->async_scheduling || !c->busy || c->iter.end <= c->iter.start)
        return 0;
    ss_time now = c->iter.end - c->iter.start;
    return now < c->prev_step_ns ? now : c->prev_step_ns;
}

static gmg_container *admit_arrival(gsim *s)
{
    const trace_rec *t = &s->next;
    gmg_id r = gmg_req_alloc(s->g);
    if (r == GMG_NONE) {
        fail(s, ss_err(s->eb, SS_ENOMEM, "requests: out of memory"));
        return NULL;
    }
    gmg_req *q = gmg_req_at(s->g, r);
    q->trace_id = t->id;
    q->arrival = t->arrival_ns;
    q->prompt = t->prompt_tokens;
    q->output_asked = t->output_tokens;
    q->output = t->output_tokens;
    /* vLLM stops a sequence at max_model_len tokens; the prefill always yields one token. */
    if ((uint64_t)q->prompt + q->output > s->cfg.max_model_len)
        q->output = q->prompt < s->cfg.max_model_len ? (uint32_t)(s->cfg.max_model_len - q->prompt)
                                                      : 1;
    q->tenant = s->n_ten > 1 ? t->tenant : 0;
    if (SS_NEVER(q->tenant >= s->n_ten))
        q->tenant = 0;
    const tenant_state *ts = &s->ten[q->tenant];
    q->tier = t->tier < ts->t.tiers ? t->tier : (uint8_t)(ts->t.tiers - 1);
    set_sla(q, &ts->t.sla[q->tier], t);
    q->measured = q->arrival >= s->cfg.warmup;
    if (t->n_prefix_blocks) { /* the reader's array lives only until its next call: copy */
        q->prefix_blocks = ss_malloc(t->n_prefix_blocks * sizeof *q->prefix_blocks);
        if (!q->prefix_blocks) {
            q->state = GMG_REQ_DONE; /* so the slot can be returned */
            gmg_req_free(s->g, r);
            fail(s, ss_err(s->eb, SS_ENOMEM, "requests: out of memory"));
            return NULL;
        }
        memcpy(q->prefix_blocks, t->prefix_blocks, t->n_prefix_blocks * sizeof *q->prefix_blocks);
        q->n_prefix_blocks = t->n_prefix_blocks;
    }
    q->session_id = t->session_id;
    if (s->cfg.prefix_cache == GSIM_PREFIX_AUTO && !s->g->prefix_cache &&
        (q->n_prefix_blocks || q->session_id) && gmg_pc_enable(s->g)) {
        q->state = GMG_REQ_DONE;
        gmg_req_free(s->g, r);
        fail(s, ss_err(s->eb, SS_ENOMEM, "prefix cache: out of memory"));
        return NULL;
    }
    s->m.arrived++;
    if (SS_NEVER(ts->n_cands == 0))
        ss_fatal(SS_LOC, "tenant %s has no active container", ts->t.name);
    gmg_id ci = pol_route_pick(s->route, s->g, r, ts->cands, ts->n_cands);
    if (SS_NEVER(ci >= s->g->n_ctrs || s->g->ctrs[ci].tenant != q->tenant))
        ci = ts->cands[0];
    q->container = ci;
    gmg_container *c = &s->g->ctrs[ci];
    q->sched_lag = sched_lag_ns(s, c);
    s->cs[ci].epoch++;
    wait_push(s, c, r, 0);
    return c;
}

static void on_arrival(des_engine *e, des_event *ev, void *ctx)
{
    (void)ev;
    gsim *s = ctx;
    ss_time now = des_now(e);
    do {
        if (s->next.arrival_ns < now)
            ss_fatal(SS_LOC, "source delivered arrival %lld before now %lld",
                     (long long)s->next.arrival_ns, (long long)now);
        if (!admit_arrival(s))
            return;
    } while (read_next(s) && s->next.arrival_ns == now);
    if (s->have_next && !s->rc)
        sched(s, e, s->next.arrival_ns, EV_ARRIVAL, 0);
    for (uint32_t i = 0; i < s->g->n_ctrs; i++) {
        gmg_container *c = &s->g->ctrs[i];
        if (!c->busy && c->waiting.n)
            start_iteration(s, c);
    }
}

/* ---- setup and run ---------------------------------------------------------------------- */

static int check_engine(const gsim_config *c, ss_errbuf *eb)
{
    if (!(c->gpu_mem_util > 0 && c->gpu_mem_util <= 1))
        return ss_err(eb, SS_EINVAL, "--gpu-mem-util: must be in (0, 1], got %g", c->gpu_mem_util);
    if (c->block_tokens < 1 || c->block_tokens > 4096)
        return ss_err(eb, SS_EINVAL, "--block-size: must be between 1 and 4096, got %u",
                      c->block_tokens);
    if (c->max_model_len < 2)
        return ss_err(eb, SS_EINVAL, "--max-model-len: must be at least 2");
    return SS_OK;
}

/* The tenants of the run: the configured ones, or one made from the single-tenant fields. */
static int make_tenants(gsim *s, ss_errbuf *eb)
{
    const gsim_config *c = &s->cfg;
    s->single = (gsim_tenant){.name = "default", .model = c->model, .engine = c->engine,
                              .tp = c->tp, .pp = c->pp,
                              .replicas = c->replicas, .max_replicas = c->replicas, .tiers = 1};
    const gsim_tenant *src = c->n_tenants ? c->tenants : &s->single;
    s->n_ten = c->n_tenants ? c->n_tenants : 1;
    if (s->n_ten > 65535 || !(s->ten = ss_calloc(s->n_ten, sizeof *s->ten)))
        return ss_err(eb, SS_ENOMEM, "tenants: out of memory");
    for (uint32_t i = 0; i < s->n_ten; i++) {
        tenant_state *t = &s->ten[i];
        t->t = src[i];
        if (!t->t.model || t->t.replicas < 1 || t->t.replicas > 100000)
            return ss_err(eb, SS_EINVAL, "tenant %s: needs a model and 1 to 100000 replicas "
                          "(--replicas), got %u", t->t.name, t->t.replicas);
        if (!t->t.engine)
            t->t.engine = c->engine;
        if (!t->t.engine)
            return ss_err(eb, SS_EINVAL, "tenant %s: no serving engine (--engine)", t->t.name);
        if (t->t.tiers < 1 || t->t.tiers > SS_MAX_TIERS)
            t->t.tiers = 1;
        if (t->t.max_replicas < t->t.replicas)
            t->t.max_replicas = t->t.replicas;
        if (!(t->cands = ss_calloc(t->t.max_replicas * t->t.pp, sizeof *t->cands)))
            return ss_err(eb, SS_ENOMEM, "tenants: out of memory");
        t->cap = t->t.max_replicas * t->t.pp;
    }
    return SS_OK;
}

/* Auto-scaling cluster policies get (max_replicas - replicas) standby containers per tenant
 * without pipeline parallelism: GPUs held for the tenant, serving nobody until scaled up. */
static int add_standby(gsim *s, tenant_state *t, ss_errbuf *eb)
{
    uint32_t extra = t->t.max_replicas - t->t.replicas;
    if (!pol_cluster_autoscale(s->cluster) || !extra || t->t.pp != 1)
        return SS_OK;
    if (!(t->standby = ss_calloc(extra, sizeof *t->standby)))
        return ss_err(eb, SS_ENOMEM, "tenants: out of memory");
    gmg_id first = s->g->n_ctrs;
    int rc = gmg_add_containers(s->g, &t->spec, extra, eb);
    for (gmg_id k = first; !rc && k < s->g->n_ctrs; k++) {
        s->g->ctrs[k].status = GMG_CTR_STANDBY;
        t->standby[t->n_standby++] = k;
    }
    return rc;
}

/* GPUs the tenants' containers need, against the cluster's nodes when it has a size. */
static int check_capacity(const gsim *s, uint32_t per_node, ss_errbuf *eb)
{
    uint64_t need = 0;
    for (uint32_t i = 0; i < s->n_ten; i++) {
        const gsim_tenant *t = &s->ten[i].t;
        uint32_t n = pol_cluster_autoscale(s->cluster) && t->pp == 1 ? t->max_replicas
                                                                      : t->replicas;
        need += (uint64_t)n * t->tp * t->pp;
    }
    if (s->cfg.nodes && need > (uint64_t)s->cfg.nodes * per_node)
        return ss_err(eb, SS_EINVAL, "cluster: the tenants' containers need %llu GPUs but %u "
                      "nodes x %u GPUs have %llu", (unsigned long long)need, s->cfg.nodes,
                      per_node, (unsigned long long)s->cfg.nodes * per_node);
    return SS_OK;
}

static int build_cluster(gsim *s, ss_errbuf *eb)
{
    const gsim_config *c = &s->cfg;
    int rc = check_engine(c, eb);
    uint32_t per_node = c->gpus_per_node ? c->gpus_per_node : c->gpu->gpus_per_node;
    if (!rc)
        rc = make_tenants(s, eb);
    if (!rc)
        rc = check_capacity(s, per_node, eb);
    if (!rc && (rc = gmg_create(&s->g)) != SS_OK)
        return ss_err(eb, rc, "cluster: out of memory");
    if (!rc)
        s->g->prefix_cache = c->prefix_cache == GSIM_PREFIX_ON;
    for (uint32_t i = 0; !rc && i < s->n_ten; i++) {
        tenant_state *t = &s->ten[i];
        gmg_ctr_spec spec = {
            .tenant = (uint16_t)i, .model = t->t.model, .gpu = c->gpu,
            .engine = t->t.engine, .tp = t->t.tp,
            .pp = t->t.pp, .cost_backend = c->cost, .profiles_dir = c->profiles_dir,
            .gpus_per_node = per_node, .gpu_mem_util = c->gpu_mem_util,
            .block_tokens = c->block_tokens, .max_batch_tokens = pol_batch_max_tokens(s->batch),
            .max_seqs = pol_batch_max_seqs(s->batch), .runtime_reserve = c->runtime_reserve,
            .swap_bytes = c->swap_bytes, .tiers = t->t.tiers,
        };
        t->spec = spec;
        gmg_id first = s->g->n_ctrs;
        rc = gmg_add_containers(s->g, &spec, t->t.replicas, eb);
        for (gmg_id k = first; !rc && k < s->g->n_ctrs; k++)
            t->cands[t->n_cands++] = k;
        if (!rc)
            rc = add_standby(s, t, eb);
        if (rc && c->n_tenants > 1)
            ss_err_prefix(eb, rc, "tenant %s", t->t.name);
    }
    return rc;
}

/* A parameter no policy of the run reads belongs to another policy (a warning: one scenario
 * serves several policies) or is a typo (an error). */
static int check_params_used(const gsim_config *cfg, ss_errbuf *eb)
{
    char who[128];
    snprintf(who, sizeof who, "batching '%s', routing '%s' or cluster '%s'", cfg->batching,
             cfg->routing ? cfg->routing : "rr", cfg->cluster ? cfg->cluster : "container");
    const char *key;
    for (size_t i = 0; (key = ss_params_unused_at(cfg->params, i)); i++) {
        const char *owner = pol_param_owner(key);
        for (size_t k = 0; !owner && slice_param_names[k]; k++)
            if (!strcmp(key, slice_param_names[k]))
                owner = "operator placement 'slice' (--ops slice)";
        if (!owner)
            return ss_err(eb, SS_EINVAL, "unknown parameter '%s' for %s", key, who);
        ss_warn("parameter '%s' is not used by %s (it belongs to %s)", key, who, owner);
    }
    return SS_OK;
}

/* Per-container batching-policy state, in each container's extension slot. */
static int alloc_ctr_state(gsim *s, ss_errbuf *eb)
{
    size_t sz = pol_batch_ctr_priv_size(s->batch);
    for (uint32_t i = 0; sz && i < s->g->n_ctrs; i++)
        if (!(s->g->ctrs[i].batch_priv = ss_calloc(1, sz)))
            return ss_err(eb, SS_ENOMEM, "batching: out of memory");
    return SS_OK;
}

int gsim_create(gsim **out, const gsim_config *cfg, ss_errbuf *eb)
{
    gsim *s = ss_calloc(1, sizeof *s);
    if (!s)
        return ss_err(eb, SS_ENOMEM, "out of memory");
    s->cfg = *cfg;
    s->free_off = GMG_NONE;
    s->max_overrun = cfg->guest_overrun;
    ss_rng_seed(&s->route_rng, cfg->seed, SS_RNG_STREAM_ROUTING);
    pol_engine_cfg ecfg = {.max_model_len = cfg->max_model_len};
    int rc = pol_batch_create(&s->batch, cfg->batching, cfg->params, &ecfg, eb);
    if (!rc)
        rc = pol_cluster_create(&s->cluster, cfg->cluster ? cfg->cluster : "container",
                                cfg->params, eb);
    if (!rc && !s->cfg.routing)
        s->cfg.routing = pol_cluster_default_routing(s->cluster);
    if (!rc)
        s->tier_ordered = pol_cluster_tier_ordered(s->cluster);
    if (!rc)
        rc = pol_route_create(&s->route, s->cfg.routing, cfg->params,
                              pol_cluster_name(s->cluster), &s->route_rng, eb);
    if (!rc && cfg->ops && strcmp(cfg->ops, "home")) {
        if (strcmp(cfg->ops, "slice"))
            rc = ss_err(eb, SS_EINVAL, "--ops: unknown operator placement '%s' (valid: home, "
                        "slice)", cfg->ops);
        else
            rc = slice_create(&s->slice, cfg->params, &s->cfg, eb);
        s->max_overrun = s->cfg.guest_overrun;
    }
    if (!rc)
        rc = check_params_used(&s->cfg, eb);
    if (!rc)
        rc = build_cluster(s, eb);
    if (!rc && (rc = metrics_init(&s->m, s->n_ten, cfg->warmup)) != SS_OK)
        ss_err(eb, rc, "metrics: out of memory");
    if (!rc)
        rc = alloc_ctr_state(s, eb);
    if (!rc)
        rc = alloc_cluster_state(s, eb);
    if (!rc && (rc = des_engine_create(&s->des, s)) != SS_OK)
        ss_err(eb, rc, "out of memory");
    if (!rc) {
        des_handler_set(s->des, EV_ARRIVAL, on_arrival);
        des_handler_set(s->des, EV_ITER_DONE, on_iter_done);
        des_handler_set(s->des, EV_CLUSTER_TICK, on_cluster_tick);
        des_handler_set(s->des, EV_CTR_READY, on_ctr_ready);
        des_handler_set(s->des, EV_MIG_STAGE, on_mig_stage);
        des_handler_set(s->des, EV_GUEST, on_guest);
        des_handler_set(s->des, EV_OFFLOAD_DONE, on_offload_done);
        des_handler_set(s->des, EV_SLICE_TICK, on_slice_tick);
        *out = s;
        return SS_OK;
    }
    gsim_destroy(&s);
    return rc;
}

void gsim_destroy(gsim **sp)
{
    gsim *s = *sp;
    if (!s)
        return;
    slice_destroy(&s->slice); /* its what-if forks borrow from this simulation */
    des_engine_destroy(&s->des);
    for (uint32_t i = 0; s->ten && i < s->n_ten; i++) {
        ss_free(s->ten[i].cands);
        ss_free(s->ten[i].standby);
    }
    ss_free(s->ten);
    for (uint32_t i = 0; s->g && i < s->g->n_ctrs; i++)
        ss_free(s->g->ctrs[i].batch_priv);
    gmg_destroy(&s->g);
    pol_route_destroy(&s->route);
    pol_cluster_destroy(&s->cluster);
    free_cluster_state(s);
    if (!s->fork)
        pol_batch_destroy(&s->batch);
    metrics_fini(&s->m);
    gsim__check_fini(&s->chk);
    ss_free(s->dec.run); /* the block holding all seven decision arrays */
    ss_free(s);
    *sp = NULL;
}

static void progress_tramp(const des_engine *e, void *ud)
{
    gsim *s = ud;
    s->progress(s->progress_ud, des_now(e), s->m.arrived, s->n_finished,
                des_get_stats(e)->n_events);
}

void gsim_set_progress(gsim *s, gsim_progress_fn *fn, void *ud)
{
    s->progress = fn;
    s->progress_ud = ud;
    des_progress_set(s->des, fn ? progress_tramp : NULL, s, 1u << 18);
}

void gsim_set_observer(gsim *s, const gsim_observer *obs)
{
    if (obs)
        s->obs = *obs;
    else
        memset(&s->obs, 0, sizeof s->obs);
}

static gsim_check_counts check_counts(const gsim *s)
{
    gsim_check_counts n = {.conserve = !s->fork, .arrived = s->m.arrived,
                           .completed = s->n_completed, .rejected = s->n_rejected};
    return n;
}

/* With --check: after every event up to `until`, every invariant (check.h). A violation stops
 * the run with the event, the entity and the values in eb. */
static int run_checked(gsim *s, ss_time until)
{
    while (!s->rc && des_next_time(s->des) <= until && des_step(s->des)) {
        if (s->rc)
            break; /* the event failed (a sink, out of memory): that error is the one to tell */
        gsim_check_event ev = {.kind = "?", .at = des_now(s->des)};
        uint16_t kind;
        des_last_event(s->des, &kind, &ev.target_id);
        if (kind < EV__COUNT && ev_names[kind].name) {
            ev.kind = ev_names[kind].name;
            ev.target = ev_names[kind].target;
        }
        gsim_check_counts n = check_counts(s);
        int rc = gsim__check_event(&s->chk, s->g, &ev, &n, s->eb);
        if (rc)
            return s->rc = rc;
        if (s->progress && des_get_stats(s->des)->n_events % (1u << 18) == 0)
            progress_tramp(s->des, s);
    }
    return s->rc;
}

/* Every request arrived has completed or been rejected, or is still in flight when the run was
 * cut short (events left pending after gsim_advance). */
static int check_conservation(gsim *s)
{
    gsim_check_counts n = check_counts(s);
    return gsim__check_end(s->g, &n, des_next_time(s->des) != SS_TIME_MAX, s->eb);
}

int gsim_start(gsim *s, gsim_source_fn *src, void *src_ud, gsim_sink_fn *sink, void *sink_ud,
               ss_errbuf *eb)
{
    s->src = src;
    s->src_ud = src_ud;
    s->sink = sink;
    s->sink_ud = sink_ud;
    s->eb = eb;
    s->rc = SS_OK;
    if (read_next(s) && !sched(s, s->des, s->next.arrival_ns, EV_ARRIVAL, 0))
        return s->rc;
    ss_time period = pol_cluster_period(s->cluster);
    if (period > 0 && s->have_next && !sched(s, s->des, period, EV_CLUSTER_TICK, 0))
        return s->rc;
    if (s->slice && s->have_next)
        sched(s, s->des, slice_period(s->slice), EV_SLICE_TICK, 0); /* a failure sets s->rc */
    return s->rc;
}

int gsim_advance(gsim *s, ss_time until, ss_errbuf *eb)
{
    s->eb = eb;
    if (s->rc)
        return s->rc;
    if (s->cfg.check)
        return run_checked(s, until);
    des_run(s->des, until);
    return s->rc;
}

/* Every GPU idles from its last compute phase to the end of the measurement window (the last
 * completion; ticks after it do not count). */
static void close_slices(gsim *s)
{
    ss_time end = metrics_window_end(&s->m);
    for (uint32_t i = 0; i < s->g->n_gpus; i++) {
        idle_until(s, &s->g->gpus[i], end);
        if (end > s->g->gpus[i].dev_free)
            s->g->gpus[i].dev_free = end;
    }
}

int gsim_finish(gsim *s)
{
    close_slices(s);
    metrics_flush(&s->m);
    for (uint32_t i = 0; !s->fork && i < s->g->n_ctrs; i++) {
        const gmg_container *c = &s->g->ctrs[i];
        if (!c->pc)
            continue;
        s->m.all.prefix.evictions += c->pc->evictions;
        if (c->tenant < s->m.n_tenants)
            s->m.tenants[c->tenant].prefix.evictions += c->pc->evictions;
    }
    int rc = s->rc;
    if (!rc && s->m.oom)
        rc = ss_err(s->eb, SS_ENOMEM, "metrics: out of memory");
    if (!rc && !s->fork)
        rc = check_conservation(s);
    if (!rc && s->m.aborted)
        ss_warn("%llu requests were rejected after being preempted too often (the livelock "
                "guard, parameter max_preemptions)", (unsigned long long)s->m.aborted);
    return rc;
}

int gsim_run(gsim *s, gsim_source_fn *src, void *src_ud, gsim_sink_fn *sink, void *sink_ud,
             ss_errbuf *eb)
{
    int rc = gsim_start(s, src, src_ud, sink, sink_ud, eb);
    if (!rc)
        rc = gsim_advance(s, SS_TIME_MAX, eb);
    int frc = gsim_finish(s);
    return rc ? rc : frc;
}

/* ---- what-if forks ---------------------------------------------------------------------- */

static int fork_tenants(gsim *f, const gsim *s)
{
    if (!(f->ten = ss_calloc(s->n_ten, sizeof *f->ten)))
        return SS_ENOMEM;
    f->n_ten = s->n_ten;
    for (uint32_t i = 0; i < s->n_ten; i++) {
        tenant_state *t = &f->ten[i];
        *t = s->ten[i];
        t->cands = NULL, t->standby = NULL;
        size_t nc = t->cap ? t->cap : 1, ns = s->g->n_ctrs ? s->g->n_ctrs : 1;
        if (!(t->cands = ss_calloc(nc, sizeof *t->cands)) ||
            !(t->standby = ss_calloc(ns, sizeof *t->standby)))
            return SS_ENOMEM;
        if (t->n_cands)
            memcpy(t->cands, s->ten[i].cands, t->n_cands * sizeof *t->cands);
        if (t->n_standby)
            memcpy(t->standby, s->ten[i].standby, t->n_standby * sizeof *t->standby);
    }
    return SS_OK;
}

/* The per-container state a fork needs: batching state, cluster bookkeeping, decision scratch
 * (views and decision arrays stay empty: forks make no cluster decisions). */
static int fork_ctr_state(gsim *f, const gsim *s)
{
    size_t sz = pol_batch_ctr_priv_size(s->batch);
    for (uint32_t i = 0; i < f->g->n_ctrs; i++)
        f->g->ctrs[i].batch_priv = NULL;
    for (uint32_t i = 0; sz && i < f->g->n_ctrs; i++) {
        if (!(f->g->ctrs[i].batch_priv = ss_malloc(sz)))
            return SS_ENOMEM;
        memcpy(f->g->ctrs[i].batch_priv, s->g->ctrs[i].batch_priv, sz);
    }
    if (!(f->cs = ss_calloc(s->g->n_ctrs ? s->g->n_ctrs : 1, sizeof *f->cs)))
        return SS_ENOMEM;
    memcpy(f->cs, s->cs, s->g->n_ctrs * sizeof *f->cs);
    return SS_OK;
}

/* The offloaded prefills in flight (their events are rescheduled by fork_events). */
static int fork_offloads(gsim *f, const gsim *s)
{
    f->free_off = s->free_off;
    f->max_overrun = s->max_overrun;
    if (!s->n_offs)
        return SS_OK;
    if (!(f->offs = ss_malloc(s->cap_offs * sizeof *f->offs)))
        return SS_ENOMEM;
    memcpy(f->offs, s->offs, s->n_offs * sizeof *f->offs);
    f->n_offs = s->n_offs, f->cap_offs = s->cap_offs;
    for (uint32_t i = 0; i < f->n_offs; i++)
        f->offs[i].ev = NULL;
    return SS_OK;
}

static int in_set(const gmg_id *ctrs, uint32_t n, gmg_id c)
{
    for (uint32_t i = 0; i < n; i++)
        if (ctrs[i] == c)
            return 1;
    return 0;
}

/* Schedule what is pending for the forked containers: a running iteration's end, a loading
 * container's readiness, the chunks and completion of offloaded prefills they take part in. */
static int fork_events(gsim *f, const gmg_id *ctrs, uint32_t n)
{
    for (uint32_t i = 0; i < f->n_offs; i++) {
        offload *o = &f->offs[i];
        if (!o->in_use || (!in_set(ctrs, n, o->home) && !in_set(ctrs, n, o->helper)))
            continue;
        if (o->event_at && !(o->ev = des_schedule(f->des, o->event_at, EV_GUEST, i)))
            return SS_ENOMEM;
        if (o->done_at && !des_schedule(f->des, o->done_at, EV_OFFLOAD_DONE, i))
            return SS_ENOMEM;
    }
    for (uint32_t i = 0; i < n; i++) {
        const gmg_container *c = &f->g->ctrs[ctrs[i]];
        if (c->busy && !des_schedule(f->des, c->iter.end, EV_ITER_DONE, c->id))
            return SS_ENOMEM;
        if (c->status == GMG_CTR_LOADING && !des_schedule(f->des, c->ready_at, EV_CTR_READY, c->id))
            return SS_ENOMEM;
    }
    return SS_OK;
}

int gsim_fork(const gsim *s, const gmg_id *ctrs, uint32_t n, gsim_sink_fn *sink, void *sink_ud,
              gsim **out, ss_errbuf *eb)
{
    for (uint32_t i = 0; i < n; i++) {
        if (ctrs[i] >= s->g->n_ctrs)
            return ss_err(eb, SS_EINVAL, "fork: no container %u", ctrs[i]);
        const gmg_container *c = &s->g->ctrs[ctrs[i]];
        if (c->migrating_out || c->blocks_reserved)
            return ss_err(eb, SS_EINVAL, "fork: container %u has a live migration in flight",
                          c->id);
    }
    gsim *f = ss_calloc(1, sizeof *f);
    if (!f)
        return ss_err(eb, SS_ENOMEM, "fork: out of memory");
    f->fork = 1;
    f->cfg = s->cfg;
    f->single = s->single;
    f->tier_ordered = s->tier_ordered;
    f->batch = s->batch;
    f->free_mig = GMG_NONE;
    f->cd.setup_ns = s->cd.setup_ns; /* a draining container still loads its next tenant */
    f->cd.load_bw = s->cd.load_bw;
    f->sink = sink;
    f->sink_ud = sink_ud;
    f->eb = eb;
    int rc = gmg_clone(s->g, &f->g);
    if (!rc)
        rc = fork_tenants(f, s);
    if (!rc)
        rc = fork_ctr_state(f, s);
    if (!rc)
        rc = fork_offloads(f, s);
    if (!rc)
        rc = metrics_init(&f->m, s->n_ten, s->cfg.warmup);
    if (!rc)
        rc = des_engine_create(&f->des, f);
    if (!rc) {
        des_start_at(f->des, des_now(s->des));
        des_handler_set(f->des, EV_ITER_DONE, on_iter_done);
        des_handler_set(f->des, EV_CTR_READY, on_ctr_ready);
        des_handler_set(f->des, EV_GUEST, on_guest);
        des_handler_set(f->des, EV_OFFLOAD_DONE, on_offload_done);
        rc = fork_events(f, ctrs, n);
    }
    if (rc) {
        gsim_destroy(&f);
        return ss_err(eb, rc, "fork: out of memory");
    }
    *out = f;
    return SS_OK;
}

const slice_stats *gsim_slice_stats(const gsim *s)
{
    return s->slice ? slice_get_stats(s->slice) : NULL;
}

int gsim_offload_allowed(const gsim *s, gmg_id r)
{
    const gmg_req *q = gmg_req_at(s->g, r);
    return pol_batch_offload_hold(s->batch, &s->g->ctrs[q->container], q) != POL_NO_OFFLOAD;
}

int gsim_has_guest(const gsim *s, gmg_id c) { return s->cs[c].guest != GMG_NONE; }
uint64_t gsim_ctr_epoch(const gsim *s, gmg_id c) { return s->cs[c].epoch; }

uint8_t gsim_req_sla_so_far(const gmg_req *q, ss_time now)
{
    uint8_t b = 0;
    ss_time first = q->first_token >= 0 ? q->first_token : now;
    if (q->sla_ttft && first - q->arrival > q->sla_ttft)
        b |= METRICS_SLA_TTFT;
    ss_time end = q->state == GMG_REQ_DONE ? q->finish : now;
    if (q->sla_e2e && end - q->arrival > q->sla_e2e)
        b |= METRICS_SLA_E2E;
    uint32_t gaps = q->output > 1 ? q->output - 1 : 0; /* all it will have */
    uint32_t rank = (uint32_t)((gaps * 99u + 99u) / 100u);
    if (q->sla_tbt && gaps && q->tbt_over > gaps - rank)
        b |= METRICS_SLA_TBT;
    return b;
}

const metrics *gsim_metrics(const gsim *s) { return &s->m; }
uint32_t gsim_n_tenants(const gsim *s) { return s->n_ten; }
const char *gsim_routing_name(const gsim *s) { return pol_route_name(s->route); }
const char *gsim_cluster_name(const gsim *s) { return pol_cluster_name(s->cluster); }
const char *gsim_tenant_name(const gsim *s, uint32_t i) { return i < s->n_ten ? s->ten[i].t.name : NULL; }
const gsim_tenant *gsim_tenant_at(const gsim *s, uint32_t i) { return i < s->n_ten ? &s->ten[i].t : NULL; }
const gmg *gsim_graph(const gsim *s) { return s->g; }
const des_stats *gsim_des_stats(const gsim *s) { return des_get_stats(s->des); }
ss_time gsim_end_time(const gsim *s) { return des_now(s->des); }
uint64_t gsim_iterations(const gsim *s) { return s->iterations; }
uint64_t gsim_max_model_len(const gsim *s) { return s->cfg.max_model_len; }
uint64_t gsim_max_batch_tokens(const gsim *s) { return pol_batch_max_tokens(s->batch); }

typedef struct json_emit {
    ss_strbuf *b;
    const char *prefix;
} json_emit;

static void emit_kv(void *ud, const char *key, const char *value)
{
    json_emit *j = ud;
    ss_strbuf_printf(j->b, ", ");
    ss_strbuf_printf(j->b, "\"%s.%s\": ", j->prefix, key);
    ss_strbuf_json_str(j->b, value);
}

void gsim_params_json(const gsim *s, ss_strbuf *b)
{
    const gsim_config *c = &s->cfg;
    ss_strbuf_printf(b, "{\"engine.gpu_mem_util\": \"%g\", \"engine.block_tokens\": \"%u\", "
                        "\"engine.max_model_len\": \"%llu\", \"engine.runtime_reserve_gib\": "
                        "\"%g\", \"engine.kv_blocks_per_container\": \"%u\"",
                     c->gpu_mem_util, c->block_tokens, (unsigned long long)c->max_model_len,
                     c->runtime_reserve / 1073741824.0, s->g->n_ctrs ? s->g->ctrs[0].blocks_total : 0);
    json_emit j = {b, "batching"};
    pol_batch_describe(s->batch, emit_kv, &j);
    j.prefix = "routing";
    pol_route_describe(s->route, emit_kv, &j);
    j.prefix = "cluster";
    pol_cluster_describe(s->cluster, emit_kv, &j);
    ss_strbuf_printf(b, "}");
}
