/* The global simulator: drives the DES engine over the Global Mapping Graph with the cost
 * model and the policies. It admits requests from a source as their arrival times come,
 * routes them, asks each container's batching policy for its next iteration, validates and
 * applies the decision, and times the iteration with the cost model (one event per iteration:
 * the fast path). Finished and rejected requests go to a sink (the results store).
 * Not for I/O: sources and sinks are callbacks supplied by its caller (runner/, calib/). */
#ifndef SS_GSIM_GSIM_H
#define SS_GSIM_GSIM_H

#include <stddef.h>
#include <stdint.h>

#include "catalog/catalog.h"
#include "core/ss_err.h"
#include "core/ss_limits.h"
#include "core/ss_params.h"
#include "core/ss_strbuf.h"
#include "des/des.h"
#include "gmg/gmg.h"
#include "metrics/metrics.h"
#include "policy/policy.h"
#include "trace/trace.h"

/* SLA of one tier; 0 means no bound. */
typedef struct gsim_sla {
    ss_time ttft;     /* time to first token */
    ss_time tbt_p99;  /* p99 of the request's own inter-token gaps */
    ss_time e2e;      /* end to end */
} gsim_sla;

/* How a tenant's containers hold their GPU (docs/guide/gpu-sharing.md): whole GPUs (kind
 * GMG_SHARE_NONE, all zero), or each container (tp = pp = 1) a share of one physical GPU with
 * other containers: a MIG instance of a profile, an MPS client with an SM share, or a
 * time-sliced context. */
typedef struct gsim_share {
    int kind;               /* GMG_SHARE_* */
    const cat_mig *mig;     /* MIG: the profile (borrowed from the cluster's GPU) */
    double sm;              /* MPS: the SM share, (0, 1] (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE / 100) */
    double mem_bytes;       /* MPS, time: each container's memory (0: the SM share of the GPU's
                               memory under MPS, half of it under time slicing); MIG: the
                               profile's, this must be 0 */
    const uint32_t *gpus;   /* borrowed: the shared GPU (0-based, counting the cluster's shared
                               GPUs) each replica runs on, n_gpus = replicas of them; NULL:
                               first fit, in tenant order */
    uint32_t n_gpus;
} gsim_share;

/* Parse a share as a scenario writes it, "mig:PROFILE" (one of gpu's [mig] profiles),
 * "mps:F" (an SM share in (0, 1]) or "time", into *out (its mem_bytes and gpus left 0).
 * 0, or SS_EINVAL with what is accepted in eb. */
int gsim_share_parse(const char *text, const cat_gpu *gpu, gsim_share *out, ss_errbuf *eb);
/* The memory a share must have to hold model m with a KV pool at least as large as its
 * weights: twice the weights plus runtime_reserve, over gpu_mem_util (bytes). A multiplexed
 * container's default memory, and the smallest share the sharing bundles give a tenant. */
double gsim_share_need(const cat_model *m, double runtime_reserve, double gpu_mem_util);
/* The words of a share ("mig:3g.40gb", "mps:0.4", "time", "whole") into buf. */
void gsim_share_format(const gsim_share *sh, char *buf, size_t n);

/* The defaults of GPU sharing at run time (docs/guide/gpu-sharing.md says why these):
 * - MPS clients are charged their SM caps and their share of the memory bandwidth; no further
 *   interference by default, as no published figure for LLM kernels separates one from the
 *   bandwidth contention (the GPU check's co-location run measures it);
 * - NVIDIA does not publish the time slice's length or a switch's cost: 2 ms is the shortest
 *   setting of nvidia-smi compute-policy --set-timeslice as commonly reported, 40 us the order of
 *   a compute preemption on datacenter GPUs (GPREEMPT, USENIX ATC 2025). */
#define GSIM_MPS_INTERFERENCE 0.0
#define GSIM_TIMESLICE_NS (2 * SS_NS_PER_MS)
#define GSIM_CTX_SWITCH_NS (40 * SS_NS_PER_US)

