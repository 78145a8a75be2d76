/* lns_tls.c -- TLS 1.3 with OpenSSL over lns_net's non-blocking sockets; see lns_tls.h.
 *
 * The table of seals is indexed by fd and sized to the open-file limit on first use; a slot
 * is written only by the thread that owns the socket (sealing it or closing it), and read with
 * an acquire load by whoever does I/O on it, which is the same thread.
 */
#include "lns_tls.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "lns_err.h"
#include "lns_hex.h"
#include "lns_net.h"
#include "lns_time.h"

#define HOLD_MAX (16 * 1024)   /* MSG_MORE bytes held for the next write */
#define FILE_CHUNK (64 * 1024) /* sendfile through TLS: read this much, then encrypt it */
#define SESSIONS 256           /* a client's resumable sessions, one per host:port */

struct lns_tls_id {
    EVP_PKEY *key;
    X509 *cert;
    STACK_OF(X509) *chain; /* a configured certificate's intermediates */
    char pin[LNS_PIN_LEN];
};

typedef struct session {
    char peer[300]; /* "host:port" ("" free) */
    SSL_SESSION *s;
    int64_t used;
} session_t;

struct lns_tls_ctx {
    SSL_CTX *ssl;
    int server;
    pthread_mutex_t mu; /* sessions, trust */
    int trust;          /* a client's: the system's trust store is loaded */
    session_t sessions[SESSIONS];
};

struct lns_tls {
    int fd;
    SSL *ssl;
    lns_tls_ctx_t *ctx;
    char peer[300];
    size_t held;
    unsigned char hold[HOLD_MAX];
    unsigned char *chunk; /* FILE_CHUNK, made at the first sendfile */
};

/* ---- the table of seals ------------------------------------------------------------------ */

static _Atomic(lns_tls_t *) *seals;
static size_t nseals;
static pthread_once_t seals_once = PTHREAD_ONCE_INIT;

static void seals_init(void)
{
    struct rlimit rl;
    size_t n = 65536;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur > n)
        n = rl.rlim_cur > (1u << 22) ? (1u << 22) : (size_t)rl.rlim_cur;
    seals = calloc(n, sizeof *seals);
    nseals = seals ? n : 0;
}

lns_tls_t *lns_tls_of(int fd)
{
    if (!seals || fd < 0 || (size_t)fd >= nseals)
        return NULL;
    return atomic_load_explicit(&seals[fd], memory_order_acquire);
}

static int seal(lns_tls_t *t)
{
    pthread_once(&seals_once, seals_init);
    if (t->fd < 0 || (size_t)t->fd >= nseals) {
        errno = EMFILE;
        return -1;
    }
    atomic_store_explicit(&seals[t->fd], t, memory_order_release);
    return 0;
}

void lns_tls_thread_end(void)
{
    OPENSSL_thread_stop();
}

static void tls_free(lns_tls_t *t)
{
    if (!t)
        return;
    SSL_free(t->ssl);
    free(t->chunk);
    free(t);
}

void lns_tls_drop(int fd)
{
    lns_tls_t *t = lns_tls_of(fd);
    if (!t)
        return;
    atomic_store_explicit(&seals[fd], NULL, memory_order_release);
    SSL_shutdown(t->ssl); /* a close_notify if the socket takes it now; no wait for the peer's */
    ERR_clear_error();
    tls_free(t);
}

/* ---- identities -------------------------------------------------------------------------- */

static void ssl_reason(char *buf, size_t size)
{
    unsigned long e = ERR_peek_last_error();
    if (e)
        ERR_error_string_n(e, buf, size);
    else
        snprintf(buf, size, "%s", errno ? strerror(errno) : "unknown TLS error");
    ERR_clear_error();
}

