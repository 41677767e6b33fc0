/* Engine profiles (profiles/engines, one .ini file per serving engine and version): the
 * accepted keys, their units, the [gpu.NAME] override sections and the lookup of one GPU's
 * host terms. Not for what the terms do to an iteration (cost/) or where files are found
 * (catalog.c). */
#include "catalog/catalog_int.h"

#include "core/ss_parse.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define KEY(sec, name_, kind_, field, scale_, req)                                              \
    {.section = sec, .key = name_, .kind = kind_, .off = offsetof(cat_engine, field),             \
     .size = sizeof(((cat_engine *)0)->field), .scale = scale_, .required = req}
/* A number with its documented range [lo_, hi_] as written (profiles/README.md gives the
 * reasons): wide enough for any engine measured, narrow enough that no value in range makes
 * a time that saturates or overflows the integer-nanosecond clock. */
#define NUM(sec, name_, kind_, field, scale_, lo_, hi_)                                         \
    {.section = sec, .key = name_, .kind = kind_, .off = offsetof(cat_engine, field),             \
     .size = sizeof(((cat_engine *)0)->field), .scale = scale_, .required = 1, .lo = lo_,       \
     .hi = hi_}

/* Every term is required (except description): an engine file states what its engine does
 * instead of inheriting a default that would look calibrated. The host terms' upper bounds
 * keep a step's host time under the 10^13 ns ceiling (cost/cost_roofline.h) even at the
 * largest batches the batching policies allow (2^20 sequences, 2^26 tokens): 1 s + 2^20 x
 * 1 ms + 2^26 x 100 us = 7760 s. */
static const cat__key engine_keys[] = {
    KEY("engine", "name", CAT__NAME, name, 1, 1),
    KEY("engine", "description", CAT__TEXT, description, 1, 0),
    KEY("engine", "overlap", CAT__NAME, overlap_name, 1, 1),
    NUM("host", "iter_fixed_us", CAT__NONNEG, host.iter_fixed_s, 1e-6, 0, 1e6),
    NUM("host", "iter_per_seq_us", CAT__NONNEG, host.iter_per_seq_s, 1e-6, 0, 1e3),
    NUM("host", "iter_per_token_us", CAT__NONNEG, host.iter_per_token_s, 1e-6, 0, 100),
    NUM("host", "op_floor_us", CAT__NONNEG, host.op_floor_s, 1e-6, 0, 1e3),
    KEY("kernels", "fuse_add_norm", CAT__BOOL, fuse_add_norm, 1, 1),
    KEY("kernels", "fuse_silu_mul", CAT__BOOL, fuse_silu_mul, 1, 1),
    NUM("kernels", "moe_eff", CAT__FRAC, moe_eff, 1, 0.01, 1),
    KEY("allreduce", "algorithm", CAT__NAME, allreduce_name, 1, 1),
    NUM("allreduce", "eff", CAT__FRAC, allreduce_eff, 1, 0.01, 1),
    NUM("allreduce", "hop_latency_us", CAT__NONNEG, allreduce_hop_s, 1e-6, 0, 1e3),
    NUM("frontend", "frontend_ms", CAT__NONNEG, frontend_s, 1e-3, 0, 6e5),
    KEY("engine", "async_scheduling", CAT__BOOL, async_scheduling, 1, 1),
    NUM("kernels", "attn_speed", CAT__POS, attn_speed, 1, 0.01, 10),
    NUM("host", "launch_us", CAT__NONNEG, host.launch_s, 1e-6, 0, 1e3),
};

#define N_ENGINE_KEYS (sizeof engine_keys / sizeof *engine_keys)
_Static_assert(N_ENGINE_KEYS <= CAT__MAX_KEYS, "raise CAT__MAX_KEYS");

