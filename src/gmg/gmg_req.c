/* Requests in the graph: slots, queue primitives, KV-block accounting with the memory ledger,
 * and the state transitions (enqueue, admit, preempt, swap, offload, migrate, the KV hand-off
 * of a disaggregated tenant, leave), the only
 * code that moves a request from one state to another. */
#include "gmg/gmg.h"

#include "core/ss_alloc.h"

#include <math.h>
#include <string.h>

/* ---- request slots and lists ------------------------------------------------------------ */

gmg_id gmg_req_alloc(gmg *g)
{
    if (g->free_slot == GMG_NONE) {
        if (g->n_slots == g->cap_slots) {
            uint32_t ncap = g->cap_slots ? g->cap_slots * 2 : 1024;
            gmg_req *nr = ss_realloc(g->reqs, (size_t)ncap * sizeof *nr);
            if (!nr)
                return GMG_NONE;
            g->reqs = nr;
            g->cap_slots = ncap;
        }
        g->reqs[g->n_slots].next = g->free_slot;
        g->free_slot = g->n_slots++;
    }
    gmg_id r = g->free_slot;
    g->free_slot = g->reqs[r].next;
    memset(&g->reqs[r], 0, sizeof g->reqs[r]); /* a free slot holds no prefix blocks */
    g->reqs[r].prev = g->reqs[r].next = GMG_NONE;
    g->reqs[r].container = GMG_NONE;
    g->reqs[r].mig = GMG_NONE;
    g->reqs[r].first_token = -1;
    g->reqs[r].state = GMG_REQ_WAITING;
    g->reqs[r].serial = ++g->n_allocs;
    if (++g->in_flight > g->peak_in_flight)
        g->peak_in_flight = g->in_flight;
    return r;
}

void gmg_req_free(gmg *g, gmg_id r)
{
    gmg_req *q = &g->reqs[r];
    if (SS_NEVER(q->state == GMG_REQ_FREE || q->blocks))
        return;
    q->state = GMG_REQ_FREE;
    gmg_pc_chain_drop(q);
    q->next = g->free_slot;
    g->free_slot = r;
    g->in_flight--;
}

void gmg_req_drop(gmg *g, gmg_id r)
{
    g->reqs[r].state = GMG_REQ_DONE; /* so that the slot can be returned */
    gmg_req_free(g, r);
}

void gmg_list_push_back(gmg *g, gmg_list *l, gmg_id r)
{
    gmg_req *q = &g->reqs[r];
    q->next = GMG_NONE;
    q->prev = l->tail;
    if (l->tail != GMG_NONE)
        g->reqs[l->tail].next = r;
    else
        l->head = r;
    l->tail = r;
    l->n++;
}

void gmg_list_push_front(gmg *g, gmg_list *l, gmg_id r)
{
    gmg_req *q = &g->reqs[r];
    q->prev = GMG_NONE;
    q->next = l->head;
    if (l->head != GMG_NONE)
        g->reqs[l->head].prev = r;
    else
        l->tail = r;
    l->head = r;
    l->n++;
}

void gmg_list_insert_after(gmg *g, gmg_list *l, gmg_id after, gmg_id r)
{
    if (after == GMG_NONE) {
        gmg_list_push_front(g, l, r);
        return;
    }
    if (after == l->tail) {
        gmg_list_push_back(g, l, r);
        return;
    }
    gmg_req *q = &g->reqs[r], *a = &g->reqs[after];
    q->prev = after;
    q->next = a->next;
    g->reqs[a->next].prev = r;
    a->next = r;
    l->n++;
}

void gmg_list_remove(gmg *g, gmg_list *l, gmg_id r)
{
    gmg_req *q = &g->reqs[r];
    if (q->prev != GMG_NONE)
        g->reqs[q->prev].next = q->next;
    else
        l->head = q->next;
    if (q->next != GMG_NONE)
        g->reqs[q->next].prev = q->prev;
    else
        l->tail = q->prev;
    q->prev = q->next = GMG_NONE;
    l->n--;
}

/* ---- KV blocks and the memory ledger ---------------------------------------------------- */

