/* Cost model: how long one iteration of a batch takes on a container's GPUs, built from the
 * operators of a decoder layer. cost.c turns (model, TP degree, batch) into operator shapes
 * (FLOPs, bytes, collective payloads); a cost backend (ops struct: roofline now, profile
 * tables later) turns one operator shape into nanoseconds. The iteration time is the sum of
 * the operators' integer-ns times plus the engine's host overhead, so the fast path (one event
 * per iteration) and the expanded path (one node per operator) agree to the nanosecond.
 * Not for scheduling decisions or memory accounting beyond the activation-reserve estimate. */
#ifndef SS_COST_COST_H
#define SS_COST_COST_H

/* part of the plug-in API (policy/plugin.h): visible to a plug-in the binary loads */
#pragma GCC visibility push(default)

#include <stddef.h>
#include <stdint.h>

#include "catalog/catalog.h"
#include "core/ss_err.h"
#include "core/ss_time.h"

#define COST_ABI_VERSION 1

typedef enum cost_op_kind {
    COST_OP_EMBED,        /* token embedding lookup (once per iteration) */
    COST_OP_NORM,         /* RMSNorm (input and post-attention: 2 per layer) */
    COST_OP_QKV,          /* fused Q/K/V projection GEMM */
    COST_OP_ROPE,         /* rotary position embedding on Q and K */
    COST_OP_ATTN_PREFILL, /* causal attention of prefill tokens over their context */
    COST_OP_ATTN_DECODE,  /* one query token per sequence reading its KV cache */
    COST_OP_OPROJ,        /* attention output projection GEMM */
    COST_OP_ALLREDUCE,    /* tensor-parallel ring all-reduce of the activations */
    COST_OP_RESIDUAL,     /* residual add (2 per layer) */
    COST_OP_MOE_ROUTER,   /* router GEMM + top-k (MoE models) */
    COST_OP_MLP_UP,       /* gate+up projection GEMM (or up only for non-gated MLPs) */
    COST_OP_ACT,          /* SiLU-and-multiply (or the plain activation) */
    COST_OP_MLP_DOWN,     /* down projection GEMM */
    COST_OP_FINAL_NORM,   /* norm before the LM head (once per iteration) */
    COST_OP_LM_HEAD,      /* vocabulary projection for one token per sequence */
    COST_OP_HOST,         /* engine host time: scheduling, input preparation, sampling */
    COST_OP_PP_SEND,      /* pipeline-parallel send/recv of activations to the next stage */
    COST_OP_KV_SWAP,      /* KV blocks swapped between GPU and host memory over PCIe (timed by
                             the engine from the link, not by a cost backend) */
    COST_OP__COUNT
} cost_op_kind;

/* Stable lower-case names ("qkv", "attn_decode", ...) used in profiles and timelines. */
const char *cost_op_name(cost_op_kind k);

/* One operator's shape on one GPU of the container (already divided by TP). */
typedef struct cost_op {
    cost_op_kind kind;
    uint32_t tp;         /* tensor-parallel degree of the container */
    uint32_t n_seqs;     /* sequences the operator serves */
    uint64_t tokens;     /* query tokens the operator processes */
    uint64_t ctx_tokens; /* attention: KV tokens read (decode) or keys attended (prefill) */
    double flops;        /* floating-point operations on this GPU */
    double bytes;        /* HBM bytes read + written on this GPU */
    double comm_bytes;   /* collective payload per GPU (all-reduce), bytes */
    uint32_t count;      /* how many times it runs per iteration (layers x per-layer count) */
    double attn_pairs;   /* prefill attention: causal (query, key) pairs over its sequences */
    int moe;             /* 1: an expert GEMM of an MoE layer (the engine's moe_eff applies) */
} cost_op;

/* The batch of one iteration, summarised for costing. */
typedef struct cost_batch {
    uint32_t n_prefill;           /* sequences computing prompt tokens (a prefill or a chunk) */
    uint64_t prefill_tokens;      /* their query tokens */
    double prefill_attn_pairs;    /* sum of causal (query, key) pairs: q*c0 + q*(q+1)/2 each,
                                     c0 = tokens already in the KV cache before this chunk */
    uint64_t prefill_ctx_tokens;  /* sum of c0 + q: KV tokens each prefill sequence touches */
    uint32_t n_decode;            /* sequences generating one token */
    uint64_t decode_ctx_tokens;   /* sum of their context lengths (KV tokens read) */
} cost_batch;

