/* The placement policy (pol_place_ops): its ticks, the what-if callbacks it asks questions
 * through (pol_place_env: forks of some containers, advanced and offloaded in, judged by the
 * metrics' SLA judge), and its decisions, validated and carried out by the offload mechanism.
 * A decision the mechanism refuses is the policy's malfunction: it stops the run. */
#include "gsim/gsim_int.h"

#include "core/ss_alloc.h"

/* ---- what the policy may ask ------------------------------------------------------------- */

/* What-ifs the placement policy has run in the tick under way. */
static uint64_t tick_whatifs(const gsim *s)
{
    return pol_place_get_stats(s->place)->whatifs - s->tick_whatifs0;
}

static int env_offload_check(const void *sim, gmg_id r, gmg_id helper, ss_errbuf *eb)
{
    return gsim_offload_check(sim, r, helper, eb);
}

static int env_offload_allowed(const void *sim, gmg_id r) { return gsim_offload_allowed(sim, r); }
static int env_has_guest(const void *sim, gmg_id c) { return gsim_has_guest(sim, c); }
static uint64_t env_epoch(const void *sim, gmg_id c) { return gsim_ctr_epoch(sim, c); }

static int env_fork(const void *sim, const gmg_id *ctrs, uint32_t n, pol_whatif_done_fn *done,
                    void *ud, pol_whatif **out, ss_errbuf *eb)
{
    gsim *f = NULL;
    int rc = gsim_fork(sim, ctrs, n, NULL, NULL, &f, eb);
    if (rc)
        return rc;
    f->whatif_done = done;
    f->whatif_ud = ud;
    f->keep_cohorts = 1; /* from one advance to the next, until env_graph is asked */
    /* an offload in this fork (a candidate's) starts after the decision latency of the what-ifs
     * the tick has run so far, this one included: the decision's own, if it is chosen and is
     * the tick's last what-if (docs/guide/slicescheduler.md, "What a move costs") */
    const gsim *s = sim;
    f->move_delay = s->cfg.whatif_ns * (ss_time)(tick_whatifs(s) + 1);
    *out = (pol_whatif *)f;
    return SS_OK;
}

static int env_offload(pol_whatif *w, gmg_id r, gmg_id helper, ss_errbuf *eb)
{
    return gsim_offload((gsim *)w, r, helper, 0, eb);
}

static int env_advance(pol_whatif *w, ss_time until, ss_errbuf *eb)
{
    return gsim_advance((gsim *)w, until, eb);
}

/* The fork's graph with every request up to date: its decode cohorts dissolve (they form
 * again at its next step), so that their members' counts, gaps and blocks are current. */
static const gmg *env_graph(pol_whatif *w)
{
    gsim *f = (gsim *)w;
    gs_coh_dissolve_all(f);
    return gsim_graph(f);
}

/* The same without bringing cohort members up to date: their states and first tokens are
 * current (a member is running and has made its first token), not their other counts. */
static const gmg *env_peek(const pol_whatif *w) { return gsim_graph((const gsim *)w); }

static void env_destroy(pol_whatif **w)
{
    gsim *f = (gsim *)*w;
    gsim_destroy(&f);
    *w = NULL;
}

/* ---- ticks -------------------------------------------------------------------------------- */

int gs_place_create(gsim *s, ss_errbuf *eb)
{
    int rc = pol_place_create(&s->place, s->cfg.ops ? s->cfg.ops : "home", s->cfg.params, eb);
    if (rc)
        return rc;
    pol_place_mechanism m;
    if (pol_place_mechanism_of(s->place, &m)) {
        s->cfg.guest_overrun = m.guest_overrun;
        s->cfg.guest_weights = m.weights;
        s->cfg.guest_host_factor = m.host_factor;
        s->cfg.whatif_ns = m.whatif_ns;
        s->cfg.guest_link_eff = m.link_eff;
        s->cfg.guest_interference = m.interference;
        s->cfg.whatif_pred = m.predictor;
        s->cfg.whatif_cost_error = m.cost_error;
    }
    s->max_overrun = s->cfg.guest_overrun;
    if (pol_place_period(s->place) > 0) {
        s->pd.cap_offload = 64;
        if (!(s->pd.offload = ss_calloc(s->pd.cap_offload, sizeof *s->pd.offload)))
            return ss_err(eb, SS_ENOMEM, "placement policy: out of memory");
    }
    return SS_OK;
}

