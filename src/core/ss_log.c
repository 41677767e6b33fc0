/* stderr logging with a global verbosity; the only global state besides the allocator counters. */
#include "core/ss_log.h"

#include <stdarg.h>
#include <stdio.h>

static int log_level = SS_LOG_WARN;

void ss_log_set_level(int level) { log_level = level; }
int ss_log_level(void) { return log_level; }

static void vlog(int level, const char *tag, const char *fmt, va_list ap)
{
    if (level > log_level)
        return;
    fprintf(stderr, "slicesim: %s", tag);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

#define DEFINE_LOG(fn, level, tag)                                                                 \
    void fn(const char *fmt, ...)                                                                  \
    {                                                                                              \
        va_list ap;                                                                                \
        va_start(ap, fmt);                                                                         \
        vlog(level, tag, fmt, ap);                                                                 \
        va_end(ap);                                                                                \
    }
DEFINE_LOG(ss_warn, SS_LOG_WARN, "warning: ")
DEFINE_LOG(ss_info, SS_LOG_INFO, "")
DEFINE_LOG(ss_debug, SS_LOG_DEBUG, "debug: ")
