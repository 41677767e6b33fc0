/* The graph's invariants, checked after every event under --check. */
#include "gmg/gmg.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- invariants ------------------------------------------------------------------------- */

/* Each check names the entity (container, GPU, request by trace id and slot) and the values;
 * gsim's --check adds the event. Ledger values are doubles: half a byte of rounding is allowed. */

static const char *state_name(uint8_t st)
{
    static const char *const names[] = {"free", "waiting", "running", "swapped", "migrating",
                                        "offloaded", "loading", "done", "rejected",
                                        "kv-transfer"};
    return st < sizeof names / sizeof *names ? names[st] : "invalid";
}

/* One request's tokens, as they stand: no more than its output, its KV no further than its
 * tokens, a first token exactly when one was generated, and times in order. */
static int check_tokens(const gmg_req *q, gmg_id r, ss_errbuf *eb)
{
    unsigned long long id = (unsigned long long)q->trace_id;
    if (q->generated > q->output)
        return ss_err(eb, SS_ECHECK, "request %llu (slot %u): %u tokens generated, more than "
                      "its output length %u", id, r, q->generated, q->output);
    if ((uint64_t)q->computed > (uint64_t)q->prompt + q->generated)
        return ss_err(eb, SS_ECHECK, "request %llu (slot %u): KV of %u tokens computed, more than "
                      "prompt %u + generated %u", id, r, q->computed, q->prompt, q->generated);
    if ((q->generated > 0) != (q->first_token >= 0))
        return ss_err(eb, SS_ECHECK, "request %llu (slot %u): %u tokens generated but first "
                      "token at %lld ns", id, r, q->generated, (long long)q->first_token);
    if (q->first_token >= 0 && (q->first_token < q->arrival || q->last_token < q->first_token))
        return ss_err(eb, SS_ECHECK, "request %llu (slot %u): token times out of order: arrival "
                      "%lld, first token %lld, latest token %lld ns", id, r,
                      (long long)q->arrival, (long long)q->first_token,
                      (long long)q->last_token);
    return SS_OK;
}

enum { L_WAITING, L_RUNNING, L_SWAPPED };

/* Walk one list of c: members in its state and container, links consistent, the walk ending
 * within n_slots steps at the list's tail and count. Blocks held and swapped are added up. */
static int check_list(const gmg *g, const gmg_container *c, int li, uint64_t *held,
                      uint64_t *swapped, uint64_t *shared, ss_errbuf *eb)
{
    static const char *const names[3] = {"waiting", "running", "swapped"};
    const gmg_list *l = li == L_WAITING ? &c->waiting : li == L_RUNNING ? &c->running : &c->swapped;
    const uint8_t want = li == L_WAITING ? GMG_REQ_WAITING
                         : li == L_RUNNING ? GMG_REQ_RUNNING : GMG_REQ_SWAPPED;
    uint32_t n = 0;
    gmg_id prev = GMG_NONE;
    for (gmg_id r = l->head; r != GMG_NONE; prev = r, r = g->reqs[r].next, n++) {
        if (r >= g->n_slots || n >= g->n_slots)
            return ss_err(eb, SS_ECHECK, "container %u: %s list broken at member %u (slot %u "
                          "of %u)", c->id, names[li], n, r, g->n_slots);
        const gmg_req *q = &g->reqs[r];
        if (q->state != want || q->container != c->id)
            return ss_err(eb, SS_ECHECK, "container %u: request %llu (slot %u) in the %s list "
                          "has state %s and container %u", c->id,
                          (unsigned long long)q->trace_id, r, names[li], state_name(q->state),
                          q->container);
        if (q->prev != prev)
            return ss_err(eb, SS_ECHECK, "container %u: request %llu (slot %u) in the %s list "
                          "links back to slot %u, not %u", c->id, (unsigned long long)q->trace_id,
                          r, names[li], q->prev, prev);
        if (li != L_RUNNING && q->blocks)
            return ss_err(eb, SS_ECHECK, "container %u: %s request %llu (slot %u) holds %u GPU "
                          "blocks", c->id, names[li], (unsigned long long)q->trace_id, r,
                          q->blocks);
        int rc = check_tokens(q, r, eb);
        if (rc)
            return rc;
        if (q->pc_shared > q->blocks || (q->pc_shared && !c->pc))
            return ss_err(eb, SS_ECHECK, "container %u: request %llu (slot %u) shares %u "
                          "prefix-cache blocks of the %u it holds%s", c->id,
                          (unsigned long long)q->trace_id, r, q->pc_shared, q->blocks,
                          c->pc ? "" : " with no cache");
        *held += q->blocks - q->pc_shared;
        *shared += q->pc_shared;
        *swapped += q->swapped_blocks;
    }
    if (n != l->n || l->tail != prev)
        return ss_err(eb, SS_ECHECK, "container %u: %s list count %u, tail slot %u, but %u "
                      "linked ending at slot %u", c->id, names[li], l->n, l->tail, n, prev);
    return SS_OK;
}

