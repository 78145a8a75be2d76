/* test_lbone_robust.c -- lbone_server under slowloris: connections that send a request one
 * byte at a time must not lock out the depots' heartbeats and the clients' queries.
 *
 * The whole of 127.0.0.0/8 is loopback, so a socket bound to 127.0.0.2 before it connects to
 * the server on 127.0.0.1 is a client from another address: the normal client (health
 * checks) comes from 127.0.0.2, the slow ones from 127.0.0.3 (one address, many connections)
 * or from 127.0.1.x (one connection per address).  A slow connection sends one byte of a
 * request that never ends every 100 ms, so no inactivity timeout ever closes it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "lns_test.h"
#include "lns_time.h"
#include "test_depot.h"
#include "test_lbone.h"

/* A TCP connection from address src to the server; -1 on failure. */
static int connect_from(const char *src, int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    struct timeval tv = {2, 0};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    inet_pton(AF_INET, src, &sa.sin_addr);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
        goto fail;
    sa.sin_port = htons((unsigned short)port);
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
        goto fail;
    return fd;
fail:
    close(fd);
    return -1;
}

/* Read until the reply's head and "ok" are in or wait_ms passes: 1 for "200 ... ok". */
static int read_ok(int fd, int wait_ms)
{
    char buf[2048];
    size_t n = 0;
    int64_t end = lns_mono_ms() + wait_ms;
    while (n < sizeof buf - 1) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int left = (int)(end - lns_mono_ms());
        if (left <= 0 || poll(&p, 1, left) <= 0)
            break;
        ssize_t r = recv(fd, buf + n, sizeof buf - 1 - n, 0);
        if (r <= 0)
            break;
        n += (size_t)r;
        buf[n] = 0;
        if (strstr(buf, "\r\n\r\nok\n"))
            return strncmp(buf, "HTTP/1.1 200", 12) == 0;
    }
    return 0;
}

/* GET /healthz from src, answered within wait_ms: 1, else 0 (*ms: how long it took). */
static int health(const char *src, int port, int wait_ms, int64_t *ms)
{
    static const char req[] = "GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    int64_t t0 = lns_mono_ms();
    int ok = 0, fd = connect_from(src, port);
    if (fd >= 0 && send(fd, req, sizeof req - 1, MSG_NOSIGNAL) == (ssize_t)(sizeof req - 1))
        ok = read_ok(fd, wait_ms);
    if (fd >= 0)
        close(fd);
    *ms = lns_mono_ms() - t0;
    return ok;
}

/* ---- slow connections, all fed by one thread ---- */

#define MAX_SLOW 2048

typedef struct slow {
    int fd;
    const char *req; /* the bytes to send, one per tick; at the end, X-headers forever */
    size_t sent;
    int64_t opened_ms, closed_ms; /* closed_ms 0: still open */
    char src[16];                 /* its address, to reconnect from */
} slow_t;

typedef struct slow_set {
    slow_t c[MAX_SLOW];
    int n;
    int port;
    int again;   /* reopen a connection the server closed, as an attacker would */
    long reopened;
    atomic_int stop;
    pthread_mutex_t mu;
    pthread_t th;
} slow_set_t;

static const char slow_get[] = "GET /v1/depots?count=1 HTTP/1.1\r\nHost: t\r\n";
static const char slow_post[] = "POST /v1/reports HTTP/1.1\r\nHost: t\r\n"
                                "Content-Type: application/json\r\nContent-Length: 4000\r\n\r\n";

/* Has the server closed it?  (An idle slow connection has nothing to read otherwise.) */
static int closed_by_server(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char b[256];
    if (poll(&p, 1, 0) <= 0)
        return 0;
    ssize_t r = recv(fd, b, sizeof b, MSG_DONTWAIT);
    return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* A connection from src that does not wait for the handshake (the listen queue may be
 * full); -1 on failure. */
static int connect_nowait(const char *src, int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    inet_pton(AF_INET, src, &sa.sin_addr);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
        goto fail;
    sa.sin_port = htons((unsigned short)port);
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0 && errno != EINPROGRESS)
        goto fail;
    return fd;
fail:
    close(fd);
    return -1;
}

