/* test_depot_accre.c -- ACCRE IBP 1.4's RENAME (16), SPLIT (18), MERGE (19), PUSH (20) and
 * PULL (21) on real ibp_depots.
 *
 * The request lines are those ACCRE 1.4's ibp_test sends, taken from the wire (strace of
 * ibp_test against two ACCRE depots; src/ibp/op_cmd.c formats them):
 *   "1 16 1#<key> <typekey> 30\n"                                   rename (manage cap)
 *   "1 18 1#<mkey> <mtypekey> 2 1 900 1024 30\n"                     split (master's manage cap;
 *                                                                    reliability type duration size)
 *   "1 19 1#<mkey> <mtypekey> 1#<ckey> <ctypekey> 30\n"               merge (both manage caps)
 *   "1 20 1  1#<rkey> ibp://host:port/1#<key>/<tk>/WRITE <rtk> 0 -1 1 30 30 30\n"
 *                                   push: ctype 1 (TCP), an empty path (two spaces), the local
 *                                   read key, the remote write cap, the local type key, local
 *                                   offset, remote offset (-1: append), length, three timeouts
 *   "1 21 1  1#<wkey> ibp://host:port/1#<key>/<tk>/READ <wtk> -1 0 1 30 30 30\n"
 *                                   pull: the local write key (offset -1: append) and the remote
 *                                   read cap (offset 0)
 * and the sequences of its rename, perform_splitmerge_tests and perform_pushpull_tests.  The
 * answers are ACCRE's: three capabilities ending " \n" for 16 and 18, "1 \n" for 19, "1 <len> \n"
 * for 20 and 21. */
#include <CUnit/CUnit.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lns_test.h"
#include "test_depot.h"

static test_depot_t D1, D2;

typedef raw_caps_t caps_t;

static int suite_init(void)
{
    return td_start(&D1, NULL) == 0 && td_start(&D2, NULL) == 0 ? 0 : -1;
}

static int suite_clean(void)
{
    lns_test_server_stop(&D1.srv);
    lns_test_server_stop(&D2.srv);
    return 0;
}

/* ALLOCATE as ibp_test does (hard, byte array, 900 s). */
static int allocate(int fd, long size, caps_t *c)
{
    return raw_allocate(fd, c, "1 1 0 2 1 900 %ld 30\n", size);
}

/* PROBE (ACCRE's line) into cur and max. */
static int probe(int fd, const caps_t *c, long *cur, long *max)
{
    char reply[256];
    long r, w;
    int rc = raw_reqf(fd, reply, sizeof reply, "1 9 %s %s 40 3 0 0 0 30 \n", c->key[2], c->tk[2]);
    if (rc != 1)
        return rc;
    return sscanf(reply, "1 %ld %ld %ld %ld", &r, &w, cur, max) == 4 ? 1 : -1000;
}

static int rename_caps(int fd, const caps_t *c, caps_t *out)
{
    char reply[4096];
    int rc = raw_reqf(fd, reply, sizeof reply, "1 16 %s %s 30\n", c->key[2], c->tk[2]);
    if (rc != 1)
        return rc;
    CU_ASSERT_EQUAL(reply[strlen(reply) - 1], ' ');
    return raw_caps(reply, out) == 0 ? 1 : -1000;
}

static int split_alloc(int fd, const caps_t *m, long size, caps_t *out)
{
    char reply[4096];
    int rc = raw_reqf(fd, reply, sizeof reply, "1 18 %s %s 2 1 900 %ld 30\n", m->key[2], m->tk[2],
                      size);
    if (rc != 1)
        return rc;
    CU_ASSERT_EQUAL(reply[strlen(reply) - 1], ' ');
    return raw_caps(reply, out) == 0 ? 1 : -1000;
}

static int merge(int fd, const caps_t *m, const caps_t *c)
{
    char reply[256];
    int rc = raw_reqf(fd, reply, sizeof reply, "1 19 %s %s %s %s 30\n", m->key[2], m->tk[2],
                      c->key[2], c->tk[2]);
    if (rc == 1)
        CU_ASSERT_STRING_EQUAL(reply, "1 ");
    return rc;
}

/* PUSH (20) or PULL (21): local is the key the depot acts on (read cap for a push, write cap
 * for a pull), remote the other depot's capability; the reply must carry len. */
static int copy(int fd, int cmd, const caps_t *local, int k, const char *remote, long loff,
                long roff, long len)
{
    char reply[256], want[64];
    int rc = raw_reqf(fd, reply, sizeof reply, "1 %d 1  %s %s %s %ld %ld %ld 30 30 30\n", cmd,
                      local->key[k], remote, local->tk[k], loff, roff, len);
    if (rc != 1)
        return rc;
    snprintf(want, sizeof want, "1 %ld ", len);
    CU_ASSERT_STRING_EQUAL(reply, want);
    return 1;
}

