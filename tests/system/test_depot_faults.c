/* test_depot_faults.c -- the depot's fault-injection harness: every mutating step made to fail
 * or to crash, and the invariants checked after each.
 *
 * A script of requests (ALLOCATE, STORE, WRITE, TRUNCATE, CHNG, INCR, DECR, SEND, ACCRE 1.4's
 * RENAME, SPLIT, MERGE, PUSH and PULL (raw request lines: libibp has no calls for them; the
 * copies between allocations of the one depot, which connects to itself), ACCRE's disk
 * checksums (ALLOCATE_CHKSUM 29 with MD5 of 512-byte blocks, a STORE and WRITEs over partial
 * blocks, LOAD_CHKSUM 24 whose digests are checked here), alias capabilities (ALIAS_ALLOCATE
 * 14, WRITEs through the alias, ALIAS_MANAGE CHNG and revoke 15), and an allocation left to
 * expire for the reaper) runs against a real ibp_depot (chksum-cache 0: every read checks its
 * blocks) while a model keeps what the depot acknowledged.  A clean run, with LNS_FAILPOINTS_LOG, records which failpoints
 * (common/lns_fail.h) each request reaches; every (request, failpoint, action) triple found
 * there is a fault run: the depot starts with that one point armed ("error": ENOSPC, "eio",
 * "kill": SIGKILL) at that hit, the script runs, and after every request the harness checks
 *   - every acknowledged byte is there and nothing else: PROBE gives the model's size, LOAD of
 *     the whole size gives the model's bytes (so no size is larger than its data);
 *   - a refused request changed nothing (the model before it);
 *   - a request cut by a crash left the state before it or after it, nothing in between (the
 *     depot is restarted without failpoints and the state read back);
 *   - a freed or expired allocation's capabilities give an error, never bytes; a live alias
 *     reads its range of the master's bytes, a revoked one nothing;
 *   - a checksummed allocation never answers -63 (after a failure or a crash the depot
 *     recomputes the digests of blocks whose write was pending); a read refused by a
 *     failpoint (cks.verify) or cut by a crash is tried again;
 * and at the end, after a clean restart, the same again, then, with the depot stopped, that no
 * slab slot is claimed by two rows of its database.
 *
 * make test runs the triples in an order drawn from a seed (printed; LNS_FAULT_SEED repeats
 * it) for LNS_FAULT_SECONDS (default 12) and a few runs of the random mode (each point fails
 * with some probability); make soak sets LNS_FAULT_SOAK=1: every triple, then random runs
 * until LNS_FAULT_SECONDS (default 600).
 */
#include <errno.h>
#include <openssl/evp.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ibp.h"
#include "lns_test.h"
#include "test_depot.h"

/* ---- the model ------------------------------------------------------------------------------ */

#define NA 10
#define MAXA (256 * 1024)

typedef struct m_alloc {
    int used;           /* the script allocated it and knows its capabilities */
    int alive;          /* not freed, not expired */
    ibp_caps_t caps;
    uint64_t max;
    size_t size;
    int rrefs, wrefs;
    int short_lived;    /* allocated for 1 s: may expire at any check */
    int alias;          /* an alias capability of allocation master's bytes [aoff, aoff + alen) */
    int master;
    size_t aoff, alen;
    unsigned char data[MAXA];
} m_alloc_t;

/* A WRITE over bytes already stored is not atomic (as pwrite(2) is not): when it is refused
 * part way or cut by a crash, each byte of the part of its range below the old size may be
 * old or new; the size never changes.  A STORE, and the part of a WRITE that extends the
 * size, are all or nothing. */
typedef struct fuzzy {
    int a;              /* -1: none */
    size_t off, len;
    const unsigned char *bytes; /* the WRITE's bytes, for [off, off + len) */
} fuzzy_t;

typedef struct model {
    m_alloc_t a[NA];
    fuzzy_t fz;
    ibp_caps_t renamed; /* what a RENAME answered */
} model_t;

/* ---- the script ----------------------------------------------------------------------------- */

enum op_kind { OP_ALLOC, OP_STORE, OP_WRITE, OP_TRUNC, OP_CHNG, OP_INCR, OP_DECR, OP_SEND, OP_EXPIRE,
               OP_RENAME, OP_SPLIT, OP_MERGE, OP_PUSH, OP_PULL, OP_CKALLOC, OP_LOADCK, OP_ALIAS,
               OP_AWRITE, OP_ACHNG, OP_AREVOKE };

typedef struct op {
    int kind;
    int a;              /* the allocation it works on */
    int b;              /* SEND, PUSH: the target; PULL: the source; SPLIT: the new one; MERGE:
                           the child; INCR/DECR: IBP_READCAP or IBP_WRITECAP; CKALLOC, LOADCK:
                           the checksum type; ALIAS, ACHNG, AREVOKE: the master */
    uint64_t x, y;      /* ALLOC: size, duration; STORE: len; WRITE: offset, len; TRUNC: new max size;
                           CHNG: max size; SEND, PUSH: offset, len; PULL: the source's offset,
                           len; SPLIT: size; CKALLOC: size, block size; LOADCK: block size;
                           ALIAS, ACHNG: offset, length; AWRITE: offset (in the alias), len */
    const char *what;
    int64_t z;          /* PUSH: the target's offset, PULL: a's (-1: append) */
} op_t;

