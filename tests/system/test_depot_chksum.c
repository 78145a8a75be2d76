/* test_depot_chksum.c -- ACCRE 1.4's checksummed requests on a real ibp_depot.
 *
 * The request lines are those ACCRE's client formats (src/ibp/op_cmd.c): ALLOCATE_CHKSUM
 * "1 29 <type> <blocksize> RID rel type dur size T" (a disk-checksummed allocation),
 * WRITE_CHKSUM "1 27 <type> <bs> key tk off len T", STORE_CHKSUM "1 28 <type> <bs> key tk len
 * T" and LOAD_CHKSUM "1 24 <type> <bs> key tk off len T" (network checksums: after every
 * <bs> bytes of data, and after the last partial block, the block's digest in lower-case
 * hex), GET_CHKSUM "1 31 key tk info_only T" and VALIDATE_CHKSUM "1 32 key tk correct T".
 * Types as ACCRE's toolbox numbers them: 1 SHA256, 2 SHA512, 3 SHA1, 4 MD5.
 *
 * And the point of disk checksums: a byte flipped in the file of a checksummed allocation
 * makes the depot refuse the blocks it spoils (-63, ACCRE's IBP_E_CHKSUM), while a flip in
 * an unchecksummed allocation goes unnoticed.  Not at once: a block the depot wrote or
 * checked less than --chksum-cache seconds ago (1 here) is read without hashing it (the
 * failpoint log counts each block hashed for a read: "cks.verify"); the flip is caught after
 * the window and after a restart. */
#include <CUnit/CUnit.h>
#include <fcntl.h>
#include <signal.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lns_test.h"
#include "test_depot.h"

static test_depot_t D;

typedef raw_caps_t caps_t;

#define WINDOW_S 1

static int suite_init(void)
{
    /* Every failpoint the depot reaches, one name a line (no point is armed). */
    setenv("LNS_FAILPOINTS_LOG", lns_test_path("points.log"), 1);
    return td_start(&D, "--chksum-cache 1");
}

/* How many blocks the depot has hashed to check a read, so far. */
static int verified(void)
{
    FILE *f = fopen(lns_test_path("points.log"), "r");
    char line[64];
    int n = 0;
    while (f && fgets(line, sizeof line, f))
        n += strcmp(line, "cks.verify\n") == 0;
    if (f)
        fclose(f);
    return n;
}

static int suite_clean(void)
{
    lns_test_server_stop(&D.srv);
    return 0;
}

/* ALLOCATE_CHKSUM as ACCRE's allocate_command formats it (cs < 0: a plain ALLOCATE). */
static int allocate(int fd, int cs, long bs, long size, caps_t *c)
{
    char reply[4096];
    int rc = cs < 0 ? raw_reqf(fd, reply, sizeof reply, "1 1 0 1 1 3600 %ld 30\n", size)
                    : raw_reqf(fd, reply, sizeof reply, "1 29 %d %ld 0 1 1 3600 %ld 30\n", cs, bs,
                               size);
    if (rc != 1)
        return rc;
    return raw_caps(reply, c) == 0 ? 1 : -1000;
}

/* ALLOCATE_CHKSUM on a connection of its own: the code. */
static int allocate_alone(int cs, long bs, long size)
{
    caps_t c;
    int fd = td_conn(&D);
    int rc = allocate(fd, cs, bs, size, &c);
    close(fd);
    return rc;
}

/* What GET_CHKSUM's info form answers: "1 <type> <size> <bs> <nblocks> <nbytes>". */
typedef struct cks_info {
    int type, size;
    long bs, nblocks, nbytes;
} cks_info_t;

/* GET_CHKSUM info of c into *in: 1 when all five came, else the code (or -1000). */
static int cks_info(int fd, const caps_t *c, cks_info_t *in)
{
    char reply[256];
    *in = (cks_info_t){0};
    int rc = raw_reqf(fd, reply, sizeof reply, "1 31 %s %s 1 30\n", c->key[2], c->tk[2]);
    if (rc != 1)
        return rc;
    return sscanf(reply, "1 %d %d %ld %ld %ld", &in->type, &in->size, &in->bs, &in->nblocks,
                  &in->nbytes) == 5 ? 1 : -1000;
}

static const EVP_MD *md_of(int cs)
{
    switch (cs) {
    case 1: return EVP_sha256();
    case 2: return EVP_sha512();
    case 3: return EVP_sha1();
    default: return EVP_md5();
    }
}

static void hex_digest(int cs, const void *p, size_t n, char *out)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(p, n, md, &len, md_of(cs), NULL);
    for (unsigned i = 0; i < len; i++)
        sprintf(out + 2 * i, "%02x", md[i]);
}

