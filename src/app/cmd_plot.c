/* `slicesim plot DB`: figures from a results database, drawn by gnuplot through a pipe. The
 * runs come from a sweep's points (policy, rate and other grid keys; seeds are averaged) or,
 * for a database without sweeps, from the runs themselves (cluster policy and placement,
 * rate_scale). Each kind writes its data as gnuplot datablocks and loads plots/KIND.gp. */
#include "bundle.h"
#include "cli.h"

#include "core/ss_alloc.h"
#include "core/ss_parse.h"
#include "metrics/store.h"

#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_SERIES 24
#define MAX_LOADS 64
#define NAME_MAX_ 96

static const char *const kinds[] = {"throughput-vs-load", "sla-vs-load", "latency-cdf",
                                    "gpu-timeline", "idle-slices", "tiers"};
enum { N_KINDS = sizeof kinds / sizeof *kinds };

/* One run as a plot sees it. */
typedef struct prun {
    int64_t id;
    int series;
    double load;
    /* summary */
    double out_tps, goodput, sla, ttft_p99;
    int have_summary;
} prun;

typedef struct plot_data {
    store *st;
    char what[NAME_MAX_ * 2];        /* the sweep's name, or the database's */
    char series[MAX_SERIES][NAME_MAX_];
    int n_series;
    prun *runs;
    size_t n_runs, cap_runs;
    double loads[MAX_LOADS];
    int n_loads;
    double load;                     /* the load single-load kinds show */
} plot_data;

/* ---- loading ---------------------------------------------------------------------------- */

static int series_of(plot_data *d, const char *name, ss_errbuf *eb)
{
    for (int i = 0; i < d->n_series; i++)
        if (!strcmp(d->series[i], name))
            return i;
    if (d->n_series == MAX_SERIES)
        return -ss_err(eb, SS_EINVAL, "more than %d series to plot (use --sweep)", MAX_SERIES);
    snprintf(d->series[d->n_series], NAME_MAX_, "%s", name);
    return d->n_series++;
}

static int add_run(plot_data *d, int64_t id, const char *series, double load, ss_errbuf *eb)
{
    int s = series_of(d, series, eb);
    if (s < 0)
        return -s;
    if (ss_grow((void **)&d->runs, &d->cap_runs, d->n_runs + 1, sizeof *d->runs))
        return ss_err(eb, SS_ENOMEM, "out of memory");
    d->runs[d->n_runs++] = (prun){.id = id, .series = s, .load = load};
    int k = 0;
    while (k < d->n_loads && d->loads[k] != load)
        k++;
    if (k == d->n_loads && d->n_loads < MAX_LOADS)
        d->loads[d->n_loads++] = load;
    return SS_OK;
}

/* A sweep point "k=v;k=v": the series is the policy label and every other key but the seed
 * and the load, joined with '/'. */
static int on_point(void *ud, int n, const char *const *c, ss_errbuf *eb)
{
    plot_data *d = ud;
    if (n < 2 || !c[0] || !c[1])
        return SS_OK;
    char buf[1024], name[NAME_MAX_] = "";
    snprintf(buf, sizeof buf, "%s", c[1]);
    double load = 1;
    char *save = NULL;
    size_t used = 0;
    for (char *kv = strtok_r(buf, ";", &save); kv; kv = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq)
            continue;
        *eq = 0;
        if (!strcmp(kv, "rate")) {
            if (ss_parse_doublez(eq + 1, &load))
                load = 1;
        } else if (strcmp(kv, "run.seed")) {
            const char *part = strcmp(kv, "policy") ? kv : NULL;
            int w = part ? snprintf(name + used, sizeof name - used, "%s%s=%s", used ? "/" : "",
                                    kv, eq + 1)
                         : snprintf(name + used, sizeof name - used, "%s%s", used ? "/" : "",
                                    eq + 1);
            if (w > 0 && (size_t)w < sizeof name - used)
                used += (size_t)w;
        }
    }
    for (char *p = name; *p; p++)
        if (*p == ' ' || *p == '"')
            *p = '_'; /* gnuplot's word() splits titles on blanks */
    return add_run(d, strtoll(c[0], NULL, 10), used ? name : "all", load, eb);
}

/* Without sweeps: one series per cluster policy and placement, the load is rate_scale. */
static int on_run(void *ud, int n, const char *const *c, ss_errbuf *eb)
{
    plot_data *d = ud;
    if (n < 4 || !c[0])
        return SS_OK;
    char name[NAME_MAX_];
    snprintf(name, sizeof name, "%s%s", c[1] ? c[1] : "container",
             c[2] && !strcmp(c[2], "slice") ? "+slice" : "");
    double load = c[3] ? strtod(c[3], NULL) : 1;
    return add_run(d, strtoll(c[0], NULL, 10), name, load, eb);
}

