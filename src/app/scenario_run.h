/* Private to app/: turning a checked scenario into what a run needs: the simulator's
 * configuration (tenants with their models and per-tier SLAs, cluster, policies, engine) and
 * the workload's per-tenant specifications (trace, synthetic or ServeGen source, shaping,
 * tier mix). Everything it fills borrows strings from the scenario and the catalog. */
#ifndef SS_APP_SCENARIO_RUN_H
#define SS_APP_SCENARIO_RUN_H

#include "catalog/catalog.h"
#include "gsim/gsim.h"
#include "scenario/scenario.h"
#include "workload/workload.h"

typedef struct cli_run {
    gsim_config cfg;                      /* cfg.tenants points into tenants[] */
    gsim_tenant tenants[SS_MAX_TENANTS];
    wl_tenant_spec specs[SS_MAX_TENANTS];
    trace_gen_spec synth[SS_MAX_TENANTS];
} cli_run;

/* Fill r from scenario sc (already checked) and catalog cat. Unknown models or GPUs, bad
 * synthetic specs and bad tier mixes give SS_ENOTFOUND / SS_EINVAL / SS_EPARSE with
 * "tenant NAME: ..." in eb. */
int cli_run_make(cli_run *r, const scn_scenario *sc, const catalog *cat, ss_errbuf *eb);

/* Parse a synthetic workload spec: space-separated KEY=VALUE with rate (req/s, required),
 * duration (s) or requests (count), arrival (poisson|gamma), cv, prompt and output (length
 * distributions as for slicesim trace gen; default: the Azure conversation quantiles) and
 * seed (default: derived by the workload from the run seed). 0 or SS_EPARSE. */
int cli_parse_synthetic(trace_gen_spec *g, const char *text, ss_errbuf *eb);

typedef struct cli_files cli_files;
/* Add sc's inputs (the scenario file, every tenant's trace) and its output (the results
 * database db, or sc's own when db is NULL; nothing for "none") to fs (cli_files_add). 0,
 * SS_ENOMEM, or SS_EINVAL with eb naming the clash. */
int cli_scenario_files(cli_files *fs, const scn_scenario *sc, const char *db, ss_errbuf *eb);

#endif
