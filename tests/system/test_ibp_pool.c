/* test_ibp_pool.c -- libibp's connections: reuse, the retry rule, concurrency, and what
 * happens when a depot dies, stops, or says odd things.
 *
 * Two kinds of peer.  Real depots (td_start) for reuse, idle close, concurrency, SIGKILL and
 * SIGSTOP.  A scripted fake depot (a thread in this program) for what a real depot does only
 * by bad luck or not at all: closing a pooled connection just as a request arrives, a
 * parting "-66", replies with odd white space, truncated data.  The fake counts connections
 * and request lines, so the tests can tell a retry from a reuse.  The pool's entries (one per
 * depot: bounded, least recently used dropped, idle ones expired) are counted through the
 * internal ibp_pool_entries against plain loopback listeners and ports that refuse.
 *
 * Connections are counted from /proc/net/tcp: every socket, in any state (TIME_WAIT
 * included), with the depot's port at one end names one connection by its other port. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ibp.h"
#include "ibp_client_int.h"
#include "lns_test.h"
#include "test_depot.h"

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The peer ports of the TCP sockets (other than listeners) with port at either end, into
 * seen[max]: their number. */
static int peer_ports(int port, int *seen, int max)
{
    FILE *f = fopen("/proc/net/tcp", "r");
    char line[512];
    int n = 0;
    if (!f)
        return -1;
    if (!fgets(line, sizeof line, f)) {
        fclose(f);
        return -1;
    }
    while (fgets(line, sizeof line, f)) {
        unsigned la, lp, ra, rp, st;
        if (sscanf(line, " %*d: %x:%x %x:%x %x", &la, &lp, &ra, &rp, &st) != 5 || st == 0x0A)
            continue;
        int other;
        if ((int)lp == port)
            other = (int)rp;
        else if ((int)rp == port)
            other = (int)lp;
        else
            continue;
        int dup = 0;
        for (int i = 0; i < n; i++)
            dup |= seen[i] == other;
        if (!dup && n < max)
            seen[n++] = other;
    }
    fclose(f);
    return n;
}

/* Sockets on the port when the test's depot started: a TIME_WAIT left on that port number by
 * an earlier connection of the machine is not one of the test's (it made this test flaky). */
static int stale[256], nstale;

static void connections_baseline(int port)
{
    nstale = peer_ports(port, stale, 256);
    if (nstale < 0)
        nstale = 0;
}

/* The connections between the test's clients and its depot on port: distinct peer ports,
 * less those of the baseline. */
static int count_connections(int port)
{
    int seen[4096], n = peer_ports(port, seen, 4096), fresh = 0;
    if (n < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        int old = 0;
        for (int k = 0; k < nstale; k++)
            old |= stale[k] == seen[i];
        fresh += !old;
    }
    return fresh;
}

static ibp_client_t *client_with(int max_idle, int max_idle_s, int io_ms)
{
    ibp_client_opts_t o;
    ibp_client_opts_init(&o);
    o.version = 1; /* the pool's rules; version detection is test_ibp_version's */
    o.tls = IBP_TLS_OFF; /* connections counted as the pool makes them: no STATUS asking a
                            depot for its pin first (the sealed wire: test_depot_tls) */
    o.max_idle_per_depot = max_idle;
    o.max_idle_s = max_idle_s;
    o.io_timeout_ms = io_ms;
    o.connect_timeout_ms = 2000;
    return ibp_client_new(&o);
}

static int alloc(ibp_client_t *c, int port, uint64_t size, ibp_caps_t *caps)
{
    ibp_attr_t a = {size, 600, IBP_HARD, IBP_BYTEARRAY};
    return ibp_allocate(c, "127.0.0.1", port, NULL, &a, caps);
}

/* A depot of the test's own (extra: its arguments, may be NULL), a client of 8 idle
 * connections for 30 s with I/O timeout io_ms, and a hard allocation of size on the depot. */
static ibp_client_t *depot_with_alloc(test_depot_t *d, const char *extra, int io_ms,
                                      uint64_t size, ibp_caps_t *caps)
{
    CU_ASSERT_EQUAL_FATAL(td_start(d, extra), 0);
    connections_baseline(d->port);
    ibp_client_t *c = client_with(8, 30, io_ms);
    CU_ASSERT_EQUAL_FATAL(alloc(c, d->port, size, caps), IBP_OK);
    return c;
}

