/* Private to runner/: turning a checked scenario into what a run needs: the simulator's
 * configuration (tenants with their models and per-tier SLAs, cluster, policies, engine) and
 * the workload's per-tenant specifications (trace, synthetic or ServeGen source, shaping,
 * tier mix). Everything it fills borrows strings from the scenario and the catalog. */
#ifndef SS_RUNNER_SCENARIO_RUN_H
#define SS_RUNNER_SCENARIO_RUN_H

#include "catalog/catalog.h"
#include "gsim/gsim.h"
#include "scenario/scenario.h"
#include "workload/workload.h"

/* Most replicas a tenant's share_gpus may place (more: first fit). */
#define RUNNER_SHARE_GPUS_MAX 128

typedef struct runner__config {
    gsim_config cfg;                      /* cfg.tenants points into tenants[] */
    gsim_tenant tenants[SS_MAX_TENANTS];
    wl_tenant_spec specs[SS_MAX_TENANTS];
    trace_gen_spec synth[SS_MAX_TENANTS];
    uint32_t share_gpus[SS_MAX_TENANTS][RUNNER_SHARE_GPUS_MAX]; /* tenants[i].share.gpus */
} runner__config;

/* Fill r from scenario sc (already checked) and catalog cat. Unknown models or GPUs, bad
 * synthetic specs and bad tier mixes give SS_ENOTFOUND / SS_EINVAL / SS_EPARSE with
 * "tenant NAME: ..." in eb. */
int runner__config_make(runner__config *r, const scn_scenario *sc, const catalog *cat,
                        ss_errbuf *eb);
/* Read into cat the engine profiles that sc's tenants name by path (tenant.NAME.engine =
 * FILE.ini, or --engine FILE.ini), each once, before runner__config_make looks them up. An
 * unreadable or invalid file, or one whose engine's name another engine has, is an error that
 * names the file and line, prefixed with where the scenario got the key. */
int runner_engine_files(catalog *cat, const scn_scenario *sc, ss_errbuf *eb);

#endif
