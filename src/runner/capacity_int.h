/* Private to runner/'s capacity files: the digest of what a capacity probe's result depends on
 * (capacity_inputs.c), which capacity_run.c stores with each probe's run and compares before it
 * reuses a stored probe instead of running it again. Not for other modules. */
#ifndef SS_RUNNER_CAPACITY_INT_H
#define SS_RUNNER_CAPACITY_INT_H

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
