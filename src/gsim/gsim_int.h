/* The global simulator's internals, shared by its modules (gsim/ only):
 *   gsim.c          setup, the run's control (start, advance, finish, --check), accessors;
 *   gsim_req.c      request state changes: queues, rejection, completion, results;
 *   gsim_batch.c    applying and validating a batching policy's decision;
 *   gsim_iter.c     arrivals, timing an iteration through the pipeline, its completion;
 *   gsim_offload.c  the offload mechanism: prefills run in other containers' idle GPU time;
 *   gsim_place.c    the placement policy: its ticks, what-if callbacks, applying decisions;
 *   gsim_cluster.c  cluster actions: re-allocation, draining, loading, auto-scaling, ticks;
 *   gsim_migrate.c  live migration (Llumnix);
 *   gsim_disagg.c   disaggregated prefill and decode: the KV hand-off between the pools;
 *   gsim_fork.c     what-if forks;
 *   gsim_ceiling.c  the prefix-caching ceiling (an unbounded cache per tenant).
 *   gsim_kvpool.c   the KV pool below the prefix caches: lookups, loads, their completion.
 * Functions shared between the modules carry the prefix gs_. */
#ifndef SS_GSIM_GSIM_INT_H
#define SS_GSIM_GSIM_INT_H

#include "gsim/gsim.h"

#include "gsim/check.h"
#include "policy/policy.h"

enum {
    EV_ARRIVAL = 1, EV_ITER_DONE = 2, EV_CLUSTER_TICK = 3, EV_CTR_READY = 4, EV_MIG_STAGE = 5,
    EV_GUEST = 6,        /* the last placed chunk of an offloaded prefill ends */
    EV_OFFLOAD_DONE = 7, /* an offloaded prefill's first token and KV are home */
    EV_PLACE_TICK = 8,   /* the placement policy decides */
    EV_KV_LOADED = 9,    /* a request's blocks have loaded from the KV pool */
    EV_KV_DONE = 10,     /* a request's KV has landed on its decode instance */
    EV__COUNT
};

/* A live migration in progress (Llumnix): stages copy the KV blocks the request holds on the
 * source while it keeps decoding there; the last stage stops it and copies what is left. */
typedef struct migration {
    gmg_id req, from, to;
    uint32_t stage;       /* stages started */
    uint32_t copied;      /* blocks copied (or being copied) so far */
    uint32_t reserved;    /* blocks reserved at the destination */
    uint8_t final;        /* the stop-and-copy stage is running */
    uint8_t want_final;   /* stop-and-copy waits for the source's iteration to end */
    uint8_t aborted;      /* ended early; its stage event is ignored */
    gmg_id next_free;     /* free-list link */
} migration;

/* A KV hand-off of a disaggregated tenant: request `req`, prefilled on `from`, waits for free
 * blocks on a decode instance (in its tenant's FIFO) and then moves its KV to `to`. */
typedef struct kv_xfer {
    gmg_id req, from, to;
    uint32_t blocks;             /* KV blocks reserved on `to` */
    ss_time ready;               /* the prefill's end (its first token) */
    ss_time layer_ns;            /* that iteration's per-layer compute (kv_transfer = layer:
                                    what hides the earlier layers' sends), -1 for end */
    ss_time start;               /* when the decode blocks were reserved */
    double bytes;                /* its KV, every GPU's shard */
    gmg_id next;                 /* the tenant's FIFO or the free list */
} kv_xfer;

/* The prefix-caching ceiling's set of chained block hashes (gsim_ceiling.c), as runs of chain
 * positions [lo, hi) whose keys sit at keys[off ..], indexed by their first key. */
typedef struct gs_ceil_run {
    size_t off;
    uint32_t lo, hi;
} gs_ceil_run;
typedef struct gs_ceiling {
    uint64_t *keys;              /* owned: every run's keys, 8 bytes a block */
    size_t n_keys, cap_keys;     /* n_keys: the set's blocks */
    gs_ceil_run *run;            /* owned */
    uint32_t n_run;
    size_t cap_run;
    uint32_t *tab;               /* owned: run ids by first key, open addressing (GMG_NONE:
                                    empty), mask + 1 slots, at most half full */
    uint32_t mask;
} gs_ceiling;

