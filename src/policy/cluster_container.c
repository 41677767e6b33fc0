/* Container-level scheduling, the status quo: each tenant owns whole containers and requests
 * of a tenant only ever run on its own containers. Optionally, every realloc_period_s, the
 * busiest tenant takes a container from the least busy one when its load (outstanding requests
 * per active container) is at least realloc_ratio times higher. The engine then drains the
 * container (its queued requests go to the old tenant's other containers, running ones finish),
 * tears it down (teardown_s) and loads the new model's weights at weight_load_gbps; meanwhile it
 * serves nobody. Only tenants with the same TP degree and no pipeline parallelism trade. */
#include "policy/policy.h"

#include <stdio.h>

typedef struct container_priv {
    double period_s;    /* realloc_period_s: 0 = fixed ownership */
    double ratio;       /* realloc_ratio */
    double teardown_s;  /* teardown_s: drain-to-loading overhead (process restart) */
    double load_gbps;   /* weight_load_gbps: GB/s at which weights reach a GPU */
} container_priv;

static int container_init(void *priv, ss_params *p, ss_errbuf *eb)
{
    container_priv *c = priv;
    int rc = ss_params_get_double(p, "container", "realloc_period_s", 0, 0, 1e7, &c->period_s, eb);
    if (!rc)
        rc = ss_params_get_double(p, "container", "realloc_ratio", 2.0, 1.0, 1e6, &c->ratio, eb);
    if (!rc)
        rc = ss_params_get_double(p, "container", "teardown_s", 5.0, 0, 1e5, &c->teardown_s, eb);
    if (!rc)
        rc = ss_params_get_double(p, "container", "weight_load_gbps", 3.0, 1e-3, 1e5,
                                  &c->load_gbps, eb);
    return rc;
}

static ss_time container_period(const void *priv)
{
    return ss_time_from_s(((const container_priv *)priv)->period_s);
}

/* Outstanding requests per active container. */
static double load_of(const gmg *g, const pol_tenant_view *t)
{
    uint64_t out = 0;
    for (uint32_t i = 0; i < t->n_active; i++) {
        const gmg_container *c = &g->ctrs[t->active[i]];
        out += c->waiting.n + c->running.n + c->swapped.n;
    }
    return t->n_active ? (double)out / t->n_active : 0;
}

/* The least loaded active container of t (lowest id on ties). */
static gmg_id idlest(const gmg *g, const pol_tenant_view *t)
{
    gmg_id best = t->active[0];
    uint32_t best_n = UINT32_MAX;
    for (uint32_t i = 0; i < t->n_active; i++) {
        const gmg_container *c = &g->ctrs[t->active[i]];
        uint32_t n = c->waiting.n + c->running.n + c->swapped.n;
        if (n < best_n) {
            best_n = n;
            best = t->active[i];
        }
    }
    return best;
}

static void container_tick(void *priv, const gmg *g, const pol_cluster_view *v,
                           pol_cluster_decision *out)
{
    const container_priv *c = priv;
    out->setup_ns = ss_time_from_s(c->teardown_s);
    out->load_bw = c->load_gbps * 1e9;
    int hi = -1, lo = -1;
    double l_hi = 0, l_lo = 0;
    for (uint32_t i = 0; i < v->n_tenants; i++) {
        const pol_tenant_view *t = &v->tenants[i];
        double l = load_of(g, t);
        if (t->pp == 1 && t->n_active < t->max_replicas && (hi < 0 || l > l_hi))
            hi = (int)i, l_hi = l;
    }
    for (uint32_t i = 0; hi >= 0 && i < v->n_tenants; i++) {
        const pol_tenant_view *t = &v->tenants[i];
        double l = load_of(g, t);
        if ((int)i != hi && t->pp == 1 && t->tp == v->tenants[hi].tp && t->n_active > 1 &&
            (lo < 0 || l < l_lo))
            lo = (int)i, l_lo = l;
    }
    if (hi < 0 || lo < 0 || l_hi < 1.0 || l_hi < c->ratio * l_lo || !out->cap_realloc)
        return;
    out->realloc[out->n_realloc++] = (pol_realloc){idlest(g, &v->tenants[lo]), (uint16_t)hi};
}

static void container_describe(const void *priv, ss_kv_emit_fn *emit, void *ud)
{
    const container_priv *c = priv;
    char buf[32];
    snprintf(buf, sizeof buf, "%g", c->period_s);
    emit(ud, "realloc_period_s", buf);
    snprintf(buf, sizeof buf, "%g", c->ratio);
    emit(ud, "realloc_ratio", buf);
    snprintf(buf, sizeof buf, "%g", c->teardown_s);
    emit(ud, "teardown_s", buf);
    snprintf(buf, sizeof buf, "%g", c->load_gbps);
    emit(ud, "weight_load_gbps", buf);
}

static const char *const pol_cluster_container_params[] = {"realloc_period_s", "realloc_ratio", "teardown_s", "weight_load_gbps", NULL};

const pol_cluster_ops pol_cluster_container = {
    .abi_version = POL_ABI_VERSION,
    .params = pol_cluster_container_params,
    .name = "container",
    .summary = "each tenant owns whole containers; optional periodic re-allocation by load",
    .priv_size = sizeof(container_priv),
    .init = container_init,
    .period = container_period,
    .tick = container_tick,
    .describe = container_describe,
};
