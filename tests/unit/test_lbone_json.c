/* test_lbone_json.c -- the strict JSON parser and writer of liblbone.
 *
 * Valid documents must come back value for value; every kind of invalid input (syntax,
 * numbers, strings, UTF-8, escapes, depth, duplicates, trailing data) must be refused with a
 * reason, and truncating any valid document at any byte must fail cleanly (under ASan this
 * also proves no read past the end).  The writer's output must parse back to the same text.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lbone_json.h"
#include "lns_test.h"

static lbone_json_doc_t *parse(const char *s)
{
    char err[160];
    return lbone_json_parse(s, strlen(s), err, sizeof err);
}

static void test_valid(void)
{
    const char *text = " {\"a\": [1, -2.5e2, 0, true, false, null, \"x\\u00e9\\ud83d\\ude00\\n\"],"
                       " \"b\": {}, \"c\": [], \"d\": 9007199254740993, \"e\": 1e3 } ";
    lbone_json_doc_t *d = parse(text);
    CU_ASSERT_FATAL(d != NULL);
    const lbone_json_t *root = lbone_json_root(d), *a = lbone_json_get(root, "a"), *v;
    CU_ASSERT(lbone_json_type_of(root) == LBONE_JSON_OBJECT && lbone_json_count(root) == 5);
    CU_ASSERT(lbone_json_type_of(a) == LBONE_JSON_ARRAY && lbone_json_count(a) == 7);
    int64_t i;
    double x;
    int b;
    size_t n;
    v = lbone_json_child(a);
    CU_ASSERT(lbone_json_int(v, &i) == 0 && i == 1);
    v = lbone_json_next(v);
    CU_ASSERT(lbone_json_number(v, &x) == 0 && x == -250 && lbone_json_int(v, &i) == 0 && i == -250);
    v = lbone_json_next(v);
    CU_ASSERT(lbone_json_int(v, &i) == 0 && i == 0);
    v = lbone_json_next(v);
    CU_ASSERT(lbone_json_bool(v, &b) == 0 && b == 1);
    v = lbone_json_next(v);
    CU_ASSERT(lbone_json_bool(v, &b) == 0 && b == 0);
    v = lbone_json_next(v);
    CU_ASSERT(lbone_json_type_of(v) == LBONE_JSON_NULL && lbone_json_bool(v, &b) < 0);
    v = lbone_json_next(v);
    const char *s = lbone_json_string(v, &n);
    CU_ASSERT(s && n == 8 && memcmp(s, "x\xc3\xa9\xf0\x9f\x98\x80\n", 8) == 0);
    CU_ASSERT(lbone_json_next(v) == NULL);
    /* Exact integers beyond 2^53 when written as integers; 1e3 counts as 1000. */
    CU_ASSERT(lbone_json_int(lbone_json_get(root, "d"), &i) == 0 && i == 9007199254740993LL);
    CU_ASSERT(lbone_json_int(lbone_json_get(root, "e"), &i) == 0 && i == 1000);
    CU_ASSERT(lbone_json_get(root, "zz") == NULL && lbone_json_get(a, "a") == NULL);
    CU_ASSERT(strcmp(lbone_json_key(lbone_json_child(root)), "a") == 0);
    CU_ASSERT(lbone_json_string(a, NULL) == NULL && lbone_json_number(a, &x) < 0);
    lbone_json_free(d);

    static const char *ok[] = {"0", "-0", "1.5", "\"\"", "[]", "{}", "[[[]]]", "\"\\/\"",
                               "1E+2", "1e-2", "\t\r\n 7 \n"};
    for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
        d = parse(ok[k]);
        CU_ASSERT(d != NULL);
        lbone_json_free(d);
    }
    CU_ASSERT(lbone_json_int(lbone_json_root(d = parse("1.5")), &i) < 0);
    lbone_json_free(d);
}

