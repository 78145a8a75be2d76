/* test_tls.c -- common/lns_tls: identities and their pins, the handshake on real loopback TCP,
 * pinning (a wrong key refused before a byte is sent), and lns_net's calls through a seal
 * (lines, data, sendfile, MSG_MORE, pending bytes, idle checks, resumption).
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lns_net.h"
#include "lns_test.h"
#include "lns_time.h"
#include "lns_tls.h"

#define BIG (300 * 1024 + 17) /* a file sent through the seal: several chunks and records */

static lns_tls_id_t *srv_id;
static lns_tls_ctx_t *srv_ctx;
static char file_path[4096];
static unsigned char file_data[BIG];

/* ---- a server thread: one connection, as the case says -------------------------------- */

enum { SRV_ECHO_LINE, SRV_SEND_FILE, SRV_COUNT };

typedef struct server {
    int lfd, port, mode;
    pthread_t th;
    int accepted;       /* the handshake completed */
    long app_bytes;     /* application bytes the client sent (SRV_COUNT) */
    char err[512];
} server_t;

static void *server_main(void *arg)
{
    server_t *s = arg;
    if (lns_wait(s->lfd, POLLIN, 10000, INT64_MAX) < 0)
        return NULL;
    int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
        return NULL;
    if (lns_tls_accept(srv_ctx, fd, 10000, lns_deadline_ms(10000), s->err, sizeof s->err) < 0) {
        close(fd);
        return NULL;
    }
    s->accepted = 1;
    if (s->mode == SRV_ECHO_LINE) {
        lns_rbuf_t rb;
        char *line;
        size_t len;
        lns_rbuf_init(&rb, fd, 64); /* smaller than a TLS record: pending bytes stay sealed */
        while (lns_rbuf_readline(&rb, &line, &len, 4096, 10000, 10000, INT64_MAX) == 1) {
            char out[4200];
            int n = snprintf(out, sizeof out, "echo %.*s\n", (int)len, line);
            lns_write_full(fd, "", 0, MSG_MORE, 10000, INT64_MAX);
            lns_write_full(fd, out, (size_t)n, 0, 10000, INT64_MAX);
        }
        lns_rbuf_free(&rb);
    } else if (s->mode == SRV_SEND_FILE) {
        int ffd = open(file_path, O_RDONLY);
        off_t off = 0;
        lns_write_full(fd, "HDR\n", 4, MSG_MORE, 10000, INT64_MAX);
        lns_sendfile_full(fd, ffd, &off, BIG, 10000, INT64_MAX);
        close(ffd);
    } else {
        s->app_bytes += lns_test_drain(fd, 5000);
    }
    lns_sock_close(fd);
    return NULL;
}

static int server_start(server_t *s, int mode)
{
    memset(s, 0, sizeof *s);
    s->mode = mode;
    s->lfd = lns_listen("127.0.0.1", 0, 8, &s->port, NULL, 0);
    if (s->lfd < 0 || pthread_create(&s->th, NULL, server_main, s) != 0)
        return -1;
    return 0;
}

static void server_end(server_t *s)
{
    pthread_join(s->th, NULL);
    close(s->lfd);
}

