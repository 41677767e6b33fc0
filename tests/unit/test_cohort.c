/* Decode cohorts (gsim_cohort.c) change nothing: a replay under Sarathi with cohorts (the
 * default) and without (gsim_config.no_steady, every step asked of the policy and every request
 * advanced one by one) gives every request the same record, field by field, and the run the
 * same summary, GPU ledgers and peaks; under KV pressure with a prefix cache (evictions,
 * preemptions: cohorts dissolve and form again), with TBT bounds and tiers (more distinct
 * bounds than a cohort keeps: it refuses the request and dissolves), advanced in short slices
 * (cohorts dissolve mid-step at every gsim_advance), and over cohorts longer than their tables
 * (which restart), and in what-if forks. Each case also checks that cohorts took most of its
 * steps. */
#include "support/test_util.h"

#include "catalog/catalog.h"
#include "gmg/gmg.h"
#include "gsim/gsim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef tu_sim fx;

static int setup(void **state)
{
    if (tu_sim_fixture_setup(state))
        return -1;
    fx *f = *state;
    f->cfg.check = 0; /* an invariant check after every event reads every request: no cohort */
    f->cfg.batching = "sarathi";
    f->cfg.replicas = 2;
    return 0;
}

typedef struct outcome {
    tu_collect c;
    metrics_summary s;
    ss_time end;
    uint64_t iterations, cohort_steps;
    double kv_peak[8];
    uint32_t blocks_peak[8];
} outcome;

/* A replay of src's requests with cohorts or without, started; its finished requests into c
 * when set. */
static gsim *started(fx *f, tu_recs *src, int no_steady, tu_collect *c)
{
    f->cfg.no_steady = no_steady;
    gsim *g = NULL;
    ss_errbuf eb;
    if (gsim_create(&g, &f->cfg, &eb))
        fail_msg("gsim_create: %s", eb.msg);
    assert_int_equal(gsim_start(g, tu_recs_next, src, c ? tu_collect_req : NULL, c, &eb), 0);
    return g;
}

/* Replay r[0..n) with cohorts or without, to the end in one gsim_advance or in slices of
 * `slice_s` simulated seconds. */
static void replay(fx *f, const trace_rec *r, size_t n, int no_steady, double slice_s,
                   outcome *o)
{
    memset(o, 0, sizeof *o);
    o->c = tu_collect_new(n);
    tu_recs src = {r, n, 0};
    gsim *g = started(f, &src, no_steady, &o->c);
    ss_errbuf eb;
    if (slice_s > 0)
        for (double t = slice_s; t < 4000; t += slice_s)
            if (gsim_advance(g, ss_time_from_s(t), &eb))
                fail_msg("gsim_advance: %s", eb.msg);
    if (gsim_advance(g, SS_TIME_MAX, &eb) || gsim_finish(g))
        fail_msg("replay: %s", eb.msg);
    metrics_summarize(gsim_metrics(g), gsim_end_time(g), &o->s);
    o->end = gsim_end_time(g);
    o->iterations = gsim_iterations(g);
    o->cohort_steps = gsim_cohort_steps(g);
    const gmg *G = gsim_graph(g);
    assert_true(G->n_gpus <= 8 && G->n_ctrs <= 8);
    for (uint32_t i = 0; i < G->n_gpus; i++)
        o->kv_peak[i] = G->gpus[i].kv_used_peak;
    for (uint32_t i = 0; i < G->n_ctrs; i++)
        o->blocks_peak[i] = G->ctrs[i].blocks_peak;
    gsim_destroy(&g);
}

static void same_pct(const char *what, const char *k, const metrics_pct *a, const metrics_pct *b)
{
    if (a->mean != b->mean || a->p50 != b->p50 || a->p90 != b->p90 || a->p99 != b->p99 ||
        a->max != b->max)
        fail_msg("%s: %s differs: mean %.17g/%.17g p99 %.17g/%.17g max %.17g/%.17g", what, k,
                 a->mean, b->mean, a->p99, b->p99, a->max, b->max);
}

/* a (cohorts) and b agree on everything; a's cohorts took at least `share` of its steps (and
 * some), b's none when `b_none`. */
