/* Prefix caching per instance, its ceiling and prefix-affinity routing: on a trace of three
 * interleaved sessions whose answer is known, round-robin splits each session over two
 * instances and affinity keeps it on one, with the exact hit rates, per instance and per tenant,
 * of a model of the construction; the ceiling of that model (an unbounded cache shared by the
 * instances) for both; the ceiling equal to the real hit rate on one instance that never
 * evicts; under pressure (evictions, preemptions) the ceiling above the real rate and the
 * instances adding up to the tenant, two runs of affinity routing identical with every
 * invariant checked; and a what-if fork's affinity routing following the fork's cache. */
#include "support/test_util.h"

#include "core/ss_alloc.h"
#include "gmg/gmg.h"
#include "gsim/gsim.h"
#include "policy/policy.h"

#include <stdlib.h>
#include <string.h>

typedef tu_sim fx;

static int setup(void **state)
{
    if (tu_sim_fixture_setup(state))
        return -1;
    fx *f = *state;
    f->cfg.replicas = 2;
    f->cfg.check = 1;
    f->cfg.prefix_cache = GSIM_PREFIX_ON;
    return 0;
}


/* ---- three interleaved sessions ------------------------------------------------------------ */

enum { SESSIONS = 3, TURNS = 5, N_REQ = SESSIONS * TURNS, BT = 16 };

/* Session s's turn k: a prompt growing by 64 tokens a turn (session 0's much longer than the
 * others). Request a = 3k + s arrives at 100 a seconds, but the first turns come 1 ms apart. */
static uint32_t prompt_of(uint32_t s, uint32_t k)
{
    static const uint32_t base[SESSIONS] = {2000, 200, 300};
    return base[s] + 64 * k;
}

static void sessions_trace(trace_rec r[N_REQ])
{
    for (uint32_t a = 0; a < N_REQ; a++) {
        uint32_t s = a % SESSIONS, k = a / SESSIONS;
        r[a] = (trace_rec){.id = a, .prompt_tokens = prompt_of(s, k), .output_tokens = 4,
                           .session_id = 10 + s,
                           .arrival_ns = k ? ss_time_from_s(100.0 * a) : a * SS_NS_PER_MS};
    }
}

/* What the construction gives when request a goes to instance inst[a]: every earlier turn has
 * finished (and cached its full prompt blocks) when the next one of its session arrives, and a
 * hit is the longest prefix cached there (sessions share blocks (session, j)), at most
 * (prompt - 1) / 16 blocks (one token is always computed). per[i] is instance i's, *all the
 * run's, with the ceiling: the same over the union of both instances' blocks. */
static void expected(const uint32_t inst[N_REQ], uint32_t n_inst, metrics_prefix per[2],
                     metrics_prefix *all)
{
    uint32_t reg[2][SESSIONS] = {{0}}, reg_all[SESSIONS] = {0};
    memset(per, 0, 2 * sizeof *per);
    memset(all, 0, sizeof *all);
    for (uint32_t a = 0; a < N_REQ; a++) {
        uint32_t s = a % SESSIONS, p = prompt_of(s, a / SESSIONS), i = inst[a] % n_inst;
        uint32_t cap = (p - 1) / BT, full = p / BT;
        uint32_t hit = reg[i][s] < cap ? reg[i][s] : cap;
        uint32_t ceil_hit = reg_all[s] < cap ? reg_all[s] : cap;
        metrics_prefix *ps[2] = {&per[i], all};
        for (int k = 0; k < 2; k++) {
            ps[k]->lookups++;
            ps[k]->query_tokens += p;
            ps[k]->query_blocks += full;
            ps[k]->hit_blocks += hit;
            ps[k]->hit_tokens += hit * BT;
            ps[k]->saved_tokens += hit * BT;
        }
        all->ceiling_hit_blocks += ceil_hit;
        all->ceiling_hit_tokens += ceil_hit * BT;
        if (full > reg[i][s])
            reg[i][s] = full;
        if (full > reg_all[s])
            reg_all[s] = full;
    }
}

