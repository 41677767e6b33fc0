/* Global simulator: setup, the run's control and its accessors. The fast path is one ARRIVAL
 * event per distinct arrival time (the next trace record is read only when its predecessor is
 * admitted, so the trace streams) and one ITER_DONE event per iteration; the modules listed in
 * gsim_int.h handle the events. */
#include "gsim/gsim_int.h"

#include "core/ss_alloc.h"
#include "core/ss_log.h"
#include "core/ss_rng.h"

#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each event kind's name and what its target id is (NULL: none), for --check's messages. */
static const struct { const char *name, *target; } ev_names[EV__COUNT] = {
    [EV_ARRIVAL] = {"ARRIVAL", NULL},          [EV_ITER_DONE] = {"ITER_DONE", "container"},
    [EV_CLUSTER_TICK] = {"CLUSTER_TICK", NULL}, [EV_CTR_READY] = {"CTR_READY", "container"},
    [EV_MIG_STAGE] = {"MIG_STAGE", "migration"}, [EV_GUEST] = {"GUEST", "offload"},
    [EV_OFFLOAD_DONE] = {"OFFLOAD_DONE", "offload"}, [EV_PLACE_TICK] = {"PLACE_TICK", NULL},
    [EV_KV_DONE] = {"KV_DONE", "KV transfer"},
    [EV_KV_LOADED] = {"KV_LOADED", "request slot"},
};

void gsim_config_defaults(gsim_config *c)
{
    memset(c, 0, sizeof *c);
    c->replicas = 1;
    c->tp = 1;
    c->pp = 1;
    c->batching = "vllm";
    c->routing = NULL; /* the cluster policy's choice: rr for container */
    c->cost = "roofline";
    c->seed = 1;
    c->gpu_mem_util = 0.9;
    c->block_tokens = 16;
    c->max_model_len = 16384;
    c->runtime_reserve = 1073741824.0;
    c->swap_bytes = 4.0 * 1073741824.0;
    c->guest_overrun = 1 * SS_NS_PER_MS;
    c->guest_link_eff = 1;
    c->guest_interference = 1;
    c->mps_interference = GSIM_MPS_INTERFERENCE;
    c->timeslice = GSIM_TIMESLICE_NS;
    c->ctx_switch = GSIM_CTX_SWITCH_NS;
#if SS_CHECK_DEFAULT && !defined(NDEBUG)
    c->check = 1; /* a debug build checks every invariant after every event */
#endif
    const char *ns = getenv("SLICESIM_NO_STEADY");
    c->no_steady = ns && *ns && strcmp(ns, "0");
}

double gsim_link_eff(const gsim_config *cfg, gmg_link_kind kind)
{
    if (cfg->link_eff[kind] > 0)
        return cfg->link_eff[kind];
    const cat_gpu *k = cfg->gpu;
    switch (kind) {
    case GMG_LINK_NVLINK: return k->nvlink_eff;
    case GMG_LINK_PCIE: return k->pcie_eff;
    case GMG_LINK_NET: return k->net_eff;
    }
    return 1;
}

/* ---- errors ----------------------------------------------------------------------------- */

void gs_fail(gsim *s, int rc)
{
    if (!s->rc)
        s->rc = rc;
    des_stop(s->des);
}

/* The clock would pass the end of the simulated time range: times are summed with
 * ss_time_add, so such a time saturates at SS_TIME_MAX. Fails the run (the first failure's
 * message is kept); returns its code. */
int gs_past_range(gsim *s, const des_engine *e)
{
    if (!s->rc)
        gs_fail(s, ss_err(s->eb, SS_EINVAL, "simulated time would pass the end of its range "
                       "(%.4g s) after %.9g s: the run's iterations, transfers or loads take "
                       "too long", ss_time_to_s(SS_TIME_MAX), ss_time_to_s(des_now(e))));
    return s->rc;
}

