/* calib/: operator profiles measured on a GPU, as `slicesim calibrate` makes them: one model's
 * decoder-layer operators (one TP rank's shard) over a grid of shapes, written as a profile
 * table (profiles/PROFILE-FORMAT.md) for the profile and auto cost models. Rows go to
 * TABLE.partial as they are measured, so an interrupted run resumes where it stopped; the
 * finished table is written to a temporary file (core/ss_file.h) and renamed. Not for reading
 * options (app/cmd_calibrate.c) or running operators (exec/exec.h). */
#ifndef SS_CALIB_CALIBRATE_H
#define SS_CALIB_CALIBRATE_H

#include "core/ss_err.h"

#include <stddef.h>
#include <stdio.h>

#define CALIB_CALIBRATE_MAX_REPS 10000 /* timed runs of one point */

typedef struct calib_calibrate_opts {
    const char *model;        /* catalog model (NULL only with selftest_only) */
    const char *gpu;          /* catalog GPU the table is for (NULL: guessed from the device's
                                 name; required with backend "sim") */
    const char *out;          /* output directory (NULL: PROFILES/GPU/); the table is
                                 DIR/MODEL-tpN.csv */
    const char *backend;      /* executor: "cuda" or "sim" (the roofline plays the GPU) */
    const char *grid;         /* "quick" or "full" */
    const char *ops;          /* comma list of the operators measured (NULL: every one the
                                 model has); each calib_calibrate_op_known */
    const char *profiles;     /* catalog directory (NULL: catalog_default_dir) */
    int gpu_index;            /* CUDA device */
    unsigned tp;              /* tensor-parallel degree whose one-rank shard is measured */
    int reps;                 /* timed runs per point, 1 to CALIB_CALIBRATE_MAX_REPS: the table
                                 keeps their median, minimum and 90th percentile */
    int warmup;               /* untimed runs before them */
    int l2_cold;              /* flush the L2 cache before every timed run */
    long limit_points;        /* measure at most this many new points, then stop (< 0: all) */
    int restart;              /* discard a partial table measured with other settings */
    int selftest_only;        /* only check every kernel against the CPU reference */
    int no_selftest;          /* skip that check before measuring */
    int quiet;                /* no progress lines */
} calib_calibrate_opts;

/* Whether name[0..len) names an operator calibrate can measure (embed, norm, ..., pp_send;
 * not all_reduce). */
int calib_calibrate_op_known(const char *name, size_t len);

/**
 * Measure the grid o describes (resuming TABLE.partial when its settings match), write the
 * table, then its summary to out: per operator the points, the median range and how far the
 * roofline is from the measurement. The device, the self-test's report and the progress go to
 * stderr, with a warning when the GPU reported thermal or power limits. All strings are
 * borrowed.
 * @return 0; SS_EIO when there is no device (eb: "calibrate: nothing measured: ..."), a
 *         device or file error, or o->limit_points stopped the run (eb is then empty: a line
 *         on stderr said how far it got); SS_EINVAL / SS_ENOTFOUND / SS_EPARSE for bad input
 *         (unknown model or GPU, a TP that does not divide the model, a partial table of other
 *         settings without restart) with eb set
 */
int calib_calibrate(const calib_calibrate_opts *o, FILE *out, ss_errbuf *eb);

#endif
