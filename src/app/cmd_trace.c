/* `slicesim trace stats FILE` (summary of any supported trace) and `slicesim trace gen`
 * (synthetic native-CSV traces). Option parsing, output formatting and file handling only:
 * the reading, generation and statistics live in src/trace. */
#include "app/cli.h"

#include "core/ss_alloc.h"
#include "core/ss_file.h"
#include "core/ss_parse.h"
#include "core/ss_strbuf.h"
#include "trace/trace.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Defaults: piecewise-linear fits of the Azure LLM inference 2023 conversation trace
 * (see traces/README.md for how the knots were chosen). */
#define GEN_PROMPT_DEFAULT TRACE_GEN_PROMPT_DEFAULT
#define GEN_OUTPUT_DEFAULT TRACE_GEN_OUTPUT_DEFAULT

static void usage_trace(FILE *f)
{
    fputs("usage: slicesim trace stats FILE [--format NAME] [--spread] [--sort] [--json]\n"
          "       slicesim trace gen [OPTIONS] -o FILE\n"
          "\n"
          "Trace tools. 'stats' summarises a trace; 'gen' writes a synthetic native trace.\n"
          "Run 'slicesim trace stats --help' or 'slicesim trace gen --help' for details.\n",
          f);
}

static void usage_stats(FILE *f)
{
    fputs("usage: slicesim trace stats FILE [--format NAME] [--spread] [--sort] [--json]\n"
          "\n"
          "Read a trace (FILE '-' = standard input; plain or gzip-compressed) and print the\n"
          "number of requests, span (s), rate (requests / span), inter-arrival coefficient of\n"
          "variation, tenants, rows skipped (BurstGPT failed requests), and the mean, min, p50,\n"
          "p90, p99 and max of prompt and output tokens (exact nearest-rank percentiles).\n"
          "\n"
          "  -f, --format NAME  trace format: auto (default: a first line starting with '{' is\n"
          "                     mooncake, else from the CSV header), native, azure, vidur,\n"
          "                     burstgpt, mooncake\n"
          "  -s, --spread       spread requests that share one timestamp evenly over the gap to\n"
          "                     the next distinct timestamp (for quantised times, e.g. Mooncake)\n"
          "  --sort             accept a trace not sorted by time: read it whole into memory\n"
          "                     and sort it (about 90 bytes per request, plus 4 per Mooncake\n"
          "                     hash id; otherwise the trace is streamed)\n"
          "  -j, --json         one JSON object instead of a table\n"
          "  -h, --help         this help\n"
          "\n"
          "Exit status: 0 ok, 1 a read error after the file was opened, 2 bad usage, a file\n"
          "that cannot be opened or a malformed trace (reported as FILE:LINE: field: what is\n"
          "wrong).\n",
          f);
}

