/* Private to src/trace: the format plug-in interface (trace_format_ops), the row view the
 * plug-ins parse, and the helpers they share (field parsing with "FILE:LINE: field: ..."
 * messages, tenant interning). Not for other modules: they use trace.h only. */
#ifndef SS_TRACE_TRACE_INT_H
#define SS_TRACE_TRACE_INT_H

#include "trace.h"

#include <stddef.h>
#include <stdint.h>

#define TRACE__MAX_COLS 64          /* columns per header; data rows must match the header */
#define TRACE__MAX_TENANT_NAME 255  /* bytes per tenant name */
#define TRACE__CHUNK 65536          /* bytes per fread */

/* One CSV field: a view into the reader's line buffer, blanks trimmed, not NUL-terminated. */
typedef struct trace__field {
    const char *s; /* borrowed from the line buffer; valid until the next line is read */
    size_t len;    /* bytes */
} trace__field;

/* A split line handed to a format plug-in: the header row to open(), a data row to parse(). */
typedef struct trace__row {
    const trace__field *f; /* n fields */
    uint32_t n;            /* number of fields */
    const char *file;      /* name for messages (borrowed) */
    uint64_t line;         /* 1-based line number */
    trace_reader *r;       /* the reader, for tenant interning */
} trace__row;

/* A trace format plug-in. The reader allocates priv_size zeroed bytes per instance. */
typedef struct trace_format_ops {
    const char *name;       /* "native", "azure", "vidur": used by --format */
    size_t priv_size;       /* bytes of per-reader state */
    const char *time_field; /* column named in "goes backwards" messages */
    /* Required. Score how well a header row matches this format: 0 = not at all; the
     * highest score wins auto-detection. Must not fail. */
    int (*probe)(const trace__row *hdr);
    /* Required. Find the columns in the header and remember them in priv. 0, or SS_EPARSE
     * ("FILE:LINE: header: ...") / SS_ENOMEM with eb set. */
    int (*open)(void *priv, const trace__row *hdr, ss_errbuf *eb);
    /* Required. Fill *rec (zeroed by the caller, line set) from one data row whose field
     * count equals the header's. 0, or SS_EPARSE / SS_ENOMEM with eb set. */
    int (*parse)(void *priv, const trace__row *row, trace_rec *rec, ss_errbuf *eb);
} trace_format_ops;

extern const trace_format_ops trace__fmt_native;
extern const trace_format_ops trace__fmt_azure;
extern const trace_format_ops trace__fmt_vidur;

/* Format "FILE:LINE: field: <fmt>" into eb and return rc. */
int trace__err(const trace__row *row, ss_errbuf *eb, int rc, const char *field, const char *fmt,
               ...) __attribute__((format(printf, 5, 6)));

/* Printable, truncated copy of a field for messages: bytes outside printable ASCII become
 * \xNN and long values end in "...". */
typedef struct trace__shown {
    char s[96];
} trace__shown;
const char *trace__show(trace__shown *buf, const char *s, size_t len);

/* Seconds with up to 9 decimals and no trailing zeros ("3.5", "-0.25"), for messages. */
typedef struct trace__secs {
    char s[32];
} trace__secs;
const char *trace__fmt_secs(trace__secs *buf, ss_time ns);

/* Index of the column named name in the header, or -1. */
int trace__col(const trace__row *hdr, const char *name);
/* Like trace__col, but a missing column is "header: missing column NAME" (SS_EPARSE). */
int trace__need_col(const trace__row *hdr, const char *name, int *idx_out, ss_errbuf *eb);

/* Field parsers. col is a column index into row; name is the column name used in messages.
 * Each returns 0 or SS_EPARSE with "FILE:LINE: name: what is wrong" in eb; *out is written
 * only on success. An empty field is an error ("empty field"). */
int trace__get_int(const trace__row *row, int col, const char *name, int64_t lo, int64_t hi,
                   int64_t *out, ss_errbuf *eb);
int trace__get_u64(const trace__row *row, int col, const char *name, uint64_t *out,
                   ss_errbuf *eb);
/* A token count in [1, TRACE_MAX_TOKENS]. */
int trace__get_tokens(const trace__row *row, int col, const char *name, uint32_t *out,
                      ss_errbuf *eb);
/* Decimal seconds (exponent allowed) converted exactly to ns; must be >= 0. */
int trace__get_secs(const trace__row *row, int col, const char *name, ss_time *out,
                    ss_errbuf *eb);
/* Decimal milliseconds converted exactly to ns; must be > 0. */
int trace__get_ms(const trace__row *row, int col, const char *name, ss_time *out,
                  ss_errbuf *eb);

/* Intern a tenant name (1..TRACE__MAX_TENANT_NAME bytes, no NUL) and return its index.
 * 0, SS_ENOMEM, or SS_EPARSE when TRACE_MAX_TENANTS names are already known; the table is
 * unchanged on failure. Messages are the caller's to write. */
int trace__intern(trace_reader *r, const char *s, size_t len, uint16_t *idx_out);

/* Split line[0..len) at commas into at most cap fields (blanks trimmed); returns the total
 * number of fields, which may exceed cap (the extra ones are not stored). */
uint32_t trace__split(const char *line, size_t len, trace__field *f, uint32_t cap);

/* 64-bit FNV-1a step over n bytes. */
uint64_t trace__fnv1a(uint64_t h, const void *p, size_t n);
#define TRACE__FNV_OFFSET UINT64_C(0xcbf29ce484222325)

#endif
