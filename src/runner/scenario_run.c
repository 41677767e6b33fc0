/* From a scenario to a run: catalog lookups, SLAs in nanoseconds, workload specs. */
#include "runner/scenario_run.h"
#include "runner/run.h"

#include "core/ss_parse.h"
#include "cost/cost.h"
#include "policy/policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- synthetic workload specs ------------------------------------------------------------ */

static int synth_kv(trace_gen_spec *g, const char *key, const char *val, ss_errbuf *eb)
{
    double d;
    int64_t n;
    int rc = SS_ENOTFOUND;
    if (!strcmp(key, "prompt") || !strcmp(key, "output"))
        rc = trace_len_dist_parse(key[0] == 'p' ? &g->prompt : &g->output, val, eb);
    else
        rc = trace_gen_spec_set(g, key, val, eb);
    if (rc != SS_ENOTFOUND)
        return rc ? ss_err_prefix(eb, rc, "%s", key) : SS_OK;
    if (!strcmp(key, "arrival")) {
        if (strcmp(val, "poisson") && strcmp(val, "gamma"))
            return ss_err(eb, SS_EPARSE, "arrival: expected poisson or gamma, got '%s'",
                          val);
        g->arrival = strcmp(val, "gamma") ? TRACE_ARRIVAL_POISSON : TRACE_ARRIVAL_GAMMA;
        return SS_OK;
    }
    if (!strcmp(key, "requests") || !strcmp(key, "seed")) {
        if (ss_parse_i64z(val, &n) || n < 0)
            return ss_err(eb, SS_EPARSE, "%s: not a count: '%s'", key, val);
        *(!strcmp(key, "seed") ? &g->seed : &g->n_requests) = (uint64_t)n;
        return SS_OK;
    }
    double *dst = !strcmp(key, "rate") ? &g->rate : !strcmp(key, "duration") ? &g->duration_s
                : !strcmp(key, "cv") ? &g->cv : NULL;
    if (!dst)
        return ss_err(eb, SS_EPARSE, "unknown key '%s' (known: rate, duration, "
                      "requests, arrival, cv, prompt, output, seed, %s)", key,
                      trace_gen_prefix_keys);
    if (ss_parse_doublez(val, &d) || !(d > 0))
        return ss_err(eb, SS_EPARSE, "%s: expected a positive number, got '%s'", key, val);
    *dst = d;
    return SS_OK;
}

/* Parse a synthetic workload spec: space-separated KEY=VALUE with rate (req/s, required),
 * duration (s) or requests (count), arrival (poisson|gamma), cv, prompt and output (length
 * distributions as for slicesim trace gen; default: the Azure conversation quantiles), seed
 * (default: derived by the workload from the run seed) and the prefix-identity keys of
 * trace_gen_spec_set (groups, system, group_zipf, turns, think, max_context). 0, or
 * SS_EPARSE / SS_EINVAL with "KEY: what is wrong" in eb (the caller says where the spec was). */
static int parse_synthetic(trace_gen_spec *g, const char *text, ss_errbuf *eb)
{
    memset(g, 0, sizeof *g);
    g->cv = 1.0;
    int rc = trace_len_dist_parse(&g->prompt, TRACE_GEN_PROMPT_DEFAULT, eb);
    if (!rc)
        rc = trace_len_dist_parse(&g->output, TRACE_GEN_OUTPUT_DEFAULT, eb);
    char item[SCN_TEXT_MAX], seen[SCN_TEXT_MAX] = " "; /* " key key ... " */
    size_t n_seen = 1;
    for (const char *p = text; !rc && *p;) {
        size_t n = strcspn(p, " \t");
        if (n >= sizeof item)
            return ss_err(eb, SS_EPARSE, "item too long");
        memcpy(item, p, n);
        item[n] = '\0';
        p += n + strspn(p + n, " \t");
        if (!n)
            continue;
        char *eq = strchr(item, '=');
        if (!eq)
            return ss_err(eb, SS_EPARSE, "expected KEY=VALUE, got '%s'", item);
        *eq = '\0';
        /* a key given twice is an error, as a key given twice in the INI file is */
        char word[SCN_TEXT_MAX + 2];
        snprintf(word, sizeof word, " %s ", item);
        if (strstr(seen, word))
            return ss_err(eb, SS_EPARSE, "%s: given twice (each key once)", item);
        n_seen += (size_t)snprintf(seen + n_seen, sizeof seen - n_seen, "%s ", item);
        rc = synth_kv(g, item, eq + 1, eb);
    }
    if (!rc && g->rate <= 0)
        rc = ss_err(eb, SS_EPARSE, "rate=R (requests/s) is required");
    if (!rc && !g->n_requests && !(g->duration_s > 0))
        rc = ss_err(eb, SS_EPARSE, "needs duration=S or requests=N");
    return rc ? rc : trace_gen_spec_check(g, eb);
}

