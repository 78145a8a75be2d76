/* lors.h -- liblors, the Logistical Runtime System: network files made of IBP allocations.
 *
 * liblors turns local bytes into an exNode (upload), an exNode back into bytes (download)
 * and, in later modules, adds and removes replicas (augment, trim), extends their lifetime
 * (refresh) and lists them (ls).  It talks to depots only through libibp (ibp.h) and builds
 * exNodes only through libexnode (xnd.h).  The lors_* command-line tools use nothing but
 * this header.
 *
 * Every call that can fail returns LORS_OK (0) or a negative lors_err; lors_strerror() gives
 * the words, and the call's report (where it has one) a line naming what failed.
 * See docs/lors.md.
 */
#ifndef LNS_LORS_H
#define LNS_LORS_H

#include <stddef.h>
#include <stdint.h>

#include "ibp.h"
#include "xnd.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum lors_err {
    LORS_OK = 0,
    LORS_E_NOMEM = -1,     /* out of memory */
    LORS_E_INVAL = -2,     /* a bad argument or option */
    LORS_E_DEPOT = -3,     /* a depot list or depot address that does not parse */
    LORS_E_NODEPOTS = -4,  /* no depot to use */
    LORS_E_READ = -5,      /* reading the input failed */
    LORS_E_SHORT = -6,     /* the input ended before the length it was said to have */
    LORS_E_PLACE = -7,     /* a fragment could not be stored on any depot */
    LORS_E_DIGEST = -8,    /* unknown checksum algorithm, or the digest library failed */
    LORS_E_EXNODE = -9,    /* building the exNode failed */
    LORS_E_THREAD = -10,   /* a thread could not be started */
    LORS_E_NO_REPLICA = -11, /* download: some byte has no live replica left */
    LORS_E_WRITE = -12     /* download: writing the output failed (EPIPE: the reader left) */
} lors_err;

/* Words for any code, including unknown ones.  Never NULL. */
const char *lors_strerror(int err);

/* ---- depots ------------------------------------------------------------------------------ */

/* One depot as the user names it: "host[:port][/rid]".  An IPv6 address goes in brackets
 * ("[::1]:6714"); the brackets are not kept in host.  rid "" means the depot's default. */
typedef struct lors_depot {
    char host[IBP_MAX_HOST];
    int port;                /* IBP_DEFAULT_PORT when not given */
    char rid[IBP_MAX_RID];
} lors_depot_t;

/* Parse one depot; LORS_OK or LORS_E_DEPOT.  Strict: port 1..65535 in decimal, no empty
 * host, rid of letters, digits, '-', '_' and '.'. */
int lors_depot_parse(const char *s, lors_depot_t *d);
/* Parse a list separated by commas and/or whitespace.  *out is malloc'd (free it); an empty
 * list is LORS_E_NODEPOTS.  On error err gets a line naming the bad entry. */
int lors_depot_list_parse(const char *s, lors_depot_t **out, size_t *n, char *err, size_t errlen);
/* "host:port" or "host:port/rid" ("[v6]:port" for IPv6) into buf. */
void lors_depot_format(const lors_depot_t *d, char *buf, size_t size);

/* ---- events (progress, the GUI) ------------------------------------------------------------ */

typedef enum lors_event_kind {
    LORS_EV_ALLOCATE = 1, /* an allocation was made for a copy of a fragment */
    LORS_EV_STORE_START,  /* a chunk [offset, offset+length) starts towards a depot */
    LORS_EV_STORE_END,    /* that chunk is stored there */
    LORS_EV_FAILURE,      /* a depot failed; the copy moves to moved_to (NULL: nowhere) */
    LORS_EV_COPY_DONE,    /* a copy of a fragment is complete */
    /* download: fragment = block index, copy = mapping index (exNode document order) */
    LORS_EV_FETCH_START,  /* a fetch of block [offset, offset+length) starts from depot */
    LORS_EV_FETCH_END,    /* ... it won: the block is done */
    LORS_EV_FETCH_FAIL,   /* ... it failed (op "LOAD", "TIMEOUT" or "CHECKSUM"; ibp_err) */
    LORS_EV_BAD_MAPPING,  /* mapping `copy` delivered bytes that do not match its digests */
    LORS_EV_WRITE         /* block [offset, offset+length) was written to the output */
} lors_event_kind;

