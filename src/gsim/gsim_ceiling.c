/* The prefix-caching ceiling: per tenant, a set of the chained block hashes its containers'
 * caches have learnt (a request's full prompt blocks, when its prefill completes there, the
 * moment gmg_pc_register caches them), never evicted and shared by all its containers. A
 * lookup at a request's first admission walks its chain in the set, so the ceiling is what an
 * unbounded cache shared by the tenant's instances would have hit; every block a container's
 * cache holds is in its tenant's set, so the ceiling is never below the real hit. Kept only
 * for the replay (not in what-if forks) and only while prefix caching is on. */
#include "gsim/gsim_int.h"

#include "core/ss_alloc.h"

#include <string.h>

/* The set as a tree of branches. Chained hashes make it closed under prefixes: a key at position
 * p is in it only with its whole chain up to p. So it is held as runs: positions [lo, hi) of one
 * chain whose hashes are copied into the tenant's arena (8 bytes a block), each indexed by its
 * first key; a chain that leaves the set at position d (inside a run or at its end) adds the run
 * [d, n) of its own keys. A walk from position 0 enters each run at its first key, finds with one
 * comparison (or a binary search where it leaves it) how far the chain follows the run, and looks
 * up the branch that starts there: O(runs) probes for a chain, not one per block. */

static uint64_t run_key(const gs_ceiling *k, const gs_ceil_run *r, uint32_t p)
{
    return k->keys[r->off + (p - r->lo)];
}

/* The run starting with key (at any position: equal keys mean equal positions), or GMG_NONE. */
static uint32_t run_find(const gs_ceiling *k, uint64_t key)
{
    if (!k->tab)
        return GMG_NONE;
    for (uint32_t i = (uint32_t)key & k->mask;; i = (i + 1) & k->mask) {
        uint32_t r = k->tab[i];
        if (r == GMG_NONE || k->keys[k->run[r].off] == key)
            return r;
    }
}

/* Index doubling at half full (run ids in the slots, so key 0 needs no special case). */
static int tab_grow(gs_ceiling *k)
{
    uint32_t n = k->mask ? 2 * (k->mask + 1) : 256;
    uint32_t *tab = ss_malloc((size_t)n * sizeof *tab);
    if (!tab)
        return SS_ENOMEM;
    memset(tab, 0xff, (size_t)n * sizeof *tab); /* GMG_NONE */
    for (uint32_t r = 0; r < k->n_run; r++) {
        uint32_t i = (uint32_t)k->keys[k->run[r].off] & (n - 1);
        while (tab[i] != GMG_NONE)
            i = (i + 1) & (n - 1);
        tab[i] = r;
    }
    ss_free(k->tab);
    k->tab = tab;
    k->mask = n - 1;
    return SS_OK;
}

/* Add the run of q's keys [lo, hi). 0 or SS_ENOMEM. */
static int run_add(gs_ceiling *k, const gmg_req *q, uint32_t lo, uint32_t hi)
{
    if (k->n_keys + (hi - lo) > k->cap_keys &&
        ss_grow((void **)&k->keys, &k->cap_keys, k->n_keys + (hi - lo), sizeof *k->keys))
        return SS_ENOMEM;
    if (k->n_run + 1 > k->cap_run &&
        ss_grow((void **)&k->run, &k->cap_run, k->n_run + 1, sizeof *k->run))
        return SS_ENOMEM;
    if (2 * ((uint64_t)k->n_run + 1) > (uint64_t)k->mask + 1 && tab_grow(k))
        return SS_ENOMEM;
    for (uint32_t p = lo; p < hi; p++)
        k->keys[k->n_keys + (p - lo)] = gmg_pc_key(q, p);
    uint32_t id = k->n_run++;
    k->run[id] = (gs_ceil_run){.off = k->n_keys, .lo = lo, .hi = hi};
    k->n_keys += hi - lo;
    uint32_t i = (uint32_t)gmg_pc_key(q, lo) & k->mask;
    while (k->tab[i] != GMG_NONE)
        i = (i + 1) & k->mask;
    k->tab[i] = id;
    return SS_OK;
}

/* The longest prefix of q's chain, at most lim blocks, in the set. */
static uint32_t longest_prefix(const gs_ceiling *k, const gmg_req *q, uint32_t lim)
{
    uint32_t p = 0;
    while (p < lim) {
        uint32_t id = run_find(k, gmg_pc_key(q, p));
        if (id == GMG_NONE)
            return p;
        const gs_ceil_run *r = &k->run[id];
        uint32_t end = r->hi < lim ? r->hi : lim;
        if (run_key(k, r, end - 1) == gmg_pc_key(q, end - 1)) {
            p = end; /* the chain follows the run to its end (or to lim) */
            if (end < r->hi)
                return p;
            continue;
        }
        /* it leaves the run: the first position in (p, end) whose keys differ */
        uint32_t a = p + 1, b = end - 1; /* keys agree before a; they differ at b */
        while (a < b) {
            uint32_t mid = a + (b - a) / 2;
            if (run_key(k, r, mid) == gmg_pc_key(q, mid))
                a = mid + 1;
            else
                b = mid;
        }
        p = a; /* a branch may start there */
    }
    return p;
}

void gs_ceiling_free(gs_ceiling *k)
{
    ss_free(k->keys);
    ss_free(k->run);
    ss_free(k->tab);
    memset(k, 0, sizeof *k);
}

uint32_t gs_ceiling_match(gsim *s, const gmg_req *q, uint32_t lim)
{
    const gs_ceiling *k = &s->ten[q->tenant].ceiling;
    return lim && k->n_run ? longest_prefix(k, q, lim) : 0;
}

void gs_ceiling_register(gsim *s, const gmg_container *c, const gmg_req *q)
{
    if (s->fork || q->tenant >= s->n_ten || s->cfg.no_prefix_ceiling)
        return;
    gs_ceiling *k = &s->ten[q->tenant].ceiling;
    uint32_t n = gmg_pc_blocks(q, c->block_tokens); /* as gmg_pc_register counts them */
    if (n > q->blocks)
        n = q->blocks;
    /* what is there already is a prefix: only the rest goes in, as one run */
    uint32_t j = n ? longest_prefix(k, q, n) : 0;
    if (j < n && run_add(k, q, j, n))
        gs_fail(s, ss_err(s->eb, SS_ENOMEM, "prefix-cache ceiling: out of memory"));
}

int gsim_ceiling_kept(const gsim *s) { return !s->cfg.no_prefix_ceiling; }

uint64_t gsim_ceiling_blocks(const gsim *s, uint32_t tenant)
{
    return tenant < s->n_ten ? s->ten[tenant].ceiling.n_keys : 0;
}
