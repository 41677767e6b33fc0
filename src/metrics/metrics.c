/* Folding request outcomes into the run, tenant and tier groups; deriving summaries. */
#include "metrics/metrics.h"

#include "core/ss_alloc.h"
#include "core/ss_err.h"

#include <string.h>

int metrics_init(metrics *m, uint32_t n_tenants, ss_time measure_from)
{
    memset(m, 0, sizeof *m);
    m->tenants = ss_calloc(n_tenants ? n_tenants : 1, sizeof *m->tenants);
    m->tiers = ss_calloc(SS_MAX_TIERS, sizeof *m->tiers);
    m->cells = ss_calloc(((size_t)n_tenants + 1) * SS_MAX_TIERS, sizeof *m->cells);
    if (!m->tenants || !m->tiers || !m->cells) {
        ss_free(m->tenants);
        ss_free(m->tiers);
        ss_free(m->cells);
        memset(m, 0, sizeof *m);
        return SS_ENOMEM;
    }
    m->n_tenants = n_tenants;
    m->measure_from = measure_from;
    return SS_OK;
}

void metrics_init_counters(metrics *m, ss_time measure_from)
{
    memset(m, 0, sizeof *m);
    m->measure_from = measure_from;
}

static void group_fini(metrics_group *g)
{
    ss_hist_fini(&g->ttft);
    ss_hist_fini(&g->tbt);
    ss_hist_fini(&g->e2e);
}

void metrics_fini(metrics *m)
{
    group_fini(&m->all);
    for (uint32_t i = 0; m->tenants && i < m->n_tenants; i++)
        group_fini(&m->tenants[i]);
    for (uint32_t i = 0; m->tiers && i < SS_MAX_TIERS; i++)
        group_fini(&m->tiers[i]);
    for (size_t i = 0; m->cells && i < ((size_t)m->n_tenants + 1) * SS_MAX_TIERS; i++)
        ss_hist_fini(&m->cells[i].tbt);
    ss_free(m->cells);
    ss_free(m->tiers);
    ss_free(m->tenants);
    memset(m, 0, sizeof *m);
}

static void group_add(metrics *m, metrics_group *g, const metrics_req *r)
{
    g->requests++;
    g->preemptions += r->preemptions;
    g->sla_violations += r->sla != 0;
    if (r->rejected) {
        g->rejected++;
        g->rejected_why[r->reject_why < METRICS_REJ__COUNT ? r->reject_why : METRICS_REJ_OTHER]++;
        return;
    }
    g->completed++;
    g->truncated += r->generated < r->output_asked;
    g->prompt_tokens += r->prompt;
    g->output_tokens += r->generated;
    g->good_tokens += r->sla ? 0 : r->generated;
    if (ss_hist_add(&g->ttft, r->first_token - r->arrival) ||
        ss_hist_add(&g->e2e, r->finish - r->arrival))
        m->oom = 1;
}

/* Tokens r produced inside the arrival window count for every request (a warm-up arrival's
 * too: the window's throughput is what the cluster put out in it). */
static void window_add(metrics_group *g, const metrics_req *r)
{
    g->win_tokens += r->win_tokens;
    if (!r->rejected && !r->sla)
        g->win_good_tokens += r->win_tokens;
}

void metrics_add_req(metrics *m, const metrics_req *r)
{
    if (r->finish > m->last_finish)
        m->last_finish = r->finish;
    if (!r->rejected && r->finish > m->last_completion)
        m->last_completion = r->finish;
    if (r->win_tokens) {
        window_add(&m->all, r);
        if (r->tenant < m->n_tenants)
            window_add(&m->tenants[r->tenant], r);
        window_add(&m->tiers[r->tier < SS_MAX_TIERS ? r->tier : SS_MAX_TIERS - 1], r);
    }
    if (!r->measured)
        return;
    group_add(m, &m->all, r);
    if (r->tenant < m->n_tenants)
        group_add(m, &m->tenants[r->tenant], r);
    uint8_t t = r->tier < SS_MAX_TIERS ? r->tier : SS_MAX_TIERS - 1;
    group_add(m, &m->tiers[t], r);
    if (t + 1u > m->n_tiers)
        m->n_tiers = t + 1u;
}

