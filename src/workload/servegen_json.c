/* The ServeGen dataset file (chunk-N-dataset.json, or .json.gz): one JSON object keyed by
 * window timestamp whose values map field names to Python dict literal strings
 * "{value: probability, ...}". Read as a stream through zlib (which also reads plain files)
 * with a strict JSON lexer, window by window, so that only the windows in use are held in
 * memory, never the whole file. Also the PMF literal parser and the inverse-CDF sampler.
 * Not for the trace CSV or request generation (servegen.c). */
#include "workload/wl_int.h"

#include "core/ss_alloc.h"
#include "core/ss_input.h"
#include "core/ss_parse.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define SG_CHUNK 65536

struct wl__sg_dataset {
    gzFile gz;            /* the file */
    char *path;           /* for messages, owned */
    uint64_t line;        /* 1-based line of the next byte */
    uint64_t digest;      /* FNV-1a of the decompressed bytes consumed */
    int64_t prev_ts;      /* last window key (-1 before the first) */
    int n_windows;        /* keys read so far */
    int done;             /* the closing '}' was read */
    int rc;               /* sticky error */
    ss_errbuf err;        /* sticky message */
    char *str;            /* the last string read, NUL-terminated, owned */
    size_t str_len, str_cap;
    size_t pos, len;      /* consumed / filled bytes of buf */
    unsigned char buf[SG_CHUNK];
};

/* ====================================================================================== */
/* Byte input and JSON lexing                                                              */
/* ====================================================================================== */

static int ds_err(wl__sg_dataset *d, ss_errbuf *eb, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* "PATH:LINE: what" into eb, also kept as the sticky error. */
static int ds_err(wl__sg_dataset *d, ss_errbuf *eb, int rc, const char *fmt, ...)
{
    int n = snprintf(d->err.msg, sizeof d->err.msg, "%s:%" PRIu64 ": ", d->path, d->line);
    if (n >= 0 && (size_t)n < sizeof d->err.msg) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->err.msg + n, sizeof d->err.msg - (size_t)n, fmt, ap);
        va_end(ap);
    }
    ss_errbuf_oneline(&d->err); /* a JSON string may decode to a line break */
    d->rc = rc;
    if (eb)
        *eb = d->err;
    return rc;
}

/* Refill the buffer: 1 when bytes are available, 0 at the end of the file, <0 on error. */
static int refill(wl__sg_dataset *d, ss_errbuf *eb)
{
    if (d->pos < d->len)
        return 1;
    int n = gzread(d->gz, d->buf, sizeof d->buf), zerr = Z_OK;
    const char *m = n <= 0 ? gzerror(d->gz, &zerr) : NULL;
    /* A truncated gzip stream ends with 0 bytes and Z_BUF_ERROR, not with -1. */
    if (n < 0 || zerr != Z_OK)
        return ds_err(d, eb, zerr == Z_MEM_ERROR ? SS_ENOMEM : SS_EIO, "read error: %s",
                      zerr == Z_ERRNO ? strerror(errno) : m);
    d->digest = ss_fnv1a(d->digest, d->buf, (size_t)n);
    d->pos = 0;
    d->len = (size_t)n;
    return n > 0;
}

/* The next byte after blanks, not consumed (0..255), or -1 at the end of the file or on an
 * error; *rc gets the error (it is left alone otherwise). */
static int peek(wl__sg_dataset *d, int *rc, ss_errbuf *eb)
{
    for (;;) {
        int r = refill(d, eb);
        if (r <= 0) {
            *rc = r;
            return -1;
        }
        unsigned char c = d->buf[d->pos];
        if (c != ' ' && c != '\t' && c != '\r' && c != '\n')
            return c;
        d->line += c == '\n';
        d->pos++;
    }
}

/* Consume c after blanks, else "expected WHAT". */
static int expect(wl__sg_dataset *d, char c, const char *what, ss_errbuf *eb)
{
    int rc = 0;
    int got = peek(d, &rc, eb);
    if (rc < 0)
        return rc;
    if (got != (unsigned char)c)
        return ds_err(d, eb, SS_EPARSE, "json: expected %s", what);
    d->pos++;
    return SS_OK;
}

