/* Scenario files (experiments/NAME.ini): a whole multi-tenant experiment in one INI file read
 * with inih: the cluster, the policy bundle and its parameters, the run, the engine, and one
 * [tenant.NAME] section per tenant (model, parallelism, containers, workload, tiers, SLA per
 * tier). Command-line --set SECTION.KEY=VALUE assignments go through the same key table, so a
 * file and the command line accept exactly the same keys. Errors name FILE:LINE: key (or
 * "--set: key", or the option that gave the value); scn_key_where names it. This
 * module only parses and checks; runner/ turns a scenario into a run. */
#ifndef SS_SCENARIO_SCENARIO_H
#define SS_SCENARIO_SCENARIO_H

#include <stdint.h>
#include <stdio.h>

#include "core/ss_err.h"
#include "core/ss_limits.h"
#include "core/ss_params.h"

#define SCN_NAME_MAX 48
#define SCN_PATH_MAX 1024
#define SCN_TEXT_MAX 512

/* SLA of one tier; 0 means no bound. A request violates its SLA if any bound is broken. */
typedef struct scn_sla {
    double ttft_ms;     /* time to first token */
    double tbt_p99_ms;  /* the 99th percentile of the request's own inter-token gaps */
    double e2e_ms;      /* end to end */
} scn_sla;

typedef struct scn_tenant {
    char name[SCN_NAME_MAX];     /* [tenant.NAME]: [a-z0-9._-]+ */
    unsigned line;               /* line of the section header (0: made by --set or the CLI) */
    /* serving */
    char model[SCN_NAME_MAX];    /* catalog model (model) */
    char engine[SCN_PATH_MAX];   /* serving engine (engine, default vllm-0.15): a catalog name,
                                    or the path of an engine profile file (scn_profile_is_path;
                                    relative paths as for trace) */
    uint32_t tp, pp;             /* tp, pp (default 1, 1) */
    uint32_t replicas;           /* replicas: containers it starts with (default 1) */
    uint32_t max_replicas;       /* max_replicas: most it may own under auto-scaling or
                                    re-allocation (default = replicas) */
    uint32_t prefill_replicas;   /* prefill_replicas, decode_replicas: separate prefill and */
    uint32_t decode_replicas;    /* decode pools (both, or neither: 0 = co-located serving;
                                    replicas must not be given with them) */
    uint32_t prefill_tp, decode_tp; /* prefill_tp, decode_tp: the pools' TP (0 = tp) */
    char kv_transfer[8];         /* kv_transfer = layer|end: how the KV leaves a prefill
                                    instance (default layer) */
    char share[32];              /* share = mig:PROFILE|mps:F|time|whole: each container's share
                                    of a GPU ("": whole GPUs; docs/guide/gpu-sharing.md) */
    double mem_gib;              /* mem_gib: an MPS or time-sliced container's memory (0: the
                                    share's default) */
    char share_gpus[256];        /* share_gpus = G0,G1,...: the shared GPU of each replica
                                    ("": first fit) */
    /* workload: exactly one of trace, synthetic, servegen */
    char trace[SCN_PATH_MAX];    /* trace (relative paths: from the scenario file's folder,
                                    stored as an absolute path; from --set: as given) */
    char trace_format[16];       /* trace_format (default auto) */
    int trace_spread;            /* trace_spread = true|false */
    int trace_sort;              /* trace_sort = true|false: read the trace whole and sort it */
    char trace_tenant[SCN_NAME_MAX]; /* trace_tenant: only rows of this tenant name */
    char split[16];              /* split = none|rr|random|class (a trace shared with others) */
    double weight;               /* weight (split = random; default 1) */
    uint32_t class_lo, class_hi; /* class = LO:HI prompt tokens (split = class) */
    char synthetic[SCN_TEXT_MAX]; /* synthetic = "rate=5 duration=600 arrival=gamma cv=2
                                     prompt=lognormal:800:0.6 output=fixed:128 requests=N" */
    char servegen[256];          /* servegen = CATEGORY/POOL/CLIENT, e.g. language/m-mid/17 */
    double servegen_start_s;     /* servegen_start_s (default 0) */
    double rate_scale;           /* rate_scale (default 1) */
    double duration_s;           /* duration_s: stop this tenant's arrivals (0 = the run's) */
    uint64_t limit;              /* limit: at most N requests (0 = no limit) */
    /* tiers and SLAs */
    uint32_t tiers;              /* tiers = K, 1..10 (default 1) */
    char tier_mix[128];          /* tier_mix = trace|uniform|gaussian|enterprise|powerlaw|
                                    weights:W0,W1,... (default uniform) */
    double tier_alpha;           /* tier_alpha: power-law exponent (default 1) */
    scn_sla sla[SS_MAX_TIERS];  /* sla_ttft_ms / sla_tbt_ms / sla_e2e_ms = one value for every
                                    tier, or K comma-separated values from tier 0 (the
                                    entries from K on are then 0) */
} scn_tenant;

