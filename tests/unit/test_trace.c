/* Trace module: the five readers on small fixtures (CRLF, BOM, blank lines, extra columns,
 * Azure 2023 and 2024 timestamps, BurstGPT tenants and skipped rows, Mooncake JSON with
 * unknown and nested keys), auto-detection, exact FILE:LINE: field messages for each kind of
 * bad input (malformed JSON included), exact decimal-to-ns conversion, the tenant limit, the
 * spread option and its limits, constant memory, allocation-failure paths, a random-input
 * robustness run, the generator (determinism, stream independence, statistics, CSV round
 * trip), statistics, and the real Azure conversation and Mooncake traces when present. */
#include "support/test_util.h"

#include "core/ss_alloc.h"
#include "core/ss_rng.h"
#include "trace/trace.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* ---- helpers ------------------------------------------------------------------------- */

/* Write len bytes (NULs allowed) to tmpdir/name and return the path (static buffer). */
static const char *write_bytes(const char *name, const char *data, size_t len)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", tu_tmpdir(), name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    return path;
}

/* Open data (as a file named "x.csv" in messages), optionally with the spread option, and
 * read every request. Returns the first error, or the number of requests (>= 0). The message
 * is left in eb. */
static int64_t read_all_opt(const char *data, size_t len, const char *format, int spread,
                            ss_errbuf *eb)
{
    const char *path = write_bytes("x.csv", data, len);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    trace_reader *r = NULL;
    trace_rec rec;
    int64_t n = 0;
    int rc = trace_reader_open_stream(&r, f, "x.csv", format, eb);
    if (rc == SS_OK)
        assert_int_equal(trace_reader_set_spread(r, spread), 0);
    if (rc == SS_OK) {
        while ((rc = trace_reader_next(r, &rec, eb)) == 1)
            n++;
        if (rc < 0) {
            /* The error is sticky: same code and message again. */
            char first[SS_ERRBUF_LEN];
            ss_errbuf eb2;
            memcpy(first, eb->msg, sizeof first);
            assert_int_equal(trace_reader_next(r, &rec, &eb2), rc);
            assert_string_equal(eb2.msg, first);
        }
    } else {
        assert_null(r);
    }
    trace_reader_close(&r);
    fclose(f);
    return rc < 0 ? rc : n;
}

static int64_t read_all_n(const char *data, size_t len, const char *format, ss_errbuf *eb)
{
    return read_all_opt(data, len, format, 0, eb);
}

/* Assert that text fails with exactly msg (or, when prefix is set, a message starting so). */
static void expect_error(const char *text, size_t len, const char *format, int want_rc,
                         const char *msg, int prefix)
{
    ss_errbuf eb = {""};
    int64_t rc = read_all_n(text, len, format, &eb);
    if (rc != want_rc || (prefix ? strncmp(eb.msg, msg, strlen(msg)) : strcmp(eb.msg, msg)))
        fail_msg("input %.60s...\n  rc %" PRId64 " (want %d)\n  got  '%s'\n  want '%s'%s", text,
                 rc, want_rc, eb.msg, msg, prefix ? "..." : "");
}

static void expect_fmt(const char *text, const char *format, const char *msg, int prefix)
{
    expect_error(text, strlen(text), format, SS_EPARSE, msg, prefix);
}

static void expect_msg(const char *text, const char *msg)
{
    expect_error(text, strlen(text), "auto", SS_EPARSE, msg, 0);
}

static void assert_near(double got, double want, double rel, const char *what)
{
    if (!(fabs(got - want) <= rel * fabs(want)))
        fail_msg("%s: got %.6g, want %.6g within %.2g %%", what, got, want, rel * 100);
}

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

#define NAT_HDR "request_id,arrival_s,tenant,prompt_tokens,output_tokens\n"

/* ---- readers ------------------------------------------------------------------------- */

/* The optional hash_ids column: Mooncake's prefix-block ids, blank-separated; empty = none. */
static void test_native_hash_ids(void **state)
{
    (void)state;
    static const char text[] = "request_id,arrival_s,tenant,prompt_tokens,output_tokens,hash_ids\n"
                               "1,0,a,1100,5,7 8  4294967295\n"
                               "2,1,a,10,5,\n";
    const char *path = write_bytes("hash.csv", text, sizeof text - 1);
    trace_reader *r = NULL;
    trace_rec a;
    ss_errbuf eb = {""};
    assert_int_equal(trace_reader_open(&r, path, "auto", &eb), 0);
    assert_string_equal(trace_reader_format(r), "native");
    assert_int_equal(trace_reader_next(r, &a, &eb), 1);
    assert_int_equal(a.n_prefix_blocks, 3);
    assert_int_equal(a.prefix_blocks[0], 7);
    assert_int_equal(a.prefix_blocks[1], 8);
    assert_int_equal(a.prefix_blocks[2], 4294967295u);
    assert_int_equal(trace_reader_next(r, &a, &eb), 1);
    assert_int_equal(a.n_prefix_blocks, 0);
    assert_null(a.prefix_blocks);
    assert_int_equal(trace_reader_next(r, &a, &eb), 0);
    trace_reader_close(&r);
    expect_msg("request_id,arrival_s,tenant,prompt_tokens,output_tokens,hash_ids\n"
               "1,0,a,10,5,3 x\n",
               "x.csv:2: hash_ids: not an integer: 'x'");
    expect_msg("request_id,arrival_s,tenant,prompt_tokens,output_tokens,hash_ids\n"
               "1,0,a,10,5,4294967296\n",
               "x.csv:2: hash_ids: must be <= 4294967295, got 4294967296");
    /* at most the blocks the prompt fills: 1,024 tokens fill 2, 1,025 fill 3 */
    expect_msg("request_id,arrival_s,tenant,prompt_tokens,output_tokens,hash_ids\n"
               "1,0,a,1024,5,1 2 3\n",
               "x.csv:2: hash_ids: 3 ids of 512-token blocks, more than prompt_tokens 1024 "
               "fills (2)");
    static const char fits[] = "request_id,arrival_s,tenant,prompt_tokens,output_tokens,hash_ids\n"
                               "1,0,a,1025,5,1 2 3\n";
    path = write_bytes("fits.csv", fits, sizeof fits - 1);
    assert_int_equal(trace_reader_open(&r, path, "auto", &eb), 0);
    assert_int_equal(trace_reader_next(r, &a, &eb), 1);
    assert_int_equal(a.n_prefix_blocks, 3);
    trace_reader_close(&r);
}

static void test_native_fixture(void **state)
{
    (void)state;
    /* BOM, CRLF, columns out of order, optional columns, blank lines, no final newline. */
    static const char text[] =
        "\xEF\xBB\xBF"
        "tenant,arrival_s,request_id,output_tokens,prompt_tokens,tier,session_id,slo_ttft_ms,"
        "slo_tbt_ms\r\n"
        "chat,0.1,7,20,100,2,99,500,2.5e1\r\n"
        "\r\n"
        "  \t \r\n"
        "batch, 0.1 ,8,1,10000000,,,,\r\n"
        "chat,1.000000001,18446744073709551615,3,4,255,18446744073709551615,0.000001,0.5";
    const char *path = write_bytes("native.csv", text, sizeof text - 1);
    trace_reader *r = NULL;
    trace_rec a, b, c, d;
    ss_errbuf eb = {""};
    assert_int_equal(trace_reader_open(&r, path, "auto", &eb), 0);
    assert_string_equal(trace_reader_format(r), "native");
    assert_int_equal(trace_reader_next(r, &a, &eb), 1);
    assert_int_equal(trace_reader_next(r, &b, &eb), 1);
    assert_int_equal(trace_reader_next(r, &c, &eb), 1);
    assert_int_equal(trace_reader_next(r, &d, &eb), 0);
    assert_int_equal(trace_reader_next(r, &d, &eb), 0);
    assert_int_equal(a.id, 7);
    assert_int_equal(a.arrival_ns, 100000000);
    assert_int_equal(a.prompt_tokens, 100);
    assert_int_equal(a.output_tokens, 20);
    assert_int_equal(a.tenant, 0);
    assert_int_equal(a.tier, 2);
    assert_int_equal(a.session_id, 99);
    assert_int_equal(a.has_slo, 3);
    assert_int_equal(a.slo_ttft_ns, 500 * SS_NS_PER_MS);
    assert_int_equal(a.slo_tbt_ns, 25 * SS_NS_PER_MS);
    assert_int_equal(a.line, 2);
    assert_int_equal(b.arrival_ns, 100000000); /* equal times are fine */
    assert_int_equal(b.tenant, 1);
    assert_int_equal(b.prompt_tokens, TRACE_MAX_TOKENS);
    assert_int_equal(b.tier, 0);
    assert_int_equal(b.session_id, 0);
    assert_int_equal(b.has_slo, 0);
    assert_int_equal(b.line, 5);
    assert_int_equal(c.arrival_ns, 1000000001);
    assert_int_equal(c.id, UINT64_MAX);
    assert_int_equal(c.session_id, UINT64_MAX);
    assert_int_equal(c.tenant, 0);
    assert_int_equal(c.tier, 255);
    assert_int_equal(c.slo_ttft_ns, 1);
    assert_int_equal(c.slo_tbt_ns, 500000);
    assert_int_equal(trace_reader_n_tenants(r), 2);
    assert_string_equal(trace_reader_tenant_name(r, 0), "chat");
    assert_string_equal(trace_reader_tenant_name(r, 1), "batch");
    assert_null(trace_reader_tenant_name(r, 2));
    assert_int_equal(trace_reader_digest(r), fnv1a(text, sizeof text - 1));
    trace_reader_close(&r);
    assert_null(r);
    trace_reader_close(&r);
    tu_assert_no_leaks();
}

static void test_azure_fixture(void **state)
{
    (void)state;
    static const char text[] = "TIMESTAMP,ContextTokens,GeneratedTokens,Extra\n"
                               "2023-11-16 18:15:46.6805900,374,44,x\n"
                               "2023-11-16 18:15:50.9951690,396,109,y\n"
                               "2023-11-16T18:15:50.995169Z,1,1,\n"
                               "2023-11-16 18:15:51+00:00,2,2,z\n"
                               "2023-11-17 00:00:00.123456789,3,3,\n"
                               "2024-02-28 23:59:59.5,4,4,\n"
                               "2024-02-29 00:00:00,4,4,\n"
                               "2024-03-01 00:00:00.25,5,5,\n";
    const ss_time t0 = (18 * 3600 + 15 * 60 + 46) * SS_NS_PER_S + 680590000;
    /* Nanoseconds since 2023-11-16 00:00:00 of the day-relative rows, minus t0. */
    const ss_time day = 86400 * SS_NS_PER_S;
    const ss_time want[] = {
        0,
        4314579000,
        4314579000,
        (18 * 3600 + 15 * 60 + 51) * SS_NS_PER_S - t0,
        day + 123456789 - t0,
        /* Nov 16 -> Feb 28 2024: 14 (Nov) + 31 + 31 + 28 = 104 days, then 23:59:59.5 */
        104 * day + 86399 * SS_NS_PER_S + 500000000 - t0,
        105 * day - t0,
        /* 2024 is a leap year: Feb 29 exists, so Mar 1 is two days after Feb 28. */
        106 * day + 250000000 - t0,
    };
    ss_errbuf eb = {""};
    trace_reader *r = NULL;
    trace_rec rec;
    const char *path = write_bytes("azure.csv", text, sizeof text - 1);
    assert_int_equal(trace_reader_open(&r, path, "auto", &eb), 0);
    assert_string_equal(trace_reader_format(r), "azure");
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        assert_int_equal(trace_reader_next(r, &rec, &eb), 1);
        assert_int_equal(rec.arrival_ns, want[i]);
        assert_int_equal(rec.id, i);
        assert_int_equal(rec.tenant, 0);
    }
    assert_int_equal(trace_reader_next(r, &rec, &eb), 0);
    assert_int_equal(trace_reader_n_tenants(r), 1);
    assert_string_equal(trace_reader_tenant_name(r, 0), "default");
    trace_reader_close(&r);
    tu_assert_no_leaks();
}

static void test_vidur_fixture(void **state)
{
    (void)state;
    static const char text[] = ",arrived_at,num_prefill_tokens,num_decode_tokens,num_total_tokens,"
                               "pd_ratio\n"
                               "0,0.0,374,44,418,8.5\n"
                               "1,1.5e-3,396,109,505,3.6\n"
                               "2,5.8926549999999995,91,16,107,5.7\n"
                               "3,5.8926549999999995,1,1,2,1\n"
                               "4,1E2,7,8,15,0.9\n";
    const ss_time want[] = {0, 1500000, 5892655000, 5892655000, 100 * SS_NS_PER_S};
    const uint32_t want_p[] = {374, 396, 91, 1, 7};
    ss_errbuf eb = {""};
    trace_reader *r = NULL;
    trace_rec rec;
    const char *path = write_bytes("vidur.csv", text, sizeof text - 1);
    assert_int_equal(trace_reader_open(&r, path, NULL, &eb), 0);
    assert_string_equal(trace_reader_format(r), "vidur");
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(trace_reader_next(r, &rec, &eb), 1);
        assert_int_equal(rec.arrival_ns, want[i]);
        assert_int_equal(rec.prompt_tokens, want_p[i]);
        assert_int_equal(rec.line, i + 2);
    }
    assert_int_equal(trace_reader_next(r, &rec, &eb), 0);
    trace_reader_close(&r);
    tu_assert_no_leaks();
}

