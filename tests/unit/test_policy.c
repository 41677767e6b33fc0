/* Batching and routing policies against hand-built cluster states: vLLM v0's prefill-first
 * admission (watermark, token and sequence budgets), rejection of requests that can never fit,
 * decode with preemption of the newest running request (and of itself when it is the newest),
 * an eviction credited with only the blocks it frees when other running requests read its cached
 * prompt blocks (vLLM's decodes, Sarathi's admissions after them), Orca's reservations (the
 * model's context by default), the round-robin / least-outstanding routers with their
 * tie-breaking, and Llumnix's two freeness forms (dispatch counts every waiting request,
 * migration pairing only the head of line). */
#include "support/test_util.h"

#include "catalog/catalog.h"
#include "core/ss_alloc.h"
#include "policy/llumnix_int.h"
#include "policy/policy.h"

#include <math.h>

#include <stdlib.h>
#include <string.h>

typedef struct fx {
    catalog *cat;
    gmg *g;
    ss_params *params;
    pol_batch *vllm;
    pol_batch_decision d;
    gmg_id buf[5][64];
    uint32_t qbuf[64], hbuf[64], wbuf[64];
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    ss_errbuf eb;
    if (catalog_load(&f->cat, tu_src_path("profiles"), &eb) || gmg_create(&f->g) ||
        ss_params_create(&f->params))
        return -1;
    gmg_ctr_spec s = {.model = catalog_model(f->cat, "llama-2-7b"),
                      .gpu = catalog_gpu(f->cat, "a100-80g"),
                      .engine = catalog_engine(f->cat, CAT_ENGINE_EAGER), .tp = 1, .pp = 1,
                      .cost_backend = "roofline",
                      .gpu_mem_util = 0.9, .block_tokens = 16, .max_batch_tokens = 4096,
                      .max_seqs = 256, .runtime_reserve = 1 << 30};
    if (gmg_add_containers(f->g, &s, 2, &eb))
        return -1;
    f->d = (pol_batch_decision){.run = f->buf[0], .q_tokens = f->qbuf, .hold = f->hbuf,
                                .preempt = f->buf[1], .reject = f->buf[2], .reject_why = f->wbuf,
                                .swap_out = f->buf[3], .swap_in = f->buf[4]};
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    pol_batch_destroy(&f->vllm);
    ss_params_destroy(&f->params);
    gmg_destroy(&f->g);
    catalog_destroy(&f->cat);
    free(f);
    tu_assert_no_leaks();
    return 0;
}

/* Shrink container 0's pool to `blocks` so that tests reason about small numbers. */
static gmg_container *small_pool(fx *f, uint32_t blocks)
{
    gmg_container *c = &f->g->ctrs[0];
    c->blocks_total = c->blocks_free = blocks;
    return c;
}

static void make_batch(fx *f, const char *name, uint64_t max_model_len)
{
    pol_engine_cfg cfg = {.max_model_len = max_model_len};
    ss_errbuf eb;
    pol_batch_destroy(&f->vllm);
    int rc = pol_batch_create(&f->vllm, name, f->params, &cfg, &eb);
    if (rc)
        fail_msg("%s", eb.msg);
    assert_int_equal(ss_params_check_unused(f->params, name, &eb), 0);
}

static void make_vllm(fx *f, uint64_t max_model_len) { make_batch(f, "vllm", max_model_len); }

static gmg_id add_waiting(fx *f, gmg_container *c, uint32_t prompt, uint32_t output)
{
    gmg_id r = gmg_req_alloc(f->g);
    gmg_req *q = gmg_req_at(f->g, r);
    q->trace_id = r;
    q->prompt = prompt;
    q->output = q->output_asked = output;
    q->container = c->id;
    gmg_list_push_back(f->g, &c->waiting, r);
    return r;
}

/* A running request that has generated `gen` tokens and holds the blocks for them. */
static gmg_id add_running(fx *f, gmg_container *c, uint32_t prompt, uint32_t gen)
{
    gmg_id r = add_waiting(f, c, prompt, 1000);
    gmg_req *q = gmg_req_at(f->g, r);
    gmg_list_remove(f->g, &c->waiting, r);
    q->state = GMG_REQ_RUNNING;
    q->generated = gen;
    q->computed = prompt + gen - 1;
    gmg_list_push_back(f->g, &c->running, r);
    gmg_req_set_blocks(f->g, c, q, gmg_blocks_for(c, prompt + gen - 1));
    return r;
}

