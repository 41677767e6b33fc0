/* Policy registries and the instance wrappers that check plug-ins and forward calls. */
#include "policy/policy.h"

#include "core/ss_alloc.h"

#include <string.h>

static const pol_route_ops *const route_builtin[] = {
    &pol_route_rr, &pol_route_lor, &pol_route_random, &pol_route_infaas, &pol_route_llumnix, NULL};
static const pol_batch_ops *const batch_builtin[] = {&pol_batch_vllm, &pol_batch_orca,
                                                     &pol_batch_sarathi, &pol_batch_static, NULL};

struct pol_route {
    const pol_route_ops *ops;
    ss_rng *rng; /* borrowed */
    _Alignas(16) unsigned char priv[];
};

struct pol_batch {
    const pol_batch_ops *ops;
    _Alignas(16) unsigned char priv[];
};

const pol_route_ops *pol_route_find(const char *name)
{
    for (int i = 0; route_builtin[i]; i++)
        if (!strcmp(route_builtin[i]->name, name))
            return route_builtin[i];
    return NULL;
}

const char *pol_route_names(void) { return "rr, lor, random, infaas, llumnix"; }

int pol_route_create(pol_route **out, const char *name, ss_params *params, const char *cluster,
                     ss_rng *rng, ss_errbuf *eb)
{
    const pol_route_ops *ops = pol_route_find(name);
    if (!ops)
        return ss_err(eb, SS_ENOTFOUND, "--routing: unknown policy '%s' (known: %s)", name,
                      pol_route_names());
    if (ops->abi_version != POL_ABI_VERSION || !ops->pick)
        return ss_err(eb, SS_EINVAL, "routing policy '%s': incompatible plug-in", name);
    pol_route *p = ss_calloc(1, sizeof *p + ops->priv_size);
    if (!p)
        return ss_err(eb, SS_ENOMEM, "routing: out of memory");
    p->ops = ops;
    p->rng = rng;
    int rc = ops->init ? ops->init(p->priv, params, cluster ? cluster : "container", eb) : SS_OK;
    if (rc) {
        ss_free(p);
        return rc;
    }
    *out = p;
    return SS_OK;
}

void pol_route_destroy(pol_route **pp)
{
    ss_free(*pp);
    *pp = NULL;
}

gmg_id pol_route_pick(pol_route *p, const gmg *g, gmg_id r, const gmg_id *cands, uint32_t n)
{
    return p->ops->pick(p->priv, g, r, cands, n, p->rng);
}

const char *pol_route_name(const pol_route *p) { return p->ops->name; }

void pol_route_describe(const pol_route *p, ss_kv_emit_fn *emit, void *ud)
{
    if (p->ops->describe)
        p->ops->describe(p->priv, emit, ud);
}

const pol_batch_ops *pol_batch_find(const char *name)
{
    for (int i = 0; batch_builtin[i]; i++)
        if (!strcmp(batch_builtin[i]->name, name))
            return batch_builtin[i];
    return NULL;
}

const char *pol_batch_names(void) { return "vllm, orca, sarathi, static"; }

int pol_batch_create(pol_batch **out, const char *name, ss_params *params,
                     const pol_engine_cfg *cfg, ss_errbuf *eb)
{
    const pol_batch_ops *ops = pol_batch_find(name);
    if (!ops)
        return ss_err(eb, SS_ENOTFOUND, "--batching: unknown policy '%s' (known: %s)", name,
                      pol_batch_names());
    if (ops->abi_version != POL_ABI_VERSION || !ops->init || !ops->decide)
        return ss_err(eb, SS_EINVAL, "batching policy '%s': incompatible plug-in", name);
    pol_batch *p = ss_calloc(1, sizeof *p + ops->priv_size);
    if (!p)
        return ss_err(eb, SS_ENOMEM, "batching: out of memory");
    p->ops = ops;
    int rc = ops->init(p->priv, params, cfg, eb);
    if (rc) {
        ss_free(p);
        return rc;
    }
    *out = p;
    return SS_OK;
}

void pol_batch_destroy(pol_batch **pp)
{
    ss_free(*pp);
    *pp = NULL;
}

size_t pol_batch_ctr_priv_size(const pol_batch *p) { return p->ops->ctr_priv_size; }

void pol_batch_decide(pol_batch *p, void *ctr_priv, const gmg *g, const gmg_container *c,
                      pol_batch_decision *out)
{
    out->n_run = out->n_preempt = out->n_swap_out = out->n_swap_in = out->n_reject = 0;
    memset(&out->extra, 0, sizeof out->extra);
    p->ops->decide(p->priv, ctr_priv, g, c, out);
}

