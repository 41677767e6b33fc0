/* The static-best bundle's replays: the problem a scenario poses (its cluster's GPUs, its
 * tenants' container sizes and offered loads), each candidate allocation judged by a replay of
 * the scenario that stores nothing, and the chosen allocation written into the scenario for
 * the command to run and store. The search is static_best.c's. */
#include "runner/static_best.h"

#include "core/ss_alloc.h"
#include "core/ss_log.h"
#include "runner/scenario_run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The GPUs of sc's cluster: its nodes' (per node: the scenario's or the GPU catalog's), or
 * the scenario's own containers' when it names no nodes. */
static int cluster_gpus(const scn_scenario *sc, const catalog *cat, uint32_t *out,
                        ss_errbuf *eb)
{
    uint64_t n = 0;
    if (sc->nodes) {
        const cat_gpu *g = NULL;
        int rc = sc->gpus_per_node ? SS_OK : catalog_gpu_find(cat, sc->gpu, &g, eb);
        if (rc)
            return rc;
        n = (uint64_t)sc->nodes * (sc->gpus_per_node ? sc->gpus_per_node : g->gpus_per_node);
    } else {
        for (uint32_t t = 0; t < sc->n_tenants; t++)
            n += (uint64_t)sc->tenants[t].replicas * sc->tenants[t].tp * sc->tenants[t].pp;
    }
    if (n > UINT32_MAX)
        return ss_err(eb, SS_EINVAL, "static-best: a cluster of %llu GPUs is too large",
                      (unsigned long long)n);
    *out = (uint32_t)n;
    return SS_OK;
}

/* Each tenant's offered load: the prompt and output tokens its requests ask for over the
 * run's window (its duration, or the last arrival of all). */
static int demand_of(const scn_scenario *sc, const runner_run_opts *ro, double *out,
                     ss_errbuf *eb)
{
    runner_arrivals a[SS_MAX_TENANTS];
    int rc = runner_arrivals_of(sc, ro, 0, a, eb);
    double window = sc->duration_s;
    for (uint32_t t = 0; !rc && !(sc->duration_s > 0) && t < sc->n_tenants; t++)
        window = a[t].last_s > window ? a[t].last_s : window;
    for (uint32_t t = 0; !rc && t < sc->n_tenants; t++)
        out[t] = (double)a[t].tokens / (window > 0 ? window : 1);
    return rc;
}

/* What a search over GPU shares lays out: each tenant's share and the units of a GPU it
 * takes (a GPU is `per_gpu` units). */
typedef struct share_plan {
    const char *kind;              /* "mig", "mps", "mux"; NULL: whole GPUs */
    uint32_t per_gpu;              /* plan_units */
    char share[SS_MAX_TENANTS][32];/* "mig:3g.40gb", "mps:0.4", "mux", "whole" */
} share_plan;

/* The units of a GPU under a share plan of kind `kind`: MIG's 56ths (a profile takes the larger
 * of its compute slices' sevenths and its memory slices' eighths), MPS's tenths of the SMs,
 * multiplexing's tenths of the memory. */
static uint32_t plan_units(const char *kind)
{
    return kind && !strcmp(kind, "mig") ? CAT_MIG_COMPUTE * CAT_MIG_MEMORY : 10;
}

/* Tenant t's share under plan->kind: the smallest that holds its model, its KV pool at least
 * as large as its weights (usable memory, gpu_mem_util of the share's, at least twice the
 * weights plus the runtime reserve; MIG: the fewest compute slices, then the least memory;
 * MPS: the fewest tenths of the SMs, its memory the same share of the GPU's), and the units it
 * takes; a whole GPU (per_gpu units a GPU) when none smaller does or its containers span GPUs
 * (tp x pp > 1). */
