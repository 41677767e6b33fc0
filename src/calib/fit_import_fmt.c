/* The log formats of `slicesim fit import`, one reader each: a per-request CSV, the JSON of
 * vLLM's serving benchmark, and inference-perf's reports. Each turns its files into requests
 * with send times on one clock and stages, with "FILE:LINE: field: what" (CSV) or "FILE:
 * field: what" (JSON) errors. Not for writing the result (fit_import.c).
 *
 * vllm-bench: vllm/benchmarks/serve.py of vllm-project/vllm (`vllm bench serve`, formerly
 * benchmarks/benchmark_serving.py), read at commit 009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1:
 * --save-result writes request_rate (a number or "inf"), burstiness, max_concurrency,
 * model_id, duration (s), completed, failed and the summaries; --save-detailed adds per
 * request input_lens, output_lens (0 for a failed request), ttfts (s), itls (lists, s),
 * latencies (s), start_times (s, the client's clock) and errors ("" when it succeeded).
 * Older versions lack latencies and start_times: E2E is then TTFT + the sum of the ITLs, and
 * the send times are generated as the client drew them (get_request: gaps from a gamma
 * distribution of shape burstiness and mean 1 / request_rate, exponential at burstiness 1,
 * cumulated and rescaled so that the last request is sent at n / request_rate; all at 0 for
 * rate inf), from seed CALIB_IMPORT_SEED: an assumption, said on the notes stream.
 *
 * inference-perf: inference_perf/reportgen/base.py of kubernetes-sigs/inference-perf:
 * stage_N_lifecycle_metrics.json (load_summary.count, .requested_rate; successes.latency.
 * time_to_first_token and .request_latency with mean, p90, ... in seconds) and
 * per_request_lifecycle_metrics.json (a list of {start_time, end_time, request, response,
 * info, error}: info.input_tokens and info.output_tokens at commit e8e0aa99 (2025-10-16), the
 * client of the project's training data; info.request_metrics.text.input_tokens and
 * info.response_metrics.output_tokens in later versions; error null when it succeeded). */
#include "calib/fit_import_int.h"

#include "core/ss_alloc.h"
#include "core/ss_csv.h"
#include "core/ss_parse.h"
#include "core/ss_rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* {======================================================================
 * requests-csv
 * ======================================================================= */

enum { RQ_ARRIVAL, RQ_PROMPT, RQ_OUTPUT, RQ_TTFT, RQ_E2E, RQ_STAGE, RQ_OK, RQ__N };

static int csv_u32(const ss_csv *c, int col, const char *name, int64_t lo, int64_t hi,
                   uint32_t *out, ss_errbuf *eb)
{
    const char *s = ss_csv_get(c, col);
    int64_t v;
    if (ss_parse_i64z(s, &v) || v < lo || v > hi)
        return ss_csv_err(c, eb, SS_EPARSE, name, "'%.60s' is not an integer in [%lld, %lld]",
                          s, (long long)lo, (long long)hi);
    *out = (uint32_t)v;
    return SS_OK;
}

static int csv_ms(const ss_csv *c, int col, const char *name, double *out, ss_errbuf *eb)
{
    const char *s = ss_csv_get(c, col);
    if (ss_parse_decimalz(s, out) || !(*out > 0) || !isfinite(*out))
        return ss_csv_err(c, eb, SS_EPARSE, name, "'%.60s' is not a decimal number > 0 (ms)",
                          s);
    return SS_OK;
}

/* The columns of a requests CSV: arrival_s or send_s, the tokens and latencies; stage and ok
 * optional (-1). */
static int csv_columns(const ss_csv *c, int *col, size_t n_files, ss_errbuf *eb)
{
    static const char *const names[RQ__N] = {"arrival_s", "prompt_tokens", "output_tokens",
                                             "ttft_ms", "e2e_ms", "stage", "ok"};
    for (int i = 0; i < RQ__N; i++)
        col[i] = ss_csv_col(c, names[i]);
    if (col[RQ_ARRIVAL] < 0)
        col[RQ_ARRIVAL] = ss_csv_col(c, "send_s");
    if (col[RQ_ARRIVAL] < 0)
        return ss_err(eb, SS_EPARSE, "%s:%u: arrival_s: missing column (or send_s)", c->path,
                      c->hdr_line);
    for (int i = RQ_PROMPT; i <= RQ_E2E; i++)
        if (col[i] < 0)
            return ss_err(eb, SS_EPARSE, "%s:%u: %s: missing column", c->path, c->hdr_line,
                          names[i]);
    if (n_files > 1 && col[RQ_STAGE] >= 0)
        return ss_err(eb, SS_EPARSE, "%s:%u: stage: a column of a single file only (with "
                      "several files, file K is stage K)", c->path, c->hdr_line);
    return SS_OK;
}

