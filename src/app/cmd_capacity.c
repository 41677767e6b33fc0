/* `slicesim capacity`: the options and --help of the capacity search, the highest load each
 * policy bundle sustains within an SLA-miss bound. The search, the replays and the table are
 * runner/capacity.c's and runner/capacity_run.c's. */
#include "app/cli.h"
#include "app/cli_runs.h"

#include "runner/capacity.h"

#include "core/ss_alloc.h"
#include "core/ss_parse.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

_Static_assert(CLI_RUNS_MAX_POLICIES == RUNNER_CAPACITY_MAX_POLICIES, "bundles of one search");
_Static_assert(CLI_RUNS_MAX_SEEDS == RUNNER_CAPACITY_MAX_SEEDS, "seeds of one search");

#define CAPACITY_MAX_JOBS 256  /* most --jobs */

typedef struct capacity_opts {
    cli_runs_opts r;           /* the options capacity shares with compare */
    runner_criterion criterion;
    int criterion_set;         /* --criterion or --tenant was given */
    const char *tenant;        /* the tenant of --criterion tenant:NAME (or --tenant NAME) */
    runner_capacity_search_opts search;
    int full_probes;           /* --full-probes */
    int jobs;                  /* --jobs (0: the online CPUs) */
} capacity_opts;

/* --jobs' default: the online CPUs (1 when that is unknown), at most CAPACITY_MAX_JOBS. */
static int default_jobs(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > CAPACITY_MAX_JOBS ? CAPACITY_MAX_JOBS : (int)n;
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: slicesim capacity -c SCENARIO.ini --policies A,B,... [--sla-miss 0.09]\n"
        "                         [--criterion worst|pooled|tenant:NAME] [--tol 0.02]\n"
        "                         [--max-probes 12] [--seeds N] [--jobs N] [--full-probes]\n"
        "                         [--set SECTION.KEY=VALUE ...] [--db FILE] [--json]\n"
        "\n"
        "Find each policy bundle's capacity: the highest load multiplier (of every tenant's\n"
        "rate_scale, as compare's --rates) at which SLA violations stay within the bound: every\n"
        "tenant's (the default, --criterion worst: the highest tenant's miss is judged), all\n"
        "requests pooled, or one tenant's. Each probe is a replay (stopped once it is certain\n"
        "to fail, see below): load 1 first, then doubling up until a load fails (or halving\n"
        "down until one passes), then bisection until the bracket is within --tol of the\n"
        "load. Synthetic tenants keep their window at\n"
        "every load (their generator runs load times longer before the rates are scaled); a\n"
        "probe in which a tenant's arrivals (a trace's, say) end before the window does counts\n"
        "as a failure. Prints per bundle the capacity, its ratio to the first bundle's, goodput\n"
        "and SLA miss at that load and the probes it took (a bundle that fails at every load\n"
        "tried reads <LOAD, no ratio, and the goodput and SLA miss of that lowest load), then\n"
        "each tenant's miss there (and the pooled one); a line per probe goes to stderr.\n"
        "Every probe is stored as a point of the sweep NAME (policy=LABEL;rate=LOAD) with a\n"
        "digest of its inputs (the scenario, its traces, the profiles, slicesim's code); run\n"
        "again onto the same database, a probe stored from the same inputs is read back\n"
        "instead of run (\"reused N probes\" on stderr). static-best, slice-sized and\n"
        "llumnix-sized search for the allocation best by the same criterion, slice-tuned (and\n"
        "a bundle with KEY=V1|V2|...) for the values best by it, at every probe. With --seeds N the whole search runs\n"
        "once per seed (run.seed, run.seed + 1, ...; points policy=LABEL;rate=LOAD;run.seed=S)\n"
        "and the table gives each bundle's mean capacity over the seeds with its two-sided\n"
        "95 %% Student-t interval (t with N - 1 degrees of freedom), the mean of its ratios to\n"
        "the first bundle paired by seed with their interval, and a verdict: higher or lower\n"
        "when the ratio's interval lies above or below 1, \"no difference\" when it holds 1.\n"
        "\n"
        "A probe stops as soon as it is certain to fail: when the requests of the judged\n"
        "tenant(s) known to miss their SLA (ended missing it, or in flight past a bound for\n"
        "good) already exceed the bound times all the requests the probe measures (its\n"
        "workload, read ahead, tells how many). Its line reads \"SLA miss >X%%, stopped at T s\n"
        "simulated\", its JSON probe \"stopped\": true with its misses so far (lower bounds) and\n"
        "goodput null; it is not stored, so a later command never reuses it as a complete run.\n"
        "A probe that passes, the lowest load of a search that fails everywhere (whose figures\n"
        "the row shows) and one whose point the database holds from other inputs run to their\n"
        "end: the capacity, bracket and the figures at capacity are those of --full-probes.\n"
        "A search's candidate (static-best's, a knob search's) stops likewise once it is\n"
        "certain to be worse than the one it is compared with, which leaves the search's path\n"
        "and choice as they are (\"N stopped early\" ends its \"chose\" line).\n"
        "\n"
        "  -c, --config FILE       scenario file (required; experiments/README.md)\n"
        "  --policies LIST         comma-separated bundles (required): built-in\n"
        "                          %s,\n"
        "                          or LABEL:SECTION.KEY=VALUE[+SECTION.KEY=VALUE...]; a value\n"
        "                          V1|V2|... is searched at each point from V1 (as slice-tuned's)\n"
        "  --sla-miss F            bound on the share of requests missing their SLA, 0 to 1\n"
        "                          (default 0.09)\n"
        "  --criterion C           what the bound judges: worst (default: every tenant within\n"
        "                          it), pooled (all requests together) or tenant:NAME (one\n"
        "                          tenant's requests, and its goodput)\n"
        "  --tenant NAME           the same as --criterion tenant:NAME\n"
        "  --tol F                 relative width of the final bracket, > 0 (default 0.02)\n"
        "  --max-probes N          most replays per bundle and seed, 1 to %d (default 12)\n"
        CLI_RUNS_SEEDS_HELP
        CLI_RUNS_STORE_HELP
        "  --jobs N                searches (bundles x seeds) at once, each in a process of its\n"
        "                          own with a database of its own merged in at the end, 1 to\n"
        "                          %d (default: the online CPUs); the table, JSON, stderr and\n"
        "                          database are those of --jobs 1 (stderr comes search by\n"
        "                          search; a candidate's line, on a terminal only, is not shown)\n"
        "  --full-probes           run every probe and search candidate to its end (the figures\n"
        "                          of every probe in full; slower)\n"
        "  --set SECTION.KEY=VALUE override a scenario key in every run (repeatable)\n"
        "  --db FILE               results database (default: the scenario's; 'none' to skip)\n"
        "  --name NAME             sweep name in the database (default capacity:SCENARIO)\n"
        "  --json                  print one JSON object: the settings and per bundle its\n"
        "                          capacity, ratio, status, bracket and probes; with --seeds\n"
        "                          the means with ci95_lo and ci95_hi (ratio_ci95_lo, ...)\n"
        "                          beside them, the verdict and each seed's search in runs\n"
        "  --profiles DIR          catalog directory\n"
        CLI_RUNS_REPLAYS_HELP
        "  --progress MODE         what stderr shows as it goes: probes (a line per probe, the\n"
        "                          default), searches (a line per search as it ends, \"k of N\n"
        "                          searches done\" with the share done, the wall time elapsed\n"
        "                          and an estimate of the time left, and its capacity) or none\n"
        "  --no-progress           --progress none\n"
        "  -h, --help              this help\n"
        "\n"
        "Exit status: 0 success, 1 a run failed (I/O, database), 2 bad input or usage.\n",
        runner_bundle_names(), RUNNER_CAPACITY_MAX_PROBES, CAPACITY_MAX_JOBS);
}

