/* The result of `slicesim fit`: the errors over the fitted stages, the comparison as a table
 * or JSON, the fitted profile with its header, the simulated stages as a stages.csv, and the
 * fit's rows in the results database. Not for the fit itself (fit.c). */
#include "calib/fit_int.h"

#include "core/ss_alloc.h"
#include "core/ss_parse.h"
#include "core/ss_strbuf.h"
#include "store/store.h"
#include "version.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* {======================================================================
 * Summaries
 * ======================================================================= */

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* (sim - real) / real of metric m over the fitted stages, as fidelity.sh sums them. */
static void summarize_metric(const calib_fit_data *d, int m, double *errs,
                             calib__fit_metric_sum *out)
{
    size_t n = 0;
    double abs_sum = 0, sum = 0;
    for (size_t i = 0; i < d->n_stages; i++) {
        const calib_fit_stage *s = &d->stages[i];
        if (!s->fitted || !(s->real[m] > 0) || !isfinite(s->real[m]) || !isfinite(s->sim[m]))
            continue;
        double e = (s->sim[m] - s->real[m]) / s->real[m];
        abs_sum += fabs(e);
        sum += e;
        errs[n++] = e;
    }
    qsort(errs, n, sizeof *errs, cmp_dbl);
    *out = (calib__fit_metric_sum){.n = n, .mape = n ? 100 * abs_sum / (double)n : NAN,
                                   .bias = n ? 100 * sum / (double)n : NAN,
                                   .median = 100 * calib__fit_pct(errs, n, 50)};
}

int calib__fit_summarize(const calib__fit_ctx *x, calib__fit_result *r, ss_errbuf *eb)
{
    double *errs = ss_malloc((x->d.n_stages + 1) * sizeof *errs);
    if (!errs)
        return ss_err(eb, SS_ENOMEM, "out of memory");
    for (int m = 0; m < CALIB_FIT_METRICS; m++)
        summarize_metric(&x->d, m, errs, &r->m[m]);
    ss_free(errs);
    r->objective = calib__fit_objective(&x->d);
    r->n_fitted = calib__fit_n_fitted(&x->d);
    r->runaway = 0;
    for (size_t i = 0; i < x->d.n_stages; i++) {
        const calib_fit_stage *s = &x->d.stages[i];
        r->runaway +=
            s->fitted && s->real[CALIB_FIT_TTFT] < 1000 && !(s->sim[CALIB_FIT_TTFT] <= 1000);
    }
    return SS_OK;
}

/* }====================================================================== */

/* {======================================================================
 * Output: table, JSON, profile, stages.csv, database
 * ======================================================================= */

static void print_cell(FILE *f, double real, double sim, int w)
{
    char a[32] = "-", b[32] = "-", cell[72];
    if (isfinite(real))
        snprintf(a, sizeof a, "%.1f", real);
    if (isfinite(sim))
        snprintf(b, sizeof b, "%.1f", sim);
    snprintf(cell, sizeof cell, "%s / %s", a, b);
    fprintf(f, " %*s", w, cell);
}

static void print_stages(FILE *f, const calib_fit_data *d)
{
    static const int w[CALIB_FIT_METRICS] = {17, 17, 15, 19, 19};
    fprintf(f, "  %-38s %2s %5s  %17s %17s %15s %19s %19s  %s\n", "run", "st", "rate",
            "TTFT mean ms", "TTFT p90 ms", "ITL ms", "E2E mean ms", "E2E p90 ms", "fitted");
    fprintf(f, "  %-38s %2s %5s  %17s %17s %15s %19s %19s\n", "", "", "", "real / sim",
            "real / sim", "real / sim", "real / sim", "real / sim");
    for (size_t i = 0; i < d->n_stages; i++) {
        const calib_fit_stage *s = &d->stages[i];
        fprintf(f, "  %-38s %2u %5s ", d->runs[s->run].name, s->k, *s->rate ? s->rate : "-");
        for (int m = 0; m < CALIB_FIT_METRICS; m++)
            print_cell(f, s->real[m], s->sim[m], w[m]);
        fprintf(f, "  %s\n", s->fitted ? "*" : "-");
    }
}

