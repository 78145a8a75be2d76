/* test_lors_e2e_frame.c -- the end-to-end transforms without depots: chains, the frame codec
 * (round trips, tampering, frames moved between places or files), the lns_e2e frame table
 * (write, read back, every malformation refused, 100,000 frames), and lors_key_load. */
#include <CUnit/CUnit.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lns_test.h"
#include "lors.h"
#include "lors_e2e_int.h"
#include "xnd.h"

static const unsigned char KEY[LORS_KEY_BYTES] = "0123456789abcdef0123456789abcdef";
static const unsigned char SALT[LORS_E2E_SALT] = {1, 2, 3, 4, 5, 6, 7, 8};
/* every chain: each compressor alone and either side of aes */
static const char *CHAINS[] = {"zstd", "zlib", "aes", "zstd,aes", "aes,zstd", "zlib,aes",
                               "aes,zlib"};
#define NCHAINS (sizeof CHAINS / sizeof CHAINS[0])

static void chain_of(const char *s, lors__e2e_chain_t *c)
{
    char err[256];
    CU_ASSERT_EQUAL_FATAL(lors__e2e_chain_parse(s, c, err, sizeof err), LORS_OK);
}

static void test_chains(void)
{
    lors__e2e_chain_t c;
    char err[256];
    chain_of("zlib", &c);
    CU_ASSERT_EQUAL(c.n, 1);
    CU_ASSERT_EQUAL(c.has_aes, 0);
    chain_of(" ZLIB  aes ", &c);
    CU_ASSERT_STRING_EQUAL(c.name, "zlib,aes");
    CU_ASSERT(c.has_aes);
    chain_of("aes,zlib", &c);
    CU_ASSERT_STRING_EQUAL(c.name, "aes,zlib");
    CU_ASSERT_EQUAL(c.steps[0], LORS_E2E_AES);
    chain_of("", &c);
    CU_ASSERT_EQUAL(c.n, 0);
    chain_of(NULL, &c);
    CU_ASSERT_EQUAL(c.n, 0);
    chain_of("aes ZSTD", &c);
    CU_ASSERT_STRING_EQUAL(c.name, "aes,zstd");
    CU_ASSERT_EQUAL(c.steps[1], LORS_E2E_ZSTD);
    CU_ASSERT_EQUAL(lors__e2e_level_max(&c), 19);
    chain_of("zlib", &c);
    CU_ASSERT_EQUAL(lors__e2e_level_max(&c), 9);
    chain_of("aes", &c);
    CU_ASSERT_EQUAL(lors__e2e_level_max(&c), 0);
    /* the public face: the chain as lors_upload_opts_t.e2e takes it, and the compressor */
    static const struct {
        const char *chain;
        int max;
        const char *compressor;
    } levels[] = {{"aes,zstd", 19, "zstd"}, {"zlib aes", 9, "zlib"}, {"aes", 0, NULL},
                  {"", 0, NULL}, {"zstd,zlib", -1, NULL}, {"gzip", -1, NULL}};
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        const char *name = "unset";
        CU_ASSERT_EQUAL(lors_e2e_level_max(levels[i].chain, &name), levels[i].max);
        CU_ASSERT(levels[i].compressor ? name && strcmp(name, levels[i].compressor) == 0
                                       : name == NULL);
    }
    CU_ASSERT_EQUAL(lors_e2e_level_max("zstd", NULL), 19);
    static const char *bad[] = {"gzip", "zlib,zlib", "aes,aes,zlib", "zlib;aes", "des", "zli",
                                "zstd,zlib", "zlib,aes,zstd", "zst", "zstd,zstd"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        CU_ASSERT_EQUAL(lors__e2e_chain_parse(bad[i], &c, err, sizeof err), LORS_E_INVAL);
        CU_ASSERT(strstr(err, "e2e chain") != NULL);
    }
}

static unsigned char *compressible(size_t n)
{
    unsigned char *p = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)"the quick brown fox jumps over the lazy dog\n"[i % 44];
    return p;
}

