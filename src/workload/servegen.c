/* Requests of one ServeGen client (github.com/alibaba/ServeGen, data/<category>/<pool>/
 * chunk-<client>-trace.csv and -dataset.json), generated the way ServeGen's construct.py does:
 *  - each 600-s window of trace.csv with a fitted pattern (Gamma or Weibull (shape, scale)) and
 *    rate r gets n = ceil(r * W) inter-arrival times drawn from that distribution, rescaled so
 *    that they sum to the window length W; the arrivals are their running sums from the
 *    window start, and those at or after the window end are dropped (ServeGen keeps
 *    timestamps < start + W). The n-th sum lands exactly on the end, so a window yields
 *    n - 1 = ceil(r * W) - 1 requests (upstream's float rounding keeps it about half the
 *    time). Windows without a pattern are idle. The last window is as long as the one before
 *    (600 s when the file has one row).
 *  - each request's prompt and output token counts come from the input_tokens and
 *    output_tokens PMFs of the latest dataset window at or before the trace window's
 *    timestamp (windows with an empty "{}" field are skipped, as ServeGen's loader does), by
 *    inverse CDF over the sorted support with ONE uniform per request for both fields, as
 *    upstream does (so prompt and output are rank-correlated). Zero-token values become 1.
 *  - start_s selects where generation starts; a window that straddles it is cut, and its
 *    count computed from the remaining length (ServeGen's span()). Times are relative to it.
 * Scale-free: rescaling makes the fitted scale irrelevant; only the shape shapes burstiness.
 * Memory: the two trace rows and two dataset windows in use, never the whole files. */
#include "workload/wl_int.h"

#include "core/ss_alloc.h"
#include "core/ss_input.h"
#include "core/ss_parse.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SG_MAX_LINE 1024              /* longest trace.csv line */
#define SG_MAX_TS INT64_C(1000000000) /* latest window timestamp, s */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define SG_MAX_PER_WINDOW 1e5 /* fuzzing builds: the same check, but no input runs for seconds */
#else
#define SG_MAX_PER_WINDOW 1e9         /* most inter-arrival times drawn for one window */
#endif
#define SG_DEFAULT_WINDOW 600         /* length of the last window when there is one row */

enum { PAT_IDLE, PAT_GAMMA, PAT_WEIBULL };

/* One trace.csv row. */
typedef struct sg_row {
    int64_t ts;         /* window start, s */
    double rate;        /* mean requests/s */
    int pat;            /* PAT_* */
    double shape, scale; /* fitted inter-arrival distribution */
    uint64_t line;      /* 1-based line in trace.csv */
} sg_row;

struct wl__sg {
    FILE *f;                 /* trace.csv */
    char *csv_path;          /* owned, for messages */
    char *client;            /* "CATEGORY/POOL/CLIENT", owned */
    ss_time start_ns;        /* servegen_start_s */
    uint64_t line;           /* lines of trace.csv read */
    uint64_t csv_digest;     /* FNV-1a of the trace.csv bytes read */
    sg_row cur, nxt;         /* the window in use and the next row */
    int have_nxt;            /* nxt holds a row */
    int64_t last_gap;        /* length of the window before, s */
    wl__sg_dataset *ds;      /* dataset reader */
    wl__sg_window win[2];    /* dataset windows: current (cur_w) and next (nxt_w) */
    int cur_w, nxt_w;        /* slots in win; -1: none */
    ss_rng arr;              /* inter-arrival stream */
    ss_rng tok;              /* token stream */
    /* the window being generated */
    int active;              /* arrivals remain */
    ss_time w_start;         /* window start, ns relative to start_ns */
    ss_time w_len;           /* window length, ns */
    uint64_t n, k;           /* gaps drawn for it / arrivals made */
    double s_total, s_acc;   /* sum of all n gaps / of the first k */
    int even;                /* the gaps summed to 0: space the arrivals evenly */
    int rc;                  /* sticky error */
    ss_errbuf err;           /* its message */
    char buf[SG_MAX_LINE + 2];
};

