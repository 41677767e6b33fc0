/* `slicesim validate`: the options and --help of checking the simulator's cost model against a
 * GPU (calib/validate.h replays, executes, compares and stores). */
#include "app/cli.h"

#include "calib/validate.h"

#include "core/ss_alloc.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

/* The options: what calib_validate takes, --help, and the --set list. */
typedef struct val_opts {
    calib_validate_opts c;
    calib_colocate_opts co;   /* --colocate's (co.mode set: that instead of a validation) */
    int help;
    const char **sets;        /* --set values (borrowed from argv), in order */
    size_t n_sets, cap_sets;
} val_opts;

static void usage(FILE *f)
{
    fputs("usage: slicesim validate [--trace FILE] --model NAME [--gpu GPU] [--tp N]\n"
          "                         [--limit N] [--iters N] [options]\n\n"
          "Check the simulator's cost model against a GPU: replay the first --limit requests of\n"
          "--trace on one simulated container, record the batch of each of the first --iters\n"
          "iterations, run every iteration's operators on the GPU in execution order (embedding,\n"
          "each layer's norm, QKV, rotary, attention, output projection, residual, MLP, then the\n"
          "final norm and LM head), and report predicted vs measured device time per operator\n"
          "kind and per iteration: mean absolute percentage error (MAPE), bias, worst cases.\n\n"
          "  --trace FILE      trace (default: " CALIB_VALIDATE_DEFAULT_TRACE ")\n"
          "  --model NAME      catalog model (required)\n"
          "  --gpu GPU         catalog GPU whose cost model predicts (default: from the device's\n"
          "                    name; required with --backend sim)\n"
          "  --tp N            tensor-parallel degree; one rank's shard runs (default 1)\n"
          "  --limit N         requests replayed (default 64)\n"
          "  --iters N         iterations executed and compared (default 200)\n"
          "  --rate-scale X    arrival rate multiplier: larger batches (default 1)\n"
          "  --reps N          executions of each iteration; the median per operator is kept\n"
          "                    (default 3, at most 64)\n"
          "  --batching B      vllm (default), sarathi, orca, static\n"
          "  --cost C          cost model under test: roofline (default), profile, auto\n"
          "  --set K=V         any scenario key (experiments/README.md), e.g. engine.block_size=32;\n"
          "                    the simulated tenant is called 'validate'\n"
          "  --backend B       cuda (default when built with CUDA) or sim (the roofline plays\n"
          "                    the GPU; with --cost roofline every error is 0)\n"
          "  --gpu-index I     CUDA device (default 0)\n"
          "  --l2 hot|cold     leave the L2 cache as the previous operator left it (default hot,\n"
          "                    as in a real forward pass) or flush it before every operator\n"
          "  --db FILE         results database (default results/slicesim.db; none: no store)\n"
          "  --name LABEL      label stored with the validation\n"
          "  --profiles DIR    catalog directory (and profile tables for --cost profile)\n"
          "  --json            print the result as JSON\n"
          "  -q, --quiet       no progress line\n"
          "  -h, --help        this help\n\n"
          "Co-location (docs/guide/gpu-sharing.md): two processes' kernels on one GPU, each\n"
          "alone and then together, against the simulator's sharing model:\n"
          "  --colocate MODE   mps or time: a prefill-shaped GEMM (--model's gate+up projection)\n"
          "                    in one process beside a decode-shaped one in another, under MPS\n"
          "                    (the MPS control daemon must be running) or time slicing; prints\n"
          "                    each one's slow-down together and the model's (--gpu required)\n"
          "  --sm-share F      MPS: each process's share of the SMs (default 0.5)\n"
          "  --mps-interference X  the model's MPS slow-down beyond bandwidth (default 0)\n"
          "  --prefill-tokens N, --decode-tokens N  the two GEMMs' tokens (default 2048, 32)\n"
          "  --seconds S       wall time of each run, alone and together (default 2)\n\n"
          "Not executed (and left out of both sides): all_reduce (needs a TP group of GPUs) and\n"
          "the engine's host time per iteration (reported as predicted only).\n"
          "Exit status: 0 done, 1 no GPU / a device or database error, 2 bad usage or input.\n",
          f);
}