static void *slow_main(void *arg)
{
    slow_set_t *s = arg;
    while (!s->stop) {
        pthread_mutex_lock(&s->mu);
        for (int i = 0; i < s->n; i++) {
            slow_t *c = &s->c[i];
            if (c->closed_ms && s->again) {
                close(c->fd);
                c->fd = connect_nowait(c->src, s->port);
                c->sent = 0;
                c->closed_ms = c->fd < 0 ? lns_mono_ms() : 0;
                s->reopened += c->fd >= 0;
                continue;
            }
            if (c->closed_ms)
                continue;
            size_t len = strlen(c->req);
            char b = c->sent < len ? c->req[c->sent] : "X-a: b\r\n"[(c->sent - len) % 8];
            if (closed_by_server(c->fd))
                c->closed_ms = lns_mono_ms();
            else if (send(c->fd, &b, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1)
                c->sent++;
            else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOTCONN)
                c->closed_ms = lns_mono_ms(); /* (still connecting: try again next tick) */
        }
        pthread_mutex_unlock(&s->mu);
        usleep(100 * 1000);
    }
    return NULL;
}

static void slow_start(slow_set_t *s)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    CU_ASSERT_FATAL(pthread_create(&s->th, NULL, slow_main, s) == 0);
}

/* One more slow connection from src sending req, its first fast bytes at once; 0 or -1. */
static int slow_add(slow_set_t *s, const char *src, int port, const char *req, size_t fast)
{
    int fd = connect_from(src, port);
    if (fd >= 0 && fast && send(fd, req, fast, MSG_NOSIGNAL) != (ssize_t)fast) {
        close(fd);
        fd = -1;
    }
    if (fd < 0 || s->n == MAX_SLOW) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    pthread_mutex_lock(&s->mu);
    s->port = port;
    s->c[s->n] = (slow_t){.fd = fd, .req = req, .sent = fast, .opened_ms = lns_mono_ms()};
    snprintf(s->c[s->n].src, sizeof s->c[s->n].src, "%s", src);
    s->n++;
    pthread_mutex_unlock(&s->mu);
    return 0;
}

static int slow_open_count(slow_set_t *s)
{
    int n = 0;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->n; i++)
        n += s->c[i].closed_ms == 0;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* Stop feeding them (then s->c may be read without the lock). */
static void slow_stop(slow_set_t *s)
{
    if (!s->stop) {
        s->stop = 1;
        pthread_join(s->th, NULL);
    }
}

static void slow_end(slow_set_t *s)
{
    slow_stop(s);
    for (int i = 0; i < s->n; i++)
        close(s->c[i].fd);
    pthread_mutex_destroy(&s->mu);
}

/* Health checks from 127.0.0.2 every 100 ms for ms: how many were answered within 1 s, of
 * how many, and the slowest. */
static void health_within(int port, int ms, int wait_ms, int *ok, int *tries, int64_t *worst)
{
    int64_t end = lns_mono_ms() + ms, dt;
    *ok = *tries = 0;
    *worst = 0;
    while (lns_mono_ms() < end) {
        *ok += health("127.0.0.2", port, wait_ms, &dt);
        (*tries)++;
        *worst = dt > *worst ? dt : *worst;
        usleep(100 * 1000);
    }
}

static void health_for(int port, int ms, int *ok, int *tries, int64_t *worst)
{
    health_within(port, ms, 1000, ok, tries, worst);
}

/* 200 slow connections from one address against 64 slots: the per-address limit (by default
 * a quarter of max-connections) keeps all but 16 of them out. */
