/* The scenario key table and the per-kind value parsers and formatters behind it: the single
 * place that says which keys exist, where their values go, and what values are accepted. Not
 * for file reading or cross-key checks (scenario.c, scn_check.c). */
#include "scenario/scn_int.h"

#include "core/ss_ini.h"
#include "core/ss_parse.h"
#include "policy/policy.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SF(f) .off = offsetof(scn_scenario, f), .size = sizeof(((scn_scenario *)0)->f)
#define TF(f) .off = offsetof(scn_tenant, f), .size = sizeof(((scn_tenant *)0)->f)
#define SLAF(f) .off = offsetof(scn_sla, f), .size = sizeof(double)
#define I64_MAX_D 9223372036854775807.0

/* {======================================================================
 * The table (canonical order)
 * ======================================================================= */

const scn__key scn__keys[] = {
    {.sect = SCN__CLUSTER, .name = "gpu", .kind = SCN__NAME, SF(gpu)},
    {.sect = SCN__CLUSTER, .name = "nodes", .kind = SCN__U32, SF(nodes), .hi = 65536},
    {.sect = SCN__CLUSTER, .name = "gpus_per_node", .kind = SCN__U32, SF(gpus_per_node), .hi = 64},
    /* a link kind's efficiency in place of the GPU profile's [links] figure; 0: the profile's */
    {.sect = SCN__CLUSTER, .name = "nvlink_efficiency", .kind = SCN__F64, SF(link_eff[0]), .hi = 1},
    {.sect = SCN__CLUSTER, .name = "pcie_efficiency", .kind = SCN__F64, SF(link_eff[1]), .hi = 1},
    {.sect = SCN__CLUSTER, .name = "net_efficiency", .kind = SCN__F64, SF(link_eff[2]), .hi = 1},
    /* GPU sharing at run time (docs/guide/gpu-sharing.md) */
    {.sect = SCN__CLUSTER, .name = "mps_interference", .kind = SCN__F64, SF(mps_interference),
     .hi = 10},
    {.sect = SCN__CLUSTER, .name = "timeslice_ms", .kind = SCN__F64, SF(timeslice_ms), .hi = 1e4,
     .lo_open = 1},
    {.sect = SCN__CLUSTER, .name = "context_switch_us", .kind = SCN__F64, SF(context_switch_us),
     .hi = 1e6},
    {.sect = SCN__POLICY, .name = "routing", .kind = SCN__NAME, SF(routing)},
    {.sect = SCN__POLICY, .name = "batching", .kind = SCN__NAME, SF(batching)},
    {.sect = SCN__POLICY, .name = "cluster", .kind = SCN__ENUM, SF(cluster),
     .choices_of = pol_cluster_names},
    {.sect = SCN__POLICY, .name = "cost", .kind = SCN__NAME, SF(cost)},
    {.sect = SCN__POLICY, .name = "ops", .kind = SCN__ENUM, SF(ops),
     .choices_of = pol_place_names},
    {.sect = SCN__RUN, .name = "seed", .kind = SCN__U64, SF(seed), .hi = I64_MAX_D},
    {.sect = SCN__RUN, .name = "duration_s", .kind = SCN__F64, SF(duration_s), .hi = INFINITY},
    {.sect = SCN__RUN, .name = "warmup_s", .kind = SCN__F64, SF(warmup_s), .hi = INFINITY},
    {.sect = SCN__RUN, .name = "db", .kind = SCN__TEXT, SF(db)},
    {.sect = SCN__RUN, .name = "servegen_dir", .kind = SCN__PATH, SF(servegen_dir)},
    {.sect = SCN__ENGINE, .name = "gpu_mem_util", .kind = SCN__F64, SF(gpu_mem_util), .hi = 1,
     .lo_open = 1},
    {.sect = SCN__ENGINE, .name = "block_size", .kind = SCN__U32, SF(block_size), .lo = 1,
     .hi = 1024},
    {.sect = SCN__ENGINE, .name = "max_model_len", .kind = SCN__U64, SF(max_model_len), .lo = 2,
     .hi = 1 << 30},
    {.sect = SCN__ENGINE, .name = "swap_space_gib", .kind = SCN__F64, SF(swap_space_gib),
     .hi = 65536}, /* 64 TiB of host memory per GPU, as kvpool.cpu_gib */
    {.sect = SCN__ENGINE, .name = "prefix_cache", .kind = SCN__ENUM, SF(prefix_cache),
     .choices = "auto, on, off"},
    {.sect = SCN__ENGINE, .name = "prefix_ceiling", .kind = SCN__ENUM, SF(prefix_ceiling),
     .choices = "on, off"},
    /* The tiers' sizes are bounded so that their bytes are exact integers far below 2^64
     * (at 1.7e10 GiB an SSD tier wrapped to none): 64 TiB of DRAM and about 1 PiB of SSD a
     * node, beyond the largest servers. */
    {.sect = SCN__KVPOOL, .name = "cpu_gib", .kind = SCN__F64, SF(kvpool.cpu_gib), .hi = 65536},
    {.sect = SCN__KVPOOL, .name = "cpu_gbps", .kind = SCN__F64, SF(kvpool.cpu_gbps),
     .hi = INFINITY},
    {.sect = SCN__KVPOOL, .name = "cpu_latency_us", .kind = SCN__F64, SF(kvpool.cpu_latency_us),
     .hi = INFINITY},
    {.sect = SCN__KVPOOL, .name = "ssd_gib", .kind = SCN__F64, SF(kvpool.ssd_gib), .hi = 1e6},
    {.sect = SCN__KVPOOL, .name = "ssd_gbps", .kind = SCN__F64, SF(kvpool.ssd_gbps),
     .hi = INFINITY, .lo_open = 1},
    {.sect = SCN__KVPOOL, .name = "ssd_latency_us", .kind = SCN__F64, SF(kvpool.ssd_latency_us),
     .hi = INFINITY},
    {.sect = SCN__KVPOOL, .name = "scope", .kind = SCN__ENUM, SF(kvpool.scope),
     .choices = "node, cluster"},
    {.sect = SCN__KVPOOL, .name = "offload", .kind = SCN__ENUM, SF(kvpool.offload),
     .choices = "link, free"},
    {.sect = SCN__TENANT, .name = "model", .kind = SCN__NAME, TF(model)},
    {.sect = SCN__TENANT, .name = "engine", .kind = SCN__PROFILE, TF(engine)},
    {.sect = SCN__TENANT, .name = "tp", .kind = SCN__U32, TF(tp), .lo = 1, .hi = 64},
    {.sect = SCN__TENANT, .name = "pp", .kind = SCN__U32, TF(pp), .lo = 1, .hi = 16},
    {.sect = SCN__TENANT, .name = "replicas", .kind = SCN__U32, TF(replicas), .lo = 1, .hi = 4096},
    {.sect = SCN__TENANT, .name = "max_replicas", .kind = SCN__U32, TF(max_replicas), .lo = 1,
     .hi = 4096},
    {.sect = SCN__TENANT, .name = "prefill_replicas", .kind = SCN__U32, TF(prefill_replicas),
     .lo = 1, .hi = 4096},
    {.sect = SCN__TENANT, .name = "decode_replicas", .kind = SCN__U32, TF(decode_replicas),
     .lo = 1, .hi = 4096},
    {.sect = SCN__TENANT, .name = "prefill_tp", .kind = SCN__U32, TF(prefill_tp), .lo = 1,
     .hi = 64},
    {.sect = SCN__TENANT, .name = "decode_tp", .kind = SCN__U32, TF(decode_tp), .lo = 1, .hi = 64},
    {.sect = SCN__TENANT, .name = "kv_transfer", .kind = SCN__ENUM, TF(kv_transfer),
     .choices = "layer, end"},
    {.sect = SCN__TENANT, .name = "share", .kind = SCN__OPT, TF(share)},
    {.sect = SCN__TENANT, .name = "mem_gib", .kind = SCN__F64, TF(mem_gib), .hi = 1e6},
    {.sect = SCN__TENANT, .name = "share_gpus", .kind = SCN__OPT, TF(share_gpus)},
    {.sect = SCN__TENANT, .name = "trace", .kind = SCN__PATH, TF(trace)},
    {.sect = SCN__TENANT, .name = "trace_format", .kind = SCN__ENUM, TF(trace_format),
     .choices = "auto, native, azure, vidur, burstgpt, mooncake"},
    {.sect = SCN__TENANT, .name = "trace_spread", .kind = SCN__BOOL, TF(trace_spread)},
    {.sect = SCN__TENANT, .name = "trace_sort", .kind = SCN__BOOL, TF(trace_sort)},
    {.sect = SCN__TENANT, .name = "trace_tenant", .kind = SCN__OPT, TF(trace_tenant)},
    {.sect = SCN__TENANT, .name = "split", .kind = SCN__ENUM, TF(split),
     .choices = "none, rr, random, class"},
    {.sect = SCN__TENANT, .name = "weight", .kind = SCN__F64, TF(weight), .hi = INFINITY,
     .lo_open = 1},
    {.sect = SCN__TENANT, .name = "class", .kind = SCN__CLASS, TF(class_lo)},
    {.sect = SCN__TENANT, .name = "synthetic", .kind = SCN__OPT, TF(synthetic)},
    {.sect = SCN__TENANT, .name = "servegen", .kind = SCN__OPT, TF(servegen)},
    {.sect = SCN__TENANT, .name = "servegen_start_s", .kind = SCN__F64, TF(servegen_start_s),
     .hi = INFINITY},
    {.sect = SCN__TENANT, .name = "rate_scale", .kind = SCN__F64, TF(rate_scale), .hi = INFINITY,
     .lo_open = 1},
    {.sect = SCN__TENANT, .name = "duration_s", .kind = SCN__F64, TF(duration_s), .hi = INFINITY},
    {.sect = SCN__TENANT, .name = "limit", .kind = SCN__U64, TF(limit), .hi = I64_MAX_D},
    {.sect = SCN__TENANT, .name = "tiers", .kind = SCN__U32, TF(tiers), .lo = 1,
     .hi = SS_MAX_TIERS},
    {.sect = SCN__TENANT, .name = "tier_mix", .kind = SCN__TEXT, TF(tier_mix)},
    {.sect = SCN__TENANT, .name = "tier_alpha", .kind = SCN__F64, TF(tier_alpha), .hi = INFINITY,
     .lo_open = 1},
    {.sect = SCN__TENANT, .name = "sla_ttft_ms", .kind = SCN__SLA, SLAF(ttft_ms)},
    {.sect = SCN__TENANT, .name = "sla_tbt_ms", .kind = SCN__SLA, SLAF(tbt_p99_ms)},
    {.sect = SCN__TENANT, .name = "sla_e2e_ms", .kind = SCN__SLA, SLAF(e2e_ms)},
};

