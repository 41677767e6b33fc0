/* Scenario files and --set assignments: creation with the documented defaults, the INI reader
 * (through ss_ini, so every message has FILE:LINE), "SECTION.KEY=VALUE" assignments, and
 * lookups. Both paths apply values through the same key table (scn_keys.c), so a file and the
 * command line accept exactly the same keys. Whole-scenario checks are in scn_check.c, the
 * writer in scn_write.c. */
#include "scenario/scn_int.h"

#include "core/ss_alloc.h"
#include "core/ss_ini.h"
#include "core/ss_parse.h"
#include "policy/policy.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SECTIONS_KNOWN "cluster, policy, run, engine, kvpool, tenant.NAME"
#define N_KEYS_MAX 80
#define VALUE_MAX 2048

/* {======================================================================
 * Creation and lookups
 * ======================================================================= */

/* Copy src into the char[size] dst, zero-padded, so that equal scenarios are equal bytewise. */
static void copy_text(char *dst, size_t size, const char *src)
{
    memset(dst, 0, size);
    memcpy(dst, src, strnlen(src, size - 1));
}

static void set_defaults(scn_scenario *s)
{
    copy_text(s->gpu, sizeof s->gpu, "a100-80g");
    copy_text(s->routing, sizeof s->routing, "rr");
    copy_text(s->batching, sizeof s->batching, "vllm");
    copy_text(s->cluster, sizeof s->cluster, "container");
    copy_text(s->cost, sizeof s->cost, "roofline");
    copy_text(s->ops, sizeof s->ops, "home");
    copy_text(s->prefix_cache, sizeof s->prefix_cache, "auto");
    copy_text(s->prefix_ceiling, sizeof s->prefix_ceiling, "on");
    copy_text(s->db, sizeof s->db, "results/slicesim.db");
    s->seed = 1;
    s->gpu_mem_util = 0.9;
    s->block_size = 16;
    s->max_model_len = 16384;
    s->swap_space_gib = 4;
    s->timeslice_ms = 2; /* gsim.h's GSIM_TIMESLICE_NS and GSIM_CTX_SWITCH_NS */
    s->context_switch_us = 40;
    s->kvpool.cpu_latency_us = 10;
    s->kvpool.ssd_gbps = 7;
    s->kvpool.ssd_latency_us = 100;
    copy_text(s->kvpool.scope, sizeof s->kvpool.scope, "node");
    copy_text(s->kvpool.offload, sizeof s->kvpool.offload, "link");
}

int scn_create(scn_scenario **s_out)
{
    if (SS_NEVER(!scn__keys_ok() || scn__n_keys > N_KEYS_MAX))
        return SS_EINVAL;
    scn_scenario *s = ss_calloc(1, sizeof *s);
    if (!s)
        return SS_ENOMEM;
    s->priv = ss_calloc(1, sizeof *s->priv);
    if (!s->priv || ss_params_create(&s->params) || ss_params_create(&s->priv->param_lines) ||
        ss_params_create(&s->priv->origins)) {
        scn_destroy(&s);
        return SS_ENOMEM;
    }
    set_defaults(s);
    *s_out = s;
    return SS_OK;
}

void scn_destroy(scn_scenario **sp)
{
    scn_scenario *s = *sp;
    if (!s)
        return;
    ss_params_destroy(&s->params);
    if (s->priv) {
        ss_params_destroy(&s->priv->param_lines);
        ss_params_destroy(&s->priv->origins);
    }
    ss_free(s->priv);
    ss_free(s);
    *sp = NULL;
}

scn_tenant *scn_tenant_find(scn_scenario *s, const char *name)
{
    for (uint32_t i = 0; i < s->n_tenants; i++)
        if (!strcmp(s->tenants[i].name, name))
            return &s->tenants[i];
    return NULL;
}

unsigned scn_param_line(const scn_scenario *s, const char *key)
{
    const char *v = ss_params_get(s->priv->param_lines, key);
    int64_t line;
    return v && !ss_parse_i64z(v, &line) && line > 0 && line <= UINT_MAX ? (unsigned)line : 0;
}

