/* The static-best allocation search (runner/static_best.h) on synthetic judges with known
 * answers: a saturating miss rate per tenant whose best allocation is checked against an
 * exhaustive enumeration, the proportional start, ties (goodput, then the lexicographically
 * smallest allocation), a tie for the worst miss that two moves resolve, the replay cap, the one-container minimum with unequal container
 * sizes and a tenant without load, and errors (a cluster too small, bad options, a judge
 * that fails). Every judged allocation is checked to keep one container per tenant and fit.
 * Then the knob search (runner/knob_search.h) on a table of misses: its path, its stop at a
 * zero miss, the cap, the criterion, ties and errors; and the parsing of KEY=V1|V2|... */
#include "support/test_util.h"

#include "core/ss_err.h"
#include "runner/bundle.h"
#include "runner/knob_search.h"
#include "runner/static_best.h"

#include <math.h>
#include <string.h>

typedef struct judge_state {
    const runner_alloc_problem *p;
    double capacity[SS_MAX_TENANTS]; /* tok/s one container serves (0: constant miss) */
    double const_miss;               /* every tenant's miss when capacity is 0 */
    int goodput_by_first;            /* goodput = containers of tenant 0 (else the served) */
    int calls, fail_call;            /* fail_call: the call that returns SS_EIO (0: none) */
    int stop;                        /* stop candidates as a replay would (stop_partial) */
    int n_stopped;                   /* candidates stopped */
} judge_state;

/* What a judge that stops early may return for a candidate whose miss by p's criterion
 * exceeds above: the least a stopped replay could know, each miss (and the pooled one) cut
 * to just above `above`, the violations in proportion, no goodput. 1 when it stopped. */
static int stop_partial(const runner_alloc_problem *p, double above, runner_alloc_score *out)
{
    runner_alloc_score s = *out;
    for (uint32_t t = 0; t < p->n_tenants; t++)
        s.worst = s.miss[t] > s.worst ? s.miss[t] : s.worst;
    if (!(runner_alloc_judged(p, &s) > above))
        return 0;
    double just = nextafter(above, INFINITY);
    for (uint32_t t = 0; t < p->n_tenants; t++) {
        double cut = fmin(out->miss[t], just);
        out->violations[t] = out->miss[t] > 0 ? out->violations[t] * cut / out->miss[t] : 0;
        out->miss[t] = cut;
    }
    out->pooled = fmin(out->pooled, just);
    out->goodput_tok_per_s = 0;
    out->stopped = 1;
    return 1;
}

/* Tenant t misses the share of its demand its containers cannot serve. */
static int judge_fn(void *ud, const uint32_t *c, double above, runner_alloc_score *out,
                    ss_errbuf *eb)
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
    if (s->stop)
        s->n_stopped += stop_partial(p, above, out);
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
        assert_int_equal(judge_fn(s, c, INFINITY, &sc, &eb), SS_OK);
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

/* Containers of unequal sizes with no free GPUs (GPU shares beside a whole-GPU tenant): tenant
 * 0's containers take 4 units, tenant 1's 1 unit, 9 units in all, and only tenant 0 is short
 * (it serves 50 of its 100 tok/s). Giving it a container takes four of tenant 1's: the search
 * finds it only with multi_take; without it the start stands, no neighbour judged. */
