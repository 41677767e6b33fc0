/* The `cuda` executor: one decoder layer's operators on a real GPU at the per-GPU shapes
 * cost.c gives them (tensor parallelism emulated on one GPU by running one rank's shard).
 * GEMMs are cuBLASLt bf16 matmuls with fp32 accumulation; norms, activations, rotary, residual,
 * embedding, KV-cache writes and attention are the kernels in kernels.cu. Prefill attention is
 * one fused kernel (tensor-core QK^T and PV, online softmax) at head dimensions 64 and 128,
 * else QK^T and PV as strided-batched cuBLASLt GEMMs per group of query heads sharing a KV
 * head with a causal softmax kernel between them. Operators run on one stream; cu_timer.c
 * times them.
 *
 * Buffers an operator reads and writes (every one filled with random values at prepare):
 *   embed    x <- emb[ids]                 norm, final_norm  y <- RMSNorm(x) * gamma
 *   qkv      qkv <- y Wqkv^T               rope              in place on qkv's Q and K heads
 *   attn_*   cache <- K, V of the batch; attn <- attention(Q, cache)
 *   o_proj   y <- attn Wo^T                residual          x <- x + y
 *   moe_router  logits <- y Wr^T           mlp_up            up <- y Wup^T (per expert)
 *   act      act <- silu(gate) * up (GELU for plain MLPs)     mlp_down  y <- act Wdown^T
 *   lm_head  logits <- y Wlm^T (one row per sequence)         pp_send   copy to the peer GPU */
#include "exec/cuda/cuda_int.h"
#include "exec/cuda/kernels.h"

#include "core/ss_alloc.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define N_PLANS 128
#define WS_BYTES ((size_t)64 << 20)
#define META_WORDS ((size_t)1 << 22) /* uint32 words of host-to-device metadata per window */
#define W_SCALE 0.02f                 /* random weights in [-0.02, 0.02) */

typedef struct plan_key {
    int ta, tb, c32, batch;
    uint64_t m, n, k, lda, ldb, ldc;
    int64_t sa, sb, sc;
    uint32_t al_a, al_b, al_c, pad; /* the buffers' alignment in bytes (for the heuristic) */
} plan_key;

typedef struct plan {
    plan_key key;
    int used;
    unsigned stamp;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
} plan;

typedef struct wset {
    void *qkv, *o, *router, *up, *down; /* up/down: experts x matrix */
} wset;

typedef struct cuda_priv {
    exec_config cfg;
    int dev, peer_dev;
    cudaStream_t st;
    cublasLtHandle_t lt;
    void *ws;
    cu_timer *timer;
    cu_nvml *nvml;
    double l2_bytes;
    /* shape of the prepared model (per GPU) */
    int ready;
    int H, KV, hd, h, F, W, E, topk, gated;
    uint64_t V;         /* vocabulary rows on this GPU */
    exec_limits lim;
    int n_sets;
    wset set[8];
    void *emb, *lm, *gamma;
    void *x, *y, *qkv, *attn, *up, *act, *logits;
    void *kc, *vc;
    float *S;
    void *P;
    size_t s_elems;     /* capacity of S and P, elements */
    float *dec_part;    /* decode attention's split partials */
    size_t dec_part_floats;
    int dec_split_cap; /* at most this many splits (0: as many as help; the self-test sets 1) */
    int prefill_gemm;  /* prefill attention as two GEMMs and a softmax even where the fused
                          kernel serves the head dimension (the self-test checks both) */
    void *flush;
    size_t flush_bytes;
    void *cp_src, *cp_dst;
    uint32_t *h_meta, *d_meta; /* pinned host ring and its device twin */
    size_t meta_used;
    plan plans[N_PLANS];
    unsigned plan_clock;
    /* allocations to free at re-prepare and fini */
    void **allocs;
    size_t n_allocs, cap_allocs;
} cuda_priv;

static int cu_err(ss_errbuf *eb, cudaError_t e, const char *what)
{
    return ss_err(eb, e == cudaErrorMemoryAllocation ? SS_ENOMEM : SS_EIO, "CUDA: %s: %s", what,
                  cudaGetErrorString(e));
}

static int lt_err(ss_errbuf *eb, cublasStatus_t s, const char *what)
{
    return ss_err(eb, SS_EIO, "cuBLASLt: %s: %s (%d)", what, cublasLtGetStatusName(s), (int)s);
}

#define CU(call, what)                                                                           \
    do {                                                                                         \
        cudaError_t e_ = (call);                                                                 \
        if (e_ != cudaSuccess)                                                                   \
            return cu_err(eb, e_, what);                                                         \
    } while (0)

#define K(call, what)                                                                            \
    do {                                                                                         \
        int e_ = (call);                                                                         \
        if (e_)                                                                                  \
            return cu_err(eb, (cudaError_t)e_, what);                                            \
    } while (0)

/* A kernel launcher's own error code (it has already cleared CUDA's last-error state) into rc,
 * keeping the first error. */
#define KRC(rc, call, what)                                                                      \
    do {                                                                                         \
        int e_ = (call);                                                                         \
        if (e_ && (rc) == SS_OK)                                                                 \
            (rc) = cu_err(eb, (cudaError_t)e_, what);                                            \
    } while (0)

/* {======================================================================
 * Device and memory
 * ======================================================================= */

static int dev_alloc(cuda_priv *p, void **out, size_t bytes, ss_errbuf *eb)
{
    *out = NULL;
    if (!bytes)
        bytes = 256;
    if (p->n_allocs == p->cap_allocs &&
        ss_grow((void **)&p->allocs, &p->cap_allocs, p->n_allocs + 1, sizeof *p->allocs))
        return ss_err(eb, SS_ENOMEM, "executor: out of memory");
    cudaError_t e = cudaMalloc(out, bytes);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return ss_err(eb, SS_ENOMEM, "CUDA: cudaMalloc of %.2f GiB failed (%s): lower the "
                                     "grid's largest tokens or the model's TP shard",
                      bytes / 1073741824.0, cudaGetErrorString(e));
    }
    p->allocs[p->n_allocs++] = *out;
    return SS_OK;
}

/* Allocate and fill with random bf16 values in [-scale, scale). */
static int dev_rand(cuda_priv *p, void **out, size_t elems, float scale, ss_errbuf *eb)
{
    static uint64_t seed = 0x5115ull;
    int rc = dev_alloc(p, out, elems * 2, eb);
    if (rc)
        return rc;
    K(ssk_fill(*out, elems ? elems : 1, seed++ * 0x100000001ull, scale, p->st), "random fill");
    return SS_OK;
}

static void free_model(cuda_priv *p)
{
    if (p->st)
        cudaStreamSynchronize(p->st);
    for (size_t i = 0; i < p->n_allocs; i++)
        cudaFree(p->allocs[i]);
    p->n_allocs = 0;
    p->ready = 0;
    memset(p->set, 0, sizeof p->set);
}

