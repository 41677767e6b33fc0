/* SQLite implementation of the results store: schema, prepared statements, one transaction
 * per run, and merging databases. Every sqlite3 return code is checked and its message copied
 * into the errbuf; every statement step goes through step() or exec(), where tests make the
 * N-th one fail (store_fail_step_after). */
#include "store/store.h"

#include "config.h"
#include "version.h"

#include "core/ss_alloc.h"
#include "core/ss_strbuf.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Schema: a new database gets version 1 and then every migration, so that new and upgraded
 * databases have the same layout. Times are in ms (latencies) or s (spans); token counts are
 * integers. Version 2 added summary.swap_outs/aborted; version 3 multi-tenant results: the
 * tenants and tiers tables, SLA and migration columns; version 4 summary.scale_ups/scale_downs;
 * version 5 idle GPU slices (the idle_slices table, summary and gpus columns); version 6
 * operator placement (runs.ops, SliceScheduler's summary columns); version 7 sweeps (the
 * sweep_points table: which run is which point of which sweep; runs.result_json: what
 * `replay --json` printed for the run); version 8 validations; version 9 runs.load, each
 * GPU's tenant and compute/host time over the measurement window, and the summary's
 * rejected_* columns (rejected requests by reason); version 10 runs.engine (the serving-engine
 * profile; runs stored before engine profiles existed read vllm-eager, whose coefficients
 * they were computed with) and automatic prefix caching (the summary's and tenants' prefix_*
 * columns, 0 when the cache was off); version 11 engine fits (`slicesim fit`: the fits table and
 * each fit's per-stage comparison, fit_stages). */
static const char schema_sql[] =
    "CREATE TABLE runs ("
    " run_id INTEGER PRIMARY KEY,"
    " created_utc TEXT NOT NULL,"   /* wall-clock start, ISO 8601: metadata, not a result */
    " version TEXT NOT NULL,"       /* git describe of the binary */
    " build TEXT NOT NULL,"         /* build options */
    " command TEXT NOT NULL,"       /* command line */
    " trace TEXT NOT NULL, trace_format TEXT NOT NULL, trace_digest TEXT NOT NULL,"
    " model TEXT NOT NULL, gpu TEXT NOT NULL, replicas INTEGER NOT NULL, tp INTEGER NOT NULL,"
    " batching TEXT NOT NULL, routing TEXT NOT NULL, cost_model TEXT NOT NULL,"
    " params TEXT NOT NULL,"        /* JSON object of resolved parameters */
    " seed INTEGER NOT NULL, rate_scale REAL NOT NULL, limit_requests INTEGER NOT NULL,"
    " wall_s REAL, events INTEGER, sim_s REAL);"
    "CREATE TABLE requests ("
    " run_id INTEGER NOT NULL REFERENCES runs(run_id),"
    " req_id INTEGER NOT NULL, tenant TEXT NOT NULL, tier INTEGER NOT NULL,"
    " container INTEGER NOT NULL, status TEXT NOT NULL,"  /* 'completed' or 'rejected' */
    " arrival_s REAL NOT NULL, prompt_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,"
    " generated_tokens INTEGER NOT NULL, preemptions INTEGER NOT NULL,"
    " ttft_ms REAL, e2e_ms REAL, tbt_mean_ms REAL, tbt_max_ms REAL);"
    "CREATE INDEX requests_by_run ON requests(run_id);"
    "CREATE TABLE summary ("
    " run_id INTEGER PRIMARY KEY REFERENCES runs(run_id),"
    " requests INTEGER, completed INTEGER, rejected INTEGER, truncated INTEGER,"
    " preemptions INTEGER, iterations INTEGER, peak_in_flight INTEGER,"
    " prompt_tokens INTEGER, output_tokens INTEGER, sim_s REAL,"
    " prompt_tokens_per_s REAL, output_tokens_per_s REAL, requests_per_s REAL,"
    " ttft_mean_ms REAL, ttft_p50_ms REAL, ttft_p90_ms REAL, ttft_p99_ms REAL, ttft_max_ms REAL,"
    " tbt_mean_ms REAL, tbt_p50_ms REAL, tbt_p90_ms REAL, tbt_p99_ms REAL, tbt_max_ms REAL,"
    " e2e_mean_ms REAL, e2e_p50_ms REAL, e2e_p90_ms REAL, e2e_p99_ms REAL, e2e_max_ms REAL);"
    "CREATE TABLE gpus ("
    " run_id INTEGER NOT NULL REFERENCES runs(run_id), gpu INTEGER NOT NULL,"
    " node INTEGER NOT NULL, container INTEGER NOT NULL, kind TEXT NOT NULL,"
    " busy_s REAL, utilization REAL, iterations INTEGER, kv_blocks INTEGER,"
    " kv_peak_blocks INTEGER, weights_gib REAL, kv_pool_gib REAL,"
    " PRIMARY KEY (run_id, gpu));"
    "PRAGMA user_version = 1;";

/* Columns of a tenant's or a tier's results (the tenants and tiers tables). */
#define GROUP_COLS                                                                                 \
    " requests INTEGER, completed INTEGER, rejected INTEGER, truncated INTEGER,"                  \
    " preemptions INTEGER, sla_violations INTEGER, sla_violation_rate REAL,"                      \
    " prompt_tokens_per_s REAL, output_tokens_per_s REAL, requests_per_s REAL,"                   \
    " goodput_tokens_per_s REAL,"                                                                 \
    " ttft_mean_ms REAL, ttft_p50_ms REAL, ttft_p90_ms REAL, ttft_p99_ms REAL, ttft_max_ms REAL,"  \
    " tbt_mean_ms REAL, tbt_p50_ms REAL, tbt_p90_ms REAL, tbt_p99_ms REAL, tbt_max_ms REAL,"       \
    " e2e_mean_ms REAL, e2e_p50_ms REAL, e2e_p90_ms REAL, e2e_p99_ms REAL, e2e_max_ms REAL"

/* Upgrades: migrations[v] takes a version-v database to v + 1. */
static const char *const migrations[STORE_SCHEMA_VERSION] = {
    [1] = "ALTER TABLE summary ADD COLUMN swap_outs INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN aborted INTEGER DEFAULT 0;"
          "PRAGMA user_version = 2;",
    [2] = "ALTER TABLE runs ADD COLUMN pp INTEGER DEFAULT 1;"
          "ALTER TABLE runs ADD COLUMN cluster_policy TEXT DEFAULT 'container';"
          "ALTER TABLE runs ADD COLUMN warmup_s REAL DEFAULT 0;"
          "ALTER TABLE runs ADD COLUMN scenario TEXT DEFAULT '';"
          "ALTER TABLE requests ADD COLUMN sla_violated INTEGER DEFAULT 0;"
          "ALTER TABLE requests ADD COLUMN measured INTEGER DEFAULT 1;"
          "ALTER TABLE requests ADD COLUMN migrations INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN measured_requests INTEGER;"
          "ALTER TABLE summary ADD COLUMN window_s REAL;"
          "ALTER TABLE summary ADD COLUMN sla_violations INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN sla_violation_rate REAL DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN goodput_tokens_per_s REAL;"
          "ALTER TABLE summary ADD COLUMN migrations INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN migrations_aborted INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN migration_gib REAL DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN reallocations INTEGER DEFAULT 0;"
          "CREATE TABLE tenants (run_id INTEGER NOT NULL REFERENCES runs(run_id),"
          " tenant TEXT NOT NULL, model TEXT NOT NULL, replicas INTEGER NOT NULL," GROUP_COLS ","
          " PRIMARY KEY (run_id, tenant));"
          "CREATE TABLE tiers (run_id INTEGER NOT NULL REFERENCES runs(run_id),"
          " tier INTEGER NOT NULL," GROUP_COLS ", PRIMARY KEY (run_id, tier));"
          "PRAGMA user_version = 3;",
    [3] = "ALTER TABLE summary ADD COLUMN scale_ups INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN scale_downs INTEGER DEFAULT 0;"
          "PRAGMA user_version = 4;",
    [4] = "ALTER TABLE summary ADD COLUMN idle_slices INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN idle_gpu_s REAL DEFAULT 0;"
          "ALTER TABLE gpus ADD COLUMN device_busy_s REAL;"
          "ALTER TABLE gpus ADD COLUMN idle_slices INTEGER;"
          "ALTER TABLE gpus ADD COLUMN idle_s REAL;"
          "CREATE TABLE idle_slices (run_id INTEGER NOT NULL REFERENCES runs(run_id),"
          " bucket INTEGER NOT NULL, lo_ms REAL NOT NULL, hi_ms REAL, count INTEGER NOT NULL,"
          " gpu_s REAL NOT NULL, free_gib_mean REAL, PRIMARY KEY (run_id, bucket));"
          "PRAGMA user_version = 5;",
    [5] = "ALTER TABLE runs ADD COLUMN ops TEXT DEFAULT 'home';"
          "ALTER TABLE summary ADD COLUMN offloads INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN offload_ops INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN offload_gib REAL DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN slices_used INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN whatifs INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN slice_decisions INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN slice_wall_s REAL DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN prediction_error_ms REAL DEFAULT 0;"
          "PRAGMA user_version = 6;",
    [6] = "CREATE TABLE sweep_points (sweep TEXT NOT NULL, point TEXT NOT NULL,"
          " run_id INTEGER NOT NULL REFERENCES runs(run_id), PRIMARY KEY (sweep, point));"
          "ALTER TABLE runs ADD COLUMN result_json TEXT;"
          "PRAGMA user_version = 7;",
    [7] = "CREATE TABLE validations (validation_id INTEGER PRIMARY KEY, created TEXT NOT NULL,"
          " version TEXT NOT NULL, command TEXT, name TEXT, model TEXT NOT NULL,"
          " tp INTEGER NOT NULL, gpu TEXT NOT NULL, device TEXT NOT NULL, backend TEXT NOT NULL,"
          " timer TEXT NOT NULL, cost_model TEXT NOT NULL, trace TEXT, requests INTEGER,"
          " iterations INTEGER, reps INTEGER, l2_cold INTEGER, mape_pct REAL, bias_pct REAL,"
          " predicted_ms REAL, measured_ms REAL, measured_span_ms REAL);"
          "CREATE TABLE validation_ops ("
          " validation_id INTEGER NOT NULL REFERENCES validations(validation_id),"
          " op TEXT NOT NULL, executions INTEGER, predicted_ms REAL, measured_ms REAL,"
          " mape_pct REAL, bias_pct REAL, worst_pct REAL, worst_iteration INTEGER,"
          " PRIMARY KEY (validation_id, op));"
          "CREATE TABLE validation_iters ("
          " validation_id INTEGER NOT NULL REFERENCES validations(validation_id),"
          " iteration INTEGER NOT NULL, sim_start_s REAL, sim_ms REAL, prefills INTEGER,"
          " prefill_tokens INTEGER, decodes INTEGER, decode_ctx_tokens INTEGER,"
          " predicted_ms REAL, measured_ms REAL, measured_span_ms REAL, predicted_host_ms REAL,"
          " error_pct REAL, PRIMARY KEY (validation_id, iteration));"
          "PRAGMA user_version = 8;",
    /* version 9: the load of compare and sweep runs; each GPU's tenant and its time over the
     * measurement window (gpus.utilization is compute_s / window_s from here on); why requests
     * were rejected */
    [8] = "ALTER TABLE runs ADD COLUMN load REAL;"
          "ALTER TABLE gpus ADD COLUMN tenant TEXT;"
          "ALTER TABLE gpus ADD COLUMN window_s REAL;"
          "ALTER TABLE gpus ADD COLUMN compute_s REAL;"
          "ALTER TABLE gpus ADD COLUMN host_s REAL;"
          "ALTER TABLE summary ADD COLUMN rejected_too_long INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN rejected_batch_tokens INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN rejected_kv_blocks INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN rejected_preempted INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN rejected_other INTEGER DEFAULT 0;"
          "PRAGMA user_version = 9;",
    /* version 10: the serving-engine profile of the run (engine profiles); automatic prefix
     * caching, for the run and per tenant (PREFIX_NAMES) */
    [9] = "ALTER TABLE runs ADD COLUMN engine TEXT DEFAULT 'vllm-eager';"
          "ALTER TABLE summary ADD COLUMN prefix_query_tokens INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN prefix_hit_tokens INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN prefix_query_blocks INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN prefix_hit_blocks INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN prefix_saved_tokens INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN prefix_evictions INTEGER DEFAULT 0;"
          "ALTER TABLE tenants ADD COLUMN prefix_query_tokens INTEGER DEFAULT 0;"
          "ALTER TABLE tenants ADD COLUMN prefix_hit_tokens INTEGER DEFAULT 0;"
          "ALTER TABLE tenants ADD COLUMN prefix_query_blocks INTEGER DEFAULT 0;"
          "ALTER TABLE tenants ADD COLUMN prefix_hit_blocks INTEGER DEFAULT 0;"
          "ALTER TABLE tenants ADD COLUMN prefix_saved_tokens INTEGER DEFAULT 0;"
          "ALTER TABLE tenants ADD COLUMN prefix_evictions INTEGER DEFAULT 0;"
          "PRAGMA user_version = 10;",
    /* version 11: engine profiles fitted to measured serving runs (slicesim fit), and the
     * per-stage real and simulated latencies of the final engine */
    [10] = "CREATE TABLE fits (fit_id INTEGER PRIMARY KEY, created TEXT NOT NULL,"
           " version TEXT NOT NULL, command TEXT, mode TEXT NOT NULL, dir TEXT NOT NULL,"
           " start_engine TEXT NOT NULL, engine TEXT NOT NULL, terms TEXT NOT NULL,"
           " params TEXT NOT NULL, profile TEXT, runs INTEGER, stages INTEGER,"
           " fitted_stages INTEGER, served_ms REAL, objective REAL, mape_ttft_mean_pct REAL,"
           " mape_ttft_p90_pct REAL, mape_itl_pct REAL, mape_e2e_mean_pct REAL,"
           " mape_e2e_p90_pct REAL, runaway INTEGER, iterations INTEGER, evaluations INTEGER,"
           " converged INTEGER, wall_s REAL);"
           "CREATE TABLE fit_stages (fit_id INTEGER NOT NULL REFERENCES fits(fit_id),"
           " run TEXT NOT NULL, stage INTEGER NOT NULL, rate REAL, fitted INTEGER NOT NULL,"
           " completed INTEGER, real_ttft_mean_ms REAL, sim_ttft_mean_ms REAL,"
           " real_ttft_p90_ms REAL, sim_ttft_p90_ms REAL, real_itl_ms REAL, sim_itl_ms REAL,"
           " real_e2e_mean_ms REAL, sim_e2e_mean_ms REAL, real_e2e_p90_ms REAL,"
           " sim_e2e_p90_ms REAL, PRIMARY KEY (fit_id, run, stage));"
           "PRAGMA user_version = 11;",
};

/* Prefix-cache columns of summary and tenants, in bind_prefix order. */
#define PREFIX_NAMES                                                                               \
    " prefix_query_tokens, prefix_hit_tokens, prefix_query_blocks, prefix_hit_blocks,"            \
    " prefix_saved_tokens, prefix_evictions"
#define PREFIX_VALUES "?,?,?,?,?,?"

#define GROUP_NAMES                                                                                \
    " requests, completed, rejected, truncated, preemptions, sla_violations, sla_violation_rate,"  \
    " prompt_tokens_per_s, output_tokens_per_s, requests_per_s, goodput_tokens_per_s,"            \
    " ttft_mean_ms, ttft_p50_ms, ttft_p90_ms, ttft_p99_ms, ttft_max_ms,"                          \
    " tbt_mean_ms, tbt_p50_ms, tbt_p90_ms, tbt_p99_ms, tbt_max_ms,"                               \
    " e2e_mean_ms, e2e_p50_ms, e2e_p90_ms, e2e_p99_ms, e2e_max_ms"
#define GROUP_VALUES "?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?"

enum { ST_RUN, ST_REQ, ST_GPU, ST_SUM, ST_END, ST_TENANT, ST_TIER, ST_SLICE, ST_POINT, ST_HAS, ST__N };

static const char *const stmt_sql[ST__N] = {
    [ST_RUN] = "INSERT INTO runs (created_utc, version, build, command, trace, trace_format,"
               " trace_digest, model, gpu, replicas, tp, batching, routing, cost_model, params,"
               " seed, rate_scale, limit_requests, pp, cluster_policy, warmup_s, scenario, ops,"
               " load, engine)"
               " VALUES (?,?,?,?,?,?,'',?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_REQ] = "INSERT INTO requests (run_id, req_id, tenant, tier, container, status, arrival_s,"
               " prompt_tokens, output_tokens, generated_tokens, preemptions, ttft_ms, e2e_ms,"
               " tbt_mean_ms, tbt_max_ms, sla_violated, measured, migrations)"
               " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_GPU] = "INSERT INTO gpus (run_id, gpu, node, container, kind, busy_s, utilization,"
               " iterations, kv_blocks, kv_peak_blocks, weights_gib, kv_pool_gib,"
               " device_busy_s, idle_slices, idle_s,"
               " tenant, window_s, compute_s, host_s)"
               " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_SUM] = "INSERT INTO summary (run_id, iterations, peak_in_flight, prompt_tokens,"
               " output_tokens, sim_s, swap_outs, aborted, measured_requests, window_s,"
               " migrations, migrations_aborted, migration_gib, reallocations,"
               GROUP_NAMES ", scale_ups, scale_downs, idle_slices, idle_gpu_s, offloads,"
               " offload_ops, offload_gib, slices_used, whatifs, slice_decisions, slice_wall_s,"
               " prediction_error_ms, rejected_too_long, rejected_batch_tokens,"
               " rejected_kv_blocks, rejected_preempted, rejected_other," PREFIX_NAMES ")"
               " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?," GROUP_VALUES ",?,?,?,?,?,?,?,?,?,?,?,?,"
               "?,?,?,?,?," PREFIX_VALUES ")",
    [ST_TENANT] = "INSERT INTO tenants (run_id, tenant, model, replicas," GROUP_NAMES ","
                  PREFIX_NAMES ") VALUES (?,?,?,?," GROUP_VALUES "," PREFIX_VALUES ")",
    [ST_TIER] = "INSERT INTO tiers (run_id, tier," GROUP_NAMES ") VALUES (?,?," GROUP_VALUES ")",
    [ST_POINT] = "INSERT OR REPLACE INTO sweep_points (sweep, point, run_id) VALUES (?,?,?)",
    [ST_HAS] = "SELECT run_id FROM sweep_points WHERE sweep = ? AND point = ?",
    [ST_SLICE] = "INSERT INTO idle_slices (run_id, bucket, lo_ms, hi_ms, count, gpu_s,"
                 " free_gib_mean) VALUES (?,?,?,?,?,?,?)",
    [ST_END] = "UPDATE runs SET wall_s = ?, events = ?, sim_s = ?, trace_digest = ?,"
               " result_json = ? WHERE run_id = ?",
};

struct store {
    sqlite3 *db;
    sqlite3_stmt *st[ST__N];
    int injected;    /* SQLite code of an injected step failure not yet reported, 0: none */
    int in_run;      /* a transaction is open */
    int64_t run_id;  /* of the open run */
    char *path;      /* owned */
};

/* ---- fault injection: every statement step goes through step() or exec() ------------------ */

static uint64_t fail_countdown; /* steps until the injected failure (1: the next); 0: off */
static int fail_rc;             /* the SQLite result code it returns */
static uint64_t n_steps;        /* steps so far */

void store_fail_step_after(uint64_t n, int sqlite_rc)
{
    fail_countdown = n;
    fail_rc = sqlite_rc;
}

uint64_t store_step_count(void) { return n_steps; }

/* Whether this step is the one to fail: then its code goes to *injected (for the message),
 * else *injected is cleared (a real step's failure is SQLite's own). */
static int injected_now(int *injected)
{
    n_steps++;
    *injected = fail_countdown && !--fail_countdown ? fail_rc : 0;
    return *injected != 0;
}

static int step(store *s, sqlite3_stmt *st)
{
    return injected_now(&s->injected) ? s->injected : sqlite3_step(st);
}

/* The message of the last failure: the injected one's, or SQLite's. */
static const char *last_error(store *s)
{
    if (s->injected) {
        int rc = s->injected;
        s->injected = 0;
        return sqlite3_errstr(rc);
    }
    return s->db ? sqlite3_errmsg(s->db) : "cannot open";
}

static int db_err(store *s, ss_errbuf *eb, const char *what)
{
    return ss_err(eb, SS_EDB, "%s: %s: %s", s->path, what, last_error(s));
}

/* Run SQL text (one step, for fault injection). */
static int exec(store *s, const char *sql, ss_errbuf *eb, const char *what)
{
    char *msg = NULL;
    if (injected_now(&s->injected))
        return db_err(s, eb, what);
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) == SQLITE_OK)
        return SS_OK;
    int rc = ss_err(eb, SS_EDB, "%s: %s: %s", s->path, what, msg ? msg : "failed");
    sqlite3_free(msg);
    return rc;
}

/* Roll back the open transaction. Never fails by injection: a failed write must still be
 * undone (and if ROLLBACK itself fails, closing the connection rolls back). */
static void rollback(store *s)
{
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

/* How long a writer waits for another's transaction: SLICESIM_BUSY_TIMEOUT_MS (tests use a
 * short one), else 30 s. */
static int busy_timeout_ms(void)
{
    const char *v = getenv("SLICESIM_BUSY_TIMEOUT_MS");
    char *end;
    long ms = v && *v ? strtol(v, &end, 10) : -1;
    return v && *v && !*end && ms >= 0 && ms <= 3600000 ? (int)ms : 30000;
}

/* Create parent directory of path (one level) when missing. */
static int ensure_parent(const char *path, ss_errbuf *eb)
{
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path)
        return SS_OK;
    char *dir = ss_strndup(path, (size_t)(slash - path));
    if (!dir)
        return ss_err(eb, SS_ENOMEM, "out of memory");
    int rc = SS_OK;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        rc = ss_err(eb, SS_EIO, "%s: cannot create directory: %s", dir, strerror(errno));
    ss_free(dir);
    return rc;
}

static int query_int(store *s, const char *sql, int64_t *out)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return SS_EDB;
    int rc = step(s, st);
    *out = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? SS_OK : SS_EDB;
}

/* The schema version in *ver, refusing a newer one or a database that is not ours. A file
 * that is not ours is SS_EDB for a database a run writes to, SS_EPARSE (bad input) for one
 * read as an input (`input`). */
static int schema_version_of(store *s, int64_t *ver, int input, ss_errbuf *eb)
{
    int64_t n_tables;
    if (query_int(s, "PRAGMA user_version", ver) ||
        query_int(s, "SELECT count(*) FROM sqlite_master", &n_tables)) {
        int rc = db_err(s, eb, "not a readable SQLite database");
        return input && sqlite3_errcode(s->db) == SQLITE_NOTADB ? SS_EPARSE : rc;
    }
    if (*ver > STORE_SCHEMA_VERSION)
        return ss_err(eb, SS_EDB, "%s: results schema %lld is newer than this slicesim's (%d)",
                      s->path, (long long)*ver, STORE_SCHEMA_VERSION);
    if (*ver == 0 && n_tables > 0)
        return ss_err(eb, input ? SS_EPARSE : SS_EDB,
                      "%s: not a slicesim results database (it has other tables)", s->path);
    if (*ver == 0 && input)
        return ss_err(eb, SS_EPARSE, "%s: empty: not a slicesim results database", s->path);
    return SS_OK;
}

static int schema_version(store *s, int64_t *ver, ss_errbuf *eb)
{
    return schema_version_of(s, ver, 0, eb);
}

static int init_schema(store *s, ss_errbuf *eb)
{
    int64_t ver;
    int rc = schema_version(s, &ver, eb);
    if (rc || ver == STORE_SCHEMA_VERSION)
        return rc;
    rc = exec(s, "BEGIN IMMEDIATE", eb, "creating schema");
    /* Read it again under the lock: another process may have created or upgraded the schema
     * while this one waited (two runs starting on a new database at once). */
    if (!rc)
        rc = schema_version(s, &ver, eb);
    if (ver == 0 && !rc) {
        rc = exec(s, schema_sql, eb, "creating schema");
        ver = 1;
    }
    for (int64_t v = ver; v < STORE_SCHEMA_VERSION && !rc; v++)
        rc = exec(s, migrations[v], eb, "upgrading the schema");
    if (!rc && !(rc = exec(s, "COMMIT", eb, "creating schema")))
        return SS_OK;
    rollback(s);
    return rc;
}

/* WAL mode (readers never wait for a run being written), synchronous=NORMAL. Turning a new
 * file to WAL needs it to itself, and SQLite does not wait for that (its busy handler could
 * deadlock there): when two runs start on a new database at once, one finds it busy. So wait
 * here, up to the busy timeout. */
static int set_wal(store *s, ss_errbuf *eb)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "PRAGMA journal_mode=WAL", -1, &st, NULL) != SQLITE_OK)
        return db_err(s, eb, "setting WAL");
    int rc, wal, limit = busy_timeout_ms();
    for (int waited = 0;; waited += 10) {
        rc = step(s, st);
        /* refused for now: an error, or the old mode back without one */
        wal = rc == SQLITE_ROW && !strcmp((const char *)sqlite3_column_text(st, 0), "wal");
        int busy = rc == SQLITE_BUSY || (rc == SQLITE_ROW && !wal);
        sqlite3_reset(st);
        if (!busy || s->injected || waited >= limit)
            break;
        sqlite3_sleep(10);
    }
    sqlite3_finalize(st);
    if (!wal && rc == SQLITE_ROW)
        return ss_err(eb, SS_EDB, "%s: setting WAL: %s", s->path, sqlite3_errstr(SQLITE_BUSY));
    if (!wal)
        return db_err(s, eb, "setting WAL");
    return exec(s, "PRAGMA synchronous=NORMAL", eb, "setting WAL");
}

