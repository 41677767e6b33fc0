/* Static, request-level batching (FasterTransformer-style): when a container is idle it forms
 * a batch of up to max_batch waiting requests (FCFS, each reserving KV for its prompt and
 * output), runs their prefill together, then decodes until every member has finished; nobody
 * joins a batch in progress. With pad_prompts (default) the prefill pays for every prompt padded
 * to the longest one in the batch; without shrink (default) finished members keep occupying
 * their slot, so each decode step costs as much as the full batch at the longest context. */
#include "policy/policy.h"

#include <stdio.h>
#include <string.h>

typedef struct static_priv {
    uint64_t max_batch;     /* requests per batch */
    int shrink;             /* decode cost follows the live members only */
    int pad_prompts;        /* prefill pads every prompt to the batch's longest */
    uint64_t max_model_len; /* from the engine */
} static_priv;

typedef struct static_ctr {
    uint32_t batch_n; /* members of the batch in progress when it formed */
} static_ctr;

static int get_bool(ss_params *p, const char *key, int def, int *out, ss_errbuf *eb)
{
    const char *v = ss_params_get(p, key);
    *out = def;
    if (!v)
        return SS_OK;
    if (!strcmp(v, "true") || !strcmp(v, "1"))
        *out = 1;
    else if (!strcmp(v, "false") || !strcmp(v, "0"))
        *out = 0;
    else
        return ss_err(eb, SS_EINVAL, "static: %s: expected true or false, got '%s'", key, v);
    return SS_OK;
}

static int static_init(void *priv, ss_params *p, const pol_engine_cfg *cfg, ss_errbuf *eb)
{
    static_priv *s = priv;
    int rc = ss_params_get_u64(p, "static", "max_batch", 32, 1, 1u << 20, &s->max_batch, eb);
    if (!rc)
        rc = get_bool(p, "shrink", 0, &s->shrink, eb);
    if (!rc)
        rc = get_bool(p, "pad_prompts", 1, &s->pad_prompts, eb);
    s->max_model_len = cfg->max_model_len;
    return rc;
}

/* Decode the running batch; finished members still cost a slot unless shrink is set. */
static void decode_batch(const static_priv *s, const static_ctr *st, const gmg *g,
                         const gmg_container *c, pol_batch_decision *out)
{
    uint64_t max_ctx = 0;
    for (gmg_id r = c->running.head; r != GMG_NONE; r = g->reqs[r].next) {
        const gmg_req *q = &g->reqs[r];
        out->run[out->n_run] = r;
        out->q_tokens[out->n_run] = 1;
        out->hold[out->n_run++] = 0;
        if ((uint64_t)q->prompt + q->generated > max_ctx)
            max_ctx = (uint64_t)q->prompt + q->generated;
    }
    uint32_t phantoms = st->batch_n > c->running.n ? st->batch_n - c->running.n : 0;
    if (!s->shrink)
        for (uint32_t i = 0; i < phantoms; i++)
            cost_batch_add_decode(&out->extra, max_ctx);
}

static void form_batch(const static_priv *s, static_ctr *st, const gmg *g,
                       const gmg_container *c, pol_batch_decision *out)
{
    int64_t free_blocks = c->blocks_free;
    uint32_t max_prompt = 0;
    for (gmg_id r = c->waiting.head; r != GMG_NONE && out->n_run < s->max_batch;
         r = g->reqs[r].next) {
        const gmg_req *q = &g->reqs[r];
        int64_t need = gmg_blocks_for(c, (uint64_t)q->prompt + q->output);
        if (q->prompt > s->max_model_len || need > (int64_t)c->blocks_total) {
            pol_reject(out, r, q->prompt > s->max_model_len ? POL_REJECT_TOO_LONG : POL_REJECT_KV);
            continue;
        }
        if (need > free_blocks)
            break;
        out->run[out->n_run] = r;
        out->q_tokens[out->n_run] = pol_pending(q);
        out->hold[out->n_run++] = (uint32_t)need;
        free_blocks -= need;
        if (q->prompt > max_prompt)
            max_prompt = q->prompt;
    }
    st->batch_n = out->n_run;
    for (uint32_t i = 0; s->pad_prompts && i < out->n_run; i++) {
        uint32_t p = g->reqs[out->run[i]].prompt;
        if (p < max_prompt)
            cost_batch_add_prefill(&out->extra, max_prompt - p, p);
    }
    out->extra.n_prefill = 0; /* padding adds tokens, not sequences */
}

static void static_decide(void *priv, void *ctr_priv, const gmg *g, const gmg_container *c,
                          pol_batch_decision *out)
{
    const static_priv *s = priv;
    static_ctr *st = ctr_priv;
    if (c->running.n)
        decode_batch(s, st, g, c, out);
    else
        form_batch(s, st, g, c, out);
}

/* The batch in progress decodes; steady while no finished member leaves a phantom slot to pay
 * for (with shrink, never one). */
static int static_steady(const void *priv, const void *ctr_priv, const gmg_container *c)
{
    const static_priv *s = priv;
    const static_ctr *st = ctr_priv;
    return s->shrink || st->batch_n <= c->running.n;
}

static uint64_t static_max_tokens(const void *priv)
{
    return ((const static_priv *)priv)->max_model_len;
}

static uint32_t static_max_seqs(const void *priv)
{
    return (uint32_t)((const static_priv *)priv)->max_batch;
}

static void static_describe(const void *priv, ss_kv_emit_fn *emit, void *ud)
{
    const static_priv *s = priv;
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)s->max_batch);
    emit(ud, "max_batch", buf);
    emit(ud, "shrink", s->shrink ? "true" : "false");
    emit(ud, "pad_prompts", s->pad_prompts ? "true" : "false");
}

/* A static batch forms at once and nobody joins it: a request prefilled elsewhere cannot. */
static uint32_t static_offload_hold(const void *priv, const gmg_container *c, const gmg_req *q)
{
    (void)priv, (void)c, (void)q;
    return POL_NO_OFFLOAD;
}

static const char *const pol_batch_static_params[] = {"max_batch", "shrink", "pad_prompts", NULL};

const pol_batch_ops pol_batch_static = {
    .abi_version = POL_ABI_VERSION,
    .params = pol_batch_static_params,
    .name = "static",
    .summary = "static request-level batching (FasterTransformer): a batch runs to completion",
    .priv_size = sizeof(static_priv),
    .ctr_priv_size = sizeof(static_ctr),
    .init = static_init,
    .decide = static_decide,
    .max_batch_tokens = static_max_tokens,
    .max_seqs = static_max_seqs,
    .describe = static_describe,
    .offload_hold = static_offload_hold,
    .steady = static_steady,
};
