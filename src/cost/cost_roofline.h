/* The roofline backend's formulas, shared with the backends that fall back to it (profile
 * tables) and with the profile importer's fidelity report. Private to src/cost: other modules
 * select backends by name through cost.h. */
#ifndef SS_COST_COST_ROOFLINE_H
#define SS_COST_COST_ROOFLINE_H

#include "cost/cost.h"

#include <math.h>

/* Rates and floors taken from one GPU's catalog entry. */
typedef struct cost_roofline_rates {
    double flops_per_s; /* peak * eff_compute */
    double bytes_per_s; /* hbm_bw * eff_memory: GEMMs, attention */
    double ew_per_s;    /* hbm_bw * eff_elementwise: norms, rotary, activation, residual */
    double link_per_s;  /* nvlink_bw * the engine's allreduce eff */
    double link_lat_s;  /* the link's latency per ring step or point-to-point message, s */
    double ar_hop_s;    /* the engine's software latency per all-reduce step, s */
    int ar_twoshot;     /* 1: two steps per all-reduce (two-shot), else 2(n-1) (ring) */
    double floor_s;     /* per kernel (the engine's op_floor_us on this GPU), s */
    double moe_eff;     /* the engine's efficiency of MoE expert GEMMs, (0, 1] */
    double attn_speed;  /* the engine's attention kernels' speed factor, > 0 */
} cost_roofline_rates;

/* The longest time one operator, or one engine step's host work, is given: 10^13 ns (about
 * 2.8 hours). Extreme catalog figures (a GPU of 10^-30 TFLOP/s) or profile tables (a steep
 * last slope extrapolated to 10^7 tokens) saturate here instead of overflowing ss_time; with
 * at most CAT_MAX_LAYERS layers an iteration's sum stays far below SS_TIME_MAX too. */
#define COST__MAX_OP_NS INT64_C(10000000000000)

/* A computed duration in ns as an operator time: rounded to nearest, at least 1, at most
 * COST__MAX_OP_NS (NaN, from inf - inf in an extreme table, gives the maximum). */
static inline ss_time cost__op_ns(double ns)
{
    if (ns < 1)
        return 1;
    if (!(ns < (double)COST__MAX_OP_NS))
        return COST__MAX_OP_NS;
    return (ss_time)(ns + 0.5);
}

/* cost_roofline_ns of an attention operator (prefill or decode) of `flops` and `bytes`, with
 * the same operations in the same order, for callers that have those without the operator. */
static inline ss_time cost__roofline_attn_ns(const cost_roofline_rates *r, double flops,
                                             double bytes)
{
    double tc = flops / r->flops_per_s;
    double tm = bytes / r->bytes_per_s;
    if (r->attn_speed != 1.0) {
        tc /= r->attn_speed;
        tm /= r->attn_speed;
    }
    double ns = (r->floor_s + sqrt(tc * tc + tm * tm)) * 1e9;
    return cost__op_ns(ns);
}

/* Fill r from GPU g and engine e (both borrowed). 0, or SS_EINVAL with eb set when g lacks
 * peak FLOP/s or bandwidth or e is NULL; r is then unspecified. */
int cost_roofline_rates_init(cost_roofline_rates *r, const cat_gpu *g, const cat_engine *e,
                             ss_errbuf *eb);
/* Roofline duration of one execution of op, ns (>= 1, except 0 for an all-reduce over one
 * GPU). Deterministic and side-effect free. */
ss_time cost_roofline_ns(const cost_roofline_rates *r, const cost_op *op);

#endif
