/* Private to app/: measured serving runs for `slicesim fit` (a directory with runs.csv,
 * stages.csv and the traces runs.csv names), their replay in process under a candidate engine,
 * and the per-stage comparison that bench/fidelity.sh makes (client-side TTFT and E2E of the
 * completed requests that arrived in each stage; numpy's linear percentiles; ITL =
 * (E2E mean - TTFT mean) / (output_len - 1)). Not for the optimiser or the output
 * (cmd_fit.c). */
#ifndef SS_APP_FIT_H
#define SS_APP_FIT_H

#include "catalog/catalog.h"
#include "core/ss_err.h"
#include "store/store.h"

#include <stddef.h>
#include <stdint.h>

/* The metrics compared per stage, in the order of every array below (ms). */
enum { FIT_TTFT, FIT_TTFT90, FIT_ITL, FIT_E2E, FIT_E2E90, FIT_METRICS };
_Static_assert(FIT_METRICS == STORE_FIT_METRICS, "one list of metrics");

/* stages.csv's column of each metric (itl_ms is optional there). */
extern const char *const fit_metric_col[FIT_METRICS];
/* Their names in tables ("TTFT mean", ...). */
extern const char *const fit_metric_label[FIT_METRICS];

/* One completed request of a replay, as the requests table stores it. */
typedef struct fit_req {
    double arrival_s, ttft_ms, e2e_ms;
} fit_req;

/* One row of runs.csv that is replayed. */
typedef struct fit_run {
    char *name;               /* run (owned) */
    unsigned line;            /* its line in runs.csv */
    char model[CAT_NAME_MAX], gpu[CAT_NAME_MAX];
    uint32_t tp, max_num_seqs, max_num_batched_tokens, max_model_len;
    double gpu_mem_util;
    uint32_t output_len;      /* tokens every request generated (> 1) */
    char *trace;              /* the trace's path: DIR/trace unless absolute (owned) */
    double *starts;           /* trace_stage_starts, s, non-decreasing (owned) */
    size_t n_starts;
    size_t n_stages, n_fitted; /* its rows of stages.csv, and those in the objective */
    fit_req *reqs;            /* the last replay's completed requests, in completion order */
    size_t n_reqs, cap_reqs;
} fit_run;

/* One row of stages.csv of a replayed run. */
typedef struct fit_stage {
    size_t run;               /* index into runs */
    uint32_t k;               /* stage */
    unsigned line;            /* its line in stages.csv */
    char rate[32];            /* as written ("" when not published) */
    double real[FIT_METRICS]; /* measured; NaN when empty (not measured) */
    double sim[FIT_METRICS];  /* of the last replay; NaN when no request completed */
    uint64_t completed;       /* simulated requests completed in the stage */
    int fitted;               /* in the objective: real TTFT mean below served_ms */
} fit_stage;

typedef struct fit_data {
    char *runs_path, *stages_path; /* DIR/runs.csv, DIR/stages.csv (owned) */
    fit_run *runs;            /* owned */
    size_t n_runs;
    fit_stage *stages;        /* owned, sorted by run (runs.csv order), then stage */
    size_t n_stages;
    char **notes;             /* "FILE:LINE: run 'x' skipped: why" per skipped run (owned) */
    size_t n_notes, cap_notes;
} fit_data;

/**
 * Read DIR's runs.csv and stages.csv. Runs with an empty catalog_model or trace are skipped
 * with a note in d->notes (for the caller to print once the input is known good); so are, silently, runs that `only` (a comma list, NULL: all) does not
 * name, and the stage rows of skipped runs. Errors, each "FILE:LINE: field: what": a missing
 * column, a model or GPU not in cat, a number out of range, a trace that cannot be read, a
 * stage row of an unknown run or beyond its trace_stage_starts, a stage given twice, a name in
 * `only` that is no run; then also when nothing is left to replay. A stage is fitted when its
 * real TTFT mean is below served_ms.
 * @return 0, SS_EPARSE / SS_ENOTFOUND / SS_EINVAL (bad input), SS_EIO, SS_ENOMEM; on failure
 *         *d holds what was read (fit_data_fini frees it)
 */
int fit_data_read(fit_data *d, const char *dir, const catalog *cat, const char *only,
                  double served_ms, ss_errbuf *eb);
void fit_data_fini(fit_data *d);

/* How the runs are replayed. */
typedef struct fit_replay_opts {
    const char *profiles;     /* catalog directory (NULL: catalog_default_dir) */
    int check;                /* APP_CHECK_* */
    const char *cost;         /* cost backend (policy.cost; NULL: the default) */
    catalog *catalog;         /* loaded once from profiles for every replay (borrowed; the
                                 candidate engine is put into it) */
} fit_replay_opts;

/**
 * Replay run i of d as bench/fidelity.sh does (one replica, its TP, Sarathi batching with
 * max_num_batched_tokens as the token budget, max_num_seqs, max_model_len, gpu_mem_util,
 * seed 1, prefix caching auto) under engine e (borrowed; put into the catalog in place of the
 * profile of its name, no file written), then fill the sim figures of its stages.
 * @return 0, or the replay's error with eb "RUNS.CSV:LINE: trace: ..." (the trace could not be
 *         read) or "RUNS.CSV:LINE: run: ..."
 */
int fit_replay_run(fit_data *d, size_t i, const cat_engine *e, const fit_replay_opts *o,
                   ss_errbuf *eb);

/* numpy's default (linear) percentile q (0-100) of the n sorted values xs; NaN when n = 0. */
double fit_pct(const double *xs, size_t n, double q);

#endif
