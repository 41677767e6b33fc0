/* runner/: sweeps. The experiment file (EXPERIMENT.ini: [sweep], [set], [grid]) read into a
 * plain struct, so that `slicesim sweep` and the fuzz target parse it the same way
 * (sweep_exp.c); and running its grid point by point into one results database (sweep.c):
 * points already there are skipped, so an interrupted sweep resumes; points run in parallel
 * processes, one slice of the grid per shard or per MPI rank. Not for reading options or
 * starting MPI (app/cmd_sweep.c). */
#ifndef SS_RUNNER_SWEEP_H
#define SS_RUNNER_SWEEP_H

#include "runner/run.h"

#include "core/ss_err.h"
#include "scenario/scenario.h"

#include <stddef.h>
#include <stdio.h>

#define RUNNER_SWEEP_MAX_KEYS 16   /* [grid] keys */
#define RUNNER_SWEEP_MAX_VALUES 64 /* values of one grid key */
#define RUNNER_SWEEP_MAX_SETS 64   /* [set] assignments */
#define RUNNER_SWEEP_KEY_MAX 160   /* bytes of a grid key or sweep name, NUL included */

/* One [grid] key and its values. */
typedef struct runner_sweep_key {
    char name[RUNNER_SWEEP_KEY_MAX];
    char *text;                            /* owned copy of the value list, split in place */
    char *values[RUNNER_SWEEP_MAX_VALUES]; /* pointers into text, trailing blanks trimmed */
    int n;                                 /* values, >= 1 */
    unsigned line;                         /* line of the key in the file */
} runner_sweep_key;

/* A parsed experiment file. Zero-initialise before runner_sweep_exp_load. */
typedef struct runner_sweep_exp {
    const char *path;                 /* the file (borrowed from the caller) */
    char dir[SCN_PATH_MAX];           /* folder of the file, for the scenario path */
    char name[RUNNER_SWEEP_KEY_MAX];  /* sweep.name, default the file's base name */
    char scenario[SCN_PATH_MAX];      /* sweep.scenario, made relative to the current directory */
    char db[SCN_PATH_MAX];            /* sweep.db, default results/NAME.db */
    char *set[RUNNER_SWEEP_MAX_SETS]; /* owned "SECTION.KEY=VALUE" */
    unsigned set_line[RUNNER_SWEEP_MAX_SETS];
    int n_sets;
    runner_sweep_key keys[RUNNER_SWEEP_MAX_KEYS];
    int n_keys;
    size_t n_points;                  /* product of the keys' value counts */
    char section[16];                 /* current section while parsing */
} runner_sweep_exp;

/* Read the experiment at path (borrowed; must outlive x) into the zeroed *x: keys, defaults,
 * the scenario path made relative to the file's folder, policy bundle labels checked. The
 * scenario itself is not read. 0, or SS_EPARSE (an unreadable file included: bad input) /
 * SS_ENOMEM with "PATH:LINE: section.key: what is wrong" in eb. Whether it fails or not, x
 * may own memory: release it with runner_sweep_exp_free. */
int runner_sweep_exp_load(runner_sweep_exp *x, const char *path, ss_errbuf *eb);
/* Free what x owns (not x itself). */
void runner_sweep_exp_free(runner_sweep_exp *x);

#define RUNNER_SWEEP_MAX_JOBS 64 /* worker processes of one sweep */

/* How a loaded experiment is run. */
typedef struct runner_sweep_opts {
    const char *db;           /* results database (NULL: the experiment's sweep.db) */
    const char *profiles;     /* catalog directory (NULL: catalog_default_dir) */
    const char *command;      /* the command line, for the runs table (NULL: "") */
    int jobs;                 /* points at once, each worker a process writing DB.jobJ, merged
                                 at the end (1: one after the other in this process; at most
                                 RUNNER_SWEEP_MAX_JOBS) */
    int shard_k, shard_n;     /* run only points i with i % shard_n = shard_k - 1 (1, 1: all) */
    int mpi;                  /* launched by mpirun: rank mpi_rank (from 0) of mpi_size runs
                                 shard mpi_rank + 1 / mpi_size into DB.rankR (R = mpi_rank + 1),
                                 and only rank 0 writes the report; with shard_n > 1 an error */
    int mpi_rank;
    int mpi_size;             /* ranks the launcher gave (1: none); over 1, rank 0 says how to
                                 merge the ranks' databases */
    int json;                 /* the report as a JSON array instead of the table */
    int progress;             /* a line per point on a terminal, and the run's progress line */
    store_keep keep;          /* what the database keeps of each point's run (--store) */
    int dry_run;              /* list the points and whether they are done; run nothing */
    runner_files_fn *check_files; /* called with the first point's scenario and the database
                                     once that point passed its check (NULL: none) */
    void *check_files_ud;
} runner_sweep_opts;

/**
 * Run the points of x (loaded by runner_sweep_exp_load; borrowed) that o's shard takes and the
 * database does not have yet, then write the report of the shard's points to out (the table,
 * or with o->json a JSON array of the stored results). Every point is checked (scenario,
 * models, cluster, policy parameters, arrivals) before anything runs. Lines on what is done
 * and to do go to stderr.
 * @return 0, or an SS_E* code with eb set ("KEY=V;...: ..." when a point failed); the runs
 *         that finished stay in the database
 */
int runner_sweep(const runner_sweep_exp *x, const runner_sweep_opts *o, FILE *out,
                 ss_errbuf *eb);

#endif
