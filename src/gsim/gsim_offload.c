/* The offload mechanism SliceScheduler places work with: a waiting request's prefill runs,
 * chunk by chunk, in the idle time of another container's GPUs, its weights streamed or staged
 * there and its KV sent home. */
#include "gsim/gsim_int.h"

#include "core/ss_alloc.h"

#include <string.h>

/* ---- offloaded prefills: guest work on other containers' GPUs ------------------------------- */

/* Move per_gpu bytes from each GPU of container a's TP group to b's (gmg_transfer), no earlier
 * than `earliest`, at the placement policy's fraction of the link's peak (slice_link_eff), else
 * the link's own (gsim_link_eff). Returns the arrival time. */
static ss_time link_send(gsim *s, const gmg_container *a, const gmg_container *b, double per_gpu,
                         uint32_t tp, ss_time earliest)
{
    double eff = s->cfg.guest_link_eff > 0 ? s->cfg.guest_link_eff
                                           : gs_link_eff_between(s, a->gpu0, b->gpu0);
    return gmg_transfer(s->g, a->gpu0, b->gpu0, tp, per_gpu, eff, earliest);
}

static ss_time chunk_ns(const offload *o, uint32_t k)
{
    return k == 0 ? o->head_ns : k + 1 == o->n_chunks ? o->tail_ns : o->layer_ns;
}

/* Chunk k's duration when it shares the GPU with the helper's iteration: `slow` times its
 * alone time (1: exactly that). */
static ss_time chunk_slowed_ns(const offload *o, uint32_t k, double slow)
{
    ss_time d = chunk_ns(o, k);
    return slow == 1 ? d : (ss_time)((double)d * slow + 0.5);
}

/* The helper's own compute starts at `until` (or its GPUs' open idle stretch ends there with
 * the run): the guest compute placed in the stretch is counted by the stretch's length. */
void gs_stretch_close(gsim *s, gmg_container *h, ss_time until)
{
    ctr_state *cs = &s->cs[h->id];
    if (cs->stretch_guest)
        metrics_add_moved(&s->m, until - cs->own_end, cs->stretch_guest * (ss_time)h->tp);
    cs->stretch_guest = 0;
}

static double chunk_weights(const offload *o, uint32_t k)
{
    return k == 0 ? o->w_head : k + 1 == o->n_chunks ? o->w_tail : o->w_layer;
}

/* (Re)schedule the job's one EV_GUEST at `at`, the end of its last placed chunk. */
static void guest_event(gsim *s, gmg_id oid, ss_time at)
{
    offload *o = &s->offs[oid];
    if (o->ev)
        des_cancel(s->des, o->ev);
    o->ev = gs_sched(s, s->des, at, EV_GUEST, oid);
    o->event_at = at;
}

/* Place the job's next chunk on the helper's GPUs at `at` (or once its weights are in, the
 * previous chunk is done and, for the first, the host phase is over), taking `slow` times its
 * alone time: its compute time, the stream of the following chunk's weights, the KV it
 * produces sent home. Returns its end. */
