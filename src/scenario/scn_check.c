/* scn_check: the rules that span keys or tenants, once every file and --set is applied (a
 * single value's syntax and range are checked when it is set, by scn_keys.c). Not for what
 * needs the catalogs, the policies or the trace files: runner/ and workload/ check those. */
#include "scenario/scn_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* "PATH:LINE: tenant.NAME" (just "tenant.NAME" when it did not come from a file). */
static void tenant_where(const scn_scenario *s, const scn_tenant *t, char *buf, size_t n)
{
    if (t->line && s->path[0])
        snprintf(buf, n, "%s:%u: tenant.%s", s->path, t->line, t->name);
    else
        snprintf(buf, n, "tenant.%s", t->name);
}

static int check_run(const scn_scenario *s, ss_errbuf *eb)
{
    const char *p = s->path[0] ? s->path : "scenario";
    if (!s->n_tenants)
        return ss_err(eb, SS_EINVAL, "%s: no tenant (add a [tenant.NAME] section)", p);
    if (s->duration_s > 0 && s->warmup_s >= s->duration_s)
        return ss_err(eb, SS_EINVAL, "%s: run.warmup_s: %g is not less than run.duration_s (%g)",
                      p, s->warmup_s, s->duration_s);
    uint64_t need = 0, have = (uint64_t)s->nodes * s->gpus_per_node;
    for (uint32_t i = 0; i < s->n_tenants; i++) {
        const scn_tenant *t = &s->tenants[i];
        if (t->prefill_replicas && t->decode_replicas)
            need += (uint64_t)t->prefill_replicas * (t->prefill_tp ? t->prefill_tp : t->tp) +
                    (uint64_t)t->decode_replicas * (t->decode_tp ? t->decode_tp : t->tp);
        else
            need += (uint64_t)t->tp * t->pp * t->replicas;
    }
    if (have && need > have)
        return ss_err(eb, SS_EINVAL, "%s: cluster: the tenants' replicas need %" PRIu64
                      " GPUs, nodes x gpus_per_node = %" PRIu64, p, need, have);
    if (s->kvpool.ssd_gib > 0 && !(s->kvpool.cpu_gib > 0)) {
        char w[SCN_PATH_MAX + 64];
        scn_key_where(s, "kvpool.ssd_gib", w, sizeof w);
        return ss_err(eb, SS_EINVAL, "%s: an SSD tier needs kvpool.cpu_gib > 0 (it holds what "
                      "the CPU tier evicts)", w);
    }
    return SS_OK;
}

static int check_source(const scn_scenario *s, const scn_tenant *t, const char *w,
                        ss_errbuf *eb)
{
    int n = !!t->trace[0] + !!t->synthetic[0] + !!t->servegen[0];
    if (n != 1)
        return ss_err(eb, SS_EINVAL, "%s: needs exactly one workload source of trace, "
                      "synthetic and servegen (it has %d)", w, n);
    if (t->servegen[0] && !s->servegen_dir[0])
        return ss_err(eb, SS_EINVAL, "%s: servegen needs run.servegen_dir", w);
    if (!t->trace[0] && (t->trace_tenant[0] || strcmp(t->split, "none")))
        return ss_err(eb, SS_EINVAL, "%s: trace_tenant and split apply only to a trace", w);
    if (!strcmp(t->split, "class") && t->class_hi == 0)
        return ss_err(eb, SS_EINVAL, "%s: split = class needs class = LO:HI", w);
    return SS_OK;
}

/* A tenant that only --set named, without a model: most likely a typo in a tenant's name
 * (--set tenant.chatt.rate_scale=2), so say which tenants there are. */
static int no_such_tenant(const scn_scenario *s, const scn_tenant *t, ss_errbuf *eb)
{
    char names[SS_ERRBUF_LEN] = "";
    size_t used = 0;
    for (uint32_t i = 0; i < s->n_tenants; i++) {
        const scn_tenant *u = &s->tenants[i];
        if (u == t || (!u->line && !u->model[0]) || used >= sizeof names)
            continue;
        int w = snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", u->name);
        used += w > 0 ? (size_t)w : 0;
    }
    return ss_err(eb, SS_EINVAL, "--set: tenant.%s: no such tenant (%s%s); a new tenant needs "
                  "at least tenant.%s.model and a workload", t->name,
                  used ? "tenants: " : "there are none", names, t->name);
}

/* A disaggregated tenant: both pools, and not replicas (or max_replicas) besides; each error
 * names the key where it was set. */
