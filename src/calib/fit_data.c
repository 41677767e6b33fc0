/* Measured serving runs for `slicesim fit`: reading runs.csv and stages.csv with precise
 * "FILE:LINE: field: what" errors. Not for replaying them (fit_runs.c), the optimiser (fit.c)
 * or the output (fit_out.c). */
#include "calib/fit_int.h"

#include "core/ss_alloc.h"
#include "core/ss_csv.h"
#include "core/ss_input.h"
#include "core/ss_parse.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const calib__fit_metric_col[CALIB_FIT_METRICS] = {
    "ttft_mean_ms", "ttft_p90_ms", "itl_ms", "e2e_mean_ms", "e2e_p90_ms"};
const char *const calib__fit_metric_label[CALIB_FIT_METRICS] = {"TTFT mean", "TTFT p90", "ITL",
                                                                "E2E mean", "E2E p90"};

/* {======================================================================
 * runs.csv
 * ======================================================================= */

enum { RC_RUN, RC_MODEL, RC_GPU, RC_TP, RC_MNS, RC_MBT, RC_MML, RC_GMU, RC_OUT, RC_TRACE,
       RC_STARTS, RC__N };
static const char *const run_cols[RC__N] = {
    "run", "catalog_model", "gpu", "tp", "max_num_seqs", "max_num_batched_tokens",
    "max_model_len", "gpu_memory_utilization", "output_len", "trace", "trace_stage_starts",
};

/* What reading needs besides the result: the column indexes, the names of every run seen
 * (kept or skipped, for stage rows and --runs), and the --runs list. */
typedef struct reader {
    calib_fit_data *d;
    const char *dir;
    const catalog *cat;
    int col[RC__N];
    char **seen;            /* every run name of runs.csv (owned) */
    unsigned *seen_line;
    int *seen_kept;         /* 1 when replayed */
    size_t n_seen, cap_seen, cap_seen_line, cap_seen_kept;
    char *only_buf;         /* --runs, split in place (owned) */
    char **only;            /* pointers into only_buf (owned array) */
    size_t n_only;
} reader;

static int find_cols(const ss_csv *c, const char *const *names, size_t n, int *idx,
                     ss_errbuf *eb)
{
    for (size_t i = 0; i < n; i++)
        if ((idx[i] = ss_csv_col(c, names[i])) < 0)
            return ss_csv_err(c, eb, SS_EPARSE, names[i], "missing column");
    return SS_OK;
}

static int get_u32(const ss_csv *c, int col, const char *name, int64_t lo, uint32_t *out,
                   ss_errbuf *eb)
{
    const char *s = ss_csv_get(c, col);
    int64_t v;
    if (ss_parse_i64z(s, &v) || v < lo || v > UINT32_MAX)
        return ss_csv_err(c, eb, SS_EPARSE, name, "'%.60s' is not an integer >= %lld", s,
                          (long long)lo);
    *out = (uint32_t)v;
    return SS_OK;
}

/* A name of the catalog's form into buf (size CAT_NAME_MAX). */
static int get_name(const ss_csv *c, int col, const char *name, char *buf, ss_errbuf *eb)
{
    const char *s = ss_csv_get(c, col);
    if (strlen(s) >= CAT_NAME_MAX)
        return ss_csv_err(c, eb, SS_EPARSE, name, "'%.60s...' is longer than %d characters", s,
                          CAT_NAME_MAX - 1);
    memcpy(buf, s, strlen(s) + 1);
    return SS_OK;
}

/* trace_stage_starts: one or more decimal numbers >= 0 separated by ';', increasing (a stage
 * that starts where the next does would have no request). */
