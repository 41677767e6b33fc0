/* The streaming trace reader: line reading with a TRACE_MAX_LINE limit (CRLF, BOM, blank lines,
 * missing final newline), the format registry and auto-detection, the arrival-order check, the
 * FNV-1a digest, tenant-name interning and the prefix-block buffer. Field parsing lives in the
 * format plug-ins (trace_native.c, trace_azure.c, trace_vidur.c, trace_burstgpt.c,
 * trace_mooncake.c), trace_field.c and trace_json.c; the spread option in trace_spread.c. */
#include "trace/trace_int.h"

#include "core/ss_alloc.h"
#include "core/ss_input.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Tenant names, interned: an array of owned strings plus an open-addressing hash index. */
typedef struct tenant_table {
    char **names;     /* n names, each owned (ss_malloc) */
    size_t n, cap;    /* names used / allocated */
    uint32_t *slots;  /* name index + 1, 0 = empty; n_slots is a power of two */
    uint32_t n_slots; /* slots allocated */
} tenant_table;

struct trace_reader {
    const trace_format_ops *ops; /* the detected or forced format */
    FILE *f;                     /* the input */
    int own_f;                   /* close f in trace_reader_close */
    int started;                 /* the first bytes were read (and checked for gzip) */
    z_stream *z;                 /* inflate state when f is gzip-compressed, else NULL (owned) */
    unsigned char *zbuf;         /* compressed bytes from f, TRACE__CHUNK (owned, gzip only) */
    int z_eof;                   /* f has no more compressed bytes */
    int z_in_member;             /* inside a gzip member: its end has not been seen yet */
    const char *name;            /* file name for messages; stored after priv */
    uint64_t line_no;            /* lines read so far */
    uint64_t n_recs;             /* requests parsed so far (returned, or buffered by spread) */
    uint64_t n_skipped;          /* rows the format dropped (TRACE__SKIP) */
    ss_time prev_ns;             /* arrival of the last request returned */
    uint64_t digest;             /* FNV-1a of the bytes consumed so far */
    int rc;                      /* sticky error code, 0 = none */
    int at_end;                  /* the end of the trace was reported */
    int first_pending;           /* no_header: the first line (in line) is data not yet parsed */
    size_t first_off, first_len; /* where that line starts in line, and its length */
    int spread_on;               /* trace_reader_set_spread(r, 1) was called */
    int sort_on;                 /* trace_reader_set_sort(r, 1) was called */
    trace_rec *sorted;           /* sort_on: every request, by arrival once loaded (owned) */
    uint32_t *sorted_blocks;     /* ... their prefix blocks, concatenated (owned) */
    size_t n_sorted, cap_sorted, next_sorted; /* requests, capacity, served */
    size_t n_sorted_blocks, cap_sorted_blocks;               /* prefix blocks held */
    int sort_loaded;             /* the whole trace is in sorted */
    trace__spread spread;        /* the spread lookahead */
    uint32_t *blocks;            /* prefix-block buffer (trace__blocks), owned; NULL until used */
    ss_errbuf err;               /* sticky error message */
    size_t pos, end;             /* consumed / filled bytes of chunk */
    uint32_t n_cols;             /* header columns; every data row must have as many */
    tenant_table tenants;
    trace__field fields[TRACE__MAX_COLS];
    unsigned char chunk[TRACE__CHUNK];
    char line[TRACE_MAX_LINE + 2]; /* a line, a possible '\r' and a NUL */
    max_align_t priv[];            /* the format's priv_size bytes, then the name */
};

static const trace_format_ops *const trace_formats[] = {
    &trace__fmt_native,
    &trace__fmt_azure,
    &trace__fmt_vidur,
    &trace__fmt_burstgpt,
    &trace__fmt_mooncake,
    NULL,
};

const char *const trace_format_names[] = {"native",   "azure",    "vidur",
                                          "burstgpt", "mooncake", NULL};

/* ====================================================================================== */
/* Errors and line reading                                                                 */
/* ====================================================================================== */

/* Record a sticky "FILE:LINE: field: ..." error and return rc. */
__attribute__((format(printf, 5, 0))) static int vfail(trace_reader *r, int rc, uint64_t line,
                                                        const char *field, const char *fmt,
                                                        va_list ap)
{
    int n = snprintf(r->err.msg, sizeof r->err.msg, "%s:%" PRIu64 ": %s: ", r->name, line, field);
    if (n >= 0 && (size_t)n < sizeof r->err.msg)
        vsnprintf(r->err.msg + n, sizeof r->err.msg - (size_t)n, fmt, ap);
    ss_errbuf_oneline(&r->err);
    r->rc = rc;
    return rc;
}

