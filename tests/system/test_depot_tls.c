/* test_depot_tls.c -- the sealed wire between libibp and real ibp_depot processes (issue 37).
 *
 * - A capture of the loopback (an AF_PACKET socket the test opens itself, filtered to the
 *   depot's port) during allocate, store, load and status with the depot's pin set, and
 *   with none (the default client learns it from STATUS): no key of the capabilities and no
 *   64-byte window of the data cross in the clear.  The same steps with IBP_TLS_OFF do show
 *   them, so the capture can see.
 * - A man in the middle (a relay on loopback with its own key): refused with both pins
 *   named, no byte of a request reaching it.  A relay that drops TLS (it answers the
 *   ClientHello in plaintext, or closes): refused, and no plaintext request ever follows.
 * - A depot's copy (SEND) to the target is sealed to the pin its client named: a wrong pin
 *   or a relay with its own key at the target's address gets it refused, nothing written.
 * - --plaintext refuse: an old client's request gets -12 and a log line; the default client
 *   takes the pin from the handshake, pinned clients are served.  --tls no: a pinned client is refused rather than sent in plaintext.
 * - The key: mode 0600 on first start, a depot whose key is open to others does not start
 *   (one line), and a lost key means a new pin that clients holding the old one refuse.
 * Without CAP_NET_RAW the capture part says SKIP and the rest runs.
 */
#include <CUnit/CUnit.h>
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ibp.h"
#include "lns_net.h"
#include "lns_test.h"
#include "lns_time.h"
#include "lns_tls.h"
#include "test_capture.h"
#include "test_depot.h"

#define DATA_LEN (1u << 20)

static test_depot_t D;
static char pin[LNS_PIN_LEN];
static unsigned char data[DATA_LEN];

static int suite_init(void)
{
    lns_test_fill(data, sizeof data, 37);
    if (td_start(&D, NULL) < 0 || td_pin(&D, pin) < 0)
        return -1;
    return 0;
}

static int suite_clean(void)
{
    ibp_tls_pin("127.0.0.1", D.port, NULL);
    lns_test_server_stop(&D.srv);
    return 0;
}

/* allocate, store the data, load it back, status: IBP_OK at each step, the caps in *caps. */
static void round_trip(ibp_client_t *c, int port, ibp_caps_t *caps)
{
    ibp_attr_t a = {.size = DATA_LEN, .duration_s = 600, .reliability = IBP_HARD,
                    .type = IBP_BYTEARRAY};
    static unsigned char back[DATA_LEN];
    uint64_t stored = 0;
    ibp_depot_status_t st;
    CU_ASSERT_EQUAL_FATAL(ibp_allocate(c, "127.0.0.1", port, NULL, &a, caps), IBP_OK);
    CU_ASSERT_EQUAL(ibp_store(c, caps->write, data, DATA_LEN, &stored), IBP_OK);
    CU_ASSERT_EQUAL(stored, DATA_LEN);
    memset(back, 0, sizeof back);
    CU_ASSERT_EQUAL(ibp_load(c, caps->read, 0, DATA_LEN, back), IBP_OK);
    CU_ASSERT(memcmp(back, data, DATA_LEN) == 0);
    CU_ASSERT_EQUAL(ibp_status(c, "127.0.0.1", port, NULL, NULL, &st), IBP_OK);
}

/* One round trip under a capture of the depot's port: 1 if the capture could run.  With
 * seen: whether a capability key and a window of the data were seen in the clear. */
