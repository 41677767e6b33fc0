/* Reporting a finished replay: table, JSON, and the database rows derived from the metrics. */
#include "runner/report.h"

#include "core/ss_strbuf.h"

#include <inttypes.h>
#include <string.h>

void runner_report_rejections(char *buf, size_t size, const gsim *g,
                              const metrics_group_summary *a)
{
    size_t n = 0;
    buf[0] = 0;
    for (int r = 0; r < METRICS_REJ__COUNT && n < size; r++) {
        if (!a->rejected_why[r])
            continue;
        int w = snprintf(buf + n, size - n, "%s%" PRIu64 " %s", n ? ", " : "",
                         a->rejected_why[r], metrics_reject_phrase(r));
        if (w > 0 && (size_t)w < size - n && r == METRICS_REJ_TOO_LONG)
            w += snprintf(buf + n + w, size - n - (size_t)w, " %" PRIu64, gsim_max_model_len(g));
        else if (w > 0 && (size_t)w < size - n && r == METRICS_REJ_BATCH_TOKENS)
            w += snprintf(buf + n + w, size - n - (size_t)w, " %" PRIu64, gsim_max_batch_tokens(g));
        if (w < 0)
            break;
        n += (size_t)w;
    }
}

/* ---- JSON ------------------------------------------------------------------------------- */

static void json_pct(FILE *f, const char *name, const metrics_pct *p)
{
    fprintf(f, ", \"%s\": {\"mean\": %.6f, \"p50\": %.6f, \"p90\": %.6f, \"p99\": %.6f, "
               "\"max\": %.6f}",
            name, p->mean, p->p50, p->p90, p->p99, p->max);
}

/* The fields every group (tenant, tier) carries, after its own key. */
static void json_group(FILE *f, const metrics_group_summary *g)
{
    fprintf(f, ", \"requests\": %" PRIu64 ", \"completed\": %" PRIu64 ", \"rejected\": %" PRIu64
               ", \"sla_violation_rate\": %.6f, \"goodput_tokens_per_s\": %.6f, "
               "\"output_tokens_per_s\": %.6f, \"window_output_tokens_per_s\": %.6f, "
               "\"window_goodput_tokens_per_s\": %.6f",
            g->requests, g->completed, g->rejected, g->sla_violation_rate,
            g->goodput_tokens_per_s, g->output_tokens_per_s, g->win_output_tokens_per_s,
            g->win_goodput_tokens_per_s);
    json_pct(f, "ttft_ms", &g->ttft_ms);
    json_pct(f, "tbt_ms", &g->tbt_ms);
    json_pct(f, "e2e_ms", &g->e2e_ms);
}

static void json_prefix_group(FILE *f, const metrics_group_summary *s, int kept);
static void instance_rates(const gsim *g, uint32_t t, uint32_t *n_out, double out[3]);

static void json_kvpool_group(FILE *f, const metrics_kvpool *p, const uint64_t *peak);

/* A disaggregated tenant's pools and KV transfers (nothing for a co-located one). */
static void json_disagg(FILE *f, const gsim_tenant *t, const metrics_group_summary *s)
{
    if (!gsim_tenant_disagg(t))
        return;
    const metrics_kv *k = &s->kv;
    fprintf(f, ", \"prefill_replicas\": %u, \"decode_replicas\": %u, \"prefill_tp\": %u, "
               "\"decode_tp\": %u, \"kv_transfer\": \"%s\", \"kv_transfers\": {\"count\": %"
               PRIu64 ", \"gib\": %.6f, \"exposed_s\": %.9f, \"exposed_mean_ms\": %.6f, "
               "\"waits\": %" PRIu64 ", \"wait_s\": %.9f}",
            t->prefill_replicas, t->decode_replicas, t->prefill_tp ? t->prefill_tp : t->tp,
            t->decode_tp ? t->decode_tp : t->tp, t->kv_transfer == GSIM_KV_END ? "end" : "layer",
            k->transfers, k->bytes / 1073741824.0, ss_time_to_s(k->exposed_ns),
            s->kv_exposed_mean_ms, k->waits, ss_time_to_s(k->wait_ns));
}

/* A tenant with a share of GPUs: the share, and the physical GPU each of its containers
 * shares (nothing for a tenant of whole GPUs). */
static void json_share(FILE *f, const gsim *g, uint32_t tenant)
{
    const gsim_tenant *t = gsim_tenant_at(g, tenant);
    if (!t->share.kind)
        return;
    char share[32];
    gsim_share_format(&t->share, share, sizeof share);
    fprintf(f, ", \"share\": \"%s\", \"share_gpus\": [", share);
    const gmg *G = gsim_graph(g);
    int first = 1;
    for (uint32_t c = 0; c < G->n_ctrs; c++)
        if (G->ctrs[c].tenant == tenant) {
            fprintf(f, "%s%u", first ? "" : ", ", G->gpus[G->ctrs[c].gpu0].phys);
            first = 0;
        }
    fputc(']', f);
}