static int make_pin(EVP_PKEY *key, char pin[LNS_PIN_LEN])
{
    unsigned char *der = NULL, md[SHA256_DIGEST_LENGTH];
    int n = i2d_PUBKEY(key, &der);
    if (n <= 0)
        return -1;
    SHA256(der, (size_t)n, md);
    OPENSSL_free(der);
    strcpy(pin, "sha256:");
    lns_hex(md, SHA256_DIGEST_LENGTH, pin + 7);
    return 0;
}

static EVP_PKEY *key_read(const char *path, char *err, size_t errlen)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        lns_err_set(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    if (fstat(fd, &st) < 0 || (st.st_mode & 077)) {
        lns_err_set(err, errlen, "%s: the TLS key is open to others (mode %04o): make it 0600 "
                    "(chmod 600 %s)", path, (unsigned)(st.st_mode & 07777), path);
        close(fd);
        return NULL;
    }
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        lns_err_set(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    EVP_PKEY *k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
    fclose(f);
    if (!k) {
        char why[256];
        ssl_reason(why, sizeof why);
        lns_err_set(err, errlen, "%s: not a PEM private key (%s)", path, why);
    }
    return k;
}

static EVP_PKEY *key_make(const char *path, int type, char *err, size_t errlen)
{
    EVP_PKEY *k = type == LNS_TLS_MAKE_P256 ? EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256")
                                            : EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    if (!k) {
        lns_err_set(err, errlen, "cannot make an %s key",
                    type == LNS_TLS_MAKE_P256 ? "ECDSA P-256" : "Ed25519");
        ERR_clear_error();
        return NULL;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
    int ok = f && PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL) == 1;
    if (f) {
        ok = fflush(f) == 0 && fsync(fd) == 0 && ok;
        fclose(f);
    } else if (fd >= 0) {
        close(fd);
    }
    if (!ok) {
        lns_err_set(err, errlen, "%s: cannot write the TLS key: %s", path, strerror(errno));
        EVP_PKEY_free(k);
        unlink(path);
        return NULL;
    }
    return k;
}

static X509 *self_signed(EVP_PKEY *key, const char *pin)
{
    X509 *x = X509_new();
    unsigned char serial[16];
    BIGNUM *bn = NULL;
    if (!x || RAND_bytes(serial, sizeof serial) != 1)
        goto fail;
    serial[0] &= 0x7f;
    bn = BN_bin2bn(serial, sizeof serial, NULL);
    if (!bn || !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)))
        goto fail;
    BN_free(bn);
    bn = NULL;
    X509_set_version(x, 2);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_time_adj_ex(X509_getm_notAfter(x), 36500, 0, NULL);
    X509_NAME *name = X509_get_subject_name(x);
    char cn[64];
    snprintf(cn, sizeof cn, "lns %.23s", pin); /* "lns sha256:" and 16 hex of the pin */
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, name);
    /* Ed25519 signs without a separate digest; ECDSA and RSA with SHA-256 */
    const EVP_MD *md = EVP_PKEY_id(key) == EVP_PKEY_ED25519 ? NULL : EVP_sha256();
    if (X509_set_pubkey(x, key) != 1 || X509_sign(x, key, md) <= 0)
        goto fail;
    return x;
fail:
    BN_free(bn);
    X509_free(x);
    ERR_clear_error();
    return NULL;
}

