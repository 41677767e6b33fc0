/* GPU sharing between containers (docs/guide/gpu-sharing.md): a tenant's share as a scenario
 * writes it, the figures of the GPU instance a share runs on, and the layout of the shares on
 * the cluster's shared GPUs (first fit, or where the scenario put them), checked against what
 * the GPU allows. Not for the costs of sharing at run time. */
#include "gsim/gsim_int.h"

#include "core/ss_alloc.h"
#include "core/ss_parse.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define GIB 1073741824.0
/* SM and memory shares are summed in binary floating point: 0.3 + 0.3 + 0.4 is 1 + 1e-16. */
#define SHARE_SLACK 1e-9

int gsim_share_parse(const char *text, const cat_gpu *gpu, gsim_share *out, ss_errbuf *eb)
{
    memset(out, 0, sizeof *out);
    if (!strcmp(text, "whole") || !*text)
        return SS_OK;
    if (!strcmp(text, "time")) {
        out->kind = GMG_SHARE_TIME;
        return SS_OK;
    }
    if (!strcmp(text, "mux")) {
        out->kind = GMG_SHARE_MUX;
        return SS_OK;
    }
    if (!strncmp(text, "mps:", 4)) {
        double f;
        if (ss_parse_decimalz(text + 4, &f) || !(f > 0 && f <= 1))
            return ss_err(eb, SS_EINVAL, "'%s': an MPS share is mps:F, the SM share F in (0, 1] "
                          "(CUDA_MPS_ACTIVE_THREAD_PERCENTAGE / 100)", text);
        out->kind = GMG_SHARE_MPS;
        out->sm = f;
        return SS_OK;
    }
    if (!strncmp(text, "mig:", 4)) {
        char known[CAT_MIG_MAX * 18] = "";
        size_t used = 0;
        for (uint32_t i = 0; i < gpu->n_mig && used < sizeof known; i++) {
            int w = snprintf(known + used, sizeof known - used, "%s%s", i ? ", " : "",
                             gpu->mig[i].name);
            used += w > 0 ? (size_t)w : 0;
        }
        if (!gpu->n_mig)
            return ss_err(eb, SS_EINVAL, "'%s': %s has no MIG profiles (its profile has no [mig] "
                          "section)", text, gpu->name);
        if (!(out->mig = cat_gpu_mig(gpu, text + 4)))
            return ss_err(eb, SS_EINVAL, "'%s': %s has no MIG profile '%s' (known: %s)", text,
                          gpu->name, text + 4, known);
        out->kind = GMG_SHARE_MIG;
        return SS_OK;
    }
    return ss_err(eb, SS_EINVAL, "'%s': a share is mig:PROFILE, mps:F, time, mux or whole", text);
}

void gsim_share_format(const gsim_share *sh, char *buf, size_t n)
{
    switch (sh->kind) {
    case GMG_SHARE_MIG: snprintf(buf, n, "mig:%s", sh->mig->name); break;
    case GMG_SHARE_MPS: snprintf(buf, n, "mps:%g", sh->sm); break;
    case GMG_SHARE_TIME: snprintf(buf, n, "time"); break;
    case GMG_SHARE_MUX: snprintf(buf, n, "mux"); break;
    default: snprintf(buf, n, "whole"); break;
    }
}

/* The memory one container of the share holds (a multiplexed one's: what it asks of its GPU
 * for the layout, its weights, activations and runtime taken from the pool its GPU's
 * containers share; 0: the default, its weights twice over plus the runtime reserve, over
 * gpu_mem_util: a KV share at least as large as its weights). */
static double share_mem(const gsim_share *sh, const cat_gpu *gpu)
{
    if (sh->kind == GMG_SHARE_MIG)
        return gpu->hbm_bytes * sh->mig->memory / CAT_MIG_MEMORY;
    if (sh->mem_bytes > 0 || sh->kind == GMG_SHARE_MUX)
        return sh->mem_bytes;
    return sh->kind == GMG_SHARE_MPS ? gpu->hbm_bytes * sh->sm : gpu->hbm_bytes / 2;
}

