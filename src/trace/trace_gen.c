/* Synthetic traces: length-distribution specs ("lognormal:1020:0.5", "quantiles:0=2,...,1=8192"),
 * the generator (Poisson or Gamma arrivals accumulated in integer ns; arrivals, prompt and output
 * lengths each from their own rng stream) and the native-CSV writer. Same spec, same bytes.
 * Not for reading traces (trace_reader.c) or summarising them (trace_stats.c). */
#include "trace/trace_int.h"

#include "core/ss_alloc.h"
#include "core/ss_parse.h"
#include "core/ss_rng.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ====================================================================================== */
/* Distribution specs                                                                      */
/* ====================================================================================== */

typedef struct len_kind {
    const char *name;    /* spec prefix */
    trace_len_kind kind;
    int n_min, n_max;    /* number of ':'-separated parameters */
    const char *pnames[4]; /* parameter names for messages, in spec order */
    const char *usage;   /* the spec's syntax, for messages */
} len_kind;

static const len_kind len_kinds[] = {
    {"fixed", TRACE_LEN_FIXED, 1, 1, {"N"}, "fixed:N"},
    {"uniform", TRACE_LEN_UNIFORM, 2, 2, {"LO", "HI"}, "uniform:LO:HI"},
    {"lognormal", TRACE_LEN_LOGNORMAL, 2, 4, {"MEDIAN", "SIGMA", "MIN", "MAX"},
     "lognormal:MEDIAN:SIGMA[:MIN:MAX]"},
    {"zipf", TRACE_LEN_ZIPF, 3, 3, {"S", "MIN", "MAX"}, "zipf:S:MIN:MAX"},
    {"quantiles", TRACE_LEN_QUANTILES, 0, 0, {0}, "quantiles:P=V,P=V,..."},
};

/* A token-count parameter: an integer in [1, TRACE_MAX_TOKENS]. */
static int check_count(double v, const char *label, const char *pname, ss_errbuf *eb)
{
    if (v != floor(v))
        return ss_err(eb, SS_EPARSE, "%s: %s: must be an integer, got %g", label, pname, v);
    if (v < 1 || v > TRACE_MAX_TOKENS)
        return ss_err(eb, SS_EPARSE, "%s: %s: must be in [1, %d], got %.0f", label, pname,
                      TRACE_MAX_TOKENS, v);
    return SS_OK;
}

static int check_quantiles(const trace_len_dist *d, const char *label, ss_errbuf *eb)
{
    int n = d->n_knots;
    if (n < 2 || n > TRACE_MAX_KNOTS)
        return ss_err(eb, SS_EPARSE, "%s: need 2 to %d knots P=V, got %d", label,
                      TRACE_MAX_KNOTS, n);
    if (d->knot_p[0] != 0 || d->knot_p[n - 1] != 1)
        return ss_err(eb, SS_EPARSE, "%s: the first knot must be at P=0 and the last at P=1",
                      label);
    for (int i = 0; i < n; i++) {
        if (i && !(d->knot_p[i] > d->knot_p[i - 1]))
            return ss_err(eb, SS_EPARSE, "%s: P must increase (%g after %g)", label,
                          d->knot_p[i], d->knot_p[i - 1]);
        if (i && d->knot_v[i] < d->knot_v[i - 1])
            return ss_err(eb, SS_EPARSE, "%s: V must not decrease (%g after %g)", label,
                          d->knot_v[i], d->knot_v[i - 1]);
        if (!(d->knot_v[i] >= 1 && d->knot_v[i] <= TRACE_MAX_TOKENS))
            return ss_err(eb, SS_EPARSE, "%s: V must be in [1, %d], got %g", label,
                          TRACE_MAX_TOKENS, d->knot_v[i]);
    }
    return SS_OK;
}