/* Add delta blocks' worth of KV to every GPU of c's replica. */
void gmg__ledger_kv(gmg *g, const gmg_container *c, int64_t delta)
{
    for (uint32_t k = 0; k < c->tp * c->pp; k++) {
        gmg_gpu *u = &g->gpus[c->gpu0 + k];
        u->mem.kv_used += (double)delta * c->block_bytes;
        if (u->mem.kv_used > u->kv_used_peak)
            u->kv_used_peak = u->mem.kv_used;
    }
    if (c->mux_pool > 0)
        gmg_mux_sync(g, c);
}

void gmg_mux_sync(gmg *g, const gmg_container *c)
{
    if (!(c->mux_pool > 0))
        return;
    /* what the pool's containers hold, bytes: counted afresh from its first (no drift, and
     * the same sum gmg_check makes) */
    double used = 0;
    gmg_id id = c->mux_head;
    do {
        const gmg_container *m = &g->ctrs[id];
        used += (double)(m->blocks_total - m->blocks_free) * m->block_bytes;
        id = m->mux_next;
    } while (id != c->mux_head);
    double free_bytes = c->mux_pool - used;
    if (free_bytes < -1e-3 * c->block_bytes)
        ss_fatal(SS_LOC, "container %u: its shared KV pool holds %.0f bytes of %.0f", c->id,
                 used, c->mux_pool);
    do {
        gmg_container *m = &g->ctrs[id];
        uint32_t held = m->blocks_total - m->blocks_free;
        m->blocks_free = gmg__mux_blocks(free_bytes, m->block_bytes);
        m->blocks_total = held + m->blocks_free;
        g->gpus[m->gpu0].mem.kv_pool = (double)m->blocks_total * m->block_bytes;
        id = m->mux_next;
    } while (id != c->mux_head);
}

void gmg_req_set_blocks(gmg *g, gmg_container *c, gmg_req *r, uint32_t blocks)
{
    if (blocks == r->blocks)
        return;
    if (r->pc_shared) {
        if (blocks) {
            if (SS_NEVER(blocks < r->pc_shared))
                return;
        } else {
            gmg__pc_release(g, c, r); /* the shared blocks go back to the cache */
            if (r->blocks == 0)
                return;
        }
    }
    int64_t delta = (int64_t)blocks - (int64_t)r->blocks;
    if (delta > (int64_t)c->blocks_free)
        ss_fatal(SS_LOC, "container %u: request %llu needs %lld more KV blocks, %u free", c->id,
                 (unsigned long long)r->trace_id, (long long)delta, c->blocks_free);
    if (delta > 0 && c->pc)
        gmg__pc_make_room(g, c, (uint32_t)delta);
    c->blocks_free = (uint32_t)((int64_t)c->blocks_free - delta);
    if (c->blocks_free > c->blocks_total)
        ss_fatal(SS_LOC, "container %u: %u free KV blocks exceed the pool of %u", c->id,
                 c->blocks_free, c->blocks_total);
    r->blocks = blocks;
    uint32_t used = c->blocks_total - c->blocks_free;
    if (used > c->blocks_peak)
        c->blocks_peak = used;
    gmg__ledger_kv(g, c, delta); /* every GPU of the replica holds its layers' share of a block */
}

void gmg_take_blocks_each(gmg *g, gmg_container *c, uint32_t n)
{
    if (!n)
        return;
    if (n > c->blocks_free)
        ss_fatal(SS_LOC, "container %u: %u more KV blocks with %u free", c->id, n,
                 c->blocks_free);
    for (uint32_t i = 0; i < n; i++) {
        if (c->pc)
            gmg__pc_make_room(g, c, 1);
        c->blocks_free--;
    }
    uint32_t used = c->blocks_total - c->blocks_free; /* used only grows here */
    if (used > c->blocks_peak)
        c->blocks_peak = used;
    for (uint32_t k = 0; k < c->tp * c->pp; k++) { /* gmg__ledger_kv, a block at a time */
        gmg_gpu *u = &g->gpus[c->gpu0 + k];
        for (uint32_t i = 0; i < n; i++)
            u->mem.kv_used += c->block_bytes;
        if (u->mem.kv_used > u->kv_used_peak)
            u->kv_used_peak = u->mem.kv_used;
    }
    gmg_mux_sync(g, c);
}

