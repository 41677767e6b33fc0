/* The Global Mapping Graph: the one cluster-wide state. GPUs with a memory ledger and link
 * ports, containers (a model served on TP GPUs with a KV-block pool and waiting/running
 * queues), requests in flight (recycled slots, so memory follows requests in flight, not trace
 * length), the iteration each container is executing, and the operator nodes an iteration
 * expands into when a policy or a timeline asks for them.
 * gmg/ holds the data, every request state transition and container status change (the
 * simulator calls them; tests/cli/layers.sh fails on a state or status set elsewhere) and the
 * invariant checks; deciding what to do is policy/'s job, driving time is gsim/'s. gsim/ still
 * fills a new request's fields from its trace record and keeps the iteration bookkeeping
 * (busy, iter.*) itself. */
#ifndef SS_GMG_GMG_H
#define SS_GMG_GMG_H

/* part of the plug-in API (policy/plugin.h): visible to a plug-in the binary loads */
#pragma GCC visibility push(default)

#include <stddef.h>
#include <math.h>
#include <stdint.h>

#include "catalog/catalog.h"
#include "core/ss_err.h"
#include "core/ss_time.h"
#include "cost/cost.h"

typedef uint32_t gmg_id;
#define GMG_NONE UINT32_MAX
#define GMG_MAX_PP 16 /* pipeline stages per replica */

/* ---- requests --------------------------------------------------------------------------- */

typedef enum gmg_req_state {
    GMG_REQ_FREE = 0, /* slot unused */
    GMG_REQ_WAITING,  /* in its container's waiting queue (new or preempted) */
    GMG_REQ_RUNNING,  /* in its container's running list, KV blocks held */
    GMG_REQ_SWAPPED,  /* preempted by swap: its KV blocks sit in host memory */
    GMG_REQ_MIGRATING, /* in the stop-and-copy stage of a live migration: in no queue, its
                          blocks still counted by the source (blocks_in_transit) */
    GMG_REQ_OFFLOADED, /* its prefill runs on another container's GPUs (SliceScheduler): in no
                          queue, its KV blocks held at home (blocks_offloaded) */
    GMG_REQ_LOADING,  /* its prompt's next blocks are loading from the KV pool: in no queue,
                         holding the blocks they land in (blocks_loading, pc_shared_loading) */
    GMG_REQ_DONE,     /* all output tokens produced; slot about to be recycled */
    GMG_REQ_REJECTED, /* can never be served (too long for the KV cache or max_model_len) */
    GMG_REQ_KV_TRANSFER, /* prefilled on a prefill instance of a disaggregated tenant, its
                            first token out: in no queue, its KV held there (blocks_in_transit,
                            n_kv_out) until the transfer to a decode instance lands */
    GMG_REQ__COUNT
} gmg_req_state;

typedef struct gmg_req {
    /* from the trace */
    uint64_t trace_id;     /* request id in the trace */
    ss_time arrival;       /* ns, after rate scaling */
    uint32_t prompt;       /* prompt tokens */
    uint32_t output;       /* output tokens to generate (capped by max_model_len) */
    uint32_t output_asked; /* output tokens the trace asked for */
    uint32_t output_pred;  /* what-ifs' prediction of `output` (gsim's predictor; 0: none, they
                              take the true one), > generated while it runs */
    uint16_t tenant;       /* tenant index */
    uint8_t tier;          /* SLA tier, 0 = highest */
    uint8_t measured;      /* arrived after the warm-up: counted in the summaries */
    ss_time sla_ttft;      /* SLA bounds of its tenant and tier (or its own, from the trace); */
    ss_time sla_tbt;       /* 0 = no bound. sla_tbt bounds the p99 of its own gaps */
    ss_time sla_e2e;
    uint32_t tbt_over;     /* inter-token gaps longer than sla_tbt so far */
    uint32_t migrations;   /* completed live migrations */
    gmg_id mig;            /* live migration in progress (engine's id), GMG_NONE if none */
    uint32_t n_prefix_blocks; /* prefix-cache block ids the trace gave it (Mooncake hash_ids) */
    struct gmg_chain *chain;  /* its blocks' chained hashes (gmg_pc_chain_make); shared with its
                                 copies in what-if forks; NULL when it has none */
    uint64_t session_id;      /* prompt identity from a native trace (0 = none): same id, same
                                 prompt text */
    uint32_t pc_shared;       /* of its blocks, how many are prefix-cache blocks (its chain's
                                 first pc_shared, refcounted by the cache; the rest are its own) */
    uint8_t pc_registered;    /* its prompt's full blocks went into the cache (prefill done) */
    uint8_t kvp_loaded;       /* it loaded blocks from the KV pool once (it does not again) */
    ss_time kvp_ready;        /* GMG_REQ_LOADING: when its load completes */
    uint32_t win_tokens;      /* output tokens produced in the run's arrival window (metrics) */
    ss_time sched_lag;        /* it arrived while its container ran a step, on an engine with
                                 async scheduling, which had chosen the next step's batch
                                 already: the step it waits for in reality, added to its
                                 client-side TTFT and E2E, ns (0 otherwise) */
    /* state */
    uint8_t state;         /* gmg_req_state */
    gmg_id container;      /* container it was routed to */
    uint32_t generated;    /* output tokens produced so far */
    uint32_t computed;     /* tokens whose KV is in the cache (0 while waiting) */
    uint32_t blocks;       /* KV blocks held */
    uint32_t preemptions;  /* times preempted (recompute or swap) */
    uint32_t swapped_blocks; /* KV blocks held in host memory while swapped */
    uint32_t wait_blocks;  /* KV blocks its pending work needs, counted in the container's
                              waiting_blocks while it waits */
    uint32_t q_tokens;     /* query tokens in the executing iteration (0 = not in it) */
    ss_time first_token;   /* time of the first output token (-1 before) */
    ss_time last_token;    /* time of the latest output token */
    ss_time finish;        /* completion or rejection time */
    ss_time tbt_sum;       /* sum of inter-token gaps, ns */
    ss_time tbt_max;       /* largest inter-token gap, ns */
    gmg_id prev, next;     /* links in the waiting queue or running list */
    uint64_t serial;       /* which allocation of the slot this is (gmg.n_allocs then): tells a
                              recycled slot's new request from the one before (--check) */
    uint64_t run_seq;      /* when it last joined its container's running list (gmg.n_run_seq
                              then): every join is at the list's back, so the running list is
                              in run_seq order */
    uint32_t lz_base;      /* a member of its container's decode cohort (gsim_cohort.c): the */
    uint8_t lz;            /* cohort's steps its fields stand at (lz: a member) */
} gmg_req;

/* Intrusive doubly linked list of request ids. */
typedef struct gmg_list {
    gmg_id head, tail;
    uint32_t n;
} gmg_list;

/* ---- hardware --------------------------------------------------------------------------- */

