/* The static-best allocation search: a proportional start and a hill-climb on a judge
 * callback, whatever the judge is (replays in static_best_run.c, a synthetic function in the
 * unit test). Not for running scenarios. */
#include "runner/static_best.h"

#include <math.h>
#include <string.h>

/* One search under way: every allocation judged, in the order judged. */
typedef struct climb {
    const runner_alloc_problem *p;
    runner_alloc_judge_fn *fn;
    void *ud;
    uint32_t alloc[RUNNER_STATIC_BEST_MAX_REPLAYS][SS_MAX_TENANTS];
    runner_alloc_score score[RUNNER_STATIC_BEST_MAX_REPLAYS];
    int n;                     /* judged */
    int capped;                /* a judge call was refused by the cap */
} climb;

double runner_alloc_judged(const runner_alloc_problem *p, const runner_alloc_score *s)
{
    return p->criterion == RUNNER_CRIT_POOLED ? s->pooled
         : p->criterion == RUNNER_CRIT_TENANT ? s->miss[p->i_tenant] : s->worst;
}

static double judged(const climb *c, const runner_alloc_score *s)
{
    return runner_alloc_judged(c->p, s);
}

/* Whether allocation a (scored sa) is better than b: a lower miss by the criterion, then a
 * lower worst miss, then a higher goodput, then lexicographically smaller. */
static int better(const climb *c, const uint32_t *a, const runner_alloc_score *sa,
                  const uint32_t *b, const runner_alloc_score *sb)
{
    if (judged(c, sa) != judged(c, sb))
        return judged(c, sa) < judged(c, sb);
    if (sa->worst != sb->worst)
        return sa->worst < sb->worst;
    if (sa->goodput_tok_per_s != sb->goodput_tok_per_s)
        return sa->goodput_tok_per_s > sb->goodput_tok_per_s;
    for (uint32_t t = 0; t < c->p->n_tenants; t++)
        if (a[t] != b[t])
            return a[t] < b[t];
    return 0;
}

