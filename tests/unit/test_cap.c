/* test_cap.c -- capabilities (parse, format, wire key) and the error words of libibp.
 *
 * The parser is the gate for strings users paste around, so most of this file is a list
 * of near-misses that must be refused; the rest checks that everything accepted formats
 * back to the very same string. */
#include <stdio.h>
#include <string.h>

#include "ibp.h"
#include "lns_test.h"

#define KEY48 "0123456789abcdef0123456789abcdef0123456789abcdef"

static void test_parse_v14(void)
{
    ibp_cap_t c;
    CU_ASSERT_EQUAL_FATAL(ibp_cap_parse("ibp://depot.example.org:6714/0#" KEY48 "/1234567/READ", &c),
                          IBP_OK);
    CU_ASSERT_STRING_EQUAL(c.host, "depot.example.org");
    CU_ASSERT_EQUAL(c.port, 6714);
    CU_ASSERT_STRING_EQUAL(c.rid, "0");
    CU_ASSERT_STRING_EQUAL(c.key, KEY48);
    CU_ASSERT_STRING_EQUAL(c.typekey, "1234567");
    CU_ASSERT_EQUAL(c.type, IBP_READCAP);

    CU_ASSERT_EQUAL_FATAL(ibp_cap_parse("ibp://10.0.0.1:1/17#k/1/WRITE", &c), IBP_OK);
    CU_ASSERT_EQUAL(c.type, IBP_WRITECAP);
    CU_ASSERT_EQUAL(c.port, 1);
    CU_ASSERT_STRING_EQUAL(c.rid, "17");
    CU_ASSERT_EQUAL_FATAL(ibp_cap_parse("ibp://h:65535/0#k/2/MANAGE", &c), IBP_OK);
    CU_ASSERT_EQUAL(c.type, IBP_MANAGECAP);
    CU_ASSERT_EQUAL(c.port, 65535);
}

static void test_parse_old_form(void)
{
    ibp_cap_t c;
    const char *s = "ibp://127.0.0.2:16715/IBP-155912345678901234567890/701197658/READ";
    CU_ASSERT_EQUAL_FATAL(ibp_cap_parse(s, &c), IBP_OK);
    CU_ASSERT_STRING_EQUAL(c.host, "127.0.0.2");
    CU_ASSERT_EQUAL(c.port, 16715);
    CU_ASSERT_STRING_EQUAL(c.rid, "");
    CU_ASSERT_STRING_EQUAL(c.key, "IBP-155912345678901234567890");
    CU_ASSERT_STRING_EQUAL(c.typekey, "701197658");
    CU_ASSERT_EQUAL(c.type, IBP_READCAP);
}

static void test_parse_ipv6(void)
{
    ibp_cap_t c;
    char buf[IBP_MAX_CAP];
    const char *s = "ibp://[::1]:6714/0#" KEY48 "/99/MANAGE";
    CU_ASSERT_EQUAL_FATAL(ibp_cap_parse(s, &c), IBP_OK);
    CU_ASSERT_STRING_EQUAL(c.host, "::1");
    CU_ASSERT_EQUAL(c.port, 6714);
    CU_ASSERT_EQUAL(ibp_cap_format(&c, buf, sizeof buf), IBP_OK);
    CU_ASSERT_STRING_EQUAL(buf, s);
    CU_ASSERT_EQUAL(ibp_cap_parse("ibp://[2001:db8::7]:1/0#k/1/READ", &c), IBP_OK);
    CU_ASSERT_STRING_EQUAL(c.host, "2001:db8::7");
    CU_ASSERT_EQUAL(ibp_cap_parse("ibp://[fe80::1%eth0]:1/0#k/1/READ", &c), IBP_OK);
    CU_ASSERT_STRING_EQUAL(c.host, "fe80::1%eth0");
    /* broken literals */
    CU_ASSERT_EQUAL(ibp_cap_parse("ibp://[::1:6714/0#k/1/READ", &c), IBP_E_WRONG_CAP_FORMAT);
    CU_ASSERT_EQUAL(ibp_cap_parse("ibp://[::1]/0#k/1/READ", &c), IBP_E_WRONG_CAP_FORMAT);
    CU_ASSERT_EQUAL(ibp_cap_parse("ibp://[::1]6714/0#k/1/READ", &c), IBP_E_WRONG_CAP_FORMAT);
    CU_ASSERT_EQUAL(ibp_cap_parse("ibp://[]:6714/0#k/1/READ", &c), IBP_E_WRONG_CAP_FORMAT);
    CU_ASSERT_EQUAL(ibp_cap_parse("ibp://[abc]:6714/0#k/1/READ", &c), IBP_E_WRONG_CAP_FORMAT);
    CU_ASSERT_EQUAL(ibp_cap_parse("ibp://[::g]:6714/0#k/1/READ", &c), IBP_E_WRONG_CAP_FORMAT);
    CU_ASSERT_EQUAL(ibp_cap_parse("ibp://[::1%]:6714/0#k/1/READ", &c), IBP_E_WRONG_CAP_FORMAT);
    CU_ASSERT_EQUAL(ibp_cap_parse("ibp://::1:6714/0#k/1/READ", &c), IBP_E_WRONG_CAP_FORMAT);
}

