/* The Azure LLM inference trace format (2023 and 2024 releases): TIMESTAMP, ContextTokens,
 * GeneratedTokens; other columns are ignored. Timestamps ("2023-11-16 18:15:46.6805900") are
 * converted to integer nanoseconds with civil-calendar arithmetic (no floating point, no
 * timegm, no time zone) and rebased so the first request arrives at 0. */
#include "trace/trace_int.h"

#include <string.h>

typedef struct azure_priv {
    int c_ts, c_ctx, c_gen; /* header indexes of the three columns */
    int have_first;         /* first_s/first_ns are set */
    int64_t first_s;        /* first request: seconds since 1970-01-01 (UTC assumed) */
    int32_t first_ns;       /* and its fraction of a second, ns */
} azure_priv;

/* A parsed timestamp: whole seconds since the epoch and the fraction in ns. */
typedef struct azure_ts {
    int64_t s;
    int32_t ns;
} azure_ts;

static int azure_probe(const trace__row *hdr)
{
    return (trace__col(hdr, "TIMESTAMP") >= 0) + (trace__col(hdr, "ContextTokens") >= 0) +
           (trace__col(hdr, "GeneratedTokens") >= 0);
}

static int azure_open(void *priv, const trace__row *hdr, ss_errbuf *eb)
{
    azure_priv *p = priv;
    uint16_t t0;
    int rc;
    if ((rc = trace__need_col(hdr, "TIMESTAMP", &p->c_ts, eb)) ||
        (rc = trace__need_col(hdr, "ContextTokens", &p->c_ctx, eb)) ||
        (rc = trace__need_col(hdr, "GeneratedTokens", &p->c_gen, eb)))
        return rc;
    if (trace__intern(hdr->r, "default", 7, &t0))
        return trace__err(hdr, eb, SS_ENOMEM, "header", "out of memory");
    return SS_OK;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int days_in_month(int64_t y, int m)
{
    static const int dim[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return dim[m - 1] + (m == 2 && leap);
}

/* Exactly n decimal digits at s; -1 if any is not a digit. */
static int64_t digits(const char *s, int n)
{
    int64_t v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* ".fffffffff" (1 to 9 digits) and an optional "Z" or "+00:00" after the seconds. */
static int parse_tail(const char *s, size_t len, int32_t *ns_out)
{
    size_t i = 0;
    int32_t ns = 0;
    int k = 0;
    if (i < len && s[i] == '.') {
        for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++, k++)
            if (k < 9)
                ns = ns * 10 + (s[i] - '0');
        if (k == 0 || k > 9)
            return SS_EPARSE;
        for (int j = k; j < 9; j++)
            ns *= 10;
    }
    s += i;
    len -= i;
    if (!(len == 0 || (len == 1 && s[0] == 'Z') || (len == 6 && !memcmp(s, "+00:00", 6))))
        return SS_EPARSE;
    *ns_out = ns;
    return SS_OK;
}

/* "YYYY-MM-DD HH:MM:SS[.f{1,9}][Z|+00:00]" ('T' also accepted as the separator). */
static int parse_ts(const char *s, size_t len, azure_ts *out)
{
    if (len < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') ||
        s[13] != ':' || s[16] != ':')
        return SS_EPARSE;
    int64_t y = digits(s, 4), mo = digits(s + 5, 2), d = digits(s + 8, 2);
    int64_t h = digits(s + 11, 2), mi = digits(s + 14, 2), sec = digits(s + 17, 2);
    if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, (int)mo) || h < 0 ||
        h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59)
        return SS_EPARSE;
    if (parse_tail(s + 19, len - 19, &out->ns))
        return SS_EPARSE;
    out->s = days_from_civil(y, (int)mo, (int)d) * 86400 + h * 3600 + mi * 60 + sec;
    return SS_OK;
}

/* Arrival relative to the first request; the first row defines time 0. */
static int azure_arrival(azure_priv *p, const trace__row *row, trace_rec *rec, ss_errbuf *eb)
{
    const trace__field *f = &row->f[p->c_ts];
    trace__shown sh;
    azure_ts ts;
    if (parse_ts(f->s, f->len, &ts))
        return trace__err(row, eb, SS_EPARSE, "TIMESTAMP",
                          "not a timestamp (want YYYY-MM-DD HH:MM:SS[.fffffff]): '%s'",
                          trace__show(&sh, f->s, f->len));
    if (!p->have_first) {
        p->have_first = 1;
        p->first_s = ts.s;
        p->first_ns = ts.ns;
    }
    int64_t ds = ts.s - p->first_s;
    if (ds > INT64_C(9000000000) || ds < -INT64_C(9000000000))
        return trace__err(row, eb, SS_EPARSE, "TIMESTAMP",
                          "more than 285 years from the first request: '%s'",
                          trace__show(&sh, f->s, f->len));
    rec->arrival_ns = ds * SS_NS_PER_S + (ts.ns - p->first_ns);
    return SS_OK;
}

static int azure_parse(void *priv, const trace__row *row, trace_rec *rec, ss_errbuf *eb)
{
    azure_priv *p = priv;
    int rc;
    if ((rc = azure_arrival(p, row, rec, eb)) ||
        (rc = trace__get_tokens(row, p->c_ctx, "ContextTokens", &rec->prompt_tokens, eb)) ||
        (rc = trace__get_tokens(row, p->c_gen, "GeneratedTokens", &rec->output_tokens, eb)))
        return rc;
    return SS_OK;
}

const trace_format_ops trace__fmt_azure = {
    .name = "azure",
    .priv_size = sizeof(azure_priv),
    .time_field = "TIMESTAMP",
    .probe = azure_probe,
    .open = azure_open,
    .parse = azure_parse,
};
