/* `slicesim replay`: replay a trace on a simulated cluster, print a table or JSON, store the
 * run in SQLite. Owns option parsing, the trace source adapter (--limit, --rate-scale), the
 * store sink and the progress line; the simulation itself is gsim/. */
#include "cli.h"
#include "report.h"

#include "catalog/catalog.h"
#include "core/ss_alloc.h"
#include "core/ss_log.h"
#include "core/ss_parse.h"
#include "core/ss_strbuf.h"
#include "gsim/gsim.h"
#include "metrics/store.h"
#include "timeline/timeline.h"
#include "trace/trace.h"

#include "config.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_TRACE "traces/azure-conv-synth.csv"
#define DEFAULT_DB "results/slicesim.db"

typedef struct replay_opts {
    const char *trace, *format, *model, *gpu, *db, *profiles;
    const char *timeline;  /* Chrome trace-event JSON output, NULL = none */
    tl_opts tl;
    uint64_t limit;
    double rate_scale;
    int json, progress, spread;
    gsim_config sim;
} replay_opts;

static void usage(FILE *f)
{
    fprintf(f,
        "usage: slicesim replay [OPTIONS]\n"
        "\n"
        "Replay a request trace on a simulated GPU cluster (one model served by --replicas\n"
        "containers of --tp GPUs each) and report throughput and TTFT/TBT/E2E latency.\n"
        "The run is stored in the SQLite results database (tables runs, requests, summary, gpus).\n"
        "\n"
        "Workload:\n"
        "  --trace FILE            trace to replay (default: " DEFAULT_TRACE ")\n"
        "  --trace-format F        auto|native|azure|vidur|burstgpt|mooncake (default auto:\n"
        "                          detected from the header or the first line)\n"
        "  --trace-spread          spread requests that share a (quantised) timestamp evenly\n"
        "                          over the gap to the next one\n"
        "  --limit N               replay only the first N requests\n"
        "  --rate-scale X          multiply the arrival rate by X (inter-arrival times / X)\n"
        "Cluster:\n"
        "  --model NAME            model from the catalog (default llama-2-7b; slicesim list models)\n"
        "  --gpu NAME              GPU from the catalog (default a100-80g; slicesim list gpus)\n"
        "  --replicas N            serving replicas, each TP x PP GPUs (default 4)\n"
        "  --tp N                  tensor-parallel GPUs per pipeline stage (default 1)\n"
        "  --pp N                  pipeline stages per replica (default 1); a replica runs N\n"
        "                          micro-batches in flight, one per virtual engine, each with\n"
        "                          1/N of the KV cache, as vLLM does\n"
        "  --profiles DIR          catalog directory (default: ./profiles or the source tree's)\n"
        "Policies (README.md lists every policy and parameter):\n"
        "  --batching NAME         vllm (default) | sarathi | orca | static\n"
        "  --routing NAME          rr (round-robin, default) | lor (least outstanding requests) |\n"
        "                          random | infaas (argmax dispatch freeness)\n"
        "  --cost NAME             roofline (default) | profile | auto: measured operator tables in\n"
        "                          PROFILES/<gpu>/ (profiles/PROFILE-FORMAT.md; slicesim profile)\n"
        "  vllm, sarathi:\n"
        "  --max-num-seqs N        sequences per iteration, running included (default 256)\n"
        "  --watermark F           admission watermark, fraction of KV blocks (default 0.01;\n"
        "                          also infaas routing's)\n"
        "  --preempt MODE          recompute (default) | swap (KV over PCIe to host memory)\n"
        "  --max-preemptions N     livelock guard: reject a request preempted N times (default 32)\n"
        "  --max-num-batched-tokens N  vllm: prompt tokens per iteration (default\n"
        "                          max(max-model-len, 2048))\n"
        "  --token-budget N        sarathi: query tokens per iteration (default 512)\n"
        "  orca, static:\n"
        "  --max-batch N           sequences per iteration / batch (orca 128, static 32)\n"
        "  --reserve MODE          orca: KV reserved at admission: max (up to max-model-len,\n"
        "                          default) | oracle (the real output) | pow2\n"
        "  --shrink                static: decode cost follows live members only\n"
        "  --no-pad-prompts        static: prefill without padding prompts to the longest\n"
        "  --param KEY=VALUE       any policy parameter by name (repeatable)\n"
        "Engine:\n"
        "  --max-model-len N       longest prompt+output accepted (default 16384, independent of\n"
        "                          the model's trained context so that traces recorded on other\n"
        "                          models replay whole; longer outputs are truncated, longer\n"
        "                          prompts rejected, as vLLM does)\n"
        "  --gpu-mem-util F        fraction of GPU memory the engine uses (default 0.9)\n"
        "  --block-size N          tokens per KV block (default 16)\n"
        "  --swap-space GIB        host memory per GPU for preemption by swap (default 4)\n"
        "Run:\n"
        "  --seed N                seed of every random stream (default 1)\n"
        "  --db FILE               results database (default " DEFAULT_DB "; 'none' to skip)\n"
        "  --json                  print one JSON object instead of the table\n"
        "  --check                 verify the cluster's invariants after every event (slow)\n"
        "  --timeline FILE.json    write what every GPU did as Chrome trace-event JSON (Perfetto)\n"
        "  --timeline-window S:E   only events between S and E seconds of simulated time\n"
        "  --timeline-ops          also write each iteration's operators (large; use a window)\n"
        "  --no-progress           no progress line on a terminal\n"
        "  -h, --help              this help\n"
        "\n"
        "Exit status: 0 success, 1 the run failed (I/O, database), 2 bad input or usage.\n");
}

