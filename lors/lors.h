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

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "ibp.h"
#include "xnd.h"

#pragma GCC visibility push(default) /* the library's exports: what this header declares */

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
    LORS_E_WRITE = -12,    /* download: writing the output failed (EPIPE: the reader left) */
    LORS_E_KEY = -13,      /* e2e: no key, a malformed key, or not the key the file was encrypted with */
    LORS_E_E2E = -14,      /* e2e: transformed data that does not decode (tag or zlib failure) */
    LORS_E_UNSAFE = -15,   /* trim: would leave bytes with no copy at all (force to do it anyway) */
    LORS_E_PARTIAL = -16,  /* refresh/trim: some mappings could not be handled (the report lists them) */
    LORS_E_RC = -17,       /* the rc file does not parse (the message names file and line) */
    LORS_E_STOPPED = -18,  /* upload, augment, download: stopped when the caller's stop flag was set */
    LORS_E_NOTFOUND = -19  /* lors_dir: no network file of that name */
} lors_err;

/* Words for any code, including unknown ones.  Never NULL. */
const char *lors_strerror(int err);

/* ---- depots ------------------------------------------------------------------------------ */

/* One depot as the user names it: "host[:port][/rid][#sha256:<64 hex>]".  An IPv6 address
 * goes in brackets ("[::1]:6714"); the brackets are not kept in host.  rid "" means the
 * depot's default.  The pin, when given, is the depot's TLS identity (its log and STATUS say
 * it): lors_depot_pins_use gives it to libibp before any connection. */
typedef struct lors_depot {
    char host[IBP_MAX_HOST];
    int port;                /* IBP_DEFAULT_PORT when not given */
    char rid[IBP_MAX_RID];
    char pin[IBP_PIN_LEN];   /* "sha256:<64 hex>", "" when not given */
    char place[64];          /* where it is, as the L-Bone said (its place, else "lat,lon" to
                              * 0.1 degree); "" unknown.  New copies of one range go to
                              * different places where they can (lors_augment). */
} lors_depot_t;

/* Parse one depot; LORS_OK or LORS_E_DEPOT.  Strict: port 1..65535 in decimal, no empty
 * host, rid of letters, digits, '-', '_' and '.', a pin "sha256:" and 64 lowercase hex
 * digits. */
int lors_depot_parse(const char *s, lors_depot_t *d);
/* Parse a list separated by commas and/or whitespace.  *out is malloc'd (free it); an empty
 * list is LORS_E_NODEPOTS.  On error err gets a line naming the bad entry. */
int lors_depot_list_parse(const char *s, lors_depot_t **out, size_t *n, char *err, size_t errlen);
/* "host:port" or "host:port/rid" ("[v6]:port" for IPv6) into buf; without the pin. */
void lors_depot_format(const lors_depot_t *d, char *buf, size_t size);
/* Give libibp the pins of d[0..n) that have one (ibp_tls_pin), so that the first connection
 * to each of those depots is already sealed and checked -- no trust on first use -- and one
 * with another key is refused (IBP_E_TLS_PIN) before any capability is sent.  A pin an
 * exNode records for the same depot (lors_pins_use) replaces it when that exNode is read. */
void lors_depot_pins_use(const lors_depot_t *d, size_t n);

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
    LORS_EV_WRITE,        /* block [offset, offset+length) was written to the output */
    /* augment */
    LORS_EV_SEND_START,   /* a depot-to-depot copy of [offset, offset+length) from depot to moved_to */
    LORS_EV_SEND_END,     /* ... it is complete */
    LORS_EV_RELAY,        /* SEND failed; [offset, offset+length) is relayed through the client
                           * from depot to moved_to (ibp_err: why SEND failed) */
    /* trim and refresh: fragment = copy = the mapping's number (document order, before the
     * trim); offset/length = its bytes of the file; depot = its depot */
    LORS_EV_TRIM,         /* the mapping was removed from the exNode; freed says what became
                           * of its allocation (0: op "DECR" or "NOCAP" and ibp_err say why) */
    LORS_EV_REFRESH,      /* the mapping's end went from old_end to new_end (as the depot now
                           * reports it); one that failed is a LORS_EV_FAILURE instead, op
                           * "CHANGE", "PROBE", "NOCAP" (no manage capability) or "PAST" */
    /* keep: fragment = column, copy = the mapping replaced, depot = its depot */
    LORS_EV_REBUILD       /* the column's pieces of [offset, offset+length) were decoded from
                           * survivors (op "DECODE") or sent off a leaving depot (op "SEND")
                           * and stored on moved_to; a failed try is a LORS_EV_FAILURE with
                           * op "REBUILD" (ibp_err) */
} lors_event_kind;

typedef struct lors_event {
    lors_event_kind kind;
    const lors_depot_t *depot;    /* the depot concerned */
    const lors_depot_t *moved_to; /* LORS_EV_FAILURE only */
    int fragment, copy;           /* numbered from 0 */
    int64_t offset, length;       /* bytes of the file */
    int ibp_err;                  /* LORS_EV_FAILURE: what the depot or libibp said */
    const char *op;               /* LORS_EV_FAILURE: "ALLOCATE", "STORE" or "SEND" (refresh:
                                   * see LORS_EV_REFRESH; trim: LORS_EV_TRIM) */
    int freed;                    /* LORS_EV_TRIM: 1 freed (or already gone), 0 not (op, ibp_err),
                                   * -1 not asked (no free_allocs) */
    int64_t old_end, new_end;     /* LORS_EV_REFRESH: epochs; XND_TIME_UNKNOWN if not known */
} lors_event_t;

/* Called from the library's worker threads, one call at a time, never with a library lock
 * held other than the one that serializes events.  Keep it short; the pointers live only
 * for the call. */
typedef void (*lors_event_fn)(void *arg, const lors_event_t *ev);

/* ---- upload ---------------------------------------------------------------------------- */

#define LORS_DEFAULT_BLOCKSIZE (5 * 1024 * 1024)
#define LORS_DEFAULT_CHECKSUM_BLOCKSIZE (1024 * 1024)
/* How long a depot may show no life inside a call of upload, augment, refresh, trim, probe
 * and discard (no byte of an answer, none of ours leaving the socket's send queue) before the
 * call fails as IBP_E_CLIENT_TIMEOUT and the work moves on (libibp's stall_ms): a stopped
 * depot accepts connections into its kernel backlog and then says nothing, and must not hold
 * a program for its whole timeout.  A link that is slow but moving never counts. */
#define LORS_STALL_MS 5000

/* The frame of a chain with a compressor when e2e_blocksize is 0: zstd's level-3 window is
 * 2 MiB, and frames of 4 MiB, each compressed on its own, store within 4 % of one zstd stream
 * of the whole file (1 MiB frames: 36 % more; docs/PERFORMANCE.md, "Compression"). */