const size_t scn__n_keys = sizeof scn__keys / sizeof *scn__keys;

static const char *const sect_names[] = {
    [SCN__CLUSTER] = "cluster", [SCN__POLICY] = "policy", [SCN__RUN] = "run",
    [SCN__ENGINE] = "engine", [SCN__KVPOOL] = "kvpool",
};

const char *scn__sect_name(scn__sect s)
{
    return s == SCN__TENANT ? "tenant" : sect_names[s];
}

int scn__sect_find(const char *section, const char **tenant)
{
    *tenant = NULL;
    for (size_t i = 0; i < sizeof sect_names / sizeof *sect_names; i++)
        if (!strcmp(section, sect_names[i]))
            return (int)i;
    if (!strncmp(section, "tenant", 6) && (section[6] == '.' || section[6] == '\0')) {
        *tenant = section[6] ? section + 7 : section + 6;
        return SCN__TENANT;
    }
    return -1;
}

/* Edits between a and b: letters changed, added or dropped, or two neighbours swapped
 * (optimal string alignment); more than 3 reads as 3. Names of at most 63 letters. */
static unsigned edits(const char *a, const char *b)
{
    enum { MAXLEN = 64 };
    size_t m = strlen(a), n = strlen(b);
    if (m >= MAXLEN || n >= MAXLEN || (m > n ? m - n : n - m) > 3)
        return 3;
    unsigned d[MAXLEN][MAXLEN];
    for (size_t i = 0; i <= m; i++)
        d[i][0] = (unsigned)i;
    for (size_t j = 0; j <= n; j++)
        d[0][j] = (unsigned)j;
    for (size_t i = 1; i <= m; i++)
        for (size_t j = 1; j <= n; j++) {
            unsigned best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[m][n] > 3 ? 3 : d[m][n];
}

const char *scn__suggest(int sect, const char *name, char *buf, size_t n)
{
    const char *best = NULL;
    unsigned best_d = 3, limit = (unsigned)((strlen(name) + 1) / 2);
    if (sect < 0) {
        for (size_t i = 0; i < sizeof sect_names / sizeof *sect_names; i++) {
            unsigned d = sect_names[i] ? edits(name, sect_names[i]) : 3;
            if (d < best_d && d < limit)
                best = sect_names[i], best_d = d;
        }
    } else {
        for (size_t i = 0; i < scn__n_keys; i++) {
            if ((int)scn__keys[i].sect != sect)
                continue;
            unsigned d = edits(name, scn__keys[i].name);
            if (d < best_d && d < limit)
                best = scn__keys[i].name, best_d = d;
        }
    }
    char head[SCN_NAME_MAX];
    size_t dot = strcspn(name, ".");
    if (sect < 0 && !best && dot < sizeof head) { /* [tenants.chat], [tennant.chat] */
        memcpy(head, name, dot);
        head[dot] = '\0';
        unsigned d = edits(head, "tenant");
        if (d < 3 && d < (unsigned)((dot + 1) / 2))
            best = "tenant.NAME";
    }
    if (!best)
        snprintf(buf, n, "%s", "");
    else if (sect < 0)
        snprintf(buf, n, " (did you mean [%s]?)", best);
    else
        snprintf(buf, n, " (did you mean %s?)", best);
    return buf;
}

const scn__key *scn__key_find(scn__sect sect, const char *name)
{
    for (size_t i = 0; i < scn__n_keys; i++)
        if (scn__keys[i].sect == sect && !strcmp(scn__keys[i].name, name))
            return &scn__keys[i];
    return NULL;
}

/* {======================================================================
 * Parsing
 * ======================================================================= */

int scn__text_ok(const char *v)
{
    for (const char *p = v; *p; p++) {
        if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == '"')
            return 0;
        if (*p == ';' && (p == v || p[-1] == ' ' || p[-1] == '\t'))
            return 0;
    }
    return 1;
}

