/* test_serve_range.c -- lors_serve's Range parsing (RFC 9110 14.1.2) and content types. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

#include "lns_test.h"
#include "serve.h"

/* The ranges of h for size as "a-b,c-d" (inclusive ends), with the kind. */
static serve_ranges_kind parse(const char *h, int64_t size, char *out, size_t n)
{
    serve_range_t r[SERVE_MAX_RANGES];
    int k;
    serve_ranges_kind kind = serve_parse_ranges(h, size, r, &k);
    size_t w = 0;
    out[0] = '\0';
    for (int i = 0; i < k && w < n; i++)
        w += (size_t)snprintf(out + w, n - w, "%s%lld-%lld", i ? "," : "", (long long)r[i].off,
                              (long long)(r[i].off + r[i].len - 1));
    return kind;
}

/* h for size is of that kind and, unless want is NULL, its ranges are want. */
static void ranges_are(const char *h, int64_t size, serve_ranges_kind kind, const char *want)
{
    char o[256];
    serve_ranges_kind k = parse(h, size, o, sizeof o);
    CU_ASSERT_EQUAL(k, kind);
    if (want)
        CU_ASSERT_STRING_EQUAL(o, want);
    if (k != kind || (want && strcmp(o, want) != 0))
        fprintf(stderr, "\n  \"%s\" of %lld: kind %d, ranges \"%s\"\n", h ? h : "(none)",
                (long long)size, (int)k, o);
}

static void test_single(void)
{
    ranges_are("bytes=0-499", 1000, SERVE_PARTIAL, "0-499");
    ranges_are("bytes=500-", 1000, SERVE_PARTIAL, "500-999");
    ranges_are("bytes=-300", 1000, SERVE_PARTIAL, "700-999");
    ranges_are("bytes=-3000", 1000, SERVE_PARTIAL, "0-999"); /* all of it */
    ranges_are("bytes=900-5000", 1000, SERVE_PARTIAL, "900-999"); /* clipped */
    ranges_are(" Bytes = 5-5 ", 1000, SERVE_PARTIAL, "5-5");
}

static void test_multi_and_unsatisfiable(void)
{
    ranges_are("bytes=0-9, 100-109,-5", 1000, SERVE_PARTIAL, "0-9,100-109,995-999");
    /* the satisfiable ones are kept, the others dropped */
    ranges_are("bytes=2000-3000,10-19", 1000, SERVE_PARTIAL, "10-19");
    ranges_are("bytes=1000-", 1000, SERVE_UNSATISFIABLE, NULL);
    ranges_are("bytes=-0", 1000, SERVE_UNSATISFIABLE, NULL);
    ranges_are("bytes=0-0", 0, SERVE_UNSATISFIABLE, NULL);
}

static void test_ignored(void)
{
    ranges_are(NULL, 1000, SERVE_WHOLE, NULL);
    ranges_are("items=0-5", 1000, SERVE_WHOLE, NULL);
    ranges_are("bytes=5-1", 1000, SERVE_WHOLE, NULL);  /* last < first */
    ranges_are("bytes=a-b", 1000, SERVE_WHOLE, NULL);
    ranges_are("bytes=", 1000, SERVE_WHOLE, NULL);
    ranges_are("bytes=1-2;3-4", 1000, SERVE_WHOLE, NULL);
    ranges_are("bytes=99999999999999999999-", 1000, SERVE_WHOLE, NULL);
    char many[1024] = "bytes=";
    for (int i = 0; i <= SERVE_MAX_RANGES; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "%s%d-%d", i ? "," : "", i,
                 i);
    ranges_are(many, 1000, SERVE_WHOLE, NULL); /* too many: the whole */
}

/* Overlapping and adjacent ranges are merged; ranges asking for more than the file: 200. */
static void test_coalesced(void)
{
    ranges_are("bytes=100-199,0-99,150-300", 1000, SERVE_PARTIAL, "0-300");
    ranges_are("bytes=500-599,0-9", 1000, SERVE_PARTIAL, "0-9,500-599");
    /* 32 times the whole file in one header: the whole file once, not 32 */
    char many[1024] = "bytes=";
    for (int i = 0; i < SERVE_MAX_RANGES; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "%s0-", i ? "," : "");
    ranges_are(many, 1000, SERVE_WHOLE, NULL);
    ranges_are("bytes=0-600,400-999", 1000, SERVE_WHOLE, NULL);
}

static void test_types(void)
{
    CU_ASSERT_STRING_EQUAL(serve_content_type("movie.mp4"), "video/mp4");
    CU_ASSERT_STRING_EQUAL(serve_content_type("a.b.WEBM"), "video/webm");
    CU_ASSERT_STRING_EQUAL(serve_content_type("x.tar"), "application/x-tar");
    CU_ASSERT_STRING_EQUAL(serve_content_type("noext"), "application/octet-stream");
    CU_ASSERT_STRING_EQUAL(serve_content_type(".mp4"), "application/octet-stream");
    char n[64];
    lors_dir_name_of("/a/b/movie.mp4.xnd", n, sizeof n);
    CU_ASSERT_STRING_EQUAL(n, "movie.mp4");
    lors_dir_name_of("plain", n, sizeof n);
    CU_ASSERT_STRING_EQUAL(n, "plain");
}

static const lns_test_case tests[] = {
    {"one range: first-last, first-, -suffix, clipped", test_single},
    {"several ranges; none satisfiable: 416", test_multi_and_unsatisfiable},
    {"malformed or too many: the whole file", test_ignored},
    {"overlapping ranges merged; more than the file: the whole", test_coalesced},
    {"content types and URL names", test_types},
};

LNS_TEST_MAIN("lors_serve ranges", tests)
