/* vLLM v0 default scheduler (no chunked prefill), as in DESIGN.md section 6:
 *  - swapped requests come back first: while any is swapped, no new prefill is admitted;
 *  - otherwise prefill first: admit waiting requests FCFS while free blocks - need >=
 *    watermark, the batch's prompt tokens stay within max_num_batched_tokens and running +
 *    admitted sequences within max_num_seqs; a request that can never fit is rejected;
 *  - with no prefill to run, decode every running request, evicting the newest running one
 *    when a decode cannot get its next KV block (recompute, or swap over PCIe with
 *    preempt=swap; a request evicted max_preemptions times is rejected instead), then swap
 *    requests back in if nobody was evicted.
 * Recompute-preempted requests return to the front of the waiting queue and later recompute
 * their prompt plus the tokens generated so far as one prefill. */
#include "policy/batch_int.h"

#include <stdio.h>

typedef struct vllm_priv {
    pol__common cm;
    uint64_t max_num_batched_tokens; /* prompt tokens per prefill iteration */
} vllm_priv;

static int vllm_init(void *priv, ss_params *p, const pol_engine_cfg *cfg, ss_errbuf *eb)
{
    vllm_priv *v = priv;
    uint64_t def_tokens = cfg->max_model_len > 2048 ? cfg->max_model_len : 2048;
    int rc = pol__common_init(&v->cm, p, "vllm", cfg, eb);
    if (!rc)
        rc = ss_params_get_u64(p, "vllm", "max_num_batched_tokens", def_tokens, 1, 1u << 26,
                               &v->max_num_batched_tokens, eb);
    return rc;
}

static void schedule_prefills(const vllm_priv *v, const gmg *g, const gmg_container *c,
                              pol__pool *pool, pol_batch_decision *out)
{
    uint64_t limit = v->cm.max_model_len < v->max_num_batched_tokens ? v->cm.max_model_len
                                                                       : v->max_num_batched_tokens;
    uint64_t tokens = 0;
    for (gmg_id r = c->waiting.head; r != GMG_NONE; r = g->reqs[r].next) {
        uint32_t need_tok = pol_pending(&g->reqs[r]);
        int64_t need = gmg_blocks_for(c, need_tok);
        int fit = pol__can_allocate(pool, c, need);
        if (need_tok > limit || fit < 0) { /* can never be scheduled */
            pol_reject(out, r, need_tok > v->cm.max_model_len ? POL_REJECT_TOO_LONG
                               : need_tok > limit             ? POL_REJECT_BATCH_TOKENS
                                                              : POL_REJECT_KV);
            continue;
        }
        if (!fit || tokens + need_tok > v->max_num_batched_tokens ||
            pool->seqs + 1 > v->cm.max_num_seqs)
            break;
        pol__run(out, r, need_tok, 0);
        pool->free_blocks -= need;
        tokens += need_tok;
        pool->seqs++;
    }
}

static void vllm_decide(void *priv, void *ctr_priv, const gmg *g, const gmg_container *c,
                        pol_batch_decision *out)
{
    (void)ctr_priv;
    const vllm_priv *v = priv;
    pol__pool pool;
    pol__pool_init(&pool, &v->cm, c);
    if (c->swapped.n == 0)
        schedule_prefills(v, g, c, &pool, out);
    if (out->n_run > 0)
        return;
    pol__decode_running(&v->cm, g, c, &pool, out);
    pol__swap_in(&v->cm, g, c, &pool, out);
}

/* Nothing waiting or swapped and every running request's next KV slot free: the decode pass
 * runs them all and evicts nobody, and nothing is left to swap in or admit. */
static int vllm_steady(const void *priv, const void *ctr_priv, const gmg_container *c)
{
    (void)priv, (void)ctr_priv, (void)c;
    return 1;
}

static uint64_t vllm_max_tokens(const void *priv)
{
    return ((const vllm_priv *)priv)->max_num_batched_tokens;
}

static uint32_t vllm_max_seqs(const void *priv)
{
    return (uint32_t)((const vllm_priv *)priv)->cm.max_num_seqs;
}

static void vllm_describe(const void *priv, ss_kv_emit_fn *emit, void *ud)
{
    const vllm_priv *v = priv;
    char buf[32];
    pol__common_describe(&v->cm, emit, ud);
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v->max_num_batched_tokens);
    emit(ud, "max_num_batched_tokens", buf);
}

static const char *const pol_batch_vllm_params[] = {"max_num_seqs", "watermark", "preempt", "max_preemptions", "max_num_batched_tokens", NULL};

const pol_batch_ops pol_batch_vllm = {
    .abi_version = POL_ABI_VERSION,
    .params = pol_batch_vllm_params,
    .name = "vllm",
    .summary = "vLLM v0: prefill-first, watermark admission, preempt newest (recompute|swap)",
    .priv_size = sizeof(vllm_priv),
    .init = vllm_init,
    .decide = vllm_decide,
    .max_batch_tokens = vllm_max_tokens,
    .max_seqs = vllm_max_seqs,
    .describe = vllm_describe,
    .steady = vllm_steady,
};
