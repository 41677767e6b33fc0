/* What-if forks: an independent copy of the simulation in which some containers continue from
 * the present with no new arrivals and no cluster decisions. */
#include "gsim/gsim_int.h"

#include "core/ss_alloc.h"

#include <string.h>

/* ---- the memory of a fork before --------------------------------------------------------- */

/* What a replay's spare fork (gs_spare) leaves for the next one: its arrays and engine, with
 * what each was made to hold. Their contents are stale: the next fork writes them over. */
typedef struct fork_mem {
    gmg *g;                      /* its graph, a partial copy (gmg_recopy_part reuses it) */
    gsim_gpu_stats *gst;
    uint32_t n_gpus;             /* gst's entries */
    tenant_state *ten;           /* each with its cands (cap, at least 1) and standby */
    uint32_t n_ten;
    uint32_t n_ctrs;             /* entries of cs and of each tenant's standby */
    ctr_state *cs;
    offload *offs;
    uint32_t cap_offs;
    des_engine *des;             /* its engine: its event pool and queue */
    pol_batch_decision dec;      /* decision scratch (one block, dec_cap entries each) */
    size_t dec_cap;
    uint32_t *run_cross;         /* steady-run scratch, run_cap entries */
    uint32_t run_cap;
    gs_cohort **coh;             /* its decode cohorts' tables, n_coh of them (gs_coh_alloc) */
    uint32_t n_coh;
} fork_mem;

static void mem_free_tenants(fork_mem *m)
{
    for (uint32_t i = 0; m->ten && i < m->n_ten; i++) {
        ss_free(m->ten[i].cands);
        ss_free(m->ten[i].standby);
    }
    ss_free(m->ten);
    m->ten = NULL, m->n_ten = 0;
}

/* Release what m still holds. */
static void mem_free(fork_mem *m)
{
    gmg_destroy(&m->g);
    ss_free(m->gst);
    mem_free_tenants(m);
    ss_free(m->cs);
    ss_free(m->offs);
    des_engine_destroy(&m->des);
    ss_free(m->dec.run);
    ss_free(m->run_cross);
    gs_coh_release(m->coh, m->n_coh);
    memset(m, 0, sizeof *m);
}

/* Take f, a spare fork, apart: its reusable memory into *m, the rest released (the batching
 * state copied per container, the checker's, the cluster state a fork never uses). f is left
 * as bare memory. */
static void mem_take(gsim *f, fork_mem *m)
{
    for (uint32_t i = 0; i < f->g->n_ctrs; i++) {
        ss_free(f->g->ctrs[i].batch_priv);
        f->g->ctrs[i].batch_priv = NULL;
    }
    *m = (fork_mem){.g = f->g, .gst = f->gst, .n_gpus = f->g->n_gpus, .ten = f->ten,
                    .n_ten = f->n_ten, .n_ctrs = f->g->n_ctrs, .cs = f->cs, .offs = f->offs,
                    .cap_offs = f->cap_offs, .des = f->des, .dec = f->dec,
                    .dec_cap = f->dec_cap, .run_cross = f->run_cross, .run_cap = f->run_cap,
                    .coh = f->coh, .n_coh = f->n_coh};
    f->g = NULL, f->gst = NULL, f->ten = NULL, f->n_ten = 0, f->cs = NULL, f->offs = NULL;
    f->des = NULL, f->dec.run = NULL, f->run_cross = NULL;
    f->coh = NULL, f->n_coh = f->n_coh_on = 0;
    gs_release(f);
}

/* *p (have entries, or NULL) made to hold n entries of elem bytes: kept when large enough,
 * else replaced (contents stale). 0 or SS_ENOMEM (*p NULL). */
static int fit(void **p, size_t have, size_t n, size_t elem)
{
    if (*p && have >= n)
        return SS_OK;
    ss_free(*p);
    return (*p = ss_malloc((n ? n : 1) * elem)) ? SS_OK : SS_ENOMEM;
}

/* ---- what-if forks ---------------------------------------------------------------------- */

