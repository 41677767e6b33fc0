/* Private to calib/: what the parts of `slicesim fit` share: the fittable engine terms, the
 * measured runs as read (fit_data.c), their replays in process or in child processes
 * (fit_runs.c), the fit under way and its objective (fit.c), and the summaries and outputs
 * (fit_out.c). */
#ifndef SS_CALIB_FIT_INT_H
#define SS_CALIB_FIT_INT_H

#include "calib/fit.h"

#include "catalog/catalog.h"
#include "core/ss_err.h"
#include "core/ss_file.h"
#include "core/ss_nm.h"

#include <stddef.h>
#include <stdio.h>

/* {======================================================================
 * The fittable engine terms (fit.c)
 * ======================================================================= */

/* A term of cat_engine that fit can calibrate: a double >= lo set in SI units from the
 * profile's unit. [host] terms are set in e->host; a fitted engine has no [gpu.NAME]
 * sections, so they hold on every GPU. */
typedef struct calib__fit_term {
    const char *key;  /* the profile key, as --fit names it */
    size_t off;       /* offsetof the double in cat_engine */
    double scale;     /* profile unit to SI (1e-6 for *_us) */
    double step;      /* first simplex step, profile units (at least; 20 % of the start if
                         larger) */
    double lo;        /* lower bound, profile units (0 for a term >= 0; above 0 for one the
                         profile requires > 0, such as a speed or an efficiency) */
} calib__fit_term;

/* The CALIB_FIT_N_TERMS fittable terms, in the order of calib_fit_term_find. */
extern const calib__fit_term calib__fit_terms[];

/* Term t of engine e, in the profile's unit. */
double calib__fit_term_get(const cat_engine *e, const calib__fit_term *t);
/* Set term t of engine e to v, given in the profile's unit. */
void calib__fit_term_set(cat_engine *e, const calib__fit_term *t, double v);

/* }====================================================================== */

/* {======================================================================
 * The measured runs (fit_data.c) and their replay (fit_runs.c)
 * ======================================================================= */

/* stages.csv's column of each metric (itl_ms is optional there). */
extern const char *const calib__fit_metric_col[CALIB_FIT_METRICS];
/* Their names in tables ("TTFT mean", ...). */
extern const char *const calib__fit_metric_label[CALIB_FIT_METRICS];

/**
 * Read DIR's runs.csv and stages.csv. Runs with an empty catalog_model or trace are skipped
 * with a note in d->notes (for the caller to print once the input is known good); so are,
 * silently, runs that `only` (a comma list, NULL: all) does not name, and the stage rows of
 * skipped runs. Both files may start with a UTF-8 byte-order mark. Numbers are decimal, as in
 * traces (ss_parse_decimal: no hex). Errors, each "FILE:LINE: field: what": a missing column,
 * a model or GPU not in cat, a number out of range or not decimal, trace_stage_starts that do
 * not increase, a latency that is not above 0 or an E2E (mean, p90) not above its TTFT (or so
 * little that the ITL derived from them is 0), a trace that cannot be read, a stage row of an
 * unknown run or beyond its trace_stage_starts, a stage given twice, a name in `only` that is
 * no run; then also when nothing is left to replay. A stage is fitted when its real TTFT mean
 * is below served_ms.
 * @return 0, SS_EPARSE / SS_ENOTFOUND / SS_EINVAL (bad input), SS_EIO, SS_ENOMEM; on failure
 *         *d holds what was read (calib__fit_data_fini frees it)
 */
int calib__fit_data_read(calib_fit_data *d, const char *dir, const catalog *cat,
                         const char *only, double served_ms, ss_errbuf *eb);
/* Free what d owns and zero it. */
void calib__fit_data_fini(calib_fit_data *d);

/* How the runs are replayed. */
typedef struct calib__fit_replay_opts {
    const char *profiles;     /* catalog directory (NULL: catalog_default_dir) */
    int check;                /* RUNNER_CHECK_* */
    const char *cost;         /* cost backend (policy.cost; NULL: the default) */
    catalog *catalog;         /* loaded once from profiles for every replay (borrowed; the
                                 candidate engine is put into it) */
} calib__fit_replay_opts;

/**
 * Replay run i of d as bench/fidelity.sh does (one replica, its TP, Sarathi batching with
 * max_num_batched_tokens as the token budget, max_num_seqs, max_model_len, gpu_mem_util,
 * seed 1, prefix caching auto) under engine e (borrowed; put into the catalog in place of the
 * profile of its name, no file written), then fill the sim figures of its stages.
 * @return 0, or the replay's error with eb "RUNS.CSV:LINE: trace: ..." (the trace could not be
 *         read) or "RUNS.CSV:LINE: run: ..."
 */