/* The [host] keys a [gpu.NAME] section may override. */
static const struct {
    const char *key;
    size_t off; /* in cat_engine_host */
} host_keys[] = {
    {"iter_fixed_us", offsetof(cat_engine_host, iter_fixed_s)},
    {"iter_per_seq_us", offsetof(cat_engine_host, iter_per_seq_s)},
    {"iter_per_token_us", offsetof(cat_engine_host, iter_per_token_s)},
    {"op_floor_us", offsetof(cat_engine_host, op_floor_s)},
    {"launch_us", offsetof(cat_engine_host, launch_s)},
};
#define N_HOST_KEYS (sizeof host_keys / sizeof *host_keys)

/* While reading: which override keys were set, and where. */
typedef struct override_state {
    cat_engine *e;
    unsigned line[CAT_ENGINE_MAX_GPUS][N_HOST_KEYS]; /* 0 = not set */
} override_state;

/* The override slot of GPU gpu, created on first use (its section's first key on line
 * line); -1 when there are too many. */
static int slot_of(cat_engine *e, const char *gpu, unsigned line)
{
    for (uint32_t i = 0; i < e->n_gpus; i++)
        if (!strcmp(e->per_gpu[i].gpu, gpu))
            return (int)i;
    if (e->n_gpus == CAT_ENGINE_MAX_GPUS)
        return -1;
    memcpy(e->per_gpu[e->n_gpus].gpu, gpu, strlen(gpu) + 1);
    e->per_gpu[e->n_gpus].line = line;
    return (int)e->n_gpus++;
}

/* The [host] entry of the key table for key (one of host_keys): its kind and range hold in
 * [gpu.NAME] sections too. */
static const cat__key *host_key(const char *key)
{
    for (size_t i = 0; i < N_ENGINE_KEYS; i++)
        if (!strcmp(engine_keys[i].section, "host") && !strcmp(engine_keys[i].key, key))
            return &engine_keys[i];
    return NULL;
}

/* One key of a [gpu.NAME] section. */
static int on_override(void *ud, const char *path, unsigned line, const char *gpu,
                       const char *key, const char *value, ss_errbuf *eb)
{
    override_state *st = ud;
    if (!cat__valid_name(gpu, CAT_NAME_MAX))
        return ss_err(eb, SS_EPARSE, "%s:%u: gpu.%.60s.%s: '%.60s' is not a GPU name of 1-47 "
                      "characters from [a-z0-9._-]", path, line, gpu, key, gpu);
    size_t k = 0;
    while (k < N_HOST_KEYS && strcmp(host_keys[k].key, key))
        k++;
    if (k == N_HOST_KEYS)
        return ss_err(eb, SS_EPARSE, "%s:%u: gpu.%s.%s: unknown key (a [gpu.NAME] section "
                      "overrides iter_fixed_us, iter_per_seq_us, iter_per_token_us, "
                      "op_floor_us, launch_us)", path, line, gpu, key);
    int i = slot_of(st->e, gpu, line);
    if (i < 0)
        return ss_err(eb, SS_EPARSE, "%s:%u: gpu.%s.%s: more than %d [gpu.NAME] sections", path,
                      line, gpu, key, CAT_ENGINE_MAX_GPUS);
    if (st->line[i][k])
        return ss_err(eb, SS_EPARSE, "%s:%u: gpu.%s.%s: set twice (first on line %u)", path,
                      line, gpu, key, st->line[i][k]);
    const cat__key *hk = host_key(key);
    if (SS_NEVER(!hk))
        return ss_err(eb, SS_EINVAL, "%s:%u: gpu.%s.%s: not in the key table", path, line, gpu,
                      key);
    double x;
    if (cat__parse_key_f64(value, hk, &x)) {
        char why[96];
        if (cat__range_error(hk, value, why, sizeof why))
            return ss_err(eb, SS_EPARSE, "%s:%u: gpu.%s.%s: %s", path, line, gpu, key, why);
        return ss_err(eb, SS_EPARSE, "%s:%u: gpu.%s.%s: '%.60s' is not a number >= 0", path,
                      line, gpu, key, value);
    }
    st->line[i][k] = line;
    memcpy((char *)&st->e->per_gpu[i].host + host_keys[k].off, &x, sizeof x);
    return SS_OK;
}

