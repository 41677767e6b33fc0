/* Chrome trace-event JSON writer for replays: an observer that streams "X" (complete) events
 * for iterations and operators and "i" (instant) events for request state changes. Times are
 * written in microseconds with three decimals, so nanosecond simulated times survive exactly. */
#include "timeline/timeline.h"

#include "core/ss_alloc.h"
#include "core/ss_file.h"
#include "core/ss_parse.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#define OPS_CAP 65536 /* operator nodes of one expanded iteration */

struct tl_writer {
    FILE *f;           /* owned by out */
    ss_outfile *out;   /* owned: the file being written (a temporary renamed on close) */
    tl_opts o;
    const char *path;  /* borrowed from tl_open's caller: for on_large */
    uint64_t n_events;
    int warned;        /* on_large was called */
    gmg_op *ops;       /* scratch for expansion (only with o.ops) */
};

static void ts(FILE *f, const char *key, ss_time t)
{
    fprintf(f, "\"%s\":%" PRId64 ".%03" PRId64, key, t / 1000, t % 1000);
}

/* Every TL_SIZE_CHECK events, whether the file has passed warn_bytes (a file written in place
 * that cannot tell its position, a FIFO, is never reported). */
static void check_size(tl_writer *w)
{
    if (w->warned || !w->o.warn_bytes || !w->o.on_large || w->n_events % TL_SIZE_CHECK)
        return;
    off_t at = ftello(w->f);
    if (at >= 0 && (uint64_t)at >= w->o.warn_bytes) {
        w->warned = 1;
        w->o.on_large(w->o.ud, w->path, (uint64_t)at);
    }
}

/* Start one event object (with the separating comma). */
static void begin_event(tl_writer *w)
{
    check_size(w);
    fputs(w->n_events++ ? ",\n" : "\n", w->f);
}

int tl_open(tl_writer **w_out, const char *path, const tl_opts *opts, ss_errbuf *eb)
{
    tl_writer *w = ss_calloc(1, sizeof *w);
    if (!w || (opts->ops && !(w->ops = ss_malloc(OPS_CAP * sizeof *w->ops)))) {
        tl_abort(&w);
        return ss_err(eb, SS_ENOMEM, "timeline: out of memory");
    }
    w->o = *opts;
    w->path = path;
    if (!w->o.max_ids)
        w->o.max_ids = 64;
    int rc = ss_outfile_open(&w->out, &w->f, path, 0, eb);
    if (rc) {
        tl_abort(&w);
        return rc;
    }
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", w->f);
    *w_out = w;
    return SS_OK;
}

static int overlaps(const tl_writer *w, ss_time a, ss_time b)
{
    return b >= w->o.start && a <= w->o.end;
}

static void meta(tl_writer *w, uint32_t pid, int tid, const char *what, const char *name)
{
    begin_event(w);
    fprintf(w->f, "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%u,\"tid\":%d,\"args\":{\"name\":\"%s\"}}",
            what, pid, tid, name);
}

/* The iteration on one GPU of pipeline stage st (the whole iteration without pipelining). */
static void iter_event(tl_writer *w, uint32_t gpu, uint32_t st, const gmg *g,
                       const gmg_container *c)
{
    const gmg_iter *it = &c->iter;
    const cost_batch *b = &it->batch;
    begin_event(w);
    fprintf(w->f, "{\"name\":\"%s\",\"cat\":\"iteration\",\"ph\":\"X\",\"pid\":%u,\"tid\":0,",
            b->n_prefill ? (b->n_decode ? "mixed" : "prefill") : "decode", gpu);
    ts(w->f, "ts", it->stage_start[st]);
    fputc(',', w->f);
    ts(w->f, "dur", it->stage_end[st] - it->stage_start[st]);
    fprintf(w->f, ",\"args\":{\"container\":%u,\"stage\":%u,\"iteration\":%" PRIu64
                  ",\"prefill_seqs\":%u,"
                  "\"prefill_tokens\":%" PRIu64 ",\"decode_seqs\":%u,\"decode_ctx_tokens\":%" PRIu64
                  ",\"swap_blocks\":%u,\"requests\":[",
            c->id, st, it->seq, b->n_prefill, b->prefill_tokens, b->n_decode,
            b->decode_ctx_tokens, it->swap_blocks);
    for (uint32_t i = 0; i < it->n_reqs && i < w->o.max_ids; i++)
        fprintf(w->f, "%s%" PRIu64, i ? "," : "", g->reqs[it->reqs[i]].trace_id);
    fprintf(w->f, "],\"requests_not_listed\":%u",
            it->n_reqs > w->o.max_ids ? it->n_reqs - w->o.max_ids : 0);
    if (it->alone_ns > 0) /* a step on a GPU shared by MPS or time slicing */
        fprintf(w->f, ",\"alone_ms\":%.6f,\"slowdown\":%.6f,\"shared_with\":%u",
                (double)it->alone_ns / 1e6,
                (double)(it->end - it->start) / (double)it->alone_ns, it->shared_with);
    fputs("}}", w->f);
}

