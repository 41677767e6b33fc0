/* `slicesim fit import`: from the requests and stages a log reader gave (fit_import_fmt.c)
 * to the fit directory: the stage figures (numpy's linear percentiles, as fit computes the
 * simulated ones), the run's settings (options, else vLLM's defaults), the catalog model the
 * log names, and the directory written whole under a temporary name, then renamed. Not for
 * the formats themselves. */
#include "calib/fit_import_int.h"

#include "calib/fit_int.h"
#include "catalog/catalog.h"
#include "core/ss_alloc.h"
#include "core/ss_file.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define IMP_PATH_MAX 4096

int calib_import_format_known(const char *name)
{
    return name && (!strcmp(name, "vllm-bench") || !strcmp(name, "inference-perf") ||
                    !strcmp(name, "requests-csv"));
}

int calib__imp_add_req(calib__imp_data *d, const calib__imp_req *r, ss_errbuf *eb)
{
    if (ss_grow((void **)&d->reqs, &d->cap_reqs, d->n_reqs + 1, sizeof *d->reqs))
        return ss_err(eb, SS_ENOMEM, "out of memory");
    d->reqs[d->n_reqs++] = *r;
    return SS_OK;
}

int calib__imp_add_note(calib__imp_data *d, const char *text, ss_errbuf *eb)
{
    char *copy = ss_strdup(text);
    if (!copy || ss_grow((void **)&d->notes, &d->cap_notes, d->n_notes + 1, sizeof *d->notes)) {
        ss_free(copy);
        return ss_err(eb, SS_ENOMEM, "out of memory");
    }
    d->notes[d->n_notes++] = copy;
    return SS_OK;
}

int calib__imp_add_stage(calib__imp_data *d, calib__imp_stage **s_out, ss_errbuf *eb)
{
    if (ss_grow((void **)&d->stages, &d->cap_stages, d->n_stages + 1, sizeof *d->stages))
        return ss_err(eb, SS_ENOMEM, "out of memory");
    calib__imp_stage *s = &d->stages[d->n_stages++];
    memset(s, 0, sizeof *s);
    for (int m = 0; m < IMP_N_FIG; m++)
        s->fig[m] = NAN;
    *s_out = s;
    return SS_OK;
}

/* {======================================================================
 * Stages: their times and figures
 * ======================================================================= */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Each stage has a request, and its requests are sent after the previous stage's: start_s
 * is its first send time; a stage the log gives no rate has the rate its requests were sent
 * at, (n - 1) / (last send - first send). */
static int stage_times(calib__imp_data *d, const char *file, ss_errbuf *eb)
{
    for (size_t i = 0; i < d->n_reqs; i++) /* a trace's clock: integer ns from 0 */
        if (!(d->reqs[i].arrival_s >= 0 && d->reqs[i].arrival_s <= 1e9))
            return ss_err(eb, SS_EPARSE, "%s: arrival: a request is sent at %g s, outside "
                          "[0, 1e9] s of the run", file, d->reqs[i].arrival_s);
    for (size_t k = 0; k < d->n_stages; k++) {
        double lo = INFINITY, hi = -INFINITY;
        for (size_t i = 0; i < d->n_reqs; i++)
            if (d->reqs[i].stage == k) {
                lo = fmin(lo, d->reqs[i].arrival_s);
                hi = fmax(hi, d->reqs[i].arrival_s);
            }
        if (!isfinite(lo))
            return ss_err(eb, SS_EPARSE, "%s: stage: stage %zu has no request", file, k);
        if (k && !(lo > d->stages[k - 1].start_s))
            return ss_err(eb, SS_EPARSE, "%s: stage: stage %zu's first request is sent at "
                          "%.6f s, not after stage %zu's first (%.6f s)", file, k, lo, k - 1,
                          d->stages[k - 1].start_s);
        for (size_t i = 0; k && i < d->n_reqs; i++)
            if (d->reqs[i].stage == k - 1 && d->reqs[i].arrival_s >= lo)
                return ss_err(eb, SS_EPARSE, "%s: stage: stage %zu's requests are sent until "
                              "%.6f s, after stage %zu begins (%.6f s): stages must not "
                              "overlap", file, k - 1, d->reqs[i].arrival_s, k, lo);
        d->stages[k].start_s = lo;
        size_t n = 0;
        for (size_t i = 0; i < d->n_reqs; i++)
            n += d->reqs[i].stage == k;
        if (!d->stages[k].rate[0] && n > 1 && hi > lo) /* a log without one: as sent */
            snprintf(d->stages[k].rate, sizeof d->stages[k].rate, "%.6g",
                     (double)(n - 1) / (hi - lo));
    }
    return SS_OK;
}

