/* The catalog: loads every profile under profiles/hardware and profiles/models into two
 * arrays sorted by name (deterministic iteration, binary-search lookup), and locates the
 * profiles directory. Not for the file format itself (catalog_ini.c) or the key tables
 * (hw_catalog.c, model_catalog.c). */
#include "catalog/catalog.h"

#include "core/ss_alloc.h"
#include "core/ss_log.h"
#include "catalog/catalog_int.h"
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A growable array of cat_gpu or cat_model. Both structs start with their name, which lets
 * one set of functions sort, search and free them. */
typedef struct cat_table {
    void *items;  /* owned */
    size_t n;     /* items in use */
    size_t cap;   /* capacity, items */
} cat_table;

/* What differs between the two kinds of profile. */
typedef struct cat_kind {
    const char *subdir;  /* under the profiles directory */
    const char *what;    /* "GPU" or "model", for messages */
    const char *section; /* for the duplicate-name message */
    size_t elem;         /* sizeof the struct */
    size_t path_off;     /* offsetof its path field */
    int (*read)(void *dst, const char *path, unsigned *name_line, ss_errbuf *eb);
} cat_kind;

_Static_assert(offsetof(cat_gpu, name) == 0, "cat_gpu must start with its name");
_Static_assert(offsetof(cat_model, name) == 0, "cat_model must start with its name");
_Static_assert(offsetof(cat_engine, name) == 0, "cat_engine must start with its name");

static const cat_kind kind_gpu = {
    .subdir = "hardware", .what = "GPU", .section = "gpu", .elem = sizeof(cat_gpu),
    .path_off = offsetof(cat_gpu, path), .read = cat__gpu_read,
};
static const cat_kind kind_model = {
    .subdir = "models", .what = "model", .section = "model", .elem = sizeof(cat_model),
    .path_off = offsetof(cat_model, path), .read = cat__model_read,
};

/* engines/ may be missing: catalogs written before engine profiles still load (they then
 * have no engine, and a run names the missing one in its error). */
static const cat_kind kind_engine = {
    .subdir = "engines", .what = "engine", .section = "engine", .elem = sizeof(cat_engine),
    .path_off = offsetof(cat_engine, path), .read = cat__engine_read,
};

struct catalog {
    cat_table gpus;    /* cat_gpu, sorted by name */
    cat_table models;  /* cat_model, sorted by name */
    cat_table engines; /* cat_engine, sorted by name */
};

/* {======================================================================
 * Tables
 * ======================================================================= */

static void *item_at(const cat_table *t, const cat_kind *k, size_t i)
{
    return (char *)t->items + i * k->elem;
}

static const char **path_of(void *item, const cat_kind *k)
{
    return (const char **)(void *)((char *)item + k->path_off);
}

static void table_free(cat_table *t, const cat_kind *k)
{
    for (size_t i = 0; i < t->n; i++)
        ss_free((void *)*path_of(item_at(t, k, i), k));
    ss_free(t->items);
    memset(t, 0, sizeof *t);
}

static int cmp_names(const void *a, const void *b) { return strcmp(a, b); }

static const void *table_find(const cat_table *t, const cat_kind *k, const char *name)
{
    if (!name || !t->n)
        return NULL;
    return bsearch(name, t->items, t->n, k->elem, cmp_names);
}

/* The names in t, "a, b, c" ("none" when empty), into known (size bytes), cut short with
 * "..." if the list is too long. */
static void known_names(const cat_table *t, const cat_kind *k, char *known, size_t size)
{
    size_t used = 0;
    snprintf(known, size, "%s", t->n ? "" : "none");
    for (size_t i = 0; i < t->n; i++) {
        const char *n = item_at(t, k, i);
        if (used + strlen(n) + 8 >= size) {
            snprintf(known + used, size - used, "%s...", used ? ", " : "");
            break;
        }
        used += (size_t)snprintf(known + used, size - used, "%s%s", used ? ", " : "", n);
    }
}

/* }====================================================================== */

/* {======================================================================
 * Directory listing
 * ======================================================================= */

typedef struct name_list {
    char **names; /* owned, each owned */
    size_t n, cap;
} name_list;

static void name_list_free(name_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        ss_free(l->names[i]);
    ss_free(l->names);
}

