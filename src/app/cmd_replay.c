/* `slicesim replay`: replay requests on a simulated cluster, print a table or JSON, store the
 * run in SQLite. Owns option parsing (options become scenario assignments, so a scenario file,
 * the options and --set share one set of keys), the workload source and store sink, and the
 * progress line; the simulation itself is gsim/. */
#include "app/cli.h"
#include "runner/report.h"
#include "runner/run.h"

#include "catalog/catalog.h"
#include "core/ss_alloc.h"
#include "core/ss_log.h"
#include "core/ss_parse.h"
#include "core/ss_strbuf.h"
#include "gsim/gsim.h"
#include "scenario/scenario.h"
#include "store/store.h"
#include "timeline/timeline.h"
#include "workload/workload.h"

#include "config.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_TRACE "traces/azure-conv-synth.csv"

/* Options of one tenant: they set keys of the scenario's only tenant. */
enum { T_MODEL, T_TP, T_PP, T_REPLICAS, T_TRACE, T_FORMAT, T_RATE, T_LIMIT, T_SPREAD, T_SORT,
       T_ENGINE, T__N };
static const char *const tenant_keys[T__N] = {"model", "tp", "pp", "replicas", "trace",
                                              "trace_format", "rate_scale", "limit",
                                              "trace_spread", "trace_sort", "engine"};
static const char *const tenant_opt_names[T__N] = {"--model", "--tp", "--pp", "--replicas",
                                                   "--trace", "--trace-format", "--rate-scale",
                                                   "--limit", "--trace-spread", "--sort",
                                                   "--engine"};

typedef struct replay_opts {
    const char *config;      /* -c FILE */
    const char *profiles;    /* --profiles */
    const char *timeline;    /* Chrome trace-event JSON output, NULL = none */
    tl_opts tl;
    int json, progress, check;
    store_keep keep;         /* --store */
    const char *tenant[T__N]; /* tenant options given, NULL otherwise */
    char **assign;           /* owned "SECTION.KEY=VALUE" from options, in order */
    const char **assign_opt; /* the option each came from, without its "--" (static) */
    size_t n_assign, cap_assign, cap_assign_opt;
    const char **sets;       /* --set values (borrowed from argv), in order */
    size_t n_sets, cap_sets;
} replay_opts;

