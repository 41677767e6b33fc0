/* runner/: how a finished replay is reported: the readable table, the --json object (a
 * contract other tools parse: keys are only ever added), and the per-GPU, per-tenant and
 * per-tier rows of the results database. */
#ifndef SS_RUNNER_REPORT_H
#define SS_RUNNER_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "gsim/gsim.h"
#include "store/store.h"

/* What the report says about the run besides the simulator's own state. */
typedef struct runner_report {
    const char *source;   /* trace path, or "scenario FILE" */
    const char *format;   /* trace format or "multi-tenant" */
    const char *gpu;      /* GPU kind */
    const char *batching, *routing, *cluster, *cost;
    const char *ops;      /* operator placement: "home" or "slice" */
    uint64_t seed;
    uint64_t skipped;     /* trace rows the readers dropped */
    double warmup_s;      /* measurement starts here */
    double wall_s;        /* wall-clock seconds of the simulation */
} runner_report;

/* Why the measured requests of a were rejected, into buf (always terminated, cut to size):
 * "2731 prompt > max-model-len 16384, 3 needs more KV blocks than its container has"; the
 * empty string when none was. */
void runner_report_rejections(char *buf, size_t size, const gsim *g,
                              const metrics_group_summary *a);
/* One JSON object on one line. */
void runner_report_json(FILE *f, const runner_report *r, const gsim *g,
                        const metrics_summary *m);
/* The readable table, with one line per tenant and per tier when there are several. */
void runner_report_table(FILE *f, const runner_report *r, const gsim *g,
                         const metrics_summary *m);
/* Write the run's GPU, tenant, tier and instance rows and commit it. 0 or the store's error. */
int runner_report_store(store *st, const gsim *g, const metrics_summary *m, double wall_s,
                        uint64_t trace_digest, const char *result_json, ss_errbuf *eb);

#endif
