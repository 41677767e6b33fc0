/* Disaggregated prefill and decode: the first decode step waits exactly for the KV transfer
 * (bytes / link bandwidth + latency with kv_transfer = end; only the exposed part, layer by
 * layer), the prefill instance holds the KV until the transfer lands and then frees it, a
 * decode instance without room makes the transfer wait (the wait shows in the request's TBT),
 * blocks are conserved at every event under --check, every token is produced once, and runs
 * are deterministic. */
#include "support/test_util.h"

#include "catalog/catalog.h"
#include "cost/cost.h"
#include "gsim/gsim.h"

#include <stdlib.h>
#include <string.h>

typedef tu_sim fx; /* the shared simulator fixture (tests/support) */

static int setup(void **state)
{
    if (tu_sim_fixture_setup(state))
        return -1;
    fx *f = *state;
    f->ten[0] = (gsim_tenant){.name = "chat", .model = catalog_model(f->cat, "llama-2-7b"),
                              .tp = 1, .pp = 1, .replicas = 1, .tiers = 1};
    f->cfg.tenants = f->ten;
    f->cfg.n_tenants = 1;
    f->cfg.check = 1; /* every invariant after every event, both pools' blocks included */
    return 0;
}

/* Make tenant 0 disaggregated: p prefill and d decode instances. */
static void disagg(fx *f, uint32_t p, uint32_t d, int mode)
{
    f->ten[0].prefill_replicas = p;
    f->ten[0].decode_replicas = d;
    f->ten[0].kv_transfer = mode;
}


/* One request: its first-to-second token gap and its TTFT, server side (the front-end latency
 * shifts first token and finish alike). */
typedef struct one {
    ss_time gap, ttft;
} one;

static trace_rec one_req(uint32_t prompt)
{
    return (trace_rec){.id = 0, .arrival_ns = 1000, .prompt_tokens = prompt, .output_tokens = 2};
}

static one run_one(fx *f, uint32_t prompt, double *link_bw, double *link_lat, double *bytes)
{
    trace_rec r = one_req(prompt);
    tu_collect c = tu_collect_new(1);
    gsim *g = tu_sim_run(f, &r, 1, &c);
    assert_int_equal(c.n_calls, 1);
    assert_int_equal(c.r[0].generated, 2);
    one o = {.gap = c.r[0].tbt_max, .ttft = c.r[0].first_token - c.r[0].arrival};
    const gmg *G = gsim_graph(g);
    if (link_bw) { /* prefill instance 0 -> decode instance 1 */
        const gmg_gpu *a = &G->gpus[G->ctrs[0].gpu0], *b = &G->gpus[G->ctrs[1].gpu0];
        const gmg_link *l = a->node == b->node ? &G->links[a->node] : &G->links[G->n_links - 1];
        *link_bw = l->bw * gsim_link_eff(&f->cfg, l->kind); /* what a copy over it attains */
        *link_lat = l->latency_s;
        uint32_t blocks = (prompt + G->ctrs[0].block_tokens - 1) / G->ctrs[0].block_tokens;
        *bytes = (double)blocks * G->ctrs[0].block_bytes;
        assert_int_equal(gsim_metrics(g)->all.kv.transfers, 1);
        assert_true(gsim_metrics(g)->all.kv.bytes == *bytes);
    }
    gsim_destroy(&g);
    free(c.r);
    return o;
}

static ss_time ns_of(double s) { return (ss_time)(s * 1e9 + 0.5); }

/* kv_transfer = end: the gap grows by exactly bytes / bandwidth + latency; TTFT is unchanged. */
static void test_end_delay_is_the_link_time(void **state)
{
    fx *f = *state;
    one co = run_one(f, 1000, NULL, NULL, NULL);
    double bw, lat, bytes;
    disagg(f, 1, 1, GSIM_KV_END);
    one dis = run_one(f, 1000, &bw, &lat, &bytes);
    assert_int_equal(dis.ttft, co.ttft);
    ss_time link = ns_of(bytes / bw + lat);
    printf("# end: gap %lld ns co-located, %lld ns disaggregated, link %lld ns (%.0f bytes)\n",
           (long long)co.gap, (long long)dis.gap, (long long)link, bytes);
    assert_true(link > 0);
    assert_int_equal(dis.gap - co.gap, link);
}

