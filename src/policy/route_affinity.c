/* Prefix-affinity routing, the idea of llm-d's prefix-cache scorer and NVIDIA Dynamo's KV
 * router: send a request where the blocks it would have to prefill (its prompt's blocks less
 * the cached prefix the container's prefix cache holds) and the container's load cost least.
 * It reads the cache through gmg_pc_match on the graph it is given, so a what-if fork's routing
 * sees the fork's caches. Not for deciding anything about batching or the cache itself. */
#include "policy/policy.h"

#include <stdio.h>

typedef struct affinity_priv {
    double cache_w; /* weight of the blocks to prefill there (Dynamo's overlap_score_weight) */
    double load_w;  /* weight of the container's load in blocks (held + queued demand) */
} affinity_priv;

static int affinity_init(void *priv, ss_params *p, const char *cluster, ss_errbuf *eb)
{
    (void)cluster;
    affinity_priv *a = priv;
    int rc = ss_params_get_double(p, "affinity", "affinity_cache_weight", 1.0, 0.0, 1e6,
                                  &a->cache_w, eb);
    if (!rc)
        rc = ss_params_get_double(p, "affinity", "affinity_load_weight", 1.0, 0.0, 1e6,
                                  &a->load_w, eb);
    return rc;
}

/* Blocks request q would prefill on c: its prompt's blocks less the cached prefix c holds now,
 * capped as an admission caps a hit (at least one token is computed). */
static uint32_t prefill_blocks(const gmg_container *c, const gmg_req *q)
{
    uint32_t bt = c->block_tokens, all = (q->prompt + bt - 1) / bt;
    if (!c->pc || !q->prompt)
        return all;
    return all - gmg_pc_match(c, q, (q->prompt - 1) / bt, NULL);
}

/* The container's load in KV blocks: those its requests hold (cached blocks they read once)
 * and the demand of its waiting requests. */
static uint64_t load_blocks(const gmg_container *c)
{
    return (uint64_t)(c->blocks_total - c->blocks_free) + c->waiting_blocks;
}

static gmg_id affinity_pick(void *priv, const gmg *g, gmg_id r, const gmg_id *cands, uint32_t n,
                            ss_rng *rng)
{
    (void)rng;
    const affinity_priv *a = priv;
    const gmg_req *q = &g->reqs[r];
    gmg_id best = cands[0];
    double best_cost = 0;
    for (uint32_t i = 0; i < n; i++) {
        const gmg_container *c = &g->ctrs[cands[i]];
        double cost = a->cache_w * prefill_blocks(c, q) + a->load_w * (double)load_blocks(c);
        if (i == 0 || cost < best_cost) { /* strict: ties keep the lowest id */
            best = cands[i];
            best_cost = cost;
        }
    }
    return best;
}

static void affinity_describe(const void *priv, ss_kv_emit_fn *emit, void *ud)
{
    const affinity_priv *a = priv;
    char buf[48];
    snprintf(buf, sizeof buf, "%g", a->cache_w);
    emit(ud, "affinity_cache_weight", buf);
    snprintf(buf, sizeof buf, "%g", a->load_w);
    emit(ud, "affinity_load_weight", buf);
}

static const char *const pol_route_affinity_params[] = {"affinity_cache_weight",
                                                        "affinity_load_weight", NULL};

const pol_route_ops pol_route_affinity = {
    .abi_version = POL_ABI_VERSION,
    .params = pol_route_affinity_params,
    .name = "affinity",
    .summary = "prefix affinity: argmin cache_weight x blocks to prefill there (prompt less "
               "its cached prefix) + load_weight x blocks held and queued",
    .priv_size = sizeof(affinity_priv),
    .init = affinity_init,
    .pick = affinity_pick,
    .describe = affinity_describe,
};
