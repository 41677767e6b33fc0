/* Llumnix and multi-tier Llumnix: live migration happens under imbalance and never loses or
 * duplicates a request, KV capacity holds at every event (destination blocks are reserved
 * before each copy), migrations that cannot finish are aborted and counted, tier 0 beats the
 * lowest tier on p99 TTFT under load, auto-scaling activates standby containers, and runs are
 * deterministic. */
#include "support/test_util.h"

#include "catalog/catalog.h"
#include "core/ss_alloc.h"
#include "core/ss_rng.h"
#include "gsim/gsim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef tu_sim fx; /* the shared simulator fixture (tests/support) */

static int setup(void **state)
{
    if (tu_sim_fixture_setup(state))
        return -1;
    fx *f = *state;
    f->cfg.cluster = "llumnix";
    f->ten[0] = (gsim_tenant){.name = "chat", .model = catalog_model(f->cat, "llama-2-7b"), .tp = 1,
                           .pp = 1, .replicas = 4, .tiers = 1};
    f->cfg.tenants = f->ten;
    f->cfg.n_tenants = 1;
    return 0;
}


/* Poisson arrivals with heavy-tailed outputs (imbalance builds up), tiers cycling over k. */
static trace_rec *synth(size_t n, double rate, uint32_t k, uint64_t seed)
{
    trace_rec *r = calloc(n, sizeof *r);
    ss_rng a, l;
    ss_rng_seed(&a, seed, 1);
    ss_rng_seed(&l, seed, 2);
    double t = 0;
    for (size_t i = 0; i < n; i++) {
        t += ss_rng_exp(&a, 1.0 / rate);
        r[i] = (trace_rec){.id = i, .arrival_ns = ss_time_from_s(t),
                           .prompt_tokens = (uint32_t)(1000 * exp(0.8 * ss_rng_normal(&l))) + 1,
                           .output_tokens = (uint32_t)(150 * exp(1.2 * ss_rng_normal(&l))) + 1,
                           .tier = (uint8_t)(ss_rng_below(&l, k))};
    }
    return r;
}


static void test_migration_conserves_requests_and_kv(void **state)
{
    fx *f = *state;
    f->cfg.routing = "rr"; /* blind dispatch: imbalance for migration to repair */
    f->cfg.check = 1;      /* KV and list invariants after every event */
    f->cfg.gpu_mem_util = 0.35;
    enum { N = 2500 };
    trace_rec *r = synth(N, 14, 1, 4);
    tu_collect c = tu_collect_new(N);
    gsim *g = tu_sim_run(f, r, N, &c);
    const metrics *m = gsim_metrics(g);
    assert_true(m->migrations > 0);
    assert_int_equal(c.n_calls, N);
    assert_int_equal(c.dup, 0);
    uint64_t migrated = 0;
    for (size_t i = 0; i < N; i++) {
        migrated += c.r[i].migrations;
        if (!c.r[i].rejected) /* every token once: exactly the output asked for */
            assert_int_equal(c.r[i].generated, r[i].output_tokens);
    }
    assert_int_equal(migrated, m->migrations);
    assert_true(m->migration_bytes > 0);
    const gmg *G = gsim_graph(g);
    for (uint32_t k = 0; k < G->n_ctrs; k++) {
        assert_int_equal(G->ctrs[k].blocks_reserved, 0);
        assert_int_equal(G->ctrs[k].blocks_in_transit, 0);
        assert_int_equal(G->ctrs[k].blocks_free, G->ctrs[k].blocks_total);
    }
    printf("# %llu migrations, %llu aborted, %.2f GiB\n", (unsigned long long)m->migrations,
           (unsigned long long)m->migrations_aborted, m->migration_bytes / 1073741824.0);
    gsim_destroy(&g);
    free(r);
    free(c.r);
}

static void test_migration_aborts_are_counted(void **state)
{
    fx *f = *state;
    f->cfg.routing = "rr";
    f->cfg.check = 1;
    /* Tiny outputs: many requests finish while their migration is still copying. */
    ss_params_set(f->params, "migrate_period_s", "0.05");
    enum { N = 2000 };
    trace_rec *r = synth(N, 20, 1, 9);
    for (size_t i = 0; i < N; i++)
        r[i].output_tokens = 2 + (uint32_t)(i % 5);
    tu_collect c = tu_collect_new(N);
    gsim *g = tu_sim_run(f, r, N, &c);
    const metrics *m = gsim_metrics(g);
    assert_true(m->migrations_aborted > 0);
    assert_int_equal(c.n_calls, N);
    assert_int_equal(c.dup, 0);
    gsim_destroy(&g);
    free(r);
    free(c.r);
}

