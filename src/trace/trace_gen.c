/* Synthetic traces: length-distribution specs ("lognormal:1020:0.5", "quantiles:0=2,...,1=8192"),
 * the generator's spec and its checks, sampling, the generator of independent requests (Poisson
 * or Gamma arrivals accumulated in integer ns; arrivals, prompt and output lengths each from
 * their own rng stream) and the native-CSV writer. Same spec, same bytes. Conversations and
 * shared system prompts (prefix identity) are trace_gen_conv.c's. Not for reading traces
 * (trace_reader.c) or summarising them (trace_stats.c). */
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
        return ss_err(eb, SS_EPARSE, "%s: %s: must be in [1, %d], got %.15g", label, pname,
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

static int check_prefix(const trace_gen_spec *s, ss_errbuf *eb);

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
    if (rc || (rc = dist_check(&s->output, "output", eb)) || (rc = check_prefix(s, eb)))
        return rc == SS_EPARSE ? SS_EINVAL : rc;
    return SS_OK;
}

/* ---- prefix identity: keys and checks ---------------------------------------------------- */

const char trace_gen_prefix_keys[] = "groups, system, group_zipf, turns, think, max_context";

/* Can a conversation have more than one turn? */
static int multi_turn(const trace_gen_spec *s)
{
    return !trace__len_unset(&s->turns) && trace__len_max(&s->turns) > 1;
}

int trace_gen_has_prefix(const trace_gen_spec *s)
{
    return s->groups > 0 || multi_turn(s);
}

static int check_groups(const trace_gen_spec *s, ss_errbuf *eb)
{
    if (s->groups > TRACE_GEN_MAX_GROUPS)
        return ss_err(eb, SS_EINVAL, "groups: must be in [0, %d], got %" PRIu32,
                      TRACE_GEN_MAX_GROUPS, s->groups);
    if (!(s->group_zipf >= 0 && s->group_zipf <= 100))
        return ss_err(eb, SS_EINVAL, "group_zipf: must be in [0, 100], got %g", s->group_zipf);
    if (!s->groups && !trace__len_unset(&s->system))
        return ss_err(eb, SS_EINVAL, "system: a system-prompt length needs groups > 0");
    if (!s->groups && s->group_zipf != 0)
        return ss_err(eb, SS_EINVAL, "group_zipf: needs groups > 0");
    if (s->groups && trace__len_unset(&s->system))
        return ss_err(eb, SS_EINVAL, "system: groups need a system-prompt length (a "
                      "distribution, e.g. fixed:1024)");
    return s->groups ? dist_check(&s->system, "system", eb) : SS_OK;
}

static int check_turns(const trace_gen_spec *s, ss_errbuf *eb)
{
    if (!trace__len_unset(&s->turns)) {
        int rc = dist_check(&s->turns, "turns", eb);
        if (rc)
            return rc;
        if (trace__len_max(&s->turns) > TRACE_GEN_MAX_TURNS)
            return ss_err(eb, SS_EINVAL, "turns: the largest value must be <= %d, got %" PRIu32
                          " (give lognormal its MIN:MAX)", TRACE_GEN_MAX_TURNS,
                          trace__len_max(&s->turns));
    }
    if (!multi_turn(s) && s->think_s != 0)
        return ss_err(eb, SS_EINVAL, "think: needs turns that can exceed 1");
    if (multi_turn(s) && s->think_s == 0)
        return ss_err(eb, SS_EINVAL, "think: turns can exceed 1, so a mean think time in "
                      "(0, 1e6] s is needed");
    if (multi_turn(s) && !(s->think_s > 0 && s->think_s <= 1e6))
        return ss_err(eb, SS_EINVAL, "think: must be in (0, 1e6] s, got %g", s->think_s);
    if (s->max_context > TRACE_MAX_TOKENS)
        return ss_err(eb, SS_EINVAL, "max_context: must be in [1, %d] tokens, got %" PRIu32,
                      TRACE_MAX_TOKENS, s->max_context);
    if (s->max_context && !trace_gen_has_prefix(s))
        return ss_err(eb, SS_EINVAL, "max_context: needs groups > 0 or turns");
    return SS_OK;
}

