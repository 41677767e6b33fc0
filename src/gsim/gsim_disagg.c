/* Disaggregated prefill and decode: a tenant with separate pools routes each request to a
 * prefill instance; when its prefill emits the first token, its KV (every block it holds) goes
 * to a decode instance over the modelled link, which then decodes it. The prefill instance
 * holds the KV until the transfer lands; the decode instance reserves the blocks when the
 * transfer starts, and a request finding no decode instance with room waits, first come first
 * served, in its tenant's hand-off queue (DistServe's pull model: the prefill instance's memory
 * is the queue). Not for the batching on either side: each instance runs the batching policy
 * as any container does. */
#include "gsim/gsim_int.h"

#include "core/ss_alloc.h"

#include <string.h>

/* ---- setup ------------------------------------------------------------------------------ */

/* Whether any tenant of s is disaggregated. */
static int any_disagg(const gsim_config *c)
{
    for (uint32_t i = 0; i < c->n_tenants; i++)
        if (gsim_tenant_disagg(&c->tenants[i]))
            return 1;
    return 0;
}

/* What disaggregated serving cannot be combined with: one line naming it. */
static int check_supported(const gsim *s, ss_errbuf *eb)
{
    const gsim_config *c = &s->cfg;
    if (c->ops && strcmp(c->ops, "home"))
        return ss_err(eb, SS_EINVAL, "disaggregated prefill/decode does not support operator "
                      "placement '%s' (use ops = home)", c->ops);
    if (strcmp(pol_cluster_name(s->cluster), "container"))
        return ss_err(eb, SS_EINVAL, "disaggregated prefill/decode does not support cluster "
                      "policy '%s' (live migration, auto-scaling; use cluster = container)",
                      pol_cluster_name(s->cluster));
    if (pol_cluster_period(s->cluster) > 0)
        return ss_err(eb, SS_EINVAL, "disaggregated prefill/decode does not support "
                      "re-allocation (realloc_period_s must be 0)");
    for (uint32_t i = 0; i < c->n_tenants; i++) {
        const gsim_tenant *t = &c->tenants[i];
        if (gsim_tenant_disagg(t) && t->pp > 1)
            return ss_err(eb, SS_EINVAL, "tenant %s: disaggregated prefill/decode does not "
                          "support pipeline parallelism (pp = %u)", t->name, t->pp);
    }
    return SS_OK;
}

int gs_disagg_create(gsim *s, ss_errbuf *eb)
{
    s->free_kvx = GMG_NONE;
    if (!any_disagg(&s->cfg))
        return SS_OK;
    int rc = check_supported(s, eb);
    if (!rc)
        rc = pol_route_create(&s->proute, "prefill-affinity", s->cfg.params,
                              pol_cluster_name(s->cluster), &s->route_rng, eb);
    if (!rc)
        rc = pol_route_create(&s->droute, "decode-load", s->cfg.params,
                              pol_cluster_name(s->cluster), &s->route_rng, eb);
    return rc;
}

void gs_disagg_destroy(gsim *s)
{
    pol_route_destroy(&s->proute);
    pol_route_destroy(&s->droute);
    ss_free(s->kvx);
    ss_free(s->kv_cands);
    s->kvx = NULL;
    s->kv_cands = NULL;
}

/* Add tenant t's two pools: prefill instances (its routing candidates) and decode instances.
 * t->spec is the tenant's co-located spec; each pool gets its own TP degree and role. */
int gs_disagg_add(gsim *s, tenant_state *t, ss_errbuf *eb)
{
    const gsim_tenant *c = &t->t;
    gmg_ctr_spec spec = t->spec;
    spec.role = GMG_ROLE_PREFILL;
    spec.tp = c->prefill_tp ? c->prefill_tp : c->tp;
    gmg_id first = s->g->n_ctrs;
    int rc = gmg_add_containers(s->g, &spec, c->prefill_replicas, eb);
    for (gmg_id k = first; !rc && k < s->g->n_ctrs; k++)
        t->cands[t->n_cands++] = k;
    if (rc)
        return rc;
    if (!(t->dcands = ss_calloc(c->decode_replicas, sizeof *t->dcands)))
        return ss_err(eb, SS_ENOMEM, "tenants: out of memory");
    spec.role = GMG_ROLE_DECODE;
    spec.tp = c->decode_tp ? c->decode_tp : c->tp;
    first = s->g->n_ctrs;
    rc = gmg_add_containers(s->g, &spec, c->decode_replicas, eb);
    for (gmg_id k = first; !rc && k < s->g->n_ctrs; k++) {
        t->dcands[t->n_dcands++] = k;
        if (s->g->ctrs[k].blocks_total > t->dmax_blocks)
            t->dmax_blocks = s->g->ctrs[k].blocks_total;
    }
    /* scratch for a pick: no tenant has more decode instances than the cluster containers */
    gmg_id *scratch = rc ? NULL : ss_realloc(s->kv_cands, s->g->n_ctrs * sizeof *s->kv_cands);
    if (!rc && !scratch)
        return ss_err(eb, SS_ENOMEM, "tenants: out of memory");
    if (!rc)
        s->kv_cands = scratch;
    return rc;
}