static ss_time guest_place(gsim *s, gmg_id oid, ss_time at, double slow)
{
    offload *o = &s->offs[oid];
    gmg_container *h = &s->g->ctrs[o->helper], *home = &s->g->ctrs[o->home];
    ctr_state *cs = &s->cs[o->helper];
    uint32_t k = o->next++;
    ss_time start = at, weights_at = o->w_ready;
    if (o->w_ready > start)
        start = o->w_ready;
    if (cs->guest_until > start)
        start = cs->guest_until;
    if (o->not_before > start)
        start = o->not_before;
    ss_time end = ss_time_add(start, chunk_slowed_ns(o, k, slow));
    cs->stretch_guest += end - start;
    s->m.slices_used += start != cs->guest_until; /* not a continuation of guest work */
    for (uint32_t i = 0; i < h->tp; i++) {
        gsim_gpu_stats *u = &s->gst[h->gpu0 + i];
        gs_idle_until(s, h->gpu0 + i, start);
        u->dev_busy_ns += end - start;
        u->guest_ns += end - start;
        u->dev_free = end;
    }
    cs->guest_until = end;
    s->m.offload_chunks++;
    if (s->obs.on_guest)
        s->obs.on_guest(s->obs.ud, s->g, h, gmg_req_at(s->g, o->req), k, o->n_chunks, start, end,
                        weights_at);
    if (o->next < o->n_chunks) { /* double buffering: the next chunk's weights come meanwhile */
        o->w_ready = link_send(s, home, h, chunk_weights(o, o->next), h->tp, start);
        s->m.offload_bytes += chunk_weights(o, o->next) * h->tp;
    }
    if (k > 0 && k + 1 < o->n_chunks) { /* a decoder layer: its KV goes home */
        ss_time kv = link_send(s, h, home, o->kv_layer, h->tp, end);
        if (kv > o->kv_ready)
            o->kv_ready = kv;
        s->m.offload_bytes += o->kv_layer * h->tp;
    }
    return end;
}

/* The helper idles now: run one more chunk (one at a time, so that a request arriving at the
 * helper waits at most one chunk). */
void gs_guest_idle(gsim *s, gmg_container *h)
{
    gmg_id oid = s->cs[h->id].guest;
    if (oid == GMG_NONE || h->busy)
        return;
    offload *o = &s->offs[oid];
    ss_time now = des_now(s->des);
    if (o->next >= o->n_chunks || s->cs[h->id].guest_until > now)
        return; /* all placed, or one still running: its EV_GUEST comes back here */
    guest_event(s, oid, guest_place(s, oid, now, 1)); /* alone on the GPUs: not slowed */
}

/* The helper's iteration starts at `from` with a host phase until `until`: fill it with the
 * chunks that start before its end and overrun it by at most max_overrun, each slowed by the
 * co-location interference factor (it shares the GPUs with the helper's iteration). Returns
 * when the helper's GPUs are free of guest work again. */
ss_time gs_guest_fill(gsim *s, gmg_container *h, ss_time from, ss_time until)
{
    ctr_state *cs = &s->cs[h->id];
    gmg_id oid = cs->guest;
    if (oid == GMG_NONE)
        return cs->guest_until;
    offload *o = &s->offs[oid];
    int placed = 0;
    while (o->next < o->n_chunks) {
        ss_time start = from;
        if (o->w_ready > start)
            start = o->w_ready;
        if (cs->guest_until > start)
            start = cs->guest_until;
        if (o->not_before > start)
            start = o->not_before;
        double slow = s->cfg.guest_interference;
        if (start >= until || ss_time_add(start, chunk_slowed_ns(o, o->next, slow)) >
                                  ss_time_add(until, s->max_overrun))
            break;
        guest_place(s, oid, start, slow);
        placed = 1;
    }
    if (placed)
        guest_event(s, oid, cs->guest_until);
    return cs->guest_until;
}

static void offload_free(gsim *s, gmg_id oid)
{
    offload *o = &s->offs[oid];
    o->in_use = 0;
    s->n_offs_live--;
    o->next_free = s->free_off;
    s->free_off = oid;
}

/* EV_GUEST: the job's placed chunks are done. */
void gs_on_guest(des_engine *e, des_event *ev, void *ctx)
{
    gsim *s = ctx;
    gmg_id oid = ev->target;
    offload *o = &s->offs[oid];
    o->ev = NULL;
    o->event_at = 0;
    gmg_container *h = &s->g->ctrs[o->helper];
    if (o->next < o->n_chunks) {
        gs_guest_idle(s, h);
        return;
    }
    /* every chunk ran: free the helper, and the request is ready once its KV is home */
    for (uint32_t i = 0; i < h->tp; i++)
        s->g->gpus[h->gpu0 + i].mem.transfer -= o->buffers;
    s->cs[o->helper].guest = GMG_NONE;
    o->done_at = o->kv_ready > des_now(e) ? o->kv_ready : des_now(e);
    gs_sched(s, e, o->done_at, EV_OFFLOAD_DONE, oid);
}