/* A tenant during the run: its configuration and the containers that take its requests. */
typedef struct tenant_state {
    gsim_tenant t;               /* copy of the configuration (strings borrowed) */
    gmg_ctr_spec spec;           /* how its containers are built */
    gmg_id *cands;               /* owned: active containers serving it, ascending ids */
    uint32_t n_cands, cap;
    uint32_t n_incoming;         /* containers being drained or loaded for it */
    gmg_id *standby;             /* owned: its standby containers (auto-scaling), ascending */
    uint32_t n_standby;
    /* disaggregated: cands are the prefill instances, dcands the decode ones */
    gmg_id *dcands;              /* owned: its decode instances, ascending ids (NULL: co-located) */
    uint32_t n_dcands;
    uint32_t dmax_blocks;        /* the largest KV pool among them */
    gmg_id kv_head, kv_tail;     /* hand-offs waiting for decode blocks, FIFO (kv_xfer ids) */
    gs_ceiling ceiling;           /* block hashes its containers' caches learnt (the replay's,
                                    empty in a fork) */
    ss_hist out_lens;            /* output lengths of its requests finished in the replay, for
                                    the what-ifs' predictor (empty in a fork, and unless the
                                    predictor is mean or quantile) */
    ss_hist_index out_ix;        /* their index, which the predictor asks (ss_hist_index_add
                                    records into both) */
    cat_gpu share_gpu;           /* t.share's GPU instance (gs_share_gpu), which spec.gpu names
                                    when it has a share */
} tenant_state;

/* gsim_share.c: the figures of the GPU instance a container with share sh runs on, a copy of
 * gpu scaled to it (MIG: the profile's SMs, memory, bandwidth and L2; MPS: its SMs, and its
 * memory; time: its memory). */
void gs_share_gpu(const gsim_share *sh, const cat_gpu *gpu, cat_gpu *out);
/* The shared GPU (0-based) of every shared container, tenant by tenant and replica by replica,
 * into *at (owned by the caller; NULL when no tenant has a share), and how many shared GPUs
 * there are: each tenant's share_gpus, or the first that fits. 0, or SS_EINVAL with eb set
 * and *bad the tenant it names, or SS_ENOMEM. */
int gs_share_layout(const gsim_config *cfg, const gsim_tenant *ten, uint32_t n_ten,
                    uint32_t **at, uint32_t *n_shared, uint32_t *bad, ss_errbuf *eb);


/* A prefill offloaded by SliceScheduler: request `req` of container `home` is prefilled, chunk
 * by chunk (0: embedding, 1..L: the decoder layers, L + 1: final norm and LM head), on the
 * GPUs of container `helper`, in their idle time (see guest_place). Each chunk's weights are
 * streamed from home ahead of it (double-buffered), each layer's KV goes home after it; the
 * request rejoins home, with its first token, once both are done. */
typedef struct offload {
    gmg_id req, home, helper;
    uint32_t n_chunks, next;     /* chunks in all; the first one not yet placed */
    ss_time head_ns, layer_ns, tail_ns; /* chunk durations on the helper */
    double w_head, w_layer, w_tail;     /* weight bytes per GPU streamed for each chunk */
    double kv_layer;             /* KV bytes per GPU of one layer */
    double buffers;              /* bytes held on each helper GPU while it runs */
    uint32_t n_ops;              /* operators of the prefill (host work not included) */
    ss_time w_ready;             /* when the next unplaced chunk's weights have arrived */
    ss_time kv_ready;            /* when the latest layer's KV has arrived home */
    ss_time event_at;            /* pending EV_GUEST (end of the last placed chunk), 0: none */
    des_event *ev;               /* that event */
    ss_time done_at;             /* pending EV_OFFLOAD_DONE time, 0: none */
    ss_time predicted;           /* the what-if's predicted first token (0: none) */
    ss_time host_ns;             /* the guest's host phase (scheduling, input preparation)
                                    before its first chunk */
    ss_time not_before;          /* the first chunk's earliest start: the move's start (after
                                    the decision latency) plus the host phase */
    gmg_id next_free;            /* free-list link; GMG_NONE also marks a job in use */
    uint8_t in_use;
} offload;

