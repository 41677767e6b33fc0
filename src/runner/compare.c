/* The same scenario, trace and seed under several policy bundles (and loads), one table with
 * ratios against the first bundle; every run goes to the results database as a point of a
 * sweep named after the scenario, so `slicesim plot` can draw it. Not for options
 * (app/cmd_compare.c). */
#include "runner/compare.h"

#include "runner/bundle.h"
#include "runner/report.h"
#include "runner/knob_search.h"
#include "runner/static_best.h"

#include "core/ss_alloc.h"
#include "core/ss_stats.h"
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
    int n_seeds;              /* runs per point: 1 to RUNNER_COMPARE_MAX_SEEDS */
    uint64_t seed[RUNNER_COMPARE_MAX_SEEDS]; /* run.seed, run.seed + 1, ... */
    result *res;              /* point i at seed k: res[i * n_seeds + k] (n x n_seeds, owned) */
    store *st;                /* the database of every run (NULL: none) */
    FILE *out;
    double t0;                /* wall clock at the first run, for the progress lines only */
} compare;

/* The scenario for one run: the file, the sets, the bundle, the seed (seed non-NULL: *seed
 * instead of the file's), the load. */
static int build(const runner_compare_opts *o, int p, double rate, const uint64_t *seed,
                 scn_scenario **out, ss_errbuf *eb)
{
    scn_scenario *sc = NULL;
    int rc = runner_bundle_scenario(o->config, o->sets, o->n_sets, o->db, o->policy[p], &sc, eb);
    if (!rc && seed)
        sc->seed = *seed;
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

/* Point i's figures over its seeds, each a mean with its 95 % interval; the goodput ratio is
 * paired by seed with the reference bundle's run at the same load (seeds whose reference had
 * no goodput have none). */
typedef struct point_summary {
    ss_ci out_tok, goodput, ratio, sla, ttft_p99, tbt_p99;
} point_summary;

static void summarize_point(const compare *c, int i, point_summary *s)
{
    double v[6][RUNNER_COMPARE_MAX_SEEDS];
    size_t n_ratio = 0;
    int ref = i - i % c->o->n_policies;
    for (int k = 0; k < c->n_seeds; k++) {
        const metrics_group_summary *a = &c->res[i * c->n_seeds + k].m.all;
        const metrics_group_summary *b = &c->res[ref * c->n_seeds + k].m.all;
        v[0][k] = a->win_output_tokens_per_s;
        v[1][k] = a->win_goodput_tokens_per_s;
        v[3][k] = a->sla_violation_rate;
        v[4][k] = a->ttft_ms.p99;
        v[5][k] = a->tbt_ms.p99;
        if (b->win_goodput_tokens_per_s > 0)
            v[2][n_ratio++] = a->win_goodput_tokens_per_s / b->win_goodput_tokens_per_s;
    }
    size_t n = (size_t)c->n_seeds;
    ss_ci95(v[0], n, &s->out_tok);
    ss_ci95(v[1], n, &s->goodput);
    ss_ci95(v[2], n_ratio, &s->ratio);
    ss_ci95(v[3], n, &s->sla);
    ss_ci95(v[4], n, &s->ttft_p99);
    ss_ci95(v[5], n, &s->tbt_p99);
}

/* The table of several seeds: per point the means over seeds with their intervals, and the
 * goodput ratio paired by seed with its interval and what it says against 1. */
static void print_table_seeds(const compare *c)
{
    const runner_compare_opts *o = c->o;
    FILE *f = c->out;
    fprintf(f, "slicesim compare: %s, %d bundle(s) x %d load(s) x %d seeds (%llu to %llu); mean "
               "over seeds [95 %% Student-t interval]; goodput ratios against %s, paired by "
               "seed; tokens/s over the arrival window\n", o->config, o->n_policies, o->n_rates,
            c->n_seeds, (unsigned long long)c->seed[0],
            (unsigned long long)c->seed[c->n_seeds - 1], c->label[0]);
    fprintf(f, "  %-5s %-16s %-24s %-24s %-22s %-13s %-22s %-22s %s\n", "load", "policy",
            "out tok/s", "goodput", "x goodput", "verdict", "SLA miss %", "TTFT p99 ms",
            "TBT p99 ms");
    for (int i = 0; i < c->n; i++) {
        point_summary s;
        summarize_point(c, i, &s);
        char t[6][80];
        ss_ci_text(t[0], sizeof t[0], &s.out_tok, 1, "%.1f");
        ss_ci_text(t[1], sizeof t[1], &s.goodput, 1, "%.1f");
        if (i % o->n_policies == 0)
            snprintf(t[2], sizeof t[2], "1");
        else if (s.ratio.n)
            ss_ci_text(t[2], sizeof t[2], &s.ratio, 1, "%.4f");
        else
            snprintf(t[2], sizeof t[2], "-");
        ss_ci_text(t[3], sizeof t[3], &s.sla, 100, "%.2f");
        ss_ci_text(t[4], sizeof t[4], &s.ttft_p99, 1, "%.0f");
        ss_ci_text(t[5], sizeof t[5], &s.tbt_p99, 1, "%.1f");
        const char *v = i % o->n_policies == 0 ? "reference"
                        : s.ratio.n ? ss_ci_verdict(&s.ratio) : "-";
        fprintf(f, "  %-5g %-16s %-24s %-24s %-22s %-13s %-22s %-22s %s\n",
                o->rate[i / o->n_policies], c->label[i % o->n_policies], t[0], t[1], t[2], v,
                t[3], t[4], t[5]);
    }
    for (int j = 0; j < c->n * c->n_seeds; j++)
        if (c->res[j].search[0])
            fprintf(f, "  %s at load %g (seed %llu): %s\n", c->label[c->res[j].policy],
                    c->res[j].rate, (unsigned long long)c->seed[j % c->n_seeds],
                    c->res[j].search);
}

/* One JSON interval: "NAME": mean, "NAME_ci95_lo": lo, "NAME_ci95_hi": hi. */
static void json_ci(FILE *f, const char *name, const ss_ci *ci)
{
    fprintf(f, "\"%s\": %.17g, \"%s_ci95_lo\": %.17g, \"%s_ci95_hi\": %.17g", name, ci->mean,
            name, ci->lo, name, ci->hi);
}

/* With several seeds, the JSON's "summary": per point its means and intervals. */
static void print_json_summary(const compare *c)
{
    const runner_compare_opts *o = c->o;
    FILE *f = c->out;
    fputs("  \"summary\": [\n", f);
    for (int i = 0; i < c->n; i++) {
        point_summary s;
        summarize_point(c, i, &s);
        fprintf(f, "    {\"policy\": \"%s\", \"rate\": %g, \"n_seeds\": %d, ",
                c->label[i % o->n_policies], o->rate[i / o->n_policies], c->n_seeds);
        json_ci(f, "output_tok_per_s", &s.out_tok);
        fputs(", ", f);
        json_ci(f, "goodput_tok_per_s", &s.goodput);
        fputs(", ", f);
        json_ci(f, "goodput_ratio", &s.ratio);
        fprintf(f, ", \"verdict\": \"%s\", ", i % o->n_policies == 0 ? "reference"
                                               : s.ratio.n ? ss_ci_verdict(&s.ratio) : "-");
        json_ci(f, "sla_miss", &s.sla);
        fputs(", ", f);
        json_ci(f, "ttft_p99_ms", &s.ttft_p99);
        fputs(", ", f);
        json_ci(f, "tbt_p99_ms", &s.tbt_p99);
        fprintf(f, "}%s\n", i + 1 < c->n ? "," : "");
    }
    fputs("  ]}\n", f);
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
        runner_static_best_opts so = {.profiles = o->profiles, .config = o->config,
                                      .share = runner_bundle_share(o->policy[p])};
        runner_alloc_problem ap;
        if (!(rc = build(o, p, rate, NULL, &sc, eb)) &&
            (rc = runner_run_check(sc, &check_opts, eb)))
            ss_err_prefix(eb, rc, "policy=%s;rate=%g", c->label[p], rate);
        if (!rc && runner_bundle_searches_alloc(o->policy[p]) &&
            (rc = runner_static_best_problem(sc, &so, 0, &ap, eb)))
            ss_err_prefix(eb, rc, "policy=%s;rate=%g", c->label[p], rate);
        if (!rc && i < o->n_policies &&
            (rc = runner_bundle_check_knobs(sc, o->policy[p], &check_opts, eb)))
            ss_err_prefix(eb, rc, "policy=%s;rate=%g", c->label[p], rate);
        char note[512];
        if (!rc && i < o->n_policies &&
            runner_bundle_headroom_note(sc, c->label[p], note, sizeof note))
            fprintf(stderr, "slicesim: note: %s\n", note);
        scn_destroy(&sc);
    }
    if (!rc)
        rc = build(o, 0, o->rate[0], NULL, &sc, eb);
    if (!rc && sc->seed > UINT64_MAX - (uint64_t)(c->n_seeds - 1))
        rc = ss_err(eb, SS_EPARSE, "%s: run.seed %llu: %d seeds from it pass the largest seed",
                    sc->path, (unsigned long long)sc->seed, c->n_seeds);
    for (int k = 0; !rc && k < c->n_seeds; k++)
        c->seed[k] = sc->seed + (uint64_t)k;
    if (!rc && o->check_files)
        rc = o->check_files(o->check_files_ud, sc, NULL, eb);
    if (!rc && strcmp(sc->db, "none"))
        rc = store_open(&c->st, sc->db, eb);
    scn_destroy(&sc); /* also the first point's when a later one failed */
    return rc;
}

