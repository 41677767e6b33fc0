/* One run of a scenario: the common core of replay, compare and sweep. */
#include "runner/run.h"

#include "runner/scenario_run.h"

#include "core/ss_alloc.h"
#include "core/ss_log.h"
#include "core/ss_strbuf.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- workload source and store sink ------------------------------------------------------ */

static int source_next(void *ud, trace_rec *out, ss_errbuf *eb)
{
    return wl_source_next(ud, out, eb);
}

typedef struct sink {
    store *st;                /* NULL: nothing stored */
    runner_run *x;            /* its so_far counts, with x->o->stop */
} sink;

/* The sink's return that stops the run when its verdict is certain (not an error). */
#define STOP_RUN 1
/* Simulated time between two looks at the requests in flight (runner_stop). */
#define LOOK_EVERY_NS SS_NS_PER_S

/* Whether the judged miss is certain to exceed the stop rule's threshold, from the measured
 * requests known to miss so far (runner_stop). */
static int certain(const runner_run *x)
{
    const runner_stop *s = x->o->stop;
    uint64_t missed = 0, n = 0;
    for (uint32_t t = 0; t < s->n_tenants; t++) {
        uint64_t mt = x->so_far.missed[t] + x->so_far.broken[t];
        int judged = s->criterion == RUNNER_CRIT_WORST ||
                     (s->criterion == RUNNER_CRIT_TENANT && t == s->i_tenant);
        if (judged && s->n_measured[t] && (double)mt / (double)s->n_measured[t] > s->above)
            return 1;
        missed += mt;
        n += s->n_measured[t];
    }
    return s->criterion == RUNNER_CRIT_POOLED && n && (double)missed / (double)n > s->above;
}

/* Count the measured requests in flight that broke a bound of their SLA for good by now, per
 * tenant, into so_far.broken (the one that just ended is no longer in flight). */
static void look_in_flight(runner_run *x, ss_time now)
{
    const gmg *G = gsim_graph(x->g);
    const runner_stop *s = x->o->stop;
    memset(x->so_far.broken, 0, sizeof x->so_far.broken);
    for (uint32_t i = 0; i < G->n_slots; i++) {
        const gmg_req *q = &G->reqs[i];
        uint32_t t = s->n_tenants > 1 ? q->tenant : 0;
        if (q->state == GMG_REQ_FREE || q->state == GMG_REQ_DONE ||
            q->state == GMG_REQ_REJECTED || !q->measured || t >= s->n_tenants)
            continue;
        x->so_far.broken[t] += gsim_req_sla_so_far(q, now) != 0;
    }
}

/* Count a measured request's end against the stop rule, and now and then look at the requests
 * in flight: STOP_RUN once the verdict is certain. A tenant that ends more requests than were
 * counted for it breaks the rule's premise: it stops nothing more (a debug build asserts). */
static int stop_check(runner_run *x, const metrics_req *m)
{
    const runner_stop *s = x->o->stop;
    uint32_t t = s->n_tenants > 1 ? m->tenant : 0;
    if (x->so_far.bad || SS_NEVER(t >= s->n_tenants ||
                                  x->so_far.done[t] >= s->n_measured[t])) {
        x->so_far.bad = 1;
        return 0;
    }
    x->so_far.done[t]++;
    x->so_far.missed[t] += m->sla != 0;
    if (m->sla && certain(x))
        return STOP_RUN;
    ss_time now = gsim_end_time(x->g);
    if (now < x->so_far.next_look)
        return 0;
    x->so_far.next_look = ss_time_add(now, LOOK_EVERY_NS);
    look_in_flight(x, now);
    if (certain(x))
        return STOP_RUN;
    memset(x->so_far.broken, 0, sizeof x->so_far.broken); /* they may end and be counted */
    return 0;
}

