/* Input files that must be regular files: opened without blocking, checked with fstat, then
 * read as usual. A FIFO opened for reading blocks in open() until a writer comes, and one
 * opened without blocking reads as empty until then, so neither a plain fopen nor a check
 * after it will do. Not for output files (ss_file.c). */
#include "core/ss_input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 1 when st is a file this process already holds open as path names it: its standard input
 * (/dev/stdin), or descriptor N of /dev/fd/N or /proc/self/fd/N (a shell's <(command)). Such
 * a pipe has its writer already, so reading it waits for data, never for a writer to come. */
static int is_held(const char *path, const struct stat *st)
{
    int n = STDIN_FILENO;
    const char *num = !strncmp(path, "/dev/fd/", 8) ? path + 8
                    : !strncmp(path, "/proc/self/fd/", 14) ? path + 14 : NULL;
    if (num) {
        char *end;
        long v = strtol(num, &end, 10);
        if (end == num || *end || v < 0 || v > 1 << 20)
            return 0;
        n = (int)v;
    } else if (strcmp(path, "/dev/stdin")) {
        return 0;
    }
    struct stat in;
    return fstat(n, &in) == 0 && in.st_dev == st->st_dev && in.st_ino == st->st_ino;
}

/* "PATH: cannot open: why" for errno e, with errno left at e. */
static int cannot_open(const char *path, int e, ss_errbuf *eb)
{
    ss_err(eb, SS_EIO, "%s: cannot open: %s", path, strerror(e));
    errno = e;
    return SS_EIO;
}

int ss_input_open_fd(int *fd_out, const char *path, int flags, ss_errbuf *eb)
{
    if (!fd_out || !path)
        return ss_err(eb, SS_EINVAL, "ss_input_open: NULL argument");
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return cannot_open(path, errno, eb);
    struct stat st;
    int fl;
    if (fstat(fd, &st) != 0 || (fl = fcntl(fd, F_GETFL)) < 0 ||
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(fd);
        return cannot_open(path, e, eb);
    }
    if (!S_ISREG(st.st_mode) && !((flags & SS_INPUT_STDIN) && is_held(path, &st))) {
        close(fd);
        return ss_err(eb, SS_EPARSE, "%s: not a regular file", path);
    }
    *fd_out = fd;
    return SS_OK;
}

int ss_input_open(FILE **f_out, const char *path, int flags, ss_errbuf *eb)
{
    if (!f_out)
        return ss_err(eb, SS_EINVAL, "ss_input_open: NULL argument");
    int fd;
    int rc = ss_input_open_fd(&fd, path, flags, eb);
    if (rc)
        return rc;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        close(fd);
        return ss_err(eb, e == ENOMEM ? SS_ENOMEM : SS_EIO, "%s: cannot open: %s", path,
                      strerror(e));
    }
    *f_out = f;
    return SS_OK;
}
