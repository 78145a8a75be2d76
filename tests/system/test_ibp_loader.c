/* test_ibp_loader.c -- libibp's piecewise LOAD (ibp_loader_*) against real depots: pieces
 * of any size, connections that must not be pooled after a partial read, and aborts from
 * another thread while the start or a read is blocked on a depot that stopped answering.
 *
 * A depot that has stopped (SIGSTOP) still completes TCP handshakes and buffers what we send,
 * so without an abort a start or read on it would wait for the client's I/O timeout (20 s
 * here); every abort test checks that the blocked call returned within a second. */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ibp.h"
#include "lns_net.h"
#include "lns_test.h"
#include "lns_time.h"
#include "test_depot.h"

#define MiB (1024u * 1024u)

static test_depot_t dep;

static int suite_init(void)
{
    return td_start(&dep, NULL);
}

static int suite_clean(void)
{
    int clean = lns_test_server_log_clean(&dep.srv);
    lns_test_server_stop(&dep.srv);
    return clean ? 0 : -1;
}

/* A client whose connects wait connect_ms at most. */
static ibp_client_t *client_connect_ms(int connect_ms)
{
    ibp_client_opts_t o;
    ibp_client_opts_init(&o);
    o.io_timeout_ms = 20000;
    o.connect_timeout_ms = connect_ms;
    return ibp_client_new(&o);
}

static ibp_client_t *client(void)
{
    return client_connect_ms(5000);
}

/* An allocation on d holding n pattern bytes (seed); caps filled, data returned (malloc'd). */
static unsigned char *stored(ibp_client_t *c, const test_depot_t *d, size_t n, uint64_t seed,
                             ibp_caps_t *caps)
{
    unsigned char *data = malloc(n);
    ibp_attr_t a = {n, 600, IBP_HARD, IBP_BYTEARRAY};
    uint64_t got = 0;
    lns_test_fill(data, n, seed);
    CU_ASSERT_EQUAL_FATAL(ibp_allocate(c, "127.0.0.1", d->port, NULL, &a, caps), IBP_OK);
    CU_ASSERT_EQUAL_FATAL(ibp_store(c, caps->write, data, n, &got), IBP_OK);
    CU_ASSERT_EQUAL_FATAL(got, n);
    return data;
}

static void test_pieces(void)
{
    ibp_client_t *c = client();
    ibp_caps_t caps;
    size_t n = 3 * MiB + 17;
    unsigned char *data = stored(c, &dep, n, 1, &caps), *buf = malloc(n);
    static const size_t steps[] = {1000, 4096, MiB, 3 * MiB};
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        uint64_t off = 5, len = n - 5 - k;
        ibp_loader_t *l = ibp_loader_new(c);
        CU_ASSERT_PTR_NOT_NULL_FATAL(l);
        CU_ASSERT_EQUAL_FATAL(ibp_loader_start(l, caps.read, off, len), IBP_OK);
        uint64_t got = 0;
        int rc = IBP_OK;
        while (got < len && rc == IBP_OK) {
            size_t piece = len - got < steps[k] ? (size_t)(len - got) : steps[k];
            rc = ibp_loader_read(l, buf + got, piece);
            got += piece;
        }
        CU_ASSERT_EQUAL_FATAL(rc, IBP_OK);
        CU_ASSERT_EQUAL(ibp_loader_read(l, buf, 1), IBP_E_INV_PAR_SIZE); /* past the end */
        ibp_loader_free(l);
        CU_ASSERT(memcmp(buf, data + off, (size_t)len) == 0);
    }
    /* a depot error comes back from start, and the loader stays unusable */
    ibp_loader_t *l = ibp_loader_new(c);
    CU_ASSERT_NOT_EQUAL(ibp_loader_start(l, caps.read, n - 1, 2), IBP_OK);
    CU_ASSERT_NOT_EQUAL(ibp_loader_read(l, buf, 1), IBP_OK);
    ibp_loader_free(l);
    free(buf);
    free(data);
    ibp_client_free(c);
}