static int on_summary(void *ud, int n, const char *const *c, ss_errbuf *eb)
{
    (void)eb;
    plot_data *d = ud;
    if (n < 5 || !c[0])
        return SS_OK;
    int64_t id = strtoll(c[0], NULL, 10);
    for (size_t i = 0; i < d->n_runs; i++)
        if (d->runs[i].id == id) {
            prun *r = &d->runs[i];
            r->out_tps = c[1] ? strtod(c[1], NULL) : 0;
            r->goodput = c[2] ? strtod(c[2], NULL) : 0;
            r->sla = c[3] ? strtod(c[3], NULL) : 0;
            r->ttft_p99 = c[4] ? strtod(c[4], NULL) : 0;
            r->have_summary = 1;
        }
    return SS_OK;
}

static int on_text(void *ud, int n, const char *const *c, ss_errbuf *eb)
{
    (void)eb;
    if (n >= 1 && c[0])
        snprintf(ud, NAME_MAX_, "%s", c[0]);
    return SS_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int load_data(plot_data *d, const char *db, const char *sweep, double want_load,
                     ss_errbuf *eb)
{
    if (access(db, R_OK) != 0) /* the user's input: exit status 2 */
        return ss_err(eb, SS_EPARSE, "%s: cannot open: %s", db, strerror(errno));
    int rc = store_open(&d->st, db, eb);
    char name[NAME_MAX_] = "";
    if (!rc && sweep)
        snprintf(name, sizeof name, "%s", sweep);
    else if (!rc)
        rc = store_query(d->st, "SELECT sweep FROM sweep_points ORDER BY run_id DESC LIMIT 1",
                         NULL, 0, on_text, name, eb);
    const char *p[1] = {name};
    if (!rc && name[0]) {
        rc = store_query(d->st, "SELECT run_id, point FROM sweep_points WHERE sweep = ?1"
                                " ORDER BY run_id", p, 1, on_point, d, eb);
        snprintf(d->what, sizeof d->what, "%s", name);
    } else if (!rc) {
        rc = store_query(d->st, "SELECT run_id, cluster_policy, ops, rate_scale FROM runs"
                                " ORDER BY run_id", NULL, 0, on_run, d, eb);
        const char *b = strrchr(db, '/');
        snprintf(d->what, sizeof d->what, "%s", b ? b + 1 : db);
    }
    if (!rc && !d->n_runs)
        rc = ss_err(eb, SS_EPARSE, "%s: no runs%s%s%s", db, name[0] ? " in sweep '" : "", name,
                    name[0] ? "'" : "");
    if (!rc)
        rc = store_query(d->st, "SELECT run_id, output_tokens_per_s, goodput_tokens_per_s,"
                                " sla_violation_rate, ttft_p99_ms FROM summary", NULL, 0,
                         on_summary, d, eb);
    if (rc)
        return rc;
    qsort(d->loads, (size_t)d->n_loads, sizeof *d->loads, cmp_double);
    /* single-load kinds: --load, else the highest load every series has */
    d->load = d->loads[d->n_loads - 1];
    for (int k = d->n_loads - 1; k >= 0 && isnan(want_load); k--) {
        int all = 1;
        for (int s = 0; s < d->n_series && all; s++) {
            int has = 0;
            for (size_t i = 0; i < d->n_runs && !has; i++)
                has = d->runs[i].series == s && d->runs[i].load == d->loads[k];
            all = has;
        }
        if (all) {
            d->load = d->loads[k];
            break;
        }
    }
    if (!isnan(want_load)) {
        int found = 0;
        for (int k = 0; k < d->n_loads; k++)
            found |= d->loads[k] == want_load;
        if (!found)
            return ss_err(eb, SS_EPARSE, "--load %g: no run at that load", want_load);
        d->load = want_load;
    }
    return SS_OK;
}

/* The run of series s at the chosen load (the first, i.e. the lowest run id), or NULL. */
static const prun *run_at(const plot_data *d, int s)
{
    for (size_t i = 0; i < d->n_runs; i++)
        if (d->runs[i].series == s && d->runs[i].load == d->load)
            return &d->runs[i];
    return NULL;
}

/* Run `sql` (one parameter: the run id) on series s's run at the chosen load; nothing when the
 * series has no run there. */
static int query_run(const plot_data *d, int s, const char *sql, store_row_fn *fn, void *ud,
                     ss_errbuf *eb)
{
    const prun *r = run_at(d, s);
    if (!r)
        return SS_OK;
    char id[24];
    snprintf(id, sizeof id, "%lld", (long long)r->id);
    const char *p[1] = {id};
    return store_query(d->st, sql, p, 1, fn, ud, eb);
}

/* ---- writing gnuplot input --------------------------------------------------------------- */

static void titles(FILE *g, const plot_data *d)
{
    fprintf(g, "nseries = %d\ntitles = \"", d->n_series);
    for (int s = 0; s < d->n_series; s++)
        fprintf(g, "%s%s", s ? " " : "", d->series[s]);
    fprintf(g, "\"\nwhat = \"%s\"\nload = %.17g\n", d->what, d->load);
}

/* Means over seeds per (series, load): column 0 out_tps, 1 goodput, 2 sla %, 3 ttft p99. */
static void by_load(FILE *g, const plot_data *d, const char *block, int a, int b)
{
    fprintf(g, "$%s << EOD\n", block);
    for (int s = 0; s < d->n_series; s++) {
        for (int k = 0; k < d->n_loads; k++) {
            double sum[4] = {0}, n = 0;
            for (size_t i = 0; i < d->n_runs; i++) {
                const prun *r = &d->runs[i];
                if (r->series != s || r->load != d->loads[k] || !r->have_summary)
                    continue;
                sum[0] += r->out_tps, sum[1] += r->goodput, sum[2] += 100 * r->sla;
                sum[3] += r->ttft_p99, n++;
            }
            if (n > 0)
                fprintf(g, "%g %g %g\n", d->loads[k], sum[a] / n, sum[b] / n);
        }
        fprintf(g, "\n\n");
    }
    fprintf(g, "EOD\n");
}

typedef struct cdf {
    double *v;
    size_t n, cap;
} cdf;

static int on_value(void *ud, int n, const char *const *c, ss_errbuf *eb)
{
    cdf *x = ud;
    if (n < 1 || !c[0])
        return SS_OK;
    if (ss_grow((void **)&x->v, &x->cap, x->n + 1, sizeof *x->v))
        return ss_err(eb, SS_ENOMEM, "out of memory");
    x->v[x->n++] = strtod(c[0], NULL);
    return SS_OK;
}

/* One datablock of CDFs of `col` of the measured completed requests, one index per series,
 * at most 400 points each. */
static int cdf_block(FILE *g, const plot_data *d, const char *block, const char *col,
                     ss_errbuf *eb)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT %s FROM requests WHERE run_id = ?1 AND measured = 1 AND"
                              " status = 'completed' AND %s > 0 ORDER BY %s", col, col, col);
    fprintf(g, "$%s << EOD\n", block);
    int rc = SS_OK;
    for (int s = 0; !rc && s < d->n_series; s++) {
        cdf x = {0};
        rc = query_run(d, s, sql, on_value, &x, eb);
        for (size_t k = 0; !rc && x.n && k < 400; k++) {
            size_t i = (size_t)((double)(x.n - 1) * k / 399.0);
            fprintf(g, "%g %g\n", x.v[i], (double)(i + 1) / (double)x.n);
        }
        if (!x.n)
            fprintf(g, "1 0\n"); /* keeps the index in place */
        fprintf(g, "\n\n");
        ss_free(x.v);
    }
    fprintf(g, "EOD\n");
    return rc;
}

