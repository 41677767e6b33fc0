/* Running a sweep: each point's scenario (the file, [set], the grid keys), the points in this
 * process or in worker processes that each write their own database (merged at the end), the
 * shard's report from the database. Not for the experiment file (sweep_exp.c) or options
 * (app/cmd_sweep.c, which also describes the file). */
#include "runner/sweep.h"

#include "runner/bundle.h"

#include "core/ss_alloc.h"
#include "core/ss_parse.h"
#include "core/ss_strbuf.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- points ----------------------------------------------------------------------------- */

/* Value index of key k at point p (the first key varies slowest). */
static int value_at(const runner_sweep_exp *x, size_t p, int k)
{
    size_t stride = 1;
    for (int i = x->n_keys - 1; i > k; i--)
        stride *= (size_t)x->keys[i].n;
    return (int)((p / stride) % (size_t)x->keys[k].n);
}

/* Point p's value of key k as results name it: a policy bundle by its label (in label). */
static const char *point_value(const runner_sweep_exp *x, size_t p, int k,
                               char label[RUNNER_LABEL_MAX])
{
    const char *v = x->keys[k].values[value_at(x, p, k)];
    ss_errbuf eb;
    if (!strcmp(x->keys[k].name, "policy") && !runner_bundle_label(v, label, &eb))
        return label;
    return v;
}

static void point_key(const runner_sweep_exp *x, size_t p, char *out, size_t size)
{
    size_t n = 0;
    out[0] = 0;
    for (int k = 0; k < x->n_keys; k++) {
        char label[RUNNER_LABEL_MAX];
        const char *v = point_value(x, p, k, label);
        int w = snprintf(out + n, size - n, "%s%s=%s", k ? ";" : "", x->keys[k].name, v);
        if (w < 0 || (size_t)w >= size - n)
            break;
        n += (size_t)w;
    }
}

/* Point p's bundle label (runs.bundle) into label; NULL when the grid has no policy key. */
static const char *point_bundle(const runner_sweep_exp *x, size_t p,
                                char label[RUNNER_LABEL_MAX])
{
    for (int k = 0; k < x->n_keys; k++)
        if (!strcmp(x->keys[k].name, "policy"))
            return point_value(x, p, k, label);
    return NULL;
}

/* Point p's load multiplier: its `rate`, 1 when the grid has none. */
static double point_load(const runner_sweep_exp *x, size_t p)
{
    double rate = 1;
    for (int k = 0; k < x->n_keys; k++)
        if (!strcmp(x->keys[k].name, "rate") &&
            ss_parse_doublez(x->keys[k].values[value_at(x, p, k)], &rate))
            rate = 1;
    return rate;
}

/* The scenario of point p: the file, [set], then the grid keys in order. */
static int build_point(const runner_sweep_exp *x, size_t p, scn_scenario **out, ss_errbuf *eb)
{
    scn_scenario *sc = NULL;
    int rc = scn_create(&sc) ? ss_err(eb, SS_ENOMEM, "out of memory") : SS_OK;
    if (!rc && (rc = scn_load(sc, x->scenario, eb)) == SS_EIO)
        rc = SS_EPARSE;
    if (rc && rc != SS_ENOMEM)
        ss_err_prefix(eb, rc, "%s: sweep.scenario", x->path);
    char where[SCN_PATH_MAX + 32];
    for (int i = 0; !rc && i < x->n_sets; i++) {
        snprintf(where, sizeof where, "%s:%u: set", x->path, x->set_line[i]);
        rc = scn_set_from(sc, x->set[i], where, eb);
    }
    double rate = 1;
    for (int k = 0; !rc && k < x->n_keys; k++) {
        const runner_sweep_key *g = &x->keys[k];
        const char *v = g->values[value_at(x, p, k)];
        snprintf(where, sizeof where, "%s:%u: grid", x->path, g->line);
        if (!strcmp(g->name, "policy")) {
            rc = runner_bundle_apply(sc, v, where, eb);
        } else if (!strcmp(g->name, "rate")) {
            if (ss_parse_doublez(v, &rate))
                rc = ss_err(eb, SS_EPARSE, "expected a number > 0, got '%s'", v);
            else if (!(rate > 0) || rate > 1e6)
                rc = ss_err(eb, SS_EPARSE, "out of range (0, 1e6], got '%s'", v);
        } else {
            char a[RUNNER_SWEEP_KEY_MAX + SCN_PATH_MAX];
            snprintf(a, sizeof a, "%s=%s", g->name, v);
            if ((rc = scn_set_from(sc, a, where, eb)))
                break; /* the message starts "FILE:LINE: grid: KEY" */
        }
        if (rc)
            ss_err_prefix(eb, rc, "%s:%u: grid.%s", x->path, g->line, g->name);
    }
    if (!rc && (rc = runner_scale_load(sc, rate, eb)) != SS_OK)
        ss_err_prefix(eb, rc, "%s", x->path);
    if (!rc && (rc = scn_check(sc, eb)) != SS_OK)
        ss_err_prefix(eb, rc, "%s", x->path);
    if (rc)
        scn_destroy(&sc);
    *out = sc;
    return rc;
}