static int parse_args(int argc, char **argv, val_opts *vo)
{
    static const struct option longopts[] = {
        {"trace", required_argument, NULL, 'T'},   {"model", required_argument, NULL, 'm'},
        {"gpu", required_argument, NULL, 'g'},     {"tp", required_argument, NULL, 't'},
        {"limit", required_argument, NULL, 'l'},   {"iters", required_argument, NULL, 'I'},
        {"reps", required_argument, NULL, 'r'},    {"batching", required_argument, NULL, 'B'},
        {"cost", required_argument, NULL, 'C'},    {"set", required_argument, NULL, 's'},
        {"backend", required_argument, NULL, 'b'}, {"gpu-index", required_argument, NULL, 'i'},
        {"l2", required_argument, NULL, 'L'},      {"db", required_argument, NULL, 'd'},
        {"name", required_argument, NULL, 'n'},    {"profiles", required_argument, NULL, 'p'},
        {"json", no_argument, NULL, 'j'},          {"quiet", no_argument, NULL, 'q'},
        {"rate-scale", required_argument, NULL, 'R'},
        {"colocate", required_argument, NULL, 'c'}, {"sm-share", required_argument, NULL, 'S'},
        {"mps-interference", required_argument, NULL, 'M'},
        {"prefill-tokens", required_argument, NULL, 'P'},
        {"decode-tokens", required_argument, NULL, 'D'},
        {"seconds", required_argument, NULL, 'E'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    calib_validate_opts *o = &vo->c;
    opterr = 0;
    optind = 0;
    long v = 0;
    if (cli_check_long_options("validate", argc, argv, ":hq", longopts))
        return CLI_EUSAGE;
    for (int ch; (ch = getopt_long(argc, argv, ":hq", longopts, NULL)) != -1;) {
        int st = CLI_OK;
        switch (ch) {
        case 'T': o->trace = optarg; break;
        case 'm': o->model = optarg; break;
        case 'g': o->gpu = optarg; break;
        case 't': st = cli_parse_long("--tp", optarg, 1, 64, &v); o->tp = (unsigned)v; break;
        case 'l': st = cli_parse_long("--limit", optarg, 1, 100000000, &o->limit); break;
        case 'I': st = cli_parse_long("--iters", optarg, 1, 1000000, &o->iters); break;
        case 'r':
            st = cli_parse_long("--reps", optarg, 1, CALIB_VALIDATE_MAX_REPS, &o->reps);
            break;
        case 'B': o->batching = optarg; break;
        case 'R': o->rate_scale = optarg; break;
        case 'C': o->cost = optarg; break;
        case 's':
            if (ss_grow((void **)&vo->sets, &vo->cap_sets, vo->n_sets + 1, sizeof *vo->sets)) {
                fprintf(stderr, "slicesim: validate: out of memory\n");
                return CLI_EFAIL;
            }
            vo->sets[vo->n_sets++] = optarg;
            break;
        case 'b': o->backend = optarg; break;
        case 'i': st = cli_parse_long("--gpu-index", optarg, 0, 1023, &v); o->gpu_index = (int)v; break;
        case 'L':
            if (strcmp(optarg, "hot") && strcmp(optarg, "cold")) {
                fprintf(stderr, "slicesim: --l2: expected hot or cold, got '%s'\n", optarg);
                st = CLI_EUSAGE;
            }
            o->l2_cold = !strcmp(optarg, "cold");
            break;
        case 'd': o->db = optarg; break;
        case 'n':
            if (cli_name_opt("validate", "--name", optarg, &o->name))
                return CLI_EUSAGE;
            break;
        case 'p': o->profiles = optarg; break;
        case 'c':
            if (strcmp(optarg, "mps") && strcmp(optarg, "time")) {
                fprintf(stderr, "slicesim: --colocate: expected mps or time, got '%s'\n", optarg);
                st = CLI_EUSAGE;
            }
            vo->co.mode = optarg;
            break;
        case 'S': st = cli_parse_double("--sm-share", optarg, 0.01, 1, &vo->co.sm_share); break;
        case 'M':
            st = cli_parse_double("--mps-interference", optarg, 0, 10, &vo->co.mps_interference);
            break;
        case 'P':
            st = cli_parse_long("--prefill-tokens", optarg, 1, 65536, &v);
            vo->co.prefill_tokens = (unsigned)v;
            break;
        case 'D':
            st = cli_parse_long("--decode-tokens", optarg, 1, 4096, &v);
            vo->co.decode_tokens = (unsigned)v;
            break;
        case 'E': st = cli_parse_double("--seconds", optarg, 0.001, 3600, &vo->co.seconds); break;
        case 'j': o->json = 1; break;
        case 'q': o->quiet = 1; break;
        case 'h': vo->help = 1; break;
        default:
            fprintf(stderr, "slicesim: validate: bad option or missing argument '%s' (see "
                            "--help)\n", argv[optind - 1]);
            return CLI_EUSAGE;
        }
        if (st)
            return st;
    }
    if (optind < argc) {
        fprintf(stderr, "slicesim: validate: unexpected argument '%s' (see --help)\n",
                argv[optind]);
        return CLI_EUSAGE;
    }
    if (vo->help)
        return CLI_OK;
    if (!o->model) {
        fprintf(stderr, "slicesim: --model: required (slicesim list models)\n");
        return CLI_EUSAGE;
    }
    if (strcmp(o->backend, "cuda") && strcmp(o->backend, "sim")) {
        fprintf(stderr, "slicesim: --backend: expected cuda or sim, got '%s'\n", o->backend);
        return CLI_EUSAGE;
    }
    return CLI_OK;
}

/* --trace is read, the database written: not the same file (calib_validate_files_fn; ud is
 * the options). */
static int validate_files(void *ud, ss_errbuf *eb)
{
    const calib_validate_opts *o = ud;
    cli_files files = {0};
    int rc = cli_files_add(&files, "--trace", o->trace, 0, eb);
    if (!rc && strcmp(o->db, "none"))
        rc = cli_files_add(&files, "the results database (--db)", o->db, 1, eb);
    cli_files_fini(&files);
    return rc;
}

int cmd_validate(int argc, char **argv)
{
    val_opts o = {.c = {.tp = 1, .limit = 64, .iters = 200, .reps = 3, .backend = "cuda",
                        .db = "results/slicesim.db"}};
    o.co = (calib_colocate_opts){.sm_share = 0.5, .prefill_tokens = 2048, .decode_tokens = 32,
                                 .seconds = 2};
    int st = parse_args(argc, argv, &o);
    if (st || o.help) {
        if (o.help)
            usage(stdout);
        ss_free(o.sets);
        return st;
    }
    if (o.co.mode) { /* co-location instead of a validation */
        o.co.model = o.c.model;
        o.co.gpu = o.c.gpu;
        o.co.backend = o.c.backend;
        o.co.gpu_index = o.c.gpu_index;
        o.co.profiles = o.c.profiles;
        o.co.json = o.c.json;
        ss_free(o.sets);
        if (!o.co.gpu) {
            fprintf(stderr, "slicesim: validate: --colocate: --gpu is required (the catalog GPU "
                            "the model predicts for)\n");
            return CLI_EUSAGE;
        }
        ss_errbuf eb = {""};
        int rc = calib_colocate(&o.co, stdout, &eb);
        if (rc)
            fprintf(stderr, "slicesim: validate: %s\n", eb.msg);
        return cli_status_of(rc);
    }
    o.c.sets = o.sets;
    o.c.n_sets = o.n_sets;
    o.c.check_files = validate_files;
    o.c.check_files_ud = &o.c;
    char *command = cli_join_args(argc, argv);
    ss_errbuf eb = {""};
    int rc = calib_validate(&o.c, command ? command : "slicesim validate", stdout, &eb);
    if (rc)
        fprintf(stderr, "slicesim: validate: %s\n", eb.msg);
    ss_free(command);
    ss_free(o.sets);
    return cli_status_of(rc);
}
