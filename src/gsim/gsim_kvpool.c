/* The KV pool below the prefix caches, as the simulator runs it: the pool made at start-up, the
 * lookup that continues a request's chain past its GPU-cache match at admission, the choice
 * between loading the blocks found and recomputing them (whichever the clock says is cheaper),
 * the load itself (the request waits out of the batch; its GPUs serve others meanwhile) and
 * its completion. The pool's data and rules are gmg's (gmg/gmg_kvpool.c). */
#include "gsim/gsim_int.h"

#include "core/ss_log.h"

/* Where a block found in the pool sits, seen from the loading container. */
enum { SRC_CPU, SRC_SSD, SRC_REMOTE_CPU, SRC_REMOTE_SSD, SRC__COUNT };

int gs_kvp_create(gsim *s, ss_errbuf *eb)
{
    const gsim_kvpool_cfg *k = &s->cfg.kvpool;
    if (!(k->cpu_bytes > 0))
        return SS_OK;
    uint32_t nodes = s->cfg.nodes;
    for (uint32_t i = 0; i < s->g->n_gpus; i++)
        if (s->g->gpus[i].node + 1 > nodes)
            nodes = s->g->gpus[i].node + 1;
    if (gmg_kvp_create(s->g, (uint64_t)k->cpu_bytes, (uint64_t)k->ssd_bytes, k->cluster, nodes,
                       s->n_ten))
        return ss_err(eb, SS_ENOMEM, "KV pool: out of memory");
    return SS_OK;
}

/* The bandwidth a copy over a GPU's host link attains, bytes/s: the pool's cpu_bw (else the
 * GPU's pcie_bw) at the PCIe efficiency (gsim_link_eff). */
static double host_bw(const gsim *s)
{
    const gsim_kvpool_cfg *k = &s->cfg.kvpool;
    double bw = k->cpu_bw > 0 ? k->cpu_bw : s->cfg.gpu->pcie_bw;
    return bw * gsim_link_eff(&s->cfg, GMG_LINK_PCIE);
}

/* Seconds to load n blocks of c from source `src`: each hop on the way costs its latency plus
 * the bytes it carries over its bandwidth at its efficiency (gsim_link_eff), one after the
 * other (store and forward). The SSD reads the blocks whole (every GPU's share: one device per
 * node) at its read bandwidth; the network and the host link carry each GPU's share on its own
 * NIC and PCIe link, in parallel. */
static double load_s(const gsim *s, const gmg_container *c, int src, uint32_t n)
{
    const gsim_kvpool_cfg *k = &s->cfg.kvpool;
    double per_gpu = (double)n * c->block_bytes, whole = per_gpu * c->tp * c->pp;
    double t = k->cpu_latency_s + per_gpu / host_bw(s); /* host link: DRAM to the GPU */
    if (src == SRC_SSD || src == SRC_REMOTE_SSD)
        t += k->ssd_latency_s + whole / k->ssd_bw;
    if (src == SRC_REMOTE_CPU || src == SRC_REMOTE_SSD)
        t += s->cfg.gpu->net_latency_s +
             per_gpu / (s->cfg.gpu->net_bw * gsim_link_eff(&s->cfg, GMG_LINK_NET));
    return t;
}

ss_time gs_kvp_load_ns(const gsim *s, const gmg_container *c, const uint32_t n[4])
{
    ss_time ns = 0;
    for (int src = 0; src < SRC__COUNT; src++)
        if (n[src])
            ns = ss_time_add(ns, ss_time_from_ns_sat(load_s(s, c, src, n[src]) * 1e9));
    return ns;
}

/* Blocks of q's chain after its first h (cached on the GPU) that the pool holds, counted by
 * where they sit, at most max: the walk stops at the first block it lacks. With touch, each
 * becomes its tier's most recently used. Returns how many. */
static uint32_t pool_walk(gsim *s, const gmg_container *c, const gmg_req *q, uint32_t h,
                          uint32_t lim, uint32_t by_src[SRC__COUNT], int touch)
{
    const gmg_kvpool *p = s->g->kvp;
    uint32_t node = gmg_ctr_node(s->g, c), m = 0;
    for (uint32_t j = h; j < lim; j++) {
        uint32_t e = gmg_kvp_find(s->g, c, gmg_pc_key(q, j));
        if (e == GMG_NONE)
            break;
        const gmg_kvp_ent *x = &p->ent[e];
        by_src[(x->node == node ? 0 : 2) + (x->tier == GMG_KVP_SSD)]++;
        if (touch)
            gmg_kvp_touch(s->g, e);
        m++;
    }
    return m;
}

ss_time gs_host_free(const gsim *s, const gmg_container *c, ss_time at)
{
    ss_time t = at;
    for (uint32_t k = 0; k < c->tp * c->pp; k++)
        if (s->g->gpus[c->gpu0 + k].host_busy > t)
            t = s->g->gpus[c->gpu0 + k].host_busy;
    return t;
}

void gs_host_book(gsim *s, const gmg_container *c, ss_time until)
{
    for (uint32_t k = 0; k < c->tp * c->pp; k++)
        s->g->gpus[c->gpu0 + k].host_busy = until;
}

ss_time gs_kvp_offload_ns(const gsim *s, const gmg_container *c, uint32_t n)
{
    if (!n || s->cfg.kvpool.free_offloads)
        return 0;
    double per_gpu = (double)n * c->block_bytes; /* each GPU copies its share out, in parallel */
    return ss_time_from_ns_sat((s->cfg.kvpool.cpu_latency_s + per_gpu / host_bw(s)) * 1e9);
}