#define LORS_E2E_PACK_FRAME ((int64_t)4 << 20)

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
    const char *checksum;       /* "blake3" (the default), an OpenSSL digest name ("sha256",
                                 * "blake2b512"), or "none" */
    int64_t checksum_blocksize; /* bytes per digest */
    int outboard;               /* 1 (the default): with "blake3" in checksum blocks over
                                 * 16 KiB, each copy also holds its blocks' 16 KiB chaining
                                 * values after the data (2 KiB per MiB), so that a small read
                                 * is checked without its whole block (docs/lors.md, "Small
                                 * verified reads"); 0: none */
    lors_event_fn on_event;     /* NULL: no events */
    void *event_arg;
    /* end-to-end transforms (docs/lors.md, "End-to-end transforms"): applied to frames of
     * e2e_blocksize plain bytes, in the order named, before striping.  NULL or "" = none. */
    const char *e2e;            /* "zstd", "zlib", "aes", "zstd,aes", "aes,zstd", "zlib,aes"...
                                 * (-z: zstd, -a, --e2e); at most one of zstd and zlib */
    int64_t e2e_blocksize;      /* plain bytes per frame (-E); 0 = 1 MiB, or
                                 * LORS_E2E_PACK_FRAME when the chain compresses */
    int e2e_level;              /* the compressor's level (--level): zstd 1..19, zlib 1..9
                                 * (lors_e2e_level_max); 0: zstd 3, zlib 6 */
    const unsigned char *key;   /* LORS_KEY_BYTES bytes; needed when e2e names "aes" */
    /* Stopping (an interrupt): once *stop is nonzero -- a signal handler may set it -- the
     * call stops within about 100 ms, after the depot calls in flight (each bounded by
     * timeout_s), and fails with LORS_E_STOPPED; what it allocated is freed as on any
     * failure.  NULL: never stops. */
    const volatile sig_atomic_t *stop;
    /* upload only, not with e2e: on a failure or a stop, *out gets an exNode of the fragments
     * whose every copy is complete (the size: the input's length, or the bytes read from a
     * pipe), and only the rest is freed.  None complete: *out NULL, all freed. */
    int keep_partial;
    /* erasure coding (docs/lors.md, "Erasure coding"): ec_k > 0 stores each stripe of
     * ec_k x ec_piece bytes as ec_k data and ec_m parity pieces on ec_k + ec_m distinct depots
     * instead of `copies` copies (copies and e2e must be left at 1 and none).  ec_piece 0:
     * 1 MiB.  fragments (-F) counts each column's allocations when the length is known;
     * otherwise each holds about blocksize (-bs) bytes. */
    int ec_k, ec_m;
    int64_t ec_piece;
    /* upload, augment (and the keeper's copies): 0 (the default) allocates for duration_s at
     * once.  Above 0 and below duration_s, new allocations first live provisional_s and are
     * kept alive (extended to provisional_s again every third of it) while the call runs;
     * the exNode returned carries those ends, and the caller extends them to duration_s with
     * lors_lease_extend once that exNode is safe (written), so an allocation that a SIGKILLed
     * process never recorded in an exNode ends within provisional_s. */
    int64_t provisional_s;
} lors_upload_opts_t;

/* Defaults: blocksize 5 MiB, 1 copy, 4 fragments, duration 1 day, HARD, 4 threads,
 * timeout 180 s, "blake3" per 1 MiB.  No depots. */
void lors_upload_opts_init(lors_upload_opts_t *o);

/* What a call freed when it gave up (upload, augment) or was asked to (lors_discard):
 * allocations DECRed to nothing (or already gone) on how many depots, and those whose DECR
 * failed, which stay until they expire. */
typedef struct lors_freed {
    int freed;
    int depots;
    int unfreed;
} lors_freed_t;

/* Something that went wrong during an upload and was worked around (or was not). */
typedef struct lors_issue {
    lors_depot_t depot;    /* the depot that failed */
    int ibp_err;
    char op[16];           /* "ALLOCATE", "STORE" or "SEND" */
    int fragment, copy;
    int64_t offset, length; /* the fragment's bytes */
    int moved;             /* 1: the copy went to moved_to; 0: nowhere left */
    lors_depot_t moved_to;
    int relayed;           /* augment: 1 if the bytes then went through the client instead */
    char why[320];         /* a refused TLS handshake (IBP_E_TLS_PIN, IBP_E_TLS): libibp's line
                            * (ibp_tls_error: the depot, and for a pin both pins); else "" */
} lors_issue_t;

typedef struct lors_report {
    int64_t bytes_read;    /* read from the input, once */
    int64_t bytes_reread;  /* read again (regular files only) to restart a copy elsewhere */
    int64_t bytes_stored;  /* sent to depots and acknowledged, all copies, restarts included */
    int64_t size;          /* the file size */
    int fragments;
    int mappings;
    double seconds;
    int64_t bytes_sent;    /* augment: copied depot to depot (IBP SEND) */
    int64_t bytes_relayed; /* augment: copied through this client where SEND failed */
    int64_t bytes_rebuilt; /* augment of an erasure-coded file: pieces decoded from survivors
                            * and stored */
    int64_t plain_size;    /* e2e: the file's size before the transforms (= size without) */
    int64_t frame_size;    /* e2e: plain bytes per frame (e2e_blocksize or its default); 0
                            * without */
    lors_issue_t *issues;  /* malloc'd */
    size_t nissues;
    lors_freed_t freed;    /* on failure: what the call had allocated and freed again */
    char error[512];       /* on failure: one line naming the fragment/byte range and why */
} lors_report_t;

/* Frees the issues; the report may be reused. */
void lors_report_free(lors_report_t *r);

/* Upload length bytes read from fd (-1: read until EOF) as a network file named filename
 * (may be NULL).  The input is read once, sequentially, from fd's current position; only
 * when a depot fails mid-fragment and the input is a regular file are that fragment's bytes
 * read again (with pread), otherwise they are kept in memory until all its copies are done.
 * On LORS_OK *out is a new exNode whose every copy of every fragment is complete.  On
 * failure *out is NULL (unless o->keep_partial), the allocations made are freed (DECR;
 * report->freed counts them) and report->error says which bytes could not be placed.
 * report may be NULL; when given it is filled in both cases (free it with
 * lors_report_free). */
int lors_upload_fd(const lors_upload_opts_t *o, int fd, int64_t length, const char *filename,
                   xnd_t **out, lors_report_t *report);
/* The same from memory. */
int lors_upload_buf(const lors_upload_opts_t *o, const void *buf, size_t len,
                    const char *filename, xnd_t **out, lors_report_t *report);

/* Free every allocation of x: a DECR of the read count with each mapping's manage
 * capability, `threads` at once, each bounded by timeout_s (at most 10 s); after a depot
 * fails to answer, its other allocations are counted unfreed without asking it again, so
 * the call ends in bounded time.  The undo of an upload or augment whose exNode cannot be
 * kept.  LORS_OK, or LORS_E_PARTIAL when some could not be freed (out says how many). */
