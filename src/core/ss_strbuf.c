/* String builder with vsnprintf sizing and JSON string escaping. */
#include "core/ss_strbuf.h"

#include "core/ss_alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int reserve(ss_strbuf *b, size_t extra)
{
    if (b->oom)
        return -1;
    if (ss_grow((void **)&b->s, &b->cap, b->n + extra + 1, 1)) {
        b->oom = 1;
        return -1;
    }
    return 0;
}

void ss_strbuf_printf(ss_strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (need < 0 || reserve(b, (size_t)need))
        return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->n, (size_t)need + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)need;
}

/* The JSON form of one byte of a string: itself, \" \\ or \u00XX. */
static const char *json_escape(unsigned char c, char buf[8])
{
    if (c == '"' || c == '\\')
        snprintf(buf, 8, "\\%c", c);
    else if (c < 0x20)
        snprintf(buf, 8, "\\u%04x", c);
    else
        snprintf(buf, 8, "%c", c);
    return buf;
}

void ss_strbuf_json_str(ss_strbuf *b, const char *s)
{
    char buf[8];
    ss_strbuf_printf(b, "\"");
    for (; *s; s++)
        ss_strbuf_printf(b, "%s", json_escape((unsigned char)*s, buf));
    ss_strbuf_printf(b, "\"");
}

void ss_json_fputs(FILE *f, const char *s)
{
    char buf[8];
    fputc('"', f);
    for (; *s; s++)
        fputs(json_escape((unsigned char)*s, buf), f);
    fputc('"', f);
}

const char *ss_strbuf_str(const ss_strbuf *b) { return b->s ? b->s : ""; }

void ss_strbuf_fini(ss_strbuf *b)
{
    ss_free(b->s);
    memset(b, 0, sizeof *b);
}
