/* Arrivals (created, routed and queued) and iterations: timing a decided batch through the
 * replica's pipeline stages, the GPUs' busy and idle slices, and the iteration's completion. */
#include "gsim/gsim_int.h"

#include "core/ss_alloc.h"
#include "core/ss_log.h"

#include <math.h>
#include <string.h>

/* GPU u idles from its last compute phase until `until`: record that slice, if any, with the
 * memory free now, and how much of it (in the window) lies in the latest host phase. */
void gs_idle_until(gsim *s, gmg_id gpu, ss_time until)
{
    gsim_gpu_stats *u = &s->gst[gpu];
    if (until <= u->dev_free)
        return;
    ss_time len = metrics_slices_add(s->gsl ? &s->gsl[gpu] : &s->m.slices, s->m.measure_from,
                                     u->dev_free, until, gmg_gpu_free_bytes(&s->g->gpus[gpu]));
    u->idle_slices += len > 0;
    u->idle_ns += len;
    ss_time a = until - len > u->host_from ? until - len : u->host_from;
    ss_time b = until < u->host_to ? until : u->host_to;
    if (len > 0 && b > a)
        u->host_ns += b - a;
}

/* The GPUs of stage st of c run an iteration's stage of `dur` (host phase included), computing
 * over [from, to). */
static void compute_phase(gsim *s, const gmg_container *c, uint32_t st, ss_time dur, ss_time from,
                          ss_time to)
{
    for (uint32_t k = 0; k < c->tp; k++) {
        gmg_id gpu = gmg_stage_gpu(c, st) + k;
        gsim_gpu_stats *u = &s->gst[gpu];
        u->busy_ns += dur;
        u->iterations++;
        gs_idle_until(s, gpu, from);
        u->dev_busy_ns += to - from;
        if (to > u->dev_free)
            u->dev_free = to;
    }
}

/* A cost in a fork, off by the what-ifs' cost error. */
static ss_time fork_cost(const gsim *s, ss_time ns)
{
    return (ss_time)llround((double)ns * (1 + s->cfg.whatif_cost_error));
}

/* A fork's split off by the what-ifs' cost error (gs_cost_split). */
static void fork_split(const gsim *s, cost_split *out)
{
    if (!s->fork || s->cfg.whatif_cost_error == 0)
        return;
    /* the compute a step takes and the host time in it; the transfers (swaps, activations
     * sent between pipeline stages) are the links', not the cost model's */
    out->layer_ns = fork_cost(s, out->layer_ns);
    out->head_ns = fork_cost(s, out->head_ns);
    out->host_ns = fork_cost(s, out->host_ns);
    out->tail_ns = fork_cost(s, out->tail_ns);
}

void gs_cost_split(const gsim *s, cost_model *cm, const cost_batch *b, cost_split *out)
{
    cost_iteration_split(cm, b, out);
    fork_split(s, out);
}

/* The host-link phase that opens the first stage's device work at `at`: the wait for the copies
 * out of the blocks c's prefix cache offloaded to the KV pool (charged when they were evicted,
 * gs_kvp_charge; the forward pass may write into those blocks), then the iteration's KV swaps,
 * queued behind what holds c's GPUs' host links (loads, copies out). Its length from `at`: the
 * swaps' time alone when the links are free and nothing is being copied out, 0 with neither. */
static ss_time host_phase(gsim *s, gmg_container *c, ss_time at)
{
    ss_time swap = gs_swap_time(s, c), until = at;
    if (s->cs[c->id].offload_until > until)
        until = s->cs[c->id].offload_until;
    if (swap) {
        ss_time end = ss_time_add(gs_host_free(s, c, at), swap);
        gs_host_book(s, c, end);
        if (end > until)
            until = end;
    }
    return until - at;
}

/* Time the decided batch through the replica's pipeline: each stage runs its layers (the first
 * also swaps and the head, the last the tail, the others end by sending the activations) as
 * soon as the previous stage is done and the stage is free of earlier micro-batches. With one
 * stage this is the whole iteration, starting now. */