/* Destroy what a plan holds (also a half-made one: its handles start NULL). */
static void plan_drop(plan *pl)
{
    if (pl->op)
        cublasLtMatmulDescDestroy(pl->op);
    if (pl->a)
        cublasLtMatrixLayoutDestroy(pl->a);
    if (pl->b)
        cublasLtMatrixLayoutDestroy(pl->b);
    if (pl->c)
        cublasLtMatrixLayoutDestroy(pl->c);
    pl->op = NULL;
    pl->a = pl->b = pl->c = NULL;
    pl->used = 0;
}

static void free_plans(cuda_priv *p)
{
    for (int i = 0; i < N_PLANS; i++)
        plan_drop(&p->plans[i]);
}

static int cuda_init(void *priv, const exec_config *cfg, exec_device *d, ss_errbuf *eb)
{
    cuda_priv *p = priv;
    p->cfg = *cfg;
    p->peer_dev = -1;
    memset(d, 0, sizeof *d);
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        cudaGetLastError();
        int drv = -1; /* 0: no driver installed (the runtime's "insufficient driver" then) */
        if (e == cudaErrorInsufficientDriver && cudaDriverGetVersion(&drv) == cudaSuccess &&
            drv == 0)
            return ss_err(eb, SS_ENOTFOUND, "no CUDA GPU found: this machine has no NVIDIA "
                          "driver (cudaDriverGetVersion gives 0)");
        return ss_err(eb, SS_ENOTFOUND, "no CUDA GPU found (%s)",
                      e != cudaSuccess ? cudaGetErrorString(e) : "cudaGetDeviceCount: 0 devices");
    }
    if (cfg->gpu_index < 0 || cfg->gpu_index >= n)
        return ss_err(eb, SS_ENOTFOUND, "--gpu-index %d: this machine has %d CUDA GPU%s (0..%d)",
                      cfg->gpu_index, n, n == 1 ? "" : "s", n - 1);
    p->dev = cfg->gpu_index;
    CU(cudaSetDevice(p->dev), "cudaSetDevice");
    struct cudaDeviceProp prop;
    CU(cudaGetDeviceProperties(&prop, p->dev), "cudaGetDeviceProperties");
    int l2 = 0, drv = 0, rt = 0;
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, p->dev);
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    snprintf(d->name, sizeof d->name, "%.127s", prop.name);
    snprintf(d->runtime, sizeof d->runtime, "%d.%d", rt / 1000, rt % 1000 / 10);
    d->index = p->dev;
    d->n_devices = n;
    d->sm_count = (uint32_t)prop.multiProcessorCount;
    d->mem_bytes = (double)prop.totalGlobalMem;
    d->l2_bytes = l2;
    p->l2_bytes = l2;
    for (int o = 0; o < n && p->peer_dev < 0; o++) {
        int can = 0;
        if (o != p->dev && cudaDeviceCanAccessPeer(&can, p->dev, o) == cudaSuccess && can) {
            e = cudaDeviceEnablePeerAccess(o, 0);
            if (e == cudaSuccess || e == cudaErrorPeerAccessAlreadyEnabled)
                p->peer_dev = o;
            cudaGetLastError();
        }
    }
    d->peer = p->peer_dev >= 0;
    CU(cudaStreamCreateWithFlags(&p->st, cudaStreamNonBlocking), "cudaStreamCreate");
    cublasStatus_t s = cublasLtCreate(&p->lt);
    if (s != CUBLAS_STATUS_SUCCESS)
        return lt_err(eb, s, "cublasLtCreate");
    CU(cudaMalloc(&p->ws, WS_BYTES), "cudaMalloc (GEMM workspace)");
    CU(cudaMallocHost((void **)&p->h_meta, META_WORDS * sizeof(uint32_t)), "cudaMallocHost");
    CU(cudaMalloc((void **)&p->d_meta, META_WORDS * sizeof(uint32_t)), "cudaMalloc (metadata)");
    p->flush_bytes = (size_t)(2.0 * (l2 > 0 ? l2 : 64 << 20));
    CU(cudaMalloc(&p->flush, p->flush_bytes), "cudaMalloc (L2 flush buffer)");
    CU(cudaMemset(p->flush, 0x5a, p->flush_bytes), "L2 flush buffer");
    char bus[32] = "";
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, p->dev) == cudaSuccess)
        p->nvml = cu_nvml_open(bus);
    char drv_s[32];
    cu_nvml_ids(p->nvml, drv_s, sizeof drv_s, d->uuid, sizeof d->uuid);
    if (drv_s[0])
        snprintf(d->driver, sizeof d->driver, "%s", drv_s);
    else
        snprintf(d->driver, sizeof d->driver, "CUDA %d.%d", drv / 1000, drv % 1000 / 10);
    char note[160];
    int rc = cu_timer_open(&p->timer, p->st, 1, d->timer, note, eb);
    if (rc)
        return rc;
    if (note[0])
        fprintf(stderr, "slicesim: warning: %s; timing with CUDA events instead\n", note);
    return SS_OK;
}

static void cuda_fini(void *priv)
{
    cuda_priv *p = priv;
    free_model(p);
    free_plans(p);
    cu_timer_close(&p->timer);
    cu_nvml_close(&p->nvml);
    if (p->flush)
        cudaFree(p->flush);
    if (p->d_meta)
        cudaFree(p->d_meta);
    if (p->h_meta)
        cudaFreeHost(p->h_meta);
    if (p->ws)
        cudaFree(p->ws);
    if (p->lt)
        cublasLtDestroy(p->lt);
    if (p->st)
        cudaStreamDestroy(p->st);
    ss_free(p->allocs);
}

static void cuda_sensors(void *priv, exec_sensors *out)
{
    cuda_priv *p = priv;
    cu_nvml_read(p->nvml, out);
}

static size_t round8(size_t v) { return (v + 7) & ~(size_t)7; }

