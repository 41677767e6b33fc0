/* Run metrics: per-request outcomes (TTFT, inter-token gaps, E2E, SLA) folded into bounded
 * histograms and counters for the whole run, per tenant and per tier, and the summaries derived
 * from them. Memory does not grow with the number of requests. Requests that arrive before the
 * measurement window opens (warm-up) are not folded in. The SQLite store (store/store.h)
 * persists what this module computes. */
#ifndef SS_METRICS_METRICS_H
#define SS_METRICS_METRICS_H

#include <stdint.h>

#include "core/ss_hist.h"
#include "core/ss_limits.h"
#include "core/ss_time.h"

/* Idle GPU slices are binned by length in decades: < 10 us, 10-100 us, ..., 1-10 s, >= 10 s. */
#define METRICS_SLICE_BUCKETS 8

/* Why a request broke its SLA (bits of metrics_req.sla). */
enum {
    METRICS_SLA_TTFT = 1,     /* first token later than the TTFT bound */
    METRICS_SLA_TBT = 2,      /* the p99 of its own inter-token gaps above the TBT bound */
    METRICS_SLA_E2E = 4,      /* finished later than the E2E bound */
    METRICS_SLA_REJECTED = 8, /* never served (only for a request with an SLA) */
};

/* The SLA judge, the one place the bounds are tested: the METRICS_SLA_* bits a request breaks
 * with its first token `ttft` and its end `e2e` after its arrival, and `over` of its `gaps`
 * inter-token gaps above the TBT bound (its own nearest-rank p99 breaks the bound when more
 * gaps exceed it than the 1 % the p99 may leave above). A zero bound is none. */
static inline uint8_t metrics_sla_judge(ss_time ttft_bound, ss_time ttft, ss_time e2e_bound,
                                        ss_time e2e, ss_time tbt_bound, uint32_t gaps,
                                        uint32_t over)
{
    uint8_t b = 0;
    if (ttft_bound && ttft > ttft_bound)
        b |= METRICS_SLA_TTFT;
    if (e2e_bound && e2e > e2e_bound)
        b |= METRICS_SLA_E2E;
    uint32_t rank = (uint32_t)((gaps * 99u + 99u) / 100u); /* ceil(0.99 * gaps) */
    if (tbt_bound && gaps && over > gaps - rank)
        b |= METRICS_SLA_TBT;
    return b;
}

/* Why a request was rejected (metrics_req.reject_why). */
enum {
    METRICS_REJ_TOO_LONG,     /* prompt longer than max_model_len */
    METRICS_REJ_BATCH_TOKENS, /* prompt longer than one iteration holds (max_num_batched_tokens) */
    METRICS_REJ_KV,           /* more KV blocks than its container can ever give it */
    METRICS_REJ_PREEMPTED,    /* preempted max_preemptions times: the livelock guard */
    METRICS_REJ_OTHER,        /* a policy gave no reason the simulator knows */
    METRICS_REJ__COUNT
};

/* One request's outcome, as stored in the requests table. */
typedef struct metrics_req {
    uint64_t trace_id;      /* request id */
    uint16_t tenant;        /* tenant index */
    uint8_t tier;           /* SLA tier */
    uint8_t rejected;       /* 1 if it was never served (or abandoned by the livelock guard) */
    uint8_t reject_why;     /* METRICS_REJ_*, when rejected */
    uint8_t sla;            /* METRICS_SLA_* bits; 0 = met its SLA (or had none, rejected too) */
    uint8_t measured;       /* 0 for warm-up requests, which the summaries leave out */
    uint32_t container;     /* container it was routed to (last one, after migrations) */
    uint32_t prompt;        /* prompt tokens */
    uint32_t output_asked;  /* output tokens in the trace */
    uint32_t generated;     /* output tokens produced (< asked when capped by max_model_len) */
    uint32_t preemptions;   /* preemptions (recompute or swap) */
    uint32_t migrations;    /* completed live migrations */
    ss_time arrival;        /* ns */
    ss_time first_token;    /* ns, -1 if none */
    ss_time finish;         /* completion or rejection time, ns */
    ss_time tbt_sum;        /* sum of inter-token gaps, ns (generated - 1 gaps) */
    ss_time tbt_max;        /* largest gap, ns */
    uint32_t win_tokens;    /* output tokens it produced inside the arrival window: from the
                               warm-up's end to the last arrival (the same span for every policy
                               at the same trace and load) */
} metrics_req;

