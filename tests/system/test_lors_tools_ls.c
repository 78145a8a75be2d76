/* test_lors_tools_ls.c -- lors_ls, and what the four managing programs (lors_augment,
 * lors_trim, lors_refresh, lors_ls) share: the command-line contract and the refusal of a
 * malformed exNode.  Run as a user runs them, against five real depots.
 *
 * Every network file is made by the real lors_upload; every program runs through sh -c with
 * its stdout and stderr captured (tests/lib/test_tools.h), and is judged by what a user can
 * see: the exit code, the lines and JSON it prints, and the files it leaves (or does not).
 * Tests that kill a depot revive it at the start of the next test, so a failed assertion
 * cannot leave the fleet short.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ibp.h"
#include "lns_test.h"
#include "lns_time.h"
#include "test_json.h"
#include "test_tools.h"
#include "lns_version.h"

#define ND 5

static tt_env_t T;

static void test_json_checker(void)
{
    CU_ASSERT(tj_valid("{\"a\":[1,-2.5e3,true,null,\"x\\n\\u00e9\"],\"b\":{}}\n"));
    CU_ASSERT(!tj_valid("{\"a\":1,}"));
    CU_ASSERT(!tj_valid("{\"a\":01}"));
    CU_ASSERT(!tj_valid("[1] 2"));
    CU_ASSERT(!tj_valid("{\"a\":\"tab\there\"}"));
}

/* ---- the command-line contract ---- */

static void test_help_version_usage(void)
{
    static const char *tools[] = {"lors_augment", "lors_trim", "lors_refresh", "lors_ls"};
    for (size_t i = 0; i < 4; i++) {
        char want[64];
        CU_ASSERT_EQUAL(tt_sh(&T, "$B/%s --help", tools[i]), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "Usage: "));
        CU_ASSERT_EQUAL(tt_sh(&T, "$B/%s --version", tools[i]), 0);
        snprintf(want, sizeof want, "%s (lns) %s\n", tools[i], LNS_VERSION);
        CU_ASSERT_STRING_EQUAL(T.out, want);
        CU_ASSERT_EQUAL(tt_sh(&T, "$B/%s --no-such-flag x.xnd", tools[i]), 2);
        CU_ASSERT(strncmp(T.err, tools[i], strlen(tools[i])) == 0);
        CU_ASSERT_EQUAL(tt_sh(&T, "$B/%s", tools[i]), 2);
        CU_ASSERT_EQUAL(tt_sh(&T, "$B/%s -t 0 x.xnd", tools[i]), 2);
        CU_ASSERT_EQUAL(tt_sh(&T, "$B/%s --rc '%s/no-such-rc' x.xnd", tools[i], lns_test_tmpdir()),
                        2);
    }
}

/* ---- lors_ls ---- */