int scn__line_fits(const char *key, const char *value, int abs_path)
{
    size_t len = strlen(key) + 3 + strlen(value); /* "key = value" */
    if (*value && strpbrk(value, " \t"))
        len += 2; /* quotes */
    char cwd[PATH_MAX];
    if (abs_path && getcwd(cwd, sizeof cwd))
        len += strlen(cwd) + 1;
    return len <= SS_INI_LINE_MAX;
}

int scn__name_ok(const char *v, size_t size)
{
    size_t n = strlen(v);
    if (n == 0 || n >= size)
        return 0;
    return strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

static const char *key_choices(const scn__key *k)
{
    return k->choices_of ? k->choices_of() : k->choices;
}

static int enum_ok(const char *v, const char *choices)
{
    size_t n = strlen(v);
    for (const char *c = choices;; c += strcspn(c, ",") + 2) {
        size_t len = strcspn(c, ",");
        if (len == n && !strncmp(c, v, n))
            return 1;
        if (!c[len])
            return 0;
    }
}

/* A range bound as text: integers exactly, I64_MAX_D as INT64_MAX, infinity as "inf". */
static void format_bound(double x, int integer, char *buf, size_t n)
{
    if (isinf(x))
        snprintf(buf, n, "inf");
    else if (integer && x >= I64_MAX_D)
        snprintf(buf, n, "%" PRId64, INT64_MAX);
    else
        snprintf(buf, n, integer ? "%.0f" : "%g", x);
}

/* "out of range [lo, hi]" when v is a number outside k's range (overflow included), else
 * "expected ..." for numbers of kind k. */
static void expect_number(const scn__key *k, const char *v, char *why, size_t n)
{
    int integer = k->kind == SCN__U32 || k->kind == SCN__U64;
    double x;
    if (ss_parse_number_value(v, strlen(v), &x) &&
        (x < k->lo || (k->lo_open && x == k->lo) || x > k->hi || isinf(x))) {
        char lo[32], hi[32];
        format_bound(k->lo, integer, lo, sizeof lo);
        format_bound(k->hi, integer, hi, sizeof hi);
        snprintf(why, n, "out of range %c%s, %s%c", k->lo_open ? '(' : '[', lo, hi,
                 isinf(k->hi) ? ')' : ']');
    } else if (integer && k->hi < 1e15)
        snprintf(why, n, "expected an integer from %.0f to %.0f", k->lo, k->hi);
    else if (integer)
        snprintf(why, n, "expected an integer >= %.0f", k->lo);
    else if (isfinite(k->hi))
        snprintf(why, n, "expected a number in %c%g, %g]", k->lo_open ? '(' : '[', k->lo, k->hi);
    else
        snprintf(why, n, "expected a number %s %g", k->lo_open ? ">" : ">=", k->lo);
}

static int store_number(char *field, const scn__key *k, const char *v)
{
    if (k->kind == SCN__F64) {
        double x;
        if (ss_parse_doublez(v, &x) || x < k->lo || (k->lo_open && x == k->lo) || x > k->hi)
            return SS_EPARSE;
        memcpy(field, &x, sizeof x);
        return SS_OK;
    }
    int64_t x;
    if (ss_parse_i64z(v, &x) || (double)x < k->lo || (double)x > k->hi)
        return SS_EPARSE;
    if (k->kind == SCN__U32) {
        uint32_t u = (uint32_t)x;
        memcpy(field, &u, sizeof u);
    } else {
        uint64_t u = (uint64_t)x;
        memcpy(field, &u, sizeof u);
    }
    return SS_OK;
}

/* dir + "/" + rel, dropping leading "./" and "../" components of rel against dir when dir is
 * absolute (ss_realpath'd by the caller, so ".." is its real parent). */
static int join_path(const char *dir, const char *rel, char *out, size_t size)
{
    size_t n = strlen(dir);
    if (n >= size)
        return SS_EPARSE;
    memcpy(out, dir, n + 1);
    while (dir[0] == '/') {
        if (!strcmp(rel, ".") || !strncmp(rel, "./", 2)) {
            rel += rel[1] ? 2 : 1;
        } else if (!strcmp(rel, "..") || !strncmp(rel, "../", 3)) {
            rel += rel[2] ? 3 : 2;
            while (n > 1 && out[n - 1] != '/')
                n--;
            n = n > 1 ? n - 1 : 1;
            out[n] = '\0';
        } else if (rel[0] == '/') {
            rel++;
        } else {
            break;
        }
    }
    if (!*rel)
        return SS_OK;
    int w = snprintf(out + n, size - n, "%s%s", n && out[n - 1] == '/' ? "" : "/", rel);
    return w < 0 || (size_t)w >= size - n ? SS_EPARSE : SS_OK;
}

int scn_profile_is_path(const char *v)
{
    size_t n = strlen(v);
    return strchr(v, '/') || (n > 4 && !strcmp(v + n - 4, ".ini"));
}

/* What is wrong with text value v for key k, or NULL. */
static const char *text_problem(const scn__key *k, const char *v, char *buf, size_t n)
{
    size_t len = strlen(v);
    int path = k->kind == SCN__PATH || (k->kind == SCN__PROFILE && scn_profile_is_path(v));
    if (k->kind == SCN__NAME && !scn__name_ok(v, k->size))
        snprintf(buf, n, "expected a name of 1 to %zu characters from [a-z0-9._-]", k->size - 1);
    else if (k->kind == SCN__PROFILE && !path && !scn__name_ok(v, SCN_NAME_MAX))
        snprintf(buf, n, "expected a name of 1 to %d characters from [a-z0-9._-], or a profile "
                 "file's path (with a '/' or ending in .ini)", SCN_NAME_MAX - 1);
    else if (k->kind == SCN__ENUM && !enum_ok(v, key_choices(k)))
        snprintf(buf, n, "expected one of %s", key_choices(k));
    else if (k->kind == SCN__TEXT && len == 0)
        snprintf(buf, n, "expected a non-empty value");
    else if (len >= k->size)
        snprintf(buf, n, "expected at most %zu characters", k->size - 1);
    else if (!scn__text_ok(v))
        snprintf(buf, n, "expected text without '\"', control characters or ';' after a blank");
    else if (!scn__line_fits(k->name, v, path && v[0] && v[0] != '/'))
        snprintf(buf, n, "too long: '%s = ...' must fit on one line of %d characters (the "
                 "scenario is stored with each run%s)", k->name, SS_INI_LINE_MAX,
                 path && v[0] != '/' ? ", its paths made absolute" : "");
    else
        return NULL;
    return buf;
}

static int store_text(char *field, const scn__key *k, const char *v, const char *dir, char *why,
                      size_t n)
{
    char path[SCN_PATH_MAX];
    int is_path = k->kind == SCN__PATH || (k->kind == SCN__PROFILE && scn_profile_is_path(v));
    if (is_path && dir && v[0] && v[0] != '/') {
        if (join_path(dir, v, path, sizeof path)) {
            snprintf(why, n, "path longer than %zu characters from %s", sizeof path - 1, dir);
            return SS_EPARSE;
        }
        v = path;
    }
    if (text_problem(k, v, why, n))
        return SS_EPARSE;
    memset(field, 0, k->size); /* no stale bytes: equal scenarios compare equal bytewise */
    memcpy(field, v, strlen(v));
    return SS_OK;
}

static int store_bool(char *field, const char *v)
{
    int x = !strcmp(v, "true") ? 1 : !strcmp(v, "false") ? 0 : -1;
    if (x < 0)
        return SS_EPARSE;
    memcpy(field, &x, sizeof x);
    return SS_OK;
}

static int store_class(scn_tenant *t, const char *v)
{
    const char *colon = strchr(v, ':');
    int64_t lo, hi;
    if (!colon || ss_parse_i64(v, (size_t)(colon - v), &lo) || ss_parse_i64z(colon + 1, &hi) ||
        lo < 0 || hi < lo || hi > UINT32_MAX)
        return SS_EPARSE;
    t->class_lo = (uint32_t)lo;
    t->class_hi = (uint32_t)hi;
    return SS_OK;
}

/* One value for every tier, or values for tiers 0..n-1 and 0 (no bound) after them. */
static int store_sla(scn_tenant *t, size_t off, const char *v)
{
    double x[SS_MAX_TIERS];
    size_t n = 0;
    for (const char *p = v;; p += strcspn(p, ",") + 1) {
        size_t len = strcspn(p, ",");
        if (n == SS_MAX_TIERS || ss_parse_double(p, len, &x[n]) || x[n] < 0)
            return SS_EPARSE;
        n++;
        if (!p[len])
            break;
    }
    for (size_t i = 0; i < SS_MAX_TIERS; i++) {
        double y = n == 1 ? x[0] : i < n ? x[i] : 0;
        memcpy((char *)&t->sla[i] + off, &y, sizeof y);
    }
    return SS_OK;
}

int scn__key_store(void *base, const scn__key *k, const char *value, const char *dir, char *why,
                   size_t why_size)
{
    char *field = (char *)base + k->off;
    int rc = SS_EPARSE;
    why[0] = '\0';
    switch (k->kind) {
    case SCN__NAME:
    case SCN__TEXT:
    case SCN__OPT:
    case SCN__PATH:
    case SCN__PROFILE:
    case SCN__ENUM: rc = store_text(field, k, value, dir, why, why_size); break;
    case SCN__U32:
    case SCN__U64:
    case SCN__F64:
        if ((rc = store_number(field, k, value)))
            expect_number(k, value, why, why_size);
        break;
    case SCN__BOOL:
        if ((rc = store_bool(field, value)))
            snprintf(why, why_size, "expected true or false");
        break;
    case SCN__CLASS:
        if ((rc = store_class(base, value)))
            snprintf(why, why_size, "expected LO:HI prompt tokens, integers with LO <= HI");
        break;
    case SCN__SLA:
        if ((rc = store_sla(base, k->off, value)))
            snprintf(why, why_size, "expected 1 to %d comma-separated numbers >= 0 (ms)",
                     SS_MAX_TIERS);
        break;
    }
    if (rc) {
        size_t used = strlen(why);
        snprintf(why + used, why_size - used, ", got '%.60s'", value);
    }
    return rc;
}

/* {======================================================================
 * Formatting
 * ======================================================================= */

/* The shortest of %.15g and %.17g that reads back as exactly x. */
static void format_double(double x, char *buf, size_t size)
{
    snprintf(buf, size, "%.15g", x);
    if (strtod(buf, NULL) != x)
        snprintf(buf, size, "%.17g", x);
}

uint32_t scn__sla_count(const scn_scenario *s, const scn_tenant *t, size_t off)
{
    uint8_t n = s->priv->sla_n[t - s->tenants][off / sizeof(double)];
    return n ? n : 1;
}

static void format_sla(const scn_scenario *s, const scn_tenant *t, size_t off, char *buf,
                       size_t size)
{
    uint32_t n = scn__sla_count(s, t, off);
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < n && used < size; i++) {
        double x;
        char num[32];
        memcpy(&x, (const char *)&t->sla[i] + off, sizeof x);
        format_double(x, num, sizeof num);
        int w = snprintf(buf + used, size - used, "%s%s", i ? "," : "", num);
        used += w > 0 ? (size_t)w : 0;
    }
}