static int cuda_prepare(void *priv, const cat_model *m, uint32_t tp, const exec_limits *lim,
                        ss_errbuf *eb)
{
    cuda_priv *p = priv;
    free_model(p);
    p->H = (int)(m->heads / tp);
    p->KV = (int)(m->kv_heads >= tp ? m->kv_heads / tp : 1);
    p->hd = (int)m->head_dim;
    p->h = (int)m->hidden;
    p->F = (int)(m->ffn / tp);
    p->gated = m->gated_mlp;
    p->W = p->gated ? 2 * p->F : p->F;
    p->E = m->experts > 1 ? (int)m->experts : 1;
    p->topk = m->experts > 1 ? (int)m->top_k : 1;
    p->V = (m->vocab + tp - 1) / tp;
    p->lim = *lim;
    if (p->hd % 32 || p->hd > 256 || p->H % p->KV)
        return ss_err(eb, SS_ENOTSUP, "executor 'cuda': head_dim %d (needs a multiple of 32, at "
                                      "most 256) or %d heads over %d KV heads not supported",
                      p->hd, p->H, p->KV);
    size_t T = lim->max_tokens ? lim->max_tokens : 1, S = lim->max_seqs ? lim->max_seqs : 1;
    size_t C = lim->max_kv_tokens ? lim->max_kv_tokens : 1;
    size_t h = (size_t)p->h, nqkv = (size_t)(p->H + 2 * p->KV) * p->hd;
    double layer_bytes = 2.0 * (double)h * ((double)nqkv + (double)p->H * p->hd +
                                            (double)p->E * (p->W + p->F) + p->E);
    /* enough weight sets that consecutive layers do not find their weights in L2 */
    int sets = (int)ceil(4.0 * p->l2_bytes / (layer_bytes > 1 ? layer_bytes : 1));
    sets = sets < 1 ? 1 : sets > 8 ? 8 : sets;
    if ((uint32_t)sets > m->layers)
        sets = (int)m->layers;
    p->n_sets = sets;
    /* scores of one prefill sequence for the KV heads of one query-head group */
    p->s_elems = (size_t)p->KV * (lim->max_scores ? lim->max_scores : T * round8(C));
    /* splits fill the GPU only while sequences x heads < 2048 blocks: 4096 blocks' partials */
    p->dec_part_floats = (size_t)4096 * (size_t)(p->hd + 2);
    double need = layer_bytes * sets + 2.0 * h * (double)p->V * 2 +
                  2.0 * T * (2.0 * h + nqkv + (double)p->H * p->hd + p->W + p->F) +
                  2.0 * S * (double)p->V + 4.0 * C * p->KV * p->hd + 6.0 * p->s_elems +
                  4.0 * p->dec_part_floats +
                  2.0 * lim->max_copy_bytes;
    size_t free_b = 0, total_b = 0;
    CU(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    if (need > 0.95 * (double)free_b)
        return ss_err(eb, SS_ENOMEM, "executor 'cuda': %s at TP %u with up to %zu tokens and "
                                     "%zu KV tokens needs %.1f GiB; %.1f GiB free",
                      m->name, tp, T, C, need / 1073741824.0, free_b / 1073741824.0);
    int rc;
    for (int i = 0; i < sets; i++) {
        wset *w = &p->set[i];
        if ((rc = dev_rand(p, &w->qkv, nqkv * h, W_SCALE, eb)) ||
            (rc = dev_rand(p, &w->o, h * p->H * p->hd, W_SCALE, eb)) ||
            (rc = dev_rand(p, &w->up, (size_t)p->E * p->W * h, W_SCALE, eb)) ||
            (rc = dev_rand(p, &w->down, (size_t)p->E * h * p->F, W_SCALE, eb)) ||
            (rc = dev_rand(p, &w->router, (size_t)p->E * h, W_SCALE, eb)))
            return rc;
    }
    if ((rc = dev_rand(p, &p->emb, p->V * h, 1.0f, eb)) ||
        (rc = dev_rand(p, &p->lm, p->V * h, W_SCALE, eb)) ||
        (rc = dev_rand(p, &p->gamma, h, 1.0f, eb)) || (rc = dev_rand(p, &p->x, T * h, 1.0f, eb)) ||
        (rc = dev_rand(p, &p->y, T * h, 1.0f, eb)) ||
        (rc = dev_rand(p, &p->qkv, T * nqkv, 1.0f, eb)) ||
        (rc = dev_rand(p, &p->attn, T * p->H * p->hd, 1.0f, eb)) ||
        (rc = dev_rand(p, &p->up, T * p->W, 1.0f, eb)) ||
        (rc = dev_rand(p, &p->act, T * p->F, 1.0f, eb)) ||
        (rc = dev_rand(p, &p->logits, S * (p->V > (size_t)p->E ? p->V : (size_t)p->E) +
                                          T * (size_t)p->E, 1.0f, eb)) ||
        (rc = dev_rand(p, &p->kc, C * p->KV * p->hd, 1.0f, eb)) ||
        (rc = dev_rand(p, &p->vc, C * p->KV * p->hd, 1.0f, eb)) ||
        (rc = dev_alloc(p, (void **)&p->S, p->s_elems * 4, eb)) ||
        (rc = dev_alloc(p, (void **)&p->dec_part, p->dec_part_floats * 4, eb)) ||
        (rc = dev_rand(p, &p->P, p->s_elems, 1.0f, eb)))
        return rc;
    if (lim->max_copy_bytes) {
        if ((rc = dev_alloc(p, &p->cp_src, lim->max_copy_bytes, eb)))
            return rc;
        if (p->peer_dev >= 0) {
            CU(cudaSetDevice(p->peer_dev), "cudaSetDevice (peer)");
            cudaError_t e = cudaMalloc(&p->cp_dst, lim->max_copy_bytes);
            cudaSetDevice(p->dev);
            if (e != cudaSuccess)
                return cu_err(eb, e, "cudaMalloc on the peer GPU");
            /* freed with the others: cudaFree works for any device's pointer */
            if (ss_grow((void **)&p->allocs, &p->cap_allocs, p->n_allocs + 1, sizeof *p->allocs))
                return ss_err(eb, SS_ENOMEM, "executor: out of memory");
            p->allocs[p->n_allocs++] = p->cp_dst;
        } else if ((rc = dev_alloc(p, &p->cp_dst, lim->max_copy_bytes, eb))) {
            return rc;
        }
    }
    CU(cudaStreamSynchronize(p->st), "prepare");
    p->meta_used = 0;
    p->ready = 1;
    return SS_OK;
}

/* Copy n words of metadata to the device (before the operator's timed region); returns the
 * device pointer, NULL with eb set on failure. */
static uint32_t *upload(cuda_priv *p, const uint32_t *src, size_t n, ss_errbuf *eb)
{
    if (n > META_WORDS) {
        ss_err(eb, SS_EINVAL, "executor 'cuda': %zu metadata words exceed %zu", n,
               (size_t)META_WORDS);
        return NULL;
    }
    if (p->meta_used + n > META_WORDS) {
        /* the ring is full: wait until the copies reading it have run */
        cudaError_t e = cudaStreamSynchronize(p->st);
        if (e != cudaSuccess) {
            cu_err(eb, e, "metadata upload");
            return NULL;
        }
        p->meta_used = 0;
    }
    uint32_t *h = p->h_meta + p->meta_used, *d = p->d_meta + p->meta_used;
    memcpy(h, src, n * sizeof *h);
    cudaError_t e = cudaMemcpyAsync(d, h, n * sizeof *h, cudaMemcpyHostToDevice, p->st);
    if (e != cudaSuccess) {
        cu_err(eb, e, "metadata upload");
        return NULL;
    }
    p->meta_used += (n + 7) & ~(size_t)7;
    return d;
}

/* }====================================================================== */

/* {======================================================================
 * GEMMs through cuBLASLt (column-major, as cuBLAS sees memory)
 * ======================================================================= */

static int plan_make(cuda_priv *p, plan *pl, const plan_key *k, ss_errbuf *eb)
{
    cublasStatus_t s;
    cublasOperation_t ta = k->ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb = k->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if ((s = cublasLtMatmulDescCreate(&pl->op, CUBLAS_COMPUTE_32F, CUDA_R_32F)))
        return lt_err(eb, s, "cublasLtMatmulDescCreate");
    if ((s = cublasLtMatmulDescSetAttribute(pl->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta)) ||
        (s = cublasLtMatmulDescSetAttribute(pl->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb)))
        return lt_err(eb, s, "cublasLtMatmulDescSetAttribute (transpose)");
    uint64_t ar = k->ta ? k->k : k->m, ac = k->ta ? k->m : k->k;
    uint64_t br = k->tb ? k->n : k->k, bc = k->tb ? k->k : k->n;
    if ((s = cublasLtMatrixLayoutCreate(&pl->a, CUDA_R_16BF, ar, ac, (int64_t)k->lda)) ||
        (s = cublasLtMatrixLayoutCreate(&pl->b, CUDA_R_16BF, br, bc, (int64_t)k->ldb)) ||
        (s = cublasLtMatrixLayoutCreate(&pl->c, k->c32 ? CUDA_R_32F : CUDA_R_16BF, k->m, k->n,
                                        (int64_t)k->ldc)))
        return lt_err(eb, s, "cublasLtMatrixLayoutCreate");
    if (k->batch > 1) {
        int32_t b = k->batch;
        cublasLtMatrixLayout_t l[3] = {pl->a, pl->b, pl->c};
        const int64_t st[3] = {k->sa, k->sb, k->sc};
        for (int i = 0; i < 3; i++)
            if ((s = cublasLtMatrixLayoutSetAttribute(l[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b,
                                                      sizeof b)) ||
                (s = cublasLtMatrixLayoutSetAttribute(
                     l[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &st[i], sizeof st[i])))
                return lt_err(eb, s, "cublasLtMatrixLayoutSetAttribute (batch)");
    }
    cublasLtMatmulPreference_t pref;
    if ((s = cublasLtMatmulPreferenceCreate(&pref)))
        return lt_err(eb, s, "cublasLtMatmulPreferenceCreate");
    uint64_t ws = WS_BYTES;
    s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                             sizeof ws);
    /* The heuristic assumes 256-byte aligned buffers unless told otherwise, and the algorithm it
       picks then fails (NOT_SUPPORTED) on the offset and batch-strided attention operands. */
    const uint32_t al[4] = {k->al_a, k->al_b, k->al_c, k->al_c};
    const cublasLtMatmulPreferenceAttributes_t al_attr[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4 && !s; i++)
        s = cublasLtMatmulPreferenceSetAttribute(pref, al_attr[i], &al[i], sizeof al[i]);
    if (s) {
        cublasLtMatmulPreferenceDestroy(pref);
        return lt_err(eb, s, "cublasLtMatmulPreferenceSetAttribute");
    }
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    s = cublasLtMatmulAlgoGetHeuristic(p->lt, pl->op, pl->a, pl->b, pl->c, pl->c, pref, 1, &res,
                                       &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (s || !found)
        return ss_err(eb, SS_EIO, "cuBLASLt: no algorithm for %s%s GEMM m=%llu n=%llu k=%llu "
                                  "batch=%d (%s)",
                      k->ta ? "T" : "N", k->tb ? "T" : "N", (unsigned long long)k->m,
                      (unsigned long long)k->n, (unsigned long long)k->k, k->batch,
                      s ? cublasLtGetStatusName(s) : "none found");
    pl->algo = res.algo;
    pl->key = *k;
    pl->used = 1;
    return SS_OK;
}

/* C(m x n) = alpha * op(A) op(B), batched with strides; A and B bf16, C bf16 or fp32. */
static int gemm(cuda_priv *p, const plan_key *k, const void *A, const void *B, void *C,
                ss_errbuf *eb)
{
    plan *pl = NULL, *victim = &p->plans[0];
    for (int i = 0; i < N_PLANS && !pl; i++) {
        if (p->plans[i].used && !memcmp(&p->plans[i].key, k, sizeof *k))
            pl = &p->plans[i];
        else if (!p->plans[i].used || (victim->used && p->plans[i].stamp < victim->stamp))
            victim = &p->plans[i];
    }
    if (!pl) {
        plan_drop(victim);
        int rc = plan_make(p, victim, k, eb);
        if (rc) {
            plan_drop(victim);
            return rc;
        }
        pl = victim;
    }
    pl->stamp = ++p->plan_clock;
    float alpha = 1.0f, beta = 0.0f;
    cublasStatus_t s = cublasLtMatmul(p->lt, pl->op, &alpha, A, pl->a, B, pl->b, &beta, C, pl->c,
                                      C, pl->c, &pl->algo, p->ws, WS_BYTES, p->st);
    return s ? lt_err(eb, s, "cublasLtMatmul") : SS_OK;
}

/* The largest power of two up to 256 that divides the address and, when batched, the batch
   stride in bytes. */
static uint32_t gemm_align(const void *ptr, int64_t stride, size_t elem, int batch)
{
    uint64_t bytes = batch > 1 ? (uint64_t)stride * elem : 0;
    uint32_t al = 256;
    while (al > 1 && (((uintptr_t)ptr % al) || bytes % al))
        al >>= 1;
    return al;
}

/* Run layout g on buffers a, b (bf16) and c (fp32 when c32, else bf16). */
static int gemm_run(cuda_priv *p, const exec_gemm *g, int c32, const void *a, const void *b,
                    void *c, ss_errbuf *eb)
{
    const void *A = (const uint16_t *)a + g->a_off, *B = (const uint16_t *)b + g->b_off;
    void *C = c32 ? (void *)((float *)c + g->c_off) : (void *)((uint16_t *)c + g->c_off);
    int batch = g->batch > 1 ? g->batch : 1;
    plan_key key = {.ta = g->ta, .tb = g->tb, .c32 = c32, .batch = batch, .m = g->m, .n = g->n,
                    .k = g->k, .lda = g->lda, .ldb = g->ldb, .ldc = g->ldc, .sa = g->sa,
                    .sb = g->sb, .sc = g->sc, .al_a = gemm_align(A, g->sa, 2, batch),
                    .al_b = gemm_align(B, g->sb, 2, batch),
                    .al_c = gemm_align(C, g->sc, c32 ? 4 : 2, batch)};
    return gemm(p, &key, A, B, C, eb);
}

/* Y[t x n] = X[t x k] W^T, W stored [n][k] (rows of X ldx apart, of Y ldy apart). */
static int linear(cuda_priv *p, void *Y, uint64_t ldy, const void *X, uint64_t ldx, const void *W,
                  uint64_t t, uint64_t k, uint64_t n, ss_errbuf *eb)
{
    if (!t)
        return SS_OK;
    exec_gemm g = exec_gemm_linear(t, k, n, ldx, ldy);
    return gemm_run(p, &g, 0, W, X, Y, eb);
}

/* }====================================================================== */

/* {======================================================================
 * Operators
 * ======================================================================= */

static uint32_t token_id(size_t r, uint64_t V) { return (uint32_t)((r * 2654435761u) % V); }

/* Prefill attention: write the batch's new K and V into the cache, then attend. Sequence i's
 * tokens are rows [t0, t0 + q) of qkv and attn, its cache rows [r0, r0 + c0 + q); d_seq holds
 * (q, c0, t0, r0) of each. For head dimensions 64 and 128 one fused kernel does the batch;
 * otherwise per sequence and per query head of a group, scores = K Q^T (fp32), causal
 * softmax, out = P V. */
static int attn_prefill(cuda_priv *p, const exec_seq *seqs, uint32_t n, const uint32_t *d_slot,
                        const uint32_t *d_seq, uint64_t rows, ss_errbuf *eb)
{
    int H = p->H, KV = p->KV, hd = p->hd, G = H / KV;
    uint64_t ld_qkv = (uint64_t)(H + 2 * KV) * hd;
    K(ssk_kv_write(p->kc, p->vc, p->qkv, rows, (int)ld_qkv, H * hd, (H + KV) * hd, KV * hd, d_slot,
                   p->st), "KV-cache write");
    float scale = 1.0f / sqrtf((float)hd);
    if (!p->prefill_gemm && exec_prefill_fused((uint64_t)hd)) {
        uint32_t max_q = 0;
        for (uint32_t i = 0; i < n; i++)
            max_q = seqs[i].q > max_q ? seqs[i].q : max_q;
        K(ssk_prefill_attn(p->attn, H * hd, p->qkv, (int)ld_qkv, p->kc, p->vc, d_seq, (int)n,
                           max_q, H, KV, hd, scale, p->st), "prefill attention");
        return SS_OK;
    }
    uint64_t t0 = 0, r0 = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t q = seqs[i].q, c = (uint64_t)seqs[i].c0 + q;
        uint64_t lds = exec_prefill_scores(q, seqs[i].c0) / (q ? q : 1);
        if (!q)
            continue;
        if ((size_t)KV * q * lds > p->s_elems)
            return ss_err(eb, SS_EINVAL, "executor 'cuda': prefill of %llu tokens over %llu "
                                         "exceeds the prepared limits",
                          (unsigned long long)q, (unsigned long long)c);
        for (int j = 0; j < G; j++) {
            exec_gemm gs, gp;
            exec_gemm_attn(&gs, &gp, (uint32_t)H, (uint32_t)KV, (uint32_t)hd, q, seqs[i].c0, t0,
                           r0, (uint32_t)j);
            int rc = gemm_run(p, &gs, 1, p->kc, p->qkv, p->S, eb);
            if (rc)
                return rc;
            K(ssk_causal_softmax(p->P, p->S, (size_t)KV, (int)q, (int)c, (int)lds,
                                 (int)seqs[i].c0, scale, p->st), "causal softmax");
            if ((rc = gemm_run(p, &gp, 0, p->vc, p->P, p->attn, eb)))
                return rc;
        }
        t0 += q;
        r0 += c;
    }
    return SS_OK;
}

/* Host-side metadata of an attention operator: slot of every new token, then for decode the
 * cache start and length of every sequence (*start_out, *len_out), for prefill its (q, c0,
 * first row, first cache row) (*start_out). Sequences sit back to back in the cache. */
static int attn_meta(cuda_priv *p, const exec_op *op, int decode, uint32_t **slot_out,
                     uint32_t **start_out, uint32_t **len_out, uint64_t *rows_out, ss_errbuf *eb)
{
    uint32_t n = op->n_seqs;
    uint64_t rows = 0, cache = 0;
    for (uint32_t i = 0; i < n; i++) {
        rows += op->seqs[i].q;
        cache += (uint64_t)op->seqs[i].c0 + op->seqs[i].q;
    }
    if (rows > p->lim.max_tokens || cache > p->lim.max_kv_tokens || n > p->lim.max_seqs)
        return ss_err(eb, SS_EINVAL, "executor 'cuda': attention over %u sequences, %llu tokens, "
                                     "%llu KV tokens exceeds the prepared limits (%u, %llu, %llu)",
                      n, (unsigned long long)rows, (unsigned long long)cache, p->lim.max_seqs,
                      (unsigned long long)p->lim.max_tokens,
                      (unsigned long long)p->lim.max_kv_tokens);
    size_t words = rows + (decode ? 2u : 4u) * n;
    uint32_t *h = ss_malloc((words ? words : 1) * sizeof *h);
    if (!h)
        return ss_err(eb, SS_ENOMEM, "executor: out of memory");
    uint64_t r = 0, at = 0;
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t t = 0; t < op->seqs[i].q; t++)
            h[r++] = (uint32_t)(at + op->seqs[i].c0 + t);
        if (decode) {
            h[rows + i] = (uint32_t)at;
            h[rows + n + i] = op->seqs[i].c0 + op->seqs[i].q;
        } else {
            uint32_t *d = h + rows + 4 * (size_t)i;
            d[0] = op->seqs[i].q;
            d[1] = op->seqs[i].c0;
            d[2] = (uint32_t)(r - op->seqs[i].q);
            d[3] = (uint32_t)at;
        }
        at += (uint64_t)op->seqs[i].c0 + op->seqs[i].q;
    }
    uint32_t *d = upload(p, h, words, eb);
    ss_free(h);
    if (!d)
        return SS_EIO;
    *slot_out = d;
    *start_out = d + rows;
    *len_out = decode ? d + rows + n : NULL;
    *rows_out = rows;
    return SS_OK;
}

