/* A reference model of the automatic prefix cache for tests: the block-level implementation the
 * cache had before it kept runs (one hash-table entry per cached block, a refcount each, and an
 * LRU list of idle blocks), with its own names and its own state beside a container whose pc is
 * NULL. tests/unit/test_pcruns.c drives it and the real cache through the same operations and
 * compares them after every step. Test code only. */
#ifndef SS_TESTS_SUPPORT_PC_ORACLE_H
#define SS_TESTS_SUPPORT_PC_ORACLE_H

#include <stdint.h>

#include "gmg/gmg.h"

typedef struct orc_ent {
    uint64_t key;        /* chained hash */
    uint64_t pkey;       /* its parent's (block pos - 1), 0 for block 0 */
    uint32_t pos;        /* its place in its chain */
    uint32_t ref;        /* requests reading it; 0 = idle (in the LRU list) */
    uint32_t prev, next; /* LRU links (idle) or free-list link (unused) */
} orc_ent;

typedef struct orc_cache {
    uint32_t cap, n_held, n_idle;
    uint32_t lru_head, lru_tail, free_ent, tab_mask;
    uint64_t evictions, refs;
    uint32_t *tab;
    orc_ent *ent;
} orc_cache;

/* Create for `blocks` blocks, copy, free. Create and copy return NULL when out of memory. */
orc_cache *orc_create(uint32_t blocks);
orc_cache *orc_clone(const orc_cache *o);
void orc_destroy(orc_cache **o);
/* The operations of gmg_pcache.c and gmg_req.c, block by block, on o for container c of g
 * (whose pc is NULL): gmg_pc_match, gmg_pc_take, gmg_pc_register, gmg__pc_release,
 * gmg__pc_make_room, gmg_req_set_blocks and gmg_reserve_blocks. */
uint32_t orc_match(const orc_cache *o, const gmg_container *c, const gmg_req *r, uint32_t max,
                   uint32_t *idle_out);
void orc_take(orc_cache *o, gmg *g, gmg_container *c, gmg_req *r, uint32_t h);
void orc_register(orc_cache *o, gmg *g, gmg_container *c, gmg_req *r);
void orc_release(orc_cache *o, gmg *g, gmg_container *c, gmg_req *r);
void orc_make_room(orc_cache *o, gmg *g, gmg_container *c, uint32_t n);
void orc_set_blocks(orc_cache *o, gmg *g, gmg_container *c, gmg_req *r, uint32_t blocks);
void orc_reserve(orc_cache *o, gmg *g, gmg_container *c, uint32_t n);
/* The refcount of the block of hash key, -1 when it is not cached. */
int64_t orc_ref(const orc_cache *o, uint64_t key);
/* Cached blocks whose parent is not cached (unreachable children). */
uint32_t orc_orphans(const orc_cache *o);

#endif
