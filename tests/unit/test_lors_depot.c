/* test_lors_depot.c -- liblors depot addresses: "host[:port][/rid][#sha256:PIN]" and lists of
 * them. */
#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>

#include "lors.h"
#include "lns_test.h"

#define PIN "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void test_good(void)
{
    lors_depot_t d;
    char buf[400];

    CU_ASSERT_EQUAL(lors_depot_parse("depot.example.org", &d), LORS_OK);
    CU_ASSERT_STRING_EQUAL(d.host, "depot.example.org");
    CU_ASSERT_EQUAL(d.port, IBP_DEFAULT_PORT);
    CU_ASSERT_STRING_EQUAL(d.rid, "");

    CU_ASSERT_EQUAL(lors_depot_parse("127.0.0.1:7000", &d), LORS_OK);
    CU_ASSERT_STRING_EQUAL(d.host, "127.0.0.1");
    CU_ASSERT_EQUAL(d.port, 7000);

    CU_ASSERT_EQUAL(lors_depot_parse("h-1_x:1/3", &d), LORS_OK);
    CU_ASSERT_STRING_EQUAL(d.host, "h-1_x");
    CU_ASSERT_EQUAL(d.port, 1);
    CU_ASSERT_STRING_EQUAL(d.rid, "3");

    CU_ASSERT_EQUAL(lors_depot_parse("host/res-a", &d), LORS_OK);
    CU_ASSERT_EQUAL(d.port, IBP_DEFAULT_PORT);
    CU_ASSERT_STRING_EQUAL(d.rid, "res-a");

    CU_ASSERT_EQUAL(lors_depot_parse("[::1]:6714", &d), LORS_OK);
    CU_ASSERT_STRING_EQUAL(d.host, "::1");
    CU_ASSERT_EQUAL(d.port, 6714);
    lors_depot_format(&d, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "[::1]:6714");

    CU_ASSERT_EQUAL(lors_depot_parse("[fe80::1:2]/0", &d), LORS_OK);
    CU_ASSERT_STRING_EQUAL(d.host, "fe80::1:2");
    CU_ASSERT_EQUAL(d.port, IBP_DEFAULT_PORT);
    CU_ASSERT_STRING_EQUAL(d.rid, "0");

    CU_ASSERT_EQUAL(lors_depot_parse("a.b:65535/r", &d), LORS_OK);
    lors_depot_format(&d, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "a.b:65535/r");
    CU_ASSERT_STRING_EQUAL(d.pin, "");

    /* a pin, after the resource or straight after the address; the format leaves it out */
    CU_ASSERT_EQUAL(lors_depot_parse("a.b:7/r#" PIN, &d), LORS_OK);
    CU_ASSERT_STRING_EQUAL(d.rid, "r");
    CU_ASSERT_STRING_EQUAL(d.pin, PIN);
    lors_depot_format(&d, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "a.b:7/r");
    CU_ASSERT_EQUAL(lors_depot_parse("[::1]#" PIN, &d), LORS_OK);
    CU_ASSERT_STRING_EQUAL(d.host, "::1");
    CU_ASSERT_EQUAL(d.port, IBP_DEFAULT_PORT);
    CU_ASSERT_STRING_EQUAL(d.pin, PIN);
}

static void test_bad(void)
{
    static const char *bad[] = {
        "", ":6714", "host:", "host:0", "host:65536", "host:99999999999", "host:12a",
        "host:-1", "host/", "host:80/", "host:80/r/s", "ho st", "host:80 ", "::1", "::1:6714",
        "[::1", "[]:80", "[::1]x", "[1.2.3.4]:80", "[::1]:", "host,other", "h\x01", "host#",
        "host:+80", "[::1]:6714/a b", "host#sha256:", "host:80#" PIN "0",
        "host:80#sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
        "host:80#md5:0123456789abcdef0123456789abcdef", "host:80#" PIN "#" PIN,
    };
    lors_depot_t d;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = lors_depot_parse(bad[i], &d);
        if (rc != LORS_E_DEPOT)
            fprintf(stderr, "accepted bad depot \"%s\"\n", bad[i]);
        CU_ASSERT_EQUAL(rc, LORS_E_DEPOT);
    }
    char longhost[IBP_MAX_HOST + 10];
    memset(longhost, 'a', sizeof longhost - 1);
    longhost[sizeof longhost - 1] = '\0';
    CU_ASSERT_EQUAL(lors_depot_parse(longhost, &d), LORS_E_DEPOT);
    CU_ASSERT_EQUAL(lors_depot_parse(NULL, &d), LORS_E_INVAL);
}