/* Move n blocks between c's free pool and one of its holders (`held`: reserved for a migration,
 * lent to staged weights), with the ledger; `what` names the holder in the fatal message. */
static void take_blocks(gmg *g, gmg_container *c, uint32_t *held, uint32_t n, const char *what)
{
    if (n > c->blocks_free)
        ss_fatal(SS_LOC, "container %u: %s %u blocks with %u free", c->id, what, n,
                 c->blocks_free);
    if (c->pc)
        gmg__pc_make_room(g, c, n);
    c->blocks_free -= n;
    *held += n;
    uint32_t used = c->blocks_total - c->blocks_free;
    if (used > c->blocks_peak)
        c->blocks_peak = used;
    gmg__ledger_kv(g, c, n);
}

static void give_blocks(gmg *g, gmg_container *c, uint32_t *held, uint32_t n, const char *what)
{
    if (n > *held)
        ss_fatal(SS_LOC, "container %u: %s %u blocks of %u", c->id, what, n, *held);
    *held -= n;
    c->blocks_free += n;
    gmg__ledger_kv(g, c, -(int64_t)n);
}

void gmg_reserve_blocks(gmg *g, gmg_container *c, uint32_t n)
{
    take_blocks(g, c, &c->blocks_reserved, n, "reserving");
}

void gmg_release_reserved(gmg *g, gmg_container *c, uint32_t n)
{
    give_blocks(g, c, &c->blocks_reserved, n, "releasing reserved");
}

void gmg_stage_blocks(gmg *g, gmg_container *c, uint32_t n)
{
    take_blocks(g, c, &c->blocks_staged, n, "staging into");
}

void gmg_unstage_blocks(gmg *g, gmg_container *c, uint32_t n)
{
    give_blocks(g, c, &c->blocks_staged, n, "unstaging");
}

const gmg_link *gmg_link_between(const gmg *g, gmg_id src, gmg_id dst)
{
    return g->gpus[src].node == g->gpus[dst].node ? &g->links[g->gpus[src].node]
                                                  : &g->links[g->n_links - 1];
}

ss_time gmg_transfer_ns(const gmg_link *l, double per_gpu, double eff)
{
    double s_per_gpu = per_gpu / (l->bw * eff) + l->latency_s;
    return ss_time_from_ns_sat(s_per_gpu * 1e9);
}

ss_time gmg_transfer(gmg *g, gmg_id src, gmg_id dst, uint32_t n, double per_gpu, double eff,
                     ss_time earliest)
{
    gmg_link *l = &g->links[gmg_link_between(g, src, dst)->id];
    ss_time begin = earliest;
    for (uint32_t i = 0; i < n; i++) {
        if (g->gpus[src + i].tx_busy > begin)
            begin = g->gpus[src + i].tx_busy;
        if (g->gpus[dst + i].rx_busy > begin)
            begin = g->gpus[dst + i].rx_busy;
    }
    ss_time end = ss_time_add(begin, gmg_transfer_ns(l, per_gpu, eff));
    for (uint32_t i = 0; i < n; i++) {
        g->gpus[src + i].tx_busy = end;
        g->gpus[dst + i].rx_busy = end;
    }
    l->bytes_moved += per_gpu * n;
    return end;
}

void gmg_req_swap_out(gmg *g, gmg_container *c, gmg_req *r)
{
    uint32_t b = r->blocks;
    if (b > c->swap_free)
        ss_fatal(SS_LOC, "container %u: swapping out %u blocks with %u swap blocks free", c->id, b,
                 c->swap_free);
    gmg_req_set_blocks(g, c, r, 0);
    c->swap_free -= b;
    r->swapped_blocks = b;
}

void gmg_req_swap_in(gmg *g, gmg_container *c, gmg_req *r)
{
    uint32_t b = r->swapped_blocks;
    gmg_req_set_blocks(g, c, r, b);
    c->swap_free += b;
    r->swapped_blocks = 0;
    if (c->swap_free > c->swap_total)
        ss_fatal(SS_LOC, "container %u: %u free swap blocks exceed the %u of the pool", c->id,
                 c->swap_free, c->swap_total);
}

double gmg_swap_bytes_per_gpu(const gmg *g, const gmg_container *c, uint32_t blocks)
{
    (void)g;
    return (double)blocks * c->block_bytes;
}