static int prepare_all(store *s, ss_errbuf *eb)
{
    for (int i = 0; i < ST__N; i++)
        if (sqlite3_prepare_v3(s->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->st[i],
                               NULL) != SQLITE_OK)
            return db_err(s, eb, "preparing statements");
    return SS_OK;
}

int store_open(store **s_out, const char *path, ss_errbuf *eb)
{
    store *s = ss_calloc(1, sizeof *s);
    if (!s || !(s->path = ss_strdup(path))) {
        ss_free(s);
        return ss_err(eb, SS_ENOMEM, "out of memory");
    }
    int rc = ensure_parent(path, eb);
    /* URI names are allowed so that a merge can attach its input read-only (ro_uri); a path is
     * read as a URI only when it starts with "file:" */
    if (!rc && sqlite3_open_v2(path, &s->db,
                               SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI,
                               NULL) != SQLITE_OK)
        rc = db_err(s, eb, "cannot open");
    if (!rc) {
        sqlite3_busy_timeout(s->db, busy_timeout_ms());
        rc = set_wal(s, eb);
    }
    if (!rc)
        rc = init_schema(s, eb);
    if (!rc)
        rc = prepare_all(s, eb);
    if (rc) {
        store_close(&s);
        return rc;
    }
    *s_out = s;
    return SS_OK;
}

