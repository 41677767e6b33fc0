/* Operator shapes of a decoder-only transformer iteration, the backend registry, and the
 * iteration sum. The shapes are the single source of FLOPs and bytes for every backend. */
#include "cost/cost.h"

#include "core/ss_alloc.h"
#include "cost/cost_roofline.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define COST_DENSE_BITS 8 /* 256 entries, 14 KiB a cost model (one per container) */
#define COST_DENSE_CACHE (1u << COST_DENSE_BITS)
#define MAX_OPS 24

typedef struct cost_dense_entry {
    uint64_t tokens; /* T of the batch */
    uint32_t seqs;   /* S of the batch */
    uint32_t valid;
    ss_time layer;   /* dense operators of one layer */
    ss_time head;    /* embedding (+ its all-reduce) */
    ss_time tail;    /* final norm + LM head */
    ss_time host;    /* the step's host time before overlap (cost_host_ns: T and S alone) */
    uint64_t kernels; /* kernel launches of these operators in one iteration */
} cost_dense_entry;

/* The model's attention shape on one GPU, as the operator formulas use it; fixed for the cost
 * model's life, so worked out once rather than per iteration. */
typedef struct attn_shape {
    double H;  /* query heads */
    double KV; /* KV heads (replicated when fewer than the TP degree) */
    double hd; /* head dimension */
    double d;  /* bytes per element */
} attn_shape;

struct cost_model {
    const cost_ops *ops;
    cost_dense_entry cache[COST_DENSE_CACHE];
    cost_params p;
    const cat_engine_host *host; /* the engine's host terms on this GPU (borrowed) */
    uint32_t layers;
    attn_shape attn;
    const cost_roofline_rates *roofline; /* the backend's rates when it is the roofline (the
                                            decode attention's closed form), else NULL */
    void *priv; /* points into tail */
    _Alignas(16) unsigned char tail[];
};

static const cost_ops *const cost_builtin[] = {&cost_roofline, &cost_profile, &cost_auto, NULL};
const char *const cost_backend_names[] = {"roofline", "profile", "auto", NULL};

static const char *const op_names[COST_OP__COUNT] = {
    [COST_OP_EMBED] = "embed",         [COST_OP_NORM] = "norm",
    [COST_OP_QKV] = "qkv",             [COST_OP_ROPE] = "rope",
    [COST_OP_ATTN_PREFILL] = "attn_prefill", [COST_OP_ATTN_DECODE] = "attn_decode",
    [COST_OP_OPROJ] = "o_proj",        [COST_OP_ALLREDUCE] = "all_reduce",
    [COST_OP_RESIDUAL] = "residual",   [COST_OP_MOE_ROUTER] = "moe_router",
    [COST_OP_MLP_UP] = "mlp_up",       [COST_OP_ACT] = "act",
    [COST_OP_MLP_DOWN] = "mlp_down",   [COST_OP_FINAL_NORM] = "final_norm",
    [COST_OP_LM_HEAD] = "lm_head",     [COST_OP_HOST] = "host",
    [COST_OP_PP_SEND] = "pp_send",     [COST_OP_KV_SWAP] = "kv_swap",
};

const char *cost_op_name(cost_op_kind k)
{
    return (unsigned)k < COST_OP__COUNT ? op_names[k] : "?";
}

const cost_ops *cost_find(const char *name)
{
    for (int i = 0; cost_builtin[i]; i++)
        if (!strcmp(cost_builtin[i]->name, name))
            return cost_builtin[i];
    return NULL;
}

void cost_batch_add_prefill(cost_batch *b, uint64_t q, uint64_t c0)
{
    b->n_prefill++;
    b->prefill_tokens += q;
    b->prefill_attn_pairs += (double)q * (double)c0 + (double)q * (double)(q + 1) / 2.0;
    b->prefill_ctx_tokens += c0 + q;
}

/* ------------------------------------------------------------------------------------------
 * Shapes per GPU
 * ---------------------------------------------------------------------------------------- */

/* Per-GPU head counts: query heads split evenly; KV heads split, or replicated when fewer
 * KV heads than ranks (as vLLM does). */