lns_tls_id_t *lns_tls_id_load(const char *key_path, const char *cert_path, int create,
                              char *err, size_t errlen)
{
    lns_tls_id_t *id = calloc(1, sizeof *id);
    if (!id) {
        lns_err_set(err, errlen, "out of memory");
        return NULL;
    }
    if (access(key_path, F_OK) == 0 || !create)
        id->key = key_read(key_path, err, errlen);
    else
        id->key = key_make(key_path, create, err, errlen);
    if (!id->key)
        goto fail;
    if (make_pin(id->key, id->pin) < 0) {
        lns_err_set(err, errlen, "%s: cannot hash the public key", key_path);
        goto fail;
    }
    if (cert_path && *cert_path) {
        FILE *f = fopen(cert_path, "re");
        if (!f) {
            lns_err_set(err, errlen, "%s: %s", cert_path, strerror(errno));
            goto fail;
        }
        id->cert = PEM_read_X509(f, NULL, NULL, NULL);
        id->chain = sk_X509_new_null();
        X509 *more;
        while (id->chain && (more = PEM_read_X509(f, NULL, NULL, NULL)))
            sk_X509_push(id->chain, more);
        fclose(f);
        ERR_clear_error(); /* the end of the chain reads as an error */
        if (!id->cert) {
            lns_err_set(err, errlen, "%s: no PEM certificate in it", cert_path);
            goto fail;
        }
        if (X509_check_private_key(id->cert, id->key) != 1) {
            ERR_clear_error();
            lns_err_set(err, errlen, "%s: the certificate is not for the key %s", cert_path,
                        key_path);
            goto fail;
        }
    } else if (!(id->cert = self_signed(id->key, id->pin))) {
        lns_err_set(err, errlen, "cannot make a self-signed certificate");
        goto fail;
    }
    return id;
fail:
    lns_tls_id_free(id);
    return NULL;
}

void lns_tls_id_free(lns_tls_id_t *id)
{
    if (!id)
        return;
    EVP_PKEY_free(id->key);
    X509_free(id->cert);
    sk_X509_pop_free(id->chain, X509_free);
    free(id);
}

const char *lns_tls_id_pin(const lns_tls_id_t *id)
{
    return id->pin;
}

/* What a memory BIO holds, as a malloc'd string. */
static char *bio_text(BIO *b)
{
    char *p = NULL, *out;
    long n = BIO_get_mem_data(b, &p);
    if (n < 0 || !(out = malloc((size_t)n + 1)))
        return NULL;
    memcpy(out, p, (size_t)n);
    out[n] = 0;
    return out;
}

int lns_tls_id_pem(const lns_tls_id_t *id, char **cert, char **key)
{
    BIO *c = BIO_new(BIO_s_mem()), *k = BIO_new(BIO_s_mem());
    int ok = c && k && PEM_write_bio_X509(c, id->cert) == 1 &&
             PEM_write_bio_PrivateKey(k, id->key, NULL, NULL, 0, NULL, NULL) == 1;
    for (int i = 0; ok && id->chain && i < sk_X509_num(id->chain); i++)
        ok = PEM_write_bio_X509(c, sk_X509_value(id->chain, i)) == 1;
    *cert = ok ? bio_text(c) : NULL;
    *key = ok ? bio_text(k) : NULL;
    if (k) {
        char *p = NULL;
        long n = BIO_get_mem_data(k, &p);
        if (n > 0)
            OPENSSL_cleanse(p, (size_t)n);
    }
    BIO_free(c);
    BIO_free(k);
    ERR_clear_error();
    if (*cert && *key)
        return 0;
    free(*cert);
    free(*key);
    *cert = *key = NULL;
    return -1;
}

/* ---- contexts ---------------------------------------------------------------------------- */

/* A new session ticket for a client connection: kept for its host:port (one each). */
static int session_new(SSL *ssl, SSL_SESSION *s)
{
    lns_tls_t *t = SSL_get_app_data(ssl);
    if (!t || !t->ctx || !t->peer[0])
        return 0;
    lns_tls_ctx_t *c = t->ctx;
    session_t *slot = NULL, *oldest = &c->sessions[0];
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < SESSIONS && !slot; i++) {
        if (strcmp(c->sessions[i].peer, t->peer) == 0 || !c->sessions[i].peer[0])
            slot = &c->sessions[i];
        else if (c->sessions[i].used < oldest->used)
            oldest = &c->sessions[i];
    }
    if (!slot)
        slot = oldest;
    SSL_SESSION_free(slot->s);
    slot->s = s;
    snprintf(slot->peer, sizeof slot->peer, "%s", t->peer);
    slot->used = lns_mono_ns();
    pthread_mutex_unlock(&c->mu);
    return 1; /* the session is ours now */
}

