/* `slicesim capacity`'s runs: each bundle's capacity search with replays as its probes (the
 * scenario at the probe's load, every tenant's traffic checked to span the window), every
 * probe stored as a point of one sweep, and the table or JSON of the results. The search is
 * capacity.c's; options are app/cmd_capacity.c's. */
#include "runner/capacity.h"

#include "runner/bundle.h"
#include "runner/capacity_int.h"
#include "runner/knob_search.h"
#include "runner/static_best.h"

#include "core/ss_alloc.h"
#include "core/ss_stats.h"
#include "core/ss_strbuf.h"

#include <math.h>
#include <string.h>

/* A probe in which a tenant stops arriving more than this share of the window before its
 * end, and more than GAP_SLACK of its own mean gaps between arrivals, does not span the
 * window: the slack is for the quiet stretch after a tenant's last arrival, which a bursty
 * (gamma) tenant has long by chance; a helper tenant whose traffic ended at duration / load
 * is far beyond both. */
#define SPAN_SLACK 0.02
#define GAP_SLACK 10

/* The scenario of bundle p at load: the file, the sets, the database, the bundle, the seed
 * (seed non-NULL: *seed instead of the file's), the load (runner_scale_load: synthetic
 * tenants keep their window), checked. */
static int build(const runner_capacity_opts *o, int p, double load, const uint64_t *seed,
                 scn_scenario **out, ss_errbuf *eb)
{
    scn_scenario *sc = NULL;
    int rc = runner_bundle_scenario(o->config, o->sets, o->n_sets, o->db, o->policy[p], &sc, eb);
    if (!rc && seed)
        sc->seed = *seed;
    if (!rc)
        rc = runner_scale_load(sc, load, eb);
    if (!rc)
        rc = scn_check(sc, eb);
    if (rc)
        scn_destroy(&sc);
    *out = sc;
    return rc;
}

/* The judged tenant's index in sc, -1 for every tenant, or SS_EPARSE naming the tenants. */
static int find_tenant(const scn_scenario *sc, const char *name, int *i_out, ss_errbuf *eb)
{
    *i_out = -1;
    if (!name)
        return SS_OK;
    char names[SS_MAX_TENANTS * (SCN_NAME_MAX + 2)] = "";
    for (uint32_t i = 0; i < sc->n_tenants; i++) {
        if (!strcmp(sc->tenants[i].name, name)) {
            *i_out = (int)i;
            return SS_OK;
        }
        size_t n = strlen(names);
        snprintf(names + n, sizeof names - n, "%s%s", i ? ", " : "", sc->tenants[i].name);
    }
    return ss_err(eb, SS_EPARSE, "tenant '%s' (of --criterion tenant:NAME, --tenant): no such "
                  "tenant in %s (its tenants: %s)", name, sc->path, names);
}

/* Every bundle must run at load 1 before anything runs, so that a bad one stores nothing;
 * then the judged tenant, the caller's check of the files and the database. */
static int check_bundles(capacity *c, ss_errbuf *eb)
{
    const runner_capacity_opts *o = c->o;
    runner_run_opts check_opts = {.profiles = o->profiles, .config = o->config};
    scn_scenario *sc = NULL;
    int rc = SS_OK;
    for (int p = 0; !rc && p < o->n_policies; p++) {
        runner_static_best_opts so = {.profiles = o->profiles, .config = o->config,
                                      .share = runner_bundle_share(o->policy[p])};
        runner_alloc_problem ap;
        if (!(rc = build(o, p, 1, NULL, &sc, eb)) &&
            (rc = runner_run_check(sc, &check_opts, eb)))
            ss_err_prefix(eb, rc, "policy=%s;rate=1", c->label[p]);
        if (!rc && runner_bundle_searches_alloc(o->policy[p]) &&
            (rc = runner_static_best_problem(sc, &so, 0, &ap, eb)))
            ss_err_prefix(eb, rc, "policy=%s;rate=1", c->label[p]);
        if (!rc && (rc = runner_bundle_check_knobs(sc, o->policy[p], &check_opts, eb)))
            ss_err_prefix(eb, rc, "policy=%s;rate=1", c->label[p]);
        char note[512];
        if (!rc && runner_bundle_headroom_note(sc, c->label[p], note, sizeof note))
            fprintf(stderr, "slicesim: note: %s\n", note);
        scn_destroy(&sc);
    }
    if (!rc)
        rc = build(o, 0, 1, NULL, &sc, eb);
    if (!rc && sc->seed > UINT64_MAX - (uint64_t)(c->n_seeds - 1))
        rc = ss_err(eb, SS_EPARSE, "%s: run.seed %llu: %d seeds from it pass the largest seed",
                    sc->path, (unsigned long long)sc->seed, c->n_seeds);
    for (int k = 0; !rc && k < c->n_seeds; k++)
        c->seed[k] = sc->seed + (uint64_t)k;
    if (!rc && (o->criterion == RUNNER_CRIT_TENANT) != (o->tenant != NULL))
        rc = ss_err(eb, SS_EINVAL, "capacity: a tenant is named with the tenant criterion only");
    if (!rc)
        rc = find_tenant(sc, o->tenant, &c->i_tenant, eb);
    for (uint32_t i = 0; !rc && i < sc->n_tenants; i++)
        snprintf(c->tenants[i], sizeof c->tenants[i], "%s", sc->tenants[i].name);
    if (!rc)
        c->n_tenants = sc->n_tenants;
    if (!rc && o->check_files)
        rc = o->check_files(o->check_files_ud, sc, NULL, eb);
    if (!rc && strcmp(sc->db, "none"))
        rc = store_open(&c->st, sc->db, eb);
    c->st_read = c->st;
    if (!rc && c->st) {
        runner__inputs_init(&c->inputs, o->profiles);
        if (!c->inputs.ok)
            fprintf(stderr, "slicesim: note: capacity: the code or the profiles could not be "
                            "read to tell what the probes depend on: no stored probe is "
                            "reused\n");
    }
    scn_destroy(&sc);
    return rc;
}

