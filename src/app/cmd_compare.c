/* `slicesim compare`: the same scenario, trace and seed under several policy bundles (and
 * loads), one table with ratios against the first bundle; every run goes to the results
 * database as a point of a sweep named after the scenario, so `slicesim plot` can draw it. */
#include "app/cli.h"

#include "runner/bundle.h"
#include "runner/report.h"
#include "runner/run.h"

#include "core/ss_alloc.h"
#include "core/ss_parse.h"
#include "core/ss_strbuf.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_POLICIES 16
#define MAX_RATES 32

typedef struct compare_opts {
    const char *config, *profiles, *db, *name;
    char *policies_text, *rates_text; /* owned copies, split in place */
    char *policy[MAX_POLICIES];
    char label[MAX_POLICIES][RUNNER_LABEL_MAX];
    int n_policies;
    double rate[MAX_RATES];
    int n_rates;
    const char **sets;
    size_t n_sets, cap_sets;
    int json, progress;
} compare_opts;

/* What the table shows of one run. */
typedef struct result {
    int policy;
    double rate;
    metrics_summary m;
    double tier_sla[SS_MAX_TIERS];
    uint32_t n_tiers;
} result;

static void usage(FILE *f)
{
    fprintf(f,
        "usage: slicesim compare -c SCENARIO.ini [--policies A,B,...] [--rates R1,R2,...]\n"
        "                        [--set SECTION.KEY=VALUE ...] [--db FILE] [--json]\n"
        "\n"
        "Replay one scenario (same traces, same seed) under several policy bundles and print one\n"
        "table: throughput, goodput, SLA violations (overall and per tier), TTFT/TBT/E2E p50 and\n"
        "p99, with ratios against the first bundle. Every run is stored in the results database\n"
        "as a point of the sweep NAME (policy=LABEL;rate=R), for `slicesim plot`.\n"
        "\n"
        "  -c, --config FILE       scenario file (required; experiments/README.md)\n"
        "  --policies LIST         comma-separated bundles (default container,llumnix,slice):\n"
        "                          built-in %s,\n"
        "                          or LABEL:SECTION.KEY=VALUE[+SECTION.KEY=VALUE...]\n"
        "  --rates LIST            load multipliers applied to every tenant's rate_scale\n"
        "                          (default 1)\n"
        "  --set SECTION.KEY=VALUE override a scenario key in every run (repeatable)\n"
        "  --db FILE               results database (default: the scenario's; 'none' to skip)\n"
        "  --name NAME             sweep name in the database (default compare:SCENARIO)\n"
        "  --json                  print a JSON array, one object per run: {policy, rate, run}\n"
        "                          where run is what `replay --json` prints\n"
        "  --profiles DIR          catalog directory\n"
        "  --no-progress           no progress line on a terminal\n"
        "  -h, --help              this help\n"
        "\n"
        "Exit status: 0 success, 1 a run failed (I/O, database), 2 bad input or usage.\n",
        runner_bundle_names());
}

static int usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "slicesim: compare: %s%s%s\n", msg, arg ? arg : "", arg ? "'" : "");
    return CLI_EUSAGE;
}

enum { O_POLICIES = 256, O_RATES, O_SET, O_DB, O_NAME, O_JSON, O_PROFILES, O_NOPROG };

