/* Opening the results store: the schema (one SQL text, versioned by PRAGMA user_version, and
 * the migrations that upgrade an older database), WAL mode and the busy timeout, the checks that
 * refuse a database that is not slicesim's or is newer, read-only opening (an older schema
 * upgraded in a copy in memory), closing and removing. Not for reading or writing results. */
#include "store/store_int.h"

#include "core/ss_alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Columns of a tenant's or a tier's results (the tenants and tiers tables) as version 3 made
 * them; later versions add more after them. */
#define GROUP_COLS                                                                                 \
    " requests INTEGER, completed INTEGER, rejected INTEGER, truncated INTEGER,"                  \
    " preemptions INTEGER, sla_violations INTEGER, sla_violation_rate REAL,"                      \
    " prompt_tokens_per_s REAL, output_tokens_per_s REAL, requests_per_s REAL,"                   \
    " goodput_tokens_per_s REAL,"                                                                 \
    " ttft_mean_ms REAL, ttft_p50_ms REAL, ttft_p90_ms REAL, ttft_p99_ms REAL, ttft_max_ms REAL,"  \
    " tbt_mean_ms REAL, tbt_p50_ms REAL, tbt_p90_ms REAL, tbt_p99_ms REAL, tbt_max_ms REAL,"       \
    " e2e_mean_ms REAL, e2e_p50_ms REAL, e2e_p90_ms REAL, e2e_p99_ms REAL, e2e_max_ms REAL"

/* Prefix caching's columns of summary and tenants (version 10), its ceiling's (13), the KV
 * pool's (14), in the order their migrations added them. */
#define PREFIX_COLS                                                                                \
    " prefix_query_tokens INTEGER DEFAULT 0, prefix_hit_tokens INTEGER DEFAULT 0,"                \
    " prefix_query_blocks INTEGER DEFAULT 0, prefix_hit_blocks INTEGER DEFAULT 0,"                \
    " prefix_saved_tokens INTEGER DEFAULT 0, prefix_evictions INTEGER DEFAULT 0"
#define CEILING_COLS                                                                               \
    " prefix_ceiling_hit_tokens INTEGER DEFAULT 0, prefix_ceiling_hit_blocks INTEGER DEFAULT 0,"  \
    " prefix_ceiling_hit_rate REAL DEFAULT 0"
#define KVPOOL_COLS                                                                                \
    " kvpool_lookups INTEGER DEFAULT 0, kvpool_gpu_blocks INTEGER DEFAULT 0,"                     \
    " kvpool_cpu_blocks INTEGER DEFAULT 0, kvpool_ssd_blocks INTEGER DEFAULT 0,"                  \
    " kvpool_remote_blocks INTEGER DEFAULT 0, kvpool_loads INTEGER DEFAULT 0,"                    \
    " kvpool_load_bytes INTEGER DEFAULT 0, kvpool_load_s REAL DEFAULT 0,"                         \
    " kvpool_recomputes INTEGER DEFAULT 0, kvpool_recompute_blocks INTEGER DEFAULT 0,"            \
    " kvpool_offload_blocks INTEGER DEFAULT 0, kvpool_offload_bytes INTEGER DEFAULT 0,"           \
    " kvpool_demotions INTEGER DEFAULT 0, kvpool_evictions INTEGER DEFAULT 0"

/* Tables a migration created whole and no later one changed: the same text in the schema
 * and in their migration. */
#define IDLE_SLICES_SQL                                                                            \
    "CREATE TABLE idle_slices (run_id INTEGER NOT NULL REFERENCES runs(run_id),"                   \
    " bucket INTEGER NOT NULL, lo_ms REAL NOT NULL, hi_ms REAL, count INTEGER NOT NULL,"           \
    " gpu_s REAL NOT NULL, free_gib_mean REAL, PRIMARY KEY (run_id, bucket));"
#define SWEEP_POINTS_SQL                                                                           \
    "CREATE TABLE sweep_points (sweep TEXT NOT NULL, point TEXT NOT NULL,"                         \
    " run_id INTEGER NOT NULL REFERENCES runs(run_id), PRIMARY KEY (sweep, point));"
#define VALIDATIONS_SQL                                                                            \
    "CREATE TABLE validations (validation_id INTEGER PRIMARY KEY, created TEXT NOT NULL,"          \
    " version TEXT NOT NULL, command TEXT, name TEXT, model TEXT NOT NULL,"                        \
    " tp INTEGER NOT NULL, gpu TEXT NOT NULL, device TEXT NOT NULL, backend TEXT NOT NULL,"        \
    " timer TEXT NOT NULL, cost_model TEXT NOT NULL, trace TEXT, requests INTEGER,"                \
    " iterations INTEGER, reps INTEGER, l2_cold INTEGER, mape_pct REAL, bias_pct REAL,"            \
    " predicted_ms REAL, measured_ms REAL, measured_span_ms REAL);"                                \
    "CREATE TABLE validation_ops ("                                                                \
    " validation_id INTEGER NOT NULL REFERENCES validations(validation_id),"                       \
    " op TEXT NOT NULL, executions INTEGER, predicted_ms REAL, measured_ms REAL,"                  \
    " mape_pct REAL, bias_pct REAL, worst_pct REAL, worst_iteration INTEGER,"                      \
    " PRIMARY KEY (validation_id, op));"                                                           \
    "CREATE TABLE validation_iters ("                                                              \
    " validation_id INTEGER NOT NULL REFERENCES validations(validation_id),"                       \
    " iteration INTEGER NOT NULL, sim_start_s REAL, sim_ms REAL, prefills INTEGER,"                \
    " prefill_tokens INTEGER, decodes INTEGER, decode_ctx_tokens INTEGER,"                         \
    " predicted_ms REAL, measured_ms REAL, measured_span_ms REAL, predicted_host_ms REAL,"         \
    " error_pct REAL, PRIMARY KEY (validation_id, iteration));"