static void test_ls_views(void)
{
    char src[4096], xnd[4096];
    tt_revive(&T);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 3 << 20, 8, 2, 2, tt_dlist(&T, 2, 3, -1), NULL, src, xnd),
                          0);

    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_ls -p '%s'", xnd), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "size: 3145728\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "mappings: 4\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "copies: 2\n"));
    CU_ASSERT_PTR_NULL(strstr(T.out, "logical:"));
    const char *p = strstr(T.out, "physical:\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    p += strlen("physical:\n");
    /* the column headers, aligned over the columns: numbers to the right, words to the left */
    CU_ASSERT(strncmp(p, "N FLAGS REFS DEPOT ", 19) == 0);
    const char *hdr = p, *h_off = strstr(hdr, " OFFSET "), *h_len = strstr(hdr, " LENGTH ");
    const char *h_exp = strstr(hdr, " EXPIRY "), *h_st = strstr(hdr, " STATUS\n");
    const char *h_fn = strstr(hdr, " FUNCTION ");
    CU_ASSERT_FATAL(h_off && h_len && h_exp && h_fn && h_st);
    p = strchr(p, '\n') + 1;
    for (int i = 0; i < 4; i++) {
        int n, refs, port, used = 0;
        char flags[8], date[16], tod[16], func[16], status[16];
        long long off, len;
        CU_ASSERT_EQUAL_FATAL(sscanf(p, "%d %7s %d 127.0.0.1:%d/%*s %lld %lld %15s %15s %15s "
                                     "%15s%n", &n, flags, &refs, &port, &off, &len, date, tod,
                                     func, status, &used), 10);
        CU_ASSERT_STRING_EQUAL(func, "lns_checksum");
        CU_ASSERT_EQUAL(n, i);
        CU_ASSERT_STRING_EQUAL(flags, "Hrwma");
        CU_ASSERT_EQUAL(refs, 1);
        CU_ASSERT(port == T.dep[2].port || port == T.dep[3].port);
        CU_ASSERT_EQUAL(len, 3 << 19);
        CU_ASSERT(off == 0 || off == 3 << 19);
        CU_ASSERT_STRING_EQUAL(status, "alive");
        /* each column ends (numbers) or starts (words) where its header does */
        CU_ASSERT_EQUAL(p[h_len - hdr + 7], ' ');    /* LENGTH's last digit, then a space */
        CU_ASSERT(p[h_len - hdr + 6] >= '0' && p[h_len - hdr + 6] <= '9');
        CU_ASSERT(p[h_exp - hdr + 1] == '2');        /* the year */
        CU_ASSERT_EQUAL(strncmp(p + (h_fn - hdr) + 1, "lns_checksum ", 13), 0);
        CU_ASSERT_EQUAL(strncmp(p + (h_st - hdr) + 1, "alive\n", 6), 0);
        p = strchr(p + used, '\n');
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        p++;
    }

    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_ls -l '%s'", xnd), 0);
    CU_ASSERT_PTR_NULL(strstr(T.out, "physical:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "logical:\nOFFSET  LENGTH LIVE\n     0 3145728    2\n"));

    /* -h: sizes and offsets as ls -lh and df -h print them */
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_ls -h '%s'", xnd), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "size: 3.0M\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "1.5M   1.5M 20")); /* the second fragment's line */
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "logical:\nOFFSET LENGTH LIVE\n     0   3.0M    2\n"));

    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_ls --json '%s'", xnd), 0);
    CU_ASSERT(tj_valid(T.out));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "\"complete\":true"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "\"copies\":2,\"under_replicated\":false"));
    CU_ASSERT_EQUAL(tt_count(T.out, "\"alive\":true"), 4);
    CU_ASSERT_EQUAL(tj_nth_int(T.out, "size", 0), 3 << 20);
    if (access("/usr/bin/python3", X_OK) == 0)
        CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_ls --json '%s' | python3 -m json.tool >/dev/null", xnd),
                        0);

    /* one mapping fewer in the exNode: by the exNode alone (--no-probe) bytes 0-1572863 have
     * one copy where the file has two: under-replicated, exit 10 */
    char one[4096 + 16];
    snprintf(one, sizeof one, "%s.one", xnd);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_trim -m 0 -o '%s' '%s'", one, xnd), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_ls --no-probe -l '%s'", one), 10);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "logical:\n OFFSET  LENGTH LIVE\n      0 1572864    1 UNDER\n"
                                         "1572864 1572864    2\n"));
    CU_ASSERT(strncmp(T.err, "lors_ls: ", 9) == 0);
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, ": 1572864 bytes in 1 range have fewer than 2 live "
                                         "copies (first: bytes 0-1572863, 1 live)\n"));

    /* a killed depot: its mappings dead, the file still whole through the others, but with
     * one live copy of two: exit 10 */
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[3].srv, SIGKILL), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_ls '%s'", xnd), 10);
    CU_ASSERT_EQUAL(tt_count(T.out, " dead: "), 2);
    CU_ASSERT_EQUAL(tt_count(T.out, " alive\n"), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "logical:\nOFFSET  LENGTH LIVE\n     0 3145728    1 UNDER\n"));
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, ": 3145728 bytes in 1 range have fewer than 2 live "
                                         "copies (first: bytes 0-3145727, 1 live)\n"));
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_ls --json '%s'", xnd), 10);
    CU_ASSERT(tj_valid(T.out));
    CU_ASSERT_EQUAL(tt_count(T.out, "\"alive\":false"), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "\"copies\":2,\"under_replicated\":true"));
    /* --no-probe asks nobody: by the exNode both copies are there */
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_ls --no-probe -p '%s'", xnd), 0);
    CU_ASSERT_EQUAL(tt_count(T.out, " not probed\n"), 4);
    tt_revive(&T);
    tt_free_all(&T, xnd);
}

