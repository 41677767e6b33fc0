/* Cluster actions a cluster policy asks for at its ticks: re-allocation of a container to
 * another tenant (drain, tear down, load), auto-scaling from and to standby, and the live
 * migrations it starts (gsim_migrate.c). */
#include "gsim/gsim_int.h"

#include "core/ss_alloc.h"

#include <string.h>

/* ---- cluster policies: re-allocation, draining, loading ------------------------------------ */

static void cands_remove(tenant_state *t, gmg_id c)
{
    uint32_t j = 0;
    for (uint32_t i = 0; i < t->n_cands; i++)
        if (t->cands[i] != c)
            t->cands[j++] = t->cands[i];
    t->n_cands = j;
}

static void cands_insert(tenant_state *t, gmg_id c)
{
    uint32_t i = t->n_cands++;
    for (; i > 0 && t->cands[i - 1] > c; i--)
        t->cands[i] = t->cands[i - 1];
    t->cands[i] = c;
}

/* Move the queued requests of a container that stops taking requests to the other active
 * containers of its tenant (chosen by the router, as if they had just arrived). */
static void reroute_waiting(gsim *s, gmg_container *c)
{
    tenant_state *t = &s->ten[c->tenant];
    while (c->waiting.head != GMG_NONE && t->n_cands) {
        gmg_id r = c->waiting.head;
        gmg_req_dequeue(s->g, c, r);
        gmg_id to = gs_route(s, t, r);
        if (to == GMG_NONE) { /* the run stops: the request stays where it was */
            gmg_req_enqueue(s->g, c, r, GMG_ENQ_FRONT);
            return;
        }
        gmg_req_reroute(s->g, &s->g->ctrs[to], r, gs_enqueue_where(s, 0));
        if (!s->g->ctrs[to].busy)
            gs_start_iteration(s, &s->g->ctrs[to]);
    }
}

/* A draining container with nothing left starts loading its next tenant's weights. */
void gs_maybe_drained(gsim *s, gmg_container *c)
{
    if (c->busy || c->waiting.n || c->running.n || c->swapped.n || c->migrating_out ||
        c->blocks_reserved || c->blocks_offloaded || c->n_loading ||
        s->cs[c->id].guest != GMG_NONE)
        return;
    gs_unstage(s, c); /* guest weights go with the container */
    if (s->cs[c->id].next_tenant < 0) { /* scaled down: back to standby */
        tenant_state *t = &s->ten[c->tenant];
        gmg_ctr_standby(c);
        t->standby[t->n_standby++] = c->id;
        return;
    }
    const tenant_state *to = &s->ten[s->cs[c->id].next_tenant];
    double bytes = cost_weight_bytes_per_gpu(to->t.model, to->t.tp, to->t.pp);
    gmg_ctr_load(c, ss_time_add(ss_time_add(des_now(s->des), s->cd.setup_ns),
                                ss_time_from_ns_sat(bytes / s->cd.load_bw * 1e9)));
    gs_sched(s, s->des, c->ready_at, EV_CTR_READY, c->id);
}

void gs_on_ctr_ready(des_engine *e, des_event *ev, void *ctx)
{
    (void)e;
    gsim *s = ctx;
    gmg_container *c = &s->g->ctrs[ev->target];
    tenant_state *to = &s->ten[s->cs[c->id].next_tenant];
    int moved = c->tenant != to->spec.tenant;
    int rc = gmg_container_retarget(s->g, c, &to->spec, s->eb);
    if (rc) {
        gs_fail(s, rc);
        return;
    }
    size_t sz = pol_batch_ctr_priv_size(s->batch);
    if (sz)
        memset(c->batch_priv, 0, sz);
    s->m.reallocations += moved;
    gmg_ctr_activate(c);
    to->n_incoming--;
    cands_insert(to, c->id);
}

/* Apply one re-allocation if it is still valid (else it is declined and counted): the container
 * is active, its tenant keeps at least one other, and the receiving tenant stays within its
 * max_replicas. */
