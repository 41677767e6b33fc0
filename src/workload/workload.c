/* The merged multi-tenant request stream: per-tenant sources (a trace reader, possibly shared
 * by split partners and dealt to them, the synthetic generator, or a ServeGen client), per-
 * tenant shaping (rate_scale, duration, limit) and tier assignment, and a lazy k-way merge by
 * (arrival, tenant index). Not for spec validation (wl_spec.c) or ServeGen parsing
 * (servegen*.c).
 *
 * The merge keeps a small FIFO of shaped requests per tenant. A source is read only when the
 * merge cannot decide without it: when a tenant with an empty FIFO could still get a request
 * that sorts before the best one queued. Its lower bound is the raw arrival of the last row
 * read from its source (rows are time-ordered), shaped with its rate_scale. So a tenant's
 * FIFO only grows with the partners' rows that share one arrival time; more than
 * WL_MAX_QUEUE is an error. Each FIFO entry owns a copy of its prefix-block ids, and the entry
 * returned by wl_source_next is only recycled at the start of the next call, so the returned
 * prefix_blocks stay valid until then. */
#include "workload/wl_int.h"

#include "core/ss_alloc.h"

#include <math.h>
#include <string.h>

/* Requests one tenant may have queued ahead of the merge: a shared trace's rows are
 * time-ordered, so only rows with equal arrival times pile up. */
#define WL_MAX_QUEUE 4096

typedef struct wl_entry {
    trace_rec rec;      /* shaped request: tenant and tier set, id set on output */
    uint32_t *blocks;   /* copy of the prefix-block ids, owned */
    size_t blocks_cap;  /* entries allocated in blocks */
} wl_entry;

typedef struct wl_ten {
    char *name;           /* owned copy, for messages */
    uint32_t group;       /* its source, index into groups */
    double rate_scale;    /* arrival divisor */
    ss_time end_ns;       /* duration limit after scaling (SS_TIME_MAX: none) */
    uint64_t limit;       /* most requests (0: no limit) */
    wl_tier_mix mix;      /* tier assignment */
    ss_rng tier_rng;      /* its own tier stream */
    double weight;        /* random split weight */
    uint32_t lo, hi;      /* class split prompt range */
    wl_entry *q;          /* FIFO ring of q_cap entries */
    uint32_t q_cap, q_head, q_len;
    uint64_t n_accepted;  /* requests queued so far (counts toward limit) */
    int closed;           /* no more requests will be accepted */
} wl_ten;

typedef enum src_kind { SRC_TRACE, SRC_SYNTH, SRC_SERVEGEN } src_kind;

typedef struct wl_group {
    src_kind kind;
    wl_split split;
    trace_reader *reader;   /* SRC_TRACE */
    trace_gen *gen;         /* SRC_SYNTH */
    wl__sg *sg;             /* SRC_SERVEGEN */
    char *path;             /* trace path, owned (for messages) */
    char *filter;           /* trace_tenant, owned, or NULL */
    int32_t filter_idx;     /* the reader's index of that name (-1: not seen yet) */
    uint32_t member[SS_MAX_TENANTS]; /* tenants dealt to, increasing */
    uint32_t n_members;
    uint64_t n_dealt;       /* rows dealt so far (rr) */
    ss_rng rng;             /* random split stream */
    double weight_sum;      /* random split: sum of the members' weights */
    int any_read;           /* a row was read */
    ss_time last_raw;       /* raw arrival of the last row read */
    uint64_t n_dropped;     /* class split: rows in no member's range */
    uint64_t spec_digest;   /* FNV-1a of the synthetic spec */
} wl_group;

struct wl_source {
    wl_ten ten[SS_MAX_TENANTS];
    uint32_t n;                        /* tenants */
    wl_group group[SS_MAX_TENANTS];
    uint32_t n_groups;
    uint64_t seed;
    uint64_t next_id;                  /* id of the next request returned */
    int pending;                       /* tenant whose FIFO front was returned last, or -1 */
    int rc;                            /* sticky error */
    ss_errbuf err;                     /* its message */
};

