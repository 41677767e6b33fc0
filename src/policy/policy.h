/* Scheduling policy plug-ins, four kinds:
 *  - routing (global): which container gets a newly arrived request;
 *  - batching (per container): which requests run in the container's next iteration, which
 *    running requests are preempted first, and which waiting requests can never be served;
 *  - cluster (periodic): re-allocation, live migration, auto-scaling;
 *  - placement (periodic): operator placement beyond a container's own GPUs (SliceScheduler).
 * Policies read the cluster (const gmg *) and fill a decision; gsim/ validates and applies it
 * (a malformed decision stops the run with "<kind> policy '<name>' malfunction: ...").
 * A policy never mutates the cluster and draws randomness only from the ss_rng it is given. */
#ifndef SS_POLICY_POLICY_H
#define SS_POLICY_POLICY_H

/* part of the plug-in API (policy/plugin.h): visible to a plug-in the binary loads */
#pragma GCC visibility push(default)

#include <stddef.h>
#include <stdint.h>

#include "core/ss_err.h"
#include "core/ss_hist.h"
#include "core/ss_params.h"
#include "core/ss_rng.h"
#include "cost/cost.h"
#include "gmg/gmg.h"

#define POL_ABI_VERSION 5

/* Engine-wide limits every batching policy must respect, fixed per run. */
typedef struct pol_engine_cfg {
    uint64_t max_model_len; /* longest sequence (prompt + output) the engine accepts */
} pol_engine_cfg;

/* ---- routing ---------------------------------------------------------------------------- */

