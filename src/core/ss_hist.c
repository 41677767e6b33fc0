/* Log-linear histogram: growth, quantiles and merging. The bucket index (a value's top
 * SUB_BITS+1 significant bits) and the hot add are inline in ss_hist.h. */
#include "core/ss_hist.h"

#include "core/ss_alloc.h"
#include "core/ss_err.h"

#include <string.h>

#define SUB ((uint64_t)1 << SS_HIST_SUB_BITS)

/* Lowest value and width of bucket i. */
static void bucket_range(size_t i, uint64_t *lo, uint64_t *width)
{
    if (i < 2 * SUB) {
        *lo = i;
        *width = 1;
        return;
    }
    uint64_t shift = i / SUB - 1;
    *lo = ((i % SUB) + SUB) << shift;
    *width = (uint64_t)1 << shift;
}

static int ensure(ss_hist *h, size_t idx)
{
    if (idx < h->n_buckets)
        return SS_OK;
    size_t n = h->n_buckets ? h->n_buckets : 4 * SUB;
    while (n <= idx)
        n *= 2;
    uint64_t *c = ss_realloc(h->counts, n * sizeof *c);
    if (!c)
        return SS_ENOMEM;
    memset(c + h->n_buckets, 0, (n - h->n_buckets) * sizeof *c);
    h->counts = c;
    h->n_buckets = n;
    return SS_OK;
}

void ss_hist_fini(ss_hist *h)
{
    ss_free(h->counts);
    memset(h, 0, sizeof *h);
}

int ss_hist__grow_add(ss_hist *h, size_t i, int64_t v, uint64_t count)
{
    if (ensure(h, i))
        return SS_ENOMEM;
    ss_hist__record(h, i, v, count);
    return SS_OK;
}

int64_t ss_hist_quantile(const ss_hist *h, double q)
{
    if (!h->n)
        return 0;
    if (q <= 0)
        return h->min;
    uint64_t rank = (uint64_t)(q * (double)h->n);
    if ((double)rank < q * (double)h->n)
        rank++; /* ceil */
    if (rank > h->n)
        rank = h->n;
    uint64_t seen = 0;
    for (size_t i = 0; i < h->n_buckets; i++) {
        seen += h->counts[i];
        if (seen >= rank) {
            uint64_t lo, width;
            bucket_range(i, &lo, &width);
            int64_t v = (int64_t)(lo + (width - 1) / 2);
            return v < h->min ? h->min : v > h->max ? h->max : v;
        }
    }
    return h->max;
}

int ss_hist_merge(ss_hist *dst, const ss_hist *src)
{
    if (!src->n)
        return SS_OK;
    if (ensure(dst, src->n_buckets - 1))
        return SS_ENOMEM;
    for (size_t i = 0; i < src->n_buckets; i++)
        dst->counts[i] += src->counts[i];
    if (!dst->n || src->min < dst->min)
        dst->min = src->min;
    if (!dst->n || src->max > dst->max)
        dst->max = src->max;
    dst->n += src->n;
    dst->sum += src->sum;
    return SS_OK;
}

int ss_hist_merge_move(ss_hist *dst, ss_hist *src)
{
    if (!dst->n) { /* what merging would give: src's samples, extremes and sum (0 + sum) */
        ss_hist_fini(dst);
        *dst = *src;
        memset(src, 0, sizeof *src);
        return SS_OK;
    }
    int rc = ss_hist_merge(dst, src);
    if (!rc)
        ss_hist_fini(src);
    return rc;
}
