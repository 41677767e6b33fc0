/* Profile-table cost backends on hand-written tables: exact interpolation between points, the
 * extrapolation rules, the monotonic fix-up, shape and TP matching, `auto` against `profile`
 * outside the measured range, the roofline fallback, collectives, attention, errors with
 * FILE:LINE, allocation failures; and the Vidur importer: imported A100 Llama-2-7B profiles
 * move the norm operator (which the roofline underestimates at 4096 tokens) the right way. */
#include "support/test_util.h"

#include "catalog/catalog.h"
#include "core/ss_alloc.h"
#include "core/ss_log.h"
#include "cost/cost.h"
#include "cost/cost_profile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct fx {
    catalog *cat;
    char dir[600];    /* profiles dir for the tables (a temp dir) */
    char gpudir[700]; /* dir/a100-80g */
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    ss_errbuf eb;
    if (catalog_load(&f->cat, tu_src_path("profiles"), &eb)) {
        fprintf(stderr, "%s\n", eb.msg);
        return -1;
    }
    snprintf(f->dir, sizeof f->dir, "%s", tu_tmpdir());
    snprintf(f->gpudir, sizeof f->gpudir, "%s/a100-80g", f->dir);
    mkdir(f->gpudir, 0777);
    ss_log_set_level(SS_LOG_QUIET); /* the fallback notes are expected here */
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    catalog_destroy(&f->cat);
    free(f);
    tu_tmpdir_cleanup();
    ss_log_set_level(SS_LOG_WARN);
    tu_assert_no_leaks();
    return 0;
}

static cost_params params(fx *f, const char *model, uint32_t tp)
{
    cost_params p = {.gpu = catalog_gpu(f->cat, "a100-80g"), .model = catalog_model(f->cat, model),
                     .tp = tp, .profiles_dir = f->dir,
                     .engine = catalog_engine(f->cat, CAT_ENGINE_EAGER)};
    assert_non_null(p.gpu);
    assert_non_null(p.model);
    return p;
}

static cost_model *mk(fx *f, const char *backend, const char *model, uint32_t tp)
{
    cost_params p = params(f, model, tp);
    cost_model *cm = NULL;
    ss_errbuf eb = {""};
    int rc = cost_model_create(&cm, backend, &p, &eb);
    if (rc)
        fail_msg("cost_model_create(%s): %s", backend, eb.msg);
    return cm;
}

static ss_time op_ns(cost_model *cm, cost_op_kind k, uint64_t tokens)
{
    cost_op op = {.kind = k, .tp = 1, .n_seqs = 1, .tokens = tokens, .count = 1,
                  .flops = 4.0 * (double)tokens * 4096, .bytes = 4.0 * (double)tokens * 4096};
    return cost_op_ns(cm, &op);
}

#define HDR "op,hidden,heads,kv_heads,head_dim,ffn,gated,vocab,experts,top_k,tp,tokens," \
            "kv_tokens,n_gpus,bytes,median_us,min_us,p90_us,source\n"
/* A norm row for hidden 4096 at TP tp. */
#define NORM(tp, tok, us) "norm,4096,-,-,-,-,-,-,-,-," #tp "," #tok ",-,-,-," #us ",-,-,test\n"

static const char *const norm_table = "# test table\n" HDR
    NORM(1, 200, 30) NORM(1, 100, 10) NORM(1, 400, 50)
    "rope,-,32,32,128,-,-,-,-,-,1,100,-,-,-,8,7.5,9,one point\n";

static void test_interpolation_and_extrapolation(void **state)
{
    fx *f = *state;
    tu_write_file(f->gpudir, "t.csv", norm_table);
    cost_model *cm = mk(f, "profile", "llama-2-7b", 1);
    assert_int_equal(op_ns(cm, COST_OP_NORM, 100), 10000);
    assert_int_equal(op_ns(cm, COST_OP_NORM, 150), 20000);  /* halfway 10..30 */
    assert_int_equal(op_ns(cm, COST_OP_NORM, 250), 35000);  /* a quarter of 30..50 */
    assert_int_equal(op_ns(cm, COST_OP_NORM, 400), 50000);
    assert_int_equal(op_ns(cm, COST_OP_NORM, 600), 70000);  /* last slope 0.1 us/token */
    assert_int_equal(op_ns(cm, COST_OP_NORM, 1), 10000);    /* clamped below the first */
    assert_int_equal(op_ns(cm, COST_OP_FINAL_NORM, 150), 20000); /* same kernel as norm */
    assert_int_equal(op_ns(cm, COST_OP_ROPE, 100), 8000);
    assert_int_equal(op_ns(cm, COST_OP_ROPE, 300), 24000);  /* one point: proportional */
    assert_int_equal(op_ns(cm, COST_OP_ROPE, 50), 8000);
    assert_string_equal(cost_model_backend(cm), "profile");
    cost_model_destroy(&cm);
}

