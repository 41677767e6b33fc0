/* The prefix cache's runs against the block-level model they replaced (tests/support/pc_oracle):
 * long random sequences of lookups, takes (whole or shorter prefixes), registrations (with
 * blocks computed twice by concurrent prefills), releases, allocations and reservations that
 * evict, direct evictions and copies, on chains with shared prefixes, diverging tails and
 * sessions, with and without a KV pool below, compared after every step: match lengths and idle
 * counts, the refcount of every block of every chain, the counters, the free blocks, the peaks
 * and the GPU's ledger to the bit, the keys evicted in order (the pool's list), and the deep
 * --check of the runs. And the point of runs: long shared prompts keep few of them. And what
 * evicting the newest running requests frees, predicted before any of them drops its blocks. */
#include "support/pc_oracle.h"
#include "support/test_util.h"

#include "core/ss_alloc.h"
#include "gmg/gmg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint32_t rnd(uint64_t *s, uint32_t n) /* uniform in [0, n), n > 0 */
{
    *s += 0x9e3779b97f4a7c15ULL;
    return (uint32_t)(mix(*s) % n);
}

/* A graph of one GPU and one container of `blocks` blocks: the real cache, or none (the oracle's
 * side). A KV pool of ample CPU memory below when kvp. */
typedef struct side {
    gmg g;
    gmg_gpu gpu;
    gmg_container c;
    orc_cache *o;
} side;

static cat_model model = {.name = "m"};

static void side_init(side *s, uint32_t blocks, int oracle, int kvp)
{
    memset(s, 0, sizeof *s);
    s->g.gpus = &s->gpu;
    s->g.n_gpus = 1;
    s->g.ctrs = &s->c;
    s->g.n_ctrs = 1;
    /* a block of a non-integral size: the ledger's sums are exact only in the same order */
    s->c = (gmg_container){.tp = 1, .pp = 1, .block_tokens = 16, .blocks_total = blocks,
                           .blocks_free = blocks, .block_bytes = 1000.3, .model = &model,
                           .running = {GMG_NONE, GMG_NONE, 0}};
    if (oracle)
        assert_non_null(s->o = orc_create(blocks));
    else
        assert_int_equal(gmg_pc_create(&s->c.pc, blocks), 0);
    if (kvp)
        assert_int_equal(gmg_kvp_create(&s->g, 1ULL << 40, 0, 0, 1, 1), 0);
}

static void side_fini(side *s)
{
    gmg_pc_destroy(&s->c.pc);
    orc_destroy(&s->o);
    gmg_kvp_destroy(&s->g.kvp);
}

/* A chain of n blocks whose first `shared` hashes are those of `parent` (chained hashes of
 * random content), or a session's. The caller owns the reference. */
static gmg_chain *chain_new(uint64_t *rng, const gmg_chain *parent, uint32_t shared, uint32_t n)
{
    gmg_chain *ch = ss_malloc(sizeof *ch + (size_t)n * sizeof ch->key[0]);
    assert_non_null(ch);
    *ch = (gmg_chain){.ref = 1, .n = n, .bt = 16};
    uint64_t key = 0;
    for (uint32_t j = 0; j < n; j++) {
        key = j < shared ? parent->key[j] : mix(key ^ mix(rnd(rng, 4) + 11) ^ mix(j * 131 + 7));
        ch->key[j] = key;
    }
    return ch;
}

static gmg_chain *session_chain(uint64_t sid, uint32_t blocks)
{
    gmg_req q = {.prompt = blocks * 16 + 5, .session_id = sid};
    assert_int_equal(gmg_pc_chain_make(&q, NULL, 16), 0);
    return q.chain;
}

enum { NCH = 12, NREQ = 8 };

typedef struct world {
    side a, b;               /* a: the runs; b: the oracle */
    gmg_chain *ch[NCH];      /* the chains requests take their prompts from */
    gmg_req ra[NREQ], rb[NREQ];
    uint64_t rng;
    uint32_t max_runs;
    uint64_t evicted;
} world;

