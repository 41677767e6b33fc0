/* Private to app/: one run of a checked scenario, as replay, compare and sweep all make it:
 * catalog, workload source, simulator, results store (one transaction), summary. The caller
 * may attach observers (the timeline) to x->g between app_run_setup and app_run_exec. */
#ifndef SS_APP_RUN_H
#define SS_APP_RUN_H

#include "app/report.h"
#include "app/scenario_run.h"

#include "catalog/catalog.h"
#include "gsim/gsim.h"
#include "scenario/scenario.h"
#include "store/store.h"
#include "workload/workload.h"

/* --check: the build's default (on in debug builds, gsim_config_defaults), on or off. */
enum { APP_CHECK_DEFAULT = 0, APP_CHECK_ON = 1, APP_CHECK_OFF = -1 };

typedef struct app_run_opts {
    const char *profiles;     /* catalog directory (NULL: catalog_default_dir) */
    const char *config;       /* the scenario file, for labels (NULL: none) */
    const char *command;      /* the command line, for the runs table */
    const char *sweep;        /* sweep name and point key, stored with the run (NULL: none) */
    const char *point;
    double load;              /* compare's or a sweep point's load multiplier (0: none) */
    int check;                /* verify invariants after every event: APP_CHECK_* */
    int progress;             /* progress line on a terminal */
    store *st;                /* an open store to write to instead of opening sc->db (borrowed) */
    int arrivals_checked;     /* app_run_check already passed, which reads a stretched workload
                                 once to keep arrivals within the simulated time range: setup
                                 does not read it again */
    catalog *catalog;         /* a catalog loaded beforehand (from profiles), used instead of
                                 loading one (and left alone by app_run_fini): repeated runs
                                 read the profiles once, and files changed meanwhile do not
                                 change them; borrowed; NULL: load it */
    const cat_engine *engine; /* an engine put into the loaded catalog before the scenario's
                                 are looked up (catalog_engine_put: it replaces the profile
                                 of the same name), so that a candidate runs without a file
                                 (slicesim fit); borrowed; NULL: none */
} app_run_opts;

typedef struct app_run {
    const scn_scenario *sc;   /* borrowed */
    const app_run_opts *o;    /* borrowed */
    cli_run *run;
    catalog *cat;
    int own_cat;              /* cat was loaded here (not o->catalog) */
    wl_source *ws;
    store *st;                /* opened here unless o->st */
    int own_store;
    gsim *g;
    char *ini;                /* the scenario as written back, for the runs table */
    metrics_summary m;        /* after app_run_exec */
    double wall_s;
    ss_errbuf eb;
} app_run;

/* Build everything for scenario sc (already checked). 0 or an SS_E* code with x->eb set. */
int app_run_setup(app_run *x, const scn_scenario *sc, const app_run_opts *o);
/* Whether scenario sc would run: everything app_run_setup builds (models and GPUs found,
 * tenants fitting on the cluster, policy parameters, workload sources opened) is built and
 * freed again, nothing is simulated or stored. 0 or an SS_E* code with eb set. Commands that
 * run several points check them all this way before the first one runs. */
int app_run_check(const scn_scenario *sc, const app_run_opts *o, ss_errbuf *eb);
/* Simulate, summarise, and store the run (unless sc->db is "none" and no store was given). */
int app_run_exec(app_run *x);
/* What the report calls the run. */
report_run app_run_report(const app_run *x);
/* Free what setup made (NULL-safe fields). */
void app_run_fini(app_run *x);

/* Multiply every tenant's rate_scale by factor. */
void app_scale_rates(scn_scenario *sc, double factor);

#endif