double gsim_share_need(const cat_model *m, double runtime_reserve, double gpu_mem_util)
{
    return (2 * cost_weight_bytes_per_gpu(m, 1, 1) + runtime_reserve) / gpu_mem_util;
}

static double tenant_mem(const gsim_config *cfg, const gsim_tenant *t)
{
    double m = share_mem(&t->share, cfg->gpu);
    if (t->share.kind == GMG_SHARE_MUX && !(m > 0))
        m = gsim_share_need(t->model, cfg->runtime_reserve, cfg->gpu_mem_util);
    return m;
}

void gs_share_gpu(const gsim_share *sh, const cat_gpu *gpu, cat_gpu *out)
{
    *out = *gpu;
    char what[32];
    gsim_share_format(sh, what, sizeof what);
    snprintf(out->description, sizeof out->description, "%.90s, %s", gpu->description, what);
    if (sh->kind != GMG_SHARE_MUX) /* a multiplexed container sees the whole GPU's memory */
        out->hbm_bytes = share_mem(sh, gpu);
    if (sh->kind == GMG_SHARE_MIG) { /* its slices: SMs, and memory with its controllers and L2 */
        uint32_t c = sh->mig->compute, m = sh->mig->memory;
        out->peak_flops = gpu->peak_flops * c / CAT_MIG_COMPUTE;
        out->sm_count = (uint32_t)lround((double)gpu->sm_count * c / CAT_MIG_COMPUTE);
        out->hbm_bw = gpu->hbm_bw * m / CAT_MIG_MEMORY;
        out->l2_bytes = gpu->l2_bytes * m / CAT_MIG_MEMORY;
    } else if (sh->kind == GMG_SHARE_MPS) { /* its SMs; the bandwidth is shared at run time */
        out->peak_flops = gpu->peak_flops * sh->sm;
        out->sm_count = (uint32_t)lround(gpu->sm_count * sh->sm);
        if (!out->sm_count)
            out->sm_count = 1;
    }
    out->n_mig = 0;
}

/* ---- the layout ------------------------------------------------------------------------- */

/* One shared GPU while the layout is made. */
typedef struct shared {
    int kind;                   /* GMG_SHARE_* of its shares (one kind per GPU) */
    uint32_t n;                 /* shares on it */
    const cat_mig *mig[CAT_MIG_MEMORY]; /* MIG: its instances' profiles */
    double sm, mem;             /* MPS: SM shares; MPS, time: memory, bytes */
    uint32_t first_tenant;      /* the tenant of its first share */
} shared;

/* Whether instances of profiles p[0..n) have places on one GPU: distinct memory slices each
 * from a start the profile allows, at most CAT_MIG_COMPUTE compute slices in all (a search
 * over the placements: at most 8 instances of at most 7 starts). */
static int mig_place(const cat_mig *const *p, uint32_t n, uint32_t used)
{
    if (!n)
        return 1;
    const cat_mig *m = p[0];
    uint32_t span = (1u << m->memory) - 1;
    for (uint32_t st = 0; st + m->memory <= CAT_MIG_MEMORY; st++)
        if ((m->starts >> st & 1) && !(used & span << st) &&
            mig_place(p + 1, n - 1, used | span << st))
            return 1;
    return 0;
}

static int mig_fits(const shared *g, const cat_mig *add)
{
    if (g->n == CAT_MIG_MEMORY)
        return 0;
    const cat_mig *p[CAT_MIG_MEMORY];
    uint32_t compute = add->compute;
    for (uint32_t i = 0; i < g->n; i++) {
        p[i] = g->mig[i];
        compute += p[i]->compute;
    }
    p[g->n] = add;
    return compute <= CAT_MIG_COMPUTE && mig_place(p, g->n + 1, 0);
}

