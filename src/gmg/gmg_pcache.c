/* Automatic prefix caching per container, as vLLM runs it: chained block hashes, refcounted
 * cache blocks, idle cached blocks counted as free and evicted least recently released first,
 * kept as runs of blocks in one state so that every operation costs O(runs), not O(blocks).
 * The data layout and the accounting rules are described in gmg.h; this file does not decide
 * when a request looks the cache up (gsim does, at admission). */
#include "gmg/gmg.h"
#include "gmg/gmg_idtab.h"

#include "core/ss_alloc.h"

#include <stdlib.h>
#include <string.h>

#define MOONCAKE_BLOCK_TOKENS 512

/* Block j's hash: its parent's hash mixed with its content (a) and its place (b), each mixed
 * first; ma = gmg__mix64(a + C_A) and mb = gmg__mix64(b ^ C_B) are passed in, since
 * consecutive blocks share them. */
#define C_A 0x9e3779b97f4a7c15ULL
#define C_B 0x632be59bd9b4e019ULL
static inline uint64_t block_key(uint64_t parent, uint64_t ma, uint64_t mb)
{
    return gmg__mix64(parent ^ ma ^ mb);
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
        uint64_t ma = gmg__mix64(r->session_id + C_A);
        for (uint32_t j = 0; j < n; j++)
            c->key[j] = key = block_key(key, ma, gmg__mix64((2ULL << 40 | j) ^ C_B));
    } else if (MOONCAKE_BLOCK_TOKENS % bt == 0) {
        /* Mooncake ids, engine blocks within one id's 512 tokens: block j hashes that id (twice:
         * it lies under both ends) and its offset, which cycle with the id */
        uint32_t per = MOONCAKE_BLOCK_TOKENS / bt;
        uint64_t mb[MOONCAKE_BLOCK_TOKENS];
        for (uint32_t k = 0; k < per; k++)
            mb[k] = gmg__mix64((1ULL << 40 | (uint64_t)k * bt) ^ C_B);
        for (uint32_t i = 0, j = 0; j < n; i++) {
            uint64_t ma = gmg__mix64(((uint64_t)ids[i] << 32 | ids[i]) + C_A);
            for (uint32_t k = 0; k < per && j < n; k++, j++)
                c->key[j] = key = block_key(key, ma, mb[k]);
        }
    } else { /* Mooncake ids: the id(s) under the block's tokens and its offset in them */
        for (uint32_t j = 0; j < n; j++) {
            uint64_t t0 = (uint64_t)j * bt, t1 = t0 + bt - 1;
            uint64_t a = (uint64_t)ids[t0 / MOONCAKE_BLOCK_TOKENS] << 32 |
                         ids[t1 / MOONCAKE_BLOCK_TOKENS];
            uint64_t b = 1ULL << 40 | t0 % MOONCAKE_BLOCK_TOKENS;
            c->key[j] = key = block_key(key, gmg__mix64(a + C_A), gmg__mix64(b ^ C_B));
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

/* ---- runs, the index and the LRU list ------------------------------------------------------ */

static inline uint64_t key_at(const gmg_pc_ent *x, uint32_t j)
{
    return x->ch->key[j - x->ch->base];
}

static void chain_put(gmg_chain *ch)
{
    if (--ch->ref == 0)
        ss_free(ch);
}

_Static_assert(offsetof(gmg_pc_ent, key) == 0, "the index reads a run's key first");

/* The run whose first block has hash key, GMG_NONE if none. */
static uint32_t find(const gmg_pcache *pc, uint64_t key)
{
    return gmg__idtab_find(pc->tab, pc->tab_mask, pc->ent, sizeof *pc->ent, key);
}

static void tab_put(gmg_pcache *pc, uint32_t e)
{
    gmg__idtab_put(pc->tab, pc->tab_mask, pc->ent, sizeof *pc->ent, e);
}

/* The index holds at most half as many runs as slots: it doubles (within its allocation) when
 * the runs outgrow that, in O(runs ever used). */
static void tab_insert(gmg_pcache *pc, uint32_t e)
{
    if (2 * (uint64_t)(pc->n_runs + 1) > (uint64_t)pc->tab_mask + 1 &&
        pc->tab_mask + 1 < pc->tab_cap) {
        pc->tab_mask = 2 * pc->tab_mask + 1;
        memset(pc->tab, 0xff, ((size_t)pc->tab_mask + 1) * sizeof *pc->tab);
        for (uint32_t f = 0; f < pc->hw; f++)
            if (pc->ent[f].ch && f != e)
                tab_put(pc, f);
    }
    tab_put(pc, e);
    pc->n_runs++;
}

static void tab_remove(gmg_pcache *pc, uint32_t e)
{
    gmg__idtab_remove(pc->tab, pc->tab_mask, pc->ent, sizeof *pc->ent, e);
    pc->n_runs--;
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
}

/* Insert run e before run `at` (GMG_NONE: at the tail, the most recent end). */
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
}

/* A run slot for blocks [lo, hi) of ch (referenced), with ref, indexed; not in the LRU list. */
static uint32_t run_new(gmg_container *c, gmg_chain *ch, uint32_t lo, uint32_t hi, uint32_t ref)
{
    gmg_pcache *pc = c->pc;
    uint32_t e = pc->free_ent;
    if (e != GMG_NONE) {
        pc->free_ent = pc->ent[e].next;
    } else {
        if (SS_NEVER(pc->hw >= pc->cap))
            ss_fatal(SS_LOC, "container %u: prefix cache out of runs", c->id);
        e = pc->hw++;
    }
    ch->ref++;
    gmg_pc_ent *x = &pc->ent[e];
    *x = (gmg_pc_ent){.ch = ch, .lo = lo, .hi = hi, .ref = ref, .prev = GMG_NONE,
                      .next = GMG_NONE};
    x->key = key_at(x, lo);
    x->pkey = lo ? key_at(x, lo - 1) : 0;
    tab_insert(pc, e);
    return e;
}

/* Drop run e (out of the LRU list already). */
static void run_free(gmg_pcache *pc, uint32_t e)
{
    gmg_pc_ent *x = &pc->ent[e];
    tab_remove(pc, e);
    chain_put(x->ch);
    x->ch = NULL;
    x->next = pc->free_ent;
    pc->free_ent = e;
}

/* Keep a run from pinning a much longer chain than its blocks: a run of fewer than a quarter of
 * its chain's hashes gets its own copy of them (memory stays O(cached blocks) whatever the
 * prompts' length). Without memory for the copy it keeps the chain: nothing else changes. */
static void fit(gmg_pcache *pc, uint32_t e)
{
    gmg_pc_ent *x = &pc->ent[e];
    uint32_t len = x->hi - x->lo;
    if (x->ch->n <= 4 * (uint64_t)len + 16)
        return;
    gmg_chain *ch = ss_malloc(sizeof *ch + (size_t)len * sizeof ch->key[0]);
    if (!ch)
        return;
    *ch = (gmg_chain){.ref = 1, .n = len, .bt = x->ch->bt, .base = x->lo};
    memcpy(ch->key, &x->ch->key[x->lo - x->ch->base], (size_t)len * sizeof ch->key[0]);
    chain_put(x->ch);
    x->ch = ch;
    (void)pc;
}

/* Split run e at s (lo < s < hi): e keeps [lo, s), a new run gets [s, hi) in the same state
 * (idle: right before e in the LRU list, where its blocks were). Returns the new run. */
static uint32_t split(gmg_container *c, uint32_t e, uint32_t s)
{
    gmg_pcache *pc = c->pc;
    uint32_t f = run_new(c, pc->ent[e].ch, s, pc->ent[e].hi, pc->ent[e].ref);
    pc->ent[e].hi = s;
    if (!pc->ent[e].ref)
        lru_insert_before(pc, f, e);
    fit(pc, e);
    fit(pc, f);
    return f;
}

/* Join run f, blocks [hi, f.hi) of e's chain past e's, into run e, in the same state (idle: f
 * right before e in the LRU list), with the hashes of ch, which holds both. */
static void join(gmg_pcache *pc, uint32_t e, uint32_t f, gmg_chain *ch)
{
    gmg_pc_ent *x = &pc->ent[e];
    if (!x->ref)
        lru_unlink(pc, f);
    x->hi = pc->ent[f].hi;
    run_free(pc, f);
    if (x->ch != ch) {
        ch->ref++;
        chain_put(x->ch);
        x->ch = ch;
    }
    fit(pc, e);
}

/* Runs e (blocks before j) and f (from j on) of a request's path, both in their final state:
 * joined when that state is one (returns the joined run), else f. */
static uint32_t maybe_join(gmg_pcache *pc, uint32_t e, uint32_t f, gmg_chain *ch)
{
    if (e == GMG_NONE || pc->ent[e].ref != pc->ent[f].ref ||
        (!pc->ent[e].ref && pc->ent[f].next != e))
        return f;
    join(pc, e, f, ch);
    return e;
}

/* ---- walks ---------------------------------------------------------------------------------- */

/* The run holding block j of the chain of hashes K, given run `prev` holding block j - 1
 * (GMG_NONE when j = 0): prev when the chain goes on in it, else the run starting there.
 * *t_out gets where the chain leaves that run, at most lim. GMG_NONE when block j is not
 * cached. */
static uint32_t seg(const gmg_pcache *pc, const uint64_t *K, uint32_t j, uint32_t prev,
                    uint32_t lim, uint32_t *t_out)
{
    uint32_t e = prev;
    if (e == GMG_NONE || j >= pc->ent[e].hi || key_at(&pc->ent[e], j) != K[j]) {
        e = find(pc, K[j]);
        if (e == GMG_NONE)
            return e;
    }
    const gmg_pc_ent *x = &pc->ent[e];
    uint32_t end = x->hi < lim ? x->hi : lim;
    if (key_at(x, end - 1) != K[end - 1]) {
        /* the chain diverges in the run: block j matches, block end - 1 does not, and the
         * blocks that match are a prefix (chained hashes) */
        uint32_t ok = j, bad = end - 1;
        while (bad - ok > 1) {
            uint32_t mid = ok + (bad - ok) / 2;
            if (key_at(x, mid) == K[mid])
                ok = mid;
            else
                bad = mid;
        }
        end = bad;
    }
    *t_out = end;
    return e;
}

void gmg_pc_walk_start(gmg_pc_walk *w, const gmg_container *c, const gmg_req *r, uint32_t max)
{
    uint32_t lim = c->pc ? gmg_pc_blocks(r, c->block_tokens) : 0;
    *w = (gmg_pc_walk){.pc = c->pc, .key = lim ? r->chain->key : NULL,
                       .lim = lim < max ? lim : max, .e = GMG_NONE};
}

int gmg_pc_walk_next(gmg_pc_walk *w, uint32_t *hi_out, uint32_t *ref_out)
{
    if (w->j >= w->lim)
        return 0;
    uint32_t t, e = seg(w->pc, w->key, w->j, w->e, w->lim, &t);
    if (e == GMG_NONE) {
        w->lim = w->j;
        return 0;
    }
    w->e = e;
    w->j = t;
    *hi_out = t;
    *ref_out = w->pc->ent[e].ref;
    return 1;
}

uint32_t gmg_pc_match(const gmg_container *c, const gmg_req *r, uint32_t max, uint32_t *idle_out)
{
    gmg_pc_walk w;
    gmg_pc_walk_start(&w, c, r, max);
    uint32_t n = 0, idle = 0, hi, ref;
    while (gmg_pc_walk_next(&w, &hi, &ref)) {
        idle += ref ? 0 : hi - n;
        n = hi;
    }
    if (idle_out)
        *idle_out = idle;
    return n;
}

/* Running requests after r in its container's running list (newer) that read block j of r's
 * chain, of hash key: equal hashes at j mean equal chains up to it. */
static uint32_t newer_readers(const gmg *g, gmg_id r, uint32_t j, uint64_t key)
{
    uint32_t n = 0;
    for (gmg_id x = g->reqs[r].next; x != GMG_NONE; x = g->reqs[x].next) {
        const gmg_req *p = &g->reqs[x];
        n += p->pc_shared > j && gmg_pc_key(p, j) == key;
    }
    return n;
}

/* In the stretch [j, hi) of r's shared blocks, each read by ref requests (r among them), the
 * blocks whose other readers are all newer than r: the newer readers of a block only thin out
 * down the chain (a reader of block j reads every block before it), so they are a prefix of
 * the stretch, [j, the first block with fewer than ref - 1 newer readers). */
static uint32_t last_reads(const gmg *g, gmg_id r, uint32_t j, uint32_t hi, uint32_t ref)
{
    const gmg_req *q = &g->reqs[r];
    if (ref <= 1)
        return hi - j;
    uint32_t lo = j, end = hi; /* blocks before lo have ref - 1 newer readers; end has fewer */
    while (lo < end) {
        uint32_t mid = lo + (end - lo) / 2;
        if (newer_readers(g, r, mid, gmg_pc_key(q, mid)) >= ref - 1)
            lo = mid + 1;
        else
            end = mid;
    }
    return lo - j;
}

uint32_t gmg_req_frees_after_newer(const gmg *g, const gmg_container *c, gmg_id r)
{
    const gmg_req *q = &g->reqs[r];
    if (!q->pc_shared)
        return q->blocks;
    uint32_t n = gmg_req_private(q), j = 0, hi, ref;
    gmg_pc_walk w;
    gmg_pc_walk_start(&w, c, q, q->pc_shared);
    while (gmg_pc_walk_next(&w, &hi, &ref)) {
        n += last_reads(g, r, j, hi, ref);
        j = hi;
    }
    return n;
}

/* ---- operations ------------------------------------------------------------------------- */

/* The run holding exactly blocks [j, t) of the path of K that seg found in run e (from j to t):
 * e split at t, and at j (which only a walk that did not start at block 0 can need). */
static uint32_t isolate(gmg_container *c, uint32_t e, uint32_t j, uint32_t t)
{
    if (t < c->pc->ent[e].hi)
        split(c, e, t);
    if (c->pc->ent[e].lo < j)
        e = split(c, e, j);
    return e;
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

void gmg_pc_take(gmg *g, gmg_container *c, gmg_req *r, uint32_t h)
{
    if (SS_NEVER(r->blocks || !c->pc))
        return;
    if (SS_NEVER(h > gmg_pc_blocks(r, c->block_tokens)))
        ss_fatal(SS_LOC, "container %u: request %llu takes %u blocks of a shorter chain", c->id,
                 (unsigned long long)r->trace_id, h);
    gmg_pcache *pc = c->pc;
    const uint64_t *K = h ? r->chain->key : NULL;
    uint32_t idle = 0; /* booked at once: the ledger only grows here */
    uint32_t prev = GMG_NONE, t;
    for (uint32_t j = 0; j < h; j = t) {
        uint32_t e = seg(pc, K, j, prev, h, &t);
        if (e == GMG_NONE)
            ss_fatal(SS_LOC, "container %u: request %llu: block %u of a matched prefix is not "
                     "cached", c->id, (unsigned long long)r->trace_id, j);
        e = isolate(c, e, j, t);
        gmg_pc_ent *x = &pc->ent[e];
        uint32_t len = t - j;
        if (!x->ref) { /* idle blocks leave the free pool */
            lru_unlink(pc, e);
            pc->n_idle -= len;
            pc->n_held += len;
            if (SS_NEVER(c->blocks_free < len))
                ss_fatal(SS_LOC, "container %u: cached blocks with no free block", c->id);
            c->blocks_free -= len;
            idle += len;
        }
        x->ref++;
        pc->refs += len;
        prev = maybe_join(pc, prev, e, r->chain);
    }
    held(g, c, idle);
    r->blocks = r->pc_shared = h;
}

/* Register's blocks [j, j + len) that were cached already (computed twice, by concurrent
 * prefills) in run e: r reads the cached copies and its own are freed, block by block as the
 * ledger and the peak saw it (an idle one takes a free block before r's copy is freed). */
static void share_copies(gmg *g, gmg_container *c, uint32_t e, uint32_t len)
{
    gmg_pcache *pc = c->pc;
    gmg_pc_ent *x = &pc->ent[e];
    int was_idle = !x->ref;
    if (was_idle) {
        lru_unlink(pc, e);
        pc->n_idle -= len;
        pc->n_held += len;
    }
    x->ref++;
    pc->refs += len;
    for (uint32_t k = 0; k < len; k++) {
        if (was_idle) {
            c->blocks_free--;
            held(g, c, 1);
        }
        c->blocks_free++; /* r's own copy is freed */
        gmg__ledger_kv(g, c, -1);
    }
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
    if (r->pc_shared >= n)
        return;
    const uint64_t *K = r->chain->key;
    uint32_t prev = GMG_NONE, j = 0, t;
    while (j < r->pc_shared) { /* to the run holding r's last shared block */
        prev = seg(pc, K, j, prev, r->pc_shared, &t);
        if (prev == GMG_NONE)
            ss_fatal(SS_LOC, "container %u: request %llu shares block %u, which the cache does "
                     "not hold", c->id, (unsigned long long)r->trace_id, j);
        j = t;
    }
    for (; j < n; j = t) { /* blocks cached already: shared, r's copies freed */
        uint32_t e = seg(pc, K, j, prev, n, &t);
        if (e == GMG_NONE)
            break;
        e = isolate(c, e, j, t);
        share_copies(g, c, e, t - j);
        prev = maybe_join(pc, prev, e, r->chain);
    }
    if (j < n) { /* the rest is new: no block past a miss is cached (its parent is not) */
        uint32_t e = run_new(c, r->chain, j, n, 1);
        pc->n_held += n - j;
        pc->refs += n - j;
        fit(pc, e);
        maybe_join(pc, prev, e, r->chain);
    }
    r->pc_shared = n;
}

void gmg__pc_release(gmg *g, gmg_container *c, gmg_req *r)
{
    gmg_pcache *pc = c->pc;
    const uint64_t *K = r->pc_shared ? r->chain->key : NULL;
    uint32_t anchor = GMG_NONE; /* the chain goes in leaf first: its head is evicted last */
    uint32_t freed = 0;         /* booked at once: the ledger only shrinks here */
    uint32_t prev = GMG_NONE, t;
    for (uint32_t j = 0; j < r->pc_shared; j = t) {
        uint32_t e = seg(pc, K, j, prev, r->pc_shared, &t);
        if (e == GMG_NONE || pc->ent[e].ref == 0)
            ss_fatal(SS_LOC, "container %u: request %llu shares block %u, which the cache does "
                     "not hold for it", c->id, (unsigned long long)r->trace_id, j);
        e = isolate(c, e, j, t);
        uint32_t len = t - j;
        pc->refs -= len;
        if (--pc->ent[e].ref == 0) {
            lru_insert_before(pc, e, anchor);
            pc->n_held -= len;
            pc->n_idle += len;
            c->blocks_free += len;
            freed += len;
        }
        prev = maybe_join(pc, prev, e, r->chain);
        if (!pc->ent[prev].ref)
            anchor = prev;
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
        gmg_pc_ent *x = &pc->ent[e];
        uint32_t k = n - (c->blocks_free - pc->n_idle); /* blocks short */
        if (k > x->hi - x->lo)
            k = x->hi - x->lo;
        if (g->kvp) /* offloaded below, not lost: leaf first; the simulator charges the copies */
            for (uint32_t i = 1; i <= k; i++)
                c->kvp_offload_pending += (uint32_t)gmg__kvp_put(g, c, key_at(x, x->hi - i));
        x->hi -= k;
        pc->n_idle -= k;
        pc->evictions += k;
        if (x->hi == x->lo) {
            lru_unlink(pc, e);
            run_free(pc, e);
        } else {
            fit(pc, e);
        }
    }
}

void gmg_pc_reclaim(gmg *g, gmg_container *c, uint32_t n)
{
    if (c->pc)
        gmg__pc_make_room(g, c, n);
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

/* Runs and index slots are used from the start of their arrays and grow with the cache, so an
 * empty cache and a copy touch only what is in use. */
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
    pc->tab_cap = t;
    pc->tab_mask = 15;
    memset(pc->tab, 0xff, 16 * sizeof *pc->tab); /* GMG_NONE */
    pc->lru_head = pc->lru_tail = pc->free_ent = GMG_NONE;
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
    *pc = *src;
    pc->ent = (gmg_pc_ent *)((char *)pc + eo);
    pc->tab = (uint32_t *)((char *)pc + to);
    memcpy(pc->ent, src->ent, (size_t)src->hw * sizeof *pc->ent);
    memcpy(pc->tab, src->tab, ((size_t)src->tab_mask + 1) * sizeof *pc->tab);
    for (uint32_t e = 0; e < pc->hw; e++)
        if (pc->ent[e].ch)
            pc->ent[e].ch->ref++;
    *out = pc;
    return SS_OK;
}

void gmg_pc_destroy(gmg_pcache **pc)
{
    gmg_pcache *p = *pc;
    for (uint32_t e = 0; p && e < p->hw; e++)
        if (p->ent[e].ch)
            chain_put(p->ent[e].ch);
    ss_free(p);
    *pc = NULL;
}

/* ---- invariants (--check) ------------------------------------------------------------------ */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Every run well formed (blocks [lo, hi) within its hashes, its key and its parent's the
 * hashes at lo and lo - 1) and found in the index by its key; the refcounts and counts adding
 * up. Sets the blocks held and idle, the references and the runs indexed. */
static int check_runs(const gmg_container *c, uint64_t *refs_out, uint32_t *held_out,
                      uint32_t *n_tab_out, ss_errbuf *eb)
{
    const gmg_pcache *pc = c->pc;
    uint64_t refs = 0;
    uint32_t n_tab = 0, n_held = 0, n_used = 0;
    for (uint32_t i = 0; i <= pc->tab_mask; i++) {
        uint32_t e = pc->tab[i];
        if (e == GMG_NONE)
            continue;
        n_tab++;
        const gmg_pc_ent *x = e < pc->hw ? &pc->ent[e] : NULL;
        if (!x || !x->ch || x->lo >= x->hi || x->lo < x->ch->base ||
            x->hi - x->ch->base > x->ch->n || key_at(x, x->lo) != x->key ||
            (x->lo > x->ch->base && key_at(x, x->lo - 1) != x->pkey) ||
            find(pc, x->key) != e)
            return ss_err(eb, SS_ECHECK, "container %u: prefix-cache run %u not found by its "
                          "hash or not within its chain", c->id, e);
        refs += (uint64_t)x->ref * (x->hi - x->lo);
        n_held += x->ref ? x->hi - x->lo : 0;
    }
    for (uint32_t e = 0; e < pc->hw; e++)
        n_used += pc->ent[e].ch != NULL;
    if (n_used != n_tab || n_tab != pc->n_runs)
        return ss_err(eb, SS_ECHECK, "container %u: prefix cache has %u runs, %u indexed, %u "
                      "counted", c->id, n_used, n_tab, pc->n_runs);
    *refs_out = refs;
    *held_out = n_held;
    *n_tab_out = n_tab;
    return SS_OK;
}

/* No block in two runs, and every cached block's parent cached (what lets a registration stop
 * looking at the first miss, and a walk find every run from block 0). O(blocks log blocks). */
static int check_tree(const gmg_container *c, ss_errbuf *eb)
{
    const gmg_pcache *pc = c->pc;
    size_t n = (size_t)pc->n_held + pc->n_idle, k = 0;
    if (!n)
        return SS_OK;
    uint64_t *keys = ss_malloc(n * sizeof *keys);
    if (!keys)
        return ss_err(eb, SS_ENOMEM, "--check: out of memory");
    for (uint32_t e = 0; e < pc->hw; e++)
        for (uint32_t j = pc->ent[e].ch ? pc->ent[e].lo : 0; pc->ent[e].ch && j < pc->ent[e].hi;
             j++)
            keys[k++] = key_at(&pc->ent[e], j);
    qsort(keys, n, sizeof *keys, cmp_u64);
    int rc = SS_OK;
    for (size_t i = 1; i < n && !rc; i++)
        if (keys[i] == keys[i - 1])
            rc = ss_err(eb, SS_ECHECK, "container %u: prefix-cache block %016llx in two runs",
                        c->id, (unsigned long long)keys[i]);
    for (uint32_t e = 0; e < pc->hw && !rc; e++)
        if (pc->ent[e].ch && pc->ent[e].lo &&
            !bsearch(&pc->ent[e].pkey, keys, n, sizeof *keys, cmp_u64))
            rc = ss_err(eb, SS_ECHECK, "container %u: prefix-cache run %u (blocks %u to %u) "
                        "cached without its parent block", c->id, e, pc->ent[e].lo,
                        pc->ent[e].hi - 1);
    ss_free(keys);
    return rc;
}

/* The counters agreeing with what the requests share (O(1)); deep, also every run found in the
 * index by its own key, idle exactly when in the LRU list, the counts adding up, the tree of
 * chains whole, and each running request's shared blocks its chain's first ones, all cached. */
int gmg__pc_check(const gmg *g, const gmg_container *c, uint64_t shared, int deep,
                  ss_errbuf *eb)
{
    const gmg_pcache *pc = c->pc;
    shared += c->pc_shared_in_transit + c->pc_shared_loading;
    if (pc->refs != shared || pc->n_held > pc->refs || (pc->refs && !pc->n_held) ||
        pc->n_idle > c->blocks_free || (uint64_t)pc->n_held + pc->n_idle > pc->cap ||
        pc->n_runs > (uint64_t)pc->n_held + pc->n_idle)
        return ss_err(eb, SS_ECHECK, "container %u: prefix cache holds %u blocks (%llu "
                      "references) and %u idle in %u runs, but its requests share %llu (%u free "
                      "blocks, %u entries)", c->id, pc->n_held, (unsigned long long)pc->refs,
                      pc->n_idle, pc->n_runs, (unsigned long long)shared, c->blocks_free,
                      pc->cap);
    if (!deep)
        return SS_OK;
    uint64_t refs = 0;
    uint32_t n_tab = 0, n_held = 0, n_lru = 0, n_runs = 0;
    int rc = check_runs(c, &refs, &n_held, &n_tab, eb);
    if (rc)
        return rc;
    uint32_t last = GMG_NONE;
    for (uint32_t e = pc->lru_head; e != GMG_NONE; last = e, e = pc->ent[e].next, n_runs++) {
        if (n_runs >= pc->n_runs || e >= pc->hw || !pc->ent[e].ch || pc->ent[e].ref ||
            pc->ent[e].prev != last)
            return ss_err(eb, SS_ECHECK, "container %u: prefix-cache LRU list broken or holding "
                          "a block in use (run %u)", c->id, e);
        n_lru += pc->ent[e].hi - pc->ent[e].lo;
    }
    if (n_held != pc->n_held || n_lru != pc->n_idle || last != pc->lru_tail)
        return ss_err(eb, SS_ECHECK, "container %u: prefix cache counts %u held + %u idle, but "
                      "%u in use, %u in the LRU list (%u free blocks)", c->id, pc->n_held,
                      pc->n_idle, n_held, n_lru, c->blocks_free);
    if (refs != shared)
        return ss_err(eb, SS_ECHECK, "container %u: prefix-cache references %llu != %llu blocks "
                      "its requests share", c->id, (unsigned long long)refs,
                      (unsigned long long)shared);
    uint32_t n_idle_runs = 0;
    for (uint32_t i = 0; i <= pc->tab_mask; i++)
        n_idle_runs += pc->tab[i] != GMG_NONE && !pc->ent[pc->tab[i]].ref;
    if (n_idle_runs != n_runs)
        return ss_err(eb, SS_ECHECK, "container %u: prefix cache has %u idle runs, %u in the LRU "
                      "list", c->id, n_idle_runs, n_runs);
    if ((rc = check_tree(c, eb)))
        return rc;
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
    for (uint32_t i = 0; i < g->n_ctrs; i++) /* a shared KV pool's containers keep none */
        if (!g->ctrs[i].pc && !(g->ctrs[i].mux_pool > 0) &&
            gmg_pc_create(&g->ctrs[i].pc, g->ctrs[i].blocks_total)) {
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
    for (uint32_t i = 0; i < g->n_ctrs; i++) {
        const gmg_pcache *pc = g->ctrs[i].pc;
        if (pc)
            n += (uint64_t)pc->cap + pc->hw + pc->tab_mask + 1;
    }
    return n;
}
