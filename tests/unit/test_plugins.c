/* Plug-ins from the outside: a policy registered at run time is found by name like the
 * built-ins (and listed in their names); a malformed decision of any plug-in kind (batching,
 * routing, cluster, placement) stops the run with an error that names the policy, instead of
 * aborting the process or being dropped silently; advice the state no longer allows is declined
 * and counted; and the second placement policy, greedy,
 * moves prefills through the same mechanism as SliceScheduler without a what-if. */
#include "support/test_util.h"

#include "catalog/catalog.h"
#include "gsim/gsim.h"
#include "policy/policy.h"

#include <stdlib.h>
#include <string.h>

typedef tu_sim fx; /* the shared simulator fixture (tests/support) */

static int setup(void **state)
{
    if (tu_sim_fixture_setup(state))
        return -1;
    fx *f = *state;
    f->cfg.replicas = 2;
    return 0;
}


/* Run f's configuration over 40 requests; the run's code, its message in eb and (if g_out) the
 * simulation are returned. */
static int run(fx *f, ss_errbuf *eb, gsim **g_out)
{
    trace_rec *r = tu_synth_conv(40, 20, 7, 1);
    gsim *g = NULL;
    int rc = gsim_create(&g, &f->cfg, eb);
    if (rc)
        fail_msg("gsim_create: %s", eb->msg);
    tu_recs src = {r, 40, 0};
    rc = gsim_run(g, tu_recs_next, &src, NULL, NULL, eb);
    free(r);
    if (g_out)
        *g_out = g;
    else
        gsim_destroy(&g);
    return rc;
}

static void expect_malfunction(fx *f, const char *want)
{
    ss_errbuf eb;
    int rc = run(f, &eb, NULL);
    if (rc != SS_EINVAL || !strstr(eb.msg, want))
        fail_msg("want SS_EINVAL and \"%s\", got %d: %s", want, rc, eb.msg);
}

/* ---- bad plug-ins ------------------------------------------------------------------------ */

static void bad_decide(void *priv, void *ctr_priv, const gmg *g, const gmg_container *c,
                       pol_batch_decision *out)
{
    (void)priv, (void)ctr_priv, (void)g;
    out->run[0] = c->waiting.head != GMG_NONE ? c->waiting.head : c->running.head;
    out->q_tokens[0] = 1u << 30; /* more tokens than any request has pending */
    out->hold[0] = 0;
    out->n_run = 1;
}

static void idle_decide(void *priv, void *ctr_priv, const gmg *g, const gmg_container *c,
                        pol_batch_decision *out)
{
    (void)priv, (void)ctr_priv, (void)g, (void)c, (void)out; /* never runs anything */
}

/* Admits the head of the queue for one token, holding a block more than the pool has free. */
static void hog_decide(void *priv, void *ctr_priv, const gmg *g, const gmg_container *c,
                       pol_batch_decision *out)
{
    (void)priv, (void)ctr_priv, (void)g;
    if (c->waiting.head == GMG_NONE)
        return;
    out->run[0] = c->waiting.head;
    out->q_tokens[0] = 1;
    out->hold[0] = c->blocks_free + 1;
    out->n_run = 1;
}

static int no_init(void *priv, ss_params *params, const pol_engine_cfg *cfg, ss_errbuf *eb)
{
    (void)priv, (void)params, (void)cfg, (void)eb;
    return SS_OK;
}

static const pol_batch_ops bad_batch = {.abi_version = POL_ABI_VERSION, .name = "t-bad",
                                        .init = no_init, .decide = bad_decide};
static const pol_batch_ops idle_batch = {.abi_version = POL_ABI_VERSION, .name = "t-idle",
                                         .init = no_init, .decide = idle_decide};
static const pol_batch_ops hog_batch = {.abi_version = POL_ABI_VERSION, .name = "t-hog",
                                        .init = no_init, .decide = hog_decide};

static gmg_id bad_pick(void *priv, const gmg *g, gmg_id r, const gmg_id *cands, uint32_t n,
                       ss_rng *rng)
{
    (void)priv, (void)r, (void)cands, (void)n, (void)rng;
    return g->n_ctrs + 3; /* no such container */
}

static const pol_route_ops bad_route = {.abi_version = POL_ABI_VERSION, .name = "t-bad",
                                        .pick = bad_pick};

static ss_time every_50ms(const void *priv)
{
    (void)priv;
    return 50 * SS_NS_PER_MS;
}

