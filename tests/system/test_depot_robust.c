/* test_depot_robust.c -- a real ibp_depot under the things that break servers.
 *
 * SIGKILL in the middle of a stream of STOREs (every acknowledged byte must survive the
 * restart, and nothing unacknowledged may be claimed), the same for small allocations that
 * share slab files (and the slots freed before the kill are reused without harm), clients
 * that vanish or stall in the middle of a STORE, a thousand simultaneous connections,
 * slowloris clients next to a normal one, the idle timeout and the connection limit. */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lns_test.h"
#include "lns_time.h"
#include "test_depot.h"

typedef struct caps {
    char key[3][400];
    char tk[3][32];
} caps_t;

static int allocate(int fd, long size, caps_t *c)
{
    char reply[4096], a[3][700];
    if (raw_reqf(fd, reply, sizeof reply, "1 1 0 2 1 3600 %ld 30\n", size) != 1)
        return -1;
    if (sscanf(reply, "1 %699s %699s %699s", a[0], a[1], a[2]) != 3)
        return -1;
    for (int k = 0; k < 3; k++) {
        char rid[16], key[300], tk[32];
        if (sscanf(a[k], "ibp://%*[^/]/%15[^#]#%299[^/]/%31[^/]/", rid, key, tk) != 3)
            return -1;
        snprintf(c->key[k], sizeof c->key[k], "%s#%s", rid, key);
        snprintf(c->tk[k], sizeof c->tk[k], "%s", tk);
    }
    return 1;
}

static long long probe_size(int fd, const caps_t *c)
{
    char reply[512];
    int rr, wr;
    unsigned long long cur;
    if (raw_reqf(fd, reply, sizeof reply, "1 9 %s %s 40 3 0 0 0 30\n", c->key[2], c->tk[2]) != 1 ||
        sscanf(reply, "1 %d %d %llu", &rr, &wr, &cur) != 3)
        return -1;
    return (long long)cur;
}

/* The request line of a STORE of n bytes to c's allocation: raw_send's result. */
static int store_header(int fd, const caps_t *c, size_t n, int timeout)
{
    char hdr[512];
    int h = snprintf(hdr, sizeof hdr, "1 2 %s %s %zu %d\n", c->key[1], c->tk[1], n, timeout);
    return raw_send(fd, hdr, (size_t)h);
}

/* SIGKILL the depot once it has had 100 ms to read what fd sent, close fd, restart the depot
 * on its port and data; a new connection to it. */
static int crash_and_reconnect(test_depot_t *d, int fd)
{
    usleep(100 * 1000);
    lns_test_server_kill(&d->srv, SIGKILL);
    close(fd);
    CU_ASSERT_FATAL(td_restart(d) == 0);
    fd = td_connect(d);
    CU_ASSERT_FATAL(fd >= 0);
    return fd;
}

/* Pipelined STORE; 1 on "1 \n" + "1 n\n". */
static int store(int fd, const caps_t *c, const char *buf, size_t n, int timeout)
{
    char r1[64], r2[64], want[64];
    if (store_header(fd, c, n, timeout) < 0 || raw_send(fd, buf, n) < 0)
        return -1000;
    if (raw_readline(fd, r1, sizeof r1) < 0 || strcmp(r1, "1 ") != 0)
        return raw_code(r1);
    if (raw_readline(fd, r2, sizeof r2) < 0)
        return -1000;
    snprintf(want, sizeof want, "1 %zu", n);
    return strcmp(r2, want) == 0 ? 1 : raw_code(r2);
}

static int load_check(int fd, const caps_t *c, const char *want, size_t n)
{
    char hdr[512], line[64];
    char *buf = malloc(n ? n : 1);
    int ok = 0;
    if (!buf)
        return 0;
    if (raw_reqf(fd, line, sizeof line, "1 8 %s %s 0 %zu 60\n", c->key[0], c->tk[0], n) == 1 &&
        (snprintf(hdr, sizeof hdr, "1 %zu", n), strcmp(line, hdr) == 0) &&
        raw_read(fd, buf, n) == 0 && memcmp(buf, want, n) == 0)
        ok = 1;
    free(buf);
    return ok;
}