/* MoE expert GEMMs: rt routed tokens spread evenly over min(E, rt) experts, one GEMM each. */
static int experts(cuda_priv *p, void *Y, uint64_t ldy, const void *X, uint64_t ldx,
                   const uint16_t *W, uint64_t k, uint64_t n, uint64_t rt, ss_errbuf *eb)
{
    uint64_t ne = (uint64_t)p->E < rt ? (uint64_t)p->E : rt, row = 0;
    for (uint64_t e = 0; e < ne; e++) {
        uint64_t rows = rt / ne + (e < rt % ne);
        int rc = linear(p, (uint16_t *)Y + row * ldy, ldy, (const uint16_t *)X + row * ldx, ldx,
                        W + e * n * k, rows, k, n, eb);
        if (rc)
            return rc;
        row += rows;
    }
    return SS_OK;
}

/* Enqueue op's kernels; metadata uploads and the L2 flush happen before `timed` brackets the
 * operator's own work. */
static int run_op(cuda_priv *p, const exec_op *eo, uint64_t tag, ss_errbuf *eb)
{
    const cost_op *op = &eo->op;
    uint64_t T = op->tokens, h = (uint64_t)p->h;
    int H = p->H, KV = p->KV, hd = p->hd;
    uint64_t nqkv = (uint64_t)(H + 2 * KV) * hd;
    const wset *w = &p->set[eo->layer % (uint32_t)p->n_sets];
    uint32_t *ids = NULL, *slot = NULL, *start = NULL, *len = NULL;
    uint64_t rows = 0;
    int rc = SS_OK;
    int attn = op->kind == COST_OP_ATTN_PREFILL || op->kind == COST_OP_ATTN_DECODE;
    if (!attn && op->kind != COST_OP_LM_HEAD && op->kind != COST_OP_PP_SEND &&
        T > p->lim.max_tokens)
        return ss_err(eb, SS_EINVAL, "executor 'cuda': %s over %llu tokens exceeds the prepared "
                                     "%llu", cost_op_name(op->kind), (unsigned long long)T,
                      (unsigned long long)p->lim.max_tokens);
    if (op->kind == COST_OP_LM_HEAD && op->n_seqs > p->lim.max_seqs)
        return ss_err(eb, SS_EINVAL, "executor 'cuda': lm_head over %u sequences exceeds the "
                                     "prepared %u", op->n_seqs, p->lim.max_seqs);
    if (op->kind == COST_OP_PP_SEND && op->comm_bytes > (double)p->lim.max_copy_bytes)
        return ss_err(eb, SS_EINVAL, "executor 'cuda': copy of %.0f bytes exceeds the prepared "
                                     "%llu", op->comm_bytes,
                      (unsigned long long)p->lim.max_copy_bytes);
    if (op->kind == COST_OP_EMBED) {
        uint32_t *hid = ss_malloc((T ? T : 1) * sizeof *hid);
        if (!hid)
            return ss_err(eb, SS_ENOMEM, "executor: out of memory");
        for (uint64_t r = 0; r < T; r++)
            hid[r] = token_id(r, p->V);
        ids = upload(p, hid, T, eb);
        ss_free(hid);
        if (!ids)
            return SS_EIO;
    }
    if (attn) {
        if (!eo->seqs || !eo->n_seqs)
            return ss_err(eb, SS_EINVAL, "executor: %s needs its sequences",
                          cost_op_name(op->kind));
        if ((rc = attn_meta(p, eo, op->kind == COST_OP_ATTN_DECODE, &slot, &start, &len, &rows,
                            eb)))
            return rc;
    }
    if (tag && p->cfg.l2_cold)
        K(ssk_l2_flush(p->flush, p->flush_bytes, p->st), "L2 flush");
    if (tag && (rc = cu_timer_begin(p->timer, tag, eb)))
        return rc;
    switch (op->kind) {
    case COST_OP_EMBED:
        KRC(rc, ssk_embed(p->x, p->emb, ids, T, (int)h, p->st), "embed");
        break;
    case COST_OP_NORM:
    case COST_OP_FINAL_NORM:
        KRC(rc, ssk_rmsnorm(p->y, p->x, p->gamma, T, (int)h, 1e-5f, p->st), "rmsnorm");
        break;
    case COST_OP_QKV:
        rc = linear(p, p->qkv, nqkv, p->y, h, w->qkv, T, h, nqkv, eb);
        break;
    case COST_OP_ROPE:
        KRC(rc, ssk_rope(p->qkv, T, (int)nqkv, H + KV, hd, NULL, 10000.0f, p->st), "rotary");
        break;
    case COST_OP_ATTN_PREFILL:
        rc = attn_prefill(p, eo->seqs, eo->n_seqs, slot, start, rows, eb);
        break;
    case COST_OP_ATTN_DECODE:
        KRC(rc, ssk_kv_write(p->kc, p->vc, p->qkv, rows, (int)nqkv, H * hd, (H + KV) * hd,
                             KV * hd, slot, p->st), "decode attention: KV-cache write");
        if (rc == SS_OK) {
            uint32_t max_len = 0;
            for (uint32_t i = 0; i < eo->n_seqs; i++)
                if (eo->seqs[i].c0 + eo->seqs[i].q > max_len)
                    max_len = eo->seqs[i].c0 + eo->seqs[i].q;
            int ns = ssk_decode_splits((int)eo->n_seqs, H, hd, max_len, p->dec_part_floats);
            if (p->dec_split_cap > 0 && ns > p->dec_split_cap)
                ns = p->dec_split_cap;
            KRC(rc, ssk_decode_attn(p->attn, H * hd, p->qkv, (int)nqkv, p->kc, p->vc, start, len,
                                    (int)eo->n_seqs, H, KV, hd, 1.0f / sqrtf((float)hd), ns,
                                    p->dec_part, p->st),
                "decode attention");
        }
        break;
    case COST_OP_OPROJ:
        rc = linear(p, p->y, h, p->attn, (uint64_t)H * hd, w->o, T, (uint64_t)H * hd, h, eb);
        break;
    case COST_OP_RESIDUAL:
        KRC(rc, ssk_add(p->x, p->y, T * h, p->st), "residual add");
        break;
    case COST_OP_MOE_ROUTER:
        rc = linear(p, p->logits, (uint64_t)p->E, p->y, h, w->router, T, h, (uint64_t)p->E, eb);
        break;
    case COST_OP_MLP_UP:
        rc = experts(p, p->up, (uint64_t)p->W, p->y, h, w->up, h, (uint64_t)p->W, T, eb);
        break;
    case COST_OP_ACT:
        KRC(rc, p->gated ? ssk_silu_mul(p->act, p->up, T, (size_t)p->F, p->st)
                         : ssk_gelu(p->act, p->up, T * (size_t)p->F, p->st),
            "activation");
        break;
    case COST_OP_MLP_DOWN:
        rc = experts(p, p->y, h, p->act, (uint64_t)p->F, w->down, (uint64_t)p->F, h, T, eb);
        break;
    case COST_OP_LM_HEAD:
        rc = linear(p, p->logits, p->V, p->y, h, p->lm, op->n_seqs, h, p->V, eb);
        break;
    case COST_OP_PP_SEND: {
        size_t bytes = (size_t)op->comm_bytes;
        cudaError_t e = p->peer_dev >= 0
                            ? cudaMemcpyPeerAsync(p->cp_dst, p->peer_dev, p->cp_src, p->dev,
                                                  bytes, p->st)
                            : cudaMemcpyAsync(p->cp_dst, p->cp_src, bytes,
                                              cudaMemcpyDeviceToDevice, p->st);
        if (e != cudaSuccess)
            rc = cu_err(eb, e, "copy");
        break;
    }
    default:
        rc = ss_err(eb, SS_ENOTSUP, "executor 'cuda': cannot run %s on one GPU",
                    cost_op_name(op->kind));
        break;
    }
    if (tag) {
        int rc2 = cu_timer_end(p->timer, eb);
        if (!rc)
            rc = rc2;
    }
    return rc;
}

