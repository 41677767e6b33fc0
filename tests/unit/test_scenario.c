/* Scenario files: a full multi-tenant file parses into the expected struct, relative paths
 * resolve against the file's folder, every error kind carries its exact FILE:LINE: prefix,
 * --set on existing and new tenants and on policy parameters, the whole-scenario checks, the
 * write/load round trip, the shipped example, and allocation-failure injection. */
#include "support/test_util.h"

#include "core/ss_alloc.h"
#include "scenario/scenario.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* {======================================================================
 * Helpers
 * ======================================================================= */

#define assert_prefix(msg, prefix)                                                             \
    do {                                                                                       \
        if (strncmp((msg), (prefix), strlen(prefix)))                                          \
            fail_msg("message '%s'\n  does not start with '%s'", (msg), (prefix));             \
    } while (0)

static int teardown_tmp(void **state)
{
    (void)state;
    tu_tmpdir_cleanup();
    return 0;
}

static scn_scenario *create(void)
{
    scn_scenario *s = NULL;
    assert_int_equal(scn_create(&s), SS_OK);
    assert_non_null(s);
    return s;
}

/* The canonical path of the test's temporary folder (static). */
static const char *real_tmp(void)
{
    static char buf[PATH_MAX];
    assert_non_null(realpath(tu_tmpdir(), buf));
    return buf;
}

/* A file with line numbers as commented: the reference for test_full_file and others. */
static const char full_text[] =
    "; a scenario with every key\n"                      /* 1 */
    "[cluster]\n"                                         /* 2 */
    "gpu = h100-sxm\n"                                    /* 3 */
    "nodes = 2\n"                                         /* 4 */
    "gpus_per_node = 8\n"                                 /* 5 */
    "\n"                                                  /* 6 */
    "[policy]\n"                                          /* 7 */
    "routing = lor\n"                                     /* 8 */
    "batching = sarathi\n"                                /* 9 */
    "cluster = llumnix-tiers\n"                           /* 10 */
    "cost = roofline\n"                                   /* 11 */
    "token_budget = 1024\n"                               /* 12 */
    "max_num_seqs = 64\n"                                 /* 13 */
    "\n"                                                  /* 14 */
    "[run]\n"                                             /* 15 */
    "seed = 42\n"                                         /* 16 */
    "duration_s = 3600\n"                                 /* 17 */
    "warmup_s = 300.5\n"                                  /* 18 */
    "db = out/x.db\n"                                     /* 19 */
    "servegen_dir = sg\n"                                 /* 20 */
    "\n"                                                  /* 21 */
    "[engine]\n"                                          /* 22 */
    "gpu_mem_util = 0.85\n"                               /* 23 */
    "block_size = 32\n"                                   /* 24 */
    "max_model_len = 8192\n"                              /* 25 */
    "swap_space_gib = 0\n"                                /* 26 */
    "\n"                                                  /* 27 */
    "[tenant.chat]\n"                                     /* 28 */
    "model = llama-2-7b\n"                                /* 29 */
    "tp = 2\n"                                            /* 30 */
    "pp = 2\n"                                            /* 31 */
    "replicas = 2\n"                                      /* 32 */
    "max_replicas = 4\n"                                  /* 33 */
    "trace = traces/shared.csv\n"                         /* 34 */
    "trace_format = native\n"                             /* 35 */
    "trace_spread = true\n"                               /* 36 */
    "split = class\n"                                     /* 37 */
    "class = 0:1023\n"                                    /* 38 */
    "rate_scale = 1.5\n"                                  /* 39 */
    "limit = 1000\n"                                      /* 40 */
    "tiers = 3\n"                                         /* 41 */
    "tier_mix = weights:0.2,0.3,0.5\n"                    /* 42 */
    "sla_ttft_ms = 500, 1000, 2000\n"                     /* 43 */
    "sla_tbt_ms = 100\n"                                  /* 44 */
    "sla_e2e_ms = 0,30000,60000\n"                        /* 45 */
    "\n"                                                  /* 46 */
    "[tenant.long-docs]\n"                                /* 47 */
    "model = llama-3-8b\n"                                /* 48 */
    "trace = ./traces/shared.csv\n"                       /* 49 */
    "trace_format = native\n"                             /* 50 */
    "trace_spread = true\n"                               /* 51 */
    "split = class\n"                                     /* 52 */
    "class = 1024:100000\n"                               /* 53 */
    "rate_scale = 1.5\n"                                  /* 54 */
    "duration_s = 1800\n"                                 /* 55 */
    "tier_mix = powerlaw\n"                               /* 56 */
    "tier_alpha = 2\n"                                    /* 57 */
    "\n"                                                  /* 58 */
    "[tenant.batch]\n"                                    /* 59 */
    "model = mistral-7b\n"                                /* 60 */
    "replicas = 3\n"                                      /* 61 */
    "synthetic = \"rate=2 duration=600 prompt=fixed:100 output=fixed:10\"  ; why\n" /* 62 */
    "weight = 2.5\n"                                      /* 63 */
    "\n"                                                  /* 64 */
    "[tenant.sg]\n"                                       /* 65 */
    "model = qwen2.5-7b\n"                                /* 66 */
    "servegen = language/m-mid/17\n"                      /* 67 */
    "servegen_start_s = 3600\n";                          /* 68 */

static scn_scenario *load_full(void)
{
    scn_scenario *s = create();
    ss_errbuf eb = {""};
    const char *path = tu_write_file(tu_tmpdir(), "full.ini", full_text);
    if (scn_load(s, path, &eb))
        fail_msg("loading the full scenario: %s", eb.msg);
    return s;
}

/* Write text to tmpdir/bad.ini, load it into a fresh scenario, expect rc and a message equal
 * to "PATH" + want. */
static void expect_load(const char *text, int want_rc, const char *want)
{
    const char *path = tu_write_file(tu_tmpdir(), "bad.ini", text);
    char full[2048];
    snprintf(full, sizeof full, "%s%s", path, want);
    scn_scenario *s = create();
    ss_errbuf eb = {""};
    int rc = scn_load(s, path, &eb);
    if (rc != want_rc)
        fail_msg("rc %d, want %d; message '%s'", rc, want_rc, eb.msg);
    assert_string_equal(eb.msg, full);
    scn_destroy(&s);
    assert_null(s);
    tu_assert_no_leaks();
}

static void expect_set(scn_scenario *s, const char *assignment, const char *want)
{
    ss_errbuf eb = {""};
    uint32_t n = s->n_tenants;
    assert_int_equal(scn_set(s, assignment, &eb), SS_EPARSE);
    assert_string_equal(eb.msg, want);
    assert_int_equal(s->n_tenants, n); /* a failed --set creates no tenant */
}

