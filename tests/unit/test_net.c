/* test_net.c -- common/lns_net: the read buffer and the timeouts every socket call relies on. */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lns_net.h"
#include "lns_test.h"
#include "lns_time.h"

static int pair[2];

static int setup(void)
{
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) < 0)
        return -1;
    lns_set_nonblock(pair[0]);
    return 0;
}

static int teardown(void)
{
    close(pair[0]);
    close(pair[1]);
    return 0;
}

static void test_lines(void)
{
    lns_rbuf_t rb;
    char *line;
    size_t len;
    const char *p;
    CU_ASSERT_FATAL(lns_rbuf_init(&rb, pair[0], 64) == 0);

    /* Two lines and some data in one write: both lines come out, the data stays buffered. */
    const char msg[] = "1 2 3\r\nsecond line\nDATA";
    CU_ASSERT(write(pair[1], msg, sizeof msg - 1) == (ssize_t)(sizeof msg - 1));
    CU_ASSERT_EQUAL(lns_rbuf_readline(&rb, &line, &len, 64, 1000, 1000, INT64_MAX), 1);
    CU_ASSERT_EQUAL(len, 6);
    CU_ASSERT(memcmp(line, "1 2 3\r", 6) == 0);
    CU_ASSERT_EQUAL(lns_rbuf_readline(&rb, &line, &len, 64, 1000, 1000, INT64_MAX), 1);
    CU_ASSERT_EQUAL(len, 11);
    CU_ASSERT_EQUAL(lns_rbuf_peek(&rb, &p), 4);
    CU_ASSERT(memcmp(p, "DATA", 4) == 0);
    lns_rbuf_consume(&rb, 2);
    CU_ASSERT_EQUAL(lns_rbuf_pending(&rb), 2);
    char two[2];
    CU_ASSERT_EQUAL(lns_rbuf_take(&rb, two, 2), 2);
    CU_ASSERT(memcmp(two, "TA", 2) == 0);
    CU_ASSERT_EQUAL(lns_rbuf_pending(&rb), 0);

    /* A line longer than max that arrives whole with its newline is still refused. */
    const char longl[] = "0123456789012345678901234567890123456789\nnext\n";
    CU_ASSERT(write(pair[1], longl, sizeof longl - 1) == (ssize_t)(sizeof longl - 1));
    errno = 0;
    CU_ASSERT_EQUAL(lns_rbuf_readline(&rb, &line, &len, 16, 1000, 1000, INT64_MAX), -1);
    CU_ASSERT_EQUAL(errno, EMSGSIZE);
    lns_rbuf_free(&rb);
}

static void test_no_newline_overflow(void)
{
    lns_rbuf_t rb;
    char *line;
    size_t len;
    char junk[100];
    CU_ASSERT_FATAL(lns_rbuf_init(&rb, pair[0], 32) == 0);
    memset(junk, 'x', sizeof junk);
    CU_ASSERT(write(pair[1], junk, sizeof junk) == (ssize_t)sizeof junk);
    errno = 0;
    CU_ASSERT_EQUAL(lns_rbuf_readline(&rb, &line, &len, 32, 1000, 1000, INT64_MAX), -1);
    CU_ASSERT_EQUAL(errno, EMSGSIZE);
    lns_rbuf_free(&rb);
    char drain[200];
    while (read(pair[0], drain, sizeof drain) > 0)
        ;
}

static void test_timeouts(void)
{
    lns_rbuf_t rb;
    char *line;
    size_t len;
    char buf[8];
    CU_ASSERT_FATAL(lns_rbuf_init(&rb, pair[0], 64) == 0);

    /* Nothing arrives: the first-byte wait decides.  The other waits are a minute, so the
     * upper bounds below tell them apart however busy the machine is. */
    int64_t t0 = lns_mono_ms();
    errno = 0;
    CU_ASSERT_EQUAL(lns_rbuf_readline(&rb, &line, &len, 64, 100, 60000, INT64_MAX), -1);
    CU_ASSERT_EQUAL(errno, ETIMEDOUT);
    int64_t took = lns_mono_ms() - t0;
    CU_ASSERT(took >= 90 && took < 30000);

    /* Half a line, then silence: the overall deadline stops it (slowloris). */
    CU_ASSERT(write(pair[1], "1 2", 3) == 3);
    t0 = lns_mono_ms();
    errno = 0;
    CU_ASSERT_EQUAL(lns_rbuf_readline(&rb, &line, &len, 64, 60000, 60000,
                                      lns_deadline_ms(150)), -1);
    CU_ASSERT_EQUAL(errno, ETIMEDOUT);
    took = lns_mono_ms() - t0;
    CU_ASSERT(took >= 140 && took < 30000);
    lns_rbuf_free(&rb);

    errno = 0;
    CU_ASSERT_EQUAL(lns_read_full(pair[0], buf, sizeof buf, 50, INT64_MAX), -1);
    CU_ASSERT_EQUAL(errno, ETIMEDOUT);
}