/* Whether a share `sh` of `mem` bytes fits on g; else why, into why. */
static int fits(const shared *g, const gsim_share *sh, double mem, const cat_gpu *gpu,
                char *why, size_t n)
{
    if (g->n && g->kind != sh->kind) {
        snprintf(why, n, "its other shares are %s, and a GPU runs one kind of sharing",
                 g->kind == GMG_SHARE_MIG   ? "MIG instances"
                 : g->kind == GMG_SHARE_MPS ? "MPS clients"
                 : g->kind == GMG_SHARE_MUX ? "multiplexed"
                                            : "time-sliced");
        return 0;
    }
    if (sh->kind == GMG_SHARE_MIG) {
        if (!g->n || mig_fits(g, sh->mig))
            return 1;
        size_t used = (size_t)snprintf(why, n, "no MIG placement on %s holds", gpu->name);
        for (uint32_t i = 0; i < g->n && used < n; i++) {
            int w = snprintf(why + used, n - used, " %s +", g->mig[i]->name);
            used += w > 0 ? (size_t)w : 0;
        }
        if (used < n)
            snprintf(why + used, n - used, " %s (NVIDIA's MIG user guide)", sh->mig->name);
        return 0;
    }
    if (sh->kind == GMG_SHARE_MPS && g->sm + sh->sm > 1 + SHARE_SLACK) {
        snprintf(why, n, "its MPS SM shares would sum to %g, over 1", g->sm + sh->sm);
        return 0;
    }
    if (g->mem + mem > gpu->hbm_bytes * (1 + SHARE_SLACK)) { /* mux: what it asks for */
        if (g->n)
            snprintf(why, n, "its shares' memory would sum to %.1f GiB, over the GPU's %.1f GiB "
                     "(mem_gib)", (g->mem + mem) / GIB, gpu->hbm_bytes / GIB);
        else
            snprintf(why, n, "mem_gib: %.1f GiB is more than the GPU's %.1f GiB", mem / GIB,
                     gpu->hbm_bytes / GIB);
        return 0;
    }
    return 1;
}

static void take(shared *g, const gsim_share *sh, double mem, uint32_t tenant)
{
    if (!g->n)
        g->first_tenant = tenant;
    g->kind = sh->kind;
    if (sh->kind == GMG_SHARE_MIG)
        g->mig[g->n] = sh->mig;
    g->sm += sh->sm;
    g->mem += mem;
    g->n++;
}

/* What a share needs besides room: one GPU per container, co-located, whole GPUs' cost
 * tables not used. */
static int share_shape(const gsim_config *cfg, const gsim_tenant *t, ss_errbuf *eb)
{
    const gsim_share *sh = &t->share;
    if (t->tp != 1 || t->pp != 1)
        return ss_err(eb, SS_EINVAL, "tenant %s: share: a shared GPU runs a container of one GPU "
                      "(tp = pp = 1), got tp %u, pp %u", t->name, t->tp, t->pp);
    if (gsim_tenant_disagg(t))
        return ss_err(eb, SS_EINVAL, "tenant %s: share: disaggregated prefill and decode pools "
                      "run on whole GPUs", t->name);
    if (sh->kind == GMG_SHARE_MIG && sh->mem_bytes > 0)
        return ss_err(eb, SS_EINVAL, "tenant %s: mem_gib: a MIG instance has its profile's "
                      "memory (%s)", t->name, sh->mig->name);
    if (sh->n_gpus && sh->n_gpus != t->replicas)
        return ss_err(eb, SS_EINVAL, "tenant %s: share_gpus: one shared GPU per replica, got %u "
                      "for %u replicas", t->name, sh->n_gpus, t->replicas);
    if (cfg->cost && strcmp(cfg->cost, "roofline"))
        return ss_err(eb, SS_EINVAL, "tenant %s: share: the cost model '%s' times operators from "
                      "tables measured on whole GPUs; shares run under the roofline", t->name,
                      cfg->cost);
    if (cfg->ops && strcmp(cfg->ops, "home") && sh->kind != GMG_SHARE_MIG)
        return ss_err(eb, SS_EINVAL, "tenant %s: share: operator placement '%s' runs beside MIG "
                      "instances and whole GPUs, not beside %s", t->name, cfg->ops,
                      sh->kind == GMG_SHARE_MPS   ? "MPS clients"
                      : sh->kind == GMG_SHARE_MUX ? "multiplexed containers"
                                                  : "time-sliced contexts");
    return SS_OK;
}

