/* What each kind of figure shows, written as gnuplot input: the series' names, then datablocks
 * ($DATA << EOD ... EOD) of the grouped runs' figures: means over seeds against load, latency
 * CDFs, each GPU's time split, idle-slice and per-tier tables. The scripts plots/KIND.gp draw
 * them; plot.c adds the terminal and hands the input to a backend. Every string that comes from
 * a database (series, sweep and tenant names) is written as data gnuplot cannot run: a
 * single-quoted string constant, or a quoted datablock field. */
#include "plot/plot_int.h"

#include "core/ss_alloc.h"
#include "core/ss_stats.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* The run of series s at the chosen load (the first, i.e. the lowest run id), or NULL. */
static const plot__run *run_at(const plot_data *d, int s)
{
    for (size_t i = 0; i < d->n_runs; i++)
        if (d->runs[i].series == s && d->runs[i].load == d->load)
            return &d->runs[i];
    return NULL;
}

/* A byte that would end a command line or a datablock row, or start a new one: written as '?'. */
static int is_control(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}

/* s as a gnuplot single-quoted string constant: gnuplot substitutes nothing inside one (no
 * backquoted command, no @macro, no backslash escape), a quote is doubled, and a control
 * character, which would end the line and so the string, is written as '?'. */
static void gp_string(FILE *g, const char *s)
{
    fputc('\'', g);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '\'')
            fputs("''", g);
        else
            fputc(is_control(*p) ? '?' : *p, g);
    }
    fputc('\'', g);
}

/* s inside a quoted datablock field (the caller writes the quotes): a row stays one row (a
 * control character is '?', so no row can begin with EOD and end the block) and one field (a
 * double quote becomes a single one, a backslash a slash). */
static void gp_field(FILE *g, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        fputc(is_control(*p) ? '?' : *p == '"' ? '\'' : *p == '\\' ? '/' : *p, g);
}

/* The series' names as the array `names` (names[1] the first series), the sweep's as `what`. */
static void titles(FILE *g, const plot_data *d)
{
    fprintf(g, "nseries = %d\narray names[%d]\n", d->n_series, d->n_series > 0 ? d->n_series : 1);
    for (int s = 0; s < d->n_series; s++) {
        fprintf(g, "names[%d] = ", s + 1);
        gp_string(g, d->series[s]);
        fputc('\n', g);
    }
    fputs("what = ", g);
    gp_string(g, d->what);
    fprintf(g, "\nload = %.17g\n", d->load);
}

/* Figure f (0 out_tps, 1 goodput, 2 sla %, 3 ttft p99) of run r. */
static double figure_of(const plot__run *r, int f)
{
    return f == 0 ? r->out_tps : f == 1 ? r->goodput : f == 2 ? 100 * r->sla : r->ttft_p99;
}

/* Per (series, load): "load A B A_hw B_hw", A and B the means over seeds of figures a and b
 * (figure_of) and _hw the half-widths of their two-sided 95 % Student-t intervals (0 with one
 * seed), drawn as error bars. */
static int by_load(FILE *g, const plot_data *d, const char *block, int a, int b, ss_errbuf *eb)
{
    double *xa = ss_malloc((d->n_runs ? d->n_runs : 1) * sizeof *xa);
    double *xb = ss_malloc((d->n_runs ? d->n_runs : 1) * sizeof *xb);
    if (!xa || !xb) {
        ss_free(xa);
        ss_free(xb);
        return ss_err(eb, SS_ENOMEM, "out of memory");
    }
    fprintf(g, "$%s << EOD\n", block);
    for (int s = 0; s < d->n_series; s++) {
        for (int k = 0; k < d->n_loads; k++) {
            size_t n = 0;
            for (size_t i = 0; i < d->n_runs; i++) {
                const plot__run *r = &d->runs[i];
                if (r->series != s || r->load != d->loads[k] || !r->have_summary)
                    continue;
                xa[n] = figure_of(r, a), xb[n++] = figure_of(r, b);
            }
            ss_ci ca, cb;
            ss_ci95(xa, n, &ca);
            ss_ci95(xb, n, &cb);
            if (n > 0)
                fprintf(g, "%g %g %g %g %g\n", d->loads[k], ca.mean, cb.mean, ca.hi - ca.mean,
                        cb.hi - cb.mean);
        }
        fprintf(g, "\n\n");
    }
    fprintf(g, "EOD\n");
    ss_free(xa);
    ss_free(xb);
    return SS_OK;
}

/* One datablock of CDFs of a latency of the measured completed requests, one index per
 * series, at most 400 points each. */