static void test_slowloris_one_address(void)
{
    test_lbone_t l;
    slow_set_t s;
    int ok, tries;
    int64_t worst;
    CU_ASSERT_FATAL(tlb_start(&l, "--probe-interval 0 --max-connections 64") == 0);
    slow_start(&s);
    int made = 0;
    for (int i = 0; i < 200; i++)
        made += slow_add(&s, "127.0.0.3", l.port, slow_get, 0) == 0;
    CU_ASSERT(made >= 100);
    usleep(300 * 1000);
    health_for(l.port, 1500, &ok, &tries, &worst);
    if (ok != tries || worst >= 1000)
        fprintf(stderr, "\n  one address: %d of %d health checks answered, slowest %lld ms\n", ok,
                tries, (long long)worst);
    CU_ASSERT(tries >= 5);
    CU_ASSERT_EQUAL(ok, tries);
    CU_ASSERT(worst < 1000);
    int open = slow_open_count(&s);
    if (open < 1 || open > 16)
        fprintf(stderr, "\n  one address: %d slow connections open, wanted 1..16\n", open);
    CU_ASSERT(open >= 1 && open <= 16);
    slow_end(&s);
    lns_test_server_finish(&l.srv);
}

/* Half the slots (32 of 64, below the point where shedding starts) held, by an idle
 * keep-alive connection and by slow connections each from an address of its own (so the
 * per-address limit does not help), all but one trickling a request's head, one its body
 * (its head sent at once): request-timeout (2 s) closes them, none earlier, and an idle
 * keep-alive connection is closed after the same 2 s (the idle-timeout, 30 s, is for a
 * stalled answer). */
static void test_slowloris_deadline(void)
{
    test_lbone_t l;
    slow_set_t s;
    char src[32];
    int64_t dt;
    CU_ASSERT_FATAL(tlb_start(&l, "--probe-interval 0 --max-connections 64 --request-timeout 2") ==
                    0);
    /* a keep-alive client that made one request and then stays idle */
    int keep = connect_from("127.0.0.2", l.port);
    CU_ASSERT_FATAL(keep >= 0);
    static const char req[] = "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";
    CU_ASSERT(send(keep, req, sizeof req - 1, MSG_NOSIGNAL) == (ssize_t)(sizeof req - 1));
    CU_ASSERT(read_ok(keep, 2000));
    int64_t keep_t0 = lns_mono_ms();
    slow_start(&s);
    int made = 0;
    for (int i = 1; i <= 31; i++) {
        snprintf(src, sizeof src, "127.0.1.%d", i);
        made += (i == 1 ? slow_add(&s, src, l.port, slow_post, sizeof slow_post - 1)
                        : slow_add(&s, src, l.port, slow_get, 0)) == 0;
    }
    CU_ASSERT(made == 31);
    int64_t t0 = lns_mono_ms();
    usleep(300 * 1000);
    int got = health("127.0.0.2", l.port, 4000, &dt);
    if (!got || dt > 3500)
        fprintf(stderr, "\n  deadline: health check %s after %lld ms\n", got ? "answered" : "failed",
                (long long)dt);
    CU_ASSERT(got && dt < 3500);
    int ok, tries;
    int64_t worst;
    health_for(l.port, 1000, &ok, &tries, &worst);
    CU_ASSERT_EQUAL(ok, tries);
    CU_ASSERT(worst < 1000);
    /* every slow connection was closed, none before its 2 s (the post's body included) */
    int64_t wait_end = t0 + 5000;
    while (slow_open_count(&s) > 0 && lns_mono_ms() < wait_end)
        usleep(50 * 1000);
    CU_ASSERT_EQUAL(slow_open_count(&s), 0);
    slow_stop(&s);
    int early = 0, late = 0;
    for (int i = 0; i < s.n; i++) {
        int64_t life = s.c[i].closed_ms - s.c[i].opened_ms;
        early += s.c[i].closed_ms && life < 1500;
        late += !s.c[i].closed_ms || life > 4000;
        if (!s.c[i].closed_ms || life < 1500 || life > 4000)
            fprintf(stderr, "\n  slow connection %d: closed after %lld ms\n", i,
                    s.c[i].closed_ms ? (long long)life : -1LL);
    }
    CU_ASSERT_EQUAL(early, 0);
    CU_ASSERT_EQUAL(late, 0);
    CU_ASSERT(s.c[0].closed_ms && s.c[0].sent > sizeof slow_post);
    CU_ASSERT(raw_closed_by_peer(keep, (int)(keep_t0 + 4000 - lns_mono_ms())));
    slow_end(&s);
    close(keep);
    lns_test_server_finish(&l.srv);
}

