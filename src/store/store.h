/* The results store: one SQLite database file holding every run (runs, requests, summary,
 * gpus; schema in store_open.c, documented in docs/reference/database.md, versioned by PRAGMA
 * user_version). A run is one transaction: it appears whole or not at all, so a killed or failed run leaves
 * the earlier runs intact. The only module that talks to SQLite. */
#ifndef SS_STORE_STORE_H
#define SS_STORE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "core/ss_err.h"
#include "metrics/metrics.h"

#define STORE_SCHEMA_VERSION 18

typedef struct store store;

/* What a run keeps in the database (--store): its summary only (the runs, summary, tenants,
 * tiers, gpus, idle_slices and instances rows), also each request (the requests table: the
 * default), or also each iteration of every container (the iterations table). */
typedef enum store_keep {
    STORE_KEEP_REQUESTS = 0,
    STORE_KEEP_SUMMARY,
    STORE_KEEP_ITERATIONS,
} store_keep;
/* The level's name ("summary", "requests", "iterations"), as runs.stored holds it. */
const char *store_keep_name(store_keep k);
/* The level named name: 0 with *out set, or SS_EPARSE with eb naming the choices. */
int store_keep_parse(const char *name, store_keep *out, ss_errbuf *eb);

/* What identifies a run (all strings borrowed for the call). */
typedef struct store_run_info {
    const char *command;      /* the command line, for reproduction */
    const char *trace;        /* trace path or generator description */
    const char *trace_format; /* reader used */
    const char *model, *gpu;
    uint32_t replicas, tp;
    const char *batching, *routing, *cost_model;
    const char *params_json;  /* resolved policy/engine parameters as a JSON object */
    uint64_t seed;
    double rate_scale;
    uint64_t limit;           /* 0 = whole trace */
    uint32_t pp;              /* pipeline stages */
    const char *cluster_policy; /* "container", "llumnix", ... */
    double warmup_s;          /* measurement starts here */
    const char *scenario_ini; /* the scenario as INI text, "" when the run had none */
    const char *ops;          /* operator placement: "home" or "slice" (NULL: home) */
    const char *sweep;        /* the sweep this run is a point of, and the point's key (both */
    const char *point;        /* NULL when the run is not part of a sweep); a later run of the
                                 same point takes its place there */
    double load;              /* compare's or a sweep's load multiplier; 0: none (a replay) */
    const char *engine;       /* serving-engine profile (tenant 0's, like model; every
                                 tenant's is in the scenario); NULL: vllm-eager */
    const char *bundle;       /* the policy bundle compare, capacity or a sweep ran it under
                                 (its label); NULL: none (a plain replay) */
    store_keep keep;          /* what of the run is kept (runs.stored) */
} store_run_info;

/* One iteration of a container (the iterations table), kept under STORE_KEEP_ITERATIONS. */
typedef struct store_iter_row {
    uint32_t container;
    uint64_t iteration;             /* the container's own iteration number */
    const char *tenant;             /* the container's tenant (borrowed; NULL: none) */
    double start_s, end_s;          /* simulated time, host phases included */
    uint32_t prefill_seqs, decode_seqs, swap_blocks;
    uint64_t prefill_tokens, decode_ctx_tokens;
} store_iter_row;

/* Per-GPU outcome of a run. */
typedef struct store_gpu_row {
    uint32_t gpu, node, container;
    const char *kind;
    double busy_s, utilization;     /* busy time (whole run); compute_s / window_s */
    uint64_t iterations;
    uint32_t kv_blocks, kv_peak_blocks;
    double weights_gib, kv_pool_gib;
    double device_busy_s;           /* busy_s without the host phases */
    uint64_t idle_slices;           /* idle slices in the measurement window */
    double idle_s;                  /* their summed length */
    const char *tenant;             /* its container's tenant at the end (borrowed) */
    double window_s, compute_s;     /* the measurement window; computing in it */
    double host_s;                  /* the part of idle_s in its container's host phases */
    uint32_t phys;                  /* the physical GPU it is, or is a share of */
    const char *share;              /* "whole", or its share ("mig:3g.40gb"; borrowed) */
} store_gpu_row;

