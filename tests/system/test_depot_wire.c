/* test_depot_wire.c -- a real ibp_depot, spoken to byte for byte.
 *
 * The exchanges are those of LoCI 1.3.1 (version 0, one connection per operation) and ACCRE
 * 1.4 (version 1, keep-alive, pipelining) clients as ../shared/reference/ibp-protocol.md
 * records them, and every answer is checked against docs/ibp-protocol.md: reply formats to
 * the byte, every error code, what happens to the connection after it, expiry, STATUS and
 * its password, the event log. */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "lns_test.h"
#include "lns_time.h"
#include "test_depot.h"

#define PW "s3cret-pw"

static test_depot_t D;

typedef struct caps {
    char cap[3][700];
    char key[3][400];   /* "<rid>#<key>", as the 1.4 client sends it */
    char bare[3][300];  /* "<key>" alone */
    char tk[3][64];
} caps_t;

static int suite_init(void)
{
    return td_start(&D, "--admin-password " PW);
}

static int suite_clean(void)
{
    lns_test_server_stop(&D.srv);
    return 0;
}

/* Send a line, read the reply line, return its code. */
static int req(int fd, const char *line, char *reply, size_t size)
{
    return raw_reqf(fd, reply, size, "%s", line);
}

static int split_cap(const char *cap, caps_t *c, int k)
{
    char host[300], rid[64], key[300], tk[64], kind[16];
    int port;
    if (sscanf(cap, "ibp://%299[^:]:%d/%63[^#]#%299[^/]/%63[^/]/%15s", host, &port, rid, key, tk,
               kind) != 6)
        return -1;
    snprintf(c->cap[k], sizeof c->cap[k], "%s", cap);
    snprintf(c->key[k], sizeof c->key[k], "%s#%s", rid, key);
    snprintf(c->bare[k], sizeof c->bare[k], "%s", key);
    snprintf(c->tk[k], sizeof c->tk[k], "%s", tk);
    return 0;
}

/* ALLOCATE on fd (version v) and split the reply; IBP code. */
static int allocate(int fd, int v, int rel, long dur, long size, caps_t *c)
{
    char reply[4096], a[3][700];
    int rc = v == 0 ? raw_reqf(fd, reply, sizeof reply, "0 1 %d 1 %ld %ld 30\n", rel, dur, size)
                    : raw_reqf(fd, reply, sizeof reply, "1 1 0 %d 1 %ld %ld 30\n", rel, dur, size);
    if (rc != 1)
        return rc;
    if (sscanf(reply, "1 %699s %699s %699s", a[0], a[1], a[2]) != 3)
        return -1000;
    for (int k = 0; k < 3; k++)
        if (split_cap(a[k], c, k) < 0)
            return -1001;
    return 1;
}

static int new_alloc(caps_t *c, long size)
{
    int fd = td_conn(&D);
    int rc = allocate(fd, 1, 2, 3600, size, c);
    close(fd);
    CU_ASSERT_EQUAL(rc, 1);
    return rc;
}

/* Two-phase STORE of n bytes; returns the final code (or the first error). */
static int store(int fd, int v, const caps_t *c, const void *buf, size_t n)
{
    char reply[256];
    int rc = raw_reqf(fd, reply, sizeof reply, "%d 2 %s %s %zu 30\n", v, c->key[1], c->tk[1], n);
    if (rc != 1)
        return rc;
    if (strcmp(reply, "1 ") != 0)
        return -1002;
    if (raw_send(fd, buf, n) < 0 || raw_readline(fd, reply, sizeof reply) < 0)
        return -1000;
    char want[64];
    snprintf(want, sizeof want, "1 %zu", n);
    return strcmp(reply, want) == 0 ? 1 : raw_code(reply);
}

/* LOAD n bytes at off into buf; the code. */
static int load(int fd, int v, const char *key, const char *tk, long off, size_t n, void *buf)
{
    char reply[256], want[64];
    int rc = raw_reqf(fd, reply, sizeof reply, "%d 8 %s %s %ld %zu 30\n", v, key, tk, off, n);
    if (rc != 1)
        return rc;
    snprintf(want, sizeof want, "1 %zu", n);
    if (strcmp(reply, want) != 0)
        return -1003;
    return raw_read(fd, buf, n) == 0 ? 1 : -1000;
}

static void test_allocate_formats(void)
{
    char reply[4096], prefix[64];
    caps_t c;
    int fd = td_conn(&D);

    snprintf(prefix, sizeof prefix, "1 ibp://127.0.0.1:%d/0#", D.port);
    /* LoCI 1.3.1: version 0, no resource id */
    CU_ASSERT_EQUAL(req(fd, "0 1 2 1 3600 1024 30\n", reply, sizeof reply), 1);
    CU_ASSERT_NSTRING_EQUAL(reply, prefix, strlen(prefix));
    CU_ASSERT_EQUAL(reply[strlen(reply) - 1], ' '); /* the space before the newline */
    /* ACCRE 1.4: version 1 with resource 0 */
    CU_ASSERT_EQUAL(req(fd, "1 1 0 1 1 60 4096 30\n", reply, sizeof reply), 1);
    CU_ASSERT_NSTRING_EQUAL(reply, prefix, strlen(prefix));
    CU_ASSERT_EQUAL(reply[strlen(reply) - 1], ' ');
    char a[3][700];
    CU_ASSERT_EQUAL(sscanf(reply, "1 %699s %699s %699s", a[0], a[1], a[2]), 3);
    const char *kinds[3] = {"/READ", "/WRITE", "/MANAGE"};
    for (int k = 0; k < 3; k++) {
        CU_ASSERT_EQUAL(split_cap(a[k], &c, k), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(a[k], kinds[k]));
        CU_ASSERT_EQUAL(strlen(c.bare[k]), 48);
        CU_ASSERT(atol(c.tk[k]) >= 1 && atol(c.tk[k]) <= 2147483647L);
    }
    /* each capability has its own secret; the id part is shared */
    CU_ASSERT(strcmp(c.bare[0], c.bare[1]) != 0 && strcmp(c.bare[1], c.bare[2]) != 0);
    CU_ASSERT_NSTRING_EQUAL(c.bare[0], c.bare[1], 16);
    close(fd);
}

