/* test_lors_tools_safety.c -- the tools never drop the user's handle on their storage: an
 * interrupted or failed upload or augment frees what it allocated (or, with --keep-partial,
 * keeps it in a partial exNode), and no tool overwrites an existing exNode without --force.
 *
 * Three real depots; the judge is each depot's own count of allocations (STATUS: NA), taken
 * before and after every run, so an allocation left with no exNode pointing to it shows up as
 * a count that did not come back.  An interrupt lands mid-upload for certain because the
 * input is a pipe the test holds open: the upload has allocated, stored what it was given and
 * waits for more when the signal comes.  An augment is held mid-way by a target that accepts
 * connections and never answers (a listening socket nobody accepts on).  A failed exNode write
 * is a real one: stdout on /dev/full, or a file that appears while the upload runs.
 */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lns_test.h"
#include "test_depot.h"
#include "test_lors.h"
#include "test_tools.h"
#include "xnd.h"

#define ND 3
#define MIB (1 << 20)

static tt_env_t T;

/* Each depot's allocation count. */
static void counts(int c[ND])
{
    for (int i = 0; i < ND; i++) {
        c[i] = tt_depot_allocs(&T, i);
        CU_ASSERT(c[i] >= 0);
    }
}

/* Every depot holds as many allocations as in `want`, plus add[i] (NULL: none). */
static void counts_are(const int want[ND], const int *add)
{
    for (int i = 0; i < ND; i++) {
        int got = tt_depot_allocs(&T, i), w = want[i] + (add ? add[i] : 0);
        if (got != w)
            fprintf(stderr, "depot %d holds %d allocations, want %d\n", i, got, w);
        CU_ASSERT_EQUAL(got, w);
    }
}

static int total(const int c[ND])
{
    return c[0] + c[1] + c[2];
}

/* Poll until the depots together hold at least base + n allocations (10 s at most). */
static int wait_allocs(const int base[ND], int n)
{
    int c[ND];
    for (int waited = 0; waited < 10000; waited += 10) {
        for (int i = 0; i < ND; i++)
            c[i] = tt_depot_allocs(&T, i);
        if (total(c) >= total(base) + n)
            return 1;
        lns_test_sleep_ms(10);
    }
    return 0;
}

static void write_all(int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0)
            break;
        p += w;
        n -= (size_t)w;
    }
}

static const char *path(const char *name)
{
    static char buf[4][PATH_MAX];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, PATH_MAX, "%s", lns_test_path(name));
    return b;
}

static int exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* The one line of stderr that holds needle, printed when missing. */
static int err_has(const char *needle)
{
    if (strstr(T.err, needle))
        return 1;
    fprintf(stderr, "stderr lacks \"%s\":\n%s", needle, T.err);
    return 0;
}

/* ---- interrupts ---- */

/* SIGINT while the upload waits for more input: every allocation freed, one line, exit 130. */
static void test_upload_sigint_frees(void)
{
    int base[ND];
    tt_bg_t bg;
    unsigned char *data = tl_data(3 * MIB, 71);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    counts(base);
    unlink(path("int.xnd"));
    CU_ASSERT_EQUAL_FATAL(tt_spawn(&T, &bg, "lors_upload", "--no-rc", "--depot-list", T.depots,
                                   "-c", "3", "-bs", "1M", "-d", "10m", "-i", "-o",
                                   path("int.xnd"), (char *)NULL), 0);
    /* two whole fragments and a half: the third waits for the rest of its first chunk */
    write_all(bg.in, data, 5 * MIB / 2);
    CU_ASSERT(wait_allocs(base, 6));
    kill(bg.pid, SIGINT);
    int rc = tt_wait(&T, &bg, 20000);
    CU_ASSERT_EQUAL(rc, 130);
    CU_ASSERT(err_has("lors_upload: interrupted after "));
    CU_ASSERT(err_has("; freed 6 allocations on 3 depots\n"));
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    CU_ASSERT(!exists(path("int.xnd")));
    counts_are(base, NULL);
    free(data);
}

/* SIGTERM with --keep-partial: the complete fragment stays, in an exNode written atomically
 * that reads back, and only the incomplete one is freed; exit 143. */