/* Encode and decode one frame; returns the stored length. */
static size_t round_trip(const char *chain, const unsigned char *in, size_t n, uint32_t index)
{
    lors__e2e_chain_t c;
    lors__e2e_codec_t enc, dec;
    char why[256];
    size_t sl = 0;
    chain_of(chain, &c);
    unsigned char *st = malloc((size_t)lors__e2e_max_stored(&c, (int64_t)n));
    unsigned char *back = malloc(n);
    CU_ASSERT_EQUAL_FATAL(lors__e2e_codec_init(&enc, &c, KEY, SALT), LORS_OK);
    CU_ASSERT_EQUAL_FATAL(lors__e2e_codec_init(&dec, &c, KEY, SALT), LORS_OK);
    CU_ASSERT_EQUAL(lors__e2e_encode(&enc, index, in, n, st, &sl, why, sizeof why), LORS_OK);
    CU_ASSERT(sl <= (size_t)lors__e2e_max_stored(&c, (int64_t)n));
    if (strcmp(chain, "aes") == 0)
        CU_ASSERT_EQUAL(sl, n + LORS_E2E_TAG);
    CU_ASSERT_EQUAL(lors__e2e_decode(&dec, index, st, sl, back, n, why, sizeof why), LORS_OK);
    CU_ASSERT(memcmp(back, in, n) == 0);
    /* one more frame through the same codecs: contexts are reusable */
    CU_ASSERT_EQUAL(lors__e2e_encode(&enc, index + 1, in, n, st, &sl, why, sizeof why), LORS_OK);
    memset(back, 0, n);
    CU_ASSERT_EQUAL(lors__e2e_decode(&dec, index + 1, st, sl, back, n, why, sizeof why), LORS_OK);
    CU_ASSERT(memcmp(back, in, n) == 0);
    lors__e2e_codec_free(&enc);
    lors__e2e_codec_free(&dec);
    free(st);
    free(back);
    return sl;
}

static void test_codec_round_trips(void)
{
    static const size_t sizes[] = {1, 2, 1000, 65536, 1 << 20};
    for (size_t ci = 0; ci < NCHAINS; ci++)
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            unsigned char *r = malloc(sizes[si]);
            lns_test_fill(r, sizes[si], si + 1);
            round_trip(CHAINS[ci], r, sizes[si], (uint32_t)si);
            free(r);
            unsigned char *t = compressible(sizes[si]);
            size_t sl = round_trip(CHAINS[ci], t, sizes[si], UINT32_MAX - 1);
            /* text shrinks unless encrypted first */
            if (sizes[si] >= 65536 && strncmp(CHAINS[ci], "aes", 3) != 0)
                CU_ASSERT(sl < sizes[si] / 20);
            free(t);
        }
}

/* Decode frame `index` of a "chain" frame made with (key, salt) at index enc_index after
 * flipping byte `flip` (-1: none); returns the decode's code and why. */
static int tamper(const char *chain, uint32_t enc_index, uint32_t index, long flip,
                  const unsigned char *key, const unsigned char *salt, char *why, size_t whylen)
{
    lors__e2e_chain_t c;
    lors__e2e_codec_t enc, dec;
    size_t n = 200000, sl = 0;
    chain_of(chain, &c);
    unsigned char *in = compressible(n);
    unsigned char *st = malloc((size_t)lors__e2e_max_stored(&c, (int64_t)n));
    unsigned char *back = malloc(n);
    lors__e2e_codec_init(&enc, &c, KEY, SALT);
    lors__e2e_codec_init(&dec, &c, key, salt);
    CU_ASSERT_EQUAL(lors__e2e_encode(&enc, enc_index, in, n, st, &sl, why, whylen), LORS_OK);
    if (flip >= 0)
        st[flip == LONG_MAX ? sl - 1 : (size_t)flip % sl] ^= 0x20;
    int rc = lors__e2e_decode(&dec, index, st, sl, back, n, why, whylen);
    lors__e2e_codec_free(&enc);
    lors__e2e_codec_free(&dec);
    free(in);
    free(st);
    free(back);
    return rc;
}