static int captured_round(ibp_client_t *c, int *key_seen, int *data_seen, long first[2])
{
    tc_capture_t cap;
    ibp_caps_t caps;
    char key[3][IBP_MAX_CAP];
    int can = tc_start(&cap, &D.port, 1, 16 * DATA_LEN) == 0;
    round_trip(c, D.port, &caps);
    if (!can)
        return 0;
    tc_end(&cap);
    tc_cap_key(caps.read, key[0], sizeof key[0]);
    tc_cap_key(caps.write, key[1], sizeof key[1]);
    tc_cap_key(caps.manage, key[2], sizeof key[2]);
    CU_ASSERT(cap.len > DATA_LEN); /* the traffic was seen */
    *key_seen = 0;
    for (int k = 0; k < 3; k++) {
        CU_ASSERT(strlen(key[k]) >= 16);
        *key_seen += tc_seen(&cap, key[k], strlen(key[k]));
    }
    *data_seen = 0;
    for (size_t off = 0; off + 64 <= DATA_LEN; off += 4096)
        *data_seen += tc_seen(&cap, data + off, 64);
    first[0] = cap.first_bytes[0];
    first[1] = cap.first_bytes[1];
    tc_free(&cap);
    return 1;
}

static void test_capture(void)
{
    int keys = -1, windows = -1;
    long first[2];
    ibp_client_opts_t o;
    char learned[IBP_PIN_LEN] = "";

    /* the pin set by the program (as from an exNode) */
    CU_ASSERT_EQUAL(ibp_tls_pin("127.0.0.1", D.port, pin), IBP_OK);
    ibp_client_t *c = ibp_client_new(NULL);
    if (!captured_round(c, &keys, &windows, first)) {
        printf("\ntest_depot_tls: SKIP the capture (no AF_PACKET socket: %s); the round "
               "trips run\n", strerror(errno));
    } else {
        CU_ASSERT_EQUAL(keys, 0);
        CU_ASSERT_EQUAL(windows, 0);
        CU_ASSERT(first[0] > 0);
    }
    ibp_client_free(c);

    /* no pin known: the default client learns it from the depot's STATUS and seals */
    CU_ASSERT_EQUAL(ibp_tls_pin("127.0.0.1", D.port, NULL), IBP_OK);
    c = ibp_client_new(NULL);
    if (captured_round(c, &keys, &windows, first)) {
        CU_ASSERT_EQUAL(keys, 0);
        CU_ASSERT_EQUAL(windows, 0);
    }
    CU_ASSERT(ibp_tls_pin_get("127.0.0.1", D.port, learned, sizeof learned));
    CU_ASSERT_STRING_EQUAL(learned, pin);
    ibp_depot_status_t st;
    CU_ASSERT_EQUAL(ibp_status(c, "127.0.0.1", D.port, NULL, NULL, &st), IBP_OK);
    CU_ASSERT_STRING_EQUAL(st.pin, pin); /* STATUS shows it */
    ibp_client_free(c);

    /* the control: plaintext (--tls off) -- the capture sees the keys and the data, so it
     * could have seen them above */
    ibp_client_opts_init(&o);
    o.tls = IBP_TLS_OFF;
    c = ibp_client_new(&o);
    if (captured_round(c, &keys, &windows, first)) {
        CU_ASSERT_EQUAL(keys, 3);
        CU_ASSERT(windows > 200);
        CU_ASSERT(first[1] > 0);
    }
    ibp_client_free(c);
}

/* ---- relays in the middle --------------------------------------------------------------- */

enum { RELAY_MITM, RELAY_ANSWER_PLAIN, RELAY_CLOSE };

typedef struct relay {
    int lfd, port, mode;
    pthread_t th;
    atomic_int stop;
    lns_tls_ctx_t *ctx; /* RELAY_MITM: its own key */
    long conns, tls_conns, plain_conns, app_bytes;
} relay_t;

