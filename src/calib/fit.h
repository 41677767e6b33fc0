/* calib/: an engine profile fitted to measured serving runs, as `slicesim fit DIR` makes it. DIR
 * holds runs.csv, stages.csv and the traces runs.csv names (like $SLICESIM_DATA/serving/...).
 * Every run is replayed in process under a candidate engine as bench/fidelity.sh does; each
 * stage's client-side TTFT, ITL and E2E are compared with the measured ones (numpy's linear
 * percentiles; ITL = (E2E mean - TTFT mean) / (output_len - 1)); Nelder-Mead minimises the
 * mean |ln(sim / real)| over the stages a server really served on the chosen engine terms;
 * then the comparison is written and the fitted profile with it. Not for reading options
 * (app/cmd_fit.c). */
#ifndef SS_CALIB_FIT_H
#define SS_CALIB_FIT_H

#include "catalog/catalog.h"
#include "core/ss_err.h"
#include "store/store.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The metrics compared per stage, in the order of every array below (ms). */
enum { CALIB_FIT_TTFT, CALIB_FIT_TTFT90, CALIB_FIT_ITL, CALIB_FIT_E2E, CALIB_FIT_E2E90,
       CALIB_FIT_METRICS };
_Static_assert(CALIB_FIT_METRICS == STORE_FIT_METRICS, "one list of metrics");

/* The engine terms fit can calibrate (calib_fit_term_find; one line each in the table of
 * calib/fit.c, which checks this count), and those it fits by default. */
#define CALIB_FIT_N_TERMS 8
#define CALIB_FIT_DEFAULT_TERMS                                                                 \
    "iter_fixed_us,iter_per_seq_us,iter_per_token_us,op_floor_us,hop_latency_us,frontend_ms,"   \
    "attn_speed"

/* The index of the fittable engine term key[0..len) (its profile key: "iter_fixed_us", ...),
 * or -1 when there is none of that name. */
int calib_fit_term_find(const char *key, size_t len);
/* Every fittable term's key, comma-separated as --fit takes them, into buf (n bytes, cut to
 * fit; 256 hold them all). */
void calib_fit_term_list(char *buf, size_t n);

/* One request of a replay, as the requests table stores it. */
typedef struct calib_fit_req {
    double arrival_s, ttft_ms, e2e_ms; /* ttft_ms and e2e_ms of a completed request only */
    int reject_why;           /* -1: completed; else why it was rejected (METRICS_REJ_*) */
} calib_fit_req;

/* One row of runs.csv that is replayed. */
typedef struct calib_fit_run {
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
    calib_fit_req *reqs;      /* the last replay's requests, completed or rejected, in the
                                 order they ended */
    size_t n_reqs, cap_reqs;
    /* its trace's requests as the first complete replay read them, which later replays take
     * instead of reading and sorting the file again (owned; prefix_blocks NULL in trace, the
     * blocks of request i at blocks + block_at[i]) */
    struct trace_rec *trace_cache;
    size_t *block_at;
    uint32_t *blocks;
    size_t n_cache, cap_cache, cap_block_at, n_blocks, cap_blocks;
    int cached;               /* trace_cache holds the whole trace */
} calib_fit_run;

/* One row of stages.csv of a replayed run. */
typedef struct calib_fit_stage {
    size_t run;               /* index into runs */
    uint32_t k;               /* stage */
    unsigned line;            /* its line in stages.csv */
    char rate[32];            /* as written ("" when not published) */
    double real[CALIB_FIT_METRICS]; /* measured; NaN when empty (not measured) */
    double sim[CALIB_FIT_METRICS];  /* of the last replay; NaN when no request completed */
    uint64_t completed;       /* simulated requests completed in the stage */
    uint64_t arrived;         /* simulated requests that arrived in it, completed or rejected */
    int reject_why;           /* why most of its rejected requests were (METRICS_REJ_*), -1
                                 when none was */
    int fitted;               /* in the objective: real TTFT mean below served_ms */
} calib_fit_stage;

/* The measured serving runs of DIR. */
typedef struct calib_fit_data {
    char *runs_path, *stages_path; /* DIR/runs.csv, DIR/stages.csv (owned) */
    calib_fit_run *runs;      /* owned */
    size_t n_runs;
    calib_fit_stage *stages;  /* owned, sorted by run (runs.csv order), then stage */
    size_t n_stages;
    char **notes;             /* "FILE:LINE: run 'x' skipped: why" per skipped run (owned) */
    size_t n_notes, cap_notes;
} calib_fit_data;

/* The caller's check of the files a fit reads (d: runs.csv, stages.csv, each run's trace;
 * borrowed) and writes (its options' profile, stages and database), called once the data is
 * read, before any output is opened (app/ refuses an output that is an input or another
 * output). 0, or an SS_E* code with eb set, which stops the fit. */
typedef int calib_fit_files_fn(void *ud, const calib_fit_data *d, ss_errbuf *eb);

typedef struct calib_fit_opts {
    const char *dir;          /* the measured runs */
    const char *engine;       /* engine to start from, or to evaluate */
    const char *profiles;     /* catalog directory (NULL: catalog_default_dir) */
    const char *name;         /* name of the fitted engine */
    const char *description;  /* of the fitted engine (NULL: "START fitted by slicesim fit to
                                 DIR") */
    const char *out;          /* fitted profile to write (unused with evaluate) */
    const char *runs;         /* comma list of the runs replayed (NULL: all) */
    const char *write_stages; /* the final engine's simulated stages as a stages.csv (NULL:
                                 none) */
    const char *db;           /* results database of the fit and its stages (NULL: none) */
    const char *overlap;      /* "serial" or "max": the fitted engine's (NULL: the start's) */
    const char *allreduce;    /* "ring" or "twoshot": the fitted engine's (NULL: the start's) */
    const char *cost;         /* cost backend of the replays (NULL: the scenario default) */
    long iterations;          /* Nelder-Mead iterations at most */
    long jobs;                /* replays at once, each in a child process (1: in this one) */
    double served_ms;         /* stages whose real TTFT mean is below it are fitted */
    int evaluate;             /* no fit: replay under engine and compare */
    int json;                 /* one JSON object instead of the table */
    int progress;             /* a progress line on a terminal */
    int check;                /* verify the simulator's invariants: RUNNER_CHECK_* */
    int full_replays;         /* replay every run at every evaluation (0: stop an evaluation
                                 between runs once its objective cannot change Nelder-Mead's
                                 next step: ss_nm_fn) */
    size_t term[CALIB_FIT_N_TERMS]; /* the fitted terms (calib_fit_term_find), in order */
    size_t n_term;            /* 1 to CALIB_FIT_N_TERMS, each once, unless evaluate */
    calib_fit_files_fn *check_files; /* NULL: none */
    void *check_files_ud;
} calib_fit_opts;

/**
 * Read and check o->dir, replay every run under the start engine (the input is only known
 * good once each has replayed), fit (unless o->evaluate), replay under the result; then write
 * the profile (o->out), the stages (o->write_stages) and the database rows (o->db) under the
 * command line command, and the comparison to out. Notes on skipped runs and the progress go
 * to stderr. All strings are borrowed.
 * @return 0, or an SS_E* code with eb set: SS_EPARSE / SS_ENOTFOUND / SS_EINVAL for bad input
 *         ("FILE:LINE: field: what"), SS_EIO, SS_EDB, SS_ENOMEM; nothing is left of the
 *         outputs of a failed fit
 */
int calib_fit(const calib_fit_opts *o, const char *command, FILE *out, ss_errbuf *eb);

#endif
