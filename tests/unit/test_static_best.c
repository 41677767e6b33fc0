/* The static-best allocation search (runner/static_best.h) on synthetic judges with known
 * answers: a saturating miss rate per tenant whose best allocation is checked against an
 * exhaustive enumeration, the proportional start, ties (goodput, then the lexicographically
 * smallest allocation), a tie for the worst miss that two moves resolve, the replay cap, the one-container minimum with unequal container
 * sizes and a tenant without load, and errors (a cluster too small, bad options, a judge
 * that fails). Every judged allocation is checked to keep one container per tenant and fit. */
#include "support/test_util.h"

#include "core/ss_err.h"
#include "runner/static_best.h"

#include <math.h>
#include <string.h>

typedef struct judge_state {
    const runner_alloc_problem *p;
    double capacity[SS_MAX_TENANTS]; /* tok/s one container serves (0: constant miss) */
    double const_miss;               /* every tenant's miss when capacity is 0 */
    int goodput_by_first;            /* goodput = containers of tenant 0 (else the served) */
    int calls, fail_call;            /* fail_call: the call that returns SS_EIO (0: none) */
} judge_state;

/* Tenant t misses the share of its demand its containers cannot serve. */
static int judge_fn(void *ud, const uint32_t *c, runner_alloc_score *out, ss_errbuf *eb)
{
    judge_state *s = ud;
    const runner_alloc_problem *p = s->p;
    uint32_t used = 0;
    for (uint32_t t = 0; t < p->n_tenants; t++) {
        assert_true(c[t] >= 1);
        used += c[t] * p->unit[t];
    }
    assert_true(used <= p->gpus);
    if (++s->calls == s->fail_call)
        return ss_err(eb, SS_EIO, "judge %d failed", s->calls);
    double demand = 0, missed = 0;
    for (uint32_t t = 0; t < p->n_tenants; t++) {
        double d = p->demand_tok_per_s[t], served = s->capacity[t] * c[t];
        out->miss[t] = !s->capacity[t] ? s->const_miss : served >= d ? 0 : (d - served) / d;
        out->goodput_tok_per_s += s->goodput_by_first ? 0 : served < d ? served : d;
        demand += d;
        missed += d * out->miss[t];
        out->violations[t] = d * out->miss[t];
    }
    out->pooled = demand > 0 ? missed / demand : 0; /* requests in proportion to demand */
    if (s->goodput_by_first)
        out->goodput_tok_per_s = c[0];
    return SS_OK;
}

/* The best allocation by enumeration: lowest worst miss, then the highest goodput, then the
 * lexicographically smallest (enumerated in that order, so the first best stays). */
static void enumerate(const runner_alloc_problem *p, judge_state *s, uint32_t *c, uint32_t t,
                      uint32_t left, uint32_t *best, double *best_worst, double *best_good)
{
    if (t == p->n_tenants) {
        runner_alloc_score sc = {0};
        ss_errbuf eb = {""};
        assert_int_equal(judge_fn(s, c, &sc, &eb), SS_OK);
        double worst = 0;
        for (uint32_t k = 0; k < p->n_tenants; k++)
            worst = sc.miss[k] > worst ? sc.miss[k] : worst;
        if (worst < *best_worst ||
            (worst == *best_worst && sc.goodput_tok_per_s > *best_good)) {
            *best_worst = worst;
            *best_good = sc.goodput_tok_per_s;
            memcpy(best, c, p->n_tenants * sizeof *c);
        }
        return;
    }
    for (c[t] = 1; c[t] * p->unit[t] <= left; c[t]++)
        enumerate(p, s, c, t + 1, left - c[t] * p->unit[t], best, best_worst, best_good);
}

/* Three tenants on 8 GPUs whose containers serve 100, 300 and 50 tok/s: demand 600, 200,
 * 100 would need 6 + 1 + 2 = 9; the proportional start (5, 2, 1) starves tenant 2, and the
 * best is (5, 1, 2), worst miss 1/6. */
static void test_known_best(void **state)
{
    (void)state;
    runner_alloc_problem p = {.n_tenants = 3, .gpus = 8, .unit = {1, 1, 1},
                              .demand_tok_per_s = {600, 200, 100},
                              .max_replays = RUNNER_STATIC_BEST_MAX_REPLAYS};
    judge_state s = {.p = &p, .capacity = {100, 300, 50}};
    runner_alloc_result r;
    ss_errbuf eb = {""};
    assert_int_equal(runner_alloc_search(&p, judge_fn, &s, &r, &eb), SS_OK);
    assert_int_equal(r.start[0], 5);
    assert_int_equal(r.start[1], 2);
    assert_int_equal(r.start[2], 1);
    uint32_t best[SS_MAX_TENANTS], c[SS_MAX_TENANTS];
    double best_worst = 2, best_good = -1;
    judge_state e = s;
    enumerate(&p, &e, c, 0, p.gpus, best, &best_worst, &best_good);
    assert_int_equal(best[0], 5);
    assert_int_equal(best[1], 1);
    assert_int_equal(best[2], 2);
    assert_memory_equal(r.containers, best, 3 * sizeof *best);
    assert_true(r.score.worst == best_worst);
    assert_true(r.score.miss[0] == best_worst && r.score.miss[2] == 0);
    /* the start, its two moves into tenant 2, one move into tenant 0 that does not help */
    assert_int_equal(r.n_replays, 4);
    assert_int_equal(s.calls, 4);
    assert_false(r.capped);
    tu_assert_no_leaks();
}

