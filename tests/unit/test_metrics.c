/* Run metrics on their own: what a set of known requests sums to (counts, rates over the
 * window, means exactly, percentiles within the histograms' resolution, goodput and SLA
 * misses), that warm-up requests stay out, that gaps fold into the tenant's and tier's groups,
 * and the idle-slice buckets. */
#include "support/test_util.h"

#include "core/ss_alloc.h"
#include "core/ss_rng.h"
#include "metrics/metrics.h"

#include <math.h>
#include <string.h>

#define MS 1000000LL /* ns */

static metrics_req req(uint64_t id, uint16_t tenant, uint8_t tier, ss_time arrival_ms,
                       ss_time ttft_ms, ss_time e2e_ms, uint32_t out)
{
    metrics_req r = {.trace_id = id, .tenant = tenant, .tier = tier, .measured = 1,
                     .prompt = 100, .output_asked = out, .generated = out,
                     .arrival = arrival_ms * MS, .first_token = (arrival_ms + ttft_ms) * MS,
                     .finish = (arrival_ms + e2e_ms) * MS};
    return r;
}

/* Ten requests with TTFT 10, 20, ..., 100 ms: the mean is exact, the percentiles are within
 * the histogram's resolution (1,024 buckets per power of two), the window runs from
 * measure_from to the last completion, a request that broke its SLA does not count in
 * goodput, and a warm-up request counts nowhere. */
static void test_summary(void **state)
{
    (void)state;
    metrics m;
    assert_int_equal(metrics_init(&m, 2, 1000 * MS), 0);
    /* a warm-up request: counted as arrived, not measured */
    metrics_req w = req(99, 0, 0, 0, 5, 50, 10);
    w.measured = 0;
    metrics_add_req(&m, &w);
    for (int i = 1; i <= 10; i++) {
        metrics_req r = req((uint64_t)i, (uint16_t)(i % 2), (uint8_t)(i > 5), 1000 + 100 * i,
                            10 * i, 1000 + 10 * i, 11);
        if (i == 10)
            r.sla = METRICS_SLA_TTFT;
        metrics_add_req(&m, &r);
    }
    metrics_flush(&m);
    metrics_summary s;
    ss_time end = metrics_window_end(&m);
    assert_int_equal(end, (1000 + 1000 + 1000 + 100) * MS); /* request 10's finish */
    metrics_summarize(&m, end, &s);
    const metrics_group_summary *a = &s.all;
    assert_int_equal(a->requests, 10);
    assert_int_equal(a->completed, 10);
    assert_int_equal(a->sla_violations, 1);
    assert_true(fabs(s.window_s - 2.1) < 1e-12);
    assert_true(fabs(a->output_tokens_per_s - 110 / 2.1) < 1e-9);
    assert_true(fabs(a->goodput_tokens_per_s - 99 / 2.1) < 1e-9);
    assert_true(fabs(a->sla_violation_rate - 0.1) < 1e-12);
    assert_true(fabs(a->ttft_ms.mean - 55.0) < 1e-9);
    assert_true(fabs(a->ttft_ms.max - 100.0) < 0.1);
    assert_true(fabs(a->ttft_ms.p50 - 50.0) <= 50.0 / 1024 * 2);
    assert_true(fabs(a->e2e_ms.mean - 1055.0) < 1e-9);
    /* the groups: tenants by tenant index, tiers by tier */
    metrics_group_summary t1;
    metrics_summarize_group(&m.tenants[1], s.window_s, &t1);
    assert_int_equal(t1.completed, 5); /* the odd ones */
    metrics_group_summary hi;
    metrics_summarize_group(&m.tiers[1], s.window_s, &hi);
    assert_int_equal(hi.completed, 5);
    assert_true(fabs(hi.ttft_ms.mean - 80.0) < 1e-9); /* 60..100 */
    metrics_fini(&m);
    tu_assert_no_leaks();
}

