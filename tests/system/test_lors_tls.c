/* test_lors_tls.c -- the LoRS tools on the sealed wire (issue 37), with default settings, on
 * three real depots:
 * - a capture of the loopback (test_capture.h) during lors_upload -c 2, lors_augment (a
 *   depot-to-depot copy), lors_refresh, lors_ls and lors_download, and during a keeper pass
 *   that extends leases and makes a copy: no key of any capability of the exNode and no
 *   64-byte window of the file crosses in the clear;
 * - every mapping records its depot's pin ("lns_pin"), the one the depot logs;
 * - an exNode whose pins were changed (the depot is not who it claims): the download is
 *   refused, with a line naming the depot and both pins, and no byte of the file is written;
 * - an lns_pin that is not a pin: exit 3, one line;
 * - a depot list naming pins ("host:port#sha256:..."), and the rc file's DEPOT: sealed from
 *   the first connection (no plaintext STATUS), the pin recorded; a depot with another key
 *   refused before any request, naming it and both pins; a pin that is not one: exit 2.
 * Without CAP_NET_RAW the capture part says SKIP and the rest runs.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "test_capture.h"
#include "test_tools.h"

#define SIZE (3u << 20)

static tt_env_t T;

/* Every capability key of the exNode at path into keys (at most max); how many. */
static int exnode_keys(const char *path, char keys[][IBP_MAX_CAP], int max)
{
    xnd_t *x = tt_load(path);
    int n = 0;
    for (size_t i = 0; x && i < x->nmaps; i++)
        for (int k = 0; k < 3 && n < max; k++)
            if (x->maps[i]->cap[k])
                tc_cap_key(x->maps[i]->cap[k], keys[n++], IBP_MAX_CAP);
    xnd_free(x);
    return n;
}

/* How many of the 64-byte windows of the file src, one each 8 KiB, the capture saw; -1 if src
 * cannot be read. */
static int windows_seen(const tc_capture_t *cap, const char *src)
{
    size_t len;
    unsigned char *data = tt_read_whole(src, &len);
    if (!data)
        return -1;
    int windows = 0;
    for (size_t off = 0; off + 64 <= len; off += 8192)
        windows += tc_seen(cap, data + off, 64);
    free(data);
    return windows;
}

/* Capture the traffic of the three depots (at most bytes kept): 1, or 0 after a line that
 * says what is skipped. */
static int capture_all(tc_capture_t *cap, size_t bytes, const char *what)
{
    int ports[3] = {T.dep[0].port, T.dep[1].port, T.dep[2].port};
    if (tc_start(cap, ports, 3, bytes) == 0)
        return 1;
    printf("\ntest_lors_tls: SKIP %s (no AF_PACKET socket: %s)\n", what, strerror(errno));
    return 0;
}

static void test_capture_all_tools(void)
{
    char src[4096], xnd[4096], out[4200];
    static char keys[64][IBP_MAX_CAP];
    tc_capture_t cap;
    int can = capture_all(&cap, 64u << 20, "the capture; the tools run");
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, SIZE, 37, 2, 3, tt_dlist(&T, 0, 1, -1), NULL, src, xnd),
                          0);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_augment", "--no-rc", "-q", "-c", "1",
                           "--depot-list", tt_dlist(&T, 2, -1), "-d", "10m", xnd, NULL), 0);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_refresh", "--no-rc", "-d", "20m", xnd,
                           NULL), 0);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_ls", "--no-rc", xnd, NULL), 0);
    snprintf(out, sizeof out, "%s.out", src);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "--quiet", "-o", out, xnd,
                           NULL), 0);
    CU_ASSERT(tt_same_file(src, out));
    if (can) {
        tc_end(&cap);
        int n = exnode_keys(xnd, keys, 64);
        CU_ASSERT(n >= 27); /* 3 fragments, 3 copies, 3 capabilities */
        int seen = 0;
        for (int i = 0; i < n; i++)
            seen += tc_seen(&cap, keys[i], strlen(keys[i]));
        CU_ASSERT_EQUAL(seen, 0);
        CU_ASSERT_EQUAL(windows_seen(&cap, src), 0);
        CU_ASSERT(cap.len > 3 * SIZE); /* it saw the traffic: 2 copies up, 1 across, 1 down */
        CU_ASSERT(cap.first_bytes[0] > 0);
        tc_free(&cap);
    }
    tt_free_all(&T, xnd);
}

/* A keeper pass as a cron job runs it (default settings, lors_keep's own --copies 2) over a
 * file of one copy whose leases end in 10 minutes: it extends every lease with the MANAGE
 * capabilities (within the margin, 2 days) and makes the second copy depot to depot -- all of
 * it sealed. */
