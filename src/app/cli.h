/* Subcommands of the slicesim executable and the conventions they share.
 * Every command parses its own options with getopt_long, prints --help to stdout and exits 0,
 * and reports errors as one line on stderr starting "slicesim: ". Exit status: 0 success,
 * 1 a run failed (I/O, database), 2 bad input or usage (unknown option, malformed trace row,
 * unknown model). Commands return the status; only main() calls exit. */
#ifndef SS_APP_CLI_H
#define SS_APP_CLI_H

#include <stddef.h>
#include <stdio.h>

enum { CLI_OK = 0, CLI_EFAIL = 1, CLI_EUSAGE = 2 };

/* `slicesim replay ...`: replay a trace on a simulated cluster (cmd_replay.c). */
int cmd_replay(int argc, char **argv);
/* `slicesim compare -c SCENARIO --policies ...` (cmd_compare.c; runner/compare.h). */
int cmd_compare(int argc, char **argv);
/* `slicesim capacity -c SCENARIO --policies ...` (cmd_capacity.c; runner/capacity.h). */
int cmd_capacity(int argc, char **argv);
/* `slicesim sweep EXPERIMENT.ini` (cmd_sweep.c; runner/sweep.h). */
int cmd_sweep(int argc, char **argv);
/* `slicesim plot DB --kind ... -o DIR` (cmd_plot.c). */
int cmd_plot(int argc, char **argv);
/* `slicesim db merge OUT.db IN.db...` (cmd_db.c). */
int cmd_db(int argc, char **argv);
/* `slicesim trace stats|gen ...` (cmd_trace.c). */
int cmd_trace(int argc, char **argv);
/* `slicesim list models|gpus` (cmd_list.c). */
int cmd_list(int argc, char **argv);
/* `slicesim profile import ...`: convert measured profiles into profile tables (cmd_profile.c). */
int cmd_profile(int argc, char **argv);

/* `slicesim fit DIR ...`: calibrate an engine profile against measured serving runs
 * (cmd_fit.c; the harness is calib/fit.h). */
int cmd_fit(int argc, char **argv);
/* `slicesim fit import ...` (argv[0] "import"): benchmark logs into a fit directory
 * (cmd_fit_import.c; calib/fit_import.h). */
int cmd_fit_import(int argc, char **argv);

/* `slicesim calibrate --model M --tp N ...`: operator profiles measured on a GPU
 * (cmd_calibrate.c; calib/calibrate.h). */
int cmd_calibrate(int argc, char **argv);
/* `slicesim validate --model M ...`: a simulated schedule run on a GPU (cmd_validate.c;
 * calib/validate.h). */
int cmd_validate(int argc, char **argv);

/* The streams replay, compare, capacity, sweep and fit write to: their results and --help
 * (cli_out: standard output unless set) and their one-line errors (cli_err: standard error
 * unless set). The Python module (src/py) points them at memory streams for one command at a
 * time; the executable never changes them. */
FILE *cli_out(void);
FILE *cli_err(void);
/* Point cli_out and cli_err at out and err (borrowed until set again; NULL: back to standard
 * output, standard error). Not thread-safe: whoever sets them runs one command at a time. */
void cli_set_streams(FILE *out, FILE *err);

/* Map an SS_E* code to an exit status: parse/argument/not-found errors are the user's (2),
 * everything else is a failed run (1). */
int cli_status_of(int ss_rc);
/* Load every --plugin FILE.so (or --plugin=FILE.so) of argv (policy/plugin.h) and take them off
 * it (argc and argv updated; arguments after "--" are left alone). CLI_OK, or CLI_EUSAGE with
 * the one-line reason on stderr: a file that cannot be loaded, is no plug-in, was built for
 * another ABI, or whose init failed. */
int cli_plugins_load(int *argc, char **argv);

/* Print "slicesim: CMD: MESSAGE" on one line of stderr, whatever the values formatted into it
 * hold (a new line or an escape sequence in a user's argument is shown as \xNN, as in every
 * ss_err message), and return CLI_EUSAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A name option (a sweep's, a validation's) of command cmd: *out = arg (borrowed) and CLI_OK,
 * or CLI_EUSAGE after one line on stderr when arg is empty or holds a control character (a
 * new line, a tab, an escape sequence), which a name shown on one line of a table and a figure
 * must not. */
int cli_name_opt(const char *cmd, const char *opt, const char *arg, const char **out);

/* Parse option opt's value s as an integer in [lo, hi] into *out: CLI_OK, or CLI_EUSAGE after
 * one line on stderr. */
int cli_parse_long(const char *opt, const char *s, long lo, long hi, long *out);
/* The same for a number (strtod syntax, finite) in [lo, hi]. */
int cli_parse_double(const char *opt, const char *s, double lo, double hi, double *out);
struct option;
/* Check argv[1..argc) against a command's getopt_long options before getopt_long runs: a long
 * option must be spelt out in full, because getopt_long would take an abbreviation for the
 * option it abbreviates (replay --rate 3 for --rate-scale 3, where trace gen's --rate means
 * requests per second). The values of options that take one are passed over, whatever they
 * look like, and "--" ends the options. CLI_OK (options getopt_long does not know at all are
 * left to it), or CLI_EUSAGE after "slicesim: CMD: unknown option '--rate' (did you mean
 * --rate-scale?)" on stderr. Every command calls it before its getopt_long loop. */
int cli_check_long_options(const char *cmd, int argc, char **argv, const char *shortopts,
                           const struct option *longopts);
/* "slicesim ARG..." (owned, ss_free), for the runs table; NULL when out of memory. */
char *cli_join_args(int argc, char **argv);

typedef struct trace_reader trace_reader;
typedef struct ss_errbuf ss_errbuf;
/* Open the user's trace. A file that cannot be opened is bad input like a malformed one, so
 * its SS_EIO becomes SS_EPARSE (exit status 2). Otherwise as trace_reader_open. */
int cli_open_trace(trace_reader **r_out, const char *path, const char *format, ss_errbuf *eb);

/* The files one command reads and writes (cli_files.c). Add every input and output before
 * anything is written: an output that is the same file as an input or another output (by
 * device and inode, or by real directory and name when it does not exist yet) is refused.
 * Standard streams ("-"), character devices and FIFOs never clash. */
typedef struct cli_files {
    struct cli_file *v;
    size_t n, cap;
} cli_files;
/* Add path (borrowed; NULL or "" adds nothing) under role (e.g. "--timeline"). 0, SS_ENOMEM,
 * or SS_EINVAL with eb naming both paths and their roles. */
int cli_files_add(cli_files *fs, const char *role, const char *path, int output,
                  ss_errbuf *eb);
/* Free fs's memory (not the files); fs may be reused. */
void cli_files_fini(cli_files *fs);
typedef struct scn_scenario scn_scenario;
/* Add sc's inputs (the scenario file, every tenant's trace) and its output (the results
 * database db, or sc's own when db is NULL; nothing for "none") to fs (cli_files_add). 0,
 * SS_ENOMEM, or SS_EINVAL with eb naming the clash. */
int cli_scenario_files(cli_files *fs, const scn_scenario *sc, const char *db, ss_errbuf *eb);

#endif
