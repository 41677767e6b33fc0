/* Fuzz target of profile tables (profiles/PROFILE-FORMAT.md, src/cost/cost_profile.c): the
 * input is one table file. It is read row by row with cost_prof_reader (every row written back
 * with cost_prof_write_row must read back with the same operator and keys), then, when the
 * whole file reads, loaded by the `profile` and `auto` cost backends for a few catalog models
 * and TP degrees, whose curves are evaluated over batches from 1 token to 10^7. Durations must
 * be >= 1 ns for an operator and >= 0 for an iteration; nothing may overflow (UBSan). */
#include "fuzz.h"

#include "catalog/catalog.h"
#include "core/ss_alloc.h"
#include "cost/cost.h"
#include "cost/cost_profile.h"
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static catalog *cat;          /* the project's catalog, loaded once */
static char prof_dir[1024];   /* the profiles directory of the tables: PROF/a100-80g/t.csv */

static void setup(void)
{
    if (cat)
        return;
    ss_errbuf eb = {""};
    if (catalog_load(&cat, SS_SOURCE_ROOT "/profiles", &eb))
        fz_fail(__FILE__, __LINE__, "catalog: %s", eb.msg);
    fz_mkdir(prof_dir, sizeof prof_dir, "prof");
}

/* A row written by cost_prof_write_row reads back with the same operator and keys. */
static void row_round_trip(const cost_prof_row *row)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    FZ_ASSERT(f != NULL);
    cost_prof_write_header(f);
    cost_prof_write_row(f, row);
    FZ_ASSERT(fclose(f) == 0);
    char path[1024];
    fz_write(path, sizeof path, "row.csv", (const uint8_t *)buf, len);
    cost_prof_reader *r = NULL;
    ss_errbuf eb = {""};
    cost_prof_row back;
    FZ_ASSERT(cost_prof_reader_open(&r, path, &eb) == SS_OK);
    int rc = cost_prof_reader_next(r, &back, &eb);
    if (rc != 1)
        fz_fail(__FILE__, __LINE__, "a written row does not read back: %s\n%s", eb.msg, buf);
    FZ_ASSERT(back.op == row->op && !memcmp(back.key, row->key, sizeof back.key));
    cost_prof_reader_close(&r);
    free(buf);
}

/* Read the table; 1 when every row is valid. */
static int read_table(const char *path)
{
    cost_prof_reader *r = NULL;
    ss_errbuf eb = {""};
    int rc = cost_prof_reader_open(&r, path, &eb);
    fz_check_error(rc, &eb, path);
    if (rc)
        return 0;
    cost_prof_row row;
    while ((rc = cost_prof_reader_next(r, &row, &eb)) == 1) {
        FZ_ASSERT(row.median_us > 0);
        FZ_ASSERT(row.min_us < 0 || row.min_us <= row.median_us);
        FZ_ASSERT(row.p90_us < 0 || row.p90_us >= row.median_us);
        for (int k = 0; k < COST_PK__COUNT; k++)
            FZ_ASSERT(row.key[k] == COST_PROF_ANY || row.key[k] >= 0);
        FZ_ASSERT(row.source != NULL);
        row_round_trip(&row);
    }
    fz_check_error(rc, &eb, path);
    cost_prof_reader_close(&r);
    return rc == 0;
}

/* Build the backend's model for (model, tp) and evaluate it over a range of batches. */
static void evaluate(const char *backend, const char *model, uint32_t tp)
{
    cost_params p = {.gpu = catalog_gpu(cat, "a100-80g"), .model = catalog_model(cat, model),
                     .tp = tp, .profiles_dir = prof_dir,
                     .engine = catalog_engine(cat, CAT_ENGINE_DEFAULT)};
    FZ_ASSERT(p.gpu && p.model);
    cost_model *cm = NULL;
    ss_errbuf eb = {""};
    int rc = cost_model_create(&cm, backend, &p, &eb);
    fz_check_error(rc, &eb, NULL);
    if (rc)
        return;
    static const uint64_t sizes[] = {1, 7, 100, 512, 4096, 65536, 10000000};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        cost_batch b = {0};
        cost_batch_add_prefill(&b, sizes[i], sizes[i] / 2);
        FZ_ASSERT(cost_iteration_ns(cm, &b) >= 0);
        cost_batch d = {0};
        for (int s = 0; s < 4; s++)
            cost_batch_add_decode(&d, sizes[i]);
        FZ_ASSERT(cost_iteration_ns(cm, &d) >= 0);
        cost_batch_merge(&b, &d);
        cost_op ops[64];
        ss_time ns[64];
        size_t n = cost_iteration_ops(cm, &b, ops, ns, 64);
        for (size_t k = 0; k < n && k < 64; k++)
            FZ_ASSERT(ns[k] >= 1 || ops[k].kind == COST_OP_HOST);
    }
    cost_model_destroy(&cm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    fz_begin();
    char path[1024];
    fz_write(path, sizeof path, "prof/a100-80g/t.csv", data, size);
    if (read_table(path)) {
        static const struct {
            const char *model;
            uint32_t tp;
        } shapes[] = {{"llama-2-7b", 1}, {"llama-2-7b", 2}, {"mixtral-8x7b", 4}};
        for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
            evaluate("profile", shapes[i].model, shapes[i].tp);
            evaluate("auto", shapes[i].model, shapes[i].tp);
        }
    }
    fz_end();
    return 0;
}