static int usage_error(const char *msg, const char *arg)
{
    return cli_usage_error("capacity", "%s%s%s", msg, arg ? arg : "", arg ? "'" : "");
}

enum { O_SLA = CLI_RUNS_O__NEXT, O_TENANT, O_TOL, O_PROBES, O_CRITERION, O_FULL, O_JOBS,
       O_PROGRESS };

/* --criterion worst|pooled|tenant:NAME, and --tenant NAME (is_tenant): one criterion. */
static int parse_criterion(capacity_opts *o, const char *arg, int is_tenant)
{
    runner_criterion c = RUNNER_CRIT_TENANT;
    const char *tenant = is_tenant ? arg : !strncmp(arg, "tenant:", 7) ? arg + 7 : NULL;
    if (!is_tenant && !strcmp(arg, "worst"))
        c = RUNNER_CRIT_WORST;
    else if (!is_tenant && !strcmp(arg, "pooled"))
        c = RUNNER_CRIT_POOLED;
    else if (!tenant || !*tenant)
        return usage_error(is_tenant ? "--tenant: expected a tenant's name, got '"
                                     : "--criterion: expected worst, pooled or tenant:NAME, got '",
                           arg);
    if (o->criterion_set && (o->criterion != c || (c == RUNNER_CRIT_TENANT &&
                                                   strcmp(o->tenant, tenant))))
        return usage_error("--criterion and --tenant name two different criteria, the second '",
                           arg);
    o->criterion_set = 1;
    o->criterion = c;
    o->tenant = c == RUNNER_CRIT_TENANT ? tenant : NULL;
    return CLI_OK;
}

/* --sla-miss: a share in [0, 1]. */
static int parse_bound(capacity_opts *o, const char *arg)
{
    double v;
    if (ss_parse_doublez(arg, &v))
        return usage_error("--sla-miss: expected a number from 0 to 1, got '", arg);
    if (!(v >= 0 && v <= 1))
        return usage_error("--sla-miss: the bound is a share of requests, 0 to 1, got '", arg);
    o->search.sla_miss = v;
    return CLI_OK;
}

