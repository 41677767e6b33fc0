/* calib/: `slicesim fit import`: benchmark logs (vLLM's benchmark JSON, inference-perf's
 * reports, a per-request CSV) turned into the directory `slicesim fit DIR` reads: runs.csv,
 * stages.csv and traces/RUN.csv. Several files are several stages of one run, in the order
 * given. Not for fitting (calib/fit.h) nor for reading options (app/cmd_fit_import.c). */
#ifndef SS_CALIB_FIT_IMPORT_H
#define SS_CALIB_FIT_IMPORT_H

#include "core/ss_err.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The seed of the arrivals generated for a log without per-request send times. */
#define CALIB_IMPORT_SEED 1

typedef struct calib_import_opts {
    const char *from;          /* "vllm-bench", "inference-perf" or "requests-csv" */
    char *const *files;        /* the logs, in stage order (borrowed) */
    size_t n_files;
    const char *out;           /* the directory to create (must not exist, or be empty) */
    const char *profiles;      /* catalog directory (NULL: catalog_default_dir) */
    const char *model;         /* catalog model (NULL: from the log's model name) */
    const char *gpu;           /* catalog GPU (required) */
    const char *run;           /* run name (NULL: from the first file's name) */
    uint32_t tp;               /* tensor parallelism (>= 1) */
    uint32_t max_num_seqs;     /* 0: vLLM's default for the GPU */
    uint32_t max_num_batched_tokens; /* 0: vLLM's default for the GPU */
    uint32_t max_model_len;    /* 0: the model's context window (vLLM's default) */
    double gpu_mem_util;       /* (0, 1] */
} calib_import_opts;

/**
 * Read the logs, check them, and write the fit directory o->out as a whole: it is written
 * under a temporary name beside it and renamed into place, so a failure leaves nothing
 * there. One line per assumption made (generated arrivals) goes to notes, then a summary.
 * @return 0, or an SS_E* code with eb set: SS_EPARSE / SS_ENOTFOUND / SS_EINVAL for bad
 *         input ("FILE:LINE: field: what", JSON "FILE: field: what"), SS_EIO, SS_ENOMEM
 */
int calib_fit_import(const calib_import_opts *o, FILE *notes, ss_errbuf *eb);

/* 1 when name is one of the formats calib_fit_import reads. */
int calib_import_format_known(const char *name);

#endif