static double q_heads(const cat_model *m, uint32_t tp) { return (double)m->heads / tp; }
static double kv_heads(const cat_model *m, uint32_t tp)
{
    return m->kv_heads >= tp ? (double)m->kv_heads / tp : 1.0;
}
static int is_moe(const cat_model *m) { return m->experts > 1; }

uint32_t cost_stage_layers(const cat_model *m, uint32_t pp, uint32_t stage)
{
    return m->layers / pp + (stage < m->layers % pp);
}

double cost_weight_bytes_per_gpu(const cat_model *m, uint32_t tp, uint32_t pp)
{
    return cat_model_params(m) * m->dtype_bytes / tp * cost_stage_layers(m, pp, 0) / m->layers;
}

double cost_kv_bytes_per_token_per_gpu(const cat_model *m, uint32_t tp, uint32_t pp)
{
    return 2.0 * cost_stage_layers(m, pp, 0) * kv_heads(m, tp) * m->head_dim * m->dtype_bytes;
}

double cost_activation_bytes(const cat_model *m, uint32_t tp, uint64_t max_tokens,
                             uint32_t max_seqs)
{
    /* Largest live set: the layer input and residual (2h) plus gate/up output and the
     * activation (3F) per token, and fp32 logits for one token per sequence. */
    double f = (double)m->ffn / tp * (is_moe(m) ? m->top_k : 1);
    double per_tok = (2.0 * m->hidden + (m->gated_mlp ? 3.0 : 2.0) * f) * m->dtype_bytes;
    return (double)max_tokens * per_tok + (double)max_seqs * ((double)m->vocab / tp) * 4.0;
}

typedef struct shape_ctx {
    const cat_model *m;
    uint32_t tp;
    double d, h, T, S; /* dtype bytes, hidden, query tokens, sequences */
} shape_ctx;

static cost_op mk(const shape_ctx *c, cost_op_kind k, uint32_t count)
{
    cost_op op = {.kind = k, .tp = c->tp, .n_seqs = (uint32_t)c->S, .tokens = (uint64_t)c->T,
                  .count = count};
    return op;
}

/* GEMM of T x K by K x N: flops 2TKN, bytes (TK + KN + TN) * d, weight matrix read w times. */
static void gemm(cost_op *op, const shape_ctx *c, double t, double k, double n, double w)
{
    op->flops = 2.0 * t * k * n;
    op->bytes = (t * k + w * k * n + t * n) * c->d;
}

/* An attention operator of `tokens` query tokens in `seqs` sequences over ctx KV tokens, once
 * per layer; the caller sets its FLOPs and bytes. */
static void attn_op(cost_op *op, const cost_model *cm, cost_op_kind k, uint64_t tokens,
                    uint32_t seqs, uint64_t ctx)
{
    *op = (cost_op){.kind = k, .tp = cm->p.tp, .n_seqs = seqs, .tokens = tokens,
                    .ctx_tokens = ctx, .count = cm->layers};
}

/* FLOPs and bytes of decode attention: seqs query tokens, one per sequence, reading ctx KV
 * tokens in all. */
static inline void decode_attn_work(const cost_model *cm, uint32_t seqs, uint64_t ctx,
                                    double *flops, double *bytes)
{
    double H = cm->attn.H, KV = cm->attn.KV, hd = cm->attn.hd, d = cm->attn.d;
    double s = seqs, c = (double)ctx;
    *flops = 4.0 * hd * H * c;
    *bytes = (2.0 * s * H * hd + 2.0 * c * KV * hd + 2.0 * s * KV * hd) * d;
}

static size_t attention_ops(const cost_model *cm, const cost_batch *b, cost_op *out)
{
    double H = cm->attn.H, KV = cm->attn.KV, hd = cm->attn.hd, d = cm->attn.d;
    size_t n = 0;
    if (b->n_prefill) {
        cost_op *op = &out[n++];
        attn_op(op, cm, COST_OP_ATTN_PREFILL, b->prefill_tokens, b->n_prefill,
                b->prefill_ctx_tokens);
        double q = (double)b->prefill_tokens;
        op->attn_pairs = b->prefill_attn_pairs;
        op->flops = 4.0 * hd * H * b->prefill_attn_pairs;
        op->bytes = (2.0 * q * H * hd + 2.0 * (double)b->prefill_ctx_tokens * KV * hd +
                     2.0 * q * KV * hd) * d;
    }
    if (b->n_decode) {
        cost_op *op = &out[n++];
        attn_op(op, cm, COST_OP_ATTN_DECODE, b->n_decode, b->n_decode, b->decode_ctx_tokens);
        decode_attn_work(cm, b->n_decode, b->decode_ctx_tokens, &op->flops, &op->bytes);
    }
    return n;
}

