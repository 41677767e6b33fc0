/* Global Mapping Graph: construction, request slots, queue primitives, KV-block accounting
 * with the memory ledger, operator expansion of an iteration, and the invariant check. */
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

void gmg_destroy(gmg **gp)
{
    gmg *g = *gp;
    if (!g)
        return;
    for (uint32_t i = 0; i < g->n_ctrs; i++) {
        if (!g->borrowed_costs)
            cost_model_destroy(&g->ctrs[i].cost);
        ss_free(g->ctrs[i].iter.reqs);
        gmg_pc_destroy(&g->ctrs[i].pc);
    }
    ss_free(g->ctrs);
    ss_free(g->replicas);
    ss_free(g->gpus);
    ss_free(g->links);
    for (uint32_t i = 0; i < g->n_slots; i++)
        if (g->reqs[i].state != GMG_REQ_FREE)
            ss_free(g->reqs[i].prefix_blocks);
    ss_free(g->reqs);
    ss_free(g);
    *gp = NULL;
}

/* Copy n elements of elem bytes (NULL when n is 0); 0 or SS_ENOMEM. */
static int dup_array(void **out, const void *src, size_t n, size_t elem)
{
    *out = NULL;
    if (!n)
        return SS_OK;
    if (!(*out = ss_malloc(n * elem)))
        return SS_ENOMEM;
    memcpy(*out, src, n * elem);
    return SS_OK;
}

