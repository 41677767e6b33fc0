/* Prefix identity in synthetic traffic: groups sharing a system prompt and multi-turn
 * conversations whose turns extend each other, named by 512-token block ids as Mooncake's
 * hash_ids are (equal id = equal tokens). Conversations start as the generator's arrival
 * process; their later turns wait in a small heap ordered by (arrival, scheduling order), so the
 * output stays sorted with memory bounded by the conversations in flight. Not for the
 * independent-request generator or the spec checks (trace_gen.c). */
#include "trace/trace_int.h"

#include "core/ss_alloc.h"

#include <string.h>

#define BT TRACE_GEN_BLOCK_TOKENS

/* One conversation: an append-only token stream (system prompt, then user message, output,
 * user message, ...) whose every turn's prompt is a prefix of it. So block position i names
 * the same tokens in every turn, and one id per position serves all of them. */
typedef struct conv {
    uint64_t session;   /* 1-based conversation number (the CSV's session_id) */
    ss_time at;         /* arrival of its pending turn */
    uint64_t seq;       /* order in which the pending turn was scheduled (ties) */
    uint32_t turns_left; /* turns after the one last sent */
    uint64_t context;   /* tokens of the last turn's prompt plus its output */
    uint32_t n_blocks;  /* ids named so far (positions 0 .. n_blocks-1) */
    size_t cap_blocks;  /* allocated entries of blocks */
    uint32_t *blocks;   /* owned; kept when the slot is reused */
    uint32_t next_free; /* free-list link (UINT32_MAX = end) */
} conv;

struct trace__conv {
    uint32_t *sys_tokens;   /* per group: system-prompt tokens */
    uint32_t *sys_base;     /* per group: id of its first full system block */
    trace__zipf zgroup;     /* group popularity (group_zipf > 0) */
    trace__zipf zturns;     /* when turns is zipf */
    ss_rng group, turns, think; /* SS_RNG_STREAM_TRACE_GROUP, _TURNS, _THINK */
    conv *pool;             /* conversation slots */
    size_t cap_pool;
    uint32_t n_pool, free_head; /* slots used; first free slot (UINT32_MAX = none) */
    uint32_t *heap;         /* slots with a pending turn, min-heap by (at, seq) */
    size_t cap_heap;
    uint32_t n_heap;
    uint64_t seq;           /* turns scheduled so far */
    uint64_t next_block;    /* next fresh block id; ids are 32-bit */
    uint64_t n_convs;       /* conversations started */
    ss_time next_start;     /* first turn of the next conversation (when have_start) */
    int have_start;         /* next_start is drawn */
    int starts_done;        /* the arrival process is past the duration */
    uint32_t max_context;   /* prompt-token cap */
};

/* ---- groups -------------------------------------------------------------------------------- */

/* Draw each group's system-prompt length (in group order, from its own stream) and give its
 * full blocks their ids. A partial last system block gets none: the tokens after it differ
 * between requests, so a shared id there would share tokens that are not equal. */
static int groups_make(trace__conv *c, const trace_gen_spec *s, ss_errbuf *eb)
{
    if (!s->groups)
        return SS_OK;
    c->sys_tokens = ss_malloc(s->groups * sizeof *c->sys_tokens);
    c->sys_base = ss_malloc(s->groups * sizeof *c->sys_base);
    if (!c->sys_tokens || !c->sys_base)
        return ss_err(eb, SS_ENOMEM, "trace generator: out of memory");
    ss_rng r;
    trace__zipf z;
    ss_rng_seed(&r, s->seed, SS_RNG_STREAM_TRACE_SYSTEM);
    trace__len_prepare(&s->system, &z);
    for (uint32_t g = 0; g < s->groups; g++) {
        c->sys_tokens[g] = trace__len_sample(&s->system, &z, &r);
        c->sys_base[g] = (uint32_t)c->next_block; /* < 2^31: at most 10^5 groups x 19,532 */
        c->next_block += c->sys_tokens[g] / BT;
    }
    if (s->group_zipf > 0)
        trace__zipf_init(&c->zgroup, s->group_zipf, s->groups);
    return SS_OK;
}

static uint32_t group_pick(trace__conv *c, const trace_gen_spec *s)
{
    if (s->group_zipf > 0)
        return (uint32_t)trace__zipf_sample(&c->zgroup, &c->group) - 1;
    return (uint32_t)ss_rng_below(&c->group, s->groups);
}

