/* Results store: schema creation and version, a committed run with its rows, an aborted run
 * leaving nothing, runs surviving reopen, refusal of foreign or newer databases (as merge
 * inputs: bad input, damaged ones too), a capacity probe's inputs and figures, and clean
 * allocation failures. Rows are read back with plain SQLite, as users would. */
#include "support/test_util.h"

#include "core/ss_alloc.h"
#include "store/store.h"
#include "store/store_int.h" /* STORE__REQ_CHUNK */

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int teardown(void **state)
{
    (void)state;
    tu_tmpdir_cleanup();
    tu_assert_no_leaks();
    return 0;
}

static const store_run_info info = {
    .command = "slicesim replay --test", .trace = "t.csv", .trace_format = "native",
    .model = "llama-2-7b", .gpu = "a100-80g", .replicas = 2, .tp = 1,
    .batching = "vllm", .routing = "rr", .cost_model = "roofline", .params_json = "{}",
    .seed = 1, .rate_scale = 1.0, .limit = 0, .engine = "teng",
};

static void write_run(store *s, int n_req, int commit)
{
    ss_errbuf eb;
    int64_t id;
    assert_int_equal(store_run_begin(s, &info, &id, &eb), 0);
    for (int i = 0; i < n_req; i++) {
        metrics_req r = {.trace_id = (uint64_t)i, .prompt = 100, .output_asked = 10,
                         .generated = 10, .arrival = i * SS_NS_PER_S,
                         .first_token = i * SS_NS_PER_S + 50 * SS_NS_PER_MS,
                         .finish = i * SS_NS_PER_S + 500 * SS_NS_PER_MS,
                         .tbt_sum = 450 * SS_NS_PER_MS, .tbt_max = 60 * SS_NS_PER_MS,
                         .rejected = i == 3};
        assert_int_equal(store_run_request(s, &r, "default", &eb), 0);
    }
    store_gpu_row g = {.gpu = 0, .kind = "a100-80g", .busy_s = 1.5, .utilization = 0.5,
                       .device_busy_s = 1.25, .idle_slices = 7, .idle_s = 8.75};
    assert_int_equal(store_run_gpu(s, &g, &eb), 0);
    metrics_slices sl = {.count = {[3] = 6, [7] = 1},
                         .gpu_ns = {[3] = 30e6, [7] = 12e9},
                         .free_byte_ns = {[3] = 30e6 * 1073741824.0}};
    assert_int_equal(store_run_slices(s, &sl, &eb), 0);
    metrics_prefix inst = {.lookups = 3, .query_tokens = 300, .hit_tokens = 160,
                           .query_blocks = 18, .hit_blocks = 10, .saved_tokens = 176,
                           .evictions = 2};
    assert_int_equal(store_run_instance(s, 1, "default", &inst, &eb), 0);
    if (!commit)
        return;
    metrics_summary m = {.requests = (uint64_t)n_req, .sim_s = 10,
                         .all = {.requests = (uint64_t)n_req, .completed = (uint64_t)n_req - 1,
                                 .rejected = 1, .rejected_why = {[METRICS_REJ_KV] = 1},
                                 .prefix = {.query_tokens = 500, .hit_tokens = 320,
                                            .query_blocks = 31, .hit_blocks = 20,
                                            .saved_tokens = 336, .evictions = 4,
                                            .ceiling_hit_tokens = 400,
                                            .ceiling_hit_blocks = 25},
                                 .win_output_tokens_per_s = 250, .win_goodput_tokens_per_s = 125},
                         .scale_ups = 3, .scale_downs = 2, .arrival_window_s = 9.5};
    store_run_end e = {.wall_s = 0.1, .events = 42, .trace_digest = 0xabcdef};
    assert_int_equal(store_run_commit(s, &m, &e, &eb), 0);
}

static void test_commit_and_read_back(void **state)
{
    (void)state;
    char path[600];
    snprintf(path, sizeof path, "%s/sub/r.db", tu_tmpdir()); /* parent created on open */
    store *s = NULL;
    ss_errbuf eb;
    assert_int_equal(store_open(&s, path, &eb), 0);
    write_run(s, 5, 1);
    store_close(&s);
    assert_int_equal(tu_sql_int(path, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM runs"), 1);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM requests WHERE run_id = 1"), 5);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM requests WHERE status = 'rejected' "
                                 "AND ttft_ms IS NULL"), 1);
    assert_int_equal(tu_sql_int(path, "SELECT CAST(round(ttft_ms) AS INT) FROM requests "
                                 "WHERE req_id = 2"), 50);
    assert_int_equal(tu_sql_int(path, "SELECT CAST(tbt_mean_ms AS INT) FROM requests "
                                 "WHERE req_id = 2"), 50); /* 450 ms over 9 gaps */
    assert_int_equal(tu_sql_int(path, "SELECT completed FROM summary WHERE run_id = 1"), 4);
    assert_int_equal(tu_sql_int(path, "SELECT events FROM runs WHERE run_id = 1"), 42);
    assert_int_equal(tu_sql_int(path, "SELECT scale_ups * 10 + scale_downs FROM summary"), 32);
    assert_int_equal(tu_sql_int(path, "SELECT rejected_kv_blocks FROM summary"), 1);
    assert_int_equal(tu_sql_int(path, "SELECT window_output_tokens_per_s * 1000 +"
                                      " window_goodput_tokens_per_s FROM summary"), 250125);
    assert_int_equal(tu_sql_int(path, "SELECT arrival_window_s * 10 FROM summary"), 95);
    assert_int_equal(tu_sql_int(path, "SELECT rejected_too_long + rejected_batch_tokens +"
                                 " rejected_preempted + rejected_other FROM summary"), 0);
    assert_int_equal(tu_sql_int(path, "SELECT idle_slices FROM gpus"), 7);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM idle_slices"), METRICS_SLICE_BUCKETS);
    assert_int_equal(tu_sql_int(path, "SELECT count FROM idle_slices WHERE lo_ms = 1 AND hi_ms = 10"),
                     6);
    assert_int_equal(tu_sql_int(path, "SELECT free_gib_mean FROM idle_slices WHERE bucket = 3"), 1);
    /* no mean free memory for the buckets without slices */
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM idle_slices WHERE free_gib_mean IS NULL"),
                     METRICS_SLICE_BUCKETS - 2);
    assert_int_equal(tu_sql_int(path, "SELECT count FROM idle_slices WHERE hi_ms IS NULL"), 1);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM gpus"), 1);
    assert_int_equal(tu_sql_int(path, "SELECT trace_digest = '0000000000abcdef' FROM runs"), 1);
    /* the ceiling, and one instance's prefix-cache counters and hit rate */
    assert_int_equal(tu_sql_int(path, "SELECT prefix_ceiling_hit_tokens * 100 +"
                                      " prefix_ceiling_hit_blocks FROM summary"), 40025);
    assert_int_equal(tu_sql_int(path, "SELECT prefix_ceiling_hit_rate * 1000 FROM summary"), 800);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM instances WHERE container = 1 AND"
                                      " tenant = 'default' AND prefix_lookups = 3 AND"
                                      " prefix_query_tokens = 300 AND prefix_hit_tokens = 160"
                                      " AND prefix_query_blocks = 18 AND prefix_hit_blocks = 10"
                                      " AND prefix_saved_tokens = 176 AND prefix_evictions = 2"),
                     1);
    assert_int_equal(tu_sql_int(path, "SELECT prefix_hit_rate * 300 FROM instances"), 160);
}

static void test_abort_and_close_leave_earlier_runs(void **state)
{
    (void)state;
    char path[600];
    snprintf(path, sizeof path, "%s/a.db", tu_tmpdir());
    store *s = NULL;
    ss_errbuf eb;
    assert_int_equal(store_open(&s, path, &eb), 0);
    write_run(s, 3, 1);
    write_run(s, 4, 0);
    store_run_abort(s);
    write_run(s, 2, 0); /* left open: close must roll it back */
    store_close(&s);
    assert_int_equal(store_open(&s, path, &eb), 0);
    write_run(s, 6, 1);
    store_close(&s);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM runs"), 2);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM summary"), 2);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM requests"), 9);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM runs WHERE run_id NOT IN "
                                 "(SELECT run_id FROM summary)"), 0);
}

static void test_refuses_foreign_and_newer(void **state)
{
    (void)state;
    char path[600];
    sqlite3 *db;
    store *s = NULL;
    ss_errbuf eb;
    snprintf(path, sizeof path, "%s/foreign.db", tu_tmpdir());
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE t(x)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(store_open(&s, path, &eb), SS_EDB);
    assert_non_null(strstr(eb.msg, "not a slicesim"));
    snprintf(path, sizeof path, "%s/newer.db", tu_tmpdir());
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(store_open(&s, path, &eb), SS_EDB);
    assert_non_null(strstr(eb.msg, "newer"));
    const char *junk = tu_write_file(tu_tmpdir(), "junk.db", "this is not a database at all");
    assert_int_equal(store_open(&s, junk, &eb), SS_EDB);
    assert_int_equal(store_open(&s, "/proc/nonexistent/dir/x.db", &eb) < 0, 1);
    assert_null(s);
}

/* What version 16 added: runs.inputs_digest. */
#define V16_DOWN "ALTER TABLE runs DROP COLUMN inputs_digest;"