static lns_tls_ctx_t *ctx_new(int server, char *err, size_t errlen)
{
    lns_tls_ctx_t *c = calloc(1, sizeof *c);
    if (!c || !(c->ssl = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method()))) {
        lns_err_set(err, errlen, "cannot make a TLS context");
        free(c);
        ERR_clear_error();
        return NULL;
    }
    c->server = server;
    pthread_mutex_init(&c->mu, NULL);
    SSL_CTX_set_min_proto_version(c->ssl, TLS1_3_VERSION);
    SSL_CTX_set_options(c->ssl, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_ENABLE_KTLS |
                                    SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_mode(c->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE |
                                 SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
    /* Read ahead into a buffer of several records: one read() takes what the socket holds
     * (about 64 KiB) instead of two per 16 KiB record, the header and then the rest (a
     * download made 7 reads per 64 KiB).  What it holds beyond the record being read is
     * pending for the poll points (lns_tls_pending). */
    SSL_CTX_set_read_ahead(c->ssl, 1);
    SSL_CTX_set_default_read_buffer_len(c->ssl, 64 * 1024 + 512);
    /* AES-128-GCM first: a fifth faster than AES-256-GCM (OpenSSL's first) on AES-NI, the
     * cost of every byte without kernel TLS (docs/PERFORMANCE.md, The sealed wire) */
    SSL_CTX_set_ciphersuites(c->ssl, "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:"
                                     "TLS_CHACHA20_POLY1305_SHA256");
    return c;
}

lns_tls_ctx_t *lns_tls_server_new(const lns_tls_id_t *id, char *err, size_t errlen)
{
    lns_tls_ctx_t *c = ctx_new(1, err, errlen);
    if (!c)
        return NULL;
    int ok = SSL_CTX_use_certificate(c->ssl, id->cert) == 1 &&
             SSL_CTX_use_PrivateKey(c->ssl, id->key) == 1;
    for (int i = 0; ok && id->chain && i < sk_X509_num(id->chain); i++)
        ok = SSL_CTX_add1_chain_cert(c->ssl, sk_X509_value(id->chain, i)) == 1;
    if (!ok) {
        char why[256];
        ssl_reason(why, sizeof why);
        lns_err_set(err, errlen, "TLS key and certificate: %s", why);
        lns_tls_ctx_free(c);
        return NULL;
    }
    SSL_CTX_set_session_id_context(c->ssl, (const unsigned char *)"lns", 3);
    SSL_CTX_set_options(c->ssl, SSL_OP_CIPHER_SERVER_PREFERENCE); /* AES-128-GCM for all */
    return c;
}

lns_tls_ctx_t *lns_tls_client_new(char *err, size_t errlen)
{
    lns_tls_ctx_t *c = ctx_new(0, err, errlen);
    if (!c)
        return NULL;
    /* The system's trust store is loaded by the first connection that needs it (no pin):
     * reading it costs some 30 ms of CPU, and pinned depots never use it. */
    SSL_CTX_set_session_cache_mode(c->ssl, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL);
    SSL_CTX_sess_set_new_cb(c->ssl, session_new);
    return c;
}

void lns_tls_ctx_free(lns_tls_ctx_t *c)
{
    if (!c)
        return;
    for (int i = 0; i < SESSIONS; i++)
        SSL_SESSION_free(c->sessions[i].s);
    SSL_CTX_free(c->ssl);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* ---- handshakes -------------------------------------------------------------------------- */

/* Wait for what OpenSSL asked for after r = SSL_xxx(); 1 go on, 0 done (r > 0), -1 error. */
static int ssl_step(lns_tls_t *t, int r, int idle_ms, int64_t deadline_ms)
{
    if (r > 0)
        return 0;
    int e = SSL_get_error(t->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        return lns_wait(t->fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, idle_ms,
                        deadline_ms) < 0 ? -1 : 1;
    if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && errno == 0))
        errno = ECONNRESET;
    else if (e != SSL_ERROR_SYSCALL)
        errno = EPROTO;
    return -1;
}

static lns_tls_t *tls_new(lns_tls_ctx_t *ctx, int fd)
{
    lns_tls_t *t = calloc(1, sizeof *t);
    if (!t || !(t->ssl = SSL_new(ctx->ssl)) || SSL_set_fd(t->ssl, fd) != 1) {
        if (t)
            SSL_free(t->ssl);
        free(t);
        ERR_clear_error();
        errno = ENOMEM;
        return NULL;
    }
    t->fd = fd;
    t->ctx = ctx;
    SSL_set_app_data(t->ssl, t);
    return t;
}

static int handshake(lns_tls_t *t, int server, int idle_ms, int64_t deadline_ms, char *err,
                     size_t errlen)
{
    for (;;) {
        ERR_clear_error();
        errno = 0;
        int r = server ? SSL_accept(t->ssl) : SSL_connect(t->ssl);
        int s = ssl_step(t, r, idle_ms, deadline_ms);
        if (s == 0)
            return 0;
        if (s < 0) {
            int e = errno;
            char why[256];
            if (e == EPROTO)
                ssl_reason(why, sizeof why);
            else
                snprintf(why, sizeof why, "%s", e == ETIMEDOUT ? "timed out" : strerror(e));
            ERR_clear_error();
            lns_err_set(err, errlen, "TLS handshake: %s", why);
            errno = e;
            return -1;
        }
    }
}

int lns_tls_accept(lns_tls_ctx_t *ctx, int fd, int idle_ms, int64_t deadline_ms, char *err,
                   size_t errlen)
{
    lns_tls_t *t = tls_new(ctx, fd);
    if (!t) {
        lns_err_set(err, errlen, "out of memory");
        return -1;
    }
    if (handshake(t, 1, idle_ms, deadline_ms, err, errlen) < 0 || seal(t) < 0) {
        int e = errno;
        tls_free(t);
        errno = e;
        return -1;
    }
    return 0;
}

int lns_tls_connect(lns_tls_ctx_t *ctx, int fd, const char *host, int port, const char *pin,
                    char *got_pin, int idle_ms, int64_t deadline_ms, char *err, size_t errlen)
{
    char peer_pin[LNS_PIN_LEN] = "";
    lns_tls_t *t = tls_new(ctx, fd);
    if (!t) {
        lns_err_set(err, errlen, "out of memory");
        return -1;
    }
    snprintf(t->peer, sizeof t->peer, "%s:%d", host, port);
    int any = pin && strcmp(pin, "*") == 0, pinned = pin && *pin && !any;
    if (pinned || any) {
        /* the key is judged by its pin below; TLS 1.3 has already checked that the server
         * holds it (CertificateVerify), whatever its certificate's chain */
        SSL_set_verify(t->ssl, SSL_VERIFY_NONE, NULL);
    } else {
        SSL_set_verify(t->ssl, SSL_VERIFY_PEER, NULL);
        SSL_set1_host(t->ssl, host);
        pthread_mutex_lock(&ctx->mu);
        if (!ctx->trust) {
            SSL_CTX_set_default_verify_paths(ctx->ssl);
            ERR_clear_error();
            ctx->trust = 1;
        }
        pthread_mutex_unlock(&ctx->mu);
    }
    SSL_set_tlsext_host_name(t->ssl, host);
    pthread_mutex_lock(&ctx->mu);
    for (int i = 0; i < SESSIONS; i++)
        if (ctx->sessions[i].s && strcmp(ctx->sessions[i].peer, t->peer) == 0) {
            SSL_set_session(t->ssl, ctx->sessions[i].s);
            ctx->sessions[i].used = lns_mono_ns();
            break;
        }
    pthread_mutex_unlock(&ctx->mu);
    if (handshake(t, 0, idle_ms, deadline_ms, err, errlen) < 0) {
        int e = errno;
        long v = SSL_get_verify_result(t->ssl);
        if (!pinned && v != X509_V_OK)
            lns_err_set(err, errlen, "%s: the certificate does not verify (%s), and no pin is "
                        "known for it", t->peer, X509_verify_cert_error_string(v));
        tls_free(t);
        errno = e;
        return -1;
    }
    X509 *x = SSL_get1_peer_certificate(t->ssl);
    EVP_PKEY *k = x ? X509_get0_pubkey(x) : NULL;
    if (!k || make_pin(k, peer_pin) < 0) {
        X509_free(x);
        tls_free(t);
        lns_err_set(err, errlen, "%s: no certificate", host);
        errno = EPROTO;
        return -1;
    }
    X509_free(x);
    if (got_pin)
        snprintf(got_pin, LNS_PIN_LEN, "%s", peer_pin);
    if (pinned && strcmp(pin, peer_pin) != 0) {
        tls_free(t); /* not even a close_notify: nothing goes to a stranger */
        lns_err_set(err, errlen, "%s:%d is not the depot it should be: its key is %s, the pin "
                    "expected is %s", host, port, peer_pin, pin);
        errno = EACCES;
        return -1;
    }
    if (seal(t) < 0) {
        tls_free(t);
        lns_err_set(err, errlen, "fd %d beyond the table of seals", fd);
        return -1;
    }
    return 0;
}

int lns_tls_resumed(int fd)
{
    lns_tls_t *t = lns_tls_of(fd);
    return t ? SSL_session_reused(t->ssl) : 0;
}

int lns_tls_kernel(int fd)
{
    lns_tls_t *t = lns_tls_of(fd);
    if (!t)
        return -1;
    return BIO_get_ktls_send(SSL_get_wbio(t->ssl)) ? 1 : 0;
}

static char ktls_note[200];

/* Whether this kernel has the "tls" upper-layer protocol, tried on a loopback pair. */
static void ktls_probe(void)
{
    int port = 0, l = lns_listen("127.0.0.1", 0, 1, &port, NULL, 0), c = -1, a = -1;
    int e = 0;
    if (l >= 0 && (c = lns_connect("127.0.0.1", port, 2000)) >= 0 &&
        lns_wait(l, POLLIN, 2000, INT64_MAX) == 0 && (a = accept(l, NULL, NULL)) >= 0)
        e = setsockopt(a, IPPROTO_TCP, TCP_ULP, "tls", sizeof "tls") == 0 ? 0 : errno;
    else
        e = errno ? errno : EIO;
    if (e == 0)
        snprintf(ktls_note, sizeof ktls_note, "kernel TLS offered (used where OpenSSL's build "
                 "and the cipher allow)");
    else
        snprintf(ktls_note, sizeof ktls_note, "user-space TLS (the kernel offers no TLS: "
                 "TCP_ULP \"tls\": %s)", strerror(e));
    if (a >= 0)
        close(a);
    if (c >= 0)
        close(c);
    if (l >= 0)
        close(l);
}

const char *lns_tls_kernel_note(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, ktls_probe);
    return ktls_note;
}

