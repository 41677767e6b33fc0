/* Workload module: tier mixes (exact K = 5 tables, generalisations, draw frequencies, errors),
 * the merge (order, tie rule, determinism, independence of tenants), split traces (rr, random,
 * class with dropped rows), trace_tenant filters, rate_scale / duration / limit, prefix-block
 * copies, ServeGen clients (a hand-written tiny client with exact counts, .json and .json.gz,
 * bad files, and a real client when ../shared/data is present), validation messages, and
 * allocation failures over create + next. */
#include "support/test_util.h"

#include "core/ss_alloc.h"
#include "core/ss_rng.h"
#include "workload/wl_int.h"
#include "workload/workload.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* ---- helpers ------------------------------------------------------------------------- */

/* A tenant with no source yet, rate_scale 1 and one tier. */
static wl_tenant_spec tenant(const char *name)
{
    wl_tenant_spec t;
    memset(&t, 0, sizeof t);
    t.name = name;
    t.rate_scale = 1;
    ss_errbuf eb = {""};
    assert_int_equal(wl_tier_mix_make(&t.tiers, "uniform", 1, 1, &eb), 0);
    return t;
}

static trace_gen_spec synth(double rate, uint64_t n)
{
    trace_gen_spec g;
    memset(&g, 0, sizeof g);
    g.rate = rate;
    g.cv = 1;
    g.n_requests = n;
    ss_errbuf eb = {""};
    assert_int_equal(trace_len_dist_parse(&g.prompt, "uniform:1:4000", &eb), 0);
    assert_int_equal(trace_len_dist_parse(&g.output, "lognormal:100:0.5", &eb), 0);
    return g;
}

/* Read the whole merged stream into recs (at most cap); returns the count. Checks that
 * arrivals never go backwards, that equal arrivals come in tenant order, and that ids count
 * from 0. */
static size_t collect_seed(const wl_tenant_spec *specs, uint32_t n, uint64_t seed,
                           const char *sg_dir, trace_rec *recs, size_t cap)
{
    wl_source *s = NULL;
    ss_errbuf eb = {""};
    int rc = wl_source_create(&s, specs, n, seed, sg_dir, &eb);
    if (rc)
        fail_msg("create: %d %s", rc, eb.msg);
    size_t k = 0;
    trace_rec r;
    while ((rc = wl_source_next(s, &r, &eb)) == 1) {
        assert_true(k < cap);
        assert_int_equal(r.id, k);
        if (k) {
            assert_true(r.arrival_ns >= recs[k - 1].arrival_ns);
            if (r.arrival_ns == recs[k - 1].arrival_ns)
                assert_true(r.tenant >= recs[k - 1].tenant);
        }
        r.prefix_blocks = NULL;
        recs[k++] = r;
    }
    if (rc)
        fail_msg("next: %d %s", rc, eb.msg);
    assert_int_equal(wl_source_next(s, &r, &eb), 0);
    wl_source_destroy(&s);
    assert_null(s);
    return k;
}

static size_t collect(const wl_tenant_spec *specs, uint32_t n, trace_rec *recs, size_t cap)
{
    return collect_seed(specs, n, 1, NULL, recs, cap);
}

/* Expect wl_source_create to fail with rc and a message starting with want. */
static void expect_create_error(const wl_tenant_spec *specs, uint32_t n, const char *sg_dir,
                                int want_rc, const char *want)
{
    wl_source *s = NULL;
    ss_errbuf eb = {""};
    int rc = wl_source_create(&s, specs, n, 1, sg_dir, &eb);
    if (rc != want_rc || strncmp(eb.msg, want, strlen(want)))
        fail_msg("rc %d (want %d)\n  got  '%s'\n  want '%s...'", rc, want_rc, eb.msg, want);
    assert_null(s);
}

/* Read a source to its end and return the error code (or 0) with the message in eb. */
static int drain(const wl_tenant_spec *specs, uint32_t n, const char *sg_dir, ss_errbuf *eb)
{
    wl_source *s = NULL;
    int rc = wl_source_create(&s, specs, n, 1, sg_dir, eb);
    trace_rec r;
    if (rc == SS_OK)
        while ((rc = wl_source_next(s, &r, eb)) == 1)
            ;
    wl_source_destroy(&s);
    return rc;
}

#define NAT_HDR "request_id,arrival_s,tenant,prompt_tokens,output_tokens\n"

/* A native trace of n rows: row i at i/10 s (pairs share a time when pairs is set), prompt
 * 1 + i % 1200 tokens, output 1 + i % 7, tenant alpha or beta alternately. */
static const char *native_fixture(const char *name, int n, int pairs)
{
    size_t cap = (size_t)n * 48 + 128, len = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    len += (size_t)snprintf(text, cap, NAT_HDR);
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(text + len, cap - len, "%d,%.1f,%s,%d,%d\n", i,
                                (pairs ? i / 2 : i) / 10.0, i % 2 ? "beta" : "alpha",
                                1 + i % 1200, 1 + i % 7);
    const char *path = tu_write_file(tu_tmpdir(), name, text);
    free(text);
    return path;
}

/* ---- tier mixes ---------------------------------------------------------------------- */

static void assert_table(const wl_tier_mix *m, const double *want, uint32_t k)
{
    assert_int_equal(m->k, k);
    for (uint32_t i = 0; i < k; i++)
        if (fabs(m->p[i] - want[i]) > 1e-12)
            fail_msg("p[%u] = %.15g, want %.15g", i, m->p[i], want[i]);
}

static void test_tier_mix_tables(void **state)
{
    (void)state;
    wl_tier_mix m;
    ss_errbuf eb = {""};
    static const double g5[] = {0.05, 0.2, 0.5, 0.2, 0.05}, e5[] = {0.10, 0.30, 0.50, 0.08, 0.02};
    assert_int_equal(wl_tier_mix_make(&m, "gaussian", 5, 1, &eb), 0);
    assert_int_equal(m.kind, WL_MIX_GAUSSIAN);
    assert_table(&m, g5, 5);
    assert_int_equal(wl_tier_mix_make(&m, "enterprise", 5, 1, &eb), 0);
    assert_table(&m, e5, 5);
    /* Enterprise resampled: K = 3 takes positions 0, 2, 4 of the shape; K = 2 the ends. */
    static const double e3[] = {0.10 / 0.62, 0.50 / 0.62, 0.02 / 0.62}, e2[] = {0.1 / 0.12,
                                                                                0.02 / 0.12};
    assert_int_equal(wl_tier_mix_make(&m, "enterprise", 3, 1, &eb), 0);
    assert_table(&m, e3, 3);
    assert_int_equal(wl_tier_mix_make(&m, "enterprise", 2, 1, &eb), 0);
    assert_table(&m, e2, 2);
    /* Gaussian K = 3: sigma = sqrt(0.8) / 2, so the outer tiers are at z = sqrt(5). */
    double e = exp(-2.5);
    const double g3[] = {e / (1 + 2 * e), 1 / (1 + 2 * e), e / (1 + 2 * e)};
    assert_int_equal(wl_tier_mix_make(&m, "gaussian", 3, 1, &eb), 0);
    assert_table(&m, g3, 3);
    static const double one[] = {1};
    assert_int_equal(wl_tier_mix_make(&m, "enterprise", 1, 1, &eb), 0);
    assert_table(&m, one, 1);
    assert_int_equal(wl_tier_mix_make(&m, "gaussian", 1, 1, &eb), 0);
    assert_table(&m, one, 1);
    static const double w[] = {0.25, 0.25, 0.5};
    assert_int_equal(wl_tier_mix_make(&m, "weights:1,1,2", 3, 1, &eb), 0);
    assert_int_equal(m.kind, WL_MIX_WEIGHTS);
    assert_table(&m, w, 3);
    static const double pl[] = {1 / 1.75, 0.5 / 1.75, 0.25 / 1.75};
    assert_int_equal(wl_tier_mix_make(&m, "weights:4,2,1", 3, 1, &eb), 0);
    assert_table(&m, pl, 3);
    /* Every kind and K: sums to 1; gaussian symmetric and peaked in the middle; powerlaw
     * strictly decreasing; uniform flat. */
    const char *names[] = {"uniform", "gaussian", "enterprise", "powerlaw"};
    for (uint32_t k = 1; k <= SS_MAX_TIERS; k++) {
        for (int n = 0; n < 4; n++) {
            assert_int_equal(wl_tier_mix_make(&m, names[n], k, 1.5, &eb), 0);
            double sum = 0;
            for (uint32_t i = 0; i < k; i++) {
                assert_true(m.p[i] > 0);
                sum += m.p[i];
            }
            assert_true(fabs(sum - 1) < 1e-12);
            for (uint32_t i = 0; i + 1 < k; i++) {
                if (n == 0)
                    assert_true(fabs(m.p[i] - 1.0 / k) < 1e-15);
                if (n == 1)
                    assert_true(fabs(m.p[i] - m.p[k - 1 - i]) < 1e-12);
                if (n == 1 && 2 * (i + 1) <= k - 1 + (k % 2 == 0))
                    assert_true(m.p[i] < m.p[i + 1] + 1e-15);
                if (n == 3)
                    assert_true(m.p[i] > m.p[i + 1]);
            }
        }
    }
    /* powerlaw alpha 1, K = 4: 1, 1/2, 1/3, 1/4 normalised. */
    static const double p4[] = {12.0 / 25, 6.0 / 25, 4.0 / 25, 3.0 / 25};
    assert_int_equal(wl_tier_mix_make(&m, "powerlaw", 4, 1, &eb), 0);
    assert_table(&m, p4, 4);
    assert_int_equal(wl_tier_mix_make(&m, "trace", 4, 1, &eb), 0);
    assert_int_equal(m.kind, WL_MIX_TRACE);
    assert_int_equal(m.k, 4);
    tu_assert_no_leaks();
}