static int parse_policies(compare_opts *o, const char *arg)
{
    ss_free(o->policies_text);
    if (!(o->policies_text = ss_strdup(arg)))
        return CLI_EFAIL;
    o->n_policies = runner_split_list(o->policies_text, o->policy, MAX_POLICIES);
    if (o->n_policies < 1)
        return usage_error("--policies: expected 1 to 16 comma-separated bundles, got '", arg);
    for (int i = 0; i < o->n_policies; i++) {
        ss_errbuf eb;
        if (runner_bundle_label(o->policy[i], o->label[i], &eb)) {
            fprintf(stderr, "slicesim: compare: --policies: %s\n", eb.msg);
            return CLI_EUSAGE;
        }
        for (int j = 0; j < i; j++)
            if (!strcmp(o->label[i], o->label[j]))
                return usage_error("--policies: the same label twice: '", o->label[i]);
    }
    return CLI_OK;
}

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
        {"config", required_argument, NULL, 'c'},      {"policies", required_argument, NULL, O_POLICIES},
        {"rates", required_argument, NULL, O_RATES},   {"set", required_argument, NULL, O_SET},
        {"db", required_argument, NULL, O_DB},         {"name", required_argument, NULL, O_NAME},
        {"json", no_argument, NULL, O_JSON},           {"profiles", required_argument, NULL, O_PROFILES},
        {"no-progress", no_argument, NULL, O_NOPROG},  {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    optind = 1;
    int rc = CLI_OK;
    if (cli_check_long_options("compare", argc, argv, ":hc:", longopts))
        return CLI_EUSAGE;
    for (int c; !rc && (c = getopt_long(argc, argv, ":hc:", longopts, NULL)) != -1;) {
        switch (c) {
        case 'c': o->config = optarg; break;
        case 'h': usage(stdout); return -1;
        case O_POLICIES: rc = parse_policies(o, optarg); break;
        case O_RATES: rc = parse_rates(o, optarg); break;
        case O_SET:
            if (ss_grow((void **)&o->sets, &o->cap_sets, o->n_sets + 1, sizeof *o->sets))
                return CLI_EFAIL;
            o->sets[o->n_sets++] = optarg;
            break;
        case O_DB: o->db = optarg; break;
        case O_NAME: o->name = optarg; break;
        case O_JSON: o->json = 1; break;
        case O_PROFILES: o->profiles = optarg; break;
        case O_NOPROG: o->progress = 0; break;
        case ':': return usage_error("option needs an argument: '", argv[optind - 1]);
        default: return usage_error("unknown option '", argv[optind - 1]);
        }
    }
    if (rc)
        return rc;
    if (optind < argc)
        return usage_error("unexpected argument '", argv[optind]);
    if (!o->config)
        return usage_error("-c SCENARIO.ini is required (see --help)", NULL);
    if (!o->n_policies && (rc = parse_policies(o, "container,llumnix,slice")))
        return rc;
    if (!o->n_rates) {
        o->rate[0] = 1;
        o->n_rates = 1;
    }
    return CLI_OK;
}

