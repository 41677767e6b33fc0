/* Catalog: the shipped profiles load with the published figures, derived parameter and
 * KV-cache sizes, lookups and their error messages, the profiles-directory search order,
 * every kind of malformed profile (rc and "FILE:LINE: key" prefix), and allocation-failure
 * injection over a full load. */
#include "support/test_util.h"

#include "catalog/catalog.h"
#include "config.h"
#include "core/ss_alloc.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* {======================================================================
 * Helpers
 * ======================================================================= */

#define assert_close(x, want, rel_tol)                                                         \
    do {                                                                                       \
        double x_ = (x), w_ = (want);                                                          \
        if (fabs(x_ - w_) > (rel_tol) * fabs(w_))                                             \
            fail_msg("%s = %.6g, want %.6g (within %g)", #x, x_, w_, (double)(rel_tol));       \
    } while (0)

#define assert_prefix(msg, prefix)                                                             \
    do {                                                                                       \
        if (strncmp((msg), (prefix), strlen(prefix)))                                          \
            fail_msg("message '%s'\n  does not start with '%s'", (msg), (prefix));             \
    } while (0)

static catalog *load_shipped(void)
{
    catalog *c = NULL;
    ss_errbuf eb = {""};
    int rc = catalog_load(&c, tu_src_path("profiles"), &eb);
    if (rc)
        fail_msg("loading the shipped profiles: %s", eb.msg);
    assert_non_null(c);
    return c;
}

static void mkdir_ok(const char *path)
{
    if (mkdir(path, 0755) && errno != EEXIST)
        fail_msg("mkdir %s: %s", path, strerror(errno));
}

/* A valid hardware profile, one line per entry; line numbers are index + 1. */
static const char *const gpu_lines[] = {
    "[gpu]", "name = tgpu", "description = Test GPU", "peak_bf16_tflops = 100", "hbm_gib = 16",
    "hbm_bw_gbps = 1000", "sm_count = 10", "l2_mib = 8", "[node]", "gpus_per_node = 4",
    "nvlink_gbps = 100", "pcie_gbps = 16", "net_gbps = 10", "link_latency_us = 5",
    "net_latency_us = 5", "[links]", "nvlink_efficiency = 0.75", "pcie_efficiency = 0.85",
    "net_efficiency = 0.7", "[roofline]", "eff_compute = 0.5", "eff_memory = 0.5", "eff_elementwise = 0.4",
    NULL,
};

/* A valid engine profile with one per-GPU section; line numbers are index + 1. */
static const char *const engine_lines[] = {
    "[engine]", "name = teng", "overlap = max", "async_scheduling = true", "[host]",
    "iter_fixed_us = 100", "iter_per_seq_us = 1", "iter_per_token_us = 0.1", "op_floor_us = 2",
    "launch_us = 7", "[kernels]", "fuse_add_norm = true", "fuse_silu_mul = false", "moe_eff = 0.5",
    "attn_speed = 1.25", "[allreduce]", "algorithm = twoshot", "eff = 0.6", "hop_latency_us = 3",
    "[frontend]", "frontend_ms = 1.5", "[gpu.tgpu]", "iter_fixed_us = 50", NULL,
};

/* A valid model profile (a small Llama-like shape). */
static const char *const model_lines[] = {
    "; test model", "[model]", "name = tmodel", "layers = 2", "hidden = 64", "heads = 8",
    "kv_heads = 2", "head_dim = 8", "ffn = 128", "vocab = 100", "max_context = 256",
    "dtype = bf16", "gated_mlp = true", "tied_embeddings = false", NULL,
};

/* Join lines with '\n', replacing the line that sets `key` by `repl` (dropped when repl is
 * NULL) and appending `extra` when not NULL. Static rotating buffer. */
static const char *ini_text(const char *const *lines, const char *key, const char *repl,
                            const char *extra)
{
    static char buf[2][4096];
    static int k;
    char *b = buf[k++ % 2];
    size_t used = 0, klen = key ? strlen(key) : 0;
    b[0] = '\0';
    for (size_t i = 0; lines[i]; i++) {
        const char *line = lines[i];
        if (key && !strncmp(line, key, klen) && !strncmp(line + klen, " =", 2))
            line = repl;
        if (line)
            used += (size_t)snprintf(b + used, sizeof buf[0] - used, "%s\n", line);
    }
    if (extra)
        snprintf(b + used, sizeof buf[0] - used, "%s", extra);
    return b;
}

/* A fresh profiles directory holding hardware/tgpu.ini and models/tmodel.ini. */
static const char *make_profiles(const char *gpu_text, const char *model_text)
{
    static char dir[4][600];
    static int n;
    char *d = dir[n % 4];
    snprintf(d, sizeof dir[0], "%s/p%d", tu_tmpdir(), n);
    n++;
    char sub[700];
    mkdir_ok(d);
    snprintf(sub, sizeof sub, "%s/hardware", d);
    mkdir_ok(sub);
    tu_write_file(sub, "tgpu.ini", gpu_text);
    snprintf(sub, sizeof sub, "%s/models", d);
    mkdir_ok(sub);
    tu_write_file(sub, "tmodel.ini", model_text);
    return d;
}

static const char *valid_gpu(void) { return ini_text(gpu_lines, NULL, NULL, NULL); }
static const char *valid_model(void) { return ini_text(model_lines, NULL, NULL, NULL); }

/* Load dir, expect rc and a message starting with the formatted prefix, nothing returned and
 * nothing leaked. */
static void expect_error(const char *dir, int want_rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void expect_error(const char *dir, int want_rc, const char *fmt, ...)
{
    char want[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(want, sizeof want, fmt, ap);
    va_end(ap);
    catalog *c = NULL;
    ss_errbuf eb = {""};
    int rc = catalog_load(&c, dir, &eb);
    if (rc != want_rc)
        fail_msg("rc %d (%s), want %d; message '%s'", rc, ss_strerror(rc), want_rc, eb.msg);
    assert_null(c);
    assert_prefix(eb.msg, want);
    assert_null(strpbrk(eb.msg, "\r\n"));
    tu_assert_no_leaks();
}

/* A GPU file with one line replaced must fail at that line with the given text. */
static void expect_gpu_error(const char *key, const char *repl, const char *tail)
{
    const char *d = make_profiles(ini_text(gpu_lines, key, repl, NULL), valid_model());
    unsigned line = 0;
    for (unsigned i = 0; gpu_lines[i]; i++)
        if (!strncmp(gpu_lines[i], key, strlen(key)) && gpu_lines[i][strlen(key)] == ' ')
            line = i + 1;
    assert_int_not_equal(line, 0);
    expect_error(d, SS_EPARSE, "%s/hardware/tgpu.ini:%u: %s", d, line, tail);
}

static void expect_model_error(const char *key, const char *repl, const char *extra,
                               unsigned line, const char *tail)
{
    const char *d = make_profiles(valid_gpu(), ini_text(model_lines, key, repl, extra));
    expect_error(d, SS_EPARSE, "%s/models/tmodel.ini:%u: %s", d, line, tail);
}

static int teardown_tmp(void **state)
{
    (void)state;
    ss_alloc_fail_after(0);
    tu_tmpdir_cleanup();
    return 0;
}

/* }====================================================================== */

/* {======================================================================
 * Shipped profiles
 * ======================================================================= */

static void test_shipped_gpus(void **state)
{
    (void)state;
    catalog *c = load_shipped();
    assert_int_equal(catalog_n_gpus(c), 4);
    const char *order[] = {"a100-80g", "h100-sxm", "h200", "l40s"};
    for (size_t i = 0; i < 4; i++)
        assert_string_equal(catalog_gpu_at(c, i)->name, order[i]);
    assert_null(catalog_gpu_at(c, 4));

    const cat_gpu *a = catalog_gpu(c, "a100-80g");
    assert_non_null(a);
    assert_close(a->peak_flops, 312e12, 1e-9);
    assert_close(a->hbm_bytes, 80.0 * 1073741824, 1e-9);
    assert_close(a->hbm_bw, 2039e9, 1e-9);
    assert_int_equal(a->sm_count, 108);
    assert_close(a->l2_bytes, 40.0 * 1048576, 1e-9);
    assert_close(a->nvlink_bw, 300e9, 1e-9);
    assert_close(a->pcie_bw, 32e9, 1e-9);
    assert_close(a->eff_compute, 0.72, 1e-9);
    assert_close(a->eff_elementwise, 0.45, 1e-9);
    assert_non_null(strstr(a->path, "hardware/a100-80g.ini"));

    const cat_gpu *h = catalog_gpu(c, "h100-sxm");
    assert_close(h->peak_flops, 989e12, 1e-9);
    assert_close(h->hbm_bw, 3.35e12, 1e-9);
    assert_int_equal(h->sm_count, 132);
    assert_close(h->nvlink_bw, 450e9, 1e-9);
    assert_close(h->pcie_bw, 64e9, 1e-9);
    assert_close(h->link_latency_s, 6e-6, 1e-9);

    const cat_gpu *h2 = catalog_gpu(c, "h200");
    assert_close(h2->hbm_bw, 4.8e12, 1e-9);
    assert_close(h2->hbm_bytes, 141.0 * 1073741824, 1e-9);
    assert_close(h2->peak_flops, h->peak_flops, 1e-12);

    const cat_gpu *l = catalog_gpu(c, "l40s");
    assert_close(l->peak_flops, 362e12, 1e-9);
    assert_close(l->hbm_bw, 864e9, 1e-9);
    assert_int_equal(l->sm_count, 142);
    assert_false(l->has_nvlink);
    assert_true(a->has_nvlink);
    assert_close(l->nvlink_bw, l->pcie_bw, 1e-12);
    assert_close(l->link_latency_s, 15e-6, 1e-9);
    /* [links]: each kind's efficiency; without NVLink the intra-node link is PCIe's */
    assert_close(a->nvlink_eff, 0.76, 1e-12);
    assert_close(h->nvlink_eff, 0.77, 1e-12);
    assert_close(h->pcie_eff, 0.87, 1e-12);
    assert_close(h->net_eff, 0.72, 1e-12);
    assert_close(l->nvlink_eff, l->pcie_eff, 1e-12);
    catalog_destroy(&c);
    assert_null(c);
    tu_assert_no_leaks();
}

/* [links]: every efficiency is a fraction in (0, 1], refused with file, line and key; a GPU
 * with NVLink must give nvlink_efficiency and one without must not. */
static void test_link_efficiency(void **state)
{
    (void)state;
    catalog *c = NULL;
    ss_errbuf eb = {""};
    const char *d = make_profiles(valid_gpu(), valid_model());
    assert_int_equal(catalog_load(&c, d, &eb), 0);
    const cat_gpu *g = catalog_gpu(c, "tgpu");
    assert_close(g->nvlink_eff, 0.75, 1e-12);
    assert_close(g->pcie_eff, 0.85, 1e-12);
    assert_close(g->net_eff, 0.7, 1e-12);
    catalog_destroy(&c);
    expect_gpu_error("nvlink_efficiency", "nvlink_efficiency = 1.2",
                     "links.nvlink_efficiency: '1.2' is not a fraction in (0, 1]");
    expect_gpu_error("pcie_efficiency", "pcie_efficiency = 0",
                     "links.pcie_efficiency: '0' is not a fraction in (0, 1]");
    expect_gpu_error("net_efficiency", "net_efficiency = -0.5",
                     "links.net_efficiency: '-0.5' is not a fraction in (0, 1]");
    expect_gpu_error("net_efficiency", "net_efficiency = fast",
                     "links.net_efficiency: 'fast' is not a fraction in (0, 1]");
    d = make_profiles(ini_text(gpu_lines, "net_efficiency", NULL, NULL), valid_model());
    expect_error(d, SS_EPARSE, "%s/hardware/tgpu.ini: links.net_efficiency: missing", d);
    d = make_profiles(ini_text(gpu_lines, "nvlink_efficiency", NULL, NULL), valid_model());
    expect_error(d, SS_EPARSE, "%s/hardware/tgpu.ini: links.nvlink_efficiency: missing", d);
    /* no NVLink: the key has nothing to apply to (line 17 holds it) */
    d = make_profiles(ini_text(gpu_lines, "nvlink_gbps", "nvlink_gbps = 0", NULL), valid_model());
    expect_error(d, SS_EPARSE, "%s/hardware/tgpu.ini:17: links.nvlink_efficiency: set, but "
                 "nvlink_gbps = 0", d);
    /* ... and without the key it loads, its intra-node link at PCIe's efficiency */
    const char *no_nv[sizeof gpu_lines / sizeof *gpu_lines];
    size_t n = 0;
    for (size_t i = 0; gpu_lines[i]; i++)
        if (strncmp(gpu_lines[i], "nvlink_", 7))
            no_nv[n++] = gpu_lines[i];
        else if (!strncmp(gpu_lines[i], "nvlink_gbps", 11))
            no_nv[n++] = "nvlink_gbps = 0";
    no_nv[n] = NULL;
    d = make_profiles(ini_text(no_nv, NULL, NULL, NULL), valid_model());
    assert_int_equal(catalog_load(&c, d, &eb), 0);
    g = catalog_gpu(c, "tgpu");
    assert_false(g->has_nvlink);
    assert_close(g->nvlink_eff, 0.85, 1e-12);
    catalog_destroy(&c);
    tu_assert_no_leaks();
}

static void test_shipped_models(void **state)
{
    (void)state;
    catalog *c = load_shipped();
    assert_int_equal(catalog_n_models(c), 9);
    for (size_t i = 1; i < catalog_n_models(c); i++)
        assert_true(strcmp(catalog_model_at(c, i - 1)->name, catalog_model_at(c, i)->name) < 0);
    const char *names[] = {"llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b",
                           "llama-3-70b", "mistral-7b", "qwen2.5-7b", "qwen2.5-72b",
                           "mixtral-8x7b"};
    for (size_t i = 0; i < 9; i++)
        assert_non_null(catalog_model(c, names[i]));

    const cat_model *m = catalog_model(c, "llama-2-70b");
    assert_int_equal(m->layers, 80);
    assert_int_equal(m->hidden, 8192);
    assert_int_equal(m->heads, 64);
    assert_int_equal(m->kv_heads, 8);
    assert_int_equal(m->ffn, 28672);
    assert_int_equal(m->vocab, 32000);
    assert_int_equal(m->max_context, 4096);
    assert_int_equal(m->dtype_bytes, 2);
    assert_true(m->gated_mlp);
    assert_false(m->tied_embeddings);

    m = catalog_model(c, "qwen2.5-7b");
    assert_int_equal(m->layers, 28);
    assert_int_equal(m->hidden, 3584);
    assert_int_equal(m->heads, 28);
    assert_int_equal(m->kv_heads, 4);
    assert_int_equal(m->ffn, 18944);
    assert_int_equal(m->vocab, 152064);
    assert_false(m->tied_embeddings);

    m = catalog_model(c, "mixtral-8x7b");
    assert_int_equal(m->experts, 8);
    assert_int_equal(m->top_k, 2);
    assert_int_equal(m->max_context, 32768);
    m = catalog_model(c, "llama-3-8b");
    assert_int_equal(m->vocab, 128256);
    assert_int_equal(m->experts, 0);
    assert_int_equal(m->top_k, 0);
    catalog_destroy(&c);
    tu_assert_no_leaks();
}

static void test_params_and_kv(void **state)
{
    (void)state;
    catalog *c = load_shipped();
    struct { const char *name; double params; double kv; } want[] = {
        {"llama-2-7b", 6.74e9, 524288},  {"llama-2-70b", 68.98e9, 327680},
        {"llama-3-8b", 8.03e9, 131072},  {"mixtral-8x7b", 46.7e9, 131072},
        {"llama-2-13b", 13.0e9, 819200}, {"qwen2.5-7b", 7.62e9, 57344},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        const cat_model *m = catalog_model(c, want[i].name);
        assert_non_null(m);
        assert_close(cat_model_params(m), want[i].params, 0.01);
        assert_close(cat_model_kv_bytes_per_token(m), want[i].kv, 0);
    }
    /* Exact count for llama-2-7b, from its safetensors index: 6,738,415,616. */
    assert_close(cat_model_params(catalog_model(c, "llama-2-7b")), 6738415616.0, 0);
    /* Tying removes exactly the LM head; a plain MLP has 2 matrices instead of 3. */
    cat_model t = *catalog_model(c, "llama-2-7b");
    double full = cat_model_params(&t);
    t.tied_embeddings = 1;
    assert_close(full - cat_model_params(&t), 32000.0 * 4096, 0);
    t.gated_mlp = 0;
    assert_close(full - cat_model_params(&t), 32000.0 * 4096 + 32.0 * 4096 * 11008, 0);
    catalog_destroy(&c);
    tu_assert_no_leaks();
}

static void test_find(void **state)
{
    (void)state;
    catalog *c = load_shipped();
    const cat_model *m = NULL;
    const cat_gpu *g = NULL;
    ss_errbuf eb = {""};
    assert_int_equal(catalog_model_find(c, "llama-2-7b", &m, &eb), SS_OK);
    assert_string_equal(m->name, "llama-2-7b");
    assert_int_equal(catalog_model_find(c, "llama-7b", &m, &eb), SS_ENOTFOUND);
    assert_null(m);
    assert_prefix(eb.msg, "unknown model 'llama-7b' (known: llama-2-13b, llama-2-70b, ");
    assert_non_null(strstr(eb.msg, "qwen2.5-7b)"));
    assert_int_equal(catalog_gpu_find(c, "H100", &g, &eb), SS_ENOTFOUND);
    assert_string_equal(eb.msg, "unknown GPU 'H100' (known: a100-80g, h100-sxm, h200, l40s)");
    assert_int_equal(catalog_gpu_find(c, "h200", &g, &eb), SS_OK);
    assert_string_equal(g->name, "h200");
    assert_null(catalog_gpu(c, "h20"));
    assert_null(catalog_model(c, NULL));
    catalog_destroy(&c);
    tu_assert_no_leaks();
}

static void test_default_dir(void **state)
{
    (void)state;
    assert_string_equal(catalog_default_dir("mine"), "mine");
    char cwd[1024];
    assert_non_null(getcwd(cwd, sizeof cwd));
    const char *saved = getenv("SLICESIM_PROFILES");
    char saved_env[1024] = "";
    if (saved)
        snprintf(saved_env, sizeof saved_env, "%s", saved);
    setenv("SLICESIM_PROFILES", "/from/env", 1);
    assert_string_equal(catalog_default_dir(NULL), "/from/env");
    unsetenv("SLICESIM_PROFILES");
    const char *d = make_profiles(valid_gpu(), valid_model());
    char parent[700];
    snprintf(parent, sizeof parent, "%s/with", tu_tmpdir());
    mkdir_ok(parent);
    char sub[800];
    snprintf(sub, sizeof sub, "%s/profiles", parent);
    assert_int_equal(rename(d, sub), 0);
    assert_int_equal(chdir(parent), 0);
    assert_string_equal(catalog_default_dir(NULL), "profiles");
    assert_int_equal(chdir(tu_tmpdir()), 0);
    assert_string_equal(catalog_default_dir(NULL), SS_SOURCE_ROOT "/profiles");
    assert_int_equal(chdir(cwd), 0);
    if (saved_env[0])
        setenv("SLICESIM_PROFILES", saved_env, 1);
    tu_assert_no_leaks();
}

/* }====================================================================== */

/* {======================================================================
 * Malformed profiles
 * ======================================================================= */

static void test_fixture_loads(void **state)
{
    (void)state;
    const char *d = make_profiles(valid_gpu(), valid_model());
    char sub[700];
    snprintf(sub, sizeof sub, "%s/models", d);
    tu_write_file(sub, "README.txt", "not a profile\n");
    tu_write_file(sub, ".tmodel.ini.swp", "garbage\n");
    catalog *c = NULL;
    ss_errbuf eb = {""};
    int rc = catalog_load(&c, d, &eb);
    if (rc)
        fail_msg("%s", eb.msg);
    assert_int_equal(catalog_n_gpus(c), 1);
    assert_int_equal(catalog_n_models(c), 1);
    const cat_gpu *g = catalog_gpu_at(c, 0);
    assert_string_equal(g->description, "Test GPU");
    assert_int_equal(catalog_n_engines(c), 0); /* no engines/ directory: none, no error */
    const cat_model *m = catalog_model_at(c, 0);
    assert_string_equal(m->description, "tmodel"); /* defaults to the name */
    assert_int_equal(m->experts, 0);
    catalog_destroy(&c);
    tu_assert_no_leaks();
}

static void test_io_errors(void **state)
{
    (void)state;
    char nope[700];
    snprintf(nope, sizeof nope, "%s/nope", tu_tmpdir());
    expect_error(nope, SS_EIO, "%s/hardware: cannot open directory", nope);

    const char *d = make_profiles(valid_gpu(), valid_model());
    char sub[700], cmd[1600];
    snprintf(sub, sizeof sub, "%s/models", d);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", sub);
    assert_int_equal(system(cmd), 0);
    expect_error(d, SS_EIO, "%s/models: cannot open directory", d);

    /* A directory or a FIFO named like a profile is not a regular file: refused before any
     * read (a FIFO without a writer would hang the open, and every command loads the
     * catalog). */
    d = make_profiles(valid_gpu(), valid_model());
    snprintf(sub, sizeof sub, "%s/hardware/zz.ini", d);
    mkdir_ok(sub);
    expect_error(d, SS_EPARSE, "%s: not a regular file", sub);
    d = make_profiles(valid_gpu(), valid_model());
    snprintf(sub, sizeof sub, "%s/models/a.ini", d);
    assert_int_equal(mkfifo(sub, 0600), 0);
    expect_error(d, SS_EPARSE, "%s: not a regular file", sub);
}

static void test_unknown_names(void **state)
{
    (void)state;
    expect_gpu_error("peak_bf16_tflops", "peak_bf16_tflop = 312",
                     "gpu.peak_bf16_tflop: unknown key");
    const char *d = make_profiles(ini_text(gpu_lines, "name", "[gpus]\nname = tgpu", NULL),
                                  valid_model());
    expect_error(d, SS_EPARSE, "%s/hardware/tgpu.ini:3: gpus.name: unknown section [gpus] "
                 "(expected [gpu], [node], [links], [roofline], [mig])", d);
    char text[4096];
    snprintf(text, sizeof text, "layers = 2\n%s", valid_model());
    d = make_profiles(valid_gpu(), text);
    expect_error(d, SS_EPARSE, "%s/models/tmodel.ini:1: layers: key outside any section", d);
    expect_model_error("layers", "Layers = 2", NULL, 4, "model.Layers: unknown key");
}

static void test_bad_values(void **state)
{
    (void)state;
    expect_gpu_error("hbm_gib", "hbm_gib = lots", "gpu.hbm_gib: 'lots' is not a number > 0");
    expect_gpu_error("hbm_gib", "hbm_gib = 0", "gpu.hbm_gib: '0' is not a number > 0");
    expect_gpu_error("hbm_bw_gbps", "hbm_bw_gbps = -3", "gpu.hbm_bw_gbps: '-3' is not");
    expect_gpu_error("hbm_bw_gbps", "hbm_bw_gbps =", "gpu.hbm_bw_gbps: '' is not");
    expect_gpu_error("hbm_bw_gbps", "hbm_bw_gbps = 12;", "gpu.hbm_bw_gbps: '12;' is not");
    expect_gpu_error("hbm_bw_gbps", "hbm_bw_gbps = nan", "gpu.hbm_bw_gbps: 'nan' is not");
    expect_gpu_error("eff_compute", "eff_compute = 1.5",
                     "roofline.eff_compute: '1.5' is not a fraction in (0, 1]");
    /* The engine terms hardware files held before engine profiles say where they went. */
    const char *d = make_profiles(ini_text(gpu_lines, NULL, NULL, "eff_link = 0.7\n"),
                                  valid_model());
    expect_error(d, SS_EPARSE, "%s/hardware/tgpu.ini:24: roofline.eff_link: an engine term since "
                 "engine profiles; set it in profiles/engines/NAME.ini", d);
    d = make_profiles(ini_text(gpu_lines, NULL, NULL, "[overhead]\n"
                                           "iter_fixed_us = 3000\n"), valid_model());
    expect_error(d, SS_EPARSE, "%s/hardware/tgpu.ini:25: overhead.iter_fixed_us: an engine term "
                 "since engine profiles", d);
    expect_gpu_error("sm_count", "sm_count = 10.5", "gpu.sm_count: '10.5' is not an integer");
    expect_gpu_error("sm_count", "sm_count = 0", "gpu.sm_count: '0' is out of range [1, 4294967295]");
    expect_gpu_error("sm_count", "sm_count = 4294967296",
                     "gpu.sm_count: '4294967296' is out of range [1, 4294967295]");
    expect_gpu_error("link_latency_us", "link_latency_us = -1",
                     "node.link_latency_us: '-1' is not a number >= 0");
    expect_gpu_error("name", "name = H100 SXM", "gpu.name: 'H100 SXM' is not a name");
    /* A bare CR (old Mac line end) does not end an INI line: the message shows it escaped. */
    expect_gpu_error("name", "name = tgpu\rdescription = x",
                     "gpu.name: 'tgpu\\x0ddescription = x' is not a name");
    expect_gpu_error("name", "name = a-name-that-is-much-too-long-to-fit-in-the-name-field",
                     "gpu.name: 'a-name-that-is-much-too-long");
    expect_model_error("layers", "layers = 4294967296", NULL, 4,
                       "model.layers: '4294967296' is out of range [1, 4294967295]");
    expect_model_error("hidden", "hidden = 4294967296", NULL, 5,
                       "model.hidden: '4294967296' is out of range [1, 4294967295]");
    expect_model_error("layers", "layers = 10001", NULL, 4,
                       "model.layers: 10001 is more than 10000");
    expect_model_error("dtype", "dtype = int4", NULL, 12,
                       "model.dtype: 'int4' is not bf16, fp16, fp32 or fp8");
    expect_model_error("gated_mlp", "gated_mlp = yes", NULL, 13,
                       "model.gated_mlp: 'yes' is not true or false");
}

static void test_shape_rules(void **state)
{
    (void)state;
    expect_model_error("kv_heads", "kv_heads = 3", NULL, 7,
                       "model.kv_heads: heads (8) is not a multiple of kv_heads (3)");
    expect_model_error("kv_heads", "kv_heads = 16", NULL, 7, "model.kv_heads: heads (8)");
    expect_model_error("ffn", "ffn = 128", "experts = 4\ntop_k = 0\n", 16,
                       "model.top_k: a mixture of 4 experts needs 1 <= top_k <= 4 (got 0)");
    expect_model_error("ffn", "ffn = 128", "experts = 4\ntop_k = 5\n", 16, "model.top_k:");
    expect_model_error("ffn", "ffn = 128", "experts = 4\n", 3, "model.top_k:"); /* name line */
    expect_model_error("ffn", "ffn = 128", "top_k = 2\n", 15,
                       "model.top_k: must be 0 for a dense model");
    /* A valid mixture loads. */
    const char *d = make_profiles(valid_gpu(), ini_text(model_lines, NULL, NULL,
                                                        "experts = 4\ntop_k = 2\n"));
    catalog *c = NULL;
    assert_int_equal(catalog_load(&c, d, NULL), SS_OK);
    assert_int_equal(catalog_model_at(c, 0)->experts, 4);
    catalog_destroy(&c);
    tu_assert_no_leaks();
}

static void test_structure_errors(void **state)
{
    (void)state;
    const char *d = make_profiles(ini_text(gpu_lines, "hbm_bw_gbps", NULL, NULL), valid_model());
    expect_error(d, SS_EPARSE, "%s/hardware/tgpu.ini: gpu.hbm_bw_gbps: missing", d);
    d = make_profiles(valid_gpu(), ini_text(model_lines, "name", NULL, NULL));
    expect_error(d, SS_EPARSE, "%s/models/tmodel.ini: model.name: missing", d);
    d = make_profiles(ini_text(gpu_lines, "sm_count", "sm_count = 10\nsm_count = 11", NULL),
                      valid_model());
    expect_error(d, SS_EPARSE, "%s/hardware/tgpu.ini:8: gpu.sm_count: set twice (first on line 7)",
                 d);
    expect_gpu_error("l2_mib", "just some words", "syntax error");
    expect_gpu_error("l2_mib", "[node", "syntax error");
    char long_line[400];
    memset(long_line, 'x', sizeof long_line - 1);
    long_line[0] = ';';
    long_line[sizeof long_line - 1] = '\0';
    expect_gpu_error("l2_mib", long_line, "line longer than 199 characters");
    /* The limit is inclusive: 199 characters load, 200 do not. */
    long_line[200] = '\0';
    expect_gpu_error("l2_mib", long_line, "line longer than 199 characters");
    long_line[199] = '\0';
    char extra[sizeof long_line + 1];
    snprintf(extra, sizeof extra, "%s\n", long_line);
    d = make_profiles(ini_text(gpu_lines, NULL, NULL, extra), valid_model());
    catalog *c = NULL;
    assert_int_equal(catalog_load(&c, d, NULL), SS_OK);
    catalog_destroy(&c);
    /* A syntax error before a key error is the one reported. */
    d = make_profiles(ini_text(gpu_lines, "sm_count", "oops", "bogus = 1\n"), valid_model());
    expect_error(d, SS_EPARSE, "%s/hardware/tgpu.ini:7: syntax error", d);
}

static void test_duplicate_names(void **state)
{
    (void)state;
    const char *d = make_profiles(valid_gpu(), valid_model());
    char sub[700];
    snprintf(sub, sizeof sub, "%s/hardware", d);
    tu_write_file(sub, "zz-copy.ini", valid_gpu());
    expect_error(d, SS_EPARSE,
                 "%s/hardware/zz-copy.ini:2: gpu.name: GPU 'tgpu' is already defined in "
                 "%s/hardware/tgpu.ini", d, d);
    d = make_profiles(valid_gpu(), valid_model());
    snprintf(sub, sizeof sub, "%s/models", d);
    tu_write_file(sub, "another.ini", valid_model());
    expect_error(d, SS_EPARSE, "%s/models/tmodel.ini:3: model.name: model 'tmodel' is already "
                 "defined in %s/models/another.ini", d, d);
}

/* }====================================================================== */

static void test_alloc_failures(void **state)
{
    (void)state;
    const char *dir = tu_src_path("profiles");
    uint64_t n;
    for (n = 1;; n++) {
        catalog *c = NULL;
        ss_errbuf eb = {""};
        ss_alloc_fail_after(n);
        int rc = catalog_load(&c, dir, &eb);
        ss_alloc_fail_after(0);
        if (rc == SS_OK) {
            assert_int_equal(catalog_n_models(c), 9);
            catalog_destroy(&c);
            tu_assert_no_leaks();
            break;
        }
        if (rc != SS_ENOMEM)
            fail_msg("n = %llu: rc %d, message '%s'", (unsigned long long)n, rc, eb.msg);
        assert_null(c);
        assert_true(eb.msg[0] != '\0');
        tu_assert_no_leaks();
        assert_true(n < 10000);
    }
    /* 13 files: at least a path and a table slot each, so many failure points were hit. */
    assert_true(n > 20);
}

/* {======================================================================
 * Engine profiles
 * ======================================================================= */

/* A profiles directory with the test GPU and model and engines/teng.ini = text. */
static const char *make_engine(const char *text)
{
    static char copy[4096]; /* ini_text's buffers rotate: valid_gpu() would overwrite text */
    snprintf(copy, sizeof copy, "%s", text);
    text = copy;
    const char *d = make_profiles(valid_gpu(), valid_model());
    char sub[700];
    snprintf(sub, sizeof sub, "%s/engines", d);
    mkdir_ok(sub);
    tu_write_file(sub, "teng.ini", text);
    return d;
}

static void expect_engine_error(const char *key, const char *repl, const char *extra,
                                unsigned line, const char *tail)
{
    const char *d = make_engine(ini_text(engine_lines, key, repl, extra));
    if (line)
        expect_error(d, SS_EPARSE, "%s/engines/teng.ini:%u: %s", d, line, tail);
    else
        expect_error(d, SS_EPARSE, "%s/engines/teng.ini: %s", d, tail);
}

/* vllm-eager holds exactly the coefficients the hardware files held before engine profiles:
 * 3000 us per iteration on A100/L40S, 2500 on H100/H200, 20 per sequence, 0.5 per token, a
 * 5 us kernel floor, all-reduce at 0.70 of the link, nothing fused beyond SiLU-and-mul. */
static void test_shipped_engine(void **state)
{
    (void)state;
    catalog *c = load_shipped();
    const cat_engine *e = NULL;
    ss_errbuf eb = {""};
    assert_int_equal(catalog_engine_find(c, CAT_ENGINE_EAGER, &e, &eb), 0);
    assert_int_equal(e->overlap, CAT_OVERLAP_SERIAL);
    assert_close(cat_engine_host_for(e, "a100-80g")->iter_fixed_s, 3e-3, 1e-12);
    assert_close(cat_engine_host_for(e, "l40s")->iter_fixed_s, 3e-3, 1e-12);
    assert_close(cat_engine_host_for(e, "h100-sxm")->iter_fixed_s, 2.5e-3, 1e-12);
    assert_close(cat_engine_host_for(e, "h200")->iter_fixed_s, 2.5e-3, 1e-12);
    const char *gpus[] = {"a100-80g", "h100-sxm", "h200", "l40s"};
    for (size_t i = 0; i < 4; i++) {
        const cat_engine_host *h = cat_engine_host_for(e, gpus[i]);
        assert_close(h->iter_per_seq_s, 20e-6, 1e-12);
        assert_close(h->iter_per_token_s, 0.5e-6, 1e-12);
        assert_close(h->op_floor_s, 5e-6, 1e-12);
        assert_true(h->launch_s == 0);
    }
    assert_false(e->fuse_add_norm);
    assert_true(e->fuse_silu_mul);
    assert_true(e->moe_eff == 1.0 && e->attn_speed == 1.0);
    assert_false(e->async_scheduling);
    assert_int_equal(e->allreduce, CAT_ALLREDUCE_RING);
    assert_true(e->allreduce_eff == 0.70);
    assert_true(e->allreduce_hop_s == 0 && e->frontend_s == 0);
    assert_int_equal(catalog_engine_find(c, "vllm-9", &e, &eb), SS_ENOTFOUND);
    assert_prefix(eb.msg, "unknown engine 'vllm-9' (known: vllm-0.15, vllm-0.2, vllm-eager");
    catalog_destroy(&c);
    tu_assert_no_leaks();
}

/* The default engine is today's vLLM: CUDA graphs and async scheduling, fused kernels, the
 * two-shot all-reduce; what its terms are is fitted (bench/fidelity.sh reports how well). */
static void test_default_engine(void **state)
{
    (void)state;
    catalog *c = load_shipped();
    const cat_engine *e = NULL;
    ss_errbuf eb = {""};
    assert_string_equal(CAT_ENGINE_DEFAULT, "vllm-0.15");
    assert_int_equal(catalog_engine_find(c, CAT_ENGINE_DEFAULT, &e, &eb), 0);
    assert_true(e->async_scheduling && e->fuse_add_norm && e->fuse_silu_mul);
    assert_int_equal(e->allreduce, CAT_ALLREDUCE_TWOSHOT);
    assert_int_equal(e->n_gpus, 0); /* fitted on one node type: the same terms everywhere */
    assert_true(e->frontend_s > 0 && e->host.op_floor_s < 5e-6 && e->host.launch_s == 0);
    /* the eager 2023 engine: launches bound a step, NCCL's latency does not grow with TP */
    assert_int_equal(catalog_engine_find(c, "vllm-0.2", &e, &eb), 0);
    assert_close(e->host.launch_s, 20e-6, 1e-12);
    assert_false(e->async_scheduling);
    assert_int_equal(e->allreduce, CAT_ALLREDUCE_TWOSHOT);
    catalog_destroy(&c);
    tu_assert_no_leaks();
}

static void test_engine_file(void **state)
{
    (void)state;
    const char *d = make_engine(ini_text(engine_lines, NULL, NULL, NULL));
    catalog *c = NULL;
    ss_errbuf eb = {""};
    if (catalog_load(&c, d, &eb))
        fail_msg("%s", eb.msg);
    assert_int_equal(catalog_n_engines(c), 1);
    const cat_engine *e = catalog_engine_at(c, 0);
    assert_ptr_equal(catalog_engine(c, "teng"), e);
    assert_string_equal(e->description, "teng");
    assert_int_equal(e->overlap, CAT_OVERLAP_MAX);
    assert_close(e->host.iter_fixed_s, 100e-6, 1e-12);
    assert_true(e->fuse_add_norm && !e->fuse_silu_mul);
    assert_close(e->moe_eff, 0.5, 1e-12);
    assert_close(e->attn_speed, 1.25, 1e-12);
    assert_true(e->async_scheduling);
    assert_int_equal(e->allreduce, CAT_ALLREDUCE_TWOSHOT);
    assert_close(e->allreduce_eff, 0.6, 1e-12);
    assert_close(e->allreduce_hop_s, 3e-6, 1e-12);
    assert_close(e->frontend_s, 1.5e-3, 1e-12);
    /* the override replaces one term and inherits the others */
    const cat_engine_host *h = cat_engine_host_for(e, "tgpu");
    assert_close(h->iter_fixed_s, 50e-6, 1e-12);
    assert_close(h->iter_per_seq_s, 1e-6, 1e-12);
    assert_close(h->op_floor_s, 2e-6, 1e-12);
    assert_close(h->launch_s, 7e-6, 1e-12);
    assert_ptr_equal(cat_engine_host_for(e, "other"), &e->host);
    catalog_destroy(&c);
    tu_assert_no_leaks();
}

static void test_engine_errors(void **state)
{
    (void)state;
    expect_engine_error("overlap", "overlap = sometimes", NULL, 3,
                        "engine.overlap: 'sometimes' is not serial or max");
    expect_engine_error("moe_eff", "moe_eff = 2", NULL, 14,
                        "kernels.moe_eff: '2' is not a fraction in (0, 1]");
    expect_engine_error("fuse_add_norm", "fuse_add_norm = yes", NULL, 12,
                        "kernels.fuse_add_norm: 'yes' is not true or false");
    expect_engine_error("frontend_ms", NULL, NULL, 0, "frontend.frontend_ms: missing");
    expect_engine_error("attn_speed", "attn_speed = 0", NULL, 15,
                        "kernels.attn_speed: '0' is not a number > 0");
    expect_engine_error("async_scheduling", NULL, NULL, 0,
                        "engine.async_scheduling: missing");
    expect_engine_error("algorithm", "algorithm = tree", NULL, 17,
                        "allreduce.algorithm: 'tree' is not ring or twoshot");
    expect_engine_error(NULL, NULL, "iter_per_seq_us = x\n", 24,
                        "gpu.tgpu.iter_per_seq_us: 'x' is not a number >= 0");
    expect_engine_error(NULL, NULL, "iter_fixed_us = 60\n", 24,
                        "gpu.tgpu.iter_fixed_us: set twice (first on line 23)");
    expect_engine_error(NULL, NULL, "moe_eff = 1\n", 24,
                        "gpu.tgpu.moe_eff: unknown key (a [gpu.NAME] section overrides");
    expect_engine_error(NULL, NULL, "[gpu.Bad GPU]\niter_fixed_us = 1\n", 25,
                        "gpu.Bad GPU.iter_fixed_us: 'Bad GPU' is not a GPU name");
    expect_engine_error(NULL, NULL, "[overhead]\niter_fixed_us = 1\n", 25,
                        "overhead.iter_fixed_us: unknown section [overhead]");
    /* the known sections once each (the key table returns to [engine], [kernels] and [host]
     * at its end), and the [gpu.NAME] sections */
    const char *d = make_engine(ini_text(engine_lines, NULL, NULL, "[bogus]\nx = 1\n"));
    catalog *c = NULL;
    ss_errbuf eb = {""};
    assert_int_equal(catalog_load(&c, d, &eb), SS_EPARSE);
    char want[1024];
    snprintf(want, sizeof want, "%s/engines/teng.ini:25: bogus.x: unknown section [bogus] "
             "(expected [engine], [host], [kernels], [allreduce], [frontend], [gpu.NAME])", d);
    assert_string_equal(eb.msg, want);
    tu_assert_no_leaks();
}

/* The line (from 1) of engine_lines that first sets key. */
static unsigned engine_line_of(const char *key)
{
    size_t n = strlen(key);
    for (unsigned i = 0; engine_lines[i]; i++)
        if (!strncmp(engine_lines[i], key, n) && !strncmp(engine_lines[i] + n, " =", 2))
            return i + 1;
    fail_msg("no line sets %s", key);
    return 0;
}

/* The documented range of every engine term (profiles/README.md), in profile order, with a
 * value just outside each bound and what the loader says about it. */
static const struct {
    const char *section, *key;
    double lo, hi;
    const char *below, *below_says; /* a value under lo and the message's tail */
    const char *above, *above_says;
} engine_ranges[] = {
    {"host", "iter_fixed_us", 0, 1e6, "-1", "'-1' is not a number >= 0", "1000001",
     "out of range [0, 1e6]"},
    {"host", "iter_per_seq_us", 0, 1e3, "-0.5", "'-0.5' is not a number >= 0", "1000.5",
     "out of range [0, 1000]"},
    {"host", "iter_per_token_us", 0, 100, "-1e-9", "'-1e-9' is not a number >= 0", "100.01",
     "out of range [0, 100]"},
    {"host", "op_floor_us", 0, 1e3, "-1", "'-1' is not a number >= 0", "1001",
     "out of range [0, 1000]"},
    {"kernels", "moe_eff", 0.01, 1, "0.0099", "out of range [0.01, 1]", "1.01",
     "'1.01' is not a fraction in (0, 1]"},
    {"allreduce", "eff", 0.01, 1, "0.001", "out of range [0.01, 1]", "2",
     "'2' is not a fraction in (0, 1]"},
    {"allreduce", "hop_latency_us", 0, 1e3, "-2", "'-2' is not a number >= 0", "1e4",
     "out of range [0, 1000]"},
    {"frontend", "frontend_ms", 0, 6e5, "-1", "'-1' is not a number >= 0", "600001",
     "out of range [0, 600000]"},
    {"kernels", "attn_speed", 0.01, 10, "0.005", "out of range [0.01, 10]", "10.5",
     "out of range [0.01, 10]"},
    {"host", "launch_us", 0, 1e3, "-1", "'-1' is not a number >= 0", "1e999",
     "out of range [0, 1000]"},
};

/* Every engine term has a documented range that the loader enforces: the table of terms
 * (cat_engine_term_get) holds exactly the documented ranges, each term at either bound loads
 * and holds the bound times its scale, and a value just outside is refused with "FILE:LINE:
 * section.key: out of range [lo, hi]" (the messages of values the term's kind never allowed
 * stay as they were). Issue 23's values are refused: a host time of 10^12 or 10^300 us, a
 * front end of 9.3e12 ms, speed and efficiency factors of 10^-300, and in a [gpu.NAME]
 * section the [host] ranges hold. */
static void test_engine_ranges(void **state)
{
    (void)state;
    size_t n = sizeof engine_ranges / sizeof *engine_ranges;
    assert_int_equal(cat_engine_n_terms(), n);
    cat_engine_term t;
    assert_int_equal(cat_engine_term_get(n, &t), SS_EINVAL);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(cat_engine_term_get(i, &t), 0);
        assert_string_equal(t.section, engine_ranges[i].section);
        assert_string_equal(t.key, engine_ranges[i].key);
        assert_true(t.lo == engine_ranges[i].lo && t.hi == engine_ranges[i].hi);
        assert_int_equal(t.per_gpu, !strcmp(t.section, "host"));
        unsigned line = engine_line_of(t.key);
        char repl[128];
        const double bounds[2] = {t.lo, t.hi};
        for (int b = 0; b < 2; b++) {
            snprintf(repl, sizeof repl, "%s = %.17g", t.key, bounds[b]);
            const char *d = make_engine(ini_text(engine_lines, t.key, repl, NULL));
            catalog *c = NULL;
            ss_errbuf eb = {""};
            if (catalog_load(&c, d, &eb))
                fail_msg("%s at its bound: %s", repl, eb.msg);
            double x;
            memcpy(&x, (const char *)catalog_engine_at(c, 0) + t.off, sizeof x);
            assert_true(x == bounds[b] * t.scale);
            catalog_destroy(&c);
        }
        snprintf(repl, sizeof repl, "%s = %s", t.key, engine_ranges[i].below);
        char tail[160];
        snprintf(tail, sizeof tail, "%s.%s: %s", t.section, t.key, engine_ranges[i].below_says);
        expect_engine_error(t.key, repl, NULL, line, tail);
        snprintf(repl, sizeof repl, "%s = %s", t.key, engine_ranges[i].above);
        snprintf(tail, sizeof tail, "%s.%s: %s", t.section, t.key, engine_ranges[i].above_says);
        expect_engine_error(t.key, repl, NULL, line, tail);
    }
    expect_engine_error("iter_fixed_us", "iter_fixed_us = 1e12", NULL, 6,
                        "host.iter_fixed_us: out of range [0, 1e6]");
    expect_engine_error("iter_fixed_us", "iter_fixed_us = 1e300", NULL, 6,
                        "host.iter_fixed_us: out of range [0, 1e6]");
    expect_engine_error("frontend_ms", "frontend_ms = 9.3e12", NULL, 21,
                        "frontend.frontend_ms: out of range [0, 600000]");
    expect_engine_error("attn_speed", "attn_speed = 1e-300", NULL, 15,
                        "kernels.attn_speed: out of range [0.01, 10]");
    expect_engine_error("eff", "eff = 1e-300", NULL, 18, "allreduce.eff: out of range [0.01, 1]");
    expect_engine_error("moe_eff", "moe_eff = 1e-300", NULL, 14,
                        "kernels.moe_eff: out of range [0.01, 1]");
    expect_engine_error(NULL, NULL, "iter_per_token_us = 101\n", 24,
                        "gpu.tgpu.iter_per_token_us: out of range [0, 100]");
    expect_engine_error(NULL, NULL, "launch_us = 1e300\n", 24,
                        "gpu.tgpu.launch_us: out of range [0, 1000]");
    expect_engine_error(NULL, NULL, "op_floor_us = -1\n", 24,
                        "gpu.tgpu.op_floor_us: '-1' is not a number >= 0");
}

/* Every field but the path (and the description, compared by the caller). */
static void assert_engine_equal(const cat_engine *a, const cat_engine *b)
{
    assert_string_equal(a->name, b->name);
    assert_string_equal(a->overlap_name, b->overlap_name);
    assert_int_equal(a->overlap, b->overlap);
    assert_memory_equal(&a->host, &b->host, sizeof a->host);
    assert_int_equal(a->fuse_add_norm, b->fuse_add_norm);
    assert_int_equal(a->fuse_silu_mul, b->fuse_silu_mul);
    assert_memory_equal(&a->moe_eff, &b->moe_eff, sizeof(double));
    assert_string_equal(a->allreduce_name, b->allreduce_name);
    assert_int_equal(a->allreduce, b->allreduce);
    assert_memory_equal(&a->allreduce_eff, &b->allreduce_eff, sizeof(double));
    assert_memory_equal(&a->allreduce_hop_s, &b->allreduce_hop_s, sizeof(double));
    assert_memory_equal(&a->frontend_s, &b->frontend_s, sizeof(double));
    assert_int_equal(a->n_gpus, b->n_gpus);
    for (uint32_t i = 0; i < a->n_gpus; i++) {
        assert_string_equal(a->per_gpu[i].gpu, b->per_gpu[i].gpu);
        assert_memory_equal(&a->per_gpu[i].host, &b->per_gpu[i].host, sizeof a->host);
    }
}

/* Write e with cat_engine_write, load the file back as the only engine of a profiles
 * directory, compare, and return the text written (static). */
static const char *write_and_reload(const cat_engine *e, const char *want_description)
{
    static char text[8192];
    FILE *f = fmemopen(text, sizeof text, "w");
    assert_non_null(f);
    char header[1024];
    snprintf(header, sizeof header, "fitted on test data\nsecond line\n%0300d\n", 7);
    for (int i = 0; i < 40; i++) /* a long line of words */
        strcat(header, "word ");
    assert_int_equal(cat_engine_write(f, e, header), 0);
    fclose(f);
    catalog *c = NULL;
    ss_errbuf eb = {""};
    if (catalog_load(&c, make_engine(text), &eb))
        fail_msg("%s\n--- written:\n%s", eb.msg, text);
    assert_int_equal(catalog_n_engines(c), 1);
    const cat_engine *back = catalog_engine_at(c, 0);
    assert_engine_equal(back, e);
    assert_string_equal(back->description, want_description);
    catalog_destroy(&c);
    return text;
}

/* The writer's profile loads back with every field equal to the bit: the shipped engine, the
 * test engine (other choices of every enum and boolean, a [gpu.NAME] section), and values a
 * fit produces (no short decimal form, zeros, a description with a semicolon). */
static void test_engine_write(void **state)
{
    (void)state;
    catalog *c = load_shipped();
    cat_engine e = *catalog_engine(c, "vllm-eager");
    const char *text = write_and_reload(&e, e.description);
    assert_prefix(text, "; fitted on test data\n; second line\n; 0000");
    assert_non_null(strstr(text, "0007\n; word word "));
    assert_non_null(strstr(text, "word\n\n[engine]\nname = vllm-eager\n"));
    for (const char *p = text; *p; p += strcspn(p, "\n") + 1)
        assert_true(strcspn(p, "\n") <= 100);
    assert_non_null(strstr(text, "\niter_per_token_us = 0.5\n"));
    assert_non_null(strstr(text, "\n[gpu.h100-sxm]\niter_fixed_us = 2500\n"));
    catalog_destroy(&c);

    const char *d = make_engine(ini_text(engine_lines, NULL, NULL, NULL));
    assert_int_equal(catalog_load(&c, d, &(ss_errbuf){""}), 0);
    e = *catalog_engine_at(c, 0);
    write_and_reload(&e, "teng");
    catalog_destroy(&c);

    e.host.iter_fixed_s = 1.0 / 3.0 * 1e-3;
    e.host.iter_per_seq_s = 0;
    e.host.op_floor_s = 7.123456789012345e-6;
    e.allreduce_hop_s = (0.1 + 0.2) * 1e-6; /* within [0, 1000] us */
    e.frontend_s = 12.3456e-3;
    e.moe_eff = 0.7;
    e.n_gpus = 0;
    snprintf(e.description, sizeof e.description, "fitted; to\ntest runs");
    write_and_reload(&e, "fitted, to test runs");
    assert_int_equal(cat_engine_write(NULL, &e, NULL), SS_EINVAL);
    tu_assert_no_leaks();
}

/* catalog_engine_put inserts in name order (lookups still work), replaces an engine of the
 * same name, copies the path, takes one of the catalog's own engines, refuses a bad name,
 * and leaves the catalog as it was when out of memory. */
static void test_engine_put(void **state)
{
    (void)state;
    catalog *c = load_shipped();
    ss_errbuf eb = {""};
    size_t n0 = catalog_n_engines(c);
    cat_engine e = *catalog_engine(c, "vllm-eager");
    const char *names[] = {"zzz", "aaa", "vllm-f"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(e.name, sizeof e.name, "%s", names[i]);
        e.path = i == 0 ? "somewhere/zzz.ini" : NULL;
        e.host.iter_fixed_s = (double)i;
        assert_int_equal(catalog_engine_put(c, &e, &eb), 0);
    }
    assert_int_equal(catalog_n_engines(c), n0 + 3);
    for (size_t i = 1; i < catalog_n_engines(c); i++)
        assert_true(strcmp(catalog_engine_at(c, i - 1)->name, catalog_engine_at(c, i)->name) < 0);
    for (size_t i = 0; i < 3; i++)
        assert_true(catalog_engine(c, names[i])->host.iter_fixed_s == (double)i);
    const cat_engine *z = catalog_engine(c, "zzz");
    assert_string_equal(z->path, "somewhere/zzz.ini");
    assert_ptr_not_equal(z->path, e.path);
    assert_null(catalog_engine(c, "aaa")->path);
    assert_non_null(catalog_engine(c, "vllm-eager")->path);
    /* replace */
    snprintf(e.name, sizeof e.name, "aaa");
    e.host.iter_fixed_s = 42;
    e.path = "p.ini";
    assert_int_equal(catalog_engine_put(c, &e, &eb), 0);
    assert_int_equal(catalog_n_engines(c), n0 + 3);
    assert_true(catalog_engine(c, "aaa")->host.iter_fixed_s == 42);
    assert_string_equal(catalog_engine(c, "aaa")->path, "p.ini");
    /* one of its own */
    assert_int_equal(catalog_engine_put(c, catalog_engine(c, "zzz"), &eb), 0);
    assert_string_equal(catalog_engine(c, "zzz")->path, "somewhere/zzz.ini");
    snprintf(e.name, sizeof e.name, "Bad Name");
    assert_int_equal(catalog_engine_put(c, &e, &eb), SS_EINVAL);
    assert_prefix(eb.msg, "engine name 'Bad Name' is not a name");
    /* out of memory: nothing changes */
    snprintf(e.name, sizeof e.name, "new");
    for (uint64_t k = 1;; k++) {
        ss_alloc_fail_after(k);
        int rc = catalog_engine_put(c, &e, &eb);
        ss_alloc_fail_after(0);
        if (!rc)
            break;
        assert_int_equal(rc, SS_ENOMEM);
        assert_int_equal(catalog_n_engines(c), n0 + 3);
        assert_null(catalog_engine(c, "new"));
    }
    assert_int_equal(catalog_n_engines(c), n0 + 4);
    catalog_destroy(&c);
    tu_assert_no_leaks();
}

/* }====================================================================== */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_gpus),
        cmocka_unit_test(test_shipped_engine),
        cmocka_unit_test(test_default_engine),
        cmocka_unit_test_teardown(test_engine_file, teardown_tmp),
        cmocka_unit_test_teardown(test_engine_errors, teardown_tmp),
        cmocka_unit_test_teardown(test_engine_ranges, teardown_tmp),
        cmocka_unit_test_teardown(test_engine_write, teardown_tmp),
        cmocka_unit_test(test_engine_put),
        cmocka_unit_test(test_shipped_models),
        cmocka_unit_test(test_params_and_kv),
        cmocka_unit_test(test_find),
        cmocka_unit_test_teardown(test_default_dir, teardown_tmp),
        cmocka_unit_test_teardown(test_fixture_loads, teardown_tmp),
        cmocka_unit_test_teardown(test_io_errors, teardown_tmp),
        cmocka_unit_test_teardown(test_unknown_names, teardown_tmp),
        cmocka_unit_test_teardown(test_bad_values, teardown_tmp),
        cmocka_unit_test_teardown(test_link_efficiency, teardown_tmp),
        cmocka_unit_test_teardown(test_shape_rules, teardown_tmp),
        cmocka_unit_test_teardown(test_structure_errors, teardown_tmp),
        cmocka_unit_test_teardown(test_duplicate_names, teardown_tmp),
        cmocka_unit_test_teardown(test_alloc_failures, teardown_tmp),
    };
    return cmocka_run_group_tests_name("catalog", tests, NULL, NULL);
}