/* One line per physical GPU that containers share: who holds which share of it. */
static void table_shares(FILE *f, const gsim *g)
{
    const gmg *G = gsim_graph(g);
    int any = 0;
    for (uint32_t i = 0; i < G->n_gpus && !any; i++)
        any = G->gpus[i].share != GMG_SHARE_NONE;
    for (uint32_t p = 0; any && p < G->n_phys; p++) {
        int n = 0;
        for (uint32_t i = 0; i < G->n_gpus; i++) {
            const gmg_gpu *u = &G->gpus[i];
            if (u->phys != p || !u->share)
                continue;
            const gmg_container *c = &G->ctrs[u->container];
            char share[32];
            gsim_share_format(&gsim_tenant_at(g, c->tenant)->share, share, sizeof share);
            if (!n++)
                fprintf(f, "  GPU %u (node %u) shares:", p, u->node);
            fprintf(f, "%s %s %s", n > 1 ? "," : "", gsim_tenant_name(g, c->tenant), share);
        }
        if (n)
            fputc('\n', f);
    }
}

static void json_tenants(FILE *f, const gsim *g, double window_s)
{
    const metrics *m = gsim_metrics(g);
    fprintf(f, ", \"tenants\": [");
    for (uint32_t i = 0; i < gsim_n_tenants(g); i++) {
        const gsim_tenant *t = gsim_tenant_at(g, i);
        metrics_group_summary s;
        metrics_summarize_group(&m->tenants[i], window_s, &s);
        metrics_summarize_window(m, &m->tenants[i], &s);
        fprintf(f, "%s{\"name\": ", i ? ", " : "");
        ss_json_fputs(f, t->name);
        fprintf(f, ", \"model\": \"%s\", \"engine\": \"%s\", \"replicas\": %u, \"tp\": %u, "
                   "\"pp\": %u, \"tiers\": %u",
                t->model->name, t->engine->name, t->replicas, t->tp, t->pp, t->tiers);
        json_group(f, &s);
        json_disagg(f, t, &s);
        json_share(f, g, i);
        if (gsim_graph(g)->prefix_cache) {
            uint32_t n;
            double rate[3];
            instance_rates(g, i, &n, rate);
            fputs(", \"prefix_cache\": ", f);
            json_prefix_group(f, &s, gsim_ceiling_kept(g));
            fprintf(f, ", \"instance_hit_rate\": {\"instances\": %u, \"min\": %.6f, "
                       "\"mean\": %.6f, \"max\": %.6f}}", n, rate[0], rate[1], rate[2]);
        }
        if (gsim_graph(g)->kvp) {
            fputs(", \"kvpool\": ", f);
            json_kvpool_group(f, &s.kvpool, NULL);
        }
        fputc('}', f);
    }
    fputc(']', f);
}

static void json_tiers(FILE *f, const gsim *g, double window_s)
{
    const metrics *m = gsim_metrics(g);
    fprintf(f, ", \"tiers\": [");
    for (uint32_t k = 0; k < m->n_tiers; k++) {
        metrics_group_summary s;
        metrics_summarize_group(&m->tiers[k], window_s, &s);
        metrics_summarize_window(m, &m->tiers[k], &s);
        fprintf(f, "%s{\"tier\": %u", k ? ", " : "", k);
        json_group(f, &s);
        fputc('}', f);
    }
    fputc(']', f);
}

/* Idle GPU slices: totals and one object per length bucket (hi_ms null for the last). */
static void json_slices(FILE *f, const gsim *g, const metrics_summary *m)
{
    const metrics_slices *sl = &gsim_metrics(g)->slices;
    fprintf(f, ", \"idle_slices\": {\"count\": %" PRIu64 ", \"gpu_s\": %.6f, \"buckets\": [",
            m->idle_slices, m->idle_gpu_s);
    for (int i = 0; i < METRICS_SLICE_BUCKETS; i++) {
        ss_time hi = metrics_slice_bucket_hi(i);
        fprintf(f, "%s{\"lo_ms\": %g, \"hi_ms\": ", i ? ", " : "",
                (double)metrics_slice_bucket_lo(i) / SS_NS_PER_MS);
        if (hi == SS_TIME_MAX)
            fputs("null", f);
        else
            fprintf(f, "%g", (double)hi / SS_NS_PER_MS);
        fprintf(f, ", \"count\": %" PRIu64 ", \"gpu_s\": %.6f, \"free_gib_mean\": ",
                sl->count[i], sl->gpu_ns[i] / 1e9);
        if (sl->gpu_ns[i] > 0)
            fprintf(f, "%.3f}", sl->free_byte_ns[i] / sl->gpu_ns[i] / 1073741824.0);
        else
            fputs("null}", f);
    }
    fputs("]}", f);
}

/* Operator placement, and what SliceScheduler did. decision_wall_s and decisions_per_s are
 * wall-clock figures, like wall_s. */
