/* Scheduling policy plug-ins. Two decision points exist so far:
 *  - routing (global): which container gets a newly arrived request;
 *  - batching (per container): which requests run in the container's next iteration, which
 *    running requests are preempted first, and which waiting requests can never be served.
 * Policies read the cluster (const gmg *) and fill a decision; gsim/ validates and applies it.
 * A policy never mutates the cluster and draws randomness only from the ss_rng it is given. */
#ifndef SS_POLICY_POLICY_H
#define SS_POLICY_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "core/ss_err.h"
#include "core/ss_params.h"
#include "core/ss_rng.h"
#include "cost/cost.h"
#include "gmg/gmg.h"

#define POL_ABI_VERSION 1

/* Engine-wide limits every batching policy must respect, fixed per run. */
typedef struct pol_engine_cfg {
    uint64_t max_model_len; /* longest sequence (prompt + output) the engine accepts */
} pol_engine_cfg;

/* ---- routing ---------------------------------------------------------------------------- */

typedef struct pol_route_ops {
    uint32_t abi_version;   /* POL_ABI_VERSION */
    const char *name;       /* "rr", "lor"; selected by --routing */
    const char *summary;    /* one line for --help */
    const char *const *params; /* NULL-terminated names of the parameters it reads, or NULL */
    size_t priv_size;       /* zeroed bytes allocated with the instance */
    /* Optional. Read parameters; cluster is the run's cluster policy name. 0 or <0 with eb
     * set. */
    int (*init)(void *priv, ss_params *params, const char *cluster, ss_errbuf *eb);
    /* Required. The container for request r (arrived, not yet routed): one of the n >= 1
     * candidates, the active containers serving r's tenant, in increasing id order. */
    gmg_id (*pick)(void *priv, const gmg *g, gmg_id r, const gmg_id *cands, uint32_t n,
                   ss_rng *rng);
    /* Optional. Emit resolved parameters for the results database. */
    void (*describe)(const void *priv, ss_kv_emit_fn *emit, void *ud);
} pol_route_ops;

typedef struct pol_route pol_route; /* an instance */

/* Look up a routing policy by name; NULL when unknown. */
const pol_route_ops *pol_route_find(const char *name);
/* "rr, lor": the known names, for error messages. */
const char *pol_route_names(void);
/* Create an instance (checks the ABI and required hooks, calls init). 0, SS_ENOTFOUND,
 * SS_EINVAL or SS_ENOMEM with eb set. rng is borrowed for the instance's lifetime. */
int pol_route_create(pol_route **out, const char *name, ss_params *params, const char *cluster,
                     ss_rng *rng, ss_errbuf *eb);
void pol_route_destroy(pol_route **p);
gmg_id pol_route_pick(pol_route *p, const gmg *g, gmg_id r, const gmg_id *cands, uint32_t n);
const char *pol_route_name(const pol_route *p);
void pol_route_describe(const pol_route *p, ss_kv_emit_fn *emit, void *ud);

/* ---- batching --------------------------------------------------------------------------- */

/* Why a batching policy rejects a request (pol_batch_decision.reject_why). */
typedef enum pol_reject_why {
    POL_REJECT_TOO_LONG,     /* its prompt exceeds max_model_len */
    POL_REJECT_BATCH_TOKENS, /* its prompt exceeds the tokens one iteration holds (vllm's
                                max_num_batched_tokens) */
    POL_REJECT_KV,           /* it needs more KV blocks than its container can ever give it
                                (its whole reservation, for orca and static) */
    POL_REJECT_PREEMPTED,    /* preempted max_preemptions times: the livelock guard */
    POL_REJECT__COUNT
} pol_reject_why;

/* What the next iteration of a container should do. The arrays are owned by the engine, which
 * sizes each to at least waiting + running + swapped entries before calling decide. Every
 * scheduled request advances by q_tokens of its pending work: the prompt (plus tokens generated
 * before a recompute preemption) not yet in the KV cache, or 1 for a decode. It emits a token
 * when its pending work reaches zero. The engine applies the lists in the order reject,
 * preempt, swap_out, swap_in, run, and validates every step. */
