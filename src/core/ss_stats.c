/* Means and 95 % Student-t intervals over seeds (core/ss_stats.h). */
#include "core/ss_stats.h"

#include <math.h>
#include <stdio.h>

/* t(0.975, df) for df = 1..30 (any statistics table, e.g. NIST/SEMATECH e-Handbook of
 * Statistical Methods, section 1.3.6.7.2). */
static const double t975[30] = {
    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
    2.2010,  2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
    2.0796,  2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
};

double ss_t975(size_t df)
{
    if (df < 1)
        return INFINITY;
    if (df <= 30)
        return t975[df - 1];
    /* Cornish-Fisher expansion of t about the normal quantile z (Abramowitz and Stegun
     * 26.7.5); below 1e-4 of the exact value from df 31 on. */
    const double z = 1.959963984540054, v = (double)df;
    double z3 = z * z * z, z5 = z3 * z * z, z7 = z5 * z * z;
    return z + (z3 + z) / (4 * v) + (5 * z5 + 16 * z3 + 3 * z) / (96 * v * v) +
           (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * v * v * v);
}

void ss_ci95(const double *x, size_t n, ss_ci *out)
{
    *out = (ss_ci){.n = n};
    if (!n)
        return;
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += x[i];
    double mean = sum / (double)n, ss = 0;
    for (size_t i = 0; i < n; i++)
        ss += (x[i] - mean) * (x[i] - mean);
    out->mean = mean;
    out->lo = out->hi = mean;
    if (n < 2)
        return;
    out->sd = sqrt(ss / (double)(n - 1));
    double half = ss_t975(n - 1) * out->sd / sqrt((double)n);
    out->lo = mean - half;
    out->hi = mean + half;
    out->has_interval = 1;
}

void ss_ci_text(char *buf, size_t n, const ss_ci *ci, double scale, const char *fmt)
{
    char m[64], lo[64], hi[64];
    if (!fmt) /* and GCC's -O1 sanitizer builds see no null format below */
        fmt = "%g";
    snprintf(m, sizeof m, fmt, scale * ci->mean);
    snprintf(lo, sizeof lo, fmt, scale * ci->lo);
    snprintf(hi, sizeof hi, fmt, scale * ci->hi);
    if (ci->has_interval)
        snprintf(buf, n, "%s [%s, %s]", m, lo, hi);
    else
        snprintf(buf, n, "%s", m);
}

const char *ss_ci_verdict(const ss_ci *r)
{
    if (!r->has_interval)
        return "one seed";
    return r->lo > 1 ? "higher" : r->hi < 1 ? "lower" : "no difference";
}
