/* An iteration's timing on the GPUs (busy time, pipeline sends) and its expansion into
 * operator nodes with dependency edges, placements and predicted times. */
#include "gmg/gmg.h"

#include <string.h>

ss_time gmg_cross_node_send_ns(const gmg *g, const gmg_container *c, uint32_t stage,
                               double bytes)
{
    const gmg_gpu *a = &g->gpus[gmg_stage_gpu(c, stage)], *b = &g->gpus[gmg_stage_gpu(c, stage + 1)];
    if (a->node == b->node)
        return 0;
    const gmg_link *net = &g->links[g->n_links - 1];
    return ss_time_from_ns_sat((bytes / net->bw + net->latency_s) * 1e9);
}

/* ---- operator expansion ----------------------------------------------------------------- */

/* Execution order of one decoder layer; kinds absent from the iteration are skipped, and a
 * kind listed twice takes one of its two per-layer repetitions each time. */
static const cost_op_kind layer_order[] = {
    COST_OP_NORM,     COST_OP_QKV,     COST_OP_ROPE,   COST_OP_ATTN_PREFILL, COST_OP_ATTN_DECODE,
    COST_OP_OPROJ,    COST_OP_ALLREDUCE, COST_OP_RESIDUAL, COST_OP_NORM,     COST_OP_MOE_ROUTER,
    COST_OP_MLP_UP,   COST_OP_ACT,     COST_OP_MLP_DOWN, COST_OP_ALLREDUCE, COST_OP_RESIDUAL,
};
static const cost_op_kind head_order[] = {COST_OP_EMBED, COST_OP_ALLREDUCE};
static const cost_op_kind tail_order[] = {COST_OP_FINAL_NORM, COST_OP_LM_HEAD};

typedef struct expander {
    const gmg_container *c;
    cost_op ops[COST_OP__COUNT + 6];
    ss_time ns[COST_OP__COUNT + 6];
    uint32_t left[COST_OP__COUNT + 6]; /* executions not yet emitted */
    size_t n_kinds;
    gmg_op *out;
    gmg_edge *edges;
    size_t cap, n;
    ss_time t;        /* start of the next operator */
    gmg_id gpu;       /* first GPU of the stage being emitted */
    double act_bytes; /* activation tensor passed between operators */
} expander;

static void emit(expander *x, cost_op_kind k, uint32_t layer)
{
    for (size_t i = 0; i < x->n_kinds; i++) {
        if (x->ops[i].kind != k || !x->left[i])
            continue;
        x->left[i]--;
        if (x->n < x->cap) {
            gmg_op *o = &x->out[x->n];
            o->shape = x->ops[i];
            o->shape.count = 1;
            o->layer = layer;
            o->container = x->c->id;
            o->home_gpu = o->placed_gpu = x->gpu;
            o->state = GMG_OP_PENDING;
            o->pred_start = o->start = x->t;
            o->pred_end = o->end = x->t + x->ns[i];
            if (x->edges && x->n > 0)
                x->edges[x->n - 1] = (gmg_edge){(uint32_t)x->n - 1, (uint32_t)x->n, x->act_bytes,
                                                x->out[x->n - 1].placed_gpu, x->gpu};
        }
        x->t += x->ns[i];
        x->n++;
        return;
    }
}

/* Add an operator kind the cost model does not list (swap, pp_send) with one execution. */
static void add_kind(expander *x, cost_op op, ss_time ns, uint32_t executions)
{
    x->ops[x->n_kinds] = op;
    x->ns[x->n_kinds] = ns;
    x->left[x->n_kinds++] = executions;
}

ss_time gmg_stage_send_ns(const gmg *g, const gmg_container *c, uint32_t stage, cost_op *op_out)
{
    cost_op op;
    ss_time local = cost_pp_send(c->cost, &c->iter.batch, &op);
    ss_time remote = gmg_cross_node_send_ns(g, c, stage, op.comm_bytes);
    if (op_out)
        *op_out = op;
    return remote ? remote : local;
}

/* Emit pipeline stage st: swaps and the head on the first, its layers, the tail on the last,
 * and the send to the next stage on every other. */
static void emit_stage(const gmg *g, expander *x, uint32_t st, uint32_t *layer)
{
    const gmg_container *c = x->c;
    x->t = c->iter.stage_start[st];
    x->gpu = gmg_stage_gpu(c, st);
    if (st == 0) {
        /* the host phase opens the iteration (the GPU idles); then the stage may wait for
         * guest operators still running on its GPUs, then swaps precede the forward pass */
        emit(x, COST_OP_HOST, UINT32_MAX);
        x->t += c->iter.wait_ns;
        emit(x, COST_OP_KV_SWAP, UINT32_MAX);
        /* the embedding's all-reduce is the one left over after 2 per layer */
        for (size_t k = 0; k < sizeof head_order / sizeof *head_order; k++)
            if (head_order[k] != COST_OP_ALLREDUCE || c->tp > 1)
                emit(x, head_order[k], UINT32_MAX);
    }
    for (uint32_t n = cost_stage_layers(c->model, c->pp, st); n > 0; n--, (*layer)++)
        for (size_t k = 0; k < sizeof layer_order / sizeof *layer_order; k++)
            emit(x, layer_order[k], *layer);
    if (st + 1 == c->pp)
        for (size_t k = 0; k < sizeof tail_order / sizeof *tail_order; k++)
            emit(x, tail_order[k], UINT32_MAX);
    else {
        cost_op op;
        ss_time ns = gmg_stage_send_ns(g, c, st, &op);
        add_kind(x, op, ns, 1);
        emit(x, COST_OP_PP_SEND, UINT32_MAX);
        x->n_kinds--;
    }
}

size_t gmg_iter_expand(const gmg *g, const gmg_container *c, gmg_op *ops_out, size_t cap,
                       gmg_edge *edges_out)
{
    expander x = {.c = c, .out = ops_out, .edges = edges_out, .cap = cap};
    x.n_kinds = cost_iteration_ops(c->cost, &c->iter.batch, x.ops, x.ns, COST_OP__COUNT + 4);
    for (size_t i = 0; i < x.n_kinds; i++)
        x.left[i] = x.ops[i].count;
    const cost_batch *b = &c->iter.batch;
    x.act_bytes = (double)(b->prefill_tokens + b->n_decode) * c->model->hidden *
                  c->model->dtype_bytes;
    if (c->iter.swap_ns) /* the host-link phase (swaps, waits for the link) precedes the pass */
        add_kind(&x, (cost_op){.kind = COST_OP_KV_SWAP, .tp = c->tp, .count = 1,
                               .comm_bytes = gmg_swap_bytes_per_gpu(g, c, c->iter.swap_blocks)},
                 c->iter.swap_ns, 1);
    uint32_t layer = 0;
    for (uint32_t st = 0; st < c->pp; st++)
        emit_stage(g, &x, st, &layer);
    return x.n;
}