/* ---- state transitions ------------------------------------------------------------------- */

/* r joins c's running list, at its back (its run_seq orders the list). */
static void push_running(gmg *g, gmg_container *c, gmg_id r)
{
    g->reqs[r].run_seq = ++g->n_run_seq;
    gmg_list_push_back(g, &c->running, r);
}

void gmg_req_enqueue(gmg *g, gmg_container *c, gmg_id r, gmg_enqueue where)
{
    gmg_req *q = &g->reqs[r];
    q->wait_blocks = gmg_blocks_for(c, (uint64_t)q->prompt + q->generated);
    c->waiting_blocks += q->wait_blocks;
    q->state = GMG_REQ_WAITING;
    if (where == GMG_ENQ_FRONT) {
        gmg_list_push_front(g, &c->waiting, r);
    } else if (where == GMG_ENQ_TIER) {
        gmg_id after = c->waiting.tail;
        while (after != GMG_NONE && g->reqs[after].tier > q->tier &&
               g->reqs[after].preemptions == 0)
            after = g->reqs[after].prev;
        gmg_list_insert_after(g, &c->waiting, after, r);
    } else {
        gmg_list_push_back(g, &c->waiting, r);
    }
}

void gmg_req_dequeue(gmg *g, gmg_container *c, gmg_id r)
{
    gmg_req *q = &g->reqs[r];
    c->waiting_blocks -= q->wait_blocks;
    q->wait_blocks = 0;
    gmg_list_remove(g, &c->waiting, r);
}

void gmg_req_reroute(gmg *g, gmg_container *to, gmg_id r, gmg_enqueue where)
{
    g->reqs[r].container = to->id;
    gmg_req_enqueue(g, to, r, where);
}

void gmg_req_admit(gmg *g, gmg_container *c, gmg_id r)
{
    gmg_req_dequeue(g, c, r);
    push_running(g, c, r);
    g->reqs[r].state = GMG_REQ_RUNNING;
}


void gmg_req_preempt(gmg *g, gmg_container *c, gmg_id r)
{
    gmg_req *q = &g->reqs[r];
    gmg_list_remove(g, &c->running, r);
    gmg_req_set_blocks(g, c, q, 0);
    q->computed = 0;
    q->pc_registered = 0; /* its recomputed prompt blocks join the cache again */
    q->preemptions++;
    gmg_req_enqueue(g, c, r, GMG_ENQ_FRONT);
}

void gmg_req_to_swap(gmg *g, gmg_container *c, gmg_id r)
{
    gmg_req *q = &g->reqs[r];
    gmg_list_remove(g, &c->running, r);
    c->iter.swap_blocks += q->blocks;
    gmg_req_swap_out(g, c, q);
    q->state = GMG_REQ_SWAPPED;
    q->preemptions++;
    gmg_list_push_back(g, &c->swapped, r);
}

void gmg_req_from_swap(gmg *g, gmg_container *c, gmg_id r)
{
    gmg_req *q = &g->reqs[r];
    gmg_list_remove(g, &c->swapped, r);
    c->iter.swap_blocks += q->swapped_blocks;
    gmg_req_swap_in(g, c, q);
    q->state = GMG_REQ_RUNNING;
    push_running(g, c, r);
}


void gmg_req_end(gmg *g, gmg_container *c, gmg_id r, gmg_req_state end, ss_time now)
{
    gmg_req *q = &g->reqs[r];
    switch (q->state) {
    case GMG_REQ_WAITING: gmg_req_dequeue(g, c, r); break;
    case GMG_REQ_RUNNING:
        gmg_list_remove(g, &c->running, r);
        gmg_req_set_blocks(g, c, q, 0);
        break;
    case GMG_REQ_SWAPPED:
        gmg_list_remove(g, &c->swapped, r);
        gmg_req_swap_in(g, c, q); /* return the host blocks... */
        gmg_req_set_blocks(g, c, q, 0); /* ...and drop them */
        break;
    default: ss_fatal(SS_LOC, "request %llu in state %u cannot leave its container",
                      (unsigned long long)q->trace_id, q->state);
    }
    q->state = (uint8_t)end;
    q->finish = now;
}

