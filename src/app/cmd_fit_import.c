/* `slicesim fit import`: the options and --help of turning benchmark logs into the directory
 * `slicesim fit DIR` reads (calib/fit_import.h reads the logs and writes it). */
#include "app/cli.h"

#include "calib/fit_import.h"
#include "core/ss_parse.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
        "usage: slicesim fit import --from FORMAT FILE... -o DIR --gpu GPU [OPTIONS]\n"
        "\n"
        "Turn serving-benchmark logs into a fit directory (runs.csv, stages.csv,\n"
        "traces/RUN.csv) that `slicesim fit DIR` reads as it is. Several FILEs are several\n"
        "stages of one run, in the order given; a stage's figures (TTFT mean and p90, E2E\n"
        "mean and p90, rate) come from its requests that succeeded (or the log's own stage\n"
        "summary), every request sent goes into the trace. DIR must not exist (or be an\n"
        "empty folder): it is written whole under a temporary name beside it, then renamed.\n"
        "\n"
        "Formats (--from):\n"
        "  vllm-bench      the JSON of `vllm bench serve` / benchmark_serving.py with\n"
        "                  --save-result --save-detailed (input_lens, output_lens, ttfts,\n"
        "                  latencies or itls, errors, start_times; request_rate, burstiness,\n"
        "                  duration, model_id). One file per stage; without start_times the\n"
        "                  send times are generated as vLLM's client draws them (Poisson at\n"
        "                  request_rate, gamma with burstiness, all at once for inf) from a\n"
        "                  fixed seed: an assumption, said on stderr. A stage starts when the\n"
        "                  previous one ended (its duration, or its last response).\n"
        "  inference-perf  kubernetes-sigs/inference-perf reports: stage_N_lifecycle_metrics\n"
        "                  .json per stage (figures) and per_request_lifecycle_metrics.json\n"
        "                  (send times and tokens for the trace; required). The first\n"
        "                  load_summary.count requests sent are stage 0, the next stage 1, ...\n"
        "  requests-csv    a CSV with a header: arrival_s (or send_s), prompt_tokens,\n"
        "                  output_tokens, ttft_ms, e2e_ms; optional stage (integer, default 0;\n"
        "                  one file only) and ok (1/0, default 1; ttft_ms and e2e_ms may be\n"
        "                  empty where 0). Several files: file K is stage K, its times from\n"
        "                  its first send, starting when the previous file's last request\n"
        "                  ended.\n"
        "\n"
        "  --from FORMAT                 vllm-bench | inference-perf | requests-csv\n"
        "  -o, --out DIR                 the fit directory to create\n"
        "  --model NAME                  catalog model (default: the log's model_id, matched\n"
        "                                by its last part in lower case, without -hf,\n"
        "                                -instruct, -chat or a meta- prefix; required when\n"
        "                                the log names none the catalog has)\n"
        "  --gpu NAME                    catalog GPU that served the run (required)\n"
        "  --tp N                        tensor parallelism (default 1)\n"
        "  --max-num-seqs N              default: vLLM's for an API server, 1024 on a GPU\n"
        "                                of 70 GiB or more other than an A100, else 256\n"
        "  --max-num-batched-tokens N    default: vLLM's, 8192 on such a GPU, else 2048\n"
        "  --max-model-len N             default: the model's context window (vLLM's)\n"
        "  --gpu-memory-utilization X    default 0.9 (vLLM's)\n"
        "  --run NAME                    run name (default: the first file's name without\n"
        "                                its extension, in [a-z0-9._-])\n"
        "  --profiles DIR                catalog directory (default: ./profiles or the\n"
        "                                source tree's)\n"
        "  -h, --help                    this help\n"
        "\n"
        "The run's output_len is the mean output tokens of the requests that succeeded; a\n"
        "failed request without a count is given it in the trace. Then:\n"
        "  slicesim fit DIR --evaluate\n"
        "\n"
        "Exit status: 0 success, 1 a failure (I/O), 2 bad input or usage (each error one\n"
        "line: FILE:LINE: field: what, or FILE: field: what for JSON).\n");
}

enum { OPT_FROM = 256, OPT_MODEL, OPT_GPU, OPT_TP, OPT_MNS, OPT_MBT, OPT_MML, OPT_GMU,
       OPT_RUN, OPT_PROFILES };

