/* Loading a figure's data: the runs of a results database grouped into series, from a sweep's
 * points (policy and grid keys; seeds averaged) or, for a database without sweeps, from the runs
 * themselves (a series per setting that differs, at their load or rate_scale), with their loads
 * and summaries. What the kinds draw from them is plot_kinds.c's. */
#include "plot/plot_int.h"

#include "core/ss_alloc.h"
#include "core/ss_parse.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- loading ---------------------------------------------------------------------------- */

static int series_of(plot_data *d, const char *name, ss_errbuf *eb)
{
    for (int i = 0; i < d->n_series; i++)
        if (!strcmp(d->series[i], name))
            return i;
    if (d->n_series == PLOT__MAX_SERIES)
        return ss_err(eb, SS_EINVAL, "more than %d series to plot (use --sweep)", PLOT__MAX_SERIES);
    snprintf(d->series[d->n_series], PLOT__NAME_MAX, "%s", name);
    return d->n_series++;
}

static int add_run(plot_data *d, int64_t id, const char *series, double load, ss_errbuf *eb)
{
    int s = series_of(d, series, eb);
    if (s < 0)
        return s;
    if (ss_grow((void **)&d->runs, &d->cap_runs, d->n_runs + 1, sizeof *d->runs))
        return ss_err(eb, SS_ENOMEM, "out of memory");
    d->runs[d->n_runs++] = (plot__run){.id = id, .series = s, .load = load};
    int k = 0;
    while (k < d->n_loads && d->loads[k] != load)
        k++;
    if (k == d->n_loads && d->n_loads < PLOT__MAX_LOADS)
        d->loads[d->n_loads++] = load;
    return SS_OK;
}

/* A sweep point "k=v;k=v": the series is the policy label and every other key but the seed
 * and the load, joined with '/'. */
static int on_point(void *ud, int64_t run_id, const char *point, ss_errbuf *eb)
{
    plot_data *d = ud;
    char buf[4096], name[PLOT__NAME_MAX] = "";
    double load = 1;
    char *save = NULL;
    size_t used = 0;
    int fits = (size_t)snprintf(buf, sizeof buf, "%s", point) < sizeof buf;
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
            fits = fits && w >= 0 && (size_t)w < sizeof name - used;
            if (fits)
                used += (size_t)w;
        }
    }
    /* a name cut short could merge two series into one: refused instead */
    if (!fits)
        return ss_err(eb, SS_EPARSE, "sweep point of run %" PRId64 " ('%.60s...') is too long to "
                                     "name a series (at most %d bytes)", run_id, point,
                      PLOT__NAME_MAX - 1);
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
    char base[PLOT__NAME_MAX];  /* cluster policy, "+slice" */
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
        char name[PLOT__NAME_MAX];
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
        if (!fits)
            return ss_err(eb, SS_EPARSE, "the runs differ in too much to name a series each (%s);"
                                         " plot a sweep, or fewer runs", list);
        rc = add_run(d, r->id, name, r->load, eb);
        if (rc == SS_EINVAL)
            return ss_err(eb, SS_EPARSE, "more than %d series to plot: the runs differ in %s;"
                                         " plot a sweep, or fewer runs", PLOT__MAX_SERIES, list);
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
            plot__run *r = &d->runs[i];
            r->out_tps = or0(row->output_tokens_per_s);
            r->goodput = or0(row->goodput_tokens_per_s);
            r->sla = or0(row->sla_violation_rate);
            r->ttft_p99 = or0(row->ttft_p99_ms);
            r->have_summary = 1;
        }
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
    int rc = store_open_readonly(&d->st, db, eb);
    /* the sweep's whole name (a figure's title shows it cut to fit) */
    char *got = NULL;
    if (!rc && !sweep)
        rc = store_newest_sweep(d->st, &got, eb);
    const char *name = sweep ? sweep : got ? got : "";
    if (!rc && name[0]) {
        rc = store_sweep_points(d->st, name, on_point, d, eb);
        snprintf(d->what, sizeof d->what, "%s", name);
        d->by_sweep = 1;
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
    ss_free(got);
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

int plot_data_load(plot_data **d_out, const char *db_path, const char *sweep, double load,
                   ss_errbuf *eb)
{
    plot_data *d = ss_calloc(1, sizeof *d);
    if (!d)
        return ss_err(eb, SS_ENOMEM, "out of memory");
    int rc = load_data(d, db_path, sweep, load, eb);
    if (rc) {
        plot_data_destroy(&d);
        return rc;
    }
    *d_out = d;
    return SS_OK;
}

void plot_data_destroy(plot_data **d)
{
    if (!*d)
        return;
    store_close(&(*d)->st);
    ss_free((*d)->runs);
    ss_free(*d);
    *d = NULL;
}