/* A loader freed part way must not leave its connection in the pool: the next call on the
 * same client would read the rest of the old reply as its own. */
static void test_partial_not_pooled(void)
{
    ibp_client_t *c = client();
    ibp_caps_t caps;
    size_t n = 2 * MiB;
    unsigned char *data = stored(c, &dep, n, 2, &caps), *buf = malloc(n);
    for (int i = 0; i < 3; i++) {
        ibp_loader_t *l = ibp_loader_new(c);
        CU_ASSERT_EQUAL_FATAL(ibp_loader_start(l, caps.read, 0, n), IBP_OK);
        CU_ASSERT_EQUAL(ibp_loader_read(l, buf, 1000), IBP_OK);
        ibp_loader_free(l);
        memset(buf, 0, n);
        CU_ASSERT_EQUAL_FATAL(ibp_load(c, caps.read, 100, n - 100, buf), IBP_OK);
        CU_ASSERT(memcmp(buf, data + 100, n - 100) == 0);
    }
    free(buf);
    free(data);
    ibp_client_free(c);
}

typedef struct blocked {
    ibp_loader_t *l;
    const char *rcap;
    uint64_t len;
    unsigned char *buf;
    int start;       /* 1: block in start; 0: start, read 1 MiB, then block in the read */
    int rc;
    int64_t done_ms; /* when the blocked call returned */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int started;
} blocked_t;

static void *blocked_main(void *arg)
{
    blocked_t *b = arg;
    if (!b->start) {
        b->rc = ibp_loader_start(b->l, b->rcap, 0, b->len);
        if (b->rc == IBP_OK)
            b->rc = ibp_loader_read(b->l, b->buf, MiB);
    }
    pthread_mutex_lock(&b->mu);
    b->started = 1;
    pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
    if (b->start)
        b->rc = ibp_loader_start(b->l, b->rcap, 0, b->len);
    else if (b->rc == IBP_OK)
        b->rc = ibp_loader_read(b->l, b->buf + MiB, (size_t)b->len - MiB);
    b->done_ms = lns_mono_ms();
    return NULL;
}

/* Block a start (start = 1) or a read (0) on a stopped depot, abort it from here, and check
 * that the call returns an error at once; afterwards the client still works. */