static int sink_req(void *ud, const metrics_req *m, ss_errbuf *eb)
{
    sink *k = ud;
    if (k->st) {
        const char *tenant = gsim_tenant_name(k->x->g, m->tenant);
        int rc = store_run_request(k->st, m, tenant ? tenant : "default", eb);
        if (rc)
            return rc;
    }
    return k->x->o->stop && m->measured ? stop_check(k->x, m) : 0;
}

/* ---- iterations kept (--store iterations) ------------------------------------------------ */

/* An observer that stores each iteration as it begins (its end is known then), and calls the
 * observer installed before it (the timeline's) in turn. The first failure to store one is
 * kept and ends the run after the simulation. */
typedef struct runner__iter_keeper {
    runner_run *x;
    gsim_observer next;
    int rc;
    ss_errbuf eb;
} iter_keeper; /* runner_run.keeper */

static void keep_iter(void *ud, const gmg *g, const gmg_container *c)
{
    iter_keeper *k = ud;
    if (k->next.on_iter)
        k->next.on_iter(k->next.ud, g, c);
    if (k->rc)
        return;
    const cost_batch *b = &c->iter.batch;
    store_iter_row row = {
        .container = c->id, .iteration = c->iter.seq,
        .tenant = gsim_tenant_name(k->x->g, c->tenant),
        .start_s = ss_time_to_s(c->iter.start), .end_s = ss_time_to_s(c->iter.end),
        .prefill_seqs = b->n_prefill, .decode_seqs = b->n_decode,
        .swap_blocks = c->iter.swap_blocks, .prefill_tokens = b->prefill_tokens,
        .decode_ctx_tokens = b->decode_ctx_tokens,
    };
    k->rc = store_run_iteration(k->x->st, &row, &k->eb);
}

static void keep_request(void *ud, const gmg *g, const gmg_container *c, const gmg_req *r,
                         gsim_req_event what, ss_time now)
{
    iter_keeper *k = ud;
    k->next.on_request(k->next.ud, g, c, r, what, now);
}

static void keep_guest(void *ud, const gmg *g, const gmg_container *helper, const gmg_req *r,
                       uint32_t chunk, uint32_t n, ss_time start, ss_time end, ss_time weights_at)
{
    iter_keeper *k = ud;
    k->next.on_guest(k->next.ud, g, helper, r, chunk, n, start, end, weights_at);
}

static void keep_kv(void *ud, const gmg *g, const gmg_container *from, const gmg_container *to,
                    const gmg_req *r, double bytes, ss_time start, ss_time end)
{
    iter_keeper *k = ud;
    k->next.on_kv_transfer(k->next.ud, g, from, to, r, bytes, start, end);
}

/* Wrap the installed observer in a keeper of x's (x->keeper, freed by runner_run_fini). */
static int keep_iterations(runner_run *x)
{
    iter_keeper *k = x->keeper = ss_malloc(sizeof *k);
    if (!k)
        return ss_err(&x->eb, SS_ENOMEM, "out of memory");
    *k = (iter_keeper){.x = x, .next = gsim_get_observer(x->g)};
    gsim_observer obs = {
        .on_iter = keep_iter,
        .on_request = k->next.on_request ? keep_request : NULL,
        .on_guest = k->next.on_guest ? keep_guest : NULL,
        .on_kv_transfer = k->next.on_kv_transfer ? keep_kv : NULL,
        .ud = k,
    };
    gsim_set_observer(x->g, &obs);
    return SS_OK;
}

/* ---- progress line ---------------------------------------------------------------------- */

double runner_wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double wall_now(void) { return runner_wall_now(); }

/* s seconds as M:SS, or H:MM:SS from an hour. */
static void clock_text(char *buf, size_t n, double s)
{
    long t = s > 0 ? (long)(s + 0.5) : 0;
    if (t >= 3600)
        snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, n, "%ld:%02ld", t / 60, t % 60);
}