/* Whether every tenant of sc's workload arrives until the window's end (the run's duration,
 * or the last arrival of all), give or take the slack; the first one that does not goes to
 * short_out. The workload is read past the run's duration, to its own end: a quiet stretch of
 * a bursty trace before the window's end is not its end when arrivals come after it. */
static int spans_window(const scn_scenario *sc, const runner_run_opts *ro, int *spans_out,
                        char *short_out, size_t n, ss_errbuf *eb)
{
    runner_arrivals a[SS_MAX_TENANTS];
    double end = sc->duration_s;
    int rc = runner_arrivals_of(sc, ro, 1, a, eb);
    for (uint32_t i = 0; !rc && !(sc->duration_s > 0) && i < sc->n_tenants; i++)
        end = a[i].last_s > end ? a[i].last_s : end;
    *spans_out = 1;
    for (uint32_t i = 0; !rc && i < sc->n_tenants && *spans_out; i++) {
        double gap = a[i].n > 1 ? (a[i].last_s - a[i].first_s) / (double)(a[i].n - 1) : end;
        double slack = SPAN_SLACK * (end - sc->warmup_s);
        slack = GAP_SLACK * gap > slack ? GAP_SLACK * gap : slack;
        if (!a[i].n || a[i].last_s < end - slack) {
            *spans_out = 0;
            snprintf(short_out, n, "tenant %s's arrivals end at %.1f s, before %.1f s",
                     sc->tenants[i].name, a[i].last_s, end);
        }
    }
    return rc;
}

/* The miss the bound judges, from a probe's pooled and per-tenant misses. */
static double judged_miss(const capacity *c, const runner_capacity_probe *pr)
{
    if (c->o->criterion == RUNNER_CRIT_TENANT)
        return pr->tenant_miss[c->i_tenant];
    if (c->o->criterion == RUNNER_CRIT_POOLED)
        return pr->pooled_miss;
    double worst = 0;
    for (uint32_t t = 0; t < c->n_tenants; t++)
        worst = pr->tenant_miss[t] > worst ? pr->tenant_miss[t] : worst;
    return worst;
}

/* Finished run x's SLA misses (every tenant's together and each one's), the criterion's, and
 * the goodput: the judged tenant's, or every tenant's. */
static void judge(const capacity *c, const runner_run *x, runner_capacity_probe *pr)
{
    const metrics *m = gsim_metrics(x->g);
    pr->pooled_miss = x->m.all.sla_violation_rate;
    pr->goodput_tok_per_s = x->m.all.win_goodput_tokens_per_s; /* over the arrival window */
    for (uint32_t t = 0; t < c->n_tenants && t < m->n_tenants; t++) {
        metrics_group_summary gs;
        metrics_summarize_group(&m->tenants[t], x->m.window_s, &gs);
        metrics_summarize_window(m, &m->tenants[t], &gs);
        pr->tenant_miss[t] = gs.sla_violation_rate;
        if ((int)t == c->i_tenant)
            pr->goodput_tok_per_s = gs.win_goodput_tokens_per_s;
    }
    pr->sla_miss = judged_miss(c, pr);
}

/* The search under way: bundle p at seed k. */
static runner_capacity_result *cur(const capacity *c)
{
    return &c->res[c->p * c->n_seeds + c->k];
}

/* The line on stderr for a probe of the bundle being searched (reused: the stored run it was
 * read from, 0: it ran). A stopped probe's misses are lower bounds ('>'), its goodput is not
 * measured, and the line says where it stopped. */
static void progress_line(const capacity *c, const runner_capacity_probe *pr, const char *why,
                          int64_t reused)
{
    int pass = pr->spans && pr->sla_miss <= c->o->search.sla_miss;
    const char *gt = pr->stopped ? ">" : "";
    char who[SCN_NAME_MAX + 64] = "";
    if (c->o->criterion == RUNNER_CRIT_WORST && c->n_tenants > 1) { /* whose miss it is */
        uint32_t w = 0;
        for (uint32_t t = 1; t < c->n_tenants; t++)
            w = pr->tenant_miss[t] > pr->tenant_miss[w] ? t : w;
        snprintf(who, sizeof who, " (worst: %s; pooled %s%.2f%%)", c->tenants[w], gt,
                 100 * pr->pooled_miss);
    }
    char seed[80] = "", good[96];
    if (c->n_seeds > 1)
        snprintf(seed, sizeof seed, " seed %llu (%d/%d)", (unsigned long long)c->seed[c->k],
                 c->k + 1, c->n_seeds);
    if (pr->stopped)
        snprintf(good, sizeof good, "stopped at %.1f s simulated, certain to fail",
                 pr->stopped_s);
    else
        snprintf(good, sizeof good, "goodput %.1f tok/s", pr->goodput_tok_per_s);
    fprintf(stderr, "slicesim: capacity: %s%s probe %d: load %g: SLA miss %s%.2f%%%s, %s: "
            "%s%s%s", c->label[c->p], seed, cur(c)->n_probes + 1, pr->load, gt,
            100 * pr->sla_miss, who, good, pass ? "pass" : "fail", why[0] ? ": " : "", why);
    if (reused)
        fprintf(stderr, " (stored run %lld, same inputs)", (long long)reused);
    fputc('\n', stderr);
}

/* Before probe `point` of scenario sc runs (with a database): its inputs digest into digest
 * (n bytes; "" for a searching bundle, whose probe is its search's candidates as well as its
 * run, or when an input cannot be read), and whether the database holds the probe from the
 * same inputs: 1 with its figures in pr (its line printed, counted in n_reused), 0 when it
 * must run (a point there from other inputs counted in n_rerun, *held set: the probe then runs
 * to its end, so that the point names the new run), <0 on error. */