/* The same for this file's callers (trace__fail for the other files). */
__attribute__((format(printf, 5, 6))) static int fail(trace_reader *r, int rc, uint64_t line,
                                                       const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(r, rc, line, field, fmt, ap);
    va_end(ap);
    return rc;
}

int trace__fail(trace_reader *r, int rc, uint64_t line, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(r, rc, line, field, fmt, ap);
    va_end(ap);
    return rc;
}

/* zlib's allocator: through ss_alloc, so that its memory is counted and can fail in tests. */
static voidpf z_alloc(voidpf opaque, uInt items, uInt size)
{
    (void)opaque;
    return ss_calloc(items, size);
}

static void z_free(voidpf opaque, voidpf p)
{
    (void)opaque;
    ss_free(p);
}

/* The input starts with gzip's magic bytes, already in chunk[0..n): inflate it from now on,
 * the n bytes being the first compressed input. 0, or SS_ENOMEM. */
static int start_gzip(trace_reader *r, size_t n)
{
    r->z = ss_calloc(1, sizeof *r->z);
    r->zbuf = ss_malloc(TRACE__CHUNK);
    if (!r->z || !r->zbuf)
        return fail(r, SS_ENOMEM, 1, "gzip", "out of memory");
    r->z->zalloc = z_alloc;
    r->z->zfree = z_free;
    if (inflateInit2(r->z, 15 + 16) != Z_OK) { /* 16: gzip wrapper only */
        ss_free(r->z); /* inflateEnd must not see it */
        r->z = NULL;
        return fail(r, SS_ENOMEM, 1, "gzip", "out of memory");
    }
    memcpy(r->zbuf, r->chunk, n);
    r->z->next_in = r->zbuf;
    r->z->avail_in = (uInt)n;
    return SS_OK;
}

/* Inflate the next bytes into chunk: 1, 0 at the end of the last gzip member, SS_EIO, or
 * SS_EPARSE for corrupt or truncated data. Members written one after another (cat a.gz b.gz)
 * are read as one stream, as gzip -d does. */
static int fill_gzip(trace_reader *r)
{
    z_stream *z = r->z;
    for (;;) {
        if (!z->avail_in && !r->z_eof) {
            size_t n = fread(r->zbuf, 1, TRACE__CHUNK, r->f);
            if (!n && ferror(r->f))
                return fail(r, SS_EIO, r->line_no + 1, "read", "%s", strerror(errno));
            r->z_eof = n == 0;
            z->next_in = r->zbuf;
            z->avail_in = (uInt)n;
        }
        if (!z->avail_in && r->z_eof)
            return r->z_in_member ? fail(r, SS_EPARSE, r->line_no + 1, "gzip",
                                         "truncated file (the compressed data ends early)")
                                  : 0;
        z->next_out = r->chunk;
        z->avail_out = sizeof r->chunk;
        int zr = inflate(z, Z_NO_FLUSH);
        r->end = sizeof r->chunk - z->avail_out;
        r->z_in_member = zr != Z_STREAM_END;
        if (zr == Z_STREAM_END && inflateReset(z) != Z_OK)
            zr = Z_STREAM_ERROR;
        if (zr == Z_MEM_ERROR)
            return fail(r, SS_ENOMEM, r->line_no + 1, "gzip", "out of memory");
        if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
            return fail(r, SS_EPARSE, r->line_no + 1, "gzip", "corrupt data (%s)",
                        z->msg ? z->msg : "inflate failed");
        if (r->end)
            return 1;
    }
}

/* Make unread bytes available in chunk: 1, 0 at the end of the input, or a negative code
 * (SS_EIO; for gzip input also SS_EPARSE, SS_ENOMEM). gzip-compressed input, recognised by
 * its first two bytes whatever the file is called, is inflated as it is read. */