/* The scenario for one run: the file, the --set assignments, the bundle, the load. */
static int build(const compare_opts *o, int p, double rate, scn_scenario **out, ss_errbuf *eb)
{
    scn_scenario *sc = NULL;
    int rc = scn_create(&sc) ? ss_err(eb, SS_ENOMEM, "out of memory") : SS_OK;
    if (!rc && (rc = scn_load(sc, o->config, eb)) == SS_EIO)
        rc = SS_EPARSE;
    for (size_t i = 0; !rc && i < o->n_sets; i++)
        rc = scn_set(sc, o->sets[i], eb);
    if (!rc && o->db) {
        char a[SCN_PATH_MAX + 8];
        snprintf(a, sizeof a, "run.db=%s", o->db);
        rc = scn_set_option(sc, a, "--db", eb);
    }
    if (!rc)
        rc = runner_bundle_apply(sc, o->policy[p], "--policies", eb);
    if (!rc)
        runner_scale_rates(sc, rate);
    if (!rc)
        rc = scn_check(sc, eb);
    if (rc)
        scn_destroy(&sc);
    *out = sc;
    return rc;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static void print_table(const compare_opts *o, const result *res, int n)
{
    printf("slicesim compare: %s, %d bundle(s) x %d load(s); ratios against %s\n", o->config,
           o->n_policies, o->n_rates, o->label[0]);
    printf("  %-5s %-16s %10s %5s %10s %5s %8s %9s %9s %8s %8s %9s %9s  %s\n", "load",
           "policy", "out tok/s", "x", "goodput", "x", "SLA miss", "TTFT p50", "TTFT p99",
           "TBT p50", "TBT p99", "E2E p50", "E2E p99", "SLA miss by tier");
    for (int i = 0; i < n; i++) {
        const result *r = &res[i], *b = &res[i - i % o->n_policies];
        const metrics_group_summary *a = &r->m.all, *ba = &b->m.all;
        printf("  %-5g %-16s %10.1f %5.2f %10.1f %5.2f %7.1f%% %9.0f %9.0f %8.1f %8.1f %9.0f "
               "%9.0f ",
               r->rate, o->label[r->policy], a->output_tokens_per_s,
               ba->output_tokens_per_s > 0 ? a->output_tokens_per_s / ba->output_tokens_per_s : 0,
               a->goodput_tokens_per_s,
               ba->goodput_tokens_per_s > 0 ? a->goodput_tokens_per_s / ba->goodput_tokens_per_s
                                            : 0,
               100 * a->sla_violation_rate, a->ttft_ms.p50, a->ttft_ms.p99, a->tbt_ms.p50,
               a->tbt_ms.p99, a->e2e_ms.p50, a->e2e_ms.p99);
        for (uint32_t k = 0; k < r->n_tiers; k++)
            printf(" t%u %.1f%%", k, 100 * r->tier_sla[k]);
        putchar('\n');
    }
}

static void free_opts(compare_opts *o)
{
    ss_free(o->policies_text);
    ss_free(o->rates_text);
    ss_free(o->sets);
}

int cmd_compare(int argc, char **argv)
{
    compare_opts o = {.progress = 1};
    char *cmdline = cli_join_args(argc, argv); /* as given, before getopt permutes argv */
    int rc = parse_opts(&o, argc, argv);
    if (rc) {
        free_opts(&o);
        ss_free(cmdline);
        return rc < 0 ? CLI_OK : rc;
    }
    int n = o.n_policies * o.n_rates;
    result *res = ss_calloc((size_t)n, sizeof *res);
    char name[300];
    snprintf(name, sizeof name, "%s", o.name ? o.name : "");
    if (!o.name)
        snprintf(name, sizeof name, "compare:%s", base_name(o.config));
    ss_errbuf eb = {""};
    store *st = NULL;
    const char *db = NULL;
    scn_scenario *sc = NULL;
    if (!res || !cmdline)
        rc = ss_err(&eb, SS_ENOMEM, "out of memory");
    /* every point (bundle and load) must build before anything runs, so that a bad bundle
     * stores nothing: the scenario, everything a run sets up from it, and arrivals within the
     * simulated time range */
    runner_run_opts check_opts = {.profiles = o.profiles, .config = o.config};
    for (int i = 0; !rc && i < n; i++) {
        int p = i % o.n_policies;
        double rate = o.rate[i / o.n_policies];
        if (!(rc = build(&o, p, rate, &sc, &eb)) &&
            (rc = runner_run_check(sc, &check_opts, &eb)))
            ss_err_prefix(&eb, rc, "policy=%s;rate=%g", o.label[p], rate);
        scn_destroy(&sc);
    }
    if (!rc) /* the first point's scenario names the database */
        rc = build(&o, 0, o.rate[0], &sc, &eb);
    cli_files files = {0};
    if (!rc)
        rc = cli_scenario_files(&files, sc, NULL, &eb);
    cli_files_fini(&files);
    /* one database for every run: --db, else the scenario's */
    if (!rc) {
        db = sc->db;
        if (strcmp(db, "none"))
            rc = store_open(&st, db, &eb);
    }
    scn_destroy(&sc); /* also the first point's when a later one failed */
    if (!rc && o.json)
        fputs("[\n", stdout);
    for (int i = 0; !rc && i < n; i++) {
        int p = i % o.n_policies;
        double rate = o.rate[i / o.n_policies];
        char point[RUNNER_LABEL_MAX + 64];
        snprintf(point, sizeof point, "policy=%s;rate=%g", o.label[p], rate);
        if (o.progress && isatty(STDERR_FILENO))
            fprintf(stderr, "slicesim: compare: [%d/%d] %s\n", i + 1, n, point);
        runner_run_opts ro = {.profiles = o.profiles, .config = o.config, .command = cmdline,
                              .sweep = name, .point = point, .load = rate,
                              .progress = o.progress, .st = st, .arrivals_checked = 1};
        runner_run x = {0};
        rc = build(&o, p, rate, &sc, &x.eb);
        if (!rc)
            rc = runner_run_setup(&x, sc, &ro);
        if (!rc)
            rc = runner_run_exec(&x);
        if (!rc) {
            result *r = &res[i];
            r->policy = p;
            r->rate = rate;
            r->m = x.m;
            const metrics *mt = gsim_metrics(x.g);
            r->n_tiers = mt->n_tiers;
            for (uint32_t k = 0; k < mt->n_tiers; k++) {
                metrics_group_summary gs;
                metrics_summarize_group(&mt->tiers[k], x.m.window_s, &gs);
                r->tier_sla[k] = gs.sla_violation_rate;
            }
            if (o.json) {
                runner_report rep = runner_run_report(&x);
                printf("  {\"policy\": \"%s\", \"rate\": %g, \"run\": ", o.label[p], rate);
                runner_report_json(stdout, &rep, x.g, &x.m);
                printf("  }%s\n", i + 1 < n ? "," : "");
            }
        } else {
            ss_err_prefix(&x.eb, rc, "%s", point);
            eb = x.eb;
        }
        runner_run_fini(&x);
        scn_destroy(&sc);
    }
    if (!rc && o.json)
        fputs("]\n", stdout);
    else if (!rc)
        print_table(&o, res, n);
    if (!rc && !o.json && st)
        printf("  results: %s (sweep '%s')\n", store_path(st), name);
    if (rc)
        fprintf(stderr, "slicesim: compare: %s\n", eb.msg);
    store_close(&st);
    scn_destroy(&sc); /* left by a failed check */
    ss_free(res);
    ss_free(cmdline);
    free_opts(&o);
    return cli_status_of(rc);
}
