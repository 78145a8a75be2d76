/* test_depot_alias.c -- alias capabilities (requests 14 and 15) on a real ibp_depot.
 *
 * The request lines are those ACCRE 1.4's client sends (src/ibp/op_cmd.c: alias allocate
 * "1 14 RID#key tk off len dur timeout", alias probe "1 15 RID#key tk 40 3 timeout \n",
 * alias remove "1 15 RID#key tk 42 1 RID#mkey mtk timeout", alias CHNG without captype) and
 * the sequence of its ibp_test's alias sub-tests: a full and a 10..50 alias of one
 * allocation, an append through the full one, a write through the limited one, reads and
 * writes past its end refused, removal with a wrong and the right master. */
#include <CUnit/CUnit.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lns_test.h"
#include "test_depot.h"

static test_depot_t D;

typedef raw_caps_t caps_t;

static int suite_init(void)
{
    /* the hit log of the failpoints says when a LOAD waits (load.wait); kept for the
     * restarts too */
    setenv("LNS_FAILPOINTS_LOG", lns_test_path("points.log"), 1);
    return td_start(&D, NULL);
}

static int suite_clean(void)
{
    unsetenv("LNS_FAILPOINTS_LOG");
    lns_test_server_stop(&D.srv);
    return 0;
}

static int allocate(int fd, long size, caps_t *c)
{
    return raw_allocate(fd, c, "1 1 0 1 1 3600 %ld 30\n", size);
}

/* ALIAS_ALLOCATE as ACCRE's client formats it. */
static int alias(int fd, const caps_t *m, long off, long len, long dur, caps_t *a)
{
    char reply[4096];
    int rc = raw_reqf(fd, reply, sizeof reply, "1 14 %s %s %ld %ld %ld 30\n", m->key[2], m->tk[2],
                      off, len, dur);
    if (rc != 1)
        return rc;
    CU_ASSERT_EQUAL(reply[strlen(reply) - 1], ' ');
    return raw_caps(reply, a) == 0 ? 1 : -1000;
}

/* STORE (append, off < 0) or WRITE of the string s. */
static int put(int fd, const caps_t *c, long off, const char *s)
{
    return raw_put(fd, c, off, s, strlen(s));
}

static void test_accre_sequence(void)
{
    char reply[4096], buf[256];
    caps_t m, full, lim;
    int fd = td_conn(&D);

    CU_ASSERT_EQUAL_FATAL(allocate(fd, 64, &m), 1);
    CU_ASSERT_EQUAL_FATAL(alias(fd, &m, 0, 0, 0, &full), 1);
    CU_ASSERT_EQUAL_FATAL(alias(fd, &m, 10, 40, 0, &lim), 1);
    /* new keys, not the master's */
    CU_ASSERT(strcmp(full.key[0], m.key[0]) != 0 && strcmp(full.key[0], lim.key[0]) != 0);

    /* PROBE (9) with an alias's manage cap: the master through the range */
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 9 %s %s 40 0 0 0 0 30\n", lim.key[2],
                             lim.tk[2]), 1);
    long rc_, wc, cur, max, left;
    CU_ASSERT_EQUAL(sscanf(reply, "1 %ld %ld %ld %ld %ld", &rc_, &wc, &cur, &max, &left), 5);
    CU_ASSERT_EQUAL(cur, 0);
    CU_ASSERT_EQUAL(max, 40);
    /* alias PROBE (15), ACCRE's line: counts, offset, length, seconds left */
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 15 %s %s 40 3 30 \n", lim.key[2],
                             lim.tk[2]), 1);
    CU_ASSERT_EQUAL(sscanf(reply, "1 %ld %ld %ld %ld %ld", &rc_, &wc, &cur, &max, &left), 5);
    CU_ASSERT(rc_ == 1 && wc == 1 && cur == 10 && max == 40 && left > 3500 && left <= 3600);

    /* append through the full alias, write through the limited one at its 0 = master's 10 */
    char zeros[65];
    memset(zeros, '0', 64);
    zeros[64] = '\0';
    CU_ASSERT_EQUAL(put(fd, &full, -1, zeros), 1);
    CU_ASSERT_EQUAL(put(fd, &lim, 0, "This is a test."), 1);
    CU_ASSERT_EQUAL(raw_get(fd, &m, 0, 30, buf), 1);
    CU_ASSERT_STRING_EQUAL(buf, "0000000000This is a test.00000");
    CU_ASSERT_EQUAL(raw_get(fd, &full, 10, 15, buf), 1);
    CU_ASSERT_STRING_EQUAL(buf, "This is a test.");
    CU_ASSERT_EQUAL(raw_get(fd, &lim, 0, 15, buf), 1);
    CU_ASSERT_STRING_EQUAL(buf, "This is a test.");
    CU_ASSERT_EQUAL(raw_get(fd, &lim, 25, 15, buf), 1); /* ends exactly at the range's end */
    /* past the limited alias's end: refused (-19), the connection stays for LOAD */
    CU_ASSERT_EQUAL(raw_get(fd, &lim, 35, 16, buf), -19);
    close(fd);
    fd = td_conn(&D);
    CU_ASSERT_EQUAL(put(fd, &lim, 35, "This is a test."), -19);
    close(fd);
    fd = td_conn(&D);
    /* no append through an alias of part of the allocation */
    CU_ASSERT_EQUAL(put(fd, &lim, -1, "x"), -19);
    close(fd);
    fd = td_conn(&D);
    /* capability kinds: the alias's read cap cannot write, nor its write cap read */
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 8 %s %s 0 1 30\n", lim.key[1], lim.tk[1]), -6);

    /* remove the full alias with a wrong master (the limited alias's manage cap): -10 */
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 15 %s %s 42 1 %s %s 30\n", full.key[2], full.tk[2],
                             lim.key[2], lim.tk[2]), -10);
    CU_ASSERT_EQUAL(raw_get(fd, &full, 0, 1, buf), 1);
    /* with the master's: gone, the master untouched */
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 15 %s %s 42 1 %s %s 30\n", full.key[2], full.tk[2],
                             m.key[2], m.tk[2]), 1);
    CU_ASSERT_EQUAL(raw_get(fd, &full, 0, 1, buf), -4);
    CU_ASSERT_EQUAL(raw_get(fd, &m, 10, 4, buf), 1);
    CU_ASSERT_STRING_EQUAL(buf, "This");
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 15 %s %s 42 1 %s %s 30\n", lim.key[2], lim.tk[2],
                             m.key[2], m.tk[2]), 1);
    CU_ASSERT_EQUAL(raw_get(fd, &lim, 0, 1, buf), -4);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 42 1 30\n", m.key[2], m.tk[2]), 1);
    close(fd);
}

