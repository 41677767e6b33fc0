/* Diagnostics on stderr, prefixed "slicesim: ". Not for results: those go to stdout or SQLite. */
#ifndef SS_CORE_SS_LOG_H
#define SS_CORE_SS_LOG_H

enum { SS_LOG_QUIET = 0, SS_LOG_WARN = 1, SS_LOG_INFO = 2, SS_LOG_DEBUG = 3 };

/* Set the most verbose level printed (default SS_LOG_WARN). */
void ss_log_set_level(int level);
int ss_log_level(void);
void ss_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ss_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ss_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