typedef struct rows_ctx {
    FILE *g;
    const char *prefix;
} rows_ctx;

static int on_gpu(void *ud, int n, const char *const *c, ss_errbuf *eb)
{
    (void)eb;
    rows_ctx *x = ud;
    if (n < 4 || !c[0])
        return SS_OK;
    double dev = c[1] ? strtod(c[1], NULL) : 0, busy = c[2] ? strtod(c[2], NULL) : 0;
    double idle = c[3] ? strtod(c[3], NULL) : 0, host = busy > dev ? busy - dev : 0;
    double total = dev + host + idle;
    if (total <= 0)
        total = 1;
    fprintf(x->g, "\"%s/gpu%s\" %g %g %g\n", x->prefix, c[0], 100 * dev / total,
            100 * host / total, 100 * idle / total);
    return SS_OK;
}

/* A table `block` with one row per key (0..rows-1, labelled by label()) and one column per
 * series, from a query returning (key, value) for a run. */
typedef struct grid_ctx {
    double v[MAX_SERIES][16];
    int have[MAX_SERIES][16];
    int s, max_key;
    double scale;
} grid_ctx;

static int on_pair(void *ud, int n, const char *const *c, ss_errbuf *eb)
{
    (void)eb;
    grid_ctx *x = ud;
    if (n < 2 || !c[0] || !c[1])
        return SS_OK;
    int k = atoi(c[0]);
    if (k < 0 || k >= 16)
        return SS_OK;
    x->v[x->s][k] = strtod(c[1], NULL) * x->scale;
    x->have[x->s][k] = 1;
    if (k > x->max_key)
        x->max_key = k;
    return SS_OK;
}

