/* `slicesim profile import`: converts other tools' measured operator profiles (Vidur's, for
 * now) into slicesim profile tables under profiles/<gpu>/ and prints how far the roofline is
 * from every imported median (the fidelity report), as a table or JSON. Not for the format or
 * the conversion itself: cost/cost_profile.h and cost/profile_vidur.c own those. */
#include "app/cli.h"

#include "catalog/catalog.h"
#include "core/ss_err.h"
#include "core/ss_strbuf.h"
#include "cost/cost_profile.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct prof_opts {
    const char *from;     /* "vidur" */
    const char *gpu;      /* catalog GPU name */
    const char *profiles; /* catalog directory, NULL: catalog_default_dir decides */
    const char *out;      /* output directory, NULL: <profiles>/<gpu> */
    int json;
    int help;
    char **files;         /* argv tail */
    int n_files;
} prof_opts;

static void usage(FILE *f)
{
    fputs("usage: slicesim profile import --from vidur --gpu GPU [--profiles DIR] [-o DIR]\n"
          "                               [--json] FILE...\n\n"
          "Convert measured operator profiles into slicesim profile tables (the format is in\n"
          "profiles/PROFILE-FORMAT.md) for the `profile` and `auto` cost models, and report the\n"
          "roofline's error against every imported median.\n\n"
          "  --from vidur     source tool: Vidur's compute/<gpu>/<org>/<model>/mlp.csv and\n"
          "                   network/<node>/all_reduce.csv or send_recv.csv\n"
          "  --gpu GPU        catalog GPU the profiles were measured on (a100-80g, h100-sxm, ...)\n"
          "  --profiles DIR   catalog directory (default: $SLICESIM_PROFILES, else ./profiles,\n"
          "                   else the source tree's profiles/)\n"
          "  -o DIR           output directory (default: <profiles>/<gpu>/); created if missing\n"
          "  --json           print the fidelity report as JSON\n"
          "  -h, --help       this help\n\n"
          "Tables are named after the catalog model with the source's shape (or the source's\n"
          "model directory) and, for collectives, after the operator and node directory; each\n"
          "is written to a new temporary file beside it (NAME.k3q9zt.tmp, say), then renamed.\n"
          "Files are imported in order; the first bad one stops the command.\n"
          "Exit status: 0 ok, 1 an output could not be written, 2 bad usage or a malformed\n"
          "input file (one line on stderr: FILE:LINE: column: what is wrong).\n",
          f);
}