void gmg_req_offload(gmg *g, gmg_container *home, gmg_id r, uint32_t blocks)
{
    gmg_req *q = &g->reqs[r];
    gmg_req_dequeue(g, home, r);
    gmg_req_set_blocks(g, home, q, blocks);
    home->blocks_offloaded += blocks;
    home->n_offloaded++;
    q->state = GMG_REQ_OFFLOADED;
}

void gmg_req_offload_back(gmg *g, gmg_container *home, gmg_id r, ss_time now)
{
    gmg_req *q = &g->reqs[r];
    home->blocks_offloaded -= q->blocks;
    home->n_offloaded--;
    q->computed = q->prompt;
    q->generated = 1;
    q->first_token = now;
    q->last_token = now;
    q->state = GMG_REQ_RUNNING;
    push_running(g, home, r);
}

void gmg_req_load(gmg *g, gmg_container *c, gmg_id r, uint32_t blocks, ss_time ready)
{
    gmg_req *q = &g->reqs[r];
    gmg_list_remove(g, &c->running, r);
    gmg_req_set_blocks(g, c, q, blocks);
    c->n_loading++;
    c->blocks_loading += gmg_req_private(q);
    c->pc_shared_loading += q->pc_shared;
    q->kvp_loaded = 1;
    q->kvp_ready = ready;
    q->state = GMG_REQ_LOADING;
}

void gmg_req_load_done(gmg *g, gmg_container *c, gmg_id r, gmg_enqueue where)
{
    gmg_req *q = &g->reqs[r];
    c->n_loading--;
    c->blocks_loading -= gmg_req_private(q);
    c->pc_shared_loading -= q->pc_shared;
    gmg_pc_register(g, c, q); /* the loaded blocks join the cache... */
    q->pc_registered = 0;     /* (its prompt's other blocks will, after its prefill) */
    gmg_req_set_blocks(g, c, q, 0); /* ...idle, most recently released, until it reads them */
    q->computed = 0;
    gmg_req_enqueue(g, c, r, where);
}

void gmg_req_migrate_out(gmg *g, gmg_container *from, gmg_id r)
{
    gmg_req *q = &g->reqs[r];
    gmg_list_remove(g, &from->running, r);
    from->blocks_in_transit += gmg_req_private(q);
    from->pc_shared_in_transit += q->pc_shared;
    q->state = GMG_REQ_MIGRATING;
}

void gmg_req_migrate_in(gmg *g, gmg_container *from, gmg_container *to, gmg_id r,
                        uint32_t reserved)
{
    gmg_req *q = &g->reqs[r];
    uint32_t blocks = q->blocks;
    from->blocks_in_transit -= gmg_req_private(q);
    from->pc_shared_in_transit -= q->pc_shared;
    gmg_req_set_blocks(g, from, q, 0);
    gmg_release_reserved(g, to, reserved);
    gmg_req_set_blocks(g, to, q, blocks);
    q->state = GMG_REQ_RUNNING;
    q->container = to->id;
    q->migrations++;
    push_running(g, to, r);
}

void gmg_req_kv_out(gmg *g, gmg_container *c, gmg_id r)
{
    gmg_req *q = &g->reqs[r];
    gmg_list_remove(g, &c->running, r);
    c->blocks_in_transit += gmg_req_private(q);
    c->pc_shared_in_transit += q->pc_shared;
    c->n_kv_out++;
    q->state = GMG_REQ_KV_TRANSFER;
}

void gmg_req_kv_in(gmg *g, gmg_container *from, gmg_container *to, gmg_id r, uint32_t reserved)
{
    gmg_req *q = &g->reqs[r];
    uint32_t blocks = q->blocks;
    if (reserved < blocks)
        ss_fatal(SS_LOC, "container %u: request %llu holds %u KV blocks but %u were reserved for "
                 "it", to->id, (unsigned long long)q->trace_id, blocks, reserved);
    from->blocks_in_transit -= gmg_req_private(q);
    from->pc_shared_in_transit -= q->pc_shared;
    from->n_kv_out--;
    gmg_req_set_blocks(g, from, q, 0);
    gmg_release_reserved(g, to, reserved);
    gmg_req_set_blocks(g, to, q, reserved);
    q->state = GMG_REQ_RUNNING;
    q->container = to->id;
    push_running(g, to, r);
}
