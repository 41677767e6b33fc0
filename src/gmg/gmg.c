/* Global Mapping Graph: construction and cloning. Requests and their state transitions are in
 * gmg_req.c, the operator expansion in gmg_expand.c, the invariants in gmg_check.c, the prefix
 * cache in gmg_pcache.c. */
#include "gmg/gmg.h"

#include "core/ss_alloc.h"

#include <math.h>
#include <string.h>

int gmg_create(gmg **g_out)
{
    gmg *g = ss_calloc(1, sizeof *g);
    if (!g)
        return SS_ENOMEM;
    g->free_slot = GMG_NONE;
    *g_out = g;
    return SS_OK;
}

/* The arrays a graph leaves when emptied (strip), with the elements each holds; their
 * contents are stale. */
typedef struct graph_mem {
    gmg_gpu *gpus;
    uint32_t n_gpus;
    gmg_link *links;
    uint32_t n_links;
    gmg_replica *replicas;
    uint32_t n_replicas;
    gmg_container *ctrs;
    uint32_t n_ctrs;
    gmg_req *reqs;     /* cap_slots entries */
    gmg_id *copied;    /* cap_slots entries too (a partial copy's), or NULL */
    uint32_t cap_slots;
} graph_mem;

/* Empty g down to its arrays, which go into *m: what its containers and requests hold
 * (their iteration lists, prefix caches, cost models unless borrowed, the holds on block
 * chains) and its KV pool are released. g itself is left to be freed or refilled. */
static void strip(gmg *g, graph_mem *m)
{
    for (uint32_t i = 0; i < g->n_ctrs; i++) {
        if (!g->borrowed_costs)
            cost_model_destroy(&g->ctrs[i].cost);
        ss_free(g->ctrs[i].iter.reqs);
        gmg_pc_destroy(&g->ctrs[i].pc);
    }
    gmg_kvp_destroy(&g->kvp);
    uint32_t n;
    const gmg_id *roster = gmg_req_roster(g, &n);
    for (uint32_t k = 0; k < n; k++) {
        gmg_req *q = &g->reqs[roster ? roster[k] : k];
        if (q->state != GMG_REQ_FREE && q->chain)
            gmg_pc_chain_drop(q);
    }
    if (!roster) { /* a slot handed out since may have grown reqs past the list's room */
        ss_free(g->copied);
        g->copied = NULL;
    }
    *m = (graph_mem){g->gpus, g->n_gpus, g->links, g->n_links, g->replicas, g->n_replicas,
                     g->ctrs, g->n_ctrs, g->reqs, g->copied, g->cap_slots};
}

static void mem_free(graph_mem *m)
{
    ss_free(m->gpus);
    ss_free(m->links);
    ss_free(m->replicas);
    ss_free(m->ctrs);
    ss_free(m->reqs);
    ss_free(m->copied);
    memset(m, 0, sizeof *m);
}

void gmg_destroy(gmg **gp)
{
    gmg *g = *gp;
    if (!g)
        return;
    graph_mem m;
    strip(g, &m);
    mem_free(&m);
    ss_free(g);
    *gp = NULL;
}

/* *p made to hold n elements of elem bytes, the block it holds (have elements) kept when large
 * enough; its contents are stale. 0 or SS_ENOMEM (*p NULL). */
static int fit_array(void **p, size_t have, size_t n, size_t elem)
{
    if (*p && have >= n)
        return SS_OK;
    ss_free(*p);
    *p = n ? ss_malloc(n * elem) : NULL;
    return n && !*p ? SS_ENOMEM : SS_OK;
}

/* *p made a copy of n elements of src (fit_array); 0 or SS_ENOMEM. */
static int copy_array(void **p, size_t have, const void *src, size_t n, size_t elem)
{
    if (fit_array(p, have, n, elem))
        return SS_ENOMEM;
    if (n)
        memcpy(*p, src, n * elem);
    return SS_OK;
}

