/* Automatic prefix caching per container, as vLLM runs it: chained block hashes, refcounted
 * cache blocks, idle cached blocks counted as free and evicted least recently released first.
 * The data layout and the accounting rules are described in gmg.h; this file does not decide
 * when a request looks the cache up (gsim does, at admission). */
#include "gmg/gmg.h"

#include "core/ss_alloc.h"

#include <string.h>

#define MOONCAKE_BLOCK_TOKENS 512

/* splitmix64 finaliser */
static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Block j's hash: its parent's hash mixed with its content (a) and its place (b), each mixed
 * first; ma = mix64(a + C_A) and mb = mix64(b ^ C_B) are passed in, since consecutive blocks
 * share them. */
#define C_A 0x9e3779b97f4a7c15ULL
#define C_B 0x632be59bd9b4e019ULL
static inline uint64_t block_key(uint64_t parent, uint64_t ma, uint64_t mb)
{
    return mix64(parent ^ ma ^ mb);
}

int gmg_pc_chain_make(gmg_req *r, const uint32_t *ids, uint32_t bt)
{
    gmg_pc_chain_drop(r);
    uint32_t n = r->prompt / bt;
    if (r->n_prefix_blocks && ids) {
        uint64_t named = (uint64_t)r->n_prefix_blocks * MOONCAKE_BLOCK_TOKENS / bt;
        n = named < n ? (uint32_t)named : n;
    } else {
        ids = NULL;
        n = r->session_id ? n : 0;
    }
    if (!n)
        return SS_OK;
    gmg_chain *c = ss_malloc(sizeof *c + (size_t)n * sizeof c->key[0]);
    if (!c)
        return SS_ENOMEM;
    *c = (gmg_chain){.ref = 1, .n = n, .bt = bt};
    uint64_t key = 0;
    if (!ids) { /* a session: block j hashes (session, j) */
        uint64_t ma = mix64(r->session_id + C_A);
        for (uint32_t j = 0; j < n; j++)
            c->key[j] = key = block_key(key, ma, mix64((2ULL << 40 | j) ^ C_B));
    } else if (MOONCAKE_BLOCK_TOKENS % bt == 0) {
        /* Mooncake ids, engine blocks within one id's 512 tokens: block j hashes that id (twice:
         * it lies under both ends) and its offset, which cycle with the id */
        uint32_t per = MOONCAKE_BLOCK_TOKENS / bt;
        uint64_t mb[MOONCAKE_BLOCK_TOKENS];
        for (uint32_t k = 0; k < per; k++)
            mb[k] = mix64((1ULL << 40 | (uint64_t)k * bt) ^ C_B);
        for (uint32_t i = 0, j = 0; j < n; i++) {
            uint64_t ma = mix64(((uint64_t)ids[i] << 32 | ids[i]) + C_A);
            for (uint32_t k = 0; k < per && j < n; k++, j++)
                c->key[j] = key = block_key(key, ma, mb[k]);
        }
    } else { /* Mooncake ids: the id(s) under the block's tokens and its offset in them */
        for (uint32_t j = 0; j < n; j++) {
            uint64_t t0 = (uint64_t)j * bt, t1 = t0 + bt - 1;
            uint64_t a = (uint64_t)ids[t0 / MOONCAKE_BLOCK_TOKENS] << 32 |
                         ids[t1 / MOONCAKE_BLOCK_TOKENS];
            uint64_t b = 1ULL << 40 | t0 % MOONCAKE_BLOCK_TOKENS;
            c->key[j] = key = block_key(key, mix64(a + C_A), mix64(b ^ C_B));
        }
    }
    r->chain = c;
    return SS_OK;
}

void gmg_pc_chain_drop(gmg_req *r)
{
    if (r->chain && --r->chain->ref == 0)
        ss_free(r->chain);
    r->chain = NULL;
}

/* ---- table and lists -------------------------------------------------------------------- */

static uint32_t find(const gmg_pcache *pc, uint64_t key)
{
    for (uint32_t i = (uint32_t)key & pc->tab_mask;; i = (i + 1) & pc->tab_mask) {
        uint32_t e = pc->tab[i];
        if (e == GMG_NONE || pc->ent[e].key == key)
            return e;
    }
}

static void tab_insert(gmg_pcache *pc, uint32_t e)
{
    uint32_t i = (uint32_t)pc->ent[e].key & pc->tab_mask;
    while (pc->tab[i] != GMG_NONE)
        i = (i + 1) & pc->tab_mask;
    pc->tab[i] = e;
}