static const op_t script[] = {
    {OP_ALLOC, 5, 0, 8192, 1, "allocate 8 KiB for 1 s (slab)", 0},
    {OP_STORE, 5, 0, 3000, 0, "store into the short-lived one", 0},
    {OP_ALLOC, 0, 0, 16384, 600, "allocate 16 KiB (slab)", 0},
    {OP_ALLOC, 1, 0, 262144, 600, "allocate 256 KiB (own file)", 0},
    {OP_ALLOC, 2, 0, 4096, 600, "allocate 4 KiB (slab)", 0},
    {OP_ALLOC, 3, 0, 131072, 600, "allocate 128 KiB (own file)", 0},
    {OP_STORE, 0, 0, 5000, 0, "store 5000 into the slab one", 0},
    {OP_STORE, 1, 0, 100000, 0, "store 100000 into the own-file one", 0},
    {OP_STORE, 2, 0, 3000, 0, "store 3000 into the 4 KiB one", 0},
    {OP_STORE, 3, 0, 70000, 0, "store 70000", 0},
    {OP_WRITE, 0, 0, 8000, 1000, "write past the end of a slab (gap of zeros)", 0},
    {OP_WRITE, 1, 0, 150000, 20000, "write past the end of an own file", 0},
    {OP_WRITE, 3, 0, 90000, 0, "empty write past the end of an own file", 0},
    {OP_WRITE, 1, 0, 10, 500, "overwrite inside", 0},
    {OP_TRUNC, 1, 0, 60000, 0, "truncate an own file below its size (cut, max too)", 0},
    {OP_TRUNC, 0, 0, 2000, 0, "truncate a slab below its size", 0},
    {OP_TRUNC, 0, 0, 12000, 0, "truncate a slab up (max only, same slot)", 0},
    {OP_TRUNC, 3, 0, 120000, 0, "truncate an own file's max down, above its size", 0},
    {OP_TRUNC, 2, 0, 70000, 0, "truncate a slab up past its slot (moves to an own file)", 0},
    {OP_CHNG, 0, 0, 100000, 0, "change a slab past its slot (moves to an own file)", 0},
    {OP_CHNG, 2, 0, 2000, 0, "change below the size (refused)", 0},
    {OP_INCR, 1, IBP_READCAP, 0, 0, "incr read", 0},
    {OP_DECR, 1, IBP_READCAP, 0, 0, "decr read", 0},
    {OP_DECR, 2, IBP_WRITECAP, 0, 0, "decr write to 0", 0},
    {OP_STORE, 2, 0, 10, 0, "store after the write count reached 0", 0},
    {OP_SEND, 1, 3, 0, 10000, "send 10000 to another allocation", 0},
    {OP_STORE, 0, 0, 4000, 0, "store into the moved one", 0},
    {OP_DECR, 2, IBP_READCAP, 0, 0, "decr read to 0: free a slab allocation", 0},
    {OP_ALLOC, 4, 0, 4096, 600, "allocate 4 KiB (takes the freed slot)", 0},
    {OP_STORE, 4, 0, 4096, 0, "store 4096 into it", 0},
    {OP_EXPIRE, 5, 0, 0, 0, "wait for the short-lived one to expire", 0},
    {OP_ALLOC, 6, 0, 8192, 600, "allocate 8 KiB (may take the expired slot)", 0},
    {OP_STORE, 6, 0, 8192, 0, "store 8192 into it", 0},
    {OP_DECR, 1, IBP_READCAP, 0, 0, "free an own-file allocation", 0},
    {OP_RENAME, 3, 0, 0, 0, "rename an own-file allocation", 0},
    {OP_SPLIT, 6, 7, 4096, 0, "split 4 KiB off a full 8 KiB slab (cuts it)", 0},
    {OP_SPLIT, 6, 1, 8192, 0, "split more than the master has (refused)", 0},
    {OP_PUSH, 6, 7, 0, 1000, "push 1000 bytes to the new one (append)", -1},
    {OP_PULL, 7, 3, 0, 2000, "pull 2000 bytes of another to its end", 1000},
    {OP_PUSH, 3, 7, 100, 500, "push to an offset past the end (gap of zeros)", 3200},
    {OP_PULL, 7, 3, 100000, 10, "pull past the source's size (refused)", -1},
    {OP_RENAME, 7, 0, 0, 0, "rename a slab allocation", 0},
    {OP_MERGE, 6, 7, 0, 0, "merge it back (8 KiB, the same slot)", 0},
    {OP_SPLIT, 4, 7, 1000, 0, "split 1000 off a 4 KiB slab", 0},
    {OP_MERGE, 0, 7, 0, 0, "merge a slab child into an own-file master", 0},
    {OP_MERGE, 4, 6, 0, 0, "merge past the master's slot (moves to an own file)", 0},
    {OP_STORE, 4, 0, 5000, 0, "store into the merged one", 0},
    {OP_CKALLOC, 8, 4, 8192, 512, "allocate 8 KiB with MD5 digests of 512-byte blocks (29)", 0},
    {OP_STORE, 8, 0, 1300, 0, "store 1300 into it (the third block partial)", 0},
    {OP_WRITE, 8, 0, 700, 1000, "write 700..1700 over partial blocks, past the end", 0},
    {OP_LOADCK, 8, 4, 512, 0, "LOAD_CHKSUM of it, its digests checked (24)", 0},
    {OP_ALIAS, 9, 8, 1024, 2048, "alias bytes 1024..3072 of it (14)", 0},
    {OP_AWRITE, 9, 0, 100, 1500, "write through the alias (master 1124..2624, past the end)", 0},
    {OP_ACHNG, 9, 8, 0, 4096, "change the alias's range to 0..4096 (15 CHNG)", 0},
    {OP_AWRITE, 9, 0, 3000, 2000, "write past the alias's range (refused)", 0},
    {OP_AWRITE, 9, 0, 2000, 1000, "write inside the alias over a block's tail", 0},
    {OP_AREVOKE, 9, 8, 0, 0, "revoke the alias (15 DECR of its read count to 0)", 0},
    {OP_LOADCK, 8, 4, 512, 0, "LOAD_CHKSUM of the master again", 0},
};
#define NOPS ((int)(sizeof script / sizeof script[0]))

/* Every failpoint of the depot (grep lns_fail ibp_depot/): the clean run must reach each. */
static const char *const points[] = {"data.write", "data.zero", "data.fsync", "data.truncate",
                                     "data.move", "data.unlink", "slab.punch", "meta.commit",
                                     "meta.committed", "meta.reserve", "store.reply", "send.store",
                                     "pull.load", "reap", "cks.write", "cks.verify"};
#define NPOINTS ((int)(sizeof points / sizeof points[0]))
static const char *const actions[] = {"error", "eio", "kill"};

