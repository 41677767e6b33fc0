/* The BurstGPT trace format (github.com/HPMLL/BurstGPT): a CSV with the header
 * Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type. Timestamp is seconds
 * since 00:00 of the first day (decimal accepted), kept as given; Model (ChatGPT, GPT-4)
 * becomes the tenant; Total tokens, Log Type and any other column are ignored. Rows with 0
 * response tokens are failed requests: they are skipped and counted (trace_reader_n_skipped). */
#include "trace/trace_int.h"

typedef struct burstgpt_priv {
    int c_ts, c_model, c_req, c_resp; /* header indexes of the four columns used */
} burstgpt_priv;

static int burstgpt_probe(const trace__row *hdr)
{
    static const char *const cols[] = {"Timestamp",       "Model",        "Request tokens",
                                       "Response tokens", "Total tokens", "Log Type"};
    int score = 0;
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++)
        score += trace__col(hdr, cols[i]) >= 0;
    return score;
}

static int burstgpt_open(void *priv, const trace__row *hdr, ss_errbuf *eb)
{
    burstgpt_priv *p = priv;
    int rc;
    if ((rc = trace__need_col(hdr, "Timestamp", &p->c_ts, eb)) ||
        (rc = trace__need_col(hdr, "Model", &p->c_model, eb)) ||
        (rc = trace__need_col(hdr, "Request tokens", &p->c_req, eb)) ||
        (rc = trace__need_col(hdr, "Response tokens", &p->c_resp, eb)))
        return rc;
    return SS_OK;
}

/* A failed request (0 response tokens) is skipped once its time and response count are
 * valid; its other columns are not checked, since nothing of it is used. */
static int burstgpt_parse(void *priv, const trace__row *row, trace_rec *rec, ss_errbuf *eb)
{
    const burstgpt_priv *p = priv;
    int64_t resp;
    int rc;
    if ((rc = trace__get_secs(row, p->c_ts, "Timestamp", &rec->arrival_ns, eb)) ||
        (rc = trace__get_int(row, p->c_resp, "Response tokens", 0, TRACE_MAX_TOKENS, &resp,
                             eb)))
        return rc;
    if (resp == 0)
        return TRACE__SKIP;
    rec->output_tokens = (uint32_t)resp;
    if ((rc = trace__get_tokens(row, p->c_req, "Request tokens", &rec->prompt_tokens, eb)) ||
        (rc = trace__get_tenant(row, p->c_model, "Model", &rec->tenant, eb)))
        return rc;
    return SS_OK;
}

const trace_format_ops trace__fmt_burstgpt = {
    .name = "burstgpt",
    .priv_size = sizeof(burstgpt_priv),
    .time_field = "Timestamp",
    .probe = burstgpt_probe,
    .open = burstgpt_open,
    .parse = burstgpt_parse,
};