/* One row into *r: its stage (file_stage unless the row names one) and, for a request that
 * succeeded, its latencies. */
static int csv_row(const ss_csv *c, const int *col, uint32_t file_stage, calib__imp_req *r,
                   ss_errbuf *eb)
{
    const char *s = ss_csv_get(c, col[RQ_ARRIVAL]);
    const char *arr_name = c->hdr[col[RQ_ARRIVAL]];
    if (ss_parse_decimalz(s, &r->arrival_s) || !(r->arrival_s >= 0) || r->arrival_s > 1e9)
        return ss_csv_err(c, eb, SS_EPARSE, arr_name, "'%.60s' is not a decimal time >= 0 (s)",
                          s);
    uint32_t ok = 1;
    r->stage = file_stage;
    int rc = csv_u32(c, col[RQ_PROMPT], "prompt_tokens", 1, 10000000, &r->prompt, eb);
    if (!rc)
        rc = csv_u32(c, col[RQ_OUTPUT], "output_tokens", 1, 10000000, &r->output, eb);
    if (!rc && col[RQ_STAGE] >= 0 && *ss_csv_get(c, col[RQ_STAGE]))
        rc = csv_u32(c, col[RQ_STAGE], "stage", 0, 999, &r->stage, eb);
    if (!rc && col[RQ_OK] >= 0 && *ss_csv_get(c, col[RQ_OK]))
        rc = csv_u32(c, col[RQ_OK], "ok", 0, 1, &ok, eb);
    r->ok = (int)ok;
    if (rc || !ok)
        return rc;
    rc = csv_ms(c, col[RQ_TTFT], "ttft_ms", &r->ttft_ms, eb);
    if (!rc)
        rc = csv_ms(c, col[RQ_E2E], "e2e_ms", &r->e2e_ms, eb);
    if (!rc && r->e2e_ms < r->ttft_ms)
        rc = ss_csv_err(c, eb, SS_EPARSE, "e2e_ms", "'%s' is below ttft_ms (%s)",
                        ss_csv_get(c, col[RQ_E2E]), ss_csv_get(c, col[RQ_TTFT]));
    return rc;
}

/* File k of several: its requests' times from its own first send, after the end of the
 * previous file's last request. */
static double shift_file(calib__imp_data *d, size_t first, double offset)
{
    double t0 = INFINITY, end = 0;
    for (size_t i = first; i < d->n_reqs; i++)
        t0 = fmin(t0, d->reqs[i].arrival_s);
    for (size_t i = first; i < d->n_reqs; i++) {
        calib__imp_req *r = &d->reqs[i];
        r->arrival_s += offset - t0;
        end = fmax(end, r->arrival_s + (r->ok ? r->e2e_ms / 1000 : 0));
    }
    return end;
}

static int csv_file(calib__imp_data *d, const calib_import_opts *o, size_t k, ss_errbuf *eb)
{
    ss_csv c;
    int col[RQ__N];
    int rc = ss_csv_open(&c, o->files[k], 0, eb);
    if (rc)
        return rc;
    rc = csv_columns(&c, col, o->n_files, eb);
    size_t rows = 0;
    while (!rc && (rc = ss_csv_next(&c, eb)) == 1) {
        calib__imp_req r = {0};
        rc = csv_row(&c, col, (uint32_t)k, &r, eb);
        if (!rc)
            rc = calib__imp_add_req(d, &r, eb);
        rows++;
    }
    if (!rc && !rows)
        rc = ss_err(eb, SS_EPARSE, "%s:%u: prompt_tokens: no request after the header",
                    o->files[k], c.hdr_line);
    ss_csv_close(&c);
    return rc;
}

