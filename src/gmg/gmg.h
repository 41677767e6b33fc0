/* The Global Mapping Graph: the one cluster-wide state. GPUs with a memory ledger and a
 * busy/idle account, links, containers (a model served on TP GPUs with a KV-block pool and
 * waiting/running queues), requests in flight (recycled slots, so memory follows requests in
 * flight, not trace length), the iteration each container is executing, and the operator
 * nodes an iteration expands into when a policy or a timeline asks for them.
 * gmg/ holds data and the primitive state transitions (queue moves, block accounting) with
 * their invariant checks; deciding what to do is policy/'s job, driving time is gsim/'s. */
#ifndef SS_GMG_GMG_H
#define SS_GMG_GMG_H

#include <stddef.h>
#include <stdint.h>

#include "../catalog/catalog.h"
#include "../core/ss_err.h"
#include "../core/ss_time.h"
#include "../cost/cost.h"

typedef uint32_t gmg_id;
#define GMG_NONE UINT32_MAX

/* ---- requests --------------------------------------------------------------------------- */

typedef enum gmg_req_state {
    GMG_REQ_FREE = 0, /* slot unused */
    GMG_REQ_WAITING,  /* in its container's waiting queue (new or preempted) */
    GMG_REQ_RUNNING,  /* in its container's running list, KV blocks held */
    GMG_REQ_SWAPPED,  /* preempted by swap: its KV blocks sit in host memory */
    GMG_REQ_DONE,     /* all output tokens produced; slot about to be recycled */
    GMG_REQ_REJECTED, /* can never be served (too long for the KV cache or max_model_len) */
} gmg_req_state;

