/* Multi-tenant runs: requests stay on their tenant's containers, per-tenant and per-tier
 * metrics add up, SLA violations are judged exactly (TTFT, the request's own TBT p99, E2E,
 * rejection), the warm-up excludes early arrivals, and container-level re-allocation moves a
 * container from a light tenant to an overloaded one without losing a request. */
#include "support/test_util.h"

#include "catalog/catalog.h"
#include "core/ss_alloc.h"
#include "core/ss_rng.h"
#include "gsim/gsim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct collect {
    metrics_req *r;
    size_t n;
    const gsim *g;
    int wrong_tenant; /* a request ran on another tenant's container */
} collect;

static int collect_req(void *ud, const metrics_req *r, ss_errbuf *eb)
{
    (void)eb;
    collect *c = ud;
    c->r[r->trace_id] = *r;
    c->n++;
    if (!r->rejected && gsim_graph(c->g)->ctrs[r->container].tenant != r->tenant &&
        gsim_metrics(c->g)->reallocations == 0)
        c->wrong_tenant++;
    return 0;
}

typedef tu_sim fx; /* the shared simulator fixture (tests/support) */

static int setup(void **state)
{
    if (tu_sim_fixture_setup(state))
        return -1;
    fx *f = *state;
    f->ten[0] = (gsim_tenant){.name = "chat", .model = catalog_model(f->cat, "llama-2-7b"),
                              .tp = 1, .pp = 1, .replicas = 2, .tiers = 2};
    f->ten[1] = (gsim_tenant){.name = "code", .model = catalog_model(f->cat, "llama-3-8b"),
                              .tp = 1, .pp = 1, .replicas = 1, .tiers = 1};
    f->ten[2] = (gsim_tenant){.name = "big", .model = catalog_model(f->cat, "llama-2-13b"),
                              .tp = 2, .pp = 1, .replicas = 1, .tiers = 1};
    f->cfg.tenants = f->ten;
    f->cfg.n_tenants = 3;
    return 0;
}


/* n requests of n_tenants tenants, Poisson at `rate` each, lognormal lengths, tiers 0/1. */
static trace_rec *synth(size_t n, uint32_t n_tenants, double rate, uint64_t seed)
{
    trace_rec *r = calloc(n, sizeof *r);
    ss_rng a, l;
    ss_rng_seed(&a, seed, 1);
    ss_rng_seed(&l, seed, 2);
    double t = 0;
    for (size_t i = 0; i < n; i++) {
        t += ss_rng_exp(&a, 1.0 / (rate * n_tenants));
        r[i] = (trace_rec){.id = i, .arrival_ns = ss_time_from_s(t),
                           .prompt_tokens = (uint32_t)(800 * exp(0.6 * ss_rng_normal(&l))) + 1,
                           .output_tokens = (uint32_t)(120 * exp(0.7 * ss_rng_normal(&l))) + 1,
                           .tenant = (uint16_t)(i % n_tenants), .tier = (uint8_t)(i % 3 == 0)};
    }
    return r;
}

static gsim *run(fx *f, const trace_rec *recs, size_t n, collect *c)
{
    gsim *g = NULL;
    ss_errbuf eb;
    if (gsim_create(&g, &f->cfg, &eb))
        fail_msg("gsim_create: %s", eb.msg);
    tu_recs src = {recs, n, 0};
    c->g = g;
    if (gsim_run(g, tu_recs_next, &src, collect_req, c, &eb))
        fail_msg("gsim_run: %s", eb.msg);
    return g;
}

static void test_tenants_keep_to_their_containers(void **state)
{
    fx *f = *state;
    enum { N = 1500 };
    trace_rec *r = synth(N, 3, 1.0, 3);
    collect c = {calloc(N, sizeof(metrics_req)), 0, NULL, 0};
    gsim *g = run(f, r, N, &c);
    const gmg *G = gsim_graph(g);
    assert_int_equal(G->n_ctrs, 4);
    assert_int_equal(G->n_gpus, 5); /* 2 + 1 + a TP-2 container */
    assert_int_equal(c.wrong_tenant, 0);
    const metrics *m = gsim_metrics(g);
    uint64_t per[3] = {0};
    for (size_t i = 0; i < N; i++)
        per[r[i].tenant]++;
    for (uint32_t t = 0; t < 3; t++)
        assert_int_equal(m->tenants[t].requests, per[t]);
    assert_int_equal(m->tenants[0].requests + m->tenants[1].requests + m->tenants[2].requests,
                     m->all.requests);
    assert_int_equal(m->tiers[0].requests + m->tiers[1].requests, N);
    assert_int_equal(m->n_tiers, 2);
    /* tenant "code" has one tier: its tier-1 requests were clamped to tier 0 */
    for (size_t i = 0; i < N; i++)
        if (r[i].tenant == 1)
            assert_int_equal(c.r[i].tier, 0);
    gsim_destroy(&g);
    free(r);
    free(c.r);
}