static int grid_block(FILE *g, const plot_data *d, const char *block, const char *sql,
                      double scale, const char *const *labels, ss_errbuf *eb)
{
    grid_ctx *x = ss_calloc(1, sizeof *x);
    if (!x)
        return ss_err(eb, SS_ENOMEM, "out of memory");
    x->scale = scale;
    x->max_key = -1;
    int rc = SS_OK;
    for (int s = 0; !rc && s < d->n_series; s++) {
        x->s = s;
        rc = query_run(d, s, sql, on_pair, x, eb);
    }
    fprintf(g, "$%s << EOD\n", block);
    for (int k = 0; !rc && k <= x->max_key; k++) {
        if (labels)
            fprintf(g, "\"%s\"", labels[k]);
        else
            fprintf(g, "%d", k);
        for (int s = 0; s < d->n_series; s++)
            fprintf(g, x->have[s][k] ? " %g" : " NaN", x->v[s][k]);
        fputc('\n', g);
    }
    fprintf(g, "EOD\n");
    ss_free(x);
    return rc;
}

static int write_kind(FILE *g, const plot_data *d, int kind, ss_errbuf *eb)
{
    static const char *const buckets[] = {"<10us", "10-100us", "0.1-1ms", "1-10ms",
                                          "10-100ms", "0.1-1s", "1-10s", ">=10s"};
    titles(g, d);
    int rc = SS_OK;
    switch (kind) {
    case 0: by_load(g, d, "DATA", 0, 1); break;
    case 1: by_load(g, d, "DATA", 2, 3); break;
    case 2:
        rc = cdf_block(g, d, "TTFT", "ttft_ms", eb);
        if (!rc)
            rc = cdf_block(g, d, "E2E", "e2e_ms", eb);
        break;
    case 3:
        fprintf(g, "$DATA << EOD\n");
        for (int s = 0; !rc && s < d->n_series; s++) {
            rows_ctx x = {g, d->series[s]};
            rc = query_run(d, s, "SELECT gpu, device_busy_s, busy_s, idle_s FROM gpus"
                                 " WHERE run_id = ?1 ORDER BY gpu", on_gpu, &x, eb);
        }
        fprintf(g, "EOD\n");
        break;
    case 4:
        rc = grid_block(g, d, "DATA", "SELECT bucket, gpu_s FROM idle_slices WHERE run_id = ?1",
                        1, buckets, eb);
        break;
    default:
        rc = grid_block(g, d, "SLA", "SELECT tier, sla_violation_rate FROM tiers"
                                     " WHERE run_id = ?1", 100, NULL, eb);
        if (!rc)
            rc = grid_block(g, d, "TTFT", "SELECT tier, ttft_p99_ms FROM tiers"
                                          " WHERE run_id = ?1", 1, NULL, eb);
        break;
    }
    return rc;
}

/* ---- the command ------------------------------------------------------------------------ */

static const char *plots_dir(void)
{
    const char *env = getenv("SLICESIM_PLOTS");
    if (env && *env)
        return env;
    if (access("plots/throughput-vs-load.gp", R_OK) == 0)
        return "plots";
    return SS_SOURCE_ROOT "/plots";
}

