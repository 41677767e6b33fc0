/* The strict JSON reader of core/ss_json.h: a recursive-descent parser over a buffer, with
 * the line and column of every error. Children are collected in growing arrays and owned by
 * their parent, so one ss_json_free releases a document. */
#include "core/ss_json.h"

#include "core/ss_alloc.h"
#include "core/ss_input.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 64
#define JSON_MAX_FILE ((size_t)1 << 31) /* 2 GiB: a report larger than that is not a report */

typedef struct parser {
    const char *s;
    size_t len, pos;
    const char *what;
    unsigned depth;
    ss_errbuf *eb;
} parser;

/* "WHAT: json: MSG (line L, column C)" at byte at. */
static int fail_at(parser *p, size_t at, const char *msg)
{
    unsigned line = 1, col = 1;
    for (size_t i = 0; i < at && i < p->len; i++) {
        if (p->s[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    return ss_err(p->eb, SS_EPARSE, "%s: json: %s (line %u, column %u)", p->what, msg, line,
                  col);
}

static int fail(parser *p, const char *msg) { return fail_at(p, p->pos, msg); }

static void skip_blanks(parser *p)
{
    while (p->pos < p->len && strchr(" \t\r\n", p->s[p->pos]) && p->s[p->pos])
        p->pos++;
}

static int oom(parser *p) { return ss_err(p->eb, SS_ENOMEM, "%s: out of memory", p->what); }

static void free_value(ss_json *v)
{
    if (v->type == SS_JSON_STR) {
        ss_free(v->u.str);
    } else if (v->type == SS_JSON_ARR || v->type == SS_JSON_OBJ) {
        for (size_t i = 0; i < v->n; i++) {
            free_value(&v->u.items[i]);
            if (v->keys)
                ss_free(v->keys[i]);
        }
        ss_free(v->u.items);
        ss_free(v->keys);
    }
    memset(v, 0, sizeof *v);
}

/* {======================================================================
 * Scalars
 * ======================================================================= */

static int hex4(parser *p, uint32_t *out)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        if (p->pos >= p->len)
            return fail(p, "unterminated string");
        char c = p->s[p->pos++];
        int d = c >= '0' && c <= '9' ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return fail_at(p, p->pos - 1, "bad \\u escape");
        v = v * 16 + (uint32_t)d;
    }
    *out = v;
    return SS_OK;
}

/* A \u escape (after the 'u') as UTF-8 into buf; surrogate pairs joined. */
static int unicode_escape(parser *p, char *buf, size_t *n)
{
    uint32_t c, lo;
    size_t at = p->pos - 2;
    int rc = hex4(p, &c);
    if (rc)
        return rc;
    if (c >= 0xDC00 && c <= 0xDFFF)
        return fail_at(p, at, "lone low surrogate in a \\u escape");
    if (c >= 0xD800 && c <= 0xDBFF) {
        if (p->pos + 2 > p->len || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
            return fail_at(p, at, "high surrogate without its low half");
        p->pos += 2;
        if ((rc = hex4(p, &lo)))
            return rc;
        if (lo < 0xDC00 || lo > 0xDFFF)
            return fail_at(p, at, "high surrogate without its low half");
        c = 0x10000 + ((c - 0xD800) << 10) + (lo - 0xDC00);
    }
    if (c == 0)
        return fail_at(p, at, "\\u0000 in a string");
    if (c < 0x80) {
        buf[(*n)++] = (char)c;
    } else if (c < 0x800) {
        buf[(*n)++] = (char)(0xC0 | (c >> 6));
        buf[(*n)++] = (char)(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        buf[(*n)++] = (char)(0xE0 | (c >> 12));
        buf[(*n)++] = (char)(0x80 | ((c >> 6) & 0x3F));
        buf[(*n)++] = (char)(0x80 | (c & 0x3F));
    } else {
        buf[(*n)++] = (char)(0xF0 | (c >> 18));
        buf[(*n)++] = (char)(0x80 | ((c >> 12) & 0x3F));
        buf[(*n)++] = (char)(0x80 | ((c >> 6) & 0x3F));
        buf[(*n)++] = (char)(0x80 | (c & 0x3F));
    }
    return SS_OK;
}

/* A string at p->pos (its opening quote) into *out (owned) and *n_out. An escape never
 * makes the text longer than its source, so the source's length bounds the buffer. */
static int parse_string(parser *p, char **out, size_t *n_out)
{
    size_t start = ++p->pos, end = start;
    while (end < p->len && p->s[end] != '"')
        end += p->s[end] == '\\' ? 2 : 1;
    if (end >= p->len)
        return fail_at(p, start - 1, "unterminated string");
    char *buf = ss_malloc(end - start + 1);
    if (!buf)
        return oom(p);
    size_t n = 0;
    int rc = SS_OK;
    while (!rc && p->pos < end) {
        unsigned char c = (unsigned char)p->s[p->pos++];
        if (c < 0x20) {
            rc = fail_at(p, p->pos - 1, "control character in a string");
        } else if (c != '\\') {
            buf[n++] = (char)c;
        } else {
            char e = p->s[p->pos++];
            const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
            const char *k = e ? strchr(from, e) : NULL;
            if (k)
                buf[n++] = to[k - from];
            else if (e == 'u')
                rc = unicode_escape(p, buf, &n);
            else
                rc = fail_at(p, p->pos - 2, "bad escape in a string");
        }
    }
    if (rc) {
        ss_free(buf);
        return rc;
    }
    p->pos = end + 1;
    buf[n] = '\0';
    *out = buf;
    *n_out = n;
    return SS_OK;
}

static int has_word(const parser *p, const char *w)
{
    size_t n = strlen(w);
    return p->len - p->pos >= n && !memcmp(p->s + p->pos, w, n);
}

/* A number, RFC 8259's grammar exactly (no leading '+', no leading zeros, digits on both
 * sides of '.'), or NaN / Infinity / -Infinity as Python writes them. */
static int parse_number(parser *p, double *out)
{
    size_t at = p->pos, i = p->pos;
    const char *s = p->s;
    if (has_word(p, "NaN") || has_word(p, "Infinity") || has_word(p, "-Infinity")) {
        int neg = s[i] == '-';
        *out = s[i + neg] == 'N' ? NAN : neg ? -INFINITY : INFINITY;
        p->pos += s[i + neg] == 'N' ? 3 : 8 + (size_t)neg;
        return SS_OK;
    }
    if (i < p->len && s[i] == '-')
        i++;
    if (i >= p->len || !(s[i] >= '0' && s[i] <= '9'))
        return fail_at(p, at, "expected a value");
    if (s[i] == '0' && i + 1 < p->len && s[i + 1] >= '0' && s[i + 1] <= '9')
        return fail_at(p, at, "number with a leading zero");
    while (i < p->len && s[i] >= '0' && s[i] <= '9')
        i++;
    if (i < p->len && s[i] == '.') {
        if (++i >= p->len || !(s[i] >= '0' && s[i] <= '9'))
            return fail_at(p, at, "number without digits after '.'");
        while (i < p->len && s[i] >= '0' && s[i] <= '9')
            i++;
    }
    if (i < p->len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < p->len && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i >= p->len || !(s[i] >= '0' && s[i] <= '9'))
            return fail_at(p, at, "number without digits in its exponent");
        while (i < p->len && s[i] >= '0' && s[i] <= '9')
            i++;
    }
    char buf[64];
    if (i - at >= sizeof buf) { /* more digits than a double holds: strtod on a copy */
        char *big = ss_malloc(i - at + 1);
        if (!big)
            return oom(p);
        memcpy(big, s + at, i - at);
        big[i - at] = '\0';
        *out = strtod(big, NULL);
        ss_free(big);
    } else {
        memcpy(buf, s + at, i - at);
        buf[i - at] = '\0';
        *out = strtod(buf, NULL);
    }
    p->pos = i;
    return SS_OK;
}

/* }====================================================================== */

/* {======================================================================
 * Values, arrays, objects
 * ======================================================================= */

static int parse_value(parser *p, ss_json *v);

static int grow_children(parser *p, ss_json *v, size_t *cap, int keyed)
{
    if (v->n < *cap)
        return SS_OK;
    size_t cap_items = *cap, cap_keys = *cap;
    if (ss_grow((void **)&v->u.items, &cap_items, v->n + 1, sizeof *v->u.items) ||
        (keyed && ss_grow((void **)&v->keys, &cap_keys, v->n + 1, sizeof *v->keys)))
        return oom(p);
    *cap = keyed && cap_keys < cap_items ? cap_keys : cap_items;
    return SS_OK;
}

static int parse_array(parser *p, ss_json *v)
{
    size_t cap = 0;
    v->type = SS_JSON_ARR;
    p->pos++;
    skip_blanks(p);
    if (p->pos < p->len && p->s[p->pos] == ']') {
        p->pos++;
        return SS_OK;
    }
    for (;;) {
        int rc = grow_children(p, v, &cap, 0);
        if (!rc) {
            memset(&v->u.items[v->n], 0, sizeof *v->u.items);
            rc = parse_value(p, &v->u.items[v->n]);
            v->n++; /* freed with the array even when half-parsed */
        }
        if (rc)
            return rc;
        skip_blanks(p);
        if (p->pos < p->len && p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->pos < p->len && p->s[p->pos] == ']') {
            p->pos++;
            return SS_OK;
        }
        return fail(p, "expected ',' or ']' in an array");
    }
}

/* One "key": value member of v at index v->n. */
static int parse_member(parser *p, ss_json *v)
{
    size_t at = p->pos, klen;
    char *key;
    if (p->pos >= p->len || p->s[p->pos] != '"')
        return fail(p, "expected a string key in an object");
    int rc = parse_string(p, &key, &klen);
    if (rc)
        return rc;
    for (size_t i = 0; i < v->n; i++)
        if (!strcmp(v->keys[i], key)) {
            ss_free(key);
            return fail_at(p, at, "duplicate key in an object");
        }
    v->keys[v->n] = key;
    memset(&v->u.items[v->n], 0, sizeof *v->u.items);
    v->n++;
    skip_blanks(p);
    if (p->pos >= p->len || p->s[p->pos] != ':')
        return fail(p, "expected ':' after an object key");
    p->pos++;
    return parse_value(p, &v->u.items[v->n - 1]);
}

static int parse_object(parser *p, ss_json *v)
{
    size_t cap = 0;
    v->type = SS_JSON_OBJ;
    p->pos++;
    skip_blanks(p);
    if (p->pos < p->len && p->s[p->pos] == '}') {
        p->pos++;
        return SS_OK;
    }
    for (;;) {
        int rc = grow_children(p, v, &cap, 1);
        if (!rc)
            rc = parse_member(p, v);
        if (rc)
            return rc;
        skip_blanks(p);
        if (p->pos < p->len && p->s[p->pos] == ',') {
            p->pos++;
            skip_blanks(p);
            continue;
        }
        if (p->pos < p->len && p->s[p->pos] == '}') {
            p->pos++;
            return SS_OK;
        }
        return fail(p, "expected ',' or '}' in an object");
    }
}

static int parse_value(parser *p, ss_json *v)
{
    skip_blanks(p);
    if (p->pos >= p->len)
        return fail(p, "unexpected end of input");
    char c = p->s[p->pos];
    int rc;
    if (c == '{' || c == '[') {
        if (++p->depth > JSON_MAX_DEPTH)
            return fail(p, "nested deeper than 64");
        rc = c == '{' ? parse_object(p, v) : parse_array(p, v);
        p->depth--;
        return rc;
    }
    if (c == '"') {
        char *s;
        size_t n;
        if ((rc = parse_string(p, &s, &n)))
            return rc;
        v->type = SS_JSON_STR;
        v->u.str = s;
        v->n = n;
        return SS_OK;
    }
    static const char *const words[] = {"true", "false", "null"};
    for (int w = 0; w < 3; w++)
        if (has_word(p, words[w])) {
            p->pos += strlen(words[w]);
            v->type = w == 2 ? SS_JSON_NULL : SS_JSON_BOOL;
            v->u.num = w == 0;
            return SS_OK;
        }
    v->type = SS_JSON_NUM;
    return parse_number(p, &v->u.num);
}

/* }====================================================================== */

int ss_json_parse(ss_json **j_out, const char *text, size_t len, const char *what,
                  ss_errbuf *eb)
{
    parser p = {.s = text, .len = len, .what = what, .eb = eb};
    ss_json *root = ss_calloc(1, sizeof *root);
    if (!root)
        return ss_err(eb, SS_ENOMEM, "%s: out of memory", what);
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3))
        p.pos = 3; /* a UTF-8 byte-order mark */
    int rc = parse_value(&p, root);
    if (!rc) {
        skip_blanks(&p);
        if (p.pos < p.len)
            rc = fail(&p, "characters after the document");
    }
    if (rc) {
        ss_json_free(&root);
        return rc;
    }
    *j_out = root;
    return SS_OK;
}