static int stored_probe(capacity *c, const scn_scenario *sc, const char *point, const char *why,
                        char *digest, size_t n, runner_capacity_probe *pr, int *held,
                        ss_errbuf *eb)
{
    const char *spec = c->o->policy[c->p];
    digest[0] = '\0';
    if (!runner_bundle_searches(spec))
        runner__inputs_probe(&c->inputs, sc, spec, digest, n);
    store_probe_row row;
    int has = store_point_probe(c->st_read, c->name, point, NULL, &row, eb);
    if (has <= 0)
        return has;
    if (!digest[0] || !row.has_figures || strcmp(row.inputs, digest)) {
        c->n_rerun++;
        *held = 1;
        if (!c->worker)
            return 0;
        c->redo = 1; /* its new run must replace the point: in the command's own process */
        return ss_err(eb, SS_EINVAL, "%s: stored from other inputs", point);
    }
    pr->pooled_miss = row.sla_violation_rate;
    pr->goodput_tok_per_s = row.window_goodput_tokens_per_s;
    for (uint32_t t = 0; t < c->n_tenants; t++) { /* each tenant's row of the same run */
        store_probe_row tr;
        has = store_point_probe(c->st_read, c->name, point, c->tenants[t], &tr, eb);
        if (has < 0)
            return has;
        if (!has || !tr.has_figures) {
            c->n_rerun++;
            return 0;
        }
        pr->tenant_miss[t] = tr.sla_violation_rate;
        if ((int)t == c->i_tenant)
            pr->goodput_tok_per_s = tr.window_goodput_tokens_per_s;
    }
    pr->sla_miss = judged_miss(c, pr);
    c->n_reused++;
    if (c->o->progress == RUNNER_PROGRESS_PROBES)
        progress_line(c, pr, why, row.run_id);
    return 1;
}

/* Record the inputs of point's run, just stored. */
static int record_inputs(capacity *c, const char *point, const char *digest, ss_errbuf *eb)
{
    int64_t run_id;
    int has = store_has_point(c->st, c->name, point, &run_id, eb);
    if (has <= 0)
        return has < 0 ? has : ss_err(eb, SS_EDB, "%s: point %s missing after its run",
                                      store_path(c->st), point);
    return store_run_set_inputs(c->st, run_id, digest, eb);
}

/* A stopped probe's figures: each tenant's and the pooled miss so far (lower bounds), the
 * criterion's of them (above the bound: it fails), no goodput. */
static void judge_stopped(const capacity *c, const runner_run *x, runner_capacity_probe *pr)
{
    runner_run_misses_so_far(x, pr->tenant_miss, &pr->pooled_miss);
    pr->sla_miss = judged_miss(c, pr);
    pr->goodput_tok_per_s = 0;
    pr->stopped = 1;
    pr->stopped_s = ss_time_to_s(x->stopped_ns);
}

/* Point key of the probe at load of bundle p's search at seed k into out (n bytes). */
static void point_at(const capacity *c, int p, int k, double load, char *out, size_t n)
{
    if (c->n_seeds > 1)
        snprintf(out, n, "policy=%s;rate=%g;run.seed=%llu", c->label[p], load,
                 (unsigned long long)c->seed[k]);
    else
        snprintf(out, n, "policy=%s;rate=%g", c->label[p], load);
}

/* ... of the search under way. */
static void point_of(const capacity *c, double load, char *out, size_t n)
{
    point_at(c, c->p, c->k, load, out, n);
}

/* Run a searching bundle's search on sc (its choice into the probe's search note, its
 * candidates counted in pr), then the probe itself (x, set up from ro), stopped once certain
 * to fail unless it must run to its end (full), and judge it. */
static int run_probe(capacity *c, scn_scenario *sc, runner_run_opts *ro, int full,
                     runner_capacity_probe *pr, runner_run *x)
{
    const runner_capacity_opts *o = c->o;
    int rc = SS_OK;
    if (runner_bundle_searches(o->policy[c->p])) {
        char *search = c->search[cur(c)->n_probes];
        runner_static_best_opts so = {.profiles = o->profiles, .config = o->config,
                                      .point = ro->point,
                                      .progress = o->progress == RUNNER_PROGRESS_PROBES,
                                      .quiet = o->progress == RUNNER_PROGRESS_SEARCHES,
                                      .max_replays = o->search_replays,
                                      .criterion = o->criterion, .tenant = o->tenant,
                                      .full = o->full_probes};
        rc = runner_bundle_search(sc, o->policy[c->p], &so, search, sizeof c->search[0],
                                  &pr->candidates, &x->eb);
        ro->search = search;
    }
    runner_stop stop;
    runner_run_opts count_opts = {.profiles = o->profiles, .config = o->config};
    if (!rc && !full)
        rc = runner_stop_init(&stop, sc, &count_opts, o->criterion,
                              c->i_tenant >= 0 ? (uint32_t)c->i_tenant : 0,
                              o->search.sla_miss, &x->eb);
    ro->stop = full ? NULL : &stop;
    if (!rc)
        rc = runner_run_setup(x, sc, ro);
    if (!rc)
        rc = runner_run_exec(x);
    if (!rc && x->stopped)
        judge_stopped(c, x, pr);
    else if (!rc)
        judge(c, x, pr);
    ro->stop = NULL; /* stop lives on this frame */
    return rc;
}

/* runner_capacity_probe_fn: one replay of the current bundle at pr->load, stored; or the
 * database's run of the same probe when it was made from the same inputs (stored_probe). A
 * probe stopped early (certain to fail) is not stored: the database holds complete runs only,
 * so a later command never reuses a stopped probe as a complete one. */