static int cmp_strp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int is_profile_file(const char *name)
{
    size_t n = strlen(name);
    return name[0] != '.' && n > 4 && !strcmp(name + n - 4, ".ini");
}

static int name_list_add(name_list *l, const char *name)
{
    if (ss_grow((void **)&l->names, &l->cap, l->n + 1, sizeof *l->names))
        return SS_ENOMEM;
    l->names[l->n] = ss_strdup(name);
    if (!l->names[l->n])
        return SS_ENOMEM;
    l->n++;
    return SS_OK;
}

/* The *.ini files directly in dir, sorted by name (not hidden files: editors leave those). */
static int list_ini_files(name_list *l_out, const char *dir, ss_errbuf *eb)
{
    name_list l = {0};
    DIR *d = opendir(dir);
    if (!d)
        return ss_err(eb, SS_EIO, "%s: cannot open directory: %s", dir, strerror(errno));
    int rc = SS_OK;
    struct dirent *de;
    errno = 0;
    while (!rc && (de = readdir(d)))
        if (is_profile_file(de->d_name) && name_list_add(&l, de->d_name))
            rc = ss_err(eb, SS_ENOMEM, "%s: out of memory listing the directory", dir);
    if (!rc && errno)
        rc = ss_err(eb, SS_EIO, "%s: cannot read directory: %s", dir, strerror(errno));
    closedir(d);
    if (rc) {
        name_list_free(&l);
        return rc;
    }
    if (l.n)
        qsort(l.names, l.n, sizeof *l.names, cmp_strp);
    *l_out = l;
    return SS_OK;
}

/* }====================================================================== */

/* {======================================================================
 * Loading
 * ======================================================================= */

static int check_unique(const cat_table *t, const cat_kind *k, const void *item,
                        const char *path, unsigned name_line, ss_errbuf *eb)
{
    for (size_t i = 0; i < t->n; i++) {
        const void *other = item_at(t, k, i);
        if (!strcmp(other, item))
            return ss_err(eb, SS_EPARSE, "%s:%u: %s.name: %s '%s' is already defined in %s",
                          path, name_line, k->section, k->what, (const char *)item,
                          *path_of((void *)other, k));
    }
    return SS_OK;
}

/* Read the profile at path and append it to t. On failure t is unchanged. */
static int load_file(cat_table *t, const cat_kind *k, const char *path, ss_errbuf *eb)
{
    if (ss_grow(&t->items, &t->cap, t->n + 1, k->elem))
        return ss_err(eb, SS_ENOMEM, "%s: out of memory", path);
    void *item = item_at(t, k, t->n);
    unsigned name_line = 0;
    int rc = k->read(item, path, &name_line, eb);
    if (!rc)
        rc = check_unique(t, k, item, path, name_line, eb);
    if (rc)
        return rc;
    char *own = ss_strdup(path);
    if (!own)
        return ss_err(eb, SS_ENOMEM, "%s: out of memory", path);
    *path_of(item, k) = own;
    t->n++;
    return SS_OK;
}

/* Load every profile of one kind from dir/k->subdir into t, then sort t by name. */
static int load_kind(cat_table *t, const cat_kind *k, const char *dir, ss_errbuf *eb)
{
    char *sub = ss_path_join(dir, k->subdir);
    if (!sub)
        return ss_err(eb, SS_ENOMEM, "out of memory");
    name_list files = {0};
    int rc = list_ini_files(&files, sub, eb);
    for (size_t i = 0; !rc && i < files.n; i++) {
        char *path = ss_path_join(sub, files.names[i]);
        rc = path ? load_file(t, k, path, eb) : ss_err(eb, SS_ENOMEM, "out of memory");
        ss_free(path);
    }
    name_list_free(&files);
    ss_free(sub);
    if (!rc && t->n)
        qsort(t->items, t->n, k->elem, cmp_names);
    return rc;
}

/* dir/sub exists (as anything: a file there is reported when it is listed). */
static int has_subdir(const char *dir, const char *sub)
{
    char *p = ss_path_join(dir, sub);
    struct stat st;
    int ok = p && stat(p, &st) == 0;
    ss_free(p);
    return ok || !p; /* out of memory: let load_kind report it */
}