#define FITS_SQL                                                                                   \
    "CREATE TABLE fits (fit_id INTEGER PRIMARY KEY, created TEXT NOT NULL,"                        \
    " version TEXT NOT NULL, command TEXT, mode TEXT NOT NULL, dir TEXT NOT NULL,"                 \
    " start_engine TEXT NOT NULL, engine TEXT NOT NULL, terms TEXT NOT NULL,"                      \
    " params TEXT NOT NULL, profile TEXT, runs INTEGER, stages INTEGER,"                           \
    " fitted_stages INTEGER, served_ms REAL, objective REAL, mape_ttft_mean_pct REAL,"             \
    " mape_ttft_p90_pct REAL, mape_itl_pct REAL, mape_e2e_mean_pct REAL,"                          \
    " mape_e2e_p90_pct REAL, runaway INTEGER, iterations INTEGER, evaluations INTEGER,"            \
    " converged INTEGER, wall_s REAL);"                                                            \
    "CREATE TABLE fit_stages (fit_id INTEGER NOT NULL REFERENCES fits(fit_id),"                    \
    " run TEXT NOT NULL, stage INTEGER NOT NULL, rate REAL, fitted INTEGER NOT NULL,"              \
    " completed INTEGER, real_ttft_mean_ms REAL, sim_ttft_mean_ms REAL,"                           \
    " real_ttft_p90_ms REAL, sim_ttft_p90_ms REAL, real_itl_ms REAL, sim_itl_ms REAL,"             \
    " real_e2e_mean_ms REAL, sim_e2e_mean_ms REAL, real_e2e_p90_ms REAL,"                          \
    " sim_e2e_p90_ms REAL, PRIMARY KEY (fit_id, run, stage));"
#define INSTANCES_SQL                                                                              \
    "CREATE TABLE instances (run_id INTEGER NOT NULL REFERENCES runs(run_id),"                     \
    " container INTEGER NOT NULL, tenant TEXT, prefix_lookups INTEGER,"                            \
    " prefix_query_tokens INTEGER, prefix_hit_tokens INTEGER, prefix_query_blocks INTEGER,"        \
    " prefix_hit_blocks INTEGER, prefix_saved_tokens INTEGER, prefix_evictions INTEGER,"           \
    " prefix_hit_rate REAL, PRIMARY KEY (run_id, container));"

/* Version 17's tables: each iteration of a run stored with --store iterations; what `slicesim
 * capacity` found for each bundle (over its seeds) and each search (one seed), the search's
 * probe at capacity named by its sweep point so that a merge, which renumbers runs, keeps it;
 * and the index that finds a run equal to a merged one. */
#define RESULTS_SQL                                                                                \
    "CREATE TABLE iterations (run_id INTEGER NOT NULL REFERENCES runs(run_id),"                    \
    " container INTEGER NOT NULL, iteration INTEGER NOT NULL, tenant TEXT, start_s REAL NOT NULL," \
    " end_s REAL NOT NULL, kind TEXT NOT NULL, prefill_seqs INTEGER, prefill_tokens INTEGER,"      \
    " decode_seqs INTEGER, decode_ctx_tokens INTEGER, swap_blocks INTEGER,"                        \
    " PRIMARY KEY (run_id, container, iteration));"                                                \
    "CREATE TABLE capacities (capacity_id INTEGER PRIMARY KEY, created_utc TEXT NOT NULL,"         \
    " version TEXT NOT NULL, command TEXT, scenario TEXT NOT NULL, sweep TEXT NOT NULL,"           \
    " bundle TEXT NOT NULL, reference TEXT NOT NULL, criterion TEXT NOT NULL, tenant TEXT,"        \
    " sla_miss_bound REAL NOT NULL, tol REAL, seeds INTEGER NOT NULL, status TEXT NOT NULL,"       \
    " converged INTEGER, censored INTEGER, capacity REAL, capacity_ci95_lo REAL,"                  \
    " capacity_ci95_hi REAL, ratio REAL, ratio_ci95_lo REAL, ratio_ci95_hi REAL, verdict TEXT,"    \
    " bracket_lo REAL, bracket_hi REAL, goodput_tokens_per_s REAL, sla_miss REAL,"                \
    " pooled_sla_miss REAL, probes INTEGER);"                                                      \
    "CREATE TABLE capacity_seeds (capacity_id INTEGER NOT NULL"                                    \
    " REFERENCES capacities(capacity_id), seed INTEGER NOT NULL, status TEXT NOT NULL,"            \
    " converged INTEGER, censored INTEGER, capacity REAL, ratio REAL, bracket_lo REAL,"            \
    " bracket_hi REAL, goodput_tokens_per_s REAL, sla_miss REAL, pooled_sla_miss REAL,"           \
    " probes INTEGER, point TEXT, PRIMARY KEY (capacity_id, seed));"                               \
    "CREATE INDEX runs_by_created ON runs(created_utc);"

#define STR_(x) #x
#define STR(x) STR_(x)

/* Schema: the current version, created in one go. Its text is exactly what upgrading a
 * version-1 database through every migration below writes (ALTER TABLE ADD COLUMN puts
 * ", COLUMN" after a table's last column), so that new and upgraded databases have the same
 * layout (test_store checks it): a new column goes into a migration and here, after its table's
 * last column. (Creating a database through the migrations instead cost 157 M instructions:
 * each of their hundred ALTER TABLEs rereads the whole schema.) A number in a comment is the
 * version that added the lines from the previous number to it; lines before the first are
 * version 1's. Times are in ms (latencies) or s (spans); token counts are integers.
 * Version 2 added summary.swap_outs/aborted; version 3 multi-tenant results: the
 * tenants and tiers tables, SLA and migration columns; version 4 summary.scale_ups/scale_downs;
 * version 5 idle GPU slices (the idle_slices table, summary and gpus columns); version 6
 * operator placement (runs.ops, SliceScheduler's summary columns); version 7 sweeps (the
 * sweep_points table: which run is which point of which sweep; runs.result_json: what
 * `replay --json` printed for the run); version 8 validations; version 9 runs.load, each
 * GPU's tenant and compute/host time over the measurement window, and the summary's
 * rejected_* columns (rejected requests by reason); version 10 runs.engine (the serving-engine
 * profile; runs stored before engine profiles existed read vllm-eager, whose coefficients
 * they were computed with) and automatic prefix caching (the summary's and tenants' prefix_*
 * columns, 0 when the cache was off); version 11 engine fits (`slicesim fit`: the fits table and
 * each fit's per-stage comparison, fit_stages); version 12 throughput over the arrival window;
 * version 13 prefix caching per instance (the instances table) and its ceiling;
 * version 14 the KV pool below the prefix caches (the summary's and tenants' kvpool_* columns,
 * 0 with the pool off);
 * version 15 disaggregated prefill and decode (the tenants' pool sizes and kv_* columns);
 * version 16 runs.inputs_digest (what a capacity probe was run from, so that a rerun may reuse
 * it);
 * version 17 runs.bundle and runs.stored, the iterations table, capacity's answers (the
 * capacities and capacity_seeds tables); version 18 GPU sharing (gpus.phys and gpus.share,
 * tenants.share). */
