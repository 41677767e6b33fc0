/* Automatic prefix caching: the exact hit rate of a hand-built trace (native session ids and
 * Mooncake hash ids), least-recently-released eviction leaf first, a cached prefix shortening
 * TTFT by exactly the recompute it avoids, identical runs with caching on (under preemption,
 * swap, chunked prefill and Llumnix migration, invariants checked after every event), a what-if
 * fork predicting the replay with the cache copied, --check catching a broken refcount, and every
 * batching policy replaying workloads of shared prefixes under KV pressure without aborting. */
#include "support/test_util.h"

#include "catalog/catalog.h"
#include "core/ss_alloc.h"
#include "core/ss_rng.h"
#include "gmg/gmg.h"
#include "gsim/gsim.h"
#include "policy/policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef tu_sim fx; /* the shared simulator fixture (tests/support) */

static int setup(void **state)
{
    if (tu_sim_fixture_setup(state))
        return -1;
    fx *f = *state;
    f->cfg.replicas = 1;
    f->cfg.check = 1;
    f->cfg.prefix_cache = GSIM_PREFIX_ON;
    return 0;
}




/* Unloaded requests 100 s apart, so every earlier prompt is cached when the next arrives. */
static void test_exact_hit_rate(void **state)
{
    fx *f = *state;
    static const uint32_t ids_a[] = {1, 2}, ids_b[] = {1, 3};
    trace_rec r[6] = {
        tu_rec(0, 0, 100, 4, 7),   /* 6 full blocks, nothing cached: 0 */
        tu_rec(1, 100, 100, 4, 7), /* all 6 (the last partial block recomputed): 96 tokens */
        tu_rec(2, 200, 64, 4, 7),  /* 4 full blocks, but one token must be computed: 3, 48 */
        tu_rec(3, 300, 50, 4, 9),  /* another prompt: 0 of 3 */
        tu_rec(4, 400, 1100, 4, 0), /* Mooncake ids: 64 identified 16-token blocks, none cached */
        tu_rec(5, 500, 1100, 4, 0), /* shares the first 512-token block: 32 blocks, 512 tokens */
    };
    r[4].prefix_blocks = ids_a, r[4].n_prefix_blocks = 2;
    r[5].prefix_blocks = ids_b, r[5].n_prefix_blocks = 2;
    gsim *g = tu_sim_run(f, r, 6, NULL);
    metrics_summary s;
    metrics_summarize(gsim_metrics(g), gsim_end_time(g), &s);
    const metrics_prefix *p = &s.all.prefix;
    assert_int_equal(p->lookups, 6);
    assert_int_equal(p->query_tokens, 100 + 100 + 64 + 50 + 1100 + 1100);
    assert_int_equal(p->hit_tokens, 96 + 48 + 512);
    assert_int_equal(p->query_blocks, 6 + 6 + 4 + 3 + 64 + 64);
    assert_int_equal(p->hit_blocks, 6 + 3 + 32);
    assert_int_equal(p->saved_tokens, 96 + 48 + 512);
    assert_int_equal(p->evictions, 0);
    assert_true(s.all.prefix_hit_rate == 656.0 / 2514.0);
    assert_true(gsim_metrics(g)->tenants[0].prefix.hit_tokens == 656);
    gsim_destroy(&g);
}

/* The second identical prompt's prefill computes one block of queries over the cached context:
 * its TTFT is the cost model's time for exactly that. */
static void test_hit_shortens_ttft_by_the_recompute(void **state)
{
    fx *f = *state;
    trace_rec r[2] = {tu_rec(0, 0, 2000, 2, 5), tu_rec(1, 100, 2000, 2, 5)};
    tu_collect c = tu_collect_new(2);
    gsim *g = tu_sim_run(f, r, 2, &c);
    cost_model *cm = gsim_graph(g)->ctrs[0].cost;
    cost_batch full = {0}, rest = {0};
    cost_batch_add_prefill(&full, 2000, 0);
    cost_batch_add_prefill(&rest, 2000 - 1984, 1984); /* 124 blocks cached */
    assert_int_equal(c.r[0].first_token - c.r[0].arrival, cost_iteration_ns(cm, &full));
    assert_int_equal(c.r[1].first_token - c.r[1].arrival, cost_iteration_ns(cm, &rest));
    assert_true(cost_iteration_ns(cm, &rest) < cost_iteration_ns(cm, &full));
    ss_time want_full = cost_iteration_ns(cm, &full);
    gsim_destroy(&g); /* (and cm with it) */
    /* off: both compute everything */
    f->cfg.prefix_cache = GSIM_PREFIX_OFF;
    g = tu_sim_run(f, r, 2, &c);
    assert_int_equal(c.r[1].first_token - c.r[1].arrival, want_full);
    gsim_destroy(&g);
    free(c.r);
}

