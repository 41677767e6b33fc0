/* Fuzz target of sweep experiment files (EXPERIMENT.ini: [sweep], [set], [grid]) through
 * runner_sweep_exp_load, the parser `slicesim sweep` uses (src/runner/sweep_exp.c). Checks the
 * error contract (messages name the file), that a loaded experiment has a scenario and a grid
 * with 1 to RUNNER_SWEEP_MAX_VALUES values per key, and that everything is freed. The scenario
 * the file names is not read (fuzz_scenario covers scenario files). */
#include "fuzz.h"

#include "runner/sweep.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_begin();
    char path[1024];
    fz_write(path, sizeof path, "sweep.ini", data, size);
    runner_sweep_exp x;
    memset(&x, 0, sizeof x);
    ss_errbuf eb = {""};
    int rc = runner_sweep_exp_load(&x, path, &eb);
    fz_check_error(rc, &eb, path);
    if (rc == SS_OK) {
        FZ_ASSERT(x.scenario[0] && x.name[0] && x.db[0]);
        FZ_ASSERT(x.n_keys >= 1 && x.n_keys <= RUNNER_SWEEP_MAX_KEYS && x.n_points >= 1);
        for (int k = 0; k < x.n_keys; k++) {
            FZ_ASSERT(x.keys[k].n >= 1 && x.keys[k].n <= RUNNER_SWEEP_MAX_VALUES);
            for (int v = 0; v < x.keys[k].n; v++)
                FZ_ASSERT(x.keys[k].values[v] != NULL && !strchr(x.keys[k].values[v], ';'));
        }
    }
    runner_sweep_exp_free(&x);
    fz_end();
    return 0;
}