/* EV_OFFLOAD_DONE: the request rejoins its container with its first token. */
void gs_on_offload_done(des_engine *e, des_event *ev, void *ctx)
{
    gsim *s = ctx;
    gmg_id oid = ev->target;
    offload *o = &s->offs[oid];
    gmg_container *home = &s->g->ctrs[o->home];
    gmg_req *q = gmg_req_at(s->g, o->req);
    ss_time now = des_now(e);
    s->cs[o->home].epoch++;
    s->m.offloads_done++;
    s->m.offload_ops += o->n_ops;
    if (o->predicted > 0) {
        ss_time err = now > o->predicted ? now - o->predicted : o->predicted - now;
        s->m.offload_pred_err_ns += err;
        s->m.offload_predicted++;
    }
    gmg_id r = o->req;
    gs_coh_dissolve(s, home); /* r rejoins its running list, outside the cohort's count */
    gmg_req_offload_back(s->g, home, r, now);
    q->win_tokens += gs_in_arrival_window(s, now); /* its first token */
    offload_free(s, oid);
    gs_pred_token(s, q);
    if (q->generated >= q->output)
        gs_finish(s, home, r);
    if (!home->busy && home->status != GMG_CTR_LOADING && home->status != GMG_CTR_STANDBY)
        gs_start_iteration(s, home);
    if (home->status == GMG_CTR_DRAINING && !home->busy)
        gs_maybe_drained(s, home);
}

static gmg_id offload_alloc(gsim *s)
{
    if (s->free_off == GMG_NONE) {
        size_t cap = s->cap_offs;
        if (ss_grow((void **)&s->offs, &cap, s->n_offs + 1, sizeof *s->offs))
            return GMG_NONE;
        s->cap_offs = (uint32_t)cap;
        s->offs[s->n_offs].next_free = GMG_NONE;
        s->free_off = s->n_offs++;
    }
    gmg_id oid = s->free_off;
    s->free_off = s->offs[oid].next_free;
    memset(&s->offs[oid], 0, sizeof s->offs[oid]);
    s->offs[oid].in_use = 1;
    s->n_offs_live++;
    return oid;
}

/* The memory the job takes: weights and KV per GPU, the helper's buffers (all an offload
 * check needs of its shape). */
static void offload_memory(offload *o, const gmg_container *home, const gmg_req *q, int staged)
{
    const cat_model *m = home->model;
    double tp = home->tp, dt = m->dtype_bytes;
    double vocab = (double)m->vocab * m->hidden * dt / tp;
    double total = cost_weight_bytes_per_gpu(m, home->tp, 1);
    o->w_head = vocab;
    o->w_tail = vocab;
    o->w_layer = (total - vocab * (m->tied_embeddings ? 1 : 2)) / m->layers;
    o->kv_layer = (double)q->prompt * cat_model_kv_bytes_per_token(m) / m->layers / tp;
    double act = (double)q->prompt * (4.0 * m->hidden + 2.0 * m->ffn / tp) * dt;
    double w = o->w_layer > o->w_head ? o->w_layer : o->w_head;
    o->buffers = 2 * w + act + o->kv_layer;
    if (staged) { /* the weights are (or will be) resident: nothing to stream per chunk */
        o->w_head = o->w_tail = o->w_layer = 0;
        o->buffers = act + o->kv_layer;
    }
}

/* The job's shape: chunk durations from the home container's cost model (the helper's GPUs
 * are of the same kind and TP degree), and its memory (offload_memory). */
static void offload_shape(const gsim *s, offload *o, const gmg_container *home,
                          const gmg_req *q, int staged)
{
    cost_batch b = {0};
    cost_batch_add_prefill(&b, q->prompt, 0);
    cost_split sp;
    gs_cost_split(s, home->cost, &b, &sp);
    o->n_chunks = home->model->layers + 2;
    o->head_ns = sp.head_ns - sp.host_ns; /* the embedding; its host phase comes before it */
    o->host_ns = s->cfg.guest_host_factor == 0
                     ? 0 : (ss_time)((double)sp.host_ns * s->cfg.guest_host_factor + 0.5);
    o->layer_ns = sp.layer_ns;
    o->tail_ns = sp.tail_ns;
    offload_memory(o, home, q, staged);
    o->n_ops = (uint32_t)cost_iteration_kernels(home->cost, &b);
}