/* Fill the keys an override section did not set from [host]. */
static void inherit_host(cat_engine *e, const override_state *st)
{
    for (uint32_t i = 0; i < e->n_gpus; i++)
        for (size_t k = 0; k < N_HOST_KEYS; k++)
            if (!st->line[i][k])
                memcpy((char *)&e->per_gpu[i].host + host_keys[k].off,
                       (const char *)&e->host + host_keys[k].off, sizeof(double));
}

int cat__engine_read(void *dst, const char *path, unsigned *name_line, ss_errbuf *eb)
{
    cat_engine *e = dst;
    memset(e, 0, sizeof *e);
    cat__ini_info info;
    override_state st = {.e = e};
    const cat__ini_hook hook = {.prefix = "gpu.", .fn = on_override, .ud = &st};
    int rc = cat__ini_read_hooked(e, engine_keys, N_ENGINE_KEYS, path, &hook, &info, eb);
    if (rc)
        return rc;
    *name_line = info.line[0];
    if (!strcmp(e->overlap_name, "serial"))
        e->overlap = CAT_OVERLAP_SERIAL;
    else if (!strcmp(e->overlap_name, "max"))
        e->overlap = CAT_OVERLAP_MAX;
    else
        return ss_err(eb, SS_EPARSE, "%s:%u: engine.overlap: '%s' is not serial or max", path,
                      info.line[2], e->overlap_name);
    if (!strcmp(e->allreduce_name, "ring"))
        e->allreduce = CAT_ALLREDUCE_RING;
    else if (!strcmp(e->allreduce_name, "twoshot"))
        e->allreduce = CAT_ALLREDUCE_TWOSHOT;
    else
        return ss_err(eb, SS_EPARSE, "%s:%u: allreduce.algorithm: '%s' is not ring or twoshot",
                      path, info.line[10], e->allreduce_name);
    if (!e->description[0])
        memcpy(e->description, e->name, sizeof e->name);
    inherit_host(e, &st);
    return SS_OK;
}

const cat_engine_host *cat_engine_host_for(const cat_engine *e, const char *gpu)
{
    for (uint32_t i = 0; gpu && i < e->n_gpus; i++)
        if (!strcmp(e->per_gpu[i].gpu, gpu))
            return &e->per_gpu[i].host;
    return &e->host;
}

/* 1 when key k is a number (a term with a documented range). */
static int is_term(const cat__key *k) { return k->hi > 0; }

size_t cat_engine_n_terms(void)
{
    size_t n = 0;
    for (size_t i = 0; i < N_ENGINE_KEYS; i++)
        n += is_term(&engine_keys[i]);
    return n;
}

int cat_engine_term_get(size_t i, cat_engine_term *out)
{
    for (size_t j = 0; j < N_ENGINE_KEYS; j++) {
        const cat__key *k = &engine_keys[j];
        if (!is_term(k) || i-- > 0)
            continue;
        *out = (cat_engine_term){.section = k->section, .key = k->key, .lo = k->lo, .hi = k->hi,
                                 .scale = k->scale, .off = k->off,
                                 .per_gpu = !strcmp(k->section, "host")};
        return SS_OK;
    }
    return SS_EINVAL;
}

/* {======================================================================
 * Writing a profile
 * ======================================================================= */

/* 1 when the text in buf reads back (times scale, as cat__parse_key_f64 computes it) as x. */
static int reads_back(const char *buf, double x, double scale)
{
    double back;
    return !ss_parse_doublez(buf, &back) && back * scale == x;
}

/* The shortest decimal text of x / scale that reads back as exactly x, into buf: fixed-point
 * ("2500", "0.5") for values people write that way, else with an exponent. */