/* An older schema read without writing to the file: the database is copied into memory and
 * upgraded there, so readers see the current layout. */
static int upgrade_in_memory(store *s, ss_errbuf *eb)
{
    sqlite3 *mem = NULL;
    if (sqlite3_open_v2(":memory:", &mem, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        sqlite3_close(mem);
        return ss_err(eb, SS_ENOMEM, "out of memory");
    }
    sqlite3_backup *b = sqlite3_backup_init(mem, "main", s->db, "main");
    int rc = b ? sqlite3_backup_step(b, -1) : sqlite3_errcode(mem);
    sqlite3_backup_finish(b);
    if (rc != SQLITE_DONE) {
        int out = db_err(s, eb, "reading");
        sqlite3_close(mem);
        return out;
    }
    sqlite3_close(s->db);
    s->db = mem;
    return init_schema(s, eb);
}

/* Open path for reading only and check it is a slicesim database of this or an older schema
 * (*ver). On failure *s_out is NULL. */
static int open_input(store **s_out, const char *path, int64_t *ver, ss_errbuf *eb)
{
    *s_out = NULL;
    store *s = ss_calloc(1, sizeof *s);
    if (!s || !(s->path = ss_strdup(path))) {
        ss_free(s);
        return ss_err(eb, SS_ENOMEM, "out of memory");
    }
    int rc = SS_OK;
    if (access(path, R_OK) != 0)
        rc = ss_err(eb, SS_EIO, "%s: cannot open: %s", path, strerror(errno));
    /* Not SQLITE_OPEN_READONLY: a read-only connection to a WAL database leaves its -wal and
     * -shm files behind. query_only refuses every change to the file just the same. Without
     * SQLITE_OPEN_CREATE a missing file is an error, not a new database. */
    else if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
        rc = db_err(s, eb, "cannot open");
    if (!rc) {
        sqlite3_busy_timeout(s->db, busy_timeout_ms());
        rc = exec(s, "PRAGMA query_only = 1", eb, "opening read-only");
    }
    if (!rc)
        rc = schema_version_of(s, ver, 1, eb);
    if (rc)
        store_close(&s);
    *s_out = s;
    return rc;
}

int store_open_readonly(store **s_out, const char *path, ss_errbuf *eb)
{
    store *s = NULL;
    int64_t ver = 0;
    int rc = open_input(&s, path, &ver, eb);
    if (!rc && ver < STORE_SCHEMA_VERSION)
        rc = upgrade_in_memory(s, eb);
    if (rc) {
        store_close(&s);
        return rc;
    }
    *s_out = s;
    return SS_OK;
}

int store_check_input(const char *path, ss_errbuf *eb)
{
    store *s = NULL;
    int64_t ver;
    int rc = open_input(&s, path, &ver, eb);
    store_close(&s);
    return rc;
}

void store_remove(const char *path)
{
    static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
    size_t n = strlen(path);
    char *buf = ss_malloc(n + 9);
    if (!buf) {
        remove(path);
        return;
    }
    for (size_t i = 0; i < sizeof suffix / sizeof *suffix; i++) {
        memcpy(buf, path, n);
        memcpy(buf + n, suffix[i], strlen(suffix[i]) + 1);
        remove(buf);
    }
    ss_free(buf);
}

void store_close(store **sp)
{
    store *s = *sp;
    if (!s)
        return;
    store_run_abort(s);
    for (int i = 0; i < ST__N; i++)
        sqlite3_finalize(s->st[i]);
    sqlite3_close(s->db);
    ss_free(s->path);
    ss_free(s);
    *sp = NULL;
}

const char *store_path(const store *s) { return s->path; }

/* ---- binding helpers: column index advances with each bind ------------------------------- */

typedef struct binder {
    sqlite3_stmt *st;
    int i, rc;
} binder;

static void b_text(binder *b, const char *v)
{
    if (!b->rc)
        b->rc = sqlite3_bind_text(b->st, ++b->i, v ? v : "", -1, SQLITE_TRANSIENT);
}
static void b_int(binder *b, int64_t v)
{
    if (!b->rc)
        b->rc = sqlite3_bind_int64(b->st, ++b->i, v);
}
static void b_real(binder *b, double v)
{
    if (!b->rc)
        b->rc = sqlite3_bind_double(b->st, ++b->i, v);
}
static void b_null(binder *b)
{
    if (!b->rc)
        b->rc = sqlite3_bind_null(b->st, ++b->i);
}

/* Step a bound statement once and reset it. */
static int run_stmt(store *s, binder *b, ss_errbuf *eb, const char *what)
{
    int rc = b->rc == SQLITE_OK ? step(s, b->st) : b->rc;
    int ok = rc == SQLITE_DONE;
    int out = ok ? SS_OK : db_err(s, eb, what);
    sqlite3_reset(b->st);
    sqlite3_clear_bindings(b->st);
    return out;
}

static void utc_now(char buf[32])
{
    time_t t = time(NULL);
    struct tm tmv;
    gmtime_r(&t, &tmv);
    strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tmv);
}

