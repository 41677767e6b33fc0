/* runner/: one run of a checked scenario, as replay, compare, sweep, validate and fit all make
 * it: catalog, workload source, simulator, results store (one transaction), summary. The caller
 * may attach observers (the timeline) to x->g between runner_run_setup and runner_run_exec.
 * Not for reading options: app/ turns them into a scenario. */
#ifndef SS_RUNNER_RUN_H
#define SS_RUNNER_RUN_H

#include "runner/report.h"

#include "catalog/catalog.h"
#include "gsim/gsim.h"
#include "scenario/scenario.h"
#include "store/store.h"
#include "workload/workload.h"

/* --check: the build's default (on in debug builds, gsim_config_defaults), on or off. */
enum { RUNNER_CHECK_DEFAULT = 0, RUNNER_CHECK_ON = 1, RUNNER_CHECK_OFF = -1 };

/* What an SLA-miss bound judges a run of several tenants by (capacity, static-best). */
typedef enum runner_criterion {
    RUNNER_CRIT_WORST = 0,     /* the highest tenant's miss: every tenant within the bound */
    RUNNER_CRIT_POOLED,        /* the miss of all the tenants' requests together */
    RUNNER_CRIT_TENANT,        /* one tenant's miss */
} runner_criterion;

/* A run that stops once its judged SLA miss is certain to exceed a threshold (a capacity probe
 * that cannot pass, a search's candidate that cannot beat the best so far). A request's SLA
 * verdict is final when it completes or is rejected, and one in flight may have broken a bound
 * for good already (its first token or its end later than the bound allows, more slow gaps
 * than its p99 may leave: gsim_req_sla_so_far, the judge the final verdict uses). A run
 * measures exactly the requests arriving at or after the warm-up, which its workload tells
 * ahead (runner_arrivals_of's n_measured). So once a tenant's measured requests known to miss,
 * over all of its measured requests, exceed the threshold, the run's miss for that tenant
 * exceeds it too, whatever the rest of the run does: (double)missed / (double)requests is the
 * very quotient the metrics compute, and it only grows with missed. Under the worst criterion
 * any tenant's crossing decides, under the pooled one all requests together, under the tenant
 * one that tenant's. Requests that end are counted as they end; those in flight are looked at
 * at a request's end at most once per simulated second. */
typedef struct runner_stop {
    runner_criterion criterion;
    uint32_t i_tenant;         /* the judged tenant under RUNNER_CRIT_TENANT */
    double above;              /* stop once the judged miss is certain to be > above */
    uint32_t n_tenants;        /* of the scenario */
    uint64_t n_measured[SS_MAX_TENANTS]; /* each tenant's measured requests in the whole run
                                            (runner_stop_init; an upper bound would do) */
} runner_stop;

typedef struct runner_run_opts {
    const char *profiles;     /* catalog directory (NULL: catalog_default_dir) */
    const char *config;       /* the scenario file, for labels (NULL: none) */
    const char *command;      /* the command line, for the runs table */
    const char *sweep;        /* sweep name and point key, stored with the run (NULL: none) */
    const char *point;
    double load;              /* compare's or a sweep point's load multiplier (0: none) */
    int check;                /* verify invariants after every event: RUNNER_CHECK_* */
    int progress;             /* progress line on a terminal */
    store *st;                /* an open store to write to instead of opening sc->db (borrowed) */
    int past_duration;        /* the workload to its own end, not cut at the run's duration_s
                                 (each tenant's own duration still holds) */
    int arrivals_checked;     /* runner_run_check already passed, which reads a stretched
                                 workload once to keep arrivals within the simulated time
                                 range: setup does not read it again */
    catalog *catalog;         /* a catalog loaded beforehand (from profiles), used instead of
                                 loading one (and left alone by runner_run_fini): repeated runs
                                 read the profiles once, and files changed meanwhile do not
                                 change them; borrowed; NULL: load it */
    const cat_engine *engine; /* an engine put into the loaded catalog before the scenario's
                                 are looked up (catalog_engine_put: it replaces the profile
                                 of the same name), so that a candidate runs without a file
                                 (slicesim fit); borrowed; NULL: none */
    const char *search;       /* how a searching bundle (static-best) chose the run's scenario,
                                 stored in its parameters as "bundle.search" (borrowed;
                                 NULL: none) */
    const runner_stop *stop;  /* stop the run once its judged miss is certain to exceed
                                 stop->above (runner_run.stopped; borrowed); NULL: run it to
                                 its end */
    const char *bundle;       /* the bundle's label, stored as runs.bundle (borrowed; NULL:
                                 none, a plain replay) */
    store_keep keep;          /* what of the run the database keeps (--store): its summary,
                                 also its requests (the default), also its iterations */
} runner_run_opts;