/* Run-level figures known only at the end. */
typedef struct store_run_end {
    double wall_s;           /* wall-clock seconds of the simulation */
    uint64_t events;         /* events dispatched */
    uint64_t iterations;     /* iterations executed over all containers */
    uint32_t peak_in_flight; /* most requests in the system at once */
    uint64_t trace_digest;   /* FNV-1a 64 of the trace bytes the run consumed */
    uint64_t whatifs;        /* SliceScheduler: forks simulated */
    uint64_t slice_decisions;/* SliceScheduler: decisions that judged a candidate */
    double slice_wall_s;     /* SliceScheduler: wall-clock time deciding */
    const char *result_json; /* the run's `replay --json` object, or NULL */
} store_run_end;

/* Open or create the database at path (its parent directory is created if missing), in WAL
 * mode with a busy timeout so concurrent writers serialise: a writer waits up to 30 s (or
 * SLICESIM_BUSY_TIMEOUT_MS from the environment) for another's run to commit, then fails with
 * "database is locked". Fails with SS_EDB if the file is not a slicesim database or has a
 * newer schema. 0, SS_EDB or SS_ENOMEM with eb set. */
int store_open(store **s_out, const char *path, ss_errbuf *eb);
/* Open the existing database at path for reading only: nothing is written to it (an older
 * schema is upgraded in a copy in memory). Fails with SS_EIO when it cannot be opened,
 * SS_EPARSE when it is bad input: empty, not SQLite, damaged where its schema is read, not a
 * slicesim database or of a newer schema; SS_EDB when it cannot be read now (locked by another
 * process). Writing through the handle fails. 0, SS_EIO, SS_EPARSE, SS_EDB or SS_ENOMEM with
 * eb set. */
int store_open_readonly(store **s_out, const char *path, ss_errbuf *eb);
/* Whether the database at path could be read as an input: store_open_readonly's checks
 * (without reading an older schema into memory), and every page read (PRAGMA quick_check),
 * so that a damaged file is SS_EPARSE with its first problem ("PATH: damaged: ...") before
 * anything is written. 0, or its error. */
int store_check_input(const char *path, ss_errbuf *eb);
/* Remove the database file at path and SQLite's files beside it (-wal, -shm, -journal);
 * missing ones are ignored. For databases a command created and must not leave behind. */
void store_remove(const char *path);
/* Whether the database already holds a committed run for point `point` of sweep `sweep`:
 * 1 (its run id in *run_id when non-NULL), 0, or a negative SS_E* code with eb set. */
int store_has_point(store *s, const char *sweep, const char *point, int64_t *run_id,
                    ss_errbuf *eb);
/* Copy every run of the database at in_path (its rows in every table, under new run ids) into
 * s, in one transaction. A run that is a sweep point s already has, or that equals a run s
 * holds (store_merge_counted), is skipped and counted in *skipped; *copied counts the others. in_path must exist and be a slicesim database; it is
 * only read (store_open_readonly; an older schema's missing columns take their defaults).
 * 0, SS_EIO, SS_EPARSE (bad input, as store_open_readonly has it; also an input found damaged
 * while it is copied, by PRAGMA integrity_check, "IN: damaged: ..."), SS_EDB or SS_ENOMEM
 * with eb set; on failure s is unchanged. */
int store_merge(store *s, const char *in_path, uint64_t *copied, uint64_t *skipped,
                ss_errbuf *eb);
/* store_merge with every count. Both also copy the input's validations (slicesim validate)
 * with their operator and iteration rows, its fits (slicesim fit) with their stages and its
 * capacities (slicesim capacity) with their seeds, under new ids, in the same transaction: one
 * that s holds already (equal in every column but the id) is skipped, so merging twice adds
 * none. A run that is not a sweep point but equals one s holds (in every runs column but the
 * id: the same run, merged before) is skipped too, and counted in runs_same. */
