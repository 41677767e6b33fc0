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

/* Open addressing on the key's low bits (the keys are splitmix64 outputs, already mixed); 0
 * marks an empty slot, so key 0 is kept apart. The table doubles at three quarters full. */
static int grow(gs_keyset *k)
{
    uint32_t n = k->mask ? 2 * (k->mask + 1) : 1024;
    uint64_t *slot = ss_calloc(n, sizeof *slot);
    if (!slot)
        return SS_ENOMEM;
    for (uint32_t i = 0; k->slot && i <= k->mask; i++) {
        uint64_t key = k->slot[i];
        if (!key)
            continue;
        uint32_t j = (uint32_t)key & (n - 1);
        while (slot[j])
            j = (j + 1) & (n - 1);
        slot[j] = key;
    }
    ss_free(k->slot);
    k->slot = slot;
    k->mask = n - 1;
    return SS_OK;
}

static int keyset_has(const gs_keyset *k, uint64_t key)
{
    if (!key)
        return k->has_zero;
    if (!k->slot)
        return 0;
    for (uint32_t i = (uint32_t)key & k->mask;; i = (i + 1) & k->mask) {
        if (k->slot[i] == key)
            return 1;
        if (!k->slot[i])
            return 0;
    }
}

static int keyset_add(gs_keyset *k, uint64_t key)
{
    if (!key) {
        k->has_zero = 1;
        return SS_OK;
    }
    if ((uint64_t)4 * (k->n + 1) > 3 * ((uint64_t)k->mask + 1) &&
        (k->mask >= (1u << 31) - 1 || grow(k)))
        return SS_ENOMEM;
    uint32_t i = (uint32_t)key & k->mask;
    for (; k->slot[i]; i = (i + 1) & k->mask)
        if (k->slot[i] == key)
            return SS_OK;
    k->slot[i] = key;
    k->n++;
    return SS_OK;
}

void gs_keyset_free(gs_keyset *k)
{
    ss_free(k->slot);
    memset(k, 0, sizeof *k);
}

/* The longest prefix of keys[0..n-1] in k. The set is closed under prefixes (a chain goes in
 * whole, from its first block), so a binary search finds it in log n probes of a table that
 * outgrows the processor's caches, where a walk would take one probe per block. */
static uint32_t longest_prefix(const gs_keyset *k, const uint64_t *keys, uint32_t n)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo + 1) / 2;
        if (keyset_has(k, keys[mid - 1]))
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

uint32_t gs_ceiling_match(gsim *s, const gmg_req *q, uint32_t lim)
{
    const gs_keyset *k = &s->ten[q->tenant].ceiling;
    if (!lim || (!k->n && !k->has_zero))
        return 0;
    return longest_prefix(k, q->chain->key, lim);
}

void gs_ceiling_register(gsim *s, const gmg_container *c, const gmg_req *q)
{
    if (s->fork || q->tenant >= s->n_ten || s->cfg.no_prefix_ceiling)
        return;
    gs_keyset *k = &s->ten[q->tenant].ceiling;
    uint32_t n = gmg_pc_blocks(q, c->block_tokens); /* as gmg_pc_register counts them */
    if (n > q->blocks)
        n = q->blocks;
    /* what is there already is a prefix: only the rest goes in */
    for (uint32_t j = n ? longest_prefix(k, q->chain->key, n) : 0; j < n; j++)
        if (keyset_add(k, q->chain->key[j])) {
            gs_fail(s, ss_err(s->eb, SS_ENOMEM, "prefix-cache ceiling: out of memory"));
            return;
        }
}

int gsim_ceiling_kept(const gsim *s) { return !s->cfg.no_prefix_ceiling; }

uint64_t gsim_ceiling_blocks(const gsim *s, uint32_t tenant)
{
    if (tenant >= s->n_ten)
        return 0;
    const gs_keyset *k = &s->ten[tenant].ceiling;
    return k->n + (uint64_t)k->has_zero;
}
