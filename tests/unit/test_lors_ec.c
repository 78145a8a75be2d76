/* test_lors_ec.c -- erasure coding without depots: the stripe layout, the ISA-L codec (every
 * loss of up to m pieces of 4+2, 6+3 and 10+4, and of parity too), "K+M" parsing, and the
 * lns_ec description written, read back through XML, and refused when malformed. */
#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>

#include "lns_test.h"
#include "lors.h"
#include "lors_checksum.h"
#include "lors_ec_int.h"
#include "xnd.h"

static void test_layout(void)
{
    lors__ec_t ec;
    /* 4+2, 4 KiB pieces, a file of 2 full stripes and 5 bytes */
    CU_ASSERT_EQUAL_FATAL(lors__ec_init(&ec, 4, 2, 4096, 2 * 16384 + 5), LORS_OK);
    CU_ASSERT_EQUAL(ec.stripes, 3);
    CU_ASSERT_EQUAL(lors__ec_stripe_bytes(&ec, 0), 16384);
    CU_ASSERT_EQUAL(lors__ec_stripe_bytes(&ec, 2), 5);
    CU_ASSERT_EQUAL(lors__ec_stripe_bytes(&ec, 3), 0);
    CU_ASSERT_EQUAL(lors__ec_piece_len(&ec, 1), 4096);
    CU_ASSERT_EQUAL(lors__ec_piece_len(&ec, 2), 2);
    int64_t off, len;
    lors__ec_data_range(&ec, 1, 3, &off, &len);
    CU_ASSERT_EQUAL(off, 16384 + 3 * 4096);
    CU_ASSERT_EQUAL(len, 4096);
    lors__ec_data_range(&ec, 2, 2, &off, &len); /* bytes 4, 5 of the stripe: only one */
    CU_ASSERT_EQUAL(off, 32768 + 4);
    CU_ASSERT_EQUAL(len, 1);
    lors__ec_data_range(&ec, 2, 3, &off, &len);
    CU_ASSERT_EQUAL(len, 0);
    lors__ec_free(&ec);
    CU_ASSERT_EQUAL(lors__ec_init(&ec, 0, 2, 4096, 1), LORS_E_INVAL);
    CU_ASSERT_EQUAL(lors__ec_init(&ec, 33, 2, 4096, 1), LORS_E_INVAL);
    CU_ASSERT_EQUAL(lors__ec_init(&ec, 4, 17, 4096, 1), LORS_E_INVAL);
    CU_ASSERT_EQUAL(lors__ec_init(&ec, 4, 2, 4096, 0), LORS_OK);
    CU_ASSERT_EQUAL(ec.stripes, 0);
    lors__ec_free(&ec);
}

/* Encode one stripe of k x len random bytes, then for every set of up to m lost pieces
 * rebuild them all from k survivors and compare. */