static int probe_replay(void *ud, runner_capacity_probe *pr, ss_errbuf *eb)
{
    capacity *c = ud;
    const runner_capacity_opts *o = c->o;
    char point[RUNNER_LABEL_MAX + 96], why[200] = "";
    point_of(c, pr->load, point, sizeof point);
    runner_run_opts ro = {.profiles = o->profiles, .config = o->config, .command = o->command,
                          .sweep = c->name, .point = point, .load = pr->load, .st = c->st,
                          .arrivals_checked = 1, .bundle = c->label[c->p], .keep = o->keep};
    runner_run_opts check_opts = {.profiles = o->profiles, .config = o->config};
    runner_run x = {0};
    scn_scenario *sc = NULL;
    int rc = build(o, c->p, pr->load, &c->seed[c->k], &sc, &x.eb);
    if (!rc)
        rc = spans_window(sc, &check_opts, &pr->spans, why, sizeof why, &x.eb);
    c->search[cur(c)->n_probes][0] = '\0';
    char digest[STORE_INPUTS_MAX] = "";
    int held = 0;
    int stored = !rc && c->st_read ? stored_probe(c, sc, point, why, digest, sizeof digest,
                                                  pr, &held, &x.eb)
                                   : 0;
    if (stored > 0) {
        scn_destroy(&sc);
        return SS_OK;
    }
    if (stored < 0)
        rc = stored;
    if (!rc)
        rc = run_probe(c, sc, &ro, o->full_probes || pr->full || held, pr, &x);
    if (!rc && digest[0] && !pr->stopped && c->st)
        rc = record_inputs(c, point, digest, &x.eb);
    if (rc) {
        *eb = x.eb;
        ss_err_prefix(eb, rc, "%s", point);
    }
    runner_run_fini(&x);
    scn_destroy(&sc);
    if (!rc && o->progress == RUNNER_PROGRESS_PROBES)
        progress_line(c, pr, why, 0);
    return rc;
}

/* ==================================================================================== */
/* Output                                                                                */
/* ==================================================================================== */

/* The probe whose goodput and SLA miss a bundle's row shows: the one at its capacity, or when
 * no load passed the lowest load tried (its measured miss, not a 0 that reads as none). */
static const runner_capacity_probe *shown(const runner_capacity_result *r)
{
    if (r->i_best >= 0)
        return &r->probe[r->i_best];
    const runner_capacity_probe *low = NULL;
    for (int i = 0; i < r->n_probes; i++)
        if (!low || r->probe[i].load < low->load)
            low = &r->probe[i];
    return low;
}

/* What the table says about a search that did not end in a converged bracket. */
static void note(const runner_capacity_result *r, char *buf, size_t n)
{
    if (r->status == RUNNER_CAP_BELOW)
        snprintf(buf, n, "fails at every load tried, down to %g (goodput, SLA miss at it)",
                 r->hi);
    else if (r->status == RUNNER_CAP_ABOVE)
        snprintf(buf, n, "passes at every load tried, up to %g", r->lo);
    else if (!r->converged)
        snprintf(buf, n, "not converged: fails at %g%s", r->hi,
                 r->censored ? " (a trace ends there: a lower bound)" : "");
    else
        snprintf(buf, n, "fails at %g%s", r->hi,
                 r->censored ? " (a trace ends there: a lower bound)" : "");
}

/* Each tenant's miss at every bundle's capacity (where none passed, at the lowest load). */
/* Bundle p's search at seed k. */
static const runner_capacity_result *res_of(const capacity *c, int p, int k)
{
    return &c->res[p * c->n_seeds + k];
}

/* Bundle p's ratio to the first bundle at seed k, or 0 when there is none (the first bundle's
 * search found no passing load, or this one's did not). */
static double ratio_of(const capacity *c, int p, int k)
{
    const runner_capacity_result *r = res_of(c, p, k), *ref = res_of(c, 0, k);
    return ref->capacity > 0 && r->status != RUNNER_CAP_BELOW ? r->capacity / ref->capacity : 0;
}

/* A bundle's figures over its seeds: each a mean with its 95 % interval. A search that failed
 * at every load counts as capacity 0 (and has no ratio); one that passed at every load counts
 * as its highest load (a lower bound); the others are their capacities. */
typedef struct summary {
    ss_ci cap, ratio, good, miss, pooled;
    ss_ci tenant[SS_MAX_TENANTS];
    int n_below, n_above, n_unconverged, n_censored, n_probes;
    runner_capacity_status status; /* FOUND when every seed's is, else BELOW if one is, ABOVE */
    int converged;             /* every seed's search converged */
} summary;

static void summarize(const capacity *c, int p, summary *s)
{
    double cap[RUNNER_CAPACITY_MAX_SEEDS], ratio[RUNNER_CAPACITY_MAX_SEEDS], good[RUNNER_CAPACITY_MAX_SEEDS],
        miss[RUNNER_CAPACITY_MAX_SEEDS], pooled[RUNNER_CAPACITY_MAX_SEEDS];
    size_t n_ratio = 0;
    *s = (summary){.status = RUNNER_CAP_FOUND, .converged = 1};
    for (int k = 0; k < c->n_seeds; k++) {
        const runner_capacity_result *r = res_of(c, p, k);
        const runner_capacity_probe *b = shown(r);
        cap[k] = r->capacity;
        good[k] = b ? b->goodput_tok_per_s : 0;
        miss[k] = b ? b->sla_miss : 0;
        pooled[k] = b ? b->pooled_miss : 0;
        if (ratio_of(c, p, k) > 0)
            ratio[n_ratio++] = ratio_of(c, p, k);
        s->n_below += r->status == RUNNER_CAP_BELOW;
        s->n_above += r->status == RUNNER_CAP_ABOVE;
        s->n_unconverged += r->status == RUNNER_CAP_FOUND && !r->converged;
        s->n_censored += r->censored;
        s->converged &= r->converged;
        s->n_probes += r->n_probes;
    }
    s->status = s->n_below ? RUNNER_CAP_BELOW : s->n_above ? RUNNER_CAP_ABOVE : RUNNER_CAP_FOUND;
    size_t n = (size_t)c->n_seeds;
    ss_ci95(cap, n, &s->cap);
    ss_ci95(ratio, n_ratio, &s->ratio);
    ss_ci95(good, n, &s->good);
    ss_ci95(miss, n, &s->miss);
    ss_ci95(pooled, n, &s->pooled);
    for (uint32_t t = 0; t < c->n_tenants; t++) {
        double x[RUNNER_CAPACITY_MAX_SEEDS];
        for (int k = 0; k < c->n_seeds; k++) {
            const runner_capacity_probe *b = shown(res_of(c, p, k));
            x[k] = b ? b->tenant_miss[t] : 0;
        }
        ss_ci95(x, n, &s->tenant[t]);
    }
}