static void test_allocate_errors(void)
{
    caps_t m, a;
    int fd = td_conn(&D);
    CU_ASSERT_EQUAL_FATAL(allocate(fd, 100, &m), 1);
    CU_ASSERT_EQUAL(alias(fd, &m, 50, 51, 0, &a), -19);  /* past the master's max size */
    CU_ASSERT_EQUAL(alias(fd, &m, 101, 0, 0, &a), -19);
    CU_ASSERT_EQUAL(alias(fd, &m, 0, 10, 7200, &a), -28); /* outlives the master */
    /* with the read or write cap instead of the manage one */
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 14 %s %s 0 0 0 30\n", m.key[0], m.tk[0]), -7);
    CU_ASSERT_EQUAL(alias(fd, &m, 0, 10, 60, &a), 1);
    /* an alias of an alias: no */
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 14 %s %s 0 0 0 30\n", a.key[2], a.tk[2]), -25);
    close(fd);
    /* request 15 on an allocation, and CHNG/TRUNCATE of an alias through 9: -25 */
    CU_ASSERT_EQUAL(td_reqf(&D, "1 15 %s %s 40 3 30\n", m.key[2], m.tk[2]), -25);
    CU_ASSERT_EQUAL(td_reqf(&D, "1 9 %s %s 45 5 30\n", a.key[2], a.tk[2]), -25);
    fd = td_conn(&D);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 14 %s %s x 0 0 30\n", m.key[2], m.tk[2]), -30);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 14 %s %s 0 0 30\n", m.key[2], m.tk[2]), -21);
    close(fd);
}