static int share_of(const scn_scenario *sc, const catalog *cat, uint32_t t, share_plan *plan,
                    uint32_t *unit, ss_errbuf *eb)
{
    const scn_tenant *st = &sc->tenants[t];
    const cat_gpu *gpu;
    const cat_model *m;
    int rc = catalog_gpu_find(cat, sc->gpu, &gpu, eb);
    if (!rc)
        rc = catalog_model_find(cat, st->model, &m, eb);
    if (rc)
        return rc;
    uint32_t span = st->tp * st->pp;
    *unit = span * plan->per_gpu;
    snprintf(plan->share[t], sizeof plan->share[t], "whole");
    if (span > 1)
        return SS_OK;
    gsim_config defaults; /* the runtime reserve a replay of sc gets */
    gsim_config_defaults(&defaults);
    double need = gsim_share_need(m, defaults.runtime_reserve, sc->gpu_mem_util);
    if (!strcmp(plan->kind, "mps") || !strcmp(plan->kind, "mux")) {
        for (uint32_t k = 1; k < plan->per_gpu; k++)
            if (gpu->hbm_bytes * k / plan->per_gpu >= need) {
                /* mux: its memory is what the layout asks for */
                if (!strcmp(plan->kind, "mux"))
                    snprintf(plan->share[t], sizeof plan->share[t], "mux");
                else
                    snprintf(plan->share[t], sizeof plan->share[t], "mps:%g",
                             (double)k / plan->per_gpu);
                *unit = k;
                return SS_OK;
            }
        return SS_OK;
    }
    if (!gpu->n_mig)
        return ss_err(eb, SS_EINVAL, "mig-best: %s has no MIG profiles", gpu->name);
    const cat_mig *best = NULL;
    for (uint32_t i = 0; i < gpu->n_mig; i++) {
        const cat_mig *g = &gpu->mig[i];
        if (g->compute < CAT_MIG_COMPUTE &&
            gpu->hbm_bytes * g->memory / CAT_MIG_MEMORY >= need &&
            (!best || g->compute < best->compute ||
             (g->compute == best->compute && g->memory < best->memory)))
            best = g;
    }
    if (best) {
        snprintf(plan->share[t], sizeof plan->share[t], "mig:%s", best->name);
        uint32_t cs = best->compute * CAT_MIG_MEMORY, ms = best->memory * CAT_MIG_COMPUTE;
        *unit = cs > ms ? cs : ms;
    }
    return SS_OK;
}

static int problem_of(const scn_scenario *sc, const runner_run_opts *ro, int demand,
                      share_plan *plan, runner_alloc_problem *p, ss_errbuf *eb)
{
    *p = (runner_alloc_problem){.n_tenants = sc->n_tenants,
                                .max_replays = RUNNER_STATIC_BEST_REPLAYS};
    uint32_t one = 0;
    int rc = SS_OK;
    for (uint32_t t = 0; !rc && t < sc->n_tenants; t++) {
        p->unit[t] = sc->tenants[t].tp * sc->tenants[t].pp;
        if (plan && plan->kind)
            rc = share_of(sc, ro->catalog, t, plan, &p->unit[t], eb);
        one += p->unit[t];
    }
    if (!rc)
        rc = cluster_gpus(sc, ro->catalog, &p->gpus, eb);
    if (!rc && plan && plan->kind) { /* units of the GPUs, and one container each in them */
        p->gpus *= plan->per_gpu;
        one = (one + plan->per_gpu - 1) / plan->per_gpu * plan->per_gpu;
    }
    uint32_t per = plan && plan->kind ? plan->per_gpu : 1;
    if (!rc && one > p->gpus)
        rc = ss_err(eb, SS_EINVAL, "static-best: one container of each of the %u tenants "
                    "needs %u GPUs, the cluster has %u", sc->n_tenants, one / per,
                    p->gpus / per);
    if (!rc && demand)
        rc = demand_of(sc, ro, p->demand_tok_per_s, eb);
    return rc;
}