static void test_round_trip(void)
{
    static const char *const caps[] = {
        "ibp://depot.example.org:6714/0#" KEY48 "/1234567/READ",
        "ibp://127.0.0.1:7000/3#" KEY48 "/2147483647/WRITE",
        "ibp://h-1.x_y:1/0#k/1/MANAGE",
        "ibp://127.0.0.2:16715/IBP-1559123/701197658/WRITE",
        "ibp://[2001:db8::7]:6714/0#abc/5/READ",
    };
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        ibp_cap_t c, c2;
        char buf[IBP_MAX_CAP];
        CU_ASSERT_EQUAL_FATAL(ibp_cap_parse(caps[i], &c), IBP_OK);
        CU_ASSERT_EQUAL_FATAL(ibp_cap_format(&c, buf, sizeof buf), IBP_OK);
        CU_ASSERT_STRING_EQUAL(buf, caps[i]);
        CU_ASSERT_EQUAL_FATAL(ibp_cap_parse(buf, &c2), IBP_OK);
        CU_ASSERT_EQUAL(memcmp(&c, &c2, sizeof c), 0);
    }
}

static void test_reject(void)
{
    static const char *const bad[] = {
        "",
        "ibp://",
        "ibp:/h:1/0#k/1/READ",          /* scheme */
        "IBP://h:1/0#k/1/READ",
        "http://h:1/0#k/1/READ",
        " ibp://h:1/0#k/1/READ",        /* leading / trailing space */
        "ibp://h:1/0#k/1/READ ",
        "ibp://h:1/0#k/1/READ\n",
        "ibp://h/0#k/1/READ",           /* no port */
        "ibp://h:/0#k/1/READ",
        "ibp://:1/0#k/1/READ",          /* no host */
        "ibp://h:0/0#k/1/READ",         /* port range and form */
        "ibp://h:65536/0#k/1/READ",
        "ibp://h:99999/0#k/1/READ",
        "ibp://h:123456/0#k/1/READ",
        "ibp://h:-1/0#k/1/READ",
        "ibp://h:+1/0#k/1/READ",
        "ibp://h:01/0#k/1/READ",
        "ibp://h:1x/0#k/1/READ",
        "ibp://h:1:2/0#k/1/READ",
        "ibp://h h:1/0#k/1/READ",       /* spaces and odd bytes in the host */
        "ibp://h@x:1/0#k/1/READ",
        "ibp://h:1/0#k/1",              /* missing parts */
        "ibp://h:1/0#k/READ",
        "ibp://h:1/0#k",
        "ibp://h:1",
        "ibp://h:1//1/READ",            /* empty fields */
        "ibp://h:1/0#k//READ",
        "ibp://h:1/#k/1/READ",
        "ibp://h:1/0#/1/READ",
        "ibp://h:1/0#k/1/",
        "ibp://h:1/0#k#j/1/READ",       /* two '#' */
        "ibp://h:1/0#k/1#2/READ",       /* '#' in the type key */
        "ibp://h:1/0#k/1/read",         /* kind */
        "ibp://h:1/0#k/1/READX",
        "ibp://h:1/0#k/1/READ/",        /* trailing junk */
        "ibp://h:1/0#k/1/READ/x",
        "ibp://h:1/0#k/1/READ?x",
        "ibp://h:1/0#k y/1/READ",       /* spaces and control characters */
        "ibp://h:1/0#k\t/1/READ",
        "ibp://h:1/0#k\x01/1/READ",
        "ibp://h:1/0#k\x7f/1/READ",
        "ibp://h:1/0#k\xc3\xa9/1/READ",
        "ibp://h:1/0#k/1 /READ",
    };
    ibp_cap_t c;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = ibp_cap_parse(bad[i], &c);
        if (rc != IBP_E_WRONG_CAP_FORMAT)
            fprintf(stderr, "accepted: '%s'\n", bad[i]);
        CU_ASSERT_EQUAL(rc, IBP_E_WRONG_CAP_FORMAT);
    }
    CU_ASSERT_EQUAL(ibp_cap_parse(NULL, &c), IBP_E_WRONG_CAP_FORMAT);
    CU_ASSERT_EQUAL(ibp_cap_parse("ibp://h:1/0#k/1/READ", NULL), IBP_E_WRONG_CAP_FORMAT);
}

