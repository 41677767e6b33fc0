/* `slicesim fit`: the fittable engine terms, the objective, Nelder-Mead over the chosen terms
 * from the start engine (with its host terms for the first run's GPU), and the fit from the
 * measured runs to the result. Not for reading the runs (fit_data.c), replaying them
 * (fit_runs.c) or the output (fit_out.c). */
#include "calib/fit_int.h"

#include "catalog/catalog.h"
#include "core/ss_file.h"
#include "core/ss_nm.h"
#include "runner/run.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* {======================================================================
 * The fittable engine terms: one line each (calib__fit_term)
 * ======================================================================= */

#define TERM(key_, field, scale_, step_, lo_)                                                  \
    {.key = key_, .off = offsetof(cat_engine, field), .scale = scale_, .step = step_, .lo = lo_}

const calib__fit_term calib__fit_terms[] = {
    TERM("iter_fixed_us", host.iter_fixed_s, 1e-6, 500, 0),
    TERM("iter_per_seq_us", host.iter_per_seq_s, 1e-6, 10, 0),
    TERM("iter_per_token_us", host.iter_per_token_s, 1e-6, 0.5, 0),
    TERM("op_floor_us", host.op_floor_s, 1e-6, 2, 0),
    TERM("hop_latency_us", allreduce_hop_s, 1e-6, 5, 0),
    TERM("frontend_ms", frontend_s, 1e-3, 5, 0),
    TERM("attn_speed", attn_speed, 1, 0.1, 0.05),
    TERM("launch_us", host.launch_s, 1e-6, 5, 0),
};
_Static_assert(sizeof calib__fit_terms / sizeof *calib__fit_terms == CALIB_FIT_N_TERMS,
               "CALIB_FIT_N_TERMS (calib/fit.h) counts the terms");

int calib_fit_term_find(const char *key, size_t len)
{
    for (size_t k = 0; k < CALIB_FIT_N_TERMS; k++)
        if (strlen(calib__fit_terms[k].key) == len &&
            !strncmp(calib__fit_terms[k].key, key, len))
            return (int)k;
    return -1;
}

void calib_fit_term_list(char *buf, size_t n)
{
    size_t used = 0;
    if (n)
        buf[0] = '\0';
    for (size_t k = 0; k < CALIB_FIT_N_TERMS && used < n; k++) {
        int w = snprintf(buf + used, n - used, "%s%s", k ? "," : "", calib__fit_terms[k].key);
        used += w > 0 ? (size_t)w : 0;
    }
}

double calib__fit_term_get(const cat_engine *e, const calib__fit_term *t)
{
    double x;
    memcpy(&x, (const char *)e + t->off, sizeof x);
    return x / t->scale;
}

void calib__fit_term_set(cat_engine *e, const calib__fit_term *t, double v)
{
    double x = v * t->scale; /* as the profile reader computes it */
    memcpy((char *)e + t->off, &x, sizeof x);
}