int gs_share_layout(const gsim_config *cfg, const gsim_tenant *ten, uint32_t n_ten,
                    uint32_t **at_out, uint32_t *n_shared, uint32_t *bad, ss_errbuf *eb)
{
    *at_out = NULL;
    *n_shared = 0;
    uint32_t total = 0;
    for (uint32_t i = 0; i < n_ten; i++)
        if (ten[i].share.kind) {
            *bad = i;
            int rc = share_shape(cfg, &ten[i], eb);
            if (rc)
                return rc;
            total += ten[i].replicas;
        }
    if (!total)
        return SS_OK;
    uint32_t *at = ss_calloc(total, sizeof *at);
    shared *gs = ss_calloc(total + 1, sizeof *gs);
    if (!at || !gs) {
        ss_free(at);
        ss_free(gs);
        return ss_err(eb, SS_ENOMEM, "shares: out of memory");
    }
    uint32_t k = 0, n = 0;
    int rc = SS_OK;
    for (uint32_t i = 0; !rc && i < n_ten; i++) {
        const gsim_share *sh = &ten[i].share;
        double mem = tenant_mem(cfg, &ten[i]);
        for (uint32_t r = 0; sh->kind && !rc && r < ten[i].replicas; r++, k++) {
            char why[256];
            uint32_t g = 0;
            if (sh->n_gpus) {
                g = sh->gpus[r];
                if (g > n) {
                    *bad = i;
                    rc = ss_err(eb, SS_EINVAL, "tenant %s: share_gpus: shared GPU %u before GPU "
                                "%u has a share (number them from 0, in order)", ten[i].name, g,
                                n);
                } else if (!fits(&gs[g], sh, mem, cfg->gpu, why, sizeof why)) {
                    *bad = i;
                    char what[32];
                    gsim_share_format(sh, what, sizeof what);
                    rc = ss_err(eb, SS_EINVAL, "tenant %s: share: %s does not fit on shared GPU "
                                "%u beside tenant %s's: %s", ten[i].name, what, g,
                                ten[gs[g].first_tenant].name, why);
                }
            } else {
                while (g < n && !fits(&gs[g], sh, mem, cfg->gpu, why, sizeof why))
                    g++;
            }
            if (rc)
                break;
            if (!fits(&gs[g], sh, mem, cfg->gpu, why, sizeof why)) { /* alone: too large */
                *bad = i;
                rc = ss_err(eb, SS_EINVAL, "tenant %s: %s%s", ten[i].name,
                            strncmp(why, "mem_gib", 7) ? "share: " : "", why);
                break;
            }
            take(&gs[g], sh, mem, i);
            at[k] = g;
            if (g == n)
                n++;
        }
    }
    ss_free(gs);
    if (rc) {
        ss_free(at);
        return rc;
    }
    *at_out = at;
    *n_shared = n;
    return SS_OK;
}

int gsim_share_check(const gsim_config *cfg, uint32_t *bad_tenant, ss_errbuf *eb)
{
    uint32_t n;
    return gsim_share_gpus(cfg, &n, bad_tenant, eb);
}

int gsim_share_gpus(const gsim_config *cfg, uint32_t *n, uint32_t *bad_tenant, ss_errbuf *eb)
{
    uint32_t *at;
    *bad_tenant = UINT32_MAX;
    int rc = gs_share_layout(cfg, cfg->tenants, cfg->n_tenants, &at, n, bad_tenant, eb);
    ss_free(at);
    return rc;
}

/* ---- run time: MPS, time slicing and multiplexing ---------------------------------------- */

/* The grain of a step's memory part mu. */
#define MU_GRAIN 64.0
/* The least share of the SMs a multiplexed GPU's prefill steps get beside its decode steps. */
#define MUX_PREFILL_FLOOR 0.1

