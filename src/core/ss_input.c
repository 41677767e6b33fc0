/* Input files that must be regular files: opened without blocking, checked with fstat, then
 * read as usual. A FIFO opened for reading blocks in open() until a writer comes, and one
 * opened without blocking reads as empty until then, so neither a plain fopen nor a check
 * after it will do. Not for output files (ss_file.c). */
#include "core/ss_input.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 1 when st is the file this process's standard input is. */
static int is_stdin(const struct stat *st)
{
    struct stat in;
    return fstat(STDIN_FILENO, &in) == 0 && in.st_dev == st->st_dev && in.st_ino == st->st_ino;
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
    if (!S_ISREG(st.st_mode) && !((flags & SS_INPUT_STDIN) && is_stdin(&st))) {
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
