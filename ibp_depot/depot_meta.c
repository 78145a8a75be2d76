/* depot_meta.c -- allocation metadata in SQLite, one database per resource, group commit.
 *
 * <dir>/depot.db holds one row per live allocation (table alloc; docs/depot.md).  Requests
 * never touch SQLite themselves: they queue a change (a snapshot of the row, or a delete)
 * while holding store->mu, so queue order is the order the changes were made, and wait.  One
 * writer thread per resource takes everything queued, commits it in one transaction, and
 * then posts the semaphore of each change it carried, so it wakes exactly those waiters: a
 * request is acknowledged only after its change is committed, and under load one commit
 * carries many requests.  WAL mode; synchronous=NORMAL (a process crash loses nothing
 * committed) or FULL with --durability fsync (neither does a power loss).
 *
 * A commit that fails fails every change it carried, and the requests waiting on them undo
 * nothing, because they apply a change in memory only once it is committed (depot.h).  A
 * delete no request waits for (expiry, soft reclaim) is kept and tried again with every later
 * commit, at least once a second; its data stays until it succeeds, so a slot is never handed
 * to a new allocation while an old row still names it.
 *
 * Metadata must commit when data cannot: a full filesystem would otherwise leave the depot
 * unable to free anything.  Each resource keeps <dir>/reserve, a file of reserve bytes
 * (8 MiB by default) allocated at start; a commit that fails with SQLITE_FULL gives that
 * space back and is tried again at once.  The reserve is taken again once the filesystem has
 * room for it.
 */
#include "depot.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "lns_err.h"
#include "lns_fail.h"
#include "lns_log.h"
#include "lns_time.h"

