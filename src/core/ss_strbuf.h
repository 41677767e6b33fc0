/* Growable string buffer for building JSON and SQL-free text at the edges (results, params).
 * Allocation failure is sticky: later appends are ignored and ss_strbuf_ok() reports it. */
#ifndef SS_CORE_SS_STRBUF_H
#define SS_CORE_SS_STRBUF_H

#include <stddef.h>
#include <stdio.h>

typedef struct ss_strbuf {
    char *s;    /* owned, NUL-terminated when non-NULL */
    size_t n;   /* length */
    size_t cap; /* allocated bytes */
    int oom;    /* an append failed */
} ss_strbuf;

/* Append formatted text. */
void ss_strbuf_printf(ss_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append s as a JSON string literal (quotes and escapes included). */
void ss_strbuf_json_str(ss_strbuf *b, const char *s);
/* Write s to f as a JSON string literal (quotes and escapes included). */
void ss_json_fputs(FILE *f, const char *s);
/* Contents ("" when empty); borrowed until the next append or fini. */
const char *ss_strbuf_str(const ss_strbuf *b);
static inline int ss_strbuf_ok(const ss_strbuf *b) { return !b->oom; }
void ss_strbuf_fini(ss_strbuf *b);

#endif
