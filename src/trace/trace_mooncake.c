/* The Mooncake (FAST'25) JSONL trace format: one JSON object per line with timestamp
 * (milliseconds, integer or decimal), input_length, output_length and the optional hash_ids
 * (prefix-block ids of 512-token blocks). Keys come in any order; unknown keys, whatever their
 * value, are skipped. There is no header: line 1 is data. Times are kept as given (ms -> ns
 * exactly), not rebased. JSON syntax lives in trace_json.c; this file only maps the keys. */
#include "trace/trace_int.h"

#include <string.h>

enum { MC_TS, MC_IN, MC_OUT, MC_HASH, MC_N };

static const char *const mc_keys[MC_N] = {"timestamp", "input_length", "output_length",
                                          "hash_ids"};

typedef struct mooncake_priv {
    uint32_t *blocks; /* the reader's prefix-block buffer (trace__blocks), borrowed */
} mooncake_priv;

/* A line that starts with '{' (after blanks) is ours, and no CSV header does. */
static int mooncake_probe(const trace__row *hdr)
{
    size_t i = 0;
    while (i < hdr->len && (hdr->text[i] == ' ' || hdr->text[i] == '\t'))
        i++;
    return i < hdr->len && hdr->text[i] == '{' ? 100 : 0;
}

static int mooncake_open(void *priv, const trace__row *hdr, ss_errbuf *eb)
{
    mooncake_priv *p = priv;
    uint16_t t0;
    p->blocks = trace__blocks(hdr->r);
    if (!p->blocks || trace__intern(hdr->r, "default", 7, &t0))
        return trace__err(hdr, eb, SS_ENOMEM, "trace", "out of memory");
    return SS_OK;
}

static int key_index(const char *key, size_t len)
{
    for (int i = 0; i < MC_N; i++)
        if (strlen(mc_keys[i]) == len && !memcmp(mc_keys[i], key, len))
            return i;
    return -1;
}

/* One "key": value member; known keys' value spans go to v (a repeated one is an error). */
static int member(trace__json *j, trace__field v[MC_N])
{
    char key[16];
    size_t len;
    trace__field span;
    trace__json_peek(j);
    size_t at = j->pos;
    if (trace__json_key(j, key, sizeof key, &len) ||
        trace__json_expect(j, ':', "expected ':' after a key") || trace__json_value(j, &span))
        return SS_EPARSE;
    int k = len <= sizeof key ? key_index(key, len) : -1;
    if (k >= 0 && v[k].s)
        return trace__err(j->row, j->eb, SS_EPARSE, "json", "duplicate key '%s' (column %zu)",
                          mc_keys[k], at + 1);
    if (k >= 0)
        v[k] = span;
    return SS_OK;
}

/* The whole line: one object and nothing after it. */
static int object(trace__json *j, trace__field v[MC_N])
{
    if (trace__json_expect(j, '{', "expected '{'"))
        return SS_EPARSE;
    if (trace__json_peek(j) == '}') {
        j->pos++;
        return trace__json_end(j);
    }
    for (;;) {
        if (member(j, v))
            return SS_EPARSE;
        int c = trace__json_peek(j);
        if (c != ',' && c != '}')
            return trace__json_err(j, "expected ',' or '}'");
        j->pos++;
        if (c == '}')
            return trace__json_end(j);
    }
}

/* A row holding just the value span, so the CSV field parsers (and their messages) apply. */
static trace__row one_field(const trace__row *row, const trace__field *span)
{
    trace__row one = *row;
    one.f = span;
    one.n = 1;
    return one;
}

static int is_number(const trace__field *v)
{
    return v->s[0] == '-' || (v->s[0] >= '0' && v->s[0] <= '9');
}

static int get_tokens(const trace__row *row, const trace__field *v, const char *name,
                      uint32_t *out, ss_errbuf *eb)
{
    trace__shown sh;
    if (!is_number(v))
        return trace__err(row, eb, SS_EPARSE, name, "not a number: '%s'",
                          trace__show(&sh, v->s, v->len));
    trace__row one = one_field(row, v);
    return trace__get_tokens(&one, 0, name, out, eb);
}