static void expect_check_fails(const scn_scenario *s, const char *want)
{
    ss_errbuf eb = {""};
    assert_int_equal(scn_check(s, &eb), SS_EINVAL);
    assert_string_equal(eb.msg, want);
}

static void set_ok(scn_scenario *s, const char *assignment)
{
    ss_errbuf eb = {""};
    if (scn_set(s, assignment, &eb))
        fail_msg("--set %s: %s", assignment, eb.msg);
}

static void append_kv(void *ud, const char *key, const char *value)
{
    char *buf = ud;
    size_t used = strlen(buf);
    snprintf(buf + used, 4096 - used, "%s=%s\n", key, value);
}

/* Equal scenarios: every field but the path and the tenants' header lines. */
static void assert_same(const scn_scenario *a, const scn_scenario *b)
{
    assert_string_equal(a->gpu, b->gpu);
    assert_int_equal(a->nodes, b->nodes);
    assert_int_equal(a->gpus_per_node, b->gpus_per_node);
    assert_string_equal(a->routing, b->routing);
    assert_string_equal(a->batching, b->batching);
    assert_string_equal(a->cluster, b->cluster);
    assert_string_equal(a->cost, b->cost);
    assert_true(a->seed == b->seed && a->duration_s == b->duration_s);
    assert_true(a->warmup_s == b->warmup_s && a->gpu_mem_util == b->gpu_mem_util);
    assert_string_equal(a->db, b->db);
    assert_string_equal(a->servegen_dir, b->servegen_dir);
    assert_true(a->block_size == b->block_size && a->max_model_len == b->max_model_len);
    assert_true(a->swap_space_gib == b->swap_space_gib);
    char pa[4096] = "", pb[4096] = "";
    ss_params_each(a->params, append_kv, pa);
    ss_params_each(b->params, append_kv, pb);
    assert_string_equal(pa, pb);
    assert_int_equal(a->n_tenants, b->n_tenants);
    for (uint32_t i = 0; i < a->n_tenants; i++) {
        static scn_tenant ta, tb;
        memcpy(&ta, &a->tenants[i], sizeof ta);
        memcpy(&tb, &b->tenants[i], sizeof tb);
        ta.line = tb.line = 0;
        assert_string_equal(ta.name, tb.name);
        assert_string_equal(ta.trace, tb.trace);
        assert_memory_equal(&ta, &tb, sizeof ta);
    }
}

/* {======================================================================
 * Parsing
 * ======================================================================= */

static void test_defaults(void **state)
{
    (void)state;
    scn_scenario *s = create();
    assert_string_equal(s->gpu, "a100-80g");
    assert_int_equal(s->nodes, 0);
    assert_string_equal(s->routing, "rr");
    assert_string_equal(s->batching, "vllm");
    assert_string_equal(s->cluster, "container");
    assert_string_equal(s->cost, "roofline");
    assert_int_equal(s->seed, 1);
    assert_string_equal(s->db, "results/slicesim.db");
    assert_true(s->gpu_mem_util == 0.9 && s->swap_space_gib == 4);
    assert_int_equal(s->block_size, 16);
    assert_int_equal(s->max_model_len, 16384);
    assert_int_equal(s->n_tenants, 0);
    assert_int_equal(ss_params_count(s->params), 0);
    set_ok(s, "tenant.t.model=llama-2-7b");
    const scn_tenant *t = scn_tenant_find(s, "t");
    assert_non_null(t);
    assert_null(scn_tenant_find(s, "u"));
    assert_int_equal(t->line, 0);
    assert_true(t->tp == 1 && t->pp == 1 && t->replicas == 1 && t->max_replicas == 1);
    assert_string_equal(t->trace_format, "auto");
    assert_string_equal(t->split, "none");
    assert_string_equal(t->tier_mix, "uniform");
    assert_true(t->weight == 1 && t->rate_scale == 1 && t->tier_alpha == 1);
    assert_int_equal(t->tiers, 1);
    assert_true(t->sla[9].ttft_ms == 0 && t->sla[0].e2e_ms == 0);
    scn_destroy(&s);
    scn_destroy(&s); /* NULL-safe */
    tu_assert_no_leaks();
}

static void test_full_file(void **state)
{
    (void)state;
    scn_scenario *s = load_full();
    char want[PATH_MAX + 64];
    assert_string_equal(s->gpu, "h100-sxm");
    assert_true(s->nodes == 2 && s->gpus_per_node == 8);
    assert_string_equal(s->routing, "lor");
    assert_string_equal(s->batching, "sarathi");
    assert_string_equal(s->cluster, "llumnix-tiers");
    assert_int_equal(ss_params_count(s->params), 2);
    assert_string_equal(ss_params_get(s->params, "token_budget"), "1024");
    assert_string_equal(ss_params_get(s->params, "max_num_seqs"), "64");
    assert_int_equal(scn_param_line(s, "token_budget"), 12);
    assert_int_equal(scn_param_line(s, "max_num_seqs"), 13);
    assert_int_equal(scn_param_line(s, "routing"), 0);
    assert_int_equal(s->seed, 42);
    assert_true(s->duration_s == 3600 && s->warmup_s == 300.5);
    assert_string_equal(s->db, "out/x.db"); /* an output: from the current directory */
    snprintf(want, sizeof want, "%s/sg", real_tmp());
    assert_string_equal(s->servegen_dir, want);
    assert_true(s->gpu_mem_util == 0.85 && s->swap_space_gib == 0);
    assert_true(s->block_size == 32 && s->max_model_len == 8192);
    assert_int_equal(s->n_tenants, 4);
    ss_errbuf eb = {""};
    if (scn_check(s, &eb))
        fail_msg("scn_check: %s", eb.msg);
    scn_destroy(&s);
    tu_assert_no_leaks();
}

