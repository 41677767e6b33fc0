/* Fuzz target of an engine profile (profiles/engines/NAME.ini) and what a replay makes of it.
 * The input is the only engine of a catalog that holds the project's GPUs and three models (a
 * small dense one, an MoE one, a large one). catalog_load must accept it or fail with a message
 * naming the file; a value refused as out of range names the term's documented range. An
 * accepted engine must hold every term, in [host] and in each [gpu.NAME] section, within its
 * documented range (cat_engine_term_get); and the roofline cost model over it must give, on
 * every GPU, model and TP degree, for the smallest and the largest batches the batching
 * policies allow (1 token; 2^20 sequences and 2^26 tokens), step times that are positive and
 * far from overflowing int64 nanoseconds, host times below the saturation ceiling (an in-range
 * engine is never silently capped), and a front-end latency that converts to nanoseconds
 * exactly (UBSan catches any overflow on the way). */
#include "fuzz.h"

#include "catalog/catalog.h"
#include "config.h"
#include "core/ss_time.h"
#include "cost/cost.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The ceiling on one operator or host phase, ns (cost/cost_roofline.h COST__MAX_OP_NS). */
#define FZ_MAX_OP_NS INT64_C(10000000000000)

static const char *const gpus[] = {"a100-80g", "h100-sxm", "h200", "l40s"};
static const char *const models[] = {"llama-2-7b", "mixtral-8x7b", "llama-3-70b"};
#define N_GPUS (sizeof gpus / sizeof *gpus)
#define N_MODELS (sizeof models / sizeof *models)

static char dir[1024]; /* the catalog: DIR/hardware, DIR/models, DIR/engines/fuzz.ini */

/* Copy the project's file profiles/rel into the catalog directory. */
static void copy_profile(const char *rel)
{
    char src[1024], buf[16384], dst[1024], path[1024];
    snprintf(src, sizeof src, "%s/profiles/%s", SS_SOURCE_ROOT, rel);
    FILE *f = fopen(src, "rb");
    FZ_ASSERT(f != NULL);
    size_t n = fread(buf, 1, sizeof buf, f);
    FZ_ASSERT(n < sizeof buf);
    fclose(f);
    snprintf(dst, sizeof dst, "cat/%s", rel);
    fz_write(path, sizeof path, dst, (const uint8_t *)buf, n);
}

static void setup(void)
{
    if (dir[0])
        return;
    char rel[128];
    for (size_t i = 0; i < N_GPUS; i++) {
        snprintf(rel, sizeof rel, "hardware/%s.ini", gpus[i]);
        copy_profile(rel);
    }
    for (size_t i = 0; i < N_MODELS; i++) {
        snprintf(rel, sizeof rel, "models/%s.ini", models[i]);
        copy_profile(rel);
    }
    fz_mkdir(dir, sizeof dir, "cat");
}

/* The term whose field is written "section.key" (or "gpu.NAME.key" for a per-GPU term), the
 * n bytes at field, into *t: 1, or 0 when there is none. */
static int term_named(const char *field, size_t n, cat_engine_term *t)
{
    for (size_t i = 0; cat_engine_term_get(i, t) == 0; i++) {
        size_t ns = strlen(t->section), nk = strlen(t->key);
        if (n == ns + 1 + nk && !strncmp(field, t->section, ns) && field[ns] == '.' &&
            !strncmp(field + ns + 1, t->key, nk))
            return 1;
        if (t->per_gpu && n > 4 + nk + 1 && !strncmp(field, "gpu.", 4) &&
            field[n - nk - 1] == '.' && !strncmp(field + n - nk, t->key, nk))
            return 1;
    }
    return 0;
}

/* A refusal of exactly the form "PATH:LINE: FIELD: out of range [lo, hi]" whose FIELD is a term
 * names that term's documented range. (Values and section names are the input's own text and
 * may spell anything; a message of this whole form with a term's field comes only from the
 * range check.) */
static void check_range_message(const char *msg, const char *path)
{
    static const char tag[] = ": out of range [";
    size_t n = strlen(path);
    if (strncmp(msg, path, n) || msg[n] != ':')
        return;
    const char *field = msg + n + 1 + strspn(msg + n + 1, "0123456789");
    if (field == msg + n + 1 || strncmp(field, ": ", 2))
        return;
    field += 2;
    const char *at = NULL;
    for (const char *p = strstr(field, tag); p; p = strstr(p + 1, tag))
        at = p;
    if (!at)
        return;
    char *end;
    double lo = strtod(at + strlen(tag), &end);
    if (end[0] != ',' || end[1] != ' ')
        return;
    double hi = strtod(end + 2, &end);
    cat_engine_term t;
    if (strcmp(end, "]") || !term_named(field, (size_t)(at - field), &t))
        return;
    FZ_ASSERT(lo == t.lo && hi == t.hi);
}

