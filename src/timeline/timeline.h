/* Timeline export: what every GPU did during a replay, as Chrome trace-event JSON (opens in
 * Perfetto and chrome://tracing). One track group per GPU: iterations on the first track (batch
 * composition in their args), operators on the second when expansion is asked for, and
 * preemptions, swaps and rejections as instant events; a disaggregated tenant's KV transfers on a
 * fourth track of the sending and the receiving GPUs. Events stream to a temporary file beside
 * FILE (core/ss_file.h) while the replay runs and the file is renamed into place when the
 * timeline is closed successfully (a device, a FIFO or a file in a read-only directory is written in place; a symbolic link's
 * target is written: core/ss_file.h).
 * An observer of gsim/: it reads the cluster, never changes it. */
#ifndef SS_TIMELINE_TIMELINE_H
#define SS_TIMELINE_TIMELINE_H

#include "core/ss_err.h"
#include "core/ss_time.h"
#include "gsim/gsim.h"

/* Called once, when the file being written has passed tl_opts.warn_bytes (bytes: its size
 * then), so that the caller can say so while the replay runs. */
typedef void tl_large_fn(void *ud, const char *path, uint64_t bytes);

typedef struct tl_opts {
    ss_time start, end; /* window: only events overlapping [start, end] are written */
    int ops;            /* also write each iteration's operators (large) */
    uint32_t max_ids;   /* request ids listed per iteration (0 = 64) */
    uint64_t warn_bytes; /* size past which on_large is called, bytes (0: never); checked every
                            TL_SIZE_CHECK events, so it is called a little past it */
    tl_large_fn *on_large; /* NULL: none */
    void *ud;           /* on_large's (borrowed) */
} tl_opts;

#define TL_SIZE_CHECK 1024 /* events between two looks at the file's size */

typedef struct tl_writer tl_writer;

/* Open path for writing (ss_outfile_open). path and opts->ud are borrowed until tl_close or
 * tl_abort. 0 or SS_EIO / SS_ENOMEM with eb set; nothing left on failure. */
int tl_open(tl_writer **w_out, const char *path, const tl_opts *opts, ss_errbuf *eb);
/* Name the tracks of every GPU of g's cluster and observe its replay from now on. */
void tl_attach(tl_writer *w, gsim *g);
/* Finish the JSON, close and rename the temporary file to path. 0, or SS_EIO with eb set when any
 * write failed (the partial file is removed). Frees the writer either way; NULL-safe. */
int tl_close(tl_writer **w, ss_errbuf *eb);
/* Drop the partial file and free the writer (after a failed replay). NULL-safe. */
void tl_abort(tl_writer **w);
/* Events written so far. */
uint64_t tl_events(const tl_writer *w);
/* Parse "START:END" in seconds (either side may be empty: from 0 / to the end). 0 or
 * SS_EPARSE with eb naming --timeline-window. */
int tl_parse_window(const char *s, ss_time *start, ss_time *end, ss_errbuf *eb);

#endif