int runner_static_best_problem(const scn_scenario *sc, const runner_static_best_opts *o,
                               int demand, runner_alloc_problem *p_out, ss_errbuf *eb)
{
    catalog *cat = NULL;
    int rc = catalog_load(&cat, catalog_default_dir(o->profiles), eb);
    runner_run_opts ro = {.profiles = o->profiles, .config = o->config, .catalog = cat,
                          .arrivals_checked = 1};
    share_plan plan = {.kind = o->share, .per_gpu = plan_units(o->share)};
    if (!rc)
        rc = problem_of(sc, &ro, demand, &plan, p_out, eb);
    catalog_destroy(&cat);
    return rc;
}

/* One search under way. */
typedef struct search {
    scn_scenario *sc;
    const runner_static_best_opts *o;
    const runner_run_opts *ro;
    const runner_alloc_problem *p;
    const share_plan *plan;    /* what a search over GPU shares lays out (kind NULL: none) */
    runner__config *cfg;       /* owned: a candidate's configuration, for its layout's GPUs */
    int n;                     /* candidates replayed */
    int n_stopped;             /* of them, those stopped early */
} search;

/* Allocation c into sc: each tenant's containers, and under a share plan its share (first
 * fit: share_gpus cleared). */
static void set_alloc(scn_scenario *sc, const share_plan *plan, const uint32_t *c)
{
    for (uint32_t t = 0; t < sc->n_tenants; t++) {
        sc->tenants[t].replicas = sc->tenants[t].max_replicas = c[t];
        if (plan && plan->kind) {
            snprintf(sc->tenants[t].share, sizeof sc->tenants[t].share, "%s", plan->share[t]);
            sc->tenants[t].share_gpus[0] = '\0';
            sc->tenants[t].mem_gib = 0;
        }
    }
}

/* "chat=3 code=3 assist=2" (under a share plan "chat=3 x mig:3g.40gb ...") into buf. */
static void alloc_text(const scn_scenario *sc, const share_plan *plan, const uint32_t *c,
                       char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t t = 0; t < sc->n_tenants && used < n; t++) {
        int w = snprintf(buf + used, n - used, "%s%s=%u", t ? " " : "", sc->tenants[t].name,
                         c[t]);
        used += w > 0 ? (size_t)w : 0;
        if (plan && plan->kind && used < n) {
            w = snprintf(buf + used, n - used, " x %s", plan->share[t]);
            used += w > 0 ? (size_t)w : 0;
        }
    }
}

/* The physical GPUs allocation sc (set_alloc) takes: its whole-GPU tenants' and the shared
 * GPUs its shares are laid out on, first fit (the fit of MIG placements may need more than
 * the units add up to). */
static int alloc_gpus(search *s, uint32_t *n, ss_errbuf *eb)
{
    int rc = runner__config_make(s->cfg, s->sc, s->ro->catalog, eb);
    uint32_t shared = 0, bad;
    if (!rc)
        rc = gsim_share_gpus(&s->cfg->cfg, &shared, &bad, eb);
    *n = shared;
    for (uint32_t t = 0; !rc && t < s->sc->n_tenants; t++)
        if (!s->cfg->tenants[t].share.kind)
            *n += s->cfg->tenants[t].replicas * s->cfg->tenants[t].tp * s->cfg->tenants[t].pp;
    return rc;
}

/* The replay x's score into out: in full, or a stopped one's misses so far. */
static void score_of(const scn_scenario *sc, const runner_run *x, runner_alloc_score *out)
{
    *out = (runner_alloc_score){0};
    if (x->stopped) {
        runner_run_misses_so_far(x, out->miss, &out->pooled);
        for (uint32_t t = 0; t < sc->n_tenants; t++) {
            out->violations[t] = (double)(x->so_far.missed[t] + x->so_far.broken[t]);
            out->worst = out->miss[t] > out->worst ? out->miss[t] : out->worst;
        }
        out->stopped = 1;
        return;
    }
    const metrics *mt = gsim_metrics(x->g);
    for (uint32_t t = 0; t < sc->n_tenants && t < mt->n_tenants; t++) {
        metrics_group_summary gs;
        metrics_summarize_group(&mt->tenants[t], x->m.window_s, &gs);
        out->miss[t] = gs.sla_violation_rate;
        out->violations[t] = (double)gs.sla_violations;
        out->worst = out->miss[t] > out->worst ? out->miss[t] : out->worst;
    }
    out->goodput_tok_per_s = x->m.all.goodput_tokens_per_s;
    out->pooled = x->m.all.sla_violation_rate;
}

