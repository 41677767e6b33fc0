/* Table-driven reader of the catalog's INI files on top of ss_ini (inih with line numbers and
 * a line-length check). Not for semantics: hw_catalog.c and model_catalog.c own the key tables
 * and cross-field checks. */
#include "catalog/catalog_int.h"

#include "core/ss_ini.h"
#include "core/ss_parse.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct ini_ctx {
    const char *path;       /* for messages */
    unsigned line;          /* line of the key being applied */
    void *dst;              /* struct being filled */
    const cat__key *keys;   /* accepted keys */
    size_t n_keys;
    cat__ini_info *info;    /* line of each key */
    const cat__ini_hook *hook; /* prefixed sections; may be NULL */
    ss_errbuf *eb;
} ini_ctx;

static int section_known(const ini_ctx *c, const char *section)
{
    for (size_t i = 0; i < c->n_keys; i++)
        if (!strcmp(c->keys[i].section, section))
            return 1;
    return 0;
}

/* 1 when a key before keys[i] that is not CAT__MOVED is in the same section. */
static int section_listed(const ini_ctx *c, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (c->keys[j].kind != CAT__MOVED && !strcmp(c->keys[j].section, c->keys[i].section))
            return 1;
    return 0;
}

/* List the sections of the table, each once (a table may return to a section: the engine
 * keys added later sit at its end), in order of first appearance, then the hook's prefixed
 * sections ("[gpu.NAME]"), into buf. */
static void section_list(const ini_ctx *c, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < c->n_keys && used < n; i++) {
        if (c->keys[i].kind == CAT__MOVED || section_listed(c, i))
            continue;
        int w = snprintf(buf + used, n - used, "%s[%s]", used ? ", " : "", c->keys[i].section);
        used += w > 0 ? (size_t)w : 0;
    }
    if (c->hook && used < n)
        snprintf(buf + used, n - used, "%s[%s%s]", used ? ", " : "", c->hook->prefix,
                 strchr(c->hook->prefix, '.') ? "NAME" : "");
}

int cat__valid_name(const char *s, size_t size)
{
    size_t n = strlen(s);
    if (n == 0 || n >= size)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || strchr("._-", *s)))
            return 0;
    return 1;
}

static int parse_bool(const char *v, int *out)
{
    if (!strcmp(v, "true"))
        *out = 1;
    else if (!strcmp(v, "false"))
        *out = 0;
    else
        return SS_EPARSE;
    return SS_OK;
}

static int parse_dtype(const char *v, uint32_t *out)
{
    static const struct { const char *name; uint32_t bytes; } dtypes[] = {
        {"bf16", 2}, {"fp16", 2}, {"fp32", 4}, {"fp8", 1},
    };
    for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++) {
        if (!strcmp(v, dtypes[i].name)) {
            *out = dtypes[i].bytes;
            return SS_OK;
        }
    }
    return SS_EPARSE;
}

/* Parse an unsigned 32-bit count; allow_zero selects >= 0 instead of > 0. */
static int parse_u32(const char *v, int allow_zero, uint32_t *out)
{
    int64_t x;
    if (ss_parse_i64z(v, &x) || x < (allow_zero ? 0 : 1) || x > UINT32_MAX)
        return SS_EPARSE;
    *out = (uint32_t)x;
    return SS_OK;
}

/* 1 when x passes kind's rule; an infinite x (a number that overflowed) passes the rules
 * without an upper bound, so that it is reported as out of range. */
static int kind_allows(cat__kind kind, double x)
{
    return kind == CAT__POS ? x > 0 : kind == CAT__NONNEG ? x >= 0 : x > 0 && x <= 1;
}

int cat__parse_key_f64(const char *v, const cat__key *k, double *out)
{
    double x;
    if (ss_parse_doublez(v, &x) || !kind_allows(k->kind, x) ||
        (k->hi > 0 && !(x >= k->lo && x <= k->hi)))
        return SS_EPARSE;
    *out = x * k->scale;
    return SS_OK;
}

/* x in the shortest "%g" form with a bare exponent: 1e6, 0.01, 600000. */
static void format_bound(double x, char *buf, size_t n)
{
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%g", x);
    size_t j = 0;
    for (const char *p = tmp; *p && j + 1 < n; p++) {
        buf[j++] = *p;
        if (*p != 'e')
            continue;
        if (p[1] == '+')
            p++;
        else if (p[1] == '-' && j + 1 < n)
            buf[j++] = *++p;
        while (p[1] == '0' && p[2])
            p++;
    }
    buf[j] = '\0';
}

