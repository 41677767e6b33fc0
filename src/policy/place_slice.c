/* SliceScheduler (placement policy "slice"): operator-level placement of backlogged
 * containers' prefills into the idle GPU time of other containers, chosen by what-if
 * simulation through the simulator's callbacks (pol_place_env).
 *
 * Every slice_period_ms, for each container with a queue (its waiting requests include a fresh
 * one: nothing computed, never preempted), the candidate request is the last fresh one in the
 * queue (the one that waits longest at home), and the candidate helpers are the other active
 * containers of the same TP degree without a pipeline, a guest or a queue of their own, nearest
 * first (same node), least loaded first. A candidate (request r, helper H) is judged by forking
 * the home container A and H, offloading r in the fork (env->offload) and simulating both to
 * slice_horizon_ms ahead, against baselines of A and of H simulated without the move:
 *  (a) memory: the offload mechanism refuses when a GPU of H lacks spare memory for the job's buffers or
 *      A lacks the KV blocks of r's prompt; the ledger then holds by construction;
 *  (b) SLA: no request of A or H (r included) may have broken, by the horizon, a bound that it
 *      keeps in the baselines (TTFT, TBT p99, E2E; env->sla_so_far), nor be preempted more
 *      often (r returns to A with its KV and may overcommit A's pool);
 *  (c) gain: r's first token comes at least slice_min_gain_ms earlier than at home (a home
 *      first token beyond the horizon counts as just after it).
 * (c) is judged before (b): a candidate fork stops, refused for gain, as soon as r's first
 * token can no longer come in time, and (b) reads the baselines' requests only for the
 * candidates that pass (c).
 * The feasible candidate with the largest gain is offloaded, with the fork's first-token time as
 * its prediction (the report compares it with what happens). At most slice_max_whatifs
 * candidates are judged per decision.
 *
 * Incremental: a baseline is a live fork of one container kept from one decision to the next
 * and only advanced to the new horizon, as long as nothing from outside has reached that
 * container since (env->epoch); a candidate refused for SLA or gain is not judged again
 * until A or H changes. Only candidate forks start afresh, from the decision's present. */
#include "policy/policy.h"

#include "core/ss_alloc.h"
#include "metrics/metrics.h"

#include <string.h>

static const char *const params[] = {"slice_period_ms", "slice_horizon_ms", "slice_max_whatifs",
                                     "slice_min_gain_ms", "slice_overrun_ms", "slice_weights",
                                     "slice_host_factor", "slice_whatif_ms", "slice_link_eff",
                                     "slice_interference", "slice_output_predictor",
                                     "slice_cost_error", NULL};

/* The fates of the requests that ended in a fork, by request slot, as its callback saw them
 * (the others are read from the fork's graph when asked: fate). */
typedef struct outcome {
    uint8_t *broken;      /* SLA bits broken when it ended; per slot */
    ss_time *first;       /* first-token time (-1: none); per slot */
    uint32_t *preempted;  /* preemptions; per slot */
    uint32_t *stamp;      /* gen when the slot's entries were written; per slot */
    uint32_t gen;         /* the fork's: entries with another stamp are not its */
    uint32_t n;           /* slots covered */
    uint32_t cap;         /* slots the arrays hold */
    uint8_t (*sla_so_far)(const gmg_req *q, ss_time now); /* the simulator's judge */
} outcome;

/* A live baseline of one container. */
typedef struct baseline {
    pol_whatif *fork;     /* NULL when none */
    uint64_t epoch;       /* of the container when forked */
    outcome out;          /* what its fork predicts; its fate callback's context */
    ss_time until;        /* simulated up to here */
} baseline;

/* A refused candidate, not judged again while both containers keep their epochs. */
typedef struct refusal {
    uint64_t trace_id;
    gmg_id helper;
    uint64_t epoch_home, epoch_helper;
} refusal;