/* }====================================================================== */

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* {======================================================================
 * Evaluating an engine
 * ======================================================================= */

/* A stage's mean error over the metrics measured, each |ln(sim / real)|: the relative error
 * for small errors (0.05 for 5 %), symmetric in too fast and too slow, and growing only with
 * the logarithm of a runaway (121 ms served, 9.4 s simulated: 4.35), so that one stage near
 * saturation cannot outweigh the rest and pull every coefficient towards zero. A metric the
 * replay could not give (no completed request) counts as 10. */
static double stage_error(const calib_fit_stage *s)
{
    double sum = 0;
    int n = 0;
    for (int m = 0; m < CALIB_FIT_METRICS; m++) {
        double real = s->real[m];
        if (!(real > 0) || !isfinite(real))
            continue;
        sum += isfinite(s->sim[m]) && s->sim[m] > 0 ? fabs(log(s->sim[m] / real)) : 10.0;
        n++;
    }
    return n ? sum / n : 0;
}

size_t calib__fit_n_fitted(const calib_fit_data *d)
{
    size_t n = 0;
    for (size_t i = 0; i < d->n_stages; i++)
        n += (size_t)d->stages[i].fitted;
    return n;
}

/* The objective: stage_error averaged over the fitted stages (NaN when there are none). */
double calib__fit_objective(const calib_fit_data *d)
{
    return calib__fit_objective_upto(d, d->n_runs);
}

double calib__fit_objective_upto(const calib_fit_data *d, size_t n_runs)
{
    double sum = 0;
    for (size_t i = 0; i < d->n_stages && d->stages[i].run < n_runs; i++) /* sorted by run */
        if (d->stages[i].fitted)
            sum += stage_error(&d->stages[i]);
    size_t n = calib__fit_n_fitted(d);
    return n ? sum / (double)n : NAN;
}

/* v[j]: the value of the j-th free term (x->free_at). */
static void set_terms(calib__fit_ctx *x, const double *v)
{
    for (size_t j = 0; j < x->n_free; j++)
        calib__fit_term_set(&x->cand, &calib__fit_terms[x->o->term[x->free_at[j]]], v[j]);
}

/* ss_nm_fn: the objective at the candidate v, its runs replayed in order until the sum of
 * those replayed reaches stop_at (a lower bound >= stop_at, which the search never keeps). */
static int nm_objective(void *ud, const double *v, double stop_at, double *f_out)
{
    calib__fit_ctx *x = ud;
    set_terms(x, v);
    size_t done = 0;
    int rc = calib__fit_replay_until(x, x->o->full_replays ? INFINITY : stop_at, &done);
    *f_out = rc ? NAN : calib__fit_objective_upto(&x->d, done);
    x->n_stopped += !rc && done < x->d.n_runs;
    return rc;
}

static void nm_progress(void *ud, size_t iterations, size_t evaluations, double f_best)
{
    calib__fit_ctx *x = ud;
    if (!x->o->progress || !isatty(STDERR_FILENO))
        return;
    x->progress_shown = 1;
    fprintf(stderr, "\rslicesim: fit: iteration %zu/%ld | %zu evaluations | objective %.6f | "
                    "%.0f s   ", iterations, x->o->iterations, evaluations, f_best,
            wall_now() - x->wall0);
    fflush(stderr);
}

/* Six significant digits, so that the profile reads as people write numbers and the figures
 * printed are those of the profile written. */
static double round6(double v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%.6g", v);
    return strtod(buf, NULL);
}

/* The largest value an engine profile may give the fittable term t (cat_engine_term_get's
 * documented range), so that a fitted profile always loads. */
static double term_hi(const calib__fit_term *t)
{
    cat_engine_term ct;
    for (size_t i = 0; cat_engine_term_get(i, &ct) == SS_OK; i++)
        if (!strcmp(ct.key, t->key))
            return ct.hi;
    return INFINITY;
}

/* Nelder-Mead over the fitted terms from x->x0; leaves x->cand at the rounded optimum. */
static int run_fit(calib__fit_ctx *x, ss_nm_result *res)
{
    double v[CALIB_FIT_N_TERMS], step[CALIB_FIT_N_TERMS], lo[CALIB_FIT_N_TERMS];
    double hi[CALIB_FIT_N_TERMS];
    for (size_t i = 0; i < x->n_free; i++) {
        const calib__fit_term *t = &calib__fit_terms[x->o->term[x->free_at[i]]];
        v[i] = x->x0[x->free_at[i]];
        step[i] = fmax(t->step, 0.2 * fabs(v[i]));
        lo[i] = fmin(t->lo, v[i]); /* a start below the bound stays allowed */
        hi[i] = fmax(term_hi(t), v[i]);
    }
    ss_nm_opts no = {.max_iter = (size_t)x->o->iterations, .ftol = 1e-6, .max_restarts = 2,
                     .hi = hi, .progress = nm_progress, .progress_ud = x};
    int rc = ss_nm_minimize(res, v, x->n_free, step, lo, nm_objective, x, &no);
    if (x->progress_shown)
        fprintf(stderr, "\r%*s\r", 100, "");
    if (!rc && x->n_stopped)
        fprintf(stderr, "slicesim: fit: %zu of %zu evaluations stopped before their last runs "
                "(certain not to change Nelder-Mead's next step; --full-replays replays them "
                "all)\n", x->n_stopped, res->evaluations);
    if (rc && !x->eb.msg[0]) /* the optimiser's own error, not a replay's */
        return ss_err(&x->eb, rc, "the optimiser failed: %s", ss_strerror(rc));
    if (rc)
        return rc;
    for (size_t i = 0; i < x->n_free; i++)
        v[i] = round6(v[i]);
    set_terms(x, v);
    return SS_OK;
}

/* }====================================================================== */

/* {======================================================================
 * What the data identify
 * ======================================================================= */

/* A term moved by less than this share of the objective at the start, by ±20 %, is inert. */
#define FIT_INERT_SHARE 1e-3

/* The independent figures of the fitted stages: their measured TTFT mean and p90 and E2E
 * mean and p90 (the ITL adds none: it is derived from the means, or checked against them). */
static size_t n_figures(const calib_fit_data *d)
{
    static const int indep[] = {CALIB_FIT_TTFT, CALIB_FIT_TTFT90, CALIB_FIT_E2E,
                                CALIB_FIT_E2E90};
    size_t n = 0;
    for (size_t i = 0; i < d->n_stages; i++)
        for (size_t m = 0; m < sizeof indep / sizeof *indep && d->stages[i].fitted; m++)
            n += isfinite(d->stages[i].real[indep[m]]) && d->stages[i].real[indep[m]] > 0;
    return n;
}

/* How much term i (a position in o->term) moves the objective: the larger |f - f0| / f0 of
 * the term at 0.8 and 1.2 times its start value (a start of 0: at its first simplex step),
 * every other term at its start; the candidate is left at the start. */
static int sensitivity(calib__fit_ctx *x, size_t i, double f0, double *out)
{
    const calib__fit_term *t = &calib__fit_terms[x->o->term[i]];
    double v0 = x->x0[i], d = v0 != 0 ? 0.2 * fabs(v0) : t->step;
    double probe[2] = {fmax(v0 - d, fmin(t->lo, v0)), v0 + d};
    *out = 0;
    for (int k = 0; k < 2; k++) {
        if (probe[k] == v0)
            continue;
        calib__fit_term_set(&x->cand, t, probe[k]);
        int rc = calib__fit_replay_all(x, 0);
        calib__fit_term_set(&x->cand, t, v0);
        if (rc)
            return rc;
        double f = calib__fit_objective(&x->d);
        *out = fmax(*out, f0 > 0 ? fabs(f - f0) / f0 : fabs(f - f0) * 1e9);
    }
    return SS_OK;
}

/* "key = value, ..." of the terms at the positions pos[0..n) (their start values). */
static void held_list(const calib__fit_ctx *x, const size_t *pos, size_t n, char *buf,
                      size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t j = 0; j < n && used < cap; j++) {
        int w = snprintf(buf + used, cap - used, "%s%s = %g", j ? ", " : "",
                         calib__fit_terms[x->o->term[pos[j]]].key, x->x0[pos[j]]);
        used += w > 0 ? (size_t)w : 0;
    }
}