/* ====================================================================================== */
/* trace.csv                                                                               */
/* ====================================================================================== */

static int row_err(wl__sg *g, ss_errbuf *eb, const char *field, const char *what,
                   const char *s, size_t len)
{
    return ss_err(eb, SS_EPARSE, "%s:%" PRIu64 ": %s: %s: '%.*s'", g->csv_path, g->line, field,
                  what, (int)(len > 40 ? 40 : len), s);
}

/* Split line at commas into exactly 6 trimmed fields. */
static int split6(wl__sg *g, char *line, const char **f, size_t *len, ss_errbuf *eb)
{
    int n = 0;
    for (char *p = line;; n++) {
        char *comma = strchr(p, ',');
        if (n >= 6)
            break;
        size_t l = comma ? (size_t)(comma - p) : strlen(p);
        f[n] = ss_trim(p, &l);
        len[n] = l;
        if (!comma) {
            n++;
            break;
        }
        p = comma + 1;
    }
    if (n != 6 || strchr(f[5], ','))
        return ss_err(eb, SS_EPARSE, "%s:%" PRIu64 ": need 6 fields (timestamp, rate, cv, "
                      "pattern, shape, scale)", g->csv_path, g->line);
    return SS_OK;
}

static int parse_num(wl__sg *g, const char *s, size_t len, const char *name, double *v,
                     ss_errbuf *eb)
{
    if (ss_parse_double(s, len, v))
        return row_err(g, eb, name, "not a number", s, len);
    if (*v < 0)
        return row_err(g, eb, name, "negative", s, len);
    return SS_OK;
}

/* Fields of one row into *r. */
static int parse_row(wl__sg *g, const char **f, size_t *len, sg_row *r, ss_errbuf *eb)
{
    double cv;
    int64_t ts;
    if (ss_parse_i64(f[0], len[0], &ts) || ts < 0 || ts > SG_MAX_TS)
        return row_err(g, eb, "timestamp", "not a whole number of seconds in [0, 1e9]", f[0],
                       len[0]);
    int rc = parse_num(g, f[1], len[1], "rate", &r->rate, eb);
    if (rc || (rc = parse_num(g, f[2], len[2], "cv", &cv, eb)) ||
        (rc = parse_num(g, f[4], len[4], "shape", &r->shape, eb)) ||
        (rc = parse_num(g, f[5], len[5], "scale", &r->scale, eb)))
        return rc;
    r->ts = ts;
    r->line = g->line;
    if (len[3] == 0)
        r->pat = PAT_IDLE;
    else if (len[3] == 5 && !memcmp(f[3], "Gamma", 5))
        r->pat = PAT_GAMMA;
    else if (len[3] == 7 && !memcmp(f[3], "Weibull", 7))
        r->pat = PAT_WEIBULL;
    else
        return row_err(g, eb, "pattern", "not Gamma, Weibull or empty", f[3], len[3]);
    if (r->pat != PAT_IDLE && !(r->shape > 0 && r->scale > 0))
        return row_err(g, eb, "shape", "the pattern needs shape > 0 and scale > 0", f[4],
                       len[4]);
    return SS_OK;
}

/* Read the next non-blank row into g->nxt: 1, 0 at the end, <0 on error. */
static int read_row(wl__sg *g, ss_errbuf *eb)
{
    for (;;) {
        errno = 0;
        if (!fgets(g->buf, sizeof g->buf, g->f))
            return ferror(g->f) ? ss_err(eb, SS_EIO, "%s: read error: %s", g->csv_path,
                                         strerror(errno ? errno : EIO))
                                : 0;
        g->line++;
        size_t n = strlen(g->buf);
        g->csv_digest = ss_fnv1a(g->csv_digest, g->buf, n);
        if (n > SG_MAX_LINE && g->buf[n - 1] != '\n')
            return ss_err(eb, SS_EPARSE, "%s:%" PRIu64 ": line longer than %d bytes",
                          g->csv_path, g->line, SG_MAX_LINE);
        while (n && (g->buf[n - 1] == '\n' || g->buf[n - 1] == '\r'))
            g->buf[--n] = '\0';
        size_t tl = n;
        ss_trim(g->buf, &tl);
        if (tl == 0)
            continue;
        const char *f[6];
        size_t len[6];
        sg_row r;
        int rc = split6(g, g->buf, f, len, eb);
        if (rc || (rc = parse_row(g, f, len, &r, eb)))
            return rc;
        if (g->have_nxt && r.ts <= g->nxt.ts)
            return ss_err(eb, SS_EPARSE, "%s:%" PRIu64 ": timestamp: %" PRId64 " after %" PRId64
                          " (windows must increase)", g->csv_path, g->line, r.ts, g->nxt.ts);
        g->nxt = r;
        return 1;
    }
}