int lors_discard(const xnd_t *x, int threads, int timeout_s, lors_freed_t *out);

/* ---- download ------------------------------------------------------------------------- */

/* A run of bytes of a file. */
typedef struct lors_span {
    int64_t off, len;
} lors_span_t;

typedef struct lors_download_opts {
    int threads;              /* worker streams (-t); 0: automatic, up to depots x depot_cap
                               * (at most 64), each depot starting with its share of 8 and
                               * given more where its latency calls for them */
    int depot_cap;            /* most fetches per depot at once (-a) */
    int64_t blocksize;        /* block size (-bs); rounded up to the checksum block size */
    int redundancy;           /* most fetches of one block at once (-r R), 1..8; 1 = none */
    int progress;             /* later completions before a redundant fetch (-p P); 0 = none */
    int64_t buffer_bytes;     /* reorder buffer (-M); 0 = unlimited */
    int64_t prebuffer_bytes;  /* contiguous bytes ready before the first write (-q) */
    /* 1: when out_fd is a regular file (not O_APPEND) or a block device, each block is written
     * at its place (pwrite, from the fd's position on) as soon as it is checked, in any
     * order, so one slow block holds up nothing and the buffer bounds only the blocks in
     * flight; no pre-buffer.  The fd is left after the written prefix (bytes_prefix).  A run
     * that ends early leaves the blocks after the prefix written too, and holes: -R must then
     * check the file against its checksums.  0: in order, as to a pipe. */
    int in_place;
    /* in_place: the range's bytes an earlier run wrote already, file offsets (what
     * lors_download -R reads back from its control file): blocks wholly inside them are
     * neither fetched nor written, and count as written.  NULL: none. */
    const lors_span_t *have;
    size_t nhave;
    /* in_place: called by the calling thread after each block is written at its place, in
     * any order (what a control file records), and with len 0 at least every 100 ms while
     * the download runs (a chance to save that record); NULL: none. */
    void (*on_placed)(void *arg, int64_t off, int64_t len);
    void *placed_arg;
    int64_t offset;           /* the sub-range: first byte (-O) */
    int64_t length;           /* ... and its length (-L); -1 = to the end of the file */
    int timeout_ms;           /* longest wait for any one read/write progress of a fetch */
    int stall_ms;             /* a fetch without progress this long gets a redundant one */
    int fail_limit;           /* consecutive failures after which a depot is given up; 0 never */
    int verify;               /* 1: check every block against its mapping's lns_checksum */
    lors_event_fn on_event;   /* NULL: no events */
    void *event_arg;
    const unsigned char *key; /* LORS_KEY_BYTES bytes: for files whose e2e chain has "aes" */
    const char *netlog_path;  /* NetLogger event log of every fetch (docs/netlogger.md), appended
                               * to, or "fd:N"; NULL: none (and no cost) */
    /* Once *stop is nonzero the call ends within about 100 ms (LORS_E_STOPPED, the bytes
     * written a prefix of the range).  NULL: never stops. */
    const volatile sig_atomic_t *stop;
    /* NULL: the call makes its own client, and connections, and closes them at the end.
     * Else its pooled connections are used and left in its pool for the next call (the
     * random-access reader runs many short downloads); its timeouts are the client's. */
    ibp_client_t *client;
} lors_download_opts_t;

/* Defaults: automatic threads, cap 4 per depot, 1 MiB blocks, R 2, P 3, 64 MiB buffer, no
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
    uint64_t wasted;          /* fetches here cancelled: they lost a race, or were withdrawn
                               * for a scarcer class (docs/scheduler.md) */
    char failed[64];          /* "" unless the download stopped counting on this depot: its
                               * latest fetch failed (why: "cannot connect to the depot", "no
                               * answer in time", "timed out", ...) or a mapping on it failed
                               * its checksum ("bad data") or its latest fetch */
} lors_dl_depot_t;

/* Bytes of the range that were served while some of their copies failed: the data is right,
 * but fewer copies of it are left than the exNode lists (lost redundancy). */
typedef struct lors_dl_degraded {
    int64_t offset, length;   /* bytes of the file (plain bytes for a transformed file) */
    int copies;               /* the mappings holding them that the download could read */
    int left;                 /* ... less those found failing at the end: a mapping whose
                               * latest fetch failed, or on a depot whose latest fetch failed */
} lors_dl_degraded_t;

typedef struct lors_dl_report {
    int64_t offset, length;   /* the range asked for (length resolved) */
    int64_t bytes_written;    /* to out_fd: a prefix of the range, except with in_place */
    int64_t bytes_prefix;     /* the range's bytes from its start that are all written */
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
    lors_dl_degraded_t *degraded; /* malloc'd, in file order: where fewer copies are left than
                               * the exNode lists (empty when no fetch failed for good) */
    size_t ndegraded;
    int erasure_coded;        /* 1: degraded counts the pieces of each stripe, not copies */
} lors_dl_report_t;

void lors_dl_report_free(lors_dl_report_t *r);

/* The most blocks one download plans (2^22: 4 TiB of 1 MiB blocks); the plan's memory is
 * about 100 bytes a block. */
#define LORS_DL_MAX_BLOCKS (1u << 22)

/* Download [o->offset, o->offset + o->length) of the network file x to out_fd, in order.
 * Blocks come from whichever replicas answer first (see docs/lors.md); each is checked
 * against the lns_checksum of the mapping it came from (o->verify).  A range with bytes no
 * mapping holds fails at once (LORS_E_NO_REPLICA, before anything is fetched), as does one
 * of more than LORS_DL_MAX_BLOCKS blocks (LORS_E_INVAL: a larger blocksize or a smaller
 * range).  On failure the bytes written are a valid prefix of the range and report->error
 * says why; on success report->degraded lists the bytes served below their copy count.  report may be NULL;
 * when given it is filled in both cases (free it with lors_dl_report_free).  x is only read
 * (it must not change during the call).  SIGPIPE is held back during the call: a reader
 * that went away is LORS_E_WRITE. */
int lors_download_fd(const lors_download_opts_t *o, const xnd_t *x, int out_fd,
                     lors_dl_report_t *report);

/* ---- random access (lors_reader.c) ------------------------------------------------------ */

/* A bounded cache of file blocks, shared by any number of readers (one per network file),
 * and the connections their fetches share.  Thread-safe. */
typedef struct lors_cache lors_cache_t;

typedef struct lors_cache_opts {
    int64_t bytes;            /* the most bytes of blocks held, loading or loaded (64 MiB) */
    int max_jobs;             /* the most fetches (downloads of a run of blocks) at once (16) */
    int timeout_ms;           /* the connections' I/O timeout (30 s) */
} lors_cache_opts_t;

