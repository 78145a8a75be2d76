/* test_lors_func.c -- what a mapping's function means, without depots: the kinds lns reads and
 * every way a function is refused (lors_func.c), and the LoRS 1.3.1 chains (lors_func_loci.c):
 * MD5 and the 64-bit original's variant of it, layouts checked against the exNode's sizes,
 * every run of blocks decoded, corruption caught.  The stored bytes are made here from the
 * layouts of docs/exnode.md; tests/system/test_lors_loci.c reads what the original wrote. */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <openssl/evp.h>

#include "lns_test.h"
#include "lors.h"
#include "lors_func_int.h"
#include "xnd.h"

/* ---- MD5 ---------------------------------------------------------------------------------- */

static void test_md5(void)
{
    /* the original's md5c.c built on x86_64 (unsigned long words), on these inputs: bytes
     * i * 7 + 3 of lengths 55, 56, 64, 1000 and 100000 */
    static const struct {
        size_t n;
        const char *lp64;
    } v[] = {
        {0, "e4c23762ed2823a27e62a64b95c024e7"},   {3, "7999dc75e8da648c6727e137c5b77803"},
        {55, "017f73d98d01551450775fbdfc051f42"},  {56, "2f888d8ac853e5a3b7dad91ce32068e0"},
        {64, "4c8c5496202a87151f8db350d66eaf7a"},  {1000, "79a970976e72b1e6bfeada3e2b7944c0"},
        {100000, "5f0bfcc6298496e39115ca4b464b31f9"},
    };
    unsigned char *b = malloc(100000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    for (int i = 0; i < 100000; i++)
        b[i] = (unsigned char)(i * 7 + 3);
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        const unsigned char *in = v[i].n == 3 ? (const unsigned char *)"abc" : b;
        char h[33] = {0};
        lors__loci_md5_hex(in, v[i].n, 1, h);
        CU_ASSERT_STRING_EQUAL(h, v[i].lp64);
    }
    /* the same code cut to 32 bits is MD5, on every length around the padding's edges */
    for (size_t n = 0; n < 300; n++) {
        unsigned char d[16];
        unsigned int dl;
        char h[33] = {0}, want[33];
        EVP_Digest(b, n, d, &dl, EVP_md5(), NULL);
        for (int k = 0; k < 16; k++)
            snprintf(want + 2 * k, 3, "%02x", d[k]);
        lors__loci_md5_hex(b, n, 0, h);
        CU_ASSERT_STRING_EQUAL(h, want);
    }
    free(b);
}

/* ---- exNodes and stored bytes made from the layouts -------------------------------------- */

#define L 100000       /* a mapping's plain bytes */
#define E 16384        /* its e2e_blocksize */
#define KEY "a&b\"c'd"  /* seven characters, as the original's keys are; escaped in the XML */

typedef struct made {
    char *xml;
    unsigned char *stored;
    size_t slen;
} made_t;

static void put(unsigned char **p, size_t *n, size_t *cap, const void *d, size_t len)
{
    if (*n + len > *cap) {
        *cap = (*n + len) * 2 + 64;
        *p = realloc(*p, *cap);
    }
    memcpy(*p + *n, d, len);
    *n += len;
}

/* One step over a stream cut in blocks of bs (the last shorter): what the original writes. */
static unsigned char *enc_step(const char *step, const unsigned char *in, size_t n, size_t bs,
                               int lp64, size_t *outn, size_t *outbs)
{
    unsigned char *o = NULL;
    size_t on = 0, cap = 0;
    if (strcmp(step, "zlib_compress") == 0) {
        uLongf zl = compressBound((uLong)n);
        unsigned char *z = malloc(zl + 13);
        char head[14];
        snprintf(head, sizeof head, "%012zu:", n);
        memcpy(z, head, 13);
        CU_ASSERT_FATAL(compress(z + 13, &zl, in, (uLong)n) == Z_OK);
        *outn = *outbs = zl + 13;
        return z;
    }
    for (size_t at = 0; at < n; at += bs) {
        size_t k = n - at < bs ? n - at : bs;
        if (strcmp(step, "checksum") == 0) {
            char h[33];
            lors__loci_md5_hex(in + at, k, lp64, h);
            h[32] = ':';
            put(&o, &on, &cap, h, 33);
            put(&o, &on, &cap, in + at, k);
        } else { /* xor_encrypt: every block from its start, the key's order as documented */
            size_t l = strlen(KEY), j = 0, base = on;
            put(&o, &on, &cap, in + at, k);
            for (size_t i = 0; i < k; i++) {
                if (j == 0)
                    j = l - 1;
                o[base + i] ^= (unsigned char)KEY[j];
                if (++j > l)
                    j = 0;
            }
        }
    }
    *outn = on;
    *outbs = strcmp(step, "checksum") == 0 ? bs + 33 : bs;
    return o;
}

