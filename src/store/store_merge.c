/* `slicesim db merge`: copy every run of another database (its rows in every table, under new
 * run ids) and its validations, fits and capacities into this one, in one transaction, skipping
 * the sweep points, runs and records it holds already. The input is attached read-only. */
#include "store/store_int.h"

#include "core/ss_alloc.h"
#include "core/ss_strbuf.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* ---- merging databases ------------------------------------------------------------------- */

/* The tables that hang off runs, in the order they are copied. */
static const char *const run_tables[] = {"requests", "summary", "gpus", "tenants", "tiers",
                                         "idle_slices", "instances", "sweep_points",
                                         "iterations"};

/* The columns of table that main and src both have but `skip` (the key a copy renumbers),
 * comma-separated; with cmp, as "M.c IS V.c AND ..." instead (rows equal in every other
 * column), M and V the aliases of main's and src's rows (m and v unless given). NULL on error
 * (eb set). */
static char *column_list_as(store *s, const char *table, const char *skip, int cmp,
                            const char *ma, const char *va, ss_errbuf *eb)
{
    /* the columns both have: an input of an older schema lacks the newer ones, which then
     * take their defaults, as an upgrade in place would have given them */
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT cid, name FROM pragma_table_info('%s', 'main') WHERE name"
             " IN (SELECT name FROM pragma_table_info('%s', 'src')) ORDER BY cid", table, table);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        store__db_err(s, eb, "reading the schema");
        return NULL;
    }
    ss_strbuf b = {0};
    int n = 0, rc;
    while ((rc = store__step(s, st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 1);
        if (!strcmp(name, skip))
            continue;
        if (cmp)
            ss_strbuf_printf(&b, "%s%s.%s IS %s.%s", n++ ? " AND " : "", ma, name, va, name);
        else
            ss_strbuf_printf(&b, "%s%s", n++ ? ", " : "", name);
    }
    /* a failed step is an error, not the end of the list (a merge would drop columns) */
    char *out = rc == SQLITE_DONE && ss_strbuf_ok(&b) ? ss_strdup(ss_strbuf_str(&b)) : NULL;
    if (rc != SQLITE_DONE)
        store__db_err(s, eb, "reading the schema");
    else if (!out)
        ss_err(eb, SS_ENOMEM, "out of memory");
    sqlite3_finalize(st);
    ss_strbuf_fini(&b);
    return out;
}

static char *column_list_of(store *s, const char *table, const char *skip, int cmp,
                            ss_errbuf *eb)
{
    return column_list_as(s, table, skip, cmp, "m", "v", eb);
}

/* 1 when the attached input has table (an older schema may not), 0 when not, <0 on error. */
static int src_has(store *s, const char *table)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT count(*) FROM src.sqlite_master WHERE type = 'table'"
                                  " AND name = ?", -1, &st, NULL) != SQLITE_OK)
        return SS_EDB;
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    int rc = store__step(s, st);
    int out = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) > 0 : SS_EDB;
    sqlite3_finalize(st);
    return out;
}

static char *column_list(store *s, const char *table, ss_errbuf *eb)
{
    return column_list_of(s, table, "run_id", 0, eb);
}

typedef struct merger {
    sqlite3_stmt *runs, *dup, *same, *copy_run, *copy[sizeof run_tables / sizeof *run_tables];
} merger;

static void merger_free(merger *m)
{
    sqlite3_finalize(m->runs);
    sqlite3_finalize(m->dup);
    sqlite3_finalize(m->same);
    sqlite3_finalize(m->copy_run);
    for (size_t i = 0; i < sizeof m->copy / sizeof *m->copy; i++)
        sqlite3_finalize(m->copy[i]);
}

static int prep(store *s, const char *sql, sqlite3_stmt **st, ss_errbuf *eb)
{
    return sqlite3_prepare_v2(s->db, sql, -1, st, NULL) == SQLITE_OK
               ? SS_OK
               : store__db_err(s, eb, "preparing the merge");
}

