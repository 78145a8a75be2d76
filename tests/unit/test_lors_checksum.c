/* test_lors_checksum.c -- the digests of checksum blocks (lors_checksum.h) with BLAKE3, the
 * default: the published BLAKE3 test vectors (input byte i is i mod 251), fed whole and in
 * pieces of odd sizes, per block, through lors_checksum_verify, and against SHA-256 by name. */
#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>

#include "lns_test.h"
#include "lors.h"
#include "lors_b3tree.h"
#include "lors_checksum.h"
#include "xnd.h"

/* From the BLAKE3 team's test_vectors.json (the "hash" field's first 32 bytes), checked here
 * against the Python blake3 package (the Rust implementation) as well. */
static const struct {
    size_t len;
    const char *hex;
} V[] = {
    {0, "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"},
    {1, "2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213"},
    {1023, "10108970eeda3eb932baac1428c7a2163b0e924c9a9e25b35bba72b28f70bd11"},
    {1024, "42214739f095a406f3fc83deb889744ac00df831c10daa55189b5d121c855af7"},
    {1025, "d00278ae47eb27b34faecf67b4fe263f82d5412916c1ffd97c8cb7fb814b8444"},
    {2048, "e776b6028c7cd22a4d0ba182a8bf62205d2ef576467e838ed6f2529b85fba24a"},
    {8193, "bab6c09cb8ce8cf459261398d2e7aef35700bf488116ceb94a36d0f5f1b7bc3b"},
    {102400, "bc3e3d41a1146b069abffad3c0d44860cf664390afce4d9661f7902e7943e085"},
};
#define NV (sizeof V / sizeof V[0])

static unsigned char *vector_input(size_t n)
{
    unsigned char *p = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i % 251);
    return p;
}

/* The digests of len bytes in blocks of blocksize, fed `piece` bytes at a time; with ob, also
 * the outboard (lors_ck_want_outboard) into *ob and *oblen. */
static char *digests_ob(const char *alg, const unsigned char *p, size_t len, int64_t bs,
                        size_t piece, unsigned char **ob, size_t *oblen)
{
    lors_ck_t ck;
    char *h = NULL;
    CU_ASSERT_EQUAL_FATAL(lors_ck_init(&ck, alg, bs), LORS_OK);
    if (ob)
        CU_ASSERT_EQUAL(lors_ck_want_outboard(&ck), LORS_OK);
    for (size_t off = 0; off < len; off += piece)
        CU_ASSERT_EQUAL(lors_ck_update(&ck, p + off, len - off < piece ? len - off : piece),
                        LORS_OK);
    CU_ASSERT_EQUAL(lors_ck_finish(&ck, &h), LORS_OK);
    if (ob)
        CU_ASSERT_EQUAL(lors_ck_take_outboard(&ck, ob, oblen), LORS_OK);
    lors_ck_free(&ck);
    return h;
}

static char *digests(const char *alg, const unsigned char *p, size_t len, int64_t bs,
                     size_t piece)
{
    return digests_ob(alg, p, len, bs, piece, NULL, NULL);
}

static void test_vectors(void)
{
    static const size_t pieces[] = {1 << 20, 1, 63, 1000, 4097};
    CU_ASSERT_EQUAL(lors_ck_hexlen("blake3"), 64);
    for (size_t i = 0; i < NV; i++) {
        unsigned char *p = vector_input(V[i].len);
        for (size_t k = 0; k < sizeof pieces / sizeof pieces[0]; k++) {
            if (pieces[k] == 1 && V[i].len > 8193)
                continue;
            char *h = digests("blake3", p, V[i].len, 1 << 20, pieces[k]);
            /* no bytes, no block: the digests of nothing are "" */
            CU_ASSERT_STRING_EQUAL(h, V[i].len ? V[i].hex : "");
            free(h);
        }
        free(p);
    }
    /* the empty input's digest, as one block of a file of 0 bytes would have it */
    lors_ck_t ck;
    char *h = NULL;
    CU_ASSERT_EQUAL_FATAL(lors_ck_init(&ck, "blake3", 16), LORS_OK);
    CU_ASSERT_EQUAL(lors_ck_finish(&ck, &h), LORS_OK);
    CU_ASSERT_STRING_EQUAL(h, "");
    free(h);
    lors_ck_free(&ck);
}