/* The exNode and stored bytes of one mapping of plain[0..L) through chain (comma-separated,
 * in the order applied), as the original lays them out; e2e_blocksize / alloc_length as it
 * writes them unless e2e or alloc (>= 0) say otherwise. */
static made_t make(const char *chain, const unsigned char *plain, int lp64, int64_t e2e,
                   int64_t alloc)
{
    made_t r = {0};
    char steps[8][32], *c = strdup(chain), *save = NULL;
    int ns = 0, whole = 0;
    for (char *t = strtok_r(c, ",", &save); t; t = strtok_r(NULL, ",", &save))
        snprintf(steps[ns++], sizeof steps[0], "%s", t);
    free(c);
    size_t bs[8], n = L, cur_bs = E;
    unsigned char *cur = malloc(L);
    memcpy(cur, plain, L);
    for (int i = 0; i < ns; i++) {
        size_t on, obs;
        unsigned char *o = enc_step(steps[i], cur, n, cur_bs, lp64, &on, &obs);
        whole |= strcmp(steps[i], "zlib_compress") == 0;
        free(cur);
        cur = o;
        n = on;
        cur_bs = bs[i] = obs;
    }
    r.stored = cur;
    r.slen = n;
    char fx[4096] = "";
    size_t fl = 0;
    for (int i = ns - 1; i >= 0; i--) /* outermost first */
        fl += (size_t)snprintf(fx + fl, sizeof fx - fl,
                               "<exnode:function name=\"%s\"><exnode:argument name=\"blocksize\" "
                               "type=\"integer\">%zu</exnode:argument>%s",
                               steps[i], bs[i],
                               strcmp(steps[i], "xor_encrypt") == 0
                                   ? "<exnode:argument name=\"KEY\" type=\"string\">a&amp;b&quot;"
                                     "c'd</exnode:argument>"
                                   : "");
    for (int i = 0; i < ns; i++)
        fl += (size_t)snprintf(fx + fl, sizeof fx - fl, "</exnode:function>");
    size_t xl = strlen(fx) + 2048;
    r.xml = malloc(xl);
    snprintf(r.xml, xl,
             "<?xml version=\"1.0\"?><exnode xmlns:exnode=\"http://loci.cs.utk.edu/exnode\">"
             "<exnode:mapping>"
             "<exnode:metadata name=\"alloc_length\" type=\"integer\">%lld</exnode:metadata>"
             "<exnode:metadata name=\"alloc_offset\" type=\"integer\">0</exnode:metadata>"
             "<exnode:metadata name=\"e2e_blocksize\" type=\"integer\">%lld</exnode:metadata>"
             "<exnode:metadata name=\"exnode_offset\" type=\"integer\">0</exnode:metadata>"
             "<exnode:metadata name=\"logical_length\" type=\"integer\">%d</exnode:metadata>"
             "%s</exnode:mapping></exnode>",
             (long long)(alloc >= 0 ? alloc : (int64_t)n),
             (long long)(e2e >= 0 ? e2e : whole ? L : E), L, fx);
    return r;
}

static xnd_t *parse(const char *xml)
{
    xnd_opts_t o = {.lax = 1}; /* no capabilities */
    xnd_t *x = NULL;
    char err[256];
    if (xnd_parse_buf_opts(xml, strlen(xml), &o, &x, err, sizeof err) != XND_OK)
        fprintf(stderr, "parse: %s\n", err);
    return x;
}