typedef struct gmg_mem {
    double weights;     /* model weights resident, bytes */
    double kv_pool;     /* KV-cache pool reserved at start-up, bytes */
    double kv_used;     /* part of the pool held by requests' blocks, bytes */
    double activations; /* activation reserve of the forward pass, bytes */
    double runtime;     /* CUDA context, library workspaces, bytes */
    double transfer;    /* in-flight transfer buffers, bytes */
} gmg_mem;

/* How a container holds its GPU (docs/guide/gpu-sharing.md): whole, or a share of one physical
 * GPU with other containers, each share a gmg_gpu of its own (its memory, its ledger) on the
 * same gmg_gpu.phys. */
enum {
    GMG_SHARE_NONE = 0, /* the whole GPU */
    GMG_SHARE_MIG,      /* a MIG instance: its own SMs, memory and bandwidth */
    GMG_SHARE_MPS,      /* an MPS client: an SM share, memory bandwidth shared at run time */
    GMG_SHARE_TIME,     /* time slicing: the whole GPU in turns with the others */
    GMG_SHARE_MUX,      /* multiplexed as MuxServe does: kernels at once, one KV pool shared
                           by the GPU's containers (gmg_mux_link) */
};

typedef struct gmg_gpu {
    gmg_id id;
    uint32_t node;          /* node index */
    uint32_t phys;          /* the physical GPU it is or is a share of (0 .. gmg.n_phys - 1) */
    uint8_t share;          /* GMG_SHARE_* */
    uint8_t phys_lead;      /* the first gmg_gpu of its physical GPU (node filling counts these) */
    const cat_gpu *kind;    /* borrowed from the catalog; a share's: its instance's figures */
    double capacity;        /* usable HBM, bytes (a share's: its allotment) */
    gmg_mem mem;            /* ledger */
    gmg_id container;       /* first container (virtual engine) using it, GMG_NONE if idle */
    gmg_id replica;         /* replica (serving instance) it belongs to */
    uint32_t stage;         /* pipeline stage of that replica it serves */
    /* what it did in a run (busy time, idle slices) is the simulator's: gsim_gpu_stats_at */
    ss_time tx_busy, rx_busy; /* its link ports (NVLink in a node, NIC across): transfers
                                 from and to it queue behind these times */
    ss_time host_busy;      /* its host link (PCIe to host memory): KV-pool loads and offloads
                               and KV swaps queue behind this time, one after the other (a
                               swap's outs and ins share it too) */
    double kv_used_peak;    /* highest kv_used seen, bytes */
} gmg_gpu;

/* The kinds of link a copy takes: a node's NVLink, PCIe (a node's GPU-to-GPU fabric where the
 * GPU has no NVLink, and every GPU's host link), the network across nodes. */
typedef enum gmg_link_kind { GMG_LINK_NVLINK, GMG_LINK_PCIE, GMG_LINK_NET } gmg_link_kind;
#define GMG_LINK_KINDS 3

typedef struct gmg_link {
    gmg_id id;
    gmg_link_kind kind;
    uint32_t node;          /* node it belongs to (GMG_NONE for the network) */
    double bw;              /* bytes/s per direction */
    double latency_s;       /* per message */
    double bytes_moved;     /* total bytes carried */
} gmg_link;

/* ---- iterations and operators ----------------------------------------------------------- */

/* One executing forward pass of a container. */
typedef struct gmg_iter {
    uint64_t seq;           /* per-container iteration number */
    ss_time start, end;     /* first stage's start, last stage's end (fast path: exact) */
    ss_time stage_start[GMG_MAX_PP], stage_end[GMG_MAX_PP]; /* per pipeline stage */
    ss_time swap_ns;        /* the host-link phase before the forward pass: KV swap transfers
                               over PCIe and the waits for the host link (copies out to the KV
                               pool of blocks the step reuses, loads ahead of the swaps) */
    ss_time wait_ns;        /* after its host phase, the first stage waited this long for guest
                               operators (offloaded prefills) still running on its GPUs */
    uint32_t swap_blocks;   /* KV blocks swapped out + in by this iteration */
    ss_time alone_ns;       /* on a GPU shared by MPS or time slicing: how long it would have
                               taken alone (0: not such a GPU) */
    uint32_t shared_with;   /* then: the other containers whose steps it overlapped */
    gmg_id *reqs;           /* requests in the batch (owned array, cap entries) */
    uint32_t n_reqs, cap;
    cost_batch batch;       /* cost summary of the batch */
} gmg_iter;

typedef enum gmg_op_state { GMG_OP_PENDING, GMG_OP_READY, GMG_OP_RUNNING, GMG_OP_DONE } gmg_op_state;

/* An operator node of an expanded iteration. */
typedef struct gmg_op {
    cost_op shape;          /* kind, FLOPs, bytes (count = 1 for a node) */
    uint32_t layer;         /* decoder layer, UINT32_MAX for per-iteration operators */
    gmg_id container;       /* owner */
    gmg_id home_gpu;        /* GPU of its container (first of the TP group) */
    gmg_id placed_gpu;      /* where it runs (home unless a policy moved it) */
    uint8_t state;          /* gmg_op_state */
    ss_time pred_start, pred_end; /* what-if prediction */
    ss_time start, end;     /* actual (simulated) */
} gmg_op;

/* A data dependency: the producer's output tensor consumed by the next operator. */
typedef struct gmg_edge {
    uint32_t src, dst;      /* operator indexes within the expansion */
    double bytes;           /* tensor size */
    gmg_id src_gpu, dst_gpu;/* a transfer on a link when they differ */
} gmg_edge;

/* ---- containers ------------------------------------------------------------------------- */

enum {
    GMG_CTR_ACTIVE = 0,   /* serving its tenant, takes new requests */
    GMG_CTR_DRAINING,     /* finishing its requests before it changes hands; takes no new ones */
    GMG_CTR_LOADING,      /* torn down and loading another tenant's weights: serves nobody */
    GMG_CTR_STANDBY,      /* reserved for its tenant's auto-scaling, not serving */
};

/* A container is one scheduler with its own queues and KV pool. With pipeline parallelism a
 * replica runs pp of them (vLLM's virtual engines), each with 1/pp of the replica's KV blocks,
 * sharing the replica's stages: stage s is GPUs gpu0 + s*tp .. gpu0 + s*tp + tp - 1. */