static void test_sigkill_during_stores(void)
{
    enum { CHUNK = 64 * 1024, N = 120 };
    test_depot_t d;
    caps_t c;
    char *data = malloc((size_t)CHUNK * (N + 1));
    CU_ASSERT_FATAL(data != NULL);
    lns_test_fill(data, (size_t)CHUNK * (N + 1), 99);
    CU_ASSERT_FATAL(td_start(&d, NULL) == 0);
    int fd = td_connect(&d);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_FATAL(allocate(fd, (long)CHUNK * (N + 1), &c) == 1);
    size_t acked = 0;
    for (int i = 0; i < N; i++) {
        if (store(fd, &c, data + acked, CHUNK, 30) != 1)
            break;
        acked += CHUNK;
    }
    CU_ASSERT_EQUAL(acked, (size_t)CHUNK * N);
    /* one more STORE, half sent, when the depot dies */
    CU_ASSERT_EQUAL(store_header(fd, &c, CHUNK, 30), 0);
    CU_ASSERT_EQUAL(raw_send(fd, data + acked, CHUNK / 2), 0);
    fd = crash_and_reconnect(&d, fd);
    CU_ASSERT_EQUAL(probe_size(fd, &c), (long long)acked);
    CU_ASSERT(load_check(fd, &c, data, acked));
    /* the allocation goes on from exactly there */
    CU_ASSERT_EQUAL(store(fd, &c, data + acked, CHUNK, 30), 1);
    CU_ASSERT(load_check(fd, &c, data, acked + CHUNK));
    close(fd);
    lns_test_server_finish(&d.srv);
    free(data);
}

/* Small allocations share slab files.  Some are freed and one is moved past 64 KiB by a
 * CHNG, then the depot dies while a STORE into another is half sent.  After the restart each
 * has exactly its acknowledged bytes, and as many new allocations as there were before
 * (taking the freed slots) change none of them. */
static void test_sigkill_slabs(void)
{
    enum { N = 60, HALF = N / 2 };
    static char data[2 * N][65536];
    test_depot_t d;
    caps_t c[2 * N];
    size_t size[2 * N];
    int live[2 * N];

    CU_ASSERT_FATAL(td_start(&d, NULL) == 0);
    int fd = td_connect(&d);
    CU_ASSERT_FATAL(fd >= 0);
    for (int i = 0; i < N; i++) {
        size[i] = 1 + (size_t)(i * 7919) % 65536;
        lns_test_fill(data[i], size[i], (uint64_t)(1000 + i));
        CU_ASSERT_FATAL(allocate(fd, (long)size[i], &c[i]) == 1);
        CU_ASSERT_EQUAL(store(fd, &c[i], data[i], size[i], 30), 1);
        live[i] = 1;
    }
    for (int i = 0; i < N; i += 4) {
        CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 42 1 30\n", c[i].key[2], c[i].tk[2]), 1);
        live[i] = 0;
    }
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 43 1 200000 0 0 30\n", c[1].key[2],
                         c[1].tk[2]), 1);
    /* 3000 bytes acknowledged, then a STORE of 4000 of which 2000 are sent */
    caps_t k;
    char kdata[7000];
    lns_test_fill(kdata, sizeof kdata, 77);
    CU_ASSERT_FATAL(allocate(fd, sizeof kdata, &k) == 1);
    CU_ASSERT_EQUAL(store(fd, &k, kdata, 3000, 30), 1);
    CU_ASSERT_EQUAL(store_header(fd, &k, 4000, 30), 0);
    CU_ASSERT_EQUAL(raw_send(fd, kdata + 3000, 2000), 0);
    fd = crash_and_reconnect(&d, fd);
    CU_ASSERT_EQUAL(probe_size(fd, &k), 3000);
    CU_ASSERT(load_check(fd, &k, kdata, 3000));
    for (int i = HALF; i < HALF + N; i++) {
        int j = N + (i - HALF);
        size[j] = size[i % N];
        lns_test_fill(data[j], size[j], (uint64_t)(1000 + j));
        CU_ASSERT_FATAL(allocate(fd, (long)size[j], &c[j]) == 1);
        CU_ASSERT_EQUAL(store(fd, &c[j], data[j], size[j], 30), 1);
        live[j] = 1;
    }
    CU_ASSERT_EQUAL(store(fd, &k, kdata + 3000, 4000, 30), 1);
    int bad = 0;
    for (int i = 0; i < 2 * N; i++) {
        if (!live[i]) {
            CU_ASSERT_EQUAL(probe_size(fd, &c[i]), -1);
        } else if (probe_size(fd, &c[i]) != (long long)size[i] ||
                   !load_check(fd, &c[i], data[i], size[i])) {
            bad++;
        }
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(load_check(fd, &k, kdata, sizeof kdata));
    close(fd);
    lns_test_server_finish(&d.srv);
}