/* The bytes as ACCRE's network stream carries them: each bs block followed by its hex
 * digest.  Returns the length written to out. */
static size_t stream_of(int cs, long bs, const char *data, size_t n, char *out, int spoil)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i += (size_t)bs) {
        size_t k = n - i < (size_t)bs ? n - i : (size_t)bs;
        memcpy(out + o, data + i, k);
        hex_digest(cs, data + i, k, out + o + k);
        if (spoil)
            out[o + k] = out[o + k] == '0' ? '1' : '0';
        o += k + strlen(out + o + k);
    }
    return o;
}

static void pattern(char *buf, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)('a' + (i * 7 + seed) % 26);
}

/* WRITE (off >= 0) or STORE (off < 0), plain (cs 0) or network-checksummed. */
static int put(int fd, const caps_t *c, int cs, long bs, long off, const char *data, size_t n,
               int spoil)
{
    char reply[256], want[64];
    static char wire[1 << 20];
    size_t wn = n;
    int rc;
    if (cs == 0)
        rc = off < 0 ? raw_reqf(fd, reply, sizeof reply, "1 2 %s %s %zu 30\n", c->key[1], c->tk[1], n)
                     : raw_reqf(fd, reply, sizeof reply, "1 13 %s %s %ld %zu 30\n", c->key[1],
                                c->tk[1], off, n);
    else
        rc = off < 0 ? raw_reqf(fd, reply, sizeof reply, "1 28 %d %ld %s %s %zu 30\n", cs, bs,
                                c->key[1], c->tk[1], n)
                     : raw_reqf(fd, reply, sizeof reply, "1 27 %d %ld %s %s %ld %zu 30\n", cs, bs,
                                c->key[1], c->tk[1], off, n);
    if (rc != 1)
        return rc;
    if (cs == 0)
        memcpy(wire, data, n);
    else
        wn = stream_of(cs, bs, data, n, wire, spoil);
    if (raw_send(fd, wire, wn) < 0 || raw_readline(fd, reply, sizeof reply) < 0)
        return -1000;
    snprintf(want, sizeof want, "1 %zu", n);
    return strcmp(reply, want) == 0 ? 1 : raw_code(reply);
}

/* LOAD n bytes at off into buf: plain (cs 0), or LOAD_CHKSUM whose stream's digests are
 * checked here (-2000 on a wrong one). */
static int get(int fd, const caps_t *c, int cs, long bs, long off, size_t n, char *buf)
{
    char reply[256], hex[2 * EVP_MAX_MD_SIZE + 1], want[2 * EVP_MAX_MD_SIZE + 1];
    int rc = cs == 0 ? raw_reqf(fd, reply, sizeof reply, "1 8 %s %s %ld %zu 30\n", c->key[0],
                                c->tk[0], off, n)
                     : raw_reqf(fd, reply, sizeof reply, "1 24 %d %ld %s %s %ld %zu 30\n", cs, bs,
                                c->key[0], c->tk[0], off, n);
    if (rc != 1)
        return rc;
    CU_ASSERT_EQUAL(atol(reply + 2), (long)n);
    if (cs == 0)
        return raw_read(fd, buf, n) < 0 ? -1000 : 1;
    for (size_t i = 0; i < n; i += (size_t)bs) {
        size_t k = n - i < (size_t)bs ? n - i : (size_t)bs;
        hex_digest(cs, "", 0, want); /* its length */
        size_t hl = strlen(want);
        if (raw_read(fd, buf + i, k) < 0 || raw_read(fd, hex, hl) < 0)
            return -1000;
        hex[hl] = 0;
        hex_digest(cs, buf + i, k, want);
        if (strcmp(hex, want) != 0)
            return -2000;
    }
    return 1;
}

static uint64_t id_of(const caps_t *c)
{
    char hex[17] = {0};
    const char *k = strchr(c->key[0], '#');
    if (k)
        memcpy(hex, k + 1, 16);
    return strtoull(hex, NULL, 16);
}

/* Flip one byte of an allocation's own file (allocations over 64 KiB have one). */
static int flip(const caps_t *c, long off)
{
    char path[PATH_MAX + 64];
    uint64_t id = id_of(c);
    unsigned char b;
    snprintf(path, sizeof path, "%s/res0/data/%02x/%016llx", D.dir, (unsigned)(id >> 56),
             (unsigned long long)id);
    int fd = open(path, O_RDWR);
    if (fd < 0)
        return -1;
    int rc = pread(fd, &b, 1, off) == 1 ? 0 : -1;
    b ^= 0x20;
    if (rc == 0 && pwrite(fd, &b, 1, off) != 1)
        rc = -1;
    close(fd);
    return rc;
}

