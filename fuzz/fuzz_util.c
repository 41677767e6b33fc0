/* Shared fuzz-target helpers: temporary files for path-based parsers, the allocator leak check
 * and the error-message contract (see fuzz.h). Not a parser: targets call the library. */
#include "fuzz.h"

#include "core/ss_alloc.h"
#include "core/ss_log.h"

#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[512];      /* "" until made */
static size_t live_at_begin;  /* ss_alloc_live_bytes() at fz_begin */

_Noreturn void fz_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%d: fuzz check failed: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static void remove_tmpdir(void)
{
    if (tmpdir[0])
        nftw(tmpdir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

const char *fz_tmpdir(void)
{
    if (tmpdir[0])
        return tmpdir;
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/slicesim-fuzz-%ld-XXXXXX", base && *base ? base : "/tmp",
             (long)getpid());
    if (!mkdtemp(tmpdir))
        fz_fail(__FILE__, __LINE__, "cannot make %s: %s", tmpdir, strerror(errno));
    atexit(remove_tmpdir);
    return tmpdir;
}

void fz_mkdir(char *out, size_t cap, const char *rel)
{
    if (snprintf(out, cap, "%s/%s", fz_tmpdir(), rel) >= (int)cap)
        fz_fail(__FILE__, __LINE__, "path too long");
    for (char *p = out + strlen(tmpdir) + 1;; p++) {
        if (*p != '/' && *p)
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(out, 0777) && errno != EEXIST)
            fz_fail(__FILE__, __LINE__, "cannot make %s: %s", out, strerror(errno));
        *p = c;
        if (!c)
            break;
    }
}

void fz_write(char *out, size_t cap, const char *rel, const uint8_t *data, size_t size)
{
    const char *slash = strrchr(rel, '/');
    if (slash) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - rel), rel);
        fz_mkdir(out, cap, dir);
    }
    if (snprintf(out, cap, "%s/%s", fz_tmpdir(), rel) >= (int)cap)
        fz_fail(__FILE__, __LINE__, "path too long");
    FILE *f = fopen(out, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f))
        fz_fail(__FILE__, __LINE__, "cannot write %s: %s", out, strerror(errno));
}

void fz_begin(void)
{
    ss_log_set_level(SS_LOG_QUIET);
    live_at_begin = ss_alloc_live_bytes();
}

void fz_end(void)
{
    size_t live = ss_alloc_live_bytes();
    if (live != live_at_begin)
        fz_fail(__FILE__, __LINE__, "leak: %zu bytes allocated through ss_alloc before the "
                "input, %zu after", live_at_begin, live);
}

void fz_check_error(int rc, const ss_errbuf *eb, const char *where)
{
    if (rc >= 0)
        return;
    if (getenv("SS_FUZZ_VERBOSE")) /* to see what an input does: SS_FUZZ_VERBOSE=1 */
        fprintf(stderr, "error %d: %s\n", rc, eb->msg);
    if (!eb->msg[0])
        fz_fail(__FILE__, __LINE__, "error %d (%s) without a message", rc, ss_strerror(rc));
    if (strchr(eb->msg, '\n') || strchr(eb->msg, '\r'))
        fz_fail(__FILE__, __LINE__, "message of more than one line: '%s'", eb->msg);
    if (where && rc != SS_ENOMEM && !strstr(eb->msg, where))
        fz_fail(__FILE__, __LINE__, "message does not name %s: '%s'", where, eb->msg);
}