/* Buckets of idle-stretch lengths for the moved compute (metrics_stretch_hi). */
enum { METRICS_STRETCHES = 4 };

/* Idle GPU slices: gaps in a GPU's compute timeline (between iterations, and the host phase
 * that opens each iteration, when the GPU waits for the engine's CPU work), by length. */
typedef struct metrics_slices {
    uint64_t count[METRICS_SLICE_BUCKETS];
    /* summed lengths over every GPU, ns. A double, because an int64 would wrap: one GPU's
     * idle time fits (it is at most the simulated time), but 1,024 GPUs idle for 105 days
     * already pass INT64_MAX ns. */
    double gpu_ns[METRICS_SLICE_BUCKETS];
    double free_byte_ns[METRICS_SLICE_BUCKETS];   /* free GPU memory x length, for the mean */
} metrics_slices;

/* Automatic prefix caching. Lookups at a request's first admission give the hit rate; every
 * admission (a recompute after preemption too) adds the prefill tokens it saved. */
typedef struct metrics_prefix {
    uint64_t lookups;         /* first admissions of measured requests */
    uint64_t query_tokens;    /* their prompt tokens */
    uint64_t query_blocks;    /* their prompts' full blocks that carry an identity */
    uint64_t hit_tokens;      /* tokens found cached at first admission */
    uint64_t hit_blocks;      /* blocks found cached at first admission */
    uint64_t saved_tokens;    /* prefill tokens not computed, over every admission */
    uint64_t evictions;       /* cached blocks evicted (whole run, by the container's tenant) */
    uint64_t ceiling_hit_tokens; /* tokens an unbounded cache shared by the tenant's containers
                                    would have found at first admission (the ceiling) */
    uint64_t ceiling_hit_blocks; /* its blocks */
} metrics_prefix;

/* One prefix-cache lookup at an admission. */
typedef struct metrics_lookup {
    uint32_t prompt;          /* the request's prompt tokens */
    uint32_t query_blocks;    /* its prompt's full blocks that carry an identity */
    uint32_t hit_blocks;      /* found in its container's cache and taken */
    uint32_t hit_tokens;      /* their tokens */
    uint32_t ceiling_blocks;  /* found in its tenant's unbounded shared cache (the ceiling) */
    uint32_t ceiling_tokens;  /* their tokens */
} metrics_lookup;

/* The KV pool below the prefix caches. The lookups and loads are those of measured
 * requests, at every admission that read the pool; offloads and evictions are the whole run's,
 * by the tenant whose cache offloaded the block. Blocks are KV-cache blocks (block_size
 * tokens), bytes those of every GPU of the replica together. */
typedef struct metrics_kvpool {
    uint64_t lookups;          /* admissions whose chain went on past the GPU cache into the pool */
    uint64_t gpu_blocks;       /* blocks those admissions found in the GPU cache */
    uint64_t cpu_blocks;       /* blocks loaded from the node's own CPU tier */
    uint64_t ssd_blocks;       /* ... from its own SSD tier */
    uint64_t remote_blocks;    /* ... from another node's tiers (cluster scope) */
    uint64_t loads;            /* admissions that loaded (the load was the cheaper) */
    uint64_t load_bytes;       /* bytes they loaded */
    ss_time load_ns;           /* their loads' time, waiting for the host link included */
    uint64_t recomputes;       /* admissions that found blocks in the pool but recomputed them
                                  (cheaper than loading) */
    uint64_t recompute_blocks; /* those blocks */
    uint64_t offload_blocks;   /* blocks the GPU caches evicted into the pool */
    uint64_t offload_bytes;
    uint64_t demotions;        /* blocks moved from a CPU tier down to an SSD tier */
    uint64_t evictions;        /* blocks dropped from the pool */
} metrics_kvpool;

