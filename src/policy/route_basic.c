/* Baseline routers: round-robin, and least outstanding requests (waiting + running) with ties
 * broken by the lowest container id. Both consider every container of the cluster. */
#include "policy.h"

#include <stdio.h>

typedef struct rr_priv {
    uint32_t next; /* container that gets the next request */
} rr_priv;

static gmg_id rr_pick(void *priv, const gmg *g, gmg_id r, ss_rng *rng)
{
    (void)r;
    (void)rng;
    rr_priv *p = priv;
    gmg_id c = p->next % g->n_ctrs;
    p->next = (c + 1) % g->n_ctrs;
    return c;
}

const pol_route_ops pol_route_rr = {
    .abi_version = POL_ABI_VERSION,
    .name = "rr",
    .summary = "round-robin over the containers",
    .priv_size = sizeof(rr_priv),
    .pick = rr_pick,
};

static gmg_id lor_pick(void *priv, const gmg *g, gmg_id r, ss_rng *rng)
{
    (void)priv;
    (void)r;
    (void)rng;
    gmg_id best = 0;
    uint32_t best_n = UINT32_MAX;
    for (gmg_id i = 0; i < g->n_ctrs; i++) {
        uint32_t n = g->ctrs[i].waiting.n + g->ctrs[i].running.n;
        if (n < best_n) {
            best = i;
            best_n = n;
        }
    }
    return best;
}

const pol_route_ops pol_route_lor = {
    .abi_version = POL_ABI_VERSION,
    .name = "lor",
    .summary = "least outstanding requests (waiting + running), lowest id on ties",
    .pick = lor_pick,
};