static void test_prefill_first_with_budgets(void **state)
{
    fx *f = *state;
    ss_params_set(f->params, "max_num_batched_tokens", "1000");
    ss_params_set(f->params, "max_num_seqs", "4");
    make_vllm(f, 16384);
    gmg_container *c = small_pool(f, 1000);
    add_running(f, c, 100, 5);
    gmg_id a = add_waiting(f, c, 300, 10), b = add_waiting(f, c, 600, 10);
    add_waiting(f, c, 200, 10); /* would exceed the 1000-token budget */
    pol_batch_decide(f->vllm, NULL, f->g, c, &f->d);
    assert_int_equal(f->d.n_run, 2);
    assert_int_equal(f->d.run[0], a);
    assert_int_equal(f->d.q_tokens[0], 300);
    assert_int_equal(f->d.run[1], b);
    assert_int_equal(f->d.n_preempt + f->d.n_reject, 0);
    /* the sequence budget counts running requests: 1 running + 4 allowed -> 3 admitted */
    ss_params_set(f->params, "max_num_batched_tokens", "100000");
    pol_batch_destroy(&f->vllm);
    make_vllm(f, 16384);
    add_waiting(f, c, 10, 10);
    add_waiting(f, c, 10, 10);
    pol_batch_decide(f->vllm, NULL, f->g, c, &f->d);
    assert_int_equal(f->d.n_run, 3);
}

static void test_watermark_and_never_fit(void **state)
{
    fx *f = *state;
    make_vllm(f, 16384);
    gmg_container *c = small_pool(f, 200); /* watermark 1 % = 2 blocks */
    gmg_id big = add_waiting(f, c, 199 * 16, 5);   /* 199 blocks: 200 - 199 < 2 -> never */
    gmg_id fits = add_waiting(f, c, 150 * 16, 5);  /* 150 blocks */
    gmg_id later = add_waiting(f, c, 49 * 16, 5);  /* 200-150-49 = 1 < watermark -> later */
    pol_batch_decide(f->vllm, NULL, f->g, c, &f->d);
    assert_int_equal(f->d.n_reject, 1);
    assert_int_equal(f->d.reject[0], big);
    assert_int_equal(f->d.reject_why[0], POL_REJECT_KV);
    assert_int_equal(f->d.n_run, 1);
    assert_int_equal(f->d.run[0], fits);
    (void)later;
}

static void test_prompt_longer_than_max_model_len_rejected(void **state)
{
    fx *f = *state;
    make_vllm(f, 4096);
    gmg_container *c = small_pool(f, 10000);
    gmg_id a = add_waiting(f, c, 5000, 5), b = add_waiting(f, c, 100, 5);
    pol_batch_decide(f->vllm, NULL, f->g, c, &f->d);
    assert_int_equal(f->d.n_reject, 1);
    assert_int_equal(f->d.reject[0], a);
    assert_int_equal(f->d.reject_why[0], POL_REJECT_TOO_LONG);
    assert_int_equal(f->d.n_run, 1);
    assert_int_equal(f->d.run[0], b);
}

static void test_decode_preempts_newest(void **state)
{
    fx *f = *state;
    make_vllm(f, 16384);
    gmg_container *c = small_pool(f, 30);
    /* Three running requests each at a block boundary (prompt + gen - 1 = 160 tokens = 10
     * blocks): each needs an 11th block for its next token, and none is free. */
    gmg_id r0 = add_running(f, c, 150, 11), r1 = add_running(f, c, 150, 11),
           r2 = add_running(f, c, 150, 11);
    assert_int_equal(c->blocks_free, 0);
    pol_batch_decide(f->vllm, NULL, f->g, c, &f->d);
    /* r0 preempts r2 (freeing 10), r1 then fits in what is left */
    assert_int_equal(f->d.n_preempt, 1);
    assert_int_equal(f->d.preempt[0], r2);
    assert_int_equal(f->d.n_run, 2);
    assert_int_equal(f->d.run[0], r0);
    assert_int_equal(f->d.run[1], r1);
    assert_int_equal(f->d.q_tokens[0], 1);
}

static void test_decode_preempts_itself_when_newest(void **state)
{
    fx *f = *state;
    make_vllm(f, 16384);
    gmg_container *c = small_pool(f, 10);
    gmg_id r0 = add_running(f, c, 150, 11); /* holds all 10 blocks, needs an 11th */
    pol_batch_decide(f->vllm, NULL, f->g, c, &f->d);
    assert_int_equal(f->d.n_run, 0);
    assert_int_equal(f->d.n_preempt, 1);
    assert_int_equal(f->d.preempt[0], r0);
}

