/* ibp_client_int.h -- what the pieces of the libibp client share; not installed.
 *
 *   ibp_pool.c         per-depot pools of idle keep-alive connections
 *   ibp_call.c         one request/reply exchange on a pooled connection, with the retry rule
 *   ibp_client.c       the calls without bulk data (ALLOCATE, SEND, MANAGE, STATUS)
 *   ibp_client_data.c  the calls that move bytes (STORE, WRITE, LOAD)
 *   ibp_alias.c        alias capabilities (ACCRE's ALIAS_ALLOCATE 14 and ALIAS_MANAGE 15)
 *   ibp_version.c      which protocol version each depot speaks (pinned or learned)
 *   ibp_tls.c          which depots are spoken to over TLS, their pins, the handshake
 *
 * A connection belongs to exactly one thread between ibp_call_begin() and ibp_call_end() /
 * ibp_conn_close(); only idle connections sit in the pool, under the pool's mutex.
 */
#ifndef LNS_IBP_CLIENT_INT_H
#define LNS_IBP_CLIENT_INT_H

#include <pthread.h>
#include <stdint.h>

#include "ibp.h"
#include "ibp_proto.h"
#include "lns_net.h"

#define IBP_CONN_RBUF 8192  /* read buffer of a connection: reply lines and the start of data */
#define IBP_REPLY_FIELDS 16
#define IBP_CHUNK (1u << 20) /* bounce buffer for fd transfers */

typedef struct ibp_slot ibp_slot_t;

typedef struct ibp_conn {
    int fd;
    lns_rbuf_t rb;
    int reused;            /* taken from the pool rather than freshly connected */
    int64_t idle_since_ms; /* when it was put back (monotonic) */
    char *host;            /* its depot, the key of its pool entry */
    int port;
    int sealed;            /* spoken to over TLS (ibp_tls_open) */
    int opened;            /* ibp_tls_open has judged it */
    char pin[IBP_PIN_LEN]; /* sealed: the pin of the key it was sealed to */
} ibp_conn_t;

typedef struct ibp_pool ibp_pool_t;
typedef struct ibp_vtab ibp_vtab_t;

struct ibp_client {
    ibp_client_opts_t o;   /* o.version: -1 detect per depot, 0 or 1 always that */
    int idle_ms;           /* what a wait inside an exchange allows: o.stall_ms or, without
                              one, o.io_timeout_ms */
    ibp_pool_t *pool;
    ibp_vtab_t *versions;  /* what detection learned, per depot */
    pthread_mutex_t tls_mu;
    struct lns_tls_ctx *tls; /* made at the first handshake (ibp_tls.c) */
};

/* ---- ibp_tls.c ---- */
/* Seal a fresh connection to a depot with a pin (or any, under IBP_TLS_REQUIRE) before its
 * first request.  IBP_OK (sealed or left plain as the options say), IBP_E_TLS,
 * IBP_E_TLS_PIN (the depot's key is not the pinned one), IBP_E_CLIENT_TIMEOUT; the reason is
 * in ibp_tls_error(). */
int ibp_tls_open(ibp_client_t *c, ibp_conn_t *conn);
/* The mode ibp_tls_mode set (a client's IBP_TLS_AUTO becomes it). */
int ibp_tls_mode_default(void);
/* 1 if connections to host:port must be sealed (it has a pin, or IBP_TLS_REQUIRE). */
int ibp_tls_wanted(ibp_client_t *c, const char *host, int port);
/* 1 if a pooled connection may carry this thread's next call: sealed to the key its depot
 * must have now, or plain to a depot that need not be sealed. */
int ibp_tls_reusable(ibp_client_t *c, const ibp_conn_t *conn);
/* 1 and host:port's pin in pin[size] when it has one, learned first (its STATUS) if the
 * client's mode would learn it at its first connection; 0: it is spoken to in plaintext. */
int ibp_tls_pin_of(ibp_client_t *c, const char *host, int port, char *pin, size_t size);

/* ---- ibp_version.c ---- */
#define IBP_VTAB_MAX 256   /* depots a version table remembers */
#define IBP_VTAB_TTL_S 600 /* how long a learned version is trusted */
ibp_vtab_t *ibp_vtab_new(void);
void ibp_vtab_free(ibp_vtab_t *t);
/* The version a call speaks to one depot, and whether it is still finding out. */
typedef struct ibp_vsel {
    int version;
    int detect; /* 0: sure (pinned, fixed by the options, or learned); 1: trying version 1,
                   which may fall back; 2: trying version 0 after version 1 failed */
} ibp_vsel_t;
/* The version to speak to host:port: pinned for the process, fixed by the client's options,
 * learned, or (when none of these) 1 with detect = 1. */
void ibp_version_for(ibp_client_t *c, const char *host, int port, ibp_vsel_t *vs);
/* A depot answered in version (a client that detects only). */
void ibp_version_learn(ibp_client_t *c, const char *host, int port, int version);

/* ---- ibp_pool.c ---- */
/* Depots with a pool entry at most: past it, the least recently used entry and its idle
 * connections go. */
#define IBP_POOL_MAX_DEPOTS 256
/* max_idle idle connections per depot (0: no pooling); an entry unused for max_idle_s is
 * dropped with its connections at the pool's next use. */
ibp_pool_t *ibp_pool_new(int max_idle, int max_idle_s);
void ibp_pool_free(ibp_pool_t *p);
/* A connection to host:port: an idle pooled one that still looks alive (when reuse != 0),
 * else a new one.  IBP_OK, IBP_E_CONNECTION or IBP_E_ALLOC_FAILED. */
struct ibp_intr;
/* intr (may be NULL): ibp_intr_abort cuts a connect short (IBP_E_CONNECTION); on IBP_OK a new
 * connection is left attached to it. */