/* Fit only what the data determine: a term whose ±20 % change moves the objective by less
 * than 0.1 % at the start is held at its start value, and of the others no more than the
 * fitted stages have independent figures are fitted, the most sensitive first (ties in
 * --fit order); one line on stderr for each term held. Deterministic: the probes are
 * replays. After the start engine's replay of every run. */
static int choose_terms(calib__fit_ctx *x)
{
    const calib_fit_opts *o = x->o;
    double f0 = calib__fit_objective(&x->d), sens[CALIB_FIT_N_TERMS];
    size_t order[CALIB_FIT_N_TERMS], n_live = 0, held[CALIB_FIT_N_TERMS], n_held = 0;
    for (size_t i = 0; i < o->n_term; i++) {
        int rc = sensitivity(x, i, f0, &sens[i]);
        if (rc)
            return rc;
        if (sens[i] < FIT_INERT_SHARE) {
            fprintf(stderr, "slicesim: fit: %s not identifiable from these stages (±20 %% "
                    "moves the objective < 0.1 %%): kept at %g\n",
                    calib__fit_terms[o->term[i]].key, x->x0[i]);
            continue;
        }
        size_t at = n_live++; /* insertion by sensitivity, stable */
        while (at > 0 && sens[order[at - 1]] < sens[i]) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = i;
    }
    size_t n_fig = n_figures(&x->d), n_fit = n_live < n_fig ? n_live : n_fig;
    for (size_t j = n_fit; j < n_live; j++)
        held[n_held++] = order[j];
    if (n_held) {
        char list[512];
        held_list(x, held, n_held, list, sizeof list);
        fprintf(stderr, "slicesim: fit: %zu independent figures (the fitted stages' measured "
                "TTFT and E2E means and p90s) cannot determine %zu terms: fitting the %zu the "
                "objective is most sensitive to; kept at the start: %s\n", n_fig, n_live, n_fit,
                list);
    }
    x->n_free = 0; /* the free terms in --fit order */
    for (size_t i = 0; i < o->n_term; i++)
        for (size_t j = 0; j < n_fit; j++)
            if (order[j] == i)
                x->free_at[x->n_free++] = i;
    return SS_OK;
}