static void world_init(world *w, uint64_t seed, uint32_t blocks, int kvp)
{
    memset(w, 0, sizeof *w);
    w->rng = seed;
    side_init(&w->a, blocks, 0, kvp);
    side_init(&w->b, blocks, 1, kvp);
    /* a tree of chains: each shares a random prefix of an earlier one and diverges after it;
     * three sessions' prompts of different lengths (each a prefix of the longer ones) */
    for (uint32_t i = 0; i < NCH - 3; i++) {
        uint32_t n = 1 + rnd(&w->rng, blocks < 40 ? blocks : 40);
        const gmg_chain *p = i ? w->ch[rnd(&w->rng, i)] : NULL;
        uint32_t shared = p ? rnd(&w->rng, (p->n < n ? p->n : n) + 1) : 0;
        w->ch[i] = chain_new(&w->rng, p, shared, n);
    }
    w->ch[NCH - 3] = session_chain(7, 3 + rnd(&w->rng, 20));
    w->ch[NCH - 2] = session_chain(7, 3 + rnd(&w->rng, 20));
    w->ch[NCH - 1] = session_chain(8, 3 + rnd(&w->rng, 20));
    for (uint32_t i = 0; i < NREQ; i++) {
        w->ra[i] = (gmg_req){.trace_id = i, .prompt = 1};
        w->rb[i] = w->ra[i];
    }
}

static void world_fini(world *w)
{
    for (uint32_t i = 0; i < NREQ; i++) {
        gmg_pc_chain_drop(&w->ra[i]);
        gmg_pc_chain_drop(&w->rb[i]);
    }
    for (uint32_t i = 0; i < NCH; i++) {
        gmg_req q = {.chain = w->ch[i]};
        gmg_pc_chain_drop(&q);
    }
    side_fini(&w->a);
    side_fini(&w->b);
}

static void set_chain(world *w, uint32_t i, gmg_chain *ch)
{
    gmg_pc_chain_drop(&w->ra[i]);
    gmg_pc_chain_drop(&w->rb[i]);
    ch->ref += 2;
    w->ra[i].chain = w->rb[i].chain = ch;
    w->ra[i].pc_registered = w->rb[i].pc_registered = 0;
}

/* Everything both sides show, compared; the step number in the failure. */
static void compare(world *w, uint32_t step)
{
    side *a = &w->a, *b = &w->b;
    const gmg_pcache *pc = a->c.pc;
    const orc_cache *o = b->o;
#define SAME(x, y)                                                                                \
    do {                                                                                          \
        if ((x) != (y))                                                                           \
            fail_msg("step %u: %s = %llu, oracle %llu", step, #x, (unsigned long long)(x),       \
                     (unsigned long long)(y));                                                    \
    } while (0)
    SAME(a->c.blocks_free, b->c.blocks_free);
    SAME(a->c.blocks_peak, b->c.blocks_peak);
    SAME(a->c.blocks_reserved, b->c.blocks_reserved);
    SAME(pc->n_held, o->n_held);
    SAME(pc->n_idle, o->n_idle);
    SAME(pc->refs, o->refs);
    SAME(pc->evictions, o->evictions);
    if (a->gpu.mem.kv_used != b->gpu.mem.kv_used || a->gpu.kv_used_peak != b->gpu.kv_used_peak)
        fail_msg("step %u: ledger %.17g (peak %.17g), oracle %.17g (%.17g)", step,
                 a->gpu.mem.kv_used, a->gpu.kv_used_peak, b->gpu.mem.kv_used,
                 b->gpu.kv_used_peak);
    uint64_t shared = 0;
    for (uint32_t i = 0; i < NREQ; i++) {
        SAME(w->ra[i].blocks, w->rb[i].blocks);
        SAME(w->ra[i].pc_shared, w->rb[i].pc_shared);
        shared += w->ra[i].pc_shared;
    }
    /* every block of every chain: the runs' walk against the oracle's table */
    for (uint32_t i = 0; i < NCH; i++) {
        gmg_req q = {.chain = w->ch[i]};
        gmg_pc_walk wk;
        gmg_pc_walk_start(&wk, &a->c, &q, UINT32_MAX);
        uint32_t j = 0, hi, ref;
        while (gmg_pc_walk_next(&wk, &hi, &ref))
            for (; j < hi; j++)
                if (orc_ref(o, q.chain->key[j]) != ref)
                    fail_msg("step %u: chain %u block %u: ref %u, oracle %lld", step, i, j, ref,
                             (long long)orc_ref(o, q.chain->key[j]));
        for (; j < q.chain->n; j++)
            if (orc_ref(o, q.chain->key[j]) != -1)
                fail_msg("step %u: chain %u block %u: not reachable, oracle ref %lld", step, i,
                         j, (long long)orc_ref(o, q.chain->key[j]));
        uint32_t max = rnd(&w->rng, q.chain->n + 2), ia, ib;
        uint32_t ma = gmg_pc_match(&a->c, &q, max, &ia), mb = orc_match(o, &b->c, &q, max, &ib);
        SAME(ma, mb);
        SAME(ia, ib);
    }
    SAME(orc_orphans(o), 0); /* a cached block's parent is always cached */
    if (a->g.kvp) { /* the blocks evicted, in order */
        const gmg_kvpool *pa = a->g.kvp, *pb = b->g.kvp;
        SAME(pa->n_used, pb->n_used);
        for (uint32_t x = pa->tiers[0].head, y = pb->tiers[0].head; x != GMG_NONE || y != GMG_NONE;
             x = pa->ent[x].next, y = pb->ent[y].next) {
            if (x == GMG_NONE || y == GMG_NONE)
                fail_msg("step %u: KV pools of different lengths", step);
            SAME(pa->ent[x].key, pb->ent[y].key);
        }
    }
    ss_errbuf eb;
    if (gmg__pc_check(&a->g, &a->c, shared, 1, &eb))
        fail_msg("step %u: %s", step, eb.msg);
    if (pc->n_runs > w->max_runs)
        w->max_runs = pc->n_runs;
#undef SAME
}

