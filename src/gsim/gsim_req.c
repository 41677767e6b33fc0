/* Request state changes: the waiting queue (and its routing demand), rejection, completion and
 * the record of a request's outcome. */
#include "gsim/gsim_int.h"

#include "core/ss_hash.h"
#include "core/ss_log.h"

/* ---- request state changes ------------------------------------------------------------- */

void gs_notify(gsim *s, const gmg_container *c, const gmg_req *q, gsim_req_event what)
{
    if (s->obs.on_request)
        s->obs.on_request(s->obs.ud, s->g, c, q, what, des_now(s->des));
    if (s->whatif_done && (what == GSIM_REQ_FINISH || what == GSIM_REQ_REJECT))
        s->whatif_done(s->whatif_ud, s->g, q, what == GSIM_REQ_REJECT, des_now(s->des));
}

/* Which SLA bounds q broke (METRICS_SLA_* bits), on the client-side times: TTFT and E2E
 * include the engine's front-end latency fe_ns. A rejected request breaks its SLA if it has
 * one: without any bound, nothing is violated. */
static uint8_t sla_bits(const gmg_req *q, int rejected, ss_time fe_ns)
{
    if (rejected)
        return q->sla_ttft || q->sla_tbt || q->sla_e2e ? METRICS_SLA_REJECTED : 0;
    uint32_t gaps = q->generated > 1 ? q->generated - 1 : 0;
    return metrics_sla_judge(q->sla_ttft, q->first_token + fe_ns - q->arrival, q->sla_e2e,
                             q->finish + fe_ns - q->arrival, q->sla_tbt, gaps, q->tbt_over);
}

uint8_t gsim_req_sla_so_far(const gmg_req *q, ss_time now)
{
    ss_time first = q->first_token >= 0 ? q->first_token : now;
    ss_time end = q->state == GMG_REQ_DONE ? q->finish : now;
    uint32_t gaps = q->output > 1 ? q->output - 1 : 0; /* all it will have */
    return metrics_sla_judge(q->sla_ttft, first - q->arrival, q->sla_e2e, end - q->arrival,
                             q->sla_tbt, gaps, q->tbt_over);
}

/* The metrics' name for a batching policy's reason to gs_reject (pol_reject_why). */
static uint8_t reject_reason(uint32_t why)
{
    switch (why) {
    case POL_REJECT_TOO_LONG: return METRICS_REJ_TOO_LONG;
    case POL_REJECT_BATCH_TOKENS: return METRICS_REJ_BATCH_TOKENS;
    case POL_REJECT_KV: return METRICS_REJ_KV;
    case POL_REJECT_PREEMPTED: return METRICS_REJ_PREEMPTED;
    default: return METRICS_REJ_OTHER;
    }
}

/* Tenant t's serving engine (NULL for an unknown tenant). */
const cat_engine *gs_tenant_engine(const gsim *s, uint16_t t)
{
    return t < s->n_ten ? s->ten[t].t.engine : NULL;
}

/* The front-end latency of tenant t's engine (API server, tokenisation, detokenisation,
 * streaming) that a client adds to the server-side TTFT and E2E, ns. */
static ss_time frontend_ns(const gsim *s, uint16_t t)
{
    const cat_engine *e = gs_tenant_engine(s, t);
    return e && e->frontend_s > 0 ? ss_time_from_s(e->frontend_s) : 0;
}

/* Record q's outcome: completed, or rejected for reason why (METRICS_REJ_*). The record holds
 * client-side times: a completed request's first token and finish are shifted by the engine's
 * front-end latency and its async-scheduling lag (server-side scheduling never sees them). */
static void emit_result(gsim *s, const gmg_req *q, int rejected, uint8_t why)
{
    ss_time fe = rejected ? 0 : ss_time_add(frontend_ns(s, q->tenant), q->sched_lag);
    metrics_req r = {
        .trace_id = q->trace_id, .tenant = q->tenant, .tier = q->tier, .rejected = (uint8_t)rejected,
        .reject_why = rejected ? why : 0, .sla = sla_bits(q, rejected, fe), .measured = q->measured,
        .container = q->container, .prompt = q->prompt, .output_asked = q->output_asked,
        .generated = q->generated, .preemptions = q->preemptions, .migrations = q->migrations,
        .arrival = q->arrival, .first_token = q->first_token, .finish = q->finish + fe,
        .tbt_sum = q->tbt_sum, .tbt_max = q->tbt_max, .win_tokens = q->win_tokens,
    };
    if (r.first_token >= 0)
        r.first_token += fe;
    if (!s->fork) /* a fork's predictions are its requests and its sink's records */
        metrics_add_req(&s->m, &r);
    s->n_finished++;
    if (rejected)
        s->n_rejected++;
    else
        s->n_completed++;
    if (s->m.oom)
        gs_fail(s, ss_err(s->eb, SS_ENOMEM, "metrics: out of memory"));
    else if (s->sink) {
        int rc = s->sink(s->sink_ud, &r, s->eb);
        if (rc)
            gs_fail(s, rc);
    }
}