/* The size of the own file that holds the bytes of c's allocation on depot d, or -1. */
static long file_size(const test_depot_t *d, const caps_t *c)
{
    char path[PATH_MAX + 64];
    const char *key = strchr(c->key[0], '#') + 1; /* 16 hex of the id, then the secret */
    struct stat sb;
    snprintf(path, sizeof path, "%s/res0/data/%.2s/%.16s", d->dir, key, key);
    return stat(path, &sb) < 0 ? -1 : (long)sb.st_size;
}

/* ibp_test's rename test: the old capabilities stop working, the new ones reach the same
 * bytes; and a restart keeps it so. */
static void test_rename(void)
{
    char buf[256];
    caps_t c, n, al;
    int fd = td_conn(&D1);

    CU_ASSERT_EQUAL_FATAL(allocate(fd, 1024, &c), 1);
    CU_ASSERT_EQUAL(raw_put(fd, &c, -1, "This is a test.", 15), 1);
    char reply[4096];
    CU_ASSERT_EQUAL_FATAL(raw_reqf(fd, reply, sizeof reply, "1 14 %s %s 0 0 0 30\n", c.key[2],
                                   c.tk[2]), 1);
    CU_ASSERT_EQUAL_FATAL(raw_caps(reply, &al), 0);
    /* only the manage capability renames */
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 16 %s %s 30\n", c.key[0], c.tk[0]), -7);
    CU_ASSERT_EQUAL_FATAL(rename_caps(fd, &c, &n), 1);
    for (int k = 0; k < 3; k++)
        CU_ASSERT(strcmp(n.key[k], c.key[k]) != 0);
    CU_ASSERT_EQUAL(raw_get(fd, &c, 0, 15, buf), -4);
    CU_ASSERT_EQUAL(raw_put(fd, &c, -1, "x", 1), -4);
    fd = td_conn(&D1); /* a refused STORE closes the connection */
    CU_ASSERT_EQUAL(raw_get(fd, &n, 0, 15, buf), 1);
    CU_ASSERT_STRING_EQUAL(buf, "This is a test.");
    CU_ASSERT_EQUAL(raw_get(fd, &al, 0, 15, buf), 1); /* an alias names the allocation, not its keys */
    long cur, max;
    CU_ASSERT_EQUAL(probe(fd, &c, &cur, &max), -4);
    CU_ASSERT_EQUAL(probe(fd, &n, &cur, &max), 1);
    CU_ASSERT_EQUAL(cur, 15);
    close(fd);

    lns_test_server_kill(&D1.srv, SIGKILL); /* committed before answered */
    CU_ASSERT_EQUAL_FATAL(td_restart(&D1), 0);
    fd = td_conn(&D1);
    CU_ASSERT_EQUAL(raw_get(fd, &c, 0, 15, buf), -4);
    CU_ASSERT_EQUAL(raw_get(fd, &n, 0, 15, buf), 1);
    CU_ASSERT_STRING_EQUAL(buf, "This is a test.");
    /* ibp_test then removes it with the new manage capability */
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 42 1 30\n", n.key[2], n.tk[2]), 1);
    CU_ASSERT_EQUAL(raw_get(fd, &n, 0, 15, buf), -4);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 16 %s %s 30\n", n.key[2], n.tk[2]), -4);
    close(fd);
}

/* perform_splitmerge_tests, line by line. */
static void test_splitmerge_sequence(void)
{
    char wbuf[2049], rbuf[2049];
    caps_t m, c, c2;
    long cur, max;
    int fd = td_conn(&D1);

    memset(wbuf, '0', 2048);
    wbuf[1023] = '1';
    wbuf[1024] = '2';
    wbuf[2048] = '\0';
    CU_ASSERT_EQUAL_FATAL(allocate(fd, 2048, &m), 1);
    CU_ASSERT_EQUAL(raw_put(fd, &m, -1, wbuf, 2048), 1);
    CU_ASSERT_EQUAL_FATAL(split_alloc(fd, &m, 1024, &c), 1);
    CU_ASSERT_EQUAL(probe(fd, &m, &cur, &max), 1);
    CU_ASSERT(cur == 1024 && max == 1024); /* the master's tail went with its space */
    CU_ASSERT_EQUAL(probe(fd, &c, &cur, &max), 1);
    CU_ASSERT(cur == 0 && max == 1024);
    wbuf[1024] = '\0';
    CU_ASSERT_EQUAL(raw_get(fd, &m, 0, 1024, rbuf), 1);
    CU_ASSERT_STRING_EQUAL(rbuf, wbuf);
    CU_ASSERT_EQUAL(raw_get(fd, &m, 1000, 25, rbuf), -30); /* past its size now */
    CU_ASSERT_EQUAL(raw_put(fd, &c, -1, wbuf, 1024), 1);
    CU_ASSERT_EQUAL(raw_get(fd, &c, 0, 1024, rbuf), 1);
    CU_ASSERT_STRING_EQUAL(rbuf, wbuf);
    /* too big: refused (-19, as ACCRE) and the master unchanged */
    CU_ASSERT_EQUAL(split_alloc(fd, &m, 2048, &c2), -19);
    fd = td_conn(&D1);
    CU_ASSERT_EQUAL(probe(fd, &m, &cur, &max), 1);
    CU_ASSERT(cur == 1024 && max == 1024);
    CU_ASSERT_EQUAL(merge(fd, &m, &c), 1);
    CU_ASSERT_EQUAL(probe(fd, &c, &cur, &max), -4);
    CU_ASSERT_EQUAL(raw_get(fd, &c, 0, 10, rbuf), -4);
    CU_ASSERT_EQUAL(probe(fd, &m, &cur, &max), 1);
    CU_ASSERT(cur == 1024 && max == 2048);
    CU_ASSERT_EQUAL(raw_get(fd, &m, 0, 1024, rbuf), 1);
    CU_ASSERT_STRING_EQUAL(rbuf, wbuf);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 42 1 30\n", m.key[2], m.tk[2]), 1);
    close(fd);
}

