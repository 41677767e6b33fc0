/* Counting, failure-injecting wrapper over the C allocator. Each block carries a 16-byte
 * header holding its size, so that live bytes can be counted without a side table. */
#include "core/ss_alloc.h"

#include "core/ss_err.h"

#include <stdlib.h>
#include <string.h>

#define HDR 16 /* keeps max_align_t alignment for the user block */

static size_t live_bytes;
static uint64_t n_allocs;
static uint64_t fail_countdown;

static int injected_failure(void)
{
    if (fail_countdown == 0)
        return 0;
    return --fail_countdown == 0;
}

void *ss_malloc(size_t n)
{
    if (injected_failure() || n > SIZE_MAX - HDR)
        return NULL;
    unsigned char *b = malloc(n + HDR);
    if (!b)
        return NULL;
    memcpy(b, &n, sizeof n);
    live_bytes += n;
    n_allocs++;
    return b + HDR;
}

void *ss_calloc(size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        return NULL;
    void *p = ss_malloc(count * size);
    if (p)
        memset(p, 0, count * size);
    return p;
}

void *ss_realloc(void *p, size_t n)
{
    if (!p)
        return ss_malloc(n);
    if (injected_failure() || n > SIZE_MAX - HDR)
        return NULL;
    unsigned char *b = (unsigned char *)p - HDR;
    size_t old;
    memcpy(&old, b, sizeof old);
    unsigned char *nb = realloc(b, n + HDR);
    if (!nb)
        return NULL;
    memcpy(nb, &n, sizeof n);
    live_bytes = live_bytes - old + n;
    n_allocs++;
    return nb + HDR;
}

void ss_free(void *p)
{
    if (!p)
        return;
    unsigned char *b = (unsigned char *)p - HDR;
    size_t n;
    memcpy(&n, b, sizeof n);
    live_bytes -= n;
    free(b);
}

char *ss_strndup(const char *s, size_t n)
{
    char *d = ss_malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

char *ss_strdup(const char *s) { return ss_strndup(s, strlen(s)); }

char *ss_path_join(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    char *p = ss_malloc(na + nb + 2);
    if (p) {
        memcpy(p, a, na);
        p[na] = '/';
        memcpy(p + na + 1, b, nb + 1);
    }
    return p;
}

size_t ss_alloc_live_bytes(void) { return live_bytes; }
uint64_t ss_alloc_count(void) { return n_allocs; }
void ss_alloc_fail_after(uint64_t n) { fail_countdown = n; }

int ss_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return SS_OK;
    size_t ncap = *cap ? *cap : 8;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2 / elem)
            return SS_ENOMEM;
        ncap *= 2;
    }
    void *np = ss_realloc(*p, ncap * elem);
    if (!np)
        return SS_ENOMEM;
    *p = np;
    *cap = ncap;
    return SS_OK;
}