/* ---- I/O on a sealed socket -------------------------------------------------------------- */

size_t lns_tls_pending(const lns_tls_t *t)
{
    /* decrypted bytes, else 1 for raw bytes read ahead that no poll() would see */
    size_t n = (size_t)SSL_pending(t->ssl);
    return n ? n : SSL_has_pending(t->ssl) ? 1 : 0;
}

ssize_t lns_tls_read_some(lns_tls_t *t, void *buf, size_t n, int idle_ms, int64_t deadline_ms)
{
    for (;;) {
        size_t got = 0;
        ERR_clear_error();
        errno = 0;
        int r = SSL_read_ex(t->ssl, buf, n, &got);
        if (r == 1)
            return (ssize_t)got;
        int e = SSL_get_error(t->ssl, r);
        if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && errno == 0))
            return 0;
        int s = ssl_step(t, r, idle_ms, deadline_ms);
        if (s < 0) {
            ERR_clear_error();
            return -1;
        }
    }
}

static int write_raw(lns_tls_t *t, const void *buf, size_t n, int idle_ms, int64_t deadline_ms)
{
    const unsigned char *p = buf;
    while (n > 0) {
        size_t put = 0;
        ERR_clear_error();
        errno = 0;
        int r = SSL_write_ex(t->ssl, p, n, &put);
        if (r == 1) {
            p += put;
            n -= put;
            continue;
        }
        if (ssl_step(t, r, idle_ms, deadline_ms) < 0) {
            if (errno == 0)
                errno = EPIPE;
            ERR_clear_error();
            return -1;
        }
    }
    return 0;
}

