/* Executors: run the operators of a decoder layer somewhere and say how long each took. The
 * `cuda` backend (src/exec/cuda/, built with -Dcuda) runs them on a real GPU (cuBLASLt GEMMs, the
 * project's own kernels, CUPTI activity timing); the `sim` backend "runs" them through the
 * roofline cost model, so calibrate and validate can be exercised end to end without a GPU.
 * `slicesim calibrate` and `slicesim validate` are the users. Not for choosing what to run:
 * cost.c owns the operator shapes (cost_op_shape), the app owns the grids and schedules. */
#ifndef SS_EXEC_EXEC_H
#define SS_EXEC_EXEC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "catalog/catalog.h"
#include "core/ss_err.h"
#include "core/ss_time.h"
#include "cost/cost.h"

#define EXEC_ABI_VERSION 1

/* One sequence of an attention operator: q query tokens over c0 tokens already cached (a
 * decode is q = 1, c0 = context - 1). */
typedef struct exec_seq {
    uint32_t q;
    uint32_t c0;
} exec_seq;

/* One operator to run: a per-GPU shape from cost.c (count is ignored: one execution) and, for
 * attention, its sequences (sum of q = op.tokens, sum of c0 + q = op.ctx_tokens). */
typedef struct exec_op {
    cost_op op;
    const exec_seq *seqs;  /* attention only: n_seqs entries; borrowed for the call */
    uint32_t n_seqs;
    uint32_t layer;        /* decoder layer (picks a weight set; any value is valid) */
} exec_op;

/* The biggest work prepare must size buffers for. */
typedef struct exec_limits {
    uint64_t max_tokens;    /* query tokens of one operator (MoE: routed tokens) */
    uint64_t max_kv_tokens; /* KV tokens one attention operator touches, all sequences */
    uint32_t max_seqs;      /* sequences of one operator */
    uint64_t max_copy_bytes;/* largest copy (pp_send) */
    uint64_t max_scores;    /* largest q x round8(c0 + q) of one prefill sequence (the scores
                               prefill attention holds per KV head); 0: max_tokens x
                               round8(max_kv_tokens) */
} exec_limits;

typedef struct exec_device {
    char name[128];        /* "NVIDIA H200" (sim: the catalog GPU's description) */
    char uuid[48];         /* GPU UUID, "" when unknown */
    char driver[32];       /* driver version, "" when unknown */
    char runtime[32];      /* CUDA runtime version */
    char timer[16];        /* "cupti", "events" (CUDA events: CUPTI unavailable) or "model" */
    int index;             /* device index */
    int n_devices;         /* devices visible */
    int peer;              /* 1: a peer GPU takes part in copies (pp_send); 0: device-local */
    uint32_t sm_count;
    double mem_bytes;
    double l2_bytes;
} exec_device;

/* Clocks, temperature and power read from the driver (NVML); valid = 0 when unavailable. */
typedef struct exec_sensors {
    int valid;
    double sm_mhz, mem_mhz, temp_c, power_w;
    uint64_t throttle;      /* NVML clock-event reasons bit set, 0 = none (idle is ignored) */
} exec_sensors;

typedef struct exec_config {
    int gpu_index;          /* device to use */
    int l2_cold;            /* 1: flush the L2 cache before every timed operator */
    const cat_gpu *gpu;     /* sim: the catalog GPU to model (borrowed); cuda: may be NULL */
    const cat_engine *engine; /* sim: the serving engine's kernel floor and fusion (borrowed) */
} exec_config;

/* One timed operator: the sum of its kernels' (and copies') device time. */
typedef struct exec_sample {
    uint64_t tag;           /* the tag it was launched with (> 0) */
    ss_time ns;             /* sum of its kernels' durations */
    ss_time start, end;     /* first kernel's start, last kernel's end (device clock, ns) */
    uint32_t n_kernels;     /* kernels and copies it launched */
    char kernel[96];        /* name of its longest kernel (commas replaced), "" when unknown */
} exec_sample;