/* ---- reuse ---- */

static void test_reuse(void)
{
    test_depot_t d;
    ibp_caps_t caps;
    ibp_probe_t p;
    char buf[64];

    ibp_client_t *c = depot_with_alloc(&d, NULL, 10000, 1 << 20, &caps);
    int errors = 0;
    for (int i = 0; i < 100; i++) {
        errors += ibp_store(c, caps.write, "0123456789", 10, NULL) != IBP_OK;
        errors += ibp_load(c, caps.read, (uint64_t)i * 10, 10, buf) != IBP_OK;
        errors += ibp_probe(c, caps.manage, &p) != IBP_OK;
    }
    CU_ASSERT_EQUAL(errors, 0);
    /* 301 requests, one after the other: one connection */
    int n = count_connections(d.port);
    if (n != 1)
        fprintf(stderr, "test_reuse: %d connections to the depot, not 1\n", n);
    CU_ASSERT_EQUAL(n, 1);
    ibp_client_free(c);

    /* the same with pooling off: one connection per request (the count really counts) */
    c = client_with(0, 30, 10000);
    for (int i = 0; i < 20; i++)
        errors += ibp_probe(c, caps.manage, &p) != IBP_OK;
    CU_ASSERT_EQUAL(errors, 0);
    CU_ASSERT(count_connections(d.port) >= 21);
    ibp_client_free(c);
    lns_test_server_stop(&d.srv);
}

/* Pooled connections older than max_idle_s are not reused. */
static void test_max_idle_age(void)
{
    test_depot_t d;
    ibp_depot_status_t s;
    CU_ASSERT_EQUAL_FATAL(td_start(&d, NULL), 0);
    connections_baseline(d.port);
    ibp_client_t *c = client_with(8, 1, 10000);
    CU_ASSERT_EQUAL(ibp_status(c, "127.0.0.1", d.port, NULL, NULL, &s), IBP_OK);
    CU_ASSERT_EQUAL(ibp_status(c, "127.0.0.1", d.port, NULL, NULL, &s), IBP_OK);
    CU_ASSERT_EQUAL(count_connections(d.port), 1);
    usleep(2100 * 1000);
    CU_ASSERT_EQUAL(ibp_status(c, "127.0.0.1", d.port, NULL, NULL, &s), IBP_OK);
    CU_ASSERT_EQUAL(count_connections(d.port), 2);
    ibp_client_free(c);
    lns_test_server_stop(&d.srv);
}

/* The depot closes an idle pooled connection (--idle-timeout 1); the next call must work. */
static void test_idle_close(void)
{
    test_depot_t d;
    ibp_caps_t caps;
    char buf[5];
    ibp_client_t *c = depot_with_alloc(&d, "--idle-timeout 1", 10000, 100, &caps);
    CU_ASSERT_EQUAL(ibp_store(c, caps.write, "hello", 5, NULL), IBP_OK);
    sleep(2);
    CU_ASSERT_EQUAL(ibp_load(c, caps.read, 0, 5, buf), IBP_OK);
    CU_ASSERT(memcmp(buf, "hello", 5) == 0);
    sleep(2);
    CU_ASSERT_EQUAL(ibp_store(c, caps.write, "world", 5, NULL), IBP_OK);
    CU_ASSERT_EQUAL(count_connections(d.port), 3);
    ibp_client_free(c);
    lns_test_server_stop(&d.srv);
}

/* ---- the scripted fake depot ---- */

typedef struct step {
    const char *reply; /* bytes to send after reading one request line */
    size_t len;        /* 0: strlen(reply) */
    int action;        /* what to do after the reply */
} step_t;

enum { KEEP = 0, CLOSE = 1, HANG = 2 };

typedef struct fake {
    int lfd, port;
    pthread_t th;
    const step_t *steps;
    int nsteps;
    volatile int stop;
    int conns;    /* connections accepted */
    int requests; /* request lines read */
} fake_t;

static int read_line(int fd, volatile int *stop)
{
    char ch;
    int n = 0;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (*stop)
            return -1;
        if (poll(&p, 1, 100) <= 0)
            continue;
        if (read(fd, &ch, 1) != 1)
            return -1;
        if (ch == '\n')
            return n;
        n++;
    }
}