static int fill(trace_reader *r)
{
    if (r->pos < r->end)
        return 1;
    r->pos = r->end = 0;
    if (r->z)
        return fill_gzip(r);
    size_t n = fread(r->chunk, 1, sizeof r->chunk, r->f);
    if (!r->started && n >= 2 && r->chunk[0] == 0x1f && r->chunk[1] == 0x8b) {
        r->started = 1;
        int rc = start_gzip(r, n);
        return rc ? rc : fill_gzip(r);
    }
    r->started = 1;
    r->end = n;
    if (n)
        return 1;
    if (ferror(r->f))
        return fail(r, SS_EIO, r->line_no + 1, "read", "%s", strerror(errno));
    return 0;
}

/* Copy the next line (without "\n") into r->line. Returns 1 with *len_out set, 0 at the end
 * of the input, or a negative code (line too long, read error). */
static int read_raw_line(trace_reader *r, size_t *len_out)
{
    size_t len = 0;
    int any = 0;
    for (;;) {
        int rc = fill(r);
        if (rc < 0)
            return rc;
        if (rc == 0 && !any)
            return 0;
        if (rc == 0)
            break;
        any = 1;
        const unsigned char *p = r->chunk + r->pos;
        const unsigned char *nl = memchr(p, '\n', r->end - r->pos);
        size_t take = nl ? (size_t)(nl - p) : r->end - r->pos;
        r->digest = ss_fnv1a(r->digest, p, take + (nl != NULL));
        r->pos += take + (nl != NULL);
        /* One byte of slack for the '\r' of a CRLF line end. */
        if (take > TRACE_MAX_LINE + 1 - len)
            return fail(r, SS_EPARSE, r->line_no + 1, "line", "longer than %d bytes",
                        TRACE_MAX_LINE);
        memcpy(r->line + len, p, take);
        len += take;
        if (nl)
            break;
    }
    *len_out = len;
    return 1;
}

/* Next line with its line end and (on line 1) UTF-8 BOM removed. NUL bytes are rejected so
 * every later stage can treat fields as text. 1, 0 at the end, or a negative code. */
static int read_line(trace_reader *r, const char **line_out, size_t *len_out)
{
    size_t len = 0;
    int rc = read_raw_line(r, &len);
    if (rc <= 0)
        return rc;
    r->line_no++;
    if (len && r->line[len - 1] == '\r')
        len--;
    if (len > TRACE_MAX_LINE)
        return fail(r, SS_EPARSE, r->line_no, "line", "longer than %d bytes", TRACE_MAX_LINE);
    r->line[len] = '\0';
    if (memchr(r->line, '\0', len))
        return fail(r, SS_EPARSE, r->line_no, "line", "contains a NUL byte");
    const char *s = r->line;
    if (r->line_no == 1 && len >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3)) {
        s += 3;
        len -= 3;
    }
    *line_out = s;
    *len_out = len;
    return 1;
}

static int is_blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return 0;
    return 1;
}

/* Next line that is not blank: 1, 0 at the end, or a negative code. */
static int read_nonblank(trace_reader *r, const char **line_out, size_t *len_out)
{
    int rc;
    do
        rc = read_line(r, line_out, len_out);
    while (rc == 1 && is_blank(*line_out, *len_out));
    return rc;
}

/* ====================================================================================== */
/* Opening: format lookup, header, detection                                               */
/* ====================================================================================== */

/* The format named name, NULL for "auto" (or a NULL name). SS_ENOTFOUND for unknown names. */
static int find_format(const char *name, const char *file, const trace_format_ops **ops_out,
                       ss_errbuf *eb)
{
    *ops_out = NULL;
    if (!name || !strcmp(name, "auto"))
        return SS_OK;
    for (size_t i = 0; trace_formats[i]; i++) {
        if (!strcmp(name, trace_formats[i]->name)) {
            *ops_out = trace_formats[i];
            return SS_OK;
        }
    }
    char known[128] = "auto";
    for (size_t i = 0; trace_format_names[i]; i++)
        snprintf(known + strlen(known), sizeof known - strlen(known), ", %s",
                 trace_format_names[i]);
    trace__shown sh;
    return ss_err(eb, SS_ENOTFOUND, "%s: format: unknown format '%s' (known: %s)", file,
                  trace__show(&sh, name, strlen(name)), known);
}