static void test_full_file_tenants(void **state)
{
    (void)state;
    scn_scenario *s = load_full();
    char want[PATH_MAX + 64];
    const scn_tenant *c = &s->tenants[0];
    assert_string_equal(c->name, "chat");
    assert_int_equal(c->line, 28);
    assert_string_equal(c->model, "llama-2-7b");
    assert_true(c->tp == 2 && c->pp == 2 && c->replicas == 2 && c->max_replicas == 4);
    snprintf(want, sizeof want, "%s/traces/shared.csv", real_tmp());
    assert_string_equal(c->trace, want);
    assert_string_equal(c->trace_format, "native");
    assert_int_equal(c->trace_spread, 1);
    assert_string_equal(c->split, "class");
    assert_true(c->class_lo == 0 && c->class_hi == 1023);
    assert_true(c->rate_scale == 1.5 && c->limit == 1000 && c->tiers == 3);
    assert_string_equal(c->tier_mix, "weights:0.2,0.3,0.5");
    assert_true(c->sla[0].ttft_ms == 500 && c->sla[1].ttft_ms == 1000);
    assert_true(c->sla[2].ttft_ms == 2000 && c->sla[3].ttft_ms == 0);
    assert_true(c->sla[0].tbt_p99_ms == 100 && c->sla[9].tbt_p99_ms == 100);
    assert_true(c->sla[0].e2e_ms == 0 && c->sla[2].e2e_ms == 60000 && c->sla[3].e2e_ms == 0);

    const scn_tenant *l = scn_tenant_find(s, "long-docs");
    assert_ptr_equal(l, &s->tenants[1]);
    assert_int_equal(l->line, 47);
    assert_string_equal(l->trace, want); /* "./traces/shared.csv" */
    assert_true(l->class_lo == 1024 && l->class_hi == 100000);
    assert_true(l->duration_s == 1800 && l->tier_alpha == 2 && l->replicas == 1);
    assert_true(l->max_replicas == 1 && l->tiers == 1);

    const scn_tenant *b = &s->tenants[2];
    assert_int_equal(b->line, 59);
    assert_string_equal(b->synthetic, "rate=2 duration=600 prompt=fixed:100 output=fixed:10");
    assert_true(b->replicas == 3 && b->max_replicas == 3); /* follows replicas */
    assert_true(b->weight == 2.5 && b->trace[0] == '\0');

    const scn_tenant *g = &s->tenants[3];
    assert_string_equal(g->servegen, "language/m-mid/17");
    assert_true(g->servegen_start_s == 3600);
    scn_destroy(&s);
    tu_assert_no_leaks();
}

/* Relative paths resolve against the scenario file's folder (made absolute), whatever the
 * current directory; absolute ones and db stay as written; --set keeps them as given. */
static void test_relative_paths(void **state)
{
    (void)state;
    char sub[PATH_MAX], want[PATH_MAX + 64], cwd[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/exp", tu_tmpdir());
    assert_int_equal(mkdir(sub, 0755), 0);
    tu_write_file(sub, "s.ini", "[run]\nservegen_dir = ../../sg\ndb = r.db\n"
                                "[tenant.a]\ntrace = ../t.csv\n[tenant.b]\ntrace = /abs/t.csv\n"
                                "[tenant.c]\ntrace = ./x/y.csv\n");
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(tu_tmpdir()), 0);
    for (int pass = 0; pass < 2; pass++) {
        scn_scenario *s = create();
        ss_errbuf eb = {""};
        char abs[PATH_MAX + 16];
        snprintf(abs, sizeof abs, "%s/exp/s.ini", real_tmp());
        /* once by a relative path from tmpdir, once by an absolute one */
        assert_int_equal(scn_load(s, pass ? abs : "exp/s.ini", &eb), SS_OK);
        snprintf(want, sizeof want, "%s/t.csv", real_tmp());
        assert_string_equal(s->tenants[0].trace, want);
        assert_string_equal(s->tenants[1].trace, "/abs/t.csv");
        snprintf(want, sizeof want, "%s/exp/x/y.csv", real_tmp());
        assert_string_equal(s->tenants[2].trace, want);
        snprintf(want, sizeof want, "%s", real_tmp()); /* exp/../../sg: tmpdir's parent */
        *strrchr(want, '/') = '\0';
        snprintf(want + strlen(want), sizeof want - strlen(want), "/sg");
        assert_string_equal(s->servegen_dir, want);
        assert_string_equal(s->db, "r.db");
        set_ok(s, "tenant.a.trace=rel/t.csv");
        assert_string_equal(s->tenants[0].trace, "rel/t.csv");
        scn_destroy(&s);
    }
    assert_int_equal(chdir(cwd), 0);
    tu_assert_no_leaks();
}

/* Quotes, inline comments, blanks, a BOM and an empty file. */
static void test_syntax_details(void **state)
{
    (void)state;
    const char *path = tu_write_file(tu_tmpdir(), "q.ini",
                                     "\xEF\xBB\xBF[run]\n  seed=7 ; comment\n# comment\n"
                                     "db = \" a b.db \"\n[ tenant.x ]\n");
    scn_scenario *s = create();
    ss_errbuf eb = {""};
    assert_int_equal(scn_load(s, path, &eb), SS_EPARSE);
    assert_string_equal(strstr(eb.msg, ":5:"), ":5: section [ tenant.x ]: unknown section "
                        "(did you mean [tenant.NAME]?) (known: cluster, policy, run, engine, "
                        "kvpool, tenant.NAME)");
    assert_int_equal(s->seed, 7);
    assert_string_equal(s->db, "a b.db");
    scn_destroy(&s);

    s = create();
    path = tu_write_file(tu_tmpdir(), "empty.ini", "");
    assert_int_equal(scn_load(s, path, &eb), SS_OK);
    assert_string_equal(s->path, path);
    char want[1100];
    snprintf(want, sizeof want, "%s: no tenant (add a [tenant.NAME] section)", path);
    expect_check_fails(s, want);
    /* An empty [tenant.NAME] section creates the tenant. */
    path = tu_write_file(tu_tmpdir(), "t.ini", "; x\n[tenant.only]\n");
    assert_int_equal(scn_load(s, path, &eb), SS_OK);
    assert_int_equal(s->n_tenants, 1);
    assert_int_equal(s->tenants[0].line, 2);
    snprintf(want, sizeof want, "%s:2: tenant.only: model: missing", path);
    expect_check_fails(s, want);
    scn_destroy(&s);
    tu_assert_no_leaks();
}

/* {======================================================================
 * Errors
 * ======================================================================= */

