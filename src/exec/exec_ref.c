/* CPU reference of the executor's operators: plain float loops, written for clarity, used to
 * check the GPU kernels on small shapes (and unit-tested against each other). */
#include "exec/exec.h"

#include <math.h>
#include <string.h>

uint16_t exec_bf16_from_float(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu))
        return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);            /* round to nearest, ties to even */
    return (uint16_t)(u >> 16);
}

float exec_bf16_to_float(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

void exec_ref_gemm(float *y, const float *x, const float *w, size_t t, size_t k, size_t n)
{
    for (size_t i = 0; i < t; i++)
        for (size_t j = 0; j < n; j++) {
            double acc = 0;
            for (size_t l = 0; l < k; l++)
                acc += (double)x[i * k + l] * w[j * k + l];
            y[i * n + j] = (float)acc;
        }
}

void exec_ref_rmsnorm(float *y, const float *x, const float *g, size_t t, size_t h, float eps)
{
    for (size_t i = 0; i < t; i++) {
        double ss = 0;
        for (size_t j = 0; j < h; j++)
            ss += (double)x[i * h + j] * x[i * h + j];
        double r = 1.0 / sqrt(ss / (double)h + eps);
        for (size_t j = 0; j < h; j++)
            y[i * h + j] = (float)(x[i * h + j] * r * g[j]);
    }
}

void exec_ref_silu_mul(float *y, const float *x, size_t t, size_t f)
{
    for (size_t i = 0; i < t; i++)
        for (size_t j = 0; j < f; j++) {
            double a = x[i * 2 * f + j], b = x[i * 2 * f + f + j];
            y[i * f + j] = (float)(a / (1.0 + exp(-a)) * b);
        }
}

void exec_ref_rope(float *x, const uint32_t *pos, size_t t, size_t heads, size_t hd, float theta)
{
    size_t half = hd / 2;
    for (size_t i = 0; i < t; i++)
        for (size_t h = 0; h < heads; h++) {
            float *v = x + (i * heads + h) * hd;
            for (size_t d = 0; d < half; d++) {
                double inv = pow(theta, -2.0 * (double)d / (double)hd);
                double a = pos[i] * inv, c = cos(a), s = sin(a);
                double x0 = v[d], x1 = v[d + half];
                v[d] = (float)(x0 * c - x1 * s);
                v[d + half] = (float)(x1 * c + x0 * s);
            }
        }
}

void exec_ref_attention(float *out, const float *q, const float *k, const float *v, size_t nq,
                        size_t c0, size_t heads, size_t kv_heads, size_t hd)
{
    size_t group = heads / kv_heads;
    double scale = 1.0 / sqrt((double)hd);
    for (size_t i = 0; i < nq; i++)
        for (size_t h = 0; h < heads; h++) {
            const float *qv = q + (i * heads + h) * hd;
            size_t g = h / group, nk = c0 + i + 1;
            double mx = -INFINITY, sum = 0;
            for (size_t j = 0; j < nk; j++) {
                double s = 0;
                for (size_t d = 0; d < hd; d++)
                    s += (double)qv[d] * k[(j * kv_heads + g) * hd + d];
                mx = fmax(mx, s * scale);
            }
            float *o = out + (i * heads + h) * hd;
            for (size_t d = 0; d < hd; d++)
                o[d] = 0;
            double acc[512] = {0};
            for (size_t j = 0; j < nk; j++) {
                double s = 0;
                for (size_t d = 0; d < hd; d++)
                    s += (double)qv[d] * k[(j * kv_heads + g) * hd + d];
                double p = exp(s * scale - mx);
                sum += p;
                for (size_t d = 0; d < hd && d < 512; d++)
                    acc[d] += p * v[(j * kv_heads + g) * hd + d];
            }
            for (size_t d = 0; d < hd && d < 512; d++)
                o[d] = (float)(acc[d] / sum);
        }
}

void exec_ref_gemm_cm(const exec_gemm *g, const float *a, const float *b, float *c)
{
    for (int bt = 0; bt < (g->batch > 1 ? g->batch : 1); bt++) {
        const float *A = a + g->a_off + (int64_t)bt * g->sa, *B = b + g->b_off + (int64_t)bt * g->sb;
        float *C = c + g->c_off + (int64_t)bt * g->sc;
        for (uint64_t i = 0; i < g->m; i++)
            for (uint64_t j = 0; j < g->n; j++) {
                double acc = 0;
                for (uint64_t l = 0; l < g->k; l++) {
                    double x = g->ta ? A[i * g->lda + l] : A[l * g->lda + i];
                    double y = g->tb ? B[l * g->ldb + j] : B[j * g->ldb + l];
                    acc += x * y;
                }
                C[j * g->ldc + i] = (float)acc;
            }
    }
}

void exec_ref_causal_softmax(float *p, const float *s, uint64_t q, uint64_t c0, uint64_t ld,
                             float scale)
{
    uint64_t c = c0 + q;
    for (uint64_t t = 0; t < q; t++) {
        const float *sr = s + t * ld;
        float *pr = p + t * ld;
        uint64_t nk = c0 + t + 1;
        double mx = -INFINITY, sum = 0;
        for (uint64_t j = 0; j < nk; j++)
            mx = fmax(mx, (double)sr[j] * scale);
        for (uint64_t j = 0; j < nk; j++)
            sum += exp((double)sr[j] * scale - mx);
        for (uint64_t j = 0; j < c; j++)
            pr[j] = j < nk ? (float)(exp((double)sr[j] * scale - mx) / sum) : 0.0f;
    }
}