static void test_allocate_refusals(void)
{
    caps_t c;
    cks_info_t in;
    CU_ASSERT_EQUAL(allocate_alone(9, 65536, 1000), -64);
    CU_ASSERT_EQUAL(allocate_alone(4, 0, 1000), -65);
    int fd = td_conn(&D);
    CU_ASSERT_EQUAL(allocate(fd, 0, 0, 1000, &c), 1); /* CHKSUM_NONE: a plain allocation */
    CU_ASSERT_EQUAL(cks_info(fd, &c, &in), -63);
    close(fd);
}

/* ibp_test's sequence with -network_chksum MD5 and -disk_chksum: write in pieces (partial
 * blocks, a block boundary inside a write), append, read back in both forms. */
static void test_write_load_roundtrip(void)
{
    static char data[300000], back[300000];
    caps_t c;
    int fd = td_conn(&D);
    pattern(data, sizeof data, 3);
    for (int cs = 1; cs <= 4; cs++) {
        CU_ASSERT_EQUAL_FATAL(allocate(fd, cs, 4096, sizeof data, &c), 1);
        CU_ASSERT_EQUAL(put(fd, &c, cs, 1024, -1, data, 5000, 0), 1);           /* STORE_CHKSUM */
        CU_ASSERT_EQUAL(put(fd, &c, 0, 0, 5000, data + 5000, 100, 0), 1);       /* plain WRITE */
        CU_ASSERT_EQUAL(put(fd, &c, cs, 512, 5100, data + 5100, 200000, 0), 1); /* WRITE_CHKSUM */
        CU_ASSERT_EQUAL(put(fd, &c, 0, 0, -1, data + 205100, 94900, 0), 1);     /* plain STORE */
        CU_ASSERT_EQUAL(put(fd, &c, cs, 4096, 4000, data + 4000, 300, 0), 1);   /* overwrite */
        memset(back, 0, sizeof back);
        CU_ASSERT_EQUAL(get(fd, &c, 0, 0, 0, sizeof data, back), 1);
        CU_ASSERT(memcmp(back, data, sizeof data) == 0);
        memset(back, 0, sizeof back);
        CU_ASSERT_EQUAL(get(fd, &c, cs, 1000, 3, 123457, back), 1);
        CU_ASSERT(memcmp(back, data + 3, 123457) == 0);
        char reply[256];
        cks_info_t in;
        CU_ASSERT_EQUAL(cks_info(fd, &c, &in), 1);
        CU_ASSERT_EQUAL(in.type, cs);
        CU_ASSERT_EQUAL(in.bs, 4096);
        CU_ASSERT_EQUAL(in.nblocks, (300000 + 4095) / 4096);
        CU_ASSERT_EQUAL(in.nbytes, in.nblocks * in.size);
        /* with the digests: block 0's is the digest of data[0..4096) */
        CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 31 %s %s 0 30\n", c.key[2],
                                 c.tk[2]), 1);
        static unsigned char all[80 * 64];
        CU_ASSERT_EQUAL_FATAL(raw_read(fd, all, (size_t)in.nbytes), 0);
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int ml = 0;
        EVP_Digest(data, 4096, md, &ml, md_of(cs), NULL);
        CU_ASSERT_EQUAL(ml, (unsigned)in.size);
        CU_ASSERT(memcmp(all, md, ml) == 0);
        CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 32 %s %s 0 30\n", c.key[2],
                                 c.tk[2]), 1);
        CU_ASSERT_STRING_EQUAL(reply, "1 0");
    }
    close(fd);
}

/* ACCRE's VEC_WRITE_CHKSUM "1 34 <type> <bs> key tk n off1 len1 ... T" and VEC_READ_CHKSUM
 * "1 36 <type> <bs> key tk n off1 len1 ... T" (src/ibp/op_cmd.c): one digest stream over the
 * ranges' bytes one after the other (a block may span two ranges), its last partial block's
 * digest at the end.  And SEND_CHKSUM "1 25 <type> <bs> key tk target off len T dT dcT". */
