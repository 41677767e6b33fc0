/* `slicesim db merge OUT.db IN.db...`: join results databases (a sharded sweep's, or any
 * runs) into one; a sweep point OUT already has is kept and the input's copy skipped. */
#include "app/cli.h"

#include "core/ss_err.h"
#include "store/store.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
        "usage: slicesim db merge OUT.db IN.db [IN.db ...]\n"
        "\n"
        "Copy every run of each input database (all its rows, under new run ids) into OUT.db,\n"
        "created if missing. A run that is a sweep point OUT.db already has is skipped, so\n"
        "merging the shards of a sweep (`slicesim sweep --shard K/N`) gives one complete sweep,\n"
        "and merging twice adds nothing. Validations (slicesim validate) are copied too, with\n"
        "their operator and iteration rows; one OUT.db already holds (equal in every column but\n"
        "its id) is skipped. Each input is merged in one transaction. Inputs are only read (an\n"
        "older schema is read as it is), and all are checked before OUT.db is touched; an\n"
        "OUT.db this command created is removed again when the merge fails.\n"
        "\n"
        "Exit status: 0 success, 1 a database failed (OUT.db's disk full, an input locked),\n"
        "2 usage or bad input: an input that is missing, not a slicesim database, damaged or\n"
        "of a newer schema, named in a one-line message.\n");
}

/* Before anything is written: no input is the output, and every input is a readable slicesim
 * database (opened read-only). */
static int check_inputs(int argc, char **argv, ss_errbuf *eb)
{
    cli_files files = {0};
    int rc = cli_files_add(&files, "the output", argv[2], 1, eb);
    for (int i = 3; !rc && i < argc; i++)
        rc = cli_files_add(&files, "input", argv[i], 0, eb);
    cli_files_fini(&files);
    for (int i = 3; !rc && i < argc; i++)
        rc = store_check_input(argv[i], eb);
    return rc;
}

int cmd_db(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return CLI_OK;
    }
    if (argc < 2 || strcmp(argv[1], "merge")) {
        fprintf(stderr, "slicesim: db: expected 'merge' (see slicesim db --help)\n");
        return CLI_EUSAGE;
    }
    if (argc >= 3 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
        usage(stdout);
        return CLI_OK;
    }
    if (argc < 4) {
        fprintf(stderr, "slicesim: db merge: expected OUT.db and at least one IN.db\n");
        return CLI_EUSAGE;
    }
    ss_errbuf eb = {""};
    int rc = check_inputs(argc, argv, &eb);
    if (rc) {
        fprintf(stderr, "slicesim: db merge: %s\n", eb.msg);
        return rc == SS_EIO ? CLI_EUSAGE : cli_status_of(rc);
    }
    store *out = NULL;
    rc = store_open(&out, argv[2], &eb);
    uint64_t total = 0, dups = 0, vals = 0, val_dups = 0;
    for (int i = 3; !rc && i < argc; i++) {
        store_merge_counts c;
        rc = store_merge_counted(out, argv[i], &c, &eb);
        if (!rc) {
            printf("  %s: %" PRIu64 " runs copied, %" PRIu64 " sweep points already there",
                   argv[i], c.runs_copied, c.runs_skipped);
            if (c.validations_copied || c.validations_skipped)
                printf("; %" PRIu64 " validations copied, %" PRIu64 " already there",
                       c.validations_copied, c.validations_skipped);
            if (c.fits_copied || c.fits_skipped)
                printf("; %" PRIu64 " fits copied, %" PRIu64 " already there", c.fits_copied,
                       c.fits_skipped);
            putchar('\n');
            total += c.runs_copied;
            dups += c.runs_skipped;
            vals += c.validations_copied;
            val_dups += c.validations_skipped;
        }
    }
    /* a merge that fails leaves no new file behind (store_open removes one it made itself) */
    if (rc)
        store_close_discard(&out);
    else
        store_close(&out);
    if (rc) {
        fprintf(stderr, "slicesim: db merge: %s\n", eb.msg);
        return rc == SS_EIO ? CLI_EUSAGE : cli_status_of(rc);
    }
    printf("slicesim db merge: %s: %" PRIu64 " runs added, %" PRIu64 " skipped", argv[2], total,
           dups);
    if (vals || val_dups)
        printf("; %" PRIu64 " validations added, %" PRIu64 " skipped", vals, val_dups);
    putchar('\n');
    return CLI_OK;
}