/* A replay's spare forks (gsim_fork.c): the last what-if forks destroyed whole, kept with
 * their memory for the next gsim_fork to refill rather than allocate anew. A few: a placement
 * tick may drop several forks before it makes new ones. */
enum { GS_SPARES = 4 };
typedef struct gs_spare {
    gsim *fork[GS_SPARES];       /* owned, the first n */
    uint32_t n;
} gs_spare;

/* Per-container engine state for cluster policies and guest work. */
typedef struct ctr_state {
    int next_tenant;             /* DRAINING/LOADING: tenant it goes to */
    gmg_id guest;                /* offload running on its GPUs, GMG_NONE if none */
    ss_time guest_until;         /* end of the last guest chunk placed on its GPUs */
    const cat_model *staged;     /* another model's weights staged on its GPUs, NULL if none */
    uint32_t staged_blocks;      /* KV blocks lent to them */
    ss_time stage_ready;         /* when they have arrived */
    ss_time own_end;             /* end of its own latest compute phase: the open idle
                                    stretch of its GPUs starts there */
    ss_time stretch_guest;       /* guest compute placed in that stretch so far, ns */
    ss_time offload_until;       /* the copies out of the blocks its prefix cache offloaded to
                                    the KV pool end then: its next forward pass, which may write
                                    into those blocks, waits for them */
    uint64_t epoch;              /* bumped whenever something outside its own evolution reaches
                                    it (an arrival, an offload, a migration, a cluster action):
                                    a what-if taken before is then out of date */
    metrics_prefix prefix;       /* its prefix-cache lookups (measured requests' admissions,
                                    as the tenants' counters count them); evictions folded in at
                                    gsim_finish */
    uint32_t steady_need;        /* set by gs_on_iter_done for the iteration it starts next:
                                    every running request of c was in the one that ended and
                                    decodes next, needing steady_need - 1 new KV blocks between
                                    them (0: unknown; gs_decide_batch looks for itself) */
    uint8_t steady_iter;         /* its latest batch is the steady one (pol_batch_ops.steady),
                                    built without asking the batching policy */
    uint8_t start_mark;          /* in gsim.starts */
    uint8_t look_ok;             /* the step in flight is steady, ends no request's output and
                                    has every request's prompt in the prefix cache (if any):
                                    its end may be taken by steady_step (gsim_iter.c) */
    uint32_t look_need;          /* then the KV blocks the step after it takes */
    uint8_t coh_on;              /* its decode cohort is formed (gsim_cohort.c) */
} ctr_state;

/* A container on a GPU shared by MPS or time slicing, and its iteration in flight
 * (gsim_share.c): how far the iteration has come in its alone time and how fast it goes now. */
typedef struct gs_share_run {
    uint32_t phys;               /* its physical GPU */
    uint8_t active;              /* an iteration in flight */
    ss_time t_upd;               /* progress counted up to this time */
    double work, done;           /* the iteration's alone time; the part done by t_upd, ns */
    double rate;                 /* alone ns per ns now (1: alone) */
    double mu;                   /* the part of its alone time the memory term sets */
    uint8_t prefill;             /* its step computes prompt tokens (multiplexing's lower
                                    priority) */
    double weight_bytes;         /* its model's weights per GPU, bytes (what a step streams) */
    double kv_token_bytes;       /* its KV bytes per token per GPU */
    des_event *ev;               /* its EV_ITER_DONE */
    uint8_t with[8];             /* the others of its GPU (by position among them, the first
                                    64) whose steps overlapped its step */
} gs_share_run;