static void usage(FILE *f)
{
    fprintf(f,
        "usage: slicesim replay [-c SCENARIO.ini] [--set SECTION.KEY=VALUE ...] [OPTIONS]\n"
        "\n"
        "Replay requests on a simulated GPU cluster and report throughput, TTFT/TBT/E2E latency,\n"
        "SLA violations and goodput, overall, per tenant and per tier. Without -c, one tenant\n"
        "serves --model on --replicas containers and replays --trace. With -c, a scenario file\n"
        "(experiments/README.md) describes the cluster, several tenants, their workloads, tiers\n"
        "and SLAs, and the policies; the options below override it (the tenant options only for\n"
        "a one-tenant scenario), then every --set is applied in order.\n"
        "The run is stored in the SQLite results database (runs, requests, summary, tenants,\n"
        "tiers, gpus).\n"
        "\n"
        "Scenario:\n"
        "  -c, --config FILE       scenario file (INI)\n"
        "  --set SECTION.KEY=VALUE override any scenario key, e.g. --set tenant.chat.rate_scale=2\n"
        "                          or --set policy.cluster=llumnix (repeatable); separate\n"
        "                          prefill and decode pools: --set tenant.NAME.prefill_replicas=2\n"
        "                          --set tenant.NAME.decode_replicas=2 (and prefill_tp,\n"
        "                          decode_tp, kv_transfer=layer|end; not with replicas)\n"
        "Workload (one tenant):\n"
        "  --trace FILE            trace to replay, plain or gzip-compressed (default:\n"
        "                          " DEFAULT_TRACE ")\n"
        "  --trace-format F        auto|native|azure|vidur|burstgpt|mooncake (default auto:\n"
        "                          detected from the header or the first line)\n"
        "  --trace-spread          spread requests that share a (quantised) timestamp evenly\n"
        "                          over the gap to the next one\n"
        "  --sort                  accept a trace that is not sorted by arrival: read it whole\n"
        "                          into memory first and sort it (about 90 bytes per request,\n"
        "                          plus 4 per Mooncake hash id; traces are otherwise streamed)\n"
        "  --limit N               replay only the first N requests\n"
        "  --rate-scale X          multiply the arrival rate by X (inter-arrival times / X)\n"
        "Cluster:\n"
        "  --model NAME            model from the catalog (default llama-2-7b; slicesim list models)\n"
        "  --gpu NAME              GPU from the catalog (default a100-80g; slicesim list gpus)\n"
        "  --engine NAME|FILE      serving engine profile of every tenant: a catalog name\n"
        "                          (default vllm-0.15; slicesim list engines) or a profile\n"
        "                          file's path (with a '/' or ending in .ini: what fit wrote)\n"
        "  --replicas N            serving replicas, each TP x PP GPUs (default 4 without -c)\n"
        "  --tp N                  tensor-parallel GPUs per pipeline stage (default 1)\n"
        "  --pp N                  pipeline stages per replica (default 1); a replica runs N\n"
        "                          micro-batches in flight, one per virtual engine, each with\n"
        "                          1/N of the KV cache, as vLLM does\n"
        "  --profiles DIR          catalog directory (default: ./profiles or the source tree's)\n"
        "Policies (docs/guide/policies.md lists every policy and parameter):\n"
        "  --batching NAME         vllm (default) | sarathi | orca | static\n"
        "  --routing NAME, --route NAME\n"
        "                          rr (round-robin) | lor (least outstanding requests) | random |\n"
        "                          infaas (argmax dispatch freeness) | llumnix (freest container)\n"
        "                          | affinity (prefix affinity: the least blocks to prefill,\n"
        "                          its prompt's less the prefix cached there, plus load);\n"
        "                          default: the cluster policy's (rr; llumnix for llumnix*)\n"
        "  --param affinity_cache_weight=W, --param affinity_load_weight=W\n"
        "                          affinity: cost = W_cache x blocks to prefill + W_load x KV\n"
        "                          blocks held and queued there (default 1 and 1, as NVIDIA\n"
        "                          Dynamo's KV router: overlap_score_weight 1.0 times prefill\n"
        "                          blocks plus decode blocks)\n"
        "  --cluster NAME          container (default) | llumnix | llumnix-tiers\n"
        "  --ops NAME              operator placement: home (default) | slice (SliceScheduler:\n"
        "                          prefills of queued requests run in other containers' idle\n"
        "                          GPU time when a what-if shows it helps) | greedy (the same\n"
        "                          moves to the first idle container, no what-if)\n"
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
        "  --reserve MODE          orca: KV reserved at admission: context (default: the model's\n"
        "                          trained context, at most max-model-len) | max (max-model-len)\n"
        "                          | oracle (the real output) | pow2\n"
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
        "  --prefix-cache MODE     automatic prefix caching: auto (default: on when the trace\n"
        "                          carries prefix identity) | on | off\n"
        "  --prefix-ceiling on|off keep the ceiling, what an unbounded cache shared by each\n"
        "                          tenant's instances would hit (default on; its set grows\n"
        "                          with the trace's distinct blocks, 11-21 bytes each)\n"
        "Run:\n"
        "  --seed N                seed of every random stream (default 1)\n"
        "  --warmup S              requests arriving before S seconds are not measured\n"
        "  --duration S            no arrivals after S seconds\n"
        "  --nodes N               cluster size in nodes (default: what the containers need)\n"
        "  --db FILE               results database (default results/slicesim.db; 'none' to skip)\n"
        "  --store WHAT            what the database keeps: summary (no per-request rows),\n"
        "                          requests (also each request: the default) or iterations\n"
        "                          (also each container's every iteration, table iterations)\n"
        "  --json                  print one JSON object instead of the table\n"
        "  --check, --no-check     verify every invariant after every event (slower; on by\n"
        "                          default in debug builds)\n"
        "  --timeline FILE.json    write what every GPU did as Chrome trace-event JSON (Perfetto)\n"
        "  --timeline-window S:E   only events between S and E seconds of simulated time\n"
        "  --timeline-ops          also write each iteration's operators (large; use a window)\n"
        "  --timeline-warn MB      warn on stderr once the timeline passes MB megabytes (10^6\n"
        "                          bytes; default 100, 0 never): a whole replay's can be\n"
        "                          hundreds of MB\n"
        "  --no-progress           no progress line on a terminal (simulated time, requests,\n"
        "                          events/s; with --duration, the share of it and time left)\n"
        "  -h, --help              this help\n"
        "\n"
        "Exit status: 0 success, 1 the run failed (I/O, database, a violated invariant), 2 bad\n"
        "input or usage.\n");
}