int runner_replay_score(scn_scenario *sc, const runner_run_opts *ro,
                        const runner_alloc_problem *p, double above, runner_alloc_score *out,
                        ss_errbuf *eb)
{
    char db[SCN_PATH_MAX];
    memcpy(db, sc->db, sizeof db);
    snprintf(sc->db, sizeof sc->db, "none");
    int level = ss_log_level();
    ss_log_set_level(SS_LOG_QUIET);
    runner_run x = {0};
    runner_run_opts o = *ro;
    runner_stop stop;
    int rc = isfinite(above) ? runner_stop_init(&stop, sc, ro, p->criterion, p->i_tenant, above,
                                                &x.eb)
                             : SS_OK;
    o.stop = isfinite(above) ? &stop : NULL;
    if (!rc)
        rc = runner_run_setup(&x, sc, &o);
    if (!rc)
        rc = runner_run_exec(&x);
    ss_log_set_level(level);
    memcpy(sc->db, db, sizeof db);
    if (rc)
        *eb = x.eb;
    else
        score_of(sc, &x, out);
    runner_run_fini(&x);
    return rc;
}

void runner_candidate_line(const char *who, int n, const char *what,
                           const runner_alloc_score *s)
{
    if (s->stopped)
        fprintf(stderr, "slicesim: %s: candidate %d: %s: SLA miss >%.2f%% (all tenants), "
                "stopped: certain to be worse than the best so far\n", who, n, what,
                100 * s->pooled);
    else
        fprintf(stderr, "slicesim: %s: candidate %d: %s: SLA miss %.2f%% (all tenants), "
                "goodput %.1f tok/s\n", who, n, what, 100 * s->pooled, s->goodput_tok_per_s);
}

void runner_stopped_note(int n_stopped)
{
    if (n_stopped)
        fprintf(stderr, ", %d stopped early", n_stopped);
    fputc('\n', stderr);
}

/* runner_alloc_problem.fits under a share plan: allocation c's layout on the cluster's GPUs
 * (an error making it counts as not fitting; the judge's replay would report it). */
static int alloc_fits(void *ud, const uint32_t *c)
{
    search *s = ud;
    ss_errbuf eb;
    uint32_t gpus;
    set_alloc(s->sc, s->plan, c);
    return alloc_gpus(s, &gpus, &eb) == SS_OK && gpus <= s->p->gpus / s->plan->per_gpu;
}

/* runner_alloc_judge_fn: a replay of the scenario with allocation c (runner_replay_score). */
static int judge_replay(void *ud, const uint32_t *c, double above, runner_alloc_score *out,
                        ss_errbuf *eb)
{
    search *s = ud;
    set_alloc(s->sc, s->plan, c);
    int rc = SS_OK;
    uint32_t gpus = 0;
    if (s->plan->kind && (rc = alloc_gpus(s, &gpus, eb)) == SS_OK &&
        gpus > s->p->gpus / s->plan->per_gpu) { /* its shares do not fit: never chosen */
        *out = (runner_alloc_score){.worst = 1, .pooled = 1};
        for (uint32_t t = 0; t < s->sc->n_tenants; t++)
            out->miss[t] = 1;
    } else if (!rc)
        rc = runner_replay_score(s->sc, s->ro, s->p, s->o->full ? INFINITY : above, out, eb);
    if (rc)
        return ss_err_prefix(eb, rc, "static-best: candidate %d", s->n + 1);
    s->n++;
    s->n_stopped += out->stopped;
    if (s->o->progress && isatty(STDERR_FILENO)) {
        char a[256];
        alloc_text(s->sc, s->plan, c, a, sizeof a);
        runner_candidate_line("static-best", s->n, a, out);
    }
    return SS_OK;
}

