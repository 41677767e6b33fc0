/* runner/: capacity at SLA, as `slicesim capacity` finds it: for each policy bundle the highest
 * load multiplier whose replay keeps SLA violations within a bound, searched by bracketing
 * (double up or halve down from load 1) and bisection, each probe a full replay stored like
 * compare's runs. The search itself (runner_capacity_search) takes a probe callback, so it runs
 * on any function of the load. Not for reading options (app/cmd_capacity.c). */
#ifndef SS_RUNNER_CAPACITY_H
#define SS_RUNNER_CAPACITY_H

#include "runner/run.h"

#include <stddef.h>
#include <stdio.h>

#define RUNNER_CAPACITY_MAX_PROBES 64     /* most probes of one search */
#define RUNNER_CAPACITY_MAX_POLICIES 16   /* bundles of one capacity command */
#define RUNNER_CAPACITY_MAX_SEEDS 32      /* seeds of one capacity command */

/* What one probe found at one load. */
typedef struct runner_capacity_probe {
    double load;               /* load multiplier of every tenant's rate_scale */
    double sla_miss;           /* the miss the bound judges (0 to 1): the criterion's */
    double goodput_tok_per_s;  /* output tokens of SLA-meeting requests / window (the judged
                                  tenant's under RUNNER_CRIT_TENANT, else every tenant's) */
    double pooled_miss;        /* SLA violations / requests of every tenant (replays only) */
    double tenant_miss[SS_MAX_TENANTS]; /* each tenant's SLA violations / its requests, in the
                                  scenario's order (replays only) */
    int spans;                 /* every tenant's traffic spanned the window (1) or not (0) */
    int pass;                  /* set by the search: spans and sla_miss <= the bound */
    int candidates;            /* a searching bundle's candidate replays before the probe's
                                  run (0: none, or not a searching bundle) */
    int full;                  /* set by the search before the probe: its figures are wanted
                                  even if it fails (it would be the row of a search that fails
                                  at every load: the last load it may try), so it must not
                                  stop early */
    int stopped;               /* the probe stopped as soon as it was certain to fail (its
                                  misses so far exceeded the bound): its misses are lower
                                  bounds, its goodput is not measured (0) */
    double stopped_s;          /* the simulated time it stopped at, s (when stopped) */
} runner_capacity_probe;

/* Probe load: fill out's sla_miss, goodput_tok_per_s and spans (load and full are set
 * already); a probe that is not full may stop once it is certain to fail, with its misses so
 * far (lower bounds above the bound) and stopped set. 0, or an SS_E* code with eb set, which
 * stops the search. */
typedef int runner_capacity_probe_fn(void *ud, runner_capacity_probe *out, ss_errbuf *eb);

typedef struct runner_capacity_search_opts {
    double sla_miss;           /* bound on a probe's sla_miss, 0 to 1 */
    double tol;                /* stop when (hi - lo) <= tol x lo; > 0 */
    int max_probes;            /* 1 to RUNNER_CAPACITY_MAX_PROBES */
    double min_load, max_load; /* bracketing stops there (0 < min_load <= 1 <= max_load) */
} runner_capacity_search_opts;

/* Where the search ended. */
typedef enum runner_capacity_status {
    RUNNER_CAP_FOUND,          /* lo passed, hi failed; converged says whether within tol */
    RUNNER_CAP_BELOW,          /* no load passed: it fails already at the lowest tried */
    RUNNER_CAP_ABOVE,          /* every load passed, up to the highest tried */
} runner_capacity_status;

typedef struct runner_capacity_result {
    runner_capacity_status status;
    double capacity;           /* the highest passing load of the bracket (0 when BELOW) */
    double lo, hi;             /* the bracket: lo passed (0: none), hi failed (0: none) */
    int converged;             /* FOUND and hi - lo <= tol x lo */
    int censored;              /* FOUND, and the probe at hi met the bound but failed only
                                  because a tenant's traffic ended before the window's (a
                                  trace ran out): the capacity is a lower bound */
    int i_best;                /* index into probe of the probe at capacity (-1: none) */
    int n_probes;
    runner_capacity_probe probe[RUNNER_CAPACITY_MAX_PROBES]; /* in the order run */
} runner_capacity_result;

