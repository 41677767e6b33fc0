/* Simulated time: signed 64-bit nanoseconds (about 292 years of range). Never double inside
 * the engine; doubles appear only at the edges (reporting in ms or s). */
#ifndef SS_CORE_SS_TIME_H
#define SS_CORE_SS_TIME_H

/* part of the plug-in API (policy/plugin.h): visible to a plug-in the binary loads */
#pragma GCC visibility push(default)

#include <math.h>
#include <stdint.h>

typedef int64_t ss_time;

#define SS_NS_PER_US INT64_C(1000)
#define SS_NS_PER_MS INT64_C(1000000)
#define SS_NS_PER_S INT64_C(1000000000)
#define SS_TIME_MAX INT64_MAX

/* The simulated time range: every arrival, after any rate scaling, must fall within
 * [0, SS_ARRIVAL_MAX] (1e9 s, about 31.7 years), which leaves the clock over 8e9 s for what
 * follows the last arrival. Beyond that, sums of times saturate at SS_TIME_MAX (ss_time_add,
 * ss_time_from_ns_sat) and the simulator stops a run whose clock would get there. */
#define SS_ARRIVAL_MAX (INT64_C(1000000000) * SS_NS_PER_S)

/* a + b, saturating at SS_TIME_MAX (and at INT64_MIN): times never wrap. */
static inline ss_time ss_time_add(ss_time a, ss_time b)
{
    if (b > 0 && a > SS_TIME_MAX - b)
        return SS_TIME_MAX;
    if (b < 0 && a < INT64_MIN - b)
        return INT64_MIN;
    return a + b;
}

/* A duration in ns (a double) to ss_time, rounded half up as (ss_time)(ns + 0.5) is;
 * SS_TIME_MAX when it does not fit (infinite too), 0 for NaN and negatives. */
static inline ss_time ss_time_from_ns_sat(double ns)
{
    if (!(ns >= 0))
        return 0;
    return ns < 9.2e18 ? (ss_time)(ns + 0.5) : SS_TIME_MAX;
}

/* Seconds (finite, >= 0, < 9.2e9) to nanoseconds, rounded to nearest. */
static inline ss_time ss_time_from_s(double s) { return (ss_time)llround(s * 1e9); }
static inline double ss_time_to_s(ss_time t) { return (double)t / 1e9; }
static inline double ss_time_to_ms(ss_time t) { return (double)t / 1e6; }

/* qsort comparator of ss_time values, ascending. */
static inline int ss_time_cmp(const void *a, const void *b)
{
    ss_time x = *(const ss_time *)a, y = *(const ss_time *)b;
    return (x > y) - (x < y);
}

#pragma GCC visibility pop

#endif