static void test_recompute_prefill_includes_generated(void **state)
{
    fx *f = *state;
    make_vllm(f, 16384);
    gmg_container *c = small_pool(f, 100);
    gmg_id r = add_waiting(f, c, 100, 50);
    gmg_req_at(f->g, r)->generated = 7; /* preempted after 7 tokens */
    pol_batch_decide(f->vllm, NULL, f->g, c, &f->d);
    assert_int_equal(f->d.n_run, 1);
    assert_int_equal(f->d.q_tokens[0], 107);
}

static void test_unknown_param_and_bad_value(void **state)
{
    fx *f = *state;
    pol_engine_cfg cfg = {.max_model_len = 16384};
    ss_errbuf eb;
    ss_params_set(f->params, "max_num_seqs", "-3");
    assert_int_equal(pol_batch_create(&f->vllm, "vllm", f->params, &cfg, &eb), SS_EINVAL);
    assert_non_null(strstr(eb.msg, "max_num_seqs"));
    assert_int_equal(pol_batch_create(&f->vllm, "fifo", f->params, &cfg, &eb), SS_ENOTFOUND);
    assert_non_null(strstr(eb.msg, "vllm"));
    ss_params_set(f->params, "max_num_seqs", "8");
    ss_params_set(f->params, "max_num_seq", "8");
    assert_int_equal(pol_batch_create(&f->vllm, "vllm", f->params, &cfg, &eb), 0);
    assert_int_equal(ss_params_check_unused(f->params, "vllm", &eb), SS_EINVAL);
    assert_non_null(strstr(eb.msg, "max_num_seq'"));
}


/* The blocks Orca reserves for request r when it is the only waiting one on c. */
static uint32_t orca_hold(fx *f, gmg_container *c, gmg_id r)
{
    f->d.n_run = f->d.n_reject = 0;
    pol_batch_decide(f->vllm, NULL, f->g, c, &f->d);
    assert_int_equal(f->d.n_reject, 0);
    assert_int_equal(f->d.n_run, 1);
    assert_int_equal(f->d.run[0], r);
    return f->d.hold[0];
}

static void test_orca_reserves_the_model_context(void **state)
{
    fx *f = *state;
    gmg_container *c = small_pool(f, 2000);
    assert_int_equal(c->model->max_context, 4096); /* Llama-2-7B */
    gmg_id r = add_waiting(f, c, 100, 50);
    /* default (context): min(max_model_len, max_context) = 4096 tokens = 256 blocks */
    make_batch(f, "orca", 16384);
    assert_int_equal(orca_hold(f, c, r), 256);
    make_batch(f, "orca", 2048); /* an engine limit below the context wins */
    assert_int_equal(orca_hold(f, c, r), 128);
    ss_params_set(f->params, "reserve", "context");
    make_batch(f, "orca", 16384);
    assert_int_equal(orca_hold(f, c, r), 256);
    ss_params_set(f->params, "reserve", "max"); /* the engine's max_model_len */
    make_batch(f, "orca", 16384);
    assert_int_equal(orca_hold(f, c, r), 1024);
    ss_params_set(f->params, "reserve", "oracle"); /* 150 tokens */
    make_batch(f, "orca", 16384);
    assert_int_equal(orca_hold(f, c, r), 10);
    ss_params_set(f->params, "reserve", "pow2"); /* 256 tokens */
    make_batch(f, "orca", 16384);
    assert_int_equal(orca_hold(f, c, r), 16);
    ss_params_set(f->params, "reserve", "most");
    pol_engine_cfg cfg = {.max_model_len = 16384};
    ss_errbuf eb;
    pol_batch_destroy(&f->vllm);
    assert_int_equal(pol_batch_create(&f->vllm, "orca", f->params, &cfg, &eb), SS_EINVAL);
    assert_non_null(strstr(eb.msg, "context, max, oracle or pow2"));
}

static void test_orca_context_admission_and_rejection(void **state)
{
    fx *f = *state;
    make_batch(f, "orca", 4096);
    gmg_container *c = small_pool(f, 600);
    gmg_id big = add_waiting(f, c, 5000, 5); /* longer than the context: rejected as before */
    gmg_id a = add_waiting(f, c, 100, 50), b = add_waiting(f, c, 100, 50);
    add_waiting(f, c, 100, 50); /* 3 x 256 blocks > 600: waits */
    pol_batch_decide(f->vllm, NULL, f->g, c, &f->d);
    assert_int_equal(f->d.n_reject, 1);
    assert_int_equal(f->d.reject[0], big);
    assert_int_equal(f->d.reject_why[0], POL_REJECT_TOO_LONG);
    assert_int_equal(f->d.n_run, 2);
    assert_int_equal(f->d.run[0], a);
    assert_int_equal(f->d.run[1], b);
    assert_int_equal(f->d.hold[0], 256);
    /* a trace request running past the context (slicesim's engine truncates only at
     * max_model_len) reserves its own length, 3000 + 2000 tokens = 313 blocks, so it never
     * outgrows its reservation */
    gmg_container *c1 = &f->g->ctrs[1];
    c1->blocks_total = c1->blocks_free = 2000;
    make_batch(f, "orca", 16384);
    gmg_id l = add_waiting(f, c1, 3000, 2000);
    assert_int_equal(orca_hold(f, c1, l), 313);
}