typedef struct lors_event {
    lors_event_kind kind;
    const lors_depot_t *depot;    /* the depot concerned */
    const lors_depot_t *moved_to; /* LORS_EV_FAILURE only */
    int fragment, copy;           /* numbered from 0 */
    int64_t offset, length;       /* bytes of the file */
    int ibp_err;                  /* LORS_EV_FAILURE: what the depot or libibp said */
    const char *op;               /* LORS_EV_FAILURE: "ALLOCATE" or "STORE" */
} lors_event_t;

/* Called from the library's worker threads, one call at a time, never with a library lock
 * held other than the one that serializes events.  Keep it short; the pointers live only
 * for the call. */
typedef void (*lors_event_fn)(void *arg, const lors_event_t *ev);

/* ---- upload ---------------------------------------------------------------------------- */

#define LORS_DEFAULT_BLOCKSIZE (5 * 1024 * 1024)
#define LORS_DEFAULT_CHECKSUM_BLOCKSIZE (1024 * 1024)

typedef struct lors_upload_opts {
    const lors_depot_t *depots; /* where to store, in order of preference */
    size_t ndepots;
    int64_t blocksize;          /* fragment size when the length is unknown (-bs) */
    int copies;                 /* copies of each fragment (-c) */
    int fragments;              /* fragments per copy when the length is known (-F) */
    int64_t duration_s;         /* lifetime of the allocations; -1 = as long as each depot allows */
    int reliability;            /* IBP_HARD or IBP_SOFT */
    int threads;                /* parallel stores */
    int timeout_s;              /* longest wait of any one depot call */
    const char *checksum;       /* OpenSSL digest name ("sha256", "blake2b512"), or "none" */
    int64_t checksum_blocksize; /* bytes per digest */
    lors_event_fn on_event;     /* NULL: no events */
    void *event_arg;
} lors_upload_opts_t;

/* Defaults: blocksize 5 MiB, 1 copy, 4 fragments, duration 1 day, HARD, 4 threads,
 * timeout 180 s, "sha256" per 1 MiB.  No depots. */
void lors_upload_opts_init(lors_upload_opts_t *o);

/* Something that went wrong during an upload and was worked around (or was not). */
typedef struct lors_issue {
    lors_depot_t depot;    /* the depot that failed */
    int ibp_err;
    char op[16];           /* "ALLOCATE" or "STORE" */
    int fragment, copy;
    int64_t offset, length; /* the fragment's bytes */
    int moved;             /* 1: the copy went to moved_to; 0: nowhere left */
    lors_depot_t moved_to;
} lors_issue_t;

typedef struct lors_report {
    int64_t bytes_read;    /* read from the input, once */
    int64_t bytes_reread;  /* read again (regular files only) to restart a copy elsewhere */
    int64_t bytes_stored;  /* sent to depots and acknowledged, all copies, restarts included */
    int64_t size;          /* the file size */
    int fragments;
    int mappings;
    double seconds;
    lors_issue_t *issues;  /* malloc'd */
    size_t nissues;
    char error[512];       /* on failure: one line naming the fragment/byte range and why */
} lors_report_t;

/* Frees the issues; the report may be reused. */
void lors_report_free(lors_report_t *r);

/* Upload length bytes read from fd (-1: read until EOF) as a network file named filename
 * (may be NULL).  The input is read once, sequentially, from fd's current position; only
 * when a depot fails mid-fragment and the input is a regular file are that fragment's bytes
 * read again (with pread), otherwise they are kept in memory until all its copies are done.
 * On LORS_OK *out is a new exNode whose every copy of every fragment is complete.  On
 * failure *out is NULL, the allocations made are freed (DECR) and report->error says which
 * bytes could not be placed.  report may be NULL; when given it is filled in both cases
 * (free it with lors_report_free). */
int lors_upload_fd(const lors_upload_opts_t *o, int fd, int64_t length, const char *filename,
                   xnd_t **out, lors_report_t *report);
/* The same from memory. */
int lors_upload_buf(const lors_upload_opts_t *o, const void *buf, size_t len,
                    const char *filename, xnd_t **out, lors_report_t *report);

/* ---- download ------------------------------------------------------------------------- */