void runner_progress_text(char *buf, size_t n, long done, long total, double elapsed_s,
                          const char *word)
{
    int pct = total > 0 ? (int)(100 * done / total) : 0;
    if (done <= 0 || total <= 0) {
        snprintf(buf, n, "%d %%%s", pct, word);
        return;
    }
    char el[32], left[32];
    clock_text(el, sizeof el, elapsed_s);
    clock_text(left, sizeof left, elapsed_s / (double)done * (double)(total - done));
    if (done < total)
        snprintf(buf, n, "%d %%%s, %s elapsed, ~%s left", pct, word, el, left);
    else
        snprintf(buf, n, "%d %%%s, %s elapsed", pct, word, el);
}

typedef struct progress {
    double start, last;
    int shown;
    double total_s;           /* the run's duration_s: arrivals end there (0: not known) */
} progress;

static void on_progress(void *ud, ss_time now, uint64_t arrived, uint64_t finished,
                        uint64_t events)
{
    progress *p = ud;
    double w = wall_now();
    if (w - p->last < 0.5)
        return;
    p->last = w;
    p->shown = 1;
    double s = ss_time_to_s(now);
    char share[96] = "";
    if (p->total_s > 0) { /* the share of the arrivals' span simulated, and the time left */
        char text[80];
        long total = (long)(p->total_s * 10), done = (long)(s * 10);
        runner_progress_text(text, sizeof text, done < total ? done : total, total,
                             w - p->start, "");
        snprintf(share, sizeof share, " of %.0f (%s)", p->total_s, text);
    }
    fprintf(stderr, "\rslicesim: simulated %.1f s%s | %llu arrived, %llu finished | "
                    "%.2f M events/s   ",
            s, share, (unsigned long long)arrived, (unsigned long long)finished,
            (double)events / (w - p->start) / 1e6);
    fflush(stderr);
}

/* ---- labels ----------------------------------------------------------------------------- */

static const char *source_label(const runner_run *x)
{
    if (x->sc->n_tenants == 1 && x->sc->tenants[0].trace[0])
        return x->sc->tenants[0].trace;
    return x->o->config ? x->o->config : "synthetic";
}

static const char *format_label(const runner_run *x)
{
    return x->sc->n_tenants == 1 ? wl_source_format(x->ws, 0) : "multi-tenant";
}

static char *scenario_text(const scn_scenario *sc)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    int rc = scn_write(sc, f);
    fclose(f);
    char *out = rc ? NULL : ss_strdup(buf);
    free(buf);
    return out;
}

runner_report runner_run_report(const runner_run *x)
{
    runner_report r = {
        .source = source_label(x), .format = format_label(x), .gpu = x->sc->gpu,
        .batching = x->sc->batching, .routing = gsim_routing_name(x->g),
        .cluster = gsim_cluster_name(x->g), .cost = x->sc->cost, .seed = x->sc->seed,
        .ops = x->sc->ops, .skipped = wl_source_n_skipped(x->ws), .warmup_s = x->sc->warmup_s,
        .wall_s = x->wall_s,
    };
    return r;
}

/* ---- the run ---------------------------------------------------------------------------- */

int runner_run_setup(runner_run *x, const scn_scenario *sc, const runner_run_opts *o)
{
    x->sc = sc;
    x->o = o;
    const char *dir = catalog_default_dir(o->profiles);
    if (!(x->run = ss_calloc(1, sizeof *x->run)))
        return ss_err(&x->eb, SS_ENOMEM, "out of memory");
    int rc = SS_OK;
    if (o->catalog)
        x->cat = o->catalog;
    else
        x->own_cat = !(rc = catalog_load(&x->cat, dir, &x->eb));
    if (!rc && o->engine)
        rc = catalog_engine_put(x->cat, o->engine, &x->eb);
    if (!rc)
        rc = runner_engine_files(x->cat, sc, &x->eb);
    if (!rc)
        rc = runner__config_make(x->run, sc, x->cat, &x->eb);
    for (uint32_t i = 0; !rc && o->past_duration && i < sc->n_tenants; i++)
        x->run->specs[i].duration_s = sc->tenants[i].duration_s; /* not cut at the run's */
    if (!rc) {
        x->run->cfg.profiles_dir = dir;
        if (o->check != RUNNER_CHECK_DEFAULT)
            x->run->cfg.check = o->check == RUNNER_CHECK_ON;
        const char *sg = sc->servegen_dir[0] ? sc->servegen_dir : NULL;
        if (!o->arrivals_checked)
            rc = wl_source_check_range(x->run->specs, sc->n_tenants, sc->seed, sg, &x->eb);
        if (!rc)
            rc = wl_source_create(&x->ws, x->run->specs, sc->n_tenants, sc->seed, sg, &x->eb);
        if (rc == SS_EIO)
            rc = SS_EPARSE; /* an unreadable trace is bad input, like a malformed one */
    }
    if (!rc)
        rc = gsim_create(&x->g, &x->run->cfg, &x->eb);
    return rc;
}