/* ------------------------------------------------------------------------------------------
 * Inter-token gaps: one histogram per (tenant, tier) pair while the run goes, so that a gap is
 * recorded once, not three times; the run's, tenants' and tiers' histograms at the flush.
 * Bucket counts, sample counts and extremes come out as if every gap had gone into each group
 * directly. So does the sum behind the mean while a group's gaps add up to less than 2^53 ns
 * (104 days), where doubles add integers exactly; past that, a group fed by one pair (a
 * single-tenant, single-tier run) still gets that pair's sum unchanged, and one fed by several
 * gets the sum of their sums, which can round differently in the last bit.
 * ---------------------------------------------------------------------------------------- */

/* Move the buffered run of equal gaps into the pair's histogram. */
static void cell_flush_run(metrics *m, metrics_cell *c)
{
    if (c->gap_n && ss_hist_add_n(&c->tbt, c->gap_v, c->gap_n))
        m->oom = 1;
    c->gap_n = 0;
}

void metrics__new_run(metrics *m, metrics_cell *c, ss_time gap, uint64_t n)
{
    cell_flush_run(m, c);
    c->gap_v = gap;
    c->gap_n = n;
}

/* Fold pair (t, k)'s gaps into the run's, the tenant's (t < n_tenants) and tier k's tbt, and
 * empty the pair. The last fold moves the pair's buckets, so that a run with one pair holds
 * no more histograms at the end than one without pairs would. */
static void cell_fold(metrics *m, uint32_t t, uint32_t k)
{
    metrics_cell *c = &m->cells[t * SS_MAX_TIERS + k];
    cell_flush_run(m, c);
    if (!c->tbt.n)
        return;
    if (ss_hist_merge(&m->all.tbt, &c->tbt) ||
        (t < m->n_tenants && ss_hist_merge(&m->tenants[t].tbt, &c->tbt)) ||
        ss_hist_merge_move(&m->tiers[k].tbt, &c->tbt))
        m->oom = 1;
    ss_hist_fini(&c->tbt);
}

void metrics_flush(metrics *m)
{
    for (uint32_t t = 0; t <= m->n_tenants; t++)
        for (uint32_t k = 0; k < SS_MAX_TIERS; k++)
            cell_fold(m, t, k);
}

static metrics_pct pct(const ss_hist *h)
{
    metrics_pct p = {
        .mean = ss_hist_mean(h) / 1e6,
        .p50 = (double)ss_hist_quantile(h, 0.50) / 1e6,
        .p90 = (double)ss_hist_quantile(h, 0.90) / 1e6,
        .p99 = (double)ss_hist_quantile(h, 0.99) / 1e6,
        .max = h->n ? (double)h->max / 1e6 : 0.0,
    };
    return p;
}

void metrics_summarize_group(const metrics_group *g, double window_s, metrics_group_summary *out)
{
    memset(out, 0, sizeof *out);
    out->requests = g->requests;
    out->completed = g->completed;
    out->rejected = g->rejected;
    out->truncated = g->truncated;
    out->preemptions = g->preemptions;
    out->prompt_tokens = g->prompt_tokens;
    out->output_tokens = g->output_tokens;
    out->sla_violations = g->sla_violations;
    memcpy(out->rejected_why, g->rejected_why, sizeof out->rejected_why);
    if (window_s > 0) {
        out->prompt_tokens_per_s = (double)g->prompt_tokens / window_s;
        out->output_tokens_per_s = (double)g->output_tokens / window_s;
        out->requests_per_s = (double)g->completed / window_s;
        out->goodput_tokens_per_s = (double)g->good_tokens / window_s;
    }
    out->sla_violation_rate = g->requests ? (double)g->sla_violations / (double)g->requests : 0;
    out->prefix = g->prefix;
    out->kvpool = g->kvpool;
    out->prefix_hit_rate = metrics_prefix_hit_rate(&g->prefix);
    out->prefix_block_hit_rate = metrics_prefix_block_hit_rate(&g->prefix);
    out->prefix_ceiling_hit_rate = metrics_prefix_ceiling_rate(&g->prefix);
    out->kv = g->kv;
    out->kv_exposed_mean_ms =
        g->kv.transfers ? ss_time_to_ms(g->kv.exposed_ns) / (double)g->kv.transfers : 0;
    out->ttft_ms = pct(&g->ttft);
    out->tbt_ms = pct(&g->tbt);
    out->e2e_ms = pct(&g->e2e);
}

double metrics_prefix_hit_rate(const metrics_prefix *p)
{
    return p->query_tokens ? (double)p->hit_tokens / (double)p->query_tokens : 0;
}