/* A running request of session sid (prompt, gen as add_running) with prefix caching on: it
 * takes the cached blocks of its session's prompts, and its own prompt's full blocks join the
 * cache (shared with the running requests of its session that read them too). */
static gmg_id add_running_cached(fx *f, gmg_container *c, uint32_t prompt, uint32_t gen,
                                 uint64_t sid)
{
    gmg_id r = add_waiting(f, c, prompt, 1000);
    gmg_req *q = gmg_req_at(f->g, r);
    gmg_list_remove(f->g, &c->waiting, r);
    q->state = GMG_REQ_RUNNING;
    q->generated = gen;
    q->computed = prompt + gen - 1;
    q->session_id = sid;
    assert_int_equal(gmg_pc_chain_make(q, NULL, c->block_tokens), 0);
    gmg_list_push_back(f->g, &c->running, r);
    uint32_t h = gmg_pc_match(c, q, gmg_pc_blocks(q, c->block_tokens), NULL);
    if (h)
        gmg_pc_take(f->g, c, q, h);
    gmg_req_set_blocks(f->g, c, q, gmg_blocks_for(c, prompt + gen - 1));
    gmg_pc_register(f->g, c, q);
    return r;
}

/* Evicting a running request frees only the blocks nobody else holds: its own, and the cached
 * blocks of its prompt that it alone reads. vLLM: r0 and r2 read the same 9 cached blocks, so
 * evicting r2 for r0's next block frees 1, and r1 then has none left for its own: it preempts
 * itself (credited with r2's 10 blocks, r1 would decode into blocks that do not exist). */
static void test_eviction_frees_only_unshared_blocks(void **state)
{
    fx *f = *state;
    make_vllm(f, 16384);
    gmg_container *c = small_pool(f, 21);
    assert_int_equal(gmg_pc_enable(f->g), 0);
    /* each at a block boundary (160 tokens = 10 blocks): each needs an 11th for its next one */
    gmg_id r0 = add_running_cached(f, c, 150, 11, 5), r1 = add_running_cached(f, c, 150, 11, 7),
           r2 = add_running_cached(f, c, 150, 11, 5);
    assert_int_equal(gmg_req_get(f->g, r2)->pc_shared, 9);
    assert_int_equal(c->blocks_free, 0);
    pol_batch_decide(f->vllm, NULL, f->g, c, &f->d);
    assert_int_equal(f->d.n_preempt, 2);
    assert_int_equal(f->d.preempt[0], r2);
    assert_int_equal(f->d.preempt[1], r1);
    assert_int_equal(f->d.n_run, 1);
    assert_int_equal(f->d.run[0], r0);
    gmg_req_preempt(f->g, c, r2); /* what the pool was credited with */
    assert_int_equal(c->blocks_free, 1);
}

/* Sarathi admits prefills into what the decode pass's evictions leave: r2 reads r0's 9 cached
 * blocks and 5 more of its prompt that only it reads, so evicting it frees its 1 block and
 * those 5, and after r0's decode takes one, a 5-block prefill fits and a 7-block one does not
 * (credited with all 15 of r2's blocks, both would be admitted into 5 free blocks). */
static void test_sarathi_admits_into_what_an_eviction_frees(void **state)
{
    fx *f = *state;
    make_batch(f, "sarathi", 16384);
    gmg_container *c = small_pool(f, 16);
    assert_int_equal(gmg_pc_enable(f->g), 0);
    gmg_id r0 = add_running_cached(f, c, 150, 11, 5); /* 10 blocks, needs an 11th */
    gmg_id r2 = add_running_cached(f, c, 230, 2, 5);  /* 15 blocks: 9 shared, 5 cached, 1 */
    assert_int_equal(gmg_req_get(f->g, r2)->pc_shared, 14);
    assert_int_equal(c->blocks_free, 0);
    gmg_id a = add_waiting(f, c, 70, 10), b = add_waiting(f, c, 100, 10);
    pol_batch_decide(f->vllm, NULL, f->g, c, &f->d);
    assert_int_equal(f->d.n_preempt, 1);
    assert_int_equal(f->d.preempt[0], r2);
    assert_int_equal(f->d.n_run, 2);
    assert_int_equal(f->d.run[0], r0);
    assert_int_equal(f->d.run[1], a);
    assert_int_equal(f->d.hold[1], 5);
    assert_true(f->d.run[1] != b);
    gmg_req_preempt(f->g, c, r2);
    assert_int_equal(c->blocks_free, 6);
}

