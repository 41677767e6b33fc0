/* Roofline cost backend: t0 + softmax(FLOPs / (peak * eff_c), bytes / (bw * eff_m)) per
 * operator, where softmax(a, b) = sqrt(a^2 + b^2): equal to the classic max() far from the
 * ridge point and up to sqrt(2) slower near it, where measured GEMMs reach neither roof (tile
 * and wave quantisation); against Vidur's measured A100/H100 GEMM profiles this smooth form
 * cuts the mean absolute error by about a third. All-reduce over n GPUs:
 * 2(n-1)/n * bytes / (link_bw * eff_l) + steps * latency, with 2(n-1) steps for a ring and 2
 * for a two-shot all-reduce. The per-kernel floor t0, the all-reduce's algorithm, link
 * efficiency and software latency per step, the MoE expert-GEMM efficiency and the attention
 * kernels' speed factor come from the engine profile; the other efficiency factors from the
 * GPU's; element-wise kernels use their own memory efficiency. A pipeline send is one
 * point-to-point message over the same link: bytes / (link_bw * eff_l) + latency. */
#include "cost/cost_roofline.h"

#include <math.h>

int cost_roofline_rates_init(cost_roofline_rates *r, const cat_gpu *g, const cat_engine *e,
                             ss_errbuf *eb)
{
    if (!(g->peak_flops > 0 && g->hbm_bw > 0 && g->eff_compute > 0 && g->eff_memory > 0))
        return ss_err(eb, SS_EINVAL, "roofline: GPU %s lacks peak FLOP/s or bandwidth", g->name);
    if (!e)
        return ss_err(eb, SS_EINVAL, "roofline: no serving engine given");
    r->flops_per_s = g->peak_flops * g->eff_compute;
    r->bytes_per_s = g->hbm_bw * g->eff_memory;
    r->ew_per_s = g->hbm_bw * (g->eff_elementwise > 0 ? g->eff_elementwise : g->eff_memory);
    r->link_per_s = g->nvlink_bw * e->allreduce_eff;
    r->link_lat_s = g->link_latency_s;
    r->ar_hop_s = e->allreduce_hop_s;
    r->ar_twoshot = e->allreduce == CAT_ALLREDUCE_TWOSHOT;
    r->floor_s = cat_engine_host_for(e, g->name)->op_floor_s;
    r->moe_eff = e->moe_eff > 0 ? e->moe_eff : 1.0;
    r->attn_speed = e->attn_speed > 0 ? e->attn_speed : 1.0;
    return SS_OK;
}

static int roofline_init(void *priv, const cost_params *p, ss_errbuf *eb)
{
    return cost_roofline_rates_init(priv, p->gpu, p->engine, eb);
}

static ss_time to_ns(double s) { return cost__op_ns(s * 1e9); }

/* Element-wise kernels reach a lower fraction of HBM bandwidth than GEMMs and attention
 * (measured per-layer profiles show 30-60 %). */
static int is_elementwise(cost_op_kind k)
{
    return k == COST_OP_EMBED || k == COST_OP_NORM || k == COST_OP_ROPE || k == COST_OP_ACT ||
           k == COST_OP_RESIDUAL || k == COST_OP_FINAL_NORM;
}

ss_time cost_roofline_ns(const cost_roofline_rates *r, const cost_op *op)
{
    if (op->kind == COST_OP_ALLREDUCE) {
        double n = op->tp;
        if (n <= 1)
            return 0;
        double steps = r->ar_twoshot ? 2.0 : 2.0 * (n - 1);
        return to_ns(2.0 * (n - 1) / n * op->comm_bytes / r->link_per_s +
                     steps * (r->link_lat_s + r->ar_hop_s));
    }
    if (op->kind == COST_OP_PP_SEND)
        return to_ns(op->comm_bytes / r->link_per_s + r->link_lat_s);
    double tc = op->flops / r->flops_per_s;
    double tm = op->bytes / (is_elementwise(op->kind) ? r->ew_per_s : r->bytes_per_s);
    if (op->moe) { /* expert GEMMs reach a fraction of the dense roofline (grouped kernels) */
        tc /= r->moe_eff;
        tm /= r->moe_eff;
    }
    if (r->attn_speed != 1.0 &&
        (op->kind == COST_OP_ATTN_PREFILL || op->kind == COST_OP_ATTN_DECODE)) {
        tc /= r->attn_speed; /* the engine's attention kernels (FlashAttention, paged decode) */
        tm /= r->attn_speed;
    }
    return to_ns(r->floor_s + sqrt(tc * tc + tm * tm));
}

static ss_time roofline_op_ns(void *priv, const cost_op *op) { return cost_roofline_ns(priv, op); }

const cost_ops cost_roofline = {
    .abi_version = COST_ABI_VERSION,
    .name = "roofline",
    .priv_size = sizeof(cost_roofline_rates),
    .init = roofline_init,
    .op_ns = roofline_op_ns,
};