static void json_ops(FILE *f, const runner_report *r, const gsim *g, const metrics_summary *m)
{
    const slice_stats *sl = gsim_slice_stats(g);
    fprintf(f, ", \"ops\": \"%s\"", r->ops ? r->ops : "home");
    if (!sl)
        return;
    fprintf(f, ", \"slice\": {\"offloads\": %" PRIu64 ", \"offloaded_ops\": %" PRIu64
               ", \"offload_gib\": %.6f, \"slices_used\": %" PRIu64 ", \"decisions\": %" PRIu64
               ", \"whatifs\": %" PRIu64 ", \"candidates\": %" PRIu64
               ", \"refused_memory\": %" PRIu64 ", \"refused_sla\": %" PRIu64
               ", \"refused_gain\": %" PRIu64 ", \"prediction_error_ms\": %.6f, "
               "\"decision_wall_s\": %.6f, \"decisions_per_s\": %.1f",
            m->offloads, m->offload_ops, m->offload_gib, m->slices_used, sl->ticks, sl->whatifs,
            sl->candidates, sl->refused_memory, sl->refused_sla, sl->refused_gain, m->pred_err_ms,
            sl->wall_s, sl->wall_s > 0 ? (double)sl->ticks / sl->wall_s : 0.0);
    /* the moved compute (GPU-s) by the length of the helper's idle stretch it ran in */
    fprintf(f, ", \"moved_gpu_s_by_idle_stretch\": {\"lt_10ms\": %.6f, \"10_100ms\": %.6f, "
               "\"100ms_1s\": %.6f, \"gt_1s\": %.6f}",
            m->moved_gpu_s[0], m->moved_gpu_s[1], m->moved_gpu_s[2], m->moved_gpu_s[3]);
    /* what its what-ifs knew: the output-length predictor (oracle: the true lengths) and the
     * error of their costs */
    pol_predictor pred;
    double cost_error;
    char name[48];
    gsim_whatif_knowledge(g, &pred, &cost_error);
    pol_predictor_name(&pred, name, sizeof name);
    fprintf(f, ", \"output_predictor\": \"%s\", \"cost_error\": %g}", name, cost_error);
}

/* The KV pool's counters of a group; the run's also its tiers' peak occupancy (peak: NULL
 * for a tenant). */
static void json_kvpool_group(FILE *f, const metrics_kvpool *p, const uint64_t *peak)
{
    fprintf(f, "{\"lookups\": %" PRIu64 ", \"gpu_blocks\": %" PRIu64 ", \"cpu_blocks\": %" PRIu64
               ", \"ssd_blocks\": %" PRIu64 ", \"remote_blocks\": %" PRIu64 ", \"loads\": %" PRIu64
               ", \"load_bytes\": %" PRIu64 ", \"load_s\": %.9f, \"recomputes\": %" PRIu64
               ", \"recompute_blocks\": %" PRIu64 ", \"offload_blocks\": %" PRIu64
               ", \"offload_bytes\": %" PRIu64 ", \"demotions\": %" PRIu64
               ", \"evictions\": %" PRIu64, p->lookups, p->gpu_blocks, p->cpu_blocks,
            p->ssd_blocks, p->remote_blocks, p->loads, p->load_bytes, ss_time_to_s(p->load_ns),
            p->recomputes, p->recompute_blocks, p->offload_blocks, p->offload_bytes, p->demotions,
            p->evictions);
    if (peak)
        fprintf(f, ", \"cpu_peak_bytes\": %" PRIu64 ", \"ssd_peak_bytes\": %" PRIu64, peak[0],
                peak[1]);
    fputc('}', f);
}

/* The counters of one set of lookups (a group's or an instance's), without braces. */
static void json_prefix_counts(FILE *f, const metrics_prefix *p)
{
    fprintf(f, "\"hit_rate\": %.6f, \"block_hit_rate\": %.6f, \"lookups\": %" PRIu64
               ", \"query_tokens\": %" PRIu64 ", \"hit_tokens\": %" PRIu64
               ", \"query_blocks\": %" PRIu64 ", \"hit_blocks\": %" PRIu64
               ", \"saved_tokens\": %" PRIu64 ", \"evictions\": %" PRIu64,
            metrics_prefix_hit_rate(p), metrics_prefix_block_hit_rate(p), p->lookups,
            p->query_tokens, p->hit_tokens, p->query_blocks, p->hit_blocks, p->saved_tokens,
            p->evictions);
}

/* A group's counters and its ceiling (an unbounded cache shared by each tenant's instances). */
static void json_prefix_group(FILE *f, const metrics_group_summary *s, int kept)
{
    const metrics_prefix *p = &s->prefix;
    fputc('{', f);
    json_prefix_counts(f, p);
    fprintf(f, ", \"ceiling_hit_rate\": %.6f, \"ceiling_hit_tokens\": %" PRIu64
               ", \"ceiling_hit_blocks\": %" PRIu64, s->prefix_ceiling_hit_rate,
            p->ceiling_hit_tokens, p->ceiling_hit_blocks);
    if (!kept) /* prefix_ceiling = off: the three read 0 */
        fputs(", \"ceiling_kept\": false", f);
}

