/* A batching policy's decision for a container's next iteration, validated and applied: queue
 * moves, KV blocks, preemption, swaps, rejections, prefix-cache hits, and the batch's work. */
#include "gsim/gsim_int.h"

#include "core/ss_alloc.h"
#include "core/ss_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- starting an iteration -------------------------------------------------------------- */

enum { DEC_ARRAYS = 8 }; /* run, q_tokens, hold, preempt, swap_out, swap_in, gs_reject, why */

static int ensure_decision(gsim *s, size_t need)
{
    if (need <= s->dec_cap)
        return SS_OK;
    size_t cap = s->dec_cap ? s->dec_cap : 64;
    while (cap < need)
        cap *= 2;
    /* one block holds the eight arrays (all 32-bit) */
    uint32_t *b = ss_realloc(s->dec.run, cap * DEC_ARRAYS * sizeof *b);
    if (!b)
        return SS_ENOMEM;
    pol_batch_decision *d = &s->dec;
    d->run = b;
    d->q_tokens = b + cap;
    d->hold = b + 2 * cap;
    d->preempt = b + 3 * cap;
    d->swap_out = b + 4 * cap;
    d->swap_in = b + 5 * cap;
    d->reject = b + 6 * cap;
    d->reject_why = b + 7 * cap;
    s->dec_cap = cap;
    return SS_OK;
}

/* The decision cannot be carried out: the policy's malfunction stops the run (the first
 * failure's message is kept). */
