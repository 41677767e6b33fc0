/* Llumnix (Sun et al., OSDI'24) and its multi-tier extension ("Beyond Binary Priorities").
 *  - dispatch (routing "llumnix"): a new request goes to its tenant's freest container by the
 *    dispatch freeness (every waiting request's demand counted; llumnix_int.h);
 *  - rebalancing: every migrate_period_s, within each tenant, containers are sorted by the
 *    migration freeness (the head-of-line waiting request only) and the least free are paired
 *    with the most free while the spread is at least migrate_threshold; each pair live-migrates one running request (two-level: normal before
 *    high priority, then fewest KV blocks; tiers: lowest tier, then fewest blocks). A container
 *    with an outgoing migration is not paired again until it ends;
 *  - auto-scaling (two-level and tiers): every scale_period_s, a tenant whose average freeness
 *    (the dispatch form: KV blocks per running or waiting request) falls below
 *    scale_up_freeness (200) activates a standby container (max_replicas bounds them); one above
 *    scale_down_freeness (2000: a Llama-2-7B A100 replica with ~3 requests) with nothing queued
 *    puts its newest one back, draining it first, never below replicas and not within
 *    scale_cooldown_s of that container becoming ready. The defaults were chosen on
 *    experiments/skewed-three-tenants.ini, where tighter thresholds made containers flap
 *    between standby and loading.
 * The engine carries out migrations stage by stage (see gsim/gsim_migrate.c). */
#include "policy/llumnix_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct llumnix_priv {
    llx_params lx;
    int tiers;                  /* llumnix-tiers */
    double period_s;            /* migrate_period_s */
    double threshold;           /* migrate_threshold: freeness spread that triggers a pair */
    double scale_period_s;      /* scale_period_s (0: no auto-scaling) */
    double up, down;            /* scale_up_freeness, scale_down_freeness */
    double load_gbps;           /* weight_load_gbps for scaled-up containers */
    double setup_s;             /* teardown_s: start-up time of a scaled-up container */
    uint64_t stop_copy;         /* stop_copy_blocks: last stage below this many blocks */
    uint64_t max_stages;        /* max_stages: at most this many copy stages */
    double cooldown_s;          /* scale_cooldown_s: no scale-down this soon after a scale-up */
    ss_time next_scale;         /* next scaling decision */
} llumnix_priv;

static int init_common(llumnix_priv *l, ss_params *p, const char *who, ss_errbuf *eb)
{
    int rc = llx_params_init(&l->lx, p, who, l->tiers, eb);
    if (!rc)
        rc = ss_params_get_double(p, who, "migrate_period_s", 0.5, 1e-3, 1e5, &l->period_s, eb);
    if (!rc)
        rc = ss_params_get_double(p, who, "migrate_threshold", 0.5, 0, 1e9, &l->threshold, eb);
    if (!rc)
        rc = ss_params_get_double(p, who, "scale_period_s", 0, 0, 1e7, &l->scale_period_s, eb);
    if (!rc)
        rc = ss_params_get_double(p, who, "scale_up_freeness", 200, -1e9, 1e9, &l->up, eb);
    if (!rc)
        rc = ss_params_get_double(p, who, "scale_down_freeness", 2000, -1e9, 1e9, &l->down, eb);
    if (!rc)
        rc = ss_params_get_double(p, who, "weight_load_gbps", 3.0, 1e-3, 1e5, &l->load_gbps, eb);
    if (!rc)
        rc = ss_params_get_double(p, who, "teardown_s", 5.0, 0, 1e5, &l->setup_s, eb);
    if (!rc)
        rc = ss_params_get_double(p, who, "scale_cooldown_s", 60, 0, 1e7, &l->cooldown_s, eb);
    if (!rc)
        rc = ss_params_get_u64(p, who, "stop_copy_blocks", 16, 0, 1u << 30, &l->stop_copy, eb);
    if (!rc)
        rc = ss_params_get_u64(p, who, "max_stages", 3, 1, 64, &l->max_stages, eb);
    if (!rc && l->down <= l->up)
        rc = ss_err(eb, SS_EINVAL, "%s: scale_down_freeness must be above scale_up_freeness", who);
    return rc;
}

static int llumnix_init(void *priv, ss_params *p, ss_errbuf *eb)
{
    return init_common(priv, p, "llumnix", eb);
}

static int tiers_init(void *priv, ss_params *p, ss_errbuf *eb)
{
    ((llumnix_priv *)priv)->tiers = 1;
    return init_common(priv, p, "llumnix-tiers", eb);
}

static ss_time llumnix_period(const void *priv)
{
    return ss_time_from_s(((const llumnix_priv *)priv)->period_s);
}

/* Rank of a request as a migration candidate: lower goes first. Two-level: normal priority
 * (tier > 0) before high, then fewer blocks; tiers: highest tier number first, then fewer. */
static double candidate_rank(const llumnix_priv *l, const gmg_req *q)
{
    double tier_key = l->tiers ? -(double)q->tier : (q->tier == 0);
    return tier_key * 1e12 + q->blocks;
}