static int merger_make(store *s, merger *m, ss_errbuf *eb)
{
    char sql[4096];
    int rc = prep(s, "SELECT run_id FROM src.runs ORDER BY run_id", &m->runs, eb);
    int has_points = rc ? 0 : src_has(s, "sweep_points");
    if (has_points < 0)
        rc = store__db_err(s, eb, "reading the input's schema");
    if (!rc && has_points)
        rc = prep(s, "SELECT count(*), count(q.sweep) FROM src.sweep_points p"
                     " LEFT JOIN main.sweep_points q ON p.sweep = q.sweep AND p.point = q.point"
                     " WHERE p.run_id = ?", &m->dup, eb); /* its points; those main has */
    /* a run main holds already: equal in every runs and summary column both have but its id
     * (the same run, merged before: its wall-clock start, command, settings and figures); a
     * sweep point is not looked up so: its point is what it is (two points may well have
     * equal runs) */
    char *same = rc ? NULL : column_list_of(s, "runs", "run_id", 1, eb);
    char *same_sum = same ? column_list_as(s, "summary", "run_id", 1, "ms", "vs", eb) : NULL;
    if (!rc && (!same || !same_sum))
        rc = SS_EDB;
    if (!rc) {
        size_t n = strlen(same) + strlen(same_sum) + 512;
        char *q = ss_malloc(n);
        if (!q)
            rc = ss_err(eb, SS_ENOMEM, "out of memory");
        else {
            snprintf(q, n, "SELECT count(*) FROM main.runs m, src.runs v WHERE v.run_id = ?1"
                           " AND %s AND (SELECT count(*) FROM main.summary ms, src.summary vs"
                           " WHERE ms.run_id = m.run_id AND vs.run_id = ?1 AND %s) ="
                           " (SELECT count(*) FROM src.summary WHERE run_id = ?1)",
                     same, same_sum);
            rc = prep(s, q, &m->same, eb);
            ss_free(q);
        }
    }
    ss_free(same);
    ss_free(same_sum);
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
            return store__db_err(s, eb, "reading the input's schema");
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
    int rc = store__step(s, st) == SQLITE_DONE ? SS_OK : store__db_err(s, eb, what);
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
static const record_kind kind_capacities = {
    "capacities", "capacity_id", {"capacity_seeds", "capacity_seeds"}, "capacity"};

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
        int more = store__step(s, ids);
        if (more != SQLITE_ROW) {
            rc = more == SQLITE_DONE ? SS_OK : store__db_err(s, eb, "reading the records to merge");
            break;
        }
        int64_t old = sqlite3_column_int64(ids, 0);
        sqlite3_bind_int64(dup, 1, old);
        if (store__step(s, dup) != SQLITE_ROW) {
            rc = store__db_err(s, eb, "looking up a record to merge");
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
    *skipped = c.runs_skipped + c.runs_same;
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
    return ss_err(eb, SS_EDB, "%s: %s: %s", in_path, what, store__last_error(s));
}

/* A merge failed with SQLITE_CORRUPT: when the input is the damaged file (its integrity check
 * reports a problem), that is bad input, SS_EPARSE naming it; else rc, eb unchanged (the
 * output's, or a check that cannot run). */
static int input_damaged(store *s, const char *in_path, int rc, ss_errbuf *eb)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "PRAGMA src.integrity_check(1)", -1, &st, NULL) != SQLITE_OK)
        return rc;
    if (sqlite3_step(st) == SQLITE_ROW) {
        const char *what = (const char *)sqlite3_column_text(st, 0);
        if (what && strcmp(what, "ok"))
            rc = store__damaged(eb, in_path, what);
    }
    sqlite3_finalize(st);
    return rc;
}