/* A frozen container of a partial copy: its counters, without requests or cache. */
static void freeze(gmg_container *c)
{
    c->frozen = 1;
    c->waiting = c->running = c->swapped = (gmg_list){GMG_NONE, GMG_NONE, 0};
    c->iter.reqs = NULL;
    c->iter.cap = c->iter.n_reqs = 0;
    c->pc = NULL;
}

/* Every slot of src, in one block; their prefix chains shared. Slots beyond n_slots stay
 * unwritten (a slot is initialised when it is first handed out). */
static void clone_all_reqs(gmg *g, const gmg *src)
{
    if (src->n_slots)
        memcpy(g->reqs, src->reqs, src->n_slots * sizeof *g->reqs);
    g->free_slot = src->free_slot;
    g->in_flight = src->in_flight;
    for (uint32_t i = 0; i < src->n_slots; i++) {
        gmg_req *q = &g->reqs[i];
        if (q->state != GMG_REQ_FREE && q->chain) /* shared, read-only */
            q->chain->ref++;
        else
            q->chain = NULL;
    }
}

/* The slots of src whose requests are in kept containers, listed in g->copied; the others
 * free, on a free list that ascends. */
static void clone_kept_reqs(gmg *g, const gmg *src, const uint8_t *keep)
{
    g->copied_allocs = src->n_allocs;
    g->in_flight = 0;
    gmg_id *tail = &g->free_slot;
    for (uint32_t i = 0; i < src->n_slots; i++) {
        const gmg_req *s = &src->reqs[i];
        gmg_req *q = &g->reqs[i];
        if (s->state == GMG_REQ_FREE || s->container >= src->n_ctrs || !keep[s->container]) {
            q->state = GMG_REQ_FREE;
            q->chain = NULL;
            q->n_prefix_blocks = 0;
            *tail = i;
            tail = &q->next;
            continue;
        }
        *q = *s;
        if (q->chain) /* shared, read-only */
            q->chain->ref++;
        g->copied[g->in_flight++] = i;
    }
    *tail = GMG_NONE;
    g->n_copied = g->in_flight;
}

/* The slots of src whose requests come along (all with keep NULL), into g's slot array (and
 * its list of copied slots, for a partial copy) of cap_slots entries, made at least as large
 * as src's. 0 or SS_ENOMEM. */
static int clone_reqs(gmg *g, const gmg *src, const uint8_t *keep)
{
    uint32_t cap = src->cap_slots ? src->cap_slots : 1;
    if (g->cap_slots < cap) {
        ss_free(g->reqs);
        ss_free(g->copied);
        g->reqs = NULL, g->copied = NULL;
        g->cap_slots = cap;
    }
    if (!keep) {
        ss_free(g->copied);
        g->copied = NULL;
    }
    if ((!g->reqs && !(g->reqs = ss_malloc(g->cap_slots * sizeof *g->reqs))) ||
        (keep && !g->copied && !(g->copied = ss_malloc(g->cap_slots * sizeof *g->copied))))
        return SS_ENOMEM;
    if (keep)
        clone_kept_reqs(g, src, keep);
    else
        clone_all_reqs(g, src);
    g->n_slots = src->n_slots; /* what gmg_destroy walks, once they are copied */
    return SS_OK;
}

/* The containers of src into g's array (m->n_ctrs entries before), each counted in n_ctrs
 * once copied: those with keep[id] unset frozen. 0 or SS_ENOMEM. */
static int clone_ctrs(gmg *g, const gmg *src, const uint8_t *keep, const graph_mem *m)
{
    if (fit_array((void **)&g->ctrs, m->n_ctrs, src->n_ctrs ? src->n_ctrs : 1, sizeof *g->ctrs))
        return SS_ENOMEM;
    for (uint32_t i = 0; i < src->n_ctrs; i++) {
        gmg_container *c = &g->ctrs[i];
        *c = src->ctrs[i];
        g->n_ctrs = i + 1;
        if (keep && !keep[i]) {
            freeze(c);
            continue;
        }
        c->iter.reqs = NULL;
        c->pc = NULL;
        if (copy_array((void **)&c->iter.reqs, 0, src->ctrs[i].iter.reqs, c->iter.cap,
                       sizeof *c->iter.reqs) ||
            (src->ctrs[i].pc && gmg_pc_clone(src->ctrs[i].pc, &c->pc))) /* the cache as it is */
            return SS_ENOMEM;
    }
    return SS_OK;
}

