/* `slicesim fit DIR`: calibrate a serving-engine profile against measured serving runs (a
 * directory of runs.csv, stages.csv and traces, like $SLICESIM_DATA/serving/...): replay every
 * run in process under a candidate engine, compare each stage's client-side TTFT, ITL and E2E
 * with the measured ones (as bench/fidelity.sh), and minimise the mean relative error over the
 * stages a server really served with Nelder-Mead on the chosen engine terms; then print the
 * comparison and write the fitted profile. Not for reading the data (fit_data.c). */
#include "app/cli.h"
#include "app/fit.h"
#include "app/run.h"

#include "catalog/catalog.h"
#include "cost/cost.h"
#include "core/ss_alloc.h"
#include "core/ss_file.h"
#include "core/ss_nm.h"
#include "core/ss_parse.h"
#include "core/ss_strbuf.h"
#include "store/store.h"
#include "version.h"

#include <getopt.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <errno.h>
#include <sys/wait.h>
#include <unistd.h>

/* {======================================================================
 * The fittable engine terms: one line each
 * ======================================================================= */

/* A term of cat_engine that fit can calibrate: a double >= lo set in SI units from the
 * profile's unit. [host] terms are set in e->host; a fitted engine has no [gpu.NAME]
 * sections, so they hold on every GPU. */
typedef struct fit_term {
    const char *key;  /* the profile key, as --fit names it */
    size_t off;       /* offsetof the double in cat_engine */
    double scale;     /* profile unit to SI (1e-6 for *_us) */
    double step;      /* first simplex step, profile units (at least; 20 % of the start if
                         larger) */
    double lo;        /* lower bound, profile units (0 for a term >= 0; above 0 for one the
                         profile requires > 0, such as a speed or an efficiency) */
} fit_term;

#define TERM(key_, field, scale_, step_, lo_)                                                  \
    {.key = key_, .off = offsetof(cat_engine, field), .scale = scale_, .step = step_, .lo = lo_}

static const fit_term fit_terms[] = {
    TERM("iter_fixed_us", host.iter_fixed_s, 1e-6, 500, 0),
    TERM("iter_per_seq_us", host.iter_per_seq_s, 1e-6, 10, 0),
    TERM("iter_per_token_us", host.iter_per_token_s, 1e-6, 0.5, 0),
    TERM("op_floor_us", host.op_floor_s, 1e-6, 2, 0),
    TERM("hop_latency_us", allreduce_hop_s, 1e-6, 5, 0),
    TERM("frontend_ms", frontend_s, 1e-3, 5, 0),
    TERM("attn_speed", attn_speed, 1, 0.1, 0.05),
    TERM("launch_us", host.launch_s, 1e-6, 5, 0),
};
#define N_TERMS (sizeof fit_terms / sizeof *fit_terms)
#define DEFAULT_FIT                                                                              \
    "iter_fixed_us,iter_per_seq_us,iter_per_token_us,op_floor_us,hop_latency_us,frontend_ms,"   \
    "attn_speed"

static double term_get(const cat_engine *e, const fit_term *t)
{
    double x;
    memcpy(&x, (const char *)e + t->off, sizeof x);
    return x / t->scale;
}

static void term_set(cat_engine *e, const fit_term *t, double v)
{
    double x = v * t->scale; /* as the profile reader computes it */
    memcpy((char *)e + t->off, &x, sizeof x);
}

/* }====================================================================== */

/* {======================================================================
 * Options
 * ======================================================================= */

typedef struct fit_opts {
    const char *dir, *engine, *profiles, *name, *out, *fit, *runs, *write_stages, *db;
    const char *overlap, *allreduce;
    const char *cost;         /* cost backend of the replays (NULL: the scenario default) */
    const char *description;  /* of the fitted engine (NULL: "START fitted by slicesim fit to
                                 DIR") */
    long iterations;
    long jobs;                /* replays at once (processes); 0: the online CPUs */
    double served_ms;
    int evaluate, json, progress, check;
    size_t term[N_TERMS];     /* indexes into fit_terms of the fitted terms, in --fit order */
    size_t n_term;
} fit_opts;

static void usage(FILE *f)
{
    fprintf(f,
        "usage: slicesim fit DIR [OPTIONS]\n"
        "\n"
        "Calibrate a serving-engine profile against measured serving runs. DIR holds runs.csv\n"
        "(one row per run: run, catalog_model, gpu, tp, max_num_seqs, max_num_batched_tokens,\n"
        "max_model_len, gpu_memory_utilization, output_len, trace, trace_stage_starts), the\n"
        "traces it names (native format, paths relative to DIR) and stages.csv (run, stage,\n"
        "ttft_mean_ms, ttft_p90_ms, e2e_mean_ms, e2e_p90_ms; itl_ms and rate optional; an\n"
        "empty value = not measured), as $SLICESIM_DATA/serving/vllm-0.15-h100-blis does.\n"
        "Every run is replayed as bench/fidelity.sh does (one replica, its TP, sarathi batching\n"
        "with max_num_batched_tokens as the token budget, seed 1, prefix caching auto); per\n"
        "stage (requests arriving from its trace_stage_starts entry to the next) the TTFT mean\n"
        "and p90, ITL = (E2E mean - TTFT mean) / (output_len - 1) and E2E mean and p90 of the\n"
        "completed requests are compared with stages.csv. The objective is the mean of\n"
        "|ln(sim / real)| (the relative error when small, the log of a runaway's ratio) over\n"
        "those five metrics and the fitted stages: those whose real TTFT mean is below\n"
        "--served-ms (the others, overloaded, are shown, not fitted).\n"
        "Nelder-Mead minimises it over the --fit terms (each >= 0; fitted values are rounded to\n"
        "6 significant digits), the others keep the start engine's values. The fitted profile\n"
        "has no [gpu.NAME] sections: its [host] terms start from the start engine's for the\n"
        "GPU of the first run and hold on every GPU.\n"
        "\n"
        "  --engine NAME        engine to start from, or to evaluate (default "
        CAT_ENGINE_DEFAULT ")\n"
        "  --profiles DIR       catalog directory (default: ./profiles or the source tree's)\n"
        "  --name NAME          name of the fitted engine (default fitted)\n"
        "  --description TEXT   its description (default: START fitted by slicesim fit to DIR)\n"
        "  --jobs N             replay up to N runs at once, each in its own process (default:\n"
        "                       the online CPUs); the results do not depend on N\n"
        "  --cost NAME          cost model of the replays: roofline (default) | profile | auto\n"
        "                       (operator tables measured by slicesim calibrate: fit then only\n"
        "                       the engine's own terms on top, e.g. --fit iter_fixed_us,...)\n"
        "  -o, --out FILE       fitted profile to write (default NAME.ini here)\n"
        "  --fit KEYS           comma list of terms to fit (default\n"
        "                       " DEFAULT_FIT ")\n"
        "  --overlap MODE       serial | max: the fitted engine's overlap (default: the start's)\n"
        "  --allreduce ALG      ring | twoshot: its all-reduce (default: the start's)\n"
        "  --iterations N       Nelder-Mead iterations at most (default 200); it also stops\n"
        "                       when the simplex's objectives differ by less than 1e-6\n"
        "  --runs A,B,...       only these runs\n"
        "  --served-ms X        fit stages whose real TTFT mean is below X ms (default 1000)\n"
        "  --evaluate           no fit: replay under --engine and print the comparison\n"
        "  --write-stages FILE  the final engine's simulated stages as a stages.csv (an\n"
        "                       --evaluate of an engine on a stages.csv of run and stage with\n"
        "                       empty values makes the data for a known engine)\n"
        "  --db FILE            store the fit and its stages (tables fits, fit_stages)\n"
        "  --json               one JSON object instead of the table\n"
        "  --check              verify the simulator's invariants after every event (slow)\n"
        "  --no-progress        no progress line on a terminal\n"
        "  -h, --help           this help\n"
        "\n"
        "Exit status: 0 success, 1 a failure (I/O, database), 2 bad input or usage (each error\n"
        "one line: FILE:LINE: field: what).\n");
}