/* full: walk the waiting list too; otherwise its requests are taken to hold no GPU blocks, as
 * the last full check found. */
static int check_container(const gmg *g, const gmg_container *c, int full, int deep,
                           ss_errbuf *eb)
{
    /* unsigned counters: a "negative" pool wraps round to far above the total */
    if (c->blocks_free > c->blocks_total)
        return ss_err(eb, SS_ECHECK, "container %u: free KV blocks %lld out of [0, %u]", c->id,
                      (long long)(int32_t)c->blocks_free, c->blocks_total);
    if (c->swap_free > c->swap_total)
        return ss_err(eb, SS_ECHECK, "container %u: free swap blocks %lld out of [0, %u]", c->id,
                      (long long)(int32_t)c->swap_free, c->swap_total);
    uint64_t held = 0, swapped = 0, shared = 0;
    for (int li = full ? L_WAITING : L_RUNNING; li <= L_SWAPPED; li++) {
        int rc = check_list(g, c, li, &held, &swapped, &shared, eb);
        if (rc)
            return rc;
    }
    if (c->pc) {
        int rc = gmg__pc_check(g, c, shared, deep, eb);
        if (rc)
            return rc;
        held += c->pc->n_held;
    }
    held += (uint64_t)c->blocks_reserved + c->blocks_in_transit + c->blocks_offloaded +
            c->blocks_loading +
            c->blocks_staged;
    if (held + c->blocks_free != c->blocks_total)
        return ss_err(eb, SS_ECHECK, "container %u: %llu held (reserved and in transit included) "
                      "+ %u free != %u KV blocks", c->id, (unsigned long long)held,
                      c->blocks_free, c->blocks_total);
    if (swapped + c->swap_free != c->swap_total)
        return ss_err(eb, SS_ECHECK, "container %u: %llu swapped + %u free != %u swap blocks",
                      c->id, (unsigned long long)swapped, c->swap_free, c->swap_total);
    return SS_OK;
}

static int check_gpu(const gmg_gpu *u, ss_errbuf *eb)
{
    const gmg_mem *m = &u->mem;
    const double parts[] = {m->weights, m->kv_pool, m->kv_used, m->activations, m->runtime,
                            m->transfer};
    static const char *const names[] = {"weights", "KV pool", "KV in use", "activations",
                                        "runtime", "transfer buffers"};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        if (!(parts[i] >= -0.5)) /* NaN fails too */
            return ss_err(eb, SS_ECHECK, "GPU %u: %s %.0f bytes, below 0", u->id, names[i],
                          parts[i]);
    if (m->kv_used > m->kv_pool * (1 + 1e-9) + 0.5)
        return ss_err(eb, SS_ECHECK, "GPU %u: KV in use %.0f bytes out of [0, %.0f] (the pool)",
                      u->id, m->kv_used, m->kv_pool);
    double total = m->weights + m->kv_pool + m->activations + m->runtime + m->transfer;
    if (total > u->capacity + 0.5)
        return ss_err(eb, SS_ECHECK, "GPU %u: memory %.0f bytes out of [0, %.0f] (weights %.0f, "
                      "KV pool %.0f, activations %.0f, runtime %.0f, transfer %.0f)", u->id,
                      total, u->capacity, m->weights, m->kv_pool, m->activations, m->runtime,
                      m->transfer);
    return SS_OK;
}