/* Where a request joins c's waiting queue: the front for a preempted one, else by arrival, or
 * by (tier, arrival) under a cluster policy that orders queues by tier. */
gmg_enqueue gs_enqueue_where(const gsim *s, int front)
{
    return front ? GMG_ENQ_FRONT : s->tier_ordered ? GMG_ENQ_TIER : GMG_ENQ_BACK;
}

void gs_reject(gsim *s, gmg_container *c, gmg_id r, uint32_t why)
{
    gmg_req *q = gmg_req_at(s->g, r);
    gs_maybe_abort_migration(s, q);
    s->m.aborted += q->state != GMG_REQ_WAITING || q->preemptions > 0;
    gmg_req_end(s->g, c, r, GMG_REQ_REJECTED, des_now(s->des));
    gs_notify(s, c, q, GSIM_REQ_REJECT);
    emit_result(s, q, 1, reject_reason(why));
    gmg_req_free(s->g, r);
}

void gs_finish(gsim *s, gmg_container *c, gmg_id r)
{
    gmg_req *q = gmg_req_at(s->g, r);
    gs_pred_finished(s, q);
    gs_maybe_abort_migration(s, q);
    gmg_req_end(s->g, c, r, GMG_REQ_DONE, des_now(s->des));
    gs_notify(s, c, q, GSIM_REQ_FINISH);
    emit_result(s, q, 0, 0);
    gmg_req_free(s->g, r);
}

/* ---- what the what-ifs predict --------------------------------------------------------- */

/* Whether this simulation predicts output lengths for its what-ifs (the replay does, with a
 * predictor other than the oracle; a fork runs the predictions it was given). */
static int predicting(const gsim *s)
{
    return !s->fork && s->cfg.whatif_pred.kind != POL_PRED_ORACLE;
}

/* q's output length as the predictor gives it now, from its tenant's finished requests. */
static uint32_t predict(const gsim *s, const gmg_req *q)
{
    uint32_t cap = q->prompt < s->cfg.max_model_len ? (uint32_t)(s->cfg.max_model_len - q->prompt)
                                                    : 1; /* as admission caps the true one */
    uint64_t key = ss_fnv1a(SS_FNV1A_OFFSET, &q->trace_id, sizeof q->trace_id);
    key = ss_fnv1a(key, &q->tenant, sizeof q->tenant);
    key = ss_fnv1a(key, &q->generated, sizeof q->generated);
    const tenant_state *t = &s->ten[q->tenant];
    return pol_predict_output(&s->cfg.whatif_pred, &t->out_lens, &t->out_ix, q->generated,
                              q->output, cap, s->cfg.seed, key);
}

void gs_pred_arrival(gsim *s, gmg_req *q)
{
    q->output_pred = predicting(s) ? predict(s, q) : 0;
}

void gs__pred_token(gsim *s, gmg_req *q)
{
    if (!predicting(s) || q->generated < q->output_pred || q->generated >= q->output)
        return;
    q->output_pred = predict(s, q);
    s->cs[q->container].epoch++; /* its container's what-ifs have it end by now */
}

void gs_pred_finished(gsim *s, const gmg_req *q)
{
    int kind = s->cfg.whatif_pred.kind;
    tenant_state *t = &s->ten[q->tenant];
    if (predicting(s) && (kind == POL_PRED_MEAN || kind == POL_PRED_QUANTILE) &&
        ss_hist_index_add(&t->out_ix, &t->out_lens, q->generated))
        gs_fail(s, ss_err(s->eb, SS_ENOMEM, "output-length predictor: out of memory"));
}

/* The container the routing policy picks for request r of tenant t: one of the tenant's active
 * containers, or GMG_NONE after failing the run with the policy's malfunction. */
gmg_id gs_route(gsim *s, const tenant_state *t, gmg_id r)
{
    pol_route *rt = t->n_dcands ? s->proute : s->route; /* disaggregated: a prefill instance */
    gmg_id ci = pol_route_pick(rt, s->g, r, t->cands, t->n_cands);
    uint32_t lo = 0, hi = t->n_cands; /* cands ascend: binary search */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (t->cands[mid] < ci)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < t->n_cands && t->cands[lo] == ci)
        return ci;
    if (!s->rc)
        gs_fail(s, ss_err(s->eb, SS_EINVAL, "routing policy '%s' malfunction: at %.9g s it sent "
                          "request %llu of tenant %s to container %u, not one of the tenant's %u "
                          "active containers", pol_route_name(rt),
                          ss_time_to_s(des_now(s->des)),
                          (unsigned long long)s->g->reqs[r].trace_id, t->t.name, ci, t->n_cands));
    return GMG_NONE;
}