static void format_number(const char *field, const scn__key *k, char *buf, size_t size)
{
    if (k->kind == SCN__U32) {
        uint32_t x;
        memcpy(&x, field, sizeof x);
        snprintf(buf, size, "%" PRIu32, x);
    } else if (k->kind == SCN__U64) {
        uint64_t x;
        memcpy(&x, field, sizeof x);
        snprintf(buf, size, "%" PRIu64, x);
    } else {
        double x;
        memcpy(&x, field, sizeof x);
        format_double(x, buf, size);
    }
}

void scn__key_format(const scn_scenario *s, const void *base, const scn__key *k, char *buf,
                     size_t size)
{
    const char *field = (const char *)base + k->off;
    const scn_tenant *t = base;
    int b;
    switch (k->kind) {
    case SCN__NAME:
    case SCN__TEXT:
    case SCN__OPT:
    case SCN__PATH:
    case SCN__PROFILE:
    case SCN__ENUM: snprintf(buf, size, "%s", field); break;
    case SCN__U32:
    case SCN__U64:
    case SCN__F64: format_number(field, k, buf, size); break;
    case SCN__BOOL:
        memcpy(&b, field, sizeof b);
        snprintf(buf, size, "%s", b ? "true" : "false");
        break;
    case SCN__CLASS: snprintf(buf, size, "%" PRIu32 ":%" PRIu32, t->class_lo, t->class_hi); break;
    case SCN__SLA: format_sla(s, t, k->off, buf, size); break;
    }
}