static void apply_realloc(gsim *s, const pol_realloc *ra)
{
    if (ra->ctr >= s->g->n_ctrs || ra->to >= s->n_ten)
        return;
    gmg_container *c = &s->g->ctrs[ra->ctr];
    tenant_state *from = &s->ten[c->tenant], *to = &s->ten[ra->to];
    if (c->status != GMG_CTR_ACTIVE || ra->to == c->tenant || from->n_cands < 2 ||
        to->n_cands + to->n_incoming >= to->t.max_replicas || c->pp != 1 ||
        to->t.tp != c->tp || to->t.pp != 1 || from->t.share.kind || to->t.share.kind) {
        s->m.advice_declined++;
        return;
    }
    cands_remove(from, c->id);
    to->n_incoming++;
    s->cs[c->id].next_tenant = ra->to;
    gmg_ctr_drain(c);
    reroute_waiting(s, c);
    gs_maybe_drained(s, c);
}

/* ---- auto-scaling ------------------------------------------------------------------------ */

static void standby_remove(tenant_state *t, gmg_id c)
{
    uint32_t j = 0;
    for (uint32_t i = 0; i < t->n_standby; i++)
        if (t->standby[i] != c)
            t->standby[j++] = t->standby[i];
    t->n_standby = j;
}

static void scale_up(gsim *s, gmg_id id)
{
    if (id >= s->g->n_ctrs)
        return;
    if (s->g->ctrs[id].status != GMG_CTR_STANDBY) {
        s->m.advice_declined++;
        return;
    }
    gmg_container *c = &s->g->ctrs[id];
    tenant_state *t = &s->ten[c->tenant];
    standby_remove(t, id);
    t->n_incoming++;
    s->cs[id].next_tenant = c->tenant;
    gs_maybe_drained(s, c); /* empty: starts loading at once */
    s->m.scale_ups++;
}

static void scale_down(gsim *s, gmg_id id)
{
    if (id >= s->g->n_ctrs)
        return;
    gmg_container *c = &s->g->ctrs[id];
    tenant_state *t = &s->ten[c->tenant];
    if (c->status != GMG_CTR_ACTIVE || t->n_cands <= t->t.replicas) {
        s->m.advice_declined++;
        return;
    }
    cands_remove(t, id);
    s->cs[id].next_tenant = -1; /* to standby */
    gmg_ctr_drain(c);
    reroute_waiting(s, c);
    gs_maybe_drained(s, c);
    s->m.scale_downs++;
}

static void build_views(gsim *s)
{
    for (uint32_t i = 0; i < s->n_ten; i++) {
        const tenant_state *t = &s->ten[i];
        s->views[i] = (pol_tenant_view){
            .name = t->t.name, .model = t->t.model, .tp = t->t.tp, .pp = t->t.pp,
            .replicas = t->t.replicas, .max_replicas = t->t.max_replicas, .tiers = t->t.tiers,
            .active = t->cands, .n_active = t->n_cands, .standby = t->standby,
            .n_standby = t->n_standby,
        };
    }
}

/* Advice that names what does not exist (a container, tenant or request slot out of range), or
 * a migration within one container or across tenants, is the policy's malfunction: 0, or the
 * error that stops the run. Advice that the state no longer allows (a full destination, a
 * container already draining) is declined where it is applied. */
