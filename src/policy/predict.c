/* Output-length predictors for what-if forks (pol_predictor): parsing their names and the
 * length each gives a request still in flight. Not the running statistics' upkeep: the
 * simulator records its tenants' finished lengths (ss_hist) and keeps each request's
 * prediction. */
#include "policy/policy.h"

#include "core/ss_hash.h"
#include "core/ss_parse.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define PRED_CV_MAX 10.0

static int bad(const char *key, const char *s, ss_errbuf *eb)
{
    return ss_err(eb, SS_EINVAL, "%s: expected oracle, mean, quantile:Q (0 < Q < 1) or "
                  "noisy:CV (0 <= CV <= %g), got '%s'", key, PRED_CV_MAX, s);
}

int pol_predictor_parse(pol_predictor *out, const char *s, const char *key, ss_errbuf *eb)
{
    double v;
    if (!strcmp(s, "oracle")) {
        *out = (pol_predictor){POL_PRED_ORACLE, 0};
    } else if (!strcmp(s, "mean")) {
        *out = (pol_predictor){POL_PRED_MEAN, 0};
    } else if (!strncmp(s, "quantile:", 9)) {
        if (ss_parse_doublez(s + 9, &v) || !(v > 0 && v < 1))
            return bad(key, s, eb);
        *out = (pol_predictor){POL_PRED_QUANTILE, v};
    } else if (!strncmp(s, "noisy:", 6)) {
        if (ss_parse_doublez(s + 6, &v) || !(v >= 0 && v <= PRED_CV_MAX))
            return bad(key, s, eb);
        *out = (pol_predictor){POL_PRED_NOISY, v};
    } else {
        return bad(key, s, eb);
    }
    return SS_OK;
}

void pol_predictor_name(const pol_predictor *p, char *buf, size_t n)
{
    switch (p->kind) {
    case POL_PRED_MEAN: snprintf(buf, n, "mean"); break;
    case POL_PRED_QUANTILE: snprintf(buf, n, "quantile:%g", p->arg); break;
    case POL_PRED_NOISY: snprintf(buf, n, "noisy:%g", p->arg); break;
    default: snprintf(buf, n, "oracle"); break;
    }
}

/* A lognormal factor of mean 1 and coefficient of variation cv, from its own stream. */
static double noise(double cv, uint64_t seed, uint64_t key)
{
    if (cv <= 0)
        return 1;
    ss_rng r;
    ss_rng_seed(&r, seed ^ ss_fnv1a(SS_FNV1A_OFFSET, &key, sizeof key),
                SS_RNG_STREAM_WHATIF_OUTPUT);
    double s2 = log1p(cv * cv);
    return exp(-0.5 * s2 + sqrt(s2) * ss_rng_normal(&r));
}

/* A length of at least lo, rounded to the nearest token (huge values held to UINT32_MAX). */
static uint32_t tokens(double x, uint32_t lo)
{
    if (!(x < 4294967295.0))
        return UINT32_MAX;
    uint32_t t = (uint32_t)llround(x);
    return t < lo ? lo : t;
}

uint32_t pol_predict_output(const pol_predictor *p, const ss_hist *finished,
                            const ss_hist_index *finished_ix, uint32_t generated, uint32_t output,
                            uint32_t cap, uint64_t seed, uint64_t key)
{
    const uint32_t lo = generated < UINT32_MAX ? generated + 1 : UINT32_MAX;
    uint32_t t;
    if (p->kind == POL_PRED_ORACLE) {
        t = output;
    } else if (p->kind == POL_PRED_NOISY) {
        double rest = output > generated ? (double)(output - generated) : 1;
        t = tokens((double)generated + tokens(rest * noise(p->arg, seed, key), 1), lo);
    } else {
        uint64_t n = 0;
        double mean = 0;
        int64_t q = 0;
        double *mean_out = p->kind == POL_PRED_MEAN ? &mean : NULL;
        int64_t *q_out = p->kind == POL_PRED_QUANTILE ? &q : NULL;
        if (finished_ix)
            ss_hist_index_above(finished_ix, finished, generated, p->arg, &n, mean_out, q_out);
        else
            ss_hist_above(finished, generated, p->arg, &n, mean_out, q_out);
        if (n)
            t = tokens(p->kind == POL_PRED_MEAN ? mean : (double)q, lo);
        else if (finished->n)
            t = tokens(2.0 * generated, lo); /* it has outlived every finished one */
        else
            t = cap; /* nothing has finished yet: the longest it can run */
    }
    if (t > cap && cap >= lo)
        t = cap;
    return t < lo ? lo : t;
}
