/* test_lbone_robust.c -- lbone_server under slowloris: connections that send a request one
 * byte at a time must not lock out the depots' heartbeats and the clients' queries.
 *
 * The clients are test_slow.h's, each from an address of 127/8: the normal client (health
 * checks) comes from 127.0.0.2, the slow ones from 127.0.0.3 (one address, many connections)
 * or from 127.0.1.x (one connection per address).  A slow connection sends one byte of a
 * request that never ends every 100 ms, so no inactivity timeout ever closes it.  The servers
 * run --plain-http: test_slow.h's clients write HTTP bytes to the socket themselves, and what
 * is tested is the HTTP front's slot keeping, which TLS does not change.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lns_test.h"
#include "lns_time.h"
#include "test_depot.h"
#include "test_lbone.h"
#include "test_slow.h"

static const char slow_get[] = "GET /v1/depots?count=1 HTTP/1.1\r\nHost: t\r\n";
static const char slow_post[] = "POST /v1/reports HTTP/1.1\r\nHost: t\r\n"
                                "Content-Type: application/json\r\nContent-Length: 4000\r\n\r\n";

/* 200 slow connections from one address against 64 slots: the per-address limit (by default
 * a quarter of max-connections) keeps all but 16 of them out. */
static void test_slowloris_one_address(void)
{
    test_lbone_t l;
    ts_slow_set_t s;
    CU_ASSERT_FATAL(tlb_start(&l, "--plain-http --probe-interval 0 --max-connections 64") == 0);
    ts_slow_start(&s);
    int made = 0;
    for (int i = 0; i < 200; i++)
        made += ts_slow_add(&s, "127.0.0.3", l.port, slow_get, 0) == 0;
    CU_ASSERT(made >= 100);
    usleep(300 * 1000);
    CU_ASSERT(ts_judged_gets(l.port, "/healthz", 1500, "one address", 0));
    int open = ts_slow_open_count(&s);
    if (open < 1 || open > 16)
        fprintf(stderr, "\n  one address: %d slow connections open, wanted 1..16\n", open);
    CU_ASSERT(open >= 1 && open <= 16);
    ts_slow_end(&s);
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
    ts_slow_set_t s;
    char src[32];
    int64_t dt;
    CU_ASSERT_FATAL(tlb_start(&l, "--plain-http --probe-interval 0 --max-connections 64 --request-timeout 2") ==
                    0);
    /* a keep-alive client that made one request and then stays idle */
    int keep = ts_connect_from("127.0.0.2", l.port);
    CU_ASSERT_FATAL(keep >= 0);
    static const char req[] = "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";
    CU_ASSERT(send(keep, req, sizeof req - 1, MSG_NOSIGNAL) == (ssize_t)(sizeof req - 1));
    CU_ASSERT(ts_read_reply(keep, 2000) == 200);
    int64_t keep_t0 = lns_mono_ms();
    ts_slow_start(&s);
    int made = 0;
    for (int i = 1; i <= 31; i++) {
        snprintf(src, sizeof src, "127.0.1.%d", i);
        made += (i == 1 ? ts_slow_add(&s, src, l.port, slow_post, sizeof slow_post - 1)
                        : ts_slow_add(&s, src, l.port, slow_get, 0)) == 0;
    }
    CU_ASSERT(made == 31);
    int64_t t0 = lns_mono_ms();
    usleep(300 * 1000);
    int got = ts_get("127.0.0.2", l.port, "/healthz", 15000, &dt); /* 15 s: a hang only */
    if (!got)
        fprintf(stderr, "\n  deadline: health check failed after %lld ms\n", (long long)dt);
    CU_ASSERT(got);
    CU_ASSERT(ts_judged_gets(l.port, "/healthz", 1000, "deadline", 0));
    /* every slow connection was closed, none before its 2 s (the post's body included), and
     * by the request-timeout, not the idle-timeout's 30 s (15 s: a busy machine) */
    int64_t wait_end = t0 + 20000;
    while (ts_slow_open_count(&s) > 0 && lns_mono_ms() < wait_end)
        usleep(50 * 1000);
    CU_ASSERT_EQUAL(ts_slow_open_count(&s), 0);
    ts_slow_stop(&s);
    int early = 0, late = 0;
    for (int i = 0; i < s.n; i++) {
        int64_t life = s.c[i].closed_ms - s.c[i].opened_ms;
        early += s.c[i].closed_ms && life < 1500;
        late += !s.c[i].closed_ms || life > 15000;
        if (!s.c[i].closed_ms || life < 1500 || life > 15000)
            fprintf(stderr, "\n  slow connection %d: closed after %lld ms\n", i,
                    s.c[i].closed_ms ? (long long)life : -1LL);
    }
    CU_ASSERT_EQUAL(early, 0);
    CU_ASSERT_EQUAL(late, 0);
    CU_ASSERT(s.c[0].closed_ms && s.c[0].sent > sizeof slow_post);
    CU_ASSERT(raw_closed_by_peer(keep, (int)(keep_t0 + 15000 - lns_mono_ms())));
    ts_slow_end(&s);
    close(keep);
    lns_test_server_finish(&l.srv);
}

/* The attack: 2,000 slow connections from 1,000 addresses, each reopened as soon as
 * it is cut, against the default limits (from the open-file limit, so the server holds them
 * all); legit requests from another address are still answered, 95% within 1 s. */
static void test_slowloris_distributed(void)
{
    if (!ts_fds_for(2100)) {
        printf("\nSKIP test_lbone_robust distributed slowloris: fewer than 2,400 open files "
               "allowed here\n");
        return;
    }
    test_lbone_t l;
    long reopened;
    CU_ASSERT_FATAL(tlb_start(&l, "--plain-http --probe-interval 0 --request-timeout 2") == 0);
    CU_ASSERT(ts_flood_judged(l.port, 2000, 2, slow_get, 300, "/healthz", "distributed", 1,
                              &reopened) >= 1900);
    /* the attack went on: connections cut at request-timeout and reopened */
    CU_ASSERT(reopened >= 1000);
    lns_test_server_finish(&l.srv);
}

/* More slow connections (150, from 150 addresses, reopened as soon as cut) than the server
 * has slots (64), and a request-timeout (60 s) that never fires: near the limit the oldest
 * unfinished requests are closed, so health checks still get in and the log says so once. */
static void test_slowloris_shed(void)
{
    test_lbone_t l;
    long reopened;
    CU_ASSERT_FATAL(tlb_start(&l, "--plain-http --probe-interval 0 --max-connections 64 --request-timeout 60") ==
                    0);
    CU_ASSERT(ts_flood_judged(l.port, 150, 1, slow_get, 1500, "/healthz", "shed", 0,
                              &reopened) == 150);
    CU_ASSERT(reopened >= 64);
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
