/* Writing a run: the statements prepared once per handle (runs, requests, summary, tenants,
 * tiers, gpus, idle slices, instances, sweep points), one transaction per run from store_run_begin to
 * store_run_commit, request rows inserted STORE__REQ_CHUNK to a statement, and the sweep-point
 * lookup a resumed sweep makes. */
#include "store/store_int.h"

#include "core/ss_alloc.h"
#include "core/ss_time.h"

#include "config.h"
#include "version.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* Prefix-cache columns of summary and tenants, in bind_prefix order. */
#define PREFIX_NAMES                                                                               \
    " prefix_query_tokens, prefix_hit_tokens, prefix_query_blocks, prefix_hit_blocks,"            \
    " prefix_saved_tokens, prefix_evictions, prefix_ceiling_hit_tokens,"                          \
    " prefix_ceiling_hit_blocks, prefix_ceiling_hit_rate"
#define PREFIX_VALUES "?,?,?,?,?,?,?,?,?"

/* KV-pool columns of summary and tenants, in bind_kvpool order. */
#define KVPOOL_NAMES                                                                               \
    " kvpool_lookups, kvpool_gpu_blocks, kvpool_cpu_blocks, kvpool_ssd_blocks,"                   \
    " kvpool_remote_blocks, kvpool_loads, kvpool_load_bytes, kvpool_load_s, kvpool_recomputes,"   \
    " kvpool_recompute_blocks, kvpool_offload_blocks, kvpool_offload_bytes, kvpool_demotions,"    \
    " kvpool_evictions"
#define KVPOOL_VALUES "?,?,?,?,?,?,?,?,?,?,?,?,?,?"

/* Disaggregated serving's columns of tenants, in bind_kv order. */
#define KV_NAMES                                                                                   \
    " prefill_replicas, decode_replicas, kv_transfers, kv_gib, kv_exposed_s,"                    \
    " kv_exposed_mean_ms, kv_waits, kv_wait_s"
#define KV_VALUES "?,?,?,?,?,?,?,?"

#define GROUP_NAMES                                                                                \
    " requests, completed, rejected, truncated, preemptions, sla_violations, sla_violation_rate,"  \
    " prompt_tokens_per_s, output_tokens_per_s, requests_per_s, goodput_tokens_per_s,"            \
    " ttft_mean_ms, ttft_p50_ms, ttft_p90_ms, ttft_p99_ms, ttft_max_ms,"                          \
    " tbt_mean_ms, tbt_p50_ms, tbt_p90_ms, tbt_p99_ms, tbt_max_ms,"                               \
    " e2e_mean_ms, e2e_p50_ms, e2e_p90_ms, e2e_p99_ms, e2e_max_ms,"                               \
    " window_output_tokens_per_s, window_goodput_tokens_per_s"
#define GROUP_VALUES "?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?"

/* A request row: its columns, in bind_request order, and one row of values. */
#define REQ_INSERT                                                                                 \
    "INSERT INTO requests (run_id, req_id, tenant, tier, container, status, arrival_s,"            \
    " prompt_tokens, output_tokens, generated_tokens, preemptions, ttft_ms, e2e_ms,"               \
    " tbt_mean_ms, tbt_max_ms, sla_violated, measured, migrations) VALUES "
#define REQ_VALUES "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"

enum { ST_RUN, ST_REQ, ST_GPU, ST_SUM, ST_END, ST_TENANT, ST_TIER, ST_SLICE, ST_POINT, ST_HAS,
       ST_INST, ST_ITER, ST__N };