static int cuda_launch(void *priv, const exec_op *op, uint64_t tag, ss_errbuf *eb)
{
    cuda_priv *p = priv;
    if (!p->ready)
        return ss_err(eb, SS_EINVAL, "executor 'cuda': launch before prepare");
    return run_op(p, op, tag, eb);
}

static int cuda_collect(void *priv, const exec_sample **out, size_t *n_out, ss_errbuf *eb)
{
    cuda_priv *p = priv;
    CU(cudaStreamSynchronize(p->st), "running the operators");
    p->meta_used = 0;
    return cu_timer_collect(p->timer, out, n_out, eb);
}

/* }====================================================================== */

/* {======================================================================
 * Self-test: every operator on a small model shape against exec_ref.c
 * ======================================================================= */

static int to_host(float *dst, const void *src, size_t ld, size_t cols, size_t rows, ss_errbuf *eb)
{
    uint16_t *tmp = ss_malloc(rows * ld * 2 + 2);
    if (!tmp)
        return ss_err(eb, SS_ENOMEM, "self-test: out of memory");
    cudaError_t e = cudaMemcpy(tmp, src, rows * ld * 2, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        ss_free(tmp);
        return cu_err(eb, e, "self-test copy");
    }
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            dst[r * cols + c] = exec_bf16_to_float(tmp[r * ld + c]);
    ss_free(tmp);
    return SS_OK;
}