static int schedule_stages(gsim *s, gmg_container *c, ss_time now)
{
    gmg_replica *rep = &s->g->replicas[c->replica];
    cost_split sp;
    gs_cost_split(s, c->cost, &c->iter.batch, &sp);
    ss_time t = now;
    for (uint32_t st = 0; st < c->pp; st++) {
        ss_time d = sp.layer_ns * (ss_time)cost_stage_layers(c->model, c->pp, st);
        if (st == 0)
            d += sp.head_ns; /* and the host-link phase, below */
        if (st + 1 == c->pp)
            d += sp.tail_ns;
        else
            d += gmg_stage_send_ns(s->g, c, st, NULL);
        ss_time begin = t > rep->stage_free[st] ? t : rep->stage_free[st];
        /* the host phase (scheduling, input preparation, sampling) opens the first stage; guest
         * chunks may fill it, and its compute waits for the last of them */
        ss_time host = st == 0 ? sp.host_ns : 0, dev = ss_time_add(begin, host), wait = 0;
        if (st == 0) {
            for (uint32_t k = 0; k < c->tp; k++) {
                s->gst[gmg_stage_gpu(c, 0) + k].host_from = begin;
                s->gst[gmg_stage_gpu(c, 0) + k].host_to = dev;
            }
            const ctr_state *cs = &s->cs[c->id]; /* most iterations have no guest to place */
            ss_time free_at = cs->guest == GMG_NONE ? cs->guest_until
                                                    : gs_guest_fill(s, c, begin, dev);
            if (free_at > dev)
                wait = free_at - dev;
            c->iter.wait_ns = wait;
            gs_stretch_close(s, c, ss_time_add(dev, wait)); /* its own compute starts */
            c->iter.swap_ns = host_phase(s, c, ss_time_add(dev, wait));
            d = ss_time_add(d, c->iter.swap_ns);
        }
        ss_time end = ss_time_add(ss_time_add(begin, wait), d);
        if (end == SS_TIME_MAX) /* nothing is accounted */
            return gs_past_range(s, s->des);
        if (st == 0)
            s->cs[c->id].own_end = end;
        c->iter.stage_start[st] = begin;
        c->iter.stage_end[st] = end;
        rep->stage_free[st] = end;
        compute_phase(s, c, st, d, dev + wait, end);
        t = end;
    }
    c->iter.start = c->iter.stage_start[0];
    c->iter.end = t;
    return SS_OK;
}

static void steady_look(gsim *s, gmg_container *c);

/* Decide c's next batch and time it from `now` (the simulated time: the event's, or in a
 * steady run the end of the step before); 1 when an iteration started (c->busy, c->iter timed,
 * its EV_ITER_DONE not yet scheduled), 0 when there is nothing to run or the run failed. */
static int begin_iteration(gsim *s, gmg_container *c, ss_time now)
{
    if (s->cs[c->id].staged) /* only staged guest weights can be evicted */
        gs_maybe_evict(s, c);
    memset(&c->iter.batch, 0, sizeof c->iter.batch);
    c->iter.n_reqs = 0;
    c->iter.swap_blocks = 0;
    int run = gs_decide_batch(s, c);
    gs_kvp_charge(s, c); /* the copies out of what the batch's blocks evicted start now */
    if (!run)
        return 0;
    c->iter.swap_ns = 0; /* the host-link phase: schedule_stages */
    c->busy = 1;
    c->iter.seq++;
    if (s->cs[c->id].steady_iter)
        steady_look(s, c);
    else
        s->cs[c->id].look_ok = 0;
    return !schedule_stages(s, c, now);
}

/* The iteration c->iter of c has begun: tell the observer, and schedule its end. */
static void iteration_event(gsim *s, gmg_container *c)
{
    int dyn = gs_share_dyn(s, c);
    if (s->obs.on_iter && !dyn) /* a shared step's: when its end is known (gs_share_end) */
        s->obs.on_iter(s->obs.ud, s->g, c);
    des_event *ev = gs_sched(s, s->des, c->iter.end, EV_ITER_DONE, c->id);
    if (ev && dyn)
        gs_share_begin(s, c, ev);
}

/* c may be idle with requests waiting: the next arrival tries to start it (gsim.starts). */
static void mark_start(gsim *s, const gmg_container *c)
{
    ctr_state *cs = &s->cs[c->id];
    if (s->starts && !cs->start_mark) {
        cs->start_mark = 1;
        s->starts[s->n_starts++] = c->id;
    }
}

void gs_start_iteration(gsim *s, gmg_container *c)
{
    if (begin_iteration(s, c, des_now(s->des)))
        iteration_event(s, c);
    else if (c->waiting.n)
        mark_start(s, c);
}

/* ---- iteration completion --------------------------------------------------------------- */

