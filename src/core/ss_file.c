/* Safe output files (a temporary file renamed into place, or in-place writes where a rename
 * would replace a device, a FIFO or a symbolic link) with removal of temporary files on
 * SIGINT/SIGTERM/SIGHUP, and file identity for refusing outputs that name an input. */
#include "core/ss_file.h"

#include "core/ss_alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TRACK_MAX 16
#define TRACK_PATH 4096

/* ---- temporary files removed on a signal --------------------------------------------------- */

/* A slot is written only while its `used` flag is 0 and read by the handler only while it is
 * 1, so the handler never sees half a path. */
static char track_path[TRACK_MAX][TRACK_PATH];
static volatile sig_atomic_t track_used[TRACK_MAX];
static pid_t track_pid[TRACK_MAX];
static struct sigaction old_action[3];
static const int cleanup_signals[3] = {SIGINT, SIGTERM, SIGHUP};
static int installed;

static void on_signal(int sig)
{
    pid_t me = getpid();
    for (int i = 0; i < TRACK_MAX; i++)
        if (track_used[i] && track_pid[i] == me)
            unlink(track_path[i]);
    /* Die of the signal as the process would have without us (or run the handler that was
     * there before), so a parent sees the real cause. */
    for (int i = 0; i < 3; i++)
        if (cleanup_signals[i] == sig)
            sigaction(sig, &old_action[i], NULL);
    raise(sig);
}

/* Handlers for SIGINT, SIGTERM and SIGHUP that remove the tracked temporary files, then let
 * the signal end the process as it would have. Idempotent. */
static void install_signal_cleanup(void)
{
    if (installed)
        return;
    installed = 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++) {
        sigaction(cleanup_signals[i], NULL, &old_action[i]);
        if (old_action[i].sa_handler == SIG_IGN)
            continue; /* nohup and friends: keep ignoring it */
        sigaction(cleanup_signals[i], &sa, NULL);
    }
}

/* Track path (copied) for removal on a signal: its slot, or -1 when all are taken (the file
 * then just is not removed on a signal). */
static int track(const char *path)
{
    if (strlen(path) >= TRACK_PATH)
        return -1;
    install_signal_cleanup();
    for (int i = 0; i < TRACK_MAX; i++)
        if (!track_used[i]) {
            memcpy(track_path[i], path, strlen(path) + 1);
            track_pid[i] = getpid();
            track_used[i] = 1;
            return i;
        }
    return -1;
}

static void untrack(int slot)
{
    if (slot >= 0 && slot < TRACK_MAX)
        track_used[slot] = 0;
}

/* ---- output files -------------------------------------------------------------------------- */

struct ss_outfile {
    FILE *f;
    char *target;  /* owned: the file written (a symbolic link's target) */
    char *tmp;     /* owned: the temporary file (tmp_name), NULL when written in place */
    int slot;      /* signal-cleanup slot of tmp, or -1 */
};

/* 1 when path's directory is under /proc: /proc/self/fd/1, and /dev/fd/1 through /dev/fd. */
static int in_proc(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return 0;
    char dir[PATH_MAX], real[PATH_MAX];
    size_t n = (size_t)(slash - path);
    if (n == 0 || n >= sizeof dir)
        return n == 0 ? 0 : !strncmp(path, "/proc/", 6);
    memcpy(dir, path, n);
    dir[n] = '\0';
    return realpath(dir, real) && !strncmp(real, "/proc/", 6);
}

/* The file a chain of symbolic links ends at (owned), or a copy of path when it is not a link.
 * A link to a file that does not exist yet resolves to that file's path. A link under /proc
 * (/dev/stdout is /proc/self/fd/1) is where the chain stops: those links are the kernel's
 * handles on open files (a pipe, a socket, a deleted file), whose targets are not paths. */
static char *resolve_links(const char *path)
{
    char *cur = ss_strdup(path);
    for (int depth = 0; cur && depth < 40; depth++) {
        struct stat st;
        if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode) || in_proc(cur))
            return cur;
        char buf[PATH_MAX];
        ssize_t n = readlink(cur, buf, sizeof buf - 1);
        if (n < 0)
            return cur;
        buf[n] = '\0';
        char *next;
        const char *slash = strrchr(cur, '/');
        if (buf[0] == '/' || !slash) {
            next = ss_strdup(buf);
        } else { /* relative to the link's own directory */
            size_t dl = (size_t)(slash - cur) + 1;
            next = ss_malloc(dl + (size_t)n + 1);
            if (next) {
                memcpy(next, cur, dl);
                memcpy(next + dl, buf, (size_t)n + 1);
            }
        }
        ss_free(cur);
        cur = next;
    }
    return cur; /* a loop: opening it reports it */
}