static void print_summary(FILE *f, const calib__fit_ctx *x, const calib__fit_result *r)
{
    fprintf(f, "  error over the %zu fitted stages (*: real TTFT mean < %g ms; the others "
               "are overloaded or not measured),\n  (simulated - real) / real; + = the "
               "simulation is slower:\n", r->n_fitted, x->o->served_ms);
    for (int m = 0; m < CALIB_FIT_METRICS; m++)
        if (!r->m[m].n)
            fprintf(f, "    %-9s not measured in any fitted stage\n", calib__fit_metric_label[m]);
        else
            fprintf(f, "    %-9s MAPE %9.1f %%   bias %+9.1f %%   median error %+8.1f %%   (%zu "
                       "stages)\n", calib__fit_metric_label[m], r->m[m].mape, r->m[m].bias,
                    r->m[m].median, r->m[m].n);
    fprintf(f, "  objective (mean |ln(sim / real)| over the fitted stages and the 5 "
               "metrics): %.6f\n", r->objective);
    fprintf(f, "  fitted stages that run away (real TTFT mean < 1 s, simulated > 1 s): %zu",
            r->runaway);
    const char *sep = ": ";
    for (size_t i = 0; i < x->d.n_stages; i++) {
        const calib_fit_stage *s = &x->d.stages[i];
        if (s->fitted && s->real[CALIB_FIT_TTFT] < 1000 && !(s->sim[CALIB_FIT_TTFT] <= 1000)) {
            fprintf(f, "%s%s stage %u", sep, x->d.runs[s->run].name, s->k);
            sep = ", ";
        }
    }
    fputc('\n', f);
}

static void print_terms(FILE *f, const calib__fit_ctx *x, const calib__fit_result *r)
{
    const calib_fit_opts *o = x->o;
    if (o->evaluate) {
        fprintf(f, "  engine %s: %zu replays, %.1f s\n", x->cand.name, x->d.n_runs, r->wall_s);
        return;
    }
    fprintf(f, "  engine %s -> %s (overlap %s, allreduce %s), start -> fitted:\n",
            x->start->name, x->cand.name, x->cand.overlap_name, x->cand.allreduce_name);
    for (size_t i = 0; i < o->n_term; i++)
        fprintf(f, "    %-18s %12.6g -> %.6g\n", calib__fit_terms[o->term[i]].key, x->x0[i],
                calib__fit_term_get(&x->cand, &calib__fit_terms[o->term[i]]));
    fprintf(f, "  Nelder-Mead: %zu iterations, %zu evaluations, %u restarts, %s; %.1f s\n",
            r->nm.iterations, r->nm.evaluations, r->nm.restarts,
            r->nm.converged ? "converged" : "stopped at --iterations", r->wall_s);
    fprintf(f, "  profile: %s\n", o->out);
}

static void print_table(FILE *f, const calib__fit_ctx *x, const calib__fit_result *r)
{
    fprintf(f, "slicesim fit: %zu stages of %zu runs in %s; %s %s\n", x->d.n_stages,
            x->d.n_runs, x->o->dir, x->o->evaluate ? "evaluating engine" : "fitting from engine",
            x->start->name);
    print_stages(f, &x->d);
    print_summary(f, x, r);
    print_terms(f, x, r);
}

static void json_num(ss_strbuf *b, double v)
{
    if (isfinite(v))
        ss_strbuf_printf(b, "%.17g", v);
    else
        ss_strbuf_printf(b, "null");
}

