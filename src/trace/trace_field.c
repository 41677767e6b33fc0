/* Field-level helpers shared by the trace format plug-ins: CSV splitting, strict parsing of
 * integers, seconds, milliseconds and tenant names with "FILE:LINE: field: what is wrong"
 * messages, and the FNV-1a digest. Not for line reading or format detection (trace_reader.c)
 * nor JSON syntax (trace_json.c). */
#include "trace/trace_int.h"

#include "core/ss_parse.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int trace__check_blocks(const trace__row *row, const trace_rec *rec, const char *field,
                        ss_errbuf *eb)
{
    uint64_t most = ((uint64_t)rec->prompt_tokens + TRACE_PREFIX_BLOCK_TOKENS - 1) /
                    TRACE_PREFIX_BLOCK_TOKENS;
    if (rec->n_prefix_blocks <= most)
        return SS_OK;
    return trace__err(row, eb, SS_EPARSE, "hash_ids", "%u ids of %u-token blocks, more than "
                      "%s %u fills (%llu)", rec->n_prefix_blocks, TRACE_PREFIX_BLOCK_TOKENS,
                      field, rec->prompt_tokens, (unsigned long long)most);
}

int trace__err(const trace__row *row, ss_errbuf *eb, int rc, const char *field, const char *fmt,
               ...)
{
    if (!eb)
        return rc;
    int n = snprintf(eb->msg, sizeof eb->msg, "%s:%" PRIu64 ": %s: ", row->file, row->line, field);
    if (n >= 0 && (size_t)n < sizeof eb->msg) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(eb->msg + n, sizeof eb->msg - (size_t)n, fmt, ap);
        va_end(ap);
    }
    ss_errbuf_oneline(eb);
    return rc;
}

const char *trace__show(trace__shown *buf, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const size_t room = sizeof buf->s - 4 - 4; /* worst case: one \xNN plus "..." and NUL */
    size_t o = 0, i = 0;
    for (; i < len && o < room; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            buf->s[o++] = (char)c;
        } else {
            buf->s[o++] = '\\';
            buf->s[o++] = 'x';
            buf->s[o++] = hex[c >> 4];
            buf->s[o++] = hex[c & 15];
        }
    }
    if (i < len) {
        memcpy(buf->s + o, "...", 3);
        o += 3;
    }
    buf->s[o] = '\0';
    return buf->s;
}

/* ns in units of unit_ns (10^places ns), with up to places decimals, no trailing zeros. */
static const char *fmt_scaled(trace__secs *buf, ss_time ns, uint64_t unit_ns, int places)
{
    uint64_t mag = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    uint64_t frac = mag % unit_ns;
    int n = snprintf(buf->s, sizeof buf->s, "%s%" PRIu64, ns < 0 ? "-" : "", mag / unit_ns);
    if (frac && n > 0 && (size_t)n < sizeof buf->s) {
        char digits[16];
        snprintf(digits, sizeof digits, "%0*" PRIu64, places, frac);
        int k = places;
        while (k > 1 && digits[k - 1] == '0')
            k--;
        snprintf(buf->s + n, sizeof buf->s - (size_t)n, ".%.*s", k, digits);
    }
    return buf->s;
}

const char *trace__fmt_secs(trace__secs *buf, ss_time ns)
{
    return fmt_scaled(buf, ns, 1000000000u, 9);
}

const char *trace__fmt_ms(trace__secs *buf, ss_time ns) { return fmt_scaled(buf, ns, 1000000u, 6); }

const char *trace__fmt_time(const trace_format_ops *ops, trace__secs *buf, ss_time ns)
{
    return ops->time_in_ms ? trace__fmt_ms(buf, ns) : trace__fmt_secs(buf, ns);
}

uint32_t trace__split(const char *line, size_t len, trace__field *f, uint32_t cap)
{
    uint32_t n = 0;
    size_t start = 0;
    for (;;) {
        const char *comma = memchr(line + start, ',', len - start);
        size_t end = comma ? (size_t)(comma - line) : len;
        if (n < cap) {
            size_t flen = end - start;
            f[n].s = ss_trim(line + start, &flen);
            f[n].len = flen;
        }
        if (n < UINT32_MAX)
            n++;
        if (!comma)
            return n;
        start = end + 1;
    }
}