static const gmg_id all2[2] = {0, 1};

static void test_routers(void **state)
{
    fx *f = *state;
    ss_rng rng;
    ss_rng_seed(&rng, 1, SS_RNG_STREAM_ROUTING);
    pol_route *rr = NULL, *lor = NULL;
    ss_errbuf eb;
    assert_int_equal(pol_route_create(&rr, "rr", f->params, NULL, &rng, &eb), 0);
    assert_int_equal(pol_route_create(&lor, "lor", f->params, NULL, &rng, &eb), 0);
    gmg_id r = gmg_req_alloc(f->g);
    assert_int_equal(pol_route_pick(rr, f->g, r, all2, 2), 0);
    assert_int_equal(pol_route_pick(rr, f->g, r, all2, 2), 1);
    assert_int_equal(pol_route_pick(rr, f->g, r, all2, 2), 0);
    assert_int_equal(pol_route_pick(lor, f->g, r, all2, 2), 0); /* tie -> lowest id */
    add_waiting(f, &f->g->ctrs[0], 10, 10);
    assert_int_equal(pol_route_pick(lor, f->g, r, all2, 2), 1);
    add_waiting(f, &f->g->ctrs[1], 10, 10);
    add_waiting(f, &f->g->ctrs[1], 10, 10);
    assert_int_equal(pol_route_pick(lor, f->g, r, all2, 2), 0);
    assert_int_equal(pol_route_create(&rr, "random-ish", f->params, NULL, &rng, &eb), SS_ENOTFOUND);
    pol_route_destroy(&rr);
    pol_route_destroy(&lor);
}

static void test_random_and_infaas_routers(void **state)
{
    fx *f = *state;
    ss_rng a, b;
    ss_rng_seed(&a, 3, SS_RNG_STREAM_ROUTING);
    ss_rng_seed(&b, 3, SS_RNG_STREAM_ROUTING);
    pol_route *r1 = NULL, *r2 = NULL, *inf = NULL;
    ss_errbuf eb;
    assert_int_equal(pol_route_create(&r1, "random", f->params, NULL, &a, &eb), 0);
    assert_int_equal(pol_route_create(&r2, "random", f->params, NULL, &b, &eb), 0);
    gmg_id r = gmg_req_alloc(f->g);
    int count[2] = {0, 0};
    for (int i = 0; i < 2000; i++) {
        gmg_id x = pol_route_pick(r1, f->g, r, all2, 2);
        assert_int_equal(x, pol_route_pick(r2, f->g, r, all2, 2)); /* same seed, same choices */
        assert_true(x < 2);
        count[x]++;
    }
    assert_true(count[0] > 900 && count[1] > 900);
    /* infaas: empty containers are infinitely free -> lowest id; then the freer one wins */
    assert_int_equal(pol_route_create(&inf, "infaas", f->params, NULL, &a, &eb), 0);
    assert_int_equal(pol_route_pick(inf, f->g, r, all2, 2), 0);
    gmg_container *c0 = small_pool(f, 100);
    gmg_container *c1 = &f->g->ctrs[1];
    c1->blocks_total = c1->blocks_free = 100;
    add_running(f, c0, 160, 1); /* 10 blocks held */
    assert_int_equal(pol_route_pick(inf, f->g, r, all2, 2), 1);
    add_running(f, c1, 320, 1); /* 20 blocks: c0 (89 - 1) / 1 > c1 (79 - 1) / 1 */
    assert_int_equal(pol_route_pick(inf, f->g, r, all2, 2), 0);
    /* waiting demand counts against a container: 30 blocks waiting on c0 */
    gmg_id w = add_waiting(f, c0, 480, 5);
    gmg_req_at(f->g, w)->wait_blocks = 30;
    c0->waiting_blocks = 30;
    assert_int_equal(pol_route_pick(inf, f->g, r, all2, 2), 1); /* (89-1-30)/2 = 29 < 78 */
    pol_route_destroy(&r1);
    pol_route_destroy(&r2);
    pol_route_destroy(&inf);
}

/* Container 0: one running request (100 blocks) and ten waiting ones of 20 blocks each;
 * container 1: three running requests of 100 blocks. Both pools hold 1000 blocks, and both
 * hold tier-0 requests, so each keeps the two-level headroom of 10 % (100 blocks). */