des_event *gs_sched_at(gsim *s, des_engine *e, ss_time at, uint16_t kind, uint32_t target,
                           const char *file, int line)
{
    if (at == SS_TIME_MAX) {
        gs_past_range(s, e);
        return NULL;
    }
    des_event *ev = des__schedule(e, at, kind, target, file, line);
    if (!ev && !s->rc)
        gs_fail(s, ss_err(s->eb, SS_ENOMEM, "event queue: out of memory"));
    return ev;
}

/* ---- setup and run ---------------------------------------------------------------------- */

static int check_engine(const gsim_config *c, ss_errbuf *eb)
{
    if (!(c->gpu_mem_util > 0 && c->gpu_mem_util <= 1))
        return ss_err(eb, SS_EINVAL, "--gpu-mem-util: must be in (0, 1], got %g", c->gpu_mem_util);
    if (c->block_tokens < 1 || c->block_tokens > 4096)
        return ss_err(eb, SS_EINVAL, "--block-size: must be between 1 and 4096, got %u",
                      c->block_tokens);
    if (c->max_model_len < 2)
        return ss_err(eb, SS_EINVAL, "--max-model-len: must be at least 2");
    return SS_OK;
}

/* The tenants of the run: the configured ones, or one made from the single-tenant fields. */
static int make_tenants(gsim *s, ss_errbuf *eb)
{
    const gsim_config *c = &s->cfg;
    s->single = (gsim_tenant){.name = "default", .model = c->model, .engine = c->engine,
                              .tp = c->tp, .pp = c->pp,
                              .replicas = c->replicas, .max_replicas = c->replicas, .tiers = 1};
    const gsim_tenant *src = c->n_tenants ? c->tenants : &s->single;
    s->n_ten = c->n_tenants ? c->n_tenants : 1;
    if (s->n_ten > 65535 || !(s->ten = ss_calloc(s->n_ten, sizeof *s->ten)))
        return ss_err(eb, SS_ENOMEM, "tenants: out of memory");
    for (uint32_t i = 0; i < s->n_ten; i++) {
        tenant_state *t = &s->ten[i];
        t->t = src[i];
        t->kv_head = t->kv_tail = GMG_NONE;
        if (gsim_tenant_disagg(&t->t)) { /* both pools count as its instances */
            if (t->t.prefill_replicas > 100000 || t->t.decode_replicas > 100000)
                return ss_err(eb, SS_EINVAL, "tenant %s: prefill and decode pools of 1 to 100000 "
                              "instances, got %u and %u", t->t.name, t->t.prefill_replicas,
                              t->t.decode_replicas);
            t->t.replicas = t->t.max_replicas = t->t.prefill_replicas + t->t.decode_replicas;
        } else if (t->t.prefill_replicas || t->t.decode_replicas) {
            return ss_err(eb, SS_EINVAL, "tenant %s: a disaggregated tenant needs both a prefill "
                          "and a decode pool, got %u and %u instances", t->t.name,
                          t->t.prefill_replicas, t->t.decode_replicas);
        }
        if (!t->t.model || t->t.replicas < 1 || t->t.replicas > 100000)
            return ss_err(eb, SS_EINVAL, "tenant %s: needs a model and 1 to 100000 replicas "
                          "(--replicas), got %u", t->t.name, t->t.replicas);
        if (!t->t.engine)
            t->t.engine = c->engine;
        if (!t->t.engine)
            return ss_err(eb, SS_EINVAL, "tenant %s: no serving engine (--engine)", t->t.name);
        if (t->t.tiers < 1 || t->t.tiers > SS_MAX_TIERS)
            t->t.tiers = 1;
        if (t->t.max_replicas < t->t.replicas)
            t->t.max_replicas = t->t.replicas;
        if (!(t->cands = ss_calloc(t->t.max_replicas * t->t.pp, sizeof *t->cands)))
            return ss_err(eb, SS_ENOMEM, "tenants: out of memory");
        t->cap = t->t.max_replicas * t->t.pp;
    }
    return SS_OK;
}

/* Auto-scaling cluster policies get (max_replicas - replicas) standby containers per tenant
 * without pipeline parallelism: GPUs held for the tenant, serving nobody until scaled up. */