static void malfunction(gsim *s, const gmg_container *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void malfunction(gsim *s, const gmg_container *c, const char *fmt, ...)
{
    if (s->rc)
        return;
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    gs_fail(s, ss_err(s->eb, SS_EINVAL, "batching policy '%s' malfunction: container %u at "
                      "%.9g s: %s", pol_batch_name(s->batch), c->id,
                      ss_time_to_s(des_now(s->des)), why));
}

/* Request slot r when it is one of c's requests in `state`, else NULL after a malfunction. */
static gmg_req *own_req(gsim *s, gmg_container *c, gmg_id r, uint8_t state, const char *what)
{
    if (r >= s->g->n_slots || s->g->reqs[r].state == GMG_REQ_FREE ||
        s->g->reqs[r].container != c->id) {
        malfunction(s, c, "it chose to %s request slot %u, which is not one of the container's "
                    "requests", what, r);
        return NULL;
    }
    gmg_req *q = gmg_req_at(s->g, r);
    if (q->state != state) {
        malfunction(s, c, "it chose to %s request %llu, which is in state %u, not %u", what,
                    (unsigned long long)q->trace_id, q->state, state);
        return NULL;
    }
    return q;
}

static void preempt(gsim *s, gmg_container *c, gmg_id r)
{
    gmg_req *q = own_req(s, c, r, GMG_REQ_RUNNING, "preempt");
    if (!q)
        return;
    gs_maybe_abort_migration(s, q);
    gmg_req_preempt(s->g, c, r);
    gs_notify(s, c, q, GSIM_REQ_PREEMPT);
}

static void swap_out(gsim *s, gmg_container *c, gmg_id r)
{
    gmg_req *q = own_req(s, c, r, GMG_REQ_RUNNING, "swap out");
    if (!q)
        return;
    gs_maybe_abort_migration(s, q);
    gmg_req_to_swap(s->g, c, r);
    s->m.swap_outs++;
    gs_notify(s, c, q, GSIM_REQ_SWAP_OUT);
}

static void swap_in(gsim *s, gmg_container *c, gmg_id r)
{
    gmg_req *q = own_req(s, c, r, GMG_REQ_SWAPPED, "swap in");
    if (!q)
        return;
    gmg_req_from_swap(s->g, c, r);
    gs_notify(s, c, q, GSIM_REQ_SWAP_IN);
}

/* A request admitted with nothing computed reads the longest cached prefix of its tokens: those
 * count as computed and the iteration computes only the rest (at least one token, as vLLM).
 * The policy sized the admission without the hit; when the idle cached blocks it takes (they
 * leave the free pool) and its new blocks do not fit, it takes a shorter prefix. Returns the
 * blocks it took. */
static uint32_t prefix_take(gsim *s, gmg_container *c, gmg_req *q, uint32_t q_tok, uint32_t hold)
{
    uint32_t bt = c->block_tokens, total = q->prompt + q->generated, h = 0, idle = 0;
    uint32_t lim = gmg_pc_blocks(q, bt);
    if (lim > (total - 1) / bt)
        lim = (total - 1) / bt;
    /* One walk down the chain, a run of the cache at a time: h is the longest cached prefix
     * whose idle blocks and the request's new ones fit in the free pool. */
    gmg_pc_walk w;
    gmg_pc_walk_start(&w, c, q, lim);
    uint32_t n = 0, hi, ref;
    while (gmg_pc_walk_next(&w, &hi, &ref)) {
        for (uint32_t is_idle = !ref; n < hi;) {
            n++;
            idle += is_idle;
            uint32_t left = total - n * bt, qt = q_tok < left ? q_tok : left;
            uint64_t blocks = gmg_blocks_for(c, (uint64_t)n * bt + qt);
            if (hold > blocks)
                blocks = hold;
            if (idle + blocks - n <= c->blocks_free)
                h = n;
        }
    }
    if (h)
        gmg_pc_take(s->g, c, q, h);
    return h;
}

/* The admission of q reads the prefix cache (and below it the KV pool, which may take q out of
 * the batch to load: then 0). Returns the query tokens left of q_tok. */
static uint32_t prefix_hit(gsim *s, gmg_container *c, gmg_id r, uint32_t q_tok, uint32_t hold)
{
    gmg_req *q = gmg_req_at(s->g, r);
    uint32_t bt = c->block_tokens, total = q->prompt + q->generated;
    uint32_t h = prefix_take(s, c, q, q_tok, hold);
    if (s->g->kvp && !q->kvp_loaded && gs_kvp_admit(s, c, r, h, q_tok, hold)) {
        s->kvp_parked++;
        return 0;
    }
    if (!s->fork && q->measured) {
        int first = !q->preemptions;
        uint32_t lim = gmg_pc_blocks(q, bt);
        if (lim > (total - 1) / bt)
            lim = (total - 1) / bt;
        /* the ceiling: the same walk in the tenant's unbounded shared set */
        uint32_t hc = first ? gs_ceiling_match(s, q, lim) : 0;
        metrics_lookup l = {.prompt = q->prompt, .query_blocks = gmg_pc_blocks(q, bt),
                            .hit_blocks = h, .hit_tokens = h * bt, .ceiling_blocks = hc,
                            .ceiling_tokens = hc * bt};
        metrics_add_prefix(&s->m, q->tenant, 1, first, &l);
        metrics_prefix_add(&s->cs[c->id].prefix, first, &l);
    }
    if (!h)
        return q_tok;
    q->computed = h * bt;
    return q_tok < total - q->computed ? q_tok : total - q->computed;
}

/* Whether the blocks q needs for q_tok more tokens, holding at least `hold`, are free (its
 * prefix-cache hit taken). A policy that counts what its evictions free and what it admitted
 * before never asks for more; when one does, that is its malfunction, not a broken pool. */
static int blocks_fit(gsim *s, gmg_container *c, const gmg_req *q, uint32_t q_tok, uint32_t hold)
{
    uint32_t blocks = gmg_req_schedule_blocks(c, q, q_tok, hold);
    if (blocks <= q->blocks || blocks - q->blocks <= c->blocks_free)
        return 1;
    malfunction(s, c, "it scheduled request %llu for %u tokens, which need %u more KV blocks "
                "with %u free", (unsigned long long)q->trace_id, q_tok, blocks - q->blocks,
                c->blocks_free);
    return 0;
}

/* Put request r into the batch for q_tok tokens of its pending work, admitting it when it is
 * waiting and growing its KV blocks to what its tokens (or the policy's reservation) need.
 * Returns 1 when it joined the batch (0: a malfunction, or it went to load from the KV pool). */
static int admit(gsim *s, gmg_container *c, gmg_id r, uint32_t q_tok, uint32_t hold)
{
    gmg_req *q = r < s->g->n_slots ? &s->g->reqs[r] : NULL;
    if (!q || q->container != c->id ||
        (q->state != GMG_REQ_RUNNING && q->state != GMG_REQ_WAITING)) {
        own_req(s, c, r, GMG_REQ_WAITING, "run"); /* a malfunction: it says which */
        return 0;
    }
    uint32_t pending = q->prompt + q->generated - q->computed;
    if (q_tok - 1 >= pending) { /* q_tok < 1 or q_tok > pending */
        malfunction(s, c, "it scheduled %u tokens of request %llu, which has %u pending", q_tok,
                    (unsigned long long)q->trace_id, pending);
        return 0;
    }
    if (q->q_tokens) {
        malfunction(s, c, "it scheduled request %llu twice", (unsigned long long)q->trace_id);
        return 0;
    }
    if (q->state != GMG_REQ_RUNNING) {
        gmg_req_admit(s->g, c, r);
        if (c->pc && !q->computed && !q->blocks && !(q_tok = prefix_hit(s, c, r, q_tok, hold)))
            return 0; /* loading from the KV pool */
    }
    if (!blocks_fit(s, c, q, q_tok, hold))
        return 0;
    gmg_req_schedule(s->g, c, r, q_tok, hold);
    return 1;
}

static int ensure_iter(gmg_container *c, uint32_t n)
{
    if (n <= c->iter.cap)
        return SS_OK;
    size_t cap = c->iter.cap;
    if (ss_grow((void **)&c->iter.reqs, &cap, n, sizeof *c->iter.reqs))
        return SS_ENOMEM;
    c->iter.cap = (uint32_t)cap;
    return SS_OK;
}

/* Apply one decision; returns the number of requests in the batch (those that went to load
 * from the KV pool instead count in s->kvp_parked). Its first `trusted` run entries are
 * running requests the simulator put there itself, each decoding with room for its next
 * token (mixed_batch): they join without admit's checks; with `cohort`, they are the members
 * of c's decode cohort, which join as one, taking the cohort_blocks their next tokens cross
 * into (cohort_batch). */
static uint32_t apply(gsim *s, gmg_container *c, uint32_t trusted, uint32_t cohort_blocks,
                      int cohort)
{
    const pol_batch_decision *d = &s->dec;
    uint32_t n = c->waiting.n + c->running.n + c->swapped.n;
    if (d->n_reject > n || d->n_preempt > n || d->n_swap_out > n || d->n_swap_in > n ||
        d->n_run > n) {
        malfunction(s, c, "a list longer than the container's %u requests", n);
        return 0;
    }
    for (uint32_t i = 0; i < d->n_reject && !s->rc; i++) {
        gmg_id r = d->reject[i];
        uint8_t st = r < s->g->n_slots ? s->g->reqs[r].state : GMG_REQ_FREE;
        if (st != GMG_REQ_WAITING && st != GMG_REQ_RUNNING && st != GMG_REQ_SWAPPED)
            st = GMG_REQ_WAITING; /* own_req says what is wrong */
        if (own_req(s, c, r, st, "reject"))
            gs_reject(s, c, r, d->reject_why[i]);
    }
    for (uint32_t i = 0; i < d->n_preempt && !s->rc; i++)
        preempt(s, c, d->preempt[i]);
    for (uint32_t i = 0; i < d->n_swap_out && !s->rc; i++)
        swap_out(s, c, d->swap_out[i]);
    for (uint32_t i = 0; i < d->n_swap_in && !s->rc; i++)
        swap_in(s, c, d->swap_in[i]);
    uint32_t n_run = 0;
    if (cohort && !s->rc) {
        if (gs_coh_begin(s, c, &c->iter.batch)) {
            gs_fail(s, ss_err(s->eb, SS_ENOMEM, "scheduler: out of memory"));
            return 0;
        }
        gmg_take_blocks_each(s->g, c, cohort_blocks); /* the members' crossings */
    }
    for (uint32_t i = 0; !cohort && i < trusted && !s->rc; i++)
        gmg_req_schedule(s->g, c, d->run[i], 1, 0);
    n_run += trusted;
    for (uint32_t i = trusted; i < d->n_run && !s->rc; i++)
        n_run += (uint32_t)admit(s, c, d->run[i], d->q_tokens[i], d->hold[i]);
    if (n_run || !s->kvp_parked)
        cost_batch_merge(&c->iter.batch, &d->extra);
    return s->rc ? 0 : n_run;
}

/* KV swap transfers of the iteration: each GPU of the TP group moves its shard over its own
 * PCIe link at the PCIe efficiency (gsim_link_eff), before the forward pass (vLLM swaps
 * synchronously in the step). */
ss_time gs_swap_time(const gsim *s, const gmg_container *c)
{
    if (!c->iter.swap_blocks)
        return 0;
    double bytes = gmg_swap_bytes_per_gpu(s->g, c, c->iter.swap_blocks);
    double bw = s->cfg.gpu->pcie_bw * gsim_link_eff(&s->cfg, GMG_LINK_PCIE);
    return ss_time_from_ns_sat(bytes / bw * 1e9);
}

/* The steady-state fast path (pol_batch_ops.steady): when nothing waits or is swapped on c,
 * every running request decodes and their next tokens' KV blocks are free, a steady policy
 * would run them all for one token, in list order; build that batch without asking it (what
 * apply would do with that decision, minus the checks it would pass). 1 when the batch was
 * built, 0 when the policy must decide. */
static int steady_batch(gsim *s, gmg_container *c, uint32_t hint)
{
    uint32_t need = 0;
    if (c->waiting.n || c->swapped.n || !c->running.n || s->cfg.no_steady || s->rc)
        return 0;
    if (hint) /* gs_on_iter_done saw every running request decode next */
        need = hint - 1;
    else
        for (gmg_id r = c->running.head; r != GMG_NONE; r = s->g->reqs[r].next) {
            const gmg_req *q = &s->g->reqs[r];
            uint64_t tokens = (uint64_t)q->prompt + q->generated;
            if (!q->generated || (uint64_t)q->computed + 1 != tokens)
                return 0; /* a prefill (or its next chunk) */
            need += !gmg_blocks_hold(c, q->blocks, tokens);
        }
    if (need > c->blocks_free || !pol_batch_steady(s->batch, c->batch_priv, c) ||
        ensure_iter(c, c->running.n))
        return 0; /* the policy evicts, or is not steady; out of memory: the long way says so */
    for (gmg_id r = c->running.head; r != GMG_NONE; r = s->g->reqs[r].next)
        gmg_req_schedule(s->g, c, r, 1, 0);
    s->kvp_parked = 0;
    return 1;
}

/* The mixed-step fast path (pol_batch_ops.decide_rest): when no running request that decodes
 * lacks room for its next token, the simulator makes the policy's decode pass itself (every
 * one of them, one token each, in list order, into the decision's run list) and asks the
 * policy for the rest only; the decodes then join the batch without admit's checks. 1 when
 * the batch was built and runs, 0 when the policy must decide the whole of it. */
static int mixed_batch(gsim *s, gmg_container *c)
{
    if (!c->running.n || s->cfg.no_steady || s->rc || !pol_batch_has_rest(s->batch))
        return 0;
    uint32_t n = c->waiting.n + c->running.n + c->swapped.n, n_dec = 0, need = 0;
    if (ensure_decision(s, n) || ensure_iter(c, n))
        return 0; /* out of memory: the long way says so */
    for (gmg_id r = c->running.head; r != GMG_NONE; r = s->g->reqs[r].next) {
        const gmg_req *q = &s->g->reqs[r];
        uint64_t tokens = (uint64_t)q->prompt + q->generated;
        if (!q->generated || (uint64_t)q->computed + 1 != tokens)
            continue; /* a prefill's next chunk: the policy's */
        need += !gmg_blocks_hold(c, q->blocks, tokens);
        s->dec.run[n_dec] = r;
        s->dec.q_tokens[n_dec] = 1;
        s->dec.hold[n_dec++] = 0;
    }
    if (!n_dec || need > c->blocks_free)
        return 0; /* its decode pass would evict (or there is none) */
    pol_batch_decide_rest(s->batch, c->batch_priv, s->g, c, n_dec, need, &s->dec);
    s->kvp_parked = 0;
    return apply(s, c, n_dec, 0, 0) > 0;
}

/* Whether the policy's decision for the rest of a cohort step reaches a member: evicts a
 * running request, or schedules a member again (a malfunction, which apply then names). */
static int touches_members(const gsim *s, uint32_t n_dec)
{
    const pol_batch_decision *d = &s->dec;
    if (d->n_preempt || d->n_swap_out)
        return 1;
    for (uint32_t i = 0; i < d->n_reject; i++)
        if (d->reject[i] < s->g->n_slots && s->g->reqs[d->reject[i]].state == GMG_REQ_RUNNING)
            return 1;
    for (uint32_t i = n_dec; i < d->n_run; i++)
        if (d->run[i] < s->g->n_slots && s->g->reqs[d->run[i]].lz)
            return 1;
    return 0;
}

/* mixed_batch for a container with a decode cohort (gsim_cohort.c): its running decodes are
 * the cohort's members, whose next tokens' blocks the cohort counts, so the step's decode pass
 * costs nothing per member. When the policy's rest reaches a member, the cohort dissolves and
 * the step is mixed_batch's. 1 when the batch was built and runs; 0 with no cohort. */
static int cohort_batch(gsim *s, gmg_container *c)
{
    if (!c->running.n || s->rc || !gs_coh_allowed(s, c)) { /* coh_ok: the policy has a rest */
        gs_coh_dissolve(s, c);
        return 0;
    }
    uint32_t need, n = c->waiting.n + c->running.n + c->swapped.n;
    if (!gs_coh_prepare(s, c, &need))
        return 0;
    if (need > c->blocks_free || ensure_decision(s, n) || ensure_iter(c, n)) {
        gs_coh_dissolve(s, c); /* its decode pass would evict: the policy's */
        return 0;
    }
    uint32_t n_dec = gs_coh_members(s, c);
    pol_batch_decision *d = &s->dec;
    if (!c->waiting.n && !c->swapped.n && n_dec == c->running.n &&
        pol_batch_steady(s->batch, c->batch_priv, c)) {
        /* a steady step: the policy would run the decodes and nothing else (steady_batch); the
         * run list's first n_dec entries, the members', are apply's to skip */
        d->n_run = n_dec;
        d->n_preempt = d->n_swap_out = d->n_swap_in = d->n_reject = 0;
        memset(&d->extra, 0, sizeof d->extra);
    } else {
        gs_coh_members_to(s, c, d->run); /* what decide_rest is promised */
        for (uint32_t i = 0; i < n_dec; i++) {
            d->q_tokens[i] = 1;
            d->hold[i] = 0;
        }
        pol_batch_decide_rest(s->batch, c->batch_priv, s->g, c, n_dec, need, d);
        s->kvp_parked = 0;
        if (touches_members(s, n_dec)) {
            gs_coh_dissolve(s, c);
            return apply(s, c, n_dec, 0, 0) > 0;
        }
    }
    s->kvp_parked = 0;
    return apply(s, c, n_dec, need, 1) > 0;
}

/* Ask the policy until it runs something or has nothing left to change. */
int gs_decide_batch(gsim *s, gmg_container *c)
{
    ctr_state *cs = &s->cs[c->id];
    uint32_t hint = cs->steady_need; /* for this decision only (steady_batch) */
    cs->steady_need = 0;
    cs->steady_iter = 0;
    /* a cohort lives on through steady steps; where an offloaded prefill is in flight (a
     * what-if judging a move), steady runs cannot take steady steps, and one forms at those too
     * (a cohort that cannot take this step will not form again for it: one try) */
    int first = s->coh_ok && s->n_offs_live;
    if ((gs_coh_on(s, c) || first) && cohort_batch(s, c))
        return 1;
    if ((cs->steady_iter = (uint8_t)steady_batch(s, c, hint)))
        return 1;
    if (s->coh_ok && !first && cohort_batch(s, c))
        return 1;
    if (mixed_batch(s, c))
        return 1;
    for (;;) {
        uint32_t n = c->waiting.n + c->running.n + c->swapped.n;
        if (n == 0 || s->rc)
            return 0;
        if (ensure_decision(s, n) || ensure_iter(c, n)) {
            gs_fail(s, ss_err(s->eb, SS_ENOMEM, "scheduler: out of memory"));
            return 0;
        }
        pol_batch_decide(s->batch, c->batch_priv, s->g, c, &s->dec);
        const pol_batch_decision *d = &s->dec;
        s->kvp_parked = 0;
        int changed = d->n_reject || d->n_preempt || d->n_swap_out || d->n_swap_in;
        if (apply(s, c, 0, 0, 0))
            return 1;
        changed |= s->kvp_parked > 0;
        /* a request loading from the KV pool, and a prefill instance's requests whose KV is in
         * transfer to a decode instance, hold blocks the others may wait for: the load's end
         * (gs_on_kv_loaded) or the transfer's landing (gs_on_kv_done) starts it again */
        if (!changed && (c->n_loading || c->n_kv_out))
            return 0;
        if (!changed && c->waiting.n + c->running.n + c->swapped.n && !s->rc) {
            malfunction(s, c, "it stalled with %u waiting, %u running and %u swapped requests",
                        c->waiting.n, c->running.n, c->swapped.n);
            return 0;
        }
    }
}