static int cdf_block(FILE *g, const plot_data *d, const char *block, store_latency which,
                     ss_errbuf *eb)
{
    fprintf(g, "$%s << EOD\n", block);
    int rc = SS_OK;
    for (int s = 0; !rc && s < d->n_series; s++) {
        const plot__run *r = run_at(d, s);
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

/* The GPUs of one run by tenant: each tenant's GPUs' shares of the measurement window summed
 * (compute, host phases, idle between iterations: the idle slices less the host phases, so
 * that the three add up to the window), in the order the tenants' first GPUs come. */
#define GPU_TENANTS 64
typedef struct gpu_split {
    char tenant[GPU_TENANTS][PLOT__NAME_MAX];
    double share[GPU_TENANTS][3];
    int n_gpus[GPU_TENANTS], unknown[GPU_TENANTS];
    int n;
} gpu_split;

static int on_gpu(void *ud, const store_gpu_time_row *row, ss_errbuf *eb)
{
    (void)eb;
    gpu_split *x = ud;
    const char *t = row->tenant ? row->tenant : "";
    int i = 0;
    while (i < x->n && strcmp(x->tenant[i], t))
        i++;
    if (i == x->n) {
        if (x->n == GPU_TENANTS)
            return SS_OK; /* more tenants than a figure can label: the rest are not drawn */
        snprintf(x->tenant[x->n++], PLOT__NAME_MAX, "%s", t);
    }
    double w = isnan(row->window_s) ? 0 : row->window_s;
    x->n_gpus[i]++;
    if (!(w > 0) || isnan(row->compute_s) || isnan(row->host_s) || isnan(row->idle_s)) {
        x->unknown[i] = 1; /* a database from before idle slices */
        return SS_OK;
    }
    x->share[i][0] += 100 * row->compute_s / w;
    x->share[i][1] += 100 * row->host_s / w;
    x->share[i][2] += 100 * (row->idle_s - row->host_s) / w;
    return SS_OK;
}

/* One row per tenant of run r: "tenant (N GPUs)" and the mean of its GPUs' three shares. */
static int gpu_rows(FILE *g, const plot_data *d, const plot__run *r, ss_errbuf *eb)
{
    gpu_split *x = ss_calloc(1, sizeof *x);
    if (!x)
        return ss_err(eb, SS_ENOMEM, "out of memory");
    int rc = store_run_gpu_times(d->st, r->id, on_gpu, x, eb);
    for (int i = 0; !rc && i < x->n; i++) {
        fputc('"', g);
        gp_field(g, x->tenant[i]);
        fprintf(g, "%s(%d GPU%s)\"", x->tenant[i][0] ? " " : "", x->n_gpus[i],
                x->n_gpus[i] == 1 ? "" : "s");
        if (x->unknown[i])
            fputs(" NaN NaN NaN\n", g);
        else
            fprintf(g, " %g %g %g\n", x->share[i][0] / x->n_gpus[i],
                    x->share[i][1] / x->n_gpus[i], x->share[i][2] / x->n_gpus[i]);
    }
    ss_free(x);
    return rc;
}

/* What a grid shows: one value per key of a run. */
typedef enum grid_of { GRID_IDLE_GPU_S, GRID_TIER_SLA, GRID_TIER_TTFT_P99 } grid_of;

/* A table `block` with one row per key (0..max_key, labelled by labels[] or the key) and one
 * column per series. */
typedef struct grid_ctx {
    double v[PLOT__MAX_SERIES][16];
    int have[PLOT__MAX_SERIES][16];
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
    const plot__run *r = run_at(d, s);
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

/* Each series' idle GPU time by slice length at the chosen load as a cumulative share: one
 * index per series, a row per decade of slice length, "upper edge in ms" and the share of all
 * its idle time in slices up to that length (the last decade, 10 s and longer, at 100 s).
 * A series without a run there, or with no idle time, has one row "1 NaN". */
static int idle_cdf(FILE *g, const plot_data *d, ss_errbuf *eb)
{
    grid_ctx *x = ss_calloc(1, sizeof *x);
    if (!x)
        return ss_err(eb, SS_ENOMEM, "out of memory");
    x->scale = 1;
    x->max_key = -1;
    x->of = GRID_IDLE_GPU_S;
    int rc = SS_OK;
    for (int s = 0; !rc && s < d->n_series; s++)
        rc = grid_read(x, d, s, eb);
    fprintf(g, "$DATA << EOD\n");
    for (int s = 0; !rc && s < d->n_series; s++) {
        double total = 0, sum = 0;
        for (int k = 0; k <= x->max_key; k++)
            total += x->have[s][k] ? x->v[s][k] : 0;
        if (!(total > 0))
            fprintf(g, "1 NaN\n");
        for (int k = 0; total > 0 && k <= x->max_key; k++) {
            sum += x->have[s][k] ? x->v[s][k] : 0;
            fprintf(g, "%g %g\n", 0.01 * pow(10, k), sum / total); /* bucket k: up to 10^k x 10 us */
        }
        fprintf(g, "\n\n");
    }
    fprintf(g, "EOD\n");
    ss_free(x);
    return rc;
}

/* A capacity command's bundles: one row each, "label" capacity lo hi (its 95 % interval over
 * seeds), the label the bundle's name and its ratio to the reference. */
static int on_capacity(void *ud, const store_capacity_row *row, ss_errbuf *eb)
{
    (void)eb;
    FILE *g = ud;
    fputc('"', g);
    gp_field(g, row->bundle ? row->bundle : "?");
    if (!isnan(row->ratio))
        fprintf(g, " (%.2fx)", row->ratio);
    fputc('"', g);
    fprintf(g, " %g %g %g\n", row->capacity, row->lo, row->hi);
    return SS_OK;
}

static int capacity_block(FILE *g, const plot_data *d, ss_errbuf *eb)
{
    fprintf(g, "$DATA << EOD\n");
    int rc = store_capacities_of(d->st, d->what, on_capacity, g, eb);
    fprintf(g, "EOD\n");
    return rc;
}

static int count_capacity(void *ud, const store_capacity_row *row, ss_errbuf *eb)
{
    (void)row;
    (void)eb;
    (*(int *)ud)++;
    return SS_OK;
}

int plot__write_kind(FILE *g, const plot_data *d, int kind, ss_errbuf *eb)
{
    titles(g, d);
    int rc = SS_OK;
    switch (kind) {
    case 0: rc = by_load(g, d, "DATA", 0, 1, eb); break;
    case 1: rc = by_load(g, d, "DATA", 2, 3, eb); break;
    case 2:
        rc = cdf_block(g, d, "TTFT", STORE_LAT_TTFT, eb);
        if (!rc)
            rc = cdf_block(g, d, "E2E", STORE_LAT_E2E, eb);
        break;
    case 3: /* one index per series, "none" for a series without a run at this load */
        fprintf(g, "$DATA << EOD\n");
        for (int s = 0; !rc && s < d->n_series; s++) {
            const plot__run *r = run_at(d, s);
            if (!r)
                fprintf(g, "\"none\" NaN NaN NaN\n");
            else
                rc = gpu_rows(g, d, r, eb);
            fprintf(g, "\n\n");
        }
        fprintf(g, "EOD\n");
        break;
    case 4:
        rc = idle_cdf(g, d, eb);
        break;
    case 6:
        rc = capacity_block(g, d, eb);
        break;
    default:
        rc = grid_block(g, d, "SLA", GRID_TIER_SLA, 100, NULL, eb);
        if (!rc)
            rc = grid_block(g, d, "TTFT", GRID_TIER_TTFT_P99, 1, NULL, eb);
        break;
    }
    return rc;
}

/* ---- figures with nothing to compare ------------------------------------------------------ */

static int count_tier(void *ud, const store_tier_row *row, ss_errbuf *eb)
{
    (void)eb;
    int *most = ud;
    if (row->tier + 1 > *most)
        *most = (int)row->tier + 1;
    return SS_OK;
}

int plot_kind_degenerate(const plot_data *d, int kind, char *why, size_t n_why, ss_errbuf *eb)
{
    if ((kind == 0 || kind == 1) && d->n_loads < 2) {
        snprintf(why, n_why, "one load (%g): a line against load needs two (compare --rates A,B,... "
                 "or a sweep's rate grid)", d->n_loads ? d->loads[0] : 0.0);
        return 1;
    }
    if (kind == 6) {
        int n = 0;
        int rc = d->by_sweep ? store_capacities_of(d->st, d->what, count_capacity, &n, eb) : 0;
        if (rc)
            return rc;
        if (n)
            return 0;
        snprintf(why, n_why, "%s%s%s holds no capacity results (slicesim capacity --db DB --name "
                 "NAME stores them; plot DB --sweep NAME draws them)",
                 d->by_sweep ? "sweep '" : "these runs", d->by_sweep ? d->what : "",
                 d->by_sweep ? "'" : "");
        return 1;
    }
    if (kind != 5)
        return 0;
    int most = 0;
    for (int s = 0; s < d->n_series; s++) {
        const plot__run *r = run_at(d, s);
        int rc = r ? store_run_tiers(d->st, r->id, count_tier, &most, eb) : SS_OK;
        if (rc)
            return rc;
    }
    if (most > 1)
        return 0;
    snprintf(why, n_why, "every run at load %g has one tier: nothing to compare between tiers",
             d->load);
    return 1;
}