typedef struct gmg_container {
    gmg_id id;
    uint16_t tenant;        /* tenant it serves */
    const cat_model *model; /* borrowed */
    uint32_t tp;            /* tensor-parallel degree */
    uint32_t pp;            /* pipeline stages of its replica */
    gmg_id replica;         /* replica it belongs to */
    uint32_t ve;            /* virtual-engine index within the replica (0 .. pp-1) */
    gmg_id gpu0;            /* first GPU of the replica */
    double block_bytes;     /* bytes of one KV block on each GPU of the replica */
    cost_model *cost;       /* owned */
    uint32_t block_tokens;  /* tokens per KV block */
    uint32_t blocks_total;  /* KV blocks in the pool */
    uint32_t blocks_free;   /* not held by any request */
    uint32_t blocks_peak;   /* most blocks held at once */
    uint32_t blocks_reserved;   /* held for incoming live migrations */
    uint32_t blocks_in_transit; /* held by requests in the stop-and-copy of an outgoing
                                   migration, or prefilled here and in KV transfer to a
                                   decode instance (private blocks; shared ones in
                                   pc_shared_in_transit) */
    uint32_t blocks_offloaded;  /* held by its requests whose prefill runs elsewhere */
    uint32_t n_offloaded;       /* those requests */
    uint32_t blocks_staged;     /* lent to another model's weights staged here (SliceScheduler) */
    uint32_t migrating_out;     /* outgoing live migrations in progress */
    uint32_t n_kv_out;          /* its prefilled requests whose KV waits for or is in transfer
                                   to a decode instance (their blocks in blocks_in_transit) */
    uint8_t role;               /* GMG_ROLE_*: what it serves of its tenant's requests */
    double compute_share;       /* on a share of a GPU: the part of the GPU's compute it has
                                   (MIG C/7, MPS its SM share, time-sliced or multiplexed 1 / the
                                   containers on the GPU); 0: a whole GPU. A chunked batching
                                   policy scales its token budget by it (pol_batch_budget) */
    gmg_id mux_next;            /* a container sharing one KV pool with others (GMG_SHARE_MUX;
                                   mux_pool > 0): the next of them, round */
    gmg_id mux_head;            /* then its first container (sums over the pool start there) */
    double mux_pool;            /* then the shared pool's bytes per GPU (0: a pool of its own); its blocks_free is the
                                   pool's free bytes in its blocks and blocks_total what it holds
                                   plus those (gmg_mux_sync) */
    uint32_t tiers;             /* its tenant's number of SLA tiers */
    uint32_t swap_total;    /* host-memory swap space, in KV blocks */
    uint32_t swap_free;     /* swap blocks not holding a swapped request */
    gmg_list waiting;       /* FCFS; preempted requests return to the front */
    gmg_list running;       /* admission order */
    gmg_list swapped;       /* preempted by swap, in the order they were swapped out */
    uint64_t waiting_blocks;/* sum of the waiting requests' wait_blocks (routing demand) */
    int busy;               /* an iteration is executing */
    ss_time prev_step_ns;   /* length of the iteration before the executing one, 0 when the
                               container was idle before it (async scheduling's lag) */
    uint8_t status;         /* GMG_CTR_*: whether it takes new requests */
    uint8_t frozen;         /* in a what-if's partial copy: present, not simulated
                               (gmg_clone_part) */
    ss_time ready_at;       /* GMG_CTR_LOADING: when its new weights are in place */
    gmg_iter iter;          /* the executing (or last) iteration */
    uint64_t iterations;    /* iterations completed */
    uint32_t pc_shared_in_transit; /* cache blocks shared by its requests in stop-and-copy or
                                      in KV transfer */
    uint32_t n_loading;     /* its requests loading from the KV pool (GMG_REQ_LOADING) */
    uint32_t kvp_offload_pending; /* blocks its prefix cache offloaded into the KV pool whose
                                     copies (GPU to host) the simulator has not yet charged to
                                     its GPUs' host links */
    uint32_t blocks_loading;    /* their own blocks the loads land in */
    uint32_t pc_shared_loading; /* the cache blocks they share */
    struct gmg_pcache *pc;  /* automatic prefix cache (owned); NULL when caching is off */
    void *batch_priv;       /* extension slot: the batching policy's per-container state
                               (allocated and owned by gsim; NULL when the policy has none) */
} gmg_container;

/* What a container does for its tenant: both phases (co-located serving), or one pool of a
 * disaggregated tenant (prefill instances hand every request's KV to a decode instance). */
enum {
    GMG_ROLE_BOTH = 0, /* prefills and decodes its requests */
    GMG_ROLE_PREFILL,  /* prefills; a request leaves with its first token and its KV */
    GMG_ROLE_DECODE,   /* decodes requests whose KV a prefill instance sent */
};

/* A serving instance: tp x pp GPUs and the pipeline stages its containers share. */
typedef struct gmg_replica {
    gmg_id id;
    gmg_id ctr0;                       /* its containers are ctr0 .. ctr0 + pp - 1 */
    gmg_id gpu0;                       /* its GPUs are gpu0 .. gpu0 + tp*pp - 1 */
    uint32_t tp, pp;
    ss_time stage_free[GMG_MAX_PP];    /* when each stage finishes its queued micro-batches */
} gmg_replica;

/* ---- the graph -------------------------------------------------------------------------- */

typedef struct gmg {
    gmg_gpu *gpus;
    uint32_t n_gpus;
    uint32_t n_phys;        /* physical GPUs (n_gpus counts each share of one) */
    gmg_link *links;
    uint32_t n_links;
    gmg_container *ctrs;
    uint32_t n_ctrs;
    gmg_replica *replicas;
    uint32_t n_replicas;
    gmg_req *reqs;          /* slot array, grows with requests in flight */
    uint32_t n_slots, cap_slots;
    gmg_id free_slot;       /* free-list head through gmg_req.next */
    uint32_t in_flight;     /* slots in use */
    uint32_t peak_in_flight;
    uint64_t n_allocs;      /* request slots handed out so far (the last one's serial) */
    uint64_t n_run_seq;     /* joins of running lists so far (the last one's gmg_req.run_seq) */
    int borrowed_costs;     /* a clone: its containers' cost models belong to the original */
    int prefix_cache;       /* containers get a prefix cache (gmg_add_containers) */
    struct gmg_kvpool *kvp; /* the KV pool below the prefix caches (owned); NULL when off */
    gmg_id *copied;         /* owned, a partial copy's (gmg_clone_part): the slots it copied,
                               ascending, n_copied of them; NULL otherwise (gmg_req_roster) */
    uint32_t n_copied;
    uint64_t copied_allocs; /* n_allocs when they were copied */
} gmg;

/* The slots that may hold a request of g, ascending: a partial copy's copied slots (n_copied)
 * while it has handed out none since, as a what-if's graph never does, so that a walk over a
 * what-if's requests costs what it holds rather than the cluster's slots; else NULL, every
 * slot below n_slots (n_out gets the count either way). */
static inline const gmg_id *gmg_req_roster(const gmg *g, uint32_t *n_out)
{
    int listed = g->copied && g->n_allocs == g->copied_allocs;
    *n_out = listed ? g->n_copied : g->n_slots;
    return listed ? g->copied : NULL;
}