static void two_loads(fx *f)
{
    gmg_container *c0 = small_pool(f, 1000), *c1 = &f->g->ctrs[1];
    c1->blocks_total = c1->blocks_free = 1000;
    add_running(f, c0, 1600, 1);
    for (int i = 0; i < 10; i++) {
        gmg_id w = add_waiting(f, c0, 320, 5);
        gmg_req_at(f->g, w)->wait_blocks = 20;
    }
    c0->waiting_blocks = 200;
    for (int i = 0; i < 3; i++)
        add_running(f, c1, 1600, 1);
}

static void test_llumnix_freeness_forms(void **state)
{
    fx *f = *state;
    two_loads(f);
    llx_params lx;
    ss_errbuf eb;
    assert_int_equal(llx_params_init(&lx, f->params, "llumnix", 0, &eb), 0);
    const gmg_container *c0 = &f->g->ctrs[0], *c1 = &f->g->ctrs[1];
    /* dispatch: (1000 - 100 held - 200 waiting - 100 headroom) / (1 running + 10 waiting) */
    assert_true(fabs(llx_freeness_dispatch(&lx, f->g, c0) - 600.0 / 11) < 1e-9);
    /* migration: (1000 - 100 - 20 head of line - 100) / (1 running + 1) */
    assert_true(fabs(llx_freeness_migrate(&lx, f->g, c0) - 390.0) < 1e-9);
    /* no queue: both forms agree, (1000 - 300 - 100) / 3 */
    assert_true(fabs(llx_freeness_dispatch(&lx, f->g, c1) - 200.0) < 1e-9);
    assert_true(fabs(llx_freeness_migrate(&lx, f->g, c1) - 200.0) < 1e-9);
}

/* The two forms rank the containers oppositely; dispatch follows the all-waiting form (c1),
 * migration pairing the head-of-line form (c1, the less free, gives a request to c0). */
static void test_llumnix_dispatch_and_migration_pick_differently(void **state)
{
    fx *f = *state;
    two_loads(f);
    ss_rng rng;
    ss_rng_seed(&rng, 1, SS_RNG_STREAM_ROUTING);
    pol_route *route = NULL;
    pol_cluster *cl = NULL;
    ss_errbuf eb;
    assert_int_equal(pol_route_create(&route, "llumnix", f->params, "llumnix", &rng, &eb), 0);
    gmg_id r = gmg_req_alloc(f->g);
    assert_int_equal(pol_route_pick(route, f->g, r, all2, 2), 1);
    assert_int_equal(pol_cluster_create(&cl, "llumnix", f->params, &eb), 0);
    pol_tenant_view t = {.name = "t", .model = f->g->ctrs[0].model, .tp = 1, .pp = 1,
                         .replicas = 2, .max_replicas = 2, .tiers = 1, .active = all2,
                         .n_active = 2};
    pol_cluster_view v = {.now = 0, .tenants = &t, .n_tenants = 1};
    pol_migration mig[4];
    pol_cluster_decision d = {.migrate = mig, .cap_migrate = 4};
    pol_cluster_tick(cl, f->g, &v, &d);
    assert_int_equal(d.n_migrate, 1);
    assert_int_equal(d.migrate[0].from, 1);
    assert_int_equal(d.migrate[0].to, 0);
    pol_cluster_destroy(&cl);
    pol_route_destroy(&route);
}

/* The steady hook's contract (pol_batch_ops.steady): with nothing waiting or swapped and every
 * running request decoding with room for its next token, a policy that says it is steady
 * decides exactly "every running request, in list order, one token, hold 0" and nothing else,
 * the batch gsim builds without asking it. Checked for every built-in policy, two of the
 * three requests at a block boundary (each needs a new block, and two are free); and static
 * batching is not steady while a finished member leaves a phantom slot. */
