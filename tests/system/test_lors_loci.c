/* test_lors_loci.c -- files the original LoRS 1.3.1 tools wrote with their end-to-end
 * functions, read by lns: the bytes right or a refusal, never wrong bytes with exit 0.
 *
 * tests/data/lors131/CASE/ holds what the original lors_upload wrote for tests/data/lors131/
 * plain with CASE's e2e options (tests/data/lors131/make.sh made them, README): its exNode
 * and the stored bytes of every mapping.  Each test puts those bytes into allocations on real
 * depots, points the exNode's capabilities at them and runs the lns tools as a user would:
 * lors_download (whole and ranges), the random-access reader under lors_serve and lors_mount,
 * lors_augment (the copies must read back alone, with lns and as the original wrote them),
 * lors_ls; what lns does not decode (DES, AES, a broken zlib chain) must be refused with exit
 * 3 and a line naming the function, and another replica that decodes must serve instead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lns_test.h"
#include "test_tools.h"
#include "xnd.h"

#define ND 3

static tt_env_t T;
static char dir[2048]; /* tests/data/lors131 */
static unsigned char *plain; /* the input of the case placed last */
static size_t plain_n;

static int find_data(void)
{
    if (dir[0])
        return 0;
    if (lns_test_find_file("tests/data/lors131/make.sh", dir, sizeof dir) != 0)
        return -1;
    *strrchr(dir, '/') = '\0';
    return 0;
}

/* CASE's exNode with every mapping's bytes stored anew, mapping i on depot (i + shift) % ND;
 * written to a file of the tmpdir, its path in out; plain is CASE's input (CASE/plain, else
 * the shared one).  The exNode itself, or NULL. */
static xnd_t *place(const char *name, int shift, char *out, size_t outlen)
{
    char p[4096];
    CU_ASSERT_EQUAL_FATAL(find_data(), 0);
    snprintf(p, sizeof p, "%s/%s/plain", dir, name);
    if (access(p, R_OK) != 0)
        snprintf(p, sizeof p, "%s/plain", dir);
    free(plain);
    plain = tt_read_whole(p, &plain_n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(plain);
    snprintf(p, sizeof p, "%s/%s/up.xnd", dir, name);
    xnd_t *x = tt_load(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    for (size_t i = 0; i < x->nmaps; i++) {
        xnd_mapping_t *m = x->maps[i];
        size_t n = 0;
        snprintf(p, sizeof p, "%s/%s/map%zu.bin", dir, name, i);
        unsigned char *b = tt_read_whole(p, &n);
        CU_ASSERT_PTR_NOT_NULL_FATAL(b);
        CU_ASSERT_EQUAL((int64_t)n, m->alloc_length);
        int d = (int)((i + (size_t)shift) % ND);
        ibp_attr_t at = {n, 3600, IBP_HARD, IBP_BYTEARRAY};
        ibp_caps_t caps;
        uint64_t stored = 0;
        CU_ASSERT_EQUAL_FATAL(ibp_allocate(T.cli, "127.0.0.1", T.dep[d].port, NULL, &at, &caps),
                              IBP_OK);
        CU_ASSERT_EQUAL_FATAL(ibp_store(T.cli, caps.write, b, n, &stored), IBP_OK);
        free(b);
        xnd_mapping_set_cap(m, XND_READ, caps.read);
        xnd_mapping_set_cap(m, XND_WRITE, caps.write);
        xnd_mapping_set_cap(m, XND_MANAGE, caps.manage);
        /* the lease is the new allocation's: the recorded one ran out a day after recording */
        xnd_mapping_set_time(m, 0, (int64_t)time(NULL));
        xnd_mapping_set_time(m, 1, (int64_t)time(NULL) + 3600);
    }
    snprintf(out, outlen, "%s", lns_test_path(name));
    snprintf(out + strlen(out), outlen - strlen(out), ".%d.xnd", T.seq++);
    char err[256];
    CU_ASSERT_EQUAL_FATAL(xnd_write_file(x, out, err, sizeof err), XND_OK);
    return x;
}

/* lors_download of xnd to a file: exit 0 and plain's bytes [off, off + len) (len -1: all). */
static void downloads_right(const char *xnd, int64_t off, int64_t len)
{
    const char *o = lns_test_path("got");
    char so[32], sl[32];
    snprintf(so, sizeof so, "%lld", (long long)off);
    snprintf(sl, sizeof sl, "%lld", (long long)(len < 0 ? (int64_t)plain_n - off : len));
    unlink(o);
    int rc = tt_run(&T, NULL, NULL, "lors_download", "-o", o, "-O", so, "-L", sl, xnd, NULL);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc != 0)
        fprintf(stderr, "%s: exit %d: %s\n", xnd, rc, T.err);
    size_t n = 0;
    unsigned char *got = tt_read_whole(o, &n);
    size_t want = len < 0 ? plain_n - (size_t)off : (size_t)len;
    CU_ASSERT_EQUAL(n, want);
    CU_ASSERT(got && n == want && memcmp(got, plain + off, want) == 0);
    free(got);
}

/* lors_download of xnd: exit 3, one line naming word, nothing written. */
static void refused(const char *xnd, const char *word)
{
    const char *o = lns_test_path("refused");
    unlink(o);
    int rc = tt_run(&T, NULL, NULL, "lors_download", "-o", o, xnd, NULL);
    CU_ASSERT_EQUAL(rc, 3);
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, word));
    if (rc != 3 || !strstr(T.err, word))
        fprintf(stderr, "%s: exit %d: %s\n", xnd, rc, T.err);
    size_t n = 0;
    unsigned char *got = tt_read_whole(o, &n);
    CU_ASSERT(!got || n == 0);
    free(got);
}