/* How one container is laid out and sized. */
typedef struct gmg_ctr_spec {
    uint16_t tenant;
    const cat_model *model;
    const cat_gpu *gpu;
    const cat_engine *engine;   /* serving engine (borrowed) */
    uint32_t tp;
    uint32_t pp;                /* pipeline stages (1 = none), at most GMG_MAX_PP */
    uint32_t gpus_per_node;     /* node size (0 = the GPU catalog's) */
    uint32_t tiers;             /* the tenant's number of SLA tiers (>= 1) */
    const char *cost_backend;   /* "roofline" */
    const char *profiles_dir;   /* catalog directory for profile-table backends (borrowed) */
    double gpu_mem_util;        /* fraction of HBM the engine may use (vLLM's 0.9) */
    uint32_t block_tokens;      /* 16 */
    uint64_t max_batch_tokens;  /* sizes the activation reserve */
    uint32_t max_seqs;          /* sizes the logits part of the reserve */
    double runtime_reserve;     /* CUDA context and workspaces, bytes */
    double swap_bytes;          /* host swap space per GPU for preemption by swap, bytes */
    uint8_t role;               /* GMG_ROLE_* of the containers made (0: co-located) */
    uint8_t share;              /* GMG_SHARE_*: NONE, tp x pp GPUs of its own per replica; else
                                   one replica (tp = pp = 1) on a share of physical GPU phys
                                   (gmg.n_phys: a new one), its figures and memory gpu's */
    uint32_t phys;
} gmg_ctr_spec;

/* Create an empty cluster. 0 or SS_ENOMEM. */
int gmg_create(gmg **g_out);
/* Free everything, including containers' cost models (unless borrowed). NULL-safe; sets *g
 * to NULL. */
void gmg_destroy(gmg **g);
/* A deep copy of src (requests, queues, iterations, ledgers) for what-if simulation. Its
 * containers borrow src's cost models, so src must outlive it; batch_priv pointers are copied
 * as they are (their owner replaces them). 0 or SS_ENOMEM. */
int gmg_clone(const gmg *src, gmg **out);
/* The same copy for a what-if of some containers: those with keep[id] set come whole, with
 * their requests; the others are frozen (gmg_container.frozen): their pools and ledgers as
 * they are, but no requests, queues or prefix cache, so that a fork costs what it simulates,
 * not the cluster. A frozen container must not be run; gmg_check skips it. The slots it
 * copies are listed (gmg_req_roster). */
int gmg_clone_part(const gmg *src, const uint8_t *keep, gmg **out);
/* gmg_clone_part into *g, a copy made before (or NULL: a new one), whose memory it reuses
 * where large enough: what the old copy's containers and requests held goes, its arrays are
 * refilled (a what-if after another costs less than a new copy). 0, or SS_ENOMEM with *g
 * destroyed and NULL. */
int gmg_recopy_part(gmg **g, const gmg *src, const uint8_t *keep);
/* Add `replicas` replicas of spec, each on tp x pp fresh GPUs (stage by stage; nodes filled
 * gpus_per_node at a time, a TP group never straddling nodes when it fits in one) and each with
 * pp containers, plus one NVLink/PCIe link per node and a network link. Sizes a replica's KV
 * pool from one GPU's memory:
 * blocks = floor((util * HBM - weights - activations - runtime) / block bytes), split evenly
 * between its pp containers. 0, SS_EINVAL (does not fit, with the numbers in eb) or
 * SS_ENOMEM. */
int gmg_add_containers(gmg *g, const gmg_ctr_spec *spec, uint32_t replicas, ss_errbuf *eb);

/* Give the empty, non-pipelined container c to another tenant or model (spec; same TP degree):
 * new cost model, KV pool and memory ledger of its GPUs. 0, SS_EINVAL (not empty, other shape,
 * or the model does not fit, with the numbers in eb) or SS_ENOMEM; c unchanged on failure. */
int gmg_container_retarget(gmg *g, gmg_container *c, const gmg_ctr_spec *spec, ss_errbuf *eb);
/* A container's life (the only code that changes its status): an active one drains (takes no
 * new requests); a drained or new one goes to standby; a drained or standby one loads weights
 * until ready_at; a loaded one becomes active. Any other move is corrupted state: fatal. */
void gmg_ctr_drain(gmg_container *c);
void gmg_ctr_standby(gmg_container *c);
void gmg_ctr_load(gmg_container *c, ss_time ready_at);
void gmg_ctr_activate(gmg_container *c);
/* A request that never joined a queue (its setup failed) gives its slot back. */
void gmg_req_drop(gmg *g, gmg_id r);

/* Take a free request slot (state WAITING-to-be, links cleared). GMG_NONE on SS_ENOMEM. */
gmg_id gmg_req_alloc(gmg *g);
/* Return a finished or rejected request's slot (and free its prefix-block ids). */
void gmg_req_free(gmg *g, gmg_id r);
static inline gmg_req *gmg_req_at(gmg *g, gmg_id r) { return &g->reqs[r]; }
/* Read-only, for policies and observers. */
static inline const gmg_req *gmg_req_get(const gmg *g, gmg_id r) { return &g->reqs[r]; }

/* List primitives (the request must not be in another list). */
void gmg_list_push_back(gmg *g, gmg_list *l, gmg_id r);
void gmg_list_push_front(gmg *g, gmg_list *l, gmg_id r);
void gmg_list_remove(gmg *g, gmg_list *l, gmg_id r);
/* Insert r right after `after` (GMG_NONE: at the front). */
void gmg_list_insert_after(gmg *g, gmg_list *l, gmg_id after, gmg_id r);

/* KV blocks a request needs to hold `tokens` tokens. */
static inline uint32_t gmg_blocks_for(const gmg_container *c, uint64_t tokens)
{
    return (uint32_t)((tokens + c->block_tokens - 1) / c->block_tokens);
}
/* Whether a request holding `blocks` blocks has room for `tokens` tokens (no division). */
static inline int gmg_blocks_hold(const gmg_container *c, uint32_t blocks, uint64_t tokens)
{
    return (uint64_t)blocks * c->block_tokens >= tokens;
}
/* Grow r's blocks to `blocks` (from the container's free pool) or release them all
 * (blocks = 0). Over-allocation or a negative pool is corrupted state: fatal. Updates the
 * GPUs' ledgers. */
void gmg_req_set_blocks(gmg *g, gmg_container *c, gmg_req *r, uint32_t blocks);
/* n new KV blocks from c's free pool for requests whose blocks the caller counts itself (the
 * simulator's steady runs and decode cohorts), one at a time as gmg_req_set_blocks takes each
 * request's next block: the prefix cache evicts as it must, the peaks and the GPUs' ledgers
 * follow. More than the free pool is corrupted state: fatal. */
void gmg_take_blocks_each(gmg *g, gmg_container *c, uint32_t n);

/* Move r's KV blocks to host swap space (swap out) or back (swap in), updating both pools and
 * the GPU ledgers. Over-allocation is corrupted state: fatal. */
void gmg_req_swap_out(gmg *g, gmg_container *c, gmg_req *r);
void gmg_req_swap_in(gmg *g, gmg_container *c, gmg_req *r);

/* ---- request state transitions ----------------------------------------------------------- */
/* The only functions that move a request from one state to another. Each keeps the queues, the
 * container's counters (waiting_blocks, blocks in transit, offloaded) and the KV ledger in step;
 * the simulator adds what it records (metrics, notifications). */

/* Where a request joins a waiting queue: at the back (arrival order), at the front (a
 * preempted request), or after the last request of the same or a better tier that was never
 * preempted ((tier, arrival) order). */
