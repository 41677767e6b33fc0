/* Multi-tenant workloads: one merged, time-ordered stream of requests built from a per-tenant
 * description. Each tenant's requests come from a trace file (all of it, the rows of one named
 * tenant, or a share of a trace split with other tenants round-robin, by weight, or by prompt
 * length class), from the synthetic generator, or from a ServeGen client's fitted per-window
 * arrival process and token PMFs. Each request gets its tenant index and a tier, taken from
 * the trace or sampled from a tier mix. Streaming: memory follows the number of tenants, not
 * the number of requests. Deterministic for a given seed; every tenant has its own rng streams,
 * so adding a tenant never changes another tenant's requests. */
#ifndef SS_WORKLOAD_WORKLOAD_H
#define SS_WORKLOAD_WORKLOAD_H

#include <stdint.h>

#include "core/ss_err.h"
#include "core/ss_limits.h"
#include "core/ss_rng.h"
#include "trace/trace.h"


/* ---- tier mixes ------------------------------------------------------------------------- */

typedef enum wl_mix_kind {
    WL_MIX_TRACE,      /* the trace's tier column (clamped to K - 1); tier 0 when absent */
    WL_MIX_UNIFORM,    /* 1/K each */
    WL_MIX_GAUSSIAN,   /* K = 5: [.05 .2 .5 .2 .05]; other K: a normal centred on the middle
                          tier with the same relative spread, normalised */
    WL_MIX_ENTERPRISE, /* K = 5: [.10 .30 .50 .08 .02]; other K: resampled from that shape */
    WL_MIX_POWERLAW,   /* p_k ~ (k + 1)^-alpha: tier 0 the most common */
    WL_MIX_WEIGHTS,    /* explicit weights "w0,w1,..." (normalised) */
} wl_mix_kind;

typedef struct wl_tier_mix {
    wl_mix_kind kind;
    uint32_t k;               /* tiers, 1..SS_MAX_TIERS */
    double p[SS_MAX_TIERS];   /* probability of each tier (sums to 1; unused for WL_MIX_TRACE) */
} wl_tier_mix;

/* Build a mix: name is "trace", "uniform", "gaussian", "enterprise", "powerlaw" (alpha > 0, use
 * 1 when unsure) or "weights:W0,W1,..." (exactly k non-negative weights, not all 0).
 * 0 or SS_EINVAL with "tier_mix: ..." in eb; *m is written only on success. tier_mix.c
 * documents how each shape is generalised from K = 5 to other K. */
int wl_tier_mix_make(wl_tier_mix *m, const char *name, uint32_t k, double alpha, ss_errbuf *eb);
/* Draw a tier from m with r (one uniform; nothing is drawn for one tier or the trace mix,
 * which always gives 0: the caller keeps the trace's tier). */
uint8_t wl_tier_draw(const wl_tier_mix *m, ss_rng *r);

/* ---- tenants ---------------------------------------------------------------------------- */

typedef enum wl_split {
    WL_SPLIT_NONE,   /* the tenant has the trace to itself (or the rows of trace_tenant) */
    WL_SPLIT_RR,     /* tenants naming the same trace take its rows in turn */
    WL_SPLIT_RANDOM, /* ... at random in proportion to their weight */
    WL_SPLIT_CLASS,  /* ... by prompt length: a row goes to the tenant whose [lo, hi] holds it */
} wl_split;

typedef struct wl_tenant_spec {
    const char *name;            /* tenant name (borrowed) */
    /* exactly one source: */
    const char *trace;           /* trace path, or NULL */
    const char *trace_format;    /* "auto" or a format name (NULL = auto) */
    int trace_spread;            /* spread equal timestamps (trace_reader_set_spread) */
    int trace_sort;              /* read the trace whole and sort it (trace_reader_set_sort) */
    const char *trace_tenant;    /* keep only rows of this tenant name (native/burstgpt), or NULL */
    wl_split split;              /* how a trace shared by several tenants is divided */
    double weight;               /* WL_SPLIT_RANDOM weight (> 0) */
    uint32_t class_lo, class_hi; /* WL_SPLIT_CLASS prompt-token range, inclusive */
    const trace_gen_spec *synth; /* synthetic generator spec (borrowed), or NULL */
    const char *servegen;        /* ServeGen client "CATEGORY/POOL/CLIENT" relative to the
                                    ServeGen directory, e.g. "language/m-mid/17", or NULL */
    double servegen_start_s;     /* ServeGen: offset into the client's period, s */
    /* shaping, whatever the source: */
    double rate_scale;           /* arrival times divided by this (> 0) */
    double duration_s;           /* stop the tenant's stream at this time (0 = no limit) */
    uint64_t limit;              /* at most this many requests (0 = no limit) */
    wl_tier_mix tiers;           /* how the tier is assigned */
} wl_tenant_spec;