/* What version 18 added: GPU sharing's columns. */
#define V18_DOWN                                                                                   \
    "ALTER TABLE gpus DROP COLUMN phys; ALTER TABLE gpus DROP COLUMN share;"                       \
    "ALTER TABLE tenants DROP COLUMN share;"

/* What version 17 added: the bundle and what was kept of a run, iterations, capacities. */
#define V17_DOWN                                                                                   \
    "DROP INDEX runs_by_created; DROP TABLE capacity_seeds; DROP TABLE capacities;"                \
    "DROP TABLE iterations; ALTER TABLE runs DROP COLUMN stored;"                                  \
    "ALTER TABLE runs DROP COLUMN bundle;"

/* What version 15 added: disaggregated serving's columns of tenants. */
#define V15_DOWN \
    "ALTER TABLE tenants DROP COLUMN prefill_replicas;" \
    "ALTER TABLE tenants DROP COLUMN decode_replicas;" \
    "ALTER TABLE tenants DROP COLUMN kv_transfers;" \
    "ALTER TABLE tenants DROP COLUMN kv_gib;" \
    "ALTER TABLE tenants DROP COLUMN kv_exposed_s;" \
    "ALTER TABLE tenants DROP COLUMN kv_exposed_mean_ms;" \
    "ALTER TABLE tenants DROP COLUMN kv_waits;" \
    "ALTER TABLE tenants DROP COLUMN kv_wait_s;"

/* What version 14 added: the KV pool's columns. */
#define V14_DOWN \
    "ALTER TABLE summary DROP COLUMN kvpool_lookups;" \
    "ALTER TABLE summary DROP COLUMN kvpool_gpu_blocks;" \
    "ALTER TABLE summary DROP COLUMN kvpool_cpu_blocks;" \
    "ALTER TABLE summary DROP COLUMN kvpool_ssd_blocks;" \
    "ALTER TABLE summary DROP COLUMN kvpool_remote_blocks;" \
    "ALTER TABLE summary DROP COLUMN kvpool_loads;" \
    "ALTER TABLE summary DROP COLUMN kvpool_load_bytes;" \
    "ALTER TABLE summary DROP COLUMN kvpool_load_s;" \
    "ALTER TABLE summary DROP COLUMN kvpool_recomputes;" \
    "ALTER TABLE summary DROP COLUMN kvpool_recompute_blocks;" \
    "ALTER TABLE summary DROP COLUMN kvpool_offload_blocks;" \
    "ALTER TABLE summary DROP COLUMN kvpool_offload_bytes;" \
    "ALTER TABLE summary DROP COLUMN kvpool_demotions;" \
    "ALTER TABLE summary DROP COLUMN kvpool_evictions;" \
    "ALTER TABLE summary DROP COLUMN kvpool_cpu_peak_bytes;" \
    "ALTER TABLE summary DROP COLUMN kvpool_ssd_peak_bytes;" \
    "ALTER TABLE tenants DROP COLUMN kvpool_lookups;" \
    "ALTER TABLE tenants DROP COLUMN kvpool_gpu_blocks;" \
    "ALTER TABLE tenants DROP COLUMN kvpool_cpu_blocks;" \
    "ALTER TABLE tenants DROP COLUMN kvpool_ssd_blocks;" \
    "ALTER TABLE tenants DROP COLUMN kvpool_remote_blocks;" \
    "ALTER TABLE tenants DROP COLUMN kvpool_loads;" \
    "ALTER TABLE tenants DROP COLUMN kvpool_load_bytes;" \
    "ALTER TABLE tenants DROP COLUMN kvpool_load_s;" \
    "ALTER TABLE tenants DROP COLUMN kvpool_recomputes;" \
    "ALTER TABLE tenants DROP COLUMN kvpool_recompute_blocks;" \
    "ALTER TABLE tenants DROP COLUMN kvpool_offload_blocks;" \
    "ALTER TABLE tenants DROP COLUMN kvpool_offload_bytes;" \
    "ALTER TABLE tenants DROP COLUMN kvpool_demotions;" \
    "ALTER TABLE tenants DROP COLUMN kvpool_evictions;"

/* What version 13 added: the instances table and the prefix-caching ceiling's columns. */
#define V13_DOWN                                                                                   \
    "DROP TABLE instances;"                                                                        \
    "ALTER TABLE summary DROP COLUMN prefix_ceiling_hit_tokens;"                                   \
    "ALTER TABLE summary DROP COLUMN prefix_ceiling_hit_blocks;"                                   \
    "ALTER TABLE summary DROP COLUMN prefix_ceiling_hit_rate;"                                     \
    "ALTER TABLE tenants DROP COLUMN prefix_ceiling_hit_tokens;"                                   \
    "ALTER TABLE tenants DROP COLUMN prefix_ceiling_hit_blocks;"                                   \
    "ALTER TABLE tenants DROP COLUMN prefix_ceiling_hit_rate;"

/* A database of the previous version (12: no instances table, no ceiling) is upgraded in
 * place: its run reads a ceiling of 0 and no instance rows, a new run writes both; read-only,
 * it is upgraded in a copy and the file is left as it was; merged, its runs are copied and a
 * current input's instance rows come along. */
static void test_upgrades_schema_12(void **state)
{
    (void)state;
    char path[600], ro[600], out[600];
    snprintf(path, sizeof path, "%s/v12.db", tu_tmpdir());
    snprintf(ro, sizeof ro, "%s/v12ro.db", tu_tmpdir());
    snprintf(out, sizeof out, "%s/v13merged.db", tu_tmpdir());
    store *s = NULL;
    ss_errbuf eb;
    for (int k = 0; k < 2; k++) {
        assert_int_equal(store_open(&s, k ? ro : path, &eb), 0);
        write_run(s, 3, 1);
        store_close(&s);
        sqlite3 *db;
        assert_int_equal(sqlite3_open(k ? ro : path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, V18_DOWN V17_DOWN V16_DOWN V15_DOWN V14_DOWN V13_DOWN
                                          "PRAGMA journal_mode = DELETE;"
                                          "PRAGMA user_version = 12;", NULL, NULL, NULL),
                         SQLITE_OK);
        sqlite3_close(db);
    }
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM sqlite_master WHERE name ="
                                      " 'instances'"), 0);
    /* read-only: upgraded in memory, the file untouched */
    assert_int_equal(store_open_readonly(&s, ro, &eb), 0);
    store_close(&s);
    assert_int_equal(tu_sql_int(ro, "PRAGMA user_version"), 12);
    /* merged into a current database, next to a current run with its instance row */
    uint64_t copied, skipped;
    assert_int_equal(store_open(&s, out, &eb), 0);
    write_run(s, 2, 1);
    assert_int_equal(store_merge(s, ro, &copied, &skipped, &eb), 0);
    assert_int_equal(copied, 1);
    store_close(&s);
    assert_int_equal(tu_sql_int(out, "SELECT count(*) FROM runs"), 2);
    assert_int_equal(tu_sql_int(out, "SELECT count(*) FROM instances"), 1);
    assert_int_equal(tu_sql_int(out, "SELECT count(*) FROM summary WHERE"
                                     " prefix_ceiling_hit_tokens = 0 AND"
                                     " prefix_ceiling_hit_rate = 0"), 1);
    /* in place */
    assert_int_equal(store_open(&s, path, &eb), 0);
    write_run(s, 2, 1);
    store_close(&s);
    assert_int_equal(tu_sql_int(path, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
    assert_int_equal(STORE_SCHEMA_VERSION, 18);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM runs"), 2);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM summary WHERE run_id = 1 AND"
                                      " prefix_ceiling_hit_tokens = 0 AND"
                                      " prefix_ceiling_hit_blocks = 0"), 1);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM summary WHERE run_id = 2 AND"
                                      " prefix_ceiling_hit_tokens = 400"), 1);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM instances WHERE run_id = 1"), 0);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM instances WHERE run_id = 2"), 1);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM pragma_table_info('tenants')"
                                      " WHERE name LIKE 'prefix_ceiling_%'"), 3);
}

/* The schema of the database at path as text: each object's type, name, table and SQL, in the
 * order SQLite keeps them (what `.dump` writes). Caller frees with sqlite3_free. */
static char *schema_text(const char *path)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT type, name, tbl_name, sql FROM sqlite_master"
                                            " ORDER BY rowid", -1, &st, NULL), SQLITE_OK);
    sqlite3_str *out = sqlite3_str_new(db);
    while (sqlite3_step(st) == SQLITE_ROW)
        for (int i = 0; i < 4; i++)
            sqlite3_str_appendf(out, "%s%s", sqlite3_column_text(st, i), i < 3 ? "|" : "\n");
    sqlite3_finalize(st);
    char *text = sqlite3_str_finish(out);
    sqlite3_close(db);
    assert_non_null(text);
    return text;
}

/* A database written with schema 1 (the current one without what versions 2 and 3 added) is
 * upgraded in place, keeps its runs and takes new ones, and then has the very schema a new
 * database is created with (its SQL text too, which SQLite's ALTER TABLE writes). */
