/* The block-level prefix cache, as gmg_pcache.c kept it before runs: the reference model of
 * tests/unit/test_pcruns.c (see pc_oracle.h). Kept as it was, names aside, plus the parent of
 * each block (to count unreachable children). */
#include "support/pc_oracle.h"

#include "core/ss_alloc.h"

#include <string.h>

static uint32_t find(const orc_cache *pc, uint64_t key)
{
    for (uint32_t i = (uint32_t)key & pc->tab_mask;; i = (i + 1) & pc->tab_mask) {
        uint32_t e = pc->tab[i];
        if (e == GMG_NONE || pc->ent[e].key == key)
            return e;
    }
}

static void tab_insert(orc_cache *pc, uint32_t e)
{
    uint32_t i = (uint32_t)pc->ent[e].key & pc->tab_mask;
    while (pc->tab[i] != GMG_NONE)
        i = (i + 1) & pc->tab_mask;
    pc->tab[i] = e;
}

static void tab_remove(orc_cache *pc, uint32_t e)
{
    uint32_t i = (uint32_t)pc->ent[e].key & pc->tab_mask;
    while (pc->tab[i] != e)
        i = (i + 1) & pc->tab_mask;
    for (uint32_t j = (i + 1) & pc->tab_mask;; j = (j + 1) & pc->tab_mask) {
        uint32_t f = pc->tab[j];
        if (f == GMG_NONE)
            break;
        uint32_t home = (uint32_t)pc->ent[f].key & pc->tab_mask;
        if (((j - home) & pc->tab_mask) >= ((j - i) & pc->tab_mask)) {
            pc->tab[i] = f;
            i = j;
        }
    }
    pc->tab[i] = GMG_NONE;
}

static void lru_unlink(orc_cache *pc, uint32_t e)
{
    orc_ent *x = &pc->ent[e];
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

static void lru_insert_before(orc_cache *pc, uint32_t e, uint32_t at)
{
    orc_ent *x = &pc->ent[e];
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

uint32_t orc_match(const orc_cache *o, const gmg_container *c, const gmg_req *r, uint32_t max,
                   uint32_t *idle_out)
{
    uint32_t n = 0, idle = 0;
    uint32_t lim = gmg_pc_blocks(r, c->block_tokens);
    if (lim > max)
        lim = max;
    for (; n < lim; n++) {
        uint32_t e = find(o, gmg_pc_key(r, n));
        if (e == GMG_NONE)
            break;
        idle += o->ent[e].ref == 0;
    }
    if (idle_out)
        *idle_out = idle;
    return n;
}

static int incref_idle(orc_cache *pc, gmg_container *c, uint32_t e)
{
    pc->refs++;
    if (pc->ent[e].ref++)
        return 0;
    lru_unlink(pc, e);
    pc->n_held++;
    if (c->blocks_free == 0)
        ss_fatal(SS_LOC, "oracle: a cached block with no free block");
    c->blocks_free--;
    return 1;
}

static void held(gmg *g, gmg_container *c, uint32_t n)
{
    if (!n)
        return;
    gmg__ledger_kv(g, c, n);
    uint32_t used = c->blocks_total - c->blocks_free;
    if (used > c->blocks_peak)
        c->blocks_peak = used;
}

void orc_take(orc_cache *o, gmg *g, gmg_container *c, gmg_req *r, uint32_t h)
{
    uint32_t idle = 0;
    for (uint32_t j = 0; j < h; j++) {
        uint32_t e = find(o, gmg_pc_key(r, j));
        if (e == GMG_NONE)
            ss_fatal(SS_LOC, "oracle: block %u of a matched prefix is not cached", j);
        idle += (uint32_t)incref_idle(o, c, e);
    }
    held(g, c, idle);
    r->blocks = r->pc_shared = h;
}

void orc_register(orc_cache *o, gmg *g, gmg_container *c, gmg_req *r)
{
    if (r->pc_registered)
        return;
    r->pc_registered = 1;
    uint32_t n = gmg_pc_blocks(r, c->block_tokens);
    if (n > r->blocks)
        n = r->blocks;
    for (uint32_t j = r->pc_shared; j < n; j++) {
        uint64_t key = gmg_pc_key(r, j);
        uint32_t e = find(o, key);
        if (e != GMG_NONE) {
            held(g, c, (uint32_t)incref_idle(o, c, e));
            c->blocks_free++;
            gmg__ledger_kv(g, c, -1);
        } else {
            e = o->free_ent;
            if (e == GMG_NONE)
                ss_fatal(SS_LOC, "oracle: prefix cache full");
            o->free_ent = o->ent[e].next;
            o->ent[e] = (orc_ent){.key = key, .pkey = j ? gmg_pc_key(r, j - 1) : 0, .pos = j,
                                  .ref = 1, .prev = GMG_NONE, .next = GMG_NONE};
            tab_insert(o, e);
            o->n_held++;
            o->refs++;
        }
        r->pc_shared = j + 1;
    }
}

void orc_release(orc_cache *o, gmg *g, gmg_container *c, gmg_req *r)
{
    uint32_t anchor = GMG_NONE, freed = 0;
    for (uint32_t j = 0; j < r->pc_shared; j++) {
        uint32_t e = find(o, gmg_pc_key(r, j));
        if (e == GMG_NONE || o->ent[e].ref == 0)
            ss_fatal(SS_LOC, "oracle: request shares block %u, which the cache does not hold", j);
        o->refs--;
        if (--o->ent[e].ref == 0) {
            lru_insert_before(o, e, anchor);
            anchor = e;
            o->n_held--;
            c->blocks_free++;
            freed++;
        }
    }
    if (freed)
        gmg__ledger_kv(g, c, -(int64_t)freed);
    r->blocks -= r->pc_shared;
    r->pc_shared = 0;
}

void orc_make_room(orc_cache *o, gmg *g, gmg_container *c, uint32_t n)
{
    while (o->n_idle && c->blocks_free - o->n_idle < n) {
        uint32_t e = o->lru_head;
        if (g->kvp)
            gmg__kvp_put(g, c, o->ent[e].key);
        lru_unlink(o, e);
        tab_remove(o, e);
        o->ent[e].next = o->free_ent;
        o->free_ent = e;
        o->evictions++;
    }
}

void orc_set_blocks(orc_cache *o, gmg *g, gmg_container *c, gmg_req *r, uint32_t blocks)
{
    if (blocks == r->blocks)
        return;
    if (r->pc_shared) {
        if (blocks) {
            if (blocks < r->pc_shared)
                return;
        } else {
            orc_release(o, g, c, r);
            if (r->blocks == 0)
                return;
        }
    }
    int64_t delta = (int64_t)blocks - (int64_t)r->blocks;
    if (delta > (int64_t)c->blocks_free)
        ss_fatal(SS_LOC, "oracle: %lld more KV blocks, %u free", (long long)delta, c->blocks_free);
    if (delta > 0)
        orc_make_room(o, g, c, (uint32_t)delta);
    c->blocks_free = (uint32_t)((int64_t)c->blocks_free - delta);
    r->blocks = blocks;
    uint32_t used = c->blocks_total - c->blocks_free;
    if (used > c->blocks_peak)
        c->blocks_peak = used;
    gmg__ledger_kv(g, c, delta);
}

void orc_reserve(orc_cache *o, gmg *g, gmg_container *c, uint32_t n)
{
    if (n > c->blocks_free)
        ss_fatal(SS_LOC, "oracle: reserving %u blocks with %u free", n, c->blocks_free);
    orc_make_room(o, g, c, n);
    c->blocks_free -= n;
    c->blocks_reserved += n;
    uint32_t used = c->blocks_total - c->blocks_free;
    if (used > c->blocks_peak)
        c->blocks_peak = used;
    gmg__ledger_kv(g, c, n);
}

int64_t orc_ref(const orc_cache *o, uint64_t key)
{
    uint32_t e = find(o, key);
    return e == GMG_NONE ? -1 : (int64_t)o->ent[e].ref;
}

uint32_t orc_orphans(const orc_cache *o)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i <= o->tab_mask; i++) {
        uint32_t e = o->tab[i];
        n += e != GMG_NONE && o->ent[e].pos && find(o, o->ent[e].pkey) == GMG_NONE;
    }
    return n;
}

