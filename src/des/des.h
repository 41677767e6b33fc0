/* Discrete-event engine: an integer-nanosecond clock and a queue of pooled events ordered by
 * (time, insertion sequence), dispatched through a handler table indexed by event kind.
 * It knows nothing about GPUs or requests; gsim/ gives the events their meaning. */
#ifndef SS_DES_DES_H
#define SS_DES_DES_H

#include <stddef.h>
#include <stdint.h>

#include "core/ss_time.h"

#define DES_MAX_KINDS 64      /* handler table size */
#define DES_PAYLOAD_BYTES 40  /* inline payload after the event header */

typedef struct des_engine des_engine;

typedef struct des_event {
    ss_time at;       /* firing time, ns */
    uint64_t seq;     /* insertion counter: FIFO among equal times */
    uint16_t kind;    /* index into the handler table */
    uint16_t flags;   /* DES_EV_* */
    uint32_t target;  /* entity id the handler interprets (container, GPU, tenant) */
    union {
        unsigned char bytes[DES_PAYLOAD_BYTES];
        uint64_t u64[DES_PAYLOAD_BYTES / 8];
        void *ptr;
        struct des_event *next_free; /* pool free-list link while the event is unused */
    } data;           /* payload, owned by the event; valid until its handler returns */
} des_event;

enum { DES_EV_CANCELLED = 1 };

/* A handler runs when its event fires. ev is borrowed and recycled when the handler returns;
 * ctx is the pointer given to des_engine_create. */
typedef void des_handler_fn(des_engine *e, des_event *ev, void *ctx);
/* Progress callback, called every `every` events from des_run. */
typedef void des_progress_fn(const des_engine *e, void *ud);

typedef struct des_stats {
    uint64_t n_events;    /* events dispatched (cancelled ones excluded) */
    uint64_t n_ties;      /* dispatched events whose time equalled the previous event's */
    uint64_t n_cancelled; /* events popped after cancellation */
    uint64_t n_scheduled; /* events ever scheduled */
    size_t peak_queue;    /* most events pending at once */
    size_t pool_events;   /* events allocated by the pool (never shrinks mid-run) */
} des_stats;

/* Create an engine at time 0. ctx is borrowed and handed to every handler.
 * Returns 0 or SS_ENOMEM (nothing allocated). */
int des_engine_create(des_engine **e_out, void *ctx);
/* Free the engine, its queue and its event pool. NULL-safe; sets *e to NULL. */
void des_engine_destroy(des_engine **e);
/* Make e as des_engine_create(&e, ctx) would, but keeping the memory of its event pool and
 * queue (its pending events go back to the pool; its statistics restart, but pool_events,
 * which counts the pool's events). For a run after another on the same engine: no
 * allocation until it holds more events at once than it ever did. */
void des_engine_reset(des_engine *e, void *ctx);
/* Install the handler for kind (< DES_MAX_KINDS). Returns 0 or SS_EINVAL. */
int des_handler_set(des_engine *e, uint16_t kind, des_handler_fn *fn);
/* Schedule an event of `kind` for `target` at absolute time `at` (>= now; earlier is a fatal
 * programming error reported with the caller's location). Returns the event so the caller
 * can fill its payload, or NULL when out of memory (engine unchanged). */
des_event *des__schedule(des_engine *e, ss_time at, uint16_t kind, uint32_t target,
                         const char *file, int line);
#define des_schedule(e, at, kind, target) des__schedule((e), (at), (kind), (target), __FILE__, __LINE__)
/* Cancel a pending event: it will be dropped, not dispatched. Calling this on an event that
 * already fired is a bug (its memory may have been reused). */
void des_cancel(des_engine *e, des_event *ev);
/* Dispatch events in order until the queue is empty, des_stop is called, or the next event
 * lies after `until` (the clock then stays at the last dispatched event).
 * Returns the number of events dispatched. */
uint64_t des_run(des_engine *e, ss_time until);
/* Dispatch exactly one (non-cancelled) event. Returns 1, or 0 if none is pending. */
int des_step(des_engine *e);
/* Ask des_run to return after the current handler. */
void des_stop(des_engine *e);
ss_time des_now(const des_engine *e);
/* Start a fresh engine's clock at t (a copy of a simulation continues from the original's
 * present). Fatal when events are already pending or have been dispatched. */
void des_start_at(des_engine *e, ss_time t);
size_t des_pending(const des_engine *e);
/* Pending events of `kind` (cancelled ones not yet popped included). */
size_t des_pending_kind(const des_engine *e, uint16_t kind);
/* n events the caller handled within the handler running now, at their own times, without
 * scheduling them (a run of steps it could tell nothing else would see): they count as
 * dispatched (n_events, and the progress callback's cadence). */
void des_note_handled(des_engine *e, uint64_t n);
/* Time of the next pending event, or SS_TIME_MAX when none. */
ss_time des_next_time(des_engine *e);
const des_stats *des_get_stats(const des_engine *e);
/* Kind and target of the event dispatched last (for messages about what it did); both 0 before
 * the first. */
void des_last_event(const des_engine *e, uint16_t *kind, uint32_t *target);
/* Call fn(e, ud) every `every` dispatched events during des_run (every = 0 disables). */
void des_progress_set(des_engine *e, des_progress_fn *fn, void *ud, uint64_t every);

#endif