static void test_upgrades_schema_1(void **state)
{
    (void)state;
    char path[600];
    snprintf(path, sizeof path, "%s/v1.db", tu_tmpdir());
    store *s = NULL;
    ss_errbuf eb;
    assert_int_equal(store_open(&s, path, &eb), 0);
    write_run(s, 3, 1);
    store_close(&s);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    static const char downgrade[] =
        V18_DOWN V17_DOWN V16_DOWN V15_DOWN V14_DOWN V13_DOWN
        "DROP TABLE tenants; DROP TABLE tiers;"
        "ALTER TABLE runs DROP COLUMN pp; ALTER TABLE runs DROP COLUMN cluster_policy;"
        "ALTER TABLE runs DROP COLUMN warmup_s; ALTER TABLE runs DROP COLUMN scenario;"
        "ALTER TABLE requests DROP COLUMN sla_violated; ALTER TABLE requests DROP COLUMN measured;"
        "ALTER TABLE requests DROP COLUMN migrations;"
        "ALTER TABLE summary DROP COLUMN swap_outs; ALTER TABLE summary DROP COLUMN aborted;"
        "ALTER TABLE summary DROP COLUMN measured_requests; ALTER TABLE summary DROP COLUMN window_s;"
        "ALTER TABLE summary DROP COLUMN sla_violations;"
        "ALTER TABLE summary DROP COLUMN sla_violation_rate;"
        "ALTER TABLE summary DROP COLUMN goodput_tokens_per_s;"
        "ALTER TABLE summary DROP COLUMN migrations;"
        "ALTER TABLE summary DROP COLUMN migrations_aborted;"
        "ALTER TABLE summary DROP COLUMN migration_gib;"
        "ALTER TABLE summary DROP COLUMN reallocations;"
        "ALTER TABLE summary DROP COLUMN scale_ups; ALTER TABLE summary DROP COLUMN scale_downs;"
        "ALTER TABLE summary DROP COLUMN idle_slices; ALTER TABLE summary DROP COLUMN idle_gpu_s;"
        "ALTER TABLE gpus DROP COLUMN device_busy_s; ALTER TABLE gpus DROP COLUMN idle_slices;"
        "ALTER TABLE gpus DROP COLUMN idle_s; DROP TABLE idle_slices;"
        "ALTER TABLE runs DROP COLUMN ops; ALTER TABLE summary DROP COLUMN offloads;"
        "ALTER TABLE summary DROP COLUMN offload_ops; ALTER TABLE summary DROP COLUMN offload_gib;"
        "ALTER TABLE summary DROP COLUMN slices_used; ALTER TABLE summary DROP COLUMN whatifs;"
        "ALTER TABLE summary DROP COLUMN slice_decisions;"
        "ALTER TABLE summary DROP COLUMN slice_wall_s;"
        "ALTER TABLE summary DROP COLUMN prediction_error_ms; DROP TABLE sweep_points;"
        "ALTER TABLE runs DROP COLUMN result_json;"
        "DROP TABLE validation_iters; DROP TABLE validation_ops; DROP TABLE validations;"
        "ALTER TABLE runs DROP COLUMN load; ALTER TABLE gpus DROP COLUMN tenant;"
        "ALTER TABLE gpus DROP COLUMN window_s; ALTER TABLE gpus DROP COLUMN compute_s;"
        "ALTER TABLE gpus DROP COLUMN host_s;"
        "ALTER TABLE summary DROP COLUMN rejected_too_long;"
        "ALTER TABLE summary DROP COLUMN rejected_batch_tokens;"
        "ALTER TABLE summary DROP COLUMN rejected_kv_blocks;"
        "ALTER TABLE summary DROP COLUMN rejected_preempted;"
        "ALTER TABLE summary DROP COLUMN rejected_other;"
        "ALTER TABLE runs DROP COLUMN engine;"
        "ALTER TABLE summary DROP COLUMN prefix_query_tokens;"
        "ALTER TABLE summary DROP COLUMN prefix_hit_tokens;"
        "ALTER TABLE summary DROP COLUMN prefix_query_blocks;"
        "ALTER TABLE summary DROP COLUMN prefix_hit_blocks;"
        "ALTER TABLE summary DROP COLUMN prefix_saved_tokens;"
        "ALTER TABLE summary DROP COLUMN prefix_evictions;"
        "DROP TABLE fit_stages; DROP TABLE fits;"
        "ALTER TABLE summary DROP COLUMN window_output_tokens_per_s;"
        "ALTER TABLE summary DROP COLUMN window_goodput_tokens_per_s;"
        "ALTER TABLE summary DROP COLUMN arrival_window_s;"
        "PRAGMA user_version = 1;";
    assert_int_equal(sqlite3_exec(db, downgrade, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(store_open(&s, path, &eb), 0);
    write_run(s, 2, 1);
    store_close(&s);
    assert_int_equal(tu_sql_int(path, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM runs"), 2);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM summary WHERE swap_outs = 0"), 2);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM runs WHERE pp = 1"), 2);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM tenants"), 0);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM summary WHERE scale_ups = 0"), 1);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM summary WHERE scale_ups = 3"), 1);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM runs WHERE ops = 'home'"), 2);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM validations"), 0);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM validation_iters"), 0);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM fits"), 0);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM fit_stages"), 0);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM summary WHERE kvpool_loads = 0 AND "
                                      "kvpool_cpu_peak_bytes = 0"), 2);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM runs WHERE load IS NULL"), 2);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM gpus WHERE host_s IS NOT NULL"),
                     tu_sql_int(path, "SELECT count(*) FROM gpus WHERE run_id = 2"));
    /* the old run reads 0 rejections by reason, the new one has its own */
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM summary WHERE rejected_kv_blocks = 0"
                                 " AND rejected_too_long = 0 AND rejected_other = 0"), 1);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM summary WHERE rejected_kv_blocks = 1"
                                 " AND rejected_too_long = 0"), 1);
    /* the old run was computed with what is now vllm-eager; the new one names its engine */
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM runs WHERE engine = 'vllm-eager'"
                                 " AND run_id = 1"), 1);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM runs WHERE engine = 'teng'"
                                 " AND run_id = 2"), 1);
    /* version 10: the old run reads no prefix caching, the new one its counters */
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM summary WHERE prefix_hit_tokens = 0"
                                 " AND prefix_query_tokens = 0 AND prefix_evictions = 0"), 1);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM summary WHERE prefix_hit_tokens = 320"
                                 " AND prefix_query_tokens = 500 AND prefix_query_blocks = 31"
                                 " AND prefix_hit_blocks = 20 AND prefix_saved_tokens = 336"
                                 " AND prefix_evictions = 4"), 1);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM pragma_table_info('tenants')"
                                 " WHERE name LIKE 'prefix_%'"), 9);
    /* version 13: the old run has no instance rows, the new one its own */
    assert_int_equal(tu_sql_int(path, "SELECT group_concat(run_id) FROM instances"), 2);
    char fresh[600];
    snprintf(fresh, sizeof fresh, "%s/new.db", tu_tmpdir());
    assert_int_equal(store_open(&s, fresh, &eb), 0);
    store_close(&s);
    char *upgraded = schema_text(path), *created = schema_text(fresh);
    assert_string_equal(upgraded, created);
    sqlite3_free(upgraded);
    sqlite3_free(created);
}

/* Request i of the runs below: every column differs from row to row (two tenants, some
 * rejected, some with one token and so no gap). */
static metrics_req chunk_req(int i)
{
    ss_time at = i * SS_NS_PER_S / 4;
    return (metrics_req){.trace_id = (uint64_t)i, .tier = (uint8_t)(i % 3),
                         .rejected = i % 5 == 3, .sla = (uint8_t)(i % 2),
                         .measured = i % 6 != 0, .container = (uint32_t)(i % 4),
                         .prompt = 100 + (uint32_t)i, .output_asked = 10 + (uint32_t)(i % 7),
                         .generated = 1 + (uint32_t)(i % 10), .preemptions = (uint32_t)(i % 4),
                         .migrations = (uint32_t)(i % 3), .arrival = at,
                         .first_token = at + (20 + i) * SS_NS_PER_MS,
                         .finish = at + (300 + 2 * i) * SS_NS_PER_MS,
                         .tbt_sum = (30 + i) * SS_NS_PER_MS, .tbt_max = (8 + i) * SS_NS_PER_MS};
}

/* A committed run of n chunk_req requests in s. */
static void write_chunk_run(store *s, int n)
{
    ss_errbuf eb;
    int64_t id;
    assert_int_equal(store_run_begin(s, &info, &id, &eb), 0);
    for (int i = 0; i < n; i++) {
        metrics_req r = chunk_req(i);
        assert_int_equal(store_run_request(s, &r, i % 3 ? "chat" : "code", &eb), 0);
    }
    metrics_summary m = {.requests = (uint64_t)n};
    store_run_end e = {.wall_s = 0.1};
    assert_int_equal(store_run_commit(s, &m, &e, &eb), 0);
}