/* A one-GPU graph with one container of 8 blocks, for the cache primitives alone. */
typedef struct tiny {
    gmg g;
    gmg_gpu gpu;
    gmg_container c;
} tiny;

static void tiny_init(tiny *t)
{
    memset(t, 0, sizeof *t);
    t->g.gpus = &t->gpu;
    t->g.n_gpus = 1;
    t->c = (gmg_container){.tp = 1, .pp = 1, .block_tokens = 16, .blocks_total = 8,
                           .blocks_free = 8, .block_bytes = 1};
    assert_int_equal(gmg_pc_create(&t->c.pc, 8), 0);
}

/* Cache req's prompt blocks as if it had run, then release them. */
static void cache_prompt(tiny *t, gmg_req *q)
{
    gmg_req_set_blocks(&t->g, &t->c, q, gmg_blocks_for(&t->c, q->prompt));
    gmg_pc_register(&t->g, &t->c, q);
    gmg_req_set_blocks(&t->g, &t->c, q, 0);
}

static void test_lru_eviction_order(void **state)
{
    (void)state;
    tiny t;
    tiny_init(&t);
    gmg_req a = {.prompt = 33, .session_id = 1}, b = {.prompt = 33, .session_id = 2};
    gmg_req x = {.prompt = 500};
    assert_int_equal(gmg_pc_chain_make(&a, NULL, 16), 0);
    assert_int_equal(gmg_pc_chain_make(&b, NULL, 16), 0);
    cache_prompt(&t, &a); /* LRU: a1 a0 (the leaf first) */
    cache_prompt(&t, &b); /* LRU: a1 a0 b1 b0 */
    assert_int_equal(t.c.pc->n_idle, 4);
    assert_int_equal(t.c.blocks_free, 8); /* idle cached blocks count as free */
    assert_int_equal(gmg_pc_match(&t.c, &a, 9, NULL), 2);
    /* reading a again makes it the most recent: b1 b0 a1 a0 */
    uint32_t idle;
    assert_int_equal(gmg_pc_match(&t.c, &a, 9, &idle), 2);
    assert_int_equal(idle, 2);
    gmg_pc_take(&t.g, &t.c, &a, 2);
    assert_int_equal(t.c.blocks_free, 6);
    gmg_req_set_blocks(&t.g, &t.c, &a, 0);
    /* 4 uncached free blocks; each block beyond evicts one, least recently released first */
    gmg_req_set_blocks(&t.g, &t.c, &x, 5);
    assert_int_equal(t.c.pc->evictions, 1);
    assert_int_equal(gmg_pc_match(&t.c, &b, 9, NULL), 1); /* b's leaf went first */
    assert_int_equal(gmg_pc_match(&t.c, &a, 9, NULL), 2);
    gmg_req_set_blocks(&t.g, &t.c, &x, 6);
    assert_int_equal(gmg_pc_match(&t.c, &b, 9, NULL), 0);
    assert_int_equal(gmg_pc_match(&t.c, &a, 9, NULL), 2);
    gmg_req_set_blocks(&t.g, &t.c, &x, 7);
    assert_int_equal(gmg_pc_match(&t.c, &a, 9, NULL), 1);
    assert_int_equal(t.c.pc->evictions, 3);
    gmg_req_set_blocks(&t.g, &t.c, &x, 0);
    assert_int_equal(t.c.blocks_free, 8);
    assert_true(t.gpu.mem.kv_used == 0);
    gmg_pc_chain_drop(&a);
    gmg_pc_chain_drop(&b);
    gmg_pc_destroy(&t.c.pc);
}