/* Blocks: each starts a fresh hash, so two blocks of the 1024-byte vector input give its
 * digest twice; and a different algorithm by name gives a different string. */
static void test_blocks(void)
{
    unsigned char *p = vector_input(2048);
    memcpy(p + 1024, p, 1024);
    char *h = digests("blake3", p, 2048, 1024, 700);
    char want[129];
    snprintf(want, sizeof want, "%s%s", V[3].hex, V[3].hex);
    CU_ASSERT_STRING_EQUAL(h, want);
    free(h);
    /* a block of 1025 and one of 1023: the 1025 vector, then something else */
    unsigned char *q = vector_input(2048);
    h = digests("blake3", q, 2048, 1025, 333);
    CU_ASSERT_EQUAL(strlen(h), 128);
    CU_ASSERT(strncmp(h, V[4].hex, 64) == 0);
    CU_ASSERT(strncmp(h + 64, V[4].hex, 64) != 0);
    free(h);
    h = digests("sha256", q, 1024, 1024, 1024);
    CU_ASSERT_EQUAL(strlen(h), 64);
    CU_ASSERT(strcmp(h, V[3].hex) != 0);
    free(h);
    free(p);
    free(q);
}

/* lors_checksum_verify takes a BLAKE3 lns_checksum mapping, and catches one flipped byte. */
static void test_verify(void)
{
    size_t n = 10000;
    unsigned char *p = vector_input(n);
    char *h = digests("blake3", p, n, 4096, n);
    xnd_mapping_t *m = xnd_mapping_new();
    xnd_func_t *f = xnd_func_new(LORS_CHECKSUM_FUNC);
    CU_ASSERT_FATAL(m && f);
    m->logical_length = (int64_t)n;
    CU_ASSERT_EQUAL(xnd_meta_set_string(&f->args, "algorithm", "blake3"), XND_OK);
    CU_ASSERT_EQUAL(xnd_meta_set_int(&f->args, "blocksize", 4096), XND_OK);
    CU_ASSERT_EQUAL(xnd_meta_set_string(&f->args, "digests", h), XND_OK);
    xnd_mapping_set_func(m, f);
    CU_ASSERT_EQUAL(lors_checksum_verify(m, p, n), LORS_OK);
    p[5000] ^= 1;
    CU_ASSERT_EQUAL(lors_checksum_verify(m, p, n), LORS_E_DIGEST);
    xnd_mapping_free(m);
    free(h);
    free(p);
}

/* With the outboard: the same digests as the one-shot hasher for every size around the group
 * and chunk edges, any block size and any piece size; the outboard as long as
 * lors__b3_outboard_len says; each stored CV that of its group's bytes alone, and the root of
 * a block's CVs its digest; a flipped byte changes its own group's CV and no other. */