/* Hit rates (tokens) over tenant t's instances that looked anything up (the containers
 * serving it at the end): *n_out of them; min, mean (unweighted) and max, 0 when none. */
static void instance_rates(const gsim *g, uint32_t t, uint32_t *n_out, double out[3])
{
    const gmg *G = gsim_graph(g);
    uint32_t n = 0;
    out[0] = out[1] = out[2] = 0;
    for (uint32_t i = 0; i < G->n_ctrs; i++) {
        const metrics_prefix *p = gsim_ctr_prefix(g, i);
        if (G->ctrs[i].tenant != t || !p->lookups)
            continue;
        double r = metrics_prefix_hit_rate(p);
        out[0] = n && out[0] < r ? out[0] : r;
        out[2] = n && out[2] > r ? out[2] : r;
        out[1] += r;
        n++;
    }
    if (n)
        out[1] /= n;
    *n_out = n;
}

/* Automatic prefix caching overall, with one object per instance (container); absent when
 * the cache was off. */
static void json_prefix(FILE *f, const gsim *g, const metrics_summary *m)
{
    const gmg *G = gsim_graph(g);
    if (!G->prefix_cache)
        return;
    fputs(", \"prefix_cache\": ", f);
    json_prefix_group(f, &m->all, gsim_ceiling_kept(g));
    fputs(", \"instances\": [", f);
    for (uint32_t i = 0; i < G->n_ctrs; i++) {
        fprintf(f, "%s{\"container\": %u, \"tenant\": ", i ? ", " : "", i);
        ss_json_fputs(f, gsim_tenant_name(g, G->ctrs[i].tenant));
        fputs(", ", f);
        json_prefix_counts(f, gsim_ctr_prefix(g, i));
        fputc('}', f);
    }
    fputs("]}", f);
    if (!gsim_graph(g)->kvp)
        return;
    fputs(", \"kvpool\": ", f);
    json_kvpool_group(f, &m->all.kvpool, gsim_metrics(g)->kvpool_peak);
}

void runner_report_json(FILE *f, const runner_report *r, const gsim *g,
                        const metrics_summary *m)
{
    const des_stats *d = gsim_des_stats(g);
    const metrics_group_summary *a = &m->all;
    const gsim_tenant *t0 = gsim_tenant_at(g, 0);
    fprintf(f, "{\"requests\": %" PRIu64 ", \"completed\": %" PRIu64 ", \"rejected\": %" PRIu64
               ", \"truncated\": %" PRIu64 ", \"preemptions\": %" PRIu64 ", \"swap_outs\": %" PRIu64
               ", \"aborted\": %" PRIu64 ", \"events\": %" PRIu64 ", \"iterations\": %" PRIu64
               ", \"wall_s\": %.6f, \"sim_s\": %.9f, \"prompt_tokens_per_s\": %.6f, "
               "\"output_tokens_per_s\": %.6f, \"requests_per_s\": %.6f, \"peak_in_flight\": %u, "
               "\"skipped\": %" PRIu64,
            m->requests, a->completed, a->rejected, a->truncated, a->preemptions, m->swap_outs,
            m->aborted, d->n_events, gsim_iterations(g), r->wall_s, m->sim_s,
            a->prompt_tokens_per_s, a->output_tokens_per_s, a->requests_per_s,
            gsim_graph(g)->peak_in_flight, r->skipped);
    json_pct(f, "ttft_ms", &a->ttft_ms);
    json_pct(f, "tbt_ms", &a->tbt_ms);
    json_pct(f, "e2e_ms", &a->e2e_ms);
    fprintf(f, ", \"arrival_window_s\": %.9f, \"window_output_tokens_per_s\": %.6f, "
               "\"window_goodput_tokens_per_s\": %.6f",
            m->arrival_window_s, a->win_output_tokens_per_s, a->win_goodput_tokens_per_s);
    fprintf(f, ", \"measured_requests\": %" PRIu64 ", \"warmup_s\": %.3f, \"window_s\": %.9f, "
               "\"sla_violation_rate\": %.6f, \"goodput_tokens_per_s\": %.6f, "
               "\"migrations\": %" PRIu64 ", \"migrations_aborted\": %" PRIu64
               ", \"migration_gib\": %.6f, \"reallocations\": %" PRIu64 ", \"scale_ups\": %" PRIu64
               ", \"scale_downs\": %" PRIu64 ", \"advice_declined\": %" PRIu64,
            a->requests, r->warmup_s, m->window_s, a->sla_violation_rate, a->goodput_tokens_per_s,
            m->migrations, m->migrations_aborted, m->migration_gib, m->reallocations, m->scale_ups,
            m->scale_downs, m->advice_declined);
    fprintf(f, ", \"rejected_why\": {");
    for (int k = 0; k < METRICS_REJ__COUNT; k++)
        fprintf(f, "%s\"%s\": %" PRIu64, k ? ", " : "", metrics_reject_key(k), a->rejected_why[k]);
    fputc('}', f);
    json_tenants(f, g, m->window_s);
    json_tiers(f, g, m->window_s);
    json_slices(f, g, m);
    json_ops(f, r, g, m);
    json_prefix(f, g, m);
    fprintf(f, ", \"model\": \"%s\", \"gpu\": \"%s\", \"replicas\": %u, \"tp\": %u, \"pp\": %u, "
               "\"batching\": \"%s\", \"routing\": \"%s\", \"cluster\": \"%s\", "
               "\"cost_model\": \"%s\", \"engine\": \"%s\", \"seed\": %" PRIu64 "}\n",
            t0->model->name, r->gpu, t0->replicas, t0->tp, t0->pp, r->batching, r->routing,
            r->cluster, r->cost, t0->engine->name, r->seed);
}