int trace__conv_create(trace_gen *g, ss_errbuf *eb)
{
    const trace_gen_spec *s = &g->spec;
    trace__conv *c = ss_calloc(1, sizeof *c);
    if (!c)
        return ss_err(eb, SS_ENOMEM, "trace generator: out of memory");
    c->free_head = UINT32_MAX;
    c->max_context = s->max_context ? s->max_context : TRACE_GEN_MAX_CONTEXT_DEFAULT;
    ss_rng_seed(&c->group, s->seed, SS_RNG_STREAM_TRACE_GROUP);
    ss_rng_seed(&c->turns, s->seed, SS_RNG_STREAM_TRACE_TURNS);
    ss_rng_seed(&c->think, s->seed, SS_RNG_STREAM_TRACE_THINK);
    int rc = groups_make(c, s, eb);
    if (rc) {
        trace__conv_destroy(&c);
        return rc;
    }
    if (!trace__len_unset(&s->turns)) { /* set: conversations start at rate / E[turns] */
        trace__len_prepare(&s->turns, &c->zturns);
        g->mean_gap_s *= trace__len_mean_small(&s->turns);
    }
    g->conv = c;
    return SS_OK;
}

void trace__conv_destroy(trace__conv **cp)
{
    if (!cp || !*cp)
        return;
    trace__conv *c = *cp;
    for (uint32_t i = 0; i < c->n_pool; i++)
        ss_free(c->pool[i].blocks);
    ss_free(c->pool);
    ss_free(c->heap);
    ss_free(c->sys_tokens);
    ss_free(c->sys_base);
    ss_free(c);
    *cp = NULL;
}

void trace__conv_set_next_block(trace_gen *g, uint64_t id)
{
    if (g->conv)
        g->conv->next_block = id;
}

/* ---- the heap of pending turns ------------------------------------------------------------ */

static int before(const trace__conv *c, uint32_t a, uint32_t b)
{
    const conv *x = &c->pool[a], *y = &c->pool[b];
    return x->at < y->at || (x->at == y->at && x->seq < y->seq);
}

