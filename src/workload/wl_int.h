/* Internal interfaces of the workload module: the ServeGen client generator (servegen.c) and
 * its streaming dataset reader (servegen_json.c), the rng stream ids, and the FNV-1a helper.
 * Not for other modules: they use workload.h only. */
#ifndef SS_WORKLOAD_WL_INT_H
#define SS_WORKLOAD_WL_INT_H

#include "workload/workload.h"

#include "core/ss_hash.h"

#include <stddef.h>
#include <stdint.h>

/* Rng stream ids of the workload module: (tag << 32) | (purpose << 16) | index, so that they
 * never meet the small well-known ids of ss_rng.h and every tenant (or split group, named by
 * its first tenant) gets its own streams. */
#define WL__STREAM_TAG UINT64_C(0x574c)
enum {
    WL__STREAM_TIER = 1,     /* tier draws of a tenant */
    WL__STREAM_SPLIT = 2,    /* random split of a shared trace (index: the group's first tenant) */
    WL__STREAM_SYNTH = 3,    /* the seed of a tenant's synthetic generator */
    WL__STREAM_SG_ARRIVAL = 4, /* ServeGen inter-arrival times */
    WL__STREAM_SG_TOKENS = 5,  /* ServeGen token counts */
};

static inline uint64_t wl__stream(uint32_t purpose, uint32_t index)
{
    return (WL__STREAM_TAG << 32) | ((uint64_t)purpose << 16) | index;
}



/* ---- validation and split groups (wl_spec.c) --------------------------------------------- */

/* Which tenants read which source: a group is one trace reader dealt to its members (tenants
 * naming the same trace path with a split other than none), or a single tenant's own source. */
typedef struct wl__plan {
    uint32_t group_of[SS_MAX_TENANTS]; /* group of each tenant */
    uint32_t first[SS_MAX_TENANTS];    /* first (lowest-index) tenant of each group */
    uint32_t n_groups;                 /* groups, <= tenants */
} wl__plan;

/* Check every spec (see wl_source_create) and group split partners. 0 or SS_EINVAL with
 * "tenant NAME: ..." in eb. Opens no file. */
int wl__plan_make(wl__plan *p, const wl_tenant_spec *specs, uint32_t n,
                  const char *servegen_dir, ss_errbuf *eb);

/* ---- ServeGen dataset reader (servegen_json.c) ------------------------------------------- */

/* Longest JSON string accepted in a dataset file (one PMF literal); the largest in the public
 * data is about 0.9 MB. */
#define WL__SG_MAX_STRING (64u << 20)

/* A token-count PMF: the support in increasing order with cumulative probabilities. */
typedef struct wl__pmf {
    uint32_t *val;   /* support, increasing (token counts, may include 0) */
    double *cum;     /* cum[i] = P(X <= val[i]), last = the total mass (about 1) */
    uint32_t n;      /* support size (0: none) */
    uint32_t cap;    /* allocated entries of val and cum */
} wl__pmf;

/* One dataset window: the PMFs that apply from ts on. */
typedef struct wl__sg_window {
    int64_t ts;       /* window timestamp, s */
    wl__pmf input;    /* input_tokens */
    wl__pmf output;   /* output_tokens */
} wl__sg_window;

typedef struct wl__sg_dataset wl__sg_dataset;

/* Open a dataset file (.json or .json.gz: zlib reads both) and check that it starts with '{'.
 * path is copied. 0, SS_ENOTFOUND / SS_EIO / SS_EPARSE / SS_ENOMEM with "PATH: ..." in eb. */
int wl__sg_dataset_open(wl__sg_dataset **d_out, const char *path, ss_errbuf *eb);
/* Read the next window that has data into *w (its PMFs are reused as storage). Windows in which
 * any field is "{}" are skipped, as ServeGen's loader does. Keys must increase. 1, 0 at the end
 * of the object (then only blanks may follow), or <0 with "PATH:LINE: ..." in eb. */
int wl__sg_dataset_next(wl__sg_dataset *d, wl__sg_window *w, ss_errbuf *eb);
/* FNV-1a of the decompressed bytes consumed so far. */
uint64_t wl__sg_dataset_digest(const wl__sg_dataset *d);
/* Close the file and free the reader. NULL-safe; sets *d to NULL. */
void wl__sg_dataset_close(wl__sg_dataset **d);
/* Free a window's PMF storage (not the window itself). */
void wl__sg_window_free(wl__sg_window *w);
/* Parse a Python dict literal "{value: probability, ...}" of len bytes into p. Token fields
 * (tokens != 0) need whole-number keys in [0, TRACE_MAX_TOKENS]; other fields may have any
 * number as key and only their syntax is checked (p may then be NULL). Probabilities are
 * finite and >= 0 and must sum to 1 within 1e-6 (ServeGen's check). *empty is set for "{}".
 * 0, SS_EPARSE with "what is wrong" (no location) in eb, or SS_ENOMEM. */
int wl__sg_pmf_parse(wl__pmf *p, const char *s, size_t len, int tokens, int *empty,
                     ss_errbuf *eb);
/* Inverse CDF: the support value whose cumulative bin holds u * total, u in [0, 1). */
uint32_t wl__pmf_sample(const wl__pmf *p, double u);

/* ---- ServeGen client (servegen.c) -------------------------------------------------------- */

typedef struct wl__sg wl__sg;

/* Open client "CATEGORY/POOL/CLIENT" under dir: chunk-CLIENT-trace.csv and
 * chunk-CLIENT-dataset.json (or .json.gz). Requests are generated from start_s on, with
 * arrival times relative to start_s; randomness from (seed, tenant)'s ServeGen streams. Reads
 * the first trace rows and dataset window. 0, SS_EINVAL (bad client name), SS_ENOTFOUND,
 * SS_EIO, SS_EPARSE, SS_ENOMEM with eb set; nothing returned on failure. */
int wl__sg_open(wl__sg **g_out, const char *dir, const char *client, double start_s,
                uint64_t seed, uint32_t tenant, ss_errbuf *eb);
/* Next request (arrival_ns, prompt_tokens, output_tokens; line = the trace row). 1, 0 at the
 * end of the client's period, or <0 with eb set (sticky). */
int wl__sg_next(wl__sg *g, trace_rec *out, ss_errbuf *eb);
/* FNV-1a over the client name, start, and the bytes of both files consumed so far. */
uint64_t wl__sg_digest(const wl__sg *g);
/* Close both files and free the client. NULL-safe; sets *g to NULL. */
void wl__sg_close(wl__sg **g);

#endif
