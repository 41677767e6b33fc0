/* Hardware profiles (profiles/hardware, one .ini file per GPU): the accepted keys, their units
 * and their conversion to SI in cat_gpu. Not for loading directories or lookups (catalog.c)
 * nor for what the figures mean to a cost model (cost/). */
#include "catalog/catalog_int.h"

#include <stddef.h>
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

int cat__gpu_read(void *dst, const char *path, unsigned *name_line, ss_errbuf *eb)
{
    cat_gpu *g = dst;
    memset(g, 0, sizeof *g);
    cat__ini_info info;
    int rc = cat__ini_read(g, gpu_keys, N_GPU_KEYS, path, &info, eb);
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