/* ---- options ---------------------------------------------------------------------------- */

enum {
    OPT_TRACE = 256, OPT_FORMAT, OPT_LIMIT, OPT_RATE, OPT_MODEL, OPT_GPU, OPT_REPLICAS, OPT_TP, OPT_PP,
    OPT_PROFILES, OPT_BATCHING, OPT_ROUTING, OPT_COST, OPT_SWAP, OPT_PARAM, OPT_MAXLEN, OPT_UTIL,
    OPT_BLOCK, OPT_SEED, OPT_DB, OPT_JSON, OPT_CHECK, OPT_NOPROG, OPT_TIMELINE, OPT_TL_WINDOW,
    OPT_TL_OPS, OPT_SPREAD,
    OPT_POLICY_PARAM = 512, /* + index into policy_opts */
};

/* Options that set the policy parameter of the same meaning; a flag sets flag_value. */
typedef struct policy_opt {
    const char *key;        /* parameter name */
    const char *flag_value; /* NULL: the option takes an argument */
} policy_opt;

static const policy_opt policy_opts[] = {
    {"max_num_seqs", NULL}, {"max_num_batched_tokens", NULL}, {"watermark", NULL},
    {"preempt", NULL},      {"max_preemptions", NULL},        {"token_budget", NULL},
    {"max_batch", NULL},    {"reserve", NULL},                {"shrink", "true"},
    {"pad_prompts", "false"},
};
#define N_POLICY_OPTS (sizeof policy_opts / sizeof *policy_opts)