/* Advance q by the tokens it computed this iteration; returns 1 if that emitted a token. */
static int advance(gsim *s, gmg_container *c, gmg_req *q, ss_time now)
{
    ss_time gap;
    if (!gmg_req_progress(q, now, &gap))
        return 0; /* a prefill chunk: no token yet */
    if (c->pc && !q->pc_registered && q->state == GMG_REQ_RUNNING) { /* c: q's container */
        gs_ceiling_register(s, c, q); /* what the cache learns, the ceiling learns */
        gmg_pc_register(s->g, c, q);
    }
    if (gap >= 0 && q->measured && !s->fork)
        metrics_add_gap(&s->m, q->tenant, q->tier, gap);
    q->win_tokens += gs_in_arrival_window(s, now);
    return 1;
}

/* c's iteration ends at `now`: each request of its batch advances by the tokens it computed
 * (a token out, a finish, a hand-off, a migration's last stage), and the container is idle. */
static void end_iteration(gsim *s, gmg_container *c, ss_time now)
{
    /* steady: every request of the batch goes on decoding (need: the new KV blocks they take) */
    int steady = c->role != GMG_ROLE_PREFILL, cohort = gs_coh_on(s, c);
    uint32_t need = 0, n = c->iter.n_reqs;
    if (cohort) { /* its members' step: the cohort's; the others' (the batch's list) below */
        gs_coh_step_end(s, c, now);
        steady = 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        gmg_id r = c->iter.reqs[i];
        gmg_req *q = gmg_req_at(s->g, r);
        int token = advance(s, c, q, now);
        if (token)
            gs_pred_token(s, q); /* a request that goes on may have outlived its prediction */
        if (token && q->generated >= q->output) {
            gs_finish(s, c, r);
            steady = 0;
        } else if (token && c->role == GMG_ROLE_PREFILL) /* its KV goes to a decode instance */
            gs_disagg_handoff(s, c, r);
        else if (q->mig != GMG_NONE && gs_mig_at(s, q->mig)->want_final) {
            gs_mig_begin_final(s, q->mig);
            steady = 0;
        } else {
            steady &= token && q->state == GMG_REQ_RUNNING;
            need += !gmg_blocks_hold(c, q->blocks, (uint64_t)q->prompt + q->generated);
        }
    }
    if (steady && c->running.n == n)
        s->cs[c->id].steady_need = need + 1;
    if (cohort && gs_coh_on(s, c)) /* those that now decode join */
        gs_coh_joined(s, c, c->iter.reqs, n);
    c->iter.n_reqs = 0;
    c->busy = 0;
    c->iterations++;
    s->iterations++;
    c->prev_step_ns = c->iter.end - c->iter.start;
}

/* Steady runs. While nothing else can see a container (no event that reads other containers
 * is pending but arrivals, and the next arrival comes after), its steady steps (every running
 * request decodes; pol_batch_ops.steady) need no event each: the handler of the step before
 * ends each at its own time and begins the next, as their own events would have, until one
 * ends at or after the next arrival (or the horizon of gsim_advance), finishes a request, or
 * is followed by a step the policy must decide. Only the order of equal-time events of
 * different containers, which change nothing of each other, can differ from one event a
 * step; each GPU keeps its own idle-slice sums (gsim.gsl) so that those do not depend on it. */

/* Whether nothing but c's own steps can happen to c until its current step ends: no observer,
 * no invariant check after every event, a co-located single-stage container of its own,
 * without guest work, staged weights, blocks held for a migration or the KV pool, no
 * offloaded prefill in flight anywhere (its end reaches its home from its helper's step), no
 * predictor to feed, and no event pending but other containers' steps and the next arrival. */
static int steady_run_allowed(gsim *s, const gmg_container *c)
{
    const ctr_state *cs = &s->cs[c->id];
    const gsim_observer *o = &s->obs;
    return !s->cfg.no_steady && !s->cfg.check && !o->on_iter && !o->on_request && !s->rc &&
           !gs_share_dyn(s, c) &&
           c->role == GMG_ROLE_BOTH && c->pp == 1 && c->status == GMG_CTR_ACTIVE &&
           cs->steady_iter && cs->guest == GMG_NONE && !cs->staged && !s->g->kvp &&
           !s->n_offs_live && !c->blocks_reserved && !c->migrating_out &&
           (s->fork || s->cfg.whatif_pred.kind == POL_PRED_ORACLE) &&
           des_pending(s->des) == des_pending_kind(s->des, EV_ITER_DONE) +
                                      des_pending_kind(s->des, EV_ARRIVAL);
}

/* Whether c's step c->iter, just begun, can end without an event of its own: it ends before
 * the next arrival and within gsim_advance's horizon, finishes none of its requests, and the
 * step after it is steady too (the blocks its requests' next tokens need are free). */
