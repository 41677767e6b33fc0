/* Opening the files a command reads (profiles, traces, scenarios, experiment files, tables):
 * each must be a regular file, checked before the first read, so that a FIFO, a device or a
 * folder named as an input is refused at once ("PATH: not a regular file") instead of hanging
 * the command in open() or read(). Not for output files (core/ss_file.h) nor for the
 * results database (store/). */
#ifndef SS_CORE_SS_INPUT_H
#define SS_CORE_SS_INPUT_H

#include "core/ss_err.h"

#include <stdio.h>

/* Flags of ss_input_open. */
enum {
    /* path may also name a pipe this process already holds open: its standard input
     * (/dev/stdin, /dev/fd/0) or another descriptor (/dev/fd/N, /proc/self/fd/N, as a shell's
     * <(command) gives): for the readers that accept "-" and read their input once, in
     * order. Any other FIFO is refused as usual. */
    SS_INPUT_STDIN = 1,
};

/**
 * Open path, an input that must be a regular file, for reading. The file is opened with
 * O_NONBLOCK (opening a FIFO waits for no writer), checked with fstat, and only then made
 * blocking again and wrapped in a stream; its descriptor is close-on-exec.
 *
 * @param f_out  the open stream, written only on success; the caller closes it with fclose
 * @param path   borrowed
 * @param flags  0 or SS_INPUT_STDIN
 * @return SS_OK; SS_EIO with "PATH: cannot open: why" (errno left as open() set it, so that a
 *         caller can tell a missing file); SS_EPARSE with "PATH: not a regular file" for a
 *         FIFO, device, socket or folder; SS_ENOMEM
 */
int ss_input_open(FILE **f_out, const char *path, int flags, ss_errbuf *eb);

/* ss_input_open for readers that need a file descriptor (zlib's gzdopen): the same checks
 * and errors; *fd_out, blocking and close-on-exec, is written only on success, and the caller
 * closes it (or hands it to a library that does). */
int ss_input_open_fd(int *fd_out, const char *path, int flags, ss_errbuf *eb);

#endif