void lors_cache_opts_init(lors_cache_opts_t *o);
/* NULL with errno (EINVAL: a bound < 1; ENOMEM).  o NULL: the defaults. */
lors_cache_t *lors_cache_new(const lors_cache_opts_t *o);
/* After every reader on it is closed. */
void lors_cache_free(lors_cache_t *c);

typedef struct lors_cache_stats {
    int64_t bytes, peak, limit; /* blocks held now, the most held at once (blocks and pool),
                                 * the bound (blocks and pool) */
    int64_t pooled;             /* buffers of dropped blocks kept for the next ones (at most
                                 * a quarter of the bound) */
    uint64_t hits, misses;      /* blocks a read found loaded / had to wait for */
    int jobs;                   /* fetches running now */
    uint64_t fetches;           /* fetches started */
    uint64_t cancelled, failed; /* ... stopped by a seek or a close / failed */
    uint64_t evictions;
    uint64_t fetched_bytes;     /* loaded from depots by the fetches that ended */
    uint64_t small;             /* reads answered through an outboard, without the cache
                                 * (docs/lors.md, "Small verified reads") */
} lors_cache_stats_t;
void lors_cache_stats(lors_cache_t *c, lors_cache_stats_t *st);

typedef struct lors_reader lors_reader_t; /* one network file, open for random access */
typedef struct lors_stream lors_stream_t; /* one client's reads of it, and their read-ahead */

typedef struct lors_reader_opts {
    lors_download_opts_t dl;  /* every fetch's: verify, key, redundancy, cap, blocksize,
                               * timeouts, events, netlog; offset, length, buffers, stop and
                               * client are the reader's own */
    int64_t block;            /* the cache's block: 0 = 1 MiB, or a transformed file's frame
                               * or an erasure-coded file's piece if larger */
    int64_t readahead;        /* the most bytes a sequential stream is read ahead (16 MiB);
                               * 0: none */
} lors_reader_opts_t;

void lors_reader_opts_init(lors_reader_opts_t *o);
/* Open x (replicated, erasure coded, compressed, encrypted) for reading through cache (NULL:
 * a cache of its own with the defaults).  x must stay as it is until lors_reader_close.
 * NULL with a line in err: a malformed exNode, an encrypted file without o->dl.key, a cache
 * smaller than 4 blocks, out of memory.  Nothing is fetched yet. */
lors_reader_t *lors_reader_open(const lors_reader_opts_t *o, const xnd_t *x, lors_cache_t *cache,
                                char *err, size_t errlen);
/* The file's size (plain bytes). */
int64_t lors_reader_size(const lors_reader_t *r);
/* Stops its fetches (within about 100 ms) and drops its blocks; no read may be in progress
 * on it. */
void lors_reader_close(lors_reader_t *r);

/* NULL: out of memory. */
lors_stream_t *lors_stream_open(lors_reader_t *r);
/* Stops the stream's read-ahead that no other read waits for. */
void lors_stream_close(lors_stream_t *s);
/* The stream will read nothing at or past end (an HTTP range's end): its read-ahead stops
 * there.  Default: the file's end. */
void lors_stream_set_end(lors_stream_t *s, int64_t end);
/* Up to len bytes at off into buf: the bytes read (len, fewer only at the end of the file,
 * 0 at or past it), or -1 (*rc the LORS_E_ code, err the engine's line naming the bytes it
 * could not get: LORS_E_NO_REPLICA when no live copy is left).  A short count with *rc set
 * means the bytes after it failed.  Reads that follow each other are read ahead; a read
 * elsewhere stops that read-ahead.  One thread at a time per stream; any number of streams
 * of any readers at once. */
int64_t lors_stream_pread(lors_stream_t *s, void *buf, size_t len, int64_t off, int *rc,
                          char *err, size_t errlen);
/* A read on a stream of its own: no read-ahead. */
int64_t lors_reader_pread(lors_reader_t *r, void *buf, size_t len, int64_t off, int *rc,
                          char *err, size_t errlen);

/* ---- a directory of network files (lors_dir.c) ----------------------------------------- */

/* The exNodes that lors_serve and lors_mount show: those of directories (NAME.xnd shows as
 * NAME) and single exNode files, each opened as a reader on one shared cache at first use and
 * kept while its exNode file is unchanged.  An exNode rewritten in place (lors_augment,
 * lors_keep) is opened anew at the next lors_dir_get; holders of the old one go on reading it,
 * and it is freed when the last lets it go.  At most LORS_DIR_KEEP files stay open for the
 * next lookup (the least recently used go first; held ones stay for their holders), found by
 * a hash of the name.  Thread-safe. */
typedef struct lors_dir lors_dir_t;

#define LORS_DIR_KEEP 1024

typedef struct lors_dir_file {
    const char *name;         /* as shown: the exNode file's base name without ".xnd" */
    const char *path;         /* the exNode file */
    const xnd_t *x;
    lors_reader_t *r;
    int64_t size;             /* the file's (plain bytes) */
    struct timespec mtime;    /* the exNode file's modification time */
    char tag[40];             /* "\"<32 hex digits>\"": the first 128 bits of the SHA-256 of the
                               * exNode's bytes, an HTTP entity tag that changes with them;
                               * mtime, tag and x all from one open of the file */
} lors_dir_file_t;

/* ro and cache are used for every reader (cache is not owned); NULL: out of memory. */
lors_dir_t *lors_dir_new(const lors_reader_opts_t *ro, lors_cache_t *cache);
/* Show path: a directory's exNodes, or one exNode file.  LORS_OK, or LORS_E_READ with a line
 * in err (not found, neither a directory nor a file), LORS_E_NOMEM. */
int lors_dir_add(lors_dir_t *d, const char *path, char *err, size_t errlen);
/* The file shown as name: a new reference, or NULL with *rc LORS_E_NOTFOUND (no such name;
 * names with '/' or a leading '.' are never found), else the failure to read the exNode or
 * open it (LORS_E_READ, LORS_E_EXNODE, LORS_E_KEY, LORS_E_NOMEM) and a line in err. */
lors_dir_file_t *lors_dir_get(lors_dir_t *d, const char *name, int *rc, char *err,
                              size_t errlen);
void lors_dir_put(lors_dir_t *d, lors_dir_file_t *f);
/* The size and modification time of the file shown as name, as lors_dir_get would give them,
 * without parsing its exNode when that says its size plainly (a "size" metadata, no e2e or
 * erasure coding: a scan of its bytes), so a listing of many files opens none of them: 0, or
 * -1 with *rc and err as lors_dir_get's.  Whenever the scan cannot tell, the exNode is parsed
 * and opened as by lors_dir_get (an encrypted file without its key fails here as there); one
 * the scan reads may still fail to open later (a bad capability in a mapping). */
int lors_dir_stat(lors_dir_t *d, const char *name, int64_t *size, struct timespec *mtime,
                  int *rc, char *err, size_t errlen);
