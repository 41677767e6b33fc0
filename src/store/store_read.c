/* Reading results back: a sweep point's headline figures (a resumed sweep's table), and the
 * typed rows the figures are drawn from (runs, sweep points, summaries, latencies, GPU time,
 * idle slices, tiers). Every query here is read-only and written out in full; nothing is
 * written to the database. */
#include "store/store_int.h"

#include "core/ss_alloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading sweep points ---------------------------------------------------------------- */

int store_point_summary(store *s, const char *sweep, const char *point, store_point_row *row,
                        ss_errbuf *eb)
{
    static const char sql[] =
        "SELECT p.run_id, coalesce(m.window_output_tokens_per_s, m.output_tokens_per_s),"
        " coalesce(m.window_goodput_tokens_per_s, m.goodput_tokens_per_s), m.sla_violation_rate,"
        " m.ttft_p99_ms, m.tbt_p99_ms, m.e2e_p99_ms, r.result_json FROM sweep_points p"
        " JOIN summary m USING (run_id) JOIN runs r USING (run_id)"
        " WHERE p.sweep = ? AND p.point = ?";
    sqlite3_stmt *st;
    memset(row, 0, sizeof *row);
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return store__db_err(s, eb, "reading a sweep point");
    sqlite3_bind_text(st, 1, sweep, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, point, -1, SQLITE_TRANSIENT);
    int rc = store__step(s, st), out = 0;
    if (rc == SQLITE_ROW) {
        row->run_id = sqlite3_column_int64(st, 0);
        row->output_tokens_per_s = sqlite3_column_double(st, 1);
        row->goodput_tokens_per_s = sqlite3_column_double(st, 2);
        row->sla_violation_rate = sqlite3_column_double(st, 3);
        row->ttft_p99_ms = sqlite3_column_double(st, 4);
        row->tbt_p99_ms = sqlite3_column_double(st, 5);
        row->e2e_p99_ms = sqlite3_column_double(st, 6);
        const char *j = (const char *)sqlite3_column_text(st, 7);
        if (j && !(row->result_json = ss_strdup(j)))
            out = ss_err(eb, SS_ENOMEM, "out of memory");
        else
            out = 1;
    } else if (rc != SQLITE_DONE) {
        out = store__db_err(s, eb, "reading a sweep point");
    }
    sqlite3_finalize(st);
    return out;
}

void store_point_row_free(store_point_row *row)
{
    ss_free(row->result_json);
    row->result_json = NULL;
}

/* ---- rows for figures ---------------------------------------------------------------------- */

const char *const store_run_setting_names[STORE_RUN_SETTINGS] = {
    "model", "gpu", "replicas", "tp", "pp", "batching", "routing", "cost_model", "trace",
    "limit_requests", "warmup_s"};

/* What one read hands its rows to: the caller's callback of that read (one is set) and its
 * user data, or the list a read collects. */
typedef struct reader {
    void *ud;
    store_sweep_point_fn *point;
    store_run_fn *run;
    store_summary_fn *summary;
    store_gpu_time_fn *gpu;
    store_idle_slice_fn *idle;
    store_tier_fn *tier;
    store_capacity_fn *capacity;
    double *v;         /* store_run_latencies' values (owned until handed out) */
    size_t n, cap;
    char *text;        /* store_newest_sweep's name (owned until handed out) */
} reader;

typedef int row_fn(reader *r, sqlite3_stmt *st, ss_errbuf *eb);

/* Text of column i, NULL for NULL (borrowed until the next step). */
static const char *col_text(sqlite3_stmt *st, int i)
{
    return (const char *)sqlite3_column_text(st, i);
}

/* Column i as a double, through SQLite's text of it as the figures have always read it (for a
 * REAL, 15 significant digits: 0.1 + 0.2 reads 0.3), so that they and --load's matching stay
 * as they were. NaN for NULL. */
static double col_real(sqlite3_stmt *st, int i)
{
    const char *t = col_text(st, i);
    return t ? strtod(t, NULL) : NAN;
}

/* Run sql, its ?1 bound to key (text) when non-NULL, else to id when id >= 0, and hand every
 * row to fn until it returns non-zero. 0, fn's code, or SS_EDB with eb set. */
static int each_row(store *s, const char *sql, const char *key, int64_t id, row_fn *fn,
                    reader *r, ss_errbuf *eb)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return store__db_err(s, eb, "preparing a query");
    if (key)
        sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
    else if (id >= 0)
        sqlite3_bind_int64(st, 1, id);
    int rc = SS_OK, step_rc;
    while ((step_rc = store__step(s, st)) == SQLITE_ROW)
        if ((rc = fn(r, st, eb)))
            break;
    /* a failed step is an error, not the end of the rows */
    if (!rc && step_rc != SQLITE_DONE)
        rc = store__db_err(s, eb, "running a query");
    sqlite3_finalize(st);
    return rc;
}

