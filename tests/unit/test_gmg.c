/* The Global Mapping Graph on its own: request slots (recycled, reset, told apart by serial),
 * the intrusive lists, KV-pool sizing and the block bookkeeping that keeps each GPU's memory
 * ledger in step, swapping, the request state transitions (each one leaving a graph that
 * gmg_check accepts), and what gmg_check finds when the state is corrupted. */
#include "support/test_util.h"

#include "catalog/catalog.h"
#include "core/ss_alloc.h"
#include "gmg/gmg.h"

#include <stdlib.h>
#include <string.h>

typedef struct fx {
    catalog *cat;
    gmg *g;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    ss_errbuf eb;
    if (catalog_load(&f->cat, tu_src_path("profiles"), &eb) || gmg_create(&f->g))
        return -1;
    gmg_ctr_spec s = {.model = catalog_model(f->cat, "llama-2-7b"),
                      .gpu = catalog_gpu(f->cat, "a100-80g"),
                      .engine = catalog_engine(f->cat, CAT_ENGINE_EAGER), .tp = 1, .pp = 1,
                      .tiers = 1, .cost_backend = "roofline", .gpu_mem_util = 0.9,
                      .block_tokens = 16, .max_batch_tokens = 4096, .max_seqs = 256,
                      .runtime_reserve = 1 << 30, .swap_bytes = 4.0 * (1 << 30)};
    if (gmg_add_containers(f->g, &s, 2, &eb))
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    gmg_destroy(&f->g);
    catalog_destroy(&f->cat);
    free(f);
    tu_assert_no_leaks();
    return 0;
}

static void expect_order(const gmg *g, const gmg_list *l, const gmg_id *want, uint32_t n)
{
    assert_int_equal(l->n, n);
    gmg_id r = l->head;
    for (uint32_t i = 0; i < n; i++, r = g->reqs[r].next)
        assert_int_equal(r, want[i]);
    assert_int_equal(r, GMG_NONE);
    assert_int_equal(l->tail, n ? want[n - 1] : GMG_NONE);
}

/* Host swap space larger than 2^32 blocks is 2^32 - 1 blocks, not a conversion of an
 * out-of-range double (undefined; it gave arbitrary counts); none is none. */
static void test_swap_blocks_saturate(void **state)
{
    fx *f = *state;
    ss_errbuf eb;
    gmg *g = NULL;
    assert_int_equal(gmg_create(&g), 0);
    gmg_ctr_spec s = {.model = catalog_model(f->cat, "llama-2-7b"),
                      .gpu = catalog_gpu(f->cat, "a100-80g"),
                      .engine = catalog_engine(f->cat, CAT_ENGINE_EAGER), .tp = 1, .pp = 1,
                      .tiers = 1, .cost_backend = "roofline", .gpu_mem_util = 0.9,
                      .block_tokens = 16, .max_batch_tokens = 4096, .max_seqs = 256,
                      .runtime_reserve = 1 << 30, .swap_bytes = 1e300};
    assert_int_equal(gmg_add_containers(g, &s, 1, &eb), 0);
    s.swap_bytes = 0;
    assert_int_equal(gmg_add_containers(g, &s, 1, &eb), 0);
    assert_int_equal(g->ctrs[0].swap_total, UINT32_MAX);
    assert_int_equal(g->ctrs[0].swap_free, UINT32_MAX);
    assert_int_equal(g->ctrs[1].swap_total, 0);
    gmg_destroy(&g);
}