static int add_standby(gsim *s, tenant_state *t, ss_errbuf *eb)
{
    uint32_t extra = t->t.max_replicas - t->t.replicas;
    if (!pol_cluster_autoscale(s->cluster) || !extra || t->t.pp != 1 || t->t.share.kind)
        return SS_OK;
    if (!(t->standby = ss_calloc(extra, sizeof *t->standby)))
        return ss_err(eb, SS_ENOMEM, "tenants: out of memory");
    gmg_id first = s->g->n_ctrs;
    int rc = gmg_add_containers(s->g, &t->spec, extra, eb);
    for (gmg_id k = first; !rc && k < s->g->n_ctrs; k++) {
        gmg_ctr_standby(&s->g->ctrs[k]);
        t->standby[t->n_standby++] = k;
    }
    return rc;
}

/* GPUs the tenants' containers need (n_shared for those with a share), against the cluster's
 * nodes when it has a size. */
static int check_capacity(const gsim *s, uint32_t per_node, uint32_t n_shared, ss_errbuf *eb)
{
    uint64_t need = n_shared;
    for (uint32_t i = 0; i < s->n_ten; i++) {
        const gsim_tenant *t = &s->ten[i].t;
        uint32_t n = pol_cluster_autoscale(s->cluster) && t->pp == 1 ? t->max_replicas
                                                                      : t->replicas;
        if (t->share.kind)
            continue;
        if (gsim_tenant_disagg(t))
            need += (uint64_t)t->prefill_replicas * (t->prefill_tp ? t->prefill_tp : t->tp) +
                    (uint64_t)t->decode_replicas * (t->decode_tp ? t->decode_tp : t->tp);
        else
            need += (uint64_t)n * t->tp * t->pp;
    }
    if (s->cfg.nodes && need > (uint64_t)s->cfg.nodes * per_node)
        return ss_err(eb, SS_EINVAL, "cluster: the tenants' containers need %llu GPUs but %u "
                      "nodes x %u GPUs have %llu", (unsigned long long)need, s->cfg.nodes,
                      per_node, (unsigned long long)s->cfg.nodes * per_node);
    return SS_OK;
}

/* The replicas of tenant t, each on its shared GPU: at[0 .. replicas) are their indexes among
 * the shared GPUs, phys[i] the physical GPU shared GPU i became (GMG_NONE: none yet). */
static int add_shares(gsim *s, tenant_state *t, const uint32_t *at, uint32_t *phys,
                      ss_errbuf *eb)
{
    gs_share_gpu(&t->t.share, s->cfg.gpu, &t->share_gpu);
    t->spec.gpu = &t->share_gpu;
    t->spec.share = (uint8_t)t->t.share.kind;
    int rc = SS_OK;
    const gsim_share *sh = &t->t.share;
    for (uint32_t r = 0; !rc && r < t->t.replicas; r++) {
        t->spec.phys = phys[at[r]] == GMG_NONE ? s->g->n_phys : phys[at[r]];
        rc = gmg_add_containers(s->g, &t->spec, 1, eb);
        if (!rc) {
            phys[at[r]] = s->g->gpus[s->g->n_gpus - 1].phys;
            s->g->ctrs[s->g->n_ctrs - 1].compute_share =
                sh->kind == GMG_SHARE_MIG   ? (double)sh->mig->compute / CAT_MIG_COMPUTE
                : sh->kind == GMG_SHARE_MPS ? sh->sm
                                            : 1; /* time, mux: 1 / n once all are placed */
        }
    }
    return rc;
}

/* Time-sliced and multiplexed containers have 1 / n of their GPU's compute, n the containers
 * on it. */
static void share_compute(gmg *g)
{
    for (uint32_t c = 0; c < g->n_ctrs; c++) {
        const gmg_gpu *u = &g->gpus[g->ctrs[c].gpu0];
        if (u->share != GMG_SHARE_TIME && u->share != GMG_SHARE_MUX)
            continue;
        uint32_t n = 0;
        for (uint32_t k = 0; k < g->n_ctrs; k++)
            n += g->gpus[g->ctrs[k].gpu0].phys == u->phys;
        g->ctrs[c].compute_share = 1.0 / n;
    }
}