static void test_vector_and_send(void)
{
    static char data[200000], back[200000], wire[220000];
    caps_t c, t;
    char reply[256];
    int fd = td_conn(&D);
    pattern(data, sizeof data, 17);
    CU_ASSERT_EQUAL_FATAL(allocate(fd, 4, 4096, sizeof data, &c), 1);
    CU_ASSERT_EQUAL(put(fd, &c, 0, 0, -1, data, sizeof data, 0), 1);
    /* new bytes for [1000, 3500) and [10000, 15000): 7500 bytes, blocks of 1024 */
    static char nw[7500];
    pattern(nw, sizeof nw, 23);
    memcpy(data + 1000, nw, 2500);
    memcpy(data + 10000, nw + 2500, 5000);
    size_t wn = stream_of(4, 1024, nw, sizeof nw, wire, 0);
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 34 4 1024 %s %s 2 1000 2500 10000 5000 30\n",
                             c.key[1], c.tk[1]), 1);
    CU_ASSERT_EQUAL(raw_send(fd, wire, wn), 0);
    CU_ASSERT_EQUAL(raw_readline(fd, reply, sizeof reply) > 0, 1);
    CU_ASSERT_STRING_EQUAL(reply, "1 7500");
    CU_ASSERT_EQUAL(get(fd, &c, 0, 0, 0, sizeof data, back), 1);
    CU_ASSERT(memcmp(back, data, sizeof data) == 0);
    /* the write's own pending range was not taken for a crash's (nor cleared before its
     * second range's digests were done) */
    static char log[65536];
    lns_test_slurp(D.log, log, sizeof log);
    CU_ASSERT_PTR_NULL(strstr(log, "were being written"));
    /* a wrong digest: -63, the connection answered after all the bytes */
    wn = stream_of(4, 1024, nw, sizeof nw, wire, 1);
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 34 4 1024 %s %s 2 1000 2500 10000 5000 30\n",
                             c.key[1], c.tk[1]), 1);
    CU_ASSERT_EQUAL(raw_send(fd, wire, wn), 0);
    CU_ASSERT_EQUAL(raw_readline(fd, reply, sizeof reply) > 0, 1);
    CU_ASSERT_EQUAL(raw_code(reply), -63);
    close(fd);
    /* VEC_READ_CHKSUM of [5, 2005) and [150000, 151500), blocks of 700 */
    fd = td_conn(&D);
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 36 4 700 %s %s 2 5 2000 150000 1500 30\n",
                             c.key[0], c.tk[0]), 1);
    CU_ASSERT_STRING_EQUAL(reply, "1 3500");
    memcpy(back, data + 5, 2000);
    memcpy(back + 2000, data + 150000, 1500);
    size_t want = stream_of(4, 700, back, 3500, wire, 0);
    static char got[8000];
    CU_ASSERT_EQUAL_FATAL(raw_read(fd, got, want), 0);
    CU_ASSERT(memcmp(got, wire, want) == 0);
    /* SEND_CHKSUM to another allocation of the same depot: its bytes arrive as they are */
    CU_ASSERT_EQUAL_FATAL(allocate(fd, -1, 0, sizeof data, &t), 1);
    char target[1024];
    snprintf(target, sizeof target, "ibp://127.0.0.1:%d/%s/%s/WRITE", D.port, t.key[1], t.tk[1]);
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 25 4 1024 %s %s %s 1000 50000 30 30 30\n",
                             c.key[0], c.tk[0], target), 1);
    CU_ASSERT_STRING_EQUAL(reply, "1 50000");
    CU_ASSERT_EQUAL(get(fd, &t, 0, 0, 0, 50000, back), 1);
    CU_ASSERT(memcmp(back, data + 1000, 50000) == 0);
    close(fd);
}

/* SPLIT_ALLOCATE_CHKSUM "1 30 <type> <bs> mkey mtk rel type dur size T" (ACCRE's
 * split_allocate_command, src/ibp/op_cmd.c): the new allocation has disk checksums of that type
 * and block size (NONE 0: none); PUSH_CHKSUM / PULL_CHKSUM "1 22|23 <type> <bs> 1  key cap
 * tk off remote_off len T dT dcT" (pushpull_command: the empty Phoebus path is two spaces):
 * the copy as PUSH/PULL's, answered "1 <len> ". */
