/* Hardware and model catalogs read from profiles/hardware and profiles/models (one .ini file
 * per entry). Each figure in those files carries its source in a comment. The catalog owns
 * every string and struct it returns; they stay valid until catalog_destroy. Not for
 * cost-model logic: cost/ turns these shapes into operator times. */
#ifndef SS_CATALOG_CATALOG_H
#define SS_CATALOG_CATALOG_H

/* part of the plug-in API (policy/plugin.h): visible to a plug-in the binary loads */
#pragma GCC visibility push(default)

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/ss_err.h"

#define CAT_NAME_MAX 48
/* Most decoder layers a model may have (the largest models have under 200). The bound keeps
 * layer counts times operator times inside ss_time. */
#define CAT_MAX_LAYERS 10000

/* MIG (Multi-Instance GPU): a GPU in MIG mode is cut into instances of fixed profiles, each a
 * number of its 7 compute slices (SMs) and 8 memory slices (memory, its controllers and L2),
 * placed at one of the memory slices the profile may start at (NVIDIA's MIG user guide,
 * "Supported MIG Profiles"; nvidia-smi mig -lgipp lists the placements). */
#define CAT_MIG_COMPUTE 7
#define CAT_MIG_MEMORY 8
#define CAT_MIG_MAX 12
typedef struct cat_mig {
    char name[16];       /* "3g.40gb" */
    uint32_t compute;    /* compute slices, of CAT_MIG_COMPUTE */
    uint32_t memory;     /* memory slices, of CAT_MIG_MEMORY */
    uint32_t starts;     /* bit k: an instance may start at memory slice k */
} cat_mig;

/* One GPU kind plus the node it usually sits in, and its kernel efficiencies. What the serving
 * engine adds (host time, launch floors, fusion, all-reduce efficiency) is in cat_engine. */
typedef struct cat_gpu {
    char name[CAT_NAME_MAX];  /* "a100-80g", "h100-sxm", "h200", "l40s" */
    char description[128];    /* human-readable, e.g. "NVIDIA A100 SXM4 80GB" */
    /* [gpu] */
    double peak_flops;        /* dense bf16/fp16 tensor-core FLOP/s (no sparsity) */
    double hbm_bytes;         /* device memory, bytes */
    double hbm_bw;            /* device memory bandwidth, bytes/s */
    uint32_t sm_count;        /* streaming multiprocessors */
    double l2_bytes;          /* L2 cache, bytes */
    /* [node] */
    uint32_t gpus_per_node;   /* GPUs sharing the intra-node fabric */
    double nvlink_bw;         /* per-GPU, per-direction intra-node bandwidth, bytes/s (PCIe if no NVLink) */
    int has_nvlink;           /* 0: the file set nvlink_gbps = 0 and nvlink_bw is pcie_bw */
    double pcie_bw;           /* host link per direction, bytes/s */
    double net_bw;            /* inter-node network per GPU, bytes/s */
    double link_latency_s;    /* one intra-node collective step's latency, s */
    double net_latency_s;     /* one inter-node message latency, s */
    double host_mem_bytes;    /* the node's host DRAM, bytes (0: not given; bounds a KV pool's
                                 CPU tier) */
    /* [links] the fraction of each link kind's peak a bulk copy attains, (0, 1]: what a KV
     * migration, a KV hand-off, a KV-pool load or offload and a SliceScheduler move get */
    double nvlink_eff;        /* intra-node link (pcie_eff when has_nvlink is 0) */
    double pcie_eff;          /* host link (GPU to host memory) */
    double net_eff;           /* inter-node network */
    /* [roofline] efficiency factors and floors used by the roofline cost model */
    double eff_compute;       /* achieved fraction of peak_flops on large GEMMs, (0, 1] */
    double eff_memory;        /* achieved fraction of hbm_bw on streaming kernels, (0, 1] */
    double eff_elementwise;   /* achieved fraction of hbm_bw by element-wise kernels (norms,
                                 rotary, activation, residual), (0, 1] */
    /* [mig] the MIG profiles it can be cut into (n_mig = 0: no MIG) */
    cat_mig mig[CAT_MIG_MAX];
    uint32_t n_mig;
    const char *path;         /* file it came from (owned) */
} cat_gpu;