static int build_cluster(gsim *s, ss_errbuf *eb)
{
    const gsim_config *c = &s->cfg;
    int rc = check_engine(c, eb);
    uint32_t per_node = c->gpus_per_node ? c->gpus_per_node : c->gpu->gpus_per_node;
    uint32_t *at = NULL, *phys = NULL, n_shared = 0, bad, next_at = 0;
    if (!rc)
        rc = make_tenants(s, eb);
    if (!rc) {
        gsim_tenant *tt = ss_calloc(s->n_ten, sizeof *tt);
        for (uint32_t i = 0; tt && i < s->n_ten; i++)
            tt[i] = s->ten[i].t;
        rc = tt ? gs_share_layout(c, tt, s->n_ten, &at, &n_shared, &bad, eb)
                : ss_err(eb, SS_ENOMEM, "cluster: out of memory");
        ss_free(tt);
    }
    if (!rc && n_shared && !(phys = ss_malloc(n_shared * sizeof *phys)))
        rc = ss_err(eb, SS_ENOMEM, "cluster: out of memory");
    for (uint32_t i = 0; phys && i < n_shared; i++)
        phys[i] = GMG_NONE;
    if (!rc)
        rc = check_capacity(s, per_node, n_shared, eb);
    if (!rc && (rc = gmg_create(&s->g)) != SS_OK)
        rc = ss_err(eb, rc, "cluster: out of memory");
    if (rc) {
        ss_free(at);
        ss_free(phys);
        return rc;
    }
    if (!rc)
        s->g->prefix_cache = c->prefix_cache == GSIM_PREFIX_ON;
    for (uint32_t i = 0; !rc && i < s->n_ten; i++) {
        tenant_state *t = &s->ten[i];
        gmg_ctr_spec spec = {
            .tenant = (uint16_t)i, .model = t->t.model, .gpu = c->gpu,
            .engine = t->t.engine, .tp = t->t.tp,
            .pp = t->t.pp, .cost_backend = c->cost, .profiles_dir = c->profiles_dir,
            .gpus_per_node = per_node, .gpu_mem_util = c->gpu_mem_util,
            .block_tokens = c->block_tokens, .max_batch_tokens = pol_batch_max_tokens(s->batch),
            .max_seqs = pol_batch_max_seqs(s->batch), .runtime_reserve = c->runtime_reserve,
            .swap_bytes = c->swap_bytes, .tiers = t->t.tiers,
        };
        t->spec = spec;
        gmg_id first = s->g->n_ctrs;
        if (gsim_tenant_disagg(&t->t))
            rc = gs_disagg_add(s, t, eb);
        else if (t->t.share.kind) {
            rc = add_shares(s, t, at + next_at, phys, eb);
            next_at += t->t.replicas;
        } else
            rc = gmg_add_containers(s->g, &spec, t->t.replicas, eb);
        for (gmg_id k = first; !rc && !t->n_dcands && k < s->g->n_ctrs; k++)
            t->cands[t->n_cands++] = k;
        if (!rc)
            rc = add_standby(s, t, eb);
        if (rc && c->n_tenants > 1)
            ss_err_prefix(eb, rc, "tenant %s", t->t.name);
    }
    if (!rc && n_shared)
        share_compute(s->g);
    ss_free(at);
    ss_free(phys);
    return rc;
}

/* A parameter no policy of the run reads belongs to another policy (a warning: one scenario
 * serves several policies) or is a typo (an error). */
static int check_params_used(const gsim_config *cfg, ss_errbuf *eb)
{
    char who[128];
    snprintf(who, sizeof who, "batching '%s', routing '%s' or cluster '%s'", cfg->batching,
             cfg->routing ? cfg->routing : "rr", cfg->cluster ? cfg->cluster : "container");
    const char *key;
    for (size_t i = 0; (key = ss_params_unused_at(cfg->params, i)); i++) {
        const char *owner = pol_param_owner(key);
        char place[96];
        if (owner && pol_place_find(owner)) {
            snprintf(place, sizeof place, "operator placement '%s' (--ops %s)", owner, owner);
            owner = place;
        }
        if (!owner)
            return ss_err(eb, SS_EINVAL, "unknown parameter '%s' for %s", key, who);
        ss_warn("parameter '%s' is not used by %s (it belongs to %s)", key, who, owner);
    }
    return SS_OK;
}