/* {"key": {"start": x, "final": y, "fitted": true|false}, ...} over every fittable term. */
static void json_terms(ss_strbuf *b, const calib__fit_ctx *x)
{
    ss_strbuf_printf(b, "{");
    for (size_t k = 0; k < CALIB_FIT_N_TERMS; k++) {
        size_t i = 0;
        while (i < x->o->n_term && x->o->term[i] != k)
            i++;
        cat_engine s = x->cand;
        if (i < x->o->n_term)
            calib__fit_term_set(&s, &calib__fit_terms[k], x->x0[i]);
        ss_strbuf_printf(b, "%s\"%s\": {\"start\": ", k ? ", " : "", calib__fit_terms[k].key);
        json_num(b, calib__fit_term_get(&s, &calib__fit_terms[k]));
        ss_strbuf_printf(b, ", \"final\": ");
        json_num(b, calib__fit_term_get(&x->cand, &calib__fit_terms[k]));
        ss_strbuf_printf(b, ", \"fitted\": %s}", i < x->o->n_term ? "true" : "false");
    }
    ss_strbuf_printf(b, "}");
}

static void json_metrics(ss_strbuf *b, const double *v)
{
    ss_strbuf_printf(b, "{");
    for (int m = 0; m < CALIB_FIT_METRICS; m++) {
        ss_strbuf_printf(b, "%s\"%s\": ", m ? ", " : "", calib__fit_metric_col[m]);
        json_num(b, v[m]);
    }
    ss_strbuf_printf(b, "}");
}

static void json_stages(ss_strbuf *b, const calib_fit_data *d)
{
    ss_strbuf_printf(b, "[");
    for (size_t i = 0; i < d->n_stages; i++) {
        const calib_fit_stage *s = &d->stages[i];
        ss_strbuf_printf(b, "%s{\"run\": ", i ? ", " : "");
        ss_strbuf_json_str(b, d->runs[s->run].name);
        ss_strbuf_printf(b, ", \"stage\": %u, \"rate\": ", s->k);
        ss_strbuf_json_str(b, s->rate);
        ss_strbuf_printf(b, ", \"fitted\": %s, \"completed\": %llu, \"real\": ",
                         s->fitted ? "true" : "false", (unsigned long long)s->completed);
        json_metrics(b, s->real);
        ss_strbuf_printf(b, ", \"sim\": ");
        json_metrics(b, s->sim);
        ss_strbuf_printf(b, "}");
    }
    ss_strbuf_printf(b, "]");
}

static void json_summary(ss_strbuf *b, const calib__fit_result *r)
{
    ss_strbuf_printf(b, "{");
    for (int m = 0; m < CALIB_FIT_METRICS; m++) {
        ss_strbuf_printf(b, "%s\"%s\": {\"mape_pct\": ", m ? ", " : "", calib__fit_metric_col[m]);
        json_num(b, r->m[m].mape);
        ss_strbuf_printf(b, ", \"bias_pct\": ");
        json_num(b, r->m[m].bias);
        ss_strbuf_printf(b, ", \"median_pct\": ");
        json_num(b, r->m[m].median);
        ss_strbuf_printf(b, ", \"stages\": %zu}", r->m[m].n);
    }
    ss_strbuf_printf(b, "}");
}

static void json_result(ss_strbuf *b, const calib__fit_ctx *x, const calib__fit_result *r)
{
    const calib_fit_opts *o = x->o;
    ss_strbuf_printf(b, "{\"mode\": \"%s\", \"dir\": ", o->evaluate ? "evaluate" : "fit");
    ss_strbuf_json_str(b, o->dir);
    ss_strbuf_printf(b, ", \"start_engine\": ");
    ss_strbuf_json_str(b, x->start->name);
    ss_strbuf_printf(b, ", \"engine\": ");
    ss_strbuf_json_str(b, x->cand.name);
    ss_strbuf_printf(b, ", \"profile\": ");
    if (o->evaluate)
        ss_strbuf_printf(b, "null");
    else
        ss_strbuf_json_str(b, o->out);
    ss_strbuf_printf(b, ", \"overlap\": \"%s\", \"allreduce\": \"%s\", \"n_runs\": %zu, "
                        "\"n_stages\": %zu, \"n_fitted\": %zu, \"served_ms\": %.17g, "
                        "\"terms\": ", x->cand.overlap_name, x->cand.allreduce_name,
                     x->d.n_runs, x->d.n_stages, r->n_fitted, o->served_ms);
    json_terms(b, x);
    ss_strbuf_printf(b, ", \"objective\": ");
    json_num(b, r->objective);
    ss_strbuf_printf(b, ", \"metrics\": ");
    json_summary(b, r);
    ss_strbuf_printf(b, ", \"runaway\": %zu, \"iterations\": %zu, \"evaluations\": %zu, "
                        "\"converged\": %s, \"wall_s\": %.3f, \"stages\": ", r->runaway,
                     r->nm.iterations, r->nm.evaluations, r->nm.converged ? "true" : "false",
                     r->wall_s);
    json_stages(b, &x->d);
    ss_strbuf_printf(b, "}");
}