static void test_structure_errors(void **state)
{
    (void)state;
    expect_load("[run]\nseed = 1\n\n[polcy]\n", SS_EPARSE,
                ":4: section [polcy]: unknown section (did you mean [policy]?) (known: cluster, "
                "policy, run, engine, kvpool, tenant.NAME)");
    expect_load("[run]\nsed = 1\n", SS_EPARSE, ":2: run.sed: unknown key (did you mean seed?)");
    expect_load("[tenant.chat]\nrate_scal = 2\n", SS_EPARSE,
                ":2: tenant.chat.rate_scal: unknown key (did you mean rate_scale?)");
    /* a hint only where one key is near: within two edits and fewer than half the letters */
    expect_load("[run]\nduration = 60\n", SS_EPARSE,
                ":2: run.duration: unknown key (did you mean duration_s?)");
    expect_load("[tenant.chat]\nmodle = x\n", SS_EPARSE,
                ":2: tenant.chat.modle: unknown key (did you mean model?)");
    expect_load("[run]\nxy = 1\n", SS_EPARSE, ":2: run.xy: unknown key");
    expect_load("[tenants.chat]\n", SS_EPARSE,
                ":1: section [tenants.chat]: unknown section (did you mean [tenant.NAME]?) "
                "(known: cluster, policy, run, engine, kvpool, tenant.NAME)");
    expect_load("[kvpol]\n", SS_EPARSE,
                ":1: section [kvpol]: unknown section (did you mean [kvpool]?) (known: cluster, "
                "policy, run, engine, kvpool, tenant.NAME)");
    expect_load("[zz]\n", SS_EPARSE,
                ":1: section [zz]: unknown section (known: cluster, policy, run, engine, kvpool, "
                "tenant.NAME)");
    expect_load("[cluster]\nsplit = rr\n", SS_EPARSE, ":2: cluster.split: unknown key");
    expect_load("[run]\nseed = 1\nseed = 2\n", SS_EPARSE,
                ":3: run.seed: set twice (first on line 2)");
    expect_load("[run]\nseed = 1\n[engine]\nblock_size = 8\n[run]\nseed = 2\n", SS_EPARSE,
                ":6: run.seed: set twice (first on line 2)");
    expect_load("[tenant.a]\ntp = 1\n[tenant.b]\ntp = 1\n[tenant.a]\ntp = 2\n", SS_EPARSE,
                ":6: tenant.a.tp: set twice (first on line 2)");
    expect_load("[policy]\nfoo = 1\nbar = 2\nfoo = 3\n", SS_EPARSE,
                ":4: policy.foo: set twice (first on line 2)");
    expect_load("seed = 1\n", SS_EPARSE, ":1: seed: key outside any section");
    const char *name_rule = ": expected [tenant.NAME], NAME of 1 to 47 characters from "
                            "[a-z0-9._-]";
    char want[256];
    snprintf(want, sizeof want, ":2: section [tenant.Chat]%s", name_rule);
    expect_load("\n[tenant.Chat]\n", SS_EPARSE, want);
    snprintf(want, sizeof want, ":1: section [tenant]%s", name_rule);
    expect_load("[tenant]\nmodel = x\n", SS_EPARSE, want);
    snprintf(want, sizeof want, ":1: section [tenant.]%s", name_rule);
    expect_load("[tenant.]\n", SS_EPARSE, want);
    snprintf(want, sizeof want, ":1: section [tenant.%s]%s",
             "a-tenant-name-that-is-far-too-long-for-the-name-field", name_rule);
    expect_load("[tenant.a-tenant-name-that-is-far-too-long-for-the-name-field]\n", SS_EPARSE,
                want);
    expect_load("[run]\njust some words\n", SS_EPARSE,
                ":2: syntax error (expected [section] or key = value)");
    expect_load("[run\n", SS_EPARSE, ":1: syntax error (expected [section] or key = value)");
    /* The earlier of a syntax error and a key error is reported. */
    expect_load("[run]\nwords\nsed = 1\n", SS_EPARSE,
                ":2: syntax error (expected [section] or key = value)");
    char text[400];
    snprintf(text, sizeof text, "[run]\ndb = %0250d\n", 0);
    expect_load(text, SS_EPARSE, ":2: line longer than 199 characters");
    expect_load("[policy]\nMax_Seqs = 1\n", SS_EPARSE,
                ":2: policy.Max_Seqs: expected a parameter name of 1 to 47 characters from "
                "[a-z0-9._-]");
    expect_load("[policy]\nmax_seqs =\n", SS_EPARSE,
                ":2: policy.max_seqs: expected a non-empty value of at most 511 characters "
                "without '\"' or ';' after a blank, got ''");
}

static void test_too_many_tenants(void **state)
{
    (void)state;
    static char text[SS_MAX_TENANTS * 32 + 64];
    size_t used = 0;
    for (int i = 0; i <= SS_MAX_TENANTS; i++)
        used += (size_t)snprintf(text + used, sizeof text - used, "[tenant.t%d]\n", i);
    expect_load(text, SS_EPARSE, ":65: section [tenant.t64]: too many tenants (at most 64)");
    scn_scenario *s = create();
    for (int i = 0; i < SS_MAX_TENANTS; i++) {
        char a[64];
        snprintf(a, sizeof a, "tenant.t%d.tp=1", i);
        set_ok(s, a);
    }
    expect_set(s, "tenant.one-more.tp=1",
               "--set: section [tenant.one-more]: too many tenants (at most 64)");
    set_ok(s, "tenant.t3.tp=2"); /* existing ones still take values */
    scn_destroy(&s);
    tu_assert_no_leaks();
}