static const char schema_sql[] =
    "CREATE TABLE runs ("
    " run_id INTEGER PRIMARY KEY,"
    " created_utc TEXT NOT NULL,"   /* wall-clock start, ISO 8601: metadata, not a result */
    " version TEXT NOT NULL,"       /* git describe of the binary */
    " build TEXT NOT NULL,"         /* build options */
    " command TEXT NOT NULL,"       /* command line */
    " trace TEXT NOT NULL, trace_format TEXT NOT NULL, trace_digest TEXT NOT NULL,"
    " model TEXT NOT NULL, gpu TEXT NOT NULL, replicas INTEGER NOT NULL, tp INTEGER NOT NULL,"
    " batching TEXT NOT NULL, routing TEXT NOT NULL, cost_model TEXT NOT NULL,"
    " params TEXT NOT NULL,"        /* JSON object of resolved parameters */
    " seed INTEGER NOT NULL, rate_scale REAL NOT NULL, limit_requests INTEGER NOT NULL,"
    " wall_s REAL, events INTEGER, sim_s REAL,"
    " pp INTEGER DEFAULT 1, cluster_policy TEXT DEFAULT 'container', warmup_s REAL DEFAULT 0,"
    " scenario TEXT DEFAULT '',"                                                    /* 3 */
    " ops TEXT DEFAULT 'home',"                                                     /* 6 */
    " result_json TEXT,"                                                            /* 7 */
    " load REAL,"                                                                   /* 9 */
    " engine TEXT DEFAULT 'vllm-eager',"                                            /* 10 */
    " inputs_digest TEXT,"                                                          /* 16 */
    " bundle TEXT, stored TEXT DEFAULT 'requests');"                                /* 17 */
    "CREATE TABLE requests ("
    " run_id INTEGER NOT NULL REFERENCES runs(run_id),"
    " req_id INTEGER NOT NULL, tenant TEXT NOT NULL, tier INTEGER NOT NULL,"
    " container INTEGER NOT NULL, status TEXT NOT NULL,"  /* 'completed' or 'rejected' */
    " arrival_s REAL NOT NULL, prompt_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,"
    " generated_tokens INTEGER NOT NULL, preemptions INTEGER NOT NULL,"
    " ttft_ms REAL, e2e_ms REAL, tbt_mean_ms REAL, tbt_max_ms REAL,"
    " sla_violated INTEGER DEFAULT 0, measured INTEGER DEFAULT 1,"
    " migrations INTEGER DEFAULT 0);"                                               /* 3 */
    "CREATE INDEX requests_by_run ON requests(run_id);"
    "CREATE TABLE summary ("
    " run_id INTEGER PRIMARY KEY REFERENCES runs(run_id),"
    " requests INTEGER, completed INTEGER, rejected INTEGER, truncated INTEGER,"
    " preemptions INTEGER, iterations INTEGER, peak_in_flight INTEGER,"
    " prompt_tokens INTEGER, output_tokens INTEGER, sim_s REAL,"
    " prompt_tokens_per_s REAL, output_tokens_per_s REAL, requests_per_s REAL,"
    " ttft_mean_ms REAL, ttft_p50_ms REAL, ttft_p90_ms REAL, ttft_p99_ms REAL, ttft_max_ms REAL,"
    " tbt_mean_ms REAL, tbt_p50_ms REAL, tbt_p90_ms REAL, tbt_p99_ms REAL, tbt_max_ms REAL,"
    " e2e_mean_ms REAL, e2e_p50_ms REAL, e2e_p90_ms REAL, e2e_p99_ms REAL, e2e_max_ms REAL,"
    " swap_outs INTEGER DEFAULT 0, aborted INTEGER DEFAULT 0,"                      /* 2 */
    " measured_requests INTEGER, window_s REAL, sla_violations INTEGER DEFAULT 0,"
    " sla_violation_rate REAL DEFAULT 0, goodput_tokens_per_s REAL,"
    " migrations INTEGER DEFAULT 0, migrations_aborted INTEGER DEFAULT 0,"
    " migration_gib REAL DEFAULT 0, reallocations INTEGER DEFAULT 0,"               /* 3 */
    " scale_ups INTEGER DEFAULT 0, scale_downs INTEGER DEFAULT 0,"                  /* 4 */
    " idle_slices INTEGER DEFAULT 0, idle_gpu_s REAL DEFAULT 0,"                    /* 5 */
    " offloads INTEGER DEFAULT 0, offload_ops INTEGER DEFAULT 0,"
    " offload_gib REAL DEFAULT 0, slices_used INTEGER DEFAULT 0,"
    " whatifs INTEGER DEFAULT 0, slice_decisions INTEGER DEFAULT 0,"
    " slice_wall_s REAL DEFAULT 0, prediction_error_ms REAL DEFAULT 0,"             /* 6 */
    " rejected_too_long INTEGER DEFAULT 0, rejected_batch_tokens INTEGER DEFAULT 0,"
    " rejected_kv_blocks INTEGER DEFAULT 0, rejected_preempted INTEGER DEFAULT 0,"
    " rejected_other INTEGER DEFAULT 0,"                                            /* 9 */
    PREFIX_COLS ","                                                                 /* 10 */
    " window_output_tokens_per_s REAL, window_goodput_tokens_per_s REAL,"
    " arrival_window_s REAL,"                                                       /* 12 */
    CEILING_COLS ","                                                                /* 13 */
    KVPOOL_COLS ","                                                                 /* 14 */
    " kvpool_cpu_peak_bytes INTEGER DEFAULT 0, kvpool_ssd_peak_bytes INTEGER DEFAULT 0);"
    "CREATE TABLE gpus ("
    " run_id INTEGER NOT NULL REFERENCES runs(run_id), gpu INTEGER NOT NULL,"
    " node INTEGER NOT NULL, container INTEGER NOT NULL, kind TEXT NOT NULL,"
    " busy_s REAL, utilization REAL, iterations INTEGER, kv_blocks INTEGER,"
    " kv_peak_blocks INTEGER, weights_gib REAL, kv_pool_gib REAL,"
    " device_busy_s REAL, idle_slices INTEGER, idle_s REAL,"                        /* 5 */
    " tenant TEXT, window_s REAL, compute_s REAL, host_s REAL,"                     /* 9 */
    " phys INTEGER, share TEXT DEFAULT 'whole',"                                    /* 18 */
    " PRIMARY KEY (run_id, gpu));"
    "CREATE TABLE tenants (run_id INTEGER NOT NULL REFERENCES runs(run_id),"
    " tenant TEXT NOT NULL, model TEXT NOT NULL, replicas INTEGER NOT NULL," GROUP_COLS "," /* 3 */
    PREFIX_COLS ","                                                                 /* 10 */
    " window_output_tokens_per_s REAL, window_goodput_tokens_per_s REAL,"           /* 12 */
    CEILING_COLS ","                                                                /* 13 */
    KVPOOL_COLS ","                                                                 /* 14 */
    " prefill_replicas INTEGER DEFAULT 0, decode_replicas INTEGER DEFAULT 0,"
    " kv_transfers INTEGER DEFAULT 0, kv_gib REAL DEFAULT 0, kv_exposed_s REAL DEFAULT 0,"
    " kv_exposed_mean_ms REAL DEFAULT 0, kv_waits INTEGER DEFAULT 0,"
    " kv_wait_s REAL DEFAULT 0,"                                                    /* 15 */
    " share TEXT DEFAULT 'whole',"                                                  /* 18 */
    " PRIMARY KEY (run_id, tenant));"
    "CREATE TABLE tiers (run_id INTEGER NOT NULL REFERENCES runs(run_id),"
    " tier INTEGER NOT NULL," GROUP_COLS ","                                          /* 3 */
    " window_output_tokens_per_s REAL, window_goodput_tokens_per_s REAL,"           /* 12 */
    " PRIMARY KEY (run_id, tier));"
    IDLE_SLICES_SQL                                                                 /* 5 */
    SWEEP_POINTS_SQL                                                                /* 7 */
    VALIDATIONS_SQL                                                                 /* 8 */
    FITS_SQL                                                                        /* 11 */
    INSTANCES_SQL                                                                   /* 13 */
    RESULTS_SQL                                                                     /* 17 */
    "PRAGMA user_version = " STR(STORE_SCHEMA_VERSION) ";";