/* Backward-shift deletion keeps linear probing correct without tombstones. */
static void tab_remove(gmg_pcache *pc, uint32_t e)
{
    uint32_t i = (uint32_t)pc->ent[e].key & pc->tab_mask;
    while (pc->tab[i] != e)
        i = (i + 1) & pc->tab_mask;
    for (uint32_t j = (i + 1) & pc->tab_mask;; j = (j + 1) & pc->tab_mask) {
        uint32_t f = pc->tab[j];
        if (f == GMG_NONE)
            break;
        uint32_t home = (uint32_t)pc->ent[f].key & pc->tab_mask;
        /* f may move to i when its home is not in (i, j] (cyclically) */
        if (((j - home) & pc->tab_mask) >= ((j - i) & pc->tab_mask)) {
            pc->tab[i] = f;
            i = j;
        }
    }
    pc->tab[i] = GMG_NONE;
}

static void lru_unlink(gmg_pcache *pc, uint32_t e)
{
    gmg_pc_ent *x = &pc->ent[e];
    if (x->prev != GMG_NONE)
        pc->ent[x->prev].next = x->next;
    else
        pc->lru_head = x->next;
    if (x->next != GMG_NONE)
        pc->ent[x->next].prev = x->prev;
    else
        pc->lru_tail = x->prev;
    x->prev = x->next = GMG_NONE;
    pc->n_idle--;
}

/* Insert e before `at` (GMG_NONE: at the tail, the most recent end). */
static void lru_insert_before(gmg_pcache *pc, uint32_t e, uint32_t at)
{
    gmg_pc_ent *x = &pc->ent[e];
    x->next = at;
    x->prev = at == GMG_NONE ? pc->lru_tail : pc->ent[at].prev;
    if (x->prev != GMG_NONE)
        pc->ent[x->prev].next = e;
    else
        pc->lru_head = e;
    if (at != GMG_NONE)
        pc->ent[at].prev = e;
    else
        pc->lru_tail = e;
    pc->n_idle++;
}

/* ---- operations ------------------------------------------------------------------------- */

uint32_t gmg_pc_match(const gmg_container *c, const gmg_req *r, uint32_t max, uint32_t *idle_out)
{
    uint32_t n = 0, idle = 0;
    if (c->pc) {
        uint32_t lim = gmg_pc_blocks(r, c->block_tokens);
        if (lim > max)
            lim = max;
        for (; n < lim; n++) {
            uint32_t e = find(c->pc, gmg_pc_key(r, n));
            if (e == GMG_NONE)
                break;
            idle += c->pc->ent[e].ref == 0;
        }
    }
    if (idle_out)
        *idle_out = idle;
    return n;
}

int gmg_pc_state(const gmg_container *c, uint64_t key)
{
    uint32_t e = c->pc ? find(c->pc, key) : GMG_NONE;
    return e == GMG_NONE ? -1 : c->pc->ent[e].ref == 0;
}

/* One more reader of cached entry e; an idle one leaves the free pool: 1 (the caller books
 * it with held(), after a run of them), else 0. */
static int incref_idle(gmg_container *c, uint32_t e)
{
    gmg_pcache *pc = c->pc;
    pc->refs++;
    if (pc->ent[e].ref++)
        return 0;
    lru_unlink(pc, e);
    pc->n_held++;
    if (SS_NEVER(c->blocks_free == 0))
        ss_fatal(SS_LOC, "container %u: a cached block with no free block", c->id);
    c->blocks_free--;
    return 1;
}

/* n idle blocks left the free pool: the GPUs' ledger and the container's peak. */
static void held(gmg *g, gmg_container *c, uint32_t n)
{
    if (!n)
        return;
    gmg__ledger_kv(g, c, n);
    uint32_t used = c->blocks_total - c->blocks_free;
    if (used > c->blocks_peak)
        c->blocks_peak = used;
}

static void incref(gmg *g, gmg_container *c, uint32_t e)
{
    held(g, c, (uint32_t)incref_idle(c, e));
}

void gmg_pc_take(gmg *g, gmg_container *c, gmg_req *r, uint32_t h)
{
    if (SS_NEVER(r->blocks || !c->pc))
        return;
    if (SS_NEVER(h > gmg_pc_blocks(r, c->block_tokens)))
        ss_fatal(SS_LOC, "container %u: request %llu takes %u blocks of a shorter chain", c->id,
                 (unsigned long long)r->trace_id, h);
    uint32_t idle = 0; /* booked at once: the ledger only grows here */
    for (uint32_t j = 0; j < h; j++) {
        uint32_t e = find(c->pc, gmg_pc_key(r, j));
        if (e == GMG_NONE)
            ss_fatal(SS_LOC, "container %u: request %llu: block %u of a matched prefix is not "
                     "cached", c->id, (unsigned long long)r->trace_id, j);
        idle += (uint32_t)incref_idle(c, e);
    }
    held(g, c, idle);
    r->blocks = r->pc_shared = h;
}