static void usage_gen(FILE *f)
{
    fputs("usage: slicesim trace gen [OPTIONS] (--duration S | --requests N) -o FILE\n"
          "\n"
          "Write a synthetic trace in the native CSV format (FILE '-' = standard output).\n"
          "The same options always give the same bytes. FILE is written as a new temporary\n"
          "file beside it (FILE.k3q9zt.tmp, say) and renamed at the end, so a failed run leaves\n"
          "no partial FILE.\n"
          "\n"
          "  -r, --rate R         mean arrival rate, requests/s (default 1)\n"
          "  -d, --duration S     stop at the first arrival after S seconds\n"
          "  -n, --requests N     stop after N requests\n"
          "  -a, --arrival KIND   poisson (default) or gamma\n"
          "  -c, --cv X           coefficient of variation of gamma inter-arrivals (default 1)\n"
          "  -p, --prompt SPEC    prompt-token distribution\n"
          "  -O, --output SPEC    output-token distribution\n"
          "  -s, --seed N         random seed (default 1)\n"
          "  -t, --tenant NAME    tenant column value (default 'default')\n"
          "  -o, --out FILE       where to write (required)\n"
          "  -h, --help           this help\n"
          "\n"
          "Prefix identity (for prefix caching; off by default, and then the trace is the same\n"
          "as without these options). With any of them on, each request also gets a\n"
          "session_id (its conversation) and hash_ids (ids of its prompt's 512-token blocks,\n"
          "as Mooncake's: equal id = equal tokens):\n"
          "  --groups N           N groups with a shared system prompt (0 = none, default);\n"
          "                       a request starts with its group's system prompt, then its\n"
          "                       own --prompt tokens. Only the system prompt's full\n"
          "                       512-token blocks are shared (a partial one never is)\n"
          "  --system SPEC        system-prompt tokens, drawn once per group (needed with\n"
          "                       --groups)\n"
          "  --group-zipf S       group popularity P(g) ~ 1/(g+1)^S (default 0 = uniform)\n"
          "  --turns SPEC         turns per conversation, at most 1000 (default fixed:1 =\n"
          "                       single requests). Turn k+1's prompt is turn k's prompt,\n"
          "                       its output and a new user message drawn from --prompt, so\n"
          "                       it repeats turn k's blocks. --rate stays the request (turn)\n"
          "                       rate: conversations start at rate / mean turns\n"
          "  --think S            mean think time, s (exponential; needed when turns can\n"
          "                       exceed 1): a turn arrives S after the previous turn's\n"
          "                       arrival, not after its response (which a trace cannot know)\n"
          "  --max-context N      prompt-token cap (default 32768): a turn whose prompt would\n"
          "                       exceed N ends its conversation; a longer first turn is cut\n"
          "                       to N\n"
          "\n"
          "SPEC is one of (values are rounded to integers and clamped to >= 1):\n"
          "  fixed:N  uniform:LO:HI  lognormal:MEDIAN:SIGMA[:MIN:MAX]  zipf:S:MIN:MAX\n"
          "  quantiles:P=V,P=V,...   piecewise-linear inverse CDF, P from 0 to 1\n"
          "Defaults (fits of the Azure LLM inference 2023 conversation trace):\n"
          "  --prompt " GEN_PROMPT_DEFAULT "\n"
          "  --output " GEN_OUTPUT_DEFAULT "\n",
          f);
}

/* Report an unknown option or a missing argument from getopt_long. */
static int bad_option(const char *cmd, char **argv)
{
    fprintf(stderr, "slicesim: trace %s: bad option or missing argument '%s' (see --help)\n", cmd,
            argv[optind - 1]);
    return CLI_EUSAGE;
}

/* ====================================================================================== */
/* stats                                                                                   */
/* ====================================================================================== */

static void json_dist(FILE *f, const char *name, const trace_dist_stats *d)
{
    fprintf(f,
            ",\"%s\":{\"mean\":%.4f,\"min\":%" PRIu32 ",\"p50\":%" PRIu32 ",\"p90\":%" PRIu32
            ",\"p99\":%" PRIu32 ",\"max\":%" PRIu32 "}",
            name, d->mean, d->min, d->p50, d->p90, d->p99, d->max);
}

static void print_json(const char *file, const trace_reader *r, const trace_stats *st)
{
    printf("{\"file\":");
    ss_json_fputs(stdout, file);
    printf(",\"format\":\"%s\",\"requests\":%" PRIu64 ",\"span_s\":%.6f,\"rate\":%.6f,"
           "\"interarrival_cv\":%.6f,\"tenants\":%" PRIu32 ",\"skipped\":%" PRIu64
           ",\"digest\":\"fnv1a64:%016" PRIx64 "\"",
           trace_reader_format(r), st->count, st->span_s, st->rate, st->interarrival_cv,
           st->n_tenants, trace_reader_n_skipped(r), trace_reader_digest(r));
    json_dist(stdout, "prompt", &st->prompt);
    json_dist(stdout, "output", &st->output);
    printf("}\n");
}

static void table_dist(const char *name, const trace_dist_stats *d)
{
    printf("%-14s %10.2f %8" PRIu32 " %8" PRIu32 " %8" PRIu32 " %8" PRIu32 " %8" PRIu32 "\n", name,
           d->mean, d->min, d->p50, d->p90, d->p99, d->max);
}

static void print_table(const char *file, const trace_reader *r, const trace_stats *st)
{
    printf("%-17s %s\n", "file", file);
    printf("%-17s %s\n", "format", trace_reader_format(r));
    printf("%-17s %" PRIu64 "\n", "requests", st->count);
    printf("%-17s %.3f\n", "span_s", st->span_s);
    printf("%-17s %.4f req/s\n", "rate", st->rate);
    printf("%-17s %.4f\n", "interarrival_cv", st->interarrival_cv);
    printf("%-17s %" PRIu32 "\n", "tenants", st->n_tenants);
    printf("%-17s %" PRIu64 "\n", "skipped", trace_reader_n_skipped(r));
    printf("%-17s fnv1a64:%016" PRIx64 "\n\n", "digest", trace_reader_digest(r));
    printf("%-14s %10s %8s %8s %8s %8s %8s\n", "tokens", "mean", "min", "p50", "p90", "p99",
           "max");
    table_dist("prompt", &st->prompt);
    table_dist("output", &st->output);
}