/* The simulator's configuration and workload specs made from the scenario (private to
 * runner/: runner/scenario_run.h). */
typedef struct runner__config runner__config;

typedef struct runner_run {
    const scn_scenario *sc;   /* borrowed */
    const runner_run_opts *o; /* borrowed */
    runner__config *run;      /* owned */
    catalog *cat;
    int own_cat;              /* cat was loaded here (not o->catalog) */
    wl_source *ws;
    store *st;                /* opened here unless o->st */
    int own_store;
    gsim *g;
    char *ini;                /* the scenario as written back, for the runs table */
    metrics_summary m;        /* after runner_run_exec (all zero when stopped) */
    double wall_s;
    int stopped;              /* o->stop stopped the run: nothing stored, no summary; its
                                 misses so far are runner_run_misses_so_far's */
    ss_time stopped_ns;       /* simulated time it stopped at */
    struct {                  /* with o->stop: the measured requests known to miss so far */
        uint64_t done[SS_MAX_TENANTS];   /* each tenant's that ended */
        uint64_t missed[SS_MAX_TENANTS]; /* of them, those that missed their SLA */
        uint64_t broken[SS_MAX_TENANTS]; /* in flight at the last look, already past a bound
                                            for good (gsim_req_sla_so_far) */
        ss_time next_look;    /* when in-flight requests are looked at next */
        int bad;              /* a tenant ended more than o->stop counted (cannot happen):
                                 nothing is stopped */
    } so_far;
    struct runner__iter_keeper *keeper; /* stores iterations (o->keep; owned), or NULL */
    ss_errbuf eb;
} runner_run;

/* Build everything for scenario sc (already checked). 0 or an SS_E* code with x->eb set. */
int runner_run_setup(runner_run *x, const scn_scenario *sc, const runner_run_opts *o);
/* Whether scenario sc would run: everything runner_run_setup builds (models and GPUs found,
 * tenants fitting on the cluster, policy parameters, workload sources opened) is built and
 * freed again, nothing is simulated or stored. 0 or an SS_E* code with eb set. Commands that
 * run several points check them all this way before the first one runs. */
int runner_run_check(const scn_scenario *sc, const runner_run_opts *o, ss_errbuf *eb);
/* Simulate, summarise, and store the run (unless sc->db is "none" and no store was given).
 * With o->stop, a run whose judged miss becomes certain to exceed the threshold stops there:
 * 0 with x->stopped set, and nothing is stored (its database transaction is rolled back, so a
 * stopped run is never mistaken for a complete one). */
int runner_run_exec(runner_run *x);
/* A stopped run's misses as lower bounds of those the whole run would have had: each tenant's
 * measured requests known to miss their SLA when it stopped (ended missing it, or in flight
 * past a bound for good) over all of its measured requests (o->stop->n_measured) into
 * tenant_miss[0..n_tenants), and all tenants' together into *pooled; the judged one (o->stop's
 * criterion, above its threshold) is returned. */