static void test_disconnect_mid_store(void)
{
    test_depot_t d;
    caps_t c;
    char data[8000];
    lns_test_fill(data, sizeof data, 3);
    CU_ASSERT_FATAL(td_start(&d, NULL) == 0);
    int fd = td_connect(&d);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_FATAL(allocate(fd, 8000, &c) == 1);
    CU_ASSERT_EQUAL(store(fd, &c, data, 1000, 30), 1);
    /* 2000 of 5000 bytes, then the client is gone */
    CU_ASSERT_EQUAL(store_header(fd, &c, 5000, 30), 0);
    CU_ASSERT_EQUAL(raw_send(fd, "\xff\xff\xff\xff\xff\xff\xff\xff", 8), 0);
    CU_ASSERT_EQUAL(raw_send(fd, data + 1000, 1992), 0);
    usleep(100 * 1000);
    close(fd);
    usleep(200 * 1000);
    fd = td_connect(&d);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(probe_size(fd, &c), 1000);
    /* a stalled STORE (server timeout 1 s): the depot gives up and closes */
    int sfd = td_connect(&d);
    CU_ASSERT_FATAL(sfd >= 0);
    CU_ASSERT_EQUAL(store_header(sfd, &c, 3000, 1), 0);
    CU_ASSERT_EQUAL(raw_send(sfd, "zzzz", 4), 0);
    char line[64];
    CU_ASSERT_EQUAL(raw_readline(sfd, line, sizeof line), 2);
    CU_ASSERT(raw_closed_by_peer(sfd, 5000));
    close(sfd);
    CU_ASSERT_EQUAL(probe_size(fd, &c), 1000);
    /* still usable, and the next bytes follow the first 1000 exactly */
    CU_ASSERT_EQUAL(store(fd, &c, data + 1000, 500, 30), 1);
    CU_ASSERT(load_check(fd, &c, data, 1500));
    close(fd);
    lns_test_server_finish(&d.srv);
}