/* Validate a distribution; label names it in messages ("prompt", "'zipf:1:1:0'"). */
static int dist_check(const trace_len_dist *d, const char *label, ss_errbuf *eb)
{
    int rc = SS_OK;
    switch (d->kind) {
    case TRACE_LEN_FIXED: return check_count(d->a, label, "N", eb);
    case TRACE_LEN_UNIFORM:
        if ((rc = check_count(d->a, label, "LO", eb)) || (rc = check_count(d->b, label, "HI", eb)))
            return rc;
        if (d->a > d->b)
            return ss_err(eb, SS_EPARSE, "%s: LO must be <= HI", label);
        return SS_OK;
    case TRACE_LEN_LOGNORMAL:
        if (!(d->a > 0) || !(d->b >= 0))
            return ss_err(eb, SS_EPARSE, "%s: need MEDIAN > 0 and SIGMA >= 0", label);
        if ((rc = check_count(d->c, label, "MIN", eb)) ||
            (rc = check_count(d->d, label, "MAX", eb)))
            return rc;
        return d->c > d->d ? ss_err(eb, SS_EPARSE, "%s: MIN must be <= MAX", label) : SS_OK;
    case TRACE_LEN_ZIPF:
        if (!(d->a > 0 && d->a <= 100))
            return ss_err(eb, SS_EPARSE, "%s: S must be in (0, 100], got %g", label, d->a);
        if ((rc = check_count(d->b, label, "MIN", eb)) ||
            (rc = check_count(d->c, label, "MAX", eb)))
            return rc;
        return d->b > d->c ? ss_err(eb, SS_EPARSE, "%s: MIN must be <= MAX", label) : SS_OK;
    case TRACE_LEN_QUANTILES: return check_quantiles(d, label, eb);
    }
    return ss_err(eb, SS_EPARSE, "%s: unknown distribution kind %d", label, (int)d->kind);
}

/* One "P=V" knot of a quantiles spec. */
static int parse_knot(trace_len_dist *d, const char *s, size_t len, const char *label,
                      ss_errbuf *eb)
{
    trace__shown sh;
    const char *eq = memchr(s, '=', len);
    if (d->n_knots >= TRACE_MAX_KNOTS)
        return ss_err(eb, SS_EPARSE, "%s: more than %d knots", label, TRACE_MAX_KNOTS);
    if (!eq || ss_parse_double(s, (size_t)(eq - s), &d->knot_p[d->n_knots]) ||
        ss_parse_double(eq + 1, len - (size_t)(eq - s) - 1, &d->knot_v[d->n_knots]))
        return ss_err(eb, SS_EPARSE, "%s: knot '%s' is not P=V with two numbers", label,
                      trace__show(&sh, s, len));
    d->n_knots++;
    return SS_OK;
}

static int parse_quantiles(trace_len_dist *d, const char *s, const char *label, ss_errbuf *eb)
{
    size_t len = strlen(s), start = 0;
    for (;;) {
        const char *comma = memchr(s + start, ',', len - start);
        size_t end = comma ? (size_t)(comma - s) : len;
        int rc = parse_knot(d, s + start, end - start, label, eb);
        if (rc)
            return rc;
        if (!comma)
            return SS_OK;
        start = end + 1;
    }
}

/* The ':'-separated numeric parameters of s into d->a..d (at most 4). */
static int parse_params(trace_len_dist *d, const len_kind *k, const char *s, const char *label,
                        ss_errbuf *eb)
{
    double v[4] = {0};
    int n = 0;
    trace__shown sh;
    for (const char *p = s;; n++) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        if (n >= k->n_max)
            return ss_err(eb, SS_EPARSE, "%s: too many parameters (want %s)", label, k->usage);
        if (ss_parse_double(p, len, &v[n]))
            return ss_err(eb, SS_EPARSE, "%s: %s: not a number: '%s'", label, k->pnames[n],
                          trace__show(&sh, p, len));
        if (!colon) {
            n++;
            break;
        }
        p = colon + 1;
    }
    if (n < k->n_min || (k->kind == TRACE_LEN_LOGNORMAL && n == 3))
        return ss_err(eb, SS_EPARSE, "%s: missing parameter %s (want %s)", label, k->pnames[n],
                      k->usage);
    d->a = v[0];
    d->b = v[1];
    d->c = v[2];
    d->d = v[3];
    if (k->kind == TRACE_LEN_LOGNORMAL && n == 2) {
        d->c = 1;
        d->d = TRACE_MAX_TOKENS;
    }
    return SS_OK;
}