/* Add one prefill chunk of q tokens over c0 cached tokens / one decode at context ctx. */
void cost_batch_add_prefill(cost_batch *b, uint64_t q, uint64_t c0);
static inline void cost_batch_add_decode(cost_batch *b, uint64_t ctx)
{
    b->n_decode++;
    b->decode_ctx_tokens += ctx;
}
/* Add every field of src into dst (inline: every iteration merges its decision's extra work). */
static inline void cost_batch_merge(cost_batch *dst, const cost_batch *src)
{
    dst->n_prefill += src->n_prefill;
    dst->prefill_tokens += src->prefill_tokens;
    dst->prefill_attn_pairs += src->prefill_attn_pairs;
    dst->prefill_ctx_tokens += src->prefill_ctx_tokens;
    dst->n_decode += src->n_decode;
    dst->decode_ctx_tokens += src->decode_ctx_tokens;
}

typedef struct cost_params {
    const cat_gpu *gpu;       /* borrowed, outlives the model */
    const cat_engine *engine; /* serving engine (host terms, fusion, all-reduce); borrowed,
                                 outlives the model; required */
    const cat_model *model;   /* borrowed */
    uint32_t tp;              /* tensor-parallel degree >= 1 */
    const char *profiles_dir; /* catalog directory (profile tables live in <dir>/<gpu>/);
                                 borrowed, may be NULL when no backend needs it */
} cost_params;

/* A cost backend: maps one operator shape to a duration. */
typedef struct cost_ops {
    uint32_t abi_version;   /* COST_ABI_VERSION */
    const char *name;       /* "roofline", "profile", "auto"; selected by --cost */
    size_t priv_size;       /* bytes of zeroed private state allocated with the model */
    /* Required. Check and take parameters. 0 or <0 with eb set. */
    int (*init)(void *priv, const cost_params *p, ss_errbuf *eb);
    /* Required. Duration of ONE execution of op on one GPU, in ns (>= 1). */
    ss_time (*op_ns)(void *priv, const cost_op *op);
    /* Optional. Release what init acquired (not priv itself). */
    void (*fini)(void *priv);
} cost_ops;

/* The built-in backends: the roofline; measured profile tables with a roofline fallback for
 * operators without one (`profile`); tables only inside their measured range (`auto`). The
 * table format and its semantics are in profiles/PROFILE-FORMAT.md. */
extern const cost_ops cost_roofline, cost_profile, cost_auto;
/* Backend by name, NULL if unknown. */
const cost_ops *cost_find(const char *name);
/* NULL-terminated list of built-in backend names. */
extern const char *const cost_backend_names[];
/* "roofline, profile, auto": the backends' names for a message, into buf (n bytes, cut short
 * when too small). */
void cost_backend_list(char *buf, size_t n);

typedef struct cost_model cost_model;

/* Create a cost model for one container shape with the named backend.
 * 0, SS_ENOTFOUND (unknown backend), SS_EINVAL (bad TP for the model, no engine),
 * SS_EPARSE / SS_EIO (a profile table under p->profiles_dir is malformed or unreadable:
 * "FILE:LINE: column: what") or SS_ENOMEM; eb says why. */
int cost_model_create(cost_model **cm_out, const char *backend, const cost_params *p,
                      ss_errbuf *eb);
void cost_model_destroy(cost_model **cm);
const char *cost_model_backend(const cost_model *cm);

/* Iteration time of batch b on the container, ns (0 for an empty batch): host + device for
 * an overlap=serial engine, max(host, device) for overlap=max. */
ss_time cost_iteration_ns(cost_model *cm, const cost_batch *b);

/* The operators of one iteration with their per-execution durations, in execution order of
 * one layer (count = layers x per-layer repetitions) followed by the once-per-iteration ones.
 * Fills up to cap entries of ops_out/ns_out and returns how many there are. The iteration
 * time equals sum(ns_out[i] * ops_out[i].count). */
size_t cost_iteration_ops(cost_model *cm, const cost_batch *b, cost_op *ops_out, ss_time *ns_out,
                          size_t cap);