static void same(const char *what, const outcome *a, const outcome *b, size_t n, double share,
                 int b_none)
{
    if (a->c.n_calls != n || b->c.n_calls != n || a->c.dup || b->c.dup)
        fail_msg("%s: %zu and %zu of %zu requests ended", what, a->c.n_calls, b->c.n_calls, n);
    for (size_t i = 0; i < n; i++) {
        const metrics_req *x = &a->c.r[i], *y = &b->c.r[i];
#define F(field)                                                                               \
    if (x->field != y->field)                                                                  \
        fail_msg("%s: request %zu: " #field " %lld with cohorts, %lld without", what, i,      \
                 (long long)x->field, (long long)y->field);
        F(trace_id) F(tenant) F(tier) F(rejected) F(reject_why) F(sla) F(measured) F(container)
        F(prompt) F(output_asked) F(generated) F(preemptions) F(migrations) F(arrival)
        F(first_token) F(finish) F(tbt_sum) F(tbt_max) F(win_tokens)
#undef F
    }
    const metrics_group_summary *x = &a->s.all, *y = &b->s.all;
    if (x->completed != y->completed || x->rejected != y->rejected ||
        x->preemptions != y->preemptions || x->output_tokens != y->output_tokens ||
        x->sla_violations != y->sla_violations ||
        x->win_output_tokens_per_s != y->win_output_tokens_per_s ||
        x->goodput_tokens_per_s != y->goodput_tokens_per_s ||
        x->prefix.hit_tokens != y->prefix.hit_tokens ||
        x->prefix.evictions != y->prefix.evictions || a->s.idle_slices != b->s.idle_slices ||
        a->s.idle_gpu_s != b->s.idle_gpu_s || a->end != b->end ||
        a->iterations != b->iterations)
        fail_msg("%s: the summaries differ", what);
    same_pct(what, "ttft", &x->ttft_ms, &y->ttft_ms);
    same_pct(what, "tbt", &x->tbt_ms, &y->tbt_ms);
    same_pct(what, "e2e", &x->e2e_ms, &y->e2e_ms);
    if (memcmp(a->kv_peak, b->kv_peak, sizeof a->kv_peak) ||
        memcmp(a->blocks_peak, b->blocks_peak, sizeof a->blocks_peak))
        fail_msg("%s: the KV peaks differ", what);
    if (b_none && b->cohort_steps)
        fail_msg("%s: no_steady took %llu cohort steps", what,
                 (unsigned long long)b->cohort_steps);
    if (!a->cohort_steps || (double)a->cohort_steps < share * (double)a->iterations)
        fail_msg("%s: cohorts took %llu of %llu steps, under %.0f %%", what,
                 (unsigned long long)a->cohort_steps, (unsigned long long)a->iterations,
                 100 * share);
}

static void both(fx *f, const trace_rec *r, size_t n, double slice_s, const char *what,
                 double share, outcome *a)
{
    outcome b;
    replay(f, r, n, 0, slice_s, a);
    replay(f, r, n, 1, slice_s, &b);
    same(what, a, &b, n, share, 1);
    free(b.c.r);
}

/* Sessions whose prompts a prefix cache finds, on a small KV pool: cached blocks evicted as
 * members cross into new blocks, preemptions (each dissolves the container's cohort), a
 * warm-up, and a token budget that leaves room for several prefills a step. */
static void test_prefix_cache_under_pressure(void **state)
{
    fx *f = *state;
    enum { N = 3000 };
    trace_rec *r = tu_synth_sessions(N, 14, 3);
    f->cfg.prefix_cache = GSIM_PREFIX_ON;
    f->cfg.gpu_mem_util = 0.24;
    f->cfg.warmup = ss_time_from_s(20);
    assert_int_equal(ss_params_set(f->params, "token_budget", "1024"), 0);
    outcome a;
    both(f, r, N, 0, "prefix cache under pressure", 0.5, &a);
    if (!a.s.all.preemptions || !a.s.all.prefix.evictions || !a.s.all.prefix.hit_tokens)
        fail_msg("not under pressure: %llu preemptions, %llu evictions, %llu hit tokens",
                 (unsigned long long)a.s.all.preemptions,
                 (unsigned long long)a.s.all.prefix.evictions,
                 (unsigned long long)a.s.all.prefix.hit_tokens);
    free(a.c.r);
    free(r);
}