/* What the table needs of point i's finished run at seed k, and with --json its object. */
static void keep_result(compare *c, int i, int k, const runner_run *x)
{
    const runner_compare_opts *o = c->o;
    result *r = &c->res[i * c->n_seeds + k];
    r->policy = i % o->n_policies; /* r->search is run_point's */
    r->rate = o->rate[i / o->n_policies];
    r->m = x->m;
    const metrics *mt = gsim_metrics(x->g);
    r->n_tiers = mt->n_tiers;
    for (uint32_t t = 0; t < mt->n_tiers; t++) {
        metrics_group_summary gs;
        metrics_summarize_group(&mt->tiers[t], x->m.window_s, &gs);
        r->tier_sla[t] = gs.sla_violation_rate;
    }
    if (o->json) {
        runner_report rep = runner_run_report(x);
        fprintf(c->out, "  {\"policy\": \"%s\", \"rate\": %g, ", c->label[r->policy], r->rate);
        if (c->n_seeds > 1)
            fprintf(c->out, "\"seed\": %llu, ", (unsigned long long)c->seed[k]);
        if (r->search[0]) {
            fputs("\"search\": ", c->out);
            ss_json_fputs(c->out, r->search);
            fputs(", ", c->out);
        }
        fputs("\"run\": ", c->out);
        runner_report_json(c->out, &rep, x->g, &x->m);
        fprintf(c->out, "  }%s\n", i + 1 < c->n || k + 1 < c->n_seeds ? "," : "");
    }
}