/* Slots are reused last-freed first, come back reset, and a new serial tells them apart. */
static void test_slots(void **state)
{
    fx *f = *state;
    gmg_id a = gmg_req_alloc(f->g), b = gmg_req_alloc(f->g);
    assert_true(a != GMG_NONE && b != GMG_NONE && a != b);
    assert_int_equal(f->g->in_flight, 2);
    gmg_req *q = gmg_req_at(f->g, a);
    uint64_t serial = q->serial;
    q->first_token = 5;
    q->generated = 7;
    q->state = GMG_REQ_DONE;
    gmg_req_free(f->g, a);
    assert_int_equal(f->g->in_flight, 1);
    gmg_id c = gmg_req_alloc(f->g);
    assert_int_equal(c, a);
    q = gmg_req_at(f->g, c);
    assert_true(q->serial > serial);
    assert_true(q->first_token == -1 && q->generated == 0 && q->container == GMG_NONE);
    assert_int_equal(q->state, GMG_REQ_WAITING);
    q->state = GMG_REQ_DONE;
    gmg_req_free(f->g, c);
    gmg_req_at(f->g, b)->state = GMG_REQ_DONE;
    gmg_req_free(f->g, b);
    assert_int_equal(f->g->in_flight, 0);
}

/* The intrusive lists keep their order through every primitive. */
static void test_lists(void **state)
{
    fx *f = *state;
    gmg_list l = {GMG_NONE, GMG_NONE, 0};
    gmg_id r[4];
    for (int i = 0; i < 4; i++)
        r[i] = gmg_req_alloc(f->g);
    gmg_list_push_back(f->g, &l, r[1]);
    gmg_list_push_back(f->g, &l, r[2]);
    gmg_list_push_front(f->g, &l, r[0]);
    expect_order(f->g, &l, (gmg_id[]){r[0], r[1], r[2]}, 3);
    gmg_list_insert_after(f->g, &l, r[1], r[3]);
    expect_order(f->g, &l, (gmg_id[]){r[0], r[1], r[3], r[2]}, 4);
    gmg_list_remove(f->g, &l, r[0]);
    gmg_list_remove(f->g, &l, r[2]);
    expect_order(f->g, &l, (gmg_id[]){r[1], r[3]}, 2);
    gmg_list_insert_after(f->g, &l, GMG_NONE, r[2]);
    expect_order(f->g, &l, (gmg_id[]){r[2], r[1], r[3]}, 3);
    for (int i = 0; i < 4; i++) {
        if (i != 0)
            gmg_list_remove(f->g, &l, r[i]);
        gmg_req_at(f->g, r[i])->state = GMG_REQ_DONE;
        gmg_req_free(f->g, r[i]);
    }
    expect_order(f->g, &l, NULL, 0);
}

/* The pool is what the GPU's memory leaves after weights, activations and runtime, in whole
 * blocks; blocks_for rounds tokens up; holding blocks moves the GPU's ledger by their bytes,
 * and swapping moves them to host memory and back. */
static void test_blocks(void **state)
{
    fx *f = *state;
    gmg_container *c = &f->g->ctrs[0];
    gmg_gpu *u = &f->g->gpus[c->gpu0];
    const gmg_mem *m = &u->mem;
    double usable = 0.9 * u->capacity - m->weights - m->activations - m->runtime;
    assert_int_equal(c->blocks_total, (uint32_t)(usable / c->block_bytes));
    assert_int_equal(c->blocks_free, c->blocks_total);
    /* llama-2-7b: 32 layers x 2 x 4096 x 2 bytes = 512 KiB a token, 16 tokens a block */
    assert_true(c->block_bytes == 16.0 * 32 * 2 * 4096 * 2);
    assert_int_equal(gmg_blocks_for(c, 1), 1);
    assert_int_equal(gmg_blocks_for(c, 16), 1);
    assert_int_equal(gmg_blocks_for(c, 17), 2);
    assert_true(gmg_blocks_hold(c, 2, 32) && !gmg_blocks_hold(c, 2, 33));
    ss_errbuf eb;
    gmg_id r = gmg_req_alloc(f->g);
    gmg_req *q = gmg_req_at(f->g, r);
    q->container = c->id;
    q->state = GMG_REQ_RUNNING;
    q->prompt = 100;
    q->output = 10;
    gmg_list_push_back(f->g, &c->running, r);
    gmg_req_set_blocks(f->g, c, q, 7);
    assert_int_equal(c->blocks_free, c->blocks_total - 7);
    assert_true(m->kv_used == 7 * c->block_bytes);
    if (gmg_check(f->g, &eb))
        fail_msg("%s", eb.msg);
    gmg_req_swap_out(f->g, c, q);
    assert_int_equal(c->blocks_free, c->blocks_total);
    assert_int_equal(c->swap_free, c->swap_total - 7);
    assert_true(m->kv_used == 0);
    gmg_req_swap_in(f->g, c, q);
    assert_int_equal(c->blocks_free, c->blocks_total - 7);
    assert_int_equal(c->swap_free, c->swap_total);
    gmg_req_set_blocks(f->g, c, q, 0);
    assert_int_equal(c->blocks_free, c->blocks_total);
    assert_true(m->kv_used == 0);
    gmg_list_remove(f->g, &c->running, r);
    q->state = GMG_REQ_DONE;
    gmg_req_free(f->g, r);
    if (gmg_check(f->g, &eb))
        fail_msg("%s", eb.msg);
}