/* Huge medians, or a steep last slope extrapolated far, saturate at 10^13 ns instead of
 * overflowing the float-to-integer conversion (found by fuzzing). */
static void test_extreme_tables_saturate(void **state)
{
    fx *f = *state;
    tu_write_file(f->gpudir, "t.csv", HDR NORM(1, 100, 1e300) NORM(1, 200, 1e301)
                  "rope,-,32,32,128,-,-,-,-,-,1,1,-,-,-,1,-,-,steep\n"
                  "rope,-,32,32,128,-,-,-,-,-,1,2,-,-,-,1e9,-,-,steep\n");
    cost_model *cm = mk(f, "profile", "llama-2-7b", 1);
    const ss_time cap = INT64_C(10000000000000);
    assert_int_equal(op_ns(cm, COST_OP_NORM, 150), cap);
    assert_int_equal(op_ns(cm, COST_OP_ROPE, 1), 1000);
    assert_int_equal(op_ns(cm, COST_OP_ROPE, 10000000), cap);
    cost_batch b = {0};
    cost_batch_add_prefill(&b, 10000000, 0);
    assert_true(cost_iteration_ns(cm, &b) > cap);
    cost_model_destroy(&cm);
}

static void test_monotonic_fixup_and_duplicates(void **state)
{
    fx *f = *state;
    tu_write_file(f->gpudir, "t.csv", HDR NORM(1, 100, 10) NORM(1, 100, 14) NORM(1, 200, 8)
                  NORM(1, 300, 20));
    cost_model *cm = mk(f, "profile", "llama-2-7b", 1);
    assert_int_equal(op_ns(cm, COST_OP_NORM, 100), 12000); /* mean of the two */
    assert_int_equal(op_ns(cm, COST_OP_NORM, 200), 12000); /* the dip to 8 is lifted */
    assert_int_equal(op_ns(cm, COST_OP_NORM, 150), 12000);
    assert_int_equal(op_ns(cm, COST_OP_NORM, 250), 16000);
    ss_time prev = 0;
    for (uint64_t t = 1; t < 1000; t += 7) {
        ss_time v = op_ns(cm, COST_OP_NORM, t);
        assert_true(v >= prev);
        prev = v;
    }
    cost_model_destroy(&cm);
}

static void test_shape_and_tp_matching(void **state)
{
    fx *f = *state;
    /* hidden 5120 (llama-2-13b) and TP 2 rows do not apply to llama-2-7b at TP 1 */
    tu_write_file(f->gpudir, "other.csv", HDR
                  "norm,5120,-,-,-,-,-,-,-,-,1,100,-,-,-,99,-,-,\n" NORM(2, 100, 77)
                  "qkv,4096,32,8,128,-,-,-,-,-,1,100,-,-,-,55,-,-,gqa shape\n");
    cost_model *pr = mk(f, "profile", "llama-2-7b", 1), *rf = mk(f, "roofline", "llama-2-7b", 1);
    assert_int_equal(op_ns(pr, COST_OP_NORM, 100), op_ns(rf, COST_OP_NORM, 100));
    assert_int_equal(op_ns(pr, COST_OP_QKV, 100), op_ns(rf, COST_OP_QKV, 100));
    cost_model_destroy(&pr);
    pr = mk(f, "profile", "llama-3-8b", 1); /* 32/8 heads: the qkv row applies */
    assert_int_equal(op_ns(pr, COST_OP_QKV, 100), 55000);
    cost_model_destroy(&pr);
    pr = mk(f, "profile", "llama-2-7b", 2);
    assert_int_equal(op_ns(pr, COST_OP_NORM, 100), 77000);
    cost_model_destroy(&pr);
    pr = mk(f, "profile", "llama-2-13b", 1);
    assert_int_equal(op_ns(pr, COST_OP_NORM, 100), 99000);
    cost_model_destroy(&pr);
    cost_model_destroy(&rf);
}

static void test_auto_only_inside_range(void **state)
{
    fx *f = *state;
    tu_write_file(f->gpudir, "t.csv", norm_table);
    cost_model *pr = mk(f, "profile", "llama-2-7b", 1), *au = mk(f, "auto", "llama-2-7b", 1);
    cost_model *rf = mk(f, "roofline", "llama-2-7b", 1);
    assert_int_equal(op_ns(au, COST_OP_NORM, 150), 20000);
    assert_int_equal(op_ns(au, COST_OP_NORM, 100), 10000);
    assert_int_equal(op_ns(au, COST_OP_NORM, 400), 50000);
    assert_int_equal(op_ns(au, COST_OP_NORM, 1000), op_ns(rf, COST_OP_NORM, 1000));
    assert_int_equal(op_ns(pr, COST_OP_NORM, 1000), 110000);
    assert_int_equal(op_ns(au, COST_OP_NORM, 50), op_ns(rf, COST_OP_NORM, 50));
    assert_int_equal(op_ns(pr, COST_OP_NORM, 50), 10000);
    assert_int_equal(op_ns(au, COST_OP_ROPE, 100), 8000);
    assert_int_equal(op_ns(au, COST_OP_ROPE, 101), op_ns(rf, COST_OP_ROPE, 101));
    cost_model_destroy(&pr);
    cost_model_destroy(&au);
    cost_model_destroy(&rf);
}

