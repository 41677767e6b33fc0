/* Summary statistics over repeated runs (seeds): the mean with a two-sided 95 % Student-t
 * interval, and the verdict a ratio's interval supports. Not for distributions of one run's
 * requests (metrics/ and core/ss_hist.h keep those). */
#ifndef SS_CORE_SS_STATS_H
#define SS_CORE_SS_STATS_H

#include <stddef.h>

/* The mean of n values with its 95 % interval. */
typedef struct ss_ci {
    size_t n;                 /* values summarised */
    double mean;              /* their mean (0 when n == 0) */
    double sd;                /* sample standard deviation, n - 1 in the denominator (0: n < 2) */
    double lo, hi;            /* mean -/+ t(0.975, n - 1) x sd / sqrt(n); both the mean when
                                 n < 2 (no interval: has_interval 0) */
    int has_interval;         /* n >= 2 */
} ss_ci;

/* The 0.975 quantile of Student's t with df degrees of freedom (df >= 1): the half-width
 * factor of a two-sided 95 % interval. Exact to 4 decimals (a table to df 30, then the
 * Cornish-Fisher expansion). */
double ss_t975(size_t df);

/* The mean of x[0..n) and its t interval into *out (x borrowed; n may be 0). */
void ss_ci95(const double *x, size_t n, ss_ci *out);

/* "MEAN [LO, HI]" of ci, each times scale and printed with fmt (one double's conversion, such
 * as "%.4g" or "%.1f"), into buf (n bytes); "MEAN" alone without an interval. */
void ss_ci_text(char *buf, size_t n, const ss_ci *ci, double scale, const char *fmt);

/* What a ratio's interval says against 1: "higher" (lo > 1), "lower" (hi < 1), "no difference"
 * (it includes 1), or "one seed" (no interval). */
const char *ss_ci_verdict(const ss_ci *ratio);

#endif