int store_merge_counted(store *s, const char *in_path, store_merge_counts *c, ss_errbuf *eb)
{
    memset(c, 0, sizeof *c);
    s->last_code = SQLITE_OK;
    uint64_t *copied = &c->runs_copied, *skipped = &c->runs_skipped;
    if (s->in_run)
        return ss_err(eb, SS_EINVAL, "%s: a run is open", s->path);
    /* ours and readable; writes nothing (its pages are read by the copy itself, and a damaged
     * one found so is reported below) */
    int rc = store__check_input(in_path, 0, eb);
    if (rc)
        return rc;
    char *uri = ro_uri(in_path);
    if (!uri)
        return ss_err(eb, SS_ENOMEM, "out of memory");
    sqlite3_stmt *att;
    if (sqlite3_prepare_v2(s->db, "ATTACH DATABASE ? AS src", -1, &att, NULL) != SQLITE_OK) {
        ss_free(uri);
        return store__db_err(s, eb, "attaching");
    }
    sqlite3_bind_text(att, 1, uri, -1, SQLITE_TRANSIENT);
    ss_free(uri);
    rc = store__step(s, att) == SQLITE_DONE ? SS_OK : src_err(s, in_path, eb, "attaching");
    sqlite3_finalize(att);
    if (rc)
        return rc;
    merger m = {0};
    rc = store__exec(s, "BEGIN IMMEDIATE", eb, "starting the merge");
    int began = !rc;
    if (!rc)
        rc = merger_make(s, &m, eb);
    /* a failed step is an error, not the end of the runs (that would commit half a merge) */
    while (!rc) {
        int more = store__step(s, m.runs);
        if (more != SQLITE_ROW) {
            rc = more == SQLITE_DONE ? SS_OK
                                     : src_err(s, in_path, eb, "reading the runs to merge");
            break;
        }
        int64_t old = sqlite3_column_int64(m.runs, 0);
        int point = 0, dup = 0;
        if (m.dup) {
            sqlite3_bind_int64(m.dup, 1, old);
            if (store__step(s, m.dup) != SQLITE_ROW) {
                rc = store__db_err(s, eb, "looking up a sweep point");
                break;
            }
            point = sqlite3_column_int64(m.dup, 0) > 0;
            dup = sqlite3_column_int64(m.dup, 1) > 0;
            sqlite3_reset(m.dup);
        }
        if (dup) {
            (*skipped)++;
            continue;
        }
        if (point) { /* a new point: copied, never looked up as a run main holds */
            rc = merge_run(s, &m, old, eb);
            *copied += !rc;
            continue;
        }
        sqlite3_bind_int64(m.same, 1, old);
        if (store__step(s, m.same) != SQLITE_ROW) {
            rc = store__db_err(s, eb, "looking up a run");
            break;
        }
        int same = sqlite3_column_int64(m.same, 0) > 0;
        sqlite3_reset(m.same);
        if (same) {
            c->runs_same++;
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
    int has_caps = rc ? 0 : src_has(s, "capacities");
    if (has_caps < 0)
        rc = src_err(s, in_path, eb, "reading the schema");
    if (!rc && has_caps)
        rc = merge_records(s, &kind_capacities, &c->capacities_copied, &c->capacities_skipped,
                           eb);
    if (!rc)
        rc = store__exec(s, "COMMIT", eb, "committing the merge");
    int damaged = rc == SS_EDB && (s->last_code & 0xff) == SQLITE_CORRUPT;
    if (rc && began)
        store__rollback(s);
    if (damaged)
        rc = input_damaged(s, in_path, rc, eb);
    char *msg = NULL;
    sqlite3_exec(s->db, "DETACH DATABASE src", NULL, NULL, &msg);
    sqlite3_free(msg);
    /* The read-only attachment left the input's -wal and -shm files; a connection that may
     * write (but does not) removes them when it closes, if it is the last one. Best effort,
     * so it bypasses store__step(): it changes nothing, and its failure is no failure. */
    sqlite3 *again = NULL;
    if (sqlite3_open_v2(in_path, &again, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK)
        sqlite3_exec(again, "PRAGMA query_only = 1; SELECT count(*) FROM sqlite_master", NULL,
                     NULL, NULL);
    sqlite3_close(again);
    if (rc)
        memset(c, 0, sizeof *c);
    return rc;
}