/* Whether moving a request of `blocks` KV blocks from src to dst keeps dst at least as free as
 * src afterwards (no ping-pong), with room to spare at dst. */
static int worth_moving(const llumnix_priv *l, const gmg *g, const gmg_container *src,
                        const gmg_container *dst, uint32_t blocks)
{
    if (blocks > dst->blocks_free / 2 || src->running.n < 2)
        return 0;
    double hs = llx_headroom_blocks(&l->lx, g, src), hd = llx_headroom_blocks(&l->lx, g, dst);
    double vs = (double)(src->blocks_total - src->blocks_free) + hs - blocks;
    double vd = (double)(dst->blocks_total - dst->blocks_free) + hd + blocks;
    double fs = (src->blocks_total - vs) / (src->running.n - 1);
    double fd = (dst->blocks_total - vd) / (dst->running.n + 1);
    return fd >= fs;
}

/* The running request of src to migrate to dst, or GMG_NONE: decoding, not already migrating,
 * worth moving. */
static gmg_id pick_request(const llumnix_priv *l, const gmg *g, const gmg_container *c,
                           const gmg_container *dst)
{
    gmg_id best = GMG_NONE;
    double best_rank = INFINITY;
    for (gmg_id r = c->running.head; r != GMG_NONE; r = g->reqs[r].next) {
        const gmg_req *q = &g->reqs[r];
        if (q->mig != GMG_NONE || q->generated == 0 || pol_pending(q) != 1 ||
            !worth_moving(l, g, c, dst, q->blocks))
            continue;
        double rank = candidate_rank(l, q);
        if (rank < best_rank) {
            best_rank = rank;
            best = r;
        }
    }
    return best;
}

typedef struct ranked {
    gmg_id ctr;
    double f;
} ranked;

/* Insertion sort of a tenant's containers by freeness (ascending; ties by id). */
static uint32_t rank_containers(const llumnix_priv *l, const gmg *g, const pol_tenant_view *t,
                                ranked *out, uint32_t cap)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < t->n_active && n < cap; i++) {
        ranked x = {t->active[i], llx_freeness_migrate(&l->lx, g, &g->ctrs[t->active[i]])};
        uint32_t k = n++;
        for (; k > 0 && out[k - 1].f > x.f; k--)
            out[k] = out[k - 1];
        out[k] = x;
    }
    return n;
}

static int has_outgoing(const gmg *g, gmg_id ctr)
{
    return g->ctrs[ctr].migrating_out > 0;
}

static void rebalance(const llumnix_priv *l, const gmg *g, const pol_tenant_view *t,
                      pol_cluster_decision *out)
{
    ranked r[256];
    uint32_t n = rank_containers(l, g, t, r, 256);
    for (uint32_t i = 0, j = n; i + 1 < j && out->n_migrate < out->cap_migrate; i++, j--) {
        const ranked *src = &r[i], *dst = &r[j - 1];
        if (!(dst->f - src->f >= l->threshold) || isinf(src->f))
            break;
        if (has_outgoing(g, src->ctr))
            continue;
        gmg_id q = pick_request(l, g, &g->ctrs[src->ctr], &g->ctrs[dst->ctr]);
        if (q != GMG_NONE)
            out->migrate[out->n_migrate++] = (pol_migration){q, src->ctr, dst->ctr};
    }
}

/* A tenant's average freeness for scaling decisions: the dispatch form (every queued request's
 * demand, shared by running + waiting requests), as Llumnix's released code scales on its
 * dispatch load (llumnix_common.c), but dividing by at least one request so that a
 * just-activated, still empty container does not read as infinitely free. */
static double average_freeness(const llumnix_priv *l, const gmg *g, const pol_tenant_view *t)
{
    double sum = 0;
    for (uint32_t i = 0; i < t->n_active; i++) {
        const gmg_container *c = &g->ctrs[t->active[i]];
        double used = (double)(c->blocks_total - c->blocks_free) + (double)c->waiting_blocks +
                      llx_headroom_blocks(&l->lx, g, c);
        uint32_t n = c->running.n + c->waiting.n;
        sum += ((double)c->blocks_total - used) / (n ? n : 1);
    }
    return t->n_active ? sum / t->n_active : INFINITY;
}

static int queued(const gmg *g, const pol_tenant_view *t)
{
    for (uint32_t i = 0; i < t->n_active; i++)
        if (g->ctrs[t->active[i]].waiting.n)
            return 1;
    return 0;
}

static void autoscale(llumnix_priv *l, const gmg *g, const pol_cluster_view *v,
                      pol_cluster_decision *out)
{
    if (l->scale_period_s <= 0 || v->now < l->next_scale)
        return;
    l->next_scale = v->now + ss_time_from_s(l->scale_period_s);
    for (uint32_t i = 0; i < v->n_tenants; i++) {
        const pol_tenant_view *t = &v->tenants[i];
        double f = average_freeness(l, g, t);
        if (f < l->up && t->n_standby && out->n_scale_up < out->cap_scale_up) {
            out->scale_up[out->n_scale_up++] = t->standby[0];
        } else if (f > l->down && t->n_active > t->replicas && !queued(g, t) &&
                   out->n_scale_down < out->cap_scale_down) {
            gmg_id last = t->active[t->n_active - 1];
            /* ready_at: when a scaled-up container finished loading its weights */
            if (v->now - g->ctrs[last].ready_at >= ss_time_from_s(l->cooldown_s))
                out->scale_down[out->n_scale_down++] = last;
        }
    }
}

