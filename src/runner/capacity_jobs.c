/* `slicesim capacity --jobs N`: the command's searches (bundles x seeds, independent of each
 * other) in worker processes, each a fork of the command that runs one search, writes its
 * stderr to a file, its new probes to a database of its own and its results to shared
 * memory; then everything in the order of the searches run one after the other, so that the
 * output and the database are theirs. Not for the search (capacity.c) nor the probes
 * (capacity_run.c). */
#include "runner/capacity_int.h"

#include "core/ss_alloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* What a worker hands back, in memory shared with the command. */
typedef struct slot {
    int rc;                    /* its search's result (0, or an SS_E* code) */
    int redo;                  /* it met a probe stored from other inputs (capacity.redo) */
    char msg[SS_ERRBUF_LEN];   /* the error's message */
    int n_reused, n_rerun;     /* its probes reused, and found from other inputs */
    runner_capacity_result res;
    char best_search[RUNNER__SEARCH_NOTE];
} slot;

/* One search's worker, as the command sees it. */
typedef struct job {
    pid_t pid;                 /* running (> 0), or 0 */
    FILE *err;                 /* its stderr while it runs (a temporary file) */
    char *text;                /* what it wrote there, once it ended (owned) */
    size_t n_text;
    int ended;                 /* reaped: text and its slot are final */
    int failed;                /* it died without handing back (a crash, a signal) */
    int shown;                 /* its text was copied to stderr */
} job;

/* The command's state while its workers run. */
typedef struct pool {
    capacity *c;
    int n;                     /* searches */
    int jobs;                  /* workers at once */
    slot *slots;               /* n, shared with the workers */
    job *job;                  /* n (owned) */
    char dir[4096];            /* the workers' databases (with a database; else "") */
    int n_running, next, next_shown;
    int n_done;                /* searches ended (RUNNER_PROGRESS_SEARCHES counts them) */
    int stop;                  /* a search failed: start no more */
} pool;

/* Search i's worker database. */
static void job_db(const pool *pl, int i, char *out, size_t n)
{
    snprintf(out, n, "%s/search%d.db", pl->dir, i + 1);
}

/* In the worker (never returns): search i with stderr into err, new probes into a database of
 * its own, stored ones read from the command's; the results into its slot. The command's
 * open database is inherited but never touched here (a SQLite connection belongs to the
 * process that opened it). */
static void work(pool *pl, int i, FILE *err)
{
    capacity *c = pl->c;
    slot *sl = &pl->slots[i];
    ss_errbuf eb = {""};
    fflush(stderr);
    if (dup2(fileno(err), STDERR_FILENO) < 0)
        _exit(1);
    c->worker = 1;
    c->p = i / c->n_seeds;
    c->k = i % c->n_seeds;
    c->n_reused = c->n_rerun = 0;
    const char *main_db = c->st ? store_path(c->st) : NULL;
    c->st = c->st_read = NULL;
    int rc = SS_OK;
    if (main_db) {
        char path[sizeof pl->dir + 32];
        job_db(pl, i, path, sizeof path);
        rc = store_open_readonly(&c->st_read, main_db, &eb);
        if (!rc)
            rc = store_open(&c->st, path, &eb);
    }
    if (!rc)
        rc = runner__capacity_search_one(c, &eb);
    sl->rc = rc;
    sl->redo = c->redo;
    memcpy(sl->msg, eb.msg, sizeof sl->msg);
    sl->n_reused = c->n_reused;
    sl->n_rerun = c->n_rerun;
    sl->res = c->res[i];
    memcpy(sl->best_search, c->best_search[i], sizeof sl->best_search);
    store_close(&c->st); /* removed when it holds nothing */
    store_close(&c->st_read);
    fflush(NULL);
    _exit(0);
}

/* Start search pl->next's worker. 0 or SS_EIO with eb set. */
static int start(pool *pl, ss_errbuf *eb)
{
    int i = pl->next;
    job *j = &pl->job[i];
    if (!(j->err = tmpfile()))
        return ss_err(eb, SS_EIO, "capacity: a temporary file for a worker's messages: %s",
                      strerror(errno));
    fflush(NULL); /* nothing buffered is written twice */
    j->pid = fork();
    if (j->pid < 0) {
        fclose(j->err);
        j->err = NULL;
        return ss_err(eb, SS_EIO, "capacity: cannot start a worker: %s", strerror(errno));
    }
    if (j->pid == 0)
        work(pl, i, j->err);
    pl->next++;
    pl->n_running++;
    return SS_OK;
}

/* Read the whole of f (from its start) into *text: 0, or -1 when out of memory or unreadable. */
static int slurp(FILE *f, char **text, size_t *n)
{
    size_t cap = 0;
    *text = NULL;
    *n = 0;
    rewind(f);
    for (;;) {
        if (ss_grow((void **)text, &cap, *n + 4096, 1))
            return -1;
        size_t got = fread(*text + *n, 1, cap - *n, f);
        *n += got;
        if (got == 0)
            return ferror(f) ? -1 : 0;
    }
}

