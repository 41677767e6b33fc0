/* `slicesim sweep EXPERIMENT.ini`: a grid over scenario keys, policy bundles and loads, run
 * point by point into one results database. Points already in the database are skipped, so
 * an interrupted sweep resumes; --jobs runs points in parallel processes, --shard k/N runs one
 * slice of the grid (for job arrays), `mpirun -n N slicesim sweep` runs rank r's slice into
 * DB.rankR, and `slicesim db merge` joins the shards' databases.
 *
 * The experiment file (INI):
 *   [sweep]  name (default: the file's base name), scenario (required; relative to this
 *            file's folder), db (default results/NAME.db; relative to the current directory)
 *   [set]    SECTION.KEY = VALUE applied to every point (after the scenario file)
 *   [grid]   KEY = V1, V2, ...: `policy` (bundles, see compare), `rate` (multiplies every
 *            tenant's rate_scale), or any scenario key SECTION.KEY. The first key varies
 *            slowest; a point's key in the database is "K1=V1;K2=V2;...". */
#include "app/cli.h"

#include "runner/bundle.h"
#include "runner/report.h"
#include "runner/run.h"
#include "runner/sweep.h"

#include "core/ss_alloc.h"
#include "core/ss_parse.h"

#include "config.h"

#if HAVE_MPI
#include <mpi.h>
#endif

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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
    if (!rc) {
        runner_scale_rates(sc, rate);
        if ((rc = scn_check(sc, eb)))
            ss_err_prefix(eb, rc, "%s", x->path);
    }
    if (rc)
        scn_destroy(&sc);
    *out = sc;
    return rc;
}

/* The experiment file, the scenario and its traces are inputs, the database the output: none
 * may be another. */
static int sweep_files(const runner_sweep_exp *x, const char *db, const scn_scenario *sc,
                       ss_errbuf *eb)
{
    cli_files files = {0};
    int rc = cli_files_add(&files, "the experiment file", x->path, 0, eb);
    if (!rc)
        rc = cli_scenario_files(&files, sc, db, eb);
    cli_files_fini(&files);
    return rc;
}

/* ---- running ---------------------------------------------------------------------------- */

typedef struct sweep_opts {
    const char *file, *db, *profiles;
    char *command;            /* the command line, for the runs table (owned) */
    int jobs, shard_k, shard_n, json, progress, dry_run;
} sweep_opts;

/* Run the points pending[first], pending[first + step], ... into db, skipping any the database
 * gained meanwhile. */
