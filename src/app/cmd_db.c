/* `slicesim db merge OUT.db IN.db...`: join results databases (a sharded sweep's, or any
 * runs) into one; a sweep point OUT already has is kept and the input's copy skipped.
 * `slicesim db export DB --csv DIR`: every table as DIR/TABLE.csv, for notebooks. */
#include "app/cli.h"

#include "core/ss_alloc.h"
#include "core/ss_err.h"
#include "core/ss_file.h"
#include "store/store.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
        "usage: slicesim db merge OUT.db IN.db [IN.db ...]\n"
        "       slicesim db export DB --csv DIR [--tables T1,T2,...]\n"
        "\n"
        "merge:\n"
        "Copy every run of each input database (all its rows, under new run ids) into OUT.db,\n"
        "created if missing. A run that is a sweep point OUT.db already has is skipped, so\n"
        "merging the shards of a sweep (`slicesim sweep --shard K/N`) gives one complete sweep;\n"
        "so is a run equal to one OUT.db holds (in every runs column but its id: the same run,\n"
        "merged before), so merging twice adds nothing. Validations (slicesim validate), fits\n"
        "(slicesim fit) and capacities (slicesim capacity) are copied too, with their rows;\n"
        "one OUT.db already holds (equal in every column but its id) is skipped. Each input is\n"
        "merged in one transaction. Inputs are only read (an older schema is read as it is),\n"
        "and all are checked before OUT.db is touched; an OUT.db this command created is\n"
        "removed again when the merge fails.\n"
        "\n"
        "export: write each table of DB (or those --tables names) as DIR/TABLE.csv, DIR made if\n"
        "missing: a header of column names, then the rows in the table's order; comma-separated,\n"
        "lines ending in LF, a field with a comma, quote or line break quoted (RFC 4180), an SQL\n"
        "NULL empty, an empty text \"\", a real with the digits that read back as its value.\n"
        "DB is only read (an older schema is read as the current one, its newer columns empty\n"
        "or at their defaults). The tables are those of docs/reference/database.md; join them\n"
        "on run_id (capacity_seeds to capacities on capacity_id).\n"
        "Each file is written whole or not at all.\n"
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

/* ---- export ------------------------------------------------------------------------------ */

typedef struct exporter {
    const char *dir;
    char **only;        /* --tables (NULL: every table) */
    int n_only;
    int *found;         /* each of only[] was a table */
    int checking;       /* the first pass: only mark what --tables found */
    FILE *f;            /* the table being written */
    uint64_t rows;      /* of it, header excluded */
    int n_tables;
} exporter;

/* One CSV field: quoted when it has a comma, quote, line break or edge blank, or is empty
 * text (so that it differs from NULL, which is empty). */
static void csv_field(FILE *f, const char *v)
{
    if (!v)
        return;
    size_t n = strlen(v);
    if (n && !strpbrk(v, ",\"\r\n") && v[0] != ' ' && v[n - 1] != ' ') {
        fputs(v, f);
        return;
    }
    fputc('"', f);
    for (; *v; v++) {
        if (*v == '"')
            fputc('"', f);
        fputc(*v, f);
    }
    fputc('"', f);
}

static int export_row(void *ud, int n, const char *const *cells, ss_errbuf *eb)
{
    (void)eb;
    exporter *x = ud;
    for (int i = 0; i < n; i++) {
        if (i)
            fputc(',', x->f);
        csv_field(x->f, cells[i]);
    }
    fputc('\n', x->f);
    x->rows++;
    return SS_OK;
}

static int export_table(store *db, exporter *x, const char *table, ss_errbuf *eb)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s.csv", x->dir, table) >= (int)sizeof path)
        return ss_err(eb, SS_EINVAL, "%.200s...: the folder's name is too long", x->dir);
    ss_outfile *o = NULL;
    int rc = ss_outfile_open(&o, &x->f, path, 1, eb);
    x->rows = 0;
    if (!rc)
        rc = store_table_rows(db, table, export_row, x, eb);
    if (rc) {
        ss_outfile_abort(&o);
        return rc;
    }
    if ((rc = ss_outfile_commit(&o, eb)))
        return rc;
    printf("  %s: %" PRIu64 " rows\n", path, x->rows - 1);
    x->n_tables++;
    return SS_OK;
}

typedef struct export_ctx {
    store *db;
    exporter *x;
} export_ctx;