int trace_len_dist_parse(trace_len_dist *d, const char *spec, ss_errbuf *eb)
{
    trace__shown sh;
    char label[sizeof sh.s + 2];
    if (!d || !spec)
        return ss_err(eb, SS_EINVAL, "trace_len_dist_parse: NULL argument");
    snprintf(label, sizeof label, "'%s'", trace__show(&sh, spec, strlen(spec)));
    const char *colon = strchr(spec, ':');
    size_t nlen = colon ? (size_t)(colon - spec) : strlen(spec);
    const len_kind *k = NULL;
    for (size_t i = 0; i < sizeof len_kinds / sizeof *len_kinds; i++)
        if (strlen(len_kinds[i].name) == nlen && !memcmp(len_kinds[i].name, spec, nlen))
            k = &len_kinds[i];
    if (!k)
        return ss_err(eb, SS_EPARSE, "%s: unknown distribution (known: fixed:N, uniform:LO:HI, "
                      "lognormal:MEDIAN:SIGMA[:MIN:MAX], zipf:S:MIN:MAX, quantiles:P=V,...)",
                      label);
    if (!colon || !colon[1])
        return ss_err(eb, SS_EPARSE, "%s: missing parameters after '%s:'", label, k->name);
    trace_len_dist t;
    memset(&t, 0, sizeof t);
    t.kind = k->kind;
    int rc = k->kind == TRACE_LEN_QUANTILES ? parse_quantiles(&t, colon + 1, label, eb)
                                            : parse_params(&t, k, colon + 1, label, eb);
    if (rc || (rc = dist_check(&t, label, eb)))
        return rc;
    *d = t;
    return SS_OK;
}

int trace_gen_spec_check(const trace_gen_spec *s, ss_errbuf *eb)
{
    if (!s)
        return ss_err(eb, SS_EINVAL, "trace_gen_spec_check: NULL spec");
    if (!(s->rate > 0 && s->rate <= 1e9))
        return ss_err(eb, SS_EINVAL, "rate: must be in (0, 1e9] requests/s, got %g", s->rate);
    if (!(s->cv > 0 && s->cv <= 100))
        return ss_err(eb, SS_EINVAL, "cv: must be in (0, 100], got %g", s->cv);
    if (s->arrival != TRACE_ARRIVAL_POISSON && s->arrival != TRACE_ARRIVAL_GAMMA)
        return ss_err(eb, SS_EINVAL, "arrival: unknown kind %d", (int)s->arrival);
    if (!(s->duration_s >= 0 && s->duration_s <= 9e9))
        return ss_err(eb, SS_EINVAL, "duration: must be in [0, 9e9] s, got %g", s->duration_s);
    if (s->n_requests == 0 && s->duration_s == 0)
        return ss_err(eb, SS_EINVAL, "need a number of requests or a duration");
    if (s->tenant) {
        size_t n = strlen(s->tenant);
        if (n == 0 || n > TRACE__MAX_TENANT_NAME || strpbrk(s->tenant, ",\"\r\n"))
            return ss_err(eb, SS_EINVAL, "tenant: need 1 to %d bytes without commas, quotes or "
                          "line breaks", TRACE__MAX_TENANT_NAME);
    }
    int rc = dist_check(&s->prompt, "prompt", eb);
    if (rc || (rc = dist_check(&s->output, "output", eb)))
        return rc == SS_EPARSE ? SS_EINVAL : rc;
    return SS_OK;
}

/* ====================================================================================== */
/* Sampling                                                                                */
/* ====================================================================================== */

/* Zipf on 1..n by rejection-inversion (Hörmann & Derflinger 1996): O(1) time and no table,
 * so MAX-MIN can be as large as TRACE_MAX_TOKENS. */
typedef struct zipf_state {
    double s;          /* exponent */
    double n;          /* number of values */
    double h_x1;       /* H(1.5) - 1 */
    double h_n;        /* H(n + 0.5) */
    double accept;     /* squeeze bound */
} zipf_state;