int gmg_clone(const gmg *src, gmg **out)
{
    gmg *g = ss_calloc(1, sizeof *g);
    if (!g)
        return SS_ENOMEM;
    *g = *src;
    g->borrowed_costs = 1;
    g->gpus = NULL, g->links = NULL, g->ctrs = NULL, g->replicas = NULL, g->reqs = NULL;
    g->n_ctrs = 0, g->n_slots = 0; /* what gmg_destroy frees, raised as the copies land */
    int rc = dup_array((void **)&g->gpus, src->gpus, src->n_gpus, sizeof *g->gpus);
    if (!rc)
        rc = dup_array((void **)&g->links, src->links, src->n_links, sizeof *g->links);
    if (!rc)
        rc = dup_array((void **)&g->replicas, src->replicas, src->n_replicas,
                       sizeof *g->replicas);
    if (!rc && !(g->ctrs = ss_calloc(src->n_ctrs ? src->n_ctrs : 1, sizeof *g->ctrs)))
        rc = SS_ENOMEM;
    for (uint32_t i = 0; !rc && i < src->n_ctrs; i++) {
        gmg_container *c = &g->ctrs[i];
        *c = src->ctrs[i];
        c->iter.reqs = NULL;
        c->pc = NULL;
        g->n_ctrs = i + 1;
        rc = dup_array((void **)&c->iter.reqs, src->ctrs[i].iter.reqs, c->iter.cap,
                       sizeof *c->iter.reqs);
        if (!rc && src->ctrs[i].pc) /* a what-if must see the cache as it is */
            rc = gmg_pc_clone(src->ctrs[i].pc, &c->pc);
    }
    /* The slots in use, copied in one block; those beyond n_slots stay unwritten (a slot is
     * initialised when it is first handed out), so a fork costs what is in flight, not the
     * array's capacity. */
    if (!rc && !(g->reqs = ss_malloc((src->cap_slots ? src->cap_slots : 1) * sizeof *g->reqs)))
        rc = SS_ENOMEM;
    if (!rc && src->n_slots) {
        memcpy(g->reqs, src->reqs, src->n_slots * sizeof *g->reqs);
        for (uint32_t i = 0; i < src->n_slots; i++)
            g->reqs[i].prefix_blocks = NULL;
    }
    for (uint32_t i = 0; !rc && i < src->n_slots; i++) {
        gmg_req *q = &g->reqs[i];
        g->n_slots = i + 1;
        if (q->state != GMG_REQ_FREE && q->n_prefix_blocks)
            rc = dup_array((void **)&q->prefix_blocks, src->reqs[i].prefix_blocks,
                           q->n_prefix_blocks, sizeof *q->prefix_blocks);
    }
    if (rc) {
        gmg_destroy(&g);
        return rc;
    }
    *out = g;
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
    for (uint32_t i = 0; i < g->n_gpus; i++)
        used_in_node += g->gpus[i].node == node;
    if (g->n_gpus && (used_in_node + s->tp > per_node))
        node++;
    gmg_id first = g->n_gpus;
    for (uint32_t k = 0; k < s->tp; k++) {
        gmg_gpu *u = &g->gpus[g->n_gpus++];
        u->id = first + k;
        u->node = node;
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
        g->links[i] = (gmg_link){.id = i, .kind = GMG_LINK_NVLINK, .node = i, .bw = k->nvlink_bw,
                                 .latency_s = k->link_latency_s};
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
    c->block_tokens = s->block_tokens;
    c->blocks_total = c->blocks_free = (uint32_t)(z->blocks / s->pp);
    c->waiting = c->running = c->swapped = (gmg_list){GMG_NONE, GMG_NONE, 0};
    c->swap_total = c->swap_free = (uint32_t)(s->swap_bytes / z->block_bytes / s->pp);
    c->pc = NULL;
    if (g->prefix_cache && gmg_pc_create(&c->pc, c->blocks_total))
        return ss_err(eb, SS_ENOMEM, "cluster: out of memory");
    return SS_OK;
}

static int check_spec(const gmg_ctr_spec *s, const sizing *z, ss_errbuf *eb)
{
    if (s->pp < 1 || s->pp > GMG_MAX_PP || s->pp > s->model->layers)
        return ss_err(eb, SS_EINVAL, "--pp: must be between 1 and %u (and at most the %u layers "
                      "of %s), got %u", GMG_MAX_PP, s->model->layers, s->model->name, s->pp);
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
    c->swap_total = c->swap_free = (uint32_t)(spec->swap_bytes / z.block_bytes);
    for (uint32_t k = 0; k < c->tp; k++) {
        gmg_mem *m = &g->gpus[c->gpu0 + k].mem;
        m->weights = z.weights;
        m->activations = z.activations;
        m->kv_pool = (double)z.blocks * z.block_bytes;
        m->kv_used = 0;
    }
    return SS_OK;
}

/* ---- request slots and lists ------------------------------------------------------------ */

gmg_id gmg_req_alloc(gmg *g)
{
    if (g->free_slot == GMG_NONE) {
        if (g->n_slots == g->cap_slots) {
            uint32_t ncap = g->cap_slots ? g->cap_slots * 2 : 1024;
            gmg_req *nr = ss_realloc(g->reqs, (size_t)ncap * sizeof *nr);
            if (!nr)
                return GMG_NONE;
            g->reqs = nr;
            g->cap_slots = ncap;
        }
        g->reqs[g->n_slots].next = g->free_slot;
        g->free_slot = g->n_slots++;
    }
    gmg_id r = g->free_slot;
    g->free_slot = g->reqs[r].next;
    memset(&g->reqs[r], 0, sizeof g->reqs[r]); /* a free slot holds no prefix blocks */
    g->reqs[r].prev = g->reqs[r].next = GMG_NONE;
    g->reqs[r].container = GMG_NONE;
    g->reqs[r].mig = GMG_NONE;
    g->reqs[r].first_token = -1;
    g->reqs[r].state = GMG_REQ_WAITING;
    g->reqs[r].serial = ++g->n_allocs;
    if (++g->in_flight > g->peak_in_flight)
        g->peak_in_flight = g->in_flight;
    return r;
}

void gmg_req_free(gmg *g, gmg_id r)
{
    gmg_req *q = &g->reqs[r];
    if (SS_NEVER(q->state == GMG_REQ_FREE || q->blocks))
        return;
    q->state = GMG_REQ_FREE;
    ss_free(q->prefix_blocks);
    q->prefix_blocks = NULL;
    q->next = g->free_slot;
    g->free_slot = r;
    g->in_flight--;
}

void gmg_list_push_back(gmg *g, gmg_list *l, gmg_id r)
{
    gmg_req *q = &g->reqs[r];
    q->next = GMG_NONE;
    q->prev = l->tail;
    if (l->tail != GMG_NONE)
        g->reqs[l->tail].next = r;
    else
        l->head = r;
    l->tail = r;
    l->n++;
}

void gmg_list_push_front(gmg *g, gmg_list *l, gmg_id r)
{
    gmg_req *q = &g->reqs[r];
    q->prev = GMG_NONE;
    q->next = l->head;
    if (l->head != GMG_NONE)
        g->reqs[l->head].prev = r;
    else
        l->tail = r;
    l->head = r;
    l->n++;
}

void gmg_list_insert_after(gmg *g, gmg_list *l, gmg_id after, gmg_id r)
{
    if (after == GMG_NONE) {
        gmg_list_push_front(g, l, r);
        return;
    }
    if (after == l->tail) {
        gmg_list_push_back(g, l, r);
        return;
    }
    gmg_req *q = &g->reqs[r], *a = &g->reqs[after];
    q->prev = after;
    q->next = a->next;
    g->reqs[a->next].prev = r;
    a->next = r;
    l->n++;
}

void gmg_list_remove(gmg *g, gmg_list *l, gmg_id r)
{
    gmg_req *q = &g->reqs[r];
    if (q->prev != GMG_NONE)
        g->reqs[q->prev].next = q->next;
    else
        l->head = q->next;
    if (q->next != GMG_NONE)
        g->reqs[q->next].prev = q->prev;
    else
        l->tail = q->prev;
    q->prev = q->next = GMG_NONE;
    l->n--;
}

/* ---- KV blocks and the memory ledger ---------------------------------------------------- */

/* Add delta blocks' worth of KV to every GPU of c's replica. */
void gmg__ledger_kv(gmg *g, const gmg_container *c, int64_t delta)
{
    for (uint32_t k = 0; k < c->tp * c->pp; k++) {
        gmg_gpu *u = &g->gpus[c->gpu0 + k];
        u->mem.kv_used += (double)delta * c->block_bytes;
        if (u->mem.kv_used > u->kv_used_peak)
            u->kv_used_peak = u->mem.kv_used;
    }
}

void gmg_req_set_blocks(gmg *g, gmg_container *c, gmg_req *r, uint32_t blocks)
{
    if (blocks == r->blocks)
        return;
    if (r->pc_shared) {
        if (blocks) {
            if (SS_NEVER(blocks < r->pc_shared))
                return;
        } else {
            gmg__pc_release(g, c, r); /* the shared blocks go back to the cache */
            if (r->blocks == 0)
                return;
        }
    }
    int64_t delta = (int64_t)blocks - (int64_t)r->blocks;
    if (delta > (int64_t)c->blocks_free)
        ss_fatal(SS_LOC, "container %u: request %llu needs %lld more KV blocks, %u free", c->id,
                 (unsigned long long)r->trace_id, (long long)delta, c->blocks_free);
    if (delta > 0 && c->pc)
        gmg__pc_make_room(c, (uint32_t)delta);
    c->blocks_free = (uint32_t)((int64_t)c->blocks_free - delta);
    if (c->blocks_free > c->blocks_total)
        ss_fatal(SS_LOC, "container %u: %u free KV blocks exceed the pool of %u", c->id,
                 c->blocks_free, c->blocks_total);
    r->blocks = blocks;
    uint32_t used = c->blocks_total - c->blocks_free;
    if (used > c->blocks_peak)
        c->blocks_peak = used;
    gmg__ledger_kv(g, c, delta); /* every GPU of the replica holds its layers' share of a block */
}

/* Move n blocks between c's free pool and one of its holders (`held`: reserved for a migration,
 * lent to staged weights), with the ledger; `what` names the holder in the fatal message. */
static void take_blocks(gmg *g, gmg_container *c, uint32_t *held, uint32_t n, const char *what)
{
    if (n > c->blocks_free)
        ss_fatal(SS_LOC, "container %u: %s %u blocks with %u free", c->id, what, n,
                 c->blocks_free);
    if (c->pc)
        gmg__pc_make_room(c, n);
    c->blocks_free -= n;
    *held += n;
    uint32_t used = c->blocks_total - c->blocks_free;
    if (used > c->blocks_peak)
        c->blocks_peak = used;
    gmg__ledger_kv(g, c, n);
}

static void give_blocks(gmg *g, gmg_container *c, uint32_t *held, uint32_t n, const char *what)
{
    if (n > *held)
        ss_fatal(SS_LOC, "container %u: %s %u blocks of %u", c->id, what, n, *held);
    *held -= n;
    c->blocks_free += n;
    gmg__ledger_kv(g, c, -(int64_t)n);
}

void gmg_reserve_blocks(gmg *g, gmg_container *c, uint32_t n)
{
    take_blocks(g, c, &c->blocks_reserved, n, "reserving");
}

void gmg_release_reserved(gmg *g, gmg_container *c, uint32_t n)
{
    give_blocks(g, c, &c->blocks_reserved, n, "releasing reserved");
}

void gmg_stage_blocks(gmg *g, gmg_container *c, uint32_t n)
{
    take_blocks(g, c, &c->blocks_staged, n, "staging into");
}

void gmg_unstage_blocks(gmg *g, gmg_container *c, uint32_t n)
{
    give_blocks(g, c, &c->blocks_staged, n, "unstaging");
}

ss_time gmg_transfer(gmg *g, gmg_id src, gmg_id dst, uint32_t n, double per_gpu,
                     ss_time earliest)
{
    gmg_link *l = g->gpus[src].node == g->gpus[dst].node ? &g->links[g->gpus[src].node]
                                                         : &g->links[g->n_links - 1];
    ss_time begin = earliest;
    for (uint32_t i = 0; i < n; i++) {
        if (g->gpus[src + i].tx_busy > begin)
            begin = g->gpus[src + i].tx_busy;
        if (g->gpus[dst + i].rx_busy > begin)
            begin = g->gpus[dst + i].rx_busy;
    }
    ss_time end = ss_time_add(begin, ss_time_from_ns_sat((per_gpu / l->bw + l->latency_s) * 1e9));
    for (uint32_t i = 0; i < n; i++) {
        g->gpus[src + i].tx_busy = end;
        g->gpus[dst + i].rx_busy = end;
    }
    l->bytes_moved += per_gpu * n;
    return end;
}

void gmg_req_swap_out(gmg *g, gmg_container *c, gmg_req *r)
{
    uint32_t b = r->blocks;
    if (b > c->swap_free)
        ss_fatal(SS_LOC, "container %u: swapping out %u blocks with %u swap blocks free", c->id, b,
                 c->swap_free);
    gmg_req_set_blocks(g, c, r, 0);
    c->swap_free -= b;
    r->swapped_blocks = b;
}

void gmg_req_swap_in(gmg *g, gmg_container *c, gmg_req *r)
{
    uint32_t b = r->swapped_blocks;
    gmg_req_set_blocks(g, c, r, b);
    c->swap_free += b;
    r->swapped_blocks = 0;
    if (c->swap_free > c->swap_total)
        ss_fatal(SS_LOC, "container %u: %u free swap blocks exceed the %u of the pool", c->id,
                 c->swap_free, c->swap_total);
}

double gmg_swap_bytes_per_gpu(const gmg *g, const gmg_container *c, uint32_t blocks)
{
    (void)g;
    return (double)blocks * c->block_bytes;
}

void gmg_account_busy(gmg *g, const gmg_container *c, uint32_t stage, ss_time dur)
{
    for (uint32_t k = 0; k < c->tp; k++) {
        g->gpus[gmg_stage_gpu(c, stage) + k].busy_ns += dur;
        g->gpus[gmg_stage_gpu(c, stage) + k].iterations++;
    }
}

ss_time gmg_cross_node_send_ns(const gmg *g, const gmg_container *c, uint32_t stage,
                               double bytes)
{
    const gmg_gpu *a = &g->gpus[gmg_stage_gpu(c, stage)], *b = &g->gpus[gmg_stage_gpu(c, stage + 1)];
    if (a->node == b->node)
        return 0;
    const gmg_link *net = &g->links[g->n_links - 1];
    return ss_time_from_ns_sat((bytes / net->bw + net->latency_s) * 1e9);
}

/* ---- operator expansion ----------------------------------------------------------------- */

/* Execution order of one decoder layer; kinds absent from the iteration are skipped, and a
 * kind listed twice takes one of its two per-layer repetitions each time. */
static const cost_op_kind layer_order[] = {
    COST_OP_NORM,     COST_OP_QKV,     COST_OP_ROPE,   COST_OP_ATTN_PREFILL, COST_OP_ATTN_DECODE,
    COST_OP_OPROJ,    COST_OP_ALLREDUCE, COST_OP_RESIDUAL, COST_OP_NORM,     COST_OP_MOE_ROUTER,
    COST_OP_MLP_UP,   COST_OP_ACT,     COST_OP_MLP_DOWN, COST_OP_ALLREDUCE, COST_OP_RESIDUAL,
};
static const cost_op_kind head_order[] = {COST_OP_EMBED, COST_OP_ALLREDUCE};
static const cost_op_kind tail_order[] = {COST_OP_FINAL_NORM, COST_OP_LM_HEAD};

typedef struct expander {
    const gmg_container *c;
    cost_op ops[COST_OP__COUNT + 6];
    ss_time ns[COST_OP__COUNT + 6];
    uint32_t left[COST_OP__COUNT + 6]; /* executions not yet emitted */
    size_t n_kinds;
    gmg_op *out;
    gmg_edge *edges;
    size_t cap, n;
    ss_time t;        /* start of the next operator */
    gmg_id gpu;       /* first GPU of the stage being emitted */
    double act_bytes; /* activation tensor passed between operators */
} expander;

static void emit(expander *x, cost_op_kind k, uint32_t layer)
{
    for (size_t i = 0; i < x->n_kinds; i++) {
        if (x->ops[i].kind != k || !x->left[i])
            continue;
        x->left[i]--;
        if (x->n < x->cap) {
            gmg_op *o = &x->out[x->n];
            o->shape = x->ops[i];
            o->shape.count = 1;
            o->layer = layer;
            o->container = x->c->id;
            o->home_gpu = o->placed_gpu = x->gpu;
            o->state = GMG_OP_PENDING;
            o->pred_start = o->start = x->t;
            o->pred_end = o->end = x->t + x->ns[i];
            if (x->edges && x->n > 0)
                x->edges[x->n - 1] = (gmg_edge){(uint32_t)x->n - 1, (uint32_t)x->n, x->act_bytes,
                                                x->out[x->n - 1].placed_gpu, x->gpu};
        }
        x->t += x->ns[i];
        x->n++;
        return;
    }
}

/* Add an operator kind the cost model does not list (swap, pp_send) with one execution. */
static void add_kind(expander *x, cost_op op, ss_time ns, uint32_t executions)
{
    x->ops[x->n_kinds] = op;
    x->ns[x->n_kinds] = ns;
    x->left[x->n_kinds++] = executions;
}

ss_time gmg_stage_send_ns(const gmg *g, const gmg_container *c, uint32_t stage, cost_op *op_out)
{
    cost_op op;
    ss_time local = cost_pp_send(c->cost, &c->iter.batch, &op);
    ss_time remote = gmg_cross_node_send_ns(g, c, stage, op.comm_bytes);
    if (op_out)
        *op_out = op;
    return remote ? remote : local;
}

/* Emit pipeline stage st: swaps and the head on the first, its layers, the tail on the last,
 * and the send to the next stage on every other. */
static void emit_stage(const gmg *g, expander *x, uint32_t st, uint32_t *layer)
{
    const gmg_container *c = x->c;
    x->t = c->iter.stage_start[st];
    x->gpu = gmg_stage_gpu(c, st);
    if (st == 0) {
        /* the host phase opens the iteration (the GPU idles); then the stage may wait for
         * guest operators still running on its GPUs, then swaps precede the forward pass */
        emit(x, COST_OP_HOST, UINT32_MAX);
        x->t += c->iter.wait_ns;
        emit(x, COST_OP_KV_SWAP, UINT32_MAX);
        /* the embedding's all-reduce is the one left over after 2 per layer */
        for (size_t k = 0; k < sizeof head_order / sizeof *head_order; k++)
            if (head_order[k] != COST_OP_ALLREDUCE || c->tp > 1)
                emit(x, head_order[k], UINT32_MAX);
    }
    for (uint32_t n = cost_stage_layers(c->model, c->pp, st); n > 0; n--, (*layer)++)
        for (size_t k = 0; k < sizeof layer_order / sizeof *layer_order; k++)
            emit(x, layer_order[k], *layer);
    if (st + 1 == c->pp)
        for (size_t k = 0; k < sizeof tail_order / sizeof *tail_order; k++)
            emit(x, tail_order[k], UINT32_MAX);
    else {
        cost_op op;
        ss_time ns = gmg_stage_send_ns(g, c, st, &op);
        add_kind(x, op, ns, 1);
        emit(x, COST_OP_PP_SEND, UINT32_MAX);
        x->n_kinds--;
    }
}

size_t gmg_iter_expand(const gmg *g, const gmg_container *c, gmg_op *ops_out, size_t cap,
                       gmg_edge *edges_out)
{
    expander x = {.c = c, .out = ops_out, .edges = edges_out, .cap = cap};
    x.n_kinds = cost_iteration_ops(c->cost, &c->iter.batch, x.ops, x.ns, COST_OP__COUNT + 4);
    for (size_t i = 0; i < x.n_kinds; i++)
        x.left[i] = x.ops[i].count;
    const cost_batch *b = &c->iter.batch;
    x.act_bytes = (double)(b->prefill_tokens + b->n_decode) * c->model->hidden *
                  c->model->dtype_bytes;
    if (c->iter.swap_ns) /* swaps precede the forward pass */
        add_kind(&x, (cost_op){.kind = COST_OP_KV_SWAP, .tp = c->tp, .count = 1,
                               .comm_bytes = gmg_swap_bytes_per_gpu(g, c, c->iter.swap_blocks)},
                 c->iter.swap_ns, 1);
    uint32_t layer = 0;
    for (uint32_t st = 0; st < c->pp; st++)
        emit_stage(g, &x, st, &layer);
    return x.n;
}

/* ---- invariants ------------------------------------------------------------------------- */

/* Each check names the entity (container, GPU, request by trace id and slot) and the values;
 * gsim's --check adds the event. Ledger values are doubles: half a byte of rounding is allowed. */

static const char *state_name(uint8_t st)
{
    static const char *const names[] = {"free", "waiting", "running", "swapped", "migrating",
                                        "offloaded", "done", "rejected"};
    return st < sizeof names / sizeof *names ? names[st] : "invalid";
}

/* One request's tokens, as they stand: no more than its output, its KV no further than its
 * tokens, a first token exactly when one was generated, and times in order. */
static int check_tokens(const gmg_req *q, gmg_id r, ss_errbuf *eb)
{
    unsigned long long id = (unsigned long long)q->trace_id;
    if (q->generated > q->output)
        return ss_err(eb, SS_ECHECK, "request %llu (slot %u): %u tokens generated, more than "
                      "its output length %u", id, r, q->generated, q->output);
    if ((uint64_t)q->computed > (uint64_t)q->prompt + q->generated)
        return ss_err(eb, SS_ECHECK, "request %llu (slot %u): KV of %u tokens computed, more than "
                      "prompt %u + generated %u", id, r, q->computed, q->prompt, q->generated);
    if ((q->generated > 0) != (q->first_token >= 0))
        return ss_err(eb, SS_ECHECK, "request %llu (slot %u): %u tokens generated but first "
                      "token at %lld ns", id, r, q->generated, (long long)q->first_token);
    if (q->first_token >= 0 && (q->first_token < q->arrival || q->last_token < q->first_token))
        return ss_err(eb, SS_ECHECK, "request %llu (slot %u): token times out of order: arrival "
                      "%lld, first token %lld, latest token %lld ns", id, r,
                      (long long)q->arrival, (long long)q->first_token,
                      (long long)q->last_token);
    return SS_OK;
}

enum { L_WAITING, L_RUNNING, L_SWAPPED };

/* Walk one list of c: members in its state and container, links consistent, the walk ending
 * within n_slots steps at the list's tail and count. Blocks held and swapped are added up. */
static int check_list(const gmg *g, const gmg_container *c, int li, uint64_t *held,
                      uint64_t *swapped, uint64_t *shared, ss_errbuf *eb)
{
    static const char *const names[3] = {"waiting", "running", "swapped"};
    const gmg_list *l = li == L_WAITING ? &c->waiting : li == L_RUNNING ? &c->running : &c->swapped;
    const uint8_t want = li == L_WAITING ? GMG_REQ_WAITING
                         : li == L_RUNNING ? GMG_REQ_RUNNING : GMG_REQ_SWAPPED;
    uint32_t n = 0;
    gmg_id prev = GMG_NONE;
    for (gmg_id r = l->head; r != GMG_NONE; prev = r, r = g->reqs[r].next, n++) {
        if (r >= g->n_slots || n >= g->n_slots)
            return ss_err(eb, SS_ECHECK, "container %u: %s list broken at member %u (slot %u "
                          "of %u)", c->id, names[li], n, r, g->n_slots);
        const gmg_req *q = &g->reqs[r];
        if (q->state != want || q->container != c->id)
            return ss_err(eb, SS_ECHECK, "container %u: request %llu (slot %u) in the %s list "
                          "has state %s and container %u", c->id,
                          (unsigned long long)q->trace_id, r, names[li], state_name(q->state),
                          q->container);
        if (q->prev != prev)
            return ss_err(eb, SS_ECHECK, "container %u: request %llu (slot %u) in the %s list "
                          "links back to slot %u, not %u", c->id, (unsigned long long)q->trace_id,
                          r, names[li], q->prev, prev);
        if (li != L_RUNNING && q->blocks)
            return ss_err(eb, SS_ECHECK, "container %u: %s request %llu (slot %u) holds %u GPU "
                          "blocks", c->id, names[li], (unsigned long long)q->trace_id, r,
                          q->blocks);
        int rc = check_tokens(q, r, eb);
        if (rc)
            return rc;
        if (q->pc_shared > q->blocks || (q->pc_shared && !c->pc))
            return ss_err(eb, SS_ECHECK, "container %u: request %llu (slot %u) shares %u "
                          "prefix-cache blocks of the %u it holds%s", c->id,
                          (unsigned long long)q->trace_id, r, q->pc_shared, q->blocks,
                          c->pc ? "" : " with no cache");
        *held += q->blocks - q->pc_shared;
        *shared += q->pc_shared;
        *swapped += q->swapped_blocks;
    }
    if (n != l->n || l->tail != prev)
        return ss_err(eb, SS_ECHECK, "container %u: %s list count %u, tail slot %u, but %u "
                      "linked ending at slot %u", c->id, names[li], l->n, l->tail, n, prev);
    return SS_OK;
}

/* full: walk the waiting list too; otherwise its requests are taken to hold no GPU blocks, as
 * the last full check found. */
static int check_container(const gmg *g, const gmg_container *c, int full, int deep,
                           ss_errbuf *eb)
{
    /* unsigned counters: a "negative" pool wraps round to far above the total */
    if (c->blocks_free > c->blocks_total)
        return ss_err(eb, SS_ECHECK, "container %u: free KV blocks %lld out of [0, %u]", c->id,
                      (long long)(int32_t)c->blocks_free, c->blocks_total);
    if (c->swap_free > c->swap_total)
        return ss_err(eb, SS_ECHECK, "container %u: free swap blocks %lld out of [0, %u]", c->id,
                      (long long)(int32_t)c->swap_free, c->swap_total);
    uint64_t held = 0, swapped = 0, shared = 0;
    for (int li = full ? L_WAITING : L_RUNNING; li <= L_SWAPPED; li++) {
        int rc = check_list(g, c, li, &held, &swapped, &shared, eb);
        if (rc)
            return rc;
    }
    if (c->pc) {
        int rc = gmg__pc_check(g, c, shared, deep, eb);
        if (rc)
            return rc;
        held += c->pc->n_held;
    }
    held += (uint64_t)c->blocks_reserved + c->blocks_in_transit + c->blocks_offloaded +
            c->blocks_staged;
    if (held + c->blocks_free != c->blocks_total)
        return ss_err(eb, SS_ECHECK, "container %u: %llu held (reserved and in transit included) "
                      "+ %u free != %u KV blocks", c->id, (unsigned long long)held,
                      c->blocks_free, c->blocks_total);
    if (swapped + c->swap_free != c->swap_total)
        return ss_err(eb, SS_ECHECK, "container %u: %llu swapped + %u free != %u swap blocks",
                      c->id, (unsigned long long)swapped, c->swap_free, c->swap_total);
    return SS_OK;
}

static int check_gpu(const gmg_gpu *u, ss_errbuf *eb)
{
    const gmg_mem *m = &u->mem;
    const double parts[] = {m->weights, m->kv_pool, m->kv_used, m->activations, m->runtime,
                            m->transfer};
    static const char *const names[] = {"weights", "KV pool", "KV in use", "activations",
                                        "runtime", "transfer buffers"};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        if (!(parts[i] >= -0.5)) /* NaN fails too */
            return ss_err(eb, SS_ECHECK, "GPU %u: %s %.0f bytes, below 0", u->id, names[i],
                          parts[i]);
    if (m->kv_used > m->kv_pool * (1 + 1e-9) + 0.5)
        return ss_err(eb, SS_ECHECK, "GPU %u: KV in use %.0f bytes out of [0, %.0f] (the pool)",
                      u->id, m->kv_used, m->kv_pool);
    double total = m->weights + m->kv_pool + m->activations + m->runtime + m->transfer;
    if (total > u->capacity + 0.5)
        return ss_err(eb, SS_ECHECK, "GPU %u: memory %.0f bytes out of [0, %.0f] (weights %.0f, "
                      "KV pool %.0f, activations %.0f, runtime %.0f, transfer %.0f)", u->id,
                      total, u->capacity, m->weights, m->kv_pool, m->activations, m->runtime,
                      m->transfer);
    return SS_OK;
}

/* Every slot in exactly one state: the free list holds the free ones, done and rejected
 * requests are gone by the end of the event that finished them, the lists (checked per
 * container) hold every waiting, running and swapped one, and the counts add up. */
static int check_slots(const gmg *g, ss_errbuf *eb)
{
    uint32_t by_state[GMG_REQ_REJECTED + 1] = {0};
    for (gmg_id r = 0; r < g->n_slots; r++) {
        const gmg_req *q = &g->reqs[r];
        if (q->state > GMG_REQ_REJECTED)
            return ss_err(eb, SS_ECHECK, "request %llu (slot %u): invalid state %u",
                          (unsigned long long)q->trace_id, r, q->state);
        by_state[q->state]++;
        if (q->state == GMG_REQ_FREE)
            continue;
        if (q->state == GMG_REQ_DONE || q->state == GMG_REQ_REJECTED || q->container >= g->n_ctrs)
            return ss_err(eb, SS_ECHECK, "request %llu (slot %u): state %s, container %u: not a "
                          "request in flight", (unsigned long long)q->trace_id, r,
                          state_name(q->state), q->container);
        int rc = q->state == GMG_REQ_MIGRATING || q->state == GMG_REQ_OFFLOADED
                     ? check_tokens(q, r, eb) /* those in lists were checked there */
                     : SS_OK;
        if (rc)
            return rc;
    }
    uint32_t n_free = 0;
    for (gmg_id r = g->free_slot; r != GMG_NONE; r = g->reqs[r].next, n_free++)
        if (r >= g->n_slots || n_free >= g->n_slots || g->reqs[r].state != GMG_REQ_FREE)
            return ss_err(eb, SS_ECHECK, "free list broken at member %u (slot %u of %u, state "
                          "%s)", n_free, r, g->n_slots,
                          r < g->n_slots ? state_name(g->reqs[r].state) : "none");
    if (n_free != by_state[GMG_REQ_FREE] || g->n_slots - n_free != g->in_flight)
        return ss_err(eb, SS_ECHECK, "%u slots: %u free (%u on the free list), %u in flight "
                      "counted", g->n_slots, by_state[GMG_REQ_FREE], n_free, g->in_flight);
    uint64_t listed[3] = {0}, offloaded = 0;
    for (uint32_t i = 0; i < g->n_ctrs; i++) {
        listed[0] += g->ctrs[i].waiting.n;
        listed[1] += g->ctrs[i].running.n;
        listed[2] += g->ctrs[i].swapped.n;
        offloaded += g->ctrs[i].n_offloaded;
    }
    static const uint8_t st[3] = {GMG_REQ_WAITING, GMG_REQ_RUNNING, GMG_REQ_SWAPPED};
    for (int k = 0; k < 3; k++)
        if (by_state[st[k]] != listed[k])
            return ss_err(eb, SS_ECHECK, "%u requests are %s but the %s lists hold %llu",
                          by_state[st[k]], state_name(st[k]), state_name(st[k]),
                          (unsigned long long)listed[k]);
    if (by_state[GMG_REQ_OFFLOADED] != offloaded)
        return ss_err(eb, SS_ECHECK, "%u requests are offloaded but the containers count %llu",
                      by_state[GMG_REQ_OFFLOADED], (unsigned long long)offloaded);
    return SS_OK;
}

static int check_graph(const gmg *g, int full, int deep, ss_errbuf *eb)
{
    for (uint32_t i = 0; i < g->n_ctrs; i++) {
        int rc = check_container(g, &g->ctrs[i], full, deep, eb);
        if (rc)
            return rc;
    }
    for (uint32_t i = 0; i < g->n_gpus; i++) {
        int rc = check_gpu(&g->gpus[i], eb);
        if (rc)
            return rc;
    }
    return full ? check_slots(g, eb) : SS_OK;
}

int gmg_check(const gmg *g, ss_errbuf *eb) { return check_graph(g, 1, 1, eb); }

int gmg_check_active(const gmg *g, ss_errbuf *eb) { return check_graph(g, 0, 0, eb); }

int gmg_check_mode(const gmg *g, int full, int deep, ss_errbuf *eb)
{
    return check_graph(g, full, deep, eb);
}