/* The figures of stages without a summary, from their requests that succeeded (ms). */
static int stage_figures(calib__imp_data *d, ss_errbuf *eb)
{
    double *t = ss_malloc((d->n_reqs + 1) * sizeof *t);
    double *e = ss_malloc((d->n_reqs + 1) * sizeof *e);
    int rc = t && e ? SS_OK : ss_err(eb, SS_ENOMEM, "out of memory");
    for (size_t k = 0; !rc && k < d->n_stages; k++) {
        calib__imp_stage *s = &d->stages[k];
        size_t n = 0;
        double st = 0, se = 0;
        for (size_t i = 0; i < d->n_reqs && !s->from_summary; i++)
            if (d->reqs[i].stage == k && d->reqs[i].ok) {
                t[n] = d->reqs[i].ttft_ms;
                e[n++] = d->reqs[i].e2e_ms;
            }
        if (!n)
            continue; /* a summary's, or none succeeded: not measured */
        for (size_t i = 0; i < n; i++) { /* summed in send order, then sorted */
            st += t[i];
            se += e[i];
        }
        qsort(t, n, sizeof *t, cmp_double);
        qsort(e, n, sizeof *e, cmp_double);
        s->fig[IMP_TTFT] = st / (double)n;
        s->fig[IMP_TTFT90] = calib__fit_pct(t, n, 90);
        s->fig[IMP_E2E] = se / (double)n;
        s->fig[IMP_E2E90] = calib__fit_pct(e, n, 90);
    }
    ss_free(t);
    ss_free(e);
    return rc;
}

/* The tokens every request generated, as runs.csv's output_len: the mean over the requests
 * that succeeded, rounded; a failed request without a count is given it. */
static int output_len(calib__imp_data *d, const char *file, uint32_t *out, ss_errbuf *eb)
{
    double sum = 0;
    size_t n = 0;
    for (size_t i = 0; i < d->n_reqs; i++)
        if (d->reqs[i].ok && d->reqs[i].output) {
            sum += d->reqs[i].output;
            n++;
        }
    if (!n)
        return ss_err(eb, SS_EPARSE, "%s: output_tokens: no request succeeded with output "
                      "tokens", file);
    double mean = floor(sum / (double)n + 0.5);
    if (mean < 2)
        return ss_err(eb, SS_EPARSE, "%s: output_tokens: the requests that succeeded "
                      "generated %.0f token(s) on average; fit needs at least 2 (its ITL is "
                      "(E2E - TTFT) / (output - 1))", file, mean);
    *out = (uint32_t)mean;
    for (size_t i = 0; i < d->n_reqs; i++)
        if (!d->reqs[i].output)
            d->reqs[i].output = *out;
    return SS_OK;
}

/* }====================================================================== */

/* {======================================================================
 * The run's settings
 * ======================================================================= */

/* The catalog model a log's model name (a Hugging Face id such as meta-llama/Llama-2-7b-hf)
 * stands for: its last path part in lower case, then without "-hf", "-instruct", "-chat"
 * at its end and "meta-" at its start, each tried as an exact catalog name. NULL: none. */
static const cat_model *model_from_hint(const catalog *cat, const char *hint)
{
    const char *base = strrchr(hint, '/') ? strrchr(hint, '/') + 1 : hint;
    char name[CAT_NAME_MAX + 16];
    if (strlen(base) >= sizeof name)
        return NULL;
    size_t n = 0;
    for (; base[n]; n++)
        name[n] = (char)tolower((unsigned char)base[n]);
    name[n] = '\0';
    static const char *const suffix[] = {"-hf", "-instruct", "-chat"};
    for (int round = 0; round < 4; round++) {
        const cat_model *m = catalog_model(cat, name);
        if (m)
            return m;
        if (!strncmp(name, "meta-", 5)) {
            memmove(name, name + 5, strlen(name + 5) + 1);
            continue;
        }
        for (int s = 0; s < 3; s++) {
            size_t ls = strlen(suffix[s]), ln = strlen(name);
            if (ln > ls && !strcmp(name + ln - ls, suffix[s]))
                name[ln - ls] = '\0';
        }
    }
    return catalog_model(cat, name);
}

/* The settings of the run: the options, else vLLM's defaults for an OpenAI API server
 * (vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults: max_num_seqs 1024 and
 * max_num_batched_tokens 8192 on a GPU of 70 GiB or more that is not an A100, else 256 and
 * 2048; max_model_len the model's context window). */