/* A numeric bound as text: integers without a point, others as %g. */
static void bound_text(double v, char *buf, size_t size)
{
    if (isinf(v))
        snprintf(buf, size, "no bound");
    else
        snprintf(buf, size, "%.15g", v);
}

void scn__key_values(const scn__key *k, char *buf, size_t size)
{
    char lo[32], hi[32];
    bound_text(k->lo, lo, sizeof lo);
    bound_text(k->hi, hi, sizeof hi);
    switch (k->kind) {
    case SCN__NAME: snprintf(buf, size, "a name ([a-z0-9._-])"); break;
    case SCN__TEXT: snprintf(buf, size, "text"); break;
    case SCN__OPT: snprintf(buf, size, "text (empty: not set)"); break;
    case SCN__PATH:
        snprintf(buf, size, "a path (relative: from the scenario file's folder; empty: none)");
        break;
    case SCN__PROFILE: snprintf(buf, size, "an engine's name, or a profile file's path"); break;
    case SCN__ENUM:
        snprintf(buf, size, "one of: %s", k->choices_of ? k->choices_of() : k->choices);
        break;
    case SCN__U32:
    case SCN__U64:
        if (isinf(k->hi) || k->hi >= I64_MAX_D)
            snprintf(buf, size, "an integer, %s or more", lo);
        else
            snprintf(buf, size, "an integer, %s to %s", lo, hi);
        break;
    case SCN__F64:
        if (isinf(k->hi))
            snprintf(buf, size, "a number %s %s", k->lo_open ? ">" : ">=", lo);
        else
            snprintf(buf, size, k->lo_open ? "a number above %s, at most %s"
                                           : "a number, %s to %s", lo, hi);
        break;
    case SCN__BOOL: snprintf(buf, size, "true or false"); break;
    case SCN__CLASS: snprintf(buf, size, "LO:HI, prompt tokens, integers with LO <= HI"); break;
    case SCN__SLA:
        snprintf(buf, size, "ms >= 0: one for every tier, or up to %d comma-separated from tier "
                 "0", SS_MAX_TIERS);
        break;
    }
}

