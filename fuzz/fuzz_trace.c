/* Fuzz target of the trace readers, built once per format (FZ_FORMAT: "native", "azure",
 * "vidur", "burstgpt" or "mooncake"). Each input is read to its end with the format forced,
 * spread off and on, then auto-detected through trace_stats_compute. Checks what trace.h
 * promises: codes, FILE:LINE messages naming the stream, sticky errors, token counts in
 * [1, TRACE_MAX_TOKENS], arrivals that never go backwards, tenant indexes with names, and
 * readable prefix-block ids. Not a test of values (tests/unit/test_trace.c does that). */
#include "fuzz.h"

#include "trace/trace.h"

#include <stdio.h>
#include <string.h>

#ifndef FZ_FORMAT
#error "build with -DFZ_FORMAT=\"native\" (or azure, vidur, burstgpt, mooncake)"
#endif

#define NAME "fuzz.trace"

/* The input as a read-only stream (fmemopen refuses a zero size on some C libraries). */
static FILE *open_input(const uint8_t *data, size_t size)
{
    FILE *f = size ? fmemopen((void *)(uintptr_t)data, size, "rb") : fopen("/dev/null", "rb");
    FZ_ASSERT(f != NULL);
    return f;
}

static void check_rec(const trace_reader *r, const trace_rec *rec, ss_time prev_ns)
{
    FZ_ASSERT(rec->prompt_tokens >= 1 && rec->prompt_tokens <= TRACE_MAX_TOKENS);
    FZ_ASSERT(rec->output_tokens >= 1 && rec->output_tokens <= TRACE_MAX_TOKENS);
    FZ_ASSERT(rec->arrival_ns >= prev_ns);
    FZ_ASSERT(rec->line >= 1);
    FZ_ASSERT(rec->tenant < trace_reader_n_tenants(r));
    FZ_ASSERT(trace_reader_tenant_name(r, rec->tenant) != NULL);
    FZ_ASSERT(rec->n_prefix_blocks <= TRACE_MAX_PREFIX_BLOCKS);
    FZ_ASSERT(rec->n_prefix_blocks == 0 || rec->prefix_blocks != NULL);
    volatile uint32_t sink = 0;
    for (uint32_t i = 0; i < rec->n_prefix_blocks; i++)
        sink ^= rec->prefix_blocks[i]; /* ASan checks every id is readable */
    (void)sink;
}

static void read_all(const uint8_t *data, size_t size, int spread)
{
    FILE *f = open_input(data, size);
    trace_reader *r = NULL;
    ss_errbuf eb = {""};
    int rc = trace_reader_open_stream(&r, f, NAME, FZ_FORMAT, &eb);
    fz_check_error(rc, &eb, NAME);
    if (rc == SS_OK) {
        FZ_ASSERT(r != NULL);
        FZ_ASSERT(!strcmp(trace_reader_format(r), FZ_FORMAT));
        FZ_ASSERT(trace_reader_set_spread(r, spread) == SS_OK);
        trace_rec rec;
        ss_time prev = INT64_MIN;
        while ((rc = trace_reader_next(r, &rec, &eb)) == 1) {
            check_rec(r, &rec, prev);
            prev = rec.arrival_ns;
        }
        fz_check_error(rc, &eb, NAME);
        if (rc < 0) { /* sticky: the same code and message again */
            ss_errbuf again = {""};
            FZ_ASSERT(trace_reader_next(r, &rec, &again) == rc);
            FZ_ASSERT(!strcmp(again.msg, eb.msg));
        }
        (void)trace_reader_digest(r);
        (void)trace_reader_n_skipped(r);
    } else {
        FZ_ASSERT(r == NULL);
    }
    trace_reader_close(&r);
    FZ_ASSERT(r == NULL);
    fclose(f);
}

static void stats_auto(const uint8_t *data, size_t size)
{
    FILE *f = open_input(data, size);
    trace_reader *r = NULL;
    ss_errbuf eb = {""};
    int rc = trace_reader_open_stream(&r, f, NAME, "auto", &eb);
    fz_check_error(rc, &eb, NAME);
    if (rc == SS_OK) {
        trace_stats st;
        rc = trace_stats_compute(r, &st, &eb);
        fz_check_error(rc, &eb, NULL);
        if (rc == SS_OK) {
            FZ_ASSERT(st.count >= 1);
            FZ_ASSERT(st.prompt.min >= 1 && st.prompt.min <= st.prompt.p50 &&
                      st.prompt.p50 <= st.prompt.p90 && st.prompt.p90 <= st.prompt.p99 &&
                      st.prompt.p99 <= st.prompt.max);
            FZ_ASSERT(st.first_ns <= st.last_ns);
        }
    }
    trace_reader_close(&r);
    fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_begin();
    read_all(data, size, 0);
    read_all(data, size, 1);
    stats_auto(data, size);
    fz_end();
    return 0;
}