/* Space and slots: a split gives the child the master's space (the resource's use does not
 * change), a merge gives it back; a merge that grows a slab master past its slot moves it to
 * a file; a split of an own-file master cuts its file.  A refused merge changes nothing. */
static void test_split_merge_space(void)
{
    static char big[200001], back[200001];
    caps_t m, c, s, o;
    long cur, max;
    int fd = td_conn(&D1);
    lns_test_fill((unsigned char *)big, 200000, 7);

    CU_ASSERT_EQUAL_FATAL(allocate(fd, 40000, &m), 1); /* a 64 KiB slot */
    CU_ASSERT_EQUAL(raw_put(fd, &m, -1, big, 30000), 1);
    CU_ASSERT_EQUAL_FATAL(allocate(fd, 40000, &c), 1);
    CU_ASSERT_EQUAL(raw_put(fd, &c, -1, big, 100), 1);
    /* a child someone else holds a count on is not merged (ACCRE: -1) */
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 41 1 30\n", c.key[2], c.tk[2]), 1);
    CU_ASSERT_EQUAL(merge(fd, &m, &c), -1);
    fd = td_conn(&D1);
    CU_ASSERT_EQUAL(probe(fd, &c, &cur, &max), 1);
    CU_ASSERT(cur == 100 && max == 40000);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 42 1 30\n", c.key[2], c.tk[2]), 1);
    /* not into itself, and only with manage capabilities */
    CU_ASSERT_EQUAL(merge(fd, &m, &m), -30);
    fd = td_conn(&D1);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 19 %s %s %s %s 30\n", m.key[2], m.tk[2], c.key[0],
                             c.tk[0]), -7);
    fd = td_conn(&D1);
    CU_ASSERT_EQUAL(merge(fd, &m, &c), 1); /* 80000: past the master's slot */
    CU_ASSERT_EQUAL(probe(fd, &m, &cur, &max), 1);
    CU_ASSERT(cur == 30000 && max == 80000);
    CU_ASSERT_EQUAL(raw_put(fd, &m, -1, big + 30000, 50000), 1);
    CU_ASSERT_EQUAL(raw_get(fd, &m, 0, 80000, back), 1);
    CU_ASSERT(memcmp(back, big, 80000) == 0);

    CU_ASSERT_EQUAL_FATAL(allocate(fd, 200000, &o), 1); /* an own file */
    CU_ASSERT_EQUAL(raw_put(fd, &o, -1, big, 200000), 1);
    CU_ASSERT_EQUAL_FATAL(split_alloc(fd, &o, 150000, &s), 1);
    CU_ASSERT_EQUAL(probe(fd, &o, &cur, &max), 1);
    CU_ASSERT(cur == 50000 && max == 50000);
    CU_ASSERT_EQUAL(file_size(&D1, &o), 50000); /* its file's tail is gone */
    CU_ASSERT_EQUAL(raw_put(fd, &s, -1, big, 150000), 1);
    close(fd);

    lns_test_server_kill(&D1.srv, SIGKILL);
    CU_ASSERT_EQUAL_FATAL(td_restart(&D1), 0);
    fd = td_conn(&D1);
    CU_ASSERT_EQUAL(raw_get(fd, &m, 0, 80000, back), 1);
    CU_ASSERT(memcmp(back, big, 80000) == 0);
    CU_ASSERT_EQUAL(raw_get(fd, &o, 0, 50000, back), 1);
    CU_ASSERT(memcmp(back, big, 50000) == 0);
    CU_ASSERT_EQUAL(raw_get(fd, &s, 0, 150000, back), 1);
    CU_ASSERT(memcmp(back, big, 150000) == 0);
    CU_ASSERT_EQUAL(raw_get(fd, &c, 0, 10, back), -4);
    CU_ASSERT_EQUAL(probe(fd, &s, &cur, &max), 1);
    CU_ASSERT(cur == 150000 && max == 150000);
    for (const caps_t *x = &m; x; x = x == &m ? &o : x == &o ? &s : NULL)
        CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 42 1 30\n", x->key[2], x->tk[2]), 1);
    close(fd);
}

