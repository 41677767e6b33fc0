/* INI parsing with line numbers over inih. inih tells its handler neither the line number nor
 * where a section starts (and truncates long section names), so the file is fed through a
 * reader that counts lines, rejects lines longer than inih's buffer (inih would split them
 * silently) and recognises section headers itself, with inih's own rules. Not for semantics. */
#include "core/ss_ini.h"

#include "core/ss_input.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <string.h>

typedef struct ini_ctx {
    FILE *f;                /* the open file */
    const char *path;       /* for messages */
    ss_ini_fn *fn;          /* the caller's callback and its data */
    void *ud;
    ss_errbuf *eb;
    unsigned line;          /* lines handed to inih so far = number of the current line */
    int rc;                 /* first error seen by the reader or the callback */
    unsigned err_line;      /* its line */
    int after_key;          /* inih's "previous name" is set: an indented line continues it */
    char section[SS_INI_LINE_MAX + 1]; /* current section, untruncated */
} ini_ctx;

static int fail(ini_ctx *c, int rc)
{
    c->rc = rc;
    c->err_line = c->line;
    return rc;
}

/* A line that filled the buffer without its newline is too long, unless the file ends there
 * or only the newline was left over. */
static int too_long(ini_ctx *c, const char *str, int num)
{
    size_t len = strlen(str);
    if (len + 1 != (size_t)num || str[len - 1] == '\n')
        return 0;
    int next = getc(c->f);
    if (next == '\n' || next == EOF)
        return 0;
    return fail(c, ss_err(c->eb, SS_EPARSE, "%s:%u: line longer than %d characters", c->path,
                          c->line, num - 1));
}

/* If str is a section header by inih's rules (first non-blank '[' unless it continues a
 * value, a ']' before any inline comment), make it current and report it. Nonzero: the
 * callback failed. */
static int section_header(ini_ctx *c, const char *str)
{
    const char *start = str;
    if (c->line == 1 && !strncmp(start, "\xEF\xBB\xBF", 3))
        start += 3;
    while (isspace((unsigned char)*start))
        start++;
    if (*start != '[' || (c->after_key && start > str))
        return 0;
    const char *end = start + 1;
    for (int was_space = 0; *end && *end != ']' && !(was_space && *end == ';'); end++)
        was_space = isspace((unsigned char)*end);
    if (*end != ']')
        return 0; /* inih reports the syntax error */
    size_t n = (size_t)(end - start - 1);
    if (n >= sizeof c->section) /* only if inih's buffer outgrew SS_INI_LINE_MAX */
        n = sizeof c->section - 1;
    memcpy(c->section, start + 1, n);
    c->section[n] = '\0';
    c->after_key = 0;
    int rc = c->fn(c->ud, c->line, c->section, NULL, NULL, c->eb);
    return rc ? fail(c, rc) : 0;
}

/* fgets that also says whether the line held a NUL byte (fgets would hide the rest of the
 * line from inih behind it). NULL at the end of the file or on a read error. */
static char *get_line(char *str, int num, FILE *f, int *has_nul)
{
    int i = 0, ch = 0;
    *has_nul = 0;
    while (i < num - 1 && (ch = getc(f)) != EOF) {
        *has_nul |= ch == '\0';
        str[i++] = (char)ch;
        if (ch == '\n')
            break;
    }
    str[i] = '\0';
    return i ? str : NULL;
}

/* inih's reader: one line, or NULL to stop (end of file or an error). */
static char *count_lines_reader(char *str, int num, void *stream)
{
    ini_ctx *c = stream;
    int has_nul;
    if (c->rc || !get_line(str, num, c->f, &has_nul))
        return NULL;
    c->line++;
    if (has_nul) {
        fail(c, ss_err(c->eb, SS_EPARSE, "%s:%u: contains a NUL byte (not a text file?)",
                       c->path, c->line));
        return NULL;
    }
    if (too_long(c, str, num) || section_header(c, str))
        return NULL;
    return str;
}

static int on_key(void *user, const char *section, const char *name, const char *value)
{
    ini_ctx *c = user;
    (void)section; /* inih's copy may be truncated; c->section is not */
    if (c->rc)
        return 0;
    c->after_key = name[0] != '\0';
    int rc = c->fn(c->ud, c->line, c->section, name, value, c->eb);
    if (rc) {
        fail(c, rc);
        return 0;
    }
    return 1;
}

int ss_ini_parse(const char *path, ss_ini_fn *fn, void *ud, ss_errbuf *eb)
{
    ini_ctx c = {.path = path, .fn = fn, .ud = ud, .eb = eb};
    int rc = ss_input_open(&c.f, path, 0, eb);
    if (rc)
        return rc;
    int at = ini_parse_stream(count_lines_reader, &c, on_key, &c);
    if (ferror(c.f))
        rc = ss_err(eb, SS_EIO, "%s: read error: %s", path, strerror(errno));
    else if (at > 0 && (!c.rc || c.err_line != (unsigned)at))
        rc = ss_err(eb, SS_EPARSE, "%s:%d: syntax error (expected [section] or key = value)",
                    path, at);
    else if (c.rc)
        rc = c.rc;
    else if (at < 0)
        rc = ss_err(eb, SS_ENOMEM, "%s: out of memory in the INI parser", path);
    fclose(c.f);
    return rc;
}