static void *fake_main(void *arg)
{
    fake_t *f = arg;
    while (!f->stop) {
        struct pollfd p = {.fd = f->lfd, .events = POLLIN};
        if (poll(&p, 1, 100) <= 0)
            continue;
        int fd = accept(f->lfd, NULL, NULL);
        if (fd < 0)
            continue;
        __atomic_add_fetch(&f->conns, 1, __ATOMIC_SEQ_CST);
        for (;;) {
            if (read_line(fd, &f->stop) < 0)
                break;
            int i = __atomic_fetch_add(&f->requests, 1, __ATOMIC_SEQ_CST);
            if (i >= f->nsteps)
                break;
            const step_t *s = &f->steps[i];
            if (s->reply) {
                size_t len = s->len ? s->len : strlen(s->reply);
                if (send(fd, s->reply, len, MSG_NOSIGNAL) != (ssize_t)len)
                    break;
            }
            if (s->action == CLOSE)
                break;
            if (s->action == HANG) {
                while (!f->stop)
                    usleep(20000);
                break;
            }
        }
        close(fd);
    }
    return NULL;
}

static int fake_start(fake_t *f, const step_t *steps, int nsteps)
{
    memset(f, 0, sizeof *f);
    f->steps = steps;
    f->nsteps = nsteps;
    if ((f->lfd = raw_listen_loopback(&f->port)) < 0)
        return -1;
    return pthread_create(&f->th, NULL, fake_main, f) == 0 ? 0 : -1;
}

static void fake_stop(fake_t *f)
{
    f->stop = 1;
    pthread_join(f->th, NULL);
    close(f->lfd);
}

#define PROBE_OK "1 1 1 10 100 50 2 1\n"
#define NSTEPS(a) ((int)(sizeof(a) / sizeof(a[0])))

static void fake_cap(const fake_t *f, const char *kind, char *buf, size_t size)
{
    snprintf(buf, size, "ibp://127.0.0.1:%d/0#0123456789abcdef/42/%s", f->port, kind);
}

/* What a scripted case starts with: the fake depot, a capability of one kind on it, and a
 * client with the given io timeout. */
typedef struct scene {
    fake_t f;
    char cap[256];
    ibp_client_t *c;
} scene_t;

static void scene_start(scene_t *sc, const step_t *steps, int nsteps, const char *kind, int io_ms)
{
    CU_ASSERT_EQUAL_FATAL(fake_start(&sc->f, steps, nsteps), 0);
    fake_cap(&sc->f, kind, sc->cap, sizeof sc->cap);
    sc->c = client_with(8, 30, io_ms);
}

static void scene_end(scene_t *sc)
{
    ibp_client_free(sc->c);
    fake_stop(&sc->f);
}

/* Two probes in a row, what each must return, and what the depot then has seen. */
static void probe_twice(scene_t *sc, ibp_probe_t *p, int first, int second, int conns,
                        int requests)
{
    CU_ASSERT_EQUAL(ibp_probe(sc->c, sc->cap, p), first);
    CU_ASSERT_EQUAL(ibp_probe(sc->c, sc->cap, p), second);
    CU_ASSERT_EQUAL(sc->f.conns, conns);
    CU_ASSERT_EQUAL(sc->f.requests, requests);
}

/* A pooled connection closed by the depot as the request arrives: retried once, quietly. */
static void test_retry_reused(void)
{
    static const step_t steps[] = {{PROBE_OK, 0, KEEP}, {NULL, 0, CLOSE}, {PROBE_OK, 0, KEEP}};
    scene_t sc;
    ibp_probe_t p;
    scene_start(&sc, steps, NSTEPS(steps), "MANAGE", 5000);
    probe_twice(&sc, &p, IBP_OK, IBP_OK, 2, 3);
    CU_ASSERT_EQUAL(p.cur_size, 10);
    scene_end(&sc);
}

