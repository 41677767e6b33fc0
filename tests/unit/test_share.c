/* GPU sharing (docs/guide/gpu-sharing.md): a MIG instance runs a step at its profile's compute
 * and bandwidth fractions of the whole GPU and sizes its KV pool from the profile's memory;
 * shares are laid out first fit or where a scenario puts them, and a layout the GPU does not
 * allow (two 4g instances, MPS shares over 1, two kinds of sharing on one GPU) is refused. */
#include "support/test_util.h"

#include "catalog/catalog.h"
#include "cost/cost.h"
#include "gsim/gsim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef tu_sim fx;

static int setup(void **state) { return tu_sim_fixture_setup(state); }

static gsim_tenant tenant(fx *f, const char *name, const char *share)
{
    gsim_tenant t = {.name = name, .model = catalog_model(f->cat, "llama-2-7b"), .tp = 1,
                     .pp = 1, .replicas = 1, .tiers = 1};
    ss_errbuf eb;
    if (gsim_share_parse(share, f->cfg.gpu, &t.share, &eb))
        fail_msg("%s: %s", share, eb.msg);
    return t;
}

/* The device time of batch b on a container's cost model (host time apart). */
static double device_ns(cost_model *cm, const cat_model *m, const cost_batch *b)
{
    cost_split sp;
    cost_iteration_split(cm, b, &sp);
    return (double)sp.layer_ns * m->layers + (double)(sp.head_ns - sp.host_ns) +
           (double)sp.tail_ns;
}

/* A 3g.40gb instance of an A100-80GB is 3/7 of its SMs and 4/8 of its memory slices: its
 * container's cost model is the roofline of a GPU with those fractions of the whole one's peak
 * FLOP/s, bandwidth and L2, and its KV pool is what 40 GiB leaves after the weights. */
static void test_mig_slice_scales_the_gpu(void **state)
{
    fx *f = *state;
    f->ten[0] = tenant(f, "whole", "whole");
    f->ten[1] = tenant(f, "mig", "mig:3g.40gb");
    f->cfg.tenants = f->ten;
    f->cfg.n_tenants = 2;
    gsim *g = NULL;
    ss_errbuf eb;
    assert_int_equal(gsim_create(&g, &f->cfg, &eb), 0);
    const gmg *G = gsim_graph(g);
    assert_int_equal(G->n_ctrs, 2);
    assert_int_equal(G->n_phys, 2);
    const cat_gpu *a100 = f->cfg.gpu;
    const gmg_gpu *u = &G->gpus[G->ctrs[1].gpu0];
    assert_int_equal(u->share, GMG_SHARE_MIG);
    assert_true(u->kind->peak_flops == a100->peak_flops * 3 / 7);
    assert_true(u->kind->hbm_bw == a100->hbm_bw * 4 / 8);
    assert_true(u->capacity == a100->hbm_bytes / 2);
    assert_true(u->kind->l2_bytes == a100->l2_bytes / 2);
    /* the same costs as a hand-made GPU of those figures */
    cat_gpu hand = *a100;
    hand.peak_flops = 312e12 * 3 / 7;
    hand.hbm_bw = 2039e9 / 2;
    hand.l2_bytes = a100->l2_bytes / 2;
    hand.sm_count = 46; /* 108 x 3/7 = 46.3 */
    hand.hbm_bytes = 40 * 1073741824.0;
    assert_true(a100->peak_flops == 312e12 && a100->hbm_bw == 2039e9);
    cost_model *cm = NULL;
    cost_params cp = {.gpu = &hand, .engine = f->cfg.engine, .model = f->ten[1].model, .tp = 1};
    assert_int_equal(cost_model_create(&cm, "roofline", &cp, &eb), 0);
    cost_batch pre = {0}, dec = {0};
    cost_batch_add_prefill(&pre, 8192, 0);
    for (int i = 0; i < 64; i++)
        cost_batch_add_decode(&dec, 1024);
    const cat_model *m = f->ten[1].model;
    cost_model *whole = G->ctrs[0].cost, *mig = G->ctrs[1].cost;
    assert_true(device_ns(mig, m, &pre) == device_ns(cm, m, &pre));
    assert_true(device_ns(mig, m, &dec) == device_ns(cm, m, &dec));
    /* a long prefill is compute bound: 7/3 as long; a decode step streams the weights and the
     * KV: twice as long (each within what the roofline's fixed parts take off) */
    double rp = device_ns(mig, m, &pre) / device_ns(whole, m, &pre);
    double rd = device_ns(mig, m, &dec) / device_ns(whole, m, &dec);
    assert_true(rp > 2.2 && rp <= 7.0 / 3 + 1e-9);
    assert_true(rd > 1.8 && rd <= 2 + 1e-9);
    /* the KV pool: 0.9 of 40 GiB less weights, activations and the runtime reserve */
    double usable = f->cfg.gpu_mem_util * 40 * 1073741824.0 - u->mem.weights -
                    u->mem.activations - u->mem.runtime;
    assert_int_equal(G->ctrs[1].blocks_total,
                     (uint32_t)floor(usable / G->ctrs[1].block_bytes));
    assert_true(G->ctrs[1].blocks_total < G->ctrs[0].blocks_total / 2);
    cost_model_destroy(&cm);
    gsim_destroy(&g);
}