static const struct option long_opts[] = {
    {"trace", required_argument, NULL, OPT_TRACE},
    {"trace-format", required_argument, NULL, OPT_FORMAT},
    {"trace-spread", no_argument, NULL, OPT_SPREAD},
    {"limit", required_argument, NULL, OPT_LIMIT},
    {"rate-scale", required_argument, NULL, OPT_RATE},
    {"model", required_argument, NULL, OPT_MODEL},
    {"gpu", required_argument, NULL, OPT_GPU},
    {"replicas", required_argument, NULL, OPT_REPLICAS},
    {"tp", required_argument, NULL, OPT_TP},
    {"pp", required_argument, NULL, OPT_PP},
    {"profiles", required_argument, NULL, OPT_PROFILES},
    {"batching", required_argument, NULL, OPT_BATCHING},
    {"routing", required_argument, NULL, OPT_ROUTING},
    {"cost", required_argument, NULL, OPT_COST},
    {"swap-space", required_argument, NULL, OPT_SWAP},
    {"max-num-seqs", required_argument, NULL, OPT_POLICY_PARAM + 0},
    {"max-num-batched-tokens", required_argument, NULL, OPT_POLICY_PARAM + 1},
    {"watermark", required_argument, NULL, OPT_POLICY_PARAM + 2},
    {"preempt", required_argument, NULL, OPT_POLICY_PARAM + 3},
    {"max-preemptions", required_argument, NULL, OPT_POLICY_PARAM + 4},
    {"token-budget", required_argument, NULL, OPT_POLICY_PARAM + 5},
    {"max-batch", required_argument, NULL, OPT_POLICY_PARAM + 6},
    {"reserve", required_argument, NULL, OPT_POLICY_PARAM + 7},
    {"shrink", no_argument, NULL, OPT_POLICY_PARAM + 8},
    {"no-pad-prompts", no_argument, NULL, OPT_POLICY_PARAM + 9},
    {"param", required_argument, NULL, OPT_PARAM},
    {"max-model-len", required_argument, NULL, OPT_MAXLEN},
    {"gpu-mem-util", required_argument, NULL, OPT_UTIL},
    {"block-size", required_argument, NULL, OPT_BLOCK},
    {"seed", required_argument, NULL, OPT_SEED},
    {"db", required_argument, NULL, OPT_DB},
    {"json", no_argument, NULL, OPT_JSON},
    {"check", no_argument, NULL, OPT_CHECK},
    {"no-progress", no_argument, NULL, OPT_NOPROG},
    {"timeline", required_argument, NULL, OPT_TIMELINE},
    {"timeline-window", required_argument, NULL, OPT_TL_WINDOW},
    {"timeline-ops", no_argument, NULL, OPT_TL_OPS},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int opt_u64(const char *name, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    int64_t v;
    if (ss_parse_i64z(s, &v) || v < 0 || (uint64_t)v < min || (uint64_t)v > max) {
        fprintf(stderr, "slicesim: replay: --%s: expected an integer from %llu to %llu, got '%s'\n",
                name, (unsigned long long)min, (unsigned long long)max, s);
        return CLI_EUSAGE;
    }
    *out = (uint64_t)v;
    return CLI_OK;
}

static int opt_double(const char *name, const char *s, double *out)
{
    if (ss_parse_doublez(s, out) || !(*out > 0)) {
        fprintf(stderr, "slicesim: replay: --%s: expected a positive number, got '%s'\n", name, s);
        return CLI_EUSAGE;
    }
    return CLI_OK;
}

/* Options that become policy parameters by name. */
static int opt_param(ss_params *p, const char *key, const char *val)
{
    if (ss_params_set(p, key, val)) {
        fprintf(stderr, "slicesim: replay: out of memory\n");
        return CLI_EFAIL;
    }
    return CLI_OK;
}

static int parse_one(replay_opts *o, int c, const char *arg)
{
    uint64_t u = 0;
    int rc = CLI_OK;
    ss_errbuf eb = {{0}};
    switch (c) {
    case OPT_TRACE: o->trace = arg; break;
    case OPT_FORMAT: o->format = arg; break;
    case OPT_SPREAD: o->spread = 1; break;
    case OPT_LIMIT: rc = opt_u64("limit", arg, 1, UINT64_MAX / 2, &o->limit); break;
    case OPT_RATE: rc = opt_double("rate-scale", arg, &o->rate_scale); break;
    case OPT_MODEL: o->model = arg; break;
    case OPT_GPU: o->gpu = arg; break;
    case OPT_REPLICAS:
        rc = opt_u64("replicas", arg, 1, 100000, &u);
        o->sim.replicas = (uint32_t)u;
        break;
    case OPT_TP:
        rc = opt_u64("tp", arg, 1, 64, &u);
        o->sim.tp = (uint32_t)u;
        break;
    case OPT_PP:
        rc = opt_u64("pp", arg, 1, 16, &u);
        o->sim.pp = (uint32_t)u;
        break;
    case OPT_PROFILES: o->profiles = arg; break;
    case OPT_BATCHING: o->sim.batching = arg; break;
    case OPT_ROUTING: o->sim.routing = arg; break;
    case OPT_COST: o->sim.cost = arg; break;
    case OPT_SWAP: {
        double gib;
        rc = opt_double("swap-space", arg, &gib);
        o->sim.swap_bytes = gib * 1073741824.0;
        break;
    }
    case OPT_PARAM:
        if (ss_params_set_kv(o->sim.params, arg, &eb)) {
            fprintf(stderr, "slicesim: replay: %s\n", eb.msg);
            rc = CLI_EUSAGE;
        }
        break;
    case OPT_MAXLEN: rc = opt_u64("max-model-len", arg, 2, 1u << 24, &o->sim.max_model_len); break;
    case OPT_UTIL:
        rc = opt_double("gpu-mem-util", arg, &o->sim.gpu_mem_util);
        break;
    case OPT_BLOCK:
        rc = opt_u64("block-size", arg, 1, 4096, &u);
        o->sim.block_tokens = (uint32_t)u;
        break;
    case OPT_SEED: rc = opt_u64("seed", arg, 0, UINT64_MAX / 2, &o->sim.seed); break;
    case OPT_DB: o->db = arg; break;
    case OPT_JSON: o->json = 1; break;
    case OPT_CHECK: o->sim.check = 1; break;
    case OPT_NOPROG: o->progress = 0; break;
    case OPT_TIMELINE: o->timeline = arg; break;
    case OPT_TL_WINDOW:
        if (tl_parse_window(arg, &o->tl.start, &o->tl.end, &eb)) {
            fprintf(stderr, "slicesim: replay: %s\n", eb.msg);
            rc = CLI_EUSAGE;
        }
        break;
    case OPT_TL_OPS: o->tl.ops = 1; break;
    default:
        if (c >= OPT_POLICY_PARAM && c < OPT_POLICY_PARAM + (int)N_POLICY_OPTS) {
            const policy_opt *po = &policy_opts[c - OPT_POLICY_PARAM];
            rc = opt_param(o->sim.params, po->key, po->flag_value ? po->flag_value : arg);
        } else
            rc = CLI_EUSAGE;
    }
    return rc;
}

static int parse_opts(replay_opts *o, int argc, char **argv)
{
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return -1;
        }
        if (c == '?') {
            fprintf(stderr, "slicesim: replay: unknown or incomplete option '%s' (see --help)\n",
                    argv[optind - 1]);
            return CLI_EUSAGE;
        }
        int rc = parse_one(o, c, optarg);
        if (rc)
            return rc;
    }
    if (optind < argc) {
        fprintf(stderr, "slicesim: replay: unexpected argument '%s' (see --help)\n", argv[optind]);
        return CLI_EUSAGE;
    }
    return CLI_OK;
}