static int render(const plot_data *d, int kind, const char *dir, const char *fmt, ss_errbuf *eb)
{
    char out[4096], script[4096];
    snprintf(out, sizeof out, "%s/%s.%s", dir, kinds[kind], fmt);
    snprintf(script, sizeof script, "%s/%s.gp", plots_dir(), kinds[kind]);
    if (access(script, R_OK) != 0)
        return ss_err(eb, SS_EIO, "%s: cannot open: %s", script, strerror(errno));
    FILE *g = popen("gnuplot", "w");
    if (!g)
        return ss_err(eb, SS_EIO, "cannot start gnuplot: %s", strerror(errno));
    if (!strcmp(fmt, "png"))
        fprintf(g, "set terminal pngcairo size 1100,480 font \",10\" noenhanced\n");
    else
        fprintf(g, "set terminal svg size 1100,480 font \"sans,10\" noenhanced\n");
    fprintf(g, "set output '%s'\n", out);
    int rc = write_kind(g, d, kind, eb);
    fprintf(g, "load '%s'\nset output\n", script);
    int st = pclose(g);
    if (!rc && st != 0)
        rc = ss_err(eb, SS_EIO, "gnuplot failed drawing %s (status %d)", out, st);
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: slicesim plot DB [--kind KIND[,KIND...]] [-o DIR] [--sweep NAME] [--load X]\n"
        "                        [--format png|svg|both]\n"
        "\n"
        "Draw figures from a results database with gnuplot (scripts in plots/KIND.gp, data\n"
        "piped in). Runs are grouped by a sweep's points (policy and grid keys; seeds averaged):\n"
        "--sweep, else the newest sweep in DB (`slicesim sweep`, `slicesim compare`); a database\n"
        "without sweeps groups runs by cluster policy and placement at their rate_scale.\n"
        "\n"
        "  --kind LIST     any of throughput-vs-load, sla-vs-load (against load), latency-cdf,\n"
        "                  gpu-timeline, idle-slices, tiers (at one load); default all\n"
        "  -o DIR          output folder (default plots/out; created)\n"
        "  --sweep NAME    which sweep of DB\n"
        "  --load X        the load of the one-load kinds (default: the highest every policy has)\n"
        "  --format F      png, svg or both (default both)\n"
        "  -h, --help      this help\n"
        "\n"
        "Exit status: 0 success, 1 gnuplot or the database failed, 2 bad input or usage.\n");
}

static int usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "slicesim: plot: %s%s%s\n", msg, arg ? arg : "", arg ? "'" : "");
    return CLI_EUSAGE;
}

int cmd_plot(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"kind", required_argument, NULL, 'k'}, {"sweep", required_argument, NULL, 's'},
        {"load", required_argument, NULL, 'l'}, {"format", required_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},       {NULL, 0, NULL, 0},
    };
    const char *dir = "plots/out", *sweep = NULL, *fmt = "both";
    int want[N_KINDS] = {0}, any = 0;
    double load = NAN;
    char kind_text[512];
    opterr = 0;
    optind = 1;
    if (cli_check_long_options("plot", argc, argv, ":ho:", longopts))
        return CLI_EUSAGE;
    for (int c; (c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1;) {
        switch (c) {
        case 'h': usage(stdout); return CLI_OK;
        case 'o': dir = optarg; break;
        case 's': sweep = optarg; break;
        case 'f':
            if (strcmp(optarg, "png") && strcmp(optarg, "svg") && strcmp(optarg, "both"))
                return usage_error("--format: expected png, svg or both, got '", optarg);
            fmt = optarg;
            break;
        case 'l':
            if (ss_parse_doublez(optarg, &load) || !(load > 0))
                return usage_error("--load: expected a positive number, got '", optarg);
            break;
        case 'k': {
            char *items[N_KINDS * 2];
            snprintf(kind_text, sizeof kind_text, "%s", optarg);
            int n = app_split_list(kind_text, items, N_KINDS * 2);
            if (n < 1)
                return usage_error("--kind: expected a comma-separated list, got '", optarg);
            for (int i = 0; i < n; i++) {
                int k = 0;
                while (k < N_KINDS && strcmp(kinds[k], items[i]))
                    k++;
                if (k == N_KINDS)
                    return usage_error("--kind: unknown kind (see --help): '", items[i]);
                want[k] = any = 1;
            }
            break;
        }
        case ':': return usage_error("option needs an argument: '", argv[optind - 1]);
        default: return usage_error("unknown option '", argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        return usage_error("expected one results database (see --help)", NULL);
    if (!any)
        for (int k = 0; k < N_KINDS; k++)
            want[k] = 1;
    plot_data d = {0};
    ss_errbuf eb = {""};
    int rc = load_data(&d, argv[optind], sweep, load, &eb);
    if (!rc && mkdir(dir, 0777) != 0 && errno != EEXIST)
        rc = ss_err(&eb, SS_EIO, "%s: cannot create: %s", dir, strerror(errno));
    for (int k = 0; !rc && k < N_KINDS; k++) {
        if (!want[k])
            continue;
        if (strcmp(fmt, "svg"))
            rc = render(&d, k, dir, "png", &eb);
        if (!rc && strcmp(fmt, "png"))
            rc = render(&d, k, dir, "svg", &eb);
        if (!rc)
            printf("  %s/%s.%s\n", dir, kinds[k], strcmp(fmt, "both") ? fmt : "{png,svg}");
    }
    if (rc)
        fprintf(stderr, "slicesim: plot: %s\n", eb.msg);
    store_close(&d.st);
    ss_free(d.runs);
    return cli_status_of(rc);
}
