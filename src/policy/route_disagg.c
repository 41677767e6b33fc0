/* The two picks of disaggregated serving, as routing plug-ins (the simulator hands each the
 * candidates of one pool):
 *  - prefill-affinity: the prefill instance with the least prefill work ahead of the request,
 *    counting the prompt tokens its prefix cache already holds as work saved: cached prefix
 *    tokens (gmg_pc_match) minus queued prefill tokens, highest wins. This is Mooncake's
 *    conductor's trade-off (prefix-cache reuse against queueing, both as estimated prefill
 *    time; Qin et al., "Mooncake: A KVCache-centric Disaggregated Architecture for LLM
 *    Serving", FAST '25, its KVCache-centric scheduling) with time measured in tokens to
 *    compute. With caching off it is the least loaded instance.
 *  - decode-load: among the decode instances with room for the request's KV (the simulator
 *    filters them), the one with the fewest requests (its batch, hence its step time), then
 *    the most free KV blocks: load balancing of the decode pool as Mooncake's conductor and
 *    DistServe (Zhong et al., OSDI '24) do it.
 * Both are ordinary routers too, usable with --routing for co-located tenants. Ties go to the
 * lowest container id. Not for moving any state: they only choose. */
#include "policy/policy.h"

/* Prompt tokens of r that c's prefix cache holds now (0 without a cache). */
static uint64_t cached_tokens(const gmg_container *c, const gmg_req *r)
{
    if (!c->pc)
        return 0;
    uint32_t max = gmg_pc_blocks(r, c->block_tokens);
    return max ? (uint64_t)gmg_pc_match(c, r, max, NULL) * c->block_tokens : 0;
}

/* Prefill tokens queued on c: its waiting requests' KV demand in tokens and its running
 * requests' pending work. */
static uint64_t queued_tokens(const gmg *g, const gmg_container *c)
{
    uint64_t n = c->waiting_blocks * c->block_tokens;
    for (gmg_id q = c->running.head; q != GMG_NONE; q = g->reqs[q].next)
        n += pol_pending(&g->reqs[q]);
    return n;
}

static gmg_id affinity_pick(void *priv, const gmg *g, gmg_id r, const gmg_id *cands, uint32_t n,
                            ss_rng *rng)
{
    (void)priv;
    (void)rng;
    const gmg_req *q = gmg_req_get(g, r);
    gmg_id best = cands[0];
    int64_t best_score = INT64_MIN;
    for (uint32_t i = 0; i < n; i++) {
        const gmg_container *c = &g->ctrs[cands[i]];
        int64_t score = (int64_t)cached_tokens(c, q) - (int64_t)queued_tokens(g, c);
        if (score > best_score) {
            best_score = score;
            best = cands[i];
        }
    }
    return best;
}

const pol_route_ops pol_route_prefill_affinity = {
    .abi_version = POL_ABI_VERSION,
    .name = "prefill-affinity",
    .summary = "most cached prefix tokens minus queued prefill tokens (Mooncake's conductor); "
               "the default prefill pick of disaggregated tenants",
    .pick = affinity_pick,
};

static gmg_id load_pick(void *priv, const gmg *g, gmg_id r, const gmg_id *cands, uint32_t n,
                        ss_rng *rng)
{
    (void)priv;
    (void)r;
    (void)rng;
    gmg_id best = cands[0];
    uint32_t best_n = UINT32_MAX, best_free = 0;
    for (uint32_t i = 0; i < n; i++) {
        const gmg_container *c = &g->ctrs[cands[i]];
        uint32_t out = c->waiting.n + c->running.n + c->swapped.n;
        if (out < best_n || (out == best_n && c->blocks_free > best_free)) {
            best = cands[i];
            best_n = out;
            best_free = c->blocks_free;
        }
    }
    return best;
}

const pol_route_ops pol_route_decode_load = {
    .abi_version = POL_ABI_VERSION,
    .name = "decode-load",
    .summary = "fewest requests, then most free KV blocks; the default decode pick of "
               "disaggregated tenants",
    .pick = load_pick,
};