typedef struct store_merge_counts {
    uint64_t runs_copied, runs_skipped, validations_copied, validations_skipped;
    uint64_t fits_copied, fits_skipped; /* slicesim fit's records, like validations */
    uint64_t runs_same;       /* runs s holds already (equal in every column but the id: the
                                 same run, merged before), skipped */
    uint64_t capacities_copied, capacities_skipped; /* slicesim capacity's answers, like
                                                       validations */
} store_merge_counts;
int store_merge_counted(store *s, const char *in_path, store_merge_counts *c, ss_errbuf *eb);
/* A digest of the inputs a run was made from (runs.inputs_digest), at most this long. */
#define STORE_INPUTS_MAX 64
/* Record digest as the inputs of committed run run_id (runs.inputs_digest), in a transaction of
 * its own: what slicesim capacity compares before it reuses a stored probe. Borrowed; at most
 * STORE_INPUTS_MAX - 1 characters. 0, SS_EINVAL (a run is open, or the digest is too long) or
 * SS_EDB with eb set. */
int store_run_set_inputs(store *s, int64_t run_id, const char *digest, ss_errbuf *eb);
/* What a sweep point's run gives a capacity probe: its inputs digest and its judged figures,
 * every tenant's (the summary) or tenant's alone (its tenants row). */
typedef struct store_probe_row {
    int64_t run_id;
    char inputs[STORE_INPUTS_MAX];   /* runs.inputs_digest; "" when none was recorded */
    int has_figures;                 /* both figures were stored (a NULL is not a number) */
    double sla_violation_rate;       /* 0..1 */
    double window_goodput_tokens_per_s;
} store_probe_row;
/* Read point `point` of sweep `sweep` (tenant NULL: every tenant's figures): 1 (row filled),
 * 0 (no such point), or a negative SS_E* code with eb set. */
int store_point_probe(store *s, const char *sweep, const char *point, const char *tenant,
                      store_probe_row *row, ss_errbuf *eb);
/* The headline figures of a sweep point's run. */
typedef struct store_point_row {
    int64_t run_id;
    double output_tokens_per_s, goodput_tokens_per_s; /* over the arrival window (makespan for
                                                        runs from before schema 12) */
    double sla_violation_rate;
    double ttft_p99_ms, tbt_p99_ms, e2e_p99_ms;
    char *result_json;       /* owned (NULL when the run has none); store_point_row_free */
} store_point_row;
/* Read point `point` of sweep `sweep`: 1 (row filled), 0 (no such point), or a negative SS_E*
 * code with eb set. */
int store_point_summary(store *s, const char *sweep, const char *point, store_point_row *row,
                        ss_errbuf *eb);
void store_point_row_free(store_point_row *row);
/* Close; an open run is rolled back. When this handle created the database file (it did not
 * exist when store_open began), a write through it failed or was rolled back, and the
 * database holds nothing (every table empty), the file is removed with its -wal and -shm, so
 * that a failed first run leaves nothing behind; a file that existed before, or that another
 * connection has open, is always kept. NULL-safe; sets *s to NULL. */
void store_close(store **s);
/* store_close, and when this handle created the database file and no other connection has it
 * open, remove it with its -wal and -shm whatever it holds: for an output a command made and
 * must not leave behind when it fails part-way (db merge). NULL-safe; sets *s to NULL. */
void store_close_discard(store **s);
/* Start a run: BEGIN IMMEDIATE and insert its runs row. *run_id_out gets its id. */
int store_run_begin(store *s, const store_run_info *info, int64_t *run_id_out, ss_errbuf *eb);
/* Append one request row to the open run (ignored when the run keeps only its summary,
 * STORE_KEEP_SUMMARY). tenant is the tenant's name (borrowed). Rows are
 * inserted in chunks, when a chunk fills and at store_run_commit, so a failure to insert one
 * may be reported by a later call or by the commit. 0, or SS_EINVAL (no run is open),
 * SS_ENOMEM or SS_EDB with eb set. */
int store_run_request(store *s, const metrics_req *r, const char *tenant, ss_errbuf *eb);
/* Append one iteration row to the open run: stored when the run keeps iterations
 * (STORE_KEEP_ITERATIONS), ignored otherwise. 0, or SS_EINVAL (no run is open) or SS_EDB with
 * eb set. */