struct gsim {
    gsim_config cfg;
    tenant_state *ten;           /* owned, cfg.n_tenants (or 1) entries */
    uint32_t n_ten;
    gsim_tenant single;          /* the tenant made from the single-tenant shortcut */
    uint64_t n_finished;         /* requests completed or rejected, warm-up included */
    uint64_t n_completed, n_rejected; /* the two kinds of n_finished, apart */
    gsim_checker chk;            /* --check's memory between events */
    int tier_ordered;            /* waiting queues in (tier, arrival) order */
    gmg *g;
    des_engine *des;
    pol_route *route;
    pol_cluster *cluster;
    ctr_state *cs;               /* owned, one per container */
    gs_share_run *srun;          /* owned, one per container while a GPU is shared by MPS or
                                    time slicing (NULL otherwise; a replay's, never a fork's) */
    uint32_t *sgrp_first;        /* owned: the containers of each physical GPU are */
    gmg_id *sgrp_ctr;            /* sgrp_ctr[sgrp_first[p] .. sgrp_first[p + 1]) */
    pol_tenant_view *views;      /* owned scratch for cluster ticks */
    pol_cluster_decision cd;     /* owned scratch arrays */
    migration *migs;             /* owned: live migrations, recycled through free_mig */
    uint32_t n_migs, cap_migs;
    gmg_id free_mig;
    pol_batch *batch;            /* one instance; per-container state in gmg_container.batch_priv */
    ss_rng route_rng;
    metrics m;
    pol_batch_decision dec;      /* scratch, arrays sized by ensure_decision */
    size_t dec_cap;
    gsim_source_fn *src;
    void *src_ud;
    gsim_sink_fn *sink;
    void *sink_ud;
    trace_rec next;              /* the next request to arrive */
    int have_next;
    int rc;                      /* first error; stops the run */
    ss_errbuf *eb;
    uint64_t iterations;
    gsim_progress_fn *progress;
    void *progress_ud;
    gsim_observer obs;           /* optional callbacks */
    int fork;                    /* a what-if copy: borrows the batching policy and costs */
    offload *offs;               /* owned: offloaded prefills, recycled through free_off */
    uint32_t n_offs, cap_offs;
    uint32_t n_offs_live;        /* of them, in use (an offload in flight reaches two
                                    containers: no steady run while one is) */
    gmg_id free_off;
    ss_time max_overrun;         /* a guest chunk may end this long after its host phase */
    ss_time move_delay;          /* an offload made now starts this much later (the decision
                                    latency of the tick applying it, or a candidate fork's) */
    uint64_t tick_whatifs0;      /* the placement policy's what-ifs when its tick began */
    gsim_gpu_stats *gst;         /* owned: per GPU of the graph */
    metrics_slices *gsl;         /* owned: each GPU's idle slices, folded into the run's in GPU
                                    order by gsim_finish, so that their sums do not depend on the
                                    order in which GPUs record them (NULL in a fork, which
                                    records into its own metrics) */
    ss_time until;               /* the current gsim_advance's horizon: events after it wait */
    gmg_id *starts;              /* owned (NULL in a fork, which has no arrivals): the containers
                                    that may be idle with requests waiting, which an arrival
                                    tries to start (gs_on_arrival): every one that is, and some
                                    that no longer are; n_ctrs entries, n_starts used */
    gmg_id *starts_now;          /* owned scratch: the ones an arrival tries */
    uint32_t n_starts;
    uint32_t *run_cross;         /* owned scratch of a steady run (gsim_iter.c): requests whose
                                    KV block boundaries fall on each residue of a step's index
                                    modulo block_tokens, run_cap entries */
    uint32_t run_cap;
    pol_place *place;            /* owned: the placement policy (NULL in a fork) */
    gs_spare *spare;             /* owned by a replay, borrowed by its forks (and theirs): where
                                    a destroyed fork waits for the next gsim_fork */
    pol_place_decision pd;       /* owned scratch for its decisions */
    pol_whatif_done_fn *whatif_done; /* a fork made for a placement policy: its callback for */
    void *whatif_ud;             /* each request that ends there */
    uint8_t keep_cohorts;        /* such a fork: gsim_advance leaves its decode cohorts formed,
                                    the policy's graph callback dissolves them (gsim_place.c) */
    /* disaggregated tenants (gsim_disagg.c); all NULL when every tenant is co-located */
    pol_route *proute, *droute;  /* owned: prefill pick, decode pick */
    kv_xfer *kvx;                /* owned: hand-offs, recycled through free_kvx */
    uint32_t n_kvx, cap_kvx;
    gmg_id free_kvx;
    gmg_id *kv_cands;            /* owned scratch: decode instances with room, per pick */
    uint32_t kvp_parked;         /* requests of the decision being applied that went to load
                                    from the KV pool instead of joining its batch */
    struct gs_cohort **coh;      /* owned: each container's decode cohort (gsim_cohort.c),
                                    made when it first forms; n_coh entries */
    uint32_t n_coh;
    uint32_t n_coh_on;           /* of them, formed now */
    int coh_ok;                  /* the run allows cohorts at all (gs_coh_refresh) */
    uint64_t coh_steps;          /* steps a cohort took (gsim_cohort_steps) */
};