/* The layout: a 4g and a 3g instance share a GPU, two 4g do not; first fit opens a GPU for what
 * does not fit, share_gpus that put it there are refused, naming the tenant and the GPU. */
static void test_mig_layouts(void **state)
{
    fx *f = *state;
    f->ten[0] = tenant(f, "a", "mig:4g.40gb");
    f->ten[1] = tenant(f, "b", "mig:3g.40gb");
    f->ten[2] = tenant(f, "c", "mig:4g.40gb");
    f->cfg.tenants = f->ten;
    f->cfg.n_tenants = 3;
    gsim *g = NULL;
    ss_errbuf eb;
    assert_int_equal(gsim_create(&g, &f->cfg, &eb), 0);
    const gmg *G = gsim_graph(g);
    assert_int_equal(G->n_phys, 2);
    assert_int_equal(G->gpus[G->ctrs[0].gpu0].phys, G->gpus[G->ctrs[1].gpu0].phys);
    assert_int_not_equal(G->gpus[G->ctrs[0].gpu0].phys, G->gpus[G->ctrs[2].gpu0].phys);
    gsim_destroy(&g);
    static const uint32_t zero[8] = {0};
    f->ten[2].share.gpus = zero;
    f->ten[2].share.n_gpus = 1;
    uint32_t bad;
    assert_int_equal(gsim_share_check(&f->cfg, &bad, &eb), SS_EINVAL);
    assert_int_equal(bad, 2);
    assert_non_null(strstr(eb.msg, "tenant c: share: mig:4g.40gb does not fit on shared GPU 0"));
    assert_non_null(strstr(eb.msg, "4g.40gb + 3g.40gb + 4g.40gb"));
    /* seven 1g instances fit one GPU; an eighth does not */
    f->ten[0] = tenant(f, "a", "mig:1g.10gb");
    f->ten[0].replicas = 7;
    f->ten[0].share.gpus = zero;
    f->ten[0].share.n_gpus = 7;
    f->cfg.n_tenants = 1;
    assert_int_equal(gsim_share_check(&f->cfg, &bad, &eb), 0);
    f->ten[0].replicas = 8;
    f->ten[0].share.n_gpus = 8;
    assert_int_equal(gsim_share_check(&f->cfg, &bad, &eb), SS_EINVAL);
    assert_non_null(strstr(eb.msg, "1g.10gb does not fit on shared GPU 0"));
    /* two 1g.20gb and a 3g: slices 0-1, 2-3 and 4-7 */
    f->ten[0] = tenant(f, "a", "mig:1g.20gb");
    f->ten[0].replicas = 2;
    f->ten[1] = tenant(f, "b", "mig:3g.40gb");
    f->cfg.n_tenants = 2;
    assert_int_equal(gsim_create(&g, &f->cfg, &eb), 0);
    assert_int_equal(gsim_graph(g)->n_phys, 1);
    gsim_destroy(&g);
}