static int heap_push(trace__conv *c, uint32_t slot)
{
    if (c->n_heap == c->cap_heap &&
        ss_grow((void **)&c->heap, &c->cap_heap, c->n_heap + 1, sizeof *c->heap))
        return SS_ENOMEM;
    uint32_t i = c->n_heap++;
    while (i > 0 && before(c, slot, c->heap[(i - 1) / 2])) {
        c->heap[i] = c->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    c->heap[i] = slot;
    return SS_OK;
}

static uint32_t heap_pop(trace__conv *c)
{
    uint32_t top = c->heap[0], last = c->heap[--c->n_heap], i = 0;
    for (;;) {
        uint32_t k = 2 * i + 1;
        if (k >= c->n_heap)
            break;
        if (k + 1 < c->n_heap && before(c, c->heap[k + 1], c->heap[k]))
            k++;
        if (!before(c, c->heap[k], last))
            break;
        c->heap[i] = c->heap[k];
        i = k;
    }
    if (c->n_heap)
        c->heap[i] = last;
    return top;
}

/* ---- conversations ------------------------------------------------------------------------ */

/* A slot for a new conversation (a freed one first, its block array kept), or UINT32_MAX. */
static uint32_t slot_take(trace__conv *c)
{
    uint32_t i = c->free_head;
    if (i != UINT32_MAX) {
        c->free_head = c->pool[i].next_free;
        return i;
    }
    if (c->n_pool == UINT32_MAX - 1 ||
        (c->n_pool == c->cap_pool &&
         ss_grow((void **)&c->pool, &c->cap_pool, c->n_pool + 1, sizeof *c->pool)))
        return UINT32_MAX;
    memset(&c->pool[c->n_pool], 0, sizeof *c->pool);
    return c->n_pool++;
}

/* The conversation ended. Its blocks stay readable until the slot is reused, which happens in
 * a later trace_gen_next call, so a record that borrows them stays valid as promised. */
static void slot_free(trace__conv *c, uint32_t i)
{
    c->pool[i].next_free = c->free_head;
    c->free_head = i;
}

/* Name the blocks of a prompt of `tokens` tokens: positions up to n_sys take the group's
 * system ids (first turn only: later turns have them already), the rest fresh ids. */
static int name_blocks(trace__conv *c, conv *v, uint32_t tokens, uint32_t sys_base,
                       uint32_t n_sys, ss_errbuf *eb)
{
    uint32_t need = (uint32_t)(((uint64_t)tokens + BT - 1) / BT);
    if (need > v->cap_blocks && ss_grow((void **)&v->blocks, &v->cap_blocks, need,
                                        sizeof *v->blocks))
        return ss_err(eb, SS_ENOMEM, "trace generator: out of memory");
    for (uint32_t i = v->n_blocks; i < need; i++) {
        if (i < n_sys) {
            v->blocks[i] = sys_base + i;
            continue;
        }
        if (c->next_block > UINT32_MAX)
            return ss_err(eb, SS_EINVAL, "trace generator: more than 2^32 distinct 512-token "
                          "prefix blocks (ids are 32-bit): generate a shorter trace");
        v->blocks[i] = (uint32_t)c->next_block++;
    }
    if (need > v->n_blocks)
        v->n_blocks = need;
    return SS_OK;
}

/* Fill *out with a turn of v arriving at t whose prompt has `tokens` tokens (blocks named),
 * and schedule v's next turn or end v. 1, or SS_ENOMEM with eb set. */
static int emit(trace_gen *g, uint32_t slot, ss_time t, uint32_t tokens, trace_rec *out,
                ss_errbuf *eb)
{
    trace__conv *c = g->conv;
    conv *v = &c->pool[slot];
    memset(out, 0, sizeof *out);
    out->id = g->n_done++;
    out->arrival_ns = t;
    out->prompt_tokens = tokens;
    out->output_tokens = trace__len_sample(&g->spec.output, &g->zoutput, &g->output);
    out->session_id = v->session;
    out->prefix_blocks = v->blocks;
    out->n_prefix_blocks = (uint32_t)(((uint64_t)tokens + BT - 1) / BT);
    v->context = (uint64_t)tokens + out->output_tokens;
    ss_time gap = 0;
    if (v->turns_left) {
        double s = ss_rng_exp(&c->think, g->spec.think_s);
        gap = s < 9e9 ? ss_time_from_s(s) : SS_TIME_MAX;
    }
    if (!v->turns_left || gap > SS_TIME_MAX - t) {
        slot_free(c, slot);
        return 1;
    }
    v->turns_left--;
    v->at = t + gap;
    v->seq = c->seq++;
    if (heap_push(c, slot))
        return ss_err(eb, SS_ENOMEM, "trace generator: out of memory");
    return 1;
}

/* A new conversation whose first turn arrives at t. */
static int conv_start(trace_gen *g, ss_time t, trace_rec *out, ss_errbuf *eb)
{
    trace__conv *c = g->conv;
    const trace_gen_spec *s = &g->spec;
    uint32_t slot = slot_take(c);
    if (slot == UINT32_MAX)
        return ss_err(eb, SS_ENOMEM, "trace generator: out of memory");
    conv *v = &c->pool[slot];
    v->session = ++c->n_convs;
    v->n_blocks = 0;
    uint32_t grp = s->groups ? group_pick(c, s) : 0;
    uint32_t sys = s->groups ? c->sys_tokens[grp] : 0;
    uint32_t turns = trace__len_unset(&s->turns)
                         ? 1 : trace__len_sample(&s->turns, &c->zturns, &c->turns);
    v->turns_left = turns - 1;
    uint64_t tokens = sys + (uint64_t)trace__len_sample(&s->prompt, &g->zprompt, &g->prompt);
    if (tokens > c->max_context)
        tokens = c->max_context; /* a turn at the cap ends its conversation: none can follow */
    int rc = name_blocks(c, v, (uint32_t)tokens, s->groups ? c->sys_base[grp] : 0, sys / BT,
                         eb);
    if (rc) {
        slot_free(c, slot);
        return rc;
    }
    return emit(g, slot, t, (uint32_t)tokens, out, eb);
}

/* v's pending turn: its prompt extends the context by a new user message; one that would pass
 * max_context ends the conversation instead (0). 1, 0, or an error. */
static int conv_turn(trace_gen *g, uint32_t slot, trace_rec *out, ss_errbuf *eb)
{
    trace__conv *c = g->conv;
    conv *v = &c->pool[slot];
    uint64_t tokens = v->context + trace__len_sample(&g->spec.prompt, &g->zprompt, &g->prompt);
    if (tokens > c->max_context) {
        slot_free(c, slot);
        return 0;
    }
    int rc = name_blocks(c, v, (uint32_t)tokens, 0, 0, eb);
    if (rc) {
        slot_free(c, slot);
        return rc;
    }
    return emit(g, slot, v->at, (uint32_t)tokens, out, eb);
}

int trace__conv_next(trace_gen *g, trace_rec *out, ss_errbuf *eb)
{
    trace__conv *c = g->conv;
    for (;;) {
        if (!c->have_start && !c->starts_done) {
            c->have_start = trace__gen_arrival(g, &c->next_start);
            c->starts_done = !c->have_start;
        }
        if (c->n_heap && (!c->have_start || c->pool[c->heap[0]].at <= c->next_start)) {
            if (c->pool[c->heap[0]].at > g->end_ns)
                return 0; /* and so is everything after it */
            int rc = conv_turn(g, heap_pop(c), out, eb);
            if (rc)
                return rc;
            continue; /* the conversation ended at max_context */
        }
        if (!c->have_start)
            return 0;
        c->have_start = 0;
        return conv_start(g, c->next_start, out, eb);
    }
}