static void round_trips(int k, int m, int64_t len)
{
    lors__ec_t ec;
    int n = k + m;
    CU_ASSERT_EQUAL_FATAL(lors__ec_init(&ec, k, m, len, (int64_t)k * len), LORS_OK);
    unsigned char *p[LORS_EC_MAX_K + LORS_EC_MAX_M], *out[LORS_EC_MAX_K + LORS_EC_MAX_M];
    for (int i = 0; i < n; i++) {
        p[i] = malloc((size_t)len);
        out[i] = malloc((size_t)len);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(out[i]);
        if (i < k)
            lns_test_fill(p[i], (size_t)len, (uint64_t)(i + 1) * 7919u + (uint64_t)k);
    }
    lors__ec_encode(&ec, len, p, p + k);
    /* parity is not all zeros (a codec that does nothing fails here) */
    int nonzero = 0;
    for (int64_t b = 0; b < len; b++)
        nonzero |= p[k][b];
    CU_ASSERT(nonzero);
    int patterns = 0, bad = 0;
    for (unsigned mask = 1; mask < (1u << n); mask++) {
        if (__builtin_popcount(mask) > m)
            continue;
        int have[LORS_EC_MAX_K], want[LORS_EC_MAX_M], nh = 0, nw = 0;
        unsigned char *src[LORS_EC_MAX_K], *dst[LORS_EC_MAX_M];
        for (int i = 0; i < n; i++) {
            if (mask & (1u << i)) {
                want[nw] = i;
                dst[nw++] = out[i];
            } else if (nh < k) {
                have[nh] = i;
                src[nh++] = p[i];
            }
        }
        CU_ASSERT_EQUAL_FATAL(lors__ec_decode(&ec, len, have, src, want, nw, dst), LORS_OK);
        for (int w = 0; w < nw; w++)
            bad += memcmp(dst[w], p[want[w]], (size_t)len) != 0;
        patterns++;
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(patterns >= n);
    /* a column twice is refused: k - 1 distinct pieces cannot decode */
    int have[LORS_EC_MAX_K], want[1] = {0};
    unsigned char *src[LORS_EC_MAX_K], *dst[1] = {out[0]};
    for (int i = 0; i < k; i++) {
        have[i] = i + 1;
        src[i] = p[i + 1];
    }
    if (k > 1) {
        have[1] = have[0];
        CU_ASSERT_EQUAL(lors__ec_decode(&ec, len, have, src, want, 1, dst), LORS_E_INVAL);
    }
    for (int i = 0; i < n; i++) {
        free(p[i]);
        free(out[i]);
    }
    lors__ec_free(&ec);
}

static void test_codec(void)
{
    round_trips(4, 2, 65536 + 17);
    round_trips(6, 3, 4096);
    round_trips(10, 4, 1000);
    round_trips(1, 1, 33);
}

static void test_parse(void)
{
    int k, m;
    CU_ASSERT_EQUAL(lors_ec_parse("4+2", &k, &m), LORS_OK);
    CU_ASSERT(k == 4 && m == 2);
    CU_ASSERT_EQUAL(lors_ec_parse("10+4", &k, &m), LORS_OK);
    CU_ASSERT(k == 10 && m == 4);
    const char *bad[] = {"", "4", "4+", "+2", "4+0", "0+2", "33+1", "4+17", "4+2x", "-4+2",
                         "4 +2", "4+ 2", "4+2+1", NULL};
    for (int i = 0; bad[i]; i++)
        CU_ASSERT_EQUAL(lors_ec_parse(bad[i], &k, &m), LORS_E_INVAL);
}

/* The description through XML and back, and each malformation refused by name. */
static xnd_t *described(int64_t size)
{
    lors__ec_t ec;
    xnd_t *x = xnd_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(xnd_set_size(x, size), XND_OK);
    CU_ASSERT_EQUAL_FATAL(lors__ec_init(&ec, 6, 3, 1 << 20, size), LORS_OK);
    CU_ASSERT_EQUAL(lors__ec_write(x, &ec), XND_OK);
    lors__ec_free(&ec);
    return x;
}

static xnd_t *reparsed(const xnd_t *x)
{
    char *txt, err[256];
    size_t len;
    xnd_t *y = NULL;
    CU_ASSERT_EQUAL_FATAL(xnd_serialize(x, &txt, &len, err, sizeof err), XND_OK);
    CU_ASSERT_EQUAL(xnd_parse_buf(txt, len, &y, err, sizeof err), XND_OK);
    free(txt);
    return y;
}

static void test_description(void)
{
    int64_t size = 6 * (1 << 20) * 3 + 12345;
    xnd_t *x = described(size), *y = reparsed(x);
    CU_ASSERT_PTR_NOT_NULL_FATAL(y);
    lors_ec_info_t info;
    char err[256];
    CU_ASSERT_EQUAL(lors_ec_info(y, &info, err, sizeof err), LORS_OK);
    CU_ASSERT(info.present && info.k == 6 && info.m == 3);
    CU_ASSERT_EQUAL(info.piece_size, 1 << 20);
    CU_ASSERT_EQUAL(info.stripes, 4);
    CU_ASSERT_EQUAL(info.size, size);
    xnd_free(y);

    /* a column mapping: stripes 1..3 of column 7, with digests */
    lors__ec_t ec;
    int present;
    CU_ASSERT_EQUAL_FATAL(lors__ec_read(x, &ec, &present, err, sizeof err), LORS_OK);
    xnd_mapping_t *m = xnd_mapping_new();
    m->exnode_offset = (int64_t)6 << 20;
    m->logical_length = size - m->exnode_offset;
    m->alloc_length = 2 * ((int64_t)1 << 20) + lors__ec_piece_len(&ec, 3);
    char dg[3 * 4 + 1] = "aaaabbbbcccc";
    xnd_mapping_set_func(m, lors__ec_func(&ec, 7, "sha256", dg));
    lors__ec_col_t c;
    lors__ec_col(&ec, m, &c);
    CU_ASSERT(c.ok);
    CU_ASSERT_EQUAL(c.column, 7);
    CU_ASSERT_EQUAL(c.first, 1);
    CU_ASSERT_EQUAL(c.n, 3);
    CU_ASSERT_EQUAL(c.hexlen, 4);
    CU_ASSERT_EQUAL(lors__ec_alloc_off(&ec, m, &c, 2), (int64_t)1 << 20);
    m->alloc_length--; /* the allocation cannot hold the last piece */
    lors__ec_col(&ec, m, &c);
    CU_ASSERT(!c.ok);
    m->alloc_length++;
    m->exnode_offset += 1; /* not on a stripe boundary */
    lors__ec_col(&ec, m, &c);
    CU_ASSERT(!c.ok);
    xnd_mapping_free(m);
    lors__ec_free(&ec);

    /* malformations: each refused, naming the field */
    struct {
        const char *name;
        int64_t v;
        const char *says;
    } bad[] = {{"version", 3, "version"}, {"version", 0, "version"}, {"k", 0, "k"},           {"m", 17, "m"},
               {"piece_size", 0, "piece_size"}, {"stripes", 5, "stripes"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        xnd_t *z = described(size);
        xnd_meta_list_t *l;
        CU_ASSERT_EQUAL(xnd_meta_get_meta(&z->meta, LORS_EC_META, &l), XND_OK);
        CU_ASSERT_EQUAL(xnd_meta_set_int(l, bad[i].name, bad[i].v), XND_OK);
        err[0] = 0;
        CU_ASSERT_EQUAL(lors_ec_info(z, &info, err, sizeof err), LORS_E_EXNODE);
        CU_ASSERT(strstr(err, bad[i].says) != NULL);
        xnd_free(z);
    }
    xnd_t *z = described(size);
    xnd_meta_list_t *l;
    CU_ASSERT_EQUAL(xnd_meta_get_meta(&z->meta, LORS_EC_META, &l), XND_OK);
    CU_ASSERT_EQUAL(xnd_meta_set_string(l, "code", "rs-vandermonde"), XND_OK);
    CU_ASSERT_EQUAL(lors_ec_info(z, &info, err, sizeof err), LORS_E_EXNODE);
    CU_ASSERT(strstr(err, "code") != NULL);
    xnd_free(z);
    xnd_free(x);
}

/* Layouts at the edges of int64: refused or computed without overflow (UBSan traps on any). */
static void test_extremes(void)
{
    lors__ec_t ec;
    const int64_t big = LORS_EC_MAX_PIECE, most = LORS_EC_MAX_STRIPES;
    CU_ASSERT_EQUAL(lors__ec_init(&ec, 2, 1, 4096, INT64_MAX), LORS_E_INVAL);
    CU_ASSERT_EQUAL(lors__ec_init(&ec, LORS_EC_MAX_K, LORS_EC_MAX_M, big, INT64_MAX),
                    LORS_E_INVAL);
    CU_ASSERT_EQUAL(lors__ec_init(&ec, 1, 1, 1, INT64_MAX - 1), LORS_E_INVAL);
    CU_ASSERT_EQUAL(lors__ec_init(&ec, 2, 1, INT64_MAX, 1), LORS_E_INVAL);
    CU_ASSERT_EQUAL(lors__ec_init(&ec, 2, 1, 4096, -1), LORS_E_INVAL);
    /* the largest file lns reads: LORS_EC_MAX_STRIPES stripes of the largest layout */
    int64_t S = LORS_EC_MAX_K * big;
    CU_ASSERT_EQUAL(lors__ec_init(&ec, LORS_EC_MAX_K, 1, big, most * S + 1), LORS_E_INVAL);
    CU_ASSERT_EQUAL_FATAL(lors__ec_init(&ec, LORS_EC_MAX_K, 1, big, most * S), LORS_OK);
    CU_ASSERT_EQUAL(ec.stripes, most);
    CU_ASSERT_EQUAL(lors__ec_stripe_bytes(&ec, most - 1), S);
    CU_ASSERT_EQUAL(lors__ec_stripe_bytes(&ec, most), 0);
    CU_ASSERT_EQUAL(lors__ec_stripe_bytes(&ec, INT64_MAX), 0);
    CU_ASSERT_EQUAL(lors__ec_stripe_bytes(&ec, -1), 0);
    CU_ASSERT_EQUAL(lors__ec_piece_len(&ec, INT64_MAX), 0);
    int64_t off, len;
    lors__ec_data_range(&ec, most - 1, LORS_EC_MAX_K - 1, &off, &len);
    CU_ASSERT_EQUAL(off, most * S - big);
    CU_ASSERT_EQUAL(len, big);
    lors__ec_data_range(&ec, INT64_MAX, 0, &off, &len);
    CU_ASSERT_EQUAL(len, 0);
    /* column mappings whose numbers run off the end: not columns, and no overflow */
    xnd_mapping_t *m = xnd_mapping_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    xnd_mapping_set_func(m, lors__ec_func(&ec, 0, NULL, NULL));
    lors__ec_col_t c;
    const int64_t edge[][4] = {/* exnode_offset, logical_length, alloc_offset, alloc_length */
                               {0, INT64_MAX, 0, INT64_MAX},
                               {(most - 1) * S, INT64_MAX - (most - 1) * S, 0, INT64_MAX},
                               {INT64_MAX / S * S, S, 0, INT64_MAX},
                               {0, S, INT64_MAX, INT64_MAX},
                               {0, S, INT64_MAX - 1, 0},
                               {0, S, 0, INT64_MIN}};
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
        m->exnode_offset = edge[i][0];
        m->logical_length = edge[i][1];
        m->alloc_offset = edge[i][2];
        m->alloc_length = edge[i][3];
        lors__ec_col(&ec, m, &c);
        CU_ASSERT(!c.ok);
    }
    /* the last stripe, in an allocation exactly its size */
    m->exnode_offset = (most - 1) * S;
    m->logical_length = S;
    m->alloc_offset = 0;
    m->alloc_length = big;
    lors__ec_col(&ec, m, &c);
    CU_ASSERT(c.ok && c.first == most - 1 && c.n == 1);
    xnd_mapping_free(m);
    lors__ec_free(&ec);

    /* an exNode that says so is refused with a line, as LORS_E_EXNODE */
    const int64_t sizes[] = {INT64_MAX, INT64_MAX - 8192, most * 8192 + 1};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        xnd_t *x = xnd_new();
        xnd_meta_list_t *l;
        CU_ASSERT_PTR_NOT_NULL_FATAL(x);
        CU_ASSERT_EQUAL(xnd_set_size(x, sizes[i]), XND_OK);
        CU_ASSERT_EQUAL(xnd_meta_set_meta(&x->meta, LORS_EC_META, &l), XND_OK);
        CU_ASSERT_EQUAL(xnd_meta_set_int(l, "version", LORS_EC_VERSION), XND_OK);
        CU_ASSERT_EQUAL(xnd_meta_set_string(l, "code", LORS_EC_CODE), XND_OK);
        CU_ASSERT_EQUAL(xnd_meta_set_int(l, "k", 2), XND_OK);
        CU_ASSERT_EQUAL(xnd_meta_set_int(l, "m", 1), XND_OK);
        CU_ASSERT_EQUAL(xnd_meta_set_int(l, "piece_size", 4096), XND_OK);
        CU_ASSERT_EQUAL(xnd_meta_set_int(l, "stripes", sizes[i] / 8192 + 1), XND_OK);
        lors_ec_info_t info;
        char err[256] = "";
        CU_ASSERT_EQUAL(lors_ec_info(x, &info, err, sizeof err), LORS_E_EXNODE);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "stripes"));
        xnd_free(x);
    }
}