/* Decode attention's time in one layer: the backend's for the operator attention_ops builds,
 * worked out without building it when the backend is the roofline (the same formulas, the
 * same double operations in the same order: cost_roofline_ns on that operator). Every
 * iteration of a decode-heavy replay costs one. */
static ss_time decode_attn_ns(cost_model *cm, uint32_t seqs, uint64_t ctx)
{
    const cost_roofline_rates *r = cm->roofline;
    if (!r) {
        cost_op op;
        attn_op(&op, cm, COST_OP_ATTN_DECODE, seqs, seqs, ctx);
        decode_attn_work(cm, seqs, ctx, &op.flops, &op.bytes);
        return cm->ops->op_ns(cm->priv, &op);
    }
    double flops, bytes;
    decode_attn_work(cm, seqs, ctx, &flops, &bytes);
    return cost__roofline_attn_ns(r, flops, bytes);
}

/* Expected distinct experts hit by T tokens choosing top_k of E uniformly. */
static double experts_hit(const cat_model *m, double T)
{
    double E = m->experts, k = m->top_k;
    return E * (1.0 - pow(1.0 - k / E, T));
}

/* The activation of rt routed tokens over F columns. Fused (vLLM's silu_and_mul): one
 * kernel reading gate and up and writing the product. Unfused gated MLP: silu (read F, write
 * F) then multiply (read 2F, write F), two kernels, five passes, the FLOPs split evenly. */
static cost_op act_op(const shape_ctx *c, double rt, double F, int fused)
{
    const cat_model *m = c->m;
    int two = m->gated_mlp && !fused;
    cost_op act = mk(c, COST_OP_ACT, m->layers * (two ? 2 : 1));
    act.flops = 5.0 * rt * F / (two ? 2 : 1);
    act.bytes = two ? 2.5 * rt * F * c->d : (m->gated_mlp ? 3.0 : 2.0) * rt * F * c->d;
    act.tokens = (uint64_t)rt;
    return act;
}

static size_t mlp_ops(const shape_ctx *c, int fuse_silu_mul, cost_op *out)
{
    const cat_model *m = c->m;
    size_t n = 0;
    double F = (double)m->ffn / c->tp, W = (m->gated_mlp ? 2.0 : 1.0) * F, T = c->T;
    double rt = T, wread = 1.0; /* routed tokens, weight matrices read */
    if (is_moe(m)) {
        cost_op r = mk(c, COST_OP_MOE_ROUTER, m->layers);
        gemm(&r, c, T, c->h, m->experts, 1.0);
        out[n++] = r;
        rt = T * m->top_k;
        wread = experts_hit(m, T);
    }
    cost_op up = mk(c, COST_OP_MLP_UP, m->layers);
    gemm(&up, c, rt, c->h, W, wread);
    up.tokens = (uint64_t)rt;
    up.moe = is_moe(m);
    out[n++] = up;
    out[n++] = act_op(c, rt, F, fuse_silu_mul);
    cost_op down = mk(c, COST_OP_MLP_DOWN, m->layers);
    gemm(&down, c, rt, F, c->h, wread);
    down.tokens = (uint64_t)rt;
    down.moe = is_moe(m);
    out[n++] = down;
    return n;
}

/* Fill out[] with the device operators that depend only on the batch's query tokens T and
 * sequences S: everything but attention and host time. */
