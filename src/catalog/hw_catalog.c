/* Hardware profiles (profiles/hardware, one .ini file per GPU): the accepted keys, their units
 * and their conversion to SI in cat_gpu. Not for loading directories or lookups (catalog.c)
 * nor for what the figures mean to a cost model (cost/). */
#include "catalog/catalog_int.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB 1073741824.0
#define MIB 1048576.0

#define KEY(sec, name_, kind_, field, scale_, req)                                              \
    {.section = sec, .key = name_, .kind = kind_, .off = offsetof(cat_gpu, field),                \
     .size = sizeof(((cat_gpu *)0)->field), .scale = scale_, .required = req}

/* A key hardware files held before engine profiles (see gpu_keys). */
#define MOVED(sec, name_) {.section = sec, .key = name_, .kind = CAT__MOVED}

/* Every key is required except description, host_mem_gib (which only bounds a KV pool) and
 * nvlink_efficiency, which a GPU with NVLink must set and one without (nvlink_gbps = 0) must not
 * (cat__gpu_read): the efficiencies differ by GPU generation, so a file must state them rather
 * than inherit a silent default. The engine terms that hardware
 * files held before engine profiles (eff_link, op_floor_us, [overhead]) are rejected with a
 * pointer to profiles/engines: a silently ignored value would look calibrated. */
static const cat__key gpu_keys[] = {
    KEY("gpu", "name", CAT__NAME, name, 1, 1),
    KEY("gpu", "description", CAT__TEXT, description, 1, 0),
    KEY("gpu", "peak_bf16_tflops", CAT__POS, peak_flops, 1e12, 1),
    KEY("gpu", "hbm_gib", CAT__POS, hbm_bytes, GIB, 1),
    KEY("gpu", "hbm_bw_gbps", CAT__POS, hbm_bw, 1e9, 1),
    KEY("gpu", "sm_count", CAT__UPOS, sm_count, 1, 1),
    KEY("gpu", "l2_mib", CAT__POS, l2_bytes, MIB, 1),
    KEY("node", "gpus_per_node", CAT__UPOS, gpus_per_node, 1, 1),
    KEY("node", "nvlink_gbps", CAT__NONNEG, nvlink_bw, 1e9, 1),
    KEY("node", "pcie_gbps", CAT__POS, pcie_bw, 1e9, 1),
    KEY("node", "net_gbps", CAT__POS, net_bw, 1e9, 1),
    KEY("node", "link_latency_us", CAT__NONNEG, link_latency_s, 1e-6, 1),
    KEY("node", "net_latency_us", CAT__NONNEG, net_latency_s, 1e-6, 1),
    KEY("node", "host_mem_gib", CAT__NONNEG, host_mem_bytes, GIB, 0),
    KEY("links", "nvlink_efficiency", CAT__FRAC, nvlink_eff, 1, 0),
    KEY("links", "pcie_efficiency", CAT__FRAC, pcie_eff, 1, 1),
    KEY("links", "net_efficiency", CAT__FRAC, net_eff, 1, 1),
    KEY("roofline", "eff_compute", CAT__FRAC, eff_compute, 1, 1),
    KEY("roofline", "eff_memory", CAT__FRAC, eff_memory, 1, 1),
    KEY("roofline", "eff_elementwise", CAT__FRAC, eff_elementwise, 1, 1),
    MOVED("roofline", "eff_link"),
    MOVED("roofline", "op_floor_us"),
    MOVED("overhead", "iter_fixed_us"),
    MOVED("overhead", "iter_per_seq_us"),
    MOVED("overhead", "iter_per_token_us"),
};

#define N_GPU_KEYS (sizeof gpu_keys / sizeof *gpu_keys)
_Static_assert(N_GPU_KEYS <= CAT__MAX_KEYS, "raise CAT__MAX_KEYS");

const cat_mig *cat_gpu_mig(const cat_gpu *gpu, const char *name)
{
    for (uint32_t i = 0; i < gpu->n_mig; i++)
        if (!strcmp(gpu->mig[i].name, name))
            return &gpu->mig[i];
    return NULL;
}

/* One number of a [mig] value: a decimal integer in [lo, hi] ending at a blank or the end. */
static int mig_number(const char **p, unsigned lo, unsigned hi, unsigned *out)
{
    while (**p == ' ' || **p == '\t' || **p == ',')
        (*p)++;
    if (**p < '0' || **p > '9')
        return -1;
    char *end;
    unsigned long v = strtoul(*p, &end, 10);
    if (v < lo || v > hi || (*end && *end != ' ' && *end != '\t' && *end != ','))
        return -1;
    *p = end;
    *out = (unsigned)v;
    return 0;
}