/* Move to the next trace row: 1 with g->cur set (and g->nxt read ahead), 0 at the end. */
static int advance_row(wl__sg *g, ss_errbuf *eb)
{
    if (!g->have_nxt)
        return 0;
    if (g->cur.line)
        g->last_gap = g->nxt.ts - g->cur.ts;
    g->cur = g->nxt;
    int rc = read_row(g, eb);
    if (rc < 0)
        return rc;
    g->have_nxt = rc;
    return 1;
}

/* ====================================================================================== */
/* Windows                                                                                 */
/* ====================================================================================== */

/* Make the dataset window that applies at trace timestamp ts current. */
static int dataset_at(wl__sg *g, int64_t ts, ss_errbuf *eb)
{
    while (g->nxt_w >= 0 && g->win[g->nxt_w].ts <= ts) {
        g->cur_w = g->nxt_w;
        int slot = 1 - g->cur_w;
        int rc = wl__sg_dataset_next(g->ds, &g->win[slot], eb);
        if (rc < 0)
            return rc;
        g->nxt_w = rc ? slot : -1;
    }
    if (g->cur_w < 0)
        return ss_err(eb, SS_EPARSE, "%s:%" PRIu64 ": window %" PRId64 " has traffic but the "
                      "dataset has no token PMFs at or before it", g->csv_path, g->cur.line, ts);
    return SS_OK;
}

/* One inter-arrival time of the current window's distribution (unscaled). */
static double draw_gap(wl__sg *g)
{
    if (g->cur.pat == PAT_GAMMA)
        return ss_rng_gamma(&g->arr, g->cur.shape, g->cur.scale);
    double u = ss_rng_uniform(&g->arr);
    return g->cur.scale * pow(-log1p(-u), 1.0 / g->cur.shape);
}

/* Draw the window's n gaps once for their sum, then rewind the stream so that the arrivals
 * replay the same gaps: constant memory for any n. */
static int window_sum(wl__sg *g, ss_errbuf *eb)
{
    ss_rng saved = g->arr;
    double s = 0;
    for (uint64_t i = 0; i < g->n; i++)
        s += draw_gap(g);
    g->arr = saved;
    if (!isfinite(s))
        return ss_err(eb, SS_EPARSE, "%s:%" PRIu64 ": the inter-arrival times overflow "
                      "(shape %g)", g->csv_path, g->cur.line, g->cur.shape);
    g->s_total = s;
    g->s_acc = 0;
    g->even = !(s > 0);
    g->k = 0;
    return SS_OK;
}

