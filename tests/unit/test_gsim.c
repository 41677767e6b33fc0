/* The global simulator end to end on in-memory traces: unloaded TTFT and E2E equal the cost
 * model's prediction, p99 TTFT never falls when the rate doubles, every request completes or is
 * counted as rejected, KV blocks stay within the pool under heavy preemption (invariants
 * checked after every event), the operator expansion of every iteration ends exactly when the
 * fast path's iteration does, runs are deterministic, and allocation failures are clean. */
#include "support/test_util.h"

#include "catalog/catalog.h"
#include "core/ss_alloc.h"
#include "core/ss_rng.h"
#include "gsim/gsim.h"

#include <math.h>

#include <stdlib.h>
#include <string.h>

typedef tu_sim fx; /* the shared simulator fixture (tests/support) */



static trace_rec rec(uint64_t id, double t_s, uint32_t prompt, uint32_t output)
{
    trace_rec r = {.id = id, .arrival_ns = ss_time_from_s(t_s), .prompt_tokens = prompt,
                   .output_tokens = output};
    return r;
}

/* Run cfg over recs; fills sum (if non-NULL) and per-request results (if c non-NULL). */
static int run(fx *f, const trace_rec *recs, size_t n, tu_collect *c, metrics_summary *sum,
               gsim **keep)
{
    gsim *g = NULL;
    ss_errbuf eb;
    int rc = gsim_create(&g, &f->cfg, &eb);
    if (rc)
        fail_msg("gsim_create: %s", eb.msg);
    tu_recs src = {recs, n, 0};
    rc = gsim_run(g, tu_recs_next, &src, c ? tu_collect_req : NULL, c, &eb);
    if (rc)
        fail_msg("gsim_run: %s", eb.msg);
    if (sum)
        metrics_summarize(gsim_metrics(g), gsim_end_time(g), sum);
    if (keep)
        *keep = g;
    else
        gsim_destroy(&g);
    return rc;
}

/* Tokens request 0 emits at iteration ends up to `until` (the arrival window's end). */
typedef struct window_watch {
    ss_time until;
    uint32_t tokens;
} window_watch;

static void watch_window(void *ud, const gmg *g, const gmg_container *c)
{
    window_watch *w = ud;
    for (uint32_t i = 0; i < c->iter.n_reqs; i++) {
        const gmg_req *q = &g->reqs[c->iter.reqs[i]];
        /* it emits a token when this step completes its pending work */
        if (q->trace_id == 0 && q->computed + q->q_tokens >= q->prompt + q->generated &&
            c->iter.end <= w->until)
            w->tokens++;
    }
}

/* The arrival window runs from the warm-up's end to the last arrival: a request's tokens count
 * in it when emitted by then, whenever it arrived, and the window's rates divide by its
 * length. One long request at 0 s and a short one at 1 s: request 0's in-window tokens are the
 * steps that end by 1 s, every one of request 1's are outside but at its arrival. */
static void test_arrival_window(void **state)
{
    fx *f = *state;
    f->cfg.replicas = 1;
    trace_rec recs[2] = {rec(0, 0, 100, 400), rec(1, 1.0, 50, 3)};
    tu_collect c = tu_collect_new(2);
    window_watch w = {.until = ss_time_from_s(1.0)};
    gsim *g = NULL;
    ss_errbuf eb;
    assert_int_equal(gsim_create(&g, &f->cfg, &eb), 0);
    gsim_observer obs = {.on_iter = watch_window, .ud = &w};
    gsim_set_observer(g, &obs);
    tu_recs src = {recs, 2, 0};
    assert_int_equal(gsim_run(g, tu_recs_next, &src, tu_collect_req, &c, &eb), 0);
    metrics_summary sum;
    metrics_summarize(gsim_metrics(g), gsim_end_time(g), &sum);
    printf("# request 0: %u of %u tokens in the 1 s window\n", c.r[0].win_tokens,
           c.r[0].generated);
    assert_true(w.tokens > 10 && w.tokens < c.r[0].generated); /* it runs past the window */
    assert_int_equal(c.r[0].win_tokens, w.tokens);
    assert_int_equal(c.r[1].win_tokens, 0); /* its first token comes after its arrival */
    assert_true(sum.arrival_window_s == 1.0);
    assert_true(sum.all.win_output_tokens_per_s == (double)w.tokens / 1.0);
    assert_true(sum.all.win_goodput_tokens_per_s == sum.all.win_output_tokens_per_s);
    /* the makespan rate divides all 403 tokens by the run's own window instead */
    assert_true(sum.window_s > 1.0);
    assert_true(sum.all.output_tokens_per_s ==
                (double)(c.r[0].generated + c.r[1].generated) / sum.window_s);
    gsim_destroy(&g);
    free(c.r);
}

/* The engine's front-end latency is added to the client-side TTFT and E2E of every completed
 * request, and to nothing else: the server-side schedule is the same. */
static void test_engine_frontend_latency(void **state)
{
    fx *f = *state;
    f->cfg.replicas = 1;
    trace_rec recs[3];
    for (int i = 0; i < 3; i++)
        recs[i] = rec((uint64_t)i, 0.01 * i, 300, 10);
    metrics_req base[3], fe[3];
    for (int k = 0; k < 2; k++) {
        cat_engine e = *f->cfg.engine;
        e.frontend_s = k ? 0.25 : 0.0;
        const cat_engine *keep = f->cfg.engine;
        f->cfg.engine = &e;
        tu_collect c = {k ? fe : base, 0, 0};
        run(f, recs, 3, &c, NULL, NULL);
        f->cfg.engine = keep;
    }
    for (int i = 0; i < 3; i++) {
        assert_int_equal(fe[i].first_token - base[i].first_token, 250000000);
        assert_int_equal(fe[i].finish - base[i].finish, 250000000);
        assert_int_equal(fe[i].tbt_sum, base[i].tbt_sum);
        assert_int_equal(fe[i].arrival, base[i].arrival);
    }
}

/* The request of id in the first n collected results. */
static const metrics_req *by_id(const metrics_req *r, size_t n, uint64_t id)
{
    for (size_t i = 0; i < n; i++)
        if (r[i].trace_id == id)
            return &r[i];
    fail_msg("request %llu not collected", (unsigned long long)id);
    return NULL;
}

/* Async scheduling: a request that arrives while a step runs is charged one step on its
 * client-side TTFT and E2E (the engine chose the next batch already), estimated as the shorter
 * of the running step and the one before it; none when the running step followed an idle
 * engine, or when it arrives at an idle engine. The schedule and the token gaps are the same. */