/* Room for n more descriptors in this process (the soft limit raised to the hard one)? */
static int fds_for(int n)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 0;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    return rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= (rlim_t)n + 256;
}

/* n slow connections from addresses 127.0.2.1 ... (per_address on each), reopened as soon
 * as they are closed; how many were made. */
static int slow_flood(slow_set_t *s, int port, int n, int per_address)
{
    char src[32];
    int made = 0;
    s->again = 1;
    for (int i = 0; i < n; i++) {
        int a = i / per_address;
        snprintf(src, sizeof src, "127.0.%d.%d", 2 + a / 250, 1 + a % 250);
        made += slow_add(s, src, port, slow_get, 0) == 0;
    }
    return made;
}

/* The attack: 2,000 slow connections from 1,000 addresses, each reopened as soon as
 * it is cut, against the default limits (from the open-file limit, so the server holds them
 * all); legit requests from another address are still answered, 95% within 1 s. */
static void test_slowloris_distributed(void)
{
    if (!fds_for(2100)) {
        printf("\nSKIP test_lbone_robust distributed slowloris: fewer than 2,400 open files "
               "allowed here\n");
        return;
    }
    test_lbone_t l;
    slow_set_t *s = malloc(sizeof *s);
    CU_ASSERT_FATAL(s != NULL);
    CU_ASSERT_FATAL(tlb_start(&l, "--probe-interval 0 --request-timeout 2") == 0);
    slow_start(s);
    int made = slow_flood(s, l.port, 2000, 2);
    CU_ASSERT(made >= 1900);
    usleep(300 * 1000);
    int ok, tries;
    int64_t worst;
    health_within(l.port, 3000, 1000, &ok, &tries, &worst);
    if (ok * 100 < tries * 95)
        fprintf(stderr, "\n  distributed: %d of %d health checks answered within 1 s, slowest "
                "%lld ms\n", ok, tries, (long long)worst);
    CU_ASSERT(tries >= 5);
    CU_ASSERT(ok * 100 >= tries * 95);
    /* the attack went on: connections cut at request-timeout and reopened */
    CU_ASSERT(s->reopened >= 1000);
    slow_end(s);
    free(s);
    lns_test_server_finish(&l.srv);
}

/* More slow connections (150, from 150 addresses, reopened as soon as cut) than the server
 * has slots (64), and a request-timeout (60 s) that never fires: near the limit the oldest
 * unfinished requests are closed, so health checks still get in and the log says so once. */
static void test_slowloris_shed(void)
{
    test_lbone_t l;
    slow_set_t *s = malloc(sizeof *s);
    CU_ASSERT_FATAL(s != NULL);
    CU_ASSERT_FATAL(tlb_start(&l, "--probe-interval 0 --max-connections 64 --request-timeout 60") ==
                    0);
    slow_start(s);
    int made = slow_flood(s, l.port, 150, 1);
    CU_ASSERT(made == 150);
    usleep(1500 * 1000);
    int ok, tries;
    int64_t worst;
    health_within(l.port, 3000, 3000, &ok, &tries, &worst);
    if (ok * 100 < tries * 95)
        fprintf(stderr, "\n  shed: %d of %d health checks answered, slowest %lld ms\n", ok,
                tries, (long long)worst);
    CU_ASSERT(tries >= 3);
    CU_ASSERT(ok * 100 >= tries * 95);
    CU_ASSERT(s->reopened >= 64);
    slow_end(s);
    free(s);
    lns_test_server_finish(&l.srv);
    static char log[1 << 16];
    lns_test_slurp(l.log, log, sizeof log);
    CU_ASSERT(strstr(log, "unfinished requests closed, oldest first") != NULL);
}

static const lns_test_case tests[] = {
    {"slowloris from one address: others still served", test_slowloris_one_address},
    {"slowloris from many addresses: cut at request-timeout", test_slowloris_deadline},
    {"slowloris from 1,000 addresses, 2,000 connections: others still served",
     test_slowloris_distributed},
    {"more slow connections than slots: the oldest make room", test_slowloris_shed},
};

LNS_TEST_MAIN("lbone server under abuse", tests)