static void test_codec_tampering(void)
{
    unsigned char other_key[LORS_KEY_BYTES], other_salt[LORS_E2E_SALT];
    char why[256];
    memcpy(other_key, KEY, sizeof other_key);
    other_key[31] ^= 1;
    memcpy(other_salt, SALT, sizeof other_salt);
    other_salt[0] ^= 1;
    for (size_t ci = 0; ci < NCHAINS; ci++) {
        int aes = strstr(CHAINS[ci], "aes") != NULL;
        CU_ASSERT_EQUAL(tamper(CHAINS[ci], 5, 5, -1, KEY, SALT, why, sizeof why), LORS_OK);
        for (long at = 0; at < 3000; at += 331) {
            why[0] = 0;
            CU_ASSERT_EQUAL(tamper(CHAINS[ci], 5, 5, at, KEY, SALT, why, sizeof why), LORS_E_E2E);
            CU_ASSERT(strstr(why, aes && CHAINS[ci][0] == 'z' ? "authentication" : "") != NULL);
        }
        /* the last byte: the zlib trailer or the tag */
        CU_ASSERT_EQUAL(tamper(CHAINS[ci], 5, 5, LONG_MAX, KEY, SALT, why, sizeof why),
                        LORS_E_E2E);
        if (!aes)
            continue;
        /* a frame read at another index, under another salt (file) or key fails its tag */
        CU_ASSERT_EQUAL(tamper(CHAINS[ci], 5, 6, -1, KEY, SALT, why, sizeof why), LORS_E_E2E);
        CU_ASSERT(strstr(why, "authentication failed") != NULL);
        CU_ASSERT_EQUAL(tamper(CHAINS[ci], 5, 5, -1, KEY, other_salt, why, sizeof why),
                        LORS_E_E2E);
        CU_ASSERT_EQUAL(tamper(CHAINS[ci], 5, 5, -1, other_key, SALT, why, sizeof why),
                        LORS_E_E2E);
    }
    /* a frame of the wrong plain length does not decode either */
    lors__e2e_chain_t c;
    lors__e2e_codec_t k;
    unsigned char in[100], st[200], back[200];
    size_t sl;
    memset(in, 7, sizeof in);
    for (int z = 0; z < 2; z++) {
        const char *name = z ? "zstd" : "zlib";
        chain_of(name, &c);
        lors__e2e_codec_init(&k, &c, NULL, NULL);
        CU_ASSERT_EQUAL(lors__e2e_encode(&k, 0, in, 100, st, &sl, why, sizeof why), LORS_OK);
        CU_ASSERT_EQUAL(lors__e2e_decode(&k, 0, st, sl, back, 99, why, sizeof why), LORS_E_E2E);
        CU_ASSERT(strstr(why, name) != NULL);
        CU_ASSERT_EQUAL(lors__e2e_decode(&k, 0, st, sl, back, 101, why, sizeof why),
                        LORS_E_E2E);
        CU_ASSERT_EQUAL(lors__e2e_decode(&k, 0, st, sl, back, 100, why, sizeof why), LORS_OK);
        lors__e2e_codec_free(&k);
    }
    /* two zstd frames, each right, in one lns frame: not the one frame it must be */
    chain_of("zstd", &c);
    lors__e2e_codec_init(&k, &c, NULL, NULL);
    CU_ASSERT_EQUAL(lors__e2e_encode(&k, 0, in, 50, st, &sl, why, sizeof why), LORS_OK);
    memcpy(st + sl, st, sl);
    CU_ASSERT_EQUAL(lors__e2e_decode(&k, 0, st, 2 * sl, back, 100, why, sizeof why), LORS_E_E2E);
    CU_ASSERT(strstr(why, "not one zstd frame") != NULL);
    lors__e2e_codec_free(&k);
}