/* Upgrades: migrations[v] takes a version-v database to v + 1. */
static const char *const migrations[STORE_SCHEMA_VERSION] = {
    [1] = "ALTER TABLE summary ADD COLUMN swap_outs INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN aborted INTEGER DEFAULT 0;"
          "PRAGMA user_version = 2;",
    [2] = "ALTER TABLE runs ADD COLUMN pp INTEGER DEFAULT 1;"
          "ALTER TABLE runs ADD COLUMN cluster_policy TEXT DEFAULT 'container';"
          "ALTER TABLE runs ADD COLUMN warmup_s REAL DEFAULT 0;"
          "ALTER TABLE runs ADD COLUMN scenario TEXT DEFAULT '';"
          "ALTER TABLE requests ADD COLUMN sla_violated INTEGER DEFAULT 0;"
          "ALTER TABLE requests ADD COLUMN measured INTEGER DEFAULT 1;"
          "ALTER TABLE requests ADD COLUMN migrations INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN measured_requests INTEGER;"
          "ALTER TABLE summary ADD COLUMN window_s REAL;"
          "ALTER TABLE summary ADD COLUMN sla_violations INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN sla_violation_rate REAL DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN goodput_tokens_per_s REAL;"
          "ALTER TABLE summary ADD COLUMN migrations INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN migrations_aborted INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN migration_gib REAL DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN reallocations INTEGER DEFAULT 0;"
          "CREATE TABLE tenants (run_id INTEGER NOT NULL REFERENCES runs(run_id),"
          " tenant TEXT NOT NULL, model TEXT NOT NULL, replicas INTEGER NOT NULL," GROUP_COLS ","
          " PRIMARY KEY (run_id, tenant));"
          "CREATE TABLE tiers (run_id INTEGER NOT NULL REFERENCES runs(run_id),"
          " tier INTEGER NOT NULL," GROUP_COLS ", PRIMARY KEY (run_id, tier));"
          "PRAGMA user_version = 3;",
    [3] = "ALTER TABLE summary ADD COLUMN scale_ups INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN scale_downs INTEGER DEFAULT 0;"
          "PRAGMA user_version = 4;",
    [4] = "ALTER TABLE summary ADD COLUMN idle_slices INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN idle_gpu_s REAL DEFAULT 0;"
          "ALTER TABLE gpus ADD COLUMN device_busy_s REAL;"
          "ALTER TABLE gpus ADD COLUMN idle_slices INTEGER;"
          "ALTER TABLE gpus ADD COLUMN idle_s REAL;"
          IDLE_SLICES_SQL
          "PRAGMA user_version = 5;",
    [5] = "ALTER TABLE runs ADD COLUMN ops TEXT DEFAULT 'home';"
          "ALTER TABLE summary ADD COLUMN offloads INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN offload_ops INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN offload_gib REAL DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN slices_used INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN whatifs INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN slice_decisions INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN slice_wall_s REAL DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN prediction_error_ms REAL DEFAULT 0;"
          "PRAGMA user_version = 6;",
    [6] = SWEEP_POINTS_SQL
          "ALTER TABLE runs ADD COLUMN result_json TEXT;"
          "PRAGMA user_version = 7;",
    [7] = VALIDATIONS_SQL
          "PRAGMA user_version = 8;",
    /* version 9: the load of compare and sweep runs; each GPU's tenant and its time over the
     * measurement window (gpus.utilization is compute_s / window_s from here on); why requests
     * were rejected */
    [8] = "ALTER TABLE runs ADD COLUMN load REAL;"
          "ALTER TABLE gpus ADD COLUMN tenant TEXT;"
          "ALTER TABLE gpus ADD COLUMN window_s REAL;"
          "ALTER TABLE gpus ADD COLUMN compute_s REAL;"
          "ALTER TABLE gpus ADD COLUMN host_s REAL;"
          "ALTER TABLE summary ADD COLUMN rejected_too_long INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN rejected_batch_tokens INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN rejected_kv_blocks INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN rejected_preempted INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN rejected_other INTEGER DEFAULT 0;"
          "PRAGMA user_version = 9;",
    /* version 10: the serving-engine profile of the run (engine profiles); automatic prefix
     * caching, for the run and per tenant (PREFIX_NAMES) */
    [9] = "ALTER TABLE runs ADD COLUMN engine TEXT DEFAULT 'vllm-eager';"
          "ALTER TABLE summary ADD COLUMN prefix_query_tokens INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN prefix_hit_tokens INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN prefix_query_blocks INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN prefix_hit_blocks INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN prefix_saved_tokens INTEGER DEFAULT 0;"
          "ALTER TABLE summary ADD COLUMN prefix_evictions INTEGER DEFAULT 0;"
          "ALTER TABLE tenants ADD COLUMN prefix_query_tokens INTEGER DEFAULT 0;"
          "ALTER TABLE tenants ADD COLUMN prefix_hit_tokens INTEGER DEFAULT 0;"
          "ALTER TABLE tenants ADD COLUMN prefix_query_blocks INTEGER DEFAULT 0;"
          "ALTER TABLE tenants ADD COLUMN prefix_hit_blocks INTEGER DEFAULT 0;"
          "ALTER TABLE tenants ADD COLUMN prefix_saved_tokens INTEGER DEFAULT 0;"
          "ALTER TABLE tenants ADD COLUMN prefix_evictions INTEGER DEFAULT 0;"
          "PRAGMA user_version = 10;",
    /* version 11: engine profiles fitted to measured serving runs (slicesim fit), and the
     * per-stage real and simulated latencies of the final engine */
    [10] = FITS_SQL
           "PRAGMA user_version = 11;",
    /* version 12: throughput over the arrival window (the warm-up's end to the last arrival,
     * the same for every policy at one trace and load), per run, tenant and tier */
    [11] = "ALTER TABLE summary ADD COLUMN window_output_tokens_per_s REAL;"
           "ALTER TABLE summary ADD COLUMN window_goodput_tokens_per_s REAL;"
           "ALTER TABLE summary ADD COLUMN arrival_window_s REAL;"
           "ALTER TABLE tenants ADD COLUMN window_output_tokens_per_s REAL;"
           "ALTER TABLE tenants ADD COLUMN window_goodput_tokens_per_s REAL;"
           "ALTER TABLE tiers ADD COLUMN window_output_tokens_per_s REAL;"
           "ALTER TABLE tiers ADD COLUMN window_goodput_tokens_per_s REAL;"
           "PRAGMA user_version = 12;",
    /* version 13: prefix caching per instance (the instances table: each container's lookups
     * and evictions) and the ceiling, what an unbounded cache shared by each tenant's
     * instances would have hit, per run and tenant */
    [12] = "ALTER TABLE summary ADD COLUMN prefix_ceiling_hit_tokens INTEGER DEFAULT 0;"
           "ALTER TABLE summary ADD COLUMN prefix_ceiling_hit_blocks INTEGER DEFAULT 0;"
           "ALTER TABLE summary ADD COLUMN prefix_ceiling_hit_rate REAL DEFAULT 0;"
           "ALTER TABLE tenants ADD COLUMN prefix_ceiling_hit_tokens INTEGER DEFAULT 0;"
           "ALTER TABLE tenants ADD COLUMN prefix_ceiling_hit_blocks INTEGER DEFAULT 0;"
           "ALTER TABLE tenants ADD COLUMN prefix_ceiling_hit_rate REAL DEFAULT 0;"
           INSTANCES_SQL
           "PRAGMA user_version = 13;",
    /* version 14: the KV pool below the prefix caches, for the run and per tenant
     * (KVPOOL_NAMES; 0 with the pool off), and the run's peak occupancy of its tiers */
    [13] = "ALTER TABLE summary ADD COLUMN kvpool_lookups INTEGER DEFAULT 0;"
           "ALTER TABLE summary ADD COLUMN kvpool_gpu_blocks INTEGER DEFAULT 0;"
           "ALTER TABLE summary ADD COLUMN kvpool_cpu_blocks INTEGER DEFAULT 0;"
           "ALTER TABLE summary ADD COLUMN kvpool_ssd_blocks INTEGER DEFAULT 0;"
           "ALTER TABLE summary ADD COLUMN kvpool_remote_blocks INTEGER DEFAULT 0;"
           "ALTER TABLE summary ADD COLUMN kvpool_loads INTEGER DEFAULT 0;"
           "ALTER TABLE summary ADD COLUMN kvpool_load_bytes INTEGER DEFAULT 0;"
           "ALTER TABLE summary ADD COLUMN kvpool_load_s REAL DEFAULT 0;"
           "ALTER TABLE summary ADD COLUMN kvpool_recomputes INTEGER DEFAULT 0;"
           "ALTER TABLE summary ADD COLUMN kvpool_recompute_blocks INTEGER DEFAULT 0;"
           "ALTER TABLE summary ADD COLUMN kvpool_offload_blocks INTEGER DEFAULT 0;"
           "ALTER TABLE summary ADD COLUMN kvpool_offload_bytes INTEGER DEFAULT 0;"
           "ALTER TABLE summary ADD COLUMN kvpool_demotions INTEGER DEFAULT 0;"
           "ALTER TABLE summary ADD COLUMN kvpool_evictions INTEGER DEFAULT 0;"
           "ALTER TABLE summary ADD COLUMN kvpool_cpu_peak_bytes INTEGER DEFAULT 0;"
           "ALTER TABLE summary ADD COLUMN kvpool_ssd_peak_bytes INTEGER DEFAULT 0;"
           "ALTER TABLE tenants ADD COLUMN kvpool_lookups INTEGER DEFAULT 0;"
           "ALTER TABLE tenants ADD COLUMN kvpool_gpu_blocks INTEGER DEFAULT 0;"
           "ALTER TABLE tenants ADD COLUMN kvpool_cpu_blocks INTEGER DEFAULT 0;"
           "ALTER TABLE tenants ADD COLUMN kvpool_ssd_blocks INTEGER DEFAULT 0;"
           "ALTER TABLE tenants ADD COLUMN kvpool_remote_blocks INTEGER DEFAULT 0;"
           "ALTER TABLE tenants ADD COLUMN kvpool_loads INTEGER DEFAULT 0;"
           "ALTER TABLE tenants ADD COLUMN kvpool_load_bytes INTEGER DEFAULT 0;"
           "ALTER TABLE tenants ADD COLUMN kvpool_load_s REAL DEFAULT 0;"
           "ALTER TABLE tenants ADD COLUMN kvpool_recomputes INTEGER DEFAULT 0;"
           "ALTER TABLE tenants ADD COLUMN kvpool_recompute_blocks INTEGER DEFAULT 0;"
           "ALTER TABLE tenants ADD COLUMN kvpool_offload_blocks INTEGER DEFAULT 0;"
           "ALTER TABLE tenants ADD COLUMN kvpool_offload_bytes INTEGER DEFAULT 0;"
           "ALTER TABLE tenants ADD COLUMN kvpool_demotions INTEGER DEFAULT 0;"
           "ALTER TABLE tenants ADD COLUMN kvpool_evictions INTEGER DEFAULT 0;"
           "PRAGMA user_version = 14;",
    /* version 15: disaggregated prefill and decode, per tenant: its pools' sizes (0 for a
     * co-located tenant) and its KV transfers (count, GiB, exposed time, waits for decode
     * blocks) */
    [14] = "ALTER TABLE tenants ADD COLUMN prefill_replicas INTEGER DEFAULT 0;"
           "ALTER TABLE tenants ADD COLUMN decode_replicas INTEGER DEFAULT 0;"
           "ALTER TABLE tenants ADD COLUMN kv_transfers INTEGER DEFAULT 0;"
           "ALTER TABLE tenants ADD COLUMN kv_gib REAL DEFAULT 0;"
           "ALTER TABLE tenants ADD COLUMN kv_exposed_s REAL DEFAULT 0;"
           "ALTER TABLE tenants ADD COLUMN kv_exposed_mean_ms REAL DEFAULT 0;"
           "ALTER TABLE tenants ADD COLUMN kv_waits INTEGER DEFAULT 0;"
           "ALTER TABLE tenants ADD COLUMN kv_wait_s REAL DEFAULT 0;"
           "PRAGMA user_version = 15;",
    /* version 16: a digest of every input a capacity probe's run depends on (its scenario,
     * traces, profiles, the code that ran; runner/capacity_inputs.c), NULL for other runs */
    [15] = "ALTER TABLE runs ADD COLUMN inputs_digest TEXT;"
           "PRAGMA user_version = 16;",
    /* version 17: results a notebook can use: the bundle a run was made under and what of it
     * was kept (runs.bundle, runs.stored), each iteration of runs stored with --store
     * iterations, and capacity's answers (capacities, capacity_seeds) */
    [16] = "ALTER TABLE runs ADD COLUMN bundle TEXT;"
           "ALTER TABLE runs ADD COLUMN stored TEXT DEFAULT 'requests';"
           RESULTS_SQL
           "PRAGMA user_version = 17;",
    /* version 18: GPU sharing: each GPU row's physical GPU and share (a share of a GPU is a
     * row of its own), each tenant's share */
    [17] = "ALTER TABLE gpus ADD COLUMN phys INTEGER;"
           "ALTER TABLE gpus ADD COLUMN share TEXT DEFAULT 'whole';"
           "ALTER TABLE tenants ADD COLUMN share TEXT DEFAULT 'whole';"
           "UPDATE gpus SET phys = gpu;"
           "PRAGMA user_version = 18;",
};