static int get_time(const trace__row *row, const trace__field *v, ss_time *out, ss_errbuf *eb)
{
    trace__shown sh;
    if (!is_number(v) || trace__parse_ms(v->s, v->len, out))
        return trace__err(row, eb, SS_EPARSE, "timestamp", "%s: '%s'",
                          is_number(v) ? trace__number_problem(v->s, v->len, 1000)
                                       : "not a number of milliseconds",
                          trace__show(&sh, v->s, v->len));
    if (*out < 0)
        return trace__err(row, eb, SS_EPARSE, "timestamp", "must be >= 0, got %s",
                          trace__show(&sh, v->s, v->len));
    return SS_OK;
}

/* One hash_ids element at the cursor into blocks[n]. */
static int get_block(trace__json *j, uint32_t *blocks, uint32_t n, ss_errbuf *eb)
{
    trace__field v;
    trace__shown sh;
    int64_t id;
    if (trace__json_value(j, &v))
        return SS_EPARSE;
    if (!is_number(&v))
        return trace__err(j->row, eb, SS_EPARSE, "hash_ids", "not an integer: '%s'",
                          trace__show(&sh, v.s, v.len));
    if (n >= TRACE_MAX_PREFIX_BLOCKS)
        return trace__err(j->row, eb, SS_EPARSE, "hash_ids", "more than %d ids",
                          TRACE_MAX_PREFIX_BLOCKS);
    trace__row one = one_field(j->row, &v);
    if (trace__get_int(&one, 0, "hash_ids", 0, UINT32_MAX, &id, eb))
        return SS_EPARSE;
    blocks[n] = (uint32_t)id;
    return SS_OK;
}

/* The hash_ids array (already checked for syntax) into p->blocks. */
static int get_blocks(mooncake_priv *p, const trace__row *row, const trace__field *v,
                      trace_rec *rec, ss_errbuf *eb)
{
    trace__shown sh;
    if (v->s[0] != '[')
        return trace__err(row, eb, SS_EPARSE, "hash_ids", "not an array: '%s'",
                          trace__show(&sh, v->s, v->len));
    trace__json j = {.row = row, .pos = (size_t)(v->s - row->text) + 1, .eb = eb};
    uint32_t n = 0;
    int c = trace__json_peek(&j);
    while (c != ']') {
        if (get_block(&j, p->blocks, n, eb))
            return SS_EPARSE;
        n++;
        c = trace__json_peek(&j);
        j.pos++; /* ',' or ']': the syntax was checked */
    }
    rec->prefix_blocks = n ? p->blocks : NULL;
    rec->n_prefix_blocks = n;
    return SS_OK;
}

static int mooncake_parse(void *priv, const trace__row *row, trace_rec *rec, ss_errbuf *eb)
{
    mooncake_priv *p = priv;
    trace__field v[MC_N];
    memset(v, 0, sizeof v);
    trace__json j = {.row = row, .pos = 0, .eb = eb};
    if (object(&j, v))
        return SS_EPARSE;
    for (int k = 0; k < MC_HASH; k++)
        if (!v[k].s)
            return trace__err(row, eb, SS_EPARSE, mc_keys[k], "missing");
    int rc;
    if ((rc = get_time(row, &v[MC_TS], &rec->arrival_ns, eb)) ||
        (rc = get_tokens(row, &v[MC_IN], "input_length", &rec->prompt_tokens, eb)) ||
        (rc = get_tokens(row, &v[MC_OUT], "output_length", &rec->output_tokens, eb)))
        return rc;
    if (v[MC_HASH].s && (rc = get_blocks(p, row, &v[MC_HASH], rec, eb)))
        return rc;
    return trace__check_blocks(row, rec, "input_length", eb);
}

const trace_format_ops trace__fmt_mooncake = {
    .name = "mooncake",
    .priv_size = sizeof(mooncake_priv),
    .time_field = "timestamp",
    .time_in_ms = 1,
    .no_header = 1,
    .probe = mooncake_probe,
    .open = mooncake_open,
    .parse = mooncake_parse,
};