static void assert_counts(const metrics_prefix *got, const metrics_prefix *want, const char *what)
{
    if (got->lookups != want->lookups || got->query_tokens != want->query_tokens ||
        got->query_blocks != want->query_blocks || got->hit_tokens != want->hit_tokens ||
        got->hit_blocks != want->hit_blocks || got->saved_tokens != want->saved_tokens ||
        got->evictions != want->evictions)
        fail_msg("%s: %llu lookups, %llu/%llu tokens, %llu/%llu blocks, %llu saved, %llu "
                 "evicted; expected %llu, %llu/%llu, %llu/%llu, %llu, %llu", what,
                 (unsigned long long)got->lookups, (unsigned long long)got->hit_tokens,
                 (unsigned long long)got->query_tokens, (unsigned long long)got->hit_blocks,
                 (unsigned long long)got->query_blocks, (unsigned long long)got->saved_tokens,
                 (unsigned long long)got->evictions, (unsigned long long)want->lookups,
                 (unsigned long long)want->hit_tokens, (unsigned long long)want->query_tokens,
                 (unsigned long long)want->hit_blocks, (unsigned long long)want->query_blocks,
                 (unsigned long long)want->saved_tokens, (unsigned long long)want->evictions);
}

/* The run's, the tenant's and each instance's counters against the model's. */
static void check_run(gsim *g, const uint32_t inst[N_REQ], uint32_t n_inst, const char *what)
{
    metrics_prefix per[2], all;
    expected(inst, n_inst, per, &all);
    const metrics *m = gsim_metrics(g);
    assert_counts(&m->all.prefix, &all, what);
    assert_counts(&m->tenants[0].prefix, &all, what);
    assert_int_equal(m->all.prefix.ceiling_hit_tokens, all.ceiling_hit_tokens);
    assert_int_equal(m->all.prefix.ceiling_hit_blocks, all.ceiling_hit_blocks);
    assert_int_equal(m->tenants[0].prefix.ceiling_hit_tokens, all.ceiling_hit_tokens);
    for (uint32_t i = 0; i < n_inst; i++)
        assert_counts(gsim_ctr_prefix(g, i), &per[i], what);
    assert_null(gsim_ctr_prefix(g, n_inst));
}

static void test_affinity_beats_rr_by_the_construction(void **state)
{
    fx *f = *state;
    trace_rec r[N_REQ];
    sessions_trace(r);
    /* rr: request a to instance a % 2, so a session's consecutive turns (3 apart) alternate */
    uint32_t rr[N_REQ], aff[N_REQ];
    for (uint32_t a = 0; a < N_REQ; a++)
        rr[a] = a % 2;
    f->cfg.routing = "rr";
    gsim *g = tu_sim_run(f, r, N_REQ, NULL);
    check_run(g, rr, 2, "rr");
    metrics_prefix per[2], want_rr, want_aff;
    expected(rr, 2, per, &want_rr);
    gsim_destroy(&g);
    /* affinity: nothing is cached when the first turns arrive, so the load decides: session 0
     * to instance 0 (both idle: the lowest id), session 1 to instance 1 (instance 0 holds
     * session 0's 2,000-token prompt), session 2 to instance 1 (its 200 tokens weigh less than
     * the 2,000); afterwards everything has finished when a turn arrives (no load) and the
     * instance holding the session's prefix has the fewest blocks to prefill. */
    static const uint32_t first[SESSIONS] = {0, 1, 1};
    for (uint32_t a = 0; a < N_REQ; a++)
        aff[a] = first[a % SESSIONS];
    f->cfg.routing = "affinity";
    g = tu_sim_run(f, r, N_REQ, NULL);
    check_run(g, aff, 2, "affinity");
    expected(aff, 2, per, &want_aff);
    gsim_destroy(&g);
    /* what the construction says about the two: rr hits only the turn before last, affinity
     * the last turn, which is everything the unbounded shared cache (the ceiling) finds */
    assert_true(want_aff.hit_tokens > want_rr.hit_tokens);
    assert_int_equal(want_aff.hit_tokens, want_aff.ceiling_hit_tokens);
    assert_int_equal(want_rr.ceiling_hit_tokens, want_aff.ceiling_hit_tokens);
}

