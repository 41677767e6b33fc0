/* Writing validations (`slicesim validate`: predicted vs measured operator times, per operator
 * and per iteration) and fits (`slicesim fit`: a fitted engine and its per-stage comparison),
 * and capacities (`slicesim capacity`: each bundle's answer and each seed's search), one
 * transaction each, like a run. */
#include "store/store_int.h"

#include "version.h"

/* ---- validations -------------------------------------------------------------------------- */

/* Prepare sql, bind through fill, step once. */
static int one_row(store *s, const char *sql, void (*fill)(store__binder *, const void *),
                   const void *row, ss_errbuf *eb, const char *what)
{
    store__binder b = {NULL, 0, 0};
    if (sqlite3_prepare_v2(s->db, sql, -1, &b.st, NULL) != SQLITE_OK)
        return store__db_err(s, eb, what);
    fill(&b, row);
    int rc = store__run_stmt(s, &b, eb, what);
    sqlite3_finalize(b.st);
    return rc;
}

typedef struct val_head {
    const store_validation *v;
    const char *now;
} val_head;

static void fill_validation(store__binder *b, const void *p)
{
    const val_head *h = p;
    const store_validation *v = h->v;
    store__b_text(b, h->now);
    store__b_text(b, SS_VERSION);
    store__b_text(b, v->command);
    store__b_text(b, v->name);
    store__b_text(b, v->model);
    store__b_int(b, v->tp);
    store__b_text(b, v->gpu);
    store__b_text(b, v->device);
    store__b_text(b, v->backend);
    store__b_text(b, v->timer);
    store__b_text(b, v->cost_model);
    store__b_text(b, v->trace);
    store__b_int(b, (int64_t)v->requests);
    store__b_int(b, (int64_t)v->iterations);
    store__b_int(b, v->reps);
    store__b_int(b, v->l2_cold);
    store__b_real(b, v->mape_pct);
    store__b_real(b, v->bias_pct);
    store__b_real(b, v->predicted_ms);
    store__b_real(b, v->measured_ms);
    store__b_real(b, v->measured_span_ms);
}

int store_validation_begin(store *s, const store_validation *v, int64_t *id_out, ss_errbuf *eb)
{
    if (s->in_run)
        return ss_err(eb, SS_EINVAL, "%s: a run is already open", s->path);
    int rc = store__exec(s, "BEGIN IMMEDIATE", eb, "starting the validation's transaction");
    if (rc)
        return rc;
    s->in_run = 1;
    char now[32];
    store__utc_now(now);
    val_head h = {v, now};
    rc = one_row(s, "INSERT INTO validations (created, version, command, name, model, tp, gpu,"
                    " device, backend, timer, cost_model, trace, requests, iterations, reps,"
                    " l2_cold, mape_pct, bias_pct, predicted_ms, measured_ms, measured_span_ms)"
                    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                 fill_validation, &h, eb, "storing the validation");
    if (rc) {
        store_run_abort(s);
        return rc;
    }
    s->run_id = sqlite3_last_insert_rowid(s->db);
    *id_out = s->run_id;
    return SS_OK;
}

typedef struct val_row {
    int64_t id;
    const void *row;
} val_row;

static void fill_op(store__binder *b, const void *p)
{
    const val_row *r = p;
    const store_validation_op *o = r->row;
    store__b_int(b, r->id);
    store__b_text(b, o->op);
    store__b_int(b, (int64_t)o->executions);
    store__b_real(b, o->predicted_ms);
    store__b_real(b, o->measured_ms);
    store__b_real(b, o->mape_pct);
    store__b_real(b, o->bias_pct);
    store__b_real(b, o->worst_pct);
    store__b_int(b, (int64_t)o->worst_iteration);
}

int store_validation_add_op(store *s, const store_validation_op *row, ss_errbuf *eb)
{
    if (!s->in_run)
        return ss_err(eb, SS_EINVAL, "%s: no validation is open", s->path);
    val_row r = {s->run_id, row};
    return one_row(s, "INSERT INTO validation_ops VALUES (?,?,?,?,?,?,?,?,?)", fill_op, &r, eb,
                   "storing a validated operator");
}

static void fill_iter(store__binder *b, const void *p)
{
    const val_row *r = p;
    const store_validation_iter *i = r->row;
    store__b_int(b, r->id);
    store__b_int(b, (int64_t)i->iteration);
    store__b_real(b, i->sim_start_s);
    store__b_real(b, i->sim_ms);
    store__b_int(b, (int64_t)i->prefills);
    store__b_int(b, (int64_t)i->prefill_tokens);
    store__b_int(b, (int64_t)i->decodes);
    store__b_int(b, (int64_t)i->decode_ctx_tokens);
    store__b_real(b, i->predicted_ms);
    store__b_real(b, i->measured_ms);
    store__b_real(b, i->measured_span_ms);
    store__b_real(b, i->predicted_host_ms);
    store__b_real(b, i->error_pct);
}

