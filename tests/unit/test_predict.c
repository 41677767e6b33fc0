/* What a what-if knows: the output-length predictors (policy/predict.c) on known finished
 * lengths (mean, quantile, conditional on the tokens made, the prior, the cap), the noisy
 * one's determinism and spread, their parsing; and in the simulator, that the replay keeps
 * each request's prediction (again when it outlives it), that a fork runs the predicted
 * lengths while the replay runs the true ones, and that a fork's costs carry the cost error. */
#include "support/test_util.h"

#include "catalog/catalog.h"
#include "core/ss_hist.h"
#include "core/ss_rng.h"
#include "gsim/gsim.h"
#include "policy/policy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const pol_predictor MEAN = {POL_PRED_MEAN, 0};

static ss_hist hist_of(const uint32_t *v, size_t n)
{
    ss_hist h = {0};
    for (size_t i = 0; i < n; i++)
        assert_int_equal(ss_hist_add(&h, v[i]), 0);
    return h;
}

static uint32_t pred(const pol_predictor *p, const ss_hist *h, uint32_t generated, uint32_t cap)
{
    return pol_predict_output(p, h, NULL, generated, 1000, cap, 1, 7);
}

/* ---- the running statistics ---------------------------------------------------------- */

static void test_mean_of_finished_lengths(void **state)
{
    (void)state;
    const uint32_t v[] = {40, 10, 30, 20};
    ss_hist h = hist_of(v, 4);
    assert_int_equal(pred(&MEAN, &h, 0, 500), 25);  /* (10 + 20 + 30 + 40) / 4 */
    assert_int_equal(pred(&MEAN, &h, 9, 500), 25);  /* every one is above 9 */
    assert_int_equal(pred(&MEAN, &h, 20, 500), 35); /* it has 20: the mean of 30 and 40 */
    assert_int_equal(pred(&MEAN, &h, 35, 500), 40); /* only 40 is longer */
    assert_int_equal(pred(&MEAN, &h, 40, 500), 80); /* it outlived them all: twice its tokens */
    assert_int_equal(pred(&MEAN, &h, 0, 15), 15);   /* never beyond what it can make */
    assert_int_equal(pred(&MEAN, &h, 14, 15), 15);
    ss_hist_fini(&h);
    ss_hist none = {0};
    assert_int_equal(pred(&MEAN, &none, 0, 500), 500); /* the prior: the longest it can run */
    assert_int_equal(pred(&MEAN, &none, 100, 500), 500);
}

/* Above the histogram's exact range the unconditional mean is still exact, and a conditional
 * one lies above the tokens made. */
static void test_mean_of_long_lengths(void **state)
{
    (void)state;
    const uint32_t v[] = {3001, 5000, 7000};
    ss_hist h = hist_of(v, 3);
    assert_int_equal(pred(&MEAN, &h, 0, 100000), 5000);
    uint32_t p = pred(&MEAN, &h, 4000, 100000);
    assert_true(p > 5900 && p < 6100); /* the mean of 5000 and 7000, to a bucket */
    p = pred(&MEAN, &h, 6999, 100000);
    assert_true(p >= 7000);
    ss_hist_fini(&h);
}

static void test_quantiles_of_finished_lengths(void **state)
{
    (void)state;
    const uint32_t v[] = {30, 10, 40, 20};
    ss_hist h = hist_of(v, 4);
    pol_predictor q50 = {POL_PRED_QUANTILE, 0.5}, q75 = {POL_PRED_QUANTILE, 0.75},
                  q90 = {POL_PRED_QUANTILE, 0.9}, q10 = {POL_PRED_QUANTILE, 0.1};
    assert_int_equal(pred(&q50, &h, 0, 500), 20); /* the 2nd of 4 */
    assert_int_equal(pred(&q75, &h, 0, 500), 30); /* the 3rd */
    assert_int_equal(pred(&q90, &h, 0, 500), 40); /* the 4th: ceil(3.6) */
    assert_int_equal(pred(&q10, &h, 0, 500), 10);
    assert_int_equal(pred(&q50, &h, 20, 500), 30); /* of 30 and 40 */
    assert_int_equal(pred(&q50, &h, 30, 500), 40);
    assert_int_equal(pred(&q50, &h, 40, 500), 80);
    /* counts matter: nine 10s and one 1000 */
    ss_hist w = {0};
    assert_int_equal(ss_hist_add_n(&w, 10, 9), 0);
    assert_int_equal(ss_hist_add(&w, 1000), 0);
    assert_int_equal(pred(&q90, &w, 0, 5000), 10);
    assert_int_equal(pred(&q90, &w, 10, 5000), 1000);
    assert_int_equal(pred(&MEAN, &w, 0, 5000), 109);
    ss_hist_fini(&w);
    ss_hist_fini(&h);
}

