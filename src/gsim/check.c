/* --check's per-event invariants over time (see check.h): the clock, each request's tokens
 * against what the previous event left, and request conservation. Not for the state-only
 * invariants, which are gmg_check's. */
#include "gsim/check.h"

#include "core/ss_alloc.h"

#include <stdio.h>
#include <string.h>

/* "invariant violated after event KIND (TARGET ID) at T s: " in front of eb's message. */
static int blame(const gsim_check_event *ev, ss_errbuf *eb)
{
    char target[48] = "";
    if (ev->target)
        snprintf(target, sizeof target, " (%s %u)", ev->target, ev->target_id);
    return ss_err_prefix(eb, SS_ECHECK, "invariant violated after event %s%s at %.9f s",
                         ev->kind, target, ss_time_to_s(ev->at));
}

static int ensure_slots(gsim_checker *k, size_t n)
{
    if (n <= k->cap)
        return SS_OK;
    size_t old = k->cap;
    if (ss_grow((void **)&k->slots, &k->cap, n, sizeof *k->slots))
        return SS_ENOMEM;
    memset(k->slots + old, 0, (k->cap - old) * sizeof *k->slots);
    return SS_OK;
}

/* Request slot r against what the previous check saw of the same request. */
static int check_progress(const gsim_check_slot *was, const gmg_req *q, gmg_id r, ss_time now,
                          ss_errbuf *eb)
{
    unsigned long long id = (unsigned long long)q->trace_id;
    if (q->arrival > now || (q->first_token >= 0 && q->last_token > now))
        return ss_err(eb, SS_ECHECK, "request %llu (slot %u): arrival %lld or latest token %lld "
                      "ns lies after the clock", id, r, (long long)q->arrival,
                      (long long)q->last_token);
    if (was->serial != q->serial)
        return SS_OK; /* a new request in this slot: nothing to compare with */
    if (q->generated < was->generated)
        return ss_err(eb, SS_ECHECK, "request %llu (slot %u): generated tokens went back from %u "
                      "to %u", id, r, was->generated, q->generated);
    if (was->first_token >= 0 && q->first_token != was->first_token)
        return ss_err(eb, SS_ECHECK, "request %llu (slot %u): first token time moved from %lld "
                      "to %lld ns", id, r, (long long)was->first_token,
                      (long long)q->first_token);
    if (was->first_token >= 0 && q->last_token < was->last_token)
        return ss_err(eb, SS_ECHECK, "request %llu (slot %u): latest token time went back from "
                      "%lld to %lld ns", id, r, (long long)was->last_token,
                      (long long)q->last_token);
    return SS_OK;
}

static int check_conserved(const gmg *g, const gsim_check_counts *n, ss_errbuf *eb)
{
    if (!n->conserve || n->arrived == n->completed + n->rejected + g->in_flight)
        return SS_OK;
    return ss_err(eb, SS_ECHECK, "conservation: %llu arrived != %llu completed + %llu rejected "
                  "+ %u in flight", (unsigned long long)n->arrived,
                  (unsigned long long)n->completed, (unsigned long long)n->rejected,
                  g->in_flight);
}

/* Request slot r against the previous check's view of it, which it then replaces. */
static int check_slot(gsim_checker *k, const gmg_req *q, gmg_id r, ss_time now, ss_errbuf *eb)
{
    gsim_check_slot *was = &k->slots[r];
    if (q->state == GMG_REQ_FREE) {
        was->serial = 0;
        return SS_OK;
    }
    int rc = check_progress(was, q, r, now, eb);
    if (!rc)
        *was = (gsim_check_slot){q->serial, q->generated, q->first_token, q->last_token};
    return rc;
}

/* Whether this event gets the full check (see check.h). */
static int full_turn(gsim_checker *k, const gmg *g)
{
    uint64_t budget = k->budget ? k->budget : GSIM_CHECK_BUDGET;
    if (g->n_slots > budget && k->credit + budget < g->n_slots) {
        k->credit += budget;
        k->n_active++;
        return 0;
    }
    k->credit = 0;
    k->n_full++;
    return 1;
}

/* Whether this event walks the prefix caches and the KV pool: their counters are checked after every event,
 * their structure (O(cache blocks)) about every cache size / budget events, so that a check
 * costs O(budget) on average. Small caches (the tests') are walked after every event. */
static int deep_cache_turn(gsim_checker *k, const gmg *g)
{
    uint64_t units = gmg_pc_check_units(g) + gmg_kvp_check_units(g);
    uint64_t budget = k->budget ? k->budget : GSIM_CHECK_BUDGET;
    if (!units)
        return 0;
    k->pc_credit += budget * 4;
    if (k->pc_credit < units)
        return 0;
    k->pc_credit = 0;
    return 1;
}

int gsim__check_event(gsim_checker *k, const gmg *g, const gsim_check_event *ev,
                      const gsim_check_counts *n, ss_errbuf *eb)
{
    if (k->started && ev->at < k->last) {
        ss_err(eb, SS_ECHECK, "clock went back from %lld to %lld ns", (long long)k->last,
               (long long)ev->at);
        return blame(ev, eb);
    }
    k->started = 1;
    k->last = ev->at;
    int full = full_turn(k, g);
    int rc = gmg_check_mode(g, full, deep_cache_turn(k, g), eb);
    if (!rc)
        rc = check_conserved(g, n, eb);
    if (rc)
        return blame(ev, eb);
    if (ensure_slots(k, g->n_slots))
        return ss_err(eb, SS_ENOMEM, "--check: out of memory");
    for (gmg_id r = 0; full && r < g->n_slots; r++)
        if ((rc = check_slot(k, &g->reqs[r], r, ev->at, eb)))
            return blame(ev, eb);
    for (uint32_t i = 0; !full && i < g->n_ctrs; i++) {
        const gmg_container *c = &g->ctrs[i];
        const gmg_list *lists[2] = {&c->running, &c->swapped};
        for (int li = 0; li < 2; li++)
            for (gmg_id r = lists[li]->head; r != GMG_NONE; r = g->reqs[r].next)
                if ((rc = check_slot(k, &g->reqs[r], r, ev->at, eb)))
                    return blame(ev, eb);
    }
    return SS_OK;
}

int gsim__check_end(const gmg *g, const gsim_check_counts *n, int cut, ss_errbuf *eb)
{
    if (n->arrived != n->completed + n->rejected + g->in_flight || (!cut && g->in_flight))
        return ss_err(eb, SS_ECHECK, "conservation at the end of the run: %llu arrived != %llu "
                      "completed + %llu rejected%s (%u in flight)",
                      (unsigned long long)n->arrived, (unsigned long long)n->completed,
                      (unsigned long long)n->rejected,
                      cut ? " + those in flight (the run was cut short)" : "", g->in_flight);
    return SS_OK;
}

void gsim__check_fini(gsim_checker *k)
{
    ss_free(k->slots);
    memset(k, 0, sizeof *k);
}