static size_t build_dense_ops(const cost_model *cm, uint64_t T, uint32_t S, cost_op *out)
{
    const cat_model *m = cm->p.model;
    uint32_t tp = cm->p.tp, L = m->layers;
    shape_ctx c = {m, tp, m->dtype_bytes, m->hidden, (double)T, (double)S};
    double H = q_heads(m, tp), KV = kv_heads(m, tp), hd = m->head_dim;
    size_t n = 0;
    cost_op op = mk(&c, COST_OP_EMBED, 1);
    op.bytes = 2.0 * c.T * c.h * c.d;
    out[n++] = op;
    int fuse_add = cm->p.engine->fuse_add_norm;
    op = mk(&c, COST_OP_NORM, 2 * L);
    if (fuse_add) { /* fused_add_rms_norm: read x and residual, write both, one kernel */
        op.flops = 5.0 * c.T * c.h;
        op.bytes = (4.0 * c.T * c.h + c.h) * c.d;
    } else {
        op.flops = 4.0 * c.T * c.h;
        op.bytes = (2.0 * c.T * c.h + c.h) * c.d;
    }
    out[n++] = op;
    op = mk(&c, COST_OP_QKV, L);
    gemm(&op, &c, c.T, c.h, (H + 2.0 * KV) * hd, 1.0);
    out[n++] = op;
    op = mk(&c, COST_OP_ROPE, L);
    op.flops = 6.0 * c.T * (H + KV) * hd;
    op.bytes = 2.0 * c.T * (H + KV) * hd * c.d;
    out[n++] = op;
    op = mk(&c, COST_OP_OPROJ, L);
    gemm(&op, &c, c.T, H * hd, c.h, 1.0);
    out[n++] = op;
    if (tp > 1) {
        /* two per layer, plus the vocabulary-parallel embedding's */
        op = mk(&c, COST_OP_ALLREDUCE, 2 * L + 1);
        op.comm_bytes = c.T * c.h * c.d;
        out[n++] = op;
    }
    if (!fuse_add) { /* else inside the norm kernel */
        op = mk(&c, COST_OP_RESIDUAL, 2 * L);
        op.flops = c.T * c.h;
        op.bytes = 3.0 * c.T * c.h * c.d;
        out[n++] = op;
    }
    n += mlp_ops(&c, cm->p.engine->fuse_silu_mul, out + n);
    op = mk(&c, COST_OP_FINAL_NORM, 1);
    op.flops = 4.0 * c.T * c.h;
    op.bytes = (2.0 * c.T * c.h + c.h) * c.d;
    out[n++] = op;
    op = mk(&c, COST_OP_LM_HEAD, 1);
    op.tokens = S;
    gemm(&op, &c, c.S, c.h, (double)m->vocab / tp, 1.0);
    out[n++] = op;
    return n;
}

static uint64_t batch_tokens(const cost_batch *b) { return b->prefill_tokens + b->n_decode; }
static uint32_t batch_seqs(const cost_batch *b) { return b->n_prefill + b->n_decode; }

/* Host overhead of one engine step before overlap (not a device operator; the same for every
 * backend). */
ss_time cost_host_ns(const cost_model *cm, const cost_batch *b)
{
    const cat_engine_host *g = cm->host;
    double s = g->iter_fixed_s + g->iter_per_seq_s * batch_seqs(b) +
               g->iter_per_token_s * (double)batch_tokens(b);
    return s * 1e9 < (double)COST__MAX_OP_NS ? (ss_time)(s * 1e9 + 0.5) : COST__MAX_OP_NS;
}

/* Executions of op per decoder layer; 0 for once-per-iteration operators. */
static uint32_t per_layer(const cost_op *op, uint32_t layers)
{
    return op->count / layers;
}

/* Work out dense_split's entry e for (T, S). Out of line, so that a hit, the common case,
 * needs no stack frame for the operators. */
