/* Validation of tenant specs and the grouping of split partners: tenants that name the same
 * trace path (compared as written) with a split other than none share one reader, and must
 * agree on how it is read (format, spread, trace_tenant, split kind and rate_scale, so that
 * their shares keep the trace's order); class ranges must not overlap. Opens no file: the
 * sources are opened by wl_source_create (workload.c). */
#include "workload/wl_int.h"

#include <math.h>
#include <string.h>

#define WL_MAX_NAME 255

static const char *split_name(wl_split s)
{
    switch (s) {
    case WL_SPLIT_NONE: return "none";
    case WL_SPLIT_RR: return "rr";
    case WL_SPLIT_RANDOM: return "random";
    case WL_SPLIT_CLASS: return "class";
    }
    return "?";
}

static int check_name(const wl_tenant_spec *specs, uint32_t i, ss_errbuf *eb)
{
    const char *name = specs[i].name;
    if (!name || !name[0] || strlen(name) > WL_MAX_NAME)
        return ss_err(eb, SS_EINVAL, "tenant %u: needs a name of 1 to %d bytes", i,
                      WL_MAX_NAME);
    for (uint32_t j = 0; j < i; j++)
        if (!strcmp(specs[j].name, name))
            return ss_err(eb, SS_EINVAL, "tenant %s: the name is used twice", name);
    return SS_OK;
}

/* Exactly one source, and trace-only settings only with a trace. */
static int check_source(const wl_tenant_spec *t, const char *sg_dir, ss_errbuf *eb)
{
    int n = !!t->trace + !!t->synth + !!t->servegen;
    if (n != 1)
        return ss_err(eb, SS_EINVAL, "tenant %s: needs exactly one source (trace, synthetic "
                      "or servegen), got %d", t->name, n);
    if (!t->trace && (t->trace_tenant || t->split != WL_SPLIT_NONE || t->trace_spread ||
                      t->trace_sort))
        return ss_err(eb, SS_EINVAL, "tenant %s: %s is set but the source is not a trace",
                      t->name, t->trace_tenant ? "trace_tenant" : t->trace_spread ? "trace_spread"
                                             : t->trace_sort ? "trace_sort" : "split");
    if (t->trace && !t->trace[0])
        return ss_err(eb, SS_EINVAL, "tenant %s: trace: empty path", t->name);
    if (t->trace_tenant && !t->trace_tenant[0])
        return ss_err(eb, SS_EINVAL, "tenant %s: trace_tenant: empty name", t->name);
    if (t->servegen && !sg_dir)
        return ss_err(eb, SS_EINVAL, "tenant %s: servegen: no ServeGen directory given",
                      t->name);
    if (t->servegen && !(t->servegen_start_s >= 0 && t->servegen_start_s <= 1e9))
        return ss_err(eb, SS_EINVAL, "tenant %s: servegen_start_s: must be in [0, 1e9] s, "
                      "got %g", t->name, t->servegen_start_s);
    if (t->synth) {
        ss_errbuf sub = {""};
        if (trace_gen_spec_check(t->synth, &sub))
            return ss_err(eb, SS_EINVAL, "tenant %s: synthetic: %s", t->name, sub.msg);
    }
    return SS_OK;
}

static int check_split(const wl_tenant_spec *t, ss_errbuf *eb)
{
    if ((unsigned)t->split > WL_SPLIT_CLASS)
        return ss_err(eb, SS_EINVAL, "tenant %s: split: unknown kind %d", t->name,
                      (int)t->split);
    if (t->split == WL_SPLIT_RANDOM && !(t->weight > 0 && t->weight <= 1e9))
        return ss_err(eb, SS_EINVAL, "tenant %s: weight: must be in (0, 1e9], got %g",
                      t->name, t->weight);
    if (t->split == WL_SPLIT_CLASS && t->class_lo > t->class_hi)
        return ss_err(eb, SS_EINVAL, "tenant %s: class: %u:%u is empty (need LO <= HI)",
                      t->name, t->class_lo, t->class_hi);
    return SS_OK;
}

static int check_mix(const wl_tenant_spec *t, ss_errbuf *eb)
{
    const wl_tier_mix *m = &t->tiers;
    if (m->k < 1 || m->k > SS_MAX_TIERS)
        return ss_err(eb, SS_EINVAL, "tenant %s: tiers: must be in 1..%d, got %u", t->name,
                      SS_MAX_TIERS, m->k);
    if ((unsigned)m->kind > WL_MIX_WEIGHTS)
        return ss_err(eb, SS_EINVAL, "tenant %s: tier_mix: unknown kind %d", t->name,
                      (int)m->kind);
    if (m->kind == WL_MIX_TRACE)
        return SS_OK;
    double sum = 0;
    for (uint32_t i = 0; i < m->k; i++) {
        if (!(m->p[i] >= 0 && m->p[i] <= 1))
            return ss_err(eb, SS_EINVAL, "tenant %s: tier_mix: p[%u] = %g is not in [0, 1]",
                          t->name, i, m->p[i]);
        sum += m->p[i];
    }
    if (!(fabs(sum - 1) <= 1e-6))
        return ss_err(eb, SS_EINVAL, "tenant %s: tier_mix: probabilities sum to %g, not 1",
                      t->name, sum);
    return SS_OK;
}

