/* The spread option of the trace reader: requests that share one arrival time are buffered as
 * a group (with copies of their prefix blocks) and handed out with their times spread evenly
 * over the gap to the next distinct time; see trace_reader_set_spread in trace.h. The group
 * is bounded (TRACE_MAX_SPREAD_GROUP requests, TRACE_MAX_SPREAD_BLOCKS ids). Not for reading
 * or parsing lines: requests come from trace__pull. */
#include "trace/trace_int.h"

#include "core/ss_alloc.h"

#include <string.h>

/* Append rec (and a copy of its prefix blocks) to the group. */
static int push(trace_reader *r, trace__spread *sp, const trace_rec *rec)
{
    const trace_format_ops *ops = trace__ops(r);
    trace__secs t;
    if (sp->n >= TRACE_MAX_SPREAD_GROUP)
        return trace__fail(r, SS_EPARSE, rec->line, ops->time_field,
                           "more than %d requests at %s (the spread lookahead limit)",
                           TRACE_MAX_SPREAD_GROUP, trace__fmt_time(ops, &t, rec->arrival_ns));
    if (sp->n_blocks + rec->n_prefix_blocks > TRACE_MAX_SPREAD_BLOCKS)
        return trace__fail(r, SS_EPARSE, rec->line, ops->time_field,
                           "more than %u prefix blocks at %s (the spread lookahead limit)",
                           TRACE_MAX_SPREAD_BLOCKS, trace__fmt_time(ops, &t, rec->arrival_ns));
    void *recs = sp->recs, *blocks = sp->blocks;
    if (ss_grow(&recs, &sp->cap, sp->n + 1, sizeof *sp->recs))
        return trace__fail(r, SS_ENOMEM, rec->line, "spread", "out of memory");
    sp->recs = recs;
    if (rec->n_prefix_blocks &&
        ss_grow(&blocks, &sp->cap_blocks, sp->n_blocks + rec->n_prefix_blocks, sizeof(uint32_t)))
        return trace__fail(r, SS_ENOMEM, rec->line, "spread", "out of memory");
    sp->blocks = blocks;
    if (rec->n_prefix_blocks)
        memcpy(sp->blocks + sp->n_blocks, rec->prefix_blocks,
               rec->n_prefix_blocks * sizeof(uint32_t));
    sp->n_blocks += rec->n_prefix_blocks;
    sp->recs[sp->n++] = *rec;
    return SS_OK;
}

/* Point each request at its blocks (the buffer may have moved while the group grew) and, when
 * the next time is known, spread the group's times over [t, next). */
static void finish(trace__spread *sp)
{
    size_t off = 0;
    for (size_t i = 0; i < sp->n; i++) {
        trace_rec *rec = &sp->recs[i];
        rec->prefix_blocks = rec->n_prefix_blocks ? sp->blocks + off : NULL;
        off += rec->n_prefix_blocks;
    }
    if (!sp->have_ahead)
        return;
    ss_time t0 = sp->recs[0].arrival_ns, gap = sp->ahead.arrival_ns - t0;
    int64_t k = (int64_t)sp->n;
    /* t0 + gap * i / k without overflow: (gap % k) * i < k * k <= 2^32. */
    for (int64_t i = 1; i < k; i++)
        sp->recs[i].arrival_ns = t0 + gap / k * i + gap % k * i / k;
}

/* Read the next group: 1, 0 at the end, or a negative code. */
static int refill(trace_reader *r, trace__spread *sp)
{
    trace_rec rec;
    int rc = 1;
    sp->n = sp->pos = sp->n_blocks = 0;
    if (sp->have_ahead) {
        rec = sp->ahead; /* its blocks are still in the reader's buffer: nothing was read */
        sp->have_ahead = 0;
    } else {
        if (sp->eof)
            return 0;
        if ((rc = trace__pull(r, &rec)) <= 0)
            return rc;
    }
    if ((rc = push(r, sp, &rec)))
        return rc;
    while (!sp->eof) {
        if ((rc = trace__pull(r, &rec)) < 0)
            return rc;
        sp->eof = rc == 0;
        if (rc == 1 && rec.arrival_ns != sp->recs[0].arrival_ns) {
            sp->ahead = rec;
            sp->have_ahead = 1;
            break;
        }
        if (rc == 1 && (rc = push(r, sp, &rec)))
            return rc;
    }
    finish(sp);
    return 1;
}

int trace__spread_next(trace_reader *r, trace__spread *sp, trace_rec *out)
{
    if (sp->pos == sp->n) {
        int rc = refill(r, sp);
        if (rc <= 0)
            return rc;
    }
    *out = sp->recs[sp->pos++];
    return 1;
}

void trace__spread_free(trace__spread *sp)
{
    ss_free(sp->recs);
    ss_free(sp->blocks);
    memset(sp, 0, sizeof *sp);
}