/* The profile's header comment: what it was fitted on and how well. Deterministic: no time. */
static void profile_header(ss_strbuf *b, const calib__fit_ctx *x, const calib__fit_result *r,
                           const char *command)
{
    const calib_fit_opts *o = x->o;
    ss_strbuf_printf(b, "Engine profile fitted by `slicesim fit` (slicesim %s) to measured "
                        "serving runs:\n%s, runs: ", SS_VERSION, o->dir);
    for (size_t i = 0; i < x->d.n_runs; i++)
        ss_strbuf_printf(b, "%s%s", i ? ", " : "", x->d.runs[i].name);
    ss_strbuf_printf(b, "\n%zu stages, %zu fitted (real TTFT mean < %g ms). Started from %s "
                        "(its host terms for %s; no [gpu.NAME] sections: the [host] terms "
                        "hold on every GPU).\nFitted (start -> fitted): ", x->d.n_stages,
                     r->n_fitted, o->served_ms, x->start->name, x->d.runs[0].gpu);
    for (size_t i = 0; i < o->n_term; i++)
        ss_strbuf_printf(b, "%s%s %.6g -> %.6g", i ? ", " : "", calib__fit_terms[o->term[i]].key,
                         x->x0[i], calib__fit_term_get(&x->cand, &calib__fit_terms[o->term[i]]));
    ss_strbuf_printf(b, "; every other term is %s's.\nObjective (mean |ln(sim / real)| over "
                        "the fitted stages and TTFT mean, TTFT p90, ITL, E2E mean, E2E p90): "
                        "%.6f\nMAPE over the fitted stages:", x->start->name, r->objective);
    for (int m = 0; m < CALIB_FIT_METRICS; m++)
        if (r->m[m].n)
            ss_strbuf_printf(b, "%s %s %.1f %%", m ? "," : "", calib__fit_metric_label[m],
                             r->m[m].mape);
        else
            ss_strbuf_printf(b, "%s %s not measured", m ? "," : "", calib__fit_metric_label[m]);
    ss_strbuf_printf(b, "\nNelder-Mead: %zu iterations, %zu evaluations, %s.\nCommand: %s",
                     r->nm.iterations, r->nm.evaluations,
                     r->nm.converged ? "converged" : "stopped at --iterations", command);
}

static int write_profile(calib__fit_ctx *x, const calib__fit_result *r, const char *command)
{
    ss_strbuf h = {0};
    profile_header(&h, x, r, command);
    if (!ss_strbuf_ok(&h)) {
        ss_strbuf_fini(&h);
        return ss_err(&x->eb, SS_ENOMEM, "out of memory");
    }
    int rc = SS_OK;
    if (cat_engine_write(x->prof_f, &x->cand, ss_strbuf_str(&h)))
        rc = ss_err(&x->eb, SS_EIO, "%s: write error", x->o->out);
    if (!rc)
        rc = ss_outfile_commit(&x->prof_out, &x->eb);
    ss_strbuf_fini(&h);
    return rc;
}

static void csv_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, ",%.17g", v);
    else
        fputc(',', f);
}

/* The simulated stages as a stages.csv that fit reads back. */
static int write_stages(calib__fit_ctx *x)
{
    FILE *f = x->stages_f;
    fprintf(f, "run,stage,rate,completed");
    for (int m = 0; m < CALIB_FIT_METRICS; m++)
        fprintf(f, ",%s", calib__fit_metric_col[m]);
    fputc('\n', f);
    for (size_t i = 0; i < x->d.n_stages; i++) {
        const calib_fit_stage *s = &x->d.stages[i];
        fprintf(f, "%s,%u,%s,%llu", x->d.runs[s->run].name, s->k, s->rate,
                (unsigned long long)s->completed);
        for (int m = 0; m < CALIB_FIT_METRICS; m++)
            csv_num(f, s->sim[m]);
        fputc('\n', f);
    }
    return ss_outfile_commit(&x->stages_out, &x->eb);
}