int trace__col(const trace__row *hdr, const char *name)
{
    size_t len = strlen(name);
    for (uint32_t i = 0; i < hdr->n; i++)
        if (hdr->f[i].len == len && !memcmp(hdr->f[i].s, name, len))
            return (int)i;
    return -1;
}

int trace__need_col(const trace__row *hdr, const char *name, int *idx_out, ss_errbuf *eb)
{
    int i = trace__col(hdr, name);
    if (i < 0)
        return trace__err(hdr, eb, SS_EPARSE, "header", "missing column %s", name);
    *idx_out = i;
    return SS_OK;
}

/* Strict "[+-]digits". Returns 0, 1 when the magnitude overflowed uint64 (then *mag is
 * UINT64_MAX), or SS_EPARSE for anything else. */
static int scan_int(const char *s, size_t len, int *neg, uint64_t *mag)
{
    size_t i = 0;
    *neg = 0;
    if (len && (s[0] == '+' || s[0] == '-')) {
        *neg = s[0] == '-';
        i = 1;
    }
    if (i == len)
        return SS_EPARSE;
    uint64_t m = 0;
    int over = 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return SS_EPARSE;
        unsigned d = (unsigned)(s[i] - '0');
        if (m > (UINT64_MAX - d) / 10)
            over = 1;
        else
            m = m * 10 + d;
    }
    *mag = over ? UINT64_MAX : m;
    return over;
}

/* The field at col, or an "empty" error when it has no characters. */
static int get_field(const trace__row *row, int col, const char *name, trace__field *out,
                     ss_errbuf *eb)
{
    if (SS_NEVER(col < 0 || (uint32_t)col >= row->n))
        return trace__err(row, eb, SS_EPARSE, name, "no such column");
    *out = row->f[col];
    if (out->len == 0)
        return trace__err(row, eb, SS_EPARSE, name, "empty field");
    return SS_OK;
}

int trace__get_int(const trace__row *row, int col, const char *name, int64_t lo, int64_t hi,
                   int64_t *out, ss_errbuf *eb)
{
    trace__field f = {0};
    trace__shown sh;
    int neg, rc = get_field(row, col, name, &f, eb);
    uint64_t mag;
    if (rc)
        return rc;
    if (scan_int(f.s, f.len, &neg, &mag) < 0)
        return trace__err(row, eb, SS_EPARSE, name, "not an integer: '%s'",
                          trace__show(&sh, f.s, f.len));
    int64_t v = 0;
    if (!neg)
        v = mag > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)mag;
    else
        v = mag > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)mag;
    if (v < lo)
        return trace__err(row, eb, SS_EPARSE, name, "must be >= %" PRId64 ", got %s", lo,
                          trace__show(&sh, f.s, f.len));
    if (v > hi)
        return trace__err(row, eb, SS_EPARSE, name, "must be <= %" PRId64 ", got %s", hi,
                          trace__show(&sh, f.s, f.len));
    *out = v;
    return SS_OK;
}

int trace__get_u64(const trace__row *row, int col, const char *name, uint64_t *out,
                   ss_errbuf *eb)
{
    trace__field f = {0};
    trace__shown sh;
    int neg, rc = get_field(row, col, name, &f, eb);
    uint64_t mag;
    if (rc)
        return rc;
    rc = scan_int(f.s, f.len, &neg, &mag);
    if (rc < 0)
        return trace__err(row, eb, SS_EPARSE, name, "not an integer: '%s'",
                          trace__show(&sh, f.s, f.len));
    if (neg && mag)
        return trace__err(row, eb, SS_EPARSE, name, "must be >= 0, got %s",
                          trace__show(&sh, f.s, f.len));
    if (rc)
        return trace__err(row, eb, SS_EPARSE, name, "must be <= %" PRIu64 ", got %s",
                          UINT64_MAX, trace__show(&sh, f.s, f.len));
    *out = mag;
    return SS_OK;
}