/* Operators without a table, a missing directory and no directory at all: the roofline. */
static void test_fallback_to_roofline(void **state)
{
    fx *f = *state;
    tu_write_file(f->gpudir, "t.csv", norm_table);
    cost_model *pr = mk(f, "profile", "llama-2-7b", 1), *rf = mk(f, "roofline", "llama-2-7b", 1);
    const cost_op_kind none[] = {COST_OP_QKV, COST_OP_MLP_UP, COST_OP_LM_HEAD, COST_OP_EMBED};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(op_ns(pr, none[i], 333), op_ns(rf, none[i], 333));
    cost_model_destroy(&pr);
    cost_params p = params(f, "llama-2-7b", 1);
    ss_errbuf eb;
    for (int k = 0; k < 2; k++) {
        p.profiles_dir = k ? NULL : "/nonexistent/profiles";
        assert_int_equal(cost_model_create(&pr, "profile", &p, &eb), 0);
        cost_batch b = {0};
        cost_batch_add_prefill(&b, 700, 0);
        cost_batch_add_decode(&b, 900);
        assert_int_equal(cost_iteration_ns(pr, &b), cost_iteration_ns(rf, &b));
        cost_model_destroy(&pr);
    }
    cost_model_destroy(&rf);
}

static void test_collectives(void **state)
{
    fx *f = *state;
    tu_write_file(f->gpudir, "net.csv", "op,n_gpus,bytes,median_us\n"
                  "all_reduce,2,1000,10\nall_reduce,2,3000,30\nall_reduce,4,1000,99\n"
                  "pp_send,2,1000,5\n");
    cost_model *cm = mk(f, "profile", "llama-2-7b", 2);
    cost_op ar = {.kind = COST_OP_ALLREDUCE, .tp = 2, .count = 1, .comm_bytes = 2000};
    assert_int_equal(cost_op_ns(cm, &ar), 20000);
    ar.comm_bytes = 5000; /* extrapolated: 10 ns per byte */
    assert_int_equal(cost_op_ns(cm, &ar), 50000);
    cost_op pp = {.kind = COST_OP_PP_SEND, .tp = 2, .count = 1, .comm_bytes = 2000};
    assert_int_equal(cost_op_ns(cm, &pp), 10000); /* one point: proportional */
    cost_model_destroy(&cm);
    cm = mk(f, "profile", "llama-2-7b", 4);
    ar.tp = 4;
    ar.comm_bytes = 1000;
    assert_int_equal(cost_op_ns(cm, &ar), 99000);
    cost_model_destroy(&cm);
}

static void test_attention_tables(void **state)
{
    fx *f = *state;
    tu_write_file(f->gpudir, "attn.csv",
                  "op,heads,kv_heads,head_dim,tp,tokens,kv_tokens,median_us\n"
                  "attn_decode,32,32,128,1,1,100,10\nattn_decode,32,32,128,1,1,1100,20\n"
                  "attn_decode,32,32,128,1,4,100,30\nattn_decode,32,32,128,1,4,1100,60\n");
    cost_model *pr = mk(f, "profile", "llama-2-7b", 1), *au = mk(f, "auto", "llama-2-7b", 1);
    cost_model *rf = mk(f, "roofline", "llama-2-7b", 1);
    cost_op op = {.kind = COST_OP_ATTN_DECODE, .tp = 1, .count = 1, .n_seqs = 1, .tokens = 1,
                  .ctx_tokens = 600, .bytes = 1e6};
    assert_int_equal(cost_op_ns(pr, &op), 15000);
    op.tokens = op.n_seqs = 4;
    assert_int_equal(cost_op_ns(pr, &op), 45000);
    op.tokens = op.n_seqs = 2; /* a third of the way from batch 1 to 4: 15 + (45 - 15) / 3 */
    assert_int_equal(cost_op_ns(pr, &op), 25000);
    assert_int_equal(cost_op_ns(au, &op), 25000);
    op.tokens = op.n_seqs = 8; /* beyond the largest batch: that curve */
    assert_int_equal(cost_op_ns(pr, &op), 45000);
    assert_int_equal(cost_op_ns(au, &op), cost_op_ns(rf, &op));
    cost_model_destroy(&pr);
    cost_model_destroy(&au);
    cost_model_destroy(&rf);
}

