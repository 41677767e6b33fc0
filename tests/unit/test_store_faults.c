/* The results store under failing SQLite steps: every step of a run's write (opening, schema
 * creation, the run's rows, the commit), of a merge and of the readers fails in turn with
 * SQLITE_FULL, SQLITE_BUSY and SQLITE_READONLY (store_fail_step_after). Each failure must be
 * one clear line naming the file and SQLite's words, leave every earlier run intact and no
 * half-written run (a run has its summary, requests, GPU and idle-slice rows, or is absent),
 * keep PRAGMA integrity_check at ok, and leak nothing; a database the failed write created
 * is removed, unless another connection has it open, and one that existed before is kept.
 * Also real errors: a database another connection holds locked past the busy timeout
 * (SLICESIM_BUSY_TIMEOUT_MS). The CLI side (a read-only file, a full disk, two writers at
 * once) is tests/cli/store_faults.sh. */
#include "support/test_util.h"

#include "core/ss_alloc.h"
#include "store/store.h"
#include "store/store_int.h" /* STORE__REQ_CHUNK */

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const int fault_codes[] = {SQLITE_FULL, SQLITE_BUSY, SQLITE_READONLY};

/* Requests of the run whose every step fails in turn: a full chunk of request rows (one
 * INSERT) and the rest, which the commit writes one at a time. */
#define RUN_REQS (STORE__REQ_CHUNK + 7)

static int teardown(void **state)
{
    (void)state;
    store_fail_step_after(0, 0);
    unsetenv("SLICESIM_BUSY_TIMEOUT_MS");
    tu_tmpdir_cleanup();
    tu_assert_no_leaks();
    return 0;
}

/* The database is sound: integrity ok, every run whole (its summary, requests as many as the
 * summary counts, GPU and idle-slice rows), and it holds `runs` runs. */
static void assert_sound(const char *path, int64_t runs)
{
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM pragma_integrity_check "
                                 "WHERE integrity_check = 'ok'"), 1);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM runs"), runs);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM runs r WHERE"
                                 " (SELECT count(*) FROM summary WHERE run_id = r.run_id) != 1"
                                 " OR (SELECT count(*) FROM requests WHERE run_id = r.run_id)"
                                 "   != (SELECT requests FROM summary WHERE run_id = r.run_id)"
                                 " OR NOT EXISTS (SELECT 1 FROM gpus WHERE run_id = r.run_id)"
                                 " OR (SELECT count(*) FROM idle_slices WHERE run_id = r.run_id)"
                                 "   != 8"), 0);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM requests WHERE run_id NOT IN"
                                 " (SELECT run_id FROM runs)"), 0);
}

static const store_run_info info = {
    .command = "slicesim replay --test", .trace = "t.csv", .trace_format = "native",
    .model = "llama-2-7b", .gpu = "a100-80g", .replicas = 2, .tp = 1,
    .batching = "vllm", .routing = "rr", .cost_model = "roofline", .params_json = "{}",
    .seed = 1, .rate_scale = 1.0, .sweep = "demo",
};

/* A run as a replay writes it into the open store s: 0 or the first error (the store rolls
 * the run back, as runner/ has it). point names the run's sweep point. */