typedef enum gmg_enqueue { GMG_ENQ_BACK, GMG_ENQ_FRONT, GMG_ENQ_TIER } gmg_enqueue;

/* r (new, preempted or rerouted) joins c's waiting queue; its pending work's blocks count in
 * c's waiting_blocks. */
void gmg_req_enqueue(gmg *g, gmg_container *c, gmg_id r, gmg_enqueue where);
/* r leaves c's waiting queue (and its demand c's waiting_blocks). */
void gmg_req_dequeue(gmg *g, gmg_container *c, gmg_id r);
/* r, taken out of its container's queue (gmg_req_dequeue), joins container `to`'s. */
void gmg_req_reroute(gmg *g, gmg_container *to, gmg_id r, gmg_enqueue where);
/* Waiting -> running. */
void gmg_req_admit(gmg *g, gmg_container *c, gmg_id r);
/* Running r joins the iteration being decided for q_tok tokens of its pending work, holding
 * at least `hold` KV blocks (and what its tokens need); the batch's work grows by it. Inline
 * (below), like gmg_req_progress: both run for every request of every iteration. */
static inline void gmg_req_schedule(gmg *g, gmg_container *c, gmg_id r, uint32_t q_tok,
                                    uint32_t hold);
/* The KV blocks q will hold once gmg_req_schedule(.., q_tok, hold) has run: more than it holds
 * when its tokens or the reservation need them. */
static inline uint32_t gmg_req_schedule_blocks(const gmg_container *c, const gmg_req *q,
                                               uint32_t q_tok, uint32_t hold);
/* Running -> the front of the waiting queue, its KV dropped and its work to recompute. */
void gmg_req_preempt(gmg *g, gmg_container *c, gmg_id r);
/* Running -> swapped: its KV to host swap space (the iteration's swap_blocks count it). */
void gmg_req_to_swap(gmg *g, gmg_container *c, gmg_id r);
/* Swapped -> running: its KV back on the GPUs (counted in swap_blocks too). */
void gmg_req_from_swap(gmg *g, gmg_container *c, gmg_id r);
/* r's iteration ended at `now`: its scheduled tokens are computed. 1 when that emitted a token
 * (*gap: the time since its previous token; -1 for its first). */
static inline int gmg_req_progress(gmg_req *q, ss_time now, ss_time *gap);
/* Waiting, running or swapped -> `end` (GMG_REQ_DONE or GMG_REQ_REJECTED) at `now`: out of
 * every queue, its GPU and host blocks freed. The slot stays until gmg_req_free. */
void gmg_req_end(gmg *g, gmg_container *c, gmg_id r, gmg_req_state end, ss_time now);
/* Waiting -> offloaded: its prefill runs on other GPUs while it holds `blocks` KV blocks at
 * home. */
void gmg_req_offload(gmg *g, gmg_container *home, gmg_id r, uint32_t blocks);
/* Offloaded -> running at home with its prompt computed and its first token at `now`. */
void gmg_req_offload_back(gmg *g, gmg_container *home, gmg_id r, ss_time now);
/* Running r (its first pc_shared blocks taken from the prefix cache, nothing computed past
 * them) -> loading from the KV pool until `ready`, holding `blocks` blocks: the cached ones
 * and those its loaded blocks land in. */
void gmg_req_load(gmg *g, gmg_container *c, gmg_id r, uint32_t blocks, ss_time ready);
/* Loading -> the front of the waiting queue (`where`), its loaded blocks in the prefix cache
 * (they count as cached when it is admitted again) and every block released to the cache. */
void gmg_req_load_done(gmg *g, gmg_container *c, gmg_id r, gmg_enqueue where);
/* Running -> migrating: stopped on `from`, its blocks in transit. */
void gmg_req_migrate_out(gmg *g, gmg_container *from, gmg_id r);
/* Migrating -> running on `to`: its blocks leave `from` and take the `reserved` blocks `to`
 * set aside for them. */
void gmg_req_migrate_in(gmg *g, gmg_container *from, gmg_container *to, gmg_id r,
                        uint32_t reserved);

/* Running r, prefilled on prefill instance c with its first token, leaves c's running list:
 * running -> kv-transfer, its blocks held by c (blocks_in_transit, pc_shared_in_transit) until
 * gmg_req_kv_in. */
void gmg_req_kv_out(gmg *g, gmg_container *c, gmg_id r);
/* Kv-transfer -> running on decode instance `to`: its blocks leave `from` and take the
 * `reserved` blocks `to` set aside for them (at least as many as it held on `from`). */
void gmg_req_kv_in(gmg *g, gmg_container *from, gmg_container *to, gmg_id r, uint32_t reserved);

/* Bytes one GPU of c moves over PCIe to swap `blocks` KV blocks. */
double gmg_swap_bytes_per_gpu(const gmg *g, const gmg_container *c, uint32_t blocks);

/* Reserve n free blocks of c for an incoming migration (they count as used in the ledger), or
 * release n reserved blocks. Reserving more than is free is corrupted state: fatal. */
void gmg_reserve_blocks(gmg *g, gmg_container *c, uint32_t n);
void gmg_release_reserved(gmg *g, gmg_container *c, uint32_t n);
/* Lend n free KV blocks of c to staged guest weights, or take n of them back. Lending more than
 * is free, or taking back more than is lent, is corrupted state: fatal. */
void gmg_stage_blocks(gmg *g, gmg_container *c, uint32_t n);
void gmg_unstage_blocks(gmg *g, gmg_container *c, uint32_t n);
/* Move per_gpu bytes from each of the n GPUs src .. src + n - 1 to dst .. dst + n - 1 (a TP
 * group's shards, in parallel), no earlier than `earliest`. Every GPU has its own send and
 * receive port of the link kind's per-GPU bandwidth (the node's NVLink or PCIe within a node,
 * the network across nodes), as with NVSwitch and one NIC per GPU: the transfer starts when
 * all its ports are free, occupies them until it lands, and counts on the link's bytes.
 * The transfer gets the fraction `eff` (0 < eff <= 1) of the ports' peak bandwidth (what a
 * copy attains of the link's spec-sheet figure; 1: the peak). Returns the arrival time. */
ss_time gmg_transfer(gmg *g, gmg_id src, gmg_id dst, uint32_t n, double per_gpu, double eff,
                     ss_time earliest);
/* The link a transfer from GPU src to GPU dst takes: the node's NVLink/PCIe link when both sit
 * on one node, else the network. */
const gmg_link *gmg_link_between(const gmg *g, gmg_id src, gmg_id dst);
/* How long gmg_transfer occupies the ports for per_gpu bytes over link l at efficiency eff:
 * per_gpu / (bw x eff) + the link's latency, ns. */
ss_time gmg_transfer_ns(const gmg_link *l, double per_gpu, double eff);

/* Memory of GPU u that nothing holds: capacity minus weights, KV blocks in use, activation
 * reserve, runtime and transfer buffers (free KV blocks of the pool count as free). */
static inline double gmg_gpu_free_bytes(const gmg_gpu *u)
{
    const gmg_mem *m = &u->mem;
    return u->capacity - m->weights - m->kv_used - m->activations - m->runtime - m->transfer;
}

