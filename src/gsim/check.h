/* --check: the invariants a simulation verifies after every event. gmg_check covers the cluster
 * state as it stands; this adds what needs the previous event's view (the clock, each request's
 * tokens over time) and the simulator's request counters, and names the event in the message.
 * Private to gsim/ (gsim.c drives it; unit tests call it on deliberately corrupted state). */
#ifndef SS_GSIM_CHECK_H
#define SS_GSIM_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "core/ss_err.h"
#include "core/ss_time.h"
#include "gmg/gmg.h"

/* What the previous check saw of one request slot. */
typedef struct gsim_check_slot {
    uint64_t serial;          /* the request it held (gmg_req.serial); 0: none seen */
    uint32_t generated;       /* output tokens produced */
    ss_time first_token;      /* ns, -1 before */
    ss_time last_token;       /* ns */
} gsim_check_slot;

/* Request slots a check visits per event, on average (see gsim__check_event). */
#define GSIM_CHECK_BUDGET 256

/* The checker's memory between events. Zero-initialise; gsim__check_fini frees it. */
typedef struct gsim_checker {
    int started;              /* an event has been checked */
    ss_time last;             /* time of that event */
    gsim_check_slot *slots;   /* owned, cap entries (grows with the graph's request slots) */
    size_t cap;
    uint32_t budget;          /* slots per event on average; 0: GSIM_CHECK_BUDGET */
    uint64_t credit;          /* slot visits saved up towards the next full check */
    uint64_t n_full, n_active;/* checks of each kind made */
    uint64_t pc_credit;       /* the same, towards the next walk of the prefix caches */
} gsim_checker;

/* The event just dispatched, for the message. */
typedef struct gsim_check_event {
    const char *kind;         /* "ITER_DONE", ... */
    const char *target;       /* what its target id is ("container"), NULL when it has none */
    uint32_t target_id;
    ss_time at;               /* its time (the clock after it) */
} gsim_check_event;

/* The simulator's request counters. */
typedef struct gsim_check_counts {
    int conserve;             /* check arrived = completed + rejected + in flight (a what-if
                                 fork has no arrivals of its own: 0) */
    uint64_t arrived;         /* requests admitted so far */
    uint64_t completed;       /* produced their last token */
    uint64_t rejected;        /* rejected, before or after admission */
} gsim_check_counts;

/* After event ev: the clock has not gone back, gmg_check holds, no request's generated tokens
 * decreased or latest token time went back and its first token time stayed put, no token lies
 * in the future, and (when n->conserve) every arrival is completed, rejected or in flight.
 * The full check visits every request slot. While the graph has more slots than the budget,
 * most events get the active check instead (gmg_check_active, and the tokens of the running
 * and swapped requests only), and a full one comes every slots/budget events: a backlog of
 * waiting requests, which no event changes until it is scheduled, does not make checking
 * quadratic. 0, SS_ECHECK with "invariant violated after event KIND (TARGET ID) at T s: ..."
 * in eb (the entity and values follow), or SS_ENOMEM. */
int gsim__check_event(gsim_checker *k, const gmg *g, const gsim_check_event *ev,
                      const gsim_check_counts *n, ss_errbuf *eb);
/* At the end of a run: arrived = completed + rejected, + the requests still in flight when the
 * run was cut (`cut`: events were left pending); without a cut nothing may be in flight.
 * 0 or SS_ECHECK with the counts in eb. */
int gsim__check_end(const gmg *g, const gsim_check_counts *n, int cut, ss_errbuf *eb);
/* Free what k holds; k is zeroed. */
void gsim__check_fini(gsim_checker *k);

#endif
