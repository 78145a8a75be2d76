/* depot.h -- the ibp_depot server's internal face: configuration, storage, metadata, keys,
 * connections and command handlers.  Not installed; libdepot.a and the tests use it.
 *
 * Data flows  socket -> depot_server (one thread per connection) -> depot_cmd_* (one
 * handler per command) -> depot_store (index, space, expiry) and depot_data (where the
 * bytes are: a slot of a depot_slab file for up to 64 KiB, else an own file; the writes) ->
 * depot_meta (SQLite, one writer thread per resource).
 *
 * Every change of an allocation's row is made durable before it is made visible: the request
 * queues the new row, waits for its commit, and only then applies it in memory, so a change
 * whose commit fails is refused and leaves nothing behind.  (A DECR that frees takes the
 * allocation out of the index first and puts it back if the delete fails.)
 *
 * Locking order, outermost first, never the other way round:
 *     alloc->op_mu  (serializes every change of one allocation's row: STORE, WRITE, TRUNCATE,
 *                    CHNG, INCR, DECR, RENAME, SPLIT, MERGE, PULL; a MERGE holds two, the
 *                    lower id's first)
 *     store->mu     (the index, every allocation's row fields, every resource's accounting)
 *     meta->mu      (a resource's queue of metadata changes)
 * No lock is held while waiting on the network or the disk, except op_mu, which a STORE
 * holds while its bytes arrive so that two STOREs to one allocation apply one after the other.
 */
#ifndef LNS_DEPOT_H
#define LNS_DEPOT_H

#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ibp.h"
#include "ibp_proto.h"
#include "lns_daemon.h"
#include "lns_net.h"

/* ---- exit codes (man/ibp_depot.8) --------------------------------------------------- */

enum depot_exit { /* the daemons' set (lns_daemon.h) */
    DEPOT_EXIT_OK = LNS_EXIT_OK,
    DEPOT_EXIT_RUNTIME = LNS_EXIT_RUNTIME,
    DEPOT_EXIT_CONFIG = LNS_EXIT_CONFIG,
    DEPOT_EXIT_STORAGE = LNS_EXIT_STORAGE, /* a resource directory or its database */
    DEPOT_EXIT_NETWORK = LNS_EXIT_NETWORK,
    DEPOT_EXIT_DAEMON = LNS_EXIT_DAEMON
};

/* ---- configuration (depot_config.c) -------------------------------------------------- */

#define DEPOT_MAX_RESOURCES 64
#define DEPOT_DEFAULT_SIZE (1ULL << 30)
#define DEPOT_DEFAULT_MAX_DURATION (30LL * 86400)
#define DEPOT_DEFAULT_RESERVE (8ULL << 20)
/* The longest max-duration of a resource, from the config file or STATUS CHANGE (100,000
 * years): expiry arithmetic (now + duration) stays far from overflow. */
#define DEPOT_MAX_DURATION_LIMIT (100000LL * 365 * 86400)

enum depot_durability { DEPOT_DUR_OS = 0, DEPOT_DUR_FSYNC = 1 };

typedef struct depot_resource_cfg {
    char dir[PATH_MAX];
    uint64_t hard;         /* bytes */
    uint64_t soft;         /* bytes */
    int64_t max_duration;  /* seconds */
    uint64_t reserve;      /* bytes kept free on the filesystem for metadata commits */
} depot_resource_cfg_t;

typedef struct depot_config {
    char config_file[PATH_MAX];
    char listen[256];
    int port;
    char port_file[PATH_MAX];
    depot_resource_cfg_t res[DEPOT_MAX_RESOURCES];
    int nres;
    char public_host[IBP_MAX_HOST];
    char admin_password[IBP_MAX_PASSWORD];
    int max_connections;
    int idle_timeout;      /* seconds */
    int header_timeout;    /* seconds */
    int max_timeout;       /* seconds */
    int durability;        /* enum depot_durability */
    int chksum_cache;      /* seconds a block's disk checksum, computed or checked, is
                              trusted without hashing the block again; 0 = never */
    char log_file[PATH_MAX];
    int log_level;         /* enum lns_log_level */
    char event_log[PATH_MAX];
    int event_sample;
    int daemon;
    char pid_file[PATH_MAX];
    int check_config;
    int tls;               /* serve TLS (sniffed on the same port); default 1 */
    int plaintext_refuse;  /* answer plaintext IBP with an error and close; default 0 (allow) */
    char tls_key[PATH_MAX];  /* default: tls.key in the first resource's directory */
    char tls_cert[PATH_MAX]; /* "": a self-signed certificate for the key */
} depot_config_t;

enum { DEPOT_CFG_OK = 0, DEPOT_CFG_EXIT = 1, DEPOT_CFG_ERR = -1 };

