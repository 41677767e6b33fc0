/* The gnuplot backend: gnuplot from PATH as a process of its own (in its own process group),
 * the figure's input written down a pipe and the figure read back from its standard output,
 * what it says on its standard error kept (never passed through; its last line named when it
 * fails),
 * waited for with a timeout (SLICESIM_GNUPLOT_TIMEOUT_S, default 120 s) after which it is
 * killed, group and all. The only code that starts a process for a figure. */
#include "plot/plot_int.h"

#include "core/ss_alloc.h"
#include "core/ss_parse.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GNUPLOT_TIMEOUT_ENV "SLICESIM_GNUPLOT_TIMEOUT_S"

/* How long one gnuplot may take: SLICESIM_GNUPLOT_TIMEOUT_S, default 120 s. */
static int gnuplot_timeout(double *s_out, ss_errbuf *eb)
{
    const char *env = getenv(GNUPLOT_TIMEOUT_ENV);
    *s_out = 120;
    if (env && *env && (ss_parse_doublez(env, s_out) || !(*s_out > 0) || *s_out > 1e6))
        return ss_err(eb, SS_EPARSE, GNUPLOT_TIMEOUT_ENV ": expected a positive number of"
                                     " seconds, got '%s'", env);
    return SS_OK;
}

/* Whether an executable gnuplot is on PATH. */
static int gnuplot_on_path(void)
{
    const char *path = getenv("PATH");
    char dir[4096], file[4200];
    for (const char *p = path ? path : "/usr/bin:/bin"; p;) {
        size_t len = strcspn(p, ":");
        snprintf(dir, sizeof dir, "%.*s", (int)(len < sizeof dir ? len : sizeof dir - 1), p);
        snprintf(file, sizeof file, "%s/gnuplot", len ? dir : ".");
        if (access(file, X_OK) == 0)
            return 1;
        p = p[len] ? p + len + 1 : NULL;
    }
    return 0;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A figure larger than this is refused (gnuplot's figures here are well under 10 MB). */
#define FIGURE_MAX (256u << 20)

/* The figure as it arrives on gnuplot's standard output. */
typedef struct figure_buf {
    char *b;    /* owned (ss_malloc) */
    size_t n, cap;
} figure_buf;

/* Read what is ready on fd into fb: 1 at the end of the stream, 0 for more, -1 with errno set
 * (ENOMEM, EFBIG past FIGURE_MAX, or read's). */
static int read_some(int fd, figure_buf *fb)
{
    if (fb->cap - fb->n < 65536) {
        if (fb->cap >= FIGURE_MAX) {
            errno = EFBIG;
            return -1;
        }
        size_t cap = fb->cap ? fb->cap * 2 : 262144;
        char *nb = ss_realloc(fb->b, cap);
        if (!nb) {
            errno = ENOMEM;
            return -1;
        }
        fb->b = nb, fb->cap = cap;
    }
    ssize_t r = read(fd, fb->b + fb->n, fb->cap - fb->n);
    if (r < 0)
        return errno == EINTR || errno == EAGAIN ? 0 : -1;
    fb->n += (size_t)r;
    return r == 0;
}

/* What gnuplot says on its standard error: its first GP_ERR_MAX - 1 bytes, the rest read and
 * dropped. */
#define GP_ERR_MAX 4096
typedef struct gp_err {
    int fd;                 /* the pipe, -1 once it ended */
    char text[GP_ERR_MAX];
    size_t n;
} gp_err;

static void read_err(gp_err *e)
{
    char buf[4096];
    ssize_t r = read(e->fd, buf, sizeof buf);
    if (r < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (r <= 0) {
        close(e->fd);
        e->fd = -1;
        return;
    }
    size_t take = (size_t)r < GP_ERR_MAX - 1 - e->n ? (size_t)r : GP_ERR_MAX - 1 - e->n;
    memcpy(e->text + e->n, buf, take);
    e->n += take;
    e->text[e->n] = '\0';
}

/* The last non-blank line gnuplot wrote to its standard error into out (n bytes; "" when it
 * wrote none): where its error is ("line 12: undefined variable: x"). */
static void last_line(const gp_err *e, char *out, size_t n)
{
    size_t end = e->n;
    while (end > 0 && strchr(" \t\r\n", e->text[end - 1]))
        end--;
    size_t start = end;
    while (start > 0 && e->text[start - 1] != '\n')
        start--;
    snprintf(out, n, "%.*s", (int)(end - start), e->text + start);
    for (char *p = out; *p; p++)
        if ((unsigned char)*p < 0x20)
            *p = ' ';
}

/* Write buf (n bytes) to `in` while reading `out` into fb and gnuplot's standard error into
 * err, until gnuplot closes its standard output, before `deadline`: 0, or -1 with errno set
 * (ETIMEDOUT, or what read_some gives). The input is closed once written, or when gnuplot
 * stops reading it (EPIPE: its exit status tells why); *unread is then what it did not take. */
static int pump(int in, const char *buf, size_t n, int out, figure_buf *fb, gp_err *err,
                double deadline, size_t *unread)
{
    for (;;) {
        double left = deadline - now_s();
        if (left <= 0) {
            errno = ETIMEDOUT;
            break;
        }
        struct pollfd pfd[3] = {{.fd = out, .events = POLLIN}, {.fd = err->fd, .events = POLLIN},
                                {.fd = in, .events = POLLOUT}};
        int r = poll(pfd, in >= 0 ? 3 : 2, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            break;
        if (err->fd >= 0 && pfd[1].revents)
            read_err(err);
        if (in >= 0 && pfd[2].revents) {
            ssize_t w = write(in, buf, n);
            if (w > 0)
                buf += w, n -= (size_t)w;
            if (n == 0 || (w < 0 && errno != EINTR && errno != EAGAIN)) {
                close(in);
                in = -1;
            }
        }
        if (pfd[0].revents) {
            int got = read_some(out, fb);
            if (got < 0)
                break;
            if (got == 1) {
                *unread = n;
                if (in >= 0)
                    close(in);
                return 0;
            }
        }
    }
    int e = errno;
    *unread = n;
    if (in >= 0)
        close(in);
    errno = e;
    return -1;
}

/* Wait for gnuplot (pid) to exit before `deadline`, or kill it, group and all: 0 with its
 * status in *st, or -1 (errno ETIMEDOUT, or waitpid's). */
static int wait_until(pid_t pid, int *st, double deadline)
{
    pid_t got;
    while ((got = waitpid(pid, st, WNOHANG)) == 0 && now_s() < deadline)
        nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
    if (got == pid)
        return 0;
    int e = got == 0 ? ETIMEDOUT : errno;
    kill(-pid, SIGKILL);
    waitpid(pid, st, 0);
    errno = e;
    return -1;
}

/* Start gnuplot in its own process group, its standard input, output and error pipes: 0 with
 * the pid and the parent's ends of the pipes, or -1 with errno set. */
static int start_gnuplot(pid_t *pid_out, int *in_out, int *out_out, int *err_out)
{
    int p[3][2], made = 0;
    for (; made < 3; made++)
        if (pipe(p[made]) != 0)
            break;
    pid_t pid = made == 3 ? fork() : -1;
    if (pid < 0) {
        int e = errno;
        for (int i = 0; i < made; i++)
            close(p[i][0]), close(p[i][1]);
        errno = e;
        return -1;
    }
    if (pid == 0) {
        setpgid(0, 0);
        dup2(p[0][0], STDIN_FILENO);
        dup2(p[1][1], STDOUT_FILENO);
        dup2(p[2][1], STDERR_FILENO);
        for (int i = 0; i < 3; i++)
            close(p[i][0]), close(p[i][1]);
        execlp("gnuplot", "gnuplot", (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid); /* also here: the kill in wait_until must not race the child's own call */
    close(p[0][0]), close(p[1][1]), close(p[2][1]);
    *pid_out = pid, *in_out = p[0][1], *out_out = p[1][0], *err_out = p[2][0];
    return 0;
}

/* What gnuplot's exit status st says about drawing `out`: SS_OK or SS_EIO with eb set (naming
 * the last line it wrote to its standard error, said). */
static int exit_status(int st, const char *out, size_t unread, const char *said, ss_errbuf *eb)
{
    if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
        return ss_err(eb, SS_EIO, "gnuplot not found; install gnuplot-nox");
    if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
        return ss_err(eb, SS_EIO, "gnuplot failed drawing %s (exit status %d)%s%.300s", out,
                      WEXITSTATUS(st), *said ? ": " : "", said);
    if (WIFSIGNALED(st))
        return ss_err(eb, SS_EIO, "gnuplot failed drawing %s (killed by signal %d)", out,
                      WTERMSIG(st));
    if (unread)
        return ss_err(eb, SS_EIO, "gnuplot stopped reading its input drawing %s (%zu bytes "
                                  "left)", out, unread);
    return SS_OK;
}

/* Run gnuplot on `input`, reading the figure it writes to its standard output, waiting at most
 * timeout_s for it to finish and exit; a gnuplot that takes longer is killed, group and all.
 * What failed is named with `out`, the figure being drawn. */
static int run_gnuplot(const char *input, size_t n, const char *out, double timeout_s,
                       char **fig_out, size_t *fig_n_out, ss_errbuf *eb)
{
    if (!gnuplot_on_path())
        return ss_err(eb, SS_EIO, "gnuplot not found; install gnuplot-nox");
    pid_t pid;
    int in, from;
    gp_err err = {.fd = -1, .n = 0};
    if (start_gnuplot(&pid, &in, &from, &err.fd) != 0)
        return ss_err(eb, SS_EIO, "cannot start gnuplot: %s", strerror(errno));
    struct sigaction ign = {.sa_handler = SIG_IGN}, old;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGPIPE, &ign, &old); /* a gnuplot that exits early is an error, not a signal */
    double deadline = now_s() + timeout_s;
    figure_buf fb = {0};
    size_t unread = 0;
    int pumped = pump(in, input, n, from, &fb, &err, deadline, &unread), e = errno;
    close(from);
    /* what it says after closing its output (its error after the figure), until it ends */
    while (pumped == 0 && err.fd >= 0 && now_s() < deadline) {
        struct pollfd pe = {.fd = err.fd, .events = POLLIN};
        if (poll(&pe, 1, (int)((deadline - now_s()) * 1000) + 1) > 0)
            read_err(&err);
    }
    if (err.fd >= 0)
        close(err.fd);
    char said[512];
    last_line(&err, said, sizeof said);
    sigaction(SIGPIPE, &old, NULL);
    int st = 0, rc;
    if (pumped == 0 && wait_until(pid, &st, deadline) != 0) { /* killed there */
        pumped = -1;
        e = errno;
    } else if (pumped != 0) {
        kill(-pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
    if (pumped == 0)
        rc = exit_status(st, out, unread, said, eb);
    else if (e == ETIMEDOUT)
        rc = ss_err(eb, SS_EIO, "gnuplot did not finish drawing %s within %g s (set "
                                GNUPLOT_TIMEOUT_ENV " to wait longer)", out, timeout_s);
    else if (e == ENOMEM)
        rc = ss_err(eb, SS_ENOMEM, "out of memory");
    else
        rc = ss_err(eb, SS_EIO, "gnuplot drawing %s: %s", out,
                    e == EFBIG ? "a figure of over 256 MiB" : strerror(e));
    if (rc) {
        ss_free(fb.b);
        return rc;
    }
    *fig_out = fb.b;
    *fig_n_out = fb.n;
    return SS_OK;
}

/* ---- the backend ---------------------------------------------------------------------------- */

typedef struct gnuplot_priv {
    double timeout_s; /* how long one figure may take */
} gnuplot_priv;

static int gnuplot_init(void *priv, ss_errbuf *eb)
{
    gnuplot_priv *g = priv;
    return gnuplot_timeout(&g->timeout_s, eb);
}

static int gnuplot_render(void *priv, const char *script, size_t n, const char *out,
                          char **fig_out, size_t *fig_n_out, ss_errbuf *eb)
{
    const gnuplot_priv *g = priv;
    return run_gnuplot(script, n, out, g->timeout_s, fig_out, fig_n_out, eb);
}

const plot_backend_ops plot__gnuplot = {
    .abi_version = PLOT__ABI_VERSION, .name = "gnuplot", .priv_size = sizeof(gnuplot_priv),
    .init = gnuplot_init, .render = gnuplot_render,
};