/* ====================================================================================== */
/* FIFOs                                                                                   */
/* ====================================================================================== */

/* Make room for one more entry (the ring doubles up to WL_MAX_QUEUE). */
static int fifo_room(wl_source *s, wl_ten *t, ss_errbuf *eb)
{
    if (t->q_len < t->q_cap)
        return SS_OK;
    if (t->q_cap >= WL_MAX_QUEUE)
        return ss_err(eb, SS_EINVAL, "tenant %s: more than %d requests queued ahead of the "
                      "other tenants sharing %s (too many rows with one arrival time)",
                      t->name, WL_MAX_QUEUE, s->group[t->group].path);
    uint32_t cap = t->q_cap ? 2 * t->q_cap : 1;
    wl_entry *q = ss_calloc(cap, sizeof *q);
    if (!q)
        return ss_err(eb, SS_ENOMEM, "workload: out of memory");
    for (uint32_t j = 0; j < t->q_len; j++)
        q[j] = t->q[(t->q_head + j) % t->q_cap];
    ss_free(t->q);
    t->q = q;
    t->q_cap = cap;
    t->q_head = 0;
    return SS_OK;
}

/* Append a copy of rec (prefix blocks included) as the newest entry. */
static int fifo_push(wl_source *s, wl_ten *t, const trace_rec *rec, ss_errbuf *eb)
{
    int rc = fifo_room(s, t, eb);
    if (rc)
        return rc;
    wl_entry *e = &t->q[(t->q_head + t->q_len) % t->q_cap];
    if (rec->n_prefix_blocks > e->blocks_cap &&
        ss_grow((void **)&e->blocks, &e->blocks_cap, rec->n_prefix_blocks, sizeof *e->blocks))
        return ss_err(eb, SS_ENOMEM, "workload: out of memory");
    if (rec->n_prefix_blocks)
        memcpy(e->blocks, rec->prefix_blocks, rec->n_prefix_blocks * sizeof *e->blocks);
    e->rec = *rec;
    e->rec.prefix_blocks = NULL;
    t->q_len++;
    return SS_OK;
}

static void fifo_pop(wl_ten *t)
{
    t->q_head = (t->q_head + 1) % t->q_cap;
    t->q_len--;
}

/* ====================================================================================== */
/* Reading and dealing                                                                     */
/* ====================================================================================== */

/* Arrival after rate_scale, rounded as slicesim replay does; SS_TIME_MAX when it lies beyond
 * the simulated time range (SS_ARRIVAL_MAX): accept refuses such a request unless the
 * tenant's duration ended before, and the merge's lower bounds only compare. */
static ss_time shaped(const wl_ten *t, ss_time raw)
{
    if (t->rate_scale == 1.0)
        return raw <= SS_ARRIVAL_MAX ? raw : SS_TIME_MAX;
    double x = (double)raw / t->rate_scale;
    return x <= (double)SS_ARRIVAL_MAX ? (ss_time)llround(x) : SS_TIME_MAX;
}

static int range_error(const wl_ten *t, ss_time raw, ss_errbuf *eb)
{
    return ss_err(eb, SS_EINVAL, "tenant %s: rate_scale: arrival times would exceed the "
                  "simulated time range (0 to %g s): the arrival at %.9g s becomes %.4g s at "
                  "rate_scale %g", t->name, ss_time_to_s(SS_ARRIVAL_MAX), ss_time_to_s(raw),
                  ss_time_to_s(raw) / t->rate_scale, t->rate_scale);
}

/* Tenant i takes rec, unless it is closed or past its duration; tier and tenant set here. An
 * arrival beyond the simulated time range is an error (SS_EINVAL). */