/* A prompt computed twice at once is cached once: the second copy is freed at registration. */
static void test_concurrent_copies_share(void **state)
{
    (void)state;
    tiny t;
    tiny_init(&t);
    gmg_req a = {.prompt = 40, .session_id = 3}, b = {.prompt = 40, .session_id = 3};
    assert_int_equal(gmg_pc_chain_make(&a, NULL, 16), 0);
    assert_int_equal(gmg_pc_chain_make(&b, NULL, 16), 0);
    gmg_req_set_blocks(&t.g, &t.c, &a, 3);
    gmg_req_set_blocks(&t.g, &t.c, &b, 3);
    gmg_pc_register(&t.g, &t.c, &a);
    gmg_pc_register(&t.g, &t.c, &b);
    assert_int_equal(a.pc_shared, 2);
    assert_int_equal(b.pc_shared, 2);
    assert_int_equal(t.c.pc->n_held, 2);
    assert_int_equal(t.c.blocks_free, 8 - 2 - 1 - 1);
    gmg_req_set_blocks(&t.g, &t.c, &a, 0);
    assert_int_equal(t.c.pc->n_idle, 0); /* b still reads them */
    gmg_req_set_blocks(&t.g, &t.c, &b, 0);
    assert_int_equal(t.c.pc->n_idle, 2);
    assert_int_equal(t.c.blocks_free, 8);
    gmg_pc_chain_drop(&a);
    gmg_pc_chain_drop(&b);
    gmg_pc_destroy(&t.c.pc);
}

/* Many sessions of long prompts at a load that fills the KV cache. */

static void run_twice_same(fx *f, const char *what)
{
    enum { N = 600 };
    trace_rec *r = tu_synth_sessions(N, 40, 3);
    tu_collect a = tu_collect_new(N), b = tu_collect_new(N);
    gsim *g1 = tu_sim_run(f, r, N, &a), *g2 = tu_sim_run(f, r, N, &b);
    if (memcmp(a.r, b.r, N * sizeof *a.r))
        fail_msg("%s: two runs differ", what);
    metrics_summary s1, s2;
    metrics_summarize(gsim_metrics(g1), gsim_end_time(g1), &s1);
    metrics_summarize(gsim_metrics(g2), gsim_end_time(g2), &s2);
    assert_memory_equal(&s1.all.prefix, &s2.all.prefix, sizeof s1.all.prefix);
    if (!s1.all.prefix.hit_tokens || !s1.all.prefix.evictions || !s1.all.preemptions)
        fail_msg("%s: %llu hit tokens, %llu evictions, %llu preemptions: not under pressure",
                 what, (unsigned long long)s1.all.prefix.hit_tokens,
                 (unsigned long long)s1.all.prefix.evictions,
                 (unsigned long long)s1.all.preemptions);
    if (f->cfg.cluster && !gsim_metrics(g1)->migrations)
        fail_msg("%s: no migration", what);
    gsim_destroy(&g1);
    gsim_destroy(&g2);
    free(a.r);
    free(b.r);
    free(r);
}

static void test_deterministic_under_pressure(void **state)
{
    fx *f = *state;
    f->cfg.gpu_mem_util = 0.3; /* a small KV pool: evictions and preemptions */
    f->cfg.replicas = 2;
    run_twice_same(f, "vllm recompute");
    assert_int_equal(ss_params_set(f->params, "preempt", "swap"), 0);
    run_twice_same(f, "vllm swap");
    ss_params_destroy(&f->params);
    assert_int_equal(ss_params_create(&f->params), 0);
    f->cfg.params = f->params;
    f->cfg.batching = "sarathi";
    run_twice_same(f, "sarathi");
    f->cfg.batching = "vllm";
    f->cfg.cluster = "llumnix";
    run_twice_same(f, "llumnix");
}

/* Fork the whole cluster after the last arrival: the fork knows everything the replay will
 * see, so with the cache copied its predictions are the replay's outcomes. */