/* Whether run run_id holds exactly the n rows write_chunk_run writes, in order. */
static void assert_chunk_rows(const char *path, int64_t run_id, int n)
{
    char sql[1600];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM requests WHERE run_id = %lld",
             (long long)run_id);
    assert_int_equal(tu_sql_int(path, sql), n);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM requests WHERE run_id = %lld AND req_id BETWEEN 0 AND %d"
             " AND tenant = CASE WHEN req_id %% 3 THEN 'chat' ELSE 'code' END"
             " AND tier = req_id %% 3 AND container = req_id %% 4"
             " AND status = CASE WHEN req_id %% 5 = 3 THEN 'rejected' ELSE 'completed' END"
             " AND arrival_s = req_id / 4.0 AND prompt_tokens = 100 + req_id"
             " AND output_tokens = 10 + req_id %% 7 AND generated_tokens = 1 + req_id %% 10"
             " AND preemptions = req_id %% 4 AND sla_violated = req_id %% 2"
             " AND measured = (req_id %% 6 != 0) AND migrations = req_id %% 3"
             " AND (CASE WHEN req_id %% 5 = 3"
             "      THEN ttft_ms IS NULL AND e2e_ms IS NULL AND tbt_mean_ms IS NULL"
             "           AND tbt_max_ms IS NULL"
             "      ELSE round(ttft_ms, 6) = 20 + req_id AND round(e2e_ms, 6) = 300 + 2 * req_id"
             "           AND round(tbt_max_ms, 6) = 8 + req_id"
             "           AND CASE WHEN generated_tokens = 1 THEN tbt_mean_ms IS NULL"
             "               ELSE round(tbt_mean_ms * (generated_tokens - 1), 6) = 30 + req_id"
             "               END END)",
             (long long)run_id, n - 1);
    assert_int_equal(tu_sql_int(path, sql), n);
    /* each request once, in the order they came */
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM (SELECT req_id, lag(req_id, 1, -1) OVER (ORDER BY rowid) AS"
             " prev FROM requests WHERE run_id = %lld) WHERE req_id != prev + 1",
             (long long)run_id);
    assert_int_equal(tu_sql_int(path, sql), 0);
}

/* Request rows go in by chunks of STORE__REQ_CHUNK, one INSERT each, and the rest one at a time
 * at the commit: runs of 1, a chunk less one, a chunk, a chunk and one, and two chunks and
 * three requests store every row once, in order, with its values, through one handle and then
 * through the same database opened again, which keeps its schema; both handles' runs are
 * equal in every column but run_id. */
static void test_request_chunks(void **state)
{
    (void)state;
    static const int sizes[] = {1, STORE__REQ_CHUNK - 1, STORE__REQ_CHUNK, STORE__REQ_CHUNK + 1,
                                2 * STORE__REQ_CHUNK + 3};
    enum { N_SIZES = sizeof sizes / sizeof *sizes };
    char path[600];
    snprintf(path, sizeof path, "%s/chunks.db", tu_tmpdir());
    store *s = NULL;
    ss_errbuf eb;
    char *schema = NULL;
    for (int pass = 0; pass < 2; pass++) {
        assert_int_equal(store_open(&s, path, &eb), 0);
        for (int k = 0; k < N_SIZES; k++)
            write_chunk_run(s, sizes[k]);
        store_close(&s);
        for (int k = 0; k < N_SIZES; k++)
            assert_chunk_rows(path, pass * N_SIZES + k + 1, sizes[k]);
        char *now = schema_text(path);
        if (schema)
            assert_string_equal(now, schema);
        sqlite3_free(schema);
        schema = now;
    }
    sqlite3_free(schema);
    /* every row of a run of the first handle has its twin in the second's */
    char sql[800];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM (SELECT (run_id - 1) %% %d, req_id, tenant, tier, container,"
             " status, arrival_s, prompt_tokens, output_tokens, generated_tokens, preemptions,"
             " ttft_ms, e2e_ms, tbt_mean_ms, tbt_max_ms, sla_violated, measured, migrations"
             " FROM requests GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,"
             " 18 HAVING count(*) != 2)", N_SIZES);
    assert_int_equal(tu_sql_int(path, sql), 0);
}

static void test_allocation_failures(void **state)
{
    (void)state;
    char path[600];
    snprintf(path, sizeof path, "%s/oom.db", tu_tmpdir());
    for (uint64_t k = 1; k < 10; k++) {
        store *s = NULL;
        ss_errbuf eb;
        ss_alloc_fail_after(k);
        int rc = store_open(&s, path, &eb);
        ss_alloc_fail_after(0);
        assert_true(rc == SS_OK || rc == SS_ENOMEM);
        store_close(&s);
        tu_assert_no_leaks();
    }
    /* a run's request rows (their buffer, each tenant's name) */
    for (uint64_t k = 1;; k++) {
        store *s = NULL;
        ss_errbuf eb;
        int64_t id;
        assert_int_equal(store_open(&s, path, &eb), 0);
        ss_alloc_fail_after(k);
        int rc = store_run_begin(s, &info, &id, &eb);
        for (int i = 0; !rc && i <= STORE__REQ_CHUNK; i++) {
            metrics_req r = chunk_req(i);
            rc = store_run_request(s, &r, i % 3 ? "chat" : "code", &eb);
        }
        metrics_summary m = {.requests = STORE__REQ_CHUNK + 1};
        store_run_end e = {.wall_s = 0.1};
        if (!rc)
            rc = store_run_commit(s, &m, &e, &eb);
        ss_alloc_fail_after(0);
        assert_true(rc == SS_OK || rc == SS_ENOMEM);
        store_close(&s);
        tu_assert_no_leaks();
        if (rc == SS_OK)
            break;
        assert_string_equal(eb.msg, "out of memory");
    }
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM runs"), 1);
    assert_chunk_rows(path, 1, STORE__REQ_CHUNK + 1);
}

/* A sweep point is recorded with its run, in the same transaction: an aborted run leaves no
 * point behind, a committed one is found again. */
static void test_sweep_points(void **state)
{
    (void)state;
    char path[600];
    snprintf(path, sizeof path, "%s/sweep.db", tu_tmpdir());
    store *s = NULL;
    ss_errbuf eb;
    assert_int_equal(store_open(&s, path, &eb), 0);
    store_run_info in = info;
    in.sweep = "demo";
    in.point = "policy=slice;rate=2";
    int64_t id, found = 0;
    assert_int_equal(store_run_begin(s, &in, &id, &eb), 0);
    store_run_abort(s);
    assert_int_equal(store_has_point(s, "demo", in.point, &found, &eb), 0);
    assert_int_equal(store_run_begin(s, &in, &id, &eb), 0);
    metrics_summary m = {.requests = 1, .sim_s = 1};
    store_run_end e = {.wall_s = 0.1};
    assert_int_equal(store_run_commit(s, &m, &e, &eb), 0);
    assert_int_equal(store_has_point(s, "demo", in.point, &found, &eb), 1);
    assert_int_equal(found, id);
    assert_int_equal(store_has_point(s, "other", in.point, NULL, &eb), 0);
    /* the same point again: the newer run takes its place */
    int64_t id2;
    assert_int_equal(store_run_begin(s, &in, &id2, &eb), 0);
    assert_int_equal(store_run_commit(s, &m, &e, &eb), 0);
    assert_int_equal(store_has_point(s, "demo", in.point, &found, &eb), 1);
    assert_int_equal(found, id2);
    store_close(&s);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM runs"), 2);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM sweep_points"), 1);
}

/* What the figures' readers collect (test_typed_reads). */
typedef struct got {
    int n;
    int64_t id;
    char text[4][64];     /* the row's text: point, or cluster, ops, model, warmup_s */
    double v[4];
    int null_tenant;
} got;

static int got_point(void *ud, int64_t run_id, const char *point, ss_errbuf *eb)
{
    (void)eb;
    got *g = ud;
    g->n++, g->id = run_id;
    snprintf(g->text[0], sizeof g->text[0], "%s", point);
    return 0;
}
static int got_run(void *ud, const store_run_row *r, ss_errbuf *eb)
{
    (void)eb;
    got *g = ud;
    g->n++, g->id = r->run_id, g->v[0] = r->load;
    snprintf(g->text[0], sizeof g->text[0], "%s", r->cluster_policy);
    snprintf(g->text[1], sizeof g->text[1], "%s", r->ops);
    snprintf(g->text[2], sizeof g->text[2], "%s", r->settings[0]);
    snprintf(g->text[3], sizeof g->text[3], "%s", r->settings[STORE_RUN_SETTINGS - 1]);
    return 0;
}
static int got_summary(void *ud, const store_summary_row *r, ss_errbuf *eb)
{
    (void)eb;
    got *g = ud;
    g->n++, g->id = r->run_id;
    g->v[0] = r->output_tokens_per_s, g->v[1] = r->goodput_tokens_per_s;
    g->v[2] = r->sla_violation_rate, g->v[3] = r->ttft_p99_ms;
    return 0;
}
static int got_gpu(void *ud, const store_gpu_time_row *r, ss_errbuf *eb)
{
    (void)eb;
    got *g = ud;
    g->n++, g->id = r->gpu, g->null_tenant = !r->tenant;
    g->v[0] = r->window_s, g->v[1] = r->compute_s, g->v[2] = r->host_s, g->v[3] = r->idle_s;
    return 0;
}
static int got_idle(void *ud, const store_idle_slice_row *r, ss_errbuf *eb)
{
    (void)eb;
    got *g = ud;
    if (r->bucket == 3)
        g->v[0] = r->gpu_s;
    g->n++;
    return 0;
}
static int got_tier(void *ud, const store_tier_row *r, ss_errbuf *eb)
{
    (void)eb;
    got *g = ud;
    g->n++, g->id = r->tier, g->v[0] = r->sla_violation_rate, g->v[1] = r->ttft_p99_ms;
    return 0;
}
/* A callback's error stops the read and is what the read returns. */
static int stop_run(void *ud, const store_run_row *r, ss_errbuf *eb)
{
    (void)r;
    ++*(int *)ud;
    return ss_err(eb, SS_EPARSE, "stop");
}

/* The typed rows the figures are drawn from, read back from a run written through the store:
 * text as SQLite renders it, reals through that text (15 significant digits), NULL as NaN. */
