/* What a capacity probe's result depends on, as one digest (FNV-1a 64): the code that runs
 * (every executable file mapped into this process: slicesim and its libraries, the maths
 * library's rounding included), the catalog directory's files (models, GPUs, engines, cost
 * tables), and per probe the bundle, the scenario in canonical form (every key, defaults
 * filled in: seed, window, SLAs, the load's scaling, engines and models by name, paths) and
 * the bytes of the files it names (traces, the ServeGen folder). A run is deterministic, so a
 * probe stored with the same digest is what running it again would give. Anything that cannot
 * be read gives no digest, and then nothing is reused. Not for running or storing anything. */
#include "runner/capacity_int.h"

#include "catalog/catalog.h"
#include "core/ss_alloc.h"
#include "core/ss_hash.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_DEPTH 16 /* folders below a hashed one (symbolic links can loop) */

/* A string with its terminating NUL, so that "ab" + "c" and "a" + "bc" differ. */
static uint64_t fnv_str(uint64_t h, const char *s) { return ss_fnv1a(h, s, strlen(s) + 1); }

/* The bytes of the regular file at path, their count first: 0, or -1 when it cannot be read. */
static int hash_file(uint64_t *h, const char *path, uint64_t size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    *h = ss_fnv1a(*h, &size, sizeof size);
    unsigned char buf[16384];
    uint64_t n_read = 0;
    for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) {
        *h = ss_fnv1a(*h, buf, n);
        n_read += n;
    }
    int rc = ferror(f) || n_read != size ? -1 : 0;
    fclose(f);
    return rc;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int hash_path(uint64_t *h, const char *path, int depth);

/* Append a copy of s to the list names (n of cap): 0 or -1 when out of memory. */
static int push_name(char ***names, size_t *n, size_t *cap, const char *s)
{
    if (ss_grow((void **)names, cap, *n + 1, sizeof **names) || !((*names)[*n] = ss_strdup(s)))
        return -1;
    (*n)++;
    return 0;
}

/* A folder's entries by name, each name and then its contents: 0 or -1. */
static int hash_dir(uint64_t *h, const char *path, int depth)
{
    DIR *d = depth < MAX_DEPTH ? opendir(path) : NULL;
    if (!d)
        return -1;
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (struct dirent *e; !rc && (e = readdir(d));) {
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            rc = push_name(&names, &n, &cap, e->d_name);
    }
    closedir(d);
    if (!rc)
        qsort(names, n, sizeof *names, cmp_name);
    for (size_t i = 0; !rc && i < n; i++) {
        size_t len = strlen(path) + strlen(names[i]) + 2;
        char *sub = ss_malloc(len);
        if (!sub) {
            rc = -1;
            break;
        }
        snprintf(sub, len, "%s/%s", path, names[i]);
        *h = fnv_str(*h, names[i]);
        rc = hash_path(h, sub, depth + 1);
        ss_free(sub);
    }
    for (size_t i = 0; i < n; i++)
        ss_free(names[i]);
    ss_free(names);
    return rc;
}

/* A file's bytes or a folder's files (symbolic links followed): 0, or -1 when any cannot be
 * read or is neither (a FIFO, a device: reading it twice need not give the same bytes). */
static int hash_path(uint64_t *h, const char *path, int depth)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    if (S_ISDIR(st.st_mode)) {
        *h = fnv_str(*h, "/");
        return hash_dir(h, path, depth);
    }
    return S_ISREG(st.st_mode) ? hash_file(h, path, (uint64_t)st.st_size) : -1;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The digests of the n files at paths, in ascending order (so that neither where each is
 * mapped nor where it is installed matters), into *h: 0 or -1. */
static int hash_files_unordered(uint64_t *h, char *const *paths, size_t n)
{
    uint64_t *each = n ? ss_malloc(n * sizeof *each) : NULL;
    int rc = n && !each ? -1 : 0;
    for (size_t i = 0; !rc && i < n; i++) {
        each[i] = SS_FNV1A_OFFSET;
        rc = hash_path(&each[i], paths[i], MAX_DEPTH);
    }
    if (!rc) {
        qsort(each, n, sizeof *each, cmp_u64);
        *h = ss_fnv1a(*h, each, n * sizeof *each);
    }
    ss_free(each);
    return rc;
}

/* The bytes of the executable files mapped into this process (/proc/self/maps): slicesim and
 * the libraries it loaded, whatever their names: 0 or -1. A mapped file deleted since is not
 * what runs, and cannot be read: -1. */