/* Largest |got - want| relative to the largest |want|. */
static double rel_err(const float *got, const float *want, size_t n)
{
    double mx = 1e-6, err = 0;
    for (size_t i = 0; i < n; i++) {
        mx = fmax(mx, fabs(want[i]));
        err = fmax(err, fabs((double)got[i] - want[i]));
    }
    return err / mx;
}

typedef struct st_ctx {
    cuda_priv *p;
    FILE *log;
    ss_errbuf *eb;
    int failed;
} st_ctx;

static int verdict(st_ctx *c, const char *what, const float *got, const float *want, size_t n)
{
    double e = rel_err(got, want, n);
    int ok = e <= 0.02 && isfinite(e);
    if (c->log)
        fprintf(c->log, "selftest %-13s max error %.4f of the largest value  %s\n", what, e,
                ok ? "ok" : "WRONG");
    if (!ok && !c->failed) {
        c->failed = 1;
        ss_err(c->eb, SS_EINVAL, "self-test: %s differs from the CPU reference (max error %.3f "
                                 "of the largest value)", what, e);
    }
    return SS_OK;
}

static int run_untimed(cuda_priv *p, const exec_op *op, ss_errbuf *eb)
{
    int rc = run_op(p, op, 0, eb);
    if (!rc)
        CU(cudaStreamSynchronize(p->st), "self-test");
    return rc;
}