/* How many files the table keeps open now (at most LORS_DIR_KEEP; what lors_mount's statfs
 * counts as inodes in use). */
size_t lors_dir_kept(lors_dir_t *d);
/* Every name shown, sorted, without duplicates (the first path given wins): a malloc'd array
 * of *n malloc'd strings (lors_dir_names_free), or NULL with *n 0 when there are none or
 * memory ran out (errno ENOMEM). */
char **lors_dir_names(lors_dir_t *d, size_t *n);
void lors_dir_names_free(char **names, size_t n);
/* How many directories and single files were added. */
void lors_dir_counts(const lors_dir_t *d, size_t *dirs, size_t *files);
/* After every reference is put back. */
void lors_dir_free(lors_dir_t *d);
/* The name an exNode file is shown as: its base name without ".xnd". */
void lors_dir_name_of(const char *path, char *name, size_t size);

/* Resume (-R): fd holds file bytes [offset, offset + len) at its positions 0..len.  Check
 * them against the lns_checksum digests of x's mappings, checksum block by checksum block
 * from the start (a block is good when the digest of any replica whose checksum block it is
 * matches), and set *good to the longest verified prefix: complete blocks only, so a tail
 * that ends inside a block, and anything after the first block that fails or that no
 * checksum covers, is not counted.  An erasure-coded file goes data piece by data piece,
 * each checked against its column's piece digest (over the piece's bytes and, in the last
 * stripe, its zero padding).  LORS_OK, LORS_E_READ (fd shorter than len or unreadable;
 * *good still the prefix verified before), LORS_E_INVAL or LORS_E_NOMEM. */
int lors_verify_prefix(const xnd_t *x, int fd, int64_t offset, int64_t len, int64_t *good);
/* The same for x's bytes [offset, offset+len) held in fd from position at on (a run in the
 * middle of a file written in place): *good, the verified length from offset. */
int lors_verify_at(const xnd_t *x, int fd, int64_t at, int64_t offset, int64_t len,
                   int64_t *good);

/* ---- end-to-end transforms ------------------------------------------------------------- */

#define LORS_KEY_BYTES 32         /* AES-256 */
#define LORS_E2E_META "lns_e2e"   /* the file-level metadata list that describes the frames */

/* The key for "aes": from the file `path` if given, else from the environment: LNS_KEY
 * (64 hex digits) or LNS_KEY_FILE (a file's path).  A key file holds 32 raw bytes or 64 hex
 * digits (a trailing newline allowed) and must not be readable by group or others.
 * LORS_OK, or LORS_E_KEY with a line in err. */
int lors_key_load(const char *path, unsigned char key[LORS_KEY_BYTES], char *err, size_t errlen);

/* The levels the compressor of chain (lors_upload_opts_t.e2e) takes: 1 to the number returned
 * (zstd 19, zlib 9); 0 when the chain has no compressor, -1 when it does not parse.
 * *compressor, unless NULL, gets the compressor's name ("zstd", "zlib") or NULL. */
int lors_e2e_level_max(const char *chain, const char **compressor);

/* What an exNode says of its transforms. */
typedef struct lors_e2e_info {
    int present;              /* 0: a plain file (the rest is zero) */
    char chain[64];           /* e.g. "zlib,aes" */
    int64_t plain_size;       /* bytes after undoing the transforms */
    int64_t frame_size;       /* plain bytes per frame (the last may be shorter) */
    int64_t frames;
} lors_e2e_info_t;

/* LORS_OK (info->present says whether there are transforms) or LORS_E_EXNODE if the
 * lns_e2e metadata is malformed (err says how). */
int lors_e2e_info(const xnd_t *x, lors_e2e_info_t *info, char *err, size_t errlen);

/* Give libibp the TLS pin each mapping of x records ("lns_pin", written when the mapping was
 * made on an lns depot), so that every connection to those depots is sealed and a depot
 * with another key is refused (IBP_E_TLS_PIN).  Call it on every exNode read before using it.
 * LORS_OK, or LORS_E_EXNODE with a line in err when an lns_pin is not a pin. */
int lors_pins_use(const xnd_t *x, char *err, size_t errlen);

/* ---- erasure coding --------------------------------------------------------------------- */

#define LORS_EC_META "lns_ec"     /* the file-level metadata list that describes the coding */
#define LORS_EC_DEFAULT_PIECE ((int64_t)1 << 20)

typedef struct lors_ec_info {
    int present;              /* 0: not erasure coded (the rest is zero) */
    int k, m;                 /* data and parity pieces per stripe */
    int64_t piece_size;       /* bytes per piece of a full stripe */
    int64_t stripe_size;      /* k x piece_size bytes of the file */
    int64_t stripes;
    int64_t size;             /* the file's size */
    int version;              /* of its lns_ec description */
    int bound;                /* 1: each piece's digest is bound to its place (version 2), so
                               * a piece relabelled as another fails its check; 0: version 1,
                               * read as before but unbound (docs/exnode.md) */
} lors_ec_info_t;

/* LORS_OK (info->present says whether the file is erasure coded) or LORS_E_EXNODE if its
 * lns_ec metadata is malformed (err says how). */
int lors_ec_info(const xnd_t *x, lors_ec_info_t *info, char *err, size_t errlen);

/* Parse "K+M" (e.g. "4+2"): 1 <= K <= 32, 1 <= M <= 16.  LORS_OK or LORS_E_INVAL. */
int lors_ec_parse(const char *s, int *k, int *m);

struct lors_probe;

/* One stripe of an erasure-coded file and how many of its pieces are alive. */
typedef struct lors_ec_stripe {
    int64_t offset, length;   /* its bytes of the file */
    int alive;                /* distinct pieces (columns) held by a live mapping */
    int margin;               /* alive - k: losses it survives; negative: lost */
} lors_ec_stripe_t;

/* Every stripe of x, counting the mappings alive in probes (NULL: all).  *out is malloc'd.
 * LORS_E_INVAL if x is not erasure coded, LORS_E_EXNODE if its description is malformed. */
int lors_ec_stripes(const xnd_t *x, const struct lors_probe *probes, lors_ec_stripe_t **out,
                    size_t *n);

/* ---- probing mappings (ls, trim -u, augment -B) ----------------------------------------- */

typedef struct lors_probe {
    int mapping;              /* index in x->maps */
    lors_depot_t depot;       /* from the mapping's first capability; depot.host "" if none parses */
    int alive;                /* 1: the depot answered and the allocation is there; 0: not */
    int ibp_err;              /* 0, or what the depot or libibp said */
    int probed;               /* 1: probe holds a PROBE reply (the mapping has a manage cap) */
    ibp_probe_t probe;
    int64_t expires;          /* epoch: now + seconds_left if probed, else the exNode's end */
    char why[96];             /* when not alive: "expired", "connection refused", ... */
} lors_probe_t;

