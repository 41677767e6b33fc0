/* The one allocator every module uses: counts live bytes (tests assert zero at teardown)
 * and can be told to fail the N-th allocation (fault-injection tests).
 * Not thread-safe: a simulation is single-threaded; parallel sweeps use processes. */
#ifndef SS_CORE_SS_ALLOC_H
#define SS_CORE_SS_ALLOC_H

#include <stddef.h>
#include <stdint.h>

/* Like malloc/calloc/realloc/free. Return NULL on failure (real or injected);
 * ss_realloc leaves the old block untouched on failure. ss_free(NULL) is a no-op. */
void *ss_malloc(size_t n);
void *ss_calloc(size_t count, size_t size);
void *ss_realloc(void *p, size_t n);
void ss_free(void *p);
/* Copy of a NUL-terminated string; caller frees with ss_free. NULL on failure. */
char *ss_strdup(const char *s);
/* "a/b" in a fresh buffer (ss_free); NULL when out of memory. */
char *ss_path_join(const char *a, const char *b);
/* Copy of the first n bytes of s plus a NUL. */
char *ss_strndup(const char *s, size_t n);

/* Bytes currently allocated through this allocator. */
size_t ss_alloc_live_bytes(void);
/* Number of successful allocations so far (for sizing fault-injection loops). */
uint64_t ss_alloc_count(void);
/* Make the n-th allocation from now fail (1 = the next one); 0 turns injection off. */
void ss_alloc_fail_after(uint64_t n);

/* Grow *p (an array of elem-byte items with capacity *cap) to hold at least need items,
 * doubling. Returns 0, or SS_ENOMEM leaving *p and *cap unchanged. */
int ss_grow(void **p, size_t *cap, size_t need, size_t elem);

#endif