/* Sizes are read with lns_parse_size (common/lns_units.h).  Durations: "3600", "90s", "15m",
 * "2h", "30d" (lns_parse_seconds), and also -1 for 0 and for more than 100,000 years. */
int depot_parse_duration(const char *s, int64_t *out);
/* "DIR[,hard=SIZE][,soft=SIZE][,max-duration=DUR]".  0 ok, -1 with a reason in err. */
int depot_parse_resource(const char *spec, depot_resource_cfg_t *out, char *err, size_t errlen);
void depot_config_init(depot_config_t *cfg);
/* The whole command line (config file first, flags over it), then the checks that need all
 * settings.  DEPOT_CFG_OK, DEPOT_CFG_EXIT (--help / --version printed), DEPOT_CFG_ERR. */
int depot_config_args(depot_config_t *cfg, int argc, char **argv, char *err, size_t errlen);
void depot_config_summary(const depot_config_t *cfg, char *buf, size_t size);

/* ---- capability keys (depot_keys.c) --------------------------------------------------- */

#define DEPOT_SECRET_LEN 16
#define DEPOT_DIGEST_LEN 32
#define DEPOT_KEY_HEX 48 /* 16 hex of the id + 32 hex of the secret */

enum depot_kind { DEPOT_READ = 0, DEPOT_WRITE = 1, DEPOT_MANAGE = 2 };

/* Random bytes from OpenSSL.  0 ok, -1 if the generator failed. */
int depot_random(void *buf, size_t n);
/* A random type key, 1..2^31-1. */
int depot_typekey_new(uint32_t *tk);
void depot_digest(const uint8_t secret[DEPOT_SECRET_LEN], uint8_t digest[DEPOT_DIGEST_LEN]);
/* "<16 hex id><32 hex secret>" into buf (>= DEPOT_KEY_HEX + 1 bytes). */
void depot_key_format(uint64_t id, const uint8_t secret[DEPOT_SECRET_LEN], char *buf);
/* Strict inverse of depot_key_format (48 lowercase hex digits).  0 ok, -1 bad. */
int depot_key_parse(const char *key, uint64_t *id, uint8_t secret[DEPOT_SECRET_LEN]);
/* Which of the three digests matches secret, with its type key: DEPOT_READ.., or -1.
 * Compares all three in constant time whatever matches. */
int depot_key_match(const uint8_t digests[3][DEPOT_DIGEST_LEN], const uint32_t typekeys[3],
                    const uint8_t secret[DEPOT_SECRET_LEN], const char *typekey);
/* The admin password check: 1 if given equals configured (never when none is configured). */
int depot_password_ok(const char *configured, const char *given);

/* ---- storage: allocations and the index (depot_store.c) ---------------------------------- */

typedef struct depot_store depot_store_t;
typedef struct depot_cks_cache depot_cks_cache_t;
typedef struct depot_resource depot_resource_t;
typedef struct depot_alloc depot_alloc_t;
typedef struct depot_meta depot_meta_t;

/* What the metadata database keeps of an allocation. */
typedef struct depot_row {
    uint64_t id;
    uint8_t digest[3][DEPOT_DIGEST_LEN];
    uint32_t typekey[3];
    int reliability;
    int type;
    uint64_t max_size;
    uint64_t cur_size;
    int64_t expires;  /* epoch seconds; expired when now >= expires */
    int read_refs;
    int write_refs;
    uint32_t slab;    /* slot size of the slab file that holds the bytes; 0 = own file */
    int64_t slot;     /* slot index in that slab file; -1 = own file */
    /* An alias (depot_alias.c): a capability set onto bytes [alias_off, alias_off +
     * alias_len) of allocation master (alias_len 0: to the master's end).  Its max_size and
     * cur_size are 0 and it has no bytes of its own.  master 0: an allocation. */
    uint64_t master;
    uint64_t alias_off;
    uint64_t alias_len;
    int cks_type;             /* disk checksums: ACCRE's type (DEPOT_CKS_*), 0 = none */
    uint32_t cks_bs;          /* their block size */
} depot_row_t;

typedef struct depot_meta_op {
    struct depot_meta_op *next;
    int del;                  /* 0: write row, 1: delete row id */
    depot_row_t row;
    depot_alloc_t *unref;     /* del: the writer releases it once committed (the data goes
                                 when the last reference does) */
    int waiter;               /* del: a request waits for it and, if it fails, takes the
                                 allocation back; without one a failed delete is tried again
                                 with every later commit, the data kept until it succeeds */
    sem_t done;               /* posted by the writer once the op is committed (or failed) */
    int rc;                   /* 0 committed, -1 failed */
} depot_meta_op_t;