/* The destination of k has the size its kind writes (catches a table typo). */
static int key_size_ok(const scn__key *k)
{
    switch (k->kind) {
    case SCN__NAME:
    case SCN__TEXT:
    case SCN__OPT:
    case SCN__PATH:
    case SCN__PROFILE:
    case SCN__ENUM: return k->size > 1;
    case SCN__U32: return k->size == sizeof(uint32_t);
    case SCN__U64: return k->size == sizeof(uint64_t);
    case SCN__F64:
    case SCN__SLA: return k->size == sizeof(double);
    case SCN__BOOL: return k->size == sizeof(int);
    case SCN__CLASS: return k->size == sizeof(uint32_t);
    }
    return 0;
}

/* Rules beyond sizes: tenant-only kinds, and SLA offsets that index scn__priv.sla_n. */
static int key_place_ok(const scn__key *k)
{
    if ((k->kind == SCN__CLASS || k->kind == SCN__SLA) && k->sect != SCN__TENANT)
        return 0;
    return k->kind != SCN__SLA || (k->off % sizeof(double) == 0 && k->off / sizeof(double) < 3);
}

int scn__keys_ok(void)
{
    for (size_t i = 0; i < scn__n_keys; i++)
        if (!key_size_ok(&scn__keys[i]) || !key_place_ok(&scn__keys[i]))
            return 0;
    return 1;
}