/* One GEMM operator: out[t][n] = in[t][k] W^T, against the reference. a, w, g, r are host
 * scratch buffers large enough for the shapes. */
static int check_linear(st_ctx *c, exec_op *op, cost_op_kind kind, const char *name,
                        const void *in, const void *weights, const void *out, size_t t, size_t k,
                        size_t n, float *a, float *w, float *g, float *r)
{
    cuda_priv *p = c->p;
    ss_errbuf *eb = c->eb;
    int rc;
    op->op.kind = kind;
    if ((rc = to_host(a, in, k, k, t, eb)) || (rc = to_host(w, weights, k, k, n, eb)) ||
        (rc = run_untimed(p, op, eb)) || (rc = to_host(g, out, n, n, t, eb)))
        return rc;
    exec_ref_gemm(r, a, w, t, k, n);
    return verdict(c, name, g, r, t * n);
}

/* An attention operator (prefill or decode) over seqs, against exec_ref_attention, at the
 * prepared shape. Host scratch: a (the QKV rows), b (one sequence's queries), g, r (the
 * outputs), w (the cache rows' keys, then values). */
static int check_attention(st_ctx *c, const cost_op *base, cost_op_kind kind, exec_seq *seqs,
                           uint32_t n, const char *name, float *a, float *b, float *g, float *r,
                           float *w)
{
    cuda_priv *p = c->p;
    ss_errbuf *eb = c->eb;
    size_t H = (size_t)p->H, KV = (size_t)p->KV, hd = (size_t)p->hd;
    size_t nqkv = (H + 2 * KV) * hd, qw = H * hd, kw = KV * hd, rows = 0, cache = 0;
    for (uint32_t i = 0; i < n; i++) {
        rows += seqs[i].q;
        cache += (size_t)seqs[i].c0 + seqs[i].q;
    }
    exec_op at = {.op = *base, .seqs = seqs, .n_seqs = n};
    at.op.kind = kind;
    at.op.tokens = rows;
    at.op.n_seqs = n;
    int rc;
    if ((rc = to_host(a, p->qkv, nqkv, nqkv, rows, eb)) || (rc = run_untimed(p, &at, eb)) ||
        (rc = to_host(g, p->attn, qw, qw, rows, eb)) || (rc = to_host(w, p->kc, kw, kw, cache, eb)) ||
        (rc = to_host(w + cache * kw, p->vc, kw, kw, cache, eb)))
        return rc;
    size_t t0 = 0, r0 = 0;
    for (uint32_t i = 0; i < n; i++) {
        size_t q = seqs[i].q;
        for (size_t t = 0; t < q; t++)
            memcpy(b + t * qw, a + (t0 + t) * nqkv, qw * sizeof *b);
        exec_ref_attention(r + t0 * qw, b, w + r0 * kw, w + cache * kw + r0 * kw, q, seqs[i].c0,
                           H, KV, hd);
        t0 += q;
        r0 += seqs[i].c0 + q;
    }
    return verdict(c, name, g, r, rows * qw);
}