static void must_check(const gmg *g)
{
    ss_errbuf eb;
    if (gmg_check(g, &eb))
        fail_msg("%s", eb.msg);
}

/* A request of c with a prompt of `prompt` tokens, waiting at the back of c's queue. */
static gmg_id waiting(fx *f, gmg_container *c, uint32_t prompt, uint8_t tier)
{
    gmg_id r = gmg_req_alloc(f->g);
    gmg_req *q = gmg_req_at(f->g, r);
    q->container = c->id;
    q->prompt = prompt;
    q->output = 4;
    q->tier = tier;
    gmg_req_enqueue(f->g, c, r, GMG_ENQ_BACK);
    return r;
}

/* Enqueueing keeps the routing demand; tier order puts a better tier before worse ones but
 * behind preempted requests; dequeueing gives the demand back. */
static void test_transitions_queue(void **state)
{
    fx *f = *state;
    gmg_container *c = &f->g->ctrs[0];
    gmg_id a = waiting(f, c, 100, 1), b = waiting(f, c, 40, 1);
    assert_int_equal(c->waiting_blocks, 7 + 3);
    gmg_id p = gmg_req_alloc(f->g);
    gmg_req_at(f->g, p)->container = c->id;
    gmg_req_at(f->g, p)->prompt = 16;
    gmg_req_enqueue(f->g, c, p, GMG_ENQ_FRONT);
    gmg_id t0 = gmg_req_alloc(f->g);
    gmg_req_at(f->g, t0)->container = c->id;
    gmg_req_at(f->g, t0)->prompt = 16;
    gmg_req_enqueue(f->g, c, t0, GMG_ENQ_TIER); /* tier 0: before a and b (tier 1), after p */
    expect_order(f->g, &c->waiting, (gmg_id[]){p, t0, a, b}, 4);
    must_check(f->g);
    gmg_req_dequeue(f->g, c, a);
    gmg_req_reroute(f->g, &f->g->ctrs[1], a, GMG_ENQ_BACK);
    assert_int_equal(gmg_req_get(f->g, a)->container, 1);
    assert_int_equal(f->g->ctrs[1].waiting_blocks, 7);
    assert_int_equal(c->waiting_blocks, 3 + 1 + 1);
    must_check(f->g);
}

/* Admit, schedule, progress to the first token and a gap, preempt (to the front, KV dropped,
 * work to recompute), swap out and in, then end: each step leaves a consistent graph, and the
 * end frees every block. */
