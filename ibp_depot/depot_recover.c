/* depot_recover.c -- opening a resource: its directories, slab files and database, and the
 * cleanup after whatever happened while the depot was down.
 *
 * Rows are loaded into the index, and each row with a slab slot claims it; rows of
 * allocations that expired meanwhile are deleted and then their data (own file unlinked,
 * slot punched); the slab free lists are then made of the slots no row claims (no file is
 * scanned for that); own data files with no row (a crash between a row's delete and its
 * file's unlink, or during a CHNG that moved a slot to an own file) are deleted last.  The
 * order keeps the one invariant of the on-disk state: no row claims data that is not where
 * the row says.
 */
#include "depot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lns_err.h"
#include "lns_log.h"
#include "lns_time.h"

static int adopt_row(void *ctx, const depot_row_t *row)
{
    return depot_store_adopt(ctx, row);
}

static int unlink_row(void *ctx, const depot_row_t *row)
{
    depot_resource_t *res = ctx;
    char name[32];
    if (row->cks_type)
        depot_cks_unlink(res, row->id);
    if (row->slab) {
        depot_slab_punch(res, row->slab, row->slot); /* unclaimed: free after the rebuild */
        return 0;
    }
    depot_data_name(row->id, name, sizeof name);
    unlinkat(res->data_fd, name, 0);
    return 0;
}

/* Delete own data files that no row keeps its bytes in, and checksum side files of no row
 * with disk checksums. */
static void remove_orphans(depot_resource_t *res)
{
    int removed = 0;
    for (unsigned d = 0; d < 256; d++) {
        char sub[4];
        snprintf(sub, sizeof sub, "%02x", d);
        int fd = openat(res->data_fd, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
        struct dirent *e;
        if (!dir) {
            if (fd >= 0)
                close(fd);
            continue;
        }
        while ((e = readdir(dir))) {
            uint64_t id = 0;
            size_t nl = strlen(e->d_name);
            int cks = nl == 20 && strcmp(e->d_name + 16, ".cks") == 0; /* disk checksums */
            int ok = nl == 16 || cks;
            if (e->d_name[0] == '.')
                continue;
            for (int i = 0; ok && i < 16; i++) {
                char c = e->d_name[i];
                int h = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
                ok = h >= 0;
                id = id << 4 | (uint64_t)(h & 0xf);
            }
            if (!ok || !(cks ? depot_store_owns_cks(res, id) : depot_store_owns_file(res, id))) {
                if (unlinkat(dirfd(dir), e->d_name, 0) == 0)
                    removed++;
            }
        }
        closedir(dir);
    }
    if (removed)
        lns_log(LNS_LOG_INFO, "resource %d: deleted %d data files without metadata", res->id,
                removed);
}

int depot_resource_open(depot_resource_t *res, char *err, size_t errlen)
{
    char path[PATH_MAX + 16];
    int64_t t0 = lns_mono_ms();

    if (mkdir(res->cfg.dir, 0750) < 0 && errno != EEXIST) {
        lns_err_set(err, errlen, "resource %d: cannot create %s: %s", res->id, res->cfg.dir,
                    strerror(errno));
        return -1;
    }
    snprintf(path, sizeof path, "%s/data", res->cfg.dir);
    if (mkdir(path, 0750) < 0 && errno != EEXIST) {
        lns_err_set(err, errlen, "resource %d: cannot create %s: %s", res->id, path,
                    strerror(errno));
        return -1;
    }
    res->data_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (res->data_fd < 0) {
        lns_err_set(err, errlen, "resource %d: cannot open %s: %s", res->id, path, strerror(errno));
        return -1;
    }
    for (unsigned d = 0; d < 256; d++) {
        char sub[4];
        snprintf(sub, sizeof sub, "%02x", d);
        if (mkdirat(res->data_fd, sub, 0750) < 0 && errno != EEXIST) {
            lns_err_set(err, errlen, "resource %d: cannot create %s/%s: %s", res->id, path, sub,
                        strerror(errno));
            return -1;
        }
    }
    if (depot_slab_open(res, err, errlen) < 0)
        return -1;
    if (depot_meta_open(res, res->store->durability, err, errlen) < 0)
        return -1;
    if (depot_meta_load(res->meta, lns_now_s(), adopt_row, unlink_row, res, err, errlen) < 0)
        return -1;
    if (depot_slab_rebuild(res, err, errlen) < 0)
        return -1;
    remove_orphans(res);
    if (res->hard_used > res->cfg.hard ||
        res->hard_used + res->soft_used > res->cfg.hard + res->cfg.soft)
        lns_log(LNS_LOG_WARN, "resource %d: more is allocated than the configured capacity; "
                "new allocations wait until enough expire", res->id);
    lns_log(LNS_LOG_INFO, "resource %d: %s, %llu allocations loaded in %lld ms", res->id,
            res->cfg.dir, (unsigned long long)res->nallocs, (long long)(lns_mono_ms() - t0));
    return depot_meta_start(res->meta);
}