/* ---- running ---------------------------------------------------------------------------- */

/* The line on stderr before point i of n (a worker runs first, first + step, ...): its share
 * done so far and its time left are this process's. */
static void progress_line(size_t i, size_t n, size_t first, size_t step, double t0,
                          const char *key)
{
    long done = (long)((i - first) / step), total = (long)((n - first + step - 1) / step);
    char how[96];
    runner_progress_text(how, sizeof how, done, total, runner_wall_now() - t0, " done");
    fprintf(stderr, "slicesim: sweep: point %zu of %zu (%s): %s\n", i + 1, n, how, key);
}

/* Run the points pending[first], pending[first + step], ... into db, skipping any the database
 * gained meanwhile. */
static int run_points(const runner_sweep_exp *x, const runner_sweep_opts *o,
                      const size_t *pending, size_t n_pending, size_t first, size_t step,
                      const char *db, ss_errbuf *eb)
{
    store *st = NULL;
    int rc = store_open(&st, db, eb);
    double t0 = runner_wall_now();
    for (size_t i = first; !rc && i < n_pending; i += step) {
        char key[1024];
        point_key(x, pending[i], key, sizeof key);
        int has = store_has_point(st, x->name, key, NULL, eb);
        if (has < 0) {
            rc = has;
            break;
        }
        if (has) /* another process, or an earlier run, did it meanwhile */
            continue;
        if (o->progress && isatty(STDERR_FILENO))
            progress_line(i, n_pending, first, step, t0, key);
        scn_scenario *sc = NULL;
        char label[RUNNER_LABEL_MAX];
        runner_run_opts ro = {.profiles = o->profiles, .config = x->scenario,
                              .command = o->command ? o->command : "", .sweep = x->name,
                              .point = key, .load = point_load(x, pending[i]),
                              .progress = o->progress, .st = st, .arrivals_checked = 1,
                              .bundle = point_bundle(x, pending[i], label), .keep = o->keep};
        runner_run r = {0};
        rc = build_point(x, pending[i], &sc, &r.eb);
        if (!rc)
            rc = runner_run_setup(&r, sc, &ro);
        if (!rc)
            rc = runner_run_exec(&r);
        if (rc) {
            ss_err_prefix(&r.eb, rc, "%s", key);
            *eb = r.eb;
        }
        runner_run_fini(&r);
        scn_destroy(&sc);
    }
    store_close(&st);
    return rc;
}

/* Worker j's database: DB.jobJ. A run is one transaction from start to commit, so workers
 * sharing one database would take turns; each writes its own and the parent merges them. */
static void job_db(const char *db, int j, char *out, size_t size)
{
    snprintf(out, size, "%s.job%d", db, j + 1);
}

/* Merge what workers left in DB.job1 .. DB.job64 (RUNNER_SWEEP_MAX_JOBS; also after an
 * interrupted sweep) into db and remove them (with their WAL files). */
static int collect_jobs(const char *db, ss_errbuf *eb)
{
    store *st = NULL;
    int rc = SS_OK;
    for (int j = 0; !rc && j < RUNNER_SWEEP_MAX_JOBS; j++) {
        char path[SCN_PATH_MAX + 64];
        job_db(db, j, path, sizeof path);
        if (access(path, F_OK) != 0)
            continue;
        if (!st && (rc = store_open(&st, db, eb)))
            break;
        uint64_t copied, skipped;
        rc = store_merge(st, path, &copied, &skipped, eb);
        if (!rc)
            store_remove(path);
    }
    store_close(&st);
    return rc;
}

/* A worker's exit status, all its parent needs of its error (the message is on stderr): 0,
 * WORKER_EINPUT for bad input, WORKER_EFAIL for a failed run. */
enum { WORKER_OK = 0, WORKER_EFAIL = 1, WORKER_EINPUT = 2 };

static int worker_status(int rc)
{
    if (!rc)
        return WORKER_OK;
    return rc == SS_EPARSE || rc == SS_EINVAL || rc == SS_ENOTFOUND ? WORKER_EINPUT
                                                                    : WORKER_EFAIL;
}

/* Fork `jobs` workers over the list, worker j into DB.jobJ, then merge. 0 when every worker
 * succeeded, else an SS_E* code with eb naming the failure (what finished is kept). */