__attribute__((noinline)) static void dense_fill(cost_model *cm, cost_dense_entry *e,
                                                 uint64_t T, uint32_t S)
{
    cost_op ops[MAX_OPS];
    size_t n = build_dense_ops(cm, T, S, ops);
    cost_batch b = {.n_decode = S, .prefill_tokens = T - S}; /* T and S are what counts */
    *e = (cost_dense_entry){.tokens = T, .seqs = S, .valid = 1, .host = cost_host_ns(cm, &b)};
    for (size_t i = 0; i < n; i++) {
        ss_time t = cm->ops->op_ns(cm->priv, &ops[i]);
        uint32_t k = per_layer(&ops[i], cm->layers);
        e->layer += t * k;
        e->kernels += ops[i].count;
        if (ops[i].count > k * cm->layers) { /* once-per-iteration part */
            if (ops[i].kind == COST_OP_FINAL_NORM || ops[i].kind == COST_OP_LM_HEAD)
                e->tail += t;
            else
                e->head += t; /* embedding and the embedding's all-reduce */
        }
    }
}

/* The dense operators' time for (T, S) split into one layer, head and tail, memoised: decode-
 * heavy replays repeat the same few (T, S) pairs millions of times. The cached values are the
 * same integer sums the expanded path adds up, so memoisation never changes a result. */
static const cost_dense_entry *dense_split(cost_model *cm, uint64_t T, uint32_t S)
{
    uint64_t h = T * UINT64_C(0x9E3779B97F4A7C15) ^ (uint64_t)S * UINT64_C(0xC2B2AE3D27D4EB4F);
    cost_dense_entry *e = &cm->cache[h >> (64 - COST_DENSE_BITS)];
    if (!(e->valid && e->tokens == T && e->seqs == S))
        dense_fill(cm, e, T, S);
    return e;
}

/* The host time of a step that the device does not hide, given the host's scheduling work
 * host, the device's kernel time device and the step's kernel launches. An eager engine
 * launches kernel by kernel (launch_us each) while the device runs them: the device waits
 * whenever the launches fall behind, so the step takes at least kernels x launch_us, and the
 * difference shows as host time (the GPU idles). Then the scheduling work: all of it for a
 * serial engine, max(0, host - device) for an overlap=max engine (CUDA graphs + async
 * scheduling prepare the next step while the device runs this one). */
static ss_time exposed_host_ns(const cost_model *cm, ss_time host, ss_time device,
                               uint64_t kernels)
{
    ss_time wait = 0;
    double behind = cm->host->launch_s > 0 /* CUDA graphs launch a step at once */
                        ? (double)kernels * cm->host->launch_s * 1e9 - (double)device : 0;
    if (behind > 0)
        wait = behind < (double)COST__MAX_OP_NS ? (ss_time)(behind + 0.5) : COST__MAX_OP_NS;
    device += wait;
    if (cm->p.engine->overlap == CAT_OVERLAP_MAX)
        return wait + (host > device ? host - device : 0);
    return wait + host;
}

void cost_iteration_split(cost_model *cm, const cost_batch *b, cost_split *out)
{
    out->send_ns = 0;
    if (batch_seqs(b) == 0) {
        out->layer_ns = out->head_ns = out->host_ns = out->tail_ns = 0;
        return;
    }
    const cost_dense_entry *e = dense_split(cm, batch_tokens(b), batch_seqs(b));
    ss_time layer = e->layer;
    uint64_t kernels = e->kernels;
    if (b->n_prefill) { /* the operator attention_ops builds first */
        cost_op att;
        cost_batch pre = *b;
        pre.n_decode = 0;
        attention_ops(cm, &pre, &att);
        layer += cm->ops->op_ns(cm->priv, &att);
        kernels += att.count;
    }
    if (b->n_decode) { /* and second */
        layer += decode_attn_ns(cm, b->n_decode, b->decode_ctx_tokens);
        kernels += cm->layers;
    }
    out->layer_ns = layer;
    out->host_ns = exposed_host_ns(cm, e->host, e->head + layer * (ss_time)cm->layers + e->tail,
                                   kernels);
    out->head_ns = out->host_ns + e->head;
    out->tail_ns = e->tail;
}