/* Iterations on an MPS, time-sliced or multiplexed GPU run at rates the others in flight set:
 * each keeps its alone time (the cost model's, timed when it began) as work, progresses at its
 * rate (alone ns per ns), and whenever one begins or ends on the GPU every one in flight there
 * is brought up to date and its end moved to where its rate now puts it (a fluid model):
 * - MPS: its SM share bounds its compute (its GPU's figures, gs_share_gpu); the memory term
 *   mu of its alone time is stretched by the bandwidth the steps in flight ask for together,
 *   max(1, sum of their mu); while others run beside it, by 1 + mps_interference as well.
 * - time slicing: k contexts with work take turns of timeslice, each switch costing
 *   ctx_switch: each runs at timeslice / (k (timeslice + ctx_switch)), alone at full speed.
 * - multiplexed (MuxServe's ADBS: decode jobs first, prefill jobs with the SMs left): the memory
 *   term as under MPS; a decode step's compute runs at full speed, the prefill steps share what
 *   the decode steps' compute (their 1 - mu) leaves of the SMs. */

int gs_share_mux_link(gsim *s, ss_errbuf *eb)
{
    gmg *g = s->g;
    gmg_id *ids = ss_calloc(g->n_ctrs ? g->n_ctrs : 1, sizeof *ids);
    if (!ids)
        return ss_err(eb, SS_ENOMEM, "out of memory");
    int rc = SS_OK;
    for (uint32_t p = 0; !rc && p < g->n_phys; p++) {
        uint32_t n = 0;
        double fixed = 0, hbm = 0;
        for (uint32_t c = 0; c < g->n_ctrs; c++) {
            const gmg_gpu *u = &g->gpus[g->ctrs[c].gpu0];
            if (u->phys != p || u->share != GMG_SHARE_MUX)
                continue;
            ids[n++] = c;
            fixed += u->mem.weights + u->mem.activations + u->mem.runtime;
            hbm = u->capacity;
        }
        if (!n)
            continue;
        double pool = s->cfg.gpu_mem_util * hbm - fixed;
        const gmg_container *c0 = &g->ctrs[ids[0]];
        if (pool < c0->block_bytes)
            rc = ss_err(eb, SS_EINVAL, "tenant %s: share: the %u multiplexed containers of GPU "
                        "%u leave no KV pool: %.1f GiB of weights, activations and runtime in "
                        "%.1f GiB (%.2f of %.1f GiB)", s->ten[c0->tenant].t.name, n, p,
                        fixed / 1073741824.0, s->cfg.gpu_mem_util * hbm / 1073741824.0,
                        s->cfg.gpu_mem_util, hbm / 1073741824.0);
        else
            rc = gmg_mux_link(g, ids, n, pool, eb);
    }
    ss_free(ids);
    return rc;
}

int gs_share_alloc(gsim *s, ss_errbuf *eb)
{
    const gmg *g = s->g;
    int dyn = 0;
    for (uint32_t i = 0; i < g->n_gpus && !dyn; i++)
        dyn = g->gpus[i].share >= GMG_SHARE_MPS;
    if (!dyn)
        return SS_OK;
    if (!(s->srun = ss_calloc(g->n_ctrs, sizeof *s->srun)) ||
        !(s->sgrp_first = ss_calloc(g->n_phys + 1, sizeof *s->sgrp_first)) ||
        !(s->sgrp_ctr = ss_calloc(g->n_ctrs ? g->n_ctrs : 1, sizeof *s->sgrp_ctr)))
        return ss_err(eb, SS_ENOMEM, "out of memory");
    for (uint32_t c = 0; c < g->n_ctrs; c++) {
        const gmg_container *k = &g->ctrs[c];
        s->srun[c].phys = g->gpus[k->gpu0].phys;
        s->srun[c].weight_bytes = cost_weight_bytes_per_gpu(k->model, k->tp, k->pp);
        s->srun[c].kv_token_bytes = cost_kv_bytes_per_token_per_gpu(k->model, k->tp, k->pp);
        s->sgrp_first[s->srun[c].phys + 1]++;
    }
    for (uint32_t p = 0; p < g->n_phys; p++)
        s->sgrp_first[p + 1] += s->sgrp_first[p];
    uint32_t *fill = ss_calloc(g->n_phys + 1, sizeof *fill);
    if (!fill)
        return ss_err(eb, SS_ENOMEM, "out of memory");
    for (uint32_t c = 0; c < g->n_ctrs; c++) {
        uint32_t p = s->srun[c].phys;
        s->sgrp_ctr[s->sgrp_first[p] + fill[p]++] = c;
    }
    ss_free(fill);
    return SS_OK;
}