static void test_typed_reads(void **state)
{
    (void)state;
    char path[600];
    snprintf(path, sizeof path, "%s/reads.db", tu_tmpdir());
    store *s = NULL;
    ss_errbuf eb;
    assert_int_equal(store_open(&s, path, &eb), 0);
    char *name = (char *)"unset";
    assert_int_equal(store_newest_sweep(s, &name, &eb), 0);
    assert_null(name); /* no sweep points */
    store_run_info in = info;
    in.rate_scale = 0.1 + 0.2; /* 0.30000000000000004: reads 0.3 */
    in.warmup_s = 0;
    in.ops = "slice";
    in.sweep = "demo";
    in.point = "policy=slice;rate=0.3";
    int64_t id;
    assert_int_equal(store_run_begin(s, &in, &id, &eb), 0);
    static const double e2e_ms[] = {900, 300, 600, 0}; /* the last (0 ms) is left out */
    for (int i = 0; i < 4; i++) {
        metrics_req r = {.trace_id = (uint64_t)i, .prompt = 10, .output_asked = 2,
                         .generated = 2, .arrival = i * SS_NS_PER_S,
                         .first_token = i * SS_NS_PER_S + 10 * SS_NS_PER_MS,
                         .finish = i * SS_NS_PER_S + (ss_time)(e2e_ms[i] * SS_NS_PER_MS),
                         .measured = 1};
        assert_int_equal(store_run_request(s, &r, "default", &eb), 0);
    }
    store_gpu_row gr = {.gpu = 2, .kind = "a100-80g", .window_s = 10, .compute_s = 8,
                        .host_s = 0.5, .idle_s = 2, .tenant = "chat"};
    assert_int_equal(store_run_gpu(s, &gr, &eb), 0);
    metrics_slices sl = {.count = {[3] = 6}, .gpu_ns = {[3] = 30e6}};
    assert_int_equal(store_run_slices(s, &sl, &eb), 0);
    metrics_group_summary tier = {.requests = 4, .sla_violation_rate = 0.25,
                                  .ttft_ms = {.p99 = 12.5}};
    assert_int_equal(store_run_tier(s, 1, &tier, &eb), 0);
    metrics_summary m = {.requests = 4, .sim_s = 1,
                         .all = {.output_tokens_per_s = 0.25, .win_output_tokens_per_s = 1.0 / 3,
                                 .sla_violation_rate = 0.5}};
    store_run_end e = {.wall_s = 0.1};
    assert_int_equal(store_run_commit(s, &m, &e, &eb), 0);

    assert_int_equal(store_newest_sweep(s, &name, &eb), 0);
    assert_string_equal(name, "demo");
    ss_free(name);
    got g = {0};
    assert_int_equal(store_sweep_points(s, "demo", got_point, &g, &eb), 0);
    assert_true(g.n == 1 && g.id == id);
    assert_string_equal(g.text[0], in.point);
    memset(&g, 0, sizeof g);
    assert_int_equal(store_sweep_points(s, "other", got_point, &g, &eb), 0);
    assert_int_equal(g.n, 0);

    memset(&g, 0, sizeof g);
    assert_int_equal(store_runs(s, got_run, &g, &eb), 0);
    assert_true(g.n == 1 && g.id == id);
    assert_true(g.v[0] == 0.3); /* no load: the rate_scale, through its text */
    assert_string_equal(g.text[0], "container");
    assert_string_equal(g.text[1], "slice");
    assert_string_equal(store_run_setting_names[0], "model");
    assert_string_equal(g.text[2], "llama-2-7b");
    assert_string_equal(store_run_setting_names[STORE_RUN_SETTINGS - 1], "warmup_s");
    assert_string_equal(g.text[3], "0.0"); /* a REAL as SQLite writes it */
    int calls = 0;
    assert_int_equal(store_runs(s, stop_run, &calls, &eb), SS_EPARSE);
    assert_int_equal(calls, 1);

    memset(&g, 0, sizeof g);
    assert_int_equal(store_summaries(s, got_summary, &g, &eb), 0);
    assert_true(g.n == 1 && g.id == id);
    assert_true(g.v[0] == 0.333333333333333); /* the arrival window's, to 15 digits */
    assert_true(g.v[1] == 0 && g.v[2] == 0.5);

    double *v = NULL;
    size_t n = 0;
    assert_int_equal(store_run_latencies(s, id, STORE_LAT_E2E, &v, &n, &eb), 0);
    assert_int_equal(n, 3);
    assert_true(v[0] == 300 && v[1] == 600 && v[2] == 900); /* ascending, above 0 */
    ss_free(v);
    assert_int_equal(store_run_latencies(s, id, STORE_LAT_TTFT, &v, &n, &eb), 0);
    assert_true(n == 4 && v[0] == 10 && v[3] == 10);
    ss_free(v);
    assert_int_equal(store_run_latencies(s, id + 1, STORE_LAT_TTFT, &v, &n, &eb), 0);
    assert_true(n == 0 && v == NULL);

    memset(&g, 0, sizeof g);
    assert_int_equal(store_run_gpu_times(s, id, got_gpu, &g, &eb), 0);
    assert_true(g.n == 1 && g.id == 2 && !g.null_tenant);
    assert_true(g.v[0] == 10 && g.v[1] == 8 && g.v[2] == 0.5 && g.v[3] == 2);
    memset(&g, 0, sizeof g);
    assert_int_equal(store_run_idle_slices(s, id, got_idle, &g, &eb), 0);
    assert_int_equal(g.n, METRICS_SLICE_BUCKETS);
    assert_true(g.v[0] == 0.03);
    memset(&g, 0, sizeof g);
    assert_int_equal(store_run_tiers(s, id, got_tier, &g, &eb), 0);
    assert_true(g.n == 1 && g.id == 1 && g.v[0] == 0.25 && g.v[1] == 12.5);
    store_close(&s);

    /* NULL (an older schema's columns, values never stored) reads as NaN, text as NULL */
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "UPDATE summary SET goodput_tokens_per_s = NULL,"
                                      " window_output_tokens_per_s = NULL,"
                                      " window_goodput_tokens_per_s = NULL;"
                                      " UPDATE gpus SET tenant = NULL, host_s = NULL",
                                  NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(store_open_readonly(&s, path, &eb), 0);
    memset(&g, 0, sizeof g);
    assert_int_equal(store_summaries(s, got_summary, &g, &eb), 0);
    /* a run without arrival-window figures (before schema 12): its makespan rate */
    assert_true(g.n == 1 && g.v[0] == 0.25 && isnan(g.v[1]) && g.v[2] == 0.5);
    memset(&g, 0, sizeof g);
    assert_int_equal(store_run_gpu_times(s, id, got_gpu, &g, &eb), 0);
    assert_true(g.n == 1 && g.null_tenant);
    assert_true(g.v[2] == 0); /* no host_s: busy_s - device_busy_s, within the idle slices */
    store_close(&s);
}

/* Merging: every run of each input arrives with its rows under a new id; a sweep point the
 * output already has is skipped; a missing or foreign input changes nothing. */
/* A validation is one transaction: committed with its rows, or (closed before the commit)
 * absent without a trace. */
static void test_validations(void **state)
{
    (void)state;
    char path[600];
    snprintf(path, sizeof path, "%s/val.db", tu_tmpdir());
    ss_errbuf eb;
    store *s = NULL;
    int64_t id = 0;
    store_validation v = {.command = "slicesim validate", .name = "t", .model = "llama-2-7b",
                          .gpu = "h200", .device = "NVIDIA H200", .backend = "sim",
                          .timer = "model", .cost_model = "roofline", .trace = "x.csv", .tp = 1,
                          .reps = 3, .requests = 8, .iterations = 2, .mape_pct = 4.5};
    store_validation_op op = {.op = "qkv", .executions = 64, .predicted_ms = 1.5,
                              .measured_ms = 1.4};
    store_validation_iter it = {.iteration = 1, .decodes = 3, .predicted_ms = 2, .measured_ms = 2.1};
    assert_int_equal(store_open(&s, path, &eb), 0);
    assert_int_equal(store_validation_add_op(s, &op, &eb), SS_EINVAL); /* none open */
    assert_int_equal(store_validation_begin(s, &v, &id, &eb), 0);
    assert_true(id > 0);
    assert_int_equal(store_validation_add_op(s, &op, &eb), 0);
    assert_int_equal(store_validation_add_iter(s, &it, &eb), 0);
    it.iteration = 2;
    assert_int_equal(store_validation_add_iter(s, &it, &eb), 0);
    assert_int_equal(store_validation_add_iter(s, &it, &eb), SS_EDB); /* same iteration twice */
    assert_int_equal(store_validation_commit(s, &eb), 0);
    assert_int_equal(store_validation_begin(s, &v, &id, &eb), 0);
    assert_int_equal(store_validation_add_op(s, &op, &eb), 0);
    store_close(&s); /* never committed */
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM validations"), 1);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM validation_ops"), 1);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM validation_iters"), 2);
    assert_int_equal(tu_sql_int(path, "SELECT executions FROM validation_ops"), 64);
}