typedef struct pol_batch_decision {
    gmg_id *run;          /* requests to execute (waiting ones are admitted), in batch order */
    uint32_t *q_tokens;   /* query tokens of each: 1 <= q <= pending work */
    uint32_t *hold;       /* KV blocks each must hold after admission (0 = just what its tokens
                             need); Orca-style reservations set it */
    uint32_t n_run;
    gmg_id *preempt;      /* running requests preempted by recompute (KV freed, back to the
                             front of the waiting queue), in the order chosen */
    uint32_t n_preempt;
    gmg_id *swap_out;     /* running requests preempted by swap (KV to host memory) */
    uint32_t n_swap_out;
    gmg_id *swap_in;      /* swapped requests whose KV returns to the GPU (then listed in run) */
    uint32_t n_swap_in;
    gmg_id *reject;       /* requests (any state) that will never be served */
    uint32_t *reject_why; /* why, for each (pol_reject_why) */
    uint32_t n_reject;
    cost_batch extra;     /* work the iteration pays beyond its requests (padding) */
} pol_batch_decision;

/* Append r to the reject list, for reason why. */
static inline void pol_reject(pol_batch_decision *out, gmg_id r, pol_reject_why why)
{
    out->reject_why[out->n_reject] = (uint32_t)why;
    out->reject[out->n_reject++] = r;
}

typedef struct pol_batch_ops {
    uint32_t abi_version;
    const char *name;       /* "vllm", "orca", "sarathi", "static"; selected by --batching */
    const char *summary;
    const char *const *params; /* NULL-terminated names of the parameters it reads */
    size_t priv_size;       /* state shared by every container (parameters) */
    size_t ctr_priv_size;   /* zeroed state the engine keeps per container (0 = none) */
    /* Required. Read parameters (the same params for every container). */
    int (*init)(void *priv, ss_params *params, const pol_engine_cfg *cfg, ss_errbuf *eb);
    /* Required. Fill *out for container c's next iteration (counts start at 0, extra zeroed).
     * ctr_priv is c's per-container state (NULL when ctr_priv_size is 0). An empty run list
     * with nothing preempted, swapped or rejected means "idle until something arrives". */
    void (*decide)(void *priv, void *ctr_priv, const gmg *g, const gmg_container *c,
                   pol_batch_decision *out);
    /* Optional: largest number of tokens one iteration can hold (sizes the activation
     * reserve) and most sequences it can hold. */
    uint64_t (*max_batch_tokens)(const void *priv);
    uint32_t (*max_seqs)(const void *priv);
    void (*describe)(const void *priv, ss_kv_emit_fn *emit, void *ud);
    /* Optional (SliceScheduler): the KV blocks waiting request q of c must hold from the moment
     * its prefill moves to another container's GPUs (it rejoins c's running requests with its
     * first token), or POL_NO_OFFLOAD when the policy cannot take it back that way. NULL: the
     * blocks of its prompt. */
    uint32_t (*offload_hold)(const void *priv, const gmg_container *c, const gmg_req *q);
} pol_batch_ops;

#define POL_NO_OFFLOAD UINT32_MAX

typedef struct pol_batch pol_batch;

const pol_batch_ops *pol_batch_find(const char *name);
const char *pol_batch_names(void);
int pol_batch_create(pol_batch **out, const char *name, ss_params *params,
                     const pol_engine_cfg *cfg, ss_errbuf *eb);
void pol_batch_destroy(pol_batch **p);
/* Bytes of per-container state the policy needs (the engine allocates them zeroed). */
size_t pol_batch_ctr_priv_size(const pol_batch *p);
void pol_batch_decide(pol_batch *p, void *ctr_priv, const gmg *g, const gmg_container *c,
                      pol_batch_decision *out);
uint64_t pol_batch_max_tokens(const pol_batch *p);
uint32_t pol_batch_max_seqs(const pol_batch *p);
/* The policy's offload_hold (its default when it has none). */
uint32_t pol_batch_offload_hold(const pol_batch *p, const gmg_container *c, const gmg_req *q);
const char *pol_batch_name(const pol_batch *p);
void pol_batch_describe(const pol_batch *p, ss_kv_emit_fn *emit, void *ud);

/* ---- cluster (periodic) ---------------------------------------------------------------- */

/* What a cluster policy sees of one tenant. */
typedef struct pol_tenant_view {
    const char *name;
    const cat_model *model;
    uint32_t tp, pp;
    uint32_t replicas;       /* containers it started with (its floor under auto-scaling) */
    uint32_t max_replicas;   /* containers it may own */
    uint32_t tiers;          /* K */
    const gmg_id *active;    /* its containers taking requests, ascending ids */
    uint32_t n_active;
    const gmg_id *standby;   /* its containers loaded with nothing (auto-scaling reserve) */
    uint32_t n_standby;
} pol_tenant_view;

