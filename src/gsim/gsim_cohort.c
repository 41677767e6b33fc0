/* Decode cohorts: the running requests of a container that decode a token every step, kept
 * without touching them step by step.
 *
 * Under a policy with a decide_rest hook (Sarathi), a loaded container runs mixed steps: every
 * running decode makes a token, and a prefill chunk or two fill the token budget. Advancing
 * each decode at each step's end (its tokens, gap, SLA and window counts, its next KV block)
 * costs the batch size per step; a cohort makes it cost what changes. The container's steps
 * since the cohort formed are numbered 1, 2, ...; a member's fields stand as they were after
 * step lz_base (its base), and the cohort keeps per step what brings them up to date in O(1)
 * (O(log steps) for the longest gap): each step's end time T, the steps ending in the arrival
 * window so far W, and for each TBT bound the gaps above it so far O. A member decodes at
 * every step after its base, so after step K its tokens are its base's plus K - base, its gap
 * sum grows by T[K] minus its last token's time, its first gap is T[base + 1] minus that, and
 * its later gaps are the steps' (T[j] - T[j - 1]). What each step changes is counted without
 * the members: the KV blocks whose boundary the step's tokens cross (a member crosses one
 * every block_tokens steps: counted by residue of the step index, as steady runs do), the
 * members that make their last token (a heap by step, then running-list order: as the batch
 * lists them), the equal gaps into the metrics (one add per tier), the context the decodes
 * read (their sum grows by the member count each step). A member is brought up to date when it
 * finishes, and every member when the cohort dissolves: before the policy decides a step on
 * its own (an eviction, no queue left: the steady path's), at the end of gsim_advance (a
 * placement policy's what-if forks keep theirs until the policy reads the fork's graph,
 * gsim_place.c), when an offloaded prefill's request comes home (it rejoins the running list
 * outside the cohort's counts), and every COH_HIST steps (the tables restart). Only where
 * nothing else reads the members between steps (gs_coh_allowed; guest work on a container's
 * GPUs reads its iterations' times, not its requests). What-if forks keep cohorts too, in
 * tables a spare fork hands on; where an offloaded prefill is in flight (a what-if judging a
 * move), steady runs cannot take steady steps, and a cohort forms at those too.
 * The results are the same, byte for byte, as without. */
#include "gsim/gsim_int.h"

#include "core/ss_alloc.h"
#include "core/ss_log.h"

#include <string.h>

enum { COH_THR = 4, COH_TIERS = 4, COH_HIST = 4096 };

typedef struct coh_fin {
    uint32_t step;               /* the step whose end makes its last token */
    uint64_t seq;                /* its run_seq: finishing together, in running-list order */
    gmg_id r;
} coh_fin;

struct gs_cohort {
    uint8_t on;
    uint8_t in_flight;           /* step J has begun and not ended (K = J - 1) */
    uint32_t J, K;               /* steps begun, ended */
    uint32_t n;                  /* members */
    int64_t ctx_base;            /* sum over members of computed - lz_base: the decodes of step
                                    j read ctx_base + n * j tokens */
    uint32_t bt;                 /* the container's block_tokens */
    uint32_t *cross;             /* per residue of a step's index mod bt: members crossing */
    gmg_id *mem;                 /* members in running-list order (run_seq) */
    uint32_t cap_mem;
    coh_fin *fin;                /* a heap by (step, seq) */
    uint32_t n_fin, cap_fin;
    gmg_id *fresh;               /* members whose base is K: their first gap is their own */
    uint32_t n_fresh, cap_fresh;
    ss_time thr[COH_THR];        /* the members' distinct TBT bounds */
    uint32_t n_thr;
    uint8_t tier[COH_TIERS];     /* the measured members' tiers, and how many in each */
    uint32_t n_tier[COH_TIERS];
    uint32_t n_tiers;
    /* per step j = 0..K (cap_hist entries): */
    ss_time *T;                  /* its end (T[0]: the cohort's formation) */
    uint32_t *W;                 /* steps 1..j that ended in the arrival window */
    uint32_t *O;                 /* O[t * cap_hist + j]: steps 2..j with a gap above thr[t] */
    uint32_t cap_hist;
    uint32_t *st_step;           /* the longest gaps: steps (ascending) whose gap is longer */
    ss_time *st_gap;             /* than every later step's, and those gaps */
    uint32_t n_st;
};