/* Per-container batching-policy state, in each container's extension slot. */
static int alloc_ctr_state(gsim *s, ss_errbuf *eb)
{
    size_t sz = pol_batch_ctr_priv_size(s->batch);
    for (uint32_t i = 0; sz && i < s->g->n_ctrs; i++)
        if (!(s->g->ctrs[i].batch_priv = ss_calloc(1, sz)))
            return ss_err(eb, SS_ENOMEM, "batching: out of memory");
    return SS_OK;
}

int gsim_create(gsim **out, const gsim_config *cfg, ss_errbuf *eb)
{
    gsim *s = ss_calloc(1, sizeof *s);
    if (!s)
        return ss_err(eb, SS_ENOMEM, "out of memory");
    s->cfg = *cfg;
    s->free_off = GMG_NONE;
    s->max_overrun = cfg->guest_overrun;
    ss_rng_seed(&s->route_rng, cfg->seed, SS_RNG_STREAM_ROUTING);
    pol_engine_cfg ecfg = {.max_model_len = cfg->max_model_len};
    int rc = pol_batch_create(&s->batch, cfg->batching, cfg->params, &ecfg, eb);
    if (!rc)
        rc = pol_cluster_create(&s->cluster, cfg->cluster ? cfg->cluster : "container",
                                cfg->params, eb);
    if (!rc && !s->cfg.routing)
        s->cfg.routing = pol_cluster_default_routing(s->cluster);
    if (!rc)
        s->tier_ordered = pol_cluster_tier_ordered(s->cluster);
    if (!rc)
        rc = pol_route_create(&s->route, s->cfg.routing, cfg->params,
                              pol_cluster_name(s->cluster), &s->route_rng, eb);
    if (!rc)
        rc = gs_place_create(s, eb);
    if (!rc)
        rc = gs_disagg_create(s, eb);
    if (!rc)
        rc = check_params_used(&s->cfg, eb);
    if (!rc)
        rc = build_cluster(s, eb);
    if (!rc && (rc = metrics_init(&s->m, s->n_ten, cfg->warmup)) != SS_OK)
        ss_err(eb, rc, "metrics: out of memory");
    if (!rc)
        rc = alloc_ctr_state(s, eb);
    if (!rc && (!(s->spare = ss_calloc(1, sizeof *s->spare)) ||
                !(s->gst = ss_calloc(s->g->n_gpus ? s->g->n_gpus : 1, sizeof *s->gst)) ||
                !(s->gsl = ss_calloc(s->g->n_gpus ? s->g->n_gpus : 1, sizeof *s->gsl)) ||
                !(s->starts = ss_calloc(s->g->n_ctrs ? s->g->n_ctrs : 1, sizeof *s->starts)) ||
                !(s->starts_now = ss_calloc(s->g->n_ctrs ? s->g->n_ctrs : 1,
                                            sizeof *s->starts_now))))
        rc = ss_err(eb, SS_ENOMEM, "out of memory");
    if (!rc && gs_coh_alloc(s))
        rc = ss_err(eb, SS_ENOMEM, "out of memory");
    if (!rc)
        rc = gs_alloc_cluster_state(s, eb);
    if (!rc)
        rc = gs_kvp_create(s, eb);
    if (!rc)
        rc = gs_share_mux_link(s, eb);
    if (!rc)
        rc = gs_share_alloc(s, eb);
    if (!rc && (rc = des_engine_create(&s->des, s)) != SS_OK)
        ss_err(eb, rc, "out of memory");
    if (!rc) {
        des_handler_set(s->des, EV_ARRIVAL, gs_on_arrival);
        des_handler_set(s->des, EV_ITER_DONE, gs_on_iter_done);
        des_handler_set(s->des, EV_CLUSTER_TICK, gs_on_cluster_tick);
        des_handler_set(s->des, EV_CTR_READY, gs_on_ctr_ready);
        des_handler_set(s->des, EV_MIG_STAGE, gs_on_mig_stage);
        des_handler_set(s->des, EV_GUEST, gs_on_guest);
        des_handler_set(s->des, EV_OFFLOAD_DONE, gs_on_offload_done);
        des_handler_set(s->des, EV_PLACE_TICK, gs_on_place_tick);
        des_handler_set(s->des, EV_KV_DONE, gs_on_kv_done);
        des_handler_set(s->des, EV_KV_LOADED, gs_on_kv_loaded);
        *out = s;
        return SS_OK;
    }
    gsim_destroy(&s);
    return rc;
}