static int run_stats(const char *file, const char *format, int spread, int sort, int json)
{
    trace_reader *r = NULL;
    trace_stats st;
    ss_errbuf eb = {""};
    int rc = cli_open_trace(&r, file, format, &eb);
    if (rc == SS_OK)
        rc = trace_reader_set_sort(r, sort);
    if (rc == SS_OK)
        rc = trace_reader_set_spread(r, spread);
    if (rc == SS_OK)
        rc = trace_stats_compute(r, &st, &eb);
    if (rc == SS_OK) {
        if (json)
            print_json(file, r, &st);
        else
            print_table(file, r, &st);
        if (fflush(stdout)) {
            fprintf(stderr, "slicesim: trace stats: writing the output: %s\n", strerror(errno));
            rc = SS_EIO;
        }
    } else {
        fprintf(stderr, "slicesim: %s\n", eb.msg);
    }
    trace_reader_close(&r);
    return cli_status_of(rc);
}

static int cmd_stats(int argc, char **argv)
{
    static const struct option opts[] = {{"format", required_argument, NULL, 'f'},
                                         {"spread", no_argument, NULL, 's'},
                                         {"sort", no_argument, NULL, 'S'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *format = "auto";
    int json = 0, spread = 0, sort = 0, c;
    optind = 1;
    opterr = 0;
    if (cli_check_long_options("trace stats", argc, argv, ":f:sjh", opts))
        return CLI_EUSAGE;
    while ((c = getopt_long(argc, argv, ":f:sjh", opts, NULL)) != -1) {
        switch (c) {
        case 'f': format = optarg; break;
        case 's': spread = 1; break;
        case 'S': sort = 1; break;
        case 'j': json = 1; break;
        case 'h': usage_stats(stdout); return CLI_OK;
        default: return bad_option("stats", argv);
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "slicesim: trace stats: need exactly one FILE (see --help)\n");
        return CLI_EUSAGE;
    }
    return run_stats(argv[optind], format, spread, sort, json);
}

/* ====================================================================================== */
/* gen                                                                                     */
/* ====================================================================================== */

typedef struct gen_opts {
    trace_gen_spec spec;  /* being filled */
    const char *out;      /* -o value */
    const char *prompt;   /* --prompt spec string */
    const char *output;   /* --output spec string */
    int have_cv;          /* --cv was given */
} gen_opts;

static int opt_error(const char *opt, const char *what, const char *arg)
{
    fprintf(stderr, "slicesim: trace gen: %s: %s: '%s'\n", opt, what, arg);
    return CLI_EUSAGE;
}

/* A strictly positive finite number. */
static int opt_positive(const char *opt, const char *arg, double *out)
{
    if (ss_parse_doublez(arg, out))
        return opt_error(opt, "not a number", arg);
    if (!(*out > 0))
        return opt_error(opt, "must be > 0", arg);
    return CLI_OK;
}

/* An unsigned 64-bit integer, digits only. */
static int opt_u64(const char *opt, const char *arg, uint64_t *out)
{
    uint64_t v = 0;
    if (!*arg)
        return opt_error(opt, "not a non-negative integer", arg);
    for (const char *p = arg; *p; p++) {
        if (*p < '0' || *p > '9')
            return opt_error(opt, "not a non-negative integer", arg);
        if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
            return opt_error(opt, "too large", arg);
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *out = v;
    return CLI_OK;
}

/* Long-only options: the prefix-identity keys of trace_gen_spec_set. */
enum { OPT_GROUPS = 256, OPT_SYSTEM, OPT_GROUP_ZIPF, OPT_TURNS, OPT_THINK, OPT_MAX_CONTEXT };

static const struct {
    const char *opt, *key;
} prefix_opts[] = {
    [OPT_GROUPS - OPT_GROUPS] = {"--groups", "groups"},
    [OPT_SYSTEM - OPT_GROUPS] = {"--system", "system"},
    [OPT_GROUP_ZIPF - OPT_GROUPS] = {"--group-zipf", "group_zipf"},
    [OPT_TURNS - OPT_GROUPS] = {"--turns", "turns"},
    [OPT_THINK - OPT_GROUPS] = {"--think", "think"},
    [OPT_MAX_CONTEXT - OPT_GROUPS] = {"--max-context", "max_context"},
};

static int prefix_opt(gen_opts *o, int c, const char *arg)
{
    ss_errbuf eb = {""};
    const char *opt = prefix_opts[c - OPT_GROUPS].opt;
    if (trace_gen_spec_set(&o->spec, prefix_opts[c - OPT_GROUPS].key, arg, &eb)) {
        fprintf(stderr, "slicesim: trace gen: %s: %s\n", opt, eb.msg);
        return CLI_EUSAGE;
    }
    return CLI_OK;
}

static int gen_opt(gen_opts *o, int c, const char *arg)
{
    if (c >= OPT_GROUPS && c <= OPT_MAX_CONTEXT)
        return prefix_opt(o, c, arg);
    switch (c) {
    case 'r': return opt_positive("--rate", arg, &o->spec.rate);
    case 'd': return opt_positive("--duration", arg, &o->spec.duration_s);
    case 'n':
        if (opt_u64("--requests", arg, &o->spec.n_requests))
            return CLI_EUSAGE;
        return o->spec.n_requests ? CLI_OK : opt_error("--requests", "must be >= 1", arg);
    case 'a':
        if (!strcmp(arg, "poisson"))
            o->spec.arrival = TRACE_ARRIVAL_POISSON;
        else if (!strcmp(arg, "gamma"))
            o->spec.arrival = TRACE_ARRIVAL_GAMMA;
        else
            return opt_error("--arrival", "want poisson or gamma", arg);
        return CLI_OK;
    case 'c': o->have_cv = 1; return opt_positive("--cv", arg, &o->spec.cv);
    case 'p': o->prompt = arg; return CLI_OK;
    case 'O': o->output = arg; return CLI_OK;
    case 's': return opt_u64("--seed", arg, &o->spec.seed);
    case 't': o->spec.tenant = arg; return CLI_OK;
    case 'o': o->out = arg; return CLI_OK;
    default: return CLI_EUSAGE;
    }
}

static int parse_gen_args(gen_opts *o, int argc, char **argv)
{
    static const struct option opts[] = {
        {"rate", required_argument, NULL, 'r'},   {"duration", required_argument, NULL, 'd'},
        {"requests", required_argument, NULL, 'n'}, {"arrival", required_argument, NULL, 'a'},
        {"cv", required_argument, NULL, 'c'},     {"prompt", required_argument, NULL, 'p'},
        {"output", required_argument, NULL, 'O'}, {"seed", required_argument, NULL, 's'},
        {"tenant", required_argument, NULL, 't'}, {"out", required_argument, NULL, 'o'},
        {"groups", required_argument, NULL, OPT_GROUPS},
        {"system", required_argument, NULL, OPT_SYSTEM},
        {"group-zipf", required_argument, NULL, OPT_GROUP_ZIPF},
        {"turns", required_argument, NULL, OPT_TURNS},
        {"think", required_argument, NULL, OPT_THINK},
        {"max-context", required_argument, NULL, OPT_MAX_CONTEXT},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
    int c, rc;
    optind = 1;
    opterr = 0;
    if (cli_check_long_options("trace gen", argc, argv, ":r:d:n:a:c:p:O:s:t:o:h", opts))
        return CLI_EUSAGE;
    while ((c = getopt_long(argc, argv, ":r:d:n:a:c:p:O:s:t:o:h", opts, NULL)) != -1) {
        if (c == 'h') {
            usage_gen(stdout);
            return -1;
        }
        if (c == '?' || c == ':')
            return bad_option("gen", argv);
        if ((rc = gen_opt(o, c, optarg)))
            return rc;
    }
    if (optind != argc) {
        fprintf(stderr, "slicesim: trace gen: unexpected argument '%s'\n", argv[optind]);
        return CLI_EUSAGE;
    }
    return CLI_OK;
}

/* trace_gen_spec_check's message, which names a prefix-identity field by its key
 * ("think: ..."): named by its option instead ("--think: ..."). */
static void print_check_error(const char *msg)
{
    for (size_t i = 0; i < sizeof prefix_opts / sizeof *prefix_opts; i++) {
        size_t n = strlen(prefix_opts[i].key);
        if (!strncmp(msg, prefix_opts[i].key, n) && msg[n] == ':') {
            fprintf(stderr, "slicesim: trace gen: %s%s\n", prefix_opts[i].opt, msg + n);
            return;
        }
    }
    fprintf(stderr, "slicesim: trace gen: %s\n", msg);
}

/* Cross-option checks and the distribution specs. */
static int check_gen_opts(gen_opts *o)
{
    ss_errbuf eb = {""};
    const char *msg = NULL;
    if (!o->out)
        msg = "need -o FILE ('-' for standard output)";
    else if (!o->spec.n_requests == !(o->spec.duration_s > 0))
        msg = "need exactly one of --duration and --requests";
    else if (o->have_cv && o->spec.arrival != TRACE_ARRIVAL_GAMMA)
        msg = "--cv needs --arrival gamma";
    if (msg) {
        fprintf(stderr, "slicesim: trace gen: %s\n", msg);
        return CLI_EUSAGE;
    }
    int rc = trace_len_dist_parse(&o->spec.prompt, o->prompt, &eb);
    if (rc) {
        fprintf(stderr, "slicesim: trace gen: --prompt: %s\n", eb.msg);
        return CLI_EUSAGE;
    }
    if ((rc = trace_len_dist_parse(&o->spec.output, o->output, &eb))) {
        fprintf(stderr, "slicesim: trace gen: --output: %s\n", eb.msg);
        return CLI_EUSAGE;
    }
    if ((rc = trace_gen_spec_check(&o->spec, &eb))) {
        print_check_error(eb.msg);
        return cli_status_of(rc);
    }
    return CLI_OK;
}

/* Write the trace safely (ss_outfile: a temporary file renamed into place, a device in place), so a
 * failed or interrupted run never leaves a partial PATH. */
static int write_file(const trace_gen_spec *spec, const char *path)
{
    ss_errbuf eb = {""};
    ss_outfile *out = NULL;
    FILE *f;
    trace_gen_written w = {0};
    int rc = ss_outfile_open(&out, &f, path, 1, &eb);
    if (!rc && (rc = trace_gen_write_csv(spec, f, &w, &eb)))
        ss_err_prefix(&eb, rc, "%s", path);
    if (!rc)
        rc = ss_outfile_commit(&out, &eb);
    ss_outfile_abort(&out);
    if (rc)
        fprintf(stderr, "slicesim: trace gen: %s\n", eb.msg);
    else /* what a file holds is not on the screen: say what was written */
        fprintf(stderr, "slicesim: trace gen: wrote %" PRIu64 " requests, arrivals over %.1f s, "
                "to %s\n", w.requests, ss_time_to_s(w.last_ns), path);
    return cli_status_of(rc);
}

static int cmd_gen(int argc, char **argv)
{
    gen_opts o;
    memset(&o, 0, sizeof o);
    o.spec.rate = 1;
    o.spec.cv = 1;
    o.spec.seed = 1;
    o.spec.arrival = TRACE_ARRIVAL_POISSON;
    o.spec.tenant = "default";
    o.prompt = GEN_PROMPT_DEFAULT;
    o.output = GEN_OUTPUT_DEFAULT;
    int rc = parse_gen_args(&o, argc, argv);
    if (rc)
        return rc < 0 ? CLI_OK : rc;
    if ((rc = check_gen_opts(&o)))
        return rc;
    if (strcmp(o.out, "-"))
        return write_file(&o.spec, o.out);
    ss_errbuf eb = {""};
    rc = trace_gen_write_csv(&o.spec, stdout, NULL, &eb);
    if (rc)
        fprintf(stderr, "slicesim: trace gen: %s\n", eb.msg);
    return cli_status_of(rc);
}

/* `slicesim trace SUBCOMMAND ...`; argv[0] is "trace". Returns the exit status. */
int cmd_trace(int argc, char **argv)
{
    if (argc < 2) {
        usage_trace(stderr);
        return CLI_EUSAGE;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
        usage_trace(stdout);
        return CLI_OK;
    }
    if (!strcmp(sub, "stats"))
        return cmd_stats(argc - 1, argv + 1);
    if (!strcmp(sub, "gen"))
        return cmd_gen(argc - 1, argv + 1);
    fprintf(stderr, "slicesim: trace: unknown subcommand '%s' (want stats or gen)\n", sub);
    return CLI_EUSAGE;
}