/* The level reaches the compressor and is not needed to read: level 19 stores text in fewer
 * bytes than level 1, and both decode with a codec at the default level. */
static void test_codec_levels(void)
{
    size_t n = 1 << 20;
    unsigned char *t = malloc(n), *st = malloc(n + n / 64), *back = malloc(n);
    for (size_t i = 0; i < n; i++) /* words of a small random vocabulary */
        t[i] = (unsigned char)("etaoin shrdlu cmfwyp vbgkqj xz\n"[(i * 2654435761u >> 7) % 31]);
    char why[256];
    size_t len[2];
    for (int z = 0; z < 2; z++) {
        const int levels[2][2] = {{1, 19}, {1, 9}};
        for (int l = 0; l < 2; l++) {
            lors__e2e_chain_t c;
            lors__e2e_codec_t enc, dec;
            chain_of(z ? "zlib" : "zstd", &c);
            CU_ASSERT_EQUAL_FATAL(lors__e2e_codec_init(&dec, &c, NULL, NULL), LORS_OK);
            c.level = levels[z][l];
            CU_ASSERT_EQUAL_FATAL(lors__e2e_codec_init(&enc, &c, NULL, NULL), LORS_OK);
            CU_ASSERT_EQUAL(lors__e2e_encode(&enc, 3, t, n, st, &len[l], why, sizeof why),
                            LORS_OK);
            CU_ASSERT_EQUAL(lors__e2e_decode(&dec, 3, st, len[l], back, n, why, sizeof why),
                            LORS_OK);
            CU_ASSERT(memcmp(back, t, n) == 0);
            lors__e2e_codec_free(&enc);
            lors__e2e_codec_free(&dec);
        }
        CU_ASSERT(len[1] < len[0]);
    }
    free(t);
    free(st);
    free(back);
}

static void test_keyid(void)
{
    char a[17], b[17], c[17];
    unsigned char k2[LORS_KEY_BYTES];
    memcpy(k2, KEY, sizeof k2);
    k2[0] ^= 0x80;
    lors__e2e_keyid(KEY, a);
    lors__e2e_keyid(KEY, b);
    lors__e2e_keyid(k2, c);
    CU_ASSERT_EQUAL(strlen(a), 16);
    CU_ASSERT_STRING_EQUAL(a, b);
    CU_ASSERT(strcmp(a, c) != 0);
    CU_ASSERT(strspn(a, "0123456789abcdef") == 16);
}

/* ---- the frame table ---------------------------------------------------------------------- */

/* A table of `frames` frames of fs plain bytes with pseudo-random zlib-like lengths (or the
 * exact aes ones), written into a new exNode of the right size. */
static xnd_t *table(const char *chain, int64_t fs, int64_t plain, lors__e2e_desc_t *d)
{
    memset(d, 0, sizeof *d);
    chain_of(chain, &d->chain);
    d->frame_size = fs;
    memcpy(d->salt, SALT, sizeof d->salt);
    if (d->chain.has_aes)
        lors__e2e_keyid(KEY, d->keyid);
    uint64_t s = 12345;
    for (int64_t off = 0; off < plain; off += fs) {
        int64_t pl = plain - off < fs ? plain - off : fs;
        int64_t max = lors__e2e_max_stored(&d->chain, pl), sl = max;
        if (strstr(chain, "zlib") || strstr(chain, "zstd")) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            sl = 1 + (int64_t)((s >> 33) % (uint64_t)max);
        }
        CU_ASSERT_EQUAL_FATAL(lors__e2e_desc_add(d, pl, sl), LORS_OK);
    }
    xnd_t *x = xnd_new();
    CU_ASSERT_FATAL(x != NULL);
    xnd_set_size(x, d->stored_size);
    CU_ASSERT_EQUAL_FATAL(lors__e2e_desc_write(d, x), XND_OK);
    return x;
}