static int text_row(reader *r, sqlite3_stmt *st, ss_errbuf *eb)
{
    const char *t = col_text(st, 0);
    if (!t)
        return SS_OK;
    ss_free(r->text);
    if (!(r->text = ss_strdup(t)))
        return ss_err(eb, SS_ENOMEM, "out of memory");
    return SS_OK;
}

int store_newest_sweep(store *s, char **name_out, ss_errbuf *eb)
{
    reader r = {0};
    int rc = each_row(s, "SELECT sweep FROM sweep_points ORDER BY run_id DESC LIMIT 1", NULL,
                      -1, text_row, &r, eb);
    if (rc) {
        ss_free(r.text);
        return rc;
    }
    *name_out = r.text;
    return SS_OK;
}

static int point_row(reader *r, sqlite3_stmt *st, ss_errbuf *eb)
{
    const char *point = col_text(st, 1);
    return point ? r->point(r->ud, sqlite3_column_int64(st, 0), point, eb) : SS_OK;
}

int store_sweep_points(store *s, const char *sweep, store_sweep_point_fn *fn, void *ud,
                       ss_errbuf *eb)
{
    reader r = {.ud = ud, .point = fn};
    return each_row(s, "SELECT run_id, point FROM sweep_points WHERE sweep = ?1 ORDER BY run_id",
                    sweep, -1, point_row, &r, eb);
}

static int run_row(reader *r, sqlite3_stmt *st, ss_errbuf *eb)
{
    store_run_row run = {
        .run_id = sqlite3_column_int64(st, 0),
        .cluster_policy = col_text(st, 1),
        .ops = col_text(st, 2),
        .load = col_real(st, 3),
        .scenario_ini = col_text(st, 4),
    };
    for (int i = 0; i < STORE_RUN_SETTINGS; i++)
        run.settings[i] = col_text(st, 5 + i);
    return r->run(r->ud, &run, eb);
}

int store_runs(store *s, store_run_fn *fn, void *ud, ss_errbuf *eb)
{
    /* the settings' columns, in store_run_setting_names order */
    static const char sql[] =
        "SELECT run_id, cluster_policy, ops, COALESCE(load, rate_scale), scenario, model, gpu,"
        " replicas, tp, pp, batching, routing, cost_model, trace, limit_requests, warmup_s"
        " FROM runs ORDER BY run_id";
    reader r = {.ud = ud, .run = fn};
    return each_row(s, sql, NULL, -1, run_row, &r, eb);
}

static int summary_row(reader *r, sqlite3_stmt *st, ss_errbuf *eb)
{
    store_summary_row row = {
        .run_id = sqlite3_column_int64(st, 0),
        .output_tokens_per_s = col_real(st, 1),
        .goodput_tokens_per_s = col_real(st, 2),
        .sla_violation_rate = col_real(st, 3),
        .ttft_p99_ms = col_real(st, 4),
    };
    return r->summary(r->ud, &row, eb);
}

int store_summaries(store *s, store_summary_fn *fn, void *ud, ss_errbuf *eb)
{
    reader r = {.ud = ud, .summary = fn};
    return each_row(s, "SELECT run_id, coalesce(window_output_tokens_per_s, output_tokens_per_s),"
                       " coalesce(window_goodput_tokens_per_s, goodput_tokens_per_s),"
                       " sla_violation_rate, ttft_p99_ms FROM summary",
                    NULL, -1, summary_row, &r, eb);
}

static int value_row(reader *r, sqlite3_stmt *st, ss_errbuf *eb)
{
    double v = col_real(st, 0);
    if (isnan(v))
        return SS_OK;
    if (ss_grow((void **)&r->v, &r->cap, r->n + 1, sizeof *r->v))
        return ss_err(eb, SS_ENOMEM, "out of memory");
    r->v[r->n++] = v;
    return SS_OK;
}

