/* `slicesim plot DB`: figures from a results database, drawn by gnuplot. This file parses the
 * options and reports; grouping the runs, each kind's data and running gnuplot are plot/'s. */
#include "runner/bundle.h"
#include "app/cli.h"

#include "core/ss_parse.h"
#include "core/ss_file.h"
#include "plot/plot.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
        "usage: slicesim plot DB [--kind KIND[,KIND...]] [-o DIR] [--sweep NAME] [--load X]\n"
        "                        [--format png|svg|pdf|both] [--style screen|paper]\n"
        "                        [--sla-bound P]\n"
        "\n"
        "Draw figures from a results database with gnuplot (scripts in plots/KIND.gp, data\n"
        "piped in). Runs are grouped by a sweep's points (policy and grid keys; seeds averaged):\n"
        "--sweep, else the newest sweep in DB (`slicesim sweep`, `slicesim compare`); a database\n"
        "without sweeps groups runs by every scenario key that differs between them, at their\n"
        "first tenant's rate_scale (more than 24 such series are refused).\n"
        "\n"
        "  --kind LIST     any of throughput-vs-load, sla-vs-load (against load), latency-cdf,\n"
        "                  gpu-time (gpu-timeline), idle-slices, tiers (at one load),\n"
        "                  capacity (each bundle's, of a capacity command stored under the\n"
        "                  sweep: --sweep NAME, capacity's --name); default all\n"
        "  -o DIR          output folder (default plots/out; created)\n"
        "  --sweep NAME    which sweep of DB\n"
        "  --load X        the load of the one-load kinds (default: the highest every policy has)\n"
        "  --style S       screen (1100 x 480 px, a title) or paper (a single column, 3.3 x 2.4\n"
        "                  in, 8 pt fonts, no title: the caption says it); default screen\n"
        "  --format F      png, svg, pdf or both: png and svg for the screen, pdf and svg for\n"
        "                  a paper (default both)\n"
        "  --sla-bound P   the SLA-miss bound drawn on sla-vs-load, %% (default 9, capacity's\n"
        "                  default; 0: none)\n"
        "  -h, --help      this help\n"
        "\n"
        "Lines against load have error bars: the two-sided 95 %% Student-t interval over seeds.\n"
        "A figure with nothing to compare (a line against one load, tiers of runs with one\n"
        "tier) is skipped with a line on stderr saying why. gnuplot comes from PATH; what it\n"
        "prints is kept, and its last line is part of the message when it fails; one that runs\n"
        "longer than SLICESIM_GNUPLOT_TIMEOUT_S seconds (default 120) for a figure is killed.\n"
        "\n"
        "Exit status: 0 success, 1 gnuplot or the database failed, 2 bad input or usage.\n");
}

static int usage_error(const char *msg, const char *arg)
{
    return cli_usage_error("plot", "%s%s%s", msg, arg ? arg : "", arg ? "'" : "");
}

int cmd_plot(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"kind", required_argument, NULL, 'k'}, {"sweep", required_argument, NULL, 's'},
        {"load", required_argument, NULL, 'l'}, {"format", required_argument, NULL, 'f'},
        {"style", required_argument, NULL, 'y'}, {"sla-bound", required_argument, NULL, 'b'},
        {"help", no_argument, NULL, 'h'},       {NULL, 0, NULL, 0},
    };
    const char *dir = "plots/out", *sweep = NULL, *fmt = "both";
    plot_style style = {.paper = 0, .sla_bound_pct = 9};
    int want[PLOT_N_KINDS] = {0}, any = 0;
    double load = NAN;
    char kind_text[512];
    opterr = 0;
    optind = 1;
    if (cli_check_long_options("plot", argc, argv, ":ho:", longopts))
        return CLI_EUSAGE;
    for (int c; (c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1;) {
        switch (c) {
        case 'h': usage(stdout); return CLI_OK;
        case 'o': dir = optarg; break;
        case 's': sweep = optarg; break;
        case 'f':
            if (strcmp(optarg, "png") && strcmp(optarg, "svg") && strcmp(optarg, "pdf") &&
                strcmp(optarg, "both"))
                return usage_error("--format: expected png, svg, pdf or both, got '", optarg);
            fmt = optarg;
            break;
        case 'y':
            if (strcmp(optarg, "screen") && strcmp(optarg, "paper"))
                return usage_error("--style: expected screen or paper, got '", optarg);
            style.paper = !strcmp(optarg, "paper");
            break;
        case 'b':
            if (ss_parse_doublez(optarg, &style.sla_bound_pct) || style.sla_bound_pct < 0 ||
                style.sla_bound_pct > 100)
                return usage_error("--sla-bound: expected a percentage, 0 to 100, got '", optarg);
            break;
        case 'l':
            if (ss_parse_doublez(optarg, &load) || !(load > 0))
                return usage_error("--load: expected a positive number, got '", optarg);
            break;
        case 'k': {
            char *items[PLOT_N_KINDS * 2];
            snprintf(kind_text, sizeof kind_text, "%s", optarg);
            int n = runner_split_list(kind_text, items, PLOT_N_KINDS * 2);
            if (n < 1)
                return usage_error("--kind: expected a comma-separated list, got '", optarg);
            for (int i = 0; i < n; i++) {
                int k = plot_kind_find(items[i]);
                if (k < 0)
                    return usage_error("--kind: unknown kind (see --help): '", items[i]);
                want[k] = any = 1;
            }
            break;
        }
        case ':': return usage_error("option needs an argument: '", argv[optind - 1]);
        default: return usage_error("unknown option '", argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        return usage_error("expected one results database (see --help)", NULL);
    if (!any)
        for (int k = 0; k < PLOT_N_KINDS; k++)
            want[k] = 1;
    plot_backend *be = NULL;
    plot_data *d = NULL;
    ss_errbuf eb = {""};
    int rc = plot_backend_create(&be, "gnuplot", &eb);
    if (!rc)
        rc = plot_data_load(&d, argv[optind], sweep, load, &eb);
    if (!rc)
        rc = ss_dir_create(dir, &eb);
    /* both: a screen's png and svg, a paper's pdf and svg */
    const char *first = strcmp(fmt, "both") ? fmt : style.paper ? "pdf" : "png";
    const char *second = strcmp(fmt, "both") ? NULL : "svg";
    for (int k = 0; !rc && k < PLOT_N_KINDS; k++) {
        if (!want[k])
            continue;
        char why[256];
        int skip = plot_kind_degenerate(d, k, why, sizeof why, &eb);
        if (skip < 0) {
            rc = skip;
            break;
        }
        if (skip) {
            fprintf(stderr, "slicesim: plot: skipped %s: %s\n", plot_kind_name(k), why);
            continue;
        }
        rc = plot_render(be, d, k, dir, first, &style, &eb);
        if (!rc && second)
            rc = plot_render(be, d, k, dir, second, &style, &eb);
        if (!rc && second)
            printf("  %s/%s.{%s,%s}\n", dir, plot_kind_name(k), first, second);
        else if (!rc)
            printf("  %s/%s.%s\n", dir, plot_kind_name(k), first);
    }
    if (rc)
        fprintf(stderr, "slicesim: plot: %s\n", eb.msg);
    plot_data_destroy(&d);
    plot_backend_destroy(&be);
    return cli_status_of(rc);
}
