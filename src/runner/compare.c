/* The same scenario, trace and seed under several policy bundles (and loads), one table with
 * ratios against the first bundle; every run goes to the results database as a point of a
 * sweep named after the scenario, so `slicesim plot` can draw it. Not for options
 * (app/cmd_compare.c). */
#include "runner/compare.h"

#include "runner/bundle.h"
#include "runner/report.h"
#include "runner/static_best.h"

#include "core/ss_alloc.h"
#include "core/ss_strbuf.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* What the table shows of one run. */
typedef struct result {
    int policy;
    double rate;
    metrics_summary m;
    double tier_sla[SS_MAX_TIERS];
    uint32_t n_tiers;
    char search[300];         /* what a searching bundle chose ("": not one) */
} result;

/* One comparison under way. */
typedef struct compare {
    const runner_compare_opts *o;
    char label[RUNNER_COMPARE_MAX_POLICIES][RUNNER_LABEL_MAX]; /* of each bundle */
    char name[300];           /* the sweep's name */
    int n;                    /* points: bundles x loads */
    result *res;              /* n (owned) */
    store *st;                /* the database of every run (NULL: none) */
    FILE *out;
} compare;

/* The scenario for one run: the file, the sets, the bundle, the load. */
static int build(const runner_compare_opts *o, int p, double rate, scn_scenario **out,
                 ss_errbuf *eb)
{
    scn_scenario *sc = NULL;
    int rc = runner_bundle_scenario(o->config, o->sets, o->n_sets, o->db, o->policy[p], &sc, eb);
    if (!rc) /* every tenant's traffic spans the same seconds at every load */
        rc = runner_scale_load(sc, rate, eb);
    if (!rc)
        rc = scn_check(sc, eb);
    if (rc)
        scn_destroy(&sc);
    *out = sc;
    return rc;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static void print_table(const compare *c)
{
    const runner_compare_opts *o = c->o;
    FILE *f = c->out;
    fprintf(f, "slicesim compare: %s, %d bundle(s) x %d load(s); ratios against %s; tokens/s "
               "over the arrival window\n", o->config, o->n_policies, o->n_rates, c->label[0]);
    fprintf(f, "  %-5s %-16s %10s %5s %10s %5s %8s %9s %9s %8s %8s %9s %9s  %s\n", "load",
            "policy", "out tok/s", "x", "goodput", "x", "SLA miss", "TTFT p50", "TTFT p99",
            "TBT p50", "TBT p99", "E2E p50", "E2E p99", "SLA miss by tier");
    for (int i = 0; i < c->n; i++) {
        const result *r = &c->res[i], *b = &c->res[i - i % o->n_policies];
        const metrics_group_summary *a = &r->m.all, *ba = &b->m.all;
        fprintf(f, "  %-5g %-16s %10.1f %5.2f %10.1f %5.2f %7.1f%% %9.0f %9.0f %8.1f %8.1f "
                   "%9.0f %9.0f ",
                r->rate, c->label[r->policy], a->win_output_tokens_per_s,
                ba->win_output_tokens_per_s > 0
                    ? a->win_output_tokens_per_s / ba->win_output_tokens_per_s
                    : 0,
                a->win_goodput_tokens_per_s,
                ba->win_goodput_tokens_per_s > 0
                    ? a->win_goodput_tokens_per_s / ba->win_goodput_tokens_per_s
                    : 0,
                100 * a->sla_violation_rate, a->ttft_ms.p50, a->ttft_ms.p99, a->tbt_ms.p50,
                a->tbt_ms.p99, a->e2e_ms.p50, a->e2e_ms.p99);
        for (uint32_t k = 0; k < r->n_tiers; k++)
            fprintf(f, " t%u %.1f%%", k, 100 * r->tier_sla[k]);
        fputc('\n', f);
    }
    for (int i = 0; i < c->n; i++)
        if (c->res[i].search[0])
            fprintf(f, "  %s at load %g: %s\n", c->label[c->res[i].policy], c->res[i].rate,
                    c->res[i].search);
}

/* Every point (bundle and load) must build before anything runs, so that a bad bundle stores
 * nothing: the scenario, everything a run sets up from it, and arrivals within the simulated
 * time range. Then the caller's check of the files, and the database every run goes to (the
 * first point's scenario names it). */
static int check_points(compare *c, ss_errbuf *eb)
{
    const runner_compare_opts *o = c->o;
    runner_run_opts check_opts = {.profiles = o->profiles, .config = o->config};
    scn_scenario *sc = NULL;
    int rc = SS_OK;
    for (int i = 0; !rc && i < c->n; i++) {
        int p = i % o->n_policies;
        double rate = o->rate[i / o->n_policies];
        runner_static_best_opts so = {.profiles = o->profiles, .config = o->config};
        runner_alloc_problem ap;
        if (!(rc = build(o, p, rate, &sc, eb)) && (rc = runner_run_check(sc, &check_opts, eb)))
            ss_err_prefix(eb, rc, "policy=%s;rate=%g", c->label[p], rate);
        if (!rc && runner_bundle_searches(o->policy[p]) &&
            (rc = runner_static_best_problem(sc, &so, 0, &ap, eb)))
            ss_err_prefix(eb, rc, "policy=%s;rate=%g", c->label[p], rate);
        char note[512];
        if (!rc && i < o->n_policies &&
            runner_bundle_headroom_note(sc, c->label[p], note, sizeof note))
            fprintf(stderr, "slicesim: note: %s\n", note);
        scn_destroy(&sc);
    }
    if (!rc)
        rc = build(o, 0, o->rate[0], &sc, eb);
    if (!rc && o->check_files)
        rc = o->check_files(o->check_files_ud, sc, NULL, eb);
    if (!rc && strcmp(sc->db, "none"))
        rc = store_open(&c->st, sc->db, eb);
    scn_destroy(&sc); /* also the first point's when a later one failed */
    return rc;
}

/* What the table needs of a finished run, and with --json its object. */
static void keep_result(compare *c, int i, const runner_run *x)
{
    const runner_compare_opts *o = c->o;
    result *r = &c->res[i];
    r->policy = i % o->n_policies; /* r->search is run_point's */
    r->rate = o->rate[i / o->n_policies];
    r->m = x->m;
    const metrics *mt = gsim_metrics(x->g);
    r->n_tiers = mt->n_tiers;
    for (uint32_t k = 0; k < mt->n_tiers; k++) {
        metrics_group_summary gs;
        metrics_summarize_group(&mt->tiers[k], x->m.window_s, &gs);
        r->tier_sla[k] = gs.sla_violation_rate;
    }
    if (o->json) {
        runner_report rep = runner_run_report(x);
        fprintf(c->out, "  {\"policy\": \"%s\", \"rate\": %g, ", c->label[r->policy], r->rate);
        if (r->search[0]) {
            fputs("\"search\": ", c->out);
            ss_json_fputs(c->out, r->search);
            fputs(", ", c->out);
        }
        fputs("\"run\": ", c->out);
        runner_report_json(c->out, &rep, x->g, &x->m);
        fprintf(c->out, "  }%s\n", i + 1 < c->n ? "," : "");
    }
}

/* Run point i into the database. */
static int run_point(compare *c, int i, ss_errbuf *eb)
{
    const runner_compare_opts *o = c->o;
    int p = i % o->n_policies;
    double rate = o->rate[i / o->n_policies];
    char point[RUNNER_LABEL_MAX + 64];
    snprintf(point, sizeof point, "policy=%s;rate=%g", c->label[p], rate);
    if (o->progress && isatty(STDERR_FILENO))
        fprintf(stderr, "slicesim: compare: [%d/%d] %s\n", i + 1, c->n, point);
    runner_run_opts ro = {.profiles = o->profiles, .config = o->config, .command = o->command,
                          .sweep = c->name, .point = point, .load = rate,
                          .progress = o->progress, .st = c->st, .arrivals_checked = 1};
    runner_run x = {0};
    scn_scenario *sc = NULL;
    int rc = build(o, p, rate, &sc, &x.eb);
    if (!rc && runner_bundle_searches(o->policy[p])) {
        runner_static_best_opts so = {.profiles = o->profiles, .config = o->config,
                                      .point = point, .progress = o->progress,
                                      .max_replays = o->search_replays};
        runner_alloc_result ar;
        rc = runner_static_best(sc, &so, &ar, c->res[i].search, sizeof c->res[i].search,
                                &x.eb);
        ro.search = c->res[i].search;
    }
    if (!rc)
        rc = runner_run_setup(&x, sc, &ro);
    if (!rc)
        rc = runner_run_exec(&x);
    if (!rc) {
        keep_result(c, i, &x);
    } else {
        ss_err_prefix(&x.eb, rc, "%s", point);
        *eb = x.eb;
    }
    runner_run_fini(&x);
    scn_destroy(&sc);
    return rc;
}

int runner_compare(const runner_compare_opts *o, FILE *out, ss_errbuf *eb)
{
    if (o->n_policies < 1 || o->n_policies > RUNNER_COMPARE_MAX_POLICIES || o->n_rates < 1 ||
        o->n_rates > RUNNER_COMPARE_MAX_RATES)
        return ss_err(eb, SS_EINVAL, "compare: %d bundles and %d loads (at most %d and %d)",
                      o->n_policies, o->n_rates, RUNNER_COMPARE_MAX_POLICIES,
                      RUNNER_COMPARE_MAX_RATES);
    compare c = {.o = o, .n = o->n_policies * o->n_rates, .out = out};
    int rc = SS_OK;
    for (int i = 0; !rc && i < o->n_policies; i++)
        rc = runner_bundle_label(o->policy[i], c.label[i], eb);
    if (rc)
        return rc;
    snprintf(c.name, sizeof c.name, "%s", o->name ? o->name : "");
    if (!o->name)
        snprintf(c.name, sizeof c.name, "compare:%s", base_name(o->config));
    if (!(c.res = ss_calloc((size_t)c.n, sizeof *c.res)))
        rc = ss_err(eb, SS_ENOMEM, "out of memory");
    if (!rc)
        rc = check_points(&c, eb);
    if (!rc && o->json)
        fputs("[\n", out);
    for (int i = 0; !rc && i < c.n; i++)
        rc = run_point(&c, i, eb);
    if (!rc && o->json)
        fputs("]\n", out);
    else if (!rc)
        print_table(&c);
    if (!rc && !o->json && c.st)
        fprintf(out, "  results: %s (sweep '%s')\n", store_path(c.st), c.name);
    store_close(&c.st);
    ss_free(c.res);
    return rc;
}
