/* lors_download_int.h -- the download engine's state, shared by its two files.
 *
 * lors_download_plan.c turns an exNode and a range into blocks, replicas and a scheduler;
 * lors_download_engine.c runs the streams, the writer and the call.  Internal to liblors.
 *
 * The scheduler cuts its range into equal blocks; ours are not equal (they are cut at mapping
 * boundaries too).  So the scheduler sees a virtual file of nblocks x B bytes in which block i
 * is [i*B, (i+1)*B); only block indexes cross the boundary.  Its byte budget therefore counts
 * every block as B >= its real size: the memory bound still holds, and is never exceeded.
 */
#ifndef LNS_LORS_DOWNLOAD_INT_H
#define LNS_LORS_DOWNLOAD_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "lors.h"
#include "lors_sched.h"
#include "lns_log.h"
#include "lors_out.h"
#include "lors_func_int.h"

typedef struct block {
    int64_t off, len;     /* real bytes of the file */
    unsigned char *buf;   /* done: the winner's buffer (NULL otherwise) */
    size_t data_off;      /* where the block's bytes start in buf */
    uint64_t won_fetch;   /* --netlog: the fetch that won it, and its depot */
    int won_depot;
    int won_col;          /* erasure coded: the column (piece) whose bytes buf holds */
    unsigned char *part;  /* bytes kept from failed fetches of the block (a buffer), or NULL */
    int64_t part_fa;      /* ... the file offset of part[0] */
    size_t part_n;        /* ... how many bytes from there */
    int part_map;         /* ... the mapping they came from (-1: more than one) */
} block_t;

struct dl;

typedef struct fate {     /* what the download last learned of a mapping, or of a depot */
    int failed;           /* 1: its latest fetch failed (a cancelled one says nothing) */
    int ierr;             /* ... with this libibp error */
    const char *op;       /* ... this way: "LOAD", "TIMEOUT" or "CHECKSUM" */
} fate_t;

typedef struct slot {     /* one worker and its fetch in flight */
    struct dl *dl;
    uint64_t id;          /* 0: none */
    long claim;           /* erasure coded: the parity piece its fetch claims, -1: none */
    ibp_loader_t *ld;     /* its LOAD while it has one: what stop_slot_locked interrupts */
    int cancelled;        /* lost to another fetch of its block: drop it, never report it */
    int withdrawn;        /* ... or withdrawn (lors_sched_withdraw): its bytes may be kept */
    uint32_t block;       /* its fetch's block, and while it loads (replicated files): */
    unsigned char *buf;   /* ... its buffer (NULL: none), */
    int64_t fa;           /* ... the file offset of buf[0], */
    uint64_t got;         /* ... the bytes there from buf[0] on (a later fetch may copy them) */
    int map;              /* ... and their mapping (-1: more than one) */
    int aborted;          /* the watchdog saw it stall: fail it as TIMEOUT */
} slot_t;

typedef struct ckinfo {   /* a mapping's lns_checksum, parsed once */
    const char *alg, *digests;
    int64_t bs;
    int ok;
} ckinfo_t;