/* Version 2 binds a piece's digest to its place: the documented line, hashed; the same bytes
 * as another stripe, column or layout fail; version 1 lists the bytes' own digest. */
static void test_bound_digests(void)
{
    lors__ec_t ec;
    const char *own = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    char *h = NULL;
    CU_ASSERT_EQUAL_FATAL(lors__ec_init(&ec, 4, 2, 4096, 2 * 16384 + 5), LORS_OK);
    CU_ASSERT_EQUAL(ec.version, LORS_EC_VERSION);
    /* printf 'lns_ec-piece 2 rs-cauchy 4 2 4096 32773 2 5 <sha256 of "abc">' | sha256sum */
    CU_ASSERT_EQUAL(lors__ec_bind(&ec, 2, 5, "sha256", own, &h), LORS_OK);
    CU_ASSERT_STRING_EQUAL(h, "e278736ba89b5c6bf8ece41612463cbe51a6537d8ceae5dd1c28406645e25503");
    free(h);

    /* a column mapping of stripes 0..2 of column 1 with its pieces' bound digests */
    unsigned char piece[3][4096];
    char *own3 = calloc(1, 3 * 64 + 1), *bound = NULL;
    CU_ASSERT_PTR_NOT_NULL_FATAL(own3);
    for (int s = 0; s < 3; s++) {
        int64_t len = lors__ec_piece_len(&ec, s);
        lns_test_fill(piece[s], sizeof piece[s], (uint64_t)s + 1);
        lors_ck_t ck;
        CU_ASSERT_EQUAL_FATAL(lors_ck_init(&ck, "sha256", len), LORS_OK);
        CU_ASSERT_EQUAL(lors_ck_update(&ck, piece[s], (size_t)len), LORS_OK);
        CU_ASSERT_EQUAL(lors_ck_finish(&ck, &h), LORS_OK);
        lors_ck_free(&ck);
        memcpy(own3 + s * 64, h, 64);
        free(h);
    }
    CU_ASSERT_EQUAL_FATAL(lors__ec_bind_all(&ec, 0, 1, "sha256", own3, &bound), LORS_OK);
    lors__ec_col_t c = {.ok = 1, .column = 1, .first = 0, .n = 3, .alg = "sha256",
                        .digests = bound, .hexlen = 64};
    for (int s = 0; s < 3; s++)
        CU_ASSERT_EQUAL(lors__ec_piece_check(&ec, &c, s, piece[s], lors__ec_piece_len(&ec, s)),
                        1);
    /* the same bytes called another piece: another column, stripe, or layout */
    c.column = 0;
    CU_ASSERT_EQUAL(lors__ec_piece_check(&ec, &c, 0, piece[0], 4096), 0);
    c.column = 1;
    c.first = 1;
    CU_ASSERT_EQUAL(lors__ec_piece_check(&ec, &c, 1, piece[0], 4096), 0);
    c.first = 0;
    lors__ec_t other = ec;
    other.size++;
    CU_ASSERT_EQUAL(lors__ec_piece_check(&other, &c, 0, piece[0], 4096), 0);
    other = ec;
    other.m = 3;
    CU_ASSERT_EQUAL(lors__ec_piece_check(&other, &c, 0, piece[0], 4096), 0);
    free(bound);

    /* version 1: the own digests, unbound */
    ec.version = LORS_EC_VERSION_UNBOUND;
    CU_ASSERT_EQUAL(lors__ec_bind(&ec, 2, 5, "sha256", own, &h), LORS_OK);
    CU_ASSERT_STRING_EQUAL(h, own);
    free(h);
    c.digests = own3;
    CU_ASSERT_EQUAL(lors__ec_piece_check(&ec, &c, 2, piece[2], lors__ec_piece_len(&ec, 2)), 1);
    c.column = 0;
    CU_ASSERT_EQUAL(lors__ec_piece_check(&ec, &c, 2, piece[2], lors__ec_piece_len(&ec, 2)), 1);
    free(own3);
    lors__ec_free(&ec);
}

