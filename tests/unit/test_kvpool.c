/* The KV pool below the prefix caches: a block evicted from a GPU cache and loaded back costs
 * exactly its transfer (latency + bytes / bandwidth per hop, computed here from the
 * configuration and the cost model), the cheaper of loading and recomputing is taken (a slow
 * SSD loses to the GPU), a cluster-scope pool serves a block from another node over the
 * network, the pool never holds more than its tiers' sizes under a long random workload with
 * every invariant checked after every event, two runs are identical, and a what-if fork runs
 * on its own copy of the pool (the parent's is untouched) and predicts the replay exactly. */
#include "support/test_util.h"

#include "catalog/catalog.h"
#include "core/ss_alloc.h"
#include "gmg/gmg.h"
#include "gsim/gsim.h"

#include <stdlib.h>
#include <string.h>

typedef tu_sim fx;

static int setup(void **state)
{
    if (tu_sim_fixture_setup(state))
        return -1;
    fx *f = *state;
    f->cfg.replicas = 1;
    f->cfg.check = 1;
    f->cfg.prefix_cache = GSIM_PREFIX_ON;
    f->cfg.gpu_mem_util = 0.22; /* a small KV cache: a long prompt evicts the others */
    f->cfg.kvpool = (gsim_kvpool_cfg){.cpu_bytes = 64.0 * 1073741824.0,
                                      .cpu_latency_s = 10e-6, .ssd_bw = 7e9,
                                      .ssd_latency_s = 100e-6};
    return 0;
}



/* KV blocks of one container of the test's cluster. */
static uint32_t ctr_blocks(fx *f)
{
    gsim *g = NULL;
    ss_errbuf eb;
    if (gsim_create(&g, &f->cfg, &eb))
        fail_msg("gsim_create: %s", eb.msg);
    uint32_t n = gsim_graph(g)->ctrs[0].blocks_total;
    double bb = gsim_graph(g)->ctrs[0].block_bytes;
    gsim_destroy(&g);
    if (n < 200 || n > 1000 || !(bb > 0))
        fail_msg("the test wants a KV cache of 200 to 1000 blocks, got %u", n);
    return n;
}

/* Prompt A (session 5, 2000 tokens: 125 full blocks), then two prompts of other sessions that
 * need nearly every block (the first evicts A's idle blocks into the pool but its chain's head,
 * which the vLLM watermark keeps; the second those), then A's prompt again: the pool holds its
 * first 124 blocks (a hit leaves one token to compute). */
static void four(fx *f, trace_rec r[4])
{
    uint32_t n = ctr_blocks(f);
    r[0] = tu_rec(0, 0, 2000, 2, 5);
    r[1] = tu_rec(1, 100, (n - 8) * 16, 2, 9);
    r[2] = tu_rec(2, 200, (n - 8) * 16, 2, 11);
    r[3] = tu_rec(3, 300, 2000, 2, 5);
}

/* What the cost model says one request's prefill of q tokens over a context of c0 takes on an
 * idle container: its TTFT. */
static ss_time prefill_ns(gsim *g, uint64_t q, uint64_t c0)
{
    cost_batch b = {0};
    cost_batch_add_prefill(&b, q, c0);
    return cost_iteration_ns(gsim_graph(g)->ctrs[0].cost, &b);
}

/* The host phase of that prefill (scheduling, input preparation): the copies out of blocks the
 * batch evicted start with it, and the forward pass waits for what is left of them. */
static ss_time prefill_host_ns(gsim *g, uint64_t q, uint64_t c0)
{
    cost_batch b = {0};
    cost_batch_add_prefill(&b, q, c0);
    cost_split sp;
    cost_iteration_split(gsim_graph(g)->ctrs[0].cost, &b, &sp);
    return sp.host_ns;
}

static ss_time ns_of(double s) { return ss_time_from_ns_sat(s * 1e9); }

/* What a copy over the host link and the network attains: the peak at the link's efficiency. */
static double host_bw(const fx *f)
{
    return f->cfg.gpu->pcie_bw * gsim_link_eff(&f->cfg, GMG_LINK_PCIE);
}
static double net_bw(const fx *f) { return f->cfg.gpu->net_bw * gsim_link_eff(&f->cfg, GMG_LINK_NET); }