int calib__imp_requests_csv(calib__imp_data *d, const calib_import_opts *o, ss_errbuf *eb)
{
    double offset = 0;
    for (size_t k = 0; k < o->n_files; k++) {
        size_t first = d->n_reqs;
        int rc = csv_file(d, o, k, eb);
        if (rc)
            return rc;
        if (o->n_files > 1)
            offset = shift_file(d, first, offset);
    }
    uint32_t max_stage = 0;
    for (size_t i = 0; i < d->n_reqs; i++)
        max_stage = d->reqs[i].stage > max_stage ? d->reqs[i].stage : max_stage;
    for (uint32_t k = 0; k <= max_stage; k++) {
        calib__imp_stage *s;
        int rc = calib__imp_add_stage(d, &s, eb);
        if (rc)
            return rc;
    }
    return SS_OK;
}

/* }====================================================================== */

/* {======================================================================
 * JSON fields
 * ======================================================================= */

/* Field key of o as a number into *out: 1 found, 0 absent or null (when optional), else
 * "FILE: PATH: what". */
static int j_num(const ss_json *o, const char *key, const char *file, const char *path,
                 int required, double *out, ss_errbuf *eb)
{
    const ss_json *v = ss_json_get(o, key);
    if (!v || v->type == SS_JSON_NULL)
        return required ? ss_err(eb, SS_EPARSE, "%s: %s: missing", file, path) : 0;
    if (v->type != SS_JSON_NUM)
        return ss_err(eb, SS_EPARSE, "%s: %s: expected a number, got %s", file, path,
                      ss_json_type_name(v->type));
    *out = v->u.num;
    return 1;
}

/* An array field of n numbers (n == 0: any length, set to it) or absent (NULL, when
 * optional). */
static int j_array(const ss_json *o, const char *key, const char *file, int required,
                   size_t *n, const ss_json **out, ss_errbuf *eb)
{
    const ss_json *v = ss_json_get(o, key);
    *out = NULL;
    if (!v || v->type == SS_JSON_NULL)
        return required ? ss_err(eb, SS_EPARSE, "%s: %s: missing (the file has no per-request "
                                 "figures: save it with --save-result --save-detailed)", file,
                                 key)
                        : SS_OK;
    if (v->type != SS_JSON_ARR)
        return ss_err(eb, SS_EPARSE, "%s: %s: expected an array, got %s", file, key,
                      ss_json_type_name(v->type));
    if (*n && v->n != *n)
        return ss_err(eb, SS_EPARSE, "%s: %s: %zu entries, input_lens has %zu", file, key,
                      v->n, *n);
    *n = v->n;
    *out = v;
    return SS_OK;
}

/* Element i of array a as a number in [lo, hi]. */
static int j_elem(const ss_json *a, size_t i, const char *file, const char *key, double lo,
                  double hi, double *out, ss_errbuf *eb)
{
    const ss_json *v = &a->u.items[i];
    if (v->type != SS_JSON_NUM || !(v->u.num >= lo && v->u.num <= hi))
        return ss_err(eb, SS_EPARSE, "%s: %s[%zu]: expected a number in [%g, %g]", file, key,
                      i, lo, hi);
    *out = v->u.num;
    return SS_OK;
}

/* }====================================================================== */

/* {======================================================================
 * vllm-bench
 * ======================================================================= */

/* The per-request arrays of one benchmark file. */
typedef struct vb_arrays {
    const ss_json *in, *out, *ttft, *itl, *lat, *start, *err;
    size_t n;
} vb_arrays;

static int vb_get_arrays(const ss_json *j, const char *file, vb_arrays *a, ss_errbuf *eb)
{
    a->n = 0;
    int rc = j_array(j, "input_lens", file, 1, &a->n, &a->in, eb);
    if (!rc && !a->n)
        rc = ss_err(eb, SS_EPARSE, "%s: input_lens: no request", file);
    if (!rc)
        rc = j_array(j, "output_lens", file, 1, &a->n, &a->out, eb);
    if (!rc)
        rc = j_array(j, "ttfts", file, 1, &a->n, &a->ttft, eb);
    if (!rc)
        rc = j_array(j, "latencies", file, 0, &a->n, &a->lat, eb);
    if (!rc && !a->lat)
        rc = j_array(j, "itls", file, 1, &a->n, &a->itl, eb);
    if (!rc)
        rc = j_array(j, "start_times", file, 0, &a->n, &a->start, eb);
    if (!rc)
        rc = j_array(j, "errors", file, 0, &a->n, &a->err, eb);
    return rc;
}

