/* Simulated time: signed 64-bit nanoseconds (about 292 years of range). Never double inside
 * the engine; doubles appear only at the edges (reporting in ms or s). */
#ifndef SS_CORE_SS_TIME_H
#define SS_CORE_SS_TIME_H

#include <math.h>
#include <stdint.h>

typedef int64_t ss_time;

#define SS_NS_PER_US INT64_C(1000)
#define SS_NS_PER_MS INT64_C(1000000)
#define SS_NS_PER_S INT64_C(1000000000)
#define SS_TIME_MAX INT64_MAX

/* Seconds (finite, >= 0, < 9.2e9) to nanoseconds, rounded to nearest. */
static inline ss_time ss_time_from_s(double s) { return (ss_time)llround(s * 1e9); }
static inline double ss_time_to_s(ss_time t) { return (double)t / 1e9; }
static inline double ss_time_to_ms(ss_time t) { return (double)t / 1e6; }

#endif