static unsigned char *plain_bytes(void)
{
    unsigned char *p = malloc(L);
    uint32_t s = 12345;
    for (int i = 0; i < L; i++) {
        s = s * 1103515245u + 12345u;
        p[i] = (unsigned char)(i < L / 2 ? (int)(s >> 24) : 'a' + i % 7); /* noise, then text */
    }
    return p;
}

static lors_func_kind kind_of(const char *xml, char *why, size_t whylen)
{
    xnd_t *x = parse(xml);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    lors__func_t f;
    lors__func_read(x, NULL, x->maps[0], &f, why, whylen);
    xnd_free(x);
    return f.kind;
}

/* ---- the chains decoded ------------------------------------------------------------------- */

static void decode_all_runs(const char *chain, int lp64)
{
    unsigned char *plain = plain_bytes();
    made_t m = make(chain, plain, lp64, -1, -1);
    xnd_t *x = parse(m.xml);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    lors__func_t f;
    char why[256];
    lors__func_read(x, NULL, x->maps[0], &f, why, sizeof why);
    CU_ASSERT_EQUAL_FATAL(f.kind, LORS_FUNC_LORS131);
    const lors__loci_t *l = &f.loci;
    int fails = 0;
    for (int64_t b0 = 0; b0 < l->nblocks; b0++)
        for (int64_t b1 = b0 + 1; b1 <= l->nblocks; b1++) {
            int64_t off, len, plen = lors__loci_plain(l, b0, b1);
            lors__loci_stored(l, b0, b1, &off, &len);
            CU_ASSERT_FATAL(off + len <= (int64_t)m.slen);
            size_t room = (size_t)(len > plen ? len : plen);
            unsigned char *buf = malloc(room);
            memcpy(buf, m.stored + off, (size_t)len);
            int rc = lors__loci_decode(l, buf, (size_t)len, b0, b1, 1, why, sizeof why);
            if (rc != 0 || memcmp(buf, plain + b0 * l->ebs, (size_t)plen) != 0) {
                if (fails++ < 3)
                    fprintf(stderr, "%s: blocks %lld-%lld: rc %d %s\n", chain, (long long)b0,
                            (long long)b1, rc, rc ? why : "wrong bytes");
            }
            free(buf);
        }
    CU_ASSERT_EQUAL(fails, 0);
    xnd_free(x);
    free(m.xml);
    free(m.stored);
    free(plain);
}

static void test_decode_chains(void)
{
    static const char *chains[] = {
        "checksum", "xor_encrypt", "checksum,xor_encrypt", "xor_encrypt,checksum",
        "checksum,checksum", "zlib_compress", "checksum,zlib_compress", "zlib_compress,checksum",
        "zlib_compress,xor_encrypt", "xor_encrypt,checksum,zlib_compress",
    };
    for (size_t i = 0; i < sizeof chains / sizeof chains[0]; i++) {
        decode_all_runs(chains[i], 1);
        decode_all_runs(chains[i], 0); /* a 32-bit original: real MD5 */
    }
}

/* A stored byte changed: the checksum step says so (-EILSEQ), unless not verifying; a
 * broken header or zlib stream does not decode (-EBADMSG). */
