/* Private to calib/: what the parts of `slicesim fit import` share: the requests and stages
 * read from the logs (one reader per format, fit_import_fmt.c) and the directory written
 * from them (fit_import.c). */
#ifndef SS_CALIB_FIT_IMPORT_INT_H
#define SS_CALIB_FIT_IMPORT_INT_H

#include "calib/fit_import.h"

#include "core/ss_err.h"
#include "core/ss_json.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One request as a log gives it. */
typedef struct calib__imp_req {
    double arrival_s;         /* send time in the run, s (stage offsets applied) */
    double ttft_ms, e2e_ms;   /* of a request that succeeded */
    uint32_t prompt, output;  /* tokens; output 0: unknown (a failed request) */
    uint32_t stage;           /* index into the stages */
    int ok;                   /* 1: succeeded */
} calib__imp_req;

/* Figures of a stage, ms; NaN when not measured. */
enum { IMP_TTFT, IMP_TTFT90, IMP_E2E, IMP_E2E90, IMP_N_FIG };

typedef struct calib__imp_stage {
    char rate[32];            /* the requested rate as the log writes it ("" when none) */
    double fig[IMP_N_FIG];    /* from a summary, or from the requests when !from_summary */
    int from_summary;         /* the log's own summary gave fig */
    double start_s;           /* first send time of the stage in the run, s */
} calib__imp_stage;

typedef struct calib__imp_data {
    calib__imp_req *reqs;     /* owned */
    size_t n_reqs, cap_reqs;
    calib__imp_stage *stages; /* owned */
    size_t n_stages, cap_stages;
    char model_hint[128];     /* the model the log names ("": none) */
    char **notes;             /* assumptions, one line each, printed once the import has
                                 succeeded (owned) */
    size_t n_notes, cap_notes;
} calib__imp_data;

/* Append a request, a stage (zeroed, figures NaN) or a note (a copy of text); 0 or
 * SS_ENOMEM with eb set. */
int calib__imp_add_note(calib__imp_data *d, const char *text, ss_errbuf *eb);
int calib__imp_add_req(calib__imp_data *d, const calib__imp_req *r, ss_errbuf *eb);
int calib__imp_add_stage(calib__imp_data *d, calib__imp_stage **s_out, ss_errbuf *eb);

/* The readers: every file of o into d, arrivals in one clock from 0. Errors "FILE:LINE:
 * field: what" (CSV) or "FILE: field: what" (JSON). */
int calib__imp_requests_csv(calib__imp_data *d, const calib_import_opts *o, ss_errbuf *eb);
int calib__imp_vllm_bench(calib__imp_data *d, const calib_import_opts *o, ss_errbuf *eb);
int calib__imp_inference_perf(calib__imp_data *d, const calib_import_opts *o, ss_errbuf *eb);

#endif