static int steady_run_next(gsim *s, const gmg_container *c)
{
    const ctr_state *cs = &s->cs[c->id];
    ss_time end = c->iter.end;
    if ((s->have_next && end >= s->next.arrival_ns) || end > s->until)
        return 0;
    return cs->look_ok && cs->look_need <= c->blocks_free &&
           pol_batch_steady(s->batch, c->batch_priv, c);
}

/* c's step just begun is steady: record whether its end may be taken by steady_step (no
 * request's last token in it, every prompt in the prefix cache) and what the step after takes
 * (ctr_state.look_ok, look_need). */
static void steady_look(gsim *s, gmg_container *c)
{
    ctr_state *cs = &s->cs[c->id];
    uint32_t need = 0;
    cs->look_ok = 0;
    for (uint32_t i = 0; i < c->iter.n_reqs; i++) {
        const gmg_req *q = &s->g->reqs[c->iter.reqs[i]];
        if (q->generated + 1 >= q->output || (c->pc && !q->pc_registered))
            return;
        need += !gmg_blocks_hold(c, q->blocks, (uint64_t)q->prompt + q->generated + 1);
    }
    cs->look_ok = 1;
    cs->look_need = need;
}

/* Whether the step of c ending now may be taken by steady_step though it has an event of its
 * own: steady_look held when it began, nothing has come to c since (no arrival, no request
 * back from elsewhere, no migration), and the step after it is steady. steady_step does then
 * what end_iteration and begin_iteration would. */
static int steady_ready(gsim *s, const gmg_container *c)
{
    const ctr_state *cs = &s->cs[c->id];
    return cs->steady_iter && cs->look_ok && !s->cfg.no_steady && !c->waiting.n &&
           !c->swapped.n && c->running.n == c->iter.n_reqs && !c->migrating_out &&
           !c->blocks_reserved &&
           c->role == GMG_ROLE_BOTH && c->pp == 1 && c->status == GMG_CTR_ACTIVE &&
           cs->guest == GMG_NONE && !cs->staged && cs->look_need <= c->blocks_free &&
           pol_batch_steady(s->batch, c->batch_priv, c);
}

/* The steady step of c that steady_run_next let end within the handler ends at `now`, and the
 * next one begins: what end_iteration and begin_iteration do for it (every request of the
 * batch, which is c's running list in order, makes a token and takes the next one's KV slot),
 * in one pass over the batch. Returns whether the step begun can end within the handler too
 * (steady_run_next for it). */
/* schedule_stages for a steady step of a single-stage container without guest work or swaps
 * (steady_run_allowed): the same times and records, without what those need. */
static int steady_stages(gsim *s, gmg_container *c, ss_time now, const cost_split *split)
{
    gmg_replica *rep = &s->g->replicas[c->replica];
    ctr_state *cs = &s->cs[c->id];
    cost_split sp;
    if (split)
        sp = *split;
    else
        gs_cost_split(s, c->cost, &c->iter.batch, &sp);
    ss_time d = sp.layer_ns * (ss_time)c->model->layers + sp.head_ns + sp.tail_ns;
    ss_time begin = now > rep->stage_free[0] ? now : rep->stage_free[0];
    ss_time dev = ss_time_add(begin, sp.host_ns), wait = 0;
    for (uint32_t k = 0; k < c->tp; k++) {
        s->gst[c->gpu0 + k].host_from = begin;
        s->gst[c->gpu0 + k].host_to = dev;
    }
    if (cs->guest_until > dev)
        wait = cs->guest_until - dev;
    c->iter.wait_ns = wait;
    ss_time go = ss_time_add(dev, wait); /* its own compute starts */
    if (cs->stretch_guest)
        gs_stretch_close(s, c, go);
    c->iter.swap_ns = cs->offload_until > go ? cs->offload_until - go : 0; /* host_phase */
    d = ss_time_add(d, c->iter.swap_ns);
    ss_time end = ss_time_add(ss_time_add(begin, wait), d);
    if (end == SS_TIME_MAX) /* nothing is accounted */
        return gs_past_range(s, s->des);
    cs->own_end = end;
    c->iter.stage_start[0] = c->iter.start = begin;
    c->iter.stage_end[0] = c->iter.end = end;
    rep->stage_free[0] = end;
    compute_phase(s, c, 0, d, dev + wait, end);
    return SS_OK;
}

