/* Orca: iteration-level FCFS scheduling with selective batching. Every iteration decodes all
 * running requests and admits new ones (their whole prompt, in the same iteration) while the
 * batch stays within max_batch and their KV reservation fits. Each admitted request reserves
 * KV for its maximum length up front, so nothing is ever preempted:
 *   reserve=context (default) the model's own length limit, min(max_model_len, the model's
 *                  trained context max_context): 4096 tokens for Llama-2-7B (Orca as its
 *                  advocates would deploy it: a sequence cannot outgrow the model's window);
 *   reserve=max    max_model_len (16384 by default, whatever the model's context);
 *   reserve=oracle prompt + the output the request will really produce (an upper bound on Orca);
 *   reserve=pow2   the oracle length rounded up to a power of two (the vLLM paper's Orca Pow2).
 * A request whose reservation exceeds the whole pool, or whose prompt exceeds max_model_len, is
 * rejected. slicesim's engine truncates sequences at max_model_len only, for every policy alike,
 * so a trace request longer than the model's context (prompt + output above it) still runs to
 * its full length; under reserve=context it reserves that length (at most max_model_len), the
 * memory it will really hold, instead of outgrowing a context-sized reservation. */
#include "policy/policy.h"

#include <stdio.h>
#include <string.h>

enum { RESERVE_CONTEXT, RESERVE_MAX, RESERVE_ORACLE, RESERVE_POW2, RESERVE__COUNT };
static const char *const reserve_names[] = {"context", "max", "oracle", "pow2"};

typedef struct orca_priv {
    uint64_t max_batch;     /* sequences per iteration */
    int reserve;            /* RESERVE_* */
    uint64_t max_model_len; /* from the engine */
} orca_priv;

static int orca_init(void *priv, ss_params *p, const pol_engine_cfg *cfg, ss_errbuf *eb)
{
    orca_priv *o = priv;
    int rc = ss_params_get_u64(p, "orca", "max_batch", 128, 1, 1u << 20, &o->max_batch, eb);
    const char *r = ss_params_get(p, "reserve");
    o->reserve = RESERVE_CONTEXT;
    for (int i = 0; r && i < RESERVE__COUNT; i++)
        if (!strcmp(r, reserve_names[i]))
            o->reserve = i;
    if (!rc && r && strcmp(r, reserve_names[o->reserve]))
        rc = ss_err(eb, SS_EINVAL, "orca: reserve: expected context, max, oracle or pow2, got '%s'",
                    r);
    o->max_model_len = cfg->max_model_len;
    return rc;
}

/* The longest sequence container c's model takes: max_model_len, or the model's trained
 * context when that is shorter. */
static uint64_t context_len(const orca_priv *o, const gmg_container *c)
{
    uint64_t ctx = c->model && c->model->max_context ? c->model->max_context : o->max_model_len;
    return ctx < o->max_model_len ? ctx : o->max_model_len;
}

/* Tokens of KV request q reserves at admission to container c. */
static uint64_t reservation(const orca_priv *o, const gmg_container *c, const gmg_req *q)
{
    uint64_t want = (uint64_t)q->prompt + q->output, cap = o->max_model_len;
    if (o->reserve == RESERVE_MAX)
        want = cap;
    else if (o->reserve == RESERVE_CONTEXT) {
        uint64_t ctx = context_len(o, c);
        if (want <= ctx) /* longer: see the top of the file */
            want = ctx;
    }
    else if (o->reserve == RESERVE_POW2) {
        uint64_t p2 = 1;
        while (p2 < want)
            p2 <<= 1;
        want = p2;
    }
    return want < cap ? want : cap;
}

static void orca_decide(void *priv, void *ctr_priv, const gmg *g, const gmg_container *c,
                        pol_batch_decision *out)
{
    (void)ctr_priv;
    const orca_priv *o = priv;
    for (gmg_id r = c->running.head; r != GMG_NONE; r = g->reqs[r].next) {
        out->run[out->n_run] = r;
        out->q_tokens[out->n_run] = pol_pending(&g->reqs[r]);
        out->hold[out->n_run++] = 0; /* the reservation already covers it */
    }
    int64_t free_blocks = c->blocks_free;
    uint64_t seqs = c->running.n;
    for (gmg_id r = c->waiting.head; r != GMG_NONE; r = g->reqs[r].next) {
        const gmg_req *q = &g->reqs[r];
        int64_t need = gmg_blocks_for(c, reservation(o, c, q));
        if (q->prompt > o->max_model_len || need > (int64_t)c->blocks_total) {
            pol_reject(out, r, q->prompt > o->max_model_len ? POL_REJECT_TOO_LONG : POL_REJECT_KV);
            continue;
        }
        if (need > free_blocks || seqs + 1 > o->max_batch)
            break;
        out->run[out->n_run] = r;
        out->q_tokens[out->n_run] = pol_pending(q);
        out->hold[out->n_run++] = (uint32_t)need;
        free_blocks -= need;
        seqs++;
    }
}

/* An offloaded request holds its reservation from the start and counts in the batch. */
static uint32_t orca_offload_hold(const void *priv, const gmg_container *c, const gmg_req *q)
{
    const orca_priv *o = priv;
    if (c->running.n + c->n_offloaded + 1 > o->max_batch)
        return POL_NO_OFFLOAD;
    return gmg_blocks_for(c, reservation(o, c, q));
}

/* Nothing waiting: every running request decodes within its reservation, nobody is admitted. */
static int orca_steady(const void *priv, const void *ctr_priv, const gmg_container *c)
{
    (void)priv, (void)ctr_priv, (void)c;
    return 1;
}

static uint64_t orca_max_tokens(const void *priv) { return ((const orca_priv *)priv)->max_model_len; }
static uint32_t orca_max_seqs(const void *priv) { return (uint32_t)((const orca_priv *)priv)->max_batch; }

static void orca_describe(const void *priv, ss_kv_emit_fn *emit, void *ud)
{
    const orca_priv *o = priv;
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)o->max_batch);
    emit(ud, "max_batch", buf);
    emit(ud, "reserve", reserve_names[o->reserve]);
}

static const char *const pol_batch_orca_params[] = {"max_batch", "reserve", NULL};

const pol_batch_ops pol_batch_orca = {
    .abi_version = POL_ABI_VERSION,
    .params = pol_batch_orca_params,
    .name = "orca",
    .summary = "Orca: iteration-level FCFS, KV reserved for the maximum length, no preemption",
    .priv_size = sizeof(orca_priv),
    .init = orca_init,
    .decide = orca_decide,
    .max_batch_tokens = orca_max_tokens,
    .max_seqs = orca_max_seqs,
    .describe = orca_describe,
    .offload_hold = orca_offload_hold,
    .steady = orca_steady,
};