static void abort_blocked(int start)
{
    test_depot_t v;
    CU_ASSERT_FATAL(td_start(&v, NULL) == 0);
    ibp_client_t *c = client();
    ibp_caps_t caps;
    size_t n = 32 * MiB; /* far more than the socket buffers hold */
    unsigned char *data = stored(c, &v, n, 3, &caps);
    blocked_t b = {ibp_loader_new(c), caps.read, n, malloc(n), start, 0, 0,
                   PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    if (start)
        lns_test_server_kill(&v.srv, SIGSTOP);
    pthread_t t;
    pthread_create(&t, NULL, blocked_main, &b);
    pthread_mutex_lock(&b.mu);
    while (!b.started)
        pthread_cond_wait(&b.cv, &b.mu);
    pthread_mutex_unlock(&b.mu);
    if (!start)
        lns_test_server_kill(&v.srv, SIGSTOP);
    usleep(300 * 1000); /* let it block */
    int64_t t0 = lns_mono_ms();
    ibp_loader_abort(b.l);
    pthread_join(t, NULL);
    CU_ASSERT_NOT_EQUAL(b.rc, IBP_OK);
    CU_ASSERT(b.done_ms - t0 < 10000); /* at once: a hang bound, half the 20 s timeout */
    CU_ASSERT(b.done_ms >= t0);         /* it was really blocked until the abort */
    ibp_loader_free(b.l);
    kill(v.pid, SIGCONT);
    /* the aborted connection was not pooled: a new LOAD gets the right bytes */
    memset(b.buf, 0, n);
    CU_ASSERT_EQUAL(ibp_load(c, caps.read, 0, MiB, b.buf), IBP_OK);
    CU_ASSERT(memcmp(b.buf, data, MiB) == 0);
    free(b.buf);
    free(data);
    ibp_client_free(c);
    lns_test_server_stop(&v.srv);
}

static void test_abort_start(void)
{
    abort_blocked(1);
}

static void test_abort_read(void)
{
    abort_blocked(0);
}

/* An abort while the start is still connecting: a listener that never accepts, its queue full,
 * drops the SYN, so the connect would wait for its timeout (the connect that a depot whose
 * link is clogged or gone makes a fetch wait for; at the end of a download the streams are
 * joined, so one such connect held the whole download for seconds). */
static void test_abort_connect(void)
{
    int port = 0, fill[3], nfill = 0;
    int lfd = lns_listen("127.0.0.1", 0, 0, &port, NULL, 0);
    CU_ASSERT_FATAL(lfd >= 0);
    for (int i = 0; i < 3; i++) /* fill the accept queue: later SYNs are dropped */
        if ((fill[nfill] = lns_connect("127.0.0.1", port, 300)) >= 0)
            nfill++;
    ibp_client_t *c = client_connect_ms(20000); /* the abort is told from this by a bound */
    ibp_caps_t caps;
    unsigned char *data = stored(c, &dep, 4096, 5, &caps);
    char rcap[1024], from[32], to[32];
    snprintf(from, sizeof from, ":%d/", dep.port);
    snprintf(to, sizeof to, ":%d/", port);
    const char *at = strstr(caps.read, from);
    CU_ASSERT_PTR_NOT_NULL_FATAL(at);
    snprintf(rcap, sizeof rcap, "%.*s%s%s", (int)(at - caps.read), caps.read, to,
             at + strlen(from));
    blocked_t b = {ibp_loader_new(c), rcap, 4096, malloc(4096), 1, 0, 0,
                   PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    pthread_t t;
    pthread_create(&t, NULL, blocked_main, &b);
    usleep(300 * 1000);
    int64_t t0 = lns_mono_ms();
    ibp_loader_abort(b.l);
    pthread_join(t, NULL);
    CU_ASSERT_NOT_EQUAL(b.rc, IBP_OK);
    CU_ASSERT(b.done_ms - t0 < 10000); /* at once: a hang bound, half the 20 s timeout */
    CU_ASSERT(b.done_ms >= t0); /* it was really blocked in the connect until the abort */
    ibp_loader_free(b.l);
    for (int i = 0; i < nfill; i++)
        close(fill[i]);
    close(lfd);
    free(b.buf);
    free(data);
    ibp_client_free(c);
}

/* An abort before the start: the start fails at once and sends nothing. */
static void test_abort_first(void)
{
    ibp_client_t *c = client();
    ibp_caps_t caps;
    unsigned char *data = stored(c, &dep, 4096, 4, &caps), buf[4096];
    ibp_loader_t *l = ibp_loader_new(c);
    ibp_loader_abort(l);
    CU_ASSERT_NOT_EQUAL(ibp_loader_start(l, caps.read, 0, 4096), IBP_OK);
    ibp_loader_free(l);
    CU_ASSERT_EQUAL(ibp_load(c, caps.read, 0, 4096, buf), IBP_OK);
    CU_ASSERT(memcmp(buf, data, 4096) == 0);
    free(data);
    ibp_client_free(c);
}

static const lns_test_case tests[] = {
    {"pieces of any size, errors", test_pieces},
    {"freed part way: not pooled", test_partial_not_pooled},
    {"abort a start blocked on a stopped depot", test_abort_start},
    {"abort a read blocked on a stopped depot", test_abort_read},
    {"abort before the start", test_abort_first},
    {"abort a start still connecting", test_abort_connect},
};

LNS_TEST_MAIN_WITH("ibp loader", suite_init, suite_clean, tests)
