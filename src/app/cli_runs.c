/* The options compare and capacity share (cli_runs.h). */
#include "app/cli_runs.h"

#include "core/ss_alloc.h"

#include <stdio.h>

int cli_runs_policies(cli_runs_opts *o, const char *arg)
{
    ss_free(o->policies_text);
    if (!(o->policies_text = ss_strdup(arg)))
        return CLI_EFAIL;
    ss_errbuf eb;
    o->n_policies = runner_bundles_parse(arg, o->policies_text, o->policy, o->label,
                                         CLI_RUNS_MAX_POLICIES, &eb);
    if (o->n_policies < 0) {
        fprintf(cli_err(), "slicesim: %s: --policies: %s\n", o->cmd, eb.msg);
        return CLI_EUSAGE;
    }
    return CLI_OK;
}

/* A count option of o's command, 1 to max, into *out: CLI_OK or CLI_EUSAGE with the message. */
static int count_opt(const cli_runs_opts *o, const char *name, const char *arg, long max,
                     int *out)
{
    long n;
    char what[64];
    snprintf(what, sizeof what, "%s: %s", o->cmd, name);
    if (cli_parse_long(what, arg, 1, max, &n))
        return CLI_EUSAGE;
    *out = (int)n;
    return CLI_OK;
}

int cli_runs_opt(cli_runs_opts *o, int c, const char *arg)
{
    switch (c) {
    case 'c': o->config = arg; return CLI_OK;
    case CLI_RUNS_O_POLICIES: return cli_runs_policies(o, arg);
    case CLI_RUNS_O_SET:
        if (ss_grow((void **)&o->sets, &o->cap_sets, o->n_sets + 1, sizeof *o->sets))
            return CLI_EFAIL;
        o->sets[o->n_sets++] = arg;
        return CLI_OK;
    case CLI_RUNS_O_DB: o->db = arg; return CLI_OK;
    case CLI_RUNS_O_NAME: return cli_name_opt(o->cmd, "--name", arg, &o->name);
    case CLI_RUNS_O_JSON: o->json = 1; return CLI_OK;
    case CLI_RUNS_O_PROFILES: o->profiles = arg; return CLI_OK;
    case CLI_RUNS_O_NOPROG: o->progress = 0; return CLI_OK;
    case CLI_RUNS_O_REPLAYS:
        return count_opt(o, "--search-replays", arg, RUNNER_STATIC_BEST_MAX_REPLAYS,
                         &o->search_replays);
    case CLI_RUNS_O_SEEDS: return count_opt(o, "--seeds", arg, CLI_RUNS_MAX_SEEDS, &o->n_seeds);
    case CLI_RUNS_O_STORE: {
        ss_errbuf eb = {""};
        if (store_keep_parse(arg, &o->keep, &eb))
            return cli_usage_error(o->cmd, "%s", eb.msg);
        return CLI_OK;
    }
    default: return 1;
    }
}

int cli_runs_files(void *ud, const scn_scenario *sc, const char *db, ss_errbuf *eb)
{
    (void)ud;
    cli_files files = {0};
    int rc = cli_scenario_files(&files, sc, db, eb);
    cli_files_fini(&files);
    return rc;
}

void cli_runs_fini(cli_runs_opts *o)
{
    ss_free(o->policies_text);
    ss_free(o->sets);
    o->policies_text = NULL;
    o->sets = NULL;
}