/* Memory of GPU u outside every reservation (weights, KV pool, activations, runtime, transfer
 * buffers): what a guest may use without touching its container's KV pool. */
static inline double gmg_gpu_spare_bytes(const gmg_gpu *u)
{
    const gmg_mem *m = &u->mem;
    return u->capacity - m->weights - m->kv_pool - m->activations - m->runtime - m->transfer;
}

/* Account dur ns of work of container c on the GPUs of its pipeline stage `stage`. */
/* First GPU of pipeline stage `stage` of c's replica. */
static inline gmg_id gmg_stage_gpu(const gmg_container *c, uint32_t stage)
{
    return c->gpu0 + stage * c->tp;
}
/* Time of the activation send that closes pipeline stage `stage` of c's executing iteration:
 * the network when the next stage sits on another node, else the cost model's pp_send. The
 * operator's shape goes to *op_out when non-NULL. */
ss_time gmg_stage_send_ns(const gmg *g, const gmg_container *c, uint32_t stage, cost_op *op_out);
/* Time to move `bytes` from stage `stage` to the next one when they sit on different nodes
 * (the network link); 0 when both share a node (the cost model times that send). */
ss_time gmg_cross_node_send_ns(const gmg *g, const gmg_container *c, uint32_t stage,
                               double bytes);

/* Expand the executing iteration of c into operator nodes in execution order, stage by stage
 * (host, any wait for guest operators, swaps and embedding on the first, its layers, the final
 * norm and LM head on the last, a pp_send closing every other stage), each with its predicted
 * start/end from the cost model from its stage's start, placed on the stage's first GPU, and the edges between consecutive
 * operators. Returns the number of operators (which may exceed cap: then only cap were
 * written); edges_out may be NULL. */
size_t gmg_iter_expand(const gmg *g, const gmg_container *c, gmg_op *ops_out, size_t cap,
                       gmg_edge *edges_out);

/* ---- automatic prefix caching (gmg_pcache.c) ------------------------------------------------
 * Per container, as vLLM's: a full prompt block is identified by a chained hash (its content id
 * and its parent's hash), so a block can only be hit when its whole chain of predecessors is
 * cached. Cache blocks are refcounted by the requests that share them; a block nobody reads
 * stays cached and counts as free (blocks_free), and is evicted, least recently released first,
 * when an allocation needs more blocks than the uncached free ones. A request releases its
 * blocks leaf first, so a chain's tail is evicted before its head.
 * The semantics are block by block; the layout is by runs. A request holds a prefix of its chain
 * (refcounts never grow along a chain) and a release puts blocks in the LRU order leaf first, so
 * a cached block's parent is always cached (eviction takes a block's idle descendants before it)
 * and the cached blocks form a tree of chains. A run is a segment [lo, hi) of one chain whose
 * blocks share one state: held with one refcount, or idle at one place in the LRU
 * order (its blocks in it leaf first, block hi - 1 evicted first). Runs are indexed by their
 * first block's hash: a walk down a chain from block 0 enters each run at its first block and
 * leaves it at its end or where the chain diverges from it (since hashes are chained, equal
 * hashes at a position mean equal chains up to it: one comparison tells whether the chain
 * follows a run to its end). Takes, releases and registrations split runs at the ends of what
 * they touch and join neighbours left in one state; eviction shortens the head run of the LRU
 * list by as many blocks as it needs. Everything costs O(runs touched), not O(blocks). */
typedef struct gmg_pc_ent { /* a run */
    uint64_t key;        /* hash of its first block (block lo): its key in the index */
    uint64_t pkey;       /* hash of block lo - 1, the parent of its first (0 when lo = 0) */
    struct gmg_chain *ch; /* where its hashes are: block j's is ch->key[j - ch->base]; a
                            reference; NULL for an unused slot */
    uint32_t lo, hi;     /* chain positions of its blocks, lo < hi */
    uint32_t ref;        /* requests reading each of its blocks; 0 = idle (in the LRU list) */
    uint32_t prev, next; /* LRU links (idle) or free-list link (unused); GMG_NONE at the ends */
} gmg_pc_ent;

typedef struct gmg_pcache {
    uint32_t cap;            /* blocks: the container's blocks_total (runs at most as many) */
    uint32_t n_held;         /* blocks with ref > 0 (held by the cache, not free) */
    uint32_t n_idle;         /* blocks with ref 0 (cached but counted in blocks_free) */
    uint32_t n_runs;         /* runs in use */
    uint32_t hw;             /* run slots ever used: ent[0, hw) (a copy copies these) */
    uint32_t lru_head, lru_tail; /* idle runs, least recently released first */
    uint32_t free_ent;       /* unused run slots below hw, through next */
    uint32_t tab_mask;       /* index of runs by key (linear probing), tab_mask + 1 slots in use:
                                grows with the runs, up to tab_cap */
    uint32_t tab_cap;        /* index slots allocated */
    uint64_t evictions;      /* cached blocks evicted */
    uint64_t refs;           /* sum of the blocks' ref (kept for the O(1) check) */
    uint32_t *tab;           /* points into this allocation */
    gmg_pc_ent *ent;         /* runs; points into this allocation */
} gmg_pcache;

/* A request's prefix-block chain: the chained hash of each full prompt block that carries an
 * identity (key[j] hashes block j's content and key[j - 1]), for containers of bt tokens per
 * block. Computed once when the request arrives, read-only after, and shared by the request
 * and its copies in what-if forks (ref counts them) and by the cache runs that hold its blocks:
 * every lookup, take, registration and release reads it instead of hashing again. */
typedef struct gmg_chain {
    uint32_t ref;     /* requests and cache runs holding it */
    uint32_t n;       /* keys */
    uint32_t bt;      /* block tokens they were computed for */
    uint32_t base;    /* chain position of key[0]: 0 for a request's chain; a cache's copy of a
                         short run's hashes starts at the run */
    uint64_t key[];
} gmg_chain;

/* Give r (its prompt set) the chain of its identity for containers of bt tokens per block:
 * from ids[0..r->n_prefix_blocks) (Mooncake ids of 512-token blocks: engine block j hashes the
 * id(s) under its tokens and its offset in them), else from r->session_id (block j hashes
 * (session, j)); none when r has neither or its prompt fills no block. 0 or SS_ENOMEM. */
int gmg_pc_chain_make(gmg_req *r, const uint32_t *ids, uint32_t bt);
/* Drop r's hold on its chain (freed with its last holder). */
void gmg_pc_chain_drop(gmg_req *r);
/* Prompt blocks of r that carry an identity (full blocks only: the last partial block is never
 * shared), for containers of block_tokens tokens per block: its chain's keys. 0 when r has none
 * (or a chain made for another block size). */