static int get_starts(const ss_csv *c, int col, calib_fit_run *r, ss_errbuf *eb)
{
    const char *s = ss_csv_get(c, col), *p = s;
    size_t cap = 0;
    for (;;) {
        size_t len = strcspn(p, ";");
        double x;
        if (ss_parse_decimal(p, len, &x) || x < 0)
            return ss_csv_err(c, eb, SS_EPARSE, run_cols[RC_STARTS], "'%.60s' is not a ';' "
                              "list of increasing decimal times >= 0 (s)", s);
        if (r->n_starts && !(x > r->starts[r->n_starts - 1]))
            return ss_csv_err(c, eb, SS_EPARSE, run_cols[RC_STARTS], "'%.60s' is not a ';' "
                              "list of increasing times: stage %zu starts where stage %zu "
                              "does or before, so it has no time of its own", s, r->n_starts,
                              r->n_starts - 1);
        if (ss_grow((void **)&r->starts, &cap, r->n_starts + 1, sizeof *r->starts))
            return ss_csv_err(c, eb, SS_ENOMEM, NULL, "out of memory");
        r->starts[r->n_starts++] = x;
        if (!p[len])
            return SS_OK;
        p += len + 1;
    }
}

/* The trace's path (relative to DIR unless absolute), checked to be readable. */
static int get_trace(const ss_csv *c, const reader *rd, calib_fit_run *r, ss_errbuf *eb)
{
    const char *t = ss_csv_get(c, rd->col[RC_TRACE]);
    size_t n = strlen(rd->dir) + strlen(t) + 2;
    if (!(r->trace = ss_malloc(n)))
        return ss_csv_err(c, eb, SS_ENOMEM, NULL, "out of memory");
    if (t[0] == '/')
        snprintf(r->trace, n, "%s", t);
    else
        snprintf(r->trace, n, "%s/%s", rd->dir, t);
    FILE *f;
    ss_errbuf why = {""};
    int rc = ss_input_open(&f, r->trace, 0, &why); /* a FIFO is refused, not waited on */
    if (rc)
        return ss_csv_err(c, eb, SS_EPARSE, run_cols[RC_TRACE], "cannot read '%.300s': %s",
                          r->trace, rc == SS_EPARSE ? "not a regular file" : strerror(errno));
    fclose(f);
    return SS_OK;
}

/* The catalog lookups of a run: its model and GPU must be known. */
static int check_names(const ss_csv *c, const reader *rd, const calib_fit_run *r, ss_errbuf *eb)
{
    const cat_model *m;
    const cat_gpu *g;
    ss_errbuf why = {""};
    if (catalog_model_find(rd->cat, r->model, &m, &why))
        return ss_csv_err(c, eb, SS_ENOTFOUND, run_cols[RC_MODEL], "%s", why.msg);
    if (catalog_gpu_find(rd->cat, r->gpu, &g, &why))
        return ss_csv_err(c, eb, SS_ENOTFOUND, run_cols[RC_GPU], "%s", why.msg);
    return SS_OK;
}

/* Every field of a run that is replayed. */
static int parse_run(const ss_csv *c, const reader *rd, calib_fit_run *r, ss_errbuf *eb)
{
    const int *col = rd->col;
    r->line = c->line;
    int rc = get_name(c, col[RC_MODEL], run_cols[RC_MODEL], r->model, eb);
    if (!rc)
        rc = get_name(c, col[RC_GPU], run_cols[RC_GPU], r->gpu, eb);
    if (!rc)
        rc = check_names(c, rd, r, eb);
    if (!rc)
        rc = get_u32(c, col[RC_TP], run_cols[RC_TP], 1, &r->tp, eb);
    if (!rc)
        rc = get_u32(c, col[RC_MNS], run_cols[RC_MNS], 1, &r->max_num_seqs, eb);
    if (!rc)
        rc = get_u32(c, col[RC_MBT], run_cols[RC_MBT], 1, &r->max_num_batched_tokens, eb);
    if (!rc)
        rc = get_u32(c, col[RC_MML], run_cols[RC_MML], 1, &r->max_model_len, eb);
    if (!rc) {
        const char *s = ss_csv_get(c, col[RC_GMU]);
        if (ss_parse_decimalz(s, &r->gpu_mem_util) || !(r->gpu_mem_util > 0) ||
            r->gpu_mem_util > 1)
            rc = ss_csv_err(c, eb, SS_EPARSE, run_cols[RC_GMU], "'%.60s' is not a decimal "
                            "number in (0, 1]", s);
    }
    if (!rc)
        rc = get_u32(c, col[RC_OUT], run_cols[RC_OUT], 2, &r->output_len, eb);
    if (!rc)
        rc = get_starts(c, col[RC_STARTS], r, eb);
    return rc ? rc : get_trace(c, rd, r, eb);
}

