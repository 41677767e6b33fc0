/* --check: each invariant verified after every event is broken on purpose, mid-run, through an
 * observer that edits the cluster state (casting away its const), and the run must stop right
 * after that event with SS_ECHECK and a message naming the event (kind, target, time), the
 * entity and the values. Also: the clock going back, the end-of-run conservation check, the
 * active (budgeted) checks between full ones, and a violated run leaving nothing in the
 * results database. Each test fails if the check it targets is removed. */
#include "support/test_util.h"

#include "catalog/catalog.h"
#include "core/ss_alloc.h"
#include "gsim/check.h"
#include "gsim/gsim.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fx {
    catalog *cat;
    ss_params *params;
    gsim_config cfg;
    trace_rec *recs;
    size_t n;
} fx;

enum { N_REQS = 300 };


static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    if (tu_sim_setup(&f->cat, &f->params, &f->cfg))
        return -1;
    f->cfg.model = catalog_model(f->cat, "llama-2-7b");
    f->cfg.replicas = 1;
    f->cfg.check = 1;
    /* about twice what one replica serves: a queue builds */
    f->recs = tu_synth_conv(N_REQS, 12, 5, 2);
    f->n = N_REQS;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    free(f->recs);
    ss_params_destroy(&f->params);
    catalog_destroy(&f->cat);
    free(f);
    tu_tmpdir_cleanup();
    tu_assert_no_leaks();
    return 0;
}

/* ---- corrupting a running simulation ---------------------------------------------------- */

/* Break the state; return 0 when nothing fit yet (it is tried again at the next iteration). */
typedef int corrupt_fn(gmg *g, gsim *s);

typedef struct saboteur {
    gsim *s;
    corrupt_fn *fn;
    uint64_t from_iter;   /* first iteration start at which fn is tried */
    uint64_t iters;       /* iteration starts seen */
    int done;             /* fn broke something */
    uint64_t at_event;    /* events dispatched when it did (that event included) */
    ss_time at;           /* the clock then */
} saboteur;

static void on_iter(void *ud, const gmg *g, const gmg_container *c)
{
    (void)c;
    saboteur *b = ud;
    if (b->done || ++b->iters < b->from_iter)
        return;
    if ((b->done = b->fn((gmg *)g, b->s))) { /* deliberately writes the state it may only read */
        b->at_event = gsim_des_stats(b->s)->n_events;
        b->at = gsim_end_time(b->s);
    }
}

/* First request in flight in `state` for which ok(q) holds (ok may be NULL), or NULL. */
static gmg_req *find(gmg *g, uint8_t state, int (*ok)(const gmg_req *q))
{
    for (gmg_id r = 0; r < g->n_slots; r++)
        if (g->reqs[r].state == state && (!ok || ok(&g->reqs[r])))
            return &g->reqs[r];
    return NULL;
}

/* Run the fixture's trace with fn breaking the state from iteration from_iter on. Asserts the
 * run stopped with SS_ECHECK right after the breaking event, with a message naming it and
 * containing want; returns the message (static). */
static const char *sabotage(fx *f, corrupt_fn *fn, uint64_t from_iter, const char *want)
{
    static ss_errbuf eb;
    gsim *s = NULL;
    assert_int_equal(gsim_create(&s, &f->cfg, &eb), 0);
    saboteur b = {.s = s, .fn = fn, .from_iter = from_iter};
    gsim_observer obs = {.on_iter = on_iter, .ud = &b};
    gsim_set_observer(s, &obs);
    tu_recs src = {f->recs, f->n, 0};
    int rc = gsim_run(s, tu_recs_next, &src, NULL, NULL, &eb);
    assert_true(b.done);
    if (rc != SS_ECHECK)
        fail_msg("want SS_ECHECK, got %d (%s)", rc, rc ? eb.msg : "the run succeeded");
    if (!strstr(eb.msg, want))
        fail_msg("message '%s' lacks '%s'", eb.msg, want);
    if (f->cfg.check) {
        /* the event that broke the state is the one named, and the run stopped after it */
        char head[160];
        snprintf(head, sizeof head, " at %.9f s: ", ss_time_to_s(b.at));
        if (strncmp(eb.msg, "invariant violated after event ", 31) || !strstr(eb.msg, head))
            fail_msg("message '%s' does not name the event at %s", eb.msg, head);
        assert_true(strstr(eb.msg, "event ITER_DONE (container 0)") ||
                    strstr(eb.msg, "event ARRIVAL at"));
        assert_int_equal(gsim_des_stats(s)->n_events, b.at_event);
    }
    gsim_destroy(&s);
    return eb.msg;
}