/* What the model says op does, from m into post; 1 if the depot must refuse it. */
static int apply(const op_t *op, model_t *post, uint64_t seed)
{
    m_alloc_t *a = &post->a[op->a];
    if (op->kind == OP_ALLOC) {
        memset(a, 0, sizeof *a - sizeof a->data);
        a->used = a->alive = 1;
        a->max = op->x;
        a->rrefs = a->wrefs = 1;
        a->short_lived = op->y == 1;
        return 0;
    }
    if (op->kind == OP_CKALLOC) {
        memset(a, 0, sizeof *a - sizeof a->data);
        a->used = a->alive = 1;
        a->max = op->x;
        a->rrefs = a->wrefs = 1;
        return 0;
    }
    if (op->kind == OP_ALIAS) {
        const m_alloc_t *m = &post->a[op->b];
        if (!m->used)
            return -1;
        memset(a, 0, sizeof *a - sizeof a->data);
        if (!m->alive)
            return 1;
        a->used = a->alive = a->alias = 1;
        a->master = op->b;
        a->aoff = op->x;
        a->alen = op->y;
        a->rrefs = a->wrefs = 1;
        return 0;
    }
    if (!a->used)
        return -1; /* never allocated: skip */
    if (op->kind == OP_EXPIRE) {
        a->alive = 0;
        return 0;
    }
    if (!a->alive)
        return 1;
    switch (op->kind) {
    case OP_STORE: /* the write count does not gate writes (docs/interop.md) */
        if (a->size + op->x > a->max)
            return 1;
        lns_test_fill(a->data + a->size, op->x, seed);
        a->size += op->x;
        return 0;
    case OP_WRITE:
        if (op->x + op->y > a->max)
            return 1;
        if (op->x > a->size)
            memset(a->data + a->size, 0, op->x - a->size);
        lns_test_fill(a->data + op->x, op->y, seed);
        if (op->x + op->y > a->size)
            a->size = op->x + op->y;
        return 0;
    case OP_TRUNC: /* as ACCRE 1.4: the max becomes x, the size is cut to it */
        if (op->x > MAXA)
            return 1;
        a->max = op->x;
        if (a->size > op->x)
            a->size = op->x;
        return 0;
    case OP_CHNG:
        if (op->x < a->size || op->x > MAXA)
            return 1;
        a->max = op->x;
        return 0;
    case OP_INCR:
        *(op->b == IBP_READCAP ? &a->rrefs : &a->wrefs) += 1;
        return 0;
    case OP_DECR:
        if (op->b == IBP_WRITECAP) {
            if (a->wrefs <= 0)
                return 1;
            a->wrefs--;
        } else if (--a->rrefs <= 0) {
            a->alive = 0;
        }
        return 0;
    case OP_RENAME:
    case OP_LOADCK:
        return 0;
    case OP_AWRITE: { /* a WRITE of the master at the alias's offset plus x, inside its range */
        m_alloc_t *m = &post->a[a->master];
        uint64_t at = a->aoff + op->x;
        if (!m->alive || op->x + op->y > a->alen || at + op->y > m->max)
            return 1;
        if (at > m->size)
            memset(m->data + m->size, 0, at - m->size);
        lns_test_fill(m->data + at, op->y, seed);
        if (at + op->y > m->size)
            m->size = at + op->y;
        return 0;
    }
    case OP_ACHNG:
        if (!post->a[a->master].alive || op->x + op->y > post->a[a->master].max)
            return 1;
        a->aoff = op->x;
        a->alen = op->y;
        return 0;
    case OP_AREVOKE:
        if (--a->rrefs <= 0)
            a->alive = 0;
        return 0;
    case OP_SPLIT: {
        m_alloc_t *c = &post->a[op->b];
        if (op->x > a->max)
            return 1;
        a->max -= op->x;
        if (a->size > a->max)
            a->size = a->max;
        memset(c, 0, sizeof *c - sizeof c->data);
        c->used = c->alive = 1;
        c->max = op->x;
        c->rrefs = c->wrefs = 1;
        return 0;
    }
    case OP_MERGE: {
        m_alloc_t *c = &post->a[op->b];
        if (!c->used || !c->alive || c->rrefs != 1 || c->wrefs > 1)
            return 1;
        a->max += c->max;
        c->alive = 0;
        return 0;
    }
    case OP_PUSH:
    case OP_PULL: {
        m_alloc_t *s = op->kind == OP_PUSH ? a : &post->a[op->b];
        m_alloc_t *t = op->kind == OP_PUSH ? &post->a[op->b] : a;
        size_t at = op->z < 0 ? t->size : (size_t)op->z;
        if (!s->used || !s->alive || !t->used || !t->alive || op->x + op->y > s->size ||
            at + op->y > t->max)
            return 1;
        if (at > t->size)
            memset(t->data + t->size, 0, at - t->size);
        memmove(t->data + at, s->data + op->x, op->y);
        if (at + op->y > t->size)
            t->size = at + op->y;
        return 0;
    }
    case OP_SEND: {
        m_alloc_t *t = &post->a[op->b];
        if (!t->used || !t->alive || op->x + op->y > a->size ||
            t->size + op->y > t->max)
            return 1;
        memcpy(t->data + t->size, a->data + op->x, op->y);
        t->size += op->y;
        return 0;
    }
    }
    return -1;
}

/* ---- talking to the depot ------------------------------------------------------------------- */

static ibp_client_t *new_client(void)
{
    ibp_client_opts_t o;
    ibp_client_opts_init(&o);
    o.max_idle_per_depot = 0; /* one connection per request: a crash cuts one request */
    o.connect_timeout_ms = 3000;
    o.io_timeout_ms = 10000;
    o.server_timeout_s = 10;
    return ibp_client_new(&o);
}

/* "<rid>#<key> <typekey>" of a capability, for a raw request line. */
static void wire_cap(const char *cap, char *buf, size_t n)
{
    char host[256], rid[64], key[300], tk[64];
    int port;
    if (sscanf(cap, "ibp://%255[^:]:%d/%63[^#]#%299[^/]/%63[^/]/", host, &port, rid, key, tk) != 5)
        snprintf(buf, n, "bad bad");
    else
        snprintf(buf, n, "%s#%s %s", rid, key, tk);
}