void gs_coh_refresh(gsim *s)
{
    const gsim_observer *o = &s->obs;
    s->coh_ok = !s->cfg.no_steady && !s->cfg.check && !o->on_iter && !o->on_request &&
                s->n_coh && (s->fork || s->cfg.whatif_pred.kind == POL_PRED_ORACLE) &&
                (!s->cluster || pol_cluster_period(s->cluster) <= 0) &&
                (!s->place || pol_place_period(s->place) <= 0) && pol_batch_has_rest(s->batch) &&
                !s->g->kvp;
}

int gs_coh_allowed(const gsim *s, const gmg_container *c)
{
    return s->coh_ok && c->id < s->n_coh && c->role == GMG_ROLE_BOTH && c->pp == 1 &&
           c->status == GMG_CTR_ACTIVE && c->block_tokens && !c->blocks_reserved &&
           !c->migrating_out;
}

uint32_t gs_coh_members(const gsim *s, const gmg_container *c)
{
    return gs_coh_on(s, c) ? s->coh[c->id]->n : 0;
}

static void coh_free(gs_cohort *h)
{
    if (!h)
        return;
    ss_free(h->cross);
    ss_free(h->mem);
    ss_free(h->fin);
    ss_free(h->fresh);
    ss_free(h->T);
    ss_free(h->W);
    ss_free(h->O);
    ss_free(h->st_step);
    ss_free(h->st_gap);
    ss_free(h);
}

static void reset(gs_cohort *h)
{
    if (h->cross)
        memset(h->cross, 0, h->bt * sizeof *h->cross);
    h->on = h->in_flight = 0;
    h->J = h->K = h->n = 0;
    h->ctx_base = 0;
    h->n_fin = h->n_fresh = h->n_thr = h->n_tiers = h->n_st = 0;
}

int gs_coh_alloc(gsim *s)
{
    s->n_coh_on = 0;
    if (s->coh && s->n_coh == s->g->n_ctrs) { /* a spare fork's: what its members were goes */
        for (uint32_t i = 0; i < s->n_coh; i++)
            if (s->coh[i])
                reset(s->coh[i]);
        return SS_OK;
    }
    gs_coh_free(s);
    if (!s->g->n_ctrs)
        return SS_OK;
    if (!(s->coh = ss_calloc(s->g->n_ctrs, sizeof *s->coh)))
        return SS_ENOMEM;
    s->n_coh = s->g->n_ctrs;
    return SS_OK;
}

void gs_coh_release(gs_cohort **coh, uint32_t n)
{
    for (uint32_t i = 0; coh && i < n; i++)
        coh_free(coh[i]);
    ss_free(coh);
}

void gs_coh_free(gsim *s)
{
    gs_coh_release(s->coh, s->n_coh);
    s->coh = NULL;
    s->n_coh = s->n_coh_on = 0;
}

/* ---- the tables ----------------------------------------------------------------------------- */

/* Room for `n` entries of `size` bytes in *p (capacity *cap, doubled). */
static int room(void *p, uint32_t *cap, uint32_t n, size_t size)
{
    if (n <= *cap)
        return SS_OK;
    size_t c = *cap;
    if (ss_grow((void **)p, &c, n, size))
        return SS_ENOMEM;
    *cap = (uint32_t)c;
    return SS_OK;
}