/* How long a writer waits for another's transaction: SLICESIM_BUSY_TIMEOUT_MS (tests use a
 * short one), else 30 s. */
static int busy_timeout_ms(void)
{
    const char *v = getenv("SLICESIM_BUSY_TIMEOUT_MS");
    char *end;
    long ms = v && *v ? strtol(v, &end, 10) : -1;
    return v && *v && !*end && ms >= 0 && ms <= 3600000 ? (int)ms : 30000;
}

/* Create parent directory of path (one level) when missing. */
static int ensure_parent(const char *path, ss_errbuf *eb)
{
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path)
        return SS_OK;
    char *dir = ss_strndup(path, (size_t)(slash - path));
    if (!dir)
        return ss_err(eb, SS_ENOMEM, "out of memory");
    int rc = SS_OK;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        rc = ss_err(eb, SS_EIO, "%s: cannot create directory: %s", dir, strerror(errno));
    ss_free(dir);
    return rc;
}

static int query_int(store *s, const char *sql, int64_t *out)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return SS_EDB;
    int rc = store__step(s, st);
    *out = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? SS_OK : SS_EDB;
}

/* Whether SQLite code rc says the file itself is bad (not a database, damaged), as opposed
 * to unreadable for now (locked, an I/O error). */
static int bad_file_code(int rc)
{
    return (rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT;
}

/* The schema version in *ver, refusing a newer one or a database that is not ours. A file
 * that is not ours (not SQLite, damaged, another program's, newer) is SS_EDB for a database a
 * run writes to, SS_EPARSE (bad input) for one read as an input (`input`). */
static int schema_version_of(store *s, int64_t *ver, int input, ss_errbuf *eb)
{
    int64_t n_tables;
    if (query_int(s, "PRAGMA user_version", ver) ||
        query_int(s, "SELECT count(*) FROM sqlite_master", &n_tables)) {
        int rc = store__db_err(s, eb, "not a readable SQLite database");
        return input && bad_file_code(s->last_code) ? SS_EPARSE : rc;
    }
    if (*ver > STORE_SCHEMA_VERSION)
        return ss_err(eb, input ? SS_EPARSE : SS_EDB,
                      "%s: results schema %lld is newer than this slicesim's (%d)", s->path,
                      (long long)*ver, STORE_SCHEMA_VERSION);
    if (*ver == 0 && n_tables > 0)
        return ss_err(eb, input ? SS_EPARSE : SS_EDB,
                      "%s: not a slicesim results database (it has other tables)", s->path);
    if (*ver == 0 && input)
        return ss_err(eb, SS_EPARSE, "%s: empty: not a slicesim results database", s->path);
    return SS_OK;
}

static int schema_version(store *s, int64_t *ver, ss_errbuf *eb)
{
    return schema_version_of(s, ver, 0, eb);
}

static int init_schema(store *s, ss_errbuf *eb)
{
    int64_t ver;
    int rc = schema_version(s, &ver, eb);
    if (rc || ver == STORE_SCHEMA_VERSION)
        return rc;
    rc = store__exec(s, "BEGIN IMMEDIATE", eb, "creating schema");
    /* Read it again under the lock: another process may have created or upgraded the schema
     * while this one waited (two runs starting on a new database at once). */
    if (!rc)
        rc = schema_version(s, &ver, eb);
    if (ver == 0 && !rc) {
        rc = store__exec(s, schema_sql, eb, "creating schema");
        ver = STORE_SCHEMA_VERSION;
    }
    for (int64_t v = ver; v < STORE_SCHEMA_VERSION && !rc; v++)
        rc = store__exec(s, migrations[v], eb, "upgrading the schema");
    if (!rc && !(rc = store__exec(s, "COMMIT", eb, "creating schema")))
        return SS_OK;
    store__rollback(s);
    return rc;
}

/* WAL mode (readers never wait for a run being written), synchronous=NORMAL. Turning a new
 * file to WAL needs it to itself, and SQLite does not wait for that (its busy handler could
 * deadlock there): when two runs start on a new database at once, one finds it busy. So wait
 * here, up to the busy timeout. */
static int set_wal(store *s, ss_errbuf *eb)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "PRAGMA journal_mode=WAL", -1, &st, NULL) != SQLITE_OK)
        return store__db_err(s, eb, "setting WAL");
    int rc, wal, limit = busy_timeout_ms();
    for (int waited = 0;; waited += 10) {
        rc = store__step(s, st);
        /* refused for now: an error, or the old mode back without one */
        wal = rc == SQLITE_ROW && !strcmp((const char *)sqlite3_column_text(st, 0), "wal");
        int busy = rc == SQLITE_BUSY || (rc == SQLITE_ROW && !wal);
        sqlite3_reset(st);
        if (!busy || s->injected || waited >= limit)
            break;
        sqlite3_sleep(10);
    }
    sqlite3_finalize(st);
    if (!wal && rc == SQLITE_ROW)
        return ss_err(eb, SS_EDB, "%s: setting WAL: %s", s->path, sqlite3_errstr(SQLITE_BUSY));
    if (!wal)
        return store__db_err(s, eb, "setting WAL");
    return store__exec(s, "PRAGMA synchronous=NORMAL", eb, "setting WAL");
}