static int accept(wl_source *s, uint32_t i, trace_rec *rec, ss_errbuf *eb)
{
    wl_ten *t = &s->ten[i];
    if (t->closed)
        return SS_OK;
    ss_time raw = rec->arrival_ns;
    rec->arrival_ns = shaped(t, raw);
    if (rec->arrival_ns > t->end_ns) {
        t->closed = 1;
        return SS_OK;
    }
    if (rec->arrival_ns == SS_TIME_MAX)
        return range_error(t, raw, eb);
    rec->tenant = (uint16_t)i;
    if (t->mix.kind == WL_MIX_TRACE)
        rec->tier = rec->tier < t->mix.k ? rec->tier : (uint8_t)(t->mix.k - 1);
    else
        rec->tier = wl_tier_draw(&t->mix, &t->tier_rng);
    int rc = fifo_push(s, t, rec, eb);
    if (rc == SS_OK && t->limit && ++t->n_accepted >= t->limit)
        t->closed = 1;
    return rc;
}

/* The member that gets rec, or -1 (class split: no member's range holds it). */
static int deal(wl_source *s, wl_group *g, const trace_rec *rec)
{
    switch (g->split) {
    case WL_SPLIT_NONE: return (int)g->member[0];
    case WL_SPLIT_RR: return (int)g->member[g->n_dealt++ % g->n_members];
    case WL_SPLIT_RANDOM: {
        double u = ss_rng_uniform(&g->rng) * g->weight_sum, acc = 0;
        for (uint32_t j = 0; j + 1 < g->n_members; j++) {
            acc += s->ten[g->member[j]].weight;
            if (u < acc)
                return (int)g->member[j];
        }
        return (int)g->member[g->n_members - 1];
    }
    case WL_SPLIT_CLASS:
        for (uint32_t j = 0; j < g->n_members; j++) {
            const wl_ten *t = &s->ten[g->member[j]];
            if (rec->prompt_tokens >= t->lo && rec->prompt_tokens <= t->hi)
                return (int)g->member[j];
        }
        return -1;
    }
    return -1;
}

/* Does a trace row belong to the group's trace_tenant? */
static int filter_match(wl_group *g, const trace_rec *rec)
{
    if (g->filter_idx >= 0)
        return rec->tenant == g->filter_idx;
    const char *name = trace_reader_tenant_name(g->reader, rec->tenant);
    if (!name || strcmp(name, g->filter))
        return 0;
    g->filter_idx = rec->tenant;
    return 1;
}

static int source_read(wl_group *g, trace_rec *rec, ss_errbuf *eb)
{
    switch (g->kind) {
    case SRC_TRACE: return trace_reader_next(g->reader, rec, eb);
    case SRC_SYNTH: return trace_gen_next(g->gen, rec, eb);
    case SRC_SERVEGEN: return wl__sg_next(g->sg, rec, eb);
    }
    return 0;
}

/* The source ended: close its members; a trace_tenant that never occurred is an error. */
static int group_end(wl_source *s, wl_group *g, ss_errbuf *eb)
{
    for (uint32_t j = 0; j < g->n_members; j++)
        s->ten[g->member[j]].closed = 1;
    if (g->filter && g->filter_idx < 0)
        return ss_err(eb, SS_ENOTFOUND, "tenant %s: trace_tenant '%s' does not occur in %s",
                      s->ten[g->member[0]].name, g->filter, g->path);
    return SS_OK;
}

/* Read one row of group g and deal it. 0 or <0 with eb set. */
static int group_read(wl_source *s, wl_group *g, ss_errbuf *eb)
{
    trace_rec rec;
    int rc = source_read(g, &rec, eb);
    if (rc <= 0)
        return rc < 0 ? rc : group_end(s, g, eb);
    g->any_read = 1;
    g->last_raw = rec.arrival_ns;
    if (g->filter && !filter_match(g, &rec))
        return SS_OK;
    int m = deal(s, g, &rec);
    if (m < 0) {
        g->n_dropped++;
        return SS_OK;
    }
    return accept(s, (uint32_t)m, &rec, eb);
}

/* ====================================================================================== */
/* Merge                                                                                   */
/* ====================================================================================== */

/* The tenant whose FIFO front sorts first by (arrival, tenant index), or -1. */
static int best_front(const wl_source *s)
{
    int best = -1;
    ss_time at = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        const wl_ten *t = &s->ten[i];
        if (!t->q_len)
            continue;
        ss_time a = t->q[t->q_head].rec.arrival_ns;
        if (best < 0 || a < at) {
            best = (int)i;
            at = a;
        }
    }
    return best;
}

