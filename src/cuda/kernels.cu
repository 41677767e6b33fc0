// The CUDA executor's own kernels (everything but the GEMMs, which are cuBLASLt's): random
// fill, RMSNorm, SiLU-and-multiply, GELU, rotary embedding, residual add, embedding gather,
// KV-cache write, causal softmax for prefill attention, and decode attention. bf16 storage,
// fp32 arithmetic. Each launcher is extern "C" and returns the launch's cudaError_t as int.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "kernels.h"

typedef __nv_bfloat16 bf16;

static __device__ __forceinline__ float ld(const bf16 *p) { return __bfloat162float(*p); }
static __device__ __forceinline__ bf16 st(float f) { return __float2bfloat16(f); }

static __device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
static __device__ __forceinline__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Reduce over a block of up to 1024 threads (a multiple of 32). All threads get the result.
template <bool MAX> static __device__ float block_reduce(float v)
{
    __shared__ float part[32];
    __shared__ float result;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    v = MAX ? warp_max(v) : warp_sum(v);
    if (lane == 0)
        part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float w = lane < nw ? part[lane] : (MAX ? -INFINITY : 0.0f);
        w = MAX ? warp_max(w) : warp_sum(w);
        if (lane == 0)
            result = w;
    }
    __syncthreads();
    float r = result;
    __syncthreads();
    return r;
}

static unsigned grid_for(size_t n, unsigned block)
{
    size_t g = (n + block - 1) / block;
    return (unsigned)(g > 65535u * 16u ? 65535u * 16u : (g ? g : 1));
}

// ---- random fill ----------------------------------------------------------------------------

static __global__ void k_fill(bf16 *p, size_t n, uint64_t seed, float scale)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint64_t z = seed + i * 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        float u = (float)(z >> 40) * (1.0f / 16777216.0f); // [0, 1)
        p[i] = st((2.0f * u - 1.0f) * scale);
    }
}

extern "C" int ssk_fill(void *p, size_t n, uint64_t seed, float scale, void *stream)
{
    k_fill<<<grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>((bf16 *)p, n, seed, scale);
    return (int)cudaGetLastError();
}

// ---- RMSNorm ----------------------------------------------------------------------------------

static __global__ void k_rmsnorm(bf16 *y, const bf16 *x, const bf16 *g, int h, float eps)
{
    const bf16 *xr = x + (size_t)blockIdx.x * h;
    bf16 *yr = y + (size_t)blockIdx.x * h;
    float ss = 0;
    for (int i = threadIdx.x; i < h; i += blockDim.x) {
        float v = ld(xr + i);
        ss += v * v;
    }
    ss = block_reduce<false>(ss);
    float r = rsqrtf(ss / (float)h + eps);
    for (int i = threadIdx.x; i < h; i += blockDim.x)
        yr[i] = st(ld(xr + i) * r * ld(g + i));
}

extern "C" int ssk_rmsnorm(void *y, const void *x, const void *g, size_t rows, int h, float eps,
                           void *stream)
{
    if (!rows)
        return 0;
    int block = h >= 4096 ? 1024 : h >= 1024 ? 512 : 128;
    k_rmsnorm<<<(unsigned)rows, block, 0, (cudaStream_t)stream>>>((bf16 *)y, (const bf16 *)x,
                                                                  (const bf16 *)g, h, eps);
    return (int)cudaGetLastError();
}

// ---- activations ------------------------------------------------------------------------------

static __global__ void k_silu_mul(bf16 *y, const bf16 *x, size_t rows, size_t f)
{
    size_t n = rows * f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t r = i / f, c = i - r * f;
        float a = ld(x + r * 2 * f + c), b = ld(x + r * 2 * f + f + c);
        y[i] = st(a / (1.0f + __expf(-a)) * b);
    }
}

extern "C" int ssk_silu_mul(void *y, const void *x, size_t rows, size_t f, void *stream)
{
    k_silu_mul<<<grid_for(rows * f, 256), 256, 0, (cudaStream_t)stream>>>(
        (bf16 *)y, (const bf16 *)x, rows, f);
    return (int)cudaGetLastError();
}

static __global__ void k_gelu(bf16 *y, const bf16 *x, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float a = ld(x + i);
        y[i] = st(0.5f * a * (1.0f + tanhf(0.7978845608f * (a + 0.044715f * a * a * a))));
    }
}

