/* Automatic prefix caching: the exact hit rate of a hand-built trace (native session ids and
 * Mooncake hash ids), least-recently-released eviction leaf first, a cached prefix shortening
 * TTFT by exactly the recompute it avoids, identical runs with caching on (under preemption,
 * swap, chunked prefill and Llumnix migration, invariants checked after every event), a what-if
 * fork predicting the replay with the cache copied, and --check catching a broken refcount. */
#include "support/test_util.h"

#include "catalog/catalog.h"
#include "core/ss_alloc.h"
#include "gmg/gmg.h"
#include "gsim/gsim.h"

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
    };
#undef T
    return cmocka_run_group_tests_name("prefix", tests, NULL, NULL);
}