/* A fit is one transaction like a validation; a NaN (a metric not measured) is stored NULL. */
static void test_fits(void **state)
{
    (void)state;
    char path[600];
    snprintf(path, sizeof path, "%s/fit.db", tu_tmpdir());
    ss_errbuf eb;
    store *s = NULL;
    int64_t id = 0;
    store_fit f = {.command = "slicesim fit d", .mode = "fit", .dir = "d",
                   .start_engine = "vllm-eager", .engine = "fitted", .terms = "iter_fixed_us",
                   .params_json = "{}", .profile = "fitted.ini", .runs = 2, .stages = 3,
                   .fitted_stages = 2, .served_ms = 1000, .objective = 0.25,
                   .mape_pct = {1, 2, 3, 4, 5}, .iterations = 7, .evaluations = 15};
    store_fit_stage st = {.run = "r", .stage = 0, .rate = NAN, .fitted = 1, .completed = 9,
                          .real = {1, 2, NAN, 4, 5}, .sim = {1.5, 2.5, 3.5, 4.5, 5.5}};
    assert_int_equal(store_open(&s, path, &eb), 0);
    assert_int_equal(store_fit_add_stage(s, &st, &eb), SS_EINVAL); /* none open */
    assert_int_equal(store_fit_begin(s, &f, &id, &eb), 0);
    assert_true(id > 0);
    assert_int_equal(store_fit_add_stage(s, &st, &eb), 0);
    assert_int_equal(store_fit_add_stage(s, &st, &eb), SS_EDB); /* same stage twice */
    st.stage = 1;
    assert_int_equal(store_fit_add_stage(s, &st, &eb), 0);
    assert_int_equal(store_fit_commit(s, &eb), 0);
    assert_int_equal(store_fit_begin(s, &f, NULL, &eb), 0);
    store_close(&s); /* never committed */
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM fits"), 1);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM fit_stages"), 2);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM fit_stages WHERE real_itl_ms IS NULL"
                                      " AND rate IS NULL AND sim_itl_ms = 3.5"), 2);
    assert_int_equal(tu_sql_int(path, "SELECT evaluations FROM fits"), 15);
    assert_int_equal(tu_sql_int(path, "SELECT mape_e2e_p90_pct FROM fits"), 5);
}

static void test_merge(void **state)
{
    (void)state;
    char a[600], b[600], out[600];
    snprintf(a, sizeof a, "%s/ma.db", tu_tmpdir());
    snprintf(b, sizeof b, "%s/mb.db", tu_tmpdir());
    snprintf(out, sizeof out, "%s/mo.db", tu_tmpdir());
    store *s = NULL;
    ss_errbuf eb;
    store_run_info in = info;
    in.sweep = "demo";
    int64_t id;
    metrics_summary m = {.requests = 1, .sim_s = 1};
    store_run_end e = {.wall_s = 0.1};
    assert_int_equal(store_open(&s, a, &eb), 0);
    write_run(s, 5, 1); /* not a sweep point */
    in.point = "p=1";
    assert_int_equal(store_run_begin(s, &in, &id, &eb), 0);
    assert_int_equal(store_run_commit(s, &m, &e, &eb), 0);
    store_close(&s);
    assert_int_equal(store_open(&s, b, &eb), 0);
    write_run(s, 3, 1);
    in.point = "p=1"; /* the same point again: skipped in the merge */
    assert_int_equal(store_run_begin(s, &in, &id, &eb), 0);
    assert_int_equal(store_run_commit(s, &m, &e, &eb), 0);
    in.point = "p=2";
    assert_int_equal(store_run_begin(s, &in, &id, &eb), 0);
    assert_int_equal(store_run_commit(s, &m, &e, &eb), 0);
    store_close(&s);

    uint64_t copied, skipped;
    assert_int_equal(store_open(&s, out, &eb), 0);
    assert_int_equal(store_merge(s, a, &copied, &skipped, &eb), 0);
    assert_int_equal(copied, 2);
    assert_int_equal(skipped, 0);
    assert_int_equal(store_merge(s, b, &copied, &skipped, &eb), 0);
    assert_int_equal(copied, 2);
    assert_int_equal(skipped, 1);
    char missing[600];
    snprintf(missing, sizeof missing, "%s/none.db", tu_tmpdir());
    assert_int_equal(store_merge(s, missing, &copied, &skipped, &eb), SS_EIO);
    assert_non_null(strstr(eb.msg, "none.db"));
    const char *junk = tu_write_file(tu_tmpdir(), "junk2.db", "not a database");
    assert_int_equal(store_merge(s, junk, &copied, &skipped, &eb), SS_EPARSE);
    store_close(&s);
    assert_int_equal(tu_sql_int(out, "SELECT count(*) FROM runs"), 4);
    assert_int_equal(tu_sql_int(out, "SELECT count(*) FROM requests"), 8);
    assert_int_equal(tu_sql_int(out, "SELECT count(*) FROM summary"), 4);
    assert_int_equal(tu_sql_int(out, "SELECT count(*) FROM gpus"), 2);
    assert_int_equal(tu_sql_int(out, "SELECT count(*) FROM instances"), 2);
    assert_int_equal(tu_sql_int(out, "SELECT count(DISTINCT run_id) FROM instances i JOIN runs"
                                     " USING (run_id)"), 2);
    assert_int_equal(tu_sql_int(out, "SELECT count(*) FROM sweep_points"), 2);
    /* the copies point at their own runs */
    assert_int_equal(tu_sql_int(out, "SELECT count(*) FROM requests r JOIN runs USING (run_id)"), 8);
    assert_int_equal(tu_sql_int(out, "SELECT count(DISTINCT run_id) FROM requests"), 2);
}

/* The whole file, to tell whether a reader changed it. */
static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = malloc(1 << 20);
    assert_non_null(buf);
    *n = fread(buf, 1, 1 << 20, f);
    fclose(f);
    return buf;
}

/* Inputs are only read: merging from an older schema (6: no sweep points, no result_json, no
 * validations) copies its runs with the defaults an upgrade would give and leaves the input
 * byte for byte as it was, with no -wal or -shm file beside it; an empty file is refused
 * without writing a schema into it. Before, the input was upgraded in place. */
static void test_merge_reads_inputs_only(void **state)
{
    (void)state;
    char old[600], out[600], side[620];
    snprintf(old, sizeof old, "%s/v6.db", tu_tmpdir());
    snprintf(out, sizeof out, "%s/merged.db", tu_tmpdir());
    store *s = NULL;
    ss_errbuf eb;
    assert_int_equal(store_open(&s, old, &eb), 0);
    write_run(s, 4, 1);
    store_close(&s);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(old, &db), SQLITE_OK);
    /* what versions 7 to 10 added goes */
    assert_int_equal(sqlite3_exec(db, "DROP TABLE sweep_points; ALTER TABLE runs DROP COLUMN"
                                      " result_json; DROP TABLE validation_iters; DROP TABLE"
                                      " validation_ops; DROP TABLE validations;"
                                      " ALTER TABLE runs DROP COLUMN load;"
                                      " ALTER TABLE gpus DROP COLUMN tenant;"
                                      " ALTER TABLE gpus DROP COLUMN window_s;"
                                      " ALTER TABLE gpus DROP COLUMN compute_s;"
                                      " ALTER TABLE gpus DROP COLUMN host_s;"
                                      " ALTER TABLE summary DROP COLUMN rejected_too_long;"
                                      " ALTER TABLE summary DROP COLUMN rejected_batch_tokens;"
                                      " ALTER TABLE summary DROP COLUMN rejected_kv_blocks;"
                                      " ALTER TABLE summary DROP COLUMN rejected_preempted;"
                                      " ALTER TABLE summary DROP COLUMN rejected_other;"
                                      " ALTER TABLE runs DROP COLUMN engine;"
                                      " ALTER TABLE summary DROP COLUMN prefix_query_tokens;"
                                      " ALTER TABLE summary DROP COLUMN prefix_hit_tokens;"
                                      " ALTER TABLE summary DROP COLUMN prefix_query_blocks;"
                                      " ALTER TABLE summary DROP COLUMN prefix_hit_blocks;"
                                      " ALTER TABLE summary DROP COLUMN prefix_saved_tokens;"
                                      " ALTER TABLE summary DROP COLUMN prefix_evictions;"
                                      " ALTER TABLE tenants DROP COLUMN prefix_query_tokens;"
                                      " ALTER TABLE tenants DROP COLUMN prefix_hit_tokens;"
                                      " ALTER TABLE tenants DROP COLUMN prefix_query_blocks;"
                                      " ALTER TABLE tenants DROP COLUMN prefix_hit_blocks;"
                                      " ALTER TABLE tenants DROP COLUMN prefix_saved_tokens;"
                                      " ALTER TABLE tenants DROP COLUMN prefix_evictions;"
                                      V15_DOWN V14_DOWN V13_DOWN
                                      " PRAGMA journal_mode = DELETE; PRAGMA user_version = 6;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    size_t n0, n1;
    char *before = slurp(old, &n0);

    uint64_t copied, skipped;
    assert_int_equal(store_open(&s, out, &eb), 0);
    int rc = store_merge(s, old, &copied, &skipped, &eb);
    if (rc)
        fail_msg("merge of a version 6 input: %s", eb.msg);
    assert_int_equal(copied, 1);
    store_close(&s);
    assert_int_equal(tu_sql_int(out, "SELECT count(*) FROM requests"), 4);
    assert_int_equal(tu_sql_int(out, "SELECT count(*) FROM runs WHERE result_json IS NULL"), 1);

    char *after = slurp(old, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    free(before);
    free(after);
    snprintf(side, sizeof side, "%s-wal", old);
    assert_int_not_equal(access(side, F_OK), 0);
    snprintf(side, sizeof side, "%s-shm", old);
    assert_int_not_equal(access(side, F_OK), 0);

    const char *empty = tu_write_file(tu_tmpdir(), "empty.db", "");
    assert_int_equal(store_open(&s, out, &eb), 0);
    assert_int_equal(store_merge(s, empty, &copied, &skipped, &eb), SS_EPARSE);
    assert_non_null(strstr(eb.msg, "empty.db"));
    store_close(&s);
    struct stat st;
    assert_int_equal(stat(empty, &st), 0);
    assert_int_equal(st.st_size, 0);
    assert_int_equal(store_open_readonly(&s, empty, &eb), SS_EPARSE);
    assert_null(s);
    assert_int_equal(stat(empty, &st), 0);
    assert_int_equal(st.st_size, 0);
}

/* Run sql on the database at path in a connection of its own. */
static void sql_exec(const char *path, const char *sql)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    sqlite3_close(db);
}

/* A copy of the (checkpointed) database at from named name in the test's directory, with
 * page `page` overwritten with 0xa5 bytes when page > 0. */
static const char *copy_db(const char *from, const char *name, int64_t page)
{
    static char to[600];
    snprintf(to, sizeof to, "%s/%s", tu_tmpdir(), name);
    size_t n;
    char *buf = slurp(from, &n);
    int64_t psz = tu_sql_int(from, "PRAGMA page_size");
    if (page > 0) {
        assert_true((size_t)(page * psz) <= n);
        memset(buf + (page - 1) * psz, 0xa5, (size_t)psz);
    }
    FILE *f = fopen(to, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, n, f), n);
    fclose(f);
    free(buf);
    return to;
}