static void test_bad_values(void **state)
{
    (void)state;
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"[tenant.chat]\ntp = x", ":2: tenant.chat.tp: expected an integer from 1 to 64, got 'x'"},
        {"[tenant.chat]\ntp = 0", ":2: tenant.chat.tp: out of range [1, 64], got '0'"},
        {"[cluster]\nnet_efficiency = 1.5",
         ":2: cluster.net_efficiency: out of range [0, 1], got '1.5'"},
        {"[cluster]\nnvlink_efficiency = -0.1",
         ":2: cluster.nvlink_efficiency: out of range [0, 1], got '-0.1'"},
        {"[tenant.chat]\ntp = 1.5", ":2: tenant.chat.tp: expected an integer from 1 to 64, got "
                                    "'1.5'"},
        {"[tenant.c]\npp = 17", ":2: tenant.c.pp: out of range [1, 16], got '17'"},
        {"[tenant.c]\nreplicas = 0", ":2: tenant.c.replicas: out of range [1, 4096], got '0'"},
        {"[tenant.c]\ntiers = 11", ":2: tenant.c.tiers: out of range [1, 10], got '11'"},
        {"[tenant.c]\nlimit = -1", ":2: tenant.c.limit: out of range [0, 9223372036854775807], "
                                   "got '-1'"},
        {"[run]\nseed = 1e3", ":2: run.seed: expected an integer >= 0, got '1e3'"},
        {"[run]\nseed = 18446744073709551615", ":2: run.seed: out of range [0, "
                                                "9223372036854775807], got '18446744073709551615'"},
        {"[engine]\nmax_model_len = 1e20", ":2: engine.max_model_len: out of range [2, "
                                            "1073741824], got '1e20'"},
        {"[tenant.c]\nweight = 1e999", ":2: tenant.c.weight: out of range (0, inf), got '1e999'"},
        {"[engine]\ngpu_mem_util = 0", ":2: engine.gpu_mem_util: out of range (0, 1], got '0'"},
        {"[engine]\ngpu_mem_util = 1.01", ":2: engine.gpu_mem_util: out of range (0, 1], "
                                          "got '1.01'"},
        {"[engine]\nblock_size = 0", ":2: engine.block_size: out of range [1, 1024], got '0'"},
        {"[tenant.c]\nrate_scale = 0", ":2: tenant.c.rate_scale: out of range (0, inf), got '0'"},
        {"[tenant.c]\nweight = -2", ":2: tenant.c.weight: out of range (0, inf), got '-2'"},
        {"[run]\nduration_s = -1", ":2: run.duration_s: out of range [0, inf), got '-1'"},
        {"[run]\nwarmup_s = nan", ":2: run.warmup_s: expected a number >= 0, got 'nan'"},
        {"[tenant.c]\nduration_s = 1h", ":2: tenant.c.duration_s: expected a number >= 0, got "
                                        "'1h'"},
        {"[tenant.c]\ntrace_spread = yes", ":2: tenant.c.trace_spread: expected true or false, "
                                           "got 'yes'"},
        {"[policy]\ncluster = slices", ":2: policy.cluster: expected one of container, llumnix, "
                                       "llumnix-tiers, got 'slices'"},
        {"[tenant.c]\nsplit = llumnix", ":2: tenant.c.split: expected one of none, rr, random, "
                                        "class, got 'llumnix'"},
        {"[tenant.c]\nsplit = r", ":2: tenant.c.split: expected one of none, rr, random, class, "
                                  "got 'r'"},
        {"[tenant.c]\ntrace_format = csv", ":2: tenant.c.trace_format: expected one of auto, "
                                           "native, azure, vidur, burstgpt, mooncake, got 'csv'"},
        {"[tenant.c]\nclass = 5:1", ":2: tenant.c.class: expected LO:HI prompt tokens, integers "
                                    "with LO <= HI, got '5:1'"},
        {"[tenant.c]\nclass = 5", ":2: tenant.c.class: expected LO:HI prompt tokens, integers "
                                  "with LO <= HI, got '5'"},
        {"[tenant.c]\nsla_ttft_ms = 1,,2", ":2: tenant.c.sla_ttft_ms: expected 1 to 10 "
                                           "comma-separated numbers >= 0 (ms), got '1,,2'"},
        {"[tenant.c]\nsla_tbt_ms = -5", ":2: tenant.c.sla_tbt_ms: expected 1 to 10 "
                                        "comma-separated numbers >= 0 (ms), got '-5'"},
        {"[tenant.c]\nsla_e2e_ms = 1,2,3,4,5,6,7,8,9,10,11",
         ":2: tenant.c.sla_e2e_ms: expected 1 to 10 comma-separated numbers >= 0 (ms), got "
         "'1,2,3,4,5,6,7,8,9,10,11'"},
        {"[cluster]\ngpu = A100", ":2: cluster.gpu: expected a name of 1 to 47 characters from "
                                  "[a-z0-9._-], got 'A100'"},
        {"[tenant.c]\nmodel =", ":2: tenant.c.model: expected a name of 1 to 47 characters from "
                                "[a-z0-9._-], got ''"},
        {"[tenant.c]\ntier_mix =", ":2: tenant.c.tier_mix: expected a non-empty value, got ''"},
        {"[run]\ndb = \"\"", ":2: run.db: expected a non-empty value, got ''"},
        {"[cluster]\nnodes = 65537", ":2: cluster.nodes: out of range [0, 65536], got '65537'"},
        {"[tenant.c]\nsynthetic = a\"b", ":2: tenant.c.synthetic: expected text without '\"', "
                                         "control characters or ';' after a blank, got 'a\"b'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        expect_load(cases[i].text, SS_EPARSE, cases[i].want);
}

/* A NUL byte (a binary file, a UTF-16 one) stops the scenario with its line, instead of the
 * rest of its line being dropped unseen. */
static void test_nul_byte(void **state)
{
    (void)state;
    char path[700], want[800];
    static const char text[] = "[tenant.c]\nmodel = llama-2-7b\nreplicas = 2\0 ; 9\n";
    snprintf(path, sizeof path, "%s/nul.ini", tu_tmpdir());
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, sizeof text - 1, f), sizeof text - 1);
    assert_int_equal(fclose(f), 0);
    snprintf(want, sizeof want, "%s:3: contains a NUL byte (not a text file?)", path);
    scn_scenario *s = create();
    ss_errbuf eb = {""};
    assert_int_equal(scn_load(s, path, &eb), SS_EPARSE);
    assert_string_equal(eb.msg, want);
    scn_destroy(&s);
    tu_assert_no_leaks();
}

static void test_io_error(void **state)
{
    (void)state;
    char path[700], want[800];
    snprintf(path, sizeof path, "%s/nope.ini", tu_tmpdir());
    snprintf(want, sizeof want, "%s: cannot open: No such file or directory", path);
    scn_scenario *s = create();
    ss_errbuf eb = {""};
    assert_int_equal(scn_load(s, path, &eb), SS_EIO);
    assert_string_equal(eb.msg, want);
    /* A directory, like a FIFO, is not a regular file: refused before any read. */
    assert_int_equal(scn_load(s, tu_tmpdir(), &eb), SS_EPARSE);
    snprintf(want, sizeof want, "%s: not a regular file", tu_tmpdir());
    assert_string_equal(eb.msg, want);
    scn_destroy(&s);
    tu_assert_no_leaks();
}

/* {======================================================================
 * --set
 * ======================================================================= */

static void test_set(void **state)
{
    (void)state;
    scn_scenario *s = load_full();
    set_ok(s, "tenant.chat.rate_scale=2");
    set_ok(s, "  run.seed = 9 ");
    set_ok(s, "tenant.chat.sla_ttft_ms=300");
    set_ok(s, "tenant.chat.synthetic=\"rate=1 duration=1\"");
    set_ok(s, "tenant.chat.trace=");
    assert_true(s->tenants[0].rate_scale == 2 && s->seed == 9);
    assert_true(s->tenants[0].sla[0].ttft_ms == 300 && s->tenants[0].sla[9].ttft_ms == 300);
    assert_string_equal(s->tenants[0].synthetic, "rate=1 duration=1");
    assert_string_equal(s->tenants[0].trace, "");
    assert_int_equal(s->tenants[0].line, 28);

    set_ok(s, "tenant.new.one.model=m"); /* a new tenant, with a dotted name */
    assert_non_null(scn_tenant_find(s, "new.one"));
    assert_int_equal(scn_tenant_find(s, "new.one")->line, 0);

    /* [policy] parameters: new, replacing a file's (its line is forgotten), and a=b=c. */
    set_ok(s, "policy.watermark=0.05");
    set_ok(s, "policy.token_budget=2048");
    set_ok(s, "policy.note=a=b");
    set_ok(s, "policy.routing=lor");
    assert_string_equal(ss_params_get(s->params, "watermark"), "0.05");
    assert_string_equal(ss_params_get(s->params, "token_budget"), "2048");
    assert_string_equal(ss_params_get(s->params, "note"), "a=b");
    assert_int_equal(ss_params_count(s->params), 4);
    assert_int_equal(scn_param_line(s, "token_budget"), 0);
    assert_int_equal(scn_param_line(s, "max_num_seqs"), 13);
    assert_int_equal(scn_param_line(s, "watermark"), 0);
    scn_destroy(&s);
    tu_assert_no_leaks();
}