static void bad_tick(void *priv, const gmg *g, const pol_cluster_view *v,
                     pol_cluster_decision *out)
{
    (void)priv, (void)v;
    out->migrate[0] = (pol_migration){.req = 0, .from = 0, .to = g->n_ctrs}; /* no such one */
    out->n_migrate = 1;
}

static const pol_cluster_ops bad_cluster = {.abi_version = POL_ABI_VERSION, .name = "t-bad",
                                            .period = every_50ms, .tick = bad_tick};

/* Well-formed advice the state does not allow: scale up a container that is already active. */
static void stale_tick(void *priv, const gmg *g, const pol_cluster_view *v,
                       pol_cluster_decision *out)
{
    (void)priv, (void)g;
    out->scale_up[0] = v->tenants[0].active[0];
    out->n_scale_up = 1;
}

static const pol_cluster_ops stale_cluster = {.abi_version = POL_ABI_VERSION, .name = "t-stale",
                                              .period = every_50ms, .tick = stale_tick};

static int bad_place_tick(void *priv, const pol_place_env *env, const gmg *g,
                          pol_place_decision *out, pol_place_stats *st, ss_errbuf *eb)
{
    (void)priv, (void)env, (void)st, (void)eb;
    /* a request to offload onto its own container's GPUs */
    for (uint32_t c = 0; c < g->n_ctrs; c++)
        if (g->ctrs[c].waiting.head != GMG_NONE && out->cap_offload) {
            out->offload[out->n_offload++] = (pol_offload){g->ctrs[c].waiting.head, c, 0};
            break;
        }
    return SS_OK;
}

static const pol_place_ops bad_place = {.abi_version = POL_ABI_VERSION, .name = "t-bad",
                                        .period = every_50ms, .tick = bad_place_tick};

/* Migrate container 0's first running request to container 1 while container 1 runs nothing:
 * one live migration, started at the first tick (50 ms). */
static void mig_tick(void *priv, const gmg *g, const pol_cluster_view *v,
                     pol_cluster_decision *out)
{
    (void)priv, (void)v;
    if (g->n_ctrs < 2 || g->ctrs[0].running.head == GMG_NONE || g->ctrs[1].running.n ||
        !out->cap_migrate)
        return;
    out->migrate[0] = (pol_migration){.req = g->ctrs[0].running.head, .from = 0, .to = 1};
    out->n_migrate = 1;
}

static const pol_cluster_ops mig_cluster = {.abi_version = POL_ABI_VERSION, .name = "t-mig",
                                            .period = every_50ms, .tick = mig_tick};

static int group_setup(void **state)
{
    (void)state;
    if (pol_batch_register(&bad_batch) || pol_batch_register(&idle_batch) ||
        pol_batch_register(&hog_batch) ||
        pol_route_register(&bad_route) || pol_cluster_register(&bad_cluster) ||
        pol_cluster_register(&stale_cluster) || pol_cluster_register(&mig_cluster) ||
        pol_place_register(&bad_place))
        return -1;
    return 0;
}

/* ---- tests ------------------------------------------------------------------------------- */

static void test_registered_plugins_are_found_and_listed(void **state)
{
    (void)state;
    assert_ptr_equal(pol_batch_find("t-bad"), &bad_batch);
    assert_ptr_equal(pol_place_find("t-bad"), &bad_place);
    assert_non_null(strstr(pol_batch_names(), "vllm, orca, sarathi, static, t-bad, t-idle"));
    assert_non_null(strstr(pol_place_names(), "home, slice, greedy, t-bad"));
    assert_int_equal(pol_batch_register(&bad_batch), SS_EINVAL); /* the name is taken */
}

static void test_bad_batching_decision_is_an_error(void **state)
{
    fx *f = *state;
    f->cfg.batching = "t-bad";
    expect_malfunction(f, "batching policy 't-bad' malfunction: container ");
    expect_malfunction(f, "pending");
}

static void test_stalled_batching_is_an_error(void **state)
{
    fx *f = *state;
    f->cfg.batching = "t-idle";
    expect_malfunction(f, "batching policy 't-idle' malfunction: container 0 at ");
    expect_malfunction(f, "stalled with 1 waiting");
}

/* More KV blocks than are free: the policy's error, not an abort of the process. */
static void test_batching_beyond_the_kv_pool_is_an_error(void **state)
{
    fx *f = *state;
    f->cfg.batching = "t-hog";
    expect_malfunction(f, "batching policy 't-hog' malfunction: container 0 at ");
    expect_malfunction(f, "for 1 tokens, which need ");
}