static int put_run(store *s, int n_req, const char *point, ss_errbuf *eb)
{
    int64_t id;
    store_run_info in = info;
    in.point = point;
    int rc = store_run_begin(s, &in, &id, eb);
    for (int i = 0; !rc && i < n_req; i++) {
        metrics_req r = {.trace_id = (uint64_t)i, .prompt = 100, .output_asked = 10,
                         .generated = 10, .arrival = i * SS_NS_PER_S,
                         .first_token = i * SS_NS_PER_S + 50 * SS_NS_PER_MS,
                         .finish = i * SS_NS_PER_S + 500 * SS_NS_PER_MS};
        rc = store_run_request(s, &r, "default", eb);
    }
    store_gpu_row g = {.gpu = 0, .kind = "a100-80g", .busy_s = 1.5};
    metrics_group_summary grp = {.requests = (uint64_t)n_req, .completed = (uint64_t)n_req};
    metrics_slices sl = {.count = {[3] = 6}, .gpu_ns = {[3] = 30e6}};
    if (!rc)
        rc = store_run_gpu(s, &g, eb);
    if (!rc)
        rc = store_run_tenant(s, "default", "llama-2-7b", NULL, 2, 0, 0, &grp, eb);
    if (!rc)
        rc = store_run_tier(s, 0, &grp, eb);
    if (!rc)
        rc = store_run_slices(s, &sl, eb);
    metrics_summary m = {.requests = (uint64_t)n_req, .sim_s = 10, .all = grp};
    store_run_end e = {.wall_s = 0.1, .events = 42, .result_json = "{\"requests\": 1}"};
    if (!rc)
        rc = store_run_commit(s, &m, &e, eb);
    if (rc)
        store_run_abort(s); /* what runner/ does when anything fails */
    return rc;
}

/* Everything a replay does to the database, from opening it to closing it. */
static int write_run(const char *path, int n_req, const char *point, ss_errbuf *eb)
{
    store *s = NULL;
    int rc = store_open(&s, path, eb);
    if (!rc)
        rc = put_run(s, n_req, point, eb);
    store_close(&s);
    return rc;
}

/* rc and eb describe an injected failure with SQLite code code, on one line naming path. */
static void assert_clean_error(int rc, const ss_errbuf *eb, const char *path, int code)
{
    assert_int_equal(rc, SS_EDB);
    if (strncmp(eb->msg, path, strlen(path)) || !strstr(eb->msg, sqlite3_errstr(code)))
        fail_msg("'%s' does not name %s and '%s'", eb->msg, path, sqlite3_errstr(code));
    assert_null(strchr(eb->msg, '\n'));
}

/* Steps of opening the database at path, writing one run and closing it (a scratch copy of
 * the situation: a fresh database, or one holding a run). */
static uint64_t steps_of_a_run(int fresh)
{
    static int k;
    char path[600];
    ss_errbuf eb;
    snprintf(path, sizeof path, "%s/count%d.db", tu_tmpdir(), k++);
    if (!fresh)
        assert_int_equal(write_run(path, 5, "p0", &eb), 0);
    uint64_t before = store_step_count();
    assert_int_equal(write_run(path, RUN_REQS, "p1", &eb), 0);
    return store_step_count() - before;
}

/* Make step n = 1 .. steps of opening the database and writing one run fail in turn, with
 * each fault code in rotation: every one must fail the write cleanly (a step whose failure
 * went unnoticed would let the write succeed early), after which the same store, when it
 * opened, still writes a run; with n = steps + 1 nothing fails. */
static void fail_each_step_of_a_run(int fresh)
{
    char path[600];
    ss_errbuf eb;
    int64_t runs = 0;
    size_t base = ss_alloc_live_bytes();
    uint64_t steps = steps_of_a_run(fresh);
    assert_true(steps > 20);
    for (uint64_t n = 1; n <= steps + 1; n++) {
        int code = fault_codes[n % (sizeof fault_codes / sizeof *fault_codes)];
        snprintf(path, sizeof path, "%s/r%d.db", tu_tmpdir(), fresh ? (int)n : 0);
        if (fresh) {
            runs = 0;
        } else if (n == 1) {
            assert_int_equal(write_run(path, 5, "p0", &eb), 0);
            runs = 1;
        }
        store *s = NULL;
        store_fail_step_after(n, code);
        int rc = store_open(&s, path, &eb);
        if (!rc)
            rc = put_run(s, RUN_REQS, "p1", &eb);
        store_fail_step_after(0, 0);
        if (n > steps) {
            assert_int_equal(rc, SS_OK);
            store_close(&s);
            break;
        }
        if (rc == SS_OK)
            fail_msg("failing step %llu of %llu went unnoticed", (unsigned long long)n,
                     (unsigned long long)steps);
        assert_clean_error(rc, &eb, path, code);
        if (s) { /* the failure left the store usable */
            if ((rc = put_run(s, 3, "p2", &eb)))
                fail_msg("writing after failed step %llu: %s", (unsigned long long)n, eb.msg);
            runs++;
        }
        store_close(&s);
        assert_int_equal(ss_alloc_live_bytes(), base);
        if (fresh && tu_sql_int(path, "SELECT count(*) FROM sqlite_master") == 0)
            continue; /* failed before the schema was made: an empty database */
        assert_sound(path, runs);
        assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM sweep_points WHERE point = 'p1'"), 0);
    }
    assert_int_equal(ss_alloc_live_bytes(), base);
    assert_sound(path, runs + 1);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM sweep_points WHERE point = 'p1'"), 1);
}