/* The fit and its stages in one transaction of the database --db. */
static int store_result(calib__fit_ctx *x, const calib__fit_result *r, const char *command)
{
    const calib_fit_opts *o = x->o;
    ss_strbuf terms = {0}, pj = {0};
    for (size_t i = 0; i < o->n_term; i++)
        ss_strbuf_printf(&terms, "%s%s", i ? "," : "", calib__fit_terms[o->term[i]].key);
    ss_strbuf_printf(&pj, "{\"overlap\": \"%s\", \"allreduce\": \"%s\", \"terms\": ",
                     x->cand.overlap_name, x->cand.allreduce_name);
    json_terms(&pj, x);
    ss_strbuf_printf(&pj, "}");
    store_fit f = {
        .command = command, .mode = o->evaluate ? "evaluate" : "fit", .dir = o->dir,
        .start_engine = x->start->name, .engine = x->cand.name,
        .terms = ss_strbuf_str(&terms), .params_json = ss_strbuf_str(&pj),
        .profile = o->evaluate ? NULL : o->out, .runs = (uint32_t)x->d.n_runs,
        .stages = (uint32_t)x->d.n_stages, .fitted_stages = (uint32_t)r->n_fitted,
        .served_ms = o->served_ms, .objective = r->objective, .runaway = (uint32_t)r->runaway,
        .iterations = r->nm.iterations, .evaluations = r->nm.evaluations,
        .converged = r->nm.converged, .wall_s = r->wall_s,
    };
    for (int m = 0; m < CALIB_FIT_METRICS; m++)
        f.mape_pct[m] = r->m[m].mape;
    store *st = NULL;
    int rc = ss_strbuf_ok(&terms) && ss_strbuf_ok(&pj) ? SS_OK
                                                       : ss_err(&x->eb, SS_ENOMEM, "out of memory");
    if (!rc)
        rc = store_open(&st, o->db, &x->eb);
    if (!rc)
        rc = store_fit_begin(st, &f, NULL, &x->eb);
    for (size_t i = 0; !rc && i < x->d.n_stages; i++) {
        const calib_fit_stage *s = &x->d.stages[i];
        store_fit_stage row = {.run = x->d.runs[s->run].name, .stage = s->k, .rate = NAN,
                               .fitted = s->fitted, .completed = s->completed};
        if (*s->rate)
            ss_parse_decimalz(s->rate, &row.rate);
        memcpy(row.real, s->real, sizeof row.real);
        memcpy(row.sim, s->sim, sizeof row.sim);
        rc = store_fit_add_stage(st, &row, &x->eb);
    }
    if (!rc)
        rc = store_fit_commit(st, &x->eb);
    store_close(&st);
    ss_strbuf_fini(&terms);
    ss_strbuf_fini(&pj);
    return rc;
}

int calib__fit_emit(calib__fit_ctx *x, const calib__fit_result *r, const char *command)
{
    const calib_fit_opts *o = x->o;
    int rc = o->evaluate ? SS_OK : write_profile(x, r, command);
    if (!rc && o->write_stages)
        rc = write_stages(x);
    if (!rc && o->db)
        rc = store_result(x, r, command);
    if (rc)
        return rc;
    if (!o->json) {
        print_table(x->out, x, r);
        return SS_OK;
    }
    ss_strbuf b = {0};
    json_result(&b, x, r);
    if (!ss_strbuf_ok(&b))
        rc = ss_err(&x->eb, SS_ENOMEM, "out of memory");
    else
        fprintf(x->out, "%s\n", ss_strbuf_str(&b));
    ss_strbuf_fini(&b);
    return rc;
}


/* }====================================================================== */