/* 1 when the target's directory may be written, so a temporary file can sit beside it; 0 when
 * not; SS_ENOMEM. */
static int dir_writable(const char *target)
{
    const char *slash = strrchr(target, '/');
    if (!slash)
        return access(".", W_OK | X_OK) == 0;
    if (slash == target)
        return access("/", W_OK | X_OK) == 0;
    char *dir = ss_strndup(target, (size_t)(slash - target));
    if (!dir)
        return SS_ENOMEM;
    int ok = access(dir, W_OK | X_OK) == 0;
    ss_free(dir);
    return ok;
}

/* A name for the temporary file beside target that no file has now: TARGET.k3q9zt.tmp, six
 * characters from the process id, a counter and the clock (names only: nothing simulated
 * depends on them). Owned, or NULL when out of memory. */
static char *tmp_name(const char *target, unsigned attempt)
{
    static unsigned counter;
    static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^
                 ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)++counter << 40) ^ attempt;
    x ^= x >> 31, x *= 0x9e3779b97f4a7c15ULL, x ^= x >> 29; /* spread the bits */
    size_t n = strlen(target);
    char *tmp = ss_malloc(n + 12);
    if (!tmp)
        return NULL;
    memcpy(tmp, target, n);
    tmp[n] = '.';
    for (int i = 0; i < 6; i++, x /= 36)
        tmp[n + 1 + i] = digits[x % 36];
    memcpy(tmp + n + 7, ".tmp", 5);
    return tmp;
}

/* Create the temporary file of o exclusively: a name nothing has (O_EXCL), never through a
 * link (O_NOFOLLOW), mode 0666 less the umask. The descriptor, or -1 with errno set. */
static int create_tmp(ss_outfile *o)
{
    for (unsigned attempt = 0; attempt < 64; attempt++) {
        if (!(o->tmp = tmp_name(o->target, attempt))) {
            errno = ENOMEM;
            return -1;
        }
        int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd >= 0) {
            o->slot = track(o->tmp);
            return fd;
        }
        int e = errno;
        ss_free(o->tmp);
        o->tmp = NULL;
        errno = e;
        if (e != EEXIST)
            return -1;
    }
    return -1; /* errno is EEXIST */
}

int ss_outfile_open(ss_outfile **o_out, FILE **f_out, const char *path, int binary,
                    ss_errbuf *eb)
{
    ss_outfile *o = ss_calloc(1, sizeof *o);
    if (!o || !(o->target = resolve_links(path))) {
        ss_free(o);
        return ss_err(eb, SS_ENOMEM, "out of memory");
    }
    o->slot = -1;
    struct stat st;
    int exists = stat(o->target, &st) == 0;
    int writable = dir_writable(o->target);
    if (writable < 0) {
        ss_outfile_abort(&o);
        return ss_err(eb, SS_ENOMEM, "out of memory");
    }
    if (exists && S_ISDIR(st.st_mode)) {
        ss_outfile_abort(&o);
        return ss_err(eb, SS_EIO, "%s: is a directory", path);
    }
    int fd;
    if (in_proc(o->target)) {
        /* /dev/stdout and its kin: the open file itself, appended to, as the shell set it up
         * (truncated by '>', kept by '>>'), never replaced nor truncated here */
        fd = open(o->target, O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC);
    } else if ((!exists || S_ISREG(st.st_mode)) && writable) {
        fd = create_tmp(o);
    } else {
        /* In place: a device, a FIFO, or a file in a directory we may not write. The target
         * is where the links the caller named end; a link that appears there now is not
         * followed. */
        fd = open(o->target, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC,
                  0666);
    }
    if (fd < 0 && errno == ENOMEM) {
        ss_outfile_abort(&o);
        return ss_err(eb, SS_ENOMEM, "out of memory");
    }
    if (fd < 0 || !(o->f = fdopen(fd, binary ? "wb" : "w"))) {
        int e = errno;
        const char *what = o->tmp ? o->tmp : o->target;
        int rc = e == EEXIST ? ss_err(eb, SS_EIO, "%s: cannot create a temporary file beside it:"
                                                  " every name tried exists", o->target)
                             : ss_err(eb, SS_EIO, "%s: cannot create: %s", what, strerror(e));
        if (fd >= 0)
            close(fd);
        ss_outfile_abort(&o);
        return rc;
    }
    *o_out = o;
    *f_out = o->f;
    return SS_OK;
}

