/* Limits shared by several modules, defined once: a scenario, its workload sources, the
 * simulator and the metrics must agree on them. */
#ifndef SS_CORE_SS_LIMITS_H
#define SS_CORE_SS_LIMITS_H

/* SLA tiers of one tenant (tier 0 is the most important). */
#define SS_MAX_TIERS 10
/* Tenants of one scenario (and workload sources of one run). */
#define SS_MAX_TENANTS 64

#endif