static void test_hist_above(void **state)
{
    (void)state;
    const uint32_t v[] = {5, 5, 6, 9, 2500};
    ss_hist h = hist_of(v, 5);
    uint64_t n = 99;
    double mean = -1;
    int64_t q = -1;
    ss_hist_above(&h, 5, 0.5, &n, &mean, &q);
    assert_int_equal(n, 3);
    assert_int_equal(q, 9);
    assert_true(mean > (6 + 9 + 2499) / 3.0 && mean < (6 + 9 + 2501) / 3.0);
    ss_hist_above(&h, 4, 1, &n, &mean, &q);
    assert_int_equal(n, 5);
    assert_true(fabs(mean - 505) < 1e-9); /* below every sample: the exact mean */
    assert_int_equal(q, 2500);
    mean = -1, q = -1;
    ss_hist_above(&h, 2500, 0.5, &n, &mean, &q);
    assert_int_equal(n, 0);
    assert_true(mean == -1 && q == -1); /* untouched */
    ss_hist_fini(&h);
}

/* ---- the index: ss_hist_above to the bit ---------------------------------------------- */

/* ss_hist_index_above against ss_hist_above at v and q: the same count, and the same mean and
 * quantile to the bit, or both left untouched. */
static void check_above(const ss_hist_index *x, const ss_hist *h, int64_t v, double q)
{
    uint64_t n_ref = 7, n_ix = 9;
    double mean_ref = -1, mean_ix = -1;
    int64_t q_ref = -1, q_ix = -1;
    ss_hist_above(h, v, q, &n_ref, &mean_ref, &q_ref);
    ss_hist_index_above(x, h, v, q, &n_ix, &mean_ix, &q_ix);
    if (n_ref != n_ix || memcmp(&mean_ref, &mean_ix, sizeof mean_ref) || q_ref != q_ix)
        fail_msg("v %lld q %g over %llu samples in [%lld, %lld]: the scan gives %llu, %.17g, "
                 "%lld; the index %llu, %.17g, %lld", (long long)v, q,
                 (unsigned long long)h->n, (long long)h->min, (long long)h->max,
                 (unsigned long long)n_ref, mean_ref, (long long)q_ref,
                 (unsigned long long)n_ix, mean_ix, (long long)q_ix);
    double mean_only = -1;
    ss_hist_index_above(x, h, v, q, &n_ix, &mean_only, NULL); /* either output may be NULL */
    assert_memory_equal(&mean_only, &mean_ix, sizeof mean_ix);
    ss_hist_index_above(x, h, v, q, &n_ix, NULL, &q_ix);
    assert_int_equal(q_ix, q_ref);
}

/* A sample of one of several shapes: exact-range lengths, values around and far above 2048
 * (buckets wider than 1), heavy tails, repeats, and now and then a negative value (0) or one so
 * large that the sums leave the doubles' exact range (the index then scans). */
static int64_t random_sample(ss_rng *r, int shape)
{
    switch (shape) {
    case 0: return (int64_t)ss_rng_below(r, 60);
    case 1: return (int64_t)ss_rng_below(r, 5000);
    case 2: return (int64_t)(ss_rng_exp(r, 300) * (1 + ss_rng_below(r, 3)));
    case 3: return (int64_t)ss_rng_below(r, 4) * 1000 + 2047;
    case 4: return ss_rng_below(r, 50) ? (int64_t)ss_rng_below(r, 2000000) : -5;
    default: return ss_rng_below(r, 4) ? (int64_t)ss_rng_below(r, 3000)
                                       : ((int64_t)1 << 50) + (int64_t)ss_rng_below(r, 1000);
    }
}