/* ---- table ------------------------------------------------------------------------------ */

static void table_row(FILE *f, const char *name, const metrics_pct *p)
{
    fprintf(f, "  %-6s %10.1f %10.1f %10.1f %10.1f %10.1f\n", name, p->mean, p->p50, p->p90,
            p->p99, p->max);
}

static void group_line(FILE *f, const char *label, const metrics_group_summary *s)
{
    fprintf(f, "  %-16s %8" PRIu64 " %7.1f%% %10.1f %10.1f %10.1f %10.1f %10.1f\n", label,
            s->requests, 100 * s->sla_violation_rate, s->goodput_tokens_per_s, s->ttft_ms.p50,
            s->ttft_ms.p99, s->tbt_ms.p99, s->e2e_ms.p99);
}

static void table_groups(FILE *f, const gsim *g, const metrics_summary *m)
{
    const metrics *mt = gsim_metrics(g);
    if (gsim_n_tenants(g) < 2 && mt->n_tiers < 2 && !m->all.sla_violations)
        return;
    fprintf(f, "  %-16s %8s %8s %10s %10s %10s %10s %10s\n", "tenant / tier", "requests",
            "SLA miss", "goodput", "TTFT p50", "TTFT p99", "TBT p99", "E2E p99");
    char label[64];
    metrics_group_summary s;
    for (uint32_t i = 0; i < gsim_n_tenants(g); i++) {
        metrics_summarize_group(&mt->tenants[i], m->window_s, &s);
        group_line(f, gsim_tenant_name(g, i), &s);
    }
    for (uint32_t k = 0; k < mt->n_tiers; k++) {
        snprintf(label, sizeof label, "tier %u", k);
        metrics_summarize_group(&mt->tiers[k], m->window_s, &s);
        group_line(f, label, &s);
    }
}

/* One line: how much GPU time idles, and in slices of which lengths. */
static void table_slices(FILE *f, const gsim *g, const metrics_summary *m)
{
    static const char *const labels[METRICS_SLICE_BUCKETS] = {
        "<10us", "<100us", "<1ms", "<10ms", "<100ms", "<1s", "<10s", ">=10s"};
    const metrics_slices *sl = &gsim_metrics(g)->slices;
    double gpu_time = m->window_s * gsim_graph(g)->n_gpus;
    fprintf(f, "  idle GPU slices: %" PRIu64 ", %.1f GPU-s (%.1f %% of GPU time):", m->idle_slices,
            m->idle_gpu_s, gpu_time > 0 ? 100 * m->idle_gpu_s / gpu_time : 0.0);
    for (int i = 0; i < METRICS_SLICE_BUCKETS; i++)
        fprintf(f, " %s %" PRIu64 "%s", labels[i], sl->count[i],
                i + 1 < METRICS_SLICE_BUCKETS ? "," : "\n");
}

/* One line per disaggregated tenant: its pools and its KV transfers. */
static void table_disagg(FILE *f, const gsim *g)
{
    const metrics *m = gsim_metrics(g);
    for (uint32_t i = 0; i < gsim_n_tenants(g); i++) {
        const gsim_tenant *t = gsim_tenant_at(g, i);
        if (!gsim_tenant_disagg(t))
            continue;
        metrics_group_summary s;
        metrics_summarize_group(&m->tenants[i], 0, &s);
        const metrics_kv *k = &s.kv;
        fprintf(f, "  %s%sprefill %u x TP %u, decode %u x TP %u, KV %s: %" PRIu64 " KV transfers "
                   "(%.2f GiB), exposed %.3f s in all, %.3f ms mean; %" PRIu64 " waited %.3f s "
                   "for decode blocks\n", gsim_n_tenants(g) > 1 ? t->name : "",
                gsim_n_tenants(g) > 1 ? ": " : "", t->prefill_replicas,
                t->prefill_tp ? t->prefill_tp : t->tp, t->decode_replicas,
                t->decode_tp ? t->decode_tp : t->tp,
                t->kv_transfer == GSIM_KV_END ? "after the prefill" : "layer by layer",
                k->transfers, k->bytes / 1073741824.0, ss_time_to_s(k->exposed_ns),
                s.kv_exposed_mean_ms, k->waits, ss_time_to_s(k->wait_ns));
    }
}