typedef struct dl {
    const lors_download_opts_t *o;
    const xnd_t *x;
    lors_dl_report_t *rep;
    ibp_client_t *ibp;
    lors_sched_t *s;
    block_t *blocks;
    uint32_t nblocks;
    int64_t B;            /* block size after rounding */
    int in_place;         /* o->in_place and an output that takes writes at any offset */
    int64_t range_off;    /* in_place: the range's first byte goes to out->fd at base */
    int64_t base;
    uint32_t write_events; /* in_place: WRITE events sent for blocks 0 .. write_events - 1 */
    int *map_depot;       /* per mapping: depot index, -1 when its read cap is unusable */
    ckinfo_t *ck;         /* per mapping */
    lors__func_t *fn;     /* per mapping: what its function means (lors_func_int.h) */
    fate_t *map_fate;     /* per mapping, and per depot: for the report's lost copies */
    fate_t *dep_fate;
    lors_depot_t *depots;
    double *won_seconds;
    uint64_t *won_bytes;
    int ndepots;
    slot_t *slots;
    int nthreads;
    pthread_mutex_t mu, evmu;
    pthread_cond_t cv;    /* idle workers wait here */
    pthread_cond_t wcv;   /* the writer waits here */
    int idle;             /* workers waiting on cv */
    int stop;             /* failure or write error: workers leave */
    int rc;
    size_t bufsz;         /* every fetch buffer's size: the longest fetch of the plan */
    void **chunks;        /* the allocations the buffers are carved from (freed at the end) */
    size_t nchunks, capchunks;
    unsigned char **freebufs; /* buffers not in use; room for every buffer carved */
    size_t nfree, capfree, ncarved;
    int64_t buffered, peak, fetched; /* bytes of buffers in use, and their peak */
    int nparts;           /* blocks holding a part (block_t.part) */
    /* erasure coded (lors_download_ec.c): NULL for a replicated file.  Block b is data
     * piece b % k of stripe ec_s0 + b / k; its replicas are that piece's mappings, then
     * parity pieces.  claims[(s - ec_s0) * m + j - k] counts the fetches in flight or won of
     * parity piece j of stripe s: one piece serves one block of its stripe. */
    const struct lors__ec *ec;
    struct lors__ec_col *ecol; /* per mapping */
    int64_t ec_s0;
    unsigned char *claims;
    uint32_t *claim_owner;      /* ... and the block whose fetches they are */
    unsigned char *open;        /* per block: its parity replicas are no longer held back */
    uint32_t ec_head;           /* the first block of the stripe the writer waits for */
    int *data_depot;            /* per block: the depot of its data piece (-1: none) */
    unsigned char *ec_dead;     /* per depot: a fetch there failed; its blocks were opened */
    unsigned char *scratch[16]; /* rebuilt data pieces (LORS_EC_MAX_M of them) */
    unsigned char *ec_busy;     /* per stripe: a fetch thread is decoding it (the writer waits) */
    lns_evlog_t *netlog;  /* o->netlog_path open, else NULL: no fetch events */
    char netlog_run[40];  /* "<pid>.<n>": makes fetch ids unique in a shared log */
    char tls_why[512];    /* mu: the first refused TLS handshake (a depot's key not its pin),
                             told when no replica is left */
} dl_t;

/* Plan the download of [off, off+len) of dl->x: the depots of its read capabilities, each
 * mapping's checksum, and when len > 0 the block size, the blocks, dl->bufsz and the scheduler
 * with every block's replicas.  LORS_OK; LORS_E_NO_REPLICA (bytes no usable mapping holds) or
 * LORS_E_INVAL (more than LORS_DL_MAX_BLOCKS blocks) with dl->rep's error set, before any
 * block is planned; LORS_E_NOMEM, or LORS_E_INVAL from the scheduler. */
int lors__dl_plan(dl_t *dl, int64_t off, int64_t len);
/* The scheduler for dl->nblocks blocks of dl->B (lors_download_plan.c), without replicas. */
int lors__dl_sched_new(dl_t *dl);
/* The end of the call (lors_download_report.c): time, blocks, buffers, per-depot statistics,
 * and the bytes served below their copy count, into dl->rep (if any). */
void lors__dl_fill_report(dl_t *dl, uint64_t t0);
/* A download that failed for bytes with no replica, LORS_E_NO_REPLICA, because the leases of
 * x (the whole file, or of those bytes) ended by the exNode's account: rep's error says that
 * and when, not which copies failed.  ec: an erasure-coded file, whose mappings' offsets are
 * not the file's bytes (only the whole file is judged). */
void lors__dl_note_expired(const xnd_t *x, int ec, lors_dl_report_t *rep);
/* The worker streams to run: o->threads, or the automatic count for ndepots depots. */
int lors__dl_streams(const lors_download_opts_t *o, int ndepots);
/* Where a fetch of block b from mapping k reads: aoff and len in the allocation (the block,
 * widened to whole checksum blocks of the mapping when it is verified; erasure coded: the
 * piece), the index of its first digest in the mapping's, where the block's bytes start in
 * what it reads, and the file offset of what it reads (the block's offset - data_off).
 * A mapping with a LoRS 1.3.1 chain (loci set): aoff and len are the stored bytes of its
 * plain blocks [b0, b1), which decode to `plain` bytes of the file from fa. */