/* The values worth asking about: around 0, the extremes and a few samples, and random ones. */
static void check_many(ss_rng *r, const ss_hist_index *x, const ss_hist *h, const int64_t *seen,
                       size_t n_seen)
{
    static const double qs[] = {0.01, 0.1, 0.5, 0.9, 0.99, 1};
    int64_t vs[24] = {-3, -1, 0, 1, 2047, 2048, h->min - 1, h->min, h->min + 1, h->max - 1,
                      h->max, h->max + 1};
    size_t nv = 12;
    while (nv < 18)
        vs[nv++] = seen[ss_rng_below(r, n_seen)] + (int64_t)ss_rng_below(r, 3) - 1;
    while (nv < 24)
        vs[nv++] = (int64_t)ss_rng_below(r, (uint64_t)h->max + 2);
    for (size_t i = 0; i < nv; i++) {
        check_above(x, h, vs[i], qs[ss_rng_below(r, 6)]);
        check_above(x, h, vs[i], ss_rng_uniform(r));
    }
}

static void test_index_matches_scan(void **state)
{
    (void)state;
    ss_rng r;
    ss_rng_seed(&r, 2024, 1);
    int64_t seen[400];
    for (int trial = 0; trial < 120; trial++) {
        ss_hist h = {0};
        ss_hist_index x = {0};
        int shape = trial % 6;
        size_t n = 1 + ss_rng_below(&r, 400);
        check_above(&x, &h, 0, 0.5); /* empty */
        for (size_t i = 0; i < n; i++) {
            seen[i] = random_sample(&r, shape);
            assert_int_equal(ss_hist_index_add(&x, &h, seen[i]), 0);
            if (i < 8 || ss_rng_below(&r, 25) == 0 || i + 1 == n)
                check_many(&r, &x, &h, seen, i + 1);
        }
        ss_hist_index_fini(&x);
        ss_hist_fini(&h);
    }
}

/* The predictor gives the same lengths with the index as with the scan. */
static void test_predict_with_index(void **state)
{
    (void)state;
    ss_rng r;
    ss_rng_seed(&r, 7, 2);
    ss_hist h = {0};
    ss_hist_index x = {0};
    pol_predictor kinds[] = {MEAN, {POL_PRED_QUANTILE, 0.5}, {POL_PRED_QUANTILE, 0.9}};
    for (int i = 0; i < 3000; i++) {
        assert_int_equal(ss_hist_index_add(&x, &h, (int64_t)ss_rng_exp(&r, 200)), 0);
        uint32_t generated = (uint32_t)ss_rng_below(&r, 1500);
        for (int k = 0; k < 3; k++)
            assert_int_equal(pol_predict_output(&kinds[k], &h, &x, generated, 0, 4000, 1, 7),
                             pol_predict_output(&kinds[k], &h, NULL, generated, 0, 4000, 1, 7));
    }
    ss_hist_index_fini(&x);
    ss_hist_fini(&h);
}

/* ---- the noisy predictor and the oracle ------------------------------------------------ */

static void test_noisy_is_deterministic_and_spread(void **state)
{
    (void)state;
    ss_hist none = {0};
    pol_predictor p = {POL_PRED_NOISY, 0.5};
    const uint32_t out = 10000;
    double sum = 0, sum2 = 0;
    uint32_t differ_seed = 0;
    const uint32_t n = 20000;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t a = pol_predict_output(&p, &none, NULL, 0, out, 1u << 30, 42, (uint64_t)k);
        assert_int_equal(pol_predict_output(&p, &none, NULL, 0, out, 1u << 30, 42, (uint64_t)k),
                         a);
        differ_seed +=
            pol_predict_output(&p, &none, NULL, 0, out, 1u << 30, 43, (uint64_t)k) != a;
        assert_true(a >= 1);
        double x = (double)a / out;
        sum += x;
        sum2 += x * x;
    }
    double mean = sum / n, cv = sqrt(sum2 / n - mean * mean) / mean;
    printf("# noisy:0.5 over %u requests: factor mean %.4f, CV %.4f\n", n, mean, cv);
    assert_true(fabs(mean - 1) < 0.02);
    assert_true(fabs(cv - 0.5) < 0.03);
    assert_true(differ_seed > n * 9 / 10);
    /* CV 0 is the oracle; a request with tokens made gets its remaining length noised */
    pol_predictor exact = {POL_PRED_NOISY, 0}, oracle = {POL_PRED_ORACLE, 0};
    assert_int_equal(pol_predict_output(&exact, &none, NULL, 0, 123, 1000, 42, 5), 123);
    assert_int_equal(pol_predict_output(&oracle, &none, NULL, 0, 123, 1000, 42, 5), 123);
    for (uint64_t k = 0; k < 100; k++) {
        uint32_t a = pol_predict_output(&p, &none, NULL, 50, 100, 1000, 42, k);
        assert_true(a > 50 && a <= 1000);
    }
}