int runner_static_best(scn_scenario *sc, const runner_static_best_opts *o,
                       runner_alloc_result *out, char *note, size_t n, ss_errbuf *eb)
{
    catalog *cat = NULL;
    int rc = catalog_load(&cat, catalog_default_dir(o->profiles), eb);
    runner_run_opts ro = {.profiles = o->profiles, .config = o->config, .catalog = cat,
                          .arrivals_checked = 1};
    runner_alloc_problem p;
    share_plan plan = {.kind = o->share, .per_gpu = plan_units(o->share)};
    if (!rc)
        rc = problem_of(sc, &ro, 1, &plan, &p, eb);
    if (o->max_replays)
        p.max_replays = o->max_replays;
    p.criterion = o->criterion;
    int found = o->criterion != RUNNER_CRIT_TENANT;
    for (uint32_t t = 0; !found && o->tenant && t < sc->n_tenants; t++)
        if (!strcmp(sc->tenants[t].name, o->tenant))
            p.i_tenant = t, found = 1;
    if (!rc && !found)
        rc = ss_err(eb, SS_EINVAL, "static-best: no tenant '%s'", o->tenant ? o->tenant : "");
    search s = {.sc = sc, .o = o, .ro = &ro, .p = &p, .plan = &plan};
    if (!rc && plan.kind && !(s.cfg = ss_calloc(1, sizeof *s.cfg)))
        rc = ss_err(eb, SS_ENOMEM, "static-best: out of memory");
    if (plan.kind) {
        p.fits = alloc_fits;
        p.fits_ud = &s;
        p.multi_take = 1;
    }
    if (!rc)
        rc = runner_alloc_search(&p, judge_replay, &s, out, eb);
    uint32_t used = 0;
    if (!rc)
        set_alloc(sc, &plan, out->containers);
    if (!rc && plan.kind)
        rc = alloc_gpus(&s, &used, eb);
    for (uint32_t t = 0; !rc && !plan.kind && t < sc->n_tenants; t++)
        used += out->containers[t] * p.unit[t];
    ss_free(s.cfg);
    catalog_destroy(&cat);
    if (rc)
        return rc;
    char chose[512], start[512];
    alloc_text(sc, &plan, out->containers, chose, sizeof chose);
    alloc_text(sc, &plan, out->start, start, sizeof start);
    snprintf(note, n, "%s containers, %d candidate replays%s", chose, out->n_replays,
             out->capped ? " (capped)" : "");
    if (o->quiet)
        return SS_OK;
    fprintf(stderr, "slicesim: %s: %s: chose %s containers (%u of %u GPUs; start %s), "
            "%s%s SLA miss %.2f%%, %d candidate replays%s",
            plan.kind ? (!strcmp(plan.kind, "mig")   ? "mig-best"
                         : !strcmp(plan.kind, "mps") ? "mps-best"
                                                     : "muxserve")
                      : "static-best",
            o->point ? o->point : "run", chose, used, p.gpus / (plan.kind ? plan.per_gpu : 1),
            start,
            o->criterion == RUNNER_CRIT_POOLED ? "pooled" : o->criterion == RUNNER_CRIT_TENANT
                ? "tenant " : "worst tenant", o->criterion == RUNNER_CRIT_TENANT ? o->tenant : "",
            100 * runner_alloc_judged(&p, &out->score), out->n_replays,
            out->capped ? " (the cap)" : "");
    runner_stopped_note(s.n_stopped);
    return SS_OK;
}
