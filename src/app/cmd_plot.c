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
        "                        [--format png|svg|both]\n"
        "\n"
        "Draw figures from a results database with gnuplot (scripts in plots/KIND.gp, data\n"
        "piped in). Runs are grouped by a sweep's points (policy and grid keys; seeds averaged):\n"
        "--sweep, else the newest sweep in DB (`slicesim sweep`, `slicesim compare`); a database\n"
        "without sweeps groups runs by every scenario key that differs between them, at their\n"
        "first tenant's rate_scale (more than 24 such series are refused).\n"
        "\n"
        "  --kind LIST     any of throughput-vs-load, sla-vs-load (against load), latency-cdf,\n"
        "                  gpu-timeline, idle-slices, tiers (at one load); default all\n"
        "  -o DIR          output folder (default plots/out; created)\n"
        "  --sweep NAME    which sweep of DB\n"
        "  --load X        the load of the one-load kinds (default: the highest every policy has)\n"
        "  --format F      png, svg or both (default both)\n"
        "  -h, --help      this help\n"
        "\n"
        "gnuplot comes from PATH; one that runs longer than SLICESIM_GNUPLOT_TIMEOUT_S seconds\n"
        "(default 120) for a figure is killed.\n"
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
        {"help", no_argument, NULL, 'h'},       {NULL, 0, NULL, 0},
    };
    const char *dir = "plots/out", *sweep = NULL, *fmt = "both";
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
            if (strcmp(optarg, "png") && strcmp(optarg, "svg") && strcmp(optarg, "both"))
                return usage_error("--format: expected png, svg or both, got '", optarg);
            fmt = optarg;
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
    for (int k = 0; !rc && k < PLOT_N_KINDS; k++) {
        if (!want[k])
            continue;
        if (strcmp(fmt, "svg"))
            rc = plot_render(be, d, k, dir, "png", &eb);
        if (!rc && strcmp(fmt, "png"))
            rc = plot_render(be, d, k, dir, "svg", &eb);
        if (!rc)
            printf("  %s/%s.%s\n", dir, plot_kind_name(k), strcmp(fmt, "both") ? fmt : "{png,svg}");
    }
    if (rc)
        fprintf(stderr, "slicesim: plot: %s\n", eb.msg);
    plot_data_destroy(&d);
    plot_backend_destroy(&be);
    return cli_status_of(rc);
}