int ibp_pool_get(ibp_pool_t *p, const char *host, int port, int reuse, int connect_timeout_ms,
                 struct ibp_intr *intr, ibp_conn_t **out);
/* Back into the pool after a clean, complete exchange; closed instead if bytes are
 * buffered or the pool is off. */
void ibp_pool_put(ibp_pool_t *p, ibp_conn_t *conn);
void ibp_conn_close(ibp_conn_t *conn);
/* How many depots the pool has an entry for (for tests). */
int ibp_pool_entries(ibp_pool_t *p);

/* ---- ibp_call.c ---- */
typedef struct ibp_reply {
    char line[IBP_MAX_LINE];
    char *f[IBP_REPLY_FIELDS];
    int nf;
    int status; /* the depot's error code when it answered one, else 0 */
} ibp_reply_t;

enum {
    IBP_CALL_LINE = 0,          /* the reply is a status line */
    IBP_CALL_UNTIL_NUL = 1,     /* version-0 STATUS: raw bytes up to a NUL, a newline or the close */
    IBP_CALL_KEEP_ON_ERROR = 2  /* an error reply ends the exchange cleanly (not STORE,
                                   WRITE, STATUS CHANGE: there the depot may not be in step) */
};

/* What ibp_call_begin returns (never to a library caller) when a depot whose version was not
 * sure dropped a version-1 request before any reply byte, or answered it -27 or -25: vs now
 * says version 0; build the request again in it and call once more.  Only the request line
 * (and data the caller chose to send with it) has gone out: callers whose version is not sure
 * send no data before the first reply. */
#define IBP_CALL_AGAIN_V0 2

/* Send req[0..len), a line of version vs->version, to host:port and read the first reply line
 * into rep.  While vs->detect is set, a reply learns the version for the client and a silent
 * close or version error returns IBP_CALL_AGAIN_V0 (above).  IBP_OK: the reply
 * starts with status 1 and *conn is the caller's, to finish with ibp_call_end() or
 * ibp_conn_close().  Any other return (a depot error or a local one) leaves no connection
 * with the caller; after an error reply it is pooled only with IBP_CALL_KEEP_ON_ERROR and
 * when the contract says the depot keeps it open.  A reused connection that fails with EOF
 * or reset before any reply byte is dropped and the request is sent once more on a new
 * connection.  reply_wait_ms < 0 means the io timeout. */
int ibp_call_begin(ibp_client_t *c, const char *host, int port, ibp_vsel_t *vs,
                   const char *req, size_t len, int flags, int reply_wait_ms, ibp_conn_t **conn,
                   ibp_reply_t *rep);
/* A way to interrupt a call from another thread (ibp_loader_abort): while the call has a
 * connection, fd is its socket, and an abort shuts it down, so that a read or write blocked
 * on a depot that stopped answering returns at once; a call not yet connected does not start. */
typedef struct ibp_intr {
    pthread_mutex_t mu;
    int fd;      /* -1: no connection in use */
    int aborted;
} ibp_intr_t;
void ibp_intr_init(ibp_intr_t *i);
void ibp_intr_destroy(ibp_intr_t *i);
/* 0, or -1 if the call was aborted already (then fd is not attached). */
int ibp_intr_attach(ibp_intr_t *i, int fd);
void ibp_intr_detach(ibp_intr_t *i);
void ibp_intr_abort(ibp_intr_t *i);
int ibp_intr_aborted(ibp_intr_t *i);
/* ibp_call_begin that ibp_intr_abort(intr) can interrupt (intr may be NULL).  On IBP_OK the
 * connection stays attached to intr: the caller detaches it before closing or pooling it. */
int ibp_call_begin_intr(ibp_client_t *c, const char *host, int port, ibp_vsel_t *vs,
                        const char *req, size_t len, int flags, int reply_wait_ms,
                        ibp_intr_t *intr, ibp_conn_t **conn, ibp_reply_t *rep);
/* Read the next reply line (e.g. after the data of a STORE).  IBP_OK if its status is 1;
 * otherwise the connection has been closed. */
int ibp_call_line(ibp_client_t *c, ibp_conn_t *conn, ibp_reply_t *rep);
/* The exchange ended cleanly: back to the pool. */
void ibp_call_end(ibp_client_t *c, ibp_conn_t *conn);
/* A reply line's parser: IBP_OK, or the error that makes the connection untrusted. */
typedef int (*ibp_reply_parser)(const ibp_reply_t *rep, void *out);
/* The end of a one-line exchange that ibp_call_begin answered rc: on IBP_OK, parse (NULL:
 * none) reads rep into out; the connection is pooled if that succeeds, else closed (the
 * depot may not be speaking our protocol).  Returns rc, the parser's error, or IBP_OK. */
int ibp_call_finish(ibp_client_t *c, int rc, ibp_conn_t *conn, const ibp_reply_t *rep,
                    ibp_reply_parser parse, void *out);
/* "1 \n" and nothing else (a parser for ibp_call_finish; out unused). */
int ibp_reply_ack(const ibp_reply_t *rep, void *out);
/* errno of a failed socket read/write -> IBP error. */
int ibp_sock_err(int err, int writing);
/* Parse and check a capability for a call; kind 0 accepts any kind. */
int ibp_call_cap(const char *s, ibp_captype kind, ibp_cap_t *cap);
/* Fill the capability fields of a request. */
void ibp_call_req_cap(ibp_req_t *req, const ibp_cap_t *cap);

/* ---- ibp_client.c ---- */
/* "1 <read cap> <write cap> <manage cap>" into the ibp_caps_t out; IBP_OK or IBP_E_BAD_FORMAT. */
int ibp_reply_caps(const ibp_reply_t *rep, void *out);

#endif