static void test_steady_hook_matches_decide(void **state)
{
    fx *f = *state;
    static const char *const names[] = {"vllm", "sarathi", "orca", "static"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        make_batch(f, names[k], 16384);
        gmg_container *c = small_pool(f, 40);
        gmg_id r[3] = {add_running(f, c, 150, 11), add_running(f, c, 100, 3),
                       add_running(f, c, 150, 11)}; /* 160, 102 and 160 tokens */
        assert_int_equal(c->blocks_free, 40 - 10 - 7 - 10);
        c->blocks_free = 2; /* the two at a boundary fit, exactly */
        size_t sz = pol_batch_ctr_priv_size(f->vllm);
        void *cp = sz ? calloc(1, sz) : NULL;
        pol_batch_decide(f->vllm, cp, f->g, c, &f->d);
        assert_int_equal(pol_batch_steady(f->vllm, cp, c), 1);
        assert_int_equal(f->d.n_run, 3);
        for (int i = 0; i < 3; i++) {
            assert_int_equal(f->d.run[i], r[i]);
            assert_int_equal(f->d.q_tokens[i], 1);
            assert_int_equal(f->d.hold[i], 0);
        }
        assert_int_equal(f->d.n_preempt + f->d.n_reject + f->d.n_swap_out + f->d.n_swap_in, 0);
        assert_int_equal(f->d.extra.n_decode + f->d.extra.n_prefill, 0);
        assert_int_equal(f->d.extra.prefill_tokens + f->d.extra.decode_ctx_tokens, 0);
        if (!strcmp(names[k], "static")) { /* a batch formed of 4, one of them finished */
            *(uint32_t *)cp = 4;
            assert_int_equal(pol_batch_steady(f->vllm, cp, c), 0);
            pol_batch_decide(f->vllm, cp, f->g, c, &f->d);
            assert_int_equal(f->d.extra.n_decode, 1); /* the phantom the hook said it adds */
        }
        free(cp);
        for (int i = 0; i < 3; i++) {
            gmg_list_remove(f->g, &c->running, r[i]);
            gmg_req_at(f->g, r[i])->blocks = 0;
            gmg_req_drop(f->g, r[i]);
        }
    }
}

/* The decide_rest hook's contract (pol_batch_ops.decide_rest): on random containers (running
 * decodes, some at a block boundary, running partial prefills, waiting and swapped requests,
 * token budgets from 16 to 2048) whose decodes all have room for their next token, decide() is
 * exactly "every decode, in list order, one token, hold 0" followed by what decide_rest adds
 * from that state: the same lists, reasons and extra work. Checked for every built-in policy
 * that has the hook (Sarathi has). */
static uint64_t lcg(uint64_t *x, uint64_t n)
{
    *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
    return (*x >> 33) % n;
}

static void assert_same_decision(const pol_batch_decision *a, const pol_batch_decision *b)
{
    assert_int_equal(a->n_run, b->n_run);
    for (uint32_t i = 0; i < a->n_run; i++) {
        assert_int_equal(a->run[i], b->run[i]);
        assert_int_equal(a->q_tokens[i], b->q_tokens[i]);
        assert_int_equal(a->hold[i], b->hold[i]);
    }
    assert_int_equal(a->n_preempt, b->n_preempt);
    assert_int_equal(a->n_swap_out, b->n_swap_out);
    assert_int_equal(a->n_swap_in, b->n_swap_in);
    for (uint32_t i = 0; i < a->n_swap_in; i++)
        assert_int_equal(a->swap_in[i], b->swap_in[i]);
    assert_int_equal(a->n_reject, b->n_reject);
    for (uint32_t i = 0; i < a->n_reject; i++) {
        assert_int_equal(a->reject[i], b->reject[i]);
        assert_int_equal(a->reject_why[i], b->reject_why[i]);
    }
    assert_memory_equal(&a->extra, &b->extra, sizeof a->extra);
}