/* A [gpu.NAME] section of an engine for a GPU the catalog lacks (a typo such as [gpu.h100])
 * would apply to no GPU without a word: warn, naming the file, the line of its first key and
 * the known GPUs. It is not an error: an engine file may carry the terms of GPUs that this
 * catalog does not hold. */
static void warn_unknown_gpus(const catalog *c)
{
    for (size_t i = 0; i < c->engines.n; i++) {
        const cat_engine *e = item_at(&c->engines, &kind_engine, i);
        for (uint32_t g = 0; g < e->n_gpus && g < CAT_ENGINE_MAX_GPUS; g++) {
            if (table_find(&c->gpus, &kind_gpu, e->per_gpu[g].gpu))
                continue;
            char known[SS_ERRBUF_LEN - 120];
            known_names(&c->gpus, &kind_gpu, known, sizeof known);
            ss_warn("%s:%u: [gpu.%s]: unknown GPU '%s' (known: %s); its host terms apply to no "
                    "GPU", e->path, e->per_gpu[g].line, e->per_gpu[g].gpu, e->per_gpu[g].gpu,
                    known);
        }
    }
}

int catalog_load(catalog **c_out, const char *dir, ss_errbuf *eb)
{
    if (!c_out || !dir)
        return ss_err(eb, SS_EINVAL, "catalog_load: NULL argument");
    catalog *c = ss_calloc(1, sizeof *c);
    if (!c)
        return ss_err(eb, SS_ENOMEM, "out of memory");
    int rc = load_kind(&c->gpus, &kind_gpu, dir, eb);
    if (!rc)
        rc = load_kind(&c->models, &kind_model, dir, eb);
    if (!rc && has_subdir(dir, kind_engine.subdir))
        rc = load_kind(&c->engines, &kind_engine, dir, eb);
    if (rc) {
        catalog_destroy(&c);
        return rc;
    }
    warn_unknown_gpus(c);
    *c_out = c;
    return SS_OK;
}

void catalog_destroy(catalog **c)
{
    if (!c || !*c)
        return;
    table_free(&(*c)->gpus, &kind_gpu);
    table_free(&(*c)->models, &kind_model);
    table_free(&(*c)->engines, &kind_engine);
    ss_free(*c);
    *c = NULL;
}

/* }====================================================================== */

/* {======================================================================
 * Lookup and iteration
 * ======================================================================= */

const cat_gpu *catalog_gpu(const catalog *c, const char *name)
{
    return c ? table_find(&c->gpus, &kind_gpu, name) : NULL;
}

const cat_model *catalog_model(const catalog *c, const char *name)
{
    return c ? table_find(&c->models, &kind_model, name) : NULL;
}

/* "unknown GPU 'x' (known: a, b, c)". */
static int not_found(const cat_table *t, const cat_kind *k, const char *name, ss_errbuf *eb)
{
    char known[SS_ERRBUF_LEN - 120];
    known_names(t, k, known, sizeof known);
    return ss_err(eb, SS_ENOTFOUND, "unknown %s '%.60s' (known: %s)", k->what,
                  name ? name : "(null)", known);
}

int catalog_gpu_find(const catalog *c, const char *name, const cat_gpu **out, ss_errbuf *eb)
{
    if (!c || !out)
        return ss_err(eb, SS_EINVAL, "catalog_gpu_find: NULL argument");
    *out = catalog_gpu(c, name);
    return *out ? SS_OK : not_found(&c->gpus, &kind_gpu, name, eb);
}

int catalog_model_find(const catalog *c, const char *name, const cat_model **out, ss_errbuf *eb)
{
    if (!c || !out)
        return ss_err(eb, SS_EINVAL, "catalog_model_find: NULL argument");
    *out = catalog_model(c, name);
    return *out ? SS_OK : not_found(&c->models, &kind_model, name, eb);
}

const cat_engine *catalog_engine(const catalog *c, const char *name)
{
    return c ? table_find(&c->engines, &kind_engine, name) : NULL;
}

int catalog_engine_find(const catalog *c, const char *name, const cat_engine **out,
                        ss_errbuf *eb)
{
    if (!c || !out)
        return ss_err(eb, SS_EINVAL, "catalog_engine_find: NULL argument");
    *out = catalog_engine(c, name);
    return *out ? SS_OK : not_found(&c->engines, &kind_engine, name, eb);
}