/* {======================================================================
 * Databases a command created: a handle that made the file and then failed (its opening, or
 * a write it rolled back) removes it on closing when it holds nothing, so that a failed first
 * run leaves no file: neither a 0-byte database (opening failed at "setting WAL") nor one
 * with only the schema and a -wal that a full disk cannot checkpoint. Only the handle that
 * created the file (O_EXCL) may remove it, and only when no other connection has it open: an
 * exclusive lock on the database file proves that, since every connection to a WAL database
 * holds a shared lock on it from its first read to its close. A connection that opened the
 * file just before it went, and waited for the lock, sees on getting it that its path no
 * longer names the file it opened (same_file), and opens the path again.
 * ======================================================================= */

/* Whether path names a file SQLite opens as such: not a "file:" URI, not ":memory:". */
static int plain_path(const char *path)
{
    return *path && strncmp(path, "file:", 5) != 0 && strcmp(path, ":memory:") != 0;
}

/* Create the file at path if it does not exist: 1 when this call made it, 0 when it was there
 * already or cannot be made (SQLite's open then says why). */
static int create_file(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0)
        return 0;
    close(fd);
    return 1;
}

/* Whether the store's path still names the file it opened. */
static int same_file(const store *s)
{
    ss_file_id now;
    ss_file_id_of(&now, s->path);
    return now.exists && ss_file_id_same(&now, &s->file_id);
}