static int run_parallel(const runner_sweep_exp *x, const runner_sweep_opts *o,
                        const size_t *pending, size_t n_pending, const char *db, ss_errbuf *eb)
{
    pid_t pid[RUNNER_SWEEP_MAX_JOBS];
    int n = o->jobs < RUNNER_SWEEP_MAX_JOBS ? o->jobs : RUNNER_SWEEP_MAX_JOBS;
    fflush(NULL);
    for (int j = 0; j < n; j++) {
        pid[j] = fork();
        if (pid[j] < 0) {
            for (int k = 0; k < j; k++)
                kill(pid[k], SIGTERM);
            return ss_err(eb, SS_EIO, "cannot start worker %d: %s", j + 1, strerror(errno));
        }
        if (pid[j] == 0) {
            ss_errbuf web = {""};
            char path[SCN_PATH_MAX + 64];
            job_db(db, j, path, sizeof path);
            int rc = run_points(x, o, pending, n_pending, (size_t)j, (size_t)n, path, &web);
            if (rc)
                fprintf(stderr, "slicesim: sweep: worker %d: %s\n", j + 1, web.msg);
            fflush(NULL);
            _exit(worker_status(rc));
        }
    }
    int worst = 0;
    for (int j = 0; j < n; j++) {
        int status = 0;
        while (waitpid(pid[j], &status, 0) < 0 && errno == EINTR)
            ;
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : WORKER_EFAIL;
        if (code > worst)
            worst = code;
    }
    int rc = collect_jobs(db, eb);
    if (rc)
        return rc;
    if (!worst)
        return SS_OK;
    return ss_err(eb, worst == WORKER_EINPUT ? SS_EPARSE : SS_EIO,
                  "a worker failed (its message is above)");
}

/* ---- output ----------------------------------------------------------------------------- */

static void print_point_json(FILE *f, const runner_sweep_exp *x, size_t p, const char *json,
                             int64_t run_id, int last)
{
    fprintf(f, "  {\"point\": {");
    for (int k = 0; k < x->n_keys; k++) {
        char label[RUNNER_LABEL_MAX];
        const char *v = point_value(x, p, k, label);
        fprintf(f, "%s\"%s\": ", k ? ", " : "", x->keys[k].name);
        ss_json_fputs(f, v);
    }
    fprintf(f, "}, \"run_id\": %" PRId64 ", ", run_id);
    const char *body = json ? strchr(json, '{') : NULL;
    size_t len = body ? strlen(body) : 0;
    while (len && (body[len - 1] == '\n' || body[len - 1] == '}'))
        len--; /* drop the closing brace: the object continues */
    if (body && len > 1)
        fprintf(f, "%.*s}%s\n", (int)(len - 1), body + 1, last ? "" : ",");
    else
        fprintf(f, "\"missing\": true}%s\n", last ? "" : ",");
}

/* The shard's points as a table or JSON, from the database. */
static int report(FILE *f, const runner_sweep_exp *x, const runner_sweep_opts *o,
                  const size_t *pts, size_t n, const char *db, ss_errbuf *eb)
{
    store *st = NULL;
    int rc = store_open(&st, db, eb);
    if (rc)
        return rc;
    if (o->json)
        fprintf(f, "[\n");
    else
        fprintf(f, "slicesim sweep %s: %zu of %zu points (%s)\n  %-44s %10s %10s %8s %9s %9s "
                   "%9s\n",
                x->name, n, x->n_points, db, "point", "out tok/s", "goodput", "SLA miss",
                "TTFT p99", "TBT p99", "E2E p99");
    for (size_t i = 0; !rc && i < n; i++) {
        char key[1024];
        point_key(x, pts[i], key, sizeof key);
        store_point_row row;
        int has = store_point_summary(st, x->name, key, &row, eb);
        if (has < 0) {
            rc = has;
            break;
        }
        if (o->json)
            print_point_json(f, x, pts[i], has ? row.result_json : NULL, has ? row.run_id : 0,
                             i + 1 == n);
        else if (has)
            fprintf(f, "  %-44s %10.1f %10.1f %7.1f%% %9.0f %9.1f %9.0f\n", key,
                    row.output_tokens_per_s, row.goodput_tokens_per_s,
                    100 * row.sla_violation_rate, row.ttft_p99_ms, row.tbt_p99_ms,
                    row.e2e_p99_ms);
        else
            fprintf(f, "  %-44s %10s\n", key, "(not run)");
        if (has)
            store_point_row_free(&row);
    }
    if (o->json)
        fprintf(f, "]\n");
    store_close(&st);
    return rc;
}


/* ---- the sweep -------------------------------------------------------------------------- */