/* ---- what lns decodes --------------------------------------------------------------------- */

static void decoded(const char *name)
{
    char xnd[4096];
    xnd_t *x = place(name, 0, xnd, sizeof xnd);
    downloads_right(xnd, 0, -1);
    /* ranges inside a block, across blocks, across the two mappings, the last byte */
    downloads_right(xnd, 5000, 100);
    downloads_right(xnd, 4090, 9000);
    downloads_right(xnd, 14000, 3000);
    downloads_right(xnd, (int64_t)plain_n - 1, 1);
    /* a stream, as lors_play reads one */
    const char *want = lns_test_path("want");
    CU_ASSERT_EQUAL_FATAL(tt_write_file(want, plain, plain_n), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_download -o - '%s' | cmp - '%s'", xnd, want), 0);
    /* the physical view names the chain */
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_ls", "-p", xnd, NULL), 0);
    lors_func_info_t fi;
    CU_ASSERT_EQUAL(lors_func_info(x, 0, &fi), LORS_OK);
    CU_ASSERT_EQUAL(fi.kind, LORS_FUNC_LORS131);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, fi.name));
    xnd_free(x);
    tt_free_all(&T, xnd);
}

static void test_checksum(void) { decoded("k"); }
static void test_checksum_two_copies(void) { decoded("k-c2"); }
static void test_xor(void) { decoded("x"); }
static void test_checksum_then_xor(void) { decoded("k-x"); }
static void test_xor_then_checksum(void) { decoded("x-k"); }
/* zlib as the original's code writes it when gdb sets the lengths it never sets (README) */
static void test_zlib(void) { decoded("gdb-z"); }
static void test_checksum_then_zlib(void) { decoded("gdb-k-z"); }
static void test_zlib_then_checksum(void) { decoded("gdb-z-k"); }
static void test_xor_then_zlib(void) { decoded("gdb-x-z"); }
static void test_zlib_then_xor(void) { decoded("gdb-z-x"); }