/* The placement policy's line, when one ran (SliceScheduler or another). */
static void table_ops(FILE *f, const gsim *g, const metrics_summary *m)
{
    const slice_stats *sl = gsim_slice_stats(g);
    if (!sl)
        return;
    const char *name = gsim_placement_name(g);
    if (strcmp(name, "slice"))
        fprintf(f, "  placement '%s':", name);
    else
        fputs("  SliceScheduler:", f);
    fprintf(f, " %" PRIu64 " prefills offloaded (%" PRIu64 " operators, %.1f GiB "
               "moved, %" PRIu64 " idle slices used); %" PRIu64 " decisions, %" PRIu64
               " what-ifs in %.2f s wall; refused %" PRIu64 " memory, %" PRIu64 " SLA, %" PRIu64
               " gain; first-token prediction error %.3f ms\n",
            m->offloads, m->offload_ops, m->offload_gib, m->slices_used, sl->ticks, sl->whatifs,
            sl->wall_s, sl->refused_memory, sl->refused_sla, sl->refused_gain, m->pred_err_ms);
    double moved = 0;
    for (int b = 0; b < METRICS_STRETCHES; b++)
        moved += m->moved_gpu_s[b];
    fprintf(f, "  moved compute %.1f GPU-s, by the helper's idle stretch it ran in: < 10 ms "
               "%.1f %%, 10-100 ms %.1f %%, 0.1-1 s %.1f %%, > 1 s %.1f %%\n", moved,
            moved > 0 ? 100 * m->moved_gpu_s[0] / moved : 0.0,
            moved > 0 ? 100 * m->moved_gpu_s[1] / moved : 0.0,
            moved > 0 ? 100 * m->moved_gpu_s[2] / moved : 0.0,
            moved > 0 ? 100 * m->moved_gpu_s[3] / moved : 0.0);
}

/* Prefix caching: the run's hit rates, then per tenant the spread over its instances and the
 * ceiling (an unbounded cache shared by its instances). */
static void table_prefix(FILE *f, const gsim *g, const metrics_summary *m)
{
    const metrics_group_summary *a = &m->all;
    const metrics_prefix *p = &a->prefix;
    fprintf(f, "  prefix cache: hit rate %.1f %% of prompt tokens (%" PRIu64 " of %" PRIu64
               "), %.1f %% of blocks; %" PRIu64 " prefill tokens saved; %" PRIu64
               " blocks evicted\n", 100 * a->prefix_hit_rate, p->hit_tokens, p->query_tokens,
            100 * a->prefix_block_hit_rate, p->saved_tokens, p->evictions);
    const metrics *mt = gsim_metrics(g);
    for (uint32_t t = 0; t < gsim_n_tenants(g); t++) {
        uint32_t n;
        double rate[3];
        instance_rates(g, t, &n, rate);
        metrics_group_summary s;
        metrics_summarize_group(&mt->tenants[t], m->window_s, &s);
        if (gsim_n_tenants(g) > 1)
            fprintf(f, "  prefix cache, %s:", gsim_tenant_name(g, t));
        else
            fputs("  prefix cache", f);
        fprintf(f, " by instance min %.1f %%, mean %.1f %%, max %.1f %% (%u instances); ",
                100 * rate[0], 100 * rate[1], 100 * rate[2], n);
        if (gsim_ceiling_kept(g))
            fprintf(f, "ceiling %.1f %% (unbounded, shared by the instances)\n",
                    100 * s.prefix_ceiling_hit_rate);
        else
            fputs("ceiling not kept (prefix_ceiling = off)\n", f);
    }
}

/* "engine NAME", or "engines A + B" when the tenants run several, into buf (n bytes). */
static void engines_text(const gsim *g, char *buf, size_t n)
{
    char list[512] = "";
    size_t used = 0;
    uint32_t k = 0;
    for (uint32_t i = 0; i < gsim_n_tenants(g); i++) {
        const char *name = gsim_tenant_at(g, i)->engine->name;
        int seen = 0;
        for (uint32_t j = 0; j < i && !seen; j++)
            seen = !strcmp(gsim_tenant_at(g, j)->engine->name, name);
        if (seen)
            continue;
        int w = snprintf(list + used, sizeof list - used, "%s%s", k++ ? " + " : "", name);
        used += w > 0 && (size_t)w < sizeof list - used ? (size_t)w : 0;
    }
    snprintf(buf, n, "%s %s", k > 1 ? "engines" : "engine", list);
}