static void same_table(const lors__e2e_desc_t *a, const lors__e2e_desc_t *b)
{
    CU_ASSERT_STRING_EQUAL(a->chain.name, b->chain.name);
    CU_ASSERT_EQUAL(a->frame_size, b->frame_size);
    CU_ASSERT_EQUAL(a->plain_size, b->plain_size);
    CU_ASSERT_EQUAL(a->frames, b->frames);
    CU_ASSERT_EQUAL(a->stored_size, b->stored_size);
    CU_ASSERT_STRING_EQUAL(a->keyid, b->keyid);
    CU_ASSERT(memcmp(a->salt, b->salt, sizeof a->salt) == 0 || !a->chain.has_aes);
    for (int64_t f = 0; f < a->frames; f += 1 + a->frames / 97) {
        int64_t ao, al, bo, bl;
        lors__e2e_frame_loc(a, f, &ao, &al);
        lors__e2e_frame_loc(b, f, &bo, &bl);
        CU_ASSERT(ao == bo && al == bl);
        CU_ASSERT_EQUAL(lors__e2e_frame_at(b, bo), f);
        CU_ASSERT_EQUAL(lors__e2e_frame_at(b, bo + bl - 1), f);
    }
}

static void test_table_round_trip(void)
{
    static const int64_t plains[] = {0, 1, 4095, 4096, 4097, 40000};
    for (size_t ci = 0; ci < NCHAINS; ci++)
        for (size_t pi = 0; pi < sizeof plains / sizeof plains[0]; pi++) {
            lors__e2e_desc_t d, r;
            int present = 0;
            char err[512] = "", *xml = NULL;
            size_t xl;
            xnd_t *x = table(CHAINS[ci], 4096, plains[pi], &d), *y = NULL;
            CU_ASSERT_EQUAL(xnd_serialize(x, &xml, &xl, err, sizeof err), XND_OK);
            CU_ASSERT_EQUAL(xnd_parse_buf(xml, xl, &y, err, sizeof err), XND_OK);
            CU_ASSERT_FATAL(y != NULL);
            CU_ASSERT_EQUAL(lors__e2e_desc_read(y, &r, &present, err, sizeof err), LORS_OK);
            if (err[0])
                fprintf(stderr, "%s %lld: %s\n", CHAINS[ci], (long long)plains[pi], err);
            CU_ASSERT_EQUAL(present, 1);
            same_table(&d, &r);
            lors_e2e_info_t info;
            CU_ASSERT_EQUAL(lors_e2e_info(y, &info, err, sizeof err), LORS_OK);
            CU_ASSERT(info.present && info.plain_size == plains[pi] && info.frame_size == 4096);
            CU_ASSERT_STRING_EQUAL(info.chain, CHAINS[ci]);
            if (strcmp(CHAINS[ci], "aes") == 0 && plains[pi] > 4096) /* one run, one last */
                CU_ASSERT_EQUAL(r.nruns, 2);
            lors__e2e_desc_free(&d);
            lors__e2e_desc_free(&r);
            free(xml);
            xnd_free(x);
            xnd_free(y);
        }
    /* a plain exNode has no table */
    xnd_t *x = xnd_new();
    lors_e2e_info_t info;
    char err[64];
    xnd_set_size(x, 10);
    CU_ASSERT_EQUAL(lors_e2e_info(x, &info, err, sizeof err), LORS_OK);
    CU_ASSERT_EQUAL(info.present, 0);
    xnd_free(x);
}