int gmg_clone(const gmg *src, gmg **out) { return gmg_clone_part(src, NULL, out); }

int gmg_clone_part(const gmg *src, const uint8_t *keep, gmg **out)
{
    gmg *g = NULL;
    int rc = gmg_recopy_part(&g, src, keep);
    if (!rc)
        *out = g;
    return rc;
}

int gmg_recopy_part(gmg **gp, const gmg *src, const uint8_t *keep)
{
    graph_mem m = {0};
    gmg *g = *gp;
    *gp = NULL;
    if (g)
        strip(g, &m);
    else if (!(g = ss_malloc(sizeof *g)))
        return SS_ENOMEM;
    *g = *src;
    g->borrowed_costs = 1;
    g->kvp = NULL;
    /* the old arrays, counted as empty: what gmg_destroy frees, raised as the copies land */
    g->gpus = m.gpus, g->links = m.links, g->replicas = m.replicas, g->ctrs = m.ctrs;
    g->reqs = m.reqs, g->copied = m.copied, g->cap_slots = m.cap_slots;
    g->n_ctrs = 0, g->n_slots = 0, g->n_copied = 0;
    int rc = copy_array((void **)&g->gpus, m.n_gpus, src->gpus, src->n_gpus, sizeof *g->gpus);
    if (!rc)
        rc = copy_array((void **)&g->links, m.n_links, src->links, src->n_links,
                        sizeof *g->links);
    if (!rc)
        rc = copy_array((void **)&g->replicas, m.n_replicas, src->replicas, src->n_replicas,
                        sizeof *g->replicas);
    if (!rc)
        rc = clone_ctrs(g, src, keep, &m);
    if (!rc)
        rc = clone_reqs(g, src, keep);
    if (!rc && src->kvp) /* a what-if offloads into its own copy, never the original's */
        rc = gmg_kvp_clone(src->kvp, &g->kvp);
    if (rc) {
        gmg_destroy(&g);
        return rc;
    }
    *gp = g;
    return SS_OK;
}

/* ---- construction ----------------------------------------------------------------------- */

typedef struct sizing {
    double weights, activations, runtime, usable, block_bytes;
    int64_t blocks;
} sizing;

static sizing size_container(const gmg_ctr_spec *s)
{
    sizing z;
    z.weights = cost_weight_bytes_per_gpu(s->model, s->tp, s->pp);
    z.activations = cost_activation_bytes(s->model, s->tp, s->max_batch_tokens, s->max_seqs);
    z.runtime = s->runtime_reserve;
    z.usable = s->gpu_mem_util * s->gpu->hbm_bytes;
    z.block_bytes = cost_kv_bytes_per_token_per_gpu(s->model, s->tp, s->pp) * s->block_tokens;
    z.blocks = (int64_t)floor((z.usable - z.weights - z.activations - z.runtime) / z.block_bytes);
    return z;
}

static int grow_array(void **p, uint32_t n, uint32_t add, size_t elem)
{
    void *np = ss_realloc(*p, (size_t)(n + add) * elem);
    if (!np)
        return SS_ENOMEM;
    memset((char *)np + (size_t)n * elem, 0, (size_t)add * elem);
    *p = np;
    return SS_OK;
}

/* Add the GPUs of one TP group (one pipeline stage of replica r), starting a new node when
 * the group would straddle one. */
