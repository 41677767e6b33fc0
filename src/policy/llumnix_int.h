/* Private to policy/: Llumnix's load metric shared by its dispatcher (routing "llumnix") and
 * its cluster policies ("llumnix", "llumnix-tiers"): virtual usage and freeness, with the
 * priority headroom of two-level Llumnix or of K tiers. */
#ifndef SS_POLICY_LLUMNIX_INT_H
#define SS_POLICY_LLUMNIX_INT_H

#include "policy/policy.h"

typedef enum llx_headroom {
    LLX_TWO_LEVEL, /* Llumnix: tier 0 is high priority and reserves `headroom` of the pool */
    LLX_EXP,       /* K tiers: H_p = floor(M * h_max * exp(-lambda * p)), lambda = 2.5/(K-1) */
    LLX_LINEAR,    /* K tiers: H_p = floor(M * h_max * (1 - p/(K-1))) */
} llx_headroom;

typedef struct llx_params {
    llx_headroom mode;
    double headroom;  /* LLX_TWO_LEVEL: fraction of the pool reserved for tier-0 requests */
    double h_max;     /* LLX_EXP / LLX_LINEAR: headroom of tier 0, fraction of the pool */
} llx_params;

/* Read the headroom parameters (mode from the policy name; headroom, h_max, headroom_shape). */
int llx_params_init(llx_params *p, ss_params *params, const char *who, int tiers, ss_errbuf *eb);
/* Headroom of container c, in blocks: that of the most important tier it holds. */
double llx_headroom_blocks(const llx_params *p, const gmg *g, const gmg_container *c);
/* Freeness F = (M - virtual usage) / requests, in KV blocks per request; higher is freer.
 * +infinity when the container holds no request (of those counted); -infinity for one that
 * takes no requests. Two forms, as in Llumnix's released code (llumnix_common.c says where):
 *  - dispatch (new requests, and auto-scaling): virtual usage = blocks held + the demand of
 *    every waiting request + headroom; requests = running + waiting;
 *  - migrate (pairing migration sources and destinations): virtual usage = blocks held + the
 *    head-of-line waiting request's demand + headroom; requests = running (+1 when any waits). */
double llx_freeness_dispatch(const llx_params *p, const gmg *g, const gmg_container *c);
double llx_freeness_migrate(const llx_params *p, const gmg *g, const gmg_container *c);

#endif
