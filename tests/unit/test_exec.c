/* Executors: the CPU reference the GPU kernels are checked against (bf16 rounding, GEMM,
 * RMSNorm, SiLU-and-multiply, rotary, causal grouped attention), the `sim` executor (samples
 * equal the roofline's operator times, untimed work yields none), the registry's errors, and
 * which operators one GPU can run. The CUDA executor itself runs in tests/cli/gpu_exec.sh,
 * which skips without a GPU. */
#include "support/test_util.h"

#include "catalog/catalog.h"
#include "core/ss_alloc.h"
#include "cost/cost.h"
#include "exec/exec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_bf16_rounding(void **state)
{
    (void)state;
    const float exact[] = {1.0f, -2.5f, 0.15625f, 65280.0f, 0.0f};
    for (size_t i = 0; i < sizeof exact / sizeof *exact; i++)
        assert_true(exec_bf16_to_float(exec_bf16_from_float(exact[i])) == exact[i]);
    /* 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1.0) */
    assert_true(exec_bf16_to_float(exec_bf16_from_float(1.0f + 0x1p-8f)) == 1.0f);
    /* 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6: even is 1 + 2^-6 */
    assert_true(exec_bf16_to_float(exec_bf16_from_float(1.0f + 3 * 0x1p-8f)) == 1.0f + 0x1p-6f);
    /* just above halfway rounds up */
    assert_true(exec_bf16_to_float(exec_bf16_from_float(1.0f + 0x1p-8f + 0x1p-12f)) ==
                1.0f + 0x1p-7f);
    assert_true(isnan(exec_bf16_to_float(exec_bf16_from_float(NAN))));
    assert_true(isinf(exec_bf16_to_float(exec_bf16_from_float(INFINITY))));
}

static void test_ref_gemm(void **state)
{
    (void)state;
    /* x: 2 x 3, w: 2 x 3 ([N][K]) -> y: 2 x 2 */
    const float x[] = {1, 2, 3, 4, 5, 6}, w[] = {1, 0, -1, 0.5f, 0.5f, 0.5f};
    float y[4];
    exec_ref_gemm(y, x, w, 2, 3, 2);
    assert_float_equal(y[0], -2.0, 1e-6);
    assert_float_equal(y[1], 3.0, 1e-6);
    assert_float_equal(y[2], -2.0, 1e-6);
    assert_float_equal(y[3], 7.5, 1e-6);
}

static void test_ref_rmsnorm_and_act(void **state)
{
    (void)state;
    float x[8] = {3, -4, 0, 12, 1, 1, 1, 1}, g[4] = {1, 1, 1, 1}, y[8];
    exec_ref_rmsnorm(y, x, g, 2, 4, 0.0f);
    for (int r = 0; r < 2; r++) {
        double ss = 0;
        for (int i = 0; i < 4; i++)
            ss += y[r * 4 + i] * y[r * 4 + i];
        assert_float_equal(ss / 4, 1.0, 1e-5);
    }
    assert_float_equal(y[1] / y[0], -4.0 / 3.0, 1e-5); /* direction kept */
    float gate_up[4] = {0, 1, 5, 2}, out[2];             /* one row, F = 2: gate {0,1}, up {5,2} */
    exec_ref_silu_mul(out, gate_up, 1, 2);
    assert_float_equal(out[0], 0.0, 1e-7);
    assert_float_equal(out[1], 2.0 / (1.0 + exp(-1.0)), 1e-6);
}

static void test_ref_rope(void **state)
{
    (void)state;
    float x[2 * 2 * 8];
    for (int i = 0; i < 32; i++)
        x[i] = (float)(i % 7) - 3.0f;
    float orig[32];
    memcpy(orig, x, sizeof x);
    const uint32_t pos[2] = {0, 5};
    exec_ref_rope(x, pos, 2, 2, 8, 10000.0f);
    for (int i = 0; i < 16; i++) /* position 0 is the identity */
        assert_float_equal(x[i], orig[i], 1e-6);
    for (int h = 0; h < 2; h++) /* each rotated pair keeps its length */
        for (int d = 0; d < 4; d++) {
            const float *a = x + 16 + h * 8, *b = orig + 16 + h * 8;
            double n1 = a[d] * a[d] + a[d + 4] * a[d + 4], n0 = b[d] * b[d] + b[d + 4] * b[d + 4];
            assert_float_equal(n1, n0, 1e-4);
        }
    assert_true(fabs(x[16] - orig[16]) > 1e-3); /* and position 5 does rotate */
}