static void llumnix_tick(void *priv, const gmg *g, const pol_cluster_view *v,
                         pol_cluster_decision *out)
{
    llumnix_priv *l = priv;
    out->setup_ns = ss_time_from_s(l->setup_s);
    out->load_bw = l->load_gbps * 1e9;
    out->stop_copy_blocks = (uint32_t)l->stop_copy;
    out->max_stages = (uint32_t)l->max_stages;
    for (uint32_t i = 0; i < v->n_tenants; i++)
        rebalance(l, g, &v->tenants[i], out);
    autoscale(l, g, v, out);
}

static int tier_ordered(const void *priv) { return ((const llumnix_priv *)priv)->tiers; }

static void llumnix_describe(const void *priv, ss_kv_emit_fn *emit, void *ud)
{
    const llumnix_priv *l = priv;
    char buf[48];
#define EMIT(key, val)                                                                             \
    do {                                                                                           \
        snprintf(buf, sizeof buf, "%g", (double)(val));                                            \
        emit(ud, key, buf);                                                                        \
    } while (0)
    if (l->tiers) {
        EMIT("h_max", l->lx.h_max);
        emit(ud, "headroom_shape", l->lx.mode == LLX_LINEAR ? "linear" : "exp");
    } else
        EMIT("headroom", l->lx.headroom);
    EMIT("migrate_period_s", l->period_s);
    EMIT("migrate_threshold", l->threshold);
    EMIT("scale_period_s", l->scale_period_s);
    EMIT("scale_up_freeness", l->up);
    EMIT("scale_down_freeness", l->down);
    EMIT("scale_cooldown_s", l->cooldown_s);
    EMIT("stop_copy_blocks", l->stop_copy);
    EMIT("max_stages", l->max_stages);
#undef EMIT
}

static const char *const pol_cluster_llumnix_params[] = {"headroom", "h_max", "headroom_shape", "migrate_period_s", "migrate_threshold", "scale_period_s", "scale_up_freeness", "scale_down_freeness", "scale_cooldown_s", "weight_load_gbps", "teardown_s", "stop_copy_blocks", "max_stages", NULL};

const pol_cluster_ops pol_cluster_llumnix = {
    .abi_version = POL_ABI_VERSION,
    .params = pol_cluster_llumnix_params,
    .name = "llumnix",
    .summary = "Llumnix: freest-instance dispatch, live migration, priority headroom, scaling",
    .priv_size = sizeof(llumnix_priv),
    .init = llumnix_init,
    .default_routing = "llumnix",
    .period = llumnix_period,
    .tick = llumnix_tick,
    .autoscale = 1,
    .describe = llumnix_describe,
};

const pol_cluster_ops pol_cluster_llumnix_tiers = {
    .params = pol_cluster_llumnix_params,
    .abi_version = POL_ABI_VERSION,
    .name = "llumnix-tiers",
    .summary = "multi-tier Llumnix: per-tier headroom, (tier, arrival) queues, tier-aware "
               "migration",
    .priv_size = sizeof(llumnix_priv),
    .init = tiers_init,
    .default_routing = "llumnix",
    .period = llumnix_period,
    .tick = llumnix_tick,
    .autoscale = 1,
    .tier_ordered_queues = tier_ordered,
    .describe = llumnix_describe,
};

/* ---- dispatch ---------------------------------------------------------------------------- */

typedef struct route_llx_priv {
    llx_params lx;
} route_llx_priv;

static int route_llx_init(void *priv, ss_params *p, const char *cluster, ss_errbuf *eb)
{
    route_llx_priv *r = priv;
    /* The headroom follows the cluster policy: K tiers with llumnix-tiers, else two levels. */
    return llx_params_init(&r->lx, p, "llumnix", !strcmp(cluster, "llumnix-tiers"), eb);
}

static gmg_id route_llx_pick(void *priv, const gmg *g, gmg_id r, const gmg_id *cands, uint32_t n,
                             ss_rng *rng)
{
    (void)r;
    (void)rng;
    const route_llx_priv *p = priv;
    gmg_id best = cands[0];
    double best_f = -INFINITY;
    for (uint32_t i = 0; i < n; i++) {
        double f = llx_freeness_dispatch(&p->lx, g, &g->ctrs[cands[i]]);
        if (f > best_f) { /* strict: ties keep the lowest id */
            best_f = f;
            best = cands[i];
        }
    }
    return best;
}

const pol_route_ops pol_route_llumnix = {
    .params = pol_cluster_llumnix_params,
    .abi_version = POL_ABI_VERSION,
    .name = "llumnix",
    .summary = "Llumnix dispatch: the freest container (virtual usage with headroom)",
    .priv_size = sizeof(route_llx_priv),
    .init = route_llx_init,
    .pick = route_llx_pick,
};