/* An executor backend (ops struct). Every hook returns 0 or an SS_E* code with eb set. */
typedef struct exec_ops {
    uint32_t abi_version;   /* EXEC_ABI_VERSION */
    const char *name;       /* "cuda", "sim" */
    size_t priv_size;       /* zeroed private state allocated with the executor */
    /* Required. Open the device. SS_ENOTFOUND: no usable device (eb says why, one line). */
    int (*init)(void *priv, const exec_config *cfg, exec_device *dev_out, ss_errbuf *eb);
    /* Required. Allocate weights and buffers for one layer of m at TP degree tp, sized for lim
     * (random contents, never zeros). May be called again for another model. */
    int (*prepare)(void *priv, const cat_model *m, uint32_t tp, const exec_limits *lim,
                   ss_errbuf *eb);
    /* Required. Enqueue one operator. tag > 0 times it (collect returns a sample); tag 0 runs
     * it untimed (warm-up). With l2_cold, timed operators start with a cold L2. */
    int (*launch)(void *priv, const exec_op *op, uint64_t tag, ss_errbuf *eb);
    /* Required. Wait for everything launched, then return the samples of the timed operators
     * since the last collect, in launch order (owned by the executor, valid until the next
     * launch or collect). */
    int (*collect)(void *priv, const exec_sample **out, size_t *n_out, ss_errbuf *eb);
    /* Optional. Check every kernel against the CPU reference on small shapes; log one line per
     * check to log (may be NULL). SS_EINVAL when a result is wrong. */
    int (*selftest)(void *priv, FILE *log, ss_errbuf *eb);
    /* Optional. Read clocks, temperature, power. */
    void (*sensors)(void *priv, exec_sensors *out);
    /* Optional. Release what init and prepare acquired (not priv itself). */
    void (*fini)(void *priv);
} exec_ops;

/* The built-in backend. The `cuda` one lives in the module libslicesim-cuda.so (builds with
 * the CUDA executor), loaded on first use; its only exported symbol is
 * `const exec_ops *slicesim_exec_cuda_ops(void)`. */
extern const exec_ops exec_sim;

/* Backend by name (NULL if unknown or not built in; `cuda` is loaded here, NULL when its
 * module cannot be loaded). */
const exec_ops *exec_find(const char *name);
/* NULL-terminated list of the backends built into this binary. */
const char *const *exec_backend_names(void);
/* 1 when this binary has the CUDA executor. */
int exec_have_cuda(void);

typedef struct exec exec;

/* Open an executor. SS_ENOTFOUND (unknown backend, backend not built in, or no device: eb
 * says which), SS_ENOMEM, or the backend's error. On success *x_out is owned by the caller. */
int exec_create(exec **x_out, const char *backend, const exec_config *cfg, ss_errbuf *eb);
void exec_destroy(exec **x);
const exec_device *exec_device_info(const exec *x);
const char *exec_backend(const exec *x);
int exec_prepare(exec *x, const cat_model *m, uint32_t tp, const exec_limits *lim,
                 ss_errbuf *eb);
int exec_launch(exec *x, const exec_op *op, uint64_t tag, ss_errbuf *eb);
int exec_collect(exec *x, const exec_sample **out, size_t *n_out, ss_errbuf *eb);
/* SS_ENOTSUP when the backend has no self-test. */
int exec_selftest(exec *x, FILE *log, ss_errbuf *eb);
void exec_sensors_read(exec *x, exec_sensors *out);

/* The catalog GPU a device name stands for ("NVIDIA H200" -> "h200"), NULL when unknown. */
const char *exec_guess_gpu(const char *device);

/* 1 when the executors can run operator kind k (collectives only with a peer device). */
int exec_runs_op(const exec_device *d, cost_op_kind k);

/* {======================================================================
 * GEMM layouts (exec_gemm.c): the one place that maps an operator's row-major buffers onto
 * cuBLAS's column-major view. The CUDA executor turns these into cuBLASLt calls; the tests run
 * them through exec_ref_gemm_cm and compare with the plain CPU reference.
 * ======================================================================= */

/* Column-major C (m x n, ldc) = op(A) op(B), op(X) = X^T when tx; A is stored m x k (k x m when
 * ta), B k x n (n x k when tb). batch > 1 repeats it with element strides sa, sb, sc. The
 * offsets are where each matrix starts in its buffer, in elements. */