static void test_fork_copies_the_cache(void **state)
{
    fx *f = *state;
    enum { N = 200 };
    f->cfg.replicas = 2;
    trace_rec *r = tu_synth_sessions(N, 30, 5);
    size_t checked;
    uint64_t fork_calls;
    gsim *g = tu_fork_matches_replay(f, r, N, &checked, &fork_calls);
    assert_true(checked > 10);
    assert_int_equal(fork_calls, checked);
    gsim_destroy(&g);
    free(r);
}

/* The checker sees a cached block whose refcount says someone reads it while it sits idle. */
static void test_check_catches_a_bad_refcount(void **state)
{
    fx *f = *state;
    trace_rec r[2] = {tu_rec(0, 0, 200, 2, 5), tu_rec(1, 10, 300, 2, 6)};
    gsim *g = tu_sim_run(f, r, 2, NULL);
    gmg *G = (gmg *)gsim_graph(g);
    ss_errbuf eb;
    assert_int_equal(gmg_check(G, &eb), 0);
    gmg_pcache *pc = G->ctrs[0].pc;
    assert_int_equal(pc->n_idle, 12 + 18);
    pc->ent[pc->lru_head].ref = 1;
    assert_int_equal(gmg_check(G, &eb), SS_ECHECK);
    assert_non_null(strstr(eb.msg, "prefix-cache"));
    pc->ent[pc->lru_head].ref = 0;
    pc->n_held++;
    assert_int_equal(gmg_check(G, &eb), SS_ECHECK);
    pc->n_held--;
    assert_int_equal(gmg_check(G, &eb), 0);
    gsim_destroy(&g);
}

/* auto: on from the first request with an identity, off for a trace without any. */
static void test_auto_mode(void **state)
{
    fx *f = *state;
    f->cfg.prefix_cache = GSIM_PREFIX_AUTO;
    trace_rec r[2] = {tu_rec(0, 0, 200, 2, 0), tu_rec(1, 10, 300, 2, 0)};
    gsim *g = tu_sim_run(f, r, 2, NULL);
    assert_int_equal(gsim_graph(g)->prefix_cache, 0);
    assert_null(gsim_graph(g)->ctrs[0].pc);
    gsim_destroy(&g);
    r[1].session_id = 4;
    g = tu_sim_run(f, r, 2, NULL);
    assert_int_equal(gsim_graph(g)->prefix_cache, 1);
    assert_int_equal(gsim_metrics(g)->all.prefix.lookups, 1); /* r[0] came before the cache */
    gsim_destroy(&g);
}

/* The chain's keys, against the definition computed here block by block (splitmix64 of the
 * parent's hash, the content and the place): Mooncake ids at block sizes that divide 512 (the
 * cycled fast path), that do not (48) and that span two ids (1,024), and sessions. */
static uint64_t ref_mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static void test_chain_keys(void **state)
{
    (void)state;
    static const uint32_t ids[] = {7, 7, 9, 4000000000u, 3, 11};
    static const uint32_t sizes[] = {16, 32, 48, 512, 1024};
    for (int sess = 0; sess < 2; sess++)
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
            uint32_t bt = sizes[k];
            gmg_req q = {.prompt = 3000, .session_id = sess ? 42 : 0,
                         .n_prefix_blocks = sess ? 0 : 6};
            assert_int_equal(gmg_pc_chain_make(&q, sess ? NULL : ids, bt), 0);
            uint32_t n = sess ? 3000 / bt : (uint32_t)(6 * 512 / bt < 3000 / bt ? 6 * 512 / bt
                                                                                  : 3000 / bt);
            assert_int_equal(gmg_pc_blocks(&q, bt), n);
            uint64_t key = 0;
            for (uint32_t j = 0; j < n; j++) {
                uint64_t a, b, t0 = (uint64_t)j * bt;
                if (sess) {
                    a = 42;
                    b = 2ULL << 40 | j;
                } else {
                    a = (uint64_t)ids[t0 / 512] << 32 | ids[(t0 + bt - 1) / 512];
                    b = 1ULL << 40 | t0 % 512;
                }
                key = ref_mix(key ^ ref_mix(a + 0x9e3779b97f4a7c15ULL) ^
                              ref_mix(b ^ 0x632be59bd9b4e019ULL));
                assert_true(gmg_pc_key(&q, j) == key);
            }
            gmg_pc_chain_drop(&q);
            assert_null(q.chain);
        }
    gmg_req none = {.prompt = 3000};
    assert_int_equal(gmg_pc_chain_make(&none, NULL, 16), 0);
    assert_null(none.chain);
    assert_int_equal(gmg_pc_blocks(&none, 16), 0);
    tu_assert_no_leaks();
}

