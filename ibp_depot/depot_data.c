/* depot_data.c -- the bytes of allocations: where they are, and the writes.
 *
 * An allocation of up to 64 KiB keeps its bytes in a slot of a slab file (depot_slab.c), a
 * larger one in its own file <dir>/data/<xx>/<id>, created by its first write.
 * depot_data_open says which as (fd, base): byte i of the allocation is byte base + i of fd,
 * and every reader and writer goes through it.
 *
 * The rule that keeps old bytes from reappearing: past the current size a slot may hold
 * stale bytes (an aborted STORE, a crash mid-STORE, what a TRUNCATE cut off, a reused slot
 * whose punch a crash prevented), so every operation that extends the current size writes
 * every byte of the extension -- a STORE its data, a WRITE past the end zeros for the gap
 * -- and nothing reads past the current size.  An own file is cut at the
 * current size instead, and grows with a hole.
 *
 * A write holds the allocation's op_mu from begin to commit or abort, so writes to one
 * allocation apply one after the other, and a CHNG that moves the bytes sees them still.
 */
#include "depot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lns_fail.h"
#include "lns_io.h"
#include "lns_log.h"
#include "lns_time.h"

void depot_data_name(uint64_t id, char *buf, size_t size)
{
    snprintf(buf, size, "%02x/%016llx", (unsigned)(id >> 56), (unsigned long long)id);
}

int depot_data_open(depot_resource_t *res, const depot_row_t *row, int write, depot_data_t *d)
{
    char name[32];
    if (row->slab) {
        d->fd = depot_slab_fd(res, row->slab);
        d->base = (uint64_t)row->slot * row->slab;
        d->own = 0;
        return 0;
    }
    depot_data_name(row->id, name, sizeof name);
    d->fd = openat(res->data_fd, name, (write ? O_RDWR | O_CREAT : O_RDONLY) | O_CLOEXEC, 0640);
    d->base = 0;
    d->own = 1;
    return d->fd < 0 ? -1 : 0;
}

void depot_data_close(depot_data_t *d)
{
    if (d->own && d->fd >= 0)
        close(d->fd);
    d->fd = -1;
}