/* What a ratio's interval says of bundle p: "reference" for the first, "-" without a ratio. */
static const char *verdict(int p, const summary *s)
{
    return p == 0 ? "reference" : s->ratio.n == 0 ? "-" : ss_ci_verdict(&s->ratio);
}

/* Each tenant's miss at every bundle's capacity (where none passed, at the lowest load). */
static void print_tenants(const capacity *c, FILE *f)
{
    fprintf(f, "  each tenant's SLA miss at the capacity (pooled: all requests together):\n");
    for (int p = 0; p < c->o->n_policies; p++) {
        const runner_capacity_probe *b = shown(res_of(c, p, 0));
        if (!b)
            continue;
        fprintf(f, "    %-16s", c->label[p]);
        for (uint32_t t = 0; t < c->n_tenants; t++)
            fprintf(f, " %s %.2f%%,", c->tenants[t], 100 * b->tenant_miss[t]);
        fprintf(f, " pooled %.2f%%\n", 100 * b->pooled_miss);
    }
}

/* The header line's criterion: "every tenant", "all tenants pooled" or "tenant NAME". */
static void criterion_text(const runner_capacity_opts *o, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s", o->criterion == RUNNER_CRIT_TENANT ? "tenant "
                             : o->criterion == RUNNER_CRIT_POOLED ? "all tenants pooled"
                                                                  : "every tenant",
             o->criterion == RUNNER_CRIT_TENANT ? o->tenant : "");
}

/* What each searching bundle chose at each search's capacity. */
static void print_searches(const capacity *c, FILE *f)
{
    for (int p = 0; p < c->o->n_policies; p++)
        for (int k = 0; k < c->n_seeds; k++) {
            const char *s = c->best_search[p * c->n_seeds + k];
            if (!s[0])
                continue;
            fprintf(f, "  %s at load %g", c->label[p], res_of(c, p, k)->capacity);
            if (c->n_seeds > 1)
                fprintf(f, " (seed %llu)", (unsigned long long)c->seed[k]);
            fprintf(f, ": %s\n", s);
        }
}

/* The table of one seed's searches. */
static void print_table(const capacity *c, FILE *f)
{
    const runner_capacity_opts *o = c->o;
    char crit[SCN_NAME_MAX + 32];
    criterion_text(o, crit, sizeof crit);
    fprintf(f, "slicesim capacity: %s, %d bundle(s), SLA miss <= %g%% (%s); ratios against "
               "%s\n", o->config, o->n_policies, 100 * o->search.sla_miss, crit, c->label[0]);
    fprintf(f, "  %-16s %9s %5s %10s %8s %6s  %s\n", "policy", "capacity", "x", "goodput",
            "SLA miss", "probes", "bracket");
    double ref = res_of(c, 0, 0)->capacity;
    for (int p = 0; p < o->n_policies; p++) {
        const runner_capacity_result *r = res_of(c, p, 0);
        const runner_capacity_probe *b = shown(r);
        char buf[120], cap[16], ratio[16];
        note(r, buf, sizeof buf);
        /* no load passed: the capacity is below the lowest tried, and no ratio is known */
        if (r->status == RUNNER_CAP_BELOW)
            snprintf(cap, sizeof cap, "<%.4g", r->hi);
        else
            snprintf(cap, sizeof cap, "%.4g", r->capacity);
        if (ref > 0 && r->status != RUNNER_CAP_BELOW)
            snprintf(ratio, sizeof ratio, "%.2f", r->capacity / ref);
        else
            snprintf(ratio, sizeof ratio, "-");
        fprintf(f, "  %-16s %9s %5s %10.1f %7.2f%% %6d  %s\n", c->label[p], cap, ratio,
                b ? b->goodput_tok_per_s : 0, b ? 100 * b->sla_miss : 0, r->n_probes, buf);
    }
    if (c->n_tenants > 1)
        print_tenants(c, f);
    print_searches(c, f);
}

/* The table of several seeds' searches: per bundle the mean capacity and the mean of its
 * ratios paired by seed, each with its 95 % interval, and what the ratio's interval says;
 * then each seed's capacity, each tenant's miss, and what did not converge. */