static int steady_step(gsim *s, gmg_container *c, ss_time now)
{
    gmg *g = s->g;
    const int win = gs_in_arrival_window(s, now), gaps = !s->fork;
    const uint32_t n = c->iter.n_reqs;
    uint64_t ctx = 0;
    uint32_t need = 0; /* blocks the step after the one begun takes */
    int next = 1;
    ss_time g_gap = -1; /* a run of equal gaps of one tier (every request's, as a rule) */
    uint8_t g_tier = 0;
    uint32_t g_n = 0;
    for (uint32_t i = 0; i < n; i++) {
        gmg_req *q = &g->reqs[c->iter.reqs[i]];
        ss_time gap;
        gmg_req_progress(q, now, &gap); /* a decode: a token, never the first */
        gs_pred_token(s, q);
        if (q->measured && gaps) {
            if (g_n && (gap != g_gap || q->tier != g_tier)) {
                metrics_add_gaps(&s->m, c->tenant, g_tier, g_gap, g_n);
                g_n = 0;
            }
            g_gap = gap;
            g_tier = q->tier;
            g_n++;
        }
        q->win_tokens += win;
        uint64_t tokens = (uint64_t)q->prompt + q->generated; /* the next step's */
        if (!gmg_blocks_hold(c, q->blocks, tokens))
            gmg_req_set_blocks(g, c, q, gmg_blocks_for(c, tokens));
        ctx += tokens;
        q->q_tokens = 1;
        next &= q->generated + 1 < q->output;
        need += !gmg_blocks_hold(c, q->blocks, tokens + 1);
    }
    if (g_n)
        metrics_add_gaps(&s->m, c->tenant, g_tier, g_gap, g_n);
    gs_kvp_charge(s, c); /* the copies out of what the blocks taken evicted start now */
    c->iterations++;
    s->iterations++;
    c->prev_step_ns = c->iter.end - c->iter.start;
    c->iter.batch = (cost_batch){.n_decode = n, .decode_ctx_tokens = ctx};
    c->iter.swap_blocks = 0;
    c->iter.swap_ns = 0;
    c->iter.seq++;
    ctr_state *cs = &s->cs[c->id];
    cs->steady_iter = 1;
    cs->steady_need = 0;
    cs->look_ok = (uint8_t)next;
    cs->look_need = need;
    if (steady_stages(s, c, now, NULL) || s->rc)
        return 0;
    ss_time end = c->iter.end;
    return next && need <= c->blocks_free && (!s->have_next || end < s->next.arrival_ns) &&
           end <= s->until;
}

/* A steady run in closed form. Its requests advance together: every one made its latest token
 * at the same moment and decodes a token each step, so step m of the run gives each the same
 * gap, and a request's state after k steps (tokens, gap sum and maximum, gaps over its TBT
 * bound, tokens in the arrival window) follows from the steps' ends alone: the handler times
 * the steps (their cost, stages, GPUs' records and the run's equal gaps into the metrics, as
 * steady_step does) without touching the requests, and brings them up to date once, when the
 * run ends. What does change per step is counted without them: the KV blocks whose boundary
 * the step's tokens cross (a request crosses one every block_tokens steps, from its first:
 * run_cross by residue) go from the free pool and into the GPUs' ledgers at that step, as
 * gmg_req_set_blocks would take them one by one. Not for a container with a prefix cache
 * (whose allocations may evict), nor for requests with more than LAZY_THRESHOLDS distinct TBT
 * bounds, whose first crossing lies more than block_tokens steps ahead (a reservation), or that
 * made their latest tokens at different moments: those take steady_step. */
enum { LAZY_THRESHOLDS = 4, LAZY_TIERS = 4 };

typedef struct lazy_run {
    ss_time start;                   /* the moment every request made its latest token */
    ss_time last;                    /* the end of the run's latest step (start before one) */
    ss_time gmax;                    /* the run's longest gap */
    uint64_t steps;                  /* steps ended so far */
    uint64_t win;                    /* of them, those ending in the arrival window */
    uint64_t stop;                   /* the run's steps end before step `stop` (a request's
                                        last token, or a crossing farther than block_tokens) */
    ss_time thr[LAZY_THRESHOLDS];    /* the requests' distinct TBT bounds (0: none) */
    uint64_t over[LAZY_THRESHOLDS];  /* the run's gaps above each */
    uint32_t n_thr;
    uint8_t tier[LAZY_TIERS];        /* the measured requests' tiers */
    uint32_t n_tier[LAZY_TIERS];     /* and how many of them in each */
    uint32_t n_tiers;
    cost_decode_run cost;            /* the steps' cost, their context apart */
} lazy_run;