/* [mig] PROFILE = COMPUTE MEMORY START...: the compute slices (of 7) and memory slices (of 8)
 * of the profile, then each memory slice an instance of it may start at. The profile's name
 * begins with its compute slices ("3g."), as NVIDIA names them. */
static int mig_entry(void *ud, const char *path, unsigned line, const char *rest,
                     const char *key, const char *value, ss_errbuf *eb)
{
    cat_gpu *g = ud;
    if (*rest)
        return ss_err(eb, SS_EPARSE, "%s:%u: mig%s.%s: unknown section [mig%s] (expected [mig])",
                      path, line, rest, key, rest);
    if (g->n_mig == CAT_MIG_MAX)
        return ss_err(eb, SS_EPARSE, "%s:%u: mig.%s: more than %d MIG profiles", path, line, key,
                      CAT_MIG_MAX);
    cat_mig *m = &g->mig[g->n_mig];
    memset(m, 0, sizeof *m);
    unsigned c = 0, mem = 0, st;
    char head[8];
    const char *p = value;
    int bad = strlen(key) >= sizeof m->name || !cat__valid_name(key, sizeof m->name) ||
              mig_number(&p, 1, CAT_MIG_COMPUTE, &c) || mig_number(&p, 1, CAT_MIG_MEMORY, &mem);
    snprintf(head, sizeof head, "%ug.", c);
    bad = bad || strncmp(key, head, strlen(head));
    while (!bad && *p) {
        if (mig_number(&p, 0, CAT_MIG_MEMORY - 1, &st) || st + mem > CAT_MIG_MEMORY)
            bad = 1;
        else
            m->starts |= 1u << st;
        while (*p == ' ' || *p == '\t')
            p++;
    }
    if (bad || !m->starts)
        return ss_err(eb, SS_EPARSE, "%s:%u: mig.%s: '%.60s' is not 'COMPUTE MEMORY START...' "
                      "(a profile named NgNAME with N of %d compute slices, of %d memory slices, "
                      "and the memory slices an instance may start at)", path, line, key, value,
                      CAT_MIG_COMPUTE, CAT_MIG_MEMORY);
    if (cat_gpu_mig(g, key))
        return ss_err(eb, SS_EPARSE, "%s:%u: mig.%s: set twice", path, line, key);
    memcpy(m->name, key, strlen(key) + 1);
    m->compute = c;
    m->memory = mem;
    g->n_mig++;
    return SS_OK;
}

int cat__gpu_read(void *dst, const char *path, unsigned *name_line, ss_errbuf *eb)
{
    cat_gpu *g = dst;
    memset(g, 0, sizeof *g);
    cat__ini_info info;
    cat__ini_hook hook = {.prefix = "mig", .fn = mig_entry, .ud = g};
    int rc = cat__ini_read_hooked(g, gpu_keys, N_GPU_KEYS, path, &hook, &info, eb);
    if (rc)
        return rc;
    *name_line = info.line[0];
    /* the index of nvlink_efficiency in gpu_keys, for its line */
    unsigned nv_line = 0;
    for (size_t i = 0; i < N_GPU_KEYS; i++)
        if (!strcmp(gpu_keys[i].key, "nvlink_efficiency"))
            nv_line = info.line[i];
    if (g->nvlink_bw > 0 && !nv_line)
        return ss_err(eb, SS_EPARSE, "%s: links.nvlink_efficiency: missing", path);
    if (!(g->nvlink_bw > 0) && nv_line)
        return ss_err(eb, SS_EPARSE, "%s:%u: links.nvlink_efficiency: set, but nvlink_gbps = 0 "
                      "(no NVLink: peers use PCIe, at pcie_efficiency)", path, nv_line);
    if (!g->description[0])
        memcpy(g->description, g->name, sizeof g->name);
    /* A GPU without NVLink (L40S) talks to its peers over PCIe: the intra-node fabric is
     * then the PCIe link, which keeps the cost model free of a special case. */
    g->has_nvlink = g->nvlink_bw > 0;
    if (!g->has_nvlink) {
        g->nvlink_bw = g->pcie_bw;
        g->nvlink_eff = g->pcie_eff;
    }
    return SS_OK;
}