static void test_autodetect_and_forced(void **state)
{
    (void)state;
    static const struct {
        const char *text, *want;
    } cases[] = {
        {NAT_HDR "0,0,a,1,1\n", "native"},
        {"prompt_tokens,arrival_s,output_tokens,request_id,tenant\n1,0,1,0,a\n", "native"},
        {"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,1,1\n", "azure"},
        {"GeneratedTokens,TIMESTAMP,ContextTokens\n1,2023-11-16 18:15:46,1\n", "azure"},
        {"arrived_at,num_prefill_tokens,num_decode_tokens\n0,1,1\n", "vidur"},
        {"Unnamed: 0,arrived_at,num_prefill_tokens,num_decode_tokens\n0,0,1,1\n", "vidur"},
        {"Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
         "5,ChatGPT,472,18,490,Conversation log\n",
         "burstgpt"},
        {"Response tokens,Model,Timestamp,Request tokens\n1,m,0,1\n", "burstgpt"},
        {"{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [0]}\n",
         "mooncake"},
        {"\n  {\"output_length\":1,\"input_length\":1,\"timestamp\":1}\n", "mooncake"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        trace_reader *r = NULL;
        ss_errbuf eb = {""};
        const char *path = write_bytes("d.csv", cases[i].text, strlen(cases[i].text));
        assert_int_equal(trace_reader_open(&r, path, "auto", &eb), 0);
        assert_string_equal(trace_reader_format(r), cases[i].want);
        trace_reader_close(&r);
        /* Forcing the right format works too; and every format name is known. */
        assert_int_equal(trace_reader_open(&r, path, cases[i].want, &eb), 0);
        trace_reader_close(&r);
    }
    int n = 0;
    for (; trace_format_names[n]; n++)
        ;
    assert_int_equal(n, 5);
    ss_errbuf eb = {""};
    /* A forced format that does not fit the header names the offending column. */
    expect_fmt(NAT_HDR "0,0,a,1,1\n", "azure", "x.csv:1: header: missing column TIMESTAMP", 0);
    expect_fmt("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,1,1\n", "native",
               "x.csv:1: header: unknown column 'TIMESTAMP'", 1);
    /* Unknown format names are refused before the file is touched, listing the known ones. */
    trace_reader *r = NULL;
    assert_int_equal(trace_reader_open(&r, "/nonexistent/t.csv", "csv", &eb), SS_ENOTFOUND);
    assert_string_equal(eb.msg, "/nonexistent/t.csv: format: unknown format 'csv' (known: auto, "
                                "native, azure, vidur, burstgpt, mooncake)");
    assert_null(r);
    assert_int_equal(trace_reader_open(&r, "/nonexistent/t.csv", "auto", &eb), SS_EIO);
    assert_non_null(strstr(eb.msg, "/nonexistent/t.csv: cannot open"));
    tu_assert_no_leaks();
}

static void test_bad_input_messages(void **state)
{
    (void)state;
    expect_error("", 0, "auto", SS_EPARSE, "x.csv:1: header: file is empty", 0);
    expect_msg("\n\r\n  \n", "x.csv:1: header: file is empty");
    expect_msg(NAT_HDR, "x.csv:2: trace: no requests after the header");
    expect_msg(NAT_HDR "\n\n", "x.csv:4: trace: no requests after the header");
    expect_msg("request_id,arrival_s,tenant,prompt_tokens\n0,0,a,1\n",
               "x.csv:1: header: missing column output_tokens");
    expect_fmt("request_id,arrival_s,tenant,prompt_tokens,output_tokns\n0,0,a,1,1\n", "auto",
               "x.csv:1: header: unknown column 'output_tokns' (native columns:", 1);
    expect_msg("request_id,arrival_s,tenant,prompt_tokens,output_tokens,tenant\n",
               "x.csv:1: header: duplicate column 'tenant'");
    expect_fmt("a,b,c\n1,2,3\n", "auto", "x.csv:1: header: not a known trace header: 'a,b,c'", 1);
    expect_msg(NAT_HDR "0,1,a,1,1\n1,2,a,abc,1\n", "x.csv:3: prompt_tokens: not an integer: 'abc'");
    expect_msg(NAT_HDR "0,4.25,a,1,1\n1,3.5,a,1,1\n",
               "x.csv:3: arrival_s: goes backwards (3.5 < 4.25); " TRACE_UNSORTED_HINT);
    expect_msg(NAT_HDR "0,0,a,1,1\n\n1,0,a,1,-3\n", "x.csv:4: output_tokens: must be >= 1, got -3");
    expect_msg(NAT_HDR "0,0,a,1,0\n", "x.csv:2: output_tokens: must be >= 1, got 0");
    expect_msg(NAT_HDR "0,0,a,10000001,1\n",
               "x.csv:2: prompt_tokens: must be <= 10000000, got 10000001");
    expect_msg(NAT_HDR "0,0,a,99999999999999999999999999,1\n",
               "x.csv:2: prompt_tokens: must be <= 10000000, got 99999999999999999999999999");
    expect_msg(NAT_HDR "0,0,a,1.5,1\n", "x.csv:2: prompt_tokens: not an integer: '1.5'");
    expect_msg(NAT_HDR "0,0,a,,1\n", "x.csv:2: prompt_tokens: empty field");
    expect_msg(NAT_HDR "0,0,a,1\n", "x.csv:2: line: expected 5 fields, got 4");
    expect_msg(NAT_HDR "0,0,a,1,1,\n", "x.csv:2: line: expected 5 fields, got 6");
    expect_msg(NAT_HDR "0,-1,a,1,1\n", "x.csv:2: arrival_s: must be >= 0, got -1");
    expect_msg(NAT_HDR "0,1e999999,a,1,1\n",
               "x.csv:2: arrival_s: out of range [0, 9.2e9] seconds: '1e999999'");
    expect_msg(NAT_HDR "0,1e10,a,1,1\n",
               "x.csv:2: arrival_s: out of range [0, 9.2e9] seconds: '1e10'");
    expect_msg(NAT_HDR "0,nan,a,1,1\n", "x.csv:2: arrival_s: not a number of seconds: 'nan'");
    expect_msg(NAT_HDR "-1,0,a,1,1\n", "x.csv:2: request_id: must be >= 0, got -1");
    expect_msg(NAT_HDR "18446744073709551616,0,a,1,1\n",
               "x.csv:2: request_id: must be <= 18446744073709551615, got 18446744073709551616");
    expect_msg(NAT_HDR "0,0,,1,1\n", "x.csv:2: tenant: empty field");
    expect_msg("request_id,arrival_s,tenant,prompt_tokens,output_tokens,tier\n0,0,a,1,1,256\n",
               "x.csv:2: tier: must be <= 255, got 256");
    expect_msg("request_id,arrival_s,tenant,prompt_tokens,output_tokens,slo_ttft_ms\n"
               "0,0,a,1,1,0\n",
               "x.csv:2: slo_ttft_ms: must be > 0, got 0");
    expect_msg("request_id,arrival_s,tenant,prompt_tokens,output_tokens,slo_tbt_ms\n"
               "0,0,a,1,1,fast\n",
               "x.csv:2: slo_tbt_ms: not a number of milliseconds: 'fast'");
    expect_msg("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,1,1\n"
               "2023-11-16 18:15:45,1,1\n",
               "x.csv:3: TIMESTAMP: goes backwards (-1.68059 < 0); " TRACE_UNSORTED_HINT);
    expect_msg("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-02-29 00:00:00,1,1\n",
               "x.csv:2: TIMESTAMP: not a timestamp (want YYYY-MM-DD HH:MM:SS[.fffffff]): "
               "'2023-02-29 00:00:00'");
    expect_msg("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-01-01 00:00:00.1234567890,1,1\n",
               "x.csv:2: TIMESTAMP: not a timestamp (want YYYY-MM-DD HH:MM:SS[.fffffff]): "
               "'2023-01-01 00:00:00.1234567890'");
    expect_msg("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-01-01 00:00:00.,1,1\n",
               "x.csv:2: TIMESTAMP: not a timestamp (want YYYY-MM-DD HH:MM:SS[.fffffff]): "
               "'2023-01-01 00:00:00.'");
    expect_msg("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-01-01 00:00:00+01:00,1,1\n",
               "x.csv:2: TIMESTAMP: not a timestamp (want YYYY-MM-DD HH:MM:SS[.fffffff]): "
               "'2023-01-01 00:00:00+01:00'");
    expect_msg("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-01-01 00:00:00,0,1\n",
               "x.csv:2: ContextTokens: must be >= 1, got 0");
    expect_msg("num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n1,2,3,2\n",
               "x.csv:1: header: missing column arrived_at");
    expect_msg("arrived_at,num_prefill_tokens,num_decode_tokens\n2,1,1\n1,1,1\n",
               "x.csv:3: arrived_at: goes backwards (1 < 2); " TRACE_UNSORTED_HINT);
    expect_msg("arrived_at,num_prefill_tokens,num_decode_tokens\n0,1,x\n",
               "x.csv:2: num_decode_tokens: not an integer: 'x'");
    tu_assert_no_leaks();
}

/* Line-length limit, NUL bytes, many commas, long and odd field values. */
static void test_hostile_lines(void **state)
{
    (void)state;
    static char buf[2 * TRACE_MAX_LINE + 1000000 + 256];
    const size_t cap = sizeof buf;
    ss_errbuf eb = {""};
    /* Exactly TRACE_MAX_LINE bytes (trailing blanks are trimmed) is accepted, also with CRLF. */
    size_t h = strlen(NAT_HDR);
    memcpy(buf, NAT_HDR "0,0,a,1,1", h + 9);
    memset(buf + h + 9, ' ', TRACE_MAX_LINE - 9);
    memcpy(buf + h + TRACE_MAX_LINE, "\r\n", 2);
    assert_int_equal(read_all_n(buf, h + TRACE_MAX_LINE + 2, "auto", &eb), 1);
    /* One more byte is too long: reported on the right line, in either line-end style. */
    memset(buf + h + 9, ' ', TRACE_MAX_LINE - 8);
    memcpy(buf + h + TRACE_MAX_LINE + 1, "\r\n", 2);
    expect_error(buf, h + TRACE_MAX_LINE + 3, "auto", SS_EPARSE,
                 "x.csv:2: line: longer than 262144 bytes", 0);
    expect_error(buf, h + TRACE_MAX_LINE + 1, "auto", SS_EPARSE,
                 "x.csv:2: line: longer than 262144 bytes", 0);
    /* A million commas on one line. */
    memcpy(buf, NAT_HDR, h);
    memset(buf + h, ',', 1000000);
    expect_error(buf, h + 1000000, "auto", SS_EPARSE, "x.csv:2: line: longer than 262144 bytes", 0);
    /* 60000 commas fit in a line: wrong field count. */
    memset(buf + h, ',', 60000);
    buf[h + 60000] = '\n';
    expect_error(buf, h + 60001, "auto", SS_EPARSE, "x.csv:2: line: expected 5 fields, got 60001",
                 0);
    /* The same in the header. */
    memset(buf, ',', 60000);
    expect_error(buf, 60000, "auto", SS_EPARSE, "x.csv:1: header: more than 64 columns", 0);
    /* NUL bytes. */
    static const char nul[] = NAT_HDR "0,0,a\0b,1,1\n";
    expect_error(nul, sizeof nul - 1, "auto", SS_EPARSE, "x.csv:2: line: contains a NUL byte", 0);
    /* A 300-byte tenant name; a huge number; non-ASCII bytes are escaped in messages. */
    int n = snprintf(buf, cap, NAT_HDR "0,0,%0300d,1,1\n", 7);
    expect_error(buf, (size_t)n, "auto", SS_EPARSE, "x.csv:2: tenant: name longer than 255 bytes",
                 0);
    expect_msg(NAT_HDR "0,0,a,\xff\x01,1\n",
               "x.csv:2: prompt_tokens: not an integer: '\\xff\\x01'");
    memcpy(buf, NAT_HDR "0,0,a,", h + 6);
    memset(buf + h + 6, '9', 200);
    memcpy(buf + h + 206, ",1\n", 3);
    expect_error(buf, h + 209, "auto", SS_EPARSE,
                 "x.csv:2: prompt_tokens: must be <= 10000000, got 99999999999999999999", 1);
    expect_msg(NAT_HDR "0,0,a,1e3,1\n", "x.csv:2: prompt_tokens: not an integer: '1e3'");
    tu_assert_no_leaks();
}

/* Random bytes and random mutations of valid files, every format: no crash, sane codes. */
static void test_random_inputs_never_crash(void **state)
{
    (void)state;
    static const char *const seeds[] = {
        NAT_HDR "0,0.5,a,10,20\n1,0.75,b,3,4\n",
        "request_id,arrival_s,tenant,prompt_tokens,output_tokens,tier,session_id,slo_ttft_ms,"
        "slo_tbt_ms\n0,1,t,1,1,1,1,1,1\n",
        "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"
        "2023-11-16 18:15:50.9951690,396,109\n",
        "arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,374,44\n4.3e0,396,109\n",
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
        "5,ChatGPT,472,18,490,Conversation log\n45,GPT-4,1087,0,1087,API log\n",
        "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 6, \"hash_ids\": [0, 1]}\n"
        "{\"x\": [{\"y\": \"a\\u00e9\"}, null, true], \"timestamp\": 0, \"input_length\": 2,"
        " \"output_length\": 1}\n",
    };
    static const char *const formats[] = {"auto", "native", "azure", "vidur", "burstgpt",
                                          "mooncake"};
    static const char alphabet[] = ",,,\n\r.-+eE0123456789 :TZ\"\0\xff{}[]\\u";
    const size_t n_seeds = sizeof seeds / sizeof *seeds;
    char buf[512];
    ss_rng rng;
    ss_rng_seed(&rng, 1234, 99);
    for (int it = 0; it < 6000; it++) {
        const char *seed = seeds[(size_t)it % n_seeds];
        size_t len = strlen(seed);
        memcpy(buf, seed, len);
        int n_mut = 1 + (int)ss_rng_below(&rng, 8);
        for (int k = 0; k < n_mut; k++) {
            size_t at = ss_rng_below(&rng, len + 1);
            char c = alphabet[ss_rng_below(&rng, sizeof alphabet - 1)];
            if (ss_rng_below(&rng, 2) && len < sizeof buf - 1) {
                memmove(buf + at + 1, buf + at, len - at);
                len++;
            } else if (at == len) {
                continue;
            }
            buf[at] = c;
        }
        if (it % 10 == 0) /* pure noise */
            for (size_t i = 0; i < len; i++)
                buf[i] = alphabet[ss_rng_below(&rng, sizeof alphabet - 1)];
        ss_errbuf eb = {""};
        int64_t rc = read_all_opt(buf, len, formats[ss_rng_below(&rng, 6)],
                                  (int)ss_rng_below(&rng, 2), &eb);
        assert_true(rc >= 0 || rc == SS_EPARSE);
        if (rc < 0) {
            assert_non_null(strchr(eb.msg, ':'));
            assert_null(strchr(eb.msg, '\n'));
        }
    }
    tu_assert_no_leaks();
}

static void test_tenant_limit(void **state)
{
    (void)state;
    size_t cap = 64 + (size_t)(TRACE_MAX_TENANTS + 2) * 32;
    char *buf = malloc(cap);
    assert_non_null(buf);
    size_t len = (size_t)snprintf(buf, cap, NAT_HDR);
    for (int i = 0; i <= TRACE_MAX_TENANTS; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%d,0,t%d,1,1\n", i, i);
    ss_errbuf eb = {""};
    char want[128];
    snprintf(want, sizeof want, "x.csv:%d: tenant: more than %d distinct tenants",
             TRACE_MAX_TENANTS + 2, TRACE_MAX_TENANTS);
    expect_error(buf, len, "native", SS_EPARSE, want, 0);
    /* Exactly the limit is fine, and names map back to indexes. */
    trace_reader *r = NULL;
    trace_rec rec;
    const char *path = write_bytes("tenants.csv", buf, len);
    assert_int_equal(trace_reader_open(&r, path, "auto", &eb), 0);
    for (int i = 0; i < TRACE_MAX_TENANTS; i++) {
        assert_int_equal(trace_reader_next(r, &rec, &eb), 1);
        assert_int_equal(rec.tenant, i);
    }
    assert_int_equal(trace_reader_n_tenants(r), TRACE_MAX_TENANTS);
    assert_string_equal(trace_reader_tenant_name(r, TRACE_MAX_TENANTS - 1), "t65534");
    trace_reader_close(&r);
    free(buf);
    tu_assert_no_leaks();
}

/* Memory does not grow with trace length: after the first request, live bytes stay put. */
static void test_constant_memory(void **state)
{
    (void)state;
    trace_gen_spec s = {.seed = 5, .n_requests = 100000, .rate = 100, .cv = 1};
    ss_errbuf eb = {""};
    assert_int_equal(trace_len_dist_parse(&s.prompt, "uniform:1:5000", &eb), 0);
    assert_int_equal(trace_len_dist_parse(&s.output, "fixed:3", &eb), 0);
    char path[1024];
    snprintf(path, sizeof path, "%s/long.csv", tu_tmpdir());
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(trace_gen_write_csv(&s, f, NULL, &eb), 0);
    assert_int_equal(fclose(f), 0);
    trace_reader *r = NULL;
    trace_rec rec;
    assert_int_equal(trace_reader_open(&r, path, "auto", &eb), 0);
    assert_int_equal(trace_reader_next(r, &rec, &eb), 1);
    size_t live = ss_alloc_live_bytes();
    uint64_t n_allocs = ss_alloc_count();
    uint64_t n = 1;
    while (trace_reader_next(r, &rec, &eb) == 1)
        n++;
    assert_int_equal(n, 100000);
    assert_int_equal(ss_alloc_live_bytes(), live);
    assert_int_equal(ss_alloc_count(), n_allocs);
    trace_reader_close(&r);
    tu_assert_no_leaks();
}

/* Every allocation on the open / read / stats path may fail: SS_ENOMEM or success, no leak. */
static void test_alloc_failures(void **state)
{
    (void)state;
    char text[4096];
    size_t len = (size_t)snprintf(text, sizeof text, NAT_HDR);
    for (int i = 0; i < 40; i++) /* 40 tenants: several table and index growths */
        len += (size_t)snprintf(text + len, sizeof text - len, "%d,%d,t%d,1,1\n", i, i, i);
    const char *path = write_bytes("oom.csv", text, len);
    int n_ok = 0;
    for (uint64_t n = 1; n < 1000; n++) {
        trace_reader *r = NULL;
        trace_stats st;
        ss_errbuf eb = {""};
        uint64_t before = ss_alloc_count();
        ss_alloc_fail_after(n);
        int rc = trace_reader_open(&r, path, "auto", &eb);
        if (rc == SS_OK) {
            rc = trace_stats_compute(r, &st, &eb);
            trace_reader_close(&r);
        }
        ss_alloc_fail_after(0);
        uint64_t used = ss_alloc_count() - before;
        tu_assert_no_leaks();
        if (rc == SS_OK) {
            /* Success means the injected failure was never reached (a swallowed failure
             * would show as success after n or more allocations): every path is covered. */
            assert_true(used < n);
            assert_int_equal(st.count, 40);
            assert_int_equal(st.n_tenants, 40);
            n_ok = 1;
            break;
        } else {
            assert_int_equal(rc, SS_ENOMEM);
            assert_non_null(strstr(eb.msg, "out of memory"));
        }
    }
    assert_true(n_ok);
    /* The generator's one allocation. */
    trace_gen_spec s = {.seed = 1, .n_requests = 3, .rate = 1, .cv = 1};
    ss_errbuf eb = {""};
    assert_int_equal(trace_len_dist_parse(&s.prompt, "fixed:5", &eb), 0);
    s.output = s.prompt;
    trace_gen *g = NULL;
    ss_alloc_fail_after(1);
    assert_int_equal(trace_gen_create(&g, &s, &eb), SS_ENOMEM);
    ss_alloc_fail_after(0);
    assert_null(g);
    tu_assert_no_leaks();
}

/* The ids of the longest prompt (TRACE_MAX_TOKENS in 512-token blocks: 19,532) fit on one line
 * even at ten digits each (the 64 KiB line limit stopped near 8,000); more than
 * TRACE_MAX_PREFIX_BLOCKS ids are refused by count while the line is read. */
static void test_mooncake_max_hash_ids(void **state)
{
    (void)state;
    size_t cap = 16 * (TRACE_MAX_PREFIX_BLOCKS + 2) + 256, len = 0;
    char *line = malloc(cap);
    assert_non_null(line);
    int most = (TRACE_MAX_TOKENS + TRACE_PREFIX_BLOCK_TOKENS - 1) / TRACE_PREFIX_BLOCK_TOKENS;
    assert_int_equal(most, 19532);
    assert_true(most <= TRACE_MAX_PREFIX_BLOCKS);
    for (int extra = 0; extra < 2; extra++) {
        int n = extra ? TRACE_MAX_PREFIX_BLOCKS + 1 : most;
        len = (size_t)snprintf(line, cap, "{\"timestamp\": 0, \"input_length\": 10000000, "
                               "\"output_length\": 1, \"hash_ids\": [");
        for (int i = 0; i < n; i++)
            len += (size_t)snprintf(line + len, cap - len, "%s%u", i ? ", " : "",
                                    4000000000u + (unsigned)i);
        len += (size_t)snprintf(line + len, cap - len, "]}\n");
        const char *path = write_bytes("ids.jsonl", line, len);
        trace_reader *r = NULL;
        trace_rec rec;
        ss_errbuf eb = {""};
        int rc = trace_reader_open(&r, path, "auto", &eb);
        if (rc == SS_OK)
            rc = trace_reader_next(r, &rec, &eb);
        if (!extra) {
            if (rc != 1)
                fail_msg("%d ids on a %zu-byte line: %s", n, len, eb.msg);
            assert_int_equal(rec.n_prefix_blocks, most);
            assert_int_equal(rec.prefix_blocks[n - 1], 4000000000u + (unsigned)n - 1);
        } else {
            assert_int_equal(rc, SS_EPARSE);
            assert_non_null(strstr(eb.msg, "hash_ids: more than 20000 ids"));
        }
        trace_reader_close(&r);
    }
    free(line);
    tu_assert_no_leaks();
}

/* ---- sorting ------------------------------------------------------------------------- */

/* Open text with trace_reader_set_sort and return the requests read (at most max). */
static int read_sorted(const char *text, trace_rec *out, int max, int *n_out, ss_errbuf *eb)
{
    trace_reader *r = NULL;
    int rc = trace_reader_open(&r, write_bytes("s.csv", text, strlen(text)), "auto", eb);
    if (rc == SS_OK)
        assert_int_equal(trace_reader_set_sort(r, 1), 0);
    int n = 0;
    trace_rec rec;
    while (rc == SS_OK && (rc = trace_reader_next(r, &rec, eb)) == 1) {
        rc = SS_OK;
        assert_true(n < max);
        out[n] = rec;
        if (rec.n_prefix_blocks) /* borrowed: checked now */
            assert_int_equal(rec.prefix_blocks[0], 100 + rec.prompt_tokens);
        n++;
    }
    if (r) /* set_sort only before the first request */
        assert_int_equal(trace_reader_set_sort(r, 1), SS_EINVAL);
    trace_reader_close(&r);
    *n_out = n;
    return rc;
}

/* An unsorted trace read with sort: every request, in arrival order, equal arrivals in file
 * order, prefix blocks kept with their request; Azure's first-row rebase moved to the
 * earliest request; a bad row anywhere is still an error; allocation failures are clean. */
static void test_sort(void **state)
{
    (void)state;
    trace_rec recs[8];
    int n;
    ss_errbuf eb = {""};
    assert_int_equal(read_sorted(NAT_HDR "0,5,a,10,1\n1,1,a,20,1\n2,3,a,30,1\n3,1,b,40,1\n"
                                 "4,0.5,a,50,1\n", recs, 8, &n, &eb), 0);
    assert_int_equal(n, 5);
    static const uint32_t want_prompt[] = {50, 20, 40, 30, 10};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(recs[i].prompt_tokens, want_prompt[i]);
        assert_true(i == 0 || recs[i].arrival_ns >= recs[i - 1].arrival_ns);
    }
    assert_int_equal(recs[1].line, 3); /* equal arrivals (1 s): file order, lines kept */
    assert_int_equal(recs[2].line, 5);
    assert_int_equal(recs[4].arrival_ns, 5000000000);

    /* Mooncake: each request keeps its own hash ids (checked while reading). */
    assert_int_equal(read_sorted("{\"timestamp\": 9, \"input_length\": 600, \"output_length\": 1, "
                                 "\"hash_ids\": [700, 7]}\n"
                                 "{\"timestamp\": 2, \"input_length\": 2, \"output_length\": 1, "
                                 "\"hash_ids\": [102]}\n", recs, 8, &n, &eb), 0);
    assert_int_equal(n, 2);
    assert_true(recs[0].prompt_tokens == 2 && recs[0].n_prefix_blocks == 1);
    assert_true(recs[1].prompt_tokens == 600 && recs[1].n_prefix_blocks == 2);

    /* Azure: the first row is the zero of time; sorted, the earliest request is. */
    assert_int_equal(read_sorted("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                 "2023-11-16 18:15:50.0,10,1\n2023-11-16 18:15:46.5,20,1\n",
                                 recs, 8, &n, &eb), 0);
    assert_int_equal(n, 2);
    assert_true(recs[0].prompt_tokens == 20 && recs[0].arrival_ns == 0);
    assert_int_equal(recs[1].arrival_ns, 3500000000);

    /* A malformed row after the disorder is still reported, with its line. */
    assert_int_equal(read_sorted(NAT_HDR "0,5,a,10,1\n1,1,a,20,1\n2,3,a,x,1\n", recs, 8, &n,
                                 &eb), SS_EPARSE);
    assert_string_equal(strstr(eb.msg, "s.csv:"), "s.csv:4: prompt_tokens: not an integer: 'x'");
    tu_assert_no_leaks();

    /* Out of memory while holding the trace: SS_ENOMEM, nothing leaked. */
    char text[8192];
    size_t len = (size_t)snprintf(text, sizeof text, NAT_HDR);
    for (int i = 0; i < 200; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, "%d,%d,a,1,1\n", i, 200 - i);
    const char *path = write_bytes("oom.csv", text, len);
    int n_ok = 0;
    for (uint64_t k = 1; k < 200 && !n_ok; k++) {
        trace_reader *r = NULL;
        trace_stats st;
        ss_alloc_fail_after(k);
        int rc = trace_reader_open(&r, path, "auto", &eb);
        if (rc == SS_OK && (rc = trace_reader_set_sort(r, 1)) == SS_OK)
            rc = trace_stats_compute(r, &st, &eb);
        trace_reader_close(&r);
        ss_alloc_fail_after(0);
        tu_assert_no_leaks();
        if (rc == SS_OK) {
            assert_int_equal(st.count, 200);
            n_ok = 1;
        } else if (rc != SS_ENOMEM || !strstr(eb.msg, "out of memory")) {
            fail_msg("allocation %" PRIu64 " failing: rc %d: %s", k, rc, eb.msg);
        }
    }
    assert_true(n_ok);
}

/* ---- gzip input ---------------------------------------------------------------------- */

/* data[0..len) as one gzip member (malloc'd, *out_len bytes). */
static unsigned char *gzip_bytes(const char *data, size_t len, size_t *out_len)
{
    z_stream z = {0};
    assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&z, (uLong)len);
    unsigned char *out = malloc(cap);
    assert_non_null(out);
    z.next_in = (unsigned char *)(uintptr_t)data;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    *out_len = cap - z.avail_out;
    deflateEnd(&z);
    return out;
}