/* ---- trace source and store sink --------------------------------------------------------- */

typedef struct source {
    trace_reader *r;
    uint64_t limit, n;
    double rate_scale;
} source;

static int source_next(void *ud, trace_rec *out, ss_errbuf *eb)
{
    source *s = ud;
    if (s->limit && s->n >= s->limit)
        return 0;
    int rc = trace_reader_next(s->r, out, eb);
    if (rc != 1)
        return rc;
    s->n++;
    if (s->rate_scale != 1.0)
        out->arrival_ns = (ss_time)llround((double)out->arrival_ns / s->rate_scale);
    return 1;
}

typedef struct sink {
    store *st;
    trace_reader *r;
} sink;

static int sink_req(void *ud, const metrics_req *m, ss_errbuf *eb)
{
    sink *k = ud;
    const char *tenant = trace_reader_tenant_name(k->r, m->tenant);
    return store_run_request(k->st, m, tenant ? tenant : "default", eb);
}

/* ---- progress line ---------------------------------------------------------------------- */

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct progress {
    double start, last;
    int shown;
} progress;

static void on_progress(void *ud, ss_time now, uint64_t arrived, uint64_t finished,
                        uint64_t events)
{
    progress *p = ud;
    double w = wall_now();
    if (w - p->last < 0.5)
        return;
    p->last = w;
    p->shown = 1;
    fprintf(stderr, "\rslicesim: replay: simulated %.1f s | %llu arrived, %llu finished | "
                    "%.2f M events/s   ",
            ss_time_to_s(now), (unsigned long long)arrived, (unsigned long long)finished,
            (double)events / (w - p->start) / 1e6);
    fflush(stderr);
}

