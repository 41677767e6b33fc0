/* Test helpers: temp dirs, fixtures on disk, data-path lookup, leak assertion. */
#include "test_util.h"

#include "config.h"
#include "core/ss_alloc.h"
#include "core/ss_rng.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir_path[512];

const char *tu_src_path(const char *rel)
{
    static char buf[4][1024];
    static int k;
    const char *root = getenv("SS_SOURCE_ROOT");
    char *b = buf[k++ % 4];
    snprintf(b, sizeof buf[0], "%s/%s", root ? root : SS_SOURCE_ROOT, rel);
    return b;
}

const char *tu_shared_path(const char *rel)
{
    static char buf[4][1024];
    static int k;
    /* SLICESIM_DATA (tools/get-data.sh) wins over the build's default, ../shared/data */
    const char *root = getenv("SLICESIM_DATA");
    if (!root || !*root)
        root = getenv("SS_SHARED_DATA");
    char *b = buf[k++ % 4];
    if (root)
        snprintf(b, sizeof buf[0], "%s/%s", root, rel);
    else
        snprintf(b, sizeof buf[0], "%s/../shared/data/%s", SS_SOURCE_ROOT, rel);
    return access(b, R_OK) == 0 ? b : NULL;
}

const char *tu_tmpdir(void)
{
    if (tmpdir_path[0])
        return tmpdir_path;
    const char *t = getenv("TMPDIR");
    snprintf(tmpdir_path, sizeof tmpdir_path, "%s/sstest.XXXXXX", t ? t : "/tmp");
    if (!mkdtemp(tmpdir_path)) {
        perror("mkdtemp");
        abort();
    }
    return tmpdir_path;
}

void tu_tmpdir_cleanup(void)
{
    if (!tmpdir_path[0])
        return;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir_path);
    if (system(cmd) != 0)
        fprintf(stderr, "warning: could not remove %s\n", tmpdir_path);
    tmpdir_path[0] = '\0';
}

const char *tu_write_file(const char *dir, const char *name, const char *text)
{
    static char buf[4][1024];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, sizeof buf[0], "%s/%s", dir, name);
    FILE *f = fopen(b, "wb");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    return b;
}

void tu_assert_no_leaks(void) { assert_int_equal(ss_alloc_live_bytes(), 0); }

int tu_recs_next(void *ud, trace_rec *out, ss_errbuf *eb)
{
    (void)eb;
    tu_recs *s = ud;
    if (s->i >= s->n)
        return 0;
    *out = s->recs[s->i++];
    return 1;
}