static void test_multi_take(void **state)
{
    (void)state;
    for (int multi = 0; multi < 2; multi++) {
        runner_alloc_problem p = {.n_tenants = 2, .gpus = 9, .unit = {4, 1},
                                  .demand_tok_per_s = {100, 100},
                                  .max_replays = RUNNER_STATIC_BEST_MAX_REPLAYS,
                                  .multi_take = multi};
        judge_state s = {.p = &p, .capacity = {50, 100}};
        runner_alloc_result r;
        ss_errbuf eb = {""};
        assert_int_equal(runner_alloc_search(&p, judge_fn, &s, &r, &eb), SS_OK);
        assert_int_equal(r.start[0], 1); /* 4.5 units each: one container, and five */
        assert_int_equal(r.start[1], 5);
        assert_int_equal(r.containers[0], multi ? 2 : 1);
        assert_int_equal(r.containers[1], multi ? 1 : 5);
        assert_true(r.score.worst == (multi ? 0 : 0.5));
        assert_int_equal(r.n_replays, multi ? 2 : 1);
    }
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

/* A table of two tenants' misses and goodput over knobs A (3 values) and B (2 values). */
typedef struct knob_table {
    double miss[3][2][2];
    double goodput[3][2];
    int calls, fail_call;
    int seen[3][2];
    const runner_alloc_problem *p; /* with stop: the problem its candidates are judged by */
    int stop, n_stopped;           /* stop candidates as a replay would (stop_partial) */
} knob_table;

static int knob_fn(void *ud, const int *choice, double above, runner_alloc_score *out,
                   ss_errbuf *eb)
{
    knob_table *t = ud;
    int a = choice[0], b = choice[1];
    assert_true(a >= 0 && a < 3 && b >= 0 && b < 2);
    if (++t->calls == t->fail_call)
        return ss_err(eb, SS_EIO, "judge %d failed", t->calls);
    t->seen[a][b]++;
    out->miss[0] = t->miss[a][b][0];
    out->miss[1] = t->miss[a][b][1];
    out->violations[0] = 10 * out->miss[0]; /* tenant 0: 10 requests, tenant 1: 1 */
    out->violations[1] = out->miss[1];
    out->pooled = (out->violations[0] + out->violations[1]) / 11;
    out->goodput_tok_per_s = t->goodput[a][b];
    if (t->stop)
        t->n_stopped += stop_partial(t->p, above, out);
    return SS_OK;
}

static runner_knobs two_knobs(void)
{
    runner_knobs k = {.n = 2};
    snprintf(k.knob[0].key, sizeof k.knob[0].key, "policy.a");
    snprintf(k.knob[1].key, sizeof k.knob[1].key, "policy.b");
    k.knob[0].n = 3;
    k.knob[1].n = 2;
    return k;
}

/* The path: start (0,0) worst 0.5; A=1 0.3 and A=2 0.4 -> A=1; then B=1 at A=1 0.1 -> (1,1),
 * 4 replays, (2,1) (the global best, 0.05) never judged: one pass, one knob at a time. Zero
 * at the start: one replay. The cap: the best of what was judged. */
static void test_knob_path(void **state)
{
    (void)state;
    knob_table t = {.miss = {{{0.5, 0}, {0.45, 0}}, {{0.3, 0}, {0.1, 0}}, {{0.4, 0}, {0.05, 0}}}};
    runner_knobs k = two_knobs();
    runner_alloc_problem p = {.n_tenants = 2, .max_replays = 24};
    runner_knob_result r;
    ss_errbuf eb = {""};
    assert_int_equal(runner_knob_search(&k, &p, knob_fn, &t, &r, &eb), SS_OK);
    assert_int_equal(r.choice[0], 1);
    assert_int_equal(r.choice[1], 1);
    assert_int_equal(r.n_replays, 4);
    assert_int_equal(r.capped, 0);
    assert_true(r.score.worst == 0.1);
    assert_int_equal(t.seen[2][1], 0);
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 2; b++)
            assert_true(t.seen[a][b] <= 1); /* nothing judged twice */
    /* a zero miss at the start ends it */
    knob_table z = {0};
    assert_int_equal(runner_knob_search(&k, &p, knob_fn, &z, &r, &eb), SS_OK);
    assert_int_equal(r.n_replays, 1);
    assert_int_equal(r.choice[0], 0);
    /* the cap: two replays, (1,0) the better, capped */
    memset(t.seen, 0, sizeof t.seen);
    p.max_replays = 2;
    assert_int_equal(runner_knob_search(&k, &p, knob_fn, &t, &r, &eb), SS_OK);
    assert_int_equal(r.n_replays, 2);
    assert_int_equal(r.capped, 1);
    assert_int_equal(r.choice[0], 1);
    assert_int_equal(r.choice[1], 0);
    assert_true(r.score.worst == 0.3);
}

/* The criterion: tenant 0 (10 requests) misses 0.2 at A=1 where tenant 1 misses 0.9; at A=0
 * tenant 0 misses 0.5 and tenant 1 none. Worst prefers A=0 (0.5 < 0.9), pooled A=1 (2.9/11
 * < 5/11), tenant 1 A=0 (0, where it stops). Ties: the same misses at A=0 and A=2 and a higher goodput at 2
 * -> A=2; equal goodput too -> the earlier judged stays. */