/* The random-access reader (lors_serve, lors_mount): reads of any size anywhere. */
static void test_reader(void)
{
    char xnd[4096];
    xnd_t *x = place("k-x", 1, xnd, sizeof xnd);
    lors_reader_opts_t o;
    lors_reader_opts_init(&o);
    char err0[256] = "";
    lors_reader_t *r = lors_reader_open(&o, x, NULL, err0, sizeof err0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    uint64_t s = 7;
    unsigned char buf[20000];
    for (int i = 0; i < 60; i++) {
        size_t n = 1 + (size_t)(lns_test_rand(&s) % sizeof buf);
        int64_t off = (int64_t)(lns_test_rand(&s) % plain_n);
        if ((size_t)off + n > plain_n)
            n = plain_n - (size_t)off;
        int rc = 0;
        char err[256] = "";
        int64_t got = lors_reader_pread(r, buf, n, off, &rc, err, sizeof err);
        CU_ASSERT_EQUAL(got, (int64_t)n);
        CU_ASSERT(got == (int64_t)n && memcmp(buf, plain + off, n) == 0);
        if (got != (int64_t)n)
            fprintf(stderr, "read %zu at %lld: %lld (%s)\n", n, (long long)off, (long long)got, err);
    }
    lors_reader_close(r);
    xnd_free(x);
    tt_free_all(&T, xnd);
}

/* lors_augment copies a chain's allocation as it is: the new copies alone read back, with
 * lns and (the same function, e2e_blocksize and alloc_length) as the original wrote them. */
static void test_augment(void)
{
    char xnd[4096], only[4096];
    xnd_t *x = place("k-x", 0, xnd, sizeof xnd);
    snprintf(only, sizeof only, "%s", lns_test_path("k-x.new.xnd"));
    int rc = tt_run(&T, NULL, NULL, "lors_augment", "-n", "-o", only, "-c", "1", "-d", "10m",
                    "--depot-list", tt_dlist(&T, 2, -1), xnd, NULL);
    if (rc != 0)
        fprintf(stderr, "lors_augment: exit %d: %s\n", rc, T.err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    xnd_t *y = tt_load(only);
    CU_ASSERT_PTR_NOT_NULL_FATAL(y);
    CU_ASSERT_EQUAL(y->nmaps, x->nmaps);
    for (size_t i = 0; i < y->nmaps && i < x->nmaps; i++) {
        const xnd_mapping_t *a = y->maps[i];
        const xnd_mapping_t *b = NULL;
        for (size_t j = 0; j < x->nmaps; j++)
            if (x->maps[j]->exnode_offset == a->exnode_offset)
                b = x->maps[j];
        CU_ASSERT_PTR_NOT_NULL_FATAL(b);
        CU_ASSERT_EQUAL(a->alloc_length, b->alloc_length);
        CU_ASSERT_EQUAL(a->e2e_blocksize, b->e2e_blocksize);
        lors_func_info_t fa, fb;
        lors_func_info(y, i, &fa);
        lors_func_info(x, (size_t)(b == x->maps[0] ? 0 : 1), &fb);
        CU_ASSERT_STRING_EQUAL(fa.name, fb.name);
        CU_ASSERT_EQUAL(fa.kind, LORS_FUNC_LORS131);
    }
    downloads_right(only, 0, -1);
    xnd_free(y);
    xnd_free(x);
    tt_free_all(&T, only);
    tt_free_all(&T, xnd);
}

/* A damaged stored byte: the checksum catches it and the other copy serves the block; with
 * every copy damaged the download fails and names them, never writing the bad bytes. */
static void test_damage(void)
{
    char xnd[4096];
    xnd_t *x = place("k-c2", 0, xnd, sizeof xnd);
    /* damage one copy of the first fragment: a byte of its second block's data */
    size_t bad = 0;
    for (size_t i = 0; i < x->nmaps; i++)
        if (x->maps[i]->exnode_offset == 0) {
            bad = i;
            break;
        }
    unsigned char b = 0;
    CU_ASSERT_EQUAL_FATAL(ibp_load(T.cli, x->maps[bad]->cap[XND_READ], 4129 + 500, 1, &b), IBP_OK);
    /* IBP WRITE at an offset: the depot's bytes, changed under the exNode */
    b ^= 0x40;
    CU_ASSERT_EQUAL_FATAL(ibp_write(T.cli, x->maps[bad]->cap[XND_WRITE], 4129 + 500, &b, 1,
                                    NULL), IBP_OK);
    downloads_right(xnd, 0, -1);
    /* and the other copy too */
    for (size_t i = 0; i < x->nmaps; i++)
        if (i != bad && x->maps[i]->exnode_offset == 0) {
            unsigned char c = 0;
            CU_ASSERT_EQUAL(ibp_load(T.cli, x->maps[i]->cap[XND_READ], 4129 + 600, 1, &c), IBP_OK);
            c ^= 0x01;
            CU_ASSERT_EQUAL(ibp_write(T.cli, x->maps[i]->cap[XND_WRITE], 4129 + 600, &c, 1,
                                      NULL), IBP_OK);
        }
    const char *o = lns_test_path("damaged");
    int rc = tt_run(&T, NULL, NULL, "lors_download", "-o", o, xnd, NULL);
    CU_ASSERT(rc != 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "bytes 0-"));
    size_t n = 0;
    unsigned char *got = tt_read_whole(o, &n);
    /* whatever was written is the file's own bytes (the blocks before the damage) */
    CU_ASSERT(!got || (n < plain_n && memcmp(got, plain, n) == 0));
    free(got);
    xnd_free(x);
    tt_free_all(&T, xnd);
}

/* ---- what lns refuses --------------------------------------------------------------------- */

static void refused_case(const char *name, const char *word)
{
    char xnd[4096];
    xnd_t *x = place(name, 0, xnd, sizeof xnd);
    refused(xnd, word);
    /* lors_ls: alive, not read by lns, no copy in the logical view (exit 8) */
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_ls", xnd, NULL), 8);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "not read by lns"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, word));
    /* lors_augment will not copy what it does not read */
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_augment", "-n", "-o",
                           lns_test_path("never.xnd"), "--depot-list", tt_dlist(&T, 2, -1), xnd,
                           NULL), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, word));
    xnd_free(x);
    tt_free_all(&T, xnd);
}