static void test_transitions_lifecycle(void **state)
{
    fx *f = *state;
    gmg_container *c = &f->g->ctrs[0];
    if (!c->iter.reqs)
        c->iter.reqs = ss_calloc(8, sizeof *c->iter.reqs), c->iter.cap = 8;
    gmg_id r = waiting(f, c, 100, 0);
    gmg_req *q = gmg_req_at(f->g, r);
    q->first_token = -1;
    gmg_req_admit(f->g, c, r);
    gmg_req_schedule(f->g, c, r, 100, 0);
    assert_int_equal(q->state, GMG_REQ_RUNNING);
    assert_int_equal(q->blocks, 7);
    assert_int_equal(c->iter.n_reqs, 1);
    must_check(f->g);
    ss_time gap;
    assert_int_equal(gmg_req_progress(q, 1000, &gap), 1);
    assert_int_equal(gap, -1);
    assert_int_equal(q->first_token, 1000);
    q->q_tokens = 1;
    assert_int_equal(gmg_req_progress(q, 1500, &gap), 1);
    assert_int_equal(gap, 500);
    assert_int_equal(q->generated, 2);
    gmg_req_preempt(f->g, c, r);
    assert_int_equal(q->state, GMG_REQ_WAITING);
    assert_int_equal(q->computed, 0);
    assert_int_equal(q->blocks, 0);
    assert_int_equal(c->waiting.head, r);
    assert_int_equal(c->waiting_blocks, 7); /* prompt + the 2 generated tokens */
    must_check(f->g);
    gmg_req_admit(f->g, c, r);
    c->iter.n_reqs = 0;
    gmg_req_schedule(f->g, c, r, 102, 0);
    q->q_tokens = 0;
    c->iter.n_reqs = 0;
    gmg_req_to_swap(f->g, c, r);
    assert_int_equal(q->state, GMG_REQ_SWAPPED);
    assert_int_equal(c->swap_free, c->swap_total - 7);
    assert_int_equal(c->blocks_free, c->blocks_total);
    must_check(f->g);
    gmg_req_from_swap(f->g, c, r);
    assert_int_equal(q->state, GMG_REQ_RUNNING);
    assert_int_equal(c->iter.swap_blocks, 14);
    must_check(f->g);
    gmg_req_end(f->g, c, r, GMG_REQ_DONE, 2000);
    assert_int_equal(q->state, GMG_REQ_DONE);
    assert_int_equal(q->finish, 2000);
    assert_int_equal(c->blocks_free, c->blocks_total);
    assert_int_equal(c->running.n, 0);
    gmg_req_free(f->g, r);
    must_check(f->g);
}

/* An offloaded request holds its blocks at home and comes back running with its first token;
 * a migrating one is in transit on the source and lands on the destination's reservation. */
static void test_transitions_offload_and_migrate(void **state)
{
    fx *f = *state;
    gmg_container *a = &f->g->ctrs[0], *b = &f->g->ctrs[1];
    gmg_id r = waiting(f, a, 100, 0);
    gmg_req *q = gmg_req_at(f->g, r);
    gmg_req_offload(f->g, a, r, 7);
    assert_int_equal(q->state, GMG_REQ_OFFLOADED);
    assert_int_equal(a->blocks_offloaded, 7);
    assert_int_equal(a->n_offloaded, 1);
    assert_int_equal(a->waiting_blocks, 0);
    must_check(f->g);
    gmg_req_offload_back(f->g, a, r, 5000);
    assert_int_equal(q->state, GMG_REQ_RUNNING);
    assert_int_equal(q->generated, 1);
    assert_int_equal(q->computed, 100);
    assert_int_equal(q->first_token, 5000);
    assert_int_equal(a->blocks_offloaded, 0);
    assert_int_equal(a->running.head, r);
    must_check(f->g);
    gmg_reserve_blocks(f->g, b, 7);
    gmg_req_migrate_out(f->g, a, r);
    assert_int_equal(q->state, GMG_REQ_MIGRATING);
    assert_int_equal(a->blocks_in_transit, 7);
    gmg_req_migrate_in(f->g, a, b, r, 7);
    assert_int_equal(q->state, GMG_REQ_RUNNING);
    assert_int_equal(q->container, 1);
    assert_int_equal(q->migrations, 1);
    assert_int_equal(a->blocks_in_transit, 0);
    assert_int_equal(a->blocks_free, a->blocks_total);
    assert_int_equal(b->blocks_free, b->blocks_total - 7);
    assert_int_equal(b->blocks_reserved, 0);
    must_check(f->g);
    gmg_req_end(f->g, b, r, GMG_REQ_REJECTED, 6000);
    gmg_req_free(f->g, r);
    must_check(f->g);
}