static void test_tier_mix_errors(void **state)
{
    (void)state;
    wl_tier_mix m;
    memset(&m, 0x5a, sizeof m);
    wl_tier_mix before = m;
    static const struct {
        const char *name;
        uint32_t k;
        double alpha;
        const char *msg;
    } cases[] = {
        {"uniform", 0, 1, "tier_mix: tiers must be in 1..10, got 0"},
        {"uniform", 11, 1, "tier_mix: tiers must be in 1..10, got 11"},
        {"gauss", 3, 1, "tier_mix: unknown mix 'gauss'"},
        {"powerlaw", 3, 0, "tier_mix: powerlaw: alpha must be in (0, 100], got 0"},
        {"powerlaw", 3, NAN, "tier_mix: powerlaw: alpha must be in (0, 100], got nan"},
        {"weights:1,2", 3, 1, "tier_mix: weights: need 3 weights (one per tier), got 2"},
        {"weights:1,2,3,4", 3, 1, "tier_mix: weights: more than 3 weights for 3 tiers"},
        {"weights:1,-2,3", 3, 1, "tier_mix: weights: '-2' is not a number >= 0"},
        {"weights:1,x,3", 3, 1, "tier_mix: weights: 'x' is not a number >= 0"},
        {"weights:0,0", 2, 1, "tier_mix: weights: need a positive finite sum"},
        {"weights:", 1, 1, "tier_mix: weights: '' is not a number >= 0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ss_errbuf eb = {""};
        assert_int_equal(wl_tier_mix_make(&m, cases[i].name, cases[i].k, cases[i].alpha, &eb),
                         SS_EINVAL);
        if (strncmp(eb.msg, cases[i].msg, strlen(cases[i].msg)))
            fail_msg("'%s': got '%s', want '%s'", cases[i].name, eb.msg, cases[i].msg);
        assert_memory_equal(&m, &before, sizeof m); /* unchanged on failure */
    }
    ss_errbuf eb = {""};
    assert_int_equal(wl_tier_mix_make(&m, NULL, 3, 1, &eb), SS_EINVAL);
    tu_assert_no_leaks();
}

static void check_draws(const char *name, uint32_t k, double alpha)
{
    wl_tier_mix m;
    ss_errbuf eb = {""};
    assert_int_equal(wl_tier_mix_make(&m, name, k, alpha, &eb), 0);
    ss_rng r;
    ss_rng_seed(&r, 42, 7);
    uint64_t count[SS_MAX_TIERS] = {0};
    const int n = 200000;
    for (int i = 0; i < n; i++) {
        uint8_t t = wl_tier_draw(&m, &r);
        assert_true(t < k);
        count[t]++;
    }
    for (uint32_t i = 0; i < k; i++)
        if (fabs((double)count[i] / n - m.p[i]) > 0.01)
            fail_msg("%s tier %u: %.4f drawn, p = %.4f", name, i, (double)count[i] / n, m.p[i]);
}

static void test_tier_draw_frequencies(void **state)
{
    (void)state;
    check_draws("gaussian", 5, 1);
    check_draws("enterprise", 5, 1);
    check_draws("gaussian", 8, 1);
    check_draws("powerlaw", 4, 1.2);
    check_draws("uniform", 10, 1);
    check_draws("weights:0,3,1", 3, 1);
    /* One tier, and the trace mix, draw nothing. */
    wl_tier_mix m;
    ss_errbuf eb = {""};
    ss_rng r, r0;
    ss_rng_seed(&r, 1, 1);
    r0 = r;
    assert_int_equal(wl_tier_mix_make(&m, "gaussian", 1, 1, &eb), 0);
    assert_int_equal(wl_tier_draw(&m, &r), 0);
    assert_int_equal(wl_tier_mix_make(&m, "trace", 5, 1, &eb), 0);
    assert_int_equal(wl_tier_draw(&m, &r), 0);
    assert_memory_equal(&r, &r0, sizeof r);
    tu_assert_no_leaks();
}

/* ---- merge --------------------------------------------------------------------------- */

#define BIG 40000

static int same_req(const trace_rec *a, const trace_rec *b)
{
    return a->arrival_ns == b->arrival_ns && a->prompt_tokens == b->prompt_tokens &&
           a->output_tokens == b->output_tokens && a->tier == b->tier;
}


static void test_merge_synthetic(void **state)
{
    (void)state;
    trace_gen_spec g[3] = {synth(5, 3000), synth(2, 1000), synth(9, 4000)};
    wl_tenant_spec t[3] = {tenant("a"), tenant("b"), tenant("c")};
    for (int i = 0; i < 3; i++)
        t[i].synth = &g[i];
    ss_errbuf eb = {""};
    assert_int_equal(wl_tier_mix_make(&t[1].tiers, "gaussian", 5, 1, &eb), 0);
    trace_rec *all = calloc(BIG, sizeof *all), *one = calloc(BIG, sizeof *one);
    assert_non_null(all);
    assert_non_null(one);
    size_t n = collect(t, 3, all, BIG);
    assert_int_equal(n, 8000);
    /* Tenant 0's subsequence is exactly its stream read alone (same index, same streams). */
    size_t n1 = collect(t, 1, one, BIG), j = 0;
    assert_int_equal(n1, 3000);
    for (size_t i = 0; i < n; i++)
        if (all[i].tenant == 0) {
            assert_true(same_req(&all[i], &one[j]));
            assert_int_equal(all[i].line, one[j++].line);
        }
    assert_int_equal(j, n1);
    uint64_t per[3] = {0}, tiers[5] = {0};
    for (size_t i = 0; i < n; i++) {
        assert_true(all[i].tenant < 3);
        per[all[i].tenant]++;
        if (all[i].tenant == 1)
            tiers[all[i].tier]++;
        else
            assert_int_equal(all[i].tier, 0);
        assert_true(all[i].prompt_tokens >= 1 && all[i].prompt_tokens <= 4000);
    }
    assert_int_equal(per[0], 3000);
    assert_int_equal(per[1], 1000);
    assert_int_equal(per[2], 4000);
    assert_true(tiers[2] > 400 && tiers[0] < 100); /* gaussian: the middle tier dominates */
    /* Rates: tenant c (9/s) spans about 4000/9 s. */
    ss_time last_c = 0;
    for (size_t i = 0; i < n; i++)
        if (all[i].tenant == 2)
            last_c = all[i].arrival_ns;
    assert_true(fabs(ss_time_to_s(last_c) - 4000.0 / 9) < 40);
    free(all);
    free(one);
    tu_assert_no_leaks();
}

/* Three tenants reading one file each (split none) see the same times: ties go by tenant. */
static void test_merge_ties(void **state)
{
    (void)state;
    const char *path = native_fixture("ties.csv", 200, 1);
    wl_tenant_spec t[3] = {tenant("a"), tenant("b"), tenant("c")};
    for (int i = 0; i < 3; i++)
        t[i].trace = path;
    t[1].limit = 150;
    trace_rec recs[600];
    size_t n = collect(t, 3, recs, 600);
    assert_int_equal(n, 550);
    /* Rows come in pairs with one time: a a b b c c per time while b lasts. */
    for (size_t i = 0; i < 6 * 75; i++) {
        assert_int_equal(recs[i].tenant, (i % 6) / 2);
        assert_int_equal(recs[i].line, 2 + 2 * (i / 6) + i % 2);
        assert_int_equal(recs[i].arrival_ns, (ss_time)(i / 6) * 100000000);
    }
    for (size_t i = 450; i < n; i++)
        assert_int_not_equal(recs[i].tenant, 1);
    tu_assert_no_leaks();
}

/* Same seed, same stream; a third tenant leaves the first two unchanged; another seed
 * changes everything. */
static void test_determinism_independence(void **state)
{
    (void)state;
    trace_gen_spec g[3] = {synth(4, 500), synth(3, 400), synth(6, 700)};
    wl_tenant_spec t[3] = {tenant("a"), tenant("b"), tenant("c")};
    ss_errbuf eb = {""};
    for (int i = 0; i < 3; i++) {
        t[i].synth = &g[i];
        assert_int_equal(wl_tier_mix_make(&t[i].tiers, "enterprise", 5, 1, &eb), 0);
    }
    /* Identical specs for a and b still give different requests (seed from the index). */
    g[1] = g[0];
    trace_rec *x = calloc(4000, sizeof *x), *y = calloc(4000, sizeof *y);
    size_t nx = collect(t, 2, x, 4000), ny = collect(t, 3, y, 4000);
    assert_int_equal(nx, 1000);
    assert_int_equal(ny, 1700);
    for (uint16_t k = 0; k < 2; k++) {
        size_t i = 0, j = 0;
        for (;; i++, j++) {
            while (i < nx && x[i].tenant != k)
                i++;
            while (j < ny && y[j].tenant != k)
                j++;
            if (i == nx || j == ny)
                break;
            assert_true(same_req(&x[i], &y[j]));
        }
        assert_true(i == nx && j == ny);
    }
    /* a and b have equal specs but not equal requests. */
    uint32_t pa[500], pb[500];
    size_t ia = 0, ib = 0, same_ab = 0;
    for (size_t i = 0; i < nx; i++) {
        if (x[i].tenant == 0)
            pa[ia++] = x[i].prompt_tokens;
        else
            pb[ib++] = x[i].prompt_tokens;
    }
    assert_int_equal(ia, 500);
    assert_int_equal(ib, 500);
    for (size_t i = 0; i < 500; i++)
        same_ab += pa[i] == pb[i];
    assert_true(same_ab < 10);
    /* Digests: equal for equal runs, different for another seed. */
    wl_source *s1 = NULL, *s2 = NULL, *s3 = NULL;
    assert_int_equal(wl_source_create(&s1, t, 3, 1, NULL, &eb), 0);
    assert_int_equal(wl_source_create(&s2, t, 3, 1, NULL, &eb), 0);
    assert_int_equal(wl_source_create(&s3, t, 3, 2, NULL, &eb), 0);
    assert_true(wl_source_digest(s1) == wl_source_digest(s2));
    assert_true(wl_source_digest(s1) != wl_source_digest(s3));
    trace_rec a, b;
    int diff = 0;
    for (int i = 0; i < 50; i++) {
        assert_int_equal(wl_source_next(s1, &a, &eb), 1);
        assert_int_equal(wl_source_next(s3, &b, &eb), 1);
        diff += !same_req(&a, &b);
    }
    assert_true(diff > 40);
    assert_string_equal(wl_source_format(s1, 2), "synthetic");
    /* An explicit generator seed is used as given: a and b then generate the same. */
    g[0].seed = g[1].seed = 99;
    nx = collect(t, 2, x, 4000);
    ia = ib = 0;
    for (size_t i = 0; i < nx; i++) {
        if (x[i].tenant == 0)
            pa[ia++] = x[i].prompt_tokens;
        else
            pb[ib++] = x[i].prompt_tokens;
    }
    assert_memory_equal(pa, pb, sizeof pa);
    assert_null(wl_source_format(s1, 3));
    wl_source_destroy(&s1);
    wl_source_destroy(&s2);
    wl_source_destroy(&s3);
    free(x);
    free(y);
    tu_assert_no_leaks();
}

/* ---- splits -------------------------------------------------------------------------- */

#define NSPLIT 12000

static void test_split_rr(void **state)
{
    (void)state;
    const char *path = native_fixture("split.csv", NSPLIT, 0);
    wl_tenant_spec t[4] = {tenant("a"), tenant("b"), tenant("c"), tenant("solo")};
    for (int i = 0; i < 4; i++) {
        t[i].trace = path;
        t[i].split = i < 3 ? WL_SPLIT_RR : WL_SPLIT_NONE;
    }
    trace_rec *r = calloc(2 * NSPLIT, sizeof *r);
    size_t n = collect(t, 4, r, 2 * NSPLIT);
    assert_int_equal(n, 2 * NSPLIT);
    uint64_t per[4] = {0};
    for (size_t i = 0; i < n; i++) {
        per[r[i].tenant]++;
        uint64_t row = r[i].line - 2;
        if (r[i].tenant < 3)
            assert_int_equal(row % 3, r[i].tenant); /* dealt in turn */
        assert_int_equal(r[i].prompt_tokens, 1 + row % 1200);
    }
    assert_int_equal(per[0], NSPLIT / 3);
    assert_int_equal(per[1], NSPLIT / 3);
    assert_int_equal(per[2], NSPLIT / 3);
    assert_int_equal(per[3], NSPLIT); /* split none: its own full copy */
    free(r);
    tu_assert_no_leaks();
}

static void test_split_random(void **state)
{
    (void)state;
    const char *path = native_fixture("split.csv", NSPLIT, 0);
    wl_tenant_spec t[3] = {tenant("a"), tenant("b"), tenant("c")};
    double w[3] = {1, 2, 7};
    for (int i = 0; i < 3; i++) {
        t[i].trace = path;
        t[i].split = WL_SPLIT_RANDOM;
        t[i].weight = w[i];
    }
    trace_rec *r = calloc(NSPLIT, sizeof *r), *r2 = calloc(NSPLIT, sizeof *r2);
    size_t n = collect(t, 3, r, NSPLIT);
    assert_int_equal(n, NSPLIT);
    uint64_t per[3] = {0};
    for (size_t i = 0; i < n; i++) {
        per[r[i].tenant]++;
        assert_int_equal(r[i].line, i + 2); /* every row once, in order */
    }
    for (int i = 0; i < 3; i++) /* 1.5 points is about 4 standard deviations */
        assert_true(fabs((double)per[i] / NSPLIT - w[i] / 10) < 0.015);
    /* Same seed: same deal; another seed: another. */
    assert_int_equal(collect(t, 3, r2, NSPLIT), NSPLIT);
    assert_memory_equal(r, r2, NSPLIT * sizeof *r);
    assert_int_equal(collect_seed(t, 3, 9, NULL, r2, NSPLIT), NSPLIT);
    size_t moved = 0;
    for (size_t i = 0; i < n; i++)
        moved += r[i].tenant != r2[i].tenant;
    assert_true(moved > NSPLIT / 4);
    free(r);
    free(r2);
    tu_assert_no_leaks();
}

static void test_split_class(void **state)
{
    (void)state;
    const char *path = native_fixture("split.csv", NSPLIT, 0);
    wl_tenant_spec t[3] = {tenant("short"), tenant("mid"), tenant("long")};
    uint32_t lo[3] = {1, 101, 601}, hi[3] = {100, 500, 1000};
    for (int i = 0; i < 3; i++) {
        t[i].trace = path;
        t[i].split = WL_SPLIT_CLASS;
        t[i].class_lo = lo[i];
        t[i].class_hi = hi[i];
    }
    wl_source *s = NULL;
    ss_errbuf eb = {""};
    assert_int_equal(wl_source_create(&s, t, 3, 1, NULL, &eb), 0);
    trace_rec r;
    uint64_t per[3] = {0}, n = 0;
    int rc;
    while ((rc = wl_source_next(s, &r, &eb)) == 1) {
        assert_true(r.prompt_tokens >= lo[r.tenant] && r.prompt_tokens <= hi[r.tenant]);
        per[r.tenant]++;
        n++;
    }
    assert_int_equal(rc, 0);
    /* Prompts cycle 1..1200: per cycle 100, 400, 400 dealt and 300 (501..600, 1001..1200)
     * dropped. */
    assert_int_equal(per[0], 1000);
    assert_int_equal(per[1], 4000);
    assert_int_equal(per[2], 4000);
    assert_int_equal(wl_source_n_dropped(s), NSPLIT - n);
    assert_int_equal(wl_source_n_dropped(s), 3000);
    assert_int_equal(wl_source_n_skipped(s), 0);
    assert_string_equal(wl_source_format(s, 1), "native");
    wl_source_destroy(&s);
    tu_assert_no_leaks();
}

static void test_trace_tenant_filter(void **state)
{
    (void)state;
    const char *path = native_fixture("two.csv", 1000, 0);
    wl_tenant_spec t[2] = {tenant("A"), tenant("B")};
    t[0].trace = t[1].trace = path;
    t[0].trace_tenant = "alpha";
    t[1].trace_tenant = "beta";
    trace_rec r[1000];
    size_t n = collect(t, 2, r, 1000);
    assert_int_equal(n, 1000);
    for (size_t i = 0; i < n; i++)
        assert_int_equal((r[i].line - 2) % 2, r[i].tenant); /* alpha rows even, beta odd */
    /* A filter inside a split group: rr over the beta rows only. */
    wl_tenant_spec u[2] = {tenant("x"), tenant("y")};
    for (int i = 0; i < 2; i++) {
        u[i].trace = path;
        u[i].trace_tenant = "beta";
        u[i].split = WL_SPLIT_RR;
    }
    n = collect(u, 2, r, 1000);
    assert_int_equal(n, 500);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal((r[i].line - 2) % 2, 1);
        assert_int_equal(((r[i].line - 3) / 2) % 2, r[i].tenant);
    }
    /* A name that never occurs is an error at the end of the trace. */
    t[1].trace_tenant = "gamma";
    ss_errbuf eb = {""};
    assert_int_equal(drain(t, 2, NULL, &eb), SS_ENOTFOUND);
    assert_non_null(strstr(eb.msg, "tenant B: trace_tenant 'gamma' does not occur in "));
    tu_assert_no_leaks();
}