/* ---- every request in exactly one state ------------------------------------------------- */

static int unlink_waiting(gmg *g, gsim *s)
{
    (void)s;
    gmg_req *q = find(g, GMG_REQ_WAITING, NULL);
    if (!q)
        return 0;
    gmg_list_remove(g, &g->ctrs[q->container].waiting, (gmg_id)(q - g->reqs));
    return 1; /* still WAITING, but in no list */
}

static void test_waiting_request_in_no_list(void **state)
{
    sabotage(*state, unlink_waiting, 50, " requests are waiting but the waiting lists hold ");
}

static int leave_done(gmg *g, gsim *s)
{
    (void)s;
    gmg_req *q = find(g, GMG_REQ_WAITING, NULL);
    if (!q)
        return 0;
    gmg_list_remove(g, &g->ctrs[q->container].waiting, (gmg_id)(q - g->reqs));
    q->state = GMG_REQ_DONE; /* finished, but its slot never returned */
    return 1;
}

static void test_finished_request_keeps_its_slot(void **state)
{
    const char *m = sabotage(*state, leave_done, 50, "state done, container 0: not a request in "
                                                     "flight");
    assert_non_null(strstr(m, "): state done")); /* "request ID (slot S): ..." */
}

static int running_marked_swapped(gmg *g, gsim *s)
{
    (void)s;
    gmg_req *q = find(g, GMG_REQ_RUNNING, NULL);
    if (!q)
        return 0;
    q->state = GMG_REQ_SWAPPED; /* but still linked in the running list */
    return 1;
}

static void test_listed_request_in_another_state(void **state)
{
    sabotage(*state, running_marked_swapped, 50, "in the running list has state swapped");
}

static int miscount_in_flight(gmg *g, gsim *s)
{
    (void)s;
    g->in_flight++;
    return 1;
}

static void test_in_flight_count(void **state)
{
    sabotage(*state, miscount_in_flight, 50, "in flight counted");
}

/* ---- KV blocks and GPU memory within [0, capacity] -------------------------------------- */

static int negative_free_blocks(gmg *g, gsim *s)
{
    (void)s;
    g->ctrs[0].blocks_free = UINT32_MAX; /* -1, as an unsigned counter shows it */
    return 1;
}

static void test_kv_blocks_below_zero(void **state)
{
    sabotage(*state, negative_free_blocks, 50, "container 0: free KV blocks -1 out of [0, ");
}

static int too_many_free_blocks(gmg *g, gsim *s)
{
    (void)s;
    g->ctrs[0].blocks_free += g->ctrs[0].blocks_total; /* more free than the pool holds */
    return 1;
}

static void test_kv_blocks_above_pool(void **state)
{
    fx *f = *state;
    char want[96];
    gsim *s = NULL;
    ss_errbuf eb;
    assert_int_equal(gsim_create(&s, &f->cfg, &eb), 0);
    snprintf(want, sizeof want, "out of [0, %u]", gsim_graph(s)->ctrs[0].blocks_total);
    gsim_destroy(&s);
    sabotage(f, too_many_free_blocks, 50, want);
}

static int negative_swap_space(gmg *g, gsim *s)
{
    (void)s;
    g->ctrs[0].swap_free = UINT32_MAX - 2;
    return 1;
}

static void test_swap_blocks_below_zero(void **state)
{
    sabotage(*state, negative_swap_space, 50, "container 0: free swap blocks -3 out of [0, ");
}