static void test_ref_attention(void **state)
{
    (void)state;
    enum { H = 4, KV = 2, HD = 2 };
    /* 3 keys, 2 query tokens at positions c0 = 1 and 2 */
    float q[2 * H * HD], k[3 * KV * HD], v[3 * KV * HD], out[2 * H * HD];
    for (int i = 0; i < 2 * H * HD; i++)
        q[i] = 0; /* equal scores: the output is the mean of the visible values */
    for (int j = 0; j < 3; j++)
        for (int g = 0; g < KV; g++)
            for (int d = 0; d < HD; d++) {
                k[(j * KV + g) * HD + d] = (float)(j + d);
                v[(j * KV + g) * HD + d] = (float)(10 * g + j);
            }
    exec_ref_attention(out, q, k, v, 2, 1, H, KV, HD);
    for (int h = 0; h < H; h++) {
        int g = h / (H / KV);
        /* token 0 at position 1 sees keys 0 and 1; token 1 sees all three */
        assert_float_equal(out[(0 * H + h) * HD], 10 * g + 0.5, 1e-5);
        assert_float_equal(out[(1 * H + h) * HD], 10 * g + 1.0, 1e-5);
    }
    /* a future key with a huge value changes nothing for the earlier token */
    v[(2 * KV + 0) * HD] = 1e6f;
    exec_ref_attention(out, q, k, v, 2, 1, H, KV, HD);
    assert_float_equal(out[0], 0.5, 1e-5);
    /* one visible key: the output is its value whatever the score */
    q[0] = 100;
    exec_ref_attention(out, q, k, v, 1, 0, H, KV, HD);
    assert_float_equal(out[0], v[0], 1e-5);
}

static float frand(uint32_t *st)
{
    *st = *st * 1664525u + 1013904223u;
    return (float)(*st >> 8) / 16777216.0f * 2.0f - 1.0f;
}

/* The Linear layout, with padded rows on both sides, equals the row-major reference. */
static void test_gemm_layout_linear(void **state)
{
    (void)state;
    enum { T = 3, K = 5, N = 4, LDX = 7, LDY = 6 };
    uint32_t st = 7;
    float x[T * LDX], xc[T * K], w[N * K], y[T * LDY], want[T * N];
    for (int i = 0; i < T * LDX; i++)
        x[i] = frand(&st);
    for (int r = 0; r < T; r++)
        for (int c = 0; c < K; c++)
            xc[r * K + c] = x[r * LDX + c];
    for (int i = 0; i < N * K; i++)
        w[i] = frand(&st);
    for (int i = 0; i < T * LDY; i++)
        y[i] = 1e9f; /* padding must stay untouched */
    exec_gemm g = exec_gemm_linear(T, K, N, LDX, LDY);
    exec_ref_gemm_cm(&g, w, x, y);
    exec_ref_gemm(want, xc, w, T, K, N);
    for (int r = 0; r < T; r++) {
        for (int c = 0; c < N; c++)
            assert_float_equal(y[r * LDY + c], want[r * N + c], 1e-5);
        for (int c = N; c < LDY; c++)
            assert_true(y[r * LDY + c] == 1e9f);
    }
}

/* Prefill attention as the CUDA executor runs it (scores GEMM per query-head group, causal
 * softmax, PV GEMM, on the QKV rows and the KV cache) equals plain causal attention, for grouped
 * KV heads and two sequences, one with a cached prefix. */
