/* The KV pool below the GPU prefix caches (LMCache's CPU and disk tiers, Mooncake Store): every
 * node lends a CPU DRAM tier and optionally an SSD tier; a prefix block a GPU cache evicts is
 * offloaded to its node's CPU tier, which evicts least recently used blocks into the node's SSD
 * tier, which drops its own least recently used ones. Capacities are in bytes (tenants with
 * different models have blocks of different sizes). This file holds the data and its rules;
 * when a request loads from the pool, and what that costs, is gsim's (gsim_kvpool.c). */
#include "gmg/gmg.h"
#include "gmg/gmg_idtab.h"

#include "core/ss_alloc.h"
#include "core/ss_hash.h"

#include <string.h>


/* FNV-1a of a model's name: blocks of different models never match. */
static uint64_t name_hash(const char *s)
{
    return ss_fnv1a(SS_FNV1A_OFFSET, s, strlen(s));
}

uint64_t gmg_kvp_key(const gmg *g, const gmg_container *c, uint64_t key)
{
    uint64_t ns = gmg__mix64(name_hash(c->model->name) ^ ((uint64_t)c->tenant + 1) << 48);
    if (!g->kvp->cluster) /* a node's pool: the same block on two nodes is two blocks */
        ns ^= gmg__mix64((uint64_t)gmg_ctr_node(g, c) + 0x51ed270b27ULL);
    uint64_t k = gmg__mix64(key ^ ns);
    return k ? k : 1;
}

/* ---- table and lists -------------------------------------------------------------------- */

_Static_assert(offsetof(gmg_kvp_ent, key) == 0, "the index reads an entry's key first");

static uint32_t find(const gmg_kvpool *p, uint64_t key)
{
    return gmg__idtab_find(p->tab, p->tab_mask, p->ent, sizeof *p->ent, key);
}

static void tab_put(uint32_t *tab, uint32_t mask, const gmg_kvp_ent *ent, uint32_t e)
{
    gmg__idtab_put(tab, mask, ent, sizeof *ent, e);
}

static void tab_remove(gmg_kvpool *p, uint32_t e)
{
    gmg__idtab_remove(p->tab, p->tab_mask, p->ent, sizeof *p->ent, e);
    p->n_used--;
}

static gmg_kvp_tier *tier_of(gmg_kvpool *p, const gmg_kvp_ent *x)
{
    return &p->tiers[(size_t)x->node * GMG_KVP_TIERS + x->tier];
}

static void lru_unlink(gmg_kvpool *p, uint32_t e)
{
    gmg_kvp_ent *x = &p->ent[e];
    gmg_kvp_tier *t = tier_of(p, x);
    if (x->prev != GMG_NONE)
        p->ent[x->prev].next = x->next;
    else
        t->head = x->next;
    if (x->next != GMG_NONE)
        p->ent[x->next].prev = x->prev;
    else
        t->tail = x->prev;
    x->prev = x->next = GMG_NONE;
    t->n--;
    t->bytes -= x->bytes;
    p->total[x->tier] -= x->bytes;
}

/* e joins the most recent end of tier `tier` of node `node`. */
static void lru_push(gmg_kvpool *p, uint32_t e, uint32_t node, uint8_t tier)
{
    gmg_kvp_ent *x = &p->ent[e];
    x->node = node;
    x->tier = tier;
    gmg_kvp_tier *t = tier_of(p, x);
    x->next = GMG_NONE;
    x->prev = t->tail;
    if (t->tail != GMG_NONE)
        p->ent[t->tail].next = e;
    else
        t->head = e;
    t->tail = e;
    t->n++;
    t->bytes += x->bytes;
    p->total[tier] += x->bytes;
    if (p->total[tier] > p->peak[tier])
        p->peak[tier] = p->total[tier];
}

