/* test_interop_replay.c -- libibp against the replies real LoCI 1.3.1 and ACCRE 1.4 depots send.
 *
 * Those depots cannot run here, so a scripted peer replays their recorded bytes (from
 * ../shared/reference/ibp-protocol.md, "Replies as observed on the wire"): the space before
 * the newline of ALLOCATE, errors with a leading space, the two phases of STORE, the version-0
 * STATUS line with no status code ending in a NUL, the 1.4 STATUS "1 <n>" and n bytes of
 * KEY:value fields and the -66 a 1.4 depot sends before it closes.  Each step checks the
 * request line libibp sent too.  The version detection is tested here as well: a LoCI 1.3.1
 * depot closes the connection without a word on a version-1 line (checked against the real
 * one, docs/interop.md). */
#include <poll.h>
#include <CUnit/CUnit.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "ibp.h"
#include "lns_test.h"
#include "test_depot.h"

#define K48 "00112233445566770123456789abcdef0123456789abcdef"

typedef struct step {
    const char *expect;  /* prefix the request line must have (NULL: read no line) */
    size_t data;         /* bytes of data to read after the line (STORE) */
    const char *reply;   /* bytes to send (may contain NUL: see reply_len) */
    size_t reply_len;    /* 0 = strlen(reply) */
    const char *reply2;  /* sent after the data was read */
    int close_after;     /* close the connection after this step */
    int no_data;         /* nothing may follow the line before the reply (no data sent blind) */
} step_t;

typedef struct peer {
    int lfd;
    int port;
    const step_t *steps;
    int nsteps;
    int mismatches;
    char last_line[1024];
    pthread_t th;
} peer_t;