void cost_decode_prep(cost_decode_run *r, cost_model *cm, uint32_t n)
{
    const cost_dense_entry *e = dense_split(cm, n, n);
    double H = cm->attn.H, KV = cm->attn.KV, hd = cm->attn.hd, s = n;
    *r = (cost_decode_run){.cm = cm, .n = n, .layer = e->layer, .head = e->head, .tail = e->tail,
                           .host = e->host, .kernels = e->kernels + cm->layers,
                           .roofline = cm->roofline != NULL};
    /* decode_attn_work's and exposed_host_ns's constant parts, grouped as they evaluate */
    r->behind = cm->host->launch_s > 0 ? (double)r->kernels * cm->host->launch_s * 1e9 : 0;
    r->flops_per_ctx = 4.0 * hd * H;
    r->bytes_q = 2.0 * s * H * hd;
    r->bytes_kv = 2.0 * s * KV * hd;
}

void cost_decode_split(const cost_decode_run *r, uint64_t ctx, cost_split *out)
{
    cost_model *cm = r->cm;
    ss_time attn;
    if (r->roofline) {
        double c = (double)ctx;
        double flops = r->flops_per_ctx * c;
        double bytes = (r->bytes_q + 2.0 * c * cm->attn.KV * cm->attn.hd + r->bytes_kv) *
                       cm->attn.d;
        attn = cost__roofline_attn_ns(cm->roofline, flops, bytes);
    } else
        attn = decode_attn_ns(cm, r->n, ctx);
    ss_time layer = r->layer + attn, device = r->head + layer * (ss_time)cm->layers + r->tail;
    ss_time wait = 0; /* exposed_host_ns */
    double behind = cm->host->launch_s > 0 ? r->behind - (double)device : 0;
    if (behind > 0)
        wait = behind < (double)COST__MAX_OP_NS ? (ss_time)(behind + 0.5) : COST__MAX_OP_NS;
    device += wait;
    ss_time host = cm->p.engine->overlap == CAT_OVERLAP_MAX
                       ? wait + (r->host > device ? r->host - device : 0)
                       : wait + r->host;
    out->layer_ns = layer;
    out->host_ns = host;
    out->head_ns = host + r->head;
    out->tail_ns = r->tail;
    out->send_ns = 0;
}

ss_time cost_pp_send(cost_model *cm, const cost_batch *b, cost_op *op_out)
{
    const cat_model *m = cm->p.model;
    cost_op op = {.kind = COST_OP_PP_SEND, .tp = cm->p.tp, .count = 1, .n_seqs = batch_seqs(b),
                  .tokens = batch_tokens(b)};
    op.comm_bytes = (double)batch_tokens(b) * m->hidden * m->dtype_bytes;
    if (op_out)
        *op_out = op;
    return batch_seqs(b) ? cm->ops->op_ns(cm->priv, &op) : 0;
}

/* The device operators of an iteration of b (none for an empty batch) into ops; their count. */
static size_t device_ops(const cost_model *cm, const cost_batch *b, cost_op ops[MAX_OPS])
{
    if (!batch_seqs(b))
        return 0;
    size_t n = build_dense_ops(cm, batch_tokens(b), batch_seqs(b), ops);
    return n + attention_ops(cm, b, ops + n);
}

size_t cost_iteration_ops(cost_model *cm, const cost_batch *b, cost_op *ops_out, ss_time *ns_out,
                          size_t cap)
{
    if (batch_seqs(b) == 0)
        return 0;
    cost_op ops[MAX_OPS];
    size_t n = device_ops(cm, b, ops);
    ss_time device = 0;
    uint64_t kernels = 0;
    for (size_t i = 0; i < n; i++) {
        ss_time t = cm->ops->op_ns(cm->priv, &ops[i]);
        device += t * ops[i].count;
        kernels += ops[i].count;
        if (i < cap) {
            ops_out[i] = ops[i];
            ns_out[i] = t;
        }
    }
    if (n < cap) {
        ops_out[n] = (cost_op){.kind = COST_OP_HOST, .tp = cm->p.tp, .count = 1,
                               .n_seqs = batch_seqs(b), .tokens = batch_tokens(b)};
        ns_out[n] = exposed_host_ns(cm, cost_host_ns(cm, b), device, kernels);
    }
    return n + 1;
}

uint64_t cost_iteration_kernels(const cost_model *cm, const cost_batch *b)
{
    cost_op ops[MAX_OPS];
    size_t n = device_ops(cm, b, ops);
    uint64_t kernels = 0;
    for (size_t i = 0; i < n; i++)
        kernels += ops[i].count;
    return kernels;
}

