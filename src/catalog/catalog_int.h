/* Private to src/catalog: the table-driven INI reader that the hardware and model parsers
 * share, and the per-kind readers catalog.c calls. Not for other modules, which see only
 * catalog.h. */
#ifndef SS_CATALOG_CATALOG_INT_H
#define SS_CATALOG_CATALOG_INT_H

#include <stddef.h>

#include "core/ss_err.h"
#include "catalog/catalog.h"

/* How the text of one key becomes a struct field. */
typedef enum cat__kind {
    CAT__NAME,     /* char[size]: [a-z0-9._-]+, shorter than size */
    CAT__TEXT,     /* char[size]: any non-empty text shorter than size */
    CAT__POS,      /* double > 0, multiplied by scale */
    CAT__NONNEG,   /* double >= 0, multiplied by scale */
    CAT__FRAC,     /* double in (0, 1] */
    CAT__UPOS,     /* uint32_t > 0 */
    CAT__UNONNEG,  /* uint32_t >= 0 */
    CAT__BOOL,     /* int: true|false */
    CAT__DTYPE,    /* uint32_t bytes per element: bf16|fp16 -> 2, fp32 -> 4, fp8 -> 1 */
    CAT__MOVED,    /* no field: a key that moved to engine profiles; setting it is an error
                      that says where it went (off and size are 0) */
} cat__kind;

/* One accepted key: where it lives in the file and where its value goes. */
typedef struct cat__key {
    const char *section; /* INI section without brackets, e.g. "gpu" */
    const char *key;     /* key name; units are part of it, e.g. "hbm_bw_gbps" */
    cat__kind kind;      /* parsing and range rule */
    size_t off;          /* offsetof the destination field */
    size_t size;         /* sizeof the destination field (checked against kind) */
    double scale;        /* factor to SI units for double kinds (1e9 for GB/s) */
    int required;        /* 1: the file must set it */
    double lo, hi;       /* double kinds: the documented range of the value as written (in
                            the key's unit, before scale), inclusive, on top of the kind's
                            rule; hi = 0: the kind's rule only */
} cat__key;

#define CAT__MAX_KEYS 32

/* What cat__ini_read reports besides the fields it filled. */
typedef struct cat__ini_info {
    unsigned line[CAT__MAX_KEYS]; /* line on which keys[i] was set; 0 = not set */
} cat__ini_info;

/* Parse the INI file at path into the struct at dst following keys[0..n_keys). Fields of
 * keys the file does not set are left as they were (the caller pre-fills defaults).
 * Returns 0; SS_EIO when the file cannot be opened or read; SS_EPARSE for a syntax error, a
 * line over the length limit, an unknown section or key, a key set twice, a bad value or a
 * missing required key. The message is "FILE:LINE: section.key: what is wrong" ("FILE:
 * section.key: missing" for missing keys). dst may be partly written on failure. */
int cat__ini_read(void *dst, const cat__key *keys, size_t n_keys, const char *path,
                  cat__ini_info *info, ss_errbuf *eb);

/* Sections whose names start with `prefix` ("gpu." in engine files) are not in the key table:
 * each of their keys goes to fn with the rest of the section name (a GPU name), the key and
 * the value. fn returns 0 or SS_EPARSE with "FILE:LINE: ..." in eb. */
typedef struct cat__ini_hook {
    const char *prefix;
    int (*fn)(void *ud, const char *path, unsigned line, const char *rest, const char *key,
              const char *value, ss_errbuf *eb);
    void *ud;
} cat__ini_hook;

/* cat__ini_read with a hook for prefixed sections (hook borrowed; NULL = none). */
int cat__ini_read_hooked(void *dst, const cat__key *keys, size_t n_keys, const char *path,
                         const cat__ini_hook *hook, cat__ini_info *info, ss_errbuf *eb);

/* Read one hardware file into *g (cat_gpu) or one model file into *m (cat_model), including
 * the cross-field checks, and report the line of the name key in *name_line. path is
 * borrowed and not stored. Errors as for cat__ini_read. */
/* 1 when s is a catalog name: 1 to size - 1 characters from [a-z0-9._-]. */
int cat__valid_name(const char *s, size_t size);
/* Parse v as the value of double-kind key k: a number its kind allows and, when k has a
 * range, within it; times k->scale into *out. 0 or SS_EPARSE (*out unchanged). */
int cat__parse_key_f64(const char *v, const cat__key *k, double *out);
/* When v is a number that k's kind allows but outside k's range (an overflowing number
 * included), write "out of range [lo, hi]" (the bounds in the shortest form, "1e6") to buf and
 * return 1; else 0. */
int cat__range_error(const cat__key *k, const char *v, char *buf, size_t n);
int cat__gpu_read(void *g, const char *path, unsigned *name_line, ss_errbuf *eb);
int cat__model_read(void *m, const char *path, unsigned *name_line, ss_errbuf *eb);
/* Read one engine file (profiles/engines) into *e (cat_engine), as above. */
int cat__engine_read(void *e, const char *path, unsigned *name_line, ss_errbuf *eb);

#endif