static void test_bad_routing_is_an_error(void **state)
{
    fx *f = *state;
    f->cfg.routing = "t-bad";
    expect_malfunction(f, "routing policy 't-bad' malfunction: at ");
    expect_malfunction(f, "not one of the tenant's 2 active containers");
}

static void test_bad_cluster_advice_is_an_error(void **state)
{
    fx *f = *state;
    f->cfg.cluster = "t-bad";
    expect_malfunction(f, "cluster policy 't-bad' malfunction: at 0.05 s a migration names");
}

/* Advice the state no longer allows is declined, counted, and the run goes on. */
static void test_stale_cluster_advice_is_counted(void **state)
{
    fx *f = *state;
    f->cfg.cluster = "t-stale";
    ss_errbuf eb;
    gsim *g = NULL;
    if (run(f, &eb, &g))
        fail_msg("run: %s", eb.msg);
    const metrics *m = gsim_metrics(g);
    printf("# %llu pieces of advice declined\n", (unsigned long long)m->advice_declined);
    assert_true(m->advice_declined > 0);
    assert_int_equal(m->scale_ups, 0);
    gsim_destroy(&g);
}

/* The first stage of a live migration through the real path (the cluster policy's advice, the
 * simulator's copy over the link between the containers): how long it holds the destination
 * GPU's receive port, less the link's latency, at link efficiency eff (the scenario's
 * override; 0: the GPU profile's). *bytes_out: what it moved. */
static ss_time mig_copy_ns(fx *f, double eff, gmg_link_kind kind, double *bytes_out)
{
    f->cfg.cluster = "t-mig";
    f->cfg.link_eff[kind] = eff;
    trace_rec r = tu_rec(0, 0, 200, 3000, 0);
    gsim *g = NULL;
    ss_errbuf eb;
    if (gsim_create(&g, &f->cfg, &eb))
        fail_msg("gsim_create: %s", eb.msg);
    tu_recs src = {&r, 1, 0};
    ss_time tick = 50 * SS_NS_PER_MS;
    if (gsim_start(g, tu_recs_next, &src, NULL, NULL, &eb) || gsim_advance(g, tick, &eb))
        fail_msg("replay: %s", eb.msg);
    const gmg *G = gsim_graph(g);
    const gmg_link *l = gmg_link_between(G, G->ctrs[0].gpu0, G->ctrs[1].gpu0);
    assert_int_equal(l->kind, kind);
    *bytes_out = gsim_metrics(g)->migration_bytes;
    assert_true(*bytes_out > 0); /* the first stage copies what the request holds */
    ss_time copy = G->gpus[G->ctrs[1].gpu0].rx_busy - tick - ss_time_from_ns_sat(l->latency_s * 1e9);
    if (gsim_advance(g, SS_TIME_MAX, &eb) || gsim_finish(g))
        fail_msg("replay: %s", eb.msg);
    assert_int_equal(gsim_metrics(g)->migrations, 1);
    gsim_destroy(&g);
    f->cfg.link_eff[kind] = 0;
    return copy;
}

/* Doubling the link's efficiency halves a migration's copy, within a node (NVLink) and across
 * nodes (the network); by default the copy runs at the GPU profile's efficiency, below 1. */
static void test_migration_copy_follows_link_efficiency(void **state)
{
    fx *f = *state;
    for (int across = 0; across < 2; across++) {
        f->cfg.gpus_per_node = across ? 1 : 0;
        gmg_link_kind kind = across ? GMG_LINK_NET : GMG_LINK_NVLINK;
        double b1, b2, b3, b4;
        ss_time slow = mig_copy_ns(f, 0.4, kind, &b1), fast = mig_copy_ns(f, 0.8, kind, &b2);
        ss_time peak = mig_copy_ns(f, 1, kind, &b3), dflt = mig_copy_ns(f, 0, kind, &b4);
        printf("# migration over %s: %.0f bytes, %lld ns at 0.4, %lld at 0.8, %lld at the "
               "profile's %.2f, %lld at 1\n", across ? "the network" : "NVLink", b1,
               (long long)slow, (long long)fast, (long long)dflt, gsim_link_eff(&f->cfg, kind),
               (long long)peak);
        assert_true(b1 == b2 && b2 == b3 && b3 == b4);
        assert_true(fast > 0);
        assert_true(llabs((long long)(slow - 2 * fast)) <= 2);
        assert_true(gsim_link_eff(&f->cfg, kind) < 1 && dflt > peak);
        assert_true(llabs((long long)(dflt * gsim_link_eff(&f->cfg, kind) - (double)peak)) <= 2);
    }
}