int calib__fit_replay_run(calib_fit_data *d, size_t i, const cat_engine *e,
                          const calib__fit_replay_opts *o, ss_errbuf *eb);

/* After every run of d was replayed: each stage had a request completed, else an error (SS_EINVAL,
 * bad input: no engine can serve such a stage) "STAGES.CSV:LINE: stage: no request ... arrives
 * in stage K" (the trace has none in its time) or "RUNS.CSV:LINE: FIELD: all N requests of
 * stage K ... are rejected" (FIELD the setting that rejects most: max_model_len, ...). */
int calib__fit_check_served(const calib_fit_data *d, ss_errbuf *eb);

/* numpy's default (linear) percentile q (0-100) of the n sorted values xs; NaN when n = 0. */
double calib__fit_pct(const double *xs, size_t n, double q);

/* }====================================================================== */

/* {======================================================================
 * The fit under way
 * ======================================================================= */

typedef struct calib__fit_ctx {
    const calib_fit_opts *o;
    calib_fit_data d;
    calib__fit_replay_opts ro;
    const cat_engine *start;  /* &start_copy */
    cat_engine start_copy;    /* the start engine as the catalog had it: the replays put each
                                 candidate into that catalog, which may move or replace it */
    cat_engine cand;          /* the engine under test */
    double x0[CALIB_FIT_N_TERMS]; /* the fitted terms at the start, profile units */
    size_t free_at[CALIB_FIT_N_TERMS]; /* the positions in o->term that Nelder-Mead varies:
                                 those the data identify (fit.c choose_terms); the others
                                 keep their start values */
    size_t n_free;
    double wall0;
    int progress_shown;
    ss_outfile *prof_out, *stages_out; /* opened before the replays, committed at the end */
    FILE *prof_f, *stages_f;
    FILE *out;                /* the comparison's stream */
    size_t n_stopped;         /* evaluations stopped before their last runs (ss_nm_fn) */
    ss_errbuf eb;
} calib__fit_ctx;

/* Replay every run (all = 1) or only those with fitted stages under x->cand: one at a time in
 * this process, or up to o->jobs at once, each in a worker process (the runs are independent,
 * so the figures are the same either way; the first failing run in runs.csv order is
 * reported). A SIGINT, SIGTERM or SIGHUP while children run is sent on to each, which is
 * reaped before the fit dies of the signal. 0 or the error with x->eb set. */
int calib__fit_replay_all(calib__fit_ctx *x, int all);
/* calib__fit_replay_all of the runs with fitted stages, in runs.csv order, that starts no
 * further run once the leading runs replayed make the objective certain to be at least stop_at
 * (calib__fit_objective_upto; +INFINITY: never); *n_done gets the count of leading runs
 * replayed (every run: x->d.n_runs). 0 or the error with x->eb set. */
int calib__fit_replay_until(calib__fit_ctx *x, double stop_at, size_t *n_done);
/* The worker processes that replay runs in parallel (o->jobs > 1) live from the first such
 * replay to this call, which ends and reaps them (nothing when there are none). */
void calib__fit_workers_end(void);

/* The stages of d in the objective. */
size_t calib__fit_n_fitted(const calib_fit_data *d);
/* The objective: each fitted stage's mean |ln(sim / real)| over its measured metrics,
 * averaged over the fitted stages (NaN when there are none). */
double calib__fit_objective(const calib_fit_data *d);
/* The objective's sum over the fitted stages of runs [0, n_runs) only, over all the fitted
 * stages: the objective itself when n_runs is d->n_runs, else a lower bound of what it will be
 * once the other runs are replayed (every stage's error is >= 0 and the stages are summed in
 * the same order, so a prefix of the sum cannot exceed it, rounding included). */
double calib__fit_objective_upto(const calib_fit_data *d, size_t n_runs);

/* }====================================================================== */

/* {======================================================================
 * The result (fit_out.c)
 * ======================================================================= */

typedef struct calib__fit_metric_sum {
    double mape, bias, median; /* %, over the fitted stages with the metric measured */
    size_t n;
} calib__fit_metric_sum;

typedef struct calib__fit_result {
    calib__fit_metric_sum m[CALIB_FIT_METRICS];
    double objective;
    size_t n_fitted, runaway;
    ss_nm_result nm;           /* zero for --evaluate */
    double wall_s;
} calib__fit_result;

/* The errors of x's last replays into r (not nm or wall_s). 0 or SS_ENOMEM with eb set. */
int calib__fit_summarize(const calib__fit_ctx *x, calib__fit_result *r, ss_errbuf *eb);
/* Everything the result goes to: the profile, the stages, the database, the table or JSON
 * on x->out. 0 or the error with x->eb set. */
int calib__fit_emit(calib__fit_ctx *x, const calib__fit_result *r, const char *command);

/* }====================================================================== */

#endif
