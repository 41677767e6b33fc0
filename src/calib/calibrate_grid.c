/* The operator grid of `slicesim calibrate`: the shapes measured per operator (powers of two,
 * or the peers' density), each point as the executor runs it and as the profile table keys
 * it. Not for measuring or writing the table (calibrate.c). */
#include "calib/calibrate.h"
#include "calib/calibrate_int.h"

#include "core/ss_alloc.h"

#include <string.h>

static int push(calib__points *p, cost_op_kind k, uint64_t a, uint64_t b)
{
    if (p->n == p->cap && ss_grow((void **)&p->v, &p->cap, p->n + 1, sizeof *p->v))
        return SS_ENOMEM;
    p->v[p->n++] = (calib__point){k, a, b};
    return SS_OK;
}

/* Token counts of the dense operators: powers of two (quick), or the peers' density: every
 * count to 8, then steps of 8 to 1024, 16 to 2048, 32 to 4096 and 512 to 8192 (full). */
static size_t dense_tokens(int full, uint64_t *out)
{
    size_t n = 0;
    if (!full) {
        for (uint64_t t = 1; t <= 4096; t *= 2)
            out[n++] = t;
        return n;
    }
    for (uint64_t t = 1; t <= 8; t++)
        out[n++] = t;
    for (uint64_t t = 16; t <= 1024; t += 8)
        out[n++] = t;
    for (uint64_t t = 1040; t <= 2048; t += 16)
        out[n++] = t;
    for (uint64_t t = 2080; t <= 4096; t += 32)
        out[n++] = t;
    for (uint64_t t = 4608; t <= 8192; t += 512)
        out[n++] = t;
    return n;
}

static const cost_op_kind grid_ops[] = {
    COST_OP_EMBED,    COST_OP_NORM,     COST_OP_QKV,      COST_OP_ROPE,
    COST_OP_ATTN_PREFILL, COST_OP_ATTN_DECODE, COST_OP_OPROJ, COST_OP_RESIDUAL,
    COST_OP_MOE_ROUTER, COST_OP_MLP_UP,  COST_OP_ACT,      COST_OP_MLP_DOWN,
    COST_OP_LM_HEAD,  COST_OP_PP_SEND,
};

static int op_selected(const char *list, cost_op_kind k)
{
    if (!list)
        return 1;
    const char *name = cost_op_name(k);
    size_t len = strlen(name);
    for (const char *s = list; *s;) {
        const char *e = strchr(s, ',');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == len && !strncmp(s, name, n))
            return 1;
        s += n + (e ? 1 : 0);
    }
    return 0;
}

int calib_calibrate_op_known(const char *name, size_t len)
{
    int known = 0;
    for (size_t i = 0; i < sizeof grid_ops / sizeof *grid_ops; i++)
        known |= strlen(cost_op_name(grid_ops[i])) == len &&
                 !strncmp(name, cost_op_name(grid_ops[i]), len);
    return known;
}