/* A capacity probe stored as a sweep point reads back with the inputs recorded for its run and
 * the figures it is judged on, every tenant's (the summary's) or one tenant's, exactly as
 * stored; a database of version 15 is upgraded with no inputs for its runs. */
static void test_probe_inputs(void **state)
{
    (void)state;
    char path[600];
    snprintf(path, sizeof path, "%s/probe.db", tu_tmpdir());
    store *s = NULL;
    ss_errbuf eb;
    assert_int_equal(store_open(&s, path, &eb), 0);
    store_run_info in = info;
    in.sweep = "capacity:x.ini";
    in.point = "policy=slice;rate=0.5";
    int64_t id;
    assert_int_equal(store_run_begin(s, &in, &id, &eb), 0);
    metrics_group_summary g = {.requests = 8, .completed = 8, .sla_violations = 3,
                               .sla_violation_rate = 3.0 / 8,
                               .win_goodput_tokens_per_s = 1234.5678901234567};
    assert_int_equal(store_run_tenant(s, "chat", "llama-2-7b", NULL, 1, 0, 0, &g, &eb), 0);
    assert_int_equal(store_run_set_inputs(s, id, "fnv1a64:1", &eb), SS_EINVAL); /* run open */
    metrics_summary m = {.requests = 8, .sim_s = 1,
                         .all = {.requests = 8, .sla_violation_rate = 0.1 + 0.2,
                                 .win_goodput_tokens_per_s = 1.0 / 3}};
    store_run_end e = {.wall_s = 0.1};
    assert_int_equal(store_run_commit(s, &m, &e, &eb), 0);

    store_probe_row row;
    assert_int_equal(store_point_probe(s, in.sweep, in.point, NULL, &row, &eb), 1);
    assert_int_equal(row.run_id, id);
    assert_string_equal(row.inputs, "");
    assert_true(row.has_figures);
    assert_true(row.sla_violation_rate == 0.1 + 0.2);
    assert_true(row.window_goodput_tokens_per_s == 1.0 / 3);
    char digest[STORE_INPUTS_MAX + 1];
    memset(digest, 'x', STORE_INPUTS_MAX);
    digest[STORE_INPUTS_MAX] = '\0';
    assert_int_equal(store_run_set_inputs(s, id, digest, &eb), SS_EINVAL);
    assert_int_equal(store_run_set_inputs(s, id, "fnv1a64:00112233aabbccdd", &eb), 0);
    assert_int_equal(store_point_probe(s, in.sweep, in.point, "chat", &row, &eb), 1);
    assert_string_equal(row.inputs, "fnv1a64:00112233aabbccdd");
    assert_true(row.has_figures);
    assert_true(row.sla_violation_rate == 3.0 / 8);
    assert_true(row.window_goodput_tokens_per_s == 1234.5678901234567);
    assert_int_equal(store_point_probe(s, in.sweep, in.point, "code", &row, &eb), 1);
    assert_false(row.has_figures); /* no such tenant in the run */
    assert_int_equal(store_point_probe(s, in.sweep, "policy=slice;rate=2", NULL, &row, &eb), 0);
    assert_int_equal(store_point_probe(s, "other", in.point, NULL, &row, &eb), 0);
    store_close(&s);

    sql_exec(path, V18_DOWN V17_DOWN V16_DOWN "PRAGMA user_version = 15;");
    assert_int_equal(store_open(&s, path, &eb), 0);
    assert_int_equal(tu_sql_int(path, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
    assert_int_equal(store_point_probe(s, in.sweep, in.point, NULL, &row, &eb), 1);
    assert_string_equal(row.inputs, "");
    store_close(&s);
}

/* A merge input that is not a sound slicesim database of this or an older schema is bad
 * input (SS_EPARSE), its message one line naming it, whatever is wrong: a newer schema, a
 * damaged page (found by store_check_input before anything is written), an index out of step
 * with its table (found only while copying: the input is checked then, and named). Before, a
 * newer or damaged input was SS_EDB, and the damage found while copying named the output. */
static void test_merge_refuses_bad_inputs(void **state)
{
    (void)state;
    char good[600], out[600];
    snprintf(good, sizeof good, "%s/good.db", tu_tmpdir());
    snprintf(out, sizeof out, "%s/out.db", tu_tmpdir());
    store *s = NULL;
    ss_errbuf eb;
    uint64_t copied, skipped;
    assert_int_equal(store_open(&s, good, &eb), 0);
    write_run(s, 40, 1);
    write_run(s, 40, 1);
    store_close(&s);
    assert_int_equal(store_open(&s, out, &eb), 0);
    write_run(s, 3, 1);

    const char *newer = copy_db(good, "newer.db", 0);
    sql_exec(newer, "PRAGMA user_version = 99");
    assert_int_equal(store_check_input(newer, &eb), SS_EPARSE);
    assert_int_equal(store_merge(s, newer, &copied, &skipped, &eb), SS_EPARSE);
    assert_int_equal(strncmp(eb.msg, newer, strlen(newer)), 0);
    assert_non_null(strstr(eb.msg, "results schema 99 is newer"));
    store *r = NULL;
    assert_int_equal(store_open_readonly(&r, newer, &eb), SS_EPARSE);
    assert_null(r);

    const char *page = copy_db(good, "page.db", tu_sql_int(good, "SELECT rootpage FROM"
                                                        " sqlite_master WHERE name = 'requests'"));
    assert_int_equal(store_check_input(page, &eb), SS_EPARSE);
    assert_int_equal(strncmp(eb.msg, page, strlen(page)), 0);
    assert_non_null(strstr(eb.msg, ": damaged: "));
    assert_null(strchr(eb.msg, '\n'));

    const char *index = copy_db(good, "index.db", 0);
    /* the index names another table while rows go, then its own again */
    sql_exec(index, "PRAGMA writable_schema = ON; UPDATE sqlite_master SET tbl_name = 'runs',"
                    " sql = 'CREATE INDEX requests_by_run ON runs(run_id)'"
                    " WHERE name = 'requests_by_run'");
    sql_exec(index, "DELETE FROM requests WHERE req_id < 5");
    sql_exec(index, "PRAGMA writable_schema = ON; UPDATE sqlite_master SET tbl_name = 'requests',"
                    " sql = 'CREATE INDEX requests_by_run ON requests(run_id)'"
                    " WHERE name = 'requests_by_run'");
    assert_int_equal(store_check_input(index, &eb), 0); /* quick_check cannot see it */
    assert_int_equal(store_merge(s, index, &copied, &skipped, &eb), SS_EPARSE);
    assert_int_equal(strncmp(eb.msg, index, strlen(index)), 0);
    assert_non_null(strstr(eb.msg, ": damaged: wrong # of entries in index requests_by_run"));
    assert_null(strchr(eb.msg, '\n'));
    store_close(&s);
    assert_int_equal(tu_sql_int(out, "SELECT count(*) FROM runs"), 1);
    assert_int_equal(tu_sql_int(out, "SELECT count(*) FROM requests"), 3);
}

/* What a run keeps (--store): no request rows under STORE_KEEP_SUMMARY, iteration rows under
 * STORE_KEEP_ITERATIONS only; the bundle and the level in the runs row. */
static void test_keep(void **state)
{
    (void)state;
    char path[600];
    snprintf(path, sizeof path, "%s/keep.db", tu_tmpdir());
    store *s = NULL;
    ss_errbuf eb;
    int64_t id;
    assert_int_equal(store_open(&s, path, &eb), 0);
    metrics_req r = {.trace_id = 1, .prompt = 10, .output_asked = 2, .generated = 2,
                     .first_token = SS_NS_PER_MS, .finish = 2 * SS_NS_PER_MS};
    store_iter_row it = {.container = 1, .iteration = 7, .tenant = "chat", .start_s = 0.5,
                         .end_s = 0.75, .prefill_seqs = 1, .decode_seqs = 2,
                         .prefill_tokens = 100, .decode_ctx_tokens = 300, .swap_blocks = 4};
    metrics_summary m = {.requests = 1, .sim_s = 1};
    store_run_end e = {.wall_s = 0.1};
    for (int k = 0; k < 3; k++) {
        store_run_info in = info;
        in.keep = k == 0 ? STORE_KEEP_SUMMARY : k == 1 ? STORE_KEEP_REQUESTS
                                                        : STORE_KEEP_ITERATIONS;
        in.bundle = k == 1 ? NULL : "tuned";
        assert_int_equal(store_run_begin(s, &in, &id, &eb), 0);
        for (int i = 0; i < STORE__REQ_CHUNK + 3; i++) /* a chunk, and a partial one */
            assert_int_equal(store_run_request(s, &r, "chat", &eb), 0);
        assert_int_equal(store_run_iteration(s, &it, &eb), 0);
        assert_int_equal(store_run_commit(s, &m, &e, &eb), 0);
    }
    /* no run is open */
    assert_int_equal(store_run_iteration(s, &it, &eb), SS_EINVAL);
    store_close(&s);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM requests WHERE run_id = 1"), 0);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM requests WHERE run_id = 2"),
                     STORE__REQ_CHUNK + 3);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM requests WHERE run_id = 3"),
                     STORE__REQ_CHUNK + 3);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM iterations"), 1);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM iterations WHERE run_id = 3 AND"
                                      " container = 1 AND iteration = 7 AND tenant = 'chat' AND"
                                      " start_s = 0.5 AND end_s = 0.75 AND kind = 'mixed' AND"
                                      " prefill_tokens = 100 AND decode_ctx_tokens = 300 AND"
                                      " swap_blocks = 4"), 1);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM runs WHERE (run_id, stored) IN"
                                      " (VALUES (1, 'summary'), (2, 'requests'),"
                                      " (3, 'iterations'))"), 3);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM runs WHERE bundle = 'tuned'"), 2);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM runs WHERE bundle IS NULL"), 1);
    store_keep k;
    assert_int_equal(store_keep_parse("iterations", &k, &eb), 0);
    assert_int_equal(k, STORE_KEEP_ITERATIONS);
    assert_int_equal(store_keep_parse("request", &k, &eb), SS_EPARSE);
    assert_string_equal(eb.msg, "--store: 'request': expected summary, requests or iterations");
    assert_string_equal(store_keep_name(STORE_KEEP_SUMMARY), "summary");
}

