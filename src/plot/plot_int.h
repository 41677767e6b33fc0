/* Private to src/plot: the grouped runs (plot_data) the kinds read, the gnuplot input each kind
 * writes, and the backend interface a figure is drawn through. Not for other modules: they use
 * plot.h only. */
#ifndef SS_PLOT_PLOT_INT_H
#define SS_PLOT_PLOT_INT_H

#include "plot/plot.h"
#include "store/store.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PLOT__MAX_SERIES 24 /* series in one figure; more are refused */
#define PLOT__MAX_LOADS 64  /* distinct loads; further ones are not drawn */
#define PLOT__NAME_MAX 512  /* bytes of a series' name (and of a sweep's), NUL included */

/* One run as a figure sees it. */
typedef struct plot__run {
    int64_t id;
    int series;             /* index into plot_data.series */
    double load;            /* its x value */
    /* from the summary (0 when not stored) */
    double out_tps, goodput, sla, ttft_p99;
    int have_summary;       /* 1: the summary has a row for it */
} plot__run;

struct plot_data {
    store *st;                              /* read-only; owned */
    char what[PLOT__NAME_MAX * 2];          /* the sweep's name, or the database's */
    char series[PLOT__MAX_SERIES][PLOT__NAME_MAX];
    int n_series;
    plot__run *runs;                        /* owned */
    size_t n_runs, cap_runs;
    double loads[PLOT__MAX_LOADS];          /* ascending once loaded */
    int n_loads;
    double load;                            /* the load single-load kinds show */
    int by_sweep;                           /* 1: what is a sweep's name (its points grouped) */
};

/* Write the gnuplot input of figure `kind` (its variables and datablocks, not the terminal nor
 * the script) to g (plot_kinds.c). 0, or SS_EDB / SS_ENOMEM with eb set. */
int plot__write_kind(FILE *g, const plot_data *d, int kind, ss_errbuf *eb);

/* A backend that draws a figure from its gnuplot input (ops struct). Every hook returns 0 or an
 * SS_E* code with eb set. */
#define PLOT__ABI_VERSION 2
typedef struct plot_backend_ops {
    uint32_t abi_version;   /* PLOT__ABI_VERSION */
    const char *name;       /* "gnuplot" */
    size_t priv_size;       /* zeroed private state allocated with the backend */
    /* Optional. Read the backend's settings. */
    int (*init)(void *priv, ss_errbuf *eb);
    /* Required. Hand `script` (n bytes: gnuplot commands, the data inline, no output file;
     * borrowed) to the renderer and wait for the figure it draws: *fig_out (fig_n_out bytes;
     * the caller frees it with ss_free; set only on success) is the file's content. `out`,
     * the file it is for, is only named in messages. */
    int (*render)(void *priv, const char *script, size_t n, const char *out, char **fig_out,
                  size_t *fig_n_out, ss_errbuf *eb);
    /* Optional. Release what init acquired (not priv itself). */
    void (*fini)(void *priv);
} plot_backend_ops;

/* gnuplot, as a process of its own, the script on its standard input (plot_gnuplot.c). */
extern const plot_backend_ops plot__gnuplot;

#endif