/* A typo in a tenant's name in --set is "no such tenant", with the tenants there are, not
 * "model: missing" about a tenant the user never meant to create. */
static void test_set_unknown_tenant(void **state)
{
    (void)state;
    scn_scenario *s = load_full();
    set_ok(s, "tenant.chatt.rate_scale=2");
    expect_check_fails(s, "--set: tenant.chatt: no such tenant (tenants: chat, long-docs, batch, "
                          "sg); a new tenant needs at least tenant.chatt.model and a workload");
    scn_destroy(&s);
    tu_assert_no_leaks();
}

/* Defaults that follow another key until they are set themselves. */
static void test_dependent_defaults(void **state)
{
    (void)state;
    scn_scenario *s = create();
    /* max_replicas follows replicas until set. */
    set_ok(s, "tenant.new.one.replicas=3");
    scn_tenant *t = scn_tenant_find(s, "new.one");
    assert_non_null(t);
    assert_true(t->line == 0 && t->replicas == 3 && t->max_replicas == 3);
    set_ok(s, "tenant.new.one.max_replicas=5");
    set_ok(s, "tenant.new.one.replicas=4");
    assert_true(t->replicas == 4 && t->max_replicas == 5);

    /* routing follows cluster until it is set. */
    set_ok(s, "policy.cluster=llumnix-tiers");
    assert_string_equal(s->routing, "llumnix");
    set_ok(s, "policy.cluster=container");
    assert_string_equal(s->routing, "rr");
    set_ok(s, "policy.routing=lor");
    set_ok(s, "policy.cluster=llumnix");
    assert_string_equal(s->routing, "lor");
    scn_destroy(&s);
    tu_assert_no_leaks();
}

static void test_set_errors(void **state)
{
    (void)state;
    scn_scenario *s = load_full();
    set_ok(s, "tenant.chat.synthetic=\"rate=1 duration=1\"");
    const char *form = "--set: expected SECTION.KEY=VALUE, got '%s'";
    static const char *const bad_forms[] = {"tenant.chat.tp", "seed=1", ".seed=1", "run.=1",
                                            "=1", ""};
    for (size_t i = 0; i < sizeof bad_forms / sizeof *bad_forms; i++) {
        char want[200];
        snprintf(want, sizeof want, form, bad_forms[i]);
        expect_set(s, bad_forms[i], want);
    }
    expect_set(s, "tenant.chat.rate_scal=2",
               "--set: tenant.chat.rate_scal: unknown key (did you mean rate_scale?)");
    expect_set(s, "tenant.fresh.rate_scal=2",
               "--set: tenant.fresh.rate_scal: unknown key (did you mean rate_scale?)");
    expect_set(s, "tenant.fresh.tp=x",
               "--set: tenant.fresh.tp: expected an integer from 1 to 64, got 'x'");
    assert_null(scn_tenant_find(s, "fresh"));
    expect_set(s, "polcy.x=1", "--set: section [polcy]: unknown section (did you mean "
                               "[policy]?) (known: cluster, policy, run, engine, kvpool, "
                               "tenant.NAME)");
    expect_set(s, "tenant.Fresh.tp=1", "--set: section [tenant.Fresh]: expected [tenant.NAME], "
                                       "NAME of 1 to 47 characters from [a-z0-9._-]");
    expect_set(s, "policy.cluster=x", "--set: policy.cluster: expected one of container, "
                                      "llumnix, llumnix-tiers, got 'x'");
    expect_set(s, "run.db=a\nb", "--set: run.db: expected text without '\"', control "
                                 "characters or ';' after a blank, got 'a\\x0ab'");
    expect_set(s, "tenant.chat.synthetic=rate=1 ;x", "--set: tenant.chat.synthetic: expected "
               "text without '\"', control characters or ';' after a blank, got 'rate=1 ;x'");
    assert_string_equal(s->tenants[0].synthetic, "rate=1 duration=1"); /* unchanged */
    scn_destroy(&s);
    tu_assert_no_leaks();
}

/* {======================================================================
 * scn_check
 * ======================================================================= */

/* A fresh scenario with the given --set assignments (NULL-terminated). */
static scn_scenario *with(const char *const *sets)
{
    scn_scenario *s = create();
    for (size_t i = 0; sets[i]; i++)
        set_ok(s, sets[i]);
    return s;
}

static void check_case(const char *const *sets, const char *want)
{
    scn_scenario *s = with(sets);
    if (want) {
        expect_check_fails(s, want);
    } else {
        ss_errbuf eb = {""};
        if (scn_check(s, &eb))
            fail_msg("scn_check: %s", eb.msg);
    }
    scn_destroy(&s);
    tu_assert_no_leaks();
}