/* A block leaves the pool for good: out of its list and the table, its entry free. */
static void drop(gmg_kvpool *p, uint32_t e)
{
    gmg_kvp_ent *x = &p->ent[e];
    if (x->tenant < p->n_tenants)
        p->ten[x->tenant].evictions++;
    lru_unlink(p, e);
    tab_remove(p, e);
    x->tier = GMG_KVP_FREE;
    x->next = p->free_ent;
    p->free_ent = e;
}

/* Room for `bytes` more in tier `tier` of node `node`: its least recently used blocks go down
 * a tier (CPU to SSD) or, from the last one, out of the pool. */
static void make_room(gmg_kvpool *p, uint32_t node, uint8_t tier, uint64_t bytes)
{
    gmg_kvp_tier *t = &p->tiers[(size_t)node * GMG_KVP_TIERS + tier];
    while (t->head != GMG_NONE && t->bytes + bytes > p->cap[tier]) {
        uint32_t e = t->head;
        uint64_t b = p->ent[e].bytes;
        if (tier + 1 < GMG_KVP_TIERS && b <= p->cap[tier + 1]) {
            make_room(p, node, (uint8_t)(tier + 1), b);
            lru_unlink(p, e);
            lru_push(p, e, node, (uint8_t)(tier + 1));
            if (p->ent[e].tenant < p->n_tenants)
                p->ten[p->ent[e].tenant].demotions++;
        } else {
            drop(p, e);
        }
    }
}

static int grow_entries(gmg_kvpool *p)
{
    uint32_t cap = p->cap_ent ? p->cap_ent * 2 : 1024;
    gmg_kvp_ent *ent = ss_realloc(p->ent, (size_t)cap * sizeof *ent);
    if (!ent)
        return SS_ENOMEM;
    p->ent = ent;
    for (uint32_t i = p->cap_ent; i < cap; i++) /* the new ones, lowest first */
        ent[i] = (gmg_kvp_ent){.tier = GMG_KVP_FREE, .prev = GMG_NONE,
                               .next = i + 1 < cap ? i + 1 : p->free_ent};
    p->free_ent = p->cap_ent;
    p->cap_ent = cap;
    return SS_OK;
}

/* The table stays at most half full. */
static int grow_table(gmg_kvpool *p)
{
    uint32_t n = (p->tab_mask + 1) * 2;
    uint32_t *tab = ss_malloc((size_t)n * sizeof *tab);
    if (!tab)
        return SS_ENOMEM;
    memset(tab, 0xff, (size_t)n * sizeof *tab);
    for (uint32_t i = 0; i <= p->tab_mask; i++)
        if (p->tab[i] != GMG_NONE)
            tab_put(tab, n - 1, p->ent, p->tab[i]);
    ss_free(p->tab);
    p->tab = tab;
    p->tab_mask = n - 1;
    return SS_OK;
}

/* ---- operations ------------------------------------------------------------------------- */

uint32_t gmg_kvp_find(const gmg *g, const gmg_container *c, uint64_t key)
{
    return find(g->kvp, gmg_kvp_key(g, c, key));
}

void gmg_kvp_touch(gmg *g, uint32_t e)
{
    gmg_kvpool *p = g->kvp;
    uint32_t node = p->ent[e].node;
    uint8_t tier = p->ent[e].tier;
    lru_unlink(p, e);
    lru_push(p, e, node, tier);
}

