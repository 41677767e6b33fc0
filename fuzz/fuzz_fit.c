/* Fuzz target of the directory `slicesim fit DIR` reads: runs.csv and stages.csv together,
 * through calib__fit_data_read as calib_fit calls it (src/calib/fit_data.c; the project's own
 * catalog, every run, --served-ms 1000). The input is runs.csv, a line "%%", then stages.csv
 * (without such a line all of it is runs.csv and stages.csv is empty). DIR also holds
 * traces/t.csv, a trace a run may name. Checks the error contract (one line naming runs.csv or
 * stages.csv), and that what is accepted is accepted whole: at least one run and one stage;
 * every run's settings in their ranges and its trace_stage_starts increasing; the stages sorted
 * by run and stage, each once and within its run's stages; every latency above 0 or not
 * measured, an E2E above its TTFT, ITL derived as (E2E - TTFT) / (output_len - 1) when not
 * given; the counts of stages and fitted stages adding up; and that everything is freed. The
 * replays that follow in `slicesim fit` are not run (fit_cli covers them). */
#include "fuzz.h"

#include "calib/fit_int.h"
#include "catalog/catalog.h"
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define SERVED_MS 1000.0

static catalog *cat; /* the project's profiles, loaded once */
static char dir[1024];

/* The catalog and the trace the runs may name, once (before the first fz_begin: state kept
 * across inputs). */
static void setup(void)
{
    if (cat)
        return;
    ss_errbuf eb = {""};
    if (catalog_load(&cat, SS_SOURCE_ROOT "/profiles", &eb))
        fz_fail(__FILE__, __LINE__, "cannot load the catalog: %s", eb.msg);
    static const char trace[] = "id,arrival_s,prompt_tokens,output_tokens\n"
                                "0,0.000000,512,48\n1,0.400000,498,48\n";
    char path[1024];
    fz_write(path, sizeof path, "fit/traces/t.csv", (const uint8_t *)trace, sizeof trace - 1);
    fz_mkdir(dir, sizeof dir, "fit");
}

/* Where stages.csv starts in data[0..size): after the first line that is "%%" (a CR before
 * its newline allowed); *runs_len is where runs.csv ends. size when there is none. */
static size_t split(const uint8_t *data, size_t size, size_t *runs_len)
{
    for (size_t at = 0; at < size;) {
        const uint8_t *nl = memchr(data + at, '\n', size - at);
        size_t end = nl ? (size_t)(nl - data) : size, len = end - at;
        if (len && data[end - 1] == '\r')
            len--;
        if (len == 2 && data[at] == '%' && data[at + 1] == '%') {
            *runs_len = at;
            return nl ? end + 1 : size;
        }
        at = end + 1;
    }
    *runs_len = size;
    return size;
}

static void check_run(const calib_fit_run *r)
{
    FZ_ASSERT(r->name && r->name[0] && r->model[0] && r->gpu[0] && r->trace && r->line >= 2);
    FZ_ASSERT(r->tp >= 1 && r->max_num_seqs >= 1 && r->max_num_batched_tokens >= 1);
    FZ_ASSERT(r->max_model_len >= 1 && r->output_len >= 2);
    FZ_ASSERT(r->gpu_mem_util > 0 && r->gpu_mem_util <= 1);
    FZ_ASSERT(r->n_starts >= 1 && r->starts[0] >= 0);
    for (size_t k = 0; k < r->n_starts; k++)
        FZ_ASSERT(isfinite(r->starts[k]) && (!k || r->starts[k] > r->starts[k - 1]));
    FZ_ASSERT(r->n_fitted <= r->n_stages && r->n_reqs == 0);
}

static void check_stage(const calib_fit_data *d, size_t i)
{
    const calib_fit_stage *s = &d->stages[i];
    FZ_ASSERT(s->run < d->n_runs && s->line >= 2);
    const calib_fit_run *r = &d->runs[s->run];
    FZ_ASSERT(s->k < r->n_starts && memchr(s->rate, '\0', sizeof s->rate));
    if (i) { /* sorted by run, then stage; each once */
        const calib_fit_stage *p = &d->stages[i - 1];
        FZ_ASSERT(p->run < s->run || (p->run == s->run && p->k < s->k));
    }
    for (int m = 0; m < CALIB_FIT_METRICS; m++)
        FZ_ASSERT(isnan(s->real[m]) || (isfinite(s->real[m]) && s->real[m] > 0));
    const double *v = s->real;
    FZ_ASSERT(isnan(v[CALIB_FIT_E2E]) || isnan(v[CALIB_FIT_TTFT]) ||
              v[CALIB_FIT_E2E] > v[CALIB_FIT_TTFT]);
    FZ_ASSERT(isnan(v[CALIB_FIT_E2E90]) || isnan(v[CALIB_FIT_TTFT90]) ||
              v[CALIB_FIT_E2E90] > v[CALIB_FIT_TTFT90]);
    /* an ITL not given is derived, NaN when E2E or TTFT is not measured either */
    if (isnan(v[CALIB_FIT_ITL]))
        FZ_ASSERT(isnan(v[CALIB_FIT_E2E]) || isnan(v[CALIB_FIT_TTFT]));
    FZ_ASSERT(s->fitted == (v[CALIB_FIT_TTFT] < SERVED_MS));
}

/* Accepted whole: every run and stage as the reader promises, and the counts adding up. */
static void check_data(const calib_fit_data *d)
{
    FZ_ASSERT(d->n_runs >= 1 && d->n_stages >= 1);
    size_t n_stages = 0, n_fitted = 0;
    for (size_t i = 0; i < d->n_runs; i++) {
        check_run(&d->runs[i]);
        for (size_t k = 0; k < i; k++)
            FZ_ASSERT(strcmp(d->runs[k].name, d->runs[i].name));
        n_stages += d->runs[i].n_stages;
        n_fitted += d->runs[i].n_fitted;
    }
    for (size_t i = 0; i < d->n_stages; i++)
        check_stage(d, i);
    FZ_ASSERT(n_stages == d->n_stages && n_fitted == calib__fit_n_fitted(d));
    for (size_t i = 0; i < d->n_notes; i++)
        FZ_ASSERT(strstr(d->notes[i], d->runs_path) && strstr(d->notes[i], " skipped: "));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    fz_begin();
    size_t runs_len, stages_at = split(data, size, &runs_len);
    char runs[1024], stages[1024];
    fz_write(runs, sizeof runs, "fit/runs.csv", data, runs_len);
    fz_write(stages, sizeof stages, "fit/stages.csv", data + stages_at, size - stages_at);
    calib_fit_data d;
    ss_errbuf eb = {""};
    int rc = calib__fit_data_read(&d, dir, cat, NULL, SERVED_MS, &eb);
    fz_check_error(rc, &eb, NULL);
    if (rc) {
        FZ_ASSERT(rc == SS_EPARSE || rc == SS_ENOTFOUND || rc == SS_EINVAL || rc == SS_EIO ||
                  rc == SS_ENOMEM);
        FZ_ASSERT(rc == SS_ENOMEM || strstr(eb.msg, runs) || strstr(eb.msg, stages));
    } else {
        FZ_ASSERT(!strcmp(d.runs_path, runs) && !strcmp(d.stages_path, stages));
        check_data(&d);
    }
    calib__fit_data_fini(&d);
    fz_end();
    return 0;
}