/* Prefill attention from a table of single sequences, on the calibrate grid (chunks of 16 ...
 * 4096 tokens over 0, 1024 and 4096 cached tokens), for a kernel whose time is a launch floor
 * plus a cost per causal (query, key) pair and per key read: a chunk between grid points, and
 * batches of several prompts, come out at that kernel's time. Looking a batch up at its total
 * tokens (as one sequence) would price 4 prompts of 700 as one of 2800: 4 times the pairs. */
static double kernel_us(double pairs, double keys) { return 5 + 1e-4 * pairs + 2e-3 * keys; }

static ss_time prefill_ns(cost_model *cm, const uint64_t *q, const uint64_t *c0, size_t n,
                          double *want_us)
{
    cost_batch b = {0};
    for (size_t i = 0; i < n; i++)
        cost_batch_add_prefill(&b, q[i], c0[i]);
    *want_us = kernel_us(b.prefill_attn_pairs, (double)b.prefill_ctx_tokens);
    cost_op op;
    assert_int_equal(cost_op_shape(cm, COST_OP_ATTN_PREFILL, &b, &op), SS_OK);
    return cost_op_ns(cm, &op);
}

static void test_prefill_attention_batches(void **state)
{
    fx *f = *state;
    static const uint64_t gq[] = {16, 64, 256, 512, 1024, 2048, 4096}, gc[] = {0, 1024, 4096};
    char tab[8192];
    size_t used = (size_t)snprintf(tab, sizeof tab, "op,heads,kv_heads,head_dim,tp,tokens,"
                                                    "kv_tokens,median_us\n");
    for (size_t i = 0; i < sizeof gq / sizeof *gq; i++)
        for (size_t j = 0; j < sizeof gc / sizeof *gc; j++) {
            double q = (double)gq[i], c = (double)(gq[i] + gc[j]);
            used += (size_t)snprintf(tab + used, sizeof tab - used,
                                     "attn_prefill,32,32,128,1,%llu,%llu,%.4f\n",
                                     (unsigned long long)gq[i], (unsigned long long)c,
                                     kernel_us(q * (c - q) + q * (q + 1) / 2, c));
            assert_true(used < sizeof tab);
        }
    tu_write_file(f->gpudir, "prefill.csv", tab);
    cost_model *pr = mk(f, "profile", "llama-2-7b", 1);
    static const struct {
        size_t n;
        uint64_t q[4], c0[4];
    } cases[] = {
        {1, {700}, {0}},                        /* between chunk sizes */
        {1, {300}, {2000}},                     /* between chunks and cache sizes */
        {1, {1500}, {500}},
        {4, {700, 700, 700, 700}, {0, 0, 0, 0}}, /* four prompts */
        {3, {100, 900, 2000}, {0, 0, 1000}},    /* mixed, one chunk over a cache */
        {2, {3000, 16}, {0, 0}},                /* one long, one short */
        {2, {500, 500}, {0, 0}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        double want_us;
        double got = (double)prefill_ns(pr, cases[i].q, cases[i].c0, cases[i].n, &want_us);
        double err = got / (want_us * 1e3) - 1;
        print_message("# prefill attention case %zu: %+.2f %% from the kernel\n", i, 100 * err);
        if (fabs(err) > 0.05) {
            cost_model_destroy(&pr);
            fail_msg("case %zu: profile %.0f ns, the kernel %.0f ns (%+.1f %%)", i, got,
                     want_us * 1e3, 100 * err);
        }
    }
    /* the stand-in sequence: itself for one sequence; for several, the same keys and pairs */
    assert_true(cost_prof_prefill_equiv_tokens(700, 1, 1700, 700.0 * 1000 + 700.0 * 701 / 2) ==
                700);
    cost_batch b = {0};
    cost_batch_add_prefill(&b, 1000, 0);
    cost_batch_add_prefill(&b, 1000, 0);
    double q = cost_prof_prefill_equiv_tokens(b.prefill_tokens, b.n_prefill,
                                              b.prefill_ctx_tokens, b.prefill_attn_pairs);
    double pairs = q * (double)b.prefill_ctx_tokens - q * (q - 1) / 2;
    assert_true(q > 1 && q < 1000);
    assert_true(fabs(pairs / b.prefill_attn_pairs - 1) < 1e-9);
    cost_model_destroy(&pr);
}

/* Each bad table gives SS_EPARSE with "FILE:LINE: column: what", naming the right line. */
static void test_bad_tables(void **state)
{
    fx *f = *state;
    static const struct {
        const char *text, *want;
    } cases[] = {
        {HDR NORM(1, 1, 2) "norm,4096,-,-,-,-,-,-,-,-,1,2,-,-,-,fast,-,-,\n",
         "bad.csv:3: median_us: "},
        {"# c\n" HDR "normal,4096,-,-,-,-,-,-,-,-,1,2,-,-,-,3,-,-,\n",
         "bad.csv:3: op: unknown operator"},
        {"op,tp,tokens\nnorm,1,2\n", "bad.csv:1: median_us: missing column"},
        {"op,tp,tokens,speed,median_us\n", "bad.csv:1: speed: unknown column"},
        {HDR "norm,4096,-,-,-,-,-,-,-,-,1,2,-,-,512,3,-,-,\n",
         "bad.csv:2: bytes: not used by op 'norm'"},
        {"op,bytes,median_us\nall_reduce,512,3\n",
         "bad.csv:2: n_gpus: required for op 'all_reduce'"},
        {"op,tp,median_us\nqkv,1,3\n", "bad.csv:2: tokens: required for op 'qkv'"},
        {"op,tp,tokens,median_us\nqkv,1,2,3\nqkv,1,3,4,5\n", "bad.csv:3: 5 fields"},
        {"op,tp,tokens,median_us,min_us\nqkv,1,2,3,4\n", "bad.csv:2: min_us: 4 is above"},
        {"op,tp,tokens,median_us\nhost,1,2,3\n", "bad.csv:2: op: 'host'"},
        {"op,tp,tokens,gated,median_us\nact,1,2,2,3\n", "bad.csv:2: gated: must be 0 or 1"},
        {"op,tp,tokens,median_us\nqkv,-1,2,3\n", "bad.csv:2: tp: not a non-negative integer"},
        {"# only a comment\n", "bad.csv:2: no header row"},
    };
    cost_params p = params(f, "llama-2-7b", 1);
    size_t live = ss_alloc_live_bytes(); /* the catalog's */
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tu_write_file(f->gpudir, "bad.csv", cases[i].text);
        cost_model *cm = NULL;
        ss_errbuf eb = {""};
        assert_int_equal(cost_model_create(&cm, "profile", &p, &eb), SS_EPARSE);
        assert_null(cm);
        if (!strstr(eb.msg, cases[i].want) || !strstr(eb.msg, f->gpudir))
            fail_msg("case %zu: got '%s', want '%s'", i, eb.msg, cases[i].want);
        assert_int_equal(ss_alloc_live_bytes(), live);
    }
}