static int check_prefix(const trace_gen_spec *s, ss_errbuf *eb)
{
    int rc = check_groups(s, eb);
    return rc ? rc : check_turns(s, eb);
}

/* A decimal integer in [lo, hi]. */
static int parse_count(const char *val, int64_t lo, int64_t hi, uint32_t *out, ss_errbuf *eb)
{
    int64_t n;
    if (ss_parse_i64z(val, &n) || n < lo || n > hi)
        return ss_err(eb, SS_EPARSE, "expected an integer in [%" PRId64 ", %" PRId64 "], got "
                      "'%s'", lo, hi, val);
    *out = (uint32_t)n;
    return SS_OK;
}

int trace_gen_spec_set(trace_gen_spec *s, const char *key, const char *val, ss_errbuf *eb)
{
    double d;
    if (!strcmp(key, "groups"))
        return parse_count(val, 0, TRACE_GEN_MAX_GROUPS, &s->groups, eb);
    if (!strcmp(key, "max_context"))
        return parse_count(val, 1, TRACE_MAX_TOKENS, &s->max_context, eb);
    if (!strcmp(key, "system"))
        return trace_len_dist_parse(&s->system, val, eb);
    if (!strcmp(key, "turns"))
        return trace_len_dist_parse(&s->turns, val, eb);
    if (!strcmp(key, "group_zipf")) {
        if (ss_parse_doublez(val, &d) || !(d >= 0 && d <= 100))
            return ss_err(eb, SS_EPARSE, "expected a number in [0, 100], got '%s'", val);
        s->group_zipf = d;
        return SS_OK;
    }
    if (!strcmp(key, "think")) {
        if (ss_parse_doublez(val, &d) || !(d > 0 && d <= 1e6))
            return ss_err(eb, SS_EPARSE, "expected seconds in (0, 1e6], got '%s'", val);
        s->think_s = d;
        return SS_OK;
    }
    return SS_ENOTFOUND;
}

/* ====================================================================================== */
/* Sampling                                                                                */
/* ====================================================================================== */

/* Zipf by rejection-inversion: O(1) time and no table, so MAX-MIN can be as large as
 * TRACE_MAX_TOKENS. */
static double helper1(double x) /* log1p(x)/x, accurate near 0 */
{
    return fabs(x) > 1e-8 ? log1p(x) / x : 1 - x * (0.5 - x * (1.0 / 3 - 0.25 * x));
}

static double helper2(double x) /* expm1(x)/x, accurate near 0 */
{
    return fabs(x) > 1e-8 ? expm1(x) / x : 1 + x * 0.5 * (1 + x / 3 * (1 + 0.25 * x));
}

static double zipf_h(const trace__zipf *z, double x) { return exp(-z->s * log(x)); }

static double zipf_hint(const trace__zipf *z, double x)
{
    double lx = log(x);
    return helper2((1 - z->s) * lx) * lx;
}

static double zipf_hinv(const trace__zipf *z, double x)
{
    double t = x * (1 - z->s);
    if (t < -1)
        t = -1;
    return exp(helper1(t) * x);
}

void trace__zipf_init(trace__zipf *z, double s, double n)
{
    z->s = s;
    z->n = n;
    z->h_x1 = zipf_hint(z, 1.5) - 1;
    z->h_n = zipf_hint(z, n + 0.5);
    z->accept = 2 - zipf_hinv(z, zipf_hint(z, 2.5) - zipf_h(z, 2));
}

double trace__zipf_sample(const trace__zipf *z, ss_rng *r)
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