static void *relay_main(void *arg)
{
    relay_t *r = arg;
    while (!atomic_load(&r->stop)) {
        if (lns_wait(r->lfd, POLLIN, 50, INT64_MAX) < 0)
            continue;
        int fd = accept4(r->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        r->conns++;
        unsigned char b = 0;
        if (lns_wait(fd, POLLIN, 5000, INT64_MAX) == 0 && recv(fd, &b, 1, MSG_PEEK) == 1)
            r->tls_conns += b == 0x16, r->plain_conns += b != 0x16;
        if (b != 0x16 || r->mode == RELAY_CLOSE) {
            close(fd);
            continue;
        }
        if (r->mode == RELAY_ANSWER_PLAIN) {
            char junk[4096];
            ssize_t n = recv(fd, junk, sizeof junk, 0); /* the ClientHello */
            (void)n;
            n = send(fd, "-21 \n", 5, MSG_NOSIGNAL);
            usleep(100000);
            close(fd);
            continue;
        }
        char err[512];
        if (lns_tls_accept(r->ctx, fd, 5000, lns_deadline_ms(5000), err, sizeof err) == 0)
            r->app_bytes += lns_test_drain(fd, 2000);
        lns_sock_close(fd);
    }
    return NULL;
}

static int relay_start(relay_t *r, int mode)
{
    char err[512];
    memset(r, 0, sizeof *r);
    r->mode = mode;
    if (mode == RELAY_MITM) {
        lns_tls_id_t *id = lns_tls_id_load(lns_test_path("mitm.key"), NULL, 1, err, sizeof err);
        r->ctx = id ? lns_tls_server_new(id, err, sizeof err) : NULL;
        lns_tls_id_free(id);
        if (!r->ctx)
            return -1;
    }
    r->lfd = lns_listen("127.0.0.1", 0, 16, &r->port, NULL, 0);
    return r->lfd >= 0 && pthread_create(&r->th, NULL, relay_main, r) == 0 ? 0 : -1;
}

static void relay_end(relay_t *r)
{
    atomic_store(&r->stop, 1);
    pthread_join(r->th, NULL);
    close(r->lfd);
    lns_tls_ctx_free(r->ctx);
}

/* A read capability of ours with the relay's port instead of the depot's: where an attacker
 * who took over the depot's address would have it land. */
static void cap_at(const char *cap, int from, int to, char *out, size_t size)
{
    char f[32];
    snprintf(f, sizeof f, ":%d/", from);
    const char *p = strstr(cap, f);
    snprintf(out, size, "%.*s:%d/%s", p ? (int)(p - cap) : 0, cap, to, p ? p + strlen(f) : cap);
}

static void test_middle(void)
{
    ibp_caps_t caps;
    char rcap[IBP_MAX_CAP];
    unsigned char buf[1024];
    CU_ASSERT_EQUAL(ibp_tls_pin("127.0.0.1", D.port, pin), IBP_OK);
    ibp_client_t *c = ibp_client_new(NULL);
    round_trip(c, D.port, &caps);

    /* a relay with its own key, where the pinned depot should be */
    relay_t r;
    CU_ASSERT_FATAL(relay_start(&r, RELAY_MITM) == 0);
    CU_ASSERT_EQUAL(ibp_tls_pin("127.0.0.1", r.port, pin), IBP_OK);
    cap_at(caps.read, D.port, r.port, rcap, sizeof rcap);
    CU_ASSERT_EQUAL(ibp_load(c, rcap, 0, sizeof buf, buf), IBP_E_TLS_PIN);
    CU_ASSERT_PTR_NOT_NULL(strstr(ibp_tls_error(), pin));
    CU_ASSERT_PTR_NOT_NULL(strstr(ibp_tls_error(), "is not the depot it should be"));
    relay_end(&r);
    CU_ASSERT_EQUAL(r.tls_conns, 1);
    CU_ASSERT_EQUAL(r.app_bytes, 0); /* not a byte of the request, let alone the capability */

    /* relays that take TLS away: an error, never the request in plaintext */
    for (int mode = RELAY_ANSWER_PLAIN; mode <= RELAY_CLOSE; mode++) {
        CU_ASSERT_FATAL(relay_start(&r, mode) == 0);
        CU_ASSERT_EQUAL(ibp_tls_pin("127.0.0.1", r.port, pin), IBP_OK);
        cap_at(caps.read, D.port, r.port, rcap, sizeof rcap);
        int rc = ibp_load(c, rcap, 0, sizeof buf, buf);
        CU_ASSERT(rc == IBP_E_TLS);
        relay_end(&r);
        CU_ASSERT(r.conns >= 1);
        CU_ASSERT_EQUAL(r.plain_conns, 0);
        ibp_tls_pin("127.0.0.1", r.port, NULL);
    }
    ibp_client_free(c);
}

/* ---- a depot's copy (SEND) ------------------------------------------------------------- */

/* The size the target allocation at mcap holds now. */
static uint64_t held(ibp_client_t *c, const char *mcap)
{
    ibp_probe_t pr = {0};
    CU_ASSERT_EQUAL(ibp_probe(c, mcap, &pr), IBP_OK);
    return pr.cur_size;
}

/* A SEND names the pin its client knows for the target, and the source depot seals its
 * copy to that key and no other: the copy crosses sealed; a pin that is not the target's, or
 * a relay with its own key at the target's address, gets the copy refused with nothing
 * written or sent. */
static void test_send_pin(void)
{
    test_depot_t d;
    char p2[LNS_PIN_LEN], log[1 << 16], wcap[IBP_MAX_CAP];
    ibp_caps_t src, dst;
    uint64_t n = 0;
    CU_ASSERT_EQUAL_FATAL(td_start(&d, NULL), 0);
    CU_ASSERT_EQUAL_FATAL(td_pin(&d, p2), 0);
    CU_ASSERT_EQUAL(ibp_tls_pin("127.0.0.1", D.port, pin), IBP_OK);
    CU_ASSERT_EQUAL(ibp_tls_pin("127.0.0.1", d.port, p2), IBP_OK);
    ibp_client_t *c = ibp_client_new(NULL);
    round_trip(c, D.port, &src);
    ibp_attr_t a = {.size = 3 * DATA_LEN, .duration_s = 600, .reliability = IBP_HARD,
                    .type = IBP_BYTEARRAY};
    CU_ASSERT_EQUAL_FATAL(ibp_allocate(c, "127.0.0.1", d.port, NULL, &a, &dst), IBP_OK);

    /* the right pin: copied, and sealed on the way (the capture sees neither the target's
     * write key nor the data) */
    tc_capture_t cap;
    int ports[2] = {D.port, d.port};
    char key[IBP_MAX_CAP];
    int can = tc_start(&cap, ports, 2, 16 * DATA_LEN) == 0;
    CU_ASSERT_EQUAL(ibp_send(c, src.read, dst.write, 0, DATA_LEN, &n), IBP_OK);
    CU_ASSERT_EQUAL(n, DATA_LEN);
    if (can) {
        tc_end(&cap);
        tc_cap_key(dst.write, key, sizeof key);
        CU_ASSERT(cap.len > DATA_LEN);
        CU_ASSERT_EQUAL(tc_seen(&cap, key, strlen(key)), 0);
        int windows = 0;
        for (size_t off = 0; off + 64 <= DATA_LEN; off += 4096)
            windows += tc_seen(&cap, data + off, 64);
        CU_ASSERT_EQUAL(windows, 0);
        tc_free(&cap);
    }
    CU_ASSERT_EQUAL(held(c, dst.manage), DATA_LEN);

    /* the client knows another pin for the target (it is not the depot it should be): the
     * source refuses the copy, although its own pooled connection to the target is sealed
     * to the key it met there */
    CU_ASSERT_EQUAL(ibp_tls_pin("127.0.0.1", d.port, pin), IBP_OK);
    CU_ASSERT_EQUAL(ibp_send(c, src.read, dst.write, 0, DATA_LEN, &n), IBP_E_TLS_PIN);
    CU_ASSERT_EQUAL(ibp_tls_pin("127.0.0.1", d.port, p2), IBP_OK);
    CU_ASSERT_EQUAL(held(c, dst.manage), DATA_LEN);

    /* a relay with its own key at the target's address: refused, not a byte reaches it */
    relay_t r;
    CU_ASSERT_FATAL(relay_start(&r, RELAY_MITM) == 0);
    CU_ASSERT_EQUAL(ibp_tls_pin("127.0.0.1", r.port, p2), IBP_OK);
    cap_at(dst.write, d.port, r.port, wcap, sizeof wcap);
    CU_ASSERT_EQUAL(ibp_send(c, src.read, wcap, 0, DATA_LEN, &n), IBP_E_TLS_PIN);
    relay_end(&r);
    CU_ASSERT_EQUAL(r.app_bytes, 0);
    ibp_tls_pin("127.0.0.1", r.port, NULL);

    /* what one client named changed nothing for the next: the right pin copies again */
    CU_ASSERT_EQUAL(ibp_send(c, src.read, dst.write, 0, DATA_LEN, &n), IBP_OK);
    CU_ASSERT_EQUAL(held(c, dst.manage), 2 * DATA_LEN);
    ibp_client_free(c);
    ibp_tls_pin("127.0.0.1", d.port, NULL);
    lns_test_server_finish(&d.srv);
    lns_test_slurp(D.log, log, sizeof log);
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "a copy's target refused"));
    CU_ASSERT_PTR_NOT_NULL(strstr(log, p2));
}