static void test_des(void) { refused_case("e", "des_encrypt"); }
static void test_aes(void) { refused_case("a", "aes_encrypt"); }
static void test_checksum_then_des(void) { refused_case("k-e", "des_encrypt"); }
static void test_default_order(void) { refused_case("default", "des_encrypt"); }
/* the 64-bit original's -k -z: its compression failed and it stored other bytes; the sizes
 * it wrote do not add up, so lns refuses the chain instead of inflating garbage */
static void test_broken_zlib(void) { refused_case("k-z", "zlib_compress"); }

/* A replica that decodes serves what one that does not cannot: the DES file's exNode with a
 * plain lns copy of the same bytes added downloads right. */
static void test_other_replica(void)
{
    char xnd[4096], src[4096], cp[4096];
    xnd_t *x = place("e", 0, xnd, sizeof xnd);
    snprintf(src, sizeof src, "%s", lns_test_path("want"));
    CU_ASSERT_EQUAL_FATAL(tt_write_file(src, plain, plain_n), 0);
    snprintf(cp, sizeof cp, "%s", lns_test_path("plain-copy.xnd"));
    unlink(cp);
    CU_ASSERT_EQUAL_FATAL(tt_run(&T, NULL, NULL, "lors_upload", "-c", "1", "-F", "2", "-d", "10m",
                                 "--depot-list", tt_dlist(&T, 1, -1), "-o", cp, src, NULL),
                          0);
    xnd_t *y = tt_load(cp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(y);
    for (size_t i = 0; i < y->nmaps; i++)
        CU_ASSERT_EQUAL(xnd_append(x, xnd_mapping_copy(y->maps[i])), XND_OK);
    char err[256];
    CU_ASSERT_EQUAL_FATAL(xnd_write_file(x, xnd, err, sizeof err), XND_OK);
    downloads_right(xnd, 0, -1);
    downloads_right(xnd, 14000, 3000);
    xnd_free(y);
    xnd_free(x);
    tt_free_all(&T, xnd);
}

static const lns_test_case tests[] = {
    {"checksum (-k)", test_checksum},
    {"checksum, two copies (-k -c 2)", test_checksum_two_copies},
    {"xor (-x)", test_xor},
    {"checksum then xor (-k -x)", test_checksum_then_xor},
    {"xor then checksum (-x -k)", test_xor_then_checksum},
    {"zlib (-z, under gdb)", test_zlib},
    {"checksum then zlib (-k -z, under gdb)", test_checksum_then_zlib},
    {"zlib then checksum (-z -k, under gdb)", test_zlib_then_checksum},
    {"xor then zlib (-x -z, under gdb)", test_xor_then_zlib},
    {"zlib then xor (-z -x, under gdb)", test_zlib_then_xor},
    {"the random-access reader", test_reader},
    {"augment copies a chain as it is", test_augment},
    {"damaged stored bytes", test_damage},
    {"DES (-e) refused", test_des},
    {"AES (-a) refused", test_aes},
    {"checksum then DES (-k -e) refused", test_checksum_then_des},
    {"the xndrc's default order (DES, checksum) refused", test_default_order},
    {"a broken -k -z refused", test_broken_zlib},
    {"another replica serves what is refused", test_other_replica},
};

TT_MAIN(&T, "LoRS 1.3.1 e2e functions", ND, tests)