/* }====================================================================== */

/* {======================================================================
 * The start
 * ======================================================================= */

/* 1 when the start engine's host terms differ between the GPUs of the runs: the fitted engine
 * holds one set for all. */
static int host_terms_differ(const calib__fit_ctx *x)
{
    const cat_engine_host *h0 = cat_engine_host_for(x->start, x->d.runs[0].gpu);
    for (size_t i = 1; i < x->d.n_runs; i++)
        if (memcmp(cat_engine_host_for(x->start, x->d.runs[i].gpu), h0, sizeof *h0))
            return 1;
    return 0;
}

/* The engine replayed first. --evaluate: the start engine as it is. A fit: the start engine
 * with its host terms for the first run's GPU as [host] and no [gpu.NAME] sections, named
 * --name. Both with --overlap and --allreduce applied. */
static void make_candidate(calib__fit_ctx *x)
{
    const calib_fit_opts *o = x->o;
    x->cand = *x->start;
    x->cand.path = NULL;
    if (!o->evaluate) {
        if (host_terms_differ(x))
            fprintf(stderr, "slicesim: fit: note: %s's host terms differ between the runs' "
                    "GPUs; the fitted engine starts from those of %s for all\n",
                    x->start->name, x->d.runs[0].gpu);
        x->cand.host = *cat_engine_host_for(x->start, x->d.runs[0].gpu);
        x->cand.n_gpus = 0;
        memset(x->cand.per_gpu, 0, sizeof x->cand.per_gpu);
        memset(x->cand.name, 0, sizeof x->cand.name);
        memcpy(x->cand.name, o->name, strlen(o->name));
        if (o->description)
            snprintf(x->cand.description, sizeof x->cand.description, "%s", o->description);
        else
            snprintf(x->cand.description, sizeof x->cand.description,
                     "%s fitted by slicesim fit to %s", x->start->name, o->dir);
    }
    if (o->overlap) {
        snprintf(x->cand.overlap_name, sizeof x->cand.overlap_name, "%s", o->overlap);
        x->cand.overlap = strcmp(o->overlap, "max") ? CAT_OVERLAP_SERIAL : CAT_OVERLAP_MAX;
    }
    if (o->allreduce) {
        snprintf(x->cand.allreduce_name, sizeof x->cand.allreduce_name, "%s", o->allreduce);
        x->cand.allreduce = strcmp(o->allreduce, "twoshot") ? CAT_ALLREDUCE_RING
                                                            : CAT_ALLREDUCE_TWOSHOT;
    }
    for (size_t i = 0; i < o->n_term; i++)
        x->x0[i] = calib__fit_term_get(&x->cand, &calib__fit_terms[o->term[i]]);
}