/* The run-time state of MPS and time-sliced shares (none when no GPU has them): 0 or
 * SS_ENOMEM with eb set. gs_share_free frees it. */
int gs_share_alloc(gsim *s, ss_errbuf *eb);
void gs_share_free(gsim *s);
/* The multiplexed containers of each GPU share one KV pool: what its memory (gpu_mem_util of
 * it) leaves after their weights, activations and runtime (gmg_mux_link). 0, or SS_EINVAL
 * (no room for a pool) or SS_ENOMEM with eb set. */
int gs_share_mux_link(gsim *s, ss_errbuf *eb);
/* Whether c runs on a GPU shared by MPS or time slicing: its steps' ends move with the others'. */
static inline int gs_share_dyn(const gsim *s, const gmg_container *c)
{
    return s->srun && s->g->gpus[c->gpu0].share >= GMG_SHARE_MPS;
}
/* c's iteration, timed alone through c->iter.end, has begun now with its end event ev: it
 * joins its GPU's iterations in flight, whose ends move to the rates they now run at. */
void gs_share_begin(gsim *s, gmg_container *c, des_event *ev);
/* c's iteration ends now (its event is being handled): what the others on its GPU did so far
 * is counted, and c leaves them. Its next iteration, begun in the same handler, moves their ends
 * (gs_share_begin); if it begins none, gs_share_idle does (one move a step, not two). */
void gs_share_end(gsim *s, gmg_container *c);
void gs_share_idle(gsim *s, gmg_container *c);

/* ---- shared between the modules --------------------------------------------------------- */

/* Whether a token emitted now falls in the run's arrival window: after the warm-up, while
 * arrivals are still to come or at the last one's time (metrics_req.win_tokens). */
static inline int gs_in_arrival_window(const gsim *s, ss_time now)
{
    return now >= s->cfg.warmup && (s->have_next || now <= s->m.last_arrival);
}

/* Schedule an event on e (s's engine) at `at`. A time past the simulated time range or a full
 * event pool fails the run (the first failure's message is kept) and gives NULL. */
#define gs_sched(s, e, at, kind, target) \
    gs_sched_at((s), (e), (at), (kind), (target), __FILE__, __LINE__)

/* gsim.c */
void gs_fail(gsim *s, int rc);
/* Release everything s owns but s itself (gsim_destroy without the free). */
void gs_release(gsim *s);
int gs_past_range(gsim *s, const des_engine *e);
des_event *gs_sched_at(gsim *s, des_engine *e, ss_time at, uint16_t kind, uint32_t target,
                           const char *file, int line);
/* gsim_batch.c */
ss_time gs_swap_time(const gsim *s, const gmg_container *c);
int gs_decide_batch(gsim *s, gmg_container *c);
/* gsim_cohort.c: decode cohorts (see there) */
typedef struct gs_cohort gs_cohort;
/* Whether the run allows cohorts (no observer, no invariant checks, no cluster or placement
 * ticks, no predictor to feed, a policy with decide_rest, no KV pool): gsim_start and
 * gsim_set_observer ask, into gsim.coh_ok. */
void gs_coh_refresh(gsim *s);
/* Whether c may keep a cohort: nothing but its own steps reads its running requests. */
int gs_coh_allowed(const gsim *s, const gmg_container *c);
static inline int gs_coh_on(const gsim *s, const gmg_container *c)
{
    return s->cs[c->id].coh_on;
}
uint32_t gs_coh_members(const gsim *s, const gmg_container *c);
/* s->coh for its containers: a new array, or the one there (a spare fork's, gsim_fork.c) with
 * its tables kept and every cohort off. 0 or SS_ENOMEM. */
int gs_coh_alloc(gsim *s);
void gs_coh_free(gsim *s);
/* Free n cohorts' tables and the array. */
void gs_coh_release(gs_cohort **coh, uint32_t n);
/* Bring every member of c's cohort up to date (those of a step in flight as scheduled into it)
 * and end the cohort; nothing when c has none. */
