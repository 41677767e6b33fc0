/* Fuzz target of the hardware, model and engine catalogs (the .ini files in profiles/hardware,
 * profiles/models and profiles/engines; src/catalog), built three times: FZ_KIND_MODEL 0 reads
 * the input as a GPU file next to the project's llama-2-7b, 1 as a model file next to the
 * project's a100-80g, 2 as an engine file next to both (and next to vllm-eager).
 * catalog_load must accept it or fail with a message naming the file; an accepted entry must
 * then give finite derived figures and a roofline cost model whose iteration times never
 * overflow (UBSan). */
#include "fuzz.h"

#include "catalog/catalog.h"
#include "cost/cost.h"
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FZ_KIND_MODEL
#error "build with -DFZ_KIND_MODEL=0 (hardware), 1 (models) or 2 (engines)"
#endif

static char dir[1024]; /* the catalog directory: DIR/hardware, DIR/models, DIR/engines */

/* Kind 0 fuzzes a GPU file, 1 a model file, 2 an engine file (engines/fuzz.ini). */
#define FZ_KIND_ENGINE (FZ_KIND_MODEL == 2)

/* Copy the project's file rel (under profiles/) into the catalog directory. */
static void copy_profile(const char *rel)
{
    char src[1024], buf[16384], dst[1024], path[1024];
    snprintf(src, sizeof src, "%s/profiles/%s", SS_SOURCE_ROOT, rel);
    FILE *f = fopen(src, "rb");
    FZ_ASSERT(f != NULL);
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    snprintf(dst, sizeof dst, "cat/%s", rel);
    fz_write(path, sizeof path, dst, (const uint8_t *)buf, n);
}

/* The files the fuzzed one sits next to, once: the other kinds' sample and the default
 * engine, which every cost model needs. */
static void setup(void)
{
    if (dir[0])
        return;
    if (FZ_KIND_MODEL != 0)
        copy_profile("hardware/a100-80g.ini");
    if (FZ_KIND_MODEL != 1)
        copy_profile("models/llama-2-7b.ini");
    copy_profile("engines/" CAT_ENGINE_DEFAULT ".ini");
    fz_mkdir(dir, sizeof dir, FZ_KIND_MODEL == 0 ? "cat/hardware" : "cat/models");
    fz_mkdir(dir, sizeof dir, "cat");
}

static void check_entry(const catalog *c)
{
    FZ_ASSERT(catalog_n_gpus(c) == 1 && catalog_n_models(c) == 1);
    FZ_ASSERT(catalog_n_engines(c) == 1 + FZ_KIND_ENGINE);
    for (size_t i = 0; i < catalog_n_engines(c); i++) {
        const cat_engine *e = catalog_engine_at(c, i);
        FZ_ASSERT(e && catalog_engine(c, e->name) == e);
        FZ_ASSERT(e->overlap == CAT_OVERLAP_SERIAL || e->overlap == CAT_OVERLAP_MAX);
    }
    const cat_gpu *g = catalog_gpu_at(c, 0);
    const cat_model *m = catalog_model_at(c, 0);
    FZ_ASSERT(g && m && catalog_gpu(c, g->name) == g && catalog_model(c, m->name) == m);
    FZ_ASSERT(isfinite(cat_model_params(m)) && cat_model_params(m) > 0);
    FZ_ASSERT(isfinite(cat_model_kv_bytes_per_token(m)) && cat_model_kv_bytes_per_token(m) > 0);
    for (uint32_t tp = 1; tp <= 8; tp *= 2) {
        /* the fuzzed engine is the one that is not the default (kind 2) */
        const cat_engine *e = catalog_engine_at(c, 0);
        if (!strcmp(e->name, CAT_ENGINE_DEFAULT) && catalog_n_engines(c) > 1)
            e = catalog_engine_at(c, 1);
        cost_params p = {.gpu = g, .model = m, .tp = tp, .profiles_dir = NULL, .engine = e};
        cost_model *cm = NULL;
        ss_errbuf eb = {""};
        int rc = cost_model_create(&cm, "roofline", &p, &eb);
        fz_check_error(rc, &eb, NULL);
        if (rc)
            continue;
        static const uint64_t sizes[] = {1, 512, 65536, 10000000};
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
            cost_batch b = {0};
            cost_batch_add_prefill(&b, sizes[i], sizes[i]);
            cost_batch_add_decode(&b, sizes[i]);
            FZ_ASSERT(cost_iteration_ns(cm, &b) >= 0);
        }
        FZ_ASSERT(isfinite(cost_weight_bytes_per_gpu(m, tp, 1)));
        FZ_ASSERT(isfinite(cost_kv_bytes_per_token_per_gpu(m, tp, 2)));
        FZ_ASSERT(isfinite(cost_activation_bytes(m, tp, 8192, 256)));
        cost_model_destroy(&cm);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    fz_begin();
    char path[1024];
    fz_write(path, sizeof path,
             FZ_KIND_ENGINE  ? "cat/engines/fuzz.ini"
             : FZ_KIND_MODEL ? "cat/models/fuzz.ini"
                             : "cat/hardware/fuzz.ini",
             data, size);
    catalog *c = NULL;
    ss_errbuf eb = {""};
    int rc = catalog_load(&c, dir, &eb);
    fz_check_error(rc, &eb, path);
    if (rc == SS_OK)
        check_entry(c);
    else
        FZ_ASSERT(c == NULL);
    catalog_destroy(&c);
    fz_end();
    return 0;
}
