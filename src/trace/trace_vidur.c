/* The Vidur processed-trace format: arrived_at (decimal seconds, exponent allowed),
 * num_prefill_tokens, num_decode_tokens. Other columns (num_total_tokens, pd_ratio, a leading
 * unnamed pandas index) are ignored. Length-only files without arrived_at are recognised and
 * rejected with "missing column arrived_at". */
#include "trace/trace_int.h"

typedef struct vidur_priv {
    int c_at, c_pre, c_dec; /* header indexes of the three columns */
} vidur_priv;

static int vidur_probe(const trace__row *hdr)
{
    static const char *const cols[] = {"arrived_at", "num_prefill_tokens", "num_decode_tokens",
                                       "num_total_tokens", "pd_ratio"};
    int score = 0;
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++)
        score += trace__col(hdr, cols[i]) >= 0;
    return score;
}

static int vidur_open(void *priv, const trace__row *hdr, ss_errbuf *eb)
{
    vidur_priv *p = priv;
    uint16_t t0;
    int rc;
    if ((rc = trace__need_col(hdr, "arrived_at", &p->c_at, eb)) ||
        (rc = trace__need_col(hdr, "num_prefill_tokens", &p->c_pre, eb)) ||
        (rc = trace__need_col(hdr, "num_decode_tokens", &p->c_dec, eb)))
        return rc;
    if (trace__intern(hdr->r, "default", 7, &t0))
        return trace__err(hdr, eb, SS_ENOMEM, "header", "out of memory");
    return SS_OK;
}

static int vidur_parse(void *priv, const trace__row *row, trace_rec *rec, ss_errbuf *eb)
{
    const vidur_priv *p = priv;
    int rc;
    if ((rc = trace__get_secs(row, p->c_at, "arrived_at", &rec->arrival_ns, eb)) ||
        (rc = trace__get_tokens(row, p->c_pre, "num_prefill_tokens", &rec->prompt_tokens, eb)) ||
        (rc = trace__get_tokens(row, p->c_dec, "num_decode_tokens", &rec->output_tokens, eb)))
        return rc;
    return SS_OK;
}

const trace_format_ops trace__fmt_vidur = {
    .name = "vidur",
    .priv_size = sizeof(vidur_priv),
    .time_field = "arrived_at",
    .probe = vidur_probe,
    .open = vidur_open,
    .parse = vidur_parse,
};