static void test_gemm_layout_attention(void **state)
{
    (void)state;
    enum { H = 4, KV = 2, HD = 4, LDQKV = (H + 2 * KV) * HD, LDKV = KV * HD, LDO = H * HD };
    const uint64_t q[2] = {3, 2}, c0[2] = {2, 0};
    uint32_t st = 11;
    float qkv[5 * LDQKV], kc[7 * LDKV], vc[7 * LDKV], out[5 * LDO];
    float S[KV * 3 * 8], P[KV * 3 * 8];
    for (int i = 0; i < 5 * LDQKV; i++)
        qkv[i] = frand(&st);
    for (int i = 0; i < 7 * LDKV; i++) {
        kc[i] = frand(&st);
        vc[i] = frand(&st);
    }
    for (int i = 0; i < 5 * LDO; i++)
        out[i] = NAN;
    float scale = 1.0f / sqrtf((float)HD);
    uint64_t t0 = 0, r0 = 0;
    for (int s = 0; s < 2; s++) {
        uint64_t lds = exec_prefill_scores(q[s], c0[s]) / q[s];
        assert_true(lds >= c0[s] + q[s] && lds % 8 == 0);
        for (uint32_t j = 0; j < H / KV; j++) {
            exec_gemm gs, gp;
            exec_gemm_attn(&gs, &gp, H, KV, HD, q[s], c0[s], t0, r0, j);
            exec_ref_gemm_cm(&gs, kc, qkv, S);
            for (int b = 0; b < KV; b++)
                exec_ref_causal_softmax(P + b * q[s] * lds, S + b * q[s] * lds, q[s], c0[s], lds,
                                        scale);
            exec_ref_gemm_cm(&gp, vc, P, out);
        }
        float qs[3 * H * HD], want[3 * H * HD];
        for (uint64_t t = 0; t < q[s]; t++)
            memcpy(qs + t * H * HD, qkv + (t0 + t) * LDQKV, H * HD * sizeof *qs);
        exec_ref_attention(want, qs, kc + r0 * LDKV, vc + r0 * LDKV, q[s], c0[s], H, KV, HD);
        for (uint64_t t = 0; t < q[s]; t++)
            for (int i = 0; i < H * HD; i++)
                assert_float_equal(out[(t0 + t) * LDO + i], want[t * H * HD + i], 1e-5);
        t0 += q[s];
        r0 += c0[s] + q[s];
    }
}

static void test_sim_executor(void **state)
{
    (void)state;
    catalog *cat = NULL;
    ss_errbuf eb;
    assert_int_equal(catalog_load(&cat, tu_src_path("profiles"), &eb), 0);
    const cat_gpu *gpu = catalog_gpu(cat, "h200");
    const cat_model *m = catalog_model(cat, "llama-3-8b");
    assert_non_null(gpu);
    assert_non_null(m);
    exec_config cfg = {.gpu = gpu, .engine = catalog_engine(cat, CAT_ENGINE_EAGER)};
    exec *x = NULL;
    assert_int_equal(exec_create(&x, "sim", &cfg, &eb), 0);
    exec_limits lim = {.max_tokens = 4096, .max_kv_tokens = 8192, .max_seqs = 64};
    assert_int_equal(exec_prepare(x, m, 2, &lim, &eb), 0);
    cost_params cp = {.gpu = gpu, .model = m, .tp = 2, .engine = cfg.engine};
    cost_model *cm = NULL;
    assert_int_equal(cost_model_create(&cm, "roofline", &cp, &eb), 0);
    cost_batch b = {0};
    cost_batch_add_prefill(&b, 300, 100);
    cost_batch_add_decode(&b, 700);
    const cost_op_kind kinds[] = {COST_OP_QKV, COST_OP_ATTN_PREFILL, COST_OP_MLP_DOWN,
                                  COST_OP_LM_HEAD};
    exec_seq seqs[1] = {{300, 100}};
    for (size_t i = 0; i < 4; i++) {
        exec_op eo = {.seqs = seqs, .n_seqs = 1};
        assert_int_equal(cost_op_shape(cm, kinds[i], &b, &eo.op), 0);
        assert_int_equal(exec_launch(x, &eo, 0, &eb), 0);     /* warm-up: no sample */
        assert_int_equal(exec_launch(x, &eo, 10 + i, &eb), 0);
    }
    const exec_sample *s = NULL;
    size_t n = 0;
    assert_int_equal(exec_collect(x, &s, &n, &eb), 0);
    assert_int_equal(n, 4);
    for (size_t i = 0; i < 4; i++) {
        cost_op op;
        assert_int_equal(cost_op_shape(cm, kinds[i], &b, &op), 0);
        assert_int_equal(s[i].tag, 10 + i);
        assert_int_equal(s[i].ns, cost_op_ns(cm, &op));
        assert_true(s[i].end - s[i].start == s[i].ns);
    }
    assert_int_equal(exec_collect(x, &s, &n, &eb), 0);
    assert_int_equal(n, 0); /* collected once */
    assert_int_equal(exec_selftest(x, NULL, &eb), SS_ENOTSUP);
    /* shapes the batch does not have */
    cost_op op;
    assert_int_equal(cost_op_shape(cm, COST_OP_MOE_ROUTER, &b, &op), SS_ENOTFOUND);
    assert_int_equal(cost_op_shape(cm, COST_OP_HOST, &b, &op), SS_ENOTFOUND);
    assert_int_equal(cost_op_shape(cm, COST_OP_ALLREDUCE, &b, &op), 0); /* TP 2 */
    cost_model_destroy(&cm);
    exec_destroy(&x);
    catalog_destroy(&cat);
    tu_assert_no_leaks();
}

