/* Log-linear histogram: growth, quantiles and merging. The bucket index (a value's top
 * SUB_BITS+1 significant bits) and the hot add are inline in ss_hist.h. */
#include "core/ss_hist.h"

#include "core/ss_alloc.h"
#include "core/ss_err.h"

#include <assert.h>
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

/* The buckets a histogram of n of them (0: none yet) grows to for bucket idx: twice as many
 * until idx fits, from 4 * SUB (a power of two). */
static size_t grown(size_t n, size_t idx)
{
    n = n ? n : 4 * SUB;
    while (n <= idx)
        n *= 2;
    return n;
}

static int ensure(ss_hist *h, size_t idx)
{
    if (idx < h->n_buckets)
        return SS_OK;
    size_t n = grown(h->n_buckets, idx);
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

/* The rank of quantile q among n samples above a value: ceil(q * n), within [1, n]. */
static uint64_t above_rank(double q, uint64_t n)
{
    uint64_t rank = (uint64_t)(q * (double)n);
    if ((double)rank < q * (double)n)
        rank++; /* ceil */
    return rank < 1 ? 1 : rank > n ? n : rank;
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
    uint64_t rank = above_rank(q, n), seen = 0;
    for (size_t i = first; i < h->n_buckets; i++) {
        int64_t x = h->counts[i] ? above_value(h, i, v) : 0;
        if (x && (seen += h->counts[i]) >= rank) {
            *quantile_out = x;
            return;
        }
    }
}

/* ---- the index: ss_hist_above in O(log n) ------------------------------------------------- */

void ss_hist_index_fini(ss_hist_index *x)
{
    ss_free(x->n);
    ss_free(x->sum);
    memset(x, 0, sizeof *x);
}

/* Cover bucket idx. Doubling a Fenwick tree of a power-of-two size over empty new buckets
 * leaves its nodes as they were; of the new ones, only the root (a power of two) is not empty:
 * it covers every bucket, as the old root did. */
static int index_cover(ss_hist_index *x, size_t idx)
{
    if (idx < x->cap)
        return SS_OK;
    size_t cap = grown(x->cap, idx);
    uint64_t *n = ss_realloc(x->n, (cap + 1) * sizeof *n);
    if (!n)
        return SS_ENOMEM;
    x->n = n;
    uint64_t *sum = ss_realloc(x->sum, (cap + 1) * sizeof *sum);
    if (!sum)
        return SS_ENOMEM; /* n is larger, cap as it was: still consistent */
    x->sum = sum;
    size_t from = x->cap ? x->cap + 1 : 0;
    memset(n + from, 0, (cap + 1 - from) * sizeof *n);
    memset(sum + from, 0, (cap + 1 - from) * sizeof *sum);
    for (size_t root = x->cap ? 2 * x->cap : cap + 1; x->cap && root <= cap; root *= 2) {
        n[root] = n[x->cap];
        sum[root] = sum[x->cap];
    }
    x->cap = cap;
    return SS_OK;
}

/* Midpoint of bucket i (ss_hist_quantile's value for it before clamping). */
static uint64_t bucket_mid(size_t i)
{
    uint64_t lo, width;
    bucket_range(i, &lo, &width);
    return lo + (width - 1) / 2;
}

int ss_hist_index_add(ss_hist_index *x, ss_hist *h, int64_t v)
{
    if (v < 0)
        v = 0;
    size_t idx = ss_hist__bucket((uint64_t)v);
    if (index_cover(x, idx) || ss_hist_add(h, v))
        return SS_ENOMEM;
    uint64_t mid = bucket_mid(idx);
    for (size_t i = idx + 1; i <= x->cap; i += i & -i) {
        x->n[i]++;
        x->sum[i] += mid;
    }
    return SS_OK;
}

/* Sums over buckets [0, k) of the counts and of count x midpoint. */
static void index_prefix(const ss_hist_index *x, size_t k, uint64_t *n_out, uint64_t *sum_out)
{
    uint64_t n = 0, sum = 0;
    for (size_t i = k < x->cap ? k : x->cap; i > 0; i -= i & -i) {
        n += x->n[i];
        sum += x->sum[i];
    }
    *n_out = n;
    *sum_out = sum;
}

/* The first bucket at which the counts of buckets [0, it] reach rank (> 0, at most x's
 * samples): a binary descent of the tree. */
static size_t index_search(const ss_hist_index *x, uint64_t rank)
{
    size_t pos = 0;
    for (size_t step = x->cap; step; step /= 2)
        if (pos + step <= x->cap && x->n[pos + step] < rank) {
            pos += step;
            rank -= x->n[pos];
        }
    return pos;
}

void ss_hist_index_above(const ss_hist_index *x, const ss_hist *h, int64_t v, double q,
                         uint64_t *n_out, double *mean_out, int64_t *quantile_out)
{
    assert(x->cap ? x->n[x->cap] == h->n : !h->n);
    *n_out = 0;
    if (!h->n || v >= h->max)
        return;
    if ((uint64_t)h->max > ((uint64_t)1 << 53) / h->n) { /* doubles might round: the scan's */
        ss_hist_above(h, v, q, n_out, mean_out, quantile_out);
        return;
    }
    /* The buckets from v's (when it holds values above v) on. Each counts at its midpoint,
     * as above_value does, but for three that above_value may move: v's (to v + 1), min's and
     * max's (into [min, max]). A v below 0 takes bucket 0 out, as the scan does (its values,
     * 0, come out as 0 there). */
    int64_t w = v < 0 ? 0 : v;
    size_t b = ss_hist__bucket((uint64_t)w);
    uint64_t lo, width;
    bucket_range(b, &lo, &width);
    size_t start = (int64_t)(lo + width - 1) <= w ? b + 1 : b;
    uint64_t n_below, sum_below, n_all, sum_all;
    index_prefix(x, start, &n_below, &sum_below);
    index_prefix(x, x->cap, &n_all, &sum_all);
    uint64_t n = n_all - n_below, sum = sum_all - sum_below;
    if (!n)
        return;
    size_t moved[3] = {start, ss_hist__bucket((uint64_t)h->min),
                       ss_hist__bucket((uint64_t)h->max)};
    for (int k = 0; k < 3; k++) {
        size_t i = moved[k];
        if (i < start || i >= h->n_buckets || (k > 0 && i == moved[0]) ||
            (k == 2 && i == moved[1]))
            continue;
        sum += h->counts[i] * ((uint64_t)above_value(h, i, w) - bucket_mid(i)); /* mod 2^64 */
    }
    *n_out = n;
    if (mean_out)
        *mean_out = v < h->min ? ss_hist_mean(h) : (double)sum / (double)n;
    if (quantile_out)
        *quantile_out = above_value(h, index_search(x, above_rank(q, n) + n_below), w);
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