double metrics_prefix_block_hit_rate(const metrics_prefix *p)
{
    return p->query_blocks ? (double)p->hit_blocks / (double)p->query_blocks : 0;
}

double metrics_prefix_ceiling_rate(const metrics_prefix *p)
{
    return p->query_tokens ? (double)p->ceiling_hit_tokens / (double)p->query_tokens : 0;
}

void metrics_prefix_add(metrics_prefix *p, int first, const metrics_lookup *l)
{
    if (first) {
        p->lookups++;
        p->query_tokens += l->prompt;
        p->query_blocks += l->query_blocks;
        p->hit_tokens += l->hit_tokens;
        p->hit_blocks += l->hit_blocks;
        p->ceiling_hit_tokens += l->ceiling_tokens;
        p->ceiling_hit_blocks += l->ceiling_blocks;
    }
    p->saved_tokens += l->hit_tokens;
}

void metrics_add_prefix(metrics *m, uint16_t tenant, int measured, int first,
                        const metrics_lookup *l)
{
    if (!measured)
        return;
    metrics_prefix_add(&m->all.prefix, first, l);
    if (tenant < m->n_tenants)
        metrics_prefix_add(&m->tenants[tenant].prefix, first, l);
}

static void add_kvpool(metrics_kvpool *p, uint32_t gpu, const uint32_t tb[3], int loaded,
                       uint64_t bytes, ss_time ns)
{
    p->lookups++;
    p->gpu_blocks += gpu;
    if (loaded) {
        p->cpu_blocks += tb[0];
        p->ssd_blocks += tb[1];
        p->remote_blocks += tb[2];
        p->loads++;
        p->load_bytes += bytes;
        p->load_ns += ns;
    } else {
        p->recomputes++;
        p->recompute_blocks += (uint64_t)tb[0] + tb[1] + tb[2];
    }
}

void metrics_add_kvpool(metrics *m, uint16_t tenant, uint32_t gpu, const uint32_t tier_blocks[3],
                        int loaded, uint64_t load_bytes, ss_time load_ns)
{
    add_kvpool(&m->all.kvpool, gpu, tier_blocks, loaded, load_bytes, load_ns);
    if (tenant < m->n_tenants)
        add_kvpool(&m->tenants[tenant].kvpool, gpu, tier_blocks, loaded, load_bytes, load_ns);
}

static void add_kv(metrics_kv *k, double bytes, ss_time exposed_ns, ss_time wait_ns)
{
    k->transfers++;
    k->bytes += bytes;
    k->exposed_ns += exposed_ns;
    k->wait_ns += wait_ns;
    k->waits += wait_ns > 0;
}

void metrics_add_kv(metrics *m, uint16_t tenant, int measured, double bytes, ss_time exposed_ns,
                    ss_time wait_ns)
{
    if (!measured)
        return;
    add_kv(&m->all.kv, bytes, exposed_ns, wait_ns);
    if (tenant < m->n_tenants)
        add_kv(&m->tenants[tenant].kv, bytes, exposed_ns, wait_ns);
}

static const char *const reject_names[METRICS_REJ__COUNT][2] = {
    [METRICS_REJ_TOO_LONG] = {"too_long", "prompt > max-model-len"},
    [METRICS_REJ_BATCH_TOKENS] = {"batch_tokens", "prompt > max-num-batched-tokens"},
    [METRICS_REJ_KV] = {"kv_blocks", "needs more KV blocks than its container has"},
    [METRICS_REJ_PREEMPTED] = {"preempted", "preempted max-preemptions times"},
    [METRICS_REJ_OTHER] = {"other", "rejected by the batching policy"},
};

const char *metrics_reject_key(int r)
{
    return r >= 0 && r < METRICS_REJ__COUNT ? reject_names[r][0] : NULL;
}

const char *metrics_reject_phrase(int r)
{
    return r >= 0 && r < METRICS_REJ__COUNT ? reject_names[r][1] : NULL;
}

ss_time metrics_slice_bucket_lo(int i)
{
    ss_time lo = 0, d = 10 * SS_NS_PER_US;
    for (int k = 0; k < i; k++, d *= 10)
        lo = d;
    return lo;
}

ss_time metrics_slice_bucket_hi(int i)
{
    return i + 1 >= METRICS_SLICE_BUCKETS ? SS_TIME_MAX : metrics_slice_bucket_lo(i + 1);
}