static void test_registry_errors(void **state)
{
    (void)state;
    ss_errbuf eb;
    exec *x = NULL;
    exec_config cfg = {0};
    assert_int_equal(exec_create(&x, "tpu", &cfg, &eb), SS_ENOTFOUND);
    assert_non_null(strstr(eb.msg, "unknown executor 'tpu'"));
    assert_null(x);
    assert_int_equal(exec_create(&x, "sim", &cfg, &eb), SS_EINVAL); /* no catalog GPU */
    assert_non_null(strstr(eb.msg, "--gpu"));
    int rc = exec_create(&x, "cuda", &cfg, &eb);
    if (!exec_have_cuda()) {
        assert_int_equal(rc, SS_ENOTFOUND);
        assert_non_null(strstr(eb.msg, "built without CUDA"));
    } else if (rc) {
        assert_int_equal(rc, SS_ENOTFOUND); /* this machine has no GPU: one clear line */
        assert_non_null(strstr(eb.msg, "GPU"));
    }
    exec_destroy(&x);
    const char *const *names = exec_backend_names();
    int has_sim = 0, has_cuda = 0;
    for (size_t i = 0; names[i]; i++) {
        has_sim |= !strcmp(names[i], "sim");
        has_cuda |= !strcmp(names[i], "cuda");
    }
    assert_true(has_sim);
    assert_int_equal(has_cuda, exec_have_cuda());
    tu_assert_no_leaks();
}

static void test_runs_op(void **state)
{
    (void)state;
    exec_device one = {.n_devices = 1}, two = {.n_devices = 2, .peer = 1};
    assert_true(exec_runs_op(&one, COST_OP_QKV));
    assert_true(exec_runs_op(&one, COST_OP_ATTN_DECODE));
    assert_false(exec_runs_op(&one, COST_OP_ALLREDUCE));
    assert_false(exec_runs_op(&two, COST_OP_ALLREDUCE));
    assert_false(exec_runs_op(&one, COST_OP_HOST));
    assert_false(exec_runs_op(&one, COST_OP_PP_SEND));
    assert_true(exec_runs_op(&two, COST_OP_PP_SEND));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bf16_rounding),   cmocka_unit_test(test_ref_gemm),
        cmocka_unit_test(test_ref_rmsnorm_and_act), cmocka_unit_test(test_ref_rope),
        cmocka_unit_test(test_ref_attention),   cmocka_unit_test(test_gemm_layout_linear),
        cmocka_unit_test(test_gemm_layout_attention), cmocka_unit_test(test_sim_executor),
        cmocka_unit_test(test_registry_errors), cmocka_unit_test(test_runs_op),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
