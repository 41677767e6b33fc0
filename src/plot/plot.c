/* Drawing a figure: the kinds' names, the backend registry and the wrappers every caller goes
 * through, where the scripts are (plots/KIND.gp), and one figure's gnuplot input (terminal,
 * the kind's data, the script) handed to a backend, whose figure is checked whole and written
 * to its file. What the data are is
 * plot_kinds.c's; running gnuplot is plot_gnuplot.c's. */
#include "plot/plot_int.h"

#include "core/ss_alloc.h"
#include "core/ss_file.h"
#include "core/ss_input.h"

#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const kinds[PLOT_N_KINDS] = {"throughput-vs-load", "sla-vs-load",
                                                "latency-cdf", "gpu-time", "idle-slices",
                                                "tiers", "capacity"};

const char *plot_kind_name(int kind)
{
    if (SS_NEVER(kind < 0 || kind >= PLOT_N_KINDS))
        return "";
    return kinds[kind];
}

int plot_kind_find(const char *name)
{
    for (int k = 0; k < PLOT_N_KINDS; k++)
        if (!strcmp(kinds[k], name))
            return k;
    if (!strcmp(name, "gpu-timeline")) /* gpu-time's name before it said what it shows */
        return 3;
    return -1;
}

/* ---- backends ---------------------------------------------------------------------------- */

static const plot_backend_ops *const backends[] = {&plot__gnuplot, NULL};

struct plot_backend {
    const plot_backend_ops *ops;
    void *priv; /* points into tail */
    _Alignas(16) unsigned char tail[];
};

int plot_backend_create(plot_backend **b_out, const char *name, ss_errbuf *eb)
{
    const plot_backend_ops *ops = NULL;
    for (size_t i = 0; backends[i] && !ops; i++)
        if (!strcmp(backends[i]->name, name))
            ops = backends[i];
    if (!ops)
        return ss_err(eb, SS_ENOTFOUND, "unknown plot backend '%s' (known: gnuplot)", name);
    if (ops->abi_version != PLOT__ABI_VERSION || !ops->render)
        return ss_err(eb, SS_EINVAL, "plot backend '%s': incompatible plug-in", name);
    plot_backend *b = ss_calloc(1, sizeof *b + ops->priv_size);
    if (!b)
        return ss_err(eb, SS_ENOMEM, "out of memory");
    b->ops = ops;
    b->priv = b->tail;
    int rc = ops->init ? ops->init(b->priv, eb) : SS_OK;
    if (rc) {
        if (ops->fini)
            ops->fini(b->priv);
        ss_free(b);
        return rc;
    }
    *b_out = b;
    return SS_OK;
}

void plot_backend_destroy(plot_backend **b)
{
    if (!*b)
        return;
    if ((*b)->ops->fini)
        (*b)->ops->fini((*b)->priv);
    ss_free(*b);
    *b = NULL;
}

/* ---- one figure -------------------------------------------------------------------------- */

/* The folder of the scripts: SLICESIM_PLOTS, else ./plots when it has them (a source tree),
 * else the source tree's. */
static const char *plots_dir(void)
{
    const char *env = getenv("SLICESIM_PLOTS");
    if (env && *env)
        return env;
    if (access("plots/throughput-vs-load.gp", R_OK) == 0)
        return "plots";
    return SS_SOURCE_ROOT "/plots";
}

/* Append the script at path (all of it) to g. */
static int append_script(FILE *g, const char *path, ss_errbuf *eb)
{
    FILE *f = NULL;
    int rc = ss_input_open(&f, path, 0, eb); /* a FIFO there would hang the plot */
    if (rc)
        return rc;
    char buf[8192];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0)
        fwrite(buf, 1, k, g);
    int bad = ferror(f);
    fclose(f);
    if (bad)
        return ss_err(eb, SS_EIO, "%s: cannot read", path);
    fputc('\n', g);
    return SS_OK;
}

/* Whether fig (n bytes) is a whole figure of format fmt: a PNG from its signature to its IEND
 * chunk, an SVG document through its closing tag, a PDF from its header to its %%EOF. A gnuplot that could not write (a full disk)
 * or was cut short leaves less. */