void gs_share_free(gsim *s)
{
    ss_free(s->srun);
    ss_free(s->sgrp_first);
    ss_free(s->sgrp_ctr);
    s->srun = NULL;
    s->sgrp_first = NULL;
    s->sgrp_ctr = NULL;
}

/* The part of c's alone step of length `alone` that the roofline's memory term sets: the
 * weights and the KV its batch reads, streamed at its GPU's bandwidth and memory efficiency. */
static double memory_part(const gs_share_run *r, const gmg_container *c, const cat_gpu *gpu,
                          ss_time alone)
{
    const cost_batch *b = &c->iter.batch;
    double bytes = r->weight_bytes +
                   r->kv_token_bytes * (double)(b->decode_ctx_tokens + b->prefill_ctx_tokens);
    double mem_ns = bytes / (gpu->hbm_bw * gpu->eff_memory) * 1e9;
    double mu = alone > 0 && mem_ns < (double)alone ? mem_ns / (double)alone : 1;
    /* in 64ths: consecutive decode steps then ask the same of the bandwidth, and the others'
     * rates (and ends) stay as they were (a 1.6 % grain, well inside the roofline's error) */
    return round(mu * MU_GRAIN) / MU_GRAIN;
}

/* Bring every iteration in flight on physical GPU p up to `now` (unless `settled`: they are),
 * give each its rate with the ones in flight now, and move the ends that changed. */
/* Bring every iteration in flight on physical GPU p up to `now` at the rates they ran at (the
 * same set of them ran since their last update), and mark the ones that ran beside each. */
static void settle(gsim *s, uint32_t p, ss_time now)
{
    uint32_t first = s->sgrp_first[p], last = s->sgrp_first[p + 1];
    for (uint32_t i = first; i < last; i++) {
        gs_share_run *r = &s->srun[s->sgrp_ctr[i]];
        if (!r->active || now == r->t_upd)
            continue;
        r->done += (double)(now - r->t_upd) * r->rate;
        r->t_upd = now;
        for (uint32_t j = first; s->obs.on_iter && j < last; j++) { /* beside the others */
            uint32_t o = j - first;
            if (j != i && s->srun[s->sgrp_ctr[j]].active && o < 8 * sizeof r->with)
                r->with[o / 8] |= (uint8_t)(1u << (o % 8));
        }
    }
}

/* Multiplexed: the SMs the decode steps' compute (the sum of their 1 - mu) leave the prefill
 * steps, at least MUX_PREFILL_FLOOR of the GPU. */
static double mux_sm_left(double decode_sm)
{
    return 1 - decode_sm > MUX_PREFILL_FLOOR ? 1 - decode_sm : MUX_PREFILL_FLOOR;
}

/* The rate (alone ns per ns) of a step whose alone time the memory term sets mu of (a prefill
 * step when `prefill`), while k steps are in flight on its GPU of sharing `kind`, n_prefill of
 * them prefill steps, their mu summing to demand, sm_left what the decode steps leave
 * (mux_sm_left). */
static double share_rate(const gsim_config *cfg, int kind, double mu, int prefill, uint32_t k,
                         uint32_t n_prefill, double demand, double sm_left)
{
    double mem = mu * (demand > 1 ? demand : 1);
    if (k < 2)
        return 1;
    if (kind == GMG_SHARE_MPS)
        return 1 / (((1 - mu) + mem) * (1 + cfg->mps_interference));
    if (kind == GMG_SHARE_MUX)
        return 1 / ((1 - mu) * (prefill ? n_prefill / sm_left : 1) + mem);
    double q = (double)cfg->timeslice, sw = (double)cfg->ctx_switch;
    return q / ((double)k * (q + sw));
}