int store_run_begin(store *s, const store_run_info *in, int64_t *run_id_out, ss_errbuf *eb)
{
    if (s->in_run)
        return ss_err(eb, SS_EINVAL, "%s: a run is already open", s->path);
    int rc = exec(s, "BEGIN IMMEDIATE", eb, "starting the run's transaction");
    if (rc)
        return rc;
    s->in_run = 1;
    char now[32];
    utc_now(now);
    binder b = {s->st[ST_RUN], 0, 0};
    b_text(&b, now);
    b_text(&b, SS_VERSION);
    b_text(&b, SS_BUILD_OPTIONS);
    b_text(&b, in->command);
    b_text(&b, in->trace);
    b_text(&b, in->trace_format);
    b_text(&b, in->model);
    b_text(&b, in->gpu);
    b_int(&b, in->replicas);
    b_int(&b, in->tp);
    b_text(&b, in->batching);
    b_text(&b, in->routing);
    b_text(&b, in->cost_model);
    b_text(&b, in->params_json ? in->params_json : "{}");
    b_int(&b, (int64_t)in->seed);
    b_real(&b, in->rate_scale);
    b_int(&b, (int64_t)in->limit);
    b_int(&b, in->pp ? in->pp : 1);
    b_text(&b, in->cluster_policy ? in->cluster_policy : "container");
    b_real(&b, in->warmup_s);
    b_text(&b, in->scenario_ini);
    b_text(&b, in->ops ? in->ops : "home");
    if (in->load > 0)
        b_real(&b, in->load);
    else
        b_null(&b);
    b_text(&b, in->engine ? in->engine : "vllm-eager");
    if ((rc = run_stmt(s, &b, eb, "inserting the run"))) {
        store_run_abort(s);
        return rc;
    }
    s->run_id = sqlite3_last_insert_rowid(s->db);
    *run_id_out = s->run_id;
    if (in->sweep && in->point) {
        binder p = {s->st[ST_POINT], 0, 0};
        b_text(&p, in->sweep);
        b_text(&p, in->point);
        b_int(&p, s->run_id);
        if ((rc = run_stmt(s, &p, eb, "recording the sweep point"))) {
            store_run_abort(s);
            return rc;
        }
    }
    return SS_OK;
}