/* Set up the run of c's batch, its first step begun at `now`; 0 when it cannot run lazily. */
static int lazy_init(gsim *s, const gmg_container *c, ss_time now, lazy_run *r)
{
    uint32_t bt = c->block_tokens;
    if (c->pc || !bt)
        return 0;
    if (s->run_cap < bt) {
        uint32_t *x = ss_realloc(s->run_cross, bt * sizeof *x);
        if (!x)
            return 0; /* steady_step then */
        s->run_cross = x;
        s->run_cap = bt;
    }
    memset(s->run_cross, 0, bt * sizeof *s->run_cross);
    memset(r, 0, sizeof *r);
    cost_decode_prep(&r->cost, c->cost, c->iter.n_reqs);
    r->start = r->last = now;
    r->stop = UINT64_MAX;
    const int gaps = !s->fork;
    for (uint32_t i = 0; i < c->iter.n_reqs; i++) {
        const gmg_req *q = &s->g->reqs[c->iter.reqs[i]];
        if (q->last_token != now)
            return 0;
        uint64_t left = q->output - q->generated; /* its last token ends step `left` */
        if (left < r->stop)
            r->stop = left;
        /* step m's end schedules tokens t0 + m: it crosses a boundary at m1 = room + 1, then
         * every bt steps */
        uint64_t t0 = (uint64_t)q->prompt + q->generated, m1 = (uint64_t)q->blocks * bt - t0 + 1;
        if (m1 <= bt)
            s->run_cross[m1 % bt]++;
        else if (m1 < r->stop)
            r->stop = m1;
        uint32_t k = 0;
        if (q->sla_tbt) {
            while (k < r->n_thr && r->thr[k] != q->sla_tbt)
                k++;
            if (k == LAZY_THRESHOLDS)
                return 0;
            if (k == r->n_thr)
                r->thr[r->n_thr++] = q->sla_tbt;
        }
        if (q->measured && gaps) {
            for (k = 0; k < r->n_tiers && r->tier[k] != q->tier; k++)
                ;
            if (k == LAZY_TIERS)
                return 0;
            if (k == r->n_tiers)
                r->tier[r->n_tiers++] = q->tier;
            r->n_tier[k]++;
        }
    }
    return 1;
}

/* Whether c's step begun last, the run's step r->steps + 1, can end within the handler: it
 * ends before the next arrival and within the horizon, is not a request's last, and the step
 * after it is steady (the blocks its crossings take are free). */
static int lazy_next(const gsim *s, const gmg_container *c, const lazy_run *r)
{
    uint64_t m = r->steps + 1;
    ss_time end = c->iter.end;
    return m < r->stop && s->run_cross[m % c->block_tokens] <= c->blocks_free &&
           (!s->have_next || end < s->next.arrival_ns) && end <= s->until;
}

/* The run's step begun last ends at c->iter.end and the next begins: steady_step without the
 * requests. */
static int lazy_step(gsim *s, gmg_container *c, lazy_run *r)
{
    ss_time now = c->iter.end, gap = now - r->last;
    r->last = now;
    r->steps++;
    if (gap > r->gmax)
        r->gmax = gap;
    for (uint32_t k = 0; k < r->n_thr; k++)
        r->over[k] += gap > r->thr[k];
    r->win += gs_in_arrival_window(s, now);
    for (uint32_t k = 0; k < r->n_tiers; k++)
        metrics_add_gaps(&s->m, c->tenant, r->tier[k], gap, r->n_tier[k]);
    uint32_t cross = s->run_cross[r->steps % c->block_tokens]; /* most steps cross none */
    if (cross)
        gmg_take_blocks_each(s->g, c, cross);
    c->iterations++;
    s->iterations++;
    c->prev_step_ns = c->iter.end - c->iter.start;
    c->iter.batch.decode_ctx_tokens += c->iter.n_reqs;
    c->iter.seq++;
    cost_split sp;
    cost_decode_split(&r->cost, c->iter.batch.decode_ctx_tokens, &sp);
    fork_split(s, &sp);
    if (steady_stages(s, c, now, &sp) || s->rc)
        return 0;
    return lazy_next(s, c, r);
}