/* ---- shaping ------------------------------------------------------------------------- */

static void test_shaping(void **state)
{
    (void)state;
    const char *path = native_fixture("shape.csv", 100, 0); /* rows at 0, 0.1, ..., 9.9 s */
    wl_tenant_spec t[3] = {tenant("fast"), tenant("cut"), tenant("few")};
    for (int i = 0; i < 3; i++)
        t[i].trace = path;
    t[0].rate_scale = 3;
    t[1].duration_s = 5.0; /* row 50 at exactly 5 s is kept */
    t[2].limit = 7;
    ss_errbuf eb = {""};
    assert_int_equal(wl_tier_mix_make(&t[2].tiers, "trace", 3, 1, &eb), 0);
    trace_rec r[300];
    size_t n = collect(t, 3, r, 300);
    uint64_t per[3] = {0};
    ss_time last[3] = {0};
    for (size_t i = 0; i < n; i++) {
        uint64_t row = r[i].line - 2, k = r[i].tenant;
        per[k]++;
        last[k] = r[i].arrival_ns;
        ss_time raw = (ss_time)row * 100000000;
        assert_int_equal(r[i].arrival_ns, k == 0 ? llround((double)raw / 3) : raw);
    }
    assert_int_equal(per[0], 100);
    assert_int_equal(per[1], 51);
    assert_int_equal(last[1], 5 * SS_NS_PER_S);
    assert_int_equal(per[2], 7);
    assert_int_equal(last[0], llround(9.9e9 / 3));
    assert_int_equal(n, 158);
    tu_assert_no_leaks();
}