#define SETS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void test_check(void **state)
{
    (void)state;
    check_case(SETS("run.seed=1"), "scenario: no tenant (add a [tenant.NAME] section)");
    check_case(SETS("tenant.a.trace=t.csv"), "--set: tenant.a: no such tenant (there are none); "
                                              "a new tenant needs at least tenant.a.model and "
                                              "a workload");
    check_case(SETS("tenant.a.model=m"), "tenant.a: needs exactly one workload source of trace, "
                                         "synthetic and servegen (it has 0)");
    check_case(SETS("tenant.a.model=m", "tenant.a.trace=t.csv", "tenant.a.synthetic=rate=1"),
               "tenant.a: needs exactly one workload source of trace, synthetic and servegen "
               "(it has 2)");
    check_case(SETS("tenant.a.model=m", "tenant.a.trace=t.csv", "tenant.a.tiers=2",
                    "tenant.a.sla_ttft_ms=1,2,3"),
               "tenant.a: sla_ttft_ms has 3 values but tiers = 2 (give 1 value or 2)");
    check_case(SETS("tenant.a.model=m", "tenant.a.trace=t.csv", "tenant.a.tiers=3",
                    "tenant.a.sla_e2e_ms=1,2,3", "tenant.a.sla_tbt_ms=5"), NULL);
    check_case(SETS("tenant.a.model=m", "tenant.a.trace=t.csv", "tenant.a.sla_tbt_ms=1,2"),
               "tenant.a: sla_tbt_ms has 2 values but tiers = 1 (give 1 value or 1)");
    check_case(SETS("tenant.a.model=m", "tenant.a.trace=t.csv", "tenant.a.tiers=3",
                    "tenant.a.sla_e2e_ms=7,7"),
               "tenant.a: sla_e2e_ms has 2 values but tiers = 3 (give 1 value or 3)");
    check_case(SETS("tenant.a.model=m", "tenant.a.synthetic=x", "run.duration_s=600",
                    "run.warmup_s=600"),
               "scenario: run.warmup_s: 600 is not less than run.duration_s (600)");
    check_case(SETS("tenant.a.model=m", "tenant.a.synthetic=x", "run.warmup_s=600"), NULL);
    check_case(SETS("tenant.a.model=m", "tenant.a.synthetic=x", "tenant.a.replicas=3",
                    "tenant.a.max_replicas=2"),
               "tenant.a: max_replicas (2) is less than replicas (3)");
    check_case(SETS("tenant.a.model=m", "tenant.a.servegen=language/m-mid/1"),
               "tenant.a: servegen needs run.servegen_dir");
    check_case(SETS("tenant.a.model=m", "tenant.a.synthetic=x", "tenant.a.split=rr"),
               "tenant.a: trace_tenant and split apply only to a trace");
    check_case(SETS("tenant.a.model=m", "tenant.a.synthetic=x", "tenant.a.tp=4",
                    "cluster.nodes=1", "cluster.gpus_per_node=2"),
               "scenario: cluster: the tenants' replicas need 4 GPUs, nodes x gpus_per_node = 2");
}

static void test_check_split(void **state)
{
    (void)state;
#define PAIR(sa, sb)                                                                          \
    "tenant.a.model=m", "tenant.a.trace=t.csv", "tenant.a.split=" sa, "tenant.b.model=m",     \
        "tenant.b.trace=t.csv", "tenant.b.split=" sb
    check_case(SETS(PAIR("rr", "rr")), NULL);
    check_case(SETS(PAIR("none", "none")), NULL); /* each reads all of it (or its trace_tenant) */
    check_case(SETS(PAIR("rr", "random")),
               "tenant.a: splits trace t.csv with tenant.b, which has a different split");
    check_case(SETS(PAIR("none", "rr")),
               "tenant.b: splits trace t.csv with tenant.a, which has a different split");
    check_case(SETS(PAIR("rr", "rr"), "tenant.b.trace_format=native"),
               "tenant.a: splits trace t.csv with tenant.b, which has a different trace_format");
    check_case(SETS(PAIR("rr", "rr"), "tenant.b.rate_scale=2"),
               "tenant.a: splits trace t.csv with tenant.b, which has a different rate_scale");
    check_case(SETS(PAIR("rr", "rr"), "tenant.b.trace=./t.csv"),
               "tenant.a: split = rr, but no other tenant reads trace t.csv");
    check_case(SETS(PAIR("class", "class"), "tenant.a.class=0:100", "tenant.b.class=101:200"),
               NULL);
    check_case(SETS(PAIR("class", "class"), "tenant.a.class=0:100", "tenant.b.class=100:200"),
               "tenant.a: class 0:100 overlaps tenant.b's 100:200");
    check_case(SETS(PAIR("class", "class"), "tenant.a.class=0:100"),
               "tenant.b: split = class needs class = LO:HI");
#undef PAIR
    /* From a file, the message names the file and the tenant's header line. */
    const char *path = tu_write_file(tu_tmpdir(), "split.ini",
                                     "[tenant.a]\nmodel = m\ntrace = t.csv\nsplit = random\n");
    scn_scenario *s = create();
    ss_errbuf eb = {""};
    assert_int_equal(scn_load(s, path, &eb), SS_OK);
    char want[PATH_MAX + 1200];
    snprintf(want, sizeof want, "%s:1: tenant.a: split = random, but no other tenant reads trace "
             "%s/t.csv", path, real_tmp());
    expect_check_fails(s, want);
    scn_destroy(&s);
    tu_assert_no_leaks();
}

/* {======================================================================
 * Writing, the example, allocation failures
 * ======================================================================= */

static scn_scenario *write_and_reload(const scn_scenario *s, const char *name, char *text,
                                      size_t size)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s", tu_tmpdir(), name);
    FILE *f = fopen(path, "w+");
    assert_non_null(f);
    assert_int_equal(scn_write(s, f), SS_OK);
    rewind(f);
    size_t n = fread(text, 1, size - 1, f);
    text[n] = '\0';
    assert_int_equal(fclose(f), 0);
    scn_scenario *r = create();
    ss_errbuf eb = {""};
    if (scn_load(r, path, &eb))
        fail_msg("reading back %s: %s\n%s", path, eb.msg, text);
    return r;
}