/* ---- batching policies against the prefix cache under KV pressure ------------------------- */

/* A workload with shared prefixes (Mooncake ids of 512-token blocks), made here: n requests at
 * 10 req/s (Poisson), prompts of 200 to 2,600 tokens, outputs of 769 tokens or 50 to 800, and
 * a fraction `share` of them starting with the first 1 to 3 blocks of an earlier request's
 * prompt (never all of their own). Deterministic in seed. */
typedef struct shared_load {
    trace_rec *r;
    uint32_t *ids; /* every request's ids, 6 each at most (r[i].prefix_blocks points here) */
} shared_load;

enum { SL_MAX_IDS = 6 };

static shared_load shared_load_make(uint32_t n, uint64_t seed, double share)
{
    shared_load w = {calloc(n, sizeof *w.r), calloc((size_t)n * SL_MAX_IDS, sizeof *w.ids)};
    assert_true(w.r && w.ids);
    ss_rng rng;
    ss_rng_seed(&rng, seed, 1);
    uint32_t next_id = 1;
    double t = 0;
    for (uint32_t i = 0; i < n; i++) {
        t += ss_rng_exp(&rng, 0.1);
        uint32_t p = 200 + (uint32_t)ss_rng_below(&rng, 2401);
        uint32_t o = ss_rng_below(&rng, 2) ? 769 : 50 + (uint32_t)ss_rng_below(&rng, 751);
        uint32_t nb = (p + 511) / 512, k = 0, *ids = &w.ids[(size_t)i * SL_MAX_IDS];
        if (i && nb > 1 && ss_rng_uniform(&rng) < share) {
            const trace_rec *base = &w.r[ss_rng_below(&rng, i)];
            k = 1 + (uint32_t)ss_rng_below(&rng, 3);
            k = k < base->n_prefix_blocks ? k : base->n_prefix_blocks;
            k = k < nb - 1 ? k : nb - 1;
            memcpy(ids, base->prefix_blocks, k * sizeof *ids);
        }
        while (k < nb)
            ids[k++] = next_id++;
        w.r[i] = (trace_rec){.id = i, .arrival_ns = ss_time_from_s(t), .prompt_tokens = p,
                             .output_tokens = o, .prefix_blocks = ids, .n_prefix_blocks = nb};
    }
    return w;
}

static void shared_load_free(shared_load *w)
{
    free(w->r);
    free(w->ids);
}

/* Whether batching policy `name` reads parameter `key`. */
static int policy_reads(const char *name, const char *key)
{
    const pol_batch_ops *ops = pol_batch_find(name);
    assert_non_null(ops);
    for (const char *const *k = ops->params; k && *k; k++)
        if (!strcmp(*k, key))
            return 1;
    return 0;
}

/* What a sweep of replays saw, summed. */
typedef struct pressure_seen {
    uint64_t runs, hit_tokens, evictions, preemptions;
} pressure_seen;

/* One replay of w under f's configuration, checked after every event (gsim_run fails on a
 * broken invariant; a KV over-allocation aborts): every request ends and every block is free
 * again at the end. Adds what it saw to *seen. */
static void pressure_run(fx *f, const shared_load *w, uint32_t n, const char *what,
                         pressure_seen *seen)
{
    tu_collect c = tu_collect_new(n);
    gsim *g = tu_sim_run(f, w->r, n, &c);
    metrics_summary s;
    metrics_summarize(gsim_metrics(g), gsim_end_time(g), &s);
    if (c.n_calls != n || c.dup || s.all.completed + s.all.rejected != n)
        fail_msg("%s: %zu of %u requests ended (%zu twice)", what, c.n_calls, n, c.dup);
    const gmg *G = gsim_graph(g);
    ss_errbuf eb;
    if (gmg_check(G, &eb))
        fail_msg("%s: %s", what, eb.msg);
    if (G->ctrs[0].blocks_free != G->ctrs[0].blocks_total)
        fail_msg("%s: %u of %u blocks free at the end", what, G->ctrs[0].blocks_free,
                 G->ctrs[0].blocks_total);
    seen->runs++;
    seen->hit_tokens += s.all.prefix.hit_tokens;
    seen->evictions += s.all.prefix.evictions;
    seen->preemptions += s.all.preemptions;
    gsim_destroy(&g);
    free(c.r);
}

