/* Live migration (Llumnix): a running request's KV blocks are copied in stages while it keeps
 * decoding on the source; the last stage stops it and copies what is left. */
#include "gsim/gsim_int.h"

#include "core/ss_alloc.h"

#include <string.h>

/* ---- live migration (Llumnix) ----------------------------------------------------------- */

migration *gs_mig_at(gsim *s, gmg_id m) { return &s->migs[m]; }

static gmg_id mig_alloc(gsim *s)
{
    if (s->free_mig == GMG_NONE) {
        size_t cap = s->cap_migs;
        if (ss_grow((void **)&s->migs, &cap, s->n_migs + 1, sizeof *s->migs))
            return GMG_NONE;
        s->cap_migs = (uint32_t)cap;
        s->migs[s->n_migs].next_free = GMG_NONE;
        s->free_mig = s->n_migs++;
    }
    gmg_id m = s->free_mig;
    s->free_mig = s->migs[m].next_free;
    memset(&s->migs[m], 0, sizeof s->migs[m]);
    return m;
}

static void mig_free(gsim *s, gmg_id m)
{
    s->migs[m].next_free = s->free_mig;
    s->free_mig = m;
}

/* Copy `blocks` KV blocks from the source to the destination over the link between them, at
 * that link's efficiency (gsim_link_eff), queueing behind earlier transfers on it; schedules
 * the stage's end. 0 or SS_ENOMEM. */
static int mig_copy(gsim *s, gmg_id mid, uint32_t blocks)
{
    migration *m = gs_mig_at(s, mid);
    gmg_container *from = &s->g->ctrs[m->from], *to = &s->g->ctrs[m->to];
    double per_gpu = gmg_swap_bytes_per_gpu(s->g, from, blocks);
    /* every GPU of the replica (tp x pp) sends its shard of the blocks to its counterpart */
    double eff = gs_link_eff_between(s, from->gpu0, to->gpu0);
    ss_time end = gmg_transfer(s->g, from->gpu0, to->gpu0, from->tp * from->pp, per_gpu, eff,
                               des_now(s->des));
    s->m.migration_bytes += per_gpu * from->tp * from->pp;
    m->copied += blocks;
    m->stage++;
    des_event *ev = gs_sched(s, s->des, end, EV_MIG_STAGE, mid);
    return ev ? SS_OK : s->rc;
}

/* Reserve n more blocks at the destination; 0 when it has no room (the migration aborts). */
static int mig_reserve(gsim *s, migration *m, uint32_t n)
{
    gmg_container *to = &s->g->ctrs[m->to];
    if (to->status != GMG_CTR_ACTIVE || n > to->blocks_free)
        return 0;
    gmg_reserve_blocks(s->g, to, n);
    gs_kvp_charge(s, to); /* what the reservation evicted from its prefix cache */
    m->reserved += n;
    return 1;
}

static void mig_end(gsim *s, gmg_id mid)
{
    migration *m = gs_mig_at(s, mid);
    gmg_req_at(s->g, m->req)->mig = GMG_NONE;
    s->g->ctrs[m->from].migrating_out--;
    m->aborted = 1; /* a stage event still pending finds it ended */
}

/* The request finished, was preempted or rejected, or the destination is full: give the
 * reservation back. The request stays where it is. */
static void mig_abort(gsim *s, gmg_id mid)
{
    migration *m = gs_mig_at(s, mid);
    if (m->aborted)
        return;
    gmg_release_reserved(s->g, &s->g->ctrs[m->to], m->reserved);
    m->reserved = 0;
    s->m.migrations_aborted++;
    mig_end(s, mid);
}

void gs_maybe_abort_migration(gsim *s, gmg_req *q)
{
    if (q->mig != GMG_NONE)
        mig_abort(s, q->mig);
}

