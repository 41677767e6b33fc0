/* Policy bundles: built-in ones and LABEL:assignments. */
#include "runner/bundle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct builtin {
    const char *name;
    const char *const assign[8]; /* NULL-terminated */
} builtin;

/* Llumnix bundles name their dispatch, so that a scenario's own routing does not stay. */
static const builtin builtins[] = {
    {"container", {"policy.cluster=container", "policy.ops=home", NULL}},
    {"realloc", {"policy.cluster=container", "policy.realloc_period_s=60", "policy.ops=home",
                 NULL}},
    {"infaas", {"policy.cluster=container", "policy.routing=infaas", "policy.ops=home", NULL}},
    {"llumnix", {"policy.cluster=llumnix", "policy.routing=llumnix", "policy.ops=home", NULL}},
    {"llumnix-tiers", {"policy.cluster=llumnix-tiers", "policy.routing=llumnix",
                       "policy.ops=home", NULL}},
    {"slice", {"policy.cluster=container", "policy.ops=slice", NULL}},
    /* the container policy on the allocation runner_static_best finds (runner/static_best.h) */
    {"static-best", {"policy.cluster=container", "policy.ops=home", NULL}},
    /* SliceScheduler on the allocation the same search finds for it (each candidate judged
     * by a replay with SliceScheduler) */
    {"slice-sized", {"policy.cluster=container", "policy.ops=slice", NULL}},
    /* Llumnix on the allocation the same search finds for it (each candidate judged by a
     * replay with Llumnix's dispatch and migration): its initial layout chosen per load */
    {"llumnix-sized", {"policy.cluster=llumnix", "policy.routing=llumnix", "policy.ops=home",
                       NULL}},
    /* SliceScheduler on the scenario's allocation with its own knobs searched at each load
     * (runner/knob_search.h): the tick period, what-ifs per tick, the what-if horizon and the
     * host-phase overrun, each from its default (first) over the values after it (12 candidate
     * replays for one pass; the ranges reach past where the regimes' searches chose their
     * ends: a 2 ms tick, an 8 ms overrun) */
    /* the container policy on the best layout of GPU shares the same search finds: each
     * tenant's containers MIG instances (mig-best) or MPS clients (mps-best) of the smallest
     * share that holds its model (static_best_run.c), on the scenario's GPUs */
    {"mig-best", {"policy.cluster=container", "policy.ops=home", NULL}},
    {"mps-best", {"policy.cluster=container", "policy.ops=home", NULL}},
    /* MuxServe: the models multiplexed on GPUs, each GPU's containers sharing one KV pool,
     * decode steps first (gsim_share.c), on the layout the same search finds */
    {"muxserve", {"policy.cluster=container", "policy.ops=home", NULL}},
    /* SliceScheduler on the MIG layout the same search finds for it */
    {"slice-mig", {"policy.cluster=container", "policy.ops=slice", NULL}},
    {"slice-tuned", {"policy.cluster=container", "policy.ops=slice",
                     "policy.slice_period_ms=20|5|10|50|2", "policy.slice_max_whatifs=4|16|8",
                     "policy.slice_horizon_ms=500|1000|250",
                     "policy.slice_overrun_ms=1|4|0.25|8", NULL}},
};

const char *runner_bundle_names(void)
{
    return "container, realloc, infaas, llumnix, llumnix-tiers, slice, static-best, "
           "slice-sized, llumnix-sized, mig-best, mps-best, muxserve, slice-mig, slice-tuned";
}

/* A [policy] parameter as a number (0 when absent or not one). */
static double param(scn_scenario *sc, const char *key)
{
    const char *v = sc->params ? ss_params_get(sc->params, key) : NULL;
    return v ? strtod(v, NULL) : 0;
}

int runner_bundle_headroom_note(scn_scenario *sc, const char *label, char *buf, size_t n)
{
    const char *what = NULL;
    if (!strcmp(sc->cluster, "container") && param(sc, "realloc_period_s") > 0)
        what = "re-allocation moves a container only to a tenant below its max_replicas";
    else if (!strncmp(sc->cluster, "llumnix", 7) && param(sc, "scale_period_s") > 0)
        what = "auto-scaling starts only standby containers (max_replicas - replicas)";
    if (!what || !sc->n_tenants)
        return 0;
    for (uint32_t i = 0; i < sc->n_tenants; i++)
        if (sc->tenants[i].pp == 1 && sc->tenants[i].max_replicas > sc->tenants[i].replicas)
            return 0;
    const scn_tenant *t = &sc->tenants[0];
    snprintf(buf, n, "%s: %s, and every tenant has max_replicas = replicas, so it does "
             "nothing here; give one headroom, e.g. --set tenant.%s.max_replicas=%u", label,
             what, t->name, t->replicas + 2);
    return 1;
}