typedef struct slice_sched {
    ss_time period, horizon, min_gain;
    pol_place_mechanism mech; /* how its moves run, and what each is charged */
    uint32_t max_whatifs;
    const pol_place_env *env; /* the simulator's, during a tick */
    void (*destroy)(pol_whatif **w); /* how to free the live baselines */
    baseline *base;       /* per container */
    uint32_t n_base;
    refusal *refused;     /* ring of recent refusals */
    uint32_t n_refused, next_refusal;
    outcome cand;         /* scratch for candidate forks */
    gmg_id *order;        /* scratch: containers */
    pol_place_stats *st;  /* the run's figures, during a tick */
} slice_sched;

enum { REFUSALS = 64 };

/* Default decision latency per what-if, ms: bench/bench_whatif's cost of one what-if in a
 * release build (docs/guide/slicescheduler.md, "What a move costs", gives the command). */
#define SLICE_WHATIF_MS 0.08

/* What its what-ifs know (docs/guide/slicescheduler.md, "What a what-if knows"): the output
 * lengths they give the requests in flight (slice_output_predictor, default mean) and the
 * error of their costs (slice_cost_error, default 0). */
static int whatif_knowledge(ss_params *p, pol_place_mechanism *m, ss_errbuf *eb)
{
    const char *pred = ss_params_get(p, "slice_output_predictor");
    m->predictor = (pol_predictor){POL_PRED_MEAN, 0};
    int rc = pred ? pol_predictor_parse(&m->predictor, pred, "slice: policy.slice_output_predictor",
                                        eb)
                  : SS_OK;
    if (!rc)
        rc = ss_params_get_double(p, "slice", "slice_cost_error", 0, -0.9, 0.99, &m->cost_error,
                                  eb);
    return rc;
}

static int init(void *priv, ss_params *p, ss_errbuf *eb)
{
    slice_sched *s = priv;
    double period_ms, horizon_ms, gain_ms, overrun_ms, whatif_ms;
    uint64_t whatifs;
    int rc = ss_params_get_double(p, "slice", "slice_period_ms", 20, 0.1, 1e7, &period_ms, eb);
    if (!rc)
        rc = ss_params_get_double(p, "slice", "slice_horizon_ms", 500, 1, 1e7, &horizon_ms, eb);
    if (!rc)
        rc = ss_params_get_u64(p, "slice", "slice_max_whatifs", 4, 1, 1000, &whatifs, eb);
    if (!rc)
        rc = ss_params_get_double(p, "slice", "slice_min_gain_ms", 5, 0, 1e7, &gain_ms, eb);
    if (!rc)
        rc = ss_params_get_double(p, "slice", "slice_overrun_ms", POL_PLACE_OVERRUN_MS, 0, 1e5,
                                  &overrun_ms, eb);
    /* The costs of a move (docs/guide/slicescheduler.md, "What a move costs"): defaults and
     * their sources there. */
    if (!rc)
        rc = ss_params_get_double(p, "slice", "slice_whatif_ms", SLICE_WHATIF_MS, 0, 1e4,
                                  &whatif_ms, eb);
    if (!rc)
        rc = pol_place_move_costs(p, "slice", &s->mech, eb);
    if (!rc)
        rc = whatif_knowledge(p, &s->mech, eb);
    if (rc)
        return rc;
    const char *weights = ss_params_get(p, "slice_weights");
    if (!weights || !strcmp(weights, "auto"))
        s->mech.weights = POL_WEIGHTS_AUTO;
    else if (!strcmp(weights, "stream"))
        s->mech.weights = POL_WEIGHTS_STREAM;
    else if (!strcmp(weights, "stage"))
        s->mech.weights = POL_WEIGHTS_STAGE;
    else
        return ss_err(eb, SS_EINVAL, "slice_weights: expected auto, stream or stage, got '%s'",
                      weights);
    if (!(s->refused = ss_calloc(REFUSALS, sizeof *s->refused)))
        return ss_err(eb, SS_ENOMEM, "slice scheduler: out of memory");
    s->period = (ss_time)(period_ms * SS_NS_PER_MS);
    s->horizon = (ss_time)(horizon_ms * SS_NS_PER_MS);
    s->min_gain = (ss_time)(gain_ms * SS_NS_PER_MS);
    s->max_whatifs = (uint32_t)whatifs;
    s->mech.guest_overrun = (ss_time)(overrun_ms * SS_NS_PER_MS);
    s->mech.whatif_ns = (ss_time)(whatif_ms * SS_NS_PER_MS);
    return SS_OK;
}

