/* Engine profiles (profiles/engines, one .ini file per serving engine and version): the
 * accepted keys, their units, the [gpu.NAME] override sections and the lookup of one GPU's
 * host terms. Not for what the terms do to an iteration (cost/) or where files are found
 * (catalog.c). */
#include "catalog_int.h"


#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define KEY(sec, name_, kind_, field, scale_, req)                                              \
    {.section = sec, .key = name_, .kind = kind_, .off = offsetof(cat_engine, field),             \
     .size = sizeof(((cat_engine *)0)->field), .scale = scale_, .required = req}

/* Every term is required (except description): an engine file states what its engine does
 * instead of inheriting a default that would look calibrated. */
static const cat__key engine_keys[] = {
    KEY("engine", "name", CAT__NAME, name, 1, 1),
    KEY("engine", "description", CAT__TEXT, description, 1, 0),
    KEY("engine", "overlap", CAT__NAME, overlap_name, 1, 1),
    KEY("host", "iter_fixed_us", CAT__NONNEG, host.iter_fixed_s, 1e-6, 1),
    KEY("host", "iter_per_seq_us", CAT__NONNEG, host.iter_per_seq_s, 1e-6, 1),
    KEY("host", "iter_per_token_us", CAT__NONNEG, host.iter_per_token_s, 1e-6, 1),
    KEY("host", "op_floor_us", CAT__NONNEG, host.op_floor_s, 1e-6, 1),
    KEY("kernels", "fuse_add_norm", CAT__BOOL, fuse_add_norm, 1, 1),
    KEY("kernels", "fuse_silu_mul", CAT__BOOL, fuse_silu_mul, 1, 1),
    KEY("kernels", "moe_eff", CAT__FRAC, moe_eff, 1, 1),
    KEY("allreduce", "algorithm", CAT__NAME, allreduce_name, 1, 1),
    KEY("allreduce", "eff", CAT__FRAC, allreduce_eff, 1, 1),
    KEY("allreduce", "hop_latency_us", CAT__NONNEG, allreduce_hop_s, 1e-6, 1),
    KEY("frontend", "frontend_ms", CAT__NONNEG, frontend_s, 1e-3, 1),
    KEY("engine", "async_scheduling", CAT__BOOL, async_scheduling, 1, 1),
    KEY("kernels", "attn_speed", CAT__POS, attn_speed, 1, 1),
};

#define N_ENGINE_KEYS (sizeof engine_keys / sizeof *engine_keys)
_Static_assert(N_ENGINE_KEYS <= CAT__MAX_KEYS, "raise CAT__MAX_KEYS");

/* The [host] keys a [gpu.NAME] section may override. */
static const struct {
    const char *key;
    size_t off; /* in cat_engine_host */
} host_keys[] = {
    {"iter_fixed_us", offsetof(cat_engine_host, iter_fixed_s)},
    {"iter_per_seq_us", offsetof(cat_engine_host, iter_per_seq_s)},
    {"iter_per_token_us", offsetof(cat_engine_host, iter_per_token_s)},
    {"op_floor_us", offsetof(cat_engine_host, op_floor_s)},
};
#define N_HOST_KEYS (sizeof host_keys / sizeof *host_keys)

/* While reading: which override keys were set, and where. */
typedef struct override_state {
    cat_engine *e;
    unsigned line[CAT_ENGINE_MAX_GPUS][N_HOST_KEYS]; /* 0 = not set */
} override_state;

/* The override slot of GPU gpu, created on first use; -1 when there are too many. */
static int slot_of(cat_engine *e, const char *gpu)
{
    for (uint32_t i = 0; i < e->n_gpus; i++)
        if (!strcmp(e->per_gpu[i].gpu, gpu))
            return (int)i;
    if (e->n_gpus == CAT_ENGINE_MAX_GPUS)
        return -1;
    memcpy(e->per_gpu[e->n_gpus].gpu, gpu, strlen(gpu) + 1);
    return (int)e->n_gpus++;
}