static double helper1(double x) /* log1p(x)/x, accurate near 0 */
{
    return fabs(x) > 1e-8 ? log1p(x) / x : 1 - x * (0.5 - x * (1.0 / 3 - 0.25 * x));
}

static double helper2(double x) /* expm1(x)/x, accurate near 0 */
{
    return fabs(x) > 1e-8 ? expm1(x) / x : 1 + x * 0.5 * (1 + x / 3 * (1 + 0.25 * x));
}

static double zipf_h(const zipf_state *z, double x) { return exp(-z->s * log(x)); }

static double zipf_hint(const zipf_state *z, double x)
{
    double lx = log(x);
    return helper2((1 - z->s) * lx) * lx;
}

static double zipf_hinv(const zipf_state *z, double x)
{
    double t = x * (1 - z->s);
    if (t < -1)
        t = -1;
    return exp(helper1(t) * x);
}

static void zipf_init(zipf_state *z, double s, double n)
{
    z->s = s;
    z->n = n;
    z->h_x1 = zipf_hint(z, 1.5) - 1;
    z->h_n = zipf_hint(z, n + 0.5);
    z->accept = 2 - zipf_hinv(z, zipf_hint(z, 2.5) - zipf_h(z, 2));
}

static double zipf_sample(const zipf_state *z, ss_rng *r)
{
    for (;;) {
        double u = z->h_n + ss_rng_uniform(r) * (z->h_x1 - z->h_n);
        double x = zipf_hinv(z, u);
        double k = floor(x + 0.5);
        if (k < 1)
            k = 1;
        else if (k > z->n)
            k = z->n;
        if (k - x <= z->accept || u >= zipf_hint(z, k + 0.5) - zipf_h(z, k))
            return k;
    }
}

static double quantile_sample(const trace_len_dist *d, ss_rng *r)
{
    double u = ss_rng_uniform(r);
    int i = 0;
    while (i + 2 < d->n_knots && u >= d->knot_p[i + 1])
        i++;
    double w = (u - d->knot_p[i]) / (d->knot_p[i + 1] - d->knot_p[i]);
    return d->knot_v[i] + w * (d->knot_v[i + 1] - d->knot_v[i]);
}

/* Round to an integer and clamp into [lo, hi] (NaN goes to lo). */
static uint32_t round_clamp(double x, double lo, double hi)
{
    if (!(x >= lo))
        x = lo;
    if (x > hi)
        x = hi;
    return (uint32_t)llround(x);
}

static uint32_t len_sample(const trace_len_dist *d, const zipf_state *z, ss_rng *r)
{
    switch (d->kind) {
    case TRACE_LEN_FIXED: return round_clamp(d->a, 1, TRACE_MAX_TOKENS);
    case TRACE_LEN_UNIFORM:
        return (uint32_t)d->a + (uint32_t)ss_rng_below(r, (uint64_t)(d->b - d->a) + 1);
    case TRACE_LEN_LOGNORMAL:
        return round_clamp(d->a * exp(d->b * ss_rng_normal(r)), d->c, d->d);
    case TRACE_LEN_ZIPF: return (uint32_t)d->b - 1 + (uint32_t)zipf_sample(z, r);
    case TRACE_LEN_QUANTILES: return round_clamp(quantile_sample(d, r), 1, TRACE_MAX_TOKENS);
    }
    return 1;
}

/* ====================================================================================== */
/* Generator                                                                               */
/* ====================================================================================== */

struct trace_gen {
    trace_gen_spec spec;     /* copy; spec.tenant stays borrowed */
    ss_rng arrivals;         /* SS_RNG_STREAM_TRACE_ARRIVALS */
    ss_rng prompt;           /* SS_RNG_STREAM_TRACE_PROMPT */
    ss_rng output;           /* SS_RNG_STREAM_TRACE_OUTPUT */
    zipf_state zprompt;      /* precomputed when prompt is zipf */
    zipf_state zoutput;      /* precomputed when output is zipf */
    double mean_gap_s;       /* 1 / rate */
    ss_time t_ns;            /* last arrival */
    ss_time end_ns;          /* duration limit (SS_TIME_MAX when none) */
    uint64_t n_done;         /* requests produced */
    int done;                /* the end was reached */
};