enum { OPT_ENGINE = 256, OPT_PROFILES, OPT_NAME, OPT_FIT, OPT_OVERLAP, OPT_ALLREDUCE,
       OPT_ITER, OPT_RUNS, OPT_SERVED, OPT_EVAL, OPT_WSTAGES, OPT_DB, OPT_JSON, OPT_CHECK,
       OPT_NOPROG, OPT_DESC, OPT_COST, OPT_JOBS };

static const struct option long_opts[] = {
    {"engine", required_argument, NULL, OPT_ENGINE},
    {"profiles", required_argument, NULL, OPT_PROFILES},
    {"name", required_argument, NULL, OPT_NAME},
    {"description", required_argument, NULL, OPT_DESC},
    {"cost", required_argument, NULL, OPT_COST},
    {"jobs", required_argument, NULL, OPT_JOBS},
    {"out", required_argument, NULL, 'o'},
    {"fit", required_argument, NULL, OPT_FIT},
    {"overlap", required_argument, NULL, OPT_OVERLAP},
    {"allreduce", required_argument, NULL, OPT_ALLREDUCE},
    {"iterations", required_argument, NULL, OPT_ITER},
    {"runs", required_argument, NULL, OPT_RUNS},
    {"served-ms", required_argument, NULL, OPT_SERVED},
    {"evaluate", no_argument, NULL, OPT_EVAL},
    {"write-stages", required_argument, NULL, OPT_WSTAGES},
    {"db", required_argument, NULL, OPT_DB},
    {"json", no_argument, NULL, OPT_JSON},
    {"check", no_argument, NULL, OPT_CHECK},
    {"no-progress", no_argument, NULL, OPT_NOPROG},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int usage_error(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "slicesim: fit: ");
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    return CLI_EUSAGE;
}

/* --fit KEYS into o->term: each a fittable term, once. */
static int parse_fit_keys(fit_opts *o)
{
    const char *p = o->fit;
    o->n_term = 0;
    while (*p) {
        size_t len = strcspn(p, ","), k = 0;
        while (k < N_TERMS && (strlen(fit_terms[k].key) != len ||
                               strncmp(fit_terms[k].key, p, len)))
            k++;
        char key[64];
        snprintf(key, sizeof key, "%.*s", (int)(len < 60 ? len : 60), p);
        if (k == N_TERMS)
            return usage_error("--fit: unknown engine term '%s' (fittable: %s)", key,
                               DEFAULT_FIT);
        for (size_t i = 0; i < o->n_term; i++)
            if (o->term[i] == k)
                return usage_error("--fit: '%s' given twice%s", key, "");
        o->term[o->n_term++] = k;
        p += len + (p[len] == ',');
    }
    if (!o->n_term)
        return usage_error("--fit: expected a comma list of engine terms, got '%s'%s", o->fit,
                           "");
    return CLI_OK;
}

static int parse_value(fit_opts *o, int c, const char *arg)
{
    switch (c) {
    case OPT_ITER: return cli_parse_long("--iterations", arg, 1, 1000000, &o->iterations);
    case OPT_JOBS: return cli_parse_long("--jobs", arg, 1, 1024, &o->jobs);
    case OPT_SERVED:
        if (ss_parse_doublez(arg, &o->served_ms) || !(o->served_ms > 0))
            return usage_error("--served-ms: expected a number > 0, got '%s'%s", arg, "");
        return CLI_OK;
    case OPT_OVERLAP:
        if (strcmp(arg, "serial") && strcmp(arg, "max"))
            return usage_error("--overlap: expected serial or max, got '%s'%s", arg, "");
        o->overlap = arg;
        return CLI_OK;
    case OPT_ALLREDUCE:
        if (strcmp(arg, "ring") && strcmp(arg, "twoshot"))
            return usage_error("--allreduce: expected ring or twoshot, got '%s'%s", arg, "");
        o->allreduce = arg;
        return CLI_OK;
    default: return CLI_EUSAGE;
    }
}

static int parse_one(fit_opts *o, int c, const char *arg)
{
    switch (c) {
    case OPT_ENGINE: o->engine = arg; return CLI_OK;
    case OPT_PROFILES: o->profiles = arg; return CLI_OK;
    case OPT_NAME: o->name = arg; return CLI_OK;
    case OPT_DESC:
        if (!*arg || strlen(arg) >= sizeof ((cat_engine *)0)->description || strchr(arg, '\n'))
            return usage_error("--description: '%.60s' is not one line of 1-127 characters%s",
                               arg, "");
        o->description = arg;
        return CLI_OK;
    case 'o': o->out = arg; return CLI_OK;
    case OPT_FIT: o->fit = arg; return CLI_OK;
    case OPT_RUNS: o->runs = arg; return CLI_OK;
    case OPT_EVAL: o->evaluate = 1; return CLI_OK;
    case OPT_WSTAGES: o->write_stages = arg; return CLI_OK;
    case OPT_DB: o->db = arg; return CLI_OK;
    case OPT_JSON: o->json = 1; return CLI_OK;
    case OPT_CHECK: o->check = APP_CHECK_ON; return CLI_OK;
    case OPT_COST: {
        char known[128];
        cost_backend_list(known, sizeof known);
        if (!cost_find(arg))
            return usage_error("--cost: unknown cost model '%.60s' (known: %s)", arg, known);
        o->cost = arg;
        return CLI_OK;
    }
    case OPT_NOPROG: o->progress = 0; return CLI_OK;
    default: return parse_value(o, c, arg);
    }
}

