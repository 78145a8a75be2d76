/* test_lors_augment_ec.c -- lors_augment on erasure-coded files and between layouts, on eight
 * real depots: the missing pieces of a 4+2 file decoded back onto new depots (so the file
 * then survives two more losses); refused, with nothing leaked and the exNode unchanged, when
 * too few pieces survive or no depot can take the pieces; a replicated file converted to 4+2
 * and back to copies, byte-exact each time, the old allocations freed when the exNode is
 * replaced and kept when the new one goes elsewhere (-o); a conversion whose source is lost
 * failing on the bytes with nothing left allocated, and one interrupted freeing what it
 * stored; lors_refresh on the pieces' leases. */
#include <signal.h>
#include <sys/types.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_tools.h"

#define ND 8

static tt_env_t T;

static void upload_ec(const char *depots, size_t n, uint64_t seed, char *src, char *xnd)
{
    int id = ++T.seq;
    snprintf(src, 4096, "%s/ec%d.bin", lns_test_tmpdir(), id);
    snprintf(xnd, 4096, "%s/ec%d.xnd", lns_test_tmpdir(), id);
    CU_ASSERT_EQUAL_FATAL(tt_make_file(src, n, seed), 0);
    int rc = tt_sh(&T, "$B/lors_upload --no-rc -q --depot-list '%s' --ec 4+2 --ec-piece 64K "
                       "-F 2 -d 1h -o '%s' '%s'", depots, xnd, src);
    if (rc != 0)
        fprintf(stderr, "lors_upload --ec: %s", T.err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
}

/* Mappings of the exNode file with a read capability on depot i. */
static int maps_on(const char *xnd, int i)
{
    xnd_t *x = tt_load(xnd);
    int n = 0;
    for (size_t q = 0; x && q < x->nmaps; q++)
        n += x->maps[q]->cap[XND_READ] && tt_cap_port(x->maps[q]->cap[XND_READ]) == T.dep[i].port;
    xnd_free(x);
    return n;
}

static void allocs(int *per)
{
    for (int i = 0; i < ND; i++)
        per[i] = tt_depot_allocs(&T, i);
}

static int ec_k(const char *xnd)
{
    xnd_t *x = tt_load(xnd);
    lors_ec_info_t ec = {0};
    char err[128];
    int k = x && lors_ec_info(x, &ec, err, sizeof err) == LORS_OK && ec.present ? ec.k : 0;
    xnd_free(x);
    return k;
}

/* The missing pieces come back on depots that hold none of the stripes; then the file
 * survives two more losses.  Too few survivors, or no depot fit: refused, nothing kept. */
static void test_missing_pieces(void)
{
    char src[4096], xnd[4096], before[4200];
    int a0[ND], a1[ND];
    tt_revive(&T);
    upload_ec(tt_dlist(&T, 0, 1, 2, 3, 4, 5, -1), 900000, 51, src, xnd);
    snprintf(before, sizeof before, "%s.before", xnd);
    CU_ASSERT_EQUAL(tt_sh(&T, "cp '%s' '%s'", xnd, before), 0);
    int lost = maps_on(xnd, 1) + maps_on(xnd, 4);
    CU_ASSERT(lost >= 2);

    /* nothing missing: nothing to do */
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_augment --no-rc -d 10m -V --depot-list '%s' '%s'", T.depots,
                          xnd), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, ": 0 new mappings"));
    CU_ASSERT(tt_same_file(xnd, before));

    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[1].srv, SIGKILL), 0);
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[4].srv, SIGKILL), 0);
    /* -c is about copies */
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_augment --no-rc -d 10m -c 2 --depot-list '%s' '%s'", T.depots,
                          xnd), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "erasure coded"));

    /* only the six depots of the file: no depot may take a piece of those stripes */
    allocs(a0);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_augment --no-rc -d 10m -T 3s --depot-list '%s' '%s'",
                          tt_dlist(&T, 0, 1, 2, 3, 4, 5, -1), xnd), 5);
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "no depot"));
    CU_ASSERT(tt_same_file(xnd, before));
    allocs(a1);
    CU_ASSERT_EQUAL(memcmp(a0, a1, sizeof a0), 0);

    /* all eight: the two lost columns are decoded onto depots 6 and 7 */
    int rc = tt_sh(&T, "$B/lors_augment --no-rc -d 10m -V -T 3s --depot-list '%s' '%s'", T.depots, xnd);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc)
        fprintf(stderr, "%s", T.err);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "decoded"));
    CU_ASSERT_EQUAL(maps_on(xnd, 6) + maps_on(xnd, 7), lost);
    CU_ASSERT_EQUAL(maps_on(xnd, 1) + maps_on(xnd, 4), lost); /* the dead ones stay (trim -u) */
    /* two more depots die: still any 4 of each stripe's 6 pieces */
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[0].srv, SIGKILL), 0);
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[2].srv, SIGKILL), 0);
    CU_ASSERT_EQUAL(tt_downloads_equal(&T, xnd, src), 1);
    CU_ASSERT_NOT_EQUAL(tt_sh(&T, "$B/lors_download --no-rc --quiet -T 3s -o /dev/null '%s'",
                              before), 0);

    /* three of six gone (0, 2 and 4 on the old exNode): the stripes cannot be rebuilt */
    CU_ASSERT_EQUAL(tt_sh(&T, "cp '%s' '%s'", before, xnd), 0);
    allocs(a0);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_augment --no-rc -d 10m -T 3s --depot-list '%s' '%s'", T.depots,
                          xnd), 6);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "fewer than k pieces"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "bytes 0-"));
    CU_ASSERT(tt_same_file(xnd, before));
    allocs(a1);
    CU_ASSERT_EQUAL(memcmp(a0, a1, sizeof a0), 0);
    tt_revive(&T);
    tt_free_all(&T, before);
}