/* A group that must be read before tenant best's front can be returned, or NULL. Tenants
 * that can no longer take a request within their duration are closed on the way. */
static wl_group *needed_group(wl_source *s, int best)
{
    ss_time at = best >= 0 ? s->ten[best].q[s->ten[best].q_head].rec.arrival_ns : 0;
    for (uint32_t i = 0; i < s->n; i++) {
        wl_ten *t = &s->ten[i];
        wl_group *g = &s->group[t->group];
        if (t->q_len || t->closed)
            continue;
        if (!g->any_read || best < 0)
            return g;
        ss_time bound = shaped(t, g->last_raw);
        if (bound > t->end_ns) {
            t->closed = 1;
            continue;
        }
        if (bound < at || (bound == at && (int)i < best))
            return g;
    }
    return NULL;
}

static int sticky(wl_source *s, int rc, ss_errbuf *eb)
{
    s->rc = rc;
    s->err = *eb;
    return rc;
}

int wl_source_next(wl_source *s, trace_rec *out, ss_errbuf *eb)
{
    ss_errbuf local;
    if (!eb)
        eb = &local;
    if (s->rc) {
        *eb = s->err;
        return s->rc;
    }
    if (s->pending >= 0) {
        fifo_pop(&s->ten[s->pending]);
        s->pending = -1;
    }
    for (;;) {
        int best = best_front(s);
        wl_group *g = needed_group(s, best);
        if (g) {
            int rc = group_read(s, g, eb);
            if (rc < 0)
                return sticky(s, rc, eb);
            continue;
        }
        if (best < 0)
            return 0;
        const wl_entry *e = &s->ten[best].q[s->ten[best].q_head];
        *out = e->rec;
        out->prefix_blocks = e->rec.n_prefix_blocks ? e->blocks : NULL;
        out->id = s->next_id++;
        s->pending = best;
        return 1;
    }
}

/* ====================================================================================== */
/* Creation                                                                                */
/* ====================================================================================== */

/* Prefix eb's message with "tenant NAME: ". */
static int tenant_err(ss_errbuf *eb, int rc, const char *name)
{
    ss_errbuf sub = *eb;
    return ss_err(eb, rc, "tenant %s: %s", name, sub.msg);
}

static int tenant_init(wl_source *s, uint32_t i, const wl_tenant_spec *spec, uint32_t group,
                       ss_errbuf *eb)
{
    wl_ten *t = &s->ten[i];
    if (!(t->name = ss_strdup(spec->name)))
        return ss_err(eb, SS_ENOMEM, "workload: out of memory");
    t->group = group;
    t->rate_scale = spec->rate_scale;
    /* a duration past the simulated time range cuts nothing a run may simulate */
    t->end_ns = spec->duration_s > 0 ? ss_time_from_s(spec->duration_s) : SS_TIME_MAX;
    if (t->end_ns > SS_ARRIVAL_MAX)
        t->end_ns = SS_TIME_MAX;
    t->limit = spec->limit;
    t->mix = spec->tiers;
    ss_rng_seed(&t->tier_rng, s->seed, wl__stream(WL__STREAM_TIER, i));
    t->weight = spec->weight;
    t->lo = spec->class_lo;
    t->hi = spec->class_hi;
    wl_group *g = &s->group[group];
    g->member[g->n_members++] = i;
    g->weight_sum += spec->split == WL_SPLIT_RANDOM ? spec->weight : 0;
    return SS_OK;
}

static uint64_t dist_digest(uint64_t h, const trace_len_dist *d)
{
    double p[6] = {(double)d->kind, d->a, d->b, d->c, d->d, (double)d->n_knots};
    h = ss_fnv1a(h, p, sizeof p);
    for (int j = 0; j < d->n_knots && j < TRACE_MAX_KNOTS; j++) {
        h = ss_fnv1a(h, &d->knot_p[j], sizeof(double));
        h = ss_fnv1a(h, &d->knot_v[j], sizeof(double));
    }
    return h;
}