int store_run_latencies(store *s, int64_t run_id, store_latency which, double **v_out,
                        size_t *n_out, ss_errbuf *eb)
{
    static const char *const sql[] = {
        [STORE_LAT_TTFT] = "SELECT ttft_ms FROM requests WHERE run_id = ?1 AND measured = 1 AND"
                           " status = 'completed' AND ttft_ms > 0 ORDER BY ttft_ms",
        [STORE_LAT_E2E] = "SELECT e2e_ms FROM requests WHERE run_id = ?1 AND measured = 1 AND"
                          " status = 'completed' AND e2e_ms > 0 ORDER BY e2e_ms",
    };
    if (SS_NEVER(which != STORE_LAT_TTFT && which != STORE_LAT_E2E))
        return ss_err(eb, SS_EINVAL, "%s: no such latency", s->path);
    reader r = {0};
    int rc = each_row(s, sql[which], NULL, run_id, value_row, &r, eb);
    if (rc) {
        ss_free(r.v);
        return rc;
    }
    *v_out = r.v;
    *n_out = r.n;
    return SS_OK;
}

static int gpu_row(reader *r, sqlite3_stmt *st, ss_errbuf *eb)
{
    store_gpu_time_row row = {
        .gpu = sqlite3_column_int64(st, 0),
        .tenant = col_text(st, 1),
        .window_s = col_real(st, 2),
        .compute_s = col_real(st, 3),
        .host_s = col_real(st, 4),
        .idle_s = col_real(st, 5),
    };
    return r->gpu(r->ud, &row, eb);
}

int store_run_gpu_times(store *s, int64_t run_id, store_gpu_time_fn *fn, void *ud,
                        ss_errbuf *eb)
{
    /* before version 9 (store.h): the summary's window, compute the window less the idle
     * slices, host time the whole run's (within the idle slices) */
    static const char sql[] =
        "SELECT g.gpu, g.tenant, COALESCE(g.window_s, s.window_s),"
        " COALESCE(g.compute_s, COALESCE(g.window_s, s.window_s) - g.idle_s),"
        " COALESCE(g.host_s, MIN(MAX(g.busy_s - g.device_busy_s, 0), g.idle_s)), g.idle_s"
        " FROM gpus g LEFT JOIN summary s USING (run_id) WHERE g.run_id = ?1 ORDER BY g.gpu";
    reader r = {.ud = ud, .gpu = fn};
    return each_row(s, sql, NULL, run_id, gpu_row, &r, eb);
}

static int idle_row(reader *r, sqlite3_stmt *st, ss_errbuf *eb)
{
    store_idle_slice_row row = {.bucket = sqlite3_column_int64(st, 0),
                                .gpu_s = col_real(st, 1)};
    return r->idle(r->ud, &row, eb);
}

int store_run_idle_slices(store *s, int64_t run_id, store_idle_slice_fn *fn, void *ud,
                          ss_errbuf *eb)
{
    reader r = {.ud = ud, .idle = fn};
    return each_row(s, "SELECT bucket, gpu_s FROM idle_slices WHERE run_id = ?1", NULL, run_id,
                    idle_row, &r, eb);
}

static int tier_row(reader *r, sqlite3_stmt *st, ss_errbuf *eb)
{
    store_tier_row row = {.tier = sqlite3_column_int64(st, 0),
                          .sla_violation_rate = col_real(st, 1),
                          .ttft_p99_ms = col_real(st, 2)};
    return r->tier(r->ud, &row, eb);
}

int store_run_tiers(store *s, int64_t run_id, store_tier_fn *fn, void *ud, ss_errbuf *eb)
{
    reader r = {.ud = ud, .tier = fn};
    return each_row(s, "SELECT tier, sla_violation_rate, ttft_p99_ms FROM tiers"
                       " WHERE run_id = ?1", NULL, run_id, tier_row, &r, eb);
}

static int capacity_row(reader *r, sqlite3_stmt *st, ss_errbuf *eb)
{
    store_capacity_row row = {.bundle = col_text(st, 0), .seeds = sqlite3_column_int64(st, 1),
                              .capacity = col_real(st, 2), .lo = col_real(st, 3),
                              .hi = col_real(st, 4), .ratio = col_real(st, 5),
                              .verdict = col_text(st, 6), .status = col_text(st, 7)};
    return r->capacity(r->ud, &row, eb);
}

int store_capacities_of(store *s, const char *sweep, store_capacity_fn *fn, void *ud,
                        ss_errbuf *eb)
{
    reader r = {.ud = ud, .capacity = fn};
    return each_row(s, "SELECT bundle, seeds, capacity, capacity_ci95_lo, capacity_ci95_hi,"
                       " ratio, verdict, status FROM capacities WHERE sweep = ?1 AND"
                       " capacity_id >= (SELECT max(capacity_id) FROM capacities"
                       " WHERE sweep = ?1 AND bundle = reference) ORDER BY capacity_id",
                    sweep, -1, capacity_row, &r, eb);
}