static void test_tier0_beats_lowest_tier(void **state)
{
    fx *f = *state;
    f->cfg.cluster = "llumnix-tiers";
    f->ten[0].tiers = 4;
    enum { N = 4000 };
    trace_rec *r = synth(N, 22, 4, 2); /* overloaded: queues build */
    gsim *g = tu_sim_run(f, r, N, NULL);
    const metrics *m = gsim_metrics(g);
    metrics_group_summary t0, t3;
    metrics_summarize_group(&m->tiers[0], 1, &t0);
    metrics_summarize_group(&m->tiers[3], 1, &t3);
    printf("# TTFT p99: tier 0 %.0f ms, tier 3 %.0f ms\n", t0.ttft_ms.p99, t3.ttft_ms.p99);
    assert_true(t0.requests > 500 && t3.requests > 500);
    assert_true(t0.ttft_ms.p99 < t3.ttft_ms.p99);
    gsim_destroy(&g);
    free(r);
}

static void test_autoscaling_activates_standby(void **state)
{
    fx *f = *state;
    f->ten[0].replicas = 1;
    f->ten[0].max_replicas = 3;
    ss_params_set(f->params, "scale_period_s", "5");
    enum { N = 1500 };
    trace_rec *r = synth(N, 8, 1, 6);
    tu_collect c = tu_collect_new(N);
    gsim *g = tu_sim_run(f, r, N, &c);
    const metrics *m = gsim_metrics(g);
    assert_int_equal(gsim_graph(g)->n_ctrs, 3); /* the two standby containers exist */
    assert_true(m->scale_ups >= 1);
    uint32_t used = 0;
    for (size_t i = 0; i < N; i++)
        used |= 1u << c.r[i].container;
    assert_true(used & ~1u); /* requests ran on scaled-up containers */
    assert_int_equal(c.n_calls, N);
    gsim_destroy(&g);
    free(r);
    free(c.r);
}

/* A burst that needs the standby containers, then a trickle: the scaled-up containers go back
 * once idle, but not within scale_cooldown_s of becoming ready. */
static size_t burst_then_trickle(trace_rec **out)
{
    enum { BURST = 1500, TRICKLE = 40 };
    trace_rec *r = synth(BURST + TRICKLE, 8, 1, 6);
    ss_time end = r[BURST - 1].arrival_ns;
    for (size_t i = 0; i < TRICKLE; i++) /* one short request every 10 s */
        r[BURST + i] = (trace_rec){.id = BURST + i,
                                   .arrival_ns = end + ss_time_from_s(10.0 * (double)(i + 1)),
                                   .prompt_tokens = 100, .output_tokens = 10};
    *out = r;
    return BURST + TRICKLE;
}

static uint64_t scale_downs_with_cooldown(fx *f, const char *cooldown)
{
    f->ten[0].replicas = 1;
    f->ten[0].max_replicas = 3;
    ss_params_set(f->params, "scale_period_s", "5");
    ss_params_set(f->params, "scale_cooldown_s", cooldown);
    trace_rec *r;
    size_t n = burst_then_trickle(&r);
    gsim *g = tu_sim_run(f, r, n, NULL);
    const metrics *m = gsim_metrics(g);
    assert_true(m->scale_ups >= 1);
    uint64_t downs = m->scale_downs;
    gsim_destroy(&g);
    free(r);
    return downs;
}

static void test_scale_down_after_burst(void **state)
{
    assert_true(scale_downs_with_cooldown(*state, "0") >= 1);
}

static void test_scale_down_waits_for_cooldown(void **state)
{
    /* the trickle lasts 400 s; a longer cooldown keeps every scaled-up container */
    assert_int_equal(scale_downs_with_cooldown(*state, "100000"), 0);
}

static void test_deterministic(void **state)
{
    fx *f = *state;
    f->cfg.cluster = "llumnix-tiers";
    f->ten[0].tiers = 3;
    enum { N = 1500 };
    trace_rec *r = synth(N, 16, 3, 12);
    tu_collect a = tu_collect_new(N), b = tu_collect_new(N);
    gsim *g1 = tu_sim_run(f, r, N, &a), *g2 = tu_sim_run(f, r, N, &b);
    assert_memory_equal(a.r, b.r, N * sizeof(metrics_req));
    assert_int_equal(gsim_metrics(g1)->migrations, gsim_metrics(g2)->migrations);
    gsim_destroy(&g1);
    gsim_destroy(&g2);
    free(r);
    free(a.r);
    free(b.r);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, tu_sim_fixture_teardown)
int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_migration_conserves_requests_and_kv),
        T(test_migration_aborts_are_counted),
        T(test_tier0_beats_lowest_tier),
        T(test_autoscaling_activates_standby),
        T(test_scale_down_after_burst),
        T(test_scale_down_waits_for_cooldown),
        T(test_deterministic),
    };
    return cmocka_run_group_tests_name("llumnix", tests, NULL, NULL);
}