struct depot_alloc {
    depot_row_t r;            /* under store->mu */
    depot_resource_t *res;
    int refcnt;               /* under store->mu: the index holds one, each user one */
    int dead;                 /* under store->mu: out of the index, space given back */
    int keep_data;            /* under store->mu: its row's delete never committed (the depot
                                 is closing), so the last reference leaves the data alone */
    pthread_mutex_t op_mu;
    depot_meta_op_t del_op;   /* the delete of its row, queued once when it dies */
    uint32_t old_slab;        /* under store->mu: a slot a CHNG moved the bytes out of, */
    int64_t old_slot;         /* -1 if none; given back once no request holds the allocation */
    depot_alloc_t *hnext;
    uint64_t serial;          /* unique in the process (depot_chksum_cache.c's key) */
    uint32_t cks_seq;         /* under the checksum cache's mutex: odd while a write is
                                 between its first byte and its digests */
};

/* One slab file of a resource: <dir>/slab/<size>, slot i at byte offset i * size. */
#define DEPOT_SLAB_CLASSES 5
#define DEPOT_SLOT_MIN 4096u
#define DEPOT_SLOT_MAX (DEPOT_SLOT_MIN << (DEPOT_SLAB_CLASSES - 1)) /* 64 KiB */

typedef struct depot_slab {
    int fd;                   /* open for the resource's life */
    uint32_t size;            /* slot size */
    int64_t nslots;           /* slots 0..nslots-1 exist: in use or on the free list */
    int64_t *free;            /* under store->mu: free slots, a stack */
    size_t nfree, capfree;
    uint64_t *used;           /* startup only: bitmap of the slots rows claim */
    size_t usedwords;
} depot_slab_t;

struct depot_resource {
    int id;
    depot_resource_cfg_t cfg; /* hard, soft, max_duration may change (STATUS CHANGE) */
    uint64_t hard_used;       /* sum of max_size of live HARD allocations */
    uint64_t soft_used;       /* same for SOFT */
    uint64_t nallocs;
    uint64_t stored;          /* startup only: sum of the loaded rows' current sizes */
    int64_t earliest_expiry;  /* no live allocation expires before this */
    int data_fd;              /* <dir>/data, for openat */
    depot_slab_t slab[DEPOT_SLAB_CLASSES];
    depot_meta_t *meta;
    depot_store_t *store;
};

#define DEPOT_WAIT_SLOTS 64

struct depot_store {
    pthread_mutex_t mu;
    depot_alloc_t **buckets;
    size_t nbuckets;
    size_t count;
    depot_resource_t res[DEPOT_MAX_RESOURCES];
    int nres;
    int durability;
    depot_cks_cache_t *cks_cache; /* blocks known good (depot_chksum_cache.c); NULL: none */
    pthread_t reaper;
    int reaper_running;
    int stopping;
    pthread_cond_t reaper_cv;
    pthread_cond_t wait_cv[DEPOT_WAIT_SLOTS]; /* LOADs waiting for bytes (depot_wait.c) */
    int wait_n[DEPOT_WAIT_SLOTS];             /* under mu: how many wait on each */
    int wait_closed;                          /* under mu: draining, no more waits */
};

/* What ALLOCATE hands back: enough to format the three capabilities. */
typedef struct depot_newalloc {
    uint64_t id;
    uint8_t secret[3][DEPOT_SECRET_LEN];
    uint32_t typekey[3];
} depot_newalloc_t;

/* Open every resource of cfg (create dirs and databases, load, drop expired, delete orphan
 * files) and start the metadata writers and the reaper.  0 ok, -1 with reason in err. */
int depot_store_open(depot_store_t *st, const depot_config_t *cfg, char *err, size_t errlen);
/* Declared capacities against the filesystems (depot_store_open calls it): a resource whose
 * hard + soft capacity is more than its filesystem can still hold (free space, the reserve
 * already taken, plus what the resource stores; resources on one filesystem share it, in
 * order) is capped to that, hard first, with a warning in the log. */
void depot_store_fit_capacity(depot_store_t *st);
/* Stop the reaper, commit what is queued, close the databases, free everything. */
void depot_store_close(depot_store_t *st);

/* ALLOCATE on resource rid.  IBP_OK or the IBP error (-19, -28, -50, -24...). */
int depot_store_allocate(depot_store_t *st, int rid, int reliability, int type, int64_t duration,
                         uint64_t size, depot_newalloc_t *out);
/* Find the allocation a key names.  rid: "" or the resource it must be on.  IBP_OK with a
 * reference in *a (give it back with depot_alloc_release) and the capability kind in *kind,
 * or IBP_E_CAP_NOT_FOUND (unknown, forged, wrong type key, expired, freed). */
int depot_store_lookup(depot_store_t *st, const char *rid, const char *key, const char *typekey,
                       depot_alloc_t **a, int *kind);
void depot_alloc_release(depot_alloc_t *a);
/* ALIAS_ALLOCATE (depot_alias.c): a new alias row onto [off, off + len) of master m (len 0:
 * to its end), for duration seconds (0 or -1: until the master's expiry; never past it),
 * committed before it is returned.  IBP_OK, -19 (range past the master's max size), -28,
 * -4 (m gone or itself an alias), -24. */
