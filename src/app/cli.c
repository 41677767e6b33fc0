/* Helpers shared by the subcommands. */
#include "app/cli.h"

#include "core/ss_parse.h"

#include "core/ss_alloc.h"
#include "core/ss_err.h"
#include "core/ss_strbuf.h"
#include "trace/trace.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *out_stream, *err_stream; /* NULL: the process's standard streams */

FILE *cli_out(void) { return out_stream ? out_stream : stdout; }

FILE *cli_err(void) { return err_stream ? err_stream : stderr; }

void cli_set_streams(FILE *out, FILE *err)
{
    out_stream = out;
    err_stream = err;
}

int cli_status_of(int ss_rc)
{
    switch (ss_rc) {
    case SS_OK: return CLI_OK;
    case SS_EPARSE:
    case SS_EINVAL:
    case SS_ENOTFOUND: return CLI_EUSAGE;
    default: return CLI_EFAIL;
    }
}

int cli_open_trace(trace_reader **r_out, const char *path, const char *format, ss_errbuf *eb)
{
    int rc = trace_reader_open(r_out, path, format, eb);
    return rc == SS_EIO ? SS_EPARSE : rc;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    ss_errbuf eb = {""};
    va_list ap;
    va_start(ap, fmt);
    ss_verr(&eb, SS_EINVAL, fmt, ap);
    va_end(ap);
    fprintf(cli_err(), "slicesim: %s: %s\n", cmd, eb.msg);
    return CLI_EUSAGE;
}

int cli_name_opt(const char *cmd, const char *opt, const char *arg, const char **out)
{
    if (*arg && !ss_str_has_control(arg)) {
        *out = arg;
        return CLI_OK;
    }
    char shown[128];
    fprintf(cli_err(), "slicesim: %s: %s: %s'%s'\n", cmd, opt, *arg ? "a name may hold no control "
            "character (a new line, a tab, an escape), got " : "expected a name, got ",
            ss_str_visible(shown, sizeof shown, arg));
    return CLI_EUSAGE;
}

int cli_parse_long(const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(cli_err(), "slicesim: %s: expected an integer in [%ld, %ld], got '%s'\n", opt, lo,
                hi, s);
        return CLI_EUSAGE;
    }
    *out = v;
    return CLI_OK;
}

int cli_parse_double(const char *opt, const char *s, double lo, double hi, double *out)
{
    double v;
    if (ss_parse_doublez(s, &v) || !(v >= lo && v <= hi)) {
        fprintf(cli_err(), "slicesim: %s: expected a number in [%g, %g], got '%s'\n", opt, lo,
                hi, s);
        return CLI_EUSAGE;
    }
    *out = v;
    return CLI_OK;
}

/* The long option spelt exactly name[0..len), or NULL. */
static const struct option *long_exact(const struct option *longopts, const char *name,
                                       size_t len)
{
    for (const struct option *o = longopts; o->name; o++)
        if (strlen(o->name) == len && !strncmp(o->name, name, len))
            return o;
    return NULL;
}

/* "unknown option '--NAME' (did you mean --A, --B?)" for the options NAME abbreviates. */
static int not_exact(const char *cmd, const char *arg, size_t len,
                     const struct option *longopts)
{
    ss_strbuf b = {0};
    for (const struct option *o = longopts; o->name; o++)
        if (!strncmp(o->name, arg + 2, len))
            ss_strbuf_printf(&b, "%s--%s", b.n ? ", " : "", o->name);
    fprintf(cli_err(), "slicesim: %s: unknown option '--%.*s' (did you mean %s?)\n", cmd, (int)len,
            arg + 2, ss_strbuf_ok(&b) ? ss_strbuf_str(&b) : "a longer option");
    ss_strbuf_fini(&b);
    return CLI_EUSAGE;
}

/* Index of the last argument a short-option cluster argv[i] ("-c", "-cFILE", "-jc FILE")
 * uses: i + 1 when its last option takes the next argument as its value. */
static int short_cluster_end(int i, char **argv, const char *shortopts)
{
    const char *a = argv[i];
    for (size_t j = 1; a[j]; j++) {
        const char *p = a[j] == ':' ? NULL : strchr(shortopts, a[j]);
        if (p && p[1] == ':' && p[2] != ':')
            return a[j + 1] ? i : i + 1; /* the rest, or the next argument, is the value */
    }
    return i;
}

int cli_check_long_options(const char *cmd, int argc, char **argv, const char *shortopts,
                           const struct option *longopts)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--"))
            break; /* what follows is operands */
        if (a[0] != '-' || !a[1])
            continue; /* an operand ("-" is standard input); getopt_long permutes them */
        if (a[1] != '-') {
            i = short_cluster_end(i, argv, shortopts);
            continue;
        }
        size_t len = strcspn(a + 2, "=");
        if (!len)
            continue; /* "--=x": getopt_long's to report */
        const struct option *o = long_exact(longopts, a + 2, len);
        if (o && o->has_arg == required_argument && !a[2 + len])
            i++; /* its value, whatever it looks like */
        else if (!o) {
            for (const struct option *p = longopts; p->name; p++)
                if (!strncmp(p->name, a + 2, len))
                    return not_exact(cmd, a, len, longopts);
            /* unknown outright: getopt_long reports it in the command's own words */
        }
    }
    return CLI_OK;
}

/* Whether a shell takes s as one word as it is. */
static int shell_plain(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("_./:=,@%+-", *s))
            return 0;
    return 1;
}

char *cli_join_args(int argc, char **argv)
{
    ss_strbuf b = {0};
    ss_strbuf_printf(&b, "slicesim");
    for (int i = 0; i < argc; i++) {
        if (shell_plain(argv[i])) {
            ss_strbuf_printf(&b, " %s", argv[i]);
            continue;
        }
        ss_strbuf_printf(&b, " '"); /* quoted, so that the line can be run again */
        for (const char *s = argv[i]; *s; s++)
            ss_strbuf_printf(&b, *s == '\'' ? "'\\''" : "%c", *s);
        ss_strbuf_printf(&b, "'");
    }
    char *s = ss_strbuf_ok(&b) ? ss_strdup(ss_strbuf_str(&b)) : NULL;
    ss_strbuf_fini(&b);
    return s;
}