static int str_put(wl__sg_dataset *d, unsigned char c, ss_errbuf *eb)
{
    if (d->str_len + 1 >= d->str_cap) {
        if (d->str_cap >= WL__SG_MAX_STRING)
            return ds_err(d, eb, SS_EPARSE, "json: string longer than %u bytes",
                          WL__SG_MAX_STRING);
        if (ss_grow((void **)&d->str, &d->str_cap, d->str_len + 2, 1))
            return ds_err(d, eb, SS_ENOMEM, "out of memory");
    }
    d->str[d->str_len++] = (char)c;
    return SS_OK;
}

static int hex4(wl__sg_dataset *d, unsigned *v, ss_errbuf *eb)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        int r = refill(d, eb);
        if (r < 0)
            return r;
        int c = r ? d->buf[d->pos] : -1;
        int h = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (h < 0)
            return ds_err(d, eb, SS_EPARSE, "json: bad \\u escape in a string");
        *v = *v * 16 + (unsigned)h;
        d->pos++;
    }
    return SS_OK;
}

/* After a backslash: one escape into *c (characters above 0x7f become 0x01). */
static int escape(wl__sg_dataset *d, unsigned char *c, ss_errbuf *eb)
{
    static const char simple[] = "\"\\/bfnrt", value[] = "\"\\/\b\f\n\r\t";
    int r = refill(d, eb);
    if (r <= 0)
        return r < 0 ? r : ds_err(d, eb, SS_EPARSE, "json: unterminated string");
    unsigned char e = d->buf[d->pos++];
    const char *hit = e ? strchr(simple, e) : NULL;
    if (hit) {
        *c = (unsigned char)value[hit - simple];
        return SS_OK;
    }
    if (e != 'u')
        return ds_err(d, eb, SS_EPARSE, "json: bad escape in a string");
    unsigned v;
    int rc = hex4(d, &v, eb);
    *c = v < 0x80 ? (unsigned char)v : 0x01;
    return rc;
}

/* A string at the cursor into d->str (decoded, NUL-terminated, d->str_len bytes). */
static int read_string(wl__sg_dataset *d, const char *what, ss_errbuf *eb)
{
    int rc = expect(d, '"', what, eb);
    d->str_len = 0;
    while (rc == SS_OK) {
        int r = refill(d, eb);
        if (r <= 0)
            return r < 0 ? r : ds_err(d, eb, SS_EPARSE, "json: unterminated string");
        unsigned char c = d->buf[d->pos++];
        if (c == '"')
            break;
        if (c < 0x20)
            return ds_err(d, eb, SS_EPARSE, "json: control character in a string");
        if (c == '\\')
            rc = escape(d, &c, eb);
        if (rc == SS_OK)
            rc = str_put(d, c, eb);
    }
    if (rc == SS_OK && !d->str)
        rc = str_put(d, 0, eb), d->str_len = 0;
    if (rc == SS_OK)
        d->str[d->str_len] = '\0';
    return rc;
}

/* After a member: ',' (returns 1) or the closing character (returns 0). */
static int member_end(wl__sg_dataset *d, char close, ss_errbuf *eb)
{
    int rc = 0;
    int c = peek(d, &rc, eb);
    if (rc < 0)
        return rc;
    if (c != ',' && c != (unsigned char)close)
        return ds_err(d, eb, SS_EPARSE, "json: expected ',' or '%c'", close);
    d->pos++;
    return c == ',';
}

/* ====================================================================================== */
/* PMF literals                                                                            */
/* ====================================================================================== */

typedef struct pmf_pair {
    uint32_t v; /* token count */
    double p;   /* probability */
} pmf_pair;

