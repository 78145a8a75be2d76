/* test_lors_tools_ec.c -- erasure coding as a user meets it: lors_upload --ec 4+2 on six real
 * depots, lors_ls's stripes view (text and --json) and exit codes as depots die, lors_download
 * byte-exact with two depots killed and failing with three, naming the bytes; lors_trim refusing
 * to leave a stripe with fewer than K pieces; -R resuming against the pieces' digests; --ec
 * refused with -c and with too few depots. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "test_tools.h"

#define ND 6

static tt_env_t T;

static void upload(char *src, char *xnd, size_t n)
{
    snprintf(src, 4096, "%s/ec.bin", lns_test_tmpdir());
    snprintf(xnd, 4096, "%s/ec.xnd", lns_test_tmpdir());
    CU_ASSERT_EQUAL_FATAL(tt_make_file(src, n, 41), 0);
    int rc = tt_sh(&T, "$B/lors_upload --no-rc -q --depot-list '%s' --ec 4+2 --ec-piece 64K "
                       "-d 1h --force -o '%s' '%s'", T.depots, xnd, src);
    if (rc != 0)
        fprintf(stderr, "lors_upload --ec: %s", T.err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
}

static void test_ls_and_download(void)
{
    char src[4096], xnd[4096], got[4200];
    tt_revive(&T);
    upload(src, xnd, 5 * 256 * 1024 + 777); /* 5 full stripes of 256 KiB and a short one */
    snprintf(got, sizeof got, "%s.got", src);

    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_ls --no-rc -l '%s'", xnd), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "erasure coding: 4+2 in pieces of 64K, 6 stripes"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "stripes 0-5  6/6  survives 2 more"));
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_ls --no-rc --json '%s'", xnd), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "\"ec\":{\"k\":4,\"m\":2,\"piece_size\":65536,"
                                         "\"stripes\":6,\"runs\":[{\"offset\":0,\"length\":"
                                         "1311497,\"first\":0,\"last\":5,\"alive\":6,"
                                         "\"survives\":2}],\"version\":2,\"bound\":true}"));

    /* one depot gone: every stripe survives one more loss; exit 10 says it */
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[0].srv, SIGKILL), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_ls --no-rc -l -T 3s '%s'", xnd), 10);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "5/6  survives 1 more"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "survives 1 more lost depot"));

    /* two gone: still byte-exact */
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[3].srv, SIGKILL), 0);
    int rc = tt_sh(&T, "$B/lors_download --no-rc --quiet -T 5s -o '%s' '%s'", got, xnd);
    CU_ASSERT(rc == 0 || rc == 10);
    CU_ASSERT(tt_same_file(got, src));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "had 4 of 6 pieces left"));

    /* three gone: lors_ls exit 8, lors_download fails naming the bytes */
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[5].srv, SIGKILL), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_ls --no-rc -l -T 3s '%s'", xnd), 8);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "3/6  LOST"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "cannot be rebuilt"));
    rc = tt_sh(&T, "$B/lors_download --no-rc --quiet -T 3s -o '%s.3' '%s'", got, xnd);
    CU_ASSERT_NOT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "bytes 0-1311496: fewer than 4 of the 6 pieces"));
    tt_revive(&T);
    CU_ASSERT_EQUAL(tt_downloads_equal(&T, xnd, src), 1);
    tt_free_all(&T, xnd);
}

/* lors_trim counts pieces, not copies: taking the columns of three depots away would leave
 * stripes that cannot be rebuilt, though every byte of the file is "covered" by some
 * mapping; two may go. */
static void test_trim_counts_pieces(void)
{
    char src[4096], xnd[4096], out[4200];
    tt_revive(&T);
    upload(src, xnd, 3 * 256 * 1024);
    snprintf(out, sizeof out, "%s.trim", xnd);
    char d0[64], d1[64], d2[64];
    snprintf(d0, sizeof d0, "127.0.0.1:%d", T.dep[0].port);
    snprintf(d1, sizeof d1, "127.0.0.1:%d", T.dep[1].port);
    snprintf(d2, sizeof d2, "127.0.0.1:%d", T.dep[2].port);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_trim --no-rc --depot %s --depot %s --depot %s -o '%s' "
                              "'%s'", d0, d1, d2, out, xnd), 6);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "fewer pieces than it takes to rebuild them"));
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_trim --no-rc --depot %s --depot %s -o '%s' '%s'", d0,
                          d1, out, xnd), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_ls --no-rc -l '%s'", out), 10);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "4/6  survives 0 more"));
    CU_ASSERT_EQUAL(tt_downloads_equal(&T, out, src), 1);
    tt_free_all(&T, xnd);
}