/* The trace's tier column, clamped to K - 1, under the trace mix. */
static void test_trace_tiers(void **state)
{
    (void)state;
    const char *path = tu_write_file(tu_tmpdir(), "tiers.csv",
                                     "request_id,arrival_s,tenant,prompt_tokens,output_tokens,"
                                     "tier\n0,0,a,1,1,0\n1,1,a,1,1,1\n2,2,a,1,1,2\n3,3,a,1,1,9\n");
    wl_tenant_spec t = tenant("a");
    t.trace = path;
    ss_errbuf eb = {""};
    assert_int_equal(wl_tier_mix_make(&t.tiers, "trace", 2, 1, &eb), 0);
    trace_rec r[4];
    assert_int_equal(collect(&t, 1, r, 4), 4);
    assert_int_equal(r[0].tier, 0);
    assert_int_equal(r[1].tier, 1);
    assert_int_equal(r[2].tier, 1);
    assert_int_equal(r[3].tier, 1);
    tu_assert_no_leaks();
}

/* ---- prefix blocks ------------------------------------------------------------------- */

/* A Mooncake trace whose row i has hash_ids i*10 .. i*10 + i%5, several rows per timestamp. */
static const char *mooncake_fixture(int n)
{
    size_t cap = (size_t)n * 160, len = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    for (int i = 0; i < n; i++) {
        len += (size_t)snprintf(text + len, cap - len,
                                "{\"timestamp\": %d, \"input_length\": %d, \"output_length\": 3,"
                                " \"hash_ids\": [", i / 6, 512 * (1 + i % 5));
        for (int k = 0; k <= i % 5; k++)
            len += (size_t)snprintf(text + len, cap - len, k ? ", %d" : "%d", i * 10 + k);
        len += (size_t)snprintf(text + len, cap - len, "]}\n");
    }
    const char *path = tu_write_file(tu_tmpdir(), "mc.jsonl", text);
    free(text);
    return path;
}