/* An origin stored for a value that an option setting just that key gave starts with this
 * mark (scn_set_option): messages then name the option alone. */
#define ORIGIN_IMPLIED '!'

/* What messages about section.key start with: "WHERE: SECTION.KEY", or just WHERE when it is
 * an option that sets only this key (implied: "--replicas"). */
static void where_key(const char *where, int implied, const char *section, const char *key,
                      char *buf, size_t size)
{
    if (implied)
        snprintf(buf, size, "%s", where);
    else
        snprintf(buf, size, "%s: %s%s%s", where, section, *section ? "." : "", key);
}

void scn_key_where(const scn_scenario *s, const char *key, char *buf, size_t size)
{
    const char *v = ss_params_get(s->priv->origins, key);
    if (!v)
        snprintf(buf, size, "%s", key);
    else
        where_key(v + (v[0] == ORIGIN_IMPLIED), v[0] == ORIGIN_IMPLIED, "", key, buf, size);
}

/* {======================================================================
 * Applying one value (shared by files and --set)
 * ======================================================================= */

static const scn_tenant tenant_default = {
    .engine = "vllm-0.15", /* CAT_ENGINE_DEFAULT; scenario/ does not depend on catalog/ */
    .tp = 1, .pp = 1, .replicas = 1, .max_replicas = 1, .trace_format = "auto", .split = "none",
    .weight = 1, .rate_scale = 1, .tiers = 1, .tier_mix = "uniform", .tier_alpha = 1,
    .kv_transfer = "layer",
};

/* Section text to section (and tenant name); 0 or SS_EPARSE naming the section. */
static int parse_section(const char *section, const char *where, scn__sect *sect,
                         const char **tname, ss_errbuf *eb)
{
    int i = scn__sect_find(section, tname);
    char hint[SCN_NAME_MAX + 32];
    if (i < 0)
        return ss_err(eb, SS_EPARSE, "%s: section [%s]: unknown section%s (known: %s)", where,
                      section, scn__suggest(-1, section, hint, sizeof hint), SECTIONS_KNOWN);
    if (i == SCN__TENANT && !scn__name_ok(*tname, SCN_NAME_MAX))
        return ss_err(eb, SS_EPARSE,
                      "%s: section [%s]: expected [tenant.NAME], NAME of 1 to %d characters "
                      "from [a-z0-9._-]", where, section, SCN_NAME_MAX - 1);
    *sect = (scn__sect)i;
    return SS_OK;
}

/* Tenant `name`, added with its defaults and header line `line` when absent (*created = 1).
 * 0 or SS_EPARSE when there are already SS_MAX_TENANTS. */
static int tenant_get(scn_scenario *s, const char *name, unsigned line, const char *where,
                      scn_tenant **t_out, int *created, ss_errbuf *eb)
{
    *created = 0;
    *t_out = scn_tenant_find(s, name);
    if (*t_out)
        return SS_OK;
    if (s->n_tenants == SS_MAX_TENANTS)
        return ss_err(eb, SS_EPARSE, "%s: section [tenant.%s]: too many tenants (at most %d)",
                      where, name, SS_MAX_TENANTS);
    scn_tenant *t = &s->tenants[s->n_tenants++];
    memcpy(t, &tenant_default, sizeof *t);
    copy_text(t->name, sizeof t->name, name);
    t->line = line;
    s->priv->max_replicas_set[t - s->tenants] = 0;
    memset(s->priv->sla_n[t - s->tenants], 0, sizeof s->priv->sla_n[0]);
    *t_out = t;
    *created = 1;
    return SS_OK;
}

/* Trim blanks, then drop one pair of enclosing double quotes and the blanks inside them,
 * into buf. NULL when the value does not fit. */