/* The delay a kv_transfer = end hand-off adds to the first decode step at link efficiency eff of
 * its link kind (the scenario's override of the GPU profile's [links]), less the link's
 * latency: the part of the transfer that moves bytes. */
static ss_time end_delay_bytes_part(fx *f, gmg_link_kind kind, double eff)
{
    f->cfg.link_eff[kind] = eff;
    disagg(f, 0, 0, GSIM_KV_END);
    one co = run_one(f, 1000, NULL, NULL, NULL);
    double bw, lat, bytes;
    disagg(f, 1, 1, GSIM_KV_END);
    one dis = run_one(f, 1000, &bw, &lat, &bytes);
    f->cfg.link_eff[kind] = 0;
    return dis.gap - co.gap - ns_of(lat);
}

/* Doubling a link's efficiency halves the exposed transfer (within a node, NVLink, and across
 * nodes, the network); the default is the GPU profile's figure, below 1. */
static void test_doubling_efficiency_halves_the_transfer(void **state)
{
    fx *f = *state;
    for (int across = 0; across < 2; across++) {
        f->cfg.gpus_per_node = across ? 1 : 0; /* one GPU per node: the network */
        gmg_link_kind kind = across ? GMG_LINK_NET : GMG_LINK_NVLINK;
        ss_time slow = end_delay_bytes_part(f, kind, 0.4), fast = end_delay_bytes_part(f, kind, 0.8);
        ss_time peak = end_delay_bytes_part(f, kind, 1), dflt = end_delay_bytes_part(f, kind, 0);
        printf("# %s: %lld ns at 0.4, %lld ns at 0.8, %lld ns at the profile's %.2f\n",
               across ? "network" : "nvlink", (long long)slow, (long long)fast, (long long)dflt,
               gsim_link_eff(&f->cfg, kind));
        assert_true(fast > 0);
        assert_true(llabs((long long)(slow - 2 * fast)) <= 2); /* each time rounded to 1 ns */
        assert_true(gsim_link_eff(&f->cfg, kind) < 1);
        assert_true(dflt > peak);
        assert_true(llabs((long long)(dflt * gsim_link_eff(&f->cfg, kind) - (double)peak)) <= 2);
    }
}

/* The exposed part of a layer-by-layer transfer: the last layer's share with the latency, plus
 * any excess of the other layers' sends over the compute of the layers after them. */
static ss_time layer_exposed(fx *f, uint32_t prompt, double bw, double lat, double bytes)
{
    const cat_model *m = f->ten[0].model;
    gsim *g = NULL;
    ss_errbuf eb;
    assert_int_equal(gsim_create(&g, &f->cfg, &eb), 0);
    cost_batch b = {0};
    cost_batch_add_prefill(&b, prompt, 0);
    cost_split sp;
    cost_iteration_split(gsim_graph(g)->ctrs[0].cost, &b, &sp);
    gsim_destroy(&g);
    double share = bytes / m->layers;
    ss_time last = ns_of(share / bw + lat), send = ns_of(share / bw);
    ss_time excess = send > sp.layer_ns ? (ss_time)(m->layers - 1) * (send - sp.layer_ns) : 0;
    printf("# layer: %u layers of %lld ns compute, a share sends in %lld ns\n", m->layers,
           (long long)sp.layer_ns, (long long)send);
    return last + excess;
}

/* kv_transfer = layer: the gap grows by the exposed part only, less than the whole transfer;
 * within a node (NVLink) and across nodes (the NIC). */