static void outcome_free(outcome *o)
{
    ss_free(o->broken);
    ss_free(o->first);
    ss_free(o->preempted);
    ss_free(o->stamp);
    memset(o, 0, sizeof *o);
}

/* Drop b's fork; its outcome's arrays stay for the next one (outcome_size starts them anew). */
static void base_drop(slice_sched *s, baseline *b)
{
    if (b->fork)
        s->destroy(&b->fork);
    b->out.n = 0;
    b->until = 0;
}

static void fini(void *priv)
{
    slice_sched *s = priv;
    for (uint32_t i = 0; i < s->n_base; i++) {
        base_drop(s, &s->base[i]);
        outcome_free(&s->base[i].out);
    }
    ss_free(s->base);
    ss_free(s->refused);
    outcome_free(&s->cand);
    ss_free(s->order);
}

static ss_time period(const void *priv) { return ((const slice_sched *)priv)->period; }

static void mechanism(const void *priv, pol_place_mechanism *out)
{
    *out = ((const slice_sched *)priv)->mech;
}

/* ---- forks and their outcomes ------------------------------------------------------------ */

/* Room for n slots, for a new fork: no entry is its yet (a new generation, so that nothing
 * is cleared). A what-if makes no new requests, so the slots in use when it is forked
 * (n_slots, not the array's capacity) are all it can report on. */
static int outcome_size(outcome *o, uint32_t n)
{
    if (o->cap < n) {
        outcome_free(o);
        if (!(o->broken = ss_calloc(n, 1)) || !(o->first = ss_calloc(n, sizeof *o->first)) ||
            !(o->preempted = ss_calloc(n, sizeof *o->preempted)) ||
            !(o->stamp = ss_calloc(n, sizeof *o->stamp)))
            return SS_ENOMEM;
        o->cap = n;
    }
    o->n = n;
    if (++o->gen == 0) { /* wrapped: every stamp could be taken for the new generation's */
        memset(o->stamp, 0, o->cap * sizeof *o->stamp);
        o->gen = 1;
    }
    return SS_OK;
}

/* A request's fate when it finishes or is rejected in a what-if (ud: the outcome being filled). */
static void on_fork_request(void *ud, const gmg *g, const gmg_req *q, int rejected, ss_time now)
{
    outcome *o = ud;
    uint32_t slot = (uint32_t)(q - g->reqs);
    if (slot >= o->n)
        return;
    o->broken[slot] = o->sla_so_far(q, now) | (rejected ? METRICS_SLA_REJECTED : 0);
    o->first[slot] = q->first_token;
    o->preempted[slot] = q->preemptions;
    o->stamp[slot] = o->gen;
}

static int in_flight(const gmg_req *q)
{
    return q->state != GMG_REQ_FREE && q->state != GMG_REQ_DONE && q->state != GMG_REQ_REJECTED;
}

/* Request slot i's fate in the fork whose outcome is o and graph w, simulated to `until`: as
 * its callback saw it if it ended there, as it stands if it is still in flight, and none (no
 * bound broken, no first token, no preemption) if the fork never held it. Read only when
 * asked: most candidates are settled without the baselines' other requests. */
static void fate(const outcome *o, const gmg *w, uint32_t i, ss_time until, uint8_t *broken,
                 ss_time *first, uint32_t *preempted)
{
    const gmg_req *q = &w->reqs[i];
    if (in_flight(q)) {
        *broken = o->sla_so_far(q, until);
        *first = q->first_token;
        *preempted = q->preemptions;
    } else if (o->stamp[i] == o->gen) {
        *broken = o->broken[i];
        *first = o->first[i];
        *preempted = o->preempted[i];
    } else {
        *broken = 0, *first = -1, *preempted = 0;
    }
}

