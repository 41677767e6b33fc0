/* Fuzz target of ServeGen client files (src/workload/servegen*.c), built twice:
 * FZ_SG_DATASET 1 reads the input as a chunk-N-dataset.json (plain or gzip) window by window
 * with the streaming JSON reader; 0 uses it as a chunk-N-trace.csv next to a small valid
 * dataset and draws up to 20,000 requests from the client through wl_source. Checks the error
 * contract and sticky errors, increasing window keys, sorted PMF supports with cumulative
 * probabilities, and requests with >= 1 token that never go back in time. In fuzzing builds
 * servegen.c allows fewer requests per window, so that no input takes seconds. */
#include "fuzz.h"

#include "workload/wl_int.h"
#include "workload/workload.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#ifndef FZ_SG_DATASET
#error "build with -DFZ_SG_DATASET=1 (dataset.json) or 0 (trace.csv)"
#endif

#define CLIENT_DIR "sg/language/fz"
#define MAX_REQUESTS 20000

static void check_pmf(const wl__pmf *p)
{
    FZ_ASSERT(p->n >= 1 && p->n <= p->cap && p->val && p->cum);
    for (uint32_t i = 0; i < p->n; i++) {
        FZ_ASSERT(p->val[i] <= TRACE_MAX_TOKENS && p->cum[i] >= 0 && isfinite(p->cum[i]));
        FZ_ASSERT(i == 0 || (p->val[i] > p->val[i - 1] && p->cum[i] >= p->cum[i - 1]));
    }
    FZ_ASSERT(fabs(p->cum[p->n - 1] - 1) < 1e-5);
    FZ_ASSERT(wl__pmf_sample(p, 0) == p->val[0] || p->cum[0] == 0);
    uint32_t last = wl__pmf_sample(p, 0.999999);
    FZ_ASSERT(last >= p->val[0] && last <= p->val[p->n - 1]);
}

static void read_dataset(const uint8_t *data, size_t size)
{
    char path[1024];
    fz_write(path, sizeof path, CLIENT_DIR "/chunk-1-dataset.json", data, size);
    wl__sg_dataset *d = NULL;
    ss_errbuf eb = {""};
    int rc = wl__sg_dataset_open(&d, path, &eb);
    fz_check_error(rc, &eb, path);
    if (rc)
        return;
    wl__sg_window w;
    memset(&w, 0, sizeof w);
    int64_t prev = -1;
    while ((rc = wl__sg_dataset_next(d, &w, &eb)) == 1) {
        FZ_ASSERT(w.ts > prev);
        prev = w.ts;
        check_pmf(&w.input);
        check_pmf(&w.output);
    }
    fz_check_error(rc, &eb, path);
    if (rc < 0) {
        ss_errbuf again = {""};
        FZ_ASSERT(wl__sg_dataset_next(d, &w, &again) == rc && !strcmp(again.msg, eb.msg));
    }
    wl__sg_window_free(&w);
    wl__sg_dataset_close(&d);
}

static const char dataset[] =
    "{\"0\": {\"input_tokens\": \"{10: 0.25, 20: 0.75}\",\n"
    "       \"output_tokens\": \"{0: 0.5, 5: 0.5}\"},\n"
    " \"1200\": {\"output_tokens\": \"{9: 0.8, 7: 0.2}\", \"input_tokens\": \"{100: 1.0}\"}}\n";

static void run_client(const uint8_t *data, size_t size)
{
    char path[1024], dir[1024];
    fz_write(path, sizeof path, CLIENT_DIR "/chunk-1-dataset.json", (const uint8_t *)dataset,
             sizeof dataset - 1);
    fz_write(path, sizeof path, CLIENT_DIR "/chunk-1-trace.csv", data, size);
    fz_mkdir(dir, sizeof dir, "sg");
    wl_tenant_spec t = {.name = "sg", .servegen = "language/fz/1", .rate_scale = 1,
                        .weight = 1};
    ss_errbuf eb = {""};
    FZ_ASSERT(wl_tier_mix_make(&t.tiers, "uniform", 1, 1, &eb) == SS_OK);
    wl_source *s = NULL;
    int rc = wl_source_create(&s, &t, 1, 1, dir, &eb);
    fz_check_error(rc, &eb, NULL);
    if (rc)
        return;
    trace_rec rec;
    ss_time prev = 0;
    for (int n = 0; n < MAX_REQUESTS && (rc = wl_source_next(s, &rec, &eb)) == 1; n++) {
        FZ_ASSERT(rec.arrival_ns >= prev);
        FZ_ASSERT(rec.prompt_tokens >= 1 && rec.output_tokens >= 1);
        prev = rec.arrival_ns;
    }
    fz_check_error(rc, &eb, NULL);
    if (rc < 0) {
        ss_errbuf again = {""};
        FZ_ASSERT(wl_source_next(s, &rec, &again) == rc && !strcmp(again.msg, eb.msg));
    }
    (void)wl_source_digest(s);
    wl_source_destroy(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_begin();
    if (FZ_SG_DATASET)
        read_dataset(data, size);
    else
        run_client(data, size);
    fz_end();
    return 0;
}