/* [kvpool]: the KV pool below the prefix caches (docs/guide/prefix-caching.md; off by default). */
typedef struct scn_kvpool {
    double cpu_gib;              /* cpu_gib: CPU DRAM tier per node (default 0: no pool) */
    double cpu_gbps;             /* cpu_gbps: host link per GPU and direction (0, the default:
                                    the GPU profile's pcie_gbps) */
    double cpu_latency_us;       /* cpu_latency_us: per load over the host link (default 10) */
    double ssd_gib;              /* ssd_gib: SSD tier per node (default 0: none) */
    double ssd_gbps;             /* ssd_gbps: a node's SSD read bandwidth, GB/s (default 7) */
    double ssd_latency_us;       /* ssd_latency_us: per load from an SSD (default 100) */
    char scope[8];               /* scope = node|cluster (default node) */
    char offload[8];             /* offload = link|free: a block's copy out of the GPU holds
                                    the host link (default link), or is not charged (free: how
                                    results before it were made) */
} scn_kvpool;

typedef struct scn_scenario {
    char path[SCN_PATH_MAX];     /* file it was loaded from ("" if none) */
    /* [cluster] */
    char gpu[SCN_NAME_MAX];      /* gpu (default a100-80g) */
    uint32_t nodes;              /* nodes (0 = as many as the tenants' containers need) */
    uint32_t gpus_per_node;      /* gpus_per_node (0 = the GPU catalog's) */
    double link_eff[3];          /* nvlink_efficiency, pcie_efficiency, net_efficiency: the
                                    fraction of each link kind's peak a copy attains, in (0, 1]
                                    (0, the default: the GPU profile's [links] figure) */
    double mps_interference;     /* mps_interference: MPS clients' slow-down beside others,
                                    beyond bandwidth (default 0) */
    double timeslice_ms;         /* timeslice_ms: a time-sliced context's turn (default 2) */
    double context_switch_us;    /* context_switch_us: a switch between them (default 40) */
    /* [policy] */
    char routing[32];            /* routing (default rr; llumnix clusters default to their own,
                                    "llumnix") */
    char batching[32];           /* batching (default vllm) */
    char cluster[32];            /* cluster = container|llumnix|llumnix-tiers (default container) */
    char cost[32];               /* cost (default roofline) */
    char ops[32];                /* ops = home|slice: operator placement (default home) */
    ss_params *params;           /* every other [policy] key: a policy parameter (owned) */
    /* [run] */
    uint64_t seed;               /* seed (default 1) */
    double duration_s;           /* duration_s: no arrivals after this (0 = the workload's end) */
    double warmup_s;             /* warmup_s: requests arriving earlier are simulated, not measured */
    char db[SCN_PATH_MAX];       /* db (default results/slicesim.db; "none"); an output, so a
                                    relative path is from the current directory */
    char servegen_dir[SCN_PATH_MAX]; /* servegen_dir: ServeGen's data folder (relative paths
                                        as for trace) */
    /* [engine] */
    double gpu_mem_util;         /* gpu_mem_util (default 0.9) */
    uint32_t block_size;         /* block_size (default 16) */
    uint64_t max_model_len;      /* max_model_len (default 16384) */
    double swap_space_gib;       /* swap_space_gib (default 4) */
    char prefix_cache[8];        /* prefix_cache = auto|on|off: automatic prefix caching (default
                                    auto: on when the trace carries prefix identity) */
    char prefix_ceiling[4];      /* prefix_ceiling = on|off: keep the ceiling, what an unbounded
                                    cache shared by each tenant's instances would hit (default
                                    on; off bounds memory by the caches and the requests in
                                    flight: the ceiling's set grows with the trace) */
    scn_kvpool kvpool;           /* [kvpool] */
    scn_tenant tenants[SS_MAX_TENANTS];
    uint32_t n_tenants;
    struct scn__priv *priv;      /* private to src/scenario: where keys were set (owned) */
} scn_scenario;