/* A tenant: a model served by its own containers, with an SLA per tier. */
typedef struct gsim_tenant {
    const char *name;           /* borrowed */
    const cat_model *model;     /* borrowed */
    const cat_engine *engine;   /* serving engine (borrowed); NULL: gsim_config.engine */
    uint32_t tp, pp;            /* per container */
    uint32_t replicas;          /* containers it starts with */
    uint32_t max_replicas;      /* most it may own (re-allocation, auto-scaling); >= replicas */
    uint32_t tiers;             /* K; a request's tier is clamped to K - 1 */
    gsim_sla sla[SS_MAX_TIERS];
    /* Disaggregated prefill and decode (both pools > 0; replicas and max_replicas then count
     * both pools' instances): a request is prefilled on one of prefill_replicas instances of
     * prefill_tp GPUs, its KV moves to one of decode_replicas instances of decode_tp GPUs,
     * which decodes it. 0, 0: co-located serving. */
    uint32_t prefill_replicas, decode_replicas;
    uint32_t prefill_tp, decode_tp; /* 0: tp */
    int kv_transfer;            /* GSIM_KV_LAYER (default) or GSIM_KV_END */
    gsim_share share;           /* whole GPUs (all zero) or a share of one per container */
} gsim_tenant;

/* How a disaggregated tenant's KV leaves the prefill instance. */
enum {
    GSIM_KV_LAYER = 0, /* layer by layer during the prefill: only the last layer's share and any
                          excess of the transfer over the remaining layers' compute is exposed */
    GSIM_KV_END,       /* the whole KV after the prefill ends */
};

/* Whether tenant t serves from separate prefill and decode pools. */
static inline int gsim_tenant_disagg(const gsim_tenant *t)
{
    return t->prefill_replicas > 0 && t->decode_replicas > 0;
}

/* The KV pool below the prefix caches (gsim_kvpool.c; docs/guide/prefix-caching.md): a block a
 * GPU cache evicts goes to its node's CPU tier, then its SSD tier; a request whose chain goes
 * on past its GPU-cache match loads the blocks found there when that is quicker than computing
 * them. Off (every field 0) by default. */
typedef struct gsim_kvpool_cfg {
    double cpu_bytes;       /* CPU DRAM tier per node, bytes (0: no pool) */
    double cpu_bw;          /* host link per GPU and direction, bytes/s (0: the GPU's pcie_bw) */
    double cpu_latency_s;   /* per load over the host link, s */
    double ssd_bytes;       /* SSD tier per node, bytes (0: none) */
    double ssd_bw;          /* a node's SSD read bandwidth, bytes/s (> 0 with an SSD tier) */
    double ssd_latency_s;   /* per load from an SSD, s */
    int cluster;            /* 1: one pool over every node's tiers (a block on another node
                               comes over the network); 0: each node's pool serves its GPUs */
    int free_offloads;      /* 1: a block's copy out to the pool is not charged (the model
                               before offloads held the host link); 0: it holds it */
} gsim_kvpool_cfg;