static int export_each(void *ud, const char *table, ss_errbuf *eb)
{
    export_ctx *c = ud;
    exporter *x = c->x;
    int wanted = !x->only;
    for (int i = 0; i < x->n_only; i++)
        if (!strcmp(x->only[i], table))
            wanted = x->found[i] = 1;
    return wanted && !x->checking ? export_table(c->db, x, table, eb) : SS_OK;
}

static int cmd_export(int argc, char **argv)
{
    const char *db_path = NULL, *dir = NULL, *tables = NULL;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return CLI_OK;
        }
        if (!strcmp(argv[i], "--csv") || !strcmp(argv[i], "--tables")) {
            if (i + 1 >= argc)
                return cli_usage_error("db export", "%s needs a value", argv[i]);
            *(argv[i][2] == 'c' ? &dir : &tables) = argv[i + 1];
            i++;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error("db export", "unknown option '%s' (see slicesim db --help)",
                                   argv[i]);
        } else if (!db_path) {
            db_path = argv[i];
        } else {
            return cli_usage_error("db export", "one DB only, got '%s' too", argv[i]);
        }
    }
    if (!db_path || !dir)
        return cli_usage_error("db export", "expected DB and --csv DIR (see slicesim db --help)");
    exporter x = {.dir = dir};
    char *list = tables ? ss_strdup(tables) : NULL;
    if (tables && !list)
        return CLI_EFAIL;
    int n_max = 1;
    for (const char *p = tables; p && *p; p++)
        n_max += *p == ',';
    x.only = list ? ss_calloc((size_t)n_max, sizeof *x.only) : NULL;
    x.found = list ? ss_calloc((size_t)n_max, sizeof *x.found) : NULL;
    if (list && (!x.only || !x.found)) {
        ss_free(list);
        ss_free(x.only);
        ss_free(x.found);
        return CLI_EFAIL;
    }
    for (char *save = NULL, *t = list ? strtok_r(list, ",", &save) : NULL; t;
         t = strtok_r(NULL, ",", &save))
        x.only[x.n_only++] = t;
    ss_errbuf eb = {""};
    store *db = NULL;
    int rc = list && !x.n_only ? ss_err(&eb, SS_EPARSE, "--tables: no table named") : SS_OK;
    if (!rc)
        rc = store_open_readonly(&db, db_path, &eb);
    export_ctx c = {db, &x};
    x.checking = 1; /* every name --tables gives is a table before anything is written */
    if (!rc)
        rc = store_tables(db, export_each, &c, &eb);
    for (int i = 0; !rc && i < x.n_only; i++)
        if (!x.found[i])
            rc = ss_err(&eb, SS_EPARSE, "--tables: %s has no table '%s'", db_path, x.only[i]);
    x.checking = 0;
    if (!rc)
        rc = ss_dir_create(dir, &eb);
    if (!rc)
        rc = store_tables(db, export_each, &c, &eb);
    store_close(&db);
    ss_free(list);
    ss_free(x.only);
    ss_free(x.found);
    if (rc) {
        fprintf(stderr, "slicesim: db export: %s\n", eb.msg);
        return rc == SS_EIO && !x.n_tables ? CLI_EUSAGE : cli_status_of(rc);
    }
    printf("slicesim db export: %s: %d tables to %s\n", db_path, x.n_tables, dir);
    return CLI_OK;
}

int cmd_db(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return CLI_OK;
    }
    if (argc >= 2 && !strcmp(argv[1], "export"))
        return cmd_export(argc, argv);
    if (argc < 2 || strcmp(argv[1], "merge")) {
        fprintf(stderr, "slicesim: db: expected 'merge' or 'export' (see slicesim db --help)\n");
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
            if (c.runs_same)
                printf(", %" PRIu64 " runs already there", c.runs_same);
            if (c.validations_copied || c.validations_skipped)
                printf("; %" PRIu64 " validations copied, %" PRIu64 " already there",
                       c.validations_copied, c.validations_skipped);
            if (c.fits_copied || c.fits_skipped)
                printf("; %" PRIu64 " fits copied, %" PRIu64 " already there", c.fits_copied,
                       c.fits_skipped);
            if (c.capacities_copied || c.capacities_skipped)
                printf("; %" PRIu64 " capacities copied, %" PRIu64 " already there",
                       c.capacities_copied, c.capacities_skipped);
            putchar('\n');
            total += c.runs_copied;
            dups += c.runs_skipped + c.runs_same;
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