static void test_capture_keeper(void)
{
    char src[4096], xnd[4096], st[4200];
    static char keys[64][IBP_MAX_CAP];
    tt_lsmap_t before[TT_MAXM], after[TT_MAXM];
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, SIZE, 41, 1, 3, tt_dlist(&T, 0, -1), NULL, src, xnd), 0);
    CU_ASSERT_EQUAL_FATAL(tt_ls_json(&T, xnd, before), 3);
    snprintf(st, sizeof st, "%s.keep.db", src);
    tc_capture_t cap;
    int can = capture_all(&cap, 64u << 20, "the keeper's capture");
    int rc = tt_run(&T, NULL, NULL, "lors_keep", "--no-rc", "--state", st, "--depot-list",
                    tt_dlist(&T, 0, 1, 2, -1), xnd, NULL);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "refreshed 3, added 3"));
    if (rc != 0 || !strstr(T.out, "refreshed 3, added 3"))
        fprintf(stderr, "\nlors_keep exit %d: %s%s", rc, T.out, T.err);
    if (can) {
        tc_end(&cap);
        int n = exnode_keys(xnd, keys, 64);
        CU_ASSERT_EQUAL(n, 18); /* 3 fragments, 2 copies, 3 capabilities */
        int seen = 0;
        for (int i = 0; i < n; i++)
            seen += tc_seen(&cap, keys[i], strlen(keys[i]));
        CU_ASSERT_EQUAL(seen, 0);
        CU_ASSERT_EQUAL(windows_seen(&cap, src), 0);
        CU_ASSERT(cap.len > SIZE); /* it saw the traffic: the copy across */
        CU_ASSERT(cap.first_bytes[0] > 0);
        tc_free(&cap);
    }
    /* the work was done: the leases run to the depots' maximum (an hour), the copy reads */
    CU_ASSERT_EQUAL_FATAL(tt_ls_json(&T, xnd, after), 6);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 6; j++)
            if (strcmp(after[j].depot, before[i].depot) == 0 && after[j].off == before[i].off)
                CU_ASSERT(after[j].expires > before[i].expires + 1800);
    CU_ASSERT(tt_downloads_equal(&T, xnd, src));
    tt_free_all(&T, xnd);
}

static void test_pins_recorded(void)
{
    char src[4096], xnd[4096], pins[3][72];
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL_FATAL(td_pin(&T.dep[i], pins[i]), 0);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 100000, 38, 3, 1, tt_dlist(&T, 0, 1, 2, -1), NULL, src,
                                    xnd), 0);
    xnd_t *x = tt_load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(x->nmaps, 3);
    for (size_t i = 0; i < x->nmaps; i++) {
        const char *pin = NULL;
        int port = tt_cap_port(x->maps[i]->cap[XND_READ]), d = -1;
        for (int j = 0; j < 3; j++)
            if (T.dep[j].port == port)
                d = j;
        CU_ASSERT(d >= 0);
        CU_ASSERT_EQUAL(xnd_meta_get_string(&x->maps[i]->meta, "lns_pin", &pin), XND_OK);
        CU_ASSERT(d >= 0 && pin && strcmp(pin, pins[d]) == 0);
    }
    xnd_free(x);
    tt_free_all(&T, xnd);
}

/* Replace every lns_pin value in the exNode file at path with pin. */
static void set_pins(const char *path, const char *pin)
{
    size_t n;
    unsigned char *raw = tt_read_whole(path, &n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(raw);
    char *s = malloc(n + 1); /* a string, for strstr */
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    memcpy(s, raw, n);
    s[n] = 0;
    free(raw);
    char *p = s;
    while ((p = strstr(p, "name=\"lns_pin\" type=\"string\">"))) {
        p += strlen("name=\"lns_pin\" type=\"string\">");
        char *end = strchr(p, '<');
        CU_ASSERT_FATAL(end && end - p == 71);
        memcpy(p, pin, 71);
    }
    CU_ASSERT_EQUAL(tt_write_file(path, s, n), 0);
    free(s);
}

static void test_pins_checked(void)
{
    char src[4096], xnd[4096], bad[4200], out[4300], pin0[72];
    struct stat st;
    CU_ASSERT_EQUAL_FATAL(td_pin(&T.dep[0], pin0), 0);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 200000, 39, 1, 1, tt_dlist(&T, 0, -1), NULL, src, xnd),
                          0);
    /* another depot's key where this one should be: a man in the middle */
    snprintf(bad, sizeof bad, "%s.other.xnd", src);
    CU_ASSERT_EQUAL(tt_sh(&T, "cp '%s' '%s'", xnd, bad), 0);
    const char *other = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
    set_pins(bad, other);
    snprintf(out, sizeof out, "%s.out", bad);
    int rc = tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "--quiet", "-o", out, bad, NULL);
    CU_ASSERT(rc != 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "is not the depot it should be"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, other));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, pin0));
    CU_ASSERT(stat(out, &st) != 0 || st.st_size == 0);
    if (!strstr(T.err, "is not the depot it should be"))
        fprintf(stderr, "\nlors_download said: %s\n", T.err);
    /* not a pin at all: the exNode is refused */
    set_pins(bad, "sha256:zz00000000000000000000000000000000000000000000000000000000000000");
    rc = tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "--quiet", "-o", out, bad, NULL);
    CU_ASSERT_EQUAL(rc, 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "lns_pin is not a pin"));
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    /* the true exNode still downloads */
    CU_ASSERT(tt_downloads_equal(&T, xnd, src));
    tt_free_all(&T, xnd);
}