static void outfile_free(ss_outfile *o)
{
    untrack(o->slot);
    ss_free(o->tmp);
    ss_free(o->target);
    ss_free(o);
}

int ss_outfile_commit(ss_outfile **op, ss_errbuf *eb)
{
    ss_outfile *o = *op;
    if (!o)
        return SS_OK;
    *op = NULL;
    const char *written = o->tmp ? o->tmp : o->target;
    int rc = SS_OK;
    errno = 0;
    /* a temporary file reaches the disk before it replaces the target (a crash then leaves
     * the old file or the new one, never an empty one) */
    int bad = fflush(o->f) != 0 || ferror(o->f) || (o->tmp && fsync(fileno(o->f)) != 0);
    int err = errno ? errno : EIO;
    if (fclose(o->f) != 0 && !bad) {
        bad = 1;
        err = errno;
    }
    o->f = NULL;
    if (bad)
        rc = ss_err(eb, SS_EIO, "%s: writing: %s", o->target, strerror(err));
    else if (o->tmp && rename(o->tmp, o->target) != 0)
        rc = ss_err(eb, SS_EIO, "renaming %s to %s: %s", o->tmp, o->target, strerror(errno));
    if (rc && o->tmp)
        unlink(written);
    outfile_free(o);
    return rc;
}

void ss_outfile_abort(ss_outfile **op)
{
    ss_outfile *o = *op;
    if (!o)
        return;
    *op = NULL;
    if (o->f)
        fclose(o->f);
    if (o->tmp)
        unlink(o->tmp);
    outfile_free(o);
}

/* ---- file identity -------------------------------------------------------------------------- */

void ss_file_id_of(ss_file_id *id, const char *path)
{
    memset(id, 0, sizeof *id);
    struct stat st;
    if (stat(path, &st) == 0) {
        id->exists = 1;
        id->shareable = S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode);
        id->dev = (unsigned long long)st.st_dev;
        id->ino = (unsigned long long)st.st_ino;
        return;
    }
    /* Not there yet: name it by its directory's real path, so "a/../x" and "x" agree. A
     * dangling symbolic link is named by the file it would create. */
    char *target = resolve_links(path);
    const char *p = target ? target : path;
    const char *slash = strrchr(p, '/');
    char *dir = slash ? ss_strndup(p, slash == p ? 1 : (size_t)(slash - p)) : ss_strdup(".");
    const char *base = slash ? slash + 1 : p;
    char real[PATH_MAX];
    const char *head = dir && realpath(dir, real) ? real : NULL;
    if (head && !strcmp(head, "/"))
        head = "";
    /* a path longer than the buffer is compared by its first bytes */
    size_t cap = sizeof id->canon - 1, n = 0;
    const char *parts[3] = {head ? head : p, head ? "/" : "", head ? base : ""};
    for (int i = 0; i < 3; i++) {
        size_t len = strlen(parts[i]);
        if (len > cap - n)
            len = cap - n;
        memcpy(id->canon + n, parts[i], len);
        n += len;
    }
    id->canon[n] = '\0';
    ss_free(dir);
    ss_free(target);
}

int ss_file_id_same(const ss_file_id *a, const ss_file_id *b)
{
    if (a->exists != b->exists)
        return 0;
    if (a->exists)
        return !a->shareable && !b->shareable && a->dev == b->dev && a->ino == b->ino;
    return !strcmp(a->canon, b->canon);
}

/* dir and the folders above it that are missing, as `mkdir -p` makes them. */
int ss_dir_create(const char *dir, ss_errbuf *eb)
{
    char path[4096];
    size_t n = strlen(dir);
    if (n >= sizeof path)
        return ss_err(eb, SS_EINVAL, "%.200s...: the folder's name is too long", dir);
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        if (path[i - 1] == '/')
            continue; /* a doubled slash */
        char c = path[i];
        path[i] = '\0';
        int rc = mkdir(path, 0777) != 0 && errno != EEXIST ? errno : 0;
        path[i] = c;
        if (rc)
            return ss_err(eb, SS_EIO, "%s: cannot create: %s", dir, strerror(rc));
    }
    return SS_OK;
}

int ss_fd_write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int ss_fd_read_all(int fd, void *buf, size_t n)
{
    char *p = buf;
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}
