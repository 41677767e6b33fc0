/* `slicesim fit DIR`: the options and --help of calibrating a serving-engine profile against
 * measured serving runs (calib/fit.h reads them, replays, fits and writes the result). */
#include "app/cli.h"

#include "calib/fit.h"
#include "runner/run.h"

#include "catalog/catalog.h"
#include "core/ss_alloc.h"
#include "core/ss_parse.h"
#include "cost/cost.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* {======================================================================
 * Options
 * ======================================================================= */

/* The options: what calib_fit takes, and --fit as given. */
typedef struct fit_opts {
    calib_fit_opts c;
    const char *fit;          /* --fit KEYS */
} fit_opts;

static void usage(FILE *f)
{
    char known[256];
    calib_fit_term_list(known, sizeof known);
    fprintf(f,
        "usage: slicesim fit DIR [OPTIONS]\n"
        "       slicesim fit import --from FORMAT FILE... -o DIR ...  (see fit import --help)\n"
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
        "6 significant digits), the others keep the start engine's values. A --fit term whose\n"
        "+-20 %% change moves the objective by less than 0.1 %% at the start is kept at its\n"
        "start value too, and no more terms are fitted than the fitted stages have independent\n"
        "figures (TTFT and E2E means and p90s; the most sensitive first): one stderr line each.\n"
        "The fitted profile has no [gpu.NAME] sections: its [host] terms start from the start\n"
        "engine's for the GPU of the first run and hold on every GPU.\n"
        "\n"
        "  --engine NAME|FILE   engine to start from, or to evaluate (default "
        CAT_ENGINE_DEFAULT "), or a profile\n"
        "                       file's path (with a '/' or ending in .ini)\n"
        "  --profiles DIR       catalog directory (default: ./profiles or the source tree's)\n"
        "  --name NAME          name of the fitted engine (default fitted)\n"
        "  --description TEXT   its description (default: START fitted by slicesim fit to DIR)\n"
        "  --jobs N             replay up to N runs at once on N worker processes (default:\n"
        "                       the online CPUs); the results do not depend on N\n"
        "  --full-replays       replay every run at every evaluation; by default an evaluation\n"
        "                       starts no further run once the leading runs replayed\n"
        "                       make its objective at least the value Nelder-\n"
        "                       Mead compares it with (the worst vertex, the reflection), so\n"
        "                       that its next step is certain; the fit is the same either way\n"
        "  --cost NAME          cost model of the replays: roofline (default) | profile | auto\n"
        "                       (operator tables measured by slicesim calibrate: fit then only\n"
        "                       the engine's own terms on top, e.g. --fit iter_fixed_us,...)\n"
        "  -o, --out FILE       fitted profile to write (default NAME.ini here)\n"
        "  --fit KEYS           comma list of terms to fit (default\n"
        "                       " CALIB_FIT_DEFAULT_TERMS ";\n"
        "                       fittable: %s)\n"
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
        "one line: FILE:LINE: field: what).\n", known);
}

enum { OPT_ENGINE = 256, OPT_PROFILES, OPT_NAME, OPT_FIT, OPT_OVERLAP, OPT_ALLREDUCE,
       OPT_ITER, OPT_RUNS, OPT_SERVED, OPT_EVAL, OPT_WSTAGES, OPT_DB, OPT_JSON, OPT_CHECK,
       OPT_NOPROG, OPT_DESC, OPT_COST, OPT_JOBS, OPT_FULL };