static void test_chng(void)
{
    char reply[512], buf[64];
    caps_t m, a;
    long rc_, wc, off, len, left;
    int fd = td_conn(&D);
    CU_ASSERT_EQUAL_FATAL(allocate(fd, 100, &m), 1);
    CU_ASSERT_EQUAL(put(fd, &m, -1, "0123456789abcdefghij"), 1);
    CU_ASSERT_EQUAL_FATAL(alias(fd, &m, 0, 5, 60, &a), 1);
    /* ACCRE's client line (no captype): offset 10, length 5, 120 s */
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 15 %s %s 43 10 5 120 %s %s 30\n", a.key[2], a.tk[2],
                             m.key[2], m.tk[2]), 1);
    CU_ASSERT_EQUAL(raw_get(fd, &a, 0, 5, buf), 1);
    CU_ASSERT_STRING_EQUAL(buf, "abcde");
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 15 %s %s 40 3 30\n", a.key[2], a.tk[2]), 1);
    CU_ASSERT_EQUAL(sscanf(reply, "1 %ld %ld %ld %ld %ld", &rc_, &wc, &off, &len, &left), 5);
    CU_ASSERT(off == 10 && len == 5 && left > 100 && left <= 120);
    /* the server's documented form (with captype); length 0 keeps the range, -1 the expiry */
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 15 %s %s 43 3 0 0 -1 %s %s 30\n", a.key[2], a.tk[2],
                             m.key[2], m.tk[2]), 1);
    CU_ASSERT_EQUAL(raw_get(fd, &a, 0, 5, buf), 1);
    CU_ASSERT_STRING_EQUAL(buf, "abcde");
    /* past the master's size, wrong master */
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 15 %s %s 43 90 20 0 %s %s 30\n", a.key[2], a.tk[2],
                             m.key[2], m.tk[2]), -45);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 15 %s %s 43 0 5 0 %s %s 30\n", a.key[2], a.tk[2],
                             a.key[2], a.tk[2]), -10);
    close(fd);
}

static void test_revoke_and_master_free(void)
{
    char buf[64];
    caps_t m, a, b;
    int fd = td_conn(&D);
    CU_ASSERT_EQUAL_FATAL(allocate(fd, 100, &m), 1);
    CU_ASSERT_EQUAL(put(fd, &m, -1, "hello world"), 1);
    CU_ASSERT_EQUAL_FATAL(alias(fd, &m, 6, 5, 0, &a), 1);
    CU_ASSERT_EQUAL_FATAL(alias(fd, &m, 0, 5, 0, &b), 1);
    /* revoke with the alias's own manage cap (request 9, as ibp_tool decr sends it) */
    CU_ASSERT_EQUAL(raw_get(fd, &a, 0, 5, buf), 1);
    CU_ASSERT_STRING_EQUAL(buf, "world");
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 42 1 30\n", a.key[2], a.tk[2]), 1);
    CU_ASSERT_EQUAL(raw_get(fd, &a, 0, 5, buf), -4);
    CU_ASSERT_EQUAL(raw_get(fd, &m, 0, 11, buf), 1);
    CU_ASSERT_STRING_EQUAL(buf, "hello world");
    /* the master freed: its aliases answer -4 */
    CU_ASSERT_EQUAL(raw_get(fd, &b, 0, 5, buf), 1);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 42 1 30\n", m.key[2], m.tk[2]), 1);
    CU_ASSERT_EQUAL(raw_get(fd, &b, 0, 5, buf), -4);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 9 %s %s 40 0 0 0 0 30\n", b.key[2], b.tk[2]), -4);
    close(fd);
}

/* ACCRE's vector WRITE (33) and READ (35) through a limited alias: the ranges are the
 * alias's, shifted onto the master's bytes; a range past the alias's end is refused (-19). */
static void test_vector_through_alias(void)
{
    char reply[512], buf[64], line[512];
    caps_t m, a;
    int fd = td_conn(&D);
    CU_ASSERT_EQUAL_FATAL(allocate(fd, 100, &m), 1);
    CU_ASSERT_EQUAL(put(fd, &m, -1, "0123456789abcdefghijklmnopqrstuvwxyz"), 1);
    CU_ASSERT_EQUAL_FATAL(alias(fd, &m, 10, 20, 0, &a), 1);
    int n = snprintf(line, sizeof line, "1 33 %s %s 2 5 2 0 3 30\nXYABC", a.key[1], a.tk[1]);
    CU_ASSERT_EQUAL(raw_send(fd, line, (size_t)n), 0);
    CU_ASSERT(raw_readline(fd, reply, sizeof reply) > 0);
    CU_ASSERT_STRING_EQUAL(reply, "1 ");
    CU_ASSERT(raw_readline(fd, reply, sizeof reply) > 0);
    CU_ASSERT_STRING_EQUAL(reply, "1 5");
    CU_ASSERT_EQUAL(raw_get(fd, &m, 0, 36, buf), 1);
    CU_ASSERT_STRING_EQUAL(buf, "0123456789ABCdeXYhijklmnopqrstuvwxyz");
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 35 %s %s 2 5 2 18 2 30\n", a.key[0],
                             a.tk[0]), 1);
    CU_ASSERT_STRING_EQUAL(reply, "1 4");
    CU_ASSERT_EQUAL(raw_read(fd, buf, 4), 0);
    CU_ASSERT_EQUAL(memcmp(buf, "XYst", 4), 0);
    /* past the alias's 20 bytes, though inside the master's: refused */
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 35 %s %s 1 19 2 30\n", a.key[0], a.tk[0]), -19);
    close(fd);
    fd = td_conn(&D);
    n = snprintf(line, sizeof line, "1 33 %s %s 1 19 2 30\nQQ", a.key[1], a.tk[1]);
    CU_ASSERT_EQUAL(raw_send(fd, line, (size_t)n), 0);
    CU_ASSERT(raw_readline(fd, reply, sizeof reply) > 0);
    CU_ASSERT_EQUAL(raw_code(reply), -19);
    close(fd);
    fd = td_conn(&D);
    CU_ASSERT_EQUAL(raw_get(fd, &m, 28, 3, buf), 1);
    CU_ASSERT_STRING_EQUAL(buf, "stu");
    close(fd);
}