static void test_engine_async_scheduling(void **state)
{
    fx *f = *state;
    f->cfg.replicas = 1;
    /* r0 at an idle engine (step 0: its prefill); r1 1 ms later, during step 0 (after idle);
     * r2 during step 1 (r0's first decode and r1's prefill); r3 long after */
    trace_rec recs[4] = {rec(0, 0.0, 300, 10), rec(1, 0.001, 200, 10), rec(2, 0.0, 300, 10),
                         rec(3, 100.0, 300, 10)};
    metrics_req probe[4], base[4], lag[4];
    tu_collect c = {probe, 0, 0};
    trace_rec two[2] = {recs[0], recs[1]};
    run(f, two, 2, &c, NULL, NULL); /* step 0 ends at r0's first token, step 1 at r1's */
    ss_time end0 = by_id(probe, 2, 0)->first_token, end1 = by_id(probe, 2, 1)->first_token;
    ss_time step0 = end0, step1 = end1 - end0;
    assert_true(step1 > 0 && step1 < step0); /* a decode + 200-token prefill after 300 */
    recs[2].arrival_ns = end0 + 1000; /* during step 1 */
    trace_rec order[4] = {recs[0], recs[1], recs[2], recs[3]};
    for (int k = 0; k < 2; k++) {
        cat_engine e = *f->cfg.engine;
        e.async_scheduling = k;
        const cat_engine *keep = f->cfg.engine;
        f->cfg.engine = &e;
        tu_collect cc = {k ? lag : base, 0, 0};
        run(f, order, 4, &cc, NULL, NULL);
        f->cfg.engine = keep;
    }
    ss_time want[4] = {0, 0, step1 < step0 ? step1 : step0, 0};
    for (uint64_t i = 0; i < 4; i++) {
        const metrics_req *b = by_id(base, 4, i), *l = by_id(lag, 4, i);
        assert_int_equal(l->first_token - b->first_token, want[i]);
        assert_int_equal(l->finish - b->finish, want[i]);
        assert_int_equal(l->tbt_sum, b->tbt_sum);
    }
}

static void test_unloaded_ttft_equals_prefill_prediction(void **state)
{
    fx *f = *state;
    f->cfg.replicas = 1;
    const uint32_t prompts[] = {1, 17, 512, 1020, 4142, 9000};
    trace_rec recs[6];
    for (int i = 0; i < 6; i++)
        recs[i] = rec((uint64_t)i, 200.0 * i, prompts[i], 20);
    tu_collect c = tu_collect_new(6);
    gsim *g;
    run(f, recs, 6, &c, NULL, &g);
    cost_model *cm = gsim_graph(g)->ctrs[0].cost;
    for (int i = 0; i < 6; i++) {
        cost_batch b = {0};
        cost_batch_add_prefill(&b, prompts[i], 0);
        ss_time want = cost_iteration_ns(cm, &b);
        assert_int_equal(c.r[i].first_token - c.r[i].arrival, want);
        /* then 19 single-sequence decode steps at growing context */
        for (uint32_t k = 1; k < 20; k++) {
            cost_batch d = {0};
            cost_batch_add_decode(&d, prompts[i] + k);
            want += cost_iteration_ns(cm, &d);
        }
        assert_int_equal(c.r[i].finish - c.r[i].arrival, want);
        assert_int_equal(c.r[i].generated, 20);
    }
    gsim_destroy(&g);
    free(c.r);
}

/* A synthetic Azure-conversation-like load (Poisson, lognormal lengths). */
static trace_rec *synth(size_t n, double rate, uint64_t seed)
{
    return tu_synth_conv(n, rate, seed, 1);
}

static void test_doubling_rate_never_lowers_p99_ttft(void **state)
{
    fx *f = *state;
    f->cfg.replicas = 1;
    enum { N = 3000 };
    trace_rec *base = synth(N, 1.0, 7), *scaled = calloc(N, sizeof *scaled);
    double prev = -1;
    for (double scale = 1; scale <= 16; scale *= 2) {
        for (size_t i = 0; i < N; i++) {
            scaled[i] = base[i];
            scaled[i].arrival_ns = (ss_time)llround((double)base[i].arrival_ns / scale);
        }
        metrics_summary m;
        run(f, scaled, N, NULL, &m, NULL);
        if (m.all.ttft_ms.p99 < prev)
            fail_msg("rate x%g: p99 TTFT %.1f ms < %.1f ms at half the rate", scale,
                     m.all.ttft_ms.p99, prev);
        prev = m.all.ttft_ms.p99;
    }
    assert_true(prev > 1000); /* the top rate really overloads the replica */
    free(base);
    free(scaled);
}

static void test_conservation_with_rejections(void **state)
{
    fx *f = *state;
    f->cfg.replicas = 2;
    f->cfg.max_model_len = 4096;
    enum { N = 400 };
    trace_rec *r = synth(N, 20, 3);
    for (size_t i = 0; i < N; i += 37)
        r[i].prompt_tokens = 5000; /* longer than max_model_len: rejected */
    for (size_t i = 1; i < N; i += 41) {
        r[i].prompt_tokens = 4000; /* prompt + output beyond max_model_len: truncated */
        r[i].output_tokens = 500;
    }
    tu_collect c = tu_collect_new(N);
    metrics_summary m;
    run(f, r, N, &c, &m, NULL);
    assert_int_equal(m.requests, N);
    assert_int_equal(m.all.requests, N);
    assert_int_equal(m.all.completed + m.all.rejected, N);
    assert_int_equal(c.n_calls, N);
    uint64_t too_long = 0;
    for (size_t i = 0; i < N; i++) {
        /* the prompt limit is min(max_model_len, max_num_batched_tokens) = 4096 */
        too_long += r[i].prompt_tokens > 4096;
        assert_int_equal(c.r[i].rejected, r[i].prompt_tokens > 4096);
        if (!c.r[i].rejected) {
            uint32_t room = c.r[i].prompt < 4096 ? 4096 - c.r[i].prompt : 1;
            assert_true(c.r[i].generated >= 1);
            assert_true(c.r[i].generated == (r[i].output_tokens < room ? r[i].output_tokens : room));
            assert_true(c.r[i].first_token >= c.r[i].arrival);
            assert_true(c.r[i].finish >= c.r[i].first_token);
        }
    }
    assert_int_equal(m.all.rejected, too_long);
    assert_true(too_long > (N + 36) / 37);
    assert_true(m.all.truncated > 0); /* some prompt + output exceeded 4096 */
    free(r);
    free(c.r);
}

static void test_kv_bounds_under_preemption(void **state)
{
    fx *f = *state;
    f->cfg.replicas = 1;
    f->cfg.gpu_mem_util = 0.22; /* about 1.7 GiB of KV: forces preemption */
    f->cfg.check = 1;
    enum { N = 600 };
    trace_rec *r = synth(N, 50, 11);
    metrics_summary m;
    gsim *g;
    run(f, r, N, NULL, &m, &g);
    assert_true(m.all.preemptions > 0);
    assert_int_equal(m.all.completed + m.all.rejected, N);
    const gmg_container *c = &gsim_graph(g)->ctrs[0];
    assert_true(c->blocks_peak <= c->blocks_total);
    assert_int_equal(c->blocks_free, c->blocks_total);
    gsim_destroy(&g);
    free(r);
}

