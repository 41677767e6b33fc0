/* The gnuplot backend: gnuplot from PATH as a process of its own (in its own process group),
 * the figure's input written down a pipe, waited for with a timeout (SLICESIM_GNUPLOT_TIMEOUT_S,
 * default 120 s) after which it is killed, group and all. The only code that starts a process
 * for a figure. */
#include "plot/plot_int.h"

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

/* Write all of buf to fd before `deadline`: 0, or -1 (errno EPIPE: gnuplot is gone; ETIMEDOUT). */
static int write_until(int fd, const char *buf, size_t n, double deadline)
{
    while (n > 0) {
        double left = deadline - now_s();
        if (left <= 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        int r = poll(&pfd, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            continue;
        ssize_t w = write(fd, buf, n);
        if (w < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (w < 0)
            return -1;
        buf += w, n -= (size_t)w;
    }
    return 0;
}

/* Run gnuplot (in its own process group) on `input`, waiting at most timeout_s for it to read
 * everything and exit; a gnuplot that takes longer is killed, group and all. What failed is
 * named with `out`, the figure being drawn. */
static int run_gnuplot(const char *input, size_t n, const char *out, double timeout_s,
                       ss_errbuf *eb)
{
    if (!gnuplot_on_path())
        return ss_err(eb, SS_EIO, "gnuplot not found; install gnuplot-nox");
    int fds[2];
    if (pipe(fds) != 0)
        return ss_err(eb, SS_EIO, "cannot start gnuplot: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fds[0]), close(fds[1]);
        return ss_err(eb, SS_EIO, "cannot start gnuplot: %s", strerror(e));
    }
    if (pid == 0) {
        setpgid(0, 0);
        dup2(fds[0], STDIN_FILENO);
        close(fds[0]), close(fds[1]);
        execlp("gnuplot", "gnuplot", (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid); /* also here: the kill below must not race the child's own call */
    close(fds[0]);
    struct sigaction ign = {.sa_handler = SIG_IGN}, old;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGPIPE, &ign, &old); /* a gnuplot that exits early is an error, not a signal */
    double deadline = now_s() + timeout_s;
    int wr = write_until(fds[1], input, n, deadline), timed_out = wr && errno == ETIMEDOUT;
    close(fds[1]);
    sigaction(SIGPIPE, &old, NULL);
    int st = 0;
    pid_t got = 0;
    while (!timed_out && (got = waitpid(pid, &st, WNOHANG)) == 0) {
        if (now_s() >= deadline)
            timed_out = 1;
        else
            nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
    }
    if (timed_out || got < 0) {
        kill(-pid, SIGKILL);
        waitpid(pid, &st, 0);
        if (timed_out)
            return ss_err(eb, SS_EIO, "gnuplot did not finish drawing %s within %g s (set "
                                      GNUPLOT_TIMEOUT_ENV " to wait longer)", out, timeout_s);
        return ss_err(eb, SS_EIO, "gnuplot: %s", strerror(errno));
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
        return ss_err(eb, SS_EIO, "gnuplot not found; install gnuplot-nox");
    if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
        return ss_err(eb, SS_EIO, "gnuplot failed drawing %s (exit status %d)", out,
                      WEXITSTATUS(st));
    if (WIFSIGNALED(st))
        return ss_err(eb, SS_EIO, "gnuplot failed drawing %s (killed by signal %d)", out,
                      WTERMSIG(st));
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
                          ss_errbuf *eb)
{
    const gnuplot_priv *g = priv;
    return run_gnuplot(script, n, out, g->timeout_s, eb);
}

const plot_backend_ops plot__gnuplot = {
    .abi_version = PLOT__ABI_VERSION, .name = "gnuplot", .priv_size = sizeof(gnuplot_priv),
    .init = gnuplot_init, .render = gnuplot_render,
};
