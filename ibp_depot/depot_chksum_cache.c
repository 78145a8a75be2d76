/* depot_chksum_cache.c -- which blocks of disk-checksummed allocations are known to match
 * their digests right now, so that a read need not hash them again (docs/depot.md, "Disk
 * checksums").
 *
 * A block is known good for `chksum-cache` seconds after the depot computed its digest from
 * the bytes it had just written, or checked the bytes against the digest; after that, and
 * after a restart (the table is memory only), the next read hashes it again.  What this
 * trades: a byte spoiled on disk inside the window is served, as it would have been just
 * before the spoiling; it is caught by the first read after the window.
 *
 * The table is direct-mapped and fixed in size: slot (hash(serial) + block) mod n, so one
 * allocation's consecutive blocks never evict each other and memory does not grow with the
 * data.  An entry names the allocation by its serial (unique in the process; an id or a
 * pointer may come back after a delete), so a stale entry never matches anything.
 *
 * Writes and reads race on purpose (reads do not take op_mu).  Each allocation has a write
 * sequence (a->cks_seq, under mu): odd while a write is between its first byte and its
 * digests.  While it is odd no entry of the allocation is believed; a reader adds a block it
 * checked only if the sequence is the even value it saw before reading the block, so a check
 * of bytes that a write then changed is never recorded.
 */
#include "depot.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "lns_time.h"

#define CACHE_SLOTS (1u << 17) /* 3 MiB; 8 GiB of data in 64 KiB blocks */

typedef struct cache_slot {
    uint64_t serial;   /* 0: empty */
    uint64_t block;
    int64_t until_ms;  /* good until then (monotonic) */
} cache_slot_t;

struct depot_cks_cache {
    pthread_mutex_t mu;
    cache_slot_t *slot;
    int64_t window_ms;
};

static atomic_uint_fast64_t next_serial = 1;

uint64_t depot_cks_cache_serial(void)
{
    return atomic_fetch_add(&next_serial, 1);
}

int depot_cks_cache_open(depot_store_t *st, int seconds)
{
    st->cks_cache = NULL;
    if (seconds <= 0)
        return 0;
    depot_cks_cache_t *c = calloc(1, sizeof *c);
    if (!c || !(c->slot = calloc(CACHE_SLOTS, sizeof *c->slot))) {
        free(c);
        return -1;
    }
    pthread_mutex_init(&c->mu, NULL);
    c->window_ms = (int64_t)seconds * 1000;
    st->cks_cache = c;
    return 0;
}

void depot_cks_cache_close(depot_store_t *st)
{
    depot_cks_cache_t *c = st->cks_cache;
    if (!c)
        return;
    pthread_mutex_destroy(&c->mu);
    free(c->slot);
    free(c);
    st->cks_cache = NULL;
}

static cache_slot_t *slot_of(depot_cks_cache_t *c, uint64_t serial, uint64_t block)
{
    uint64_t h = serial * 0x9E3779B97F4A7C15ULL;
    return &c->slot[(h + block) & (CACHE_SLOTS - 1)];
}

void depot_cks_cache_write_begin(depot_alloc_t *a, uint64_t b0, uint64_t b1)
{
    depot_cks_cache_t *c = a->res->store->cks_cache;
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    a->cks_seq++;
    /* b0 .. b0 + CACHE_SLOTS - 1 covers every slot of the allocation once. */
    uint64_t last = b1 - b0 >= CACHE_SLOTS ? b0 + CACHE_SLOTS - 1 : b1;
    for (uint64_t b = b0; b <= last; b++) {
        cache_slot_t *s = slot_of(c, a->serial, b);
        if (s->serial == a->serial && s->block >= b0 && s->block <= b1)
            s->serial = 0;
    }
    pthread_mutex_unlock(&c->mu);
}

void depot_cks_cache_write_end(depot_alloc_t *a)
{
    depot_cks_cache_t *c = a->res->store->cks_cache;
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    a->cks_seq++;
    pthread_mutex_unlock(&c->mu);
}

uint32_t depot_cks_cache_seq(depot_alloc_t *a)
{
    depot_cks_cache_t *c = a->res->store->cks_cache;
    if (!c)
        return 1;
    pthread_mutex_lock(&c->mu);
    uint32_t s = a->cks_seq;
    pthread_mutex_unlock(&c->mu);
    return s;
}

int depot_cks_cache_hit(depot_alloc_t *a, uint64_t b, uint32_t seq)
{
    depot_cks_cache_t *c = a->res->store->cks_cache;
    if (!c || (seq & 1))
        return 0;
    int64_t now = lns_mono_ms();
    pthread_mutex_lock(&c->mu);
    cache_slot_t *s = slot_of(c, a->serial, b);
    int hit = a->cks_seq == seq && s->serial == a->serial && s->block == b && now < s->until_ms;
    pthread_mutex_unlock(&c->mu);
    return hit;
}

void depot_cks_cache_put(depot_alloc_t *a, uint64_t b0, uint64_t b1, int writer, uint32_t seq)
{
    depot_cks_cache_t *c = a->res->store->cks_cache;
    if (!c)
        return;
    int64_t until = lns_mono_ms() + c->window_ms;
    pthread_mutex_lock(&c->mu);
    if (writer || (!(seq & 1) && a->cks_seq == seq))
        for (uint64_t b = b0; b <= b1 && b - b0 < CACHE_SLOTS; b++) {
            cache_slot_t *s = slot_of(c, a->serial, b);
            s->serial = a->serial;
            s->block = b;
            s->until_ms = until;
        }
    pthread_mutex_unlock(&c->mu);
}