/* Read path with trace_reader_open: count, digest and the sum of arrivals and tokens, or the
 * error code with its message in eb. */
typedef struct read_sum {
    int64_t n;
    uint64_t digest, arrivals, tokens;
} read_sum;

static int read_path(const char *path, read_sum *sum, ss_errbuf *eb)
{
    trace_reader *r = NULL;
    trace_rec rec;
    memset(sum, 0, sizeof *sum);
    int rc = trace_reader_open(&r, path, "auto", eb);
    while (rc == SS_OK) {
        if ((rc = trace_reader_next(r, &rec, eb)) != 1)
            break;
        rc = SS_OK;
        sum->n++;
        sum->arrivals += (uint64_t)rec.arrival_ns;
        sum->tokens += rec.prompt_tokens * 7u + rec.output_tokens;
    }
    if (r)
        sum->digest = trace_reader_digest(r);
    trace_reader_close(&r);
    return rc;
}

/* A gzip-compressed trace reads as the plain one, whatever its name, streaming (lines cross
 * the reader's 64 KiB chunks), also as several members one after another (cat a.gz b.gz);
 * truncated or corrupt data is an error with its line; allocation failures are clean. */
static void test_gzip(void **state)
{
    (void)state;
    size_t cap = 40000 * 40, len = (size_t)snprintf(NULL, 0, NAT_HDR);
    char *text = malloc(cap);
    assert_non_null(text);
    memcpy(text, NAT_HDR, len);
    for (int i = 0; i < 40000; i++)
        len += (size_t)snprintf(text + len, cap - len, "%d,%d.%03d,t%d,%d,%d\n", i, i / 10,
                                i % 1000, i % 3, 1 + i % 997, 1 + i % 101);
    read_sum plain, gz;
    ss_errbuf eb = {""};
    if (read_path(write_bytes("t.csv", text, len), &plain, &eb))
        fail_msg("plain: %s", eb.msg);
    assert_int_equal(plain.n, 40000);

    size_t zlen;
    unsigned char *z = gzip_bytes(text, len, &zlen);
    assert_true(zlen < len / 2);
    const char *path = write_bytes("t.csv", (const char *)z, zlen); /* no .gz needed */
    if (read_path(path, &gz, &eb))
        fail_msg("gzip: %s", eb.msg);
    assert_memory_equal(&gz, &plain, sizeof gz);

    /* Two members, split in the middle of a line. */
    size_t half = len / 2, z1, z2;
    unsigned char *a = gzip_bytes(text, half, &z1), *b = gzip_bytes(text + half, len - half, &z2);
    unsigned char *ab = malloc(z1 + z2);
    assert_non_null(ab);
    memcpy(ab, a, z1);
    memcpy(ab + z1, b, z2);
    assert_int_equal(read_path(write_bytes("ab.csv", (const char *)ab, z1 + z2), &gz, &eb), 0);
    assert_memory_equal(&gz, &plain, sizeof gz);

    /* Truncated, and corrupt: errors with the line reached, never a silent short trace. */
    assert_int_equal(read_path(write_bytes("cut.csv", (const char *)z, zlen - 100), &gz, &eb),
                     SS_EPARSE);
    assert_non_null(strstr(eb.msg, ": gzip: truncated file (the compressed data ends early)"));
    assert_true(!strncmp(eb.msg, "/", 1) && strstr(eb.msg, "cut.csv:"));
    z[zlen - 8] ^= 0x55; /* the CRC-32 of the member: every line parses, the check fails */
    assert_int_equal(read_path(write_bytes("bad.csv", (const char *)z, zlen), &gz, &eb),
                     SS_EPARSE);
    if (!strstr(eb.msg, ": gzip: corrupt data ("))
        fail_msg("corrupt: %s", eb.msg);

    /* Allocation failures while opening and reading a small gzip trace. */
    size_t cut = 2000;
    while (text[cut - 1] != '\n')
        cut--;
    unsigned char *small = gzip_bytes(text, cut, &zlen);
    path = write_bytes("small.csv.gz", (const char *)small, zlen);
    int n_ok = 0;
    for (uint64_t n = 1; n < 100 && !n_ok; n++) {
        uint64_t before = ss_alloc_count();
        ss_alloc_fail_after(n);
        int rc = read_path(path, &gz, &eb);
        ss_alloc_fail_after(0);
        tu_assert_no_leaks();
        if (rc == SS_OK) {
            assert_true(ss_alloc_count() - before < n);
            n_ok = 1;
        } else {
            if (rc != SS_ENOMEM || !strstr(eb.msg, "out of memory"))
                fail_msg("allocation %" PRIu64 " failing: rc %d: %s", n, rc, eb.msg);
        }
    }
    assert_true(n_ok);
    free(small);
    free(ab);
    free(a);
    free(b);
    free(z);
    free(text);
    tu_assert_no_leaks();
}