/* The parity pieces' "crc64": CRC-64/XZ, its check value, fed in parts and per block. */
static void test_crc64(void)
{
    lors_ck_t ck;
    char *h = NULL;
    CU_ASSERT_EQUAL_FATAL(lors_ck_init(&ck, "crc64", 9), LORS_OK);
    CU_ASSERT_EQUAL(lors_ck_update(&ck, "1234", 4), LORS_OK);
    CU_ASSERT_EQUAL(lors_ck_update(&ck, "56789", 5), LORS_OK);
    CU_ASSERT_EQUAL(lors_ck_finish(&ck, &h), LORS_OK);
    CU_ASSERT_STRING_EQUAL(h, "995dc9bbdf1939fa");
    free(h);
    /* blocks of 9: the second block starts from a fresh CRC */
    CU_ASSERT_EQUAL(lors_ck_update(&ck, "123456789123456789", 18), LORS_OK);
    CU_ASSERT_EQUAL(lors_ck_finish(&ck, &h), LORS_OK);
    CU_ASSERT_STRING_EQUAL(h, "995dc9bbdf1939fa995dc9bbdf1939fa");
    free(h);
    lors_ck_free(&ck);
}

static const lns_test_case tests[] = {
    {"crc64 digests (CRC-64/XZ)", test_crc64},
    {"layout", test_layout},
    {"layouts at the edges of int64", test_extremes},
    {"piece digests bound to their places", test_bound_digests},
    {"codec: every loss of up to m pieces", test_codec},
    {"K+M parsing", test_parse},
    {"lns_ec description", test_description},
};

LNS_TEST_MAIN("lors erasure coding", tests)