/* Every allocation failure while loading tables gives SS_ENOMEM and leaks nothing. */
static void test_alloc_failures(void **state)
{
    fx *f = *state;
    tu_write_file(f->gpudir, "a.csv", norm_table);
    tu_write_file(f->gpudir, "b.csv", "op,n_gpus,bytes,median_us\nall_reduce,2,1000,10\n");
    cost_params p = params(f, "llama-2-7b", 2);
    cost_model *cm = NULL;
    ss_errbuf eb;
    size_t live = ss_alloc_live_bytes(); /* the catalog's */
    uint64_t before = ss_alloc_count();
    assert_int_equal(cost_model_create(&cm, "profile", &p, &eb), 0);
    uint64_t n = ss_alloc_count() - before;
    cost_model_destroy(&cm);
    for (uint64_t k = 1; k <= n; k++) {
        ss_alloc_fail_after(k);
        int rc = cost_model_create(&cm, "profile", &p, &eb);
        ss_alloc_fail_after(0);
        assert_int_equal(rc, SS_ENOMEM);
        assert_null(cm);
        assert_int_equal(ss_alloc_live_bytes(), live);
    }
}

/* Same files, same nanoseconds, whatever the order of rows and files. */
static void test_deterministic(void **state)
{
    fx *f = *state;
    tu_write_file(f->gpudir, "a.csv", HDR NORM(1, 100, 10.1) NORM(1, 100, 10.2));
    tu_write_file(f->gpudir, "b.csv", HDR NORM(1, 100, 10.3) NORM(1, 300, 33.3));
    cost_model *a = mk(f, "profile", "llama-2-7b", 1);
    tu_write_file(f->gpudir, "a.csv", HDR NORM(1, 300, 33.3) NORM(1, 100, 10.3));
    tu_write_file(f->gpudir, "b.csv", HDR NORM(1, 100, 10.2) NORM(1, 100, 10.1));
    cost_model *b = mk(f, "profile", "llama-2-7b", 1);
    for (uint64_t t = 1; t < 500; t += 3)
        assert_int_equal(op_ns(a, COST_OP_NORM, t), op_ns(b, COST_OP_NORM, t));
    assert_int_equal(op_ns(a, COST_OP_NORM, 100), 10200);
    cost_model_destroy(&a);
    cost_model_destroy(&b);
}

/* {======================================================================
 * Imported Vidur profiles
 * ======================================================================= */

