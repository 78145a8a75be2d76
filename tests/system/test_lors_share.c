/* test_lors_share.c -- lors_share, run as a user runs it, against two real depots.
 *
 * A file uploaded with two copies is shared whole and by byte range; the shared exNode is
 * judged by what its holder can do with it (lors_download, libibp loads through its
 * capabilities) and by what it must not carry (write or manage capabilities, any capability
 * of the owner's exNode); --revoke must leave it unreadable and the owner's file whole; a
 * share that cannot be handed out must leave no alias behind (the depots' allocation counts,
 * which count aliases, are back where they were).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ibp.h"
#include "lns_test.h"
#include "test_tools.h"
#include "xnd.h"

#define ND 2

static tt_env_t T;

/* 1 if no capability of the exNode file owner appears in the text of file shared. */
static int shares_no_owner_cap(const char *owner, const char *shared)
{
    char text[1 << 16];
    xnd_t *o = tt_load(owner);
    int ok = o != NULL;
    text[0] = '\0';
    lns_test_slurp(shared, text, sizeof text);
    ok = ok && text[0];
    for (size_t i = 0; ok && i < o->nmaps; i++)
        for (int k = 0; k < 3; k++)
            if (o->maps[i]->cap[k] && strstr(text, o->maps[i]->cap[k]))
                ok = 0;
    xnd_free(o);
    return ok;
}

static void test_share_whole_and_revoke(void)
{
    char src[4096], xnd[4096], shared[4096], rev[4200];
    struct stat st;
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 3000000, 11, 2, 3, tt_dlist(&T, 0, 1, -1), NULL, src, xnd), 0);
    snprintf(shared, sizeof shared, "%s/whole.xnd", lns_test_tmpdir());
    snprintf(rev, sizeof rev, "%s.revoke", shared);
    CU_ASSERT_EQUAL_FATAL(tt_run(&T, NULL, NULL, "lors_share", "--no-rc", xnd, "-o", shared, NULL), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "6 aliases"));
    CU_ASSERT(tt_downloads_equal(&T, shared, src));
    /* read capabilities only, none of the owner's; the revoke file is the owner's alone */
    xnd_t *s = tt_load(shared);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(s->nmaps, 6);
    for (size_t i = 0; i < s->nmaps; i++) {
        CU_ASSERT_PTR_NOT_NULL(s->maps[i]->cap[XND_READ]);
        CU_ASSERT_PTR_NULL(s->maps[i]->cap[XND_WRITE]);
        CU_ASSERT_PTR_NULL(s->maps[i]->cap[XND_MANAGE]);
    }
    CU_ASSERT_EQUAL(xnd_size(s), 3000000);
    xnd_free(s);
    CU_ASSERT(shares_no_owner_cap(xnd, shared));
    CU_ASSERT_EQUAL(stat(rev, &st), 0);
    CU_ASSERT_EQUAL(st.st_mode & 0777, 0600);
    /* a second share to the same place is refused before any depot is asked */
    int before = tt_depot_allocs(&T, 0);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_share", "--no-rc", xnd, "-o", shared, NULL), 4);
    CU_ASSERT_EQUAL(tt_depot_allocs(&T, 0), before);
    /* revoked: the holder reads nothing, the owner everything */
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_share", "--no-rc", "--revoke", rev, NULL), 0);
    CU_ASSERT_EQUAL(tt_count(T.out, ": 3 revoked, 0 gone already"), 2);
    CU_ASSERT_EQUAL(tt_depot_allocs(&T, 0), before - 3);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_download --no-rc '%s' -o \"$D/revoked.out\"", shared), 6);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "no live replica"));
    CU_ASSERT(tt_downloads_equal(&T, xnd, src));
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_share", "--no-rc", "--revoke", rev, NULL), 0);
    CU_ASSERT_EQUAL(tt_count(T.out, ": 0 revoked, 3 gone already"), 2);
    tt_free_all(&T, xnd);
}

static void test_share_range(void)
{
    char src[4096], xnd[4096], shared[4096], want[4096], rev[4096];
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 2000000, 12, 1, 4, tt_dlist(&T, 0, 1, -1), NULL, src, xnd), 0);
    snprintf(shared, sizeof shared, "%s/range.xnd", lns_test_tmpdir());
    snprintf(rev, sizeof rev, "%s/range.keys", lns_test_tmpdir());
    snprintf(want, sizeof want, "%s/range.want", lns_test_tmpdir());
    CU_ASSERT_EQUAL_FATAL(tt_run(&T, NULL, NULL, "lors_share", "--no-rc", xnd, "-O", "700000",
                                 "-L", "600000", "-o", shared, "--revoke-file", rev,
                                 "-d", "10m", NULL), 0);
    CU_ASSERT_EQUAL_FATAL(tt_sh(&T, "tail -c +700001 '%s' | head -c 600000 >'%s'", src, want), 0);
    CU_ASSERT(tt_downloads_equal(&T, shared, want));
    /* each alias ends where its piece does: not one byte more through it */
    xnd_t *s = tt_load(shared);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(xnd_size(s), 600000);
    CU_ASSERT(s->nmaps >= 2);
    for (size_t i = 0; i < s->nmaps; i++) {
        const xnd_mapping_t *m = s->maps[i];
        char b[1];
        CU_ASSERT_EQUAL(m->alloc_offset, 0);
        CU_ASSERT_EQUAL(ibp_load(T.cli, m->cap[XND_READ], (uint64_t)m->logical_length, 1, b),
                        IBP_E_WOULD_EXCEED_LIMIT);
        CU_ASSERT(m->end.epoch - m->start.epoch <= 600);
    }
    xnd_free(s);
    CU_ASSERT(shares_no_owner_cap(xnd, shared));
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_share", "--no-rc", xnd, "-O", "1900000", "-L",
                           "200000", "-o", "x.xnd", NULL), 2);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_share", "--no-rc", "--revoke", rev, NULL), 0);
    tt_free_all(&T, xnd);
}

/* A share whose exNode cannot be written revokes what it made and leaves no revoke file. */
static void test_share_undone(void)
{
    char src[4096], xnd[4096], rev[4096];
    struct stat st;
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 500000, 13, 2, 2, tt_dlist(&T, 0, 1, -1), NULL, src, xnd), 0);
    int b0 = tt_depot_allocs(&T, 0), b1 = tt_depot_allocs(&T, 1);
    snprintf(rev, sizeof rev, "%s/undone.keys", lns_test_tmpdir());
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_share", "--no-rc", xnd, "-o",
                           "/nonexistent-dir/s.xnd", "--revoke-file", rev, NULL), 4);
    CU_ASSERT_EQUAL(tt_depot_allocs(&T, 0), b0);
    CU_ASSERT_EQUAL(tt_depot_allocs(&T, 1), b1);
    CU_ASSERT_NOT_EQUAL(stat(rev, &st), 0);
    /* an exNode without manage capabilities cannot be shared: nothing made, a line says why */
    CU_ASSERT_EQUAL_FATAL(tt_sh(&T, "grep -v MANAGE '%s' >\"$D/nomanage.xnd\"", xnd), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_share --no-rc \"$D/nomanage.xnd\" -o \"$D/nm.xnd\""), 6);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "no manage capability"));
    CU_ASSERT_EQUAL(tt_depot_allocs(&T, 0), b0);
    tt_free_all(&T, xnd);
}

static const lns_test_case tests[] = {
    {"share whole, download, revoke", test_share_whole_and_revoke},
    {"share a byte range", test_share_range},
    {"a share that fails leaves no alias", test_share_undone},
};

TT_MAIN(&T, "lors_share", ND, tests)
