/* Error strings and the fatal-error path. Not for recoverable errors: those return codes. */
#include "core/ss_err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *ss_strerror(int rc)
{
    switch (rc) {
    case SS_OK: return "success";
    case SS_ENOMEM: return "out of memory";
    case SS_EINVAL: return "invalid argument";
    case SS_EIO: return "input/output error";
    case SS_EPARSE: return "malformed input";
    case SS_ENOTFOUND: return "not found";
    case SS_EDB: return "results database error";
    case SS_ENOTSUP: return "not supported";
    case SS_ECHECK: return "invariant violated";
    default: return "unknown error";
    }
}

static int is_ctrl(unsigned char c) { return (c < 0x20 && c != '\t') || c == 0x7f; }

/* Bytes of the well-formed UTF-8 sequence (RFC 3629) at p that is not a control character,
 * or 0: what a message may carry raw. Anything else (a binary file's bytes, Latin-1 text) is
 * written \xNN so that it reaches the terminal as text. */
static size_t printable_len(const unsigned char *p)
{
    unsigned char c = p[0];
    if (c < 0x80)
        return is_ctrl(c) ? 0 : 1;
    size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
             : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    unsigned char lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
    unsigned char hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
    for (size_t i = 1; i < n; i++, lo = 0x80, hi = 0xBF)
        if (p[i] < lo || p[i] > hi)
            return 0;
    return n;
}

/* Write the visible form of s into dst while it fits in room bytes: the bytes of s consumed, and
 * in *o_out (o on entry) the bytes written. */
static size_t visible_into(char *dst, size_t room, const char *s, size_t *o_out)
{
    size_t o = *o_out;
    const char *p = s;
    while (*p) {
        size_t n = printable_len((const unsigned char *)p);
        size_t need = n ? n : 4;
        if (o + need > room)
            break;
        if (n)
            memcpy(dst + o, p, n);
        else
            snprintf(dst + o, 5, "\\x%02x", (unsigned char)*p);
        o += need;
        p += n ? n : 1;
    }
    *o_out = o;
    return (size_t)(p - s);
}

void ss_errbuf_oneline(ss_errbuf *eb)
{
    if (!eb)
        return;
    size_t i = 0, k;
    while ((k = printable_len((const unsigned char *)eb->msg + i)) != 0)
        i += k;
    if (!eb->msg[i])
        return; /* the usual case: nothing to escape */
    char rest[SS_ERRBUF_LEN];
    memcpy(rest, eb->msg + i, sizeof rest - i);
    size_t o = i; /* the rest escaped after the printable start, cut where it no longer fits */
    visible_into(eb->msg, sizeof eb->msg - 1, rest, &o);
    eb->msg[o] = '\0';
}

int ss_str_has_control(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return 1;
    return 0;
}

const char *ss_str_visible(char *dst, size_t size, const char *s)
{
    size_t o = 0;
    if (!s[visible_into(dst, size - 1, s, &o)]) {
        dst[o] = '\0';
        return dst;
    }
    o = 0; /* it does not fit: as much as leaves room for "..." */
    visible_into(dst, size - 4, s, &o);
    memcpy(dst + o, "...", 4);
    return dst;
}

int ss_verr(ss_errbuf *eb, int rc, const char *fmt, va_list ap)
{
    if (eb) {
        vsnprintf(eb->msg, sizeof eb->msg, fmt, ap);
        ss_errbuf_oneline(eb);
    }
    return rc;
}

int ss_err(ss_errbuf *eb, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ss_verr(eb, rc, fmt, ap);
    va_end(ap);
    return rc;
}

int ss_err_prefix(ss_errbuf *eb, int rc, const char *fmt, ...)
{
    if (!eb)
        return rc;
    char old[SS_ERRBUF_LEN], pre[SS_ERRBUF_LEN];
    snprintf(old, sizeof old, "%s", eb->msg);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    char both[2 * SS_ERRBUF_LEN + 4];
    snprintf(both, sizeof both, "%s: %s", pre, old);
    memcpy(eb->msg, both, SS_ERRBUF_LEN - 1); /* truncated to the buffer, always terminated */
    eb->msg[SS_ERRBUF_LEN - 1] = '\0';
    ss_errbuf_oneline(eb);
    return rc;
}

void ss_fatal(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "slicesim: fatal: %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}