/* The operator of kind k in a prefill of `tokens` tokens, and the iteration time. */
static ss_time prefill_op(cost_model *cm, uint64_t tokens, cost_op_kind k, ss_time *iter)
{
    cost_batch b = {0};
    cost_batch_add_prefill(&b, tokens, 0);
    cost_op ops[32];
    ss_time ns[32], t = 0;
    size_t n = cost_iteration_ops(cm, &b, ops, ns, 32);
    for (size_t i = 0; i < n; i++)
        if (ops[i].kind == k)
            t = ns[i];
    *iter = cost_iteration_ns(cm, &b);
    return t;
}

/* The median_us of the table row (op, tp, tokens) in file path, or -1. */
static double table_median(const char *path, cost_op_kind op, int64_t tp, int64_t tokens)
{
    cost_prof_reader *r = NULL;
    ss_errbuf eb;
    cost_prof_row row;
    double med = -1;
    assert_int_equal(cost_prof_reader_open(&r, path, &eb), 0);
    while (cost_prof_reader_next(r, &row, &eb) == 1)
        if (row.op == op && row.key[COST_PK_TP] == tp && row.key[COST_PK_TOKENS] == tokens)
            med = row.median_us;
    cost_prof_reader_close(&r);
    return med;
}

/* Copy the rows of operator op from table src into dir/a100-80g/name (a new table). */
static void copy_op_rows(const char *src, const char *dir, cost_op_kind op)
{
    char path[800];
    snprintf(path, sizeof path, "%s/a100-80g", dir);
    mkdir(dir, 0777);
    mkdir(path, 0777);
    snprintf(path, sizeof path, "%s/a100-80g/%s.csv", dir, cost_op_name(op));
    FILE *out = fopen(path, "w");
    assert_non_null(out);
    cost_prof_write_header(out);
    cost_prof_reader *r = NULL;
    ss_errbuf eb;
    cost_prof_row row;
    assert_int_equal(cost_prof_reader_open(&r, src, &eb), 0);
    while (cost_prof_reader_next(r, &row, &eb) == 1)
        if (row.op == op)
            cost_prof_write_row(out, &row);
    cost_prof_reader_close(&r);
    assert_int_equal(fclose(out), 0);
}

/* A Vidur mlp.csv row: every operator's median is its index + 1 in ms, except the norms
 * (input_layernorm `norm1`, post_attention_layernorm `norm2`), min = median - 0.1. */
static void vidur_row(FILE *f, uint32_t tokens, uint32_t tp, double norm1, double norm2)
{
    for (int i = 0; i < 10; i++) {
        double med = i == 1 ? norm1 : i == 5 ? norm2 : i + 1;
        fprintf(f, "%g,%g,%g,%g,0.01,", med - 0.1, med + 0.1, med, med);
    }
    fprintf(f, "32,32,4096,11008,32000,True,%u,%u\n", tokens, tp);
}

static const char *write_vidur(const char *dir)
{
    static const char *const ops[] = {"emb", "input_layernorm", "attn_pre_proj", "attn_rope",
        "attn_post_proj", "post_attention_layernorm", "mlp_up_proj", "mlp_act", "mlp_down_proj",
        "add"};
    static char path[800];
    snprintf(path, sizeof path, "%s/mlp.csv", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int i = 0; i < 10; i++)
        fprintf(f, "time_stats.%s.min,time_stats.%s.max,time_stats.%s.mean,"
                "time_stats.%s.median,time_stats.%s.std,", ops[i], ops[i], ops[i], ops[i], ops[i]);
    fputs("n_head,n_kv_head,n_embd,n_expanded_embd,vocab_size,use_gated_mlp,num_tokens,"
          "num_tensor_parallel_workers\n", f);
    vidur_row(f, 64, 1, 1.0, 3.0);
    vidur_row(f, 8, 2, 0.5, 0.5);
    vidur_row(f, 8, 1, 0.2, 0.4);
    vidur_row(f, 64, 1, 2.0, 4.0); /* a repeat: medians averaged */
    assert_int_equal(fclose(f), 0);
    return path;
}

/* A small hand-made Vidur file: the rows written, the norm averaging, repeated points merged,
 * the keys each operator is written with, and the table loading back into `profile`. */
