/* slicesim entry point: dispatches to the subcommands. The only place that calls exit(). */
#include "app/cli.h"
#include "version.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"replay", cmd_replay, "replay a trace on a simulated GPU cluster; results to SQLite"},
    {"compare", cmd_compare, "one scenario under several policies, one table with ratios"},
    {"capacity", cmd_capacity, "each policy's highest load within an SLA-miss bound, by bisection"},
    {"sweep", cmd_sweep, "a grid of scenario keys, policies and loads; parallel, resumable"},
    {"plot", cmd_plot, "figures from a results database, drawn by gnuplot"},
    {"db", cmd_db, "results databases: merge, export as CSV"},
    {"trace", cmd_trace, "trace statistics (stats) and synthetic traces (gen)"},
    {"list", cmd_list, "list the catalog's models or GPUs"},
    {"profile", cmd_profile, "import measured operator profiles; roofline fidelity report"},
    {"fit", cmd_fit, "calibrate an engine profile against measured serving runs"},
    {"calibrate", cmd_calibrate, "measure operator profiles on a GPU (CUDA, CUPTI)"},
    {"validate", cmd_validate, "run a simulated schedule's operators on a GPU; predicted vs measured"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: slicesim COMMAND [OPTIONS]   (slicesim COMMAND --help for details)\n\n"
               "slicesim %s: trace-driven simulator of multi-tenant LLM serving clusters.\n\n"
               "commands:\n",
            SS_VERSION);
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nany command:\n"
               "  --plugin FILE.so   load a policy plug-in first (repeatable): its policies are\n"
               "                     then named like the built-ins (template: plugins/template)\n");
}

/* A result that could not be written to standard output (a full disk, a closed pipe, /dev/full)
 * is a failed run, not a success: flush it here and say so. */
static int finish_stdout(const char *cmd, int status)
{
    errno = 0;
    if ((fflush(stdout) == 0 && !ferror(stdout)) || status)
        return status; /* a command that failed has said why */
    fprintf(stderr, "slicesim: %s: writing standard output: %s\n", cmd,
            strerror(errno ? errno : EIO));
    return CLI_EFAIL;
}

int main(int argc, char **argv)
{
    /* --plugin FILE.so, wherever it is given: loaded before the command, taken off argv */
    int rc = cli_plugins_load(&argc, argv);
    if (rc)
        return rc;
    if (argc < 2) {
        usage(stderr);
        return CLI_EUSAGE;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("slicesim %s\n", SS_VERSION);
        return finish_stdout("version", CLI_OK);
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return finish_stdout("help", CLI_OK);
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(argv[1], commands[i].name))
            return finish_stdout(commands[i].name, commands[i].run(argc - 1, argv + 1));
    fprintf(stderr, "slicesim: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return CLI_EUSAGE;
}