int64_t tu_sql_int(const char *path, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

trace_rec *tu_synth_conv(size_t n, double rate, uint64_t seed, uint32_t min_output)
{
    trace_rec *r = calloc(n ? n : 1, sizeof *r);
    assert_non_null(r);
    ss_rng a, l;
    ss_rng_seed(&a, seed, 1);
    ss_rng_seed(&l, seed, 2);
    double t = 0;
    for (size_t i = 0; i < n; i++) {
        t += ss_rng_exp(&a, 1.0 / rate);
        uint32_t p = (uint32_t)(1020 * exp(0.6 * ss_rng_normal(&l))) + 1;
        uint32_t o = (uint32_t)(129 * exp(0.8 * ss_rng_normal(&l))) + min_output;
        r[i] = (trace_rec){.id = i, .arrival_ns = ss_time_from_s(t), .prompt_tokens = p,
                           .output_tokens = o};
    }
    return r;
}

int tu_sim_setup(catalog **cat, ss_params **params, gsim_config *cfg)
{
    ss_errbuf eb;
    if (catalog_load(cat, tu_src_path("profiles"), &eb) || ss_params_create(params))
        return -1;
    gsim_config_defaults(cfg);
    cfg->gpu = catalog_gpu(*cat, "a100-80g");
    cfg->engine = catalog_engine(*cat, CAT_ENGINE_EAGER);
    cfg->params = *params;
    return 0;
}

tu_collect tu_collect_new(size_t n)
{
    tu_collect c = {calloc(n ? n : 1, sizeof(metrics_req)), 0, 0};
    assert_non_null(c.r);
    return c;
}

int tu_collect_req(void *ud, const metrics_req *r, ss_errbuf *eb)
{
    (void)eb;
    tu_collect *c = ud;
    if (c->r[r->trace_id].finish)
        c->dup++;
    c->r[r->trace_id] = *r;
    c->n_calls++;
    return 0;
}

int tu_sim_fixture_setup(void **state)
{
    tu_sim *f = calloc(1, sizeof *f);
    if (!f || tu_sim_setup(&f->cat, &f->params, &f->cfg)) {
        free(f);
        return -1;
    }
    f->cfg.model = catalog_model(f->cat, "llama-2-7b");
    *state = f;
    return 0;
}

gsim *tu_sim_run(tu_sim *f, const trace_rec *recs, size_t n, tu_collect *c)
{
    gsim *g = NULL;
    ss_errbuf eb;
    if (gsim_create(&g, &f->cfg, &eb))
        fail_msg("gsim_create: %s", eb.msg);
    tu_recs src = {recs, n, 0};
    if (gsim_run(g, tu_recs_next, &src, c ? tu_collect_req : NULL, c, &eb))
        fail_msg("gsim_run: %s", eb.msg);
    return g;
}

trace_rec *tu_synth_sessions(size_t n, double rate, uint64_t seed)
{
    trace_rec *r = tu_synth_conv(n, rate, seed, 1);
    for (size_t i = 0; i < n; i++) {
        r[i].session_id = 1 + (i * 7 + seed) % 23;
        r[i].prompt_tokens = 600 + (uint32_t)(r[i].session_id * 97 % 1500);
    }
    return r;
}

gsim *tu_fork_matches_replay(tu_sim *f, const trace_rec *recs, size_t n, size_t *checked,
                             uint64_t *fork_calls)
{
    tu_collect rc = tu_collect_new(n), wc = tu_collect_new(n);
    ss_errbuf eb;
    gsim *g = NULL, *w = NULL;
    assert_int_equal(gsim_create(&g, &f->cfg, &eb), 0);
    tu_recs src = {recs, n, 0};
    ss_time t0 = recs[n - 1].arrival_ns + 1;
    assert_int_equal(gsim_start(g, tu_recs_next, &src, tu_collect_req, &rc, &eb), 0);
    assert_int_equal(gsim_advance(g, t0, &eb), 0);
    gmg_id all[64];
    uint32_t n_ctrs = gsim_graph(g)->n_ctrs;
    assert_true(n_ctrs <= 64);
    for (uint32_t i = 0; i < n_ctrs; i++)
        all[i] = i;
    assert_int_equal(gsim_fork(g, all, n_ctrs, tu_collect_req, &wc, &w, &eb), 0);
    assert_int_equal(gsim_advance(w, SS_TIME_MAX, &eb), 0);
    assert_int_equal(gsim_advance(g, SS_TIME_MAX, &eb), 0);
    assert_int_equal(gsim_finish(g), 0);
    *checked = 0;
    for (size_t i = 0; i < n; i++) {
        if (rc.r[i].finish <= t0)
            continue;
        assert_int_equal(rc.r[i].first_token, wc.r[i].first_token);
        assert_int_equal(rc.r[i].finish, wc.r[i].finish);
        (*checked)++;
    }
    *fork_calls = wc.n_calls;
    gsim_destroy(&w);
    free(rc.r);
    free(wc.r);
    return g;
}

int tu_sim_fixture_teardown(void **state)
{
    tu_sim *f = *state;
    ss_params_destroy(&f->params);
    catalog_destroy(&f->cat);
    free(f);
    tu_tmpdir_cleanup();
    tu_assert_no_leaks();
    return 0;
}