/* A fork destroyed, whole, becomes one of its replay's spares when there is room (gs_spare). */
static int park(gsim *s)
{
    if (!s->fork || !s->spare || s->spare->n == GS_SPARES || s->rc)
        return 0;
    s->spare->fork[s->spare->n++] = s;
    return 1;
}

void gsim_destroy(gsim **sp)
{
    gsim *s = *sp;
    if (!s)
        return;
    *sp = NULL;
    if (park(s))
        return;
    gs_place_destroy(s); /* its what-if forks borrow from this simulation */
    if (!s->fork) { /* and so does the spare they left */
        gsim_release_spare(s);
        ss_free(s->spare);
    }
    gs_release(s);
    ss_free(s);
}

void gsim_release_spare(gsim *s)
{
    while (s->spare && s->spare->n) {
        gsim *f = s->spare->fork[--s->spare->n];
        f->spare = NULL; /* destroyed, not parked again */
        gsim_destroy(&f);
    }
}

void gs_release(gsim *s)
{
    des_engine_destroy(&s->des);
    for (uint32_t i = 0; s->ten && i < s->n_ten; i++) {
        ss_free(s->ten[i].cands);
        ss_free(s->ten[i].standby);
        ss_free(s->ten[i].dcands);
        gs_ceiling_free(&s->ten[i].ceiling);
        ss_hist_fini(&s->ten[i].out_lens);
        ss_hist_index_fini(&s->ten[i].out_ix);
    }
    ss_free(s->ten);
    for (uint32_t i = 0; s->g && i < s->g->n_ctrs; i++)
        ss_free(s->g->ctrs[i].batch_priv);
    gmg_destroy(&s->g);
    pol_route_destroy(&s->route);
    pol_cluster_destroy(&s->cluster);
    gs_disagg_destroy(s);
    gs_free_cluster_state(s);
    gs_share_free(s);
    ss_free(s->gst);
    ss_free(s->gsl);
    ss_free(s->run_cross);
    gs_coh_free(s);
    ss_free(s->starts);
    ss_free(s->starts_now);
    if (!s->fork)
        pol_batch_destroy(&s->batch);
    metrics_fini(&s->m);
    gsim__check_fini(&s->chk);
    ss_free(s->dec.run); /* the block holding all seven decision arrays */
}

static void progress_tramp(const des_engine *e, void *ud)
{
    gsim *s = ud;
    s->progress(s->progress_ud, des_now(e), s->m.arrived, s->n_finished,
                des_get_stats(e)->n_events);
}

void gsim_set_progress(gsim *s, gsim_progress_fn *fn, void *ud)
{
    s->progress = fn;
    s->progress_ud = ud;
    des_progress_set(s->des, fn ? progress_tramp : NULL, s, 1u << 18);
}

void gsim_set_observer(gsim *s, const gsim_observer *obs)
{
    gs_coh_dissolve_all(s); /* an observer sees every request's every step */
    if (obs)
        s->obs = *obs;
    else
        memset(&s->obs, 0, sizeof s->obs);
    gs_coh_refresh(s);
}

gsim_observer gsim_get_observer(const gsim *s) { return s->obs; }

