/* lns_tls.h -- the sealed wire: TLS 1.3 on an lns_net socket, identities pinned by key hash.
 *
 * An identity is a private key (made on first use, mode 0600, refused when others can read
 * it) and a certificate: self-signed and made from the key at each start, or a configured
 * one (a CA's).  Its pin is the SHA-256 of its public key (SubjectPublicKeyInfo, DER),
 * written "sha256:" and 64 lowercase hex digits: it names a depot whatever its certificate.
 *
 * A socket is sealed by lns_tls_accept or lns_tls_connect; from then on lns_net's reads,
 * writes, sendfile and waits on that fd go through TLS (the fd is looked up in a table kept
 * here), so code above lns_net never knows.  lns_sock_close() (lns_net) unseals and closes.
 * The kernel's TLS (KTLS) is asked for; lns_tls_kernel() says whether a sealed fd got it.
 * Errors: -1 with errno (ETIMEDOUT, ECONNRESET, EPROTO for a TLS failure, EACCES for a pin
 * that does not match) and, where there is an err buffer, one line saying why.
 */
#ifndef LNS_TLS_H
#define LNS_TLS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#define LNS_PIN_LEN 72 /* "sha256:" + 64 hex + NUL, rounded */

typedef struct lns_tls_id lns_tls_id_t;   /* a key and its certificate */
typedef struct lns_tls_ctx lns_tls_ctx_t; /* what a server or a client seals sockets with */
typedef struct lns_tls lns_tls_t;         /* one sealed socket */

/* What lns_tls_id_load makes when the key file does not exist: nothing (an error), an
 * Ed25519 key (depots: lns's own clients), or an ECDSA P-256 key (lbone_server, whose status
 * page browsers open: they do not take Ed25519 certificates). */
enum { LNS_TLS_MAKE_NONE = 0, LNS_TLS_MAKE_ED25519 = 1, LNS_TLS_MAKE_P256 = 2 };

/* Load the key at key_path (of any type), or make it there when it does not exist (create,
 * one of LNS_TLS_MAKE_*), written with mode 0600.  A key file readable or writable by group
 * or others is refused.  cert_path NULL or "": a self-signed certificate for the key; else
 * the PEM chain at cert_path, which must be for this key.  NULL with a reason in err. */
lns_tls_id_t *lns_tls_id_load(const char *key_path, const char *cert_path, int create,
                              char *err, size_t errlen);
void lns_tls_id_free(lns_tls_id_t *id);
/* The identity's pin ("sha256:<64 hex>"). */
const char *lns_tls_id_pin(const lns_tls_id_t *id);
/* The certificate (with its chain) and the key as PEM text, malloc'd (for libmicrohttpd,
 * which takes them so).  0, or -1 (out of memory). */
int lns_tls_id_pem(const lns_tls_id_t *id, char **cert, char **key);
/* 1 if s is a well-formed pin.  Inline, so a parser may check one without OpenSSL (the
 * request parser's fuzzer is built of ibp_proto.c alone). */
static inline int lns_tls_pin_valid(const char *s)
{
    if (!s || strncmp(s, "sha256:", 7) != 0 || strlen(s) != 7 + 64)
        return 0;
    for (s += 7; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
            return 0;
    return 1;
}

/* A server's context (TLS 1.3 only), or a client's (TLS 1.3 only; sessions kept for
 * resumption per host and port; the system's trust store read at its first connection
 * without a pin).  AES-128-GCM is preferred, the server's order decides.  NULL with a reason
 * in err. */
lns_tls_ctx_t *lns_tls_server_new(const lns_tls_id_t *id, char *err, size_t errlen);
lns_tls_ctx_t *lns_tls_client_new(char *err, size_t errlen);
void lns_tls_ctx_free(lns_tls_ctx_t *ctx);

/* The TLS handshake as a server on a connected non-blocking socket, within idle_ms of
 * silence and the deadline (lns_deadline_ms, INT64_MAX none).  0: fd is sealed. */
int lns_tls_accept(lns_tls_ctx_t *ctx, int fd, int idle_ms, int64_t deadline_ms, char *err,
                   size_t errlen);
/* The handshake as a client to host:port.  pin given: the server's key must have it (else
 * -1, EACCES, and err names both pins), whatever its certificate says; pin NULL or "": the
 * certificate must verify against the system's trust store for host; pin "*": any key (trust
 * on first use: the caller records got_pin).  got_pin (may be NULL,
 * LNS_PIN_LEN bytes) receives the server's pin, also on a mismatch.  0: fd is sealed;
 * nothing has been sent through it yet. */
int lns_tls_connect(lns_tls_ctx_t *ctx, int fd, const char *host, int port, const char *pin,
                    char *got_pin, int idle_ms, int64_t deadline_ms, char *err, size_t errlen);
/* The 1 if the sealed fd's session was resumed (no full handshake), 0 if not or not sealed. */
int lns_tls_resumed(int fd);
/* 1 if the kernel encrypts what fd sends (KTLS), 0 if OpenSSL does, -1 if fd is not sealed. */
int lns_tls_kernel(int fd);
/* "kernel TLS" or "user-space TLS (the kernel offers no TLS: ...)", for a server's log. */
const char *lns_tls_kernel_note(void);

/* ---- for lns_net ------------------------------------------------------------------------ */

/* The seal on fd, or NULL for a plain socket. */
lns_tls_t *lns_tls_of(int fd);
/* Bytes decrypted and not yet read; else 1 when raw bytes were read ahead (0: none). */
size_t lns_tls_pending(const lns_tls_t *t);
ssize_t lns_tls_read_some(lns_tls_t *t, void *buf, size_t n, int idle_ms, int64_t deadline_ms);
/* flags: MSG_MORE holds up to 16 KiB to go out with what follows. */
int lns_tls_write_full(lns_tls_t *t, const void *buf, size_t n, int flags, int idle_ms,
                       int64_t deadline_ms);
int lns_tls_sendfile_full(lns_tls_t *t, int file_fd, off_t *offset, size_t n, int idle_ms,
                          int64_t deadline_ms);
/* For an idle pooled connection: take what the peer sent meanwhile (session tickets) without
 * waiting.  1 if the connection is still good (nothing else came), 0 if it is closed or has
 * unexpected data. */
int lns_tls_idle_ok(lns_tls_t *t);
/* Remove the seal on fd (a close_notify is sent if the socket takes it at once). */
void lns_tls_drop(int fd);
/* Free what OpenSSL keeps for the calling thread (its random generators) now, not in the
 * thread's exit handlers: a detached thread's handlers may still be running when the process
 * exits, and its state then looks leaked. */
void lns_tls_thread_end(void);

#endif
