/* Seeded pseudo-random streams (xoshiro256**, seeded through splitmix64). Each component
 * gets its own stream from (seed, stream id) so that adding one consumer never perturbs
 * another. Deterministic across runs and builds; never touches the wall clock. */
#ifndef SS_CORE_SS_RNG_H
#define SS_CORE_SS_RNG_H

/* part of the plug-in API (policy/plugin.h): visible to a plug-in the binary loads */
#pragma GCC visibility push(default)

#include <stdint.h>

typedef struct ss_rng {
    uint64_t s[4]; /* xoshiro256** state; never all zero */
} ss_rng;

/* Well-known stream ids, so components never share a stream by accident. */
enum {
    SS_RNG_STREAM_TRACE_ARRIVALS = 1,
    SS_RNG_STREAM_TRACE_PROMPT = 2,
    SS_RNG_STREAM_TRACE_OUTPUT = 3,
    SS_RNG_STREAM_TRACE_GROUP = 4,  /* synthetic: each conversation's system-prompt group */
    SS_RNG_STREAM_TRACE_SYSTEM = 5, /* synthetic: each group's system-prompt length */
    SS_RNG_STREAM_TRACE_TURNS = 6,  /* synthetic: each conversation's number of turns */
    SS_RNG_STREAM_TRACE_THINK = 7,  /* synthetic: think times between turns */
    SS_RNG_STREAM_ROUTING = 16,
    SS_RNG_STREAM_BATCHING = 17,
    SS_RNG_STREAM_TIERS = 18,
    SS_RNG_STREAM_WHATIF_OUTPUT = 19, /* what-ifs: the noisy predictor's factor per request */
};

void ss_rng_seed(ss_rng *r, uint64_t seed, uint64_t stream);
uint64_t ss_rng_u64(ss_rng *r);
/* Uniform double in [0, 1) with 53 random bits. */
double ss_rng_uniform(ss_rng *r);
/* Uniform integer in [0, n); n > 0. Unbiased (rejection). */
uint64_t ss_rng_below(ss_rng *r, uint64_t n);
/* Exponential with the given mean (> 0). */
double ss_rng_exp(ss_rng *r, double mean);
/* Standard normal (Marsaglia polar method). */
double ss_rng_normal(ss_rng *r);
/* Gamma(shape k > 0, scale theta > 0), Marsaglia–Tsang. Mean k·theta, CV 1/sqrt(k). */
double ss_rng_gamma(ss_rng *r, double shape, double scale);

#pragma GCC visibility pop

#endif