static void test_split_push_pull(void)
{
    static char data[100000], back[100000];
    caps_t m, s, n;
    char reply[4096];
    cks_info_t in;
    int fd = td_conn(&D);
    pattern(data, sizeof data, 29);
    CU_ASSERT_EQUAL_FATAL(allocate(fd, 4, 64, 400000, &m), 1);
    CU_ASSERT_EQUAL(put(fd, &m, 4, 64, -1, data, sizeof data, 0), 1);
    /* a checksummed child: MD5, blocks of 1024 */
    CU_ASSERT_EQUAL_FATAL(raw_reqf(fd, reply, sizeof reply, "1 30 4 1024 %s %s 1 1 3600 %zu 30\n",
                                   m.key[2], m.tk[2], sizeof data), 1);
    CU_ASSERT_EQUAL_FATAL(raw_caps(reply, &s), 0);
    CU_ASSERT_EQUAL(cks_info(fd, &s, &in), 1);
    CU_ASSERT_EQUAL(in.type, 4);
    CU_ASSERT_EQUAL(in.bs, 1024);
    /* CHKSUM_NONE: a plain child, whose GET_CHKSUM finds no checksums */
    CU_ASSERT_EQUAL_FATAL(raw_reqf(fd, reply, sizeof reply, "1 30 0 0 %s %s 1 1 3600 %zu 30\n",
                                   m.key[2], m.tk[2], sizeof data), 1);
    CU_ASSERT_EQUAL_FATAL(raw_caps(reply, &n), 0);
    CU_ASSERT_EQUAL(cks_info(fd, &n, &in), -63);
    /* refusals as ALLOCATE_CHKSUM's; the master keeps what is left */
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 30 9 1024 %s %s 1 1 3600 10 30\n", m.key[2], m.tk[2]),
                    -64);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 30 4 0 %s %s 1 1 3600 10 30\n", m.key[2], m.tk[2]),
                    -65);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 30 4 64 %s %s 1 1 3600 10 30\n", m.key[0], m.tk[0]),
                    -7);
    /* PUSH_CHKSUM of the master's [1000, 61000) to the checksummed child (append) */
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 22 4 64 1  %s %s %s 1000 -1 60000 30 30 30\n",
                             m.key[0], s.cap[1], m.tk[0]), 1);
    CU_ASSERT_STRING_EQUAL(reply, "1 60000 ");
    memset(back, 0, sizeof back);
    CU_ASSERT_EQUAL(get(fd, &s, 4, 1024, 0, 60000, back), 1);
    CU_ASSERT(memcmp(back, data + 1000, 60000) == 0);
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 32 %s %s 0 30\n", s.key[2], s.tk[2]), 1);
    CU_ASSERT_STRING_EQUAL(reply, "1 0");
    /* PULL_CHKSUM into the plain child of the master's [50000, 80000) (append) */
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 23 3 4096 1  %s %s %s -1 50000 30000 30 30 30\n",
                             n.key[1], m.cap[0], n.tk[1]), 1);
    CU_ASSERT_STRING_EQUAL(reply, "1 30000 ");
    memset(back, 0, sizeof back);
    CU_ASSERT_EQUAL(get(fd, &n, 0, 0, 0, 30000, back), 1);
    CU_ASSERT(memcmp(back, data + 50000, 30000) == 0);
    /* a bad type or block size: -64, -65, nothing copied; Phoebus: -22 */
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 22 9 64 1  %s %s %s 0 -1 10 30 30 30\n", m.key[0],
                             n.cap[1], m.tk[0]), -64);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 23 4 0 1  %s %s %s -1 0 10 30 30 30\n", n.key[1],
                             m.cap[0], n.tk[1]), -65);
    CU_ASSERT_EQUAL(raw_reqf(fd, NULL, 0, "1 22 4 64 2 auto %s %s %s 0 -1 10 30 30 30\n",
                             m.key[0], n.cap[1], m.tk[0]), -22);
    CU_ASSERT_EQUAL(cks_info(fd, &n, &in), -63);
    close(fd);
}

/* A digest that does not match the bytes sent: -63 after the data, nothing appended. */
static void test_network_mismatch(void)
{
    static char data[10000], back[10000];
    caps_t c;
    int fd = td_conn(&D);
    pattern(data, sizeof data, 5);
    CU_ASSERT_EQUAL_FATAL(allocate(fd, -1, 0, sizeof data, &c), 1);
    CU_ASSERT_EQUAL(put(fd, &c, 4, 1024, -1, data, 3000, 1), -63);
    close(fd);
    fd = td_conn(&D);
    CU_ASSERT_EQUAL(get(fd, &c, 0, 0, 0, 1, back), -30); /* nothing stored */
    CU_ASSERT_EQUAL(put(fd, &c, 4, 1024, -1, data, 3000, 0), 1);
    CU_ASSERT_EQUAL(get(fd, &c, 3, 700, 0, 3000, back), 1); /* unchecksummed on disk, SHA1 on the wire */
    CU_ASSERT(memcmp(back, data, 3000) == 0);
    close(fd);
}