/* ---- tenants ----------------------------------------------------------------------------- */

static wl_split split_of(const char *s)
{
    return !strcmp(s, "rr") ? WL_SPLIT_RR : !strcmp(s, "random") ? WL_SPLIT_RANDOM
         : !strcmp(s, "class") ? WL_SPLIT_CLASS : WL_SPLIT_NONE;
}

static void sla_ns(gsim_tenant *t, const scn_tenant *st)
{
    for (uint32_t k = 0; k < SS_MAX_TIERS && k < SS_MAX_TIERS; k++) {
        t->sla[k].ttft = ss_time_from_s(st->sla[k].ttft_ms / 1e3);
        t->sla[k].tbt_p99 = ss_time_from_s(st->sla[k].tbt_p99_ms / 1e3);
        t->sla[k].e2e = ss_time_from_s(st->sla[k].e2e_ms / 1e3);
    }
}

/* The workload part of tenant i. */
static int make_spec(runner__config *r, const scn_scenario *sc, uint32_t i, ss_errbuf *eb)
{
    const scn_tenant *st = &sc->tenants[i];
    wl_tenant_spec *w = &r->specs[i];
    *w = (wl_tenant_spec){
        .name = st->name, .trace = st->trace[0] ? st->trace : NULL,
        .trace_format = st->trace_format[0] ? st->trace_format : "auto",
        .trace_spread = st->trace_spread, .trace_sort = st->trace_sort,
        .trace_tenant = st->trace_tenant[0] ? st->trace_tenant : NULL,
        .split = split_of(st->split), .weight = st->weight > 0 ? st->weight : 1,
        .class_lo = st->class_lo, .class_hi = st->class_hi,
        .servegen = st->servegen[0] ? st->servegen : NULL,
        .servegen_start_s = st->servegen_start_s,
        .rate_scale = st->rate_scale > 0 ? st->rate_scale : 1, .limit = st->limit,
    };
    double dur = st->duration_s;
    if (sc->duration_s > 0 && (!(dur > 0) || sc->duration_s < dur))
        dur = sc->duration_s;
    w->duration_s = dur;
    int rc = SS_OK;
    if (st->synthetic[0] && (rc = parse_synthetic(&r->synth[i], st->synthetic, eb)) == SS_OK)
        w->synth = &r->synth[i];
    if (rc) { /* "FILE:LINE: tenant.NAME.synthetic: KEY: ..." */
        char key[SCN_NAME_MAX + 32], where[SCN_PATH_MAX + 128];
        snprintf(key, sizeof key, "tenant.%s.synthetic", st->name);
        scn_key_where(sc, key, where, sizeof where);
        return ss_err_prefix(eb, rc, "%s", where);
    }
    if (!rc)
        rc = wl_tier_mix_make(&w->tiers, st->tier_mix[0] ? st->tier_mix : "uniform",
                              st->tiers ? st->tiers : 1, st->tier_alpha > 0 ? st->tier_alpha : 1,
                              eb);
    return rc;
}

/* ---- values the simulator would reject, named where the scenario got them ---------------- */

/* gsim, the policies and the cost model name the replay option in their messages ("--tp:");
 * a value from a scenario file or --set is reported here first, with its FILE:LINE. */
static int unknown_name(const scn_scenario *sc, const char *key, const char *what,
                        const char *name, const char *known, ss_errbuf *eb)
{
    char w[SCN_PATH_MAX + 64];
    scn_key_where(sc, key, w, sizeof w);
    return ss_err(eb, SS_ENOTFOUND, "%s: unknown %s '%s' (known: %s)", w, what, name, known);
}

static int check_policy_names(const scn_scenario *sc, ss_errbuf *eb)
{
    if (!pol_batch_find(sc->batching))
        return unknown_name(sc, "policy.batching", "policy", sc->batching, pol_batch_names(), eb);
    if (sc->routing[0] && !pol_route_find(sc->routing))
        return unknown_name(sc, "policy.routing", "policy", sc->routing, pol_route_names(), eb);
    if (cost_find(sc->cost))
        return SS_OK;
    char known[128];
    cost_backend_list(known, sizeof known);
    return unknown_name(sc, "policy.cost", "cost model", sc->cost, known, eb);
}