/* The device operators an iteration of b launches: the sum of the counts of cost_iteration_ops'
 * operators but the host phase, without timing them (0 for an empty batch). */
uint64_t cost_iteration_kernels(const cost_model *cm, const cost_batch *b);

/* An iteration's time in the parts a pipeline-parallel container needs: the work of one
 * decoder layer, what runs once before the first layer (host overhead, embedding and its
 * all-reduce) and after the last (final norm, LM head), and one stage-to-stage send of the
 * activations. For a single stage, head + layers x layer_ns + tail == cost_iteration_ns. */
/* With an overlap=max engine the host work of a step runs while the device runs the previous
 * one: only what exceeds the device time, max(0, host - device), is exposed and counted in
 * host_ns, so the iteration takes max(host, device). (For a pipeline-parallel container the
 * device time compared is the whole model's, all stages, as if on one stage.) */
typedef struct cost_split {
    ss_time layer_ns; /* one decoder layer, attention included */
    ss_time head_ns;  /* exposed host time + embedding (+ its all-reduce) */
    ss_time host_ns;  /* the exposed host part of head_ns: the GPU idles meanwhile */
    ss_time tail_ns;  /* final norm + LM head */
    ss_time send_ns;  /* pp_send of the batch's activations to the next stage */
} cost_split;
void cost_iteration_split(cost_model *cm, const cost_batch *b, cost_split *out);

/* Pure-decode steps of a fixed number of sequences whose context grows step by step (a
 * simulator's steady run): what does not change from step to step worked out once
 * (cost_decode_prep), then each step's split from its context alone (cost_decode_split), the
 * same values as cost_iteration_split of a batch of n decodes at that context. */
typedef struct cost_decode_run {
    cost_model *cm;           /* borrowed */
    uint32_t n;               /* sequences */
    ss_time layer, head, tail, host; /* the dense operators' parts and the host time */
    uint64_t kernels;         /* kernel launches of a step */
    double behind;            /* kernels x launch time, ns (0: launched at once) */
    double flops_per_ctx;     /* decode attention's FLOPs per KV token read */
    double bytes_q, bytes_kv; /* its bytes: the query rows' and the written KV's terms */
    int roofline;             /* the backend is the roofline (its formulas inline) */
} cost_decode_run;
void cost_decode_prep(cost_decode_run *r, cost_model *cm, uint32_t n);
void cost_decode_split(const cost_decode_run *r, uint64_t ctx, cost_split *out);
/* The pp_send operator of batch b (activations of its query tokens) and its duration. */
ss_time cost_pp_send(cost_model *cm, const cost_batch *b, cost_op *op_out);

/* The shape of operator kind k in an iteration of batch b, as cost_iteration_ops gives it
 * (count = executions per iteration). 0, or SS_ENOTFOUND when the iteration has no such
 * operator (all_reduce at TP 1, a router in a dense model, attention without its sequences,
 * host time, an empty batch). */
int cost_op_shape(cost_model *cm, cost_op_kind k, const cost_batch *b, cost_op *out);
/* The host time of one step of batch b before any overlap (the engine's fixed + per
 * sequence + per token terms for this GPU), ns. */
ss_time cost_host_ns(const cost_model *cm, const cost_batch *b);
/* Duration of one operator with this model's backend, ns. */
ss_time cost_op_ns(cost_model *cm, const cost_op *op);

/* Decoder layers on pipeline stage `stage` of `pp` (the first L mod pp stages take one more). */
uint32_t cost_stage_layers(const cat_model *m, uint32_t pp, uint32_t stage);
/* Memory of the model on one GPU of a TP x PP group (the largest stage). */
double cost_weight_bytes_per_gpu(const cat_model *m, uint32_t tp, uint32_t pp);
/* KV-cache bytes per token on one GPU (KV heads split across TP, replicated when fewer;
 * layers split across PP stages, sized for the largest stage). */
double cost_kv_bytes_per_token_per_gpu(const cat_model *m, uint32_t tp, uint32_t pp);
/* Peak activation memory of a forward pass over max_tokens query tokens and max_seqs
 * sequences on one GPU (vLLM reserves this after its profiling run), bytes. */
double cost_activation_bytes(const cat_model *m, uint32_t tp, uint64_t max_tokens,
                             uint32_t max_seqs);

#pragma GCC visibility pop

#endif