/* KV blocks of helper h that staging home's model weights would take. */
static uint32_t stage_blocks_needed(const gmg_container *home, const gmg_container *h)
{
    double bytes = cost_weight_bytes_per_gpu(home->model, home->tp, 1);
    return (uint32_t)((bytes + h->block_bytes - 1) / h->block_bytes);
}

/* Whether home's weights are staged on h, or can be: h lends free KV blocks while keeping a
 * fifth of its pool plus its queue's demand free (another model staged there is evicted). */
static int can_stage(const gsim *s, const gmg_container *home, const gmg_container *h)
{
    const ctr_state *cs = &s->cs[h->id];
    if (s->cfg.guest_weights == POL_WEIGHTS_STREAM)
        return 0;
    if (cs->staged == home->model)
        return 1;
    uint64_t avail = (uint64_t)h->blocks_free + cs->staged_blocks;
    uint64_t need = stage_blocks_needed(home, h) + h->blocks_total / 5 + h->waiting_blocks;
    return avail >= need;
}

void gs_unstage(gsim *s, gmg_container *h)
{
    ctr_state *cs = &s->cs[h->id];
    if (!cs->staged)
        return;
    gmg_unstage_blocks(s->g, h, cs->staged_blocks);
    cs->staged = NULL;
    cs->staged_blocks = 0;
}

/* Memory pressure: the helper's own queue needs the blocks its staged guest weights hold. */
void gs_maybe_evict(gsim *s, gmg_container *h)
{
    ctr_state *cs = &s->cs[h->id];
    if (cs->staged && cs->guest == GMG_NONE && h->waiting_blocks &&
        h->blocks_free < h->waiting_blocks + h->blocks_total / 100) {
        gs_unstage(s, h);
        s->m.evictions++;
        cs->epoch++;
    }
}

int gsim_offload_check(const gsim *s, gmg_id r, gmg_id helper, ss_errbuf *eb)
{
    if (r >= s->g->n_slots || s->g->reqs[r].state != GMG_REQ_WAITING)
        return ss_err(eb, SS_EINVAL, "offload: request slot %u is not waiting", r);
    const gmg_req *q = gmg_req_at(s->g, r);
    if (q->computed || q->generated || q->preemptions || q->mig != GMG_NONE)
        return ss_err(eb, SS_EINVAL, "offload: request %llu has started already",
                      (unsigned long long)q->trace_id);
    const gmg_container *home = &s->g->ctrs[q->container];
    if (helper >= s->g->n_ctrs || helper == home->id)
        return ss_err(eb, SS_EINVAL, "offload: container %u cannot help container %u", helper,
                      home->id);
    const gmg_container *h = &s->g->ctrs[helper];
    if (home->pp != 1 || h->pp != 1 || h->tp != home->tp || h->status != GMG_CTR_ACTIVE ||
        home->status != GMG_CTR_ACTIVE)
        return ss_err(eb, SS_EINVAL, "offload: containers %u and %u must be active, unpipelined "
                      "and of the same TP degree", home->id, helper);
    if (s->cs[helper].guest != GMG_NONE)
        return ss_err(eb, SS_EINVAL, "offload: container %u already runs a guest prefill",
                      helper);
    uint32_t need = pol_batch_offload_hold(s->batch, home, q);
    if (need == POL_NO_OFFLOAD)
        return ss_err(eb, SS_EINVAL, "offload: batching '%s' cannot take request %llu back from "
                      "another container's GPUs now", pol_batch_name(s->batch),
                      (unsigned long long)q->trace_id);
    if (need > home->blocks_free)
        return ss_err(eb, SS_EINVAL, "offload: container %u has %u free KV blocks, request %llu "
                      "needs %u", home->id, home->blocks_free, (unsigned long long)q->trace_id,
                      need);
    offload shape = {0};
    offload_memory(&shape, home, q, can_stage(s, home, h));
    if (s->cfg.guest_weights == POL_WEIGHTS_STAGE && !can_stage(s, home, h))
        return ss_err(eb, SS_EINVAL, "offload: container %u has too few free KV blocks to stage "
                      "%s's weights", helper, home->model->name);
    for (uint32_t i = 0; i < h->tp; i++)
        if (gmg_gpu_spare_bytes(&s->g->gpus[h->gpu0 + i]) < shape.buffers)
            return ss_err(eb, SS_EINVAL, "offload: GPU %u has %.2f GiB spare, the prefill needs "
                          "%.2f GiB", h->gpu0 + i,
                          gmg_gpu_spare_bytes(&s->g->gpus[h->gpu0 + i]) / 1073741824.0,
                          shape.buffers / 1073741824.0);
    return SS_OK;
}