/* ---- statistics ---------------------------------------------------------------------- */

static void test_stats_small(void **state)
{
    (void)state;
    char text[8192];
    size_t len = (size_t)snprintf(text, sizeof text, NAT_HDR);
    /* 100 requests, 0.5 s apart; prompt 100..1 (reverse order), output 1..100. */
    for (int i = 0; i < 100; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, "%d,%d.5,%s,%d,%d\n", i, i + 10,
                                i % 3 ? "a" : "b", 100 - i, i + 1);
    const char *path = write_bytes("stats.csv", text, len);
    trace_reader *r = NULL;
    trace_stats st;
    ss_errbuf eb = {""};
    assert_int_equal(trace_reader_open(&r, path, "auto", &eb), 0);
    assert_int_equal(trace_stats_compute(r, &st, &eb), 0);
    assert_int_equal(st.count, 100);
    assert_int_equal(st.first_ns, 10500000000);
    assert_int_equal(st.last_ns, 109500000000);
    assert_near(st.span_s, 99, 1e-12, "span");
    assert_near(st.rate, 100.0 / 99, 1e-12, "rate");
    assert_true(st.interarrival_cv < 1e-9); /* equal gaps */
    assert_int_equal(st.n_tenants, 2);
    assert_near(st.prompt.mean, 50.5, 1e-12, "prompt mean");
    assert_int_equal(st.prompt.min, 1);
    assert_int_equal(st.prompt.p50, 50);
    assert_int_equal(st.prompt.p90, 90);
    assert_int_equal(st.prompt.p99, 99);
    assert_int_equal(st.prompt.max, 100);
    assert_int_equal(st.output.p50, 50);
    assert_int_equal(trace_reader_digest(r), fnv1a(text, len));
    trace_reader_close(&r);
    tu_assert_no_leaks();
}

static void test_real_azure_conv(void **state)
{
    (void)state;
    const char *path = tu_shared_path("traces/azure-llm-2023/AzureLLMInferenceTrace_conv.csv");
    if (!path)
        skip();
    trace_reader *r = NULL;
    trace_stats st;
    ss_errbuf eb = {""};
    int rc = trace_reader_open(&r, path, "auto", &eb);
    if (rc == SS_OK)
        rc = trace_stats_compute(r, &st, &eb);
    if (rc)
        fail_msg("%s", eb.msg);
    assert_string_equal(trace_reader_format(r), "azure");
    assert_int_equal(st.count, 19366);
    assert_true(fabs(st.prompt.mean - 1154.70) < 0.01);
    assert_int_equal(st.prompt.p50, 1020);
    assert_int_equal(st.prompt.p99, 4142);
    assert_true(fabs(st.output.mean - 211.13) < 0.01);
    assert_int_equal(st.output.p50, 129);
    assert_int_equal(st.output.p99, 601);
    assert_true(fabs(st.span_s - 3501.7) < 0.1);
    assert_int_equal(st.first_ns, 0);
    trace_reader_close(&r);
    /* The first two rows: 18:15:46.6805900 and 18:15:50.9951690. */
    trace_rec a, b;
    assert_int_equal(trace_reader_open(&r, path, "azure", &eb), 0);
    assert_int_equal(trace_reader_next(r, &a, &eb), 1);
    assert_int_equal(trace_reader_next(r, &b, &eb), 1);
    assert_int_equal(b.arrival_ns - a.arrival_ns, 4314579000);
    trace_reader_close(&r);
    tu_assert_no_leaks();
}

static void test_real_vidur_lengths_only(void **state)
{
    (void)state;
    const char *path =
        tu_shared_path("traces/vidur/arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv");
    if (!path)
        skip();
    trace_reader *r = NULL;
    ss_errbuf eb = {""};
    assert_int_equal(trace_reader_open(&r, path, "auto", &eb), SS_EPARSE);
    const char *tail = ":1: header: missing column arrived_at";
    assert_true(strlen(eb.msg) > strlen(tail));
    assert_string_equal(eb.msg + strlen(eb.msg) - strlen(tail), tail);
    tu_assert_no_leaks();
}

/* ---- Azure 2024, BurstGPT, Mooncake, spread ------------------------------------------- */

/* The week-long 2024 files have the 2023 columns; their timestamps carry microseconds and a
 * +00:00 offset, and whole seconds have no fraction at all (both forms in one file). */
static void test_azure_2024_fixture(void **state)
{
    (void)state;
    static const char text[] = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                               "2024-05-10 00:00:00.009930+00:00,2162,5\n"
                               "2024-05-10 00:00:00.017335+00:00,2399,6\n"
                               "2024-05-10 00:00:01+00:00,76,15\n"
                               "2024-05-10 23:59:59.999999+00:00,1,1\n"
                               "2024-05-11 00:00:00+00:00,7670,8\n";
    const ss_time t0 = 9930000;
    const ss_time want[] = {0, 17335000 - t0, SS_NS_PER_S - t0,
                            86399 * SS_NS_PER_S + 999999000 - t0, 86400 * SS_NS_PER_S - t0};
    const uint32_t want_p[] = {2162, 2399, 76, 1, 7670};
    ss_errbuf eb = {""};
    trace_reader *r = NULL;
    trace_rec rec;
    const char *path = write_bytes("azure2024.csv", text, sizeof text - 1);
    assert_int_equal(trace_reader_open(&r, path, "auto", &eb), 0);
    assert_string_equal(trace_reader_format(r), "azure");
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(trace_reader_next(r, &rec, &eb), 1);
        assert_int_equal(rec.arrival_ns, want[i]);
        assert_int_equal(rec.prompt_tokens, want_p[i]);
        assert_null(rec.prefix_blocks);
        assert_int_equal(rec.n_prefix_blocks, 0);
    }
    assert_int_equal(trace_reader_next(r, &rec, &eb), 0);
    trace_reader_close(&r);
    /* Another offset, or an offset without seconds, is refused. */
    expect_msg("TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-10 00:00:00.009930+02:00,1,1\n",
               "x.csv:2: TIMESTAMP: not a timestamp (want YYYY-MM-DD HH:MM:SS[.fffffff]): "
               "'2024-05-10 00:00:00.009930+02:00'");
    expect_msg("TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-10 00:00+00:00,1,1\n",
               "x.csv:2: TIMESTAMP: not a timestamp (want YYYY-MM-DD HH:MM:SS[.fffffff]): "
               "'2024-05-10 00:00+00:00'");
    tu_assert_no_leaks();
}

#define BG_HDR "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"