/* A request holding nothing looks its chain up and takes a prefix (sometimes shorter than the
 * match, sometimes none: its prefill then computes cached blocks again) and new blocks. */
static void op_admit(world *w, uint32_t i)
{
    side *a = &w->a, *b = &w->b;
    set_chain(w, i, w->ch[rnd(&w->rng, NCH)]);
    gmg_req *ra = &w->ra[i], *rb = &w->rb[i];
    uint32_t n = ra->chain->n, max = rnd(&w->rng, n + 2), ia, ib;
    uint32_t m = gmg_pc_match(&a->c, ra, max, &ia);
    assert_int_equal(m, orc_match(b->o, &b->c, rb, max, &ib));
    uint32_t r = rnd(&w->rng, 4), h = r == 0 ? 0 : r == 1 ? rnd(&w->rng, m + 1) : m;
    if (h) {
        gmg_pc_take(&a->g, &a->c, ra, h);
        orc_take(b->o, &b->g, &b->c, rb, h);
    }
    uint32_t room = a->c.blocks_free, want = n + 2 - h;
    uint32_t k = rnd(&w->rng, (room < want ? room : want) + 1);
    gmg_req_set_blocks(&a->g, &a->c, ra, h + k);
    orc_set_blocks(b->o, &b->g, &b->c, rb, h + k);
}

static void op_grow(world *w, uint32_t i)
{
    uint32_t k = rnd(&w->rng, w->a.c.blocks_free + 1);
    gmg_req_set_blocks(&w->a.g, &w->a.c, &w->ra[i], w->ra[i].blocks + k);
    orc_set_blocks(w->b.o, &w->b.g, &w->b.c, &w->rb[i], w->rb[i].blocks + k);
}

static void op_register(world *w, uint32_t i)
{
    gmg_pc_register(&w->a.g, &w->a.c, &w->ra[i]);
    orc_register(w->b.o, &w->b.g, &w->b.c, &w->rb[i]);
}

static void op_release(world *w, uint32_t i)
{
    gmg_req_set_blocks(&w->a.g, &w->a.c, &w->ra[i], 0);
    orc_set_blocks(w->b.o, &w->b.g, &w->b.c, &w->rb[i], 0);
    w->ra[i].pc_registered = w->rb[i].pc_registered = 0; /* as a preemption does */
}

static void op_reserve(world *w)
{
    if (w->a.c.blocks_reserved && rnd(&w->rng, 2)) {
        uint32_t k = 1 + rnd(&w->rng, w->a.c.blocks_reserved);
        gmg_release_reserved(&w->a.g, &w->a.c, k);
        gmg_release_reserved(&w->b.g, &w->b.c, k);
        return;
    }
    uint32_t k = rnd(&w->rng, w->a.c.blocks_free / 2 + 1);
    gmg_reserve_blocks(&w->a.g, &w->a.c, k);
    orc_reserve(w->b.o, &w->b.g, &w->b.c, k);
}

