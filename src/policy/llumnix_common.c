/* Llumnix virtual usage and freeness (Sun et al., OSDI'24), generalised to K priority tiers as
 * in "Beyond Binary Priorities: Multi-Tier SLA Scheduling for LLM Serving". */
#include "policy/llumnix_int.h"

#include <math.h>
#include <string.h>

int llx_params_init(llx_params *p, ss_params *params, const char *who, int tiers, ss_errbuf *eb)
{
    int rc = ss_params_get_double(params, who, "headroom", 0.1, 0, 0.9, &p->headroom, eb);
    if (!rc)
        rc = ss_params_get_double(params, who, "h_max", 0.20, 0, 0.9, &p->h_max, eb);
    const char *shape = ss_params_get(params, "headroom_shape");
    if (!rc && shape && strcmp(shape, "exp") && strcmp(shape, "linear"))
        rc = ss_err(eb, SS_EINVAL, "%s: headroom_shape: expected exp or linear, got '%s'", who,
                    shape);
    p->mode = !tiers ? LLX_TWO_LEVEL : shape && !strcmp(shape, "linear") ? LLX_LINEAR : LLX_EXP;
    return rc;
}

/* The most important (lowest) tier among c's requests, or -1 when it has none. */
static int top_tier(const gmg *g, const gmg_container *c)
{
    int top = -1;
    const gmg_list *lists[3] = {&c->running, &c->waiting, &c->swapped};
    for (int l = 0; l < 3; l++)
        for (gmg_id r = lists[l]->head; r != GMG_NONE; r = g->reqs[r].next)
            if (top < 0 || g->reqs[r].tier < top) {
                top = g->reqs[r].tier;
                if (top == 0)
                    return 0;
            }
    return top;
}

double llx_headroom_blocks(const llx_params *p, const gmg *g, const gmg_container *c)
{
    int t = top_tier(g, c);
    double m = c->blocks_total;
    uint32_t k = c->tiers ? c->tiers : 1;
    if (t < 0)
        return 0;
    if (p->mode == LLX_TWO_LEVEL)
        return t == 0 ? floor(m * p->headroom) : 0;
    if (k < 2)
        return 0; /* one tier: nobody outranks anybody */
    if (p->mode == LLX_LINEAR)
        return floor(m * p->h_max * (1.0 - (double)t / (k - 1)));
    return floor(m * p->h_max * exp(-2.5 / (k - 1) * t));
}

/* Llumnix's released code (AlibabaPAI/llumnix) computes an instance's load two ways, each where
 * it is used: v0.1's llumnix/instance_info.py, InstanceLoadCalculator, hands 'dispatch' and
 * 'scale' to DispatchAndScalingLoadComputation and 'migrate' to MigrationLoadComputation; later
 * releases keep both in llumnix/load_computation.py, RemainingStepsLoad.compute_instance_load
 * (the enable_defrag branch is the migration form). With the remaining_steps metric:
 *  - dispatch: the blocks of ALL waiting requests come off the available blocks, and the rest is
 *    shared by running + waiting requests;
 *  - migration (with de-fragmentation): only the head-of-line waiting request's blocks come off,
 *    and it counts as one more request.
 * Both are "remaining steps" (available blocks per request), higher is freer; slicesim adds the
 * priority headroom of the paper (two levels) or of K tiers to the blocks taken. */
static double freeness(const llx_params *p, const gmg *g, const gmg_container *c, double queued,
                       uint32_t n_req)
{
    if (c->status != GMG_CTR_ACTIVE)
        return -INFINITY;
    if (!n_req)
        return INFINITY;
    double used = (double)(c->blocks_total - c->blocks_free);
    return ((double)c->blocks_total - used - queued - llx_headroom_blocks(p, g, c)) / n_req;
}

double llx_freeness_dispatch(const llx_params *p, const gmg *g, const gmg_container *c)
{
    return freeness(p, g, c, (double)c->waiting_blocks, c->running.n + c->waiting.n);
}

double llx_freeness_migrate(const llx_params *p, const gmg *g, const gmg_container *c)
{
    double hol = 0;
    if (c->waiting.head != GMG_NONE)
        hol = g->reqs[c->waiting.head].wait_blocks;
    return freeness(p, g, c, hol, c->running.n + (c->waiting.n ? 1u : 0u));
}