typedef struct gsim_config {
    const gsim_tenant *tenants; /* borrowed; n_tenants of them. When n_tenants is 0, one tenant
                                   "default" is made from model, tp, pp and replicas, no SLA */
    uint32_t n_tenants;
    uint32_t nodes;             /* cluster size in nodes (0: as many as the containers need) */
    uint32_t gpus_per_node;     /* 0: the GPU catalog's */
    ss_time warmup;             /* requests arriving earlier are simulated but not measured */
    const cat_model *model;     /* single-tenant shortcut (see tenants) */
    const cat_gpu *gpu;         /* borrowed */
    const cat_engine *engine;   /* serving engine of tenants that name none (borrowed); required */
    uint32_t replicas;          /* serving instances, each tp x pp GPUs */
    uint32_t tp;                /* tensor-parallel degree per replica */
    uint32_t pp;                /* pipeline stages per replica (each runs pp virtual engines) */
    const char *batching;       /* "vllm" */
    const char *cluster;        /* cluster policy: "container" (default) */
    const char *routing;        /* "rr", "lor", ...; NULL: the cluster policy's default */
    const char *cost;           /* "roofline" */
    const char *profiles_dir;   /* catalog directory (borrowed), for profile-table costs */
    ss_params *params;          /* batching and routing parameters (borrowed; unread keys are
                                   an error at create) */
    uint64_t seed;              /* seeds every policy's rng stream */
    double gpu_mem_util;        /* vLLM gpu_memory_utilization, (0, 1] */
    uint32_t block_tokens;      /* tokens per KV block */
    uint64_t max_model_len;     /* longest prompt + output accepted */
    double runtime_reserve;     /* bytes per GPU kept for CUDA context and workspaces */
    double swap_bytes;          /* host swap space per GPU for preemption by swap, bytes */
    int check;                  /* verify every invariant after every event (slower; the
                                   default is on in debug builds, see gsim_config_defaults) */
    int no_steady;              /* take every iteration the long way: ask the batching policy
                                   even when its steady hook says what it would decide (for
                                   checking that the fast path changes nothing; the environment
                                   variable SLICESIM_NO_STEADY=1 sets it, gsim_config_defaults) */
    ss_time guest_overrun;      /* a guest chunk placed in a host phase may end this long after
                                   it (delaying the host's compute); default 1 ms */
    const char *ops;            /* placement policy (pol_place_ops): "home" (default: every
                                   operator on its container's GPUs), "slice" (SliceScheduler),
                                   "greedy" */
    int guest_weights;          /* how an offloaded prefill gets its weights: POL_WEIGHTS_*
                                   (a placement policy's mechanism settings replace it,
                                   guest_overrun and the offload costs when it has them) */
    /* The costs of an offload (a placement policy's mechanism settings replace them; the
     * defaults, 0, 0, 1 and 1, charge none of them): */
    double guest_host_factor;   /* the guest's host phase before its first chunk, in units of
                                   home's per-iteration host time for a one-request prefill */
    ss_time whatif_ns;          /* decision latency per what-if a placement tick ran */
    double guest_link_eff;      /* fraction of peak link bandwidth for offload transfers (0:
                                   the link's, gsim_link_eff) */
    double guest_interference;  /* a guest chunk placed in the helper's host phase runs this
                                   many times its alone time (>= 1) */
    /* What a what-if fork knows (a placement policy's mechanism settings replace them; the
     * defaults, oracle and 0, know the true output lengths and costs): */
    pol_predictor whatif_pred;  /* the output lengths a fork gives the requests in flight */
    double whatif_cost_error;   /* a fork's iteration costs are the cost model's times 1 + this */
    int prefix_cache;           /* automatic prefix caching: GSIM_PREFIX_* */
    int no_prefix_ceiling;      /* do not keep the prefix-caching ceiling (gsim_ceiling_kept) */
    gsim_kvpool_cfg kvpool;     /* the KV pool below the prefix caches (off: all 0) */
    /* GPU sharing at run time (docs/guide/gpu-sharing.md): */
    double mps_interference;    /* MPS clients whose steps overlap each run this much slower
                                   beyond their memory-bandwidth share (0.05: 5 %) */
    ss_time timeslice;          /* time slicing: each context's turn on the GPU */
    ss_time ctx_switch;         /* time slicing: the cost of a switch between contexts */
    double link_eff[GMG_LINK_KINDS]; /* per gmg_link_kind, the fraction of the link's peak a
                                        bulk copy attains; 0 (the default): the GPU profile's
                                        [links] figure (gsim_link_eff) */
} gsim_config;

/* The fraction of a link's peak bandwidth that a bulk copy over a link of kind `kind` attains
 * in a run with cfg: cfg->link_eff[kind] when set, else cfg->gpu's [links] figure (the intra-node
 * link of a GPU without NVLink is PCIe). The one source of every copy's efficiency: live
 * migration, the KV hand-off of disaggregated serving, the KV pool's loads and offloads, KV
 * swaps and a placement policy's moves (unless its own slice_link_eff overrides it). */
double gsim_link_eff(const gsim_config *cfg, gmg_link_kind kind);

/* Automatic prefix caching (vLLM's default). */
enum {
    GSIM_PREFIX_OFF = 0, /* no cache: every prefill computes its whole prompt */
    GSIM_PREFIX_ON,      /* a cache per container from the start */
    GSIM_PREFIX_AUTO,    /* on from the first request that carries a prefix identity (Mooncake
                            hash_ids, a native session_id): a trace without any runs as off */
};


/* What the placement policy did in a run (all zero under "home" placement). */
typedef pol_place_stats slice_stats;

/* Fill cfg with the defaults (vllm batching, the cluster policy's routing, container cluster,
 * roofline, util 0.9, 16-token blocks, max_model_len 16384, 1 GiB runtime reserve, 4 GiB swap
 * space per GPU, seed 1, 1 replica, TP 1, PP 1; check on in a debug build: buildtype=debug
 * without NDEBUG). */
void gsim_config_defaults(gsim_config *cfg);

/* Request source: next request into *out; arrivals must not decrease. 1 = a request, 0 = no
 * more, <0 = error (eb set), which stops the run. */