int store_has_point(store *s, const char *sweep, const char *point, int64_t *run_id,
                    ss_errbuf *eb)
{
    sqlite3_stmt *st = s->st[ST_HAS];
    int rc = sqlite3_bind_text(st, 1, sweep, -1, SQLITE_TRANSIENT);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_text(st, 2, point, -1, SQLITE_TRANSIENT);
    if (rc == SQLITE_OK)
        rc = step(s, st);
    int out;
    if (rc == SQLITE_ROW) {
        if (run_id)
            *run_id = sqlite3_column_int64(st, 0);
        out = 1;
    } else if (rc == SQLITE_DONE) {
        out = 0;
    } else {
        out = db_err(s, eb, "looking up a sweep point");
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return out;
}

int store_run_request(store *s, const metrics_req *r, const char *tenant, ss_errbuf *eb)
{
    binder b = {s->st[ST_REQ], 0, 0};
    b_int(&b, s->run_id);
    b_int(&b, (int64_t)r->trace_id);
    b_text(&b, tenant);
    b_int(&b, r->tier);
    b_int(&b, r->container);
    b_text(&b, r->rejected ? "rejected" : "completed");
    b_real(&b, ss_time_to_s(r->arrival));
    b_int(&b, r->prompt);
    b_int(&b, r->output_asked);
    b_int(&b, r->generated);
    b_int(&b, r->preemptions);
    if (r->rejected) {
        for (int k = 0; k < 4; k++)
            b_null(&b);
    } else {
        b_real(&b, ss_time_to_ms(r->first_token - r->arrival));
        b_real(&b, ss_time_to_ms(r->finish - r->arrival));
        if (r->generated > 1)
            b_real(&b, ss_time_to_ms(r->tbt_sum) / (r->generated - 1));
        else
            b_null(&b);
        b_real(&b, ss_time_to_ms(r->tbt_max));
    }
    b_int(&b, r->sla);
    b_int(&b, r->measured);
    b_int(&b, r->migrations);
    return run_stmt(s, &b, eb, "inserting a request");
}

int store_run_gpu(store *s, const store_gpu_row *g, ss_errbuf *eb)
{
    binder b = {s->st[ST_GPU], 0, 0};
    b_int(&b, s->run_id);
    b_int(&b, g->gpu);
    b_int(&b, g->node);
    b_int(&b, g->container);
    b_text(&b, g->kind);
    b_real(&b, g->busy_s);
    b_real(&b, g->utilization);
    b_int(&b, (int64_t)g->iterations);
    b_int(&b, g->kv_blocks);
    b_int(&b, g->kv_peak_blocks);
    b_real(&b, g->weights_gib);
    b_real(&b, g->kv_pool_gib);
    b_real(&b, g->device_busy_s);
    b_int(&b, (int64_t)g->idle_slices);
    b_real(&b, g->idle_s);
    b_text(&b, g->tenant ? g->tenant : "");
    b_real(&b, g->window_s);
    b_real(&b, g->compute_s);
    b_real(&b, g->host_s);
    return run_stmt(s, &b, eb, "inserting a GPU row");
}

int store_run_slices(store *s, const metrics_slices *sl, ss_errbuf *eb)
{
    for (int i = 0; i < METRICS_SLICE_BUCKETS; i++) {
        binder b = {s->st[ST_SLICE], 0, 0};
        ss_time hi = metrics_slice_bucket_hi(i);
        double gpu_s = sl->gpu_ns[i] / 1e9;
        b_int(&b, s->run_id);
        b_int(&b, i);
        b_real(&b, (double)metrics_slice_bucket_lo(i) / SS_NS_PER_MS);
        if (hi == SS_TIME_MAX)
            b_null(&b);
        else
            b_real(&b, (double)hi / SS_NS_PER_MS);
        b_int(&b, (int64_t)sl->count[i]);
        b_real(&b, gpu_s);
        if (sl->gpu_ns[i] > 0)
            b_real(&b, sl->free_byte_ns[i] / sl->gpu_ns[i] / 1073741824.0);
        else
            b_null(&b);
        int rc = run_stmt(s, &b, eb, "inserting an idle-slice row");
        if (rc)
            return rc;
    }
    return SS_OK;
}

static void bind_pct(binder *b, const metrics_pct *p)
{
    b_real(b, p->mean);
    b_real(b, p->p50);
    b_real(b, p->p90);
    b_real(b, p->p99);
    b_real(b, p->max);
}

/* The columns every group (run, tenant, tier) shares, in GROUP_NAMES order. */
static void bind_group(binder *b, const metrics_group_summary *g)
{
    b_int(b, (int64_t)g->requests);
    b_int(b, (int64_t)g->completed);
    b_int(b, (int64_t)g->rejected);
    b_int(b, (int64_t)g->truncated);
    b_int(b, (int64_t)g->preemptions);
    b_int(b, (int64_t)g->sla_violations);
    b_real(b, g->sla_violation_rate);
    b_real(b, g->prompt_tokens_per_s);
    b_real(b, g->output_tokens_per_s);
    b_real(b, g->requests_per_s);
    b_real(b, g->goodput_tokens_per_s);
    bind_pct(b, &g->ttft_ms);
    bind_pct(b, &g->tbt_ms);
    bind_pct(b, &g->e2e_ms);
}

/* The prefix-cache columns, in PREFIX_NAMES order. */
static void bind_prefix(binder *b, const metrics_prefix *p)
{
    b_int(b, (int64_t)p->query_tokens);
    b_int(b, (int64_t)p->hit_tokens);
    b_int(b, (int64_t)p->query_blocks);
    b_int(b, (int64_t)p->hit_blocks);
    b_int(b, (int64_t)p->saved_tokens);
    b_int(b, (int64_t)p->evictions);
}

static int insert_summary(store *s, const metrics_summary *m, const store_run_end *e,
                          ss_errbuf *eb)
{
    binder b = {s->st[ST_SUM], 0, 0};
    b_int(&b, s->run_id);
    b_int(&b, (int64_t)e->iterations);
    b_int(&b, e->peak_in_flight);
    b_int(&b, (int64_t)m->all.prompt_tokens);
    b_int(&b, (int64_t)m->all.output_tokens);
    b_real(&b, m->sim_s);
    b_int(&b, (int64_t)m->swap_outs);
    b_int(&b, (int64_t)m->aborted);
    b_int(&b, (int64_t)m->all.requests);
    b_real(&b, m->window_s);
    b_int(&b, (int64_t)m->migrations);
    b_int(&b, (int64_t)m->migrations_aborted);
    b_real(&b, m->migration_gib);
    b_int(&b, (int64_t)m->reallocations);
    bind_group(&b, &m->all);
    b_int(&b, (int64_t)m->scale_ups);
    b_int(&b, (int64_t)m->scale_downs);
    b_int(&b, (int64_t)m->idle_slices);
    b_real(&b, m->idle_gpu_s);
    b_int(&b, (int64_t)m->offloads);
    b_int(&b, (int64_t)m->offload_ops);
    b_real(&b, m->offload_gib);
    b_int(&b, (int64_t)m->slices_used);
    b_int(&b, (int64_t)e->whatifs);
    b_int(&b, (int64_t)e->slice_decisions);
    b_real(&b, e->slice_wall_s);
    b_real(&b, m->pred_err_ms);
    _Static_assert(METRICS_REJ__COUNT == 5, "the summary has five rejected_* columns");
    for (int r = 0; r < METRICS_REJ__COUNT; r++) /* in METRICS_REJ_* order */
        b_int(&b, (int64_t)m->all.rejected_why[r]);
    bind_prefix(&b, &m->all.prefix);
    /* the requests column counts every arrival, warm-up included */
    if (!b.rc)
        b.rc = sqlite3_bind_int64(b.st, 15, (int64_t)m->requests);
    return run_stmt(s, &b, eb, "inserting the summary");
}

int store_run_tenant(store *s, const char *tenant, const char *model, uint32_t replicas,
                     const metrics_group_summary *g, ss_errbuf *eb)
{
    binder b = {s->st[ST_TENANT], 0, 0};
    b_int(&b, s->run_id);
    b_text(&b, tenant);
    b_text(&b, model);
    b_int(&b, replicas);
    bind_group(&b, g);
    bind_prefix(&b, &g->prefix);
    return run_stmt(s, &b, eb, "inserting a tenant row");
}

int store_run_tier(store *s, uint32_t tier, const metrics_group_summary *g, ss_errbuf *eb)
{
    binder b = {s->st[ST_TIER], 0, 0};
    b_int(&b, s->run_id);
    b_int(&b, tier);
    bind_group(&b, g);
    return run_stmt(s, &b, eb, "inserting a tier row");
}

int store_run_commit(store *s, const metrics_summary *m, const store_run_end *e, ss_errbuf *eb)
{
    if (!s->in_run)
        return ss_err(eb, SS_EINVAL, "%s: no run is open", s->path);
    int rc = insert_summary(s, m, e, eb);
    if (!rc) {
        binder b = {s->st[ST_END], 0, 0};
        b_real(&b, e->wall_s);
        b_int(&b, (int64_t)e->events);
        char digest[24];
        snprintf(digest, sizeof digest, "%016llx", (unsigned long long)e->trace_digest);
        b_real(&b, m->sim_s);
        b_text(&b, digest);
        if (e->result_json)
            b_text(&b, e->result_json);
        else
            b_null(&b);
        b_int(&b, s->run_id);
        rc = run_stmt(s, &b, eb, "finishing the run");
    }
    if (!rc)
        rc = exec(s, "COMMIT", eb, "committing the run");
    if (rc) {
        store_run_abort(s);
        return rc;
    }
    s->in_run = 0;
    return SS_OK;
}

void store_run_abort(store *s)
{
    if (!s->in_run)
        return;
    rollback(s);
    s->in_run = 0;
}

/* ---- merging databases ------------------------------------------------------------------- */

/* The tables that hang off runs, in the order they are copied. */
static const char *const run_tables[] = {"requests", "summary", "gpus", "tenants", "tiers",
                                         "idle_slices", "sweep_points"};

/* The columns of table that main and src both have but `skip` (the key a copy renumbers),
 * comma-separated; with cmp, as "m.c IS v.c AND ..." instead (rows equal in every other
 * column). NULL on error (eb set). */
static char *column_list_of(store *s, const char *table, const char *skip, int cmp,
                            ss_errbuf *eb)
{
    /* the columns both have: an input of an older schema lacks the newer ones, which then
     * take their defaults, as an upgrade in place would have given them */
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT cid, name FROM pragma_table_info('%s', 'main') WHERE name"
             " IN (SELECT name FROM pragma_table_info('%s', 'src')) ORDER BY cid", table, table);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        db_err(s, eb, "reading the schema");
        return NULL;
    }
    ss_strbuf b = {0};
    int n = 0, rc;
    while ((rc = step(s, st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 1);
        if (!strcmp(name, skip))
            continue;
        if (cmp)
            ss_strbuf_printf(&b, "%sm.%s IS v.%s", n++ ? " AND " : "", name, name);
        else
            ss_strbuf_printf(&b, "%s%s", n++ ? ", " : "", name);
    }
    /* a failed step is an error, not the end of the list (a merge would drop columns) */
    char *out = rc == SQLITE_DONE && ss_strbuf_ok(&b) ? ss_strdup(ss_strbuf_str(&b)) : NULL;
    if (rc != SQLITE_DONE)
        db_err(s, eb, "reading the schema");
    else if (!out)
        ss_err(eb, SS_ENOMEM, "out of memory");
    sqlite3_finalize(st);
    ss_strbuf_fini(&b);
    return out;
}