static int check_advice(gsim *s, const pol_cluster_decision *d)
{
    const char *why = NULL;
    uint32_t n_ctrs = s->g->n_ctrs, i = 0;
    for (i = 0; !why && i < d->n_realloc; i++)
        if (d->realloc[i].ctr >= n_ctrs || d->realloc[i].to >= s->n_ten)
            why = "a re-allocation names a container or tenant that does not exist";
    for (i = 0; !why && i < d->n_migrate; i++) {
        const pol_migration *m = &d->migrate[i];
        if (m->req >= s->g->n_slots || m->from >= n_ctrs || m->to >= n_ctrs)
            why = "a migration names a request slot or container that does not exist";
        else if (m->from == m->to || s->g->ctrs[m->from].tenant != s->g->ctrs[m->to].tenant)
            why = "a migration stays in its container or crosses tenants";
    }
    for (i = 0; !why && i < d->n_scale_up; i++)
        if (d->scale_up[i] >= n_ctrs)
            why = "a scale-up names a container that does not exist";
    for (i = 0; !why && i < d->n_scale_down; i++)
        if (d->scale_down[i] >= n_ctrs)
            why = "a scale-down names a container that does not exist";
    if (!why && (d->n_realloc > d->cap_realloc || d->n_migrate > d->cap_migrate ||
                 d->n_scale_up > d->cap_scale_up || d->n_scale_down > d->cap_scale_down))
        why = "more advice than its arrays hold";
    if (!why)
        return SS_OK;
    return ss_err(s->eb, SS_EINVAL, "cluster policy '%s' malfunction: at %.9g s %s",
                  pol_cluster_name(s->cluster), ss_time_to_s(des_now(s->des)), why);
}

void gs_on_cluster_tick(des_engine *e, des_event *ev, void *ctx)
{
    (void)ev;
    gsim *s = ctx;
    build_views(s);
    pol_cluster_view v = {.now = des_now(e), .tenants = s->views, .n_tenants = s->n_ten};
    pol_cluster_tick(s->cluster, s->g, &v, &s->cd);
    int rc = check_advice(s, &s->cd);
    if (rc) {
        gs_fail(s, rc);
        return;
    }
    if (s->cd.n_realloc || s->cd.n_migrate || s->cd.n_scale_up || s->cd.n_scale_down)
        for (uint32_t i = 0; i < s->g->n_ctrs; i++)
            s->cs[i].epoch++;
    for (uint32_t i = 0; i < s->cd.n_realloc; i++)
        apply_realloc(s, &s->cd.realloc[i]);
    for (uint32_t i = 0; i < s->cd.n_migrate; i++)
        gs_start_migration(s, &s->cd.migrate[i]);
    for (uint32_t i = 0; i < s->cd.n_scale_up; i++)
        scale_up(s, s->cd.scale_up[i]);
    for (uint32_t i = 0; i < s->cd.n_scale_down; i++)
        scale_down(s, s->cd.scale_down[i]);
    /* keep ticking while anything can still happen */
    if ((s->have_next || s->g->in_flight) && !s->rc)
        gs_sched(s, e, ss_time_add(des_now(e), pol_cluster_period(s->cluster)), EV_CLUSTER_TICK, 0);
}

int gs_alloc_cluster_state(gsim *s, ss_errbuf *eb)
{
    pol_cluster_decision *d = &s->cd;
    s->free_mig = GMG_NONE;
    d->stop_copy_blocks = 16;
    d->max_stages = 3;
    d->cap_migrate = 256;
    d->cap_realloc = d->cap_scale_up = d->cap_scale_down = 16;
    s->cs = ss_calloc(s->g->n_ctrs ? s->g->n_ctrs : 1, sizeof *s->cs);
    for (uint32_t i = 0; s->cs && i < s->g->n_ctrs; i++)
        s->cs[i].guest = GMG_NONE;
    s->views = ss_calloc(s->n_ten, sizeof *s->views);
    d->migrate = ss_calloc(d->cap_migrate, sizeof *d->migrate);
    d->realloc = ss_calloc(d->cap_realloc, sizeof *d->realloc);
    d->scale_up = ss_calloc(d->cap_scale_up, sizeof *d->scale_up);
    d->scale_down = ss_calloc(d->cap_scale_down, sizeof *d->scale_down);
    if (!s->cs || !s->views || !d->migrate || !d->realloc || !d->scale_up || !d->scale_down)
        return ss_err(eb, SS_ENOMEM, "cluster policy: out of memory");
    return SS_OK;
}

void gs_free_cluster_state(gsim *s)
{
    ss_free(s->cs);
    ss_free(s->views);
    ss_free(s->cd.migrate);
    ss_free(s->cd.realloc);
    ss_free(s->cd.scale_up);
    ss_free(s->cd.scale_down);
    ss_free(s->migs);
    ss_free(s->offs);
}