static void test_store_load_v0_v1(void)
{
    char data[70000], back[70000], reply[256];
    caps_t c;
    lns_test_fill(data, sizeof data, 11);
    CU_ASSERT_FATAL(new_alloc(&c, 100000) == 1);

    /* LoCI: one connection per operation, two-phase STORE */
    int fd = td_conn(&D);
    CU_ASSERT_EQUAL(store(fd, 0, &c, data, 1000), 1);
    close(fd);
    /* 1.4: pipelined STORE, the data right behind the header */
    fd = td_conn(&D);
    char hdr[512];
    int n = snprintf(hdr, sizeof hdr, "1 2 %s %s %d 30\n", c.key[1], c.tk[1], 69000);
    CU_ASSERT_EQUAL(raw_send(fd, hdr, (size_t)n), 0);
    CU_ASSERT_EQUAL(raw_send(fd, data + 1000, 69000), 0);
    CU_ASSERT_EQUAL(raw_readline(fd, reply, sizeof reply), 2);
    CU_ASSERT_STRING_EQUAL(reply, "1 ");
    CU_ASSERT(raw_readline(fd, reply, sizeof reply) > 0);
    CU_ASSERT_STRING_EQUAL(reply, "1 69000");
    /* v1 LOAD on the same connection, v0 LOAD with the bare key on a new one */
    CU_ASSERT_EQUAL(load(fd, 1, c.key[0], c.tk[0], 0, 70000, back), 1);
    CU_ASSERT_EQUAL(memcmp(back, data, 70000), 0);
    close(fd);
    fd = td_conn(&D);
    CU_ASSERT_EQUAL(load(fd, 0, c.bare[0], c.tk[0], 500, 1000, back), 1);
    CU_ASSERT_EQUAL(memcmp(back, data + 500, 1000), 0);
    /* LOAD of nothing, and beyond the end */
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 8 %s %s 70000 0 30\n", c.key[0], c.tk[0]), 1);
    CU_ASSERT_STRING_EQUAL(reply, "1 0");
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 8 %s %s 69999 2 30\n", c.key[0], c.tk[0]), -30);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "0 8 %s %s 70001 0 30\n", c.key[0], c.tk[0]), -30);
    /* still usable after those errors */
    CU_ASSERT_EQUAL(load(fd, 1, c.key[0], c.tk[0], 69990, 10, back), 1);
    CU_ASSERT_EQUAL(memcmp(back, data + 69990, 10), 0);
    /* WRITE at an offset (version 1 only) */
    n = snprintf(hdr, sizeof hdr, "1 13 %s %s 10 5 30\nHELLO", c.key[1], c.tk[1]);
    CU_ASSERT_EQUAL(raw_send(fd, hdr, (size_t)n), 0);
    CU_ASSERT(raw_readline(fd, reply, sizeof reply) > 0);
    CU_ASSERT_STRING_EQUAL(reply, "1 ");
    CU_ASSERT(raw_readline(fd, reply, sizeof reply) > 0);
    CU_ASSERT_STRING_EQUAL(reply, "1 5");
    CU_ASSERT_EQUAL(load(fd, 1, c.key[0], c.tk[0], 8, 9, back), 1);
    CU_ASSERT_EQUAL(memcmp(back, data + 8, 2), 0);
    CU_ASSERT_EQUAL(memcmp(back + 2, "HELLO", 5), 0);
    /* STORE past max_size: -19 and the connection closes */
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 2 %s %s 30001 30\n", c.key[1], c.tk[1]), -19);
    CU_ASSERT(raw_closed_by_peer(fd, 2000));
    close(fd);
    /* zero-length STORE */
    fd = td_conn(&D);
    CU_ASSERT_EQUAL(store(fd, 1, &c, "", 0), 1);
    close(fd);
}

static void test_manage(void)
{
    char reply[512];
    caps_t c;
    CU_ASSERT_FATAL(new_alloc(&c, 5000) == 1);
    int fd = td_conn(&D);
    CU_ASSERT_EQUAL(store(fd, 1, &c, "0123456789", 10), 1);

    /* PROBE, version 0 and 1, with any capability */
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "0 9 %s %s 40 3 0 0 0 30\n", c.key[2], c.tk[2]),
                    1);
    int rr, wr, rel, type;
    unsigned long long cur, max;
    long left;
    CU_ASSERT_EQUAL(sscanf(reply, "1 %d %d %llu %llu %ld %d %d", &rr, &wr, &cur, &max, &left, &rel,
                           &type), 7);
    CU_ASSERT(rr == 1 && wr == 1 && cur == 10 && max == 5000 && rel == 2 && type == 1);
    CU_ASSERT(left > 3590 && left <= 3600);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 40 1 0 0 0 30\n", c.key[0], c.tk[0]), 1);

    /* INCR / DECR */
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "0 9 %s %s 41 1 30\n", c.key[2], c.tk[2]), 1);
    CU_ASSERT_STRING_EQUAL(reply, "1 ");
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 41 2 30\n", c.key[2], c.tk[2]), 1);
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 9 %s %s 40 3 0 0 0 30\n", c.key[2], c.tk[2]),
                    1);
    CU_ASSERT_NSTRING_EQUAL(reply, "1 2 2 10 5000 ", 14);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 42 2 30\n", c.key[2], c.tk[2]), 1);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 41 3 30\n", c.key[2], c.tk[2]), -30);
    /* only the manage capability changes things */
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 41 1 30\n", c.key[0], c.tk[0]), -7);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 43 1 9000 0 0 30\n", c.key[1], c.tk[1]), -7);

    /* CHNG: size, duration, reliability; all or nothing */
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "0 9 %s %s 43 3 8000 100 1 30\n", c.key[2],
                         c.tk[2]), 1);
    CU_ASSERT_STRING_EQUAL(reply, "1 ");
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 9 %s %s 40 3 0 0 0 30\n", c.key[2], c.tk[2]),
                    1);
    CU_ASSERT_EQUAL(sscanf(reply, "1 %d %d %llu %llu %ld %d %d", &rr, &wr, &cur, &max, &left, &rel,
                           &type), 7);
    CU_ASSERT(max == 8000 && rel == 1 && left > 90 && left <= 100);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 43 3 5 0 0 30\n", c.key[2], c.tk[2]), -20);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 43 3 0 3601 0 30\n", c.key[2], c.tk[2]), -28);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 43 3 999999999999 0 0 30\n", c.key[2], c.tk[2]),
                    -19);
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 9 %s %s 40 3 0 0 0 30\n", c.key[2], c.tk[2]),
                    1);
    CU_ASSERT_NSTRING_EQUAL(reply, "1 2 1 10 8000 ", 14);

    /* TRUNCATE (version 1 only), as ACCRE 1.4: the max size becomes the new size, the
     * current size is cut to it if larger, never grown */
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 45 4 30\n", c.key[2], c.tk[2]), 1);
    char back[16];
    CU_ASSERT_EQUAL(load(fd, 1, c.key[0], c.tk[0], 0, 4, back), 1);
    CU_ASSERT_EQUAL(memcmp(back, "0123", 4), 0);
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 9 %s %s 40 3 0 0 0 30\n", c.key[2],
                             c.tk[2]), 1);
    CU_ASSERT_NSTRING_EQUAL(reply, "1 2 1 4 4 ", 10);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 45 8 30\n", c.key[2], c.tk[2]), 1);
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 9 %s %s 40 3 0 0 0 30\n", c.key[2],
                             c.tk[2]), 1);
    CU_ASSERT_NSTRING_EQUAL(reply, "1 2 1 4 8 ", 10);
    CU_ASSERT_EQUAL(load(fd, 1, c.key[0], c.tk[0], 0, 5, back), -30);
    close(fd);
    fd = td_conn(&D);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 45 999999999999 30\n", c.key[2], c.tk[2]),
                    -19);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 44 3 0 0 0 30\n", c.key[2], c.tk[2]), -25);
    close(fd);
    CU_ASSERT_EQUAL(td_reqf(&D, "0 9 %s %s 45 8 30\n", c.key[2], c.tk[2]), -25);
}

static void test_decr_frees(void)
{
    char reply[512];
    caps_t c;
    int fd = td_conn(&D);
    CU_ASSERT_EQUAL_FATAL(allocate(fd, 1, 2, 600, 1 << 20, &c), 1);
    CU_ASSERT_EQUAL(req(fd, "1 4 0 1 x 30\n", reply, sizeof reply), 1);
    long long used0 = atoll(strstr(reply, "UT:") + 3);
    CU_ASSERT_EQUAL(store(fd, 1, &c, "abc", 3), 1);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 42 1 30\n", c.key[2], c.tk[2]), 1);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 40 3 0 0 0 30\n", c.key[2], c.tk[2]), -4);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 8 %s %s 0 3 30\n", c.key[0], c.tk[0]), -4);
    CU_ASSERT_EQUAL(req(fd, "1 4 0 1 x 30\n", reply, sizeof reply), 1);
    CU_ASSERT_EQUAL(atoll(strstr(reply, "UT:") + 3), used0 - (1 << 20));
    close(fd);
}