/* Change one field of a good table; the read must refuse it. */
static void refuse(const char *chain, const char *name, const char *sval, int64_t ival,
                   int64_t size_delta)
{
    lors__e2e_desc_t d, r;
    int present = 1;
    char err[512] = "";
    xnd_t *x = table(chain, 4096, 20000, &d);
    xnd_meta_list_t *l = NULL;
    CU_ASSERT_EQUAL_FATAL(xnd_meta_get_meta(&x->meta, LORS_E2E_META, &l), XND_OK);
    if (name && sval)
        xnd_meta_set_string(l, name, sval);
    else if (name && ival != INT64_MIN)
        xnd_meta_set_int(l, name, ival);
    else if (name)
        xnd_meta_remove(l, name);
    xnd_set_size(x, d.stored_size + size_delta);
    int rc = lors__e2e_desc_read(x, &r, &present, err, sizeof err);
    CU_ASSERT_EQUAL(rc, LORS_E_EXNODE);
    CU_ASSERT_EQUAL(present, 0);
    CU_ASSERT(strstr(err, LORS_E2E_META) != NULL);
    if (rc != LORS_E_EXNODE)
        fprintf(stderr, "accepted %s %s=%s/%lld\n", chain, name ? name : "size",
                sval ? sval : "", (long long)ival);
    lors_e2e_info_t info;
    CU_ASSERT_EQUAL(lors_e2e_info(x, &info, err, sizeof err), LORS_E_EXNODE);
    lors__e2e_desc_free(&d);
    xnd_free(x);
}

static void test_table_malformed(void)
{
    refuse("zlib", NULL, NULL, 0, 1);             /* lengths do not add up to the size */
    refuse("zlib", "version", NULL, 2, 0);
    refuse("zlib", "version", NULL, INT64_MIN, 0);
    refuse("zlib", "chain", "gzip", 0, 0);
    refuse("zlib", "chain", "", 0, 0);
    refuse("zlib", "frame_size", NULL, 0, 0);
    refuse("zlib", "frame_size", NULL, LORS_E2E_MAX_FRAME + 1, 0);
    refuse("zlib", "frame_size", NULL, 8192, 0);  /* 5 frames of 8192 hold more */
    refuse("zlib", "plain_size", NULL, -1, 0);
    refuse("zlib", "plain_size", NULL, 20000 + 4096, 0);
    refuse("zlib", "frames", NULL, 6, 0);
    refuse("zlib", "frames", NULL, LORS_E2E_MAX_FRAMES + 1, 0);
    refuse("zlib", "frame_lengths", "1,2,3", 0, 0);
    refuse("zlib", "frame_lengths", "1,2,3,4,5,", 0, 0);
    refuse("zlib", "frame_lengths", "1,2,03,4,5", 0, 0);
    refuse("zlib", "frame_lengths", "1,2,3,4,-5", 0, 0);
    refuse("zlib", "frame_lengths", "1*5*2", 0, 0);
    refuse("zlib", "frame_lengths", "1*999999999999", 0, 0);
    refuse("zlib", "frame_lengths", "9999999,1,1,1,1", 0, 0); /* more than zlib can make */
    refuse("zlib", "frame_lengths", "1 ,1,1,1,1", 0, 0);
    refuse("zlib", "frame_lengths", NULL, INT64_MIN, 0);
    refuse("aes", "frame_lengths", "4112*4,3631", 0, 0);   /* the last is 3616 + 16 */
    refuse("aes", "frame_lengths", "4111,4113,4112*2,3632", 0, 0);
    refuse("aes", "frame_lengths", "4112*5", 0, 0);
    refuse("aes", "salt", "0102", 0, 0);
    refuse("aes", "salt", "01020304050607zz", 0, 0);
    refuse("aes", "salt", NULL, INT64_MIN, 0);
    refuse("aes", "keyid", NULL, INT64_MIN, 0);
    refuse("zlib,aes", "keyid", "abc", 0, 0);

    /* and the good aes table reads, its lengths exact: 4 x (4096+16) and 1952+16 */
    lors__e2e_desc_t d, r;
    int present = 0;
    char err[256] = "";
    xnd_t *x = table("aes", 4096, 20000, &d);
    CU_ASSERT_EQUAL(lors__e2e_desc_read(x, &r, &present, err, sizeof err), LORS_OK);
    CU_ASSERT_EQUAL(r.stored_size, 20000 + 5 * 16);
    lors__e2e_desc_free(&d);
    lors__e2e_desc_free(&r);
    /* a metadata item of the right name but not a list */
    xnd_meta_remove(&x->meta, LORS_E2E_META);
    xnd_meta_set_string(&x->meta, LORS_E2E_META, "zlib");
    CU_ASSERT_EQUAL(lors__e2e_desc_read(x, &r, &present, err, sizeof err), LORS_E_EXNODE);
    xnd_free(x);
}