/* ---- the hand-off ----------------------------------------------------------------------- */

static gmg_id kvx_alloc(gsim *s)
{
    if (s->free_kvx == GMG_NONE) {
        size_t cap = s->cap_kvx;
        if (ss_grow((void **)&s->kvx, &cap, s->n_kvx + 1, sizeof *s->kvx))
            return GMG_NONE;
        s->cap_kvx = (uint32_t)cap;
        s->kvx[s->n_kvx].next = GMG_NONE;
        s->free_kvx = s->n_kvx++;
    }
    gmg_id x = s->free_kvx;
    s->free_kvx = s->kvx[x].next;
    memset(&s->kvx[x], 0, sizeof s->kvx[x]);
    s->kvx[x].next = GMG_NONE;
    return x;
}

static void kvx_free(gsim *s, gmg_id x)
{
    s->kvx[x].next = s->free_kvx;
    s->free_kvx = x;
}

/* When the KV of x, starting now towards `to`, lands: the ports of both instances' GPUs are
 * taken for its whole transfer (gmg_transfer: bytes / (link bandwidth x the link's efficiency,
 * gsim_link_eff) + the link's latency,
 * min(TP) parallel GPU pairs, so the side with fewer GPUs bounds it). With kv_transfer = end,
 * or after a wait for decode blocks (the KV is all there then), it starts now. Layer by layer,
 * it started during the prefill: layer k's share leaves once layer k is computed, so of the
 * L shares only the last one's (with the latency) and any excess of the other L - 1 over the
 * compute of the L - 1 layers after them stays exposed past the prefill's end:
 *   exposed = (share / bw' + latency) + max(0, (L - 1) x (share / bw' - layer compute)),
 * bw' = bw x efficiency. */
static ss_time kv_land_time(gsim *s, const kv_xfer *x, const gmg_container *from,
                            const gmg_container *to, ss_time now)
{
    uint32_t n = from->tp < to->tp ? from->tp : to->tp;
    double per_gpu = x->bytes / n, eff = gs_link_eff_between(s, from->gpu0, to->gpu0);
    ss_time earliest = now;
    if (x->layer_ns >= 0 && now == x->ready) {
        const gmg_link *l = gmg_link_between(s->g, from->gpu0, to->gpu0);
        uint32_t layers = from->model->layers;
        double share = per_gpu / layers;
        ss_time last = gmg_transfer_ns(l, share, eff);
        ss_time send = ss_time_from_ns_sat(share / (l->bw * eff) * 1e9);
        ss_time excess = send > x->layer_ns ? (ss_time)(layers - 1) * (send - x->layer_ns) : 0;
        earliest = now + last + excess - gmg_transfer_ns(l, per_gpu, eff);
    }
    return gmg_transfer(s->g, from->gpu0, to->gpu0, n, per_gpu, eff, earliest);
}

/* Start x towards decode instance `to`: reserve its blocks there and schedule its landing. */
static void kv_start(gsim *s, gmg_id xid, gmg_container *to)
{
    kv_xfer *x = &s->kvx[xid];
    gmg_container *from = &s->g->ctrs[x->from];
    ss_time now = des_now(s->des);
    gmg_reserve_blocks(s->g, to, x->blocks);
    gs_kvp_charge(s, to); /* what the reservation evicted from its prefix cache */
    x->to = to->id;
    x->start = now;
    ss_time end = kv_land_time(s, x, from, to, now);
    if (s->obs.on_kv_transfer) {
        const gmg_link *l = gmg_link_between(s->g, from->gpu0, to->gpu0);
        uint32_t n = from->tp < to->tp ? from->tp : to->tp;
        double eff = gs_link_eff_between(s, from->gpu0, to->gpu0);
        ss_time begin = end - gmg_transfer_ns(l, x->bytes / n, eff); /* layer by layer: during
                                                                        the prefill */
        s->obs.on_kv_transfer(s->obs.ud, s->g, from, to, gmg_req_get(s->g, x->req), x->bytes,
                              begin, end);
    }
    s->cs[to->id].epoch++;
    gs_sched(s, s->des, end, EV_KV_DONE, xid);
}