static int negative_kv_memory(gmg *g, gsim *s)
{
    (void)s;
    g->gpus[0].mem.kv_used = -4096;
    return 1;
}

static void test_gpu_kv_memory_below_zero(void **state)
{
    sabotage(*state, negative_kv_memory, 50, "GPU 0: KV in use -4096 bytes, below 0");
}

static int overfull_gpu(gmg *g, gsim *s)
{
    (void)s;
    g->gpus[0].mem.transfer += g->gpus[0].capacity; /* buffers beyond the HBM */
    return 1;
}

static void test_gpu_memory_above_capacity(void **state)
{
    const char *m = sabotage(*state, overfull_gpu, 50, "GPU 0: memory ");
    assert_non_null(strstr(m, "out of [0, "));
    assert_non_null(strstr(m, "transfer "));
}

/* ---- tokens in order -------------------------------------------------------------------- */

static int running_with(const gmg_req *q) { return q->generated >= 3 && q->last_token > q->first_token; }

static int too_many_tokens(gmg *g, gsim *s)
{
    (void)s;
    gmg_req *q = find(g, GMG_REQ_RUNNING, running_with);
    if (!q)
        return 0;
    q->generated = q->output + 1;
    q->computed = 0;
    return 1;
}

static void test_tokens_beyond_output(void **state)
{
    sabotage(*state, too_many_tokens, 50, "more than its output length");
}

static int tokens_back(gmg *g, gsim *s)
{
    (void)s;
    gmg_req *q = find(g, GMG_REQ_RUNNING, running_with);
    if (!q)
        return 0;
    q->generated -= 2; /* consistent on its own (computed follows), only time shows it */
    q->computed = q->computed >= 2 ? q->computed - 2 : 0;
    return 1;
}

static void test_token_count_decreases(void **state)
{
    sabotage(*state, tokens_back, 50, "generated tokens went back from ");
}

static int first_token_moves(gmg *g, gsim *s)
{
    (void)s;
    gmg_req *q = find(g, GMG_REQ_RUNNING, running_with);
    if (!q || q->first_token <= q->arrival)
        return 0;
    q->first_token--;
    return 1;
}

static void test_first_token_time_moves(void **state)
{
    sabotage(*state, first_token_moves, 50, "first token time moved from ");
}

static int latest_token_back(gmg *g, gsim *s)
{
    (void)s;
    gmg_req *q = find(g, GMG_REQ_RUNNING, running_with);
    if (!q)
        return 0;
    q->last_token = q->first_token; /* still in order on its own */
    return 1;
}

static void test_latest_token_time_goes_back(void **state)
{
    sabotage(*state, latest_token_back, 50, "latest token time went back from ");
}

static int first_after_latest(gmg *g, gsim *s)
{
    (void)s;
    gmg_req *q = find(g, GMG_REQ_RUNNING, running_with);
    if (!q)
        return 0;
    q->first_token = q->last_token + 1;
    return 1;
}

static void test_first_token_after_latest(void **state)
{
    const char *m = sabotage(*state, first_after_latest, 50, "token times out of order: arrival ");
    assert_non_null(strstr(m, ", first token "));
}

static int token_in_future(gmg *g, gsim *s)
{
    gmg_req *q = find(g, GMG_REQ_RUNNING, running_with);
    if (!q)
        return 0;
    q->last_token = gsim_end_time(s) + SS_NS_PER_S;
    return 1;
}

static void test_token_after_the_clock(void **state)
{
    sabotage(*state, token_in_future, 50, "lies after the clock");
}

/* ---- conservation ----------------------------------------------------------------------- */

static int phantom_arrival(gmg *g, gsim *s)
{
    (void)g;
    ((metrics *)gsim_metrics(s))->arrived++;
    return 1;
}

static void test_conservation_after_every_event(void **state)
{
    const char *m = sabotage(*state, phantom_arrival, 50, "conservation: ");
    assert_non_null(strstr(m, " arrived != "));
    assert_non_null(strstr(m, " in flight"));
}