int gsim_offload(gsim *s, gmg_id r, gmg_id helper, ss_time predicted, ss_errbuf *eb)
{
    int rc = gsim_offload_check(s, r, helper, eb);
    if (rc)
        return rc;
    gmg_req *q = gmg_req_at(s->g, r);
    gmg_container *home = &s->g->ctrs[q->container], *h = &s->g->ctrs[helper];
    uint32_t need = pol_batch_offload_hold(s->batch, home, q);
    int staged = can_stage(s, home, h);
    offload shape = {0};
    offload_shape(s, &shape, home, q, staged);
    gmg_id oid = offload_alloc(s);
    if (oid == GMG_NONE)
        return ss_err(eb, SS_ENOMEM, "offload: out of memory");
    offload *o = &s->offs[oid];
    *o = shape;
    o->in_use = 1;
    o->next_free = GMG_NONE;
    o->req = r, o->home = home->id, o->helper = helper;
    /* the move starts after the decision latency; its first chunk after its host phase too */
    ss_time now = ss_time_add(des_now(s->des), s->move_delay);
    o->not_before = ss_time_add(now, o->host_ns);
    o->predicted = predicted;
    gmg_req_offload(s->g, home, r, need);
    for (uint32_t i = 0; i < h->tp; i++)
        s->g->gpus[h->gpu0 + i].mem.transfer += o->buffers;
    ctr_state *hs = &s->cs[helper];
    if (staged && hs->staged != home->model) { /* stage: lend blocks, copy the whole model */
        gs_unstage(s, h);
        hs->staged_blocks = stage_blocks_needed(home, h);
        gmg_stage_blocks(s->g, h, hs->staged_blocks);
        gs_kvp_charge(s, h); /* what the staging evicted from its prefix cache */
        hs->staged = home->model;
        double bytes = cost_weight_bytes_per_gpu(home->model, home->tp, 1);
        hs->stage_ready = link_send(s, home, h, bytes, h->tp, now);
        s->m.offload_bytes += bytes * h->tp;
        s->m.stagings++;
    }
    if (staged)
        o->w_ready = hs->stage_ready > now ? hs->stage_ready : now;
    else
        o->w_ready = link_send(s, home, h, o->w_head, h->tp, now);
    s->m.offload_bytes += o->w_head * h->tp;
    s->cs[helper].guest = oid;
    s->cs[helper].epoch++;
    s->cs[home->id].epoch++;
    s->m.offloads++;
    gs_guest_idle(s, h);
    return SS_OK;
}

int gsim_offload_allowed(const gsim *s, gmg_id r)
{
    const gmg_req *q = gmg_req_at(s->g, r);
    return pol_batch_offload_hold(s->batch, &s->g->ctrs[q->container], q) != POL_NO_OFFLOAD;
}

int gsim_has_guest(const gsim *s, gmg_id c) { return s->cs[c].guest != GMG_NONE; }
uint64_t gsim_ctr_epoch(const gsim *s, gmg_id c) { return s->cs[c].epoch; }