/* Set up the window of g->cur if it produces requests after start: 1 (active), 0 (none). */
static int window_begin(wl__sg *g, ss_errbuf *eb)
{
    int64_t end_s = g->have_nxt ? g->nxt.ts
                                : g->cur.ts + (g->last_gap > 0 ? g->last_gap : SG_DEFAULT_WINDOW);
    ss_time from = g->cur.ts * SS_NS_PER_S, to = end_s * SS_NS_PER_S;
    if (from < g->start_ns)
        from = g->start_ns;
    if (g->cur.pat == PAT_IDLE || !(g->cur.rate > 0) || to <= from)
        return 0;
    double want = ceil(g->cur.rate * ss_time_to_s(to - from));
    if (want > SG_MAX_PER_WINDOW)
        return ss_err(eb, SS_EPARSE, "%s:%" PRIu64 ": rate: %g requests/s is too many",
                      g->csv_path, g->cur.line, g->cur.rate);
    if (want < 2)
        return 0; /* the one arrival falls on the window end */
    int rc = dataset_at(g, g->cur.ts, eb);
    if (rc)
        return rc;
    g->n = (uint64_t)want;
    g->w_start = from - g->start_ns;
    g->w_len = to - from;
    rc = window_sum(g, eb);
    g->active = rc == SS_OK;
    return rc ? rc : 1;
}

/* The next arrival of the active window (ns, relative), or -1 when the window is done. */
static ss_time window_arrival(wl__sg *g)
{
    if (g->k + 1 >= g->n)
        return -1;
    g->k++;
    g->s_acc += draw_gap(g);
    double frac = g->even ? (double)g->k / (double)g->n : g->s_acc / g->s_total;
    ss_time t = llround((double)g->w_len * frac);
    return t < g->w_len ? g->w_start + t : -1;
}

/* ====================================================================================== */
/* Public                                                                                  */
/* ====================================================================================== */

static int sticky(wl__sg *g, int rc, ss_errbuf *eb)
{
    if (rc < 0 && !g->rc) {
        g->rc = rc;
        g->err = *eb;
    }
    return rc;
}

int wl__sg_next(wl__sg *g, trace_rec *out, ss_errbuf *eb)
{
    ss_errbuf local;
    if (!eb)
        eb = &local;
    if (g->rc) {
        *eb = g->err;
        return g->rc;
    }
    for (;;) {
        ss_time t = g->active ? window_arrival(g) : -1;
        if (t >= 0) {
            const wl__sg_window *w = &g->win[g->cur_w];
            double u = ss_rng_uniform(&g->tok);
            uint32_t in = wl__pmf_sample(&w->input, u), o = wl__pmf_sample(&w->output, u);
            memset(out, 0, sizeof *out);
            out->arrival_ns = t;
            out->prompt_tokens = in ? in : 1;
            out->output_tokens = o ? o : 1;
            out->line = g->cur.line;
            return 1;
        }
        g->active = 0;
        int rc = advance_row(g, eb);
        if (rc <= 0)
            return sticky(g, rc, eb);
        if ((rc = window_begin(g, eb)) < 0)
            return sticky(g, rc, eb);
    }
}

/* "CATEGORY/POOL/CLIENT": three non-empty parts of [A-Za-z0-9._-], none "." or "..", and a
 * numeric client. Writes the parts' lengths. */
static int client_parts(const char *client, size_t part[3], ss_errbuf *eb)
{
    const char *p = client;
    for (int i = 0; i < 3; i++) {
        size_t n = strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-");
        int bad = n == 0 || n > 100 || (n <= 2 && strspn(p, ".") == n) ||
                  (i == 2 && (strspn(p, "0123456789") != n || n > 9)) ||
                  p[n] != (i < 2 ? '/' : '\0');
        if (bad)
            return ss_err(eb, SS_EINVAL, "servegen: '%.100s' is not CATEGORY/POOL/CLIENT with a "
                          "numeric client (e.g. language/m-mid/17)", client);
        part[i] = n;
        p += n + 1;
    }
    return SS_OK;
}