/* The operators of c's iteration that ran on the TP group whose k-th GPU is gpu. */
static void op_events(tl_writer *w, uint32_t gpu, uint32_t k, size_t n)
{
    for (size_t i = 0; i < n && i < OPS_CAP; i++) {
        const gmg_op *o = &w->ops[i];
        if (o->placed_gpu + k != gpu || !overlaps(w, o->start, o->end))
            continue;
        begin_event(w);
        fprintf(w->f, "{\"name\":\"%s\",\"cat\":\"operator\",\"ph\":\"X\",\"pid\":%u,\"tid\":1,",
                cost_op_name(o->shape.kind), gpu);
        ts(w->f, "ts", o->start);
        fputc(',', w->f);
        ts(w->f, "dur", o->end - o->start);
        if (o->layer != UINT32_MAX)
            fprintf(w->f, ",\"args\":{\"layer\":%u}}", o->layer);
        else
            fputs("}", w->f);
    }
}

static void on_iter(void *ud, const gmg *g, const gmg_container *c)
{
    tl_writer *w = ud;
    if (!overlaps(w, c->iter.start, c->iter.end))
        return;
    size_t n = w->o.ops ? gmg_iter_expand(g, c, w->ops, OPS_CAP, NULL) : 0;
    for (uint32_t st = 0; st < c->pp; st++) {
        if (!overlaps(w, c->iter.stage_start[st], c->iter.stage_end[st]))
            continue;
        for (uint32_t k = 0; k < c->tp; k++) {
            iter_event(w, gmg_stage_gpu(c, st) + k, st, g, c);
            if (w->o.ops)
                op_events(w, gmg_stage_gpu(c, st) + k, k, n);
        }
    }
}

static const char *const req_event_names[] = {
    [GSIM_REQ_PREEMPT] = "preempt", [GSIM_REQ_SWAP_OUT] = "swap_out",
    [GSIM_REQ_SWAP_IN] = "swap_in", [GSIM_REQ_REJECT] = "reject", [GSIM_REQ_FINISH] = "finish",
};

static void on_request(void *ud, const gmg *g, const gmg_container *c, const gmg_req *r,
                       gsim_req_event what, ss_time now)
{
    (void)g;
    tl_writer *w = ud;
    if (what == GSIM_REQ_FINISH || !overlaps(w, now, now))
        return; /* completions are implied by the iterations; keep the file small */
    begin_event(w);
    fprintf(w->f, "{\"name\":\"%s\",\"cat\":\"request\",\"ph\":\"i\",\"s\":\"t\",\"pid\":%u,"
                  "\"tid\":0,", req_event_names[what], c->gpu0);
    ts(w->f, "ts", now);
    fprintf(w->f, ",\"args\":{\"request\":%" PRIu64 ",\"container\":%u,\"preemptions\":%u}}",
            r->trace_id, c->id, r->preemptions);
}

/* An offloaded prefill's chunk, on its own track of each helper GPU. */
static void on_guest(void *ud, const gmg *g, const gmg_container *h, const gmg_req *r,
                     uint32_t chunk, uint32_t n, ss_time start, ss_time end, ss_time weights_at)
{
    (void)g;
    (void)weights_at;
    tl_writer *w = ud;
    if (!overlaps(w, start, end))
        return;
    const char *what = chunk == 0 ? "guest embedding" : chunk + 1 == n ? "guest head"
                                                                       : "guest layer";
    for (uint32_t k = 0; k < h->tp; k++) {
        begin_event(w);
        fprintf(w->f, "{\"name\":\"%s\",\"cat\":\"guest\",\"ph\":\"X\",\"pid\":%u,\"tid\":2,",
                what, h->gpu0 + k);
        ts(w->f, "ts", start);
        fputc(',', w->f);
        ts(w->f, "dur", end - start);
        fprintf(w->f, ",\"args\":{\"request\":%" PRIu64 ",\"home\":%u,\"chunk\":%u}}",
                r->trace_id, r->container, chunk);
    }
}

/* A KV transfer of disaggregated serving: a "kv send" slice on the KV-transfer track of each
 * GPU of the prefill instance and a "kv receive" one on each GPU of the decode instance, over
 * the time it occupies their link ports. */