/* A depot list that names pins ("host:port#sha256:..."): the first connection is already
 * sealed and checked -- no plaintext STATUS to learn the pin -- and the pin is recorded; a
 * depot with another key is refused before any request, naming it and both pins; a pin that
 * is not one is a usage error. */
static void test_pins_in_depot_list(void)
{
    char src[4096], xnd[4096], x2[4200], pins[3][72], list[512], dep1[32], rc[4200];
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL_FATAL(td_pin(&T.dep[i], pins[i]), 0);
    int allocs = tt_depot_allocs(&T, 1);
    CU_ASSERT(allocs >= 0);
    tc_capture_t cap;
    int can = capture_all(&cap, 16u << 20, "the capture of pinned lists");
    snprintf(list, sizeof list, "127.0.0.1:%d#%s", T.dep[0].port, pins[0]);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 200000, 42, 1, 1, list, "--no-rc", src, xnd), 0);
    /* depot 1 named with depot 0's pin (a man in the middle, or a list gone stale), and
     * depot 2, pinned too: the copy goes there instead */
    snprintf(dep1, sizeof dep1, "127.0.0.1:%d", T.dep[1].port);
    snprintf(list, sizeof list, "%s#%s, 127.0.0.1:%d#%s", dep1, pins[0], T.dep[2].port,
             pins[2]);
    snprintf(x2, sizeof x2, "%s.moved.xnd", src);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_upload", "--no-rc", "--depot-list", list, "-c",
                           "1", "-d", "10m", "-o", x2, src, NULL), 0);
    if (can) {
        tc_end(&cap);
        CU_ASSERT(cap.first_bytes[0] > 0);
        /* no STATUS asked in plaintext to learn a pin: its answer would show the pin's hex */
        for (int i = 0; i < 3; i++)
            CU_ASSERT_EQUAL(tc_seen(&cap, pins[i] + 7, 64), 0);
        tc_free(&cap);
    }
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "is not the depot it should be"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, dep1));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, pins[0]));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, pins[1]));
    if (!strstr(T.err, pins[1]))
        fprintf(stderr, "\nlors_upload said: %s\n", T.err);
    CU_ASSERT_EQUAL(tt_depot_allocs(&T, 1), allocs); /* no request reached it */
    /* the pins are recorded: depot 0's, and depot 2's where the copy went */
    const char *want[2] = {pins[0], pins[2]}, *paths[2] = {xnd, x2};
    int on[2] = {T.dep[0].port, T.dep[2].port};
    for (int k = 0; k < 2; k++) {
        xnd_t *x = tt_load(paths[k]);
        CU_ASSERT_FATAL(x && x->nmaps >= 1);
        for (size_t i = 0; i < x->nmaps; i++) {
            const char *pin = NULL;
            CU_ASSERT_EQUAL(tt_cap_port(x->maps[i]->cap[XND_READ]), on[k]);
            CU_ASSERT_EQUAL(xnd_meta_get_string(&x->maps[i]->meta, "lns_pin", &pin), XND_OK);
            CU_ASSERT(pin && strcmp(pin, want[k]) == 0);
        }
        xnd_free(x);
        tt_free_all(&T, paths[k]);
    }

    /* only that depot, with the wrong pin: the upload fails, the same line said */
    snprintf(list, sizeof list, "%s#%s", dep1, pins[0]);
    snprintf(x2, sizeof x2, "%s.refused.xnd", src);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_upload", "--no-rc", "--depot-list", list, "-c",
                           "1", "-d", "10m", "-o", x2, src, NULL), 5);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "is not the depot it should be"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, pins[1]));
    CU_ASSERT_EQUAL(tt_depot_allocs(&T, 1), allocs);

    /* not a pin: exit 2, one line naming the entry */
    snprintf(list, sizeof list, "127.0.0.1:%d#sha256:00", T.dep[0].port);
    snprintf(x2, sizeof x2, "%s.bad.xnd", src);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_upload", "--no-rc", "--depot-list", list,
                           "-o", x2, src, NULL), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "the pin is not sha256: and 64 lowercase hex digits"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, list));
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);

    /* the rc file's DEPOT takes the same form (and a comment after a blank) */
    snprintf(rc, sizeof rc, "%s.rc", src);
    snprintf(list, sizeof list, "DEPOT 127.0.0.1:%d#%s  # depot 2, pinned\n", T.dep[2].port,
             pins[2]);
    CU_ASSERT_EQUAL(tt_write_file(rc, list, strlen(list)), 0);
    snprintf(x2, sizeof x2, "%s.rc.xnd", src);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_upload", "--rc", rc, "-c", "1", "-d", "10m",
                           "-o", x2, src, NULL), 0);
    xnd_t *x = tt_load(x2);
    CU_ASSERT_FATAL(x && x->nmaps >= 1);
    for (size_t i = 0; i < x->nmaps; i++) {
        const char *pin = NULL;
        CU_ASSERT_EQUAL(xnd_meta_get_string(&x->maps[i]->meta, "lns_pin", &pin), XND_OK);
        CU_ASSERT(pin && strcmp(pin, pins[2]) == 0);
    }
    xnd_free(x);
    tt_free_all(&T, x2);
}

