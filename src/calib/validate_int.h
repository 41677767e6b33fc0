/* Private to calib/: the recorded iterations of a validation and their measurement
 * (validate.c), as validate_out.c summarises, prints and stores them. */
#ifndef SS_CALIB_VALIDATE_INT_H
#define SS_CALIB_VALIDATE_INT_H

#include "calib/validate.h"

#include "catalog/catalog.h"
#include "core/ss_time.h"
#include "cost/cost.h"
#include "exec/exec.h"
#include "gmg/gmg.h"

#include <stdint.h>

#define CALIB__MAX_IOPS 24 /* operators of one iteration */
#define CALIB__N_WORST 5   /* iterations listed as the worst */

/* One simulated iteration and, after execution, its measurement. */
typedef struct calib__val_iter {
    uint64_t seq;
    ss_time t_start, t_end;          /* simulated */
    cost_batch batch;
    uint32_t seq0, n_prefill, n_decode; /* its sequences in the pool: prefills, then decodes */
    cost_op ops[CALIB__MAX_IOPS];    /* cost_iteration_ops of the batch */
    ss_time op_ns[CALIB__MAX_IOPS];
    uint32_t n_ops;
    ss_time pred[COST_OP__COUNT];    /* predicted device time per kind (all executions) */
    ss_time meas[COST_OP__COUNT];    /* measured */
    uint32_t execs[COST_OP__COUNT];
    ss_time pred_host;               /* engine host time (not executed) */
    ss_time pred_total, meas_total;  /* over the kinds executed */
    ss_time meas_span;               /* first kernel start to last kernel end */
} calib__val_iter;

typedef struct calib__val_run {
    const calib_validate_opts *o;
    calib__val_iter *it;
    size_t n_it, cap_it;
    exec_seq *seqs;
    size_t n_seqs, cap_seqs;
    int oom;
    gmg_id ctr;                      /* the container recorded (the first that iterates) */
    const cat_model *m;
    const cat_gpu *gpu;
    exec *x;
    ss_errbuf eb;
} calib__val_run;

/* One operator kind over the iterations. */
typedef struct calib__kind_stat {
    uint64_t execs;
    uint32_t iters;
    double pred_ms, meas_ms, ape, bias, worst;
    uint64_t worst_iter;
} calib__kind_stat;

typedef struct calib__val_sum {
    calib__kind_stat k[COST_OP__COUNT];
    double mape, bias, pred_ms, meas_ms, span_ms, host_ms;
    size_t worst[CALIB__N_WORST], n_worst;
} calib__val_sum;

/* Summarise v's executed iterations into s. */
void calib__val_summarise(const calib__val_run *v, calib__val_sum *s);
/* The readable table of s to f, cost being the cost model under test. */
void calib__val_print_table(FILE *f, const calib__val_run *v, const calib__val_sum *s,
                            const char *cost);
/* s as one JSON object to f, id the validation's in the database (0: not stored). */
void calib__val_print_json(FILE *f, const calib__val_run *v, const calib__val_sum *s,
                           const char *cost, int64_t id);
/* Store the validation in v->o->db in one transaction (nothing for "none": *id_out = 0).
 * 0 or the store's error with v->eb set. */
int calib__val_store(calib__val_run *v, const calib__val_sum *s, const char *cost,
                     const char *trace, const char *command, int64_t *id_out);

#endif
