/* Reading whole tables for export (`slicesim db export`): the database's tables by name, and
 * each table's rows as text cells, header first. Nothing is written to the database; the
 * caller writes the files. */
#include "store/store_int.h"

#include "core/ss_alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int store_tables(store *s, store_table_fn *fn, void *ud, ss_errbuf *eb)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT name FROM sqlite_master WHERE type = 'table' AND"
                                  " name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
                           -1, &st, NULL) != SQLITE_OK)
        return store__db_err(s, eb, "listing the tables");
    int rc = SS_OK, step;
    while (!rc && (step = store__step(s, st)) == SQLITE_ROW)
        rc = fn(ud, (const char *)sqlite3_column_text(st, 0), eb);
    if (!rc && step != SQLITE_DONE)
        rc = store__db_err(s, eb, "listing the tables");
    sqlite3_finalize(st);
    return rc;
}

/* Room for a REAL as "%.17g" (sign, 17 digits, point, exponent). */
#define REAL_TEXT 32

/* v with the fewest significant digits, 15 to 17, that strtod reads back as v. */
static void real_text(char out[REAL_TEXT], double v)
{
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(out, REAL_TEXT, "%.*g", digits, v);
        if (strtod(out, NULL) == v)
            return;
    }
}

int store_table_rows(store *s, const char *table, store_row_fn *fn, void *ud, ss_errbuf *eb)
{
    /* the name is an identifier from sqlite_master, quoted as one (never spliced raw) */
    char *sql = sqlite3_mprintf("SELECT * FROM main.\"%w\"", table);
    if (!sql)
        return ss_err(eb, SS_ENOMEM, "out of memory");
    sqlite3_stmt *st;
    int prep = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    sqlite3_free(sql);
    if (prep != SQLITE_OK)
        return store__db_err(s, eb, "reading a table");
    int n = sqlite3_column_count(st);
    const char **cell = ss_calloc((size_t)(n ? n : 1), sizeof *cell);
    char *reals = ss_calloc((size_t)(n ? n : 1), REAL_TEXT);
    int rc = cell && reals ? SS_OK : ss_err(eb, SS_ENOMEM, "out of memory");
    for (int i = 0; !rc && i < n; i++)
        cell[i] = sqlite3_column_name(st, i);
    if (!rc)
        rc = fn(ud, n, cell, eb);
    int step = SQLITE_DONE;
    while (!rc && (step = store__step(s, st)) == SQLITE_ROW) {
        for (int i = 0; i < n; i++) {
            switch (sqlite3_column_type(st, i)) {
            case SQLITE_NULL: cell[i] = NULL; break;
            case SQLITE_FLOAT: /* the shortest of 15 to 17 digits that reads back the very
                                  value, so that a notebook reads what was stored */
                real_text(reals + (size_t)i * REAL_TEXT, sqlite3_column_double(st, i));
                cell[i] = reals + (size_t)i * REAL_TEXT;
                break;
            default: {
                const char *t = (const char *)sqlite3_column_text(st, i);
                cell[i] = t ? t : "";
            }
            }
        }
        rc = fn(ud, n, cell, eb);
    }
    if (!rc && step != SQLITE_DONE)
        rc = store__db_err(s, eb, "reading a table");
    ss_free(cell);
    ss_free(reals);
    sqlite3_finalize(st);
    return rc;
}
