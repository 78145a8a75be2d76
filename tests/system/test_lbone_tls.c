/* test_lbone_tls.c -- the L-Bone's sealed wire (issue 37) with real lbone_server and
 * ibp_depot processes: the pinned HTTPS URL, the default server's HTTPS seen from a capture
 * of its port (no registry token, depot secret or Authorization header in the clear, a wrong
 * pin refused), and liblbone's refusal to send a token or secret over http:// to another
 * host, before any connection and never through a proxy.
 *
 * Every packet stays on the loopback: the refused names are either never contacted by
 * construction (lbone_secret_ok alone) or would only reach a loopback L-Bone under capture.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lbone.h"
#include "lns_test.h"
#include "test_capture.h"
#include "test_depot.h"
#include "test_lbone.h"

#define MIB (1 << 20)

static char out[1 << 16], err[1 << 14];

/* sh -c with $B = bin dir, $D = tmpdir; stdout and stderr land in out[] and err[].  Returns
 * the exit code, or -1. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int sh(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = lns_test_vsh("U=", fmt, ap); /* no shared L-Bone here */
    va_end(ap);
    lns_test_slurp(lns_test_path("run.out"), out, sizeof out);
    lns_test_slurp(lns_test_path("run.err"), err, sizeof err);
    return rc;
}

static int suite_init(void)
{
    setenv("HOME", lns_test_tmpdir(), 1);
    unsetenv("LNS_RC");
    /* Everything here is on 127.0.0.1: a proxy from the environment would only be in the way
     * (test_no_cleartext_secret sets one on purpose). */
    static const char *proxies[] = {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY",
                                    "all_proxy", "ALL_PROXY"};
    for (size_t i = 0; i < sizeof proxies / sizeof proxies[0]; i++)
        unsetenv(proxies[i]);
    return 0;
}

/* The L-Bone over HTTPS, pinned (issue 37): lbone_server --tls-key logs its pin; a depot
 * registers through https://HOST:PORT#PIN with the registry token never in the clear (a
 * capture of the L-Bone's port); lbone_query with the pin lists it; another pin, no pin
 * (a self-signed key) and plain HTTP are refused, each in one line. */
static void test_https_pinned(void)
{
    test_lbone_t l2;
    test_depot_t d;
    char key[PATH_MAX + 16], args[3 * PATH_MAX], url[256], log[1 << 14];
    snprintf(key, sizeof key, "%s/lb2.key", lns_test_tmpdir());
    snprintf(args, sizeof args, "--probe-interval 0 --tls-key %s", key);
    CU_ASSERT_EQUAL_FATAL(tlb_start(&l2, args), 0);
    const char *pin = NULL;
    for (int i = 0; i < 200 && !pin; i++) { /* the line follows the port file */
        lns_test_slurp(l2.log, log, sizeof log);
        pin = strstr(log, "HTTPS, pin sha256:");
        if (!pin)
            lns_test_sleep_ms(10);
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(pin);
    snprintf(url, sizeof url, "https://127.0.0.1:%d#%.71s", l2.port, pin + 11);
    tc_capture_t cap;
    int can = tc_start(&cap, &l2.port, 1, 1 << 20) == 0;
    snprintf(args, sizeof args, "--lbone %s --lbone-token-file %s --lbone-place zip=37996",
             url, l2.token_file);
    CU_ASSERT_EQUAL_FATAL(td_start(&d, args), 0);
    int listed = 0;
    for (int i = 0; i < 500 && !listed; i++) {
        listed = sh("\"$B/lbone_query\" -H '%s' | grep -q ':%d '", url, d.port) == 0;
        if (!listed)
            lns_test_sleep_ms(20);
    }
    CU_ASSERT(listed);
    if (can) {
        tc_end(&cap);
        CU_ASSERT(cap.len > 0);
        CU_ASSERT(!tc_seen(&cap, l2.token, strlen(l2.token))); /* sealed */
        CU_ASSERT(!tc_seen(&cap, "Authorization", 13));
        tc_free(&cap);
    }
    /* another pin: refused before a byte of the request */
    CU_ASSERT(sh("\"$B/lbone_query\" -H 'https://127.0.0.1:%d#sha256:"
                 "1111111111111111111111111111111111111111111111111111111111111111'",
                 l2.port) != 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "does not match pinned"));
    CU_ASSERT(sh("\"$B/lbone_query\" -H 'https://127.0.0.1:%d'", l2.port) != 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "self-signed"));
    CU_ASSERT(sh("\"$B/lbone_query\" -H 'http://127.0.0.1:%d'", l2.port) != 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "an L-Bone speaks HTTPS unless run --plain-http"));
    CU_ASSERT(sh("\"$B/lbone_query\" -H 'http://127.0.0.1:%d#%.71s'", l2.port, pin + 11) == 2 ||
              strstr(err, "a pin is https://"));
    lns_test_server_stop(&d.srv);
    lns_test_server_finish(&l2.srv);
}

