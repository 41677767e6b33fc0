/* Tier mixes: how a tenant's requests are spread over its K SLA tiers (tier 0 the highest),
 * built from a name and drawn with the tenant's own rng stream. Not for SLA values or for
 * what a tier means to a policy (scenario/ and policy/).
 *
 * Generalisation to K tiers. The named shapes are defined for K = 5, and K = 5 uses them
 * exactly. For other K:
 *  - gaussian: a normal density evaluated at the tiers 0..K-1, centred at (K-1)/2, normalised,
 *    with the same spread relative to the tier range as the K = 5 table: the table's standard
 *    deviation is sqrt(0.8) = 0.894 tiers over a range of 4, so sigma = sqrt(0.8) * (K-1) / 4.
 *    No sampled normal reproduces the K = 5 table within 0.01 (its tails are heavier): with
 *    sigma = 0.894 it gives [.037 .240 .448 .240 .037], and the least-squares sigma (0.796)
 *    [.021 .228 .502 .228 .021], off by up to 0.029; so K = 5 itself uses the table.
 *  - enterprise: the 5-point shape [.10 .30 .50 .08 .02] resampled piecewise-linearly at K
 *    evenly spaced positions 4j/(K-1), j = 0..K-1 (the end points are tiers 0 and 4 of the
 *    shape), normalised; K = 1 is [1].
 *  - uniform 1/K; powerlaw p_k ~ (k+1)^-alpha; weights normalised; trace keeps the trace's
 *    tier (clamped to K-1). */
#include "workload/workload.h"

#include "core/ss_parse.h"

#include <math.h>
#include <string.h>

/* Standard deviation of the K = 5 gaussian table in tiers: sqrt(2 * (0.05 * 4 + 0.2 * 1)). */
#define WL_GAUSS_SIGMA5 0.894427190999916

static const double gauss5[5] = {0.05, 0.20, 0.50, 0.20, 0.05};
static const double enterprise5[5] = {0.10, 0.30, 0.50, 0.08, 0.02};

/* Scale p[0..k) to sum to 1 (the sum is > 0 here). */
static void normalise(double *p, uint32_t k)
{
    double sum = 0;
    for (uint32_t i = 0; i < k; i++)
        sum += p[i];
    for (uint32_t i = 0; i < k; i++)
        p[i] /= sum;
}

static void make_gaussian(double *p, uint32_t k)
{
    if (k == 5) {
        memcpy(p, gauss5, sizeof gauss5);
        return;
    }
    double sigma = WL_GAUSS_SIGMA5 * (double)(k - 1) / 4.0, c = (double)(k - 1) / 2.0;
    for (uint32_t i = 0; i < k; i++) {
        double z = k > 1 ? ((double)i - c) / sigma : 0.0;
        p[i] = exp(-0.5 * z * z);
    }
    normalise(p, k);
}

static void make_enterprise(double *p, uint32_t k)
{
    for (uint32_t j = 0; j < k; j++) {
        double x = k > 1 ? 4.0 * (double)j / (double)(k - 1) : 0.0;
        uint32_t i = (uint32_t)x;
        if (i >= 4) {
            p[j] = enterprise5[4];
            continue;
        }
        double f = x - (double)i;
        p[j] = enterprise5[i] + f * (enterprise5[i + 1] - enterprise5[i]);
    }
    normalise(p, k);
}

/* "W0,W1,...": exactly k finite non-negative weights, not all 0. */
static int parse_weights(double *p, uint32_t k, const char *s, ss_errbuf *eb)
{
    uint32_t n = 0;
    double sum = 0;
    for (const char *q = s;; n++) {
        const char *comma = strchr(q, ',');
        size_t len = comma ? (size_t)(comma - q) : strlen(q);
        double w;
        if (n >= k)
            return ss_err(eb, SS_EINVAL, "tier_mix: weights: more than %u weights for %u tiers",
                          k, k);
        if (ss_parse_double(q, len, &w) || w < 0)
            return ss_err(eb, SS_EINVAL, "tier_mix: weights: '%.*s' is not a number >= 0",
                          (int)(len > 40 ? 40 : len), q);
        p[n] = w;
        sum += w;
        if (!comma) {
            n++;
            break;
        }
        q = comma + 1;
    }
    if (n != k)
        return ss_err(eb, SS_EINVAL, "tier_mix: weights: need %u weights (one per tier), got %u",
                      k, n);
    if (!(sum > 0) || !isfinite(sum))
        return ss_err(eb, SS_EINVAL, "tier_mix: weights: need a positive finite sum");
    normalise(p, k);
    return SS_OK;
}

static int make_powerlaw(double *p, uint32_t k, double alpha, ss_errbuf *eb)
{
    if (!(alpha > 0 && alpha <= 100))
        return ss_err(eb, SS_EINVAL, "tier_mix: powerlaw: alpha must be in (0, 100], got %g",
                      alpha);
    for (uint32_t i = 0; i < k; i++)
        p[i] = pow((double)(i + 1), -alpha);
    normalise(p, k);
    return SS_OK;
}

int wl_tier_mix_make(wl_tier_mix *m, const char *name, uint32_t k, double alpha, ss_errbuf *eb)
{
    if (!m || !name)
        return ss_err(eb, SS_EINVAL, "tier_mix: NULL argument");
    if (k < 1 || k > SS_MAX_TIERS)
        return ss_err(eb, SS_EINVAL, "tier_mix: tiers must be in 1..%d, got %u", SS_MAX_TIERS,
                      k);
    wl_tier_mix t;
    memset(&t, 0, sizeof t);
    t.k = k;
    int rc = SS_OK;
    if (!strcmp(name, "trace")) {
        t.kind = WL_MIX_TRACE;
        t.p[0] = 1;
    } else if (!strcmp(name, "uniform")) {
        t.kind = WL_MIX_UNIFORM;
        for (uint32_t i = 0; i < k; i++)
            t.p[i] = 1.0 / k;
    } else if (!strcmp(name, "gaussian")) {
        t.kind = WL_MIX_GAUSSIAN;
        make_gaussian(t.p, k);
    } else if (!strcmp(name, "enterprise")) {
        t.kind = WL_MIX_ENTERPRISE;
        make_enterprise(t.p, k);
    } else if (!strcmp(name, "powerlaw")) {
        t.kind = WL_MIX_POWERLAW;
        rc = make_powerlaw(t.p, k, alpha, eb);
    } else if (!strncmp(name, "weights:", 8)) {
        t.kind = WL_MIX_WEIGHTS;
        rc = parse_weights(t.p, k, name + 8, eb);
    } else {
        rc = ss_err(eb, SS_EINVAL, "tier_mix: unknown mix '%.60s' (known: trace, uniform, "
                    "gaussian, enterprise, powerlaw, weights:W0,W1,...)", name);
    }
    if (rc == SS_OK)
        *m = t;
    return rc;
}

uint8_t wl_tier_draw(const wl_tier_mix *m, ss_rng *r)
{
    if (m->kind == WL_MIX_TRACE || m->k <= 1)
        return 0;
    double u = ss_rng_uniform(r), acc = 0;
    uint32_t last = 0;
    for (uint32_t i = 0; i < m->k && i < SS_MAX_TIERS; i++) {
        if (m->p[i] <= 0)
            continue;
        acc += m->p[i];
        last = i;
        if (u < acc)
            return (uint8_t)i;
    }
    return (uint8_t)last; /* u beyond a sum rounded below 1 */
}