/**
 * Search for the highest load that passes: probe load 1; when it passes double the load until
 * one fails (or max_load), when it fails halve it until one passes (or min_load); then bisect
 * the bracket until it is within tol or max_probes were run. A function that is not monotone
 * still ends, with a load that passed and a failing one above it. fn and ud are borrowed.
 * @return 0 with *out filled, SS_EINVAL for options out of range, or fn's error (out then
 *         holds the probes run before it).
 */
int runner_capacity_search(const runner_capacity_search_opts *s, runner_capacity_probe_fn *fn,
                           void *ud, runner_capacity_result *out, ss_errbuf *eb);

/* The name of a status for output: "found", "below", "above". */
const char *runner_capacity_status_name(runner_capacity_status st);

/* What `capacity` says on stderr as it goes (runner_capacity_opts.progress). */
enum { RUNNER_PROGRESS_NONE = 0, RUNNER_PROGRESS_PROBES = 1, RUNNER_PROGRESS_SEARCHES = 2 };

typedef struct runner_capacity_opts {
    const char *config;        /* the scenario file (required) */
    const char *profiles;      /* catalog directory (NULL: catalog_default_dir) */
    const char *db;            /* results database (NULL: the scenario's own; "none": none) */
    const char *name;          /* sweep name (NULL: "capacity:" and the file's base name) */
    const char *command;       /* the command line, for the runs table */
    char *const *policy;       /* n_policies bundle specs (runner/bundle.h); the first is the
                                  reference of the ratios */
    int n_policies;            /* 1 to RUNNER_CAPACITY_MAX_POLICIES */
    const char *const *sets;   /* SECTION.KEY=VALUE applied to every run after the file */
    size_t n_sets;
    runner_criterion criterion; /* what the bound judges: the worst tenant's miss (the
                                  default), all requests pooled, or `tenant`'s */
    const char *tenant;        /* the tenant judged under RUNNER_CRIT_TENANT (else NULL) */
    runner_capacity_search_opts search;
    int n_seeds;               /* searches per bundle, one per seed: the scenario's run.seed,
                                  run.seed + 1, ... (0 or 1: one, at run.seed; at most
                                  RUNNER_CAPACITY_MAX_SEEDS) */
    int json;                  /* one JSON object instead of the table */
    int progress;              /* on stderr: RUNNER_PROGRESS_PROBES a line per probe,
                                  RUNNER_PROGRESS_SEARCHES a line per search as it ends ("k of
                                  N searches done"), 0 none */
    int search_replays;        /* an allocation search's candidate replays at most (0: the
                                  default, RUNNER_STATIC_BEST_REPLAYS) */
    store_keep keep;           /* what the database keeps of each probe's run (--store) */
    int full_probes;           /* run every probe and every search candidate to its end (0:
                                  stop each as soon as its verdict is certain) */
    int jobs;                  /* searches (bundles x seeds) at once, each in a process of its
                                  own (0 or 1: one after the other, in this one) */
    runner_files_fn *check_files; /* called with the load-1 scenario and the database once
                                     every bundle passed its check (NULL: none) */
    void *check_files_ud;
} runner_capacity_opts;

/**
 * Find every bundle's capacity (runner_capacity_search, each probe a replay of the scenario
 * with its loads scaled by runner_scale_load, stored as the point policy=LABEL;rate=LOAD of
 * one sweep, policy=LABEL;rate=LOAD;run.seed=SEED with several seeds) under o->criterion, once
 * per seed, and write the table (with each tenant's miss at each capacity; with several
 * seeds the mean over seeds with its 95 % Student-t interval, and each ratio to the first
 * bundle paired by seed with its interval and verdict), or with o->json one object, to out.
 * A probe in which a
 * tenant's arrivals end more than 2 % of the window before the window's end does not span
 * the window and counts as a failure. All strings are borrowed.
 * @return 0, or an SS_E* code with eb set: SS_EPARSE for a bad bundle or an unknown tenant,
 *         before anything runs or is stored; a failed run's error, after the probes before it
 *         were stored.
 */
int runner_capacity(const runner_capacity_opts *o, FILE *out, ss_errbuf *eb);

#endif