/* Probe every mapping of x, `threads` at once, each call bounded by timeout_s: PROBE with the
 * manage capability, else a 1-byte LOAD with the read capability (a zero-length mapping: the
 * depot's STATUS).  A mapping whose end is past is dead without asking ("expired").
 * *out is malloc'd, x->nmaps entries in document order. */
int lors_probe_all(const xnd_t *x, int threads, int timeout_s, lors_probe_t **out);

/* The logical view: x's coverage counting only mappings alive in probes (NULL: all) whose
 * function lns reads (lors_func_info), each range's count the number of distinct depots
 * (host:port) holding it (xnd_coverage_by). */
int lors_ls_logical(const xnd_t *x, const lors_probe_t *probes, xnd_range_t **out, size_t *n);

/* ---- augment: more copies, depot to depot --------------------------------------------- */

typedef struct lors_augment_opts {
    lors_upload_opts_t up;    /* depots, copies (-c), duration, reliability, threads, timeout,
                               * on_event, stop; blocksize/fragments/checksum/e2e and
                               * keep_partial are not used */
    int balance;              /* -B: add copies only where fewer than up.copies live ones exist */
    int64_t offset, length;   /* -O/-L: only mappings holding bytes of this range; length -1 = to the end */
    int relay;                /* 1 (default): where SEND fails, copy through this client; 0: don't */
    /* For the keeper (lors_keep); NULL in a plain augment: */
    const lors_probe_t *probes;      /* x's mappings as already probed (x->nmaps): no probing */
    const unsigned char *discount;   /* with balance: mappings i with discount[i] set do not
                                      * count as live copies (they are still copied from) */
    int distinct;                    /* 1: a new copy goes only to a depot holding no live
                                      * copy of its bytes and no other new one; a copy with
                                      * no such depot left is not made (report->mappings:
                                      * those that were), not LORS_E_PLACE */
    int (*on_alloc)(void *arg, const ibp_caps_t *caps); /* each new allocation, before anything
                                      * is stored in it; nonzero: it is freed and the augment
                                      * fails (LORS_E_WRITE) */
    void *alloc_arg;
} lors_augment_opts_t;

/* Defaults: those of lors_upload_opts_init, balance 0, the whole file, relay 1. */
void lors_augment_opts_init(lors_augment_opts_t *o);

/* Add copies of x's data on the depots of o->up.depots.  For each piece of the file (the
 * live mappings that together cover it, chosen greedily), each new copy is an allocation on
 * a depot that holds no copy of that piece yet (if possible; with distinct, only there),
 * of those one at a place (lors_depot_t.place) with fewest copies of the piece, then the one
 * holding the fewest live mappings of x and new copies of this call, filled by IBP SEND
 * from the source mapping's depot: the bytes do not pass through this client.  Where SEND
 * fails, the bytes are loaded and stored through the client (o->relay) and the report says
 * so.  A new mapping repeats its source's range and lns_checksum function.  On LORS_OK the
 * new mappings are appended to x and, if added is not NULL, *added is a new exNode with x's
 * file metadata and only the new mappings (-n).  On failure (LORS_E_STOPPED too) x is
 * unchanged, the allocations made are freed (report->freed) and report->error names the
 * piece.  report: bytes_sent, bytes_relayed, mappings (added), issues. */
int lors_augment(const lors_augment_opts_t *o, xnd_t *x, xnd_t **added, lors_report_t *report);
/* An erasure-coded x instead gets back its missing pieces: each column of a stripe group that
 * no live mapping holds is decoded from any k live pieces of its stripes (checked against
 * their digests, the result against the column's own) and stored on a depot of the list
 * that holds no other live piece of those stripes (report->bytes_rebuilt); up.copies,
 * balance, offset/length, relay, probes and discount do not apply, and the dead mappings
 * stay in x.  Nothing missing: LORS_OK and nothing added.  A stripe with fewer than k live
 * pieces: LORS_E_NO_REPLICA; no depot fit for some piece: LORS_E_NODEPOTS (x unchanged,
 * what was made freed, as above).  To change the layout (replicated <-> erasure coded), see
 * lors_convert. */

/* ---- convert: another layout (replicated <-> erasure coded) ------------------------------ */

typedef struct lors_convert_opts {
    lors_upload_opts_t up;    /* the new layout and where it goes: up.ec_k > 0 erasure codes
                               * (ec_k, ec_m, ec_piece), else up.copies copies; depots,
                               * duration, checksum, threads, timeout, on_event, stop as in
                               * an upload (e2e and keep_partial are not used) */
    lors_download_opts_t down;/* how the file is read (the whole file: offset 0, length -1) */
} lors_convert_opts_t;

/* Defaults: those of lors_upload_opts_init and lors_download_opts_init. */
void lors_convert_opts_init(lors_convert_opts_t *o);

/* Store the network file x again in the layout o->up describes: read through the download
 * engine (any live copy, or any k pieces of each stripe, every block checked against its
 * digests) and written by the upload engine as it is read, through a pipe (memory: the two
 * engines' buffers).  On LORS_OK *out is a new exNode of the same file (its filename and
 * bitrate carried over); x and its allocations are untouched (lors_discard them once *out
 * is safely kept).  On failure *out is NULL, what the call allocated is freed
 * (report->freed) and report->error says why: the read's reason when the file could not be
 * read (LORS_E_NO_REPLICA, ...), else the upload's.  A compressed or encrypted file is
 * LORS_E_INVAL (its bytes would be stored plain).  report as for lors_upload_fd. */
int lors_convert(const lors_convert_opts_t *o, const xnd_t *x, xnd_t **out,
                 lors_report_t *report);

/* ---- trim: fewer mappings ------------------------------------------------------------- */

typedef struct lors_trim_opts {
    const int *mappings;      /* -m: mapping numbers (document order, from 0) */
    size_t nmappings;
    const lors_depot_t *depots; /* -D/--depot: every mapping on these depots (rid "" = any) */
    size_t ndepots;
    int dead;                 /* -u: only mappings found dead (alone: all dead ones) */
    int free_allocs;          /* -d: DECR the read count of each removed mapping (frees it) */
    int force;                /* remove even if some byte would be left with no mapping */
    int threads, timeout_s;   /* for probes and DECRs */
    lors_event_fn on_event;   /* NULL: no events; else one LORS_EV_TRIM per removed mapping */
    void *event_arg;
} lors_trim_opts_t;

void lors_trim_opts_init(lors_trim_opts_t *o); /* 4 threads, 30 s, nothing selected */

typedef struct lors_trim_report {
    int *removed;             /* malloc'd: the numbers (before removal) of the removed mappings */
    size_t nremoved;
    int *unfreed;             /* malloc'd: removed mappings whose DECR failed (-d) */
    size_t nunfreed;
    char error[512];
} lors_trim_report_t;

void lors_trim_report_free(lors_trim_report_t *r);