static void test_decode_damage(void)
{
    unsigned char *plain = plain_bytes();
    char why[256];
    made_t m = make("checksum,xor_encrypt", plain, 1, -1, -1);
    xnd_t *x = parse(m.xml);
    lors__func_t f;
    lors__func_read(x, NULL, x->maps[0], &f, why, sizeof why);
    CU_ASSERT_EQUAL_FATAL(f.kind, LORS_FUNC_LORS131);
    unsigned char *buf = malloc(m.slen);
    memcpy(buf, m.stored, m.slen);
    buf[3 * f.loci.sbs + 100] ^= 1; /* in block 3's data */
    CU_ASSERT_EQUAL(lors__loci_decode(&f.loci, buf, m.slen, 0, f.loci.nblocks, 1, why,
                                      sizeof why), -EILSEQ);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "block 3"));
    memcpy(buf, m.stored, m.slen);
    buf[3 * f.loci.sbs + 100] ^= 1;
    CU_ASSERT_EQUAL(lors__loci_decode(&f.loci, buf, m.slen, 0, f.loci.nblocks, 0, why,
                                      sizeof why), 0);
    memcpy(buf, m.stored, m.slen);
    buf[2 * f.loci.sbs + 32] ^= 0x55; /* block 2's ':' (xored back on the way in) */
    CU_ASSERT_EQUAL(lors__loci_decode(&f.loci, buf, m.slen, 0, f.loci.nblocks, 1, why,
                                      sizeof why), -EBADMSG);
    free(buf);
    xnd_free(x);
    free(m.xml);
    free(m.stored);

    m = make("zlib_compress", plain, 1, -1, -1);
    x = parse(m.xml);
    lors__func_read(x, NULL, x->maps[0], &f, why, sizeof why);
    CU_ASSERT_EQUAL_FATAL(f.kind, LORS_FUNC_LORS131);
    buf = malloc(L);
    memcpy(buf, m.stored, m.slen);
    buf[m.slen / 2] ^= 0x20;
    CU_ASSERT_EQUAL(lors__loci_decode(&f.loci, buf, m.slen, 0, 1, 1, why, sizeof why), -EBADMSG);
    memcpy(buf, m.stored, m.slen);
    buf[5] = 'x'; /* the length's digits */
    CU_ASSERT_EQUAL(lors__loci_decode(&f.loci, buf, m.slen, 0, 1, 1, why, sizeof why), -EBADMSG);
    free(buf);
    xnd_free(x);
    free(m.xml);
    free(m.stored);
    free(plain);
}

/* ---- what is read, what is refused -------------------------------------------------------- */

#define MAP(meta, fn)                                                                          \
    "<?xml version=\"1.0\"?><exnode xmlns:exnode=\"http://loci.cs.utk.edu/exnode\">"            \
    "<exnode:mapping>"                                                                         \
    "<exnode:metadata name=\"exnode_offset\" type=\"integer\">0</exnode:metadata>"             \
    "<exnode:metadata name=\"logical_length\" type=\"integer\">100</exnode:metadata>" meta fn \
    "</exnode:mapping></exnode>"
#define ARG(n, t, v) "<exnode:argument name=\"" n "\" type=\"" t "\">" v "</exnode:argument>"
#define META(n, v) "<exnode:metadata name=\"" n "\" type=\"integer\">" v "</exnode:metadata>"
#define E2E(v) META("e2e_blocksize", v)
#define ALEN(v) META("alloc_length", v)
#define FN(name, args) "<exnode:function name=\"" name "\">" args "</exnode:function>"
#define BS(v) ARG("blocksize", "integer", v)
#define DIG "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
/* lns_checksum with its algorithm, blocksize and digests, then more */
#define CKS(alg, bs, more) \
    FN("lns_checksum", ARG("algorithm", "string", alg) BS(bs) ARG("digests", "string", DIG) more)