/* What the options say together: a fit name, its file, the terms. */
static int finish_opts(fit_opts *o, char *out_buf, size_t out_size)
{
    for (const char *p = o->name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || strchr("._-", *p)))
            return usage_error("--name: '%s' is not an engine name of 1-47 characters from "
                               "[a-z0-9._-]%s", o->name, "");
    if (!*o->name || strlen(o->name) >= CAT_NAME_MAX)
        return usage_error("--name: '%s' is not an engine name of 1-47 characters from "
                           "[a-z0-9._-]%s", o->name, "");
    if (o->evaluate && o->out)
        return usage_error("-o: --evaluate fits nothing and writes no profile%s%s", "", "");
    if (!o->out) {
        snprintf(out_buf, out_size, "%s.ini", o->name);
        o->out = out_buf;
    }
    return o->evaluate ? CLI_OK : parse_fit_keys(o);
}

static int parse_opts(fit_opts *o, int argc, char **argv, char *out_buf, size_t out_size)
{
    optind = 1;
    opterr = 0;
    if (cli_check_long_options("fit", argc, argv, "ho:", long_opts))
        return CLI_EUSAGE;
    int c;
    while ((c = getopt_long(argc, argv, "ho:", long_opts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return -1;
        }
        if (c == '?')
            return usage_error("unknown or incomplete option '%s' (see --help)%s",
                               argv[optind - 1], "");
        int rc = parse_one(o, c, optarg);
        if (rc)
            return rc;
    }
    if (optind >= argc)
        return usage_error("expected the directory of measured runs (see --help)%s%s", "", "");
    o->dir = argv[optind++];
    if (optind < argc)
        return usage_error("unexpected argument '%s' (see --help)%s", argv[optind], "");
    return finish_opts(o, out_buf, out_size);
}

/* }====================================================================== */

/* {======================================================================
 * Evaluating an engine
 * ======================================================================= */

typedef struct fit_ctx {
    const fit_opts *o;
    fit_data d;
    fit_replay_opts ro;
    const cat_engine *start;  /* &start_copy */
    cat_engine start_copy;    /* the start engine as the catalog had it: the replays put each
                                 candidate into that catalog, which may move or replace it */
    cat_engine cand;          /* the engine under test */
    double x0[N_TERMS];       /* the fitted terms at the start, profile units */
    double wall0;
    int progress_shown;
    ss_outfile *prof_out, *stages_out; /* opened before the replays, committed at the end */
    FILE *prof_f, *stages_f;
    ss_errbuf eb;
} fit_ctx;

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The stages of run i: [*first, *first + *n) of d->stages (sorted by run). */
static void run_stages(const fit_data *d, size_t i, size_t *first, size_t *n)
{
    size_t a = 0;
    while (a < d->n_stages && d->stages[a].run != i)
        a++;
    size_t b = a;
    while (b < d->n_stages && d->stages[b].run == i)
        b++;
    *first = a;
    *n = b - a;
}

/* What a replay child sends back: its status and message, then each stage's figures. */
typedef struct child_head {
    int rc;
    char msg[SS_ERRBUF_LEN];
} child_head;

typedef struct child_stage {
    double sim[FIT_METRICS];
    uint64_t completed;
} child_stage;

static int write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int read_all(int fd, void *buf, size_t n)
{
    char *p = buf;
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* In a child: replay run i and send the result down fd; never returns. */
static void child_replay(fit_ctx *x, size_t i, int fd)
{
    child_head h = {0};
    h.rc = fit_replay_run(&x->d, i, &x->cand, &x->ro, &x->eb);
    if (h.rc)
        memcpy(h.msg, x->eb.msg, sizeof h.msg);
    int bad = write_all(fd, &h, sizeof h);
    size_t first, n;
    run_stages(&x->d, i, &first, &n);
    for (size_t k = 0; !bad && !h.rc && k < n; k++) {
        const fit_stage *s = &x->d.stages[first + k];
        child_stage c = {.completed = s->completed};
        memcpy(c.sim, s->sim, sizeof c.sim);
        bad = write_all(fd, &c, sizeof c);
    }
    _exit(bad ? 1 : 0); /* no stdio flush, no atexit: the parent owns the outputs */
}

/* In the parent: take child pid's result for run i from fd. */
static int collect_child(fit_ctx *x, size_t i, pid_t pid, int fd, int *rc_run)
{
    child_head h;
    int bad = read_all(fd, &h, sizeof h);
    size_t first, n;
    run_stages(&x->d, i, &first, &n);
    for (size_t k = 0; !bad && !h.rc && k < n; k++) {
        child_stage c;
        if ((bad = read_all(fd, &c, sizeof c)))
            break;
        fit_stage *s = &x->d.stages[first + k];
        memcpy(s->sim, c.sim, sizeof s->sim);
        s->completed = c.completed;
    }
    close(fd);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (bad || !WIFEXITED(status) || WEXITSTATUS(status))
        return ss_err(&x->eb, SS_EIO, "replaying run '%s': its process failed",
                      x->d.runs[i].name);
    *rc_run = h.rc;
    if (h.rc)
        memcpy(x->eb.msg, h.msg, sizeof x->eb.msg);
    return SS_OK;
}

/* Whether replay_all replays run r: it has stages, and fitted ones unless all are wanted. */
static int wanted(const fit_run *r, int all)
{
    return r->n_stages && (all || r->n_fitted);
}

/* A replay running in a child process. */
typedef struct child {
    size_t run;
    pid_t pid;
    int fd;                   /* the read end of its pipe */
} child;

/* Start a child that replays run i. */
static int start_child(fit_ctx *x, size_t i, child *c)
{
    int p[2];
    if (pipe(p))
        return ss_err(&x->eb, SS_EIO, "replays: pipe: %s", strerror(errno));
    c->run = i;
    c->pid = fork();
    if (c->pid < 0) {
        close(p[0]);
        close(p[1]);
        return ss_err(&x->eb, SS_EIO, "replays: fork: %s", strerror(errno));
    }
    if (c->pid == 0) {
        close(p[0]);
        child_replay(x, i, p[1]);
    }
    close(p[1]);
    c->fd = p[0];
    return SS_OK;
}

/* Collect kids[0..m), all of them; the error kept is rc (a child that could not start), else
 * the first child's in runs.csv order. */
static int collect_batch(fit_ctx *x, const child *kids, size_t m, int rc)
{
    char first_msg[SS_ERRBUF_LEN];
    memcpy(first_msg, x->eb.msg, sizeof first_msg);
    for (size_t k = 0; k < m; k++) {
        int rc_run = SS_OK;
        int got = collect_child(x, kids[k].run, kids[k].pid, kids[k].fd, &rc_run);
        if (!got)
            got = rc_run;
        if (got && !rc) {
            rc = got;
            memcpy(first_msg, x->eb.msg, sizeof first_msg);
        }
    }
    memcpy(x->eb.msg, first_msg, sizeof first_msg);
    return rc;
}

/* Replay every run (all = 1) or only those with fitted stages under x->cand: one at a time in
 * this process, or up to --jobs at once, each in a child process (the runs are independent,
 * so the figures are the same either way; the first failing run in runs.csv order is
 * reported). */
static int replay_all(fit_ctx *x, int all)
{
    size_t n = 0, jobs = x->o->jobs > 1 ? (size_t)x->o->jobs : 1;
    for (size_t i = 0; i < x->d.n_runs; i++)
        n += (size_t)wanted(&x->d.runs[i], all);
    if (jobs == 1 || n <= 1) {
        for (size_t i = 0; i < x->d.n_runs; i++) {
            int rc = wanted(&x->d.runs[i], all)
                         ? fit_replay_run(&x->d, i, &x->cand, &x->ro, &x->eb) : SS_OK;
            if (rc)
                return rc;
        }
        return SS_OK;
    }
    jobs = jobs < n ? jobs : n;
    child *kids = ss_malloc(jobs * sizeof *kids);
    if (!kids)
        return ss_err(&x->eb, SS_ENOMEM, "out of memory");
    fflush(NULL); /* nothing buffered is written twice */
    int rc = SS_OK;
    for (size_t i = 0; !rc && i < x->d.n_runs;) {
        size_t m = 0;
        for (; !rc && i < x->d.n_runs && m < jobs; i++)
            if (wanted(&x->d.runs[i], all) && !(rc = start_child(x, i, &kids[m])))
                m++;
        rc = collect_batch(x, kids, m, rc);
    }
    ss_free(kids);
    return rc;
}

/* A stage's mean error over the metrics measured, each |ln(sim / real)|: the relative error
 * for small errors (0.05 for 5 %), symmetric in too fast and too slow, and growing only with
 * the logarithm of a runaway (121 ms served, 9.4 s simulated: 4.35), so that one stage near
 * saturation cannot outweigh the rest and pull every coefficient towards zero. A metric the
 * replay could not give (no completed request) counts as 10. */
static double stage_error(const fit_stage *s)
{
    double sum = 0;
    int n = 0;
    for (int m = 0; m < FIT_METRICS; m++) {
        double real = s->real[m];
        if (!(real > 0) || !isfinite(real))
            continue;
        sum += isfinite(s->sim[m]) && s->sim[m] > 0 ? fabs(log(s->sim[m] / real)) : 10.0;
        n++;
    }
    return n ? sum / n : 0;
}

static size_t n_fitted(const fit_data *d)
{
    size_t n = 0;
    for (size_t i = 0; i < d->n_stages; i++)
        n += (size_t)d->stages[i].fitted;
    return n;
}

/* The objective: stage_error averaged over the fitted stages (NaN when there are none). */
static double objective(const fit_data *d)
{
    double sum = 0;
    for (size_t i = 0; i < d->n_stages; i++)
        if (d->stages[i].fitted)
            sum += stage_error(&d->stages[i]);
    size_t n = n_fitted(d);
    return n ? sum / (double)n : NAN;
}

static void set_terms(fit_ctx *x, const double *v)
{
    for (size_t i = 0; i < x->o->n_term; i++)
        term_set(&x->cand, &fit_terms[x->o->term[i]], v[i]);
}

static int nm_objective(void *ud, const double *v, double *f_out)
{
    fit_ctx *x = ud;
    set_terms(x, v);
    int rc = replay_all(x, 0);
    *f_out = rc ? NAN : objective(&x->d);
    return rc;
}

static void nm_progress(void *ud, size_t iterations, size_t evaluations, double f_best)
{
    fit_ctx *x = ud;
    if (!x->o->progress || !isatty(STDERR_FILENO))
        return;
    x->progress_shown = 1;
    fprintf(stderr, "\rslicesim: fit: iteration %zu/%ld | %zu evaluations | objective %.6f | "
                    "%.0f s   ", iterations, x->o->iterations, evaluations, f_best,
            wall_now() - x->wall0);
    fflush(stderr);
}

/* Six significant digits, so that the profile reads as people write numbers and the figures
 * printed are those of the profile written. */
static double round6(double v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%.6g", v);
    return strtod(buf, NULL);
}

/* Nelder-Mead over the fitted terms from x->x0; leaves x->cand at the rounded optimum. */
static int run_fit(fit_ctx *x, ss_nm_result *res)
{
    double v[N_TERMS], step[N_TERMS], lo[N_TERMS];
    for (size_t i = 0; i < x->o->n_term; i++) {
        const fit_term *t = &fit_terms[x->o->term[i]];
        v[i] = x->x0[i];
        step[i] = fmax(t->step, 0.2 * fabs(v[i]));
        lo[i] = fmin(t->lo, v[i]); /* a start below the bound stays allowed */
    }
    ss_nm_opts no = {.max_iter = (size_t)x->o->iterations, .ftol = 1e-6, .max_restarts = 2,
                     .progress = nm_progress, .progress_ud = x};
    int rc = ss_nm_minimize(res, v, x->o->n_term, step, lo, nm_objective, x, &no);
    if (x->progress_shown)
        fprintf(stderr, "\r%*s\r", 100, "");
    if (rc && !x->eb.msg[0]) /* the optimiser's own error, not a replay's */
        return ss_err(&x->eb, rc, "the optimiser failed: %s", ss_strerror(rc));
    if (rc)
        return rc;
    for (size_t i = 0; i < x->o->n_term; i++)
        v[i] = round6(v[i]);
    set_terms(x, v);
    return SS_OK;
}

/* }====================================================================== */

/* {======================================================================
 * The start
 * ======================================================================= */

/* 1 when the start engine's host terms differ between the GPUs of the runs: the fitted engine
 * holds one set for all. */
static int host_terms_differ(const fit_ctx *x)
{
    const cat_engine_host *h0 = cat_engine_host_for(x->start, x->d.runs[0].gpu);
    for (size_t i = 1; i < x->d.n_runs; i++)
        if (memcmp(cat_engine_host_for(x->start, x->d.runs[i].gpu), h0, sizeof *h0))
            return 1;
    return 0;
}

/* The engine replayed first. --evaluate: the start engine as it is. A fit: the start engine
 * with its host terms for the first run's GPU as [host] and no [gpu.NAME] sections, named
 * --name. Both with --overlap and --allreduce applied. */
static void make_candidate(fit_ctx *x)
{
    const fit_opts *o = x->o;
    x->cand = *x->start;
    x->cand.path = NULL;
    if (!o->evaluate) {
        if (host_terms_differ(x))
            fprintf(stderr, "slicesim: fit: note: %s's host terms differ between the runs' "
                    "GPUs; the fitted engine starts from those of %s for all\n",
                    x->start->name, x->d.runs[0].gpu);
        x->cand.host = *cat_engine_host_for(x->start, x->d.runs[0].gpu);
        x->cand.n_gpus = 0;
        memset(x->cand.per_gpu, 0, sizeof x->cand.per_gpu);
        memset(x->cand.name, 0, sizeof x->cand.name);
        memcpy(x->cand.name, o->name, strlen(o->name));
        if (o->description)
            snprintf(x->cand.description, sizeof x->cand.description, "%s", o->description);
        else
            snprintf(x->cand.description, sizeof x->cand.description,
                     "%s fitted by slicesim fit to %s", x->start->name, o->dir);
    }
    if (o->overlap) {
        snprintf(x->cand.overlap_name, sizeof x->cand.overlap_name, "%s", o->overlap);
        x->cand.overlap = strcmp(o->overlap, "max") ? CAT_OVERLAP_SERIAL : CAT_OVERLAP_MAX;
    }
    if (o->allreduce) {
        snprintf(x->cand.allreduce_name, sizeof x->cand.allreduce_name, "%s", o->allreduce);
        x->cand.allreduce = strcmp(o->allreduce, "twoshot") ? CAT_ALLREDUCE_RING
                                                            : CAT_ALLREDUCE_TWOSHOT;
    }
    for (size_t i = 0; i < o->n_term; i++)
        x->x0[i] = term_get(&x->cand, &fit_terms[o->term[i]]);
}

/* Every input and output, so that no output overwrites an input or another output. */
static int check_files(fit_ctx *x)
{
    const fit_opts *o = x->o;
    cli_files fs = {0};
    int rc = cli_files_add(&fs, "runs.csv", x->d.runs_path, 0, &x->eb);
    if (!rc)
        rc = cli_files_add(&fs, "stages.csv", x->d.stages_path, 0, &x->eb);
    for (size_t i = 0; !rc && i < x->d.n_runs; i++)
        rc = cli_files_add(&fs, "a trace", x->d.runs[i].trace, 0, &x->eb);
    if (!rc && !o->evaluate)
        rc = cli_files_add(&fs, "the profile (-o)", o->out, 1, &x->eb);
    if (!rc)
        rc = cli_files_add(&fs, "--write-stages", o->write_stages, 1, &x->eb);
    if (!rc)
        rc = cli_files_add(&fs, "--db", o->db, 1, &x->eb);
    cli_files_fini(&fs);
    return rc;
}

/* }====================================================================== */

/* {======================================================================
 * Summaries
 * ======================================================================= */

typedef struct metric_sum {
    double mape, bias, median; /* %, over the fitted stages with the metric measured */
    size_t n;
} metric_sum;

typedef struct fit_result {
    metric_sum m[FIT_METRICS];
    double objective;
    size_t n_fitted, runaway;
    ss_nm_result nm;           /* zero for --evaluate */
    double wall_s;
} fit_result;

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* (sim - real) / real of metric m over the fitted stages, as fidelity.sh sums them. */
static void summarize_metric(const fit_data *d, int m, double *errs, metric_sum *out)
{
    size_t n = 0;
    double abs_sum = 0, sum = 0;
    for (size_t i = 0; i < d->n_stages; i++) {
        const fit_stage *s = &d->stages[i];
        if (!s->fitted || !(s->real[m] > 0) || !isfinite(s->real[m]) || !isfinite(s->sim[m]))
            continue;
        double e = (s->sim[m] - s->real[m]) / s->real[m];
        abs_sum += fabs(e);
        sum += e;
        errs[n++] = e;
    }
    qsort(errs, n, sizeof *errs, cmp_dbl);
    *out = (metric_sum){.n = n, .mape = n ? 100 * abs_sum / (double)n : NAN,
                        .bias = n ? 100 * sum / (double)n : NAN,
                        .median = 100 * fit_pct(errs, n, 50)};
}

static int summarize(const fit_ctx *x, fit_result *r, ss_errbuf *eb)
{
    double *errs = ss_malloc((x->d.n_stages + 1) * sizeof *errs);
    if (!errs)
        return ss_err(eb, SS_ENOMEM, "out of memory");
    for (int m = 0; m < FIT_METRICS; m++)
        summarize_metric(&x->d, m, errs, &r->m[m]);
    ss_free(errs);
    r->objective = objective(&x->d);
    r->n_fitted = n_fitted(&x->d);
    r->runaway = 0;
    for (size_t i = 0; i < x->d.n_stages; i++) {
        const fit_stage *s = &x->d.stages[i];
        r->runaway += s->fitted && s->real[FIT_TTFT] < 1000 && !(s->sim[FIT_TTFT] <= 1000);
    }
    return SS_OK;
}

/* }====================================================================== */

/* {======================================================================
 * Output: table, JSON, profile, stages.csv, database
 * ======================================================================= */

static void print_cell(FILE *f, double real, double sim, int w)
{
    char a[32] = "-", b[32] = "-", cell[72];
    if (isfinite(real))
        snprintf(a, sizeof a, "%.1f", real);
    if (isfinite(sim))
        snprintf(b, sizeof b, "%.1f", sim);
    snprintf(cell, sizeof cell, "%s / %s", a, b);
    fprintf(f, " %*s", w, cell);
}

static void print_stages(FILE *f, const fit_data *d)
{
    static const int w[FIT_METRICS] = {17, 17, 15, 19, 19};
    fprintf(f, "  %-38s %2s %5s  %17s %17s %15s %19s %19s  %s\n", "run", "st", "rate",
            "TTFT mean ms", "TTFT p90 ms", "ITL ms", "E2E mean ms", "E2E p90 ms", "fitted");
    fprintf(f, "  %-38s %2s %5s  %17s %17s %15s %19s %19s\n", "", "", "", "real / sim",
            "real / sim", "real / sim", "real / sim", "real / sim");
    for (size_t i = 0; i < d->n_stages; i++) {
        const fit_stage *s = &d->stages[i];
        fprintf(f, "  %-38s %2u %5s ", d->runs[s->run].name, s->k, *s->rate ? s->rate : "-");
        for (int m = 0; m < FIT_METRICS; m++)
            print_cell(f, s->real[m], s->sim[m], w[m]);
        fprintf(f, "  %s\n", s->fitted ? "*" : "-");
    }
}

static void print_summary(FILE *f, const fit_ctx *x, const fit_result *r)
{
    fprintf(f, "  error over the %zu fitted stages (*: real TTFT mean < %g ms; the others "
               "are overloaded or not measured),\n  (simulated - real) / real; + = the "
               "simulation is slower:\n", r->n_fitted, x->o->served_ms);
    for (int m = 0; m < FIT_METRICS; m++)
        fprintf(f, "    %-9s MAPE %9.1f %%   bias %+9.1f %%   median error %+8.1f %%   (%zu "
                   "stages)\n", fit_metric_label[m], r->m[m].mape, r->m[m].bias,
                r->m[m].median, r->m[m].n);
    fprintf(f, "  objective (mean |ln(sim / real)| over the fitted stages and the 5 "
               "metrics): %.6f\n", r->objective);
    fprintf(f, "  fitted stages that run away (real TTFT mean < 1 s, simulated > 1 s): %zu",
            r->runaway);
    const char *sep = ": ";
    for (size_t i = 0; i < x->d.n_stages; i++) {
        const fit_stage *s = &x->d.stages[i];
        if (s->fitted && s->real[FIT_TTFT] < 1000 && !(s->sim[FIT_TTFT] <= 1000)) {
            fprintf(f, "%s%s stage %u", sep, x->d.runs[s->run].name, s->k);
            sep = ", ";
        }
    }
    fputc('\n', f);
}

static void print_terms(FILE *f, const fit_ctx *x, const fit_result *r)
{
    const fit_opts *o = x->o;
    if (o->evaluate) {
        fprintf(f, "  engine %s: %zu replays, %.1f s\n", x->cand.name, x->d.n_runs, r->wall_s);
        return;
    }
    fprintf(f, "  engine %s -> %s (overlap %s, allreduce %s), start -> fitted:\n",
            x->start->name, x->cand.name, x->cand.overlap_name, x->cand.allreduce_name);
    for (size_t i = 0; i < o->n_term; i++)
        fprintf(f, "    %-18s %12.6g -> %.6g\n", fit_terms[o->term[i]].key, x->x0[i],
                term_get(&x->cand, &fit_terms[o->term[i]]));
    fprintf(f, "  Nelder-Mead: %zu iterations, %zu evaluations, %u restarts, %s; %.1f s\n",
            r->nm.iterations, r->nm.evaluations, r->nm.restarts,
            r->nm.converged ? "converged" : "stopped at --iterations", r->wall_s);
    fprintf(f, "  profile: %s\n", o->out);
}

static void print_table(FILE *f, const fit_ctx *x, const fit_result *r)
{
    fprintf(f, "slicesim fit: %zu stages of %zu runs in %s; %s %s\n", x->d.n_stages,
            x->d.n_runs, x->o->dir, x->o->evaluate ? "evaluating engine" : "fitting from engine",
            x->start->name);
    print_stages(f, &x->d);
    print_summary(f, x, r);
    print_terms(f, x, r);
}

static void json_num(ss_strbuf *b, double v)
{
    if (isfinite(v))
        ss_strbuf_printf(b, "%.17g", v);
    else
        ss_strbuf_printf(b, "null");
}

/* {"key": {"start": x, "final": y, "fitted": true|false}, ...} over every fittable term. */
static void json_terms(ss_strbuf *b, const fit_ctx *x)
{
    ss_strbuf_printf(b, "{");
    for (size_t k = 0; k < N_TERMS; k++) {
        size_t i = 0;
        while (i < x->o->n_term && x->o->term[i] != k)
            i++;
        cat_engine s = x->cand;
        if (i < x->o->n_term)
            term_set(&s, &fit_terms[k], x->x0[i]);
        ss_strbuf_printf(b, "%s\"%s\": {\"start\": ", k ? ", " : "", fit_terms[k].key);
        json_num(b, term_get(&s, &fit_terms[k]));
        ss_strbuf_printf(b, ", \"final\": ");
        json_num(b, term_get(&x->cand, &fit_terms[k]));
        ss_strbuf_printf(b, ", \"fitted\": %s}", i < x->o->n_term ? "true" : "false");
    }
    ss_strbuf_printf(b, "}");
}

static void json_metrics(ss_strbuf *b, const double *v)
{
    ss_strbuf_printf(b, "{");
    for (int m = 0; m < FIT_METRICS; m++) {
        ss_strbuf_printf(b, "%s\"%s\": ", m ? ", " : "", fit_metric_col[m]);
        json_num(b, v[m]);
    }
    ss_strbuf_printf(b, "}");
}

static void json_stages(ss_strbuf *b, const fit_data *d)
{
    ss_strbuf_printf(b, "[");
    for (size_t i = 0; i < d->n_stages; i++) {
        const fit_stage *s = &d->stages[i];
        ss_strbuf_printf(b, "%s{\"run\": ", i ? ", " : "");
        ss_strbuf_json_str(b, d->runs[s->run].name);
        ss_strbuf_printf(b, ", \"stage\": %u, \"rate\": ", s->k);
        ss_strbuf_json_str(b, s->rate);
        ss_strbuf_printf(b, ", \"fitted\": %s, \"completed\": %llu, \"real\": ",
                         s->fitted ? "true" : "false", (unsigned long long)s->completed);
        json_metrics(b, s->real);
        ss_strbuf_printf(b, ", \"sim\": ");
        json_metrics(b, s->sim);
        ss_strbuf_printf(b, "}");
    }
    ss_strbuf_printf(b, "]");
}

static void json_summary(ss_strbuf *b, const fit_result *r)
{
    ss_strbuf_printf(b, "{");
    for (int m = 0; m < FIT_METRICS; m++) {
        ss_strbuf_printf(b, "%s\"%s\": {\"mape_pct\": ", m ? ", " : "", fit_metric_col[m]);
        json_num(b, r->m[m].mape);
        ss_strbuf_printf(b, ", \"bias_pct\": ");
        json_num(b, r->m[m].bias);
        ss_strbuf_printf(b, ", \"median_pct\": ");
        json_num(b, r->m[m].median);
        ss_strbuf_printf(b, ", \"stages\": %zu}", r->m[m].n);
    }
    ss_strbuf_printf(b, "}");
}

static void json_result(ss_strbuf *b, const fit_ctx *x, const fit_result *r)
{
    const fit_opts *o = x->o;
    ss_strbuf_printf(b, "{\"mode\": \"%s\", \"dir\": ", o->evaluate ? "evaluate" : "fit");
    ss_strbuf_json_str(b, o->dir);
    ss_strbuf_printf(b, ", \"start_engine\": ");
    ss_strbuf_json_str(b, x->start->name);
    ss_strbuf_printf(b, ", \"engine\": ");
    ss_strbuf_json_str(b, x->cand.name);
    ss_strbuf_printf(b, ", \"profile\": ");
    if (o->evaluate)
        ss_strbuf_printf(b, "null");
    else
        ss_strbuf_json_str(b, o->out);
    ss_strbuf_printf(b, ", \"overlap\": \"%s\", \"allreduce\": \"%s\", \"n_runs\": %zu, "
                        "\"n_stages\": %zu, \"n_fitted\": %zu, \"served_ms\": %.17g, "
                        "\"terms\": ", x->cand.overlap_name, x->cand.allreduce_name,
                     x->d.n_runs, x->d.n_stages, r->n_fitted, o->served_ms);
    json_terms(b, x);
    ss_strbuf_printf(b, ", \"objective\": ");
    json_num(b, r->objective);
    ss_strbuf_printf(b, ", \"metrics\": ");
    json_summary(b, r);
    ss_strbuf_printf(b, ", \"runaway\": %zu, \"iterations\": %zu, \"evaluations\": %zu, "
                        "\"converged\": %s, \"wall_s\": %.3f, \"stages\": ", r->runaway,
                     r->nm.iterations, r->nm.evaluations, r->nm.converged ? "true" : "false",
                     r->wall_s);
    json_stages(b, &x->d);
    ss_strbuf_printf(b, "}");
}

/* The profile's header comment: what it was fitted on and how well. Deterministic: no time. */
static void profile_header(ss_strbuf *b, const fit_ctx *x, const fit_result *r,
                           const char *command)
{
    const fit_opts *o = x->o;
    ss_strbuf_printf(b, "Engine profile fitted by `slicesim fit` (slicesim %s) to measured "
                        "serving runs:\n%s, runs: ", SS_VERSION, o->dir);
    for (size_t i = 0; i < x->d.n_runs; i++)
        ss_strbuf_printf(b, "%s%s", i ? ", " : "", x->d.runs[i].name);
    ss_strbuf_printf(b, "\n%zu stages, %zu fitted (real TTFT mean < %g ms). Started from %s "
                        "(its host terms for %s; no [gpu.NAME] sections: the [host] terms "
                        "hold on every GPU).\nFitted (start -> fitted): ", x->d.n_stages,
                     r->n_fitted, o->served_ms, x->start->name, x->d.runs[0].gpu);
    for (size_t i = 0; i < o->n_term; i++)
        ss_strbuf_printf(b, "%s%s %.6g -> %.6g", i ? ", " : "", fit_terms[o->term[i]].key,
                         x->x0[i], term_get(&x->cand, &fit_terms[o->term[i]]));
    ss_strbuf_printf(b, "; every other term is %s's.\nObjective (mean |ln(sim / real)| over "
                        "the fitted stages and TTFT mean, TTFT p90, ITL, E2E mean, E2E p90): "
                        "%.6f\nMAPE over the fitted stages:", x->start->name, r->objective);
    for (int m = 0; m < FIT_METRICS; m++)
        ss_strbuf_printf(b, "%s %s %.1f %%", m ? "," : "", fit_metric_label[m], r->m[m].mape);
    ss_strbuf_printf(b, "\nNelder-Mead: %zu iterations, %zu evaluations, %s.\nCommand: %s",
                     r->nm.iterations, r->nm.evaluations,
                     r->nm.converged ? "converged" : "stopped at --iterations", command);
}

static int write_profile(fit_ctx *x, const fit_result *r, const char *command)
{
    ss_strbuf h = {0};
    profile_header(&h, x, r, command);
    if (!ss_strbuf_ok(&h)) {
        ss_strbuf_fini(&h);
        return ss_err(&x->eb, SS_ENOMEM, "out of memory");
    }
    int rc = SS_OK;
    if (cat_engine_write(x->prof_f, &x->cand, ss_strbuf_str(&h)))
        rc = ss_err(&x->eb, SS_EIO, "%s: write error", x->o->out);
    if (!rc)
        rc = ss_outfile_commit(&x->prof_out, &x->eb);
    ss_strbuf_fini(&h);
    return rc;
}

static void csv_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, ",%.17g", v);
    else
        fputc(',', f);
}