/* --tls off: plaintext even to pinned depots (benchmarks) -- the capture sees the bytes; a bad
 * --tls value; a depot that speaks no TLS: one warning line (none with --quiet), and --tls
 * require refuses it; rc TLS. */
static void test_tls_off(void)
{
    char src[4096], xnd[4096], out[4200], rc[4200];
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 300000, 40, 1, 1, tt_dlist(&T, 1, -1), NULL, src, xnd),
                          0);
    tc_capture_t cap;
    int can = tc_start(&cap, &T.dep[1].port, 1, 16u << 20) == 0;
    snprintf(out, sizeof out, "%s.out", src);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "--quiet", "--tls", "off",
                           "-o", out, xnd, NULL), 0);
    CU_ASSERT(tt_same_file(src, out));
    if (can) {
        tc_end(&cap);
        size_t len;
        unsigned char *data = tt_read_whole(src, &len);
        CU_ASSERT(data && tc_seen(&cap, data + 4096, 64));
        free(data);
        tc_free(&cap);
    }
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "--tls", "maybe", "-o",
                           out, xnd, NULL), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "--tls maybe: expected auto, require or off"));
    /* a depot that speaks no TLS (as LoCI and ACCRE): served in plaintext, said once */
    test_depot_t old;
    char dl[64], x2[4200];
    CU_ASSERT_EQUAL_FATAL(td_start(&old, "--tls no"), 0);
    snprintf(dl, sizeof dl, "127.0.0.1:%d", old.port);
    snprintf(x2, sizeof x2, "%s.old.xnd", src);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_upload", "--no-rc", "-c", "1", "-d", "10m",
                           "--depot-list", dl, "-o", x2, src, NULL), 0);
    CU_ASSERT_EQUAL(tt_count(T.err, "speaks no TLS (an old IBP depot)"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, dl));
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "--quiet", "-o", out, x2,
                           NULL), 0);
    CU_ASSERT_EQUAL(tt_count(T.err, "no TLS"), 0); /* --quiet */
    CU_ASSERT(tt_same_file(src, out));
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "--quiet", "--tls",
                           "require", "-o", out, x2, NULL), 6);
    lns_test_server_finish(&old.srv);
    snprintf(rc, sizeof rc, "%s.rc", src);
    CU_ASSERT_EQUAL(tt_write_file(rc, "TLS off\n", 8), 0);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--rc", rc, "--quiet", "-o", out,
                           xnd, NULL), 0);
    tt_free_all(&T, xnd);
}

static const lns_test_case tests[] = {
    {"a capture sees no key and no byte of upload, augment, refresh, ls, download",
     test_capture_all_tools},
    {"a capture sees no key and no byte of a keeper pass (leases extended, a copy made)",
     test_capture_keeper},
    {"every mapping records its depot's pin", test_pins_recorded},
    {"pins checked: another key refused naming both pins; not a pin: exit 3",
     test_pins_checked},
    {"pins in depot lists: sealed from the first byte; another key refused; not a pin: exit 2",
     test_pins_in_depot_list},
    {"--tls off: plaintext; a bad value; a depot without TLS said once; rc TLS", test_tls_off},
};

TT_MAIN(&T, "lors tools on TLS", 3, tests)