static int only_has(const reader *rd, const char *name)
{
    if (!rd->only)
        return 1;
    for (size_t i = 0; i < rd->n_only; i++)
        if (!strcmp(rd->only[i], name))
            return 1;
    return 0;
}

/* Remember a run name; a name seen before is an error. */
static int note_seen(const ss_csv *c, reader *rd, const char *name, int kept, ss_errbuf *eb)
{
    if (!*name)
        return ss_csv_err(c, eb, SS_EPARSE, "run", "empty run name");
    for (size_t i = 0; i < rd->n_seen; i++)
        if (!strcmp(rd->seen[i], name))
            return ss_csv_err(c, eb, SS_EPARSE, "run", "'%.60s' is already on line %u", name,
                              rd->seen_line[i]);
    if (ss_grow((void **)&rd->seen, &rd->cap_seen, rd->n_seen + 1, sizeof *rd->seen) ||
        ss_grow((void **)&rd->seen_line, &rd->cap_seen_line, rd->n_seen + 1,
                sizeof *rd->seen_line) ||
        ss_grow((void **)&rd->seen_kept, &rd->cap_seen_kept, rd->n_seen + 1,
                sizeof *rd->seen_kept) ||
        !(rd->seen[rd->n_seen] = ss_strdup(name)))
        return ss_csv_err(c, eb, SS_ENOMEM, NULL, "out of memory");
    rd->seen_line[rd->n_seen] = c->line;
    rd->seen_kept[rd->n_seen++] = kept;
    return SS_OK;
}

static int add_note(const ss_csv *c, calib_fit_data *d, const char *name, const char *why,
                    ss_errbuf *eb)
{
    char buf[SS_ERRBUF_LEN];
    snprintf(buf, sizeof buf, "%s:%u: run '%.60s' skipped: %s", c->path, c->line, name, why);
    if (ss_grow((void **)&d->notes, &d->cap_notes, d->n_notes + 1, sizeof *d->notes) ||
        !(d->notes[d->n_notes] = ss_strdup(buf)))
        return ss_csv_err(c, eb, SS_ENOMEM, NULL, "out of memory");
    d->n_notes++;
    return SS_OK;
}

/* One row of runs.csv: skipped (with a note when it cannot be replayed), or appended. */
static int read_run_row(const ss_csv *c, reader *rd, size_t *cap, ss_errbuf *eb)
{
    calib_fit_data *d = rd->d;
    const char *name = ss_csv_get(c, rd->col[RC_RUN]);
    const char *why = !*ss_csv_get(c, rd->col[RC_MODEL]) ? "no catalog model"
                      : !*ss_csv_get(c, rd->col[RC_TRACE]) ? "no trace" : NULL;
    int kept = only_has(rd, name) && !why;
    int rc = note_seen(c, rd, name, kept, eb);
    if (!rc && why && only_has(rd, name))
        rc = add_note(c, d, name, why, eb);
    if (rc || !kept)
        return rc;
    if (ss_grow((void **)&d->runs, cap, d->n_runs + 1, sizeof *d->runs))
        return ss_csv_err(c, eb, SS_ENOMEM, NULL, "out of memory");
    calib_fit_run *r = &d->runs[d->n_runs++];
    memset(r, 0, sizeof *r);
    if (!(r->name = ss_strdup(name)))
        return ss_csv_err(c, eb, SS_ENOMEM, NULL, "out of memory");
    return parse_run(c, rd, r, eb);
}