uint32_t trace__len_sample(const trace_len_dist *d, const trace__zipf *z, ss_rng *r)
{
    switch (d->kind) {
    case TRACE_LEN_FIXED: return round_clamp(d->a, 1, TRACE_MAX_TOKENS);
    case TRACE_LEN_UNIFORM:
        return (uint32_t)d->a + (uint32_t)ss_rng_below(r, (uint64_t)(d->b - d->a) + 1);
    case TRACE_LEN_LOGNORMAL:
        return round_clamp(d->a * exp(d->b * ss_rng_normal(r)), d->c, d->d);
    case TRACE_LEN_ZIPF: return (uint32_t)d->b - 1 + (uint32_t)trace__zipf_sample(z, r);
    case TRACE_LEN_QUANTILES: return round_clamp(quantile_sample(d, r), 1, TRACE_MAX_TOKENS);
    }
    return 1;
}

/* Prepare d's Zipf state (its values MIN..MAX are 1..n shifted). */
void trace__len_prepare(const trace_len_dist *d, trace__zipf *z)
{
    if (d->kind == TRACE_LEN_ZIPF)
        trace__zipf_init(z, d->a, d->c - d->b + 1);
}

uint32_t trace__len_max(const trace_len_dist *d)
{
    switch (d->kind) {
    case TRACE_LEN_FIXED: return round_clamp(d->a, 1, TRACE_MAX_TOKENS);
    case TRACE_LEN_UNIFORM: return (uint32_t)d->b;
    case TRACE_LEN_LOGNORMAL: return (uint32_t)d->d;
    case TRACE_LEN_ZIPF: return (uint32_t)d->c;
    case TRACE_LEN_QUANTILES: return round_clamp(d->knot_v[d->n_knots - 1], 1, TRACE_MAX_TOKENS);
    }
    return 1;
}

/* P(a draw of d is <= k), for the kinds whose draws are rounded from a continuous value x:
 * the draw is <= k exactly when x < k + 0.5 (llround rounds halves up). */
static double len_cdf(const trace_len_dist *d, uint32_t k)
{
    double x = k + 0.5;
    if (d->kind == TRACE_LEN_LOGNORMAL) {
        if (k < d->c)
            return 0;
        if (k >= d->d)
            return 1;
        if (d->b == 0)
            return d->a < x;
        return 0.5 * erfc(-log(x / d->a) / (d->b * sqrt(2.0)));
    }
    double p = 0; /* quantiles: the measure of u whose interpolated value is below x */
    for (int i = 0; i + 1 < d->n_knots; i++) {
        double v0 = d->knot_v[i], v1 = d->knot_v[i + 1], w = d->knot_p[i + 1] - d->knot_p[i];
        if (v1 == v0)
            p += v0 < x ? w : 0;
        else
            p += w * fmin(1, fmax(0, (x - v0) / (v1 - v0)));
    }
    return p;
}

double trace__len_mean_small(const trace_len_dist *d)
{
    uint32_t hi = trace__len_max(d);
    switch (d->kind) {
    case TRACE_LEN_FIXED: return hi;
    case TRACE_LEN_UNIFORM: return (d->a + d->b) / 2;
    case TRACE_LEN_ZIPF: {
        double num = 0, den = 0;
        for (uint32_t k = 1; k <= (uint32_t)(d->c - d->b + 1); k++) {
            num += k * pow(k, -d->a);
            den += pow(k, -d->a);
        }
        return d->b - 1 + num / den;
    }
    case TRACE_LEN_LOGNORMAL:
    case TRACE_LEN_QUANTILES: {
        double mean = 1; /* E[T] = 1 + sum over k >= 1 of P(T > k), as T >= 1 */
        for (uint32_t k = 1; k < hi; k++)
            mean += 1 - len_cdf(d, k);
        return mean;
    }
    }
    return 1;
}