static inline uint32_t gmg_pc_blocks(const gmg_req *r, uint32_t block_tokens)
{
    return r->chain && r->chain->bt == block_tokens ? r->chain->n : 0;
}
/* The chained hash of r's block j (j < gmg_pc_blocks). */
static inline uint64_t gmg_pc_key(const gmg_req *r, uint32_t j) { return r->chain->key[j]; }
/* Blocks of r's chain cached in c now, at most max (the walk stops at the first miss); *idle_out
 * (may be NULL) gets how many of them nobody reads. Changes nothing. */
uint32_t gmg_pc_match(const gmg_container *c, const gmg_req *r, uint32_t max, uint32_t *idle_out);
/* A walk down r's chain in c's cache from block 0 (gmg_pc_walk_start), one run at a time:
 * each gmg_pc_walk_next gives the next stretch of cached blocks, [previous end, *hi_out), all
 * read by *ref_out requests (0: idle), and returns 0 at the first block not cached or at the
 * limit. Changes nothing; the cache must not change during the walk. */
typedef struct gmg_pc_walk {
    const struct gmg_pcache *pc; /* NULL: nothing to walk */
    const uint64_t *key;         /* the chain's hashes */
    uint32_t lim;                /* blocks to walk at most */
    uint32_t j;                  /* next block */
    uint32_t e;                  /* run holding block j - 1 (GMG_NONE at the start) */
} gmg_pc_walk;
void gmg_pc_walk_start(gmg_pc_walk *w, const gmg_container *c, const gmg_req *r, uint32_t max);
int gmg_pc_walk_next(gmg_pc_walk *w, uint32_t *hi_out, uint32_t *ref_out);
/* r (holding no blocks) takes the first h blocks of its chain from the cache (all matched by
 * gmg_pc_match): r->blocks = r->pc_shared = h. Idle ones leave the free pool. */
void gmg_pc_take(gmg *g, gmg_container *c, gmg_req *r, uint32_t h);
/* r's prefill is done: its full prompt blocks past pc_shared join the cache (an equal block
 * already there is shared instead and r's copy freed). No-op when caching is off. */
void gmg_pc_register(gmg *g, gmg_container *c, gmg_req *r);
/* Copy (O(runs): a what-if fork's), create (for c->blocks_total blocks; O(1)) and free a
 * container's cache. 0 or SS_ENOMEM. */
int gmg_pc_create(gmg_pcache **pc_out, uint32_t blocks);
int gmg_pc_clone(const gmg_pcache *src, gmg_pcache **out);
void gmg_pc_destroy(gmg_pcache **pc);
/* Give every container a cache (they must hold no shared blocks): caching from now on; sets
 * g->prefix_cache. 0 or SS_ENOMEM (then nothing changed). */
int gmg_pc_enable(gmg *g);
/* The blocks c's cache offloaded into the KV pool since the last call (kvp_offload_pending),
 * whose copies out the simulator charges; the count starts again at 0. */
static inline uint32_t gmg_kvp_take_offloads(gmg_container *c)
{
    uint32_t n = c->kvp_offload_pending;
    c->kvp_offload_pending = 0;
    return n;
}
/* Evict idle cached blocks of c until n of its free blocks are uncached: what taking n free
 * blocks would evict, done ahead of the allocation (into the KV pool when there is one, counted
 * in c->kvp_offload_pending). No-op without a cache; n at most c->blocks_free. */
void gmg_pc_reclaim(gmg *g, gmg_container *c, uint32_t n);
/* Blocks of r not shared with the cache. */
static inline uint32_t gmg_req_private(const gmg_req *r) { return r->blocks - r->pc_shared; }
/* The KV blocks running request r of c gives back to c's free pool when it drops its blocks
 * (preempted, swapped out, ended) right after every running request newer than it (after it in
 * c's running list) dropped theirs: its private blocks, and the cached blocks it shares that no
 * request left reads (they go back idle, counted free); a cached block another request still
 * reads stays held. Summed from the newest up, what evicting the newest running requests frees,
 * as a batching policy credits it. Changes nothing. O(1) when r shares no cached block, else
 * O(runs of its shared prefix x newer requests x log blocks). */
uint32_t gmg_req_frees_after_newer(const gmg *g, const gmg_container *c, gmg_id r);
/* Containers ctrs[0 .. n) (tp = pp = 1, no prefix cache, holding no blocks) share one KV pool of
 * pool_bytes: each sees the pool's free bytes as its free blocks, and takes from it as it does
 * from a pool of its own (MuxServe's unified KV cache). 0, or SS_EINVAL with eb set. */
int gmg_mux_link(gmg *g, const gmg_id *ctrs, uint32_t n, double pool_bytes, ss_errbuf *eb);
/* After a change of c's blocks: every container of c's shared pool sees what is free now (its
 * blocks_free, blocks_total and its GPU's kv_pool in its own blocks). Nothing for a container
 * with a pool of its own. */
void gmg_mux_sync(gmg *g, const gmg_container *c);
/* The blocks of block_bytes that free_bytes of a shared pool make (gmg_mux_sync, gmg_check). */
static inline uint32_t gmg__mux_blocks(double free_bytes, double block_bytes)
{
    double f = free_bytes > 0 ? floor(free_bytes / block_bytes) : 0;
    return f < (double)(UINT32_MAX / 2) ? (uint32_t)f : UINT32_MAX / 2;
}
/* gmg.c internals used by gmg_pcache.c */
void gmg__pc_release(gmg *g, gmg_container *c, gmg_req *r);
void gmg__pc_make_room(gmg *g, gmg_container *c, uint32_t n);
void gmg__ledger_kv(gmg *g, const gmg_container *c, int64_t delta);
int gmg__pc_check(const gmg *g, const gmg_container *c, uint64_t shared, int deep,
                  ss_errbuf *eb);

/* ---- the KV pool below the prefix caches (gmg_kvpool.c) -------------------------------------
 * Per node, a CPU DRAM tier and an optional SSD tier, each LRU and bounded in bytes: a block
 * a prefix cache evicts is offloaded to its container's node's CPU tier, whose least recently
 * used blocks go down to the node's SSD tier, whose own are dropped. Blocks are keyed by the
 * prefix cache's chained hash, namespaced by tenant and model (and by node when each node's
 * pool serves its own GPUs only); in `cluster` scope one key is held once in the whole
 * cluster, on the node that offloaded it. A load copies blocks out (the pool keeps them, as
 * the most recently used); nothing in the pool is pinned. */
enum { GMG_KVP_CPU = 0, GMG_KVP_SSD = 1, GMG_KVP_TIERS = 2, GMG_KVP_FREE = 0xff };

typedef struct gmg_kvp_ent {
    uint64_t key;         /* namespaced chained hash (gmg_kvp_key) */
    uint64_t bytes;       /* the block's KV, every GPU of its replica together */
    uint32_t prev, next;  /* links in its (node, tier) LRU list, or the free list (next) */
    uint32_t node;        /* node whose memory holds it */
    uint16_t tenant;      /* tenant whose cache offloaded it (counters) */
    uint8_t tier;         /* GMG_KVP_CPU, GMG_KVP_SSD, GMG_KVP_FREE for an unused entry */
} gmg_kvp_ent;