static const char *skip_blank(const char *s, const char *end)
{
    while (s < end && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r'))
        s++;
    return s;
}

/* Length of s[0..end) to show in a message: at most 20 bytes. */
static int shown(const char *s, const char *end) { return end - s > 20 ? 20 : (int)(end - s); }

static int all_digits(const char *s, const char *end)
{
    for (; s < end; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

/* A number token [-+0-9.eE]+ at s (strict: no inf, nan or hex). */
static const char *number_end(const char *s, const char *end)
{
    while (s < end && (strchr("0123456789.eE+-", *s) && *s))
        s++;
    return s;
}

/* One "key: probability" entry at *sp. */
static int parse_entry(const char **sp, const char *end, int tokens, pmf_pair *out,
                       ss_errbuf *eb)
{
    const char *s = *sp, *k_end = number_end(s, end);
    double key, p;
    if (k_end == s || ss_parse_double(s, (size_t)(k_end - s), &key))
        return ss_err(eb, SS_EPARSE, "expected a number as key at '%.*s'", shown(s, end), s);
    if (tokens && (!all_digits(s, k_end) || key > TRACE_MAX_TOKENS))
        return ss_err(eb, SS_EPARSE, "key '%.*s' is not a token count in 0..%d",
                      shown(s, k_end), s, TRACE_MAX_TOKENS);
    s = skip_blank(k_end, end);
    if (s >= end || *s != ':')
        return ss_err(eb, SS_EPARSE, "expected ':' after key '%.*s'", shown(*sp, k_end), *sp);
    s = skip_blank(s + 1, end);
    const char *p_end = number_end(s, end);
    if (p_end == s || ss_parse_double(s, (size_t)(p_end - s), &p) || !(p >= 0))
        return ss_err(eb, SS_EPARSE, "probability '%.*s' is not a number >= 0",
                      shown(s, p_end), s);
    out->v = tokens ? (uint32_t)key : 0;
    out->p = p;
    *sp = p_end;
    return SS_OK;
}

static int pair_cmp(const void *a, const void *b)
{
    const pmf_pair *x = a, *y = b;
    return (x->v > y->v) - (x->v < y->v);
}

/* Sort pairs by value, reject duplicates, and fill p from the non-zero ones. */
static int pmf_fill(wl__pmf *p, pmf_pair *pairs, uint32_t n, ss_errbuf *eb)
{
    int sorted = 1;
    for (uint32_t i = 1; i < n && sorted; i++)
        sorted = pairs[i].v > pairs[i - 1].v;
    if (!sorted)
        qsort(pairs, n, sizeof *pairs, pair_cmp);
    for (uint32_t i = 1; i < n; i++)
        if (pairs[i].v == pairs[i - 1].v)
            return ss_err(eb, SS_EPARSE, "token count %u appears twice", pairs[i].v);
    if (n > p->cap) {
        uint32_t *v = ss_realloc(p->val, (size_t)n * sizeof *v);
        if (v)
            p->val = v;
        double *c = v ? ss_realloc(p->cum, (size_t)n * sizeof *c) : NULL;
        if (!c)
            return ss_err(eb, SS_ENOMEM, "out of memory");
        p->cum = c;
        p->cap = n;
    }
    double acc = 0;
    p->n = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (pairs[i].p <= 0)
            continue;
        acc += pairs[i].p;
        p->val[p->n] = pairs[i].v;
        p->cum[p->n++] = acc;
    }
    return SS_OK;
}

/* Grow the pair array to hold need entries. */
static int pairs_grow(pmf_pair **pairs, size_t *cap, size_t need, ss_errbuf *eb)
{
    if (need <= *cap)
        return SS_OK;
    if (need > (size_t)TRACE_MAX_TOKENS + 1)
        return ss_err(eb, SS_EPARSE, "more than %d entries", TRACE_MAX_TOKENS + 1);
    return ss_grow((void **)pairs, cap, need, sizeof **pairs)
               ? ss_err(eb, SS_ENOMEM, "out of memory")
               : SS_OK;
}

/* The entries between the braces of a dict literal into *pairs; *n_out entries, *sum. */
static int parse_entries(const char *s, const char *end, int tokens, pmf_pair **pairs,
                         size_t *cap, uint32_t *n_out, double *sum, ss_errbuf *eb)
{
    uint32_t n = 0;
    *sum = 0;
    for (;;) {
        s = skip_blank(s, end);
        if (s >= end)
            return ss_err(eb, SS_EPARSE, "missing the closing '}'");
        if (*s == '}')
            break;
        pmf_pair e;
        int rc = parse_entry(&s, end, tokens, &e, eb);
        if (rc == SS_OK && tokens)
            rc = pairs_grow(pairs, cap, (size_t)n + 1, eb);
        if (rc)
            return rc;
        if (tokens)
            (*pairs)[n] = e;
        n++;
        *sum += e.p;
        s = skip_blank(s, end);
        if (s < end && *s == ',')
            s++; /* a trailing comma before '}' is valid Python */
        else if (s >= end || *s != '}')
            return ss_err(eb, SS_EPARSE, "expected ',' or '}' at '%.*s'", shown(s, end), s);
    }
    if (skip_blank(s + 1, end) != end)
        return ss_err(eb, SS_EPARSE, "characters after the closing '}'");
    *n_out = n;
    return SS_OK;
}

int wl__sg_pmf_parse(wl__pmf *p, const char *s, size_t len, int tokens, int *empty,
                     ss_errbuf *eb)
{
    const char *end = s + len;
    s = skip_blank(s, end);
    if (s >= end || *s != '{')
        return ss_err(eb, SS_EPARSE, "not a dict literal '{value: probability, ...}'");
    pmf_pair *pairs = NULL;
    size_t cap = 0;
    uint32_t n = 0;
    double sum = 0;
    int rc = parse_entries(s + 1, end, tokens && p, &pairs, &cap, &n, &sum, eb);
    if (rc == SS_OK && n > 0 && !(fabs(sum - 1.0) <= 1e-6))
        rc = ss_err(eb, SS_EPARSE, "probabilities sum to %.9g, not 1", sum);
    if (rc == SS_OK && tokens && p)
        rc = pmf_fill(p, pairs, n, eb);
    ss_free(pairs);
    if (rc == SS_OK)
        *empty = n == 0;
    return rc;
}

uint32_t wl__pmf_sample(const wl__pmf *p, double u)
{
    if (p->n == 0)
        return 0;
    double x = u * p->cum[p->n - 1];
    uint32_t lo = 0, hi = p->n - 1; /* first i with cum[i] > x; the last when none */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (p->cum[mid] > x)
            hi = mid;
        else
            lo = mid + 1;
    }
    return p->val[lo];
}

/* ====================================================================================== */
/* Windows                                                                                 */
/* ====================================================================================== */

int wl__sg_dataset_open(wl__sg_dataset **d_out, const char *path, ss_errbuf *eb)
{
    wl__sg_dataset *d = ss_calloc(1, sizeof *d);
    char *p = d ? ss_strdup(path) : NULL;
    if (!p) {
        ss_free(d);
        return ss_err(eb, SS_ENOMEM, "%s: out of memory", path);
    }
    d->path = p;
    d->line = 1;
    d->digest = SS_FNV1A_OFFSET;
    d->prev_ts = -1;
    int fd = -1;
    int rc = ss_input_open_fd(&fd, path, 0, eb);
    if (rc == SS_EIO && errno == ENOENT)
        rc = SS_ENOTFOUND;
    if (rc == SS_OK && !(d->gz = gzdopen(fd, "rb"))) {
        close(fd);
        rc = ss_err(eb, SS_ENOMEM, "%s: cannot open: out of memory", path);
    }
    if (rc == SS_OK && (rc = expect(d, '{', "'{' (a dataset is one JSON object)", eb)) == SS_OK) {
        *d_out = d;
        return SS_OK;
    }
    wl__sg_dataset_close(&d);
    return rc;
}

void wl__sg_dataset_close(wl__sg_dataset **d)
{
    if (!d || !*d)
        return;
    if ((*d)->gz)
        gzclose((*d)->gz);
    ss_free((*d)->str);
    ss_free((*d)->path);
    ss_free(*d);
    *d = NULL;
}

uint64_t wl__sg_dataset_digest(const wl__sg_dataset *d) { return d->digest; }

void wl__sg_window_free(wl__sg_window *w)
{
    ss_free(w->input.val);
    ss_free(w->input.cum);
    ss_free(w->output.val);
    ss_free(w->output.cum);
    memset(w, 0, sizeof *w);
}

/* The window key in d->str: a whole number of seconds greater than the previous key. */
static int window_key(wl__sg_dataset *d, int64_t *ts, ss_errbuf *eb)
{
    if (ss_parse_i64(d->str, d->str_len, ts) || *ts < 0 || *ts > INT64_C(9000000000))
        return ds_err(d, eb, SS_EPARSE, "window key '%.40s' is not a timestamp in seconds",
                      d->str);
    if (*ts <= d->prev_ts)
        return ds_err(d, eb, SS_EPARSE, "window %" PRId64 " after window %" PRId64
                      " (keys must increase)", *ts, d->prev_ts);
    d->prev_ts = *ts;
    return SS_OK;
}

/* One "field": "literal" member of a window; sets the bits of *seen (1 input, 2 output)
 * and *empty. */
static int window_field(wl__sg_dataset *d, wl__sg_window *w, int *seen, int *empty,
                        ss_errbuf *eb)
{
    char name[32];
    int rc = read_string(d, "a field name", eb);
    if (rc == SS_OK) {
        snprintf(name, sizeof name, "%s", d->str);
        rc = expect(d, ':', "':' after a field name", eb);
    }
    if (rc == SS_OK)
        rc = read_string(d, "a string (a PMF literal) as field value", eb);
    if (rc)
        return rc;
    int bit = !strcmp(name, "input_tokens") ? 1 : !strcmp(name, "output_tokens") ? 2 : 0;
    wl__pmf *p = bit == 1 ? &w->input : bit == 2 ? &w->output : NULL;
    int e = 0;
    ss_errbuf sub = {""};
    rc = wl__sg_pmf_parse(p, d->str, d->str_len, bit != 0, &e, &sub);
    if (rc)
        return ds_err(d, eb, rc, "window %" PRId64 ": %s: %s", w->ts, name, sub.msg);
    if (*seen & bit)
        return ds_err(d, eb, SS_EPARSE, "window %" PRId64 ": %s appears twice", w->ts, name);
    *seen |= bit;
    *empty |= e;
    return SS_OK;
}

/* The value of one window key: an object of fields. *skip when some field is "{}". */
static int window_body(wl__sg_dataset *d, wl__sg_window *w, int *skip, ss_errbuf *eb)
{
    int seen = 0, empty = 0, rc = expect(d, '{', "'{' (a window is an object of fields)", eb);
    if (rc)
        return rc;
    int c = peek(d, &rc, eb);
    if (rc < 0)
        return rc;
    if (c == '}')
        d->pos++;
    else
        while ((rc = window_field(d, w, &seen, &empty, eb)) == SS_OK &&
               (rc = member_end(d, '}', eb)) == 1)
            ;
    if (rc < 0)
        return rc;
    *skip = empty || seen == 0;
    if (!*skip && seen != 3)
        return ds_err(d, eb, SS_EPARSE, "window %" PRId64 ": no %s field (only language and "
                      "reason clients are supported)", w->ts,
                      seen & 1 ? "output_tokens" : "input_tokens");
    return SS_OK;
}

/* After the closing '}' only blanks may follow. */
static int object_end(wl__sg_dataset *d, ss_errbuf *eb)
{
    int rc = 0;
    d->done = 1;
    if (peek(d, &rc, eb) >= 0)
        return ds_err(d, eb, SS_EPARSE, "json: characters after the dataset object");
    return rc;
}

/* Before a window key: consume the ',' after the previous window, or the closing '}' (then
 * *end is set). */
static int before_key(wl__sg_dataset *d, int *end, ss_errbuf *eb)
{
    int rc = 0;
    *end = 0;
    if (d->n_windows) {
        rc = member_end(d, '}', eb);
        *end = rc == 0;
        return rc < 0 ? rc : SS_OK;
    }
    int c = peek(d, &rc, eb);
    if (rc < 0)
        return rc;
    if (c < 0)
        return ds_err(d, eb, SS_EPARSE, "json: unexpected end of file");
    *end = c == '}';
    d->pos += *end;
    return SS_OK;
}

int wl__sg_dataset_next(wl__sg_dataset *d, wl__sg_window *w, ss_errbuf *eb)
{
    if (d->rc) {
        if (eb)
            *eb = d->err;
        return d->rc;
    }
    while (!d->done) {
        int64_t ts = 0;
        int end = 0, skip = 0, rc = before_key(d, &end, eb);
        if (rc == SS_OK && end)
            return object_end(d, eb);
        if (rc || (rc = read_string(d, "a window key", eb)) || (rc = window_key(d, &ts, eb)) ||
            (rc = expect(d, ':', "':' after a key", eb)))
            return rc;
        d->n_windows++;
        w->ts = ts;
        if ((rc = window_body(d, w, &skip, eb)))
            return rc;
        if (!skip)
            return 1;
    }
    return 0;
}
