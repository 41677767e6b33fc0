/* runner/: one scenario under several policy bundles and loads, as `slicesim compare` runs it:
 * every point (bundle x load) is checked before the first one runs, each run is stored as a
 * point of one sweep (policy=LABEL;rate=R) in one results database, and the results are
 * written as a table with ratios against the first bundle, or as a JSON array. Not for
 * reading options (app/cmd_compare.c). */
#ifndef SS_RUNNER_COMPARE_H
#define SS_RUNNER_COMPARE_H

#include "runner/run.h"

#include <stddef.h>
#include <stdio.h>

#define RUNNER_COMPARE_MAX_POLICIES 16 /* bundles of one comparison */
#define RUNNER_COMPARE_MAX_RATES 32    /* loads of one comparison */
#define RUNNER_COMPARE_MAX_SEEDS 32    /* seeds of one comparison */

typedef struct runner_compare_opts {
    const char *config;        /* the scenario file (required) */
    const char *profiles;      /* catalog directory (NULL: catalog_default_dir) */
    const char *db;            /* results database for every run (NULL: the scenario's own;
                                  "none": no store) */
    const char *name;          /* sweep name of the runs (NULL: "compare:" and the scenario
                                  file's base name) */
    const char *command;       /* the command line, for the runs table */
    char *const *policy;       /* n_policies bundle specs (runner/bundle.h), each with a label
                                  of its own; the first is the reference of the ratios */
    int n_policies;            /* 1 to RUNNER_COMPARE_MAX_POLICIES */
    const double *rate;        /* n_rates load multipliers of every tenant's rate_scale */
    int n_rates;               /* 1 to RUNNER_COMPARE_MAX_RATES */
    const char *const *sets;   /* SECTION.KEY=VALUE applied to every run after the file */
    size_t n_sets;
    int n_seeds;               /* runs per point, one per seed: run.seed, run.seed + 1, ...
                                  (0 or 1: one, at run.seed; at most RUNNER_COMPARE_MAX_SEEDS) */
    int json;                  /* a JSON array instead of the table */
    int progress;              /* a line per run and the run's progress line on a terminal */
    store_keep keep;           /* what the database keeps of each run (--store) */
    int search_replays;        /* an allocation search's candidate replays at most (0: the
                                  default, RUNNER_STATIC_BEST_REPLAYS) */
    runner_files_fn *check_files; /* called with the first point's scenario and the database
                                     once every point passed its check (NULL: none) */
    void *check_files_ud;
} runner_compare_opts;

/**
 * Run every point of o (bundles vary fastest; with several seeds, each point at every seed,
 * stored as policy=LABEL;rate=R;run.seed=SEED, as a sweep names its seeds) and write the results to out: the table and a
 * "results:" line, or with o->json the JSON array, one object per run as it finishes. With
 * several seeds the table gives per point the mean over seeds with its 95 % Student-t
 * interval and the goodput ratio to the first bundle paired by seed with its interval and
 * verdict, and the JSON is an object: "runs" (the array, each run with its seed) and
 * "summary" (those figures per point). A line
 * per run goes to stderr on a terminal (o->progress). All strings are borrowed.
 * @return 0, or an SS_E* code with eb set ("policy=LABEL;rate=R: ..." when a point failed its
 *         check or its run). Nothing is stored when a point fails its check; the runs that
 *         finished before a failing one stay in the database.
 */
int runner_compare(const runner_compare_opts *o, FILE *out, ss_errbuf *eb);

#endif