static void test_vidur_import_small(void **state)
{
    fx *f = *state;
    const char *src = write_vidur(f->dir);
    cost_prof_import res;
    ss_errbuf eb = {""};
    const cat_gpu *gpu = catalog_gpu(f->cat, "a100-80g");
    if (cost_prof_import_vidur(src, f->cat, gpu, f->gpudir, &res, &eb))
        fail_msg("import: %s", eb.msg);
    assert_int_equal(res.rows_in, 4);
    assert_int_equal(res.n_fid, 9 * 2);
    assert_int_equal(res.fid[2].op, COST_OP_NORM);
    assert_int_equal(res.fid[2].rows, 2);
    assert_int_equal(res.fid[2].key_min, 8);
    assert_int_equal(res.fid[2].key_max, 64);
    assert_true(fabs(res.fid[2].median_max_us - 2500) < 1e-6); /* (1+3)/2 and (2+4)/2 */
    assert_true(fabs(table_median(res.out_path, COST_OP_NORM, 1, 8) - 300) < 1e-6);
    assert_true(fabs(table_median(res.out_path, COST_OP_MLP_DOWN, 2, 8) - 9000) < 1e-6);
    cost_prof_import_fini(&res);
    cost_model *cm = mk(f, "profile", "llama-2-7b", 1);
    assert_int_equal(op_ns(cm, COST_OP_NORM, 36), 1400000); /* halfway 0.3..2.5 ms */
    assert_int_equal(op_ns(cm, COST_OP_QKV, 8), 3000000);
    cost_model_destroy(&cm);
    cm = mk(f, "profile", "llama-3-8b", 1); /* norm and rope keys match; qkv does not */
    cost_model *rf = mk(f, "roofline", "llama-3-8b", 1);
    assert_int_equal(op_ns(cm, COST_OP_NORM, 8), 300000);
    assert_int_equal(op_ns(cm, COST_OP_QKV, 8), op_ns(rf, COST_OP_QKV, 8));
    cost_model_destroy(&cm);
    cost_model_destroy(&rf);
}

/* A source row whose median is 0 or below its minimum would be written into a table that the
 * profile reader rejects (fuzzing found it): the import fails at that row and writes nothing. */
static void test_vidur_import_bad_times(void **state)
{
    fx *f = *state;
    static const struct {
        double min, med;
        const char *want; /* message after "mlp.csv:3: " */
    } cases[] = {
        {0.8, 0.2, "time_stats.mlp_up_proj.min: 0.8 is above the median 0.2"},
        {0, 0, "time_stats.mlp_up_proj.median: must be positive, got '0'"},
        {1, 2e12, "time_stats.mlp_up_proj.median: not a non-negative number of at most 1e12 ms"},
    };
    const cat_gpu *gpu = catalog_gpu(f->cat, "a100-80g");
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *src = write_vidur(f->dir);
        char head[4096], row[4096];
        FILE *in = fopen(src, "r");
        assert_non_null(in);
        assert_non_null(fgets(head, sizeof head, in));
        assert_non_null(fgets(row, sizeof row, in)); /* row 2 stays valid */
        assert_int_equal(fclose(in), 0);
        FILE *out = fopen(src, "w");
        assert_non_null(out);
        fputs(head, out);
        fputs(row, out);
        for (int k = 0; k < 10; k++) /* row 3: operator 6 (mlp_up_proj) gets the bad times */
            fprintf(out, "%g,9,5,%g,0.01,", k == 6 ? cases[i].min : 1.0,
                    k == 6 ? cases[i].med : 2.0);
        fprintf(out, "32,32,4096,11008,32000,True,16,1\n");
        assert_int_equal(fclose(out), 0);
        cost_prof_import res;
        ss_errbuf eb = {""};
        assert_int_equal(cost_prof_import_vidur(src, f->cat, gpu, f->gpudir, &res, &eb),
                         SS_EPARSE);
        char want[1024];
        snprintf(want, sizeof want, "%s:3: %s", src, cases[i].want);
        if (strncmp(eb.msg, want, strlen(want)))
            fail_msg("got '%s'\nwant '%s...'", eb.msg, want);
        char table[900];
        snprintf(table, sizeof table, "%s/llama-2-7b.csv", f->gpudir);
        assert_null(fopen(table, "r"));
    }
}

/* Every allocation failure during an import gives SS_ENOMEM, leaks nothing and leaves no
 * table behind. */
static void test_vidur_import_alloc_failures(void **state)
{
    fx *f = *state;
    const char *src = write_vidur(f->dir);
    const cat_gpu *gpu = catalog_gpu(f->cat, "a100-80g");
    cost_prof_import res;
    ss_errbuf eb;
    size_t live = ss_alloc_live_bytes();
    uint64_t before = ss_alloc_count();
    assert_int_equal(cost_prof_import_vidur(src, f->cat, gpu, f->gpudir, &res, &eb), 0);
    uint64_t n = ss_alloc_count() - before;
    char table[sizeof res.out_path];
    memcpy(table, res.out_path, sizeof table);
    assert_int_equal(remove(table), 0);
    cost_prof_import_fini(&res);
    for (uint64_t k = 1; k <= n; k++) {
        ss_alloc_fail_after(k);
        int rc = cost_prof_import_vidur(src, f->cat, gpu, f->gpudir, &res, &eb);
        ss_alloc_fail_after(0);
        assert_int_equal(rc, SS_ENOMEM);
        assert_int_equal(ss_alloc_live_bytes(), live);
        FILE *out = fopen(table, "r");
        assert_null(out);
    }
}