/* Allocate a reader whose priv area fits every registered format, with a copy of name. */
static trace_reader *reader_alloc(const char *name)
{
    size_t priv = 0, a = sizeof(max_align_t);
    for (size_t i = 0; trace_formats[i]; i++)
        if (trace_formats[i]->priv_size > priv)
            priv = trace_formats[i]->priv_size;
    priv = (priv + a - 1) / a * a;
    size_t name_len = strlen(name);
    trace_reader *r = ss_calloc(1, sizeof *r + priv + name_len + 1);
    if (!r)
        return NULL;
    char *copy = (char *)r->priv + priv;
    memcpy(copy, name, name_len + 1);
    r->name = copy;
    r->digest = SS_FNV1A_OFFSET;
    return r;
}

static trace__row make_row(trace_reader *r, uint32_t n, const char *text, size_t len)
{
    trace__row row = {.f = r->fields, .n = n, .text = text, .len = len, .file = r->name,
                      .line = r->line_no, .r = r};
    return row;
}

/* The format (of those with or without a header row, per no_header) whose probe scores the
 * first line highest, or NULL when none recognises it. */
static const trace_format_ops *detect(const trace__row *hdr, int no_header)
{
    const trace_format_ops *best = NULL;
    int best_score = 0;
    for (size_t i = 0; trace_formats[i]; i++) {
        if (trace_formats[i]->no_header != no_header)
            continue;
        int s = trace_formats[i]->probe(hdr);
        if (s > best_score) {
            best_score = s;
            best = trace_formats[i];
        }
    }
    return best;
}

static int check_duplicates(trace_reader *r, const trace__row *hdr)
{
    trace__shown sh;
    for (uint32_t i = 0; i < hdr->n; i++)
        for (uint32_t j = 0; j < i; j++)
            if (hdr->f[i].len && hdr->f[i].len == hdr->f[j].len &&
                !memcmp(hdr->f[i].s, hdr->f[j].s, hdr->f[i].len))
                return fail(r, SS_EPARSE, hdr->line, "header", "duplicate column '%s'",
                            trace__show(&sh, hdr->f[i].s, hdr->f[i].len));
    return SS_OK;
}

/* A format without a header row: the first line is data, parsed by the first next(). */
static int open_headerless(trace_reader *r, const trace_format_ops *ops, const char *line,
                           size_t len)
{
    trace__row row = make_row(r, 0, line, len);
    r->ops = ops;
    r->first_pending = 1;
    r->first_off = (size_t)(line - r->line);
    r->first_len = len;
    int rc = ops->open(r->priv, &row, &r->err);
    if (rc)
        r->rc = rc;
    return rc;
}

/* Split the header, pick the format and let it find its columns. */
static int open_csv(trace_reader *r, const trace_format_ops *forced, const char *line,
                    size_t len)
{
    trace__shown sh;
    int rc;
    uint32_t n = trace__split(line, len, r->fields, TRACE__MAX_COLS);
    if (n > TRACE__MAX_COLS)
        return fail(r, SS_EPARSE, r->line_no, "header", "more than %d columns", TRACE__MAX_COLS);
    trace__row hdr = make_row(r, n, line, len);
    if ((rc = check_duplicates(r, &hdr)))
        return rc;
    const trace_format_ops *ops = forced ? forced : detect(&hdr, 0);
    if (!ops)
        return fail(r, SS_EPARSE, r->line_no, "header",
                    "not a known trace header: '%s' (expected native, azure, vidur or burstgpt "
                    "columns, or mooncake JSON lines)",
                    trace__show(&sh, line, len));
    r->ops = ops;
    r->n_cols = n;
    if ((rc = ops->open(r->priv, &hdr, &r->err)))
        r->rc = rc;
    return rc;
}

/* Read the first line and open the forced or detected format on it. */
static int read_header(trace_reader *r, const trace_format_ops *forced)
{
    const char *line;
    size_t len;
    int rc = read_nonblank(r, &line, &len);
    if (rc < 0)
        return rc;
    if (rc == 0)
        return fail(r, SS_EPARSE, 1, forced && forced->no_header ? "trace" : "header",
                    "file is empty");
    trace__row first = make_row(r, 0, line, len);
    const trace_format_ops *ops = forced ? forced : detect(&first, 1);
    if (ops && ops->no_header)
        return open_headerless(r, ops, line, len);
    return open_csv(r, forced, line, len);
}