static int parse_args(int argc, char **argv, prof_opts *o)
{
    static const struct option longopts[] = {
        {"from", required_argument, NULL, 'f'}, {"gpu", required_argument, NULL, 'g'},
        {"profiles", required_argument, NULL, 'p'}, {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    opterr = 0;
    optind = 0; /* GNU: full reinitialisation, in case another parser ran before */
    if (cli_check_long_options("profile import", argc, argv, ":ho:", longopts))
        return CLI_EUSAGE;
    for (int ch; (ch = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1;) {
        switch (ch) {
        case 'f': o->from = optarg; break;
        case 'g': o->gpu = optarg; break;
        case 'p': o->profiles = optarg; break;
        case 'o': o->out = optarg; break;
        case 'j': o->json = 1; break;
        case 'h': o->help = 1; break;
        default:
            fprintf(stderr, "slicesim: profile import: bad option or missing argument '%s' "
                            "(see --help)\n", argv[optind - 1]);
            return CLI_EUSAGE;
        }
    }
    o->files = argv + optind;
    o->n_files = argc - optind;
    return CLI_OK;
}

/* Option checks that need no files: 0, or CLI_EUSAGE after one line on stderr. */
static int check_opts(const prof_opts *o)
{
    if (!o->from)
        fprintf(stderr, "slicesim: --from: required (known: vidur)\n");
    else if (strcmp(o->from, "vidur"))
        fprintf(stderr, "slicesim: --from: unknown source format '%s' (known: vidur)\n", o->from);
    else if (!o->gpu)
        fprintf(stderr, "slicesim: --gpu: required (the GPU the profiles were measured on)\n");
    else if (o->n_files < 1)
        fprintf(stderr, "slicesim: profile import: no input FILE (see --help)\n");
    else
        return CLI_OK;
    return CLI_EUSAGE;
}

/* {======================================================================
 * The fidelity report
 * ======================================================================= */

static void print_header(const cost_prof_import *r, const char *in)
{
    printf("%s -> %s\n", in, r->out_path);
    if (r->collective)
        printf("  %zu rows read, %zu kept (rank 0, one node)\n", r->rows_in, r->rows_kept);
    else
        printf("  %zu rows read; shape %s; roofline: %s\n", r->rows_in, r->shape,
               r->model[0] ? r->model : "no catalog model with this shape");
    printf("  %-10s %5s %5s %-20s %-22s %8s %8s\n", "OP", r->collective ? "GPUS" : "TP", "ROWS",
           r->collective ? "BYTES" : "TOKENS", "MEDIAN_US", "MAPE_%", "BIAS_%");
}

static void print_report(const cost_prof_import *r, const char *in)
{
    print_header(r, in);
    for (size_t i = 0; i < r->n_fid; i++) {
        const cost_prof_fid *f = &r->fid[i];
        char range[32], med[32], mape[16] = "-", bias[16] = "-";
        snprintf(range, sizeof range, "%llu..%llu", (unsigned long long)f->key_min,
                 (unsigned long long)f->key_max);
        snprintf(med, sizeof med, "%.4g..%.4g", f->median_min_us, f->median_max_us);
        if (f->compared) {
            snprintf(mape, sizeof mape, "%.1f", 100 * f->mape);
            snprintf(bias, sizeof bias, "%+.1f", 100 * f->bias);
        }
        printf("  %-10s %5u %5zu %-20s %-22s %8s %8s\n", cost_op_name(f->op), f->tp, f->rows,
               range, med, mape, bias);
    }
}

static void json_pct(ss_strbuf *b, const char *key, int ok, double v)
{
    if (ok)
        ss_strbuf_printf(b, ", \"%s\": %.3f", key, 100 * v);
    else
        ss_strbuf_printf(b, ", \"%s\": null", key);
}

static void json_report(ss_strbuf *b, const cost_prof_import *r, const char *in, int first)
{
    ss_strbuf_printf(b, "%s\n    {\"input\": ", first ? "" : ",");
    ss_strbuf_json_str(b, in);
    ss_strbuf_printf(b, ", \"output\": ");
    ss_strbuf_json_str(b, r->out_path);
    ss_strbuf_printf(b, ", \"kind\": \"%s\", \"rows_in\": %zu, \"rows_kept\": %zu, \"shape\": ",
                     r->collective ? "collective" : "compute", r->rows_in, r->rows_kept);
    ss_strbuf_json_str(b, r->shape);
    ss_strbuf_printf(b, ", \"model\": ");
    if (r->model[0])
        ss_strbuf_json_str(b, r->model);
    else if (r->collective)
        ss_strbuf_printf(b, "null");
    else
        ss_strbuf_printf(b, "null, \"note\": \"no catalog model with this shape\"");
    ss_strbuf_printf(b, ", \"ops\": [");
    for (size_t i = 0; i < r->n_fid; i++) {
        const cost_prof_fid *f = &r->fid[i];
        ss_strbuf_printf(b, "%s\n      {\"op\": \"%s\", \"%s\": %u, \"rows\": %zu, "
                         "\"key\": \"%s\", \"key_min\": %llu, \"key_max\": %llu, "
                         "\"median_min_us\": %.6g, \"median_max_us\": %.6g",
                         i ? "," : "", cost_op_name(f->op), r->collective ? "n_gpus" : "tp",
                         f->tp, f->rows, r->collective ? "bytes" : "tokens",
                         (unsigned long long)f->key_min, (unsigned long long)f->key_max,
                         f->median_min_us, f->median_max_us);
        json_pct(b, "roofline_mape_pct", f->compared, f->mape);
        json_pct(b, "roofline_bias_pct", f->compared, f->bias);
        ss_strbuf_printf(b, "}");
    }
    ss_strbuf_printf(b, "]}");
}

/* }====================================================================== */

/* A table may not overwrite an input or a table this command wrote before. */
static int check_out(void *ud, const char *out_path, ss_errbuf *eb)
{
    return cli_files_add(ud, "the imported table", out_path, 1, eb);
}

/* Import every file, reporting as it goes (JSON is collected and printed at the end). */
static int import_all(const prof_opts *o, const catalog *cat, const cat_gpu *gpu,
                      const char *out_dir, cli_files *files, ss_errbuf *eb)
{
    ss_strbuf js = {0};
    int rc = SS_OK;
    for (int i = 0; !rc && i < o->n_files; i++)
        rc = cli_files_add(files, "input", o->files[i], 0, eb);
    ss_strbuf_printf(&js, "{\"gpu\": ");
    ss_strbuf_json_str(&js, gpu->name);
    ss_strbuf_printf(&js, ", \"imports\": [");
    for (int i = 0; !rc && i < o->n_files; i++) {
        cost_prof_import res;
        if (access(o->files[i], R_OK)) {
            rc = ss_err(eb, SS_EPARSE, "%s: cannot open: %s", o->files[i], strerror(errno));
            break;
        }
        if ((rc = cost_prof_import_vidur_checked(o->files[i], cat, gpu, out_dir, check_out,
                                                 files, &res, eb)))
            break;
        if (o->json)
            json_report(&js, &res, o->files[i], i == 0);
        else
            print_report(&res, o->files[i]);
        cost_prof_import_fini(&res);
    }
    ss_strbuf_printf(&js, "\n]}\n");
    if (!rc && o->json)
        fputs(ss_strbuf_str(&js), stdout);
    if (!rc && !ss_strbuf_ok(&js))
        rc = ss_err(eb, SS_ENOMEM, "profile import: out of memory");
    ss_strbuf_fini(&js);
    return rc;
}

static int run_import(const prof_opts *o)
{
    ss_errbuf eb = {""};
    catalog *cat = NULL;
    const cat_gpu *gpu = NULL;
    const char *dir = catalog_default_dir(o->profiles);
    char out_dir[1024];
    int rc = catalog_load(&cat, dir, &eb);
    if (!rc && (rc = catalog_gpu_find(cat, o->gpu, &gpu, &eb))) {
        char why[SS_ERRBUF_LEN];
        memcpy(why, eb.msg, sizeof why);
        snprintf(eb.msg, sizeof eb.msg, "--gpu: %.400s", why);
    }
    if (!rc && snprintf(out_dir, sizeof out_dir, "%s/%s", dir, o->gpu) >= (int)sizeof out_dir)
        rc = ss_err(&eb, SS_EINVAL, "--profiles: path too long");
    cli_files files = {0};
    if (!rc)
        rc = import_all(o, cat, gpu, o->out ? o->out : out_dir, &files, &eb);
    cli_files_fini(&files);
    if (rc)
        fprintf(stderr, "slicesim: %s\n", eb.msg);
    catalog_destroy(&cat);
    return cli_status_of(rc);
}

int cmd_profile(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return CLI_OK;
    }
    if (argc < 2 || strcmp(argv[1], "import")) {
        fprintf(stderr, "slicesim: profile: %s%s%s (known: import; see --help)\n",
                argc < 2 ? "missing subcommand" : "unknown subcommand '",
                argc < 2 ? "" : argv[1], argc < 2 ? "" : "'");
        return CLI_EUSAGE;
    }
    prof_opts o = {0};
    int st = parse_args(argc - 1, argv + 1, &o);
    if (st || o.help) {
        if (o.help)
            usage(stdout);
        return st;
    }
    if ((st = check_opts(&o)))
        return st;
    return run_import(&o);
}