int trace_gen_create(trace_gen **g_out, const trace_gen_spec *spec, ss_errbuf *eb)
{
    int rc = trace_gen_spec_check(spec, eb);
    if (rc)
        return rc;
    trace_gen *g = ss_calloc(1, sizeof *g);
    if (!g)
        return ss_err(eb, SS_ENOMEM, "trace generator: out of memory");
    g->spec = *spec;
    ss_rng_seed(&g->arrivals, spec->seed, SS_RNG_STREAM_TRACE_ARRIVALS);
    ss_rng_seed(&g->prompt, spec->seed, SS_RNG_STREAM_TRACE_PROMPT);
    ss_rng_seed(&g->output, spec->seed, SS_RNG_STREAM_TRACE_OUTPUT);
    if (spec->prompt.kind == TRACE_LEN_ZIPF)
        zipf_init(&g->zprompt, spec->prompt.a, spec->prompt.c - spec->prompt.b + 1);
    if (spec->output.kind == TRACE_LEN_ZIPF)
        zipf_init(&g->zoutput, spec->output.a, spec->output.c - spec->output.b + 1);
    g->mean_gap_s = 1.0 / spec->rate;
    g->end_ns = spec->duration_s > 0 ? ss_time_from_s(spec->duration_s) : SS_TIME_MAX;
    *g_out = g;
    return SS_OK;
}

/* The next inter-arrival gap, rounded to whole ns so the CSV's 9 decimals are exact. */
static ss_time next_gap_ns(trace_gen *g)
{
    double gap_s;
    if (g->spec.arrival == TRACE_ARRIVAL_GAMMA) {
        double cv2 = g->spec.cv * g->spec.cv;
        gap_s = ss_rng_gamma(&g->arrivals, 1.0 / cv2, g->mean_gap_s * cv2);
    } else {
        gap_s = ss_rng_exp(&g->arrivals, g->mean_gap_s);
    }
    return gap_s < 9e9 ? ss_time_from_s(gap_s) : SS_TIME_MAX;
}

int trace_gen_next(trace_gen *g, trace_rec *out)
{
    if (g->done || (g->spec.n_requests && g->n_done >= g->spec.n_requests)) {
        g->done = 1;
        return 0;
    }
    ss_time gap = next_gap_ns(g);
    if (gap > g->end_ns - g->t_ns || gap > SS_TIME_MAX - g->t_ns) {
        g->done = 1;
        return 0;
    }
    g->t_ns += gap;
    memset(out, 0, sizeof *out);
    out->id = g->n_done++;
    out->arrival_ns = g->t_ns;
    out->prompt_tokens = len_sample(&g->spec.prompt, &g->zprompt, &g->prompt);
    out->output_tokens = len_sample(&g->spec.output, &g->zoutput, &g->output);
    return 1;
}

/* Free a generator; NULL-safe, sets *g to NULL. */
void trace_gen_destroy(trace_gen **g)
{
    if (!g || !*g)
        return;
    ss_free(*g);
    *g = NULL;
}

int trace_gen_write_csv(const trace_gen_spec *spec, FILE *f, ss_errbuf *eb)
{
    trace_gen *g = NULL;
    trace_rec rec;
    int rc = trace_gen_create(&g, spec, eb);
    if (rc)
        return rc;
    const char *tenant = spec->tenant ? spec->tenant : "default";
    fputs("request_id,arrival_s,tenant,prompt_tokens,output_tokens\n", f);
    while (trace_gen_next(g, &rec) == 1 && !ferror(f))
        fprintf(f, "%" PRIu64 ",%" PRId64 ".%09" PRId64 ",%s,%" PRIu32 ",%" PRIu32 "\n", rec.id,
                rec.arrival_ns / SS_NS_PER_S, rec.arrival_ns % SS_NS_PER_S, tenant,
                rec.prompt_tokens, rec.output_tokens);
    trace_gen_destroy(&g);
    if (fflush(f) || ferror(f))
        return ss_err(eb, SS_EIO, "write failed: %s", strerror(errno));
    return SS_OK;
}