/* Wait for one worker to end and take what it left. 0 or SS_EIO/SS_ENOMEM with eb set. */
static int reap(pool *pl, ss_errbuf *eb)
{
    int status = 0;
    pid_t pid;
    while ((pid = waitpid(-1, &status, 0)) < 0 && errno == EINTR)
        ;
    if (pid < 0)
        return ss_err(eb, SS_EIO, "capacity: waiting for a worker: %s", strerror(errno));
    for (int i = 0; i < pl->next; i++) {
        job *j = &pl->job[i];
        if (j->pid != pid)
            continue;
        j->pid = 0;
        j->ended = 1;
        j->failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
        pl->n_running--;
        int bad = slurp(j->err, &j->text, &j->n_text);
        fclose(j->err);
        j->err = NULL;
        if (bad)
            return ss_err(eb, SS_ENOMEM, "capacity: reading a worker's messages failed");
        if (j->failed || (pl->slots[i].rc && !pl->slots[i].redo))
            pl->stop = 1; /* the searches after it are not wanted */
        else if (!pl->slots[i].redo) /* as it ends, whichever it is (take copies it later) */
            runner__capacity_search_done(pl->c, i, ++pl->n_done, &pl->slots[i].res);
        return SS_OK;
    }
    return SS_OK; /* not one of ours */
}

/* Copy the stderr of the searches that ended, in order, up to the first still running, or the
 * first that needs the command: one that failed or is to be redone. */
static void show_ready(pool *pl)
{
    for (; pl->next_shown < pl->next; pl->next_shown++) {
        job *j = &pl->job[pl->next_shown];
        const slot *sl = &pl->slots[pl->next_shown];
        if (!j->ended || j->failed || sl->rc || sl->redo)
            return;
        fwrite(j->text, 1, j->n_text, stderr);
        j->shown = 1;
    }
}

/* Run the workers, at most pl->jobs at once, until every search wanted has ended. */
static int run_workers(pool *pl, ss_errbuf *eb)
{
    int rc = SS_OK;
    while (!rc && (pl->n_running || (pl->next < pl->n && !pl->stop))) {
        while (!rc && pl->n_running < pl->jobs && pl->next < pl->n && !pl->stop)
            rc = start(pl, eb);
        if (pl->n_running) {
            int r = reap(pl, eb);
            rc = rc ? rc : r;
        }
        show_ready(pl);
    }
    while (pl->n_running) { /* after an error: let the others end */
        ss_errbuf ignored;
        if (reap(pl, &ignored))
            break;
    }
    return rc;
}

/* Search i in its turn: its worker's stderr, database and results into the command, or the
 * search run here again (redo). 0 or its error with eb set. */
static int take(pool *pl, int i, ss_errbuf *eb)
{
    capacity *c = pl->c;
    job *j = &pl->job[i];
    const slot *sl = &pl->slots[i];
    if (j->failed)
        return ss_err(eb, SS_EIO, "capacity: the worker of %s's search ended abnormally",
                      c->label[i / c->n_seeds]);
    if (sl->redo) { /* here, in order: the database now holds what came before it */
        c->p = i / c->n_seeds;
        c->k = i % c->n_seeds;
        int rc = runner__capacity_search_one(c, eb);
        if (!rc)
            runner__capacity_search_done(c, i, ++pl->n_done, &c->res[i]);
        return rc;
    }
    if (!j->shown)
        fwrite(j->text, 1, j->n_text, stderr);
    c->res[i] = sl->res;
    memcpy(c->best_search[i], sl->best_search, sizeof c->best_search[i]);
    c->n_reused += sl->n_reused;
    c->n_rerun += sl->n_rerun;
    char path[sizeof pl->dir + 32];
    job_db(pl, i, path, sizeof path);
    int rc = SS_OK;
    if (c->st && access(path, F_OK) == 0) {
        uint64_t copied, skipped;
        rc = store_merge(c->st, path, &copied, &skipped, eb);
    }
    if (!rc && sl->rc) {
        memcpy(eb->msg, sl->msg, sizeof eb->msg);
        rc = sl->rc;
    }
    return rc;
}

/* Free what the pool holds; remove the workers' databases and their folder. */
static void pool_fini(pool *pl)
{
    for (int i = 0; pl->job && i < pl->n; i++) {
        if (pl->job[i].err)
            fclose(pl->job[i].err);
        ss_free(pl->job[i].text);
        char path[sizeof pl->dir + 32];
        if (pl->dir[0]) {
            job_db(pl, i, path, sizeof path);
            store_remove(path);
        }
    }
    if (pl->dir[0])
        rmdir(pl->dir);
    ss_free(pl->job);
    if (pl->slots)
        munmap(pl->slots, (size_t)pl->n * sizeof *pl->slots);
}

int runner__capacity_parallel(capacity *c, int jobs, ss_errbuf *eb)
{
    pool pl = {.c = c, .n = c->o->n_policies * c->n_seeds, .jobs = jobs};
    void *mem = mmap(NULL, (size_t)pl.n * sizeof *pl.slots, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pl.slots = mem == MAP_FAILED ? NULL : mem;
    pl.job = ss_calloc((size_t)pl.n, sizeof *pl.job);
    if (!pl.slots || !pl.job) {
        pool_fini(&pl);
        return ss_err(eb, SS_ENOMEM, "out of memory");
    }
    const char *tmp = getenv("TMPDIR");
    if (c->st) { /* a private folder: mkdtemp fills in the template's last six characters */
        snprintf(pl.dir, sizeof pl.dir, "%s/slicesim-capacity-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(pl.dir)) {
            int e = errno;
            pl.dir[0] = '\0';
            pool_fini(&pl);
            return ss_err(eb, SS_EIO, "capacity: a folder for the workers' databases: %s",
                          strerror(e));
        }
    }
    int rc = run_workers(&pl, eb);
    for (int i = 0; !rc && i < pl.n; i++)
        rc = take(&pl, i, eb);
    pool_fini(&pl);
    return rc;
}