int runner_run_check(const scn_scenario *sc, const runner_run_opts *o, ss_errbuf *eb)
{
    runner_run x = {0};
    int rc = runner_run_setup(&x, sc, o);
    if (rc)
        *eb = x.eb;
    runner_run_fini(&x);
    return rc;
}

static int begin_store(runner_run *x)
{
    ss_strbuf pj = {0};
    gsim_params_json(x->g, &pj);
    if (x->o->search && pj.n && pj.s[pj.n - 1] == '}') { /* one more member of the object */
        pj.s[--pj.n] = '\0';
        ss_strbuf_printf(&pj, ", \"bundle.search\": ");
        ss_strbuf_json_str(&pj, x->o->search);
        ss_strbuf_printf(&pj, "}");
    }
    x->ini = scenario_text(x->sc);
    const scn_tenant *t0 = &x->sc->tenants[0];
    store_run_info info = {
        .command = x->o->command ? x->o->command : "", .trace = source_label(x),
        .trace_format = format_label(x), .model = t0->model, .gpu = x->sc->gpu,
        .replicas = x->run->tenants[0].replicas, .tp = x->run->tenants[0].tp,
        .pp = x->run->tenants[0].pp, .batching = x->sc->batching,
        .routing = gsim_routing_name(x->g), .cluster_policy = gsim_cluster_name(x->g),
        .cost_model = x->sc->cost, .params_json = ss_strbuf_str(&pj), .seed = x->sc->seed,
        .rate_scale = t0->rate_scale, .limit = t0->limit, .warmup_s = x->sc->warmup_s,
        .scenario_ini = x->ini ? x->ini : "", .ops = x->sc->ops, .sweep = x->o->sweep,
        .point = x->o->point, .load = x->o->load, .engine = x->run->tenants[0].engine->name,
        .bundle = x->o->bundle, .keep = x->o->keep,
    };
    int64_t run_id;
    int rc = ss_strbuf_ok(&pj) ? SS_OK : ss_err(&x->eb, SS_ENOMEM, "out of memory");
    if (!rc && x->o->st) {
        x->st = x->o->st;
    } else if (!rc) {
        rc = store_open(&x->st, x->sc->db, &x->eb);
        x->own_store = !rc;
    }
    if (!rc)
        rc = store_run_begin(x->st, &info, &run_id, &x->eb);
    ss_strbuf_fini(&pj);
    return rc;
}