/* tu_sim_run, counting in *offloaded the blocks the pool took in at time t_s (the arrival of a
 * request whose admission evicts idle cached blocks to make room for its load). */
static gsim *run_counting(fx *f, const trace_rec *r, size_t n, tu_collect *c, double t_s,
                          uint64_t *offloaded)
{
    gsim *g = NULL;
    ss_errbuf eb;
    if (gsim_create(&g, &f->cfg, &eb))
        fail_msg("gsim_create: %s", eb.msg);
    tu_recs src = {r, n, 0};
    ss_time t = ss_time_from_s(t_s);
    const gmg_kvp_tenant *x = &gsim_graph(g)->kvp->ten[0];
    if (gsim_start(g, tu_recs_next, &src, tu_collect_req, c, &eb) ||
        gsim_advance(g, t - 1, &eb))
        fail_msg("replay: %s", eb.msg);
    uint64_t before = x->offload_blocks;
    if (gsim_advance(g, t, &eb))
        fail_msg("replay: %s", eb.msg);
    *offloaded = x->offload_blocks - before;
    if (gsim_advance(g, SS_TIME_MAX, &eb) || gsim_finish(g))
        fail_msg("replay failed");
    return g;
}

/* The copy out of n blocks of block_bytes bb to the pool: the host link's latency and each GPU's
 * share at the host link's efficiency; 0 for none. */
static ss_time offload_ns(const fx *f, uint64_t n, double bb)
{
    return n ? ns_of(10e-6 + (double)n * bb / host_bw(f)) : 0;
}

static void test_cpu_hit_costs_its_transfer(void **state)
{
    fx *f = *state;
    trace_rec r[4];
    four(f, r);
    tu_collect c = tu_collect_new(4);
    uint64_t out = 0;
    gsim *g = run_counting(f, r, 4, &c, 300, &out);
    const gmg_container *k = &gsim_graph(g)->ctrs[0];
    /* 124 blocks over the A100's PCIe (32 GB/s per direction, at its efficiency) after the
     * latency; first, the copies out of the idle blocks (the second long prompt's) the loaded
     * blocks land in: they hold the host link and the blocks */
    ss_time load = ns_of(10e-6 + 124.0 * k->block_bytes / host_bw(f));
    ss_time tail = prefill_ns(g, 2000 - 124 * 16, 124 * 16);
    const metrics_kvpool *p = &gsim_metrics(g)->all.kvpool;
    assert_true(out > 0);
    assert_int_equal(c.r[3].first_token - c.r[3].arrival,
                     offload_ns(f, out, k->block_bytes) + load + tail);
    assert_true(load + tail < prefill_ns(g, 2000, 0));
    assert_int_equal(p->loads, 1);
    assert_int_equal(p->cpu_blocks, 124);
    assert_int_equal(p->ssd_blocks + p->remote_blocks + p->recomputes, 0);
    assert_int_equal(p->load_ns, load);
    assert_int_equal(p->load_bytes, (uint64_t)(124 * k->block_bytes + 0.5));
    assert_true(p->offload_blocks >= 125);
    /* the loaded blocks count as cached: 124 of A's blocks hit at its second admission */
    assert_int_equal(gsim_metrics(g)->all.prefix.hit_blocks, 124);
    gsim_destroy(&g);
    /* without the pool the third request computes its whole prompt */
    f->cfg.kvpool.cpu_bytes = 0;
    g = tu_sim_run(f, r, 4, &c);
    assert_int_equal(c.r[3].first_token - c.r[3].arrival, prefill_ns(g, 2000, 0));
    gsim_destroy(&g);
    free(c.r);
}

/* An offload holds the host link: A's prompt returns (and loads from the pool) while request Z
 * decodes, so it is admitted at the end of one of Z's steps, in the same decision as request X
 * (arriving just before it), whose new blocks evict the second long prompt's idle blocks into
 * the pool. Their copies out take the host link first: the load queues behind them, and its
 * time (waiting for the host link included) is longer than without X by exactly the copies of
 * the blocks X evicted. */