int lns_tls_write_full(lns_tls_t *t, const void *buf, size_t n, int flags, int idle_ms,
                       int64_t deadline_ms)
{
    if (t->held + n <= HOLD_MAX) { /* with what is held: one record */
        memcpy(t->hold + t->held, buf, n);
        t->held += n;
        if (flags & MSG_MORE)
            return 0;
        size_t h = t->held;
        t->held = 0;
        return write_raw(t, t->hold, h, idle_ms, deadline_ms);
    }
    if (t->held) {
        size_t h = t->held;
        t->held = 0;
        if (write_raw(t, t->hold, h, idle_ms, deadline_ms) < 0)
            return -1;
    }
    return write_raw(t, buf, n, idle_ms, deadline_ms);
}

/* The kernel encrypts (KTLS): SSL_sendfile moves the pages as sendfile(2) does. */
static int ktls_sendfile(lns_tls_t *t, int file_fd, off_t *offset, size_t n, int idle_ms,
                         int64_t deadline_ms)
{
    if (t->held) { /* what MSG_MORE held goes first */
        size_t h = t->held;
        t->held = 0;
        if (write_raw(t, t->hold, h, idle_ms, deadline_ms) < 0)
            return -1;
    }
    while (n > 0) {
        ERR_clear_error();
        errno = 0;
        ossl_ssize_t w = SSL_sendfile(t->ssl, file_fd, *offset, n, 0);
        if (w > 0) {
            *offset += w;
            n -= (size_t)w;
            continue;
        }
        if (ssl_step(t, (int)w, idle_ms, deadline_ms) < 0) {
            ERR_clear_error();
            return -1;
        }
    }
    return 0;
}