static const char *const stmt_sql[ST__N] = {
    [ST_RUN] = "INSERT INTO runs (created_utc, version, build, command, trace, trace_format,"
               " trace_digest, model, gpu, replicas, tp, batching, routing, cost_model, params,"
               " seed, rate_scale, limit_requests, pp, cluster_policy, warmup_s, scenario, ops,"
               " load, engine, bundle, stored)"
               " VALUES (?,?,?,?,?,?,'',?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_REQ] = REQ_INSERT REQ_VALUES,
    [ST_GPU] = "INSERT INTO gpus (run_id, gpu, node, container, kind, busy_s, utilization,"
               " iterations, kv_blocks, kv_peak_blocks, weights_gib, kv_pool_gib,"
               " device_busy_s, idle_slices, idle_s,"
               " tenant, window_s, compute_s, host_s, phys, share)"
               " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_SUM] = "INSERT INTO summary (run_id, iterations, peak_in_flight, prompt_tokens,"
               " output_tokens, sim_s, swap_outs, aborted, measured_requests, window_s,"
               " migrations, migrations_aborted, migration_gib, reallocations,"
               GROUP_NAMES ", scale_ups, scale_downs, idle_slices, idle_gpu_s, offloads,"
               " offload_ops, offload_gib, slices_used, whatifs, slice_decisions, slice_wall_s,"
               " prediction_error_ms, rejected_too_long, rejected_batch_tokens,"
               " rejected_kv_blocks, rejected_preempted, rejected_other," PREFIX_NAMES ","
               " arrival_window_s," KVPOOL_NAMES ", kvpool_cpu_peak_bytes, kvpool_ssd_peak_bytes)"
               " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?," GROUP_VALUES ",?,?,?,?,?,?,?,?,?,?,?,?,"
               "?,?,?,?,?," PREFIX_VALUES ",?," KVPOOL_VALUES ",?,?)",
    [ST_TENANT] = "INSERT INTO tenants (run_id, tenant, model, replicas," GROUP_NAMES ","
                  PREFIX_NAMES "," KVPOOL_NAMES "," KV_NAMES ", share) VALUES (?,?,?,?,"
                  GROUP_VALUES "," PREFIX_VALUES "," KVPOOL_VALUES "," KV_VALUES ",?)",
    [ST_TIER] = "INSERT INTO tiers (run_id, tier," GROUP_NAMES ") VALUES (?,?," GROUP_VALUES ")",
    [ST_POINT] = "INSERT OR REPLACE INTO sweep_points (sweep, point, run_id) VALUES (?,?,?)",
    [ST_HAS] = "SELECT run_id FROM sweep_points WHERE sweep = ? AND point = ?",
    [ST_SLICE] = "INSERT INTO idle_slices (run_id, bucket, lo_ms, hi_ms, count, gpu_s,"
                 " free_gib_mean) VALUES (?,?,?,?,?,?,?)",
    [ST_INST] = "INSERT INTO instances (run_id, container, tenant, prefix_lookups,"
                " prefix_query_tokens, prefix_hit_tokens, prefix_query_blocks, prefix_hit_blocks,"
                " prefix_saved_tokens, prefix_evictions, prefix_hit_rate)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
    [ST_ITER] = "INSERT INTO iterations (run_id, container, iteration, tenant, start_s, end_s,"
                " kind, prefill_seqs, prefill_tokens, decode_seqs, decode_ctx_tokens, swap_blocks)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_END] = "UPDATE runs SET wall_s = ?, events = ?, sim_s = ?, trace_digest = ?,"
               " result_json = ? WHERE run_id = ?",
};

_Static_assert(ST__N == STORE__N_STMTS, "store_int.h sizes the statement array");

int store__prepare_statements(store *s, ss_errbuf *eb)
{
    for (int i = 0; i < ST__N; i++)
        if (sqlite3_prepare_v3(s->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->st[i],
                               NULL) != SQLITE_OK)
            return store__db_err(s, eb, "preparing statements");
    return SS_OK;
}

/* The INSERT of STORE__REQ_CHUNK request rows into s->st_reqs. */
static int prepare_reqs(store *s, ss_errbuf *eb)
{
    char sql[sizeof REQ_INSERT + STORE__REQ_CHUNK * sizeof "," REQ_VALUES];
    char *end = sql + sprintf(sql, "%s", REQ_INSERT);
    for (int i = 0; i < STORE__REQ_CHUNK; i++)
        end += sprintf(end, "%s%s", i ? "," : "", REQ_VALUES);
    if (sqlite3_prepare_v3(s->db, sql, (int)(end - sql), SQLITE_PREPARE_PERSISTENT, &s->st_reqs,
                           NULL) != SQLITE_OK)
        return store__db_err(s, eb, "preparing statements");
    return SS_OK;
}

void store__free_statements(store *s)
{
    for (int i = 0; i < ST__N; i++) {
        sqlite3_finalize(s->st[i]);
        s->st[i] = NULL;
    }
    sqlite3_finalize(s->st_reqs);
    s->st_reqs = NULL;
    ss_free(s->reqs);
    s->reqs = NULL;
    s->n_reqs = 0;
    for (uint32_t i = 0; i < s->n_names; i++)
        ss_free(s->names[i]);
    ss_free(s->names);
    s->names = NULL;
    s->n_names = 0;
}

void store__utc_now(char buf[32])
{
    time_t t = time(NULL);
    struct tm tmv;
    gmtime_r(&t, &tmv);
    strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tmv);
}