static const builtin *find(const char *name)
{
    for (size_t i = 0; i < sizeof builtins / sizeof *builtins; i++)
        if (!strcmp(builtins[i].name, name))
            return &builtins[i];
    return NULL;
}

int runner_bundle_searches_alloc(const char *spec)
{
    return !strcmp(spec, "static-best") || !strcmp(spec, "slice-sized") ||
           !strcmp(spec, "llumnix-sized") || runner_bundle_share(spec);
}

const char *runner_bundle_share(const char *spec)
{
    if (!strcmp(spec, "mig-best") || !strcmp(spec, "slice-mig"))
        return "mig";
    if (!strcmp(spec, "muxserve"))
        return "mux";
    return !strcmp(spec, "mps-best") ? "mps" : NULL;
}

/* Call fn on each of spec's assignments (a built-in's, or LABEL:'s split at '+'), in order,
 * until one returns non-zero (that value). -1 when spec is no bundle. */
static int each_assignment(const char *spec, int (*fn)(void *, const char *), void *ud)
{
    const char *colon = strchr(spec, ':');
    if (!colon) {
        const builtin *b = find(spec);
        if (!b)
            return -1;
        for (int i = 0; b->assign[i]; i++) {
            int rc = fn(ud, b->assign[i]);
            if (rc)
                return rc;
        }
        return 0;
    }
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", colon + 1);
    char *save = NULL;
    for (char *a = strtok_r(buf, "+", &save); a; a = strtok_r(NULL, "+", &save)) {
        int rc = fn(ud, a);
        if (rc)
            return rc;
    }
    return 0;
}

static int has_alternatives(void *ud, const char *a)
{
    (void)ud;
    const char *eq = strchr(a, '=');
    return eq && strchr(eq, '|') ? 1 : 0;
}

int runner_bundle_searches(const char *spec)
{
    return runner_bundle_searches_alloc(spec) ||
           each_assignment(spec, has_alternatives, NULL) == 1;
}

typedef struct knob_acc {
    runner_knobs *k;
    ss_errbuf *eb;
    int rc;
} knob_acc;

/* One assignment into the knobs: its values split at '|' (every one non-empty), or none
 * when it has one value. */
static int add_knob(void *ud, const char *a)
{
    knob_acc *acc = ud;
    const char *eq = strchr(a, '=');
    if (!eq || !strchr(eq, '|'))
        return 0;
    runner_knobs *k = acc->k;
    size_t kl = (size_t)(eq - a);
    if (k->n == RUNNER_KNOBS_MAX || kl >= sizeof k->knob[0].key) {
        acc->rc = ss_err(acc->eb, SS_EPARSE, "'%.200s': at most %d searched keys of at most "
                         "%zu characters", a, RUNNER_KNOBS_MAX, sizeof k->knob[0].key - 1);
        return 1;
    }
    runner_knob *kb = &k->knob[k->n];
    *kb = (runner_knob){0};
    memcpy(kb->key, a, kl);
    kb->key[kl] = '\0';
    const char *v = eq + 1;
    for (;;) {
        const char *bar = strchr(v, '|');
        size_t vl = bar ? (size_t)(bar - v) : strlen(v);
        if (!vl || vl >= sizeof kb->value[0] || kb->n == RUNNER_KNOB_VALUES_MAX) {
            acc->rc = ss_err(acc->eb, SS_EPARSE, "'%.200s': expected KEY=V1|V2|... with 2 to "
                             "%d non-empty values of at most %zu characters", a,
                             RUNNER_KNOB_VALUES_MAX, sizeof kb->value[0] - 1);
            return 1;
        }
        memcpy(kb->value[kb->n], v, vl);
        kb->value[kb->n++][vl] = '\0';
        if (!bar)
            break;
        v = bar + 1;
    }
    for (int i = 0; i < k->n; i++)
        if (!strcmp(k->knob[i].key, kb->key)) {
            acc->rc = ss_err(acc->eb, SS_EPARSE, "'%s': searched twice", kb->key);
            return 1;
        }
    k->n++;
    return 0;
}

int runner_bundle_knobs(const char *spec, runner_knobs *out, ss_errbuf *eb)
{
    *out = (runner_knobs){0};
    knob_acc acc = {.k = out, .eb = eb};
    int r = each_assignment(spec, add_knob, &acc);
    if (r < 0)
        return ss_err(eb, SS_EPARSE, "policy '%s': unknown bundle", spec);
    return acc.rc;
}