typedef struct table_dump {
    char text[4096];
    size_t n;
} table_dump;

static int dump_row(void *ud, int n, const char *const *cells, ss_errbuf *eb)
{
    (void)eb;
    table_dump *d = ud;
    for (int i = 0; i < n; i++)
        d->n += (size_t)snprintf(d->text + d->n, sizeof d->text - d->n, "%s%s", i ? "|" : "",
                                 cells[i] ? cells[i] : "NULL");
    d->n += (size_t)snprintf(d->text + d->n, sizeof d->text - d->n, "\n");
    return 0;
}

static int count_table(void *ud, const char *table, ss_errbuf *eb)
{
    (void)eb;
    (void)table;
    (*(int *)ud)++;
    return 0;
}

/* capacity's answers: a bundle's row and its seeds' rows (a NaN stored as NULL), merged once
 * however often; and whole tables read back as text, reals with the digits that tell them. */
static void test_capacities(void **state)
{
    (void)state;
    char path[600], out[600];
    snprintf(path, sizeof path, "%s/cap.db", tu_tmpdir());
    snprintf(out, sizeof out, "%s/capm.db", tu_tmpdir());
    store *s = NULL;
    ss_errbuf eb;
    assert_int_equal(store_open(&s, path, &eb), 0);
    store_capacity row = {
        .command = "slicesim capacity -c a,b.ini", .scenario = "a,b.ini", .sweep = "cap",
        .bundle = "slice", .reference = "container", .criterion = "worst", .tenant = NULL,
        .sla_miss_bound = 0.09, .tol = 0.02, .seeds = 1, .status = "found",
        .verdict = "-", .converged = 1, .capacity = 1.1, .capacity_lo = 1.1,
        .capacity_hi = 1.1, .ratio = NAN, .ratio_lo = NAN, .ratio_hi = NAN,
        .bracket_lo = 1.1, .bracket_hi = NAN, .goodput_tokens_per_s = 3000.25,
        .sla_miss = 0.05, .pooled_sla_miss = 0.04, .probes = 8,
    };
    store_capacity_seed sr = {.seed = 3, .status = "found", .converged = 1, .capacity = 1.1,
                              .ratio = NAN, .bracket_lo = 1.1, .bracket_hi = NAN,
                              .goodput_tokens_per_s = 3000.25, .sla_miss = 0.05,
                              .pooled_sla_miss = 0.04, .probes = 8,
                              .point = "policy=slice;rate=1.1"};
    int64_t id = 0;
    assert_int_equal(store_capacity_add(s, &row, &id, &eb), SS_EINVAL); /* not begun */
    assert_int_equal(store_capacities_begin(s, &eb), 0);
    assert_int_equal(store_capacity_add(s, &row, &id, &eb), 0);
    assert_int_equal(store_capacity_add_seed(s, id, &sr, &eb), 0);
    assert_int_equal(store_capacities_commit(s, &eb), 0);
    table_dump d = {.n = 0};
    assert_int_equal(store_table_rows(s, "capacity_seeds", dump_row, &d, &eb), 0);
    assert_string_equal(d.text,
        "capacity_id|seed|status|converged|censored|capacity|ratio|bracket_lo|bracket_hi|"
        "goodput_tokens_per_s|sla_miss|pooled_sla_miss|probes|point\n"
        "1|3|found|1|0|1.1|NULL|1.1|NULL|3000.25|0.05|0.04|8|policy=slice;rate=1.1\n");
    int n_tables = 0;
    assert_int_equal(store_tables(s, count_table, &n_tables, &eb), 0);
    assert_int_equal(n_tables, 17);
    store_close(&s);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM capacities WHERE ratio IS NULL AND"
                                      " bracket_hi IS NULL AND tenant IS NULL AND"
                                      " bracket_lo = 1.1 AND seeds = 1 AND probes = 8"), 1);
    store_merge_counts c;
    assert_int_equal(store_open(&s, out, &eb), 0);
    assert_int_equal(store_merge_counted(s, path, &c, &eb), 0);
    assert_true(c.capacities_copied == 1 && c.capacities_skipped == 0);
    assert_int_equal(store_merge_counted(s, path, &c, &eb), 0);
    assert_true(c.capacities_copied == 0 && c.capacities_skipped == 1);
    store_close(&s);
    assert_int_equal(tu_sql_int(out, "SELECT count(*) FROM capacity_seeds"), 1);
}

/* A plain run merged twice is added once; two runs that differ only in their figures (the
 * summary) are two runs. Before, every merge copied every run that was not a sweep point. */
static void test_merge_same_run(void **state)
{
    (void)state;
    char a[600], out[600];
    snprintf(a, sizeof a, "%s/sa.db", tu_tmpdir());
    snprintf(out, sizeof out, "%s/so.db", tu_tmpdir());
    store *s = NULL;
    ss_errbuf eb;
    assert_int_equal(store_open(&s, a, &eb), 0);
    write_run(s, 5, 1);
    write_run(s, 4, 1); /* the same runs row, most likely in the same second: other figures */
    store_close(&s);
    store_merge_counts c;
    assert_int_equal(store_open(&s, out, &eb), 0);
    assert_int_equal(store_merge_counted(s, a, &c, &eb), 0);
    assert_true(c.runs_copied == 2 && c.runs_same == 0);
    assert_int_equal(store_merge_counted(s, a, &c, &eb), 0);
    assert_true(c.runs_copied == 0 && c.runs_same == 2 && c.runs_skipped == 0);
    store_close(&s);
    assert_int_equal(tu_sql_int(out, "SELECT count(*) FROM runs"), 2);
    assert_int_equal(tu_sql_int(out, "SELECT count(*) FROM requests"), 9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_commit_and_read_back, teardown),
        cmocka_unit_test_teardown(test_abort_and_close_leave_earlier_runs, teardown),
        cmocka_unit_test_teardown(test_refuses_foreign_and_newer, teardown),
        cmocka_unit_test_teardown(test_upgrades_schema_1, teardown),
        cmocka_unit_test_teardown(test_upgrades_schema_12, teardown),
        cmocka_unit_test_teardown(test_allocation_failures, teardown),
        cmocka_unit_test_teardown(test_request_chunks, teardown),
        cmocka_unit_test_teardown(test_sweep_points, teardown),
        cmocka_unit_test_teardown(test_typed_reads, teardown),
        cmocka_unit_test_teardown(test_merge, teardown),
        cmocka_unit_test_teardown(test_validations, teardown),
        cmocka_unit_test_teardown(test_fits, teardown),
        cmocka_unit_test_teardown(test_merge_reads_inputs_only, teardown),
        cmocka_unit_test_teardown(test_merge_refuses_bad_inputs, teardown),
        cmocka_unit_test_teardown(test_probe_inputs, teardown),
        cmocka_unit_test_teardown(test_keep, teardown),
        cmocka_unit_test_teardown(test_capacities, teardown),
        cmocka_unit_test_teardown(test_merge_same_run, teardown),
    };
    return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}