typedef int gsim_source_fn(void *ud, trace_rec *out, ss_errbuf *eb);
/* Sink: one call per finished or rejected request; a non-zero return stops the run. */
typedef int gsim_sink_fn(void *ud, const metrics_req *r, ss_errbuf *eb);
/* Progress: called every few hundred thousand events. */
typedef void gsim_progress_fn(void *ud, ss_time now, uint64_t arrived, uint64_t finished,
                              uint64_t events);

typedef struct gsim gsim;

/* Build the cluster and policies. 0, or SS_EINVAL / SS_ENOTFOUND / SS_ENOMEM with eb set. */
int gsim_create(gsim **g_out, const gsim_config *cfg, ss_errbuf *eb);
/* Whether cfg's shares fit the GPUs they are laid out on (gsim_create makes the same check):
 * 0, or SS_EINVAL with eb set and *bad_tenant the index of the tenant whose share does not fit
 * (its key is where the scenario should be blamed). */
int gsim_share_check(const gsim_config *cfg, uint32_t *bad_tenant, ss_errbuf *eb);
/* The slow-down (its time over its alone time) of step i of n steps that run beside one
 * another throughout on one GPU shared by `kind` (GMG_SHARE_MPS, _TIME, _MUX), under cfg's
 * mps_interference, timeslice and ctx_switch: mu[j] the part of step j's alone time that the
 * memory term sets, prefill[j] whether it computes prompt tokens. The run-time model of
 * docs/guide/gpu-sharing.md, for `slicesim validate --colocate` to compare with a GPU. */
double gsim_share_slowdown(const gsim_config *cfg, int kind, const double *mu,
                           const uint8_t *prefill, uint32_t n, uint32_t i);
/* gsim_share_check, and the number of physical GPUs the shares take into *n (0: none). */
int gsim_share_gpus(const gsim_config *cfg, uint32_t *n, uint32_t *bad_tenant, ss_errbuf *eb);
/* Free g and everything it owns (NULL-safe; *g set to NULL). A fork that ran without error
 * becomes one of its replay's spares instead while it has room for one (gsim_release_spare). */
void gsim_destroy(gsim **g);
/* Replay every request of src to completion. 0, or the first error from the source, the sink
 * or the invariant checks (SS_ECHECK: --check after every event, and the conservation of
 * requests at the end), with eb set. */
int gsim_run(gsim *g, gsim_source_fn *src, void *src_ud, gsim_sink_fn *sink, void *sink_ud,
             ss_errbuf *eb);
void gsim_set_progress(gsim *g, gsim_progress_fn *fn, void *ud);

/* The same replay in steps: gsim_run is gsim_start, gsim_advance(SS_TIME_MAX) and
 * gsim_finish. gsim_start installs the source and sink and schedules the first arrival;
 * gsim_advance dispatches every event at or before `until` (the clock stays at the last one);
 * gsim_finish closes the idle slices, flushes the metrics and (for a replay, not a fork)
 * checks that every request arrived has finished. Each returns 0 or the first error. */
int gsim_start(gsim *g, gsim_source_fn *src, void *src_ud, gsim_sink_fn *sink, void *sink_ud,
               ss_errbuf *eb);
int gsim_advance(gsim *g, ss_time until, ss_errbuf *eb);
int gsim_finish(gsim *g);

/* The offload mechanism placement policies use: prefill waiting request slot r (fresh: nothing computed, never
 * preempted) of its container on the GPUs of container `helper` (active, same TP degree, no
 * pipeline, no other guest), in their idle time. r leaves its queue and holds its prompt's KV
 * blocks at home; the prefill runs chunk by chunk (embedding, each layer, final norm and LM
 * head) whenever the helper's GPUs idle (between its iterations, one chunk at a time, or in
 * its host phases, chunks that end at most cfg.guest_overrun after the phase), each chunk's
 * weights streamed from home over the link ahead of it and each layer's KV sent home after
 * it; then r rejoins home's running requests with its first token. `predicted` (0: none) is
 * the first-token time a what-if predicted, for the prediction-error figure. 0, or SS_EINVAL
 * (with the reason: not eligible, home lacks the KV blocks, a helper GPU lacks spare memory
 * for the job's buffers) or SS_ENOMEM. */
int gsim_offload(gsim *g, gmg_id r, gmg_id helper, ss_time predicted, ss_errbuf *eb);
/* Whether the batching policy could take waiting request slot r back after a remote prefill
 * (static batching never can; Orca while its batch has room). */