/* KV transfers of disaggregated serving: a request's KV from its prefill instance to its decode
 * instance, for measured requests (all zero for co-located tenants). */
typedef struct metrics_kv {
    uint64_t transfers;       /* transfers that landed */
    double bytes;             /* KV bytes they moved */
    ss_time exposed_ns;       /* summed exposed transfer time: from the moment a transfer could
                                 start (the prefill's end, or the decode blocks' reservation when
                                 it waited for them) to its landing, ns */
    ss_time wait_ns;          /* summed wait for free decode blocks before a transfer, ns */
    uint64_t waits;           /* transfers that waited for decode blocks */
} metrics_kv;

/* Everything measured about one set of requests (the run, a tenant, a tier). */
typedef struct metrics_group {
    uint64_t requests, completed, rejected, truncated, preemptions;
    uint64_t prompt_tokens;   /* of completed requests */
    uint64_t output_tokens;   /* generated by completed requests */
    uint64_t sla_violations;  /* requests that broke their SLA (rejected ones that had one too) */
    uint64_t good_tokens;     /* output tokens of completed requests that met their SLA */
    uint64_t win_tokens;      /* output tokens emitted in the arrival window (every request,
                                 warm-up arrivals included; metrics_req.win_tokens) */
    uint64_t win_good_tokens; /* those of completed requests that met their SLA */
    uint64_t rejected_why[METRICS_REJ__COUNT]; /* rejected requests by reason */
    ss_hist ttft, tbt, e2e;   /* ns; tbt holds every inter-token gap once metrics_flush ran */
    metrics_prefix prefix;    /* automatic prefix caching (all zero when off) */
    metrics_kvpool kvpool;    /* the KV pool (all zero when off) */
    metrics_kv kv;            /* KV transfers of disaggregated serving (all zero otherwise) */
} metrics_group;

/* The inter-token gaps of one (tenant, tier) pair. A gap is recorded once, here, rather than
 * in the run's, its tenant's and its tier's histograms: metrics_flush folds each pair into
 * those three by adding bucket counts (metrics.c says how that compares to adding each gap
 * to each group). */
typedef struct metrics_cell {
    ss_hist tbt;              /* ns; the pair's gaps, but for the buffered run */
    ss_time gap_v;            /* run-length buffer of equal gaps not yet in tbt */
    uint64_t gap_n;
} metrics_cell;