static int client_connect(lns_tls_ctx_t *ctx, const server_t *s, const char *pin, char *got,
                          char *err, size_t errlen)
{
    int fd = lns_connect("127.0.0.1", s->port, 5000);
    if (fd < 0)
        return -1;
    if (lns_tls_connect(ctx, fd, "127.0.0.1", s->port, pin, got, 10000, lns_deadline_ms(10000),
                        err, errlen) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static int suite_init(void)
{
    char err[512];
    snprintf(file_path, sizeof file_path, "%s", lns_test_path("big.bin"));
    lns_test_fill(file_data, sizeof file_data, 7);
    FILE *f = fopen(file_path, "w");
    if (!f || fwrite(file_data, 1, sizeof file_data, f) != sizeof file_data || fclose(f) != 0)
        return -1;
    srv_id = lns_tls_id_load(lns_test_path("server.key"), NULL, 1, err, sizeof err);
    srv_ctx = srv_id ? lns_tls_server_new(srv_id, err, sizeof err) : NULL;
    if (!srv_ctx)
        fprintf(stderr, "test_tls: %s\n", err);
    return srv_ctx ? 0 : -1;
}

static int suite_clean(void)
{
    lns_tls_ctx_free(srv_ctx);
    lns_tls_id_free(srv_id);
    return 0;
}

/* ---- cases ------------------------------------------------------------------------------ */

static void test_identity(void)
{
    char err[512] = "";
    const char *path = lns_test_path("id.key");
    struct stat st;
    unlink(path);
    lns_tls_id_t *a = lns_tls_id_load(path, NULL, 0, err, sizeof err);
    CU_ASSERT_PTR_NULL(a); /* create 0: a missing key is an error */
    a = lns_tls_id_load(path, NULL, 1, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL(stat(path, &st), 0);
    CU_ASSERT_EQUAL(st.st_mode & 0777, 0600);
    CU_ASSERT(lns_tls_pin_valid(lns_tls_id_pin(a)));
    /* loaded again: the same pin (the certificate is made anew, the key is the identity) */
    lns_tls_id_t *b = lns_tls_id_load(path, NULL, 1, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_STRING_EQUAL(lns_tls_id_pin(a), lns_tls_id_pin(b));
    CU_ASSERT_STRING_NOT_EQUAL(lns_tls_id_pin(a), lns_tls_id_pin(srv_id));
    lns_tls_id_free(b);
    /* open to others: refused, saying how to fix it */
    chmod(path, 0644);
    b = lns_tls_id_load(path, NULL, 1, err, sizeof err);
    CU_ASSERT_PTR_NULL(b);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "chmod 600"));
    CU_ASSERT_PTR_NULL(strchr(err, '\n'));
    lns_tls_id_free(b);
    lns_tls_id_free(a);
    CU_ASSERT(!lns_tls_pin_valid("sha256:xyz"));
    CU_ASSERT(!lns_tls_pin_valid("sha1:0123"));
    CU_ASSERT(!lns_tls_pin_valid(NULL));
}

static void test_lines_through_seal(void)
{
    server_t s;
    char err[512] = "", got[LNS_PIN_LEN] = "";
    lns_tls_ctx_t *cli = lns_tls_client_new(err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cli);
    CU_ASSERT_FATAL(server_start(&s, SRV_ECHO_LINE) == 0);
    int fd = client_connect(cli, &s, lns_tls_id_pin(srv_id), got, err, sizeof err);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_PTR_NOT_NULL(lns_tls_of(fd));
    CU_ASSERT_STRING_EQUAL(got, lns_tls_id_pin(srv_id));
    CU_ASSERT(lns_tls_kernel(fd) == 0 || lns_tls_kernel(fd) == 1);

    lns_rbuf_t rb;
    char *line;
    size_t len;
    lns_rbuf_init(&rb, fd, 16);
    /* held with MSG_MORE, then one line */
    CU_ASSERT_EQUAL(lns_write_full(fd, "hello ", 6, MSG_MORE, 5000, INT64_MAX), 0);
    CU_ASSERT_EQUAL(lns_write_full(fd, "world\n", 6, 0, 5000, INT64_MAX), 0);
    CU_ASSERT_EQUAL(lns_rbuf_readline(&rb, &line, &len, 4096, 5000, 5000, INT64_MAX), 1);
    CU_ASSERT(len == 16 && memcmp(line, "echo hello world", 16) == 0);
    /* a long line whose answer is bigger than the read buffer: the rest waits decrypted in
     * the seal, where poll() cannot see it; lns_wait and lns_sock_pending do */
    char big[3000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\n';
    CU_ASSERT_EQUAL(lns_write_full(fd, big, sizeof big, 0, 5000, INT64_MAX), 0);
    char head[8];
    CU_ASSERT_EQUAL(lns_read_full(fd, head, sizeof head, 5000, INT64_MAX), 0);
    CU_ASSERT(memcmp(head, "echo xxx", 8) == 0);
    CU_ASSERT(lns_sock_pending(fd) > 0);
    CU_ASSERT_EQUAL(lns_wait(fd, POLLIN, 0, INT64_MAX), 0);
    char rest[3000];
    CU_ASSERT_EQUAL(lns_read_full(fd, rest, sizeof big + 5 - 8, 5000, INT64_MAX), 0);
    CU_ASSERT_EQUAL(rest[sizeof big + 5 - 8 - 1], '\n');
    CU_ASSERT_EQUAL(lns_sock_idle_ok(fd), 1); /* tickets taken, nothing else */
    lns_rbuf_free(&rb);
    lns_sock_close(fd);
    CU_ASSERT_PTR_NULL(lns_tls_of(fd));
    server_end(&s);

    /* the session is resumed on the next connection to the same host and port */
    CU_ASSERT_FATAL(server_start(&s, SRV_ECHO_LINE) == 0);
    fd = client_connect(cli, &s, lns_tls_id_pin(srv_id), got, err, sizeof err);
    CU_ASSERT_FATAL(fd >= 0);
    /* a new listener has a new port: not the same peer, so a full handshake */
    CU_ASSERT_EQUAL(lns_tls_resumed(fd), 0);
    lns_sock_close(fd);
    server_end(&s);
    lns_tls_ctx_free(cli);
}

static void test_resumed(void)
{
    char err[512] = "";
    lns_tls_ctx_t *cli = lns_tls_client_new(err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cli);
    server_t s;
    memset(&s, 0, sizeof s);
    s.mode = SRV_ECHO_LINE;
    s.lfd = lns_listen("127.0.0.1", 0, 8, &s.port, NULL, 0);
    CU_ASSERT_FATAL(s.lfd >= 0);
    for (int round = 0; round < 2; round++) {
        CU_ASSERT_FATAL(pthread_create(&s.th, NULL, server_main, &s) == 0);
        int fd = client_connect(cli, &s, lns_tls_id_pin(srv_id), NULL, err, sizeof err);
        CU_ASSERT_FATAL(fd >= 0);
        char ans[16];
        CU_ASSERT_EQUAL(lns_write_full(fd, "a\n", 2, 0, 5000, INT64_MAX), 0);
        CU_ASSERT_EQUAL(lns_read_full(fd, ans, 7, 5000, INT64_MAX), 0); /* and the tickets */
        CU_ASSERT_EQUAL(lns_tls_resumed(fd), round);
        lns_sock_close(fd);
        pthread_join(s.th, NULL);
    }
    close(s.lfd);
    lns_tls_ctx_free(cli);
}

static void test_sendfile_through_seal(void)
{
    server_t s;
    char err[512] = "";
    lns_tls_ctx_t *cli = lns_tls_client_new(err, sizeof err);
    CU_ASSERT_FATAL(server_start(&s, SRV_SEND_FILE) == 0);
    int fd = client_connect(cli, &s, lns_tls_id_pin(srv_id), NULL, err, sizeof err);
    CU_ASSERT_FATAL(fd >= 0);
    static unsigned char got[BIG];
    char hdr[4];
    CU_ASSERT_EQUAL(lns_read_full(fd, hdr, 4, 5000, INT64_MAX), 0);
    CU_ASSERT(memcmp(hdr, "HDR\n", 4) == 0);
    CU_ASSERT_EQUAL(lns_read_full(fd, got, BIG, 5000, INT64_MAX), 0);
    CU_ASSERT(memcmp(got, file_data, BIG) == 0);
    char more;
    CU_ASSERT_EQUAL(lns_read_some(fd, &more, 1, 5000, INT64_MAX), 0); /* close_notify: EOF */
    lns_sock_close(fd);
    server_end(&s);
    lns_tls_ctx_free(cli);
}

/* A server with another key (a man in the middle): refused before a byte of ours is sent,
 * with a line naming both pins; and without a pin a self-signed key does not verify. */
static void test_wrong_pin(void)
{
    server_t s;
    char err[512] = "", got[LNS_PIN_LEN] = "";
    lns_tls_ctx_t *cli = lns_tls_client_new(err, sizeof err);
    lns_tls_id_t *other = lns_tls_id_load(lns_test_path("other.key"), NULL, 1, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(other);
    CU_ASSERT_FATAL(server_start(&s, SRV_COUNT) == 0);
    errno = 0;
    int fd = client_connect(cli, &s, lns_tls_id_pin(other), got, err, sizeof err);
    CU_ASSERT_EQUAL(fd, -1);
    CU_ASSERT_EQUAL(errno, EACCES);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, lns_tls_id_pin(other)));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, lns_tls_id_pin(srv_id)));
    CU_ASSERT_STRING_EQUAL(got, lns_tls_id_pin(srv_id));
    server_end(&s);
    CU_ASSERT_EQUAL(s.app_bytes, 0);

    CU_ASSERT_FATAL(server_start(&s, SRV_COUNT) == 0);
    errno = 0;
    fd = client_connect(cli, &s, NULL, NULL, err, sizeof err);
    CU_ASSERT_EQUAL(fd, -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "does not verify"));
    server_end(&s);
    CU_ASSERT_EQUAL(s.app_bytes, 0);
    lns_tls_id_free(other);
    lns_tls_ctx_free(cli);
}

