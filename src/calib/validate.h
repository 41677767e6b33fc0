/* calib/: a simulated schedule run on a GPU, as `slicesim validate` checks the cost model: a
 * short trace replayed on one simulated container, the batch of each iteration recorded, each
 * iteration's operators run on an executor in execution order (embedding, every layer's
 * operators, final norm, LM head), and the measured device time compared with the cost
 * model's prediction per operator kind and per iteration. Not for reading options
 * (app/cmd_validate.c) or running operators (exec/exec.h). */
#ifndef SS_CALIB_VALIDATE_H
#define SS_CALIB_VALIDATE_H

#include "core/ss_err.h"

#include <stddef.h>
#include <stdio.h>

#define CALIB_VALIDATE_DEFAULT_TRACE "traces/azure-conv-synth.csv"
#define CALIB_VALIDATE_MAX_REPS 64 /* executions of one iteration */

/* The caller's check of the files a validation reads and writes (app/ refuses a database that
 * is the trace), called once the model and GPU are found, before the executor starts. 0, or an
 * SS_E* code with eb set, which stops the validation. */
typedef int calib_validate_files_fn(void *ud, ss_errbuf *eb);

typedef struct calib_validate_opts {
    const char *trace;        /* replayed (NULL: CALIB_VALIDATE_DEFAULT_TRACE, in the current
                                 directory or else the source tree) */
    const char *model;        /* catalog model (required) */
    const char *gpu;          /* catalog GPU whose cost model predicts (NULL: guessed from the
                                 device's name; required with backend "sim") */
    unsigned tp;              /* tensor-parallel degree; one rank's shard runs */
    long limit;               /* requests replayed */
    long iters;               /* iterations executed and compared */
    long reps;                /* executions of each iteration, 1 to CALIB_VALIDATE_MAX_REPS;
                                 the median per operator is kept */
    const char *rate_scale;   /* arrival rate multiplier as written (NULL: the scenario's) */
    const char *batching;     /* batching policy (NULL: the scenario's) */
    const char *cost;         /* cost model under test (NULL: roofline) */
    const char *const *sets;  /* n_sets scenario assignments SECTION.KEY=VALUE, applied last;
                                 the simulated tenant is called "validate" */
    size_t n_sets;
    const char *backend;      /* executor: "cuda" or "sim" */
    int gpu_index;            /* CUDA device */
    int l2_cold;              /* flush the L2 cache before every operator */
    const char *db;           /* results database ("none": no store) */
    const char *name;         /* label stored with the validation (NULL: none) */
    const char *profiles;     /* catalog directory (NULL: catalog_default_dir) */
    int json;                 /* the result as JSON instead of the table */
    int quiet;                /* no progress lines */
    calib_validate_files_fn *check_files; /* NULL: none */
    void *check_files_ud;
} calib_validate_opts;

/**
 * Validate as o says and write the result to out (the table and the database line, or with
 * o->json one JSON object); store it in o->db (tables validations, validation_ops,
 * validation_iters) under the command line command. Progress goes to stderr. All strings are
 * borrowed.
 * @return 0; SS_EIO when there is no device (eb: "nothing measured: ...") or for a device or
 *         file error; SS_EDB for the database; SS_EPARSE / SS_EINVAL / SS_ENOTFOUND for bad
 *         input (unknown model or GPU, a bad --set, a trace that cannot be read); eb says what
 */
int calib_validate(const calib_validate_opts *o, const char *command, FILE *out,
                   ss_errbuf *eb);

/* `slicesim validate --colocate MODE` (calib/colocate.c): a prefill-shaped and a decode-shaped
 * GEMM of the model in two processes on one GPU, each alone and then together, under MPS
 * (each process capped at sm_share of the SMs; the MPS control daemon must be running) or
 * time slicing, their measured slow-downs beside the simulator's sharing model's. */
typedef struct calib_colocate_opts {
    const char *mode;         /* "mps" or "time" */
    const char *model;        /* catalog model whose gate+up projection runs (required) */
    const char *gpu;          /* catalog GPU the prediction is for (required) */
    const char *backend;      /* executor: "cuda" or "sim" */
    int gpu_index;            /* CUDA device */
    double sm_share;          /* MPS: each process's share of the SMs, (0, 1] */
    double mps_interference;  /* the model's MPS slow-down beyond bandwidth (predicted with) */
    unsigned prefill_tokens;  /* the prefill-shaped GEMM's tokens */
    unsigned decode_tokens;   /* the decode-shaped GEMM's tokens */
    double seconds;           /* wall time of each run (alone, together) */
    const char *profiles;     /* catalog directory (NULL: catalog_default_dir) */
    int json;                 /* one JSON object instead of the table */
} calib_colocate_opts;

/* Measure and compare as o says; the result to out. 0; SS_EIO when a process could not use
 * the device (eb says which and why); SS_EINVAL / SS_ENOTFOUND for bad options. */
int calib_colocate(const calib_colocate_opts *o, FILE *out, ss_errbuf *eb);

#endif