typedef struct expand_check {
    gmg_op ops[8192];
    gmg_edge edges[8192];
    uint64_t n_iters, stage_changes, sends;
    ss_time stage_sum; /* summed stage durations (= GPU busy time of one GPU per stage) */
    int bad;
} expand_check;

static void on_iter(void *ud, const gmg *g, const gmg_container *c)
{
    expand_check *x = ud;
    size_t n = gmg_iter_expand(g, c, x->ops, 8192, x->edges);
    assert_true(n <= 8192 && n > c->model->layers);
    if (x->ops[0].start != c->iter.start || x->ops[n - 1].end != c->iter.end)
        x->bad++;
    /* back to back within a stage; a later stage may wait for earlier micro-batches */
    for (size_t i = 1; i < n; i++) {
        int same_stage = x->ops[i].placed_gpu == x->ops[i - 1].placed_gpu;
        if ((same_stage ? x->ops[i].start != x->ops[i - 1].end
                        : x->ops[i].start < x->ops[i - 1].end) ||
            x->edges[i - 1].dst != i)
            x->bad++;
        x->stage_changes += !same_stage;
        x->sends += x->ops[i].shape.kind == COST_OP_PP_SEND;
    }
    for (uint32_t st = 0; st < c->pp; st++)
        x->stage_sum += c->iter.stage_end[st] - c->iter.stage_start[st];
    x->n_iters++;
}

static void test_operator_expansion_matches_fast_path(void **state)
{
    fx *f = *state;
    f->cfg.replicas = 2;
    f->cfg.tp = 2;
    f->cfg.gpu_mem_util = 0.5; /* tight KV at TP 2: swaps happen and must expand too */
    ss_params_set(f->params, "preempt", "swap");
    enum { N = 300 };
    trace_rec *r = synth(N, 40, 5);
    expand_check *x = calloc(1, sizeof *x);
    gsim *g = NULL;
    ss_errbuf eb;
    assert_int_equal(gsim_create(&g, &f->cfg, &eb), 0);
    gsim_observer obs = {.on_iter = on_iter, .ud = x};
    gsim_set_observer(g, &obs);
    tu_recs src = {r, N, 0};
    assert_int_equal(gsim_run(g, tu_recs_next, &src, NULL, NULL, &eb), 0);
    assert_int_equal(x->n_iters, gsim_iterations(g));
    assert_int_equal(x->bad, 0);
    assert_true(gsim_metrics(g)->swap_outs > 0);
    gsim_destroy(&g);
    free(x);
    free(r);
}

static void test_deterministic(void **state)
{
    fx *f = *state;
    f->cfg.replicas = 3;
    f->cfg.routing = "lor";
    enum { N = 2000 };
    trace_rec *r = synth(N, 12, 9);
    tu_collect a = tu_collect_new(N), b = tu_collect_new(N);
    metrics_summary ma, mb;
    run(f, r, N, &a, &ma, NULL);
    run(f, r, N, &b, &mb, NULL);
    assert_memory_equal(&ma, &mb, sizeof ma);
    assert_memory_equal(a.r, b.r, N * sizeof(metrics_req));
    free(r);
    free(a.r);
    free(b.r);
}

static void test_allocation_failures_are_clean(void **state)
{
    fx *f = *state;
    f->cfg.replicas = 2;
    enum { N = 200 };
    trace_rec *r = synth(N, 10, 1);
    int ok = 0;
    size_t base = ss_alloc_live_bytes(); /* the fixture's catalog and params */
    for (uint64_t k = 1; k < 200 && !ok; k++) {
        gsim *g = NULL;
        ss_errbuf eb;
        ss_alloc_fail_after(k);
        int rc = gsim_create(&g, &f->cfg, &eb);
        if (!rc) {
            tu_recs src = {r, N, 0};
            rc = gsim_run(g, tu_recs_next, &src, NULL, NULL, &eb);
        }
        ss_alloc_fail_after(0);
        assert_true(rc == SS_OK || rc == SS_ENOMEM);
        ok = rc == SS_OK;
        gsim_destroy(&g);
        if (ss_alloc_live_bytes() != base)
            fail_msg("leak of %zu bytes after failing allocation %llu (rc %d: %s)",
                     ss_alloc_live_bytes() - base, (unsigned long long)k, rc, rc ? eb.msg : "");
    }
    assert_true(ok);
    free(r);
}

/* ---- hand-checked two-request scenarios, one replica ------------------------------------
 * A: prompt 1000, output 3, arrives at 0; B: prompt 600, output 2, arrives at 1 ms (during
 * A's prefill). Expected times are sums of cost-model iterations written out by hand. */

static ss_time it_ns(cost_model *cm, const cost_batch *b) { return cost_iteration_ns(cm, b); }

static cost_batch pre(uint64_t q, uint64_t c0)
{
    cost_batch b = {0};
    cost_batch_add_prefill(&b, q, c0);
    return b;
}

static cost_batch dec(uint64_t ctx)
{
    cost_batch b = {0};
    cost_batch_add_decode(&b, ctx);
    return b;
}

static cost_batch both(cost_batch a, cost_batch b)
{
    cost_batch_merge(&a, &b);
    return a;
}

typedef struct two_req {
    metrics_req a, b;
    cost_model *cm;
    gsim *g;
} two_req;

static void run_two(fx *f, const char *batching, two_req *out)
{
    f->cfg.replicas = 1;
    f->cfg.batching = batching;
    trace_rec recs[2] = {rec(0, 0.0, 1000, 3), rec(1, 0.001, 600, 2)};
    tu_collect c = tu_collect_new(2);
    run(f, recs, 2, &c, NULL, &out->g);
    out->a = c.r[0];
    out->b = c.r[1];
    out->cm = gsim_graph(out->g)->ctrs[0].cost;
    free(c.r);
}

static const ss_time MS = SS_NS_PER_MS;

static void test_two_requests_vllm(void **state)
{
    two_req t;
    run_two(*state, "vllm", &t);
    cost_batch b = pre(1000, 0);
    ss_time d1 = it_ns(t.cm, &b);               /* prefill A */
    b = pre(600, 0);
    ss_time d2 = it_ns(t.cm, &b);               /* prefill B first: vLLM is prefill-first */
    b = both(dec(1001), dec(601));
    ss_time d3 = it_ns(t.cm, &b);               /* decode A and B; B done */
    b = dec(1002);
    ss_time d4 = it_ns(t.cm, &b);               /* decode A; A done */
    assert_int_equal(t.a.first_token, d1);
    assert_int_equal(t.b.first_token - t.b.arrival, d1 + d2 - MS);
    assert_int_equal(t.b.finish, d1 + d2 + d3);
    assert_int_equal(t.a.finish, d1 + d2 + d3 + d4);
    assert_int_equal(t.a.tbt_max, d2 + d3);     /* A's decode stalled behind B's prefill */
    gsim_destroy(&t.g);
}

