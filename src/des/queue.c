/* 4-ary implicit min-heap ordered by (at, seq). A 4-ary heap halves the depth of a binary
 * heap and keeps a node's children in one cache line (4 x 24-byte entries), which is what
 * the pop-dominated DES workload wants. */
#include "des/queue.h"

#include "core/ss_alloc.h"
#include "core/ss_err.h"

#define D 4

static inline int less(const des_qent *x, const des_qent *y)
{
    return x->at < y->at || (x->at == y->at && x->seq < y->seq);
}

void des__queue_init(des_queue *q)
{
    q->a = NULL;
    q->n = q->cap = 0;
}

void des__queue_fini(des_queue *q)
{
    ss_free(q->a);
    des__queue_init(q);
}

int des__queue_push(des_queue *q, des_event *ev)
{
    if (q->n == q->cap && ss_grow((void **)&q->a, &q->cap, q->n + 1, sizeof *q->a))
        return SS_ENOMEM;
    des_qent x = {.at = ev->at, .seq = ev->seq, .ev = ev};
    size_t i = q->n++;
    while (i > 0) {
        size_t p = (i - 1) / D;
        if (!less(&x, &q->a[p]))
            break;
        q->a[i] = q->a[p];
        i = p;
    }
    q->a[i] = x;
    return SS_OK;
}

des_event *des__queue_pop(des_queue *q)
{
    if (!q->n)
        return NULL;
    des_qent *a = q->a;
    des_event *top = a[0].ev;
    size_t n = --q->n, i = 0;
    if (!n)
        return top;
    /* Sift the last entry down from the root's hole: at each level the least child moves up
     * while it is less than the entry. */
    des_qent x = a[n];
    for (size_t c; (c = i * D + 1) < n;) {
        const des_qent *best = &a[c], *end = &a[c + D < n ? c + D : n];
        for (const des_qent *k = best + 1; k < end; k++)
            if (less(k, best))
                best = k;
        if (!less(best, &x))
            break;
        a[i] = *best;
        i = (size_t)(best - a);
    }
    a[i] = x;
    return top;
}