int depot_store_alias_allocate(depot_store_t *st, depot_alloc_t *m, uint64_t off, uint64_t len,
                               int64_t duration, depot_newalloc_t *out);
/* ALIAS_MANAGE CHNG: len > 0 sets the range to [off, off + len) (-45 past the master's max
 * size); duration > 0 sets the expiry to now + duration (-28 past the master's), 0 to the
 * master's, < 0 leaves it.  Committed first. */
int depot_store_alias_change(depot_alloc_t *a, uint64_t off, uint64_t len, int64_t duration);
/* The live master of an alias, with a reference, or NULL (freed, expired). */
depot_alloc_t *depot_store_master(depot_alloc_t *alias);
/* The metadata writer gives up a delete that never committed (the depot is closing): the
 * reference goes, the data stays with the row. */
void depot_alloc_forget(depot_alloc_t *a);
/* The metadata writer, once the delete of a's row is committed: drop the index's reference
 * and wake the request that waits for the delete, if one does.  So the waiter's own release
 * is the last, and the bytes are gone when it answers.  (If the writer's is the last, no one
 * waits: a waiter holds a reference.) */
void depot_alloc_deleted(depot_alloc_t *a);
/* A consistent copy of the row (under the lock). */
void depot_alloc_snapshot(depot_alloc_t *a, depot_row_t *row);
/* Freed or expired (store->mu held). */
int depot_alloc_gone(const depot_alloc_t *a, int64_t now);

/* ---- an allocation's bytes (depot_data.c) ------------------------------------------------ */

/* Where an allocation's bytes are: byte i of the allocation is byte base + i of fd, a slab
 * file's slot (fd shared, kept open by the resource) or the allocation's own file. */
typedef struct depot_data {
    int fd;                   /* -1: none */
    uint64_t base;
    int own;                  /* fd is the allocation's own file, closed by depot_data_close */
} depot_data_t;

/* The bytes of the allocation row describes (a snapshot of a->r), for reading or, with
 * write, for writing (an own file is created if need be).  0, or -1 with errno (ENOENT: an
 * own file never written).  A slot stays the allocation's while the caller holds a
 * reference, even if a CHNG moves the bytes meanwhile. */
int depot_data_open(depot_resource_t *res, const depot_row_t *row, int write, depot_data_t *d);
void depot_data_close(depot_data_t *d);

/* The data path of a write.  begin takes op_mu, checks the allocation is alive, the write
 * count and the bounds (offset UINT64_MAX = append at the current size), gives the offset in
 * the allocation in *at and, for len > 0 or *at past the current size, its bytes open for
 * writing in *d (else d->fd is -1), with [current size, *at) reading as zeros.  The caller
 * pwrite()s the bytes at d->base + *at, then commit (new size made durable, then op_mu
 * released) or abort (size and contents below it unchanged, op_mu released).  Both close
 * d. */
int depot_write_begin(depot_alloc_t *a, uint64_t offset, uint64_t len, uint64_t *at,
                      depot_data_t *d);
/* The same for a vector write whose ranges all lie in [0, end): the whole of [current size,
 * end) reads as zeros before the ranges are written (holes between them stay zeros). */
int depot_write_begin_vec(depot_alloc_t *a, uint64_t end, depot_data_t *d);
int depot_write_commit(depot_alloc_t *a, depot_data_t *d, uint64_t end);
void depot_write_abort(depot_alloc_t *a, depot_data_t *d);
/* Copy the bytes of a slab allocation (row: its snapshot; op_mu held, so they stay as they
 * are) from its slot into a new own file.  0, or -1 with no own file left behind. */
int depot_data_move(depot_alloc_t *a, const depot_row_t *row);
/* Cut allocation id's own file to size bytes (0, or -1 with errno; a file never written is
 * nothing to cut). */
int depot_data_cut(depot_resource_t *res, uint64_t id, uint64_t size);
/* Delete the own file of allocation id (none is fine). */
void depot_data_unlink(depot_resource_t *res, uint64_t id);
/* "<xx>/<16 hex id>": the own file's name under <dir>/data. */
void depot_data_name(uint64_t id, char *buf, size_t size);

/* ---- the LOAD that waits for bytes (depot_wait.c) ---------------------------------------- */

void depot_wait_init(depot_store_t *st);
void depot_wait_destroy(depot_store_t *st);
/* store->mu held: a's current size grew, or it died: wake the LOADs waiting on it. */
void depot_wait_wake(depot_store_t *st, const depot_alloc_t *a);
/* The depot drains: wake every waiting LOAD, and no LOAD waits from now on. */
void depot_wait_close(depot_store_t *st);
/* Wait, holding no lock, until a's current size reaches end, a dies, the depot drains or
 * timeout_ms pass (0: no wait); then a consistent copy of its row in *row.  0, or -1 if a
 * was freed meanwhile. */
