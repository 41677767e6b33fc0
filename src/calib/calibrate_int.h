/* Private to calib/: the operator grid of `slicesim calibrate` (calibrate_grid.c) as
 * calibrate.c measures it: which shapes of which operators, and each point's executor operator
 * and profile-table keys. */
#ifndef SS_CALIB_CALIBRATE_INT_H
#define SS_CALIB_CALIBRATE_INT_H

#include "catalog/catalog.h"
#include "cost/cost.h"
#include "cost/cost_profile.h"
#include "exec/exec.h"

#include <stddef.h>
#include <stdint.h>

/* The most sequences one point's operator runs (a decode batch): the seqs a point fills. */
#define CALIB__MAX_SEQS 1024

/* One point of the grid. */
typedef struct calib__point {
    cost_op_kind kind;
    uint64_t a, b; /* dense: tokens; lm_head: sequences; prefill: q, c0; decode: batch, ctx;
                      pp_send: bytes */
} calib__point;

typedef struct calib__points {
    calib__point *v;  /* owned (ss_free) */
    size_t n, cap;
} calib__points;

/* Append the grid to g: full (1, the peers' density) or quick (0), of the operators in the
 * comma list ops (NULL: all) that dev runs and the model of cm has. 0, or SS_ENOMEM (g keeps
 * the points appended before). */
int calib__build_grid(calib__points *g, int full, cost_model *cm, const exec_device *dev,
                      const char *ops);
/* The executor operator of point pt of model m at TP tp, with shapes from cm (eo->seqs point
 * into seqs, which holds CALIB__MAX_SEQS), and its profile-table row keys. */
void calib__point_op(cost_model *cm, const cat_model *m, unsigned tp, const calib__point *pt,
                     exec_op *eo, exec_seq *seqs, cost_prof_row *row);

#endif