int gmg__kvp_put(gmg *g, const gmg_container *c, uint64_t key)
{
    gmg_kvpool *p = g->kvp;
    uint64_t k = gmg_kvp_key(g, c, key);
    uint64_t bytes = (uint64_t)(c->block_bytes * c->tp * c->pp + 0.5);
    uint32_t e = find(p, k);
    if (e != GMG_NONE) { /* the pool holds it already (it was loaded from there): fresher now */
        gmg_kvp_touch(g, e);
        return 0;
    }
    if (bytes > p->cap[GMG_KVP_CPU])
        return 0;
    /* No memory for the bookkeeping: the block is dropped as without a pool (results stay
     * valid, the pool is just smaller); counted so that a report can tell. */
    if ((p->free_ent == GMG_NONE && grow_entries(p)) ||
        (2 * ((uint64_t)p->n_used + 1) > (uint64_t)p->tab_mask + 1 && grow_table(p))) {
        p->oom++;
        return 0;
    }
    uint32_t node = gmg_ctr_node(g, c);
    make_room(p, node, GMG_KVP_CPU, bytes);
    e = p->free_ent;
    p->free_ent = p->ent[e].next;
    p->ent[e] = (gmg_kvp_ent){.key = k, .bytes = bytes, .prev = GMG_NONE, .next = GMG_NONE,
                              .tenant = c->tenant};
    tab_put(p->tab, p->tab_mask, p->ent, e);
    p->n_used++;
    lru_push(p, e, node, GMG_KVP_CPU);
    if (c->tenant < p->n_tenants) {
        p->ten[c->tenant].offload_blocks++;
        p->ten[c->tenant].offload_bytes += bytes;
    }
    return 1;
}

/* ---- lifetime ----------------------------------------------------------------------------- */

int gmg_kvp_create(gmg *g, uint64_t cpu_bytes, uint64_t ssd_bytes, int cluster, uint32_t nodes,
                   uint32_t tenants)
{
    gmg_kvpool *p = ss_calloc(1, sizeof *p);
    if (!p)
        return SS_ENOMEM;
    p->cap[GMG_KVP_CPU] = cpu_bytes;
    p->cap[GMG_KVP_SSD] = ssd_bytes;
    p->cluster = cluster;
    p->n_nodes = nodes ? nodes : 1;
    p->n_tenants = tenants;
    p->free_ent = GMG_NONE;
    p->tab_mask = 1023;
    p->tiers = ss_malloc((size_t)p->n_nodes * GMG_KVP_TIERS * sizeof *p->tiers);
    p->ten = ss_calloc(tenants ? tenants : 1, sizeof *p->ten);
    p->tab = ss_malloc((size_t)(p->tab_mask + 1) * sizeof *p->tab);
    if (!p->tiers || !p->ten || !p->tab) {
        gmg_kvp_destroy(&p);
        return SS_ENOMEM;
    }
    for (size_t i = 0; i < (size_t)p->n_nodes * GMG_KVP_TIERS; i++)
        p->tiers[i] = (gmg_kvp_tier){.head = GMG_NONE, .tail = GMG_NONE};
    memset(p->tab, 0xff, (size_t)(p->tab_mask + 1) * sizeof *p->tab);
    gmg_kvp_destroy(&g->kvp);
    g->kvp = p;
    return SS_OK;
}

int gmg_kvp_clone(const gmg_kvpool *src, gmg_kvpool **out)
{
    gmg_kvpool *p = ss_malloc(sizeof *p);
    if (!p)
        return SS_ENOMEM;
    *p = *src;
    size_t nt = (size_t)src->n_nodes * GMG_KVP_TIERS;
    p->tiers = ss_malloc(nt * sizeof *p->tiers);
    p->ten = ss_malloc((src->n_tenants ? src->n_tenants : 1) * sizeof *p->ten);
    p->tab = ss_malloc((size_t)(src->tab_mask + 1) * sizeof *p->tab);
    p->ent = src->cap_ent ? ss_malloc((size_t)src->cap_ent * sizeof *p->ent) : NULL;
    if (!p->tiers || !p->ten || !p->tab || (src->cap_ent && !p->ent)) {
        gmg_kvp_destroy(&p);
        return SS_ENOMEM;
    }
    memcpy(p->tiers, src->tiers, nt * sizeof *p->tiers);
    memcpy(p->ten, src->ten, src->n_tenants * sizeof *p->ten);
    memcpy(p->tab, src->tab, (size_t)(src->tab_mask + 1) * sizeof *p->tab);
    if (src->cap_ent)
        memcpy(p->ent, src->ent, (size_t)src->cap_ent * sizeof *p->ent);
    *out = p;
    return SS_OK;
}