static void test_eof(void)
{
    int sp[2];
    char buf[8];
    lns_rbuf_t rb;
    char *line;
    size_t len;
    CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0);
    lns_set_nonblock(sp[0]);
    CU_ASSERT(write(sp[1], "abc", 3) == 3);
    close(sp[1]);
    errno = 0;
    CU_ASSERT_EQUAL(lns_read_full(sp[0], buf, 5, 1000, INT64_MAX), -1);
    CU_ASSERT_EQUAL(errno, ECONNRESET);
    CU_ASSERT_EQUAL(lns_rbuf_init(&rb, sp[0], 16), 0);
    CU_ASSERT_EQUAL(lns_rbuf_readline(&rb, &line, &len, 16, 1000, 1000, INT64_MAX), 0);
    lns_rbuf_free(&rb);
    close(sp[0]);
}

/* A slow link: a peer that takes SLOW_STEP bytes every SLOW_MS, then answers "ok\n". */
#define SLOW_TOTAL (400 * 1024)
#define SLOW_STEP (16 * 1024)
#define SLOW_MS 50

typedef struct slow_peer {
    int fd;
    int answer;
} slow_peer_t;

static void *slow_reader(void *arg)
{
    slow_peer_t *p = arg;
    char *buf = malloc(SLOW_STEP);
    size_t got = 0;
    while (buf && got < SLOW_TOTAL) {
        lns_test_sleep_ms(SLOW_MS);
        ssize_t r = read(p->fd, buf, SLOW_STEP);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    if (p->answer && got == SLOW_TOTAL && write(p->fd, "ok\n", 3) != 3)
        got = 0;
    free(buf);
    return NULL;
}

/* A TCP connection over loopback: *cli (non-blocking, a big send buffer) and *srv (blocking,
 * a small receive buffer, so that most of what is sent waits in cli's send queue). */
static int tcp_pair(int *cli, int *srv)
{
    int port = 0, small = 16 * 1024, big = 1 << 20;
    int l = lns_listen("127.0.0.1", 0, 4, &port, NULL, 0);
    if (l < 0)
        return -1;
    setsockopt(l, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    *cli = lns_connect("127.0.0.1", port, 2000);
    if (*cli >= 0)
        setsockopt(*cli, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    if (*cli >= 0 && lns_wait(l, POLLIN, 2000, INT64_MAX) == 0)
        *srv = accept(l, NULL, NULL);
    else
        *srv = -1;
    close(l);
    return *cli >= 0 && *srv >= 0 ? 0 : -1;
}

/* The wait for an answer behind our bytes still crossing a slow link counts from when they
 * stop leaving, not from our last write: a 300 ms idle wait outlasts the 1.2 s the link takes
 * to carry them.  A peer that takes nothing more (stopped) is given up after the idle time. */
static void test_idle_counts_draining(void)
{
    int cli, srv;
    char *data = calloc(1, SLOW_TOTAL), buf[8];
    CU_ASSERT_FATAL(data != NULL);
    CU_ASSERT_FATAL(tcp_pair(&cli, &srv) == 0);
    slow_peer_t p = {srv, 1};
    pthread_t th;
    CU_ASSERT_FATAL(pthread_create(&th, NULL, slow_reader, &p) == 0);
    int64_t t0 = lns_mono_ms();
    CU_ASSERT_EQUAL(lns_write_full(cli, data, SLOW_TOTAL, 0, 300, INT64_MAX), 0);
    errno = 0;
    CU_ASSERT_EQUAL(lns_read_full(cli, buf, 3, 300, INT64_MAX), 0);
    int64_t took = lns_mono_ms() - t0;
    CU_ASSERT(took > 300); /* the bytes did take longer than one idle wait */
    if (took <= 300)
        fprintf(stderr, "answer after %lld ms\n", (long long)took);
    pthread_join(th, NULL);
    close(cli);
    close(srv);

    /* a peer that reads nothing: the write fills the queues, then nothing moves */
    CU_ASSERT_FATAL(tcp_pair(&cli, &srv) == 0);
    t0 = lns_mono_ms();
    int w = 0;
    for (int i = 0; i < 64 && w == 0; i++)
        w = lns_write_full(cli, data, SLOW_TOTAL, 0, 300, INT64_MAX);
    CU_ASSERT_EQUAL(w, -1);
    CU_ASSERT_EQUAL(errno, ETIMEDOUT);
    took = lns_mono_ms() - t0;
    CU_ASSERT(took < 30000); /* a hang bound: without the idle wait it never ends */
    close(cli);
    close(srv);
    free(data);
}

static const lns_test_case tests[] = {
    {"lines and buffered data", test_lines},
    {"overlong line without newline", test_no_newline_overflow},
    {"timeouts", test_timeouts},
    {"early EOF", test_eof},
    {"an idle wait counts our bytes leaving as progress", test_idle_counts_draining},
};

LNS_TEST_MAIN_WITH("lns_net", setup, teardown, tests)