static gsim_check_counts check_counts(const gsim *s)
{
    gsim_check_counts n = {.conserve = !s->fork, .arrived = s->m.arrived,
                           .completed = s->n_completed, .rejected = s->n_rejected};
    return n;
}

/* With --check: after every event up to `until`, every invariant (check.h). A violation stops
 * the run with the event, the entity and the values in eb. */
static int run_checked(gsim *s, ss_time until)
{
    while (!s->rc && des_next_time(s->des) <= until && des_step(s->des)) {
        if (s->rc)
            break; /* the event failed (a sink, out of memory): that error is the one to tell */
        gsim_check_event ev = {.kind = "?", .at = des_now(s->des)};
        uint16_t kind;
        des_last_event(s->des, &kind, &ev.target_id);
        if (kind < EV__COUNT && ev_names[kind].name) {
            ev.kind = ev_names[kind].name;
            ev.target = ev_names[kind].target;
        }
        gsim_check_counts n = check_counts(s);
        int rc = gsim__check_event(&s->chk, s->g, &ev, &n, s->eb);
        if (rc)
            return s->rc = rc;
        if (s->progress && des_get_stats(s->des)->n_events % (1u << 18) == 0)
            progress_tramp(s->des, s);
    }
    return s->rc;
}

/* Every request arrived has completed or been rejected, or is still in flight when the run was
 * cut short (events left pending after gsim_advance). */
static int check_conservation(gsim *s)
{
    gsim_check_counts n = check_counts(s);
    return gsim__check_end(s->g, &n, des_next_time(s->des) != SS_TIME_MAX, s->eb);
}

int gsim_start(gsim *s, gsim_source_fn *src, void *src_ud, gsim_sink_fn *sink, void *sink_ud,
               ss_errbuf *eb)
{
    s->src = src;
    s->src_ud = src_ud;
    s->sink = sink;
    s->sink_ud = sink_ud;
    s->eb = eb;
    s->rc = SS_OK;
    if (gs_read_next(s) && !gs_sched(s, s->des, s->next.arrival_ns, EV_ARRIVAL, 0))
        return s->rc;
    gs_coh_refresh(s);
    ss_time period = pol_cluster_period(s->cluster);
    if (period > 0 && s->have_next && !gs_sched(s, s->des, period, EV_CLUSTER_TICK, 0))
        return s->rc;
    return gs_place_start(s);
}

int gsim_advance(gsim *s, ss_time until, ss_errbuf *eb)
{
    s->eb = eb;
    if (s->rc)
        return s->rc;
    s->until = until;
    if (s->cfg.check)
        return run_checked(s, until);
    des_run(s->des, until);
    if (!s->keep_cohorts) /* what the caller reads between advances is up to date */
        gs_coh_dissolve_all(s);
    return s->rc;
}

/* Every GPU idles from its last compute phase to the end of the measurement window (the last
 * completion; ticks after it do not count). */
static void close_slices(gsim *s)
{
    ss_time end = metrics_window_end(&s->m);
    for (uint32_t i = 0; i < s->g->n_gpus; i++) {
        gs_idle_until(s, i, end);
        if (end > s->gst[i].dev_free)
            s->gst[i].dev_free = end;
    }
}

int gsim_finish(gsim *s)
{
    gs_coh_dissolve_all(s);
    close_slices(s);
    for (uint32_t i = 0; s->gsl && i < s->g->n_gpus; i++) {
        metrics_slices_fold(&s->m.slices, &s->gsl[i]);
        memset(&s->gsl[i], 0, sizeof s->gsl[i]); /* folded once */
    }
    for (uint32_t i = 0; s->cs && i < s->g->n_ctrs; i++) /* guest work in open idle stretches */
        gs_stretch_close(s, &s->g->ctrs[i], des_now(s->des));
    metrics_flush(&s->m);
    for (uint32_t i = 0; !s->fork && i < s->g->n_ctrs; i++) {
        const gmg_container *c = &s->g->ctrs[i];
        if (!c->pc)
            continue;
        s->m.all.prefix.evictions += c->pc->evictions;
        if (c->tenant < s->m.n_tenants)
            s->m.tenants[c->tenant].prefix.evictions += c->pc->evictions;
        s->cs[i].prefix.evictions = c->pc->evictions;
    }
    gs_kvp_finish(s);
    int rc = s->rc;
    if (!rc && s->m.oom)
        rc = ss_err(s->eb, SS_ENOMEM, "metrics: out of memory");
    if (!rc && !s->fork)
        rc = check_conservation(s);
    if (!rc && s->m.aborted)
        ss_warn("%llu requests were rejected after being preempted too often (the livelock "
                "guard, parameter max_preemptions)", (unsigned long long)s->m.aborted);
    return rc;
}