static void test_bad_placement_is_an_error(void **state)
{
    fx *f = *state;
    f->cfg.ops = "t-bad";
    expect_malfunction(f, "placement policy 't-bad' malfunction: decision 1 of 1 at ");
    expect_malfunction(f, "cannot help container");
}

/* greedy: prefills move to the idle container with no what-if, and every request completes. */
static void test_greedy_placement_offloads_without_whatifs(void **state)
{
    fx *f = *state;
    f->cfg.ops = "greedy";
    f->cfg.routing = "rr";
    ss_errbuf eb;
    gsim *g = NULL;
    if (run(f, &eb, &g))
        fail_msg("run: %s", eb.msg);
    const slice_stats *st = gsim_slice_stats(g);
    const metrics *m = gsim_metrics(g);
    assert_non_null(st);
    assert_string_equal(gsim_placement_name(g), "greedy");
    printf("# greedy: %llu offloads, %llu refused for memory\n",
           (unsigned long long)m->offloads, (unsigned long long)st->refused_memory);
    assert_true(m->offloads > 0);
    assert_int_equal(st->chosen, m->offloads);
    assert_int_equal(st->whatifs, 0);
    assert_int_equal(m->offloads_done, m->offloads);
    gsim_destroy(&g);
}

/* greedy's moves are charged as SliceScheduler's: the same keys, defaults and ranges, and no
 * decision latency (it asks no what-if). */
static void test_greedy_is_charged_the_move_costs(void **state)
{
    (void)state;
    ss_params *p = NULL;
    ss_errbuf eb = {""};
    pol_place *pl = NULL;
    pol_place_mechanism m, ms;
    assert_int_equal(ss_params_create(&p), 0);
    assert_int_equal(pol_place_create(&pl, "greedy", p, &eb), 0);
    assert_true(pol_place_mechanism_of(pl, &m));
    pol_place_destroy(&pl);
    assert_int_equal(pol_place_create(&pl, "slice", p, &eb), 0);
    assert_true(pol_place_mechanism_of(pl, &ms));
    pol_place_destroy(&pl);
    /* link_eff 0: the link's own efficiency (the GPU profile's [links]) */
    assert_true(m.host_factor == 1 && m.link_eff == 0 && m.interference == 1.2);
    assert_true(m.host_factor == ms.host_factor && m.link_eff == ms.link_eff &&
                m.interference == ms.interference);
    assert_true(m.guest_overrun == ms.guest_overrun && m.weights == ms.weights);
    assert_int_equal(m.whatif_ns, 0);
    assert_int_equal(ss_params_set_kv(p, "slice_host_factor=2", &eb), 0);
    assert_int_equal(ss_params_set_kv(p, "slice_link_eff=0.5", &eb), 0);
    assert_int_equal(ss_params_set_kv(p, "slice_interference=1.5", &eb), 0);
    assert_int_equal(pol_place_create(&pl, "greedy", p, &eb), 0);
    assert_true(pol_place_mechanism_of(pl, &m));
    pol_place_destroy(&pl);
    assert_true(m.host_factor == 2 && m.link_eff == 0.5 && m.interference == 1.5);
    ss_params_destroy(&p);
    assert_int_equal(ss_params_create(&p), 0);
    assert_int_equal(ss_params_set_kv(p, "slice_link_eff=0", &eb), 0);
    assert_int_not_equal(pol_place_create(&pl, "greedy", p, &eb), 0);
    assert_non_null(strstr(eb.msg, "slice_link_eff"));
    ss_params_destroy(&p);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, tu_sim_fixture_teardown)
    const struct CMUnitTest tests[] = {
        T(test_registered_plugins_are_found_and_listed),
        T(test_bad_batching_decision_is_an_error),
        T(test_stalled_batching_is_an_error),
        T(test_batching_beyond_the_kv_pool_is_an_error),
        T(test_bad_routing_is_an_error),
        T(test_bad_cluster_advice_is_an_error),
        T(test_stale_cluster_advice_is_counted),
        T(test_migration_copy_follows_link_efficiency),
        T(test_bad_placement_is_an_error),
        T(test_greedy_placement_offloads_without_whatifs),
        T(test_greedy_is_charged_the_move_costs),
    };
#undef T
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