/* Request i succeeded: its error is "" (or, without errors, it has output tokens). */
static int vb_ok(const vb_arrays *a, size_t i, double out_tokens)
{
    if (a->err) {
        const ss_json *e = &a->err->u.items[i];
        return e->type == SS_JSON_NULL || (e->type == SS_JSON_STR && e->n == 0);
    }
    return out_tokens > 0;
}

/* E2E of request i, s: latencies[i], else TTFT + the sum of its ITLs. */
static int vb_e2e(const vb_arrays *a, size_t i, const char *file, double ttft, double *out,
                  ss_errbuf *eb)
{
    if (a->lat)
        return j_elem(a->lat, i, file, "latencies", 0, 1e9, out, eb);
    const ss_json *l = &a->itl->u.items[i];
    if (l->type != SS_JSON_ARR)
        return ss_err(eb, SS_EPARSE, "%s: itls[%zu]: expected an array, got %s", file, i,
                      ss_json_type_name(l->type));
    double sum = ttft, x = 0;
    for (size_t k = 0; k < l->n; k++) {
        int rc = j_elem(l, k, file, "itls[i]", 0, 1e9, &x, eb);
        if (rc)
            return ss_err(eb, SS_EPARSE, "%s: itls[%zu][%zu]: expected a number >= 0", file,
                          i, k);
        sum += x;
    }
    *out = sum;
    return SS_OK;
}

static int vb_request(const vb_arrays *a, size_t i, const char *file, calib__imp_req *r,
                      ss_errbuf *eb)
{
    double in = 0, out = 0, ttft = 0, e2e = 0;
    int rc = j_elem(a->in, i, file, "input_lens", 1, 1e7, &in, eb);
    if (!rc)
        rc = j_elem(a->out, i, file, "output_lens", 0, 1e7, &out, eb);
    if (rc)
        return rc;
    r->prompt = (uint32_t)in;
    r->output = (uint32_t)out;
    r->ok = vb_ok(a, i, out);
    if (!r->ok)
        return SS_OK;
    rc = j_elem(a->ttft, i, file, "ttfts", 1e-9, 1e9, &ttft, eb);
    if (!rc)
        rc = vb_e2e(a, i, file, ttft, &e2e, eb);
    if (!rc && e2e < ttft)
        rc = ss_err(eb, SS_EPARSE, "%s: %s[%zu]: %g s is below its TTFT (%g s)", file,
                    a->lat ? "latencies" : "itls", i, e2e, ttft);
    r->ttft_ms = ttft * 1000;
    r->e2e_ms = e2e * 1000;
    return rc;
}

/* The requested rate and burstiness: rate > 0 or inf ("inf" as the file writes it). */
static int vb_rate(const ss_json *j, const char *file, calib__imp_stage *s, double *rate,
                   double *burst, ss_errbuf *eb)
{
    const ss_json *v = ss_json_get(j, "request_rate");
    *rate = NAN;
    if (v && v->type == SS_JSON_STR && !strcmp(v->u.str, "inf"))
        *rate = INFINITY;
    else if (v && v->type == SS_JSON_NUM && v->u.num > 0)
        *rate = v->u.num;
    else if (v && v->type != SS_JSON_NULL)
        return ss_err(eb, SS_EPARSE, "%s: request_rate: expected a number > 0 or \"inf\"",
                      file);
    if (isfinite(*rate))
        snprintf(s->rate, sizeof s->rate, "%.15g", *rate);
    else if (!isnan(*rate))
        snprintf(s->rate, sizeof s->rate, "inf");
    *burst = 1;
    int rc = j_num(j, "burstiness", file, "burstiness", 0, burst, eb);
    if (rc > 0 && !(*burst > 0))
        return ss_err(eb, SS_EPARSE, "%s: burstiness: %g is not > 0", file, *burst);
    return rc < 0 ? rc : SS_OK;
}