/* ---- depot settings -------------------------------------------------------------------- */

/* STATUS of the depot on port by a client of its own with TLS mode tls (IBP_TLS_OFF, ...). */
static int status_with(int tls, int port)
{
    ibp_client_opts_t o;
    ibp_depot_status_t st;
    ibp_client_opts_init(&o);
    o.tls = tls;
    ibp_client_t *c = ibp_client_new(&o);
    int rc = ibp_status(c, "127.0.0.1", port, NULL, NULL, &st);
    ibp_client_free(c);
    return rc;
}

static void test_plaintext_refuse(void)
{
    test_depot_t d;
    char p2[LNS_PIN_LEN], reply[256] = "", log[1 << 16];
    ibp_caps_t caps;
    CU_ASSERT_EQUAL_FATAL(td_start(&d, "--plaintext refuse"), 0);
    CU_ASSERT_EQUAL_FATAL(td_pin(&d, p2), 0);
    /* an old client: one line, -12, and the connection closed */
    int fd = td_connect(&d);
    CU_ASSERT_FATAL(fd >= 0);
    const char req[] = "1 4 0 10\n";
    CU_ASSERT(write(fd, req, sizeof req - 1) == (ssize_t)(sizeof req - 1));
    ssize_t n = read(fd, reply, sizeof reply - 1);
    CU_ASSERT(n > 0 && strncmp(reply, "-12", 3) == 0);
    close(fd);
    CU_ASSERT_EQUAL(status_with(IBP_TLS_OFF, d.port), IBP_E_CAP_ACCESS_DENIED);
    /* the default client: refused in plaintext, it takes the pin from the handshake */
    char learned[IBP_PIN_LEN] = "";
    ibp_client_t *c = ibp_client_new(NULL);
    round_trip(c, d.port, &caps);
    CU_ASSERT(ibp_tls_pin_get("127.0.0.1", d.port, learned, sizeof learned));
    CU_ASSERT_STRING_EQUAL(learned, p2);
    ibp_client_free(c);
    /* a client that knows the pin is served */
    CU_ASSERT_EQUAL(ibp_tls_pin("127.0.0.1", d.port, p2), IBP_OK);
    c = ibp_client_new(NULL);
    round_trip(c, d.port, &caps);
    ibp_client_free(c);
    ibp_tls_pin("127.0.0.1", d.port, NULL);
    lns_test_server_finish(&d.srv);
    lns_test_slurp(d.log, log, sizeof log);
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "plain IBP refused (--plaintext refuse)"));
}

