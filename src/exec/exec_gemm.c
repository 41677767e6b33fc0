/* GEMM layouts of the executor's operators in cuBLAS's column-major terms. A row-major matrix
 * of r rows whose rows are ld elements apart is, read column-major, its own transpose with
 * leading dimension ld. Every row-major product below is therefore written as the column-major
 * product of the transposes: (X W^T)^T = W X^T. */
#include "exec/exec.h"

exec_gemm exec_gemm_linear(uint64_t t, uint64_t k, uint64_t n, uint64_t ldx, uint64_t ldy)
{
    /* column-major: Y^T (n x t, ld ldy) = W (n x k: stored k x n, ld k, transposed) X^T (k x t,
       ld ldx, as stored) */
    return (exec_gemm){.ta = 1, .tb = 0, .batch = 1, .m = n, .n = t, .k = k, .lda = k,
                       .ldb = ldx, .ldc = ldy};
}

void exec_gemm_attn(exec_gemm *scores, exec_gemm *pv, uint32_t heads, uint32_t kv_heads,
                    uint32_t hd, uint64_t q, uint64_t c0, uint64_t t0, uint64_t r0, uint32_t j)
{
    uint64_t G = heads / kv_heads, c = c0 + q, lds = exec_prefill_scores(q, c0) / (q ? q : 1);
    uint64_t ld_qkv = (uint64_t)(heads + 2 * kv_heads) * hd, ld_kv = (uint64_t)kv_heads * hd;
    uint64_t ld_o = (uint64_t)heads * hd;
    /* S^T (c x q, ld lds) = K (c x hd: the cache rows, stored hd x c, transposed) Q^T (hd x q,
       the QKV rows of head g G + j, as stored); batch g steps hd in K, G hd in Q */
    *scores = (exec_gemm){.ta = 1, .tb = 0, .batch = (int)kv_heads, .m = c, .n = q, .k = hd,
                          .lda = ld_kv, .ldb = ld_qkv, .ldc = lds, .sa = hd,
                          .sb = (int64_t)(G * hd), .sc = (int64_t)(q * lds),
                          .a_off = r0 * ld_kv, .b_off = t0 * ld_qkv + (uint64_t)j * hd,
                          .c_off = 0};
    /* O^T (hd x q, ld ld_o) = V^T (hd x c: the cache rows as stored) P^T (c x q, ld lds) */
    *pv = (exec_gemm){.ta = 0, .tb = 0, .batch = (int)kv_heads, .m = hd, .n = q, .k = c,
                      .lda = ld_kv, .ldb = lds, .ldc = ld_o, .sa = hd, .sb = (int64_t)(q * lds),
                      .sc = (int64_t)(G * hd), .a_off = r0 * ld_kv, .b_off = 0,
                      .c_off = t0 * ld_o + (uint64_t)j * hd};
}