static void test_status(void)
{
    char reply[1024], c;
    int fd = td_conn(&D);
    /* version 0: no status code, MB figures, a NUL, then the depot closes */
    CU_ASSERT(raw_cmd(fd, "0 4 1 x 30\n", reply, sizeof reply) > 0);
    int hard, hard_used, soft, soft_used, maj, min;
    long dur;
    CU_ASSERT_EQUAL(sscanf(reply, "%d %d %d %d %ld %d %d", &hard, &hard_used, &soft, &soft_used,
                           &dur, &maj, &min), 7);
    CU_ASSERT(hard == 64 && soft == 64 && dur == 3600 && maj == 1 && min == 4);
    CU_ASSERT_EQUAL(reply[strlen(reply) - 1], ' ');
    CU_ASSERT_EQUAL(recv(fd, &c, 1, 0), 1);
    CU_ASSERT_EQUAL(c, 0);
    CU_ASSERT(raw_closed_by_peer(fd, 2000));
    close(fd);

    /* version 1: "1 <n> \n" and n bytes of KEY:value, as ACCRE 1.4 answers */
    fd = td_conn(&D);
    CU_ASSERT_EQUAL(req(fd, "1 4 0 1 x 30\n", reply, sizeof reply), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(reply, " VS:1.4:1.0 DT:1 RID:0 RT:1 CT:134217728 ST:134217728 UT:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(reply, " SH:67108864 CH:67108864 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(reply, " SS:67108864 SU:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(reply, " RE"));
    CU_ASSERT_PTR_NOT_NULL(strstr(reply, " DR:3600 SS:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(reply, " NA:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(reply, " VR:"));
    CU_ASSERT_EQUAL(req(fd, "1 4 5 1 x 30\n", NULL, 0), -50);
    CU_ASSERT_EQUAL(req(fd, "1 4 0 3 x 30\n", NULL, 0), -25);
    close(fd);

    /* CHANGE: wrong password refused, right one applied */
    fd = td_conn(&D);
    CU_ASSERT_EQUAL(req(fd, "1 4 0 2 wrong 30\n100000000 0 7200\n", NULL, 0), -29);
    CU_ASSERT_EQUAL(req(fd, "1 4 0 1 x 30\n", reply, sizeof reply), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(reply, "CH:67108864 "));
    CU_ASSERT_EQUAL(req(fd, "1 4 0 2 " PW " 30\n100000000 0 7200\n", reply, sizeof reply), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(reply, "CH:100000000 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(reply, "DR:7200 "));
    CU_ASSERT_EQUAL(req(fd, "1 4 0 2 " PW " 30\n1 0 0\n", NULL, 0), -20);
    CU_ASSERT_EQUAL(req(fd, "1 4 0 2 " PW " 30\n67108864 67108864 3600\n", reply, sizeof reply), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(reply, "CH:67108864 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(reply, "DR:3600 "));
    close(fd);
    /* version 0 CHANGE, sent in one piece: "1 \n", then the INQUIRE line (days), closed */
    fd = td_conn(&D);
    CU_ASSERT_EQUAL(req(fd, "0 4 2 " PW "x 30\n64 64 1\n", NULL, 0), -29);
    close(fd);
}

static void test_keepalive(void)
{
    char data[4096], back[4096];
    caps_t c;
    int fd = td_conn(&D), ok = 0;
    for (int i = 0; i < 100; i++) {
        lns_test_fill(data, sizeof data, (uint64_t)i);
        if (allocate(fd, i % 2, 1 + i % 2, 600, 4096, &c) == 1 && store(fd, 1, &c, data, 4096) == 1 &&
            load(fd, i % 2, c.key[0], c.tk[0], 0, 4096, back) == 1 &&
            memcmp(back, data, 4096) == 0 &&
            raw_reqf(fd, NULL, 0, "1 9 %s %s 42 1 30\n", c.key[2], c.tk[2]) == 1)
            ok++;
    }
    CU_ASSERT_EQUAL(ok, 100);
    close(fd);
}

static void test_wrong_caps(void)
{
    char reply[256], forged[400];
    caps_t c;
    CU_ASSERT_FATAL(new_alloc(&c, 1000) == 1);
    int fd = td_conn(&D);
    CU_ASSERT_EQUAL(store(fd, 1, &c, "abcd", 4), 1);
    /* read cap to STORE: -5, and the depot closes (data might follow) */
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 2 %s %s 4 30\n", c.key[0], c.tk[0]), -5);
    CU_ASSERT(raw_closed_by_peer(fd, 2000));
    close(fd);
    fd = td_conn(&D);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 8 %s %s 0 4 30\n", c.key[1], c.tk[1]), -6);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 8 %s %s 0 4 30\n", c.key[2], c.tk[2]), -6);
    /* wrong type key, forged secret, unknown id, old-style key, wrong resource: all -4 */
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 8 %s %s 0 4 30\n", c.key[0], c.tk[1]), -4);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 8 %s 12345 0 4 30\n", c.key[0]), -4);
    snprintf(forged, sizeof forged, "%s", c.key[0]);
    char *last = forged + strlen(forged) - 1;
    *last = *last == 'a' ? 'b' : 'a';
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 8 %s %s 0 4 30\n", forged, c.tk[0]), -4);
    snprintf(forged, sizeof forged, "0#%s", c.bare[0]);
    forged[2] = forged[2] == 'f' ? 'e' : 'f';
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 8 %s %s 0 4 30\n", forged, c.tk[0]), -4);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "0 8 IBP-1559871234987123 701197658 0 4 30\n"), -4);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 8 1#%s %s 0 4 30\n", c.bare[0], c.tk[0]), -4);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 40 3 0 0 0 30\n", forged, c.tk[2]), -4);
    /* the genuine one still works on the same connection */
    CU_ASSERT_EQUAL(load(fd, 1, c.key[0], c.tk[0], 0, 4, reply), 1);
    close(fd);
    /* a write capability with a wrong type key to STORE */
    CU_ASSERT_EQUAL(td_reqf(&D, "1 2 %s %s 4 30\n", c.key[1], c.tk[0]), -4);
}

static void test_allocate_errors(void)
{
    static const struct {
        const char *line;
        int code;
    } cases[] = {
        {"1 1 0 2 1 3600 209715200 30\n", -19},
        {"1 1 0 1 1 3600 209715200 30\n", -19},
        {"1 1 0 2 1 3601 1024 30\n", -28},
        {"0 1 2 1 99999 1024 30\n", -28},
        {"1 1 0 2 1 0 1024 30\n", -33},
        {"1 1 0 2 1 -2 1024 30\n", -33},
        {"1 1 0 2 1 60 0 30\n", -36},
        {"1 1 0 2 1 60 -5 30\n", -36},
        {"1 1 0 3 1 60 10 30\n", -34},
        {"1 1 7 2 1 60 10 30\n", -50},
        {"1 1 0 2 2 60 10 30\n", -22},
        {"0 1 2 4 60 10 30\n", -22},
    };
    int fd = td_conn(&D);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int got = req(fd, cases[i].line, NULL, 0);
        if (got != cases[i].code)
            fprintf(stderr, "\n  want %d got %d for %s", cases[i].code, got, cases[i].line);
        CU_ASSERT_EQUAL(got, cases[i].code);
    }
    /* the connection survived all of these */
    caps_t c;
    CU_ASSERT_EQUAL(allocate(fd, 1, 2, -1, 10, &c), 1);
    close(fd);
}

/* Lines that must be answered with code and then a closed connection. */
static void expect_close(const char *line, size_t n, int want)
{
    char reply[256];
    int fd = td_conn(&D);
    if (raw_send(fd, line, n) < 0 || raw_readline(fd, reply, sizeof reply) < 0)
        reply[0] = 0;
    if (raw_code(reply) != want)
        fprintf(stderr, "\n  line '%.40s': want %d got '%s'\n", line, want, reply);
    CU_ASSERT_EQUAL(raw_code(reply), want);
    CU_ASSERT(raw_closed_by_peer(fd, 2000));
    close(fd);
}

static void test_malformed(void)
{
    static const struct {
        const char *line;
        int want;
    } cases[] = {
        {"\n", -21},
        {"   \n", -21},
        {"1\n", -21},
        {"1 1 0 2 1 3600\n", -21},
        {"1 1 0 2 1 3600 1024 30 9\n", -21},
        {"0 1 2 1 3600 1024\n", -21},
        {"1 1 0 2 x 3600 1024 30\n", -21},
        {"1 1 0 2 1 3600 1024 3O\n", -21},
        {"1 1 0 2 1 +3600 1024 30\n", -21},
        {"1 1 0 2 1 0x10 1024 30\n", -21},
        {"1 1 0 2 1 3600 99999999999999999999 30\n", -21},
        {"1 8 abc\n", -21},
        {"1 2 k t\n", -21},
        {"1 9 k t\n", -21},
        {"1 4 0 1\n", -21},
        {"1 x\n", -21},
        {"2 1 0 2 1 3600 1024 30\n", -27},
        {"-1 1 0 2 1 3600 1024 30\n", -27},
        {"x\n", -27},
        {"1 3 a b c\n", -25},
        {"1 6 a b c\n", -25},
        {"1 7 a b c\n", -25},
        {"1 26 a b c\n", -25}, /* PHOEBUS_SEND_CHKSUM: not supported */
        {"1 33 a b c\n", -21}, /* a vector WRITE whose count is not a number */
        {"1 17 a b c\n", -25}, /* ACCRE's Phoebus SEND: not supported */
        {"1 16 a b c\n", -21}, /* a rename whose timeout is not a number */
        {"1 99 a\n", -25},
        {"0 13 k t 0 1 30\n", -25},
        {"1 -5 a\n", -25},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        expect_close(cases[i].line, strlen(cases[i].line), cases[i].want);
    /* binary junk, NUL and control bytes, high bytes */
    expect_close("\x01\x02\xff\xfe\n", 5, -21);
    expect_close("1 1 0 2 1\0 3600 1024 30\n", 24, -21);
    expect_close("1 1 0 2 1 3600 1024 30\t\n", 24, -21);
    expect_close("1 8 k\xc3\xa9y 1 0 1 30\n", strlen("1 8 k\xc3\xa9y 1 0 1 30\n"), -21);
    /* an overlong line: -21 and closed, without waiting for its end */
    char *big = malloc(70000);
    CU_ASSERT_FATAL(big != NULL);
    memset(big, '1', 70000);
    big[1] = ' ';
    expect_close(big, 70000, -21);
    big[69999] = '\n';
    expect_close(big, 70000, -21);
    free(big);
    /* a line of exactly 65536 bytes (with its \n) is still read: ACCRE's vector requests
     * are up to ~30 KB */
    static char line[65536];
    memset(line, ' ', sizeof line);
    memcpy(line, "1 4 0 1 x 30", 12);
    line[sizeof line - 1] = '\n';
    int fd = td_conn(&D);
    CU_ASSERT_EQUAL(raw_send(fd, line, sizeof line), 0);
    char reply[512];
    CU_ASSERT(raw_readline(fd, reply, sizeof reply) > 0);
    CU_ASSERT_NSTRING_EQUAL(reply, "1 ", 2);
    close(fd);

    /* range errors of well-formed numbers keep the connection */
    fd = td_conn(&D);
    CU_ASSERT_EQUAL(req(fd, "1 8 0#0011 1 -1 1 30\n", NULL, 0), -30);
    CU_ASSERT_EQUAL(req(fd, "1 4 0 1 x 30\n", NULL, 0), 1);
    close(fd);
    /* and the depot still serves everyone */
    caps_t c;
    CU_ASSERT_EQUAL(new_alloc(&c, 100), 1);
}

/* The request lines the real clients send, byte for byte as seen on the wire (strace of
 * ACCRE 1.4's ibp_test; LoCI 1.3.1's IBP_status), and the answers they need. */
/* ACCRE 1.4 ibp_test's perform_manage_truncate_test, its request lines in order: 2 MiB
 * hard, 1 MiB written; CHNG to 512 KiB (data loss: refused), CHNG to 1 MiB + 1 (fine), then
 * TRUNCATE to 1/3 MiB: current and max size both 349525, the bytes before it intact. */
static void test_accre_truncate(void)
{
    enum { BUF = 1024 * 1024, POS = BUF / 3 };
    char reply[512];
    caps_t c;
    long long cur, max;
    int fd = td_conn(&D);
    char *buf = malloc(BUF), *back = malloc(BUF);
    CU_ASSERT_FATAL(buf && back);
    memset(buf, '*', BUF);
    buf[POS - 1] = 'A';
    buf[POS] = 'R';
    CU_ASSERT_EQUAL_FATAL(allocate(fd, 1, 2, 600, 2 * BUF, &c), 1);
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 13 %s %s 0 %d 30\n", c.key[1], c.tk[1],
                             BUF), 1);
    CU_ASSERT_EQUAL(raw_send(fd, buf, BUF), 0);
    CU_ASSERT(raw_readline(fd, reply, sizeof reply) > 0);
    CU_ASSERT_EQUAL(atoi(reply), 1);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 43 3 %d -1 -1 30\n", c.key[2], c.tk[2],
                             BUF / 2), -20);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 43 3 %d -1 -1 30\n", c.key[2], c.tk[2],
                             BUF + 1), 1);
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 9 %s %s 40 3 0 0 0 30\n", c.key[2],
                             c.tk[2]), 1);
    CU_ASSERT_EQUAL(sscanf(reply, "1 %*d %*d %lld %lld", &cur, &max), 2);
    CU_ASSERT(cur == BUF && max == BUF + 1);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 45 %d 30\n", c.key[2], c.tk[2], POS), 1);
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 9 %s %s 40 3 0 0 0 30\n", c.key[2],
                             c.tk[2]), 1);
    CU_ASSERT_EQUAL(sscanf(reply, "1 %*d %*d %lld %lld", &cur, &max), 2);
    CU_ASSERT(cur == POS && max == POS);
    CU_ASSERT_EQUAL(load(fd, 1, c.key[0], c.tk[0], 0, POS, back), 1);
    CU_ASSERT_EQUAL(memcmp(back, buf, POS), 0);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 42 1 30\n", c.key[2], c.tk[2]), 1);
    close(fd);
    free(buf);
    free(back);
}