typedef struct metrics {
    metrics_group all;
    metrics_group *tenants;    /* owned, n_tenants entries */
    uint32_t n_tenants;
    metrics_group *tiers;      /* owned, SS_MAX_TIERS entries (NULL with
                                  metrics_init_counters: kept apart, so that a what-if's
                                  metrics, inside its simulator, are small to clear) */
    uint32_t n_tiers;          /* tiers present (highest tier seen + 1) */
    /* owned, (n_tenants + 1) x SS_MAX_TIERS, tenant-major: gaps not yet in the groups; the
     * last row takes a tenant out of range, which counts in the run and its tier only */
    metrics_cell *cells;
    ss_time measure_from;      /* requests arriving earlier are not measured */
    /* run-level counters, every request included */
    uint64_t arrived;          /* all requests, warm-up included */
    uint64_t swap_outs;        /* preemptions by swap */
    uint64_t aborted;          /* rejected after admission (the preemption livelock guard) */
    uint64_t migrations;       /* completed live migrations */
    uint64_t migrations_aborted;
    double migration_bytes;    /* KV bytes moved by migrations, aborted ones included */
    uint64_t reallocations;    /* containers moved between tenants */
    uint64_t scale_ups, scale_downs; /* auto-scaling: standby containers activated / retired */
    uint64_t advice_declined;  /* cluster-policy advice the state no longer allowed when applied */
    metrics_slices slices;     /* idle GPU slices within the measurement window */
    /* offloaded prefills (SliceScheduler), every request included */
    uint64_t offloads, offloads_done; /* started; rejoined their container */
    uint64_t offload_chunks;   /* chunks (embedding, layers, head) run on helper GPUs */
    uint64_t offload_ops;      /* operators of the offloaded prefills that completed */
    uint64_t slices_used;      /* idle stretches of helper GPUs that took guest chunks */
    uint64_t stagings, evictions; /* guest weights staged on a helper; evicted for its own KV */
    double offload_bytes;      /* weights streamed to helpers + KV sent home */
    uint64_t offload_predicted;   /* finished offloads that had a what-if prediction */
    ss_time offload_pred_err_ns;  /* sum of |predicted - simulated| first-token times */
    ss_time moved_ns[METRICS_STRETCHES]; /* guest compute on helper GPUs (GPU-ns), by the
                                            length of the helper's idle stretch it ran in */
    ss_time last_finish;       /* latest completion or rejection */
    ss_time last_completion;   /* latest completion (every request): the window's end */
    ss_time last_arrival;      /* latest arrival (every request): the arrival window's end */
    uint64_t kvpool_peak[2];   /* the KV pool's highest occupancy of its CPU and SSD tiers,
                                  every node together, bytes */
    int oom;                   /* an allocation failed while recording */
} metrics;

typedef struct metrics_pct {
    double mean, p50, p90, p99, max; /* ms */
} metrics_pct;

/* Summary of one group over the measurement window. */
typedef struct metrics_group_summary {
    uint64_t requests, completed, rejected, truncated, preemptions;
    uint64_t prompt_tokens, output_tokens, sla_violations;
    uint64_t rejected_why[METRICS_REJ__COUNT]; /* rejected by reason (they sum to rejected) */
    double prompt_tokens_per_s;   /* prompt tokens of completed requests / window */
    double output_tokens_per_s;   /* generated tokens / window */
    double requests_per_s;        /* completed / window */
    double goodput_tokens_per_s;  /* output tokens of SLA-meeting requests / window */
    double win_output_tokens_per_s;  /* tokens emitted in the arrival window / its length */
    double win_goodput_tokens_per_s; /* of them, those of SLA-meeting requests / its length */
    double sla_violation_rate;    /* sla_violations / requests (0 when none) */
    metrics_pct ttft_ms, tbt_ms, e2e_ms;
    metrics_prefix prefix;        /* prefix caching counters (see metrics_prefix) */
    double prefix_hit_rate;       /* hit_tokens / query_tokens (0 when none) */
    double prefix_block_hit_rate; /* hit_blocks / query_blocks (0 when none) */
    double prefix_ceiling_hit_rate; /* ceiling_hit_tokens / query_tokens (0 when none) */
    metrics_kvpool kvpool;        /* the KV pool's counters (see metrics_kvpool) */
    metrics_kv kv;                /* KV transfers (see metrics_kv) */
    double kv_exposed_mean_ms;    /* kv.exposed_ns / kv.transfers, ms (0 when none) */
} metrics_group_summary;

typedef struct metrics_summary {
    metrics_group_summary all;    /* the measured requests of the run */
    uint64_t requests;            /* every request, warm-up included */
    uint64_t swap_outs, aborted, migrations, migrations_aborted, reallocations;
    uint64_t scale_ups, scale_downs;
    uint64_t advice_declined;
    double migration_gib;
    uint64_t idle_slices;         /* idle GPU slices in the window, every GPU */
    double idle_gpu_s;            /* their summed length, GPU-seconds */
    uint64_t offloads, offload_ops, slices_used; /* offloaded prefills (every request) */
    double offload_gib;           /* weights streamed and KV sent for them */
    double pred_err_ms;           /* mean |predicted - simulated| first token of an offload */
    double moved_gpu_s[METRICS_STRETCHES]; /* moved compute by idle-stretch length, GPU-s */
    double sim_s;                 /* simulated time: 0 to the last event (a tick, a load, ...), s */
    double window_s;              /* measurement window: warm-up end to the last completion, s */
    double arrival_window_s;      /* the arrival window: warm-up end to the last arrival, s; the
                                     same for every policy at the same trace and load */
    uint64_t kvpool_peak[2];      /* the KV pool's peak CPU and SSD occupancy, bytes */
} metrics_summary;