static int fork_tenants(gsim *f, const gsim *s, fork_mem *m)
{
    if (m->ten && m->n_ten != s->n_ten)
        mem_free_tenants(m);
    /* f owns the array (and each entry's lists) from here: stale entries are released whole */
    if (!m->ten && !(m->ten = ss_calloc(s->n_ten, sizeof *m->ten)))
        return SS_ENOMEM;
    f->ten = m->ten, f->n_ten = s->n_ten, m->ten = NULL, m->n_ten = 0;
    size_t ns = s->g->n_ctrs ? s->g->n_ctrs : 1;
    for (uint32_t i = 0; i < s->n_ten; i++) {
        tenant_state *t = &f->ten[i];
        gmg_id *cands = t->cands, *standby = t->standby;
        size_t have = t->cands ? (t->cap ? t->cap : 1) : 0, nc = s->ten[i].cap ? s->ten[i].cap : 1;
        *t = s->ten[i];
        t->cands = cands, t->standby = standby;
        t->dcands = NULL;
        t->ceiling = (gs_ceiling){0}; /* the ceiling is the replay's record */
        t->out_lens = (ss_hist){0};   /* the predictor's too: the fork's requests have theirs */
        t->out_ix = (ss_hist_index){0};
        if (fit((void **)&t->cands, have, nc, sizeof *t->cands) ||
            fit((void **)&t->standby, standby ? m->n_ctrs : 0, ns, sizeof *t->standby))
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
static int fork_ctr_state(gsim *f, const gsim *s, fork_mem *m)
{
    size_t sz = pol_batch_ctr_priv_size(s->batch);
    for (uint32_t i = 0; i < f->g->n_ctrs; i++)
        f->g->ctrs[i].batch_priv = NULL;
    for (uint32_t i = 0; sz && i < f->g->n_ctrs; i++) {
        if (!(f->g->ctrs[i].batch_priv = ss_malloc(sz)))
            return SS_ENOMEM;
        memcpy(f->g->ctrs[i].batch_priv, s->g->ctrs[i].batch_priv, sz);
    }
    f->cs = m->cs, m->cs = NULL;
    if (fit((void **)&f->cs, m->n_ctrs, s->g->n_ctrs, sizeof *f->cs))
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

/* The offloaded prefills in flight (their events are rescheduled by fork_events), in m's
 * array when it has room (a larger one only leaves the fork's own offloads room to come). */
static int fork_offloads(gsim *f, const gsim *s, const gmg_id *ctrs, uint32_t n, fork_mem *m)
{
    f->free_off = s->free_off;
    f->max_overrun = s->max_overrun;
    uint32_t have = m->offs ? m->cap_offs : 0;
    f->offs = m->offs, f->cap_offs = have, m->offs = NULL;
    if (!s->n_offs)
        return SS_OK;
    if (fit((void **)&f->offs, have, s->cap_offs, sizeof *f->offs)) {
        f->cap_offs = 0;
        return SS_ENOMEM;
    }
    memcpy(f->offs, s->offs, s->n_offs * sizeof *f->offs);
    f->n_offs = s->n_offs, f->cap_offs = have >= s->cap_offs ? have : s->cap_offs;
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

/* A fork's own simulator: the replay's spare taken apart (its memory into *m), or a new one;
 * its settings from s. NULL when out of memory. */
static gsim *fork_shell(const gsim *s, gsim_sink_fn *sink, void *sink_ud, fork_mem *m,
                        ss_errbuf *eb)
{
    gsim *f = s->spare && s->spare->n ? s->spare->fork[--s->spare->n] : NULL;
    if (f) {
        mem_take(f, m);
        memset(f, 0, sizeof *f);
    } else if (!(f = ss_calloc(1, sizeof *f))) {
        return NULL;
    }
    f->fork = 1;
    f->spare = s->spare;
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
    /* scratch that its users size as they go */
    f->dec = m->dec, f->dec_cap = m->dec_cap, m->dec.run = NULL;
    f->dec.n_run = f->dec.n_preempt = f->dec.n_swap_out = f->dec.n_swap_in = 0;
    f->dec.n_reject = 0;
    f->run_cross = m->run_cross, f->run_cap = m->run_cap, m->run_cross = NULL;
    return f;
}

/* The graph comes with the forked containers' requests and those of the partners of their
 * offloads in flight, and of the partners' partners: a partner runs again in the fork when its
 * request comes home, and then so does the guest it hosts, whose request must be there too.
 * Every other container is frozen. */
static int fork_graph(gsim *f, const gsim *s, const gmg_id *ctrs, uint32_t n, fork_mem *m)
{
    uint8_t *keep = ss_calloc(s->g->n_ctrs ? s->g->n_ctrs : 1, 1);
    if (!keep)
        return SS_ENOMEM;
    for (uint32_t i = 0; i < n; i++)
        keep[ctrs[i]] = 1;
    for (int grew = 1; grew;) {
        grew = 0;
        for (uint32_t i = 0; i < s->n_offs; i++) {
            const offload *o = &s->offs[i];
            if (o->in_use && keep[o->home] != keep[o->helper]) {
                keep[o->home] = keep[o->helper] = 1;
                grew = 1;
            }
        }
    }
    int rc = gmg_recopy_part(&m->g, s->g, keep);
    ss_free(keep);
    f->g = m->g, m->g = NULL;
    if (rc)
        return rc;
    f->gst = m->gst, m->gst = NULL;
    if (fit((void **)&f->gst, m->n_gpus, s->g->n_gpus, sizeof *f->gst))
        return SS_ENOMEM;
    memcpy(f->gst, s->gst, s->g->n_gpus * sizeof *f->gst);
    return SS_OK;
}

/* Its engine (m's, emptied, or a new one) at s's present, with the handlers of what a fork
 * runs. */
static int fork_engine(gsim *f, const gsim *s, fork_mem *m)
{
    if (m->des)
        des_engine_reset(m->des, f);
    else if (des_engine_create(&m->des, f))
        return SS_ENOMEM;
    f->des = m->des, m->des = NULL;
    des_start_at(f->des, des_now(s->des));
    des_handler_set(f->des, EV_ITER_DONE, gs_on_iter_done);
    des_handler_set(f->des, EV_CTR_READY, gs_on_ctr_ready);
    des_handler_set(f->des, EV_GUEST, gs_on_guest);
    des_handler_set(f->des, EV_OFFLOAD_DONE, gs_on_offload_done);
    des_handler_set(f->des, EV_KV_LOADED, gs_on_kv_loaded);
    return SS_OK;
}

int gsim_fork(const gsim *s, const gmg_id *ctrs, uint32_t n, gsim_sink_fn *sink, void *sink_ud,
              gsim **out, ss_errbuf *eb)
{
    if (s->srun) /* its iterations' ends move with the other shares' (gsim_share.c) */
        return ss_err(eb, SS_ENOTSUP, "fork: a GPU is shared by MPS or time slicing");
    for (uint32_t i = 0; i < n; i++) {
        if (ctrs[i] >= s->g->n_ctrs)
            return ss_err(eb, SS_EINVAL, "fork: no container %u", ctrs[i]);
        const gmg_container *c = &s->g->ctrs[ctrs[i]];
        if (c->migrating_out || c->blocks_reserved)
            return ss_err(eb, SS_EINVAL, "fork: container %u has a live migration in flight",
                          c->id);
    }
    /* Between events of the replay (and at a placement tick, where no cohort forms) every
     * request is up to date: no decode cohort holds any back (gsim_cohort.c). */
    if (SS_NEVER(s->n_coh_on))
        return ss_err(eb, SS_EINVAL, "fork: decode cohorts in flight");
    /* A fork copies neither the KV hand-offs between a disaggregated tenant's pools nor their
     * list of decode instances (SliceScheduler, the forks' one user, refuses such tenants). */
    for (uint32_t i = 0; i < s->n_ten; i++)
        if (s->ten[i].n_dcands)
            return ss_err(eb, SS_EINVAL, "fork: tenant %s serves from separate prefill and "
                          "decode pools, which what-if forks do not model", s->ten[i].t.name);
    fork_mem m = {0};
    gsim *f = fork_shell(s, sink, sink_ud, &m, eb);
    int rc = f ? fork_graph(f, s, ctrs, n, &m) : SS_ENOMEM;
    if (!rc)
        fork_predictions(f);
    if (!rc)
        rc = fork_tenants(f, s, &m);
    if (!rc)
        rc = fork_ctr_state(f, s, &m);
    if (!rc)
        rc = fork_offloads(f, s, ctrs, n, &m);
    if (!rc) /* the idle slices and counters: a fork records no request, gap or lookup */
        metrics_init_counters(&f->m, s->cfg.warmup);
    if (!rc)
        rc = fork_engine(f, s, &m);
    if (!rc)
        rc = fork_events(f, ctrs, n);
    if (!rc) { /* the cohorts' tables too, as they were */
        f->coh = m.coh, f->n_coh = m.n_coh, m.coh = NULL, m.n_coh = 0;
        rc = gs_coh_alloc(f);
    }
    if (!rc)
        gs_coh_refresh(f);
    mem_free(&m); /* what this fork did not take */
    if (rc) {
        if (f)
            f->spare = NULL; /* not kept half made */
        gsim_destroy(&f);
        return ss_err(eb, rc, "fork: out of memory");
    }
    *out = f;
    return SS_OK;
}