/* Every slot in exactly one state: the free list holds the free ones, done and rejected
 * requests are gone by the end of the event that finished them, the lists (checked per
 * container) hold every waiting, running and swapped one, and the counts add up. */
static int check_slots(const gmg *g, ss_errbuf *eb)
{
    uint32_t by_state[GMG_REQ__COUNT] = {0};
    for (gmg_id r = 0; r < g->n_slots; r++) {
        const gmg_req *q = &g->reqs[r];
        if (q->state >= GMG_REQ__COUNT)
            return ss_err(eb, SS_ECHECK, "request %llu (slot %u): invalid state %u",
                          (unsigned long long)q->trace_id, r, q->state);
        by_state[q->state]++;
        if (q->state == GMG_REQ_FREE)
            continue;
        if (q->state == GMG_REQ_DONE || q->state == GMG_REQ_REJECTED || q->container >= g->n_ctrs)
            return ss_err(eb, SS_ECHECK, "request %llu (slot %u): state %s, container %u: not a "
                          "request in flight", (unsigned long long)q->trace_id, r,
                          state_name(q->state), q->container);
        int rc = q->state == GMG_REQ_MIGRATING || q->state == GMG_REQ_OFFLOADED ||
                         q->state == GMG_REQ_LOADING || q->state == GMG_REQ_KV_TRANSFER
                     ? check_tokens(q, r, eb) /* those in lists were checked there */
                     : SS_OK;
        if (rc)
            return rc;
    }
    uint32_t n_free = 0;
    for (gmg_id r = g->free_slot; r != GMG_NONE; r = g->reqs[r].next, n_free++)
        if (r >= g->n_slots || n_free >= g->n_slots || g->reqs[r].state != GMG_REQ_FREE)
            return ss_err(eb, SS_ECHECK, "free list broken at member %u (slot %u of %u, state "
                          "%s)", n_free, r, g->n_slots,
                          r < g->n_slots ? state_name(g->reqs[r].state) : "none");
    if (n_free != by_state[GMG_REQ_FREE] || g->n_slots - n_free != g->in_flight)
        return ss_err(eb, SS_ECHECK, "%u slots: %u free (%u on the free list), %u in flight "
                      "counted", g->n_slots, by_state[GMG_REQ_FREE], n_free, g->in_flight);
    uint64_t listed[3] = {0}, offloaded = 0, kv_out = 0, loading = 0;
    for (uint32_t i = 0; i < g->n_ctrs; i++) {
        if (g->ctrs[i].frozen) /* its requests stayed behind */
            continue;
        listed[0] += g->ctrs[i].waiting.n;
        listed[1] += g->ctrs[i].running.n;
        listed[2] += g->ctrs[i].swapped.n;
        offloaded += g->ctrs[i].n_offloaded;
        kv_out += g->ctrs[i].n_kv_out;
        loading += g->ctrs[i].n_loading;
    }
    static const uint8_t st[3] = {GMG_REQ_WAITING, GMG_REQ_RUNNING, GMG_REQ_SWAPPED};
    for (int k = 0; k < 3; k++)
        if (by_state[st[k]] != listed[k])
            return ss_err(eb, SS_ECHECK, "%u requests are %s but the %s lists hold %llu",
                          by_state[st[k]], state_name(st[k]), state_name(st[k]),
                          (unsigned long long)listed[k]);
    if (by_state[GMG_REQ_OFFLOADED] != offloaded)
        return ss_err(eb, SS_ECHECK, "%u requests are offloaded but the containers count %llu",
                      by_state[GMG_REQ_OFFLOADED], (unsigned long long)offloaded);
    if (by_state[GMG_REQ_KV_TRANSFER] != kv_out)
        return ss_err(eb, SS_ECHECK, "%u requests are in KV transfer but the prefill instances "
                      "count %llu", by_state[GMG_REQ_KV_TRANSFER], (unsigned long long)kv_out);
    if (by_state[GMG_REQ_LOADING] != loading)
        return ss_err(eb, SS_ECHECK, "%u requests are loading from the KV pool but the "
                      "containers count %llu", by_state[GMG_REQ_LOADING],
                      (unsigned long long)loading);
    return SS_OK;
}