int lns_tls_sendfile_full(lns_tls_t *t, int file_fd, off_t *offset, size_t n, int idle_ms,
                          int64_t deadline_ms)
{
    if (BIO_get_ktls_send(SSL_get_wbio(t->ssl)))
        return ktls_sendfile(t, file_fd, offset, n, idle_ms, deadline_ms);
    if (!t->chunk && !(t->chunk = malloc(FILE_CHUNK))) {
        errno = ENOMEM;
        return -1;
    }
    while (n > 0) {
        size_t want = n < FILE_CHUNK ? n : FILE_CHUNK;
        ssize_t r = pread(file_fd, t->chunk, want, *offset);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r == 0)
                errno = EIO; /* the file is shorter than promised */
            return -1;
        }
        if (lns_tls_write_full(t, t->chunk, (size_t)r, n > (size_t)r ? MSG_MORE : 0, idle_ms,
                               deadline_ms) < 0)
            return -1;
        *offset += r;
        n -= (size_t)r;
    }
    return 0;
}

int lns_tls_idle_ok(lns_tls_t *t)
{
    unsigned char b;
    size_t got = 0;
    ERR_clear_error();
    errno = 0;
    int r = SSL_peek_ex(t->ssl, &b, 1, &got); /* handles tickets; the socket is non-blocking */
    if (r == 1)
        return 0; /* data nobody asked for */
    int e = SSL_get_error(t->ssl, r);
    ERR_clear_error();
    return e == SSL_ERROR_WANT_READ;
}
