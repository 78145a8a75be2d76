/* bench_limit.c -- the calibrator (issue 39): what this machine allows for the paths the
 * benchmarks measure, by minimal programs with none of lns's logic, so that a benchmark can
 * print lns as a fraction of its limit as well as against its peer, measured in the same run.
 *
 *   bench_limit memcpy [SIZE]            memcpy in 1 MiB pieces
 *   bench_limit hash ALG [SIZE]          one thread hashing 1 MiB blocks (blake3, sha256, any
 *                                        OpenSSL digest, crc64), through lors_ck as lns does
 *   bench_limit cipher [SIZE]            one thread sealing 16 KiB records, AES-128-GCM (what
 *                                        the sealed wire's TLS 1.3 does per record)
 *   bench_limit tcp [SIZE] [hash ALG] [sealed]
 *                                        SIZE bytes over one loopback TCP connection: a sender
 *                                        thread write()s 1 MiB buffers, the receiver read()s
 *                                        into a 1 MiB buffer; with "hash ALG" the receiver also
 *                                        hashes what it gets (a verified download's minimum),
 *                                        with "sealed" the sender seals and the receiver opens
 *                                        16 KiB AES-128-GCM records (the sealed wire's minimum)
 *
 * SIZE defaults to 1G (256M for hash and cipher).  Each prints one line of KEY=value words:
 * "what=... bytes=N seconds=S mbps=M" (MB/s, 10^6 bytes), best of three passes.  Two cores
 * run a tcp case: the limit is what both ends cost together, as a loopback download's is.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lors.h"
#include "lors_checksum.h"
#include "usage.h"

#define PIECE ((size_t)1 << 20)
#define RECORD ((size_t)16 << 10)
#define TAG 16

static const char usage_text[] =
    "usage: bench_limit memcpy [SIZE]\n"
    "       bench_limit hash ALG [SIZE]\n"
    "       bench_limit cipher [SIZE]\n"
    "       bench_limit tcp [SIZE] [hash ALG] [sealed]\n";

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void report(const char *what, uint64_t bytes, double secs)
{
    printf("what=%s bytes=%llu seconds=%.4f mbps=%.1f\n", what, (unsigned long long)bytes, secs,
           secs > 0 ? (double)bytes / secs / 1e6 : 0.0);
}

static unsigned char *filled(size_t n)
{
    unsigned char *p = malloc(n);
    if (!p) {
        fprintf(stderr, "bench_limit: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 2654435761u >> 13);
    return p;
}

/* ---- one core --------------------------------------------------------------------------- */

static double pass_memcpy(unsigned char *a, unsigned char *b, uint64_t size)
{
    double t0 = now();
    for (uint64_t done = 0; done < size; done += PIECE)
        memcpy(b + done % (64 * PIECE), a + done % (64 * PIECE), PIECE);
    return now() - t0;
}

/* lors_ck over data, fed 1 MiB at a time in blocks of 1 MiB, as a download checks blocks. */
static int hash_into(lors_ck_t *ck, const unsigned char *p, size_t n)
{
    return lors_ck_update(ck, p, n) == LORS_OK ? 0 : -1;
}

static double pass_hash(const char *alg, const unsigned char *a, uint64_t size)
{
    lors_ck_t ck;
    char *hex = NULL;
    if (lors_ck_init(&ck, alg, (int64_t)PIECE) != LORS_OK) {
        fprintf(stderr, "bench_limit: unknown digest %s\n", alg);
        exit(BENCH_EXIT_USAGE);
    }
    double t0 = now();
    for (uint64_t done = 0; done < size; done += PIECE)
        hash_into(&ck, a + done % (64 * PIECE), PIECE);
    lors_ck_finish(&ck, &hex);
    double t = now() - t0;
    free(hex);
    lors_ck_free(&ck);
    return t;
}

