/* Offloaded prefills, SliceScheduler's mechanism: a waiting request of a busy container is
 * prefilled chunk by chunk on another container's GPUs in their idle time and rejoins home with
 * its first token. Tested: timing on an idle helper (the chunks, the streamed weights and the KV
 * transfers add up), that chunks fitted strictly into host phases never delay the helper, that
 * the helper's memory and home's KV blocks are checked first, and that a fork predicts an
 * offload in flight exactly. Runs with --check (every invariant after every event). */
#include "support/test_util.h"

#include "catalog/catalog.h"
#include "core/ss_alloc.h"
#include "core/ss_rng.h"
#include "cost/cost.h"
#include "gsim/gsim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Tenant 0 "hot" (Llama-2-7B) and tenant 1 "cold" (Llama-3-8B), one A100 container each. */
typedef tu_sim fx; /* the shared simulator fixture (tests/support) */

static int setup(void **state)
{
    if (tu_sim_fixture_setup(state))
        return -1;
    fx *f = *state;
    f->cfg.check = 1;
    f->ten[0] = (gsim_tenant){.name = "hot", .model = catalog_model(f->cat, "llama-2-7b"),
                              .tp = 1, .pp = 1, .replicas = 1, .tiers = 1};
    f->ten[1] = (gsim_tenant){.name = "cold", .model = catalog_model(f->cat, "llama-3-8b"),
                              .tp = 1, .pp = 1, .replicas = 1, .tiers = 1};
    f->cfg.tenants = f->ten;
    f->cfg.n_tenants = 2;
    return 0;
}


/* n_hot requests of `prompt` tokens for the hot tenant at t = 0 (a queue builds: vLLM admits
 * 16,384 prompt tokens per iteration), then, when `cold_rate` > 0, Poisson requests for the cold
 * tenant from 0 to 30 s. Returns the count in *n. */
static trace_rec *workload(uint32_t n_hot, uint32_t prompt, double cold_rate, size_t *n)
{
    size_t cap = n_hot + 2000;
    trace_rec *r = calloc(cap, sizeof *r);
    size_t k = 0;
    for (uint32_t i = 0; i < n_hot; i++)
        r[k++] = (trace_rec){.arrival_ns = i, .prompt_tokens = prompt, .output_tokens = 64};
    ss_rng a;
    ss_rng_seed(&a, 5, 1);
    for (double t = 0; cold_rate > 0 && k < cap;) {
        t += ss_rng_exp(&a, 1.0 / cold_rate);
        if (t > 30)
            break;
        r[k++] = (trace_rec){.arrival_ns = ss_time_from_s(t) + 1000, .prompt_tokens = 300,
                             .output_tokens = 100, .tenant = 1};
    }
    /* arrival order, ids in that order */
    for (size_t i = 1; i < k; i++)
        for (size_t j = i; j > 0 && r[j].arrival_ns < r[j - 1].arrival_ns; j--) {
            trace_rec t = r[j];
            r[j] = r[j - 1];
            r[j - 1] = t;
        }
    for (size_t i = 0; i < k; i++)
        r[i].id = i;
    *n = k;
    return r;
}

/* A replay of src (results to c when set, observed by obs when set), advanced to `at`. */
static gsim *begin(fx *f, tu_recs *src, tu_collect *c, const gsim_observer *obs, ss_time at)
{
    gsim *g = NULL;
    ss_errbuf eb;
    if (gsim_create(&g, &f->cfg, &eb))
        fail_msg("gsim_create: %s", eb.msg);
    if (obs)
        gsim_set_observer(g, obs);
    if (gsim_start(g, tu_recs_next, src, c ? tu_collect_req : NULL, c, &eb) ||
        gsim_advance(g, at, &eb))
        fail_msg("replay: %s", eb.msg);
    return g;
}

typedef struct run_out {
    tu_collect c;
    metrics m;       /* copy of the run's counters (histograms not used) */
    ss_time ttft0;   /* TTFT of the offloaded request */
    uint64_t id0;    /* its trace id */
    int rc;          /* gsim_offload's result */
    char msg[sizeof(((ss_errbuf *)0)->msg)];
} run_out;

/* Replay; at `at`, offload the last waiting request of the hot container to the cold one (when
 * offload is set). */
static void replay(fx *f, const trace_rec *r, size_t n, int offload, ss_time at, run_out *o)
{
    memset(o, 0, sizeof *o);
    o->c.r = calloc(n, sizeof(metrics_req));
    tu_recs src = {r, n, 0};
    gsim *g = begin(f, &src, &o->c, NULL, at);
    ss_errbuf eb;
    if (offload) {
        const gmg *G = gsim_graph(g);
        gmg_id q = G->ctrs[0].waiting.tail;
        assert_true(q != GMG_NONE);
        o->id0 = G->reqs[q].trace_id;
        o->rc = gsim_offload(g, q, 1, 0, &eb);
        if (o->rc)
            snprintf(o->msg, sizeof o->msg, "%s", eb.msg);
    }
    if (gsim_advance(g, SS_TIME_MAX, &eb) || gsim_finish(g))
        fail_msg("replay: %s", eb.msg);
    o->m = *gsim_metrics(g);
    assert_int_equal(o->c.n_calls, n);
    if (offload && !o->rc)
        o->ttft0 = o->c.r[o->id0].first_token - o->c.r[o->id0].arrival;
    gsim_destroy(&g);
}