static void test_outboard(void)
{
    static const size_t sizes[] = {1,     1024,   16383,  16384,   16385, 32768, 32769,
                                   50000, 102400, 262144, 1048576, 1048577, 3 * 1048576 + 12345};
    static const int64_t bss[] = {1048576, 65536, 100000, 16384};
    static const size_t pieces[] = {1 << 20, 4096, 16384, 16385, 333, 1 << 22};
    unsigned char *p = vector_input(3 * 1048576 + 12345);
    for (size_t b = 0; b < sizeof bss / sizeof bss[0]; b++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
            for (size_t k = 0; k < sizeof pieces / sizeof pieces[0]; k++) {
                size_t n = sizes[i];
                int64_t bs = bss[b];
                if (pieces[k] == 333 && n > 300000)
                    continue;
                unsigned char *ob = NULL;
                size_t oblen = 0;
                char *plain = digests("blake3", p, n, bs, 1 << 20);
                char *tree = digests_ob("blake3", p, n, bs, pieces[k], &ob, &oblen);
                CU_ASSERT_STRING_EQUAL(tree, plain);
                CU_ASSERT_EQUAL((int64_t)oblen, lors__b3_outboard_len((int64_t)n, bs));
                if (k == 0 && oblen) { /* the CVs, block by block */
                    size_t at = 0;
                    for (int64_t off = 0; off < (int64_t)n; off += bs) {
                        size_t bl = (int64_t)n - off < bs ? (size_t)((int64_t)n - off)
                                                          : (size_t)bs;
                        int64_t g = lors__b3_groups((int64_t)bl);
                        if (g < 2)
                            continue;
                        unsigned char(*cv)[LORS_B3_CV] = malloc((size_t)g * LORS_B3_CV);
                        unsigned char root[LORS_B3_CV], one[1][LORS_B3_CV];
                        char hex[2 * LORS_B3_CV + 1];
                        lors__b3_group_cvs(p + off, bl, 0, cv);
                        CU_ASSERT(memcmp(cv, ob + at, (size_t)g * LORS_B3_CV) == 0);
                        lors__b3_root((const unsigned char(*)[LORS_B3_CV])(ob + at),
                                      (size_t)g, root);
                        for (int j = 0; j < LORS_B3_CV; j++)
                            snprintf(hex + 2 * j, 3, "%02x", root[j]);
                        CU_ASSERT(strncmp(tree + off / bs * 64, hex, 64) == 0);
                        /* the last group alone, at its place in the block */
                        int64_t last = (g - 1) * LORS_B3_GROUP;
                        lors__b3_group_cvs(p + off + last, bl - (size_t)last, (uint64_t)g - 1,
                                           one);
                        CU_ASSERT(memcmp(one[0], ob + at + (size_t)(g - 1) * LORS_B3_CV,
                                         LORS_B3_CV) == 0);
                        /* a flipped byte in group 1: its CV differs, group 0's does not */
                        unsigned char *q = malloc(bl);
                        memcpy(q, p + off, bl);
                        q[LORS_B3_GROUP + (bl - LORS_B3_GROUP) / 2 % LORS_B3_GROUP] ^= 0x40;
                        unsigned char(*cq)[LORS_B3_CV] = malloc((size_t)g * LORS_B3_CV);
                        lors__b3_group_cvs(q, bl, 0, cq);
                        CU_ASSERT(memcmp(cq[0], cv[0], LORS_B3_CV) == 0);
                        CU_ASSERT(memcmp(cq[1], cv[1], LORS_B3_CV) != 0);
                        free(q);
                        free(cq);
                        free(cv);
                        at += (size_t)g * LORS_B3_CV;
                    }
                    CU_ASSERT_EQUAL(at, oblen);
                }
                free(ob);
                free(plain);
                free(tree);
            }
    /* the published vectors through the tree as well (102400 bytes: seven groups) */
    for (size_t i = 1; i < NV; i++) {
        unsigned char *ob = NULL;
        size_t oblen = 0;
        char *h = digests_ob("blake3", p, V[i].len, 1 << 20, 1000, &ob, &oblen);
        CU_ASSERT_STRING_EQUAL(h, V[i].hex);
        CU_ASSERT_EQUAL(oblen, V[i].len > LORS_B3_GROUP ? 7 * LORS_B3_CV : 0);
        free(h);
        free(ob);
    }
    /* other algorithms and small blocks have none */
    unsigned char *ob = (unsigned char *)"x";
    size_t oblen = 9;
    free(digests_ob("sha256", p, 100000, 1 << 20, 4096, &ob, &oblen));
    CU_ASSERT(ob == NULL && oblen == 0);
    free(digests_ob("blake3", p, 100000, 16384, 4096, &ob, &oblen));
    CU_ASSERT(ob == NULL && oblen == 0);
    free(p);
}

static const lns_test_case tests[] = {
    {"the outboard: 16 KiB groups of BLAKE3's tree", test_outboard},
    {"BLAKE3 test vectors, fed in pieces", test_vectors},
    {"blocks start fresh; by name", test_blocks},
    {"lors_checksum_verify with blake3", test_verify},
};

LNS_TEST_MAIN("lors checksums", tests)