static void test_bit_rot(void)
{
    static char data[200000], back[200000];
    caps_t cks, plain;
    char reply[256];
    int fd = td_conn(&D);
    pattern(data, sizeof data, 9);
    CU_ASSERT_EQUAL_FATAL(allocate(fd, 4, 65536, sizeof data, &cks), 1);
    CU_ASSERT_EQUAL_FATAL(allocate(fd, -1, 0, sizeof data, &plain), 1);
    CU_ASSERT_EQUAL(put(fd, &cks, 0, 0, -1, data, sizeof data, 0), 1);
    CU_ASSERT_EQUAL(put(fd, &plain, 0, 0, -1, data, sizeof data, 0), 1);
    CU_ASSERT_EQUAL_FATAL(flip(&cks, 70000), 0);
    CU_ASSERT_EQUAL_FATAL(flip(&plain, 70000), 0);
    /* Inside the window the depot trusts the digests it has just computed from what it
     * wrote: the flip is served (docs/depot.md, "Disk checksums"). */
    CU_ASSERT_EQUAL(get(fd, &cks, 0, 0, 69000, 10, back), 1);
    usleep(WINDOW_S * 1000000 + 200000);
    /* the spoiled block (65536..131072) is refused, in every form; the others still read */
    CU_ASSERT_EQUAL(get(fd, &cks, 0, 0, 0, sizeof data, back), -63);
    close(fd);
    fd = td_conn(&D);
    CU_ASSERT_EQUAL(get(fd, &cks, 0, 0, 69000, 10, back), -63);
    close(fd);
    fd = td_conn(&D);
    CU_ASSERT_EQUAL(get(fd, &cks, 4, 8192, 0, 100000, back), -63);
    close(fd);
    fd = td_conn(&D);
    CU_ASSERT_EQUAL(get(fd, &cks, 0, 0, 0, 65536, back), 1);
    CU_ASSERT(memcmp(back, data, 65536) == 0);
    CU_ASSERT_EQUAL(get(fd, &cks, 0, 0, 131072, 1000, back), 1);
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 32 %s %s 0 30\n", cks.key[2],
                             cks.tk[2]), 1);
    CU_ASSERT_STRING_EQUAL(reply, "1 1");
    /* the unchecksummed allocation serves the flipped byte */
    CU_ASSERT_EQUAL(get(fd, &plain, 0, 0, 0, sizeof data, back), 1);
    CU_ASSERT(back[70000] != data[70000]);
    CU_ASSERT(memcmp(back, data, 70000) == 0);
    close(fd);
    /* still refused after a restart; and rewriting the block heals it */
    lns_test_server_kill(&D.srv, SIGKILL);
    CU_ASSERT_EQUAL_FATAL(td_restart(&D), 0);
    fd = td_conn(&D);
    CU_ASSERT_EQUAL(get(fd, &cks, 0, 0, 69000, 10, back), -63);
    close(fd);
    fd = td_conn(&D);
    CU_ASSERT_EQUAL(put(fd, &cks, 0, 0, 65536, data + 65536, 65536, 0), 1);
    CU_ASSERT_EQUAL(get(fd, &cks, 0, 0, 0, sizeof data, back), 1);
    CU_ASSERT(memcmp(back, data, sizeof data) == 0);
    close(fd);
}

/* A flip right after a restart, inside what would have been the window: the restarted depot
 * knows no block good, so its first read hashes and refuses. */
static void test_bit_rot_restart(void)
{
    static char data[100000], back[100000];
    caps_t c;
    int fd = td_conn(&D);
    pattern(data, sizeof data, 11);
    CU_ASSERT_EQUAL_FATAL(allocate(fd, 4, 65536, sizeof data, &c), 1);
    CU_ASSERT_EQUAL(put(fd, &c, 0, 0, -1, data, sizeof data, 0), 1);
    close(fd);
    lns_test_server_kill(&D.srv, SIGKILL);
    CU_ASSERT_EQUAL_FATAL(flip(&c, 100), 0);
    CU_ASSERT_EQUAL_FATAL(td_restart(&D), 0);
    fd = td_conn(&D);
    CU_ASSERT_EQUAL(get(fd, &c, 0, 0, 0, sizeof data, back), -63);
    close(fd);
}

/* The cache: what the depot wrote, or checked, is not hashed again inside the window, is
 * after it; a write forgets the blocks it touches; VALIDATE_CHKSUM always hashes. */
