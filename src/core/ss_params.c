/* Key/value parameter list with use tracking. Lists are short (a dozen keys): linear search. */
#include "core/ss_params.h"

#include "core/ss_alloc.h"
#include "core/ss_parse.h"

#include <inttypes.h>
#include <string.h>

typedef struct kv {
    char *key, *value; /* owned */
    int used;
} kv;

struct ss_params {
    kv *v;
    size_t n, cap;
};

int ss_params_create(ss_params **p_out)
{
    ss_params *p = ss_calloc(1, sizeof *p);
    if (!p)
        return SS_ENOMEM;
    *p_out = p;
    return SS_OK;
}

void ss_params_destroy(ss_params **pp)
{
    ss_params *p = *pp;
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++) {
        ss_free(p->v[i].key);
        ss_free(p->v[i].value);
    }
    ss_free(p->v);
    ss_free(p);
    *pp = NULL;
}

static kv *find(const ss_params *p, const char *key)
{
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->v[i].key, key))
            return &p->v[i];
    return NULL;
}

int ss_params_set(ss_params *p, const char *key, const char *value)
{
    char *v = ss_strdup(value);
    if (!v)
        return SS_ENOMEM;
    kv *e = find(p, key);
    if (e) {
        ss_free(e->value);
        e->value = v;
        return SS_OK;
    }
    char *k = ss_strdup(key);
    if (!k || ss_grow((void **)&p->v, &p->cap, p->n + 1, sizeof *p->v)) {
        ss_free(k);
        ss_free(v);
        return SS_ENOMEM;
    }
    p->v[p->n++] = (kv){k, v, 0};
    return SS_OK;
}

int ss_params_set_kv(ss_params *p, const char *s, ss_errbuf *eb)
{
    const char *eq = strchr(s, '=');
    if (!eq || eq == s)
        return ss_err(eb, SS_EPARSE, "--param: expected KEY=VALUE, got '%s'", s);
    char *key = ss_strndup(s, (size_t)(eq - s));
    if (!key)
        return SS_ENOMEM;
    int rc = ss_params_set(p, key, eq + 1);
    ss_free(key);
    return rc;
}

const char *ss_params_get(ss_params *p, const char *key)
{
    kv *e = p ? find(p, key) : NULL;
    if (!e)
        return NULL;
    e->used = 1;
    return e->value;
}

int ss_params_get_u64(ss_params *p, const char *who, const char *key, uint64_t def, uint64_t min,
                      uint64_t max, uint64_t *out, ss_errbuf *eb)
{
    const char *s = ss_params_get(p, key);
    int64_t v;
    if (!s) {
        *out = def;
        return SS_OK;
    }
    if (ss_parse_i64z(s, &v))
        return ss_err(eb, SS_EINVAL, "%s: %s: not an integer: '%s'", who, key, s);
    if (v < 0 || (uint64_t)v < min || (uint64_t)v > max)
        return ss_err(eb, SS_EINVAL, "%s: %s: must be between %" PRIu64 " and %" PRIu64 ", got %s",
                      who, key, min, max, s);
    *out = (uint64_t)v;
    return SS_OK;
}

int ss_params_get_double(ss_params *p, const char *who, const char *key, double def, double min,
                         double max, double *out, ss_errbuf *eb)
{
    const char *s = ss_params_get(p, key);
    double v;
    if (!s) {
        *out = def;
        return SS_OK;
    }
    if (ss_parse_doublez(s, &v))
        return ss_err(eb, SS_EINVAL, "%s: %s: not a number: '%s'", who, key, s);
    if (v < min || v > max)
        return ss_err(eb, SS_EINVAL, "%s: %s: must be between %g and %g, got %s", who, key, min,
                      max, s);
    *out = v;
    return SS_OK;
}

int ss_params_check_unused(const ss_params *p, const char *who, ss_errbuf *eb)
{
    for (size_t i = 0; p && i < p->n; i++)
        if (!p->v[i].used)
            return ss_err(eb, SS_EINVAL, "unknown parameter '%s' for %s", p->v[i].key, who);
    return SS_OK;
}

size_t ss_params_count(const ss_params *p) { return p ? p->n : 0; }

const char *ss_params_unused_at(const ss_params *p, size_t i)
{
    for (size_t k = 0; p && k < p->n; k++)
        if (!p->v[k].used && i-- == 0)
            return p->v[k].key;
    return NULL;
}

void ss_params_each(const ss_params *p, ss_kv_emit_fn *emit, void *ud)
{
    for (size_t i = 0; p && i < p->n; i++)
        emit(ud, p->v[i].key, p->v[i].value);
}