int gsim_offload_allowed(const gsim *g, gmg_id r);
/* gsim_offload's checks alone: 0 when it would accept the move now, else SS_EINVAL and why. */
int gsim_offload_check(const gsim *g, gmg_id r, gmg_id helper, ss_errbuf *eb);
/* The placement policy's figures for the run (NULL under "home" placement, which never
 * ticks), and its name. */
const slice_stats *gsim_slice_stats(const gsim *g);
const char *gsim_placement_name(const gsim *g);
/* What the placement policy's what-ifs know: their output-length predictor and cost error
 * (oracle and 0 without a placement policy that asks what-ifs). */
void gsim_whatif_knowledge(const gsim *g, pol_predictor *pred_out, double *cost_error_out);
/* The output lengths of tenant t's requests finished so far in the replay, as the predictor
 * reads them (borrowed; empty unless the predictor is mean or quantile; NULL for no tenant t). */
const ss_hist *gsim_finished_lengths(const gsim *g, uint32_t t);

/* Whether container c's GPUs run an offloaded prefill now. */
int gsim_has_guest(const gsim *g, gmg_id c);
/* A counter bumped whenever something from outside container c's own evolution reaches it (an
 * arrival, an offload, a migration stage, a cluster action): a what-if of c taken at an earlier
 * epoch no longer predicts it. */
uint64_t gsim_ctr_epoch(const gsim *g, gmg_id c);
/* The METRICS_SLA_* bounds request q has broken by `now` for good: its first token later than
 * its TTFT bound (or not there yet and already too late), its end-to-end bound passed, or more
 * of its inter-token gaps over the TBT bound than the 1 % its full output may leave. */
uint8_t gsim_req_sla_so_far(const gmg_req *q, ss_time now);

/* What-if: an independent copy of g in which the containers ctrs[0..n-1] continue from g's
 * present with the same engine, batching policy and cost models, but no new arrivals and no
 * cluster-policy decisions; it holds the requests of those containers and of every container
 * linked to them through offloads in flight, home or helper, transitively (a linked container
 * runs again when its moved request comes home, and with it the guest it hosts); every other
 * container stays frozen as it is, without its requests. Run it with
 * gsim_advance; finished requests go to sink (may be NULL), and gsim_graph, an observer and
 * the idle slices of gsim_metrics show the predicted state (its metrics keep counters and
 * slices alone, metrics_init_counters: the sink's records and the requests in gsim_graph are
 * the predictions). When nothing reaches those containers in g over the
 * same span, g's own outcome is identical to the fork's prediction. The fork borrows g's
 * policy and cost models: destroy it before g. Containers with a live migration in flight, and a run with a
 * disaggregated tenant (separate prefill and decode pools),
 * cannot be forked (SS_EINVAL). 0, SS_EINVAL or SS_ENOMEM with eb set. */
int gsim_fork(const gsim *g, const gmg_id *ctrs, uint32_t n, gsim_sink_fn *sink, void *sink_ud,
              gsim **out, ss_errbuf *eb);
/* The forks of g destroyed last (gsim_destroy, a few) keep their memory for g's next forks to
 * reuse until g is destroyed: release it now. */
void gsim_release_spare(gsim *g);

const metrics *gsim_metrics(const gsim *g);
/* Tenants of the run (1 with the single-tenant shortcut): count, name, configuration. */
uint32_t gsim_n_tenants(const gsim *g);
/* Names of the routing and cluster policies in use. */
const char *gsim_routing_name(const gsim *g);
const char *gsim_cluster_name(const gsim *g);
const char *gsim_tenant_name(const gsim *g, uint32_t i);
const gsim_tenant *gsim_tenant_at(const gsim *g, uint32_t i);
const gmg *gsim_graph(const gsim *g);
const des_stats *gsim_des_stats(const gsim *g);
/* Simulated time of the last event. */
ss_time gsim_end_time(const gsim *g);
uint64_t gsim_iterations(const gsim *g);
/* Of them, the steps whose decodes a decode cohort advanced without touching them (gsim's
 * fast path for mixed steps; a measure of the path taken, never part of a result). */
uint64_t gsim_cohort_steps(const gsim *g);
/* The limits a prompt is rejected against: the engine's max_model_len (METRICS_REJ_TOO_LONG)
 * and the most tokens one iteration of the batching policy holds (METRICS_REJ_BATCH_TOKENS). */
