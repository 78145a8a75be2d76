/* test_lbone_env.c -- small server modules: environment filters ("a value also matches
 * anything better"), the per-address rate limit, the registry's indexes, secrets.
 */
#include <stdlib.h>
#include <string.h>

#include "lbone_srv.h"
#include "lns_test.h"

static lbone_env_t env_of(const char *json)
{
    lbone_env_t e;
    char err[256];
    json_t *d = lbone_json_parse(json, strlen(json), NULL, 0);
    CU_ASSERT_FATAL(d != NULL);
    CU_ASSERT(lbone_env_from_json(d, &e, err, sizeof err) == 0);
    json_decref(d);
    return e;
}

static void want(lbone_env_t *w, const char *k, const char *v)
{
    char err[256];
    CU_ASSERT(lbone_env_query_param(w, k, v, err, sizeof err) == 1);
}

static void test_env_order(void)
{
    lbone_env_t t1 = env_of("{\"connection\":\"T1\",\"monitoring\":8,\"power\":\"none\",\"firewall\":true}");
    lbone_env_t oc3 = env_of("{\"connection\":\"oc3\",\"monitoring\":24,\"power\":\"UPS\",\"firewall\":false}");
    lbone_env_t none = env_of("{}");
    lbone_env_t w;

    lbone_env_unknown(&w);
    CU_ASSERT(lbone_env_matches(&t1, &w) && lbone_env_matches(&none, &w));
    want(&w, "connection", "T3");
    CU_ASSERT(!lbone_env_matches(&t1, &w) && lbone_env_matches(&oc3, &w) && !lbone_env_matches(&none, &w));
    lbone_env_unknown(&w);
    want(&w, "connection", "OC3");
    CU_ASSERT(lbone_env_matches(&oc3, &w));
    want(&w, "power", "generator");
    CU_ASSERT(!lbone_env_matches(&oc3, &w));
    lbone_env_unknown(&w);
    want(&w, "monitoring", "8");
    CU_ASSERT(lbone_env_matches(&t1, &w) && lbone_env_matches(&oc3, &w) && !lbone_env_matches(&none, &w));
    lbone_env_unknown(&w);
    want(&w, "firewall", "no");
    CU_ASSERT(!lbone_env_matches(&t1, &w) && lbone_env_matches(&oc3, &w));
    lbone_env_unknown(&w);
    want(&w, "firewall", "yes");
    CU_ASSERT(lbone_env_matches(&t1, &w) && lbone_env_matches(&none, &w));
    /* The speed order: 10G is better than OC192, OC48 than 1G, E3 below T3. */
    CU_ASSERT(lbone_env_connection_parse("10G") > lbone_env_connection_parse("OC192"));
    CU_ASSERT(lbone_env_connection_parse("OC48") > lbone_env_connection_parse("1G"));
    CU_ASSERT(lbone_env_connection_parse("E3") < lbone_env_connection_parse("T3"));
    CU_ASSERT(lbone_env_connection_parse("T2") == -1 && lbone_env_connection_name(-1) == NULL);

    char err[256];
    CU_ASSERT(lbone_env_query_param(&w, "colour", "red", err, sizeof err) == 0);
    CU_ASSERT(lbone_env_query_param(&w, "monitoring", "25", err, sizeof err) == -1);
    CU_ASSERT(lbone_env_query_param(&w, "power", "solar", err, sizeof err) == -1);
    static const char *bad[] = {"[]", "{\"connection\":1}", "{\"monitoring\":-1}",
                                "{\"monitoring\":2.5}", "{\"power\":\"diesel\"}",
                                "{\"firewall\":\"no\"}", "{\"x\":1}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lbone_env_t e;
        json_t *d = lbone_json_parse(bad[i], strlen(bad[i]), NULL, 0);
        CU_ASSERT_FATAL(d != NULL);
        CU_ASSERT(lbone_env_from_json(d, &e, err, sizeof err) == -1);
        json_decref(d);
    }
    lns_buf_t b;
    lns_buf_init(&b);
    lbone_env_put_json(&b, &oc3);
    CU_ASSERT(strcmp(b.p, "{\"connection\":\"OC3\",\"monitoring\":24,\"power\":\"ups\","
                          "\"firewall\":false}") == 0);
    lns_buf_free(&b);
}