typedef struct imp_run {
    char name[CAT_NAME_MAX];
    const cat_model *model;
    const cat_gpu *gpu;
    uint32_t max_num_seqs, max_num_batched_tokens, max_model_len, output_len;
} imp_run;

static int resolve_model(const catalog *cat, const calib_import_opts *o,
                         const calib__imp_data *d, imp_run *r, ss_errbuf *eb)
{
    ss_errbuf why = {""};
    if (o->model) {
        if (catalog_model_find(cat, o->model, &r->model, &why))
            return ss_err(eb, SS_ENOTFOUND, "--model: %s", why.msg);
        return SS_OK;
    }
    if (d->model_hint[0] && (r->model = model_from_hint(cat, d->model_hint)))
        return SS_OK;
    catalog_model_find(cat, "", &r->model, &why); /* for the list of known models */
    const char *known = strstr(why.msg, "(known:");
    if (d->model_hint[0])
        return ss_err(eb, SS_EINVAL, "--model: required: the log's model '%.80s' is no "
                      "catalog model %s", d->model_hint, known ? known : "");
    return ss_err(eb, SS_EINVAL, "--model: required: the log names no model %s",
                  known ? known : "");
}

/* The run's name: --run, else the first file's name without its folder and extension, in
 * lower case with every character outside [a-z0-9._-] made '-'. */
static void run_name(const calib_import_opts *o, char *buf)
{
    const char *src = o->run;
    char tmp[CAT_NAME_MAX];
    if (!src) {
        const char *f = o->files[0];
        const char *b = strrchr(f, '/') ? strrchr(f, '/') + 1 : f;
        snprintf(tmp, sizeof tmp, "%s", b);
        char *dot = strrchr(tmp, '.');
        if (dot && dot != tmp)
            *dot = '\0';
        src = tmp;
    }
    size_t n = 0;
    for (; src[n] && n < CAT_NAME_MAX - 1; n++) {
        char c = (char)tolower((unsigned char)src[n]);
        buf[n] = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || strchr("._-", c) ? c
                                                                                       : '-';
    }
    buf[n] = '\0';
    if (!n || buf[0] == '.')
        snprintf(buf, CAT_NAME_MAX, "run");
}

static int resolve_run(const catalog *cat, const calib_import_opts *o, calib__imp_data *d,
                       imp_run *r, ss_errbuf *eb)
{
    ss_errbuf why = {""};
    int rc = resolve_model(cat, o, d, r, eb);
    if (rc)
        return rc;
    if (!o->gpu)
        return ss_err(eb, SS_EINVAL, "--gpu: required: the logs do not say which GPU served "
                      "them");
    if (catalog_gpu_find(cat, o->gpu, &r->gpu, &why))
        return ss_err(eb, SS_ENOTFOUND, "--gpu: %s", why.msg);
    int big = r->gpu->hbm_bytes >= 70.0 * 1024 * 1024 * 1024 && strncmp(r->gpu->name, "a100", 4);
    r->max_num_seqs = o->max_num_seqs ? o->max_num_seqs : big ? 1024 : 256;
    r->max_num_batched_tokens = o->max_num_batched_tokens ? o->max_num_batched_tokens
                                : big ? 8192 : 2048;
    r->max_model_len = o->max_model_len ? o->max_model_len : r->model->max_context;
    run_name(o, r->name);
    return output_len(d, o->files[0], &r->output_len, eb);
}

/* }====================================================================== */

/* {======================================================================
 * The directory
 * ======================================================================= */

/* Requests in send order, the file's order among equal times. */
typedef struct by_time {
    double t;
    size_t i;
} by_time;

static int cmp_by_time(const void *a, const void *b)
{
    const by_time *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

static int write_trace(FILE *f, const calib__imp_data *d, ss_errbuf *eb)
{
    by_time *order = ss_malloc((d->n_reqs + 1) * sizeof *order);
    if (!order)
        return ss_err(eb, SS_ENOMEM, "out of memory");
    for (size_t i = 0; i < d->n_reqs; i++)
        order[i] = (by_time){d->reqs[i].arrival_s, i};
    qsort(order, d->n_reqs, sizeof *order, cmp_by_time);
    fprintf(f, "request_id,arrival_s,tenant,prompt_tokens,output_tokens\n");
    for (size_t k = 0; k < d->n_reqs; k++) {
        const calib__imp_req *r = &d->reqs[order[k].i];
        fprintf(f, "%zu,%.9f,default,%u,%u\n", k, r->arrival_s, r->prompt, r->output);
    }
    ss_free(order);
    return SS_OK;
}

static void write_runs(FILE *f, const calib_import_opts *o, const calib__imp_data *d,
                       const imp_run *r)
{
    fprintf(f, "run,catalog_model,gpu,tp,max_num_seqs,max_num_batched_tokens,max_model_len,"
               "gpu_memory_utilization,output_len,trace,trace_stage_starts\n");
    fprintf(f, "%s,%s,%s,%u,%u,%u,%u,%g,%u,traces/%s.csv,", r->name, r->model->name,
            r->gpu->name, o->tp, r->max_num_seqs, r->max_num_batched_tokens, r->max_model_len,
            o->gpu_mem_util, r->output_len, r->name);
    for (size_t k = 0; k < d->n_stages; k++)
        fprintf(f, "%s%.9f", k ? ";" : "", d->stages[k].start_s);
    fprintf(f, "\n");
}

/* A figure, or empty when not measured. */
static void put_fig(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, ",%.6f", v);
    else
        fputc(',', f);
}