/* The simulated stages as a stages.csv that fit reads back. */
static int write_stages(fit_ctx *x)
{
    FILE *f = x->stages_f;
    fprintf(f, "run,stage,rate,completed");
    for (int m = 0; m < FIT_METRICS; m++)
        fprintf(f, ",%s", fit_metric_col[m]);
    fputc('\n', f);
    for (size_t i = 0; i < x->d.n_stages; i++) {
        const fit_stage *s = &x->d.stages[i];
        fprintf(f, "%s,%u,%s,%llu", x->d.runs[s->run].name, s->k, s->rate,
                (unsigned long long)s->completed);
        for (int m = 0; m < FIT_METRICS; m++)
            csv_num(f, s->sim[m]);
        fputc('\n', f);
    }
    return ss_outfile_commit(&x->stages_out, &x->eb);
}

/* The fit and its stages in one transaction of the database --db. */
static int store_result(fit_ctx *x, const fit_result *r, const char *command)
{
    const fit_opts *o = x->o;
    ss_strbuf terms = {0}, pj = {0};
    for (size_t i = 0; i < o->n_term; i++)
        ss_strbuf_printf(&terms, "%s%s", i ? "," : "", fit_terms[o->term[i]].key);
    ss_strbuf_printf(&pj, "{\"overlap\": \"%s\", \"allreduce\": \"%s\", \"terms\": ",
                     x->cand.overlap_name, x->cand.allreduce_name);
    json_terms(&pj, x);
    ss_strbuf_printf(&pj, "}");
    store_fit f = {
        .command = command, .mode = o->evaluate ? "evaluate" : "fit", .dir = o->dir,
        .start_engine = x->start->name, .engine = x->cand.name,
        .terms = ss_strbuf_str(&terms), .params_json = ss_strbuf_str(&pj),
        .profile = o->evaluate ? NULL : o->out, .runs = (uint32_t)x->d.n_runs,
        .stages = (uint32_t)x->d.n_stages, .fitted_stages = (uint32_t)r->n_fitted,
        .served_ms = o->served_ms, .objective = r->objective, .runaway = (uint32_t)r->runaway,
        .iterations = r->nm.iterations, .evaluations = r->nm.evaluations,
        .converged = r->nm.converged, .wall_s = r->wall_s,
    };
    for (int m = 0; m < FIT_METRICS; m++)
        f.mape_pct[m] = r->m[m].mape;
    store *st = NULL;
    int rc = ss_strbuf_ok(&terms) && ss_strbuf_ok(&pj) ? SS_OK
                                                       : ss_err(&x->eb, SS_ENOMEM, "out of memory");
    if (!rc)
        rc = store_open(&st, o->db, &x->eb);
    if (!rc)
        rc = store_fit_begin(st, &f, NULL, &x->eb);
    for (size_t i = 0; !rc && i < x->d.n_stages; i++) {
        const fit_stage *s = &x->d.stages[i];
        store_fit_stage row = {.run = x->d.runs[s->run].name, .stage = s->k, .rate = NAN,
                               .fitted = s->fitted, .completed = s->completed};
        if (*s->rate)
            ss_parse_doublez(s->rate, &row.rate);
        memcpy(row.real, s->real, sizeof row.real);
        memcpy(row.sim, s->sim, sizeof row.sim);
        rc = store_fit_add_stage(st, &row, &x->eb);
    }
    if (!rc)
        rc = store_fit_commit(st, &x->eb);
    store_close(&st);
    ss_strbuf_fini(&terms);
    ss_strbuf_fini(&pj);
    return rc;
}