/* One instance whose cache never evicts: the ceiling is the real hit rate. */
static void test_ceiling_is_the_hit_rate_on_one_instance(void **state)
{
    fx *f = *state;
    f->cfg.replicas = 1;
    trace_rec r[N_REQ];
    sessions_trace(r);
    uint32_t one[N_REQ] = {0};
    gsim *g = tu_sim_run(f, r, N_REQ, NULL);
    check_run(g, one, 1, "one instance");
    const metrics_prefix *p = &gsim_metrics(g)->all.prefix;
    assert_int_equal(p->evictions, 0);
    assert_int_equal(p->ceiling_hit_tokens, p->hit_tokens);
    assert_int_equal(p->ceiling_hit_blocks, p->hit_blocks);
    /* the set holds every session's longest prompt's full blocks */
    uint64_t blocks = 0;
    for (uint32_t s = 0; s < SESSIONS; s++)
        blocks += prompt_of(s, TURNS - 1) / BT;
    assert_int_equal(gsim_ceiling_blocks(g, 0), blocks);
    assert_int_equal(gsim_ceiling_blocks(g, 1), 0);
    gsim_destroy(&g);
}

/* ---- under pressure ------------------------------------------------------------------------ */

/* Many sessions of long prompts at a load that fills the KV cache. */
static trace_rec *pressure(size_t n, double rate, uint64_t seed)
{
    trace_rec *r = tu_synth_conv(n, rate, seed, 1);
    for (size_t i = 0; i < n; i++) {
        r[i].session_id = 1 + (i * 7 + seed) % 23;
        r[i].prompt_tokens = 600 + (uint32_t)(r[i].session_id * 97 % 1500);
    }
    return r;
}

/* The instances add up to the tenant (no container changes hands here); the ceiling is at
 * least the real hit rate. */
static void check_sums(gsim *g, const char *what)
{
    const gmg *G = gsim_graph(g);
    const metrics_prefix *t = &gsim_metrics(g)->tenants[0].prefix;
    metrics_prefix sum = {0};
    for (uint32_t i = 0; i < G->n_ctrs; i++) {
        const metrics_prefix *p = gsim_ctr_prefix(g, i);
        sum.lookups += p->lookups;
        sum.query_tokens += p->query_tokens;
        sum.query_blocks += p->query_blocks;
        sum.hit_tokens += p->hit_tokens;
        sum.hit_blocks += p->hit_blocks;
        sum.saved_tokens += p->saved_tokens;
        sum.evictions += p->evictions;
    }
    assert_counts(&sum, t, what);
    if (t->ceiling_hit_tokens < t->hit_tokens || t->ceiling_hit_blocks < t->hit_blocks)
        fail_msg("%s: ceiling %llu tokens below the real %llu", what,
                 (unsigned long long)t->ceiling_hit_tokens, (unsigned long long)t->hit_tokens);
}

static void test_pressure_sums_ceiling_and_determinism(void **state)
{
    fx *f = *state;
    enum { N = 600 };
    f->cfg.gpu_mem_util = 0.3; /* a small KV pool: evictions and preemptions */
    trace_rec *r = pressure(N, 40, 3);
    static const char *const routers[] = {"rr", "lor", "affinity"};
    for (size_t k = 0; k < 3; k++) {
        f->cfg.routing = routers[k];
        tu_collect a = tu_collect_new(N), b = tu_collect_new(N);
        gsim *g1 = tu_sim_run(f, r, N, &a), *g2 = tu_sim_run(f, r, N, &b);
        check_sums(g1, routers[k]);
        const metrics_prefix *p = &gsim_metrics(g1)->all.prefix;
        if (!p->hit_tokens || !p->evictions || !gsim_metrics(g1)->all.preemptions)
            fail_msg("%s: not under pressure", routers[k]);
        if (memcmp(a.r, b.r, N * sizeof *a.r))
            fail_msg("%s: two runs differ", routers[k]);
        assert_memory_equal(&gsim_metrics(g1)->all.prefix, &gsim_metrics(g2)->all.prefix,
                            sizeof(metrics_prefix));
        for (uint32_t i = 0; i < 2; i++)
            assert_memory_equal(gsim_ctr_prefix(g1, i), gsim_ctr_prefix(g2, i),
                                sizeof(metrics_prefix));
        gsim_destroy(&g1);
        gsim_destroy(&g2);
        free(a.r);
        free(b.r);
    }
    free(r);
}

/* ---- what-if forks ------------------------------------------------------------------------- */

/* A fork taken while session 5's first request is still prefilling on instance 0 (so nothing
 * of it is cached yet) and run to the end learns its prompt there. The affinity router asked
 * about a second request of session 5 picks instance 1 on the replay's graph at the fork (no
 * cache anywhere, instance 0 busy) but instance 0 on the fork's, which holds the prefix: routing
 * reads the cache of the graph it is given, and a fork's is its own. */