typedef struct fetch_at {
    int64_t aoff;
    size_t len;
    size_t ck_first;
    size_t data_off;
    int64_t fa;
    const lors__loci_t *loci;
    int64_t b0, b1;
    size_t plain;
} fetch_at_t;
void lors__dl_fetch_at(const dl_t *dl, uint32_t b, int k, fetch_at_t *at);

/* Stop the download with rc and the report's line (the first failure wins).  With dl->mu. */
void lors__dl_fail_locked(dl_t *dl, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- erasure coded (lors_download_ec.c) ------------------------------------------------- */

/* Plan blocks and replicas of [off, off+len) of an erasure-coded file (dl->ec set). */
int lors__dl_plan_ec(dl_t *dl, int64_t off, int64_t len);
/* Worker, with dl->mu: 1 if fetch f may start (a parity piece no other block of its stripe
 * claims; the claim is taken and noted in sl), 0 if not (the caller fails it as bad data
 * for that block, quietly). */
int lors__dl_ec_claim_locked(dl_t *dl, slot_t *sl, const lors_sched_fetch_t *f);
/* The fetch in sl ended: a won claim keeps its piece for the block for good; a lost one
 * gives it back to the stripe's other blocks.  With dl->mu. */
void lors__dl_ec_unclaim_locked(dl_t *dl, slot_t *sl, int won);
/* Block b may use parity from now on.  With dl->mu. */
void lors__dl_ec_open_locked(dl_t *dl, uint32_t b);
/* Fetch f failed (kind): a failed data piece opens its block, a failed depot every block
 * whose data piece it holds.  With dl->mu. */
void lors__dl_ec_fetch_failed_locked(dl_t *dl, const lors_sched_fetch_t *f, int kind);
/* Writer, with dl->mu: the stripe starting at block b holds up the output; if some of its
 * blocks are done and others not, those may use parity from now on (1: some were opened). */
int lors__dl_ec_late_locked(dl_t *dl, uint32_t b);
/* Writer, with dl->mu: 1 if every block of the stripe starting at block b is done. */
int lors__dl_ec_stripe_done_locked(const dl_t *dl, uint32_t b);
/* The fetch thread that completes a stripe decodes it, so that decoding and checking the
 * rebuilt pieces run on the fetch threads, in parallel, not one stripe after another in the
 * writer.  With dl->mu: the number of data pieces the stripe of block b lacks (its blocks all
 * done, some with a piece not their own) and no one decodes it yet: then it is marked busy
 * and the caller, without dl->mu, passes that many free buffers to
 * lors__dl_ec_decode_stripe.  0: nothing to do. */
int lors__dl_ec_take_decode_locked(dl_t *dl, uint32_t b);
/* Without dl->mu, on a busy stripe: rebuild its missing data pieces into fresh[] and check
 * them against their digests; piece[i] (i < k) gets the buffer that holds data piece i (a
 * block's or a fresh one).  0, -EBADMSG (does not decode) or -EILSEQ (digest mismatch). */
int lors__dl_ec_decode_stripe(dl_t *dl, uint32_t b, unsigned char **fresh, unsigned char **piece);
/* Writer, without dl->mu: rebuild the stripe's missing data pieces (if any) and write its
 * blocks to out.  0, or -errno of the write, or LORS_E_E2E-like -EBADMSG if it cannot decode. */
int lors__dl_ec_write_stripe(dl_t *dl, uint32_t b, const lors__out_t *out);
/* The line naming the stripes that cannot be read any more, for a block that failed. */
void lors__dl_ec_fail_locked(dl_t *dl, uint32_t b);
void lors__dl_ec_free(dl_t *dl);

#endif