/* Requests of three tiers with TBT bounds of their own (tight enough that some gaps break
 * them; a quarter of the requests make only two or three tokens, so that the first gap, which
 * a member keeps apart, decides their SLA), and then with more distinct bounds than a cohort
 * keeps. */
static void test_tbt_bounds_and_tiers(void **state)
{
    fx *f = *state;
    enum { N = 2500 };
    static const double tbt_ms[] = {12, 20, 30, 16, 25, 40, 60};
    trace_rec *r = tu_synth_conv(N, 12, 5, 2);
    for (int k = 0; k < 2; k++) {
        uint32_t bounds = k ? 7 : 3;
        for (size_t i = 0; i < N; i++) {
            r[i].tier = (uint8_t)(i % 3);
            r[i].has_slo = 2;
            r[i].slo_tbt_ns = ss_time_from_s(tbt_ms[(i * 5) % bounds] / 1e3);
            if (i % 4 == 1) /* one gap or two: the first gap (a member's own) decides */
                r[i].output_tokens = 2 + (uint32_t)(i % 8 == 1);
        }
        outcome a;
        both(f, r, N, 0, k ? "seven TBT bounds" : "three TBT bounds", k ? 0 : 0.5, &a);
        if (!a.s.all.sla_violations)
            fail_msg("no TBT bound broken: they are not exercised");
        free(a.c.r);
    }
    free(r);
}

/* gsim_advance in slices of 0.37 s: each return brings every member up to date, mid-step, and
 * the replay goes on as one that never stopped. */
static void test_advance_in_slices(void **state)
{
    fx *f = *state;
    enum { N = 1500 };
    trace_rec *r = tu_synth_sessions(N, 10, 7);
    f->cfg.prefix_cache = GSIM_PREFIX_ON;
    outcome a, one;
    both(f, r, N, 0.37, "advanced in slices", 0.3, &a);
    replay(f, r, N, 0, 0, &one);
    same("in slices and in one", &a, &one, N, 0.3, 0);
    free(a.c.r);
    free(one.c.r);
    free(r);
}

/* Long outputs on one replica: cohorts of more steps than their tables hold (4,096), which
 * restart. */
static void test_long_cohorts(void **state)
{
    fx *f = *state;
    enum { N = 400 };
    trace_rec *r = tu_synth_conv(N, 4, 11, 2);
    for (size_t i = 0; i < N; i++)
        r[i].output_tokens = 1500 + (uint32_t)(i * 37 % 1000);
    f->cfg.replicas = 1;
    outcome a;
    both(f, r, N, 0, "long cohorts", 0.5, &a);
    if (a.cohort_steps < 3 * 4096)
        fail_msg("only %llu cohort steps", (unsigned long long)a.cohort_steps);
    free(a.c.r);
    free(r);
}

/* What a fork of every container predicts, to compare: the requests it holds as they stand at
 * each of its returns from gsim_advance. */
typedef struct fork_view {
    uint32_t n;
    gmg_req q[4096];
    uint64_t steps, cohort_steps;
} fork_view;

/* Replay r to t0 with cohorts or without, then take three forks of every container in turn
 * (each in the memory the one before left, its cohort tables included), an offloaded prefill
 * in the last (a request back home joins its container's running list mid-run), each advanced
 * in slices of 0.3 s to t0 + 3 s, into v[0..3) (the roster's requests at every return) and
 * their finished requests into c[0..3). */