/* Every batching policy, on workloads with shared prefixes, at gpu_memory_utilization values
 * that leave a KV pool of a few thousand blocks (evictions and preemptions of requests that
 * share cached blocks with requests still running), at two token budgets where the policy has
 * one, recompute and swap preemption: no run aborts, every invariant holds after every event. */
static void test_batching_under_kv_pressure(void **state)
{
    fx *f = *state;
    enum { N = 200 };
    static const double utils[] = {0.25, 0.27, 0.29}, shares[] = {0.25, 0.5, 0.8};
    static const char *const budgets[] = {"512", "2048"};
    f->cfg.model = catalog_model(f->cat, "llama-3-8b");
    f->cfg.gpu = catalog_gpu(f->cat, "h100-sxm");
    f->cfg.engine = catalog_engine(f->cat, CAT_ENGINE_DEFAULT);
    f->cfg.max_model_len = 32768;
    f->cfg.no_prefix_ceiling = 1;
    char names[512];
    snprintf(names, sizeof names, "%s", pol_batch_names());
    pressure_seen all = {0};
    for (char *save = NULL, *b = strtok_r(names, ", ", &save); b;
         b = strtok_r(NULL, ", ", &save)) {
        pressure_seen seen = {0};
        for (uint64_t seed = 1; seed <= 3; seed++) {
            shared_load w = shared_load_make(N, seed, shares[seed - 1]);
            for (size_t u = 0; u < sizeof utils / sizeof *utils; u++)
                for (size_t k = 0; k < 2; k++) {
                    int budget = policy_reads(b, "token_budget");
                    int swap = !budget && k && policy_reads(b, "preempt");
                    if (k && !budget && !swap)
                        continue;
                    ss_params_destroy(&f->params);
                    assert_int_equal(ss_params_create(&f->params), 0);
                    f->cfg.params = f->params;
                    if (budget)
                        assert_int_equal(ss_params_set(f->params, "token_budget", budgets[k]), 0);
                    if (swap)
                        assert_int_equal(ss_params_set(f->params, "preempt", "swap"), 0);
                    f->cfg.batching = b;
                    f->cfg.gpu_mem_util = utils[u];
                    f->cfg.seed = seed;
                    char what[128];
                    snprintf(what, sizeof what, "%s seed %llu util %.2f%s%s", b,
                             (unsigned long long)seed, utils[u], budget ? " budget " : "",
                             budget ? budgets[k] : swap ? " swap" : "");
                    pressure_run(f, &w, N, what, &seen);
                }
            shared_load_free(&w);
        }
        if (!seen.hit_tokens || !seen.evictions)
            fail_msg("%s: %llu hit tokens, %llu evictions in %llu runs: not under pressure", b,
                     (unsigned long long)seen.hit_tokens, (unsigned long long)seen.evictions,
                     (unsigned long long)seen.runs);
        all.runs += seen.runs;
        all.preemptions += seen.preemptions;
    }
    assert_true(all.runs >= 4 * 3 * 3);
    assert_true(all.preemptions > 0);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, tu_sim_fixture_teardown)
    const struct CMUnitTest tests[] = {
        T(test_exact_hit_rate),
        T(test_hit_shortens_ttft_by_the_recompute),
        cmocka_unit_test(test_chain_keys),
        cmocka_unit_test(test_lru_eviction_order),
        cmocka_unit_test(test_concurrent_copies_share),
        T(test_deterministic_under_pressure),
        T(test_fork_copies_the_cache),
        T(test_check_catches_a_bad_refcount),
        T(test_auto_mode),
        T(test_batching_under_kv_pressure),
    };
#undef T
    return cmocka_run_group_tests_name("prefix", tests, NULL, NULL);
}
