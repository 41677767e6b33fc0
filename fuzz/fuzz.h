/* Helpers shared by the fuzz targets (one fuzz_<target>.c per input parser): a per-process
 * temporary directory for parsers that take a path, the error-message contract every parser
 * must keep on bad input, and a leak check through the project allocator. Each target defines
 * LLVMFuzzerTestOneInput; libFuzzer (-Dfuzzing=true) or replay_main.c calls it. Not for unit
 * tests (tests/support has their helpers). */
#ifndef SS_FUZZ_FUZZ_H
#define SS_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "core/ss_err.h"

/* The entry point of every target: parse data[0..size) fully, check what the parser
 * guarantees, free everything. Returns 0 (libFuzzer's convention). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Stop the process with a message naming the broken guarantee (a fuzzing finding). */
#define FZ_ASSERT(cond)                                                                        \
    do {                                                                                       \
        if (!(cond))                                                                           \
            fz_fail(__FILE__, __LINE__, "%s", #cond);                                          \
    } while (0)

_Noreturn void fz_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* This process's temporary directory ($TMPDIR or /tmp, slicesim-fuzz-PID-XXXXXX), made on
 * first use and removed with everything in it when the process exits normally. Borrowed. */
const char *fz_tmpdir(void);
/* Write size bytes to fz_tmpdir()/rel (its folders made as needed) and put the full path in
 * out (cap bytes). Aborts when the file cannot be written: that is no finding. */
void fz_write(char *out, size_t cap, const char *rel, const uint8_t *data, size_t size);
/* Make fz_tmpdir()/rel (and its parents) and put the full path in out. */
void fz_mkdir(char *out, size_t cap, const char *rel);

/* Call at the start of each input: records how many bytes the project allocator holds (state
 * a target keeps across inputs, such as a catalog loaded once), and silences warnings. */
void fz_begin(void);
/* Call at the end of each input: aborts when the allocator holds more than at fz_begin (a
 * leak on some path, caught even without LeakSanitizer). */
void fz_end(void);

/* The error contract: when rc < 0, the message in eb must be non-empty and one line, and name
 * `where` (the file, or NULL not to check). SS_ENOMEM is exempt from the name check. With
 * SS_FUZZ_VERBOSE set in the environment, every message is printed to stderr. */
void fz_check_error(int rc, const ss_errbuf *eb, const char *where);

#endif