/* ---- options ---------------------------------------------------------------------------- */

enum {
    OPT_CONFIG = 'c', OPT_HELP = 'h',
    OPT_SET = 256, OPT_PROFILES, OPT_JSON, OPT_CHECK, OPT_NOCHECK, OPT_NOPROG, OPT_TIMELINE, OPT_TL_WINDOW,
    OPT_TL_OPS, OPT_TL_WARN, OPT_PARAM, OPT_STORE,
    OPT_TENANT = 512,  /* + T_* */
    OPT_KEY = 768,     /* + index into key_opts */
};

/* Options that set one scenario key; kind says how the value is checked first. */
typedef struct key_opt {
    const char *opt, *key; /* option name, "SECTION.KEY" */
    char kind;             /* 'u' integer >= 1, 'n' integer >= 0, 'd' positive number, 'z' number
                              >= 0, 's' text, 'f' flag (sets flag_value) */
    const char *flag_value;
} key_opt;

static const key_opt key_opts[] = {
    {"gpu", "cluster.gpu", 's', NULL},            {"nodes", "cluster.nodes", 'u', NULL},
    {"batching", "policy.batching", 's', NULL},   {"routing", "policy.routing", 's', NULL},
    {"route", "policy.routing", 's', NULL},
    {"cluster", "policy.cluster", 's', NULL},     {"cost", "policy.cost", 's', NULL},
    {"ops", "policy.ops", 's', NULL},
    {"seed", "run.seed", 'n', NULL},              {"db", "run.db", 's', NULL},
    {"warmup", "run.warmup_s", 'z', NULL},        {"duration", "run.duration_s", 'z', NULL},
    {"gpu-mem-util", "engine.gpu_mem_util", 'd', NULL},
    {"block-size", "engine.block_size", 'u', NULL},
    {"max-model-len", "engine.max_model_len", 'u', NULL},
    {"swap-space", "engine.swap_space_gib", 'z', NULL},
    {"prefix-cache", "engine.prefix_cache", 's', NULL},
    {"prefix-ceiling", "engine.prefix_ceiling", 's', NULL},
    {"max-num-seqs", "policy.max_num_seqs", 's', NULL},
    {"max-num-batched-tokens", "policy.max_num_batched_tokens", 's', NULL},
    {"watermark", "policy.watermark", 's', NULL}, {"preempt", "policy.preempt", 's', NULL},
    {"max-preemptions", "policy.max_preemptions", 's', NULL},
    {"token-budget", "policy.token_budget", 's', NULL},
    {"max-batch", "policy.max_batch", 's', NULL}, {"reserve", "policy.reserve", 's', NULL},
    {"shrink", "policy.shrink", 'f', "true"},     {"no-pad-prompts", "policy.pad_prompts", 'f', "false"},
};
#define N_KEY_OPTS (sizeof key_opts / sizeof *key_opts)