/* Inter-token gaps fold into the overall, tenant and tier histograms, runs of equal gaps too. */
static void test_gaps(void **state)
{
    (void)state;
    metrics m;
    assert_int_equal(metrics_init(&m, 1, 0), 0);
    for (int i = 0; i < 30; i++)
        metrics_add_gap(&m, 0, 0, 10 * MS);
    metrics_add_gap(&m, 0, 2, 40 * MS);
    metrics_req r = req(1, 0, 0, 0, 10, 320, 32);
    metrics_add_req(&m, &r);
    metrics_flush(&m);
    metrics_summary s;
    metrics_summarize(&m, metrics_window_end(&m), &s);
    assert_true(fabs(s.all.tbt_ms.mean - (30 * 10.0 + 40.0) / 31) < 1e-9);
    assert_true(fabs(s.all.tbt_ms.max - 40.0) < 0.1);
    metrics_group_summary t2;
    metrics_summarize_group(&m.tiers[2], s.window_s, &t2);
    assert_true(fabs(t2.tbt_ms.mean - 40.0) < 1e-9);
    metrics_fini(&m);
    tu_assert_no_leaks();
}

static void assert_same_hist(const ss_hist *got, const ss_hist *want)
{
    assert_int_equal(got->n, want->n);
    assert_int_equal(got->min, want->min);
    assert_int_equal(got->max, want->max);
    assert_true(got->sum == want->sum);
    for (int q = 0; q <= 1000; q++)
        assert_int_equal(ss_hist_quantile(got, q / 1000.0), ss_hist_quantile(want, q / 1000.0));
}

/* Gaps of interleaved (tenant, tier) pairs, with runs of equal gaps, a tenant out of range
 * (it counts in the run and its tier only) and a tier past SS_MAX_TIERS (the last tier): after
 * the flush each group's histogram is the one that adding every gap to it directly gives,
 * sum included. A second flush adds nothing; gaps after it arrive at the next one. */
static void test_gap_groups(void **state)
{
    (void)state;
    enum { N_TEN = 3, N = 20000 };
    const uint8_t tiers[] = {0, 1, 2, SS_MAX_TIERS + 3};
    metrics m;
    assert_int_equal(metrics_init(&m, N_TEN, 0), 0);
    ss_hist all = {0}, ten[N_TEN] = {{0}}, tier[SS_MAX_TIERS] = {{0}};
    ss_rng r;
    ss_rng_seed(&r, 11, 3);
    for (int i = 0; i < N + 10; i++) {
        if (i == N) { /* flush twice in the middle: nothing is counted twice */
            metrics_flush(&m);
            metrics_flush(&m);
        }
        uint16_t t = (uint16_t)ss_rng_below(&r, N_TEN + 1);
        uint8_t k = tiers[ss_rng_below(&r, 4)];
        ss_time gap = ss_rng_below(&r, 4) ? 20 * MS : (ss_time)ss_rng_below(&r, 500 * MS);
        metrics_add_gap(&m, t, k, gap);
        assert_int_equal(ss_hist_add(&all, gap), 0);
        if (t < N_TEN)
            assert_int_equal(ss_hist_add(&ten[t], gap), 0);
        assert_int_equal(ss_hist_add(&tier[k < SS_MAX_TIERS ? k : SS_MAX_TIERS - 1], gap), 0);
    }
    metrics_flush(&m);
    metrics_flush(&m);
    assert_false(m.oom);
    assert_same_hist(&m.all.tbt, &all);
    for (int t = 0; t < N_TEN; t++)
        assert_same_hist(&m.tenants[t].tbt, &ten[t]);
    for (int k = 0; k < SS_MAX_TIERS; k++)
        assert_same_hist(&m.tiers[k].tbt, &tier[k]);
    assert_true(tier[SS_MAX_TIERS - 1].n > 0 && tier[3].n == 0);
    ss_hist_fini(&all);
    for (int t = 0; t < N_TEN; t++)
        ss_hist_fini(&ten[t]);
    for (int k = 0; k < SS_MAX_TIERS; k++)
        ss_hist_fini(&tier[k]);
    metrics_fini(&m);
    tu_assert_no_leaks();
}