/* Prepare m for n_tenants tenants, measuring requests that arrive at or after measure_from.
 * 0 or SS_ENOMEM. */
int metrics_init(metrics *m, uint32_t n_tenants, ss_time measure_from);
/* Prepare m to keep the run-level counters and the idle slices alone: no tenants' groups and
 * no gap cells (n_tenants 0), for a what-if fork, which records no request, gap, lookup or
 * transfer (metrics_add_req, metrics_add_gap(s), metrics_add_prefix, metrics_add_kvpool,
 * metrics_add_kv and metrics_flush must not be called on m). Allocates nothing. */
void metrics_init_counters(metrics *m, ss_time measure_from);
/* Release everything; m is zeroed. */
void metrics_fini(metrics *m);
/* Fold one finished or rejected request in (when measured). Sets m->oom on failure. */
void metrics_add_req(metrics *m, const metrics_req *r);
/* metrics_add_gap(s) when gap does not extend the pair's run: flushes the run into the pair's
 * histogram and starts (gap, n). Sets m->oom on failure. */
void metrics__new_run(metrics *m, metrics_cell *c, ss_time gap, uint64_t n);
/* Record one inter-token gap of a measured request of (tenant, tier). Equal consecutive gaps
 * of a (tenant, tier) pair are counted and added in one step. The gap reaches the groups'
 * tbt histograms at the next metrics_flush. Sets m->oom on failure. Inline: a replay calls
 * it for every generated token but a request's first. */
static inline void metrics_add_gap(metrics *m, uint16_t tenant, uint8_t tier, ss_time gap)
{
    uint32_t t = tenant < m->n_tenants ? tenant : m->n_tenants;
    uint32_t k = tier < SS_MAX_TIERS ? tier : SS_MAX_TIERS - 1;
    metrics_cell *c = &m->cells[t * SS_MAX_TIERS + k];
    /* A gap equal to the run's value extends it. An empty buffer (gap_n 0) extends too:
     * whatever gap_v it holds, the run it starts is (gap, 1). */
    if (gap == c->gap_v)
        c->gap_n++;
    else
        metrics__new_run(m, c, gap, 1);
}
/* metrics_add_gap of n equal gaps (of n requests that made a token at the same moment). */
static inline void metrics_add_gaps(metrics *m, uint16_t tenant, uint8_t tier, ss_time gap,
                                    uint64_t n)
{
    uint32_t t = tenant < m->n_tenants ? tenant : m->n_tenants;
    uint32_t k = tier < SS_MAX_TIERS ? tier : SS_MAX_TIERS - 1;
    metrics_cell *c = &m->cells[t * SS_MAX_TIERS + k];
    if (gap == c->gap_v)
        c->gap_n += n;
    else
        metrics__new_run(m, c, gap, n);
}
/* Fold every gap recorded since the last flush into the run's, tenants' and tiers' tbt
 * histograms (before summarising; a second flush adds nothing). Sets m->oom on failure. */
void metrics_flush(metrics *m);
/* Record the idle slice [from, to) of one GPU with free_bytes of memory free over it; the part
 * before measure_from is left out. Returns the length recorded (0 when nothing is left). */
ss_time metrics_add_slice(metrics *m, ss_time from, ss_time to, double free_bytes);
/* The same into sl, with m's measure_from given: a simulator that keeps each GPU's slices apart
 * (so that their sums do not depend on the order GPUs record them in) folds them into the
 * run's with metrics_slices_fold. */