static int hash_code(uint64_t *h)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return -1;
    char **paths = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    char line[4096 + 256];
    while (!rc && fgets(line, sizeof line, f)) {
        char perms[8] = "";
        int at = 0;
        line[strcspn(line, "\n")] = '\0';
        /* ADDR PERMS OFFSET DEV INODE PATH */
        if (sscanf(line, "%*s %7s %*s %*s %*s %n", perms, &at) < 1 || !at || perms[2] != 'x' ||
            line[at] != '/')
            continue;
        const char *path = line + at;
        if (strstr(path, " (deleted)")) {
            rc = -1;
            break;
        }
        int seen = 0;
        for (size_t i = 0; i < n && !seen; i++)
            seen = !strcmp(paths[i], path);
        if (!seen)
            rc = push_name(&paths, &n, &cap, path);
    }
    fclose(f);
    if (!rc && !n)
        rc = -1; /* no code found: not the maps file this expects */
    if (!rc)
        rc = hash_files_unordered(h, paths, n);
    for (size_t i = 0; i < n; i++)
        ss_free(paths[i]);
    ss_free(paths);
    return rc;
}

void runner__inputs_init(runner__inputs *in, const char *profiles)
{
    *in = (runner__inputs){0};
    uint64_t h = fnv_str(SS_FNV1A_OFFSET, "slicesim capacity probe inputs 1");
    int rc = hash_code(&h);
    if (!rc) {
        h = fnv_str(h, "catalog");
        rc = hash_path(&h, catalog_default_dir(profiles), 0);
    }
    in->ok = !rc;
    in->base = h;
}

void runner__inputs_fini(runner__inputs *in)
{
    for (int i = 0; i < in->n_files; i++)
        ss_free(in->file[i].path);
    in->n_files = 0;
}

/* The digest of the file or folder at path, read once per command: 0, or -1 when it cannot
 * be read. */
static int named_file(runner__inputs *in, const char *path, uint64_t *h_out)
{
    for (int i = 0; i < in->n_files; i++)
        if (!strcmp(in->file[i].path, path)) {
            *h_out = in->file[i].h;
            return in->file[i].ok ? 0 : -1;
        }
    uint64_t h = SS_FNV1A_OFFSET;
    int rc = hash_path(&h, path, 0);
    char *copy = in->n_files < RUNNER__INPUT_FILES ? ss_strdup(path) : NULL;
    if (copy) {
        in->file[in->n_files].path = copy;
        in->file[in->n_files].h = h;
        in->file[in->n_files].ok = !rc;
        in->n_files++;
    }
    *h_out = h;
    return rc;
}

/* sc in canonical form (scn_write), hashed line by line, but for [run]'s db: where results are
 * stored changes none of them (a probe merged into another database is the same probe): 0 or
 * -1. */
static int hash_scenario(uint64_t *h, const scn_scenario *sc)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return -1;
    int rc = scn_write(sc, f);
    if (fclose(f) != 0)
        rc = -1;
    int in_run = 0;
    for (char *line = text, *next; !rc && line && *line; line = next) {
        next = strchr(line, '\n');
        size_t n = next ? (size_t)(++next - line) : strlen(line);
        if (line[0] == '[')
            in_run = !strncmp(line, "[run]\n", 6);
        if (!(in_run && !strncmp(line, "db = ", 5)))
            *h = ss_fnv1a(*h, line, n);
    }
    free(text);
    return rc ? -1 : 0;
}

int runner__inputs_probe(runner__inputs *in, const scn_scenario *sc, const char *spec,
                         char *out, size_t n)
{
    if (n)
        out[0] = '\0';
    uint64_t h = fnv_str(in->base, spec);
    int rc = in->ok ? hash_scenario(&h, sc) : -1;
    int servegen = 0;
    for (uint32_t i = 0; !rc && i < sc->n_tenants; i++) {
        const scn_tenant *t = &sc->tenants[i];
        servegen |= t->servegen[0] != '\0';
        uint64_t fh;
        if (!t->trace[0])
            continue;
        /* standard input is read once: there is nothing to compare it with */
        rc = strcmp(t->trace, "-") ? named_file(in, t->trace, &fh) : -1;
        h = ss_fnv1a(h, &fh, sizeof fh);
    }
    if (!rc && servegen) {
        uint64_t fh;
        rc = named_file(in, sc->servegen_dir, &fh);
        h = ss_fnv1a(h, &fh, sizeof fh);
    }
    if (rc)
        return 0;
    snprintf(out, n, "fnv1a64:%016llx", (unsigned long long)h);
    return 1;
}