static void add_stage_gpus(gmg *g, const gmg_ctr_spec *s, const sizing *z, const gmg_replica *r,
                           uint32_t stage)
{
    uint32_t per_node = s->gpus_per_node ? s->gpus_per_node : s->gpu->gpus_per_node;
    if (!per_node)
        per_node = 1;
    uint32_t node = g->n_gpus ? g->gpus[g->n_gpus - 1].node : 0;
    uint32_t used_in_node = 0;
    int there = 0; /* a share of a GPU already there: on its node */
    for (uint32_t i = 0; i < g->n_gpus && !there; i++) {
        used_in_node += g->gpus[i].node == node && g->gpus[i].phys_lead;
        if (s->share && g->gpus[i].phys == s->phys)
            node = g->gpus[i].node, there = 1;
    }
    if (g->n_gpus && !there && (used_in_node + s->tp > per_node))
        node++;
    gmg_id first = g->n_gpus;
    for (uint32_t k = 0; k < s->tp; k++) {
        gmg_gpu *u = &g->gpus[g->n_gpus++];
        u->id = first + k;
        u->node = node;
        u->phys_lead = !there;
        u->phys = there ? s->phys : g->n_phys++;
        u->share = s->share;
        u->kind = s->gpu;
        u->capacity = s->gpu->hbm_bytes;
        u->container = r->ctr0;
        u->replica = r->id;
        u->stage = stage;
        u->mem.weights = z->weights;
        u->mem.activations = z->activations;
        u->mem.runtime = z->runtime;
        u->mem.kv_pool = (double)z->blocks * z->block_bytes;
    }
}

/* One intra-node link per node (NVLink, or PCIe where the GPU has none) and the network. */
static int add_links(gmg *g)
{
    uint32_t nodes = g->n_gpus ? g->gpus[g->n_gpus - 1].node + 1 : 0;
    if (nodes + 1 <= g->n_links)
        return SS_OK;
    if (grow_array((void **)&g->links, g->n_links, nodes + 1 - g->n_links, sizeof *g->links))
        return SS_ENOMEM;
    const cat_gpu *k = g->gpus[0].kind;
    for (uint32_t i = 0; i < nodes; i++) {
        g->links[i] = (gmg_link){.id = i, .kind = k->has_nvlink ? GMG_LINK_NVLINK : GMG_LINK_PCIE,
                                 .node = i, .bw = k->nvlink_bw, .latency_s = k->link_latency_s};
    }
    g->links[nodes] = (gmg_link){.id = nodes, .kind = GMG_LINK_NET, .node = GMG_NONE,
                                 .bw = k->net_bw, .latency_s = k->net_latency_s};
    g->n_links = nodes + 1;
    return SS_OK;
}

static int fits_error(const gmg_ctr_spec *s, const sizing *z, ss_errbuf *eb)
{
    return ss_err(eb, SS_EINVAL,
                  "%s with --tp %u --pp %u does not fit on %s: %.1f GiB usable (%.2f x %.1f GiB) "
                  "minus %.1f GiB weights, %.1f GiB activations and %.1f GiB runtime leaves no "
                  "room for a KV block per virtual engine; raise --tp or --pp or use a larger GPU",
                  s->model->name, s->tp, s->pp, s->gpu->name, z->usable / 1073741824.0,
                  s->gpu_mem_util, s->gpu->hbm_bytes / 1073741824.0, z->weights / 1073741824.0,
                  z->activations / 1073741824.0, z->runtime / 1073741824.0);
}

/* Container ve of replica r: a scheduler with 1/pp of the replica's KV blocks. */
/* How many blocks of block_bytes fit in bytes (host swap space), saturated at UINT32_MAX: a
 * conversion of a larger double to uint32_t is undefined. */
static uint32_t swap_blocks(double bytes, double block_bytes)
{
    double n = floor(bytes / block_bytes);
    return n >= 0 ? (n < (double)UINT32_MAX ? (uint32_t)n : UINT32_MAX) : 0;
}