/* ACCRE 1.4's vector WRITE (33) and READ (35): "1 33 <key> <typekey> <n> (<off> <len>)xn T",
 * the bytes of each range one after the other behind the line; "1 \n", then "1 <total>\n".
 * A READ answers "1 <total>\n" and the ranges' bytes in order. */
static void test_accre_vector(void)
{
    char reply[512], back[64];
    caps_t c;
    int fd = td_conn(&D);
    CU_ASSERT_EQUAL_FATAL(allocate(fd, 1, 2, 600, 4096, &c), 1);
    /* three ranges, out of order, leaving holes past the current size: they read as zeros */
    char line[256];
    int n = snprintf(line, sizeof line, "1 33 %s %s 3 20 3 0 3 10 3 30\ncccaaabbb", c.key[1],
                     c.tk[1]);
    CU_ASSERT_EQUAL(raw_send(fd, line, (size_t)n), 0);
    CU_ASSERT(raw_readline(fd, reply, sizeof reply) > 0);
    CU_ASSERT_STRING_EQUAL(reply, "1 ");
    CU_ASSERT(raw_readline(fd, reply, sizeof reply) > 0);
    CU_ASSERT_STRING_EQUAL(reply, "1 9");
    CU_ASSERT_EQUAL(load(fd, 1, c.key[0], c.tk[0], 0, 23, back), 1);
    CU_ASSERT_EQUAL(memcmp(back, "aaa\0\0\0\0\0\0\0bbb\0\0\0\0\0\0\0ccc", 23), 0);
    /* READ: the ranges in the order asked */
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 35 %s %s 3 20 3 0 2 10 4 30\n",
                             c.key[0], c.tk[0]), 1);
    CU_ASSERT_STRING_EQUAL(reply, "1 9");
    CU_ASSERT_EQUAL(raw_read(fd, back, 9), 0);
    CU_ASSERT_EQUAL(memcmp(back, "cccaabbb\0", 9), 0);
    /* past the current size: refused, the connection goes on */
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 35 %s %s 2 0 1 20 5 30\n", c.key[0], c.tk[0]),
                    -30);
    /* the wrong capability, too many ranges, a count that does not match */
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 35 %s %s 1 0 1 30\n", c.key[1], c.tk[1]), -6);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 35 %s %s 4097 0 1 30\n", c.key[0], c.tk[0]), -30);
    close(fd);
    CU_ASSERT_EQUAL(td_reqf(&D, "1 35 %s %s 2 0 1 30\n", c.key[0], c.tk[0]), -21);
    /* version 0 has no vector commands */
    CU_ASSERT_EQUAL(td_reqf(&D, "0 35 %s %s 1 0 1 30\n", c.key[0], c.tk[0]), -25);
}