static int figure_whole(const char *fig, size_t n, const char *fmt)
{
    static const unsigned char png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    static const unsigned char png_end[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60,
                                              0x82};
    if (!strcmp(fmt, "png"))
        return n >= 20 && !memcmp(fig, png_sig, 8) && !memcmp(fig + n - 12, png_end, 12);
    while (n > 0 && strchr(" \t\r\n", fig[n - 1]))
        n--;
    if (!strcmp(fmt, "pdf")) /* a header, and the end-of-file marker last */
        return n >= 10 && !memcmp(fig, "%PDF-", 5) && !memcmp(fig + n - 5, "%%EOF", 5);
    return n >= 6 && !memcmp(fig + n - 6, "</svg>", 6) && memmem(fig, n, "<svg", 4);
}

/* Write the figure to out through a temporary file renamed into place (core/ss_file.h), so a
 * full disk or a failure leaves no partial figure and the old one, if any, as it was. */
static int write_figure(const char *out, const char *fig, size_t n, ss_errbuf *eb)
{
    ss_outfile *of = NULL;
    FILE *f = NULL;
    int rc = ss_outfile_open(&of, &f, out, 1, eb);
    if (rc)
        return rc;
    if (fwrite(fig, 1, n, f) != n) {
        int e = errno;
        ss_outfile_abort(&of);
        return ss_err(eb, SS_EIO, "%s: writing: %s", out, strerror(e));
    }
    return ss_outfile_commit(&of, eb);
}

/* The terminal of format fmt in style s, and what every script may read: paper (1 or 0), the
 * SLA-miss bound, the point types series take in turn. */
static void terminal(FILE *g, const char *fmt, const plot_style *s)
{
    if (s->paper && !strcmp(fmt, "pdf"))
        fprintf(g, "set terminal pdfcairo size 3.3in,2.4in font \",8\" noenhanced\n");
    else if (s->paper && !strcmp(fmt, "png"))
        fprintf(g, "set terminal pngcairo size 990,720 font \",24\" noenhanced\n");
    else if (s->paper)
        fprintf(g, "set terminal svg size 330,240 font \"sans,8\" noenhanced\n");
    else if (!strcmp(fmt, "png"))
        fprintf(g, "set terminal pngcairo size 1100,480 font \",10\" noenhanced\n");
    else if (!strcmp(fmt, "pdf"))
        fprintf(g, "set terminal pdfcairo size 11in,4.8in font \",10\" noenhanced\n");
    else
        fprintf(g, "set terminal svg size 1100,480 font \"sans,10\" noenhanced\n");
    fprintf(g, "paper = %d\nsla_bound = %.17g\narray pts[8] = [7, 5, 9, 11, 13, 4, 6, 8]\n",
            s->paper ? 1 : 0, s->sla_bound_pct);
    if (s->paper) /* the key a point smaller; the paper's PNG is drawn at 3 x its size */
        fprintf(g, "set key font \",%d\" samplen 2 spacing 0.9\n", strcmp(fmt, "png") ? 7 : 21);
}

int plot_render(plot_backend *b, const plot_data *d, int kind, const char *dir, const char *fmt,
                const plot_style *s, ss_errbuf *eb)
{
    if (SS_NEVER(kind < 0 || kind >= PLOT_N_KINDS))
        return ss_err(eb, SS_EINVAL, "no figure kind %d", kind);
    char out[4096], script[4096];
    snprintf(out, sizeof out, "%s/%s.%s", dir, kinds[kind], fmt);
    snprintf(script, sizeof script, "%s/%s.gp", plots_dir(), kinds[kind]);
    /* gnuplot gets no path at all: the script is sent inline and the figure comes back on its
     * standard output, so no file name is ever part of the program it runs */
    char *input = NULL, *fig = NULL;
    size_t n = 0, fig_n = 0;
    FILE *g = open_memstream(&input, &n);
    if (!g)
        return ss_err(eb, SS_ENOMEM, "out of memory");
    terminal(g, fmt, s);
    int rc = plot__write_kind(g, d, kind, eb);
    if (!rc)
        rc = append_script(g, script, eb);
    fprintf(g, "set output\n");
    if (fclose(g) != 0 && !rc)
        rc = ss_err(eb, SS_ENOMEM, "out of memory");
    if (!rc)
        rc = b->ops->render(b->priv, input, n, out, &fig, &fig_n, eb);
    if (!rc && !figure_whole(fig, fig_n, fmt))
        rc = ss_err(eb, SS_EIO, "%s: gnuplot gave %s %s figure (%zu bytes); the file is left as "
                                "it was", out, fig_n ? "an incomplete" : "no", fmt, fig_n);
    if (!rc)
        rc = write_figure(out, fig, fig_n, eb);
    free(input); /* open_memstream's buffer comes from malloc */
    ss_free(fig);
    return rc;
}