void gmg_kvp_destroy(gmg_kvpool **pp)
{
    gmg_kvpool *p = *pp;
    if (!p)
        return;
    ss_free(p->tiers);
    ss_free(p->ten);
    ss_free(p->tab);
    ss_free(p->ent);
    ss_free(p);
    *pp = NULL;
}

/* ---- invariants (--check) ------------------------------------------------------------------ */

/* Each tier of each node within its capacity and the totals adding up (O(nodes)); deep: each
 * list walked to the count and bytes it keeps, every listed block in the table under its own
 * key (so no key is held twice in the pool's reach: the table finds one entry per key), and the
 * table holding exactly the listed ones (O(pool)). */
int gmg__kvp_check(const gmg *g, int deep, ss_errbuf *eb)
{
    const gmg_kvpool *p = g->kvp;
    uint64_t listed = 0, total[GMG_KVP_TIERS] = {0};
    for (uint32_t n = 0; n < p->n_nodes; n++)
        for (uint8_t ti = 0; ti < GMG_KVP_TIERS; ti++) {
            const gmg_kvp_tier *t = &p->tiers[(size_t)n * GMG_KVP_TIERS + ti];
            uint64_t bytes = 0;
            uint32_t cnt = 0;
            for (uint32_t e = deep ? t->head : GMG_NONE; e != GMG_NONE; e = p->ent[e].next) {
                const gmg_kvp_ent *x = &p->ent[e];
                if (cnt++ > p->n_used || x->node != n || x->tier != ti || find(p, x->key) != e)
                    return ss_err(eb, SS_ECHECK, "KV pool: node %u %s tier: block %u misplaced "
                                  "(node %u, tier %u) or not found by its key", n,
                                  ti ? "SSD" : "CPU", e, x->node, x->tier);
                bytes += x->bytes;
            }
            if (!deep)
                cnt = t->n, bytes = t->bytes;
            if (cnt != t->n || bytes != t->bytes || t->bytes > p->cap[ti])
                return ss_err(eb, SS_ECHECK, "KV pool: node %u %s tier holds %u blocks, %llu "
                              "bytes (counted %u, %llu) of %llu", n, ti ? "SSD" : "CPU", cnt,
                              (unsigned long long)bytes, t->n, (unsigned long long)t->bytes,
                              (unsigned long long)p->cap[ti]);
            listed += cnt;
            total[ti] += bytes;
        }
    if (total[0] != p->total[0] || total[1] != p->total[1] || total[0] > p->peak[0] ||
        total[1] > p->peak[1] || listed != p->n_used)
        return ss_err(eb, SS_ECHECK, "KV pool: %llu blocks listed, %u counted; tiers %llu + %llu "
                      "bytes (counted %llu + %llu, peaks %llu, %llu)", (unsigned long long)listed,
                      p->n_used, (unsigned long long)total[0], (unsigned long long)total[1],
                      (unsigned long long)p->total[0], (unsigned long long)p->total[1],
                      (unsigned long long)p->peak[0], (unsigned long long)p->peak[1]);
    if (!deep)
        return SS_OK;
    uint32_t in_tab = 0;
    for (uint32_t i = 0; i <= p->tab_mask; i++)
        in_tab += p->tab[i] != GMG_NONE;
    if (in_tab != p->n_used)
        return ss_err(eb, SS_ECHECK, "KV pool: %u blocks in the table, %u listed", in_tab,
                      p->n_used);
    return SS_OK;
}

uint64_t gmg_kvp_check_units(const gmg *g)
{
    return g->kvp ? (uint64_t)g->kvp->n_used + g->kvp->tab_mask + 1 : 0;
}
