/* Figures from a results database: the runs grouped into series (a sweep's points, or plain
 * runs by what differs between them), the data each kind of figure shows, and a backend that
 * draws it (gnuplot, run as a process with the scripts plots/KIND.gp and the data piped in).
 * The only place that starts a process for a figure. Not for option parsing or messages on the
 * terminal: `slicesim plot` (app/cmd_plot.c) does those. */
#ifndef SS_PLOT_PLOT_H
#define SS_PLOT_PLOT_H

#include "core/ss_err.h"

/* {======================================================================
 * Kinds of figure, in --kind's order: throughput-vs-load, sla-vs-load (against load),
 * latency-cdf, gpu-time (gpu-timeline, its old name, is found too), idle-slices, tiers (at one
 * load), capacity (each bundle's capacity, from the capacities table of a capacity command
 * stored under the sweep).
 * ======================================================================= */

#define PLOT_N_KINDS 7

/* Name of kind (0..PLOT_N_KINDS-1), also its script's and its figure's base name (borrowed,
 * static). */
const char *plot_kind_name(int kind);
/* The kind named name, or -1. */
int plot_kind_find(const char *name);

/* }====================================================================== */

/* {======================================================================
 * The data: runs grouped into series, with their loads and headline figures (plot_data.c).
 * ======================================================================= */

typedef struct plot_data plot_data;

/* Open the database at db_path read-only and group its runs: the points of sweep `sweep`
 * (NULL: the newest sweep), or when it has no sweeps, every run by the settings that differ.
 * The one-load kinds show `load` (NaN: the highest load every series has). *d_out (owned,
 * plot_data_destroy) is written only on success. 0; SS_EPARSE (db_path cannot be read, no
 * runs, too many series, no run at `load`), SS_EIO, SS_EDB or SS_ENOMEM with eb set. */
int plot_data_load(plot_data **d_out, const char *db_path, const char *sweep, double load,
                   ss_errbuf *eb);
/* Close the database and free d. NULL-safe; sets *d to NULL. */
void plot_data_destroy(plot_data **d);

/* }====================================================================== */

/* {======================================================================
 * Drawing (plot.c): a backend by name, and one figure at a time.
 * ======================================================================= */

typedef struct plot_backend plot_backend;

/* Open backend `name` ("gnuplot", the only one) and read its settings (gnuplot: its timeout,
 * SLICESIM_GNUPLOT_TIMEOUT_S, default 120 s). *b_out (owned, plot_backend_destroy) is written
 * only on success. 0; SS_ENOTFOUND (unknown backend), SS_EPARSE (a bad setting) or SS_ENOMEM
 * with eb set. */
int plot_backend_create(plot_backend **b_out, const char *name, ss_errbuf *eb);
/* NULL-safe; sets *b to NULL. */
void plot_backend_destroy(plot_backend **b);

/* How figures look. */
typedef struct plot_style {
    int paper;            /* 1: for a paper's single column (3.3 in wide, 8 pt fonts, no
                             title: the caption says it); 0: for a screen (1100 x 480 px) */
    double sla_bound_pct; /* the SLA-miss bound drawn on sla-vs-load, % (0: none) */
} plot_style;

/* Draw figure `kind` of d into DIR/KIND.FMT (fmt "png", "svg" or "pdf") with backend b, from
 * the script plots/KIND.gp (SLICESIM_PLOTS names another folder), in style s. 0; SS_EIO (no
 * script, the backend failed or timed out), SS_EDB or SS_ENOMEM with eb set. */
int plot_render(plot_backend *b, const plot_data *d, int kind, const char *dir, const char *fmt,
                const plot_style *s, ss_errbuf *eb);
/* Whether figure `kind` of d would show nothing to compare: 1 with the reason in why (n
 * bytes; "one load (1): a line against load needs two"), 0, or a negative SS_E* code with eb
 * set (reading the database failed). Lines against load need two loads; tiers need a run
 * with two tiers. */
int plot_kind_degenerate(const plot_data *d, int kind, char *why, size_t n, ss_errbuf *eb);

/* }====================================================================== */

#endif