static int parse_tol(capacity_opts *o, const char *arg)
{
    double v;
    if (ss_parse_doublez(arg, &v) || !(v > 0 && v < 1))
        return usage_error("--tol: expected a number > 0 and < 1, got '", arg);
    o->search.tol = v;
    return CLI_OK;
}

static int parse_opt(capacity_opts *o, int c, char **argv)
{
    long n;
    int rc = cli_runs_opt(&o->r, c, optarg);
    if (rc != 1)
        return rc;
    switch (c) {
    case O_SLA: return parse_bound(o, optarg);
    case O_TENANT: return parse_criterion(o, optarg, 1);
    case O_CRITERION: return parse_criterion(o, optarg, 0);
    case O_TOL: return parse_tol(o, optarg);
    case O_FULL:
        o->full_probes = 1;
        return CLI_OK;
    case O_JOBS:
        if (cli_parse_long("capacity: --jobs", optarg, 1, CAPACITY_MAX_JOBS, &n))
            return CLI_EUSAGE;
        o->jobs = (int)n;
        return CLI_OK;
    case O_PROGRESS:
        if (!strcmp(optarg, "probes"))
            o->r.progress = RUNNER_PROGRESS_PROBES;
        else if (!strcmp(optarg, "searches"))
            o->r.progress = RUNNER_PROGRESS_SEARCHES;
        else if (!strcmp(optarg, "none"))
            o->r.progress = RUNNER_PROGRESS_NONE;
        else
            return usage_error("--progress: expected probes, searches or none, got '", optarg);
        return CLI_OK;
    case O_PROBES:
        if (cli_parse_long("capacity: --max-probes", optarg, 1, RUNNER_CAPACITY_MAX_PROBES, &n))
            return CLI_EUSAGE;
        o->search.max_probes = (int)n;
        return CLI_OK;
    case ':': return usage_error("option needs an argument: '", argv[optind - 1]);
    default: return usage_error("unknown option '", argv[optind - 1]);
    }
}

/* 0, CLI_EUSAGE, or -1 after --help. */
static int parse_opts(capacity_opts *o, int argc, char **argv)
{
    static const struct option longopts[] = {
        CLI_RUNS_LONGOPTS,
        {"sla-miss", required_argument, NULL, O_SLA},
        {"tenant", required_argument, NULL, O_TENANT},
        {"criterion", required_argument, NULL, O_CRITERION},
        {"tol", required_argument, NULL, O_TOL},
        {"max-probes", required_argument, NULL, O_PROBES},
        {"full-probes", no_argument, NULL, O_FULL},
        {"jobs", required_argument, NULL, O_JOBS},
        {"progress", required_argument, NULL, O_PROGRESS},
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    optind = 1;
    int rc = CLI_OK;
    if (cli_check_long_options("capacity", argc, argv, ":hc:", longopts))
        return CLI_EUSAGE;
    for (int c; !rc && (c = getopt_long(argc, argv, ":hc:", longopts, NULL)) != -1;) {
        if (c == 'h') {
            usage(cli_out());
            return -1;
        }
        rc = parse_opt(o, c, argv);
    }
    if (rc)
        return rc;
    if (optind < argc)
        return usage_error("unexpected argument '", argv[optind]);
    if (!o->r.config)
        return usage_error("-c SCENARIO.ini is required (see --help)", NULL);
    if (!o->r.n_policies)
        return usage_error("--policies A,B,... is required (see --help)", NULL);
    return CLI_OK;
}

static void free_opts(capacity_opts *o) { cli_runs_fini(&o->r); }

int cmd_capacity(int argc, char **argv)
{
    capacity_opts o = {
        .r = {.cmd = "capacity", .progress = 1},
        .search = {.sla_miss = 0.09, .tol = 0.02, .max_probes = 12, .min_load = 1.0 / 64,
                   .max_load = 64},
    };
    char *cmdline = cli_join_args(argc, argv); /* as given, before getopt permutes argv */
    int rc = parse_opts(&o, argc, argv);
    if (rc) {
        free_opts(&o);
        ss_free(cmdline);
        return rc < 0 ? CLI_OK : rc;
    }
    runner_capacity_opts ro = {
        .config = o.r.config, .profiles = o.r.profiles, .db = o.r.db, .name = o.r.name,
        .command = cmdline, .policy = o.r.policy, .n_policies = o.r.n_policies,
        .sets = o.r.sets, .n_sets = o.r.n_sets, .criterion = o.criterion, .tenant = o.tenant,
        .search = o.search, .n_seeds = o.r.n_seeds,
        .json = o.r.json, .progress = o.r.progress, .search_replays = o.r.search_replays,
        .keep = o.r.keep,
        .full_probes = o.full_probes, .jobs = o.jobs ? o.jobs : default_jobs(),
        .check_files = cli_runs_files,
    };
    ss_errbuf eb = {""};
    rc = cmdline ? runner_capacity(&ro, cli_out(), &eb) : ss_err(&eb, SS_ENOMEM, "out of memory");
    if (rc)
        fprintf(cli_err(), "slicesim: capacity: %s\n", eb.msg);
    ss_free(cmdline);
    free_opts(&o);
    return cli_status_of(rc);
}