/* The same on a new connection is the depot's failure, not a stale pool: no retry. */
static void test_no_retry_fresh(void)
{
    static const step_t steps[] = {{NULL, 0, CLOSE}, {PROBE_OK, 0, KEEP}};
    scene_t sc;
    ibp_probe_t p;
    scene_start(&sc, steps, NSTEPS(steps), "READ", 5000);
    CU_ASSERT_EQUAL(ibp_probe(sc.c, sc.cap, &p), IBP_E_SOCK_READ);
    CU_ASSERT_EQUAL(sc.f.requests, 1);
    CU_ASSERT_EQUAL(sc.f.conns, 1);
    scene_end(&sc);
}

/* Only once: a second failure on the new connection is returned. */
static void test_retry_once(void)
{
    static const step_t steps[] = {{PROBE_OK, 0, KEEP}, {NULL, 0, CLOSE}, {NULL, 0, CLOSE}};
    scene_t sc;
    ibp_probe_t p;
    scene_start(&sc, steps, NSTEPS(steps), "READ", 5000);
    probe_twice(&sc, &p, IBP_OK, IBP_E_SOCK_READ, 2, 3);
    scene_end(&sc);
}

/* "-66" on a pooled connection is an ACCRE depot's parting line as it closes the connection
 * (idle, or after an error), which may come after the pool's check: not the reply, so the
 * request goes again on a new connection.  On a new connection it is the depot asking us to
 * back off: returned, not retried. */
static void test_out_of_sockets(void)
{
    static const step_t steps[] = {
        {PROBE_OK, 0, KEEP}, {"-66 0.236328\n", 0, CLOSE}, {PROBE_OK, 0, KEEP},
        {"-66 5\n", 0, CLOSE}, {PROBE_OK, 0, KEEP}};
    scene_t sc;
    ibp_probe_t p;
    scene_start(&sc, steps, NSTEPS(steps), "READ", 5000);
    probe_twice(&sc, &p, IBP_OK, IBP_OK, 2, 3);
    ibp_client_free(sc.c);
    sc.c = client_with(8, 30, 5000); /* nothing pooled: the next -66 comes on a new connection */
    CU_ASSERT_EQUAL(ibp_probe(sc.c, sc.cap, &p), IBP_E_OUT_OF_SOCKETS);
    CU_ASSERT_EQUAL(ibp_probe(sc.c, sc.cap, &p), IBP_OK);
    CU_ASSERT_EQUAL(sc.f.conns, 4);
    CU_ASSERT_EQUAL(sc.f.requests, 5);
    scene_end(&sc);
}

/* Replies with odd white space are fine; malformed ones are BAD_FORMAT and never pooled. */
static void test_reply_forms(void)
{
    static const step_t steps[] = {
        {" -4 \n", 0, KEEP},                    /* 1: error with spaces */
        {"1 1 1 10 100 50 2 1 \r\n", 0, KEEP}, /* 2: CRLF and trailing space */
        {"\t1  2 1 10 100 50 2 1\n", 0, KEEP}, /* 3: leading tab, double space */
        {"hello\n", 0, KEEP},                   /* 4: no status */
        {"1 1 1\n", 0, KEEP},                   /* 5: too few fields */
        {"2 1 1 10 100 50 2 1\n", 0, KEEP},    /* 6: status 2 */
        {"1 1 1 10 x 50 2 1\n", 0, KEEP},      /* 7: junk number */
        {"1 5\n12345", 0, KEEP},                /* 8: LOAD of 10 announced as 5 */
        {"1 10\nabc", 0, CLOSE},                /* 9: LOAD cut short */
        {"1 \n", 0, KEEP},                      /* 10: INCR ok */
    };
    scene_t sc;
    char mcap[256], buf[16];
    ibp_probe_t p;
    scene_start(&sc, steps, NSTEPS(steps), "READ", 5000);
    fake_cap(&sc.f, "MANAGE", mcap, sizeof mcap);
    ibp_client_t *c = sc.c;
    const char *rcap = sc.cap;
    CU_ASSERT_EQUAL(ibp_probe(c, rcap, &p), IBP_E_CAP_NOT_FOUND);
    CU_ASSERT_EQUAL(ibp_probe(c, rcap, &p), IBP_OK);
    CU_ASSERT_EQUAL(p.read_refs, 1);
    CU_ASSERT_EQUAL(ibp_probe(c, rcap, &p), IBP_OK);
    CU_ASSERT_EQUAL(p.read_refs, 2);
    CU_ASSERT_EQUAL(p.max_size, 100);
    CU_ASSERT_EQUAL(p.seconds_left, 50);
    CU_ASSERT_EQUAL(ibp_probe(c, rcap, &p), IBP_E_BAD_FORMAT);
    CU_ASSERT_EQUAL(ibp_probe(c, rcap, &p), IBP_E_BAD_FORMAT);
    CU_ASSERT_EQUAL(ibp_probe(c, rcap, &p), IBP_E_BAD_FORMAT);
    CU_ASSERT_EQUAL(ibp_probe(c, rcap, &p), IBP_E_BAD_FORMAT);
    CU_ASSERT_EQUAL(ibp_load(c, rcap, 0, 10, buf), IBP_E_BAD_FORMAT);
    CU_ASSERT_EQUAL(ibp_load(c, rcap, 0, 10, buf), IBP_E_SOCK_READ);
    CU_ASSERT_EQUAL(ibp_incr(c, mcap, IBP_READCAP), IBP_OK);
    /* a depot error (1) keeps the connection, so 1..4 share one; every malformed reply
     * (4..9) costs its connection */
    CU_ASSERT_EQUAL(sc.f.requests, 10);
    CU_ASSERT_EQUAL(sc.f.conns, 7);
    scene_end(&sc);
}