int trace_reader_open_stream(trace_reader **r_out, FILE *f, const char *name, const char *format,
                             ss_errbuf *eb)
{
    const trace_format_ops *forced;
    if (!r_out || !f || !name)
        return ss_err(eb, SS_EINVAL, "trace_reader_open_stream: NULL argument");
    int rc = find_format(format, name, &forced, eb);
    if (rc)
        return rc;
    trace_reader *r = reader_alloc(name);
    if (!r)
        return ss_err(eb, SS_ENOMEM, "%s: out of memory", name);
    r->f = f;
    if ((rc = read_header(r, forced))) {
        ss_err(eb, rc, "%s", r->err.msg);
        trace_reader_close(&r);
        return rc;
    }
    *r_out = r;
    return SS_OK;
}

int trace_reader_open(trace_reader **r_out, const char *path, const char *format, ss_errbuf *eb)
{
    const trace_format_ops *ops;
    if (!r_out || !path)
        return ss_err(eb, SS_EINVAL, "trace_reader_open: NULL argument");
    int rc = find_format(format, path, &ops, eb); /* before touching the file */
    if (rc)
        return rc;
    /* A trace is read once, in order: a pipe is fine on standard input ("-", /dev/stdin),
     * but any other path must be a regular file (a FIFO would hang the open). */
    int is_stdin = !strcmp(path, "-");
    FILE *f = stdin;
    if (!is_stdin && (rc = ss_input_open(&f, path, SS_INPUT_STDIN, eb)))
        return rc;
    rc = trace_reader_open_stream(r_out, f, is_stdin ? "<stdin>" : path, format, eb);
    if (rc) {
        if (!is_stdin)
            fclose(f);
        return rc;
    }
    (*r_out)->own_f = !is_stdin;
    return SS_OK;
}

/* ====================================================================================== */
/* Reading requests                                                                        */
/* ====================================================================================== */

/* The next data line (the pending first line of a headerless format, or a new non-blank
 * line): 1, 0 at the end (an error when no request came before), or a negative code. */
static int data_line(trace_reader *r, const char **line_out, size_t *len_out)
{
    if (r->first_pending) {
        r->first_pending = 0;
        *line_out = r->line + r->first_off;
        *len_out = r->first_len;
        return 1;
    }
    int rc = read_nonblank(r, line_out, len_out);
    if (rc == 0 && r->n_recs == 0 && r->n_skipped)
        return fail(r, SS_EPARSE, r->line_no + 1, "trace", "no requests (%" PRIu64 " rows skipped)",
                    r->n_skipped);
    if (rc == 0 && r->n_recs == 0)
        return fail(r, SS_EPARSE, r->line_no + 1, "trace", "no requests after the header");
    return rc;
}

/* Parse one data line into *rec: 1, TRACE__SKIP + 1 for a skipped row, or a negative code. */
static int parse_line(trace_reader *r, const char *line, size_t len, trace_rec *rec)
{
    uint32_t n = 0;
    if (!r->ops->no_header) {
        n = trace__split(line, len, r->fields, TRACE__MAX_COLS);
        if (n != r->n_cols)
            return fail(r, SS_EPARSE, r->line_no, "line",
                        "expected %" PRIu32 " fields, got %" PRIu32, r->n_cols, n);
    }
    trace__row row = make_row(r, n, line, len);
    memset(rec, 0, sizeof *rec);
    rec->id = r->n_recs;
    rec->line = r->line_no;
    int rc = r->ops->parse(r->priv, &row, rec, &r->err);
    if (rc < 0)
        return r->rc = rc;
    return rc == TRACE__SKIP ? TRACE__SKIP + 1 : 1;
}

/* Read and parse the next request from the file, passing over skipped rows; check its order
 * unless the reader sorts. 1, 0 at the end, or a negative code. */
static int pull_file(trace_reader *r, trace_rec *out)
{
    const char *line;
    size_t len;
    trace__secs a, b;
    trace_rec rec;
    int rc;
    do {
        if ((rc = data_line(r, &line, &len)) <= 0)
            return rc;
        if ((rc = parse_line(r, line, len, &rec)) < 0)
            return rc;
        r->n_skipped += rc == TRACE__SKIP + 1;
    } while (rc != 1);
    if (!r->sort_on && r->n_recs && rec.arrival_ns < r->prev_ns)
        return fail(r, SS_EPARSE, r->line_no, r->ops->time_field,
                    "goes backwards (%s < %s); " TRACE_UNSORTED_HINT,
                    trace__fmt_time(r->ops, &a, rec.arrival_ns),
                    trace__fmt_time(r->ops, &b, r->prev_ns));
    r->prev_ns = rec.arrival_ns;
    r->n_recs++;
    *out = rec;
    return 1;
}