static void test_knob_criterion(void **state)
{
    (void)state;
    knob_table t = {.miss = {{{0.5, 0}, {0.5, 0}}, {{0.2, 0.9}, {0.2, 0.9}},
                             {{0.6, 0}, {0.6, 0}}}};
    runner_knobs k = two_knobs();
    k.knob[1].n = 1; /* B fixed: 1 value, nothing to try */
    runner_knob_result r;
    ss_errbuf eb = {""};
    static const struct {
        runner_criterion crit;
        uint32_t i_tenant;
        int want, replays;
    } cases[] = {{RUNNER_CRIT_WORST, 0, 0, 3}, {RUNNER_CRIT_POOLED, 0, 1, 3},
                 {RUNNER_CRIT_TENANT, 1, 0, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        runner_alloc_problem p = {.n_tenants = 2, .max_replays = 24, .criterion = cases[c].crit,
                                  .i_tenant = cases[c].i_tenant};
        assert_int_equal(runner_knob_search(&k, &p, knob_fn, &t, &r, &eb), SS_OK);
        assert_int_equal(r.choice[0], cases[c].want);
        assert_int_equal(r.n_replays, cases[c].replays);
    }
    knob_table u = {.miss = {{{0.5, 0}, {0.5, 0}}, {{0.7, 0}, {0.7, 0}}, {{0.5, 0}, {0.5, 0}}},
                    .goodput = {{10, 10}, {50, 50}, {20, 20}}};
    runner_alloc_problem p = {.n_tenants = 2, .max_replays = 24};
    assert_int_equal(runner_knob_search(&k, &p, knob_fn, &u, &r, &eb), SS_OK);
    assert_int_equal(r.choice[0], 2);
    u.goodput[2][0] = 10;
    assert_int_equal(runner_knob_search(&k, &p, knob_fn, &u, &r, &eb), SS_OK);
    assert_int_equal(r.choice[0], 0);
    /* errors: no knob, a cap out of range, a tenant out of range, a judge that fails */
    runner_knobs none = {0};
    assert_int_equal(runner_knob_search(&none, &p, knob_fn, &u, &r, &eb), SS_EINVAL);
    p.max_replays = 0;
    assert_int_equal(runner_knob_search(&k, &p, knob_fn, &u, &r, &eb), SS_EINVAL);
    p.max_replays = RUNNER_STATIC_BEST_MAX_REPLAYS + 1;
    assert_int_equal(runner_knob_search(&k, &p, knob_fn, &u, &r, &eb), SS_EINVAL);
    p = (runner_alloc_problem){.n_tenants = 2, .max_replays = 24,
                               .criterion = RUNNER_CRIT_TENANT, .i_tenant = 2};
    assert_int_equal(runner_knob_search(&k, &p, knob_fn, &u, &r, &eb), SS_EINVAL);
    p.criterion = RUNNER_CRIT_WORST;
    u.calls = 0;
    u.fail_call = 2;
    assert_int_equal(runner_knob_search(&k, &p, knob_fn, &u, &r, &eb), SS_EIO);
    assert_string_equal(eb.msg, "judge 2 failed");
}

/* A small deterministic generator for the random problems below. */
static double rnd(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*x >> 11) / 9007199254740992.0;
}

/* Stopping candidates early (each certain to be worse than the allocation it neighbours,
 * judged as little as a stopped replay knows: stop_partial) leaves the search's path and
 * choice as they are in full: the same start, allocation, score, replays and cap on random
 * problems under every criterion, with ties (equal capacities and demands, goodput by the
 * first tenant's containers). Some candidates do stop. */
static void test_stop_same_path(void **state)
{
    (void)state;
    uint64_t x = 42;
    int stopped = 0;
    for (int k = 0; k < 300; k++) {
        runner_alloc_problem p = {.n_tenants = 2 + (uint32_t)(rnd(&x) * 3),
                                  .gpus = 4 + (uint32_t)(rnd(&x) * 9),
                                  .max_replays = 3 + (int)(rnd(&x) * 22),
                                  .criterion = (runner_criterion)(k % 3)};
        p.i_tenant = (uint32_t)(rnd(&x) * p.n_tenants);
        judge_state s = {.p = &p, .goodput_by_first = rnd(&x) < 0.3};
        for (uint32_t t = 0; t < p.n_tenants; t++) {
            p.unit[t] = rnd(&x) < 0.2 ? 2 : 1;
            p.demand_tok_per_s[t] = 100 * (double)(int)(rnd(&x) * 7);
            s.capacity[t] = 50 * (1 + (double)(int)(rnd(&x) * 4));
        }
        runner_alloc_result full, part;
        ss_errbuf eb = {""};
        int rc = runner_alloc_search(&p, judge_fn, &s, &full, &eb);
        s.stop = 1;
        assert_int_equal(runner_alloc_search(&p, judge_fn, &s, &part, &eb), rc);
        if (rc)
            continue; /* one container each does not fit: refused alike */
        assert_memory_equal(part.start, full.start, sizeof full.start);
        assert_memory_equal(part.containers, full.containers, sizeof full.containers);
        assert_memory_equal(&part.score, &full.score, sizeof full.score);
        assert_int_equal(part.n_replays, full.n_replays);
        assert_int_equal(part.capped, full.capped);
        assert_int_equal(part.score.stopped, 0);
        stopped += s.n_stopped;
    }
    assert_true(stopped > 50);
}

/* The same for the knob search: random tables of misses (on a grid of 0.1, so that ties
 * happen) and goodput under every criterion: the same choice, score and replays with
 * candidates stopped as for those judged in full. */
