/* `slicesim calibrate`: the options and --help of measuring one model's operators on a GPU
 * over a grid of shapes into a profile table (calib/calibrate.h does it). */
#include "app/cli.h"

#include "calib/calibrate.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

/* The options: what calib_calibrate takes, and --help. */
typedef struct cal_opts {
    calib_calibrate_opts c;
    int help;
} cal_opts;

static void usage(FILE *f)
{
    fputs("usage: slicesim calibrate --model NAME --tp N [--gpu-index I] [--gpu GPU]\n"
          "                          [--grid quick|full] [-o DIR] [options]\n\n"
          "Measure a model's decoder-layer operators on a GPU (one TP rank's shard) over a grid\n"
          "of shapes and write them as a profile table for `slicesim replay --cost profile|auto`\n"
          "(format: profiles/PROFILE-FORMAT.md). Rows are appended to TABLE.partial as they are\n"
          "measured: run the same command again to resume after an interruption.\n\n"
          "  --model NAME      catalog model (slicesim list models)\n"
          "  --tp N            tensor-parallel degree whose per-GPU shard is measured (default 1)\n"
          "  --gpu-index I     CUDA device to use (default 0)\n"
          "  --gpu GPU         catalog GPU the table is for (default: from the device's name;\n"
          "                    required with --backend sim)\n"
          "  --grid G          quick (a few minutes) or full (peers' density; default quick)\n"
          "  -o DIR            output directory (default: <profiles>/<gpu>/); the table is\n"
          "                    DIR/<model>-tp<N>.csv\n"
          "  --backend B       cuda (a real GPU; default when built with CUDA) or sim (the\n"
          "                    roofline plays the GPU: shows what the tool does without one)\n"
          "  --ops LIST        only these operators, comma-separated (default: all the model has)\n"
          "  --reps N          timed repetitions per point (default 20); the table keeps the\n"
          "                    median, minimum and 90th percentile\n"
          "  --warmup N        untimed runs before them (default 3)\n"
          "  --l2 cold|hot     flush the L2 cache before every timed run (default cold: weights\n"
          "                    stream from HBM as in a real forward pass) or not\n"
          "  --limit-points N  measure at most N new points in this run, then stop (resume later)\n"
          "  --restart         discard a partial table measured with other settings\n"
          "  --selftest        only check every kernel against the CPU reference, then exit\n"
          "  --no-selftest     skip that check before measuring\n"
          "  --profiles DIR    catalog directory (default: $SLICESIM_PROFILES, else ./profiles,\n"
          "                    else the source tree's profiles/)\n"
          "  -q, --quiet       no progress line\n"
          "  -h, --help        this help\n\n"
          "Collectives (all_reduce) need several GPUs and are not measured; pp_send is measured\n"
          "as a peer copy when a second GPU is visible. Clocks, temperature and power are read\n"
          "before and after and written into the table's comments; a throttled run is flagged.\n"
          "Exit status: 0 done, 1 no GPU / a device or file error / stopped by --limit-points,\n"
          "2 bad usage (unknown model, TP that does not divide the model).\n",
          f);
}