static void test_two_requests_sarathi(void **state)
{
    two_req t;
    run_two(*state, "sarathi", &t);
    cost_batch b = pre(512, 0);
    ss_time d1 = it_ns(t.cm, &b);               /* A's first chunk (budget 512) */
    b = both(pre(488, 512), pre(24, 0));
    ss_time d2 = it_ns(t.cm, &b);               /* A's last chunk + B's first 24 tokens */
    b = both(dec(1001), pre(511, 24));
    ss_time d3 = it_ns(t.cm, &b);               /* decode A first, then B's chunk */
    b = both(dec(1002), pre(65, 535));
    ss_time d4 = it_ns(t.cm, &b);               /* A's last token, B's last chunk */
    b = dec(601);
    ss_time d5 = it_ns(t.cm, &b);
    assert_int_equal(t.a.first_token, d1 + d2);
    assert_int_equal(t.a.finish, d1 + d2 + d3 + d4);
    assert_int_equal(t.b.first_token - t.b.arrival, d1 + d2 + d3 + d4 - MS);
    assert_int_equal(t.b.finish, d1 + d2 + d3 + d4 + d5);
    assert_int_equal(t.a.tbt_max, d3 > d4 ? d3 : d4); /* decodes never stall behind a prefill */
    gsim_destroy(&t.g);
}

static void test_two_requests_static(void **state)
{
    two_req t;
    run_two(*state, "static", &t);
    cost_batch b = pre(1000, 0);
    ss_time d1 = it_ns(t.cm, &b);               /* batch {A}: B arrives too late to join */
    b = dec(1001);
    ss_time d2 = it_ns(t.cm, &b);
    b = dec(1002);
    ss_time d3 = it_ns(t.cm, &b);               /* A done: the batch ends */
    b = pre(600, 0);
    ss_time d4 = it_ns(t.cm, &b);               /* batch {B} */
    b = dec(601);
    ss_time d5 = it_ns(t.cm, &b);
    assert_int_equal(t.a.finish, d1 + d2 + d3);
    assert_int_equal(t.b.first_token - t.b.arrival, d1 + d2 + d3 + d4 - MS);
    assert_int_equal(t.b.finish, d1 + d2 + d3 + d4 + d5);
    gsim_destroy(&t.g);
}

static void test_two_requests_orca(void **state)
{
    fx *f = *state;
    ss_params_set(f->params, "reserve", "oracle");
    two_req t;
    run_two(f, "orca", &t);
    cost_batch b = pre(1000, 0);
    ss_time d1 = it_ns(t.cm, &b);
    b = both(dec(1001), pre(600, 0));
    ss_time d2 = it_ns(t.cm, &b);               /* selective batching: A decodes, B prefills */
    b = both(dec(1002), dec(601));
    ss_time d3 = it_ns(t.cm, &b);
    assert_int_equal(t.b.first_token - t.b.arrival, d1 + d2 - MS);
    assert_int_equal(t.a.finish, d1 + d2 + d3);
    assert_int_equal(t.b.finish, d1 + d2 + d3);
    /* the reservation covers prompt + output from admission: no growth, no preemption */
    assert_int_equal(gsim_metrics(t.g)->all.preemptions, 0);
    gsim_destroy(&t.g);
}

/* Static without shrink pays for finished members: a batch of a 1-token and a 3-token request
 * decodes at the cost of two sequences even after the short one finished. */
static void test_static_padding_and_shrink(void **state)
{
    fx *f = *state;
    f->cfg.replicas = 1;
    f->cfg.batching = "static";
    trace_rec recs[2] = {rec(0, 0.0, 300, 2), rec(1, 0.0, 100, 4)};
    for (int shrink = 0; shrink < 2; shrink++) {
        ss_params_set(f->params, "shrink", shrink ? "true" : "false");
        tu_collect c = tu_collect_new(2);
        gsim *g;
        run(f, recs, 2, &c, NULL, &g);
        cost_model *cm = gsim_graph(g)->ctrs[0].cost;
        cost_batch b = both(pre(300, 0), pre(100, 0));
        cost_batch pad = pre(200, 100);
        pad.n_prefill = 0;
        cost_batch_merge(&b, &pad);              /* B's prompt padded to 300 */
        ss_time d1 = it_ns(cm, &b);
        b = both(dec(301), dec(101));
        ss_time d2 = it_ns(cm, &b);              /* A done */
        b = shrink ? dec(102) : both(dec(102), dec(102)); /* A's slot: a phantom at max ctx */
        ss_time d3 = it_ns(cm, &b);
        b = shrink ? dec(103) : both(dec(103), dec(103));
        ss_time d4 = it_ns(cm, &b);
        assert_int_equal(c.r[0].finish, d1 + d2);
        assert_int_equal(c.r[1].finish, d1 + d2 + d3 + d4);
        gsim_destroy(&g);
        free(c.r);
    }
}

/* Observer counting swaps and checking that an iteration with swaps lasts its PCIe transfer
 * time (at the PCIe efficiency) plus the cost of its batch. */
typedef struct swap_watch {
    uint64_t swap_outs, swap_ins, iters_with_swaps, bad;
    double pcie_bw;
} swap_watch;

static void watch_iter(void *ud, const gmg *g, const gmg_container *c)
{
    swap_watch *w = ud;
    if (!c->iter.swap_blocks)
        return;
    w->iters_with_swaps++;
    double bytes = gmg_swap_bytes_per_gpu(g, c, c->iter.swap_blocks);
    ss_time want = (ss_time)(bytes / w->pcie_bw * 1e9 + 0.5);
    ss_time cost = cost_iteration_ns(c->cost, &c->iter.batch);
    if (c->iter.swap_ns != want || c->iter.end - c->iter.start != want + cost)
        w->bad++;
}

static void watch_req(void *ud, const gmg *g, const gmg_container *c, const gmg_req *r,
                      gsim_req_event what, ss_time now)
{
    (void)now;
    (void)g;
    (void)c;
    (void)r;
    swap_watch *w = ud;
    w->swap_outs += what == GSIM_REQ_SWAP_OUT;
    w->swap_ins += what == GSIM_REQ_SWAP_IN;
}

static void test_swap_preemption(void **state)
{
    fx *f = *state;
    f->cfg.replicas = 1;
    f->cfg.gpu_mem_util = 0.22;
    f->cfg.check = 1;
    ss_params_set(f->params, "preempt", "swap");
    enum { N = 600 };
    trace_rec *r = synth(N, 50, 11);
    swap_watch w = {.pcie_bw = f->cfg.gpu->pcie_bw * gsim_link_eff(&f->cfg, GMG_LINK_PCIE)};
    gsim *g = NULL;
    ss_errbuf eb;
    assert_int_equal(gsim_create(&g, &f->cfg, &eb), 0);
    gsim_observer obs = {.on_iter = watch_iter, .on_request = watch_req, .ud = &w};
    gsim_set_observer(g, &obs);
    tu_recs src = {r, N, 0};
    assert_int_equal(gsim_run(g, tu_recs_next, &src, NULL, NULL, &eb), 0);
    const metrics *m = gsim_metrics(g);
    assert_true(w.swap_outs > 0);
    assert_int_equal(w.swap_outs, m->swap_outs);
    assert_int_equal(w.swap_ins, w.swap_outs); /* everyone swapped out came back */
    assert_true(w.iters_with_swaps > 0);
    assert_int_equal(w.bad, 0);
    assert_int_equal(m->all.completed + m->all.rejected, N);
    const gmg_container *c = &gsim_graph(g)->ctrs[0];
    assert_int_equal(c->swap_free, c->swap_total);
    gsim_destroy(&g);
    free(r);
}