/* Remove the selected mappings from x (selection: -m numbers and depots, united; with dead,
 * only those of them found dead, or all dead ones if nothing else is selected).  Unless
 * force, refuses with LORS_E_UNSAFE (x unchanged) when a byte held by some mapping before
 * would be held by none after; removing dead mappings never counts as losing bytes.  With
 * free_allocs the allocations are freed after x is edited; a failed DECR is listed in
 * unfreed and gives LORS_E_PARTIAL (x is still edited).  A number out of range is
 * LORS_E_INVAL.  o->on_event gets one LORS_EV_TRIM per removed mapping once x is edited
 * (with free_allocs: as each DECR answers, from the worker threads); none when refused. */
int lors_trim(const lors_trim_opts_t *o, xnd_t *x, lors_trim_report_t *report);

/* ---- refresh: longer lifetimes -------------------------------------------------------- */

typedef enum lors_refresh_mode {
    LORS_REFRESH_ADD = 1,     /* -d T: each mapping's end += T */
    LORS_REFRESH_FROM_NOW,    /* -s T: end = now + T */
    LORS_REFRESH_AT,          /* -a TIME: end = TIME (epoch) */
    LORS_REFRESH_MAX          /* -m: as long as each depot allows */
} lors_refresh_mode;

typedef struct lors_refresh_opts {
    lors_refresh_mode mode;
    int64_t value;            /* seconds (ADD, FROM_NOW) or epoch (AT) */
    const unsigned char *select; /* NULL: every mapping; else only mappings i with select[i]
                                  * (the others' items are ok with their end unchanged) */
    int threads, timeout_s;
    lors_event_fn on_event;   /* NULL: no events; else per mapping, as its depot answers, a
                               * LORS_EV_REFRESH or a LORS_EV_FAILURE */
    void *event_arg;
} lors_refresh_opts_t;

void lors_refresh_opts_init(lors_refresh_opts_t *o); /* MAX, 4 threads, 30 s */

typedef struct lors_refresh_item {
    int mapping;
    int ok;
    int ibp_err;
    int64_t old_end, new_end; /* epochs; new_end as the depot reports it after the change */
    char why[128];            /* when not ok */
} lors_refresh_item_t;

typedef struct lors_refresh_report {
    lors_refresh_item_t *items; /* malloc'd, one per mapping, document order */
    size_t n;
    size_t failed;
    char error[512];
} lors_refresh_report_t;

void lors_refresh_report_free(lors_refresh_report_t *r);

/* CHNG the duration of every mapping (manage capability needed) and set its end in x to
 * what the depot then reports (PROBE).  LORS_OK if all succeeded, LORS_E_PARTIAL if some
 * failed (they keep their old end; the report says why for each).  o->on_event hears of
 * each mapping from the worker threads as its depot answers (before x is edited). */
int lors_refresh(const lors_refresh_opts_t *o, xnd_t *x, lors_refresh_report_t *report);

/* ---- keep: refresh, check and repair a network file (lors_keep) ------------------------ */

typedef struct lors_keep_opts {
    int copies;               /* replicated file: live copies wanted of every byte, on distinct
                               * depots (default 2); an erasure-coded file wants all k + m
                               * pieces of every stripe */
    int min_live;             /* repair when some byte has fewer live copies (erasure coded:
                               * some stripe fewer live pieces) than this; 0: the target
                               * (copies, k + m) */
    int64_t margin_s;         /* refresh every lease that ends within this (default 2 days) */
    const lors_depot_t *depots; /* where new copies and pieces may go */
    size_t ndepots;
    const lors_depot_t *leaving; /* depots to move data off (down or leaving, by the L-Bone or
                               * the operator): their mappings do not count as live copies,
                               * are copied from while they answer, and are removed once
                               * the data has its copies elsewhere */
    size_t nleaving;
    int64_t duration_s;       /* lease of new allocations; -1 (default): each depot's maximum */
    int64_t provisional_s;    /* new allocations live this long (default 600 s; 0: no such
                               * step), kept alive while the pass runs, until the pass is done
                               * and extends them to duration_s: one the caller never heard
                               * of (the keeper killed while its ALLOCATE was in flight) ends
                               * by itself soon */
    int defer_extend;         /* 1: the pass leaves them provisional; the caller extends the
                               * mappings of report->fresh with lors_lease_extend once it has
                               * written x (so a kill between the two leaks only minutes) */
    int reliability;          /* IBP_HARD (default) or IBP_SOFT */
    int threads, timeout_s;   /* default 4, 30 s */
    int dry_run;              /* probe and report what a pass would do; change nothing */
    lors_event_fn on_event;   /* refresh, send, trim and failure events, as those calls give */
    void *event_arg;
    int (*on_alloc)(void *arg, const ibp_caps_t *caps); /* as lors_augment_opts_t.on_alloc */
    void *alloc_arg;
    const volatile sig_atomic_t *stop;
} lors_keep_opts_t;

void lors_keep_opts_init(lors_keep_opts_t *o);

/* Bytes the pass could not bring back to the policy. */
typedef struct lors_keep_risk {
    int64_t offset, length;
    int live;                 /* live copies (erasure coded: live pieces of each stripe) */
    int need;                 /* what the policy wants (copies, k + m) */
    int lost;                 /* 1: too few to read (no copy; erasure coded: fewer than k) */
} lors_keep_risk_t;

typedef struct lors_keep_report {
    int erasure_coded;        /* 1: risks count pieces of stripes, else copies */
    int mappings, dead;       /* before the pass; dead: found dead or on a leaving depot */
    int refreshed, refresh_failed;
    int added;                /* new mappings (copies, rebuilt columns) */
    int64_t bytes_sent;       /* copied depot to depot */
    int64_t bytes_rebuilt;    /* pieces decoded from survivors and stored */
    int removed;              /* dead or evacuated mappings taken out of the exNode */
    int unfreed;              /* ... whose allocation could not be freed (depot down) */
    int unread;               /* mappings whose function lns does not understand: kept as
                               * they are, never removed nor freed */
    int would_add, would_remove, would_refresh; /* dry run: what the pass would have done */
    lors_keep_risk_t *risks;  /* malloc'd, after the pass */
    size_t nrisks;
    int lost;                 /* 1 if some risk has too few survivors to read */
    int changed;              /* x was edited: write it back */
    int64_t next_end;         /* earliest end of a live mapping after the pass (epoch; 0 none) */
    lors_freed_t freed;       /* what a failed repair freed again */
    unsigned char *fresh;     /* malloc'd: per mapping of x after the pass, 1 if it made it */
    size_t nfresh;
    char error[512];
} lors_keep_report_t;

void lors_keep_report_free(lors_keep_report_t *r);