static int check_shaping(const wl_tenant_spec *t, ss_errbuf *eb)
{
    if (!(t->rate_scale > 0 && t->rate_scale <= 1e6))
        return ss_err(eb, SS_EINVAL, "tenant %s: rate_scale: must be in (0, 1e6], got %g",
                      t->name, t->rate_scale);
    if (!(t->duration_s >= 0 && t->duration_s <= 9e9))
        return ss_err(eb, SS_EINVAL, "tenant %s: duration_s: must be in [0, 9e9] s, got %g",
                      t->name, t->duration_s);
    return SS_OK;
}

static int same_str(const char *a, const char *b, const char *dflt)
{
    return !strcmp(a ? a : dflt, b ? b : dflt);
}

/* Tenant t joins the group of tenant f (its first member): they must read the trace alike. */
static int check_partner(const wl_tenant_spec *f, const wl_tenant_spec *t, ss_errbuf *eb)
{
    const char *what = NULL;
    if (t->split != f->split)
        what = "split";
    else if (!same_str(t->trace_format, f->trace_format, "auto"))
        what = "trace_format";
    else if (!t->trace_spread != !f->trace_spread)
        what = "trace_spread";
    else if (!t->trace_sort != !f->trace_sort)
        what = "trace_sort";
    else if (!same_str(t->trace_tenant, f->trace_tenant, ""))
        what = "trace_tenant";
    else if (t->rate_scale != f->rate_scale)
        what = "rate_scale";
    if (what)
        return ss_err(eb, SS_EINVAL, "tenant %s: %s differs from tenant %s's on the shared "
                      "trace %s (split %s: partners read it together)", t->name, what, f->name,
                      t->trace, split_name(f->split));
    return SS_OK;
}

/* A new class member's range must not overlap an earlier member's. */
static int check_classes(const wl_tenant_spec *specs, const wl__plan *p, uint32_t g,
                         uint32_t i, ss_errbuf *eb)
{
    const wl_tenant_spec *t = &specs[i];
    for (uint32_t j = 0; j < i; j++) {
        const wl_tenant_spec *o = &specs[j];
        if (p->group_of[j] == g && t->class_lo <= o->class_hi && o->class_lo <= t->class_hi)
            return ss_err(eb, SS_EINVAL, "tenant %s: class %u:%u overlaps tenant %s's %u:%u "
                          "on the shared trace %s", t->name, t->class_lo, t->class_hi, o->name,
                          o->class_lo, o->class_hi, t->trace);
    }
    return SS_OK;
}

/* Put tenant i in its group: an earlier split partner's, or a new one. */
static int assign_group(wl__plan *p, const wl_tenant_spec *specs, uint32_t i, ss_errbuf *eb)
{
    const wl_tenant_spec *t = &specs[i];
    if (t->trace && t->split != WL_SPLIT_NONE) {
        for (uint32_t g = 0; g < p->n_groups; g++) {
            const wl_tenant_spec *f = &specs[p->first[g]];
            if (!f->trace || f->split == WL_SPLIT_NONE || strcmp(f->trace, t->trace))
                continue;
            int rc = check_partner(f, t, eb);
            if (rc == SS_OK && t->split == WL_SPLIT_CLASS)
                rc = check_classes(specs, p, g, i, eb);
            p->group_of[i] = g;
            return rc;
        }
    }
    p->first[p->n_groups] = i;
    p->group_of[i] = p->n_groups++;
    return SS_OK;
}

int wl__plan_make(wl__plan *p, const wl_tenant_spec *specs, uint32_t n,
                  const char *servegen_dir, ss_errbuf *eb)
{
    if (!specs || n < 1 || n > SS_MAX_TENANTS)
        return ss_err(eb, SS_EINVAL, "workload: need 1 to %d tenants, got %u", SS_MAX_TENANTS,
                      specs ? n : 0);
    memset(p, 0, sizeof *p);
    for (uint32_t i = 0; i < n; i++) {
        const wl_tenant_spec *t = &specs[i];
        int rc = check_name(specs, i, eb);
        if (rc || (rc = check_source(t, servegen_dir, eb)) || (rc = check_split(t, eb)) ||
            (rc = check_mix(t, eb)) || (rc = check_shaping(t, eb)) ||
            (rc = assign_group(p, specs, i, eb)))
            return rc;
    }
    return SS_OK;
}