static void test_burstgpt_fixture(void **state)
{
    (void)state;
    static const char text[] = BG_HDR "5,ChatGPT,472,18,490,Conversation log\n"
                                      "45,ChatGPT,1087,0,1087,Conversation log\n"
                                      "118,GPT-4,417,276,693,Conversation log\n"
                                      "\n"
                                      "118.5,GPT-4,1,0,1,API log\n"
                                      "120.25,ChatGPT,300,1,301,API log\n";
    const ss_time want_t[] = {5 * SS_NS_PER_S, 118 * SS_NS_PER_S, 120250000000};
    const uint32_t want_p[] = {472, 417, 300}, want_o[] = {18, 276, 1};
    const uint16_t want_tenant[] = {0, 1, 0};
    const uint64_t want_line[] = {2, 4, 7};
    ss_errbuf eb = {""};
    trace_reader *r = NULL;
    trace_rec rec;
    const char *path = write_bytes("burst.csv", text, sizeof text - 1);
    assert_int_equal(trace_reader_open(&r, path, "auto", &eb), 0);
    assert_string_equal(trace_reader_format(r), "burstgpt");
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(trace_reader_next(r, &rec, &eb), 1);
        assert_int_equal(rec.arrival_ns, want_t[i]);
        assert_int_equal(rec.prompt_tokens, want_p[i]);
        assert_int_equal(rec.output_tokens, want_o[i]);
        assert_int_equal(rec.tenant, want_tenant[i]);
        assert_int_equal(rec.line, want_line[i]);
        assert_int_equal(rec.id, i);
    }
    assert_int_equal(trace_reader_next(r, &rec, &eb), 0);
    assert_int_equal(trace_reader_n_skipped(r), 2);
    assert_int_equal(trace_reader_n_tenants(r), 2);
    assert_string_equal(trace_reader_tenant_name(r, 0), "ChatGPT");
    assert_string_equal(trace_reader_tenant_name(r, 1), "GPT-4");
    trace_reader_close(&r);
    /* Columns in any order, CRLF, the announced Session ID / Elapsed time columns ignored. */
    static const char text2[] = "Log Type,Timestamp,Session ID,Model,Request tokens,"
                                "Response tokens,Total tokens,Elapsed time\r\n"
                                "API log,0.5,s1,GPT-4,10,20,30,1.5\r\n"
                                "API log,0.5,s2,GPT-4,11,0,11,0\r\n";
    path = write_bytes("burst2.csv", text2, sizeof text2 - 1);
    assert_int_equal(trace_reader_open(&r, path, NULL, &eb), 0);
    assert_string_equal(trace_reader_format(r), "burstgpt");
    assert_int_equal(trace_reader_next(r, &rec, &eb), 1);
    assert_int_equal(rec.arrival_ns, 500000000);
    assert_int_equal(rec.prompt_tokens, 10);
    assert_int_equal(rec.output_tokens, 20);
    assert_int_equal(trace_reader_next(r, &rec, &eb), 0);
    assert_int_equal(trace_reader_n_skipped(r), 1);
    trace_reader_close(&r);
    /* Other formats skip nothing. */
    path = write_bytes("nat.csv", NAT_HDR "0,0,a,1,1\n", strlen(NAT_HDR) + 10);
    assert_int_equal(trace_reader_open(&r, path, NULL, &eb), 0);
    assert_int_equal(trace_reader_next(r, &rec, &eb), 1);
    assert_int_equal(trace_reader_n_skipped(r), 0);
    trace_reader_close(&r);
    tu_assert_no_leaks();
}

static void test_burstgpt_bad_input(void **state)
{
    (void)state;
    ss_errbuf eb = {""};
    expect_msg("Timestamp,Model,Response tokens,Total tokens,Log Type\n5,ChatGPT,18,490,x\n",
               "x.csv:1: header: missing column Request tokens");
    expect_msg(BG_HDR "5,,472,18,490,x\n", "x.csv:2: Model: empty field");
    expect_msg(BG_HDR "5,ChatGPT,472,-1,471,x\n", "x.csv:2: Response tokens: must be >= 0, got -1");
    expect_msg(BG_HDR "5,ChatGPT,472,,471,x\n", "x.csv:2: Response tokens: empty field");
    expect_msg(BG_HDR "5,ChatGPT,0,18,18,x\n", "x.csv:2: Request tokens: must be >= 1, got 0");
    expect_msg(BG_HDR "abc,ChatGPT,1,1,2,x\n",
               "x.csv:2: Timestamp: not a number of seconds: 'abc'");
    expect_msg(BG_HDR "10,A,1,1,2,x\n9.5,A,1,1,2,x\n",
               "x.csv:3: Timestamp: goes backwards (9.5 < 10); " TRACE_UNSORTED_HINT);
    expect_msg(BG_HDR "5,A,1,1,2\n", "x.csv:2: line: expected 6 fields, got 5");
    /* Skipped rows: their time must still parse, but they do not take part in the order. */
    expect_msg(BG_HDR "x,ChatGPT,1,0,1,x\n", "x.csv:2: Timestamp: not a number of seconds: 'x'");
    static const char order[] = BG_HDR "10,A,1,1,2,x\n5,A,1,0,1,x\n11,A,1,1,2,x\n";
    assert_int_equal(read_all_n(order, strlen(order), "auto", &eb), 2);
    expect_msg(BG_HDR "5,ChatGPT,1,0,1,x\n6,ChatGPT,1,0,1,x\n",
               "x.csv:4: trace: no requests (2 rows skipped)");
    tu_assert_no_leaks();
}

#define MC_G "{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1}\n"

static void test_mooncake_fixture(void **state)
{
    (void)state;
    /* BOM, CRLF, blank lines, keys in any order, unknown keys of every type (nested values
     * with brackets and quotes inside strings), an escaped key, decimal and exponent times,
     * empty and absent hash_ids, no final newline. */
    static const char text[] =
        "\xEF\xBB\xBF{\"timestamp\": 0, \"input_length\": 1025, \"output_length\": 6, "
        "\"hash_ids\": [0, 1, 2]}\r\n"
        "\n"
        "  {\"hash_ids\":[7,4294967295],\"extra\":{\"a\":[1,{\"b\":null},[]],\"c\":\"x,]}\\\"\"},"
        "\"output_length\":2,\"flag\":true,\"input_length\":1000,\"n\":-1.5e-3,\"no\":false,"
        "\"timestamp\":40.25,\"s\":\"\\u00e9\\n\\/\",\"e\":{}} \t\n"
        "{\"timest\\u0061mp\": 40.25, \"input_length\": 3, \"output_length\": 3, \"hash_ids\": []}\n"
        "{\"timestamp\": 1E3, \"input_length\": 10000000, \"output_length\": 1}";
    const char *path = write_bytes("mc.jsonl", text, sizeof text - 1);
    trace_reader *r = NULL;
    trace_rec rec;
    ss_errbuf eb = {""};
    assert_int_equal(trace_reader_open(&r, path, "auto", &eb), 0);
    assert_string_equal(trace_reader_format(r), "mooncake");
    assert_int_equal(trace_reader_next(r, &rec, &eb), 1);
    assert_int_equal(rec.arrival_ns, 0);
    assert_int_equal(rec.prompt_tokens, 1025);
    assert_int_equal(rec.output_tokens, 6);
    assert_int_equal(rec.line, 1);
    assert_int_equal(rec.id, 0);
    assert_int_equal(rec.tenant, 0);
    assert_int_equal(rec.n_prefix_blocks, 3);
    assert_non_null(rec.prefix_blocks);
    for (uint32_t i = 0; i < 3; i++)
        assert_int_equal(rec.prefix_blocks[i], i);
    assert_int_equal(trace_reader_next(r, &rec, &eb), 1);
    assert_int_equal(rec.arrival_ns, 40250000);
    assert_int_equal(rec.prompt_tokens, 1000);
    assert_int_equal(rec.output_tokens, 2);
    assert_int_equal(rec.line, 3);
    assert_int_equal(rec.n_prefix_blocks, 2);
    assert_int_equal(rec.prefix_blocks[0], 7);
    assert_int_equal(rec.prefix_blocks[1], UINT32_MAX);
    assert_int_equal(trace_reader_next(r, &rec, &eb), 1);
    assert_int_equal(rec.arrival_ns, 40250000);
    assert_int_equal(rec.n_prefix_blocks, 0);
    assert_null(rec.prefix_blocks);
    assert_int_equal(trace_reader_next(r, &rec, &eb), 1);
    assert_int_equal(rec.arrival_ns, SS_NS_PER_S);
    assert_int_equal(rec.prompt_tokens, TRACE_MAX_TOKENS);
    assert_int_equal(rec.line, 5);
    assert_null(rec.prefix_blocks);
    assert_int_equal(trace_reader_next(r, &rec, &eb), 0);
    assert_int_equal(trace_reader_n_tenants(r), 1);
    assert_string_equal(trace_reader_tenant_name(r, 0), "default");
    assert_int_equal(trace_reader_digest(r), fnv1a(text, sizeof text - 1));
    trace_reader_close(&r);
    /* Forced, and refused on a CSV file; an empty file. */
    assert_int_equal(trace_reader_open(&r, path, "mooncake", &eb), 0);
    trace_reader_close(&r);
    expect_fmt(NAT_HDR "0,0,a,1,1\n", "mooncake", "x.csv:1: json: expected '{' (column 1)", 0);
    expect_fmt("\n \n", "mooncake", "x.csv:1: trace: file is empty", 0);
    /* The most ids a request may hold: those of the longest prompt's 512-token blocks. */
    static char big[TRACE_MAX_LINE];
    int n = snprintf(big, sizeof big, "{\"timestamp\":0,\"input_length\":10000000,"
                                      "\"output_length\":1,\"hash_ids\":[");
    for (int i = 0; i < 19532; i++)
        n += snprintf(big + n, sizeof big - (size_t)n, i ? ",%d" : "%d", i % 10);
    n += snprintf(big + n, sizeof big - (size_t)n, "]}\n");
    assert_int_equal(read_all_n(big, (size_t)n, "auto", &eb), 1);
    memcpy(big + n - 3, ",1]}\n", 5);
    expect_error(big, (size_t)n + 2, "auto", SS_EPARSE, "x.csv:1: hash_ids: 19533 ids of "
                 "512-token blocks, more than input_length 10000000 fills (19532)", 0);
    tu_assert_no_leaks();
}

