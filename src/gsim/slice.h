/* SliceScheduler (operator placement "slice"): every period it looks for a container with a
 * queue and a container whose GPUs idle, and asks the what-if simulator whether prefilling the
 * queue's last fresh request on the idle GPUs (gsim_offload) would give it its first token
 * earlier without pushing any request of either container past its SLA within the horizon.
 * The best such move is made. Private to gsim/: the engine creates it, calls slice_tick from
 * its own events, and reports slice_stats. */
#ifndef SS_GSIM_SLICE_H
#define SS_GSIM_SLICE_H

#include "gsim/gsim.h"

typedef struct slice_sched slice_sched;


/* Read the parameters (slice_period_ms, slice_horizon_ms, slice_max_whatifs, slice_min_gain_ms,
 * slice_overrun_ms and slice_weights, which set cfg->guest_overrun and cfg->guest_weights).
 * 0, SS_EINVAL or SS_ENOMEM with eb. */
int slice_create(slice_sched **out, ss_params *params, gsim_config *cfg, ss_errbuf *eb);
void slice_destroy(slice_sched **s);
/* Time between decisions. */
ss_time slice_period(const slice_sched *s);
/* One decision at g's present. 0 or the first error (out of memory). */
int slice_tick(slice_sched *s, gsim *g, ss_errbuf *eb);
const slice_stats *slice_get_stats(const slice_sched *s);
/* The parameter names it reads (NULL-terminated), for unused-parameter messages. */
extern const char *const slice_param_names[];

#endif