/* 100,000 zlib frames: the text stays about 7 bytes a frame and reads back fast. */
static void test_table_many_frames(void)
{
    lors__e2e_desc_t d, r;
    int present = 0;
    char err[256] = "", *xml = NULL;
    size_t xl = 0;
    int64_t fs = 1 << 20, n = 100000;
    xnd_t *x = table("zlib,aes", fs, fs * n - 3, &d), *y = NULL;
    CU_ASSERT_EQUAL(d.frames, n);
    double t0 = lns_test_cpu_s(); /* CPU time: a busy machine does not stretch it */
    CU_ASSERT_EQUAL(xnd_serialize(x, &xml, &xl, err, sizeof err), XND_OK);
    CU_ASSERT(xl < (size_t)n * 9);
    CU_ASSERT_EQUAL(xnd_parse_buf(xml, xl, &y, err, sizeof err), XND_OK);
    CU_ASSERT_FATAL(y != NULL);
    CU_ASSERT_EQUAL(lors__e2e_desc_read(y, &r, &present, err, sizeof err), LORS_OK);
    double secs = lns_test_cpu_s() - t0;
    CU_ASSERT(secs < 5);
    if (getenv("LNS_TEST_VERBOSE"))
        fprintf(stderr, "100000 frames: %zu bytes of XML, %.3f s\n", xl, secs);
    same_table(&d, &r);
    lors__e2e_desc_free(&d);
    lors__e2e_desc_free(&r);
    free(xml);
    xnd_free(x);
    xnd_free(y);
}

/* ---- lors_key_load -------------------------------------------------------------------------- */

static const char *key_file(const char *name, const void *data, size_t n, mode_t mode)
{
    static char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", lns_test_tmpdir(), name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(write(fd, data, n), (ssize_t)n);
    close(fd);
    chmod(path, mode);
    return path;
}

