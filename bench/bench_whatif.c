/* Speed of a what-if: replay a trace up to a pause point, then fork containers over and over
 * and simulate each fork to a horizon, as SliceScheduler does for every candidate. Reports
 * what-ifs per second, the cost of one, and how many operators each predicts (the operators
 * its iterations expand into: gmg_iter_expand gives every one of them its start and end from
 * the iteration's timing, exactly) per millisecond of wall time.
 * Usage: bench_whatif [TRACE] [RATE_SCALE] [PAUSE_S] [HORIZON_MS] [FORKS] [CONTAINERS]
 *   defaults: traces/azure-conv-synth.csv, 3 (busy: about 16 requests/s on 4 GPUs), 600 s,
 *   100 ms, 2000 forks, 1 container (container 0; "all" forks every container). */
#include "catalog/catalog.h"
#include "gsim/gsim.h"
#include "trace/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct scaled {
    trace_reader *r;
    double scale;
} scaled;

static int next_scaled(void *ud, trace_rec *out, ss_errbuf *eb)
{
    scaled *s = ud;
    int rc = trace_reader_next(s->r, out, eb);
    if (rc == 1)
        out->arrival_ns = (ss_time)((double)out->arrival_ns / s->scale);
    return rc;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct count {
    uint64_t iterations, operators;
} count;

static void on_iter(void *ud, const gmg *g, const gmg_container *c)
{
    count *n = ud;
    n->iterations++;
    n->operators += gmg_iter_expand(g, c, NULL, 0, NULL);
}

/* One pass of `forks` what-ifs; counts the predicted iterations and operators when n is set
 * (the observer costs time, so the timed pass runs without it). */
static int pass(const gsim *g, const gmg_id *ctrs, uint32_t n_ctrs, ss_time until, int forks,
                count *n, ss_errbuf *eb)
{
    gsim_observer obs = {.on_iter = on_iter, .ud = n};
    for (int i = 0; i < forks; i++) {
        gsim *w = NULL;
        int rc = gsim_fork(g, ctrs, n_ctrs, NULL, NULL, &w, eb);
        if (!rc && n)
            gsim_set_observer(w, &obs);
        if (!rc)
            rc = gsim_advance(w, until, eb);
        gsim_destroy(&w);
        if (rc)
            return rc;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "traces/azure-conv-synth.csv";
    double scale = argc > 2 ? atof(argv[2]) : 3;
    double pause_s = argc > 3 ? atof(argv[3]) : 600;
    double horizon_ms = argc > 4 ? atof(argv[4]) : 100;
    int forks = argc > 5 ? atoi(argv[5]) : 2000;
    int all = argc > 6 && !strcmp(argv[6], "all");
    ss_errbuf eb = {""};
    catalog *cat = NULL;
    scaled src = {NULL, scale > 0 ? scale : 1};
    gsim *g = NULL;
    int rc = catalog_load(&cat, catalog_default_dir(NULL), &eb);
    if (!rc)
        rc = trace_reader_open(&src.r, path, "auto", &eb);
    gsim_config cfg;
    gsim_config_defaults(&cfg);
    if (!rc) {
        cfg.model = catalog_model(cat, "llama-2-7b");
        cfg.gpu = catalog_gpu(cat, "a100-80g");
        cfg.engine = catalog_engine(cat, CAT_ENGINE_DEFAULT);
        cfg.replicas = 4;
        rc = gsim_create(&g, &cfg, &eb);
    }
    ss_time pause = ss_time_from_s(pause_s);
    if (!rc)
        rc = gsim_start(g, next_scaled, &src, NULL, NULL, &eb);
    if (!rc)
        rc = gsim_advance(g, pause, &eb);
    gmg_id ctrs[4] = {0, 1, 2, 3};
    uint32_t n_ctrs = all ? 4 : 1;
    ss_time until = pause + ss_time_from_s(horizon_ms / 1e3);
    count n = {0, 0};
    double t0 = 0, t1 = 0, t2 = 0;
    if (!rc) {
        printf("what-if bench: %s x%g on 4 x a100-80g llama-2-7b (%s), paused at %g s with %u "
               "requests in flight\n", path, src.scale, CAT_ENGINE_DEFAULT, pause_s,
               gsim_graph(g)->in_flight);
        rc = pass(g, ctrs, n_ctrs, until, 1, &n, &eb); /* counts (and warms up) */
    }
    if (!rc) {
        t0 = now_s();
        rc = pass(g, ctrs, n_ctrs, pause, forks, NULL, &eb); /* fork only: nothing runs */
        t1 = now_s();
    }
    if (!rc)
        rc = pass(g, ctrs, n_ctrs, until, forks, NULL, &eb);
    t2 = now_s();
    if (!rc) {
        double per = (t2 - t1) / forks, fork_only = (t1 - t0) / forks;
        printf("  %d what-ifs of %u container(s) to +%g ms: %.3f s wall, %.0f what-ifs/s, "
               "%.1f us each (%.1f us of it the fork)\n", forks, n_ctrs, horizon_ms, t2 - t1,
               1 / per, per * 1e6, fork_only * 1e6);
        printf("  each predicts %llu iterations, %llu operators: %.0f predicted operators per "
               "ms of wall time\n", (unsigned long long)n.iterations,
               (unsigned long long)n.operators, (double)n.operators / (per * 1e3));
    }
    gsim_destroy(&g);
    trace_reader_close(&src.r);
    catalog_destroy(&cat);
    if (rc)
        fprintf(stderr, "bench_whatif: %s\n", eb.msg);
    return rc ? 1 : 0;
}