static void test_livelock_guard_rejects_and_counts(void **state)
{
    fx *f = *state;
    f->cfg.replicas = 1;
    f->cfg.gpu_mem_util = 0.22;
    f->cfg.check = 1;
    ss_params_set(f->params, "max_preemptions", "1");
    enum { N = 600 };
    trace_rec *r = synth(N, 50, 11);
    metrics_summary m;
    tu_collect c = tu_collect_new(N);
    run(f, r, N, &c, &m, NULL);
    assert_true(m.aborted > 0);
    assert_int_equal(m.all.completed + m.all.rejected, N);
    for (size_t i = 0; i < N; i++)
        assert_true(c.r[i].preemptions <= 1);
    free(r);
    free(c.r);
}

/* Pipeline parallelism across two nodes: Llama-2-70B on TP 4 x PP 4 (16 A100s, 8 per node).
 * Every iteration expands stage by stage, with a send closing each stage but the last, and the
 * GPUs of each stage are busy exactly the summed stage durations. */
static void test_pipeline_expansion_and_busy_time(void **state)
{
    fx *f = *state;
    f->cfg.model = catalog_model(f->cat, "llama-2-70b");
    f->cfg.replicas = 1;
    f->cfg.tp = 4;
    f->cfg.pp = 4;
    enum { N = 200 };
    trace_rec *r = synth(N, 8, 5);
    expand_check *x = calloc(1, sizeof *x);
    gsim *g = NULL;
    ss_errbuf eb;
    assert_int_equal(gsim_create(&g, &f->cfg, &eb), 0);
    const gmg *G = gsim_graph(g);
    assert_int_equal(G->n_gpus, 16);
    assert_int_equal(G->n_ctrs, 4); /* four virtual engines */
    assert_int_equal(G->gpus[7].node, 0);
    assert_int_equal(G->gpus[8].node, 1); /* stages 2 and 3 on the second node */
    gsim_observer obs = {.on_iter = on_iter, .ud = x};
    gsim_set_observer(g, &obs);
    tu_recs src = {r, N, 0};
    assert_int_equal(gsim_run(g, tu_recs_next, &src, NULL, NULL, &eb), 0);
    assert_int_equal(x->bad, 0);
    assert_int_equal(x->stage_changes, 3 * x->n_iters);
    assert_int_equal(x->sends, 3 * x->n_iters);
    ss_time busy = 0;
    for (uint32_t st = 0; st < 4; st++)
        busy += gsim_gpu_stats_at(g, st * 4)->busy_ns;
    assert_int_equal(busy, x->stage_sum);
    gsim_destroy(&g);
    free(x);
    free(r);
}

/* Unloaded, one request through two stages costs one pp_send more than without pipelining;
 * two requests arriving together on the two virtual engines overlap in the pipeline. */
static void test_pipeline_timings(void **state)
{
    fx *f = *state;
    f->cfg.model = catalog_model(f->cat, "llama-2-13b"); /* 40 layers: 20 per stage */
    f->cfg.replicas = 1;
    trace_rec one[1] = {rec(0, 0.0, 1000, 1)};
    trace_rec two[2] = {rec(0, 0.0, 1000, 1), rec(1, 0.0, 1000, 1)};
    tu_collect c1 = tu_collect_new(1), c2 = tu_collect_new(2);
    gsim *g;
    run(f, one, 1, &c1, NULL, &g);
    ss_time flat = c1.r[0].first_token;
    gsim_destroy(&g);
    f->cfg.pp = 2;
    run(f, two, 2, &c2, NULL, &g);
    const gmg_container *c = &gsim_graph(g)->ctrs[0];
    cost_batch b = pre(1000, 0);
    cost_split sp;
    cost_iteration_split(c->cost, &b, &sp);
    ss_time send = cost_pp_send(c->cost, &b, NULL);
    ss_time a = sp.head_ns + 20 * sp.layer_ns + send, bb = 20 * sp.layer_ns + sp.tail_ns;
    assert_int_equal(a + bb, flat + send);
    assert_int_equal(c2.r[0].first_token, a + bb);
    assert_int_equal(c2.r[1].first_token, (2 * a > a + bb ? 2 * a : a + bb) + bb);
    assert_int_equal(c2.r[0].container, 0);
    assert_int_equal(c2.r[1].container, 1);
    gsim_destroy(&g);
    free(c1.r);
    free(c2.r);
}

/* Prefix-block ids from the trace give the request its block chain when it arrives (the
 * reader's array is reused after): each request's chain is the one its own ids make, and it is
 * freed with the request. */
typedef struct prefix_watch {
    uint64_t seen, bad, chains;
} prefix_watch;

static void watch_prefix(void *ud, const gmg *g, const gmg_container *c)
{
    prefix_watch *w = ud;
    for (uint32_t i = 0; i < c->iter.n_reqs; i++) {
        const gmg_req *q = &g->reqs[c->iter.reqs[i]];
        w->seen++;
        uint32_t ids[8], n = (uint32_t)q->trace_id % 5;
        for (uint32_t k = 0; k < n; k++)
            ids[k] = (uint32_t)q->trace_id * 10 - (n - 1 - k);
        gmg_req want = {.prompt = q->prompt, .n_prefix_blocks = n};
        assert_int_equal(gmg_pc_chain_make(&want, ids, c->block_tokens), 0);
        uint32_t nb = gmg_pc_blocks(&want, c->block_tokens);
        if (q->n_prefix_blocks != n || gmg_pc_blocks(q, c->block_tokens) != nb ||
            (nb && (!n || memcmp(q->chain->key, want.chain->key, nb * sizeof *want.chain->key))))
            w->bad++;
        w->chains += nb > 0;
        gmg_pc_chain_drop(&want);
    }
}

static int scribbling_next(void *ud, trace_rec *out, ss_errbuf *eb)
{
    static uint32_t blocks[8]; /* reused on every call, like the reader's line buffer */
    int rc = tu_recs_next(ud, out, eb);
    if (rc != 1)
        return rc;
    out->n_prefix_blocks = (uint32_t)out->id % 5;
    for (uint32_t k = 0; k < 8; k++)
        blocks[k] = k < out->n_prefix_blocks ? (uint32_t)out->id * 10 - (out->n_prefix_blocks - 1 - k) : 0;
    out->prefix_blocks = out->n_prefix_blocks ? blocks : NULL;
    return 1;
}