uint64_t pol_batch_max_tokens(const pol_batch *p)
{
    return p->ops->max_batch_tokens ? p->ops->max_batch_tokens(p->priv) : 0;
}

uint32_t pol_batch_max_seqs(const pol_batch *p)
{
    return p->ops->max_seqs ? p->ops->max_seqs(p->priv) : 0;
}

uint32_t pol_batch_offload_hold(const pol_batch *p, const gmg_container *c, const gmg_req *q)
{
    return p->ops->offload_hold ? p->ops->offload_hold(p->priv, c, q)
                                : gmg_blocks_for(c, q->prompt);
}

const char *pol_batch_name(const pol_batch *p) { return p->ops->name; }

void pol_batch_describe(const pol_batch *p, ss_kv_emit_fn *emit, void *ud)
{
    if (p->ops->describe)
        p->ops->describe(p->priv, emit, ud);
}

/* ---- cluster policies ------------------------------------------------------------------- */

static const pol_cluster_ops *const cluster_builtin[] = {
    &pol_cluster_container, &pol_cluster_llumnix, &pol_cluster_llumnix_tiers, NULL};

struct pol_cluster {
    const pol_cluster_ops *ops;
    _Alignas(16) unsigned char priv[];
};

const pol_cluster_ops *pol_cluster_find(const char *name)
{
    for (int i = 0; cluster_builtin[i]; i++)
        if (!strcmp(cluster_builtin[i]->name, name))
            return cluster_builtin[i];
    return NULL;
}

const char *pol_cluster_names(void) { return "container, llumnix, llumnix-tiers"; }

int pol_cluster_autoscale(const pol_cluster *p) { return p->ops->autoscale; }

int pol_cluster_create(pol_cluster **out, const char *name, ss_params *params, ss_errbuf *eb)
{
    const pol_cluster_ops *ops = pol_cluster_find(name);
    if (!ops)
        return ss_err(eb, SS_ENOTFOUND, "--cluster: unknown policy '%s' (known: %s)", name,
                      pol_cluster_names());
    if (ops->abi_version != POL_ABI_VERSION || !ops->period)
        return ss_err(eb, SS_EINVAL, "cluster policy '%s': incompatible plug-in", name);
    pol_cluster *p = ss_calloc(1, sizeof *p + ops->priv_size);
    if (!p)
        return ss_err(eb, SS_ENOMEM, "cluster policy: out of memory");
    p->ops = ops;
    int rc = ops->init ? ops->init(p->priv, params, eb) : SS_OK;
    if (!rc && ops->period(p->priv) > 0 && !ops->tick)
        rc = ss_err(eb, SS_EINVAL, "cluster policy '%s': ticks without a tick hook", name);
    if (rc) {
        ss_free(p);
        return rc;
    }
    *out = p;
    return SS_OK;
}

void pol_cluster_destroy(pol_cluster **pp)
{
    ss_free(*pp);
    *pp = NULL;
}

ss_time pol_cluster_period(const pol_cluster *p) { return p->ops->period(p->priv); }

void pol_cluster_tick(pol_cluster *p, const gmg *g, const pol_cluster_view *v,
                      pol_cluster_decision *out)
{
    out->n_migrate = out->n_realloc = out->n_scale_up = out->n_scale_down = 0;
    p->ops->tick(p->priv, g, v, out);
}

int pol_cluster_tier_ordered(const pol_cluster *p)
{
    return p->ops->tier_ordered_queues ? p->ops->tier_ordered_queues(p->priv) : 0;
}

const char *pol_cluster_name(const pol_cluster *p) { return p->ops->name; }

const char *pol_cluster_default_routing(const pol_cluster *p)
{
    return p->ops->default_routing ? p->ops->default_routing : "rr";
}

void pol_cluster_describe(const pol_cluster *p, ss_kv_emit_fn *emit, void *ud)
{
    if (p->ops->describe)
        p->ops->describe(p->priv, emit, ud);
}

/* ---- parameter owners -------------------------------------------------------------------- */

static int has_param(const char *const *names, const char *key)
{
    for (int i = 0; names && names[i]; i++)
        if (!strcmp(names[i], key))
            return 1;
    return 0;
}

const char *pol_param_owner(const char *key)
{
    for (int i = 0; batch_builtin[i]; i++)
        if (has_param(batch_builtin[i]->params, key))
            return batch_builtin[i]->name;
    for (int i = 0; route_builtin[i]; i++)
        if (has_param(route_builtin[i]->params, key))
            return route_builtin[i]->name;
    for (int i = 0; cluster_builtin[i]; i++)
        if (has_param(cluster_builtin[i]->params, key))
            return cluster_builtin[i]->name;
    return NULL;
}