/* gmg_check names what is wrong: a pool that does not add up, a request in the wrong list. */
static void test_check_finds_corruption(void **state)
{
    fx *f = *state;
    ss_errbuf eb;
    gmg_container *c = &f->g->ctrs[1];
    c->blocks_free--; /* a block lost */
    assert_int_equal(gmg_check(f->g, &eb), SS_ECHECK);
    assert_non_null(strstr(eb.msg, "container 1"));
    c->blocks_free++;
    assert_int_equal(gmg_check(f->g, &eb), 0);
    gmg_id r = gmg_req_alloc(f->g);
    gmg_req *q = gmg_req_at(f->g, r);
    q->container = c->id;
    q->state = GMG_REQ_RUNNING; /* but in the waiting list */
    gmg_list_push_back(f->g, &c->waiting, r);
    assert_int_equal(gmg_check(f->g, &eb), SS_ECHECK);
    q->state = GMG_REQ_WAITING;
    assert_int_equal(gmg_check(f->g, &eb), 0);
    gmg_list_remove(f->g, &c->waiting, r);
    q->state = GMG_REQ_DONE;
    gmg_req_free(f->g, r);
}

/* A clone is a deep copy: changing it leaves the original as it was. */
static void test_clone(void **state)
{
    fx *f = *state;
    gmg_id r = gmg_req_alloc(f->g);
    gmg_req *q = gmg_req_at(f->g, r);
    q->container = 0;
    q->state = GMG_REQ_RUNNING;
    gmg_list_push_back(f->g, &f->g->ctrs[0].running, r);
    gmg_req_set_blocks(f->g, &f->g->ctrs[0], q, 3);
    gmg *k = NULL;
    assert_int_equal(gmg_clone(f->g, &k), 0);
    gmg_req *kq = gmg_req_at(k, r);
    assert_int_equal(kq->blocks, 3);
    gmg_req_set_blocks(k, &k->ctrs[0], kq, 9);
    assert_int_equal(q->blocks, 3);
    assert_int_equal(f->g->ctrs[0].blocks_free, f->g->ctrs[0].blocks_total - 3);
    assert_int_equal(k->ctrs[0].blocks_free, k->ctrs[0].blocks_total - 9);
    gmg_destroy(&k);
    gmg_req_set_blocks(f->g, &f->g->ctrs[0], q, 0);
    gmg_list_remove(f->g, &f->g->ctrs[0].running, r);
    q->state = GMG_REQ_DONE;
    gmg_req_free(f->g, r);
}

/* A partial copy keeps the chosen containers' requests (their block chains shared, each kept
 * until its last holder goes) and
 * freezes the others: no requests, queues or cache, pools as they were, skipped by gmg_check,
 * and their slots free (on the free list, not in flight). */