static int init_container(gmg *g, const gmg_ctr_spec *s, const sizing *z, const gmg_replica *r,
                          uint32_t ve, ss_errbuf *eb)
{
    gmg_container *c = &g->ctrs[g->n_ctrs];
    cost_params cp = {.gpu = s->gpu, .engine = s->engine, .model = s->model, .tp = s->tp,
                      .profiles_dir = s->profiles_dir};
    int rc = cost_model_create(&c->cost, s->cost_backend, &cp, eb);
    if (rc)
        return rc;
    c->id = g->n_ctrs++;
    c->tenant = s->tenant;
    c->model = s->model;
    c->tp = s->tp;
    c->pp = s->pp;
    c->replica = r->id;
    c->ve = ve;
    c->gpu0 = r->gpu0;
    c->block_bytes = z->block_bytes;
    c->tiers = s->tiers ? s->tiers : 1;
    c->role = s->role;
    c->block_tokens = s->block_tokens;
    c->blocks_total = c->blocks_free = (uint32_t)(z->blocks / s->pp);
    c->waiting = c->running = c->swapped = (gmg_list){GMG_NONE, GMG_NONE, 0};
    c->swap_total = c->swap_free = swap_blocks(s->swap_bytes / s->pp, z->block_bytes);
    c->pc = NULL;
    c->mux_next = c->mux_head = GMG_NONE;
    c->mux_pool = 0;
    if (g->prefix_cache && s->share != GMG_SHARE_MUX && gmg_pc_create(&c->pc, c->blocks_total))
        return ss_err(eb, SS_ENOMEM, "cluster: out of memory");
    return SS_OK;
}

int gmg_mux_link(gmg *g, const gmg_id *ctrs, uint32_t n, double pool_bytes, ss_errbuf *eb)
{
    for (uint32_t i = 0; i < n; i++) {
        const gmg_container *c = &g->ctrs[ctrs[i]];
        if (c->tp != 1 || c->pp != 1 || c->pc || c->blocks_free != c->blocks_total)
            return ss_err(eb, SS_EINVAL, "container %u: a shared KV pool takes containers of "
                          "one GPU, without a prefix cache, holding no blocks", c->id);
    }
    for (uint32_t i = 0; i < n; i++) {
        gmg_container *c = &g->ctrs[ctrs[i]];
        c->mux_next = ctrs[(i + 1) % n];
        c->mux_head = ctrs[0];
        c->mux_pool = pool_bytes;
        c->blocks_total = c->blocks_free = 0;
    }
    if (n)
        gmg_mux_sync(g, &g->ctrs[ctrs[0]]);
    return SS_OK;
}

static int check_spec(const gmg_ctr_spec *s, const sizing *z, ss_errbuf *eb)
{
    if (s->pp < 1 || s->pp > GMG_MAX_PP || s->pp > s->model->layers)
        return ss_err(eb, SS_EINVAL, "--pp: must be between 1 and %u (and at most the %u layers "
                      "of %s), got %u", GMG_MAX_PP, s->model->layers, s->model->name, s->pp);
    if (s->share && (s->tp != 1 || s->pp != 1))
        return ss_err(eb, SS_EINVAL, "a share of a GPU runs a container of one GPU, got TP %u "
                      "PP %u", s->tp, s->pp);
    if (z->blocks < s->pp)
        return fits_error(s, z, eb);
    return SS_OK;
}

int gmg_add_containers(gmg *g, const gmg_ctr_spec *s, uint32_t replicas, ss_errbuf *eb)
{
    sizing z = size_container(s);
    int rc = check_spec(s, &z, eb);
    if (rc)
        return rc;
    if (z.blocks > UINT32_MAX / 2)
        z.blocks = UINT32_MAX / 2;
    if (grow_array((void **)&g->ctrs, g->n_ctrs, replicas * s->pp, sizeof *g->ctrs) ||
        grow_array((void **)&g->replicas, g->n_replicas, replicas, sizeof *g->replicas) ||
        grow_array((void **)&g->gpus, g->n_gpus, replicas * s->tp * s->pp, sizeof *g->gpus))
        return ss_err(eb, SS_ENOMEM, "cluster: out of memory");
    for (uint32_t i = 0; i < replicas; i++) {
        gmg_replica *r = &g->replicas[g->n_replicas];
        *r = (gmg_replica){.id = g->n_replicas++, .ctr0 = g->n_ctrs, .gpu0 = g->n_gpus,
                           .tp = s->tp, .pp = s->pp};
        for (uint32_t st = 0; st < s->pp; st++)
            add_stage_gpus(g, s, &z, r, st);
        for (uint32_t ve = 0; ve < s->pp; ve++)
            if ((rc = init_container(g, s, &z, r, ve, eb)))
                return rc;
    }
    return add_links(g) ? ss_err(eb, SS_ENOMEM, "cluster: out of memory") : SS_OK;
}