static void test_kinds(void)
{
    static const struct {
        const char *xml;
        lors_func_kind kind;
        const char *why; /* a word the refusal's line must hold */
    } c[] = {
        {MAP("", ""), LORS_FUNC_NONE, NULL},
        {MAP(E2E("0"), ""), LORS_FUNC_NONE, NULL},
        {MAP(E2E("4096"), ""), LORS_FUNC_UNKNOWN, "without a function"},
        {MAP("", CKS("sha256", "1048576", "")), LORS_FUNC_CHECKSUM, NULL},
        /* lns_checksum on frames carries an e2e_blocksize for the original tools only */
        {MAP(E2E("65536"), CKS("sha256", "1048576", "")), LORS_FUNC_CHECKSUM, NULL},
        {MAP("", CKS("sha256", "1048576", ARG("salt", "string", "00"))), LORS_FUNC_UNKNOWN,
         "lns_checksum"},
        {MAP("", CKS("rot13", "1048576", "")), LORS_FUNC_UNKNOWN, "rot13"},
        {MAP("", CKS("sha256", "10", "")), LORS_FUNC_UNKNOWN, "blocks"},
        {MAP("", CKS("sha256", "1048576", "<exnode:function name=\"xor_encrypt\"/>")),
         LORS_FUNC_UNKNOWN, "lns_checksum"},
        {MAP("", FN("lns_ec", BS("4096"))), LORS_FUNC_UNKNOWN, "not erasure coded"},
        {MAP(E2E("100"), "<exnode:function name=\"rot13\"/>"), LORS_FUNC_UNKNOWN, "rot13"},
        /* 1.3.1 chains: everything the exNode says must fit the layout */
        {MAP(E2E("100") ALEN("133"), FN("checksum", BS("133"))), LORS_FUNC_LORS131, NULL},
        {MAP(E2E("100") ALEN("134"), FN("checksum", BS("133"))), LORS_FUNC_UNKNOWN,
         "alloc_length"},
        {MAP(E2E("100") ALEN("133"), FN("checksum", BS("132"))), LORS_FUNC_UNKNOWN, "blocksize"},
        {MAP(E2E("100") ALEN("133"),
             FN("checksum", BS("133") ARG("header_length", "integer", "33"))),
         LORS_FUNC_UNKNOWN, "header_length"},
        {MAP(E2E("100") ALEN("133") META("alloc_offset", "5"), FN("checksum", BS("133"))),
         LORS_FUNC_UNKNOWN, "alloc_offset"},
        {MAP(E2E("100") ALEN("100"), FN("xor_encrypt", BS("100"))), LORS_FUNC_UNKNOWN, "KEY"},
        {MAP(E2E("4096") ALEN("106"), FN("zlib_compress", BS("106"))), LORS_FUNC_UNKNOWN,
         "e2e_blocksize"},
        {MAP(E2E("100") ALEN("104"), FN("des_encrypt", BS("104") ARG("KEY", "string", "abcdefg"))),
         LORS_FUNC_UNKNOWN, "DES"},
        {MAP(E2E("100") ALEN("128"),
             FN("aes_encrypt", BS("128") ARG("KEY", "string", "00112233445566778899aabbccddeeff"))),
         LORS_FUNC_UNKNOWN, "AES"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char why[256] = "";
        lors_func_kind k = kind_of(c[i].xml, why, sizeof why);
        CU_ASSERT_EQUAL(k, c[i].kind);
        if (c[i].why)
            CU_ASSERT_PTR_NOT_NULL(strstr(why, c[i].why));
        if (k != c[i].kind || (c[i].why && !strstr(why, c[i].why)))
            fprintf(stderr, "case %zu: kind %d, why \"%s\"\n", i, k, why);
    }
}

/* Nine nested functions: more than any chain the original could write. */
static void test_too_deep(void)
{
    char fx[4096] = "", xml[8192];
    size_t n = 0;
    for (int i = 0; i < 9; i++)
        n += (size_t)snprintf(fx + n, sizeof fx - n, "<exnode:function name=\"xor_encrypt\">"
                              ARG("blocksize", "integer", "100") ARG("KEY", "string", "k"));
    for (int i = 0; i < 9; i++)
        n += (size_t)snprintf(fx + n, sizeof fx - n, "</exnode:function>");
    snprintf(xml, sizeof xml, MAP(E2E("100"), "%s"), fx);
    char why[256] = "";
    CU_ASSERT_EQUAL(kind_of(xml, why, sizeof why), LORS_FUNC_UNKNOWN);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "nested"));
}

/* The public face: lors_func_info names the chain in the order applied. */
static void test_info(void)
{
    unsigned char *plain = plain_bytes();
    made_t m = make("checksum,xor_encrypt", plain, 1, -1, -1);
    xnd_t *x = parse(m.xml);
    lors_func_info_t fi;
    CU_ASSERT_EQUAL(lors_func_info(x, 0, &fi), LORS_OK);
    CU_ASSERT_EQUAL(fi.kind, LORS_FUNC_LORS131);
    CU_ASSERT_STRING_EQUAL(fi.name, "checksum,xor_encrypt");
    CU_ASSERT_EQUAL(lors_func_info(x, 1, &fi), LORS_E_INVAL);
    xnd_free(x);
    free(m.xml);
    free(m.stored);
    free(plain);
}

static const lns_test_case tests[] = {
    {"MD5 and the 64-bit original's MD5", test_md5},
    {"1.3.1 chains: every run of blocks decodes", test_decode_chains},
    {"1.3.1 chains: damage caught", test_decode_damage},
    {"kinds read and refused", test_kinds},
    {"more than 8 nested functions", test_too_deep},
    {"lors_func_info", test_info},
};

LNS_TEST_MAIN("mapping functions", tests)