/* One request alone: its timings are known, so each bound can be set just below or above. */
static void test_sla_judged_exactly(void **state)
{
    fx *f = *state;
    f->cfg.n_tenants = 1;
    f->ten[0].replicas = 1;
    trace_rec one = {.id = 0, .prompt_tokens = 500, .output_tokens = 101};
    collect c = {calloc(1, sizeof(metrics_req)), 0, NULL, 0};
    gsim *g = run(f, &one, 1, &c);
    metrics_req base = c.r[0];
    assert_int_equal(base.sla, 0); /* no bounds: nothing violated */
    gsim_destroy(&g);
    ss_time ttft = base.first_token, e2e = base.finish;
    /* The 100 gaps grow with the context; the second largest is the p99 (rank 99 of 100). */
    struct {
        ss_time ttft, tbt, e2e;
        uint8_t want;
    } cases[] = {
        {ttft, 0, 0, 0}, {ttft - 1, 0, 0, 1}, {0, 0, e2e, 0}, {0, 0, e2e - 1, 4},
        {0, base.tbt_max, 0, 0}, {0, base.tbt_max - 1, 0, 0}, /* only the largest gap is over */
        {0, (base.tbt_sum / 100) / 2, 0, 2},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        f->ten[0].sla[0] = (gsim_sla){cases[k].ttft, cases[k].tbt, cases[k].e2e};
        g = run(f, &one, 1, &c);
        if (c.r[0].sla != cases[k].want)
            fail_msg("case %zu: sla bits %u, want %u", k, c.r[0].sla, cases[k].want);
        assert_int_equal(gsim_metrics(g)->all.sla_violations, cases[k].want != 0);
        gsim_destroy(&g);
    }
    free(c.r);
}

static void test_warmup_not_measured(void **state)
{
    fx *f = *state;
    enum { N = 600 };
    trace_rec *r = synth(N, 3, 1.0, 8);
    f->cfg.warmup = r[199].arrival_ns + 1; /* the first 200 arrivals are warm-up */
    collect c = {calloc(N, sizeof(metrics_req)), 0, NULL, 0};
    gsim *g = run(f, r, N, &c);
    const metrics *m = gsim_metrics(g);
    assert_int_equal(m->arrived, N);
    assert_int_equal(m->all.requests, N - 200);
    assert_int_equal(c.n, N); /* every request is still reported */
    for (size_t i = 0; i < N; i++)
        assert_int_equal(c.r[i].measured, i >= 200);
    gsim_destroy(&g);
    free(r);
    free(c.r);
}

/* Tenant "chat" is flooded, "code" (same TP, no PP) idles with 3 containers: re-allocation
 * moves containers to chat, which then sees a better p99 TTFT; nothing is lost. */
static void test_reallocation_moves_containers(void **state)
{
    fx *f = *state;
    f->cfg.n_tenants = 2;
    f->ten[0].replicas = 1;
    f->ten[0].max_replicas = 3;
    f->ten[1].replicas = 3;
    enum { N = 3000 };
    trace_rec *r = synth(N, 1, 12.0, 5); /* all tenant 0 */
    for (size_t i = 0; i < N; i += 20)
        r[i].tenant = 1; /* a trickle for code */
    double p99[2];
    for (int realloc = 0; realloc < 2; realloc++) {
        ss_params_set(f->params, "realloc_period_s", realloc ? "10" : "0");
        f->cfg.check = realloc; /* invariants after every event while containers move */
        collect c = {calloc(N, sizeof(metrics_req)), 0, NULL, 0};
        gsim *g = run(f, r, N, &c);
        const metrics *m = gsim_metrics(g);
        metrics_group_summary s;
        metrics_summarize_group(&m->tenants[0], 1, &s);
        p99[realloc] = s.ttft_ms.p99;
        assert_int_equal(c.n, N);
        if (realloc) {
            assert_int_equal(m->reallocations, 2); /* chat reaches its max_replicas */
            uint32_t chat = 0;
            for (uint32_t k = 0; k < gsim_graph(g)->n_ctrs; k++)
                chat += gsim_graph(g)->ctrs[k].tenant == 0;
            assert_int_equal(chat, 3);
        } else {
            assert_int_equal(m->reallocations, 0);
        }
        gsim_destroy(&g);
        free(c.r);
    }
    if (!(p99[1] < p99[0] / 2))
        fail_msg("chat p99 TTFT %.0f ms with re-allocation vs %.0f ms without", p99[1], p99[0]);
    free(r);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, tu_sim_fixture_teardown)
int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_tenants_keep_to_their_containers),
        T(test_sla_judged_exactly),
        T(test_warmup_not_measured),
        T(test_reallocation_moves_containers),
    };
    return cmocka_run_group_tests_name("tenants", tests, NULL, NULL);
}