uint64_t gsim_max_model_len(const gsim *g);
uint64_t gsim_max_batch_tokens(const gsim *g);
/* Resolved parameters (engine, batching, routing) as a JSON object into b. */
void gsim_params_json(const gsim *g, ss_strbuf *b);

/* What happened to a request, for observers (timelines, tests). */
typedef enum gsim_req_event {
    GSIM_REQ_PREEMPT,  /* preempted by recompute */
    GSIM_REQ_SWAP_OUT, /* preempted by swap */
    GSIM_REQ_SWAP_IN,  /* swapped back in */
    GSIM_REQ_REJECT,   /* rejected (never fits, too long, or the livelock guard) */
    GSIM_REQ_FINISH,   /* produced its last token */
} gsim_req_event;

/* Optional callbacks; each may be NULL. They see the state read-only, after the change. */
typedef struct gsim_observer {
    /* An iteration of c starts; c->iter describes it and its end time is known. On a GPU shared
     * by MPS or time slicing, whose steps' ends move with the others', it is called when the
     * iteration ends instead, its end then known (c->iter.alone_ns and shared_with say how it
     * shared). */
    void (*on_iter)(void *ud, const gmg *g, const gmg_container *c);
    /* Request r of container c changed state at simulated time now. */
    void (*on_request)(void *ud, const gmg *g, const gmg_container *c, const gmg_req *r,
                       gsim_req_event what, ss_time now);
    /* A chunk of request r's offloaded prefill (0: embedding, 1..L: decoder layer k - 1, L + 1:
     * final norm and LM head, of n in all) is placed on the GPUs of container helper over
     * [start, end); weights_at is when its weights were in place. */
    void (*on_guest)(void *ud, const gmg *g, const gmg_container *helper, const gmg_req *r,
                     uint32_t chunk, uint32_t n, ss_time start, ss_time end, ss_time weights_at);
    /* Request r's KV (bytes in all) moves from prefill instance `from` to decode instance `to`,
     * occupying their GPUs' link ports over [start, end); it lands at end. */
    void (*on_kv_transfer)(void *ud, const gmg *g, const gmg_container *from,
                           const gmg_container *to, const gmg_req *r, double bytes,
                           ss_time start, ss_time end);
    void *ud;
} gsim_observer;

/* What a GPU did in the run: the simulator's statistics of it (the graph holds its state). */
typedef struct gsim_gpu_stats {
    ss_time busy_ns;        /* executing iterations (host phases included) */
    uint64_t iterations;    /* iterations executed */
    ss_time dev_busy_ns;    /* compute time: iterations minus their host phases */
    ss_time dev_free;       /* end of its last compute phase (the open idle slice's start) */
    uint64_t idle_slices;   /* idle slices recorded (within the measurement window) */
    ss_time idle_ns;        /* their summed length */
    ss_time host_ns;        /* the part of them in its container's host phases */
    ss_time host_from, host_to; /* the latest host phase opening an iteration on it */
    ss_time guest_ns;       /* compute time of other containers' offloaded prefills */
} gsim_gpu_stats;

/* GPU `gpu`'s statistics (a fork's start from its parent's); NULL for no such GPU. */
const gsim_gpu_stats *gsim_gpu_stats_at(const gsim *g, gmg_id gpu);

/* Container c's prefix-cache record: the lookups at its measured requests' first admissions
 * and every admission's saved tokens (as the tenants' counters count them, so the containers of
 * a tenant that kept its containers add up to it), and, after gsim_finish, the blocks its
 * cache evicted since it was last (re)loaded. NULL for no such container; all zero with
 * caching off. */
const metrics_prefix *gsim_ctr_prefix(const gsim *g, gmg_id c);
/* Distinct block hashes in tenant t's ceiling set (the unbounded shared cache; 0 with caching
 * off, with the ceiling off, or for no such tenant): the set costs 8 bytes per block, plus
 * about 40 per branch (a run of one chain's positions that no earlier chain had). */
uint64_t gsim_ceiling_blocks(const gsim *g, uint32_t t);
/* Whether the run keeps the ceiling (cfg.no_prefix_ceiling unset); when not, it reads 0. */
int gsim_ceiling_kept(const gsim *g);

/* Install observer callbacks (copied); NULL removes them. */
void gsim_set_observer(gsim *g, const gsim_observer *obs);
/* The observer callbacks installed (all NULL when none), so that a second observer may wrap
 * them and call them in turn. */
gsim_observer gsim_get_observer(const gsim *g);

#endif