static void forks(fx *f, const trace_rec *r, size_t n, int no_steady, ss_time t0,
                  fork_view *v, tu_collect *c)
{
    tu_recs src = {r, n, 0};
    gsim *g = started(f, &src, no_steady, NULL);
    ss_errbuf eb;
    if (gsim_advance(g, t0, &eb))
        fail_msg("replay: %s", eb.msg);
    const gmg *G = gsim_graph(g);
    gmg_id all[8];
    for (uint32_t i = 0; i < G->n_ctrs && i < 8; i++)
        all[i] = i;
    for (int k = 0; k < 3; k++) {
        gsim *w = NULL;
        c[k] = tu_collect_new(n);
        if (gsim_fork(g, all, G->n_ctrs, tu_collect_req, &c[k], &w, &eb))
            fail_msg("gsim_fork: %s", eb.msg);
        if (k == 2) { /* the last fresh request waiting at container 0, to container 1 */
            gmg_id last = GMG_NONE;
            for (gmg_id q = G->ctrs[0].waiting.head; q != GMG_NONE; q = G->reqs[q].next)
                if (!G->reqs[q].computed && !G->reqs[q].preemptions)
                    last = q;
            assert_true(last != GMG_NONE);
            if (gsim_offload(w, last, 1, 0, &eb))
                fail_msg("gsim_offload: %s", eb.msg);
        }
        v[k].n = 0;
        for (ss_time t = t0 + ss_time_from_s(0.3); t <= t0 + ss_time_from_s(3);
             t += ss_time_from_s(0.3)) {
            if (gsim_advance(w, t, &eb))
                fail_msg("fork: %s", eb.msg);
            const gmg *W = gsim_graph(w);
            uint32_t m;
            const gmg_id *roster = gmg_req_roster(W, &m);
            for (uint32_t i = 0; i < m && v[k].n < 4096; i++)
                v[k].q[v[k].n++] = W->reqs[roster ? roster[i] : i];
        }
        v[k].steps = gsim_iterations(w);
        v[k].cohort_steps = gsim_cohort_steps(w);
        gsim_destroy(&w);
    }
    gsim_destroy(&g);
}

/* What-if forks keep decode cohorts too: three forks of a loaded replay taken with cohorts
 * predict, request by request and at every return from gsim_advance, what the same forks
 * predict without them, and cohorts took most of their steps. */
static void test_forks(void **state)
{
    fx *f = *state;
    enum { N = 2500 };
    trace_rec *r = tu_synth_conv(N, 14, 9, 2);
    assert_int_equal(ss_params_set(f->params, "token_budget", "512"), 0);
    f->cfg.ops = "slice"; /* the offload mechanism; its ticks do not run in a fork */
    static fork_view a[3], b[3];
    tu_collect ca[3], cb[3];
    forks(f, r, N, 0, ss_time_from_s(60), a, ca);
    forks(f, r, N, 1, ss_time_from_s(60), b, cb);
    for (int k = 0; k < 3; k++) {
        if (a[k].n != b[k].n || a[k].n < 200)
            fail_msg("fork %d: %u and %u requests seen", k, a[k].n, b[k].n);
        for (uint32_t i = 0; i < a[k].n; i++) {
            const gmg_req *x = &a[k].q[i], *y = &b[k].q[i];
#define F(field)                                                                               \
    if (x->field != y->field)                                                                  \
        fail_msg("fork %d, view %u: " #field " %lld with cohorts, %lld without", k, i,        \
                 (long long)x->field, (long long)y->field);
            F(state) F(container) F(computed) F(generated) F(blocks) F(first_token)
            F(last_token) F(finish) F(tbt_sum) F(tbt_max) F(tbt_over) F(win_tokens)
            F(preemptions)
#undef F
        }
        if (ca[k].n_calls != cb[k].n_calls || !ca[k].n_calls)
            fail_msg("fork %d: %zu and %zu requests finished", k, ca[k].n_calls, cb[k].n_calls);
        for (size_t i = 0; i < N; i++)
            if (ca[k].r[i].finish != cb[k].r[i].finish || ca[k].r[i].sla != cb[k].r[i].sla ||
                ca[k].r[i].tbt_max != cb[k].r[i].tbt_max)
                fail_msg("fork %d: request %zu ends differently", k, i);
        if (b[k].cohort_steps || (double)a[k].cohort_steps < 0.5 * (double)a[k].steps)
            fail_msg("fork %d: cohorts took %llu of %llu steps (%llu without)", k,
                     (unsigned long long)a[k].cohort_steps, (unsigned long long)a[k].steps,
                     (unsigned long long)b[k].cohort_steps);
        printf("# fork %d: %u request views, %zu finished, cohorts took %llu of %llu steps\n",
               k, a[k].n, ca[k].n_calls, (unsigned long long)a[k].cohort_steps,
               (unsigned long long)a[k].steps);
        free(ca[k].r);
        free(cb[k].r);
    }
    free(r);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, tu_sim_fixture_teardown)
    const struct CMUnitTest tests[] = {
        T(test_prefix_cache_under_pressure),
        T(test_tbt_bounds_and_tiers),
        T(test_advance_in_slices),
        T(test_long_cohorts),
        T(test_forks),
    };
#undef T
    return cmocka_run_group_tests_name("cohort", tests, NULL, NULL);
}