/* The run ends: its requests made r->steps tokens each. */
static void lazy_close(gsim *s, gmg_container *c, const lazy_run *r)
{
    uint32_t k = (uint32_t)r->steps;
    ss_time last = r->last;
    for (uint32_t i = 0; i < c->iter.n_reqs; i++) {
        gmg_req *q = &s->g->reqs[c->iter.reqs[i]];
        q->generated += k;
        q->computed += k;
        q->last_token = last;
        q->tbt_sum += last - r->start;
        if (r->gmax > q->tbt_max)
            q->tbt_max = r->gmax;
        for (uint32_t t = 0; q->sla_tbt && t < r->n_thr; t++)
            if (r->thr[t] == q->sla_tbt)
                q->tbt_over += (uint32_t)r->over[t];
        q->win_tokens += (uint32_t)r->win;
        uint64_t tokens = (uint64_t)q->prompt + q->generated; /* the step begun's */
        if (!gmg_blocks_hold(c, q->blocks, tokens))
            q->blocks = gmg_blocks_for(c, tokens); /* counted as the run crossed them */
    }
    steady_look(s, c); /* for the step begun, which ends with an event */
}

void gs_on_iter_done(des_engine *e, des_event *ev, void *ctx)
{
    gsim *s = ctx;
    gmg_container *c = &s->g->ctrs[ev->target];
    ss_time now = des_now(e);
    int begun;
    if (gs_share_dyn(s, c))
        gs_share_end(s, c);
    if (steady_ready(s, c)) { /* ends this step and begins the next, as below */
        steady_step(s, c, now);
        begun = !s->rc;
    } else {
        end_iteration(s, c, now);
        if (c->role == GMG_ROLE_DECODE && s->ten[c->tenant].kv_head != GMG_NONE)
            gs_disagg_pump(s, &s->ten[c->tenant]); /* blocks it freed may take a waiting KV */
        begun = begin_iteration(s, c, now);
    }
    if (begun) {
        lazy_run r;
        if (!steady_run_allowed(s, c) || !steady_run_next(s, c))
            ;
        else if (lazy_init(s, c, now, &r) && lazy_next(s, c, &r)) {
            do /* the step that just began ends within this handler */
                des_note_handled(e, 1);
            while (lazy_step(s, c, &r));
            lazy_close(s, c, &r);
        } else {
            do
                des_note_handled(e, 1);
            while (steady_step(s, c, c->iter.end));
        }
        if (!s->rc)
            iteration_event(s, c);
    } else if (c->waiting.n)
        mark_start(s, c);
    if (!c->busy && gs_share_dyn(s, c))
        gs_share_idle(s, c);
    if (!c->busy && c->role == GMG_ROLE_DECODE && s->ten[c->tenant].kv_head != GMG_NONE)
        gs_disagg_pump(s, &s->ten[c->tenant]); /* its batch freed blocks without running */
    if (!c->busy) {
        c->prev_step_ns = 0;
        gs_guest_idle(s, c);
    }
    if (c->status == GMG_CTR_DRAINING && !c->busy)
        gs_maybe_drained(s, c);
}

/* ---- arrivals --------------------------------------------------------------------------- */

int gs_read_next(gsim *s)
{
    int rc = s->src(s->src_ud, &s->next, s->eb);
    if (rc < 0) {
        gs_fail(s, rc);
        return 0;
    }
    s->have_next = rc == 1;
    return s->have_next;
}

/* Create the request for s->next and route it; returns its container or NULL. */
/* The request's SLA: its tier's, with any bound the trace gives the request itself. */
static void set_sla(gmg_req *q, const gsim_sla *tier, const trace_rec *t)
{
    q->sla_ttft = t->has_slo & 1 ? t->slo_ttft_ns : tier->ttft;
    q->sla_tbt = t->has_slo & 2 ? t->slo_tbt_ns : tier->tbt_p99;
    q->sla_e2e = tier->e2e;
}

/* With async scheduling the engine chooses step n+1's batch while step n runs: a request that
 * arrives during step n joins step n+2 at the earliest, one step later than the simulated
 * schedule admits it. That step n+1 is charged to its client-side TTFT and E2E. Its length is
 * estimated from the steps around it without the request (the simulated step n+1 holds the
 * request itself, which reality's does not): the shorter of step n and step n-1, so that a
 * long prefill step n, followed in reality by a short decode step, does not count in full;
 * 0 when step n followed an idle engine (the next step is then the decode of step n's
 * requests, short, or none). The schedule is not delayed: metrics only, an approximation that
 * holds while the request would be admitted at once (not behind a queue, where one step of
 * visibility matters less). */
static ss_time sched_lag_ns(const gsim *s, const gmg_container *c)
{
    const cat_engine *e = gs_tenant_engine(s, c->tenant);
    if (!e || !e->async_scheduling || !c->busy || c->iter.end <= c->iter.start)
        return 0;
    ss_time now = c->iter.end - c->iter.start;
    return now < c->prev_step_ns ? now : c->prev_step_ns;
}

