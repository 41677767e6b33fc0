/* Fuzz target of the synthetic trace generator's length-distribution specs ("fixed:N",
 * "uniform:LO:HI", "lognormal:...", "zipf:...", "quantiles:P=V,...") and prefix-identity keys:
 * the input is the prompt spec, optionally a newline and the output spec, optionally a newline
 * and blank-separated KEY=VALUE prefix-identity settings (groups=2 system=fixed:600 ...).
 * Valid specs then generate 200 requests, which must have token counts in [1,
 * TRACE_MAX_TOKENS], arrive in order and survive a round trip through the native CSV writer
 * and reader unchanged (session ids and block ids included). Not a test of the distributions'
 * shapes. */
#include "fuzz.h"

#include "core/ss_alloc.h"
#include "trace/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_REQ 200

/* Generate the trace twice: once record by record, once through the CSV writer and the
 * native reader; both must agree. */
static void round_trip(const trace_gen_spec *spec)
{
    trace_gen *g = NULL;
    ss_errbuf eb = {""};
    int rc = trace_gen_create(&g, spec, &eb);
    fz_check_error(rc, &eb, NULL);
    if (rc)
        return;
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    FZ_ASSERT(mem != NULL);
    FZ_ASSERT(trace_gen_write_csv(spec, mem, NULL, &eb) == SS_OK);
    FZ_ASSERT(fclose(mem) == 0);
    FILE *f = fmemopen(buf, len, "rb");
    FZ_ASSERT(f != NULL);
    trace_reader *r = NULL;
    FZ_ASSERT(trace_reader_open_stream(&r, f, "gen.csv", "native", &eb) == SS_OK);
    trace_rec a, b;
    int n = 0;
    ss_time last = 0;
    while ((rc = trace_gen_next(g, &a, &eb)) == 1) {
        FZ_ASSERT(a.prompt_tokens >= 1 && a.prompt_tokens <= TRACE_MAX_TOKENS);
        FZ_ASSERT(a.output_tokens >= 1 && a.output_tokens <= TRACE_MAX_TOKENS);
        rc = trace_reader_next(r, &b, &eb);
        if (rc != 1)
            fz_fail(__FILE__, __LINE__, "request %d: the CSV reads back %d: %s", n, rc, eb.msg);
        FZ_ASSERT(a.arrival_ns == b.arrival_ns && a.prompt_tokens == b.prompt_tokens &&
                  a.output_tokens == b.output_tokens && a.id == b.id);
        FZ_ASSERT(a.session_id == b.session_id && a.n_prefix_blocks == b.n_prefix_blocks);
        FZ_ASSERT(!a.n_prefix_blocks ||
                  !memcmp(a.prefix_blocks, b.prefix_blocks, a.n_prefix_blocks * sizeof(uint32_t)));
        FZ_ASSERT(a.arrival_ns >= last);
        last = a.arrival_ns;
        n++;
    }
    FZ_ASSERT(rc == 0);
    FZ_ASSERT(n == N_REQ || (trace_gen_has_prefix(spec) && n < N_REQ)); /* a prefix spec's
                                                                          duration may end it */
    FZ_ASSERT(trace_reader_next(r, &b, &eb) == 0);
    trace_reader_close(&r);
    fclose(f);
    free(buf);
    trace_gen_destroy(&g);
}

/* Apply "KEY=VALUE KEY=VALUE ..." through trace_gen_spec_set; errors must be well formed.
 * A duration keeps conversations from running 200 requests past a think time of 1e6 s. */
static int set_keys(trace_gen_spec *spec, char *keys)
{
    ss_errbuf eb = {""};
    for (char *save = NULL, *kv = strtok_r(keys, " \n", &save); kv;
         kv = strtok_r(NULL, " \n", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq)
            return SS_EPARSE;
        *eq = '\0';
        int rc = trace_gen_spec_set(spec, kv, eq + 1, &eb);
        if (rc == SS_ENOTFOUND)
            return rc;
        fz_check_error(rc, &eb, NULL);
        if (rc)
            return rc;
    }
    spec->duration_s = 3600;
    return SS_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_begin();
    char *text = ss_strndup((const char *)data, size); /* stops at a NUL byte, as a C string */
    FZ_ASSERT(text != NULL);
    char *nl = strchr(text, '\n');
    char *out_spec = text, *keys = NULL;
    if (nl) {
        *nl = '\0';
        out_spec = nl + 1;
        if ((nl = strchr(out_spec, '\n'))) {
            *nl = '\0';
            keys = nl + 1;
        }
    }
    trace_gen_spec spec = {.seed = size, .n_requests = N_REQ, .rate = 50,
                           .arrival = TRACE_ARRIVAL_GAMMA, .cv = 3, .tenant = "fuzz"};
    ss_errbuf eb = {""};
    int rc = trace_len_dist_parse(&spec.prompt, text, &eb);
    fz_check_error(rc, &eb, NULL);
    if (rc == SS_OK) {
        rc = trace_len_dist_parse(&spec.output, out_spec, &eb);
        fz_check_error(rc, &eb, NULL);
    }
    if (rc == SS_OK && keys)
        rc = set_keys(&spec, keys);
    if (rc == SS_OK) {
        rc = trace_gen_spec_check(&spec, &eb);
        fz_check_error(rc, &eb, NULL);
        FZ_ASSERT(rc == SS_OK || keys); /* parsed distributions alone are valid specs */
        if (rc == SS_OK)
            round_trip(&spec);
    }
    ss_free(text);
    fz_end();
    return 0;
}