/* AES-128-GCM over records of in[0..n), each with its nonce, into out (n + TAG per record). */
static int seal(EVP_CIPHER_CTX *x, const unsigned char *in, size_t n, unsigned char *out,
                uint64_t seq)
{
    static const unsigned char key[16] = "calibrator key!";
    unsigned char iv[12] = {0};
    int l1 = 0, l2 = 0;
    memcpy(iv + 4, &seq, sizeof seq);
    return EVP_EncryptInit_ex(x, EVP_aes_128_gcm(), NULL, key, iv) == 1 &&
                   EVP_EncryptUpdate(x, out, &l1, in, (int)n) == 1 &&
                   EVP_EncryptFinal_ex(x, out + l1, &l2) == 1 &&
                   EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_GET_TAG, TAG, out + n) == 1
               ? 0
               : -1;
}

static int open_record(EVP_CIPHER_CTX *x, const unsigned char *in, size_t n, unsigned char *out,
                       uint64_t seq)
{
    static const unsigned char key[16] = "calibrator key!";
    unsigned char iv[12] = {0}, tag[TAG];
    int l1 = 0, l2 = 0;
    memcpy(iv + 4, &seq, sizeof seq);
    memcpy(tag, in + n, TAG);
    return EVP_DecryptInit_ex(x, EVP_aes_128_gcm(), NULL, key, iv) == 1 &&
                   EVP_DecryptUpdate(x, out, &l1, in, (int)n) == 1 &&
                   EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_SET_TAG, TAG, tag) == 1 &&
                   EVP_DecryptFinal_ex(x, out + l1, &l2) == 1
               ? 0
               : -1;
}

static double pass_cipher(const unsigned char *a, uint64_t size)
{
    EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
    unsigned char *out = malloc(RECORD + TAG);
    double t0 = now();
    for (uint64_t done = 0, seq = 0; done < size; done += RECORD, seq++)
        seal(x, a + done % (64 * PIECE), RECORD, out, seq);
    double t = now() - t0;
    free(out);
    EVP_CIPHER_CTX_free(x);
    return t;
}

/* ---- loopback TCP ----------------------------------------------------------------------- */

typedef struct {
    int fd;
    uint64_t size;
    int sealed;
    const unsigned char *data;
} sender_t;

static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void *sender_main(void *arg)
{
    sender_t *s = arg;
    EVP_CIPHER_CTX *x = s->sealed ? EVP_CIPHER_CTX_new() : NULL;
    unsigned char *rec = s->sealed ? malloc(PIECE / RECORD * (RECORD + TAG)) : NULL;
    uint64_t seq = 0;
    for (uint64_t done = 0; done < s->size; done += PIECE) {
        const unsigned char *p = s->data + done % (64 * PIECE);
        if (!s->sealed) {
            if (write_all(s->fd, p, PIECE) < 0)
                break;
            continue;
        }
        for (size_t r = 0; r < PIECE / RECORD; r++)
            seal(x, p + r * RECORD, RECORD, rec + r * (RECORD + TAG), seq++);
        if (write_all(s->fd, rec, PIECE / RECORD * (RECORD + TAG)) < 0)
            break;
    }
    shutdown(s->fd, SHUT_WR);
    free(rec);
    EVP_CIPHER_CTX_free(x);
    return NULL;
}

static int tcp_pair(int *a, int *b)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    int l = socket(AF_INET, SOCK_STREAM, 0);
    if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(l, 1) < 0 ||
        getsockname(l, (struct sockaddr *)&sa, &sl) < 0)
        return -1;
    *a = socket(AF_INET, SOCK_STREAM, 0);
    if (*a < 0 || connect(*a, (struct sockaddr *)&sa, sizeof sa) < 0)
        return -1;
    *b = accept(l, NULL, NULL);
    close(l);
    return *b < 0 ? -1 : 0;
}