static void test_mooncake_bad_json(void **state)
{
    (void)state;
    static const struct {
        const char *line, *msg;
    } cases[] = {
        /* JSON syntax. */
        {"{\"timestamp\": 1, \"input_length\": 1, \"output_length\": 1",
         "json: expected ',' or '}' (column 55)"},
        {"\"timestamp\": 1, \"input_length\": 1, \"output_length\": 1}",
         "json: expected '{' (column 1)"},
        {"[1, 2]", "json: expected '{' (column 1)"},
        {"{\"timestamp\": 01}", "json: bad number: '01' (column 15)"},
        {"{\"timestamp\": 1.}", "json: bad number: '1.' (column 15)"},
        {"{\"timestamp\": 12x, \"a\": 1}", "json: bad number: '12x' (column 15)"},
        {"{\"timestamp\": -}", "json: bad number: '-' (column 15)"},
        {"{\"timestamp\": 1e}", "json: bad number: '1e' (column 15)"},
        {"{\"timestamp\": +1}", "json: not a JSON value: '+1' (column 15)"},
        {"{\"timestamp\": 1, \"input_length\": 1, \"output_length\": 1} x",
         "json: trailing characters after the object (column 57)"},
        {"{\"timestamp\": 1, \"input_length\": 1, \"output_length\": 1}{}",
         "json: trailing characters after the object (column 56)"},
        {"{\"timestamp: 1}", "json: unterminated string (column 16)"},
        {"{\"a\\q\": 1}", "json: bad escape in a string (column 5)"},
        {"{\"\\u12G4\": 1}", "json: bad \\u escape in a string (column 4)"},
        {"{\"a\tb\": 1}", "json: control character in a string (column 4)"},
        {"{\"x\": tru}", "json: not a JSON value: 'tru' (column 7)"},
        {"{\"x\": nulls}", "json: not a JSON value: 'nulls' (column 7)"},
        {"{\"x\": }", "json: not a JSON value: '}' (column 7)"},
        {"{\"x\": [1,]}", "json: not a JSON value: ']' (column 10)"},
        {"{\"x\": [1 2]}", "json: expected ',' or ']' (column 10)"},
        {"{\"x\": 1,}", "json: expected a key string (column 9)"},
        {"{,}", "json: expected a key string (column 2)"},
        {"{\"x\" 1}", "json: expected ':' after a key (column 6)"},
        {"{\"x\": {\"y\" : [1}}", "json: expected ',' or ']' (column 16)"},
        {"{\"timestamp\": 1, \"timestamp\": 2}", "json: duplicate key 'timestamp' (column 18)"},
        /* Keys and values. */
        {"{\"input_length\": 1, \"output_length\": 1}", "timestamp: missing"},
        {"{\"timestamp\": 1, \"output_length\": 1, \"hash_ids\": []}", "input_length: missing"},
        {"{\"timestamp\": 1, \"input_length\": 1}", "output_length: missing"},
        {"{\"Timestamp\": 1, \"input_length\": 1, \"output_length\": 1}", "timestamp: missing"},
        {"{\"timestamp\": \"1\", \"input_length\": 1, \"output_length\": 1}",
         "timestamp: not a number of milliseconds: '\"1\"'"},
        {"{\"timestamp\": 1e999, \"input_length\": 1, \"output_length\": 1}",
         "timestamp: out of range [0, 9.2e12] milliseconds: '1e999'"},
        {"{\"timestamp\": 1e17, \"input_length\": 1, \"output_length\": 1}",
         "timestamp: out of range [0, 9.2e12] milliseconds: '1e17'"},
        {"{\"timestamp\": -1, \"input_length\": 1, \"output_length\": 1}",
         "timestamp: must be >= 0, got -1"},
        {"{\"timestamp\": 1, \"input_length\": \"12\", \"output_length\": 1}",
         "input_length: not a number: '\"12\"'"},
        {"{\"timestamp\": 1, \"input_length\": 0, \"output_length\": 1}",
         "input_length: must be >= 1, got 0"},
        {"{\"timestamp\": 1, \"input_length\": 1.5, \"output_length\": 1}",
         "input_length: not an integer: '1.5'"},
        {"{\"timestamp\": 1, \"input_length\": 1, \"output_length\": 10000001}",
         "output_length: must be <= 10000000, got 10000001"},
        {"{\"timestamp\": 1, \"input_length\": 1, \"output_length\": null}",
         "output_length: not a number: 'null'"},
        {"{\"timestamp\": 1, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": 5}",
         "hash_ids: not an array: '5'"},
        {"{\"timestamp\": 1, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": {\"a\": 1}}",
         "hash_ids: not an array: '{\"a\": 1}'"},
        {"{\"timestamp\": 1, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1, -1]}",
         "hash_ids: must be >= 0, got -1"},
        {"{\"timestamp\": 1, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [4294967296]}",
         "hash_ids: must be <= 4294967295, got 4294967296"},
        {"{\"timestamp\": 1, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1.5]}",
         "hash_ids: not an integer: '1.5'"},
        {"{\"timestamp\": 1, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [[1]]}",
         "hash_ids: not an integer: '[1]'"},
        {"{\"timestamp\": 1, \"input_length\": 512, \"output_length\": 1, \"hash_ids\": [1, 2]}",
         "hash_ids: 2 ids of 512-token blocks, more than input_length 512 fills (1)"},
        {"{\"timestamp\": 4.5, \"input_length\": 1, \"output_length\": 1}",
         "timestamp: goes backwards (4.5 < 5); " TRACE_UNSORTED_HINT},
    };
    char text[512], want[256];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        /* On line 2, after a good first line, and alone on line 1 (forced, or detected when
         * the line starts with '{'). */
        snprintf(text, sizeof text, MC_G "%s\n", cases[i].line);
        snprintf(want, sizeof want, "x.csv:2: %s", cases[i].msg);
        expect_fmt(text, "auto", want, 0);
        if (strstr(cases[i].msg, "goes backwards"))
            continue;
        snprintf(text, sizeof text, "%s\n", cases[i].line);
        snprintf(want, sizeof want, "x.csv:1: %s", cases[i].msg);
        expect_fmt(text, "mooncake", want, 0);
    }
    /* Nesting is bounded (no deep recursion on hostile input). */
    static char deep[TRACE_MAX_LINE];
    int n = snprintf(deep, sizeof deep, "{\"x\": ");
    memset(deep + n, '[', 60000);
    deep[n + 60000] = '\n';
    expect_error(deep, (size_t)n + 60001, "auto", SS_EPARSE,
                 "x.csv:1: json: nested deeper than 64 levels (column 71)", 0);
    /* 64 levels of objects and arrays (32 of each, alternating) are fine; 65 are not. */
    ss_errbuf eb = {""};
    for (int extra = 0; extra < 2; extra++) {
        n = snprintf(deep, sizeof deep, "{\"x\": ");
        for (int i = 0; i < 32; i++)
            n += snprintf(deep + n, sizeof deep - (size_t)n, "{\"y\":[");
        n += snprintf(deep + n, sizeof deep - (size_t)n, extra ? "[0]" : "0");
        for (int i = 0; i < 32; i++)
            n += snprintf(deep + n, sizeof deep - (size_t)n, "]}");
        n += snprintf(deep + n, sizeof deep - (size_t)n, ", %s", MC_G + 1);
        if (!extra)
            assert_int_equal(read_all_n(deep, (size_t)n, "auto", &eb), 1);
        else
            expect_error(deep, (size_t)n, "auto", SS_EPARSE,
                         "x.csv:1: json: nested deeper than 64 levels (column 199)", 0);
    }
    tu_assert_no_leaks();
}

/* Read every request of text with spread on; returns the count, records in out[]. */
static size_t read_spread(const char *text, const char *format, trace_rec *out, size_t cap,
                          uint32_t *blocks, size_t blocks_cap)
{
    const char *path = write_bytes("spread.txt", text, strlen(text));
    trace_reader *r = NULL;
    ss_errbuf eb = {""};
    size_t n = 0, nb = 0;
    int rc = 0;
    assert_int_equal(trace_reader_open(&r, path, format, &eb), 0);
    assert_int_equal(trace_reader_set_spread(r, 1), 0);
    while (n < cap && (rc = trace_reader_next(r, &out[n], &eb)) == 1) {
        /* Copy the borrowed blocks before the next call invalidates them. */
        assert_true(nb + out[n].n_prefix_blocks <= blocks_cap);
        if (out[n].n_prefix_blocks)
            memcpy(blocks + nb, out[n].prefix_blocks, out[n].n_prefix_blocks * sizeof *blocks);
        nb += out[n].n_prefix_blocks;
        n++;
    }
    if (rc < 0)
        fail_msg("%s", eb.msg);
    trace_reader_close(&r);
    return n;
}

#define MC_AT(ms, ids) \
    "{\"timestamp\": " ms ", \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": " ids \
    "}\n"

static void test_spread(void **state)
{
    (void)state;
    trace_rec rec[8];
    uint32_t blocks[16];
    /* Three at 1000 ms and the next at 1003 ms: 1000, 1001, 1002; the last group keeps its
     * time; every request keeps its own prefix blocks. */
    static const char mc[] = MC_AT("1000", "[1, 2]") MC_AT("1000", "[3]") MC_AT("1000", "[]")
        MC_AT("1003", "[9]") MC_AT("1003", "[10, 11]");
    assert_int_equal(read_spread(mc, "auto", rec, 8, blocks, 16), 5);
    const ss_time want[] = {1000, 1001, 1002, 1003, 1003};
    const uint32_t want_nb[] = {2, 1, 0, 1, 2}, want_b[] = {1, 2, 3, 9, 10, 11};
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(rec[i].arrival_ns, want[i] * SS_NS_PER_MS);
        assert_int_equal(rec[i].n_prefix_blocks, want_nb[i]);
        assert_int_equal(rec[i].id, i);
        assert_int_equal(rec[i].line, i + 1);
    }
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(blocks[i], want_b[i]);
    /* Any format; each time is rounded down on its own: 4 requests over 10 ns give 0, 2, 5
     * and 7 ns (not multiples of one rounded step). */
    static const char nat[] = NAT_HDR "0,0,a,1,1\n1,0,a,1,1\n2,0,a,1,1\n3,0,a,1,1\n"
                                      "4,0.00000001,a,1,1\n5,0.5,a,1,1\n";
    assert_int_equal(read_spread(nat, "native", rec, 8, blocks, 16), 6);
    const ss_time want_nat[] = {0, 2, 5, 7, 10, 500000000};
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(rec[i].arrival_ns, want_nat[i]);
    /* Off by default, and only before the first request. */
    const char *path = write_bytes("spread.txt", mc, strlen(mc));
    trace_reader *r = NULL;
    ss_errbuf eb = {""};
    assert_int_equal(trace_reader_open(&r, path, "auto", &eb), 0);
    assert_int_equal(trace_reader_next(r, &rec[0], &eb), 1);
    assert_int_equal(trace_reader_next(r, &rec[1], &eb), 1);
    assert_int_equal(rec[1].arrival_ns, 1000 * SS_NS_PER_MS);
    assert_int_equal(trace_reader_set_spread(r, 1), SS_EINVAL);
    trace_reader_close(&r);
    assert_int_equal(trace_reader_set_spread(NULL, 1), SS_EINVAL);
    /* A malformed row is reported while the group before it is read. */
    static const char bad[] = MC_AT("1000", "[1]") MC_AT("1000", "[2]") "{\"x\": 1}\n";
    path = write_bytes("spread.txt", bad, strlen(bad));
    assert_int_equal(trace_reader_open(&r, path, "auto", &eb), 0);
    assert_int_equal(trace_reader_set_spread(r, 1), 0);
    assert_int_equal(trace_reader_next(r, &rec[0], &eb), SS_EPARSE);
    assert_non_null(strstr(eb.msg, ":3: timestamp: missing"));
    trace_reader_close(&r);
    tu_assert_no_leaks();
}