static void print_table_seeds(const capacity *c, FILE *f)
{
    const runner_capacity_opts *o = c->o;
    char crit[SCN_NAME_MAX + 32];
    criterion_text(o, crit, sizeof crit);
    summary sm[RUNNER_CAPACITY_MAX_POLICIES]; /* each bundle's, computed once */
    for (int p = 0; p < o->n_policies; p++)
        summarize(c, p, &sm[p]);
    fprintf(f, "slicesim capacity: %s, %d bundle(s) x %d seeds (%llu to %llu), SLA miss <= %g%% "
               "(%s); mean over seeds [95 %% Student-t interval]; ratios against %s, paired by "
               "seed\n", o->config, o->n_policies, c->n_seeds, (unsigned long long)c->seed[0],
            (unsigned long long)c->seed[c->n_seeds - 1], 100 * o->search.sla_miss, crit,
            c->label[0]);
    fprintf(f, "  %-16s %-28s %-24s %-13s %10s %8s %6s\n", "policy", "capacity", "x", "verdict",
            "goodput", "SLA miss", "probes");
    for (int p = 0; p < o->n_policies; p++) {
        const summary s = sm[p];
        char cap[80], ratio[80];
        ss_ci_text(cap, sizeof cap, &s.cap, 1, "%.4g");
        if (p == 0 && s.ratio.n) /* the reference against itself */
            snprintf(ratio, sizeof ratio, "1");
        else if (s.ratio.n)
            ss_ci_text(ratio, sizeof ratio, &s.ratio, 1, "%.3f");
        else
            snprintf(ratio, sizeof ratio, "-");
        fprintf(f, "  %-16s %-28s %-24s %-13s %10.1f %7.2f%% %6d\n", c->label[p], cap, ratio,
                verdict(p, &s), s.good.mean, 100 * s.miss.mean, s.n_probes);
    }
    fprintf(f, "  each seed's capacity (ratio):\n");
    for (int p = 0; p < o->n_policies; p++) {
        fprintf(f, "    %-16s", c->label[p]);
        for (int k = 0; k < c->n_seeds; k++) {
            const runner_capacity_result *r = res_of(c, p, k);
            fprintf(f, "%s seed %llu: %s%.4g", k ? "," : "", (unsigned long long)c->seed[k],
                    r->status == RUNNER_CAP_BELOW ? "<" : "",
                    r->status == RUNNER_CAP_BELOW ? r->hi : r->capacity);
            if (p && ratio_of(c, p, k) > 0)
                fprintf(f, " (%.3f)", ratio_of(c, p, k));
        }
        fputc('\n', f);
    }
    fprintf(f, "  each tenant's SLA miss at the capacity, mean over seeds [95 %% interval] "
               "(pooled: all requests together):\n");
    for (int p = 0; p < o->n_policies; p++) {
        const summary s = sm[p];
        char buf[80];
        fprintf(f, "    %-16s", c->label[p]);
        for (uint32_t t = 0; t < c->n_tenants; t++) {
            ss_ci_text(buf, sizeof buf, &s.tenant[t], 100, "%.2f");
            fprintf(f, " %s %s%%,", c->tenants[t], buf);
        }
        ss_ci_text(buf, sizeof buf, &s.pooled, 100, "%.2f");
        fprintf(f, " pooled %s%%\n", buf);
    }
    for (int p = 0; p < o->n_policies; p++) {
        const summary s = sm[p];
        if (s.n_below)
            fprintf(f, "  note: %s: %d of %d seeds fail at every load tried (capacity 0 in the "
                       "mean, no ratio)\n", c->label[p], s.n_below, c->n_seeds);
        if (s.n_above)
            fprintf(f, "  note: %s: %d of %d seeds pass at every load tried (their highest load, "
                       "a lower bound, in the mean)\n", c->label[p], s.n_above, c->n_seeds);
        if (s.n_censored)
            fprintf(f, "  note: %s: %d of %d seeds met the bound at the load above their capacity "
                       "but a trace ended before the window did there (a lower bound: a shorter "
                       "window or a longer trace measures more)\n", c->label[p], s.n_censored,
                    c->n_seeds);
        if (s.n_unconverged)
            fprintf(f, "  note: %s: %d of %d seeds' searches did not converge within --tol "
                       "(more --max-probes)\n", c->label[p], s.n_unconverged, c->n_seeds);
    }
    print_searches(c, f);
}

/* s as a JSON string; labels, tenant names and paths hold no control characters. */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++)
        fprintf(f, *s == '"' || *s == '\\' ? "\\%c" : "%c", *s);
    fputc('"', f);
}

/* A probe's pooled and per-tenant misses as JSON members (no leading or trailing comma). */
static void json_misses(const capacity *c, const runner_capacity_probe *b, FILE *f)
{
    fprintf(f, "\"pooled_sla_miss\": %.17g, \"tenant_sla_miss\": {", b ? b->pooled_miss : 0);
    for (uint32_t t = 0; b && t < c->n_tenants; t++) {
        fputs(t ? ", " : "", f);
        json_str(f, c->tenants[t]);
        fprintf(f, ": %.17g", b->tenant_miss[t]);
    }
    fputc('}', f);
}

/* One search's members (bundle p at seed k): capacity, ratio, status, bracket, the figures
 * at capacity, the search's choice and the probes (no braces, no trailing comma). */
static void json_run(const capacity *c, int p, int k, FILE *f)
{
    const runner_capacity_result *r = res_of(c, p, k);
    const runner_capacity_probe *b = shown(r);
    fprintf(f, "\"capacity\": %.17g, \"ratio\": %.17g, \"status\": \"%s\", "
               "\"converged\": %s, \"censored\": %s, \"lo\": %.17g, \"hi\": %.17g, \"goodput_tok_per_s\": "
               "%.17g, \"sla_miss\": %.17g, \"at_load\": %.17g, \"n_probes\": %d, ",
            r->capacity, ratio_of(c, p, k), runner_capacity_status_name(r->status),
            r->converged ? "true" : "false", r->censored ? "true" : "false", r->lo, r->hi,
            b ? b->goodput_tok_per_s : 0,
            b ? b->sla_miss : 0, b ? b->load : 0, r->n_probes);
    json_misses(c, b, f);
    fputs(", ", f);
    const char *search = c->best_search[p * c->n_seeds + k];
    if (search[0]) {
        fputs("\"search\": ", f);
        ss_json_fputs(f, search);
        fputs(", ", f);
    }
    fputs("\"probes\": [", f);
    for (int i = 0; i < r->n_probes; i++) {
        const runner_capacity_probe *q = &r->probe[i];
        fprintf(f, "%s\n      {\"load\": %.17g, \"sla_miss\": %.17g, \"goodput_tok_per_s\": ",
                i ? "," : "", q->load, q->sla_miss);
        if (q->stopped) /* not measured: the misses are lower bounds */
            fprintf(f, "null, \"stopped\": true, \"stopped_at_s\": %.17g, ", q->stopped_s);
        else
            fprintf(f, "%.17g, ", q->goodput_tok_per_s);
        fprintf(f, "\"spans\": %s, \"pass\": %s, ", q->spans ? "true" : "false",
                q->pass ? "true" : "false");
        if (q->candidates)
            fprintf(f, "\"candidate_replays\": %d, ", q->candidates);
        json_misses(c, q, f);
        fputc('}', f);
    }
    fputc(']', f);
}

/* The interval members of a mean: "NAME": mean, "PREFIXci95_lo": lo, "PREFIXci95_hi": hi. */
static void json_ci(FILE *f, const char *name, const char *prefix, const ss_ci *ci)
{
    fprintf(f, "\"%s\": %.17g, \"%sci95_lo\": %.17g, \"%sci95_hi\": %.17g", name, ci->mean,
            prefix, ci->lo, prefix, ci->hi);
}