int cat__range_error(const cat__key *k, const char *v, char *buf, size_t n)
{
    double x;
    if (!(k->hi > 0) || !ss_parse_number_value(v, strlen(v), &x) ||
        !kind_allows(k->kind, x) || (x >= k->lo && x <= k->hi))
        return 0;
    char lo[32], hi[32];
    format_bound(k->lo, lo, sizeof lo);
    format_bound(k->hi, hi, sizeof hi);
    snprintf(buf, n, "out of range [%s, %s]", lo, hi);
    return 1;
}

static const char *kind_expects(cat__kind kind)
{
    switch (kind) {
    case CAT__NAME: return "a name of 1-47 characters from [a-z0-9._-]";
    case CAT__TEXT: return "a non-empty text of under 128 characters";
    case CAT__POS: return "a number > 0";
    case CAT__NONNEG: return "a number >= 0";
    case CAT__FRAC: return "a fraction in (0, 1]";
    case CAT__UPOS: return "an integer >= 1";
    case CAT__UNONNEG: return "an integer >= 0";
    case CAT__BOOL: return "true or false";
    case CAT__DTYPE: return "bf16, fp16, fp32 or fp8";
    case CAT__MOVED: return "set here";
    }
    return "?";
}

/* The range a rejected number v is outside of ("[1, 4294967295]"), or NULL when v is not a
 * number of the key's kind (a fraction for an integer key, text). */
static const char *out_of_range(const cat__key *k, const char *v)
{
    double x;
    if (!ss_parse_number_value(v, strlen(v), &x))
        return NULL;
    int integer = k->kind == CAT__UPOS || k->kind == CAT__UNONNEG;
    if (integer && (x < (k->kind == CAT__UPOS) || x > UINT32_MAX))
        return k->kind == CAT__UPOS ? "[1, 4294967295]" : "[0, 4294967295]";
    if (!integer && k->kind != CAT__FRAC && isinf(x))
        return "[0, 1.8e308]";
    return NULL;
}

/* Convert value according to k and store it at dst + k->off. */
static int store_value(void *dst, const cat__key *k, const char *v)
{
    char *field = (char *)dst + k->off;
    switch (k->kind) {
    case CAT__NAME:
    case CAT__TEXT:
        if (k->kind == CAT__NAME ? !cat__valid_name(v, k->size) : !*v || strlen(v) >= k->size)
            return SS_EPARSE;
        memcpy(field, v, strlen(v) + 1);
        return SS_OK;
    case CAT__POS:
    case CAT__NONNEG:
    case CAT__FRAC: {
        double x;
        int rc = cat__parse_key_f64(v, k, &x);
        if (!rc)
            memcpy(field, &x, sizeof x);
        return rc;
    }
    case CAT__UPOS:
    case CAT__UNONNEG:
    case CAT__DTYPE: {
        uint32_t x;
        int rc = k->kind == CAT__DTYPE ? parse_dtype(v, &x)
                                       : parse_u32(v, k->kind == CAT__UNONNEG, &x);
        if (!rc)
            memcpy(field, &x, sizeof x);
        return rc;
    }
    case CAT__BOOL: {
        int x;
        int rc = parse_bool(v, &x);
        if (!rc)
            memcpy(field, &x, sizeof x);
        return rc;
    }
    case CAT__MOVED: break;
    }
    return SS_EPARSE;
}