static void op_evict(world *w)
{
    uint32_t k = rnd(&w->rng, w->a.c.blocks_free + 2);
    gmg__pc_make_room(&w->a.g, &w->a.c, k);
    orc_make_room(w->b.o, &w->b.g, &w->b.c, k);
}

static void op_clone(world *w)
{
    gmg_pcache *p = NULL;
    assert_int_equal(gmg_pc_clone(w->a.c.pc, &p), 0);
    gmg_pc_destroy(&w->a.c.pc);
    w->a.c.pc = p;
    orc_cache *o = orc_clone(w->b.o);
    assert_non_null(o);
    orc_destroy(&w->b.o);
    w->b.o = o;
}

static void step(world *w)
{
    uint32_t i = rnd(&w->rng, NREQ), op = rnd(&w->rng, 100);
    int holds = w->ra[i].blocks > 0;
    if (op < 30)
        holds ? op_register(w, i) : op_admit(w, i);
    else if (op < 55)
        holds ? op_release(w, i) : op_admit(w, i);
    else if (op < 70)
        holds ? op_grow(w, i) : op_admit(w, i);
    else if (op < 85)
        op_reserve(w);
    else if (op < 97)
        op_evict(w);
    else
        op_clone(w);
}

static void run_seed(uint64_t seed, uint32_t blocks, int kvp, uint32_t steps)
{
    world w;
    world_init(&w, seed, blocks, kvp);
    compare(&w, 0);
    for (uint32_t s = 1; s <= steps; s++) {
        step(&w);
        compare(&w, s);
    }
    assert_true(w.a.c.pc->evictions > 0); /* the sequence did evict */
    assert_true(w.max_runs > 1);
    world_fini(&w);
    tu_assert_no_leaks();
}

/* What op_credit saw: releases whose prediction was below the blocks held (a cached block
 * another request still read), and above the private ones (a shared block freed with its last
 * reader). */
typedef struct credit_seen {
    uint32_t held_back, shared_freed;
} credit_seen;

/* The requests holding blocks run, in a random order (a's running list); the newest few are
 * evicted, newest first, and each frees exactly what gmg_req_frees_after_newer said before any
 * of them was: what a batching policy credits its view of the pool with. */
static void op_credit(world *w, credit_seen *seen)
{
    side *a = &w->a;
    gmg_id ids[NREQ], n = 0;
    uint32_t want[NREQ];
    for (uint32_t i = 0; i < NREQ; i++)
        if (w->ra[i].blocks)
            ids[n++] = i;
    for (uint32_t i = n; i > 1; i--) { /* shuffle */
        uint32_t k = rnd(&w->rng, i), t = ids[i - 1];
        ids[i - 1] = ids[k];
        ids[k] = t;
    }
    for (uint32_t i = 0; i < n; i++)
        gmg_list_push_back(&a->g, &a->c.running, ids[i]);
    for (uint32_t i = 0; i < n; i++)
        want[i] = gmg_req_frees_after_newer(&a->g, &a->c, ids[i]);
    uint32_t evict = n ? 1 + rnd(&w->rng, n) : 0;
    for (uint32_t i = n; i > n - evict; i--) {
        const gmg_req *q = &w->ra[ids[i - 1]];
        uint32_t before = a->c.blocks_free, blocks = q->blocks, own = gmg_req_private(q);
        gmg_list_remove(&a->g, &a->c.running, ids[i - 1]);
        op_release(w, ids[i - 1]);
        if (a->c.blocks_free - before != want[i - 1])
            fail_msg("request %u (%u blocks, %u private, newest %u of %u): freed %u, predicted %u",
                     ids[i - 1], blocks, own, n - i + 1, n, a->c.blocks_free - before,
                     want[i - 1]);
        seen->held_back += want[i - 1] < blocks;
        seen->shared_freed += want[i - 1] > own;
    }
    while (a->c.running.head != GMG_NONE)
        gmg_list_remove(&a->g, &a->c.running, a->c.running.head);
}

static void test_eviction_credit_matches_the_release(void **state)
{
    (void)state;
    static const uint32_t sizes[] = {24, 48, 96};
    credit_seen seen = {0};
    for (uint64_t seed = 1; seed <= 12; seed++) {
        world w;
        world_init(&w, seed * 6151, sizes[seed % 3], 0);
        w.a.g.reqs = w.ra; /* the running list links them */
        w.a.g.n_slots = NREQ;
        for (uint32_t s = 1; s <= 2000; s++) {
            step(&w);
            if (s % 5 == 0)
                op_credit(&w, &seen);
            compare(&w, s);
        }
        world_fini(&w);
        tu_assert_no_leaks();
    }
    assert_true(seen.held_back > 0);
    assert_true(seen.shared_freed > 0);
}