static void test_invalid(void)
{
    static const char *bad[] = {
        "", " ", "{", "}", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "{'a':1}", "[1 2]",
        "01", "-", "1.", ".5", "1e", "+1", "0x10", "NaN", "Infinity", "1e999", "tru", "nul",
        "True", "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\u12g4\"", "\"\\ud800\"", "\"\\udc00\"",
        "\"\\ud800\\u0041\"", "\"\\u0000\"", "\"a\tb\"", "\"\x01\"", "\"\xff\"", "\"\xc0\xaf\"",
        "\"\xe0\x80\x80\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"", "\"\xc3\"", "[] []",
        "{\"a\":1,\"a\":2}", "[1] x", "/* c */ 1", "// c\n1",
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char err[160] = "";
        lbone_json_doc_t *d = lbone_json_parse(bad[k], strlen(bad[k]), err, sizeof err);
        CU_ASSERT(d == NULL && strncmp(err, "offset ", 7) == 0);
        lbone_json_free(d);
    }
    /* Depth: 32 levels pass, 33 do not. */
    char deep[200];
    memset(deep, '[', 32);
    memset(deep + 32, ']', 32);
    deep[64] = 0;
    lbone_json_doc_t *d = parse(deep);
    CU_ASSERT(d != NULL);
    lbone_json_free(d);
    memset(deep, '[', 33);
    memset(deep + 33, ']', 33);
    deep[66] = 0;
    CU_ASSERT(parse(deep) == NULL);
    /* Embedded NUL: the length is what counts. */
    CU_ASSERT(lbone_json_parse("[1]\0", 4, NULL, 0) == NULL);
}

static void test_truncations(void)
{
    const char *text = "{\"host\":\"d\\u00e9p\\\"ot\",\"n\":[1.25e1,-3,{\"x\":null}],\"t\":true}";
    size_t len = strlen(text);
    for (size_t k = 0; k < len; k++) {
        char *copy = malloc(k ? k : 1); /* exactly k bytes: ASan sees any read past them */
        CU_ASSERT_FATAL(copy != NULL);
        memcpy(copy, text, k);
        CU_ASSERT(lbone_json_parse(copy, k, NULL, 0) == NULL);
        free(copy);
    }
    lbone_json_doc_t *d = lbone_json_parse(text, len, NULL, 0);
    CU_ASSERT(d != NULL);
    lbone_json_free(d);
}

static void test_writer_round_trip(void)
{
    const char *s = "tab\t nl\n quote\" back\\ <b>&amp; \x01 \xc3\xa9";
    lbone_buf_t b;
    lbone_buf_init(&b);
    lbone_buf_puts(&b, "[");
    lbone_json_put_string(&b, s);
    lbone_buf_puts(&b, ",");
    lbone_json_put_number(&b, 0.1);
    lbone_buf_puts(&b, ",");
    lbone_json_put_number(&b, 1e15);
    lbone_buf_puts(&b, ",");
    lbone_json_put_number(&b, NAN);
    lbone_buf_puts(&b, "]");
    CU_ASSERT_FATAL(!b.oom && b.p != NULL);
    CU_ASSERT(strchr(b.p, '<') == NULL && strchr(b.p, '&') == NULL);
    CU_ASSERT(strstr(b.p, ",1000000000000000,null]") != NULL);
    lbone_json_doc_t *d = lbone_json_parse(b.p, b.len, NULL, 0);
    CU_ASSERT_FATAL(d != NULL);
    const lbone_json_t *v = lbone_json_child(lbone_json_root(d));
    CU_ASSERT(strcmp(lbone_json_string(v, NULL), s) == 0);
    double x;
    CU_ASSERT(lbone_json_number(lbone_json_next(v), &x) == 0 && x == 0.1);
    lbone_json_free(d);
    size_t n;
    char *t = lbone_buf_take(&b, &n);
    CU_ASSERT(t && n == strlen(t) && b.p == NULL);
    free(t);
    lbone_buf_html(&b, "<a href='x'>&\"</a>");
    CU_ASSERT(strcmp(b.p, "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;") == 0);
    lbone_buf_free(&b);
}

static const lns_test_case tests[] = {
    {"valid documents and accessors", test_valid},
    {"invalid documents are refused with an offset", test_invalid},
    {"every truncation of a document fails cleanly", test_truncations},
    {"writer output parses back; HTML escaping", test_writer_round_trip},
};

void lns_test_register(void)
{
    LNS_TEST_SUITE("lbone json", NULL, NULL, tests);
}
