/* `slicesim compare`: the options and --help of the same scenario, trace and seed under
 * several policy bundles (and loads). Running them and the table are runner/compare.c's. */
#include "app/cli.h"
#include "app/cli_runs.h"

#include "runner/compare.h"

#include "core/ss_alloc.h"
#include "core/ss_parse.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#define MAX_RATES RUNNER_COMPARE_MAX_RATES
_Static_assert(CLI_RUNS_MAX_POLICIES == RUNNER_COMPARE_MAX_POLICIES, "bundles of one comparison");
_Static_assert(CLI_RUNS_MAX_SEEDS == RUNNER_COMPARE_MAX_SEEDS, "seeds of one comparison");

typedef struct compare_opts {
    cli_runs_opts r;        /* the options compare shares with capacity */
    char *rates_text;       /* owned copy, split in place */
    double rate[MAX_RATES];
    int n_rates;
} compare_opts;

static void usage(FILE *f)
{
    fprintf(f,
        "usage: slicesim compare -c SCENARIO.ini [--policies A,B,...] [--rates R1,R2,...]\n"
        "                        [--seeds N] [--set SECTION.KEY=VALUE ...] [--db FILE] [--json]\n"
        "\n"
        "Replay one scenario (same traces, same seed) under several policy bundles and print one\n"
        "table: throughput, goodput, SLA violations (overall and per tier), TTFT/TBT/E2E p50 and\n"
        "p99, with ratios against the first bundle. Every run is stored in the results database\n"
        "as a point of the sweep NAME (policy=LABEL;rate=R), for `slicesim plot`. With --seeds\n"
        "N every point runs once per seed (policy=LABEL;rate=R;run.seed=S) and the table gives\n"
        "per point the mean over the seeds with its two-sided 95 %% Student-t interval (t with\n"
        "N - 1 degrees of freedom), the goodput ratio to the first bundle paired by seed with\n"
        "its interval, and a verdict: higher or lower when that interval lies above or below 1,\n"
        "\"no difference\" when it holds 1.\n"
        "\n"
        "  -c, --config FILE       scenario file (required; experiments/README.md)\n"
        "  --policies LIST         comma-separated bundles (default container,llumnix,slice):\n"
        "                          built-in %s,\n"
        "                          or LABEL:SECTION.KEY=VALUE[+SECTION.KEY=VALUE...]; a value\n"
        "                          V1|V2|... is searched at each point from V1 (as slice-tuned's)\n"
        "  --rates LIST            load multipliers applied to every tenant's rate_scale\n"
        "                          (default 1)\n"
        "  --set SECTION.KEY=VALUE override a scenario key in every run (repeatable)\n"
        "  --db FILE               results database (default: the scenario's; 'none' to skip)\n"
        "  --name NAME             sweep name in the database (default compare:SCENARIO)\n"
        "  --json                  print a JSON array, one object per run: {policy, rate, run}\n"
        "                          where run is what `replay --json` prints; with --seeds an\n"
        "                          object: runs (that array, each with its seed) and summary\n"
        "                          (per point the means, NAME_ci95_lo, NAME_ci95_hi, verdict)\n"
        "  --profiles DIR          catalog directory\n"
        CLI_RUNS_REPLAYS_HELP
        CLI_RUNS_SEEDS_HELP
        CLI_RUNS_STORE_HELP
        "  --no-progress           no progress line on a terminal\n"
        "  -h, --help              this help\n"
        "\n"
        "Exit status: 0 success, 1 a run failed (I/O, database), 2 bad input or usage.\n",
        runner_bundle_names());
}

static int usage_error(const char *msg, const char *arg)
{
    return cli_usage_error("compare", "%s%s%s", msg, arg ? arg : "", arg ? "'" : "");
}

enum { O_RATES = CLI_RUNS_O__NEXT };

static int parse_rates(compare_opts *o, const char *arg)
{
    char *items[MAX_RATES];
    ss_free(o->rates_text);
    if (!(o->rates_text = ss_strdup(arg)))
        return CLI_EFAIL;
    int n = runner_split_list(o->rates_text, items, MAX_RATES);
    if (n < 1)
        return usage_error("--rates: expected 1 to 32 comma-separated numbers, got '", arg);
    for (int i = 0; i < n; i++) {
        if (ss_parse_number_value(items[i], strlen(items[i]), &o->rate[i]) &&
            (!(o->rate[i] > 0) || o->rate[i] > 1e6))
            return usage_error("--rates: out of range (0, 1e6], got '", items[i]);
        if (ss_parse_doublez(items[i], &o->rate[i]))
            return usage_error("--rates: expected numbers > 0, got '", items[i]);
    }
    o->n_rates = n;
    return CLI_OK;
}

/* 0, CLI_EUSAGE, or -1 after --help. */
static int parse_opts(compare_opts *o, int argc, char **argv)
{
    static const struct option longopts[] = {
        CLI_RUNS_LONGOPTS, {"rates", required_argument, NULL, O_RATES}, {NULL, 0, NULL, 0},
    };
    opterr = 0;
    optind = 1;
    int rc = CLI_OK;
    if (cli_check_long_options("compare", argc, argv, ":hc:", longopts))
        return CLI_EUSAGE;
    for (int c; !rc && (c = getopt_long(argc, argv, ":hc:", longopts, NULL)) != -1;) {
        if (c == 'h') {
            usage(cli_out());
            return -1;
        }
        if ((rc = cli_runs_opt(&o->r, c, optarg)) != 1)
            continue;
        switch (c) {
        case O_RATES: rc = parse_rates(o, optarg); break;
        case ':': return usage_error("option needs an argument: '", argv[optind - 1]);
        default: return usage_error("unknown option '", argv[optind - 1]);
        }
    }
    if (rc)
        return rc;
    if (optind < argc)
        return usage_error("unexpected argument '", argv[optind]);
    if (!o->r.config)
        return usage_error("-c SCENARIO.ini is required (see --help)", NULL);
    if (!o->r.n_policies && (rc = cli_runs_policies(&o->r, "container,llumnix,slice")))
        return rc;
    if (!o->n_rates) {
        o->rate[0] = 1;
        o->n_rates = 1;
    }
    return CLI_OK;
}

static void free_opts(compare_opts *o)
{
    cli_runs_fini(&o->r);
    ss_free(o->rates_text);
}

int cmd_compare(int argc, char **argv)
{
    compare_opts o = {.r = {.cmd = "compare", .progress = 1}};
    char *cmdline = cli_join_args(argc, argv); /* as given, before getopt permutes argv */
    int rc = parse_opts(&o, argc, argv);
    if (rc) {
        free_opts(&o);
        ss_free(cmdline);
        return rc < 0 ? CLI_OK : rc;
    }
    runner_compare_opts ro = {
        .config = o.r.config, .profiles = o.r.profiles, .db = o.r.db, .name = o.r.name,
        .command = cmdline, .policy = o.r.policy, .n_policies = o.r.n_policies, .rate = o.rate,
        .n_rates = o.n_rates, .sets = o.r.sets, .n_sets = o.r.n_sets, .n_seeds = o.r.n_seeds,
        .json = o.r.json,
        .progress = o.r.progress, .search_replays = o.r.search_replays, .keep = o.r.keep,
        .check_files = cli_runs_files,
    };
    ss_errbuf eb = {""};
    rc = cmdline ? runner_compare(&ro, cli_out(), &eb) : ss_err(&eb, SS_ENOMEM, "out of memory");
    if (rc)
        fprintf(cli_err(), "slicesim: compare: %s\n", eb.msg);
    ss_free(cmdline);
    free_opts(&o);
    return cli_status_of(rc);
}