static void print_json_policy(const capacity *c, int p, FILE *f)
{
    summary s;
    summarize(c, p, &s);
    fprintf(f, "    {\"policy\": ");
    json_str(f, c->label[p]);
    fputs(", ", f);
    if (c->n_seeds == 1) { /* the search itself, and its one-seed "interval" */
        json_run(c, p, 0, f);
        fprintf(f, ", \"ci95_lo\": %.17g, \"ci95_hi\": %.17g, \"ratio_ci95_lo\": %.17g, "
                   "\"ratio_ci95_hi\": %.17g", s.cap.lo, s.cap.hi, ratio_of(c, p, 0),
                ratio_of(c, p, 0));
    } else {
        json_ci(f, "capacity", "", &s.cap);
        fputs(", ", f);
        json_ci(f, "ratio", "ratio_", &s.ratio);
        fprintf(f, ", \"status\": \"%s\", \"converged\": %s, \"censored\": %s, ",
                runner_capacity_status_name(s.status), s.converged ? "true" : "false",
                s.n_censored ? "true" : "false");
        json_ci(f, "goodput_tok_per_s", "goodput_", &s.good);
        fputs(", ", f);
        json_ci(f, "sla_miss", "sla_miss_", &s.miss);
        fputs(", ", f);
        json_ci(f, "pooled_sla_miss", "pooled_sla_miss_", &s.pooled);
        fputs(", \"tenant_sla_miss\": {", f);
        for (uint32_t t = 0; t < c->n_tenants; t++) {
            fputs(t ? ", " : "", f);
            json_str(f, c->tenants[t]);
            fprintf(f, ": %.17g", s.tenant[t].mean);
        }
        fputs("}, \"tenant_sla_miss_ci95\": {", f);
        for (uint32_t t = 0; t < c->n_tenants; t++) {
            fputs(t ? ", " : "", f);
            json_str(f, c->tenants[t]);
            fprintf(f, ": [%.17g, %.17g]", s.tenant[t].lo, s.tenant[t].hi);
        }
        fprintf(f, "}, \"n_probes\": %d", s.n_probes);
    }
    fprintf(f, ", \"verdict\": \"%s\", \"n_seeds\": %d", verdict(p, &s), c->n_seeds);
    if (c->n_seeds > 1) {
        fputs(", \"runs\": [", f);
        for (int k = 0; k < c->n_seeds; k++) {
            fprintf(f, "%s\n     {\"seed\": %llu, ", k ? "," : "", (unsigned long long)c->seed[k]);
            json_run(c, p, k, f);
            fputc('}', f);
        }
        fputc(']', f);
    }
    fprintf(f, "}%s\n", p + 1 < c->o->n_policies ? "," : "");
}

static void print_json(const capacity *c, FILE *f)
{
    const runner_capacity_opts *o = c->o;
    fprintf(f, "{\"scenario\": ");
    json_str(f, o->config);
    fprintf(f, ", \"sla_miss_bound\": %.17g, \"criterion\": \"%s\", \"tenant\": ",
            o->search.sla_miss, runner_criterion_name(o->criterion));
    if (o->tenant)
        json_str(f, o->tenant);
    else
        fputs("null", f);
    fprintf(f, ", \"tol\": %.17g, \"max_probes\": %d, \"reference\": ", o->search.tol,
            o->search.max_probes);
    json_str(f, c->label[0]);
    fputs(", \"seeds\": [", f);
    for (int k = 0; k < c->n_seeds; k++)
        fprintf(f, "%s%llu", k ? ", " : "", (unsigned long long)c->seed[k]);
    fputs("], \"interval\": \"mean over seeds, two-sided 95 % Student t; ratios paired by "
          "seed\", \"db\": ", f);
    if (c->st)
        json_str(f, store_path(c->st));
    else
        fputs("null", f);
    fputs(", \"sweep\": ", f);
    json_str(f, c->name);
    fputs(",\n  \"policies\": [\n", f);
    for (int p = 0; p < o->n_policies; p++)
        print_json_policy(c, p, f);
    fputs("  ]}\n", f);
}

/* ==================================================================================== */

/* A side of a bracket as stored: NaN for a side never probed (the search keeps 0). */
static double side(double v) { return v > 0 ? v : NAN; }

/* Every bundle's answer into the capacities and capacity_seeds tables, in one transaction:
 * what the table or JSON shows, so that a notebook reads it instead of parsing output. */
static int store_answers(const capacity *c, ss_errbuf *eb)
{
    const runner_capacity_opts *o = c->o;
    int rc = store_capacities_begin(c->st, eb);
    for (int p = 0; !rc && p < o->n_policies; p++) {
        summary s;
        summarize(c, p, &s);
        const runner_capacity_result *r0 = res_of(c, p, 0);
        int one = c->n_seeds == 1;
        store_capacity row = {
            .command = o->command ? o->command : "", .scenario = o->config, .sweep = c->name,
            .bundle = c->label[p], .reference = c->label[0],
            .criterion = runner_criterion_name(o->criterion), .tenant = o->tenant,
            .sla_miss_bound = o->search.sla_miss, .tol = o->search.tol,
            .seeds = (uint32_t)c->n_seeds, .status = runner_capacity_status_name(s.status),
            .verdict = verdict(p, &s), .converged = s.converged, .censored = s.n_censored > 0,
            .capacity = s.cap.mean, .capacity_lo = s.cap.lo, .capacity_hi = s.cap.hi,
            .ratio = s.ratio.n ? s.ratio.mean : NAN, .ratio_lo = s.ratio.n ? s.ratio.lo : NAN,
            .ratio_hi = s.ratio.n ? s.ratio.hi : NAN,
            .bracket_lo = one ? side(r0->lo) : NAN, .bracket_hi = one ? side(r0->hi) : NAN,
            .goodput_tokens_per_s = s.good.mean, .sla_miss = s.miss.mean,
            .pooled_sla_miss = s.pooled.mean, .probes = (uint32_t)s.n_probes,
        };
        int64_t id = 0;
        rc = store_capacity_add(c->st, &row, &id, eb);
        for (int k = 0; !rc && k < c->n_seeds; k++) {
            const runner_capacity_result *r = res_of(c, p, k);
            const runner_capacity_probe *b = shown(r);
            char point[RUNNER_LABEL_MAX + 96];
            if (r->i_best >= 0)
                point_at(c, p, k, r->probe[r->i_best].load, point, sizeof point);
            double ratio = ratio_of(c, p, k);
            store_capacity_seed sr = {
                .seed = c->seed[k], .status = runner_capacity_status_name(r->status),
                .converged = r->converged, .censored = r->censored, .capacity = r->capacity,
                .ratio = ratio > 0 ? ratio : NAN, .bracket_lo = side(r->lo),
                .bracket_hi = side(r->hi), .goodput_tokens_per_s = b ? b->goodput_tok_per_s : NAN,
                .sla_miss = b ? b->sla_miss : NAN, .pooled_sla_miss = b ? b->pooled_miss : NAN,
                .probes = (uint32_t)r->n_probes, .point = r->i_best >= 0 ? point : NULL,
            };
            rc = store_capacity_add_seed(c->st, id, &sr, eb);
        }
    }
    if (!rc)
        rc = store_capacities_commit(c->st, eb);
    else
        store_run_abort(c->st);
    return rc;
}