extern "C" int ssk_gelu(void *y, const void *x, size_t n, void *stream)
{
    k_gelu<<<grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>((bf16 *)y, (const bf16 *)x, n);
    return (int)cudaGetLastError();
}

// ---- rotary embedding (rotate-half layout), in place on the Q and K heads of a QKV row -------

static __global__ void k_rope(bf16 *qkv, size_t rows, int ld_row, int heads, int hd,
                              const uint32_t *pos, float theta)
{
    int half = hd / 2;
    size_t n = rows * (size_t)heads * half;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t r = i / ((size_t)heads * half);
        int rem = (int)(i - r * (size_t)heads * half), h = rem / half, d = rem - h * half;
        bf16 *v = qkv + r * (size_t)ld_row + (size_t)h * hd;
        float p = pos ? (float)pos[r] : (float)r;
        float a = p * powf(theta, -2.0f * (float)d / (float)hd), s, c;
        sincosf(a, &s, &c);
        float x0 = ld(v + d), x1 = ld(v + d + half);
        v[d] = st(x0 * c - x1 * s);
        v[d + half] = st(x1 * c + x0 * s);
    }
}

extern "C" int ssk_rope(void *qkv, size_t rows, int ld_row, int heads, int hd,
                        const uint32_t *pos, float theta, void *stream)
{
    k_rope<<<grid_for(rows * heads * (hd / 2), 256), 256, 0, (cudaStream_t)stream>>>(
        (bf16 *)qkv, rows, ld_row, heads, hd, pos, theta);
    return (int)cudaGetLastError();
}

// ---- residual add, embedding gather -----------------------------------------------------------

static __global__ void k_add(bf16 *y, const bf16 *a, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = st(ld(y + i) + ld(a + i));
}

extern "C" int ssk_add(void *y, const void *a, size_t n, void *stream)
{
    k_add<<<grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>((bf16 *)y, (const bf16 *)a, n);
    return (int)cudaGetLastError();
}

static __global__ void k_embed(bf16 *y, const bf16 *table, const uint32_t *ids, size_t rows,
                               int h)
{
    size_t n = rows * (size_t)h;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t r = i / h;
        y[i] = table[(size_t)ids[r] * h + (i - r * h)];
    }
}

extern "C" int ssk_embed(void *y, const void *table, const uint32_t *ids, size_t rows, int h,
                         void *stream)
{
    k_embed<<<grid_for(rows * h, 256), 256, 0, (cudaStream_t)stream>>>(
        (bf16 *)y, (const bf16 *)table, ids, rows, h);
    return (int)cudaGetLastError();
}

// ---- KV cache write: row i of the batch's K and V heads goes to cache row slot[i] -------------

static __global__ void k_kv_write(bf16 *kc, bf16 *vc, const bf16 *qkv, size_t rows, int ld_row,
                                  int k_col, int v_col, int width, const uint32_t *slot)
{
    size_t n = rows * (size_t)width;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t r = i / width, c = i - r * width, dst = (size_t)slot[r] * width + c;
        kc[dst] = qkv[r * ld_row + k_col + c];
        vc[dst] = qkv[r * ld_row + v_col + c];
    }
}

extern "C" int ssk_kv_write(void *kc, void *vc, const void *qkv, size_t rows, int ld_row,
                            int k_col, int v_col, int width, const uint32_t *slot, void *stream)
{
    k_kv_write<<<grid_for(rows * width, 256), 256, 0, (cudaStream_t)stream>>>(
        (bf16 *)kc, (bf16 *)vc, (const bf16 *)qkv, rows, ld_row, k_col, v_col, width, slot);
    return (int)cudaGetLastError();
}

// ---- causal softmax of prefill scores -----------------------------------------------------------
// s: batch x rows x ld fp32 scores (row t of a batch is query token t at position c0 + t; the
// batch's rows repeat every `rows`), p: the same shape in bf16. Keys j <= c0 + t are kept.

static __global__ void k_causal_softmax(bf16 *p, const float *s, int rows, int cols, int ld,
                                        int c0, float scale)
{
    size_t row = blockIdx.x;
    int t = (int)(row % rows), nk = c0 + t + 1;
    if (nk > cols)
        nk = cols;
    const float *sr = s + row * ld;
    bf16 *pr = p + row * ld;
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < nk; j += blockDim.x)
        mx = fmaxf(mx, sr[j] * scale);
    mx = block_reduce<true>(mx);
    float sum = 0;
    for (int j = threadIdx.x; j < nk; j += blockDim.x)
        sum += __expf(sr[j] * scale - mx);
    sum = block_reduce<false>(sum);
    float inv = 1.0f / sum;
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        pr[j] = st(j < nk ? __expf(sr[j] * scale - mx) * inv : 0.0f);
}