static void test_overlong(void)
{
    char s[2048], part[1024];
    ibp_cap_t c;

    /* key of 255 bytes fits, 256 does not */
    memset(part, 'a', 255);
    part[255] = 0;
    snprintf(s, sizeof s, "ibp://h:1/0#%s/1/READ", part);
    CU_ASSERT_EQUAL(ibp_cap_parse(s, &c), IBP_OK);
    CU_ASSERT_EQUAL(strlen(c.key), 255);
    memset(part, 'a', 256);
    part[256] = 0;
    snprintf(s, sizeof s, "ibp://h:1/0#%s/1/READ", part);
    CU_ASSERT_EQUAL(ibp_cap_parse(s, &c), IBP_E_WRONG_CAP_FORMAT);
    snprintf(s, sizeof s, "ibp://h:1/0#k/%s/READ", part);   /* type key */
    CU_ASSERT_EQUAL(ibp_cap_parse(s, &c), IBP_E_WRONG_CAP_FORMAT);
    snprintf(s, sizeof s, "ibp://%s:1/0#k/1/READ", part);   /* host */
    CU_ASSERT_EQUAL(ibp_cap_parse(s, &c), IBP_E_WRONG_CAP_FORMAT);
    /* rid at most 63 */
    memset(part, '7', 64);
    part[64] = 0;
    snprintf(s, sizeof s, "ibp://h:1/%s#k/1/READ", part);
    CU_ASSERT_EQUAL(ibp_cap_parse(s, &c), IBP_E_WRONG_CAP_FORMAT);
    part[63] = 0;
    snprintf(s, sizeof s, "ibp://h:1/%s#k/1/READ", part);
    CU_ASSERT_EQUAL(ibp_cap_parse(s, &c), IBP_OK);
    /* whole capability at most IBP_MAX_CAP - 1 bytes, each part within its limit */
    char host[221], key[221], tk[221];
    memset(host, 'h', 220);
    host[220] = 0;
    memset(key, 'k', 220);
    key[220] = 0;
    memset(tk, '9', 220);
    tk[220] = 0;
    snprintf(s, sizeof s, "ibp://%s:6714/0#%s/%s/MANAGE", host, key, tk);
    CU_ASSERT(strlen(s) >= IBP_MAX_CAP);
    CU_ASSERT_EQUAL(ibp_cap_parse(s, &c), IBP_E_WRONG_CAP_FORMAT);
}

static void test_format_limits(void)
{
    ibp_cap_t c;
    char buf[IBP_MAX_CAP], small[20];
    CU_ASSERT_EQUAL_FATAL(ibp_cap_parse("ibp://host:6714/0#key/1/READ", &c), IBP_OK);
    CU_ASSERT_EQUAL(ibp_cap_format(&c, small, sizeof small), IBP_E_INVALID_PARAMETER);
    CU_ASSERT_EQUAL(ibp_cap_format(&c, buf, 28), IBP_E_INVALID_PARAMETER); /* one short */
    CU_ASSERT_EQUAL(ibp_cap_format(&c, buf, 29), IBP_OK);
    CU_ASSERT_STRING_EQUAL(buf, "ibp://host:6714/0#key/1/READ");
    c.type = 7;
    CU_ASSERT_EQUAL(ibp_cap_format(&c, buf, sizeof buf), IBP_E_INVALID_PARAMETER);
    c.type = IBP_READCAP;
    c.port = 0;
    CU_ASSERT_EQUAL(ibp_cap_format(&c, buf, sizeof buf), IBP_E_INVALID_PARAMETER);
}