static void test_layer_delay_is_the_exposed_part(void **state)
{
    fx *f = *state;
    for (int across = 0; across < 2; across++) {
        f->cfg.gpus_per_node = across ? 1 : 0; /* one GPU per node: the network */
        disagg(f, 0, 0, GSIM_KV_END);
        one co = run_one(f, 1000, NULL, NULL, NULL);
        double bw, lat, bytes;
        disagg(f, 1, 1, GSIM_KV_LAYER);
        one dis = run_one(f, 1000, &bw, &lat, &bytes);
        assert_int_equal(dis.ttft, co.ttft);
        ss_time exposed = layer_exposed(f, 1000, bw, lat, bytes);
        printf("# layer (%s): gap grows %lld ns, exposed %lld ns of %lld ns\n",
               across ? "network" : "nvlink", (long long)(dis.gap - co.gap), (long long)exposed,
               (long long)ns_of(bytes / bw + lat));
        assert_int_equal(dis.gap - co.gap, exposed);
        assert_true(exposed < ns_of(bytes / bw + lat));
    }
}

/* The prefill instance holds the KV until the transfer lands (blocks in transit there, the
 * same number reserved on the decode instance), then frees it; the decode instance runs it. */
static void test_prefill_holds_kv_until_landed(void **state)
{
    fx *f = *state;
    double bw, lat, bytes;
    disagg(f, 1, 1, GSIM_KV_END);
    one o = run_one(f, 1000, &bw, &lat, &bytes);
    ss_time link = ns_of(bytes / bw + lat);
    trace_rec r = one_req(1000);
    gsim *g = NULL;
    ss_errbuf eb;
    assert_int_equal(gsim_create(&g, &f->cfg, &eb), 0);
    tu_recs src = {&r, 1, 0};
    assert_int_equal(gsim_start(g, tu_recs_next, &src, NULL, NULL, &eb), 0);
    const gmg *G = gsim_graph(g);
    const gmg_container *p = &G->ctrs[0], *d = &G->ctrs[1];
    assert_int_equal(p->role, GMG_ROLE_PREFILL);
    assert_int_equal(d->role, GMG_ROLE_DECODE);
    ss_time first = r.arrival_ns + o.ttft; /* server side: no front-end latency in it */
    const cat_engine *e = f->cfg.engine;
    if (e && e->frontend_s > 0)
        first -= ns_of(e->frontend_s);
    assert_int_equal(gsim_advance(g, first, &eb), 0);
    uint32_t blocks = (1000 + p->block_tokens - 1) / p->block_tokens;
    assert_int_equal(p->n_kv_out, 1);
    assert_int_equal(p->blocks_in_transit, blocks);
    assert_int_equal(p->blocks_free, p->blocks_total - blocks);
    assert_int_equal(d->blocks_reserved, blocks);
    assert_int_equal(d->running.n, 0);
    assert_int_equal(gsim_advance(g, first + link - 1, &eb), 0);
    assert_int_equal(p->blocks_in_transit, blocks); /* still on its way */
    assert_int_equal(gsim_advance(g, first + link, &eb), 0);
    assert_int_equal(p->n_kv_out, 0);
    assert_int_equal(p->blocks_in_transit, 0);
    assert_int_equal(p->blocks_free, p->blocks_total);
    assert_int_equal(d->blocks_reserved, 0);
    assert_int_equal(d->running.n, 1);
    assert_int_equal(G->reqs[d->running.head].container, d->id);
    assert_int_equal(gsim_advance(g, SS_TIME_MAX, &eb), 0);
    assert_int_equal(gsim_finish(g), 0);
    gsim_destroy(&g);
}

/* A decode instance with no room: the second long request's KV waits, held by its prefill
 * instance, until the first request's decode frees the blocks; the wait is in its gap. */