/* Version-0 STATUS: no status field, a NUL, then the close. */
static void test_status_v0_forms(void)
{
    static const step_t steps[] = {
        {"10 2 20 3 3600 1 4 \n\0", 21, CLOSE},
        {"5 0 6 0 60", 0, CLOSE},  /* no newline, no NUL: ends at the close */
        {"-29 \n", 0, CLOSE},
    };
    fake_t f;
    ibp_depot_status_t s;
    CU_ASSERT_EQUAL_FATAL(fake_start(&f, steps, NSTEPS(steps)), 0);
    ibp_client_opts_t o;
    ibp_client_opts_init(&o);
    o.version = 0;
    o.tls = IBP_TLS_OFF;
    o.io_timeout_ms = 5000;
    ibp_client_t *c = ibp_client_new(&o);
    CU_ASSERT_EQUAL(ibp_status(c, "127.0.0.1", f.port, NULL, NULL, &s), IBP_OK);
    CU_ASSERT_EQUAL(s.hard_total, 10ull << 20);
    CU_ASSERT_EQUAL(s.hard_used, 2ull << 20);
    CU_ASSERT_EQUAL(s.soft_total, 20ull << 20);
    CU_ASSERT_EQUAL(s.soft_used, 3ull << 20);
    CU_ASSERT_EQUAL(s.max_duration_s, 3600);
    CU_ASSERT_STRING_EQUAL(s.version, "1.4");
    CU_ASSERT_EQUAL(ibp_status(c, "127.0.0.1", f.port, NULL, NULL, &s), IBP_OK);
    CU_ASSERT_EQUAL(s.soft_total, 6ull << 20);
    CU_ASSERT_EQUAL(s.max_duration_s, 60);
    CU_ASSERT_EQUAL(ibp_status(c, "127.0.0.1", f.port, NULL, NULL, &s), IBP_E_WRONG_PASSWD);
    CU_ASSERT_EQUAL(f.conns, 3);
    ibp_client_free(c);
    fake_stop(&f);
}

/* A depot that takes the request and never answers: the io timeout, not a hang. */
static void test_timeout_fake(void)
{
    static const step_t steps[] = {{NULL, 0, HANG}};
    scene_t sc;
    ibp_probe_t p;
    scene_start(&sc, steps, NSTEPS(steps), "READ", 500);
    int64_t t0 = now_ms();
    CU_ASSERT_EQUAL(ibp_probe(sc.c, sc.cap, &p), IBP_E_CLIENT_TIMEOUT);
    int64_t dt = now_ms() - t0;
    CU_ASSERT(dt >= 450 && dt < 20000); /* 20 s: a hang only, however busy the machine */
    scene_end(&sc);
}

/* ---- concurrency ---- */

#define THREADS 8
#define ROUNDS 40

typedef struct worker {
    ibp_client_t *c;
    int port, id, errors;
} worker_t;