int calib__build_grid(calib__points *g, int full, cost_model *cm, const exec_device *dev,
                      const char *ops)
{
    uint64_t tok[512];
    size_t nt = dense_tokens(full, tok);
    static const uint64_t q_quick[] = {16, 64, 256, 512, 1024, 2048, 4096};
    static const uint64_t c0_quick[] = {0, 1024, 4096};
    static const uint64_t q_full[] = {16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
    static const uint64_t c0_full[] = {0, 256, 1024, 2048, 4096};
    static const uint64_t b_quick[] = {1, 4, 16, 64, 256}, l_quick[] = {128, 512, 2048, 4096};
    static const uint64_t b_full[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
    static const uint64_t l_full[] = {64, 128, 256, 512, 1024, 2048, 4096, 8192};
    cost_batch probe = {0};
    cost_batch_add_prefill(&probe, 16, 16);
    cost_batch_add_decode(&probe, 16);
    for (size_t i = 0; i < sizeof grid_ops / sizeof *grid_ops; i++) {
        cost_op_kind k = grid_ops[i];
        cost_op shape;
        if (!op_selected(ops, k) || !exec_runs_op(dev, k) || cost_op_shape(cm, k, &probe, &shape))
            continue;
        int rc = SS_OK;
        switch (k) {
        case COST_OP_ATTN_PREFILL: {
            const uint64_t *q = full ? q_full : q_quick, *c = full ? c0_full : c0_quick;
            size_t nq = full ? 10 : 7, nc = full ? 5 : 3;
            for (size_t a = 0; !rc && a < nq; a++)
                for (size_t b = 0; !rc && b < nc; b++)
                    rc = push(g, k, q[a], c[b]);
            break;
        }
        case COST_OP_ATTN_DECODE: {
            const uint64_t *bs = full ? b_full : b_quick, *ls = full ? l_full : l_quick;
            size_t nb = full ? 10 : 5, nl = full ? 8 : 4;
            for (size_t a = 0; !rc && a < nb; a++)
                for (size_t b = 0; !rc && b < nl; b++)
                    if (bs[a] * ls[b] <= ((uint64_t)1 << 21))
                        rc = push(g, k, bs[a], ls[b]);
            break;
        }
        case COST_OP_LM_HEAD:
            for (size_t a = 0; !rc && a < nt && tok[a] <= (full ? 512u : 256u); a++)
                rc = push(g, k, tok[a], 0);
            break;
        case COST_OP_PP_SEND:
            for (uint64_t bytes = 4096; !rc && bytes <= ((uint64_t)256 << 20);
                 bytes *= full ? 2 : 4)
                rc = push(g, k, bytes, 0);
            break;
        default:
            for (size_t a = 0; !rc && a < nt; a++)
                rc = push(g, k, tok[a], 0);
            break;
        }
        if (rc)
            return rc;
    }
    return SS_OK;
}

void calib__point_op(cost_model *cm, const cat_model *m, unsigned tp, const calib__point *pt,
                     exec_op *eo, exec_seq *seqs, cost_prof_row *row)
{
    cost_batch b = {0};
    memset(eo, 0, sizeof *eo);
    memset(row, 0, sizeof *row);
    row->op = pt->kind;
    cost_prof_shape_keys(row, m);
    switch (pt->kind) {
    case COST_OP_ATTN_PREFILL:
        cost_batch_add_prefill(&b, pt->a, pt->b);
        seqs[0] = (exec_seq){(uint32_t)pt->a, (uint32_t)pt->b};
        eo->seqs = seqs;
        eo->n_seqs = 1;
        break;
    case COST_OP_ATTN_DECODE:
        for (uint64_t i = 0; i < pt->a; i++) {
            cost_batch_add_decode(&b, pt->b);
            seqs[i] = (exec_seq){1, (uint32_t)(pt->b - 1)};
        }
        eo->seqs = seqs;
        eo->n_seqs = (uint32_t)pt->a;
        break;
    case COST_OP_PP_SEND:
        eo->op = (cost_op){.kind = COST_OP_PP_SEND, .tp = tp, .count = 1,
                           .comm_bytes = (double)pt->a};
        row->key[COST_PK_N_GPUS] = 2;
        row->key[COST_PK_BYTES] = (int64_t)pt->a;
        return;
    default:
        for (uint64_t i = 0; i < pt->a; i++)
            cost_batch_add_decode(&b, 1);
        break;
    }
    cost_op_shape(cm, pt->kind, &b, &eo->op);
    eo->op.count = 1;
    row->key[COST_PK_TP] = tp;
    row->key[COST_PK_TOKENS] = (int64_t)eo->op.tokens;
    if (pt->kind == COST_OP_ATTN_PREFILL || pt->kind == COST_OP_ATTN_DECODE)
        row->key[COST_PK_KV_TOKENS] = (int64_t)eo->op.ctx_tokens;
}