/* Replicated -> 4+2 -> copies, byte-exact each time; the replaced layout's allocations freed. */
static void test_convert_both_ways(void)
{
    char src[4096], xnd[4096], rep[4200], ecx[4200], other[4200];
    int a0[ND], a1[ND];
    tt_revive(&T);
    allocs(a0);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 1300000, 52, 2, 2, tt_dlist(&T, 0, 1, 2, 3, -1),
                                    "--no-rc -q", src, xnd), 0);
    snprintf(rep, sizeof rep, "%s.rep", xnd);
    snprintf(ecx, sizeof ecx, "%s.ec", xnd);
    snprintf(other, sizeof other, "%s.other", xnd);
    CU_ASSERT_EQUAL(tt_sh(&T, "cp '%s' '%s'", xnd, rep), 0);

    /* refused combinations, before anything is allocated */
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_augment --no-rc -d 10m --ec 4+2 -c 2 --depot-list '%s' '%s'",
                          T.depots, xnd), 2);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_augment --no-rc -d 10m --ec off --depot-list '%s' '%s'",
                          T.depots, xnd), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "not erasure coded"));
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_augment --no-rc -d 10m --ec 4+1+1 --depot-list '%s' '%s'",
                          T.depots, xnd), 2);

    /* to -o: a new exNode, the input and its copies left as they were */
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_augment --no-rc -d 10m -q --ec 4+2 --ec-piece 64K "
                              "--depot-list '%s' -o '%s' '%s'", T.depots, other, xnd), 0);
    CU_ASSERT_EQUAL(ec_k(other), 4);
    CU_ASSERT(tt_same_file(xnd, rep));
    CU_ASSERT_EQUAL(tt_downloads_equal(&T, xnd, src), 1);
    CU_ASSERT_EQUAL(tt_downloads_equal(&T, other, src), 1);
    tt_free_all(&T, other);

    /* in place: the replicated copies are freed once the erasure-coded exNode is written */
    int rc = tt_sh(&T, "$B/lors_augment --no-rc -d 10m -V --ec 4+2 --ec-piece 64K --depot-list '%s' "
                       "'%s'", T.depots, xnd);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc)
        fprintf(stderr, "%s", T.err);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "copies -> erasure coded"));
    CU_ASSERT_EQUAL(ec_k(xnd), 4);
    CU_ASSERT_EQUAL(tt_downloads_equal(&T, xnd, src), 1);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_download --no-rc --quiet -T 3s -o /dev/null '%s'", rep),
                    6);
    CU_ASSERT_EQUAL(tt_sh(&T, "cp '%s' '%s'", xnd, ecx), 0);

    /* and back: 2 copies (the default), the pieces freed */
    rc = tt_sh(&T, "$B/lors_augment --no-rc -d 10m -V --ec off --depot-list '%s' '%s'", T.depots, xnd);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc)
        fprintf(stderr, "%s", T.err);
    static char said[sizeof T.err]; /* what it said of the pieces it freed, if any are left */
    snprintf(said, sizeof said, "%s", T.err);
    CU_ASSERT_EQUAL(ec_k(xnd), 0);
    CU_ASSERT_EQUAL(tt_downloads_equal(&T, xnd, src), 1);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_download --no-rc --quiet -T 3s -o /dev/null '%s'", ecx),
                    6);
    xnd_t *x = tt_load(xnd);
    xnd_range_t *r = NULL;
    size_t nr = 0;
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(lors_ls_logical(x, NULL, &r, &nr), LORS_OK);
    for (size_t i = 0; i < nr; i++)
        CU_ASSERT_EQUAL(r[i].count, 2);
    free(r);
    /* every allocation on the depots is this exNode's: nothing of the old layouts is left */
    allocs(a1);
    int extra = 0;
    for (int i = 0; i < ND; i++)
        extra += a1[i] - a0[i];
    CU_ASSERT_EQUAL(extra, (int)x->nmaps);
    if (extra != (int)x->nmaps)
        fprintf(stderr, "\n  %d allocations for %zu mappings; lors_augment said:\n%s", extra,
                x->nmaps, said);
    xnd_free(x);
    tt_free_all(&T, xnd);
}

