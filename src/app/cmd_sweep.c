/* `slicesim sweep EXPERIMENT.ini`: the options, --help and MPI start of a grid over scenario
 * keys, policy bundles and loads, run point by point into one results database
 * (runner/sweep.c). Points already in the database are skipped, so an interrupted sweep
 * resumes; --jobs runs points in parallel processes, --shard k/N runs one slice of the grid
 * (for job arrays), `mpirun -n N slicesim sweep` runs rank r's slice into DB.rankR, and
 * `slicesim db merge` joins the shards' databases.
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
#include "runner/sweep.h"

#include "core/ss_alloc.h"
#include "core/ss_parse.h"

#include "config.h"

#if HAVE_MPI
#include <mpi.h>
#endif

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

/* The experiment file, the scenario and its traces are inputs, the database the output: none
 * may be another (runner_files_fn; ud is the experiment). */
static int sweep_files(void *ud, const scn_scenario *sc, const char *db, ss_errbuf *eb)
{
    const runner_sweep_exp *x = ud;
    cli_files files = {0};
    int rc = cli_files_add(&files, "the experiment file", x->path, 0, eb);
    if (!rc)
        rc = cli_scenario_files(&files, sc, db, eb);
    cli_files_fini(&files);
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
        "  --store WHAT    what the database keeps of each point's run: summary (no\n"
        "                  per-request rows), requests (the default) or iterations\n"
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
    return cli_usage_error("sweep", "%s%s%s", msg, arg ? arg : "", arg ? "'" : "");
}

enum { O_JOBS = 256, O_SHARD, O_DB, O_JSON, O_PROFILES, O_NOPROG, O_DRY, O_STORE };

/* What the options say: the file, and how runner_sweep runs it. */
typedef struct sweep_opts {
    const char *file;         /* EXPERIMENT.ini */
    runner_sweep_opts r;
} sweep_opts;

static int parse_opts(sweep_opts *o, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"jobs", required_argument, NULL, O_JOBS},     {"shard", required_argument, NULL, O_SHARD},
        {"db", required_argument, NULL, O_DB},         {"json", no_argument, NULL, O_JSON},
        {"profiles", required_argument, NULL, O_PROFILES},
        {"no-progress", no_argument, NULL, O_NOPROG},  {"dry-run", no_argument, NULL, O_DRY},
        {"store", required_argument, NULL, O_STORE},
        {"help", no_argument, NULL, 'h'},              {NULL, 0, NULL, 0},
    };
    opterr = 0;
    optind = 1;
    if (cli_check_long_options("sweep", argc, argv, ":h", longopts))
        return CLI_EUSAGE;
    for (int c; (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1;) {
        int64_t v;
        switch (c) {
        case 'h': usage(cli_out()); return -1;
        case O_JOBS:
            if (ss_parse_i64z(optarg, &v) || v < 1 || v > 64)
                return usage_error("--jobs: expected 1 to 64, got '", optarg);
            o->r.jobs = (int)v;
            break;
        case O_SHARD: {
            int k, n, end = 0;
            if (sscanf(optarg, "%d/%d%n", &k, &n, &end) != 2 || optarg[end] || n < 1 ||
                n > 100000 || k < 1 || k > n)
                return usage_error("--shard: expected K/N with 1 <= K <= N, got '", optarg);
            o->r.shard_k = k, o->r.shard_n = n;
            break;
        }
        case O_DB: o->r.db = optarg; break;
        case O_STORE: {
            ss_errbuf eb = {""};
            if (store_keep_parse(optarg, &o->r.keep, &eb))
                return cli_usage_error("sweep", "%s", eb.msg);
            break;
        }
        case O_JSON: o->r.json = 1; break;
        case O_PROFILES: o->r.profiles = optarg; break;
        case O_NOPROG: o->r.progress = 0; break;
        case O_DRY: o->r.dry_run = 1; break;
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
    sweep_opts o = {.r = {.jobs = 1, .shard_k = 1, .shard_n = 1, .progress = 1}};
    /* the command line as given, before getopt permutes argv */
    char *command = cli_join_args(argc, argv);
    if (!command) {
        fprintf(cli_err(), "slicesim: sweep: out of memory\n");
        return CLI_EFAIL;
    }
    int rc = parse_opts(&o, argc, argv);
    if (rc) {
        ss_free(command);
        return rc < 0 ? CLI_OK : rc;
    }
    runner_sweep_exp x = {0};
    ss_errbuf eb = {""};
    int rank = 0, size = 1, inited = 0;
    rc = runner_sweep_exp_load(&x, o.file, &eb);
    o.r.command = command;
    o.r.check_files = sweep_files;
    o.r.check_files_ud = &x;
    o.r.mpi = !rc && mpi_world(&rank, &size, &inited);
    o.r.mpi_rank = rank;
    o.r.mpi_size = size;
    if (!rc)
        rc = runner_sweep(&x, &o.r, cli_out(), &eb);
    if (rc && size > 1)
        fprintf(cli_err(), "slicesim: sweep: rank %d: %s\n", rank + 1, eb.msg);
    else if (rc)
        fprintf(cli_err(), "slicesim: sweep: %s\n", eb.msg);
#if HAVE_MPI
    if (inited)
        MPI_Finalize();
#else
    (void)inited;
#endif
    ss_free(command);
    runner_sweep_exp_free(&x);
    return cli_status_of(rc);
}