static void test_clone_part(void **state)
{
    fx *f = *state;
    gmg_container *a = &f->g->ctrs[0], *b = &f->g->ctrs[1];
    gmg_id ra = waiting(f, a, 100, 0), rb = waiting(f, b, 200, 0), rb2 = waiting(f, b, 16, 0);
    gmg_req *qa = gmg_req_at(f->g, ra);
    static const uint32_t ids[] = {11, 12};
    qa->n_prefix_blocks = 2;
    assert_int_equal(gmg_pc_chain_make(qa, ids, 16), 0);
    assert_non_null(qa->chain);
    assert_int_equal(qa->chain->n, 100 / 16); /* the prompt's full blocks, all named */
    uint64_t last = gmg_pc_key(qa, 5);
    gmg_req_admit(f->g, b, rb);
    gmg_req_set_blocks(f->g, b, gmg_req_at(f->g, rb), 13);
    must_check(f->g);
    uint8_t keep[2] = {1, 0};
    gmg *k = NULL;
    assert_int_equal(gmg_clone_part(f->g, keep, &k), 0);
    must_check(k);
    assert_int_equal(k->in_flight, 1);
    assert_int_equal(k->ctrs[0].frozen, 0);
    assert_int_equal(k->ctrs[1].frozen, 1);
    assert_int_equal(k->ctrs[1].running.n + k->ctrs[1].waiting.n, 0);
    assert_int_equal(k->ctrs[1].blocks_free, b->blocks_free); /* its pool as it was */
    assert_int_equal(k->reqs[rb].state, GMG_REQ_FREE);
    assert_int_equal(k->reqs[rb2].state, GMG_REQ_FREE);
    assert_int_equal(k->reqs[ra].state, GMG_REQ_WAITING);
    assert_ptr_equal(k->reqs[ra].chain, qa->chain); /* shared */
    assert_int_equal(qa->chain->ref, 2);
    assert_int_equal(k->ctrs[0].waiting.head, ra);
    gmg_destroy(&k);
    assert_int_equal(qa->chain->ref, 1); /* the copy's hold went with it */
    assert_true(gmg_pc_key(qa, 5) == last);
    gmg_req_end(f->g, b, rb, GMG_REQ_DONE, 1);
    gmg_req_end(f->g, b, rb2, GMG_REQ_DONE, 1);
    gmg_req_end(f->g, a, ra, GMG_REQ_DONE, 1);
    gmg_req_free(f->g, rb);
    gmg_req_free(f->g, rb2);
    gmg_req_free(f->g, ra);
    must_check(f->g);
}

/* The fields a copied request carries over (gmg_req has holes: compared one by one). */
static void assert_same_req(const gmg_req *a, const gmg_req *b)
{
    assert_int_equal(a->trace_id, b->trace_id);
    assert_int_equal(a->arrival, b->arrival);
    assert_int_equal(a->prompt, b->prompt);
    assert_int_equal(a->output, b->output);
    assert_int_equal(a->output_pred, b->output_pred);
    assert_int_equal(a->tier, b->tier);
    assert_int_equal(a->state, b->state);
    assert_int_equal(a->container, b->container);
    assert_int_equal(a->generated, b->generated);
    assert_int_equal(a->computed, b->computed);
    assert_int_equal(a->blocks, b->blocks);
    assert_int_equal(a->n_prefix_blocks, b->n_prefix_blocks);
    assert_ptr_equal(a->chain, b->chain);
    assert_int_equal(a->prev, b->prev);
    assert_int_equal(a->next, b->next);
    assert_int_equal(a->serial, b->serial);
}

/* A partial copy lists the slots it copied (gmg_req_roster): exactly the kept containers'
 * requests, ascending, each as it was; the others are free, on a free list that ascends. A
 * whole copy, or a partial one that has handed out a slot since, lists none (every slot). A
 * copy refilled in place (gmg_recopy_part) is the new copy. */