/* A plaintext peer that answers a ClientHello with an IBP error line: a handshake error, not
 * a fallback. */
static void test_not_tls(void)
{
    int port, lfd = lns_listen("127.0.0.1", 0, 8, &port, NULL, 0);
    CU_ASSERT_FATAL(lfd >= 0);
    int fd = lns_connect("127.0.0.1", port, 5000);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_EQUAL_FATAL(lns_wait(lfd, POLLIN, 5000, INT64_MAX), 0);
    int a = accept(lfd, NULL, NULL);
    CU_ASSERT_FATAL(a >= 0);
    CU_ASSERT(write(a, "-21 \n", 5) == 5);
    char err[512] = "";
    lns_tls_ctx_t *cli = lns_tls_client_new(err, sizeof err);
    errno = 0;
    CU_ASSERT_EQUAL(lns_tls_connect(cli, fd, "127.0.0.1", port, lns_tls_id_pin(srv_id), NULL,
                                    5000, lns_deadline_ms(5000), err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "TLS handshake"));
    CU_ASSERT_PTR_NULL(lns_tls_of(fd));
    close(a);
    close(fd);
    close(lfd);
    lns_tls_ctx_free(cli);
}

/* No pin: the certificate must verify against the system's trust store, which a client's
 * context reads at the first connection that needs it, not when it is made (reading it costs
 * some 30 ms of CPU, and pinned depots never use it): SSL_CERT_FILE set after
 * lns_tls_client_new is the store used.  The CA and the server's certificate are made with
 * the openssl command. */