void gmg_pc_register(gmg *g, gmg_container *c, gmg_req *r)
{
    if (!c->pc || r->pc_registered)
        return;
    r->pc_registered = 1;
    gmg_pcache *pc = c->pc;
    uint32_t n = gmg_pc_blocks(r, c->block_tokens);
    if (n > r->blocks)
        n = r->blocks;
    for (uint32_t j = r->pc_shared; j < n; j++) {
        uint64_t key = gmg_pc_key(r, j);
        uint32_t e = find(pc, key);
        if (e != GMG_NONE) { /* computed twice (concurrent prefills): keep the cached copy */
            incref(g, c, e); /* (an idle one takes a free block) */
            c->blocks_free++; /* r's own copy is freed */
            gmg__ledger_kv(g, c, -1);
        } else {
            e = pc->free_ent;
            if (SS_NEVER(e == GMG_NONE))
                ss_fatal(SS_LOC, "container %u: prefix cache full", c->id);
            pc->free_ent = pc->ent[e].next;
            pc->ent[e] = (gmg_pc_ent){.key = key, .ref = 1, .prev = GMG_NONE, .next = GMG_NONE};
            tab_insert(pc, e);
            pc->n_held++;
            pc->refs++;
        }
        r->pc_shared = j + 1;
    }
}

void gmg__pc_release(gmg *g, gmg_container *c, gmg_req *r)
{
    gmg_pcache *pc = c->pc;
    uint32_t anchor = GMG_NONE; /* the chain goes in leaf first: its head is evicted last */
    uint32_t freed = 0;         /* booked at once: the ledger only shrinks here */
    for (uint32_t j = 0; j < r->pc_shared; j++) {
        uint32_t e = find(pc, gmg_pc_key(r, j));
        if (e == GMG_NONE || pc->ent[e].ref == 0)
            ss_fatal(SS_LOC, "container %u: request %llu shares block %u, which the cache does "
                     "not hold for it", c->id, (unsigned long long)r->trace_id, j);
        pc->refs--;
        if (--pc->ent[e].ref == 0) {
            lru_insert_before(pc, e, anchor);
            anchor = e;
            pc->n_held--;
            c->blocks_free++;
            freed++;
        }
    }
    if (freed)
        gmg__ledger_kv(g, c, -(int64_t)freed);
    r->blocks -= r->pc_shared;
    r->pc_shared = 0;
}

void gmg__pc_make_room(gmg *g, gmg_container *c, uint32_t n)
{
    gmg_pcache *pc = c->pc;
    while (pc->n_idle && c->blocks_free - pc->n_idle < n) {
        uint32_t e = pc->lru_head;
        if (g->kvp) /* offloaded below, not lost */
            gmg__kvp_put(g, c, pc->ent[e].key);
        lru_unlink(pc, e);
        tab_remove(pc, e);
        pc->ent[e].next = pc->free_ent;
        pc->free_ent = e;
        pc->evictions++;
    }
}

/* ---- lifetime ----------------------------------------------------------------------------- */

static size_t layout(uint32_t cap, uint32_t *tab_n_out, size_t *ent_off_out, size_t *tab_off_out)
{
    uint32_t t = 16;
    while (t < 2 * (uint64_t)cap && t < (1u << 31))
        t *= 2;
    *tab_n_out = t;
    *ent_off_out = (sizeof(gmg_pcache) + 15) & ~(size_t)15;
    *tab_off_out = *ent_off_out + (size_t)cap * sizeof(gmg_pc_ent);
    return *tab_off_out + (size_t)t * sizeof(uint32_t);
}

int gmg_pc_create(gmg_pcache **pc_out, uint32_t blocks)
{
    uint32_t t;
    size_t eo, to, n = layout(blocks, &t, &eo, &to);
    gmg_pcache *pc = ss_malloc(n);
    if (!pc)
        return SS_ENOMEM;
    memset(pc, 0, sizeof *pc);
    pc->cap = blocks;
    pc->ent = (gmg_pc_ent *)((char *)pc + eo);
    pc->tab = (uint32_t *)((char *)pc + to);
    pc->tab_mask = t - 1;
    memset(pc->tab, 0xff, (size_t)t * sizeof *pc->tab); /* GMG_NONE */
    pc->lru_head = pc->lru_tail = GMG_NONE;
    pc->free_ent = blocks ? 0 : GMG_NONE;
    for (uint32_t i = 0; i < blocks; i++)
        pc->ent[i] = (gmg_pc_ent){.prev = GMG_NONE, .next = i + 1 < blocks ? i + 1 : GMG_NONE};
    *pc_out = pc;
    return SS_OK;
}