static void *work(void *arg)
{
    worker_t *w = arg;
    ibp_caps_t caps;
    enum { PIECE = 8192 };
    unsigned char *data = malloc(ROUNDS * PIECE), *back = malloc(ROUNDS * PIECE);
    if (!data || !back || alloc(w->c, w->port, ROUNDS * PIECE, &caps) != IBP_OK) {
        w->errors++;
        goto out;
    }
    lns_test_fill(data, ROUNDS * PIECE, (uint64_t)w->id * 1000 + 1);
    for (int i = 0; i < ROUNDS; i++) {
        ibp_probe_t p;
        uint64_t done = 0;
        if (ibp_store(w->c, caps.write, data + i * PIECE, PIECE, &done) != IBP_OK || done != PIECE)
            w->errors++;
        if (ibp_load(w->c, caps.read, (uint64_t)i * PIECE, PIECE, back + i * PIECE) != IBP_OK)
            w->errors++;
        if (ibp_probe(w->c, caps.manage, &p) != IBP_OK || p.cur_size != (uint64_t)(i + 1) * PIECE)
            w->errors++;
    }
    if (memcmp(data, back, ROUNDS * PIECE) != 0)
        w->errors++;
    memset(back, 0, ROUNDS * PIECE);
    if (ibp_load(w->c, caps.read, 0, ROUNDS * PIECE, back) != IBP_OK ||
        memcmp(data, back, ROUNDS * PIECE) != 0)
        w->errors++;
out:
    free(data);
    free(back);
    return NULL;
}

static void test_concurrency(void)
{
    test_depot_t d;
    pthread_t th[THREADS];
    worker_t w[THREADS];
    CU_ASSERT_EQUAL_FATAL(td_start(&d, NULL), 0);
    connections_baseline(d.port);
    ibp_client_t *c = client_with(THREADS, 30, 20000);
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker_t){c, d.port, i, 0};
        pthread_create(&th[i], NULL, work, &w[i]);
    }
    int errors = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        errors += w[i].errors;
    }
    CU_ASSERT_EQUAL(errors, 0);
    /* 8 x 121 requests; never more connections than threads at once, so few in all */
    int n = count_connections(d.port);
    CU_ASSERT(n >= 1 && n <= 2 * THREADS);
    ibp_client_free(c);
    lns_test_server_stop(&d.srv);
}

/* ---- a depot that dies or stops ---- */

static void test_depot_killed(void)
{
    test_depot_t d;
    ibp_caps_t caps;
    ibp_probe_t p;
    ibp_client_t *c = depot_with_alloc(&d, NULL, 5000, 1000, &caps);
    CU_ASSERT_EQUAL(ibp_store(c, caps.write, "abc", 3, NULL), IBP_OK);
    lns_test_server_kill(&d.srv, SIGKILL);
    int64_t t0 = now_ms();
    CU_ASSERT_EQUAL(ibp_probe(c, caps.manage, &p), IBP_E_CONNECTION);
    CU_ASSERT_EQUAL(ibp_store(c, caps.write, "abc", 3, NULL), IBP_E_CONNECTION);
    CU_ASSERT(now_ms() - t0 < 2000);
    /* back on the same port, the client carries on (and the stored bytes survived) */
    CU_ASSERT_EQUAL_FATAL(td_restart(&d), 0);
    CU_ASSERT_EQUAL(ibp_probe(c, caps.manage, &p), IBP_OK);
    CU_ASSERT_EQUAL(p.cur_size, 3);
    ibp_client_free(c);
    lns_test_server_stop(&d.srv);
}