/* Idle slices land in their decade buckets, and what precedes measure_from is cut off. */
static void test_slices(void **state)
{
    (void)state;
    metrics m;
    assert_int_equal(metrics_init(&m, 1, 100 * MS), 0);
    assert_int_equal(metrics_add_slice(&m, 0, 50 * MS, 1e9), 0);         /* all warm-up */
    assert_int_equal(metrics_add_slice(&m, 95 * MS, 105 * MS, 1e9), 5 * MS); /* cut to 5 ms */
    assert_int_equal(metrics_add_slice(&m, 200 * MS, 200 * MS + 5000, 1e9), 5000);
    int ms_bucket = -1, us_bucket = -1;
    for (int i = 0; i < METRICS_SLICE_BUCKETS; i++) {
        if (metrics_slice_bucket_lo(i) <= 5 * MS && 5 * MS < metrics_slice_bucket_hi(i))
            ms_bucket = i;
        if (metrics_slice_bucket_lo(i) <= 5000 && 5000 < metrics_slice_bucket_hi(i))
            us_bucket = i;
    }
    assert_true(ms_bucket >= 0 && us_bucket >= 0 && ms_bucket != us_bucket);
    assert_int_equal(m.slices.count[ms_bucket], 1);
    assert_int_equal(m.slices.count[us_bucket], 1);
    assert_true(m.slices.gpu_ns[ms_bucket] == 5.0 * MS);
    assert_string_equal(metrics_reject_key(METRICS_REJ_TOO_LONG), "too_long");
    assert_null(metrics_reject_key(METRICS_REJ__COUNT));
    metrics_fini(&m);
    tu_assert_no_leaks();
}

/* The arrival window: from measure_from to the last arrival; every request's in-window tokens
 * count (a warm-up arrival's too), goodput only those of requests that met their SLA, and a
 * run whose arrivals end before the warm-up has no window (rates 0, not a division by 0). */
static void test_arrival_window_rates(void **state)
{
    (void)state;
    metrics m;
    assert_int_equal(metrics_init(&m, 2, 1000 * MS), 0);
    metrics_req w = req(1, 0, 0, 500, 5, 800, 30); /* warm-up arrival, tokens after 1 s */
    w.measured = 0;
    w.win_tokens = 20;
    metrics_add_req(&m, &w);
    metrics_req a = req(2, 1, 1, 1500, 5, 900, 50);
    a.win_tokens = 40;
    metrics_add_req(&m, &a);
    metrics_req b = req(3, 1, 0, 2000, 5, 900, 50);
    b.win_tokens = 10;
    b.sla = METRICS_SLA_TTFT;
    metrics_add_req(&m, &b);
    m.last_arrival = 3000 * MS;
    metrics_flush(&m);
    metrics_summary s;
    metrics_summarize(&m, metrics_window_end(&m), &s);
    assert_true(s.arrival_window_s == 2.0);
    assert_true(s.all.win_output_tokens_per_s == 70 / 2.0);
    assert_true(s.all.win_goodput_tokens_per_s == 60 / 2.0);
    metrics_group_summary t1;
    metrics_summarize_group(&m.tenants[1], s.window_s, &t1);
    metrics_summarize_window(&m, &m.tenants[1], &t1);
    assert_true(t1.win_output_tokens_per_s == 50 / 2.0 && t1.win_goodput_tokens_per_s == 20.0);
    m.last_arrival = 900 * MS; /* every arrival in the warm-up */
    metrics_summarize(&m, metrics_window_end(&m), &s);
    assert_true(s.arrival_window_s == 0 && s.all.win_output_tokens_per_s == 0);
    metrics_fini(&m);
}

/* A what-if's metrics keep counters and idle slices without allocating anything, and release
 * cleanly. */
static void test_counters_only(void **state)
{
    (void)state;
    size_t live = ss_alloc_live_bytes();
    metrics m;
    metrics_init_counters(&m, 100 * MS);
    assert_int_equal(ss_alloc_live_bytes(), live);
    assert_int_equal(m.n_tenants, 0);
    assert_int_equal(metrics_add_slice(&m, 50 * MS, 160 * MS, 1.0), 60 * MS); /* from 100 ms */
    metrics_add_moved(&m, 5 * MS, 3 * MS);
    m.offloads++;
    uint64_t slices = 0;
    double idle_ns = 0;
    for (int b = 0; b < METRICS_SLICE_BUCKETS; b++) {
        slices += m.slices.count[b];
        idle_ns += m.slices.gpu_ns[b];
    }
    assert_int_equal(slices, 1);
    assert_true(idle_ns == 60 * MS);
    assert_int_equal(m.moved_ns[0], 3 * MS);
    metrics_fini(&m);
    assert_int_equal(m.offloads, 0);
    assert_int_equal(ss_alloc_live_bytes(), live);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_summary),
        cmocka_unit_test(test_arrival_window_rates),
        cmocka_unit_test(test_gaps),
        cmocka_unit_test(test_gap_groups),
        cmocka_unit_test(test_slices),
        cmocka_unit_test(test_counters_only),
    };
    return cmocka_run_group_tests_name("metrics", tests, NULL, NULL);
}