static void test_thousand_connections(void)
{
    enum { N = 1000 };
    test_depot_t d;
    struct rlimit rl;
    static int fds[N];
    int opened = 0, answered = 0;

    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    getrlimit(RLIMIT_NOFILE, &rl);
    CU_ASSERT_FATAL(rl.rlim_cur >= N + 100);
    CU_ASSERT_FATAL(td_start(&d, NULL) == 0);
    for (int i = 0; i < N; i++) {
        fds[i] = td_connect(&d);
        if (fds[i] >= 0)
            opened++;
    }
    CU_ASSERT_EQUAL(opened, N);
    /* every connection sends its request while all are open, then all answers are read */
    for (int i = 0; i < N; i++)
        if (fds[i] >= 0)
            raw_send(fds[i], "1 4 0 1 x 30\n", 13);
    for (int i = 0; i < N; i++) {
        char line[512];
        if (fds[i] >= 0 && raw_readline(fds[i], line, sizeof line) > 0 &&
            strncmp(line, "1 ", 2) == 0 && raw_readline(fds[i], line, sizeof line) > 0 &&
            strncmp(line, "VS:1.4", 6) == 0)
            answered++;
    }
    CU_ASSERT_EQUAL(answered, N);
    /* and a second round on the same connections (keep-alive) */
    answered = 0;
    for (int i = 0; i < N; i++) {
        char line[512];
        if (fds[i] >= 0 && raw_reqf(fds[i], line, sizeof line, "1 4 0 1 x 30\n") == 1 &&
            strstr(line, " VS:1.4"))
            answered++;
    }
    CU_ASSERT_EQUAL(answered, N);
    for (int i = 0; i < N; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    lns_test_server_finish(&d.srv);
}

typedef struct trickle {
    int fd;
    volatile int stop;
    int sent;
} trickle_t;

static void *trickle_main(void *arg)
{
    trickle_t *t = arg;
    while (!t->stop && t->sent < 100000) {
        if (send(t->fd, "x", 1, MSG_NOSIGNAL) != 1)
            break;
        t->sent++;
        usleep(200 * 1000);
    }
    return NULL;
}

static void test_slowloris(void)
{
    test_depot_t d;
    caps_t c;
    char data[4096];
    lns_test_fill(data, sizeof data, 1);
    CU_ASSERT_FATAL(td_start(&d, "--header-timeout 2") == 0);
    int setup = td_connect(&d);
    CU_ASSERT_FATAL(setup >= 0);
    caps_t slow;
    CU_ASSERT_FATAL(allocate(setup, 1 << 20, &slow) == 1);
    close(setup);

    /* half a request line, then nothing */
    int half = td_connect(&d);
    CU_ASSERT_FATAL(half >= 0);
    CU_ASSERT_EQUAL(raw_send(half, "1 4 0 ", 6), 0);
    /* a STORE whose data trickles in, one byte every 200 ms */
    trickle_t tr = {.fd = td_connect(&d)};
    CU_ASSERT_FATAL(tr.fd >= 0);
    CU_ASSERT_EQUAL(store_header(tr.fd, &slow, 100000, 30), 0);
    pthread_t th;
    CU_ASSERT_FATAL(pthread_create(&th, NULL, trickle_main, &tr) == 0);

    /* a normal client meanwhile: 10 round trips, and for 3 s at least (past the header
     * timeout); a depot that a slow connection held up would not end them while the STORE
     * trickles (its server timeout: 30 s) */
    int fd = td_connect(&d);
    CU_ASSERT_FATAL(fd >= 0);
    int64_t worst = 0;
    int ok = 0;
    int64_t min_end = lns_mono_ms() + 3000, end = lns_test_deadline(LNS_TEST_WAIT_MS);
    while ((ok < 10 || lns_mono_ms() < min_end) && lns_mono_ms() < end) {
        int64_t t0 = lns_mono_ms();
        if (allocate(fd, 4096, &c) == 1 && store(fd, &c, data, sizeof data, 30) == 1 &&
            load_check(fd, &c, data, sizeof data))
            ok++;
        int64_t dt = lns_mono_ms() - t0;
        if (dt > worst)
            worst = dt;
        usleep(50 * 1000);
    }
    CU_ASSERT(ok >= 10);
    CU_ASSERT(worst < 10000); /* a hang bound, a third of the trickle's timeout */
    /* the half line is cut off by the header timeout (2 s, already passed) */
    CU_ASSERT(raw_closed_by_peer(half, 2000));
    close(half);
    /* the trickling STORE is still alive (it makes progress), and stored nothing yet */
    long long sz = probe_size(fd, &slow);
    CU_ASSERT_EQUAL(sz, 0);
    tr.stop = 1;
    pthread_join(th, NULL);
    CU_ASSERT(tr.sent >= 10);
    close(tr.fd);
    close(fd);
    lns_test_server_finish(&d.srv);
}

static void test_idle_timeout(void)
{
    test_depot_t d;
    CU_ASSERT_FATAL(td_start(&d, "--idle-timeout 2") == 0);
    int a = td_connect(&d), b = td_connect(&d);
    CU_ASSERT_FATAL(a >= 0 && b >= 0);
    CU_ASSERT_EQUAL(raw_reqf(a, NULL, 0, "1 4 0 1 x 30\n"), 1);
    int64_t t0 = lns_mono_ms();
    CU_ASSERT(raw_closed_by_peer(a, 30000));
    CU_ASSERT(raw_closed_by_peer(b, 30000));
    int64_t dt = lns_mono_ms() - t0;
    CU_ASSERT(dt >= 1700 && dt < 20000); /* the 2 s, not the default minute */
    close(a);
    close(b);
    /* a busy connection is not idle: 3.6 s of requests 300 ms apart (a busy machine may
     * stretch a gap several times and stay under the 2 s) */
    a = td_connect(&d);
    CU_ASSERT_FATAL(a >= 0);
    int ok = 0;
    for (int i = 0; i < 12; i++) {
        usleep(300 * 1000);
        ok += raw_reqf(a, NULL, 0, "1 4 0 1 x 30\n") == 1;
    }
    CU_ASSERT_EQUAL(ok, 12);
    close(a);
    lns_test_server_finish(&d.srv);
}

static void test_connection_limit(void)
{
    test_depot_t d;
    int fds[5];
    char line[1024];
    CU_ASSERT_FATAL(td_start(&d, "--max-connections 5") == 0);
    for (int i = 0; i < 5; i++) {
        fds[i] = td_connect(&d);
        CU_ASSERT_FATAL(fds[i] >= 0);
        CU_ASSERT_EQUAL(raw_reqf(fds[i], NULL, 0, "1 4 0 1 x 30\n"), 1);
    }
    int extra = td_connect(&d);
    CU_ASSERT_FATAL(extra >= 0);
    CU_ASSERT(raw_readline(extra, line, sizeof line) > 0);
    CU_ASSERT_STRING_EQUAL(line, "-66 5");
    CU_ASSERT(raw_closed_by_peer(extra, 2000));
    close(extra);
    /* the five are still served; once one closes, a new one gets in */
    CU_ASSERT_EQUAL(raw_reqf(fds[4], NULL, 0, "1 4 0 1 x 30\n"), 1);
    close(fds[0]);
    int ok = 0;
    int64_t end = lns_test_deadline(LNS_TEST_WAIT_MS);
    while (!ok && lns_test_poll(end)) {
        int fd = td_connect(&d);
        if (fd >= 0 && raw_reqf(fd, line, sizeof line, "1 4 0 1 x 30\n") == 1)
            ok = 1;
        if (fd >= 0)
            close(fd);
    }
    CU_ASSERT(ok);
    for (int i = 1; i < 5; i++)
        close(fds[i]);
    lns_test_server_finish(&d.srv);
}

static const lns_test_case tests[] = {
    {"SIGKILL during STOREs, restart", test_sigkill_during_stores},
    {"SIGKILL with slab files, restart", test_sigkill_slabs},
    {"client gone or stalled mid-STORE", test_disconnect_mid_store},
    {"1000 simultaneous connections", test_thousand_connections},
    {"slowloris does not delay others", test_slowloris},
    {"idle timeout", test_idle_timeout},
    {"connection limit", test_connection_limit},
};

LNS_TEST_MAIN("depot_robust", tests)