ss_time metrics_slices_add(metrics_slices *sl, ss_time measure_from, ss_time from, ss_time to,
                           double free_bytes);
/* Add src's counts and sums into dst. */
void metrics_slices_fold(metrics_slices *dst, const metrics_slices *src);
/* Count gpu_ns of moved (guest) compute that ran in an idle stretch of its helper `stretch`
 * long: from the end of the helper's own compute to the start of its next (its host phase
 * included), or to the end of the run. */
void metrics_add_moved(metrics *m, ss_time stretch, ss_time gpu_ns);
/* The upper bound of idle-stretch bucket b, ns (SS_TIME_MAX for the last): < 10 ms,
 * 10-100 ms, 0.1-1 s, > 1 s. */
ss_time metrics_stretch_hi(int b);
/* Reason r (METRICS_REJ_*) as the report and the JSON name it ("too_long", ...), and as a
 * phrase for people ("prompt > max-model-len"); NULL when r is out of range. */
const char *metrics_reject_key(int r);
const char *metrics_reject_phrase(int r);
/* Bounds of slice bucket i in ns: [lo, hi); hi is SS_TIME_MAX for the last. */
ss_time metrics_slice_bucket_lo(int i);
ss_time metrics_slice_bucket_hi(int i);
/* End of the measurement window: the last completion of any request (warm-up ones too), or
 * measure_from when that is later (an empty window). Periodic work after it (cluster and
 * SliceScheduler ticks, weight loads) does not stretch the window. */
ss_time metrics_window_end(const metrics *m);
/* Summaries over the measurement window [measure_from, metrics_window_end]; sim_end (the
 * time of the run's last event) only gives sim_s. */
void metrics_summarize(const metrics *m, ss_time sim_end, metrics_summary *out);
void metrics_summarize_group(const metrics_group *g, double window_s, metrics_group_summary *out);
/* The arrival window's length, s (0 when the last arrival precedes the warm-up's end). */
double metrics_arrival_window_s(const metrics *m);
/* Fill g's rates over the arrival window (win_*_per_s) into out, after
 * metrics_summarize_group (metrics_summarize does it for the run's group). */
void metrics_summarize_window(const metrics *m, const metrics_group *g,
                              metrics_group_summary *out);
/* One admission of a measured request of `tenant` read the KV pool: gpu blocks found in the
 * GPU cache, then tier_blocks[0..2] (CPU, SSD, remote) in the pool; loaded (load_bytes in
 * load_ns) or recomputed. */
void metrics_add_kvpool(metrics *m, uint16_t tenant, uint32_t gpu, const uint32_t tier_blocks[3],
                        int loaded, uint64_t load_bytes, ss_time load_ns);

/* Fold one landed KV transfer of a tenant's request in (measured = arrived after the warm-up):
 * bytes moved, exposed time and the wait for decode blocks before it (0: none), ns. */
void metrics_add_kv(metrics *m, uint16_t tenant, int measured, double bytes, ss_time exposed_ns,
                    ss_time wait_ns);
/* Fold one prefix-cache lookup of a tenant's request in: first = its first admission (counts
 * toward the hit rate and the ceiling), measured = arrived after the warm-up. */
void metrics_add_prefix(metrics *m, uint16_t tenant, int measured, int first,
                        const metrics_lookup *l);
/* Fold lookup l into one set of counters p (a group's, or a container's: its own record);
 * first as for metrics_add_prefix. */
void metrics_prefix_add(metrics_prefix *p, int first, const metrics_lookup *l);
/* p's hit rates: tokens found over prompt tokens, blocks found over identified blocks, and the
 * ceiling's tokens over prompt tokens (0 when nothing was looked up). */
double metrics_prefix_hit_rate(const metrics_prefix *p);
double metrics_prefix_block_hit_rate(const metrics_prefix *p);
double metrics_prefix_ceiling_rate(const metrics_prefix *p);

#endif