static void test_depot_stopped(void)
{
    test_depot_t d;
    ibp_caps_t caps;
    ibp_probe_t p;
    char buf[3];
    ibp_client_t *c = depot_with_alloc(&d, NULL, 1000, 1000, &caps);
    CU_ASSERT_EQUAL(ibp_store(c, caps.write, "abc", 3, NULL), IBP_OK);
    CU_ASSERT_EQUAL_FATAL(lns_test_server_kill(&d.srv, SIGSTOP), 0); /* waits until stopped */
    /* on the pooled connection */
    int64_t t0 = now_ms();
    CU_ASSERT_EQUAL(ibp_probe(c, caps.manage, &p), IBP_E_CLIENT_TIMEOUT);
    int64_t dt = now_ms() - t0;
    CU_ASSERT(dt >= 900 && dt < 20000); /* the io timeout; 20 s: a hang only */
    /* on a new connection (the kernel still accepts it) */
    t0 = now_ms();
    CU_ASSERT_EQUAL(ibp_load(c, caps.read, 0, 3, buf), IBP_E_CLIENT_TIMEOUT);
    dt = now_ms() - t0;
    CU_ASSERT(dt >= 900 && dt < 20000);
    lns_test_server_kill(&d.srv, SIGCONT);
    /* the timed-out connections were dropped: nothing stale is read now */
    CU_ASSERT_EQUAL(ibp_load(c, caps.read, 0, 3, buf), IBP_OK);
    CU_ASSERT(memcmp(buf, "abc", 3) == 0);
    CU_ASSERT_EQUAL(ibp_probe(c, caps.manage, &p), IBP_OK);
    CU_ASSERT_EQUAL(p.cur_size, 3);
    ibp_client_free(c);
    lns_test_server_stop(&d.srv);
}

/* ---- the pool's entries: one per depot, bounded, dropped when idle ---- */

/* n ports of 127.0.0.1 that refuse connections: bound (all at once, so distinct), then
 * closed.  0 or -1. */
static int refusing_ports(int *ports, int n)
{
    int fds[512], rc = 0, made = 0;
    if (n > 512)
        return -1;
    for (; made < n; made++) {
        struct sockaddr_in sa = {.sin_family = AF_INET};
        socklen_t sl = sizeof sa;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        fds[made] = socket(AF_INET, SOCK_STREAM, 0);
        if (fds[made] < 0 || bind(fds[made], (struct sockaddr *)&sa, sizeof sa) < 0 ||
            getsockname(fds[made], (struct sockaddr *)&sa, &sl) < 0) {
            if (fds[made] >= 0)
                close(fds[made]);
            rc = -1;
            break;
        }
        ports[made] = ntohs(sa.sin_port);
    }
    for (int i = 0; i < made; i++)
        close(fds[i]);
    return rc;
}

/* A SEND to a bogus target, many times over (the depot's SEND goes through this pool): a
 * target that never answered leaves nothing behind. */
static void test_entries_refused(void)
{
    enum { N = 500 };
    int ports[N], refused = 0;
    ibp_depot_status_t s;
    CU_ASSERT_EQUAL_FATAL(refusing_ports(ports, N), 0);
    ibp_client_t *c = client_with(8, 30, 2000);
    for (int i = 0; i < N; i++)
        refused += ibp_status(c, "127.0.0.1", ports[i], NULL, NULL, &s) == IBP_E_CONNECTION;
    CU_ASSERT_EQUAL(refused, N);
    int n = ibp_pool_entries(c->pool);
    if (n != 0)
        fprintf(stderr, "test_entries_refused: %d pool entries after %d refused calls\n", n, N);
    CU_ASSERT_EQUAL(n, 0);
    ibp_client_free(c);
}

/* Pool a connection to port; returns whether it was a reused one (-1: no connection). */
static int pool_touch(ibp_pool_t *p, int port)
{
    ibp_conn_t *conn;
    if (ibp_pool_get(p, "127.0.0.1", port, 1, 2000, NULL, &conn) != IBP_OK)
        return -1;
    int reused = conn->reused;
    ibp_pool_put(p, conn);
    return reused;
}

/* More depots than the bound: the pool keeps IBP_POOL_MAX_DEPOTS of them, dropping the one
 * used least recently. */