/* Request slot r's first-token time in that fork so far (-1: none), as fate gives it; w may
 * be the fork's graph as it stands (env->peek). */
static ss_time fate_first(const outcome *o, const gmg *w, uint32_t r)
{
    if (in_flight(&w->reqs[r]))
        return w->reqs[r].first_token;
    return o->stamp[r] == o->gen ? o->first[r] : -1;
}

/* Bring the baseline of container c up to `until` (a fork of it taken by base_get). */
static int base_advance(slice_sched *s, gmg_id c, ss_time until, ss_errbuf *eb)
{
    baseline *b = &s->base[c];
    if (b->until >= until)
        return SS_OK;
    int rc = s->env->advance(b->fork, until, eb);
    if (rc) {
        base_drop(s, b);
        return rc;
    }
    b->until = until;
    return SS_OK;
}

/* The baseline of container c: the live fork when c has not changed since it was taken, else
 * a fork afresh; brought up to `until` now if `now`, else when a candidate's judge needs it
 * (a fork is a copy of the present, taken this tick either way; simulating it in two steps or
 * one comes to the same, so what is never read is never simulated). */
static int base_get(slice_sched *s, const gmg *g, gmg_id c, ss_time until, int now,
                    ss_errbuf *eb)
{
    const pol_place_env *env = s->env;
    baseline *b = &s->base[c];
    uint64_t epoch = env->epoch(env->sim, c);
    if (b->fork && b->epoch != epoch)
        base_drop(s, b);
    if (!b->fork) {
        int rc = outcome_size(&b->out, g->n_slots);
        b->out.sla_so_far = env->sla_so_far;
        if (!rc) /* the callback's context lives as long as the fork: in the baseline itself */
            rc = env->fork(env->sim, &c, 1, on_fork_request, &b->out, &b->fork, eb);
        if (rc) {
            base_drop(s, b);
            return rc;
        }
        b->epoch = epoch;
        b->until = 0;
        s->st->whatifs++;
    }
    return now ? base_advance(s, c, until, eb) : SS_OK;
}

/* ---- candidates ------------------------------------------------------------------------- */

static int servable(const gmg_container *c)
{
    return c->status == GMG_CTR_ACTIVE && c->pp == 1 && !c->migrating_out &&
           !c->blocks_reserved;
}

static int refused_before(const slice_sched *s, uint64_t id, gmg_id home, gmg_id helper)
{
    const pol_place_env *env = s->env;
    for (uint32_t i = 0; i < s->n_refused; i++) {
        const refusal *x = &s->refused[i];
        if (x->trace_id == id && x->helper == helper &&
            x->epoch_home == env->epoch(env->sim, home) &&
            x->epoch_helper == env->epoch(env->sim, helper))
            return 1;
    }
    return 0;
}

static void remember_refusal(slice_sched *s, uint64_t id, gmg_id home, gmg_id helper)
{
    const pol_place_env *env = s->env;
    s->refused[s->next_refusal] = (refusal){id, helper, env->epoch(env->sim, home),
                                            env->epoch(env->sim, helper)};
    s->next_refusal = (s->next_refusal + 1) % REFUSALS;
    if (s->n_refused < REFUSALS)
        s->n_refused++;
}

/* Whether any request of containers a or h of g breaks in the candidate a bound it keeps in
 * the baselines, or is preempted more often (the work lost to a recomputation, and the home
 * container overcommitted by the returning request, count as harm too). Those requests are
 * among the ones the candidate's fork (graph w) holds: only its roster is looked at. */