/* How an engine's host work per iteration relates to the device work. */
typedef enum cat_overlap {
    CAT_OVERLAP_SERIAL = 0, /* eager engines: host, then device; iteration = host + device */
    CAT_OVERLAP_MAX = 1,    /* CUDA graphs + async scheduling: the host prepares step n+1 while
                               the device runs step n; iteration = max(host, device) */
} cat_overlap;

/* How an engine's all-reduce moves data between the n GPUs of a tensor-parallel group. Both
 * move 2(n-1)/n of the message per GPU; they differ in the steps that each pay a latency. */
typedef enum cat_allreduce {
    CAT_ALLREDUCE_RING = 0,    /* NCCL-style ring: reduce-scatter + all-gather, 2(n-1) steps */
    CAT_ALLREDUCE_TWOSHOT = 1, /* every GPU reads its peers' buffers directly (vLLM's custom
                                  all-reduce over NVLink): reduce-scatter and all-gather in
                                  one step each, 2 steps whatever n */
} cat_allreduce;

/* The engine's per-iteration host terms and kernel floor; per GPU where they differ. */
typedef struct cat_engine_host {
    double iter_fixed_s;      /* host time per iteration (scheduler, Python), s */
    double iter_per_seq_s;    /* per sequence in the batch, s */
    double iter_per_token_s;  /* per query token in the batch (input preparation), s */
    double op_floor_s;        /* shortest time of one kernel (launch + tail), s */
    double launch_s;          /* host time to launch one kernel, s: the device cannot run a
                                 step faster than its kernels are launched (eager engines);
                                 0 when CUDA graphs launch a step at once */
} cat_engine_host;

#define CAT_ENGINE_MAX_GPUS 16

/* A serving engine and version (profiles/engines): what the software adds to the hardware. */
typedef struct cat_engine {
    char name[CAT_NAME_MAX];  /* "vllm-eager" */
    char description[128];    /* human-readable */
    char overlap_name[CAT_NAME_MAX]; /* "serial" | "max" as written */
    cat_overlap overlap;      /* from overlap_name */
    cat_engine_host host;     /* [host]: defaults for every GPU */
    int fuse_add_norm;        /* 1: residual add + RMSNorm is one kernel (one pass) */
    int fuse_silu_mul;        /* 1: SiLU-and-multiply is one kernel (else silu, then mul) */
    double moe_eff;           /* achieved fraction of the roofline by MoE expert GEMMs, (0, 1] */
    double attn_speed;        /* attention kernels' speed relative to the GPU's roofline
                                 efficiencies (> 0; 1 = as fast as its GEMMs) */
    int async_scheduling;     /* 1: the batch of step n+1 is chosen while step n runs, so a
                                 request arriving during a step is scheduled one step later */
    char allreduce_name[CAT_NAME_MAX]; /* "ring" | "twoshot" as written */
    cat_allreduce allreduce;  /* from allreduce_name */
    double allreduce_eff;     /* achieved fraction of the intra-node link in all-reduce, (0, 1] */
    double allreduce_hop_s;   /* software latency per synchronisation step, added to the
                                 link's, s */
    double frontend_s;        /* API server latency added to client-side TTFT and E2E, s */
    uint32_t n_gpus;          /* [gpu.NAME] override sections */
    struct {
        char gpu[CAT_NAME_MAX];   /* GPU name (one not in the catalog is warned about) */
        cat_engine_host host;     /* the [host] values with this section's keys applied */
        unsigned line;            /* line of the section's first key in path; 0 when the
                                     engine was not read from a file */
    } per_gpu[CAT_ENGINE_MAX_GPUS];
    const char *path;         /* file it came from (owned) */
} cat_engine;