extern "C" int ssk_causal_softmax(void *p, const float *s, size_t batch, int rows, int cols,
                                  int ld, int c0, float scale, void *stream)
{
    size_t n = batch * (size_t)rows;
    if (!n)
        return 0;
    k_causal_softmax<<<(unsigned)n, 256, 0, (cudaStream_t)stream>>>((bf16 *)p, s, rows, cols, ld,
                                                                     c0, scale);
    return (int)cudaGetLastError();
}

// ---- decode attention ------------------------------------------------------------------------------
// One block per (sequence, query head), DEC_WARPS warps; each warp takes every DEC_WARPS-th key
// with an online softmax, lanes split the head dimension; the warps merge at the end.

#define DEC_WARPS 4
#define DEC_MAXE 8 // head_dim / 32 <= 8: head_dim <= 256

static __global__ void k_decode_attn(bf16 *out, int ld_out, const bf16 *q, int ld_q,
                                     const bf16 *kc, const bf16 *vc, const uint32_t *start,
                                     const uint32_t *len, int heads, int kv_heads, int hd,
                                     float scale)
{
    int seq = blockIdx.x, h = blockIdx.y, g = h / (heads / kv_heads);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, per = hd / 32;
    const bf16 *qr = q + (size_t)seq * ld_q + (size_t)h * hd;
    float qv[DEC_MAXE], acc[DEC_MAXE];
    for (int e = 0; e < per; e++) {
        qv[e] = ld(qr + lane * per + e) * scale;
        acc[e] = 0;
    }
    float m = -INFINITY, l = 0;
    size_t row0 = start[seq], width = (size_t)kv_heads * hd;
    for (uint32_t j = warp; j < len[seq]; j += DEC_WARPS) {
        const bf16 *kr = kc + (row0 + j) * width + (size_t)g * hd + lane * per;
        float s = 0;
        for (int e = 0; e < per; e++)
            s += qv[e] * ld(kr + e);
        s = warp_sum(s);
        float mn = fmaxf(m, s), corr = __expf(m - mn), pj = __expf(s - mn);
        const bf16 *vr = vc + (row0 + j) * width + (size_t)g * hd + lane * per;
        for (int e = 0; e < per; e++)
            acc[e] = acc[e] * corr + pj * ld(vr + e);
        l = l * corr + pj;
        m = mn;
    }
    __shared__ float sm[DEC_WARPS], sl[DEC_WARPS], sacc[DEC_WARPS][256];
    if (lane == 0) {
        sm[warp] = m;
        sl[warp] = l;
    }
    for (int e = 0; e < per; e++)
        sacc[warp][lane * per + e] = acc[e];
    __syncthreads();
    if (warp == 0) {
        float M = -INFINITY;
        for (int w = 0; w < DEC_WARPS; w++)
            M = fmaxf(M, sm[w]);
        float L = 0;
        for (int w = 0; w < DEC_WARPS; w++)
            L += sl[w] > 0 ? sl[w] * __expf(sm[w] - M) : 0.0f;
        bf16 *o = out + (size_t)seq * ld_out + (size_t)h * hd;
        for (int e = 0; e < per; e++) {
            float v = 0;
            for (int w = 0; w < DEC_WARPS; w++)
                v += sl[w] > 0 ? sacc[w][lane * per + e] * __expf(sm[w] - M) : 0.0f;
            o[lane * per + e] = st(L > 0 ? v / L : 0.0f);
        }
    }
}

extern "C" int ssk_decode_attn(void *out, int ld_out, const void *q, int ld_q, const void *kc,
                               const void *vc, const uint32_t *start, const uint32_t *len,
                               int n_seqs, int heads, int kv_heads, int hd, float scale,
                               void *stream)
{
    if (hd % 32 || hd > 32 * DEC_MAXE || heads % kv_heads)
        return (int)cudaErrorInvalidValue;
    dim3 grid((unsigned)n_seqs, (unsigned)heads);
    k_decode_attn<<<grid, 32 * DEC_WARPS, 0, (cudaStream_t)stream>>>(
        (bf16 *)out, ld_out, (const bf16 *)q, ld_q, (const bf16 *)kc, (const bf16 *)vc, start,
        len, heads, kv_heads, hd, scale);
    return (int)cudaGetLastError();
}