/* Tensor parallelism splits the attention heads and the FFN evenly. */
static int check_tp_of(const scn_scenario *sc, const scn_tenant *st, const char *name,
                       uint32_t tp, const cat_model *m, ss_errbuf *eb)
{
    if (m->heads % tp == 0 && m->ffn % tp == 0)
        return SS_OK;
    char key[SCN_NAME_MAX + 32], w[SCN_PATH_MAX + 64];
    snprintf(key, sizeof key, "tenant.%s.%s", st->name, name);
    scn_key_where(sc, key, w, sizeof w);
    if (m->heads % tp)
        return ss_err(eb, SS_EINVAL, "%s: %u does not divide the %u attention heads of %s", w,
                      tp, m->heads, m->name);
    return ss_err(eb, SS_EINVAL, "%s: %u does not divide the FFN size %u of %s", w, tp, m->ffn,
                  m->name);
}

/* The tenant's TP degree, and its pools' when it is disaggregated. */
static int check_tp(const scn_scenario *sc, const scn_tenant *st, const cat_model *m,
                    ss_errbuf *eb)
{
    uint32_t tp = st->tp ? st->tp : 1;
    int rc = check_tp_of(sc, st, "tp", tp, m, eb);
    if (!rc && st->prefill_replicas && st->prefill_tp)
        rc = check_tp_of(sc, st, "prefill_tp", st->prefill_tp, m, eb);
    if (!rc && st->decode_replicas && st->decode_tp)
        rc = check_tp_of(sc, st, "decode_tp", st->decode_tp, m, eb);
    return rc;
}

/* [kvpool] into the simulator's terms; a CPU tier larger than a node's host memory (as the
 * GPU profile gives it) is refused, named where the scenario set it. */
static int make_kvpool(gsim_kvpool_cfg *k, const scn_scenario *sc, const cat_gpu *gpu,
                       ss_errbuf *eb)
{
    const scn_kvpool *p = &sc->kvpool;
    memset(k, 0, sizeof *k);
    if (!(p->cpu_gib > 0))
        return SS_OK;
    double gib = 1073741824.0;
    if (gpu->host_mem_bytes > 0 && p->cpu_gib * gib > gpu->host_mem_bytes) {
        char w[SCN_PATH_MAX + 64];
        scn_key_where(sc, "kvpool.cpu_gib", w, sizeof w);
        return ss_err(eb, SS_EINVAL, "%s: %g GiB is more than the node's %g GiB of host memory "
                      "(%s)", w, p->cpu_gib, gpu->host_mem_bytes / gib, gpu->path);
    }
    k->cpu_bytes = p->cpu_gib * gib;
    k->cpu_bw = p->cpu_gbps * 1e9;
    k->cpu_latency_s = p->cpu_latency_us * 1e-6;
    k->ssd_bytes = p->ssd_gib * gib;
    k->ssd_bw = p->ssd_gbps * 1e9;
    k->ssd_latency_s = p->ssd_latency_us * 1e-6;
    k->cluster = !strcmp(p->scope, "cluster");
    k->free_offloads = !strcmp(p->offload, "free");
    return SS_OK;
}

int runner_engine_resolve(catalog *cat, const char *v, const cat_engine **out, ss_errbuf *eb)
{
    if (!scn_profile_is_path(v))
        return catalog_engine_find(cat, v, out, eb);
    int rc = catalog_engine_load(cat, v, eb);
    if (rc)
        return rc == SS_EIO ? SS_EPARSE : rc; /* an unreadable profile is bad input */
    *out = catalog_engine_from(cat, v);
    return *out ? SS_OK : ss_err(eb, SS_EINVAL, "%s: engine profile not read", v);
}

int runner_engine_files(catalog *cat, const scn_scenario *sc, ss_errbuf *eb)
{
    for (uint32_t i = 0; i < sc->n_tenants; i++) {
        const scn_tenant *st = &sc->tenants[i];
        if (!scn_profile_is_path(st->engine) || catalog_engine_from(cat, st->engine))
            continue;
        const cat_engine *e;
        int rc = runner_engine_resolve(cat, st->engine, &e, eb);
        if (rc) {
            char key[SCN_NAME_MAX + 16], w[SCN_PATH_MAX + 64];
            snprintf(key, sizeof key, "tenant.%s.engine", st->name);
            scn_key_where(sc, key, w, sizeof w);
            return ss_err_prefix(eb, rc, "%s", w);
        }
    }
    return SS_OK;
}

