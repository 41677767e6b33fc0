/* A small strict JSON cursor for the JSONL trace formats: blanks, single-character tokens,
 * object keys, and skipping any value with full syntax checks (RFC 8259 grammar: strings with
 * their escapes, numbers, literals, nested arrays and objects up to a fixed depth). It never
 * allocates and never reads past the line. Not a general JSON library: values are returned as
 * byte spans and the format plug-in converts the few it needs (trace_mooncake.c). */
#include "trace/trace_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int at_end(const trace__json *j) { return j->pos >= j->row->len; }

static unsigned char cur(const trace__json *j) { return (unsigned char)j->row->text[j->pos]; }

int trace__json_err(trace__json *j, const char *what)
{
    return trace__err(j->row, j->eb, SS_EPARSE, "json", "%s (column %zu)", what, j->pos + 1);
}

/* "json: WHAT 'TOKEN' (column N)" for the token that starts at byte at. */
static int bad_token(trace__json *j, size_t at, const char *what)
{
    trace__shown sh;
    size_t end = at;
    while (end < j->row->len && !strchr(",]} \t\r\n", j->row->text[end]))
        end++;
    if (end == at && at < j->row->len)
        end++; /* show the delimiter itself */
    j->pos = at;
    return trace__err(j->row, j->eb, SS_EPARSE, "json", "%s: '%s' (column %zu)", what,
                      trace__show(&sh, j->row->text + at, end - at), at + 1);
}

int trace__json_peek(trace__json *j)
{
    while (!at_end(j) && (cur(j) == ' ' || cur(j) == '\t' || cur(j) == '\r' || cur(j) == '\n'))
        j->pos++;
    return at_end(j) ? -1 : cur(j);
}

int trace__json_expect(trace__json *j, char c, const char *what)
{
    if (trace__json_peek(j) != (unsigned char)c)
        return trace__json_err(j, what);
    j->pos++;
    return SS_OK;
}

int trace__json_end(trace__json *j)
{
    if (trace__json_peek(j) >= 0)
        return trace__json_err(j, "trailing characters after the object");
    return SS_OK;
}

static int hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* After a backslash: one escape; *out gets its character (0x01 for \u above 0x7f). */
static int escape(trace__json *j, unsigned char *out)
{
    static const char simple[] = "\"\\/bfnrt", value[] = "\"\\/\b\f\n\r\t";
    if (at_end(j))
        return trace__json_err(j, "unterminated string");
    const char *hit = cur(j) ? strchr(simple, cur(j)) : NULL;
    if (hit) {
        *out = (unsigned char)value[hit - simple];
        j->pos++;
        return SS_OK;
    }
    if (cur(j) != 'u')
        return trace__json_err(j, "bad escape in a string");
    unsigned v = 0;
    for (size_t i = 1; i <= 4; i++) {
        int h = j->pos + i < j->row->len ? hex_value((unsigned char)j->row->text[j->pos + i])
                                         : -1;
        if (h < 0)
            return trace__json_err(j, "bad \\u escape in a string");
        v = v * 16 + (unsigned)h;
    }
    j->pos += 5;
    *out = v < 0x80 ? (unsigned char)v : 0x01;
    return SS_OK;
}

/* A string at the cursor (after blanks). Decoded bytes go to buf[0..cap) when buf is set;
 * *len_out (optional) gets the decoded length. */
static int string(trace__json *j, char *buf, size_t cap, size_t *len_out)
{
    size_t n = 0;
    if (trace__json_expect(j, '"', "expected a string"))
        return SS_EPARSE;
    for (;;) {
        if (at_end(j))
            return trace__json_err(j, "unterminated string");
        unsigned char c = cur(j);
        if (c < 0x20)
            return trace__json_err(j, "control character in a string");
        j->pos++;
        if (c == '"')
            break;
        if (c == '\\' && escape(j, &c))
            return SS_EPARSE;
        if (buf && n < cap)
            buf[n] = (char)(c >= 0x80 ? 0x01 : c);
        n++;
    }
    if (len_out)
        *len_out = n;
    return SS_OK;
}

int trace__json_key(trace__json *j, char *key, size_t cap, size_t *len_out)
{
    if (trace__json_peek(j) != '"')
        return trace__json_err(j, "expected a key string");
    return string(j, key, cap, len_out);
}

static size_t digits(trace__json *j)
{
    size_t n = 0;
    for (; !at_end(j) && cur(j) >= '0' && cur(j) <= '9'; j->pos++)
        n++;
    return n;
}

/* -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int number(trace__json *j)
{
    size_t at = j->pos;
    if (!at_end(j) && cur(j) == '-')
        j->pos++;
    size_t start = j->pos;
    size_t n = digits(j);
    int ok = n == 1 || (n > 1 && j->row->text[start] != '0');
    if (ok && !at_end(j) && cur(j) == '.') {
        j->pos++;
        ok = digits(j) > 0;
    }
    if (ok && !at_end(j) && (cur(j) == 'e' || cur(j) == 'E')) {
        j->pos++;
        if (!at_end(j) && (cur(j) == '+' || cur(j) == '-'))
            j->pos++;
        ok = digits(j) > 0;
    }
    /* A number must end at a delimiter: "12x" is one bad token, not 12 and then 'x'. */
    if (ok && !at_end(j) && !strchr(",]} \t\r\n", cur(j)))
        ok = 0;
    return ok ? SS_OK : bad_token(j, at, "bad number");
}

static int literal(trace__json *j)
{
    static const char *const words[] = {"true", "false", "null"};
    size_t at = j->pos;
    for (size_t i = 0; i < 3; i++) {
        size_t n = strlen(words[i]);
        if (j->row->len - j->pos >= n && !memcmp(j->row->text + j->pos, words[i], n)) {
            j->pos += n;
            if (at_end(j) || strchr(",]} \t\r\n", cur(j)))
                return SS_OK;
            break;
        }
    }
    return bad_token(j, at, "not a JSON value");
}

static int value(trace__json *j, int depth);

/* The elements of an array or the members of an object, after the opening bracket. */
static int members(trace__json *j, int depth, int is_object)
{
    char close = is_object ? '}' : ']';
    if (trace__json_peek(j) == close) {
        j->pos++;
        return SS_OK;
    }
    for (;;) {
        if (is_object && (trace__json_key(j, NULL, 0, NULL) ||
                          trace__json_expect(j, ':', "expected ':' after a key")))
            return SS_EPARSE;
        if (value(j, depth))
            return SS_EPARSE;
        int c = trace__json_peek(j);
        if (c != close && c != ',')
            return trace__json_err(j, is_object ? "expected ',' or '}'" : "expected ',' or ']'");
        j->pos++;
        if (c == close)
            return SS_OK;
    }
}

static int value(trace__json *j, int depth)
{
    int c = trace__json_peek(j);
    if (c < 0)
        return trace__json_err(j, "expected a value");
    if (c == '"')
        return string(j, NULL, 0, NULL);
    if (c == '-' || (c >= '0' && c <= '9'))
        return number(j);
    if (c != '[' && c != '{')
        return literal(j);
    if (depth >= TRACE__JSON_MAX_DEPTH)
        return trace__json_err(j, "nested deeper than 64 levels");
    j->pos++;
    return members(j, depth + 1, c == '{');
}

int trace__json_value(trace__json *j, trace__field *span)
{
    trace__json_peek(j);
    size_t start = j->pos;
    if (value(j, 0))
        return SS_EPARSE;
    span->s = j->row->text + start;
    span->len = j->pos - start;
    return SS_OK;
}