static void test_upload_sigterm_keep_partial(void)
{
    int base[ND];
    tt_bg_t bg;
    unsigned char *data = tl_data(3 * MIB, 72);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    CU_ASSERT_EQUAL_FATAL(tt_write_file(path("part.src"), data, 2 * MIB), 0);
    counts(base);
    unlink(path("part.xnd"));
    unlink(path("part.ev"));
    CU_ASSERT_EQUAL_FATAL(tt_spawn(&T, &bg, "lors_upload", "--no-rc", "--depot-list",
                                   tt_dlist(&T, 0, 1, -1), "-c", "2", "-bs", "2M", "-d", "10m",
                                   "-i", "--keep-partial", "--events", path("part.ev"), "-o",
                                   path("part.xnd"), (char *)NULL), 0);
    /* fragment 0 whole (two chunks), then the first chunk of fragment 1 */
    write_all(bg.in, data, 3 * MIB);
    CU_ASSERT(tt_wait_lines(path("part.ev"), " COPY_DONE ", 2, 10000));
    CU_ASSERT(tt_wait_lines(path("part.ev"), " ALLOCATE ", 4, 10000));
    CU_ASSERT(tt_wait_lines(path("part.ev"), " STORE_END ", 6, 10000));
    kill(bg.pid, SIGTERM);
    int rc = tt_wait(&T, &bg, 20000);
    CU_ASSERT_EQUAL(rc, 143);
    CU_ASSERT(err_has("lors_upload: interrupted after "));
    CU_ASSERT(err_has("kept 1 complete fragment (2 mappings) in "));
    CU_ASSERT(err_has("; freed 2 allocations on 2 depots\n"));
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    int one[ND] = {1, 1, 0};
    counts_are(base, one);
    xnd_t *x = tt_load(path("part.xnd"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(x->nmaps, 2);
    for (size_t i = 0; i < x->nmaps; i++) {
        CU_ASSERT_EQUAL(x->maps[i]->exnode_offset, 0);
        CU_ASSERT_EQUAL(x->maps[i]->logical_length, 2 * MIB);
    }
    xnd_free(x);
    /* what it kept reads back */
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_download -L 2M -o \"$D/part.got\" \"$D/part.xnd\""), 0);
    CU_ASSERT(tt_same_file(path("part.got"), path("part.src")));
    tt_free_all(&T, path("part.xnd"));
    counts_are(base, NULL);
    free(data);
}

/* ---- failed exNode writes ---- */

/* The exNode goes to stdout, which is /dev/full: the upload is complete, its exNode cannot
 * be kept, so it is freed (plain and with transforms). */
static void test_upload_exnode_write_fails(void)
{
    int base[ND];
    CU_ASSERT_EQUAL_FATAL(tt_make_file(path("full.src"), 3 * MIB + 5, 73), 0);
    counts(base);
    const char *extra[] = {"", "-z -bs 1M"};
    for (int k = 0; k < 2; k++) {
        int rc = tt_sh(&T, "$B/lors_upload --no-rc --depot-list \"$L\" -c 3 -F 2 -d 10m %s -o - "
                           "\"$D/full.src\" > /dev/full", extra[k]);
        CU_ASSERT_EQUAL(rc, 4);
        CU_ASSERT(err_has("lors_upload: writing the exNode to stdout: "));
        /* with -z the fragments are block-size ones: how many depends on zlib */
        CU_ASSERT(err_has(k == 0 ? "lors_upload: freed 6 allocations on 3 depots\n"
                                 : " allocations on 3 depots\n"));
        counts_are(base, NULL);
    }
}

/* The output file appears while the upload runs (another program wrote it): it is not
 * replaced, and the upload's allocations are freed. */
static void test_upload_output_appears(void)
{
    int base[ND];
    tt_bg_t bg;
    unsigned char data[MIB];
    lns_test_fill(data, sizeof data, 74);
    counts(base);
    unlink(path("race.xnd"));
    CU_ASSERT_EQUAL_FATAL(tt_spawn(&T, &bg, "lors_upload", "--no-rc", "--depot-list", T.depots,
                                   "-c", "2", "-bs", "1M", "-d", "10m", "-i", "-o",
                                   path("race.xnd"), (char *)NULL), 0);
    write_all(bg.in, data, sizeof data);
    CU_ASSERT(wait_allocs(base, 2));
    CU_ASSERT_EQUAL(tt_write_file(path("race.xnd"), "theirs\n", 7), 0);
    int rc = tt_wait(&T, &bg, 20000); /* closes the input: the upload ends */
    CU_ASSERT_EQUAL(rc, 4);
    CU_ASSERT(err_has(" exists; use --force to overwrite it\n"));
    CU_ASSERT(err_has("lors_upload: freed 2 allocations on 2 depots\n"));
    CU_ASSERT_EQUAL(tt_sh(&T, "printf 'theirs\\n' | cmp -s - \"$D/race.xnd\""), 0);
    counts_are(base, NULL);
}