/* MPS SM shares sum to at most 1 on a GPU, and one GPU runs one kind of sharing. */
static void test_mps_and_mixed_layouts(void **state)
{
    fx *f = *state;
    static const uint32_t zero[1] = {0};
    f->ten[0] = tenant(f, "a", "mps:0.6");
    f->ten[1] = tenant(f, "b", "mps:0.5");
    f->cfg.tenants = f->ten;
    f->cfg.n_tenants = 2;
    uint32_t bad;
    ss_errbuf eb;
    gsim *g = NULL;
    assert_int_equal(gsim_create(&g, &f->cfg, &eb), 0); /* first fit: two GPUs */
    assert_int_equal(gsim_graph(g)->n_phys, 2);
    gsim_destroy(&g);
    f->ten[1].share.gpus = zero;
    f->ten[1].share.n_gpus = 1;
    assert_int_equal(gsim_share_check(&f->cfg, &bad, &eb), SS_EINVAL);
    assert_int_equal(bad, 1);
    assert_non_null(strstr(eb.msg, "SM shares would sum to 1.1, over 1"));
    f->ten[1] = tenant(f, "b", "mps:0.4");
    assert_int_equal(gsim_create(&g, &f->cfg, &eb), 0);
    assert_int_equal(gsim_graph(g)->n_phys, 1);
    /* each client's memory is its SM share of the GPU's */
    assert_true(gsim_graph(g)->gpus[1].capacity == f->cfg.gpu->hbm_bytes * 0.4);
    gsim_destroy(&g);
    f->ten[1] = tenant(f, "b", "time");
    f->ten[1].share.gpus = zero;
    f->ten[1].share.n_gpus = 1;
    assert_int_equal(gsim_share_check(&f->cfg, &bad, &eb), SS_EINVAL);
    assert_non_null(strstr(eb.msg, "a GPU runs one kind of sharing"));
    /* whole GPUs are a physical GPU each, TP groups included; shares of one GPU are one */
    f->ten[0] = tenant(f, "a", "whole");
    f->ten[0].tp = 2;
    f->ten[1] = tenant(f, "b", "mps:0.4");
    f->ten[2] = tenant(f, "c", "mps:0.4");
    f->cfg.n_tenants = 3;
    assert_int_equal(gsim_create(&g, &f->cfg, &eb), 0);
    assert_int_equal(gsim_graph(g)->n_gpus, 4);
    assert_int_equal(gsim_graph(g)->n_phys, 3);
    assert_int_equal(gsim_graph(g)->gpus[1].phys, 1);
    assert_int_equal(gsim_graph(g)->gpus[3].phys, 2);
    gsim_destroy(&g);
    f->cfg.n_tenants = 2;
    /* a share runs one GPU per container */
    f->ten[1] = tenant(f, "b", "mps:0.4");
    f->ten[1].tp = 2;
    assert_int_equal(gsim_share_check(&f->cfg, &bad, &eb), SS_EINVAL);
    assert_non_null(strstr(eb.msg, "tp = pp = 1"));
    assert_int_equal(gsim_share_parse("mps:1.5", f->cfg.gpu, &f->ten[1].share, &eb), SS_EINVAL);
    assert_int_equal(gsim_share_parse("mig:5g.50gb", f->cfg.gpu, &f->ten[1].share, &eb),
                     SS_EINVAL);
    assert_non_null(strstr(eb.msg, "known: 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb"));
}

/* The finish of each of recs[0..n) replayed with f's configuration. */
static void finishes(fx *f, const trace_rec *recs, size_t n, ss_time *out)
{
    tu_collect c = tu_collect_new(n);
    gsim *g = tu_sim_run(f, recs, n, &c);
    for (size_t i = 0; i < n; i++)
        out[i] = c.r[i].finish;
    free(c.r);
    gsim_destroy(&g);
}

/* Two tenants' containers sharing one GPU (share_gpus 0, 0) by `share`, each sent one long
 * prefill (one step: its first token is its last): b's at b_at seconds. */
static void two_on_one(fx *f, const char *share, double b_at, ss_time *fin)
{
    static const uint32_t zero[1] = {0};
    f->ten[0] = tenant(f, "a", share);
    f->ten[1] = tenant(f, "b", share);
    f->ten[0].share.gpus = f->ten[1].share.gpus = zero;
    f->ten[0].share.n_gpus = f->ten[1].share.n_gpus = 1;
    f->cfg.tenants = f->ten;
    f->cfg.n_tenants = 2;
    trace_rec r[2] = {tu_rec(0, 0, 4096, 1, 0), tu_rec(1, b_at, 4096, 1, 0)};
    r[1].tenant = 1;
    finishes(f, r, 2, fin);
}

/* MPS: two steps that overlap are each slowed by the model's factor; here compute bound (a
 * 4,096-token prefill streams the weights in under 2 % of its time, so the two ask for less
 * than the GPU's bandwidth): by 1 + mps_interference, no more. Apart, neither is slowed. Time
 * slicing: two steps at once each run at timeslice / (2 (timeslice + ctx_switch)). */