static void write_stages(FILE *f, const calib__imp_data *d, const imp_run *r)
{
    fprintf(f, "run,stage,rate,ttft_mean_ms,ttft_p90_ms,e2e_mean_ms,e2e_p90_ms,itl_ms,requests,"
               "completed\n");
    for (size_t k = 0; k < d->n_stages; k++) {
        const calib__imp_stage *s = &d->stages[k];
        size_t n = 0, ok = 0;
        for (size_t i = 0; i < d->n_reqs; i++) {
            n += d->reqs[i].stage == k;
            ok += d->reqs[i].stage == k && d->reqs[i].ok;
        }
        fprintf(f, "%s,%zu,%s", r->name, k, s->rate);
        for (int m = 0; m < IMP_N_FIG; m++)
            put_fig(f, s->fig[m]);
        fprintf(f, ",,%zu,%zu\n", n, ok); /* itl_ms: fit derives it from the means */
    }
}

/* One file of the new directory, written through core/ss_file.h (a fresh temporary name,
 * O_EXCL | O_NOFOLLOW, renamed into place). which: 0 runs.csv, 1 stages.csv, 2 the trace. */
static int write_one(const char *path, int which, const calib_import_opts *o,
                     const calib__imp_data *d, const imp_run *r, ss_errbuf *eb)
{
    ss_outfile *of = NULL;
    FILE *f;
    int rc = ss_outfile_open(&of, &f, path, 0, eb);
    if (rc)
        return rc;
    if (which == 0)
        write_runs(f, o, d, r);
    else if (which == 1)
        write_stages(f, d, r);
    else
        rc = write_trace(f, d, eb);
    if (rc) {
        ss_outfile_abort(&of);
        return rc;
    }
    return ss_outfile_commit(&of, eb);
}

/* -o must not exist, or be an empty folder (not a link to one): the import makes a new
 * folder and never mixes its files with others. */
