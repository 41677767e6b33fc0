/* The knob search (a coordinate search over a bundle's listed values, each candidate a
 * replay) and the dispatch of a searching bundle to its search. */
#include "runner/knob_search.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Whether score a is better than b (b judged earlier): a lower miss by the criterion, then a
 * lower worst miss, then a higher goodput. */
static int better(const runner_alloc_problem *p, const runner_alloc_score *a,
                  const runner_alloc_score *b)
{
    double ja = runner_alloc_judged(p, a), jb = runner_alloc_judged(p, b);
    if (ja != jb)
        return ja < jb;
    if (a->worst != b->worst)
        return a->worst < b->worst;
    return a->goodput_tok_per_s > b->goodput_tok_per_s;
}

/* Judge candidate choice into *s, exactly while its judged miss is at most above, counting
 * it; 1 when the cap refuses it. */
static int judge(const runner_alloc_problem *p, runner_knob_judge_fn *fn, void *ud,
                 const int *choice, double above, runner_alloc_score *s,
                 runner_knob_result *out, ss_errbuf *eb)
{
    if (out->n_replays >= p->max_replays) {
        out->capped = 1;
        return 1;
    }
    *s = (runner_alloc_score){0};
    int rc = fn(ud, choice, above, s, eb);
    if (rc)
        return rc;
    s->worst = 0;
    for (uint32_t t = 0; t < p->n_tenants; t++)
        s->worst = s->miss[t] > s->worst ? s->miss[t] : s->worst;
    out->n_replays++;
    return 0;
}

int runner_knob_search(const runner_knobs *k, const runner_alloc_problem *p,
                       runner_knob_judge_fn *fn, void *ud, runner_knob_result *out,
                       ss_errbuf *eb)
{
    *out = (runner_knob_result){0};
    if (k->n < 1 || k->n > RUNNER_KNOBS_MAX || p->max_replays < 1 ||
        p->max_replays > RUNNER_STATIC_BEST_MAX_REPLAYS || p->n_tenants < 1 ||
        p->n_tenants > SS_MAX_TENANTS ||
        (p->criterion == RUNNER_CRIT_TENANT && p->i_tenant >= p->n_tenants))
        return ss_err(eb, SS_EINVAL, "knob search: options out of range");
    int rc = judge(p, fn, ud, out->choice, INFINITY, &out->score, out, eb);
    if (rc)
        return rc < 0 ? rc : SS_OK;
    for (int i = 0; i < k->n && runner_alloc_judged(p, &out->score) > 0; i++) {
        int cand[RUNNER_KNOBS_MAX], at = out->choice[i];
        memcpy(cand, out->choice, sizeof cand);
        for (int v = 0; v < k->knob[i].n; v++) {
            if (v == at)
                continue;
            cand[i] = v;
            runner_alloc_score s;
            rc = judge(p, fn, ud, cand, runner_alloc_judged(p, &out->score), &s, out, eb);
            if (rc < 0)
                return rc;
            if (rc)
                return SS_OK; /* capped: the best so far stands */
            if (better(p, &s, &out->score)) {
                out->score = s;
                out->choice[i] = v;
            }
        }
    }
    return SS_OK;
}

/* One knob search of scenario sc under way. */
typedef struct tune {
    scn_scenario *sc;
    const runner_knobs *k;
    const runner_static_best_opts *o;
    const runner_run_opts *ro;
    const runner_alloc_problem *p;
    int n;
    int n_stopped;             /* candidates stopped early */
} tune;

/* Set the knobs of sc to choice. */
static int set_choice(scn_scenario *sc, const runner_knobs *k, const int *choice,
                      ss_errbuf *eb)
{
    for (int i = 0; i < k->n; i++) {
        char a[sizeof k->knob[0].key + sizeof k->knob[0].value[0] + 2];
        snprintf(a, sizeof a, "%s=%s", k->knob[i].key, k->knob[i].value[choice[i]]);
        int rc = scn_set_from(sc, a, "--policies", eb);
        if (rc)
            return rc;
    }
    return scn_check(sc, eb);
}

/* "policy.slice_period_ms=5 policy.slice_max_whatifs=16" into buf (size n). */
static void choice_text(const runner_knobs *k, const int *choice, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < k->n && used < n; i++) {
        int w = snprintf(buf + used, n - used, "%s%s=%s", i ? " " : "", k->knob[i].key,
                         k->knob[i].value[choice[i]]);
        used += w > 0 ? (size_t)w : 0;
    }
}