static int parse_args(int argc, char **argv, cal_opts *oo)
{
    static const struct option longopts[] = {
        {"model", required_argument, NULL, 'm'},   {"tp", required_argument, NULL, 't'},
        {"gpu-index", required_argument, NULL, 'i'}, {"gpu", required_argument, NULL, 'g'},
        {"grid", required_argument, NULL, 'G'},    {"backend", required_argument, NULL, 'b'},
        {"ops", required_argument, NULL, 'O'},     {"reps", required_argument, NULL, 'r'},
        {"warmup", required_argument, NULL, 'w'},  {"l2", required_argument, NULL, 'L'},
        {"limit-points", required_argument, NULL, 'P'}, {"restart", no_argument, NULL, 'R'},
        {"selftest", no_argument, NULL, 'S'},      {"no-selftest", no_argument, NULL, 'N'},
        {"profiles", required_argument, NULL, 'p'}, {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    *oo = (cal_opts){.c = {.tp = 1, .reps = 20, .warmup = 3, .l2_cold = 1, .grid = "quick",
                           .backend = "cuda", .limit_points = -1}};
    calib_calibrate_opts *o = &oo->c;
    opterr = 0;
    optind = 0;
    long v;
    if (cli_check_long_options("calibrate", argc, argv, ":ho:q", longopts))
        return CLI_EUSAGE;
    for (int ch; (ch = getopt_long(argc, argv, ":ho:q", longopts, NULL)) != -1;) {
        int st = CLI_OK;
        switch (ch) {
        case 'm': o->model = optarg; break;
        case 't': st = cli_parse_long("--tp", optarg, 1, 64, &v); o->tp = (unsigned)v; break;
        case 'i': st = cli_parse_long("--gpu-index", optarg, 0, 1023, &v); o->gpu_index = (int)v; break;
        case 'g': o->gpu = optarg; break;
        case 'G': o->grid = optarg; break;
        case 'b': o->backend = optarg; break;
        case 'O': o->ops = optarg; break;
        case 'r':
            st = cli_parse_long("--reps", optarg, 1, CALIB_CALIBRATE_MAX_REPS, &v);
            o->reps = (int)v;
            break;
        case 'w': st = cli_parse_long("--warmup", optarg, 0, 1000, &v); o->warmup = (int)v; break;
        case 'P': st = cli_parse_long("--limit-points", optarg, 0, 100000000, &o->limit_points); break;
        case 'L':
            if (!strcmp(optarg, "cold") || !strcmp(optarg, "hot"))
                o->l2_cold = !strcmp(optarg, "cold");
            else {
                fprintf(stderr, "slicesim: --l2: expected cold or hot, got '%s'\n", optarg);
                st = CLI_EUSAGE;
            }
            break;
        case 'R': o->restart = 1; break;
        case 'S': o->selftest_only = 1; break;
        case 'N': o->no_selftest = 1; break;
        case 'p': o->profiles = optarg; break;
        case 'o': o->out = optarg; break;
        case 'q': o->quiet = 1; break;
        case 'h': oo->help = 1; break;
        default:
            fprintf(stderr, "slicesim: calibrate: bad option or missing argument '%s' (see "
                            "--help)\n", argv[optind - 1]);
            return CLI_EUSAGE;
        }
        if (st)
            return st;
    }
    if (optind < argc) {
        fprintf(stderr, "slicesim: calibrate: unexpected argument '%s' (see --help)\n",
                argv[optind]);
        return CLI_EUSAGE;
    }
    if (oo->help)
        return CLI_OK;
    if (strcmp(o->backend, "cuda") && strcmp(o->backend, "sim")) {
        fprintf(stderr, "slicesim: --backend: expected cuda or sim, got '%s'\n", o->backend);
        return CLI_EUSAGE;
    }
    if (strcmp(o->grid, "quick") && strcmp(o->grid, "full")) {
        fprintf(stderr, "slicesim: --grid: expected quick or full, got '%s'\n", o->grid);
        return CLI_EUSAGE;
    }
    if (!o->model && !o->selftest_only) {
        fprintf(stderr, "slicesim: --model: required (slicesim list models)\n");
        return CLI_EUSAGE;
    }
    return CLI_OK;
}

/* Check --ops names: 0 or CLI_EUSAGE after one line. */
static int check_ops(const char *list)
{
    for (const char *s = list; s && *s;) {
        const char *e = strchr(s, ',');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (!calib_calibrate_op_known(s, n)) {
            fprintf(stderr, "slicesim: --ops: unknown or unmeasurable operator '%.*s' (known: "
                            "embed, norm, qkv, rope, attn_prefill, attn_decode, o_proj, "
                            "residual, moe_router, mlp_up, act, mlp_down, lm_head, pp_send)\n",
                    (int)n, s);
            return CLI_EUSAGE;
        }
        s += n + (e ? 1 : 0);
    }
    return CLI_OK;
}

int cmd_calibrate(int argc, char **argv)
{
    cal_opts o;
    int st = parse_args(argc, argv, &o);
    if (st || o.help) {
        if (o.help)
            usage(stdout);
        return st;
    }
    if ((st = check_ops(o.c.ops)))
        return st;
    ss_errbuf eb = {""};
    int rc = calib_calibrate(&o.c, stdout, &eb);
    if (rc && eb.msg[0])
        fprintf(stderr, "slicesim: %s\n", eb.msg);
    return cli_status_of(rc);
}
