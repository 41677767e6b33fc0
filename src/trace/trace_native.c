/* The native trace format: a header naming any of request_id, arrival_s, tenant,
 * prompt_tokens, output_tokens (required) and tier, session_id, slo_ttft_ms, slo_tbt_ms,
 * hash_ids (optional; Mooncake's prefix-block ids of 512-token blocks, space-separated), in any
 * order. Unknown column names are errors so typos do not go unnoticed.
 * Not for writing the format (trace_gen.c writes it). */
#include "trace/trace_int.h"

#include <string.h>

enum {
    NAT_ID,
    NAT_ARRIVAL,
    NAT_TENANT,
    NAT_PROMPT,
    NAT_OUTPUT,
    NAT_TIER,
    NAT_SESSION,
    NAT_TTFT,
    NAT_TBT,
    NAT_HASH,
    NAT_N,
    NAT_N_REQUIRED = NAT_TIER, /* the columns before NAT_TIER are required */
};

static const char *const nat_cols[NAT_N] = {
    "request_id", "arrival_s",  "tenant",      "prompt_tokens", "output_tokens",
    "tier",       "session_id", "slo_ttft_ms", "slo_tbt_ms",    "hash_ids",
};

typedef struct native_priv {
    int col[NAT_N]; /* header index of each column, -1 when absent */
    uint32_t *blocks; /* the reader's prefix-block buffer (trace__blocks), borrowed; NULL
                         without a hash_ids column */
} native_priv;

static int native_probe(const trace__row *hdr)
{
    int score = 0;
    for (int i = 0; i < NAT_N; i++)
        score += trace__col(hdr, nat_cols[i]) >= 0;
    return score;
}

static int native_col_of(const trace__field *f)
{
    for (int i = 0; i < NAT_N; i++)
        if (strlen(nat_cols[i]) == f->len && !memcmp(nat_cols[i], f->s, f->len))
            return i;
    return -1;
}

static int native_open(void *priv, const trace__row *hdr, ss_errbuf *eb)
{
    native_priv *p = priv;
    trace__shown sh;
    for (int i = 0; i < NAT_N; i++)
        p->col[i] = -1;
    for (uint32_t j = 0; j < hdr->n; j++) {
        int c = native_col_of(&hdr->f[j]);
        if (c < 0)
            return trace__err(hdr, eb, SS_EPARSE, "header",
                              "unknown column '%s' (native columns: request_id, arrival_s, "
                              "tenant, prompt_tokens, output_tokens, tier, session_id, "
                              "slo_ttft_ms, slo_tbt_ms, hash_ids)",
                              trace__show(&sh, hdr->f[j].s, hdr->f[j].len));
        p->col[c] = (int)j;
    }
    for (int i = 0; i < NAT_N_REQUIRED; i++)
        if (p->col[i] < 0)
            return trace__err(hdr, eb, SS_EPARSE, "header", "missing column %s", nat_cols[i]);
    p->blocks = NULL;
    if (p->col[NAT_HASH] >= 0 && !(p->blocks = trace__blocks(hdr->r)))
        return trace__err(hdr, eb, SS_ENOMEM, "header", "out of memory");
    return SS_OK;
}

/* The hash_ids field: ids (0 .. 2^32 - 1) separated by blanks, into p->blocks. */
static int native_hash_ids(const native_priv *p, const trace__row *row, const trace__field *v,
                           trace_rec *rec, ss_errbuf *eb)
{
    uint32_t n = 0;
    for (size_t i = 0; i < v->len;) {
        if (v->s[i] == ' ' || v->s[i] == '\t') {
            i++;
            continue;
        }
        size_t k = i;
        while (k < v->len && v->s[k] != ' ' && v->s[k] != '\t')
            k++;
        if (n >= TRACE_MAX_PREFIX_BLOCKS)
            return trace__err(row, eb, SS_EPARSE, "hash_ids", "more than %d ids",
                              TRACE_MAX_PREFIX_BLOCKS);
        trace__field one_f = {v->s + i, k - i};
        trace__row one = *row;
        one.f = &one_f;
        one.n = 1;
        int64_t id;
        if (trace__get_int(&one, 0, "hash_ids", 0, UINT32_MAX, &id, eb))
            return SS_EPARSE;
        p->blocks[n++] = (uint32_t)id;
        i = k;
    }
    rec->prefix_blocks = n ? p->blocks : NULL;
    rec->n_prefix_blocks = n;
    return SS_OK;
}

/* The optional columns: absent or empty fields keep their zero defaults. */
static int native_optional(const native_priv *p, const trace__row *row, trace_rec *rec,
                           ss_errbuf *eb)
{
    int rc = SS_OK;
    int64_t tier;
    int c = p->col[NAT_TIER];
    if (c >= 0 && row->f[c].len) {
        if ((rc = trace__get_int(row, c, "tier", 0, 255, &tier, eb)))
            return rc;
        rec->tier = (uint8_t)tier;
    }
    c = p->col[NAT_SESSION];
    if (c >= 0 && row->f[c].len && (rc = trace__get_u64(row, c, "session_id", &rec->session_id,
                                                        eb)))
        return rc;
    c = p->col[NAT_TTFT];
    if (c >= 0 && row->f[c].len) {
        if ((rc = trace__get_ms(row, c, "slo_ttft_ms", &rec->slo_ttft_ns, eb)))
            return rc;
        rec->has_slo |= 1;
    }
    c = p->col[NAT_TBT];
    if (c >= 0 && row->f[c].len) {
        if ((rc = trace__get_ms(row, c, "slo_tbt_ms", &rec->slo_tbt_ns, eb)))
            return rc;
        rec->has_slo |= 2;
    }
    c = p->col[NAT_HASH];
    if (c >= 0 && row->f[c].len)
        rc = native_hash_ids(p, row, &row->f[c], rec, eb);
    return rc;
}

static int native_parse(void *priv, const trace__row *row, trace_rec *rec, ss_errbuf *eb)
{
    const native_priv *p = priv;
    int rc;
    if ((rc = trace__get_u64(row, p->col[NAT_ID], "request_id", &rec->id, eb)) ||
        (rc = trace__get_secs(row, p->col[NAT_ARRIVAL], "arrival_s", &rec->arrival_ns, eb)) ||
        (rc = trace__get_tenant(row, p->col[NAT_TENANT], "tenant", &rec->tenant, eb)) ||
        (rc = trace__get_tokens(row, p->col[NAT_PROMPT], "prompt_tokens", &rec->prompt_tokens,
                                eb)) ||
        (rc = trace__get_tokens(row, p->col[NAT_OUTPUT], "output_tokens", &rec->output_tokens,
                                eb)))
        return rc;
    if ((rc = native_optional(p, row, rec, eb)))
        return rc;
    return trace__check_blocks(row, rec, "prompt_tokens", eb);
}

const trace_format_ops trace__fmt_native = {
    .name = "native",
    .priv_size = sizeof(native_priv),
    .time_field = "arrival_s",
    .probe = native_probe,
    .open = native_open,
    .parse = native_parse,
};
