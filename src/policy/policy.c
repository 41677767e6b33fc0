/* Policy registries and the instance wrappers that check plug-ins and forward calls. */
#include "policy/policy.h"

#include "core/ss_alloc.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* One registry per plug-in kind: its built-ins, in the order messages list them; the lookup by
 * name and the list of names ("rr, lor, ...") both come from the entries. */
#define POL_EXTRA 8 /* plug-ins registered at run time, per kind */

/* One registry per plug-in kind: its built-ins, in the order messages list them, then up to
 * POL_EXTRA plug-ins registered at run time (pol_KIND_register); the lookup by name and the list
 * of names ("rr, lor, ...") both come from the entries. */
#define POL_REGISTRY(kind, ops_t, ...)                                                          \
    static const ops_t *const kind##_builtin[] = {__VA_ARGS__, NULL};                           \
    static const ops_t *kind##_extra[POL_EXTRA + 1];                                            \
    static const ops_t *kind##_at(int i)                                                        \
    {                                                                                           \
        int nb = (int)(sizeof kind##_builtin / sizeof *kind##_builtin) - 1;                     \
        return i < nb ? kind##_builtin[i] : kind##_extra[i - nb];                               \
    }                                                                                           \
    const ops_t *pol_##kind##_find(const char *name)                                            \
    {                                                                                           \
        for (int i = 0; kind##_at(i); i++)                                                      \
            if (!strcmp(kind##_at(i)->name, name))                                              \
                return kind##_at(i);                                                            \
        return NULL;                                                                            \
    }                                                                                           \
    const char *pol_##kind##_names(void)                                                        \
    {                                                                                           \
        static char names[512];                                                                 \
        size_t n = 0;                                                                           \
        for (int i = 0; kind##_at(i) && n < sizeof names; i++)                                  \
            n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", i ? ", " : "",           \
                                  kind##_at(i)->name);                                          \
        return names;                                                                           \
    }                                                                                           \
    int pol_##kind##_register(const ops_t *ops)                                                 \
    {                                                                                           \
        if (!ops || !ops->name || pol_##kind##_find(ops->name))                                 \
            return SS_EINVAL;                                                                   \
        for (int i = 0; i < POL_EXTRA; i++)                                                     \
            if (!kind##_extra[i]) {                                                             \
                kind##_extra[i] = ops;                                                          \
                return SS_OK;                                                                   \
            }                                                                                   \
        return SS_ENOMEM;                                                                       \
    }

POL_REGISTRY(route, pol_route_ops, &pol_route_rr, &pol_route_lor, &pol_route_random,
             &pol_route_infaas, &pol_route_llumnix, &pol_route_affinity,
             &pol_route_prefill_affinity, &pol_route_decode_load)
POL_REGISTRY(batch, pol_batch_ops, &pol_batch_vllm, &pol_batch_orca, &pol_batch_sarathi,
             &pol_batch_static)
POL_REGISTRY(cluster, pol_cluster_ops, &pol_cluster_container, &pol_cluster_llumnix,
             &pol_cluster_llumnix_tiers)
POL_REGISTRY(place, pol_place_ops, &pol_place_home, &pol_place_slice, &pol_place_greedy)

struct pol_route {
    const pol_route_ops *ops;
    ss_rng *rng; /* borrowed */
    _Alignas(16) unsigned char priv[];
};

struct pol_batch {
    const pol_batch_ops *ops;
    _Alignas(16) unsigned char priv[];
};

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

int pol_batch_steady(const pol_batch *p, const void *ctr_priv, const gmg_container *c)
{
    return p->ops->steady ? p->ops->steady(p->priv, ctr_priv, c) : 0;
}

int pol_batch_has_rest(const pol_batch *p) { return p->ops->decide_rest != NULL; }

void pol_batch_decide_rest(pol_batch *p, void *ctr_priv, const gmg *g, const gmg_container *c,
                           uint32_t n_decodes, uint32_t decode_blocks, pol_batch_decision *out)
{
    out->n_run = n_decodes;
    out->n_preempt = out->n_swap_out = out->n_swap_in = out->n_reject = 0;
    memset(&out->extra, 0, sizeof out->extra);
    p->ops->decide_rest(p->priv, ctr_priv, g, c, n_decodes, decode_blocks, out);
}

const char *pol_batch_name(const pol_batch *p) { return p->ops->name; }

void pol_batch_describe(const pol_batch *p, ss_kv_emit_fn *emit, void *ud)
{
    if (p->ops->describe)
        p->ops->describe(p->priv, emit, ud);
}

/* ---- cluster policies ------------------------------------------------------------------- */

struct pol_cluster {
    const pol_cluster_ops *ops;
    _Alignas(16) unsigned char priv[];
};

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

/* ---- placement policies ----------------------------------------------------------------- */

struct pol_place {
    const pol_place_ops *ops;
    pol_place_stats st;
    _Alignas(16) unsigned char priv[];
};

int pol_place_create(pol_place **out, const char *name, ss_params *params, ss_errbuf *eb)
{
    const pol_place_ops *ops = pol_place_find(name);
    if (!ops)
        return ss_err(eb, SS_ENOTFOUND, "--ops: unknown operator placement '%s' (known: %s)",
                      name, pol_place_names());
    if (ops->abi_version != POL_ABI_VERSION || !ops->period)
        return ss_err(eb, SS_EINVAL, "placement policy '%s': incompatible plug-in", name);
    pol_place *p = ss_calloc(1, sizeof *p + ops->priv_size);
    if (!p)
        return ss_err(eb, SS_ENOMEM, "placement policy: out of memory");
    p->ops = ops;
    int rc = ops->init ? ops->init(p->priv, params, eb) : SS_OK;
    if (!rc && ops->period(p->priv) > 0 && !ops->tick)
        rc = ss_err(eb, SS_EINVAL, "placement policy '%s': ticks without a tick hook", name);
    if (rc) {
        pol_place_destroy(&p);
        return rc;
    }
    *out = p;
    return SS_OK;
}

void pol_place_destroy(pol_place **pp)
{
    pol_place *p = *pp;
    if (p && p->ops->fini)
        p->ops->fini(p->priv);
    ss_free(p);
    *pp = NULL;
}

ss_time pol_place_period(const pol_place *p) { return p->ops->period(p->priv); }

static double wall_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int pol_place_tick(pol_place *p, const pol_place_env *env, const gmg *g,
                   pol_place_decision *out, ss_errbuf *eb)
{
    out->n_offload = 0;
    double t0 = wall_s();
    int rc = p->ops->tick(p->priv, env, g, out, &p->st, eb);
    p->st.wall_s += wall_s() - t0;
    return rc;
}

int pol_place_move_costs(ss_params *p, const char *who, pol_place_mechanism *m, ss_errbuf *eb)
{
    int rc = ss_params_get_double(p, who, "slice_host_factor", 1, 0, 100, &m->host_factor, eb);
    if (!rc)
        rc = ss_params_get_double(p, who, "slice_link_eff", 0, 0.01, 1, &m->link_eff, eb);
    if (!rc)
        rc = ss_params_get_double(p, who, "slice_interference", 1.2, 1, 100, &m->interference,
                                  eb);
    return rc;
}

int pol_place_mechanism_of(const pol_place *p, pol_place_mechanism *out)
{
    if (!p->ops->mechanism)
        return 0;
    p->ops->mechanism(p->priv, out);
    return 1;
}

const pol_place_stats *pol_place_get_stats(const pol_place *p) { return &p->st; }
const char *pol_place_name(const pol_place *p) { return p->ops->name; }

void pol_place_describe(const pol_place *p, ss_kv_emit_fn *emit, void *ud)
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

/* fn for each parameter of params (NULL-terminated; NULL: none). */
static void each_param(const char *const *params, pol_param_fn *fn, void *ud, const char *kind,
                       const char *policy)
{
    for (size_t i = 0; params && params[i]; i++)
        fn(ud, kind, policy, params[i]);
}

void pol_params_each(pol_param_fn *fn, void *ud)
{
    for (int i = 0; batch_at(i); i++)
        each_param(batch_at(i)->params, fn, ud, "batching", batch_at(i)->name);
    for (int i = 0; route_at(i); i++)
        each_param(route_at(i)->params, fn, ud, "routing", route_at(i)->name);
    for (int i = 0; cluster_at(i); i++)
        each_param(cluster_at(i)->params, fn, ud, "cluster", cluster_at(i)->name);
    for (int i = 0; place_at(i); i++)
        each_param(place_at(i)->params, fn, ud, "ops", place_at(i)->name);
}

const char *pol_param_owner(const char *key)
{
    for (int i = 0; batch_at(i); i++)
        if (has_param(batch_at(i)->params, key))
            return batch_at(i)->name;
    for (int i = 0; route_at(i); i++)
        if (has_param(route_at(i)->params, key))
            return route_at(i)->name;
    for (int i = 0; cluster_at(i); i++)
        if (has_param(cluster_at(i)->params, key))
            return cluster_at(i)->name;
    for (int i = 0; place_at(i); i++)
        if (has_param(place_at(i)->params, key))
            return place_at(i)->name;
    return NULL;
}