/* Send times of the n requests from first, as vLLM's client draws them (the header). */
static int vb_generate(calib__imp_data *d, size_t first, const ss_json *j, const char *file,
                       calib__imp_stage *s, ss_errbuf *eb)
{
    double rate = 0, burst = 1;
    int rc = vb_rate(j, file, s, &rate, &burst, eb);
    if (rc)
        return rc;
    if (isnan(rate))
        return ss_err(eb, SS_EPARSE, "%s: request_rate: missing (needed for the send times: "
                      "the file has no start_times)", file);
    if (ss_json_get(j, "ramp_up_strategy"))
        return ss_err(eb, SS_EPARSE, "%s: ramp_up_strategy: a ramp-up's send times are not "
                      "generated; use a vLLM version that saves start_times", file);
    ss_rng rng;
    ss_rng_seed(&rng, CALIB_IMPORT_SEED, (uint64_t)(d->n_stages - 1));
    size_t n = d->n_reqs - first;
    double t = 0;
    for (size_t i = first; i < d->n_reqs; i++) {
        if (isfinite(rate))
            t += isinf(burst) ? 1 / rate : ss_rng_gamma(&rng, burst, 1 / (rate * burst));
        d->reqs[i].arrival_s = t;
    }
    if (isfinite(rate) && t > 0)
        for (size_t i = first; i < d->n_reqs; i++)
            d->reqs[i].arrival_s *= ((double)n / rate) / t;
    char note[1024];
    snprintf(note, sizeof note, "assumption: %s has no start_times: the send times of its %zu "
             "requests are generated as vLLM's client draws them (%s, seed %d), not measured",
             file, n, isinf(rate) ? "all at once, rate inf" : burst == 1 ? "Poisson at "
             "request_rate" : "gamma gaps at request_rate and burstiness", CALIB_IMPORT_SEED);
    return calib__imp_add_note(d, note, eb);
}

/* One benchmark file, stage k: its requests from offset on; returns its end in *end. */
static int vb_file(calib__imp_data *d, const char *file, double offset, double *end,
                   ss_errbuf *eb)
{
    ss_json *j = NULL;
    calib__imp_stage *s;
    vb_arrays a = {0};
    int rc = ss_json_read_file(&j, file, eb);
    if (!rc && j->type != SS_JSON_OBJ)
        rc = ss_err(eb, SS_EPARSE, "%s: json: expected an object, got %s", file,
                    ss_json_type_name(j->type));
    if (!rc)
        rc = calib__imp_add_stage(d, &s, eb);
    if (!rc)
        rc = vb_get_arrays(j, file, &a, eb);
    size_t first = d->n_reqs;
    for (size_t i = 0; !rc && i < a.n; i++) {
        calib__imp_req r = {.stage = (uint32_t)(d->n_stages - 1)};
        rc = vb_request(&a, i, file, &r, eb);
        if (!rc)
            rc = calib__imp_add_req(d, &r, eb);
    }
    const ss_json *model = j ? ss_json_get(j, "model_id") : NULL;
    if (!rc && model && model->type == SS_JSON_STR && !d->model_hint[0])
        snprintf(d->model_hint, sizeof d->model_hint, "%s", model->u.str);
    double t0 = INFINITY, x = 0, dur = 0;
    for (size_t i = 0; !rc && a.start && i < a.n; i++)
        if (!(rc = j_elem(a.start, i, file, "start_times", -1e12, 1e12, &x, eb)))
            t0 = fmin(t0, x);
    for (size_t i = 0; !rc && a.start && i < a.n; i++)
        d->reqs[first + i].arrival_s = a.start->u.items[i].u.num - t0;
    double rate = 0, burst = 1;
    if (!rc)
        rc = a.start ? vb_rate(j, file, s, &rate, &burst, eb)
                     : vb_generate(d, first, j, file, s, eb);
    if (!rc && j_num(j, "duration", file, "duration", 0, &dur, eb) < 0)
        rc = SS_EPARSE;
    *end = offset + fmax(dur, 0);
    for (size_t i = first; !rc && i < d->n_reqs; i++) {
        calib__imp_req *r = &d->reqs[i];
        r->arrival_s += offset;
        *end = fmax(*end, r->arrival_s + (r->ok ? r->e2e_ms / 1000 : 0));
    }
    ss_json_free(&j);
    return rc;
}

int calib__imp_vllm_bench(calib__imp_data *d, const calib_import_opts *o, ss_errbuf *eb)
{
    double offset = 0;
    for (size_t k = 0; k < o->n_files; k++) {
        int rc = vb_file(d, o->files[k], offset, &offset, eb);
        if (rc)
            return rc;
    }
    return SS_OK;
}