int gmg_container_retarget(gmg *g, gmg_container *c, const gmg_ctr_spec *spec, ss_errbuf *eb)
{
    if (c->waiting.n || c->running.n || c->swapped.n || c->blocks_free != c->blocks_total)
        return ss_err(eb, SS_EINVAL, "container %u: cannot change hands while serving", c->id);
    if (spec->tp != c->tp || spec->pp != 1 || c->pp != 1)
        return ss_err(eb, SS_EINVAL, "container %u: TP %u x PP %u cannot become TP %u x PP %u",
                      c->id, c->tp, c->pp, spec->tp, spec->pp);
    sizing z = size_container(spec);
    int rc = check_spec(spec, &z, eb);
    cost_model *cm = NULL;
    cost_params cp = {.gpu = spec->gpu, .engine = spec->engine, .model = spec->model,
                      .tp = spec->tp,
                      .profiles_dir = spec->profiles_dir};
    if (!rc)
        rc = cost_model_create(&cm, spec->cost_backend, &cp, eb);
    if (rc)
        return rc;
    gmg_pcache *pc = NULL; /* the new tenant's prompts share nothing with the old one's */
    if (c->pc && gmg_pc_create(&pc, (uint32_t)z.blocks)) {
        cost_model_destroy(&cm);
        return ss_err(eb, SS_ENOMEM, "cluster: out of memory");
    }
    gmg_pc_destroy(&c->pc);
    c->pc = pc;
    cost_model_destroy(&c->cost);
    c->cost = cm;
    c->tenant = spec->tenant;
    c->model = spec->model;
    c->tiers = spec->tiers ? spec->tiers : 1;
    c->block_bytes = z.block_bytes;
    c->blocks_total = c->blocks_free = (uint32_t)z.blocks;
    c->blocks_peak = 0;
    c->swap_total = c->swap_free = swap_blocks(spec->swap_bytes, z.block_bytes);
    for (uint32_t k = 0; k < c->tp; k++) {
        gmg_mem *m = &g->gpus[c->gpu0 + k].mem;
        m->weights = z.weights;
        m->activations = z.activations;
        m->kv_pool = (double)z.blocks * z.block_bytes;
        m->kv_used = 0;
    }
    return SS_OK;
}

/* ---- a container's life ------------------------------------------------------------------- */

static void move(gmg_container *c, uint8_t from_a, uint8_t from_b, uint8_t to)
{
    if (c->status != from_a && c->status != from_b)
        ss_fatal(SS_LOC, "container %u: status %u cannot become %u", c->id, c->status, to);
    c->status = to;
}

void gmg_ctr_drain(gmg_container *c) { move(c, GMG_CTR_ACTIVE, GMG_CTR_ACTIVE, GMG_CTR_DRAINING); }

void gmg_ctr_standby(gmg_container *c)
{
    /* drained, or new (it never ran): auto-scaling's reserve */
    uint8_t fresh = c->iterations ? GMG_CTR_DRAINING : GMG_CTR_ACTIVE;
    move(c, GMG_CTR_DRAINING, fresh, GMG_CTR_STANDBY);
}

void gmg_ctr_load(gmg_container *c, ss_time ready_at)
{
    move(c, GMG_CTR_DRAINING, GMG_CTR_STANDBY, GMG_CTR_LOADING);
    c->ready_at = ready_at;
}

void gmg_ctr_activate(gmg_container *c) { move(c, GMG_CTR_LOADING, GMG_CTR_LOADING, GMG_CTR_ACTIVE); }
