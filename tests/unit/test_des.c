/* Discrete-event engine: ordering (time, then FIFO), cross-check of the 4-ary heap against a
 * trivially correct reference queue on a million random events, cancellation, the until
 * bound, tie counting and the event pool. The into-the-past abort is checked by the CLI suite
 * (a death test needs a subprocess). */
#include "support/test_util.h"

#include "core/ss_alloc.h"
#include "core/ss_rng.h"
#include "des/des.h"
#include "des/queue.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct rec {
    uint64_t *order; /* ids in dispatch order */
    size_t n;
    ss_time *times;
} rec;

static void on_ev(des_engine *e, des_event *ev, void *ctx)
{
    rec *r = ctx;
    r->order[r->n] = ev->data.u64[0];
    r->times[r->n++] = des_now(e);
}

static void test_fifo_among_equal_times(void **state)
{
    (void)state;
    uint64_t order[8];
    ss_time times[8];
    rec r = {order, 0, times};
    des_engine *e = NULL;
    assert_int_equal(des_engine_create(&e, &r), 0);
    des_handler_set(e, 1, on_ev);
    ss_time at[] = {50, 10, 50, 10, 0, 50};
    for (uint64_t i = 0; i < 6; i++)
        des_schedule(e, at[i], 1, 0)->data.u64[0] = i;
    assert_int_equal(des_run(e, SS_TIME_MAX), 6);
    uint64_t want[] = {4, 1, 3, 0, 2, 5};
    for (int i = 0; i < 6; i++)
        assert_int_equal(order[i], want[i]);
    /* ties: 10,10 and 50,50,50 -> 1 + 2 */
    assert_int_equal(des_get_stats(e)->n_ties, 3);
    assert_int_equal(des_now(e), 50);
    des_engine_destroy(&e);
    assert_null(e);
    tu_assert_no_leaks();
}

/* A reset engine is a new one that keeps its memory: events pending before are gone, the
 * clock, counters and handlers start again, the same schedule dispatches in the same order at
 * the same times, and nothing is allocated while the pool suffices. */
static void test_reset_is_a_new_engine(void **state)
{
    (void)state;
    uint64_t order[2][64];
    ss_time times[2][64];
    rec r[2] = {{order[0], 0, times[0]}, {order[1], 0, times[1]}};
    des_engine *e = NULL;
    assert_int_equal(des_engine_create(&e, &r[0]), 0);
    des_handler_set(e, 1, on_ev);
    des_handler_set(e, 2, on_ev);
    for (uint64_t i = 0; i < 40; i++) /* some dispatched, the rest left pending */
        des_schedule(e, (ss_time)(i * 7 % 13), 1 + (i % 2), 0)->data.u64[0] = 100 + i;
    des_run(e, 5);
    r[0].n = 0;
    size_t pool = des_get_stats(e)->pool_events, live = ss_alloc_live_bytes();
    for (int k = 0; k < 2; k++) {
        if (k) { /* the same schedule on a new engine */
            des_engine_destroy(&e);
            assert_int_equal(des_engine_create(&e, &r[1]), 0);
        } else {
            des_engine_reset(e, &r[0]);
            assert_int_equal(des_pending(e), 0);
            assert_int_equal(des_now(e), 0);
            assert_int_equal(des_get_stats(e)->n_events, 0);
            assert_int_equal(des_get_stats(e)->n_scheduled, 0);
            assert_int_equal(des_get_stats(e)->pool_events, pool);
            assert_int_equal(des_pending_kind(e, 2), 0);
        }
        des_handler_set(e, 1, on_ev);
        des_start_at(e, 3);
        ss_time at[] = {9, 3, 9, 4, 3, 20};
        for (uint64_t i = 0; i < 6; i++)
            des_schedule(e, at[i], 1, 0)->data.u64[0] = i;
        if (!k)
            assert_int_equal(ss_alloc_live_bytes(), live); /* the pool and queue had room */
        assert_int_equal(des_run(e, SS_TIME_MAX), 6);
        assert_int_equal(des_get_stats(e)->n_ties, 2);
    }
    assert_int_equal(r[0].n, 6);
    assert_int_equal(r[1].n, 6);
    assert_memory_equal(order[0], order[1], 6 * sizeof order[0][0]);
    assert_memory_equal(times[0], times[1], 6 * sizeof times[0][0]);
    des_engine_destroy(&e);
    tu_assert_no_leaks();
}

/* Reference: an array kept sorted by (at, seq) with insertion sort; obviously correct. */
typedef struct ref_ent {
    ss_time at;
    uint64_t seq;
} ref_ent;

