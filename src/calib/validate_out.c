/* A validation's result: the per-kind and per-iteration errors (absolute percentage error
 * and bias of the prediction against the measurement, the worst iterations), the table, the
 * JSON object and the database rows. Not for recording or executing iterations
 * (validate.c). */
#include "calib/validate_int.h"

#include "core/ss_strbuf.h"
#include "store/store.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static double ape_of(ss_time pred, ss_time meas)
{
    return meas > 0 ? fabs((double)pred - (double)meas) / (double)meas : 0;
}

static double err_of(ss_time pred, ss_time meas)
{
    return meas > 0 ? ((double)pred - (double)meas) / (double)meas : 0;
}

void calib__val_summarise(const calib__val_run *v, calib__val_sum *s)
{
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < v->n_it; i++) {
        const calib__val_iter *it = &v->it[i];
        for (int k = 0; k < COST_OP__COUNT; k++) {
            if (!it->execs[k])
                continue;
            calib__kind_stat *ks = &s->k[k];
            double a = ape_of(it->pred[k], it->meas[k]);
            ks->execs += it->execs[k];
            ks->iters++;
            ks->pred_ms += (double)it->pred[k] / 1e6;
            ks->meas_ms += (double)it->meas[k] / 1e6;
            ks->ape += a;
            ks->bias += err_of(it->pred[k], it->meas[k]);
            if (a >= ks->worst) {
                ks->worst = a;
                ks->worst_iter = it->seq;
            }
        }
        s->mape += ape_of(it->pred_total, it->meas_total);
        s->bias += err_of(it->pred_total, it->meas_total);
        s->pred_ms += (double)it->pred_total / 1e6;
        s->meas_ms += (double)it->meas_total / 1e6;
        s->span_ms += (double)it->meas_span / 1e6;
        s->host_ms += (double)it->pred_host / 1e6;
        /* keep the CALIB__N_WORST iterations by absolute error, worst first */
        double a = ape_of(it->pred_total, it->meas_total);
        size_t at = s->n_worst;
        while (at > 0 && ape_of(v->it[s->worst[at - 1]].pred_total,
                                v->it[s->worst[at - 1]].meas_total) < a)
            at--;
        if (at < CALIB__N_WORST) {
            size_t end = s->n_worst < CALIB__N_WORST ? s->n_worst : CALIB__N_WORST - 1;
            memmove(s->worst + at + 1, s->worst + at, (end - at) * sizeof *s->worst);
            s->worst[at] = i;
            if (s->n_worst < CALIB__N_WORST)
                s->n_worst++;
        }
    }
    for (int k = 0; k < COST_OP__COUNT; k++)
        if (s->k[k].iters) {
            s->k[k].ape /= s->k[k].iters;
            s->k[k].bias /= s->k[k].iters;
        }
    if (v->n_it) {
        s->mape /= (double)v->n_it;
        s->bias /= (double)v->n_it;
    }
}

void calib__val_print_table(FILE *f, const calib__val_run *v, const calib__val_sum *s,
                            const char *cost)
{
    const exec_device *d = exec_device_info(v->x);
    fprintf(f, "slicesim validate: %zu iterations of %s TP %u, cost model '%s' for %s vs %s "
               "(executor %s, timer %s)\n",
            v->n_it, v->m->name, v->o->tp, cost, v->gpu->name, d->name, exec_backend(v->x),
            d->timer);
    fprintf(f, "  %-13s %8s %12s %12s %8s %8s %10s\n", "OP", "EXECS", "PRED_MS", "MEAS_MS",
            "MAPE_%", "BIAS_%", "WORST_%");
    for (int k = 0; k < COST_OP__COUNT; k++) {
        const calib__kind_stat *ks = &s->k[k];
        if (!ks->iters)
            continue;
        fprintf(f, "  %-13s %8llu %12.3f %12.3f %8.1f %+8.1f %10.1f\n",
                cost_op_name((cost_op_kind)k), (unsigned long long)ks->execs, ks->pred_ms,
                ks->meas_ms, 100 * ks->ape, 100 * ks->bias, 100 * ks->worst);
    }
    fprintf(f, "  %-13s %8s %12.3f %12.3f %8.1f %+8.1f\n", "iteration", "", s->pred_ms,
            s->meas_ms, 100 * s->mape, 100 * s->bias);
    fprintf(f, "  measured span (first kernel start to last end, launch gaps included): %.3f "
               "ms; predicted host time, not executed: %.3f ms\n", s->span_ms, s->host_ms);
    fprintf(f, "  worst iterations:  ITER  PREFILL_TOK  DECODES  PRED_MS  MEAS_MS  ERR_%%\n");
    for (size_t i = 0; i < s->n_worst; i++) {
        const calib__val_iter *it = &v->it[s->worst[i]];
        fprintf(f, "                   %6llu %12llu %8u %8.3f %8.3f %+6.1f\n",
                (unsigned long long)it->seq, (unsigned long long)it->batch.prefill_tokens,
                it->batch.n_decode, (double)it->pred_total / 1e6, (double)it->meas_total / 1e6,
                100 * err_of(it->pred_total, it->meas_total));
    }
}