int store_run_begin(store *s, const store_run_info *in, int64_t *run_id_out, ss_errbuf *eb)
{
    if (s->in_run)
        return ss_err(eb, SS_EINVAL, "%s: a run is already open", s->path);
    if (!s->reqs && !(s->reqs = ss_malloc(STORE__REQ_CHUNK * sizeof *s->reqs)))
        return ss_err(eb, SS_ENOMEM, "out of memory");
    int rc = store__exec(s, "BEGIN IMMEDIATE", eb, "starting the run's transaction");
    if (rc)
        return rc;
    s->in_run = 1;
    s->n_reqs = 0;
    s->keep = in->keep;
    char now[32];
    store__utc_now(now);
    store__binder b = {s->st[ST_RUN], 0, 0};
    store__b_text(&b, now);
    store__b_text(&b, SS_VERSION);
    store__b_text(&b, SS_BUILD_OPTIONS);
    store__b_text(&b, in->command);
    store__b_text(&b, in->trace);
    store__b_text(&b, in->trace_format);
    store__b_text(&b, in->model);
    store__b_text(&b, in->gpu);
    store__b_int(&b, in->replicas);
    store__b_int(&b, in->tp);
    store__b_text(&b, in->batching);
    store__b_text(&b, in->routing);
    store__b_text(&b, in->cost_model);
    store__b_text(&b, in->params_json ? in->params_json : "{}");
    store__b_int(&b, (int64_t)in->seed);
    store__b_real(&b, in->rate_scale);
    store__b_int(&b, (int64_t)in->limit);
    store__b_int(&b, in->pp ? in->pp : 1);
    store__b_text(&b, in->cluster_policy ? in->cluster_policy : "container");
    store__b_real(&b, in->warmup_s);
    store__b_text(&b, in->scenario_ini);
    store__b_text(&b, in->ops ? in->ops : "home");
    if (in->load > 0)
        store__b_real(&b, in->load);
    else
        store__b_null(&b);
    store__b_text(&b, in->engine ? in->engine : "vllm-eager");
    if (in->bundle)
        store__b_text(&b, in->bundle);
    else
        store__b_null(&b);
    store__b_text(&b, store_keep_name(in->keep));
    if ((rc = store__run_stmt(s, &b, eb, "inserting the run"))) {
        store_run_abort(s);
        return rc;
    }
    s->run_id = sqlite3_last_insert_rowid(s->db);
    *run_id_out = s->run_id;
    if (in->sweep && in->point) {
        store__binder p = {s->st[ST_POINT], 0, 0};
        store__b_text(&p, in->sweep);
        store__b_text(&p, in->point);
        store__b_int(&p, s->run_id);
        if ((rc = store__run_stmt(s, &p, eb, "recording the sweep point"))) {
            store_run_abort(s);
            return rc;
        }
    }
    return SS_OK;
}