/* One key of a [gpu.NAME] section. */
static int on_override(void *ud, const char *path, unsigned line, const char *gpu,
                       const char *key, const char *value, ss_errbuf *eb)
{
    override_state *st = ud;
    if (!cat__valid_name(gpu, CAT_NAME_MAX))
        return ss_err(eb, SS_EPARSE, "%s:%u: gpu.%.60s.%s: '%.60s' is not a GPU name of 1-47 "
                      "characters from [a-z0-9._-]", path, line, gpu, key, gpu);
    size_t k = 0;
    while (k < N_HOST_KEYS && strcmp(host_keys[k].key, key))
        k++;
    if (k == N_HOST_KEYS)
        return ss_err(eb, SS_EPARSE, "%s:%u: gpu.%s.%s: unknown key (a [gpu.NAME] section "
                      "overrides iter_fixed_us, iter_per_seq_us, iter_per_token_us, "
                      "op_floor_us)", path, line, gpu, key);
    int i = slot_of(st->e, gpu);
    if (i < 0)
        return ss_err(eb, SS_EPARSE, "%s:%u: gpu.%s.%s: more than %d [gpu.NAME] sections", path,
                      line, gpu, key, CAT_ENGINE_MAX_GPUS);
    if (st->line[i][k])
        return ss_err(eb, SS_EPARSE, "%s:%u: gpu.%s.%s: set twice (first on line %u)", path,
                      line, gpu, key, st->line[i][k]);
    double x;
    if (cat__parse_f64(value, CAT__NONNEG, 1e-6, &x))
        return ss_err(eb, SS_EPARSE, "%s:%u: gpu.%s.%s: '%.60s' is not a number >= 0", path,
                      line, gpu, key, value);
    st->line[i][k] = line;
    memcpy((char *)&st->e->per_gpu[i].host + host_keys[k].off, &x, sizeof x);
    return SS_OK;
}

/* Fill the keys an override section did not set from [host]. */
static void inherit_host(cat_engine *e, const override_state *st)
{
    for (uint32_t i = 0; i < e->n_gpus; i++)
        for (size_t k = 0; k < N_HOST_KEYS; k++)
            if (!st->line[i][k])
                memcpy((char *)&e->per_gpu[i].host + host_keys[k].off,
                       (const char *)&e->host + host_keys[k].off, sizeof(double));
}

int cat__engine_read(void *dst, const char *path, unsigned *name_line, ss_errbuf *eb)
{
    cat_engine *e = dst;
    memset(e, 0, sizeof *e);
    cat__ini_info info;
    override_state st = {.e = e};
    const cat__ini_hook hook = {.prefix = "gpu.", .fn = on_override, .ud = &st};
    int rc = cat__ini_read_hooked(e, engine_keys, N_ENGINE_KEYS, path, &hook, &info, eb);
    if (rc)
        return rc;
    *name_line = info.line[0];
    if (!strcmp(e->overlap_name, "serial"))
        e->overlap = CAT_OVERLAP_SERIAL;
    else if (!strcmp(e->overlap_name, "max"))
        e->overlap = CAT_OVERLAP_MAX;
    else
        return ss_err(eb, SS_EPARSE, "%s:%u: engine.overlap: '%s' is not serial or max", path,
                      info.line[2], e->overlap_name);
    if (!strcmp(e->allreduce_name, "ring"))
        e->allreduce = CAT_ALLREDUCE_RING;
    else if (!strcmp(e->allreduce_name, "twoshot"))
        e->allreduce = CAT_ALLREDUCE_TWOSHOT;
    else
        return ss_err(eb, SS_EPARSE, "%s:%u: allreduce.algorithm: '%s' is not ring or twoshot",
                      path, info.line[10], e->allreduce_name);
    if (!e->description[0])
        memcpy(e->description, e->name, sizeof e->name);
    inherit_host(e, &st);
    return SS_OK;
}

const cat_engine_host *cat_engine_host_for(const cat_engine *e, const char *gpu)
{
    for (uint32_t i = 0; gpu && i < e->n_gpus; i++)
        if (!strcmp(e->per_gpu[i].gpu, gpu))
            return &e->per_gpu[i].host;
    return &e->host;
}