static const char *clean_value(const char *v, char *buf, size_t size)
{
    size_t len = strlen(v);
    const char *p = ss_trim(v, &len);
    if (len >= 2 && p[0] == '"' && p[len - 1] == '"') {
        p++;
        len -= 2;
    }
    if (len >= size)
        return NULL;
    memcpy(buf, p, len);
    buf[len] = '\0';
    p = ss_trim(buf, &len);
    memmove(buf, p, len);
    buf[len] = '\0';
    return buf;
}

/* A [policy] key the table does not know: a policy parameter. line: where a file set it (0:
 * --set, which forgets an earlier file line). */
static int set_param(scn_scenario *s, const char *key, const char *value, unsigned line,
                     const char *where, ss_errbuf *eb)
{
    if (!scn__name_ok(key, SCN_NAME_MAX))
        return ss_err(eb, SS_EPARSE, "%s: policy.%s: expected a parameter name of 1 to %d "
                      "characters from [a-z0-9._-]", where, key, SCN_NAME_MAX - 1);
    if (!*value || strlen(value) >= SCN_TEXT_MAX || !scn__text_ok(value))
        return ss_err(eb, SS_EPARSE, "%s: policy.%s: expected a non-empty value of at most %d "
                      "characters without '\"' or ';' after a blank, got '%.60s'", where, key,
                      SCN_TEXT_MAX - 1, value);
    if (!scn__line_fits(key, value, 0))
        return ss_err(eb, SS_EPARSE, "%s: policy.%s: too long: '%s = ...' must fit on one line "
                      "of %d characters (the scenario is stored with each run)", where, key, key,
                      SS_INI_LINE_MAX);
    char text[16];
    snprintf(text, sizeof text, "%u", line);
    ss_params *lines = s->priv->param_lines;
    if (ss_params_set(s->params, key, value) ||
        ((line || ss_params_get(lines, key)) && ss_params_set(lines, key, text)))
        return ss_err(eb, SS_ENOMEM, "%s: policy.%s: out of memory", where, key);
    return SS_OK;
}

/* What a stored value implies: the length of an SLA list (value is valid), and defaults that
 * depend on another key: max_replicas follows replicas, and routing follows cluster (rr, or a
 * Llumnix cluster's own dispatch), until they are given themselves. */
static void after_key(scn_scenario *s, scn_tenant *t, const scn__key *k, const char *value)
{
    scn__priv *p = s->priv;
    size_t i = t ? (size_t)(t - s->tenants) : 0;
    if (k->kind == SCN__SLA) {
        uint8_t n = 1;
        for (const char *c = strchr(value, ','); c; c = strchr(c + 1, ','))
            n++;
        p->sla_n[i][k->off / sizeof(double)] = n;
    } else if (t && k->off == offsetof(scn_tenant, max_replicas)) {
        p->max_replicas_set[i] = 1;
    } else if (t && k->off == offsetof(scn_tenant, replicas) && !p->max_replicas_set[i]) {
        t->max_replicas = t->replicas;
    } else if (!t && k->off == offsetof(scn_scenario, routing)) {
        p->routing_set = 1;
    } else if (!t && k->off == offsetof(scn_scenario, cluster) && !p->routing_set) {
        copy_text(s->routing, sizeof s->routing,
                  strncmp(s->cluster, "llumnix", 7) ? "rr" : "llumnix");
    }
}

/* Where a value comes from. */
typedef struct scn_origin {
    const char *where; /* "FILE:LINE" or "--set", for messages */
    int implied;       /* where is an option that sets only this key (scn_set_option) */
    unsigned line;     /* file line, 0 for --set */
    const char *dir;   /* folder for relative paths, NULL: as given */
} scn_origin;

/* Apply key = raw value to section `section` (sect; t for a tenant). 0, SS_EPARSE or
 * SS_ENOMEM with "WHERE: SECTION.KEY: what" in eb; the field is unchanged on error. */
