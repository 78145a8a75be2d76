/* lors_sched_class.c -- holder classes: the blocks grouped by the set of depots that hold
 * them, for the order of a download in any order (docs/scheduler.md, "Scarce blocks first").
 *
 * An exNode from lors_upload has a handful of classes (one per fragment, or fewer: fragments
 * on the same depots share one), each with the pending blocks in a lazy min-heap and their
 * exact count.  More than CLS_MAX classes, or a class on more than CLS_HOLDERS depots: no
 * classes, and the plain lowest-block order.  Internal to liblors.
 */
#include "lors_sched_int.h"

#include <stdlib.h>
#include <string.h>

/* The depots of b's usable replicas, sorted, without repeats; -1 if more than CLS_HOLDERS. */
static int holders_of(const lors_sched_t *s, uint32_t b, int *h)
{
    int n = 0;
    for (uint32_t r = s->blk[b].rep_head; r != NONE; r = s->rep[r].next) {
        const rep_t *rp = &s->rep[r];
        if (!rp->usable || rp->bad)
            continue;
        int i = 0;
        while (i < n && h[i] < rp->depot)
            i++;
        if (i < n && h[i] == rp->depot)
            continue;
        if (n == CLS_HOLDERS)
            return -1;
        memmove(h + i + 1, h + i, (size_t)(n - i) * sizeof *h);
        h[i] = rp->depot;
        n++;
    }
    return n;
}

void lors__sched_classes_free(lors_sched_t *s)
{
    for (int c = 0; c < s->ncls; c++)
        free(s->cls[c].pend.v);
    free(s->cls);
    free(s->bcls);
    s->cls = NULL;
    s->bcls = NULL;
    s->ncls = 0;
}

void lors__sched_classes_build(lors_sched_t *s)
{
    s->cls = calloc(CLS_MAX, sizeof *s->cls);
    s->bcls = malloc(s->nblocks ? s->nblocks : 1);
    if (!s->cls || !s->bcls)
        goto none;
    for (uint32_t b = 0; b < s->nblocks; b++) {
        int h[CLS_HOLDERS], n = holders_of(s, b, h), c = 0;
        if (n < 0)
            goto none;
        while (c < s->ncls && (s->cls[c].n != n || memcmp(s->cls[c].holder, h, (size_t)n * sizeof *h)))
            c++;
        if (c == s->ncls) {
            if (c == CLS_MAX)
                goto none;
            s->cls[c].n = n;
            memcpy(s->cls[c].holder, h, (size_t)n * sizeof *h);
            s->ncls++;
        }
        s->bcls[b] = (uint8_t)c;
        if (s->blk[b].state == ST_PENDING) {
            if (lors__sched_heap_push(&s->cls[c].pend, b) < 0)
                goto none;
            s->cls[c].npend++;
        }
    }
    if (s->ncls > 1)
        return;
none: /* one class orders nothing: the lowest block first, as without classes */
    lors__sched_classes_free(s);
}

void lors__sched_class_pend(lors_sched_t *s, uint32_t b, int delta)
{
    if (s->ncls)
        s->cls[s->bcls[b]].npend += (uint32_t)delta;
}

int lors__sched_class_push(lors_sched_t *s, uint32_t b)
{
    return s->ncls ? lors__sched_heap_push(&s->cls[s->bcls[b]].pend, b) : 0;
}