/* ---- parsing ------------------------------------------------------------------------ */

static void test_parse(void **state)
{
    (void)state;
    pol_predictor p = {-1, -1};
    ss_errbuf eb;
    char name[48];
    struct { const char *s; int kind; double arg; const char *name; } good[] = {
        {"oracle", POL_PRED_ORACLE, 0, "oracle"},
        {"mean", POL_PRED_MEAN, 0, "mean"},
        {"quantile:0.9", POL_PRED_QUANTILE, 0.9, "quantile:0.9"},
        {"quantile:0.05", POL_PRED_QUANTILE, 0.05, "quantile:0.05"},
        {"noisy:0.3", POL_PRED_NOISY, 0.3, "noisy:0.3"},
        {"noisy:0", POL_PRED_NOISY, 0, "noisy:0"},
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        assert_int_equal(pol_predictor_parse(&p, good[i].s, "k", &eb), 0);
        assert_int_equal(p.kind, good[i].kind);
        assert_true(p.arg == good[i].arg);
        pol_predictor_name(&p, name, sizeof name);
        assert_string_equal(name, good[i].name);
    }
    const char *bad[] = {"", "median", "Mean", "mean:1", "quantile", "quantile:", "quantile:0",
                         "quantile:1", "quantile:1.5", "quantile:x", "quantile:0.5x", "noisy:",
                         "noisy:-0.1", "noisy:11", "noisy:abc", "oracle ", NULL};
    for (size_t i = 0; bad[i]; i++) {
        pol_predictor keep = {POL_PRED_NOISY, 0.25};
        p = keep;
        assert_int_equal(pol_predictor_parse(&p, bad[i], "policy.slice_output_predictor", &eb),
                         SS_EINVAL);
        assert_non_null(strstr(eb.msg, "policy.slice_output_predictor"));
        assert_null(strchr(eb.msg, '\n'));
        assert_true(p.kind == keep.kind && p.arg == keep.arg);
    }
}

/* ---- in the simulator ------------------------------------------------------------------ */

/* The slot of trace id `id` in g's graph (GMG_NONE when it is not in flight). */
static gmg_id slot_of(const gsim *g, uint64_t id)
{
    const gmg *G = gsim_graph(g);
    for (uint32_t i = 0; i < G->n_slots; i++)
        if (G->reqs[i].state != GMG_REQ_FREE && G->reqs[i].trace_id == id)
            return i;
    return GMG_NONE;
}

typedef struct fork_run {
    metrics_req replay_x; /* request X in the replay */
    metrics_req fork_x;   /* and in the fork */
    int fork_x_done;      /* X ended in the fork by the horizon */
    uint32_t pred_x;      /* X's prediction when forked */
} fork_run;

/* Four requests of 200 output tokens finish, then X (id 4, 10 tokens) arrives at 5 s. The
 * replay runs to 5.05 s, when X has a few tokens, forks its container and runs the fork to a
 * 500 ms horizon and then to the end, and the replay to the end. */