int store_run_iteration(store *s, const store_iter_row *row, ss_errbuf *eb);
/* Append the results of one tenant / one tier to the open run. A disaggregated tenant gives
 * its pools' sizes (prefill, decode; 0, 0 for a co-located one), and its KV transfers come
 * from g->kv. */
int store_run_tenant(store *s, const char *tenant, const char *model, const char *share,
                     uint32_t replicas, uint32_t prefill, uint32_t decode,
                     const metrics_group_summary *g, ss_errbuf *eb);
int store_run_tier(store *s, uint32_t tier, const metrics_group_summary *g, ss_errbuf *eb);
/* Append the idle-slice histogram (one row per length bucket) to the open run. */
int store_run_slices(store *s, const metrics_slices *sl, ss_errbuf *eb);
/* Append one GPU row to the open run. */
int store_run_gpu(store *s, const store_gpu_row *row, ss_errbuf *eb);
/* One instance (container) row of the open run: its tenant at the end (borrowed) and its
 * prefix-cache lookups and evictions p (all zero with caching off). 0 or SS_EDB. */
int store_run_instance(store *s, uint32_t container, const char *tenant,
                       const metrics_prefix *p, ss_errbuf *eb);
/* Write the summary and end-of-run figures, then COMMIT. On failure the run is rolled back. */
int store_run_commit(store *s, const metrics_summary *sum, const store_run_end *end,
                     ss_errbuf *eb);
/* Roll the open run back (nothing of it remains). No-op when no run is open. */
void store_run_abort(store *s);

/* {======================================================================
 * Reading results for figures (store_read.c): typed rows, so that no SQL leaves the store.
 * Every reader steps through the same path as the writers (a failed step is SS_EDB with eb
 * set, never "no rows"). A callback gets one row at a time, borrowed for the call (its text
 * too), and returns 0 to go on or an SS_E* code, which stops the read and is returned.
 * A real column reads as SQLite's text of it converted back (a REAL's 15 significant digits),
 * as the figures have always been computed; a NULL reads as NaN (SQLite stores no NaN).
 * ======================================================================= */

/* The sweep of the newest sweep point (the highest run id) into *name_out (owned, ss_free;
 * NULL when the database has no sweep points). 0, SS_EDB or SS_ENOMEM with eb set. */
int store_newest_sweep(store *s, char **name_out, ss_errbuf *eb);

/* The points of sweep `sweep` by run id: each point's run and key ("policy=slice;rate=2"). */
typedef int store_sweep_point_fn(void *ud, int64_t run_id, const char *point, ss_errbuf *eb);
int store_sweep_points(store *s, const char *sweep, store_sweep_point_fn *fn, void *ud,
                       ss_errbuf *eb);

/* The settings of a run that store_run_row.settings holds, in this order, by their column
 * names in the runs table: "model", "gpu", "replicas", "tp", "pp", "batching", "routing",
 * "cost_model", "trace", "limit_requests", "warmup_s". */
#define STORE_RUN_SETTINGS 11
extern const char *const store_run_setting_names[STORE_RUN_SETTINGS];

/* A run as a figure groups it. Text is NULL where the column is NULL. */
typedef struct store_run_row {
    int64_t run_id;
    const char *cluster_policy;  /* "container", "llumnix", ... */
    const char *ops;             /* operator placement: "home" or "slice" */
    double load;                 /* load, else rate_scale (NaN: neither) */
    const char *scenario_ini;    /* the scenario as INI text ("" when the run had none) */
    const char *settings[STORE_RUN_SETTINGS]; /* as SQLite renders them as text ("5.0") */
} store_run_row;
/* Every run, by run id. */
typedef int store_run_fn(void *ud, const store_run_row *run, ss_errbuf *eb);
int store_runs(store *s, store_run_fn *fn, void *ud, ss_errbuf *eb);