static int apply_key(scn_scenario *s, scn__sect sect, scn_tenant *t, const char *section,
                     const char *key, const char *raw, const scn_origin *o, ss_errbuf *eb)
{
    const scn__key *k = scn__key_find(sect, key);
    char wk[SCN_PATH_MAX + 2 * SCN_NAME_MAX + 32];
    where_key(o->where, o->implied, section, key, wk, sizeof wk);
    char hint[SCN_NAME_MAX + 32];
    if (!k && sect != SCN__POLICY)
        return ss_err(eb, SS_EPARSE, "%s: unknown key%s", wk,
                      scn__suggest((int)sect, key, hint, sizeof hint));
    char buf[VALUE_MAX], why[SS_ERRBUF_LEN];
    const char *value = clean_value(raw, buf, sizeof buf);
    if (!value)
        return ss_err(eb, SS_EPARSE, "%s: value longer than %d characters", wk, VALUE_MAX - 1);
    if (!k)
        return set_param(s, key, value, o->line, o->where, eb);
    if (scn__key_store(sect == SCN__TENANT ? (void *)t : (void *)s, k, value, o->dir, why,
                       sizeof why))
        return ss_err(eb, SS_EPARSE, "%s: %s", wk, why);
    after_key(s, t, k, value);
    char full[2 * SCN_NAME_MAX + 32], origin[SCN_PATH_MAX + 32];
    snprintf(full, sizeof full, "%s.%s", section, key);
    snprintf(origin, sizeof origin, "%s%s", o->implied ? "!" : "", o->where);
    if (ss_params_set(s->priv->origins, full, origin))
        return ss_err(eb, SS_ENOMEM, "%s: out of memory", wk);
    return SS_OK;
}

/* {======================================================================
 * --set
 * ======================================================================= */

static int set_assignment(scn_scenario *s, const char *assignment, const char *where,
                          int implied, ss_errbuf *eb);

int scn_set(scn_scenario *s, const char *assignment, ss_errbuf *eb)
{
    return set_assignment(s, assignment, "--set", 0, eb);
}

int scn_set_from(scn_scenario *s, const char *assignment, const char *where, ss_errbuf *eb)
{
    return set_assignment(s, assignment, where, 0, eb);
}

int scn_set_option(scn_scenario *s, const char *assignment, const char *option, ss_errbuf *eb)
{
    return set_assignment(s, assignment, option, 1, eb);
}

static int set_assignment(scn_scenario *s, const char *assignment, const char *where,
                          int implied, ss_errbuf *eb)
{
    const char *eq = strchr(assignment, '=');
    size_t len = eq ? (size_t)(eq - assignment) : 0;
    const char *l = ss_trim(assignment, &len);
    char lhs[256];
    char *dot = NULL;
    if (len && len < sizeof lhs) {
        memcpy(lhs, l, len);
        lhs[len] = '\0';
        dot = strrchr(lhs, '.');
    }
    if (!dot || dot == lhs || !dot[1])
        return ss_err(eb, SS_EPARSE, "%s: expected SECTION.KEY=VALUE, got '%.200s'", where,
                      assignment);
    *dot = '\0';
    const char *key = dot + 1, *tname;
    const scn_origin o = {.where = where, .implied = implied};
    scn__sect sect = SCN__CLUSTER; /* set by parse_section */
    int rc = parse_section(lhs, o.where, &sect, &tname, eb);
    if (rc)
        return rc;
    char hint[SCN_NAME_MAX + 32];
    if (!scn__key_find(sect, key) && sect != SCN__POLICY)
        return ss_err(eb, SS_EPARSE, "%s: %s.%s: unknown key%s", where, lhs, key,
                      scn__suggest((int)sect, key, hint, sizeof hint));
    scn_tenant *t = NULL;
    int created = 0;
    if (sect == SCN__TENANT && (rc = tenant_get(s, tname, 0, o.where, &t, &created, eb)))
        return rc;
    rc = apply_key(s, sect, t, lhs, key, eq + 1, &o, eb);
    if (rc && created)
        s->n_tenants--; /* leave s as it was */
    return rc;
}

/* {======================================================================
 * Files
 * ======================================================================= */