int trace__get_tokens(const trace__row *row, int col, const char *name, uint32_t *out,
                      ss_errbuf *eb)
{
    int64_t v = 0;
    int rc = trace__get_int(row, col, name, 1, TRACE_MAX_TOKENS, &v, eb);
    if (rc == SS_OK)
        *out = (uint32_t)v;
    return rc;
}

int trace__get_secs(const trace__row *row, int col, const char *name, ss_time *out,
                    ss_errbuf *eb)
{
    trace__field f = {0};
    trace__shown sh;
    ss_time t;
    int rc = get_field(row, col, name, &f, eb);
    if (rc)
        return rc;
    if (ss_parse_seconds_ns(f.s, f.len, &t))
        return trace__err(row, eb, SS_EPARSE, name, "%s: '%s'",
                          trace__number_problem(f.s, f.len, 1),
                          trace__show(&sh, f.s, f.len));
    if (t < 0)
        return trace__err(row, eb, SS_EPARSE, name, "must be >= 0, got %s",
                          trace__show(&sh, f.s, f.len));
    *out = t;
    return SS_OK;
}

const char *trace__number_problem(const char *s, size_t len, int per_second)
{
    double x;
    if (ss_parse_number_value(s, len, &x) && fabs(x) >= 1)
        return per_second == 1 ? "out of range [0, 9.2e9] seconds"
                               : "out of range [0, 9.2e12] milliseconds";
    return per_second == 1 ? "not a number of seconds" : "not a number of milliseconds";
}

/* Milliseconds to ns exactly: rewrite "M[eX]" as "Me(X-3)" seconds for ss_parse_seconds_ns. */
int trace__parse_ms(const char *s, size_t len, ss_time *out)
{
    char buf[160];
    size_t m = 0;
    int64_t exp10 = 0;
    while (m < len && s[m] != 'e' && s[m] != 'E')
        m++;
    if (m < len && ss_parse_i64(s + m + 1, len - m - 1, &exp10))
        return SS_EPARSE;
    if (m > 100 || exp10 < -400 || exp10 > 400)
        return SS_EPARSE;
    int n = snprintf(buf, sizeof buf, "%.*se%" PRId64, (int)m, s, exp10 - 3);
    if (n < 0 || (size_t)n >= sizeof buf)
        return SS_EPARSE;
    return ss_parse_seconds_ns(buf, (size_t)n, out);
}

int trace__get_ms(const trace__row *row, int col, const char *name, ss_time *out, ss_errbuf *eb)
{
    trace__field f = {0};
    trace__shown sh;
    ss_time t;
    int rc = get_field(row, col, name, &f, eb);
    if (rc)
        return rc;
    if (trace__parse_ms(f.s, f.len, &t))
        return trace__err(row, eb, SS_EPARSE, name, "%s: '%s'",
                          trace__number_problem(f.s, f.len, 1000),
                          trace__show(&sh, f.s, f.len));
    if (t <= 0)
        return trace__err(row, eb, SS_EPARSE, name, "must be > 0, got %s",
                          trace__show(&sh, f.s, f.len));
    *out = t;
    return SS_OK;
}

int trace__get_tenant(const trace__row *row, int col, const char *name, uint16_t *out,
                      ss_errbuf *eb)
{
    trace__field f = {0};
    int rc = get_field(row, col, name, &f, eb);
    if (rc)
        return rc;
    if (f.len > TRACE__MAX_TENANT_NAME)
        return trace__err(row, eb, SS_EPARSE, name, "name longer than %d bytes",
                          TRACE__MAX_TENANT_NAME);
    rc = trace__intern(row->r, f.s, f.len, out);
    if (rc == SS_ENOMEM)
        return trace__err(row, eb, rc, name, "out of memory");
    if (rc)
        return trace__err(row, eb, rc, name, "more than %d distinct tenants", TRACE_MAX_TENANTS);
    return SS_OK;
}