int depot_wait_size(depot_alloc_t *a, uint64_t end, int timeout_ms, depot_row_t *row);

/* ---- MANAGE, STATUS, startup (depot_store.c) ---------------------------------------------- */

/* MANAGE. */
int depot_store_incr(depot_alloc_t *a, int captype);
int depot_store_decr(depot_alloc_t *a, int captype);
/* Both: delta +1 or -1 to the read (IBP_READCAP) or write count; a read count that would
 * reach 0 frees the allocation. */
int depot_store_refs(depot_alloc_t *a, int captype, int delta);
/* CHNG: a slab allocation grown past its slot size moves to an own file (depot_data_move). */
int depot_store_change(depot_alloc_t *a, uint64_t max_size, int64_t duration, int reliability);
/* TRUNCATE, as ACCRE 1.4 does: the maximum size becomes new_size (space and slot as for a
 * CHNG), the current size is cut to it if larger.  Never grows the current size. */
int depot_store_truncate(depot_alloc_t *a, uint64_t new_size);

/* ACCRE 1.4's RENAME (16): new keys (out) for the same allocation; the old ones stop
 * working once it is committed.  IBP_OK, -4, -24. */
int depot_store_rename(depot_alloc_t *a, depot_newalloc_t *out);
/* SPLIT (18) and SPLIT_ALLOCATE_CHKSUM (30): a new allocation (out) of size bytes taken from
 * m's maximum size (m's current size is cut to its new maximum, as a TRUNCATE), with disk
 * checksums of cks_type and cks_bs (0: none, as a plain SPLIT's).  IBP_OK, -19 (size past m's maximum, or
 * no room for a different reliability), -22, -27, -28, -33, -36, -4, -25 (m an alias). */
int depot_store_split(depot_alloc_t *m, int reliability, int type, int64_t duration,
                      uint64_t size, int cks_type, uint32_t cks_bs, depot_newalloc_t *out);
/* MERGE (19): c's maximum size is added to m's and c is freed (its bytes lost).  IBP_OK,
 * -1 (c has counts beyond its initial ones), -4, -25 (an alias), -30 (c is m), -50 (another
 * resource), -19, -24. */
int depot_store_merge(depot_alloc_t *m, depot_alloc_t *c);

/* STATUS. */
typedef struct depot_res_status {
    uint64_t hard, hard_used, soft, soft_used, nallocs;
    int64_t max_duration;
} depot_res_status_t;
int depot_store_status(depot_store_t *st, int rid, depot_res_status_t *out);
/* 0 = unchanged.  The config file's bounds apply: sizes up to INT64_MAX, max_duration up to
 * DEPOT_MAX_DURATION_LIMIT.  IBP_OK, -20 below what is allocated, -30 a size out of bounds,
 * -33 a duration out of bounds, -50 no such resource. */
int depot_store_set_limits(depot_store_t *st, int rid, uint64_t hard, uint64_t soft,
                           int64_t max_duration);
/* Free every expired allocation now (the reaper does this twice a second). */
void depot_store_reap(depot_store_t *st);

/* Expiry time of a duration: -1 = max, else 1..max.  IBP_OK, -28 (also when now + duration
 * would overflow) or -33. */
int depot_expiry(int64_t now, int64_t duration, int64_t max_duration, int64_t *expires);
/* The server timeout of a request in ms: seconds clamped to [1, max_timeout]. */
int depot_timeout_ms(int t, int max_timeout);
/* Startup (depot_recover.c): open a resource's directories and database, load it, clean
 * up; and the two index operations it needs. */
int depot_resource_open(depot_resource_t *res, char *err, size_t errlen);
int depot_store_adopt(depot_resource_t *res, const depot_row_t *row);
/* 1 if a live allocation of res keeps its bytes in the own file of id. */
int depot_store_owns_file(depot_resource_t *res, uint64_t id);
/* Startup: 1 if a loaded row of res has disk checksums (its side file "<id>.cks" is kept). */
int depot_store_owns_cks(depot_resource_t *res, uint64_t id);
/* Resource id text ("0", "1"...) to index, or -1. */
int depot_rid_parse(const depot_store_t *st, const char *rid);

/* ---- slab files (depot_slab.c) ---------------------------------------------------------- */

/* The slot size for an allocation of max_size bytes (4 KiB..64 KiB), or 0: its own file. */
uint32_t depot_slot_size(uint64_t max_size);
/* Create <dir>/slab and open its files.  0 ok, -1 with reason. */
int depot_slab_open(depot_resource_t *res, char *err, size_t errlen);
int depot_slab_fd(const depot_resource_t *res, uint32_t size);
/* A free slot of that size (store->mu held): the last one freed, else a new one at the end. */
int64_t depot_slab_take(depot_resource_t *res, uint32_t size);
/* Give a slot back (store->mu not held): its bytes are punched out, then it is free.  Only
 * once no committed row and no request refers to it. */