/* The engine everything defaults to: today's vLLM, fitted to measured serving runs. */
#define CAT_ENGINE_DEFAULT "vllm-0.15"
/* The 2023-style eager engine: it reproduces the cost model from before engine profiles
 * existed, and it is how operators run one kernel launch at a time (operator profiles, the
 * GPU executor). */
#define CAT_ENGINE_EAGER "vllm-eager"

/* A decoder-only transformer's shape. */
typedef struct cat_model {
    char name[CAT_NAME_MAX];  /* "llama-2-7b", ... */
    char description[128];    /* e.g. "Meta Llama 2 7B" */
    uint32_t layers;          /* decoder layers */
    uint32_t hidden;          /* model width */
    uint32_t heads;           /* query heads */
    uint32_t kv_heads;        /* key/value heads (GQA: < heads) */
    uint32_t head_dim;        /* per head */
    uint32_t ffn;             /* intermediate size of one (expert) MLP */
    uint32_t vocab;           /* vocabulary size */
    uint32_t experts;         /* MoE experts per layer; 0 or 1 = dense */
    uint32_t top_k;           /* experts per token (MoE); 0 for dense */
    uint32_t max_context;     /* trained context window, tokens */
    uint32_t dtype_bytes;     /* bytes per weight and KV element (2 for bf16/fp16) */
    int gated_mlp;            /* 1 = SwiGLU (gate+up+down), 0 = up+down */
    int tied_embeddings;      /* 1 = LM head shares the embedding matrix */
    const char *path;         /* file it came from (owned) */
} cat_model;

typedef struct catalog catalog;

/* Load every *.ini under dir/hardware, dir/models and dir/engines (dir is usually profiles/).
 * Errors (unreadable file, unknown section or key, bad number, missing required key,
 * duplicate name) return SS_EIO / SS_EPARSE with "FILE:LINE: key: what is wrong" in eb;
 * nothing is returned on failure. Hidden files and names not ending in .ini are skipped;
 * entries are kept in strcmp order of their names. Out of memory gives SS_ENOMEM. dir and eb
 * are borrowed; on success *c_out is owned by the caller (catalog_destroy). The file format
 * is documented in profiles/README.md. A FIFO, device or folder named like a profile is
 * SS_EPARSE "FILE: not a regular file". An engine's [gpu.NAME] section for a GPU not in the
 * catalog is no error, but is warned about on stderr (ss_warn: "FILE:LINE: [gpu.NAME]:
 * unknown GPU 'NAME' (known: ...); its host terms apply to no GPU"). */
int catalog_load(catalog **c_out, const char *dir, ss_errbuf *eb);
/* Free the catalog and everything it returned; accepts NULL and sets *c = NULL. */
void catalog_destroy(catalog **c);

/* Look up by name (exact, case-sensitive). NULL when unknown. Borrowed. */
const cat_gpu *catalog_gpu(const catalog *c, const char *name);
/* gpu's MIG profile `name` ("3g.40gb"), or NULL. */
const cat_mig *cat_gpu_mig(const cat_gpu *gpu, const char *name);
const cat_model *catalog_model(const catalog *c, const char *name);
/* Like the above but on failure return SS_ENOTFOUND with "unknown GPU 'x' (known: a, b, c)"
 * in eb. */
int catalog_gpu_find(const catalog *c, const char *name, const cat_gpu **out, ss_errbuf *eb);
int catalog_model_find(const catalog *c, const char *name, const cat_model **out, ss_errbuf *eb);
/* Engines: as for GPUs ("unknown engine 'x' (known: ...)"). */
const cat_engine *catalog_engine(const catalog *c, const char *name);
int catalog_engine_find(const catalog *c, const char *name, const cat_engine **out,
                        ss_errbuf *eb);