/* Apply one key = value; 0 or SS_EPARSE with the message in c->eb. */
static int apply(ini_ctx *c, const char *section, const char *name, const char *value)
{
    if (!*section)
        return ss_err(c->eb, SS_EPARSE, "%s:%u: %s: key outside any section", c->path, c->line,
                      name);
    size_t np = c->hook ? strlen(c->hook->prefix) : 0;
    if (c->hook && !strncmp(section, c->hook->prefix, np))
        return c->hook->fn(c->hook->ud, c->path, c->line, section + np, name, value, c->eb);
    if (!section_known(c, section)) {
        char list[160];
        section_list(c, list, sizeof list);
        return ss_err(c->eb, SS_EPARSE, "%s:%u: %s.%s: unknown section [%s] (expected %s)",
                      c->path, c->line, section, name, section, list);
    }
    size_t i = 0;
    while (i < c->n_keys && (strcmp(c->keys[i].section, section) || strcmp(c->keys[i].key, name)))
        i++;
    if (i == c->n_keys)
        return ss_err(c->eb, SS_EPARSE, "%s:%u: %s.%s: unknown key", c->path, c->line, section,
                      name);
    if (c->info->line[i])
        return ss_err(c->eb, SS_EPARSE, "%s:%u: %s.%s: set twice (first on line %u)", c->path,
                      c->line, section, name, c->info->line[i]);
    c->info->line[i] = c->line;
    if (c->keys[i].kind == CAT__MOVED)
        return ss_err(c->eb, SS_EPARSE, "%s:%u: %s.%s: an engine term since engine profiles; set "
                      "it in profiles/engines/NAME.ini (profiles/README.md)", c->path, c->line,
                      section, name);
    if (!store_value(c->dst, &c->keys[i], value))
        return SS_OK;
    char why[96];
    if (cat__range_error(&c->keys[i], value, why, sizeof why))
        return ss_err(c->eb, SS_EPARSE, "%s:%u: %s.%s: %s", c->path, c->line, section, name,
                      why);
    const char *range = out_of_range(&c->keys[i], value);
    if (range)
        return ss_err(c->eb, SS_EPARSE, "%s:%u: %s.%s: '%.60s' is out of range %s", c->path,
                      c->line, section, name, value, range);
    return ss_err(c->eb, SS_EPARSE, "%s:%u: %s.%s: '%.60s' is not %s", c->path, c->line, section,
                  name, value, kind_expects(c->keys[i].kind));
}

/* ss_ini callback. Section headers are not checked on their own: an unknown section is
 * reported at its first key, naming it. */
static int on_entry(void *user, unsigned line, const char *section, const char *name,
                    const char *value, ss_errbuf *eb)
{
    ini_ctx *c = user;
    (void)eb; /* c->eb is the same buffer */
    if (!name)
        return SS_OK;
    c->line = line;
    return apply(c, section, name, value);
}

static int check_required(const ini_ctx *c)
{
    for (size_t i = 0; i < c->n_keys; i++)
        if (c->keys[i].required && !c->info->line[i])
            return ss_err(c->eb, SS_EPARSE, "%s: %s.%s: missing", c->path, c->keys[i].section,
                          c->keys[i].key);
    return SS_OK;
}

/* The destination field of k has the size its kind writes (catches a table typo). */
static int key_size_ok(const cat__key *k)
{
    switch (k->kind) {
    case CAT__NAME:
    case CAT__TEXT: return k->size > 1;
    case CAT__POS:
    case CAT__NONNEG:
    case CAT__FRAC: return k->size == sizeof(double);
    case CAT__UPOS:
    case CAT__UNONNEG:
    case CAT__DTYPE: return k->size == sizeof(uint32_t);
    case CAT__BOOL: return k->size == sizeof(int);
    case CAT__MOVED: return k->size == 0 && !k->required;
    }
    return 0;
}

int cat__ini_read(void *dst, const cat__key *keys, size_t n_keys, const char *path,
                  cat__ini_info *info, ss_errbuf *eb)
{
    return cat__ini_read_hooked(dst, keys, n_keys, path, NULL, info, eb);
}

int cat__ini_read_hooked(void *dst, const cat__key *keys, size_t n_keys, const char *path,
                         const cat__ini_hook *hook, cat__ini_info *info, ss_errbuf *eb)
{
    if (SS_NEVER(n_keys > CAT__MAX_KEYS))
        return ss_err(eb, SS_EINVAL, "%s: key table too large", path);
    for (size_t i = 0; i < n_keys; i++)
        if (SS_NEVER(!key_size_ok(&keys[i])))
            return ss_err(eb, SS_EINVAL, "%s: bad key table entry %s", path, keys[i].key);
    memset(info, 0, sizeof *info);
    ini_ctx c = {.path = path, .dst = dst, .keys = keys, .n_keys = n_keys, .info = info,
               .hook = hook, .eb = eb};
    int rc = ss_ini_parse(path, on_entry, &c, eb);
    return rc ? rc : check_required(&c);
}