ss_time metrics_slices_add(metrics_slices *sl, ss_time measure_from, ss_time from, ss_time to,
                           double free_bytes)
{
    if (from < measure_from)
        from = measure_from;
    if (to <= from)
        return 0;
    ss_time len = to - from;
    int b = 0;
    for (ss_time hi = 10 * SS_NS_PER_US; b + 1 < METRICS_SLICE_BUCKETS && len >= hi; hi *= 10)
        b++;
    sl->count[b]++;
    sl->gpu_ns[b] += (double)len;
    sl->free_byte_ns[b] += free_bytes * (double)len;
    return len;
}

ss_time metrics_add_slice(metrics *m, ss_time from, ss_time to, double free_bytes)
{
    return metrics_slices_add(&m->slices, m->measure_from, from, to, free_bytes);
}

void metrics_slices_fold(metrics_slices *dst, const metrics_slices *src)
{
    for (int b = 0; b < METRICS_SLICE_BUCKETS; b++) {
        dst->count[b] += src->count[b];
        dst->gpu_ns[b] += src->gpu_ns[b];
        dst->free_byte_ns[b] += src->free_byte_ns[b];
    }
}

ss_time metrics_window_end(const metrics *m)
{
    return m->last_completion > m->measure_from ? m->last_completion : m->measure_from;
}

double metrics_arrival_window_s(const metrics *m)
{
    return m->last_arrival > m->measure_from ? ss_time_to_s(m->last_arrival - m->measure_from)
                                              : 0.0;
}

void metrics_summarize_window(const metrics *m, const metrics_group *g,
                              metrics_group_summary *out)
{
    double w = metrics_arrival_window_s(m);
    out->win_output_tokens_per_s = w > 0 ? (double)g->win_tokens / w : 0.0;
    out->win_goodput_tokens_per_s = w > 0 ? (double)g->win_good_tokens / w : 0.0;
}

void metrics_summarize(const metrics *m, ss_time sim_end, metrics_summary *out)
{
    memset(out, 0, sizeof *out);
    out->sim_s = ss_time_to_s(sim_end);
    out->window_s = ss_time_to_s(metrics_window_end(m) - m->measure_from);
    out->arrival_window_s = metrics_arrival_window_s(m);
    out->kvpool_peak[0] = m->kvpool_peak[0];
    out->kvpool_peak[1] = m->kvpool_peak[1];
    metrics_summarize_group(&m->all, out->window_s, &out->all);
    metrics_summarize_window(m, &m->all, &out->all);
    out->requests = m->arrived;
    out->swap_outs = m->swap_outs;
    out->aborted = m->aborted;
    out->migrations = m->migrations;
    out->migrations_aborted = m->migrations_aborted;
    out->migration_gib = m->migration_bytes / 1073741824.0;
    out->reallocations = m->reallocations;
    out->scale_ups = m->scale_ups;
    out->scale_downs = m->scale_downs;
    out->advice_declined = m->advice_declined;
    double idle_ns = 0;
    for (int b = 0; b < METRICS_SLICE_BUCKETS; b++) {
        out->idle_slices += m->slices.count[b];
        idle_ns += m->slices.gpu_ns[b];
    }
    out->idle_gpu_s = idle_ns / 1e9;
    out->offloads = m->offloads_done;
    out->offload_ops = m->offload_ops;
    out->slices_used = m->slices_used;
    out->offload_gib = m->offload_bytes / 1073741824.0;
    out->pred_err_ms = m->offload_predicted
                           ? (double)m->offload_pred_err_ns / (double)m->offload_predicted / 1e6
                           : 0;
    for (int b = 0; b < METRICS_STRETCHES; b++)
        out->moved_gpu_s[b] = (double)m->moved_ns[b] / 1e9;
}

ss_time metrics_stretch_hi(int b)
{
    static const ss_time hi[METRICS_STRETCHES] = {10 * SS_NS_PER_MS, 100 * SS_NS_PER_MS,
                                                  1000 * SS_NS_PER_MS, SS_TIME_MAX};
    return b >= 0 && b < METRICS_STRETCHES ? hi[b] : SS_TIME_MAX;
}

void metrics_add_moved(metrics *m, ss_time stretch, ss_time gpu_ns)
{
    int b = 0;
    while (b + 1 < METRICS_STRETCHES && stretch >= metrics_stretch_hi(b))
        b++;
    m->moved_ns[b] += gpu_ns;
}