/* The misses of score s sorted from the highest down into out. */
static void sorted_misses(const climb *c, const runner_alloc_score *s, double *out)
{
    uint32_t n = c->p->n_tenants;
    memcpy(out, s->miss, n * sizeof *out);
    for (uint32_t i = 1; i < n; i++)
        for (uint32_t j = i; j > 0 && out[j] > out[j - 1]; j--) {
            double t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
}

/* Judged allocations a and b by their misses sorted from the highest down, compared
 * lexicographically (leximin: a lower worst miss, or the same worst and a lower second worst,
 * ...): < 0 when a's are lower, 0 equal, > 0 higher. The climb steps to a neighbour only when
 * its misses are lower in this order, so a tie for the worst miss does not stop it: giving
 * one of the tied tenants a container is a step, and the next step can serve the other. */
static int leximin(const climb *c, int a, int b)
{
    double ma[SS_MAX_TENANTS], mb[SS_MAX_TENANTS];
    sorted_misses(c, &c->score[a], ma);
    sorted_misses(c, &c->score[b], mb);
    for (uint32_t t = 0; t < c->p->n_tenants; t++)
        if (ma[t] != mb[t])
            return ma[t] < mb[t] ? -1 : 1;
    return 0;
}

/* Judged allocations a and b as places for the climb to go: < 0 when a is better, 0 equal,
 * > 0 worse. Under the worst criterion their misses by leximin; under another, the criterion's
 * miss first (the pooled one, or one tenant's), then leximin. */
static int step_cmp(const climb *c, int a, int b)
{
    if (c->p->criterion != RUNNER_CRIT_WORST) {
        double ja = judged(c, &c->score[a]), jb = judged(c, &c->score[b]);
        if (ja != jb)
            return ja < jb ? -1 : 1;
    }
    return leximin(c, a, b);
}

/* Judge allocation a (or find it judged already) into *i_out, exactly while its judged miss
 * is at most above: 0, 1 when the cap refused it, or the judge's error. */
static int judge(climb *c, const uint32_t *a, double above, int *i_out, ss_errbuf *eb)
{
    size_t size = c->p->n_tenants * sizeof *a;
    for (int i = 0; i < c->n; i++)
        if (!memcmp(c->alloc[i], a, size)) {
            *i_out = i;
            return 0;
        }
    if (c->n >= c->p->max_replays) {
        c->capped = 1;
        return 1;
    }
    runner_alloc_score *s = &c->score[c->n];
    *s = (runner_alloc_score){0};
    int rc = c->fn(c->ud, a, above, s, eb);
    if (rc)
        return rc;
    for (uint32_t t = 0; t < c->p->n_tenants; t++)
        s->worst = s->miss[t] > s->worst ? s->miss[t] : s->worst;
    memcpy(c->alloc[c->n], a, size);
    *i_out = c->n++;
    return 0;
}

static uint32_t used_gpus(const runner_alloc_problem *p, const uint32_t *a)
{
    uint32_t used = 0;
    for (uint32_t t = 0; t < p->n_tenants; t++)
        used += a[t] * p->unit[t];
    return used;
}

static int fits(const runner_alloc_problem *p, const uint32_t *a)
{
    return used_gpus(p, a) <= p->gpus && (!p->fits || p->fits(p->fits_ud, a));
}

/* The allocation proportional to demand into a: each tenant's share of the GPUs in whole
 * containers (at least one), trimmed where that overflows (or cannot be laid out: p->fits),
 * then a container at a time to the tenant furthest below its share while any fits. -1 when
 * one of each does not fit. */
static int proportional(const runner_alloc_problem *p, uint32_t *a)
{
    double sum = 0, share[SS_MAX_TENANTS];
    for (uint32_t t = 0; t < p->n_tenants; t++)
        sum += p->demand_tok_per_s[t];
    for (uint32_t t = 0; t < p->n_tenants; t++) {
        share[t] = sum > 0 ? p->gpus * p->demand_tok_per_s[t] / sum
                           : (double)p->gpus / p->n_tenants;
        double k = floor(share[t] / p->unit[t]);
        a[t] = k < 1 ? 1 : (uint32_t)k;
    }
    while (!fits(p, a)) {
        int i = -1;
        for (uint32_t t = 0; t < p->n_tenants; t++)
            if (a[t] > 1 && (i < 0 || a[t] * p->unit[t] - share[t] >
                                          a[i] * p->unit[i] - share[i]))
                i = (int)t;
        if (i < 0)
            return -1;
        a[i]--;
    }
    uint8_t full[SS_MAX_TENANTS] = {0}; /* a container more of it cannot be laid out */
    for (;;) {
        uint32_t spare = p->gpus - used_gpus(p, a);
        int i = -1;
        for (uint32_t t = 0; t < p->n_tenants; t++)
            if (!full[t] && p->unit[t] <= spare &&
                (i < 0 || share[t] - a[t] * p->unit[t] > share[i] - a[i] * p->unit[i]))
                i = (int)t;
        if (i < 0)
            return 0;
        a[i]++;
        if (!fits(p, a)) {
            a[i]--;
            full[i] = 1;
        }
    }
}

/* Judge the neighbours of allocation cur (judged miss at) that give tenant w one more
 * container: from the free GPUs, or from another tenant that keeps one. The best judged
 * (step_cmp, then better) goes to *i_best. A neighbour whose judged miss is certain to
 * exceed cur's may be judged in part: it is worse than cur by step_cmp and by better, so it
 * is not stepped to, and whichever neighbour is best by step_cmp is the same when one is
 * better than cur (when none is, the climb ends whichever it is). 0, 1 when the cap stopped
 * it, or the judge's error. */
static int neighbours(climb *c, const uint32_t *cur, double at, uint32_t w, int *i_best,
                      ss_errbuf *eb)
{
    const runner_alloc_problem *p = c->p;
    uint32_t spare = p->gpus - used_gpus(p, cur);
    for (int64_t d = -1; d < (int64_t)p->n_tenants; d++) {
        uint32_t nb[SS_MAX_TENANTS];
        memcpy(nb, cur, p->n_tenants * sizeof *nb);
        /* the containers d gives up: one, or under multi_take as many as w's needs */
        uint32_t take = 1;
        if (d >= 0 && p->multi_take && spare + p->unit[d] < p->unit[w])
            take = (p->unit[w] - spare + p->unit[d] - 1) / p->unit[d];
        if (d == (int64_t)w ||
            (d >= 0 && (cur[d] < take + 1 || spare + take * p->unit[d] < p->unit[w])) ||
            (d < 0 && spare < p->unit[w]))
            continue;
        if (d >= 0)
            nb[d] -= take;
        nb[w]++;
        if (p->fits && !p->fits(p->fits_ud, nb))
            continue; /* its layout does not fit the GPUs: not judged */
        int i, rc = judge(c, nb, at, &i, eb);
        if (rc)
            return rc;
        int cmp = *i_best < 0 ? -1 : step_cmp(c, i, *i_best);
        if (cmp < 0 || (!cmp && better(c, c->alloc[i], &c->score[i], c->alloc[*i_best],
                                       &c->score[*i_best])))
            *i_best = i;
    }
    return 0;
}

/* Whether tenant w is one the climb gives a container to from judged allocation s: under the
 * worst criterion a tenant with the worst miss; under the pooled one a tenant with the most
 * requests missing their SLA (the largest part of the pooled miss, which need not be the
 * worst tenant's: a large tenant missing a little can outweigh a small one missing all); under
 * the tenant criterion that tenant. */
static int receives(const climb *c, const runner_alloc_score *s, uint32_t w)
{
    if (c->p->criterion == RUNNER_CRIT_TENANT)
        return w == c->p->i_tenant;
    if (c->p->criterion == RUNNER_CRIT_WORST)
        return s->miss[w] == s->worst;
    for (uint32_t t = 0; t < c->p->n_tenants; t++)
        if (s->violations[t] > s->violations[w])
            return 0;
    return 1;
}

/* Hill-climb from judged allocation i: move to the best neighbour (a container more for a
 * tenant receives() names, the best by step_cmp, then goodput) while it is better by step_cmp.
 * Every step lowers step_cmp's order strictly, so the climb ends. 0 or the judge's error. */
static int hill_climb(climb *c, int i, ss_errbuf *eb)
{
    while (judged(c, &c->score[i]) > 0) {
        uint32_t cur[SS_MAX_TENANTS];
        memcpy(cur, c->alloc[i], sizeof cur);
        runner_alloc_score at = c->score[i];
        int i_best = -1, rc = 0;
        for (uint32_t w = 0; !rc && w < c->p->n_tenants; w++)
            if (receives(c, &at, w))
                rc = neighbours(c, cur, judged(c, &at), w, &i_best, eb);
        if (rc < 0)
            return rc;
        if (i_best < 0 || step_cmp(c, i_best, i) >= 0)
            return 0;
        i = i_best;
        if (rc)
            return 0; /* capped: the best so far stands */
    }
    return 0;
}

int runner_alloc_search(const runner_alloc_problem *p, runner_alloc_judge_fn *fn, void *ud,
                        runner_alloc_result *out, ss_errbuf *eb)
{
    *out = (runner_alloc_result){0};
    int ok = p->n_tenants >= 1 && p->n_tenants <= SS_MAX_TENANTS && p->max_replays >= 1 &&
             p->max_replays <= RUNNER_STATIC_BEST_MAX_REPLAYS &&
             (p->criterion != RUNNER_CRIT_TENANT || p->i_tenant < p->n_tenants);
    for (uint32_t t = 0; ok && t < p->n_tenants; t++)
        ok = p->unit[t] >= 1 && p->demand_tok_per_s[t] >= 0;
    if (!ok)
        return ss_err(eb, SS_EINVAL, "static-best: search options out of range");
    if (proportional(p, out->start)) {
        uint32_t one = 0;
        for (uint32_t t = 0; t < p->n_tenants; t++)
            one += p->unit[t];
        return ss_err(eb, SS_EINVAL, "static-best: one container of each of the %u tenants "
                      "needs %u GPUs, the cluster has %u", p->n_tenants, one, p->gpus);
    }
    climb c = {.p = p, .fn = fn, .ud = ud};
    int i, rc = judge(&c, out->start, INFINITY, &i, eb);
    if (!rc)
        rc = hill_climb(&c, i, eb);
    if (rc < 0)
        return rc;
    int b = 0;
    for (int k = 1; k < c.n; k++)
        if (better(&c, c.alloc[k], &c.score[k], c.alloc[b], &c.score[b]))
            b = k;
    memcpy(out->containers, c.alloc[b], sizeof out->containers);
    out->score = c.score[b];
    out->n_replays = c.n;
    out->capped = c.capped;
    return SS_OK;
}
