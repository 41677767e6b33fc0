/* Log-linear histogram of non-negative 64-bit values (latencies in ns): 1024 buckets per
 * power of two, so a reported percentile is within 0.05 % of the exact sample percentile,
 * exact below 2048. Memory grows with the largest value seen, never with the sample count,
 * which keeps a 10-million-request replay bounded. */
#ifndef SS_CORE_SS_HIST_H
#define SS_CORE_SS_HIST_H

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
/* Record one value (negative values count as 0). 0, or SS_ENOMEM with h unchanged. */
int ss_hist_add(ss_hist *h, int64_t v);
/* Record value v count times. 0, or SS_ENOMEM with h unchanged. */
int ss_hist_add_n(ss_hist *h, int64_t v, uint64_t count);
/* Value at quantile q in [0, 1]: the bucket holding the ceil(q*n)-th smallest sample,
 * reported at the bucket's midpoint and clamped to [min, max]. 0 when empty. */
int64_t ss_hist_quantile(const ss_hist *h, double q);
static inline double ss_hist_mean(const ss_hist *h) { return h->n ? h->sum / (double)h->n : 0.0; }
/* Add every sample of src into dst. 0 or SS_ENOMEM (dst unchanged). */
int ss_hist_merge(ss_hist *dst, const ss_hist *src);

#endif