static const struct option long_opts[] = {
    {"engine", required_argument, NULL, OPT_ENGINE},
    {"profiles", required_argument, NULL, OPT_PROFILES},
    {"name", required_argument, NULL, OPT_NAME},
    {"description", required_argument, NULL, OPT_DESC},
    {"cost", required_argument, NULL, OPT_COST},
    {"jobs", required_argument, NULL, OPT_JOBS},
    {"full-replays", no_argument, NULL, OPT_FULL},
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

/* fmt takes two strings, a and b. */
static int usage_error(const char *fmt, const char *a, const char *b)
{
    char msg[1024];
    snprintf(msg, sizeof msg, fmt, a, b);
    return cli_usage_error("fit", "%s", msg);
}

/* --fit KEYS into o->c.term: each a fittable term, once. */
static int parse_fit_keys(fit_opts *o)
{
    const char *p = o->fit;
    o->c.n_term = 0;
    while (*p) {
        size_t len = strcspn(p, ",");
        int k = calib_fit_term_find(p, len);
        char key[64], known[256];
        snprintf(key, sizeof key, "%.*s", (int)(len < 60 ? len : 60), p);
        if (k < 0) {
            calib_fit_term_list(known, sizeof known);
            return usage_error("--fit: unknown engine term '%s' (fittable: %s)", key, known);
        }
        for (size_t i = 0; i < o->c.n_term; i++)
            if (o->c.term[i] == (size_t)k)
                return usage_error("--fit: '%s' given twice%s", key, "");
        o->c.term[o->c.n_term++] = (size_t)k;
        p += len + (p[len] == ',');
    }
    if (!o->c.n_term)
        return usage_error("--fit: expected a comma list of engine terms, got '%s'%s", o->fit,
                           "");
    return CLI_OK;
}

static int parse_value(fit_opts *o, int c, const char *arg)
{
    switch (c) {
    case OPT_ITER: return cli_parse_long("--iterations", arg, 1, 1000000, &o->c.iterations);
    case OPT_JOBS: return cli_parse_long("--jobs", arg, 1, 1024, &o->c.jobs);
    case OPT_SERVED:
        if (ss_parse_doublez(arg, &o->c.served_ms) || !(o->c.served_ms > 0))
            return usage_error("--served-ms: expected a number > 0, got '%s'%s", arg, "");
        return CLI_OK;
    case OPT_OVERLAP:
        if (strcmp(arg, "serial") && strcmp(arg, "max"))
            return usage_error("--overlap: expected serial or max, got '%s'%s", arg, "");
        o->c.overlap = arg;
        return CLI_OK;
    case OPT_ALLREDUCE:
        if (strcmp(arg, "ring") && strcmp(arg, "twoshot"))
            return usage_error("--allreduce: expected ring or twoshot, got '%s'%s", arg, "");
        o->c.allreduce = arg;
        return CLI_OK;
    default: return CLI_EUSAGE;
    }
}

static int parse_one(fit_opts *o, int c, const char *arg)
{
    switch (c) {
    case OPT_ENGINE: o->c.engine = arg; return CLI_OK;
    case OPT_PROFILES: o->c.profiles = arg; return CLI_OK;
    case OPT_NAME: o->c.name = arg; return CLI_OK;
    case OPT_DESC:
        if (!*arg || strlen(arg) >= sizeof ((cat_engine *)0)->description ||
            ss_str_has_control(arg))
            return usage_error("--description: '%.60s' is not one line of 1-127 characters%s",
                               arg, "");
        o->c.description = arg;
        return CLI_OK;
    case 'o': o->c.out = arg; return CLI_OK;
    case OPT_FIT: o->fit = arg; return CLI_OK;
    case OPT_RUNS: o->c.runs = arg; return CLI_OK;
    case OPT_EVAL: o->c.evaluate = 1; return CLI_OK;
    case OPT_FULL: o->c.full_replays = 1; return CLI_OK;
    case OPT_WSTAGES: o->c.write_stages = arg; return CLI_OK;
    case OPT_DB: o->c.db = arg; return CLI_OK;
    case OPT_JSON: o->c.json = 1; return CLI_OK;
    case OPT_CHECK: o->c.check = RUNNER_CHECK_ON; return CLI_OK;
    case OPT_COST: {
        char known[128];
        cost_backend_list(known, sizeof known);
        if (!cost_find(arg))
            return usage_error("--cost: unknown cost model '%.60s' (known: %s)", arg, known);
        o->c.cost = arg;
        return CLI_OK;
    }
    case OPT_NOPROG: o->c.progress = 0; return CLI_OK;
    default: return parse_value(o, c, arg);
    }
}

/* What the options say together: a fit name, its file, the terms. */
static int finish_opts(fit_opts *o, char *out_buf, size_t out_size)
{
    for (const char *p = o->c.name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || strchr("._-", *p)))
            return usage_error("--name: '%s' is not an engine name of 1-47 characters from "
                               "[a-z0-9._-]%s", o->c.name, "");
    if (!*o->c.name || strlen(o->c.name) >= CAT_NAME_MAX)
        return usage_error("--name: '%s' is not an engine name of 1-47 characters from "
                           "[a-z0-9._-]%s", o->c.name, "");
    if (o->c.evaluate && o->c.out)
        return usage_error("-o: --evaluate fits nothing and writes no profile%s%s", "", "");
    if (!o->c.out) {
        snprintf(out_buf, out_size, "%s.ini", o->c.name);
        o->c.out = out_buf;
    }
    return o->c.evaluate ? CLI_OK : parse_fit_keys(o);
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
            usage(cli_out());
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
    o->c.dir = argv[optind++];
    if (optind < argc)
        return usage_error("unexpected argument '%s' (see --help)%s", argv[optind], "");
    return finish_opts(o, out_buf, out_size);
}

/* }====================================================================== */

/* Every input and output, so that no output overwrites an input or another output
 * (calib_fit_files_fn; ud is the options). */
static int fit_files(void *ud, const calib_fit_data *d, ss_errbuf *eb)
{
    const calib_fit_opts *o = ud;
    cli_files fs = {0};
    int rc = cli_files_add(&fs, "runs.csv", d->runs_path, 0, eb);
    if (!rc)
        rc = cli_files_add(&fs, "stages.csv", d->stages_path, 0, eb);
    for (size_t i = 0; !rc && i < d->n_runs; i++)
        rc = cli_files_add(&fs, "a trace", d->runs[i].trace, 0, eb);
    if (!rc && !o->evaluate)
        rc = cli_files_add(&fs, "the profile (-o)", o->out, 1, eb);
    if (!rc)
        rc = cli_files_add(&fs, "--write-stages", o->write_stages, 1, eb);
    if (!rc)
        rc = cli_files_add(&fs, "--db", o->db, 1, eb);
    cli_files_fini(&fs);
    return rc;
}

int cmd_fit(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "import")) /* a folder named import: ./import */
        return cmd_fit_import(argc - 1, argv + 1);
    char out_buf[CAT_NAME_MAX + 8];
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    fit_opts o = {.c = {.engine = CAT_ENGINE_DEFAULT, .name = "fitted",
                        .jobs = cpus > 0 ? cpus : 1, .iterations = 200, .served_ms = 1000,
                        .progress = 1, .check = RUNNER_CHECK_OFF},
                  .fit = CALIB_FIT_DEFAULT_TERMS};
    char *command = cli_join_args(argc, argv); /* before getopt_long permutes argv */
    int rc = parse_opts(&o, argc, argv, out_buf, sizeof out_buf);
    if (rc) {
        ss_free(command);
        return rc < 0 ? CLI_OK : rc;
    }
    o.c.check_files = fit_files;
    o.c.check_files_ud = &o.c;
    ss_errbuf eb = {""};
    rc = command ? calib_fit(&o.c, command, cli_out(), &eb)
                 : ss_err(&eb, SS_ENOMEM, "out of memory");
    if (rc)
        fprintf(cli_err(), "slicesim: fit: %s\n", eb.msg);
    ss_free(command);
    return cli_status_of(rc);
}