/* }====================================================================== */

/* {======================================================================
 * The fit
 * ======================================================================= */

/* Open the files written at the end now (as FILE.tmp), so that an unwritable one fails before
 * a long fit rather than after it. */
static int open_outputs(calib__fit_ctx *x)
{
    int rc = x->o->evaluate ? SS_OK
                            : ss_outfile_open(&x->prof_out, &x->prof_f, x->o->out, 0, &x->eb);
    if (!rc && x->o->write_stages)
        rc = ss_outfile_open(&x->stages_out, &x->stages_f, x->o->write_stages, 0, &x->eb);
    return rc;
}

/* Read, check, replay under the start engine (every run: the input is only known good once
 * each has replayed), fit, replay under the result. */
static int compute(calib__fit_ctx *x, catalog *cat, calib__fit_result *r)
{
    const calib_fit_opts *o = x->o;
    const cat_engine *found = NULL;
    int rc = runner_engine_resolve(cat, o->engine, &found, &x->eb);
    if (rc)
        ss_err_prefix(&x->eb, rc, "--engine");
    else {
        x->start_copy = *found;
        x->start_copy.path = NULL; /* the catalog frees it when a candidate replaces it */
        x->start = &x->start_copy;
    }
    if (!rc)
        rc = calib__fit_data_read(&x->d, o->dir, cat, o->runs, o->served_ms, &x->eb);
    if (!rc && o->check_files)
        rc = o->check_files(o->check_files_ud, &x->d, &x->eb);
    if (!rc)
        rc = open_outputs(x);
    if (rc)
        return rc;
    make_candidate(x);
    if (!o->evaluate && !calib__fit_n_fitted(&x->d))
        return ss_err(&x->eb, SS_EINVAL, "%s: no stage to fit: none has a real TTFT mean below "
                      "%g ms (--served-ms)", x->d.stages_path, o->served_ms);
    rc = calib__fit_replay_all(x, 1);
    if (!rc)
        rc = calib__fit_check_served(&x->d, &x->eb);
    for (size_t i = 0; !rc && i < x->d.n_notes; i++) /* the input is good: say what was left */
        fprintf(stderr, "slicesim: fit: note: %s\n", x->d.notes[i]);
    if (!rc && !o->evaluate)
        rc = choose_terms(x);
    if (!rc && !o->evaluate) {
        rc = x->n_free ? run_fit(x, &r->nm) : SS_OK; /* none identifiable: the start */
        if (!rc)
            rc = calib__fit_replay_all(x, 1);
    }
    return rc ? rc : calib__fit_summarize(x, r, &x->eb);
}

int calib_fit(const calib_fit_opts *o, const char *command, FILE *out, ss_errbuf *eb)
{
    calib__fit_ctx x = {.o = o, .wall0 = wall_now(), .out = out,
                        .ro = {.profiles = o->profiles, .check = o->check, .cost = o->cost}};
    calib__fit_result r = {0};
    catalog *cat = NULL;
    int rc = catalog_load(&cat, catalog_default_dir(o->profiles), &x.eb);
    x.ro.catalog = cat; /* read once: profiles edited during a long fit do not change it */
    if (!rc)
        rc = compute(&x, cat, &r);
    calib__fit_workers_end();
    r.wall_s = wall_now() - x.wall0;
    if (!rc)
        rc = calib__fit_emit(&x, &r, command);
    if (rc)
        *eb = x.eb;
    ss_outfile_abort(&x.prof_out); /* nothing is left of a failed run */
    ss_outfile_abort(&x.stages_out);
    calib__fit_data_fini(&x.d);
    catalog_destroy(&cat);
    return rc;
}

/* }====================================================================== */