/* }====================================================================== */

/* {======================================================================
 * The command
 * ======================================================================= */

/* Open the files written at the end now (as FILE.tmp), so that an unwritable one fails before
 * a long fit rather than after it. */
static int open_outputs(fit_ctx *x)
{
    int rc = x->o->evaluate ? SS_OK
                            : ss_outfile_open(&x->prof_out, &x->prof_f, x->o->out, 0, &x->eb);
    if (!rc && x->o->write_stages)
        rc = ss_outfile_open(&x->stages_out, &x->stages_f, x->o->write_stages, 0, &x->eb);
    return rc;
}

/* Read, check, replay under the start engine (every run: the input is only known good once
 * each has replayed), fit, replay under the result. */
static int compute(fit_ctx *x, catalog *cat, fit_result *r)
{
    const fit_opts *o = x->o;
    const cat_engine *found = NULL;
    int rc = catalog_engine_find(cat, o->engine, &found, &x->eb);
    if (rc)
        ss_err_prefix(&x->eb, rc, "--engine");
    else {
        x->start_copy = *found;
        x->start_copy.path = NULL; /* the catalog frees it when a candidate replaces it */
        x->start = &x->start_copy;
    }
    if (!rc)
        rc = fit_data_read(&x->d, o->dir, cat, o->runs, o->served_ms, &x->eb);
    if (!rc)
        rc = check_files(x);
    if (!rc)
        rc = open_outputs(x);
    if (rc)
        return rc;
    make_candidate(x);
    if (!o->evaluate && !n_fitted(&x->d))
        return ss_err(&x->eb, SS_EINVAL, "%s: no stage to fit: none has a real TTFT mean below "
                      "%g ms (--served-ms)", x->d.stages_path, o->served_ms);
    rc = replay_all(x, 1);
    for (size_t i = 0; !rc && i < x->d.n_notes; i++) /* the input is good: say what was left */
        fprintf(stderr, "slicesim: fit: note: %s\n", x->d.notes[i]);
    if (!rc && !o->evaluate) {
        rc = run_fit(x, &r->nm);
        if (!rc)
            rc = replay_all(x, 1);
    }
    return rc ? rc : summarize(x, r, &x->eb);
}

