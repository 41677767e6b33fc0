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

/* Bucket i's share above v: 0 when every value of it is at most v, else the value it stands
 * for there (its midpoint, at least v + 1, within [min, max]). */
static int64_t above_value(const ss_hist *h, size_t i, int64_t v)
{
    uint64_t lo, width;
    bucket_range(i, &lo, &width);
    if ((int64_t)(lo + width - 1) <= v)
        return 0;
    int64_t mid = (int64_t)(lo + (width - 1) / 2);
    if (mid <= v)
        mid = v + 1;
    return mid < h->min ? h->min : mid > h->max ? h->max : mid;
}

void ss_hist_above(const ss_hist *h, int64_t v, double q, uint64_t *n_out, double *mean_out,
                   int64_t *quantile_out)
{
    uint64_t n = 0;
    double sum = 0;
    size_t first = h->n_buckets; /* the first bucket above v */
    /* the buckets below v's hold nothing above it (a negative v: every bucket) */
    size_t i0 = v < 0 ? 0 : ss_hist__bucket((uint64_t)v);
    for (size_t i = i0; h->n && v < h->max && i < h->n_buckets; i++) {
        int64_t x = h->counts[i] ? above_value(h, i, v) : 0;
        if (!x)
            continue;
        if (first == h->n_buckets)
            first = i;
        n += h->counts[i];
        sum += (double)x * (double)h->counts[i];
    }
    *n_out = n;
    if (!n)
        return;
    if (mean_out)
        *mean_out = v < h->min ? ss_hist_mean(h) : sum / (double)n;
    if (!quantile_out)
        return;
    uint64_t rank = (uint64_t)(q * (double)n);
    if ((double)rank < q * (double)n)
        rank++; /* ceil */
    rank = rank < 1 ? 1 : rank > n ? n : rank;
    uint64_t seen = 0;
    for (size_t i = first; i < h->n_buckets; i++) {
        int64_t x = h->counts[i] ? above_value(h, i, v) : 0;
        if (x && (seen += h->counts[i]) >= rank) {
            *quantile_out = x;
            return;
        }
    }
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
