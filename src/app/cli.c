/* Helpers shared by the subcommands. */
#include "cli.h"

#include "core/ss_err.h"

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