static void kv_slices(tl_writer *w, const gmg_container *c, const char *what,
                      const gmg_container *from, const gmg_container *to, const gmg_req *r,
                      double bytes, const char *link, ss_time start, ss_time end)
{
    for (uint32_t k = 0; k < c->tp; k++) {
        begin_event(w);
        fprintf(w->f, "{\"name\":\"%s\",\"cat\":\"kv_transfer\",\"ph\":\"X\",\"pid\":%u,"
                      "\"tid\":3,", what, c->gpu0 + k);
        ts(w->f, "ts", start);
        fputc(',', w->f);
        ts(w->f, "dur", end - start);
        fprintf(w->f, ",\"args\":{\"request\":%" PRIu64 ",\"from\":%u,\"to\":%u,"
                      "\"bytes\":%.0f,\"link\":\"%s\"}}", r->trace_id, from->id, to->id, bytes,
                link);
    }
}

static void on_kv_transfer(void *ud, const gmg *g, const gmg_container *from,
                           const gmg_container *to, const gmg_req *r, double bytes, ss_time start,
                           ss_time end)
{
    tl_writer *w = ud;
    if (!overlaps(w, start, end))
        return;
    const char *link = g->gpus[from->gpu0].node == g->gpus[to->gpu0].node ? "nvlink" : "network";
    kv_slices(w, from, "kv send", from, to, r, bytes, link, start, end);
    kv_slices(w, to, "kv receive", from, to, r, bytes, link, start, end);
}

void tl_attach(tl_writer *w, gsim *g)
{
    const gmg *G = gsim_graph(g);
    char name[160];
    for (uint32_t i = 0; i < G->n_gpus; i++) {
        const gmg_gpu *u = &G->gpus[i];
        static const char *const share[] = {"", "MIG instance", "MPS client", "time-sliced"};
        if (u->share) /* the tracks of a physical GPU's shares, named as such */
            snprintf(name, sizeof name, "GPU %u (%s of GPU %u, %s, node %u, container %u)", i,
                     share[u->share < 4 ? u->share : 0], u->phys, u->kind->name, u->node,
                     u->container);
        else
            snprintf(name, sizeof name, "GPU %u (%s, node %u, container %u)", i,
                     u->kind->name, u->node, u->container);
        meta(w, i, 0, "process_name", name);
        meta(w, i, 0, "thread_name", "iterations");
        if (w->o.ops)
            meta(w, i, 1, "thread_name", "operators");
        meta(w, i, 2, "thread_name", "guest prefills");
        if (G->ctrs[G->gpus[i].container].role != GMG_ROLE_BOTH)
            meta(w, i, 3, "thread_name", "KV transfers");
    }
    gsim_observer obs = {.on_iter = on_iter, .on_request = on_request, .on_guest = on_guest,
                         .on_kv_transfer = on_kv_transfer, .ud = w};
    gsim_set_observer(g, &obs);
}

static void free_writer(tl_writer *w)
{
    ss_free(w->ops);
    ss_free(w);
}

int tl_close(tl_writer **wp, ss_errbuf *eb)
{
    tl_writer *w = *wp;
    if (!w)
        return SS_OK;
    fputs("\n]}\n", w->f);
    w->f = NULL;
    int rc = ss_outfile_commit(&w->out, eb);
    if (rc)
        ss_err_prefix(eb, rc, "cannot write the timeline");
    free_writer(w);
    *wp = NULL;
    return rc;
}

void tl_abort(tl_writer **wp)
{
    tl_writer *w = *wp;
    if (!w)
        return;
    ss_outfile_abort(&w->out);
    free_writer(w);
    *wp = NULL;
}

uint64_t tl_events(const tl_writer *w) { return w->n_events; }

int tl_parse_window(const char *s, ss_time *start, ss_time *end, ss_errbuf *eb)
{
    const char *colon = strchr(s, ':');
    if (!colon)
        return ss_err(eb, SS_EPARSE, "--timeline-window: expected START:END in seconds, got '%s'", s);
    *start = 0;
    *end = SS_TIME_MAX;
    size_t n1 = (size_t)(colon - s), n2 = strlen(colon + 1);
    if ((n1 && ss_parse_seconds_ns(s, n1, start)) || (n2 && ss_parse_seconds_ns(colon + 1, n2, end)) ||
        *start < 0 || *end < *start)
        return ss_err(eb, SS_EPARSE, "--timeline-window: expected START:END with 0 <= START <= END "
                                     "seconds, got '%s'", s);
    return SS_OK;
}