/* Paths of the client's trace.csv and dataset file (.json, else .json.gz). */
static int client_paths(const char *dir, const char *client, char **csv, char **ds,
                        ss_errbuf *eb)
{
    size_t part[3];
    int rc = client_parts(client, part, eb);
    if (rc)
        return rc;
    const char *pool_end = client + part[0] + 1 + part[1], *id = pool_end + 1;
    size_t cap = strlen(dir) + strlen(client) + 64;
    *csv = ss_malloc(cap);
    *ds = ss_malloc(cap);
    if (!*csv || !*ds)
        return ss_err(eb, SS_ENOMEM, "servegen: out of memory");
    int base = (int)(pool_end - client);
    snprintf(*csv, cap, "%s/%.*s/chunk-%s-trace.csv", dir, base, client, id);
    snprintf(*ds, cap, "%s/%.*s/chunk-%s-dataset.json", dir, base, client, id);
    if (access(*ds, F_OK) != 0) {
        strcat(*ds, ".gz");
        if (access(*ds, F_OK) != 0)
            return ss_err(eb, SS_ENOTFOUND, "servegen: %s has no dataset file %.*s(.gz) "
                          "(ServeGen skips such clients too)", client,
                          (int)(strlen(*ds) - 3), *ds);
    }
    return SS_OK;
}

/* Open both files, read the first trace row and the first dataset window with data. */
static int sg_prime(wl__sg *g, const char *ds_path, ss_errbuf *eb)
{
    int rc = ss_input_open(&g->f, g->csv_path, 0, eb);
    if (rc)
        return rc == SS_EIO && errno == ENOENT ? SS_ENOTFOUND : rc;
    rc = read_row(g, eb);
    if (rc == 0)
        rc = ss_err(eb, SS_EPARSE, "%s: no windows", g->csv_path);
    if (rc < 0)
        return rc;
    g->have_nxt = 1;
    if ((rc = wl__sg_dataset_open(&g->ds, ds_path, eb)))
        return rc;
    rc = wl__sg_dataset_next(g->ds, &g->win[0], eb);
    if (rc == 0)
        rc = ss_err(eb, SS_EPARSE, "%s: no window with token PMFs", ds_path);
    if (rc < 0)
        return rc;
    g->nxt_w = 0;
    return SS_OK;
}

int wl__sg_open(wl__sg **g_out, const char *dir, const char *client, double start_s,
                uint64_t seed, uint32_t tenant, ss_errbuf *eb)
{
    if (!(start_s >= 0 && start_s <= (double)SG_MAX_TS))
        return ss_err(eb, SS_EINVAL, "servegen_start_s: must be in [0, 1e9] s, got %g",
                      start_s);
    wl__sg *g = ss_calloc(1, sizeof *g);
    if (!g)
        return ss_err(eb, SS_ENOMEM, "servegen: out of memory");
    g->cur_w = g->nxt_w = -1;
    g->csv_digest = SS_FNV1A_OFFSET;
    g->start_ns = ss_time_from_s(start_s);
    ss_rng_seed(&g->arr, seed, wl__stream(WL__STREAM_SG_ARRIVAL, tenant));
    ss_rng_seed(&g->tok, seed, wl__stream(WL__STREAM_SG_TOKENS, tenant));
    char *ds_path = NULL;
    int rc = client_paths(dir, client, &g->csv_path, &ds_path, eb);
    if (rc == SS_OK && !(g->client = ss_strdup(client)))
        rc = ss_err(eb, SS_ENOMEM, "servegen: out of memory");
    if (rc == SS_OK)
        rc = sg_prime(g, ds_path, eb);
    ss_free(ds_path);
    if (rc) {
        wl__sg_close(&g);
        return rc;
    }
    *g_out = g;
    return SS_OK;
}

void wl__sg_close(wl__sg **g)
{
    if (!g || !*g)
        return;
    wl__sg *s = *g;
    if (s->f)
        fclose(s->f);
    wl__sg_dataset_close(&s->ds);
    wl__sg_window_free(&s->win[0]);
    wl__sg_window_free(&s->win[1]);
    ss_free(s->csv_path);
    ss_free(s->client);
    ss_free(s);
    *g = NULL;
}

uint64_t wl__sg_digest(const wl__sg *g)
{
    uint64_t h = ss_fnv1a(SS_FNV1A_OFFSET, g->client, strlen(g->client));
    uint64_t v[3] = {(uint64_t)g->start_ns, g->csv_digest, wl__sg_dataset_digest(g->ds)};
    return ss_fnv1a(h, v, sizeof v);
}