/* ====================================================================================== */
/* Generator                                                                               */
/* ====================================================================================== */

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
    trace__len_prepare(&spec->prompt, &g->zprompt);
    trace__len_prepare(&spec->output, &g->zoutput);
    g->mean_gap_s = 1.0 / spec->rate;
    g->end_ns = spec->duration_s > 0 ? ss_time_from_s(spec->duration_s) : SS_TIME_MAX;
    if (trace_gen_has_prefix(spec) && (rc = trace__conv_create(g, eb))) {
        ss_free(g);
        return rc;
    }
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

int trace__gen_arrival(trace_gen *g, ss_time *t_out)
{
    ss_time gap = next_gap_ns(g);
    if (gap > g->end_ns - g->t_ns || gap > SS_TIME_MAX - g->t_ns)
        return 0;
    g->t_ns += gap;
    *t_out = g->t_ns;
    return 1;
}

int trace_gen_next(trace_gen *g, trace_rec *out, ss_errbuf *eb)
{
    if (g->err)
        return ss_err(eb, g->err, "trace generator: stopped by an earlier error");
    if (g->done || (g->spec.n_requests && g->n_done >= g->spec.n_requests)) {
        g->done = 1;
        return 0;
    }
    if (g->conv) {
        int rc = trace__conv_next(g, out, eb);
        if (rc < 0)
            g->err = rc;
        g->done = rc == 0;
        return rc;
    }
    ss_time t;
    if (!trace__gen_arrival(g, &t)) {
        g->done = 1;
        return 0;
    }
    memset(out, 0, sizeof *out);
    out->id = g->n_done++;
    out->arrival_ns = t;
    out->prompt_tokens = trace__len_sample(&g->spec.prompt, &g->zprompt, &g->prompt);
    out->output_tokens = trace__len_sample(&g->spec.output, &g->zoutput, &g->output);
    return 1;
}

void trace_gen_destroy(trace_gen **g)
{
    if (!g || !*g)
        return;
    trace__conv_destroy(&(*g)->conv);
    ss_free(*g);
    *g = NULL;
}

/* One row of the native CSV; with prefix identity also session_id and hash_ids. */
static void write_row(FILE *f, const trace_rec *r, const char *tenant, int prefix)
{
    fprintf(f, "%" PRIu64 ",%" PRId64 ".%09" PRId64 ",%s,%" PRIu32 ",%" PRIu32, r->id,
            r->arrival_ns / SS_NS_PER_S, r->arrival_ns % SS_NS_PER_S, tenant, r->prompt_tokens,
            r->output_tokens);
    if (prefix) {
        fprintf(f, ",%" PRIu64 ",", r->session_id);
        for (uint32_t i = 0; i < r->n_prefix_blocks; i++)
            fprintf(f, i ? " %" PRIu32 : "%" PRIu32, r->prefix_blocks[i]);
    }
    fputc('\n', f);
}

int trace_gen_write_csv(const trace_gen_spec *spec, FILE *f, trace_gen_written *out,
                        ss_errbuf *eb)
{
    trace_gen *g = NULL;
    trace_rec rec;
    trace_gen_written w = {0};
    int rc = trace_gen_create(&g, spec, eb);
    if (rc)
        return rc;
    const char *tenant = spec->tenant ? spec->tenant : "default";
    int prefix = g->conv != NULL;
    fputs(prefix ? "request_id,arrival_s,tenant,prompt_tokens,output_tokens,session_id,hash_ids\n"
                 : "request_id,arrival_s,tenant,prompt_tokens,output_tokens\n", f);
    while ((rc = trace_gen_next(g, &rec, eb)) == 1 && !ferror(f)) {
        write_row(f, &rec, tenant, prefix);
        w.requests++;
        w.last_ns = rec.arrival_ns;
    }
    trace_gen_destroy(&g);
    if (rc < 0)
        return rc;
    if (fflush(f) || ferror(f))
        return ss_err(eb, SS_EIO, "write failed: %s", strerror(errno));
    if (out)
        *out = w;
    return SS_OK;
}
