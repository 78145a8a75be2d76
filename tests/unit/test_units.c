/* test_units.c -- common/lns_units: the one parser of "64M" and "30d" that every program uses. */
#include <CUnit/CUnit.h>
#include <stdint.h>

#include "lns_test.h"
#include "lns_units.h"

static void test_size(void)
{
    uint64_t v = 7;
    CU_ASSERT(lns_parse_size("0", &v) == 0 && v == 0);
    CU_ASSERT(lns_parse_size("4096", &v) == 0 && v == 4096);
    CU_ASSERT(lns_parse_size("3k", &v) == 0 && v == 3072);
    CU_ASSERT(lns_parse_size("5M", &v) == 0 && v == 5ULL << 20);
    CU_ASSERT(lns_parse_size("2t", &v) == 0 && v == 2ULL << 40);
    CU_ASSERT(lns_parse_size("9223372036854775807", &v) == 0 && v == (uint64_t)INT64_MAX);
    CU_ASSERT(lns_parse_size("8388607T", &v) == 0 && v == 8388607ULL << 40);
    v = 7;
    static const char *bad[] = {"", "-1", "+1", " 1", "1 ", "1KB", "1x", "K", "0x10",
                                "9223372036854775808", "8388608T", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CU_ASSERT_EQUAL(lns_parse_size(bad[i], &v), -1);
    CU_ASSERT_EQUAL(v, 7); /* untouched on error */
    CU_ASSERT_EQUAL(lns_parse_size(NULL, &v), -1);
}

static void test_seconds(void)
{
    int64_t v = 7;
    CU_ASSERT(lns_parse_seconds("0", &v) == 0 && v == 0);
    CU_ASSERT(lns_parse_seconds("90s", &v) == 0 && v == 90);
    CU_ASSERT(lns_parse_seconds("15m", &v) == 0 && v == 900);
    CU_ASSERT(lns_parse_seconds("2h", &v) == 0 && v == 7200);
    CU_ASSERT(lns_parse_seconds("30d", &v) == 0 && v == 30 * 86400);
    v = 7;
    static const char *bad[] = {"", "-1", "1M", "1H", "1w", "1d1", "d", "1.5h",
                                "106751991167301d"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CU_ASSERT_EQUAL(lns_parse_seconds(bad[i], &v), -1);
    CU_ASSERT_EQUAL(v, 7);
}

static void test_rate(void)
{
    double v = 7;
    CU_ASSERT(lns_parse_rate("8000000", &v) == 0 && v == 8e6);
    CU_ASSERT(lns_parse_rate("15M", &v) == 0 && v == 15e6);
    CU_ASSERT(lns_parse_rate("1.5m", &v) == 0 && v == 1.5e6);
    CU_ASSERT(lns_parse_rate("640k", &v) == 0 && v == 640e3);
    CU_ASSERT(lns_parse_rate("1G", &v) == 0 && v == 1e9);
    CU_ASSERT(lns_parse_rate("40Mbit/s", &v) == 0 && v == 40e6);
    CU_ASSERT(lns_parse_rate("56kbps", &v) == 0 && v == 56e3);
    v = 7;
    static const char *bad[] = {"", "0", "-1M", "0.5", "15T", "15MB", "M", "1e13", "inf",
                                "nan", "15 M", "2e400"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CU_ASSERT_EQUAL(lns_parse_rate(bad[i], &v), -1);
    CU_ASSERT_EQUAL(v, 7);
}

static const lns_test_case tests[] = {
    {"sizes", test_size},
    {"seconds", test_seconds},
    {"bitrates", test_rate},
};

LNS_TEST_MAIN("lns_units", tests)