/* One raw request line (printf), its reply's code; a reply of three capabilities into caps. */
static int raw_op(const test_depot_t *d, ibp_caps_t *caps, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int raw_op(const test_depot_t *d, ibp_caps_t *caps, const char *fmt, ...)
{
    char line[2048], reply[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    int fd = td_connect(d);
    if (fd < 0)
        return IBP_E_CONNECTION;
    int rc = raw_reqf(fd, reply, sizeof reply, "%s", line);
    close(fd);
    if (rc == -1000)
        return IBP_E_SOCK_READ;
    if (rc != 1)
        return rc;
    char c[3][1024];
    if (!caps)
        return IBP_OK;
    if (sscanf(reply, "1 %1023s %1023s %1023s", c[0], c[1], c[2]) != 3 ||
        strlen(c[0]) >= IBP_MAX_CAP || strlen(c[1]) >= IBP_MAX_CAP || strlen(c[2]) >= IBP_MAX_CAP)
        return IBP_E_BAD_FORMAT;
    memcpy(caps->read, c[0], strlen(c[0]) + 1);
    memcpy(caps->write, c[1], strlen(c[1]) + 1);
    memcpy(caps->manage, c[2], strlen(c[2]) + 1);
    return IBP_OK;
}

/* What a LOAD_CHKSUM gave that the model does not have, or "". */
static char loadck_why[256];

/* LOAD_CHKSUM of a's whole size in blocks of bs, type cs (4: MD5): each block's bytes and the
 * digest after it are checked against the model here. */
static int load_chksum(const test_depot_t *d, const m_alloc_t *a, int cs, long bs)
{
    char k1[512], reply[256], hex[2 * EVP_MAX_MD_SIZE + 1], want[2 * EVP_MAX_MD_SIZE + 1];
    static unsigned char buf[MAXA];
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned mdlen;
    const EVP_MD *type = cs == 4 ? EVP_md5() : EVP_sha256();
    wire_cap(a->caps.read, k1, sizeof k1);
    int fd = td_connect(d);
    if (fd < 0)
        return IBP_E_CONNECTION;
    int rc = raw_reqf(fd, reply, sizeof reply, "1 24 %d %ld %s 0 %zu 10\n", cs, bs, k1, a->size);
    for (size_t i = 0; rc == 1 && i < a->size; i += (size_t)bs) {
        size_t k = a->size - i < (size_t)bs ? a->size - i : (size_t)bs;
        size_t hl = 2 * (size_t)EVP_MD_size(type);
        if (raw_read(fd, buf + i, k) < 0 || raw_read(fd, hex, hl) < 0) {
            rc = -1000;
            break;
        }
        hex[hl] = 0;
        EVP_Digest(buf + i, k, md, &mdlen, type, NULL);
        for (unsigned j = 0; j < mdlen; j++)
            snprintf(want + 2 * j, 3, "%02x", md[j]);
        if (strcmp(hex, want) != 0 || memcmp(buf + i, a->data + i, k) != 0) {
            snprintf(loadck_why, sizeof loadck_why, "LOAD_CHKSUM: block %zu: %s", i / (size_t)bs,
                     strcmp(hex, want) ? "its digest is wrong" : "its bytes differ from the model");
            break;
        }
    }
    close(fd);
    return rc == -1000 ? IBP_E_SOCK_READ : rc == 1 ? IBP_OK : rc;
}

static int exec_op(ibp_client_t *cl, const test_depot_t *d, const op_t *op, model_t *m,
                   uint64_t seed)
{
    char k1[512], k2[512];
    m_alloc_t *a = &m->a[op->a];
    static unsigned char buf[MAXA];
    switch (op->kind) {
    case OP_ALLOC: {
        ibp_attr_t at = {op->x, m->a[op->a].short_lived ? 1 : 600, IBP_HARD, IBP_BYTEARRAY};
        return ibp_allocate(cl, "127.0.0.1", d->port, "0", &at, &a->caps);
    }
    case OP_STORE:
        lns_test_fill(buf, op->x, seed);
        return ibp_store(cl, a->caps.write, buf, op->x, NULL);
    case OP_WRITE:
        lns_test_fill(buf, op->y, seed);
        return ibp_write(cl, a->caps.write, op->x, buf, op->y, NULL);
    case OP_TRUNC:
        return ibp_truncate(cl, a->caps.manage, op->x);
    case OP_CHNG:
        return ibp_change(cl, a->caps.manage, op->x, 0, 0);
    case OP_INCR:
        return ibp_incr(cl, a->caps.manage, op->b);
    case OP_DECR:
        return ibp_decr(cl, a->caps.manage, op->b);
    case OP_SEND:
        return ibp_send(cl, a->caps.read, m->a[op->b].caps.write, op->x, op->y, NULL);
    case OP_RENAME: {
        ibp_caps_t nc;
        wire_cap(a->caps.manage, k1, sizeof k1);
        int rc = raw_op(d, &nc, "1 16 %s 10\n", k1);
        if (rc == IBP_OK)
            m->renamed = nc; /* run_script takes them once the request is done */
        return rc;
    }
    case OP_SPLIT:
        wire_cap(a->caps.manage, k1, sizeof k1);
        return raw_op(d, &m->a[op->b].caps, "1 18 %s 2 1 600 %llu 10\n", k1,
                      (unsigned long long)op->x);
    case OP_MERGE:
        wire_cap(a->caps.manage, k1, sizeof k1);
        wire_cap(m->a[op->b].caps.manage, k2, sizeof k2);
        return raw_op(d, NULL, "1 19 %s %s 10\n", k1, k2);
    case OP_PUSH:
    case OP_PULL: {
        const char *local = op->kind == OP_PUSH ? a->caps.read : a->caps.write;
        const char *remote = op->kind == OP_PUSH ? m->a[op->b].caps.write : m->a[op->b].caps.read;
        char key[400], tk[64];
        wire_cap(local, k1, sizeof k1);
        if (sscanf(k1, "%399s %63s", key, tk) != 2)
            return IBP_E_BAD_FORMAT;
        long long loff = op->kind == OP_PUSH ? (long long)op->x : (long long)op->z;
        long long roff = op->kind == OP_PUSH ? (long long)op->z : (long long)op->x;
        return raw_op(d, NULL, "1 %d 1  %s %s %s %lld %lld %llu 10 10 10\n",
                      op->kind == OP_PUSH ? 20 : 21, key, remote, tk, loff, roff,
                      (unsigned long long)op->y);
    }
    case OP_CKALLOC:
        return raw_op(d, &a->caps, "1 29 %d %llu 0 1 1 600 %llu 10\n", op->b,
                      (unsigned long long)op->y, (unsigned long long)op->x);
    case OP_LOADCK:
        return load_chksum(d, a, op->b, (long)op->x);
    case OP_ALIAS:
        wire_cap(m->a[op->b].caps.manage, k1, sizeof k1);
        return raw_op(d, &a->caps, "1 14 %s %llu %llu 300 10\n", k1, (unsigned long long)op->x,
                      (unsigned long long)op->y);
    case OP_AWRITE:
        lns_test_fill(buf, op->y, seed);
        return ibp_write(cl, a->caps.write, op->x, buf, op->y, NULL);
    case OP_ACHNG:
        wire_cap(a->caps.manage, k1, sizeof k1);
        wire_cap(m->a[op->b].caps.manage, k2, sizeof k2);
        return raw_op(d, NULL, "1 15 %s 43 %llu %llu 300 %s 10\n", k1, (unsigned long long)op->x,
                      (unsigned long long)op->y, k2);
    case OP_AREVOKE:
        wire_cap(a->caps.manage, k1, sizeof k1);
        wire_cap(m->a[op->b].caps.manage, k2, sizeof k2);
        return raw_op(d, NULL, "1 15 %s 42 1 %s 10\n", k1, k2);
    case OP_EXPIRE: {
        ibp_probe_t p;
        /* Expired at the next whole second at most; the reaper looks twice a second. */
        for (int i = 0; i < 40 && ibp_probe(cl, a->caps.manage, &p) == IBP_OK; i++)
            lns_test_sleep_ms(100);
        lns_test_sleep_ms(700);
        return IBP_OK;
    }
    }
    return IBP_E_INTERNAL;
}

/* The checks' reads reach failpoints too (cks.verify): a read refused by one, or cut by a
 * crash (then revive restarts the depot without failpoints), is tried again; a wrong
 * digest (-63) or a missing capability is an answer.  In random mode the points stay armed
 * and a read of n checksummed blocks meets n of them, so after two refusals in a row revive
 * kills the depot and restarts it without failpoints, as after a crash: what was
 * acknowledged must survive that too, and the next read meets no failpoint. */
static int (*revive)(int tries);

static int again(int rc, int *tries)
{
    if (rc == IBP_OK || rc == IBP_E_CAP_NOT_FOUND || rc == IBP_E_CHKSUM || ++*tries > 5)
        return 0;
    if (revive)
        revive(*tries);
    return 1;
}

static int load(ibp_client_t *cl, const char *cap, uint64_t off, uint64_t len, void *buf)
{
    int rc, tries = 0;
    do
        rc = ibp_load(cl, cap, off, len, buf);
    while (again(rc, &tries));
    return rc;
}

/* Does the depot hold exactly what m says?  0, or -1 with the first difference in why. */
static int check(ibp_client_t *cl, model_t *m, char *why, size_t n)
{
    static unsigned char buf[MAXA];
    for (int i = 0; i < NA; i++) {
        m_alloc_t *a = &m->a[i];
        ibp_probe_t p;
        if (!a->used)
            continue;
        if (a->alias && a->alive) {
            /* Its range of the master's bytes (checked before it: a lower index). */
            const m_alloc_t *ma = &m->a[a->master];
            size_t len = ma->size > a->aoff ? ma->size - a->aoff : 0;
            if (len > a->alen)
                len = a->alen;
            int rc = len ? load(cl, a->caps.read, 0, len, buf) : IBP_OK;
            if (rc != IBP_OK || memcmp(buf, ma->data + a->aoff, len) != 0) {
                snprintf(why, n, "alias %d: LOAD of its %zu bytes: %s", i, len,
                         rc ? ibp_strerror(rc) : "they differ from the master's");
                return -1;
            }
            continue;
        }
        int rc, tries = 0;
        do
            rc = ibp_probe(cl, a->caps.manage, &p);
        while (a->alive && again(rc, &tries));
        if (a->short_lived && a->alive && rc == IBP_E_CAP_NOT_FOUND)
            a->alive = 0; /* its second is up */
        if (!a->alive) {
            int lrc = load(cl, a->caps.read, 0, 1, buf);
            if (rc == IBP_OK || lrc == IBP_OK) {
                snprintf(why, n, "allocation %d was freed, yet PROBE %d LOAD %d", i, rc, lrc);
                return -1;
            }
            continue;
        }
        if (rc != IBP_OK) {
            snprintf(why, n, "allocation %d: PROBE failed: %s", i, ibp_strerror(rc));
            return -1;
        }
        if (p.cur_size != a->size || p.max_size != a->max || p.read_refs != a->rrefs ||
            p.write_refs != a->wrefs) {
            snprintf(why, n, "allocation %d: size %llu max %llu refs %d/%d, model %zu %llu %d/%d",
                     i, (unsigned long long)p.cur_size, (unsigned long long)p.max_size,
                     p.read_refs, p.write_refs, a->size, (unsigned long long)a->max, a->rrefs,
                     a->wrefs);
            return -1;
        }
        rc = a->size ? load(cl, a->caps.read, 0, a->size, buf) : IBP_OK;
        if (a->short_lived && rc == IBP_E_CAP_NOT_FOUND) {
            a->alive = 0; /* its second ran out between the PROBE and the LOAD */
            continue;
        }
        if (rc != IBP_OK) {
            snprintf(why, n, "allocation %d: LOAD of its %zu bytes: %s", i, a->size,
                     ibp_strerror(rc));
            return -1;
        }
        const fuzzy_t *fz = &m->fz;
        if (a->size && memcmp(buf, a->data, a->size) != 0) {
            size_t k = 0;
            while (k < a->size &&
                   (buf[k] == a->data[k] || (fz->a == i && k >= fz->off && k < fz->off + fz->len &&
                                             buf[k] == fz->bytes[k - fz->off])))
                k++;
            if (k == a->size) {
                memcpy(a->data, buf, a->size); /* the mix the cut WRITE left */
                continue;
            }
            snprintf(why, n, "allocation %d: byte %zu of %zu differs from what was acknowledged",
                     i, k, a->size);
            return -1;
        }
    }
    return 0;
}

/* No slab slot claimed by two rows; every row's bytes exist on disk. */
static int check_db(const test_depot_t *d, char *why, size_t n)
{
    char path[PATH_MAX + 32];
    sqlite3 *db;
    sqlite3_stmt *s;
    int bad = 0;
    snprintf(path, sizeof path, "%s/res0/depot.db", d->dir);
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        snprintf(why, n, "cannot open %.400s", path);
        sqlite3_close(db);
        return -1;
    }
    if (sqlite3_prepare_v2(db, "SELECT slab, slot, count(*) FROM alloc WHERE slab != 0"
                           " GROUP BY slab, slot HAVING count(*) > 1", -1, &s, NULL) == SQLITE_OK) {
        if (sqlite3_step(s) == SQLITE_ROW) {
            snprintf(why, n, "slot %lld of slab %lld is claimed by %d rows",
                     (long long)sqlite3_column_int64(s, 1), (long long)sqlite3_column_int64(s, 0),
                     sqlite3_column_int(s, 2));
            bad = 1;
        }
        sqlite3_finalize(s);
    }
    if (!bad && sqlite3_prepare_v2(db, "SELECT id, cur_size FROM alloc WHERE slab = 0 AND"
                                   " cur_size > 0", -1, &s, NULL) == SQLITE_OK) {
        while (!bad && sqlite3_step(s) == SQLITE_ROW) {
            unsigned long long id = (unsigned long long)sqlite3_column_int64(s, 0);
            long long size = sqlite3_column_int64(s, 1);
            struct stat sb;
            snprintf(path, sizeof path, "%s/res0/data/%02x/%016llx", d->dir,
                     (unsigned)(id >> 56), id);
            if (stat(path, &sb) < 0 || sb.st_size < size) {
                snprintf(why, n, "row %016llx has size %lld, its file %lld bytes", id, size,
                         stat(path, &sb) < 0 ? -1LL : (long long)sb.st_size);
                bad = 1;
            }
        }
        sqlite3_finalize(s);
    }
    sqlite3_close(db);
    return bad ? -1 : 0;
}

/* ---- one run -------------------------------------------------------------------------------- */

typedef struct run {
    char spec[256];     /* LNS_FAILPOINTS, "" for none */
    int expire;         /* run the expiry step (1.5 s) */
    const char *log;    /* LNS_FAILPOINTS_LOG and op markers, or NULL */
    int durability_os;  /* --durability os instead of fsync */
} run_t;

static model_t model, post;
static int failures;

static void report(const run_t *r, int k, const char *why)
{
    failures++;
    printf("  FAULT RUN FAILED [%s%s]: after request %d (%s): %s\n", r->spec[0] ? r->spec : "clean",
           r->durability_os ? ", durability os" : "", k, k >= 0 ? script[k].what : "end", why);
}

static int start(test_depot_t *d, const run_t *r, int restart)
{
    if (r->spec[0] && !restart)
        setenv("LNS_FAILPOINTS", r->spec, 1);
    else
        unsetenv("LNS_FAILPOINTS");
    if (r->log && !restart)
        setenv("LNS_FAILPOINTS_LOG", r->log, 1);
    else
        unsetenv("LNS_FAILPOINTS_LOG");
    /* chksum-cache 0: every read of a checksummed block checks it (cks.verify). */
    int rc = restart ? td_restart(d)
                     : td_start(d, r->durability_os ? "--durability os --chksum-cache 0"
                                                    : "--durability fsync --chksum-cache 0");
    unsetenv("LNS_FAILPOINTS");
    unsetenv("LNS_FAILPOINTS_LOG");
    return rc;
}

/* 1 if the depot process has died (a failpoint killed it); reaps it. */
static int died(test_depot_t *d)
{
    int st;
    if (d->pid > 0 && waitpid(d->pid, &st, WNOHANG) == d->pid) {
        lns_test_untrack_pid(d->pid);
        d->pid = 0;
        return 1;
    }
    return d->pid <= 0;
}

static void mark(const run_t *r, int k)
{
    FILE *f = r->log ? fopen(r->log, "a") : NULL;
    if (f) {
        fprintf(f, "# %d\n", k);
        fclose(f);
    }
}

static test_depot_t *cur_d;
static const run_t *cur_r;

/* A crash met by a check's read, or the second refusal in a row: the depot restarted
 * without failpoints. */
static int revive_depot(int tries)
{
    lns_test_sleep_ms(20);
    if (!died(cur_d)) {
        if (tries < 2)
            return 0;
        lns_test_server_kill(&cur_d->srv, SIGKILL);
    }
    return start(cur_d, cur_r, 1);
}

/* The script once under r; the failures are counted and printed. */
static void run_script(const run_t *r)
{
    test_depot_t d;
    cur_d = &d;
    cur_r = r;
    revive = revive_depot;
    char why[1024];
    ibp_client_t *cl = new_client();
    memset(&model, 0, sizeof model);
    model.fz.a = -1;
    int started = cl && start(&d, r, 0) == 0;
    if (!started && cl && r->spec[0]) {
        /* A failpoint of the start itself (meta.reserve) may have killed it: start clean. */
        char log[4096];
        lns_test_slurp(d.log, log, sizeof log);
        if (strstr(log, ": SIGKILL"))
            started = start(&d, r, 1) == 0;
    }
    if (!started) {
        report(r, -1, "the depot did not start");
        ibp_client_free(cl);
        return;
    }
    for (int k = 0; k < NOPS; k++) {
        const op_t *op = &script[k];
        uint64_t seed = (uint64_t)k * 7919 + 1;
        if (op->kind == OP_EXPIRE && !r->expire)
            continue;
        mark(r, k);
        post = model;
        int must_fail = apply(op, &post, seed);
        if (must_fail < 0)
            continue;
        if (op->kind == OP_ALLOC)
            model.a[op->a].short_lived = post.a[op->a].short_lived = op->y == 1 && r->expire;
        /* A refused or cut WRITE over stored bytes may leave some of them. */
        static unsigned char wbytes[MAXA];
        model.fz.a = post.fz.a = -1;
        if (op->kind == OP_WRITE && op->x < model.a[op->a].size) {
            lns_test_fill(wbytes, op->y, seed);
            model.fz = (fuzzy_t){op->a, op->x, op->y, wbytes};
        }
        if (op->kind == OP_AWRITE && !must_fail) {
            const m_alloc_t *al = &model.a[op->a];
            if (al->aoff + op->x < model.a[al->master].size) {
                lns_test_fill(wbytes, op->y, seed);
                model.fz = (fuzzy_t){al->master, al->aoff + op->x, op->y, wbytes};
            }
        }
        loadck_why[0] = 0;
        int rc = exec_op(cl, &d, op, &model, seed);
        if (op->kind == OP_LOADCK && (rc == IBP_E_CHKSUM || loadck_why[0])) {
            report(r, k, loadck_why[0] ? loadck_why : "LOAD_CHKSUM answered -63");
            break;
        }
        if (op->kind == OP_ALLOC || op->kind == OP_CKALLOC || op->kind == OP_ALIAS)
            post.a[op->a].caps = model.a[op->a].caps;
        if (op->kind == OP_SPLIT)
            post.a[op->b].caps = model.a[op->b].caps;
        if (op->kind == OP_RENAME)
            post.a[op->a].caps = model.renamed;
        if (died(&d) || (rc != IBP_OK && (lns_test_sleep_ms(50), died(&d)))) {
            /* A crash during or after the request: the state before it or after it. */
            lns_test_server_kill(&d.srv, SIGKILL);
            if (start(&d, r, 1) != 0) {
                report(r, k, "the depot did not restart");
                break;
            }
            if (op->kind == OP_ALLOC || op->kind == OP_SPLIT || op->kind == OP_CKALLOC ||
                op->kind == OP_ALIAS) {
                int n = op->kind == OP_SPLIT ? op->b : op->a;
                post.a[n].used = 0; /* its capabilities may never have reached us */
                model.a[n].used = 0;
            }
            if (op->kind == OP_RENAME && rc != IBP_OK) {
                /* Before: the old capabilities work.  After: the new ones, which may never
                 * have reached us; then nothing we know reaches it any more. */
                char why3[sizeof why];
                if (check(cl, &model, why3, sizeof why3) != 0)
                    model.a[op->a].used = 0;
                post = model;
            }
            char why2[sizeof why];
            if (check(cl, &post, why, sizeof why) == 0)
                model = post;
            else if (check(cl, &model, why2, sizeof why2) != 0) {
                report(r, k, why2);
                break;
            }
            continue;
        }
        if (rc == IBP_OK && must_fail) {
            report(r, k, "the depot accepted a request it must refuse");
            break;
        }
        if (rc == IBP_OK)
            model = post;
        else if (!must_fail && !r->spec[0]) {
            snprintf(why, sizeof why, "refused without a fault: %s", ibp_strerror(rc));
            report(r, k, why);
            break;
        }
        if (check(cl, &model, why, sizeof why) != 0) {
            /* A point reached after the reply (the reaper, a delete's unlink) may have
             * crashed the depot meanwhile: then this request's state must survive it. */
            lns_test_sleep_ms(50);
            if (died(&d)) {
                if (start(&d, r, 1) != 0) {
                    report(r, k, "the depot did not restart");
                    break;
                }
                if (check(cl, &model, why, sizeof why) == 0)
                    continue;
            }
            report(r, k, why);
            break;
        }
    }
    /* What is on disk: a clean restart, the same state; then the database itself. */
    mark(r, NOPS);
    lns_test_server_stop(&d.srv);
    if (start(&d, r, 1) != 0)
        report(r, -1, "the depot did not restart at the end");
    else if (check(cl, &model, why, sizeof why) != 0)
        report(r, -1, why);
    lns_test_server_stop(&d.srv);
    if (check_db(&d, why, sizeof why) != 0)
        report(r, -1, why);
    if (!lns_test_server_log_clean(&d.srv))
        report(r, -1, "sanitizer report in the depot's log");
    revive = NULL;
    ibp_client_free(cl);
}

/* ---- the sweep ------------------------------------------------------------------------------ */

typedef struct triple {
    int op;             /* script index */
    int point;          /* index in points[] */
    int hit;            /* the point's hit number, counted from the depot's start */
} triple_t;

static triple_t *triples;
static int ntriples;

/* The clean run's log: "# k" before request k, a point's name each time it is reached. */
static void read_hits(const char *log, int reached[NPOINTS])
{
    FILE *f = fopen(log, "r");
    char line[128];
    int k = -1, count[NPOINTS] = {0};
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (line[0] == '#') {
            k = atoi(line + 2);
            continue;
        }
        for (int p = 0; p < NPOINTS; p++)
            if (!strcmp(line, points[p])) {
                count[p]++;
                reached[p] = 1;
                /* One triple per (request, point): its first hit in that request. */
                if (k >= 0 && k < NOPS && !(ntriples && triples[ntriples - 1].op == k &&
                                            triples[ntriples - 1].point == p)) {
                    int seen = 0;
                    for (int i = 0; i < ntriples; i++)
                        seen |= triples[i].op == k && triples[i].point == p;
                    if (!seen) {
                        triples = realloc(triples, (size_t)(ntriples + 1) * sizeof *triples);
                        triples[ntriples++] = (triple_t){k, p, count[p]};
                    }
                }
            }
    }
    if (f)
        fclose(f);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_fault_sweep(void)
{
    const char *soak = getenv("LNS_FAULT_SOAK"), *secs = getenv("LNS_FAULT_SECONDS");
    const char *seedenv = getenv("LNS_FAULT_SEED");
    int soaking = soak && *soak && strcmp(soak, "0");
    double budget = secs ? atof(secs) : soaking ? 600 : 12;
    unsigned seed = seedenv ? (unsigned)strtoul(seedenv, NULL, 10) : (unsigned)time(NULL);
    char log[PATH_MAX];
    run_t r;
    int reached[NPOINTS] = {0};

    /* LNS_FAULT_SPEC=SPEC: that one run (to repeat a failure), nothing else. */
    const char *only = getenv("LNS_FAULT_SPEC");
    if (only && *only) {
        memset(&r, 0, sizeof r);
        snprintf(r.spec, sizeof r.spec, "%s", only);
        r.expire = getenv("LNS_FAULT_EXPIRE") != NULL;
        r.durability_os = getenv("LNS_FAULT_OS") != NULL;
        run_script(&r);
        CU_ASSERT_EQUAL(failures, 0);
        return;
    }
    /* The clean run: nothing may fail, and it says where every point is reached. */
    snprintf(log, sizeof log, "%s", lns_test_path("fault-hits.log"));
    memset(&r, 0, sizeof r);
    r.log = log;
    r.expire = 1;
    run_script(&r);
    CU_ASSERT_EQUAL_FATAL(failures, 0);
    read_hits(log, reached);
    for (int p = 0; p < NPOINTS; p++)
        if (!reached[p]) {
            printf("  failpoint %s is never reached by the script\n", points[p]);
            CU_FAIL("a failpoint is never reached");
        }

    /* Every triple, in an order drawn from the seed, until the budget is spent. */
    int ntotal = ntriples * 3, nrun = 0, nrandom = 0;
    int *order = malloc((size_t)ntotal * sizeof *order);
    CU_ASSERT_FATAL(order != NULL);
    for (int i = 0; i < ntotal; i++)
        order[i] = i;
    srand(seed);
    for (int i = ntotal - 1; i > 0; i--) {
        int j = rand() % (i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    printf("  %d failpoints, %d (request, point) pairs, %d fault runs; seed %u"
           " (LNS_FAULT_SEED repeats the order)\n", NPOINTS, ntriples, ntotal, seed);
    double t0 = now_s();
    for (int i = 0; i < ntotal && (soaking || now_s() - t0 < budget * 0.75); i++) {
        const triple_t *t = &triples[order[i] / 3];
        memset(&r, 0, sizeof r);
        snprintf(r.spec, sizeof r.spec, "%s=%s@%d", points[t->point], actions[order[i] % 3],
                 t->hit);
        r.expire = script[t->op].kind == OP_EXPIRE;
        r.durability_os = order[i] % 2;
        run_script(&r);
        nrun++;
    }
    /* A point that fails every time it is reached: the checks' reads meet it too, and only a
     * restart without failpoints lets them through (random mode meets it now and then: a
     * read of six checksummed blocks is refused one time in three at 6% a block). */
    memset(&r, 0, sizeof r);
    snprintf(r.spec, sizeof r.spec, "cks.verify=eio@1+");
    run_script(&r);
    /* Random mode: any point may fail or crash, several in one run. */
    for (int i = 0; i == 0 || now_s() - t0 < budget; i++) {
        memset(&r, 0, sizeof r);
        snprintf(r.spec, sizeof r.spec, "random=%u/60/kill", seed + (unsigned)i);
        r.expire = i % 8 == 7;
        r.durability_os = i % 2;
        run_script(&r);
        nrandom++;
    }
    printf("  %d of %d fault runs and %d random runs in %.0f s: %d failed\n", nrun, ntotal,
           nrandom, now_s() - t0, failures);
    CU_ASSERT_EQUAL(failures, 0);
    free(order);
    free(triples);
}

/* A STORE whose "1 \n" cannot be sent (store.ack) is dropped, and so is its connection: the
 * client hears at once instead of sending its bytes into a connection that reads them as the
 * next request and waiting out its I/O timeout (10 s here) for an answer. */
static void test_store_ack_fails(void)
{
    test_depot_t d;
    ibp_caps_t a;
    ibp_probe_t p;
    unsigned char data[10] = "0123456789";
    ibp_client_t *cl = new_client();
    ibp_attr_t at = {4096, 600, IBP_HARD, IBP_BYTEARRAY};
    run_t r = {.spec = "store.ack=eio@1"};
    CU_ASSERT_FATAL(start(&d, &r, 0) == 0);
    CU_ASSERT_FATAL(ibp_allocate(cl, "127.0.0.1", d.port, "0", &at, &a) == IBP_OK);
    double t0 = now_s();
    CU_ASSERT_NOT_EQUAL(ibp_store(cl, a.write, data, sizeof data, NULL), IBP_OK);
    double took = now_s() - t0;
    CU_ASSERT(took < 5); /* at once: a hang bound, half the 10 s I/O timeout */
    if (took >= 5)
        printf("  the refused STORE took %.1f s\n", took);
    CU_ASSERT_EQUAL(ibp_probe(cl, a.manage, &p), IBP_OK);
    CU_ASSERT_EQUAL(p.cur_size, 0);
    CU_ASSERT_EQUAL(ibp_store(cl, a.write, data, sizeof data, NULL), IBP_OK);
    CU_ASSERT_EQUAL(ibp_probe(cl, a.manage, &p), IBP_OK);
    CU_ASSERT_EQUAL(p.cur_size, sizeof data);
    lns_test_server_finish(&d.srv);
    ibp_client_free(cl);
}

/* ---- the real thing: a full filesystem and a capacity larger than the disk ---------------- */

/* A resource declared far larger than its filesystem is capped to what it can hold, with a
 * warning in the log; STATUS CHANGE cannot raise it past that either. */
static void test_capacity_capped(void)
{
    test_depot_t d;
    ibp_depot_status_t st;
    char args[PATH_MAX + 64], log[8192];
    ibp_client_t *cl = new_client();
    snprintf(args, sizeof args, "--admin-password pw --resource %s/big,hard=900T,soft=100T",
             lns_test_tmpdir());
    CU_ASSERT_FATAL(td_start(&d, args) == 0);
    CU_ASSERT_EQUAL(ibp_status(cl, "127.0.0.1", d.port, "0", NULL, &st), IBP_OK);
    CU_ASSERT(st.hard_total > 0 && st.hard_total < (1ULL << 60));
    lns_test_slurp(d.log, log, sizeof log);
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "are declared; capped to hard"));
    uint64_t capped = st.hard_total;
    CU_ASSERT_EQUAL(ibp_status_change(cl, "127.0.0.1", d.port, "0", "pw", 900ULL << 40, 0, 0,
                                      &st), IBP_E_WOULD_EXCEED_LIMIT);
    CU_ASSERT_EQUAL(ibp_status(cl, "127.0.0.1", d.port, "0", NULL, &st), IBP_OK);
    CU_ASSERT_EQUAL(st.hard_total, capped);
    CU_ASSERT_EQUAL(ibp_status_change(cl, "127.0.0.1", d.port, "0", "pw", capped / 2, 0, 0,
                                      &st), IBP_OK);
    CU_ASSERT_EQUAL(ibp_status(cl, "127.0.0.1", d.port, "0", NULL, &st), IBP_OK);
    CU_ASSERT_EQUAL(st.hard_total, capped / 2);
    lns_test_server_finish(&d.srv);
    ibp_client_free(cl);
}

static char mnt[PATH_MAX];

static void unmount_tmpfs(void)
{
    char cmd[PATH_MAX + 64];
    if (mnt[0]) {
        snprintf(cmd, sizeof cmd, "umount -l '%s' 2>/dev/null", mnt);
        if (system(cmd) != 0)
            fprintf(stderr, "cannot unmount %s\n", mnt);
        mnt[0] = 0;
    }
}

/* Fill the filesystem of dir: a file written until ENOSPC. */
static void fill(const char *path)
{
    static char block[65536];
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    setvbuf(f, NULL, _IONBF, 0);
    while (fwrite(block, 1, sizeof block, f) == sizeof block)
        ;
    for (int i = 0; i < 4096 && fwrite(block, 1, 512, f) == 512; i++)
        ;
    fclose(f);
}

/* On a real full filesystem (a tmpfs of 24 MiB): a STORE that cannot be written is refused
 * and invisible, the acknowledged bytes stay, and the metadata still commits (the reserve),
 * so a DECR frees and an INCR counts; once space is back everything works, and a restart
 * finds the same state. */
static void test_full_filesystem(void)
{
    char cmd[PATH_MAX * 3], args[PATH_MAX + 64], filler[PATH_MAX + 16];
    static unsigned char data[1 << 20], back[1 << 20];
    test_depot_t d;
    ibp_caps_t a, b;
    ibp_probe_t p;
    snprintf(mnt, sizeof mnt, "%s/small", lns_test_tmpdir());
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && mount -t tmpfs -o size=24m tmpfs '%s' 2>/dev/null",
             mnt, mnt);
    if (geteuid() != 0 || system(cmd) != 0) {
        mnt[0] = 0;
        printf("SKIP test_depot_faults full filesystem: cannot mount a tmpfs here (needs root)\n");
        return;
    }
    atexit(unmount_tmpfs);
    ibp_client_t *cl = new_client();
    snprintf(args, sizeof args, "--resource %s/res,hard=12M,soft=0,reserve=4M", mnt);
    CU_ASSERT_FATAL(td_start(&d, args) == 0);
    ibp_attr_t big = {4 << 20, 600, IBP_HARD, IBP_BYTEARRAY}, small = {8192, 600, IBP_HARD,
                                                                         IBP_BYTEARRAY};
    lns_test_fill(data, sizeof data, 5);
    CU_ASSERT_FATAL(ibp_allocate(cl, "127.0.0.1", d.port, "0", &big, &a) == IBP_OK);
    CU_ASSERT_FATAL(ibp_allocate(cl, "127.0.0.1", d.port, "0", &small, &b) == IBP_OK);
    CU_ASSERT_EQUAL(ibp_store(cl, a.write, data, sizeof data, NULL), IBP_OK);
    CU_ASSERT_EQUAL(ibp_store(cl, b.write, data, 8192, NULL), IBP_OK);

    snprintf(filler, sizeof filler, "%s/filler", mnt);
    fill(filler);
    /* Refused, and invisible: the size and the bytes are the acknowledged ones. */
    CU_ASSERT_NOT_EQUAL(ibp_store(cl, a.write, data, sizeof data, NULL), IBP_OK);
    CU_ASSERT_EQUAL(ibp_probe(cl, a.manage, &p), IBP_OK);
    CU_ASSERT_EQUAL(p.cur_size, sizeof data);
    CU_ASSERT(ibp_load(cl, a.read, 0, sizeof data, back) == IBP_OK &&
              memcmp(back, data, sizeof data) == 0);
    /* Metadata still commits on the full filesystem. */
    CU_ASSERT_EQUAL(ibp_incr(cl, a.manage, IBP_READCAP), IBP_OK);
    CU_ASSERT_EQUAL(ibp_decr(cl, b.manage, IBP_READCAP), IBP_OK);
    CU_ASSERT_NOT_EQUAL(ibp_probe(cl, b.manage, &p), IBP_OK);
    CU_ASSERT_EQUAL(ibp_probe(cl, a.manage, &p), IBP_OK);
    CU_ASSERT_EQUAL(p.read_refs, 2);

    /* Space back: the STORE the client retries lands once, after the acknowledged bytes. */
    unlink(filler);
    CU_ASSERT_EQUAL(ibp_store(cl, a.write, data, sizeof data, NULL), IBP_OK);
    lns_test_server_stop(&d.srv);
    CU_ASSERT_FATAL(td_restart(&d) == 0);
    CU_ASSERT_EQUAL(ibp_probe(cl, a.manage, &p), IBP_OK);
    CU_ASSERT_EQUAL(p.cur_size, 2 * sizeof data);
    CU_ASSERT(ibp_load(cl, a.read, sizeof data, sizeof data, back) == IBP_OK &&
              memcmp(back, data, sizeof data) == 0);
    CU_ASSERT_NOT_EQUAL(ibp_probe(cl, b.manage, &p), IBP_OK);
    lns_test_server_finish(&d.srv);
    ibp_client_free(cl);
    unmount_tmpfs();
}

static const lns_test_case tests[] = {
    {"every failpoint, error and crash, invariants after each request", test_fault_sweep},
    {"a STORE whose acknowledgement fails: the client hears at once", test_store_ack_fails},
    {"a capacity larger than the filesystem is capped", test_capacity_capped},
    {"a full filesystem: stores refused, metadata commits", test_full_filesystem},
};
LNS_TEST_MAIN("depot_faults", tests)