static int run_points(const runner_sweep_exp *x, const sweep_opts *o, const size_t *pending,
                      size_t n_pending, size_t first, size_t step, const char *db,
                      ss_errbuf *eb)
{
    store *st = NULL;
    int rc = store_open(&st, db, eb);
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
            fprintf(stderr, "slicesim: sweep: [%zu/%zu] %s\n", i + 1, n_pending, key);
        scn_scenario *sc = NULL;
        runner_run_opts ro = {.profiles = o->profiles, .config = x->scenario,
                              .command = o->command ? o->command : "", .sweep = x->name,
                              .point = key, .load = point_load(x, pending[i]),
                              .progress = o->progress, .st = st, .arrivals_checked = 1};
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

/* Merge what workers left in DB.job1 .. DB.job64 (also after an interrupted sweep) into db
 * and remove them (with their WAL files). */
static int collect_jobs(const char *db, ss_errbuf *eb)
{
    store *st = NULL;
    int rc = SS_OK;
    for (int j = 0; !rc && j < 64; j++) {
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

/* Fork `jobs` workers over the list, worker j into DB.jobJ, then merge. 0 when every worker
 * succeeded, else an SS_E* code with eb naming the failure (what finished is kept). */
static int run_parallel(const runner_sweep_exp *x, const sweep_opts *o, const size_t *pending,
                        size_t n_pending, const char *db, ss_errbuf *eb)
{
    pid_t pid[64];
    int n = o->jobs < 64 ? o->jobs : 64;
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
            _exit(cli_status_of(rc));
        }
    }
    int worst = 0;
    for (int j = 0; j < n; j++) {
        int status = 0;
        while (waitpid(pid[j], &status, 0) < 0 && errno == EINTR)
            ;
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : CLI_EFAIL;
        if (code > worst)
            worst = code;
    }
    int rc = collect_jobs(db, eb);
    if (rc)
        return rc;
    if (!worst)
        return SS_OK;
    return ss_err(eb, worst == CLI_EUSAGE ? SS_EPARSE : SS_EIO,
                  "a worker failed (its message is above)");
}

/* ---- output ----------------------------------------------------------------------------- */

static void print_point_json(const runner_sweep_exp *x, size_t p, const char *json,
                             int64_t run_id, int last)
{
    printf("  {\"point\": {");
    for (int k = 0; k < x->n_keys; k++) {
        char label[RUNNER_LABEL_MAX];
        const char *v = point_value(x, p, k, label);
        printf("%s\"%s\": ", k ? ", " : "", x->keys[k].name);
        ss_json_fputs(stdout, v);
    }
    printf("}, \"run_id\": %" PRId64 ", ", run_id);
    const char *body = json ? strchr(json, '{') : NULL;
    size_t len = body ? strlen(body) : 0;
    while (len && (body[len - 1] == '\n' || body[len - 1] == '}'))
        len--; /* drop the closing brace: the object continues */
    if (body && len > 1)
        printf("%.*s}%s\n", (int)(len - 1), body + 1, last ? "" : ",");
    else
        printf("\"missing\": true}%s\n", last ? "" : ",");
}

/* The shard's points as a table or JSON, from the database. */
static int report(const runner_sweep_exp *x, const sweep_opts *o, const size_t *pts, size_t n,
                  const char *db, ss_errbuf *eb)
{
    store *st = NULL;
    int rc = store_open(&st, db, eb);
    if (rc)
        return rc;
    if (o->json)
        printf("[\n");
    else
        printf("slicesim sweep %s: %zu of %zu points (%s)\n  %-44s %10s %10s %8s %9s %9s %9s\n",
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
            print_point_json(x, pts[i], has ? row.result_json : NULL, has ? row.run_id : 0,
                             i + 1 == n);
        else if (has)
            printf("  %-44s %10.1f %10.1f %7.1f%% %9.0f %9.1f %9.0f\n", key,
                   row.output_tokens_per_s, row.goodput_tokens_per_s,
                   100 * row.sla_violation_rate, row.ttft_p99_ms, row.tbt_p99_ms, row.e2e_p99_ms);
        else
            printf("  %-44s %10s\n", key, "(not run)");
        if (has)
            store_point_row_free(&row);
    }
    if (o->json)
        printf("]\n");
    store_close(&st);
    return rc;
}

/* ---- MPI -------------------------------------------------------------------------------- */

/* Under mpirun (Open MPI's or a PMI launcher's environment): this process's rank and the
 * number of ranks; 0 when not launched by mpirun. With MPI built in, MPI itself says (and
 * *inited is set: MPI_Finalize is due); without, the launcher's environment does. */
static int mpi_world(int *rank, int *size, int *inited)
{
    const char *sz = getenv("OMPI_COMM_WORLD_SIZE");
    const char *rk = getenv("OMPI_COMM_WORLD_RANK");
    if (!sz) {
        sz = getenv("PMI_SIZE");
        rk = getenv("PMI_RANK");
    }
    *inited = 0;
    if (!sz || !rk)
        return 0;
#if HAVE_MPI
    if (MPI_Init(NULL, NULL) != MPI_SUCCESS)
        return 0;
    *inited = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
#else
    *rank = atoi(rk);
    *size = atoi(sz);
#endif
    return *size >= 1 && *rank >= 0 && *rank < *size;
}

/* ---- the command ------------------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f,
        "usage: slicesim sweep EXPERIMENT.ini [--jobs N] [--shard K/N] [--db FILE] [--json]\n"
        "\n"
        "Run every point of an experiment's grid (scenario keys, policy bundles, loads) into one\n"
        "results database. Points the database already has are skipped: an interrupted sweep\n"
        "picks up where it stopped. Then print one line per point (or --json).\n"
        "\n"
        "EXPERIMENT.ini:\n"
        "  [sweep]  scenario = FILE (relative to the experiment's folder; required),\n"
        "           name = NAME (default: the file's base name), db = FILE (default\n"
        "           results/NAME.db)\n"
        "  [set]    SECTION.KEY = VALUE for every point\n"
        "  [grid]   KEY = V1, V2, ...   where KEY is policy (bundles: %s,\n"
        "           or LABEL:SECTION.KEY=VALUE+...), rate (multiplies every tenant's\n"
        "           rate_scale) or any scenario key (run.seed, tenant.chat.tiers, ...)\n"
        "\n"
        "  --jobs N        run points in N parallel processes (default 1)\n"
        "  --shard K/N     run only points i with i %% N = K - 1 (for job arrays; merge the\n"
        "                  databases with `slicesim db merge`)\n"
        "  mpirun -n N slicesim sweep ...  rank r runs shard r+1/N into DB.rank<r+1>\n"
        "                  (%s)\n"
        "  --db FILE       results database (overrides the experiment's)\n"
        "  --json          print a JSON array: per point {point: {KEY: VALUE}, run_id, and what\n"
        "                  `replay --json` prints}\n"
        "  --dry-run       list the points and whether they are done; run nothing\n"
        "  --profiles DIR  catalog directory\n"
        "  --no-progress   no progress lines on a terminal\n"
        "  -h, --help      this help\n"
        "\n"
        "Exit status: 0 success, 1 a run failed (I/O, database), 2 bad input or usage.\n",
        runner_bundle_names(),
        HAVE_MPI ? "built with MPI" : "not built with MPI: the launcher's environment says");
}

static int usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "slicesim: sweep: %s%s%s\n", msg, arg ? arg : "", arg ? "'" : "");
    return CLI_EUSAGE;
}

enum { O_JOBS = 256, O_SHARD, O_DB, O_JSON, O_PROFILES, O_NOPROG, O_DRY };

static int parse_opts(sweep_opts *o, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"jobs", required_argument, NULL, O_JOBS},     {"shard", required_argument, NULL, O_SHARD},
        {"db", required_argument, NULL, O_DB},         {"json", no_argument, NULL, O_JSON},
        {"profiles", required_argument, NULL, O_PROFILES},
        {"no-progress", no_argument, NULL, O_NOPROG},  {"dry-run", no_argument, NULL, O_DRY},
        {"help", no_argument, NULL, 'h'},              {NULL, 0, NULL, 0},
    };
    opterr = 0;
    optind = 1;
    if (cli_check_long_options("sweep", argc, argv, ":h", longopts))
        return CLI_EUSAGE;
    for (int c; (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1;) {
        int64_t v;
        switch (c) {
        case 'h': usage(stdout); return -1;
        case O_JOBS:
            if (ss_parse_i64z(optarg, &v) || v < 1 || v > 64)
                return usage_error("--jobs: expected 1 to 64, got '", optarg);
            o->jobs = (int)v;
            break;
        case O_SHARD: {
            int k, n, end = 0;
            if (sscanf(optarg, "%d/%d%n", &k, &n, &end) != 2 || optarg[end] || n < 1 ||
                n > 100000 || k < 1 || k > n)
                return usage_error("--shard: expected K/N with 1 <= K <= N, got '", optarg);
            o->shard_k = k, o->shard_n = n;
            break;
        }
        case O_DB: o->db = optarg; break;
        case O_JSON: o->json = 1; break;
        case O_PROFILES: o->profiles = optarg; break;
        case O_NOPROG: o->progress = 0; break;
        case O_DRY: o->dry_run = 1; break;
        case ':': return usage_error("option needs an argument: '", argv[optind - 1]);
        default: return usage_error("unknown option '", argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        return usage_error("expected one EXPERIMENT.ini (see --help)", NULL);
    o->file = argv[optind];
    return CLI_OK;
}

int cmd_sweep(int argc, char **argv)
{
    sweep_opts o = {.jobs = 1, .shard_k = 1, .shard_n = 1, .progress = 1};
    /* the command line as given, before getopt permutes argv */
    if (!(o.command = cli_join_args(argc, argv))) {
        fprintf(stderr, "slicesim: sweep: out of memory\n");
        return CLI_EFAIL;
    }
    int rc = parse_opts(&o, argc, argv);
    if (rc) {
        ss_free(o.command);
        return rc < 0 ? CLI_OK : rc;
    }
    runner_sweep_exp x = {0};
    ss_errbuf eb = {""};
    size_t *pts = NULL, *pending = NULL, n_pts = 0, n_pending = 0;
    int rank = 0, size = 1, inited = 0, quiet = 0;
    rc = runner_sweep_exp_load(&x, o.file, &eb);
    const char *db = o.db ? o.db : x.db;
    char rank_db[SCN_PATH_MAX + 16];
    if (!rc && mpi_world(&rank, &size, &inited)) {
        if (o.shard_n > 1)
            rc = ss_err(&eb, SS_EPARSE, "--shard and mpirun both split the grid: use one");
        o.shard_k = rank + 1, o.shard_n = size;
        snprintf(rank_db, sizeof rank_db, "%s.rank%d", db, rank + 1);
        db = rank_db;
        quiet = rank > 0; /* every rank writes its own database; rank 1 prints */
    }
    if (!rc && (!(pts = ss_calloc(x.n_points, sizeof *pts)) ||
                !(pending = ss_calloc(x.n_points, sizeof *pending))))
        rc = ss_err(&eb, SS_ENOMEM, "out of memory");
    for (size_t p = 0; !rc && p < x.n_points; p++)
        if (p % (size_t)o.shard_n == (size_t)(o.shard_k - 1))
            pts[n_pts++] = p;
    /* every point must build (scenario, models, fit on the cluster, policy parameters,
     * arrivals within the simulated time range) before anything runs, so that a bad grid
     * value stores nothing */
    runner_run_opts check_opts = {.profiles = o.profiles, .config = x.scenario};
    for (size_t i = 0; !rc && i < n_pts; i++) {
        scn_scenario *sc = NULL;
        rc = build_point(&x, pts[i], &sc, &eb);
        if (!rc && (rc = runner_run_check(sc, &check_opts, &eb))) {
            char key[1024];
            point_key(&x, pts[i], key, sizeof key);
            ss_err_prefix(&eb, rc, "%s", key);
        }
        if (!rc && i == 0)
            rc = sweep_files(&x, db, sc, &eb);
        scn_destroy(&sc);
    }
    if (!rc)
        rc = collect_jobs(db, &eb); /* an interrupted parallel sweep's finished runs */
    store *st = NULL;
    if (!rc)
        rc = store_open(&st, db, &eb);
    for (size_t i = 0; !rc && i < n_pts; i++) {
        char key[1024];
        point_key(&x, pts[i], key, sizeof key);
        int has = store_has_point(st, x.name, key, NULL, &eb);
        if (has < 0)
            rc = has;
        else if (!has)
            pending[n_pending++] = pts[i];
    }
    store_close(&st);
    if (!rc && !o.json)
        fprintf(stderr, "slicesim: sweep %s: %zu points in this shard, %zu already in %s, %zu "
                        "to run\n", x.name, n_pts, n_pts - n_pending, db, n_pending);
    if (!rc && size > 1 && !quiet && !o.json)
        fprintf(stderr, "slicesim: sweep %s: rank 1 of %d; merge the ranks' databases with "
                        "`slicesim db merge OUT.db %s ... %s.rank%d`\n", x.name, size, db,
                o.db ? o.db : x.db, size);
    if (!rc && !o.dry_run && n_pending)
        rc = o.jobs > 1 ? run_parallel(&x, &o, pending, n_pending, db, &eb)
                        : run_points(&x, &o, pending, n_pending, 0, 1, db, &eb);
    if (!rc && !quiet)
        rc = report(&x, &o, pts, n_pts, db, &eb);
    if (rc && size > 1)
        fprintf(stderr, "slicesim: sweep: rank %d: %s\n", rank + 1, eb.msg);
    else if (rc)
        fprintf(stderr, "slicesim: sweep: %s\n", eb.msg);
#if HAVE_MPI
    if (inited)
        MPI_Finalize();
#else
    (void)inited;
#endif
    ss_free(pts);
    ss_free(pending);
    ss_free(o.command);
    runner_sweep_exp_free(&x);
    return cli_status_of(rc);
}