static void test_prefix_blocks(void **state)
{
    (void)state;
    const char *path = mooncake_fixture(300);
    wl_tenant_spec t[3] = {tenant("a"), tenant("b"), tenant("c")};
    for (int i = 0; i < 3; i++) {
        t[i].trace = path;
        t[i].split = i < 2 ? WL_SPLIT_RR : WL_SPLIT_NONE;
    }
    wl_source *s = NULL;
    ss_errbuf eb = {""};
    assert_int_equal(wl_source_create(&s, t, 3, 1, NULL, &eb), 0);
    assert_string_equal(wl_source_format(s, 0), "mooncake");
    trace_rec r;
    int rc, n = 0;
    while ((rc = wl_source_next(s, &r, &eb)) == 1) {
        int row = (int)r.line - 1;
        assert_int_equal(r.n_prefix_blocks, 1 + row % 5);
        assert_non_null(r.prefix_blocks);
        for (uint32_t k = 0; k < r.n_prefix_blocks; k++)
            assert_int_equal(r.prefix_blocks[k], (uint32_t)(row * 10) + k);
        n++;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(n, 600);
    wl_source_destroy(&s);
    tu_assert_no_leaks();
}

/* ---- ServeGen ------------------------------------------------------------------------ */

/* A tiny client: window 0 Gamma at 0.5/s, window 600 idle, window 1200 Weibull at 2/s (the
 * last window, 600 s like the one before). */
#define SG_TRACE "0,0.5,1.2,Gamma,0.8,2.5\n600,0,0,,0,0\n1200,2,1.4,Weibull,0.5,1\n"
#define SG_DATASET                                                                           \
    "{\n  \"0\": {\"input_tokens\": \"{10: 0.25, 20: 0.75}\",\n"                             \
    "         \"output_tokens\": \"{0: 0.5, 5: 0.5}\"},\n"                                  \
    "  \"600\": {\"input_tokens\": \"{}\", \"output_tokens\": \"{}\"},\n"                     \
    "  \"1200\": {\"output_tokens\": \"{9: 0.8, 7: 0.2,}\", \"input_tokens\": \"{100: 1.0}\"}\n" \
    "}\n"

/* Write a client under tmpdir/sg/language/tiny: trace text and dataset text (gzipped when
 * gz); returns the ServeGen directory. */
static const char *sg_client(const char *client, const char *trace, const char *dataset, int gz)
{
    static char dir[1024];
    char path[1200];
    snprintf(dir, sizeof dir, "%s/sg", tu_tmpdir());
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/language", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/language/tiny", dir);
    mkdir(path, 0755);
    char name[128];
    snprintf(name, sizeof name, "chunk-%s-trace.csv", client);
    tu_write_file(path, name, trace);
    for (int z = 0; z < 2; z++) { /* remove the other variant */
        char other[1400];
        snprintf(other, sizeof other, "%s/chunk-%s-dataset.json%s", path, client, z ? ".gz" : "");
        remove(other);
    }
    if (!dataset)
        return dir;
    snprintf(name, sizeof name, "chunk-%s-dataset.json%s", client, gz ? ".gz" : "");
    if (!gz) {
        tu_write_file(path, name, dataset);
        return dir;
    }
    char full[1400];
    snprintf(full, sizeof full, "%s/%s", path, name);
    gzFile f = gzopen(full, "wb");
    assert_non_null(f);
    assert_int_equal(gzwrite(f, dataset, (unsigned)strlen(dataset)), (int)strlen(dataset));
    assert_int_equal(gzclose(f), Z_OK);
    return dir;
}

static void check_tiny(const char *dir, double start, const uint64_t want[3])
{
    wl_tenant_spec t = tenant("sg");
    t.servegen = "language/tiny/7";
    t.servegen_start_s = start;
    trace_rec *r = calloc(4000, sizeof *r);
    size_t n = collect_seed(&t, 1, 3, dir, r, 4000);
    uint64_t per[3] = {0}, p20 = 0;
    for (size_t i = 0; i < n; i++) {
        double at = ss_time_to_s(r[i].arrival_ns) + start;
        int w = (int)(at / 600);
        assert_true(w == 0 || w == 2);
        per[w]++;
        if (w == 0) {
            assert_true(r[i].prompt_tokens == 10 || r[i].prompt_tokens == 20);
            assert_true(r[i].output_tokens == 1 || r[i].output_tokens == 5);
            /* One uniform for both fields: prompt 10 (u < .25) means output 0 -> 1. */
            if (r[i].prompt_tokens == 10)
                assert_int_equal(r[i].output_tokens, 1);
            p20 += r[i].prompt_tokens == 20;
        } else {
            assert_int_equal(r[i].prompt_tokens, 100);
            assert_true(r[i].output_tokens == 7 || r[i].output_tokens == 9);
        }
        assert_int_equal(r[i].line, w + 1);
    }
    for (int w = 0; w < 3; w++)
        assert_int_equal(per[w], want[w]);
    if (per[0] > 100)
        assert_true(fabs((double)p20 / (double)per[0] - 0.75) < 0.1);
    free(r);
}

static void test_servegen_tiny(void **state)
{
    (void)state;
    /* ceil(0.5 * 600) - 1 = 299 and ceil(2 * 600) - 1 = 1199 requests. */
    static const uint64_t full[3] = {299, 0, 1199}, late[3] = {149, 0, 1199};
    const char *dir = sg_client("7", SG_TRACE, SG_DATASET, 0);
    check_tiny(dir, 0, full);
    check_tiny(dir, 300, late); /* the first window cut to 300 s: ceil(150) - 1 */
    dir = sg_client("7", SG_TRACE, SG_DATASET, 1);
    check_tiny(dir, 0, full);
    static const uint64_t none[3] = {0, 0, 0};
    check_tiny(dir, 1800, none);
    tu_assert_no_leaks();
}

/* A FIFO as a ServeGen client's trace or dataset is refused at once, "PATH: not a regular
 * file", instead of hanging the run in open() (the alarm fails the test if it does). */
static void test_servegen_fifo(void **state)
{
    (void)state;
    static const char *const files[] = {"chunk-7-trace.csv", "chunk-7-dataset.json"};
    alarm(20);
    for (size_t i = 0; i < 2; i++) {
        const char *dir = sg_client("7", SG_TRACE, SG_DATASET, 0);
        char path[1400];
        snprintf(path, sizeof path, "%s/language/tiny/%s", dir, files[i]);
        assert_int_equal(remove(path), 0);
        assert_int_equal(mkfifo(path, 0600), 0);
        wl_tenant_spec t = tenant("sg");
        t.servegen = "language/tiny/7";
        ss_errbuf eb = {""};
        assert_int_equal(drain(&t, 1, dir, &eb), SS_EPARSE);
        char want[1500];
        snprintf(want, sizeof want, "%s: not a regular file", path);
        if (!strstr(eb.msg, want))
            fail_msg("got '%s', want '...%s'", eb.msg, want);
        assert_int_equal(remove(path), 0);
    }
    alarm(0);
    tu_assert_no_leaks();
}