/* 1 when the attached input has table (an older schema may not), 0 when not, <0 on error. */
static int src_has(store *s, const char *table)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT count(*) FROM src.sqlite_master WHERE type = 'table'"
                                  " AND name = ?", -1, &st, NULL) != SQLITE_OK)
        return SS_EDB;
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    int rc = step(s, st);
    int out = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) > 0 : SS_EDB;
    sqlite3_finalize(st);
    return out;
}

static char *column_list(store *s, const char *table, ss_errbuf *eb)
{
    return column_list_of(s, table, "run_id", 0, eb);
}

typedef struct merger {
    sqlite3_stmt *runs, *dup, *copy_run, *copy[sizeof run_tables / sizeof *run_tables];
} merger;

static void merger_free(merger *m)
{
    sqlite3_finalize(m->runs);
    sqlite3_finalize(m->dup);
    sqlite3_finalize(m->copy_run);
    for (size_t i = 0; i < sizeof m->copy / sizeof *m->copy; i++)
        sqlite3_finalize(m->copy[i]);
}

static int prep(store *s, const char *sql, sqlite3_stmt **st, ss_errbuf *eb)
{
    return sqlite3_prepare_v2(s->db, sql, -1, st, NULL) == SQLITE_OK
               ? SS_OK
               : db_err(s, eb, "preparing the merge");
}

static int merger_make(store *s, merger *m, ss_errbuf *eb)
{
    char sql[4096];
    int rc = prep(s, "SELECT run_id FROM src.runs ORDER BY run_id", &m->runs, eb);
    int has_points = rc ? 0 : src_has(s, "sweep_points");
    if (has_points < 0)
        rc = db_err(s, eb, "reading the input's schema");
    if (!rc && has_points)
        rc = prep(s, "SELECT count(*) FROM src.sweep_points p JOIN main.sweep_points q"
                     " ON p.sweep = q.sweep AND p.point = q.point WHERE p.run_id = ?",
                  &m->dup, eb);
    char *cols = rc ? NULL : column_list(s, "runs", eb);
    if (!rc && !cols)
        rc = SS_EDB;
    if (!rc) {
        snprintf(sql, sizeof sql, "INSERT INTO main.runs (%s) SELECT %s FROM src.runs"
                                  " WHERE run_id = ?", cols, cols);
        rc = prep(s, sql, &m->copy_run, eb);
    }
    ss_free(cols);
    for (size_t i = 0; !rc && i < sizeof run_tables / sizeof *run_tables; i++) {
        int has = src_has(s, run_tables[i]);
        if (has < 0)
            return db_err(s, eb, "reading the input's schema");
        if (!has)
            continue; /* a table newer than the input: nothing to copy */
        if (!(cols = column_list(s, run_tables[i], eb)))
            return SS_EDB;
        snprintf(sql, sizeof sql, "INSERT INTO main.%s (run_id, %s) SELECT ?1, %s FROM src.%s"
                                  " WHERE run_id = ?2", run_tables[i], cols, cols, run_tables[i]);
        rc = prep(s, sql, &m->copy[i], eb);
        ss_free(cols);
    }
    return rc;
}

static int step_done(store *s, sqlite3_stmt *st, ss_errbuf *eb, const char *what)
{
    int rc = step(s, st) == SQLITE_DONE ? SS_OK : db_err(s, eb, what);
    sqlite3_reset(st);
    return rc;
}

/* Copy run `old` of src with all its rows. */
static int merge_run(store *s, merger *m, int64_t old, ss_errbuf *eb)
{
    sqlite3_bind_int64(m->copy_run, 1, old);
    int rc = step_done(s, m->copy_run, eb, "copying a run");
    int64_t id = sqlite3_last_insert_rowid(s->db);
    for (size_t i = 0; !rc && i < sizeof run_tables / sizeof *run_tables; i++) {
        if (!m->copy[i])
            continue;
        sqlite3_bind_int64(m->copy[i], 1, id);
        sqlite3_bind_int64(m->copy[i], 2, old);
        rc = step_done(s, m->copy[i], eb, "copying a run's rows");
    }
    return rc;
}

/* Records that are not runs but are merged like validations: a table with an integer id and
 * two child tables of rows keyed by it. */
typedef struct record_kind {
    const char *table, *id;   /* "validations", "validation_id" */
    const char *child[2];     /* tables of its rows */
    const char *what;         /* "validation", for messages */
} record_kind;

static const record_kind kind_validations = {
    "validations", "validation_id", {"validation_ops", "validation_iters"}, "validation"};
static const record_kind kind_fits = {"fits", "fit_id", {"fit_stages", "fit_stages"}, "fit"};

/* Copy every record of kind k in src (with its child rows, under a new id) that main does not
 * hold already (one equal in every column but the id). A kind with one child table names it
 * twice; its rows are copied once. */