/* The default L-Bone (no TLS option: HTTPS with its own key) with a capture of its port: a
 * depot registers and heartbeats through the pinned URL, a client queries, and a client
 * with another pin tries to register: neither the registry token, nor an Authorization
 * header, nor a depot's secret ever crosses in the clear, and the wrong pin is refused in
 * one line.  The same capture on a --plain-http L-Bone sees the token: it can fail. */
static void test_default_sealed(void)
{
    test_lbone_t l2, lp;
    test_depot_t d;
    tc_capture_t cap;
    char args[3 * PATH_MAX], e[1024], wrong[256];
    lbone_announce_t a;
    lbone_session_t s;

    CU_ASSERT_EQUAL_FATAL(tlb_start(&l2, "--probe-interval 0"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(l2.url, "https://127.0.0.1:"));
    if (tc_start(&cap, &l2.port, 1, 1 << 20) != 0) {
        fprintf(stderr, "\n  SKIP: no capture here (CAP_NET_RAW): %s\n", strerror(errno));
        lns_test_server_finish(&l2.srv);
        return;
    }
    snprintf(args, sizeof args, "--lbone %s --lbone-token-file %s --lbone-place zip=37996 "
             "--lbone-interval 1", l2.url, l2.token_file);
    CU_ASSERT_EQUAL_FATAL(td_start(&d, args), 0);
    int listed = 0;
    for (int i = 0; i < 500 && !listed; i++) {
        listed = sh("\"$B/lbone_query\" -H '%s' | grep -q ':%d '", l2.url, d.port) == 0;
        if (!listed)
            lns_test_sleep_ms(20);
    }
    CU_ASSERT(listed);
    lns_test_sleep_ms(1500); /* a heartbeat or two with the depot's secret */
    lbone_announce_init(&a);
    a.host = "wrongpin.test";
    a.port = 6714;
    a.rid = "0";
    a.hard_total = a.hard_free = a.soft_total = a.soft_free = MIB;
    a.max_duration = 3600;
    snprintf(wrong, sizeof wrong, "https://127.0.0.1:%d#sha256:%064d", l2.port, 0);
    CU_ASSERT_EQUAL(lbone_register(wrong, l2.token, &a, &s, e, sizeof e), LBONE_E_CONNECT);
    CU_ASSERT_PTR_NOT_NULL(strstr(e, "does not match pinned"));
    CU_ASSERT_PTR_NULL(strchr(e, '\n'));
    lns_test_server_stop(&d.srv); /* the withdrawal too, with the secret */
    lns_test_sleep_ms(300);
    tc_end(&cap);
    CU_ASSERT(cap.len > 0);
    CU_ASSERT(!tc_seen(&cap, l2.token, strlen(l2.token)));
    CU_ASSERT(!tc_seen(&cap, "Authorization", 13));
    CU_ASSERT(!tc_seen(&cap, "Bearer", 6));
    CU_ASSERT(!tc_seen(&cap, "\"secret\"", 8));
    CU_ASSERT(!tc_seen(&cap, "/v1/depots", 10));
    tc_free(&cap);
    lns_test_server_finish(&l2.srv);

    /* the same capture, plain HTTP on loopback (allowed): the token is there to see */
    CU_ASSERT_EQUAL_FATAL(tlb_start(&lp, "--plain-http --probe-interval 0"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(lp.url, "http://127.0.0.1:"));
    CU_ASSERT_EQUAL_FATAL(tc_start(&cap, &lp.port, 1, 1 << 20), 0);
    int rc = lbone_register(lp.url, lp.token, &a, &s, e, sizeof e);
    if (rc != LBONE_OK)
        fprintf(stderr, "\n  register over plain HTTP: %s\n", e);
    CU_ASSERT_EQUAL(rc, LBONE_OK);
    lns_test_sleep_ms(300);
    tc_end(&cap);
    CU_ASSERT(tc_seen(&cap, lp.token, strlen(lp.token)));
    tc_free(&cap);
    lns_test_server_finish(&lp.srv);
}

/* liblbone sends no token or secret over http:// to another host: refused from the name,
 * before any connection, in one line that says what to use.  The refused name used with a
 * server is "127.1", which the check does not count as loopback (not a dotted quad) but
 * libcurl would connect to as 127.0.0.1: had the check let it through, the request would have
 * reached the --plain-http L-Bone under capture, never a host off the loopback. */
static void test_no_cleartext_secret(void)
{
    test_lbone_t lp;
    tc_capture_t cap;
    char e[1024], url[128];
    lbone_announce_t a;
    lbone_session_t s;
    static const char *const refused[] = {"http://lbone.example.org:6767", "lbone.example.org",
                                          "10.1.2.3:6767", "http://[2001:db8::1]:6767",
                                          "http://127.1:6767"};
    static const char *const allowed[] = {"https://lbone.example.org:6767",
                                          "https://lbone.example.org:1#sha256:"
                                          "00000000000000000000000000000000"
                                          "00000000000000000000000000000000",
                                          "http://127.0.0.1:1", "127.0.0.2:6767", "http://[::1]:1",
                                          "http://localhost:1", "localhost"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        e[0] = 0;
        CU_ASSERT_EQUAL(lbone_secret_ok(refused[i], e, sizeof e), LBONE_E_ARG);
        CU_ASSERT_PTR_NOT_NULL(strstr(e, "no token or secret in cleartext"));
        CU_ASSERT_PTR_NOT_NULL(strstr(e, "https://HOST:PORT#sha256:"));
        CU_ASSERT_PTR_NULL(strchr(e, '\n'));
    }
    for (size_t i = 0; i < sizeof allowed / sizeof *allowed; i++)
        CU_ASSERT_EQUAL(lbone_secret_ok(allowed[i], e, sizeof e), LBONE_OK);

    CU_ASSERT_EQUAL_FATAL(tlb_start(&lp, "--plain-http --probe-interval 0"), 0);
    int can = tc_start(&cap, &lp.port, 1, 1 << 20) == 0;
    snprintf(url, sizeof url, "http://127.1:%d", lp.port);
    lbone_announce_init(&a);
    a.host = "cleartext.test";
    a.port = 6714;
    a.rid = "0";
    CU_ASSERT_EQUAL(lbone_register(url, lp.token, &a, &s, e, sizeof e), LBONE_E_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(e, "no token or secret in cleartext"));
    snprintf(s.id, sizeof s.id, "0123456789abcdef");
    snprintf(s.secret, sizeof s.secret, "not-a-real-secret-0123456789");
    CU_ASSERT_EQUAL(lbone_heartbeat(url, &s, &a, e, sizeof e), LBONE_E_ARG);
    CU_ASSERT_EQUAL(lbone_unregister(url, &s, e, sizeof e), LBONE_E_ARG);
    /* a depot given such an L-Bone stops at start, in one line */
    CU_ASSERT_EQUAL(sh("\"$B/ibp_depot\" --check-config --resource \"$D/cfg\" --lbone '%s' "
                       "--lbone-token-file '%s'", url, lp.token_file), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "no token or secret in cleartext"));
    if (can) {
        /* none of it went: no token, no secret, no registration's path.  (Not "no byte to
         * the port": beside another make test, a client of a server that had the port
         * before may still knock on it.) */
        tc_end(&cap);
        CU_ASSERT(!tc_seen(&cap, lp.token, strlen(lp.token)));
        CU_ASSERT(!tc_seen(&cap, s.secret, strlen(s.secret)));
        CU_ASSERT(!tc_seen(&cap, "/v1/depots", 10));
        CU_ASSERT(!tc_seen(&cap, "cleartext.test", 14));
        if (cap.len)
            fprintf(stderr, "  %zu bytes to or from port %d, none of them ours\n", cap.len,
                    lp.port);
        tc_free(&cap);
    }
    /* queries carry no secret: they go over http:// to it */
    CU_ASSERT_EQUAL(sh("\"$B/lbone_query\" -H '%s'", url), 0);
    /* over http:// to this host a token goes, but never through a proxy (which would read
     * it): with http_proxy pointing nowhere the registration still reaches the L-Bone,
     * while a query, which has nothing to hide, takes the proxy and finds no answer */
    char proxy[64];
    snprintf(proxy, sizeof proxy, "http://127.0.0.1:%d", raw_dead_port());
    setenv("http_proxy", proxy, 1);
    lbone_request_t req;
    lbone_result_t r;
    const char *servers[] = {lp.url};
    lbone_request_init(&req);
    CU_ASSERT_EQUAL(lbone_query_depots(servers, 1, &req, &r, e, sizeof e), LBONE_E_CONNECT);
    lbone_result_free(&r);
    a.hard_total = a.hard_free = a.soft_total = a.soft_free = MIB;
    a.max_duration = 3600;
    int rc = lbone_register(lp.url, lp.token, &a, &s, e, sizeof e);
    if (rc != LBONE_OK)
        fprintf(stderr, "\n  register with http_proxy set: %s\n", e);
    CU_ASSERT_EQUAL(rc, LBONE_OK);
    unsetenv("http_proxy");
    lns_test_server_finish(&lp.srv);
}

static const lns_test_case tests[] = {
    {"the L-Bone over HTTPS, pinned: the token sealed; other pins refused", test_https_pinned},
    {"the default L-Bone: HTTPS, no token, secret or header in the capture", test_default_sealed},
    {"no token or secret over http:// to another host, refused before connecting",
     test_no_cleartext_secret},
};

LNS_TEST_MAIN_WITH("lbone tls", suite_init, NULL, tests)