static void test_conservation_at_the_end(void **state)
{
    fx *f = *state;
    f->cfg.check = 0; /* only the end-of-run check is left */
    char want[128];
    snprintf(want, sizeof want, "conservation at the end of the run: %u arrived != ", N_REQS + 1);
    const char *m = sabotage(f, phantom_arrival, 50, want);
    assert_non_null(strstr(m, " completed + 0 rejected (0 in flight)"));
}

/* A run cut short (events left) may end with requests in flight, and they count. */
static void test_conservation_of_a_cut_run(void **state)
{
    fx *f = *state;
    gsim *s = NULL;
    ss_errbuf eb;
    assert_int_equal(gsim_create(&s, &f->cfg, &eb), 0);
    tu_recs src = {f->recs, f->n, 0};
    assert_int_equal(gsim_start(s, tu_recs_next, &src, NULL, NULL, &eb), 0);
    assert_int_equal(gsim_advance(s, ss_time_from_s(10), &eb), 0);
    assert_true(gsim_graph(s)->in_flight > 0);
    assert_int_equal(gsim_finish(s), 0);
    gmg *g = (gmg *)gsim_graph(s);
    g->in_flight++; /* now one more in flight than arrived */
    assert_int_equal(gsim_finish(s), SS_ECHECK);
    assert_non_null(strstr(eb.msg, "+ those in flight (the run was cut short)"));
    gsim_destroy(&s);
}

/* ---- the checker on its own ------------------------------------------------------------- */

static void test_clock_going_back(void **state)
{
    (void)state;
    gmg *g = NULL;
    assert_int_equal(gmg_create(&g), 0);
    gsim_checker k = {0};
    gsim_check_counts n = {.conserve = 1};
    gsim_check_event a = {.kind = "ITER_DONE", .target = "container", .target_id = 2, .at = 100};
    gsim_check_event b = {.kind = "ARRIVAL", .at = 50};
    ss_errbuf eb;
    assert_int_equal(gsim__check_event(&k, g, &a, &n, &eb), 0);
    assert_int_equal(gsim__check_event(&k, g, &a, &n, &eb), 0); /* ties are fine */
    assert_int_equal(gsim__check_event(&k, g, &b, &n, &eb), SS_ECHECK);
    assert_string_equal(eb.msg, "invariant violated after event ARRIVAL at 0.000000050 s: clock "
                                "went back from 100 to 50 ns");
    gsim__check_fini(&k);
    gmg_destroy(&g);
}

/* With more request slots than the budget, most events get the active check: it still catches
 * a running request's tokens at once, while a waiting request's corruption waits for the next
 * full check, which comes every slots / budget events. */
static void test_active_checks_between_full_ones(void **state)
{
    fx *f = *state;
    f->cfg.check = 0; /* the simulation's own checker stays out of the way */
    gsim *s = NULL;
    ss_errbuf eb;
    assert_int_equal(gsim_create(&s, &f->cfg, &eb), 0);
    tu_recs src = {f->recs, f->n, 0};
    assert_int_equal(gsim_start(s, tu_recs_next, &src, NULL, NULL, &eb), 0);
    assert_int_equal(gsim_advance(s, ss_time_from_s(15), &eb), 0);
    gmg *g = (gmg *)gsim_graph(s);
    uint32_t slots = g->n_slots;
    assert_true(slots > 8);
    gsim_checker k = {.budget = 4};
    gsim_check_counts n = {0};
    gsim_check_event ev = {.kind = "TEST", .at = gsim_end_time(s)};
    for (uint32_t i = 0; i < 3 * slots; i++)
        assert_int_equal(gsim__check_event(&k, g, &ev, &n, &eb), 0);
    assert_int_equal(k.n_full, 3 * slots / ((slots + 3) / 4));
    assert_int_equal(k.n_full + k.n_active, 3 * slots);
    /* a waiting request holding GPU blocks: only the full check walks the waiting lists */
    gmg_req *w = find(g, GMG_REQ_WAITING, NULL);
    assert_non_null(w);
    w->blocks = 1;
    uint64_t full = k.n_full;
    int rc = SS_OK;
    for (uint32_t i = 0; i < slots && !rc; i++)
        rc = gsim__check_event(&k, g, &ev, &n, &eb);
    assert_int_equal(rc, SS_ECHECK);
    assert_int_equal(k.n_full, full + 1); /* caught by the first full check, not before */
    assert_non_null(strstr(eb.msg, "after event TEST at "));
    assert_non_null(strstr(eb.msg, "waiting request"));
    assert_non_null(strstr(eb.msg, "holds 1 GPU blocks"));
    w->blocks = 0;
    /* a running request: caught by the very next check, active or full */
    gmg_req *q = find(g, GMG_REQ_RUNNING, NULL);
    assert_non_null(q);
    uint32_t was = q->generated;
    q->generated = q->output + 1;
    assert_int_equal(gsim__check_event(&k, g, &ev, &n, &eb), SS_ECHECK);
    assert_non_null(strstr(eb.msg, "more than its output length"));
    q->generated = was;
    gsim__check_fini(&k);
    gsim_destroy(&s);
}

