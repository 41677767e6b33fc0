/* Private to app/: how a finished replay is reported: the readable table, the --json object
 * (a contract other tools parse: keys are only ever added), and the per-GPU, per-tenant and
 * per-tier rows of the results database. */
#ifndef SS_APP_REPORT_H
#define SS_APP_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "gsim/gsim.h"
#include "store/store.h"

/* What the report says about the run besides the simulator's own state. */
typedef struct report_run {
    const char *source;   /* trace path, or "scenario FILE" */
    const char *format;   /* trace format or "multi-tenant" */
    const char *gpu;      /* GPU kind */
    const char *batching, *routing, *cluster, *cost;
    const char *ops;      /* operator placement: "home" or "slice" */
    uint64_t seed;
    uint64_t skipped;     /* trace rows the readers dropped */
    double warmup_s;      /* measurement starts here */
    double wall_s;        /* wall-clock seconds of the simulation */
} report_run;

/* Why the measured requests of a were rejected, into buf (always terminated, cut to size):
 * "2731 prompt > max-model-len 16384, 3 needs more KV blocks than its container has"; the
 * empty string when none was. */
void report_rejections(char *buf, size_t size, const gsim *g, const metrics_group_summary *a);
/* One JSON object on one line. */
void report_json(FILE *f, const report_run *r, const gsim *g, const metrics_summary *m);
/* The readable table, with one line per tenant and per tier when there are several. */
void report_table(FILE *f, const report_run *r, const gsim *g, const metrics_summary *m);
/* Write the run's GPU, tenant and tier rows and commit it. 0 or the store's error. */
int report_store(store *st, const gsim *g, const metrics_summary *m, double wall_s,
                 uint64_t trace_digest, const char *result_json, ss_errbuf *eb);

#endif