static const struct option base_opts[] = {
    {"config", required_argument, NULL, OPT_CONFIG},
    {"set", required_argument, NULL, OPT_SET},
    {"param", required_argument, NULL, OPT_PARAM},
    {"profiles", required_argument, NULL, OPT_PROFILES},
    {"json", no_argument, NULL, OPT_JSON},
    {"check", no_argument, NULL, OPT_CHECK},
    {"no-check", no_argument, NULL, OPT_NOCHECK},
    {"no-progress", no_argument, NULL, OPT_NOPROG},
    {"timeline", required_argument, NULL, OPT_TIMELINE},
    {"timeline-window", required_argument, NULL, OPT_TL_WINDOW},
    {"timeline-ops", no_argument, NULL, OPT_TL_OPS},
    {"store", required_argument, NULL, OPT_STORE},
    {"timeline-warn", required_argument, NULL, OPT_TL_WARN},
    {"model", required_argument, NULL, OPT_TENANT + T_MODEL},
    {"tp", required_argument, NULL, OPT_TENANT + T_TP},
    {"pp", required_argument, NULL, OPT_TENANT + T_PP},
    {"replicas", required_argument, NULL, OPT_TENANT + T_REPLICAS},
    {"trace", required_argument, NULL, OPT_TENANT + T_TRACE},
    {"trace-format", required_argument, NULL, OPT_TENANT + T_FORMAT},
    {"rate-scale", required_argument, NULL, OPT_TENANT + T_RATE},
    {"limit", required_argument, NULL, OPT_TENANT + T_LIMIT},
    {"trace-spread", no_argument, NULL, OPT_TENANT + T_SPREAD},
    {"sort", no_argument, NULL, OPT_TENANT + T_SORT},
    {"engine", required_argument, NULL, OPT_TENANT + T_ENGINE},
    {"help", no_argument, NULL, OPT_HELP},
};
#define N_BASE_OPTS (sizeof base_opts / sizeof *base_opts)

static struct option long_opts[N_BASE_OPTS + N_KEY_OPTS + 1];

static void build_long_opts(void)
{
    memcpy(long_opts, base_opts, sizeof base_opts);
    for (size_t i = 0; i < N_KEY_OPTS; i++)
        long_opts[N_BASE_OPTS + i] = (struct option){
            key_opts[i].opt, key_opts[i].kind == 'f' ? no_argument : required_argument, NULL,
            OPT_KEY + (int)i};
    long_opts[N_BASE_OPTS + N_KEY_OPTS] = (struct option){NULL, 0, NULL, 0};
}

/* fmt takes two strings, a and b. */
static int usage_error(const char *fmt, const char *a, const char *b)
{
    char msg[1024];
    snprintf(msg, sizeof msg, fmt, a, b);
    return cli_usage_error("replay", "%s", msg);
}

/* Check an option's value by kind before it becomes an assignment. */
static int check_value(const char *name, char kind, const char *s)
{
    int64_t v;
    double d;
    if (kind == 'u' || kind == 'n') {
        if (ss_parse_number_value(s, strlen(s), &d) &&
            (d < (kind == 'u') || d >= 9223372036854775807.0))
            return usage_error(kind == 'u' ? "--%s: out of range [1, 9223372036854775807], "
                                             "got '%s'"
                                           : "--%s: out of range [0, 9223372036854775807], "
                                             "got '%s'", name, s);
        if (ss_parse_i64z(s, &v) || v < (kind == 'u'))
            return usage_error(kind == 'u' ? "--%s: expected an integer of at least 1, got '%s'"
                                           : "--%s: expected an integer of at least 0, got '%s'",
                               name, s);
    } else if (kind == 'd' || kind == 'z') {
        if (ss_parse_number_value(s, strlen(s), &d) && isinf(d))
            return usage_error("--%s: out of range [0, 1.8e308], got '%s'", name, s);
        if (ss_parse_doublez(s, &d) || d < 0 || (kind == 'd' && d == 0))
            return usage_error(kind == 'd' ? "--%s: expected a number > 0, got '%s'"
                                           : "--%s: expected a number >= 0, got '%s'", name, s);
    }
    return CLI_OK;
}