/* Extend the provisional leases of x's mappings with select[i] (NULL: all) to duration_s (-1:
 * each depot's maximum), as upload, augment and the keeper need once the exNode naming them
 * is safe: CHNG and PROBE (lors_refresh), each mapping's end the depot's.  Nothing to do
 * (LORS_OK) when provisional_s gives no shorter first lease.  LORS_OK, or LORS_E_PARTIAL with
 * *failed (may be NULL) mappings left on their provisional lease. */
int lors_lease_extend(xnd_t *x, const unsigned char *select, int64_t duration_s,
                      int64_t provisional_s, int threads, int timeout_s, int *failed);

/* Whether the leases of x's bytes [off, off+len) (len -1: to the end of the exNode; offsets
 * of the mappings, so stored bytes) are over by the exNode's account: 1 when every mapping
 * holding some of them has an end at or before now, with *last the latest of those ends (the
 * moment the last copy expired); 0 when some mapping has no known end or is still within its
 * lease, or none holds those bytes.  What lors_download and lors_refresh say instead of
 * naming each copy that failed. */
int lors_leases_expired(const xnd_t *x, int64_t off, int64_t len, int64_t now, int64_t *last);

/* One pass over x: probe every mapping; refresh (to the depot's maximum) each live one that
 * ends within o->margin_s; where some byte (stripe) has fewer than min_live live copies
 * (pieces), bring it back to the target on o->depots -- copies by IBP SEND from a survivor
 * (lors_augment), pieces of an erasure-coded file decoded from any k survivors of their
 * stripe and stored; then take out of x the dead and evacuated mappings whose bytes live on
 * elsewhere (freeing their allocations where the depot answers).  A mapping that still holds
 * the only copy of a byte is never taken out, dead or not, nor is one whose function lns does
 * not understand (report->unread counts them).  LORS_OK when the file meets the
 * policy after the pass; LORS_E_PARTIAL when something is left (report->risks, refresh
 * failures); LORS_E_STOPPED, LORS_E_NOMEM, LORS_E_EXNODE, LORS_E_INVAL otherwise.  x is edited
 * only when report->changed. */
int lors_keep(const lors_keep_opts_t *o, xnd_t *x, lors_keep_report_t *report);

/* ---- share: a read-only exNode of alias capabilities ----------------------------------- */

typedef struct lors_share_opts {
    int64_t offset, length;   /* the bytes of the file to share (-O/-L); length -1 = to the end */
    int64_t duration_s;       /* the aliases' lifetime; 0 = as long as each allocation (an
                               * allocation that expires sooner keeps its own end) */
    int timeout_s;            /* longest wait of any one depot call */
    const volatile sig_atomic_t *stop; /* as in lors_upload_opts_t: stop, revoke what was made */
} lors_share_opts_t;

void lors_share_opts_init(lors_share_opts_t *o); /* the whole file, 0, 30 s, no stop */

/* What the owner keeps to revoke one alias: its manage capability and the allocation's. */
typedef struct lors_share_key {
    char alias[IBP_MAX_CAP];
    char master[IBP_MAX_CAP];
} lors_share_key_t;

/* A mapping that could not be shared (its depot has no aliases, is down, ...). */
typedef struct lors_share_skip {
    int mapping;
    int ibp_err;              /* 0: not a depot's answer (why says) */
    char depot[IBP_MAX_HOST + 8];
    char why[96];
} lors_share_skip_t;

typedef struct lors_share_report {
    lors_share_key_t *keys;   /* malloc'd, one per mapping of the shared exNode (LORS_OK) */
    size_t nkeys;
    lors_share_skip_t *skipped; /* malloc'd: mappings left out (LORS_OK: others cover them) */
    size_t nskipped;
    int revoked, unrevoked;   /* on failure: aliases made and revoked again, or left */
    char error[512];
} lors_share_report_t;

void lors_share_report_free(lors_share_report_t *r);

/* A read-only share of bytes [o->offset, o->offset + o->length) of x: for each mapping
 * holding some of them, an alias (ibp_alias_allocate) onto just those bytes of its
 * allocation, and *shared a new exNode of the range (offsets from 0, "size" its length) whose
 * mappings carry only the aliases' READ capabilities.  report->keys gets what revokes them
 * (lors_share_revoke).  A mapping that cannot be aliased is left out (report->skipped) as
 * long as the others still hold every byte; else, or when stopped, every alias made is
 * revoked again and the call fails (LORS_E_NO_REPLICA: report->error names the depots
 * that could not make aliases).  A mapping cut by the range loses its lns_checksum (its
 * digests are of other blocks); a transformed file (e2e) is shared whole only (LORS_E_INVAL). */
int lors_share(const lors_share_opts_t *o, const xnd_t *x, xnd_t **shared,
               lors_share_report_t *report);

/* Revoke n aliases (ibp_alias_revoke); rc[i] gets each one's IBP_OK, IBP_E_CAP_NOT_FOUND (gone
 * already: revoked, expired, or its allocation freed) or the error.  LORS_OK when every one is
 * gone, else LORS_E_PARTIAL. */
int lors_share_revoke(const lors_share_key_t *keys, size_t n, int timeout_s, int *rc);

/* ---- end-to-end checksums ---------------------------------------------------------------- */

#define LORS_CHECKSUM_FUNC "lns_checksum"

/* Check a mapping's bytes (its logical range, data[0..logical_length)) against its
 * lns_checksum function.  LORS_OK, LORS_E_DIGEST if they differ, the function is malformed
 * or the algorithm unknown, LORS_E_INVAL if the mapping has no lns_checksum. */
int lors_checksum_verify(const xnd_mapping_t *m, const void *data, size_t len);

/* ---- what a mapping's function means ---------------------------------------------------- */

/* A reader reads a mapping's bytes only as one of the first four kinds; an UNKNOWN one is
 * never read (a replica that can be read serves its range, or the read fails with
 * LORS_E_EXNODE naming the function).  docs/exnode.md, "Functions". */
typedef enum lors_func_kind {
    LORS_FUNC_NONE = 0,     /* no function: the allocation holds the bytes as they are */
    LORS_FUNC_CHECKSUM,     /* lns_checksum: the bytes as they are, with their digests */
    LORS_FUNC_EC,           /* lns_ec: a column of an erasure-coded file */
    LORS_FUNC_LORS131,      /* a chain of the original LoRS tools' functions that lns decodes */
    LORS_FUNC_UNKNOWN       /* anything else */
} lors_func_kind;

typedef struct lors_func_info {
    lors_func_kind kind;
    char name[128];         /* the function as lors_ls shows it ("" for none), e.g.
                               "lns_checksum", "checksum,xor_encrypt" (1.3.1: in the order
                               applied), "des_encrypt" */
    char why[256];          /* UNKNOWN: what lns does not understand of it */
} lors_func_info_t;

/* What mapping i of x means.  LORS_OK, or LORS_E_INVAL (no such mapping). */
int lors_func_info(const xnd_t *x, size_t i, lors_func_info_t *info);

#ifdef __cplusplus
}
#endif
#pragma GCC visibility pop
#endif