static void *peer_main(void *arg)
{
    peer_t *p = arg;
    int fd = -1;
    for (int i = 0; i < p->nsteps; i++) {
        const step_t *s = &p->steps[i];
        if (fd < 0) {
            fd = accept(p->lfd, NULL, NULL);
            if (fd < 0)
                return NULL;
            struct timeval tv = {10, 0};
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        }
        if (s->expect) {
            if (raw_readline(fd, p->last_line, sizeof p->last_line) < 0) {
                p->mismatches++;
                break;
            }
            if (strncmp(p->last_line, s->expect, strlen(s->expect)) != 0) {
                fprintf(stderr, "\n  replay step %d: expected \"%s...\", got \"%s\"\n", i,
                        s->expect, p->last_line);
                p->mismatches++;
            }
        }
        if (s->no_data) {
            struct pollfd pfd = {.fd = fd, .events = POLLIN};
            char c;
            if (poll(&pfd, 1, 200) > 0 && recv(fd, &c, 1, MSG_PEEK) > 0) {
                fprintf(stderr, "\n  replay step %d: data sent before the reply\n", i);
                p->mismatches++;
            }
        }
        if (s->reply)
            raw_send(fd, s->reply, s->reply_len ? s->reply_len : strlen(s->reply));
        if (s->data) {
            char *buf = malloc(s->data);
            if (raw_read(fd, buf, s->data) < 0)
                p->mismatches++;
            free(buf);
        }
        if (s->reply2)
            raw_send(fd, s->reply2, strlen(s->reply2));
        if (s->close_after) {
            close(fd);
            fd = -1;
        }
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

static int peer_start(peer_t *p, const step_t *steps, int n)
{
    memset(p, 0, sizeof *p);
    p->steps = steps;
    p->nsteps = n;
    if ((p->lfd = raw_listen_loopback(&p->port)) < 0)
        return -1;
    return pthread_create(&p->th, NULL, peer_main, p);
}

static int peer_finish(peer_t *p)
{
    shutdown(p->lfd, SHUT_RDWR);
    pthread_join(p->th, NULL);
    close(p->lfd);
    return p->mismatches;
}

static ibp_client_t *client(int version)
{
    ibp_client_opts_t o;
    ibp_client_opts_init(&o);
    o.version = version;
    o.tls = IBP_TLS_OFF; /* the replays are the conversations as recorded, without the STATUS
                            that asks a depot without a pin for one (test_depot_tls) */
    o.io_timeout_ms = 5000;
    o.connect_timeout_ms = 2000;
    return ibp_client_new(&o);
}

/* A LoCI 1.3.1 depot: one connection per operation, replies with the quirks of the time. */
static void test_loci_v0(void)
{
    char cap[IBP_MAX_CAP];
    static const char status_reply[] = "1024 10 512 0 2592000 1 3 \n";
    step_t steps[] = {
        {"0 1 2 1 3600 100 ", 0,
         "1 ibp://127.0.0.1:6714/IBP-12345/701197658/READ "
         "ibp://127.0.0.1:6714/IBP-12345/11/WRITE ibp://127.0.0.1:6714/IBP-12345/22/MANAGE \n",
         0, NULL, 1, 0},
        {"0 2 IBP-12345 11 5 ", 5, "1 \n", 0, "1 5\n", 1, 0},
        {"0 8 IBP-12345 701197658 0 5 ", 0, "1 5\nhello", 0, NULL, 1, 0},
        {"0 8 IBP-12345 701197658 0 9 ", 0, " -4 \n", 0, NULL, 1, 0},
        {"0 4 1 ", 0, status_reply, sizeof status_reply /* includes the NUL */, NULL, 1, 0},
    };
    peer_t p;
    CU_ASSERT_FATAL(peer_start(&p, steps, 5) == 0);
    ibp_client_t *c = client(0);
    ibp_attr_t a = {.size = 100, .duration_s = 3600, .reliability = IBP_HARD,
                    .type = IBP_BYTEARRAY};
    ibp_caps_t caps;

    CU_ASSERT_EQUAL(ibp_allocate(c, "127.0.0.1", p.port, NULL, &a, &caps), IBP_OK);
    CU_ASSERT_STRING_EQUAL(caps.read, "ibp://127.0.0.1:6714/IBP-12345/701197658/READ");
    CU_ASSERT_STRING_EQUAL(caps.manage, "ibp://127.0.0.1:6714/IBP-12345/22/MANAGE");

    /* the replayed depot listens on p.port, not on the port its caps name */
    snprintf(cap, sizeof cap, "ibp://127.0.0.1:%d/IBP-12345/11/WRITE", p.port);
    uint64_t n = 0;
    CU_ASSERT_EQUAL(ibp_store(c, cap, "hello", 5, &n), IBP_OK);
    CU_ASSERT_EQUAL(n, 5);

    char buf[16] = {0};
    snprintf(cap, sizeof cap, "ibp://127.0.0.1:%d/IBP-12345/701197658/READ", p.port);
    CU_ASSERT_EQUAL(ibp_load(c, cap, 0, 5, buf), IBP_OK);
    CU_ASSERT_STRING_EQUAL(buf, "hello");
    CU_ASSERT_EQUAL(ibp_load(c, cap, 0, 9, buf), IBP_E_CAP_NOT_FOUND);

    ibp_depot_status_t st;
    CU_ASSERT_EQUAL(ibp_status(c, "127.0.0.1", p.port, NULL, NULL, &st), IBP_OK);
    CU_ASSERT_EQUAL(st.hard_total, 1024ULL * 1024 * 1024);
    CU_ASSERT_EQUAL(st.hard_used, 10ULL * 1024 * 1024);
    CU_ASSERT_EQUAL(st.soft_total, 512ULL * 1024 * 1024);
    CU_ASSERT_EQUAL(st.max_duration_s, 2592000);

    ibp_client_free(c);
    CU_ASSERT_EQUAL(peer_finish(&p), 0);
}

/* An ACCRE 1.4 depot: keep-alive, "1 <n>" + KEY:value status, CHNG only with explicit values,
 * SEND with its field order, and -66 before it closes (bytes recorded from the real one). */
static void test_accre_v1(void)
{
    char cap[IBP_MAX_CAP], dst[IBP_MAX_CAP];
    static const char status_body[] =
        "VS:1.4:1.0 DT:1  RID:1 RT:1 CT:8589934592 ST:8589934592 UT:1000 UH:1000 "
        "SH:8589934592 CH:8589934592 AT:8589933592 AH:8589933592 DR:2592000 RE \n";
    step_t steps[] = {
        {"1 4 1 1 ibp ", 0, "1 143 \n", 0, status_body, 0, 0},
        {"1 9 0#" K48 " 5 40 ", 0, "1 1 1 4096 8192 3599 2 1 \n", 0, NULL, 0, 0},
        /* CHNG of the duration only: the size and reliability sent as they are */
        {"1 9 0#" K48 " 5 40 ", 0, "1 1 1 4096 8192 3599 2 1 \n", 0, NULL, 0, 0},
        {"1 9 0#" K48 " 5 43 3 8192 999999999 2 ", 0, " -28 \n", 0, NULL, 0, 0},
        /* the depot closed this connection as it went back to the pool: its parting -66 is
         * read as the next request's reply, which goes again on a new connection */
        {"1 9 0#" K48 " 5 40 ", 0, "-66 0.236328\n", 0, NULL, 1, 0},
        {"1 9 0#" K48 " 5 40 ", 0, "1 1 1 4096 8192 3598 2 1 \n", 0, NULL, 0, 0},
        /* SEND: an empty path field first, then key, target, type key */
        {"1 5  0#" K48 " ibp://127.0.0.1:6714/1#abc/7/WRITE 5 0 4096 ", 0, "1 4096 \n", 0,
         NULL, 0, 0},
    };
    peer_t p;
    CU_ASSERT_FATAL(peer_start(&p, steps, 7) == 0);
    ibp_client_t *c = client(-1);

    ibp_depot_status_t st;
    CU_ASSERT_EQUAL(ibp_status(c, "127.0.0.1", p.port, "1", "ibp", &st), IBP_OK);
    CU_ASSERT_EQUAL(st.soft_total, 8589934592ULL);
    CU_ASSERT_EQUAL(st.soft_used, 1000ULL);
    CU_ASSERT_EQUAL(st.hard_total, 8589934592ULL);
    CU_ASSERT_EQUAL(st.hard_used, 1000ULL);
    CU_ASSERT_EQUAL(st.max_duration_s, 2592000);
    CU_ASSERT_STRING_EQUAL(st.version, "1.4:1.0");
    CU_ASSERT_STRING_EQUAL(st.rid, "1");

    snprintf(cap, sizeof cap, "ibp://127.0.0.1:%d/0#" K48 "/5/MANAGE", p.port);
    ibp_probe_t pr;
    CU_ASSERT_EQUAL(ibp_probe(c, cap, &pr), IBP_OK);
    CU_ASSERT_EQUAL(pr.cur_size, 4096);
    CU_ASSERT_EQUAL(pr.max_size, 8192);
    CU_ASSERT_EQUAL(pr.seconds_left, 3599);
    CU_ASSERT_EQUAL(pr.reliability, IBP_HARD);

    CU_ASSERT_EQUAL(ibp_change(c, cap, 0, 999999999, 0), IBP_E_LONG_DURATION);
    CU_ASSERT_EQUAL(ibp_probe(c, cap, &pr), IBP_OK);
    CU_ASSERT_EQUAL(pr.seconds_left, 3598);

    snprintf(cap, sizeof cap, "ibp://127.0.0.1:%d/0#" K48 "/5/READ", p.port);
    snprintf(dst, sizeof dst, "ibp://127.0.0.1:6714/1#abc/7/WRITE");
    uint64_t n = 0;
    CU_ASSERT_EQUAL(ibp_send(c, cap, dst, 0, 4096, &n), IBP_OK);
    CU_ASSERT_EQUAL(n, 4096);

    ibp_client_free(c);
    CU_ASSERT_EQUAL(peer_finish(&p), 0);
}

/* Version detection against a LoCI 1.3.1 depot as it really behaves: a version-1 line is
 * dropped (connection closed, nothing answered), so the client asks again in version 0 and
 * then speaks version 0 to that depot from the start.  A STORE to a depot whose version is
 * not known yet sends its line alone: no data leaves before the depot answered. */
static void test_detect_v0(void)
{
    char cap[IBP_MAX_CAP];
    step_t steps[] = {
        {"1 1 0 2 1 3600 100 ", 0, NULL, 0, NULL, 1, 0},
        {"0 1 2 1 3600 100 ", 0,
         "1 ibp://127.0.0.1:6714/IBP-12345/701197658/READ "
         "ibp://127.0.0.1:6714/IBP-12345/11/WRITE ibp://127.0.0.1:6714/IBP-12345/22/MANAGE \n",
         0, NULL, 1, 0},
        /* learned: straight to version 0 */
        {"0 9 IBP-12345 22 40 3 ", 0, "1 1 1 5 100 3600 2 1 \n", 0, NULL, 1, 0},
        /* CHNG of the duration: 1.3.1 reads a reliability of 0 as invalid (-30) and a size
         * of 0 as 0, so both are sent as the PROBE found them */
        {"0 9 IBP-12345 22 40 3 ", 0, "1 1 1 5 100 3600 2 1 \n", 0, NULL, 1, 0},
        {"0 9 IBP-12345 22 43 3 100 7200 2 ", 0, "1 \n", 0, NULL, 1, 0},
        /* a new client: the STORE's line alone in version 1, dropped; then version 0 */
        {"1 2 IBP-12345 11 5 ", 0, NULL, 0, NULL, 1, 1},
        {"0 2 IBP-12345 11 5 ", 5, "1 \n", 0, "1 5\n", 1, 0},
        /* a version error (-27) falls back too */
        {"1 8 IBP-12345 701197658 0 5 ", 0, " -27 \n", 0, NULL, 1, 0},
        {"0 8 IBP-12345 701197658 0 5 ", 0, "1 5 \nhello", 0, NULL, 1, 0},
    };
    peer_t p;
    CU_ASSERT_FATAL(peer_start(&p, steps, 9) == 0);
    ibp_client_t *c = client(-1);
    ibp_attr_t a = {.size = 100, .duration_s = 3600, .reliability = IBP_HARD,
                    .type = IBP_BYTEARRAY};
    ibp_caps_t caps;
    ibp_probe_t pr;

    CU_ASSERT_EQUAL(ibp_allocate(c, "127.0.0.1", p.port, NULL, &a, &caps), IBP_OK);
    snprintf(cap, sizeof cap, "ibp://127.0.0.1:%d/IBP-12345/22/MANAGE", p.port);
    CU_ASSERT_EQUAL(ibp_probe(c, cap, &pr), IBP_OK);
    CU_ASSERT_EQUAL(pr.max_size, 100);
    CU_ASSERT_EQUAL(ibp_change(c, cap, 0, 7200, 0), IBP_OK);
    ibp_client_free(c);

    c = client(-1);
    snprintf(cap, sizeof cap, "ibp://127.0.0.1:%d/IBP-12345/11/WRITE", p.port);
    uint64_t n = 0;
    CU_ASSERT_EQUAL(ibp_store(c, cap, "hello", 5, &n), IBP_OK);
    CU_ASSERT_EQUAL(n, 5);
    ibp_client_free(c);

    c = client(-1);
    char buf[8] = {0};
    snprintf(cap, sizeof cap, "ibp://127.0.0.1:%d/IBP-12345/701197658/READ", p.port);
    CU_ASSERT_EQUAL(ibp_load(c, cap, 0, 5, buf), IBP_OK);
    CU_ASSERT_STRING_EQUAL(buf, "hello");
    ibp_client_free(c);
    CU_ASSERT_EQUAL(peer_finish(&p), 0);
}

/* A pinned version is spoken from the first request and never changed by detection: pinned
 * to 1, a dropped line is the depot's failure, not a reason to try version 0.  An ACCRE
 * depot's version-0 STATUS ends in a newline, not a NUL, and keeps the connection open. */
static void test_pinned(void)
{
    char cap[IBP_MAX_CAP];
    step_t steps[] = {
        {"1 9 IBP-12345 22 40 3 ", 0, NULL, 0, NULL, 1, 0},
        {"0 4 1 ", 0, "8192 0 8192 0 2592000 \n", 0, NULL, 0, 0},
    };
    peer_t p;
    CU_ASSERT_FATAL(peer_start(&p, steps, 2) == 0);
    ibp_client_t *c = client(-1);
    ibp_probe_t pr;
    ibp_depot_status_t st;

    CU_ASSERT_EQUAL(ibp_version_pin("127.0.0.1", p.port, 1), IBP_OK);
    snprintf(cap, sizeof cap, "ibp://127.0.0.1:%d/IBP-12345/22/MANAGE", p.port);
    CU_ASSERT_EQUAL(ibp_probe(c, cap, &pr), IBP_E_SOCK_READ);
    CU_ASSERT_EQUAL(ibp_version_pin("127.0.0.1", p.port, 0), IBP_OK);
    CU_ASSERT_EQUAL(ibp_status(c, "127.0.0.1", p.port, NULL, NULL, &st), IBP_OK);
    CU_ASSERT_EQUAL(st.hard_total, 8192ULL << 20);
    CU_ASSERT_EQUAL(st.max_duration_s, 2592000);
    CU_ASSERT_EQUAL(ibp_version_pin("127.0.0.1", p.port, -1), IBP_OK);
    CU_ASSERT_EQUAL(ibp_version_pin("127.0.0.1", p.port, 2), IBP_E_INVALID_PARAMETER);
    CU_ASSERT_EQUAL(ibp_version_pin("127.0.0.1", 0, 1), IBP_E_INV_PAR_PORT);
    ibp_client_free(c);
    CU_ASSERT_EQUAL(peer_finish(&p), 0);
}

/* Replies that are not IBP at all must give BAD_FORMAT, not a crash or a hang. */
static void test_garbage_replies(void)
{
    step_t steps[] = {
        {"1 1 ", 0, "HTTP/1.1 400 Bad Request\r\n\r\n", 0, NULL, 1, 0},
        {"1 1 ", 0, "1 onlyonecap\n", 0, NULL, 1, 0},
        {"1 1 ", 0, "", 0, NULL, 1, 0}, /* EOF without a reply */
    };
    peer_t p;
    CU_ASSERT_FATAL(peer_start(&p, steps, 3) == 0);
    ibp_client_t *c = client(1);
    ibp_attr_t a = {.size = 10, .duration_s = 60, .reliability = IBP_HARD, .type = IBP_BYTEARRAY};
    ibp_caps_t caps;
    int rc1 = ibp_allocate(c, "127.0.0.1", p.port, NULL, &a, &caps);
    int rc2 = ibp_allocate(c, "127.0.0.1", p.port, NULL, &a, &caps);
    int rc3 = ibp_allocate(c, "127.0.0.1", p.port, NULL, &a, &caps);
    CU_ASSERT_EQUAL(rc1, IBP_E_BAD_FORMAT);
    CU_ASSERT_EQUAL(rc2, IBP_E_BAD_FORMAT);
    CU_ASSERT(rc3 != IBP_OK);
    ibp_client_free(c);
    peer_finish(&p);
}

static const lns_test_case tests[] = {
    {"LoCI 1.3.1 depot (version 0)", test_loci_v0},
    {"ACCRE 1.4 depot (version 1)", test_accre_v1},
    {"version detection: LoCI 1.3.1 drops version 1", test_detect_v0},
    {"pinned versions, ACCRE's version-0 STATUS", test_pinned},
    {"garbage replies", test_garbage_replies},
};

LNS_TEST_MAIN("interop replay", tests)
