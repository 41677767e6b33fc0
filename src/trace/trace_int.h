/* Private to src/trace: the format plug-in interface (trace_format_ops), the row view the
 * plug-ins parse, and the helpers they share (field parsing with "FILE:LINE: field: ..."
 * messages, tenant interning, a JSON cursor for the JSONL formats, the spread lookahead).
 * Not for other modules: they use trace.h only. */
#ifndef SS_TRACE_TRACE_INT_H
#define SS_TRACE_TRACE_INT_H

#include "core/ss_rng.h"
#include "core/ss_hash.h"
#include "trace/trace.h"

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

/* A split line handed to a format plug-in: the header row to open(), a data row to parse().
 * For formats without a header (no_header) the line is not split: n is 0 and text holds it. */
typedef struct trace__row {
    const trace__field *f; /* n fields */
    uint32_t n;            /* number of fields */
    const char *text;      /* the whole line, line end removed (borrowed; NUL-terminated) */
    size_t len;            /* bytes in text */
    const char *file;      /* name for messages (borrowed) */
    uint64_t line;         /* 1-based line number */
    trace_reader *r;       /* the reader, for tenant interning */
} trace__row;

/* parse() result: drop this row and count it in trace_reader_n_skipped. */
#define TRACE__SKIP 1

/* A trace format plug-in. The reader allocates priv_size zeroed bytes per instance. */
typedef struct trace_format_ops {
    const char *name;       /* "native", "azure", ...: used by --format */
    size_t priv_size;       /* bytes of per-reader state */
    const char *time_field; /* column or key named in "goes backwards" messages */
    int time_in_ms;         /* 1: show times in those messages in ms, 0: in seconds */
    /* 1: no header row (JSONL): line 1 is data, and every row reaches probe(), open() (the
     * first line) and parse() unsplit, in row->text. 0: a CSV header row. */
    int no_header;
    /* Required. Score how well the first line (a split header, or the unsplit line for
     * no_header formats, which are asked first) matches this format: 0 = not at all; the
     * highest score wins auto-detection. Must not fail. */
    int (*probe)(const trace__row *hdr);
    /* Required. Find the columns in the header and remember them in priv. 0, or SS_EPARSE
     * ("FILE:LINE: header: ...") / SS_ENOMEM with eb set. */
    int (*open)(void *priv, const trace__row *hdr, ss_errbuf *eb);
    /* Required. Fill *rec (zeroed by the caller, id and line set) from one data row (whose
     * field count equals the header's, for CSV formats). 0, TRACE__SKIP, or SS_EPARSE /
     * SS_ENOMEM with eb set. */
    int (*parse)(void *priv, const trace__row *row, trace_rec *rec, ss_errbuf *eb);
} trace_format_ops;

extern const trace_format_ops trace__fmt_native;
extern const trace_format_ops trace__fmt_azure;
extern const trace_format_ops trace__fmt_vidur;
extern const trace_format_ops trace__fmt_burstgpt;
extern const trace_format_ops trace__fmt_mooncake;

/* A request's prefix-block ids must not name more blocks than its prompt fills
 * (ceil(prompt / TRACE_PREFIX_BLOCK_TOKENS)): SS_EPARSE "FILE:LINE: hash_ids: ..." otherwise.
 * field names the prompt's field in the message ("prompt_tokens", "input_length"). */
int trace__check_blocks(const trace__row *row, const trace_rec *rec, const char *field,
                        ss_errbuf *eb);
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
/* The same in milliseconds, up to 6 decimals ("1003", "0.5"). */
const char *trace__fmt_ms(trace__secs *buf, ss_time ns);
/* ns in the unit of the format's time field (ms when ops->time_in_ms, else seconds). */
const char *trace__fmt_time(const trace_format_ops *ops, trace__secs *buf, ss_time ns);

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
/* A tenant name (1..TRACE__MAX_TENANT_NAME bytes), interned: "empty field", "name longer
 * than ...", "more than ... distinct tenants" (SS_EPARSE) or "out of memory" (SS_ENOMEM). */
int trace__get_tenant(const trace__row *row, int col, const char *name, uint16_t *out,
                      ss_errbuf *eb);