/* A run's headline figures from the summary table. */
typedef struct store_summary_row {
    int64_t run_id;
    double output_tokens_per_s, goodput_tokens_per_s; /* over the arrival window (makespan for
                                                        runs from before schema 12) */
    double sla_violation_rate;   /* 0..1 */
    double ttft_p99_ms;
} store_summary_row;
/* Every run's summary, in the table's order. */
typedef int store_summary_fn(void *ud, const store_summary_row *row, ss_errbuf *eb);
int store_summaries(store *s, store_summary_fn *fn, void *ud, ss_errbuf *eb);

/* The latencies of a run's requests a CDF is drawn from. */
typedef enum store_latency { STORE_LAT_TTFT, STORE_LAT_E2E } store_latency;
/* The TTFT or E2E (ms) of run run_id's measured completed requests, those above 0, ascending:
 * *v_out (owned, ss_free; NULL when none) and their count *n_out, written only on success.
 * 0, SS_EDB or SS_ENOMEM with eb set. */
int store_run_latencies(store *s, int64_t run_id, store_latency which, double **v_out,
                        size_t *n_out, ss_errbuf *eb);

/* A GPU's time over a run's measurement window (the gpus table). Databases older than version 9
 * have no tenant nor window columns: their window is the summary's and compute the window less
 * the idle slices; their host time is only known over the whole run (busy_s - device_busy_s),
 * which is the window's when the run had no warm-up. */
typedef struct store_gpu_time_row {
    int64_t gpu;
    const char *tenant;          /* its container's tenant at the end; NULL before version 9 */
    double window_s, compute_s, host_s; /* NaN: unknown (a database from before idle slices) */
    double idle_s;               /* every idle slice, host phases included (NaN: unknown) */
} store_gpu_time_row;
/* Each GPU of run run_id, by GPU index. */
typedef int store_gpu_time_fn(void *ud, const store_gpu_time_row *row, ss_errbuf *eb);
int store_run_gpu_times(store *s, int64_t run_id, store_gpu_time_fn *fn, void *ud,
                        ss_errbuf *eb);

/* One slice-length bucket of a run's idle-slice histogram. */
typedef struct store_idle_slice_row {
    int64_t bucket;              /* 0..METRICS_SLICE_BUCKETS-1 */
    double gpu_s;                /* summed length */
} store_idle_slice_row;
typedef int store_idle_slice_fn(void *ud, const store_idle_slice_row *row, ss_errbuf *eb);
/* Each bucket of run run_id's idle-slice histogram, in the table's order. */
int store_run_idle_slices(store *s, int64_t run_id, store_idle_slice_fn *fn, void *ud,
                          ss_errbuf *eb);

/* One tier's results in a run (the tiers table). */
typedef struct store_tier_row {
    int64_t tier;
    double sla_violation_rate;   /* 0..1 */
    double ttft_p99_ms;
} store_tier_row;
typedef int store_tier_fn(void *ud, const store_tier_row *row, ss_errbuf *eb);
/* Each tier of run run_id, in the table's order. */
int store_run_tiers(store *s, int64_t run_id, store_tier_fn *fn, void *ud, ss_errbuf *eb);

/* One bundle of a capacity command (the capacities table). Text is NULL where NULL. */
typedef struct store_capacity_row {
    const char *bundle, *verdict, *status;
    int64_t seeds;
    double capacity, lo, hi;     /* mean over seeds and its 95 % interval */
    double ratio;                /* to the reference (NaN: none) */
} store_capacity_row;
typedef int store_capacity_fn(void *ud, const store_capacity_row *row, ss_errbuf *eb);
/* The bundles of the newest capacity command stored under sweep `sweep` (those from its
 * reference bundle's row on), in the order it ran them; none when it stored none. */
int store_capacities_of(store *s, const char *sweep, store_capacity_fn *fn, void *ud,
                        ss_errbuf *eb);

/* }====================================================================== */

/* {======================================================================
 * Validations (`slicesim validate`): predicted vs measured operator times of a simulated
 * schedule run on a GPU. One transaction per validation, like a run.
 * ======================================================================= */