static void test_trust_store_at_first_use(void)
{
    char err[512] = "", cmd[8192];
    const char *dir = lns_test_path("ca");
    const char *key = lns_test_path("ca/srv.key");
    snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
    CU_ASSERT_FATAL(system(cmd) == 0);
    unlink(key);
    lns_tls_id_t *made = lns_tls_id_load(key, NULL, 1, err, sizeof err); /* the key, 0600 */
    CU_ASSERT_PTR_NOT_NULL_FATAL(made);
    lns_tls_id_free(made);
    snprintf(cmd, sizeof cmd,
             "(cd %s && printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >ext.cnf && "
             "openssl req -x509 -newkey ed25519 -nodes -keyout ca.key -out ca.pem -days 2 "
             "-subj /CN=lns-test-ca && "
             "openssl req -new -key srv.key -subj /CN=127.0.0.1 -out srv.csr && "
             "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
             "-days 2 -extfile ext.cnf -out srv.pem) >%s/openssl.log 2>&1", dir, dir);
    CU_ASSERT_FATAL(system(cmd) == 0);
    char cert[4096], ca[4096];
    snprintf(cert, sizeof cert, "%s/srv.pem", dir);
    snprintf(ca, sizeof ca, "%s/ca.pem", dir);
    lns_tls_id_t *id = lns_tls_id_load(key, cert, 0, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(id);
    lns_tls_ctx_t *ca_srv = lns_tls_server_new(id, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ca_srv);
    lns_tls_ctx_t *keep = srv_ctx;
    srv_ctx = ca_srv; /* the server thread's context, for this case */

    unsetenv("SSL_CERT_FILE");
    lns_tls_ctx_t *cli = lns_tls_client_new(err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cli);
    setenv("SSL_CERT_FILE", ca, 1); /* after the context was made */
    server_t s;
    CU_ASSERT_FATAL(server_start(&s, SRV_ECHO_LINE) == 0);
    int fd = client_connect(cli, &s, NULL, NULL, err, sizeof err);
    CU_ASSERT(fd >= 0);
    if (fd < 0)
        fprintf(stderr, "test_tls: %s\n", err);
    else
        lns_sock_close(fd);
    server_end(&s);
    lns_tls_ctx_free(cli);

    /* and a store without that CA: the same certificate does not verify */
    setenv("SSL_CERT_FILE", cert, 1); /* holds the server's certificate, not its issuer */
    cli = lns_tls_client_new(err, sizeof err);
    CU_ASSERT_FATAL(server_start(&s, SRV_COUNT) == 0);
    err[0] = 0;
    fd = client_connect(cli, &s, NULL, NULL, err, sizeof err);
    CU_ASSERT_EQUAL(fd, -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "does not verify"));
    server_end(&s);
    lns_tls_ctx_free(cli);
    unsetenv("SSL_CERT_FILE");
    srv_ctx = keep;
    lns_tls_ctx_free(ca_srv);
    lns_tls_id_free(id);
}

static const lns_test_case tests[] = {
    {"identity: made 0600, same pin when loaded again, refused when open", test_identity},
    {"lines through a seal: MSG_MORE, pending bytes poll() cannot see", test_lines_through_seal},
    {"a session resumed on the next connection", test_resumed},
    {"sendfile through a seal", test_sendfile_through_seal},
    {"another key: refused before a byte is sent, both pins named", test_wrong_pin},
    {"a plaintext answer to a ClientHello: an error, no seal", test_not_tls},
    {"no pin: the trust store, read at the first connection that needs it",
     test_trust_store_at_first_use},
};

LNS_TEST_MAIN_WITH("lns_tls", suite_init, suite_clean, tests)