int gsim_run(gsim *s, gsim_source_fn *src, void *src_ud, gsim_sink_fn *sink, void *sink_ud,
             ss_errbuf *eb)
{
    int rc = gsim_start(s, src, src_ud, sink, sink_ud, eb);
    if (!rc)
        rc = gsim_advance(s, SS_TIME_MAX, eb);
    int frc = gsim_finish(s);
    return rc ? rc : frc;
}

const metrics *gsim_metrics(const gsim *s) { return &s->m; }

const gsim_gpu_stats *gsim_gpu_stats_at(const gsim *s, gmg_id gpu)
{
    return gpu < s->g->n_gpus ? &s->gst[gpu] : NULL;
}
uint32_t gsim_n_tenants(const gsim *s) { return s->n_ten; }
const char *gsim_routing_name(const gsim *s) { return pol_route_name(s->route); }
const char *gsim_cluster_name(const gsim *s) { return pol_cluster_name(s->cluster); }
const metrics_prefix *gsim_ctr_prefix(const gsim *s, gmg_id c)
{
    return c < s->g->n_ctrs ? &s->cs[c].prefix : NULL;
}

const char *gsim_tenant_name(const gsim *s, uint32_t i) { return i < s->n_ten ? s->ten[i].t.name : NULL; }
const gsim_tenant *gsim_tenant_at(const gsim *s, uint32_t i) { return i < s->n_ten ? &s->ten[i].t : NULL; }
const gmg *gsim_graph(const gsim *s) { return s->g; }
const des_stats *gsim_des_stats(const gsim *s) { return des_get_stats(s->des); }
ss_time gsim_end_time(const gsim *s) { return des_now(s->des); }
uint64_t gsim_iterations(const gsim *s) { return s->iterations; }
uint64_t gsim_cohort_steps(const gsim *s) { return s->coh_steps; }
uint64_t gsim_max_model_len(const gsim *s) { return s->cfg.max_model_len; }
uint64_t gsim_max_batch_tokens(const gsim *s) { return pol_batch_max_tokens(s->batch); }

typedef struct json_emit {
    ss_strbuf *b;
    const char *prefix;
} json_emit;

static void emit_kv(void *ud, const char *key, const char *value)
{
    json_emit *j = ud;
    ss_strbuf_printf(j->b, ", ");
    ss_strbuf_printf(j->b, "\"%s.%s\": ", j->prefix, key);
    ss_strbuf_json_str(j->b, value);
}

void gsim_params_json(const gsim *s, ss_strbuf *b)
{
    const gsim_config *c = &s->cfg;
    ss_strbuf_printf(b, "{\"engine.gpu_mem_util\": \"%g\", \"engine.block_tokens\": \"%u\", "
                        "\"engine.max_model_len\": \"%llu\", \"engine.runtime_reserve_gib\": "
                        "\"%g\", \"engine.kv_blocks_per_container\": \"%u\"",
                     c->gpu_mem_util, c->block_tokens, (unsigned long long)c->max_model_len,
                     c->runtime_reserve / 1073741824.0, s->g->n_ctrs ? s->g->ctrs[0].blocks_total : 0);
    json_emit j = {b, "batching"};
    pol_batch_describe(s->batch, emit_kv, &j);
    j.prefix = "routing";
    pol_route_describe(s->route, emit_kv, &j);
    j.prefix = "cluster";
    pol_cluster_describe(s->cluster, emit_kv, &j);
    ss_strbuf_printf(b, "}");
}