static void test_real_clients(void)
{
    char reply[4096], body[1024];
    caps_t c, dst;
    int fd = td_conn(&D);

    /* ACCRE STATUS INQ: "1 <n> \n" and exactly n bytes of KEY:value, ending "RE \n" */
    CU_ASSERT_EQUAL(raw_send(fd, "1 4 0 1 ibp 30\n", 15), 0);
    CU_ASSERT(raw_readline(fd, reply, sizeof reply) > 0);
    int n = 0, used = 0;
    CU_ASSERT_EQUAL(sscanf(reply, "1 %d %n", &n, &used), 1);
    CU_ASSERT_EQUAL(reply[used], 0);
    CU_ASSERT_FATAL(n > 0 && n < (int)sizeof body);
    CU_ASSERT_EQUAL(raw_read(fd, body, (size_t)n), 0);
    body[n] = 0;
    CU_ASSERT_NSTRING_EQUAL(body, "VS:1.4:1.0 DT:1 RID:0 RT:1 CT:", 30);
    CU_ASSERT_STRING_EQUAL(body + n - 4, "RE \n");
    /* version and resource list (no password), on the same connection */
    CU_ASSERT_EQUAL(raw_send(fd, "1 4 5 30\n", 9), 0);
    CU_ASSERT(raw_readline(fd, reply, sizeof reply) > 0);
    CU_ASSERT_STRING_EQUAL(reply, "1");
    int lines = 0;
    while (raw_readline(fd, reply, sizeof reply) > 0 && strcmp(reply, "END") != 0 && lines < 20)
        lines++;
    CU_ASSERT_STRING_EQUAL(reply, "END");
    CU_ASSERT_EQUAL(req(fd, "1 4 3 30\n", reply, sizeof reply), 1);
    CU_ASSERT_STRING_EQUAL(reply, "1 0 ");

    /* CHNG with -1 for "unchanged": shrink the max size, keep duration and reliability */
    CU_ASSERT_EQUAL(allocate(fd, 1, 2, 600, 4096, &c), 1);
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 9 %s %s 43 3 2048 -1 -1 30\n", c.key[2],
                             c.tk[2]), 1);
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 9 %s %s 40 3 0 0 0 30 \n", c.key[2],
                             c.tk[2]), 1);
    int rr, wr, rel, type;
    long long cur, max, left;
    CU_ASSERT_EQUAL(sscanf(reply, "1 %d %d %lld %lld %lld %d %d", &rr, &wr, &cur, &max, &left,
                           &rel, &type), 7);
    CU_ASSERT(max == 2048 && left > 590 && left <= 600 && rel == 2);

    /* writes go on after a DECR of the write count, as in ACCRE 1.4 and LoCI 1.3.1 */
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 42 2 30\n", c.key[2], c.tk[2]), 1);
    CU_ASSERT_EQUAL(store(fd, 1, &c, "0123456789", 10), 1);

    /* SEND in ACCRE's order: empty path (two spaces), key, target cap, type key */
    CU_ASSERT_EQUAL(allocate(fd, 1, 2, 600, 4096, &dst), 1);
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 5  %s %s %s 0 10 30 30 30\n", c.key[0],
                             dst.cap[1], c.tk[0]), 1);
    CU_ASSERT_STRING_EQUAL(reply, "1 10");
    char back[16];
    CU_ASSERT_EQUAL(load(fd, 1, dst.key[0], dst.tk[0], 0, 10, back), 1);
    CU_ASSERT_EQUAL(memcmp(back, "0123456789", 10), 0);

    /* a vector WRITE of 14,689 bytes (1049 pairs) past the max size: read whole, refused
     * before any byte is taken (the bytes the client sends behind it: the connection ends) */
    static char vec[16384];
    size_t k = (size_t)snprintf(vec, sizeof vec, "1 33 %s %s 1049", c.key[1], c.tk[1]);
    for (int i = 0; i < 1049; i++)
        k += (size_t)snprintf(vec + k, sizeof vec - k, " %d 10000", i * 10000);
    k += (size_t)snprintf(vec + k, sizeof vec - k, " 30\n");
    CU_ASSERT(k > 4096);
    CU_ASSERT_EQUAL(raw_send(fd, vec, k), 0);
    CU_ASSERT(raw_readline(fd, reply, sizeof reply) > 0);
    CU_ASSERT_EQUAL(raw_code(reply), -19);
    close(fd);

    test_accre_truncate();
    test_accre_vector();

    /* LoCI 1.3.1 STATUS INQ with its default password "ibp\n": the timeout on a line of
     * its own */
    fd = td_conn(&D);
    CU_ASSERT(raw_cmd(fd, "0 4 1 ibp\n 30\n", reply, sizeof reply) > 0);
    long d;
    CU_ASSERT_EQUAL(sscanf(reply, "%*d %*d %*d %*d %ld", &d), 1);
    close(fd);

    /* LoCI 1.3.1 STATUS CHANGE: "1 \n" comes before the values are sent (days), then the
     * INQUIRE line */
    fd = td_conn(&D);
    CU_ASSERT_EQUAL(raw_cmd(fd, "0 4 2 " PW " 30\n", reply, sizeof reply) > 0, 1);
    CU_ASSERT_STRING_EQUAL(reply, "1 ");
    CU_ASSERT(raw_cmd(fd, "64 64 1 \n", reply, sizeof reply) > 0);
    CU_ASSERT_EQUAL(sscanf(reply, "%*d %*d %*d %*d %ld", &d), 1);
    CU_ASSERT_EQUAL(d, 86400);
    close(fd);
    fd = td_conn(&D);
    CU_ASSERT(raw_cmd(fd, "0 4 2 " PW " 30\n", reply, sizeof reply) > 0);
    CU_ASSERT(raw_cmd(fd, "64 64 0 \n", reply, sizeof reply) > 0); /* 0: unchanged */
    close(fd);
    fd = td_conn(&D);
    CU_ASSERT_EQUAL(req(fd, "1 4 0 2 " PW " 30\n0 0 3600\n", reply, sizeof reply), 1);
    close(fd);
}