static void test_offload_holds_the_host_link(void **state)
{
    fx *f = *state;
    trace_rec r[6];
    four(f, r);
    double bb;
    ss_time load_ns[3];
    for (int with_x = 0; with_x < 3; with_x++) {
        f->cfg.kvpool.free_offloads = with_x == 2; /* X again, its copies out not charged */
        trace_rec t[6] = {r[0], r[1], r[2], tu_rec(3, 299, 64, 3000, 13)};
        size_t n = 4;
        if (with_x)
            t[n] = tu_rec(4, 300, 1000, 2, 17), n++;
        t[n] = r[3]; /* A's prompt again, just after X */
        t[n].id = n; /* ids index the collected results */
        t[n++].arrival_ns = ss_time_from_s(300) + 1;
        tu_collect c = tu_collect_new(n);
        gsim *g = tu_sim_run(f, t, n, &c);
        bb = gsim_graph(g)->ctrs[0].block_bytes;
        const metrics_kvpool *p = &gsim_metrics(g)->all.kvpool;
        assert_int_equal(p->loads, 1);
        assert_int_equal(p->cpu_blocks, 124);
        load_ns[with_x] = p->load_ns;
        gsim_destroy(&g);
        free(c.r);
    }
    ss_time load = ns_of(10e-6 + 124 * bb / host_bw(f)), extra = load_ns[1] - load_ns[0];
    printf("# the load takes %lld ns alone, %lld ns behind X's offloads\n",
           (long long)load_ns[0], (long long)load_ns[1]);
    assert_int_equal(load_ns[0], load); /* the host link was free */
    uint64_t k = 0;
    while (k <= 63 && offload_ns(f, k, bb) < extra) /* X's 1000 tokens take 63 blocks */
        k++;
    assert_true(k >= 1 && k <= 63);
    assert_int_equal(extra, offload_ns(f, k, bb));
    assert_int_equal(load_ns[2], load_ns[0]); /* kvpool.offload = free: nothing holds it */
}

/* A CPU tier of 10 blocks: the blocks offloaded last (the second long prompt's) stay there,
 * A's go down to the SSD tier. A fast SSD (50 GB/s, several drives striped): the load reads
 * A's 124 blocks from the SSD (every GPU's share at the SSD's bandwidth), then over the host
 * link. At the default 7 GB/s and slower, recomputing is cheaper, and the request computes its
 * whole prompt as without a pool. */
static void test_cheaper_of_load_and_recompute(void **state)
{
    fx *f = *state;
    trace_rec r[4];
    four(f, r);
    tu_collect c = tu_collect_new(4);
    gsim *g = tu_sim_run(f, r, 4, &c); /* for the block size */
    double bb = gsim_graph(g)->ctrs[0].block_bytes;
    gsim_destroy(&g);
    f->cfg.kvpool.cpu_bytes = 10 * (double)(uint64_t)(bb + 0.5);
    f->cfg.kvpool.ssd_bytes = 1024.0 * 1073741824.0;
    f->cfg.kvpool.ssd_bw = 50e9;
    uint64_t out = 0;
    g = run_counting(f, r, 4, &c, 300, &out);
    ss_time load = ns_of(10e-6 + 124 * bb / host_bw(f) + 100e-6 + 124 * bb / 50e9);
    ss_time tail = prefill_ns(g, 2000 - 124 * 16, 124 * 16);
    assert_int_equal(c.r[3].first_token - c.r[3].arrival, offload_ns(f, out, bb) + load + tail);
    const metrics_kvpool *p = &gsim_metrics(g)->all.kvpool;
    assert_int_equal(p->ssd_blocks, 124);
    assert_int_equal(p->cpu_blocks, 0);
    assert_true(p->demotions >= 124);
    assert_true(gsim_metrics(g)->kvpool_peak[0] <= 10 * (uint64_t)(bb + 0.5));
    gsim_destroy(&g);
    /* 7 GB/s: 124 blocks of ~8 MB take 0.15 s from the SSD, the prefill 0.14 s */
    f->cfg.kvpool.ssd_bw = 7e9;
    g = run_counting(f, r, 4, &c, 300, &out);
    /* the blocks its prefill writes into held idle cached blocks: they are copied out, from
     * the step's start (its host phase overlaps the copies), before its forward pass */
    assert_true(out > 0);
    ss_time copy = offload_ns(f, out, bb), host = prefill_host_ns(g, 2000, 0);
    assert_true(copy > host);
    assert_int_equal(c.r[3].first_token - c.r[3].arrival, prefill_ns(g, 2000, 0) + copy - host);
    p = &gsim_metrics(g)->all.kvpool;
    assert_int_equal(p->loads, 0);
    assert_int_equal(p->recomputes, 1);
    assert_int_equal(p->recompute_blocks, 124);
    gsim_destroy(&g);
    free(c.r);
}