static int check_pools(const scn_scenario *s, const scn_tenant *t, ss_errbuf *eb)
{
    char key[SCN_NAME_MAX + 32], w[SCN_PATH_MAX + 96];
    if (!t->prefill_replicas && !t->decode_replicas)
        return SS_OK;
    if (!t->prefill_replicas || !t->decode_replicas) {
        const char *given = t->prefill_replicas ? "prefill_replicas" : "decode_replicas";
        snprintf(key, sizeof key, "tenant.%s.%s", t->name, given);
        scn_key_where(s, key, w, sizeof w);
        return ss_err(eb, SS_EINVAL, "%s: a disaggregated tenant needs both prefill_replicas "
                      "and decode_replicas", w);
    }
    static const char *const colocated[] = {"replicas", "max_replicas"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(key, sizeof key, "tenant.%s.%s", t->name, colocated[i]);
        if (!ss_params_get(s->priv->origins, key))
            continue;
        scn_key_where(s, key, w, sizeof w);
        return ss_err(eb, SS_EINVAL, "%s: must not be set with prefill_replicas and "
                      "decode_replicas (a disaggregated tenant's instances are its two pools)", w);
    }
    return SS_OK;
}

static int check_tenant(const scn_scenario *s, const scn_tenant *t, ss_errbuf *eb)
{
    char w[SCN_PATH_MAX + 80];
    tenant_where(s, t, w, sizeof w);
    if (!t->model[0] && !t->line)
        return no_such_tenant(s, t, eb);
    if (!t->model[0])
        return ss_err(eb, SS_EINVAL, "%s: model: missing", w);
    int rc = check_source(s, t, w, eb);
    if (rc)
        return rc;
    if ((rc = check_pools(s, t, eb)))
        return rc;
    if (t->max_replicas < t->replicas)
        return ss_err(eb, SS_EINVAL, "%s: max_replicas (%" PRIu32 ") is less than replicas (%"
                      PRIu32 ")", w, t->max_replicas, t->replicas);
    for (size_t i = 0; i < scn__n_keys; i++) {
        const scn__key *k = &scn__keys[i];
        uint32_t n = k->kind == SCN__SLA ? scn__sla_count(s, t, k->off) : 1;
        if (n != 1 && n != t->tiers)
            return ss_err(eb, SS_EINVAL, "%s: %s has %" PRIu32 " values but tiers = %" PRIu32
                          " (give 1 value or %" PRIu32 ")", w, k->name, n, t->tiers, t->tiers);
    }
    return SS_OK;
}

/* Tenants reading the same trace with a split must all split it the same way, read it the
 * same way (format, spread, trace_tenant, rate_scale: they share one reader), and (split =
 * class) own disjoint prompt-length classes. */
static int check_partners(const scn_scenario *s, const scn_tenant *t, ss_errbuf *eb)
{
    if (!t->trace[0] || !strcmp(t->split, "none"))
        return SS_OK;
    char w[SCN_PATH_MAX + 80];
    tenant_where(s, t, w, sizeof w);
    uint32_t partners = 0;
    for (uint32_t j = 0; j < s->n_tenants; j++) {
        const scn_tenant *u = &s->tenants[j];
        if (u == t || strcmp(u->trace, t->trace))
            continue;
        partners++;
        const char *what = strcmp(u->split, t->split) ? "split"
                           : strcmp(u->trace_format, t->trace_format) ? "trace_format"
                           : u->trace_spread != t->trace_spread ? "trace_spread"
                           : u->trace_sort != t->trace_sort ? "trace_sort"
                           : strcmp(u->trace_tenant, t->trace_tenant) ? "trace_tenant"
                           : u->rate_scale != t->rate_scale ? "rate_scale"
                           : NULL;
        if (what)
            return ss_err(eb, SS_EINVAL, "%s: splits trace %s with tenant.%s, which has a "
                          "different %s", w, t->trace, u->name, what);
        if (!strcmp(t->split, "class") && t->class_lo <= u->class_hi && u->class_lo <= t->class_hi)
            return ss_err(eb, SS_EINVAL, "%s: class %" PRIu32 ":%" PRIu32 " overlaps tenant.%s's %"
                          PRIu32 ":%" PRIu32, w, t->class_lo, t->class_hi, u->name, u->class_lo,
                          u->class_hi);
    }
    if (!partners)
        return ss_err(eb, SS_EINVAL, "%s: split = %s, but no other tenant reads trace %s", w,
                      t->split, t->trace);
    return SS_OK;
}

int scn_check(const scn_scenario *s, ss_errbuf *eb)
{
    int rc = check_run(s, eb);
    for (uint32_t i = 0; !rc && i < s->n_tenants; i++)
        rc = check_tenant(s, &s->tenants[i], eb);
    for (uint32_t i = 0; !rc && i < s->n_tenants; i++)
        rc = check_partners(s, &s->tenants[i], eb);
    return rc;
}