/* Room for step j in the per-step tables (at most COH_HIST). */
static int hist_room(gs_cohort *h, uint32_t j)
{
    if (j < h->cap_hist)
        return SS_OK;
    uint32_t cap = h->cap_hist ? h->cap_hist : 64;
    while (cap <= j)
        cap *= 2;
    ss_time *T = ss_realloc(h->T, cap * sizeof *T);
    if (T)
        h->T = T;
    uint32_t *W = T ? ss_realloc(h->W, cap * sizeof *W) : NULL;
    if (W)
        h->W = W;
    uint32_t *O = W ? ss_malloc((size_t)COH_THR * cap * sizeof *O) : NULL;
    uint32_t *ss = O ? ss_realloc(h->st_step, cap * sizeof *ss) : NULL;
    if (ss)
        h->st_step = ss;
    ss_time *sg = ss ? ss_realloc(h->st_gap, cap * sizeof *sg) : NULL;
    if (!sg) {
        ss_free(O);
        return SS_ENOMEM;
    }
    h->st_gap = sg;
    for (uint32_t t = 0; t < COH_THR; t++)
        if (h->cap_hist)
            memcpy(O + (size_t)t * cap, h->O + (size_t)t * h->cap_hist, h->cap_hist * sizeof *O);
    ss_free(h->O);
    h->O = O;
    h->cap_hist = cap;
    return SS_OK;
}

static int fin_less(const coh_fin *a, const coh_fin *b)
{
    return a->step < b->step || (a->step == b->step && a->seq < b->seq);
}

static void fin_push(gs_cohort *h, coh_fin e)
{
    uint32_t i = h->n_fin++;
    while (i) {
        uint32_t p = (i - 1) / 2;
        if (!fin_less(&e, &h->fin[p]))
            break;
        h->fin[i] = h->fin[p];
        i = p;
    }
    h->fin[i] = e;
}

/* The heap's entry at i sinks to its place below. */
static void sift_down(gs_cohort *h, uint32_t i)
{
    coh_fin e = h->fin[i];
    uint32_t n = h->n_fin;
    for (;;) {
        uint32_t k = 2 * i + 1;
        if (k >= n)
            break;
        if (k + 1 < n && fin_less(&h->fin[k + 1], &h->fin[k]))
            k++;
        if (!fin_less(&h->fin[k], &e))
            break;
        h->fin[i] = h->fin[k];
        i = k;
    }
    h->fin[i] = e;
}

static coh_fin fin_pop(gs_cohort *h)
{
    coh_fin top = h->fin[0];
    h->fin[0] = h->fin[--h->n_fin];
    if (h->n_fin)
        sift_down(h, 0);
    return top;
}