/* FNV-1a of the generator spec fields that shape its output. The prefix-identity fields count
 * only when set, so a spec without them keeps the digest it always had. */
static uint64_t synth_digest(const trace_gen_spec *sp)
{
    uint64_t h = ss_fnv1a(SS_FNV1A_OFFSET, &sp->seed, sizeof sp->seed);
    double v[5] = {(double)sp->n_requests, sp->duration_s, sp->rate, (double)sp->arrival,
                   sp->cv};
    h = ss_fnv1a(h, v, sizeof v);
    h = dist_digest(dist_digest(h, &sp->prompt), &sp->output);
    if (trace_gen_has_prefix(sp)) {
        double x[4] = {(double)sp->groups, sp->group_zipf, sp->think_s,
                       (double)sp->max_context};
        h = ss_fnv1a(h, x, sizeof x);
        h = dist_digest(dist_digest(h, &sp->system), &sp->turns);
    }
    return h;
}

static int open_trace(wl_group *g, const wl_tenant_spec *f, ss_errbuf *eb)
{
    g->kind = SRC_TRACE;
    g->filter_idx = -1;
    if (!(g->path = ss_strdup(f->trace)) ||
        (f->trace_tenant && !(g->filter = ss_strdup(f->trace_tenant))))
        return ss_err(eb, SS_ENOMEM, "workload: out of memory");
    int rc = trace_reader_open(&g->reader, f->trace, f->trace_format ? f->trace_format : "auto",
                               eb);
    if (rc == SS_OK && f->trace_sort)
        rc = trace_reader_set_sort(g->reader, 1);
    if (rc == SS_OK && f->trace_spread)
        rc = trace_reader_set_spread(g->reader, 1);
    return rc;
}

/* Open group g's source from the spec of its first tenant (index fi). */
static int group_open(wl_source *s, wl_group *g, const wl_tenant_spec *f, uint32_t fi,
                      const char *sg_dir, ss_errbuf *eb)
{
    g->split = f->split;
    ss_rng_seed(&g->rng, s->seed, wl__stream(WL__STREAM_SPLIT, fi));
    if (f->trace) {
        int rc = open_trace(g, f, eb);
        return rc ? tenant_err(eb, rc, f->name) : SS_OK;
    }
    if (f->servegen) {
        g->kind = SRC_SERVEGEN;
        int rc = wl__sg_open(&g->sg, sg_dir, f->servegen, f->servegen_start_s, s->seed, fi, eb);
        return rc ? tenant_err(eb, rc, f->name) : SS_OK;
    }
    g->kind = SRC_SYNTH;
    trace_gen_spec sp = *f->synth;
    if (sp.seed == 0) { /* derived, so that tenants differ and depend only on their index */
        ss_rng r;
        ss_rng_seed(&r, s->seed, wl__stream(WL__STREAM_SYNTH, fi));
        sp.seed = ss_rng_u64(&r);
    }
    sp.tenant = NULL;
    g->spec_digest = synth_digest(&sp);
    int rc = trace_gen_create(&g->gen, &sp, eb);
    return rc ? tenant_err(eb, rc, f->name) : SS_OK;
}

int wl_source_create(wl_source **s_out, const wl_tenant_spec *specs, uint32_t n, uint64_t seed,
                     const char *servegen_dir, ss_errbuf *eb)
{
    wl__plan plan;
    int rc = wl__plan_make(&plan, specs, n, servegen_dir, eb);
    if (rc)
        return rc;
    wl_source *s = ss_calloc(1, sizeof *s);
    if (!s)
        return ss_err(eb, SS_ENOMEM, "workload: out of memory");
    s->seed = seed;
    s->pending = -1;
    s->n = n;
    s->n_groups = plan.n_groups;
    for (uint32_t i = 0; i < n && rc == SS_OK; i++)
        rc = tenant_init(s, i, &specs[i], plan.group_of[i], eb);
    for (uint32_t g = 0; g < plan.n_groups && rc == SS_OK; g++)
        rc = group_open(s, &s->group[g], &specs[plan.first[g]], plan.first[g], servegen_dir,
                        eb);
    if (rc) {
        wl_source_destroy(&s);
        return rc;
    }
    *s_out = s;
    return SS_OK;
}

