/* Fuzz target of the Vidur profile importer (cost_prof_import_vidur, src/cost/profile_vidur.c):
 * the input is a Vidur mlp.csv or network all_reduce/send_recv.csv (the header decides). A
 * successful import must write a table that the profile reader accepts row by row and that the
 * `profile` backend loads, and a fidelity report with sane ranges; a failed one writes nothing.
 * The table is removed after each input. */
#include "fuzz.h"

#include "catalog/catalog.h"
#include "cost/cost.h"
#include "cost/cost_profile.h"
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static catalog *cat;        /* the project's catalog, loaded once */
static char out_dir[1024];  /* PROF/a100-80g: where tables are written */
static char prof_dir[1024]; /* PROF */

static void setup(void)
{
    if (cat)
        return;
    ss_errbuf eb = {""};
    if (catalog_load(&cat, SS_SOURCE_ROOT "/profiles", &eb))
        fz_fail(__FILE__, __LINE__, "catalog: %s", eb.msg);
    fz_mkdir(out_dir, sizeof out_dir, "vprof/a100-80g");
    fz_mkdir(prof_dir, sizeof prof_dir, "vprof");
}

/* Every row of the written table reads; returns the row count. */
static size_t check_table(const char *path)
{
    cost_prof_reader *r = NULL;
    ss_errbuf eb = {""};
    if (cost_prof_reader_open(&r, path, &eb))
        fz_fail(__FILE__, __LINE__, "the imported table does not open: %s", eb.msg);
    cost_prof_row row;
    size_t n = 0;
    int rc;
    while ((rc = cost_prof_reader_next(r, &row, &eb)) == 1)
        n++;
    if (rc)
        fz_fail(__FILE__, __LINE__, "the imported table does not read: %s", eb.msg);
    cost_prof_reader_close(&r);
    return n;
}

static void check_loads(void)
{
    cost_params p = {.gpu = catalog_gpu(cat, "a100-80g"), .model = catalog_model(cat, "llama-2-7b"),
                     .tp = 1, .profiles_dir = prof_dir,
                     .engine = catalog_engine(cat, CAT_ENGINE_DEFAULT)};
    cost_model *cm = NULL;
    ss_errbuf eb = {""};
    if (cost_model_create(&cm, "profile", &p, &eb))
        fz_fail(__FILE__, __LINE__, "the imported table does not load: %s", eb.msg);
    cost_batch b = {0};
    cost_batch_add_prefill(&b, 1000, 0);
    cost_batch_add_decode(&b, 1000);
    FZ_ASSERT(cost_iteration_ns(cm, &b) > 0);
    cost_model_destroy(&cm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    fz_begin();
    char path[1024];
    fz_write(path, sizeof path, "vidur/compute/a100/meta-llama/Llama-2-7b-hf/mlp.csv", data, size);
    cost_prof_import res;
    ss_errbuf eb = {""};
    int rc = cost_prof_import_vidur(path, cat, catalog_gpu(cat, "a100-80g"), out_dir, &res, &eb);
    fz_check_error(rc, &eb, NULL);
    if (rc == SS_OK) {
        FZ_ASSERT(res.rows_kept <= res.rows_in && res.rows_kept >= 1);
        size_t rows = 0;
        for (size_t i = 0; i < res.n_fid; i++) {
            const cost_prof_fid *fd = &res.fid[i];
            FZ_ASSERT(fd->rows >= 1 && fd->key_min <= fd->key_max);
            FZ_ASSERT(fd->median_min_us > 0 && fd->median_min_us <= fd->median_max_us);
            rows += fd->rows;
        }
        FZ_ASSERT(check_table(res.out_path) == rows);
        check_loads();
        FZ_ASSERT(unlink(res.out_path) == 0);
        cost_prof_import_fini(&res);
    }
    fz_end();
    return 0;
}