/* Where keys were set in the file being read, to catch a key set twice in a section. */
typedef struct load_lines {
    unsigned key[1 + SS_MAX_TENANTS][N_KEYS_MAX]; /* row 0: fixed sections; 1 + i: tenant i */
    unsigned header[SS_MAX_TENANTS];              /* first [tenant.NAME] line of tenant i */
} load_lines;

typedef struct load_ctx {
    scn_scenario *s;
    const char *path;           /* for messages */
    char dir[SCN_PATH_MAX];     /* the file's folder, absolute when it could be resolved */
    int in_section;             /* a section header was seen */
    scn__sect sect;             /* the current section */
    scn_tenant *tenant;         /* ... its tenant for SCN__TENANT */
    load_lines *lines;          /* owned */
    ss_params *seen;            /* [policy] parameters set by this file -> line (owned) */
} load_ctx;

/* The folder of path, made absolute and canonical when possible (relative paths in the file
 * then resolve the same from any current directory). */
static void file_dir(const char *path, char *dir, size_t size)
{
    char text[SCN_PATH_MAX], real[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(text, sizeof text, ".");
    else
        snprintf(text, sizeof text, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    const char *d = realpath(text, real) && strlen(real) < size ? real : text;
    memcpy(dir, d, strlen(d) + 1); /* text is shorter than size: path is */
}

static int on_section(load_ctx *c, const char *section, unsigned line, const char *where,
                      ss_errbuf *eb)
{
    const char *tname;
    int created;
    int rc = parse_section(section, where, &c->sect, &tname, eb);
    c->tenant = NULL;
    if (!rc && c->sect == SCN__TENANT)
        rc = tenant_get(c->s, tname, line, where, &c->tenant, &created, eb);
    if (rc)
        return rc;
    c->in_section = 1;
    if (c->tenant) {
        unsigned *first = &c->lines->header[c->tenant - c->s->tenants];
        if (!*first)
            *first = c->tenant->line = line;
    }
    return SS_OK;
}

/* Record that key (k, or a [policy] parameter when k is NULL) was set on line; SS_EPARSE when
 * this file already set it in the same section. */
static int check_twice(load_ctx *c, const scn__key *k, const char *section, const char *key,
                       unsigned line, const char *where, ss_errbuf *eb)
{
    char text[16];
    unsigned first = 0;
    if (k) {
        size_t row = c->tenant ? 1 + (size_t)(c->tenant - c->s->tenants) : 0;
        unsigned *at = &c->lines->key[row][k - scn__keys];
        first = *at;
        *at = first ? first : line;
    } else {
        const char *v = ss_params_get(c->seen, key);
        int64_t x = 0;
        first = v && !ss_parse_i64z(v, &x) ? (unsigned)x : 0;
        snprintf(text, sizeof text, "%u", line);
        if (!first && ss_params_set(c->seen, key, text))
            return ss_err(eb, SS_ENOMEM, "%s: %s.%s: out of memory", where, section, key);
    }
    if (first)
        return ss_err(eb, SS_EPARSE, "%s: %s.%s: set twice (first on line %u)", where, section,
                      key, first);
    return SS_OK;
}

static int on_entry(void *ud, unsigned line, const char *section, const char *key,
                    const char *value, ss_errbuf *eb)
{
    load_ctx *c = ud;
    char where[SCN_PATH_MAX + 16];
    snprintf(where, sizeof where, "%s:%u", c->path, line);
    if (!key)
        return on_section(c, section, line, where, eb);
    if (!c->in_section)
        return ss_err(eb, SS_EPARSE, "%s: %s: key outside any section", where, key);
    const scn__key *k = scn__key_find(c->sect, key);
    int rc = k || c->sect == SCN__POLICY ? check_twice(c, k, section, key, line, where, eb) : 0;
    const scn_origin o = {.where = where, .line = line, .dir = c->dir};
    return rc ? rc : apply_key(c->s, c->sect, c->tenant, section, key, value, &o, eb);
}

int scn_load(scn_scenario *s, const char *path, ss_errbuf *eb)
{
    if (strlen(path) >= sizeof s->path)
        return ss_err(eb, SS_EIO, "%.200s...: cannot open: path too long", path);
    load_ctx c = {.s = s, .path = path};
    c.lines = ss_calloc(1, sizeof *c.lines);
    if (!c.lines || ss_params_create(&c.seen)) {
        ss_free(c.lines);
        return ss_err(eb, SS_ENOMEM, "%s: out of memory", path);
    }
    file_dir(path, c.dir, sizeof c.dir);
    copy_text(s->path, sizeof s->path, path);
    int rc = ss_ini_parse(path, on_entry, &c, eb);
    ss_params_destroy(&c.seen);
    ss_free(c.lines);
    return rc;
}

/* ---- the key table, for listing -------------------------------------------------------- */

/* A policy parameter and the policies that read it. */
typedef struct param_reader {
    const char *name;
    char by[512];
} param_reader;

typedef struct param_list {
    param_reader *p;
    size_t n, cap;
} param_list;

typedef struct param_ctx {
    param_list l;
    int rc;                   /* SS_ENOMEM once growing the list failed */
} param_ctx;

/* pol_param_fn: note that the `kind` policy `policy` reads param. */
static void add_param(void *ud, const char *kind, const char *policy, const char *param)
{
    param_ctx *x = ud;
    param_list *l = &x->l;
    param_reader *r = NULL;
    for (size_t j = 0; j < l->n && !r; j++)
        if (!strcmp(l->p[j].name, param))
            r = &l->p[j];
    if (!r && !x->rc) {
        if (ss_grow((void **)&l->p, &l->cap, l->n + 1, sizeof *l->p)) {
            x->rc = SS_ENOMEM;
            return;
        }
        r = &l->p[l->n++];
        r->name = param;
        r->by[0] = '\0';
    }
    if (!r)
        return;
    size_t used = strlen(r->by);
    snprintf(r->by + used, sizeof r->by - used, "%s%s %s", used ? ", " : "", kind, policy);
}

static int cmp_reader(const void *a, const void *b)
{
    return strcmp(((const param_reader *)a)->name, ((const param_reader *)b)->name);
}

int scn_keys_each(scn_key_fn *fn, void *ud)
{
    scn_scenario *s = NULL;
    if (scn_create(&s))
        return SS_ENOMEM;
    scn_tenant *t = NULL;
    int created;
    ss_errbuf eb;
    if (tenant_get(s, "NAME", 0, "", &t, &created, &eb)) { /* cannot fail: the first tenant */
        scn_destroy(&s);
        return SS_ENOMEM;
    }
    char values[256], def[SCN_PATH_MAX];
    for (size_t i = 0; i < scn__n_keys; i++) {
        const scn__key *k = &scn__keys[i];
        scn__key_values(k, values, sizeof values);
        scn__key_format(s, k->sect == SCN__TENANT ? (const void *)t : (const void *)s, k, def,
                        sizeof def);
        if (k->sect == SCN__TENANT && (k->off == offsetof(scn_tenant, prefill_tp) ||
                                       k->off == offsetof(scn_tenant, decode_tp)))
            snprintf(def, sizeof def, "the tenant's tp"); /* 0: unset, as scn_write has it */
        scn_key_info info = {.section = k->sect == SCN__TENANT ? "tenant.NAME"
                                                                : scn__sect_name(k->sect),
                             .name = k->name, .values = values, .def = def};
        fn(ud, &info);
    }
    scn_destroy(&s);
    param_ctx x = {.rc = SS_OK};
    pol_params_each(add_param, &x);
    param_list *l = &x.l;
    if (!x.rc && l->n)
        qsort(l->p, l->n, sizeof *l->p, cmp_reader);
    for (size_t i = 0; !x.rc && i < l->n; i++) {
        scn_key_info info = {.section = "policy", .name = l->p[i].name,
                             .values = "a policy parameter: the policies reading it check it",
                             .def = "(the policy's)", .read_by = l->p[i].by};
        fn(ud, &info);
    }
    ss_free(l->p);
    return x.rc;
}