void calib__val_print_json(FILE *f, const calib__val_run *v, const calib__val_sum *s,
                           const char *cost, int64_t id)
{
    const exec_device *d = exec_device_info(v->x);
    ss_strbuf b = {0};
    ss_strbuf_printf(&b, "{\"validation_id\": %lld, \"model\": ", (long long)id);
    ss_strbuf_json_str(&b, v->m->name);
    ss_strbuf_printf(&b, ", \"tp\": %u, \"gpu\": ", v->o->tp);
    ss_strbuf_json_str(&b, v->gpu->name);
    ss_strbuf_printf(&b, ", \"device\": ");
    ss_strbuf_json_str(&b, d->name);
    ss_strbuf_printf(&b, ", \"backend\": \"%s\", \"timer\": \"%s\", \"cost_model\": ",
                     exec_backend(v->x), d->timer);
    ss_strbuf_json_str(&b, cost);
    ss_strbuf_printf(&b, ", \"iterations\": %zu, \"iteration_mape_pct\": %.4f, "
                         "\"iteration_bias_pct\": %.4f, \"predicted_ms\": %.6f, "
                         "\"measured_ms\": %.6f, \"measured_span_ms\": %.6f, \"ops\": [",
                     v->n_it, 100 * s->mape, 100 * s->bias, s->pred_ms, s->meas_ms, s->span_ms);
    int first = 1;
    for (int k = 0; k < COST_OP__COUNT; k++) {
        const calib__kind_stat *ks = &s->k[k];
        if (!ks->iters)
            continue;
        ss_strbuf_printf(&b, "%s\n  {\"op\": \"%s\", \"executions\": %llu, \"predicted_ms\": "
                             "%.6f, \"measured_ms\": %.6f, \"mape_pct\": %.4f, \"bias_pct\": "
                             "%.4f, \"worst_pct\": %.4f, \"worst_iteration\": %llu}",
                         first ? "" : ",", cost_op_name((cost_op_kind)k),
                         (unsigned long long)ks->execs, ks->pred_ms, ks->meas_ms, 100 * ks->ape,
                         100 * ks->bias, 100 * ks->worst, (unsigned long long)ks->worst_iter);
        first = 0;
    }
    ss_strbuf_printf(&b, "], \"worst_iterations\": [");
    for (size_t i = 0; i < s->n_worst; i++) {
        const calib__val_iter *it = &v->it[s->worst[i]];
        ss_strbuf_printf(&b, "%s{\"iteration\": %llu, \"predicted_ms\": %.6f, \"measured_ms\": "
                             "%.6f, \"error_pct\": %.4f}",
                         i ? ", " : "", (unsigned long long)it->seq,
                         (double)it->pred_total / 1e6, (double)it->meas_total / 1e6,
                         100 * err_of(it->pred_total, it->meas_total));
    }
    ss_strbuf_printf(&b, "]}\n");
    if (ss_strbuf_ok(&b))
        fputs(ss_strbuf_str(&b), f);
    ss_strbuf_fini(&b);
}

int calib__val_store(calib__val_run *v, const calib__val_sum *s, const char *cost,
                     const char *trace, const char *command, int64_t *id_out)
{
    *id_out = 0;
    if (!strcmp(v->o->db, "none"))
        return SS_OK;
    store *st = NULL;
    int rc = store_open(&st, v->o->db, &v->eb);
    if (rc)
        return rc;
    const exec_device *d = exec_device_info(v->x);
    store_validation info = {
        .command = command, .name = v->o->name ? v->o->name : "", .model = v->m->name,
        .tp = v->o->tp, .gpu = v->gpu->name, .device = d->name, .backend = exec_backend(v->x),
        .timer = d->timer, .cost_model = cost, .trace = trace, .requests = (uint64_t)v->o->limit,
        .iterations = v->n_it, .reps = (uint32_t)v->o->reps, .l2_cold = v->o->l2_cold,
        .mape_pct = 100 * s->mape, .bias_pct = 100 * s->bias, .predicted_ms = s->pred_ms,
        .measured_ms = s->meas_ms, .measured_span_ms = s->span_ms,
    };
    rc = store_validation_begin(st, &info, id_out, &v->eb);
    for (int k = 0; !rc && k < COST_OP__COUNT; k++) {
        const calib__kind_stat *ks = &s->k[k];
        if (!ks->iters)
            continue;
        store_validation_op row = {
            .op = cost_op_name((cost_op_kind)k), .executions = ks->execs,
            .predicted_ms = ks->pred_ms, .measured_ms = ks->meas_ms, .mape_pct = 100 * ks->ape,
            .bias_pct = 100 * ks->bias, .worst_pct = 100 * ks->worst,
            .worst_iteration = ks->worst_iter};
        rc = store_validation_add_op(st, &row, &v->eb);
    }
    for (size_t i = 0; !rc && i < v->n_it; i++) {
        const calib__val_iter *it = &v->it[i];
        store_validation_iter row = {
            .iteration = it->seq, .sim_start_s = ss_time_to_s(it->t_start),
            .sim_ms = (double)(it->t_end - it->t_start) / 1e6, .prefills = it->batch.n_prefill,
            .prefill_tokens = it->batch.prefill_tokens, .decodes = it->batch.n_decode,
            .decode_ctx_tokens = it->batch.decode_ctx_tokens,
            .predicted_ms = (double)it->pred_total / 1e6,
            .measured_ms = (double)it->meas_total / 1e6,
            .measured_span_ms = (double)it->meas_span / 1e6,
            .predicted_host_ms = (double)it->pred_host / 1e6,
            .error_pct = 100 * err_of(it->pred_total, it->meas_total)};
        rc = store_validation_add_iter(st, &row, &v->eb);
    }
    if (!rc)
        rc = store_validation_commit(st, &v->eb);
    store_close(&st); /* rolls back an unfinished validation */
    return rc;
}

