/* Simple CSV reading: whole lines into a growable buffer, split in place on commas, columns
 * looked up by header name. Not for quoted CSV or streaming digests (see trace/). */
#include "core/ss_csv.h"

#include "core/ss_alloc.h"
#include "core/ss_input.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

#define SS_CSV_FIRST_CAP 256 /* initial line buffer, bytes */

/* Read one line (without its newline, and the first without a UTF-8 byte-order mark) into
 * c->buf. 1 line read, 0 end of file, <0 error. */
static int read_line(ss_csv *c, ss_errbuf *eb)
{
    size_t len = 0;
    if (!c->buf_cap && ss_grow((void **)&c->buf, &c->buf_cap, SS_CSV_FIRST_CAP, 1))
        return ss_err(eb, SS_ENOMEM, "%s: out of memory", c->path);
    for (;;) {
        if (!fgets(c->buf + len, (int)(c->buf_cap - len), c->f))
            break;
        len += strlen(c->buf + len);
        if (len && c->buf[len - 1] == '\n')
            break;
        if (len + 1 < c->buf_cap) /* a NUL inside the line, or the last line without \n */
            continue;
        if (ss_grow((void **)&c->buf, &c->buf_cap, c->buf_cap * 2, 1))
            return ss_err(eb, SS_ENOMEM, "%s:%u: out of memory", c->path, c->line + 1);
    }
    if (ferror(c->f))
        return ss_err(eb, SS_EIO, "%s: read error: %s", c->path, strerror(errno));
    if (len == 0 && feof(c->f))
        return 0;
    c->line++;
    if (c->line == 1 && len >= 3 && !memcmp(c->buf, "\xEF\xBB\xBF", 3)) {
        len -= 3; /* a UTF-8 byte-order mark, as editors save CSV: no part of the header */
        memmove(c->buf, c->buf + 3, len + 1);
    }
    while (len && (c->buf[len - 1] == '\n' || c->buf[len - 1] == '\r'))
        len--;
    c->buf[len] = '\0';
    return 1;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        n--;
    s[n] = '\0';
    return s;
}

/* Split line on commas into *fld (grown as needed); returns 0 or SS_ENOMEM. */
static int split(char *line, char ***fld, size_t *n, size_t *cap)
{
    *n = 0;
    for (char *p = line;;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (ss_grow((void **)fld, cap, *n + 1, sizeof **fld))
            return SS_ENOMEM;
        (*fld)[(*n)++] = trim(p);
        if (!comma)
            return SS_OK;
        p = comma + 1;
    }
}

/* Is the current line blank, or a comment when comments are enabled? */
static int skippable(const ss_csv *c)
{
    const char *p = c->buf + strspn(c->buf, " \t\r");
    return *p == '\0' || (c->comments && *p == '#');
}

/* The next line that is not skippable: 1, 0 at end, <0 error. */
static int next_line(ss_csv *c, ss_errbuf *eb)
{
    int rc;
    while ((rc = read_line(c, eb)) == 1 && skippable(c))
        ;
    return rc;
}

int ss_csv_open(ss_csv *c, const char *path, int comments, ss_errbuf *eb)
{
    memset(c, 0, sizeof *c);
    c->path = path;
    c->comments = comments;
    int rc = ss_input_open(&c->f, path, 0, eb);
    if (rc)
        return rc;
    rc = next_line(c, eb);
    if (rc == 0)
        rc = ss_err(eb, SS_EPARSE, "%s:%u: no header row", path, c->line + 1);
    if (rc == 1 && !(c->hbuf = ss_strdup(c->buf)))
        rc = ss_err(eb, SS_ENOMEM, "%s: out of memory", path);
    if (rc == 1 && split(c->hbuf, &c->hdr, &c->n_hdr, &c->hdr_cap))
        rc = ss_err(eb, SS_ENOMEM, "%s: out of memory", path);
    if (rc != 1) {
        ss_csv_close(c);
        return rc;
    }
    c->hdr_line = c->line;
    return SS_OK;
}

int ss_csv_next(ss_csv *c, ss_errbuf *eb)
{
    int rc = next_line(c, eb);
    if (rc != 1)
        return rc;
    if (split(c->buf, &c->fld, &c->n_fld, &c->fld_cap))
        return ss_err(eb, SS_ENOMEM, "%s:%u: out of memory", c->path, c->line);
    if (c->n_fld != c->n_hdr)
        return ss_err(eb, SS_EPARSE, "%s:%u: %zu fields, but the header (line %u) has %zu",
                      c->path, c->line, c->n_fld, c->hdr_line, c->n_hdr);
    return 1;
}

int ss_csv_col(const ss_csv *c, const char *name)
{
    for (size_t i = 0; i < c->n_hdr; i++)
        if (!strcmp(c->hdr[i], name))
            return (int)i;
    return -1;
}

const char *ss_csv_get(const ss_csv *c, int col)
{
    return col >= 0 && (size_t)col < c->n_fld ? c->fld[col] : "";
}

int ss_csv_err(const ss_csv *c, ss_errbuf *eb, int rc, const char *col, const char *fmt, ...)
{
    if (!eb)
        return rc;
    int w = col ? snprintf(eb->msg, sizeof eb->msg, "%s:%u: %s: ", c->path, c->line, col)
                : snprintf(eb->msg, sizeof eb->msg, "%s:%u: ", c->path, c->line);
    if (w >= 0 && (size_t)w < sizeof eb->msg) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(eb->msg + w, sizeof eb->msg - (size_t)w, fmt, ap);
        va_end(ap);
    }
    ss_errbuf_oneline(eb); /* a field or column name may hold a bare CR */
    return rc;
}

void ss_csv_close(ss_csv *c)
{
    if (c->f)
        fclose(c->f);
    ss_free(c->buf);
    ss_free(c->fld);
    ss_free(c->hbuf);
    ss_free(c->hdr);
    memset(c, 0, sizeof *c);
}