int store_has_point(store *s, const char *sweep, const char *point, int64_t *run_id,
                    ss_errbuf *eb)
{
    sqlite3_stmt *st = s->st[ST_HAS];
    int rc = sqlite3_bind_text(st, 1, sweep, -1, SQLITE_TRANSIENT);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_text(st, 2, point, -1, SQLITE_TRANSIENT);
    if (rc == SQLITE_OK)
        rc = store__step(s, st);
    int out;
    if (rc == SQLITE_ROW) {
        if (run_id)
            *run_id = sqlite3_column_int64(st, 0);
        out = 1;
    } else if (rc == SQLITE_DONE) {
        out = 0;
    } else {
        out = store__db_err(s, eb, "looking up a sweep point");
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return out;
}

int store_run_set_inputs(store *s, int64_t run_id, const char *digest, ss_errbuf *eb)
{
    if (s->in_run)
        return ss_err(eb, SS_EINVAL, "%s: a run is open", s->path);
    if (strlen(digest) >= STORE_INPUTS_MAX)
        return ss_err(eb, SS_EINVAL, "%s: an inputs digest of %zu characters", s->path,
                      strlen(digest));
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "UPDATE runs SET inputs_digest = ? WHERE run_id = ?", -1, &st,
                           NULL) != SQLITE_OK)
        return store__db_err(s, eb, "recording a run's inputs");
    store__binder b = {st, 0, 0};
    store__b_text(&b, digest);
    store__b_int(&b, run_id);
    int rc = store__run_stmt(s, &b, eb, "recording a run's inputs");
    sqlite3_finalize(st);
    return rc;
}

int store_point_probe(store *s, const char *sweep, const char *point, const char *tenant,
                      store_probe_row *row, ss_errbuf *eb)
{
    static const char all[] =
        "SELECT p.run_id, r.inputs_digest, g.sla_violation_rate, g.window_goodput_tokens_per_s"
        " FROM sweep_points p JOIN runs r USING (run_id)"
        " LEFT JOIN summary g ON g.run_id = p.run_id WHERE p.sweep = ?1 AND p.point = ?2";
    static const char one[] =
        "SELECT p.run_id, r.inputs_digest, g.sla_violation_rate, g.window_goodput_tokens_per_s"
        " FROM sweep_points p JOIN runs r USING (run_id)"
        " LEFT JOIN tenants g ON g.run_id = p.run_id AND g.tenant = ?3"
        " WHERE p.sweep = ?1 AND p.point = ?2";
    memset(row, 0, sizeof *row);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, tenant ? one : all, -1, &st, NULL) != SQLITE_OK)
        return store__db_err(s, eb, "reading a sweep point");
    store__binder b = {st, 0, 0};
    store__b_text(&b, sweep);
    store__b_text(&b, point);
    if (tenant)
        store__b_text(&b, tenant);
    int rc = b.rc ? b.rc : store__step(s, st), out = 0;
    if (rc == SQLITE_ROW) {
        row->run_id = sqlite3_column_int64(st, 0);
        const char *in = (const char *)sqlite3_column_text(st, 1);
        if (in && strlen(in) < sizeof row->inputs)
            memcpy(row->inputs, in, strlen(in) + 1);
        /* read as stored (a REAL round-trips exactly), so a reused figure is the run's own */
        row->has_figures = sqlite3_column_type(st, 2) != SQLITE_NULL &&
                           sqlite3_column_type(st, 3) != SQLITE_NULL;
        row->sla_violation_rate = sqlite3_column_double(st, 2);
        row->window_goodput_tokens_per_s = sqlite3_column_double(st, 3);
        out = 1;
    } else if (rc != SQLITE_DONE) {
        out = store__db_err(s, eb, "reading a sweep point");
    }
    sqlite3_finalize(st);
    return out;
}

/* Text that outlives the statement's step (a literal, one of s->names), after which
 * store__run_stmt clears the bindings: bound without a copy. */
static void b_text_static(store__binder *b, const char *v)
{
    if (!b->rc)
        b->rc = sqlite3_bind_text(b->st, ++b->i, v, -1, SQLITE_STATIC);
}

/* One request row's values, in REQ_INSERT order. */
static void bind_request(store__binder *b, int64_t run_id, const store__req_row *row)
{
    const metrics_req *r = &row->r;
    store__b_int(b, run_id);
    store__b_int(b, (int64_t)r->trace_id);
    b_text_static(b, row->tenant);
    store__b_int(b, r->tier);
    store__b_int(b, r->container);
    b_text_static(b, r->rejected ? "rejected" : "completed");
    store__b_real(b, ss_time_to_s(r->arrival));
    store__b_int(b, r->prompt);
    store__b_int(b, r->output_asked);
    store__b_int(b, r->generated);
    store__b_int(b, r->preemptions);
    if (r->rejected) {
        for (int k = 0; k < 4; k++)
            store__b_null(b);
    } else {
        store__b_real(b, ss_time_to_ms(r->first_token - r->arrival));
        store__b_real(b, ss_time_to_ms(r->finish - r->arrival));
        if (r->generated > 1)
            store__b_real(b, ss_time_to_ms(r->tbt_sum) / (r->generated - 1));
        else
            store__b_null(b);
        store__b_real(b, ss_time_to_ms(r->tbt_max));
    }
    store__b_int(b, r->sla);
    store__b_int(b, r->measured);
    store__b_int(b, r->migrations);
}

