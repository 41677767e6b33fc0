/* C launchers of the CUDA executor's kernels (kernels.cu). Pointers are device pointers to
 * bf16 data unless the type says otherwise; stream is a cudaStream_t. Each returns the
 * launch's cudaError_t (0 = cudaSuccess). Private to src/exec/cuda/. */
#ifndef SS_CUDA_KERNELS_H
#define SS_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Uniform random values in [-scale, scale), a pure function of (seed, index). */
int ssk_fill(void *p, size_t n, uint64_t seed, float scale, void *stream);
/* y = RMSNorm(x) * g over rows of width h. */
int ssk_rmsnorm(void *y, const void *x, const void *g, size_t rows, int h, float eps,
                void *stream);
/* y[r][c] = silu(x[r][c]) * x[r][f + c] for rows x f outputs (x rows are 2f wide). */
int ssk_silu_mul(void *y, const void *x, size_t rows, size_t f, void *stream);
/* y = GELU(x) (tanh form), n elements. */
int ssk_gelu(void *y, const void *x, size_t n, void *stream);
/* Rotary embedding in place on the first `heads` heads of each row (rows ld_row apart);
 * positions pos[r] (device array) or r when pos is NULL. */
int ssk_rope(void *qkv, size_t rows, int ld_row, int heads, int hd, const uint32_t *pos,
             float theta, void *stream);
/* y += a, n elements. */
int ssk_add(void *y, const void *a, size_t n, void *stream);
/* y[r] = table[ids[r]] for rows of width h (ids: device array). */
int ssk_embed(void *y, const void *table, const uint32_t *ids, size_t rows, int h, void *stream);
/* Copy each row's K (columns k_col..) and V (v_col..) of width `width` into cache row slot[r]
 * of kc and vc (rows `width` wide). */
int ssk_kv_write(void *kc, void *vc, const void *qkv, size_t rows, int ld_row, int k_col,
                 int v_col, int width, const uint32_t *slot, void *stream);
/* Causal softmax of fp32 scores s (batch x rows x ld; row t may see keys j <= c0 + t of the
 * cols) scaled by scale, into bf16 probabilities p of the same layout (masked keys are 0). */
int ssk_causal_softmax(void *p, const float *s, size_t batch, int rows, int cols, int ld, int c0,
                       float scale, void *stream);
/* Fused causal prefill attention of a batch, head dimension 64 or 128 (exec_prefill_fused):
 * sequence i is seq[4 i .. 4 i + 3] (device array): q new tokens after c0 cached, rows t0 ..
 * t0 + q - 1 of qkv (Q of head h at column h hd, rows ld_qkv apart, a multiple of 8) and of
 * out (ld_out), keys and values from cache rows r0 .. r0 + c0 + q - 1 (kv_heads hd wide);
 * query t sees keys j <= c0 + t. max_q: the largest q. */
int ssk_prefill_attn(void *out, int ld_out, const void *qkv, int ld_qkv, const void *kc,
                     const void *vc, const uint32_t *seq, int n_seqs, uint32_t max_q, int heads,
                     int kv_heads, int hd, float scale, void *stream);
/* Read bytes of buf (16-byte aligned) through L2, evicting what L2 held (no dirty lines). */
int ssk_l2_flush(void *buf, size_t bytes, void *stream);
/* Decode attention: sequence i's query is row i of q (head h at column h * hd), its keys and
 * values are cache rows start[i] .. start[i] + len[i] - 1 (KV heads kv_heads wide); output
 * row i of out. hd must be a multiple of 32 and at most 256. Each sequence's keys are split
 * nsplit ways (1..64), the parts merged through scratch (n_seqs x heads x nsplit x (hd + 2)
 * floats; unused when nsplit is 1). */
int ssk_decode_attn(void *out, int ld_out, const void *q, int ld_q, const void *kc,
                    const void *vc, const uint32_t *start, const uint32_t *len, int n_seqs,
                    int heads, int kv_heads, int hd, float scale, int nsplit, float *scratch,
                    void *stream);
/* The split count ssk_decode_attn should use: enough blocks to fill the GPU, at least 16 keys
 * of the longest sequence (max_len) per split, and a scratch of scratch_floats floats. */
int ssk_decode_splits(int n_seqs, int heads, int hd, uint32_t max_len, size_t scratch_floats);

#ifdef __cplusplus
}
#endif

#endif
