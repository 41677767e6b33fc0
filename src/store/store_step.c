/* The one path every SQLite statement step of the store takes (store__step, store__exec), so
 * that tests can make the N-th one fail (store_fail_step_after); the messages made of a failure;
 * ROLLBACK; stepping a bound statement. Holds no SQL of its own but ROLLBACK. */
#include "store/store_int.h"

#include "core/ss_err.h"

#include <stdint.h>

/* ---- fault injection: every statement step goes through store__step() or store__exec() ---- */

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

int store__step(store *s, sqlite3_stmt *st)
{
    return injected_now(&s->injected) ? s->injected : sqlite3_step(st);
}

/* The message of the last failure: the injected one's, or SQLite's. */
const char *store__last_error(store *s)
{
    s->failed = 1;
    if (s->injected) {
        int rc = s->injected;
        s->injected = 0;
        s->last_code = rc;
        return sqlite3_errstr(rc);
    }
    s->last_code = s->db ? sqlite3_errcode(s->db) : SQLITE_CANTOPEN;
    return s->db ? sqlite3_errmsg(s->db) : "cannot open";
}

int store__db_err(store *s, ss_errbuf *eb, const char *what)
{
    return ss_err(eb, SS_EDB, "%s: %s: %s", s->path, what, store__last_error(s));
}

/* Run SQL text (one step, for fault injection). */
int store__exec(store *s, const char *sql, ss_errbuf *eb, const char *what)
{
    char *msg = NULL;
    if (injected_now(&s->injected))
        return store__db_err(s, eb, what);
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) == SQLITE_OK)
        return SS_OK;
    s->failed = 1;
    s->last_code = sqlite3_errcode(s->db);
    int rc = ss_err(eb, SS_EDB, "%s: %s: %s", s->path, what, msg ? msg : "failed");
    sqlite3_free(msg);
    return rc;
}

/* Roll back the open transaction. Never fails by injection: a failed write must still be
 * undone (and if ROLLBACK itself fails, closing the connection rolls back). */
void store__rollback(store *s)
{
    s->failed = 1;
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

/* Step a bound statement once and reset it. */
int store__run_stmt(store *s, store__binder *b, ss_errbuf *eb, const char *what)
{
    int rc = b->rc == SQLITE_OK ? store__step(s, b->st) : b->rc;
    int ok = rc == SQLITE_DONE;
    int out = ok ? SS_OK : store__db_err(s, eb, what);
    sqlite3_reset(b->st);
    sqlite3_clear_bindings(b->st);
    return out;
}

