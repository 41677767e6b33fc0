/* What-if forks: an independent copy of the simulation in which some containers continue from
 * the present with no new arrivals and no cluster decisions. */
#include "gsim/gsim_int.h"

#include "core/ss_alloc.h"

#include <string.h>

/* ---- what-if forks ---------------------------------------------------------------------- */

static int fork_tenants(gsim *f, const gsim *s)
{
    if (!(f->ten = ss_calloc(s->n_ten, sizeof *f->ten)))
        return SS_ENOMEM;
    f->n_ten = s->n_ten;
    for (uint32_t i = 0; i < s->n_ten; i++) {
        tenant_state *t = &f->ten[i];
        *t = s->ten[i];
        t->cands = NULL, t->standby = NULL;
        t->ceiling = (gs_ceiling){0}; /* the ceiling is the replay's record */
        t->out_lens = (ss_hist){0};   /* the predictor's too: the fork's requests have theirs */
        t->out_ix = (ss_hist_index){0};
        size_t nc = t->cap ? t->cap : 1, ns = s->g->n_ctrs ? s->g->n_ctrs : 1;
        if (!(t->cands = ss_calloc(nc, sizeof *t->cands)) ||
            !(t->standby = ss_calloc(ns, sizeof *t->standby)))
            return SS_ENOMEM;
        if (t->n_cands)
            memcpy(t->cands, s->ten[i].cands, t->n_cands * sizeof *t->cands);
        if (t->n_standby)
            memcpy(t->standby, s->ten[i].standby, t->n_standby * sizeof *t->standby);
    }
    return SS_OK;
}

/* The per-container state a fork needs: batching state, cluster bookkeeping, decision scratch
 * (views and decision arrays stay empty: forks make no cluster decisions). */
static int fork_ctr_state(gsim *f, const gsim *s)
{
    size_t sz = pol_batch_ctr_priv_size(s->batch);
    for (uint32_t i = 0; i < f->g->n_ctrs; i++)
        f->g->ctrs[i].batch_priv = NULL;
    for (uint32_t i = 0; sz && i < f->g->n_ctrs; i++) {
        if (!(f->g->ctrs[i].batch_priv = ss_malloc(sz)))
            return SS_ENOMEM;
        memcpy(f->g->ctrs[i].batch_priv, s->g->ctrs[i].batch_priv, sz);
    }
    if (!(f->cs = ss_calloc(s->g->n_ctrs ? s->g->n_ctrs : 1, sizeof *f->cs)))
        return SS_ENOMEM;
    memcpy(f->cs, s->cs, s->g->n_ctrs * sizeof *f->cs);
    return SS_OK;
}

static int in_set(const gmg_id *ctrs, uint32_t n, gmg_id c)
{
    for (uint32_t i = 0; i < n; i++)
        if (ctrs[i] == c)
            return 1;
    return 0;
}

/* The offloaded prefills in flight (their events are rescheduled by fork_events). */
static int fork_offloads(gsim *f, const gsim *s, const gmg_id *ctrs, uint32_t n)
{
    f->free_off = s->free_off;
    f->max_overrun = s->max_overrun;
    if (!s->n_offs)
        return SS_OK;
    if (!(f->offs = ss_malloc(s->cap_offs * sizeof *f->offs)))
        return SS_ENOMEM;
    memcpy(f->offs, s->offs, s->n_offs * sizeof *f->offs);
    f->n_offs = s->n_offs, f->cap_offs = s->cap_offs;
    for (uint32_t i = 0; i < f->n_offs; i++) {
        f->offs[i].ev = NULL;
        /* those of its containers run (fork_events); the others stay as they are */
        f->n_offs_live += f->offs[i].in_use && (in_set(ctrs, n, f->offs[i].home) ||
                                                 in_set(ctrs, n, f->offs[i].helper));
    }
    return SS_OK;
}

/* The requests in flight run to the lengths the replay's predictor gave them (gs_pred_*), not
 * their true ones: a deployed scheduler knows how many tokens a request has made and that it is
 * still running, not when it will end. */
static void fork_predictions(gsim *f)
{
    uint32_t n;
    const gmg_id *roster = gmg_req_roster(f->g, &n); /* the requests it copied */
    for (uint32_t k = 0; k < n; k++) {
        gmg_req *q = &f->g->reqs[roster ? roster[k] : k];
        if (q->state == GMG_REQ_FREE || q->state == GMG_REQ_DONE ||
            q->state == GMG_REQ_REJECTED || !q->output_pred)
            continue;
        q->output = q->output_pred > q->generated ? q->output_pred : q->generated + 1;
    }
}


/* Schedule what is pending for the forked containers: a running iteration's end, a loading
 * container's readiness, the chunks and completion of offloaded prefills they take part in,
 * their requests' loads from the KV pool. */
