/* A policy plug-in built outside slicesim's tree: "jsq2", power-of-two-choices routing
 * (Mitzenmacher, "The Power of Two Choices in Randomized Load Balancing", IEEE TPDS 2001):
 * each request goes to the less loaded of two containers drawn at random, load being the
 * requests a container holds (waiting, running, swapped out). Copy this folder, rename the
 * policy, and change pick (or fill another kind's hooks: policy/policy.h lists them).
 *
 *   meson setup build -Dslicesim_src=/path/to/slicesim && ninja -C build
 *   slicesim replay --plugin build/mypolicy.so --routing jsq2 --replicas 4
 */
#include "policy/plugin.h"

/* The requests container c holds. */
static uint32_t load(const gmg *g, gmg_id c)
{
    const gmg_container *k = &g->ctrs[c];
    return k->waiting.n + k->running.n + k->swapped.n;
}

static gmg_id jsq2_pick(void *priv, const gmg *g, gmg_id r, const gmg_id *cands, uint32_t n,
                        ss_rng *rng)
{
    (void)priv;
    (void)r;
    gmg_id a = cands[ss_rng_below(rng, n)], b = cands[ss_rng_below(rng, n)];
    uint32_t la = load(g, a), lb = load(g, b);
    return lb < la || (lb == la && b < a) ? b : a; /* ties: the lower id */
}

static const pol_route_ops jsq2 = {
    .abi_version = POL_ABI_VERSION,
    .name = "jsq2",
    .summary = "the less loaded of two random containers (power of two choices; plug-in)",
    .pick = jsq2_pick,
};

SLICESIM_PLUGIN_DECLARE();

int slicesim_plugin_init(ss_errbuf *eb)
{
    int rc = pol_route_register(&jsq2);
    if (rc)
        return ss_err(eb, rc, "cannot register routing policy 'jsq2' (is the name taken?)");
    return 0;
}
