/* Sarathi-Serve: chunked prefill under a per-iteration token budget (512 by default).
 * Each iteration first decodes every running request (decodes never stall; evictions as in
 * vLLM), then continues partial prefills of running requests, then swaps requests back in, then
 * admits new prefills FCFS, each chunked so the iteration stays within the budget. A request's
 * KV blocks for its whole prompt are allocated when it is admitted (as vLLM's chunked-prefill
 * scheduler does); its first token comes with its last chunk. */
#include "policy/batch_int.h"

#include <stdio.h>

typedef struct sarathi_priv {
    pol__common cm;
    uint64_t token_budget; /* query tokens per iteration (decodes count one each) */
} sarathi_priv;

static int sarathi_init(void *priv, ss_params *p, const pol_engine_cfg *cfg, ss_errbuf *eb)
{
    sarathi_priv *v = priv;
    int rc = pol__common_init(&v->cm, p, "sarathi", cfg, eb);
    if (!rc)
        rc = ss_params_get_u64(p, "sarathi", "token_budget", 512, 1, 1u << 24, &v->token_budget,
                               eb);
    return rc;
}

static uint32_t take(uint64_t *budget, uint32_t want)
{
    uint32_t q = *budget < want ? (uint32_t)*budget : want;
    *budget -= q;
    return q;
}

/* Continue partial prefills of running requests (those not evicted by the decode pass). */
static void continue_prefills(const gmg *g, const gmg_container *c, const pol__pool *pool,
                              uint64_t *budget, pol_batch_decision *out)
{
    if (pool->last_kept == GMG_NONE)
        return;
    for (gmg_id r = c->running.head; r != GMG_NONE && *budget; r = g->reqs[r].next) {
        const gmg_req *q = &g->reqs[r];
        if (!(pol_pending(q) == 1 && q->generated > 0))
            pol__run(out, r, take(budget, pol_pending(q)), 0);
        if (r == pool->last_kept)
            break;
    }
}

static void admit_prefills(const sarathi_priv *v, const gmg *g, const gmg_container *c,
                           pol__pool *pool, uint64_t *budget, pol_batch_decision *out)
{
    for (gmg_id r = c->waiting.head; r != GMG_NONE; r = g->reqs[r].next) {
        uint32_t pending = pol_pending(&g->reqs[r]);
        int64_t need = gmg_blocks_for(c, pending);
        int fit = pol__can_allocate(pool, c, need);
        if (pending > v->cm.max_model_len || fit < 0) {
            pol_reject(out, r, pending > v->cm.max_model_len ? POL_REJECT_TOO_LONG : POL_REJECT_KV);
            continue;
        }
        if (!fit || !*budget || pool->seqs + 1 > v->cm.max_num_seqs)
            break;
        pol__run(out, r, take(budget, pending), (uint32_t)need);
        pool->free_blocks -= need;
        pool->seqs++;
    }
}

/* Everything after the decode pass: partial prefills, swap-ins, admissions within what the
 * budget and the pool have left. */
static void sarathi_after_decodes(const sarathi_priv *v, const gmg *g, const gmg_container *c,
                                  pol__pool *pool, uint32_t n_dec, int prefills,
                                  pol_batch_decision *out)
{
    uint64_t tb = pol_batch_budget(v->token_budget, c);
    uint64_t budget = tb > n_dec ? tb - n_dec : 0;
    if (prefills)
        continue_prefills(g, c, pool, &budget, out);
    uint32_t before = out->n_run;
    pol__swap_in(&v->cm, g, c, pool, out);
    budget = budget > out->n_run - before ? budget - (out->n_run - before) : 0;
    admit_prefills(v, g, c, pool, &budget, out);
}

/* The decode pass evicted nobody: the pool it leaves is the container's, less the decodes'
 * new blocks, with every running request kept. */
static void sarathi_decide_rest(void *priv, void *ctr_priv, const gmg *g, const gmg_container *c,
                                uint32_t n_decodes, uint32_t decode_blocks,
                                pol_batch_decision *out)
{
    (void)ctr_priv;
    const sarathi_priv *v = priv;
    pol__pool pool;
    pol__pool_init(&pool, &v->cm, c);
    pool.free_blocks -= decode_blocks;
    /* the n_decodes are every running request that decodes: the others continue prefills */
    sarathi_after_decodes(v, g, c, &pool, n_decodes, n_decodes < c->running.n, out);
}

static void sarathi_decide(void *priv, void *ctr_priv, const gmg *g, const gmg_container *c,
                           pol_batch_decision *out)
{
    (void)ctr_priv;
    const sarathi_priv *v = priv;
    pol__pool pool;
    pol__pool_init(&pool, &v->cm, c);
    uint32_t n_dec = pol__decode_running(&v->cm, g, c, &pool, out);
    sarathi_after_decodes(v, g, c, &pool, n_dec, 1, out);
}

/* Nothing waiting or swapped and every running request's next KV slot free: the decode pass
 * runs them all and evicts nobody; no partial prefill is left, nothing to swap in or admit. */
static int sarathi_steady(const void *priv, const void *ctr_priv, const gmg_container *c)
{
    (void)priv, (void)ctr_priv, (void)c;
    return 1;
}

static uint64_t sarathi_max_tokens(const void *priv)
{
    const sarathi_priv *v = priv;
    return v->token_budget > v->cm.max_num_seqs ? v->token_budget : v->cm.max_num_seqs;
}

static uint32_t sarathi_max_seqs(const void *priv)
{
    return (uint32_t)((const sarathi_priv *)priv)->cm.max_num_seqs;
}

static void sarathi_describe(const void *priv, ss_kv_emit_fn *emit, void *ud)
{
    const sarathi_priv *v = priv;
    char buf[32];
    pol__common_describe(&v->cm, emit, ud);
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v->token_budget);
    emit(ud, "token_budget", buf);
}

static const char *const pol_batch_sarathi_params[] = {"max_num_seqs", "watermark", "preempt", "max_preemptions", "token_budget", NULL};

const pol_batch_ops pol_batch_sarathi = {
    .abi_version = POL_ABI_VERSION,
    .params = pol_batch_sarathi_params,
    .name = "sarathi",
    .summary = "Sarathi-Serve: decodes first, then prefill chunks within a token budget",
    .priv_size = sizeof(sarathi_priv),
    .init = sarathi_init,
    .decide = sarathi_decide,
    .max_batch_tokens = sarathi_max_tokens,
    .max_seqs = sarathi_max_seqs,
    .describe = sarathi_describe,
    .steady = sarathi_steady,
    .decide_rest = sarathi_decide_rest,
};