static int harms(const slice_sched *s, const gmg *g, const gmg *w, gmg_id a, gmg_id h,
                 ss_time until)
{
    uint32_t n;
    const gmg_id *roster = gmg_req_roster(w, &n);
    const gmg *ga = s->env->graph(s->base[a].fork), *gh = s->env->graph(s->base[h].fork);
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = roster ? roster[k] : k;
        if (i >= g->n_slots || i >= s->cand.n)
            break; /* the roster ascends */
        const gmg_req *q = &g->reqs[i];
        if (q->state == GMG_REQ_FREE || q->state == GMG_REQ_DONE ||
            q->state == GMG_REQ_REJECTED || (q->container != a && q->container != h))
            continue;
        const baseline *b = &s->base[q->container];
        if (i >= b->out.n) /* not in the baseline: cannot happen (its arrival changed the epoch) */
            return 1;
        uint8_t cb, bb;
        ss_time cf, bf;
        uint32_t cp, bp;
        fate(&s->cand, w, i, until, &cb, &cf, &cp);
        fate(&b->out, q->container == a ? ga : gh, i, until, &bb, &bf, &bp);
        if ((cb & ~bb) || cp > bp)
            return 1;
    }
    return 0;
}

typedef enum verdict { V_OK, V_MEMORY, V_SLA, V_GAIN } verdict;

/* Judge offloading request r of container a to helper h; *first gets its predicted first
 * token. */
static int judge(slice_sched *s, const gmg *g, gmg_id a, gmg_id r, gmg_id h, ss_time until,
                 ss_time home_first, verdict *v, ss_time *first, ss_errbuf *eb)
{
    const pol_place_env *env = s->env;
    ss_errbuf why;
    if (env->offload_check(env->sim, r, h, &why)) { /* memory: the helper's or home's */
        *v = V_MEMORY;
        return SS_OK;
    }
    gmg_id both[2] = {a, h};
    pol_whatif *w = NULL;
    int rc = outcome_size(&s->cand, g->n_slots);
    s->cand.sla_so_far = env->sla_so_far;
    if (!rc)
        rc = env->fork(env->sim, both, 2, on_fork_request, &s->cand, &w, eb);
    if (rc) {
        if (w)
            env->destroy(&w);
        return rc;
    }
    s->st->whatifs++;
    s->st->candidates++;
    rc = env->offload(w, r, h, eb);
    /* (c) before (b): r's first token must come by `due`, so a fork in which it has not come
     * by then is refused for gain there, without simulating the rest of the horizon. */
    ss_time due = home_first - s->min_gain;
    int gainless = 0;
    if (!rc && due < until) {
        if (due >= env->now) /* (else r, fresh in the queue, cannot make it) */
            rc = env->advance(w, due, eb);
        ss_time f = rc ? -1 : fate_first(&s->cand, env->peek(w), r);
        gainless = f < 0 || f > due;
    }
    if (!rc && !gainless)
        rc = env->advance(w, until, eb);
    int harmful = 0;
    if (!rc && !gainless)
        rc = base_advance(s, h, until, eb); /* a's is there: home_first came from it */
    if (!rc && !gainless) {
        *first = fate_first(&s->cand, env->peek(w), r);
        harmful = harms(s, g, env->graph(w), a, h, until);
    }
    env->destroy(&w);
    if (rc)
        return rc;
    if (gainless || *first < 0 || home_first - *first < s->min_gain)
        *v = V_GAIN;
    else if (harmful)
        *v = V_SLA;
    else
        *v = V_OK;
    return SS_OK;
}

/* Helpers for container a, nearest and least loaded first, into order[]; returns the count. */
static uint32_t helpers(const slice_sched *s, const gmg *g, const gmg_container *a,
                        gmg_id *order)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < g->n_ctrs; i++) {
        const gmg_container *h = &g->ctrs[i];
        if (h->id == a->id || !servable(h) || h->tp != a->tp || s->env->has_guest(s->env->sim, h->id) ||
            h->waiting.n)
            continue;
        order[n++] = h->id;
    }
    const uint32_t node = g->gpus[a->gpu0].node;
    for (uint32_t i = 1; i < n; i++) /* insertion sort: few containers */
        for (uint32_t j = i; j > 0; j--) {
            const gmg_container *x = &g->ctrs[order[j - 1]], *y = &g->ctrs[order[j]];
            int xf = g->gpus[x->gpu0].node != node, yf = g->gpus[y->gpu0].node != node;
            uint32_t xl = x->running.n + x->swapped.n, yl = y->running.n + y->swapped.n;
            if (xf < yf || (xf == yf && (xl < yl || (xl == yl && x->id < y->id))))
                break;
            gmg_id t = order[j - 1];
            order[j - 1] = order[j];
            order[j] = t;
        }
    return n;
}