typedef struct wl_source wl_source;

/* Build the merged stream of n tenants (n <= SS_MAX_TENANTS). specs and their strings are
 * borrowed for this call only (copied as needed). Requests carry tenant = index of
 * their spec and a tier from its mix; ids are renumbered 0, 1, ... in merged order (the trace's
 * own id is lost). servegen_dir is where ServeGen's category folders live (NULL: only needed
 * when a tenant names a ServeGen client). Validates every spec (one source, split partners on
 * the same trace agree, weights and classes sane, files readable). 0, or SS_EINVAL / SS_EPARSE
 * / SS_ENOTFOUND / SS_ENOMEM / SS_EIO with "tenant NAME: ..." or the reader's FILE:LINE message
 * in eb; nothing returned on failure. */
/* Sources. Tenants naming the same trace path (as written) with a split other than none share
 * one reader and must agree on trace_format, trace_spread, trace_tenant, split and
 * rate_scale; rows are dealt in turn (rr), at random by weight (random; the stream of the
 * group's first tenant), or by prompt length (class: ranges must not overlap; a row in no
 * range is dropped, see wl_source_n_dropped). trace_tenant filters rows before dealing; a
 * name that never occurs is an error once the trace ends. A synthetic tenant's generator seed
 * is spec->seed when not 0, else derived from (seed, tenant index); ServeGen follows upstream's
 * generator (servegen.c). Shaping per tenant: arrival = llround(arrival / rate_scale), then
 * the first arrival > duration_s ends the tenant, and so does the limit-th request; an arrival
 * beyond the simulated time range (SS_ARRIVAL_MAX) that no duration ended is an error. Every
 * tenant has its own tier (and ServeGen) rng streams, derived from (seed, tenant index), so
 * appending a tenant changes no other tenant's requests. */
int wl_source_create(wl_source **s_out, const wl_tenant_spec *specs, uint32_t n, uint64_t seed,
                     const char *servegen_dir, ss_errbuf *eb);
/* Read the stream that wl_source_create(specs, ...) would give, to the end, and fail as that
 * would, before anything runs: in particular with SS_EINVAL ("tenant NAME: rate_scale: arrival
 * times would exceed the simulated time range ...") when a tenant's rate_scale stretches an
 * arrival beyond SS_ARRIVAL_MAX. Only a rate_scale below 1 stretches, so without one (and
 * when a trace is standard input, which can be read only once) it reads nothing and returns
 * 0. Otherwise 0 or what wl_source_create and wl_source_next return. */
int wl_source_check_range(const wl_tenant_spec *specs, uint32_t n, uint64_t seed,
                          const char *servegen_dir, ss_errbuf *eb);
/* Next request in arrival order (ties: lower tenant index first, then the tenant's own order).
 * 1, 0 at the end, or <0 with eb set (a reader error: FILE:LINE: field: ...; sticky).
 * out->prefix_blocks is owned by the source and stays valid until the next wl_source_next or
 * wl_source_destroy call. */
int wl_source_next(wl_source *s, trace_rec *out, ss_errbuf *eb);
/* Close every reader and free the source. NULL-safe; sets *s to NULL. */
void wl_source_destroy(wl_source **s);
/* Rows that readers skipped (failed requests, rows of other tenants are not counted). */
uint64_t wl_source_n_skipped(const wl_source *s);
/* Rows of class-split traces that no tenant's [class_lo, class_hi] holds: dropped. */
uint64_t wl_source_n_dropped(const wl_source *s);
/* FNV-1a 64 over the seed, the digests of every trace read (bytes consumed so far), the
 * synthetic/ServeGen specs (and ServeGen bytes read), and each tenant's shaping and mix. */
uint64_t wl_source_digest(const wl_source *s);
/* Human-readable format of tenant i's source ("native", "azure", "synthetic", "servegen");
 * NULL when i is out of range. */
const char *wl_source_format(const wl_source *s, uint32_t i);

#endif
