/* vLLM v0 default scheduler (no chunked prefill), as in DESIGN.md section 6:
 *  - prefill first: admit waiting requests FCFS while free blocks - need >= watermark, the
 *    batch's prompt tokens stay within max_num_batched_tokens and running + admitted
 *    sequences within max_num_seqs; a request that can never fit is rejected and skipped;
 *  - otherwise decode every running request; when one cannot get its next KV block, preempt
 *    the newest running request by recompute (or itself, when it is the newest).
 * Preempted requests go back to the front of the waiting queue and re-run their prompt plus
 * the tokens generated so far as one prefill. */
#include "policy.h"

#include <stdio.h>

typedef struct vllm_priv {
    uint64_t max_num_seqs;           /* sequences per iteration, running included */
    uint64_t max_num_batched_tokens; /* prompt tokens per prefill iteration */
    double watermark;                /* fraction of the pool kept free at admission */
    uint64_t max_model_len;          /* from the engine */
} vllm_priv;

static int vllm_init(void *priv, ss_params *p, const pol_engine_cfg *cfg, ss_errbuf *eb)
{
    vllm_priv *v = priv;
    uint64_t def_tokens = cfg->max_model_len > 2048 ? cfg->max_model_len : 2048;
    int rc = ss_params_get_u64(p, "vllm", "max_num_seqs", 256, 1, 1u << 20, &v->max_num_seqs, eb);
    if (!rc)
        rc = ss_params_get_u64(p, "vllm", "max_num_batched_tokens", def_tokens, 1, 1u << 26,
                               &v->max_num_batched_tokens, eb);
    if (!rc)
        rc = ss_params_get_double(p, "vllm", "watermark", 0.01, 0.0, 0.5, &v->watermark, eb);
    v->max_model_len = cfg->max_model_len;
    return rc;
}

/* Tokens a waiting request must (re)compute: its prompt and any tokens generated before a
 * recompute preemption. */
static uint32_t prefill_tokens(const gmg_req *q) { return q->prompt + q->generated; }

static void add_run(pol_batch_decision *out, gmg_id r, uint32_t q)
{
    out->run[out->n_run] = r;
    out->q_tokens[out->n_run++] = q;
}

static void schedule_prefills(const vllm_priv *v, const gmg *g, const gmg_container *c,
                              pol_batch_decision *out)
{
    int64_t free_blocks = c->blocks_free, total = c->blocks_total;
    int64_t wm = (int64_t)(v->watermark * (double)total);
    uint64_t limit = v->max_model_len < v->max_num_batched_tokens ? v->max_model_len
                                                                    : v->max_num_batched_tokens;
    uint64_t tokens = 0, seqs = c->running.n;
    for (gmg_id r = c->waiting.head; r != GMG_NONE; r = g->reqs[r].next) {
        const gmg_req *q = &g->reqs[r];
        uint32_t need_tok = prefill_tokens(q);
        int64_t need = gmg_blocks_for(c, need_tok);
        if (need_tok > limit || total - need < wm) {
            out->reject[out->n_reject++] = r; /* can never be scheduled */
            continue;
        }
        if (free_blocks - need < wm || tokens + need_tok > v->max_num_batched_tokens ||
            seqs + 1 > v->max_num_seqs)
            break;
        add_run(out, r, need_tok);
        free_blocks -= need;
        tokens += need_tok;
        seqs++;
    }
}

/* Decode all running requests, preempting from the tail when blocks run out. */
static void schedule_decodes(const gmg *g, const gmg_container *c, pol_batch_decision *out)
{
    int64_t free_blocks = c->blocks_free;
    gmg_id back = c->running.tail;
    for (gmg_id r = c->running.head; r != GMG_NONE; r = g->reqs[r].next) {
        const gmg_req *q = &g->reqs[r];
        /* a decode grows the sequence by one token: at most one new block */
        int64_t need = !gmg_blocks_hold(c, q->blocks, (uint64_t)q->prompt + q->generated);
        int self = 0;
        while (need > free_blocks) {
            if (back == r) {
                out->preempt[out->n_preempt++] = r;
                self = 1;
                break;
            }
            out->preempt[out->n_preempt++] = back;
            free_blocks += g->reqs[back].blocks;
            back = g->reqs[back].prev;
        }
        if (self)
            break;
        free_blocks -= need;
        add_run(out, r, 1);
        if (r == back)
            break;
    }
}

static void vllm_decide(void *priv, const gmg *g, const gmg_container *c, pol_batch_decision *out)
{
    const vllm_priv *v = priv;
    schedule_prefills(v, g, c, out);
    if (out->n_run == 0)
        schedule_decodes(g, c, out);
}

static uint64_t vllm_max_tokens(const void *priv)
{
    const vllm_priv *v = priv;
    return v->max_num_batched_tokens;
}

static uint32_t vllm_max_seqs(const void *priv) { return (uint32_t)((const vllm_priv *)priv)->max_num_seqs; }

static void vllm_describe(const void *priv, ss_kv_emit_fn *emit, void *ud)
{
    const vllm_priv *v = priv;
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v->max_num_seqs);
    emit(ud, "max_num_seqs", buf);
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v->max_num_batched_tokens);
    emit(ud, "max_num_batched_tokens", buf);
    snprintf(buf, sizeof buf, "%g", v->watermark);
    emit(ud, "watermark", buf);
    emit(ud, "preemption", "recompute");
}

const pol_batch_ops pol_batch_vllm = {
    .abi_version = POL_ABI_VERSION,
    .name = "vllm",
    .summary = "vLLM v0: prefill-first, watermark admission, preempt newest by recompute",
    .priv_size = sizeof(vllm_priv),
    .init = vllm_init,
    .decide = vllm_decide,
    .max_batch_tokens = vllm_max_tokens,
    .max_seqs = vllm_max_seqs,
    .describe = vllm_describe,
};
