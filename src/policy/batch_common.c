/* Shared pieces of the vLLM-family batching policies: parameters, decode pass with preemption
 * and the livelock guard, swap-in pass, admission checks. Mirrors vLLM v0's scheduler
 * (_schedule_running, _schedule_swapped, BlockSpaceManager.can_allocate). */
#include "policy/batch_int.h"

#include <stdio.h>
#include <string.h>

int pol__common_init(pol__common *cm, ss_params *p, const char *who, const pol_engine_cfg *cfg,
                     ss_errbuf *eb)
{
    int rc = ss_params_get_u64(p, who, "max_num_seqs", 256, 1, 1u << 20, &cm->max_num_seqs, eb);
    if (!rc)
        rc = ss_params_get_double(p, who, "watermark", 0.01, 0.0, 0.5, &cm->watermark, eb);
    if (!rc)
        rc = ss_params_get_u64(p, who, "max_preemptions", 32, 1, UINT32_MAX,
                               &cm->max_preemptions, eb);
    const char *mode = ss_params_get(p, "preempt");
    if (!rc && mode && strcmp(mode, "recompute") && strcmp(mode, "swap"))
        rc = ss_err(eb, SS_EINVAL, "%s: preempt: expected recompute or swap, got '%s'", who,
                    mode);
    cm->swap = mode && !strcmp(mode, "swap");
    cm->max_model_len = cfg->max_model_len;
    return rc;
}

void pol__common_describe(const pol__common *cm, ss_kv_emit_fn *emit, void *ud)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)cm->max_num_seqs);
    emit(ud, "max_num_seqs", buf);
    snprintf(buf, sizeof buf, "%g", cm->watermark);
    emit(ud, "watermark", buf);
    emit(ud, "preempt", cm->swap ? "swap" : "recompute");
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)cm->max_preemptions);
    emit(ud, "max_preemptions", buf);
}

void pol__pool_init(pol__pool *pool, const pol__common *cm, const gmg_container *c)
{
    pool->free_blocks = c->blocks_free;
    pool->swap_free = c->swap_free;
    pool->watermark = (int64_t)(cm->watermark * (double)c->blocks_total);
    pool->seqs = c->running.n;
    pool->evicted = 0;
    pool->last_kept = c->running.tail;
}

int pol__can_allocate(const pol__pool *pool, const gmg_container *c, int64_t need)
{
    if ((int64_t)c->blocks_total - need < pool->watermark)
        return -1;
    return pool->free_blocks - need >= pool->watermark;
}

/* Evict running request r of c, the newest not evicted yet, to free its blocks: reject, swap
 * out or recompute. The pool gets back what that frees, which is less than r holds when
 * requests left running read cached blocks of its prompt too. */
static void evict(const pol__common *cm, const gmg *g, const gmg_container *c, gmg_id r,
                  pol__pool *pool, pol_batch_decision *out)
{
    const gmg_req *q = &g->reqs[r];
    if (q->preemptions >= cm->max_preemptions)
        pol_reject(out, r, POL_REJECT_PREEMPTED);
    else if (cm->swap && q->blocks <= pool->swap_free) {
        out->swap_out[out->n_swap_out++] = r;
        pool->swap_free -= q->blocks;
    } else
        out->preempt[out->n_preempt++] = r;
    pool->free_blocks += gmg_req_frees_after_newer(g, c, r);
    pool->seqs--;
    pool->evicted = 1;
}

uint32_t pol__decode_running(const pol__common *cm, const gmg *g, const gmg_container *c,
                             pol__pool *pool, pol_batch_decision *out)
{
    uint32_t n = 0;
    gmg_id back = c->running.tail;
    for (gmg_id r = c->running.head; r != GMG_NONE; r = g->reqs[r].next) {
        const gmg_req *q = &g->reqs[r];
        int decode = pol_pending(q) == 1 && q->generated > 0;
        /* a decode grows the sequence by one token: at most one new block */
        int64_t need = decode && !gmg_blocks_hold(c, q->blocks, (uint64_t)q->prompt + q->generated);
        while (need > pool->free_blocks && back != r) {
            gmg_id v = back;
            back = g->reqs[back].prev;
            evict(cm, g, c, v, pool, out);
        }
        if (need > pool->free_blocks) {
            evict(cm, g, c, r, pool, out); /* it is the newest left: preempt itself */
            back = g->reqs[r].prev;
            break;
        }
        if (decode) {
            pool->free_blocks -= need;
            pol__run(out, r, 1, 0);
            n++;
        }
        if (r == back)
            break;
    }
    pool->last_kept = back;
    return n;
}

void pol__swap_in(const pol__common *cm, const gmg *g, const gmg_container *c, pol__pool *pool,
                  pol_batch_decision *out)
{
    if (pool->evicted)
        return;
    for (gmg_id r = c->swapped.head; r != GMG_NONE; r = g->reqs[r].next) {
        const gmg_req *q = &g->reqs[r];
        int64_t need = gmg_blocks_for(c, (uint64_t)q->prompt + q->generated);
        if (need < (int64_t)q->swapped_blocks)
            need = q->swapped_blocks;
        if (pool->free_blocks - need < pool->watermark || pool->seqs + 1 > cm->max_num_seqs)
            break;
        out->swap_in[out->n_swap_in++] = r;
        pol__run(out, r, 1, 0);
        pool->free_blocks -= need;
        pool->seqs++;
    }
}

uint64_t pol_batch_budget(uint64_t budget, const gmg_container *c)
{
    double f = c->compute_share;
    if (!(f > 0 && f < 1))
        return budget;
    uint64_t floor_ = budget < 256 ? budget : 256;
    uint64_t b = (uint64_t)((double)budget * f) / 256 * 256;
    return b > floor_ ? b : floor_;
}