/* A lease that runs out: refused at once, its space given back.  On a depot of its own whose
 * clock the test moves (LNS_TEST_CLOCK_FILE), so the ten minutes pass at once and no busy
 * machine can end them before the STORE. */
static void test_expiry(void)
{
    char reply[512], clock[PATH_MAX];
    caps_t c;
    test_depot_t t;
    CU_ASSERT_FATAL(td_start_clocked(&t, NULL, clock) == 0);
    int fd = td_connect(&t);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(req(fd, "1 4 0 1 x 30\n", reply, sizeof reply), 1);
    long long used0 = atoll(strstr(reply, "UT:") + 3);
    CU_ASSERT_EQUAL_FATAL(allocate(fd, 1, 2, 600, 3 << 20, &c), 1);
    CU_ASSERT_EQUAL(store(fd, 1, &c, "tick", 4), 1);
    CU_ASSERT_EQUAL(req(fd, "1 4 0 1 x 30\n", reply, sizeof reply), 1);
    CU_ASSERT_EQUAL(atoll(strstr(reply, "UT:") + 3), used0 + (3 << 20));
    td_clock_set(clock, 598); /* not yet */
    char buf[4];
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 8 %s %s 0 4 30\n", c.key[0], c.tk[0]), 1);
    CU_ASSERT(raw_read(fd, buf, 4) == 0 && memcmp(buf, "tick", 4) == 0);
    td_clock_set(clock, 601);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 40 3 0 0 0 30\n", c.key[2], c.tk[2]), -4);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 8 %s %s 0 4 30\n", c.key[0], c.tk[0]), -4);
    /* the reaper gives the space back (it looks twice a second) */
    long long used = -1;
    int64_t end = lns_test_deadline(LNS_TEST_WAIT_MS);
    do {
        const char *ut = req(fd, "1 4 0 1 x 30\n", reply, sizeof reply) == 1 ? strstr(reply, "UT:")
                                                                               : NULL;
        used = ut ? atoll(ut + 3) : -1;
    } while (used != used0 && lns_test_poll(end));
    CU_ASSERT_EQUAL(used, used0);
    close(fd);
    lns_test_server_finish(&t.srv);
}

/* Durations at and past the largest the config file accepts (max-duration: 100,000 years),
 * on a depot of the test's own: STATUS CHANGE refuses a longer max duration and keeps the old
 * one, and no duration (ALLOCATE, CHNG, -1 for "the maximum") can overflow now + duration
 * into a capability that has already expired (the depot aborted under UBSan). */
#define LIMIT_S "3153600000000"
static void test_duration_bounds(void)
{
    test_depot_t d;
    char reply[1024];
    caps_t c;
    int rr, wr, rel, type;
    unsigned long long cur, max;
    long long left;
    CU_ASSERT_EQUAL_FATAL(td_start(&d, "--admin-password " PW), 0);
    int fd = td_connect(&d);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(req(fd, "1 4 0 2 " PW " 30\n0 0 9223372036854775807\n", NULL, 0), -33);
    CU_ASSERT_EQUAL(req(fd, "1 4 0 2 " PW " 30\n0 0 3153600000001\n", NULL, 0), -33);
    /* version 0 (days): "1 \n" first, then the answer to the values, then closed */
    int fd0 = td_connect(&d);
    CU_ASSERT_FATAL(fd0 >= 0);
    CU_ASSERT_EQUAL(req(fd0, "0 4 2 " PW " 30\n0 0 9223372036854775807\n", NULL, 0), 1);
    CU_ASSERT_EQUAL(raw_readline(fd0, reply, sizeof reply) > 0 ? raw_code(reply) : 0, -33);
    close(fd0);
    CU_ASSERT_EQUAL(req(fd, "1 4 0 1 x 30\n", reply, sizeof reply), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(reply, " DR:3600 "));
    /* huge durations asked of the 3600 s maximum */
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 1 0 2 1 9223372036854775807 1024 30\n"), -28);

    /* the longest max duration allowed, and allocations that ask for all of it */
    CU_ASSERT_EQUAL(req(fd, "1 4 0 2 " PW " 30\n0 0 " LIMIT_S "\n", reply, sizeof reply), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(reply, " DR:" LIMIT_S " "));
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 1 0 2 1 9223372036854775807 1024 30\n"), -28);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 1 0 2 1 3153600000001 1024 30\n"), -28);
    CU_ASSERT_EQUAL_FATAL(allocate(fd, 1, 2, -1, 1024, &c), 1);
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 9 %s %s 40 3 0 0 0 30\n", c.key[2],
                             c.tk[2]), 1);
    CU_ASSERT_EQUAL(sscanf(reply, "1 %d %d %llu %llu %lld %d %d", &rr, &wr, &cur, &max, &left,
                           &rel, &type), 7);
    CU_ASSERT(left > 3153600000000LL - 60 && left <= 3153600000000LL);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 43 3 0 9223372036854775807 0 30\n",
                             c.key[2], c.tk[2]), -28);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 43 3 0 -1 0 30\n", c.key[2], c.tk[2]), 1);
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 9 %s %s 40 3 0 0 0 30\n", c.key[2],
                             c.tk[2]), 1);
    CU_ASSERT_EQUAL(sscanf(reply, "1 %d %d %llu %llu %lld %d %d", &rr, &wr, &cur, &max, &left,
                           &rel, &type), 7);
    CU_ASSERT(left > 3153600000000LL - 60 && left <= 3153600000000LL);
    CU_ASSERT_EQUAL(store(fd, 1, &c, "kept", 4), 1);
    close(fd);
    lns_test_server_finish(&d.srv);
}

