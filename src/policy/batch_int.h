/* Private to policy/: the machinery the vLLM-family batching policies share (vllm, sarathi):
 * their common parameters, a local view of the KV pools while a decision is built, the decode
 * pass over the running list with preemption (recompute or swap) and the livelock guard, the
 * swap-in pass, and FCFS admission checks. Not for routing policies. */
#ifndef SS_POLICY_BATCH_INT_H
#define SS_POLICY_BATCH_INT_H

#include "policy/policy.h"

/* Parameters shared by vllm and sarathi. */
typedef struct pol__common {
    uint64_t max_num_seqs;    /* sequences per iteration, running included */
    double watermark;         /* fraction of the pool kept free at admission */
    int swap;                 /* 1: preempt by swap (when host space allows), 0: recompute */
    uint64_t max_preemptions; /* livelock guard: a request preempted this often is rejected */
    uint64_t max_model_len;   /* from the engine */
} pol__common;

/* Read max_num_seqs, watermark, preempt (recompute|swap) and max_preemptions for `who`. */
int pol__common_init(pol__common *cm, ss_params *p, const char *who, const pol_engine_cfg *cfg,
                     ss_errbuf *eb);
void pol__common_describe(const pol__common *cm, ss_kv_emit_fn *emit, void *ud);

/* The pools as the decision being built leaves them. */
typedef struct pol__pool {
    int64_t free_blocks;   /* GPU KV blocks still free */
    int64_t swap_free;     /* host swap blocks still free */
    int64_t watermark;     /* blocks kept free at admission */
    uint64_t seqs;         /* sequences running or scheduled */
    int evicted;           /* a request was preempted, swapped out or rejected while running */
    gmg_id last_kept;      /* after the decode pass: last running request not evicted */
} pol__pool;

void pol__pool_init(pol__pool *pool, const pol__common *cm, const gmg_container *c);
/* Append r to the run list with q tokens and a block reservation (0 = none). */
static inline void pol__run(pol_batch_decision *out, gmg_id r, uint32_t q, uint32_t hold)
{
    out->run[out->n_run] = r;
    out->q_tokens[out->n_run] = q;
    out->hold[out->n_run++] = hold;
}
/* Decode every running request whose pending work is one token, in admission order; when one
 * cannot get its next block, evict the newest running request (or itself when it is the
 * newest): rejected past the livelock guard, else swapped out when swap is on and host space
 * allows, else preempted by recompute. Requests with more pending work (partial prefills) are
 * skipped. Returns the number of decodes scheduled. */
uint32_t pol__decode_running(const pol__common *cm, const gmg *g, const gmg_container *c,
                             pol__pool *pool, pol_batch_decision *out);
/* Swap swapped requests back in, FCFS, while blocks (above the watermark) and sequences allow;
 * each is decoded in the same iteration. Does nothing if this decision evicted anyone. */
void pol__swap_in(const pol__common *cm, const gmg *g, const gmg_container *c, pol__pool *pool,
                  pol_batch_decision *out);
/* Admission check of a waiting request needing `need` blocks: 1 = admit, 0 = not now,
 * -1 = never (more blocks than the pool minus the watermark). */
int pol__can_allocate(const pol__pool *pool, const gmg_container *c, int64_t need);

#endif