static int merge_records(store *s, const record_kind *k, uint64_t *copied, uint64_t *skipped,
                         ss_errbuf *eb)
{
    const char *const *child = k->child;
    int n_child = strcmp(child[0], child[1]) ? 2 : 1;
    sqlite3_stmt *ids = NULL, *dup = NULL, *copy = NULL, *copy_child[2] = {NULL, NULL};
    char *cols = column_list_of(s, k->table, k->id, 0, eb);
    char *same = cols ? column_list_of(s, k->table, k->id, 1, eb) : NULL;
    int rc = cols && same ? SS_OK : SS_EDB;
    size_t sql_len = 256 + 2 * (cols ? strlen(cols) : 0) + (same ? strlen(same) : 0);
    char *sql = rc ? NULL : ss_malloc(sql_len);
    if (!rc && !sql)
        rc = ss_err(eb, SS_ENOMEM, "out of memory");
    if (!rc) {
        snprintf(sql, sql_len, "SELECT %s FROM src.%s ORDER BY %s", k->id, k->table, k->id);
        rc = prep(s, sql, &ids, eb);
    }
    if (!rc) {
        snprintf(sql, sql_len, "SELECT count(*) FROM main.%s m, src.%s v WHERE v.%s = ? AND %s",
                 k->table, k->table, k->id, same);
        rc = prep(s, sql, &dup, eb);
    }
    if (!rc) {
        snprintf(sql, sql_len, "INSERT INTO main.%s (%s) SELECT %s FROM src.%s WHERE %s = ?",
                 k->table, cols, cols, k->table, k->id);
        rc = prep(s, sql, &copy, eb);
    }
    for (int i = 0; !rc && i < n_child; i++) {
        char *cc = column_list_of(s, child[i], k->id, 0, eb);
        if (!cc) {
            rc = SS_EDB;
            break;
        }
        char q[2048];
        snprintf(q, sizeof q, "INSERT INTO main.%s (%s, %s) SELECT ?1, %s FROM src.%s"
                              " WHERE %s = ?2", child[i], k->id, cc, cc, child[i], k->id);
        ss_free(cc);
        rc = prep(s, q, &copy_child[i], eb);
    }
    while (!rc) {
        int more = step(s, ids);
        if (more != SQLITE_ROW) {
            rc = more == SQLITE_DONE ? SS_OK : db_err(s, eb, "reading the records to merge");
            break;
        }
        int64_t old = sqlite3_column_int64(ids, 0);
        sqlite3_bind_int64(dup, 1, old);
        if (step(s, dup) != SQLITE_ROW) {
            rc = db_err(s, eb, "looking up a record to merge");
            break;
        }
        int have = sqlite3_column_int64(dup, 0) > 0;
        sqlite3_reset(dup);
        if (have) {
            (*skipped)++;
            continue;
        }
        sqlite3_bind_int64(copy, 1, old);
        rc = step_done(s, copy, eb, "copying a record");
        int64_t id = sqlite3_last_insert_rowid(s->db);
        for (int i = 0; !rc && i < n_child; i++) {
            sqlite3_bind_int64(copy_child[i], 1, id);
            sqlite3_bind_int64(copy_child[i], 2, old);
            rc = step_done(s, copy_child[i], eb, "copying a record's rows");
        }
        *copied += !rc;
    }
    sqlite3_finalize(ids);
    sqlite3_finalize(dup);
    sqlite3_finalize(copy);
    sqlite3_finalize(copy_child[0]);
    sqlite3_finalize(copy_child[1]);
    ss_free(sql);
    ss_free(cols);
    ss_free(same);
    return rc;
}

int store_merge(store *s, const char *in_path, uint64_t *copied, uint64_t *skipped,
                ss_errbuf *eb)
{
    store_merge_counts c;
    int rc = store_merge_counted(s, in_path, &c, eb);
    *copied = c.runs_copied;
    *skipped = c.runs_skipped;
    return rc;
}

/* "file:PATH?mode=ro": the input attached read-only (store_open allows URI names). */
static char *ro_uri(const char *path)
{
    ss_strbuf b = {0};
    ss_strbuf_printf(&b, "file:");
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if (isalnum(*p) || strchr("/-._~", *p))
            ss_strbuf_printf(&b, "%c", *p);
        else
            ss_strbuf_printf(&b, "%%%02X", *p);
    }
    ss_strbuf_printf(&b, "?mode=ro");
    char *out = ss_strbuf_ok(&b) ? ss_strdup(ss_strbuf_str(&b)) : NULL;
    ss_strbuf_fini(&b);
    return out;
}

/* An error reading the input: it names the input, not the output being merged into. */
static int src_err(store *s, const char *in_path, ss_errbuf *eb, const char *what)
{
    return ss_err(eb, SS_EDB, "%s: %s: %s", in_path, what, last_error(s));
}

int store_merge_counted(store *s, const char *in_path, store_merge_counts *c, ss_errbuf *eb)
{
    memset(c, 0, sizeof *c);
    uint64_t *copied = &c->runs_copied, *skipped = &c->runs_skipped;
    if (s->in_run)
        return ss_err(eb, SS_EINVAL, "%s: a run is open", s->path);
    int rc = store_check_input(in_path, eb); /* ours and readable; writes nothing */
    if (rc)
        return rc;
    char *uri = ro_uri(in_path);
    if (!uri)
        return ss_err(eb, SS_ENOMEM, "out of memory");
    sqlite3_stmt *att;
    if (sqlite3_prepare_v2(s->db, "ATTACH DATABASE ? AS src", -1, &att, NULL) != SQLITE_OK) {
        ss_free(uri);
        return db_err(s, eb, "attaching");
    }
    sqlite3_bind_text(att, 1, uri, -1, SQLITE_TRANSIENT);
    ss_free(uri);
    rc = step(s, att) == SQLITE_DONE ? SS_OK : src_err(s, in_path, eb, "attaching");
    sqlite3_finalize(att);
    if (rc)
        return rc;
    merger m = {0};
    rc = exec(s, "BEGIN IMMEDIATE", eb, "starting the merge");
    int began = !rc;
    if (!rc)
        rc = merger_make(s, &m, eb);
    /* a failed step is an error, not the end of the runs (that would commit half a merge) */
    while (!rc) {
        int more = step(s, m.runs);
        if (more != SQLITE_ROW) {
            rc = more == SQLITE_DONE ? SS_OK
                                     : src_err(s, in_path, eb, "reading the runs to merge");
            break;
        }
        int64_t old = sqlite3_column_int64(m.runs, 0);
        int dup = 0;
        if (m.dup) {
            sqlite3_bind_int64(m.dup, 1, old);
            if (step(s, m.dup) != SQLITE_ROW) {
                rc = db_err(s, eb, "looking up a sweep point");
                break;
            }
            dup = sqlite3_column_int64(m.dup, 0) > 0;
            sqlite3_reset(m.dup);
        }
        if (dup) {
            (*skipped)++;
            continue;
        }
        rc = merge_run(s, &m, old, eb);
        *copied += !rc;
    }
    merger_free(&m);
    int has_vals = rc ? 0 : src_has(s, "validations");
    if (has_vals < 0)
        rc = src_err(s, in_path, eb, "reading the schema");
    if (!rc && has_vals)
        rc = merge_records(s, &kind_validations, &c->validations_copied,
                           &c->validations_skipped, eb);
    int has_fits = rc ? 0 : src_has(s, "fits");
    if (has_fits < 0)
        rc = src_err(s, in_path, eb, "reading the schema");
    if (!rc && has_fits)
        rc = merge_records(s, &kind_fits, &c->fits_copied, &c->fits_skipped, eb);
    if (!rc)
        rc = exec(s, "COMMIT", eb, "committing the merge");
    if (rc && began)
        rollback(s);
    char *msg = NULL;
    sqlite3_exec(s->db, "DETACH DATABASE src", NULL, NULL, &msg);
    sqlite3_free(msg);
    /* The read-only attachment left the input's -wal and -shm files; a connection that may
     * write (but does not) removes them when it closes, if it is the last one. Best effort,
     * so it bypasses step(): it changes nothing, and its failure is no failure. */
    sqlite3 *again = NULL;
    if (sqlite3_open_v2(in_path, &again, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK)
        sqlite3_exec(again, "PRAGMA query_only = 1; SELECT count(*) FROM sqlite_master", NULL,
                     NULL, NULL);
    sqlite3_close(again);
    if (rc)
        memset(c, 0, sizeof *c);
    return rc;
}

/* ---- reading sweep points ---------------------------------------------------------------- */

int store_point_summary(store *s, const char *sweep, const char *point, store_point_row *row,
                        ss_errbuf *eb)
{
    static const char sql[] =
        "SELECT p.run_id, m.output_tokens_per_s, m.goodput_tokens_per_s, m.sla_violation_rate,"
        " m.ttft_p99_ms, m.tbt_p99_ms, m.e2e_p99_ms, r.result_json FROM sweep_points p"
        " JOIN summary m USING (run_id) JOIN runs r USING (run_id)"
        " WHERE p.sweep = ? AND p.point = ?";
    sqlite3_stmt *st;
    memset(row, 0, sizeof *row);
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_err(s, eb, "reading a sweep point");
    sqlite3_bind_text(st, 1, sweep, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, point, -1, SQLITE_TRANSIENT);
    int rc = step(s, st), out = 0;
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
        out = db_err(s, eb, "reading a sweep point");
    }
    sqlite3_finalize(st);
    return out;
}

void store_point_row_free(store_point_row *row)
{
    ss_free(row->result_json);
    row->result_json = NULL;
}

/* ---- queries ---------------------------------------------------------------------------- */

int store_query(store *s, const char *sql, const char *const *params, int n_params,
                store_row_fn *fn, void *ud, ss_errbuf *eb)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_err(s, eb, "preparing a query");
    if (!sqlite3_stmt_readonly(st)) {
        sqlite3_finalize(st);
        return ss_err(eb, SS_EINVAL, "%s: store_query: not a read-only query", s->path);
    }
    for (int i = 0; i < n_params; i++)
        sqlite3_bind_text(st, i + 1, params[i], -1, SQLITE_TRANSIENT);
    int n = sqlite3_column_count(st), rc = SS_OK, step_rc;
    const char *cols[64];
    if (n > 64)
        n = 64;
    while ((step_rc = step(s, st)) == SQLITE_ROW) {
        for (int i = 0; i < n; i++)
            cols[i] = (const char *)sqlite3_column_text(st, i);
        if ((rc = fn(ud, n, cols, eb)))
            break;
    }
    if (!rc && step_rc != SQLITE_DONE)
        rc = db_err(s, eb, "running a query");
    sqlite3_finalize(st);
    return rc;
}