static void test_each_step_of_a_run_fails(void **state)
{
    (void)state;
    fail_each_step_of_a_run(0);
}

static void test_each_step_of_a_new_database_fails(void **state)
{
    (void)state;
    fail_each_step_of_a_run(1);
}

/* The last step of a run is its commit; past it nothing fails. */
static void test_last_step_is_the_commit(void **state)
{
    (void)state;
    char path[600];
    ss_errbuf eb;
    snprintf(path, sizeof path, "%s/last.db", tu_tmpdir());
    uint64_t steps = steps_of_a_run(0);
    assert_int_equal(write_run(path, 5, "p0", &eb), 0);
    store_fail_step_after(steps, SQLITE_FULL);
    int rc = write_run(path, RUN_REQS, "p1", &eb);
    store_fail_step_after(0, 0);
    assert_int_equal(rc, SS_EDB);
    assert_non_null(strstr(eb.msg, "committing the run: database or disk is full"));
    assert_sound(path, 1);
}

/* Every row of every run table of in, but those of the sweep point `skip`, arrived in out
 * whole (all columns but run_id). */
static void assert_merged(const char *out, const char *in, const char *skip)
{
    static const char *const tables[] = {"runs", "requests", "summary", "gpus", "tenants",
                                         "tiers", "idle_slices"};
    sqlite3 *db;
    assert_int_equal(sqlite3_open(out, &db), SQLITE_OK);
    char sql[6000];
    snprintf(sql, sizeof sql, "ATTACH '%s' AS src", in);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++) {
        snprintf(sql, sizeof sql, "SELECT group_concat(name) FROM pragma_table_info('%s') "
                 "WHERE name != 'run_id'", tables[t]);
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        char cols[2500];
        snprintf(cols, sizeof cols, "%s", (const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
        snprintf(sql, sizeof sql, "SELECT count(*) FROM (SELECT %s FROM src.%s WHERE run_id IN"
                 " (SELECT run_id FROM src.sweep_points WHERE point != '%s') EXCEPT "
                 "SELECT %s FROM main.%s)", cols, tables[t], skip, cols, tables[t]);
        assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        if (sqlite3_column_int64(st, 0))
            fail_msg("%s: %lld rows of %s did not arrive whole", out,
                     (long long)sqlite3_column_int64(st, 0), tables[t]);
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
}

/* A merge fails whole at any step: the output keeps what it had, never gets part of the
 * input's runs, and its store still merges afterwards. A failed step used to read as the end
 * of the runs or of a table's columns (the merge then committed what it had, or copied runs
 * without their last columns), and a failed COMMIT left the transaction open. */
static void test_each_step_of_a_merge_fails(void **state)
{
    (void)state;
    char in[600], out[600];
    ss_errbuf eb;
    snprintf(in, sizeof in, "%s/in.db", tu_tmpdir());
    for (int i = 0; i < 3; i++) {
        char p[16];
        snprintf(p, sizeof p, "m%d", i);
        assert_int_equal(write_run(in, 3 + i, p, &eb), 0);
    }
    /* the steps of a clean merge */
    snprintf(out, sizeof out, "%s/count.db", tu_tmpdir());
    assert_int_equal(write_run(out, 5, "m1", &eb), 0); /* the input's m1 is skipped */
    store *s = NULL;
    uint64_t copied, skipped;
    assert_int_equal(store_open(&s, out, &eb), 0);
    uint64_t before = store_step_count();
    assert_int_equal(store_merge(s, in, &copied, &skipped, &eb), 0);
    uint64_t steps = store_step_count() - before;
    store_close(&s);
    assert_true(steps > 20);
    for (uint64_t n = 1; n <= steps + 1; n++) {
        int code = fault_codes[n % (sizeof fault_codes / sizeof *fault_codes)];
        snprintf(out, sizeof out, "%s/out%d.db", tu_tmpdir(), (int)n);
        assert_int_equal(write_run(out, 5, "m1", &eb), 0);
        assert_int_equal(store_open(&s, out, &eb), 0);
        copied = skipped = 99;
        store_fail_step_after(n, code);
        int rc = store_merge(s, in, &copied, &skipped, &eb);
        store_fail_step_after(0, 0);
        if (n > steps) {
            assert_int_equal(rc, SS_OK);
            store_close(&s);
            assert_true(copied == 2 && skipped == 1);
            assert_sound(out, 3);
            assert_merged(out, in, "m1");
            break;
        }
        if (rc == SS_OK)
            fail_msg("failing step %llu of %llu of the merge went unnoticed",
                     (unsigned long long)n, (unsigned long long)steps);
        /* the failure names the file it happened in: the input is opened first */
        assert_clean_error(rc, &eb, strncmp(eb.msg, in, strlen(in)) ? out : in, code);
        assert_true(copied == 0 && skipped == 0);
        assert_sound(out, 1);
        assert_sound(in, 3);
        assert_int_equal(store_merge(s, in, &copied, &skipped, &eb), 0);
        assert_true(copied == 2 && skipped == 1);
        store_close(&s);
        assert_sound(out, 3);
    }
}

/* Whether path or any of SQLite's files beside it (-wal, -shm, -journal) exists. */
static int any_file_left(const char *path)
{
    static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < sizeof suffix / sizeof *suffix; i++) {
        char p[640];
        snprintf(p, sizeof p, "%s%s", path, suffix[i]);
        if (access(p, F_OK) == 0)
            return 1;
    }
    return 0;
}

/* A replay onto a new database whose opening or first run fails at any step (the disk full,
 * the file locked, read-only) closes and leaves no file behind: not the database (it used to
 * stay, 0 bytes when "setting WAL" failed) nor its -wal and -shm (the -wal held the schema's
 * commit, which a full disk cannot checkpoint). */
static void test_failed_new_database_leaves_nothing(void **state)
{
    (void)state;
    char path[600];
    ss_errbuf eb;
    uint64_t steps = steps_of_a_run(1);
    for (uint64_t n = 1; n <= steps; n++) {
        int code = fault_codes[n % (sizeof fault_codes / sizeof *fault_codes)];
        snprintf(path, sizeof path, "%s/gone%d.db", tu_tmpdir(), (int)n);
        store_fail_step_after(n, code);
        int rc = write_run(path, RUN_REQS, "p1", &eb);
        store_fail_step_after(0, 0);
        assert_clean_error(rc, &eb, path, code);
        if (any_file_left(path))
            fail_msg("step %llu of %llu failed (%s) and left %s or its -wal, -shm behind",
                     (unsigned long long)n, (unsigned long long)steps, eb.msg, path);
    }
}

/* A database that existed before is never removed, even when it holds nothing: an empty file
 * (as `touch` leaves it) or a database with the schema and no run. */
static void test_failed_write_keeps_an_existing_file(void **state)
{
    (void)state;
    char path[600];
    ss_errbuf eb;
    uint64_t steps = steps_of_a_run(1);
    for (int kind = 0; kind < 2; kind++) {
        for (uint64_t n = 1; n <= steps; n++) {
            int code = fault_codes[n % (sizeof fault_codes / sizeof *fault_codes)];
            snprintf(path, sizeof path, "%s/kept%d-%d.db", tu_tmpdir(), kind, (int)n);
            store *s = NULL;
            if (kind == 0) {
                FILE *f = fopen(path, "w");
                assert_non_null(f);
                fclose(f);
            } else {
                assert_int_equal(store_open(&s, path, &eb), 0);
                store_close(&s);
            }
            store_fail_step_after(n, code);
            int rc = write_run(path, RUN_REQS, "p1", &eb);
            store_fail_step_after(0, 0);
            if (kind == 1 && rc == SS_OK)
                break; /* the schema exists: fewer steps */
            assert_clean_error(rc, &eb, path, code);
            if (access(path, F_OK) != 0)
                fail_msg("step %llu failed (%s) and removed %s, which existed before",
                         (unsigned long long)n, eb.msg, path);
        }
    }
}

/* A database this store created but another connection has open meanwhile is not removed when
 * the store's run fails: the other may be about to write to it. */
static void test_failed_new_database_in_use_is_kept(void **state)
{
    (void)state;
    char path[600];
    ss_errbuf eb;
    snprintf(path, sizeof path, "%s/shared.db", tu_tmpdir());
    store *s = NULL;
    assert_int_equal(store_open(&s, path, &eb), 0);
    sqlite3 *other;
    assert_int_equal(sqlite3_open(path, &other), SQLITE_OK);
    assert_int_equal(sqlite3_exec(other, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL),
                     SQLITE_OK);
    store_fail_step_after(3, SQLITE_FULL);
    assert_int_equal(put_run(s, RUN_REQS, "p1", &eb), SS_EDB);
    store_fail_step_after(0, 0);
    store_close(&s);
    assert_int_equal(access(path, F_OK), 0);
    assert_int_equal(sqlite3_exec(other, "INSERT INTO sweep_points VALUES ('x', 'y', 1)", NULL,
                                  NULL, NULL), SQLITE_OK);
    sqlite3_close(other);
    assert_int_equal(tu_sql_int(path, "SELECT count(*) FROM sweep_points"), 1);
}

static int on_point(void *ud, int64_t run_id, const char *point, ss_errbuf *eb)
{
    (void)run_id, (void)point, (void)eb;
    ++*(int *)ud;
    return 0;
}
static int on_run(void *ud, const store_run_row *row, ss_errbuf *eb)
{
    (void)row, (void)eb;
    ++*(int *)ud;
    return 0;
}
static int on_summary(void *ud, const store_summary_row *row, ss_errbuf *eb)
{
    (void)row, (void)eb;
    ++*(int *)ud;
    return 0;
}
static int on_gpu(void *ud, const store_gpu_time_row *row, ss_errbuf *eb)
{
    (void)row, (void)eb;
    ++*(int *)ud;
    return 0;
}
static int on_idle(void *ud, const store_idle_slice_row *row, ss_errbuf *eb)
{
    (void)row, (void)eb;
    ++*(int *)ud;
    return 0;
}
static int on_tier(void *ud, const store_tier_row *row, ss_errbuf *eb)
{
    (void)row, (void)eb;
    ++*(int *)ud;
    return 0;
}

enum { N_READERS = 8 };

/* Read run 1 with reader r of the figures' readers (store_newest_sweep ... store_run_tiers). */
static int read_with(store *s, int r, ss_errbuf *eb)
{
    int n = 0, rc;
    char *name = NULL;
    double *v = NULL;
    size_t n_v = 0;
    switch (r) {
    case 0: rc = store_newest_sweep(s, &name, eb); break;
    case 1: rc = store_sweep_points(s, "demo", on_point, &n, eb); break;
    case 2: rc = store_runs(s, on_run, &n, eb); break;
    case 3: rc = store_summaries(s, on_summary, &n, eb); break;
    case 4: rc = store_run_latencies(s, 1, STORE_LAT_E2E, &v, &n_v, eb); break;
    case 5: rc = store_run_gpu_times(s, 1, on_gpu, &n, eb); break;
    case 6: rc = store_run_idle_slices(s, 1, on_idle, &n, eb); break;
    default: rc = store_run_tiers(s, 1, on_tier, &n, eb); break;
    }
    ss_free(name);
    ss_free(v);
    return rc;
}

/* Readers report a failed step as an error, never as "no such row". */
static void test_each_step_of_the_readers_fails(void **state)
{
    (void)state;
    char path[600];
    ss_errbuf eb;
    snprintf(path, sizeof path, "%s/read.db", tu_tmpdir());
    assert_int_equal(write_run(path, 4, "p0", &eb), 0);
    store *s = NULL;
    assert_int_equal(store_open(&s, path, &eb), 0);
    for (size_t i = 0; i < sizeof fault_codes / sizeof *fault_codes; i++) {
        int code = fault_codes[i];
        int64_t id = 0;
        store_fail_step_after(1, code);
        int has = store_has_point(s, "demo", "p0", &id, &eb);
        assert_true(has < 0);
        assert_clean_error(has, &eb, path, code);
        store_point_row row;
        store_fail_step_after(1, code);
        int got = store_point_summary(s, "demo", "p0", &row, &eb);
        assert_true(got < 0);
        assert_clean_error(got, &eb, path, code);
        for (int r = 0; r < N_READERS; r++) {
            store_fail_step_after(1, code);
            int rc = read_with(s, r, &eb);
            assert_clean_error(rc, &eb, path, code);
        }
        store_fail_step_after(0, 0);
        assert_int_equal(store_has_point(s, "demo", "p0", &id, &eb), 1); /* and then it works */
        assert_int_equal(id, 1);
    }
    store_close(&s);
}

/* Another connection holds the write lock (an exclusive transaction) past the busy timeout:
 * the run cannot begin, with one clear line, and nothing changes; once the lock is gone the
 * same store writes. */
static void test_locked_database(void **state)
{
    (void)state;
    char path[600];
    ss_errbuf eb;
    snprintf(path, sizeof path, "%s/lock.db", tu_tmpdir());
    assert_int_equal(write_run(path, 5, "p0", &eb), 0);
    setenv("SLICESIM_BUSY_TIMEOUT_MS", "50", 1);
    sqlite3 *other;
    assert_int_equal(sqlite3_open(path, &other), SQLITE_OK);
    assert_int_equal(sqlite3_exec(other, "BEGIN EXCLUSIVE; INSERT INTO sweep_points "
                                         "VALUES ('x', 'y', 1)", NULL, NULL, NULL), SQLITE_OK);
    int rc = write_run(path, RUN_REQS, "p1", &eb);
    assert_clean_error(rc, &eb, path, SQLITE_BUSY);
    assert_non_null(strstr(eb.msg, "starting the run's transaction: database is locked"));
    assert_int_equal(sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(other);
    assert_int_equal(write_run(path, RUN_REQS, "p1", &eb), 0);
    assert_sound(path, 2);
}

#define T(fn) cmocka_unit_test_teardown(fn, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_each_step_of_a_run_fails),
        T(test_each_step_of_a_new_database_fails),
        T(test_last_step_is_the_commit),
        T(test_failed_new_database_leaves_nothing),
        T(test_failed_write_keeps_an_existing_file),
        T(test_failed_new_database_in_use_is_kept),
        T(test_each_step_of_a_merge_fails),
        T(test_each_step_of_the_readers_fails),
        T(test_locked_database),
    };
    return cmocka_run_group_tests_name("store_faults", tests, NULL, NULL);
}