/* Every point must build (scenario, models, fit on the cluster, policy parameters, arrivals
 * within the simulated time range) before anything runs, so that a bad grid value stores
 * nothing; the caller checks the files once the first point has. */
static int check_points(const runner_sweep_exp *x, const runner_sweep_opts *o,
                        const size_t *pts, size_t n_pts, const char *db, ss_errbuf *eb)
{
    runner_run_opts check_opts = {.profiles = o->profiles, .config = x->scenario};
    int rc = SS_OK;
    for (size_t i = 0; !rc && i < n_pts; i++) {
        scn_scenario *sc = NULL;
        rc = build_point(x, pts[i], &sc, eb);
        if (!rc && (rc = runner_run_check(sc, &check_opts, eb))) {
            char key[1024];
            point_key(x, pts[i], key, sizeof key);
            ss_err_prefix(eb, rc, "%s", key);
        }
        if (!rc && i == 0 && o->check_files)
            rc = o->check_files(o->check_files_ud, sc, db, eb);
        scn_destroy(&sc);
    }
    return rc;
}

/* The shard's points that db does not have yet, into pending (after merging what the workers
 * of an interrupted parallel sweep finished). */
static int find_pending(const runner_sweep_exp *x, const size_t *pts, size_t n_pts,
                        const char *db, size_t *pending, size_t *n_pending, ss_errbuf *eb)
{
    int rc = collect_jobs(db, eb);
    store *st = NULL;
    if (!rc)
        rc = store_open(&st, db, eb);
    for (size_t i = 0; !rc && i < n_pts; i++) {
        char key[1024];
        point_key(x, pts[i], key, sizeof key);
        int has = store_has_point(st, x->name, key, NULL, eb);
        if (has < 0)
            rc = has;
        else if (!has)
            pending[(*n_pending)++] = pts[i];
    }
    store_close(&st);
    return rc;
}

/* Check, find what is to do, say so, run it, report. */
static int sweep_shard(const runner_sweep_exp *x, const runner_sweep_opts *o, const char *db,
                       int quiet, size_t *pts, size_t *pending, FILE *out, ss_errbuf *eb)
{
    size_t n_pts = 0, n_pending = 0;
    for (size_t p = 0; p < x->n_points; p++)
        if (p % (size_t)o->shard_n == (size_t)(o->shard_k - 1))
            pts[n_pts++] = p;
    int rc = check_points(x, o, pts, n_pts, db, eb);
    if (!rc)
        rc = find_pending(x, pts, n_pts, db, pending, &n_pending, eb);
    if (!rc && !o->json)
        fprintf(stderr, "slicesim: sweep %s: %zu points in this shard, %zu already in %s, %zu "
                        "to run\n", x->name, n_pts, n_pts - n_pending, db, n_pending);
    if (!rc && o->mpi_size > 1 && !quiet && !o->json)
        fprintf(stderr, "slicesim: sweep %s: rank 1 of %d; merge the ranks' databases with "
                        "`slicesim db merge OUT.db %s ... %s.rank%d`\n", x->name, o->mpi_size,
                db, o->db ? o->db : x->db, o->mpi_size);
    if (!rc && !o->dry_run && n_pending)
        rc = o->jobs > 1 ? run_parallel(x, o, pending, n_pending, db, eb)
                         : run_points(x, o, pending, n_pending, 0, 1, db, eb);
    if (!rc && !quiet)
        rc = report(out, x, o, pts, n_pts, db, eb);
    return rc;
}

int runner_sweep(const runner_sweep_exp *x, const runner_sweep_opts *o_in, FILE *out,
                 ss_errbuf *eb)
{
    runner_sweep_opts o = *o_in;
    const char *db = o.db ? o.db : x->db;
    char rank_db[SCN_PATH_MAX + 16];
    int quiet = 0;
    if (o.mpi) {
        if (o.shard_n > 1)
            return ss_err(eb, SS_EPARSE, "--shard and mpirun both split the grid: use one");
        o.shard_k = o.mpi_rank + 1, o.shard_n = o.mpi_size;
        snprintf(rank_db, sizeof rank_db, "%s.rank%d", db, o.mpi_rank + 1);
        db = rank_db;
        quiet = o.mpi_rank > 0; /* every rank writes its own database; rank 1 prints */
    }
    size_t *pts = ss_calloc(x->n_points, sizeof *pts);
    size_t *pending = ss_calloc(x->n_points, sizeof *pending);
    int rc = pts && pending ? sweep_shard(x, &o, db, quiet, pts, pending, out, eb)
                            : ss_err(eb, SS_ENOMEM, "out of memory");
    ss_free(pts);
    ss_free(pending);
    return rc;
}