/* ---- validations -------------------------------------------------------------------------- */

/* Prepare sql, bind through fill, step once. */
static int one_row(store *s, const char *sql, void (*fill)(binder *, const void *),
                   const void *row, ss_errbuf *eb, const char *what)
{
    binder b = {NULL, 0, 0};
    if (sqlite3_prepare_v2(s->db, sql, -1, &b.st, NULL) != SQLITE_OK)
        return db_err(s, eb, what);
    fill(&b, row);
    int rc = run_stmt(s, &b, eb, what);
    sqlite3_finalize(b.st);
    return rc;
}

typedef struct val_head {
    const store_validation *v;
    const char *now;
} val_head;

static void fill_validation(binder *b, const void *p)
{
    const val_head *h = p;
    const store_validation *v = h->v;
    b_text(b, h->now);
    b_text(b, SS_VERSION);
    b_text(b, v->command);
    b_text(b, v->name);
    b_text(b, v->model);
    b_int(b, v->tp);
    b_text(b, v->gpu);
    b_text(b, v->device);
    b_text(b, v->backend);
    b_text(b, v->timer);
    b_text(b, v->cost_model);
    b_text(b, v->trace);
    b_int(b, (int64_t)v->requests);
    b_int(b, (int64_t)v->iterations);
    b_int(b, v->reps);
    b_int(b, v->l2_cold);
    b_real(b, v->mape_pct);
    b_real(b, v->bias_pct);
    b_real(b, v->predicted_ms);
    b_real(b, v->measured_ms);
    b_real(b, v->measured_span_ms);
}

int store_validation_begin(store *s, const store_validation *v, int64_t *id_out, ss_errbuf *eb)
{
    if (s->in_run)
        return ss_err(eb, SS_EINVAL, "%s: a run is already open", s->path);
    int rc = exec(s, "BEGIN IMMEDIATE", eb, "starting the validation's transaction");
    if (rc)
        return rc;
    s->in_run = 1;
    char now[32];
    utc_now(now);
    val_head h = {v, now};
    rc = one_row(s, "INSERT INTO validations (created, version, command, name, model, tp, gpu,"
                    " device, backend, timer, cost_model, trace, requests, iterations, reps,"
                    " l2_cold, mape_pct, bias_pct, predicted_ms, measured_ms, measured_span_ms)"
                    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                 fill_validation, &h, eb, "storing the validation");
    if (rc) {
        store_run_abort(s);
        return rc;
    }
    s->run_id = sqlite3_last_insert_rowid(s->db);
    *id_out = s->run_id;
    return SS_OK;
}

typedef struct val_row {
    int64_t id;
    const void *row;
} val_row;

static void fill_op(binder *b, const void *p)
{
    const val_row *r = p;
    const store_validation_op *o = r->row;
    b_int(b, r->id);
    b_text(b, o->op);
    b_int(b, (int64_t)o->executions);
    b_real(b, o->predicted_ms);
    b_real(b, o->measured_ms);
    b_real(b, o->mape_pct);
    b_real(b, o->bias_pct);
    b_real(b, o->worst_pct);
    b_int(b, (int64_t)o->worst_iteration);
}

int store_validation_add_op(store *s, const store_validation_op *row, ss_errbuf *eb)
{
    if (!s->in_run)
        return ss_err(eb, SS_EINVAL, "%s: no validation is open", s->path);
    val_row r = {s->run_id, row};
    return one_row(s, "INSERT INTO validation_ops VALUES (?,?,?,?,?,?,?,?,?)", fill_op, &r, eb,
                   "storing a validated operator");
}

static void fill_iter(binder *b, const void *p)
{
    const val_row *r = p;
    const store_validation_iter *i = r->row;
    b_int(b, r->id);
    b_int(b, (int64_t)i->iteration);
    b_real(b, i->sim_start_s);
    b_real(b, i->sim_ms);
    b_int(b, (int64_t)i->prefills);
    b_int(b, (int64_t)i->prefill_tokens);
    b_int(b, (int64_t)i->decodes);
    b_int(b, (int64_t)i->decode_ctx_tokens);
    b_real(b, i->predicted_ms);
    b_real(b, i->measured_ms);
    b_real(b, i->measured_span_ms);
    b_real(b, i->predicted_host_ms);
    b_real(b, i->error_pct);
}

int store_validation_add_iter(store *s, const store_validation_iter *row, ss_errbuf *eb)
{
    if (!s->in_run)
        return ss_err(eb, SS_EINVAL, "%s: no validation is open", s->path);
    val_row r = {s->run_id, row};
    return one_row(s, "INSERT INTO validation_iters VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                   fill_iter, &r, eb, "storing a validated iteration");
}

int store_validation_commit(store *s, ss_errbuf *eb)
{
    if (!s->in_run)
        return ss_err(eb, SS_EINVAL, "%s: no validation is open", s->path);
    int rc = exec(s, "COMMIT", eb, "committing the validation");
    if (rc) {
        store_run_abort(s);
        return rc;
    }
    s->in_run = 0;
    return SS_OK;
}

/* ---- fits ------------------------------------------------------------------------------- */

typedef struct fit_head {
    const store_fit *f;
    const char *now;
} fit_head;

static void fill_fit(binder *b, const void *p)
{
    const fit_head *h = p;
    const store_fit *f = h->f;
    b_text(b, h->now);
    b_text(b, SS_VERSION);
    b_text(b, f->command);
    b_text(b, f->mode);
    b_text(b, f->dir);
    b_text(b, f->start_engine);
    b_text(b, f->engine);
    b_text(b, f->terms);
    b_text(b, f->params_json);
    b_text(b, f->profile);
    b_int(b, f->runs);
    b_int(b, f->stages);
    b_int(b, f->fitted_stages);
    b_real(b, f->served_ms);
    b_real(b, f->objective);
    for (int i = 0; i < STORE_FIT_METRICS; i++)
        b_real(b, f->mape_pct[i]);
    b_int(b, f->runaway);
    b_int(b, (int64_t)f->iterations);
    b_int(b, (int64_t)f->evaluations);
    b_int(b, f->converged);
    b_real(b, f->wall_s);
}

int store_fit_begin(store *s, const store_fit *f, int64_t *id_out, ss_errbuf *eb)
{
    if (s->in_run)
        return ss_err(eb, SS_EINVAL, "%s: a run is already open", s->path);
    int rc = exec(s, "BEGIN IMMEDIATE", eb, "starting the fit's transaction");
    if (rc)
        return rc;
    s->in_run = 1;
    char now[32];
    utc_now(now);
    fit_head h = {f, now};
    rc = one_row(s, "INSERT INTO fits (created, version, command, mode, dir, start_engine,"
                    " engine, terms, params, profile, runs, stages, fitted_stages, served_ms,"
                    " objective, mape_ttft_mean_pct, mape_ttft_p90_pct, mape_itl_pct,"
                    " mape_e2e_mean_pct, mape_e2e_p90_pct, runaway, iterations, evaluations,"
                    " converged, wall_s)"
                    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                 fill_fit, &h, eb, "storing the fit");
    if (rc) {
        store_run_abort(s);
        return rc;
    }
    s->run_id = sqlite3_last_insert_rowid(s->db);
    if (id_out)
        *id_out = s->run_id;
    return SS_OK;
}

static void fill_fit_stage(binder *b, const void *p)
{
    const val_row *r = p;
    const store_fit_stage *st = r->row;
    b_int(b, r->id);
    b_text(b, st->run);
    b_int(b, st->stage);
    b_real(b, st->rate);
    b_int(b, st->fitted);
    b_int(b, (int64_t)st->completed);
    for (int i = 0; i < STORE_FIT_METRICS; i++) {
        b_real(b, st->real[i]);
        b_real(b, st->sim[i]);
    }
}

int store_fit_add_stage(store *s, const store_fit_stage *row, ss_errbuf *eb)
{
    if (!s->in_run)
        return ss_err(eb, SS_EINVAL, "%s: no fit is open", s->path);
    val_row r = {s->run_id, row};
    return one_row(s, "INSERT INTO fit_stages VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                   fill_fit_stage, &r, eb, "storing a fitted stage");
}

int store_fit_commit(store *s, ss_errbuf *eb)
{
    if (!s->in_run)
        return ss_err(eb, SS_EINVAL, "%s: no fit is open", s->path);
    int rc = exec(s, "COMMIT", eb, "committing the fit");
    if (rc) {
        store_run_abort(s);
        return rc;
    }
    s->in_run = 0;
    return SS_OK;
}