/* Stop the request on the source and copy what is left. */
void gs_mig_begin_final(gsim *s, gmg_id mid)
{
    migration *m = gs_mig_at(s, mid);
    gmg_req *q = gmg_req_at(s->g, m->req);
    gmg_container *from = &s->g->ctrs[m->from];
    uint32_t left = q->blocks - m->copied;
    if (!mig_reserve(s, m, left)) {
        mig_abort(s, mid);
        return;
    }
    gmg_req_migrate_out(s->g, from, m->req);
    m->final = 1;
    m->want_final = 0;
    if (mig_copy(s, mid, left))
        gs_fail(s, ss_err(s->eb, SS_ENOMEM, "event queue: out of memory"));
}

/* The request resumes on the destination with the copied blocks. */
static void mig_commit(gsim *s, gmg_id mid)
{
    migration *m = gs_mig_at(s, mid);
    gmg_container *from = &s->g->ctrs[m->from], *to = &s->g->ctrs[m->to];
    gmg_req_migrate_in(s->g, from, to, m->req, m->reserved);
    s->m.migrations++;
    mig_end(s, mid);
    mig_free(s, mid);
    if (!to->busy)
        gs_start_iteration(s, to);
    if (!from->busy)
        gs_start_iteration(s, from);
    if (from->status == GMG_CTR_DRAINING && !from->busy)
        gs_maybe_drained(s, from);
}

void gs_on_mig_stage(des_engine *e, des_event *ev, void *ctx)
{
    (void)e;
    gsim *s = ctx;
    gmg_id mid = ev->target;
    migration *m = gs_mig_at(s, mid);
    s->cs[m->from].epoch++;
    s->cs[m->to].epoch++;
    if (m->aborted) { /* ended while this stage was copying */
        mig_free(s, mid);
        return;
    }
    if (m->final) {
        mig_commit(s, mid);
        return;
    }
    gmg_req *q = gmg_req_at(s->g, m->req);
    uint32_t delta = q->blocks - m->copied;
    if (delta < s->cd.stop_copy_blocks || m->stage >= s->cd.max_stages) {
        if (q->q_tokens) /* in the source's executing iteration: stop it when that ends */
            m->want_final = 1;
        else
            gs_mig_begin_final(s, mid);
        return;
    }
    if (!mig_reserve(s, m, delta))
        mig_abort(s, mid);
    else if (mig_copy(s, mid, delta))
        gs_fail(s, ss_err(s->eb, SS_ENOMEM, "event queue: out of memory"));
}

/* Start one migration the policy asked for, if it is still valid. */
void gs_start_migration(gsim *s, const pol_migration *pm)
{
    if (pm->req >= s->g->n_slots || pm->from >= s->g->n_ctrs || pm->to >= s->g->n_ctrs)
        return;
    gmg_req *q = gmg_req_at(s->g, pm->req);
    gmg_container *from = &s->g->ctrs[pm->from], *to = &s->g->ctrs[pm->to];
    if (q->state != GMG_REQ_RUNNING || q->container != pm->from || q->mig != GMG_NONE ||
        pm->from == pm->to || from->tenant != to->tenant || to->status != GMG_CTR_ACTIVE ||
        from->block_bytes != to->block_bytes) {
        s->m.advice_declined++;
        return;
    }
    gmg_id mid = mig_alloc(s);
    if (mid == GMG_NONE) {
        gs_fail(s, ss_err(s->eb, SS_ENOMEM, "migrations: out of memory"));
        return;
    }
    migration *m = gs_mig_at(s, mid);
    *m = (migration){.req = pm->req, .from = pm->from, .to = pm->to, .next_free = GMG_NONE};
    q->mig = mid;
    from->migrating_out++;
    uint32_t n = q->blocks;
    if (!mig_reserve(s, m, n)) {
        mig_abort(s, mid); /* destination full */
        mig_free(s, mid);
        return;
    }
    if (mig_copy(s, mid, n))
        gs_fail(s, ss_err(s->eb, SS_ENOMEM, "event queue: out of memory"));
}