/* An exNode of one copy on depot 2 in two pieces, for the augment tests: its path. */
static const char *augment_source(const char *name, uint64_t seed)
{
    char src[4096], xnd[4096];
    static char keep[PATH_MAX];
    CU_ASSERT_EQUAL(tt_upload(&T, 2 * MIB, seed, 1, 2, tt_dlist(&T, 2, -1), NULL, src, xnd), 0);
    snprintf(keep, sizeof keep, "%s", path(name));
    rename(xnd, keep);
    return keep;
}

/* lors_augment whose exNode cannot be written: the new copies are freed, the exNode is as
 * it was. */
static void test_augment_write_fails(void)
{
    int base[ND];
    const char *x = augment_source("aug1.xnd", 75);
    CU_ASSERT_EQUAL(tt_sh(&T, "cp \"%s\" \"$D/aug1.copy\"", x), 0);
    counts(base);
    int rc = tt_sh(&T, "$B/lors_augment --no-rc --depot-list '%s' -c 1 -d 10m -o - \"%s\" "
                       "> /dev/full", tt_dlist(&T, 0, 1, -1), x);
    CU_ASSERT_EQUAL(rc, 4);
    CU_ASSERT(err_has("lors_augment: writing the exNode to stdout: "));
    CU_ASSERT(err_has("lors_augment: freed 2 allocations on 2 depots\n"));
    counts_are(base, NULL);
    CU_ASSERT(tt_same_file(x, path("aug1.copy")));
    tt_free_all(&T, x);
}

/* SIGINT while one new copy waits on a depot that never answers and the other is complete:
 * the complete one is freed, the exNode is untouched, exit 130. */
static void test_augment_sigint(void)
{
    int base[ND], hport, hole = raw_listen_loopback(&hport);
    char list[128];
    tt_bg_t bg;
    CU_ASSERT_FATAL(hole >= 0);
    const char *x = augment_source("aug2.xnd", 76);
    CU_ASSERT_EQUAL(tt_sh(&T, "cp \"%s\" \"$D/aug2.copy\"", x), 0);
    snprintf(list, sizeof list, "127.0.0.1:%d,127.0.0.1:%d", T.dep[0].port, hport);
    counts(base);
    unlink(path("aug2.ev"));
    CU_ASSERT_EQUAL_FATAL(tt_spawn(&T, &bg, "lors_augment", "--no-rc", "--depot-list", list,
                                   "-c", "1", "-d", "10m", "-T", "3", "--events", path("aug2.ev"),
                                   x, (char *)NULL), 0);
    CU_ASSERT(tt_wait_lines(path("aug2.ev"), " SEND_END ", 1, 10000));
    kill(bg.pid, SIGINT);
    int rc = tt_wait(&T, &bg, 20000);
    CU_ASSERT_EQUAL(rc, 130);
    CU_ASSERT(err_has("lors_augment: interrupted; freed 1 allocation on 1 depot\n"));
    counts_are(base, NULL);
    CU_ASSERT(tt_same_file(x, path("aug2.copy")));
    close(hole);
    tt_free_all(&T, x);
}

/* ---- no overwriting ---- */

static const char OLD[] = "<old exNode: the only handle on its allocations>\n";

static void old_file(const char *name)
{
    CU_ASSERT_EQUAL(tt_write_file(path(name), OLD, sizeof OLD - 1), 0);
    CU_ASSERT_EQUAL(tt_write_file(path("old.ref"), OLD, sizeof OLD - 1), 0);
}

/* The file is byte for byte what old_file wrote. */
static int old_intact(const char *name)
{
    return tt_same_file(path(name), path("old.ref"));
}

/* lors_upload to an existing exNode: refused before anything is allocated, the old file as it
 * was; the same for the default FILE.xnd; --force replaces it. */