typedef struct store_validation {
    const char *command, *name;          /* command line; user label ("" when none) */
    const char *model, *gpu, *device;    /* catalog model and GPU; the device's own name */
    const char *backend, *timer;         /* executor ("cuda", "sim"); "cupti", "events", ... */
    const char *cost_model, *trace;      /* cost model under test; trace path */
    uint32_t tp, reps;
    int l2_cold;
    uint64_t requests, iterations;
    double mape_pct, bias_pct;           /* per-iteration device time */
    double predicted_ms, measured_ms, measured_span_ms; /* summed over the iterations */
} store_validation;

typedef struct store_validation_op {
    const char *op;
    uint64_t executions, worst_iteration;
    double predicted_ms, measured_ms, mape_pct, bias_pct, worst_pct;
} store_validation_op;

typedef struct store_validation_iter {
    uint64_t iteration, prefills, prefill_tokens, decodes, decode_ctx_tokens;
    double sim_start_s, sim_ms;          /* simulated start and length (host time included) */
    double predicted_ms, measured_ms, measured_span_ms, predicted_host_ms, error_pct;
} store_validation_iter;

/* BEGIN IMMEDIATE and insert the validations row; *id_out gets its id. */
int store_validation_begin(store *s, const store_validation *v, int64_t *id_out, ss_errbuf *eb);
int store_validation_add_op(store *s, const store_validation_op *row, ss_errbuf *eb);
int store_validation_add_iter(store *s, const store_validation_iter *row, ss_errbuf *eb);
/* COMMIT; on failure the validation is rolled back (store_close does the same). */
int store_validation_commit(store *s, ss_errbuf *eb);

/* }====================================================================== */

/* {======================================================================
 * Fits (`slicesim fit`): an engine profile calibrated against measured serving runs, and the
 * per-stage comparison of its final engine. One transaction per fit, like a run.
 * ======================================================================= */

/* Metrics compared per stage, in this order in every array below: TTFT mean, TTFT p90, ITL,
 * E2E mean, E2E p90 (ms). */
#define STORE_FIT_METRICS 5

typedef struct store_fit {
    const char *command;       /* command line */
    const char *mode;          /* "fit" or "evaluate" */
    const char *dir;           /* the directory of measured runs */
    const char *start_engine;  /* engine the fit started from (or evaluated) */
    const char *engine;        /* name of the fitted engine (= start_engine for evaluate) */
    const char *terms;         /* comma list of the fitted terms ("" for evaluate) */
    const char *params_json;   /* every fittable term of the final engine, start and end */
    const char *profile;       /* the profile file written (NULL: none) */
    uint32_t runs, stages, fitted_stages; /* replayed runs and stages, stages in the objective */
    double served_ms;          /* a stage enters the objective below this real TTFT mean */
    double objective;          /* mean relative error over fitted stages and metrics */
    double mape_pct[STORE_FIT_METRICS]; /* per metric over the fitted stages, % */
    uint32_t runaway;          /* fitted stages whose simulated TTFT mean exceeds 1 s */
    uint64_t iterations, evaluations;
    int converged;             /* 1: the optimiser met its tolerance */
    double wall_s;
} store_fit;

typedef struct store_fit_stage {
    const char *run;
    uint32_t stage;
    double rate;               /* offered req/s (NaN: not published) */
    int fitted;                /* 1: in the objective */
    uint64_t completed;        /* simulated requests completed in the stage */
    double real[STORE_FIT_METRICS], sim[STORE_FIT_METRICS]; /* ms; NaN stored as NULL */
} store_fit_stage;

/* BEGIN IMMEDIATE and insert the fits row; *id_out (may be NULL) gets its id. Strings are
 * borrowed for the call. */
int store_fit_begin(store *s, const store_fit *f, int64_t *id_out, ss_errbuf *eb);
int store_fit_add_stage(store *s, const store_fit_stage *row, ss_errbuf *eb);
/* COMMIT; on failure the fit is rolled back (store_close does the same). */
int store_fit_commit(store *s, ss_errbuf *eb);

/* }====================================================================== */

/* {======================================================================
 * Capacities (`slicesim capacity`): each bundle's answer over its seeds (capacities) and each
 * seed's search (capacity_seeds), all of one command in one transaction. A NaN is stored as
 * NULL ("none": no ratio, no bracket side).
 * ======================================================================= */

