/* test_net.c -- common/lns_net: the read buffer and the timeouts every socket call relies on. */
#include <CUnit/CUnit.h>
#include <errno.h>
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

    /* Nothing arrives: the first-byte wait decides. */
    int64_t t0 = lns_mono_ms();
    errno = 0;
    CU_ASSERT_EQUAL(lns_rbuf_readline(&rb, &line, &len, 64, 100, 5000, INT64_MAX), -1);
    CU_ASSERT_EQUAL(errno, ETIMEDOUT);
    int64_t took = lns_mono_ms() - t0;
    CU_ASSERT(took >= 90 && took < 1000);

    /* Half a line, then silence: the overall deadline stops it (slowloris). */
    CU_ASSERT(write(pair[1], "1 2", 3) == 3);
    t0 = lns_mono_ms();
    errno = 0;
    CU_ASSERT_EQUAL(lns_rbuf_readline(&rb, &line, &len, 64, 5000, 5000, lns_deadline_ms(150)),
                    -1);
    CU_ASSERT_EQUAL(errno, ETIMEDOUT);
    took = lns_mono_ms() - t0;
    CU_ASSERT(took >= 140 && took < 1000);
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

static const lns_test_case tests[] = {
    {"lines and buffered data", test_lines},
    {"overlong line without newline", test_no_newline_overflow},
    {"timeouts", test_timeouts},
    {"early EOF", test_eof},
};

LNS_TEST_MAIN_WITH("lns_net", setup, teardown, tests)