static void test_verified_cache(void)
{
    static char data[4 * 65536], back[4 * 65536];
    caps_t c;
    char reply[64];
    int fd = td_conn(&D);
    pattern(data, sizeof data, 13);
    CU_ASSERT_EQUAL_FATAL(allocate(fd, 4, 65536, sizeof data, &c), 1);
    CU_ASSERT_EQUAL(put(fd, &c, 0, 0, -1, data, sizeof data, 0), 1);
    int n0 = verified();
    CU_ASSERT_EQUAL(get(fd, &c, 0, 0, 0, sizeof data, back), 1); /* written: known good */
    CU_ASSERT_EQUAL(get(fd, &c, 4, 8192, 1000, 200000, back), 1);
    CU_ASSERT_EQUAL(verified(), n0);
    usleep(WINDOW_S * 1000000 + 200000);
    CU_ASSERT_EQUAL(get(fd, &c, 0, 0, 0, sizeof data, back), 1); /* the window passed */
    CU_ASSERT_EQUAL(verified(), n0 + 4);
    CU_ASSERT_EQUAL(get(fd, &c, 0, 0, 0, sizeof data, back), 1); /* checked: known good */
    CU_ASSERT_EQUAL(verified(), n0 + 4);
    usleep(WINDOW_S * 1000000 + 200000);
    CU_ASSERT_EQUAL(put(fd, &c, 0, 0, 70000, data + 70000, 10, 0), 1); /* block 1 rewritten */
    CU_ASSERT_EQUAL(get(fd, &c, 0, 0, 65536, 65536, back), 1);          /* by the depot */
    CU_ASSERT_EQUAL(verified(), n0 + 4);
    CU_ASSERT_EQUAL(get(fd, &c, 0, 0, 0, 65536, back), 1); /* block 0: the window passed */
    CU_ASSERT_EQUAL(verified(), n0 + 5);
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 32 %s %s 0 30\n", c.key[2], c.tk[2]), 1);
    CU_ASSERT_STRING_EQUAL(reply, "1 0");
    CU_ASSERT_EQUAL(verified(), n0 + 9);
    close(fd);
}

/* A write whose digests cannot be written (failpoint cks.write, the 5th hit: the entry of
 * the WRITE's block) is refused; its bytes may be in the data, so the block must stay
 * marked pending, never be refused with -63 afterwards. */
static void test_failed_digest_write(void)
{
    static char data[65536], back[65536];
    test_depot_t f;
    caps_t c;
    char reply[64];
    setenv("LNS_FAILPOINTS", "cks.write=eio@5", 1);
    int started = td_start(&f, "--chksum-cache 0");
    unsetenv("LNS_FAILPOINTS");
    CU_ASSERT_EQUAL_FATAL(started, 0);
    int fd = td_connect(&f);
    CU_ASSERT_FATAL(fd >= 0);
    pattern(data, sizeof data, 29);
    CU_ASSERT_EQUAL_FATAL(allocate(fd, 4, 65536, sizeof data, &c), 1);
    CU_ASSERT_EQUAL(put(fd, &c, 0, 0, -1, data, sizeof data, 0), 1); /* hits 1-3 */
    CU_ASSERT_NOT_EQUAL(put(fd, &c, 0, 0, 10, "0123456789", 10, 0), 1); /* 4 begin, 5 entry */
    close(fd);
    fd = td_connect(&f);
    CU_ASSERT_EQUAL(get(fd, &c, 0, 0, 0, sizeof data, back), 1);
    CU_ASSERT(memcmp(back, data, 10) == 0);
    CU_ASSERT(memcmp(back + 10, data + 10, 10) == 0 || memcmp(back + 10, "0123456789", 10) == 0);
    CU_ASSERT(memcmp(back + 20, data + 20, sizeof data - 20) == 0);
    CU_ASSERT_EQUAL(raw_reqf(fd, reply, sizeof reply, "1 32 %s %s 0 30\n", c.key[2], c.tk[2]), 1);
    CU_ASSERT_STRING_EQUAL(reply, "1 0");
    close(fd);
    lns_test_server_stop(&f.srv);
}

/* A write whose "go ahead" never reaches the client, after a crash left blocks pending: the
 * pending blocks are healed, not forgotten (their stale digests would then answer -63). */