static void test_entries_bound_lru(void)
{
    enum { N = IBP_POOL_MAX_DEPOTS + 45 };
    int lfd[N], port[N], most = 0, fails = 0;
    for (int i = 0; i < N; i++)
        CU_ASSERT_FATAL((lfd[i] = raw_listen_loopback(&port[i])) >= 0);
    ibp_pool_t *p = ibp_pool_new(8, 30);
    CU_ASSERT_FATAL(p != NULL);
    for (int i = 0; i < N - 1; i++) {
        fails += pool_touch(p, port[i]) != 0;
        int n = ibp_pool_entries(p);
        most = n > most ? n : most;
    }
    CU_ASSERT_EQUAL(fails, 0);
    if (most != IBP_POOL_MAX_DEPOTS)
        fprintf(stderr, "test_entries_bound_lru: %d entries for %d depots, bound %d\n", most,
                N - 1, IBP_POOL_MAX_DEPOTS);
    CU_ASSERT_EQUAL(most, IBP_POOL_MAX_DEPOTS);
    /* depots 0..43 are gone; 44 is the oldest left: use it, then one more depot comes */
    CU_ASSERT_EQUAL(pool_touch(p, port[N - 2]), 1);
    CU_ASSERT_EQUAL(pool_touch(p, port[44]), 1);
    CU_ASSERT_EQUAL(pool_touch(p, port[N - 1]), 0);
    CU_ASSERT_EQUAL(ibp_pool_entries(p), IBP_POOL_MAX_DEPOTS);
    ibp_conn_t *conn;
    CU_ASSERT_EQUAL_FATAL(ibp_pool_get(p, "127.0.0.1", port[45], 1, 2000, NULL, &conn), IBP_OK);
    CU_ASSERT_EQUAL(conn->reused, 0); /* evicted in 44's place */
    ibp_conn_close(conn);
    CU_ASSERT_EQUAL_FATAL(ibp_pool_get(p, "127.0.0.1", port[0], 1, 2000, NULL, &conn), IBP_OK);
    CU_ASSERT_EQUAL(conn->reused, 0);
    ibp_conn_close(conn);
    CU_ASSERT_EQUAL(pool_touch(p, port[44]), 1);
    ibp_pool_free(p);
    for (int i = 0; i < N; i++)
        close(lfd[i]);
}

/* An entry unused for max_idle_s goes, and its connections are closed, at the next use of
 * the pool (for any depot). */
static void test_entries_idle(void)
{
    int port, refused;
    int lfd = raw_listen_loopback(&port);
    CU_ASSERT_FATAL(lfd >= 0);
    CU_ASSERT_EQUAL_FATAL(refusing_ports(&refused, 1), 0);
    ibp_pool_t *p = ibp_pool_new(8, 1);
    CU_ASSERT_EQUAL(pool_touch(p, port), 0);
    int sfd = accept(lfd, NULL, NULL);
    CU_ASSERT_FATAL(sfd >= 0);
    CU_ASSERT_EQUAL(ibp_pool_entries(p), 1);
    CU_ASSERT_EQUAL(raw_closed_by_peer(sfd, 100), 0);
    usleep(1100 * 1000);
    ibp_conn_t *conn;
    CU_ASSERT_EQUAL(ibp_pool_get(p, "127.0.0.1", refused, 1, 2000, NULL, &conn),
                    IBP_E_CONNECTION);
    CU_ASSERT_EQUAL(ibp_pool_entries(p), 0);
    CU_ASSERT_EQUAL(raw_closed_by_peer(sfd, 1000), 1);
    ibp_pool_free(p);
    close(sfd);
    close(lfd);
}

static const lns_test_case pool_entry_tests[] = {
    {"refused depots take no entry", test_entries_refused},
    {"entries bounded, least recently used dropped", test_entries_bound_lru},
    {"idle entries expire", test_entries_idle},
};

static const lns_test_case real_depot_tests[] = {
    {"one connection for many requests", test_reuse},
    {"max idle age", test_max_idle_age},
    {"depot closes idle connections", test_idle_close},
    {"8 threads on one client", test_concurrency},
    {"depot killed", test_depot_killed},
    {"depot stopped: timeouts", test_depot_stopped},
};

static const lns_test_case fake_depot_tests[] = {
    {"retry on a reused connection", test_retry_reused},
    {"no retry on a new connection", test_no_retry_fresh},
    {"retry only once", test_retry_once},
    {"-66 out of sockets", test_out_of_sockets},
    {"reply forms", test_reply_forms},
    {"version 0 status forms", test_status_v0_forms},
    {"io timeout", test_timeout_fake},
};

void lns_test_register(void)
{
    LNS_TEST_SUITE("pool with real depots", NULL, NULL, real_depot_tests);
    LNS_TEST_SUITE("retry rule and replies (fake depot)", NULL, NULL, fake_depot_tests);
    LNS_TEST_SUITE("pool entries", NULL, NULL, pool_entry_tests);
}
