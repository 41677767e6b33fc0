/* The capacity search (runner/capacity.h) on synthetic SLA-miss functions of the load with
 * known thresholds: bisection within the tolerance from above and below load 1, a function
 * that fails at every load, one that passes at every load, a non-monotone blip, a probe that
 * does not span its window, the probe cap, probe errors and bad options; and
 * runner_scale_load, which stretches a synthetic tenant's generator by the load. */
#include "support/test_util.h"

#include "core/ss_err.h"
#include "runner/capacity.h"

#include <math.h>
#include <string.h>

typedef struct fn_state {
    double threshold;      /* the miss rate crosses the bound here */
    double blip_lo, blip_hi; /* loads in [blip_lo, blip_hi) miss everything (0, 0: none) */
    double short_from;     /* loads from here do not span the window (0: never) */
    int calls, fail_call;  /* fail_call: the call that returns SS_EIO (0: none) */
    int stop;              /* stop a failing probe the search does not want in full, as a
                              replay would: the least it may report (see stop_like) */
    int n_stopped;
} fn_state;

/* A monotone miss rate: 0.05 x load / threshold, so it equals 0.05 at the threshold. */
static int miss_fn(void *ud, runner_capacity_probe *p, ss_errbuf *eb)
{
    fn_state *s = ud;
    if (++s->calls == s->fail_call)
        return ss_err(eb, SS_EIO, "probe %d failed", s->calls);
    p->sla_miss = 0.05 * p->load / s->threshold;
    if (p->load >= s->blip_lo && p->load < s->blip_hi)
        p->sla_miss = 1;
    p->goodput_tok_per_s = 1000 * p->load;
    p->spans = !(s->short_from > 0 && p->load >= s->short_from);
    /* stopped once certain to fail on its SLA: a miss just above the bound, no goodput */
    if (s->stop && !p->full && p->sla_miss > 0.05) {
        p->sla_miss = nextafter(0.05, 1);
        p->goodput_tok_per_s = 0;
        p->stopped = 1;
        s->n_stopped++;
    }
    return SS_OK;
}

static runner_capacity_search_opts opts(void)
{
    return (runner_capacity_search_opts){.sla_miss = 0.05, .tol = 0.02, .max_probes = 30,
                                         .min_load = 1.0 / 64, .max_load = 64};
}

static void check_found(double threshold)
{
    runner_capacity_search_opts o = opts();
    fn_state s = {.threshold = threshold};
    runner_capacity_result r;
    ss_errbuf eb = {""};
    assert_int_equal(runner_capacity_search(&o, miss_fn, &s, &r, &eb), SS_OK);
    assert_int_equal(r.status, RUNNER_CAP_FOUND);
    assert_true(r.converged);
    assert_true(r.capacity <= threshold);
    assert_true(r.capacity >= threshold * (1 - o.tol));
    assert_true(r.hi > threshold && r.hi - r.lo <= o.tol * r.lo);
    assert_int_equal(r.n_probes, s.calls);
    assert_true(r.probe[0].load == 1);
    assert_true(r.i_best >= 0 && r.probe[r.i_best].load == r.capacity);
    assert_true(r.probe[r.i_best].pass);
    assert_true(r.probe[r.i_best].goodput_tok_per_s == 1000 * r.capacity);
    assert_string_equal(runner_capacity_status_name(r.status), "found");
}

static void test_monotone(void **state)
{
    (void)state;
    check_found(1.37);  /* doubling up: 1 passes, 2 fails */
    check_found(5.3);   /* 1, 2, 4 pass, 8 fails */
    check_found(0.3);   /* halving down: 1, 0.5 fail, 0.25 passes */
    check_found(1.0);   /* exactly at load 1 (0.05 <= 0.05 passes) */
}

static void test_ends(void **state)
{
    (void)state;
    runner_capacity_search_opts o = opts();
    runner_capacity_result r;
    ss_errbuf eb = {""};
    fn_state low = {.threshold = 1e-3}; /* fails at every load down to 1/64 */
    assert_int_equal(runner_capacity_search(&o, miss_fn, &low, &r, &eb), SS_OK);
    assert_int_equal(r.status, RUNNER_CAP_BELOW);
    assert_true(r.capacity == 0 && r.lo == 0 && r.i_best == -1 && !r.converged);
    assert_true(r.hi == 1.0 / 64);
    assert_int_equal(r.n_probes, 7); /* 1, 1/2, ..., 1/64 */
    fn_state high = {.threshold = 1e3}; /* passes up to 64 */
    assert_int_equal(runner_capacity_search(&o, miss_fn, &high, &r, &eb), SS_OK);
    assert_int_equal(r.status, RUNNER_CAP_ABOVE);
    assert_true(r.capacity == 64 && r.hi == 0 && !r.converged);
    assert_int_equal(r.n_probes, 7); /* 1, 2, ..., 64 */
    assert_string_equal(runner_capacity_status_name(r.status), "above");
}

