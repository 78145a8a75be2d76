/* lors_upload_int.h -- the upload engine's state, shared by its two files.
 *
 * lors_upload_engine.c is the reader and the result (entry points, input, exNode);
 * lors_upload_store.c holds the placement of copies on depots and the worker threads that
 * store them.  The data flow and the locking rule are described at the top of
 * lors_upload_engine.c.  Internal to liblors.
 */
#ifndef LNS_LORS_UPLOAD_INT_H
#define LNS_LORS_UPLOAD_INT_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include "lors.h"
#include "lors_lease_int.h"

#define CHUNK ((int64_t)1 << 20) /* bytes per STORE */
#define LORS_VERSION_NUMBER 0.82 /* the exNode dialect we write, as LoRS tools read it */

enum source_kind { SRC_MEM, SRC_FILE, SRC_STREAM };

typedef struct chunk {
    unsigned char *data; /* NULL once released */
    int64_t off;         /* in the file */
    int64_t len;
    int pending;         /* copies that have not stored it yet */
} chunk_t;

struct frag;

typedef struct stream {
    struct frag *f;
    int copy;
    int depot;      /* index into the depot list */
    int allocated;
    ibp_caps_t caps;
    int64_t start, end; /* epochs */
    int64_t alloc_len;
    int next;       /* next chunk to store */
    int ob_stored;  /* the fragment's outboard is stored after its chunks */
    int high;       /* chunks below this have been counted off their pending */
    int busy, done;
} stream_t;

typedef struct frag {
    int index;
    int64_t off;
    int64_t len;       /* bytes read so far; final once all_read */
    int64_t alloc_len; /* what each copy allocates */
    chunk_t *chunks;
    int nchunks_max, nread;
    int all_read;
    int copies_done;
    char *digests;     /* lowercase hex, once all_read ("" without checksums) */
    unsigned char *ob; /* the outboard (lors_b3tree.h), once all_read; NULL: none */
    size_t oblen;
    stream_t *streams;
} frag_t;

typedef struct up {
    const lors_upload_opts_t *o;
    ibp_client_t *ibp;
    lors__alive_t *alive;     /* the provisional leases kept alive (NULL: none) */
    lors_report_t *rep;
    pthread_mutex_t mu, evmu;
    pthread_cond_t cv;

    enum source_kind src;
    int fd;
    int64_t base;             /* SRC_FILE: position of the first byte */
    const unsigned char *mem; /* SRC_MEM */

    frag_t **frags;
    int nfrags, first_open;
    size_t capfrags;
    int reading_done;
    int err;                  /* first fatal error; stops everything */
    int *bad;                 /* per depot: failed during this upload */
    int *load;                /* per depot: streams placed there */
    int64_t live, budget;     /* bytes of chunks held, and the most the reader may hold */
    int64_t ob_bs;            /* the checksum block when copies hold an outboard, else 0 */
} up_t;


/* lors_upload_store.c */
double lors__up_now_s(void);
/* 1 once the caller's stop flag is set. */
int lors__up_stopped(const up_t *u);
/* Wait on u->cv (u->mu held); at most STOP_POLL_MS when the caller may stop the upload. */
void lors__up_wait(up_t *u);
int lors__up_choose_depot(const up_t *u, const stream_t *s);
void *lors__up_worker(void *arg);
void lors__up_fail_locked(up_t *u, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