int gmg_pc_clone(const gmg_pcache *src, gmg_pcache **out)
{
    uint32_t t;
    size_t eo, to, n = layout(src->cap, &t, &eo, &to);
    gmg_pcache *pc = ss_malloc(n);
    if (!pc)
        return SS_ENOMEM;
    memcpy(pc, src, n);
    pc->ent = (gmg_pc_ent *)((char *)pc + eo);
    pc->tab = (uint32_t *)((char *)pc + to);
    *out = pc;
    return SS_OK;
}

void gmg_pc_destroy(gmg_pcache **pc)
{
    ss_free(*pc);
    *pc = NULL;
}

/* ---- invariants (--check) ------------------------------------------------------------------ */

/* Every entry in the table found by its own key, idle exactly when in the LRU list, the counts
 * adding up, the references equal to what the requests share, and each running request's
 * shared blocks its chain's first ones, all cached. */
int gmg__pc_check(const gmg *g, const gmg_container *c, uint64_t shared, int deep,
                  ss_errbuf *eb)
{
    const gmg_pcache *pc = c->pc;
    shared += c->pc_shared_in_transit + c->pc_shared_loading;
    if (pc->refs != shared || pc->n_held > pc->refs || (pc->refs && !pc->n_held) ||
        pc->n_idle > c->blocks_free || (uint64_t)pc->n_held + pc->n_idle > pc->cap)
        return ss_err(eb, SS_ECHECK, "container %u: prefix cache holds %u blocks (%llu "
                      "references) and %u idle, but its requests share %llu (%u free blocks, "
                      "%u entries)", c->id, pc->n_held, (unsigned long long)pc->refs,
                      pc->n_idle, (unsigned long long)shared, c->blocks_free, pc->cap);
    if (!deep)
        return SS_OK;
    uint64_t refs = 0;
    uint32_t n_tab = 0, n_held = 0, n_lru = 0;
    for (uint32_t i = 0; i <= pc->tab_mask; i++) {
        uint32_t e = pc->tab[i];
        if (e == GMG_NONE)
            continue;
        n_tab++;
        if (e >= pc->cap || find(pc, pc->ent[e].key) != e)
            return ss_err(eb, SS_ECHECK, "container %u: prefix-cache entry %u not found by its "
                          "hash", c->id, e);
        refs += pc->ent[e].ref;
        n_held += pc->ent[e].ref > 0;
    }
    for (uint32_t e = pc->lru_head; e != GMG_NONE; e = pc->ent[e].next, n_lru++)
        if (n_lru > pc->cap || pc->ent[e].ref)
            return ss_err(eb, SS_ECHECK, "container %u: prefix-cache LRU list broken or holding "
                          "a block in use (entry %u)", c->id, e);
    if (n_held != pc->n_held || n_lru != pc->n_idle || n_tab != n_held + n_lru ||
        pc->n_idle > c->blocks_free || n_tab > pc->cap)
        return ss_err(eb, SS_ECHECK, "container %u: prefix cache counts %u held + %u idle, but "
                      "%u in use, %u in the LRU list, %u hashed (%u free blocks)", c->id,
                      pc->n_held, pc->n_idle, n_held, n_lru, n_tab, c->blocks_free);
    if (refs != shared)
        return ss_err(eb, SS_ECHECK, "container %u: prefix-cache references %llu != %llu blocks "
                      "its requests share", c->id, (unsigned long long)refs,
                      (unsigned long long)shared);
    for (gmg_id r = c->running.head; r != GMG_NONE; r = g->reqs[r].next) {
        const gmg_req *q = &g->reqs[r];
        if (q->pc_shared > gmg_pc_blocks(q, c->block_tokens) ||
            gmg_pc_match(c, q, q->pc_shared, NULL) != q->pc_shared)
            return ss_err(eb, SS_ECHECK, "container %u: request %llu (slot %u) shares %u "
                          "blocks, not a cached chain of its prompt", c->id,
                          (unsigned long long)q->trace_id, r, q->pc_shared);
    }
    return SS_OK;
}

int gmg_pc_enable(gmg *g)
{
    for (uint32_t i = 0; i < g->n_ctrs; i++)
        if (!g->ctrs[i].pc && gmg_pc_create(&g->ctrs[i].pc, g->ctrs[i].blocks_total)) {
            for (uint32_t k = 0; k < i; k++)
                gmg_pc_destroy(&g->ctrs[k].pc);
            return SS_ENOMEM;
        }
    g->prefix_cache = 1;
    return SS_OK;
}

uint64_t gmg_pc_check_units(const gmg *g)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < g->n_ctrs; i++)
        if (g->ctrs[i].pc)
            n += (uint64_t)g->ctrs[i].pc->cap + g->ctrs[i].pc->tab_mask + 1;
    return n;
}
