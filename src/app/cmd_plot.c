/* `slicesim plot DB`: figures from a results database, drawn by gnuplot through a pipe. The
 * runs come from a sweep's points (policy, rate and other grid keys; seeds are averaged) or,
 * for a database without sweeps, from the runs themselves (a series per setting that differs,
 * at their load or rate_scale). Each kind writes its data as gnuplot datablocks and loads
 * plots/KIND.gp. */
#include "app/bundle.h"
#include "app/cli.h"

#include "core/ss_alloc.h"
#include "core/ss_parse.h"
#include "store/store.h"

#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
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
        return ss_err(eb, SS_EINVAL, "more than %d series to plot (use --sweep)", MAX_SERIES);
    snprintf(d->series[d->n_series], NAME_MAX_, "%s", name);
    return d->n_series++;
}

static int add_run(plot_data *d, int64_t id, const char *series, double load, ss_errbuf *eb)
{
    int s = series_of(d, series, eb);
    if (s < 0)
        return s;
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
static int on_point(void *ud, int64_t run_id, const char *point, ss_errbuf *eb)
{
    plot_data *d = ud;
    char buf[1024], name[NAME_MAX_] = "";
    snprintf(buf, sizeof buf, "%s", point);
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
    return add_run(d, run_id, used ? name : "all", load, eb);
}

/* ---- plain replays: one series per setting, whatever differs between the runs ----------- */

/* A run's settings as (key, value) pairs: its scenario's keys (section.key), or for a run
 * stored without one (an old database) its runs columns. Left out: what the series name starts
 * with (cluster policy and placement), what is averaged (the seed), where it was stored, and
 * the load, which is the x axis (a tenant's rate_scale is kept relative to the load). */
typedef struct pkv {
    char key[64], val[96];
} pkv;

typedef struct prow {
    int64_t id;
    double load;
    char base[NAME_MAX_];  /* cluster policy, "+slice" */
    pkv *kv;
    size_t n_kv, cap_kv;
} prow;

typedef struct prows {
    prow *r;
    size_t n, cap;
} prows;

static int add_kv(prow *r, const char *key, const char *val, ss_errbuf *eb)
{
    if (ss_grow((void **)&r->kv, &r->cap_kv, r->n_kv + 1, sizeof *r->kv))
        return ss_err(eb, SS_ENOMEM, "out of memory");
    const char *slash = strrchr(val, '/'); /* paths: their file name */
    pkv *p = &r->kv[r->n_kv++];
    snprintf(p->key, sizeof p->key, "%s", key);
    snprintf(p->val, sizeof p->val, "%s", slash && slash[1] ? slash + 1 : val);
    return SS_OK;
}

static int is_left_out(const char *key)
{
    static const char *const out[] = {"run.seed", "run.db", "policy.cluster", "policy.ops"};
    for (size_t i = 0; i < sizeof out / sizeof *out; i++)
        if (!strcmp(key, out[i]))
            return 1;
    return 0;
}

static int scenario_kv(prow *r, const char *ini, ss_errbuf *eb)
{
    char sect[64] = "", line[512];
    int rc = SS_OK;
    for (const char *p = ini; !rc && *p;) {
        size_t len = strcspn(p, "\n");
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
        p += len + (p[len] == '\n');
        char *eq = strchr(line, '='), *end;
        if (line[0] == '[' && (end = strchr(line, ']'))) {
            snprintf(sect, sizeof sect, "%.*s", (int)(end - line - 1), line + 1);
            continue;
        }
        if (line[0] == ';' || line[0] == '#' || !eq)
            continue;
        char *k = line, *v = eq + 1;
        for (end = eq; end > k && end[-1] == ' '; end--)
            ;
        *end = 0;
        while (*v == ' ')
            v++;
        char key[sizeof sect + sizeof line + 2], num[32];
        snprintf(key, sizeof key, "%s.%s", sect, k);
        size_t kl = strlen(key);
        if (is_left_out(key))
            continue;
        if (kl > 11 && !strcmp(key + kl - 11, ".rate_scale") && r->load > 0) {
            snprintf(num, sizeof num, "%g", strtod(v, NULL) / r->load);
            v = num;
        }
        rc = add_kv(r, key, v, eb);
    }
    return rc;
}

/* A run: its settings are its scenario's keys, or for a run stored without a scenario the
 * runs columns store_run_setting_names names. */
static int on_run(void *ud, const store_run_row *run, ss_errbuf *eb)
{
    prows *x = ud;
    if (ss_grow((void **)&x->r, &x->cap, x->n + 1, sizeof *x->r))
        return ss_err(eb, SS_ENOMEM, "out of memory");
    prow *r = &x->r[x->n++];
    *r = (prow){.id = run->run_id, .load = isnan(run->load) ? 1 : run->load};
    snprintf(r->base, sizeof r->base, "%s%s", run->cluster_policy ? run->cluster_policy
                                                                  : "container",
             run->ops && !strcmp(run->ops, "slice") ? "+slice" : "");
    if (run->scenario_ini && *run->scenario_ini)
        return scenario_kv(r, run->scenario_ini, eb);
    int rc = SS_OK;
    for (int i = 0; !rc && i < STORE_RUN_SETTINGS; i++)
        rc = add_kv(r, store_run_setting_names[i], run->settings[i] ? run->settings[i] : "",
                    eb);
    return rc;
}

static const char *kv_get(const prow *r, const char *key)
{
    for (size_t i = 0; i < r->n_kv; i++)
        if (!strcmp(r->kv[i].key, key))
            return r->kv[i].val;
    return NULL;
}

/* Whether key has different values (or is missing) across the runs. */
static int key_differs(const prows *x, const char *key)
{
    const char *first = kv_get(&x->r[0], key);
    for (size_t i = 1; i < x->n; i++) {
        const char *v = kv_get(&x->r[i], key);
        if (!v != !first || (v && strcmp(v, first)))
            return 1;
    }
    return 0;
}

/* The keys that differ, in the first run's order then the others', as "k1, k2, ..." in list. */
static void differing_keys(const prows *x, char *list, size_t size)
{
    size_t used = 0;
    list[0] = 0;
    for (size_t i = 0; i < x->n; i++)
        for (size_t k = 0; k < x->r[i].n_kv; k++) {
            const char *key = x->r[i].kv[k].key;
            int seen = 0;
            for (size_t j = 0; j < i && !seen; j++)
                seen = kv_get(&x->r[j], key) != NULL;
            for (size_t kk = 0; kk < k && !seen; kk++)
                seen = !strcmp(x->r[i].kv[kk].key, key);
            if (seen || !key_differs(x, key))
                continue;
            int w = snprintf(list + used, size - used, "%s%s", used ? ", " : "", key);
            if (w > 0 && (size_t)w < size - used)
                used += (size_t)w;
        }
}

/* A key's short name: after its last '.', unless another differing key ends the same. */
static const char *short_key(const char *key, const char *list)
{
    const char *dot = strrchr(key, '.');
    if (!dot)
        return key;
    char tail[80];
    snprintf(tail, sizeof tail, ".%s", dot + 1);
    int n = 0;
    for (const char *p = list; (p = strstr(p, tail)); p += strlen(tail)) {
        char after = p[strlen(tail)];
        n += after == ',' || after == 0;
    }
    return n > 1 ? key : dot + 1;
}

/* Series names: the cluster policy and placement, then key=value for every key that differs
 * between the runs. Refuses, listing what differs, when the names do not fit or are too many. */
static int add_plain_runs(plot_data *d, const prows *x, ss_errbuf *eb)
{
    char list[1024];
    differing_keys(x, list, sizeof list);
    int rc = SS_OK;
    for (size_t i = 0; !rc && i < x->n; i++) {
        const prow *r = &x->r[i];
        char name[NAME_MAX_];
        size_t used = (size_t)snprintf(name, sizeof name, "%s", r->base);
        int fits = used < sizeof name;
        for (const char *p = list; fits && *p;) {
            char key[160];
            size_t len = strcspn(p, ",");
            snprintf(key, sizeof key, "%.*s", (int)len, p);
            p += len + (p[len] == ',') + (p[len] == ',' && p[len + 1] == ' ');
            const char *v = kv_get(r, key);
            int w = snprintf(name + used, sizeof name - used, "/%s=%s", short_key(key, list),
                             v ? (*v ? v : "\"\"") : "none");
            fits = w > 0 && (size_t)w < sizeof name - used;
            used += fits ? (size_t)w : 0;
        }
        for (char *p = name; *p; p++)
            if (*p == ' ' || *p == '"')
                *p = '_'; /* gnuplot's word() splits titles on blanks */
        if (!fits)
            return ss_err(eb, SS_EPARSE, "the runs differ in too much to name a series each (%s);"
                                         " plot a sweep, or fewer runs", list);
        rc = add_run(d, r->id, name, r->load, eb);
        if (rc == SS_EINVAL)
            return ss_err(eb, SS_EPARSE, "more than %d series to plot: the runs differ in %s;"
                                         " plot a sweep, or fewer runs", MAX_SERIES, list);
    }
    return rc;
}

/* A figure not stored (NULL, read as NaN) counts as 0. */
static double or0(double v) { return isnan(v) ? 0 : v; }

static int on_summary(void *ud, const store_summary_row *row, ss_errbuf *eb)
{
    (void)eb;
    plot_data *d = ud;
    for (size_t i = 0; i < d->n_runs; i++)
        if (d->runs[i].id == row->run_id) {
            prun *r = &d->runs[i];
            r->out_tps = or0(row->output_tokens_per_s);
            r->goodput = or0(row->goodput_tokens_per_s);
            r->sla = or0(row->sla_violation_rate);
            r->ttft_p99 = or0(row->ttft_p99_ms);
            r->have_summary = 1;
        }
    return SS_OK;
}

/* The newest sweep's name into name (size bytes; "" when the database has none). */
static int newest_sweep(store *st, char *name, size_t size, ss_errbuf *eb)
{
    char *got = NULL;
    int rc = store_newest_sweep(st, &got, eb);
    if (!rc && got)
        snprintf(name, size, "%s", got);
    ss_free(got);
    return rc;
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
    int rc = store_open_readonly(&d->st, db, eb);
    char name[NAME_MAX_] = "";
    if (!rc && sweep)
        snprintf(name, sizeof name, "%s", sweep);
    else if (!rc)
        rc = newest_sweep(d->st, name, sizeof name, eb);
    if (!rc && name[0]) {
        rc = store_sweep_points(d->st, name, on_point, d, eb);
        snprintf(d->what, sizeof d->what, "%s", name);
    } else if (!rc) {
        prows x = {0};
        rc = store_runs(d->st, on_run, &x, eb);
        if (!rc && x.n)
            rc = add_plain_runs(d, &x, eb);
        for (size_t i = 0; i < x.n; i++)
            ss_free(x.r[i].kv);
        ss_free(x.r);
        const char *b = strrchr(db, '/');
        snprintf(d->what, sizeof d->what, "%s", b ? b + 1 : db);
    }
    if (!rc && !d->n_runs)
        rc = ss_err(eb, SS_EPARSE, "%s: no runs%s%s%s", db, name[0] ? " in sweep '" : "", name,
                    name[0] ? "'" : "");
    if (!rc)
        rc = store_summaries(d->st, on_summary, d, eb);
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

/* One datablock of CDFs of a latency of the measured completed requests, one index per
 * series, at most 400 points each. */
static int cdf_block(FILE *g, const plot_data *d, const char *block, store_latency which,
                     ss_errbuf *eb)
{
    fprintf(g, "$%s << EOD\n", block);
    int rc = SS_OK;
    for (int s = 0; !rc && s < d->n_series; s++) {
        const prun *r = run_at(d, s);
        double *v = NULL;
        size_t n = 0;
        if (r)
            rc = store_run_latencies(d->st, r->id, which, &v, &n, eb);
        for (size_t k = 0; !rc && n && k < 400; k++) {
            size_t i = (size_t)((double)(n - 1) * k / 399.0);
            fprintf(g, "%g %g\n", v[i], (double)(i + 1) / (double)n);
        }
        if (!n)
            fprintf(g, "1 0\n"); /* keeps the index in place */
        fprintf(g, "\n\n");
        ss_free(v);
    }
    fprintf(g, "EOD\n");
    return rc;
}

/* A GPU's time over the measurement window: one row "tenant gpuN" compute_% host_% idle_%,
 * where idle is the idle slices less the host phases, so that the three add up to the window. */
static int on_gpu(void *ud, const store_gpu_time_row *row, ss_errbuf *eb)
{
    (void)eb;
    FILE *g = ud;
    const char *t = row->tenant;
    double w = isnan(row->window_s) ? 0 : row->window_s;
    if (!(w > 0) || isnan(row->compute_s) || isnan(row->host_s) || isnan(row->idle_s)) {
        /* a database from before idle slices */
        fprintf(g, "\"%s%sgpu%" PRId64 "\" NaN NaN NaN\n", t ? t : "", t && *t ? " " : "",
                row->gpu);
        return SS_OK;
    }
    fprintf(g, "\"%s%sgpu%" PRId64 "\" %g %g %g\n", t ? t : "", t && *t ? " " : "", row->gpu,
            100 * row->compute_s / w, 100 * row->host_s / w, 100 * (row->idle_s - row->host_s) / w);
    return SS_OK;
}

/* What a grid shows: one value per key of a run. */
typedef enum grid_of { GRID_IDLE_GPU_S, GRID_TIER_SLA, GRID_TIER_TTFT_P99 } grid_of;

/* A table `block` with one row per key (0..max_key, labelled by labels[] or the key) and one
 * column per series. */
typedef struct grid_ctx {
    double v[MAX_SERIES][16];
    int have[MAX_SERIES][16];
    int s, max_key;
    double scale;
    grid_of of;
} grid_ctx;

/* Series x->s has value v (NaN: not stored) at key k. */
static void grid_put(grid_ctx *x, int64_t k, double v)
{
    if (isnan(v) || k < 0 || k >= 16)
        return;
    x->v[x->s][k] = v * x->scale;
    x->have[x->s][k] = 1;
    if (k > x->max_key)
        x->max_key = (int)k;
}

static int on_idle_slice(void *ud, const store_idle_slice_row *row, ss_errbuf *eb)
{
    (void)eb;
    grid_put(ud, row->bucket, row->gpu_s);
    return SS_OK;
}

static int on_tier(void *ud, const store_tier_row *row, ss_errbuf *eb)
{
    (void)eb;
    grid_ctx *x = ud;
    grid_put(x, row->tier, x->of == GRID_TIER_SLA ? row->sla_violation_rate : row->ttft_p99_ms);
    return SS_OK;
}

/* Series s's run at the chosen load into the grid; nothing when it has no run there. */
static int grid_read(grid_ctx *x, const plot_data *d, int s, ss_errbuf *eb)
{
    const prun *r = run_at(d, s);
    x->s = s;
    if (!r)
        return SS_OK;
    if (x->of == GRID_IDLE_GPU_S)
        return store_run_idle_slices(d->st, r->id, on_idle_slice, x, eb);
    return store_run_tiers(d->st, r->id, on_tier, x, eb);
}

static int grid_block(FILE *g, const plot_data *d, const char *block, grid_of of,
                      double scale, const char *const *labels, ss_errbuf *eb)
{
    grid_ctx *x = ss_calloc(1, sizeof *x);
    if (!x)
        return ss_err(eb, SS_ENOMEM, "out of memory");
    x->scale = scale;
    x->max_key = -1;
    x->of = of;
    int rc = SS_OK;
    for (int s = 0; !rc && s < d->n_series; s++)
        rc = grid_read(x, d, s, eb);
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
        rc = cdf_block(g, d, "TTFT", STORE_LAT_TTFT, eb);
        if (!rc)
            rc = cdf_block(g, d, "E2E", STORE_LAT_E2E, eb);
        break;
    case 3: /* one index per series, "none" for a series without a run at this load */
        fprintf(g, "$DATA << EOD\n");
        for (int s = 0; !rc && s < d->n_series; s++) {
            const prun *r = run_at(d, s);
            if (!r)
                fprintf(g, "\"none\" NaN NaN NaN\n");
            else
                rc = store_run_gpu_times(d->st, r->id, on_gpu, g, eb);
            fprintf(g, "\n\n");
        }
        fprintf(g, "EOD\n");
        break;
    case 4:
        rc = grid_block(g, d, "DATA", GRID_IDLE_GPU_S, 1, buckets, eb);
        break;
    default:
        rc = grid_block(g, d, "SLA", GRID_TIER_SLA, 100, NULL, eb);
        if (!rc)
            rc = grid_block(g, d, "TTFT", GRID_TIER_TTFT_P99, 1, NULL, eb);
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

/* ---- running gnuplot --------------------------------------------------------------------- */

#define GNUPLOT_TIMEOUT_ENV "SLICESIM_GNUPLOT_TIMEOUT_S"

/* How long one gnuplot may take: SLICESIM_GNUPLOT_TIMEOUT_S, default 120 s. */
static int gnuplot_timeout(double *s_out, ss_errbuf *eb)
{
    const char *env = getenv(GNUPLOT_TIMEOUT_ENV);
    *s_out = 120;
    if (env && *env && (ss_parse_doublez(env, s_out) || !(*s_out > 0) || *s_out > 1e6))
        return ss_err(eb, SS_EPARSE, GNUPLOT_TIMEOUT_ENV ": expected a positive number of"
                                     " seconds, got '%s'", env);
    return SS_OK;
}

/* Whether an executable gnuplot is on PATH. */
static int gnuplot_on_path(void)
{
    const char *path = getenv("PATH");
    char dir[4096], file[4200];
    for (const char *p = path ? path : "/usr/bin:/bin"; p;) {
        size_t len = strcspn(p, ":");
        snprintf(dir, sizeof dir, "%.*s", (int)(len < sizeof dir ? len : sizeof dir - 1), p);
        snprintf(file, sizeof file, "%s/gnuplot", len ? dir : ".");
        if (access(file, X_OK) == 0)
            return 1;
        p = p[len] ? p + len + 1 : NULL;
    }
    return 0;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Write all of buf to fd before `deadline`: 0, or -1 (errno EPIPE: gnuplot is gone; ETIMEDOUT). */
static int write_until(int fd, const char *buf, size_t n, double deadline)
{
    while (n > 0) {
        double left = deadline - now_s();
        if (left <= 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        int r = poll(&pfd, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            continue;
        ssize_t w = write(fd, buf, n);
        if (w < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (w < 0)
            return -1;
        buf += w, n -= (size_t)w;
    }
    return 0;
}

/* Run gnuplot (in its own process group) on `input`, waiting at most timeout_s for it to read
 * everything and exit; a gnuplot that takes longer is killed, group and all. What failed is
 * named with `out`, the figure being drawn. */
static int run_gnuplot(const char *input, size_t n, const char *out, double timeout_s,
                       ss_errbuf *eb)
{
    if (!gnuplot_on_path())
        return ss_err(eb, SS_EIO, "gnuplot not found; install gnuplot-nox");
    int fds[2];
    if (pipe(fds) != 0)
        return ss_err(eb, SS_EIO, "cannot start gnuplot: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fds[0]), close(fds[1]);
        return ss_err(eb, SS_EIO, "cannot start gnuplot: %s", strerror(e));
    }
    if (pid == 0) {
        setpgid(0, 0);
        dup2(fds[0], STDIN_FILENO);
        close(fds[0]), close(fds[1]);
        execlp("gnuplot", "gnuplot", (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid); /* also here: the kill below must not race the child's own call */
    close(fds[0]);
    struct sigaction ign = {.sa_handler = SIG_IGN}, old;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGPIPE, &ign, &old); /* a gnuplot that exits early is an error, not a signal */
    double deadline = now_s() + timeout_s;
    int wr = write_until(fds[1], input, n, deadline), timed_out = wr && errno == ETIMEDOUT;
    close(fds[1]);
    sigaction(SIGPIPE, &old, NULL);
    int st = 0;
    pid_t got = 0;
    while (!timed_out && (got = waitpid(pid, &st, WNOHANG)) == 0) {
        if (now_s() >= deadline)
            timed_out = 1;
        else
            nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
    }
    if (timed_out || got < 0) {
        kill(-pid, SIGKILL);
        waitpid(pid, &st, 0);
        if (timed_out)
            return ss_err(eb, SS_EIO, "gnuplot did not finish drawing %s within %g s (set "
                                      GNUPLOT_TIMEOUT_ENV " to wait longer)", out, timeout_s);
        return ss_err(eb, SS_EIO, "gnuplot: %s", strerror(errno));
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
        return ss_err(eb, SS_EIO, "gnuplot not found; install gnuplot-nox");
    if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
        return ss_err(eb, SS_EIO, "gnuplot failed drawing %s (exit status %d)", out,
                      WEXITSTATUS(st));
    if (WIFSIGNALED(st))
        return ss_err(eb, SS_EIO, "gnuplot failed drawing %s (killed by signal %d)", out,
                      WTERMSIG(st));
    return SS_OK;
}

static int render(const plot_data *d, int kind, const char *dir, const char *fmt,
                  double timeout_s, ss_errbuf *eb)
{
    char out[4096], script[4096];
    snprintf(out, sizeof out, "%s/%s.%s", dir, kinds[kind], fmt);
    snprintf(script, sizeof script, "%s/%s.gp", plots_dir(), kinds[kind]);
    if (access(script, R_OK) != 0)
        return ss_err(eb, SS_EIO, "%s: cannot open: %s", script, strerror(errno));
    char *input = NULL;
    size_t n = 0;
    FILE *g = open_memstream(&input, &n);
    if (!g)
        return ss_err(eb, SS_ENOMEM, "out of memory");
    if (!strcmp(fmt, "png"))
        fprintf(g, "set terminal pngcairo size 1100,480 font \",10\" noenhanced\n");
    else
        fprintf(g, "set terminal svg size 1100,480 font \"sans,10\" noenhanced\n");
    fprintf(g, "set output '%s'\n", out);
    int rc = write_kind(g, d, kind, eb);
    fprintf(g, "load '%s'\nset output\n", script);
    if (fclose(g) != 0 && !rc)
        rc = ss_err(eb, SS_ENOMEM, "out of memory");
    if (!rc)
        rc = run_gnuplot(input, n, out, timeout_s, eb);
    free(input); /* open_memstream's buffer comes from malloc */
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
        "without sweeps groups runs by every scenario key that differs between them, at their\n"
        "first tenant's rate_scale (more than 24 such series are refused).\n"
        "\n"
        "  --kind LIST     any of throughput-vs-load, sla-vs-load (against load), latency-cdf,\n"
        "                  gpu-timeline, idle-slices, tiers (at one load); default all\n"
        "  -o DIR          output folder (default plots/out; created)\n"
        "  --sweep NAME    which sweep of DB\n"
        "  --load X        the load of the one-load kinds (default: the highest every policy has)\n"
        "  --format F      png, svg or both (default both)\n"
        "  -h, --help      this help\n"
        "\n"
        "gnuplot comes from PATH; one that runs longer than SLICESIM_GNUPLOT_TIMEOUT_S seconds\n"
        "(default 120) for a figure is killed.\n"
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
    double timeout_s;
    int rc = gnuplot_timeout(&timeout_s, &eb);
    if (!rc)
        rc = load_data(&d, argv[optind], sweep, load, &eb);
    if (!rc && mkdir(dir, 0777) != 0 && errno != EEXIST)
        rc = ss_err(&eb, SS_EIO, "%s: cannot create: %s", dir, strerror(errno));
    for (int k = 0; !rc && k < N_KINDS; k++) {
        if (!want[k])
            continue;
        if (strcmp(fmt, "svg"))
            rc = render(&d, k, dir, "png", timeout_s, &eb);
        if (!rc && strcmp(fmt, "png"))
            rc = render(&d, k, dir, "svg", timeout_s, &eb);
        if (!rc)
            printf("  %s/%s.%s\n", dir, kinds[k], strcmp(fmt, "both") ? fmt : "{png,svg}");
    }
    if (rc)
        fprintf(stderr, "slicesim: plot: %s\n", eb.msg);
    store_close(&d.st);
    ss_free(d.runs);
    return cli_status_of(rc);
}