typedef struct pol_route_ops {
    uint32_t abi_version;   /* POL_ABI_VERSION */
    const char *name;       /* "rr", "lor"; selected by --routing (--route) */
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
    /* Optional: whether container c's next iteration is steady for this policy (NULL: never).
     * The simulator asks only when nothing waits or is swapped on c and every running request
     * decodes, with room for its next token's KV in c's free pool. Returning 1 promises that
     * decide() would then run every running request, in list order, for one token with hold 0,
     * and do nothing else (no preemption, swap, rejection or extra work) nor change the
     * policy's state (priv, ctr_priv): the simulator may then build that batch itself without
     * calling decide() (gsim's steady-state fast path; SLICESIM_NO_STEADY=1 turns it off). */
    int (*steady)(const void *priv, const void *ctr_priv, const gmg_container *c);
    /* Optional: the rest of a decision whose decode pass the simulator made (NULL: none). The
     * simulator calls it only when no running request that decodes lacks room for its next
     * token: the n_decodes of them, taking decode_blocks new KV blocks together, are out's
     * first n_run entries already (one token each, hold 0, in list order), the other lists are
     * empty. Implementing it promises that decide() would begin with exactly those entries,
     * evicting nobody, and would then add what this adds to out (prefill chunks, swap-ins,
     * admissions, rejections) from the state they leave, without changing the policy's state
     * otherwise; the simulator may then ask it instead of decide() (gsim's mixed-step fast
     * path; SLICESIM_NO_STEADY=1 turns it off). It must read no more of those decodes than
     * their pending tokens (prompt + generated - computed, which is 1): while they form a
     * decode cohort the simulator brings their other fields (generated, computed, blocks,
     * times) up to date only when something else reads them. */
    void (*decide_rest)(void *priv, void *ctr_priv, const gmg *g, const gmg_container *c,
                        uint32_t n_decodes, uint32_t decode_blocks, pol_batch_decision *out);
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
/* The token budget a chunked batching policy gives container c: `budget` on a whole GPU; on a
 * share of one (docs/guide/gpu-sharing.md), budget times the share's compute
 * (gmg_container.compute_share), rounded down to a multiple of 256 and at least 256 (or budget,
 * when smaller): a chunk then takes about as long on the share as on a whole GPU, as an
 * operator sizing each instance's max_num_batched_tokens sets it. */
uint64_t pol_batch_budget(uint64_t budget, const gmg_container *c);
uint32_t pol_batch_max_seqs(const pol_batch *p);
/* The policy's offload_hold (its default when it has none). */
uint32_t pol_batch_offload_hold(const pol_batch *p, const gmg_container *c, const gmg_req *q);
/* The policy's steady hook for c (0 when it has none). */
int pol_batch_steady(const pol_batch *p, const void *ctr_priv, const gmg_container *c);
/* Whether the policy has a decide_rest hook. */
int pol_batch_has_rest(const pol_batch *p);
/* Its decide_rest: out holds the n_decodes decode entries in run (the other counts and the
 * extra work are reset here). */
void pol_batch_decide_rest(pol_batch *p, void *ctr_priv, const gmg *g, const gmg_container *c,
                           uint32_t n_decodes, uint32_t decode_blocks, pol_batch_decision *out);
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

/* ---- operator placement (periodic) ------------------------------------------------------- */

/* A placement policy moves work off a container's own GPUs: so far, a waiting request's
 * prefill to the idle time of another container's GPUs (the simulator's offload mechanism).
 * It reads the cluster, may ask the simulator what-if questions through pol_place_env, and
 * returns decisions that the simulator validates and carries out. */

/* A what-if: an independent copy of some containers of the simulation, continuing from its
 * present with no arrivals and no cluster decisions (made and run by pol_place_env). */
typedef struct pol_whatif pol_whatif;

/* Called in a what-if for each request that finishes (rejected 0) or is rejected (1) there. */
typedef void pol_whatif_done_fn(void *ud, const gmg *g, const gmg_req *q, int rejected,
                                ss_time now);

/* What the simulator offers a placement policy at a tick, for the handle `sim`. */
typedef struct pol_place_env {
    const void *sim;
    ss_time now;
    /* 0 when waiting request slot r could be offloaded to container `helper` now, else
     * SS_EINVAL with the reason in eb (not eligible, no memory for it at home or there). */
    int (*offload_check)(const void *sim, gmg_id r, gmg_id helper, ss_errbuf *eb);
    /* Whether the batching policy could take request slot r back after a remote prefill. */
    int (*offload_allowed)(const void *sim, gmg_id r);
    /* Whether container c's GPUs run an offloaded prefill now. */
    int (*has_guest)(const void *sim, gmg_id c);
    /* Bumped whenever something from outside c's own evolution reaches it: a what-if of c
     * taken at an earlier epoch no longer predicts it. */
    uint64_t (*epoch)(const void *sim, gmg_id c);
    /* The METRICS_SLA_* bounds q has broken for good by `now` (metrics_sla_judge). */
    uint8_t (*sla_so_far)(const gmg_req *q, ss_time now);
    /* A what-if of containers ctrs[0..n-1]; done (may be NULL) sees the requests that end in
     * it. 0, SS_EINVAL or SS_ENOMEM with eb set. */
    int (*fork)(const void *sim, const gmg_id *ctrs, uint32_t n, pol_whatif_done_fn *done,
                void *ud, pol_whatif **out, ss_errbuf *eb);
    /* Offload request slot r to container helper inside what-if w. */
    int (*offload)(pol_whatif *w, gmg_id r, gmg_id helper, ss_errbuf *eb);
    /* Simulate w up to `until`. */
    int (*advance)(pol_whatif *w, ss_time until, ss_errbuf *eb);
    /* w's present state, and its end, every request up to date. */
    const gmg *(*graph)(pol_whatif *w);
    /* The same as it stands: requests' states, slots and first-token times are current, but a
     * running decode's tokens, gaps and blocks may lag (the simulator's decode cohorts keep
     * them between steps); cheaper than graph when those are not read. */
    const gmg *(*peek)(const pol_whatif *w);
    void (*destroy)(pol_whatif **w);
} pol_place_env;

/* Prefill waiting request slot `req` on the GPUs of container `helper`; `predicted` is the
 * first-token time a what-if predicted (0: none), for the prediction-error figure. */
typedef struct pol_offload {
    gmg_id req, helper;
    ss_time predicted;
} pol_offload;

/* A placement policy's decisions for this tick (array owned by the engine). */
typedef struct pol_place_decision {
    pol_offload *offload;
    uint32_t n_offload, cap_offload;
} pol_place_decision;

/* ---- what a what-if knows of a request's output length --------------------------------- */

/* A deployed scheduler does not know how long a request will generate. A what-if fork gives
 * each request still in flight the output length a predictor gives it instead of its true one
 * (the replay itself always runs the true lengths). */
enum {
    POL_PRED_ORACLE = 0, /* the true length: a what-if that knows the future */
    POL_PRED_MEAN,       /* the tenant's mean of the lengths of its requests finished so far */
    POL_PRED_QUANTILE,   /* their quantile arg */
    POL_PRED_NOISY,      /* the true remaining length times a lognormal factor, CV arg */
};
typedef struct pol_predictor {
    int kind;   /* POL_PRED_* */
    double arg; /* POL_PRED_QUANTILE: Q in (0, 1); POL_PRED_NOISY: the CV, [0, 10]; else 0 */
} pol_predictor;

/* Parse s ("oracle", "mean", "quantile:Q", "noisy:CV") into *out; key names the parameter in
 * the message. 0, or SS_EINVAL ("key: expected ..., got 's'" in eb) with *out unchanged. */
int pol_predictor_parse(pol_predictor *out, const char *s, const char *key, ss_errbuf *eb);
/* p as pol_predictor_parse reads it ("mean", "quantile:0.9", "noisy:0.5") into buf (n bytes),
 * truncated to fit. */
void pol_predictor_name(const pol_predictor *p, char *buf, size_t n);
/* The output length p predicts for a request that has made `generated` tokens and can make at
 * most `cap` (its max_model_len-bounded length); `output` is its true length (read by oracle
 * and noisy only), `finished` the output lengths of its tenant's finished requests and
 * `finished_ix` their index (both borrowed; NULL: none, each question scans the histogram),
 * seed and key the noisy factor's stream (the run's seed; the request and its generated
 * tokens). Conditional on the request still running: always more than `generated`, at most
 * cap when cap > generated. mean and quantile take the finished lengths above `generated`;
 * when none is, twice `generated` (it has outlived all of them), and before any has finished,
 * cap (the longest it can run). noisy is generated + the true remaining length times
 * exp(N(mu, sigma^2)) of mean 1 and the CV arg, at least one token. Deterministic. */
uint32_t pol_predict_output(const pol_predictor *p, const ss_hist *finished,
                            const ss_hist_index *finished_ix, uint32_t generated, uint32_t output,
                            uint32_t cap, uint64_t seed, uint64_t key);

/* How the offload mechanism runs the policy's moves (pol_place_ops.mechanism). */
enum {
    POL_WEIGHTS_AUTO = 0, /* an offloaded prefill's weights staged on the helper when its free
                             KV blocks allow, else streamed */
    POL_WEIGHTS_STREAM,   /* streamed from home, chunk by chunk, for every prefill */
    POL_WEIGHTS_STAGE,    /* staged, or the offload is refused */
};
typedef struct pol_place_mechanism {
    ss_time guest_overrun; /* a guest chunk in a host phase may end this long after it */
    int weights;           /* POL_WEIGHTS_* */
    /* The costs a move is charged (0, 0, 1 and 1: none, the uncharged model): */
    double host_factor;    /* the guest's host phase before its first chunk, in units of home's
                              per-iteration host time for a one-request prefill */
    ss_time whatif_ns;     /* decision latency per what-if the deciding tick ran: the move
                              starts this times their count after the decision */
    double link_eff;       /* fraction of a link's peak bandwidth an offload transfer gets; 0:
                              the link's own (the GPU profile's [links], gsim_link_eff) */
    double interference;   /* slowdown of a guest chunk sharing the helper's iteration */
    /* What its what-ifs know (zero: the true output lengths and costs, an oracle): */
    pol_predictor predictor; /* the output lengths a fork gives its requests */
    double cost_error;     /* a fork's iteration costs are the cost model's times 1 + this */
} pol_place_mechanism;

/* Default time an offloaded guest chunk in a host phase may overrun it (see guest_overrun). */
#define POL_PLACE_OVERRUN_MS 1.0
/* The costs every move of an operator-placing policy is charged, whatever decided it: the
 * parameters slice_host_factor (default 1), slice_link_eff (default 0: the link's own
 * efficiency, from the GPU profile; set, it overrides that for moves alone, an ablation) and
 * slice_interference (1.2) into m's host_factor, link_eff and interference
 * (docs/guide/slicescheduler.md, "What a move costs", names their sources); who names the
 * policy in messages. 0, or SS_EINVAL with the parameter's error. */
int pol_place_move_costs(ss_params *p, const char *who, pol_place_mechanism *m, ss_errbuf *eb);

/* What a placement policy did in a run. */
typedef struct pol_place_stats {
    uint64_t ticks;           /* decisions with at least one candidate judged */
    uint64_t whatifs;         /* forks simulated (baselines and candidates) */
    uint64_t candidates;      /* (request, helper) pairs judged by a what-if */
    uint64_t refused_memory;  /* the helper lacked spare memory or home the KV blocks */
    uint64_t refused_sla;     /* a request of either container would break its SLA */
    uint64_t refused_gain;    /* no first token earlier than at home by slice_min_gain_ms */
    uint64_t chosen;          /* offloads made */
    double wall_s;            /* wall-clock time spent deciding */
} pol_place_stats;

typedef struct pol_place_ops {
    uint32_t abi_version;
    const char *name;          /* "home", "slice", "greedy"; selected by --ops */
    const char *summary;
    const char *const *params; /* NULL-terminated names of the parameters it reads */
    size_t priv_size;
    /* Optional. Read parameters. */
    int (*init)(void *priv, ss_params *params, ss_errbuf *eb);
    /* Optional. Free what init and the ticks allocated. */
    void (*fini)(void *priv);
    /* Required. Time between ticks, ns (0: never ticks; every operator stays home). */
    ss_time (*period)(const void *priv);
    /* Required when period > 0. Decide at env->now: fill *out (count starts at 0) and count
     * what it did in *st. 0, or SS_ENOMEM (or an error a what-if returned) with eb set. */
    int (*tick)(void *priv, const pol_place_env *env, const gmg *g, pol_place_decision *out,
                pol_place_stats *st, ss_errbuf *eb);
    /* Optional. How the offload mechanism should run its moves (without it, the simulator's
     * configuration decides). */
    void (*mechanism)(const void *priv, pol_place_mechanism *out);
    void (*describe)(const void *priv, ss_kv_emit_fn *emit, void *ud);
} pol_place_ops;

typedef struct pol_place pol_place;

const pol_place_ops *pol_place_find(const char *name);
const char *pol_place_names(void);
int pol_place_create(pol_place **out, const char *name, ss_params *params, ss_errbuf *eb);
void pol_place_destroy(pol_place **p);
ss_time pol_place_period(const pol_place *p);
/* One tick (its wall-clock time is added to the stats). */
int pol_place_tick(pol_place *p, const pol_place_env *env, const gmg *g,
                   pol_place_decision *out, ss_errbuf *eb);
/* The policy's mechanism settings into *out: 1, or 0 when it has none (out untouched). */
int pol_place_mechanism_of(const pol_place *p, pol_place_mechanism *out);
const pol_place_stats *pol_place_get_stats(const pol_place *p);
const char *pol_place_name(const pol_place *p);
void pol_place_describe(const pol_place *p, ss_kv_emit_fn *emit, void *ud);

/* Register a plug-in beyond the built-ins (a research policy in its own file, a test's), found
 * by name like them from then on; not thread-safe: register before the first run. 0, or
 * SS_EINVAL (no name, or the name is taken) or SS_ENOMEM (8 per kind at most). */
int pol_route_register(const pol_route_ops *ops);
int pol_batch_register(const pol_batch_ops *ops);
int pol_cluster_register(const pol_cluster_ops *ops);
int pol_place_register(const pol_place_ops *ops);

/* The policy that reads parameter `key` (first found, batching, routing, cluster, then
 * placement; built-ins before registered ones), or NULL when none does: tells a parameter meant for another policy from a typo. */
const char *pol_param_owner(const char *key);
/* Every parameter of every registered policy, in pol_param_owner's order: fn(ud, kind,
 * policy, param), kind "batching", "routing", "cluster" or "ops". */
typedef void pol_param_fn(void *ud, const char *kind, const char *policy, const char *param);
void pol_params_each(pol_param_fn *fn, void *ud);

extern const pol_cluster_ops pol_cluster_container;
extern const pol_cluster_ops pol_cluster_llumnix;
extern const pol_cluster_ops pol_cluster_llumnix_tiers;
extern const pol_route_ops pol_route_llumnix;

extern const pol_route_ops pol_route_rr;
extern const pol_route_ops pol_route_lor;
extern const pol_route_ops pol_route_random;
extern const pol_route_ops pol_route_infaas;
extern const pol_route_ops pol_route_affinity;
extern const pol_route_ops pol_route_prefill_affinity; /* route_disagg.c */
extern const pol_route_ops pol_route_decode_load;
extern const pol_batch_ops pol_batch_vllm;
extern const pol_batch_ops pol_batch_orca;
extern const pol_batch_ops pol_batch_sarathi;
extern const pol_batch_ops pol_batch_static;
extern const pol_place_ops pol_place_home;
extern const pol_place_ops pol_place_slice;
extern const pol_place_ops pol_place_greedy;

/* The last fresh waiting request of c (nothing computed, never preempted, not migrating): the
 * one that waits longest at home, what a placement policy moves; GMG_NONE if none. */
static inline gmg_id pol_fresh_tail(const gmg *g, const gmg_container *c)
{
    for (gmg_id r = c->waiting.tail; r != GMG_NONE; r = g->reqs[r].prev) {
        const gmg_req *q = &g->reqs[r];
        if (!q->computed && !q->generated && !q->preemptions && q->mig == GMG_NONE)
            return r;
    }
    return GMG_NONE;
}

/* Pending work of a request: tokens still to compute before it emits its next token. */
static inline uint32_t pol_pending(const gmg_req *q) { return q->prompt + q->generated - q->computed; }

#pragma GCC visibility pop

#endif