/* Import Vidur's A100 Llama-2-7B table into the fixture's catalog and a copy of its norm rows
 * alone into norm_dir; return the imported norm median at TP 1 and 4096 tokens, ms. */
static double import_llama7b(fx *f, const char *src, const char *norm_dir)
{
    cost_prof_import res;
    ss_errbuf eb = {""};
    const cat_gpu *gpu = catalog_gpu(f->cat, "a100-80g");
    if (cost_prof_import_vidur(src, f->cat, gpu, f->gpudir, &res, &eb))
        fail_msg("import: %s", eb.msg);
    assert_string_equal(res.model, "llama-2-7b");
    assert_non_null(strstr(res.out_path, "llama-2-7b.csv"));
    assert_int_equal(res.n_fid, 9 * 4); /* nine operators at TP 1, 2, 4, 8 */
    assert_int_equal(res.fid[4].op, COST_OP_NORM);
    assert_int_equal(res.fid[4].rows, 259);
    assert_true(res.fid[4].compared && res.fid[4].mape > 0 && res.fid[4].mape < 1);
    double med_ms = table_median(res.out_path, COST_OP_NORM, 1, 4096) / 1e3;
    copy_op_rows(res.out_path, norm_dir, COST_OP_NORM);
    cost_prof_import_fini(&res);
    return med_ms;
}

/* Vidur measures the A100 RMSNorm at 4096 tokens at about 0.105 ms; the roofline says 0.078.
 * With the imported table the norm takes the measured time, and an iteration made longer
 * only by that (the norm rows alone) is longer by exactly the difference per norm. */
static void test_vidur_import_moves_norm_up(void **state)
{
    fx *f = *state;
    const char *src =
        tu_shared_path("profiles/vidur/compute/a100/meta-llama/Llama-2-7b-hf/mlp.csv");
    if (!src)
        skip();
    char norm_dir[700];
    snprintf(norm_dir, sizeof norm_dir, "%s/norm-only", f->dir);
    double med_ms = import_llama7b(f, src, norm_dir);
    assert_true(med_ms > 0.104 && med_ms < 0.105);

    cost_model *pr = mk(f, "profile", "llama-2-7b", 1), *rf = mk(f, "roofline", "llama-2-7b", 1);
    ss_time it_pr, it_rf, it_norm;
    ss_time p_ns = prefill_op(pr, 4096, COST_OP_NORM, &it_pr);
    ss_time r_ns = prefill_op(rf, 4096, COST_OP_NORM, &it_rf);
    double p_ms = (double)p_ns / 1e6, r_ms = (double)r_ns / 1e6;
    printf("# norm at 4096 tokens: roofline %.4f ms, profile %.4f ms, imported median %.4f ms\n"
           "# 4096-token prefill with every imported table: %.2f ms, roofline %.2f ms\n",
           r_ms, p_ms, med_ms, (double)it_pr / 1e6, (double)it_rf / 1e6);
    assert_true(r_ms > 0.070 && r_ms < 0.085); /* the roofline underestimates the norm */
    assert_true(p_ms > r_ms);
    assert_true(fabs(p_ms - med_ms) <= 0.01 * med_ms);
    cost_model_destroy(&pr);
    pr = mk(f, "auto", "llama-2-7b", 1); /* 4096 tokens is inside the table */
    assert_int_equal(prefill_op(pr, 4096, COST_OP_NORM, &it_norm), p_ns);
    cost_model_destroy(&pr);

    cost_params p = params(f, "llama-2-7b", 1);
    p.profiles_dir = norm_dir;
    ss_errbuf eb;
    assert_int_equal(cost_model_create(&pr, "profile", &p, &eb), 0);
    assert_int_equal(prefill_op(pr, 4096, COST_OP_NORM, &it_norm), p_ns);
    assert_true(it_norm > it_rf);
    /* 2 norms per layer plus the final norm, which uses the norm table */
    assert_int_equal(it_norm - it_rf, (p_ns - r_ns) * (2 * 32 + 1));
    cost_model_destroy(&pr);
    cost_model_destroy(&rf);
}

/* }====================================================================== */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_interpolation_and_extrapolation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_monotonic_fixup_and_duplicates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_extreme_tables_saturate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shape_and_tp_matching, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auto_only_inside_range, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fallback_to_roofline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_collectives, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attention_tables, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prefill_attention_batches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_tables, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alloc_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deterministic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vidur_import_small, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vidur_import_alloc_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vidur_import_bad_times, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vidur_import_moves_norm_up, setup, teardown),
    };
    return cmocka_run_group_tests_name("profile", tests, NULL, NULL);
}