static int fork_events(gsim *f, const gmg_id *ctrs, uint32_t n)
{
    for (uint32_t i = 0; i < f->n_offs; i++) {
        offload *o = &f->offs[i];
        if (!o->in_use || (!in_set(ctrs, n, o->home) && !in_set(ctrs, n, o->helper)))
            continue;
        if (o->event_at && !(o->ev = des_schedule(f->des, o->event_at, EV_GUEST, i)))
            return SS_ENOMEM;
        if (o->done_at && !des_schedule(f->des, o->done_at, EV_OFFLOAD_DONE, i))
            return SS_ENOMEM;
    }
    for (uint32_t i = 0; i < n; i++) {
        const gmg_container *c = &f->g->ctrs[ctrs[i]];
        if (c->busy && !des_schedule(f->des, c->iter.end, EV_ITER_DONE, c->id))
            return SS_ENOMEM;
        if (c->status == GMG_CTR_LOADING && !des_schedule(f->des, c->ready_at, EV_CTR_READY, c->id))
            return SS_ENOMEM;
    }
    if (!f->g->kvp) /* loads from the KV pool in flight */
        return SS_OK;
    uint8_t *set = ss_calloc(f->g->n_ctrs ? f->g->n_ctrs : 1, 1);
    if (!set)
        return SS_ENOMEM;
    for (uint32_t i = 0; i < n; i++)
        set[ctrs[i]] = 1;
    int rc = gs_kvp_fork_events(f, set);
    ss_free(set);
    return rc;
}

int gsim_fork(const gsim *s, const gmg_id *ctrs, uint32_t n, gsim_sink_fn *sink, void *sink_ud,
              gsim **out, ss_errbuf *eb)
{
    for (uint32_t i = 0; i < n; i++) {
        if (ctrs[i] >= s->g->n_ctrs)
            return ss_err(eb, SS_EINVAL, "fork: no container %u", ctrs[i]);
        const gmg_container *c = &s->g->ctrs[ctrs[i]];
        if (c->migrating_out || c->blocks_reserved)
            return ss_err(eb, SS_EINVAL, "fork: container %u has a live migration in flight",
                          c->id);
    }
    /* A fork copies neither the KV hand-offs between a disaggregated tenant's pools nor their
     * list of decode instances (SliceScheduler, the forks' one user, refuses such tenants). */
    for (uint32_t i = 0; i < s->n_ten; i++)
        if (s->ten[i].n_dcands)
            return ss_err(eb, SS_EINVAL, "fork: tenant %s serves from separate prefill and "
                          "decode pools, which what-if forks do not model", s->ten[i].t.name);
    gsim *f = ss_calloc(1, sizeof *f);
    if (!f)
        return ss_err(eb, SS_ENOMEM, "fork: out of memory");
    f->fork = 1;
    f->cfg = s->cfg;
    f->single = s->single;
    f->tier_ordered = s->tier_ordered;
    f->batch = s->batch;
    f->free_mig = GMG_NONE;
    f->cd.setup_ns = s->cd.setup_ns; /* a draining container still loads its next tenant */
    f->cd.load_bw = s->cd.load_bw;
    f->sink = sink;
    f->sink_ud = sink_ud;
    f->eb = eb;
    /* the graph comes with the forked containers' requests and those of the partners of their
     * offloads in flight, and of the partners' partners: a partner runs again in the fork when
     * its request comes home, and then so does the guest it hosts, whose request must be there
     * too. Every other container is frozen. */
    uint8_t *keep = ss_calloc(s->g->n_ctrs ? s->g->n_ctrs : 1, 1);
    int rc = keep ? SS_OK : SS_ENOMEM;
    for (uint32_t i = 0; keep && i < n; i++)
        keep[ctrs[i]] = 1;
    for (int grew = 1; keep && grew;) {
        grew = 0;
        for (uint32_t i = 0; i < s->n_offs; i++) {
            const offload *o = &s->offs[i];
            if (o->in_use && keep[o->home] != keep[o->helper]) {
                keep[o->home] = keep[o->helper] = 1;
                grew = 1;
            }
        }
    }
    if (!rc)
        rc = gmg_clone_part(s->g, keep, &f->g);
    ss_free(keep);
    if (!rc && (f->gst = ss_malloc((s->g->n_gpus ? s->g->n_gpus : 1) * sizeof *f->gst)))
        memcpy(f->gst, s->gst, s->g->n_gpus * sizeof *f->gst);
    else if (!rc)
        rc = SS_ENOMEM;
    if (!rc)
        fork_predictions(f);
    if (!rc)
        rc = fork_tenants(f, s);
    if (!rc)
        rc = fork_ctr_state(f, s);
    if (!rc)
        rc = fork_offloads(f, s, ctrs, n);
    if (!rc) /* the idle slices and counters: a fork records no request, gap or lookup */
        metrics_init_counters(&f->m, s->cfg.warmup);
    if (!rc)
        rc = des_engine_create(&f->des, f);
    if (!rc) {
        des_start_at(f->des, des_now(s->des));
        des_handler_set(f->des, EV_ITER_DONE, gs_on_iter_done);
        des_handler_set(f->des, EV_CTR_READY, gs_on_ctr_ready);
        des_handler_set(f->des, EV_GUEST, gs_on_guest);
        des_handler_set(f->des, EV_OFFLOAD_DONE, gs_on_offload_done);
        des_handler_set(f->des, EV_KV_LOADED, gs_on_kv_loaded);
        rc = fork_events(f, ctrs, n);
    }
    if (rc) {
        gsim_destroy(&f);
        return ss_err(eb, rc, "fork: out of memory");
    }
    *out = f;
    return SS_OK;
}