double gsim_share_slowdown(const gsim_config *cfg, int kind, const double *mu,
                           const uint8_t *prefill, uint32_t n, uint32_t i)
{
    uint32_t n_prefill = 0;
    double demand = 0, decode_sm = 0;
    for (uint32_t j = 0; j < n; j++) {
        demand += mu[j];
        if (prefill[j])
            n_prefill++;
        else
            decode_sm += 1 - mu[j];
    }
    return 1 / share_rate(cfg, kind, mu[i], prefill[i], n, n_prefill, demand,
                          mux_sm_left(decode_sm));
}

static void retime(gsim *s, uint32_t p, ss_time now, int settled)
{
    uint32_t k = 0, n_prefill = 0;
    double demand = 0, decode_sm = 0;
    int kind = GMG_SHARE_NONE;
    if (!settled)
        settle(s, p, now);
    for (uint32_t i = s->sgrp_first[p]; i < s->sgrp_first[p + 1]; i++) {
        gs_share_run *r = &s->srun[s->sgrp_ctr[i]];
        if (!r->active)
            continue;
        k++;
        demand += r->mu;
        if (r->prefill)
            n_prefill++;
        else
            decode_sm += 1 - r->mu;
        kind = s->g->gpus[s->g->ctrs[s->sgrp_ctr[i]].gpu0].share;
    }
    double sm_left = mux_sm_left(decode_sm);
    for (uint32_t i = s->sgrp_first[p]; i < s->sgrp_first[p + 1]; i++) {
        gmg_id id = s->sgrp_ctr[i];
        gs_share_run *r = &s->srun[id];
        if (!r->active)
            continue;
        r->rate = share_rate(&s->cfg, kind, r->mu, r->prefill, k, n_prefill, demand, sm_left);
        gmg_container *c = &s->g->ctrs[id];
        double left = r->work - r->done;
        ss_time end = now + (left > 0 ? (ss_time)ceil(left / r->rate) : 0);
        if (end >= c->iter.end - 1 && end <= c->iter.end + 1) /* its rate as it was: rounding */
            continue;
        des_cancel(s->des, r->ev);
        r->ev = gs_sched(s, s->des, end, EV_ITER_DONE, id);
        ss_time delta = end - c->iter.end;
        gsim_gpu_stats *u = &s->gst[c->gpu0];
        u->busy_ns += delta;
        u->dev_busy_ns += delta;
        if (u->dev_free == c->iter.end)
            u->dev_free = end;
        c->iter.end = c->iter.stage_end[0] = end;
        s->g->replicas[c->replica].stage_free[0] = end;
        s->cs[id].own_end = end;
    }
}

void gs_share_begin(gsim *s, gmg_container *c, des_event *ev)
{
    gs_share_run *r = &s->srun[c->id];
    ss_time now = des_now(s->des);
    settle(s, r->phys, now); /* the others' work so far, beside one another only */
    r->active = 1;
    r->t_upd = now;
    r->done = 0;
    r->work = (double)(c->iter.end - now);
    r->rate = 1;
    r->mu = memory_part(r, c, s->g->gpus[c->gpu0].kind, c->iter.end - now);
    r->prefill = c->iter.batch.n_prefill > 0;
    r->ev = ev;
    c->iter.alone_ns = c->iter.end - now;
    c->iter.shared_with = 0;
    if (s->obs.on_iter)
        memset(r->with, 0, sizeof r->with);
    retime(s, r->phys, now, 1);
}

void gs_share_end(gsim *s, gmg_container *c)
{
    gs_share_run *r = &s->srun[c->id];
    settle(s, r->phys, des_now(s->des)); /* the work done so far, at the rates till now */
    r->active = 0;
    r->ev = NULL;
    if (!s->obs.on_iter) /* who it ran beside is counted for observers only */
        return;
    uint32_t n = 0;
    for (size_t i = 0; i < sizeof r->with; i++)
        for (uint8_t b = r->with[i]; b; b &= (uint8_t)(b - 1))
            n++;
    c->iter.shared_with = n;
    s->obs.on_iter(s->obs.ud, s->g, c);
}

void gs_share_idle(gsim *s, gmg_container *c)
{
    retime(s, s->srun[c->id].phys, des_now(s->des), 1); /* settled by gs_share_end */
}