/* Keep rec (and a copy of its prefix blocks) in the sort buffer. 0 or SS_ENOMEM. */
static int keep_for_sort(trace_reader *r, const trace_rec *rec)
{
    if (ss_grow((void **)&r->sorted, &r->cap_sorted, r->n_sorted + 1, sizeof *r->sorted) ||
        ss_grow((void **)&r->sorted_blocks, &r->cap_sorted_blocks,
                r->n_sorted_blocks + rec->n_prefix_blocks + 1, sizeof *r->sorted_blocks))
        return fail(r, SS_ENOMEM, r->line_no, "sort", "out of memory holding %zu requests",
                    r->n_sorted + 1);
    if (rec->n_prefix_blocks)
        memcpy(r->sorted_blocks + r->n_sorted_blocks, rec->prefix_blocks,
               rec->n_prefix_blocks * sizeof *r->sorted_blocks);
    r->sorted[r->n_sorted] = *rec;
    /* The block buffer may move as it grows: hold each record's offset in it, + 1, in
     * prefix_blocks' place until load_sorted has the whole trace. */
    r->sorted[r->n_sorted++].prefix_blocks = (const uint32_t *)(uintptr_t)(r->n_sorted_blocks + 1);
    r->n_sorted_blocks += rec->n_prefix_blocks;
    return SS_OK;
}

/* Arrival order; requests with equal arrivals keep their order in the file. */
static int cmp_arrival(const void *pa, const void *pb)
{
    const trace_rec *a = pa, *b = pb;
    if (a->arrival_ns != b->arrival_ns)
        return a->arrival_ns < b->arrival_ns ? -1 : 1;
    return (a->line > b->line) - (a->line < b->line);
}

/* Read the whole trace into the sort buffer and sort it. 0 or a negative code. */
static int load_sorted(trace_reader *r)
{
    trace_rec rec;
    int rc;
    while ((rc = pull_file(r, &rec)) == 1)
        if ((rc = keep_for_sort(r, &rec)) < 0)
            return rc;
    if (rc < 0)
        return rc;
    size_t k = 1; /* most traces are in order already: then the sort has nothing to do */
    while (k < r->n_sorted && cmp_arrival(&r->sorted[k - 1], &r->sorted[k]) < 0)
        k++;
    if (k < r->n_sorted)
        qsort(r->sorted, r->n_sorted, sizeof *r->sorted, cmp_arrival);
    /* Formats that rebase times on the first row (Azure) can start below 0 once sorted:
     * rebase on the earliest request instead. */
    ss_time first = r->n_sorted ? r->sorted[0].arrival_ns : 0;
    for (size_t i = 0; i < r->n_sorted; i++) {
        trace_rec *x = &r->sorted[i];
        size_t off = (size_t)(uintptr_t)x->prefix_blocks - 1;
        x->prefix_blocks = x->n_prefix_blocks ? r->sorted_blocks + off : NULL;
        if (first < 0)
            x->arrival_ns -= first;
    }
    r->sort_loaded = 1;
    return SS_OK;
}

/* The next request: from the file, order-checked, or (sort_on) from the sorted trace, read
 * whole on the first call. 1, 0 at the end, or a negative code. */
int trace__pull(trace_reader *r, trace_rec *out)
{
    if (!r->sort_on)
        return pull_file(r, out);
    if (!r->sort_loaded) {
        int rc = load_sorted(r);
        if (rc < 0)
            return rc;
    }
    if (r->next_sorted == r->n_sorted)
        return 0;
    *out = r->sorted[r->next_sorted++];
    return 1;
}

int trace_reader_next(trace_reader *r, trace_rec *out, ss_errbuf *eb)
{
    if (!r || !out)
        return ss_err(eb, SS_EINVAL, "trace_reader_next: NULL argument");
    if (r->rc)
        return ss_err(eb, r->rc, "%s", r->err.msg);
    if (r->at_end)
        return 0;
    int rc = r->spread_on ? trace__spread_next(r, &r->spread, out) : trace__pull(r, out);
    if (rc < 0) {
        r->rc = rc;
        return ss_err(eb, rc, "%s", r->err.msg);
    }
    r->at_end = rc == 0;
    return rc;
}