static double pass_tcp(const unsigned char *data, uint64_t size, const char *alg, int sealed)
{
    int a, b;
    if (tcp_pair(&a, &b) < 0) {
        perror("bench_limit: loopback TCP");
        exit(1);
    }
    sender_t s = {a, size, sealed, data};
    pthread_t th;
    lors_ck_t ck;
    EVP_CIPHER_CTX *x = sealed ? EVP_CIPHER_CTX_new() : NULL;
    size_t unit = sealed ? RECORD + TAG : PIECE, have = 0;
    unsigned char *buf = malloc(PIECE + RECORD + TAG), *plain = malloc(RECORD);
    uint64_t seq = 0, got = 0;
    if (alg && lors_ck_init(&ck, alg, (int64_t)PIECE) != LORS_OK)
        exit(BENCH_EXIT_USAGE);
    double t0 = now();
    pthread_create(&th, NULL, sender_main, &s);
    for (;;) {
        ssize_t r = read(b, buf + have, PIECE - have % PIECE);
        if (r <= 0)
            break;
        have += (size_t)r;
        size_t used = 0;
        while (have - used >= unit || (!sealed && have - used > 0)) {
            size_t n = sealed ? RECORD : have - used;
            const unsigned char *p = buf + used;
            if (sealed) {
                open_record(x, p, RECORD, plain, seq++);
                p = plain;
            }
            if (alg)
                hash_into(&ck, p, n);
            got += n;
            used += sealed ? unit : n;
        }
        memmove(buf, buf + used, have - used);
        have -= used;
    }
    pthread_join(th, NULL);
    double t = now() - t0;
    if (alg) {
        char *hex = NULL;
        lors_ck_finish(&ck, &hex);
        free(hex);
        lors_ck_free(&ck);
    }
    if (got != size)
        fprintf(stderr, "bench_limit: got %llu of %llu bytes\n", (unsigned long long)got,
                (unsigned long long)size);
    close(a);
    close(b);
    free(buf);
    free(plain);
    EVP_CIPHER_CTX_free(x);
    return t;
}

/* ---- main ------------------------------------------------------------------------------- */

static double best(double a, double b) { return a < b ? a : b; }

int main(int argc, char **argv)
{
    bench_usage_init("bench_limit", usage_text);
    if (argc < 2)
        bench_usage_exit(NULL);
    const char *cmd = argv[1], *alg = NULL;
    int sealed = 0, at = 2;
    if (strcmp(cmd, "hash") == 0) {
        if (argc < 3)
            bench_usage_exit("hash needs ALG");
        alg = argv[2];
        at = 3;
    }
    uint64_t size = strcmp(cmd, "tcp") == 0 ? (uint64_t)1 << 30 : (uint64_t)256 << 20;
    if (at < argc && strcmp(argv[at], "hash") != 0 && strcmp(argv[at], "sealed") != 0)
        size = bench_size_arg(argv[at++], "SIZE");
    for (; strcmp(cmd, "tcp") == 0 && at < argc; at++) {
        if (strcmp(argv[at], "hash") == 0 && at + 1 < argc)
            alg = argv[++at];
        else if (strcmp(argv[at], "sealed") == 0)
            sealed = 1;
        else
            bench_usage_exit("tcp takes [SIZE] [hash ALG] [sealed]");
    }
    if (at < argc)
        bench_usage_exit("too many arguments");
    size = (size + PIECE - 1) / PIECE * PIECE;
    unsigned char *a = filled(64 * PIECE), *b = NULL;
    double t = 1e30;
    char what[128];
    for (int pass = 0; pass < 3; pass++) {
        if (strcmp(cmd, "memcpy") == 0) {
            if (!b)
                b = filled(64 * PIECE);
            t = best(t, pass_memcpy(a, b, size));
            snprintf(what, sizeof what, "memcpy");
        } else if (strcmp(cmd, "hash") == 0) {
            t = best(t, pass_hash(alg, a, size));
            snprintf(what, sizeof what, "hash-%s", alg);
        } else if (strcmp(cmd, "cipher") == 0) {
            t = best(t, pass_cipher(a, size));
            snprintf(what, sizeof what, "cipher-aes128gcm");
        } else if (strcmp(cmd, "tcp") == 0) {
            t = best(t, pass_tcp(a, size, alg, sealed));
            snprintf(what, sizeof what, "tcp%s%s%s", sealed ? "-sealed" : "", alg ? "-" : "",
                     alg ? alg : "");
        } else {
            bench_usage_exit("unknown command");
        }
    }
    report(what, size, t);
    free(a);
    free(b);
    return 0;
}