/* ---- the run ---------------------------------------------------------------------------- */

static char *join_args(int argc, char **argv)
{
    ss_strbuf b = {0};
    ss_strbuf_printf(&b, "slicesim");
    for (int i = 0; i < argc; i++)
        ss_strbuf_printf(&b, " %s", argv[i]);
    char *s = ss_strbuf_ok(&b) ? ss_strdup(ss_strbuf_str(&b)) : NULL;
    ss_strbuf_fini(&b);
    return s;
}

typedef struct run_ctx {
    replay_opts *o;
    catalog *cat;
    trace_reader *r;
    store *st;
    gsim *g;
    tl_writer *tl;
    char *cmdline;
    ss_errbuf eb;
} run_ctx;

static int begin_store(run_ctx *x, int argc, char **argv)
{
    ss_strbuf pj = {0};
    gsim_params_json(x->g, &pj);
    x->cmdline = join_args(argc, argv);
    store_run_info info = {
        .command = x->cmdline ? x->cmdline : "", .trace = x->o->trace,
        .trace_format = trace_reader_format(x->r), .model = x->o->model, .gpu = x->o->gpu,
        .replicas = x->o->sim.replicas, .tp = x->o->sim.tp, .batching = x->o->sim.batching,
        .routing = gsim_routing_name(x->g), .cost_model = x->o->sim.cost,
        .cluster_policy = gsim_cluster_name(x->g), .pp = x->o->sim.pp,
        .params_json = ss_strbuf_str(&pj), .seed = x->o->sim.seed,
        .rate_scale = x->o->rate_scale, .limit = x->o->limit,
    };
    int64_t run_id;
    int rc = ss_strbuf_ok(&pj) ? store_open(&x->st, x->o->db, &x->eb)
                               : ss_err(&x->eb, SS_ENOMEM, "out of memory");
    if (!rc)
        rc = store_run_begin(x->st, &info, &run_id, &x->eb);
    ss_strbuf_fini(&pj);
    return rc;
}

static int setup(run_ctx *x)
{
    replay_opts *o = x->o;
    o->sim.profiles_dir = catalog_default_dir(o->profiles);
    int rc = catalog_load(&x->cat, o->sim.profiles_dir, &x->eb);
    if (!rc)
        rc = catalog_model_find(x->cat, o->model, &o->sim.model, &x->eb);
    if (!rc)
        rc = catalog_gpu_find(x->cat, o->gpu, &o->sim.gpu, &x->eb);
    if (!rc)
        rc = cli_open_trace(&x->r, o->trace, o->format, &x->eb);
    if (!rc && o->spread && trace_reader_set_spread(x->r, 1))
        rc = ss_err(&x->eb, SS_EINVAL, "--trace-spread: not available for this trace");
    if (!rc)
        rc = gsim_create(&x->g, &o->sim, &x->eb);
    if (!rc && o->timeline && (rc = tl_open(&x->tl, o->timeline, &o->tl, &x->eb)) == SS_OK)
        tl_attach(x->tl, x->g);
    return rc;
}