/* The cap: two replays judge the start and one neighbour; the better of them is chosen. */
static void test_cap(void **state)
{
    (void)state;
    runner_alloc_problem p = {.n_tenants = 3, .gpus = 8, .unit = {1, 1, 1},
                              .demand_tok_per_s = {600, 200, 100}, .max_replays = 2};
    judge_state s = {.p = &p, .capacity = {100, 300, 50}};
    runner_alloc_result r;
    ss_errbuf eb = {""};
    assert_int_equal(runner_alloc_search(&p, judge_fn, &s, &r, &eb), SS_OK);
    assert_int_equal(r.n_replays, 2);
    assert_int_equal(s.calls, 2);
    assert_true(r.capped);
    /* (4, 2, 2): worst 1/3, better than the start's 1/2 */
    assert_int_equal(r.containers[0], 4);
    assert_int_equal(r.containers[1], 2);
    assert_int_equal(r.containers[2], 2);
    p.max_replays = 1;
    s.calls = 0;
    assert_int_equal(runner_alloc_search(&p, judge_fn, &s, &r, &eb), SS_OK);
    assert_int_equal(r.n_replays, 1);
    assert_memory_equal(r.containers, r.start, 3 * sizeof *r.start);
}

/* Equal misses everywhere: no move improves, so the start and its neighbours are judged once
 * each, and the tie goes to the higher goodput, then to the smallest allocation. */
static void test_ties(void **state)
{
    (void)state;
    runner_alloc_problem p = {.n_tenants = 3, .gpus = 8, .unit = {1, 1, 1},
                              .demand_tok_per_s = {1, 1, 1}, .max_replays = 24};
    judge_state s = {.p = &p, .const_miss = 0.5};
    runner_alloc_result r;
    ss_errbuf eb = {""};
    assert_int_equal(runner_alloc_search(&p, judge_fn, &s, &r, &eb), SS_OK);
    assert_int_equal(r.start[0], 3); /* shares of 8/3: ties go to the first tenants */
    assert_int_equal(r.start[1], 3);
    assert_int_equal(r.start[2], 2);
    assert_int_equal(r.n_replays, 7); /* the start and two moves into each tenant */
    assert_int_equal(r.containers[0], 2);
    assert_int_equal(r.containers[1], 3);
    assert_int_equal(r.containers[2], 3);
    s = (judge_state){.p = &p, .const_miss = 0.5, .goodput_by_first = 1};
    assert_int_equal(runner_alloc_search(&p, judge_fn, &s, &r, &eb), SS_OK);
    assert_int_equal(r.containers[0], 4); /* (4, 2, 2) and (4, 3, 1): the smaller */
    assert_int_equal(r.containers[1], 2);
    assert_int_equal(r.containers[2], 2);
    assert_true(r.score.goodput_tok_per_s == 4);
    s = (judge_state){.p = &p, .capacity = {1, 1, 1}};
    assert_int_equal(runner_alloc_search(&p, judge_fn, &s, &r, &eb), SS_OK);
    assert_int_equal(r.n_replays, 1); /* nothing misses at the start: nothing to improve */
}

/* A tie for the worst miss: containers of tenants 0 and 1 serve 80 tok/s of 300, tenant 2's
 * 300 of 300, so the proportional start (3, 3, 3) misses 0.2, 0.2, 0. No single move lowers
 * the worst (a container more for tenant 0 leaves tenant 1 at 0.2), yet two do: (4, 4, 1)
 * misses nothing. The climb steps by the sorted misses (0.2, 0.2, 0) -> (0.2, 0, 0) -> 0. */
static void test_tied_worst(void **state)
{
    (void)state;
    runner_alloc_problem p = {.n_tenants = 3, .gpus = 9, .unit = {1, 1, 1},
                              .demand_tok_per_s = {300, 300, 300}, .max_replays = 24};
    judge_state s = {.p = &p, .capacity = {80, 80, 300}};
    runner_alloc_result r;
    ss_errbuf eb = {""};
    assert_int_equal(runner_alloc_search(&p, judge_fn, &s, &r, &eb), SS_OK);
    assert_int_equal(r.start[0], 3);
    assert_int_equal(r.start[1], 3);
    assert_int_equal(r.start[2], 3);
    assert_int_equal(r.containers[0], 4);
    assert_int_equal(r.containers[1], 4);
    assert_int_equal(r.containers[2], 1);
    assert_true(r.score.worst == 0);
    assert_false(r.capped);
}