/* Everything the result goes to. */
static int emit(fit_ctx *x, const fit_result *r, const char *command)
{
    const fit_opts *o = x->o;
    int rc = o->evaluate ? SS_OK : write_profile(x, r, command);
    if (!rc && o->write_stages)
        rc = write_stages(x);
    if (!rc && o->db)
        rc = store_result(x, r, command);
    if (rc)
        return rc;
    if (!o->json) {
        print_table(stdout, x, r);
        return SS_OK;
    }
    ss_strbuf b = {0};
    json_result(&b, x, r);
    if (!ss_strbuf_ok(&b))
        rc = ss_err(&x->eb, SS_ENOMEM, "out of memory");
    else
        printf("%s\n", ss_strbuf_str(&b));
    ss_strbuf_fini(&b);
    return rc;
}

int cmd_fit(int argc, char **argv)
{
    char out_buf[CAT_NAME_MAX + 8];
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    fit_opts o = {.engine = CAT_ENGINE_DEFAULT, .name = "fitted", .fit = DEFAULT_FIT,
                  .jobs = cpus > 0 ? cpus : 1,
                  .iterations = 200, .served_ms = 1000, .progress = 1, .check = APP_CHECK_OFF};
    char *command = cli_join_args(argc, argv); /* before getopt_long permutes argv */
    int rc = parse_opts(&o, argc, argv, out_buf, sizeof out_buf);
    if (rc) {
        ss_free(command);
        return rc < 0 ? CLI_OK : rc;
    }
    fit_ctx x = {.o = &o, .ro = {.profiles = o.profiles, .check = o.check, .cost = o.cost},
                 .wall0 = wall_now()};
    fit_result r = {0};
    catalog *cat = NULL;
    rc = command ? catalog_load(&cat, catalog_default_dir(o.profiles), &x.eb)
                 : ss_err(&x.eb, SS_ENOMEM, "out of memory");
    x.ro.catalog = cat; /* read once: profiles edited during a long fit do not change it */
    if (!rc)
        rc = compute(&x, cat, &r);
    r.wall_s = wall_now() - x.wall0;
    if (!rc)
        rc = emit(&x, &r, command);
    if (rc)
        fprintf(stderr, "slicesim: fit: %s\n", x.eb.msg);
    ss_outfile_abort(&x.prof_out); /* nothing is left of a failed run */
    ss_outfile_abort(&x.stages_out);
    fit_data_fini(&x.d);
    catalog_destroy(&cat);
    ss_free(command);
    return cli_status_of(rc);
}

/* }====================================================================== */