int runner_bundle_label(const char *spec, char *label, ss_errbuf *eb)
{
    const char *colon = strchr(spec, ':');
    size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
    if (!colon && !find(spec))
        return ss_err(eb, SS_EPARSE, "policy '%s': not a built-in bundle (%s), nor "
                      "LABEL:SECTION.KEY=VALUE[+...]", spec, runner_bundle_names());
    if (n == 0 || n >= RUNNER_LABEL_MAX)
        return ss_err(eb, SS_EPARSE, "policy '%s': the label must have 1 to %d characters", spec,
                      RUNNER_LABEL_MAX - 1);
    for (size_t i = 0; i < n; i++)
        if (!((spec[i] >= 'a' && spec[i] <= 'z') || (spec[i] >= '0' && spec[i] <= '9') ||
              spec[i] == '-' || spec[i] == '_' || spec[i] == '.' || spec[i] == '+'))
            return ss_err(eb, SS_EPARSE, "policy '%s': the label may use a-z, 0-9 and -_.+",
                          spec);
    if (colon && (!colon[1] || !strchr(colon + 1, '=')))
        return ss_err(eb, SS_EPARSE, "policy '%s': expected LABEL:SECTION.KEY=VALUE[+...]", spec);
    memcpy(label, spec, n);
    label[n] = 0;
    return SS_OK;
}

/* Apply assignment a to sc, a searched one (KEY=V1|V2|...) at its first value. */
static int apply_one(scn_scenario *sc, const char *a, const char *where, ss_errbuf *eb)
{
    const char *eq = strchr(a, '=');
    const char *bar = eq ? strchr(eq, '|') : NULL;
    if (!bar)
        return scn_set_from(sc, a, where, eb);
    char first[512];
    if ((size_t)(bar - a) >= sizeof first || bar == eq + 1)
        return ss_err(eb, SS_EPARSE, "%s: '%.200s': expected KEY=V1|V2|... with non-empty "
                      "values", where, a);
    memcpy(first, a, (size_t)(bar - a));
    first[bar - a] = '\0';
    return scn_set_from(sc, first, where, eb);
}

int runner_bundle_apply(scn_scenario *sc, const char *spec, const char *where, ss_errbuf *eb)
{
    const char *colon = strchr(spec, ':');
    if (!colon) {
        const builtin *b = find(spec);
        if (!b)
            return ss_err(eb, SS_EPARSE, "policy '%s': unknown bundle", spec);
        for (int i = 0; b->assign[i]; i++) {
            int rc = apply_one(sc, b->assign[i], where, eb);
            if (rc)
                return rc;
        }
        return SS_OK;
    }
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", colon + 1);
    char *save = NULL;
    for (char *a = strtok_r(buf, "+", &save); a; a = strtok_r(NULL, "+", &save)) {
        int rc = apply_one(sc, a, where, eb);
        if (rc)
            return ss_err_prefix(eb, rc, "policy '%.*s'", (int)(colon - spec), spec);
    }
    return SS_OK;
}

int runner_split_list(char *s, char **items, int max)
{
    int n = 0;
    char *save = NULL;
    if (!*s || s[strlen(s) - 1] == ',' || *s == ',' || strstr(s, ",,"))
        return -1;
    for (char *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ')
            t++;
        if (!*t || n == max)
            return -1;
        items[n++] = t;
    }
    return n;
}

int runner_bundles_parse(const char *arg, char *text, char **policy,
                         char (*label)[RUNNER_LABEL_MAX], int max, ss_errbuf *eb)
{
    int n = runner_split_list(text, policy, max);
    if (n < 1)
        return ss_err(eb, SS_EPARSE, "expected 1 to %d comma-separated bundles, got '%s'", max,
                      arg);
    for (int i = 0; i < n; i++) {
        if (runner_bundle_label(policy[i], label[i], eb))
            return SS_EPARSE;
        for (int j = 0; j < i; j++)
            if (!strcmp(label[i], label[j]))
                return ss_err(eb, SS_EPARSE, "the same label twice: '%s'", label[i]);
    }
    return n;
}

int runner_bundle_scenario(const char *config, const char *const *sets, size_t n_sets,
                           const char *db, const char *spec, scn_scenario **out, ss_errbuf *eb)
{
    scn_scenario *sc = NULL;
    int rc = scn_create(&sc) ? ss_err(eb, SS_ENOMEM, "out of memory") : SS_OK;
    if (!rc && (rc = scn_load(sc, config, eb)) == SS_EIO)
        rc = SS_EPARSE;
    for (size_t i = 0; !rc && i < n_sets; i++)
        rc = scn_set(sc, sets[i], eb);
    if (!rc && db) {
        char a[SCN_PATH_MAX + 8];
        snprintf(a, sizeof a, "run.db=%s", db);
        rc = scn_set_option(sc, a, "--db", eb);
    }
    if (!rc)
        rc = runner_bundle_apply(sc, spec, "--policies", eb);
    if (rc) {
        scn_destroy(&sc);
        return rc;
    }
    *out = sc;
    return SS_OK;
}