static int cuda_selftest(void *priv, FILE *log, ss_errbuf *eb)
{
    cuda_priv *p = priv;
    cat_model m = {.name = "selftest", .layers = 2, .hidden = 256, .heads = 4, .kv_heads = 2,
                   .head_dim = 64, .ffn = 384, .vocab = 1000, .dtype_bytes = 2, .gated_mlp = 1};
    exec_limits lim = {.max_tokens = 48, .max_kv_tokens = 160, .max_seqs = 8};
    exec_config saved = p->cfg;
    p->cfg.l2_cold = 0;
    int rc = cuda_prepare(p, &m, 1, &lim, eb);
    if (rc)
        return rc;
    st_ctx c = {p, log, eb, 0};
    size_t T = 7, h = 256, nqkv = (size_t)(4 + 2 * 2) * 64, F = 384;
    float *a = ss_malloc(64 * 1024 * sizeof *a), *b = ss_malloc(256 * 1024 * sizeof *b),
          *r = ss_malloc(64 * 1024 * sizeof *r), *g = ss_malloc(64 * 1024 * sizeof *g),
          *w = ss_malloc(512 * 1024 * sizeof *w);
    if (!a || !b || !r || !g || !w) {
        rc = ss_err(eb, SS_ENOMEM, "self-test: out of memory");
        goto out;
    }
    cost_op base = {.tp = 1, .tokens = T, .n_seqs = (uint32_t)T, .count = 1};
    exec_op op = {.op = base};
    /* embedding */
    op.op.kind = COST_OP_EMBED;
    if ((rc = run_untimed(p, &op, eb)) || (rc = to_host(g, p->x, h, h, T, eb)) ||
        (rc = to_host(w, p->emb, h, h, 1000, eb)))
        goto out;
    for (size_t t = 0; t < T; t++)
        memcpy(r + t * h, w + token_id(t, 1000) * h, h * sizeof *r);
    verdict(&c, "embed", g, r, T * h);
    /* RMSNorm */
    op.op.kind = COST_OP_NORM;
    if ((rc = to_host(a, p->x, h, h, T, eb)) || (rc = to_host(b, p->gamma, h, h, 1, eb)) ||
        (rc = run_untimed(p, &op, eb)) || (rc = to_host(g, p->y, h, h, T, eb)))
        goto out;
    exec_ref_rmsnorm(r, a, b, T, h, 1e-5f);
    verdict(&c, "norm", g, r, T * h);
    /* QKV GEMM (y -> qkv) */
    if ((rc = check_linear(&c, &op, COST_OP_QKV, "qkv_gemm", p->y, p->set[0].qkv, p->qkv, T, h,
                           nqkv, a, w, g, r)))
        goto out;
    /* rotary on Q and K heads (positions = rows) */
    op.op.kind = COST_OP_ROPE;
    if ((rc = to_host(a, p->qkv, nqkv, nqkv, T, eb)) || (rc = run_untimed(p, &op, eb)) ||
        (rc = to_host(g, p->qkv, nqkv, nqkv, T, eb)))
        goto out;
    {
        uint32_t pos[16];
        float *qk = r;
        for (size_t t = 0; t < T; t++) {
            pos[t] = (uint32_t)t;
            memcpy(qk + t * 6 * 64, a + t * nqkv, 6 * 64 * sizeof *qk);
        }
        exec_ref_rope(qk, pos, T, 6, 64, 10000.0f);
        for (size_t t = 0; t < T; t++)
            memcpy(b + t * 6 * 64, g + t * nqkv, 6 * 64 * sizeof *b);
        verdict(&c, "rope", b, qk, T * 6 * 64);
    }
    /* prefill attention: a sequence of 40 new tokens over 50 cached (two query tiles of the
       fused kernel, three key tiles), one of 5 over 3, one of 2; the fused kernel, then the
       GEMMs and softmax */
    exec_seq pre[3] = {{.q = 40, .c0 = 50}, {.q = 5, .c0 = 3}, {.q = 2, .c0 = 0}};
    for (int pass = 0; pass < 2; pass++) {
        p->prefill_gemm = pass;
        rc = check_attention(&c, &base, COST_OP_ATTN_PREFILL, pre, 3,
                             pass ? "attn_prefill_gemm" : "attn_prefill", a, b, g, r, w);
        p->prefill_gemm = 0;
        if (rc)
            goto out;
    }
    /* decode attention: three sequences of 1, 10 and 41 tokens, keys split over blocks (the
       split count the shape gets, with empty splits) and in one block per head */
    exec_seq dec[3] = {{.q = 1, .c0 = 0}, {.q = 1, .c0 = 9}, {.q = 1, .c0 = 40}};
    for (int pass = 0; pass < 2; pass++) {
        p->dec_split_cap = pass; /* 0: automatic; 1: no split */
        rc = check_attention(&c, &base, COST_OP_ATTN_DECODE, dec, 3,
                             pass ? "attn_decode_1block" : "attn_decode", a, b, g, r, w);
        p->dec_split_cap = 0;
        if (rc)
            goto out;
    }
    /* output projection (attn -> y) */
    if ((rc = check_linear(&c, &op, COST_OP_OPROJ, "o_proj_gemm", p->attn, p->set[0].o, p->y, T,
                           256, h, a, w, g, r)))
        goto out;
    /* residual (x += y) */
    op.op.kind = COST_OP_RESIDUAL;
    if ((rc = to_host(a, p->x, h, h, T, eb)) || (rc = to_host(b, p->y, h, h, T, eb)) ||
        (rc = run_untimed(p, &op, eb)) || (rc = to_host(g, p->x, h, h, T, eb)))
        goto out;
    for (size_t i = 0; i < T * h; i++)
        r[i] = a[i] + b[i];
    verdict(&c, "residual", g, r, T * h);
    /* gate/up GEMM (y -> up), SiLU-and-multiply (up -> act), down GEMM (act -> y) */
    if ((rc = check_linear(&c, &op, COST_OP_MLP_UP, "mlp_up_gemm", p->y, p->set[0].up, p->up, T,
                           h, 2 * F, a, w, g, r)))
        goto out;
    op.op.kind = COST_OP_ACT;
    if ((rc = to_host(a, p->up, 2 * F, 2 * F, T, eb)) || (rc = run_untimed(p, &op, eb)) ||
        (rc = to_host(g, p->act, F, F, T, eb)))
        goto out;
    exec_ref_silu_mul(r, a, T, F);
    verdict(&c, "silu_mul", g, r, T * F);
    if ((rc = check_linear(&c, &op, COST_OP_MLP_DOWN, "mlp_down_gemm", p->act, p->set[0].down, p->y,
                           T, F, h, a, w, g, r)))
        goto out;
    /* LM head over 3 sequences (y -> logits) */
    op.op.n_seqs = 3;
    if ((rc = check_linear(&c, &op, COST_OP_LM_HEAD, "lm_head_gemm", p->y, p->lm, p->logits, 3, h,
                           1000, a, w, g, r)))
        goto out;
    /* timing path: a timed operator yields one sample with at least one kernel */
    {
        const exec_sample *s = NULL;
        size_t n = 0;
        op.op.kind = COST_OP_QKV;
        if ((rc = run_op(p, &op, 42, eb)) || (rc = cuda_collect(p, &s, &n, eb)))
            goto out;
        int ok = n == 1 && s[0].tag == 42 && s[0].ns > 0;
        if (log)
            fprintf(log, "selftest %-13s %zu sample, %u kernel(s), %.1f us (%s)  %s\n", "timer", n,
                    n ? s[0].n_kernels : 0, n ? s[0].ns / 1e3 : 0.0,
                    n && s[0].kernel[0] ? s[0].kernel : "-", ok ? "ok" : "WRONG");
        if (!ok && !c.failed) {
            c.failed = 1;
            ss_err(eb, SS_EINVAL, "self-test: the timer returned %zu samples for one operator", n);
        }
    }
    /* the attention kernels again at head dimension 128, the catalog models' (other template
       instances, other tile sizes) */
    {
        cat_model m128 = m;
        m128.head_dim = 128;
        free_model(p);
        if ((rc = cuda_prepare(p, &m128, 1, &lim, eb)) ||
            (rc = check_attention(&c, &base, COST_OP_ATTN_PREFILL, pre, 3, "attn_prefill_hd128",
                                  a, b, g, r, w)) ||
            (rc = check_attention(&c, &base, COST_OP_ATTN_DECODE, dec, 3, "attn_decode_hd128", a,
                                  b, g, r, w)))
            goto out;
    }
    rc = c.failed ? SS_EINVAL : SS_OK;
out:
    ss_free(a);
    ss_free(b);
    ss_free(r);
    ss_free(g);
    ss_free(w);
    free_model(p);
    p->cfg = saved;
    return rc;
}

/* }====================================================================== */

static const exec_ops exec_cuda = {
    .abi_version = EXEC_ABI_VERSION,
    .name = "cuda",
    .priv_size = sizeof(cuda_priv),
    .init = cuda_init,
    .prepare = cuda_prepare,
    .launch = cuda_launch,
    .collect = cuda_collect,
    .selftest = cuda_selftest,
    .sensors = cuda_sensors,
    .fini = cuda_fini,
};

/* The module's one exported symbol, looked up by exec.c after dlopen. */
__attribute__((visibility("default"))) const exec_ops *slicesim_exec_cuda_ops(void);
const exec_ops *slicesim_exec_cuda_ops(void) { return &exec_cuda; }
