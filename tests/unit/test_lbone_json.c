/* test_lbone_json.c -- liblbone's JSON: strict decoding through jansson with our limits, our
 * integer rule, and our writer.
 *
 * Valid documents must come back value for value; every kind of invalid input (syntax,
 * numbers, strings, UTF-8, escapes, depth, duplicates, size, trailing data) must be refused
 * with a reason that names an offset, and truncating any valid document at any byte must fail
 * cleanly (under ASan this also proves no read past the end).  The writer's output must parse
 * back to the same values and stay inert inside HTML.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbone_json.h"
#include "lns_test.h"

static json_t *parse(const char *s)
{
    char err[160];
    return lbone_json_parse(s, strlen(s), err, sizeof err);
}

static void test_valid(void)
{
    const char *text = " {\"a\": [1, -2.5e2, 0, true, false, null, \"x\\u00e9\\ud83d\\ude00\\n\"],"
                       " \"b\": {}, \"c\": [], \"d\": 9007199254740993, \"e\": 1e3 } ";
    json_t *d = parse(text);
    CU_ASSERT_FATAL(d != NULL);
    json_t *a = json_object_get(d, "a");
    CU_ASSERT(json_is_object(d) && json_object_size(d) == 5);
    CU_ASSERT(json_is_array(a) && json_array_size(a) == 7);
    int64_t i;
    CU_ASSERT(lbone_json_int(json_array_get(a, 0), &i) == 0 && i == 1);
    CU_ASSERT(json_number_value(json_array_get(a, 1)) == -250);
    CU_ASSERT(lbone_json_int(json_array_get(a, 1), &i) == 0 && i == -250);
    CU_ASSERT(lbone_json_int(json_array_get(a, 2), &i) == 0 && i == 0);
    CU_ASSERT(json_is_true(json_array_get(a, 3)) && json_is_false(json_array_get(a, 4)));
    CU_ASSERT(json_is_null(json_array_get(a, 5)));
    CU_ASSERT(lbone_json_int(json_array_get(a, 5), &i) < 0);
    const json_t *v = json_array_get(a, 6);
    CU_ASSERT(json_string_length(v) == 8 &&
              memcmp(json_string_value(v), "x\xc3\xa9\xf0\x9f\x98\x80\n", 8) == 0);
    CU_ASSERT(lbone_json_int(v, &i) < 0);
    /* Exact integers beyond 2^53 when written as integers; 1e3 counts as 1000. */
    CU_ASSERT(lbone_json_int(json_object_get(d, "d"), &i) == 0 && i == 9007199254740993LL);
    CU_ASSERT(lbone_json_int(json_object_get(d, "e"), &i) == 0 && i == 1000);
    CU_ASSERT(json_object_get(d, "zz") == NULL && json_object_get(a, "a") == NULL);
    /* Members keep their document order (the first bad field is the one reported). */
    const char *order[] = {"a", "b", "c", "d", "e"}, *k;
    size_t n = 0;
    json_t *m;
    json_object_foreach (d, k, m)
        CU_ASSERT(n < 5 && strcmp(k, order[n++]) == 0);
    CU_ASSERT(n == 5);
    json_decref(d);

    static const char *ok[] = {"0", "-0", "1.5", "\"\"", "[]", "{}", "[[[]]]", "\"\\/\"",
                               "1E+2", "1e-2", "\t\r\n 7 \n"};
    for (size_t j = 0; j < sizeof ok / sizeof ok[0]; j++) {
        d = parse(ok[j]);
        CU_ASSERT(d != NULL);
        json_decref(d);
    }
    static const char *not_int[] = {"1.5", "9007199254740992.0", "-1e300", "\"7\"", "true"};
    for (size_t j = 0; j < sizeof not_int / sizeof not_int[0]; j++) {
        d = parse(not_int[j]);
        CU_ASSERT(d != NULL && lbone_json_int(d, &i) < 0);
        json_decref(d);
    }
    CU_ASSERT(lbone_json_int(NULL, &i) < 0);
}