static void test_wire_key(void)
{
    ibp_cap_t c;
    char buf[IBP_MAX_KEY + IBP_MAX_RID + 2];
    CU_ASSERT_EQUAL_FATAL(ibp_cap_parse("ibp://h:1/12#" KEY48 "/5/WRITE", &c), IBP_OK);
    CU_ASSERT_EQUAL(ibp_cap_wire_key(&c, buf, sizeof buf), IBP_OK);
    CU_ASSERT_STRING_EQUAL(buf, "12#" KEY48);
    CU_ASSERT_EQUAL(ibp_cap_wire_key(&c, buf, 10), IBP_E_INVALID_PARAMETER);
    CU_ASSERT_EQUAL_FATAL(ibp_cap_parse("ibp://h:1/IBP-99/5/WRITE", &c), IBP_OK);
    CU_ASSERT_EQUAL(ibp_cap_wire_key(&c, buf, sizeof buf), IBP_OK);
    CU_ASSERT_STRING_EQUAL(buf, "IBP-99");
}

static void test_captype_name(void)
{
    CU_ASSERT_STRING_EQUAL(ibp_captype_name(IBP_READCAP), "READ");
    CU_ASSERT_STRING_EQUAL(ibp_captype_name(IBP_WRITECAP), "WRITE");
    CU_ASSERT_STRING_EQUAL(ibp_captype_name(IBP_MANAGECAP), "MANAGE");
    CU_ASSERT_PTR_NOT_NULL(ibp_captype_name((ibp_captype)0));
}

static void test_strerror(void)
{
    static const int codes[] = {
        IBP_OK, -1, -2, -3, -4, -5, -6, -7, -8, -9, -10, -11, -12, -13, -14, -15, -16, -17, -18,
        -19, -20, -21, -22, -23, -24, -25, -26, -27, -28, -29, -30, -31, -32, -33, -34, -35,
        -36, -37, -38, -42, -45, -46, -47, -48, -49, -50, -53, -63, -64, -65, -66,
    };
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        const char *s = ibp_strerror(codes[i]);
        const char *name = ibp_errname(codes[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(s);
        CU_ASSERT(strlen(s) > 3);
        CU_ASSERT(strncmp(s, "unknown IBP error", 17) != 0);
        CU_ASSERT_PTR_NOT_NULL(name);
        /* words differ from code to code */
        for (size_t j = 0; j < i; j++)
            CU_ASSERT(strcmp(s, ibp_strerror(codes[j])) != 0);
    }
    CU_ASSERT_STRING_EQUAL(ibp_errname(IBP_E_CAP_NOT_FOUND), "CAP_NOT_FOUND");
    CU_ASSERT_STRING_EQUAL(ibp_errname(IBP_OK), "OK");
    CU_ASSERT_STRING_EQUAL(ibp_strerror(-77), "unknown IBP error -77");
    CU_ASSERT_STRING_EQUAL(ibp_strerror(0), "unknown IBP error 0");
    CU_ASSERT_STRING_EQUAL(ibp_strerror(12345), "unknown IBP error 12345");
    CU_ASSERT_PTR_NULL(ibp_errname(-77));
    CU_ASSERT_PTR_NULL(ibp_errname(2));
}

static const lns_test_case cap_tests[] = {
    {"parse 1.4 form", test_parse_v14},
    {"parse old form", test_parse_old_form},
    {"IPv6 hosts", test_parse_ipv6},
    {"round trips", test_round_trip},
    {"malformed rejected", test_reject},
    {"overlong fields", test_overlong},
    {"format limits", test_format_limits},
    {"wire key", test_wire_key},
    {"captype names", test_captype_name},
};

static const lns_test_case error_tests[] = {
    {"strerror and errname", test_strerror},
};

void lns_test_register(void)
{
    LNS_TEST_SUITE("capabilities", NULL, NULL, cap_tests);
    LNS_TEST_SUITE("errors", NULL, NULL, error_tests);
}
