/* The capacity search: bracketing from load 1 and bisection on a probe callback, whatever the
 * probe is (a replay in capacity_run.c, a synthetic function in the unit test). Not for
 * running scenarios or writing results. */
#include "runner/capacity.h"

/* One search under way. */
typedef struct search {
    const runner_capacity_search_opts *s;
    runner_capacity_probe_fn *fn;
    void *ud;
    runner_capacity_result *r;
} search;

/* Probe load into the next slot: 1 if it passed, 0 if not, <0 on error. */
static int probe(search *x, double load, ss_errbuf *eb)
{
    runner_capacity_result *r = x->r;
    runner_capacity_probe *p = &r->probe[r->n_probes];
    /* Nothing passed yet and no lower load will be tried: should this one fail, it is the
     * search's row (the lowest load tried), whose figures are shown in full. */
    int last = r->n_probes + 1 >= x->s->max_probes || load / 2 < x->s->min_load;
    *p = (runner_capacity_probe){.load = load, .full = r->lo == 0 && last};
    int rc = x->fn(x->ud, p, eb);
    if (rc)
        return rc;
    p->pass = p->spans && p->sla_miss <= x->s->sla_miss;
    if (p->pass && load >= r->lo) {
        r->lo = load;
        r->i_best = r->n_probes;
    }
    if (!p->pass && (r->hi == 0 || load < r->hi))
        r->hi = load;
    r->n_probes++;
    return p->pass;
}

/* Double up from a passing load 1 until a load fails, or halve down from a failing one until
 * one passes. 0 or the probe's error. */
static int bracket(search *x, ss_errbuf *eb)
{
    const runner_capacity_search_opts *s = x->s;
    runner_capacity_result *r = x->r;
    int pass = probe(x, 1, eb);
    for (double load = 1; pass >= 0 && r->n_probes < s->max_probes;) {
        load = pass ? 2 * load : load / 2;
        if (load > s->max_load || load < s->min_load)
            break;
        int next = probe(x, load, eb);
        if (next != pass)
            return next < 0 ? next : 0;
    }
    return pass < 0 ? pass : 0;
}

int runner_capacity_search(const runner_capacity_search_opts *s, runner_capacity_probe_fn *fn,
                           void *ud, runner_capacity_result *out, ss_errbuf *eb)
{
    *out = (runner_capacity_result){.i_best = -1};
    if (!(s->sla_miss >= 0 && s->sla_miss <= 1) || !(s->tol > 0) || s->max_probes < 1 ||
        s->max_probes > RUNNER_CAPACITY_MAX_PROBES || !(s->min_load > 0) ||
        !(s->min_load <= 1) || !(s->max_load >= 1))
        return ss_err(eb, SS_EINVAL, "capacity: search options out of range");
    search x = {.s = s, .fn = fn, .ud = ud, .r = out};
    int rc = bracket(&x, eb);
    /* Bisect while the bracket is wider than tol; a non-monotone probe may leave hi <= lo,
     * which also ends it (there is nothing between). */
    while (!rc && out->lo > 0 && out->hi > out->lo && out->hi - out->lo > s->tol * out->lo &&
           out->n_probes < s->max_probes) {
        int pass = probe(&x, (out->lo + out->hi) / 2, eb);
        rc = pass < 0 ? pass : 0;
    }
    if (rc)
        return rc;
    out->status = out->lo == 0 ? RUNNER_CAP_BELOW : out->hi == 0 ? RUNNER_CAP_ABOVE
                                                                 : RUNNER_CAP_FOUND;
    out->capacity = out->lo;
    out->converged = out->status == RUNNER_CAP_FOUND && out->hi - out->lo <= s->tol * out->lo;
    for (int i = 0; out->status == RUNNER_CAP_FOUND && i < out->n_probes; i++) {
        const runner_capacity_probe *p = &out->probe[i];
        if (p->load == out->hi)
            out->censored = !p->spans && p->sla_miss <= s->sla_miss;
    }
    return SS_OK;
}

const char *runner_capacity_status_name(runner_capacity_status st)
{
    return st == RUNNER_CAP_BELOW ? "below" : st == RUNNER_CAP_ABOVE ? "above" : "found";
}