static void test_refused(void)
{
    char src[4096];
    snprintf(src, sizeof src, "%s/small.bin", lns_test_tmpdir());
    CU_ASSERT_EQUAL_FATAL(tt_make_file(src, 1000, 42), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_upload --no-rc --depot-list '%s' --ec 4+2 -c 2 -o - "
                              "'%s'", T.depots, src), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "replaces copies"));
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_upload --no-rc --depot-list '%s' --ec 4 -o - '%s'",
                          T.depots, src), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "expected K+M"));
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_upload --no-rc --depot-list '%s' --ec 4+2 -o - '%s'",
                          tt_dlist(&T, 0, 1, 2, 3, 4, -1), src), 5);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "needs 6 distinct depots; 5 given"));
}

/* -R on an erasure-coded file: the prefix is checked data piece by data piece against the
 * columns' digests (the short last stripe's pieces with their zero padding), cut at the first
 * piece that fails or is incomplete, and the rest fetched: byte-exact every time. */
static void test_resume(void)
{
    char src[4096], xnd[4096], part[4200];
    tt_revive(&T);
    upload(src, xnd, 700001); /* 2 full stripes of 256 KiB, a last one of 175713 bytes */
    snprintf(part, sizeof part, "%s.part", src);
    struct {
        const char *make;       /* builds the partial file from $S */
        const char *says;       /* on stderr, or NULL: nothing */
    } cases[] = {
        /* a good prefix that ends on a piece: kept whole, no message */
        {"head -c 262144 \"$S\"", NULL},
        /* a good prefix, then garbage: cut at the last whole good piece */
        {"head -c 300000 \"$S\"; head -c 5000 /dev/zero | tr '\\0' x",
         "the first 262144 of its 305000 bytes match"},
        /* a wrong byte in piece 1: only piece 0 is kept */
        {"head -c 100000 \"$S\"; printf Z; tail -c +100002 \"$S\" | head -c 60000",
         "the first 65536 of its 160001 bytes match"},
        /* all but the end of the short last piece: the padded pieces before it vouch */
        {"head -c 699990 \"$S\"", "the first 656075 of its 699990 bytes match"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CU_ASSERT_EQUAL(tt_sh(&T, "S='%s'; { %s; } > '%s'", src, cases[i].make, part), 0);
        int rc = tt_sh(&T, "$B/lors_download --no-rc -R -o '%s' '%s'", part, xnd);
        CU_ASSERT_EQUAL(rc, 0);
        if (cases[i].says) {
            CU_ASSERT_PTR_NOT_NULL(strstr(T.err, cases[i].says));
            if (!strstr(T.err, cases[i].says))
                fprintf(stderr, "case %zu: %s", i, T.err);
        } else {
            CU_ASSERT_EQUAL(T.err[0], '\0');
        }
        CU_ASSERT(tt_same_file(part, src));
    }
    tt_free_all(&T, xnd);
}

/* An exNode without the mappings of data columns 0 and 1 (trimmed after their depots died):
 * those blocks read parity from the start, ahead of the writer, instead of waiting until the
 * writer waits for their stripe (which made such a download 0.6x a healthy one). */
static void test_missing_columns_read_ahead(void)
{
    char src[4096], xnd[4096], out[4200], ev[4200], cmd[512] = "";
    tt_revive(&T);
    upload(src, xnd, 8 * 256 * 1024);
    snprintf(out, sizeof out, "%s.two", xnd);
    snprintf(ev, sizeof ev, "%s.ev", xnd);
    xnd_t *x = tt_load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    for (size_t i = 0; i < x->nmaps; i++) {
        int64_t col = -1;
        if (x->maps[i]->func &&
            xnd_meta_get_int(&x->maps[i]->func->args, "piece", &col) == XND_OK && col < 2)
            snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), " -m %zu", i);
    }
    xnd_free(x);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_trim --no-rc%s -o '%s' '%s'", cmd, out, xnd), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_download --no-rc --quiet --events '%s' -o '%s.got' '%s'",
                          ev, out, out), 0);
    char got[4300];
    snprintf(got, sizeof got, "%s.got", out);
    CU_ASSERT(tt_same_file(got, src));
    static char text[1 << 18];
    lns_test_slurp(ev, text, sizeof text);
    const char *w = strstr(text, " WRITE "), *f = strstr(text, " FETCH_START ");
    const char *b4 = NULL;
    for (; f; f = strstr(f + 1, " FETCH_START "))
        if (strstr(f, " frag=4 ") && strstr(f, " frag=4 ") < strchr(f + 1, '\n')) {
            b4 = f;
            break;
        }
    CU_ASSERT_PTR_NOT_NULL(w);
    CU_ASSERT_PTR_NOT_NULL(b4);
    CU_ASSERT(b4 && w && b4 < w); /* stripe 1's block 0 started before stripe 0 was written */
    tt_free_all(&T, xnd);
}

static const lns_test_case tests[] = {
    {"missing data columns read parity ahead of the writer", test_missing_columns_read_ahead},
    {"-R checks the prefix against the pieces' digests", test_resume},
    {"upload --ec, ls stripes, download with depots killed", test_ls_and_download},
    {"lors_trim counts pieces, not copies", test_trim_counts_pieces},
    {"--ec refused: with -c, malformed, too few depots", test_refused},
};

TT_MAIN(&T, "erasure coding from the command line", ND, tests)