/* A KV pool shared by containers (gmg_mux_link), checked from its first container c: what
 * they hold is within the pool, each sees the rest as its free blocks, and their GPU holds the
 * pool once beside each one's weights, activations and runtime. */
static int check_mux(const gmg *g, const gmg_container *c, ss_errbuf *eb)
{
    double used = 0, fixed = 0;
    uint32_t n = 0;
    gmg_id id = c->id;
    do {
        const gmg_container *m = &g->ctrs[id];
        const gmg_mem *mem = &g->gpus[m->gpu0].mem;
        if (++n > g->n_ctrs || m->mux_pool != c->mux_pool)
            return ss_err(eb, SS_ECHECK, "container %u: its shared KV pool's ring is broken at "
                          "container %u", c->id, id);
        used += (double)(m->blocks_total - m->blocks_free) * m->block_bytes;
        fixed += mem->weights + mem->activations + mem->runtime + mem->transfer;
        id = m->mux_next;
    } while (id != c->id);
    if (used > c->mux_pool * (1 + 1e-9) + 0.5)
        return ss_err(eb, SS_ECHECK, "containers %u..: their shared KV pool holds %.0f bytes of "
                      "%.0f", c->id, used, c->mux_pool);
    const gmg_gpu *u = &g->gpus[c->gpu0];
    if (fixed + c->mux_pool > u->capacity + 0.5)
        return ss_err(eb, SS_ECHECK, "GPU %u: its %u containers' weights, activations and "
                      "runtime (%.0f bytes) and their shared KV pool (%.0f) exceed its %.0f bytes",
                      u->phys, n, fixed, c->mux_pool, u->capacity);
    do {
        const gmg_container *m = &g->ctrs[id];
        if (m->blocks_free != gmg__mux_blocks(c->mux_pool - used, m->block_bytes))
            return ss_err(eb, SS_ECHECK, "container %u: %u free KV blocks, but its shared pool "
                          "has %.0f bytes free", m->id, m->blocks_free, c->mux_pool - used);
        id = m->mux_next;
    } while (id != c->id);
    return SS_OK;
}

static int check_graph(const gmg *g, int full, int deep, ss_errbuf *eb)
{
    for (uint32_t i = 0; i < g->n_ctrs; i++) {
        if (g->ctrs[i].frozen) /* a what-if's container that is not simulated */
            continue;
        int rc = check_container(g, &g->ctrs[i], full, deep, eb);
        if (!rc && g->ctrs[i].mux_pool > 0 && g->ctrs[i].mux_head == i)
            rc = check_mux(g, &g->ctrs[i], eb);
        if (rc)
            return rc;
    }
    for (uint32_t i = 0; i < g->n_gpus; i++) {
        int rc = check_gpu(&g->gpus[i], eb);
        if (rc)
            return rc;
    }
    if (g->kvp) {
        int rc = gmg__kvp_check(g, deep, eb);
        if (rc)
            return rc;
    }
    return full ? check_slots(g, eb) : SS_OK;
}

int gmg_check(const gmg *g, ss_errbuf *eb) { return check_graph(g, 1, 1, eb); }

int gmg_check_active(const gmg *g, ss_errbuf *eb) { return check_graph(g, 0, 0, eb); }

int gmg_check_mode(const gmg *g, int full, int deep, ss_errbuf *eb)
{
    return check_graph(g, full, deep, eb);
}
