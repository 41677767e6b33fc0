/* Log-linear histogram of non-negative 64-bit values (latencies in ns): 1024 buckets per
 * power of two, so a reported percentile is within 0.05 % of the exact sample percentile,
 * exact below 2048. Memory grows with the largest value seen, never with the sample count,
 * which keeps a 10-million-request replay bounded. */
#ifndef SS_CORE_SS_HIST_H
#define SS_CORE_SS_HIST_H

/* part of the plug-in API (policy/plugin.h): visible to a plug-in the binary loads */
#pragma GCC visibility push(default)

#include <stddef.h>
#include <stdint.h>

#define SS_HIST_SUB_BITS 10

typedef struct ss_hist {
    uint64_t *counts; /* owned; bucket counts, n_buckets long */
    size_t n_buckets; /* allocated buckets */
    uint64_t n;       /* samples recorded */
    int64_t min, max; /* exact extremes (valid when n > 0) */
    double sum;       /* sum of samples, for the mean */
} ss_hist;

/* Zero-initialised ss_hist is valid and empty; ss_hist_fini releases its buckets. */
void ss_hist_fini(ss_hist *h);

/* Bucket of a non-negative value: the value itself below 2 * 2^SUB_BITS, else its top
 * SUB_BITS + 1 significant bits and its power of two. */
static inline size_t ss_hist__bucket(uint64_t v)
{
    const uint64_t sub = (uint64_t)1 << SS_HIST_SUB_BITS;
    if (v < 2 * sub)
        return (size_t)v;
    int shift = 63 - __builtin_clzll(v) - SS_HIST_SUB_BITS;
    return (size_t)((uint64_t)(shift + 1) * sub + ((v >> shift) - sub));
}

/* Count v (>= 0) count (> 0) times into bucket i, which exists. */
static inline void ss_hist__record(ss_hist *h, size_t i, int64_t v, uint64_t count)
{
    h->counts[i] += count;
    if (!h->n || v < h->min)
        h->min = v;
    if (!h->n || v > h->max)
        h->max = v;
    h->n += count;
    h->sum += (double)v * (double)count;
}

/* ss_hist_add_n when bucket i does not exist yet: grows the buckets, then records. */
int ss_hist__grow_add(ss_hist *h, size_t i, int64_t v, uint64_t count);

/* Record value v count times (negative values count as 0). 0, or SS_ENOMEM with h unchanged.
 * Inline because replays call it once per run of equal inter-token gaps and group: only a
 * value above every bucket so far takes the call that grows them. */
static inline int ss_hist_add_n(ss_hist *h, int64_t v, uint64_t count)
{
    if (!count)
        return 0;
    if (v < 0)
        v = 0;
    size_t i = ss_hist__bucket((uint64_t)v);
    if (i >= h->n_buckets)
        return ss_hist__grow_add(h, i, v, count);
    ss_hist__record(h, i, v, count);
    return 0;
}
/* Record one value (negative values count as 0). 0, or SS_ENOMEM with h unchanged. */
static inline int ss_hist_add(ss_hist *h, int64_t v) { return ss_hist_add_n(h, v, 1); }
/* Value at quantile q in [0, 1]: the bucket holding the ceil(q*n)-th smallest sample,
 * reported at the bucket's midpoint and clamped to [min, max]. 0 when empty. */
int64_t ss_hist_quantile(const ss_hist *h, double q);
/* The samples above v (those of the buckets whose values all exceed v, exact below 2048; a
 * bucket holding v counts with its values above v, as if all its samples were there): their
 * count into *n_out, and their mean (each at its bucket's midpoint, at least v + 1) and their
 * quantile q in (0, 1] (as ss_hist_quantile ranks) into *mean_out and *quantile_out (either
 * may be NULL). Both are left untouched when no sample lies above v. Below every sample
 * (v < min) the mean is the exact one, ss_hist_mean. */
void ss_hist_above(const ss_hist *h, int64_t v, double q, uint64_t *n_out, double *mean_out,
                   int64_t *quantile_out);
static inline double ss_hist_mean(const ss_hist *h) { return h->n ? h->sum / (double)h->n : 0.0; }
/* An index kept beside an ss_hist by its owner: Fenwick (binary indexed) trees over the
 * buckets of their counts and of count x midpoint, so that ss_hist_index_above answers
 * ss_hist_above's question in O(log n) rather than a scan of the buckets. Every sample must go
 * into the histogram through ss_hist_index_add, which records it in both. Zero-initialised is
 * valid and empty; ss_hist_index_fini releases it. */
typedef struct ss_hist_index {
    uint64_t *n;   /* owned; Fenwick tree of the bucket counts, 1-based, cap + 1 entries */
    uint64_t *sum; /* owned; the same of count x midpoint (modulo 2^64) */
    size_t cap;    /* buckets covered, a power of two (0: none yet) */
} ss_hist_index;

void ss_hist_index_fini(ss_hist_index *x);
/* Record value v (negative counts as 0) into h and x, which holds h's samples. 0, or
 * SS_ENOMEM with h's samples unchanged (x may have grown, holding the same ones). */
int ss_hist_index_add(ss_hist_index *x, ss_hist *h, int64_t v);
/* ss_hist_above(h, v, q, ...), to the bit, from x, which holds h's samples (ss_hist_index_add):
 * the sums are exact integers when h's count times its largest sample stays below 2^53, as
 * the scan's doubles are then; beyond that it scans, as ss_hist_above does. */
void ss_hist_index_above(const ss_hist_index *x, const ss_hist *h, int64_t v, double q,
                         uint64_t *n_out, double *mean_out, int64_t *quantile_out);
/* Add every sample of src into dst. 0 or SS_ENOMEM (dst unchanged). */
int ss_hist_merge(ss_hist *dst, const ss_hist *src);
/* ss_hist_merge, then empty src and release its buckets; an empty dst takes src's buckets as
 * they are, without allocating. 0 or SS_ENOMEM (both unchanged). */
int ss_hist_merge_move(ss_hist *dst, ss_hist *src);

#pragma GCC visibility pop

#endif