void runner__capacity_search_done(const capacity *c, int i, int done,
                                  const runner_capacity_result *r)
{
    if (c->o->progress != RUNNER_PROGRESS_SEARCHES)
        return;
    int n = c->o->n_policies * c->n_seeds;
    char how[96];
    runner_progress_text(how, sizeof how, done, n, runner_wall_now() - c->t0, "");
    fprintf(stderr, "slicesim: capacity: %d of %d searches done (%s): %s, seed %llu: ", done, n,
            how, c->label[i / c->n_seeds], (unsigned long long)c->seed[i % c->n_seeds]);
    if (r->status == RUNNER_CAP_FOUND)
        fprintf(stderr, "capacity %.4g", r->capacity);
    else
        fprintf(stderr, "%s", runner_capacity_status_name(r->status));
    fprintf(stderr, " (%d probes)\n", r->n_probes);
}

int runner__capacity_search_one(capacity *c, ss_errbuf *eb)
{
    runner_capacity_result *r = cur(c);
    int rc = runner_capacity_search(&c->o->search, probe_replay, c, r, eb);
    if (!rc && r->i_best >= 0)
        memcpy(c->best_search[c->p * c->n_seeds + c->k], c->search[r->i_best],
               sizeof c->best_search[0]);
    return rc;
}

/* Every bundle's search at every seed, bundle by bundle: here one after the other, or in
 * o->jobs worker processes (capacity_jobs.c), which give the same results and output. */
static int search_all(capacity *c, ss_errbuf *eb)
{
    const runner_capacity_opts *o = c->o;
    int n = o->n_policies * c->n_seeds;
    c->t0 = runner_wall_now();
    if (o->jobs > 1 && n > 1)
        return runner__capacity_parallel(c, o->jobs < n ? o->jobs : n, eb);
    int rc = SS_OK;
    for (int i = 0; !rc && i < n; i++) {
        c->p = i / c->n_seeds;
        c->k = i % c->n_seeds;
        rc = runner__capacity_search_one(c, eb);
        if (!rc)
            runner__capacity_search_done(c, i, i + 1, &c->res[i]);
    }
    return rc;
}

int runner_capacity(const runner_capacity_opts *o, FILE *out, ss_errbuf *eb)
{
    if (o->n_policies < 1 || o->n_policies > RUNNER_CAPACITY_MAX_POLICIES)
        return ss_err(eb, SS_EINVAL, "capacity: %d bundles (1 to %d)", o->n_policies,
                      RUNNER_CAPACITY_MAX_POLICIES);
    if (o->n_seeds < 0 || o->n_seeds > RUNNER_CAPACITY_MAX_SEEDS)
        return ss_err(eb, SS_EINVAL, "capacity: %d seeds (1 to %d)", o->n_seeds,
                      RUNNER_CAPACITY_MAX_SEEDS);
    capacity c = {.o = o, .n_seeds = o->n_seeds > 1 ? o->n_seeds : 1};
    int rc = SS_OK;
    for (int i = 0; !rc && i < o->n_policies; i++)
        rc = runner_bundle_label(o->policy[i], c.label[i], eb);
    if (rc)
        return rc;
    size_t n_res = (size_t)o->n_policies * (size_t)c.n_seeds;
    c.res = ss_calloc(n_res, sizeof *c.res);
    c.best_search = ss_calloc(n_res, sizeof *c.best_search);
    if (!c.res || !c.best_search) {
        ss_free(c.res);
        ss_free(c.best_search);
        return ss_err(eb, SS_ENOMEM, "out of memory");
    }
    const char *base = strrchr(o->config, '/');
    if (o->name)
        snprintf(c.name, sizeof c.name, "%s", o->name);
    else
        snprintf(c.name, sizeof c.name, "capacity:%s", base ? base + 1 : o->config);
    rc = check_bundles(&c, eb);
    if (!rc)
        rc = search_all(&c, eb);
    runner__inputs_fini(&c.inputs);
    if (c.n_reused)
        fprintf(stderr, "slicesim: capacity: reused %d probes stored in %s (sweep '%s') from the "
                        "same inputs: scenario, traces, profiles and slicesim\n",
                c.n_reused, store_path(c.st), c.name);
    if (c.n_rerun)
        fprintf(stderr, "slicesim: note: capacity: %d of these probes were in %s (sweep '%s') "
                        "from other inputs (or with none recorded, or of a searching bundle) and "
                        "were run again: their points now name the new runs; the old runs stay "
                        "in the database\n",
                c.n_rerun, store_path(c.st), c.name);
    if (!rc && c.st)
        rc = store_answers(&c, eb);
    if (!rc && o->json)
        print_json(&c, out);
    else if (!rc && c.n_seeds > 1)
        print_table_seeds(&c, out);
    else if (!rc)
        print_table(&c, out);
    if (!rc && !o->json && c.st)
        fprintf(out, "  results: %s (sweep '%s')\n", store_path(c.st), c.name);
    store_close(&c.st);
    ss_free(c.res);
    ss_free(c.best_search);
    return rc;
}