static void test_list(void)
{
    lors_depot_t *v = NULL;
    size_t n = 0;
    char err[256];

    CU_ASSERT_EQUAL_FATAL(lors_depot_list_parse(" a:1, b:2/x\tc\n[::1]:3 ,,d ", &v, &n, err,
                                                sizeof err),
                          LORS_OK);
    CU_ASSERT_EQUAL_FATAL(n, 5);
    CU_ASSERT_STRING_EQUAL(v[0].host, "a");
    CU_ASSERT_EQUAL(v[0].port, 1);
    CU_ASSERT_STRING_EQUAL(v[1].rid, "x");
    CU_ASSERT_STRING_EQUAL(v[2].host, "c");
    CU_ASSERT_EQUAL(v[2].port, IBP_DEFAULT_PORT);
    CU_ASSERT_STRING_EQUAL(v[3].host, "::1");
    CU_ASSERT_EQUAL(v[3].port, 3);
    CU_ASSERT_STRING_EQUAL(v[4].host, "d");
    free(v);

    v = NULL;
    CU_ASSERT_EQUAL(lors_depot_list_parse("a:1, b:x, c", &v, &n, err, sizeof err), LORS_E_DEPOT);
    CU_ASSERT_PTR_NULL(v);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "b:x"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "depot 2"));

    /* a pin per entry; one that is not a pin is named as such */
    CU_ASSERT_EQUAL_FATAL(lors_depot_list_parse("a:1#" PIN ", b:2", &v, &n, err, sizeof err),
                          LORS_OK);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    CU_ASSERT_STRING_EQUAL(v[0].pin, PIN);
    CU_ASSERT_STRING_EQUAL(v[1].pin, "");
    free(v);
    v = NULL;
    CU_ASSERT_EQUAL(lors_depot_list_parse("a:1, b:2#sha256:12", &v, &n, err, sizeof err),
                    LORS_E_DEPOT);
    CU_ASSERT_PTR_NULL(v);
    CU_ASSERT_STRING_EQUAL(err, "depot 2: \"b:2#sha256:12\": the pin is not sha256: and 64 "
                                "lowercase hex digits");
    CU_ASSERT_EQUAL(lors_depot_list_parse("b:x#sha256:12", &v, &n, err, sizeof err),
                    LORS_E_DEPOT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "is not host[:port][/rid][#sha256:PIN]"));

    CU_ASSERT_EQUAL(lors_depot_list_parse(" ,\n ", &v, &n, err, sizeof err), LORS_E_NODEPOTS);
    CU_ASSERT_PTR_NULL(v);
    CU_ASSERT_EQUAL(lors_depot_list_parse("", &v, &n, NULL, 0), LORS_E_NODEPOTS);
}

static void test_strerror(void)
{
    for (int e = 0; e >= LORS_E_NOTFOUND; e--) {
        CU_ASSERT_PTR_NOT_NULL(lors_strerror(e));
        CU_ASSERT_STRING_NOT_EQUAL(lors_strerror(e), "unknown liblors error");
    }
    CU_ASSERT_STRING_EQUAL(lors_strerror(-999), "unknown liblors error");
}

static const lns_test_case tests[] = {
    {"good forms", test_good},
    {"bad forms", test_bad},
    {"lists", test_list},
    {"strerror", test_strerror},
};

LNS_TEST_MAIN("lors depot lists", tests)