struct depot_meta {
    depot_resource_t *res;
    sqlite3 *db;
    sqlite3_stmt *put;
    sqlite3_stmt *del;
    pthread_mutex_t mu;
    pthread_cond_t work_cv;   /* writer: something queued, or stop */
    depot_meta_op_t *head, *tail;
    depot_meta_op_t *retry;   /* writer only: deletes that failed, no one waiting */
    int reserve_fd;           /* <dir>/reserve, -1 if none */
    int reserve_held;         /* its bytes are allocated */
    int64_t reserve_tried;    /* monotonic ms of the last attempt to take it again */
    pthread_t writer;
    int running;
    int stop;
    int closed;
};

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS alloc ("
    " id INTEGER PRIMARY KEY,"      /* the 64-bit allocation id, stored as signed */
    " read_digest BLOB NOT NULL,"   /* SHA-256 of the read secret */
    " write_digest BLOB NOT NULL,"
    " manage_digest BLOB NOT NULL,"
    " read_typekey INTEGER NOT NULL,"
    " write_typekey INTEGER NOT NULL,"
    " manage_typekey INTEGER NOT NULL,"
    " reliability INTEGER NOT NULL,"
    " type INTEGER NOT NULL,"
    " max_size INTEGER NOT NULL,"
    " cur_size INTEGER NOT NULL,"
    " expires INTEGER NOT NULL,"    /* epoch seconds */
    " read_refs INTEGER NOT NULL,"
    " write_refs INTEGER NOT NULL,"
    " slab INTEGER NOT NULL DEFAULT 0,"  /* slot size of the slab file; 0 = own file */
    " slot INTEGER NOT NULL DEFAULT -1,"  /* slot in it; -1 = own file */
    " master INTEGER NOT NULL DEFAULT 0,"     /* an alias: its master's id; 0 = none */
    " alias_off INTEGER NOT NULL DEFAULT 0,"  /* an alias: its range in the master */
    " alias_len INTEGER NOT NULL DEFAULT 0,"
    " cks_type INTEGER NOT NULL DEFAULT 0,"   /* disk checksums (ACCRE's type); 0 = none */
    " cks_bs INTEGER NOT NULL DEFAULT 0);"    /* their block size */
    "CREATE TABLE IF NOT EXISTS depot (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "INSERT OR IGNORE INTO depot VALUES ('schema', '4');";

/* Schema 1 had no slab files: every allocation has its own file, as the defaults say. */
static const char schema_1_to_2[] =
    "BEGIN;"
    "ALTER TABLE alloc ADD COLUMN slab INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE alloc ADD COLUMN slot INTEGER NOT NULL DEFAULT -1;"
    "UPDATE depot SET value = '2' WHERE key = 'schema';"
    "COMMIT;";

/* Schema 2 had no aliases: every row is an allocation. */
static const char schema_2_to_3[] =
    "BEGIN;"
    "ALTER TABLE alloc ADD COLUMN master INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE alloc ADD COLUMN alias_off INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE alloc ADD COLUMN alias_len INTEGER NOT NULL DEFAULT 0;"
    "UPDATE depot SET value = '3' WHERE key = 'schema';"
    "COMMIT;";

/* Schema 3 had no disk checksums: no allocation has any. */
static const char schema_3_to_4[] =
    "BEGIN;"
    "ALTER TABLE alloc ADD COLUMN cks_type INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE alloc ADD COLUMN cks_bs INTEGER NOT NULL DEFAULT 0;"
    "UPDATE depot SET value = '4' WHERE key = 'schema';"
    "COMMIT;";

#define ALLOC_COLUMNS                                                                          \
    "id, read_digest, write_digest, manage_digest, read_typekey, write_typekey,"              \
    " manage_typekey, reliability, type, max_size, cur_size, expires, read_refs, write_refs," \
    " slab, slot, master, alias_off, alias_len, cks_type, cks_bs"

static int dberr(depot_meta_t *m, char *err, size_t errlen, const char *what)
{
    lns_err_set(err, errlen, "resource %d: %s/depot.db: %s: %s", m->res->id, m->res->cfg.dir, what,
                m->db ? sqlite3_errmsg(m->db) : "out of memory");
    return -1;
}

/* Bring an older database to the current schema. */
static int upgrade(depot_meta_t *m, char *err, size_t errlen)
{
    sqlite3_stmt *s = NULL;
    char version[16] = "";
    if (sqlite3_prepare_v2(m->db, "SELECT value FROM depot WHERE key = 'schema'", -1, &s,
                           NULL) != SQLITE_OK)
        return dberr(m, err, errlen, "read schema version");
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
        snprintf(version, sizeof version, "%s", (const char *)sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    if (strcmp(version, "1") == 0) {
        if (sqlite3_exec(m->db, schema_1_to_2, NULL, NULL, NULL) != SQLITE_OK) {
            dberr(m, err, errlen, "upgrade schema 1 to 2");
            sqlite3_exec(m->db, "ROLLBACK", NULL, NULL, NULL);
            return -1;
        }
        lns_log(LNS_LOG_INFO, "resource %d: metadata upgraded to schema 2", m->res->id);
        strcpy(version, "2");
    }
    if (strcmp(version, "2") == 0) {
        if (sqlite3_exec(m->db, schema_2_to_3, NULL, NULL, NULL) != SQLITE_OK) {
            dberr(m, err, errlen, "upgrade schema 2 to 3");
            sqlite3_exec(m->db, "ROLLBACK", NULL, NULL, NULL);
            return -1;
        }
        lns_log(LNS_LOG_INFO, "resource %d: metadata upgraded to schema 3", m->res->id);
        strcpy(version, "3");
    }
    if (strcmp(version, "3") == 0) {
        if (sqlite3_exec(m->db, schema_3_to_4, NULL, NULL, NULL) != SQLITE_OK) {
            dberr(m, err, errlen, "upgrade schema 3 to 4");
            sqlite3_exec(m->db, "ROLLBACK", NULL, NULL, NULL);
            return -1;
        }
        lns_log(LNS_LOG_INFO, "resource %d: metadata upgraded to schema 4", m->res->id);
    } else if (strcmp(version, "4") != 0) {
        lns_err_set(err, errlen, "resource %d: %s/depot.db: unknown schema version '%s'",
                    m->res->id, m->res->cfg.dir, version);
        return -1;
    }
    return 0;
}

/* ---- the reserve ------------------------------------------------------------------------- */

/* Allocate the reserve's bytes (no-op if held or none).  0, or -1 if the filesystem has no
 * room for it, and then it holds none. */
static int reserve_take(depot_meta_t *m)
{
    off_t n = (off_t)m->res->cfg.reserve;
    if (m->reserve_fd < 0 || m->reserve_held)
        return 0;
    m->reserve_tried = lns_mono_ms();
    if (lns_fail("meta.reserve") < 0 || posix_fallocate(m->reserve_fd, 0, n) != 0) {
        if (ftruncate(m->reserve_fd, 0) < 0)
            lns_log(LNS_LOG_WARN, "resource %d: cannot empty %s/reserve: %s", m->res->id,
                    m->res->cfg.dir, strerror(errno));
        return -1;
    }
    m->reserve_held = 1;
    return 0;
}

static void reserve_give_back(depot_meta_t *m)
{
    if (m->reserve_fd < 0 || !m->reserve_held)
        return;
    if (ftruncate(m->reserve_fd, 0) < 0) {
        lns_log(LNS_LOG_ERROR, "resource %d: cannot free %s/reserve: %s", m->res->id,
                m->res->cfg.dir, strerror(errno));
        return;
    }
    m->reserve_held = 0;
    lns_log(LNS_LOG_ERROR, "resource %d: the filesystem of %s is full; %llu bytes of reserve "
            "given to the metadata; stores fail until space is freed", m->res->id,
            m->res->cfg.dir, (unsigned long long)m->res->cfg.reserve);
}

/* Taken again, at most every 5 s, once the filesystem has twice its size free. */
static void reserve_retake(depot_meta_t *m)
{
    struct statvfs vs;
    if (m->reserve_fd < 0 || m->reserve_held || lns_mono_ms() - m->reserve_tried < 5000)
        return;
    m->reserve_tried = lns_mono_ms();
    if (fstatvfs(m->reserve_fd, &vs) == 0 &&
        (uint64_t)vs.f_bavail * vs.f_frsize >= 2 * m->res->cfg.reserve && reserve_take(m) == 0)
        lns_log(LNS_LOG_INFO, "resource %d: metadata reserve taken again", m->res->id);
}

int depot_meta_reserve_held(const depot_meta_t *m)
{
    return m->reserve_held;
}

int depot_meta_open(depot_resource_t *res, int durability, char *err, size_t errlen)
{
    char path[PATH_MAX + 16], pragmas[256];
    depot_meta_t *m = calloc(1, sizeof *m);

    if (!m) {
        lns_err_set(err, errlen, "out of memory");
        return -1;
    }
    m->res = res;
    m->reserve_fd = -1;
    res->meta = m;
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->work_cv, NULL);
    snprintf(path, sizeof path, "%s/depot.db", res->cfg.dir);
    if (sqlite3_open_v2(path, &m->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK)
        return dberr(m, err, errlen, "open");
    sqlite3_busy_timeout(m->db, 5000);
    /* Only this process uses the database: an exclusive lock saves the file locking of every
     * transaction, and a larger cache keeps the whole index of a busy depot in memory. */
    snprintf(pragmas, sizeof pragmas,
             "PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=WAL; PRAGMA synchronous=%s;"
             " PRAGMA temp_store=MEMORY; PRAGMA cache_size=-65536;",
             durability == DEPOT_DUR_FSYNC ? "FULL" : "NORMAL");
    if (sqlite3_exec(m->db, pragmas, NULL, NULL, NULL) != SQLITE_OK)
        return dberr(m, err, errlen, "set up");
    if (sqlite3_exec(m->db, schema, NULL, NULL, NULL) != SQLITE_OK)
        return dberr(m, err, errlen, "create schema");
    if (upgrade(m, err, errlen) < 0)
        return -1;
    if (sqlite3_prepare_v2(m->db,
                           "INSERT OR REPLACE INTO alloc (" ALLOC_COLUMNS ")"
                           " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                           -1, &m->put, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(m->db, "DELETE FROM alloc WHERE id = ?", -1, &m->del, NULL) !=
            SQLITE_OK)
        return dberr(m, err, errlen, "prepare");
    if (res->cfg.reserve > 0) {
        snprintf(path, sizeof path, "%s/reserve", res->cfg.dir);
        if ((m->reserve_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640)) < 0)
            return lns_err_set(err, errlen, "resource %d: cannot open %s: %s", res->id, path,
                               strerror(errno));
        struct stat sb;
        m->reserve_held = fstat(m->reserve_fd, &sb) == 0 &&
                          (uint64_t)sb.st_blocks * 512 >= res->cfg.reserve &&
                          (uint64_t)sb.st_size == res->cfg.reserve;
        if (!m->reserve_held && (ftruncate(m->reserve_fd, 0), reserve_take(m) < 0))
            lns_log(LNS_LOG_WARN, "resource %d: no room for the %llu-byte metadata reserve in "
                    "%s: the filesystem is nearly full", res->id,
                    (unsigned long long)res->cfg.reserve, res->cfg.dir);
    }
    return 0;
}

static int row_from(sqlite3_stmt *s, depot_row_t *r)
{
    memset(r, 0, sizeof *r);
    r->id = (uint64_t)sqlite3_column_int64(s, 0);
    for (int k = 0; k < 3; k++) {
        if (sqlite3_column_bytes(s, 1 + k) != DEPOT_DIGEST_LEN)
            return -1;
        memcpy(r->digest[k], sqlite3_column_blob(s, 1 + k), DEPOT_DIGEST_LEN);
        r->typekey[k] = (uint32_t)sqlite3_column_int64(s, 4 + k);
    }
    r->reliability = sqlite3_column_int(s, 7);
    r->type = sqlite3_column_int(s, 8);
    r->max_size = (uint64_t)sqlite3_column_int64(s, 9);
    r->cur_size = (uint64_t)sqlite3_column_int64(s, 10);
    r->expires = sqlite3_column_int64(s, 11);
    r->read_refs = sqlite3_column_int(s, 12);
    r->write_refs = sqlite3_column_int(s, 13);
    sqlite3_int64 slab = sqlite3_column_int64(s, 14);
    r->slot = sqlite3_column_int64(s, 15);
    r->master = (uint64_t)sqlite3_column_int64(s, 16);
    r->alias_off = (uint64_t)sqlite3_column_int64(s, 17);
    r->alias_len = (uint64_t)sqlite3_column_int64(s, 18);
    r->cks_type = sqlite3_column_int(s, 19);
    sqlite3_int64 cks_bs = sqlite3_column_int64(s, 20);
    if (r->cks_type < 0 || r->cks_type > DEPOT_CKS_TYPES || cks_bs < 0 || cks_bs > DEPOT_CKS_BS_MAX ||
        (r->cks_type && (cks_bs == 0 || r->master)))
        return -1;
    r->cks_bs = (uint32_t)cks_bs;
    if (r->reliability != IBP_SOFT && r->reliability != IBP_HARD)
        return -1;
    /* An alias has no bytes of its own; its range is checked against the master on use. */
    if (r->master && (r->max_size || r->cur_size || slab || r->slot != -1 ||
                      r->alias_off > (uint64_t)INT64_MAX || r->alias_len > (uint64_t)INT64_MAX))
        return -1;
    if (r->cur_size > r->max_size || r->max_size > (uint64_t)INT64_MAX)
        return -1;
    if (slab == 0 && r->slot == -1)
        return 0;
    /* A slot: of a slab size, holding max_size (depot_slab_claim checks the rest). */
    if (slab < 0 || slab > DEPOT_SLOT_MAX || depot_slot_size((uint64_t)slab) != (uint64_t)slab ||
        r->max_size > (uint64_t)slab || r->slot < 0)
        return -1;
    r->slab = (uint32_t)slab;
    return 0;
}

int depot_meta_load(depot_meta_t *m, int64_t now, depot_meta_row_fn live, depot_meta_row_fn gone,
                    void *ctx, char *err, size_t errlen)
{
    sqlite3_stmt *s = NULL;
    depot_row_t *dead = NULL, r;
    size_t ndead = 0, cap = 0;
    int rc, bad = 0;

    if (sqlite3_prepare_v2(m->db, "SELECT " ALLOC_COLUMNS " FROM alloc", -1, &s, NULL) !=
        SQLITE_OK)
        return dberr(m, err, errlen, "read");
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (row_from(s, &r) < 0) {
            bad++;
            continue;
        }
        if (now >= r.expires) {
            if (ndead == cap) {
                depot_row_t *nd = realloc(dead, (cap = cap ? 2 * cap : 256) * sizeof *nd);
                if (!nd)
                    break;
                dead = nd;
            }
            dead[ndead++] = r;
        } else if (live(ctx, &r) < 0) {
            break;
        }
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE) {
        free(dead);
        return rc == SQLITE_ROW ? (lns_err_set(err, errlen, "out of memory"), -1)
                                : dberr(m, err, errlen, "read");
    }
    if (bad)
        lns_log(LNS_LOG_WARN, "resource %d: ignored %d malformed metadata rows", m->res->id, bad);
    if (ndead) {
        /* Rows first, files after: a crash in between leaves only orphan files. */
        sqlite3_exec(m->db, "BEGIN", NULL, NULL, NULL);
        for (size_t i = 0; i < ndead; i++) {
            sqlite3_bind_int64(m->del, 1, (sqlite3_int64)dead[i].id);
            sqlite3_step(m->del);
            sqlite3_reset(m->del);
        }
        if (sqlite3_exec(m->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
            sqlite3_exec(m->db, "ROLLBACK", NULL, NULL, NULL);
            free(dead);
            return dberr(m, err, errlen, "delete expired");
        }
        for (size_t i = 0; i < ndead; i++)
            gone(ctx, &dead[i]);
        lns_log(LNS_LOG_INFO, "resource %d: %zu allocations expired while the depot was down",
                m->res->id, ndead);
    }
    free(dead);
    return 0;
}

static int exec_op(depot_meta_t *m, const depot_meta_op_t *op)
{
    sqlite3_stmt *s = op->del ? m->del : m->put;
    const depot_row_t *r = &op->row;
    int rc;

    sqlite3_bind_int64(s, 1, (sqlite3_int64)r->id);
    if (!op->del) {
        for (int k = 0; k < 3; k++) {
            sqlite3_bind_blob(s, 2 + k, r->digest[k], DEPOT_DIGEST_LEN, SQLITE_STATIC);
            sqlite3_bind_int64(s, 5 + k, r->typekey[k]);
        }
        sqlite3_bind_int(s, 8, r->reliability);
        sqlite3_bind_int(s, 9, r->type);
        sqlite3_bind_int64(s, 10, (sqlite3_int64)r->max_size);
        sqlite3_bind_int64(s, 11, (sqlite3_int64)r->cur_size);
        sqlite3_bind_int64(s, 12, r->expires);
        sqlite3_bind_int(s, 13, r->read_refs);
        sqlite3_bind_int(s, 14, r->write_refs);
        sqlite3_bind_int64(s, 15, r->slab);
        sqlite3_bind_int64(s, 16, r->slot);
        sqlite3_bind_int64(s, 17, (sqlite3_int64)r->master);
        sqlite3_bind_int64(s, 18, (sqlite3_int64)r->alias_off);
        sqlite3_bind_int64(s, 19, (sqlite3_int64)r->alias_len);
        sqlite3_bind_int(s, 20, r->cks_type);
        sqlite3_bind_int64(s, 21, r->cks_bs);
    }
    rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* One transaction with every op of batch.  0, or -1 (rolled back); a full filesystem gives
 * the reserve back and tries once more. */
static int commit(depot_meta_t *m, depot_meta_op_t *batch)
{
    for (int attempt = 0;; attempt++) {
        int injected = 0;
        int rc = sqlite3_exec(m->db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
        for (depot_meta_op_t *op = batch; op && rc == 0; op = op->next)
            rc = exec_op(m, op);
        if (rc == 0 && lns_fail("meta.commit") < 0) {
            injected = errno;
            rc = -1;
        }
        if (rc == 0 && sqlite3_exec(m->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
            rc = -1;
        if (rc == 0) {
            lns_fail("meta.committed"); /* kill only: committed, no one told yet */
            return 0;
        }
        int full = injected ? injected == ENOSPC : sqlite3_errcode(m->db) == SQLITE_FULL;
        lns_log(LNS_LOG_ERROR, "resource %d: metadata commit failed: %s", m->res->id,
                injected ? strerror(injected) : sqlite3_errmsg(m->db));
        sqlite3_exec(m->db, "ROLLBACK", NULL, NULL, NULL);
        if (!full || attempt > 0 || !m->reserve_held)
            return -1;
        reserve_give_back(m);
    }
}

/* The requests of a committed (rc 0) or failed batch: wake the waiters, drop the index's
 * reference of committed deletes; keep failed deletes no one waits for in m->retry (drop
 * them, data kept, when closing). */
static void finish(depot_meta_t *m, depot_meta_op_t *batch, int rc, int closing)
{
    depot_meta_op_t *op, *next, *unrefs = NULL;
    for (op = batch; op; op = next) {
        next = op->next; /* a waited op may vanish as soon as it is posted */
        op->rc = rc;
        if (op->unref && rc == 0) {
            op->next = unrefs; /* kept alive by the reference we are to drop */
            unrefs = op;
        } else if (op->unref && !op->waiter) {
            if (closing) {
                depot_alloc_forget(op->unref);
            } else {
                op->next = m->retry;
                m->retry = op;
            }
        } else {
            sem_post(&op->done); /* a failed waited delete: the waiter takes it back */
        }
    }
    for (op = unrefs; op; op = next) {
        next = op->next;
        depot_alloc_deleted(op->unref); /* drops the reference and posts op */
    }
}

static void *writer_main(void *arg)
{
    depot_meta_t *m = arg;
    pthread_mutex_lock(&m->mu);
    for (;;) {
        while (!m->head && !m->stop) {
            if (!m->retry) {
                pthread_cond_wait(&m->work_cv, &m->mu);
                continue;
            }
            struct timespec ts;
            lns_cond_deadline(&ts, 1000 * 1000000LL);
            if (pthread_cond_timedwait(&m->work_cv, &m->mu, &ts) == ETIMEDOUT)
                break;
        }
        if (!m->head && !m->retry)
            break; /* stopping, nothing left */
        depot_meta_op_t *batch = m->head, *old = m->retry;
        int closing = m->stop;
        m->head = m->tail = NULL;
        m->retry = NULL;
        pthread_mutex_unlock(&m->mu);

        if (old) { /* the failed deletes go first, in the order they failed */
            depot_meta_op_t *last = old;
            while (last->next)
                last = last->next;
            last->next = batch;
            batch = old;
        }
        reserve_retake(m);
        finish(m, batch, commit(m, batch), closing);
        pthread_mutex_lock(&m->mu);
        if (closing && !m->head && m->retry) {
            /* Stopping: one last try for the deletes that keep failing, then let them go. */
            depot_meta_op_t *left = m->retry;
            m->retry = NULL;
            pthread_mutex_unlock(&m->mu);
            finish(m, left, commit(m, left), 1);
            pthread_mutex_lock(&m->mu);
        }
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

int depot_meta_start(depot_meta_t *m)
{
    if (pthread_create(&m->writer, NULL, writer_main, m) != 0)
        return -1;
    m->running = 1;
    return 0;
}

/* Queue ops[0..n) under one hold of m->mu, so that the writer, which takes the whole queue
 * at once, commits them in one transaction.  1 if queued, 0 if there is no writer any more
 * (the ops are then done and failed). */
static int enqueue_n(depot_meta_t *m, depot_meta_op_t *const *ops, int n)
{
    for (int i = 0; i < n; i++) {
        ops[i]->next = i + 1 < n ? ops[i + 1] : NULL;
        ops[i]->rc = 0;
        sem_init(&ops[i]->done, 0, 0);
    }
    pthread_mutex_lock(&m->mu);
    if (m->closed || !m->running) {
        for (int i = 0; i < n; i++) {
            ops[i]->rc = -1;
            sem_post(&ops[i]->done);
        }
        pthread_mutex_unlock(&m->mu);
        return 0;
    }
    if (m->tail)
        m->tail->next = ops[0];
    else
        m->head = ops[0];
    m->tail = ops[n - 1];
    pthread_cond_signal(&m->work_cv);
    pthread_mutex_unlock(&m->mu);
    return 1;
}

static int enqueue(depot_meta_t *m, depot_meta_op_t *op)
{
    return enqueue_n(m, &op, 1);
}

void depot_meta_put(depot_meta_t *m, depot_meta_op_t *op, const depot_row_t *row)
{
    op->del = 0;
    op->unref = NULL;
    op->waiter = 1;
    op->row = *row;
    enqueue(m, op);
}

void depot_meta_put2(depot_meta_t *m, depot_meta_op_t *op1, const depot_row_t *row1,
                     depot_meta_op_t *op2, const depot_row_t *row2)
{
    depot_meta_op_t *ops[2] = {op1, op2};
    for (int i = 0; i < 2; i++) {
        ops[i]->del = 0;
        ops[i]->unref = NULL;
        ops[i]->waiter = 1;
        ops[i]->row = *(i ? row2 : row1);
    }
    enqueue_n(m, ops, 2);
}

void depot_meta_put_del(depot_meta_t *m, depot_meta_op_t *op, const depot_row_t *row,
                        depot_alloc_t *a)
{
    depot_meta_op_t *ops[2] = {op, &a->del_op};
    op->del = 0;
    op->unref = NULL;
    op->waiter = 1;
    op->row = *row;
    a->del_op.del = 1;
    a->del_op.unref = a;
    a->del_op.waiter = 1;
    memset(&a->del_op.row, 0, sizeof a->del_op.row);
    a->del_op.row.id = a->r.id;
    enqueue_n(m, ops, 2);
}

void depot_meta_del(depot_meta_t *m, depot_alloc_t *a, int waiter)
{
    depot_meta_op_t *op = &a->del_op;
    op->del = 1;
    op->unref = a;
    op->waiter = waiter;
    memset(&op->row, 0, sizeof op->row);
    op->row.id = a->r.id;
    if (!enqueue(m, op) && !waiter) {
        /* No writer (closing): the row stays, so the data stays; the caller holds
         * store->mu, so free without depot_alloc_release.  (A waiter takes a back.) */
        a->keep_data = 1;
        if (--a->refcnt == 0) {
            pthread_mutex_destroy(&a->op_mu);
            free(a);
        }
    }
}

int depot_meta_wait(depot_meta_t *m, depot_meta_op_t *op)
{
    (void)m;
    while (sem_wait(&op->done) < 0 && errno == EINTR)
        ;
    sem_destroy(&op->done);
    return op->rc;
}

void depot_meta_close(depot_meta_t *m)
{
    pthread_mutex_lock(&m->mu);
    m->stop = 1;
    pthread_cond_signal(&m->work_cv);
    pthread_mutex_unlock(&m->mu);
    if (m->running)
        pthread_join(m->writer, NULL);
    pthread_mutex_lock(&m->mu);
    m->closed = 1;
    m->running = 0;
    pthread_mutex_unlock(&m->mu);
    if (m->reserve_fd >= 0)
        close(m->reserve_fd);
    sqlite3_finalize(m->put);
    sqlite3_finalize(m->del);
    if (m->db && sqlite3_close(m->db) != SQLITE_OK)
        lns_log(LNS_LOG_WARN, "resource %d: closing the database: %s", m->res->id,
                sqlite3_errmsg(m->db));
    pthread_cond_destroy(&m->work_cv);
    pthread_mutex_destroy(&m->mu);
    m->res->meta = NULL;
    free(m);
}