/* ServeGen bad input: each case names the file and what is wrong. */
static void test_servegen_errors(void **state)
{
    (void)state;
    static const struct {
        const char *trace, *dataset;
        int rc;
        const char *msg; /* substring */
    } cases[] = {
        {"", SG_DATASET, SS_EPARSE, "chunk-7-trace.csv: no windows"},
        {"0,1,1,Gamma,1\n", SG_DATASET, SS_EPARSE, "chunk-7-trace.csv:1: need 6 fields"},
        {"0,x,1,Gamma,1,1\n", SG_DATASET, SS_EPARSE,
         "chunk-7-trace.csv:1: rate: not a number: 'x'"},
        {"0,1,1,Poisson,1,1\n", SG_DATASET, SS_EPARSE,
         "chunk-7-trace.csv:1: pattern: not Gamma, Weibull or empty: 'Poisson'"},
        {"0,1,1,Gamma,0,1\n", SG_DATASET, SS_EPARSE, "trace.csv:1: shape: the pattern needs"},
        {"600,1,1,Gamma,1,1\n0,1,1,Gamma,1,1\n", SG_DATASET, SS_EPARSE,
         "chunk-7-trace.csv:2: timestamp: 0 after 600 (windows must increase)"},
        {"0.5,1,1,Gamma,1,1\n", SG_DATASET, SS_EPARSE, "trace.csv:1: timestamp: not a whole"},
        {"0,1,1,Gamma,1,1\n", "[]", SS_EPARSE, "chunk-7-dataset.json:1: json: expected '{'"},
        {"0,1,1,Gamma,1,1\n", "{}", SS_EPARSE, "chunk-7-dataset.json: no window with token"},
        {"0,1,1,Gamma,1,1\n", "{\"0\": {\"input_tokens\": \"{1: 0.5}\", "
                              "\"output_tokens\": \"{1: 1}\"}}", SS_EPARSE,
         "chunk-7-dataset.json:1: window 0: input_tokens: probabilities sum to 0.5, not 1"},
        {"0,1,1,Gamma,1,1\n", "{\"0\": {\"input_tokens\": \"{1.5: 1}\", "
                              "\"output_tokens\": \"{1: 1}\"}}", SS_EPARSE,
         "window 0: input_tokens: key '1.5' is not a token count in 0..10000000"},
        {"0,1,1,Gamma,1,1\n", "{\"0\": {\"input_tokens\": \"{1: 1}\"}}", SS_EPARSE,
         "window 0: no output_tokens field"},
        {"0,1,1,Gamma,1,1\n", "{\"0\": {\"input_tokens\": \"{1: 1, 1: 0}\", "
                              "\"output_tokens\": \"{1: 1}\"}}", SS_EPARSE,
         "input_tokens: token count 1 appears twice"},
        {"0,1,1,Gamma,1,1\n", "{\"0\": {\"input_tokens\": 5}}", SS_EPARSE,
         "dataset.json:1: json: expected a string (a PMF literal)"},
        {"0,1,1,Gamma,1,1\n", "{\"0\": {\"input_tokens\": \"{1: 1}\", "
                              "\"output_tokens\": \"{1: 1}\"}", SS_EPARSE,
         "dataset.json:1: json: expected ',' or '}'"},
        {"0,1,1,Gamma,1,1\n", "{\"0\": {\"input_tokens\": \"{1: 1}\", "
                              "\"output_tokens\": \"{1: 1\"}}", SS_EPARSE,
         "window 0: output_tokens: expected ',' or '}' at ''"},
        {"0,1,1,Gamma,1,1\n", "{\"0\": {\"input_tokens\": \"{1: 1}\", "
                              "\"output_tokens\": \"{ \"}}", SS_EPARSE,
         "window 0: output_tokens: missing the closing '}'"},
        {"0,1,1,Gamma,1,1\n", "{\"0\": {\"input_tokens\": \"{1: 1}\", "
                              "\"output_tokens\": \"{1: 1}\"}} x", SS_EPARSE,
         "json: characters after the dataset object"},
        {"0,1,1,Gamma,1,1\n", "{\"0\": {\"input_tokens\": \"{1: 1}\", \"output_tokens\": "
                              "\"{1: 1}\"}, \"0\": {}}", SS_EPARSE,
         "window 0 after window 0 (keys must increase)"},
        /* Traffic before the first dataset window with data: an error when reached. */
        {"0,1,1,Gamma,1,1\n", "{\"600\": {\"input_tokens\": \"{1: 1}\", \"output_tokens\": "
                              "\"{1: 1}\"}}", SS_EPARSE,
         "chunk-7-trace.csv:1: window 0 has traffic but the dataset has no token PMFs"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *dir = sg_client("7", cases[i].trace, cases[i].dataset, 0);
        wl_tenant_spec t = tenant("sg");
        t.servegen = "language/tiny/7";
        ss_errbuf eb = {""};
        int rc = drain(&t, 1, dir, &eb);
        if (rc != cases[i].rc || !strstr(eb.msg, cases[i].msg))
            fail_msg("case %zu: rc %d (want %d)\n  got  '%s'\n  want '...%s...'", i, rc,
                     cases[i].rc, eb.msg, cases[i].msg);
    }
    /* Missing files and bad client names. */
    const char *dir = sg_client("8", SG_TRACE, NULL, 0);
    wl_tenant_spec t = tenant("sg");
    t.servegen = "language/tiny/8";
    expect_create_error(&t, 1, dir, SS_ENOTFOUND, "tenant sg: servegen: language/tiny/8 has "
                        "no dataset file ");
    t.servegen = "language/tiny/9";
    expect_create_error(&t, 1, dir, SS_ENOTFOUND, "tenant sg: servegen: language/tiny/9 has "
                        "no dataset file ");
    const char *bad[] = {"language/tiny", "language/tiny/x", "../tiny/7", "a//7", "a/b/7/",
                         "a/b/-7", "a/../7"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        t.servegen = bad[i];
        expect_create_error(&t, 1, dir, SS_EINVAL, "tenant sg: servegen: '");
    }
    t.servegen = "language/tiny/7";
    expect_create_error(&t, 1, NULL, SS_EINVAL, "tenant sg: servegen: no ServeGen directory");
    tu_assert_no_leaks();
}

/* Random mutations of the tiny client's files (byte changes, truncation, a truncated .gz):
 * every run ends in success or a clean error, never a crash; errors are sticky. */
static void test_servegen_random_inputs(void **state)
{
    (void)state;
    ss_rng r;
    ss_rng_seed(&r, 77, 1);
    static const char alphabet[] = "{}[]:,\"\\ 0123456789.eE-x\n";
    char ds[sizeof SG_DATASET], tr[sizeof SG_TRACE];
    for (int it = 0; it < 400; it++) {
        memcpy(ds, SG_DATASET, sizeof ds);
        memcpy(tr, SG_TRACE, sizeof tr);
        char *buf = it % 3 ? ds : tr;
        size_t len = it % 3 ? sizeof ds - 1 : sizeof tr - 1;
        for (int k = 0; k < 1 + it % 4; k++)
            buf[ss_rng_below(&r, len)] = alphabet[ss_rng_below(&r, sizeof alphabet - 1)];
        if (it % 7 == 0)
            buf[ss_rng_below(&r, len)] = '\0';
        const char *dir = sg_client("7", tr, ds, it % 2);
        wl_tenant_spec t = tenant("sg");
        t.servegen = "language/tiny/7";
        wl_source *s = NULL;
        ss_errbuf eb = {""};
        int rc = wl_source_create(&s, &t, 1, 1, dir, &eb);
        trace_rec rec;
        if (rc == SS_OK)
            while ((rc = wl_source_next(s, &rec, &eb)) == 1)
                ;
        if (rc < 0 && s) {
            ss_errbuf eb2 = {""};
            assert_int_equal(wl_source_next(s, &rec, &eb2), rc);
            assert_string_equal(eb2.msg, eb.msg);
        }
        assert_true(rc <= 0);
        assert_true(rc == 0 || eb.msg[0]);
        wl_source_destroy(&s);
    }
    /* A truncated .gz file: 300 windows, each with traffic and its own PMFs. */
    size_t cap = 300 * 120, tl = 0, dl = 0;
    char *trace = malloc(cap), *data = malloc(cap);
    dl += (size_t)snprintf(data, cap, "{");
    for (int w = 0; w < 300; w++) {
        tl += (size_t)snprintf(trace + tl, cap - tl, "%d,0.01,1,Gamma,1,1\n", w * 600);
        dl += (size_t)snprintf(data + dl, cap - dl, "%s\"%d\": {\"input_tokens\": \"{%d: 1}\", "
                               "\"output_tokens\": \"{%d: 1}\"}", w ? ", " : "", w * 600, w + 1,
                               w + 2);
    }
    snprintf(data + dl, cap - dl, "}");
    const char *dir = sg_client("7", trace, data, 1);
    free(trace);
    free(data);
    wl_tenant_spec t = tenant("sg");
    t.servegen = "language/tiny/7";
    trace_rec *recs = calloc(2000, sizeof *recs);
    assert_int_equal(collect_seed(&t, 1, 1, dir, recs, 2000), 300 * 5);
    for (int i = 0; i < 1500; i++) {
        assert_int_equal(recs[i].prompt_tokens, 1 + i / 5);
        assert_int_equal(recs[i].output_tokens, 2 + i / 5);
    }
    free(recs);
    char path[1200];
    snprintf(path, sizeof path, "%s/language/tiny/chunk-7-dataset.json.gz", dir);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(truncate(path, st.st_size / 2), 0);
    ss_errbuf eb = {""};
    assert_int_equal(drain(&t, 1, dir, &eb), SS_EIO);
    assert_non_null(strstr(eb.msg, "chunk-7-dataset.json.gz:1: read error: "));
    tu_assert_no_leaks();
}

static void test_pmf_parser(void **state)
{
    (void)state;
    wl__pmf p = {0};
    ss_errbuf eb = {""};
    int empty = -1;
    const char *s = " { 3: 0.5 , 0: 0.25,9:2.5e-1 } ";
    assert_int_equal(wl__sg_pmf_parse(&p, s, strlen(s), 1, &empty, &eb), 0);
    assert_int_equal(empty, 0);
    assert_int_equal(p.n, 3);
    assert_int_equal(p.val[0], 0);
    assert_int_equal(p.val[1], 3);
    assert_int_equal(p.val[2], 9);
    assert_int_equal(wl__pmf_sample(&p, 0.0), 0);
    assert_int_equal(wl__pmf_sample(&p, 0.2499), 0);
    assert_int_equal(wl__pmf_sample(&p, 0.25), 3);
    assert_int_equal(wl__pmf_sample(&p, 0.7499), 3);
    assert_int_equal(wl__pmf_sample(&p, 0.75), 9);
    assert_int_equal(wl__pmf_sample(&p, 0.999999), 9);
    /* Zero-probability values are not in the support. */
    s = "{5: 0.0, 6: 1.0}";
    assert_int_equal(wl__sg_pmf_parse(&p, s, strlen(s), 1, &empty, &eb), 0);
    assert_int_equal(p.n, 1);
    assert_int_equal(wl__pmf_sample(&p, 0.0), 6);
    s = "{}";
    assert_int_equal(wl__sg_pmf_parse(&p, s, strlen(s), 1, &empty, &eb), 0);
    assert_int_equal(empty, 1);
    /* Non-token fields: float keys, syntax only. */
    s = "{0.0: 0.5, 0.05: 0.5}";
    assert_int_equal(wl__sg_pmf_parse(NULL, s, strlen(s), 0, &empty, &eb), 0);
    static const char *bad[] = {"", "[1]", "{1 0.5}", "{1: inf}", "{1: nan}", "{1: -1}",
                                "{-1: 1}", "{1e3: 1}", "{1: 1} x", "{1: 1,, }", "{0x1: 1}",
                                "{10000001: 1}", "{1: 0.4, 2: 0.4}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (wl__sg_pmf_parse(&p, bad[i], strlen(bad[i]), 1, &empty, &eb) != SS_EPARSE)
            fail_msg("'%s' accepted", bad[i]);
    ss_free(p.val);
    ss_free(p.cum);
    tu_assert_no_leaks();
}

/* A real language client over three busy windows: rate within 10 % and tokens from the
 * support of the dataset window in force. */
static void test_servegen_real(void **state)
{
    (void)state;
    const char *dir = tu_shared_path("traces/servegen");
    const char *ds = tu_shared_path("traces/servegen/language/m-small/chunk-0-dataset.json.gz");
    const char *csv = tu_shared_path("traces/servegen/language/m-small/chunk-0-trace.csv");
    if (!dir || !ds || !csv)
        skip();
    /* The windows at 337800, 338400, 339000 are busy; the PMFs are those of 324000. */
    double rate_sum = 0;
    FILE *f = fopen(csv, "r");
    char line[512];
    while (fgets(line, sizeof line, f)) {
        long ts = strtol(line, NULL, 10);
        if (ts >= 337800 && ts < 339600)
            rate_sum += strtod(strchr(line, ',') + 1, NULL);
    }
    fclose(f);
    wl__sg_dataset *d = NULL;
    wl__sg_window w[2];
    memset(w, 0, sizeof w);
    ss_errbuf eb = {""};
    assert_int_equal(wl__sg_dataset_open(&d, ds, &eb), 0);
    int cur = -1, k = 0, rc;
    while ((rc = wl__sg_dataset_next(d, &w[k], &eb)) == 1 && w[k].ts <= 337800) {
        cur = k;
        k = 1 - k;
    }
    assert_true(rc >= 0 && cur >= 0);
    assert_int_equal(w[cur].ts, 324000);
    wl_tenant_spec t = tenant("real");
    t.servegen = "language/m-small/0";
    t.servegen_start_s = 337800;
    t.duration_s = 1800;
    trace_rec *r = calloc(200000, sizeof *r);
    size_t n = collect_seed(&t, 1, 5, dir, r, 200000);
    double want = rate_sum * 600;
    if (fabs((double)n - want) > 0.1 * want)
        fail_msg("%zu requests, the windows' mean rate gives %.0f", n, want);
    for (size_t i = 0; i < n; i++) {
        uint32_t in = r[i].prompt_tokens, out = r[i].output_tokens, hit = 0;
        for (uint32_t j = 0; j < w[cur].input.n && !hit; j++)
            hit = w[cur].input.val[j] == in || (w[cur].input.val[j] == 0 && in == 1);
        assert_true(hit);
        hit = 0;
        for (uint32_t j = 0; j < w[cur].output.n && !hit; j++)
            hit = w[cur].output.val[j] == out || (w[cur].output.val[j] == 0 && out == 1);
        assert_true(hit);
        assert_true(r[i].arrival_ns < 1800 * SS_NS_PER_S);
    }
    free(r);
    wl__sg_window_free(&w[0]);
    wl__sg_window_free(&w[1]);
    wl__sg_dataset_close(&d);
    tu_assert_no_leaks();
}

/* ---- validation ---------------------------------------------------------------------- */

static void test_validation(void **state)
{
    (void)state;
    const char *path = native_fixture("v.csv", 20, 0);
    trace_gen_spec g = synth(1, 10), bad_g = g;
    bad_g.rate = 0;
    wl_tenant_spec a = tenant("a"), b = tenant("b"), t[2];
    a.trace = b.trace = path;
    a.split = b.split = WL_SPLIT_RR;
#define CASE(mod, rc, msg)                                                                   \
    do {                                                                                     \
        t[0] = a;                                                                            \
        t[1] = b;                                                                            \
        mod;                                                                                 \
        expect_create_error(t, 2, NULL, rc, msg);                                            \
    } while (0)
    CASE(t[1].synth = &g, SS_EINVAL, "tenant b: needs exactly one source (trace, synthetic or "
         "servegen), got 2");
    CASE(t[1].trace = NULL, SS_EINVAL, "tenant b: needs exactly one source");
    CASE((t[1].trace = NULL, t[1].synth = &g), SS_EINVAL,
         "tenant b: split is set but the source is not a trace");
    CASE((t[1].split = WL_SPLIT_NONE, t[1].trace = NULL, t[1].synth = &g,
          t[1].trace_tenant = "x"), SS_EINVAL, "tenant b: trace_tenant is set but the source");
    CASE((t[1].trace = NULL, t[1].synth = &bad_g, t[1].split = WL_SPLIT_NONE), SS_EINVAL,
         "tenant b: synthetic: rate: must be in (0, 1e9]");
    CASE(t[1].name = "a", SS_EINVAL, "tenant a: the name is used twice");
    CASE(t[1].name = "", SS_EINVAL, "tenant 1: needs a name");
    CASE(t[1].split = WL_SPLIT_RANDOM, SS_EINVAL, "tenant b: weight: must be in (0, 1e9], got 0");
    CASE((t[0].split = t[1].split = WL_SPLIT_RANDOM, t[0].weight = 1, t[1].weight = 1,
          t[1].trace_format = "azure"), SS_EINVAL,
         "tenant b: trace_format differs from tenant a's on the shared trace");
    CASE(t[1].rate_scale = 2, SS_EINVAL, "tenant b: rate_scale differs from tenant a's");
    CASE(t[1].trace_spread = 1, SS_EINVAL, "tenant b: trace_spread differs from tenant a's");
    CASE(t[1].trace_tenant = "alpha", SS_EINVAL, "tenant b: trace_tenant differs");
    CASE((t[1].split = WL_SPLIT_CLASS, t[1].class_hi = 5), SS_EINVAL,
         "tenant b: split differs from tenant a's on the shared trace");
    CASE((t[0].split = t[1].split = WL_SPLIT_CLASS, t[0].class_lo = 1, t[0].class_hi = 100,
          t[1].class_lo = 100, t[1].class_hi = 200), SS_EINVAL,
         "tenant b: class 100:200 overlaps tenant a's 1:100 on the shared trace");
    CASE((t[1].split = WL_SPLIT_CLASS, t[1].class_lo = 9, t[1].class_hi = 8), SS_EINVAL,
         "tenant b: class: 9:8 is empty");
    CASE(t[1].rate_scale = 0, SS_EINVAL, "tenant b: rate_scale: must be in (0, 1e6], got 0");
    CASE(t[1].duration_s = -1, SS_EINVAL, "tenant b: duration_s: must be in [0, 9e9] s");
    CASE(t[1].tiers.k = 0, SS_EINVAL, "tenant b: tiers: must be in 1..10, got 0");
    CASE((t[1].tiers.kind = WL_MIX_WEIGHTS, t[1].tiers.k = 2, t[1].tiers.p[0] = 0.3,
          t[1].tiers.p[1] = 0.3), SS_EINVAL, "tenant b: tier_mix: probabilities sum to 0.6");
    CASE((t[1].split = WL_SPLIT_NONE, t[1].trace = "/nonexistent/x.csv"), SS_EIO,
         "tenant b: /nonexistent/x.csv");
    CASE((t[1].split = WL_SPLIT_NONE, t[1].trace_format = "nope"), SS_ENOTFOUND, "tenant b: ");
    CASE((t[1].trace = NULL, t[1].split = WL_SPLIT_NONE, t[1].servegen = "language/x/1"),
         SS_EINVAL, "tenant b: servegen: no ServeGen directory given");
    CASE((t[1].trace = NULL, t[1].split = WL_SPLIT_NONE, t[1].servegen = "language/x/1",
          t[1].servegen_start_s = -5), SS_EINVAL, "tenant b: servegen: no ServeGen");
#undef CASE
    expect_create_error(&a, 0, NULL, SS_EINVAL, "workload: need 1 to 64 tenants, got 0");
    expect_create_error(&a, 65, NULL, SS_EINVAL, "workload: need 1 to 64 tenants, got 65");
    /* Split partners with different durations and limits are fine; a partner with split
     * none reads its own copy. */
    t[0] = a;
    t[1] = b;
    t[1].limit = 3;
    t[0].duration_s = 0.55;
    trace_rec r[40];
    size_t n = collect(t, 2, r, 40);
    assert_int_equal(n, 3 + 3); /* a: rows 0, 2, 4 (row 6 is at 0.6 s); b: rows 1, 3, 5 */
    tu_assert_no_leaks();
}

/* ---- allocation failures ------------------------------------------------------------- */

static int run_mixed(const wl_tenant_spec *t, uint32_t n, const char *dir, uint64_t *count,
                     ss_errbuf *eb)
{
    wl_source *s = NULL;
    int rc = wl_source_create(&s, t, n, 1, dir, eb);
    trace_rec r;
    *count = 0;
    if (rc == SS_OK)
        while ((rc = wl_source_next(s, &r, eb)) == 1)
            (*count)++;
    wl_source_destroy(&s);
    return rc;
}

static void test_alloc_failures(void **state)
{
    (void)state;
    const char *mc = mooncake_fixture(120);
    const char *dir = sg_client("7", SG_TRACE, SG_DATASET, 1);
    trace_gen_spec g = synth(50, 40);
    wl_tenant_spec t[4] = {tenant("a"), tenant("b"), tenant("s"), tenant("g")};
    t[0].trace = t[1].trace = mc;
    t[0].split = t[1].split = WL_SPLIT_RR;
    t[2].synth = &g;
    t[3].servegen = "language/tiny/7";
    t[3].limit = 50;
    ss_errbuf eb = {""};
    uint64_t want = 0;
    assert_int_equal(run_mixed(t, 4, dir, &want, &eb), 0);
    assert_int_equal(want, 120 + 40 + 50);
    for (uint64_t n = 1;; n++) {
        uint64_t before = ss_alloc_count(), got = 0;
        ss_alloc_fail_after(n);
        int rc = run_mixed(t, 4, dir, &got, &eb);
        ss_alloc_fail_after(0);
        uint64_t used = ss_alloc_count() - before;
        tu_assert_no_leaks();
        if (rc == SS_OK) {
            assert_true(used < n);
            assert_int_equal(got, want);
            break;
        }
        assert_int_equal(rc, SS_ENOMEM);
        if (!strstr(eb.msg, "out of memory"))
            fail_msg("n=%" PRIu64 ": %s", n, eb.msg);
        assert_true(n < 10000);
    }
    tu_assert_no_leaks();
}

static int group_teardown(void **state)
{
    (void)state;
    tu_tmpdir_cleanup();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tier_mix_tables),
        cmocka_unit_test(test_tier_mix_errors),
        cmocka_unit_test(test_tier_draw_frequencies),
        cmocka_unit_test(test_merge_synthetic),
        cmocka_unit_test(test_merge_ties),
        cmocka_unit_test(test_determinism_independence),
        cmocka_unit_test(test_split_rr),
        cmocka_unit_test(test_split_random),
        cmocka_unit_test(test_split_class),
        cmocka_unit_test(test_trace_tenant_filter),
        cmocka_unit_test(test_shaping),
        cmocka_unit_test(test_trace_tiers),
        cmocka_unit_test(test_prefix_blocks),
        cmocka_unit_test(test_servegen_tiny),
        cmocka_unit_test(test_servegen_errors),
        cmocka_unit_test(test_servegen_fifo),
        cmocka_unit_test(test_servegen_random_inputs),
        cmocka_unit_test(test_pmf_parser),
        cmocka_unit_test(test_servegen_real),
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests_name("workload", tests, NULL, group_teardown);
}