static void test_send(void)
{
    test_depot_t t;
    char data[100000], back[100000], reply[256];
    caps_t src, dst;
    CU_ASSERT_FATAL(td_start(&t, NULL) == 0);
    lns_test_fill(data, sizeof data, 5);
    CU_ASSERT_FATAL(new_alloc(&src, sizeof data) == 1);
    int fd = td_conn(&D);
    CU_ASSERT_EQUAL(store(fd, 1, &src, data, sizeof data), 1);
    int tfd = td_connect(&t);
    CU_ASSERT_FATAL(tfd >= 0);
    CU_ASSERT_EQUAL(allocate(tfd, 1, 2, 600, 200000, &dst), 1);
    /* version 1 field order, then version 0 order (target cap before the type key) */
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 5 %s %s %s 0 60000 30 30 30\n", src.key[0],
                         src.tk[0], dst.cap[1]), 1);
    CU_ASSERT_STRING_EQUAL(reply, "1 60000");
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "0 5 %s %s %s 60000 40000 30 30 30\n",
                         src.key[0], dst.cap[1], src.tk[0]), 1);
    CU_ASSERT_STRING_EQUAL(reply, "1 40000");
    CU_ASSERT_EQUAL(load(tfd, 1, dst.key[0], dst.tk[0], 0, sizeof data, back), 1);
    CU_ASSERT_EQUAL(memcmp(back, data, sizeof data), 0);
    /* errors: beyond the end, a write cap as source, a target cap that is not a write cap or
     * not a capability, the target's own error, no target */
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 5 %s %s %s 99999 2 30 30 30\n", src.key[0], src.tk[0],
                         dst.cap[1]), -30);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 5 %s %s %s 0 2 30 30 30\n", src.key[1], src.tk[1],
                         dst.cap[1]), -6);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 5 %s %s %s 0 2 30 30 30\n", src.key[0], src.tk[0],
                         dst.cap[0]), -8);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 5 %s %s ibp://nowhere/x 0 2 30 30 30\n", src.key[0],
                         src.tk[0]), -11);
    caps_t tiny;
    CU_ASSERT_EQUAL(allocate(tfd, 1, 2, 600, 10, &tiny), 1);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 5 %s %s %s 0 100 30 30 30\n", src.key[0], src.tk[0],
                         tiny.cap[1]), -19);
    int port = t.port;
    lns_test_server_finish(&t.srv);
    char gone[800];
    snprintf(gone, sizeof gone, "ibp://127.0.0.1:%d/0#%s/%s/WRITE", port, dst.bare[1], dst.tk[1]);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 5 %s %s %s 0 2 30 30 5\n", src.key[0], src.tk[0], gone),
                    -13);
    close(fd);
    close(tfd);
}

static void test_event_log(void)
{
    test_depot_t t;
    caps_t c;
    char line[8192];
    CU_ASSERT_FATAL(td_start(&t, NULL) == 0);
    int fd = td_connect(&t);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(allocate(fd, 1, 2, 600, 100, &c), 1);                     /* 1 */
    CU_ASSERT_EQUAL(store(fd, 1, &c, "12345", 5), 1);                         /* 2 */
    CU_ASSERT_EQUAL(load(fd, 1, c.key[0], c.tk[0], 0, 5, line), 1);           /* 3 */
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 8 %s %s 0 9 30\n", c.key[0], c.tk[0]), -30); /* 4 */
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 40 3 0 0 0 30\n", c.key[2], c.tk[2]), 1); /* 5 */
    CU_ASSERT_EQUAL(req(fd, "1 4 0 1 x 30\n", NULL, 0), 1);                   /* 6 */
    CU_ASSERT_EQUAL(req(fd, "1 99\n", NULL, 0), -25);                         /* 7 */
    close(fd);
    lns_test_server_finish(&t.srv);
    CU_ASSERT_EQUAL(td_count_events(&t, "IBP_REQ 127.0.0.1 "), 7);
    CU_ASSERT_EQUAL(td_count_events(&t, " cmd=STORE "), 1);
    CU_ASSERT_EQUAL(td_count_events_of(&t, "IBP_REQ", " result=-30"), 1);
    CU_ASSERT_EQUAL(td_count_events(&t, " cmd=LOAD "), 2);
    CU_ASSERT_EQUAL(td_count_events_of(&t, "IBP_REQ", " bytes=5 "), 2);
    char id[17];
    snprintf(id, sizeof id, "%.16s", c.bare[0]);
    CU_ASSERT_EQUAL(td_count_events_of(&t, "IBP_REQ", id), 5);
    /* the life of the two LOADs (docs/netlogger.md): received, sent from the file, ended;
     * the one past the end of the data ends at once with its error */
    CU_ASSERT_EQUAL(td_count_events_of(&t, "IBP_LOAD_RECV", id), 2);
    CU_ASSERT_EQUAL(td_count_events_of(&t, "IBP_LOAD_READ_START", " off=0 len=5"), 1);
    CU_ASSERT_EQUAL(td_count_events_of(&t, "IBP_LOAD_SEND_END", " bytes=5 result=1"), 1);
    CU_ASSERT_EQUAL(td_count_events_of(&t, "IBP_LOAD_SEND_END", " bytes=0 result=-30"), 1);
    for (int k = 0; k < 3; k++) {
        CU_ASSERT_EQUAL(td_count_events(&t, c.bare[k] + 16), 0); /* no secret */
        CU_ASSERT_EQUAL(td_count_events(&t, c.bare[k]), 0);
    }
    /* the same for the diagnostic log */
    FILE *f = fopen(t.log, "r");
    int leaks = 0;
    while (f && fgets(line, sizeof line, f))
        for (int k = 0; k < 3; k++)
            leaks += strstr(line, c.bare[k] + 16) != NULL;
    if (f)
        fclose(f);
    CU_ASSERT_EQUAL(leaks, 0);
    /* a fixed format: EVENT host sec.nsec key=value... */
    f = fopen(t.events, "r");
    CU_ASSERT_FATAL(f != NULL);
    int good = 0;
    while (fgets(line, sizeof line, f)) {
        long long sec;
        long nsec;
        char host[64];
        if (sscanf(line, "IBP_REQ %63s %lld.%9ld client=127.0.0.1:", host, &sec, &nsec) == 3 &&
            strstr(line, " dur_us=") && strstr(line, " off=") && strstr(line, " len="))
            good++;
    }
    fclose(f);
    CU_ASSERT_EQUAL(good, 7);
}

static void test_event_sampling(void)
{
    test_depot_t t;
    CU_ASSERT_FATAL(td_start(&t, "--event-sample 10") == 0);
    int fd = td_connect(&t);
    CU_ASSERT_FATAL(fd >= 0);
    for (int i = 0; i < 100; i++)
        CU_ASSERT_EQUAL(req(fd, "1 4 0 1 x 30\n", NULL, 0), 1);
    close(fd);
    lns_test_server_finish(&t.srv);
    CU_ASSERT_EQUAL(td_count_events(&t, "IBP_REQ"), 10);
}

/* Events are batched, but written while the depot runs: a depot SIGKILLed once they are on
 * disk (within 50 ms; polled for, as a busy machine may take longer) loses none. */
static void test_event_log_periodic(void)
{
    test_depot_t t;
    CU_ASSERT_FATAL(td_start(&t, NULL) == 0);
    int fd = td_connect(&t);
    CU_ASSERT_FATAL(fd >= 0);
    for (int i = 0; i < 25; i++)
        CU_ASSERT_EQUAL(req(fd, "1 4 0 1 x 30\n", NULL, 0), 1);
    int64_t end = lns_test_deadline(LNS_TEST_WAIT_MS);
    while (td_count_events(&t, "IBP_REQ") < 25 && lns_test_poll(end))
        ;
    CU_ASSERT_EQUAL(td_count_events(&t, "IBP_REQ"), 25); /* already there, depot running */
    lns_test_server_kill(&t.srv, SIGKILL);
    close(fd);
    CU_ASSERT_EQUAL(td_count_events(&t, "IBP_REQ"), 25);
}