static void test_tls_off(void)
{
    test_depot_t d;
    ibp_depot_status_t st;
    CU_ASSERT_EQUAL_FATAL(td_start(&d, "--tls no"), 0);
    ibp_client_t *c = ibp_client_new(NULL);
    CU_ASSERT_EQUAL(ibp_status(c, "127.0.0.1", d.port, NULL, NULL, &st), IBP_OK);
    /* a depot known by its pin is never spoken to in plaintext */
    CU_ASSERT_EQUAL(ibp_tls_pin("127.0.0.1", d.port, pin), IBP_OK);
    CU_ASSERT_EQUAL(ibp_status(c, "127.0.0.1", d.port, NULL, NULL, &st), IBP_E_TLS);
    /* unless the program says so (benchmarks: --tls off) */
    CU_ASSERT_EQUAL(status_with(IBP_TLS_OFF, d.port), IBP_OK);
    /* and IBP_TLS_REQUIRE without a pin: the self-signed key does not verify */
    ibp_tls_pin("127.0.0.1", d.port, NULL);
    ibp_tls_pin("127.0.0.1", D.port, NULL);
    ibp_client_free(c);
    CU_ASSERT_EQUAL(status_with(IBP_TLS_REQUIRE, D.port), IBP_E_TLS);
    CU_ASSERT_PTR_NOT_NULL(strstr(ibp_tls_error(), "does not verify"));
    lns_test_server_finish(&d.srv);
}

