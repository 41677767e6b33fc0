/* xoshiro256** by Blackman and Vigna (public domain algorithm), written from its published
 * description, plus the few continuous distributions the simulator needs. */
#include "core/ss_rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void ss_rng_seed(ss_rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed ^ (stream * UINT64_C(0xD1342543DE82EF95));
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
    if (!(r->s[0] | r->s[1] | r->s[2] | r->s[3]))
        r->s[0] = 1;
}

uint64_t ss_rng_u64(ss_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double ss_rng_uniform(ss_rng *r) { return (double)(ss_rng_u64(r) >> 11) * 0x1.0p-53; }

uint64_t ss_rng_below(ss_rng *r, uint64_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = ss_rng_u64(r);
    while (x >= limit);
    return x % n;
}

double ss_rng_exp(ss_rng *r, double mean) { return -mean * log1p(-ss_rng_uniform(r)); }

double ss_rng_normal(ss_rng *r)
{
    double u, v, s;
    do {
        u = 2.0 * ss_rng_uniform(r) - 1.0;
        v = 2.0 * ss_rng_uniform(r) - 1.0;
        s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    return u * sqrt(-2.0 * log(s) / s);
}

double ss_rng_gamma(ss_rng *r, double shape, double scale)
{
    if (shape < 1.0) {
        /* Boost: Gamma(k) = Gamma(k+1) * U^(1/k). */
        double u = ss_rng_uniform(r);
        return ss_rng_gamma(r, shape + 1.0, scale) * pow(1.0 - u, 1.0 / shape);
    }
    double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x = ss_rng_normal(r), v = 1.0 + c * x;
        if (v <= 0.0)
            continue;
        v = v * v * v;
        double u = ss_rng_uniform(r);
        if (u < 1.0 - 0.0331 * x * x * x * x || log(u) < 0.5 * x * x + d * (1.0 - v + log(v)))
            return d * v * scale;
    }
}