void depot_slab_put(depot_resource_t *res, uint32_t size, int64_t slot);
/* Startup: a loaded row claims its slot (0, or -1: malformed, or already claimed); once all
 * rows are loaded, rebuild makes the free lists of the slots no row claims. */
int depot_slab_claim(depot_resource_t *res, uint32_t size, int64_t slot);
int depot_slab_rebuild(depot_resource_t *res, char *err, size_t errlen);
/* Punch a slot out without putting it on a free list (startup, before rebuild). */
void depot_slab_punch(depot_resource_t *res, uint32_t size, int64_t slot);
void depot_slab_close(depot_resource_t *res);

/* ---- metadata (depot_meta.c) ------------------------------------------------------------- */


typedef int (*depot_meta_row_fn)(void *ctx, const depot_row_t *row);

int depot_meta_open(depot_resource_t *res, int durability, char *err, size_t errlen);
/* Delete expired rows (calling gone() for each, after the delete is committed) and call
 * live() for every other row.  0 ok, -1 with reason. */
int depot_meta_load(depot_meta_t *m, int64_t now, depot_meta_row_fn live, depot_meta_row_fn gone,
                    void *ctx, char *err, size_t errlen);
int depot_meta_start(depot_meta_t *m);
/* Queue a change; the caller holds store->mu so that queue order is change order. */
void depot_meta_put(depot_meta_t *m, depot_meta_op_t *op, const depot_row_t *row);
/* Two changes committed in one transaction, both or neither (SPLIT: the master's row and
 * the new one's; MERGE: the master's row and the delete of a's, whose reference it takes
 * over as depot_meta_del does, with a waiter).  Wait for each op. */
void depot_meta_put2(depot_meta_t *m, depot_meta_op_t *op1, const depot_row_t *row1,
                     depot_meta_op_t *op2, const depot_row_t *row2);
void depot_meta_put_del(depot_meta_t *m, depot_meta_op_t *op, const depot_row_t *row,
                        depot_alloc_t *a);
/* Queue the delete of a's row; takes over one reference of a, released after the commit.
 * waiter: the caller will depot_meta_wait(&a->del_op) and take a back if it failed. */
void depot_meta_del(depot_meta_t *m, depot_alloc_t *a, int waiter);
/* 1 while the resource's metadata reserve is held (0 once a full filesystem took it). */
int depot_meta_reserve_held(const depot_meta_t *m);
/* Wait until op is committed.  0 ok, -1 failed. */
int depot_meta_wait(depot_meta_t *m, depot_meta_op_t *op);
void depot_meta_close(depot_meta_t *m);

/* ---- server (depot_server.c) and commands (depot_cmd*.c) ----------------------------- */

typedef struct depot_server depot_server_t;

/* SEND's outgoing connections to target depots (depot_cmd_data.c): pooled libibp clients
 * shared by every SEND, so that repeated SENDs to one target reuse keep-alive connections.
 * Made when the server starts listening, freed once it has drained. */
typedef struct depot_senders depot_senders_t;
depot_senders_t *depot_senders_new(void);
void depot_senders_free(depot_senders_t *s);

typedef struct depot_conn {
    depot_server_t *srv;
    int fd;
    lns_rbuf_t rb;
    char peer[64];
    char *dbuf;               /* STORE/WRITE data buffer, grown on demand */
    size_t dcap;
    int close;                /* close after this reply */
    int ncs_type;             /* the request's network checksums (depot_chksum.c); 0 = none */
    uint32_t ncs_bs;
    struct depot_conn *prev, *next;
    /* the request in progress, for the event line */
    uint64_t ev_alloc;
    uint64_t ev_bytes;
} depot_conn_t;

struct depot_server {
    depot_config_t *cfg;
    depot_store_t *store;
    int listen_fd;
    int port;
    int wake_rd, wake_wr;     /* readable once shutdown starts */
    atomic_int stopping;
    pthread_mutex_t conn_mu;
    pthread_cond_t conn_cv;
    depot_conn_t *conns;
    int nconns;
    depot_senders_t *senders;
    struct lns_tls_id *tls_id;   /* the depot's identity (NULL: no TLS) */
    struct lns_tls_ctx *tls_ctx;
};

/* Listen as cfg says; 0 ok, -1 with reason. */
int depot_server_listen(depot_server_t *srv, char *err, size_t errlen);
/* Accept and serve until a signal in sigfd (a signalfd) arrives; then drain and return. */
int depot_server_run(depot_server_t *srv, int sigfd);