static void test_runs_match_the_block_model(void **state)
{
    (void)state;
    static const uint32_t sizes[] = {12, 24, 48, 96, 200};
    for (uint64_t seed = 1; seed <= 40; seed++)
        run_seed(seed * 7919, sizes[seed % 5], 0, 3000);
}

static void test_runs_match_with_a_kv_pool(void **state)
{
    (void)state;
    static const uint32_t sizes[] = {16, 40, 120};
    for (uint64_t seed = 1; seed <= 12; seed++)
        run_seed(seed * 104729, sizes[seed % 3], 1, 3000);
}

/* Long shared prompts (four documents of 2,000 blocks, each request one of them and a tail of
 * its own), many requests in flight and the cache full enough to evict: the cache holds tens of
 * thousands of blocks in a few runs per document and one per cached tail, not one per block. */
static void test_long_shared_prompts_keep_few_runs(void **state)
{
    (void)state;
    enum { DOCS = 4, DOC = 2000, TAIL = 20, REQS = 1000, LIVE = 24, BLOCKS = 16000 };
    side s;
    side_init(&s, BLOCKS, 0, 0);
    uint64_t rng = 5;
    gmg_chain *doc[DOCS];
    for (int d = 0; d < DOCS; d++)
        doc[d] = chain_new(&rng, NULL, 0, DOC);
    gmg_req r[LIVE];
    memset(r, 0, sizeof r);
    uint32_t max_runs = 0, blocks_then = 0;
    for (uint32_t i = 0; i < REQS; i++) {
        gmg_req *q = &r[i % LIVE];
        if (q->blocks)
            gmg_req_set_blocks(&s.g, &s.c, q, 0);
        gmg_pc_chain_drop(q);
        *q = (gmg_req){.trace_id = i, .prompt = 1};
        q->chain = chain_new(&rng, doc[rnd(&rng, DOCS)], DOC, DOC + TAIL);
        uint32_t idle, h = gmg_pc_match(&s.c, q, DOC + TAIL, &idle);
        if (h)
            gmg_pc_take(&s.g, &s.c, q, h);
        gmg_req_set_blocks(&s.g, &s.c, q, DOC + TAIL + 1);
        gmg_pc_register(&s.g, &s.c, q);
        const gmg_pcache *pc = s.c.pc;
        /* each cached tail is a branch of its own (one run), each document at most a few
         * (split where requests in flight hold it and where it was released) */
        if (pc->n_runs > (pc->n_held + pc->n_idle) / TAIL + 1 + 3 * DOCS + 2 * LIVE)
            fail_msg("request %u: %u runs for %u blocks", i, pc->n_runs, pc->n_held + pc->n_idle);
        if (pc->n_runs > max_runs) {
            max_runs = pc->n_runs;
            blocks_then = pc->n_held + pc->n_idle;
        }
    }
    const gmg_pcache *pc = s.c.pc;
    printf("# %u runs at most (%u cached blocks then); now %u runs for %u blocks, %llu evicted\n",
           max_runs, blocks_then, pc->n_runs, pc->n_held + pc->n_idle,
           (unsigned long long)pc->evictions);
    assert_true(pc->evictions > 0);
    assert_true(blocks_then >= 20 * max_runs);
    for (int i = 0; i < LIVE; i++) {
        gmg_req_set_blocks(&s.g, &s.c, &r[i], 0);
        gmg_pc_chain_drop(&r[i]);
    }
    for (int d = 0; d < DOCS; d++) {
        gmg_req q = {.chain = doc[d]};
        gmg_pc_chain_drop(&q);
    }
    side_fini(&s);
    tu_assert_no_leaks();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_match_the_block_model),
        cmocka_unit_test(test_runs_match_with_a_kv_pool),
        cmocka_unit_test(test_long_shared_prompts_keep_few_runs),
        cmocka_unit_test(test_eviction_credit_matches_the_release),
    };
    return cmocka_run_group_tests_name("pcruns", tests, NULL, NULL);
}