static void test_prefix_blocks_kept_on_requests(void **state)
{
    fx *f = *state;
    f->cfg.replicas = 2;
    f->cfg.prefix_cache = GSIM_PREFIX_AUTO; /* on from the first request with ids */
    enum { N = 300 };
    trace_rec *r = synth(N, 20, 4);
    prefix_watch w = {0};
    gsim *g = NULL;
    ss_errbuf eb;
    assert_int_equal(gsim_create(&g, &f->cfg, &eb), 0);
    gsim_observer obs = {.on_iter = watch_prefix, .ud = &w};
    gsim_set_observer(g, &obs);
    tu_recs src = {r, N, 0};
    assert_int_equal(gsim_run(g, scribbling_next, &src, NULL, NULL, &eb), 0);
    assert_true(w.seen > N);
    assert_true(w.chains > N / 2);
    assert_int_equal(w.bad, 0);
    gsim_destroy(&g);
    free(r);
}

/* Idle slices: on every GPU, compute time + idle slices tile the run exactly; a request alone
 * gives one slice per iteration (its host phase), the first merged with the idle time before
 * it, and the long gaps land in their decade bucket. */
static void test_idle_slices_tile_the_run(void **state)
{
    fx *f = *state;
    f->cfg.replicas = 2; /* GPU 1 gets the second request only */
    trace_rec recs[2] = {rec(0, 1.0, 600, 20), rec(1, 30.0, 600, 20)};
    gsim *g;
    run(f, recs, 2, NULL, NULL, &g);
    const gmg *G = gsim_graph(g);
    const metrics *m = gsim_metrics(g);
    ss_time end = gsim_end_time(g), idle = 0;
    uint64_t slices = 0;
    for (uint32_t i = 0; i < G->n_gpus; i++) {
        const gsim_gpu_stats *u = gsim_gpu_stats_at(g, i);
        assert_int_equal(u->iterations, 20);
        assert_int_equal(u->dev_busy_ns + u->idle_ns, end);
        assert_true(u->dev_busy_ns < u->busy_ns); /* the host phases are idle */
        /* 20 host phases, the first merged with the gap before it, and a trailing gap on
         * GPU 0 (GPU 1 finishes last) */
        assert_int_equal(u->idle_slices, 20 + (i == 0));
        idle += u->idle_ns;
        slices += u->idle_slices;
    }
    uint64_t count = 0;
    double sum = 0; /* exact: far below 2^53 ns */
    for (int b = 0; b < METRICS_SLICE_BUCKETS; b++) {
        count += m->slices.count[b];
        sum += m->slices.gpu_ns[b];
        assert_true(m->slices.gpu_ns[b] >= (double)m->slices.count[b] *
                                             (double)metrics_slice_bucket_lo(b));
        if (b + 1 < METRICS_SLICE_BUCKETS)
            assert_true(m->slices.count[b] == 0 || m->slices.gpu_ns[b] <
                                                       (double)m->slices.count[b] *
                                                           (double)metrics_slice_bucket_hi(b));
    }
    assert_int_equal(count, slices);
    assert_true(sum == (double)idle);
    /* GPU 1 idles 30 s before its request, GPU 0 about 29 s after its own: both >= 10 s;
     * GPU 0's first 1 s: the 1-10 s decade */
    assert_int_equal(m->slices.count[METRICS_SLICE_BUCKETS - 1], 2);
    assert_int_equal(m->slices.count[METRICS_SLICE_BUCKETS - 2], 1);
    /* the other host phases, 3 ms and more: the 1-10 ms decade */
    assert_int_equal(metrics_slice_bucket_lo(3), 1 * SS_NS_PER_MS);
    assert_int_equal(m->slices.count[3], 38);
    gsim_destroy(&g);
}

/* Idle GPU time summed over many GPUs cannot wrap: at the extremes a run accepts (every GPU of
 * the largest cluster a scenario can describe, 65,536 nodes x 64 GPUs, idle over the whole
 * clock range), the totals stay positive and within double rounding of the exact sum. Summed
 * in int64 ns, two such GPUs wrapped. */
static void test_idle_slices_sum_without_wrapping(void **state)
{
    (void)state;
    metrics m;
    assert_int_equal(metrics_init(&m, 1, 0), 0);
    const uint32_t n_gpus = 65536u * 64u;
    for (uint32_t i = 0; i < n_gpus; i++)
        assert_true(metrics_add_slice(&m, 0, SS_TIME_MAX, 0) == SS_TIME_MAX);
    /* 1,024 GPUs idle for 121 days each, as in the issue, in the 1-10 s and >= 10 s buckets */
    for (uint32_t i = 0; i < 1024; i++) {
        metrics_add_slice(&m, 0, 5 * SS_NS_PER_S, 0);
        metrics_add_slice(&m, 0, 121 * 86400 * SS_NS_PER_S, 0);
    }
    metrics_summary sum;
    metrics_summarize(&m, SS_TIME_MAX, &sum);
    assert_int_equal(sum.idle_slices, n_gpus + 2048u);
    double want_ns = (double)n_gpus * (double)SS_TIME_MAX + 1024.0 * 121 * 86400e9;
    assert_true(m.slices.gpu_ns[METRICS_SLICE_BUCKETS - 1] > 0);
    assert_true(fabs(m.slices.gpu_ns[METRICS_SLICE_BUCKETS - 1] - want_ns) <= 1e-9 * want_ns);
    assert_true(m.slices.gpu_ns[METRICS_SLICE_BUCKETS - 2] == 1024.0 * 5e9);
    want_ns += 1024.0 * 5e9;
    assert_true(fabs(sum.idle_gpu_s - want_ns / 1e9) <= 1e-9 * want_ns / 1e9);
    metrics_fini(&m);
}

/* A clock that would pass the end of the simulated time range stops the run with an error:
 * times are summed saturating, nothing wraps. Unfixed, the iteration of a request arriving
 * just before INT64_MAX ns ended "in the past" (signed overflow) and the run aborted. */
static void test_time_past_the_range_fails_cleanly(void **state)
{
    fx *f = *state;
    f->cfg.replicas = 1;
    trace_rec recs[2] = {rec(0, 0.0, 600, 20), rec(1, 0.0, 600, 20)};
    recs[1].arrival_ns = SS_TIME_MAX - SS_NS_PER_MS;
    gsim *g = NULL;
    ss_errbuf eb = {""};
    assert_int_equal(gsim_create(&g, &f->cfg, &eb), 0);
    tu_recs src = {recs, 2, 0};
    assert_int_equal(gsim_run(g, tu_recs_next, &src, NULL, NULL, &eb), SS_EINVAL);
    assert_non_null(strstr(eb.msg, "simulated time would pass the end of its range"));
    assert_int_equal(gsim_metrics(g)->all.completed, 1); /* the first request was served */
    gsim_destroy(&g);
}