/* }====================================================================== */

/* {======================================================================
 * inference-perf
 * ======================================================================= */

/* A stage summary: its request count and figures (s in the file, ms here). */
static int ip_stage(calib__imp_data *d, const ss_json *j, const char *file, size_t *count,
                    ss_errbuf *eb)
{
    calib__imp_stage *s;
    const ss_json *load = ss_json_get(j, "load_summary");
    double c = 0, rate = 0;
    int rc = calib__imp_add_stage(d, &s, eb);
    if (!rc && (rc = j_num(load, "count", file, "load_summary.count", 1, &c, eb)) > 0)
        rc = c >= 0 && c <= 1e9 && c == floor(c)
                 ? SS_OK : ss_err(eb, SS_EPARSE, "%s: load_summary.count: %g is not a "
                                  "count", file, c);
    if (rc)
        return rc;
    *count = (size_t)c;
    if ((rc = j_num(load, "requested_rate", file, "load_summary.requested_rate", 0, &rate,
                    eb)) < 0)
        return rc;
    if (rc > 0)
        snprintf(s->rate, sizeof s->rate, "%.15g", rate);
    const ss_json *lat = ss_json_get(ss_json_get(j, "successes"), "latency");
    static const char *const metric[2] = {"time_to_first_token", "request_latency"};
    static const char *const stat[2] = {"mean", "p90"};
    for (int m = 0; m < 2; m++)
        for (int q = 0; q < 2; q++) {
            char path[96];
            double v = 0;
            snprintf(path, sizeof path, "successes.latency.%s.%s", metric[m], stat[q]);
            const ss_json *o = ss_json_get(lat, metric[m]);
            if (!o || o->type == SS_JSON_NULL)
                continue; /* no request succeeded: not measured */
            if ((rc = j_num(o, stat[q], file, path, 1, &v, eb)) < 0)
                return rc;
            if (!(v > 0))
                return ss_err(eb, SS_EPARSE, "%s: %s: %g is not > 0", file, path, v);
            s->fig[m * 2 + q] = v * 1000;
        }
    s->from_summary = 1;
    return SS_OK;
}

/* The input and output tokens of a per-request record, in either layout (the header). */
static int ip_tokens(const ss_json *info, const char *file, size_t i, double *in, double *out,
                     ss_errbuf *eb)
{
    const ss_json *in_v = ss_json_get(info, "input_tokens");
    const ss_json *out_v = ss_json_get(info, "output_tokens");
    if (!in_v)
        in_v = ss_json_get(ss_json_get(ss_json_get(info, "request_metrics"), "text"),
                           "input_tokens");
    if (!out_v)
        out_v = ss_json_get(ss_json_get(info, "response_metrics"), "output_tokens");
    if (!in_v || in_v->type != SS_JSON_NUM || !(in_v->u.num >= 1 && in_v->u.num <= 1e7))
        return ss_err(eb, SS_EPARSE, "%s: [%zu].info.input_tokens: missing or not a number in "
                      "[1, 1e7]", file, i);
    *in = in_v->u.num;
    *out = out_v && out_v->type == SS_JSON_NUM && out_v->u.num >= 0 && out_v->u.num <= 1e7
               ? out_v->u.num : 0;
    return SS_OK;
}

/* The per-request records, sorted by send time: requests without a stage yet. */
static int ip_requests(calib__imp_data *d, const ss_json *j, const char *file, ss_errbuf *eb)
{
    for (size_t i = 0; i < j->n; i++) {
        const ss_json *rec = &j->u.items[i];
        double start = 0, end = 0, in = 0, out = 0;
        int rc = rec->type == SS_JSON_OBJ ? SS_OK
                 : ss_err(eb, SS_EPARSE, "%s: [%zu]: expected an object", file, i);
        char path[64];
        snprintf(path, sizeof path, "[%zu].start_time", i);
        if (!rc && (rc = j_num(rec, "start_time", file, path, 1, &start, eb)) > 0)
            rc = SS_OK;
        if (!rc)
            rc = ip_tokens(ss_json_get(rec, "info"), file, i, &in, &out, eb);
        const ss_json *err = ss_json_get(rec, "error");
        calib__imp_req r = {.arrival_s = start, .prompt = (uint32_t)in, .output = (uint32_t)out,
                            .ok = !err || err->type == SS_JSON_NULL};
        snprintf(path, sizeof path, "[%zu].end_time", i);
        if (!rc && r.ok && (rc = j_num(rec, "end_time", file, path, 1, &end, eb)) > 0)
            rc = end >= start ? SS_OK
                              : ss_err(eb, SS_EPARSE, "%s: %s: before its start_time", file,
                                       path);
        r.e2e_ms = (end - start) * 1000;
        if (!rc)
            rc = calib__imp_add_req(d, &r, eb);
        if (rc)
            return rc;
    }
    return SS_OK;
}

