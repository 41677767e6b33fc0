/* Private to app/: the sweep experiment file (EXPERIMENT.ini: [sweep], [set], [grid]) read into
 * a plain struct, so that `slicesim sweep` and the fuzz target parse it the same way. Not for
 * running points (cmd_sweep.c builds each point's scenario and runs it). */
#ifndef SS_APP_SWEEP_EXP_H
#define SS_APP_SWEEP_EXP_H

#include "core/ss_err.h"
#include "scenario/scenario.h"

#include <stddef.h>

#define SWEEP_MAX_KEYS 16   /* [grid] keys */
#define SWEEP_MAX_VALUES 64 /* values of one grid key */
#define SWEEP_MAX_SETS 64   /* [set] assignments */
#define SWEEP_KEY_MAX 160   /* bytes of a grid key or sweep name, NUL included */

/* One [grid] key and its values. */
typedef struct sweep_grid_key {
    char name[SWEEP_KEY_MAX];
    char *text;                       /* owned copy of the value list, split in place */
    char *values[SWEEP_MAX_VALUES];   /* pointers into text, trailing blanks trimmed */
    int n;                            /* values, >= 1 */
    unsigned line;                    /* line of the key in the file */
} sweep_grid_key;

/* A parsed experiment file. Zero-initialise before sweep_exp_load. */
typedef struct sweep_exp {
    const char *path;                 /* the file (borrowed from the caller) */
    char dir[SCN_PATH_MAX];           /* folder of the file, for the scenario path */
    char name[SWEEP_KEY_MAX];         /* sweep.name, default the file's base name */
    char scenario[SCN_PATH_MAX];      /* sweep.scenario, made relative to the current directory */
    char db[SCN_PATH_MAX];            /* sweep.db, default results/NAME.db */
    char *set[SWEEP_MAX_SETS];        /* owned "SECTION.KEY=VALUE" */
    unsigned set_line[SWEEP_MAX_SETS];
    int n_sets;
    sweep_grid_key keys[SWEEP_MAX_KEYS];
    int n_keys;
    size_t n_points;                  /* product of the keys' value counts */
    char section[16];                 /* current section while parsing */
} sweep_exp;

/* Read the experiment at path (borrowed; must outlive x) into the zeroed *x: keys, defaults,
 * the scenario path made relative to the file's folder, policy bundle labels checked. The
 * scenario itself is not read. 0, or SS_EPARSE (an unreadable file included: bad input) /
 * SS_ENOMEM with "PATH:LINE: section.key: what is wrong" in eb. Whether it fails or not, x
 * may own memory: release it with sweep_exp_free. */
int sweep_exp_load(sweep_exp *x, const char *path, ss_errbuf *eb);
/* Free what x owns (not x itself). */
void sweep_exp_free(sweep_exp *x);

#endif