typedef struct store_capacity {
    const char *command, *scenario; /* command line; the scenario file */
    const char *sweep;         /* the sweep its probes' runs are points of */
    const char *bundle;        /* the bundle's label */
    const char *reference;     /* the first bundle's label: what ratio is against */
    const char *criterion;     /* "worst", "pooled" or "tenant" */
    const char *tenant;        /* the judged tenant under "tenant" (NULL: none) */
    double sla_miss_bound, tol;
    uint32_t seeds;
    const char *status;        /* "found", "below" or "above" (below if a seed's is, ...) */
    const char *verdict;       /* what the ratio's interval says; "reference" for the first */
    int converged, censored;   /* every seed's search converged; a seed's was censored */
    double capacity, capacity_lo, capacity_hi; /* mean over seeds, 95 % interval */
    double ratio, ratio_lo, ratio_hi;          /* to the reference, paired by seed (NaN: none) */
    double bracket_lo, bracket_hi; /* one seed: its bracket (NaN with several, and a side
                                      that was never probed) */
    double goodput_tokens_per_s, sla_miss, pooled_sla_miss; /* at capacity, mean over seeds */
    uint32_t probes;           /* over every seed */
} store_capacity;

typedef struct store_capacity_seed {
    uint64_t seed;
    const char *status;
    int converged, censored;
    double capacity, ratio;    /* ratio NaN: none */
    double bracket_lo, bracket_hi; /* NaN: that side was never probed */
    double goodput_tokens_per_s, sla_miss, pooled_sla_miss; /* at capacity */
    uint32_t probes;
    const char *point;         /* the sweep point of its probe at capacity (NULL: none) */
} store_capacity_seed;

/* BEGIN IMMEDIATE: the capacities that follow are one transaction. */
int store_capacities_begin(store *s, ss_errbuf *eb);
/* One bundle's row; *id_out (may be NULL) gets its capacity_id. Strings borrowed. */
int store_capacity_add(store *s, const store_capacity *row, int64_t *id_out, ss_errbuf *eb);
/* One seed's search of the bundle whose row has id capacity_id. */
int store_capacity_add_seed(store *s, int64_t capacity_id, const store_capacity_seed *row,
                            ss_errbuf *eb);
/* COMMIT; on failure everything since store_capacities_begin is rolled back. */
int store_capacities_commit(store *s, ss_errbuf *eb);

/* }====================================================================== */

/* {======================================================================
 * Whole tables, for export (store_export.c)
 * ======================================================================= */

/* Each table of the database by name (ascending), borrowed for the call. */
typedef int store_table_fn(void *ud, const char *table, ss_errbuf *eb);
int store_tables(store *s, store_table_fn *fn, void *ud, ss_errbuf *eb);
/* Table `table`'s column names (one call), then each row in the table's order (a call each):
 * n cells as text, borrowed for the call: an integer in decimal, a real with the fewest
 * significant digits (15 to 17) that read back as the stored value, text as stored, NULL for
 * an SQL NULL. */
typedef int store_row_fn(void *ud, int n, const char *const *cells, ss_errbuf *eb);
int store_table_rows(store *s, const char *table, store_row_fn *fn, void *ud, ss_errbuf *eb);

/* }====================================================================== */

/* Path the store was opened with (borrowed). */
const char *store_path(const store *s);

/* Test hook (fault injection, like ss_alloc_fail_after): make the n-th SQLite statement step
 * from now (1 = the next; SQL text run in one go counts as one step) fail with SQLite result
 * code sqlite_rc (SQLITE_FULL, SQLITE_BUSY, SQLITE_READONLY, ...) without running; the error
 * reads as SQLite words that code. A ROLLBACK never fails this way. 0 turns it off.
 * Process-wide; not thread-safe. */
void store_fail_step_after(uint64_t n, int sqlite_rc);
/* Statement steps made so far by every store (for sizing fault-injection loops). */
uint64_t store_step_count(void);

#endif