/* Last: SIGTERM ends the shared depot within the drain time and nothing was reported. */
static void test_shutdown_clean(void)
{
    static char log[1 << 20];
    int64_t t0 = lns_mono_ms();
    int fd = td_conn(&D); /* an idle connection must not hold the shutdown up */
    lns_test_server_stop(&D.srv);
    CU_ASSERT(lns_mono_ms() - t0 < 30000); /* a hang only */
    lns_test_slurp(D.srv.log, log, sizeof log); /* not cut off at the end of the drain time */
    CU_ASSERT_PTR_NULL(strstr(log, "connections still busy"));
    CU_ASSERT(lns_test_server_log_clean(&D.srv));
    close(fd);
}

/* The LoCI 1.3.1 smoketest's lines (strace of ibp-test against two 1.3.1 depots): its CIRQ
 * allocation is refused with -22 (docs/interop.md: lns does not do BUFFER/FIFO/CIRQ), and a
 * version-0 LOAD past the current size waits for the bytes, as a 1.3.1 depot does. */
static void test_loci_wait_load(void)
{
    char reply[4096], a[3][700], buf[128];
    caps_t c;
    int fd = td_conn(&D), fd2 = td_conn(&D);

    const char *queues[] = {"0 1 2 4 86400 102400 10\n", "0 1 2 3 86400 102400 10\n",
                            "0 1 2 2 86400 102400 10\n"};
    for (int k = 0; k < 3; k++) {
        int q = td_conn(&D);
        CU_ASSERT_EQUAL(req(q, queues[k], NULL, 0), -22);
        close(q);
    }
    /* (the smoketest asks 86400 s; this depot allows less) */
    int arc = req(fd, "0 1 2 1 600 1024000 10\n", reply, sizeof reply);
    if (arc != 1)
        fprintf(stderr, "allocate: %d %s\n", arc, reply);
    CU_ASSERT_EQUAL_FATAL(arc, 1);
    CU_ASSERT_FATAL(sscanf(reply, "1 %699s %699s %699s", a[0], a[1], a[2]) == 3);
    for (int k = 0; k < 3; k++)
        CU_ASSERT_FATAL(split_cap(a[k], &c, k) == 0);
    /* its STORE line: "0 2 <key> <typekey> <len> <T> \n" */
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "0 2 %s %s 10 10 \n", c.bare[1], c.tk[1]), 1);
    CU_ASSERT_EQUAL(raw_send(fd, "0123456789", 10), 0);
    CU_ASSERT(raw_readline(fd, reply, sizeof reply) > 0);
    CU_ASSERT_STRING_EQUAL(reply, "1 10");

    /* a LOAD of 30 bytes waits; a STORE of 20 on another connection releases it */
    char line[1024];
    int n = snprintf(line, sizeof line, "0 8 %s %s 0 30 10 \n", c.bare[0], c.tk[0]);
    CU_ASSERT_EQUAL(raw_send(fd, line, (size_t)n), 0);
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    CU_ASSERT_EQUAL(poll(&pfd, 1, 300), 0); /* nothing yet */
    CU_ASSERT_EQUAL(raw_reqf(fd2, reply, sizeof reply, "0 2 %s %s 20 10 \n", c.bare[1], c.tk[1]), 1);
    CU_ASSERT_EQUAL(raw_send(fd2, "abcdefghijklmnopqrst", 20), 0);
    CU_ASSERT(raw_readline(fd2, reply, sizeof reply) > 0);
    CU_ASSERT(raw_readline(fd, reply, sizeof reply) > 0);
    CU_ASSERT_STRING_EQUAL(reply, "1 30");
    CU_ASSERT_EQUAL(raw_read(fd, buf, 30), 0);
    CU_ASSERT_EQUAL(memcmp(buf, "0123456789abcdefghijklmnopqrst", 30), 0);

    /* nothing more comes: after the server timeout (1 s) what there is, or -46 if nothing
     * past the offset; with a timeout of 0, at once */
    int64_t t0 = lns_mono_ms();
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "0 8 %s %s 20 50 1 \n", c.bare[0], c.tk[0]), 1);
    CU_ASSERT_STRING_EQUAL(reply, "1 10");
    CU_ASSERT_EQUAL(raw_read(fd, buf, 10), 0);
    CU_ASSERT_EQUAL(memcmp(buf, "klmnopqrst", 10), 0);
    /* the request's 1 s, not the depot's 300 s maximum (20 s: a busy machine) */
    int64_t waited = lns_mono_ms() - t0;
    CU_ASSERT(waited >= 900 && waited < 20000);
    t0 = lns_mono_ms();
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "0 8 %s %s 40 10 1 \n", c.bare[0], c.tk[0]), -46);
    waited = lns_mono_ms() - t0;
    CU_ASSERT(waited >= 900 && waited < 20000);
    t0 = lns_mono_ms();
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "0 8 %s %s 0 80 0 \n", c.bare[0], c.tk[0]), 1);
    CU_ASSERT_STRING_EQUAL(reply, "1 30");
    CU_ASSERT_EQUAL(raw_read(fd, buf, 30), 0);
    /* past the maximum size, and in version 1: -30 at once (30 s: a hang bound, each would
     * wait its minute) */
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "0 8 %s %s 1023990 20 60 \n", c.bare[0], c.tk[0]), -30);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 8 %s %s 0 80 60\n", c.key[0], c.tk[0]), -30);
    CU_ASSERT(lns_mono_ms() - t0 < 30000);
    close(fd);
    close(fd2);
}

/* --admin-password on the command line: blanked in the running depot's argv (what ps shows)
 * and a warning in its log; the password still works (test_status). */
static void test_password_off_cmdline(void)
{
    char path[PATH_MAX], cmdline[8192] = "", log[65536] = "";
    snprintf(path, sizeof path, "/proc/%d/cmdline", D.pid);
    FILE *f = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    size_t n = fread(cmdline, 1, sizeof cmdline - 1, f);
    fclose(f);
    for (size_t i = 0; i < n; i++)
        if (!cmdline[i])
            cmdline[i] = ' ';
    cmdline[n] = 0;
    CU_ASSERT_PTR_NOT_NULL(strstr(cmdline, "--admin-password"));
    CU_ASSERT_PTR_NULL(strstr(cmdline, PW));
    lns_test_slurp(D.log, log, sizeof log);
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "--admin-password on the command line can be read"));
}

static const lns_test_case tests[] = {
    {"ALLOCATE v0/v1 reply format", test_allocate_formats},
    {"STORE two-phase and pipelined, LOAD v0/v1, WRITE", test_store_load_v0_v1},
    {"MANAGE PROBE/INCR/DECR/CHNG/TRUNCATE", test_manage},
    {"DECR of the read count frees", test_decr_frees},
    {"STATUS v0/v1 and CHANGE", test_status},
    {"--admin-password blanked in ps, with a warning", test_password_off_cmdline},
    {"the real clients' request lines", test_real_clients},
    {"LoCI 1.3.1 smoketest lines: queue types refused, v0 LOAD waits for data", test_loci_wait_load},
    {"keep-alive", test_keepalive},
    {"wrong capability kinds and forged keys", test_wrong_caps},
    {"ALLOCATE errors", test_allocate_errors},
    {"malformed lines", test_malformed},
    {"expiry", test_expiry},
    {"durations at the config's bound, no overflow", test_duration_bounds},
    {"SEND (third-party copy)", test_send},
    {"event log", test_event_log},
    {"event sampling", test_event_sampling},
    {"event log written within 50 ms", test_event_log_periodic},
    {"shutdown on SIGTERM, clean log", test_shutdown_clean},
};

LNS_TEST_MAIN_WITH("depot_wire", suite_init, suite_clean, tests)
