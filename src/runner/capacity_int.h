/* Private to runner/'s capacity files: the command under way (capacity_run.c), its searches
 * in worker processes (capacity_jobs.c), and the digest of what a capacity probe's result
 * depends on (capacity_inputs.c), which capacity_run.c stores with each probe's run and
 * compares before it reuses a stored probe instead of running it again. Not for other
 * modules. */
#ifndef SS_RUNNER_CAPACITY_INT_H
#define SS_RUNNER_CAPACITY_INT_H

#include "runner/bundle.h"
#include "runner/capacity.h"
#include "scenario/scenario.h"

#include <stddef.h>
#include <stdint.h>

#define RUNNER__INPUT_FILES (2 * SS_MAX_TENANTS + 2) /* files and folders a command's probes
                                                         name, each read once */

/* The inputs every probe of one command shares, and the files its probes named so far. */
typedef struct runner__inputs {
    int ok;                    /* the shared part was read; 0: no digest, so nothing reused */
    uint64_t base;             /* FNV-1a 64 of the code that runs and the catalog's files */
    int n_files;
    struct {
        char *path;            /* owned */
        uint64_t h;            /* FNV-1a 64 of its bytes (a folder's: its files', by name) */
        int ok;                /* 0: it could not be read */
    } file[RUNNER__INPUT_FILES];
} runner__inputs;

#define RUNNER__SEARCH_NOTE 300 /* what a searching bundle chose at a probe, at most */

/* One capacity command under way. */
typedef struct capacity {
    const runner_capacity_opts *o;
    char label[RUNNER_CAPACITY_MAX_POLICIES][RUNNER_LABEL_MAX]; /* of each bundle */
    char name[300];            /* the sweep's name */
    int i_tenant;              /* judged tenant's index (-1: every tenant) */
    char tenants[SS_MAX_TENANTS][SCN_NAME_MAX]; /* the scenario's tenants, in its order */
    uint32_t n_tenants;
    int p;                     /* the bundle being searched */
    int k;                     /* the seed it is searched at: seed[k] */
    int n_seeds;               /* 1 to RUNNER_CAPACITY_MAX_SEEDS */
    uint64_t seed[RUNNER_CAPACITY_MAX_SEEDS]; /* run.seed, run.seed + 1, ... */
    store *st;                 /* where new probes are stored (NULL: nowhere): the command's
                                  database, or a worker's own */
    store *st_read;            /* where stored probes are looked up (NULL: nowhere): st, or in
                                  a worker the command's database opened for reading */
    int worker;                /* this process is a worker of a parallel command */
    int redo;                  /* a worker met a probe stored from other inputs, whose new run
                                  must replace its point: the command redoes the search itself */
    runner_capacity_result *res; /* bundle p at seed k: res[p * n_seeds + k] (owned) */
    char search[RUNNER_CAPACITY_MAX_PROBES][RUNNER__SEARCH_NOTE]; /* what a searching bundle
                                  chose at each probe of the bundle being searched */
    char (*best_search)[RUNNER__SEARCH_NOTE]; /* ... at each search's capacity, indexed as res
                                                 (owned) */
    runner__inputs inputs;     /* what the probes' results depend on (with a database) */
    int n_reused;              /* probes read from the database instead of run */
    int n_rerun;               /* probes the database had that were run again (other inputs,
                                  no digest, a searching bundle's) */
    double t0;                 /* wall clock as the searches began, for the progress lines
                                  only */
} capacity;

/* Search i (bundle i / n_seeds at seed i % n_seeds) has ended with result r, the done-th to:
 * its line under RUNNER_PROGRESS_SEARCHES. */
void runner__capacity_search_done(const capacity *c, int i, int done,
                                  const runner_capacity_result *r);
/* Search bundle c->p at seed c->seed[c->k] into c->res (and what a searching bundle chose at
 * its capacity into c->best_search). 0, or the first probe's error with eb set (the probes
 * before it stored). */
int runner__capacity_search_one(capacity *c, ss_errbuf *eb);

/* Every search of c (o->n_policies bundles x c->n_seeds seeds) in up to `jobs` worker
 * processes at once, each a fork of this one writing its probes to a database of its own;
 * then, in the order the searches run one after the other, each one's stderr is copied to
 * this process's, its database merged into c->st and its results into c: the table, JSON,
 * stderr and database are those of the searches run one after the other. A search that met a
 * probe stored from other inputs is run again here, in its turn. 0, or the first search's
 * error (in that order) with eb set, as one after the other. */
int runner__capacity_parallel(capacity *c, int jobs, ss_errbuf *eb);

/* Read what every probe shares: the code that runs (each executable file mapped into this
 * process, by name: slicesim and the libraries it loaded) and every file of the catalog
 * directory (catalog_default_dir(profiles); borrowed). Sets in->ok to 0 when any of it cannot
 * be read (then no probe gets a digest). */
void runner__inputs_init(runner__inputs *in, const char *profiles);
/* Free what in holds (the names of the files read). */
void runner__inputs_fini(runner__inputs *in);

/* The digest of a probe of bundle spec (borrowed) on scenario sc (its load applied): in's
 * shared part, the bundle, sc in canonical form (every key: seed, window, SLAs, loads, engines
 * and models by name, paths), and the bytes of the files it names (each tenant's trace, the
 * ServeGen folder), into out ("fnv1a64:" and 16 hex digits). 1, or 0 with out "" when some
 * input cannot be read (a trace on standard input, a file gone): such a probe is never
 * reused. */
int runner__inputs_probe(runner__inputs *in, const scn_scenario *sc, const char *spec,
                         char *out, size_t n);

#endif