static void test_full_decode_makes_the_transfer_wait(void **state)
{
    fx *f = *state;
    f->cfg.gpu_mem_util = 0.3;
    ss_params_set(f->params, "max_num_batched_tokens", "16384");
    disagg(f, 2, 1, GSIM_KV_END);
    gsim *g = NULL;
    ss_errbuf eb;
    assert_int_equal(gsim_create(&g, &f->cfg, &eb), 0);
    uint32_t total = gsim_graph(g)->ctrs[2].blocks_total;
    gsim_destroy(&g);
    uint32_t prompt = total * 16 * 6 / 10; /* 60 % of the decode pool each */
    trace_rec r[2] = {
        {.id = 0, .arrival_ns = 1000, .prompt_tokens = prompt, .output_tokens = 50},
        {.id = 1, .arrival_ns = 2000, .prompt_tokens = prompt, .output_tokens = 2},
    };
    tu_collect c = tu_collect_new(2);
    g = tu_sim_run(f, r, 2, &c);
    const metrics *m = gsim_metrics(g);
    printf("# decode pool %u blocks, prompts %u tokens; %llu waits, %.3f ms waited\n", total,
           prompt, (unsigned long long)m->all.kv.waits, ss_time_to_ms(m->all.kv.wait_ns));
    assert_int_equal(m->all.kv.transfers, 2);
    assert_int_equal(m->all.kv.waits, 1);
    assert_true(m->all.kv.wait_ns > 0);
    assert_int_equal(c.r[0].generated, 50);
    assert_int_equal(c.r[1].generated, 2);
    /* its second token comes after the first request has finished and freed the pool */
    assert_true(c.r[1].first_token + c.r[1].tbt_max >= c.r[0].finish);
    assert_true(c.r[1].tbt_max > m->all.kv.wait_ns);
    const gmg *G = gsim_graph(g);
    for (uint32_t k = 0; k < G->n_ctrs; k++) {
        assert_int_equal(G->ctrs[k].blocks_free, G->ctrs[k].blocks_total);
        assert_int_equal(G->ctrs[k].blocks_reserved, 0);
    }
    gsim_destroy(&g);
    free(c.r);
}

/* A busy run: every request served once with every token, blocks conserved at every event
 * (--check) and all free at the end, one transfer per request that decodes, and the same
 * results twice. */
static void test_busy_run_conserves_and_repeats(void **state)
{
    fx *f = *state;
    f->cfg.gpu_mem_util = 0.4;
    disagg(f, 2, 2, GSIM_KV_LAYER);
    enum { N = 600 };
    trace_rec *r = tu_synth_conv(N, 12, 7, 1);
    metrics_req *prev = NULL;
    for (int rep = 0; rep < 2; rep++) {
        tu_collect c = tu_collect_new(N);
        gsim *g = tu_sim_run(f, r, N, &c);
        assert_int_equal(c.n_calls, N);
        assert_int_equal(c.dup, 0);
        uint64_t decoded = 0;
        for (size_t i = 0; i < N; i++) {
            assert_false(c.r[i].rejected);
            assert_int_equal(c.r[i].generated, r[i].output_tokens);
            decoded += c.r[i].generated > 1;
        }
        const metrics *m = gsim_metrics(g);
        assert_int_equal(m->all.kv.transfers, decoded);
        assert_int_equal(m->tenants[0].kv.transfers, decoded);
        const gmg *G = gsim_graph(g);
        for (uint32_t k = 0; k < G->n_ctrs; k++) {
            const gmg_container *ct = &G->ctrs[k];
            assert_int_equal(ct->blocks_free, ct->blocks_total);
            assert_int_equal(ct->blocks_in_transit + ct->blocks_reserved + ct->n_kv_out, 0);
            assert_true(ct->iterations > 0); /* both pools worked */
        }
        printf("# run %d: %llu transfers, %.1f MiB, exposed %.3f ms mean, %llu waits\n", rep,
               (unsigned long long)m->all.kv.transfers, m->all.kv.bytes / 1048576.0,
               ss_time_to_ms(m->all.kv.exposed_ns) / (double)m->all.kv.transfers,
               (unsigned long long)m->all.kv.waits);
        if (prev)
            assert_memory_equal(prev, c.r, N * sizeof *c.r);
        free(prev);
        prev = c.r;
        gsim_destroy(&g);
    }
    free(prev);
    free(r);
}