/* ---- nothing stored ---------------------------------------------------------------------- */

static int sink_store(void *ud, const metrics_req *r, ss_errbuf *eb)
{
    return store_run_request(ud, r, "default", eb);
}

/* One run into st as app/ writes it: begin, stream the requests, commit, or abort on error. */
static int stored_run(fx *f, store *st, corrupt_fn *fn, ss_errbuf *eb)
{
    static const store_run_info info = {.command = "test", .trace = "synth", .model = "m"};
    int64_t id;
    gsim *s = NULL;
    assert_int_equal(gsim_create(&s, &f->cfg, eb), 0);
    saboteur b = {.s = s, .fn = fn, .from_iter = 400};
    gsim_observer obs = {.on_iter = on_iter, .ud = &b};
    if (fn)
        gsim_set_observer(s, &obs);
    tu_recs src = {f->recs, f->n, 0};
    int rc = store_run_begin(st, &info, &id, eb);
    if (!rc)
        rc = gsim_run(s, tu_recs_next, &src, sink_store, st, eb);
    if (!rc) {
        metrics_summary m;
        store_run_end end = {.events = gsim_des_stats(s)->n_events};
        metrics_summarize(gsim_metrics(s), gsim_end_time(s), &m);
        rc = store_run_commit(st, &m, &end, eb);
    } else {
        store_run_abort(st);
    }
    gsim_destroy(&s);
    return rc;
}

static void test_violated_run_stores_nothing(void **state)
{
    fx *f = *state;
    char path[600];
    snprintf(path, sizeof path, "%s/c.db", tu_tmpdir());
    store *st = NULL;
    ss_errbuf eb;
    assert_int_equal(store_open(&st, path, &eb), 0);
    assert_int_equal(stored_run(f, st, NULL, &eb), 0);
    /* the second run streams request rows, then breaks an invariant */
    assert_int_equal(stored_run(f, st, miscount_in_flight, &eb), SS_ECHECK);
    store_close(&st);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM runs"), 1);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM requests"), N_REQS);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM summary"), 1);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM pragma_integrity_check "
                                 "WHERE integrity_check = 'ok'"), 1);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_waiting_request_in_no_list),
        T(test_finished_request_keeps_its_slot),
        T(test_listed_request_in_another_state),
        T(test_in_flight_count),
        T(test_kv_blocks_below_zero),
        T(test_kv_blocks_above_pool),
        T(test_swap_blocks_below_zero),
        T(test_gpu_kv_memory_below_zero),
        T(test_gpu_memory_above_capacity),
        T(test_tokens_beyond_output),
        T(test_token_count_decreases),
        T(test_first_token_time_moves),
        T(test_latest_token_time_goes_back),
        T(test_first_token_after_latest),
        T(test_token_after_the_clock),
        T(test_conservation_after_every_event),
        T(test_conservation_at_the_end),
        T(test_conservation_of_a_cut_run),
        T(test_clock_going_back),
        T(test_active_checks_between_full_ones),
        T(test_violated_run_stores_nothing),
    };
    return cmocka_run_group_tests_name("check", tests, NULL, NULL);
}