static int push_assign(replay_opts *o, const char *key, const char *value, const char *opt)
{
    size_t n = strlen(key) + strlen(value) + 2;
    char *a = ss_malloc(n);
    if (!a || ss_grow((void **)&o->assign, &o->cap_assign, o->n_assign + 1, sizeof *o->assign) ||
        ss_grow((void **)&o->assign_opt, &o->cap_assign_opt, o->n_assign + 1,
                sizeof *o->assign_opt)) {
        ss_free(a);
        return CLI_EFAIL;
    }
    snprintf(a, n, "%s=%s", key, value);
    o->assign_opt[o->n_assign] = opt;
    o->assign[o->n_assign++] = a;
    return CLI_OK;
}

static int parse_key_opt(replay_opts *o, const key_opt *k, const char *arg)
{
    const char *v = k->kind == 'f' ? k->flag_value : arg;
    int rc = check_value(k->opt, k->kind, v);
    return rc ? rc : push_assign(o, k->key, v, k->opt);
}

/* --param KEY=VALUE is policy.KEY=VALUE. */
static int parse_param(replay_opts *o, const char *arg)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg)
        return usage_error("--param: expected KEY=VALUE, got '%s'%s", arg, "");
    char key[128];
    snprintf(key, sizeof key, "policy.%.*s", (int)(eq - arg), arg);
    return push_assign(o, key, eq + 1, "param");
}

static int parse_tenant_opt(replay_opts *o, int t, const char *arg)
{
    static const char kinds[T__N] = {'s', 'u', 'u', 'u', 's', 's', 'd', 'u', 'f', 'f', 's'};
    const char *v = kinds[t] == 'f' ? "true" : arg;
    int rc = check_value(tenant_opt_names[t] + 2, kinds[t], v); /* the name without "--" */
    if (!rc)
        o->tenant[t] = v;
    return rc;
}

static int parse_one(replay_opts *o, int c, const char *arg)
{
    ss_errbuf eb = {{0}};
    switch (c) {
    case OPT_CONFIG: o->config = arg; return CLI_OK;
    case OPT_SET:
        if (ss_grow((void **)&o->sets, &o->cap_sets, o->n_sets + 1, sizeof *o->sets))
            return CLI_EFAIL;
        o->sets[o->n_sets++] = arg;
        return CLI_OK;
    case OPT_PARAM: return parse_param(o, arg);
    case OPT_PROFILES: o->profiles = arg; return CLI_OK;
    case OPT_JSON: o->json = 1; return CLI_OK;
    case OPT_CHECK: o->check = RUNNER_CHECK_ON; return CLI_OK;
    case OPT_NOCHECK: o->check = RUNNER_CHECK_OFF; return CLI_OK;
    case OPT_NOPROG: o->progress = 0; return CLI_OK;
    case OPT_TIMELINE: o->timeline = arg; return CLI_OK;
    case OPT_TL_WINDOW:
        if (tl_parse_window(arg, &o->tl.start, &o->tl.end, &eb))
            return usage_error("%s%s", eb.msg, "");
        return CLI_OK;
    case OPT_TL_OPS: o->tl.ops = 1; return CLI_OK;
    case OPT_STORE:
        if (store_keep_parse(arg, &o->keep, &eb))
            return usage_error("%s%s", eb.msg, "");
        return CLI_OK;
    case OPT_TL_WARN: {
        double mb;
        if (ss_parse_doublez(arg, &mb) || mb < 0 || mb > 1e12)
            return usage_error("--timeline-warn: expected megabytes, 0 to 1e12, got '%s'%s",
                               arg, "");
        o->tl.warn_bytes = (uint64_t)(mb * 1e6);
        return CLI_OK;
    }
    default:
        if (c >= OPT_TENANT && c < OPT_TENANT + T__N)
            return parse_tenant_opt(o, c - OPT_TENANT, arg);
        if (c >= OPT_KEY && c < OPT_KEY + (int)N_KEY_OPTS)
            return parse_key_opt(o, &key_opts[c - OPT_KEY], arg);
        return CLI_EUSAGE;
    }
}