static void fork_case(tu_sim *f, pol_predictor p, double cost_error, fork_run *o)
{
    trace_rec r[5];
    for (int i = 0; i < 4; i++)
        r[i] = tu_rec((uint64_t)i, 0, 100, 200, 0);
    r[4] = tu_rec(4, 5, 100, 10, 0);
    f->cfg.whatif_pred = p;
    f->cfg.whatif_cost_error = cost_error;
    tu_collect rc = tu_collect_new(5), wc = tu_collect_new(5);
    tu_recs src = {r, 5, 0};
    gsim *g = NULL, *w = NULL;
    ss_errbuf eb;
    ss_time at = ss_time_from_s(5.05);
    assert_int_equal(gsim_create(&g, &f->cfg, &eb), 0);
    assert_int_equal(gsim_start(g, tu_recs_next, &src, tu_collect_req, &rc, &eb), 0);
    assert_int_equal(gsim_advance(g, at, &eb), 0);
    gmg_id x = slot_of(g, 4);
    assert_true(x != GMG_NONE);
    const gmg_req *q = &gsim_graph(g)->reqs[x];
    assert_true(q->generated >= 1 && q->generated < 10);
    o->pred_x = q->output_pred;
    gmg_id c0 = 0;
    assert_int_equal(gsim_fork(g, &c0, 1, tu_collect_req, &wc, &w, &eb), 0);
    assert_int_equal(gsim_advance(w, at + ss_time_from_s(0.5), &eb), 0);
    o->fork_x_done = wc.r[4].finish > 0;
    assert_int_equal(gsim_advance(w, SS_TIME_MAX, &eb), 0);
    assert_int_equal(gsim_advance(g, SS_TIME_MAX, &eb), 0);
    assert_int_equal(gsim_finish(g), 0);
    assert_int_equal(rc.n_calls, 5);
    o->replay_x = rc.r[4];
    o->fork_x = wc.r[4];
    gsim_destroy(&w);
    gsim_destroy(&g);
    free(rc.r);
    free(wc.r);
}

/* The oracle's fork knows X ends within the horizon, exactly when it does; the mean's gives X
 * the tenant's mean, 200 tokens, and has it run past the horizon. The replay is the same. */
static void test_fork_runs_predicted_lengths(void **state)
{
    tu_sim *f = *state;
    fork_run oracle, mean;
    fork_case(f, (pol_predictor){POL_PRED_ORACLE, 0}, 0, &oracle);
    fork_case(f, MEAN, 0, &mean);
    printf("# X ends at %.3f s; the oracle's fork says %.3f s, the mean's %.3f s\n",
           oracle.replay_x.finish / 1e9, oracle.fork_x.finish / 1e9, mean.fork_x.finish / 1e9);
    assert_int_equal(oracle.pred_x, 0);
    assert_int_equal(mean.pred_x, 200);
    assert_true(oracle.fork_x_done);
    assert_int_equal(oracle.fork_x.finish, oracle.replay_x.finish);
    assert_int_equal(oracle.fork_x.generated, 10);
    assert_false(mean.fork_x_done);
    assert_int_equal(mean.fork_x.generated, 200);
    assert_true(mean.fork_x.finish > oracle.fork_x.finish + ss_time_from_s(0.5));
    /* the replay runs the true lengths whatever the what-ifs predict */
    assert_int_equal(mean.replay_x.generated, 10);
    assert_int_equal(mean.replay_x.finish, oracle.replay_x.finish);
    assert_int_equal(mean.replay_x.first_token, oracle.replay_x.first_token);
}

/* A fork's iterations take the cost model's times 1 + the cost error: X, the only request in
 * the fork, ends later by that share of its remaining decode steps. */
static void test_fork_cost_error(void **state)
{
    tu_sim *f = *state;
    fork_run exact, slow;
    const pol_predictor oracle = {POL_PRED_ORACLE, 0};
    fork_case(f, oracle, 0, &exact);
    fork_case(f, oracle, 0.5, &slow);
    ss_time at = ss_time_from_s(5.05);
    ss_time rest = exact.fork_x.finish - at, rest_slow = slow.fork_x.finish - at;
    printf("# X's rest in the fork: %.3f ms exact, %.3f ms with cost error 0.5\n", rest / 1e6,
           rest_slow / 1e6);
    assert_int_equal(slow.replay_x.finish, exact.replay_x.finish); /* the replay is exact */
    assert_int_equal(exact.fork_x.finish, exact.replay_x.finish);
    /* the iteration under way when forked keeps its end; the ones after are 1.5 times longer */
    assert_true((double)rest_slow > 1.3 * (double)rest);
    assert_true((double)rest_slow < 1.5 * (double)rest + 1e6);
}

/* Requests of 10 tokens finish first; X (100 tokens) is predicted 10, and each time it outlives
 * its prediction it gets twice its tokens (nothing finished was longer), with its container's
 * epoch bumped: 10, 20, 40, 80, 160. */
