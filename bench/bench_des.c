/* Raw event-queue loop: the speed limit of any simulation on this engine. Holds a fixed number
 * of pending events (a "hold model": each dispatched event schedules one successor at a random
 * later time) and reports dispatched events per second. Usage: bench_des [EVENTS] [PENDING] */
#include "core/ss_rng.h"
#include "des/des.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef struct hold {
    ss_rng rng;
    uint64_t left;
} hold;

static void on_ev(des_engine *e, des_event *ev, void *ctx)
{
    (void)ev;
    hold *h = ctx;
    if (h->left && h->left--)
        des_schedule(e, des_now(e) + 1 + (ss_time)ss_rng_below(&h->rng, 20000000), 1, 0);
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000;
    uint64_t pending = argc > 2 ? strtoull(argv[2], NULL, 10) : 50;
    hold h = {.left = n};
    ss_rng_seed(&h.rng, 1, 1);
    des_engine *e = NULL;
    if (des_engine_create(&e, &h))
        return 1;
    des_handler_set(e, 1, on_ev);
    for (uint64_t i = 0; i < pending; i++)
        des_schedule(e, (ss_time)ss_rng_below(&h.rng, 20000000), 1, 0);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    des_run(e, SS_TIME_MAX);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
    unsigned long long ev = (unsigned long long)des_get_stats(e)->n_events;
    printf("{\"events\": %llu, \"pending\": %llu, \"wall_s\": %.6f, \"events_per_s\": %.0f}\n", ev,
           (unsigned long long)pending, s, (double)ev / s);
    des_engine_destroy(&e);
    return 0;
}
