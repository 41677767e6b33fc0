/* Named parameters for plug-ins ("max_num_seqs" = "256"): an ordered list of key/value
 * strings filled from the command line, read by a plug-in's init with typed getters that
 * check ranges, and checked at the end for keys nobody read (typos). Owns its strings. */
#ifndef SS_CORE_SS_PARAMS_H
#define SS_CORE_SS_PARAMS_H

/* part of the plug-in API (policy/plugin.h): visible to a plug-in the binary loads */
#pragma GCC visibility push(default)

#include <stddef.h>
#include <stdint.h>

#include "core/ss_err.h"

typedef struct ss_params ss_params;

/* 0 or SS_ENOMEM. */
int ss_params_create(ss_params **p_out);
/* NULL-safe; sets *p to NULL. */
void ss_params_destroy(ss_params **p);
/* Set key to value (copies both), replacing an earlier value. 0 or SS_ENOMEM. */
int ss_params_set(ss_params *p, const char *key, const char *value);
/* Parse "key=value" (from --param). 0, SS_EPARSE (no '=' or empty key) or SS_ENOMEM. */
int ss_params_set_kv(ss_params *p, const char *kv, ss_errbuf *eb);
/* Value of key or NULL; marks the key as used. */
const char *ss_params_get(ss_params *p, const char *key);
/* Typed getters: *out = default when the key is absent; SS_EINVAL with "who: key: ..." in eb
 * when the value is not a number or lies outside [min, max]. */
int ss_params_get_u64(ss_params *p, const char *who, const char *key, uint64_t def, uint64_t min,
                      uint64_t max, uint64_t *out, ss_errbuf *eb);
int ss_params_get_double(ss_params *p, const char *who, const char *key, double def, double min,
                         double max, double *out, ss_errbuf *eb);
/* SS_EINVAL naming the first key that no getter read ("unknown parameter 'x' for who"). */
int ss_params_check_unused(const ss_params *p, const char *who, ss_errbuf *eb);
/* The i-th key no getter has read (in the order keys were set), or NULL past the last. */
const char *ss_params_unused_at(const ss_params *p, size_t i);
size_t ss_params_count(const ss_params *p);

/* Emitter for a plug-in's describe hook: one resolved parameter at a time. */
typedef void ss_kv_emit_fn(void *ud, const char *key, const char *value);

/* Call emit for every key in the order keys were first set (NULL-safe; does not mark keys as
 * used). */
void ss_params_each(const ss_params *p, ss_kv_emit_fn *emit, void *ud);

#pragma GCC visibility pop

#endif