static size_t layout(uint32_t cap, uint32_t *tab_n_out, size_t *tab_off_out)
{
    uint32_t t = 16;
    while (t < 2 * (uint64_t)cap)
        t *= 2;
    *tab_n_out = t;
    *tab_off_out = (size_t)cap * sizeof(orc_ent);
    return *tab_off_out + (size_t)t * sizeof(uint32_t);
}

orc_cache *orc_create(uint32_t blocks)
{
    uint32_t t;
    size_t to, n = layout(blocks, &t, &to);
    orc_cache *o = ss_calloc(1, sizeof *o);
    char *mem = ss_malloc(n);
    if (!o || !mem) {
        ss_free(o);
        ss_free(mem);
        return NULL;
    }
    o->cap = blocks;
    o->ent = (orc_ent *)mem;
    o->tab = (uint32_t *)(mem + to);
    o->tab_mask = t - 1;
    memset(o->tab, 0xff, (size_t)t * sizeof *o->tab);
    o->lru_head = o->lru_tail = GMG_NONE;
    o->free_ent = blocks ? 0 : GMG_NONE;
    for (uint32_t i = 0; i < blocks; i++)
        o->ent[i] = (orc_ent){.prev = GMG_NONE, .next = i + 1 < blocks ? i + 1 : GMG_NONE};
    return o;
}

orc_cache *orc_clone(const orc_cache *src)
{
    uint32_t t;
    size_t to, n = layout(src->cap, &t, &to);
    orc_cache *o = ss_malloc(sizeof *o);
    char *mem = ss_malloc(n);
    if (!o || !mem) {
        ss_free(o);
        ss_free(mem);
        return NULL;
    }
    *o = *src;
    memcpy(mem, src->ent, n);
    o->ent = (orc_ent *)mem;
    o->tab = (uint32_t *)(mem + to);
    return o;
}

void orc_destroy(orc_cache **o)
{
    if (*o)
        ss_free((*o)->ent);
    ss_free(*o);
    *o = NULL;
}
