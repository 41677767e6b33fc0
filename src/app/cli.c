/* Helpers shared by the subcommands. */
#include "cli.h"

#include "core/ss_err.h"
#include "trace/trace.h"

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
