/* Folding request outcomes into counters and histograms; deriving the summary. */
#include "metrics.h"

#include "../core/ss_err.h"

#include <string.h>

void metrics_fini(metrics *m)
{
    ss_hist_fini(&m->ttft);
    ss_hist_fini(&m->tbt);
    ss_hist_fini(&m->e2e);
    memset(m, 0, sizeof *m);
}

int metrics_add_req(metrics *m, const metrics_req *r)
{
    if (r->finish > m->last_finish)
        m->last_finish = r->finish;
    m->preemptions += r->preemptions;
    if (r->rejected) {
        m->rejected++;
        return SS_OK;
    }
    m->completed++;
    m->truncated += r->generated < r->output_asked;
    m->prompt_tokens += r->prompt;
    m->output_tokens += r->generated;
    if (ss_hist_add(&m->ttft, r->first_token - r->arrival) ||
        ss_hist_add(&m->e2e, r->finish - r->arrival))
        return SS_ENOMEM;
    return SS_OK;
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

void metrics_summarize(const metrics *m, ss_time sim_end, metrics_summary *out)
{
    memset(out, 0, sizeof *out);
    out->requests = m->requests;
    out->completed = m->completed;
    out->rejected = m->rejected;
    out->truncated = m->truncated;
    out->preemptions = m->preemptions;
    out->swap_outs = m->swap_outs;
    out->aborted = m->aborted;
    out->prompt_tokens = m->prompt_tokens;
    out->output_tokens = m->output_tokens;
    out->sim_s = ss_time_to_s(sim_end);
    if (out->sim_s > 0) {
        out->prompt_tokens_per_s = (double)m->prompt_tokens / out->sim_s;
        out->output_tokens_per_s = (double)m->output_tokens / out->sim_s;
        out->requests_per_s = (double)m->completed / out->sim_s;
    }
    out->ttft_ms = pct(&m->ttft);
    out->tbt_ms = pct(&m->tbt);
    out->e2e_ms = pct(&m->e2e);
}