static void shortest_number(char *buf, size_t size, double x, double scale)
{
    double y = x / scale, a = y < 0 ? -y : y;
    if (a == 0 || (a >= 1e-4 && a < 1e15))
        for (int digits = 0; digits <= 22; digits++) {
            snprintf(buf, size, "%.*f", digits, y);
            if (reads_back(buf, x, scale))
                return;
        }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, size, "%.*g", prec, y);
        if (reads_back(buf, x, scale))
            return;
    }
    snprintf(buf, size, "%.17g", y); /* no text reads back exactly: the nearest one */
}

/* A text value as the reader will read it back: inih ends a value at " ;" (an inline
 * comment) and at the end of the line, so semicolons and line breaks become commas and
 * spaces. */
static void write_text(FILE *f, const char *s)
{
    for (; *s; s++)
        fputc(*s == ';' ? ',' : *s == '\n' || *s == '\r' ? ' ' : *s, f);
}

static void write_key(FILE *f, const cat_engine *e, const cat__key *k)
{
    const char *p = (const char *)e + k->off;
    char num[64];
    fprintf(f, "%s = ", k->key);
    switch (k->kind) {
    case CAT__NAME:
    case CAT__TEXT: write_text(f, p); break;
    case CAT__BOOL: fputs(*(const int *)(const void *)p ? "true" : "false", f); break;
    default: {
        double x;
        memcpy(&x, p, sizeof x);
        shortest_number(num, sizeof num, x, k->scale);
        fputs(num, f);
        break;
    }
    }
    fputc('\n', f);
}

/* One line of a header comment, n bytes at s, as "; " lines of at most COMMENT_WIDTH
 * characters, broken at blanks where there are any: the reader refuses lines over 199. */
#define COMMENT_WIDTH 98
static void write_comment(FILE *f, const char *s, size_t n)
{
    do {
        size_t k = n;
        if (k > COMMENT_WIDTH) {
            k = COMMENT_WIDTH;
            while (k > COMMENT_WIDTH / 2 && s[k] != ' ')
                k--;
            if (s[k] != ' ')
                k = COMMENT_WIDTH; /* no blank near the end: cut the word */
        }
        size_t w = k;
        while (w && s[w - 1] == ' ')
            w--;
        fprintf(f, "; %.*s\n", (int)w, s);
        while (k < n && s[k] == ' ')
            k++;
        s += k;
        n -= k;
    } while (n);
}

/* Every key of section sec, in table order. */
static void write_section(FILE *f, const cat_engine *e, const char *sec)
{
    fprintf(f, "\n[%s]\n", sec);
    for (size_t i = 0; i < N_ENGINE_KEYS; i++)
        if (!strcmp(engine_keys[i].section, sec))
            write_key(f, e, &engine_keys[i]);
}

/* 1 when an earlier key of the table is in the same section as key i. */
static int section_seen(size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (!strcmp(engine_keys[j].section, engine_keys[i].section))
            return 1;
    return 0;
}

int cat_engine_write(FILE *f, const cat_engine *e, const char *header_comment)
{
    if (!f || !e)
        return SS_EINVAL;
    for (const char *s = header_comment; s && *s;) {
        size_t n = strcspn(s, "\n");
        write_comment(f, s, n);
        s += n + (s[n] == '\n');
    }
    /* the sections in the order of the key table, each with every one of its keys */
    for (size_t i = 0; i < N_ENGINE_KEYS; i++)
        if (!section_seen(i))
            write_section(f, e, engine_keys[i].section);
    char num[64];
    for (uint32_t g = 0; g < e->n_gpus && g < CAT_ENGINE_MAX_GPUS; g++) {
        fprintf(f, "\n[gpu.%s]\n", e->per_gpu[g].gpu);
        for (size_t k = 0; k < N_HOST_KEYS; k++) {
            double x;
            memcpy(&x, (const char *)&e->per_gpu[g].host + host_keys[k].off, sizeof x);
            shortest_number(num, sizeof num, x, 1e-6);
            fprintf(f, "%s = %s\n", host_keys[k].key, num);
        }
    }
    return ferror(f) ? SS_EIO : SS_OK;
}

/* }====================================================================== */