size_t catalog_n_engines(const catalog *c);
const cat_engine *catalog_engine_at(const catalog *c, size_t i);
/* Put a copy of engine e into the catalog: it replaces the engine of the same name, or is
 * inserted in name order. The catalog copies e and e->path (NULL is kept as NULL); e is
 * borrowed. Pointers to the catalog's engines obtained earlier are invalidated. 0; SS_EINVAL
 * when e's name is not a catalog name; SS_ENOMEM, with the catalog unchanged. For candidate
 * engines that are tried without writing a profile (slicesim fit). */
int catalog_engine_put(catalog *c, const cat_engine *e, ss_errbuf *eb);
/* Read the engine profile at path (the profiles/engines/NAME.ini format) into the catalog, as
 * if it were in its engines folder. A file the catalog holds already (the shipped profile
 * named by its path, say) is not added again; an engine of the same name from another file is
 * an error, "PATH:LINE: engine.name: engine 'x' is already defined in OTHER" (SS_EINVAL), as
 * are the file's own errors (SS_EPARSE, SS_EIO). Pointers to the catalog's engines obtained
 * earlier are invalidated. */
int catalog_engine_load(catalog *c, const char *path, ss_errbuf *eb);
/* The engine the catalog read from path (the same string catalog_engine_load was given or its
 * engines folder's listing made, else the same file by another name), or NULL. */
const cat_engine *catalog_engine_from(const catalog *c, const char *path);
/* Write e as a profile file (profiles/engines/NAME.ini format, every key, each [gpu.NAME]
 * section with all of its keys) that loads back to the same values: numbers are written in
 * the shortest text that reads back exactly. header_comment (NULL: none; may hold several
 * lines) goes first, each line as "; " comments, long lines wrapped at blanks (every line of
 * the file stays within the reader's 199 characters). Semicolons and line breaks of the
 * description become commas and spaces. 0, SS_EINVAL for NULL arguments, or SS_EIO when the
 * stream is in error (the caller checks the file when it closes it). */
int cat_engine_write(FILE *f, const cat_engine *e, const char *header_comment);
/* The host terms of engine e on the GPU named gpu: its [gpu.NAME] section, else [host]. */
const cat_engine_host *cat_engine_host_for(const cat_engine *e, const char *gpu);

/* One number of an engine profile and its documented range (profiles/README.md), which the
 * loader enforces ("FILE:LINE: section.key: out of range [lo, hi]"). */
typedef struct cat_engine_term {
    const char *section; /* "host", "kernels", "allreduce" or "frontend" (static) */
    const char *key;     /* as written in a file: "iter_fixed_us" (static) */
    double lo, hi;       /* the range of the value as written, in the key's unit, inclusive */
    double scale;        /* the cat_engine field holds the value times scale (1e-6 for _us) */
    size_t off;          /* offsetof(cat_engine, field) of that double */
    int per_gpu;         /* 1: a [host] term, which each [gpu.NAME] section may set too; in
                            cat_engine_host at off - offsetof(cat_engine, host) */
} cat_engine_term;

/* The number of engine-profile terms. */
size_t cat_engine_n_terms(void);
/* Term i (0 <= i < cat_engine_n_terms(), in the order a profile lists them) into *out: 0, or
 * SS_EINVAL past the last (*out unchanged). */
int cat_engine_term_get(size_t i, cat_engine_term *out);
/* Iteration in name order. */
size_t catalog_n_gpus(const catalog *c);
const cat_gpu *catalog_gpu_at(const catalog *c, size_t i);
size_t catalog_n_models(const catalog *c);
const cat_model *catalog_model_at(const catalog *c, size_t i);

/* Derived model figures. */
/* Total parameters (embeddings, attention, MLP or all experts, norms, LM head unless tied). */
double cat_model_params(const cat_model *m);
/* Bytes of KV cache per token summed over layers (K and V), for the whole model. */
double cat_model_kv_bytes_per_token(const cat_model *m);

/* Locate the profiles directory: the explicit path if given, else $SLICESIM_PROFILES, else
 * ./profiles if it exists, else the source tree's profiles/ (compiled in). Borrowed string. */
const char *catalog_default_dir(const char *explicit_dir);

#pragma GCC visibility pop

#endif