/* Run point i at seed k into the database. */
static int run_point(compare *c, int i, int k, ss_errbuf *eb)
{
    const runner_compare_opts *o = c->o;
    int p = i % o->n_policies;
    double rate = o->rate[i / o->n_policies];
    result *res = &c->res[i * c->n_seeds + k];
    char point[RUNNER_LABEL_MAX + 96];
    if (c->n_seeds > 1)
        snprintf(point, sizeof point, "policy=%s;rate=%g;run.seed=%llu", c->label[p], rate,
                 (unsigned long long)c->seed[k]);
    else
        snprintf(point, sizeof point, "policy=%s;rate=%g", c->label[p], rate);
    if (o->progress && isatty(STDERR_FILENO)) {
        int done = i * c->n_seeds + k, total = c->n * c->n_seeds;
        char how[96];
        runner_progress_text(how, sizeof how, done, total, runner_wall_now() - c->t0, " done");
        fprintf(stderr, "slicesim: compare: run %d of %d (%s): %s\n", done + 1, total, how,
                point);
    }
    runner_run_opts ro = {.profiles = o->profiles, .config = o->config, .command = o->command,
                          .sweep = c->name, .point = point, .load = rate,
                          .progress = o->progress, .st = c->st, .arrivals_checked = 1,
                          .bundle = c->label[p], .keep = o->keep};
    runner_run x = {0};
    scn_scenario *sc = NULL;
    int rc = build(o, p, rate, &c->seed[k], &sc, &x.eb);
    if (!rc && runner_bundle_searches(o->policy[p])) {
        runner_static_best_opts so = {.profiles = o->profiles, .config = o->config,
                                      .point = point, .progress = o->progress,
                                      .max_replays = o->search_replays};
        rc = runner_bundle_search(sc, o->policy[p], &so, res->search, sizeof res->search,
                                  NULL, &x.eb);
        ro.search = res->search;
    }
    if (!rc)
        rc = runner_run_setup(&x, sc, &ro);
    if (!rc)
        rc = runner_run_exec(&x);
    if (!rc) {
        keep_result(c, i, k, &x);
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
    if (o->n_seeds < 0 || o->n_seeds > RUNNER_COMPARE_MAX_SEEDS)
        return ss_err(eb, SS_EINVAL, "compare: %d seeds (1 to %d)", o->n_seeds,
                      RUNNER_COMPARE_MAX_SEEDS);
    compare c = {.o = o, .n = o->n_policies * o->n_rates, .out = out,
                 .n_seeds = o->n_seeds > 1 ? o->n_seeds : 1};
    int rc = SS_OK;
    for (int i = 0; !rc && i < o->n_policies; i++)
        rc = runner_bundle_label(o->policy[i], c.label[i], eb);
    if (rc)
        return rc;
    snprintf(c.name, sizeof c.name, "%s", o->name ? o->name : "");
    if (!o->name)
        snprintf(c.name, sizeof c.name, "compare:%s", base_name(o->config));
    if (!(c.res = ss_calloc((size_t)c.n * (size_t)c.n_seeds, sizeof *c.res)))
        rc = ss_err(eb, SS_ENOMEM, "out of memory");
    if (!rc)
        rc = check_points(&c, eb);
    if (!rc && o->json && c.n_seeds > 1) {
        fputs("{\"seeds\": [", out);
        for (int k = 0; k < c.n_seeds; k++)
            fprintf(out, "%s%llu", k ? ", " : "", (unsigned long long)c.seed[k]);
        fputs("], \"interval\": \"mean over seeds, two-sided 95 % Student t; goodput ratios "
              "paired by seed\",\n \"runs\": [\n", out);
    } else if (!rc && o->json) {
        fputs("[\n", out);
    }
    c.t0 = runner_wall_now();
    for (int i = 0; !rc && i < c.n; i++)
        for (int k = 0; !rc && k < c.n_seeds; k++)
            rc = run_point(&c, i, k, eb);
    if (!rc && o->json && c.n_seeds > 1) {
        fputs("],\n", out);
        print_json_summary(&c);
    } else if (!rc && o->json) {
        fputs("]\n", out);
    } else if (!rc && c.n_seeds > 1) {
        print_table_seeds(&c);
    } else if (!rc) {
        print_table(&c);
    }
    if (!rc && !o->json && c.st)
        fprintf(out, "  results: %s (sweep '%s')\n", store_path(c.st), c.name);
    store_close(&c.st);
    ss_free(c.res);
    return rc;
}