static int tick(void *priv, const pol_place_env *env, const gmg *G, pol_place_decision *out,
                pol_place_stats *st, ss_errbuf *eb)
{
    slice_sched *s = priv;
    s->env = env;
    s->st = st;
    s->destroy = env->destroy;
    if (!s->base) { /* the containers are fixed when the run starts: sized at the first tick */
        size_t n = G->n_ctrs ? G->n_ctrs : 1;
        s->base = ss_calloc(n, sizeof *s->base);
        s->order = ss_calloc(n, sizeof *s->order);
        if (!s->base || !s->order) {
            ss_free(s->base);
            ss_free(s->order);
            s->base = NULL, s->order = NULL;
            return ss_err(eb, SS_ENOMEM, "slice scheduler: out of memory");
        }
        s->n_base = G->n_ctrs;
    }
    if (SS_NEVER(G->n_ctrs != s->n_base))
        return ss_err(eb, SS_EINVAL, "slice scheduler: the cluster has %u containers, not %u",
                      G->n_ctrs, s->n_base);
    ss_time until = ss_time_add(env->now, s->horizon);
    uint32_t budget = s->max_whatifs;
    gmg_id best_r = GMG_NONE, best_h = GMG_NONE;
    ss_time best_gain = 0, best_first = 0;
    int counted = 0;
    for (uint32_t ai = 0; ai < G->n_ctrs && budget; ai++) {
        const gmg_container *a = &G->ctrs[ai];
        gmg_id r = servable(a) ? pol_fresh_tail(G, a) : GMG_NONE;
        if (r == GMG_NONE || !env->offload_allowed(env->sim, r))
            continue;
        uint32_t nh = helpers(s, G, a, s->order);
        if (!nh)
            continue;
        uint64_t id = G->reqs[r].trace_id;
        int rc = SS_OK, have_base = 0;
        for (uint32_t k = 0; k < nh && budget && !rc; k++) {
            gmg_id h = s->order[k];
            if (refused_before(s, id, a->id, h))
                continue;
            if (!counted) {
                st->ticks++;
                counted = 1;
            }
            if (!have_base) {
                rc = base_get(s, G, a->id, until, 1, eb);
                have_base = 1;
            }
            if (!rc)
                rc = base_get(s, G, h, until, 0, eb);
            if (rc)
                return rc;
            const baseline *home = &s->base[a->id];
            ss_time home_first = fate_first(&home->out, env->peek(home->fork), r);
            if (home_first < 0)
                home_first = until + 1;
            verdict v;
            ss_time first = -1;
            rc = judge(s, G, a->id, r, h, until, home_first, &v, &first, eb);
            if (rc)
                return rc;
            budget--;
            if (v == V_MEMORY) {
                st->refused_memory++;
            } else if (v == V_SLA || v == V_GAIN) {
                st->refused_sla += v == V_SLA;
                st->refused_gain += v == V_GAIN;
                remember_refusal(s, id, a->id, h);
            } else if (home_first - first > best_gain) {
                best_gain = home_first - first;
                best_r = r, best_h = h, best_first = first;
            }
        }
    }
    if (best_r == GMG_NONE || !out->cap_offload)
        return SS_OK;
    out->offload[out->n_offload++] = (pol_offload){best_r, best_h, best_first};
    st->chosen++;
    return SS_OK;
}

const pol_place_ops pol_place_slice = {
    .abi_version = POL_ABI_VERSION,
    .name = "slice",
    .summary = "SliceScheduler: prefills of backlogged containers into other containers' idle "
               "GPU time, chosen by what-if simulation",
    .params = params,
    .priv_size = sizeof(slice_sched),
    .init = init,
    .fini = fini,
    .period = period,
    .tick = tick,
    .mechanism = mechanism,
};