static void test_key_load(void)
{
    static const char hex[] = "000102030405060708090a0b0c0d0e0f101112131415161718191A1B1C1D1E1F";
    unsigned char want[LORS_KEY_BYTES], key[LORS_KEY_BYTES];
    char err[512], line[80];
    for (int i = 0; i < LORS_KEY_BYTES; i++)
        want[i] = (unsigned char)i;
    unsetenv("LNS_KEY");
    unsetenv("LNS_KEY_FILE");

    CU_ASSERT_EQUAL(lors_key_load(key_file("raw", want, 32, 0600), key, err, sizeof err), LORS_OK);
    CU_ASSERT(memcmp(key, want, 32) == 0);
    snprintf(line, sizeof line, "%s\n", hex);
    memset(key, 0, sizeof key);
    CU_ASSERT_EQUAL(lors_key_load(key_file("hexnl", line, 65, 0400), key, err, sizeof err),
                    LORS_OK);
    CU_ASSERT(memcmp(key, want, 32) == 0);
    memset(key, 0, sizeof key);
    CU_ASSERT_EQUAL(lors_key_load(key_file("hex", hex, 64, 0600), key, err, sizeof err), LORS_OK);
    CU_ASSERT(memcmp(key, want, 32) == 0);

    /* readable by group or others: refused, with the rule in the message */
    static const mode_t loose[] = {0640, 0604, 0644, 0444};
    for (size_t i = 0; i < 4; i++) {
        err[0] = 0;
        CU_ASSERT_EQUAL(lors_key_load(key_file("loose", want, 32, loose[i]), key, err, sizeof err),
                        LORS_E_KEY);
        CU_ASSERT(strstr(err, "readable by group or others") != NULL);
    }
    /* not a key */
    CU_ASSERT_EQUAL(lors_key_load(key_file("short", want, 31, 0600), key, err, sizeof err),
                    LORS_E_KEY);
    CU_ASSERT(strstr(err, "not a key") != NULL);
    CU_ASSERT_EQUAL(lors_key_load(key_file("hex63", hex, 63, 0600), key, err, sizeof err),
                    LORS_E_KEY);
    snprintf(line, sizeof line, "%.63sg", hex);
    CU_ASSERT_EQUAL(lors_key_load(key_file("hexg", line, 64, 0600), key, err, sizeof err),
                    LORS_E_KEY);
    snprintf(line, sizeof line, "%s\n\n", hex);
    CU_ASSERT_EQUAL(lors_key_load(key_file("hexnn", line, 66, 0600), key, err, sizeof err),
                    LORS_E_KEY);
    CU_ASSERT(strstr(err, hex) == NULL); /* no key material in messages */
    char big[200];
    memset(big, 'a', sizeof big);
    CU_ASSERT_EQUAL(lors_key_load(key_file("big", big, sizeof big, 0600), key, err, sizeof err),
                    LORS_E_KEY);
    CU_ASSERT_EQUAL(lors_key_load("/nonexistent/key", key, err, sizeof err), LORS_E_KEY);
    CU_ASSERT(strstr(err, "/nonexistent/key") != NULL);
    CU_ASSERT_EQUAL(lors_key_load(lns_test_tmpdir(), key, err, sizeof err), LORS_E_KEY);

    /* the environment: nothing, LNS_KEY, LNS_KEY_FILE; LNS_KEY first; a path beats both */
    CU_ASSERT_EQUAL(lors_key_load(NULL, key, err, sizeof err), LORS_E_KEY);
    CU_ASSERT(strstr(err, "LNS_KEY") != NULL);
    setenv("LNS_KEY", hex, 1);
    memset(key, 0, sizeof key);
    CU_ASSERT_EQUAL(lors_key_load(NULL, key, err, sizeof err), LORS_OK);
    CU_ASSERT(memcmp(key, want, 32) == 0);
    setenv("LNS_KEY", "00", 1);
    CU_ASSERT_EQUAL(lors_key_load(NULL, key, err, sizeof err), LORS_E_KEY);
    CU_ASSERT(strstr(err, "LNS_KEY") != NULL);
    unsetenv("LNS_KEY");
    unsigned char other[32];
    memset(other, 0x5a, sizeof other);
    setenv("LNS_KEY_FILE", key_file("envfile", other, 32, 0600), 1);
    CU_ASSERT_EQUAL(lors_key_load(NULL, key, err, sizeof err), LORS_OK);
    CU_ASSERT(memcmp(key, other, 32) == 0);
    setenv("LNS_KEY", hex, 1);
    CU_ASSERT_EQUAL(lors_key_load(NULL, key, err, sizeof err), LORS_OK);
    CU_ASSERT(memcmp(key, want, 32) == 0);
    CU_ASSERT_EQUAL(lors_key_load(key_file("raw2", other, 32, 0600), key, err, sizeof err),
                    LORS_OK);
    CU_ASSERT(memcmp(key, other, 32) == 0);
    unsetenv("LNS_KEY");
    setenv("LNS_KEY_FILE", key_file("envloose", other, 32, 0644), 1);
    CU_ASSERT_EQUAL(lors_key_load(NULL, key, err, sizeof err), LORS_E_KEY);
    CU_ASSERT(strstr(err, "LNS_KEY_FILE") != NULL);
    unsetenv("LNS_KEY_FILE");
}

static const lns_test_case tests[] = {
    {"chains", test_chains},
    {"codec round trips", test_codec_round_trips},
    {"codec: tampering, wrong index/salt/key", test_codec_tampering},
    {"codec: the compressor's level", test_codec_levels},
    {"key id", test_keyid},
    {"frame table: write, XML, read", test_table_round_trip},
    {"frame table: malformations refused", test_table_malformed},
    {"frame table: 100,000 frames", test_table_many_frames},
    {"lors_key_load", test_key_load},
};

LNS_TEST_MAIN("lors e2e frames", tests)