/* Two containers on two nodes, round-robin: A's prompt on container 0, whose cache then evicts
 * it for two long prompts; A's prompt again lands on container 1 (node 1). A node's pool does
 * not reach node 0's DRAM: full recompute. One cluster pool does: the blocks come over the
 * network (latency + each GPU's share at net_bw), then the host link. */
static void test_cluster_scope_fetches_remote(void **state)
{
    fx *f = *state;
    uint32_t n = ctr_blocks(f);
    f->cfg.replicas = 2;
    f->cfg.gpus_per_node = 1;
    f->cfg.routing = "rr";
    trace_rec r[6] = {tu_rec(0, 0, 2000, 2, 5),   tu_rec(1, 100, 64, 2, 7),
                      tu_rec(2, 200, (n - 8) * 16, 2, 9), tu_rec(3, 300, 64, 2, 7),
                      tu_rec(4, 400, (n - 8) * 16, 2, 11), tu_rec(5, 500, 2000, 2, 5)};
    tu_collect c = tu_collect_new(6);
    gsim *g = tu_sim_run(f, r, 6, &c);
    assert_int_equal(c.r[5].first_token - c.r[5].arrival, prefill_ns(g, 2000, 0));
    assert_int_equal(gsim_metrics(g)->all.kvpool.loads, 0);
    gsim_destroy(&g);
    f->cfg.kvpool.cluster = 1;
    uint64_t out = 0;
    g = run_counting(f, r, 6, &c, 500, &out);
    double bb = gsim_graph(g)->ctrs[1].block_bytes;
    const cat_gpu *u = f->cfg.gpu;
    ss_time load = ns_of(10e-6 + 124 * bb / host_bw(f) + u->net_latency_s + 124 * bb / net_bw(f));
    ss_time tail = prefill_ns(g, 2000 - 124 * 16, 124 * 16);
    assert_int_equal(c.r[5].first_token - c.r[5].arrival, offload_ns(f, out, bb) + load + tail);
    const metrics_kvpool *p = &gsim_metrics(g)->all.kvpool;
    assert_int_equal(p->remote_blocks, 124);
    assert_int_equal(p->cpu_blocks, 0);
    gsim_destroy(&g);
    free(c.r);
}

/* Many sessions of long prompts filling the KV cache, two containers, a pool of a few dozen
 * blocks per tier: loads, demotions and drops happen, --check (on in every run here) holds
 * after every event, the tiers never exceed their sizes, and a second run is identical. */

static void test_bounded_and_deterministic(void **state)
{
    fx *f = *state;
    enum { N = 600 };
    f->cfg.replicas = 2;
    f->cfg.gpu_mem_util = 0.3;
    trace_rec *r = tu_synth_sessions(N, 40, 3);
    double bb = 0;
    {
        gsim *g = NULL;
        ss_errbuf eb;
        assert_int_equal(gsim_create(&g, &f->cfg, &eb), 0);
        bb = gsim_graph(g)->ctrs[0].block_bytes;
        gsim_destroy(&g);
    }
    uint64_t cap_cpu = 40 * (uint64_t)(bb + 0.5), cap_ssd = 90 * (uint64_t)(bb + 0.5);
    f->cfg.kvpool.cpu_bytes = (double)cap_cpu;
    f->cfg.kvpool.ssd_bytes = (double)cap_ssd;
    tu_collect a = tu_collect_new(N), b = tu_collect_new(N);
    gsim *g1 = tu_sim_run(f, r, N, &a), *g2 = tu_sim_run(f, r, N, &b);
    if (memcmp(a.r, b.r, N * sizeof *a.r))
        fail_msg("two runs differ");
    const metrics *m1 = gsim_metrics(g1), *m2 = gsim_metrics(g2);
    assert_memory_equal(&m1->all.kvpool, &m2->all.kvpool, sizeof m1->all.kvpool);
    const metrics_kvpool *p = &m1->all.kvpool;
    if (!p->loads || !p->demotions || !p->evictions)
        fail_msg("not under pressure: %llu loads, %llu demotions, %llu evictions",
                 (unsigned long long)p->loads, (unsigned long long)p->demotions,
                 (unsigned long long)p->evictions);
    assert_true(m1->kvpool_peak[0] <= cap_cpu && m1->kvpool_peak[0] > cap_cpu - 2 * bb);
    assert_true(m1->kvpool_peak[1] <= cap_ssd && m1->kvpool_peak[1] > cap_ssd - 2 * bb);
    gsim_destroy(&g1);
    gsim_destroy(&g2);
    free(a.r);
    free(b.r);
    free(r);
}