/* Insert the request rows waiting in s->reqs: a full chunk in one step, fewer (the end of a
 * run) one a step. 0, or SS_EDB with eb set; the rows are gone either way. */
static int flush_requests(store *s, ss_errbuf *eb)
{
    uint32_t n = s->n_reqs;
    s->n_reqs = 0;
    if (n == STORE__REQ_CHUNK) {
        int rc = s->st_reqs ? SS_OK : prepare_reqs(s, eb);
        store__binder b = {s->st_reqs, 0, 0};
        for (uint32_t i = 0; !rc && i < n; i++)
            bind_request(&b, s->run_id, &s->reqs[i]);
        return rc ? rc : store__run_stmt(s, &b, eb, "inserting a request");
    }
    for (uint32_t i = 0; i < n; i++) {
        store__binder b = {s->st[ST_REQ], 0, 0};
        bind_request(&b, s->run_id, &s->reqs[i]);
        int rc = store__run_stmt(s, &b, eb, "inserting a request");
        if (rc)
            return rc;
    }
    return SS_OK;
}

/* The store's copy of the tenant name `name` (one per name and handle), or NULL when out of
 * memory. */
static const char *tenant_name(store *s, const char *name)
{
    for (uint32_t i = 0; i < s->n_names; i++)
        if (!strcmp(s->names[i], name))
            return s->names[i];
    char **grown = ss_realloc(s->names, (s->n_names + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    s->names = grown;
    if (!(grown[s->n_names] = ss_strdup(name)))
        return NULL;
    return grown[s->n_names++];
}

int store_run_request(store *s, const metrics_req *r, const char *tenant, ss_errbuf *eb)
{
    if (!s->in_run)
        return ss_err(eb, SS_EINVAL, "%s: no run is open", s->path);
    if (s->keep == STORE_KEEP_SUMMARY)
        return SS_OK;
    const char *name = tenant_name(s, tenant ? tenant : "");
    if (!name)
        return ss_err(eb, SS_ENOMEM, "out of memory");
    s->reqs[s->n_reqs++] = (store__req_row){.r = *r, .tenant = name};
    return s->n_reqs == STORE__REQ_CHUNK ? flush_requests(s, eb) : SS_OK;
}

int store_run_iteration(store *s, const store_iter_row *r, ss_errbuf *eb)
{
    if (!s->in_run)
        return ss_err(eb, SS_EINVAL, "%s: no run is open", s->path);
    if (s->keep != STORE_KEEP_ITERATIONS)
        return SS_OK;
    store__binder b = {s->st[ST_ITER], 0, 0};
    store__b_int(&b, s->run_id);
    store__b_int(&b, r->container);
    store__b_int(&b, (int64_t)r->iteration);
    if (r->tenant)
        store__b_text(&b, r->tenant);
    else
        store__b_null(&b);
    store__b_real(&b, r->start_s);
    store__b_real(&b, r->end_s);
    store__b_text(&b, r->prefill_seqs ? (r->decode_seqs ? "mixed" : "prefill") : "decode");
    store__b_int(&b, r->prefill_seqs);
    store__b_int(&b, (int64_t)r->prefill_tokens);
    store__b_int(&b, r->decode_seqs);
    store__b_int(&b, (int64_t)r->decode_ctx_tokens);
    store__b_int(&b, r->swap_blocks);
    return store__run_stmt(s, &b, eb, "inserting an iteration");
}

static const char *const keep_names[] = {[STORE_KEEP_REQUESTS] = "requests",
                                         [STORE_KEEP_SUMMARY] = "summary",
                                         [STORE_KEEP_ITERATIONS] = "iterations"};

const char *store_keep_name(store_keep k)
{
    return (unsigned)k < sizeof keep_names / sizeof *keep_names ? keep_names[k] : "requests";
}

int store_keep_parse(const char *name, store_keep *out, ss_errbuf *eb)
{
    for (size_t i = 0; i < sizeof keep_names / sizeof *keep_names; i++)
        if (!strcmp(name, keep_names[i])) {
            *out = (store_keep)i;
            return SS_OK;
        }
    return ss_err(eb, SS_EPARSE, "--store: '%s': expected summary, requests or iterations",
                  name);
}

int store_run_gpu(store *s, const store_gpu_row *g, ss_errbuf *eb)
{
    store__binder b = {s->st[ST_GPU], 0, 0};
    store__b_int(&b, s->run_id);
    store__b_int(&b, g->gpu);
    store__b_int(&b, g->node);
    store__b_int(&b, g->container);
    store__b_text(&b, g->kind);
    store__b_real(&b, g->busy_s);
    store__b_real(&b, g->utilization);
    store__b_int(&b, (int64_t)g->iterations);
    store__b_int(&b, g->kv_blocks);
    store__b_int(&b, g->kv_peak_blocks);
    store__b_real(&b, g->weights_gib);
    store__b_real(&b, g->kv_pool_gib);
    store__b_real(&b, g->device_busy_s);
    store__b_int(&b, (int64_t)g->idle_slices);
    store__b_real(&b, g->idle_s);
    store__b_text(&b, g->tenant ? g->tenant : "");
    store__b_real(&b, g->window_s);
    store__b_real(&b, g->compute_s);
    store__b_real(&b, g->host_s);
    store__b_int(&b, g->phys);
    store__b_text(&b, g->share ? g->share : "whole");
    return store__run_stmt(s, &b, eb, "inserting a GPU row");
}

int store_run_slices(store *s, const metrics_slices *sl, ss_errbuf *eb)
{
    for (int i = 0; i < METRICS_SLICE_BUCKETS; i++) {
        store__binder b = {s->st[ST_SLICE], 0, 0};
        ss_time hi = metrics_slice_bucket_hi(i);
        double gpu_s = sl->gpu_ns[i] / 1e9;
        store__b_int(&b, s->run_id);
        store__b_int(&b, i);
        store__b_real(&b, (double)metrics_slice_bucket_lo(i) / SS_NS_PER_MS);
        if (hi == SS_TIME_MAX)
            store__b_null(&b);
        else
            store__b_real(&b, (double)hi / SS_NS_PER_MS);
        store__b_int(&b, (int64_t)sl->count[i]);
        store__b_real(&b, gpu_s);
        if (sl->gpu_ns[i] > 0)
            store__b_real(&b, sl->free_byte_ns[i] / sl->gpu_ns[i] / 1073741824.0);
        else
            store__b_null(&b);
        int rc = store__run_stmt(s, &b, eb, "inserting an idle-slice row");
        if (rc)
            return rc;
    }
    return SS_OK;
}

static void bind_pct(store__binder *b, const metrics_pct *p)
{
    store__b_real(b, p->mean);
    store__b_real(b, p->p50);
    store__b_real(b, p->p90);
    store__b_real(b, p->p99);
    store__b_real(b, p->max);
}

/* The columns every group (run, tenant, tier) shares, in GROUP_NAMES order. */
static void bind_group(store__binder *b, const metrics_group_summary *g)
{
    store__b_int(b, (int64_t)g->requests);
    store__b_int(b, (int64_t)g->completed);
    store__b_int(b, (int64_t)g->rejected);
    store__b_int(b, (int64_t)g->truncated);
    store__b_int(b, (int64_t)g->preemptions);
    store__b_int(b, (int64_t)g->sla_violations);
    store__b_real(b, g->sla_violation_rate);
    store__b_real(b, g->prompt_tokens_per_s);
    store__b_real(b, g->output_tokens_per_s);
    store__b_real(b, g->requests_per_s);
    store__b_real(b, g->goodput_tokens_per_s);
    bind_pct(b, &g->ttft_ms);
    bind_pct(b, &g->tbt_ms);
    bind_pct(b, &g->e2e_ms);
    store__b_real(b, g->win_output_tokens_per_s);
    store__b_real(b, g->win_goodput_tokens_per_s);
}

/* The prefix-cache columns, in PREFIX_NAMES order. */
static void bind_prefix(store__binder *b, const metrics_prefix *p)
{
    store__b_int(b, (int64_t)p->query_tokens);
    store__b_int(b, (int64_t)p->hit_tokens);
    store__b_int(b, (int64_t)p->query_blocks);
    store__b_int(b, (int64_t)p->hit_blocks);
    store__b_int(b, (int64_t)p->saved_tokens);
    store__b_int(b, (int64_t)p->evictions);
    store__b_int(b, (int64_t)p->ceiling_hit_tokens);
    store__b_int(b, (int64_t)p->ceiling_hit_blocks);
    store__b_real(b, metrics_prefix_ceiling_rate(p));
}

int store_run_instance(store *s, uint32_t container, const char *tenant,
                       const metrics_prefix *p, ss_errbuf *eb)
{
    store__binder b = {s->st[ST_INST], 0, 0};
    store__b_int(&b, s->run_id);
    store__b_int(&b, container);
    store__b_text(&b, tenant);
    store__b_int(&b, (int64_t)p->lookups);
    store__b_int(&b, (int64_t)p->query_tokens);
    store__b_int(&b, (int64_t)p->hit_tokens);
    store__b_int(&b, (int64_t)p->query_blocks);
    store__b_int(&b, (int64_t)p->hit_blocks);
    store__b_int(&b, (int64_t)p->saved_tokens);
    store__b_int(&b, (int64_t)p->evictions);
    store__b_real(&b, metrics_prefix_hit_rate(p));
    return store__run_stmt(s, &b, eb, "inserting an instance row");
}

/* The KV-pool columns, in KVPOOL_NAMES order. */
static void bind_kvpool(store__binder *b, const metrics_kvpool *p)
{
    store__b_int(b, (int64_t)p->lookups);
    store__b_int(b, (int64_t)p->gpu_blocks);
    store__b_int(b, (int64_t)p->cpu_blocks);
    store__b_int(b, (int64_t)p->ssd_blocks);
    store__b_int(b, (int64_t)p->remote_blocks);
    store__b_int(b, (int64_t)p->loads);
    store__b_int(b, (int64_t)p->load_bytes);
    store__b_real(b, ss_time_to_s(p->load_ns));
    store__b_int(b, (int64_t)p->recomputes);
    store__b_int(b, (int64_t)p->recompute_blocks);
    store__b_int(b, (int64_t)p->offload_blocks);
    store__b_int(b, (int64_t)p->offload_bytes);
    store__b_int(b, (int64_t)p->demotions);
    store__b_int(b, (int64_t)p->evictions);
}

static int insert_summary(store *s, const metrics_summary *m, const store_run_end *e,
                          ss_errbuf *eb)
{
    store__binder b = {s->st[ST_SUM], 0, 0};
    store__b_int(&b, s->run_id);
    store__b_int(&b, (int64_t)e->iterations);
    store__b_int(&b, e->peak_in_flight);
    store__b_int(&b, (int64_t)m->all.prompt_tokens);
    store__b_int(&b, (int64_t)m->all.output_tokens);
    store__b_real(&b, m->sim_s);
    store__b_int(&b, (int64_t)m->swap_outs);
    store__b_int(&b, (int64_t)m->aborted);
    store__b_int(&b, (int64_t)m->all.requests);
    store__b_real(&b, m->window_s);
    store__b_int(&b, (int64_t)m->migrations);
    store__b_int(&b, (int64_t)m->migrations_aborted);
    store__b_real(&b, m->migration_gib);
    store__b_int(&b, (int64_t)m->reallocations);
    bind_group(&b, &m->all);
    store__b_int(&b, (int64_t)m->scale_ups);
    store__b_int(&b, (int64_t)m->scale_downs);
    store__b_int(&b, (int64_t)m->idle_slices);
    store__b_real(&b, m->idle_gpu_s);
    store__b_int(&b, (int64_t)m->offloads);
    store__b_int(&b, (int64_t)m->offload_ops);
    store__b_real(&b, m->offload_gib);
    store__b_int(&b, (int64_t)m->slices_used);
    store__b_int(&b, (int64_t)e->whatifs);
    store__b_int(&b, (int64_t)e->slice_decisions);
    store__b_real(&b, e->slice_wall_s);
    store__b_real(&b, m->pred_err_ms);
    _Static_assert(METRICS_REJ__COUNT == 5, "the summary has five rejected_* columns");
    for (int r = 0; r < METRICS_REJ__COUNT; r++) /* in METRICS_REJ_* order */
        store__b_int(&b, (int64_t)m->all.rejected_why[r]);
    bind_prefix(&b, &m->all.prefix);
    store__b_real(&b, m->arrival_window_s);
    bind_kvpool(&b, &m->all.kvpool);
    store__b_int(&b, (int64_t)m->kvpool_peak[0]);
    store__b_int(&b, (int64_t)m->kvpool_peak[1]);
    /* the requests column counts every arrival, warm-up included */
    if (!b.rc)
        b.rc = sqlite3_bind_int64(b.st, 15, (int64_t)m->requests);
    return store__run_stmt(s, &b, eb, "inserting the summary");
}

/* The KV-transfer columns, in KV_NAMES order. */
static void bind_kv(store__binder *b, uint32_t prefill, uint32_t decode,
                    const metrics_group_summary *g)
{
    store__b_int(b, prefill);
    store__b_int(b, decode);
    store__b_int(b, (int64_t)g->kv.transfers);
    store__b_real(b, g->kv.bytes / 1073741824.0);
    store__b_real(b, ss_time_to_s(g->kv.exposed_ns));
    store__b_real(b, g->kv_exposed_mean_ms);
    store__b_int(b, (int64_t)g->kv.waits);
    store__b_real(b, ss_time_to_s(g->kv.wait_ns));
}

int store_run_tenant(store *s, const char *tenant, const char *model, const char *share,
                     uint32_t replicas, uint32_t prefill, uint32_t decode,
                     const metrics_group_summary *g, ss_errbuf *eb)
{
    store__binder b = {s->st[ST_TENANT], 0, 0};
    store__b_int(&b, s->run_id);
    store__b_text(&b, tenant);
    store__b_text(&b, model);
    store__b_int(&b, replicas);
    bind_group(&b, g);
    bind_prefix(&b, &g->prefix);
    bind_kvpool(&b, &g->kvpool);
    bind_kv(&b, prefill, decode, g);
    store__b_text(&b, share ? share : "whole");
    return store__run_stmt(s, &b, eb, "inserting a tenant row");
}

int store_run_tier(store *s, uint32_t tier, const metrics_group_summary *g, ss_errbuf *eb)
{
    store__binder b = {s->st[ST_TIER], 0, 0};
    store__b_int(&b, s->run_id);
    store__b_int(&b, tier);
    bind_group(&b, g);
    return store__run_stmt(s, &b, eb, "inserting a tier row");
}

int store_run_commit(store *s, const metrics_summary *m, const store_run_end *e, ss_errbuf *eb)
{
    if (!s->in_run)
        return ss_err(eb, SS_EINVAL, "%s: no run is open", s->path);
    int rc = flush_requests(s, eb);
    if (!rc)
        rc = insert_summary(s, m, e, eb);
    if (!rc) {
        store__binder b = {s->st[ST_END], 0, 0};
        store__b_real(&b, e->wall_s);
        store__b_int(&b, (int64_t)e->events);
        char digest[24];
        snprintf(digest, sizeof digest, "%016llx", (unsigned long long)e->trace_digest);
        store__b_real(&b, m->sim_s);
        store__b_text(&b, digest);
        if (e->result_json)
            store__b_text(&b, e->result_json);
        else
            store__b_null(&b);
        store__b_int(&b, s->run_id);
        rc = store__run_stmt(s, &b, eb, "finishing the run");
    }
    if (!rc)
        rc = store__exec(s, "COMMIT", eb, "committing the run");
    if (rc) {
        store_run_abort(s);
        return rc;
    }
    s->in_run = 0;
    return SS_OK;
}

void store_run_abort(store *s)
{
    if (!s->in_run)
        return;
    store__rollback(s);
    s->in_run = 0;
    s->n_reqs = 0;
}