typedef struct pol_cluster_view {
    ss_time now;
    const pol_tenant_view *tenants;
    uint32_t n_tenants;
} pol_cluster_view;

/* Move running request `req` from container `from` to `to` (same tenant) by live migration. */
typedef struct pol_migration {
    gmg_id req, from, to;
} pol_migration;

/* Give container `ctr` to tenant `to`: drain it, tear it down, load the new weights. */
typedef struct pol_realloc {
    gmg_id ctr;
    uint16_t to;
} pol_realloc;

/* A cluster policy's advice for this tick (arrays owned by the engine; capacities given). */
typedef struct pol_cluster_decision {
    pol_migration *migrate;
    uint32_t n_migrate, cap_migrate;
    pol_realloc *realloc;
    uint32_t n_realloc, cap_realloc;
    gmg_id *scale_up;        /* standby containers to load and activate for their tenant */
    uint32_t n_scale_up, cap_scale_up;
    gmg_id *scale_down;      /* active containers to drain and put on standby */
    uint32_t n_scale_down, cap_scale_down;
    ss_time setup_ns;        /* teardown / start-up time of a container that changes hands */
    double load_bw;          /* bytes/s at which a container loads its weights */
    uint32_t stop_copy_blocks; /* a migration stops and copies once fewer blocks are left */
    uint32_t max_stages;     /* ... or after this many stages */
} pol_cluster_decision;

typedef struct pol_cluster_ops {
    uint32_t abi_version;
    const char *name;          /* "container", "llumnix", "llumnix-tiers"; --cluster */
    const char *summary;
    const char *const *params; /* NULL-terminated names of the parameters it reads */
    size_t priv_size;
    /* Optional. Read parameters. */
    int (*init)(void *priv, ss_params *params, ss_errbuf *eb);
    /* Routing policy this cluster policy implies when the user names none (NULL: rr). */
    const char *default_routing;
    /* Required. Time between ticks, ns (0: never ticks). */
    ss_time (*period)(const void *priv);
    /* Required when period > 0. Fill *out (counts start at 0). */
    void (*tick)(void *priv, const gmg *g, const pol_cluster_view *v, pol_cluster_decision *out);
    /* 1: tenants get (max_replicas - replicas) standby containers to scale into. */
    int autoscale;
    /* Optional: queue order inside containers. 1 = waiting requests are kept ordered by
     * (tier, arrival) instead of arrival (preempted requests still go first). */
    int (*tier_ordered_queues)(const void *priv);
    void (*describe)(const void *priv, ss_kv_emit_fn *emit, void *ud);
} pol_cluster_ops;

typedef struct pol_cluster pol_cluster;

const pol_cluster_ops *pol_cluster_find(const char *name);
const char *pol_cluster_names(void);
int pol_cluster_create(pol_cluster **out, const char *name, ss_params *params, ss_errbuf *eb);
void pol_cluster_destroy(pol_cluster **p);
ss_time pol_cluster_period(const pol_cluster *p);
void pol_cluster_tick(pol_cluster *p, const gmg *g, const pol_cluster_view *v,
                      pol_cluster_decision *out);
int pol_cluster_tier_ordered(const pol_cluster *p);
int pol_cluster_autoscale(const pol_cluster *p);
const char *pol_cluster_name(const pol_cluster *p);
const char *pol_cluster_default_routing(const pol_cluster *p);
void pol_cluster_describe(const pol_cluster *p, ss_kv_emit_fn *emit, void *ud);

/* The built-in policy that reads parameter `key` (first found, batching, routing, then
 * cluster), or NULL when none does: tells a parameter meant for another policy from a typo. */
const char *pol_param_owner(const char *key);

extern const pol_cluster_ops pol_cluster_container;
extern const pol_cluster_ops pol_cluster_llumnix;
extern const pol_cluster_ops pol_cluster_llumnix_tiers;
extern const pol_route_ops pol_route_llumnix;

extern const pol_route_ops pol_route_rr;
extern const pol_route_ops pol_route_lor;
extern const pol_route_ops pol_route_random;
extern const pol_route_ops pol_route_infaas;
extern const pol_batch_ops pol_batch_vllm;
extern const pol_batch_ops pol_batch_orca;
extern const pol_batch_ops pol_batch_sarathi;
extern const pol_batch_ops pol_batch_static;

/* Pending work of a request: tokens still to compute before it emits its next token. */
static inline uint32_t pol_pending(const gmg_req *q) { return q->prompt + q->generated - q->computed; }

#endif