static int ref_cmp(const void *a, const void *b)
{
    const ref_ent *x = a, *y = b;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void test_heap_matches_reference_on_1m_events(void **state)
{
    (void)state;
    enum { N = 1000000 };
    ss_rng rng;
    ss_rng_seed(&rng, 42, 7);
    des_event *evs = calloc(N, sizeof *evs);
    ref_ent *ref = calloc(N, sizeof *ref);
    assert_non_null(evs);
    assert_non_null(ref);
    des_queue q;
    des__queue_init(&q);
    /* Interleave pushes and pops like a simulation would: times are drawn near "now",
     * with many duplicates so that FIFO among equal keys is exercised. */
    size_t n_pushed = 0, n_popped = 0;
    ss_time now = 0;
    ref_ent *popped = calloc(N, sizeof *popped);
    while (n_popped < N) {
        int push = n_pushed < N && (des__queue_size(&q) == 0 || ss_rng_below(&rng, 3) != 0);
        if (push) {
            des_event *ev = &evs[n_pushed];
            ev->at = now + (ss_time)ss_rng_below(&rng, 1000);
            ev->seq = n_pushed;
            ref[n_pushed] = (ref_ent){ev->at, ev->seq};
            assert_int_equal(des__queue_push(&q, ev), 0);
            n_pushed++;
        } else {
            des_event *ev = des__queue_pop(&q);
            assert_non_null(ev);
            assert_true(ev->at >= now);
            now = ev->at;
            popped[n_popped++] = (ref_ent){ev->at, ev->seq};
        }
    }
    assert_null(des__queue_pop(&q));
    /* Because times never go below "now", the total pop order must equal the sorted order
     * of everything pushed. */
    qsort(ref, N, sizeof *ref, ref_cmp);
    for (size_t i = 0; i < N; i++) {
        if (ref[i].at != popped[i].at || ref[i].seq != popped[i].seq)
            fail_msg("mismatch at %zu: heap (%lld,%llu) reference (%lld,%llu)", i,
                     (long long)popped[i].at, (unsigned long long)popped[i].seq,
                     (long long)ref[i].at, (unsigned long long)ref[i].seq);
    }
    des__queue_fini(&q);
    free(evs);
    free(ref);
    free(popped);
    tu_assert_no_leaks();
}

static void test_engine_random_schedule_order(void **state)
{
    (void)state;
    enum { N = 200000 };
    uint64_t *order = calloc(N, sizeof *order);
    ss_time *times = calloc(N, sizeof *times);
    ref_ent *ref = calloc(N, sizeof *ref);
    rec r = {order, 0, times};
    des_engine *e = NULL;
    assert_int_equal(des_engine_create(&e, &r), 0);
    des_handler_set(e, 3, on_ev);
    ss_rng rng;
    ss_rng_seed(&rng, 1, 1);
    for (uint64_t i = 0; i < N; i++) {
        ss_time at = (ss_time)ss_rng_below(&rng, 5000);
        des_schedule(e, at, 3, 0)->data.u64[0] = i;
        ref[i] = (ref_ent){at, i};
    }
    assert_int_equal(des_run(e, SS_TIME_MAX), N);
    qsort(ref, N, sizeof *ref, ref_cmp);
    for (size_t i = 0; i < N; i++) {
        assert_int_equal(order[i], ref[i].seq);
        assert_int_equal(times[i], ref[i].at);
    }
    /* The pool recycles: far fewer events allocated than scheduled would mean reuse; here
     * all were pending at once, so the pool holds at least N. */
    assert_true(des_get_stats(e)->pool_events >= N);
    assert_int_equal(des_get_stats(e)->peak_queue, N);
    des_engine_destroy(&e);
    free(order);
    free(times);
    free(ref);
    tu_assert_no_leaks();
}

typedef struct chain {
    int left;
    des_event *victim;
} chain;

static void on_chain(des_engine *e, des_event *ev, void *ctx)
{
    chain *c = ctx;
    (void)ev;
    if (--c->left > 0)
        des_schedule(e, des_now(e) + 10, 1, 0);
}

static void test_pool_reuses_events(void **state)
{
    (void)state;
    chain c = {100000, NULL};
    des_engine *e = NULL;
    assert_int_equal(des_engine_create(&e, &c), 0);
    des_handler_set(e, 1, on_chain);
    des_schedule(e, 0, 1, 0);
    des_run(e, SS_TIME_MAX);
    assert_int_equal(des_get_stats(e)->n_events, 100000);
    assert_true(des_get_stats(e)->pool_events <= 512);
    assert_int_equal(des_now(e), 999990);
    des_engine_destroy(&e);
    tu_assert_no_leaks();
}

static void test_cancel_and_until(void **state)
{
    (void)state;
    uint64_t order[8];
    ss_time times[8];
    rec r = {order, 0, times};
    des_engine *e = NULL;
    assert_int_equal(des_engine_create(&e, &r), 0);
    des_handler_set(e, 1, on_ev);
    des_event *a = des_schedule(e, 5, 1, 0);
    a->data.u64[0] = 1;
    des_schedule(e, 7, 1, 0)->data.u64[0] = 2;
    des_schedule(e, 20, 1, 0)->data.u64[0] = 3;
    des_cancel(e, a);
    assert_int_equal(des_next_time(e), 7);
    assert_int_equal(des_run(e, 10), 1);
    assert_int_equal(r.n, 1);
    assert_int_equal(order[0], 2);
    assert_int_equal(des_now(e), 7);
    assert_int_equal(des_step(e), 1);
    assert_int_equal(order[1], 3);
    assert_int_equal(des_step(e), 0);
    assert_int_equal(des_get_stats(e)->n_cancelled, 1);
    des_engine_destroy(&e);
    tu_assert_no_leaks();
}

static void test_schedule_oom_leaves_engine_usable(void **state)
{
    (void)state;
    uint64_t order[4];
    ss_time times[4];
    rec r = {order, 0, times};
    des_engine *e = NULL;
    assert_int_equal(des_engine_create(&e, &r), 0);
    des_handler_set(e, 1, on_ev);
    ss_alloc_fail_after(1); /* the pool chunk */
    assert_null(des_schedule(e, 1, 1, 0));
    ss_alloc_fail_after(2); /* pool chunk succeeds, queue array fails */
    assert_null(des_schedule(e, 1, 1, 0));
    ss_alloc_fail_after(0);
    assert_int_equal(des_pending(e), 0);
    des_schedule(e, 1, 1, 0)->data.u64[0] = 9;
    assert_int_equal(des_run(e, SS_TIME_MAX), 1);
    assert_int_equal(order[0], 9);
    des_engine_destroy(&e);
    tu_assert_no_leaks();
}

static void on_noop(des_engine *e, des_event *ev, void *ctx)
{
    (void)e;
    (void)ev;
    (void)ctx;
}

/* Pending events by kind (cancelled ones until popped) and events a handler handled itself
 * (des_note_handled): they count as dispatched, and the progress callback keeps its cadence
 * of one call per `every` events even when the count jumps past a multiple. */
static int n_progress;
static void on_progress(const des_engine *e, void *ud)
{
    (void)e, (void)ud;
    n_progress++;
}
static void on_batch(des_engine *e, des_event *ev, void *ctx)
{
    (void)ev, (void)ctx;
    des_note_handled(e, 3); /* as if three more steps ended within this one */
}

static void test_pending_kind_and_handled(void **state)
{
    (void)state;
    des_engine *e = NULL;
    assert_int_equal(des_engine_create(&e, NULL), 0);
    des_handler_set(e, 1, on_batch);
    des_handler_set(e, 2, on_batch);
    des_event *x = des_schedule(e, 10, 1, 0);
    des_schedule(e, 20, 1, 0);
    des_schedule(e, 30, 2, 0);
    assert_int_equal(des_pending_kind(e, 1), 2);
    assert_int_equal(des_pending_kind(e, 2), 1);
    assert_int_equal(des_pending_kind(e, 3), 0);
    des_cancel(e, x);
    assert_int_equal(des_pending_kind(e, 1), 2); /* still queued */
    n_progress = 0;
    des_progress_set(e, on_progress, NULL, 6);
    assert_int_equal(des_run(e, 20), 1); /* the cancelled one is popped, the second runs */
    assert_int_equal(des_pending_kind(e, 1), 0);
    assert_int_equal(des_pending_kind(e, 2), 1);
    assert_int_equal(des_get_stats(e)->n_events, 4);
    assert_int_equal(n_progress, 0);
    assert_int_equal(des_run(e, 100), 1);
    assert_int_equal(des_get_stats(e)->n_events, 8); /* passed 6 without landing on it */
    assert_int_equal(n_progress, 1);
    assert_int_equal(des_pending_kind(e, 2), 0);
    des_engine_destroy(&e);
    tu_assert_no_leaks();
}

static void test_schedule_into_past_aborts(void **state)
{
    (void)state;
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        des_engine *e = NULL;
        if (des_engine_create(&e, NULL))
            _exit(3);
        des_handler_set(e, 1, on_noop);
        des_schedule(e, 100, 1, 0);
        des_run(e, SS_TIME_MAX);
        if (!freopen("/dev/null", "w", stderr)) /* keep the expected message out of the log */
            _exit(4);
        des_schedule(e, 99, 1, 0);         /* into the past: must abort */
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_among_equal_times),
        cmocka_unit_test(test_reset_is_a_new_engine),
        cmocka_unit_test(test_heap_matches_reference_on_1m_events),
        cmocka_unit_test(test_engine_random_schedule_order),
        cmocka_unit_test(test_pool_reuses_events),
        cmocka_unit_test(test_cancel_and_until),
        cmocka_unit_test(test_schedule_oom_leaves_engine_usable),
        cmocka_unit_test(test_schedule_into_past_aborts),
        cmocka_unit_test(test_pending_kind_and_handled),
    };
    return cmocka_run_group_tests_name("des", tests, NULL, NULL);
}