void gs_coh_dissolve(gsim *s, gmg_container *c);
void gs_coh_dissolve_all(gsim *s);
/* Before c's next step: its cohort (formed now from its running decodes when it has none);
 * 1 with *need the KV blocks its members' next tokens take, 0 when none could form. */
int gs_coh_prepare(gsim *s, gmg_container *c, uint32_t *need);
/* The members, in running-list order, into out. */
void gs_coh_members_to(const gsim *s, const gmg_container *c, gmg_id *out);
/* c's next step begins with every member decoding: b gets them (c->iter.reqs does not: it
 * lists the others, and the members in front only if the cohort dissolves in flight). */
int gs_coh_begin(gsim *s, gmg_container *c, cost_batch *b);
/* c's cohort step ends at `now`: the step's tables, the gaps, the members that finish (in
 * running-list order), before the batch's other requests (c->iter.reqs). */
void gs_coh_step_end(gsim *s, gmg_container *c, ss_time now);
/* After a cohort step's end, those of reqs[n] that now decode join (a request that cannot
 * ends the cohort). */
void gs_coh_joined(gsim *s, gmg_container *c, const gmg_id *reqs, uint32_t n);
/* gsim_req.c */
void gs_notify(gsim *s, const gmg_container *c, const gmg_req *q, gsim_req_event what);
const cat_engine *gs_tenant_engine(const gsim *s, uint16_t t);
gmg_enqueue gs_enqueue_where(const gsim *s, int front);
void gs_reject(gsim *s, gmg_container *c, gmg_id r, uint32_t why);
void gs_finish(gsim *s, gmg_container *c, gmg_id r);
/* The what-ifs' output-length predictor (gsim_config.whatif_pred), kept by the replay (a fork
 * takes what it is given, gsim_fork): q's prediction as it arrives; again after a token when q
 * has outlived it (and its container's epoch bumped: its what-ifs are out of date); q's length
 * into its tenant's record as it finishes (a failure fails the run). */
void gs_pred_arrival(gsim *s, gmg_req *q);
void gs__pred_token(gsim *s, gmg_req *q);
static inline void gs_pred_token(gsim *s, gmg_req *q)
{
    if (s->cfg.whatif_pred.kind != POL_PRED_ORACLE && !s->fork) /* predicting, gsim_req.c */
        gs__pred_token(s, q);
}
void gs_pred_finished(gsim *s, const gmg_req *q);
/* Iteration split of batch b on cm: the cost model's, in a fork scaled by 1 + the what-ifs'
 * cost error (gsim_config.whatif_cost_error). */
void gs_cost_split(const gsim *s, cost_model *cm, const cost_batch *b, cost_split *out);
gmg_id gs_route(gsim *s, const tenant_state *t, gmg_id r);
/* gsim_cluster.c */
void gs_maybe_drained(gsim *s, gmg_container *c);
void gs_on_ctr_ready(des_engine *e, des_event *ev, void *ctx);
void gs_on_cluster_tick(des_engine *e, des_event *ev, void *ctx);
int gs_alloc_cluster_state(gsim *s, ss_errbuf *eb);
void gs_free_cluster_state(gsim *s);
/* gsim_offload.c */
void gs_guest_idle(gsim *s, gmg_container *h);
ss_time gs_guest_fill(gsim *s, gmg_container *h, ss_time from, ss_time until);
void gs_on_guest(des_engine *e, des_event *ev, void *ctx);
void gs_on_offload_done(des_engine *e, des_event *ev, void *ctx);
void gs_unstage(gsim *s, gmg_container *h);
void gs_maybe_evict(gsim *s, gmg_container *h);
void gs_stretch_close(gsim *s, gmg_container *h, ss_time until);
/* gsim_iter.c */
void gs_idle_until(gsim *s, gmg_id gpu, ss_time until);
void gs_start_iteration(gsim *s, gmg_container *c);
void gs_on_iter_done(des_engine *e, des_event *ev, void *ctx);
int gs_read_next(gsim *s);
void gs_on_arrival(des_engine *e, des_event *ev, void *ctx);
/* gsim_ceiling.c */
/* The ceiling's hit for q at its first admission: the longest prefix of its chain, at most lim
 * blocks, in its tenant's set. */