static void test_idle_slices_skip_the_warmup(void **state)
{
    fx *f = *state;
    f->cfg.replicas = 1;
    f->cfg.warmup = ss_time_from_s(20);
    trace_rec recs[2] = {rec(0, 1.0, 600, 20), rec(1, 30.0, 600, 20)};
    gsim *g;
    run(f, recs, 2, NULL, NULL, &g);
    const gsim_gpu_stats *u = gsim_gpu_stats_at(g, 0);
    /* measured from 20 s on: the gap before the second request counts from 20 s (merged with
     * its first host phase), then its 19 other host phases; the two identical requests computed for the same time */
    assert_int_equal(u->idle_slices, 20);
    assert_int_equal(u->idle_ns + u->dev_busy_ns / 2, gsim_end_time(g) - ss_time_from_s(20));
    gsim_destroy(&g);
}

/* What-if forks. Two bursts of requests with a quiet gap between them; the replay pauses in
 * the gap, a fork of the named containers runs to the end of the gap, and every request of
 * those containers that the replay finishes within the gap must have been predicted exactly. */
enum { FORK_N1 = 160, FORK_N2 = 80 };

static trace_rec *two_bursts(ss_time *gap_from, ss_time *gap_to)
{
    trace_rec *a = synth(FORK_N1, 14, 21), *b = synth(FORK_N2, 14, 22);
    trace_rec *r = calloc(FORK_N1 + FORK_N2, sizeof *r);
    memcpy(r, a, FORK_N1 * sizeof *r);
    *gap_from = r[FORK_N1 - 1].arrival_ns;
    *gap_to = *gap_from + ss_time_from_s(60);
    for (size_t i = 0; i < FORK_N2; i++) {
        r[FORK_N1 + i] = b[i];
        r[FORK_N1 + i].id = FORK_N1 + i;
        r[FORK_N1 + i].arrival_ns += *gap_to;
    }
    free(a);
    free(b);
    return r;
}

/* A simulator of f's configuration started on src, its records to c (NULL: none). */
static gsim *started(fx *f, tu_recs *src, tu_collect *c)
{
    ss_errbuf eb;
    gsim *g = NULL;
    if (gsim_create(&g, &f->cfg, &eb))
        fail_msg("gsim_create: %s", eb.msg);
    assert_int_equal(gsim_start(g, tu_recs_next, src, c ? tu_collect_req : NULL, c, &eb), 0);
    return g;
}

static int same_outcome(const metrics_req *a, const metrics_req *b)
{
    return a->first_token == b->first_token && a->finish == b->finish &&
           a->tbt_sum == b->tbt_sum && a->tbt_max == b->tbt_max && a->generated == b->generated &&
           a->preemptions == b->preemptions && a->container == b->container &&
           a->rejected == b->rejected && a->sla == b->sla;
}

/* Pause the replay `pause` after the first burst's last arrival, fork ctrs, run the fork to
 * the end of the gap; returns the number of requests checked. */
static size_t check_fork(fx *f, ss_time pause, const gmg_id *ctrs, uint32_t n_ctrs)
{
    ss_time gap_from, gap_to;
    trace_rec *r = two_bursts(&gap_from, &gap_to);
    size_t n = FORK_N1 + FORK_N2;
    tu_collect rc = tu_collect_new(n), wc = tu_collect_new(n);
    ss_errbuf eb;
    tu_recs src = {r, n, 0};
    gsim *g = started(f, &src, &rc), *w = NULL;
    ss_time t0 = gap_from + pause;
    assert_int_equal(gsim_advance(g, t0, &eb), 0);
    uint64_t it0 = gsim_iterations(g);
    if (gsim_fork(g, ctrs, n_ctrs, tu_collect_req, &wc, &w, &eb))
        fail_msg("gsim_fork: %s", eb.msg);
    assert_int_equal(gsim_advance(w, gap_to - 1, &eb), 0);
    assert_int_equal(gsim_advance(g, gap_to - 1, &eb), 0);
    if (n_ctrs == gsim_graph(g)->n_ctrs) { /* the whole cluster: every iteration predicted */
        assert_int_equal(gsim_iterations(w), gsim_iterations(g) - it0);
        for (uint32_t i = 0; i < gsim_graph(g)->n_gpus; i++) {
            assert_int_equal(gsim_gpu_stats_at(w, i)->busy_ns, gsim_gpu_stats_at(g, i)->busy_ns);
            assert_true(gsim_graph(w)->gpus[i].mem.kv_used == gsim_graph(g)->gpus[i].mem.kv_used);
        }
    }
    assert_int_equal(gsim_advance(g, SS_TIME_MAX, &eb), 0);
    assert_int_equal(gsim_finish(g), 0);
    size_t checked = 0;
    for (size_t i = 0; i < n; i++) {
        int in_fork = 0;
        for (uint32_t k = 0; k < n_ctrs; k++)
            in_fork |= rc.r[i].container == ctrs[k];
        if (!in_fork || rc.r[i].finish <= t0 || rc.r[i].finish >= gap_to)
            continue;
        if (!same_outcome(&rc.r[i], &wc.r[i]))
            fail_msg("request %zu: replay finished at %lld, fork predicted %lld", i,
                     (long long)rc.r[i].finish, (long long)wc.r[i].finish);
        checked++;
    }
    assert_int_equal(wc.n_calls, checked); /* nothing else finished in the fork */
    gsim_destroy(&w);
    gsim_destroy(&g);
    free(r);
    free(rc.r);
    free(wc.r);
    return checked;
}

static void test_fork_predicts_the_replay_exactly(void **state)
{
    fx *f = *state;
    f->cfg.replicas = 3;
    gmg_id all[3] = {0, 1, 2}, one[1] = {1};
    size_t n = check_fork(f, ss_time_from_s(0.5), all, 3);
    printf("# whole cluster: %zu requests predicted exactly\n", n);
    assert_true(n > 40);
    n = check_fork(f, ss_time_from_s(2), one, 1);
    printf("# container 1 alone: %zu requests predicted exactly\n", n);
    assert_true(n > 10);
}

/* A fork changes nothing in the replay it was taken from. */
static void test_fork_leaves_the_replay_alone(void **state)
{
    fx *f = *state;
    f->cfg.replicas = 2;
    f->cfg.check = 1;
    ss_time gap_from, gap_to;
    trace_rec *r = two_bursts(&gap_from, &gap_to);
    size_t n = FORK_N1 + FORK_N2;
    tu_collect plain = tu_collect_new(n);
    tu_collect forked = tu_collect_new(n);
    run(f, r, n, &plain, NULL, NULL);
    ss_errbuf eb;
    tu_recs src = {r, n, 0};
    gsim *g = started(f, &src, &forked), *w = NULL;
    gmg_id all[2] = {0, 1};
    for (ss_time t = ss_time_from_s(1); t < gap_to + ss_time_from_s(20); t += ss_time_from_s(3)) {
        assert_int_equal(gsim_advance(g, t, &eb), 0);
        assert_int_equal(gsim_fork(g, all, 2, NULL, NULL, &w, &eb), 0);
        assert_int_equal(gsim_advance(w, t + ss_time_from_s(2), &eb), 0); /* checked too */
        gsim_destroy(&w);
    }
    assert_int_equal(gsim_advance(g, SS_TIME_MAX, &eb), 0);
    assert_int_equal(gsim_finish(g), 0);
    for (size_t i = 0; i < n; i++)
        assert_true(same_outcome(&plain.r[i], &forked.r[i]));
    gsim_destroy(&g);
    free(r);
    free(plain.r);
    free(forked.r);
}