int depot_data_cut(depot_resource_t *res, uint64_t id, uint64_t size)
{
    char name[32];
    depot_data_name(id, name, sizeof name);
    int fd = openat(res->data_fd, name, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1; /* never written: nothing to cut */
    int rc = lns_fail("data.truncate") < 0 || ftruncate(fd, (off_t)size) < 0 ? -1 : 0;
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

void depot_data_unlink(depot_resource_t *res, uint64_t id)
{
    char name[32];
    depot_data_name(id, name, sizeof name);
    lns_fail("data.unlink"); /* kill only: a crash before the file goes */
    if (unlinkat(res->data_fd, name, 0) < 0 && errno != ENOENT)
        lns_log(LNS_LOG_WARN, "resource %d: cannot delete data of %016llx: %s", res->id,
                (unsigned long long)id, strerror(errno));
}

/* The current size grows from cur to end by bytes no one wrote (a WRITE past the end):
 * make [cur, end) read as zeros.  An own file is cut at cur and then extended
 * to end, so the gap is a hole (and the file is never shorter than the size, even when no
 * byte follows the gap: an empty WRITE past the end); a slot gets zeros written over
 * whatever it held (at most 64 KiB). */
static int zero_extension(const depot_data_t *d, uint64_t cur, uint64_t end)
{
    static const char zeros[DEPOT_SLOT_MAX];
    if (lns_fail("data.zero") < 0)
        return -1;
    if (d->own)
        return ftruncate(d->fd, (off_t)cur) < 0 ? -1 : ftruncate(d->fd, (off_t)end);
    for (uint64_t off = cur; off < end;) {
        size_t n = end - off < sizeof zeros ? (size_t)(end - off) : sizeof zeros;
        if (lns_pwrite_all(d->fd, zeros, n, d->base + off) < 0)
            return -1;
        off += n;
    }
    return 0;
}

/* zero_all: [current size, *at + len) reads as zeros, not only the gap before *at (a
 * vector write, whose ranges may leave holes). */
static int write_begin(depot_alloc_t *a, uint64_t offset, uint64_t len, int zero_all,
                       uint64_t *at, depot_data_t *d)
{
    depot_store_t *st = a->res->store;
    depot_row_t row;
    int rc = IBP_OK;

    d->fd = -1;
    d->own = 0;
    pthread_mutex_lock(&a->op_mu);
    pthread_mutex_lock(&st->mu);
    row = a->r;
    if (depot_alloc_gone(a, lns_now_s())) {
        rc = IBP_E_CAP_NOT_FOUND;
    } else {
        *at = offset == UINT64_MAX ? row.cur_size : offset;
        if (*at > row.max_size || len > row.max_size - *at)
            rc = IBP_E_WOULD_EXCEED_LIMIT;
    }
    pthread_mutex_unlock(&st->mu);
    /* An empty WRITE past the end still grows the size: its gap is written too. */
    if (rc == IBP_OK && (len > 0 || *at > row.cur_size)) {
        if (depot_data_open(a->res, &row, 1, d) < 0) {
            lns_log(LNS_LOG_ERROR, "resource %d: cannot open data of %016llx: %s", a->res->id,
                    (unsigned long long)row.id, strerror(errno));
            rc = IBP_E_FILE_OPEN;
        } else if (zero_all && *at + len > row.cur_size &&
                   zero_extension(d, row.cur_size, *at + len) < 0) {
            rc = IBP_E_FILE_WRITE;
            depot_data_close(d);
        } else if (!zero_all && *at > row.cur_size && zero_extension(d, row.cur_size, *at) < 0) {
            rc = IBP_E_FILE_WRITE;
            depot_data_close(d);
        }
    }
    if (rc != IBP_OK)
        pthread_mutex_unlock(&a->op_mu);
    return rc;
}

int depot_write_begin(depot_alloc_t *a, uint64_t offset, uint64_t len, uint64_t *at,
                      depot_data_t *d)
{
    return write_begin(a, offset, len, 0, at, d);
}

int depot_write_begin_vec(depot_alloc_t *a, uint64_t end, depot_data_t *d)
{
    uint64_t at;
    return write_begin(a, 0, end, 1, &at, d);
}

int depot_write_commit(depot_alloc_t *a, depot_data_t *d, uint64_t end)
{
    depot_store_t *st = a->res->store;
    depot_meta_op_t op;
    depot_row_t row;
    int rc = IBP_OK, queued = 0;

    if (d->fd >= 0 && st->durability == DEPOT_DUR_FSYNC &&
        (lns_fail("data.fsync") < 0 || fdatasync(d->fd) < 0)) {
        lns_log(LNS_LOG_ERROR, "resource %d: fdatasync of %016llx: %s", a->res->id,
                (unsigned long long)a->r.id, strerror(errno));
        depot_write_abort(a, d);
        return IBP_E_FILE_WRITE;
    }
    /* The new size is committed first and made visible after: a failed commit refuses the
     * write, and nothing reads the bytes past the old size. */
    pthread_mutex_lock(&st->mu);
    if (a->dead) {
        rc = IBP_E_CAP_NOT_FOUND;
    } else if (end > a->r.cur_size) {
        row = a->r;
        row.cur_size = end;
        depot_meta_put(a->res->meta, &op, &row);
        queued = 1;
    }
    pthread_mutex_unlock(&st->mu);
    if (queued && depot_meta_wait(a->res->meta, &op) < 0) {
        depot_write_abort(a, d);
        return IBP_E_INTERNAL;
    }
    if (queued) {
        pthread_mutex_lock(&st->mu);
        a->r.cur_size = end;
        depot_wait_wake(st, a);
        pthread_mutex_unlock(&st->mu);
    }
    depot_data_close(d);
    pthread_mutex_unlock(&a->op_mu);
    return rc;
}

void depot_write_abort(depot_alloc_t *a, depot_data_t *d)
{
    if (d->own && d->fd >= 0) {
        struct stat sb;
        uint64_t cur;
        pthread_mutex_lock(&a->res->store->mu);
        cur = a->r.cur_size;
        pthread_mutex_unlock(&a->res->store->mu);
        /* Bytes past the size were never acknowledged: drop them.  (A slot keeps them; they
         * are past the size, and whatever extends the size overwrites them.) */
        if (fstat(d->fd, &sb) == 0 && (uint64_t)sb.st_size > cur &&
            ftruncate(d->fd, (off_t)cur) < 0)
            lns_log(LNS_LOG_WARN, "resource %d: cannot trim %016llx: %s", a->res->id,
                    (unsigned long long)a->r.id, strerror(errno));
    }
    depot_data_close(d);
    pthread_mutex_unlock(&a->op_mu);
}

int depot_data_move(depot_alloc_t *a, const depot_row_t *row)
{
    depot_resource_t *res = a->res;
    depot_row_t own = *row;
    depot_data_t from, to;
    size_t n = (size_t)row->cur_size;
    char *buf = malloc(n ? n : 1);
    int rc = -1;

    own.slab = 0;
    own.slot = -1;
    depot_data_open(res, row, 0, &from);
    if (buf && depot_data_open(res, &own, 1, &to) == 0) {
        rc = lns_fail("data.move") == 0 && ftruncate(to.fd, 0) == 0 && pread(from.fd, buf, n, (off_t)from.base) == (ssize_t)n &&
                     lns_pwrite_all(to.fd, buf, n, 0) == 0 &&
                     (res->store->durability != DEPOT_DUR_FSYNC || fdatasync(to.fd) == 0)
                 ? 0
                 : -1;
        depot_data_close(&to);
    }
    if (rc < 0) {
        lns_log(LNS_LOG_ERROR, "resource %d: cannot move %016llx to its own file: %s", res->id,
                (unsigned long long)row->id, buf ? strerror(errno) : "out of memory");
        depot_data_unlink(res, row->id);
    }
    depot_data_close(&from);
    free(buf);
    return rc;
}