static void test_key(void)
{
    test_depot_t d;
    char key[PATH_MAX + 32], p1[LNS_PIN_LEN], p2[LNS_PIN_LEN], log[1 << 16];
    struct stat st;
    ibp_depot_status_t ds;
    CU_ASSERT_EQUAL_FATAL(td_start(&d, NULL), 0);
    CU_ASSERT_EQUAL_FATAL(td_pin(&d, p1), 0);
    snprintf(key, sizeof key, "%s/res0/tls.key", d.dir);
    CU_ASSERT_EQUAL_FATAL(stat(key, &st), 0);
    CU_ASSERT_EQUAL(st.st_mode & 0777, 0600);
    /* restarted: the same pin */
    lns_test_server_kill(&d.srv, SIGTERM);
    CU_ASSERT_EQUAL(truncate(d.log, 0), 0); /* read_pin reads the new start's line */
    CU_ASSERT_EQUAL_FATAL(td_restart(&d), 0);
    CU_ASSERT_EQUAL(td_pin(&d, p2), 0);
    CU_ASSERT_STRING_EQUAL(p1, p2);
    /* a key others can read: the depot does not start, and says why in one line */
    lns_test_server_kill(&d.srv, SIGTERM);
    chmod(key, 0640);
    CU_ASSERT_NOT_EQUAL(td_restart_once(&d), 0);
    lns_test_slurp(d.log, log, sizeof log);
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "the TLS key is open to others (mode 0640)"));
    /* a lost key: a new pin, which a client holding the old one refuses */
    unlink(key);
    CU_ASSERT_EQUAL(truncate(d.log, 0), 0);
    CU_ASSERT_EQUAL_FATAL(td_restart(&d), 0);
    CU_ASSERT_EQUAL(td_pin(&d, p2), 0);
    CU_ASSERT_STRING_NOT_EQUAL(p1, p2);
    CU_ASSERT_EQUAL(ibp_tls_pin("127.0.0.1", d.port, p1), IBP_OK);
    ibp_client_t *c = ibp_client_new(NULL);
    CU_ASSERT_EQUAL(ibp_status(c, "127.0.0.1", d.port, NULL, NULL, &ds), IBP_E_TLS_PIN);
    CU_ASSERT_PTR_NOT_NULL(strstr(ibp_tls_error(), p1));
    CU_ASSERT_PTR_NOT_NULL(strstr(ibp_tls_error(), p2));
    ibp_client_free(c);
    ibp_tls_pin("127.0.0.1", d.port, NULL);
    lns_test_server_finish(&d.srv);
}

void lns_test_register(void)
{
    CU_pSuite s = CU_add_suite("depot TLS", suite_init, suite_clean);
    CU_add_test(s, "a capture sees no key and no data with the pin (and both without)",
                test_capture);
    CU_add_test(s, "men in the middle: another key refused, TLS taken away refused",
                test_middle);
    CU_add_test(s, "SEND: the target's pin from the client; another key refused",
                test_send_pin);
    CU_add_test(s, "--plaintext refuse: an old client gets -12, pinned clients are served",
                test_plaintext_refuse);
    CU_add_test(s, "--tls no: a pinned client refuses plaintext; IBP_TLS_OFF, REQUIRE",
                test_tls_off);
    CU_add_test(s, "the key: 0600, the same pin on restart, open key refused, lost key",
                test_key);
}
