/* Output files written so that a failed or interrupted command never leaves a partial or
 * clobbered file, and the identity of files (device and inode) so that a command can refuse
 * an output that names one of its inputs or another output. Not for reading files. */
#ifndef SS_CORE_SS_FILE_H
#define SS_CORE_SS_FILE_H

#include "core/ss_err.h"

#include <stdio.h>

/* ---- safe output files ------------------------------------------------------------------ */

typedef struct ss_outfile ss_outfile;

/**
 * Open path for writing. A regular file, or a path that does not exist yet, in a directory
 * this process may write is written as a temporary file beside it (TARGET.k3q9zt.tmp: six
 * random letters and digits between the name and .tmp), created exclusively under a name no
 * file has (O_EXCL, O_NOFOLLOW: a stale or planted file or link of that name is never written
 * through), mode 0666 less the umask, and renamed over TARGET
 * by ss_outfile_commit, so readers never see a partial file and a failure leaves TARGET as it
 * was. A symbolic link the caller names is followed: TARGET is the file it names, and the link
 * stays. Anything else (a device such as /dev/null or /dev/full, a FIFO, a file in a directory
 * this process may not write) is written in place, through no link but those the caller named;
 * /dev/stdout, /dev/fd/N and /proc/self/fd/N are the open file itself, appended to. While a
 * temporary file exists, SIGINT, SIGTERM and SIGHUP remove it before the process dies of the
 * signal.
 *
 * @param o_out  the open file, written only on success; close with commit or abort
 * @param f_out  the stream to write (owned by *o_out)
 * @param path   borrowed
 * @param binary open in binary mode ("wb") rather than text mode
 * @return SS_OK, SS_ENOMEM, or SS_EIO with eb naming the path
 */
int ss_outfile_open(ss_outfile **o_out, FILE **f_out, const char *path, int binary,
                    ss_errbuf *eb);

/* Flush and close the stream, checking for write errors (a full disk, /dev/full), then rename
 * the temporary file over the target. On failure the temporary file is removed, the target is
 * left as it was (unless written in place), and SS_EIO is returned with eb naming the path.
 * *o is freed and set to NULL either way; NULL is accepted and is SS_OK. */
int ss_outfile_commit(ss_outfile **o, ss_errbuf *eb);

/* Close the stream and remove the temporary file, leaving the target as it was. NULL-safe;
 * sets *o to NULL. */
void ss_outfile_abort(ss_outfile **o);

/* ---- file identity ---------------------------------------------------------------------- */

/* What a path names, to tell whether two paths are the same file. */
typedef struct ss_file_id {
    int exists;            /* stat() succeeded (symlinks followed) */
    int shareable;         /* a character device or FIFO: two uses of it do not clash */
    unsigned long long dev, ino;
    char canon[4096];      /* when !exists: the real path of its directory + "/" + its name
                              (or the path as given when the directory does not exist) */
} ss_file_id;

/* Fill *id for path. Never fails: what cannot be resolved is compared by its text. */
void ss_file_id_of(ss_file_id *id, const char *path);

/* 1 if a and b are the same file (the same device and inode, or the same not-yet-existing
 * path), 0 otherwise. Character devices and FIFOs never clash. */
int ss_file_id_same(const ss_file_id *a, const ss_file_id *b);

/* dir and the folders above it that are missing, as `mkdir -p` makes them (mode 0777 less the
 * umask). 0, or SS_EIO (SS_EINVAL for a name too long) with eb naming dir. */
int ss_dir_create(const char *dir, ss_errbuf *eb);

/* All n bytes of buf to file descriptor fd, or from it into buf, again after EINTR (a pipe
 * between processes): 0, or -1 on an error or, reading, at end of file before n bytes. */
int ss_fd_write_all(int fd, const void *buf, size_t n);
int ss_fd_read_all(int fd, void *buf, size_t n);

#endif