int runner_run_exec(runner_run *x)
{
    int rc = SS_OK;
    if (x->o->st || strcmp(x->sc->db, "none"))
        rc = begin_store(x);
    if (rc)
        return rc;
    sink snk = {x->st, x};
    if (!x->keeper && x->st && x->o->keep == STORE_KEEP_ITERATIONS &&
        (rc = keep_iterations(x))) {
        store_run_abort(x->st);
        return rc;
    }
    progress prog = {wall_now(), wall_now(), 0, x->sc->duration_s};
    if (x->o->progress && isatty(STDERR_FILENO))
        gsim_set_progress(x->g, on_progress, &prog);
    double t0 = wall_now();
    rc = gsim_run(x->g, source_next, x->ws, x->st || x->o->stop ? sink_req : NULL, &snk,
                  &x->eb);
    x->wall_s = wall_now() - t0;
    if (!rc && x->keeper && x->keeper->rc) {
        rc = x->keeper->rc;
        x->eb = x->keeper->eb;
    }
    if (prog.shown)
        fprintf(stderr, "\r%*s\r", 140, "");
    if (rc == STOP_RUN) {
        x->stopped = 1;
        x->stopped_ns = gsim_end_time(x->g);
        if (x->st)
            store_run_abort(x->st);
        return SS_OK;
    }
    /* The rule's premise, checked on every run that went to its end: it counted exactly the
     * requests each tenant measured. */
    for (uint32_t t = 0; !rc && x->o->stop && t < x->o->stop->n_tenants; t++)
        if (SS_NEVER(x->so_far.done[t] != x->o->stop->n_measured[t]))
            break;
    if (!rc)
        metrics_summarize(gsim_metrics(x->g), gsim_end_time(x->g), &x->m);
    const metrics_group_summary *a = &x->m.all;
    if (!rc && a->rejected * 100 > a->requests) { /* more than 1 % */
        char why[512];
        runner_report_rejections(why, sizeof why, x->g, a);
        ss_warn("%" PRIu64 " of %" PRIu64 " requests (%.1f %%) were rejected: %s", a->rejected,
                a->requests, 100.0 * (double)a->rejected / (double)a->requests, why);
    }
    if (!rc && x->st) {
        char *json = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&json, &len);
        if (f) {
            runner_report rep = runner_run_report(x);
            runner_report_json(f, &rep, x->g, &x->m);
            fclose(f);
        }
        rc = runner_report_store(x->st, x->g, &x->m, x->wall_s, wl_source_digest(x->ws), json,
                                 &x->eb);
        free(json);
    } else if (x->st)
        store_run_abort(x->st);
    return rc;
}

void runner_run_fini(runner_run *x)
{
    if (x->own_store)
        store_close(&x->st);
    else if (x->st)
        store_run_abort(x->st); /* an unfinished run leaves nothing */
    x->st = NULL;
    gsim_destroy(&x->g);
    ss_free(x->keeper);
    x->keeper = NULL;
    wl_source_destroy(&x->ws);
    if (x->own_cat)
        catalog_destroy(&x->cat);
    x->cat = NULL;
    ss_free(x->run);
    ss_free(x->ini);
    x->run = NULL;
    x->ini = NULL;
}

static void scale_rates(scn_scenario *sc, double factor)
{
    for (uint32_t i = 0; i < sc->n_tenants; i++)
        sc->tenants[i].rate_scale *= factor;
}

/* One item of a synthetic spec stretched by factor into out (size n): duration and requests
 * grow, everything else is copied. 0, or -1 when it does not fit. */
static int stretch_item(const char *item, size_t len, double factor, char *out, size_t n)
{
    int w;
    if (len > 9 && !strncmp(item, "duration=", 9))
        w = snprintf(out, n, "duration=%.17g", strtod(item + 9, NULL) * factor);
    else if (len > 9 && !strncmp(item, "requests=", 9))
        w = snprintf(out, n, "requests=%.0f", ceil(strtod(item + 9, NULL) * factor));
    else
        w = snprintf(out, n, "%.*s", (int)len, item);
    return w >= 0 && (size_t)w < n ? 0 : -1;
}

/* Rewrite tenant t's synthetic spec with its duration and request count stretched by factor.
 * Malformed values are left for the scenario check to report: strtod reads what it can. */