/* The term's field in e (or in host, for a per-GPU term) lies in its range. */
static void check_term(const cat_engine *e, const cat_engine_host *host, const cat_engine_term *t)
{
    double x;
    if (host) {
        size_t off = t->off - offsetof(cat_engine, host);
        FZ_ASSERT(off + sizeof x <= sizeof *host);
        memcpy(&x, (const char *)host + off, sizeof x);
    } else {
        memcpy(&x, (const char *)e + t->off, sizeof x);
    }
    double v = x / t->scale; /* as written, up to the rounding of the scaling */
    FZ_ASSERT(isfinite(v));
    FZ_ASSERT(v >= t->lo * (1 - 1e-12) && v <= t->hi * (1 + 1e-12));
}

static void check_terms(const cat_engine *e)
{
    cat_engine_term t;
    for (size_t i = 0; cat_engine_term_get(i, &t) == 0; i++) {
        check_term(e, NULL, &t);
        for (uint32_t g = 0; t.per_gpu && g < e->n_gpus; g++)
            check_term(e, &e->per_gpu[g].host, &t);
    }
    FZ_ASSERT(e->n_gpus <= CAT_ENGINE_MAX_GPUS);
}

/* One batch: n_seq sequences of which one is a prefill of q tokens over c0 cached ones and
 * the others decodes at context ctx. */
static cost_batch batch(uint32_t n_seq, uint64_t q, uint64_t c0, uint64_t ctx)
{
    cost_batch b = {0};
    cost_batch_add_prefill(&b, q, c0);
    b.n_decode = n_seq - 1;
    b.decode_ctx_tokens = (uint64_t)(n_seq - 1) * ctx;
    return b;
}

/* Step times of e on GPU g running model m over TP degree tp, at extreme batch shapes. */
static void check_costs(const cat_engine *e, const cat_gpu *g, const cat_model *m, uint32_t tp)
{
    FZ_ASSERT(g && m);
    cost_params p = {.gpu = g, .model = m, .tp = tp, .engine = e};
    cost_model *cm = NULL;
    ss_errbuf eb = {""};
    int rc = cost_model_create(&cm, "roofline", &p, &eb);
    fz_check_error(rc, &eb, NULL);
    FZ_ASSERT(rc == SS_OK); /* the project's GPUs and an accepted engine always make a model */
    const uint32_t big = 1u << 20;
    const cost_batch shapes[] = {
        batch(1, 1, 0, 0),                                   /* one token */
        batch(2, 1, 0, 1),                                   /* one prefill token, one decode */
        batch(256, 2048, 0, 4096),                           /* a common step */
        batch(big, (UINT64_C(1) << 26) - (big - 1), 0, 1),   /* 2^20 sequences, 2^26 tokens */
        batch(big, 1, m->max_context, m->max_context),       /* 2^20 long contexts */
    };
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        ss_time host = cost_host_ns(cm, &shapes[i]);
        FZ_ASSERT(host >= 0 && host < FZ_MAX_OP_NS); /* never saturated, never wrapped */
        ss_time it = cost_iteration_ns(cm, &shapes[i]);
        FZ_ASSERT(it > 0 && it < INT64_MAX / 4);
        cost_split sp;
        cost_iteration_split(cm, &shapes[i], &sp);
        FZ_ASSERT(sp.layer_ns > 0 && sp.head_ns >= sp.host_ns && sp.host_ns >= 0 &&
                  sp.tail_ns > 0 && sp.send_ns >= 0);
        FZ_ASSERT(cost_pp_send(cm, &shapes[i], NULL) >= 0);
    }
    cost_model_destroy(&cm);
}

/* The front end's latency, added to every completed request's TTFT and E2E, in exact ns. */
static void check_frontend(const cat_engine *e)
{
    FZ_ASSERT(isfinite(e->frontend_s) && e->frontend_s >= 0 && e->frontend_s * 1e9 < 9e18);
    ss_time fe = ss_time_from_s(e->frontend_s);
    FZ_ASSERT(fe >= 0 && (fe > 0) == (e->frontend_s * 1e9 >= 0.5));
    FZ_ASSERT(fabs((double)fe - e->frontend_s * 1e9) <= 0.5 + e->frontend_s * 1e9 * 1e-15);
    /* a request finishing at the end of the arrival range still has its exact client time */
    FZ_ASSERT(ss_time_add(SS_ARRIVAL_MAX * 2, fe) == SS_ARRIVAL_MAX * 2 + fe);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    fz_begin();
    char path[1024];
    fz_write(path, sizeof path, "cat/engines/fuzz.ini", data, size);
    catalog *c = NULL;
    ss_errbuf eb = {""};
    int rc = catalog_load(&c, dir, &eb);
    fz_check_error(rc, &eb, path);
    if (rc == SS_OK) {
        FZ_ASSERT(catalog_n_engines(c) == 1);
        const cat_engine *e = catalog_engine_at(c, 0);
        check_terms(e);
        check_frontend(e);
        for (size_t gi = 0; gi < N_GPUS; gi++)
            for (size_t mi = 0; mi < N_MODELS; mi++)
                for (uint32_t tp = 1; tp <= 8; tp *= 8)
                    check_costs(e, catalog_gpu(c, gpus[gi]), catalog_model(c, models[mi]), tp);
    } else {
        FZ_ASSERT(c == NULL);
        check_range_message(eb.msg, path);
    }
    catalog_destroy(&c);
    fz_end();
    return 0;
}
