/* Private to src/store: the store handle, the one path every statement step takes (where tests
 * make the N-th one fail), error messages, and binding a statement's parameters. Shared by the
 * files of the store (open and schema, runs, validations and fits, reads, merge), which check
 * every sqlite3 return code and copy its message into the errbuf. Not for other modules: they
 * use store.h only, and never see SQLite. */
#ifndef SS_STORE_STORE_INT_H
#define SS_STORE_STORE_INT_H

#include "store/store.h"

#include "core/ss_file.h"

#include <sqlite3.h>
#include <stdint.h>

#define STORE__N_STMTS 12 /* statements prepared once per handle (store_run.c's table) */
#define STORE__REQ_CHUNK 32 /* request rows per multi-row INSERT: 32 x 18 parameters stay
                               under 999, the most an SQLite before 3.32 binds */

/* A request row waiting for its chunk to fill (store_run_request). */
typedef struct store__req_row {
    metrics_req r;
    const char *tenant; /* borrowed from the store's names */
} store__req_row;

struct store {
    sqlite3 *db;
    sqlite3_stmt *st[STORE__N_STMTS];
    sqlite3_stmt *st_reqs;  /* STORE__REQ_CHUNK request rows in one INSERT; prepared at the
                               first full chunk */
    store__req_row *reqs;   /* owned: request rows not inserted yet (STORE__REQ_CHUNK) */
    uint32_t n_reqs;        /* how many */
    char **names;           /* owned: tenant names of request rows, each once */
    uint32_t n_names;
    int injected;    /* SQLite code of an injected step failure not yet reported, 0: none */
    int in_run;      /* a transaction is open */
    int64_t run_id;  /* of the open run */
    store_keep keep; /* what the open run keeps */
    char *path;      /* owned */
    int created;     /* this handle made the file (O_EXCL): only then may it remove it */
    int failed;      /* opening or a step failed, or a write was rolled back */
    ss_file_id file_id; /* the file at path when it was opened (its device and inode) */
    int last_code;   /* SQLite code of the last failure reported (store__last_error) */
};

/* {======================================================================
 * Stepping and errors (store_step.c)
 * ======================================================================= */

/* Step st once: sqlite3_step's code, or the injected failure's (store_fail_step_after). */
int store__step(store *s, sqlite3_stmt *st);
/* The message of the last failure: the injected one's, or SQLite's (borrowed). Marks the
 * handle failed and keeps the failure's SQLite code in s->last_code. */
const char *store__last_error(store *s);
/* "PATH: what: SQLite's message" into eb; returns SS_EDB. Marks the handle failed, as every
 * failed step does (store_close), like store__exec's failures. */
int store__db_err(store *s, ss_errbuf *eb, const char *what);
/* Run SQL text (one step, for fault injection). 0, or SS_EDB with eb set ("PATH: what: ..."). */
int store__exec(store *s, const char *sql, ss_errbuf *eb, const char *what);
/* Roll back the open transaction, and mark the handle failed (store_close then removes a
 * database it created that holds nothing). Never fails by injection: a failed write must
 * still be undone (and if ROLLBACK itself fails, closing the connection rolls back). */
void store__rollback(store *s);

/* }====================================================================== */

/* {======================================================================
 * Binding: the parameter index advances with each bind; the first failure sticks in rc.
 * ======================================================================= */

typedef struct store__binder {
    sqlite3_stmt *st;  /* borrowed */
    int i;             /* parameters bound so far */
    int rc;            /* SQLITE_OK, or the first bind's failure */
} store__binder;

static inline void store__b_text(store__binder *b, const char *v)
{
    if (!b->rc)
        b->rc = sqlite3_bind_text(b->st, ++b->i, v ? v : "", -1, SQLITE_TRANSIENT);
}
static inline void store__b_int(store__binder *b, int64_t v)
{
    if (!b->rc)
        b->rc = sqlite3_bind_int64(b->st, ++b->i, v);
}
static inline void store__b_real(store__binder *b, double v)
{
    if (!b->rc)
        b->rc = sqlite3_bind_double(b->st, ++b->i, v);
}
static inline void store__b_null(store__binder *b)
{
    if (!b->rc)
        b->rc = sqlite3_bind_null(b->st, ++b->i);
}

/* Step a bound statement once (it must not return a row) and reset it, bindings cleared.
 * 0, or SS_EDB with eb set ("PATH: what: ..."). */
int store__run_stmt(store *s, store__binder *b, ss_errbuf *eb, const char *what);

/* }====================================================================== */

/* Whether the database at path can be read as an input (store_check_input): 0, SS_EIO when
 * it cannot be opened, SS_EPARSE when it is not a slicesim database (empty, another program's,
 * not SQLite, damaged, of a newer schema), SS_EDB when it cannot be read now (locked),
 * SS_ENOMEM. With `deep`, also every page of it is read (PRAGMA quick_check). */
int store__check_input(const char *path, int deep, ss_errbuf *eb);
/* "PATH: damaged: PROBLEM" (the first line of an integrity report) into eb; returns
 * SS_EPARSE: a damaged input is bad input. */
int store__damaged(ss_errbuf *eb, const char *path, const char *problem);
/* Prepare the statements a run writes with (store_run.c) into s->st. 0, or SS_EDB with eb set;
 * store_close finalizes them (store__free_statements). */
int store__prepare_statements(store *s, ss_errbuf *eb);
/* Finalize the statements and free the request rows and names a run writes with. */
void store__free_statements(store *s);
/* The wall-clock time now, UTC, ISO 8601 ("2024-05-01T12:00:00Z"): metadata of runs,
 * validations and fits. */
void store__utc_now(char buf[32]);

#endif
