/* lors_sched_bits.c -- the scheduler's set of pending blocks, as a bitmap tree.
 *
 * The per-depot heaps answer "the lowest pending block"; lookahead (lors_sched.c) needs "the
 * lowest pending block at or after k", which a heap cannot answer.  A bitmap with a summary
 * level per 64 words (one bit per non-empty word below it, up to a single top word) answers it
 * in O(log64 n) word operations; set and clear cost the same.  Internal to liblors.
 */
#include "lors_sched_int.h"

#include <stdlib.h>

int lors__sched_bits_init(bits_t *t, uint32_t n)
{
    uint64_t words = ((uint64_t)n + 63) / 64;
    t->nlev = 0;
    do {
        if (t->nlev == BITS_MAXLEV)
            return -1;
        t->size[t->nlev] = words;
        t->v[t->nlev] = calloc(words ? words : 1, sizeof(uint64_t));
        if (!t->v[t->nlev])
            return -1;
        t->nlev++;
        words = (words + 63) / 64;
    } while (t->size[t->nlev - 1] > 1);
    return 0;
}

void lors__sched_bits_free(bits_t *t)
{
    for (int l = 0; l < t->nlev; l++)
        free(t->v[l]);
    t->nlev = 0;
}

void lors__sched_bits_set(bits_t *t, uint32_t b)
{
    uint64_t i = b;
    for (int l = 0; l < t->nlev; l++, i >>= 6) {
        uint64_t was = t->v[l][i >> 6];
        t->v[l][i >> 6] = was | 1ull << (i & 63);
        if (was)
            break; /* the levels above already know this word is not empty */
    }
}

void lors__sched_bits_clear(bits_t *t, uint32_t b)
{
    uint64_t i = b;
    for (int l = 0; l < t->nlev; l++, i >>= 6) {
        t->v[l][i >> 6] &= ~(1ull << (i & 63));
        if (t->v[l][i >> 6])
            break;
    }
}

/* The lowest set position >= i at level l, or UINT64_MAX. */
static uint64_t find(const bits_t *t, int l, uint64_t i)
{
    if ((i >> 6) >= t->size[l])
        return UINT64_MAX;
    uint64_t w = i >> 6, m = t->v[l][w] & (~0ull << (i & 63));
    if (m)
        return (w << 6) + (uint64_t)__builtin_ctzll(m);
    if (l + 1 >= t->nlev)
        return UINT64_MAX;
    uint64_t up = find(t, l + 1, w + 1); /* the next non-empty word at this level */
    if (up == UINT64_MAX)
        return UINT64_MAX;
    return (up << 6) + (uint64_t)__builtin_ctzll(t->v[l][up]);
}

uint32_t lors__sched_bits_next(const bits_t *t, uint32_t from)
{
    uint64_t p = t->nlev ? find(t, 0, from) : UINT64_MAX;
    return p == UINT64_MAX ? NONE : (uint32_t)p;
}