static void test_offload_to_an_idle_helper(void **state)
{
    fx *f = *state;
    size_t n;
    trace_rec *r = workload(60, 2000, 0, &n);
    run_out base, off;
    replay(f, r, n, 0, 1, &base);
    replay(f, r, n, 1, 1, &off);
    assert_int_equal(off.rc, 0);
    assert_int_equal(off.m.offloads, 1);
    assert_int_equal(off.m.offloads_done, 1);
    assert_int_equal(off.m.offload_chunks, 32 + 2); /* embedding, 32 layers, LM head */
    /* Llama-2-7B, 2,000 tokens: 33 chunks' weights (~13 GB) streamed, 32 layers of KV sent */
    assert_true(off.m.offload_bytes > 12e9 && off.m.offload_bytes < 15e9);
    /* the helper is idle, so the prefill takes about what it takes at home with the weights
     * arriving ahead: at least its compute, at most the streaming of every chunk's weights */
    ss_time home_ttft = base.c.r[off.id0].first_token - base.c.r[off.id0].arrival;
    printf("# TTFT of the last request: %.1f ms at home, %.1f ms offloaded\n",
           home_ttft / 1e6, off.ttft0 / 1e6);
    assert_true(off.ttft0 > 0);
    assert_true(off.ttft0 < home_ttft); /* it was last in a long queue */
    /* the others finish no later than without the offload */
    for (size_t i = 0; i < n; i++)
        if (i != off.id0)
            assert_true(off.c.r[i].finish <= base.c.r[i].finish);
    assert_int_equal(off.c.r[off.id0].generated, 64);
    free(base.c.r);
    free(off.c.r);
    free(r);
}

/* With no overrun allowed, guest chunks only fill host phases and idle time: every request of
 * the helper's own tenant is served exactly as without the offload. */
static void test_strict_fit_never_delays_the_helper(void **state)
{
    fx *f = *state;
    f->cfg.guest_overrun = 0;
    size_t n;
    trace_rec *r = workload(60, 2000, 6, &n);
    run_out base, off;
    replay(f, r, n, 0, ss_time_from_s(0.5), &base);
    replay(f, r, n, 1, ss_time_from_s(0.5), &off);
    assert_int_equal(off.rc, 0);
    assert_int_equal(off.m.offloads_done, 1);
    size_t cold = 0;
    for (size_t i = 0; i < n; i++)
        if (r[i].tenant == 1) {
            assert_int_equal(off.c.r[i].first_token, base.c.r[i].first_token);
            assert_int_equal(off.c.r[i].finish, base.c.r[i].finish);
            cold++;
        }
    assert_true(cold > 100);
    free(base.c.r);
    free(off.c.r);
    free(r);
}

/* With a generous overrun the helper's iterations do wait for guest chunks. */
static void test_overrun_delays_the_helper(void **state)
{
    fx *f = *state;
    f->cfg.guest_overrun = 50 * SS_NS_PER_MS;
    size_t n;
    trace_rec *r = workload(60, 2000, 6, &n);
    run_out base, off;
    replay(f, r, n, 0, ss_time_from_s(0.5), &base);
    replay(f, r, n, 1, ss_time_from_s(0.5), &off);
    assert_int_equal(off.rc, 0);
    int later = 0;
    for (size_t i = 0; i < n; i++)
        if (r[i].tenant == 1)
            later += off.c.r[i].finish > base.c.r[i].finish;
    assert_true(later > 0);
    free(base.c.r);
    free(off.c.r);
    free(r);
}

/* No spare memory on the helper for streamed weights' buffers: the offload is refused before
 * anything changes. */