static gmg_container *admit_arrival(gsim *s)
{
    const trace_rec *t = &s->next;
    gmg_id r = gmg_req_alloc(s->g);
    if (r == GMG_NONE) {
        gs_fail(s, ss_err(s->eb, SS_ENOMEM, "requests: out of memory"));
        return NULL;
    }
    gmg_req *q = gmg_req_at(s->g, r);
    q->trace_id = t->id;
    q->arrival = t->arrival_ns;
    q->prompt = t->prompt_tokens;
    q->output_asked = t->output_tokens;
    q->output = t->output_tokens;
    /* vLLM stops a sequence at max_model_len tokens; the prefill always yields one token. */
    if ((uint64_t)q->prompt + q->output > s->cfg.max_model_len)
        q->output = q->prompt < s->cfg.max_model_len ? (uint32_t)(s->cfg.max_model_len - q->prompt)
                                                      : 1;
    q->tenant = s->n_ten > 1 ? t->tenant : 0;
    if (SS_NEVER(q->tenant >= s->n_ten))
        q->tenant = 0;
    gs_pred_arrival(s, q);
    const tenant_state *ts = &s->ten[q->tenant];
    q->tier = t->tier < ts->t.tiers ? t->tier : (uint8_t)(ts->t.tiers - 1);
    set_sla(q, &ts->t.sla[q->tier], t);
    q->measured = q->arrival >= s->cfg.warmup;
    q->n_prefix_blocks = t->n_prefix_blocks;
    q->session_id = t->session_id;
    if (s->cfg.prefix_cache == GSIM_PREFIX_AUTO && !s->g->prefix_cache &&
        (q->n_prefix_blocks || q->session_id) && gmg_pc_enable(s->g)) {
        gmg_req_drop(s->g, r);
        gs_fail(s, ss_err(s->eb, SS_ENOMEM, "prefix cache: out of memory"));
        return NULL;
    }
    /* its blocks' hashes, once (the reader's ids live only until its next call) */
    if (s->g->prefix_cache && gmg_pc_chain_make(q, t->prefix_blocks, s->cfg.block_tokens)) {
        gmg_req_drop(s->g, r);
        gs_fail(s, ss_err(s->eb, SS_ENOMEM, "requests: out of memory"));
        return NULL;
    }
    s->m.arrived++;
    s->m.last_arrival = q->arrival;
    if (SS_NEVER(ts->n_cands == 0))
        ss_fatal(SS_LOC, "tenant %s has no active container", ts->t.name);
    gmg_id ci = gs_route(s, ts, r);
    if (ci == GMG_NONE) {
        gmg_req_drop(s->g, r);
        return NULL;
    }
    q->container = ci;
    gmg_container *c = &s->g->ctrs[ci];
    q->sched_lag = sched_lag_ns(s, c);
    s->cs[ci].epoch++;
    gmg_req_enqueue(s->g, c, r, gs_enqueue_where(s, 0));
    return c;
}

void gs_on_arrival(des_engine *e, des_event *ev, void *ctx)
{
    (void)ev;
    gsim *s = ctx;
    ss_time now = des_now(e);
    do {
        if (s->next.arrival_ns < now)
            ss_fatal(SS_LOC, "source delivered arrival %lld before now %lld",
                     (long long)s->next.arrival_ns, (long long)now);
        gmg_container *c = admit_arrival(s);
        if (!c)
            return;
        if (!c->busy)
            mark_start(s, c);
    } while (gs_read_next(s) && s->next.arrival_ns == now);
    if (s->have_next && !s->rc)
        gs_sched(s, e, s->next.arrival_ns, EV_ARRIVAL, 0);
    /* Every container idle with requests waiting, in id order: those this arrival reached and
     * those a start left waiting (a load from the KV pool, a KV transfer out), which gs_start_
     * iteration marks again if they stay so. */
    uint32_t n = s->n_starts;
    gmg_id *ids = s->starts_now;
    memcpy(ids, s->starts, n * sizeof *ids);
    s->n_starts = 0;
    for (uint32_t i = 1; i < n; i++) /* insertion sort: a few at a time */
        for (uint32_t j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
            gmg_id t = ids[j - 1];
            ids[j - 1] = ids[j];
            ids[j] = t;
        }
    for (uint32_t i = 0; i < n; i++) {
        gmg_container *c = &s->g->ctrs[ids[i]];
        s->cs[c->id].start_mark = 0;
        if (!c->busy && c->waiting.n)
            gs_start_iteration(s, c);
    }
}