static void test_blip_and_span(void **state)
{
    (void)state;
    runner_capacity_search_opts o = opts();
    runner_capacity_result r;
    ss_errbuf eb = {""};
    /* True threshold 3, but loads in [1.4, 1.6) miss everything: the search ends with a
     * passing load and a failing one above it, without crashing. */
    fn_state blip = {.threshold = 3, .blip_lo = 1.4, .blip_hi = 1.6};
    assert_int_equal(runner_capacity_search(&o, miss_fn, &blip, &r, &eb), SS_OK);
    assert_int_equal(r.status, RUNNER_CAP_FOUND);
    assert_true(r.capacity > 0 && r.capacity < r.hi && r.capacity <= 3);
    assert_true(r.probe[r.i_best].pass);
    /* A load whose traffic does not span the window fails whatever its miss rate. */
    fn_state span = {.threshold = 10, .short_from = 2.5};
    assert_int_equal(runner_capacity_search(&o, miss_fn, &span, &r, &eb), SS_OK);
    assert_int_equal(r.status, RUNNER_CAP_FOUND);
    assert_true(r.capacity < 2.5 && r.capacity >= 2.5 * (1 - o.tol));
    /* ... and the capacity it ends at is a lower bound: the load above met the bound */
    assert_true(r.censored);
    /* a threshold below where the traffic stops: the SLA ends the search, not the trace */
    fn_state sla = {.threshold = 2, .short_from = 2.5};
    assert_int_equal(runner_capacity_search(&o, miss_fn, &sla, &r, &eb), SS_OK);
    assert_true(r.status == RUNNER_CAP_FOUND && r.capacity <= 2 && !r.censored);
}

static void test_cap_and_errors(void **state)
{
    (void)state;
    runner_capacity_search_opts o = opts();
    runner_capacity_result r;
    ss_errbuf eb = {""};
    o.max_probes = 4; /* 1, 2 (fail), 1.5, 1.25: not within 2 % */
    fn_state s = {.threshold = 1.37};
    assert_int_equal(runner_capacity_search(&o, miss_fn, &s, &r, &eb), SS_OK);
    assert_int_equal(r.n_probes, 4);
    assert_int_equal(r.status, RUNNER_CAP_FOUND);
    assert_false(r.converged);
    assert_true(r.lo == 1.25 && r.hi == 1.5);
    o.max_probes = 1;
    fn_state one = {.threshold = 1.37};
    assert_int_equal(runner_capacity_search(&o, miss_fn, &one, &r, &eb), SS_OK);
    assert_int_equal(r.status, RUNNER_CAP_ABOVE);
    assert_true(r.capacity == 1);
    o = opts();
    fn_state bad = {.threshold = 1.37, .fail_call = 3};
    assert_int_equal(runner_capacity_search(&o, miss_fn, &bad, &r, &eb), SS_EIO);
    assert_string_equal(eb.msg, "probe 3 failed");
    assert_int_equal(r.n_probes, 2);
    runner_capacity_search_opts wrong[] = {
        {.sla_miss = -0.1, .tol = 0.02, .max_probes = 12, .min_load = 0.1, .max_load = 10},
        {.sla_miss = 1.5, .tol = 0.02, .max_probes = 12, .min_load = 0.1, .max_load = 10},
        {.sla_miss = 0.1, .tol = 0, .max_probes = 12, .min_load = 0.1, .max_load = 10},
        {.sla_miss = 0.1, .tol = 0.02, .max_probes = 0, .min_load = 0.1, .max_load = 10},
        {.sla_miss = 0.1, .tol = 0.02, .max_probes = RUNNER_CAPACITY_MAX_PROBES + 1,
         .min_load = 0.1, .max_load = 10},
        {.sla_miss = 0.1, .tol = 0.02, .max_probes = 12, .min_load = 2, .max_load = 10},
        {.sla_miss = 0.1, .tol = 0.02, .max_probes = 12, .min_load = 0.1, .max_load = 0.5},
    };
    for (size_t i = 0; i < sizeof wrong / sizeof *wrong; i++)
        assert_int_equal(runner_capacity_search(&wrong[i], miss_fn, &s, &r, &eb), SS_EINVAL);
}