/* Every allocation of a fork and of its run can fail cleanly: SS_ENOMEM, nothing leaked, the
 * replay it was taken from unharmed. */
static void test_fork_allocation_failures_are_clean(void **state)
{
    fx *f = *state;
    f->cfg.replicas = 2;
    ss_time gap_from, gap_to;
    trace_rec *r = two_bursts(&gap_from, &gap_to);
    size_t n = FORK_N1 + FORK_N2;
    ss_errbuf eb;
    tu_recs src = {r, n, 0};
    gsim *g = started(f, &src, NULL);
    assert_int_equal(gsim_advance(g, gap_from + ss_time_from_s(1), &eb), 0);
    gmg_id all[2] = {0, 1};
    size_t base = ss_alloc_live_bytes();
    for (int reuse = 0; reuse < 2; reuse++) { /* a new fork's memory, and the spare's */
        int ok = 0;
        for (uint64_t k = 1; k < 400 && !ok; k++) {
            gsim *w = NULL;
            if (reuse) { /* a fork before leaves its memory (gsim_fork takes it apart) */
                assert_int_equal(gsim_fork(g, all, 1, NULL, NULL, &w, &eb), 0);
                assert_int_equal(gsim_advance(w, gap_to, &eb), 0);
                gsim_destroy(&w);
            }
            ss_alloc_fail_after(k);
            int rc = gsim_fork(g, all, 2, NULL, NULL, &w, &eb);
            if (!rc)
                rc = gsim_advance(w, gap_to, &eb);
            ss_alloc_fail_after(0);
            assert_true(rc == SS_OK || rc == SS_ENOMEM);
            ok = rc == SS_OK;
            gsim_destroy(&w);
            gsim_release_spare(g);
            if (ss_alloc_live_bytes() != base)
                fail_msg("leak of %zu bytes after failing allocation %llu (%s memory)",
                         ss_alloc_live_bytes() - base, (unsigned long long)k,
                         reuse ? "a spare's" : "new");
        }
        assert_true(ok);
    }
    assert_int_equal(gsim_advance(g, SS_TIME_MAX, &eb), 0);
    assert_int_equal(gsim_finish(g), 0);
    gsim_destroy(&g);
    free(r);
}

/* A fork made in the memory another fork left (its spare) is the fork a new one is: the same
 * requests end at the same times, the same iterations run, the GPUs are as busy; the fork
 * before ran other containers further, and the replay went on meanwhile. */
static void test_fork_in_a_spare_is_a_new_fork(void **state)
{
    fx *f = *state;
    f->cfg.replicas = 3;
    ss_time gap_from, gap_to;
    trace_rec *r = two_bursts(&gap_from, &gap_to);
    size_t n = FORK_N1 + FORK_N2;
    ss_errbuf eb;
    tu_recs src = {r, n, 0};
    gsim *g = started(f, &src, NULL), *w[2] = {NULL, NULL};
    ss_time t0 = gap_from - ss_time_from_s(2), t1 = gap_from + ss_time_from_s(1);
    assert_int_equal(gsim_advance(g, t0, &eb), 0);
    gmg_id third = 2, two[2] = {0, 1};
    assert_int_equal(gsim_fork(g, &third, 1, NULL, NULL, &w[0], &eb), 0);
    assert_int_equal(gsim_advance(w[0], gap_to, &eb), 0);
    gsim_destroy(&w[0]); /* kept as g's spare */
    assert_int_equal(gsim_advance(g, t1, &eb), 0);
    tu_collect c[2] = {tu_collect_new(n), tu_collect_new(n)};
    for (int k = 0; k < 2; k++) { /* in the spare's memory, then in new memory */
        if (k)
            gsim_release_spare(g);
        assert_int_equal(gsim_fork(g, two, 2, tu_collect_req, &c[k], &w[k], &eb), 0);
        assert_int_equal(gsim_advance(w[k], gap_to, &eb), 0);
    }
    assert_true(c[0].n_calls > 10);
    assert_int_equal(c[0].n_calls, c[1].n_calls);
    for (size_t i = 0; i < n; i++)
        assert_true(same_outcome(&c[0].r[i], &c[1].r[i]));
    assert_int_equal(gsim_iterations(w[0]), gsim_iterations(w[1]));
    const gmg *a = gsim_graph(w[0]), *b = gsim_graph(w[1]);
    assert_int_equal(a->in_flight, b->in_flight);
    for (uint32_t i = 0; i < a->n_gpus; i++) {
        assert_int_equal(gsim_gpu_stats_at(w[0], i)->busy_ns, gsim_gpu_stats_at(w[1], i)->busy_ns);
        assert_true(a->gpus[i].mem.kv_used == b->gpus[i].mem.kv_used);
    }
    for (uint32_t i = 0; i < a->n_ctrs; i++) {
        assert_int_equal(a->ctrs[i].blocks_free, b->ctrs[i].blocks_free);
        assert_int_equal(a->ctrs[i].running.n, b->ctrs[i].running.n);
        assert_int_equal(a->ctrs[i].waiting.n, b->ctrs[i].waiting.n);
        assert_int_equal(a->ctrs[i].frozen, b->ctrs[i].frozen);
    }
    for (int k = 0; k < 2; k++) {
        gsim_destroy(&w[k]);
        free(c[k].r);
    }
    gsim_destroy(&g);
    free(r);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, tu_sim_fixture_setup, tu_sim_fixture_teardown)
int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_unloaded_ttft_equals_prefill_prediction),
        T(test_engine_frontend_latency),
        T(test_engine_async_scheduling),
        T(test_doubling_rate_never_lowers_p99_ttft),
        T(test_conservation_with_rejections),
        T(test_kv_bounds_under_preemption),
        T(test_operator_expansion_matches_fast_path),
        T(test_deterministic),
        T(test_allocation_failures_are_clean),
        T(test_two_requests_vllm),
        T(test_two_requests_sarathi),
        T(test_two_requests_static),
        T(test_two_requests_orca),
        T(test_static_padding_and_shrink),
        T(test_swap_preemption),
        T(test_pipeline_expansion_and_busy_time),
        T(test_pipeline_timings),
        T(test_prefix_blocks_kept_on_requests),
        T(test_arrival_window),
        T(test_idle_slices_tile_the_run),
        T(test_idle_slices_sum_without_wrapping),
        T(test_idle_slices_skip_the_warmup),
        T(test_time_past_the_range_fails_cleanly),
        T(test_fork_predicts_the_replay_exactly),
        T(test_fork_leaves_the_replay_alone),
        T(test_fork_allocation_failures_are_clean),
        T(test_fork_in_a_spare_is_a_new_fork),
        T(test_livelock_guard_rejects_and_counts),
    };
    return cmocka_run_group_tests_name("gsim", tests, NULL, NULL);
}
