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

static gmg_id random_pick(void *priv, const gmg *g, gmg_id r, ss_rng *rng)
{
    (void)priv;
    (void)r;
    return (gmg_id)ss_rng_below(rng, g->n_ctrs);
}

const pol_route_ops pol_route_random = {
    .abi_version = POL_ABI_VERSION,
    .name = "random",
    .summary = "uniformly random container (seeded routing stream)",
    .pick = random_pick,
};

/* INFaaS-style dispatch freeness of a container: KV blocks left after the watermark and the
 * waiting requests' demand, per outstanding request; +infinity when nothing is outstanding. */
static double freeness(const gmg_container *c, double watermark)
{
    double free_after = (double)c->blocks_free - watermark * c->blocks_total - (double)c->waiting_blocks;
    uint32_t outstanding = c->running.n + c->waiting.n;
    return outstanding ? free_after / outstanding : 1.0 / 0.0;
}

typedef struct infaas_priv {
    double watermark; /* fraction of the pool, as in the batching policy */
} infaas_priv;

static int infaas_init(void *priv, ss_params *p, ss_errbuf *eb)
{
    infaas_priv *f = priv;
    return ss_params_get_double(p, "infaas", "watermark", 0.01, 0.0, 0.5, &f->watermark, eb);
}

static gmg_id infaas_pick(void *priv, const gmg *g, gmg_id r, ss_rng *rng)
{
    (void)r;
    (void)rng;
    const infaas_priv *f = priv;
    gmg_id best = 0;
    double best_f = freeness(&g->ctrs[0], f->watermark);
    for (gmg_id i = 1; i < g->n_ctrs; i++) {
        double fi = freeness(&g->ctrs[i], f->watermark);
        if (fi > best_f) { /* strict: ties keep the lowest id */
            best = i;
            best_f = fi;
        }
    }
    return best;
}

const pol_route_ops pol_route_infaas = {
    .abi_version = POL_ABI_VERSION,
    .name = "infaas",
    .summary = "INFaaS++: argmax (free - watermark - waiting blocks) / (running + waiting)",
    .priv_size = sizeof(infaas_priv),
    .init = infaas_init,
    .pick = infaas_pick,
};