/* Probes that stop once certain to fail (with the least a stopped replay knows: a miss just
 * above the bound, no goodput) leave every search as it is in full: the same probes, passes,
 * bracket, status, capacity and flags, and the probe whose figures are shown (the one at
 * capacity, or the lowest load tried when none passed) is never a stopped one, so its figures
 * are the full ones. Over thresholds above and below load 1, every load failing or passing, a
 * blip, short traffic and probe caps; some probes do stop. */
static void test_stopped_probes(void **state)
{
    (void)state;
    static const fn_state cases[] = {
        {.threshold = 1.37}, {.threshold = 5.3}, {.threshold = 0.3}, {.threshold = 1.0},
        {.threshold = 1e-3}, {.threshold = 1e3}, {.threshold = 3, .blip_lo = 1.4, .blip_hi = 1.6},
        {.threshold = 10, .short_from = 2.5}, {.threshold = 2, .short_from = 2.5},
        {.threshold = 0.01}, {.threshold = 0.02},
    };
    int stopped = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int max_probes = 1; max_probes <= 12; max_probes += 1) {
            runner_capacity_search_opts o = opts();
            o.max_probes = max_probes;
            o.min_load = max_probes % 2 ? 1.0 / 64 : 0.1;
            fn_state full = cases[i], part = cases[i];
            part.stop = 1;
            runner_capacity_result a, b;
            ss_errbuf eb = {""};
            assert_int_equal(runner_capacity_search(&o, miss_fn, &full, &a, &eb), SS_OK);
            assert_int_equal(runner_capacity_search(&o, miss_fn, &part, &b, &eb), SS_OK);
            assert_int_equal(b.status, a.status);
            assert_true(b.capacity == a.capacity && b.lo == a.lo && b.hi == a.hi);
            assert_int_equal(b.converged, a.converged);
            assert_int_equal(b.censored, a.censored);
            assert_int_equal(b.i_best, a.i_best);
            assert_int_equal(b.n_probes, a.n_probes);
            for (int k = 0; k < a.n_probes; k++) {
                assert_true(b.probe[k].load == a.probe[k].load);
                assert_int_equal(b.probe[k].pass, a.probe[k].pass);
                assert_int_equal(b.probe[k].full, a.probe[k].full);
            }
            int shown = a.i_best >= 0 ? a.i_best : a.n_probes - 1; /* none passed: the last */
            if (a.i_best < 0) /* ... is the lowest load tried */
                for (int k = 0; k < a.n_probes; k++)
                    assert_true(a.probe[k].load >= a.probe[shown].load);
            assert_false(b.probe[shown].stopped);
            assert_memory_equal(&b.probe[shown], &a.probe[shown], sizeof a.probe[shown]);
            stopped += part.n_stopped;
        }
    assert_true(stopped > 100);
}

/* runner_scale_load: rate_scale times the load, and a synthetic generator's duration and
 * request count stretched by it, the other keys as they were; trace tenants only scaled. */
static void test_scale_load(void **state)
{
    (void)state;
    scn_scenario *sc = NULL;
    ss_errbuf eb = {""};
    assert_int_equal(scn_create(&sc), 0);
    assert_int_equal(scn_set(sc, "tenant.a.synthetic=rate=2 duration=600  arrival=gamma cv=2",
                             &eb), 0);
    assert_int_equal(scn_set(sc, "tenant.b.synthetic=rate=1 requests=25", &eb), 0);
    assert_int_equal(scn_set(sc, "tenant.c.trace=x.csv", &eb), 0);
    assert_int_equal(scn_set(sc, "tenant.c.rate_scale=2", &eb), 0);
    assert_int_equal(runner_scale_load(sc, 1.5, &eb), 0);
    scn_tenant *a = scn_tenant_find(sc, "a"), *b = scn_tenant_find(sc, "b"),
               *c = scn_tenant_find(sc, "c");
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_string_equal(a->synthetic, "rate=2 duration=900 arrival=gamma cv=2");
    assert_true(a->rate_scale == 1.5);
    assert_string_equal(b->synthetic, "rate=1 requests=38");
    assert_true(c->rate_scale == 3);
    assert_string_equal(c->synthetic, "");
    scn_destroy(&sc);
    tu_assert_no_leaks();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_monotone),
        cmocka_unit_test(test_ends),
        cmocka_unit_test(test_blip_and_span),
        cmocka_unit_test(test_cap_and_errors),
        cmocka_unit_test(test_scale_load),
        cmocka_unit_test(test_stopped_probes),
    };
    return cmocka_run_group_tests_name("capacity", tests, NULL, NULL);
}