static int simulate(run_ctx *x, double *wall_s)
{
    source src = {x->r, x->o->limit, 0, x->o->rate_scale};
    sink snk = {x->st, x->r};
    progress prog = {wall_now(), wall_now(), 0};
    if (x->o->progress && isatty(STDERR_FILENO))
        gsim_set_progress(x->g, on_progress, &prog);
    double t0 = wall_now();
    int rc = gsim_run(x->g, source_next, &src, x->st ? sink_req : NULL, &snk, &x->eb);
    *wall_s = wall_now() - t0;
    if (prog.shown)
        fprintf(stderr, "\r%*s\r", 100, "");
    return rc;
}

static report_run report_of(const run_ctx *x, double wall_s)
{
    const replay_opts *o = x->o;
    report_run r = {
        .source = o->trace, .format = trace_reader_format(x->r), .gpu = o->gpu,
        .batching = o->sim.batching, .routing = gsim_routing_name(x->g),
        .cluster = gsim_cluster_name(x->g), .cost = o->sim.cost,
        .seed = o->sim.seed, .skipped = trace_reader_n_skipped(x->r),
        .warmup_s = ss_time_to_s(o->sim.warmup), .wall_s = wall_s,
    };
    return r;
}

int cmd_replay(int argc, char **argv)
{
    replay_opts o = {.trace = DEFAULT_TRACE, .format = "auto", .model = "llama-2-7b",
                     .gpu = "a100-80g", .db = DEFAULT_DB, .rate_scale = 1.0, .progress = 1,
                     .tl = {.start = 0, .end = SS_TIME_MAX}};
    gsim_config_defaults(&o.sim);
    o.sim.replicas = 4;
    if (ss_params_create(&o.sim.params)) {
        fprintf(stderr, "slicesim: replay: out of memory\n");
        return CLI_EFAIL;
    }
    run_ctx x = {.o = &o};
    int rc = parse_opts(&o, argc, argv);
    if (rc) {
        ss_params_destroy(&o.sim.params);
        return rc < 0 ? CLI_OK : rc;
    }
    if (access(o.trace, R_OK) != 0 && !strcmp(o.trace, DEFAULT_TRACE))
        o.trace = SS_SOURCE_ROOT "/" DEFAULT_TRACE;
    double wall_s = 0;
    metrics_summary m;
    rc = setup(&x);
    if (!rc && strcmp(o.db, "none"))
        rc = begin_store(&x, argc, argv);
    if (!rc)
        rc = simulate(&x, &wall_s);
    if (!rc)
        metrics_summarize(gsim_metrics(x.g), gsim_end_time(x.g), &m);
    if (!rc && x.st)
        rc = report_store(x.st, x.g, &m, wall_s, trace_reader_digest(x.r), &x.eb);
    uint64_t tl_n = x.tl ? tl_events(x.tl) : 0;
    if (!rc && x.tl)
        rc = tl_close(&x.tl, &x.eb);
    report_run rep = rc ? (report_run){0} : report_of(&x, wall_s);
    if (!rc && o.json)
        report_json(stdout, &rep, x.g, &m);
    else if (!rc) {
        report_table(stdout, &rep, x.g, &m);
        if (x.st)
            printf("  results: %s\n", store_path(x.st));
        if (o.timeline)
            printf("  timeline: %s (%llu events)\n", o.timeline, (unsigned long long)tl_n);
    } else
        fprintf(stderr, "slicesim: replay: %s\n", x.eb.msg);
    tl_abort(&x.tl);
    store_close(&x.st);
    gsim_destroy(&x.g);
    trace_reader_close(&x.r);
    catalog_destroy(&x.cat);
    ss_params_destroy(&o.sim.params);
    ss_free(x.cmdline);
    return cli_status_of(rc);
}