static void test_upload_no_clobber(void)
{
    int base[ND];
    char msg[PATH_MAX + 64];
    CU_ASSERT_EQUAL_FATAL(tt_make_file(path("nc.src"), 100000, 77), 0);
    old_file("nc.xnd");
    counts(base);
    int rc = tt_sh(&T, "$B/lors_upload --no-rc --depot-list \"$L\" -c 2 -d 10m -o \"$D/nc.xnd\" "
                       "\"$D/nc.src\"");
    CU_ASSERT_EQUAL(rc, 4);
    snprintf(msg, sizeof msg, "lors_upload: %s exists; use --force to overwrite it\n",
             path("nc.xnd"));
    CU_ASSERT_STRING_EQUAL(T.err, msg);
    CU_ASSERT(old_intact("nc.xnd"));
    counts_are(base, NULL);

    /* the default output, FILE.xnd */
    old_file("nc.src.xnd");
    rc = tt_sh(&T, "$B/lors_upload --no-rc --depot-list \"$L\" -d 10m \"$D/nc.src\"");
    CU_ASSERT_EQUAL(rc, 4);
    CU_ASSERT(err_has("nc.src.xnd exists; use --force to overwrite it\n"));
    CU_ASSERT(old_intact("nc.src.xnd"));
    counts_are(base, NULL);

    rc = tt_sh(&T, "$B/lors_upload --no-rc --depot-list \"$L\" -c 2 -d 10m --force "
                   "-o \"$D/nc.xnd\" \"$D/nc.src\"");
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT(tt_downloads_equal(&T, path("nc.xnd"), path("nc.src")));
    tt_free_all(&T, path("nc.xnd"));
    counts_are(base, NULL);
}

/* lors_augment, lors_trim and lors_refresh with -o an existing file: refused before any depot
 * is touched (trim -d frees nothing), both files as they were; --force writes it; -o naming
 * the input itself is the in-place rewrite, always allowed. */
static void test_rewrite_tools_no_clobber(void)
{
    int base[ND];
    char src[4096], xnd[4096];
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 300000, 78, 2, 2, tt_dlist(&T, 0, 1, -1), NULL, src,
                                    xnd), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "cp \"%s\" \"$D/rw.copy\"", xnd), 0);
    const char *cmds[] = {
        "$B/lors_augment --no-rc --depot-list '%s' -c 1 -d 10m",
        "$B/lors_trim --no-rc -d -m 0%s",
        "$B/lors_refresh --no-rc -s 20m%s",
    };
    const char *tools[] = {"lors_augment", "lors_trim", "lors_refresh"};
    for (int k = 0; k < 3; k++) {
        char cmd[512], msg[PATH_MAX + 64];
        snprintf(cmd, sizeof cmd, cmds[k], k == 0 ? tt_dlist(&T, 2, -1) : "");
        old_file("rw.out");
        counts(base);
        int rc = tt_sh(&T, "%s -o \"$D/rw.out\" \"%s\"", cmd, xnd);
        CU_ASSERT_EQUAL(rc, 4);
        snprintf(msg, sizeof msg, "%s: %s exists; use --force to overwrite it\n", tools[k],
                 path("rw.out"));
        CU_ASSERT_STRING_EQUAL(T.err, msg);
        CU_ASSERT(old_intact("rw.out"));
        CU_ASSERT(tt_same_file(xnd, path("rw.copy")));
        counts_are(base, NULL);

        rc = tt_sh(&T, "%s --force -o \"$D/rw.out\" \"%s\"", cmd, xnd);
        CU_ASSERT_EQUAL(rc, 0);
        xnd_t *x = tt_load(path("rw.out"));
        CU_ASSERT_PTR_NOT_NULL(x);
        xnd_free(x);
        if (k == 0) /* the new copies: freed again, the input is still the one to work on */
            tt_sh(&T, "$B/lors_trim --no-rc -d --depot '%s' \"$D/rw.out\"", tt_dlist(&T, 2, -1));
        if (k == 1) /* mapping 0 is freed: the input's mappings are those of the output */
            CU_ASSERT_EQUAL(tt_sh(&T, "cp \"$D/rw.out\" \"%s\" && cp \"$D/rw.out\" "
                                      "\"$D/rw.copy\"", xnd), 0);
    }
    /* in place: -o names the input */
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_refresh --no-rc -s 30m -o \"%s\" \"%s\"", xnd, xnd), 0);
    tt_free_all(&T, xnd);
}

static const lns_test_case tests[] = {
    {"SIGINT mid-upload frees every allocation, exit 130", test_upload_sigint_frees},
    {"SIGTERM with --keep-partial keeps the complete fragments", test_upload_sigterm_keep_partial},
    {"an exNode that cannot be written: the upload is freed", test_upload_exnode_write_fails},
    {"the output appears during the upload: not replaced, freed", test_upload_output_appears},
    {"augment: an exNode that cannot be written frees the copies", test_augment_write_fails},
    {"augment: SIGINT frees the new copies, exit 130", test_augment_sigint},
    {"lors_upload does not overwrite an exNode without --force", test_upload_no_clobber},
    {"augment, trim, refresh -o: no overwriting without --force",
     test_rewrite_tools_no_clobber},
};

TT_MAIN(&T, "nothing lost, nothing leaked", ND, tests)