void trace_reader_close(trace_reader **rp)
{
    if (!rp || !*rp)
        return;
    trace_reader *r = *rp;
    if (r->own_f)
        fclose(r->f);
    if (r->z)
        inflateEnd(r->z);
    ss_free(r->z);
    ss_free(r->zbuf);
    trace__spread_free(&r->spread);
    ss_free(r->blocks);
    ss_free(r->sorted);
    ss_free(r->sorted_blocks);
    for (size_t i = 0; i < r->tenants.n; i++)
        ss_free(r->tenants.names[i]);
    ss_free(r->tenants.names);
    ss_free(r->tenants.slots);
    ss_free(r);
    *rp = NULL;
}

const char *trace_reader_format(const trace_reader *r) { return r->ops->name; }

const trace_format_ops *trace__ops(const trace_reader *r) { return r->ops; }

int trace_reader_set_spread(trace_reader *r, int on)
{
    if (!r || r->n_recs || r->rc || r->at_end)
        return SS_EINVAL;
    r->spread_on = on != 0;
    return SS_OK;
}

int trace_reader_set_sort(trace_reader *r, int on)
{
    if (!r || r->n_recs || r->rc || r->at_end)
        return SS_EINVAL;
    r->sort_on = on != 0;
    return SS_OK;
}

uint64_t trace_reader_n_skipped(const trace_reader *r) { return r->n_skipped; }

uint32_t *trace__blocks(trace_reader *r)
{
    if (!r->blocks)
        r->blocks = ss_malloc(TRACE_MAX_PREFIX_BLOCKS * sizeof *r->blocks);
    return r->blocks;
}

uint64_t trace_reader_digest(const trace_reader *r) { return r->digest; }

/* ====================================================================================== */
/* Tenant names                                                                            */
/* ====================================================================================== */

const char *trace_reader_tenant_name(const trace_reader *r, uint16_t idx)
{
    return idx < r->tenants.n ? r->tenants.names[idx] : NULL;
}

uint32_t trace_reader_n_tenants(const trace_reader *r) { return (uint32_t)r->tenants.n; }

/* The slot holding name s, or the empty slot where it would go. n_slots must be > 0. */
static uint32_t *tenant_slot(const tenant_table *t, uint32_t *slots, uint32_t n_slots,
                             const char *s, size_t len)
{
    uint32_t mask = n_slots - 1;
    uint32_t i = (uint32_t)ss_fnv1a(SS_FNV1A_OFFSET, s, len) & mask;
    while (slots[i]) {
        const char *nm = t->names[slots[i] - 1];
        if (strlen(nm) == len && !memcmp(nm, s, len))
            break;
        i = (i + 1) & mask;
    }
    return &slots[i];
}

/* Rebuild the hash index with twice the slots. 0 or SS_ENOMEM (index unchanged). */
static int tenant_rehash(tenant_table *t)
{
    uint32_t n_slots = t->n_slots ? t->n_slots * 2 : 16;
    uint32_t *slots = ss_calloc(n_slots, sizeof *slots);
    if (!slots)
        return SS_ENOMEM;
    for (size_t i = 0; i < t->n; i++)
        *tenant_slot(t, slots, n_slots, t->names[i], strlen(t->names[i])) = (uint32_t)i + 1;
    ss_free(t->slots);
    t->slots = slots;
    t->n_slots = n_slots;
    return SS_OK;
}

int trace__intern(trace_reader *r, const char *s, size_t len, uint16_t *idx_out)
{
    tenant_table *t = &r->tenants;
    if (t->n_slots) {
        uint32_t *slot = tenant_slot(t, t->slots, t->n_slots, s, len);
        if (*slot) {
            *idx_out = (uint16_t)(*slot - 1);
            return SS_OK;
        }
    }
    if (t->n >= TRACE_MAX_TENANTS)
        return SS_EPARSE;
    void *names = t->names;
    if (ss_grow(&names, &t->cap, t->n + 1, sizeof *t->names))
        return SS_ENOMEM;
    t->names = names;
    if ((t->n + 1) * 2 > t->n_slots && tenant_rehash(t))
        return SS_ENOMEM;
    char *copy = ss_strndup(s, len);
    if (!copy)
        return SS_ENOMEM;
    t->names[t->n] = copy;
    *tenant_slot(t, t->slots, t->n_slots, s, len) = (uint32_t)t->n + 1;
    *idx_out = (uint16_t)t->n++;
    return SS_OK;
}