static void test_pending_then_failed_ack(void)
{
    static char data[4096], back[4096];
    test_depot_t f;
    caps_t c;
    /* hits of cks.write: 1-3 for the STORE, 4 the WRITE's mark, 5 its digest: fails */
    setenv("LNS_FAILPOINTS", "cks.write=eio@5,store.ack=error@3", 1);
    int started = td_start(&f, "--chksum-cache 0");
    unsetenv("LNS_FAILPOINTS");
    CU_ASSERT_EQUAL_FATAL(started, 0);
    int fd = td_connect(&f);
    CU_ASSERT_FATAL(fd >= 0);
    pattern(data, sizeof data, 31);
    CU_ASSERT_EQUAL_FATAL(allocate(fd, 4, 4096, 8192, &c), 1);
    CU_ASSERT_EQUAL(put(fd, &c, 0, 0, -1, data, sizeof data, 0), 1); /* one block */
    /* bytes 0..39 written, their digest not: block 0 stays pending */
    CU_ASSERT_NOT_EQUAL(put(fd, &c, 0, 0, 0, "XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX", 40, 0), 1);
    close(fd);
    /* the third write's "1 " is never sent: the depot drops the connection */
    fd = td_connect(&f);
    CU_ASSERT_NOT_EQUAL(put(fd, &c, 0, 0, 2000, "0123456789", 10, 0), 1);
    close(fd);
    fd = td_connect(&f);
    CU_ASSERT_EQUAL(get(fd, &c, 0, 0, 0, sizeof data, back), 1);
    CU_ASSERT(memcmp(back, "XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX", 40) == 0 ||
              memcmp(back, data, 40) == 0);
    CU_ASSERT(memcmp(back + 40, data + 40, sizeof data - 40) == 0);
    close(fd);
    lns_test_server_stop(&f.srv);
}

/* A pending block whose digest cannot be recomputed when it is read (the digest write fails
 * again) is an I/O error for that read, never -63; once the digest can be written, the read
 * heals it. */
static void test_pending_heal_fails(void)
{
    static char data[65536], back[65536];
    test_depot_t f;
    caps_t c;
    setenv("LNS_FAILPOINTS", "cks.write=eio@5+", 1); /* 1-3 the STORE, 4 the WRITE's mark */
    int started = td_start(&f, "--chksum-cache 0");
    unsetenv("LNS_FAILPOINTS");
    CU_ASSERT_EQUAL_FATAL(started, 0);
    int fd = td_connect(&f);
    CU_ASSERT_FATAL(fd >= 0);
    pattern(data, sizeof data, 37);
    CU_ASSERT_EQUAL_FATAL(allocate(fd, 4, 65536, sizeof data, &c), 1);
    CU_ASSERT_EQUAL(put(fd, &c, 0, 0, -1, data, sizeof data, 0), 1);
    CU_ASSERT_NOT_EQUAL(put(fd, &c, 0, 0, 10, "0123456789", 10, 0), 1);
    close(fd);
    fd = td_connect(&f);
    int rc = get(fd, &c, 0, 0, 0, sizeof data, back);
    CU_ASSERT_NOT_EQUAL(rc, 1);
    CU_ASSERT_NOT_EQUAL(rc, -63);
    close(fd);
    lns_test_server_kill(&f.srv, SIGKILL);
    CU_ASSERT_EQUAL_FATAL(td_restart(&f), 0); /* no failpoints */
    fd = td_connect(&f);
    CU_ASSERT_EQUAL(get(fd, &c, 0, 0, 0, sizeof data, back), 1);
    CU_ASSERT(memcmp(back + 10, data + 10, 10) == 0 || memcmp(back + 10, "0123456789", 10) == 0);
    CU_ASSERT(memcmp(back + 20, data + 20, sizeof data - 20) == 0);
    close(fd);
    lns_test_server_stop(&f.srv);
}

static const lns_test_case tests[] = {
    {"ALLOCATE_CHKSUM refusals (-64, -65), NONE is plain", test_allocate_refusals},
    {"WRITE/STORE/LOAD_CHKSUM, GET/VALIDATE_CHKSUM, all four types", test_write_load_roundtrip},
    {"a wrong digest on the wire: -63, nothing stored", test_network_mismatch},
    {"VEC_WRITE/VEC_READ_CHKSUM (one stream over the ranges), SEND_CHKSUM", test_vector_and_send},
    {"SPLIT_ALLOCATE_CHKSUM (30), PUSH_CHKSUM (22), PULL_CHKSUM (23)", test_split_push_pull},
    {"a flipped byte on disk: -63 for its block after the window, plain allocation unaffected",
     test_bit_rot},
    {"a flipped byte on disk: -63 at the first read after a restart", test_bit_rot_restart},
    {"blocks written or checked are not hashed again inside the window", test_verified_cache},
    {"a write whose digests fail leaves its block pending, not -63", test_failed_digest_write},
    {"pending blocks survive a write whose go-ahead was never sent", test_pending_then_failed_ack},
    {"a pending block that cannot be healed on a read: an I/O error, not -63",
     test_pending_heal_fails},
};

LNS_TEST_MAIN_WITH("depot_chksum", suite_init, suite_clean, tests)