static void test_clone_part_roster(void **state)
{
    fx *f = *state;
    gmg_container *a = &f->g->ctrs[0], *b = &f->g->ctrs[1];
    gmg_id r[24];
    static const uint32_t ids[] = {11, 12};
    for (int i = 0; i < 24; i++) {
        r[i] = waiting(f, i % 3 ? a : b, 16 + (uint32_t)i, 0);
        gmg_req *q = gmg_req_at(f->g, r[i]);
        q->trace_id = 100 + (uint64_t)i;
        q->n_prefix_blocks = i % 4 == 0 ? 2 : 0;
        if (q->n_prefix_blocks)
            assert_int_equal(gmg_pc_chain_make(q, ids, 16), 0);
    }
    for (int i = 5; i < 24; i += 6) { /* holes: a's and b's */
        gmg_container *c = &f->g->ctrs[gmg_req_at(f->g, r[i])->container];
        gmg_req_end(f->g, c, r[i], GMG_REQ_DONE, 1);
        gmg_req_free(f->g, r[i]);
    }
    must_check(f->g);
    uint8_t keep[2] = {1, 0};
    gmg *k = NULL;
    assert_int_equal(gmg_clone_part(f->g, keep, &k), 0);
    must_check(k);
    uint32_t n = 0, listed = 0;
    const gmg_id *roster = gmg_req_roster(k, &n);
    assert_non_null(roster);
    assert_int_equal(n, k->in_flight);
    for (gmg_id i = 0; i < f->g->n_slots; i++) {
        const gmg_req *q = &f->g->reqs[i];
        if (q->state == GMG_REQ_FREE || q->container != 0) {
            assert_int_equal(k->reqs[i].state, GMG_REQ_FREE);
            continue;
        }
        assert_true(listed < n);
        assert_int_equal(roster[listed++], i);
        assert_same_req(&k->reqs[i], q);
    }
    assert_int_equal(listed, n);
    gmg_id prev = 0;
    uint32_t n_free = 0;
    for (gmg_id i = k->free_slot; i != GMG_NONE; i = k->reqs[i].next, n_free++) {
        assert_true(n_free == 0 || i > prev);
        prev = i;
    }
    assert_int_equal(n_free, k->n_slots - n);
    gmg_id extra = gmg_req_alloc(k); /* a slot handed out: the roster no longer says it all */
    assert_null(gmg_req_roster(k, &n));
    assert_int_equal(n, k->n_slots);
    k->reqs[extra].state = GMG_REQ_DONE;
    gmg_req_free(k, extra);
    uint8_t both[2] = {1, 1}; /* refilled in place, for both containers */
    gmg *before = k;
    assert_int_equal(gmg_recopy_part(&k, f->g, both), 0);
    assert_ptr_equal(k, before);
    must_check(k);
    roster = gmg_req_roster(k, &n);
    assert_non_null(roster);
    assert_int_equal(n, f->g->in_flight);
    for (uint32_t j = 0; j < n; j++)
        assert_same_req(&k->reqs[roster[j]], &f->g->reqs[roster[j]]);
    gmg_destroy(&k);
    for (int i = 0; i < 24; i += 4) /* every hold on a chain went with the copies */
        if (f->g->reqs[r[i]].state != GMG_REQ_FREE)
            assert_int_equal(f->g->reqs[r[i]].chain->ref, 1);
    assert_int_equal(gmg_clone(f->g, &k), 0);
    assert_null(gmg_req_roster(k, &n));
    assert_int_equal(n, k->n_slots);
    gmg_destroy(&k);
    for (int i = 0; i < 24; i++) {
        gmg_req *q = gmg_req_at(f->g, r[i]);
        if (q->state == GMG_REQ_FREE)
            continue;
        gmg_req_end(f->g, &f->g->ctrs[q->container], r[i], GMG_REQ_DONE, 1);
        gmg_req_free(f->g, r[i]);
    }
    must_check(f->g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_slots, setup, teardown),
        cmocka_unit_test_setup_teardown(test_swap_blocks_saturate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lists, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blocks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_transitions_queue, setup, teardown),
        cmocka_unit_test_setup_teardown(test_transitions_lifecycle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_transitions_offload_and_migrate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_finds_corruption, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clone_part, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clone_part_roster, setup, teardown),
    };
    return cmocka_run_group_tests_name("gmg", tests, NULL, NULL);
}