static void test_round_trip(void **state)
{
    (void)state;
    static char text1[32768], text2[32768];
    scn_scenario *s = load_full();
    set_ok(s, "tenant.extra.model=x");
    set_ok(s, "tenant.extra.trace=/data/a b.csv");
    set_ok(s, "tenant.extra.sla_ttft_ms=0.1,1e-3,123456.789");
    set_ok(s, "tenant.extra.tiers=3");
    set_ok(s, "policy.note=two words");
    set_ok(s, "run.duration_s=0.30000000000000004");
    scn_scenario *r = write_and_reload(s, "w1.ini", text1, sizeof text1);
    assert_same(s, r);
    assert_true(scn_param_line(r, "token_budget") > 12); /* its line in the canonical file */
    scn_scenario *r2 = write_and_reload(r, "w2.ini", text2, sizeof text2);
    assert_string_equal(text1, text2);
    assert_non_null(strstr(text1, "\n[tenant.extra]\nmodel = x\n"));
    assert_non_null(strstr(text1, "\ntrace = \"/data/a b.csv\"\n"));
    assert_non_null(strstr(text1, "\nsla_ttft_ms = 0.1,0.001,123456.789\n"));
    assert_non_null(strstr(text1, "\nsla_tbt_ms = 100\n"));
    assert_non_null(strstr(text1, "\nnote = \"two words\"\n"));
    scn_destroy(&r2);
    scn_destroy(&r);

    /* A relative path from --set is written absolute, to mean the same file anywhere. */
    set_ok(s, "tenant.extra.trace=rel.csv");
    char cwd[PATH_MAX], want[PATH_MAX + 40];
    assert_non_null(getcwd(cwd, sizeof cwd));
    r = write_and_reload(s, "w3.ini", text1, sizeof text1);
    snprintf(want, sizeof want, "%s/rel.csv", cwd);
    assert_string_equal(scn_tenant_find(r, "extra")->trace, want);
    scn_destroy(&r);

    /* Values are refused when their written line would not fit a scenario file line (199
     * characters), so every scenario scn_write stores reads back (found by fuzzing). */
    char a[512];
    ss_errbuf eb = {""};
    snprintf(a, sizeof a, "tenant.extra.synthetic=rate=1 duration=600 prompt=fixed:%0170d", 1);
    assert_int_equal(scn_set(s, a, &eb), SS_EPARSE);
    assert_prefix(eb.msg, "--set: tenant.extra.synthetic: too long: 'synthetic = ...' must fit "
                          "on one line of 199 characters (the scenario is stored with each run)");
    snprintf(a, sizeof a, "policy.note=%0195d", 1);
    expect_set(s, a, "--set: policy.note: too long: 'note = ...' must fit on one line of 199 "
                     "characters (the scenario is stored with each run)");
    snprintf(a, sizeof a, "tenant.extra.trace=%0185d.csv", 1); /* relative: cwd/ in front */
    assert_int_equal(scn_set(s, a, &eb), SS_EPARSE);
    assert_non_null(strstr(eb.msg, "its paths made absolute"));
    scn_destroy(&s);
    /* A relative path in a file that only becomes too long made absolute. */
    char deep[PATH_MAX], text[256];
    snprintf(deep, sizeof deep, "%s/%0120d", tu_tmpdir(), 1);
    assert_int_equal(mkdir(deep, 0755), 0);
    snprintf(text, sizeof text, "[tenant.a]\ntrace = %0150d.csv\n", 2);
    const char *path = tu_write_file(deep, "s.ini", text);
    s = create();
    assert_int_equal(scn_load(s, path, &eb), SS_EPARSE);
    assert_non_null(strstr(eb.msg, "s.ini:2: tenant.a.trace: "));
    assert_non_null(strstr(eb.msg, "path longer than") || strstr(eb.msg, "too long"));
    scn_destroy(&s);
    tu_assert_no_leaks();
}

static void test_example(void **state)
{
    (void)state;
    scn_scenario *s = create();
    ss_errbuf eb = {""};
    if (scn_load(s, tu_src_path("experiments/example-two-tenants.ini"), &eb) || scn_check(s, &eb))
        fail_msg("example: %s", eb.msg);
    assert_string_equal(s->gpu, "a100-80g");
    assert_int_equal(s->n_tenants, 2);
    const scn_tenant *c = scn_tenant_find(s, "chat"), *b = scn_tenant_find(s, "batch");
    assert_non_null(c);
    assert_non_null(b);
    char want[PATH_MAX];
    assert_non_null(realpath(tu_src_path("traces/azure-conv-synth.csv"), want));
    assert_string_equal(c->trace, want);
    assert_true(c->replicas == 2 && c->tiers == 2);
    assert_string_equal(c->model, "llama-2-7b");
    assert_string_equal(c->tier_mix, "weights:0.3,0.7");
    assert_true(c->sla[0].ttft_ms == 500 && c->sla[1].ttft_ms == 2000);
    assert_true(c->sla[0].tbt_p99_ms == 100 && c->sla[1].tbt_p99_ms == 200);
    assert_string_equal(b->model, "llama-3-8b");
    assert_string_equal(b->synthetic, "rate=1 duration=600 prompt=lognormal:2000:0.5 "
                                      "output=fixed:64");
    assert_true(b->replicas == 1 && b->sla[0].e2e_ms == 60000 && b->sla[5].e2e_ms == 60000);
    scn_destroy(&s);
    tu_assert_no_leaks();
}

/* One full pass: create, load, --set a parameter and a new tenant, check, write. */
static int full_pass(const char *path, scn_scenario **s, ss_errbuf *eb)
{
    int rc = scn_create(s);
    if (!rc)
        rc = scn_load(*s, path, eb);
    if (!rc)
        rc = scn_set(*s, "policy.watermark=0.1", eb);
    if (!rc)
        rc = scn_set(*s, "tenant.late.model=m", eb);
    if (!rc)
        rc = scn_set(*s, "policy.token_budget=1", eb);
    if (!rc && scn_check(*s, eb) != SS_EINVAL) /* tenant late has no source */
        fail_msg("scn_check should fail");
    return rc;
}

static void test_alloc_failures(void **state)
{
    (void)state;
    const char *path = tu_write_file(tu_tmpdir(), "full.ini", full_text);
    uint64_t n;
    for (n = 1;; n++) {
        scn_scenario *s = NULL;
        ss_errbuf eb = {""};
        ss_alloc_fail_after(n);
        int rc = full_pass(path, &s, &eb);
        ss_alloc_fail_after(0);
        if (rc == SS_OK) {
            assert_int_equal(s->n_tenants, 5);
            scn_destroy(&s);
            tu_assert_no_leaks();
            break;
        }
        if (rc != SS_ENOMEM)
            fail_msg("n = %llu: rc %d, message '%s'", (unsigned long long)n, rc, eb.msg);
        scn_destroy(&s);
        tu_assert_no_leaks();
        assert_true(n < 1000);
    }
    assert_true(n > 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_defaults, teardown_tmp),
        cmocka_unit_test_teardown(test_full_file, teardown_tmp),
        cmocka_unit_test_teardown(test_full_file_tenants, teardown_tmp),
        cmocka_unit_test_teardown(test_relative_paths, teardown_tmp),
        cmocka_unit_test_teardown(test_syntax_details, teardown_tmp),
        cmocka_unit_test_teardown(test_structure_errors, teardown_tmp),
        cmocka_unit_test_teardown(test_too_many_tenants, teardown_tmp),
        cmocka_unit_test_teardown(test_bad_values, teardown_tmp),
        cmocka_unit_test_teardown(test_nul_byte, teardown_tmp),
        cmocka_unit_test_teardown(test_set_unknown_tenant, teardown_tmp),
        cmocka_unit_test_teardown(test_io_error, teardown_tmp),
        cmocka_unit_test_teardown(test_set, teardown_tmp),
        cmocka_unit_test_teardown(test_set_errors, teardown_tmp),
        cmocka_unit_test_teardown(test_dependent_defaults, teardown_tmp),
        cmocka_unit_test_teardown(test_check, teardown_tmp),
        cmocka_unit_test_teardown(test_check_split, teardown_tmp),
        cmocka_unit_test_teardown(test_round_trip, teardown_tmp),
        cmocka_unit_test_teardown(test_example, teardown_tmp),
        cmocka_unit_test_teardown(test_alloc_failures, teardown_tmp),
    };
    return cmocka_run_group_tests_name("scenario", tests, NULL, NULL);
}
