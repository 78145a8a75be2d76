/* lors_download_int.h -- the download engine's state, shared by its two files.
 *
 * lors_download_plan.c turns an exNode and a range into blocks, replicas and a scheduler;
 * lors_download.c runs the streams, the writer and the call.  Internal to liblors.
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

typedef struct block {
    int64_t off, len;     /* real bytes of the file */
    unsigned char *buf;   /* done: the winner's buffer (NULL otherwise) */
    size_t data_off;      /* where the block's bytes start in buf */
    uint64_t won_fetch;   /* --netlog: the fetch that won it, and its depot */
    int won_depot;
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
    ibp_loader_t *ld;     /* its LOAD while it has one: what stop_slot_locked interrupts */
    int cancelled;        /* lost to another fetch of its block: drop it, never report it */
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
    int *map_depot;       /* per mapping: depot index, -1 when its read cap is unusable */
    ckinfo_t *ck;         /* per mapping */
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
    lns_evlog_t *netlog;  /* o->netlog_path open, else NULL: no fetch events */
    char netlog_run[40];  /* "<pid>.<n>": makes fetch ids unique in a shared log */
} dl_t;

/* Plan the download of [off, off+len) of dl->x: the depots of its read capabilities, each
 * mapping's checksum, and when len > 0 the block size, the blocks, dl->bufsz and the scheduler
 * with every block's replicas.  LORS_OK; LORS_E_NO_REPLICA (bytes no usable mapping holds) or
 * LORS_E_INVAL (more than LORS_DL_MAX_BLOCKS blocks) with dl->rep's error set, before any
 * block is planned; LORS_E_NOMEM, or LORS_E_INVAL from the scheduler. */
int lors__dl_plan(dl_t *dl, int64_t off, int64_t len);
/* The end of the call (lors_download_report.c): time, blocks, buffers, per-depot statistics,
 * and the bytes served below their copy count, into dl->rep (if any). */
void lors__dl_fill_report(dl_t *dl, uint64_t t0);
/* The worker streams to run: o->threads, or the automatic count for ndepots depots. */
int lors__dl_streams(const lors_download_opts_t *o, int ndepots);
/* The bytes a fetch of block b from mapping k loads: the block, widened to whole checksum
 * blocks of the mapping when it is verified. */
void lors__dl_fetch_range(const dl_t *dl, uint32_t b, int k, int64_t *fa, int64_t *fb);

#endif