int cost_op_shape(cost_model *cm, cost_op_kind k, const cost_batch *b, cost_op *out)
{
    if (k == COST_OP_PP_SEND && batch_seqs(b)) {
        cost_pp_send(cm, b, out);
        return SS_OK;
    }
    cost_op ops[MAX_OPS];
    size_t n = device_ops(cm, b, ops);
    for (size_t i = 0; i < n; i++)
        if (ops[i].kind == k) {
            *out = ops[i];
            return SS_OK;
        }
    return SS_ENOTFOUND;
}

ss_time cost_iteration_ns(cost_model *cm, const cost_batch *b)
{
    cost_split sp;
    cost_iteration_split(cm, b, &sp);
    return sp.head_ns + sp.layer_ns * (ss_time)cm->layers + sp.tail_ns;
}

ss_time cost_op_ns(cost_model *cm, const cost_op *op) { return cm->ops->op_ns(cm->priv, op); }

const char *cost_model_backend(const cost_model *cm) { return cm->ops->name; }

static int check_params(const cost_params *p, ss_errbuf *eb)
{
    if (!p->gpu || !p->model || !p->engine)
        return ss_err(eb, SS_EINVAL, "cost model: GPU, model and engine are required");
    if (p->tp < 1 || p->tp > 64)
        return ss_err(eb, SS_EINVAL, "--tp: must be between 1 and 64, got %u", p->tp);
    if (p->model->heads % p->tp)
        return ss_err(eb, SS_EINVAL, "--tp: %u does not divide the %u attention heads of %s",
                      p->tp, p->model->heads, p->model->name);
    if (p->model->ffn % p->tp)
        return ss_err(eb, SS_EINVAL, "--tp: %u does not divide the FFN size %u of %s", p->tp,
                      p->model->ffn, p->model->name);
    return SS_OK;
}

void cost_backend_list(char *buf, size_t n)
{
    size_t used = 0;
    if (n)
        buf[0] = '\0';
    for (int i = 0; cost_backend_names[i] && used < n; i++) {
        int w = snprintf(buf + used, n - used, "%s%s", i ? ", " : "", cost_backend_names[i]);
        used += w > 0 ? (size_t)w : 0;
    }
}

static int unknown_backend(const char *backend, ss_errbuf *eb)
{
    char known[128];
    cost_backend_list(known, sizeof known);
    return ss_err(eb, SS_ENOTFOUND, "--cost: unknown cost model '%s' (known: %s)", backend,
                  known);
}

int cost_model_create(cost_model **cm_out, const char *backend, const cost_params *p,
                      ss_errbuf *eb)
{
    const cost_ops *ops = cost_find(backend);
    if (!ops)
        return unknown_backend(backend, eb);
    if (ops->abi_version != COST_ABI_VERSION || !ops->init || !ops->op_ns)
        return ss_err(eb, SS_EINVAL, "cost model '%s': incompatible plug-in", backend);
    int rc = check_params(p, eb);
    if (rc)
        return rc;
    cost_model *cm = ss_calloc(1, sizeof *cm + ops->priv_size);
    if (!cm)
        return ss_err(eb, SS_ENOMEM, "cost model: out of memory");
    cm->ops = ops;
    cm->p = *p;
    cm->layers = p->model->layers;
    cm->host = cat_engine_host_for(p->engine, p->gpu->name);
    cm->attn = (attn_shape){.H = q_heads(p->model, p->tp), .KV = kv_heads(p->model, p->tp),
                            .hd = p->model->head_dim, .d = p->model->dtype_bytes};
    cm->priv = cm->tail;
    if ((rc = ops->init(cm->priv, p, eb))) {
        ss_free(cm);
        return rc;
    }
    cm->roofline = ops == &cost_roofline ? cm->priv : NULL;
    *cm_out = cm;
    return SS_OK;
}

void cost_model_destroy(cost_model **cmp)
{
    cost_model *cm = *cmp;
    if (!cm)
        return;
    if (cm->ops->fini)
        cm->ops->fini(cm->priv);
    ss_free(cm);
    *cmp = NULL;
}