static void test_decide_rest_matches_decide(void **state)
{
    fx *f = *state;
    static const char *const names[] = {"vllm", "sarathi", "orca", "static"};
    static const char *const budgets[] = {"16", "256", "512", "2048"};
    gmg_id b2[5][64];
    uint32_t q2[64], h2[64], w2[64];
    pol_batch_decision d2 = {.run = b2[0], .q_tokens = q2, .hold = h2, .preempt = b2[1],
                             .reject = b2[2], .reject_why = w2, .swap_out = b2[3],
                             .swap_in = b2[4]};
    uint64_t x = 1;
    int with_rest = 0, partial_seen = 0, swap_in_seen = 0, admitted_seen = 0;
    for (size_t k = 0; k < sizeof names / sizeof *names; k++)
        for (int trial = 0; trial < 300; trial++) {
            ss_params_destroy(&f->params);
            assert_int_equal(ss_params_create(&f->params), 0);
            if (!strcmp(names[k], "sarathi"))
                assert_int_equal(
                    ss_params_set(f->params, "token_budget", budgets[trial % 4]), 0);
            make_batch(f, names[k], 16384);
            if (!pol_batch_has_rest(f->vllm))
                break;
            with_rest |= !strcmp(names[k], "sarathi");
            gmg_container *c = small_pool(f, 400);
            gmg_id ids[40];
            uint32_t n = 0, n_dec = 0, need = 0;
            for (uint32_t i = (uint32_t)lcg(&x, 12); i > 0; i--) { /* decodes */
                uint32_t prompt = 1 + (uint32_t)lcg(&x, 200), gen = 1 + (uint32_t)lcg(&x, 40);
                if (lcg(&x, 3) == 0) /* its next token starts a block */
                    gen += 16 - (prompt + gen - 1) % 16;
                gmg_id r = ids[n++] = add_running(f, c, prompt, gen);
                need += !gmg_blocks_hold(c, gmg_req_at(f->g, r)->blocks, prompt + gen);
                b2[0][n_dec++] = r;
            }
            for (uint32_t i = (uint32_t)lcg(&x, 3); i > 0; i--) { /* partial prefills */
                gmg_id r = ids[n++] = add_waiting(f, c, 64 + (uint32_t)lcg(&x, 600), 50);
                gmg_req *q = gmg_req_at(f->g, r);
                gmg_list_remove(f->g, &c->waiting, r);
                q->state = GMG_REQ_RUNNING;
                q->computed = 1 + (uint32_t)lcg(&x, q->prompt - 1);
                gmg_list_push_back(f->g, &c->running, r);
                gmg_req_set_blocks(f->g, c, q, gmg_blocks_for(c, q->computed));
            }
            for (uint32_t i = (uint32_t)lcg(&x, 3); i > 0; i--) { /* swapped out */
                gmg_id r = ids[n++] = add_waiting(f, c, 1 + (uint32_t)lcg(&x, 300), 50);
                gmg_req *q = gmg_req_at(f->g, r);
                gmg_list_remove(f->g, &c->waiting, r);
                q->state = GMG_REQ_SWAPPED;
                q->generated = 1 + (uint32_t)lcg(&x, 20);
                q->computed = q->prompt + q->generated - 1;
                q->swapped_blocks = gmg_blocks_for(c, q->computed);
                gmg_list_push_back(f->g, &c->swapped, r);
            }
            for (uint32_t i = (uint32_t)lcg(&x, 6); i > 0; i--) /* waiting, some never fitting */
                ids[n++] = add_waiting(f, c, 1 + (uint32_t)lcg(&x, i == 1 ? 20000 : 900), 50);
            c->blocks_free = need + (uint32_t)lcg(&x, 120); /* every decode has room */
            size_t sz = pol_batch_ctr_priv_size(f->vllm);
            void *cp = sz ? calloc(1, sz) : NULL;
            pol_batch_decide(f->vllm, cp, f->g, c, &f->d);
            for (uint32_t i = 0; i < n_dec; i++) {
                q2[i] = 1;
                h2[i] = 0;
            }
            pol_batch_decide_rest(f->vllm, cp, f->g, c, n_dec, need, &d2);
            assert_same_decision(&f->d, &d2);
            swap_in_seen |= f->d.n_swap_in > 0;
            for (uint32_t i = n_dec; i < f->d.n_run; i++) {
                gmg_req_state st = gmg_req_at(f->g, f->d.run[i])->state;
                partial_seen |= st == GMG_REQ_RUNNING;
                admitted_seen |= st == GMG_REQ_WAITING;
            }
            free(cp);
            for (uint32_t i = 0; i < n; i++) {
                gmg_req *q = gmg_req_at(f->g, ids[i]);
                gmg_list *l = q->state == GMG_REQ_RUNNING   ? &c->running
                              : q->state == GMG_REQ_SWAPPED ? &c->swapped
                                                             : &c->waiting;
                gmg_list_remove(f->g, l, ids[i]);
                if (q->state == GMG_REQ_RUNNING)
                    gmg_req_set_blocks(f->g, c, q, 0);
                q->blocks = 0;
                q->swapped_blocks = 0;
                gmg_req_drop(f->g, ids[i]);
            }
        }
    assert_true(with_rest);
    assert_true(partial_seen && swap_in_seen && admitted_seen);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_prefill_first_with_budgets),      T(test_watermark_and_never_fit),
        T(test_prompt_longer_than_max_model_len_rejected), T(test_decode_preempts_newest),
        T(test_decode_preempts_itself_when_newest), T(test_recompute_prefill_includes_generated),
        T(test_unknown_param_and_bad_value),     T(test_routers),
        T(test_random_and_infaas_routers),       T(test_orca_reserves_the_model_context),
        T(test_orca_context_admission_and_rejection), T(test_llumnix_freeness_forms),
        T(test_llumnix_dispatch_and_migration_pick_differently),
        T(test_eviction_frees_only_unshared_blocks),
        T(test_sarathi_admits_into_what_an_eviction_frees),
        T(test_steady_hook_matches_decide),       T(test_decide_rest_matches_decide),
    };
    return cmocka_run_group_tests_name("policy", tests, NULL, NULL);
}