void gs_place_destroy(gsim *s)
{
    pol_place_destroy(&s->place); /* its what-if forks borrow from this simulation */
    ss_free(s->pd.offload);
    s->pd.offload = NULL;
}

/* Carry out the policy's decisions. The policy decided on the present state and the mechanism
 * accepts exactly what gsim_offload_check does, so a refusal is the policy's malfunction. */
static int apply_place(gsim *s)
{
    const pol_place_decision *d = &s->pd;
    int rc = SS_OK;
    s->move_delay = s->cfg.whatif_ns * (ss_time)tick_whatifs(s); /* decision latency */
    for (uint32_t i = 0; i < d->n_offload && !rc; i++) {
        const pol_offload *o = &d->offload[i];
        ss_errbuf why;
        rc = gsim_offload(s, o->req, o->helper, o->predicted, &why);
        if (rc == SS_ENOMEM)
            rc = ss_err(s->eb, rc, "%s", why.msg);
        else if (rc)
            rc = ss_err(s->eb, SS_EINVAL, "placement policy '%s' malfunction: decision %u of "
                        "%u at %.9g s: %s", pol_place_name(s->place), i + 1, d->n_offload,
                        ss_time_to_s(des_now(s->des)), why.msg);
    }
    s->move_delay = 0;
    return rc;
}

void gs_on_place_tick(des_engine *e, des_event *ev, void *ctx)
{
    (void)ev;
    gsim *s = ctx;
    pol_place_env env = {
        .sim = s, .now = des_now(e), .offload_check = env_offload_check,
        .offload_allowed = env_offload_allowed, .has_guest = env_has_guest, .epoch = env_epoch,
        .sla_so_far = gsim_req_sla_so_far, .fork = env_fork, .offload = env_offload,
        .advance = env_advance, .graph = env_graph, .peek = env_peek, .destroy = env_destroy,
    };
    s->tick_whatifs0 = pol_place_get_stats(s->place)->whatifs;
    int rc = pol_place_tick(s->place, &env, s->g, &s->pd, s->eb);
    if (!rc && s->pd.n_offload > s->pd.cap_offload)
        rc = ss_err(s->eb, SS_EINVAL, "placement policy '%s' malfunction: %u decisions for %u "
                    "places", pol_place_name(s->place), s->pd.n_offload, s->pd.cap_offload);
    if (!rc)
        rc = apply_place(s);
    if (rc)
        gs_fail(s, rc);
    else if (s->have_next || s->g->in_flight)
        gs_sched(s, e, ss_time_add(des_now(e), pol_place_period(s->place)), EV_PLACE_TICK, 0);
}

/* The first tick, when the policy ticks and requests will come. */
int gs_place_start(gsim *s)
{
    ss_time period = s->place ? pol_place_period(s->place) : 0;
    if (period > 0 && s->have_next)
        gs_sched(s, s->des, period, EV_PLACE_TICK, 0); /* a failure sets s->rc */
    return s->rc;
}

const slice_stats *gsim_slice_stats(const gsim *s)
{
    return s->place && pol_place_period(s->place) > 0 ? pol_place_get_stats(s->place) : NULL;
}

void gsim_whatif_knowledge(const gsim *s, pol_predictor *pred_out, double *cost_error_out)
{
    *pred_out = s->cfg.whatif_pred;
    *cost_error_out = s->cfg.whatif_cost_error;
}

const ss_hist *gsim_finished_lengths(const gsim *s, uint32_t t)
{
    return t < s->n_ten ? &s->ten[t].out_lens : NULL;
}

const char *gsim_placement_name(const gsim *s)
{
    return s->place ? pol_place_name(s->place) : "home";
}