static int stretch_synthetic(scn_tenant *t, double factor, ss_errbuf *eb)
{
    char out[SCN_TEXT_MAX], item[SCN_TEXT_MAX];
    size_t used = 0;
    for (const char *p = t->synthetic; *p;) {
        size_t n = strcspn(p, " \t");
        if (n) {
            if (stretch_item(p, n, factor, item, sizeof item))
                goto too_long;
            int w = snprintf(out + used, sizeof out - used, "%s%s", used ? " " : "", item);
            if (w < 0 || (size_t)w >= sizeof out - used)
                goto too_long;
            used += (size_t)w;
        }
        p += n + strspn(p + n, " \t");
    }
    memcpy(t->synthetic, out, used);
    t->synthetic[used] = '\0';
    return SS_OK;
too_long:
    return ss_err(eb, SS_EPARSE, "tenant %s: synthetic: the spec stretched to load %g is "
                  "longer than %d characters", t->name, factor, SCN_TEXT_MAX - 1);
}

int runner_scale_load(scn_scenario *sc, double factor, ss_errbuf *eb)
{
    scale_rates(sc, factor);
    for (uint32_t i = 0; i < sc->n_tenants; i++) {
        int rc = sc->tenants[i].synthetic[0] ? stretch_synthetic(&sc->tenants[i], factor, eb)
                                             : SS_OK;
        if (rc)
            return rc;
    }
    return SS_OK;
}

int runner_arrivals_of(const scn_scenario *sc, const runner_run_opts *o, int past_duration,
                       runner_arrivals *a, ss_errbuf *eb)
{
    runner_run x = {0};
    runner_run_opts ro = *o;
    ro.past_duration = past_duration;
    int rc = runner_run_setup(&x, sc, &ro);
    memset(a, 0, sc->n_tenants * sizeof *a);
    trace_rec rec;
    int got = 0;
    while (!rc && (got = wl_source_next(x.ws, &rec, &x.eb)) > 0) {
        if (rec.tenant >= sc->n_tenants)
            continue;
        runner_arrivals *t = &a[rec.tenant];
        t->tokens += (uint64_t)rec.prompt_tokens + rec.output_tokens;
        t->n_measured += rec.arrival_ns >= x.run->cfg.warmup; /* as gsim measures */
        t->last_s = ss_time_to_s(rec.arrival_ns);
        if (!t->n++)
            t->first_s = t->last_s;
    }
    if (!rc && got < 0)
        rc = got;
    if (rc)
        *eb = x.eb;
    runner_run_fini(&x);
    return rc;
}

const char *runner_criterion_name(runner_criterion c)
{
    return c == RUNNER_CRIT_POOLED ? "pooled" : c == RUNNER_CRIT_TENANT ? "tenant" : "worst";
}

int runner_stop_init(runner_stop *out, const scn_scenario *sc, const runner_run_opts *o,
                     runner_criterion c, uint32_t i_tenant, double above, ss_errbuf *eb)
{
    runner_arrivals a[SS_MAX_TENANTS];
    *out = (runner_stop){.criterion = c, .i_tenant = i_tenant, .above = above,
                         .n_tenants = sc->n_tenants};
    int rc = runner_arrivals_of(sc, o, 0, a, eb);
    for (uint32_t t = 0; !rc && t < sc->n_tenants; t++)
        out->n_measured[t] = a[t].n_measured;
    return rc;
}

double runner_run_misses_so_far(const runner_run *x, double *tenant_miss, double *pooled)
{
    const runner_stop *s = x->o->stop;
    uint64_t missed = 0, n = 0;
    double worst = 0;
    for (uint32_t t = 0; s && t < s->n_tenants; t++) {
        uint64_t mt = x->so_far.missed[t] + x->so_far.broken[t];
        tenant_miss[t] = s->n_measured[t] ? (double)mt / (double)s->n_measured[t] : 0;
        worst = tenant_miss[t] > worst ? tenant_miss[t] : worst;
        missed += mt;
        n += s->n_measured[t];
    }
    *pooled = n ? (double)missed / (double)n : 0;
    if (!s)
        return 0;
    return s->criterion == RUNNER_CRIT_POOLED ? *pooled
         : s->criterion == RUNNER_CRIT_TENANT ? tenant_miss[s->i_tenant] : worst;
}