void runner_report_table(FILE *f, const runner_report *r, const gsim *g,
                         const metrics_summary *m)
{
    const des_stats *d = gsim_des_stats(g);
    const metrics_group_summary *a = &m->all;
    const gsim_tenant *t0 = gsim_tenant_at(g, 0);
    char eng[600];
    engines_text(g, eng, sizeof eng);
    if (gsim_n_tenants(g) == 1 && gsim_tenant_disagg(t0))
        fprintf(f, "slicesim replay: %s (%s) on %u x %s, %s, disaggregated; %s batching, "
                   "prefill-affinity and decode-load routing, %s costs, %s\n", r->source,
                r->format, gsim_graph(g)->n_gpus, r->gpu, t0->model->name, r->batching, r->cost,
                eng);
    else if (gsim_n_tenants(g) == 1)
        fprintf(f, "slicesim replay: %s (%s) on %u x %s, %s, TP %u PP %u; %s batching, %s "
                   "routing, %s costs, %s\n", r->source, r->format,
                t0->share.kind ? gsim_graph(g)->n_phys : t0->replicas * t0->tp * t0->pp, r->gpu,
                t0->model->name, t0->tp, t0->pp,
                r->batching, r->routing, r->cost, eng);
    else
        fprintf(f, "slicesim replay: %s, %u tenants on %u x %s; %s batching, %s routing, %s "
                   "cluster, %s costs, %s\n", r->source, gsim_n_tenants(g),
                gsim_graph(g)->n_phys, r->gpu, r->batching, r->routing, r->cluster, r->cost, eng);
    table_shares(f, g);
    /* With a warm-up, the counts after the colon are the measured requests': say so. */
    fprintf(f, "  requests %" PRIu64 ": ", m->requests);
    if (r->warmup_s > 0)
        fprintf(f, "%" PRIu64 " in the %.1f s warm-up (not measured), %" PRIu64 " measured: ",
                m->requests - a->requests, r->warmup_s, a->requests);
    fprintf(f, "completed %" PRIu64 ", rejected %" PRIu64 ", truncated %" PRIu64
               "; preemptions %" PRIu64 " (%" PRIu64 " by swap; %" PRIu64
               " requests abandoned)\n",
            a->completed, a->rejected, a->truncated, a->preemptions, m->swap_outs, m->aborted);
    if (a->rejected) {
        char why[512];
        runner_report_rejections(why, sizeof why, g, a);
        fprintf(f, "  rejected %" PRIu64 " (%.1f %%): %s\n", a->rejected,
                100.0 * (double)a->rejected / (double)a->requests, why);
    }
    if (r->skipped)
        fprintf(f, "  skipped %" PRIu64 " trace rows the format marks as failed requests\n",
                r->skipped);
    if (m->migrations || m->migrations_aborted || m->reallocations || m->scale_ups)
        fprintf(f, "  migrations %" PRIu64 " (%" PRIu64 " aborted, %.2f GiB moved); container "
                   "re-allocations %" PRIu64 "; scaled up %" PRIu64 ", down %" PRIu64 "\n",
                m->migrations, m->migrations_aborted, m->migration_gib, m->reallocations,
                m->scale_ups, m->scale_downs);
    if (m->advice_declined)
        fprintf(f, "  cluster policy: %" PRIu64 " pieces of advice declined (the state no longer "
                   "allowed them when applied)\n", m->advice_declined);
    if (gsim_graph(g)->prefix_cache)
        table_prefix(f, g, m);
    if (gsim_graph(g)->kvp) {
        const metrics_kvpool *k = &a->kvpool;
        const uint64_t *peak = gsim_metrics(g)->kvpool_peak;
        fprintf(f, "  KV pool: loaded %" PRIu64 " blocks (CPU %" PRIu64 ", SSD %" PRIu64
                   ", remote %" PRIu64 "; %.2f GiB in %.3f s) for %" PRIu64 " requests, %" PRIu64
                   " recomputed instead; offloaded %" PRIu64 " blocks (%.2f GiB), %" PRIu64
                   " dropped; peak CPU %.2f GiB, SSD %.2f GiB\n",
                k->cpu_blocks + k->ssd_blocks + k->remote_blocks, k->cpu_blocks, k->ssd_blocks,
                k->remote_blocks, (double)k->load_bytes / 1073741824.0, ss_time_to_s(k->load_ns),
                k->loads, k->recomputes, k->offload_blocks,
                (double)k->offload_bytes / 1073741824.0, k->evictions,
                (double)peak[0] / 1073741824.0, (double)peak[1] / 1073741824.0);
    }
    table_disagg(f, g);
    table_slices(f, g, m);
    table_ops(f, g, m);
    fprintf(f, "  simulated %.1f s in %.3f s wall (%" PRIu64 " events, %.2f M events/s; %" PRIu64
               " iterations)\n", m->sim_s, r->wall_s, d->n_events,
            r->wall_s > 0 ? (double)d->n_events / r->wall_s / 1e6 : 0.0, gsim_iterations(g));
    fprintf(f, "  throughput: %.1f prompt tokens/s, %.1f output tokens/s, %.2f requests/s\n",
            a->prompt_tokens_per_s, a->output_tokens_per_s, a->requests_per_s);
    fprintf(f, "  in the arrival window (%.1f s, the warm-up's end to the last arrival): %.1f "
               "output tokens/s, goodput %.1f\n", m->arrival_window_s,
            a->win_output_tokens_per_s, a->win_goodput_tokens_per_s);
    /* Not the arrival window's goodput above: this one, the tenant table's, is over the
     * measurement window, which runs on to the last completion. */
    if (a->sla_violations || gsim_n_tenants(g) > 1)
        fprintf(f, "  SLA: %.2f %% of requests violated; goodput %.1f output tokens/s over the "
                   "measurement window (%.1f s, the warm-up's end to the last completion)\n",
                100 * a->sla_violation_rate, a->goodput_tokens_per_s, m->window_s);
    fprintf(f, "  latency (ms)  %10s %10s %10s %10s %10s\n", "mean", "p50", "p90", "p99", "max");
    table_row(f, "TTFT", &a->ttft_ms);
    table_row(f, "TBT", &a->tbt_ms);
    table_row(f, "E2E", &a->e2e_ms);
    table_groups(f, g, m);
}