/* perform_pushpull_tests: caps1 on one depot, caps2 on the other. */
static void test_pushpull_sequence(void)
{
    char buf[64];
    caps_t c1, c2;
    int f1 = td_conn(&D1), f2 = td_conn(&D2);

    CU_ASSERT_EQUAL_FATAL(allocate(f1, 2048, &c1), 1);
    CU_ASSERT_EQUAL_FATAL(allocate(f2, 2048, &c2), 1);
    CU_ASSERT_EQUAL(raw_put(f1, &c1, -1, "1", 1), 1);
    CU_ASSERT_EQUAL(copy(f1, 20, &c1, 0, c2.cap[1], 0, -1, 1), 1);  /* append to cap2: "1" */
    CU_ASSERT_EQUAL(copy(f1, 21, &c1, 1, c2.cap[0], -1, 0, 1), 1);  /* append to cap1: "11" */
    CU_ASSERT_EQUAL(copy(f1, 20, &c1, 0, c2.cap[1], 0, -1, 2), 1);  /* cap2: "111" */
    CU_ASSERT_EQUAL(raw_put(f1, &c1, 1, "23", 2), 1);                   /* cap1: "123" */
    CU_ASSERT_EQUAL(copy(f1, 20, &c1, 0, c2.cap[1], 1, 1, 2), 1);   /* cap2: "123" */
    CU_ASSERT_EQUAL(raw_get(f1, &c1, 0, 3, buf), 1);
    CU_ASSERT_STRING_EQUAL(buf, "123");
    CU_ASSERT_EQUAL(raw_get(f2, &c2, 0, 3, buf), 1);
    CU_ASSERT_STRING_EQUAL(buf, "123");
    /* a PULL into an offset: cap1 "1123" -> bytes 1..3 of cap2 at offset 2 */
    CU_ASSERT_EQUAL(copy(f1, 21, &c1, 1, c2.cap[0], 2, 1, 2), 1);
    CU_ASSERT_EQUAL(raw_get(f1, &c1, 0, 4, buf), 1);
    CU_ASSERT_STRING_EQUAL(buf, "1223");

    /* refusals leave both sides as they were */
    CU_ASSERT_EQUAL(copy(f1, 21, &c1, 1, c2.cap[0], -1, 2, 5), -30); /* past the source's size */
    f1 = td_conn(&D1);
    CU_ASSERT_EQUAL(copy(f1, 20, &c1, 0, c2.cap[1], 3, -1, 5), -30);
    f1 = td_conn(&D1);
    CU_ASSERT_EQUAL(raw_reqf(f1, NULL, 0, "1 20 2 auto %s %s %s 0 -1 1 30 30 30\n", c1.key[0],
                             c2.cap[1], c1.tk[0]), -22); /* phoebus */
    f1 = td_conn(&D1);
    CU_ASSERT_EQUAL(copy(f1, 20, &c1, 1, c2.cap[1], 0, -1, 1), -6);  /* a push reads */
    f1 = td_conn(&D1);
    CU_ASSERT_EQUAL(copy(f1, 21, &c1, 0, c2.cap[0], -1, 0, 1), -5);  /* a pull writes */
    f1 = td_conn(&D1);
    CU_ASSERT_EQUAL(raw_get(f1, &c1, 0, 4, buf), 1);
    CU_ASSERT_STRING_EQUAL(buf, "1223");
    long cur, max;
    CU_ASSERT_EQUAL(probe(f2, &c2, &cur, &max), 1);
    CU_ASSERT_EQUAL(cur, 3);
    CU_ASSERT_EQUAL(probe(f1, &c1, &cur, &max), 1);
    CU_ASSERT_EQUAL(cur, 4);
    close(f1);
    close(f2);
}

static const lns_test_case tests[] = {
    {"RENAME (16): new keys, the old ones stop, a restart keeps it", test_rename},
    {"ibp_test's split/merge sequence, its request lines", test_splitmerge_sequence},
    {"SPLIT/MERGE: space, slots, own files, refusals", test_split_merge_space},
    {"ibp_test's push/pull sequence between two depots", test_pushpull_sequence},
};

LNS_TEST_MAIN_WITH("depot_accre", suite_init, suite_clean, tests)