static void test_overlapping_steps_slow_down(void **state)
{
    fx *f = *state;
    f->cfg.mps_interference = 0.25;
    ss_time apart[2], both[2];
    two_on_one(f, "mps:0.5", 30, apart);
    two_on_one(f, "mps:0.5", 0, both);
    ss_time alone = apart[0];
    assert_true(alone > 0);
    assert_int_equal(apart[1] - ss_time_from_s(30), alone); /* apart: not slowed */
    assert_int_equal(both[0], both[1]);
    assert_true(llabs(both[0] - (ss_time)ceil(alone * 1.25)) <= 1);
    /* time slicing */
    f->cfg.timeslice = 2 * SS_NS_PER_MS;
    f->cfg.ctx_switch = 100 * SS_NS_PER_US;
    two_on_one(f, "time", 30, apart);
    two_on_one(f, "time", 0, both);
    ss_time alone_t = apart[0];
    assert_int_equal(apart[1] - ss_time_from_s(30), alone_t);
    assert_int_equal(both[0], both[1]);
    assert_true(llabs(both[0] - (ss_time)ceil(alone_t * 2 * 2.1 / 2)) <= 1);
    /* under time slicing each context has the whole GPU's SMs: alone it is faster than an
     * MPS client capped at half of them */
    assert_true(alone_t < alone);
}

/* Multiplexed (MuxServe): two models on one GPU share one KV pool, what the GPU's memory leaves
 * after both models' weights, activations and runtime; blocks one takes are gone from the
 * other's free blocks, in its own block size; and under --check's invariants (the pool's
 * ledger within the GPU's memory after every event) a load that fills the pool runs to the end
 * with preemptions. */
static void test_mux_shared_pool(void **state)
{
    fx *f = *state;
    static const uint32_t zero[1] = {0};
    f->ten[0] = tenant(f, "a", "mux");
    f->ten[1] = tenant(f, "b", "mux");
    f->ten[1].model = catalog_model(f->cat, "llama-3-8b"); /* GQA: a quarter of the KV bytes */
    f->ten[1].share.gpus = zero;
    f->ten[1].share.n_gpus = 1;
    f->cfg.tenants = f->ten;
    f->cfg.n_tenants = 2;
    gsim *g = NULL;
    ss_errbuf eb;
    if (gsim_create(&g, &f->cfg, &eb))
        fail_msg("%s", eb.msg);
    gmg *G = (gmg *)gsim_graph(g);
    assert_int_equal(G->n_phys, 1);
    gmg_container *a = &G->ctrs[0], *b = &G->ctrs[1];
    const gmg_mem *ma = &G->gpus[a->gpu0].mem, *mb = &G->gpus[b->gpu0].mem;
    double pool = f->cfg.gpu_mem_util * f->cfg.gpu->hbm_bytes - ma->weights - ma->activations -
                  ma->runtime - mb->weights - mb->activations - mb->runtime;
    assert_true(fabs(a->mux_pool - pool) < 1 && b->mux_pool == a->mux_pool);
    assert_true(b->block_bytes * 4 == a->block_bytes);
    assert_int_equal(a->blocks_free, (uint32_t)floor(pool / a->block_bytes));
    assert_int_equal(b->blocks_free, (uint32_t)floor(pool / b->block_bytes));
    gmg_reserve_blocks(G, a, 100); /* a's 100 blocks are b's 400 */
    assert_int_equal(a->blocks_total - a->blocks_free, 100);
    assert_int_equal(b->blocks_free, (uint32_t)floor((pool - 100 * a->block_bytes) /
                                                     b->block_bytes));
    assert_int_equal(b->blocks_total, b->blocks_free);
    assert_int_equal(gmg_check(G, &eb), 0);
    gsim_destroy(&g);
    /* a load that fills the pool, every invariant checked after every event */
    f->cfg.check = 1;
    enum { N = 120 };
    trace_rec r[N];
    for (int i = 0; i < N; i++) {
        r[i] = tu_rec((uint64_t)i, 0.01 * i, 3000, 1500, 0);
        r[i].tenant = (uint16_t)(i % 2);
    }
    tu_collect c = tu_collect_new(N);
    g = tu_sim_run(f, r, N, &c);
    uint64_t pre = 0;
    for (int i = 0; i < N; i++)
        assert_true(c.r[i].finish > 0 && !c.r[i].rejected);
    pre = gsim_metrics(g)->all.preemptions;
    assert_true(pre > 0); /* the shared pool ran out */
    free(c.r);
    gsim_destroy(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_mig_slice_scales_the_gpu, setup,
                                        tu_sim_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_mig_layouts, setup, tu_sim_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_mps_and_mixed_layouts, setup,
                                        tu_sim_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_overlapping_steps_slow_down, setup,
                                        tu_sim_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_mux_shared_pool, setup, tu_sim_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
