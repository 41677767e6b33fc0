/* Private to des/: the pending-event priority queue behind a five-function API, so that the
 * heap can be swapped (calendar queue, ladder queue) and cross-checked against a reference. */
#ifndef SS_DES_QUEUE_H
#define SS_DES_QUEUE_H

#include <stddef.h>

#include "des/des.h"

/* 4-ary min-heap of (at, seq, event) entries; keys are copied into the entry so that sifting
 * never dereferences the events. */
typedef struct des_qent {
    ss_time at;
    uint64_t seq;
    des_event *ev; /* borrowed */
} des_qent;

typedef struct des_queue {
    des_qent *a; /* owned array */
    size_t n, cap;
} des_queue;

void des__queue_init(des_queue *q);
void des__queue_fini(des_queue *q);
/* Insert ev keyed by (ev->at, ev->seq). 0 or SS_ENOMEM (queue unchanged). */
int des__queue_push(des_queue *q, des_event *ev);
/* Remove and return the least (at, seq) event, NULL when empty. */
des_event *des__queue_pop(des_queue *q);
/* The least event without removing it, NULL when empty. */
static inline des_event *des__queue_peek(const des_queue *q) { return q->n ? q->a[0].ev : NULL; }
static inline size_t des__queue_size(const des_queue *q) { return q->n; }

#endif