static int check_out(const char *out, ss_errbuf *eb)
{
    struct stat st;
    if (lstat(out, &st) != 0)
        return errno == ENOENT ? SS_OK
                               : ss_err(eb, SS_EIO, "-o: '%s': %s", out, strerror(errno));
    int empty = 0;
    DIR *dir = S_ISDIR(st.st_mode) ? opendir(out) : NULL;
    if (dir) {
        struct dirent *e;
        empty = 1;
        while ((e = readdir(dir)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                empty = 0;
        closedir(dir);
    }
    if (!empty)
        return ss_err(eb, SS_EINVAL, "-o: '%s' exists and is not an empty folder (fit import "
                      "writes a new one)", out);
    return SS_OK;
}

typedef struct out_paths {
    char tmp[IMP_PATH_MAX - 128]; /* room for /traces/RUN.csv in the others */
    char traces[IMP_PATH_MAX], file[3][IMP_PATH_MAX];
} out_paths;

/* mkdtemp's template for the temporary folder's name: it replaces the six X with a new name. */
#define TMP_SUFFIX ".import-XXXXXX"

/* The temporary folder beside out: PARENT/.BASE TMP_SUFFIX (mkdtemp: a new name, mode 0700,
 * so nothing but this process writes in it). */
static int make_tmp(const char *out, out_paths *p, const char *run, ss_errbuf *eb)
{
    char copy[IMP_PATH_MAX];
    snprintf(copy, sizeof copy, "%s", out);
    size_t n = strlen(copy);
    while (n > 1 && copy[n - 1] == '/')
        copy[--n] = '\0';
    char *slash = strrchr(copy, '/');
    const char *base = slash ? slash + 1 : copy;
    if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
        return ss_err(eb, SS_EINVAL, "-o: '%s' does not name a new folder", out);
    int w = slash ? snprintf(p->tmp, sizeof p->tmp, "%.*s/.%s" TMP_SUFFIX,
                             (int)(slash - copy), copy, base)
                  : snprintf(p->tmp, sizeof p->tmp, ".%s" TMP_SUFFIX, base);
    if (w < 0 || (size_t)w + 80 >= sizeof p->tmp)
        return ss_err(eb, SS_EINVAL, "-o: '%.200s...' is too long", out);
    if (!mkdtemp(p->tmp))
        return ss_err(eb, SS_EIO, "-o: cannot create a folder beside '%s': %s", out,
                      strerror(errno));
    snprintf(p->traces, sizeof p->traces, "%s/traces", p->tmp);
    snprintf(p->file[0], sizeof p->file[0], "%s/runs.csv", p->tmp);
    snprintf(p->file[1], sizeof p->file[1], "%s/stages.csv", p->tmp);
    snprintf(p->file[2], sizeof p->file[2], "%s/traces/%s.csv", p->tmp, run);
    if (mkdir(p->traces, 0777) != 0) {
        int e = errno;
        rmdir(p->tmp);
        return ss_err(eb, SS_EIO, "-o: cannot create '%s': %s", p->traces, strerror(e));
    }
    return SS_OK;
}

static void remove_tmp(const out_paths *p)
{
    for (int i = 0; i < 3; i++)
        unlink(p->file[i]);
    rmdir(p->traces);
    rmdir(p->tmp);
}

static int write_dir(const calib_import_opts *o, const calib__imp_data *d, const imp_run *r,
                     ss_errbuf *eb)
{
    out_paths p;
    int rc = check_out(o->out, eb);
    if (!rc)
        rc = make_tmp(o->out, &p, r->name, eb);
    if (rc)
        return rc;
    for (int i = 0; !rc && i < 3; i++)
        rc = write_one(p.file[i], i, o, d, r, eb);
    mode_t mask = umask(0);
    umask(mask);
    if (!rc && chmod(p.tmp, 0777 & ~mask) != 0)
        rc = ss_err(eb, SS_EIO, "-o: cannot set the mode of '%s': %s", p.tmp, strerror(errno));
    if (!rc && rename(p.tmp, o->out) != 0) /* replaces an empty folder, nothing else */
        rc = ss_err(eb, SS_EIO, "-o: cannot create '%s': %s", o->out, strerror(errno));
    if (rc)
        remove_tmp(&p);
    return rc;
}

/* }====================================================================== */

static int read_logs(calib__imp_data *d, const calib_import_opts *o, ss_errbuf *eb)
{
    int rc = !strcmp(o->from, "requests-csv")   ? calib__imp_requests_csv(d, o, eb)
             : !strcmp(o->from, "vllm-bench")     ? calib__imp_vllm_bench(d, o, eb)
             : !strcmp(o->from, "inference-perf") ? calib__imp_inference_perf(d, o, eb)
             : ss_err(eb, SS_EINVAL, "--from: unknown format '%.60s'", o->from);
    if (!rc)
        rc = stage_times(d, o->files[0], eb);
    return rc ? rc : stage_figures(d, eb);
}

int calib_fit_import(const calib_import_opts *o, FILE *notes, ss_errbuf *eb)
{
    calib__imp_data d = {0};
    imp_run r = {0};
    catalog *cat = NULL;
    int rc = o->n_files ? SS_OK : ss_err(eb, SS_EINVAL, "no log file given");
    if (!rc)
        rc = catalog_load(&cat, catalog_default_dir(o->profiles), eb);
    if (!rc)
        rc = read_logs(&d, o, eb);
    if (!rc)
        rc = resolve_run(cat, o, &d, &r, eb);
    if (!rc)
        rc = write_dir(o, &d, &r, eb);
    for (size_t i = 0; !rc && notes && i < d.n_notes; i++)
        fprintf(notes, "slicesim: fit import: %s\n", d.notes[i]);
    if (!rc && notes)
        fprintf(notes, "slicesim: fit import: wrote %s: run %s (%s on %s, TP %u, "
                "max_num_seqs %u, max_num_batched_tokens %u, max_model_len %u), %zu stage%s, "
                "%zu requests\n", o->out, r.name, r.model->name, r.gpu->name, o->tp,
                r.max_num_seqs, r.max_num_batched_tokens, r.max_model_len, d.n_stages,
                d.n_stages == 1 ? "" : "s", d.n_reqs);
    for (size_t i = 0; i < d.n_notes; i++)
        ss_free(d.notes[i]);
    ss_free(d.notes);
    ss_free(d.reqs);
    ss_free(d.stages);
    catalog_destroy(&cat);
    return rc;
}