/* Decimal milliseconds s[0..len) (sign and exponent allowed) to ns, exactly when the result
 * has at most 9 decimals of a second. 0 or SS_EPARSE; no message. */
int trace__parse_ms(const char *s, size_t len, ss_time *out);

/* Intern a tenant name (1..TRACE__MAX_TENANT_NAME bytes, no NUL) and return its index.
 * 0, SS_ENOMEM, or SS_EPARSE when TRACE_MAX_TENANTS names are already known; the table is
 * unchanged on failure. Messages are the caller's to write. */
int trace__intern(trace_reader *r, const char *s, size_t len, uint16_t *idx_out);

/* The reader's prefix-block buffer (TRACE_MAX_PREFIX_BLOCKS entries), allocated on the first
 * call and freed by trace_reader_close; NULL when out of memory. For no_header formats'
 * open(), so that reading allocates nothing. */
uint32_t *trace__blocks(trace_reader *r);

/* Split line[0..len) at commas into at most cap fields (blanks trimmed); returns the total
 * number of fields, which may exceed cap (the extra ones are not stored). */
uint32_t trace__split(const char *line, size_t len, trace__field *f, uint32_t cap);

/* ---- JSON (trace_json.c) -------------------------------------------------------------- */

#define TRACE__JSON_MAX_DEPTH 64 /* nesting of arrays and objects in one value */

/* A cursor over one line of JSON. Syntax errors are "FILE:LINE: json: what (column N)". */
typedef struct trace__json {
    const trace__row *row; /* the line (row->text) and the names for messages; borrowed */
    size_t pos;            /* next byte to read */
    ss_errbuf *eb;         /* where messages go */
} trace__json;

/* The next byte after blanks (space, tab, CR, LF), or -1 at the end of the line. */
int trace__json_peek(trace__json *j);
/* Consume c after blanks, else "expected WHAT" (SS_EPARSE). */
int trace__json_expect(trace__json *j, char c, const char *what);
/* An object key (a string) into key[0..cap), decoded; *len_out is its decoded length, which
 * may exceed cap (then key holds a prefix). Bytes >= 0x80 and \u escapes above 0x7f become
 * 0x01 so such keys match no ASCII name. 0 or SS_EPARSE. */
int trace__json_key(trace__json *j, char *key, size_t cap, size_t *len_out);
/* Skip one value of any type (checked for syntax, nesting at most TRACE__JSON_MAX_DEPTH) and
 * return its bytes in *span. 0 or SS_EPARSE. */
int trace__json_value(trace__json *j, trace__field *span);
/* Blanks and then the end of the line, else "trailing characters" (SS_EPARSE). */
int trace__json_end(trace__json *j);
/* Format "FILE:LINE: json: <what> (column N)" for the cursor position; returns SS_EPARSE. */
int trace__json_err(trace__json *j, const char *what);

/* ---- spread lookahead (trace_spread.c) --------------------------------------------------- */

/* The group of requests sharing one arrival time, buffered for trace_reader_set_spread. */
typedef struct trace__spread {
    trace_rec *recs;          /* the group; recs[pos..n) are still to be returned */
    size_t n, pos, cap;       /* requests buffered / returned / allocated */
    uint32_t *blocks;         /* the group's prefix blocks, concatenated in request order */
    size_t n_blocks, cap_blocks; /* ids used / allocated */
    trace_rec ahead;          /* first request of the next group (blocks still in the reader) */
    int have_ahead;           /* ahead is valid */
    int eof;                  /* the reader reported the end */
} trace__spread;

/* Next request through the spread buffer: 1, 0 at the end, or a negative code (the reader's
 * sticky error is set). */
int trace__spread_next(trace_reader *r, trace__spread *sp, trace_rec *out);
/* Free the buffers; the struct is zeroed. */
void trace__spread_free(trace__spread *sp);

/* The reader's unbuffered next request (trace_reader.c): 1, 0 at the end, or a negative code
 * with the reader's error message set. */
int trace__pull(trace_reader *r, trace_rec *out);
/* What is wrong with time text s[0..len) that did not convert to ns: "out of range [...]
 * seconds" (per_second 1) or "... milliseconds" (1000) when it is a number, "not a number of
 * seconds|milliseconds" otherwise. A static string. */
