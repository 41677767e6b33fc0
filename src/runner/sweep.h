/* runner/: the sweep experiment file (EXPERIMENT.ini: [sweep], [set], [grid]) read into a
 * plain struct, so that `slicesim sweep` and the fuzz target parse it the same way. Not for
 * running points (cmd_sweep.c builds each point's scenario and runs it). */
#ifndef SS_RUNNER_SWEEP_H
#define SS_RUNNER_SWEEP_H

#include "core/ss_err.h"
#include "scenario/scenario.h"

#include <stddef.h>

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

#endif