/* eb's error prefixed with where the scenario set tenant st's key `key`. */
static int blame(const scn_scenario *sc, const scn_tenant *st, const char *key, int rc,
                 ss_errbuf *eb)
{
    char k[SCN_NAME_MAX + 32], w[SCN_PATH_MAX + 64];
    snprintf(k, sizeof k, "tenant.%s.%s", st->name, key);
    scn_key_where(sc, k, w, sizeof w);
    return ss_err_prefix(eb, rc, "%s", w);
}

/* share, mem_gib and share_gpus of tenant i into its gsim_share. */
static int make_share(runner__config *r, const scn_scenario *sc, const cat_gpu *gpu, uint32_t i,
                      ss_errbuf *eb)
{
    const scn_tenant *st = &sc->tenants[i];
    gsim_share *sh = &r->tenants[i].share;
    int rc = gsim_share_parse(st->share, gpu, sh, eb);
    if (rc)
        return blame(sc, st, "share", rc, eb);
    if (!sh->kind && (st->mem_gib > 0 || st->share_gpus[0]))
        return blame(sc, st, st->mem_gib > 0 ? "mem_gib" : "share_gpus",
                     ss_err(eb, SS_EINVAL, "set, but the tenant has whole GPUs (share)"), eb);
    sh->mem_bytes = st->mem_gib * 1073741824.0;
    const char *p = st->share_gpus;
    while (*p) {
        char *end;
        unsigned long v = strtoul(p, &end, 10);
        if (*p < '0' || *p > '9' || end == p || (*end && *end != ',') || v > 65535 ||
            sh->n_gpus == RUNNER_SHARE_GPUS_MAX)
            return blame(sc, st, "share_gpus",
                         ss_err(eb, SS_EINVAL, "'%s' is not G0,G1,...: the shared GPU (from 0) "
                                "of each replica, at most %d", st->share_gpus,
                                RUNNER_SHARE_GPUS_MAX), eb);
        r->share_gpus[i][sh->n_gpus++] = (uint32_t)v;
        p = *end ? end + 1 : end;
    }
    sh->gpus = sh->n_gpus ? r->share_gpus[i] : NULL;
    return SS_OK;
}

static int make_tenant(runner__config *r, const scn_scenario *sc, const catalog *cat, uint32_t i,
                       ss_errbuf *eb)
{
    const scn_tenant *st = &sc->tenants[i];
    gsim_tenant *t = &r->tenants[i];
    const cat_model *m;
    int rc = catalog_model_find(cat, st->model, &m, eb);
    if (rc) { /* named where the scenario got it: FILE:LINE, --set or --model */
        char key[SCN_NAME_MAX + 16], w[SCN_PATH_MAX + 64];
        snprintf(key, sizeof key, "tenant.%s.model", st->name);
        scn_key_where(sc, key, w, sizeof w);
        return ss_err_prefix(eb, rc, "%s", w);
    }
    const cat_engine *e = NULL;
    if (scn_profile_is_path(st->engine)) { /* read by runner_engine_files */
        if (!(e = catalog_engine_from(cat, st->engine)))
            rc = ss_err(eb, SS_EINVAL, "engine profile %s was not read", st->engine);
    } else {
        rc = catalog_engine_find(cat, st->engine, &e, eb);
    }
    if (rc) {
        char key[SCN_NAME_MAX + 16], w[SCN_PATH_MAX + 64];
        snprintf(key, sizeof key, "tenant.%s.engine", st->name);
        scn_key_where(sc, key, w, sizeof w);
        return ss_err_prefix(eb, rc, "%s", w);
    }
    if ((rc = check_tp(sc, st, m, eb)))
        return rc;
    *t = (gsim_tenant){.name = st->name, .model = m, .engine = e, .tp = st->tp ? st->tp : 1,
                       .pp = st->pp ? st->pp : 1, .replicas = st->replicas ? st->replicas : 1,
                       .max_replicas = st->max_replicas, .tiers = st->tiers ? st->tiers : 1,
                       .prefill_replicas = st->prefill_replicas,
                       .decode_replicas = st->decode_replicas, .prefill_tp = st->prefill_tp,
                       .decode_tp = st->decode_tp,
                       .kv_transfer = strcmp(st->kv_transfer, "end") ? GSIM_KV_LAYER
                                                                     : GSIM_KV_END};
    sla_ns(t, st);
    if ((rc = make_share(r, sc, r->cfg.gpu, i, eb)))
        return rc;
    rc = make_spec(r, sc, i, eb);
    if (rc && sc->n_tenants > 1 && strncmp(eb->msg, "tenant ", 7))
        ss_err_prefix(eb, rc, "tenant %s", st->name);
    return rc;
}