/* Containers of 2 GPUs, a tenant with no load at all (still one container), and errors. */
static void test_minimum_and_errors(void **state)
{
    (void)state;
    runner_alloc_problem p = {.n_tenants = 3, .gpus = 9, .unit = {2, 1, 4},
                              .demand_tok_per_s = {1000, 0, 50}, .max_replays = 24};
    judge_state s = {.p = &p, .capacity = {100, 100, 100}};
    runner_alloc_result r;
    ss_errbuf eb = {""};
    assert_int_equal(runner_alloc_search(&p, judge_fn, &s, &r, &eb), SS_OK);
    assert_int_equal(r.start[1], 1);
    assert_int_equal(r.start[2], 1);
    assert_int_equal(r.start[0], 2); /* 9 - 1 - 4 GPUs hold two 2-GPU containers */
    assert_int_equal(r.containers[0], 2);
    assert_int_equal(r.containers[1], 1);
    assert_int_equal(r.containers[2], 1);
    /* a cluster too small for one of each */
    p.gpus = 6;
    assert_int_equal(runner_alloc_search(&p, judge_fn, &s, &r, &eb), SS_EINVAL);
    assert_non_null(strstr(eb.msg, "one container of each of the 3 tenants needs 7 GPUs, "
                                   "the cluster has 6"));
    p.gpus = 9;
    p.max_replays = 0;
    assert_int_equal(runner_alloc_search(&p, judge_fn, &s, &r, &eb), SS_EINVAL);
    p.max_replays = RUNNER_STATIC_BEST_MAX_REPLAYS + 1;
    assert_int_equal(runner_alloc_search(&p, judge_fn, &s, &r, &eb), SS_EINVAL);
    p.max_replays = 24;
    p.unit[1] = 0;
    assert_int_equal(runner_alloc_search(&p, judge_fn, &s, &r, &eb), SS_EINVAL);
    p.unit[1] = 1;
    s.calls = 0;
    s.fail_call = 2;
    p.demand_tok_per_s[1] = 500; /* tenant 1 starved at the start: a second call is made */
    assert_int_equal(runner_alloc_search(&p, judge_fn, &s, &r, &eb), SS_EIO);
    assert_string_equal(eb.msg, "judge 2 failed");
    tu_assert_no_leaks();
}

/* The criterion the chosen allocation is best by. test_known_best's problem: per tenant (the
 * worst miss) the best is (5, 1, 2), worst 1/6, pooled 100/900; pooled the best is (6, 1, 1),
 * which leaves tenant 2 half unserved (worst 1/2) but only 50 of 900 tok/s unserved in all, a
 * move the worst-tenant climb never tries (it gives the worst tenant a container, never takes
 * one from it); judged on tenant 2 alone, (5, 1, 2) again, by leximin among those serving it
 * fully. */
static void test_criterion(void **state)
{
    (void)state;
    static const struct {
        runner_criterion crit;
        uint32_t i_tenant, want[3];
        double judged;
    } cases[] = {{RUNNER_CRIT_WORST, 0, {5, 1, 2}, 1.0 / 6},
                 {RUNNER_CRIT_POOLED, 0, {6, 1, 1}, 50.0 / 900},
                 {RUNNER_CRIT_TENANT, 2, {5, 1, 2}, 0}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        runner_alloc_problem p = {.n_tenants = 3, .gpus = 8, .unit = {1, 1, 1},
                                  .demand_tok_per_s = {600, 200, 100},
                                  .max_replays = RUNNER_STATIC_BEST_MAX_REPLAYS,
                                  .criterion = cases[k].crit, .i_tenant = cases[k].i_tenant};
        judge_state s = {.p = &p, .capacity = {100, 300, 50}};
        runner_alloc_result r;
        ss_errbuf eb = {""};
        assert_int_equal(runner_alloc_search(&p, judge_fn, &s, &r, &eb), SS_OK);
        assert_memory_equal(r.containers, cases[k].want, sizeof cases[k].want);
        double got = cases[k].crit == RUNNER_CRIT_POOLED ? r.score.pooled
                   : cases[k].crit == RUNNER_CRIT_TENANT ? r.score.miss[2] : r.score.worst;
        assert_true(fabs(got - cases[k].judged) < 1e-12);
    }
    /* a tenant criterion naming no tenant of the problem is refused */
    runner_alloc_problem p = {.n_tenants = 3, .gpus = 8, .unit = {1, 1, 1},
                              .demand_tok_per_s = {600, 200, 100}, .max_replays = 10,
                              .criterion = RUNNER_CRIT_TENANT, .i_tenant = 3};
    judge_state s = {.p = &p, .capacity = {100, 300, 50}};
    runner_alloc_result r;
    ss_errbuf eb = {""};
    assert_int_equal(runner_alloc_search(&p, judge_fn, &s, &r, &eb), SS_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_best),
        cmocka_unit_test(test_criterion),
        cmocka_unit_test(test_cap),
        cmocka_unit_test(test_ties),
        cmocka_unit_test(test_tied_worst),
        cmocka_unit_test(test_minimum_and_errors),
    };
    return cmocka_run_group_tests_name("static_best", tests, NULL, NULL);
}