/* A stopped depot (SIGSTOP: connections accepted by the kernel, never answered) under -T 60s:
 * its mappings are reported dead after a short silence, not after the 60 s it took before;
 * the others alive, the file one live copy short (exit 10). */
static void test_ls_stopped_depot(void)
{
    char src[4096], xnd[4096];
    tt_revive(&T);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 3 << 20, 9, 2, 2, tt_dlist(&T, 2, 3, -1), NULL, src, xnd),
                          0);
    CU_ASSERT_EQUAL_FATAL(lns_test_server_kill(&T.dep[3].srv, SIGSTOP), 0);
    long long t0 = lns_mono_ms();
    int rc = tt_sh(&T, "$B/lors_ls -T 60s -p '%s'", xnd);
    long long took = lns_mono_ms() - t0;
    kill(T.dep[3].pid, SIGCONT);
    CU_ASSERT_EQUAL(rc, 10);
    CU_ASSERT(took < 30000);
    CU_ASSERT_EQUAL(tt_count(T.out, " dead: "), 2);
    CU_ASSERT_EQUAL(tt_count(T.out, " alive\n"), 2);
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    if (took >= 30000 || rc != 10)
        fprintf(stderr, "exit %d after %lld ms\n%s%s", rc, took, T.out, T.err);
    tt_free_all(&T, xnd);
}

static void test_ls_expired_and_lost(void)
{
    char src[4096], xnd[4096];
    tt_revive(&T);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 100000, 9, 1, 1, tt_dlist(&T, 0, -1), "-d 2s", src, xnd),
                          0);
    sleep(3);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_ls '%s'", xnd), 8);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, " dead: expired\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "\n     0 100000    0 GAP\n"));
    CU_ASSERT(strncmp(T.err, "lors_ls: ", 9) == 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_ls --json '%s'", xnd), 8);
    CU_ASSERT(tj_valid(T.out));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "\"complete\":false"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "\"why\":\"expired\""));

    /* a depot gone with the only copy */
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 100000, 10, 1, 2, tt_dlist(&T, 1, 4, -1), NULL, src, xnd),
                          0);
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[4].srv, SIGKILL), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_ls -l '%s'", xnd), 8);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, " 0 GAP\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, " 1\n"));
    /* nothing to copy those bytes from: lors_augment refuses and leaves the exNode alone */
    char before[4096 + 16];
    snprintf(before, sizeof before, "%s.before", xnd);
    CU_ASSERT_EQUAL_FATAL(tt_sh(&T, "cp '%s' '%s'", xnd, before), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_augment -d 10m --depot-list '%s' '%s'", tt_dlist(&T, 2, -1),
                          xnd), 6);
    CU_ASSERT(strncmp(T.err, "lors_augment: ", 14) == 0);
    CU_ASSERT(tt_same_file(xnd, before));
    tt_revive(&T);
    tt_free_all(&T, xnd);
}

/* Control characters from the exNode are escaped, never sent to the terminal raw: a newline,
 * a carriage return, a tab, DEL, and U+009B (CSI: "ESC [" to an 8-bit terminal) in the file
 * name; an ESC itself is not XML 1.0 and the exNode is refused. */