/* The source cannot be read: the read's reason, named bytes, nothing left allocated. */
static void test_convert_lost_source(void)
{
    char src[4096], xnd[4096], before[4200];
    int a0[ND], a1[ND];
    tt_revive(&T);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 600000, 53, 1, 2, tt_dlist(&T, 0, 1, -1), "--no-rc -q",
                                    src, xnd), 0);
    snprintf(before, sizeof before, "%s.before", xnd);
    CU_ASSERT_EQUAL(tt_sh(&T, "cp '%s' '%s'", xnd, before), 0);
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[1].srv, SIGKILL), 0);
    allocs(a0);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_augment --no-rc -d 10m -T 3s --ec 2+1 --ec-piece 64K "
                              "--depot-list '%s' '%s'", tt_dlist(&T, 2, 3, 4, 5, -1), xnd), 6);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "reading the file"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "bytes "));
    CU_ASSERT(tt_same_file(xnd, before));
    allocs(a1);
    a0[1] = a1[1] = 0;
    CU_ASSERT_EQUAL(memcmp(a0, a1, sizeof a0), 0);
    tt_revive(&T);
    tt_free_all(&T, xnd);
}

/* lors_refresh on the pieces: every column mapping's lease, each one's own end in the exNode. */
static void test_refresh_pieces(void)
{
    char src[4096], xnd[4096];
    tt_revive(&T);
    upload_ec(tt_dlist(&T, 2, 3, 4, 5, 6, 7, -1), 500000, 54, src, xnd);
    xnd_t *x = tt_load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    int64_t before = x->maps[0]->end.epoch;
    size_t n = x->nmaps;
    xnd_free(x);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_refresh --no-rc -s 30m '%s'", xnd), 0);
    x = tt_load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(x->nmaps, n);
    for (size_t i = 0; i < x->nmaps; i++)
        CU_ASSERT(x->maps[i]->end.epoch < before - 20 * 60); /* 1 h -> 30 min from now */
    xnd_free(x);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_refresh --no-rc -d 20m '%s'", xnd), 0);
    x = tt_load(xnd);
    for (size_t i = 0; x && i < x->nmaps; i++)
        CU_ASSERT(x->maps[i]->end.epoch > before - 20 * 60 && x->maps[i]->end.epoch <= before + 60);
    xnd_free(x);
    CU_ASSERT_EQUAL(tt_downloads_equal(&T, xnd, src), 1);
    tt_free_all(&T, xnd);
}

/* SIGTERM mid-conversion (one target depot SIGSTOPped holds the upload): exit 143, what was
 * stored freed, the input unchanged. */
static void test_convert_interrupted(void)
{
    char src[4096], xnd[4096], before[4200], ev[4200];
    int a0[ND], a1[ND];
    tt_bg_t bg;
    tt_revive(&T);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 3000000, 55, 1, 2, tt_dlist(&T, 0, 1, -1), "--no-rc -q",
                                    src, xnd), 0);
    snprintf(before, sizeof before, "%s.before", xnd);
    snprintf(ev, sizeof ev, "%s.events", xnd);
    CU_ASSERT_EQUAL(tt_sh(&T, "cp '%s' '%s'", xnd, before), 0);
    allocs(a0);
    CU_ASSERT_EQUAL_FATAL(lns_test_server_kill(&T.dep[7].srv, SIGSTOP), 0);
    CU_ASSERT_EQUAL_FATAL(tt_spawn(&T, &bg, "lors_augment", "--no-rc", "-d", "10m", "-T", "3s",
                                   "--ec", "4+2", "--ec-piece", "64K", "--events", ev,
                                   "--depot-list", tt_dlist(&T, 2, 3, 4, 5, 6, 7, -1), xnd,
                                   NULL), 0);
    CU_ASSERT(tt_wait_lines(ev, "ALLOCATE", 5, 15000));
    CU_ASSERT_EQUAL(kill(bg.pid, SIGTERM), 0);
    int rc = tt_wait(&T, &bg, 20000);
    CU_ASSERT_EQUAL(rc, 143);
    if (rc != 143)
        fprintf(stderr, "%s", T.err);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "interrupted; freed"));
    CU_ASSERT(tt_same_file(xnd, before));
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[7].srv, SIGCONT), 0);
    allocs(a1);
    /* depot 7 may still make the allocation asked of it while stopped: its lease ends it */
    a0[7] = a1[7] = 0;
    CU_ASSERT_EQUAL(memcmp(a0, a1, sizeof a0), 0);
    CU_ASSERT_EQUAL(tt_downloads_equal(&T, xnd, src), 1);
    tt_free_all(&T, xnd);
}

static const lns_test_case tests[] = {
    {"SIGTERM mid-conversion frees what it stored", test_convert_interrupted},
    {"lors_refresh sets each piece's lease", test_refresh_pieces},
    {"missing pieces decoded back; refused when too few survive or no depot fits",
     test_missing_pieces},
    {"replicated -> 4+2 -> copies, byte-exact, old layouts freed", test_convert_both_ways},
    {"a conversion whose source is lost fails on its bytes, nothing allocated",
     test_convert_lost_source},
};

TT_MAIN(&T, "lors_augment on erasure-coded files and between layouts", ND, tests)