static void test_fork_routing_sees_the_forked_cache(void **state)
{
    fx *f = *state;
    f->cfg.routing = "affinity";
    trace_rec r[1] = {{.id = 0, .prompt_tokens = 3000, .output_tokens = 200, .session_id = 5}};
    ss_errbuf eb;
    gsim *g = NULL, *w = NULL;
    assert_int_equal(gsim_create(&g, &f->cfg, &eb), 0);
    tu_recs src = {r, 1, 0};
    assert_int_equal(gsim_start(g, tu_recs_next, &src, NULL, NULL, &eb), 0);
    assert_int_equal(gsim_advance(g, SS_NS_PER_MS, &eb), 0);
    const gmg *G = gsim_graph(g);
    assert_int_equal(G->ctrs[0].running.n, 1); /* admitted, prefilling */
    assert_int_equal(G->ctrs[0].pc->n_held + G->ctrs[0].pc->n_idle, 0);
    gmg_id both[2] = {0, 1};
    assert_int_equal(gsim_fork(g, both, 2, NULL, NULL, &w, &eb), 0);
    assert_int_equal(gsim_advance(w, SS_TIME_MAX, &eb), 0);
    gmg *W = (gmg *)gsim_graph(w);
    assert_int_equal(W->ctrs[0].pc->n_idle, 3000 / BT); /* learnt in the fork */
    assert_int_equal(G->ctrs[0].pc->n_held + G->ctrs[0].pc->n_idle, 0); /* not in the replay */

    ss_params *p = NULL;
    ss_rng rng;
    ss_rng_seed(&rng, 1, SS_RNG_STREAM_ROUTING);
    pol_route *route = NULL;
    assert_int_equal(ss_params_create(&p), 0);
    assert_int_equal(pol_route_create(&route, "affinity", p, "container", &rng, &eb), 0);
    gmg *graphs[2] = {(gmg *)G, W};
    gmg_id want[2] = {1, 0};
    for (int k = 0; k < 2; k++) {
        gmg_id q = gmg_req_alloc(graphs[k]);
        assert_true(q != GMG_NONE);
        gmg_req *x = gmg_req_at(graphs[k], q);
        x->prompt = 3000, x->output = 10, x->session_id = 5, x->tenant = 0;
        assert_int_equal(pol_route_pick(route, graphs[k], q, both, 2), want[k]);
        gmg_req_drop(graphs[k], q);
    }
    pol_route_destroy(&route);
    ss_params_destroy(&p);
    gsim_destroy(&w);
    assert_int_equal(gsim_advance(g, SS_TIME_MAX, &eb), 0);
    assert_int_equal(gsim_finish(g), 0);
    gsim_destroy(&g);
}

/* With caching off the affinity router is its load term: the emptiest container. */
static void test_affinity_without_cache_is_load(void **state)
{
    fx *f = *state;
    f->cfg.routing = "affinity";
    f->cfg.prefix_cache = GSIM_PREFIX_OFF;
    /* a long request, then two short ones while it runs: both go to the other instance and
     * then, the first one's load being larger, the second too */
    trace_rec r[3] = {
        {.id = 0, .prompt_tokens = 4000, .output_tokens = 300, .session_id = 1},
        {.id = 1, .arrival_ns = SS_NS_PER_MS, .prompt_tokens = 100, .output_tokens = 300},
        {.id = 2, .arrival_ns = 2 * SS_NS_PER_MS, .prompt_tokens = 100, .output_tokens = 300},
    };
    tu_collect c = tu_collect_new(3);
    gsim *g = tu_sim_run(f, r, 3, &c);
    assert_int_equal(c.r[0].container, 0);
    assert_int_equal(c.r[1].container, 1);
    assert_int_equal(c.r[2].container, 1);
    assert_null(gsim_graph(g)->ctrs[0].pc);
    assert_int_equal(gsim_ceiling_blocks(g, 0), 0);
    gsim_destroy(&g);
    free(c.r);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, tu_sim_fixture_teardown)
    const struct CMUnitTest tests[] = {
        T(test_affinity_beats_rr_by_the_construction),
        T(test_ceiling_is_the_hit_rate_on_one_instance),
        T(test_pressure_sums_ceiling_and_determinism),
        T(test_fork_routing_sees_the_forked_cache),
        T(test_affinity_without_cache_is_load),
    };
#undef T
    return cmocka_run_group_tests_name("affinity", tests, NULL, NULL);
}
