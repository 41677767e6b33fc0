/* Reading results back: a sweep point's headline figures (a resumed sweep's table), and the
 * read-only query reports and plots run. */
#include "store/store_int.h"

#include "core/ss_alloc.h"

#include <string.h>

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

/* ---- queries ---------------------------------------------------------------------------- */

int store_query(store *s, const char *sql, const char *const *params, int n_params,
                store_row_fn *fn, void *ud, ss_errbuf *eb)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return store__db_err(s, eb, "preparing a query");
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
    while ((step_rc = store__step(s, st)) == SQLITE_ROW) {
        for (int i = 0; i < n; i++)
            cols[i] = (const char *)sqlite3_column_text(st, i);
        if ((rc = fn(ud, n, cols, eb)))
            break;
    }
    if (!rc && step_rc != SQLITE_DONE)
        rc = store__db_err(s, eb, "running a query");
    sqlite3_finalize(st);
    return rc;
}
