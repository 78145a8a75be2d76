/* ibp.h -- libibp, the IBP client library: capabilities, errors and one call per command.
 *
 * Everything a program needs to talk to IBP depots (ours, LoCI 1.3 and ACCRE 1.4 ones) over
 * the wire protocol described in docs/ibp-protocol.md.  All calls are thread-safe; an
 * ibp_client_t holds a pool of keep-alive connections per depot, shared by the threads that
 * use it.  Every call returns IBP_OK (1) or a negative ibp_err; ibp_strerror() turns it into
 * words.  Sizes and offsets are uint64_t on our side and decimal on the wire.
 */
#ifndef LNS_IBP_H
#define LNS_IBP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#pragma GCC visibility push(default) /* the library's exports: what this header declares */

#ifdef __cplusplus
extern "C" {
#endif

#define IBP_DEFAULT_PORT 6714

/* Error codes: the IBP wire codes (negative), plus IBP_OK.  The wire numbers are fixed by the
 * protocol; do not renumber. */
typedef enum ibp_err {
    IBP_OK = 1,
    IBP_E_GENERIC = -1,
    IBP_E_SOCK_READ = -2,
    IBP_E_SOCK_WRITE = -3,
    IBP_E_CAP_NOT_FOUND = -4,
    IBP_E_CAP_NOT_WRITE = -5,
    IBP_E_CAP_NOT_READ = -6,
    IBP_E_CAP_NOT_MANAGE = -7,
    IBP_E_INVALID_WRITE_CAP = -8,
    IBP_E_INVALID_READ_CAP = -9,
    IBP_E_INVALID_MANAGE_CAP = -10,
    IBP_E_WRONG_CAP_FORMAT = -11,
    IBP_E_CAP_ACCESS_DENIED = -12,
    IBP_E_CONNECTION = -13,
    IBP_E_FILE_OPEN = -14,
    IBP_E_FILE_READ = -15,
    IBP_E_FILE_WRITE = -16,
    IBP_E_FILE_ACCESS = -17,
    IBP_E_FILE_SEEK = -18,
    IBP_E_WOULD_EXCEED_LIMIT = -19,
    IBP_E_WOULD_DAMAGE_DATA = -20,
    IBP_E_BAD_FORMAT = -21,
    IBP_E_TYPE_NOT_SUPPORTED = -22,
    IBP_E_RSRC_UNAVAIL = -23,
    IBP_E_INTERNAL = -24,
    IBP_E_INVALID_CMD = -25,
    IBP_E_WOULD_BLOCK = -26,
    IBP_E_PROT_VERS = -27,
    IBP_E_LONG_DURATION = -28,
    IBP_E_WRONG_PASSWD = -29,
    IBP_E_INVALID_PARAMETER = -30,
    IBP_E_INV_PAR_HOST = -31,
    IBP_E_INV_PAR_PORT = -32,
    IBP_E_INV_PAR_ATDR = -33,
    IBP_E_INV_PAR_ATRL = -34,
    IBP_E_INV_PAR_ATTP = -35,
    IBP_E_INV_PAR_SIZE = -36,
    IBP_E_INV_PAR_PTR = -37,
    IBP_E_ALLOC_FAILED = -38,
    IBP_E_CLIENT_TIMEOUT = -42,
    IBP_E_WOULD_EXCEED_POLICY = -45,
    IBP_E_SERVER_TIMEOUT = -46,
    IBP_E_SERVER_RECOVERING = -47,
    IBP_E_CAP_DELETING = -48,
    IBP_E_UNKNOWN_RS = -49,
    IBP_E_INVALID_RID = -50,
    IBP_E_QUEUE_FULL = -53,
    IBP_E_CHKSUM = -63,
    IBP_E_CHKSUM_TYPE = -64,
    IBP_E_CHKSUM_BLOCKSIZE = -65,
    IBP_E_OUT_OF_SOCKETS = -66,
    /* the client's own, never on the wire */
    IBP_E_TLS = -80,          /* the TLS handshake with the depot failed */
    IBP_E_TLS_PIN = -81       /* the depot's key is not the one pinned for it */
} ibp_err;

/* Words for any code, including unknown ones ("unknown IBP error -77"). Never NULL. */
const char *ibp_strerror(int err);
/* Short symbolic name ("CAP_NOT_FOUND", "OK"), or NULL for unknown codes. */
const char *ibp_errname(int err);

/* Command numbers (second field of a request line). */
enum ibp_cmd {
    IBP_CMD_ALLOCATE = 1,
    IBP_CMD_STORE = 2,
    IBP_CMD_DELIVER = 3,
    IBP_CMD_STATUS = 4,
    IBP_CMD_SEND = 5,
    IBP_CMD_MCOPY = 6,
    IBP_CMD_REMOTE_STORE = 7,
    IBP_CMD_LOAD = 8,
    IBP_CMD_MANAGE = 9,
    IBP_CMD_WRITE = 13,
    IBP_CMD_VEC_WRITE = 33,    /* ACCRE 1.4: a WRITE of n (offset, length) ranges (depot only) */
    IBP_CMD_VEC_READ = 35      /* ACCRE 1.4: a LOAD of n ranges (depot only) */
};

/* MANAGE sub-commands. */
enum ibp_mcmd {
    IBP_PROBE = 40,
    IBP_INCR = 41,
    IBP_DECR = 42,
    IBP_CHNG = 43,
    IBP_CONFIG = 44,
    IBP_TRUNCATE = 45
};

/* STATUS sub-commands. */
enum ibp_scmd { IBP_ST_INQ = 1, IBP_ST_CHANGE = 2 };

/* Capability kinds; the numbers are the wire captype of MANAGE. */
typedef enum ibp_captype { IBP_READCAP = 1, IBP_WRITECAP = 2, IBP_MANAGECAP = 3 } ibp_captype;

enum ibp_reliability { IBP_SOFT = 1, IBP_HARD = 2 };
enum ibp_alloc_type { IBP_BYTEARRAY = 1, IBP_BUFFER = 2, IBP_FIFO = 3, IBP_CIRQ = 4 };

/* ---- capabilities ------------------------------------------------------------------- */

#define IBP_MAX_HOST 256
#define IBP_MAX_RID 64
#define IBP_MAX_KEY 256
#define IBP_MAX_CAP 640 /* longest capability string we format or accept, with NUL */

/* A parsed capability.  1.4 form: ibp://host:port/<rid>#<key>/<typekey>/READ|WRITE|MANAGE.
 * Old form: ibp://host:port/<key>/<typekey>/READ|WRITE|MANAGE (rid is then empty).
 * typekey is kept as text: old depots use an integer, ours a decimal number too. */
typedef struct ibp_cap {
    char host[IBP_MAX_HOST];
    int port;
    char rid[IBP_MAX_RID];   /* "" in the old form */
    char key[IBP_MAX_KEY];   /* without the rid# prefix */
    char typekey[IBP_MAX_KEY];
    ibp_captype type;
} ibp_cap_t;

/* Parse a capability string; IBP_OK or IBP_E_WRONG_CAP_FORMAT.  Strict: no spaces, port
 * 1..65535, host/rid/key/typekey within the size limits and free of '/', '#', spaces and
 * control characters, kind READ, WRITE or MANAGE. */
int ibp_cap_parse(const char *s, ibp_cap_t *cap);
/* Format into buf (size >= IBP_MAX_CAP is always enough); returns IBP_OK or
 * IBP_E_INVALID_PARAMETER if it does not fit.  Uses the 1.4 form when rid is non-empty. */
int ibp_cap_format(const ibp_cap_t *cap, char *buf, size_t size);
/* The key as sent on the wire: "<rid>#<key>" in the 1.4 form, "<key>" in the old form. */
int ibp_cap_wire_key(const ibp_cap_t *cap, char *buf, size_t size);
const char *ibp_captype_name(ibp_captype t); /* "READ", "WRITE", "MANAGE"; "UNKNOWN" otherwise */

/* The three capabilities returned by ALLOCATE. */
typedef struct ibp_caps {
    char read[IBP_MAX_CAP];
    char write[IBP_MAX_CAP];
    char manage[IBP_MAX_CAP];
} ibp_caps_t;

/* ---- the client ---------------------------------------------------------------------- */

typedef struct ibp_client_opts {
    int version;              /* wire protocol version: -1 (default) finds out per depot: version 1
                                 first, version 0 if the depot drops that line unanswered or
                                 answers -27/-25 (LoCI 1.3), remembered for 10 minutes; 0 or 1
                                 speak only that.  ibp_version_pin overrides it per depot */
    int connect_timeout_ms;   /* default 5000 */
    int io_timeout_ms;        /* longest wait for any single read/write progress; default 60000 */
    int stall_ms;             /* a depot that shows no life this long fails the call with
                                 IBP_E_CLIENT_TIMEOUT (at most io_timeout_ms): no byte of its
                                 answer, none of ours leaving the send queue (lns_net.h: a slow
                                 link still taking our data is alive).  Not the wait for a
                                 SEND's answer, which the depot gives after its whole copy.
                                 Default 0: io_timeout_ms */
    int server_timeout_s;     /* srv_timeout sent in requests; default 60 */
    int max_idle_per_depot;   /* pooled idle connections kept per depot; default 8, 0 = no pooling */
    int max_idle_s;           /* pooled connections idle longer than this are not reused, and a
                                 depot unused as long is dropped from the pool; default 30.  The
                                 pool keeps at most 256 depots, dropping the least recently used */
    int tls;                  /* IBP_TLS_AUTO (default): TLS to a depot with a pin (ibp_tls_pin),
                                 never plaintext to it.  A depot without one is asked once per
                                 process, on first contact, for its STATUS (plaintext, no secret
                                 in it): an lns depot's names its pin, which is then used (trust
                                 on first use; a pin from an exNode or the L-Bone is checked
                                 instead), or, if it refuses plaintext, its TLS handshake shows
                                 it; a depot that names none (LoCI, ACCRE) is spoken to in
                                 plaintext, remembered for 10 minutes.  IBP_TLS_REQUIRE: TLS to
                                 every depot, those without a pin verified by the system's trust
                                 store.  IBP_TLS_OFF: plaintext (benchmarks) */
} ibp_client_opts_t;

enum { IBP_TLS_AUTO = 0, IBP_TLS_REQUIRE = 1, IBP_TLS_OFF = 2 };

typedef struct ibp_client ibp_client_t;

/* Fill opts with the defaults above. */
void ibp_client_opts_init(ibp_client_opts_t *opts);
/* opts may be NULL for defaults.  Returns NULL only when out of memory. */
ibp_client_t *ibp_client_new(const ibp_client_opts_t *opts);
/* Closes all pooled connections.  No call may be in progress. */
void ibp_client_free(ibp_client_t *c);

/* Pin the protocol version (0 or 1) spoken to host:port by every client of this process,
 * whatever its options say or detection learned; -1 removes the pin.  At most 256 depots
 * (past that, the oldest pin is forgotten).  IBP_OK, or IBP_E_INV_PAR_HOST/PORT/
 * IBP_E_INVALID_PARAMETER.  The tools' --ibp-version HOST:PORT=V and rc IBP_VERSION set it. */
int ibp_version_pin(const char *host, int port, int version);

/* Pin host:port's TLS identity for every client of this process: pin is "sha256:" and the
 * 64 hex digits of the SHA-256 of the depot's public key (its STATUS and log say it); NULL or
 * "" removes it.  Connections to a pinned depot are sealed with TLS and refused
 * (IBP_E_TLS_PIN) when its key is another.  At most 1024 depots (past that, the oldest pin is
 * forgotten).  IBP_OK, IBP_E_INV_PAR_HOST/PORT, IBP_E_INVALID_PARAMETER (not a pin). */
int ibp_tls_pin(const char *host, int port, const char *pin);
/* 1 and the pin in pin[size] if host:port has one, else 0. */
int ibp_tls_pin_get(const char *host, int port, char *pin, size_t size);
/* For the calling thread's calls from now on: host:port's key must be pin, whatever the
 * process's pins say (and a pooled connection sealed to another key is not used); pin NULL or
 * "" ends it.  A depot's SEND checks the pin its client named for the target this way.
 * IBP_OK, IBP_E_INV_PAR_HOST/PORT, IBP_E_INVALID_PARAMETER (not a pin). */
int ibp_tls_expect(const char *host, int port, const char *pin);
/* 1 if pin is a well-formed pin ("sha256:" and 64 lowercase hex digits), else 0: for
 * programs that take pins from their users (a depot list's "host:port#sha256:..."). */
int ibp_tls_pin_valid(const char *pin);
/* The TLS mode of every client of this process whose options leave it at IBP_TLS_AUTO (the
 * tools' --tls and rc TLS): IBP_TLS_AUTO, IBP_TLS_REQUIRE or IBP_TLS_OFF.  Set it before
 * making clients.  IBP_OK or IBP_E_INVALID_PARAMETER. */
int ibp_tls_mode(int mode);
/* The depots this process found speaking no TLS (their STATUS named no pin: LoCI, ACCRE, an lns
 * depot with --tls no) and so spoke to in plaintext, as "host:port, host:port" in buf[size]
 * (cut with "..."); how many. */
size_t ibp_tls_plain_depots(char *buf, size_t size);
/* The reason for this thread's last IBP_E_TLS or IBP_E_TLS_PIN: one line naming the depot
 * (and for a pin, both pins). */
const char *ibp_tls_error(void);

/* Allocation attributes for ALLOCATE and CHNG. */
typedef struct ibp_attr {
    uint64_t size;         /* max size in bytes */
    int64_t duration_s;    /* seconds from now; -1 = as long as the depot allows */
    int reliability;       /* IBP_SOFT or IBP_HARD */
    int type;              /* IBP_BYTEARRAY */
} ibp_attr_t;

/* ALLOCATE on host:port, resource rid (NULL or "" = the depot's default, "0"). */
int ibp_allocate(ibp_client_t *c, const char *host, int port, const char *rid,
                 const ibp_attr_t *attr, ibp_caps_t *caps);

/* STORE: append len bytes at the current end.  *stored (may be NULL) gets the count. */
int ibp_store(ibp_client_t *c, const char *wcap, const void *buf, uint64_t len, uint64_t *stored);
/* STORE len bytes read from fd (a file, pipe or socket; read sequentially). */
int ibp_store_fd(ibp_client_t *c, const char *wcap, int fd, uint64_t len, uint64_t *stored);
/* STORE len bytes of the regular file file_fd starting at file_offset, with sendfile(2) (no
 * copy through user space; the file position is not used or moved).  The depot uses it for SEND.
 * SIGPIPE is held back for the calling thread during the transfer, so callers need not ignore it. */
int ibp_store_file(ibp_client_t *c, const char *wcap, int file_fd, uint64_t file_offset,
                   uint64_t len, uint64_t *stored);
/* WRITE len bytes at offset (version 1 only). */
int ibp_write(ibp_client_t *c, const char *wcap, uint64_t offset, const void *buf, uint64_t len,
              uint64_t *written);
int ibp_write_fd(ibp_client_t *c, const char *wcap, uint64_t offset, int fd, uint64_t len,
                 uint64_t *written);
/* WRITE len bytes of the regular file file_fd from file_offset at offset, with sendfile(2),
 * as ibp_store_file (the depot uses it for ACCRE's PUSH to an offset). */
int ibp_write_file(ibp_client_t *c, const char *wcap, uint64_t offset, int file_fd,
                   uint64_t file_offset, uint64_t len, uint64_t *written);

/* LOAD len bytes at offset into buf. */
int ibp_load(ibp_client_t *c, const char *rcap, uint64_t offset, uint64_t len, void *buf);
/* The bytes of n ranges (1 to 16, at most 1 GiB in all) in one request and one reply, one
 * after the other into buf: VEC_READ, ACCRE 1.4's vector LOAD, which lns and ACCRE depots
 * answer (version 1).  IBP_E_INVALID_CMD, without a word to the depot, when it speaks only
 * version 0 (LoCI), or the depot's own error when it does not know the command: then LOAD
 * them one by one. */
typedef struct ibp_range {
    uint64_t offset, length;
} ibp_range_t;
int ibp_load_ranges(ibp_client_t *c, const char *rcap, const ibp_range_t *r, int n, void *buf);
/* LOAD read piece by piece, for a caller that uses each piece while it is still in cache or
 * may stop part way.  ibp_loader_start sends the request and checks the reply (len bytes at
 * offset); ibp_loader_read reads exactly the next n of them into buf (after an error every
 * later read fails); ibp_loader_free ends the LOAD, pooling the connection only if every byte
 * was read and nothing went wrong.  ibp_loader_abort may be called from any thread until
 * ibp_loader_free: a start or read blocked on the depot returns an error at once, a start
 * not yet begun fails, and the connection is closed, not pooled.  One LOAD per loader. */
typedef struct ibp_loader ibp_loader_t;
ibp_loader_t *ibp_loader_new(ibp_client_t *c); /* NULL: out of memory */
int ibp_loader_start(ibp_loader_t *l, const char *rcap, uint64_t offset, uint64_t len);
int ibp_loader_read(ibp_loader_t *l, void *buf, size_t n);
void ibp_loader_abort(ibp_loader_t *l);
void ibp_loader_free(ibp_loader_t *l);
/* LOAD len bytes at offset and write them to fd. */
int ibp_load_fd(ibp_client_t *c, const char *rcap, uint64_t offset, uint64_t len, int fd);

/* SEND: ask the depot of rcap to append len bytes at offset to the allocation of the remote
 * write capability dst_wcap (third-party copy; the bytes do not pass through us). */
int ibp_send(ibp_client_t *c, const char *rcap, const char *dst_wcap, uint64_t offset,
             uint64_t len, uint64_t *copied);

typedef struct ibp_probe {
    int read_refs;
    int write_refs;
    uint64_t cur_size;
    uint64_t max_size;
    int64_t seconds_left;
    int reliability;
    int type;
} ibp_probe_t;

int ibp_probe(ibp_client_t *c, const char *mcap, ibp_probe_t *out);
/* INCR/DECR the read (IBP_READCAP) or write (IBP_WRITECAP) reference count.  A DECR of the
 * read count to zero frees the allocation. */
int ibp_incr(ibp_client_t *c, const char *mcap, ibp_captype which);
int ibp_decr(ibp_client_t *c, const char *mcap, ibp_captype which);
/* CHNG: new max size, duration from now, reliability.  A field of 0 leaves it unchanged:
 * it is sent as its current value, read by a PROBE first, since depots disagree on how to say
 * "unchanged".  Duration -1 is sent as is: the depot's maximum on lns, "unchanged" on ACCRE
 * 1.4, refused (-30) by LoCI 1.3. */
int ibp_change(ibp_client_t *c, const char *mcap, uint64_t max_size, int64_t duration_s,
               int reliability);
/* TRUNCATE (version 1), as ACCRE 1.4: the maximum size becomes new_size; the bytes past it,
 * if any, are dropped (the current size never grows). */
int ibp_truncate(ibp_client_t *c, const char *mcap, uint64_t new_size);

/* ---- alias capabilities (ACCRE IBP 1.4's ALIAS_ALLOCATE 14 and ALIAS_MANAGE 15) ----------
 * An alias is a capability set of its own onto a byte range of an allocation: reads and
 * writes through it take offsets from 0 = the range's first byte and stop at its end (-19
 * past it); it is revoked on its own, leaving the allocation as it is.  Version 1 only: in
 * version 0 (a LoCI 1.3 depot) and from a depot without aliases (lns before 0.2) these calls
 * return IBP_E_INVALID_CMD.  docs/ibp-protocol.md has the wire. */

/* Three new capabilities onto bytes [offset, offset + length) of the allocation of manage
 * capability mcap; length 0 = to its end.  duration_s 0 = until the allocation expires,
 * else seconds from now (longer than the allocation has left: IBP_E_LONG_DURATION). */
int ibp_alias_allocate(ibp_client_t *c, const char *mcap, uint64_t offset, uint64_t length,
                       int64_t duration_s, ibp_caps_t *caps);

typedef struct ibp_alias_probe {
    int read_refs;
    int write_refs;
    uint64_t offset;      /* the range on the allocation */
    uint64_t length;      /* 0 = to its end */
    int64_t seconds_left;
} ibp_alias_probe_t;

/* PROBE an alias with its manage capability (an allocation's: IBP_E_INVALID_CMD). */
int ibp_alias_probe(ibp_client_t *c, const char *alias_mcap, ibp_alias_probe_t *out);
/* INCR/DECR an alias's read or write count; the depot wants the allocation's manage
 * capability too (another one: IBP_E_INVALID_MANAGE_CAP). */
int ibp_alias_incr(ibp_client_t *c, const char *alias_mcap, const char *master_mcap,
                   ibp_captype which);
int ibp_alias_decr(ibp_client_t *c, const char *alias_mcap, const char *master_mcap,
                   ibp_captype which);
/* CHNG: length > 0 moves the range to [offset, offset + length); duration_s > 0 sets the
 * expiry to now + duration_s, 0 to the allocation's, < 0 leaves it. */
int ibp_alias_change(ibp_client_t *c, const char *alias_mcap, const char *master_mcap,
                     uint64_t offset, uint64_t length, int64_t duration_s);
/* Revoke: DECR the alias's counts until the depot no longer knows it (lns drops an alias
 * when its read count reaches 0, ACCRE when both counts do).  IBP_OK once it answers -4 to
 * a PROBE; IBP_E_CAP_NOT_FOUND if it was gone already (revoked, expired, or its allocation
 * freed). */
int ibp_alias_revoke(ibp_client_t *c, const char *alias_mcap, const char *master_mcap);

/* Depot status from STATUS INQ. */
#define IBP_PIN_LEN 72

typedef struct ibp_depot_status {
    char version[32];       /* "1.4" style version of the depot, "" if not told */
    char rid[IBP_MAX_RID];
    uint64_t hard_total;    /* bytes */
    uint64_t hard_used;
    uint64_t soft_total;
    uint64_t soft_used;
    int64_t max_duration_s;
    int allocations;        /* -1 if not told */
    char pin[IBP_PIN_LEN];  /* an lns depot's TLS pin ("sha256:<64 hex>"), "" if not told */
} ibp_depot_status_t;

/* STATUS INQ of resource rid (NULL = default); password may be NULL. */
int ibp_status(ibp_client_t *c, const char *host, int port, const char *rid, const char *password,
               ibp_depot_status_t *out);
/* STATUS CHANGE: new hard and soft capacity (bytes) and max duration (s) of resource rid;
 * a field of 0 leaves it unchanged (sent as the value an INQUIRE reads first: LoCI 1.3.1 takes 0
 * as 0).  Needs the depot's admin password; version 0 sends MB and days, rounded up. */
int ibp_status_change(ibp_client_t *c, const char *host, int port, const char *rid,
                      const char *password, uint64_t hard_total, uint64_t soft_total,
                      int64_t max_duration_s, ibp_depot_status_t *out);

#ifdef __cplusplus
}
#endif
#pragma GCC visibility pop
#endif