typedef struct gmg_req {
    /* from the trace */
    uint64_t trace_id;     /* request id in the trace */
    ss_time arrival;       /* ns, after rate scaling */
    uint32_t prompt;       /* prompt tokens */
    uint32_t output;       /* output tokens to generate (capped by max_model_len) */
    uint32_t output_asked; /* output tokens the trace asked for */
    uint16_t tenant;       /* tenant index */
    uint8_t tier;          /* SLA tier, 0 = highest */
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

typedef struct gmg_gpu {
    gmg_id id;
    uint32_t node;          /* node index */
    const cat_gpu *kind;    /* borrowed from the catalog */
    double capacity;        /* usable HBM, bytes */
    gmg_mem mem;            /* ledger */
    gmg_id container;       /* container using it, GMG_NONE if idle */
    ss_time busy_ns;        /* total time executing iterations */
    uint64_t iterations;    /* iterations executed */
    double kv_used_peak;    /* highest kv_used seen, bytes */
} gmg_gpu;

typedef enum gmg_link_kind { GMG_LINK_NVLINK, GMG_LINK_PCIE, GMG_LINK_NET } gmg_link_kind;

typedef struct gmg_link {
    gmg_id id;
    gmg_link_kind kind;
    uint32_t node;          /* node it belongs to (GMG_NONE for the network) */
    double bw;              /* bytes/s per direction */
    double latency_s;       /* per message */
    ss_time busy_until;     /* occupancy: transfers queue behind this time */
    double bytes_moved;     /* total bytes carried */
} gmg_link;

/* ---- iterations and operators ----------------------------------------------------------- */

/* One executing forward pass of a container. */
typedef struct gmg_iter {
    uint64_t seq;           /* per-container iteration number */
    ss_time start, end;     /* predicted = actual on the fast path */
    ss_time swap_ns;        /* KV swap transfers over PCIe before the forward pass */
    uint32_t swap_blocks;   /* KV blocks swapped out + in by this iteration */
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

typedef struct gmg_container {
    gmg_id id;
    uint16_t tenant;        /* tenant it serves */
    const cat_model *model; /* borrowed */
    uint32_t tp;            /* tensor-parallel degree */
    gmg_id gpu0;            /* first GPU; the TP group is gpu0 .. gpu0 + tp - 1 */
    cost_model *cost;       /* owned */
    uint32_t block_tokens;  /* tokens per KV block */
    uint32_t blocks_total;  /* KV blocks in the pool */
    uint32_t blocks_free;   /* not held by any request */
    uint32_t blocks_peak;   /* most blocks held at once */
    uint32_t swap_total;    /* host-memory swap space, in KV blocks */
    uint32_t swap_free;     /* swap blocks not holding a swapped request */
    gmg_list waiting;       /* FCFS; preempted requests return to the front */
    gmg_list running;       /* admission order */
    gmg_list swapped;       /* preempted by swap, in the order they were swapped out */
    uint64_t waiting_blocks;/* sum of the waiting requests' wait_blocks (routing demand) */
    int busy;               /* an iteration is executing */
    gmg_iter iter;          /* the executing (or last) iteration */
    uint64_t iterations;    /* iterations completed */
    void *batch_priv;       /* extension slot: the batching policy's per-container state
                               (allocated and owned by gsim; NULL when the policy has none) */
} gmg_container;

/* ---- the graph -------------------------------------------------------------------------- */

typedef struct gmg {
    gmg_gpu *gpus;
    uint32_t n_gpus;
    gmg_link *links;
    uint32_t n_links;
    gmg_container *ctrs;
    uint32_t n_ctrs;
    gmg_req *reqs;          /* slot array, grows with requests in flight */
    uint32_t n_slots, cap_slots;
    gmg_id free_slot;       /* free-list head through gmg_req.next */
    uint32_t in_flight;     /* slots in use */
    uint32_t peak_in_flight;
} gmg;

/* How one container is laid out and sized. */
typedef struct gmg_ctr_spec {
    uint16_t tenant;
    const cat_model *model;
    const cat_gpu *gpu;
    uint32_t tp;
    const char *cost_backend;   /* "roofline" */
    const char *profiles_dir;   /* catalog directory for profile-table backends (borrowed) */
    double gpu_mem_util;        /* fraction of HBM the engine may use (vLLM's 0.9) */
    uint32_t block_tokens;      /* 16 */
    uint64_t max_batch_tokens;  /* sizes the activation reserve */
    uint32_t max_seqs;          /* sizes the logits part of the reserve */
    double runtime_reserve;     /* CUDA context and workspaces, bytes */
    double swap_bytes;          /* host swap space per GPU for preemption by swap, bytes */
} gmg_ctr_spec;

/* Create an empty cluster. 0 or SS_ENOMEM. */
int gmg_create(gmg **g_out);
/* Free everything, including containers' cost models. NULL-safe; sets *g to NULL. */
void gmg_destroy(gmg **g);
/* Add `replicas` containers of spec, each on its own TP group of fresh GPUs, nodes filled
 * gpus_per_node at a time (a TP group never straddles nodes when it fits in one), with one
 * NVLink/PCIe link per node and a network link. Sizes each KV pool from memory:
 * blocks = floor((util * HBM - weights - activations - runtime) / block bytes).
 * 0, SS_EINVAL (the model does not fit, with the numbers in eb) or SS_ENOMEM. */
int gmg_add_containers(gmg *g, const gmg_ctr_spec *spec, uint32_t replicas, ss_errbuf *eb);

/* Take a free request slot (state WAITING-to-be, links cleared). GMG_NONE on SS_ENOMEM. */
gmg_id gmg_req_alloc(gmg *g);
/* Return a finished or rejected request's slot. */
void gmg_req_free(gmg *g, gmg_id r);
static inline gmg_req *gmg_req_at(const gmg *g, gmg_id r) { return &g->reqs[r]; }

/* List primitives (the request must not be in another list). */
void gmg_list_push_back(gmg *g, gmg_list *l, gmg_id r);
void gmg_list_push_front(gmg *g, gmg_list *l, gmg_id r);
void gmg_list_remove(gmg *g, gmg_list *l, gmg_id r);

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

/* Move r's KV blocks to host swap space (swap out) or back (swap in), updating both pools and
 * the GPU ledgers. Over-allocation is corrupted state: fatal. */
void gmg_req_swap_out(gmg *g, gmg_container *c, gmg_req *r);
void gmg_req_swap_in(gmg *g, gmg_container *c, gmg_req *r);
/* Bytes one GPU of c moves over PCIe to swap `blocks` KV blocks. */
double gmg_swap_bytes_per_gpu(const gmg *g, const gmg_container *c, uint32_t blocks);

/* Account an iteration of container c that ran for dur ns on its GPUs. */
void gmg_account_busy(gmg *g, const gmg_container *c, ss_time dur);

/* Expand the executing iteration of c into operator nodes in execution order (layer by layer,
 * then the per-iteration operators), each with its predicted start/end from the cost model
 * starting at c->iter.start, placed on the home GPU, and the edges between consecutive
 * operators. Returns the number of operators (which may exceed cap: then only cap were
 * written); edges_out may be NULL. */
size_t gmg_iter_expand(const gmg *g, const gmg_container *c, gmg_op *ops_out, size_t cap,
                       gmg_edge *edges_out);

/* Check every invariant of the graph (block conservation, ledger within capacity, list
 * membership matches state). 0, or SS_EINVAL with the first violation in eb. O(in flight). */
int gmg_check(const gmg *g, ss_errbuf *eb);

#endif