/* The lookahead is bounded in requests and in prefix blocks. */
static void test_spread_limits(void **state)
{
    (void)state;
    size_t cap = 64 + (size_t)(TRACE_MAX_SPREAD_GROUP + 2) * 24;
    char *buf = malloc(cap);
    assert_non_null(buf);
    size_t len = (size_t)snprintf(buf, cap, NAT_HDR);
    for (int i = 0; i < TRACE_MAX_SPREAD_GROUP; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%d,7,a,1,1\n", i);
    size_t at_limit = len;
    len += (size_t)snprintf(buf + len, cap - len, "x,7,a,1,1\n");
    /* Exactly the limit, followed by the next time (or the end), is fine. */
    memcpy(buf + at_limit, "9,8,a,1,1\n", 10);
    ss_errbuf eb = {""};
    const char *path = write_bytes("group.csv", buf, len);
    trace_reader *r = NULL;
    trace_rec rec;
    uint64_t n = 0;
    assert_int_equal(trace_reader_open(&r, path, "auto", &eb), 0);
    assert_int_equal(trace_reader_set_spread(r, 1), 0);
    ss_time last = -1;
    while (trace_reader_next(r, &rec, &eb) == 1) {
        assert_true(rec.arrival_ns > last); /* 65536 distinct times within one second */
        last = rec.arrival_ns;
        n++;
    }
    assert_int_equal(n, TRACE_MAX_SPREAD_GROUP + 1);
    trace_reader_close(&r);
    memcpy(buf + at_limit, "9,7,a,1,1\n", 10);
    path = write_bytes("group.csv", buf, len);
    assert_int_equal(trace_reader_open(&r, path, "auto", &eb), 0);
    assert_int_equal(trace_reader_set_spread(r, 1), 0);
    assert_int_equal(trace_reader_next(r, &rec, &eb), SS_EPARSE);
    char want[160];
    snprintf(want, sizeof want, "%s:%d: arrival_s: more than %d requests at 7 (the spread "
             "lookahead limit)", path, TRACE_MAX_SPREAD_GROUP + 2, TRACE_MAX_SPREAD_GROUP);
    assert_string_equal(eb.msg, want);
    trace_reader_close(&r);
    free(buf);
    /* Prefix blocks: lines of the most ids a request holds (those of the longest prompt) at one
     * time until the total passes the limit. */
    int per = (TRACE_MAX_TOKENS + TRACE_PREFIX_BLOCK_TOKENS - 1) / TRACE_PREFIX_BLOCK_TOKENS;
    int lines = (int)(TRACE_MAX_SPREAD_BLOCKS / (uint32_t)per) + 1;
    cap = (size_t)lines * (2 * (size_t)per + 100);
    buf = malloc(cap);
    assert_non_null(buf);
    len = 0;
    for (int l = 0; l < lines; l++) {
        len += (size_t)snprintf(buf + len, cap - len, "{\"timestamp\":2.5,\"input_length\":"
                                                       "10000000,\"output_length\":1,"
                                                       "\"hash_ids\":[0");
        for (int i = 1; i < per; i++) {
            buf[len++] = ',';
            buf[len++] = (char)('0' + i % 10);
        }
        len += (size_t)snprintf(buf + len, cap - len, "]}\n");
    }
    snprintf(want, sizeof want, "x.csv:%d: timestamp: more than %u prefix blocks at 2.5 (the "
             "spread lookahead limit)", lines, TRACE_MAX_SPREAD_BLOCKS);
    path = write_bytes("x.csv", buf, len);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(trace_reader_open_stream(&r, f, "x.csv", "auto", &eb), 0);
    assert_int_equal(trace_reader_set_spread(r, 1), 0);
    assert_int_equal(trace_reader_next(r, &rec, &eb), SS_EPARSE);
    assert_string_equal(eb.msg, want);
    trace_reader_close(&r);
    fclose(f);
    /* One line fewer fits. */
    buf[len - len / (size_t)lines] = '\0';
    trace_rec *recs = malloc((size_t)lines * sizeof *recs);
    uint32_t *ids = malloc(TRACE_MAX_SPREAD_BLOCKS * sizeof *ids);
    assert_true(recs && ids);
    assert_int_equal(read_spread(buf, "mooncake", recs, (size_t)lines, ids,
                                 TRACE_MAX_SPREAD_BLOCKS),
                     lines - 1);
    assert_int_equal(ids[per + 1], 1);
    free(recs);
    free(ids);
    free(buf);
    tu_assert_no_leaks();
}

/* Open path, optionally spread, and compute statistics with the n-th allocation failing, for
 * n = 1, 2, ... until a run succeeds: every failure is a clean SS_ENOMEM without leaks. */
static void alloc_fail_loop(const char *path, int spread, uint64_t want_count,
                            uint32_t want_tenants)
{
    for (uint64_t n = 1; n < 10000; n++) {
        trace_reader *r = NULL;
        trace_stats st;
        ss_errbuf eb = {""};
        uint64_t before = ss_alloc_count();
        ss_alloc_fail_after(n);
        int rc = trace_reader_open(&r, path, "auto", &eb);
        if (rc == SS_OK) {
            assert_int_equal(trace_reader_set_spread(r, spread), 0);
            rc = trace_stats_compute(r, &st, &eb);
            trace_reader_close(&r);
        }
        ss_alloc_fail_after(0);
        uint64_t used = ss_alloc_count() - before;
        tu_assert_no_leaks();
        if (rc == SS_OK) {
            assert_true(used < n);
            assert_int_equal(st.count, want_count);
            assert_int_equal(st.n_tenants, want_tenants);
            return;
        }
        assert_int_equal(rc, SS_ENOMEM);
        if (!strstr(eb.msg, "out of memory"))
            fail_msg("n=%" PRIu64 ": %s", n, eb.msg);
    }
    fail_msg("no run succeeded");
}

static void test_alloc_failures_new_formats(void **state)
{
    (void)state;
    char text[65536];
    size_t len = 0;
    /* Mooncake: groups of equal times (spread buffers grow several times). */
    for (int i = 0; i < 60; i++) {
        len += (size_t)snprintf(text + len, sizeof text - len,
                                "{\"timestamp\": %d, \"input_length\": 4000, \"output_length\": 2,"
                                " \"hash_ids\": [",
                                i / 20);
        for (int k = 0; k < 1 + i % 7; k++)
            len += (size_t)snprintf(text + len, sizeof text - len, k ? ", %d" : "%d", i + k);
        len += (size_t)snprintf(text + len, sizeof text - len, "]}\n");
    }
    const char *path = write_bytes("oom.jsonl", text, len);
    alloc_fail_loop(path, 0, 60, 1);
    alloc_fail_loop(path, 1, 60, 1);
    /* BurstGPT: 40 models, every fifth row failed; the 8 models seen only in failed rows
     * (0, 5, ..., 35) are not tenants. */
    len = (size_t)snprintf(text, sizeof text, BG_HDR);
    for (int i = 0; i < 50; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, "%d,model%d,5,%d,9,API log\n",
                                i / 3, i % 40, i % 5);
    path = write_bytes("oom.csv", text, len);
    alloc_fail_loop(path, 0, 40, 32);
    alloc_fail_loop(path, 1, 40, 32);
    tu_assert_no_leaks();
}

/* Memory does not grow with a Mooncake trace's length either (without spread). */
static void test_mooncake_constant_memory(void **state)
{
    (void)state;
    const char *path = write_bytes("long.jsonl", "", 0);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (int i = 0; i < 20000; i++)
        fprintf(f, "{\"timestamp\": %d, \"input_length\": 1500, \"output_length\": 3, "
                   "\"hash_ids\": [%d, %d, %d]}\n", i, i, i + 1, i + 2);
    assert_int_equal(fclose(f), 0);
    trace_reader *r = NULL;
    trace_rec rec;
    ss_errbuf eb = {""};
    assert_int_equal(trace_reader_open(&r, path, "auto", &eb), 0);
    assert_int_equal(trace_reader_next(r, &rec, &eb), 1);
    size_t live = ss_alloc_live_bytes();
    uint64_t n_allocs = ss_alloc_count(), n = 1;
    while (trace_reader_next(r, &rec, &eb) == 1) {
        assert_int_equal(rec.prefix_blocks[2], n + 2);
        n++;
    }
    assert_int_equal(n, 20000);
    assert_int_equal(ss_alloc_live_bytes(), live);
    assert_int_equal(ss_alloc_count(), n_allocs);
    trace_reader_close(&r);
    tu_assert_no_leaks();
}

/* The first line of a file, independently of the reader: "key": <integer> and hash_ids. */
typedef struct first_line {
    long long ts, in, out;
    size_t n_ids;
    long long first_id, last_id;
} first_line;

static long long int_after(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    assert_non_null(p);
    return strtoll(p + strlen(key), NULL, 10);
}

static first_line scan_first_line(const char *line)
{
    first_line fl = {int_after(line, "\"timestamp\":"), int_after(line, "\"input_length\":"),
                     int_after(line, "\"output_length\":"), 0, 0, 0};
    const char *open = strchr(line, '['), *close = strchr(line, ']');
    assert_true(open && close && close > open + 1);
    fl.n_ids = 1;
    for (const char *p = open; p < close; p++)
        fl.n_ids += *p == ',';
    fl.first_id = strtoll(open + 1, NULL, 10);
    const char *last = close;
    while (last[-1] != ',' && last[-1] != '[')
        last--;
    fl.last_id = strtoll(last, NULL, 10);
    return fl;
}

/* Count, checksum of every prefix block, distinct arrival times, first and last arrival. */
typedef struct mc_summary {
    uint64_t n, n_blocks, block_sum, distinct;
    ss_time first, last;
} mc_summary;

static mc_summary summarise(const char *path, int spread)
{
    mc_summary s = {0};
    trace_reader *r = NULL;
    trace_rec rec;
    ss_errbuf eb = {""};
    int rc;
    assert_int_equal(trace_reader_open(&r, path, "auto", &eb), 0);
    assert_string_equal(trace_reader_format(r), "mooncake");
    assert_int_equal(trace_reader_set_spread(r, spread), 0);
    while ((rc = trace_reader_next(r, &rec, &eb)) == 1) {
        s.distinct += s.n == 0 || rec.arrival_ns != s.last;
        if (s.n == 0)
            s.first = rec.arrival_ns;
        assert_true(rec.arrival_ns >= s.last);
        s.last = rec.arrival_ns;
        s.n++;
        s.n_blocks += rec.n_prefix_blocks;
        for (uint32_t i = 0; i < rec.n_prefix_blocks; i++)
            s.block_sum = s.block_sum * 31 + rec.prefix_blocks[i];
    }
    if (rc)
        fail_msg("%s", eb.msg);
    trace_reader_close(&r);
    return s;
}

static void test_real_mooncake(void **state)
{
    (void)state;
    const char *path = tu_shared_path("traces/mooncake/synthetic_trace.jsonl");
    if (!path)
        skip();
    /* Lines as `wc -l` counts them, and the first line. */
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *first = malloc(TRACE_MAX_LINE + 1);
    assert_non_null(first);
    size_t fl_len = 0;
    uint64_t lines = 0;
    int c;
    while ((c = getc(f)) != EOF) {
        if (lines == 0 && fl_len < TRACE_MAX_LINE)
            first[fl_len++] = (char)c;
        lines += c == '\n';
    }
    fclose(f);
    first[fl_len] = '\0';
    first_line want = scan_first_line(first);
    free(first);
    /* The first record against the file. */
    trace_reader *r = NULL;
    trace_rec rec;
    ss_errbuf eb = {""};
    assert_int_equal(trace_reader_open(&r, path, "auto", &eb), 0);
    assert_int_equal(trace_reader_next(r, &rec, &eb), 1);
    assert_int_equal(rec.arrival_ns, want.ts * SS_NS_PER_MS);
    assert_int_equal(rec.prompt_tokens, want.in);
    assert_int_equal(rec.output_tokens, want.out);
    assert_int_equal(rec.n_prefix_blocks, want.n_ids);
    assert_int_equal(rec.prefix_blocks[0], want.first_id);
    assert_int_equal(rec.prefix_blocks[rec.n_prefix_blocks - 1], want.last_id);
    /* 512-token blocks: one id per started block of the prompt. */
    assert_int_equal(rec.n_prefix_blocks, (rec.prompt_tokens + 511) / 512);
    trace_reader_close(&r);
    /* Every line is a request; spreading keeps the requests, their blocks, the first and
     * last times, and only makes more times distinct. */
    mc_summary plain = summarise(path, 0), spread = summarise(path, 1);
    assert_int_equal(plain.n, lines);
    assert_int_equal(spread.n, lines);
    assert_int_equal(spread.n_blocks, plain.n_blocks);
    assert_int_equal(spread.block_sum, plain.block_sum);
    assert_int_equal(spread.first, plain.first);
    assert_int_equal(spread.last, plain.last);
    assert_true(plain.distinct < plain.n); /* the sample has shared timestamps */
    assert_true(spread.distinct > plain.distinct);
    tu_assert_no_leaks();
}

/* ---- generator ----------------------------------------------------------------------- */

static trace_gen_spec make_spec(uint64_t n, const char *prompt, const char *output)
{
    trace_gen_spec s = {.seed = 42, .n_requests = n, .rate = 10, .cv = 1, .tenant = "t"};
    ss_errbuf eb = {""};
    if (trace_len_dist_parse(&s.prompt, prompt, &eb) ||
        trace_len_dist_parse(&s.output, output, &eb))
        fail_msg("%s", eb.msg);
    return s;
}

/* Run a generator to the end into a malloc'd array; returns the count. */
static size_t gen_all(const trace_gen_spec *s, trace_rec **out)
{
    trace_gen *g = NULL;
    ss_errbuf eb = {""};
    size_t cap = s->n_requests ? s->n_requests : 100000, n = 0;
    *out = malloc(cap * sizeof **out);
    assert_non_null(*out);
    if (trace_gen_create(&g, s, &eb))
        fail_msg("%s", eb.msg);
    while (n < cap && trace_gen_next(g, &(*out)[n], &eb) == 1)
        n++;
    trace_rec extra;
    assert_int_equal(trace_gen_next(g, &extra, &eb), 0);
    trace_gen_destroy(&g);
    assert_null(g);
    return n;
}

static void test_gen_determinism_and_streams(void **state)
{
    (void)state;
    trace_gen_spec s1 = make_spec(20000, "lognormal:1000:1", "zipf:1.1:1:500");
    trace_gen_spec s2 = s1;
    trace_rec *a, *b, *c, *d;
    assert_int_equal(gen_all(&s1, &a), 20000);
    assert_int_equal(gen_all(&s2, &b), 20000);
    assert_memory_equal(a, b, 20000 * sizeof *a);
    /* Changing the output distribution leaves arrivals and prompts untouched. */
    trace_gen_spec s3 = make_spec(20000, "lognormal:1000:1", "uniform:1:64");
    assert_int_equal(gen_all(&s3, &c), 20000);
    int n_diff = 0;
    for (int i = 0; i < 20000; i++) {
        assert_int_equal(a[i].arrival_ns, c[i].arrival_ns);
        assert_int_equal(a[i].prompt_tokens, c[i].prompt_tokens);
        n_diff += a[i].output_tokens != c[i].output_tokens;
    }
    assert_true(n_diff > 10000);
    /* Changing the arrival process leaves the lengths untouched; a new seed changes all. */
    trace_gen_spec s4 = s1;
    s4.arrival = TRACE_ARRIVAL_GAMMA;
    s4.cv = 3;
    assert_int_equal(gen_all(&s4, &d), 20000);
    for (int i = 0; i < 20000; i++) {
        assert_int_equal(a[i].prompt_tokens, d[i].prompt_tokens);
        assert_int_equal(a[i].output_tokens, d[i].output_tokens);
    }
    assert_true(a[100].arrival_ns != d[100].arrival_ns);
    free(d);
    s4 = s1;
    s4.seed = 43;
    assert_int_equal(gen_all(&s4, &d), 20000);
    assert_true(a[0].arrival_ns != d[0].arrival_ns && a[1].prompt_tokens + a[2].prompt_tokens !=
                                                          d[1].prompt_tokens + d[2].prompt_tokens);
    free(a);
    free(b);
    free(c);
    free(d);
    tu_assert_no_leaks();
}

/* The CSV is byte-identical across runs and reads back to exactly the generated records. */
static void test_gen_csv_round_trip(void **state)
{
    (void)state;
    trace_gen_spec s = make_spec(5000, "quantiles:0=2,0.5=1020,0.9=1871.4,0.99=4142,1=5921",
                                 "lognormal:129:1.2:1:4096");
    s.arrival = TRACE_ARRIVAL_GAMMA;
    s.cv = 4;
    ss_errbuf eb = {""};
    char *bufs[2];
    size_t lens[2];
    for (int k = 0; k < 2; k++) {
        FILE *f = open_memstream(&bufs[k], &lens[k]);
        assert_non_null(f);
        assert_int_equal(trace_gen_write_csv(&s, f, NULL, &eb), 0);
        assert_int_equal(fclose(f), 0);
    }
    assert_int_equal(lens[0], lens[1]);
    assert_memory_equal(bufs[0], bufs[1], lens[0]);
    trace_rec *want;
    assert_int_equal(gen_all(&s, &want), 5000);
    const char *path = write_bytes("gen.csv", bufs[0], lens[0]);
    trace_reader *r = NULL;
    trace_rec rec;
    assert_int_equal(trace_reader_open(&r, path, "auto", &eb), 0);
    assert_string_equal(trace_reader_format(r), "native");
    for (int i = 0; i < 5000; i++) {
        assert_int_equal(trace_reader_next(r, &rec, &eb), 1);
        assert_int_equal(rec.id, want[i].id);
        assert_int_equal(rec.arrival_ns, want[i].arrival_ns);
        assert_int_equal(rec.prompt_tokens, want[i].prompt_tokens);
        assert_int_equal(rec.output_tokens, want[i].output_tokens);
    }
    assert_int_equal(trace_reader_next(r, &rec, &eb), 0);
    assert_string_equal(trace_reader_tenant_name(r, 0), "t");
    trace_reader_close(&r);
    free(want);
    free(bufs[0]);
    free(bufs[1]);
    tu_assert_no_leaks();
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Mean and coefficient of variation of the gaps between arrivals (the first from 0). */
static void gap_stats(const trace_rec *r, size_t n, double *mean, double *cv)
{
    double s = 0, s2 = 0;
    for (size_t i = 0; i < n; i++) {
        double g = (double)(r[i].arrival_ns - (i ? r[i - 1].arrival_ns : 0)) / 1e9;
        s += g;
        s2 += g * g;
    }
    *mean = s / (double)n;
    *cv = sqrt(s2 / (double)n - *mean * *mean) / *mean;
}

/* Sorted prompt lengths, for quantiles. */
static uint32_t *sorted_prompts(const trace_rec *r, size_t n)
{
    uint32_t *v = malloc(n * sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < n; i++)
        v[i] = r[i].prompt_tokens;
    qsort(v, n, sizeof *v, cmp_u32);
    return v;
}

static void test_gen_statistics(void **state)
{
    (void)state;
    enum { N = 200000 };
    double mean, cv;
    trace_rec *r;
    /* Poisson, rate 10: mean gap 0.1 s, CV 1. Lognormal median 1000. */
    trace_gen_spec s = make_spec(N, "lognormal:1000:0.8", "fixed:7");
    assert_int_equal(gen_all(&s, &r), N);
    gap_stats(r, N, &mean, &cv);
    assert_near(mean, 0.1, 0.01, "poisson mean gap");
    assert_near(cv, 1, 0.02, "poisson cv");
    uint32_t *v = sorted_prompts(r, N);
    assert_near(v[N / 2], 1000, 0.02, "lognormal median");
    assert_near(v[(size_t)(0.9 * N)], 1000 * exp(0.8 * 1.2815516), 0.03, "lognormal p90");
    assert_int_equal(r[N - 1].output_tokens, 7);
    free(v);
    free(r);
    /* Gamma, CV 2. */
    s = make_spec(N, "fixed:1", "fixed:1");
    s.arrival = TRACE_ARRIVAL_GAMMA;
    s.cv = 2;
    assert_int_equal(gen_all(&s, &r), N);
    gap_stats(r, N, &mean, &cv);
    assert_near(mean, 0.1, 0.02, "gamma mean gap");
    assert_near(cv, 2, 0.05, "gamma cv");
    free(r);
    /* Quantile knots are reproduced. */
    s = make_spec(N, "quantiles:0=10,0.5=1000,0.9=2000,0.99=4000,1=5000", "fixed:1");
    assert_int_equal(gen_all(&s, &r), N);
    v = sorted_prompts(r, N);
    assert_near(v[N / 2], 1000, 0.02, "quantiles p50");
    assert_near(v[(size_t)(0.9 * N)], 2000, 0.02, "quantiles p90");
    assert_near(v[(size_t)(0.99 * N)], 4000, 0.02, "quantiles p99");
    assert_true(v[0] >= 10 && v[0] < 20 && v[N - 1] <= 5000 && v[N - 1] > 4950);
    double sum = 0; /* mean = sum of segment trapezoids */
    for (size_t i = 0; i < N; i++)
        sum += v[i];
    assert_near(sum / N, 0.25 * 1010 + 0.2 * 3000 + 0.045 * 6000 + 0.005 * 9000, 0.01,
                "quantiles mean");
    free(v);
    free(r);
    tu_assert_no_leaks();
}

static void test_gen_zipf_uniform_and_duration(void **state)
{
    (void)state;
    enum { N = 200000 };
    trace_rec *r;
    /* zipf:1.2:5:1000: P(k) ~ 1/(k-4)^1.2 on [5, 1000]. */
    trace_gen_spec s = make_spec(N, "zipf:1.2:5:1000", "uniform:3:6");
    assert_int_equal(gen_all(&s, &r), N);
    double norm = 0;
    for (int k = 1; k <= 996; k++)
        norm += pow(k, -1.2);
    uint32_t count[16] = {0};
    double out_sum = 0;
    for (size_t i = 0; i < N; i++) {
        assert_in_range(r[i].prompt_tokens, 5, 1000);
        assert_in_range(r[i].output_tokens, 3, 6);
        if (r[i].prompt_tokens < 5 + 16)
            count[r[i].prompt_tokens - 5]++;
        out_sum += r[i].output_tokens;
    }
    for (int k = 1; k <= 6; k++)
        assert_near(count[k - 1], N * pow(k, -1.2) / norm, 0.04, "zipf pmf");
    assert_near(out_sum / N, 4.5, 0.01, "uniform mean");
    free(r);
    /* Duration: every arrival within it, about rate * duration requests. */
    s = make_spec(0, "fixed:1", "fixed:1");
    s.duration_s = 1000;
    s.rate = 5;
    size_t n = gen_all(&s, &r);
    assert_in_range(n, 4700, 5300);
    assert_true(r[n - 1].arrival_ns <= 1000 * SS_NS_PER_S);
    assert_true(r[n - 1].arrival_ns > 990 * SS_NS_PER_S);
    for (size_t i = 1; i < n; i++)
        assert_true(r[i].arrival_ns >= r[i - 1].arrival_ns);
    free(r);
    tu_assert_no_leaks();
}

static void test_dist_specs(void **state)
{
    (void)state;
    trace_len_dist d;
    ss_errbuf eb = {""};
    assert_int_equal(trace_len_dist_parse(&d, "lognormal:1020:0.5", &eb), 0);
    assert_int_equal(d.kind, TRACE_LEN_LOGNORMAL);
    assert_true(d.a == 1020 && d.b == 0.5 && d.c == 1 && d.d == TRACE_MAX_TOKENS);
    assert_int_equal(trace_len_dist_parse(&d, "lognormal:1020:0.5:10:8192", &eb), 0);
    assert_true(d.c == 10 && d.d == 8192);
    assert_int_equal(trace_len_dist_parse(&d, "zipf:1.5:1:100", &eb), 0);
    assert_true(d.kind == TRACE_LEN_ZIPF && d.a == 1.5 && d.b == 1 && d.c == 100);
    assert_int_equal(trace_len_dist_parse(&d, "uniform:3:3", &eb), 0);
    assert_int_equal(trace_len_dist_parse(&d, "fixed:7", &eb), 0);
    assert_true(d.kind == TRACE_LEN_FIXED && d.a == 7);
    assert_int_equal(trace_len_dist_parse(&d, "quantiles:0=1,0.25=2,1=9", &eb), 0);
    assert_true(d.n_knots == 3 && d.knot_p[1] == 0.25 && d.knot_v[2] == 9);
    static const struct {
        const char *spec, *msg;
    } bad[] = {
        {"lognormal:abc:1", "'lognormal:abc:1': MEDIAN: not a number: 'abc'"},
        {"lognormal:0:1", "'lognormal:0:1': need MEDIAN > 0 and SIGMA >= 0"},
        {"lognormal:10:1:5", "'lognormal:10:1:5': missing parameter MAX"},
        {"lognormal:10:1:50:5", "'lognormal:10:1:50:5': MIN must be <= MAX"},
        {"fixed:0", "'fixed:0': N: must be in [1, 10000000], got 0"},
        {"fixed:2.5", "'fixed:2.5': N: must be an integer, got 2.5"},
        {"fixed:1:2", "'fixed:1:2': too many parameters (want fixed:N)"},
        {"fixed", "'fixed': missing parameters after 'fixed:'"},
        {"uniform:5:2", "'uniform:5:2': LO must be <= HI"},
        {"uniform:5", "'uniform:5': missing parameter HI"},
        {"zipf:0:1:10", "'zipf:0:1:10': S must be in (0, 100], got 0"},
        {"zipf:1:1:20000000", "'zipf:1:1:20000000': MAX: must be in [1, 10000000], got 20000000"},
        /* a huge value reads as itself, not as 309 digits */
        {"fixed:1e308", "'fixed:1e308': N: must be in [1, 10000000], got 1e+308"},
        {"zipf:1:-1e300:9", "'zipf:1:-1e300:9': MIN: must be in [1, 10000000], got -1e+300"},
        {"quantiles:0=1", "'quantiles:0=1': need 2 to 32 knots P=V, got 1"},
        {"quantiles:0=1,0.5", "'quantiles:0=1,0.5': knot '0.5' is not P=V with two numbers"},
        {"quantiles:0.1=1,1=5", "'quantiles:0.1=1,1=5': the first knot must be at P=0"},
        {"quantiles:0=1,0.5=9,0.5=10,1=11", "'quantiles:0=1,0.5=9,0.5=10,1=11': P must increase"},
        {"quantiles:0=5,1=4", "'quantiles:0=5,1=4': V must not decrease (4 after 5)"},
        {"quantiles:0=0,1=4", "'quantiles:0=0,1=4': V must be in [1, 10000000], got 0"},
        {"poisson:3", "'poisson:3': unknown distribution (known: fixed:N"},
        {"", "'': unknown distribution"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memset(&d, 0x5a, sizeof d);
        trace_len_dist before = d;
        int rc = trace_len_dist_parse(&d, bad[i].spec, &eb);
        if (rc != SS_EPARSE || strncmp(eb.msg, bad[i].msg, strlen(bad[i].msg)))
            fail_msg("spec '%s': rc %d, got '%s', want '%s'", bad[i].spec, rc, eb.msg,
                     bad[i].msg);
        assert_memory_equal(&d, &before, sizeof d); /* unchanged on error */
    }
    /* 33 knots is one too many. */
    char many[1024];
    size_t len = (size_t)snprintf(many, sizeof many, "quantiles:0=1");
    for (int i = 1; i < 33; i++)
        len += (size_t)snprintf(many + len, sizeof many - len, ",%g=%d", i / 32.0, i + 1);
    assert_int_equal(trace_len_dist_parse(&d, many, &eb), SS_EPARSE);
    assert_non_null(strstr(eb.msg, "more than 32 knots"));
    tu_assert_no_leaks();
}

static void test_gen_spec_check(void **state)
{
    (void)state;
    trace_gen_spec ok = make_spec(10, "fixed:1", "fixed:1");
    ss_errbuf eb = {""};
    assert_int_equal(trace_gen_spec_check(&ok, &eb), 0);
    trace_gen_spec s = ok;
    s.rate = 0;
    assert_int_equal(trace_gen_spec_check(&s, &eb), SS_EINVAL);
    assert_non_null(strstr(eb.msg, "rate"));
    s = ok;
    s.rate = -3;
    assert_int_equal(trace_gen_spec_check(&s, &eb), SS_EINVAL);
    s = ok;
    s.cv = 0;
    assert_int_equal(trace_gen_spec_check(&s, &eb), SS_EINVAL);
    assert_non_null(strstr(eb.msg, "cv"));
    s = ok;
    s.n_requests = 0;
    assert_int_equal(trace_gen_spec_check(&s, &eb), SS_EINVAL);
    s = ok;
    s.tenant = "a,b";
    assert_int_equal(trace_gen_spec_check(&s, &eb), SS_EINVAL);
    s = ok;
    s.output.a = 0;
    assert_int_equal(trace_gen_spec_check(&s, &eb), SS_EINVAL);
    assert_non_null(strstr(eb.msg, "output"));
    trace_gen *g = NULL;
    assert_int_equal(trace_gen_create(&g, &s, &eb), SS_EINVAL);
    assert_null(g);
    tu_assert_no_leaks();
}

static int group_teardown(void **state)
{
    (void)state;
    tu_tmpdir_cleanup();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_native_fixture),
        cmocka_unit_test(test_native_hash_ids),
        cmocka_unit_test(test_azure_fixture),
        cmocka_unit_test(test_vidur_fixture),
        cmocka_unit_test(test_autodetect_and_forced),
        cmocka_unit_test(test_bad_input_messages),
        cmocka_unit_test(test_hostile_lines),
        cmocka_unit_test(test_random_inputs_never_crash),
        cmocka_unit_test(test_tenant_limit),
        cmocka_unit_test(test_constant_memory),
        cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test(test_gzip),
        cmocka_unit_test(test_sort),
        cmocka_unit_test(test_mooncake_max_hash_ids),
        cmocka_unit_test(test_stats_small),
        cmocka_unit_test(test_real_azure_conv),
        cmocka_unit_test(test_real_vidur_lengths_only),
        cmocka_unit_test(test_azure_2024_fixture),
        cmocka_unit_test(test_burstgpt_fixture),
        cmocka_unit_test(test_burstgpt_bad_input),
        cmocka_unit_test(test_mooncake_fixture),
        cmocka_unit_test(test_mooncake_bad_json),
        cmocka_unit_test(test_spread),
        cmocka_unit_test(test_spread_limits),
        cmocka_unit_test(test_alloc_failures_new_formats),
        cmocka_unit_test(test_mooncake_constant_memory),
        cmocka_unit_test(test_real_mooncake),
        cmocka_unit_test(test_gen_determinism_and_streams),
        cmocka_unit_test(test_gen_csv_round_trip),
        cmocka_unit_test(test_gen_statistics),
        cmocka_unit_test(test_gen_zipf_uniform_and_duration),
        cmocka_unit_test(test_dist_specs),
        cmocka_unit_test(test_gen_spec_check),
    };
    return cmocka_run_group_tests_name("trace", tests, NULL, group_teardown);
}