typedef struct gmg_kvp_tier {
    uint32_t head, tail;  /* least recently used first */
    uint32_t n;           /* blocks */
    uint64_t bytes;       /* their bytes, at most the tier's capacity */
} gmg_kvp_tier;

/* What the pool did for one tenant's caches. */
typedef struct gmg_kvp_tenant {
    uint64_t offload_blocks;  /* blocks offloaded into the CPU tier */
    uint64_t offload_bytes;
    uint64_t demotions;       /* blocks moved from the CPU tier down to the SSD tier */
    uint64_t evictions;       /* blocks dropped from the pool */
} gmg_kvp_tenant;

typedef struct gmg_kvpool {
    uint64_t cap[GMG_KVP_TIERS];   /* bytes per node and tier (0: no such tier) */
    int cluster;                   /* one pool over every node (else each node's serves its own) */
    uint32_t n_nodes;
    gmg_kvp_tier *tiers;           /* owned: n_nodes x GMG_KVP_TIERS, node-major */
    gmg_kvp_ent *ent;              /* owned: cap_ent entries */
    uint32_t cap_ent, free_ent;    /* free entries through next */
    uint32_t *tab;                 /* owned: entry ids by key, linear probing, tab_mask + 1 */
    uint32_t tab_mask;
    uint32_t n_used;               /* blocks held */
    uint64_t total[GMG_KVP_TIERS]; /* bytes held per tier, every node together */
    uint64_t peak[GMG_KVP_TIERS];  /* the highest total seen */
    gmg_kvp_tenant *ten;           /* owned: n_tenants entries */
    uint32_t n_tenants;
    uint64_t oom;                  /* blocks not offloaded for want of bookkeeping memory */
} gmg_kvpool;

/* Node of container c (of its first GPU). */
static inline uint32_t gmg_ctr_node(const gmg *g, const gmg_container *c)
{
    return g->gpus[c->gpu0].node;
}
/* Give g a pool (replacing any) of cpu_bytes and ssd_bytes per node over `nodes` nodes,
 * `cluster` scope or per node, counting for `tenants` tenants. 0 or SS_ENOMEM (g unchanged). */
int gmg_kvp_create(gmg *g, uint64_t cpu_bytes, uint64_t ssd_bytes, int cluster, uint32_t nodes,
                   uint32_t tenants);
int gmg_kvp_clone(const gmg_kvpool *src, gmg_kvpool **out);
void gmg_kvp_destroy(gmg_kvpool **p);
/* The pool's key of c's prefix-cache block `key` (never 0). */
uint64_t gmg_kvp_key(const gmg *g, const gmg_container *c, uint64_t key);
/* Entry of c's block `key` in the pool c reaches, GMG_NONE when absent. Changes nothing. */
uint32_t gmg_kvp_find(const gmg *g, const gmg_container *c, uint64_t key);
/* Entry e was read (loaded): the most recently used of its tier. */
void gmg_kvp_touch(gmg *g, uint32_t e);
/* c's prefix cache evicts block `key`: into the pool (gmg_pcache.c calls it). 1 when that
 * copied the block into the pool (it was not there and fits), else 0. */
int gmg__kvp_put(gmg *g, const gmg_container *c, uint64_t key);
/* The pool's invariants (see gmg_kvpool.c); deep walks it. 0 or SS_ECHECK. */
int gmg__kvp_check(const gmg *g, int deep, ss_errbuf *eb);
/* The work a deep pool check does (0 without a pool). */
uint64_t gmg_kvp_check_units(const gmg *g);

/* Check every invariant of the graph as it stands: each container's KV and swap blocks within
 * [0, pool] and conserved (free + held = pool), each GPU's memory ledger within [0, capacity],
 * every request slot in exactly one state (the free list, or one container's waiting, running
 * or swapped list matching its state, or migrating/offloaded, counts agreeing with in_flight),
 * and every request's tokens in order (generated <= output, computed <= prompt + generated, a
 * first token exactly when something was generated, arrival <= first token <= latest token).
 * 0, or SS_ECHECK with the first violation in eb, naming the container, GPU or request (trace
 * id and slot) and the values. O(slots). */
int gmg_check(const gmg *g, ss_errbuf *eb);
/* gmg_check without what costs O(waiting requests): the slot scan and the waiting lists (their
 * requests are taken to hold no GPU blocks, as a full check found). Every container's and GPU's
 * bounds and block conservation, and the running and swapped requests, are still checked.
 * O(containers + GPUs + running + swapped). */
int gmg_check_active(const gmg *g, ss_errbuf *eb);
/* gmg_check (full) or gmg_check_active, with the prefix caches' counters checked in O(1) and,
 * when deep, every cache walked (table, LRU list, refcounts, each running request's chain:
 * O(cache blocks)); gmg_check and gmg_check_active walk them always / never. */
int gmg_check_mode(const gmg *g, int full, int deep, ss_errbuf *eb);
/* The work a deep prefix-cache check does: the caches' blocks and table slots (0 without). */
uint64_t gmg_pc_check_units(const gmg *g);


/* ---- the transitions every iteration makes, inline --------------------------------------- */

static inline uint32_t gmg_req_schedule_blocks(const gmg_container *c, const gmg_req *q,
                                               uint32_t q_tok, uint32_t hold)
{
    uint64_t tokens = (uint64_t)q->computed + q_tok;
    if (gmg_blocks_hold(c, q->blocks, tokens) && hold <= q->blocks)
        return q->blocks;
    uint32_t blocks = gmg_blocks_for(c, tokens);
    return hold > blocks ? hold : blocks;
}

static inline void gmg_req_schedule(gmg *g, gmg_container *c, gmg_id r, uint32_t q_tok,
                                    uint32_t hold)
{
    gmg_req *q = &g->reqs[r];
    uint32_t pending = q->prompt + q->generated - q->computed;
    uint64_t tokens = (uint64_t)q->computed + q_tok;
    uint32_t blocks = gmg_req_schedule_blocks(c, q, q_tok, hold);
    if (blocks != q->blocks)
        gmg_req_set_blocks(g, c, q, blocks);
    if (pending == 1 && q->generated > 0)
        cost_batch_add_decode(&c->iter.batch, tokens);
    else
        cost_batch_add_prefill(&c->iter.batch, q_tok, q->computed);
    q->q_tokens = q_tok;
    c->iter.reqs[c->iter.n_reqs++] = r;
}

static inline int gmg_req_progress(gmg_req *q, ss_time now, ss_time *gap)
{
    *gap = -1;
    q->computed += q->q_tokens;
    q->q_tokens = 0;
    if (q->computed < q->prompt + q->generated)
        return 0; /* a prefill chunk: no token yet */
    q->generated++;
    if (q->first_token < 0) {
        q->first_token = now;
    } else {
        *gap = now - q->last_token;
        q->tbt_sum += *gap;
        if (*gap > q->tbt_max)
            q->tbt_max = *gap;
        q->tbt_over += q->sla_tbt && *gap > q->sla_tbt;
    }
    q->last_token = now;
    return 1;
}

#pragma GCC visibility pop

#endif
