/* Line-numbered INI parsing on top of inih: every section header and every key = value reaches
 * one callback with its line number, over-long lines are errors instead of being split, and
 * the first error in file order wins. Not for semantics: the catalog and the scenario files
 * own their key tables. */
#ifndef SS_CORE_SS_INI_H
#define SS_CORE_SS_INI_H

#include "core/ss_err.h"

/* Longest line (without its newline) that inih can hold. */
#define SS_INI_LINE_MAX 199

/* One event of an INI file, on line `line` (from 1): a section header when key and value are
 * NULL (section is the text between the brackets, not trimmed), otherwise a key = value in the
 * current section ("" before any header), both trimmed. A continuation line (indented, after a
 * key) repeats the previous key with the new text. Return 0 to go on, or an SS_E* code with eb
 * filled to stop with that result. */
typedef int ss_ini_fn(void *ud, unsigned line, const char *section, const char *key,
                      const char *value, ss_errbuf *eb);

/* Parse the INI file at path, calling fn for each event in file order. Returns 0; fn's code;
 * SS_EIO ("PATH: cannot open: why", "PATH: read error: why"); SS_EPARSE ("PATH: not a regular
 * file" for a FIFO, device or folder, refused before any read; "PATH:LINE: syntax
 * error (expected [section] or key = value)", "PATH:LINE: line longer than 199 characters",
 * "PATH:LINE: contains a NUL byte (not a text file?)");
 * or SS_ENOMEM. When both a syntax error and a callback error happen, the earlier line's is
 * reported. path is borrowed. */
int ss_ini_parse(const char *path, ss_ini_fn *fn, void *ud, ss_errbuf *eb);

#endif