static const struct option long_opts[] = {
    {"from", required_argument, NULL, OPT_FROM},
    {"out", required_argument, NULL, 'o'},
    {"model", required_argument, NULL, OPT_MODEL},
    {"gpu", required_argument, NULL, OPT_GPU},
    {"tp", required_argument, NULL, OPT_TP},
    {"max-num-seqs", required_argument, NULL, OPT_MNS},
    {"max-num-batched-tokens", required_argument, NULL, OPT_MBT},
    {"max-model-len", required_argument, NULL, OPT_MML},
    {"gpu-memory-utilization", required_argument, NULL, OPT_GMU},
    {"run", required_argument, NULL, OPT_RUN},
    {"profiles", required_argument, NULL, OPT_PROFILES},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int parse_u32(const char *opt, const char *arg, long lo, uint32_t *out)
{
    long v;
    int rc = cli_parse_long(opt, arg, lo, 10000000, &v);
    if (!rc)
        *out = (uint32_t)v;
    return rc;
}

static int parse_one(calib_import_opts *o, int c, const char *arg)
{
    switch (c) {
    case OPT_FROM:
        if (!calib_import_format_known(arg))
            return cli_usage_error("fit import", "--from: unknown format '%.60s' (known: "
                                   "vllm-bench, inference-perf, requests-csv)", arg);
        o->from = arg;
        return CLI_OK;
    case 'o': o->out = arg; return CLI_OK;
    case OPT_MODEL: o->model = arg; return CLI_OK;
    case OPT_GPU: o->gpu = arg; return CLI_OK;
    case OPT_RUN: o->run = arg; return CLI_OK;
    case OPT_PROFILES: o->profiles = arg; return CLI_OK;
    case OPT_TP: return parse_u32("--tp", arg, 1, &o->tp);
    case OPT_MNS: return parse_u32("--max-num-seqs", arg, 1, &o->max_num_seqs);
    case OPT_MBT: return parse_u32("--max-num-batched-tokens", arg, 1,
                                   &o->max_num_batched_tokens);
    case OPT_MML: return parse_u32("--max-model-len", arg, 1, &o->max_model_len);
    case OPT_GMU:
        if (ss_parse_doublez(arg, &o->gpu_mem_util) || !(o->gpu_mem_util > 0) ||
            o->gpu_mem_util > 1)
            return cli_usage_error("fit import", "--gpu-memory-utilization: expected a number "
                                   "in (0, 1], got '%.60s'", arg);
        return CLI_OK;
    default: return CLI_EUSAGE;
    }
}

/* argv[0] is "import". */
static int parse_opts(calib_import_opts *o, int argc, char **argv)
{
    optind = 1;
    opterr = 0;
    if (cli_check_long_options("fit import", argc, argv, "ho:", long_opts))
        return CLI_EUSAGE;
    int c;
    while ((c = getopt_long(argc, argv, "ho:", long_opts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return -1;
        }
        if (c == '?')
            return cli_usage_error("fit import", "unknown or incomplete option '%s' (see "
                                   "--help)", argv[optind - 1]);
        int rc = parse_one(o, c, optarg);
        if (rc)
            return rc;
    }
    o->files = argv + optind;
    o->n_files = (size_t)(argc - optind);
    if (!o->from)
        return cli_usage_error("fit import", "--from: required (vllm-bench, inference-perf "
                               "or requests-csv)");
    if (!o->n_files)
        return cli_usage_error("fit import", "expected the log files (see --help)");
    if (!o->out)
        return cli_usage_error("fit import", "-o: required: the fit directory to create");
    return CLI_OK;
}

int cmd_fit_import(int argc, char **argv)
{
    calib_import_opts o = {.tp = 1, .gpu_mem_util = 0.9};
    int rc = parse_opts(&o, argc, argv);
    if (rc)
        return rc < 0 ? CLI_OK : rc;
    ss_errbuf eb = {""};
    rc = calib_fit_import(&o, stderr, &eb);
    if (rc)
        fprintf(stderr, "slicesim: fit import: %s\n", eb.msg);
    return cli_status_of(rc);
}