/* Where q's run_seq goes in h->mem (the first member with a larger one). */
static uint32_t mem_pos(const gsim *s, const gs_cohort *h, uint64_t seq)
{
    uint32_t lo = 0, hi = h->n;
    if (!hi || s->g->reqs[h->mem[hi - 1]].run_seq < seq)
        return hi; /* after every member: as a cohort forms, in running-list order */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (s->g->reqs[h->mem[mid]].run_seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A member's first block crossing, as a step index: the step that schedules its tokens past
 * the blocks it held at its base. */
static uint32_t first_cross(const gs_cohort *h, const gmg_req *q)
{
    return q->lz_base + (uint32_t)((uint64_t)q->blocks * h->bt - q->computed) + 1;
}

/* ---- members ------------------------------------------------------------------------------ */

/* join's checks: q's TBT bound's index in h->thr (*t) and its tier's in h->tier (*k), new ones
 * at the ends; 1 when h cannot take q. */
static inline int joinable(const gs_cohort *h, const gmg_req *q, uint32_t *t, uint32_t *k)
{
    *t = 0, *k = 0;
    if (q->sla_tbt) {
        while (*t < h->n_thr && h->thr[*t] != q->sla_tbt)
            ++*t;
        if (*t == COH_THR)
            return 1;
    }
    if (q->measured) {
        while (*k < h->n_tiers && h->tier[*k] != q->tier)
            ++*k;
        if (*k == COH_TIERS)
            return 1;
    }
    return (uint64_t)q->blocks * h->bt - q->computed >= h->bt; /* its first crossing */
}

/* What q joining h after step h->K counts (joinable gave t and k): its bound and tier, its
 * base, its context, its first block crossing; its place in the member list, the finishing
 * heap and the fresh list is the caller's. */
static inline void enlist(gs_cohort *h, gmg_req *q, uint32_t t, uint32_t k)
{
    if (q->sla_tbt && t == h->n_thr) {
        h->thr[h->n_thr++] = q->sla_tbt;
        memset(h->O + (size_t)t * h->cap_hist, 0, (h->K + 1) * sizeof *h->O);
    }
    if (q->measured && k == h->n_tiers) {
        h->tier[h->n_tiers] = q->tier;
        h->n_tier[h->n_tiers++] = 0;
    }
    if (q->measured)
        h->n_tier[k]++;
    q->lz = 1;
    q->lz_base = h->K;
    h->ctx_base += (int64_t)q->computed - (int64_t)h->K;
    h->cross[first_cross(h, q) % h->bt]++; /* then every block_tokens steps */
}

/* q (running, a decode: its next step schedules one token, its blocks hold what it computed)
 * joins h after step h->K; 0, or 1 when h cannot take it (its tier or TBT bound would be one
 * too many, it holds blocks for more than block_tokens steps to come, a reservation none of
 * the built-in policies makes, or out of memory): nothing changed. */
static int join(gsim *s, gs_cohort *h, gmg_id r)
{
    gmg_req *q = &s->g->reqs[r];
    uint32_t t, k;
    if (joinable(h, q, &t, &k))
        return 1;
    if (room(&h->mem, &h->cap_mem, h->n + 1, sizeof *h->mem) ||
        room(&h->fin, &h->cap_fin, h->n + 1, sizeof *h->fin) ||
        room(&h->fresh, &h->cap_fresh, h->n_fresh + 1, sizeof *h->fresh))
        return 1;
    enlist(h, q, t, k);
    uint32_t at = mem_pos(s, h, q->run_seq);
    if (at < h->n)
        memmove(h->mem + at + 1, h->mem + at, (h->n - at) * sizeof *h->mem);
    h->mem[at] = r;
    h->n++;
    fin_push(h, (coh_fin){h->K + (q->output - q->generated), q->run_seq, r});
    h->fresh[h->n_fresh++] = r;
    return 0;
}

/* The longest gap of steps from..K (from >= 2, from <= K). */
static ss_time longest_from(const gs_cohort *h, uint32_t from)
{
    uint32_t lo = 0, hi = h->n_st;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (h->st_step[mid] < from)
            lo = mid + 1;
        else
            hi = mid;
    }
    return h->st_gap[lo];
}

/* Bring member q up to date after step h->K (and, when `in_flight`, scheduled into step K + 1
 * as the batch holds it); it leaves the cohort's member flag. */
static void sync(const gs_cohort *h, const gmg_container *c, gmg_req *q, int in_flight)
{
    uint32_t b = q->lz_base, m = h->K - b;
    if (m) {
        ss_time first = h->T[b + 1] - q->last_token, longest = first;
        if (m >= 2) {
            ss_time l = longest_from(h, b + 2);
            if (l > longest)
                longest = l;
        }
        q->tbt_sum += h->T[h->K] - q->last_token;
        if (longest > q->tbt_max)
            q->tbt_max = longest;
        if (q->sla_tbt) {
            uint32_t t = 0;
            while (h->thr[t] != q->sla_tbt)
                t++;
            const uint32_t *o = h->O + (size_t)t * h->cap_hist;
            q->tbt_over += (uint32_t)(first > q->sla_tbt) + (m >= 2 ? o[h->K] - o[b + 1] : 0);
        }
        q->win_tokens += h->W[h->K] - h->W[b];
        q->generated += m;
        q->computed += m;
        q->last_token = h->T[h->K];
    }
    uint64_t held = (uint64_t)q->computed + (in_flight ? 1 : 0);
    if (!gmg_blocks_hold(c, q->blocks, held))
        q->blocks = gmg_blocks_for(c, held); /* taken from the pool as the steps crossed them */
    q->q_tokens = in_flight ? 1 : 0;
    q->lz = 0;
}

/* Member r leaves at its last token (the end of step K): its counts go. */
static void leave(gsim *s, gs_cohort *h, gmg_id r)
{
    gmg_req *q = &s->g->reqs[r];
    uint32_t at = mem_pos(s, h, q->run_seq);
    memmove(h->mem + at, h->mem + at + 1, (h->n - at - 1) * sizeof *h->mem);
    h->n--;
    h->ctx_base -= (int64_t)q->computed - (int64_t)q->lz_base;
    h->cross[first_cross(h, q) % h->bt]--;
    if (q->measured) {
        uint32_t k = 0;
        while (h->tier[k] != q->tier)
            k++;
        h->n_tier[k]--;
    }
}


void gs_coh_dissolve(gsim *s, gmg_container *c)
{
    gs_cohort *h = c->id < s->n_coh ? s->coh[c->id] : NULL;
    if (!h || !h->on)
        return;
    for (uint32_t i = 0; i < h->n; i++)
        sync(h, c, &s->g->reqs[h->mem[i]], h->in_flight);
    if (h->in_flight) { /* the batch in flight, as the long way lists it: the decodes first */
        memmove(c->iter.reqs + h->n, c->iter.reqs, c->iter.n_reqs * sizeof *c->iter.reqs);
        memcpy(c->iter.reqs, h->mem, h->n * sizeof *h->mem);
        c->iter.n_reqs += h->n;
    }
    reset(h);
    s->cs[c->id].coh_on = 0;
    s->n_coh_on--;
}

void gs_coh_dissolve_all(gsim *s)
{
    for (uint32_t i = 0; s->n_coh_on && i < s->n_coh; i++)
        gs_coh_dissolve(s, &s->g->ctrs[i]);
}

/* Form c's cohort from its running decodes (in list order), before its step 1; 0 when it
 * formed, else nothing changed. */
static int form(gsim *s, gmg_container *c, ss_time now)
{
    gs_cohort *h = s->coh[c->id];
    if (!h && !(h = s->coh[c->id] = ss_calloc(1, sizeof *h)))
        return 1;
    if (h->bt != c->block_tokens || !h->cross) {
        ss_free(h->cross);
        if (!(h->cross = ss_calloc(c->block_tokens, sizeof *h->cross)))
            return 1;
        h->bt = c->block_tokens;
    }
    uint32_t n = c->running.n;
    if (hist_room(h, 1) || room(&h->mem, &h->cap_mem, n, sizeof *h->mem) ||
        room(&h->fin, &h->cap_fin, n, sizeof *h->fin) ||
        room(&h->fresh, &h->cap_fresh, n, sizeof *h->fresh))
        return 1;
    reset(h);
    h->T[0] = now;
    h->W[0] = 0;
    /* join's, each member after every other (running-list order is run_seq's), into the
     * finishing heap's array as they come (made a heap below) */
    for (gmg_id r = c->running.head; r != GMG_NONE; r = s->g->reqs[r].next) {
        gmg_req *q = &s->g->reqs[r];
        uint64_t tokens = (uint64_t)q->prompt + q->generated;
        uint32_t t, k;
        if (!q->generated || (uint64_t)q->computed + 1 != tokens)
            continue; /* a prefill's next chunk: the policy's */
        if (q->mig != GMG_NONE || (c->pc && !q->pc_registered) || joinable(h, q, &t, &k)) {
            for (uint32_t i = 0; i < h->n; i++)
                s->g->reqs[h->mem[i]].lz = 0;
            reset(h);
            return 1;
        }
        enlist(h, q, t, k);
        h->mem[h->n++] = r;
        h->fin[h->n_fin++] = (coh_fin){q->output - q->generated, q->run_seq, r};
        h->fresh[h->n_fresh++] = r;
    }
    if (!h->n)
        return 1;
    for (uint32_t i = h->n_fin / 2; i-- > 0;)
        sift_down(h, i);
    h->on = 1;
    s->cs[c->id].coh_on = 1;
    s->n_coh_on++;
    return 0;
}

/* ---- steps -------------------------------------------------------------------------------- */

int gs_coh_prepare(gsim *s, gmg_container *c, uint32_t *need)
{
    gs_cohort *h = s->coh[c->id];
    if (h && h->on && h->K + 1 >= COH_HIST)
        gs_coh_dissolve(s, c); /* the tables are full: start again */
    if ((!h || !h->on) && form(s, c, des_now(s->des)))
        return 0;
    h = s->coh[c->id];
    *need = h->cross[(h->K + 1) % h->bt];
    return 1;
}

void gs_coh_members_to(const gsim *s, const gmg_container *c, gmg_id *out)
{
    const gs_cohort *h = s->coh[c->id];
    memcpy(out, h->mem, h->n * sizeof *out);
}

int gs_coh_begin(gsim *s, gmg_container *c, cost_batch *b)
{
    gs_cohort *h = s->coh[c->id];
    uint32_t j = h->K + 1;
    if (hist_room(h, j))
        return SS_ENOMEM;
    h->J = j;
    h->in_flight = 1;
    s->coh_steps++;
    b->n_decode += h->n;
    b->decode_ctx_tokens += (uint64_t)(h->ctx_base + (int64_t)h->n * j);
    return SS_OK;
}

void gs_coh_step_end(gsim *s, gmg_container *c, ss_time now)
{
    gs_cohort *h = s->coh[c->id];
    uint32_t K = h->J;
    h->K = K;
    h->in_flight = 0;
    h->T[K] = now;
    h->W[K] = h->W[K - 1] + (uint32_t)gs_in_arrival_window(s, now);
    ss_time gap = now - h->T[K - 1];
    for (uint32_t t = 0; t < h->n_thr; t++) {
        uint32_t *o = h->O + (size_t)t * h->cap_hist;
        o[K] = o[K - 1] + (K >= 2 && gap > h->thr[t]);
    }
    if (K >= 2) {
        while (h->n_st && h->st_gap[h->n_st - 1] <= gap)
            h->n_st--;
        h->st_step[h->n_st] = K;
        h->st_gap[h->n_st++] = gap;
    }
    /* the gaps: the fresh members' own, everyone else's the step's */
    uint32_t fresh[COH_TIERS] = {0};
    for (uint32_t i = 0; i < h->n_fresh; i++) {
        const gmg_req *q = &s->g->reqs[h->fresh[i]];
        if (!q->measured)
            continue;
        if (!s->fork) /* a fork counts no gaps */
            metrics_add_gap(&s->m, c->tenant, q->tier, now - q->last_token);
        uint32_t k = 0;
        while (h->tier[k] != q->tier)
            k++;
        fresh[k]++;
    }
    h->n_fresh = 0;
    for (uint32_t k = 0; k < h->n_tiers && !s->fork; k++)
        if (h->n_tier[k] > fresh[k])
            metrics_add_gaps(&s->m, c->tenant, h->tier[k], gap, h->n_tier[k] - fresh[k]);
    /* the members whose last token this was, in running-list order */
    while (h->n_fin && h->fin[0].step == K && !s->rc) {
        gmg_id r = fin_pop(h).r;
        gmg_req *q = &s->g->reqs[r];
        leave(s, h, r);
        sync(h, c, q, 0);
        gs_finish(s, c, r);
    }
}

void gs_coh_joined(gsim *s, gmg_container *c, const gmg_id *reqs, uint32_t n)
{
    gs_cohort *h = s->coh[c->id];
    for (uint32_t i = 0; i < n && h->on; i++) {
        gmg_id r = reqs[i];
        const gmg_req *q = &s->g->reqs[r];
        if (q->state != GMG_REQ_RUNNING || q->container != c->id || q->lz || !q->generated ||
            (uint64_t)q->computed + 1 != (uint64_t)q->prompt + q->generated)
            continue; /* finished, elsewhere, or a prefill with chunks to go */
        if (q->mig != GMG_NONE || (c->pc && !q->pc_registered) || join(s, h, r))
            gs_coh_dissolve(s, c); /* it cannot join: nobody stays */
    }
    if (h->on && !h->n) {
        reset(h);
        s->cs[c->id].coh_on = 0;
        s->n_coh_on--;
    }
}