/* Run one parsed request; returns the IBP result for the event line. */
int depot_cmd_run(depot_conn_t *c, const ibp_req_t *req);
int depot_cmd_allocate(depot_conn_t *c, const ibp_req_t *req);
int depot_cmd_status(depot_conn_t *c, const ibp_req_t *req);
int depot_cmd_store(depot_conn_t *c, const ibp_req_t *req);
int depot_cmd_load(depot_conn_t *c, const ibp_req_t *req);
int depot_cmd_vec_read(depot_conn_t *c, const ibp_req_t *req);
int depot_cmd_send(depot_conn_t *c, const ibp_req_t *req);
int depot_cmd_manage(depot_conn_t *c, const ibp_req_t *req);
/* The request lines ibp_req_parse does not know (depot_line.c): fields split on runs of
 * spaces (-1: control bytes, or more than max), a number field, "RID#key" and a type key
 * (-1: too long); the command number of a line starting "0 " or "1 ", else -1. */
typedef ibp_field_t depot_field_t;
int depot_line_split(const char *line, size_t len, depot_field_t *f, int max);
int depot_line_num(const depot_field_t *f, int64_t *v);
int depot_line_cap(const depot_field_t *k, const depot_field_t *t, char *rid, char *key, char *tk);
int depot_line_command(const char *line, size_t len);
/* The line's first two numbers (version, command; each cut at 1000) and the index past them;
 * 0, or -1 if it does not start with two numbers. */
int depot_line_head(const char *line, size_t len, long v[2], size_t *end);
/* depot_line_split, and req zeroed but for its version and command (cmd -1 if unreadable),
 * for the event line and the log. */
int depot_line_request(const char *line, size_t len, depot_field_t *f, int max, ibp_req_t *req);
/* The k-th capability (DEPOT_READ..) of na on resource rid, as ALLOCATE answers it. */
void depot_cap_format(const depot_conn_t *c, int rid, const depot_newalloc_t *na, int k,
                      char *buf, size_t size);
/* ACCRE 1.4's RENAME (16), SPLIT (18), MERGE (19), PUSH (20) and PULL (21)
 * (depot_cmd_accre.c). */
enum { DEPOT_CMD_RENAME = 16, DEPOT_CMD_SPLIT = 18, DEPOT_CMD_MERGE = 19, DEPOT_CMD_PUSH = 20,
       DEPOT_CMD_PULL = 21 };
/* 1 if the request line is one of them. */
int depot_accre_request(const char *line, size_t len);
/* Parse and run it; req gets what the event line needs.  Returns the IBP result. */
int depot_cmd_accre(depot_conn_t *c, const char *line, size_t len, ibp_req_t *req);
/* The same, a SPLIT's new allocation with disk checksums of cks_type and cks_bs (0: none):
 * SPLIT_ALLOCATE_CHKSUM (30), PUSH_CHKSUM (22) and PULL_CHKSUM (23) as the plain line
 * (depot_chksum.c). */
int depot_cmd_accre_cks(depot_conn_t *c, const char *line, size_t len, ibp_req_t *req,
                        int cks_type, uint32_t cks_bs);
/* PUSH and PULL (depot_cmd_data.c), on a request filled as a SEND's (key: the local
 * capability's, target_cap: the other depot's, offset and length: the local range, timeouts).
 * PUSH reads the local range and appends it to the remote allocation (remote_off < 0) or
 * writes it at remote_off; PULL loads length bytes at remote_off of the remote allocation and
 * appends them to the local one (req->offset UINT64_MAX) or writes them at req->offset.
 * Both answer "1 <length> \n". */
int depot_cmd_push(depot_conn_t *c, const ibp_req_t *req, int64_t remote_off);
int depot_cmd_pull(depot_conn_t *c, const ibp_req_t *req, uint64_t remote_off);
/* Alias capabilities (depot_alias.c): ACCRE's requests 14 and 15. */
enum { DEPOT_CMD_ALIAS_ALLOCATE = 14, DEPOT_CMD_ALIAS_MANAGE = 15 };
/* 1 if the request line is a 14 or 15 (which ibp_req_parse does not know). */
int depot_alias_request(const char *line, size_t len);
/* Parse and run it; req gets what the event line needs.  Returns the IBP result. */
int depot_cmd_alias(depot_conn_t *c, const char *line, size_t len, ibp_req_t *req);
/* If *ap is an alias, replace it (its reference released) by its master (a reference) and
 * give the range: master bytes [*base, *base + *limit).  Else *base 0, *limit UINT64_MAX.
 * IBP_OK, or -4 (master gone; *ap unchanged). */
int depot_alias_resolve(depot_alloc_t **ap, uint64_t *base, uint64_t *limit);
/* The same for a STORE (*offset UINT64_MAX) or WRITE of len bytes at *offset: *offset
 * becomes the master's; -19 past the range (an append unless the alias is the whole). */