int runner__config_make(runner__config *r, const scn_scenario *sc, const catalog *cat,
                        ss_errbuf *eb)
{
    memset(r, 0, sizeof *r);
    gsim_config *c = &r->cfg;
    gsim_config_defaults(c);
    int rc = check_policy_names(sc, eb);
    if (!rc && (rc = catalog_gpu_find(cat, sc->gpu, &c->gpu, eb))) {
        char w[SCN_PATH_MAX + 64];
        scn_key_where(sc, "cluster.gpu", w, sizeof w);
        ss_err_prefix(eb, rc, "%s", w);
    }
    for (uint32_t i = 0; !rc && i < sc->n_tenants; i++)
        rc = make_tenant(r, sc, cat, i, eb);
    if (rc)
        return rc;
    c->tenants = r->tenants;
    c->n_tenants = sc->n_tenants;
    c->nodes = sc->nodes;
    c->gpus_per_node = sc->gpus_per_node;
    _Static_assert(GMG_LINK_NVLINK == 0 && GMG_LINK_PCIE == 1 && GMG_LINK_NET == 2 &&
                       GMG_LINK_KINDS == sizeof sc->link_eff / sizeof *sc->link_eff,
                   "[cluster]'s link efficiencies are in gmg_link_kind order");
    for (int k = 0; k < GMG_LINK_KINDS; k++)
        c->link_eff[k] = sc->link_eff[k];
    c->mps_interference = sc->mps_interference;
    c->timeslice = ss_time_from_s(sc->timeslice_ms / 1e3);
    c->ctx_switch = ss_time_from_s(sc->context_switch_us / 1e6);
    c->warmup = ss_time_from_s(sc->warmup_s);
    c->batching = sc->batching;
    c->routing = sc->routing[0] ? sc->routing : NULL;
    c->cluster = sc->cluster;
    c->ops = sc->ops;
    c->cost = sc->cost;
    c->params = sc->params;
    c->seed = sc->seed;
    c->gpu_mem_util = sc->gpu_mem_util;
    c->block_tokens = sc->block_size;
    c->max_model_len = sc->max_model_len;
    c->swap_bytes = sc->swap_space_gib * 1073741824.0;
    c->prefix_cache = !strcmp(sc->prefix_cache, "on")    ? GSIM_PREFIX_ON
                      : !strcmp(sc->prefix_cache, "off") ? GSIM_PREFIX_OFF
                                                         : GSIM_PREFIX_AUTO;
    c->no_prefix_ceiling = !strcmp(sc->prefix_ceiling, "off");
    if ((rc = make_kvpool(&c->kvpool, sc, c->gpu, eb)))
        return rc;
    uint32_t bad;
    if ((rc = gsim_share_check(c, &bad, eb)) && bad < sc->n_tenants) {
        /* "tenant NAME: KEY: what" becomes "FILE:LINE: tenant.NAME.KEY: what" */
        static const char *const keys[] = {"share_gpus", "mem_gib", "share"};
        const scn_tenant *st = &sc->tenants[bad];
        const char *key = "share", *msg = strchr(eb->msg, ':');
        msg = msg ? msg + 2 : eb->msg;
        for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
            size_t n = strlen(keys[k]);
            if (!strncmp(msg, keys[k], n) && !strncmp(msg + n, ": ", 2)) {
                key = keys[k];
                msg += n + 2;
                break;
            }
        }
        memmove(eb->msg, msg, strlen(msg) + 1);
        return blame(sc, st, key, rc, eb);
    }
    if (rc)
        return rc;
    /* the single-tenant shortcut fields mirror tenant 0, for reports */
    c->model = r->tenants[0].model;
    c->engine = r->tenants[0].engine;
    c->tp = r->tenants[0].tp;
    c->pp = r->tenants[0].pp;
    c->replicas = r->tenants[0].replicas;
    return SS_OK;
}