ss_time gs_kvp_offload(gsim *s, gmg_container *c, ss_time at)
{
    ss_time t = gs_host_free(s, c, at);
    ss_time off = gs_kvp_offload_ns(s, c, gmg_kvp_take_offloads(c));
    if (!off)
        return t;
    t = ss_time_add(t, off);
    gs_host_book(s, c, t);
    if (t > s->cs[c->id].offload_until)
        s->cs[c->id].offload_until = t;
    return t;
}

int gs_kvp_admit(gsim *s, gmg_container *c, gmg_id r, uint32_t h, uint32_t q_tok, uint32_t hold)
{
    gmg_req *q = gmg_req_at(s->g, r);
    uint32_t bt = c->block_tokens, total = q->prompt + q->generated;
    uint32_t lim = gmg_pc_blocks(q, bt);
    if (lim > (total - 1) / bt) /* at least one token is computed, as on a GPU-cache hit */
        lim = (total - 1) / bt;
    /* the loaded blocks land in blocks the policy granted the request and that are free */
    uint32_t left = total - h * bt, qt = q_tok < left ? q_tok : left;
    uint32_t grant = gmg_blocks_for(c, (uint64_t)h * bt + qt);
    if (hold > grant)
        grant = hold;
    uint32_t room = grant - h < c->blocks_free ? grant - h : c->blocks_free;
    if (lim > h + room)
        lim = h + room;
    if (lim <= h)
        return 0;
    uint32_t by_src[SRC__COUNT] = {0};
    uint32_t m = pool_walk(s, c, q, h, lim, by_src, 0);
    if (!m)
        return 0;
    /* the load queues on the host links behind what holds them: earlier loads, and the copies
     * out of blocks the cache offloaded since they were last charged */
    ss_time now = des_now(s->des), start = gs_kvp_offload(s, c, now);
    ss_time load = gs_kvp_load_ns(s, c, by_src);
    cost_batch b = {0};
    cost_batch_add_prefill(&b, (uint64_t)m * bt, (uint64_t)h * bt);
    ss_time recompute = cost_iteration_ns(c->cost, &b);
    ss_time ready = ss_time_add(start, load);
    int loaded = ready - now < recompute;
    uint32_t tiers[3] = {by_src[SRC_CPU], by_src[SRC_SSD],
                         by_src[SRC_REMOTE_CPU] + by_src[SRC_REMOTE_SSD]};
    if (q->measured && !s->fork)
        metrics_add_kvpool(&s->m, q->tenant, h, tiers, loaded,
                           (uint64_t)((double)m * c->block_bytes * c->tp * c->pp + 0.5),
                           ready - now);
    if (!loaded)
        return 0;
    if (ready == SS_TIME_MAX) {
        gs_past_range(s, s->des);
        return 0;
    }
    pool_walk(s, c, q, h, h + m, (uint32_t[SRC__COUNT]){0}, 1);
    /* the blocks the load lands in may hold idle cached blocks: they are evicted (offloaded)
     * first, and their copies out precede the load on the host links (the choice above priced
     * the load alone) */
    gmg_pc_reclaim(s->g, c, m);
    ss_time off = gs_kvp_offload_ns(s, c, gmg_kvp_take_offloads(c));
    ss_time off_end = ss_time_add(start, off);
    if (off && off_end > s->cs[c->id].offload_until)
        s->cs[c->id].offload_until = off_end;
    ready = ss_time_add(off_end, load);
    if (ready == SS_TIME_MAX) {
        gs_past_range(s, s->des);
        return 0;
    }
    gs_host_book(s, c, ready);
    gmg_req_load(s->g, c, r, h + m, ready);
    gs_sched(s, s->des, ready, EV_KV_LOADED, r);
    return 1;
}

void gs_on_kv_loaded(des_engine *e, des_event *ev, void *ctx)
{
    (void)e;
    gsim *s = ctx;
    gmg_req *q = gmg_req_at(s->g, ev->target);
    if (SS_NEVER(q->state != GMG_REQ_LOADING))
        return;
    gmg_container *c = &s->g->ctrs[q->container];
    gmg_req_load_done(s->g, c, ev->target, gs_enqueue_where(s, 1));
    if (c->busy)
        return;
    gs_start_iteration(s, c);
    if (!c->busy && c->status == GMG_CTR_DRAINING)
        gs_maybe_drained(s, c);
}

int gs_kvp_fork_events(gsim *f, const uint8_t *in_set)
{
    for (gmg_id r = 0; r < f->g->n_slots; r++) {
        const gmg_req *q = &f->g->reqs[r];
        if (q->state == GMG_REQ_LOADING && in_set[q->container] &&
            !des_schedule(f->des, q->kvp_ready, EV_KV_LOADED, r))
            return SS_ENOMEM;
    }
    return SS_OK;
}

void gs_kvp_finish(gsim *s)
{
    const gmg_kvpool *p = s->g->kvp;
    if (!p || s->fork)
        return;
    for (uint32_t t = 0; t < p->n_tenants; t++) {
        const gmg_kvp_tenant *x = &p->ten[t];
        metrics_kvpool *dst[2] = {&s->m.all.kvpool,
                                  t < s->m.n_tenants ? &s->m.tenants[t].kvpool : NULL};
        for (int i = 0; i < 2; i++) {
            if (!dst[i])
                continue;
            dst[i]->offload_blocks += x->offload_blocks;
            dst[i]->offload_bytes += x->offload_bytes;
            dst[i]->demotions += x->demotions;
            dst[i]->evictions += x->evictions;
        }
    }
    s->m.kvpool_peak[0] = p->peak[GMG_KVP_CPU];
    s->m.kvpool_peak[1] = p->peak[GMG_KVP_SSD];
    if (p->oom)
        ss_warn("KV pool: %llu evicted blocks were not offloaded (out of memory for the pool's "
                "bookkeeping)", (unsigned long long)p->oom);
}