static int parse_opts(replay_opts *o, int argc, char **argv)
{
    int c;
    build_long_opts();
    optind = 1;
    opterr = 0;
    if (cli_check_long_options("replay", argc, argv, "hc:", long_opts))
        return CLI_EUSAGE;
    while ((c = getopt_long(argc, argv, "hc:", long_opts, NULL)) != -1) {
        if (c == OPT_HELP) {
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
    if (optind < argc)
        return usage_error("unexpected argument '%s' (see --help)%s", argv[optind], "");
    return CLI_OK;
}

/* ---- options to scenario ----------------------------------------------------------------- */

/* key = value as the option `where` gives it (NULL: a default of replay's own). */
static int set_key(scn_scenario *sc, const char *key, const char *value, const char *where,
                   ss_errbuf *eb)
{
    char buf[SCN_PATH_MAX + 128];
    snprintf(buf, sizeof buf, "%s=%s", key, value);
    return where ? scn_set_option(sc, buf, where, eb) : scn_set(sc, buf, eb);
}

/* Without a scenario: one tenant "default" replaying the default trace on 4 x llama-2-7b. */
static int default_tenant(scn_scenario *sc, ss_errbuf *eb)
{
    const char *trace = access(DEFAULT_TRACE, R_OK) == 0 ? DEFAULT_TRACE
                                                         : SS_SOURCE_ROOT "/" DEFAULT_TRACE;
    int rc = set_key(sc, "tenant.default.model", "llama-2-7b", NULL, eb);
    scn_tenant *t = rc ? NULL : scn_tenant_find(sc, "default");
    if (t) /* a default, not a key given: --set tenant.default.prefill_replicas may replace it */
        t->replicas = t->max_replicas = 4;
    if (!rc)
        rc = set_key(sc, "tenant.default.trace", trace, NULL, eb);
    return rc;
}

/* --engine sets every tenant's engine (the others need a one-tenant scenario). */
static int apply_engine_opt(const replay_opts *o, scn_scenario *sc, ss_errbuf *eb)
{
    char key[SCN_NAME_MAX + 32];
    for (uint32_t i = 0; o->tenant[T_ENGINE] && i < sc->n_tenants; i++) {
        snprintf(key, sizeof key, "tenant.%s.engine", sc->tenants[i].name);
        int rc = set_key(sc, key, o->tenant[T_ENGINE], "--engine", eb);
        if (rc)
            return rc;
    }
    return SS_OK;
}

static int apply_tenant_opts(const replay_opts *o, scn_scenario *sc, ss_errbuf *eb)
{
    int any = 0;
    for (int t = 0; t < T_ENGINE; t++)
        any |= o->tenant[t] != NULL;
    int rc = apply_engine_opt(o, sc, eb);
    if (rc)
        return rc;
    if (!any)
        return SS_OK;
    if (sc->n_tenants != 1)
        return ss_err(eb, SS_EINVAL, "--model, --trace and the other tenant options need a "
                      "one-tenant scenario; this one has %u: use --set tenant.NAME.KEY=VALUE",
                      sc->n_tenants);
    char key[SCN_NAME_MAX + 32];
    for (int t = 0; t < T_ENGINE; t++) {
        if (!o->tenant[t])
            continue;
        snprintf(key, sizeof key, "tenant.%s.%s", sc->tenants[0].name, tenant_keys[t]);
        if ((rc = set_key(sc, key, o->tenant[t], tenant_opt_names[t], eb)))
            return rc;
    }
    return SS_OK;
}

/* Scenario file, then the options, then --set in order; then the whole-scenario checks. */
static int build_scenario(const replay_opts *o, scn_scenario *sc, ss_errbuf *eb)
{
    int rc = o->config ? scn_load(sc, o->config, eb) : default_tenant(sc, eb);
    if (rc == SS_EIO)
        rc = SS_EPARSE; /* an unreadable scenario is bad input */
    if (!rc)
        rc = apply_tenant_opts(o, sc, eb);
    for (size_t i = 0; !rc && i < o->n_assign; i++) {
        char where[64];
        snprintf(where, sizeof where, "--%s", o->assign_opt[i]);
        rc = strcmp(where, "--param") ? scn_set_option(sc, o->assign[i], where, eb)
                                      : scn_set_from(sc, o->assign[i], where, eb);
    }
    for (size_t i = 0; !rc && i < o->n_sets; i++)
        rc = scn_set(sc, o->sets[i], eb);
    return rc ? rc : scn_check(sc, eb);
}

/* ---- the run ---------------------------------------------------------------------------- */

static void free_opts(replay_opts *o)
{
    for (size_t i = 0; i < o->n_assign; i++)
        ss_free(o->assign[i]);
    ss_free(o->assign);
    ss_free(o->assign_opt);
    ss_free(o->sets);
}

static void print_results(const runner_run *x, const replay_opts *o, uint64_t tl_n)
{
    runner_report rep = runner_run_report(x);
    if (o->json) {
        runner_report_json(cli_out(), &rep, x->g, &x->m);
        return;
    }
    runner_report_table(cli_out(), &rep, x->g, &x->m);
    if (x->st)
        fprintf(cli_out(), "  results: %s\n", store_path(x->st));
    if (o->timeline)
        fprintf(cli_out(), "  timeline: %s (%llu events)\n", o->timeline,
                (unsigned long long)tl_n);
}

/* tl_opts.on_large: one line on stderr, while the replay runs, with the ways to a smaller file
 * (the progress line, on a terminal, is cleared first). */
static void timeline_large(void *ud, const char *path, uint64_t bytes)
{
    const replay_opts *o = ud;
    if (isatty(STDERR_FILENO))
        fprintf(stderr, "\r%*s\r", 100, "");
    fprintf(stderr, "slicesim: replay: warning: the timeline %s has passed %.1f MB and grows as "
                    "the replay goes on; for a smaller one, --timeline-window S:E keeps only "
                    "those seconds of simulated time%s (--timeline-warn 0: no warning)\n",
            path, (double)bytes / 1e6,
            o->tl.ops ? " and leaving out --timeline-ops drops the operators" : "");
}

int cmd_replay(int argc, char **argv)
{
    replay_opts o = {.progress = 1,
                     .tl = {.start = 0, .end = SS_TIME_MAX, .warn_bytes = 100000000}};
    int rc = parse_opts(&o, argc, argv);
    if (rc) {
        free_opts(&o);
        return rc < 0 ? CLI_OK : rc;
    }
    char *cmdline = cli_join_args(argc, argv);
    runner_run_opts ro = {.profiles = o.profiles, .config = o.config, .command = cmdline,
                          .check = o.check, .progress = o.progress, .keep = o.keep};
    runner_run x = {0};
    scn_scenario *sc = NULL;
    tl_writer *tl = NULL;
    if (scn_create(&sc))
        rc = ss_err(&x.eb, SS_ENOMEM, "out of memory");
    if (!rc)
        rc = build_scenario(&o, sc, &x.eb);
    cli_files files = {0};
    if (!rc)
        rc = cli_scenario_files(&files, sc, NULL, &x.eb);
    if (!rc && o.timeline)
        rc = cli_files_add(&files, "--timeline", o.timeline, 1, &x.eb);
    cli_files_fini(&files);
    if (!rc)
        rc = runner_run_setup(&x, sc, &ro);
    o.tl.on_large = timeline_large;
    o.tl.ud = &o;
    if (!rc && o.timeline && (rc = tl_open(&tl, o.timeline, &o.tl, &x.eb)) == SS_OK)
        tl_attach(tl, x.g);
    if (!rc)
        rc = runner_run_exec(&x);
    uint64_t tl_n = tl ? tl_events(tl) : 0;
    if (!rc && tl)
        rc = tl_close(&tl, &x.eb);
    if (!rc)
        print_results(&x, &o, tl_n);
    else
        fprintf(cli_err(), "slicesim: replay: %s\n", x.eb.msg);
    tl_abort(&tl);
    runner_run_fini(&x);
    scn_destroy(&sc);
    ss_free(cmdline);
    free_opts(&o);
    return cli_status_of(rc);
}