int wl_source_check_range(const wl_tenant_spec *specs, uint32_t n, uint64_t seed,
                          const char *servegen_dir, ss_errbuf *eb)
{
    int stretched = 0;
    for (uint32_t i = 0; specs && i < n && i < SS_MAX_TENANTS; i++) {
        if (specs[i].trace && !strcmp(specs[i].trace, "-"))
            return SS_OK; /* standard input can be read only once: the run checks */
        stretched |= specs[i].rate_scale < 1;
    }
    if (!stretched)
        return SS_OK;
    wl_source *s = NULL;
    int rc = wl_source_create(&s, specs, n, seed, servegen_dir, eb);
    trace_rec rec;
    while (rc == SS_OK && (rc = wl_source_next(s, &rec, eb)) == 1)
        rc = SS_OK;
    wl_source_destroy(&s);
    return rc;
}

void wl_source_destroy(wl_source **sp)
{
    if (!sp || !*sp)
        return;
    wl_source *s = *sp;
    for (uint32_t i = 0; i < SS_MAX_TENANTS; i++) {
        wl_ten *t = &s->ten[i];
        for (uint32_t j = 0; j < t->q_cap; j++)
            ss_free(t->q[j].blocks);
        ss_free(t->q);
        ss_free(t->name);
        wl_group *g = &s->group[i];
        trace_reader_close(&g->reader);
        trace_gen_destroy(&g->gen);
        wl__sg_close(&g->sg);
        ss_free(g->path);
        ss_free(g->filter);
    }
    ss_free(s);
    *sp = NULL;
}

/* ====================================================================================== */
/* Queries                                                                                 */
/* ====================================================================================== */

uint64_t wl_source_n_skipped(const wl_source *s)
{
    uint64_t n = 0;
    for (uint32_t g = 0; g < s->n_groups; g++)
        if (s->group[g].reader)
            n += trace_reader_n_skipped(s->group[g].reader);
    return n;
}

uint64_t wl_source_n_dropped(const wl_source *s)
{
    uint64_t n = 0;
    for (uint32_t g = 0; g < s->n_groups; g++)
        n += s->group[g].n_dropped;
    return n;
}

static uint64_t group_digest(const wl_group *g)
{
    switch (g->kind) {
    case SRC_TRACE: {
        uint64_t h = trace_reader_digest(g->reader);
        return g->filter ? ss_fnv1a(h, g->filter, strlen(g->filter)) : h;
    }
    case SRC_SYNTH: return g->spec_digest;
    case SRC_SERVEGEN: return wl__sg_digest(g->sg);
    }
    return 0;
}

uint64_t wl_source_digest(const wl_source *s)
{
    uint64_t h = ss_fnv1a(SS_FNV1A_OFFSET, &s->seed, sizeof s->seed);
    for (uint32_t i = 0; i < s->n; i++) {
        const wl_ten *t = &s->ten[i];
        const wl_group *g = &s->group[t->group];
        uint64_t v[8] = {(uint64_t)g->kind, group_digest(g), (uint64_t)g->split,
                         (uint64_t)t->end_ns, t->limit, (uint64_t)t->mix.kind, t->mix.k,
                         ((uint64_t)t->lo << 32) | t->hi};
        double d[2 + SS_MAX_TIERS] = {t->rate_scale, t->weight};
        memcpy(d + 2, t->mix.p, sizeof t->mix.p);
        h = ss_fnv1a(h, v, sizeof v);
        h = ss_fnv1a(h, d, sizeof d);
    }
    return h;
}

const char *wl_source_format(const wl_source *s, uint32_t i)
{
    if (!s || i >= s->n)
        return NULL;
    const wl_group *g = &s->group[s->ten[i].group];
    switch (g->kind) {
    case SRC_TRACE: return trace_reader_format(g->reader);
    case SRC_SYNTH: return "synthetic";
    case SRC_SERVEGEN: return "servegen";
    }
    return NULL;
}