int ss_json_read_file(ss_json **j_out, const char *path, ss_errbuf *eb)
{
    FILE *f;
    int rc = ss_input_open(&f, path, 0, eb);
    if (rc)
        return rc;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    while (!rc) {
        if (n + 65536 > cap && ss_grow((void **)&buf, &cap, n + 65536, 1)) {
            rc = ss_err(eb, SS_ENOMEM, "%s: out of memory", path);
            break;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
        if (n > JSON_MAX_FILE)
            rc = ss_err(eb, SS_EPARSE, "%s: larger than 2 GiB", path);
    }
    if (!rc && ferror(f))
        rc = ss_err(eb, SS_EIO, "%s: read error: %s", path, strerror(errno));
    fclose(f);
    if (!rc)
        rc = ss_json_parse(j_out, buf ? buf : "", n, path, eb);
    ss_free(buf);
    return rc;
}

void ss_json_free(ss_json **j)
{
    if (!j || !*j)
        return;
    free_value(*j);
    ss_free(*j);
    *j = NULL;
}

const ss_json *ss_json_get(const ss_json *o, const char *key)
{
    if (!o || o->type != SS_JSON_OBJ)
        return NULL;
    for (size_t i = 0; i < o->n; i++)
        if (!strcmp(o->keys[i], key))
            return &o->u.items[i];
    return NULL;
}

const char *ss_json_type_name(ss_json_type t)
{
    static const char *const names[] = {"null", "a boolean", "a number", "a string",
                                        "an array", "an object"};
    return (unsigned)t < sizeof names / sizeof *names ? names[t] : "?";
}