/* The decode instance the decode pick chooses for x among t's active decode instances with
 * x->blocks free; GMG_NONE when none has room (or after failing the run on a malfunction). */
static gmg_id kv_pick(gsim *s, tenant_state *t, const kv_xfer *x)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < t->n_dcands; i++) {
        const gmg_container *c = &s->g->ctrs[t->dcands[i]];
        if (c->status == GMG_CTR_ACTIVE && c->blocks_free >= x->blocks)
            s->kv_cands[n++] = c->id;
    }
    if (!n)
        return GMG_NONE;
    gmg_id ci = pol_route_pick(s->droute, s->g, x->req, s->kv_cands, n);
    for (uint32_t i = 0; i < n; i++)
        if (s->kv_cands[i] == ci)
            return ci;
    if (!s->rc)
        gs_fail(s, ss_err(s->eb, SS_EINVAL, "routing policy '%s' malfunction: at %.9g s it sent "
                          "the KV of request %llu of tenant %s to container %u, not one of the %u "
                          "decode instances with room", pol_route_name(s->droute),
                          ss_time_to_s(des_now(s->des)),
                          (unsigned long long)s->g->reqs[x->req].trace_id, t->t.name, ci, n));
    return GMG_NONE;
}

void gs_disagg_pump(gsim *s, tenant_state *t)
{
    while (t->kv_head != GMG_NONE && !s->rc) {
        gmg_id xid = t->kv_head;
        gmg_id to = kv_pick(s, t, &s->kvx[xid]);
        if (to == GMG_NONE)
            return; /* first come, first served: the head waits for room */
        t->kv_head = s->kvx[xid].next;
        if (t->kv_head == GMG_NONE)
            t->kv_tail = GMG_NONE;
        s->kvx[xid].next = GMG_NONE;
        kv_start(s, xid, &s->g->ctrs[to]);
    }
}

/* The per-layer compute of c's iteration that just ended (what hides the earlier layers' KV
 * sends), or -1 under kv_transfer = end. */
static ss_time layer_ns_of(const gsim *s, gmg_container *c)
{
    if (s->ten[c->tenant].t.kv_transfer == GSIM_KV_END)
        return -1;
    cost_split sp;
    gs_cost_split(s, c->cost, &c->iter.batch, &sp);
    return sp.layer_ns;
}

void gs_disagg_handoff(gsim *s, gmg_container *c, gmg_id r)
{
    tenant_state *t = &s->ten[c->tenant];
    gmg_req *q = gmg_req_at(s->g, r);
    if (q->blocks > t->dmax_blocks) { /* no decode instance could ever hold it */
        gs_reject(s, c, r, POL_REJECT_KV);
        return;
    }
    gmg_id xid = kvx_alloc(s);
    if (xid == GMG_NONE) {
        gs_fail(s, ss_err(s->eb, SS_ENOMEM, "KV transfers: out of memory"));
        return;
    }
    kv_xfer *x = &s->kvx[xid];
    x->req = r;
    x->from = c->id;
    x->to = GMG_NONE;
    x->blocks = q->blocks;
    x->ready = des_now(s->des);
    x->layer_ns = layer_ns_of(s, c);
    x->bytes = gmg_swap_bytes_per_gpu(s->g, c, q->blocks) * c->tp; /* every GPU's shard */
    gmg_req_kv_out(s->g, c, r);
    if (t->kv_tail == GMG_NONE)
        t->kv_head = xid;
    else
        s->kvx[t->kv_tail].next = xid;
    t->kv_tail = xid;
    gs_disagg_pump(s, t);
}

void gs_on_kv_done(des_engine *e, des_event *ev, void *ctx)
{
    gsim *s = ctx;
    gmg_id xid = ev->target;
    kv_xfer *x = &s->kvx[xid];
    gmg_container *from = &s->g->ctrs[x->from], *to = &s->g->ctrs[x->to];
    gmg_req *q = gmg_req_at(s->g, x->req);
    ss_time now = des_now(e);
    gmg_req_kv_in(s->g, from, to, x->req, x->blocks);
    metrics_add_kv(&s->m, q->tenant, q->measured, x->bytes, now - x->start, x->start - x->ready);
    kvx_free(s, xid);
    s->cs[from->id].epoch++;
    s->cs[to->id].epoch++;
    if (!to->busy)
        gs_start_iteration(s, to);
    if (!from->busy) /* its freed blocks may admit a waiting prefill */
        gs_start_iteration(s, from);
}
