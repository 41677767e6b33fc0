/* The files one command reads and writes, by role, so that an output never overwrites one of
 * the command's inputs or another of its outputs (compared as files: device and inode, not
 * as strings). Not for opening them. */
#include "app/cli.h"

#include "core/ss_alloc.h"
#include "core/ss_err.h"
#include "core/ss_file.h"
#include "scenario/scenario.h"

#include <stdio.h>
#include <string.h>

struct cli_file {
    char role[96];  /* how the user named it: "--timeline", "the results database (--db)" */
    char *path;     /* owned: as given */
    int output;
    ss_file_id id;
};

void cli_files_fini(cli_files *fs)
{
    for (size_t i = 0; i < fs->n; i++)
        ss_free(fs->v[i].path);
    ss_free(fs->v);
    memset(fs, 0, sizeof *fs);
}

int cli_files_add(cli_files *fs, const char *role, const char *path, int output, ss_errbuf *eb)
{
    if (!path || !*path || !strcmp(path, "-"))
        return SS_OK; /* standard input or output, or none */
    if (ss_grow((void **)&fs->v, &fs->cap, fs->n + 1, sizeof *fs->v))
        return ss_err(eb, SS_ENOMEM, "out of memory");
    struct cli_file *f = &fs->v[fs->n];
    memset(f, 0, sizeof *f);
    if (!(f->path = ss_strdup(path)))
        return ss_err(eb, SS_ENOMEM, "out of memory");
    snprintf(f->role, sizeof f->role, "%s", role);
    f->output = output;
    ss_file_id_of(&f->id, path);
    for (size_t i = 0; i < fs->n; i++) {
        const struct cli_file *g = &fs->v[i];
        if (!(output || g->output) || !ss_file_id_same(&f->id, &g->id))
            continue;
        /* name the output first: it is what would be written */
        const struct cli_file *out = output ? f : g, *other = output ? g : f;
        int rc = ss_err(eb, SS_EINVAL, "%s %s is the same file as %s %s: refusing to %s",
                        out->role, out->path, other->role, other->path,
                        other->output ? "write both to it" : "overwrite an input");
        ss_free(f->path);
        return rc;
    }
    fs->n++;
    return SS_OK;
}

int cli_scenario_files(cli_files *fs, const scn_scenario *sc, const char *db, ss_errbuf *eb)
{
    int rc = cli_files_add(fs, "the scenario file", sc->path, 0, eb);
    char role[SCN_NAME_MAX + 32];
    for (uint32_t i = 0; !rc && i < sc->n_tenants; i++) {
        snprintf(role, sizeof role, "tenant %s's trace", sc->tenants[i].name);
        rc = cli_files_add(fs, role, sc->tenants[i].trace, 0, eb);
    }
    if (!db)
        db = sc->db;
    if (!rc && strcmp(db, "none"))
        rc = cli_files_add(fs, "the results database", db, 1, eb);
    return rc;
}
