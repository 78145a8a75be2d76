/* depot_slab.c -- slab files: where allocations of up to 64 KiB keep their bytes.
 *
 * Creating and deleting one inode per allocation costs more than everything else a small
 * allocation does, so each resource keeps one sparse file per slot size (4, 8, 16, 32 and
 * 64 KiB), <dir>/slab/<size>, and an allocation takes a slot of the smallest size that holds
 * its max_size at ALLOCATE; its row records which (columns slab and slot).  Slot i is the
 * byte range [i * size, (i + 1) * size) of its file.
 *
 * Two rules keep one allocation's bytes from ever reaching another:
 *  - a slot goes back on the free list only once the delete of its row is committed and no
 *    request holds the allocation, and only after its range has been punched out;
 *  - a slot may hold stale bytes past the allocation's current size (an aborted STORE, a
 *    crash, bytes a TRUNCATE cut off), so whatever extends the current size writes every byte
 *    of the extension, and nothing reads past it (depot_store.c).
 * The free lists are under store->mu.  At startup they are rebuilt from the rows alone: the
 * slots below the highest claimed one that no row claims are free.
 */
#include "depot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lns_err.h"
#include "lns_fail.h"
#include "lns_log.h"

static int class_of(uint32_t size)
{
    for (int c = 0; c < DEPOT_SLAB_CLASSES; c++)
        if (size == DEPOT_SLOT_MIN << c)
            return c;
    return -1;
}

uint32_t depot_slot_size(uint64_t max_size)
{
    for (int c = 0; c < DEPOT_SLAB_CLASSES; c++)
        if (max_size <= (uint64_t)DEPOT_SLOT_MIN << c)
            return DEPOT_SLOT_MIN << c;
    return 0;
}

int depot_slab_open(depot_resource_t *res, char *err, size_t errlen)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/slab", res->cfg.dir);
    if (mkdir(path, 0750) < 0 && errno != EEXIST) {
        lns_err_set(err, errlen, "resource %d: cannot create %s: %s", res->id, path,
                    strerror(errno));
        return -1;
    }
    for (int c = 0; c < DEPOT_SLAB_CLASSES; c++) {
        depot_slab_t *sl = &res->slab[c];
        sl->size = DEPOT_SLOT_MIN << c;
        snprintf(path, sizeof path, "%s/slab/%u", res->cfg.dir, sl->size);
        sl->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
        if (sl->fd < 0) {
            lns_err_set(err, errlen, "resource %d: cannot open %s: %s", res->id, path,
                        strerror(errno));
            return -1;
        }
    }
    return 0;
}

int depot_slab_fd(const depot_resource_t *res, uint32_t size)
{
    return res->slab[class_of(size)].fd;
}

int64_t depot_slab_take(depot_resource_t *res, uint32_t size)
{
    depot_slab_t *sl = &res->slab[class_of(size)];
    if (sl->nfree > 0)
        return sl->free[--sl->nfree];
    return sl->nslots++;
}

void depot_slab_punch(depot_resource_t *res, uint32_t size, int64_t slot)
{
    const depot_slab_t *sl = &res->slab[class_of(size)];
    if (lns_fail("slab.punch") < 0) {
        lns_log(LNS_LOG_WARN, "resource %d: cannot punch slot %lld of slab %u: %s", res->id,
                (long long)slot, size, strerror(errno));
        return;
    }
    if (fallocate(sl->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)slot * size,
                  (off_t)size) < 0 && errno != EOPNOTSUPP)
        lns_log(LNS_LOG_WARN, "resource %d: cannot punch slot %lld of slab %u: %s", res->id,
                (long long)slot, size, strerror(errno));
}

void depot_slab_put(depot_resource_t *res, uint32_t size, int64_t slot)
{
    depot_store_t *st = res->store;
    depot_slab_t *sl = &res->slab[class_of(size)];

    /* Punch first: once on the free list the slot may be someone else's at once. */
    depot_slab_punch(res, size, slot);
    pthread_mutex_lock(&st->mu);
    if (sl->nfree == sl->capfree) {
        size_t cap = sl->capfree ? 2 * sl->capfree : 256;
        int64_t *nf = realloc(sl->free, cap * sizeof *nf);
        if (!nf) {
            pthread_mutex_unlock(&st->mu);
            lns_log(LNS_LOG_WARN, "resource %d: out of memory; slot %lld of slab %u stays "
                    "unused until restart", res->id, (long long)slot, size);
            return;
        }
        sl->free = nf;
        sl->capfree = cap;
    }
    sl->free[sl->nfree++] = slot;
    pthread_mutex_unlock(&st->mu);
}

int depot_slab_claim(depot_resource_t *res, uint32_t size, int64_t slot)
{
    int c = class_of(size);
    if (c < 0 || slot < 0 || slot >= INT64_MAX / DEPOT_SLOT_MAX)
        return -1;
    depot_slab_t *sl = &res->slab[c];
    size_t w = (size_t)(slot / 64);
    uint64_t bit = 1ULL << (slot % 64);
    if (w >= sl->usedwords) {
        size_t n = sl->usedwords ? sl->usedwords : 64;
        while (n <= w)
            n *= 2;
        uint64_t *nu = realloc(sl->used, n * sizeof *nu);
        if (!nu)
            return -1;
        memset(nu + sl->usedwords, 0, (n - sl->usedwords) * sizeof *nu);
        sl->used = nu;
        sl->usedwords = n;
    }
    if (sl->used[w] & bit)
        return -1;
    sl->used[w] |= bit;
    if (slot >= sl->nslots)
        sl->nslots = slot + 1;
    return 0;
}

int depot_slab_rebuild(depot_resource_t *res, char *err, size_t errlen)
{
    for (int c = 0; c < DEPOT_SLAB_CLASSES; c++) {
        depot_slab_t *sl = &res->slab[c];
        size_t nfree = 0;
        for (int64_t i = 0; i < sl->nslots; i++)
            nfree += !(sl->used[i / 64] & 1ULL << (i % 64));
        sl->capfree = nfree > 256 ? nfree : 256;
        sl->free = malloc(sl->capfree * sizeof *sl->free);
        if (!sl->free) {
            lns_err_set(err, errlen, "out of memory");
            return -1;
        }
        /* Highest first, so that the lowest free slot is taken first. */
        for (int64_t i = sl->nslots - 1; i >= 0; i--)
            if (!(sl->used[i / 64] & 1ULL << (i % 64)))
                sl->free[sl->nfree++] = i;
        free(sl->used);
        sl->used = NULL;
        sl->usedwords = 0;
        /* Slots past the last claimed one were freed before the depot went down. */
        struct stat sb;
        off_t end = (off_t)sl->nslots * sl->size;
        if (fstat(sl->fd, &sb) == 0 && sb.st_size > end && ftruncate(sl->fd, end) < 0)
            lns_log(LNS_LOG_WARN, "resource %d: cannot trim slab %u: %s", res->id, sl->size,
                    strerror(errno));
    }
    return 0;
}

void depot_slab_close(depot_resource_t *res)
{
    for (int c = 0; c < DEPOT_SLAB_CLASSES; c++) {
        depot_slab_t *sl = &res->slab[c];
        if (sl->fd >= 0)
            close(sl->fd);
        sl->fd = -1;
        free(sl->free);
        free(sl->used);
        sl->free = NULL;
        sl->used = NULL;
        sl->nfree = sl->capfree = sl->usedwords = 0;
    }
}