typedef struct lors_download_opts {
    int threads;              /* worker streams (-t) */
    int depot_cap;            /* most fetches per depot at once (-a) */
    int64_t blocksize;        /* block size (-bs); rounded up to the checksum block size */
    int redundancy;           /* most fetches of one block at once (-r R), 1..8; 1 = none */
    int progress;             /* later completions before a redundant fetch (-p P); 0 = none */
    int64_t buffer_bytes;     /* reorder buffer (-M); 0 = unlimited */
    int64_t prebuffer_bytes;  /* contiguous bytes ready before the first write (-q) */
    int64_t offset;           /* the sub-range: first byte (-O) */
    int64_t length;           /* ... and its length (-L); -1 = to the end of the file */
    int timeout_ms;           /* longest wait for any one read/write progress of a fetch */
    int stall_ms;             /* a fetch without progress this long gets a redundant one */
    int fail_limit;           /* consecutive failures after which a depot is given up; 0 never */
    int verify;               /* 1: check every block against its mapping's lns_checksum */
    lors_event_fn on_event;   /* NULL: no events */
    void *event_arg;
} lors_download_opts_t;

/* Defaults: 8 threads, cap 4 per depot, 1 MiB blocks, R 2, P 3, 64 MiB buffer, no
 * pre-buffer, the whole file, timeout 30 s, stall 10 s, fail limit 3, verify on. */
void lors_download_opts_init(lors_download_opts_t *o);

typedef struct lors_dl_depot {
    lors_depot_t depot;       /* host:port of the read capabilities */
    uint64_t fetches;         /* fetches started here (redundant ones included) */
    uint64_t blocks, bytes;   /* blocks won here and their bytes */
    double seconds;           /* time spent in fetches that won */
    double mbps;              /* bytes / seconds of the winning fetches, MB/s (1e6) */
    uint64_t failures;        /* fetches here that failed (any kind) */
    uint64_t bad_data;        /* ... of which delivered bytes that failed the checksum */
    uint64_t redundant_started, redundant_won;
    uint64_t wasted;          /* fetches here that lost a race and were cancelled */
} lors_dl_depot_t;

typedef struct lors_dl_report {
    int64_t offset, length;   /* the range asked for (length resolved) */
    int64_t bytes_written;    /* to out_fd: always a prefix of the range */
    int64_t bytes_fetched;    /* loaded from depots, losers and checksum padding included */
    double seconds;
    uint32_t blocks;
    int64_t blocksize;        /* after rounding to the checksum grid */
    int64_t peak_buffered;    /* most bytes of block buffers held at once */
    int64_t max_fetch_buffer; /* the largest single fetch buffer */
    lors_dl_depot_t *depots;  /* malloc'd */
    size_t ndepots;
    int *bad_mappings;        /* malloc'd: mapping indexes whose data failed the checksum */
    size_t nbad;
    int64_t missing_off, missing_len; /* LORS_E_NO_REPLICA: bytes no replica can serve */
    char error[512];          /* on failure: one line naming the byte range and why */
} lors_dl_report_t;

void lors_dl_report_free(lors_dl_report_t *r);

/* Download [o->offset, o->offset + o->length) of the network file x to out_fd, in order.
 * Blocks come from whichever replicas answer first (see docs/lors.md); each is checked
 * against the lns_checksum of the mapping it came from (o->verify).  On failure the bytes
 * written are a valid prefix of the range and report->error says why.  report may be NULL;
 * when given it is filled in both cases (free it with lors_dl_report_free).  x is only read
 * (it must not change during the call).  SIGPIPE is held back during the call: a reader
 * that went away is LORS_E_WRITE. */
int lors_download_fd(const lors_download_opts_t *o, const xnd_t *x, int out_fd,
                     lors_dl_report_t *report);

/* ---- end-to-end checksums ---------------------------------------------------------------- */

#define LORS_CHECKSUM_FUNC "lns_checksum"

/* Check a mapping's bytes (its logical range, data[0..logical_length)) against its
 * lns_checksum function.  LORS_OK, LORS_E_DIGEST if they differ, the function is malformed
 * or the algorithm unknown, LORS_E_INVAL if the mapping has no lns_checksum. */
int lors_checksum_verify(const xnd_mapping_t *m, const void *data, size_t len);

#ifdef __cplusplus
}
#endif
#endif
