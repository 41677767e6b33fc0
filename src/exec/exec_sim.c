/* The `sim` executor: a GPU that runs every operator in exactly the time the roofline cost
 * model gives it. It makes calibrate and validate testable without hardware (a calibrated
 * table must reproduce the roofline at its grid points; a validation against the roofline
 * must show no error) and shows what the tools do before a GPU is at hand. */
#include "exec/exec.h"

#include "core/ss_alloc.h"

#include <stdio.h>
#include <string.h>

typedef struct sim_priv {
    const cat_gpu *gpu;
    const cat_engine *engine;
    cost_model *cm;
    exec_sample *s;
    size_t n, cap;
    ss_time clock; /* device time of the next launch */
} sim_priv;

static int sim_init(void *priv, const exec_config *cfg, exec_device *d, ss_errbuf *eb)
{
    sim_priv *p = priv;
    if (!cfg->gpu)
        return ss_err(eb, SS_EINVAL, "executor 'sim': a catalog GPU is required (--gpu)");
    if (!cfg->engine)
        return ss_err(eb, SS_EINVAL, "executor 'sim': a serving engine is required (--engine)");
    p->gpu = cfg->gpu;
    p->engine = cfg->engine;
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%.100s (modelled)", cfg->gpu->description);
    snprintf(d->timer, sizeof d->timer, "model");
    snprintf(d->runtime, sizeof d->runtime, "roofline");
    d->index = cfg->gpu_index;
    d->n_devices = 1;
    d->sm_count = cfg->gpu->sm_count;
    d->mem_bytes = cfg->gpu->hbm_bytes;
    d->l2_bytes = cfg->gpu->l2_bytes;
    return SS_OK;
}

static int sim_prepare(void *priv, const cat_model *m, uint32_t tp, const exec_limits *lim,
                       ss_errbuf *eb)
{
    (void)lim;
    sim_priv *p = priv;
    cost_model_destroy(&p->cm);
    cost_params cp = {.gpu = p->gpu, .engine = p->engine, .model = m, .tp = tp};
    return cost_model_create(&p->cm, "roofline", &cp, eb);
}

static int sim_launch(void *priv, const exec_op *op, uint64_t tag, ss_errbuf *eb)
{
    sim_priv *p = priv;
    if (!p->cm)
        return ss_err(eb, SS_EINVAL, "executor 'sim': launch before prepare");
    ss_time ns = cost_op_ns(p->cm, &op->op);
    ss_time start = p->clock;
    p->clock += ns;
    if (!tag)
        return SS_OK;
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 256;
        exec_sample *s = ss_realloc(p->s, cap * sizeof *s);
        if (!s)
            return ss_err(eb, SS_ENOMEM, "executor 'sim': out of memory");
        p->s = s;
        p->cap = cap;
    }
    exec_sample *s = &p->s[p->n++];
    memset(s, 0, sizeof *s);
    s->tag = tag;
    s->ns = ns;
    s->start = start;
    s->end = start + ns;
    s->n_kernels = 1;
    snprintf(s->kernel, sizeof s->kernel, "roofline_%s", cost_op_name(op->op.kind));
    return SS_OK;
}

static int sim_collect(void *priv, const exec_sample **out, size_t *n_out, ss_errbuf *eb)
{
    (void)eb;
    sim_priv *p = priv;
    *out = p->s;
    *n_out = p->n;
    p->n = 0;
    return SS_OK;
}

static void sim_fini(void *priv)
{
    sim_priv *p = priv;
    cost_model_destroy(&p->cm);
    ss_free(p->s);
}

const exec_ops exec_sim = {
    .abi_version = EXEC_ABI_VERSION,
    .name = "sim",
    .priv_size = sizeof(sim_priv),
    .init = sim_init,
    .prepare = sim_prepare,
    .launch = sim_launch,
    .collect = sim_collect,
    .fini = sim_fini,
};