/* A version-0 LOAD through an alias waits for the master's bytes, as on the master. */
static void test_wait_through_alias(void)
{
    char reply[256], buf[64], line[512];
    caps_t m, a;
    int fd = td_conn(&D), w = td_conn(&D);
    CU_ASSERT_EQUAL_FATAL(allocate(fd, 100, &m), 1);
    CU_ASSERT_EQUAL(put(fd, &m, -1, "0123456789"), 1);
    CU_ASSERT_EQUAL_FATAL(alias(fd, &m, 5, 20, 0, &a), 1);
    /* 5..15 of the master: 5 bytes there, 5 to come */
    int n = snprintf(line, sizeof line, "0 8 %s %s 0 10 5\n", a.key[0], a.tk[0]);
    CU_ASSERT_EQUAL(truncate(lns_test_path("points.log"), 0), 0); /* the depot appends */
    CU_ASSERT_EQUAL(raw_send(w, line, (size_t)n), 0);
    char points[4096] = "";
    for (int64_t end = lns_test_deadline(LNS_TEST_WAIT_MS);
         !strstr(points, "load.wait") && lns_test_poll(end);)
        lns_test_slurp(lns_test_path("points.log"), points, sizeof points);
    CU_ASSERT_PTR_NOT_NULL(strstr(points, "load.wait")); /* it waits */
    CU_ASSERT_EQUAL(put(fd, &m, -1, "abcde"), 1);
    CU_ASSERT(raw_readline(w, reply, sizeof reply) > 0);
    CU_ASSERT_EQUAL(atoi(reply + 2), 10);
    CU_ASSERT_EQUAL(raw_read(w, buf, 10), 0);
    CU_ASSERT_EQUAL(memcmp(buf, "56789abcde", 10), 0);
    close(w);
    close(fd);
}

static void test_restart_keeps_aliases(void)
{
    char buf[64];
    caps_t m, a;
    int fd = td_conn(&D);
    CU_ASSERT_EQUAL_FATAL(allocate(fd, 100, &m), 1);
    CU_ASSERT_EQUAL(put(fd, &m, -1, "persistent bytes"), 1);
    CU_ASSERT_EQUAL_FATAL(alias(fd, &m, 11, 5, 0, &a), 1);
    close(fd);
    lns_test_server_kill(&D.srv, SIGKILL); /* committed before answered: survives a kill */
    CU_ASSERT_EQUAL_FATAL(td_restart(&D), 0);
    fd = td_conn(&D);
    CU_ASSERT_EQUAL(raw_get(fd, &a, 0, 5, buf), 1);
    CU_ASSERT_STRING_EQUAL(buf, "bytes");
    CU_ASSERT_EQUAL(raw_get(fd, &a, 1, 5, buf), -19);
    close(fd);
}

static const lns_test_case tests[] = {
    {"ACCRE ibp_test's alias sequence, its request lines", test_accre_sequence},
    {"ALIAS_ALLOCATE errors", test_allocate_errors},
    {"ALIAS_MANAGE CHNG (both line forms)", test_chng},
    {"revoke by DECR; master freed", test_revoke_and_master_free},
    {"restart keeps aliases", test_restart_keeps_aliases},
    {"vector WRITE and READ through an alias", test_vector_through_alias},
    {"a version-0 LOAD through an alias waits for the bytes", test_wait_through_alias},
};

LNS_TEST_MAIN_WITH("depot_alias", suite_init, suite_clean, tests)