/* A fork after the last arrival: its copy of the pool evolves, the parent's does not (bytes
 * compared right after the fork and after the fork ran to the end), and with the pool copied
 * its predictions are the replay's outcomes. */
static void test_fork_copies_the_pool(void **state)
{
    fx *f = *state;
    enum { N = 200 };
    f->cfg.replicas = 2;
    f->cfg.gpu_mem_util = 0.3;
    f->cfg.kvpool.cpu_bytes = 2.0 * 1073741824.0;
    trace_rec *r = tu_synth_sessions(N, 30, 5);
    tu_collect rc = tu_collect_new(N), wc = tu_collect_new(N);
    ss_errbuf eb;
    gsim *g = NULL, *w = NULL;
    assert_int_equal(gsim_create(&g, &f->cfg, &eb), 0);
    tu_recs src = {r, N, 0};
    ss_time t0 = r[N / 2].arrival_ns;
    assert_int_equal(gsim_start(g, tu_recs_next, &src, tu_collect_req, &rc, &eb), 0);
    assert_int_equal(gsim_advance(g, t0, &eb), 0);
    const gmg_kvpool *p = gsim_graph(g)->kvp;
    assert_non_null(p);
    assert_true(p->n_used > 0);
    gmg_kvpool before = *p;
    gmg_kvp_ent *ent = malloc(p->cap_ent * sizeof *ent);
    memcpy(ent, p->ent, p->cap_ent * sizeof *ent);
    gmg_id all[2] = {0, 1};
    assert_int_equal(gsim_fork(g, all, 2, tu_collect_req, &wc, &w, &eb), 0);
    assert_ptr_not_equal(gsim_graph(w)->kvp, p);
    assert_int_equal(gsim_advance(w, SS_TIME_MAX, &eb), 0);
    assert_true(gsim_graph(w)->kvp->ten[0].offload_blocks > before.ten[0].offload_blocks);
    assert_int_equal(p->n_used, before.n_used);
    assert_memory_equal(p->total, before.total, sizeof before.total);
    assert_int_equal(p->ten[0].offload_blocks, before.ten[0].offload_blocks);
    assert_memory_equal(p->ent, ent, p->cap_ent * sizeof *ent);
    free(ent);
    gsim_destroy(&w);
    gsim_destroy(&g);
    free(r);
    free(rc.r);
    free(wc.r);
}

/* The same fork after the last arrival predicts the replay: same first tokens and ends. */
static void test_fork_predicts_the_replay(void **state)
{
    fx *f = *state;
    enum { N = 200 };
    f->cfg.replicas = 2;
    f->cfg.gpu_mem_util = 0.3;
    f->cfg.kvpool.cpu_bytes = 2.0 * 1073741824.0;
    trace_rec *r = tu_synth_sessions(N, 30, 5);
    size_t checked;
    uint64_t fork_calls;
    gsim *g = tu_fork_matches_replay(f, r, N, &checked, &fork_calls);
    assert_true(gsim_metrics(g)->all.kvpool.loads > 0);
    assert_true(checked > 10);
    gsim_destroy(&g);
    free(r);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, tu_sim_fixture_teardown)
    const struct CMUnitTest tests[] = {
        T(test_cpu_hit_costs_its_transfer),
        T(test_cheaper_of_load_and_recompute),
        T(test_cluster_scope_fetches_remote),
        T(test_bounded_and_deterministic),
        T(test_fork_copies_the_pool),
        T(test_fork_predicts_the_replay),
        T(test_offload_holds_the_host_link),
    };
#undef T
    return cmocka_run_group_tests_name("kvpool", tests, NULL, NULL);
}