/* ---- database --------------------------------------------------------------------------- */

/* One row per GPU. Over the measurement window, compute and the idle slices tile it: compute
 * is the window less the idle slices, host the part of these in host phases. */
static int store_gpus(store *st, const gsim *g, double window_s, ss_errbuf *eb)
{
    const gmg *G = gsim_graph(g);
    for (uint32_t i = 0; i < G->n_gpus; i++) {
        const gmg_gpu *u = &G->gpus[i];
        const gsim_gpu_stats *x = gsim_gpu_stats_at(g, i);
        const gmg_container *c = &G->ctrs[u->container];
        double compute_s = window_s - ss_time_to_s(x->idle_ns);
        char share[32];
        gsim_share_format(&gsim_tenant_at(g, c->tenant)->share, share, sizeof share);
        store_gpu_row row = {
            .gpu = u->id, .node = u->node, .container = u->container, .kind = u->kind->name,
            .tenant = gsim_tenant_at(g, c->tenant)->name, .window_s = window_s,
            .compute_s = compute_s, .host_s = ss_time_to_s(x->host_ns),
            .busy_s = ss_time_to_s(x->busy_ns),
            .utilization = window_s > 0 ? compute_s / window_s : 0,
            .iterations = x->iterations, .kv_blocks = c->blocks_total,
            .kv_peak_blocks = c->blocks_peak, .weights_gib = u->mem.weights / 1073741824.0,
            .kv_pool_gib = u->mem.kv_pool / 1073741824.0,
            .device_busy_s = ss_time_to_s(x->dev_busy_ns), .idle_slices = x->idle_slices,
            .idle_s = ss_time_to_s(x->idle_ns), .phys = u->phys,
            .share = u->share ? share : "whole",
        };
        int rc = store_run_gpu(st, &row, eb);
        if (rc)
            return rc;
    }
    return SS_OK;
}

static int store_groups(store *st, const gsim *g, double window_s, ss_errbuf *eb)
{
    const metrics *m = gsim_metrics(g);
    metrics_group_summary s;
    int rc = SS_OK;
    for (uint32_t i = 0; !rc && i < gsim_n_tenants(g); i++) {
        const gsim_tenant *t = gsim_tenant_at(g, i);
        metrics_summarize_group(&m->tenants[i], window_s, &s);
        metrics_summarize_window(m, &m->tenants[i], &s);
        char share[32];
        gsim_share_format(&t->share, share, sizeof share);
        rc = store_run_tenant(st, t->name, t->model->name, share, t->replicas, t->prefill_replicas,
                              t->decode_replicas, &s, eb);
    }
    for (uint32_t k = 0; !rc && k < m->n_tiers; k++) {
        metrics_summarize_group(&m->tiers[k], window_s, &s);
        metrics_summarize_window(m, &m->tiers[k], &s);
        rc = store_run_tier(st, k, &s, eb);
    }
    return rc;
}

int runner_report_store(store *st, const gsim *g, const metrics_summary *m, double wall_s,
                        uint64_t trace_digest, const char *result_json, ss_errbuf *eb)
{
    store_run_end end = {
        .wall_s = wall_s, .events = gsim_des_stats(g)->n_events,
        .iterations = gsim_iterations(g), .peak_in_flight = gsim_graph(g)->peak_in_flight,
        .trace_digest = trace_digest, .result_json = result_json,
    };
    const slice_stats *sl = gsim_slice_stats(g);
    if (sl) {
        end.whatifs = sl->whatifs;
        end.slice_decisions = sl->ticks;
        end.slice_wall_s = sl->wall_s;
    }
    int rc = store_gpus(st, g, m->window_s, eb);
    if (!rc)
        rc = store_groups(st, g, m->window_s, eb);
    const gmg *G = gsim_graph(g);
    for (uint32_t i = 0; !rc && i < G->n_ctrs; i++)
        rc = store_run_instance(st, i, gsim_tenant_name(g, G->ctrs[i].tenant),
                                gsim_ctr_prefix(g, i), eb);
    if (!rc)
        rc = store_run_slices(st, &gsim_metrics(g)->slices, eb);
    if (!rc)
        rc = store_run_commit(st, m, &end, eb);
    return rc;
}