static int cmp_arrival(const void *a, const void *b)
{
    const calib__imp_req *x = a, *y = b;
    if (x->arrival_s != y->arrival_s)
        return x->arrival_s < y->arrival_s ? -1 : 1;
    return (x->ttft_ms > y->ttft_ms) - (x->ttft_ms < y->ttft_ms); /* ties: stable below */
}

/* The first counts[0] requests in send order are stage 0, the next counts[1] stage 1, ...
 * (inference-perf sends the stages one after another). */
static int ip_assign(calib__imp_data *d, const size_t *counts, const char *req_file,
                     ss_errbuf *eb)
{
    size_t total = 0;
    for (size_t k = 0; k < d->n_stages; k++)
        total += counts[k];
    if (total != d->n_reqs)
        return ss_err(eb, SS_EPARSE, "%s: load_summary.count: the stage files count %zu "
                      "requests, the per-request file has %zu", req_file, total, d->n_reqs);
    /* the records are in completion order; the index breaks ties between equal send times */
    for (size_t i = 0; i < d->n_reqs; i++)
        d->reqs[i].ttft_ms = (double)i;
    qsort(d->reqs, d->n_reqs, sizeof *d->reqs, cmp_arrival);
    double t0 = d->n_reqs ? d->reqs[0].arrival_s : 0;
    size_t i = 0;
    for (size_t k = 0; k < d->n_stages; k++)
        for (size_t c = 0; c < counts[k]; c++, i++)
            d->reqs[i].stage = (uint32_t)k;
    for (i = 0; i < d->n_reqs; i++) {
        d->reqs[i].arrival_s -= t0;
        d->reqs[i].ttft_ms = 0; /* figures come from the summaries */
    }
    return SS_OK;
}

int calib__imp_inference_perf(calib__imp_data *d, const calib_import_opts *o, ss_errbuf *eb)
{
    size_t *counts = ss_calloc(o->n_files, sizeof *counts);
    const char *req_file = NULL;
    int rc = counts ? SS_OK : ss_err(eb, SS_ENOMEM, "out of memory");
    for (size_t k = 0; !rc && k < o->n_files; k++) {
        ss_json *j = NULL;
        const char *file = o->files[k];
        rc = ss_json_read_file(&j, file, eb);
        if (!rc && j->type == SS_JSON_ARR && req_file)
            rc = ss_err(eb, SS_EPARSE, "%s: json: a second per-request file (the first: %s)",
                        file, req_file);
        else if (!rc && j->type == SS_JSON_ARR) {
            req_file = file;
            rc = ip_requests(d, j, file, eb);
        } else if (!rc && j->type == SS_JSON_OBJ) {
            rc = ip_stage(d, j, file, &counts[d->n_stages], eb);
        } else if (!rc) {
            rc = ss_err(eb, SS_EPARSE, "%s: json: expected a stage summary (an object) or "
                        "per-request records (an array), got %s", file,
                        ss_json_type_name(j->type));
        }
        ss_json_free(&j);
    }
    if (!rc && !d->n_stages)
        rc = ss_err(eb, SS_EPARSE, "%s: load_summary: no stage summary among the files (give "
                    "stage_N_lifecycle_metrics.json, in stage order)", o->files[0]);
    if (!rc && !req_file)
        rc = ss_err(eb, SS_EPARSE, "%s: start_time: no per-request records among the files: "
                    "the stage summaries hold no send times or token counts for the trace "
                    "(give per_request_lifecycle_metrics.json: inference-perf's "
                    "report.request_lifecycle.per_request: true)", o->files[0]);
    if (!rc)
        rc = ip_assign(d, counts, req_file, eb);
    ss_free(counts);
    return rc;
}

/* }====================================================================== */
