/* Private to app/: the options that the commands running a scenario under several policy
 * bundles share (compare, capacity): -c, --policies, --set, --db, --name, --json, --profiles
 * --no-progress, --search-replays and --seeds, parsed the same way with the same messages, and the check that none of
 * their outputs is one of their inputs. */
#ifndef SS_APP_CLI_RUNS_H
#define SS_APP_CLI_RUNS_H

#include "app/cli.h"
#include "runner/bundle.h"
#include "runner/static_best.h"
#include "store/store.h"

#include <getopt.h>
#include <stddef.h>

#define CLI_RUNS_MAX_POLICIES 16
#define CLI_RUNS_MAX_SEEDS 32

typedef struct cli_runs_opts {
    const char *cmd;                  /* "compare", for messages */
    const char *config, *profiles, *db, *name;
    char *policies_text;              /* owned copy of --policies, split in place */
    char *policy[CLI_RUNS_MAX_POLICIES];
    char label[CLI_RUNS_MAX_POLICIES][RUNNER_LABEL_MAX];
    int n_policies;
    const char **sets;                /* owned array of --set values (borrowed strings) */
    size_t n_sets, cap_sets;
    int json, progress;
    int search_replays;               /* --search-replays (0: the search's default) */
    int n_seeds;                      /* --seeds (0: not given, one seed) */
    store_keep keep;                  /* --store (default requests) */
} cli_runs_opts;

/* getopt_long values of the shared options; a command's own start at CLI_RUNS_O__NEXT. */
enum {
    CLI_RUNS_O_POLICIES = 256, CLI_RUNS_O_SET, CLI_RUNS_O_DB, CLI_RUNS_O_NAME, CLI_RUNS_O_JSON,
    CLI_RUNS_O_PROFILES, CLI_RUNS_O_NOPROG, CLI_RUNS_O_REPLAYS, CLI_RUNS_O_SEEDS, CLI_RUNS_O_STORE,
    CLI_RUNS_O__NEXT
};

/* The struct option entries of the shared options (and -c/--config, --help), for a command's
 * longopts array. */
/* --help's lines for --search-replays, the same in every command. */
#define CLI_RUNS_REPLAYS_HELP                                                                     \
    "  --search-replays N      most candidate replays of each search (static-best,\n"          \
    "                          slice-sized, llumnix-sized, slice-tuned) at each point, 1 to\n" \
    "                          " CLI_RUNS_STR(RUNNER_STATIC_BEST_MAX_REPLAYS) " (default "           \
    CLI_RUNS_STR(RUNNER_STATIC_BEST_REPLAYS) ")\n"
/* --help's lines for --seeds, the same in every command. */
#define CLI_RUNS_SEEDS_HELP                                                                       \
    "  --seeds N               run everything once per seed, run.seed, run.seed + 1, ..., 1\n"    \
    "                          to " CLI_RUNS_STR(CLI_RUNS_MAX_SEEDS) " (default 1); means over the seeds with two-sided 95 %%\n" \
    "                          Student-t intervals, ratios paired by seed\n"
/* --help's lines for --store, the same in every command. */
#define CLI_RUNS_STORE_HELP                                                                       \
    "  --store WHAT            what the database keeps of each run: summary (no per-request\n"  \
    "                          rows), requests (the default) or iterations (also each\n"        \
    "                          container's every iteration)\n"
#define CLI_RUNS_STR_(x) #x
#define CLI_RUNS_STR(x) CLI_RUNS_STR_(x)
#define CLI_RUNS_LONGOPTS                                                                         \
    {"config", required_argument, NULL, 'c'},                                                     \
    {"policies", required_argument, NULL, CLI_RUNS_O_POLICIES},                                   \
    {"set", required_argument, NULL, CLI_RUNS_O_SET},                                             \
    {"db", required_argument, NULL, CLI_RUNS_O_DB},                                               \
    {"name", required_argument, NULL, CLI_RUNS_O_NAME},                                           \
    {"json", no_argument, NULL, CLI_RUNS_O_JSON},                                                 \
    {"profiles", required_argument, NULL, CLI_RUNS_O_PROFILES},                                   \
    {"no-progress", no_argument, NULL, CLI_RUNS_O_NOPROG},                                        \
    {"search-replays", required_argument, NULL, CLI_RUNS_O_REPLAYS},                              \
    {"seeds", required_argument, NULL, CLI_RUNS_O_SEEDS},                                         \
    {"store", required_argument, NULL, CLI_RUNS_O_STORE},                                         \
    {"help", no_argument, NULL, 'h'}

/* Parse a --policies list into o (bundles checked and labelled). CLI_OK, CLI_EUSAGE with the
 * message on stderr, or CLI_EFAIL (out of memory). */
int cli_runs_policies(cli_runs_opts *o, const char *arg);
/* Take option c (getopt_long's value) with argument arg when it is a shared one: CLI_OK,
 * CLI_EUSAGE or CLI_EFAIL; 1 when c is not one of them (the command's own). */
int cli_runs_opt(cli_runs_opts *o, int c, const char *arg);
/* runner_files_fn: the scenario file and its traces are inputs, the database the output; none
 * may be another. */
int cli_runs_files(void *ud, const scn_scenario *sc, const char *db, ss_errbuf *eb);
void cli_runs_fini(cli_runs_opts *o);

#endif
