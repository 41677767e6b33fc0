/* Error codes, error buffers and fatal-error helpers shared by every module.
 * Functions that can fail return 0 or a negative SS_E* code and put the human-readable
 * detail in an ss_errbuf owned by the caller. Only app/ turns an error into exit(). */
#ifndef SS_CORE_SS_ERR_H
#define SS_CORE_SS_ERR_H

/* part of the plug-in API (policy/plugin.h): visible to a plug-in the binary loads */
#pragma GCC visibility push(default)

#include <stdarg.h>
#include <stddef.h>

enum {
    SS_OK = 0,
    SS_ENOMEM = -1,    /* an allocation failed */
    SS_EINVAL = -2,    /* bad argument or option value */
    SS_EIO = -3,       /* a file could not be read or written */
    SS_EPARSE = -4,    /* malformed input (trace row, INI key, CSV field) */
    SS_ENOTFOUND = -5, /* unknown name (model, GPU, policy, format) */
    SS_EDB = -6,       /* the results database refused an operation */
    SS_ENOTSUP = -7,   /* a feature not built in or not supported here */
    SS_ECHECK = -8,    /* a simulation invariant was violated (--check, end-of-run
                          conservation): a bug in slicesim, not in the input */
};

/* Short English name of an SS_E* code; never NULL. */
const char *ss_strerror(int rc);

#define SS_ERRBUF_LEN 512

/* Detail of the last error, written by the callee, owned by the caller. */
typedef struct ss_errbuf {
    char msg[SS_ERRBUF_LEN]; /* NUL-terminated one-line message, "" when none */
} ss_errbuf;

/* Format a message into eb (eb may be NULL) and return rc, so callers can write
 * `return ss_err(eb, SS_EPARSE, "%s:%u: field: ...", ...)`. */
int ss_err(ss_errbuf *eb, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int ss_verr(ss_errbuf *eb, int rc, const char *fmt, va_list ap);

/* Put "prefix: " (formatted) in front of the message already in eb; returns rc. */
int ss_err_prefix(ss_errbuf *eb, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Keep eb's message one line of text: show each control character other than tab (a bare CR
 * or a line break that malformed input carried into a quoted value) and each byte that is not
 * part of well-formed UTF-8 (a binary file's) as \xNN, cutting the message short
 * if it no longer fits. ss_err, ss_verr and ss_err_prefix do this; code that formats eb->msg
 * itself calls it. eb may be NULL. */
void ss_errbuf_oneline(ss_errbuf *eb);

/* 1 when s holds a control character (a byte below 0x20, tab included, or 0x7f: a newline, an
 * escape sequence's ESC), which a name shown on one line of a table must not hold. */
int ss_str_has_control(const char *s);

/* s as a message shows it (ss_errbuf_oneline's rule: each control character but a tab, and each
 * byte not part of well-formed UTF-8, as \xNN), for text printed outside an error buffer: a
 * stored name in a table. Cut with "..." where it does not fit in size bytes (size >= 4).
 * Returns dst. */
const char *ss_str_visible(char *dst, size_t size, const char *s);

#define SS_LOC __FILE__, __LINE__

/* Corrupted simulation state (time going backwards, negative KV blocks): print the
 * location and message to stderr and abort. Never returns. */
_Noreturn void ss_fatal(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* `if (SS_NEVER(cond))` marks a branch that cannot happen: asserts in debug builds,
 * is handled by the caller in release builds. */
#ifdef NDEBUG
#define SS_NEVER(x) (x)
#else
#define SS_NEVER(x) ((x) ? (ss_fatal(SS_LOC, "SS_NEVER(%s) happened", #x), 1) : 0)
#endif

#pragma GCC visibility pop

#endif