static int read_runs(reader *rd, ss_errbuf *eb)
{
    ss_csv c;
    int rc = ss_csv_open(&c, rd->d->runs_path, 0, eb);
    if (rc)
        return rc == SS_EIO ? SS_EPARSE : rc;
    rc = find_cols(&c, run_cols, RC__N, rd->col, eb);
    size_t cap = 0;
    int more;
    while (!rc && (more = ss_csv_next(&c, eb)) != 0)
        rc = more < 0 ? more : read_run_row(&c, rd, &cap, eb);
    ss_csv_close(&c);
    return rc;
}

/* Split --runs into rd->only and check that each names a run of runs.csv. */
static int split_only(reader *rd, const char *only, ss_errbuf *eb)
{
    if (!only)
        return SS_OK;
    size_t cap = 0;
    if (!(rd->only_buf = ss_strdup(only)))
        return ss_err(eb, SS_ENOMEM, "out of memory");
    for (char *save = NULL, *t = strtok_r(rd->only_buf, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
        if (ss_grow((void **)&rd->only, &cap, rd->n_only + 1, sizeof *rd->only))
            return ss_err(eb, SS_ENOMEM, "out of memory");
        rd->only[rd->n_only++] = t;
    }
    if (!rd->n_only)
        return ss_err(eb, SS_EINVAL, "--runs: expected a comma list of runs, got '%s'", only);
    return SS_OK;
}

static int check_only(const reader *rd, ss_errbuf *eb)
{
    for (size_t i = 0; i < rd->n_only; i++) {
        size_t k = 0;
        while (k < rd->n_seen && strcmp(rd->seen[k], rd->only[i]))
            k++;
        if (k == rd->n_seen)
            return ss_err(eb, SS_EINVAL, "--runs: no run '%.60s' in %s", rd->only[i],
                          rd->d->runs_path);
    }
    return SS_OK;
}

/* }====================================================================== */

/* {======================================================================
 * stages.csv
 * ======================================================================= */

enum { SC_RUN, SC_STAGE, SC__N };
static const char *const stage_key_cols[SC__N] = {"run", "stage"};
/* The measured columns a stages.csv must have (itl_ms may be derived). */
static const int required_metric[CALIB_FIT_METRICS] = {1, 1, 0, 1, 1};

typedef struct stage_cols {
    int key[SC__N];
    int metric[CALIB_FIT_METRICS]; /* -1: absent (only itl_ms may be) */
    int rate;                /* -1: absent */
} stage_cols;

static int stage_columns(const ss_csv *c, stage_cols *sc, ss_errbuf *eb)
{
    int rc = find_cols(c, stage_key_cols, SC__N, sc->key, eb);
    for (int m = 0; !rc && m < CALIB_FIT_METRICS; m++) {
        sc->metric[m] = ss_csv_col(c, calib__fit_metric_col[m]);
        if (sc->metric[m] < 0 && required_metric[m])
            rc = ss_csv_err(c, eb, SS_EPARSE, calib__fit_metric_col[m], "missing column");
    }
    sc->rate = ss_csv_col(c, "rate");
    return rc;
}

/* The run a stage row belongs to: its index, -1 for a run that is not replayed (skipped), or
 * an error for a name runs.csv does not have. */
static int stage_run(const ss_csv *c, const reader *rd, const char *name, long *idx,
                     ss_errbuf *eb)
{
    *idx = -1;
    for (size_t i = 0; i < rd->d->n_runs; i++)
        if (!strcmp(rd->d->runs[i].name, name)) {
            *idx = (long)i;
            return SS_OK;
        }
    for (size_t i = 0; i < rd->n_seen; i++)
        if (!strcmp(rd->seen[i], name))
            return SS_OK;
    return ss_csv_err(c, eb, SS_EPARSE, "run", "no run '%.60s' in %s", name, rd->d->runs_path);
}

/* A request's last token comes after its first (output_len is at least 2), so its E2E is
 * above its TTFT; so are E2E's mean and percentiles above TTFT's. An error on column e when
 * metric e is not above metric t (both measured). */
static int check_above(const ss_csv *c, const stage_cols *sc, const calib_fit_stage *s, int e,
                       int t, ss_errbuf *eb)
{
    if (isnan(s->real[e]) || isnan(s->real[t]) || s->real[e] > s->real[t])
        return SS_OK;
    return ss_csv_err(c, eb, SS_EPARSE, calib__fit_metric_col[e], "'%.60s' is not above %s "
                      "'%.60s': a request's last token comes after its first",
                      ss_csv_get(c, sc->metric[e]), calib__fit_metric_col[t],
                      ss_csv_get(c, sc->metric[t]));
}

/* The measured figures: empty = not measured (NaN), else a decimal number > 0 (no latency is
 * 0); itl_ms derived when absent or empty. */
static int stage_values(const ss_csv *c, const stage_cols *sc, const calib_fit_run *r,
                        calib_fit_stage *s, ss_errbuf *eb)
{
    for (int m = 0; m < CALIB_FIT_METRICS; m++) {
        const char *v = ss_csv_get(c, sc->metric[m]);
        s->real[m] = NAN;
        if (*v && (ss_parse_decimalz(v, &s->real[m]) || !(s->real[m] > 0)))
            return ss_csv_err(c, eb, SS_EPARSE, calib__fit_metric_col[m], "'%.60s' is not a "
                              "decimal number > 0 (ms)", v);
    }
    int rc = check_above(c, sc, s, CALIB_FIT_E2E, CALIB_FIT_TTFT, eb);
    if (!rc)
        rc = check_above(c, sc, s, CALIB_FIT_E2E90, CALIB_FIT_TTFT90, eb);
    if (rc)
        return rc;
    if (isnan(s->real[CALIB_FIT_ITL])) {
        s->real[CALIB_FIT_ITL] =
            (s->real[CALIB_FIT_E2E] - s->real[CALIB_FIT_TTFT]) / (r->output_len - 1);
        if (s->real[CALIB_FIT_ITL] == 0) /* a difference too small to share out (1e-320 ms) */
            return ss_csv_err(c, eb, SS_EPARSE, calib__fit_metric_col[CALIB_FIT_E2E], "'%.60s' "
                              "is too close to ttft_mean_ms '%.60s' for an ITL above 0 over %u "
                              "tokens", ss_csv_get(c, sc->metric[CALIB_FIT_E2E]),
                              ss_csv_get(c, sc->metric[CALIB_FIT_TTFT]), r->output_len - 1);
    }
    snprintf(s->rate, sizeof s->rate, "%s", sc->rate < 0 ? "" : ss_csv_get(c, sc->rate));
    return SS_OK;
}

static int read_stage_row(const ss_csv *c, const reader *rd, const stage_cols *sc, size_t *cap,
                          double served_ms, ss_errbuf *eb)
{
    calib_fit_data *d = rd->d;
    const char *name = ss_csv_get(c, sc->key[SC_RUN]);
    long ri;
    uint32_t k = 0; /* set by get_u32 when rc is 0 (-O3 cannot tell) */
    int rc = stage_run(c, rd, name, &ri, eb);
    if (!rc)
        rc = get_u32(c, sc->key[SC_STAGE], "stage", 0, &k, eb);
    if (rc || ri < 0)
        return rc;
    calib_fit_run *r = &d->runs[ri];
    if (k >= r->n_starts)
        return ss_csv_err(c, eb, SS_EPARSE, "stage", "run '%s' has %zu stage%s "
                          "(trace_stage_starts, line %u of %s)", r->name, r->n_starts,
                          r->n_starts == 1 ? "" : "s", r->line, d->runs_path);
    for (size_t i = 0; i < d->n_stages; i++)
        if (d->stages[i].run == (size_t)ri && d->stages[i].k == k)
            return ss_csv_err(c, eb, SS_EPARSE, "stage", "stage %u of run '%s' is already on "
                              "line %u", k, r->name, d->stages[i].line);
    if (ss_grow((void **)&d->stages, cap, d->n_stages + 1, sizeof *d->stages))
        return ss_csv_err(c, eb, SS_ENOMEM, NULL, "out of memory");
    calib_fit_stage *s = &d->stages[d->n_stages];
    memset(s, 0, sizeof *s);
    *s = (calib_fit_stage){.run = (size_t)ri, .k = k, .line = c->line};
    if ((rc = stage_values(c, sc, r, s, eb)))
        return rc;
    s->fitted = s->real[CALIB_FIT_TTFT] < served_ms;
    r->n_stages++;
    r->n_fitted += (size_t)s->fitted;
    d->n_stages++;
    return SS_OK;
}

static int cmp_stage(const void *a, const void *b)
{
    const calib_fit_stage *x = a, *y = b;
    if (x->run != y->run)
        return x->run < y->run ? -1 : 1;
    return x->k < y->k ? -1 : x->k > y->k;
}

static int read_stages(reader *rd, double served_ms, ss_errbuf *eb)
{
    ss_csv c;
    int rc = ss_csv_open(&c, rd->d->stages_path, 0, eb);
    if (rc)
        return rc == SS_EIO ? SS_EPARSE : rc;
    stage_cols sc;
    memset(&sc, 0, sizeof sc);
    rc = stage_columns(&c, &sc, eb);
    size_t cap = 0;
    int more;
    while (!rc && (more = ss_csv_next(&c, eb)) != 0)
        rc = more < 0 ? more : read_stage_row(&c, rd, &sc, &cap, served_ms, eb);
    ss_csv_close(&c);
    if (!rc && !rd->d->n_stages)
        rc = ss_err(eb, SS_EPARSE, "%s: no stage of a run that can be replayed",
                    rd->d->stages_path);
    if (!rc)
        qsort(rd->d->stages, rd->d->n_stages, sizeof *rd->d->stages, cmp_stage);
    return rc;
}

/* }====================================================================== */

static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = ss_malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static void reader_fini(reader *rd)
{
    for (size_t i = 0; i < rd->n_seen; i++)
        ss_free(rd->seen[i]);
    ss_free(rd->seen);
    ss_free(rd->seen_line);
    ss_free(rd->seen_kept);
    ss_free(rd->only_buf);
    ss_free(rd->only);
}

int calib__fit_data_read(calib_fit_data *d, const char *dir, const catalog *cat,
                         const char *only, double served_ms, ss_errbuf *eb)
{
    memset(d, 0, sizeof *d);
    reader rd = {.d = d, .dir = dir, .cat = cat};
    d->runs_path = join(dir, "runs.csv");
    d->stages_path = join(dir, "stages.csv");
    int rc = d->runs_path && d->stages_path ? SS_OK : ss_err(eb, SS_ENOMEM, "out of memory");
    if (!rc)
        rc = split_only(&rd, only, eb);
    if (!rc)
        rc = read_runs(&rd, eb);
    if (!rc)
        rc = check_only(&rd, eb);
    if (!rc && !d->n_runs)
        rc = ss_err(eb, SS_EPARSE, "%s: no run that can be replayed (each needs a "
                    "catalog_model and a trace)", d->runs_path);
    if (!rc)
        rc = read_stages(&rd, served_ms, eb);
    reader_fini(&rd);
    return rc;
}

void calib__fit_data_fini(calib_fit_data *d)
{
    for (size_t i = 0; i < d->n_runs; i++) {
        ss_free(d->runs[i].name);
        ss_free(d->runs[i].trace);
        ss_free(d->runs[i].starts);
        ss_free(d->runs[i].reqs);
        ss_free(d->runs[i].trace_cache);
        ss_free(d->runs[i].block_at);
        ss_free(d->runs[i].blocks);
    }
    for (size_t i = 0; i < d->n_notes; i++)
        ss_free(d->notes[i]);
    ss_free(d->notes);
    ss_free(d->runs);
    ss_free(d->stages);
    ss_free(d->runs_path);
    ss_free(d->stages_path);
    memset(d, 0, sizeof *d);
}
