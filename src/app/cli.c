/* Helpers shared by the subcommands. */
#include "cli.h"

#include "core/ss_alloc.h"
#include "core/ss_err.h"
#include "core/ss_strbuf.h"
#include "core/ss_time.h"
#include "trace/trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

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

int cli_parse_long(const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "slicesim: %s: expected an integer in [%ld, %ld], got '%s'\n", opt, lo,
                hi, s);
        return CLI_EUSAGE;
    }
    *out = v;
    return CLI_OK;
}

char *cli_join_args(int argc, char **argv)
{
    ss_strbuf b = {0};
    ss_strbuf_printf(&b, "slicesim");
    for (int i = 0; i < argc; i++)
        ss_strbuf_printf(&b, " %s", argv[i]);
    char *s = ss_strbuf_ok(&b) ? ss_strdup(ss_strbuf_str(&b)) : NULL;
    ss_strbuf_fini(&b);
    return s;
}

int cli_cmp_time(const void *a, const void *b)
{
    ss_time x = *(const ss_time *)a, y = *(const ss_time *)b;
    return (x > y) - (x < y);
}
