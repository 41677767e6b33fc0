/* Trace statistics for `slicesim trace stats` and the tests: request count, span, rate,
 * inter-arrival coefficient of variation, and exact nearest-rank percentiles of prompt and
 * output lengths. Unlike the readers this holds every token count in memory (8 bytes per
 * request), which is fine for a one-off summary; not for use inside a simulation. */
#include "trace/trace_int.h"

#include "core/ss_alloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Token counts of every request, grown by doubling. */
typedef struct len_vec {
    uint32_t *v;
    size_t n, cap;
} len_vec;

static int vec_push(len_vec *a, uint32_t x)
{
    if (a->n == a->cap) {
        void *p = a->v;
        if (ss_grow(&p, &a->cap, a->n + 1, sizeof *a->v))
            return SS_ENOMEM;
        a->v = p;
    }
    a->v[a->n++] = x;
    return SS_OK;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Nearest rank: the smallest value with at least p of the values at or below it. */
static uint32_t nearest_rank(const uint32_t *sorted, size_t n, double p)
{
    size_t rank = (size_t)ceil(p * (double)n);
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return sorted[rank - 1];
}

static void dist_stats(len_vec *a, trace_dist_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!a->n)
        return;
    uint64_t sum = 0;
    for (size_t i = 0; i < a->n; i++)
        sum += a->v[i];
    qsort(a->v, a->n, sizeof *a->v, cmp_u32);
    out->mean = (double)sum / (double)a->n;
    out->min = a->v[0];
    out->p50 = nearest_rank(a->v, a->n, 0.50);
    out->p90 = nearest_rank(a->v, a->n, 0.90);
    out->p99 = nearest_rank(a->v, a->n, 0.99);
    out->max = a->v[a->n - 1];
}

/* Running mean and variance of inter-arrival gaps (Welford), in seconds. */
typedef struct gap_acc {
    uint64_t n;
    double mean, m2;
} gap_acc;

static void gap_add(gap_acc *g, double x)
{
    g->n++;
    double d = x - g->mean;
    g->mean += d / (double)g->n;
    g->m2 += d * (x - g->mean);
}

/* Read every request, collecting lengths and gaps. 0 or the reader's error / SS_ENOMEM. */
static int collect(trace_reader *r, trace_stats *out, len_vec *pv, len_vec *ov, gap_acc *gaps,
                   ss_errbuf *eb)
{
    trace_rec rec;
    int rc;
    while ((rc = trace_reader_next(r, &rec, eb)) == 1) {
        if (out->count == 0)
            out->first_ns = rec.arrival_ns;
        else
            gap_add(gaps, ss_time_to_s(rec.arrival_ns - out->last_ns));
        out->last_ns = rec.arrival_ns;
        out->count++;
        if (vec_push(pv, rec.prompt_tokens) || vec_push(ov, rec.output_tokens))
            return ss_err(eb, SS_ENOMEM, "trace stats: out of memory after %llu requests",
                          (unsigned long long)out->count);
    }
    return rc;
}

int trace_stats_compute(trace_reader *r, trace_stats *out, ss_errbuf *eb)
{
    len_vec pv = {0}, ov = {0};
    gap_acc gaps = {0};
    trace_stats st;
    if (!r || !out)
        return ss_err(eb, SS_EINVAL, "trace_stats_compute: NULL argument");
    memset(&st, 0, sizeof st);
    int rc = collect(r, &st, &pv, &ov, &gaps, eb);
    if (rc == SS_OK) {
        st.span_s = ss_time_to_s(st.last_ns - st.first_ns);
        st.rate = st.span_s > 0 ? (double)st.count / st.span_s : 0;
        st.interarrival_cv = gaps.n > 1 && gaps.mean > 0
                                 ? sqrt(gaps.m2 / (double)gaps.n) / gaps.mean
                                 : 0;
        st.n_tenants = trace_reader_n_tenants(r);
        dist_stats(&pv, &st.prompt);
        dist_stats(&ov, &st.output);
        *out = st;
    }
    ss_free(pv.v);
    ss_free(ov.v);
    return rc;
}