int store_validation_add_iter(store *s, const store_validation_iter *row, ss_errbuf *eb)
{
    if (!s->in_run)
        return ss_err(eb, SS_EINVAL, "%s: no validation is open", s->path);
    val_row r = {s->run_id, row};
    return one_row(s, "INSERT INTO validation_iters VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                   fill_iter, &r, eb, "storing a validated iteration");
}

int store_validation_commit(store *s, ss_errbuf *eb)
{
    if (!s->in_run)
        return ss_err(eb, SS_EINVAL, "%s: no validation is open", s->path);
    int rc = store__exec(s, "COMMIT", eb, "committing the validation");
    if (rc) {
        store_run_abort(s);
        return rc;
    }
    s->in_run = 0;
    return SS_OK;
}

/* ---- fits ------------------------------------------------------------------------------- */

typedef struct fit_head {
    const store_fit *f;
    const char *now;
} fit_head;

static void fill_fit(store__binder *b, const void *p)
{
    const fit_head *h = p;
    const store_fit *f = h->f;
    store__b_text(b, h->now);
    store__b_text(b, SS_VERSION);
    store__b_text(b, f->command);
    store__b_text(b, f->mode);
    store__b_text(b, f->dir);
    store__b_text(b, f->start_engine);
    store__b_text(b, f->engine);
    store__b_text(b, f->terms);
    store__b_text(b, f->params_json);
    store__b_text(b, f->profile);
    store__b_int(b, f->runs);
    store__b_int(b, f->stages);
    store__b_int(b, f->fitted_stages);
    store__b_real(b, f->served_ms);
    store__b_real(b, f->objective);
    for (int i = 0; i < STORE_FIT_METRICS; i++)
        store__b_real(b, f->mape_pct[i]);
    store__b_int(b, f->runaway);
    store__b_int(b, (int64_t)f->iterations);
    store__b_int(b, (int64_t)f->evaluations);
    store__b_int(b, f->converged);
    store__b_real(b, f->wall_s);
}

int store_fit_begin(store *s, const store_fit *f, int64_t *id_out, ss_errbuf *eb)
{
    if (s->in_run)
        return ss_err(eb, SS_EINVAL, "%s: a run is already open", s->path);
    int rc = store__exec(s, "BEGIN IMMEDIATE", eb, "starting the fit's transaction");
    if (rc)
        return rc;
    s->in_run = 1;
    char now[32];
    store__utc_now(now);
    fit_head h = {f, now};
    rc = one_row(s, "INSERT INTO fits (created, version, command, mode, dir, start_engine,"
                    " engine, terms, params, profile, runs, stages, fitted_stages, served_ms,"
                    " objective, mape_ttft_mean_pct, mape_ttft_p90_pct, mape_itl_pct,"
                    " mape_e2e_mean_pct, mape_e2e_p90_pct, runaway, iterations, evaluations,"
                    " converged, wall_s)"
                    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                 fill_fit, &h, eb, "storing the fit");
    if (rc) {
        store_run_abort(s);
        return rc;
    }
    s->run_id = sqlite3_last_insert_rowid(s->db);
    if (id_out)
        *id_out = s->run_id;
    return SS_OK;
}

static void fill_fit_stage(store__binder *b, const void *p)
{
    const val_row *r = p;
    const store_fit_stage *st = r->row;
    store__b_int(b, r->id);
    store__b_text(b, st->run);
    store__b_int(b, st->stage);
    store__b_real(b, st->rate);
    store__b_int(b, st->fitted);
    store__b_int(b, (int64_t)st->completed);
    for (int i = 0; i < STORE_FIT_METRICS; i++) {
        store__b_real(b, st->real[i]);
        store__b_real(b, st->sim[i]);
    }
}

int store_fit_add_stage(store *s, const store_fit_stage *row, ss_errbuf *eb)
{
    if (!s->in_run)
        return ss_err(eb, SS_EINVAL, "%s: no fit is open", s->path);
    val_row r = {s->run_id, row};
    return one_row(s, "INSERT INTO fit_stages VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                   fill_fit_stage, &r, eb, "storing a fitted stage");
}

int store_fit_commit(store *s, ss_errbuf *eb)
{
    if (!s->in_run)
        return ss_err(eb, SS_EINVAL, "%s: no fit is open", s->path);
    int rc = store__exec(s, "COMMIT", eb, "committing the fit");
    if (rc) {
        store_run_abort(s);
        return rc;
    }
    s->in_run = 0;
    return SS_OK;
}

/* ---- capacities --------------------------------------------------------------------------- */

int store_capacities_begin(store *s, ss_errbuf *eb)
{
    if (s->in_run)
        return ss_err(eb, SS_EINVAL, "%s: a run is already open", s->path);
    int rc = store__exec(s, "BEGIN IMMEDIATE", eb, "starting the capacities' transaction");
    if (!rc)
        s->in_run = 1;
    return rc;
}

static void b_text_or_null(store__binder *b, const char *v)
{
    if (v)
        store__b_text(b, v);
    else
        store__b_null(b);
}

typedef struct cap_head {
    const store_capacity *c;
    const char *now;
} cap_head;

static void fill_capacity(store__binder *b, const void *p)
{
    const cap_head *h = p;
    const store_capacity *c = h->c;
    store__b_text(b, h->now);
    store__b_text(b, SS_VERSION);
    store__b_text(b, c->command);
    store__b_text(b, c->scenario);
    store__b_text(b, c->sweep);
    store__b_text(b, c->bundle);
    store__b_text(b, c->reference);
    store__b_text(b, c->criterion);
    b_text_or_null(b, c->tenant);
    store__b_real(b, c->sla_miss_bound);
    store__b_real(b, c->tol);
    store__b_int(b, c->seeds);
    store__b_text(b, c->status);
    store__b_int(b, c->converged);
    store__b_int(b, c->censored);
    store__b_real(b, c->capacity);
    store__b_real(b, c->capacity_lo);
    store__b_real(b, c->capacity_hi);
    store__b_real(b, c->ratio);
    store__b_real(b, c->ratio_lo);
    store__b_real(b, c->ratio_hi);
    b_text_or_null(b, c->verdict);
    store__b_real(b, c->bracket_lo);
    store__b_real(b, c->bracket_hi);
    store__b_real(b, c->goodput_tokens_per_s);
    store__b_real(b, c->sla_miss);
    store__b_real(b, c->pooled_sla_miss);
    store__b_int(b, c->probes);
}

int store_capacity_add(store *s, const store_capacity *row, int64_t *id_out, ss_errbuf *eb)
{
    if (!s->in_run)
        return ss_err(eb, SS_EINVAL, "%s: no capacities are open", s->path);
    char now[32];
    store__utc_now(now);
    cap_head h = {row, now};
    int rc = one_row(s, "INSERT INTO capacities (created_utc, version, command, scenario, sweep,"
                        " bundle, reference, criterion, tenant, sla_miss_bound, tol, seeds,"
                        " status, converged, censored, capacity, capacity_ci95_lo,"
                        " capacity_ci95_hi, ratio, ratio_ci95_lo, ratio_ci95_hi, verdict,"
                        " bracket_lo, bracket_hi, goodput_tokens_per_s, sla_miss,"
                        " pooled_sla_miss, probes)"
                        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                     fill_capacity, &h, eb, "storing a capacity");
    if (!rc && id_out)
        *id_out = sqlite3_last_insert_rowid(s->db);
    return rc;
}

typedef struct cap_seed_row {
    int64_t id;
    const store_capacity_seed *r;
} cap_seed_row;

static void fill_capacity_seed(store__binder *b, const void *p)
{
    const cap_seed_row *x = p;
    const store_capacity_seed *r = x->r;
    store__b_int(b, x->id);
    store__b_int(b, (int64_t)r->seed);
    store__b_text(b, r->status);
    store__b_int(b, r->converged);
    store__b_int(b, r->censored);
    store__b_real(b, r->capacity);
    store__b_real(b, r->ratio);
    store__b_real(b, r->bracket_lo);
    store__b_real(b, r->bracket_hi);
    store__b_real(b, r->goodput_tokens_per_s);
    store__b_real(b, r->sla_miss);
    store__b_real(b, r->pooled_sla_miss);
    store__b_int(b, r->probes);
    b_text_or_null(b, r->point);
}

int store_capacity_add_seed(store *s, int64_t capacity_id, const store_capacity_seed *row,
                            ss_errbuf *eb)
{
    if (!s->in_run)
        return ss_err(eb, SS_EINVAL, "%s: no capacities are open", s->path);
    cap_seed_row r = {capacity_id, row};
    return one_row(s, "INSERT INTO capacity_seeds (capacity_id, seed, status, converged,"
                      " censored, capacity, ratio, bracket_lo, bracket_hi, goodput_tokens_per_s,"
                      " sla_miss, pooled_sla_miss, probes, point)"
                      " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                   fill_capacity_seed, &r, eb, "storing a capacity's seed");
}

int store_capacities_commit(store *s, ss_errbuf *eb)
{
    if (!s->in_run)
        return ss_err(eb, SS_EINVAL, "%s: no capacities are open", s->path);
    int rc = store__exec(s, "COMMIT", eb, "committing the capacities");
    if (rc) {
        store_run_abort(s);
        return rc;
    }
    s->in_run = 0;
    return SS_OK;
}