uint32_t gs_ceiling_match(gsim *s, const gmg_req *q, uint32_t lim);
/* q's prefill is done on c: its full prompt blocks join its tenant's set (replay only). */
void gs_ceiling_register(gsim *s, const gmg_container *c, const gmg_req *q);
void gs_ceiling_free(gs_ceiling *k);
/* gsim_migrate.c */
migration *gs_mig_at(gsim *s, gmg_id m);
void gs_maybe_abort_migration(gsim *s, gmg_req *q);
void gs_mig_begin_final(gsim *s, gmg_id mid);
void gs_on_mig_stage(des_engine *e, des_event *ev, void *ctx);
void gs_start_migration(gsim *s, const pol_migration *pm);
/* gsim_disagg.c */
int gs_disagg_create(gsim *s, ss_errbuf *eb);
void gs_disagg_destroy(gsim *s);
int gs_disagg_add(gsim *s, tenant_state *t, ss_errbuf *eb);
void gs_disagg_handoff(gsim *s, gmg_container *c, gmg_id r);
void gs_disagg_pump(gsim *s, tenant_state *t);
void gs_on_kv_done(des_engine *e, des_event *ev, void *ctx);

/* gsim_kvpool.c */
int gs_kvp_create(gsim *s, ss_errbuf *eb);
/* Request r, just admitted on c with the first h blocks of its chain from the GPU cache and
 * q_tok query tokens (holding at least `hold` blocks) granted by the policy: when the pool
 * holds the chain's next blocks and loading them is quicker than computing them, r leaves the
 * batch to load them (1); else 0 and nothing changed. Records the lookup. */
int gs_kvp_admit(gsim *s, gmg_container *c, gmg_id r, uint32_t h, uint32_t q_tok, uint32_t hold);
/* Time to load, onto c's GPUs, n[i] blocks from each source (own CPU tier, own SSD tier,
 * another node's CPU tier, another node's SSD tier), one source after the other. */
ss_time gs_kvp_load_ns(const gsim *s, const gmg_container *c, const uint32_t n[4]);
/* When the host links of c's GPUs (PCIe to host memory; gmg_gpu.host_busy) are free at `at` or
 * later: after the loads, offloads and swaps queued on them. */
ss_time gs_host_free(const gsim *s, const gmg_container *c, ss_time at);
/* The host links of c's GPUs are taken until `until`. */
void gs_host_book(gsim *s, const gmg_container *c, ss_time until);
/* Time to copy n of c's KV blocks out to the pool's CPU tier: each GPU's share over its own
 * host link, at the PCIe efficiency, plus the host link's per-copy latency. 0 for n = 0. */
ss_time gs_kvp_offload_ns(const gsim *s, const gmg_container *c, uint32_t n);
/* Charge c's pending offloads (kvp_offload_pending, the copies out of blocks its prefix cache
 * gave the pool) to its host links from `at`, behind what holds them; returns when the links
 * are free after them (gs_host_free when nothing was pending). */
ss_time gs_kvp_offload(gsim *s, gmg_container *c, ss_time at);
/* Charge c's pending offloads now (gs_kvp_offload), when it has any: every change that may
 * evict from a prefix cache is followed by one, so that a copy out starts when its block left
 * the cache. */
static inline void gs_kvp_charge(gsim *s, gmg_container *c)
{
    if (c->kvp_offload_pending)
        gs_kvp_offload(s, c, des_now(s->des));
}
void gs_on_kv_loaded(des_engine *e, des_event *ev, void *ctx);
/* A fork schedules the loads in flight of the containers with in_set[id]. 0 or SS_ENOMEM. */
int gs_kvp_fork_events(gsim *f, const uint8_t *in_set);
/* Fold the pool's counters into the run's metrics (at the end of a run; not in a fork). */
void gs_kvp_finish(gsim *s);
/* gsim_place.c */
int gs_place_create(gsim *s, ss_errbuf *eb);
void gs_place_destroy(gsim *s);
int gs_place_start(gsim *s);
void gs_on_place_tick(des_engine *e, des_event *ev, void *ctx);

/* gsim_link_eff of the link a copy from GPU src to GPU dst takes (gmg_link_between). */
static inline double gs_link_eff_between(const gsim *s, gmg_id src, gmg_id dst)
{
    return gsim_link_eff(&s->cfg, gmg_link_between(s->g, src, dst)->kind);
}

#endif