/* One SQL statement outside the fault injection (store__step): the cleanup below changes
 * nothing another connection could see, and its failure only keeps the file. */
static int exec_quietly(store *s, const char *sql)
{
    return sqlite3_exec(s->db, sql, NULL, NULL, NULL) == SQLITE_OK ? SS_OK : SS_EDB;
}

/* 1 when the first column of sql's first row is text equal to want, 0 when not or on error. */
static int first_text_is(store *s, const char *sql, const char *want)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return 0;
    int is = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) &&
             !strcmp((const char *)sqlite3_column_text(st, 0), want);
    sqlite3_finalize(st);
    return is;
}

/* Whether every table of the database is empty (so is a database without any): 1, or 0 when
 * one holds a row or a table cannot be read. */
static int holds_nothing(store *s)
{
    sqlite3_stmt *tables;
    if (sqlite3_prepare_v2(s->db, "SELECT name FROM sqlite_master WHERE type = 'table'", -1,
                           &tables, NULL) != SQLITE_OK)
        return 0;
    int empty = 1, rc;
    while (empty && (rc = sqlite3_step(tables)) == SQLITE_ROW) {
        char *sql = sqlite3_mprintf("SELECT count(*) = 0 FROM \"%w\"",
                                    (const char *)sqlite3_column_text(tables, 0));
        sqlite3_stmt *st = NULL;
        empty = sql && sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) == SQLITE_OK &&
                sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 1;
        sqlite3_finalize(st);
        sqlite3_free(sql);
    }
    if (empty && rc != SQLITE_DONE)
        empty = 0;
    sqlite3_finalize(tables);
    return empty;
}

/* Remove the database file s created, and SQLite's files beside it, if no other connection
 * has it open and, with only_if_empty, it holds nothing; else leave it. Called just before the
 * connection closes, with no transaction open. */