/* A what-if fork of a disaggregated run is refused with a message: a fork copied the run's
 * decode-instance list by pointer (freed twice when both were destroyed) and none of its KV
 * hand-offs (the fork crashed at its first one). The run itself goes on unharmed. */
static void test_fork_refused(void **state)
{
    fx *f = *state;
    disagg(f, 1, 1, GSIM_KV_LAYER);
    trace_rec r = one_req(500);
    gsim *g = NULL, *w = NULL;
    ss_errbuf eb;
    assert_int_equal(gsim_create(&g, &f->cfg, &eb), 0);
    tu_recs src = {&r, 1, 0};
    assert_int_equal(gsim_start(g, tu_recs_next, &src, NULL, NULL, &eb), 0);
    assert_int_equal(gsim_advance(g, 2000, &eb), 0); /* the request is in */
    gmg_id both[2] = {0, 1};
    assert_int_equal(gsim_fork(g, both, 2, NULL, NULL, &w, &eb), SS_EINVAL);
    assert_null(w);
    assert_non_null(strstr(eb.msg, "fork: tenant chat serves from separate prefill and decode"));
    assert_int_equal(gsim_advance(g, SS_TIME_MAX, &eb), 0);
    assert_int_equal(gsim_finish(g), 0);
    assert_int_equal(gsim_metrics(g)->all.kv.transfers, 1);
    gsim_destroy(&g);
}

/* What the simulator refuses: a pool without the other, pipeline parallelism, migration. */
static void test_refusals(void **state)
{
    fx *f = *state;
    gsim *g = NULL;
    ss_errbuf eb;
    disagg(f, 2, 0, GSIM_KV_LAYER);
    assert_int_equal(gsim_create(&g, &f->cfg, &eb), SS_EINVAL);
    assert_non_null(strstr(eb.msg, "needs both a prefill and a decode pool"));
    disagg(f, 1, 1, GSIM_KV_LAYER);
    f->ten[0].pp = 2;
    assert_int_equal(gsim_create(&g, &f->cfg, &eb), SS_EINVAL);
    assert_non_null(strstr(eb.msg, "pipeline parallelism"));
    f->ten[0].pp = 1;
    f->cfg.cluster = "llumnix";
    assert_int_equal(gsim_create(&g, &f->cfg, &eb), SS_EINVAL);
    assert_non_null(strstr(eb.msg, "cluster policy 'llumnix'"));
    f->cfg.cluster = NULL;
    f->cfg.ops = "slice";
    assert_int_equal(gsim_create(&g, &f->cfg, &eb), SS_EINVAL);
    assert_non_null(strstr(eb.msg, "operator placement 'slice'"));
    f->cfg.ops = NULL;
    f->cfg.nodes = 1;
    f->cfg.gpus_per_node = 2;
    disagg(f, 2, 1, GSIM_KV_LAYER);
    assert_int_equal(gsim_create(&g, &f->cfg, &eb), SS_EINVAL);
    assert_non_null(strstr(eb.msg, "need 3 GPUs"));
    assert_null(g);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, tu_sim_fixture_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_end_delay_is_the_link_time),
        T(test_layer_delay_is_the_exposed_part),
        T(test_doubling_efficiency_halves_the_transfer),
        T(test_prefill_holds_kv_until_landed),
        T(test_full_decode_makes_the_transfer_wait),
        T(test_busy_run_conserves_and_repeats),
        T(test_refusals),
        T(test_fork_refused),
    };
    return cmocka_run_group_tests_name("disagg", tests, NULL, NULL);
}
