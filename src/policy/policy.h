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

#include "../core/ss_err.h"
#include "../core/ss_params.h"
#include "../core/ss_rng.h"
#include "../gmg/gmg.h"

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
    size_t priv_size;       /* zeroed bytes allocated with the instance */
    /* Optional. Read parameters. 0 or <0 with eb set. */
    int (*init)(void *priv, ss_params *params, ss_errbuf *eb);
    /* Required. Index of the container for request r (arrived, not yet routed). */
    gmg_id (*pick)(void *priv, const gmg *g, gmg_id r, ss_rng *rng);
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
int pol_route_create(pol_route **out, const char *name, ss_params *params, ss_rng *rng,
                     ss_errbuf *eb);
void pol_route_destroy(pol_route **p);
gmg_id pol_route_pick(pol_route *p, const gmg *g, gmg_id r);
const char *pol_route_name(const pol_route *p);
void pol_route_describe(const pol_route *p, ss_kv_emit_fn *emit, void *ud);

/* ---- batching --------------------------------------------------------------------------- */

/* What the next iteration of a container should do. Arrays are owned by the engine, which
 * sizes each to at least waiting + running entries before calling decide. */
typedef struct pol_batch_decision {
    gmg_id *run;        /* requests to execute, in batch order */
    uint32_t *q_tokens; /* query tokens of each: prompt (+ generated, after a recompute
                           preemption) for a prefill, 1 for a decode */
    uint32_t n_run;
    gmg_id *preempt;    /* running requests to preempt by recompute before the iteration,
                           in the order they were chosen (newest first for vLLM) */
    uint32_t n_preempt;
    gmg_id *reject;     /* waiting requests that can never be served */
    uint32_t n_reject;
} pol_batch_decision;

typedef struct pol_batch_ops {
    uint32_t abi_version;
    const char *name;       /* "vllm"; selected by --batching */
    const char *summary;
    size_t priv_size;       /* per-container instance state */
    /* Required. Read parameters (the same params for every container). */
    int (*init)(void *priv, ss_params *params, const pol_engine_cfg *cfg, ss_errbuf *eb);
    /* Required. Fill *out for container c's next iteration (out->n_* start at 0). An empty
     * run list with nothing preempted or rejected means "idle until something arrives". */
    void (*decide)(void *priv, const gmg *g, const gmg_container *c, pol_batch_decision *out);
    /* Optional: largest number of tokens one iteration can hold (sizes the activation
     * reserve) and most sequences it can hold. */
    uint64_t (*max_batch_tokens)(const void *priv);
    uint32_t (*max_seqs)(const void *priv);
    void (*describe)(const void *priv, ss_kv_emit_fn *emit, void *ud);
} pol_batch_ops;

typedef struct pol_batch pol_batch;

const pol_batch_ops *pol_batch_find(const char *name);
const char *pol_batch_names(void);
int pol_batch_create(pol_batch **out, const char *name, ss_params *params,
                     const pol_engine_cfg *cfg, ss_errbuf *eb);
void pol_batch_destroy(pol_batch **p);
void pol_batch_decide(pol_batch *p, const gmg *g, const gmg_container *c,
                      pol_batch_decision *out);
uint64_t pol_batch_max_tokens(const pol_batch *p);
uint32_t pol_batch_max_seqs(const pol_batch *p);
const char *pol_batch_name(const pol_batch *p);
void pol_batch_describe(const pol_batch *p, ss_kv_emit_fn *emit, void *ud);

extern const pol_route_ops pol_route_rr;
extern const pol_route_ops pol_route_lor;
extern const pol_batch_ops pol_batch_vllm;

#endif