int catalog_engine_put(catalog *c, const cat_engine *e, ss_errbuf *eb)
{
    if (!c || !e)
        return ss_err(eb, SS_EINVAL, "catalog_engine_put: NULL argument");
    if (!cat__valid_name(e->name, sizeof e->name))
        return ss_err(eb, SS_EINVAL, "engine name '%.60s' is not a name of 1-47 characters "
                      "from [a-z0-9._-]", e->name);
    cat_engine copy = *e; /* e may be one of the catalog's own, which the insertion moves */
    char *path = NULL;
    if (e->path && !(path = ss_strdup(e->path)))
        return ss_err(eb, SS_ENOMEM, "out of memory");
    cat_table *t = &c->engines;
    size_t i = 0;
    while (i < t->n && strcmp(item_at(t, &kind_engine, i), e->name) < 0)
        i++;
    cat_engine *dst = i < t->n ? item_at(t, &kind_engine, i) : NULL;
    if (dst && !strcmp(dst->name, e->name)) {
        ss_free((void *)dst->path);
    } else {
        if (ss_grow(&t->items, &t->cap, t->n + 1, kind_engine.elem)) {
            ss_free(path);
            return ss_err(eb, SS_ENOMEM, "out of memory");
        }
        dst = item_at(t, &kind_engine, i);
        memmove(dst + 1, dst, (t->n - i) * sizeof *dst);
        t->n++;
    }
    *dst = copy;
    dst->path = path;
    return SS_OK;
}

/* Whether paths a and b name the same file (both exist). */
static int same_file(const char *a, const char *b)
{
    struct stat x, y;
    if (!strcmp(a, b))
        return 1;
    return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

int catalog_engine_load(catalog *c, const char *path, ss_errbuf *eb)
{
    if (!c || !path)
        return ss_err(eb, SS_EINVAL, "catalog_engine_load: NULL argument");
    cat_engine e;
    unsigned name_line = 0;
    int rc = cat__engine_read(&e, path, &name_line, eb);
    if (rc)
        return rc;
    const cat_engine *had = catalog_engine(c, e.name);
    if (had && had->path && same_file(had->path, path))
        return SS_OK; /* read already, perhaps by another name of the same file */
    if (had)
        return ss_err(eb, SS_EINVAL, "%s:%u: engine.name: engine '%s' is already defined in %s",
                      path, name_line, e.name, had->path ? had->path : "the catalog");
    e.path = path;
    return catalog_engine_put(c, &e, eb);
}

const cat_engine *catalog_engine_from(const catalog *c, const char *path)
{
    for (size_t i = 0; c && path && i < c->engines.n; i++) {
        const cat_engine *e = item_at(&c->engines, &kind_engine, i);
        if (e->path && !strcmp(e->path, path))
            return e;
    }
    for (size_t i = 0; c && path && i < c->engines.n; i++) { /* another name of the file */
        const cat_engine *e = item_at(&c->engines, &kind_engine, i);
        if (e->path && same_file(e->path, path))
            return e;
    }
    return NULL;
}

size_t catalog_n_engines(const catalog *c) { return c ? c->engines.n : 0; }

const cat_engine *catalog_engine_at(const catalog *c, size_t i)
{
    return c && i < c->engines.n ? item_at(&c->engines, &kind_engine, i) : NULL;
}

size_t catalog_n_gpus(const catalog *c) { return c ? c->gpus.n : 0; }

const cat_gpu *catalog_gpu_at(const catalog *c, size_t i)
{
    return c && i < c->gpus.n ? item_at(&c->gpus, &kind_gpu, i) : NULL;
}

size_t catalog_n_models(const catalog *c) { return c ? c->models.n : 0; }

const cat_model *catalog_model_at(const catalog *c, size_t i)
{
    return c && i < c->models.n ? item_at(&c->models, &kind_model, i) : NULL;
}

/* }====================================================================== */

const char *catalog_default_dir(const char *explicit_dir)
{
    if (explicit_dir)
        return explicit_dir;
    const char *env = getenv("SLICESIM_PROFILES");
    if (env && *env)
        return env;
    struct stat st;
    if (stat("profiles/hardware", &st) == 0 && S_ISDIR(st.st_mode))
        return "profiles";
    return SS_SOURCE_ROOT "/profiles";
}