static void test_invalid(void)
{
    static const char *bad[] = {
        "", " ", "{", "}", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "{'a':1}", "[1 2]",
        "01", "-", "1.", ".5", "1e", "+1", "0x10", "NaN", "Infinity", "1e999", "tru", "nul",
        "True", "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\u12g4\"", "\"\\ud800\"", "\"\\udc00\"",
        "\"\\ud800\\u0041\"", "\"\\u0000\"", "{\"a\\u0000b\":1}", "\"a\tb\"", "\"\x01\"",
        "\"\xff\"", "\"\xc0\xaf\"", "\"\xe0\x80\x80\"", "\"\xed\xa0\x80\"",
        "\"\xf4\x90\x80\x80\"", "\"\xc3\"", "[] []", "{\"a\":1,\"a\":2}", "[1] x", "/* c */ 1",
        "// c\n1", "99999999999999999999",
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char err[160] = "";
        json_t *d = lbone_json_parse(bad[k], strlen(bad[k]), err, sizeof err);
        CU_ASSERT(d == NULL && strncmp(err, "offset ", 7) == 0);
        if (d || strncmp(err, "offset ", 7) != 0)
            fprintf(stderr, "accepted or no offset: '%s' -> '%s'\n", bad[k], err);
        json_decref(d);
    }
    /* Depth: 32 levels pass, 33 do not, arrays or objects; brackets in strings do not count. */
    char deep[400], err[160];
    memset(deep, '[', 32);
    memset(deep + 32, ']', 32);
    deep[64] = 0;
    json_t *d = parse(deep);
    CU_ASSERT(d != NULL);
    json_decref(d);
    memset(deep, '[', 33);
    memset(deep + 33, ']', 33);
    deep[66] = 0;
    CU_ASSERT(lbone_json_parse(deep, strlen(deep), err, sizeof err) == NULL);
    CU_ASSERT(strcmp(err, "offset 32: nesting deeper than 32") == 0);
    for (int levels = 32; levels <= 33; levels++) {
        deep[0] = 0;
        for (int k = 0; k < levels; k++)
            strcat(deep, "{\"a\":");
        strcat(deep, "1");
        for (int k = 0; k < levels; k++)
            strcat(deep, "}");
        d = parse(deep);
        CU_ASSERT((d != NULL) == (levels == 32));
        json_decref(d);
    }
    strcpy(deep, "[\"");
    memset(deep + 2, '[', 40);
    strcpy(deep + 42, "\\\"");
    memset(deep + 44, '{', 40);
    strcpy(deep + 84, "\"]");
    d = parse(deep);
    CU_ASSERT(d != NULL && json_string_length(json_array_get(d, 0)) == 81);
    json_decref(d);
    /* Embedded NUL: the length is what counts. */
    CU_ASSERT(lbone_json_parse("[1]\0", 4, NULL, 0) == NULL);
    CU_ASSERT(lbone_json_parse("\"a\0b\"", 5, NULL, 0) == NULL);
}

static void test_size_limit(void)
{
    char err[160] = "";
    size_t max = LBONE_JSON_MAX_BYTES;
    char *big = malloc(max + 1);
    CU_ASSERT_FATAL(big != NULL);
    memset(big, ' ', max + 1);
    big[0] = '1';
    json_t *d = lbone_json_parse(big, max, err, sizeof err);
    CU_ASSERT(json_integer_value(d) == 1);
    json_decref(d);
    CU_ASSERT(lbone_json_parse(big, max + 1, err, sizeof err) == NULL);
    CU_ASSERT(strncmp(err, "offset ", 7) == 0 && strstr(err, "larger than") != NULL);
    free(big);
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
    json_t *d = lbone_json_parse(text, len, NULL, 0);
    CU_ASSERT(d != NULL && strcmp(json_string_value(json_object_get(d, "host")), "d\xc3\xa9p\"ot") == 0);
    json_decref(d);
}

static void test_writer_round_trip(void)
{
    const char *s = "tab\t nl\n quote\" back\\ <b>&amp; \x01 \x7f \xc3\xa9";
    lns_buf_t b;
    lns_buf_init(&b);
    lns_buf_puts(&b, "[");
    lbone_json_put_string(&b, s);
    lns_buf_puts(&b, ",");
    lbone_json_put_number(&b, 0.1);
    lns_buf_puts(&b, ",");
    lbone_json_put_number(&b, 1e15);
    lns_buf_puts(&b, ",");
    lbone_json_put_number(&b, NAN);
    lns_buf_puts(&b, ",");
    lbone_json_put_number(&b, -35.0);
    lns_buf_puts(&b, "]");
    CU_ASSERT_FATAL(!b.oom && b.p != NULL);
    CU_ASSERT(strcmp(b.p, "[\"tab\\t nl\\n quote\\\" back\\\\ \\u003cb\\u003e\\u0026amp; "
                          "\\u0001 \\u007f \xc3\xa9\",0.1,1000000000000000,null,-35]") == 0);
    json_t *d = lbone_json_parse(b.p, b.len, NULL, 0);
    CU_ASSERT_FATAL(d != NULL);
    CU_ASSERT(strcmp(json_string_value(json_array_get(d, 0)), s) == 0);
    CU_ASSERT(json_real_value(json_array_get(d, 1)) == 0.1);
    CU_ASSERT(json_integer_value(json_array_get(d, 2)) == 1000000000000000LL);
    CU_ASSERT(json_is_null(json_array_get(d, 3)));
    json_decref(d);
    size_t n;
    char *t = lns_buf_take(&b, &n);
    CU_ASSERT(t && n == strlen(t) && b.p == NULL);
    free(t);
    lns_buf_html(&b, "<a href='x'>&\"</a>");
    CU_ASSERT(strcmp(b.p, "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;") == 0);
    lns_buf_free(&b);
}

static const lns_test_case tests[] = {
    {"valid documents, order, the integer rule", test_valid},
    {"invalid documents are refused with an offset", test_invalid},
    {"documents above LBONE_JSON_MAX_BYTES are refused", test_size_limit},
    {"every truncation of a document fails cleanly", test_truncations},
    {"writer output parses back; HTML escaping", test_writer_round_trip},
};

LNS_TEST_MAIN("lbone json", tests)