typedef struct exec_gemm {
    int ta, tb, batch;
    uint64_t m, n, k, lda, ldb, ldc;
    int64_t sa, sb, sc;
    uint64_t a_off, b_off, c_off;
} exec_gemm;

/* Y[t][n] = X[t][k] W^T for W stored [n][k] (a Linear layer's weight); X rows ldx apart, Y rows
 * ldy apart. A is W, B is X, C is Y. */
exec_gemm exec_gemm_linear(uint64_t t, uint64_t k, uint64_t n, uint64_t ldx, uint64_t ldy);

/* Prefill attention of one sequence of q tokens over c0 cached ones, for the query heads
 * j, j + G, j + 2G, ... (G = heads / kv_heads; one batch entry per KV head). Buffers: the QKV
 * rows (ld (heads + 2 kv_heads) hd; the sequence's first token at row t0), the K and V cache
 * (ld kv_heads hd; the sequence's first cached token at row r0), the fp32 scores and bf16
 * probabilities (per KV head q rows of exec_prefill_scores(q, c0) / q), and the output rows
 * (ld heads hd, row t0). scores: A = K cache, B = QKV, C = scores. pv: A = V cache,
 * B = probabilities, C = output. */
void exec_gemm_attn(exec_gemm *scores, exec_gemm *pv, uint32_t heads, uint32_t kv_heads,
                    uint32_t hd, uint64_t q, uint64_t c0, uint64_t t0, uint64_t r0, uint32_t j);

/* }====================================================================== */

/* {======================================================================
 * CPU reference (exec_ref.c): the operators on small float arrays, row-major, used by the
 * CUDA self-test and unit-tested on their own. bf16 rounding helpers included.
 * ======================================================================= */

/* Scores one prefill sequence of q tokens over c0 cached ones holds per KV head (the row length
 * rounded up to 8 elements). */
static inline uint64_t exec_prefill_scores(uint64_t q, uint64_t c0)
{
    return q * ((c0 + q + 7) & ~(uint64_t)7);
}
/* Whether the CUDA executor runs prefill attention as its fused kernel at this head dimension
 * (else as two GEMMs with a causal softmax between them). */
static inline int exec_prefill_fused(uint64_t head_dim)
{
    return head_dim == 64 || head_dim == 128;
}

/* float -> bf16 (round to nearest even; NaN stays NaN) and back. */
uint16_t exec_bf16_from_float(float f);
float exec_bf16_to_float(uint16_t b);
/* y[t][n] = sum_k x[t][k] * w[n][k] (w is [N][K], as a PyTorch Linear's weight). */
void exec_ref_gemm(float *y, const float *x, const float *w, size_t t, size_t k, size_t n);
/* RMSNorm of each of t rows of width h with weight g, epsilon eps. */
void exec_ref_rmsnorm(float *y, const float *x, const float *g, size_t t, size_t h, float eps);
/* y[t][f] = silu(x[t][f]) * x[t][F + f]: input rows are [gate | up], 2F wide. */
void exec_ref_silu_mul(float *y, const float *x, size_t t, size_t f);
/* Rotary embedding (rotate-half / NeoX layout) in place on x[t][heads][hd] at positions
 * pos[t], base theta. */
void exec_ref_rope(float *x, const uint32_t *pos, size_t t, size_t heads, size_t hd, float theta);
/* Run g on float buffers exactly as cuBLAS would (column-major, offsets, batch strides). */
void exec_ref_gemm_cm(const exec_gemm *g, const float *a, const float *b, float *c);
/* The causal softmax the prefill path applies to one KV head's scores: rows [0, q) of s (ld
 * elements apart), row t keeps keys j <= c0 + t of the c = c0 + q, scaled by scale; masked keys
 * get 0. */
void exec_ref_causal_softmax(float *p, const float *s, uint64_t q, uint64_t c0, uint64_t ld,
                             float scale);
/* Causal attention with grouped KV heads for one sequence: q[i][H][hd] for query tokens at
 * positions c0 + i, keys and values k/v[j][KV][hd] for j < c0 + nq; out[i][H][hd]. */
void exec_ref_attention(float *out, const float *q, const float *k, const float *v, size_t nq,
                        size_t c0, size_t heads, size_t kv_heads, size_t hd);

/* }====================================================================== */

#endif