static void test_replay_repredicts_what_outlives_its_prediction(void **state)
{
    tu_sim *f = *state;
    trace_rec r[5];
    for (int i = 0; i < 4; i++)
        r[i] = tu_rec((uint64_t)i, 0, 100, 10, 0);
    r[4] = tu_rec(4, 2, 100, 100, 0);
    f->cfg.whatif_pred = MEAN;
    tu_collect rc = tu_collect_new(5);
    tu_recs src = {r, 5, 0};
    gsim *g = NULL;
    ss_errbuf eb;
    assert_int_equal(gsim_create(&g, &f->cfg, &eb), 0);
    assert_int_equal(gsim_start(g, tu_recs_next, &src, tu_collect_req, &rc, &eb), 0);
    assert_int_equal(gsim_advance(g, ss_time_from_s(2), &eb), 0);
    assert_int_equal(rc.n_calls, 4);
    gmg_id x = slot_of(g, 4);
    assert_true(x != GMG_NONE);
    uint64_t epoch0 = gsim_ctr_epoch(g, 0);
    uint32_t seen[8], n_seen = 0;
    for (ss_time t = ss_time_from_s(2); rc.n_calls < 5; t += ss_time_from_s(0.001)) {
        const gmg_req *q = &gsim_graph(g)->reqs[x];
        assert_true(q->output_pred > q->generated);
        if (!n_seen || seen[n_seen - 1] != q->output_pred) {
            assert_true(n_seen < 8);
            seen[n_seen++] = q->output_pred;
        }
        if (q->generated == 50)
            assert_int_equal(gsim_ctr_epoch(g, 0) - epoch0, 3); /* at 10, 20 and 40 tokens */
        assert_int_equal(gsim_advance(g, t, &eb), 0);
    }
    assert_int_equal(n_seen, 5);
    const uint32_t want[] = {10, 20, 40, 80, 160};
    for (uint32_t i = 0; i < 5; i++)
        assert_int_equal(seen[i], want[i]);
    assert_int_equal(rc.r[4].generated, 100);
    assert_int_equal(gsim_finish(g), 0);
    gsim_destroy(&g);
    free(rc.r);
}

/* The replay's record of finished lengths is what the predictor reads: the mean and quantile
 * keep it, the oracle does not. */
static void test_replay_records_finished_lengths(void **state)
{
    tu_sim *f = *state;
    trace_rec r[4] = {tu_rec(0, 0, 100, 10, 0), tu_rec(1, 0, 100, 30, 0),
                      tu_rec(2, 0, 100, 50, 0), tu_rec(3, 0, 16300, 5000, 0)};
    for (int k = 0; k < 2; k++) {
        f->cfg.whatif_pred = k ? (pol_predictor){POL_PRED_ORACLE, 0} : MEAN;
        gsim *g = tu_sim_run(f, r, 4, NULL);
        const ss_hist *h = gsim_finished_lengths(g, 0);
        assert_non_null(h);
        assert_null(gsim_finished_lengths(g, 1));
        if (k) {
            assert_int_equal(h->n, 0);
        } else { /* the last is capped by max_model_len: 16384 - 16300 = 84 tokens */
            assert_int_equal(h->n, 4);
            assert_true(fabs(ss_hist_mean(h) - (10 + 30 + 50 + 84) / 4.0) < 1e-9);
        }
        gsim_destroy(&g);
    }
}

#define T(fn) cmocka_unit_test(fn)
#define TS(fn) cmocka_unit_test_setup_teardown(fn, tu_sim_fixture_setup, tu_sim_fixture_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_mean_of_finished_lengths),
        T(test_mean_of_long_lengths),
        T(test_quantiles_of_finished_lengths),
        T(test_hist_above),
        T(test_index_matches_scan),
        T(test_predict_with_index),
        T(test_noisy_is_deterministic_and_spread),
        T(test_parse),
        TS(test_fork_runs_predicted_lengths),
        TS(test_fork_cost_error),
        TS(test_replay_repredicts_what_outlives_its_prediction),
        TS(test_replay_records_finished_lengths),
    };
    return cmocka_run_group_tests_name("predict", tests, NULL, NULL);
}