static void remove_created(store *s, int only_if_empty)
{
    if (!s->created || !s->db)
        return;
    sqlite3_busy_timeout(s->db, 0); /* another connection's lock: keep the file, at once */
    /* A database that never reached WAL mode (opening failed at "setting WAL") keeps its
     * journal in memory, so that taking the lock writes nothing to a full disk. */
    if (!first_text_is(s, "PRAGMA journal_mode", "wal"))
        exec_quietly(s, "PRAGMA journal_mode = MEMORY");
    if (exec_quietly(s, "PRAGMA locking_mode = EXCLUSIVE") || exec_quietly(s, "BEGIN EXCLUSIVE"))
        return;
    /* The names go while the lock is held, so that no other connection can have opened the
     * -wal or -shm meanwhile; closing then must not delete by name what another database may
     * have made there since: a persistent WAL is left to the closing connection's own files. */
    if ((!only_if_empty || holds_nothing(s)) && same_file(s)) {
        int persist = 1;
        sqlite3_file_control(s->db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
        store_remove(s->path);
    }
    exec_quietly(s, "ROLLBACK");
}

/* }====================================================================== */

/* Open the database at path once: SS_OK with *s_out set, an SS_E* code with eb set, or 1
 * when the path stopped naming the file opened (another handle removed it: try again). */
static int open_once(store **s_out, const char *path, ss_errbuf *eb)
{
    store *s = ss_calloc(1, sizeof *s);
    if (!s || !(s->path = ss_strdup(path))) {
        ss_free(s);
        return ss_err(eb, SS_ENOMEM, "out of memory");
    }
    int rc = ensure_parent(path, eb);
    int plain = plain_path(path);
    if (!rc && plain) {
        s->created = create_file(path);
        ss_file_id_of(&s->file_id, path);
        if (!s->file_id.exists)
            s->created = 0; /* gone already: the check after opening finds it so */
    }
    /* URI names are allowed so that a merge can attach its input read-only (ro_uri); a path is
     * read as a URI only when it starts with "file:". NOMUTEX: a store's connection is used by
     * one thread at a time (slicesim has no threads; a sweep's workers are processes), so
     * SQLite's lock around every call on it (each bind and step) is only cost: 4.4 M
     * instructions of a stored 3,000-request replay. */
    if (!rc && sqlite3_open_v2(path, &s->db,
                               SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI |
                                   SQLITE_OPEN_NOMUTEX,
                               NULL) != SQLITE_OK)
        rc = store__db_err(s, eb, "cannot open");
    if (!rc) {
        sqlite3_busy_timeout(s->db, busy_timeout_ms());
        rc = set_wal(s, eb);
    }
    if (!rc)
        rc = init_schema(s, eb);
    if (!rc)
        rc = store__prepare_statements(s, eb);
    /* Read under the shared lock the connection now holds: a file removed before this point
     * was removed under an exclusive lock, and no file can be removed after it. */
    if (!rc && plain && !same_file(s)) {
        s->created = 0; /* not the file at path: never remove what is there now */
        store_close(&s);
        return 1;
    }
    if (rc) {
        s->failed = 1;
        store_close(&s);
        return rc;
    }
    *s_out = s;
    return SS_OK;
}

int store_open(store **s_out, const char *path, ss_errbuf *eb)
{
    /* a file removed under this open three times running is not another handle's cleanup
     * racing it but something removing it on purpose */
    for (int attempt = 0; attempt < 3; attempt++) {
        int rc = open_once(s_out, path, eb);
        if (rc != 1)
            return rc;
    }
    return ss_err(eb, SS_EDB, "%s: cannot open: the file was removed or replaced while opening it",
                  path);
}

/* An older schema read without writing to the file: the database is copied into memory and
 * upgraded there, so readers see the current layout. */
static int upgrade_in_memory(store *s, ss_errbuf *eb)
{
    sqlite3 *mem = NULL;
    if (sqlite3_open_v2(":memory:", &mem, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        sqlite3_close(mem);
        return ss_err(eb, SS_ENOMEM, "out of memory");
    }
    sqlite3_backup *b = sqlite3_backup_init(mem, "main", s->db, "main");
    int rc = b ? sqlite3_backup_step(b, -1) : sqlite3_errcode(mem);
    sqlite3_backup_finish(b);
    if (rc != SQLITE_DONE) {
        int out = store__db_err(s, eb, "reading");
        sqlite3_close(mem);
        return out;
    }
    sqlite3_close(s->db);
    s->db = mem;
    return init_schema(s, eb);
}

/* Open path for reading only and check it is a slicesim database of this or an older schema
 * (*ver). On failure *s_out is NULL. */
static int open_input(store **s_out, const char *path, int64_t *ver, ss_errbuf *eb)
{
    *s_out = NULL;
    store *s = ss_calloc(1, sizeof *s);
    if (!s || !(s->path = ss_strdup(path))) {
        ss_free(s);
        return ss_err(eb, SS_ENOMEM, "out of memory");
    }
    int rc = SS_OK;
    if (access(path, R_OK) != 0)
        rc = ss_err(eb, SS_EIO, "%s: cannot open: %s", path, strerror(errno));
    /* Not SQLITE_OPEN_READONLY: a read-only connection to a WAL database leaves its -wal and
     * -shm files behind. query_only refuses every change to the file just the same. Without
     * SQLITE_OPEN_CREATE a missing file is an error, not a new database. NOMUTEX as in
     * open_once. */
    else if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
             SQLITE_OK)
        rc = store__db_err(s, eb, "cannot open");
    if (!rc) {
        sqlite3_busy_timeout(s->db, busy_timeout_ms());
        rc = store__exec(s, "PRAGMA query_only = 1", eb, "opening read-only");
    }
    if (!rc)
        rc = schema_version_of(s, ver, 1, eb);
    if (rc)
        store_close(&s);
    *s_out = s;
    return rc;
}

int store_open_readonly(store **s_out, const char *path, ss_errbuf *eb)
{
    store *s = NULL;
    int64_t ver = 0;
    int rc = open_input(&s, path, &ver, eb);
    if (!rc && ver < STORE_SCHEMA_VERSION)
        rc = upgrade_in_memory(s, eb);
    if (rc) {
        store_close(&s);
        return rc;
    }
    *s_out = s;
    return SS_OK;
}

/* Read every page of the input s (PRAGMA quick_check: each b-tree's structure and records; not
 * whether its indexes match their tables, which a merge that trips on it finds): 0, SS_EPARSE
 * with the first problem it reports when it is damaged, SS_EDB when it cannot be read. */
static int quick_check(store *s, ss_errbuf *eb)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "PRAGMA quick_check(1)", -1, &st, NULL) != SQLITE_OK)
        return bad_file_code(sqlite3_errcode(s->db))
                   ? ss_err(eb, SS_EPARSE, "%s: damaged: %s", s->path, sqlite3_errmsg(s->db))
                   : store__db_err(s, eb, "checking the database");
    int rc = store__step(s, st);
    const char *what = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
    int out = SS_OK;
    if (rc != SQLITE_ROW) {
        out = store__db_err(s, eb, "checking the database");
        if (bad_file_code(s->last_code))
            out = ss_err(eb, SS_EPARSE, "%s: damaged: %s", s->path, sqlite3_errstr(s->last_code));
    } else if (what && strcmp(what, "ok")) {
        out = store__damaged(eb, s->path, what);
    }
    sqlite3_finalize(st);
    return out;
}

int store__damaged(ss_errbuf *eb, const char *path, const char *problem)
{
    /* integrity_check's report opens with the database's name on a line of its own */
    const char *line = strstr(problem, "***\n");
    line = line ? line + 4 : problem;
    int n = 0;
    while (line[n] && line[n] != '\n' && n < 200)
        n++;
    return ss_err(eb, SS_EPARSE, "%s: damaged: %.*s", path, n, line);
}

int store__check_input(const char *path, int deep, ss_errbuf *eb)
{
    store *s = NULL;
    int64_t ver;
    int rc = open_input(&s, path, &ver, eb);
    if (!rc && deep)
        rc = quick_check(s, eb);
    store_close(&s);
    return rc;
}

int store_check_input(const char *path, ss_errbuf *eb)
{
    return store__check_input(path, 1, eb);
}

void store_remove(const char *path)
{
    static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
    size_t n = strlen(path);
    char *buf = ss_malloc(n + 9);
    if (!buf) {
        remove(path);
        return;
    }
    for (size_t i = 0; i < sizeof suffix / sizeof *suffix; i++) {
        memcpy(buf, path, n);
        memcpy(buf + n, suffix[i], strlen(suffix[i]) + 1);
        remove(buf);
    }
    ss_free(buf);
}

/* Close s, first removing the database it created, when discard or (it failed and the
 * database holds nothing), and no other connection has it open. */
static void close_store(store **sp, int discard)
{
    store *s = *sp;
    if (!s)
        return;
    store_run_abort(s);
    store__free_statements(s);
    if (discard || s->failed)
        remove_created(s, !discard);
    sqlite3_close(s->db);
    ss_free(s->path);
    ss_free(s);
    *sp = NULL;
}

void store_close(store **sp) { close_store(sp, 0); }

void store_close_discard(store **sp) { close_store(sp, 1); }

const char *store_path(const store *s) { return s->path; }