static void test_rate_limit(void)
{
    lbone_rl_t *rl = lbone_rl_new(6); /* 6 a minute: one every 10 s */
    CU_ASSERT_FATAL(rl != NULL);
    int64_t t = 1000000;
    for (int i = 0; i < 6; i++)
        CU_ASSERT(lbone_rl_allow(rl, "192.0.2.1", t));
    CU_ASSERT(!lbone_rl_allow(rl, "192.0.2.1", t));
    CU_ASSERT(lbone_rl_allow(rl, "192.0.2.2", t)); /* per address */
    CU_ASSERT(!lbone_rl_allow(rl, "192.0.2.1", t + 9000));
    CU_ASSERT(lbone_rl_allow(rl, "192.0.2.1", t + 10000));
    CU_ASSERT(!lbone_rl_allow(rl, "192.0.2.1", t + 10000));
    /* The bucket refills to the burst, not beyond. */
    t += 3600 * 1000;
    for (int i = 0; i < 6; i++)
        CU_ASSERT(lbone_rl_allow(rl, "192.0.2.1", t));
    CU_ASSERT(!lbone_rl_allow(rl, "192.0.2.1", t));
    lbone_rl_free(rl);
}

static void test_registry_index(void)
{
    lbone_reg_t r;
    CU_ASSERT_FATAL(lbone_reg_init(&r) == 0);
    /* More depots than buckets: the table grows, every depot stays findable both ways,
     * and removal keeps the array dense. */
    for (int i = 0; i < 3000; i++) {
        lbone_depot_t *d = calloc(1, sizeof *d);
        CU_ASSERT_FATAL(d != NULL);
        snprintf(d->id, sizeof d->id, "%016x", i);
        snprintf(d->host, sizeof d->host, "Host%d.Example", i % 100);
        d->port = 6714 + i / 100;
        strcpy(d->rid, "0");
        CU_ASSERT(lbone_reg_insert(&r, d) == 0);
    }
    CU_ASSERT(r.n == 3000 && r.nbuckets >= 3000);
    char id[17], host[64];
    int ok = 1;
    for (int i = 0; i < 3000; i += 7) {
        snprintf(id, sizeof id, "%016x", i);
        snprintf(host, sizeof host, "host%d.example", i % 100); /* case-insensitive */
        lbone_depot_t *a = lbone_reg_find_id(&r, id), *b = lbone_reg_find_key(&r, host, 6714 + i / 100, "0");
        ok &= a != NULL && a == b;
    }
    CU_ASSERT(ok);
    CU_ASSERT(lbone_reg_find_key(&r, "host1.example", 6714, "1") == NULL);
    for (int i = 0; i < 3000; i += 2) {
        snprintf(id, sizeof id, "%016x", i);
        lbone_reg_remove(&r, lbone_reg_find_id(&r, id));
    }
    CU_ASSERT(r.n == 1500);
    ok = 1;
    for (size_t k = 0; k < r.n; k++)
        ok &= r.v[k]->idx == k && lbone_reg_find_id(&r, r.v[k]->id) == r.v[k];
    CU_ASSERT(ok);
    CU_ASSERT(lbone_reg_find_id(&r, "0000000000000000") == NULL);
    lbone_reg_free(&r);
}

static void test_secrets(void)
{
    char a[65], b[65];
    uint8_t h[LBONE_HASH_LEN];
    CU_ASSERT(lbone_random_hex(a, 32) == 0 && lbone_random_hex(b, 32) == 0);
    CU_ASSERT(strlen(a) == 64 && strspn(a, "0123456789abcdef") == 64 && strcmp(a, b) != 0);
    lbone_sha256(a, strlen(a), h);
    CU_ASSERT(lbone_secret_matches(a, h));
    CU_ASSERT(!lbone_secret_matches(b, h));
    a[63] ^= 1;
    CU_ASSERT(!lbone_secret_matches(a, h));
    CU_ASSERT(!lbone_secret_matches("", h) && !lbone_secret_matches(NULL, h));
}

static const lns_test_case tests[] = {
    {"environment: a value matches anything better", test_env_order},
    {"rate limit per address", test_rate_limit},
    {"registry indexes", test_registry_index},
    {"secrets: random, hashed, compared", test_secrets},
};

LNS_TEST_MAIN("lbone server modules", tests)