static void test_ls_escapes(void)
{
    static const char head[] =
        "<?xml version=\"1.0\"?>\n<exnode xmlns:exnode=\"http://loci.cs.utk.edu/exnode\">\n"
        "<exnode:metadata name=\"size\" type=\"integer\">100</exnode:metadata>\n"
        "<exnode:metadata name=\"filename\" type=\"string\">";
    static const char tail[] =
        "</exnode:metadata>\n<exnode:mapping>\n"
        "<exnode:metadata name=\"exnode_offset\" type=\"integer\">0</exnode:metadata>\n"
        "<exnode:metadata name=\"logical_length\" type=\"integer\">100</exnode:metadata>\n"
        "<exnode:read>ibp://127.0.0.1:1/0#k/1/READ</exnode:read>\n"
        "</exnode:mapping>\n</exnode>\n";
    char doc[1024], path[4096];
    snprintf(path, sizeof path, "%s/esc.xnd", lns_test_tmpdir());
    snprintf(doc, sizeof doc, "%sa&#10;b&#13;c\td&#x7f;e&#x9b;[31mred\\x \xc3\xa9%s", head, tail);
    CU_ASSERT_EQUAL_FATAL(tt_write_file(path, doc, strlen(doc)), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_ls --no-probe '%s'", path), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "file: a\\nb\\rc\\td\\x7fe\\xc2\\x9b[31mred\\\\x \xc3\xa9\n"));
    CU_ASSERT_PTR_NULL(strchr(T.out, '\r'));
    CU_ASSERT_PTR_NULL(strstr(T.out, "\xc2\x9b"));
    CU_ASSERT(strncmp(T.out, "file: ", 6) == 0 && strchr(T.out, '\n') == strstr(T.out, "\nsize: "));
    /* JSON escapes what JSON must; the rest is valid JSON text as it is */
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_ls --no-probe --json '%s'", path), 0);
    CU_ASSERT(tj_valid(T.out));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "\"filename\":\"a\\u000ab\\u000dc\\u0009d"));

    snprintf(doc, sizeof doc, "%sa&#x1b;[31mred%s", head, tail);
    CU_ASSERT_EQUAL_FATAL(tt_write_file(path, doc, strlen(doc)), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_ls --no-probe '%s'", path), 3);
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    CU_ASSERT_PTR_NULL(strchr(T.err, 0x1b));
    CU_ASSERT_STRING_EQUAL(T.out, "");
}

/* ---- malformed exNodes ---- */

static void test_malformed_exnode(void)
{
    static const char *bad[] = {
        "not xml at all\n",
        "<?xml version=\"1.0\"?>\n<exnode xmlns=\"http://loci.cs.utk.edu/exnode\">\n"
        "<mapping><exnode_offset>-5</exnode_offset></mapping></exnode>\n",
        "<exnode xmlns=\"http://loci.cs.utk.edu/exnode\"><mapping>",
        "<notes xmlns=\"urn:example\"><mapping/></notes>\n",
    };
    char path[4096], copy[4096 + 16], o[4096];
    tt_revive(&T);
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
        snprintf(path, sizeof path, "%s/bad%zu.xnd", lns_test_tmpdir(), b);
        snprintf(copy, sizeof copy, "%s.orig", path);
        CU_ASSERT_EQUAL_FATAL(tt_write_file(path, bad[b], strlen(bad[b])), 0);
        CU_ASSERT_EQUAL_FATAL(tt_sh(&T, "cp '%s' '%s'", path, copy), 0);
        for (int c = 0; c < 4; c++) {
            char cmd[512];
            if (c == 0)
                snprintf(cmd, sizeof cmd, "$B/lors_augment --depot-list 127.0.0.1:%d",
                         T.dep[0].port);
            else
                snprintf(cmd, sizeof cmd, "$B/%s", c == 1 ? "lors_trim -m 0"
                                                   : c == 2 ? "lors_refresh" : "lors_ls");
            /* in place, and to -o (not for lors_ls) */
            CU_ASSERT_EQUAL(tt_sh(&T, "%s '%s'", cmd, path), 3);
            CU_ASSERT(strchr(T.err, '\n') == T.err + strlen(T.err) - 1);
            CU_ASSERT(strncmp(T.err, "lors_", 5) == 0);
            CU_ASSERT(tt_same_file(path, copy));
            if (c == 3)
                continue;
            snprintf(o, sizeof o, "%s/out%zu_%d.xnd", lns_test_tmpdir(), b, c);
            CU_ASSERT_EQUAL(tt_sh(&T, "%s -o '%s' '%s'", cmd, o, path), 3);
            CU_ASSERT_NOT_EQUAL(access(o, F_OK), 0);
        }
    }
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_ls '%s/no-such.xnd'", lns_test_tmpdir()), 3);
}

static const lns_test_case tests[] = {
    {"the test's JSON checker", test_json_checker},
    {"--help, --version, usage errors", test_help_version_usage},
    {"ls -p, -l, -h, --json; a killed depot", test_ls_views},
    {"ls: an expired mapping, a lost copy", test_ls_expired_and_lost},
    {"ls: a stopped depot's mappings dead, promptly", test_ls_stopped_depot},
    {"a malformed exNode: exit 3, nothing written", test_malformed_exnode},
    {"ls escapes control characters from the exNode", test_ls_escapes},
};

TT_MAIN(&T, "lors_ls; the manage tools' contract", ND, tests)