double runner_run_misses_so_far(const runner_run *x, double *tenant_miss, double *pooled);
/* What the report calls the run. */
runner_report runner_run_report(const runner_run *x);
/* Free what setup made (NULL-safe fields). */
void runner_run_fini(runner_run *x);

/* A load multiplier (compare's, sweep's and capacity's loads): multiply every tenant's
 * rate_scale by factor, and stretch each
 * synthetic tenant's generator by the same factor (duration=D becomes D x factor,
 * requests=N becomes ceil(N x factor)), so that its traffic spans the same seconds at every
 * load: the requests of factor 1 and more of them, factor times as fast (slicesim capacity).
 * Trace and ServeGen tenants are only scaled: a trace of T seconds spans T / rate_scale.
 * 0, or SS_EPARSE with eb set when a stretched spec does not fit (sc is then partly scaled
 * and should be discarded). */
int runner_scale_load(scn_scenario *sc, double factor, ss_errbuf *eb);
/* When one tenant's requests arrive. */
typedef struct runner_arrivals {
    double first_s, last_s;  /* first and last arrival, s (0 when n is 0) */
    uint64_t n;              /* requests */
    uint64_t n_measured;     /* of them, those arriving at or after the warm-up: the requests
                                a run measures (past_duration 0) */
    uint64_t tokens;         /* their prompt and output tokens */
} runner_arrivals;
/* The arrivals of each tenant of scenario sc (already checked) into a[0..sc->n_tenants): the
 * workload sc's runs read, read once to its end without simulating anything; with
 * past_duration, read past the run's duration to the workload's own end. 0 or an SS_E* code
 * with eb set. */
int runner_arrivals_of(const scn_scenario *sc, const runner_run_opts *o, int past_duration,
                       runner_arrivals *a, ss_errbuf *eb);
/* Stop rule out for runs of scenario sc (already checked) judged by criterion c (tenant
 * i_tenant under RUNNER_CRIT_TENANT) against threshold above: each tenant's measured requests
 * counted by reading the workload once (runner_arrivals_of). 0 or an SS_E* code with eb set. */
int runner_stop_init(runner_stop *out, const scn_scenario *sc, const runner_run_opts *o,
                     runner_criterion c, uint32_t i_tenant, double above, ss_errbuf *eb);

/* The name of criterion c for output: "worst", "pooled", "tenant". */
const char *runner_criterion_name(runner_criterion c);

/* Seconds on a monotonic wall clock, for wall times and progress lines only: never results. */
double runner_wall_now(void);
/* A long job's progress for its line on stderr, into buf (n bytes): "22 %WORD, 0:12 elapsed,
 * ~0:42 left" after done of total parts in elapsed_s wall seconds (word: " done", or "" where
 * the line says so already); the time left assumes the parts to come take as long as those done
 * took, and is left out (as elapsed is) before the first is done. Wall-clock: for stderr only,
 * never for results, the database or JSON. */
void runner_progress_text(char *buf, size_t n, long done, long total, double elapsed_s,
                          const char *word);
/* The engine v names: a catalog name, or a profile file's path (scn_profile_is_path), which is
 * read into cat first (catalog_engine_load; an unreadable file is SS_EPARSE, bad input, as an
 * unreadable trace is). Pointers to cat's engines obtained earlier are invalidated. */
int runner_engine_resolve(catalog *cat, const char *v, const cat_engine **out, ss_errbuf *eb);

/* The caller's check of a command's files, called by the commands that run several points
 * (runner/compare.h, runner/sweep.h) before they write anything, so that app/ can refuse an
 * output that is one of the inputs or another output. sc is the scenario of the runs (its file
 * and its tenants' traces are read; borrowed), db the results database they write (NULL: sc's
 * own; "none": none). 0, or an SS_E* code with eb set, which stops the command. */
typedef int runner_files_fn(void *ud, const scn_scenario *sc, const char *db, ss_errbuf *eb);

#endif