static int judge_replay(void *ud, const int *choice, double above, runner_alloc_score *out,
                        ss_errbuf *eb)
{
    tune *t = ud;
    int rc = set_choice(t->sc, t->k, choice, eb);
    if (!rc)
        rc = runner_replay_score(t->sc, t->ro, t->p, t->o->full ? INFINITY : above, out, eb);
    if (rc)
        return ss_err_prefix(eb, rc, "knob search: candidate %d", t->n + 1);
    t->n++;
    t->n_stopped += out->stopped;
    if (t->o->progress && isatty(STDERR_FILENO)) {
        char a[1024];
        choice_text(t->k, choice, a, sizeof a);
        runner_candidate_line("knob search", t->n, a, out);
    }
    return SS_OK;
}

static int knob_search_run(scn_scenario *sc, const char *spec, const runner_static_best_opts *o,
                           char *note, size_t n, int *n_replays, ss_errbuf *eb)
{
    runner_knobs k;
    int rc = runner_bundle_knobs(spec, &k, eb);
    if (rc)
        return rc;
    runner_alloc_problem p = {.n_tenants = sc->n_tenants,
                              .max_replays = o->max_replays ? o->max_replays
                                                            : RUNNER_STATIC_BEST_REPLAYS,
                              .criterion = o->criterion};
    int found = o->criterion != RUNNER_CRIT_TENANT;
    for (uint32_t t = 0; !found && o->tenant && t < sc->n_tenants; t++)
        if (!strcmp(sc->tenants[t].name, o->tenant))
            p.i_tenant = t, found = 1;
    if (!found)
        return ss_err(eb, SS_EINVAL, "knob search: no tenant '%s'", o->tenant ? o->tenant : "");
    catalog *cat = NULL;
    rc = catalog_load(&cat, catalog_default_dir(o->profiles), eb);
    runner_run_opts ro = {.profiles = o->profiles, .config = o->config, .catalog = cat,
                          .arrivals_checked = 1};
    tune t = {.sc = sc, .k = &k, .o = o, .ro = &ro, .p = &p};
    runner_knob_result r;
    if (!rc)
        rc = runner_knob_search(&k, &p, judge_replay, &t, &r, eb);
    catalog_destroy(&cat);
    if (!rc)
        rc = set_choice(sc, &k, r.choice, eb);
    if (rc)
        return rc;
    *n_replays = r.n_replays;
    char chose[1024];
    choice_text(&k, r.choice, chose, sizeof chose);
    snprintf(note, n, "%s, %d candidate replays%s", chose, r.n_replays,
             r.capped ? " (capped)" : "");
    if (o->quiet)
        return SS_OK;
    fprintf(stderr, "slicesim: knob search: %s: chose %s, %s%s SLA miss %.2f%%, %d candidate "
            "replays%s", o->point ? o->point : "run", chose,
            o->criterion == RUNNER_CRIT_POOLED ? "pooled" : o->criterion == RUNNER_CRIT_TENANT
                ? "tenant " : "worst tenant", o->criterion == RUNNER_CRIT_TENANT ? o->tenant : "",
            100 * runner_alloc_judged(&p, &r.score), r.n_replays, r.capped ? " (the cap)" : "");
    runner_stopped_note(t.n_stopped);
    return SS_OK;
}

int runner_bundle_check_knobs(scn_scenario *sc, const char *spec, const runner_run_opts *ro,
                              ss_errbuf *eb)
{
    runner_knobs k;
    int rc = runner_bundle_knobs(spec, &k, eb);
    int choice[RUNNER_KNOBS_MAX] = {0};
    for (int i = 0; !rc && i < k.n; i++) {
        for (int v = 1; !rc && v < k.knob[i].n; v++) {
            choice[i] = v;
            rc = set_choice(sc, &k, choice, eb);
            if (!rc)
                rc = runner_run_check(sc, ro, eb);
            if (rc)
                ss_err_prefix(eb, rc, "%s=%s", k.knob[i].key, k.knob[i].value[v]);
        }
        choice[i] = 0;
    }
    return rc ? rc : k.n ? set_choice(sc, &k, choice, eb) : SS_OK;
}

int runner_bundle_search(scn_scenario *sc, const char *spec, const runner_static_best_opts *o,
                         char *note, size_t n, int *n_replays, ss_errbuf *eb)
{
    int dummy;
    if (!n_replays)
        n_replays = &dummy;
    *n_replays = 0;
    if (runner_bundle_searches_alloc(spec)) {
        runner_alloc_result ar;
        runner_static_best_opts so = *o;
        so.share = runner_bundle_share(spec);
        int rc = runner_static_best(sc, &so, &ar, note, n, eb);
        if (!rc)
            *n_replays = ar.n_replays;
        return rc;
    }
    return knob_search_run(sc, spec, o, note, n, n_replays, eb);
}
