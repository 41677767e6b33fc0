/* Two simple placement policies beside SliceScheduler (place_slice.c):
 *  - "home": every operator runs on its own container's GPUs (never ticks);
 *  - "greedy": every greedy_period_ms, each container with a queue offloads the prefill of its
 *    last fresh waiting request to the first idle container that can take it (same TP degree,
 *    no pipeline, no queue, no guest; nearest id first), without asking a what-if whether the
 *    move helps or harms anyone. A baseline for SliceScheduler's what-if judgement: its moves
 *    run on the same mechanism and are charged the same costs (pol_place_move_costs), all
 *    but the decision latency, as it asks no what-if. */
#include "policy/policy.h"

#include <stdlib.h>

static ss_time home_period(const void *priv)
{
    (void)priv;
    return 0;
}

const pol_place_ops pol_place_home = {
    .abi_version = POL_ABI_VERSION,
    .name = "home",
    .summary = "every operator on its own container's GPUs",
    .period = home_period,
};

typedef struct greedy {
    ss_time period;
    pol_place_mechanism mech; /* its moves are charged as SliceScheduler's are */
} greedy;

static const char *const greedy_params[] = {"greedy_period_ms", "slice_host_factor",
                                            "slice_link_eff", "slice_interference", NULL};

static int greedy_init(void *priv, ss_params *p, ss_errbuf *eb)
{
    greedy *s = priv;
    double ms;
    int rc = ss_params_get_double(p, "greedy", "greedy_period_ms", 20, 0.1, 1e7, &ms, eb);
    s->period = (ss_time)(ms * SS_NS_PER_MS);
    /* no what-ifs, so no decision latency; streamed or staged weights as the default */
    s->mech = (pol_place_mechanism){.guest_overrun =
                                        (ss_time)(POL_PLACE_OVERRUN_MS * SS_NS_PER_MS),
                                    .weights = POL_WEIGHTS_AUTO};
    return rc ? rc : pol_place_move_costs(p, "greedy", &s->mech, eb);
}

static void greedy_mechanism(const void *priv, pol_place_mechanism *out)
{
    *out = ((const greedy *)priv)->mech;
}

static ss_time greedy_period(const void *priv) { return ((const greedy *)priv)->period; }

static int taken(const pol_place_decision *out, gmg_id c)
{
    for (uint32_t i = 0; i < out->n_offload; i++)
        if (out->offload[i].helper == c)
            return 1;
    return 0;
}

static int greedy_tick(void *priv, const pol_place_env *env, const gmg *g,
                       pol_place_decision *out, pol_place_stats *st, ss_errbuf *eb)
{
    (void)priv, (void)eb;
    for (uint32_t a = 0; a < g->n_ctrs && out->n_offload < out->cap_offload; a++) {
        const gmg_container *home = &g->ctrs[a];
        gmg_id r = home->status == GMG_CTR_ACTIVE ? pol_fresh_tail(g, home) : GMG_NONE;
        if (r == GMG_NONE || !env->offload_allowed(env->sim, r))
            continue;
        for (uint32_t h = 0; h < g->n_ctrs; h++) {
            const gmg_container *c = &g->ctrs[h];
            if (h == a || c->waiting.n || taken(out, h) || env->has_guest(env->sim, h))
                continue;
            ss_errbuf why;
            if (env->offload_check(env->sim, r, h, &why)) {
                st->refused_memory++;
                continue;
            }
            out->offload[out->n_offload++] = (pol_offload){.req = r, .helper = h};
            st->chosen++;
            st->ticks++;
            break;
        }
    }
    return SS_OK;
}

const pol_place_ops pol_place_greedy = {
    .abi_version = POL_ABI_VERSION,
    .name = "greedy",
    .summary = "each backlogged container's newest prefill to the first idle container that "
               "can take it, without a what-if",
    .params = greedy_params,
    .priv_size = sizeof(greedy),
    .init = greedy_init,
    .period = greedy_period,
    .tick = greedy_tick,
    .mechanism = greedy_mechanism,
};