const char *trace__number_problem(const char *s, size_t len, int per_second);
/* Set the reader's sticky error "FILE:LINE: field: <fmt>" and return rc. */
int trace__fail(trace_reader *r, int rc, uint64_t line, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The reader's format (for spread messages). */
const trace_format_ops *trace__ops(const trace_reader *r);

/* ---- the synthetic generator (trace_gen.c; conversations: trace_gen_conv.c) ------------- */

/* Zipf on 1..n by rejection-inversion (Hörmann & Derflinger 1996). */
typedef struct trace__zipf {
    double s;          /* exponent */
    double n;          /* number of values */
    double h_x1;       /* H(1.5) - 1 */
    double h_n;        /* H(n + 0.5) */
    double accept;     /* squeeze bound */
} trace__zipf;

void trace__zipf_init(trace__zipf *z, double s, double n);
/* A value in 1..n with P(k) ~ k^-s. */
double trace__zipf_sample(const trace__zipf *z, ss_rng *r);
/* Precompute d's Zipf state into z when d is a zipf distribution (else z is left alone). */
void trace__len_prepare(const trace_len_dist *d, trace__zipf *z);
/* One draw of d (z from trace__len_prepare). */
uint32_t trace__len_sample(const trace_len_dist *d, const trace__zipf *z, ss_rng *r);
/* The largest value d can give, and its exact mean when that is at most TRACE_GEN_MAX_TURNS
 * (the mean of the rounded, clamped draws; computed from the distribution, not sampled). */
uint32_t trace__len_max(const trace_len_dist *d);
double trace__len_mean_small(const trace_len_dist *d);

/* A zeroed distribution (a spec field that was not set; parsing never gives one). */
static inline int trace__len_unset(const trace_len_dist *d)
{
    return d->kind == TRACE_LEN_FIXED && d->a == 0 && d->n_knots == 0;
}

typedef struct trace__conv trace__conv; /* conversations and groups (trace_gen_conv.c) */

struct trace_gen {
    trace_gen_spec spec;     /* copy; spec.tenant stays borrowed */
    ss_rng arrivals;         /* SS_RNG_STREAM_TRACE_ARRIVALS */
    ss_rng prompt;           /* SS_RNG_STREAM_TRACE_PROMPT */
    ss_rng output;           /* SS_RNG_STREAM_TRACE_OUTPUT */
    trace__zipf zprompt;     /* precomputed when prompt is zipf */
    trace__zipf zoutput;     /* precomputed when output is zipf */
    double mean_gap_s;       /* mean gap between arrivals of the arrival process, s: 1 / rate,
                                or mean turns / rate for conversations' first turns */
    ss_time t_ns;            /* last arrival of the arrival process */
    ss_time end_ns;          /* duration limit (SS_TIME_MAX when none) */
    uint64_t n_done;         /* requests produced */
    int done;                /* the end was reached */
    int err;                 /* sticky error code (< 0) of trace_gen_next, 0 when none */
    trace__conv *conv;       /* prefix identity (NULL without): owned */
};

/* The arrival process's next arrival into *t_out: 1, or 0 when it lies past the duration (or
 * past SS_TIME_MAX). Draws one gap from g->arrivals and advances g->t_ns. */
int trace__gen_arrival(trace_gen *g, ss_time *t_out);

/* Set up g->conv for g->spec (groups' system prompts drawn here) and scale g->mean_gap_s to
 * conversations. 0, or SS_ENOMEM with eb set (g->conv stays NULL). */
int trace__conv_create(trace_gen *g, ss_errbuf *eb);
/* trace_gen_next with prefix identity: 1, 0 at the end, or SS_ENOMEM / SS_EINVAL with eb. */
int trace__conv_next(trace_gen *g, trace_rec *out, ss_errbuf *eb);
/* Free; NULL-safe, sets *c to NULL. */
void trace__conv_destroy(trace__conv **c);
/* For tests: the next fresh block id the generator hands out (ids run out at 2^32). */
void trace__conv_set_next_block(trace_gen *g, uint64_t id);


#endif