static void test_knob_stop_same_path(void **state)
{
    (void)state;
    uint64_t x = 7;
    int stopped = 0;
    runner_knobs k = two_knobs();
    for (int n = 0; n < 300; n++) {
        runner_alloc_problem p = {.n_tenants = 2, .max_replays = 2 + (int)(rnd(&x) * 5),
                                  .criterion = (runner_criterion)(n % 3),
                                  .i_tenant = (uint32_t)(rnd(&x) * 2)};
        knob_table t = {.p = &p};
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 2; b++) {
                t.miss[a][b][0] = (double)(int)(rnd(&x) * 6) / 10;
                t.miss[a][b][1] = (double)(int)(rnd(&x) * 6) / 10;
                t.goodput[a][b] = (double)(int)(rnd(&x) * 3);
            }
        runner_knob_result full, part;
        ss_errbuf eb = {""};
        assert_int_equal(runner_knob_search(&k, &p, knob_fn, &t, &full, &eb), SS_OK);
        t.stop = 1;
        assert_int_equal(runner_knob_search(&k, &p, knob_fn, &t, &part, &eb), SS_OK);
        assert_memory_equal(part.choice, full.choice, sizeof full.choice);
        assert_memory_equal(&part.score, &full.score, sizeof full.score);
        assert_int_equal(part.n_replays, full.n_replays);
        assert_int_equal(part.capped, full.capped);
        stopped += t.n_stopped;
    }
    assert_true(stopped > 50);
}

/* KEY=V1|V2|... in a bundle: the searched keys and values in order; slice-tuned's start at
 * SliceScheduler's defaults; which bundles search; malformed lists refused. */
static void test_knob_parse(void **state)
{
    (void)state;
    runner_knobs k;
    ss_errbuf eb = {""};
    assert_int_equal(runner_bundle_knobs("x:policy.ops=slice+policy.slice_period_ms=20|5+"
                                         "tenant.chat.replicas=1|2|3", &k, &eb), SS_OK);
    assert_int_equal(k.n, 2);
    assert_string_equal(k.knob[0].key, "policy.slice_period_ms");
    assert_int_equal(k.knob[0].n, 2);
    assert_string_equal(k.knob[0].value[1], "5");
    assert_string_equal(k.knob[1].key, "tenant.chat.replicas");
    assert_int_equal(k.knob[1].n, 3);
    assert_string_equal(k.knob[1].value[2], "3");
    assert_int_equal(runner_bundle_knobs("slice-tuned", &k, &eb), SS_OK);
    assert_int_equal(k.n, 4);
    static const char *const keys[] = {"policy.slice_period_ms", "policy.slice_max_whatifs",
                                       "policy.slice_horizon_ms", "policy.slice_overrun_ms"};
    static const char *const defaults[] = {"20", "4", "500", "1"}; /* place_slice.c's */
    for (int i = 0; i < 4; i++) {
        assert_string_equal(k.knob[i].key, keys[i]);
        assert_string_equal(k.knob[i].value[0], defaults[i]);
    }
    assert_true(runner_bundle_searches("slice-tuned"));
    assert_true(runner_bundle_searches("llumnix-sized"));
    assert_true(runner_bundle_searches_alloc("llumnix-sized"));
    assert_false(runner_bundle_searches_alloc("slice-tuned"));
    assert_true(runner_bundle_searches("x:policy.a=1|2"));
    assert_false(runner_bundle_searches("x:policy.a=1"));
    assert_false(runner_bundle_searches("slice"));
    static const char *const bad[] = {"x:policy.a=1||2", "x:policy.a=|1", "x:policy.a=1|",
                                      "x:policy.a=1|2+policy.a=3|4",
                                      "x:policy.a=1|2|3|4|5|6|7|8|9|10|11|12|13|14|15|16|17"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        eb.msg[0] = '\0';
        assert_int_equal(runner_bundle_knobs(bad[i], &k, &eb), SS_EPARSE);
        assert_true(eb.msg[0] != '\0');
    }
    assert_int_equal(runner_bundle_knobs("nope", &k, &eb), SS_EPARSE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_best),
        cmocka_unit_test(test_multi_take),
        cmocka_unit_test(test_criterion),
        cmocka_unit_test(test_cap),
        cmocka_unit_test(test_ties),
        cmocka_unit_test(test_tied_worst),
        cmocka_unit_test(test_minimum_and_errors),
        cmocka_unit_test(test_knob_path),
        cmocka_unit_test(test_knob_criterion),
        cmocka_unit_test(test_knob_parse),
        cmocka_unit_test(test_stop_same_path),
        cmocka_unit_test(test_knob_stop_same_path),
    };
    return cmocka_run_group_tests_name("static_best", tests, NULL, NULL);
}