static void test_helper_memory_is_checked(void **state)
{
    fx *f = *state;
    f->cfg.guest_weights = POL_WEIGHTS_STREAM;
    f->cfg.gpu_mem_util = 0.995; /* 0.4 GB of an A100-80G left outside the engines */
    size_t n;
    trace_rec *r = workload(60, 2000, 0, &n);
    run_out base, off;
    replay(f, r, n, 0, 1, &base);
    replay(f, r, n, 1, 1, &off);
    assert_int_equal(off.rc, SS_EINVAL);
    assert_non_null(strstr(off.msg, "spare"));
    assert_int_equal(off.m.offloads, 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(off.c.r[i].finish, base.c.r[i].finish);
    free(base.c.r);
    free(off.c.r);
    free(r);
}

/* Staged weights: the first offload to a helper copies the model into KV blocks the helper
 * lends (and no chunk streams weights), the next one reuses them; in stage mode a helper
 * without enough free blocks refuses. */
static void test_weights_staged_once(void **state)
{
    fx *f = *state;
    f->cfg.guest_weights = POL_WEIGHTS_STAGE;
    size_t n;
    trace_rec *r = workload(60, 2000, 0, &n);
    tu_collect c = tu_collect_new(n);
    tu_recs src = {r, n, 0};
    gsim *g = begin(f, &src, &c, NULL, 1);
    ss_errbuf eb;
    const gmg *G = gsim_graph(g);
    uint32_t free0 = G->ctrs[1].blocks_free;
    assert_int_equal(gsim_offload(g, G->ctrs[0].waiting.tail, 1, 0, &eb), 0);
    uint32_t lent = G->ctrs[1].blocks_staged;
    assert_true(lent > 0 && G->ctrs[1].blocks_free == free0 - lent);
    /* Llama-2-7B in 16-token blocks of Llama-3-8B's KV (128 KiB): about 12.6 GB */
    assert_true((double)lent * G->ctrs[1].block_bytes > 12e9);
    assert_int_equal(gsim_advance(g, ss_time_from_s(1), &eb), 0);
    assert_int_equal(gsim_metrics(g)->offloads_done, 1);
    double bytes1 = gsim_metrics(g)->offload_bytes;
    assert_int_equal(gsim_offload(g, G->ctrs[0].waiting.tail, 1, 0, &eb), 0);
    assert_int_equal(gsim_advance(g, ss_time_from_s(2), &eb), 0);
    const metrics *m = gsim_metrics(g);
    assert_int_equal(m->offloads_done, 2);
    assert_int_equal(m->stagings, 1);
    assert_true(m->offload_bytes - bytes1 < 1.1e9); /* only the second prompt's KV */
    assert_int_equal(G->ctrs[1].blocks_staged, lent);
    assert_int_equal(gsim_advance(g, SS_TIME_MAX, &eb), 0);
    assert_int_equal(gsim_finish(g), 0);
    assert_int_equal(c.n_calls, n);
    gsim_destroy(&g);
    free(c.r);
    free(r);
}

/* The helper's own requests take their blocks back: a burst for the helper evicts the staged
 * weights, and staging is refused while its pool is that full. */
static void test_staged_weights_evicted_under_pressure(void **state)
{
    fx *f = *state;
    f->cfg.guest_weights = POL_WEIGHTS_STAGE;
    size_t n = 60 + 400 + 60;
    trace_rec *r = calloc(n, sizeof *r);
    for (size_t i = 0; i < 60; i++)
        r[i] = (trace_rec){.id = i, .arrival_ns = (ss_time)i, .prompt_tokens = 2000,
                           .output_tokens = 64};
    for (size_t i = 60; i < 460; i++) /* 400 long requests for the helper at 2 s: KV fills */
        r[i] = (trace_rec){.id = i, .arrival_ns = ss_time_from_s(2) + (ss_time)i,
                           .prompt_tokens = 3000, .output_tokens = 2000, .tenant = 1};
    for (size_t i = 460; i < n; i++) /* and another queue at home at 3.9 s */
        r[i] = (trace_rec){.id = i, .arrival_ns = ss_time_from_s(3.9) + (ss_time)i,
                           .prompt_tokens = 2000, .output_tokens = 64};
    tu_collect c = tu_collect_new(n);
    tu_recs src = {r, n, 0};
    gsim *g = begin(f, &src, &c, NULL, 1);
    ss_errbuf eb;
    const gmg *G = gsim_graph(g);
    assert_int_equal(gsim_offload(g, G->ctrs[0].waiting.tail, 1, 0, &eb), 0);
    assert_int_equal(gsim_advance(g, ss_time_from_s(4), &eb), 0);
    assert_int_equal(gsim_metrics(g)->evictions, 1);
    assert_int_equal(G->ctrs[1].blocks_staged, 0);
    gmg_id q = G->ctrs[0].waiting.tail;
    assert_true(q != GMG_NONE);
    assert_int_equal(gsim_offload_check(g, q, 1, &eb), SS_EINVAL);
    assert_non_null(strstr(eb.msg, "stage"));
    assert_int_equal(gsim_advance(g, SS_TIME_MAX, &eb), 0);
    assert_int_equal(gsim_finish(g), 0);
    assert_int_equal(c.n_calls, n);
    gsim_destroy(&g);
    free(c.r);
    free(r);
}

/* A fork taken while an offload is in flight predicts its outcome exactly. */
static void test_fork_predicts_an_offload(void **state)
{
    fx *f = *state;
    size_t n;
    trace_rec *r = workload(60, 2000, 0, &n);
    tu_collect rc = tu_collect_new(n), wc = tu_collect_new(n);
    tu_recs src = {r, n, 0};
    gsim *g = begin(f, &src, &rc, NULL, 1), *w = NULL;
    ss_errbuf eb;
    const gmg *G = gsim_graph(g);
    gmg_id q = G->ctrs[0].waiting.tail;
    uint64_t id = G->reqs[q].trace_id;
    assert_int_equal(gsim_offload(g, q, 1, 0, &eb), 0);
    assert_int_equal(gsim_advance(g, ss_time_from_s(0.05), &eb), 0); /* chunks in flight */
    gmg_id both[2] = {0, 1};
    assert_int_equal(gsim_fork(g, both, 2, tu_collect_req, &wc, &w, &eb), 0);
    assert_int_equal(gsim_advance(w, SS_TIME_MAX, &eb), 0);
    assert_int_equal(gsim_advance(g, SS_TIME_MAX, &eb), 0);
    assert_int_equal(gsim_finish(g), 0);
    assert_true(wc.r[id].finish > 0);
    assert_int_equal(wc.r[id].first_token, rc.r[id].first_token);
    for (size_t i = 0; i < n; i++)
        if (wc.r[i].finish)
            assert_int_equal(wc.r[i].finish, rc.r[i].finish);
    gsim_destroy(&w);
    gsim_destroy(&g);
    free(rc.r);
    free(wc.r);
    free(r);
}

/* Offloads chained through a container: Y moves a queued request of container 0 to container 1,
 * then X moves a queued request of container 1 to container 2. A fork of container 2 alone
 * takes X's home (1) along, and with it 1's guest Y: when X's request returns home in the fork,
 * 1 runs again and so do Y's chunks, whose request lives on container 0, which must therefore
 * come along too (it did not: the fork's Y then finished a request slot that was free, and
 * crashed or corrupted the fork). The fork holds every request of an offload it may run, and
 * runs to the end like the replay. */
static void test_fork_takes_chained_offloads_along(void **state)
{
    fx *f = *state;
    f->ten[2] = (gsim_tenant){.name = "third", .model = catalog_model(f->cat, "llama-2-7b"),
                              .tp = 1, .pp = 1, .replicas = 1, .tiers = 1};
    f->cfg.n_tenants = 3;
    /* 60 queued requests of tenant 0 at t = 0, 60 of tenant 1 at 10 ms; tenant 2 idles */
    size_t n = 120;
    trace_rec *r = calloc(n, sizeof *r);
    for (size_t i = 0; i < n; i++)
        r[i] = (trace_rec){.id = i, .arrival_ns = i < 60 ? (ss_time)i : 10000000 + (ss_time)i,
                           .prompt_tokens = 2000, .output_tokens = 64, .tenant = i < 60 ? 0 : 1};
    tu_collect rc = tu_collect_new(n), wc = tu_collect_new(n);
    tu_recs src = {r, n, 0};
    gsim *g = begin(f, &src, &rc, NULL, 1), *w = NULL;
    ss_errbuf eb;
    const gmg *G = gsim_graph(g);
    gmg_id y = G->ctrs[0].waiting.tail;
    assert_int_equal(gsim_offload(g, y, 1, 0, &eb), 0);
    assert_int_equal(gsim_advance(g, ss_time_from_s(0.02), &eb), 0);
    gmg_id x = G->ctrs[1].waiting.tail;
    assert_true(x != GMG_NONE);
    assert_int_equal(G->reqs[y].state, GMG_REQ_OFFLOADED); /* Y still in flight */
    assert_int_equal(gsim_offload(g, x, 2, 0, &eb), 0);
    assert_int_equal(gsim_advance(g, ss_time_from_s(0.03), &eb), 0);
    gmg_id third = 2;
    assert_int_equal(gsim_fork(g, &third, 1, tu_collect_req, &wc, &w, &eb), 0);
    const gmg *W = gsim_graph(w);
    assert_int_equal(W->reqs[x].state, GMG_REQ_OFFLOADED);
    assert_int_equal(W->reqs[y].state, GMG_REQ_OFFLOADED);
    assert_int_equal(W->reqs[y].trace_id, G->reqs[y].trace_id);
    assert_int_equal(gsim_advance(w, SS_TIME_MAX, &eb), 0);
    assert_int_equal(gsim_advance(g, SS_TIME_MAX, &eb), 0);
    assert_int_equal(gsim_finish(g), 0);
    assert_true(wc.r[G->reqs[x].trace_id].finish > 0 || rc.r[r[60].id].finish > 0);
    assert_int_equal(rc.n_calls, n);
    gsim_destroy(&w);
    gsim_destroy(&g);
    free(rc.r);
    free(wc.r);
    free(r);
}

/* The batching policy decides what a moved request holds at home: Orca its whole reservation
 * (here the oracle length), static batching nothing, because nobody joins a static batch. */
static void test_batching_decides_what_a_move_holds(void **state)
{
    fx *f = *state;
    f->cfg.batching = "orca";
    ss_params_set(f->params, "reserve", "oracle");
    size_t n;
    trace_rec *r = workload(60, 2000, 0, &n);
    tu_collect c = tu_collect_new(n);
    tu_recs src = {r, n, 0};
    gsim *g = begin(f, &src, &c, NULL, 1);
    ss_errbuf eb;
    const gmg *G = gsim_graph(g);
    gmg_id q = G->ctrs[0].waiting.tail;
    assert_true(q != GMG_NONE);
    uint32_t want = gmg_blocks_for(&G->ctrs[0], 2000 + 64);
    assert_int_equal(gsim_offload(g, q, 1, 0, &eb), 0);
    assert_int_equal(G->ctrs[0].blocks_offloaded, want);
    assert_int_equal(G->ctrs[0].n_offloaded, 1);
    if (gsim_advance(g, SS_TIME_MAX, &eb) || gsim_finish(g))
        fail_msg("replay: %s", eb.msg);
    assert_int_equal(c.n_calls, n);
    assert_int_equal(gsim_metrics(g)->offloads_done, 1);
    gsim_destroy(&g);
    free(c.r);

    f->cfg.batching = "static";
    ss_params_destroy(&f->params);
    assert_int_equal(ss_params_create(&f->params), 0);
    f->cfg.params = f->params;
    c = tu_collect_new(n);
    src = (tu_recs){r, n, 0};
    g = begin(f, &src, &c, NULL, 1);
    q = gsim_graph(g)->ctrs[0].waiting.tail;
    assert_true(q != GMG_NONE);
    assert_false(gsim_offload_allowed(g, q));
    assert_int_equal(gsim_offload(g, q, 1, 0, &eb), SS_EINVAL);
    assert_non_null(strstr(eb.msg, "cannot take request"));
    if (gsim_advance(g, SS_TIME_MAX, &eb) || gsim_finish(g))
        fail_msg("replay: %s", eb.msg);
    gsim_destroy(&g);
    free(c.r);
    free(r);
}

/* ---- operator order ------------------------------------------------------------------ */

typedef struct order_check {
    uint64_t req;        /* request being followed (UINT64_MAX: the first seen) */
    uint32_t next;       /* chunk expected next */
    ss_time prev_end;
    uint32_t n, bad;
} order_check;

static void on_guest(void *ud, const gmg *g, const gmg_container *h, const gmg_req *r,
                     uint32_t chunk, uint32_t n, ss_time start, ss_time end, ss_time weights_at)
{
    (void)g;
    (void)h;
    order_check *o = ud;
    if (o->req == UINT64_MAX)
        o->req = r->trace_id;
    if (r->trace_id != o->req)
        return;
    o->bad += chunk != o->next || start < o->prev_end || start < weights_at || end <= start;
    o->next = chunk + 1;
    o->prev_end = end;
    o->n = n;
}

/* Dependencies: chunk k + 1 of a prefill starts only after chunk k has ended and its own
 * weights are in place, whether streamed or staged, and every chunk runs once. */
static void test_chunks_run_in_dependency_order(void **state)
{
    fx *f = *state;
    for (int mode = POL_WEIGHTS_STREAM; mode <= POL_WEIGHTS_STAGE; mode++) {
        f->cfg.guest_weights = mode;
        size_t n;
        trace_rec *r = workload(60, 2000, 6, &n);
        order_check oc = {.req = UINT64_MAX};
        gsim_observer obs = {.on_guest = on_guest, .ud = &oc};
        tu_recs src = {r, n, 0};
        gsim *g = begin(f, &src, NULL, &obs, ss_time_from_s(0.5));
        ss_errbuf eb;
        assert_int_equal(gsim_offload(g, gsim_graph(g)->ctrs[0].waiting.tail, 1, 0, &eb), 0);
        assert_int_equal(gsim_advance(g, SS_TIME_MAX, &eb), 0);
        assert_int_equal(gsim_finish(g), 0);
        assert_int_equal(oc.bad, 0);
        assert_int_equal(oc.n, 34);
        assert_int_equal(oc.next, 34); /* every chunk, in order */
        gsim_destroy(&g);
        free(r);
    }
}

/* ---- operator expansion ---------------------------------------------------------------- */

typedef struct expand_check {
    gmg_op ops[4096];
    uint64_t iters, waited, bad;
} expand_check;

static void on_iter_expand(void *ud, const gmg *g, const gmg_container *c)
{
    expand_check *x = ud;
    size_t n = gmg_iter_expand(g, c, x->ops, 4096, NULL);
    x->iters++;
    x->waited += c->iter.wait_ns > 0;
    if (n == 0 || n > 4096 || x->ops[0].start != c->iter.start ||
        x->ops[n - 1].end != c->iter.end)
        x->bad++;
    for (size_t i = 1; i < n && i < 4096; i++) {
        ss_time gap = x->ops[i].start - x->ops[i - 1].end;
        ss_time want = x->ops[i - 1].shape.kind == COST_OP_HOST ? c->iter.wait_ns : 0;
        x->bad += gap != want;
    }
}

/* When guest chunks overrun a helper's host phase, the helper's iteration expands into
 * operators that wait for them after the host operator and still end exactly when the fast path
 * says. */
static void test_expansion_includes_guest_waits(void **state)
{
    fx *f = *state;
    f->cfg.guest_overrun = 50 * SS_NS_PER_MS;
    size_t n;
    trace_rec *r = workload(60, 2000, 6, &n);
    expand_check *x = calloc(1, sizeof *x);
    gsim_observer obs = {.on_iter = on_iter_expand, .ud = x};
    tu_recs src = {r, n, 0};
    gsim *g = begin(f, &src, NULL, &obs, ss_time_from_s(0.5));
    ss_errbuf eb;
    assert_int_equal(gsim_offload(g, gsim_graph(g)->ctrs[0].waiting.tail, 1, 0, &eb), 0);
    assert_int_equal(gsim_advance(g, SS_TIME_MAX, &eb), 0);
    assert_int_equal(gsim_finish(g), 0);
    assert_int_equal(x->iters, gsim_iterations(g));
    assert_true(x->waited > 0);
    assert_int_equal(x->bad, 0);
    gsim_destroy(&g);
    free(x);
    free(r);
}

/* ---- the costs a move is charged ------------------------------------------------------ */

/* TTFT of the request offloaded at t = 1 ns (the last of 60 of 2,000 tokens) to the idle cold
 * container, nothing arriving after. */
static ss_time moved_ttft(fx *f, const trace_rec *r, size_t n)
{
    run_out o;
    replay(f, r, n, 1, 1, &o);
    assert_int_equal(o.rc, 0);
    free(o.c.r);
    return o.ttft0;
}

/* The guest's host phase comes before its first chunk: with streamed weights (the embedding's
 * arrive before a host phase ends) the whole prefill moves by it, so doubling the factor
 * lengthens the moved request's TTFT by exactly home's host time for a one-request prefill. */
static void test_host_phase_is_charged(void **state)
{
    fx *f = *state;
    f->cfg.guest_weights = POL_WEIGHTS_STREAM;
    size_t n;
    trace_rec *r = workload(60, 2000, 0, &n);
    tu_recs src = {r, n, 0};
    gsim *g = begin(f, &src, NULL, NULL, 0);
    cost_batch b = {0};
    cost_batch_add_prefill(&b, 2000, 0);
    cost_split sp;
    cost_iteration_split(gsim_graph(g)->ctrs[0].cost, &b, &sp);
    gsim_destroy(&g);
    assert_true(sp.host_ns > SS_NS_PER_MS);
    f->cfg.guest_host_factor = 1;
    ss_time one = moved_ttft(f, r, n);
    f->cfg.guest_host_factor = 2;
    ss_time two = moved_ttft(f, r, n);
    f->cfg.guest_host_factor = 4;
    ss_time four = moved_ttft(f, r, n);
    printf("# host phase %.3f ms: moved TTFT %.3f, %.3f, %.3f ms at 1x, 2x, 4x\n",
           sp.host_ns / 1e6, one / 1e6, two / 1e6, four / 1e6);
    assert_int_equal(two - one, sp.host_ns);
    assert_int_equal(four - two, 2 * sp.host_ns);
    free(r);
}

/* Link efficiency: staged weights (the default when the helper has free KV blocks) arrive
 * before the first chunk, the chunks then run back to back, and the last layer's KV, sent
 * home as the LM head runs, arrives after it; so halving the efficiency lengthens the TTFT by
 * the time of those two copies at the higher one: (model bytes + one layer's KV) /
 * (bandwidth x efficiency). Efficiency 1 is the link's peak. */
static void test_link_efficiency_is_charged(void **state)
{
    fx *f = *state;
    size_t n;
    trace_rec *r = workload(60, 2000, 0, &n);
    tu_recs src = {r, n, 0};
    gsim *g = begin(f, &src, NULL, NULL, 0);
    const gmg *G = gsim_graph(g);
    const cat_model *model = G->ctrs[0].model;
    double bytes = cost_weight_bytes_per_gpu(model, 1, 1) +
                   2000.0 * cat_model_kv_bytes_per_token(model) / model->layers;
    double bw = G->links[G->gpus[G->ctrs[1].gpu0].node].bw;
    gsim_destroy(&g);
    f->cfg.guest_link_eff = 0.5;
    ss_time half = moved_ttft(f, r, n);
    f->cfg.guest_link_eff = 0.25;
    ss_time quarter = moved_ttft(f, r, n);
    double expect = bytes / (bw * 0.5) * 1e9;
    printf("# moved TTFT %.3f ms at 50 %% of the link's peak, %.3f ms at 25 %% (%.3f ms more "
           "expected)\n", half / 1e6, quarter / 1e6, expect / 1e6);
    assert_true(fabs((double)(quarter - half) - expect) <= 2);
    free(r);
}

/* One burst, SliceScheduler deciding (slice_run) and observed: the first offloaded request. */
static void on_first_guest(void *ud, const gmg *g, const gmg_container *h, const gmg_req *r,
                           uint32_t chunk, uint32_t n, ss_time start, ss_time end,
                           ss_time weights_at)
{
    (void)g, (void)h, (void)chunk, (void)n, (void)start, (void)end, (void)weights_at;
    uint64_t *first = ud;
    if (*first == UINT64_MAX)
        *first = r->trace_id;
}

static ss_time first_moved_ttft(fx *f, const trace_rec *r, size_t n, const char *whatif_ms,
                                metrics *m)
{
    ss_params_set(f->params, "slice_whatif_ms", whatif_ms);
    f->cfg.ops = "slice";
    gsim *g = NULL;
    ss_errbuf eb;
    if (gsim_create(&g, &f->cfg, &eb))
        fail_msg("gsim_create: %s", eb.msg);
    uint64_t first = UINT64_MAX;
    gsim_observer obs = {.on_guest = on_first_guest, .ud = &first};
    gsim_set_observer(g, &obs);
    tu_collect c = tu_collect_new(n);
    tu_recs src = {r, n, 0};
    if (gsim_run(g, tu_recs_next, &src, tu_collect_req, &c, &eb))
        fail_msg("gsim_run: %s", eb.msg);
    *m = *gsim_metrics(g);
    gsim_destroy(&g);
    assert_true(first != UINT64_MAX);
    ss_time ttft = c.r[first].first_token - c.r[first].arrival;
    free(c.r);
    return ttft;
}

/* Decision latency: the first decision runs three what-ifs (the baselines of the home and the
 * helper, one candidate), so doubling the per-what-if cost from 1 ms to 2 ms starts the first
 * move, and its first token, 3 ms later. Each candidate's what-if charges the what-ifs run so
 * far in its tick, its own included, so with one candidate per tick the predictions stay
 * exact. */
static void test_decision_latency_is_charged(void **state)
{
    fx *f = *state;
    size_t n;
    trace_rec *r = workload(80, 2000, 0, &n);
    metrics m1, m2;
    ss_time one = first_moved_ttft(f, r, n, "1", &m1);
    ss_time two = first_moved_ttft(f, r, n, "2", &m2);
    printf("# first moved TTFT %.3f ms at 1 ms per what-if, %.3f ms at 2 ms\n", one / 1e6,
           two / 1e6);
    assert_int_equal(two - one, 3 * SS_NS_PER_MS);
    assert_int_equal(m1.offload_pred_err_ns, 0);
    assert_int_equal(m2.offload_pred_err_ns, 0);
    free(r);
}

/* Chunks as the observer sees them: how many, how many last `slow` times the alone time of
 * some chunk of the prefill, and whether any lasts neither. */
typedef struct slow_check {
    ss_time alone[3];       /* embedding, layer, head alone (from the first run) */
    double slow;
    uint64_t req, n, slowed, bad;
} slow_check;

static void on_slow_guest(void *ud, const gmg *g, const gmg_container *h, const gmg_req *r,
                          uint32_t chunk, uint32_t n, ss_time start, ss_time end,
                          ss_time weights_at)
{
    (void)g, (void)h, (void)weights_at;
    slow_check *c = ud;
    if (r->trace_id != c->req)
        return;
    ss_time d = end - start, a = c->alone[chunk == 0 ? 0 : chunk + 1 == n ? 2 : 1];
    ss_time slowed = (ss_time)((double)a * c->slow + 0.5);
    c->n++;
    c->slowed += c->slow != 1 && d == slowed;
    c->bad += d != a && d != slowed;
}

/* Co-location interference: a guest chunk placed in the helper's host phase shares its GPUs
 * with the helper's iteration and runs `slow` times its alone time (and the helper's compute
 * waits for it, as before); chunks in idle time run alone. With a busy helper (cold traffic,
 * a 50 ms overrun), factor 2 slows some chunks exactly 2x and the rest not at all, and the
 * moved request's first token comes no earlier than with factor 1; factor 1 is the model
 * without interference, every chunk at its alone time. */
static void test_interference_is_charged(void **state)
{
    fx *f = *state;
    f->cfg.guest_overrun = 50 * SS_NS_PER_MS;
    f->cfg.guest_weights = POL_WEIGHTS_STAGE;
    size_t n;
    trace_rec *r = workload(60, 2000, 6, &n);
    ss_time ttft[2];
    slow_check first = {.slow = 1};
    for (int i = 0; i < 2; i++) {
        f->cfg.guest_interference = i ? 2.0 : 1.0;
        slow_check c = first;
        c.slow = f->cfg.guest_interference;
        run_out o;
        memset(&o, 0, sizeof o);
        o.c.r = calloc(n, sizeof(metrics_req));
        gsim_observer obs = {.on_guest = on_slow_guest, .ud = &c};
        tu_recs src = {r, n, 0};
        gsim *g = begin(f, &src, &o.c, &obs, ss_time_from_s(0.5));
        ss_errbuf eb;
        gmg_id q = gsim_graph(g)->ctrs[0].waiting.tail;
        c.req = gsim_graph(g)->reqs[q].trace_id;
        if (i == 0) { /* alone times from the shape of the job, as the mechanism makes it */
            const gmg_container *home = &gsim_graph(g)->ctrs[0];
            cost_batch b = {0};
            cost_batch_add_prefill(&b, gsim_graph(g)->reqs[q].prompt, 0);
            cost_split sp;
            cost_iteration_split(home->cost, &b, &sp);
            c.alone[0] = sp.head_ns - sp.host_ns, c.alone[1] = sp.layer_ns;
            c.alone[2] = sp.tail_ns;
            memcpy(first.alone, c.alone, sizeof c.alone);
        }
        assert_int_equal(gsim_offload(g, q, 1, 0, &eb), 0);
        assert_int_equal(gsim_advance(g, SS_TIME_MAX, &eb), 0);
        assert_int_equal(gsim_finish(g), 0);
        ttft[i] = o.c.r[c.req].first_token - o.c.r[c.req].arrival;
        printf("# interference %.0fx: %llu chunks, %llu slowed, moved TTFT %.3f ms\n", c.slow,
               (unsigned long long)c.n, (unsigned long long)c.slowed, ttft[i] / 1e6);
        assert_int_equal(c.n, 34);
        assert_int_equal(c.bad, 0);
        if (i)
            assert_true(c.slowed > 0);
        gsim_destroy(&g);
        free(o.c.r);
    }
    assert_true(ttft[1] >= ttft[0]);
    free(r);
}

/* ---- the scheduler ------------------------------------------------------------------- */

/* Run the workload under --ops slice; returns the run's metrics and SliceScheduler's figures,
 * and the per-request outcomes in c. */
static void slice_run(fx *f, const trace_rec *r, size_t n, tu_collect *c, metrics *m,
                      slice_stats *st)
{
    f->cfg.ops = "slice";
    gsim *g = NULL;
    ss_errbuf eb;
    if (gsim_create(&g, &f->cfg, &eb))
        fail_msg("gsim_create: %s", eb.msg);
    tu_recs src = {r, n, 0};
    if (gsim_run(g, tu_recs_next, &src, c ? tu_collect_req : NULL, c, &eb))
        fail_msg("gsim_run: %s", eb.msg);
    *m = *gsim_metrics(g);
    *st = *gsim_slice_stats(g);
    gsim_destroy(&g);
}

/* One burst for the hot tenant and nothing after it: SliceScheduler offloads to the idle cold
 * container, and since nothing arrives after a decision and its what-ifs know the true output
 * lengths (the oracle predictor), every first token comes exactly when the what-if said. */
static void test_scheduler_predictions_are_exact_without_arrivals(void **state)
{
    fx *f = *state;
    ss_params_set(f->params, "slice_output_predictor", "oracle");
    size_t n;
    trace_rec *r = workload(80, 2000, 0, &n);
    tu_collect c = tu_collect_new(n);
    metrics m;
    slice_stats st;
    slice_run(f, r, n, &c, &m, &st);
    printf("# %llu offloads, %llu what-ifs, prediction error %lld ns in all\n",
           (unsigned long long)m.offloads_done, (unsigned long long)st.whatifs,
           (long long)m.offload_pred_err_ns);
    assert_true(m.offloads_done > 0);
    assert_int_equal(m.offload_predicted, m.offloads_done);
    assert_int_equal(m.offload_pred_err_ns, 0);
    assert_int_equal(c.n_calls, n);
    free(c.r);
    free(r);
}

/* Memory safety: with streamed weights and 0.4 GB outside the engines, every offload would
 * overflow the helper's memory, so none is made; with the usual 8 GB they are. */
static void test_scheduler_refuses_what_memory_cannot_hold(void **state)
{
    fx *f = *state;
    ss_params_set(f->params, "slice_weights", "stream");
    size_t n;
    trace_rec *r = workload(80, 2000, 0, &n);
    metrics m;
    slice_stats st;
    f->cfg.gpu_mem_util = 0.995;
    slice_run(f, r, n, NULL, &m, &st);
    assert_int_equal(m.offloads, 0);
    assert_true(st.refused_memory > 0);
    f->cfg.gpu_mem_util = 0.9;
    slice_run(f, r, n, NULL, &m, &st);
    assert_true(m.offloads > 0);
    free(r);
}

/* SLA safety: chunks may overrun the helper's host phases by up to 50 ms, which would stretch
 * the cold tenant's inter-token gaps past a 60 ms TBT bound; the what-if sees it and refuses,
 * and no cold request breaks its SLA. Without the bound the same offloads are made and do
 * delay the cold tenant. */
static void test_scheduler_refuses_what_breaks_an_sla(void **state)
{
    fx *f = *state;
    ss_params_set(f->params, "slice_overrun_ms", "50");
    /* gain is judged first: with no minimum gain and a horizon long enough for the moved
     * prefills to finish, the candidates that break the cold tenant's bound are gainful ones */
    ss_params_set(f->params, "slice_min_gain_ms", "0");
    ss_params_set(f->params, "slice_horizon_ms", "2000");
    size_t n;
    trace_rec *r = workload(120, 2000, 4, &n);
    tu_collect base = tu_collect_new(n), tight = tu_collect_new(n),
            loose = tu_collect_new(n);
    metrics m;
    slice_stats st;
    f->ten[1].sla[0].tbt_p99 = 60 * SS_NS_PER_MS;
    f->cfg.ops = "home";
    run_out ro;
    replay(f, r, n, 0, 1, &ro);
    memcpy(base.r, ro.c.r, n * sizeof(metrics_req));
    free(ro.c.r);
    slice_run(f, r, n, &tight, &m, &st);
    printf("# tight TBT bound: %llu offloads, %llu refused for SLA\n",
           (unsigned long long)m.offloads, (unsigned long long)st.refused_sla);
    assert_true(st.refused_sla > 0);
    size_t cold = 0;
    for (size_t i = 0; i < n; i++)
        if (r[i].tenant == 1) {
            cold++;
            assert_false(tight.r[i].sla & ~base.r[i].sla); /* nothing newly broken */
        }
    assert_true(cold > 50);
    f->ten[1].sla[0].tbt_p99 = 0;
    slice_run(f, r, n, &loose, &m, &st);
    assert_true(m.offloads > 0);
    int later = 0;
    for (size_t i = 0; i < n; i++)
        if (r[i].tenant == 1)
            later += loose.r[i].finish > base.r[i].finish;
    assert_true(later > 0);
    free(base.r);
    free(tight.r);
    free(loose.r);
    free(r);
}

/* Every allocation of a run with SliceScheduler (its forks and offloads included) can fail
 * cleanly: SS_ENOMEM and nothing leaked. */
static void test_scheduler_allocation_failures_are_clean(void **state)
{
    fx *f = *state;
    f->cfg.ops = "slice";
    f->cfg.check = 0;
    size_t n;
    trace_rec *r = workload(24, 2000, 0, &n);
    size_t base = ss_alloc_live_bytes();
    int ok = 0;
    uint64_t offloads = 0, k = 1;
    for (; k < 5000 && !ok; k += 1 + k / 64) {
        gsim *g = NULL;
        ss_errbuf eb;
        ss_alloc_fail_after(k);
        int rc = gsim_create(&g, &f->cfg, &eb);
        if (!rc) {
            tu_recs src = {r, n, 0};
            rc = gsim_run(g, tu_recs_next, &src, NULL, NULL, &eb);
        }
        ss_alloc_fail_after(0);
        assert_true(rc == SS_OK || rc == SS_ENOMEM);
        ok = rc == SS_OK;
        if (ok)
            offloads = gsim_metrics(g)->offloads_done;
        gsim_destroy(&g);
        if (ss_alloc_live_bytes() != base)
            fail_msg("leak of %zu bytes after failing allocation %llu",
                     ss_alloc_live_bytes() - base, (unsigned long long)k);
    }
    printf("# a clean run after failing each of the first %llu allocations (sampled)\n",
           (unsigned long long)k);
    assert_true(ok);
    assert_true(offloads > 0);
    free(r);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, tu_sim_fixture_teardown)
    const struct CMUnitTest tests[] = {
        T(test_offload_to_an_idle_helper),
        T(test_strict_fit_never_delays_the_helper),
        T(test_overrun_delays_the_helper),
        T(test_helper_memory_is_checked),
        T(test_weights_staged_once),
        T(test_staged_weights_evicted_under_pressure),
        T(test_fork_predicts_an_offload),
        T(test_fork_takes_chained_offloads_along),
        T(test_batching_decides_what_a_move_holds),
        T(test_chunks_run_in_dependency_order),
        T(test_expansion_includes_guest_waits),
        T(test_scheduler_predictions_are_exact_without_arrivals),
        T(test_scheduler_refuses_what_memory_cannot_hold),
        T(test_scheduler_refuses_what_breaks_an_sla),
        T(test_scheduler_allocation_failures_are_clean),
        T(test_host_phase_is_charged),
        T(test_link_efficiency_is_charged),
        T(test_decision_latency_is_charged),
        T(test_interference_is_charged),
    };
#undef T
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    tu_tmpdir_cleanup();
    return rc;
}