/* A scenario with every default and no tenant. Caller frees with scn_destroy. 0 or SS_ENOMEM. */
/* Whether a profile value (a tenant's engine) names a file rather than a catalog entry: it has
 * a '/' or ends in ".ini". */
int scn_profile_is_path(const char *v);

/* One key a scenario accepts, as the key table has it (for `slicesim list keys` and the
 * generated reference). Strings borrowed for the call. */
typedef struct scn_key_info {
    const char *section;      /* "cluster", "policy", "run", "engine", "kvpool", "tenant.NAME" */
    const char *name;         /* "gpu", "duration_s", ...; a policy parameter's own name */
    const char *values;       /* what it accepts: "integer, 1 to 4096", "one of: on, off", ... */
    const char *def;          /* its default as a scenario file would write it ("": none, or
                                 set by another key); a policy parameter's: "(the policy's)" */
    const char *read_by;      /* a policy parameter: the policies that read it ("batching
                                 vllm, batching sarathi"); NULL for the table's keys */
} scn_key_info;
typedef void scn_key_fn(void *ud, const scn_key_info *k);
/* Every key in the table's canonical order (a tenant's with the defaults of a new tenant),
 * then every parameter a registered policy reads ([policy] section, by name). 0, or
 * SS_ENOMEM. */
int scn_keys_each(scn_key_fn *fn, void *ud);

int scn_create(scn_scenario **s_out);
void scn_destroy(scn_scenario **s);
/* Read an INI file into s (keys it sets replace earlier values; a [tenant.NAME] section adds
 * the tenant or updates it). Unknown sections or keys, bad values, duplicate keys within a
 * section: SS_EPARSE with "FILE:LINE: SECTION.KEY: what is wrong"; unreadable: SS_EIO. On
 * failure s may be partly updated: discard it. */
int scn_load(scn_scenario *s, const char *path, ss_errbuf *eb);
/* Apply one "SECTION.KEY=VALUE" (SECTION may contain dots: tenant.chat.rate_scale=2). Same
 * keys and checks as a file; errors start "--set: ". A [tenant.NAME] that does not exist yet is
 * created. */
int scn_set(scn_scenario *s, const char *assignment, ss_errbuf *eb);
/* scn_set for a value that came from somewhere else than --set: messages start "WHERE:
 * SECTION.KEY: " ("--policies: policy.batching: ...", "exp.ini:12: run.seed: ..."). where is
 * borrowed for the call; a copy is kept as the key's origin. */
int scn_set_from(scn_scenario *s, const char *assignment, const char *where, ss_errbuf *eb);
/* The same for an option that sets only this key: messages start with the option alone
 * (replay --replicas: "--replicas: out of range [1, 4096], got '1000000'"). */
int scn_set_option(scn_scenario *s, const char *assignment, const char *option, ss_errbuf *eb);
/* The start of a message about key's value, naming where it came from: "FILE:LINE: KEY",
 * "--set: KEY", "WHERE: KEY" (scn_set_from), the option alone (scn_set_option:
 * "--batching"), or just KEY for a default. */
void scn_key_where(const scn_scenario *s, const char *key, char *buf, size_t size);
/* Whole-scenario checks once everything is applied: at least one tenant, each with a model (a
 * tenant that only --set named and that has none is "--set: tenant.NAME: no such tenant
 * (tenants: ...)", most likely a typo) and
 * exactly one workload source, SLA lists of 1 or K values, split partners consistent (same
 * trace, same split), class ranges, warmup < duration. Errors name the tenant (and its line).
 * 0 or SS_EINVAL. */
int scn_check(const scn_scenario *s, ss_errbuf *eb);
/* Tenant by name, NULL when absent. */
scn_tenant *scn_tenant_find(scn_scenario *s, const char *name);
/* Line of the file where [policy] key `key` was set (0 when not from a file), so that a policy
 * rejecting a parameter can point at it. */
unsigned scn_param_line(const scn_scenario *s, const char *key);
/* Write s back as an INI file (every key, canonical order): stored with each run so that a
 * result can be reproduced. Relative paths (only --set makes them) are written as absolute
 * ones, so the file means the same wherever it is read; a scenario loaded from files reads
 * back identical. 0 or SS_EIO. */
int scn_write(const scn_scenario *s, FILE *f);

#endif