int depot_alias_write_at(depot_alloc_t **ap, uint64_t *offset, uint64_t len);
/* Checksums (depot_chksum.c): ACCRE 1.4's requests 22-32, 34, 36, and the per-block disk
 * checksums of an allocation made by ALLOCATE_CHKSUM, kept in a side file beside its data
 * (docs/depot.md, "Disk checksums").  Types are ACCRE's numbers. */
enum { DEPOT_CKS_SHA256 = 1, DEPOT_CKS_SHA512 = 2, DEPOT_CKS_SHA1 = 3, DEPOT_CKS_MD5 = 4,
       DEPOT_CKS_TYPES = 4 };
#define DEPOT_CKS_BS_MAX 2147483648LL /* ACCRE's largest disk block size */
/* 1 if the line is one of those requests. */
int depot_chksum_request(const char *line, size_t len);
/* Parse and run it; req gets what the event line needs.  Returns the IBP result. */
int depot_cmd_chksum(depot_conn_t *c, const char *line, size_t len, ibp_req_t *req);
/* The write path of a disk-checksummed allocation (a->r.cks_type != 0), under the write's
 * op_mu: begin marks [off, off + len) (every range of the write) pending in the side file
 * before any byte is written; end recomputes from the data file the digests of the blocks
 * the ranges v[0..nv) touch; done clears the mark if ok (end succeeded), else leaves it for
 * the next access to heal.  IBP_OK or IBP_E_FILE_WRITE. */
int depot_cks_begin(depot_alloc_t *a, uint64_t off, uint64_t len);
int depot_cks_end(depot_alloc_t *a, const depot_data_t *d, const ibp_vec_t *v, int nv);
void depot_cks_done(depot_alloc_t *a, int ok);
/* Check the blocks [off, off + len) of a disk-checksummed allocation touches against their
 * digests (logging each that fails).  IBP_OK, IBP_E_CHKSUM, or IBP_E_FILE_READ. */
int depot_cks_verify(depot_alloc_t *a, const depot_data_t *d, uint64_t off, uint64_t len);
/* Receive the bytes of ranges v[0..nv) (offsets from base), carried one range after the other
 * in one stream with network checksums (c->ncs_type, c->ncs_bs), into fd.  IBP_OK,
 * IBP_E_CHKSUM (all bytes read, a digest did not match), or recv_to_file's errors. */
int depot_cks_recv(depot_conn_t *c, int fd, uint64_t base, const ibp_vec_t *v, int nv,
                   int timeout_ms);
/* Send those ranges of fd so.  0 or -1 (connection broken). */
int depot_cks_send(depot_conn_t *c, int fd, uint64_t base, const ibp_vec_t *v, int nv,
                   int timeout_ms);
/* Remove the side file of allocation id (its data is being freed). */
void depot_cks_unlink(depot_resource_t *res, uint64_t id);
/* The cache of blocks known to match their disk digests (depot_chksum_cache.c): open with
 * the window in seconds (0: no cache; -1 out of memory), close at the end.  A write calls
 * write_begin for the blocks it will touch (they are forgotten, the allocation's sequence
 * goes odd) and write_end when its digests are done; put records blocks [b0, b1] as good
 * until the window passes: by the writer itself (writer 1), or by a reader that checked
 * them and saw sequence seq (from depot_cks_cache_seq) before reading them.  hit: 1 if
 * block b is known good and the sequence is still seq. */
int depot_cks_cache_open(depot_store_t *st, int seconds);
void depot_cks_cache_close(depot_store_t *st);
uint64_t depot_cks_cache_serial(void);
void depot_cks_cache_write_begin(depot_alloc_t *a, uint64_t b0, uint64_t b1);
void depot_cks_cache_write_end(depot_alloc_t *a);
uint32_t depot_cks_cache_seq(depot_alloc_t *a);
int depot_cks_cache_hit(depot_alloc_t *a, uint64_t b, uint32_t seq);
void depot_cks_cache_put(depot_alloc_t *a, uint64_t b0, uint64_t b1, int writer, uint32_t seq);
/* ALLOCATE with disk checksums (cks_type 0: none). */
int depot_store_allocate_cks(depot_store_t *st, int rid, int reliability, int type,
                             int64_t duration, uint64_t size, int cks_type, uint32_t cks_bs,
                             depot_newalloc_t *out);
int depot_cmd_allocate_cks(depot_conn_t *c, const ibp_req_t *req, int cks_type, uint32_t cks_bs);

/* Send a reply line; on failure the connection is marked for closing.  0 or -1. */
int depot_reply(depot_conn_t *c, int flags, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Send the error reply "<err> \n"; returns err. */
int depot_reply_err(depot_conn_t *c, int err);
int depot_conn_timeout_ms(const depot_conn_t *c, int t);

#endif
