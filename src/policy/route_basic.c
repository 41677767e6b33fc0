/* Baseline routers over the candidate containers of a request's tenant: round-robin (one
 * cycle per tenant), least outstanding requests (waiting + running), uniformly random, and
 * INFaaS-style dispatch freeness. Ties go to the lowest container id. */
#include "policy/policy.h"

#include <stdio.h>

#define RR_TENANTS 65536

typedef struct rr_priv {
    uint32_t next[RR_TENANTS]; /* per tenant: position of the next request in its cycle */
} rr_priv;

static gmg_id rr_pick(void *priv, const gmg *g, gmg_id r, const gmg_id *cands, uint32_t n,
                      ss_rng *rng)
{
    (void)rng;
    rr_priv *p = priv;
    uint32_t *next = &p->next[g->reqs[r].tenant];
    gmg_id c = cands[*next % n];
    *next = (*next % n + 1) % n;
    return c;
}

const pol_route_ops pol_route_rr = {
    .abi_version = POL_ABI_VERSION,
    .name = "rr",
    .summary = "round-robin over the containers",
    .priv_size = sizeof(rr_priv),
    .pick = rr_pick,
};

static gmg_id lor_pick(void *priv, const gmg *g, gmg_id r, const gmg_id *cands, uint32_t n,
                       ss_rng *rng)
{
    (void)priv;
    (void)r;
    (void)rng;
    gmg_id best = cands[0];
    uint32_t best_n = UINT32_MAX;
    for (uint32_t i = 0; i < n; i++) {
        const gmg_container *c = &g->ctrs[cands[i]];
        uint32_t out = c->waiting.n + c->running.n + c->swapped.n;
        if (out < best_n) {
            best = cands[i];
            best_n = out;
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

static gmg_id random_pick(void *priv, const gmg *g, gmg_id r, const gmg_id *cands, uint32_t n,
                          ss_rng *rng)
{
    (void)priv;
    (void)g;
    (void)r;
    return cands[ss_rng_below(rng, n)];
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
    uint32_t outstanding = c->running.n + c->waiting.n + c->swapped.n;
    return outstanding ? free_after / outstanding : 1.0 / 0.0;
}

typedef struct infaas_priv {
    double watermark; /* fraction of the pool, as in the batching policy */
} infaas_priv;

static int infaas_init(void *priv, ss_params *p, const char *cluster, ss_errbuf *eb)
{
    (void)cluster;
    infaas_priv *f = priv;
    return ss_params_get_double(p, "infaas", "watermark", 0.01, 0.0, 0.5, &f->watermark, eb);
}

static gmg_id infaas_pick(void *priv, const gmg *g, gmg_id r, const gmg_id *cands, uint32_t n,
                          ss_rng *rng)
{
    (void)r;
    (void)rng;
    const infaas_priv *f = priv;
    gmg_id best = cands[0];
    double best_f = freeness(&g->ctrs[cands[0]], f->watermark);
    for (uint32_t i = 1; i < n; i++) {
        double fi = freeness(&g->ctrs[cands[i]], f->watermark);
        if (fi > best_f) { /* strict: ties keep the lowest id */
            best = cands[i];
            best_f = fi;
        }
    }
    return best;
}

static const char *const pol_route_infaas_params[] = {"watermark", NULL};

const pol_route_ops pol_route_infaas = {
    .abi_version = POL_ABI_VERSION,
    .params = pol_route_infaas_params,
    .name = "infaas",
    .summary = "INFaaS++: argmax (free - watermark - waiting blocks) / (running + waiting)",
    .priv_size = sizeof(infaas_priv),
    .init = infaas_init,
    .pick = infaas_pick,
};
