/* test_lors_reader.c -- the random-access reader (lors_reader.c) on real depots: random reads
 * of replicated, erasure-coded and compressed + encrypted files equal the source's bytes;
 * a sequential stream is read ahead in few fetches; a seek stops read-ahead stuck on a
 * stopped depot; a depot killed during reads costs nothing; concurrent streams stay inside
 * the cache's bound; a range with no live copy fails naming its bytes, and a later read
 * after the depot is back succeeds.  lors_dir, the directory of readers lors_serve and
 * lors_mount show, is checked here too, and lors_dir_stat's scan of plain exNodes against
 * the parse of those it cannot read plainly. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ibp.h"
#include "lns_time.h"
#include "test_tools.h"

#define ND 6

static tt_env_t T;

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void)
{
    return lns_test_rand(&rng);
}

/* n random reads through a reader (one stream each: no read-ahead) equal the source. */
static int random_reads_equal(lors_reader_t *r, const unsigned char *src, size_t size, int n,
                              size_t maxlen)
{
    unsigned char *buf = malloc(maxlen);
    int bad = 0;
    for (int i = 0; i < n && !bad; i++) {
        int64_t off = (int64_t)(next_rand() % (size + 1));
        size_t len = 1 + (size_t)(next_rand() % maxlen);
        int rc;
        char err[512];
        int64_t got = lors_reader_pread(r, buf, len, off, &rc, err, sizeof err);
        int64_t want = (int64_t)size - off < (int64_t)len ? (int64_t)size - off : (int64_t)len;
        if (got != want || memcmp(buf, src + off, (size_t)want) != 0) {
            fprintf(stderr, "read %zu at %lld: got %lld of %lld (%s)\n", len, (long long)off,
                    (long long)got, (long long)want, got < 0 ? err : "bytes differ");
            bad = 1;
        }
    }
    free(buf);
    return !bad;
}

/* Read the whole file through one stream in chunks of chunk bytes; 1 if it equals src. */
static int stream_equal(lors_reader_t *r, const unsigned char *src, size_t size, size_t chunk)
{
    lors_stream_t *s = lors_stream_open(r);
    unsigned char *buf = malloc(chunk);
    int ok = s && buf;
    for (size_t off = 0; ok && off < size; off += chunk) {
        int rc;
        char err[512];
        int64_t got = lors_stream_pread(s, buf, chunk, (int64_t)off, &rc, err, sizeof err);
        size_t want = size - off < chunk ? size - off : chunk;
        if (got != (int64_t)want || memcmp(buf, src + off, want) != 0) {
            fprintf(stderr, "stream at %zu: got %lld of %zu (%s)\n", off, (long long)got, want,
                    got < 0 ? err : "bytes differ");
            ok = 0;
        }
    }
    free(buf);
    lors_stream_close(s);
    return ok;
}

/* A reader with the given read-ahead and depot timeout. */
static lors_reader_t *open_reader_tmo(const xnd_t *x, lors_cache_t *c, int64_t readahead,
                                      int timeout_ms)
{
    lors_reader_opts_t o;
    char err[512];
    lors_reader_opts_init(&o);
    o.readahead = readahead;
    o.dl.timeout_ms = timeout_ms;
    lors_reader_t *r = lors_reader_open(&o, x, c, err, sizeof err);
    if (!r)
        fprintf(stderr, "lors_reader_open: %s\n", err);
    return r;
}

static lors_reader_t *open_reader(const xnd_t *x, lors_cache_t *c, int64_t readahead)
{
    return open_reader_tmo(x, c, readahead, 5000);
}

/* A file of n bytes uploaded (tt_upload: copies x frags over depots, extra flags), its exNode
 * in *x and its bytes returned (*size of them); the depots revived first.  Fatal on failure. */
static unsigned char *uploaded(size_t n, uint64_t seed, int copies, int frags,
                               const char *depots, const char *extra, char *src, char *xnd,
                               xnd_t **x, size_t *size)
{
    tt_revive(&T);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, n, seed, copies, frags, depots, extra, src, xnd), 0);
    *x = tt_load(xnd);
    unsigned char *data = tt_read_whole(src, size);
    CU_ASSERT_PTR_NOT_NULL_FATAL(*x);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    return data;
}

static void test_replicated_random_and_sequential(void)
{
    char src[4096], xnd[4096];
    size_t size;
    xnd_t *x;
    unsigned char *data = uploaded(9 * 1024 * 1024 + 4321, 7, 2, 6, T.depots, NULL,
                                   src, xnd, &x, &size);

    lors_cache_t *c = lors_cache_new(NULL);
    lors_reader_t *r = open_reader(x, c, (int64_t)16 << 20);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_EQUAL(lors_reader_size(r), (int64_t)size);
    CU_ASSERT(random_reads_equal(r, data, size, 300, 300 * 1024));
    /* the ends: the last byte, a read across the end, at the end, past it */
    unsigned char b[16];
    int rc;
    char err[256];
    CU_ASSERT_EQUAL(lors_reader_pread(r, b, 16, (int64_t)size - 1, &rc, err, sizeof err), 1);
    CU_ASSERT_EQUAL(b[0], data[size - 1]);
    CU_ASSERT_EQUAL(lors_reader_pread(r, b, 16, (int64_t)size, &rc, err, sizeof err), 0);
    CU_ASSERT_EQUAL(lors_reader_pread(r, b, 16, (int64_t)size + 99, &rc, err, sizeof err), 0);
    CU_ASSERT_EQUAL(lors_reader_pread(r, b, 16, -1, &rc, err, sizeof err), -1);
    CU_ASSERT_EQUAL(rc, LORS_E_INVAL);
    lors_reader_close(r);

    /* a fresh reader, a sequential stream in 64 KiB reads: read ahead in few fetches, most
     * reads find their block loaded */
    lors_cache_stats_t st0, st;
    lors_cache_stats(c, &st0);
    CU_ASSERT_EQUAL(st0.bytes, 0); /* closing the reader dropped its blocks */
    r = open_reader(x, c, (int64_t)16 << 20);
    CU_ASSERT(stream_equal(r, data, size, 64 * 1024));
    lors_cache_stats(c, &st);
    uint64_t fetches = st.fetches - st0.fetches;
    CU_ASSERT(fetches >= 2 && fetches <= 5); /* 10 blocks: 1, 2, then the windows */
    CU_ASSERT(st.hits - st0.hits > 10 * (st.misses - st0.misses));
    CU_ASSERT(st.peak <= st.limit);
    if (fetches < 2 || fetches > 5)
        fprintf(stderr, "sequential: %llu fetches, %llu hits, %llu misses\n",
                (unsigned long long)fetches, (unsigned long long)(st.hits - st0.hits),
                (unsigned long long)(st.misses - st0.misses));
    lors_reader_close(r);

    /* no read-ahead: one fetch per block read */
    lors_cache_stats(c, &st0);
    r = open_reader(x, c, 0);
    CU_ASSERT(stream_equal(r, data, size, 64 * 1024));
    lors_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.fetches - st0.fetches, 10);
    lors_reader_close(r);

    lors_cache_free(c);
    xnd_free(x);
    free(data);
    tt_free_all(&T, xnd);
}

/* The depot of the mapping that holds byte off (the first one listed). */
static int depot_of(const xnd_t *x, int64_t off)
{
    for (size_t i = 0; i < x->nmaps; i++) {
        const xnd_mapping_t *m = x->maps[i];
        if (off >= m->exnode_offset && off < m->exnode_offset + m->logical_length)
            return tt_cap_port(m->cap[XND_READ]);
    }
    return -1;
}

static void test_seek_stops_read_ahead(void)
{
    char src[4096], xnd[4096];
    size_t size;
    /* one copy, two fragments on two depots: [0, 4M) and [4M, 8M) */
    xnd_t *x;
    unsigned char *data = uploaded(8 * 1024 * 1024, 9, 1, 2, tt_dlist(&T, 0, 1, -1), NULL,
                                   src, xnd, &x, &size);
    int p0 = depot_of(x, 0), p1 = depot_of(x, 6 << 20);
    CU_ASSERT_NOT_EQUAL_FATAL(p0, p1);
    int stopped = T.dep[0].port == p1 ? 0 : 1;
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[stopped].srv, SIGSTOP), 0);

    lors_cache_t *c = lors_cache_new(NULL);
    /* a minute's depot timeout: what stops the stuck read-ahead is told from the timeout by
     * a hang bound, however busy the machine */
    lors_reader_t *r = open_reader_tmo(x, c, (int64_t)16 << 20, 60000);
    lors_stream_t *s = lors_stream_open(r);
    unsigned char *buf = malloc(256 * 1024);
    int rc;
    char err[512];
    /* sequential over the first 3 MiB: the window reaches into the stopped depot's half */
    for (int64_t off = 0; off < 3 << 20; off += 256 * 1024)
        CU_ASSERT_EQUAL(lors_stream_pread(s, buf, 256 * 1024, off, &rc, err, sizeof err),
                        256 * 1024);
    lors_cache_stats_t st;
    lors_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.cancelled, 0);
    /* a seek back to the start: the read-ahead stuck on the stopped depot is stopped */
    int64_t t0 = lns_mono_ns();
    CU_ASSERT_EQUAL(lors_stream_pread(s, buf, 4096, 0, &rc, err, sizeof err), 4096);
    CU_ASSERT_EQUAL(memcmp(buf, data, 4096), 0);
    for (int64_t end = lns_test_deadline(LNS_TEST_WAIT_MS); st.jobs > 0 && lns_test_poll(end);)
        lors_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.jobs, 0);
    CU_ASSERT(st.cancelled >= 1);
    CU_ASSERT_EQUAL(st.failed, 0);
    int64_t ms = (lns_mono_ns() - t0) / 1000000;
    CU_ASSERT(ms < 30000); /* stopped, not the minute's timeout */
    fprintf(stderr, "seek: %llu read-ahead fetches stopped in %lld ms\n",
            (unsigned long long)st.cancelled, (long long)ms);
    lors_stream_close(s);
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[stopped].srv, SIGCONT), 0);
    /* the dropped blocks are fetched again */
    CU_ASSERT(stream_equal(r, data, size, 1 << 20));
    lors_reader_close(r);
    lors_cache_free(c);
    free(buf);
    xnd_free(x);
    free(data);
    tt_free_all(&T, xnd);
}

typedef struct worker {
    lors_reader_t *r;
    const unsigned char *src;
    size_t size;
    int ok;
    uint64_t seed;
} worker_t;

static void *random_stream(void *arg)
{
    worker_t *w = arg;
    lors_stream_t *s = lors_stream_open(w->r);
    unsigned char *buf = malloc(512 * 1024);
    uint64_t g = w->seed;
    w->ok = s && buf;
    for (int i = 0; i < 60 && w->ok; i++) {
        g ^= g << 13;
        g ^= g >> 7;
        g ^= g << 17;
        /* runs of sequential reads from random places */
        int64_t off = (int64_t)(g % w->size);
        for (int k = 0; k < 4 && off < (int64_t)w->size; k++) {
            size_t len = 128 * 1024 + (size_t)(g % (384 * 1024));
            int rc;
            char err[512];
            int64_t got = lors_stream_pread(s, buf, len, off, &rc, err, sizeof err);
            int64_t want = (int64_t)w->size - off < (int64_t)len ? (int64_t)w->size - off
                                                                  : (int64_t)len;
            if (got != want || memcmp(buf, w->src + off, (size_t)want) != 0) {
                fprintf(stderr, "thread read at %lld: %lld of %lld %s\n", (long long)off,
                        (long long)got, (long long)want, got < 0 ? err : "");
                w->ok = 0;
                break;
            }
            off += got;
        }
    }
    free(buf);
    lors_stream_close(s);
    return NULL;
}

static void test_concurrent_streams_bounded(void)
{
    char src[4096], xnd[4096];
    size_t size;
    xnd_t *x;
    unsigned char *data = uploaded(12 * 1024 * 1024 + 1, 11, 2, 8, T.depots, NULL,
                                   src, xnd, &x, &size);
    lors_cache_opts_t co;
    lors_cache_opts_init(&co);
    co.bytes = 6 << 20; /* half the file */
    co.max_jobs = 4;
    lors_cache_t *c = lors_cache_new(&co);
    lors_reader_t *r = open_reader(x, c, (int64_t)4 << 20);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    worker_t w[8];
    pthread_t t[8];
    for (int i = 0; i < 8; i++) {
        w[i] = (worker_t){r, data, size, 0, 0x1234567ull * (uint64_t)(i + 1)};
        CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, random_stream, &w[i]), 0);
    }
    /* a depot killed while they read: once the first fetches are out */
    lors_cache_stats_t st;
    lors_cache_stats(c, &st);
    for (int64_t end = lns_test_deadline(LNS_TEST_WAIT_MS); st.fetches == 0 && lns_test_poll(end);)
        lors_cache_stats(c, &st);
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[2].srv, SIGKILL), 0);
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        CU_ASSERT(w[i].ok);
    }
    lors_cache_stats(c, &st);
    CU_ASSERT(st.peak <= co.bytes);
    CU_ASSERT(st.evictions > 0);
    if (st.peak > co.bytes)
        fprintf(stderr, "peak %lld > %lld\n", (long long)st.peak, (long long)co.bytes);
    lors_reader_close(r);
    lors_cache_free(c);
    xnd_free(x);
    free(data);
    tt_revive(&T);
    tt_free_all(&T, xnd);
}

static void test_no_live_copy(void)
{
    char src[4096], xnd[4096];
    size_t size;
    xnd_t *x;
    unsigned char *data = uploaded(3 * 1024 * 1024, 13, 1, 1, tt_dlist(&T, 4, -1), NULL,
                                   src, xnd, &x, &size);
    lors_reader_t *r = open_reader(x, NULL, (int64_t)16 << 20);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[4].srv, SIGKILL), 0);
    unsigned char buf[1000];
    int rc = 0;
    char err[512] = "";
    CU_ASSERT_EQUAL(lors_reader_pread(r, buf, sizeof buf, 1500000, &rc, err, sizeof err), -1);
    CU_ASSERT_EQUAL(rc, LORS_E_NO_REPLICA);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "bytes 1048576-2097151"));
    if (!strstr(err, "bytes 1048576-2097151"))
        fprintf(stderr, "the error: %s\n", err);
    /* back: the failure was not cached */
    tt_revive(&T);
    CU_ASSERT_EQUAL(lors_reader_pread(r, buf, sizeof buf, 1500000, &rc, err, sizeof err),
                    (int64_t)sizeof buf);
    CU_ASSERT_EQUAL(memcmp(buf, data + 1500000, sizeof buf), 0);
    lors_reader_close(r);
    xnd_free(x);
    free(data);
    tt_free_all(&T, xnd);
}

static void test_erasure_coded_and_transformed(void)
{
    char src[4096], xnd[4096], key[4200];
    size_t size;
    /* 4+2 in pieces of 256 KiB: blocks of the cache are 1 MiB */
    xnd_t *x;
    unsigned char *data = uploaded(5 * 1024 * 1024 + 77, 17, 1, 1,
                                   T.depots, "--ec 4+2 --ec-piece 256K", src, xnd, &x, &size);
    lors_reader_t *r = open_reader(x, NULL, (int64_t)16 << 20);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_EQUAL(lors_reader_size(r), (int64_t)size);
    CU_ASSERT(random_reads_equal(r, data, size, 100, 200 * 1024));
    lors_reader_close(r);
    /* two depots gone: decoded from parity */
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[1].srv, SIGKILL), 0);
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[4].srv, SIGKILL), 0);
    r = open_reader(x, NULL, (int64_t)16 << 20);
    CU_ASSERT(random_reads_equal(r, data, size, 60, 200 * 1024));
    CU_ASSERT(stream_equal(r, data, size, 100 * 1000));
    lors_reader_close(r);
    xnd_free(x);
    free(data);
    tt_revive(&T);
    tt_free_all(&T, xnd);

    /* compressed and encrypted, frames of 256 KiB */
    snprintf(key, sizeof key, "%s/reader.key", lns_test_tmpdir());
    static const char hex[] = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    CU_ASSERT_EQUAL_FATAL(tt_write_file(key, hex, 64), 0);
    CU_ASSERT_EQUAL(chmod(key, 0600), 0);
    char extra[4400];
    snprintf(extra, sizeof extra, "--e2e zlib,aes -E 256K --key-file '%s'", key);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 3 * 1024 * 1024 + 5, 19, 2, 3, T.depots, extra, src,
                                    xnd), 0);
    x = tt_load(xnd);
    data = tt_read_whole(src, &size);
    lors_reader_opts_t o;
    char err[512];
    lors_reader_opts_init(&o);
    CU_ASSERT_PTR_NULL(lors_reader_open(&o, x, NULL, err, sizeof err)); /* no key */
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "no key"));
    unsigned char k[LORS_KEY_BYTES];
    CU_ASSERT_EQUAL_FATAL(lors_key_load(key, k, err, sizeof err), LORS_OK);
    o.dl.key = k;
    r = lors_reader_open(&o, x, NULL, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_EQUAL(lors_reader_size(r), (int64_t)size);
    CU_ASSERT(random_reads_equal(r, data, size, 100, 100 * 1024));
    CU_ASSERT(stream_equal(r, data, size, 33333));
    lors_reader_close(r);
    xnd_free(x);
    free(data);
    tt_free_all(&T, xnd);
}

/* A file uploaded with a 64 KiB checksum block: the reader's blocks follow it, so a 20 KiB
 * read fetches 64 KiB and not 1 MiB (a 4 KiB one, a quarter block or less, goes through the
 * outboard and fetches no block), and whole reads still equal the source. */
static void test_small_checksum_block(void)
{
    char src[4096], xnd[4096];
    size_t size;
    xnd_t *x;
    unsigned char *data = uploaded(3 * 1024 * 1024 + 333, 17, 2, 3, T.depots, "-E 64K",
                                   src, xnd, &x, &size);
    lors_cache_t *c = lors_cache_new(NULL);
    lors_reader_t *r = open_reader(x, c, (int64_t)16 << 20);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    unsigned char b[4096];
    int rc;
    char err[256];
    lors_cache_stats_t st;
    static unsigned char b20[20000];
    CU_ASSERT_EQUAL(lors_reader_pread(r, b, 4096, 2000000, &rc, err, sizeof err), 4096);
    CU_ASSERT_EQUAL(memcmp(b, data + 2000000, 4096), 0);
    lors_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.small, 1);
    CU_ASSERT_EQUAL(st.fetches, 0);
    CU_ASSERT_EQUAL(lors_reader_pread(r, b20, sizeof b20, 30 * 65536 + 1000, &rc, err,
                                      sizeof err), (int64_t)sizeof b20);
    CU_ASSERT_EQUAL(memcmp(b20, data + 30 * 65536 + 1000, sizeof b20), 0);
    lors_cache_stats(c, &st);
    /* its bytes are counted as it ends */
    for (int64_t end = lns_test_deadline(LNS_TEST_WAIT_MS); st.jobs > 0 && lns_test_poll(end);)
        lors_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.fetches, 1);
    /* one 64 KiB block, perhaps raced from the other copy too: far from 1 MiB */
    CU_ASSERT(st.fetched_bytes >= 64 * 1024 && st.fetched_bytes <= 4 * 64 * 1024);
    if (st.fetched_bytes > 4 * 64 * 1024 || st.fetched_bytes < 64 * 1024)
        fprintf(stderr, "a 20 KiB read fetched %llu bytes\n",
                (unsigned long long)st.fetched_bytes);
    CU_ASSERT(random_reads_equal(r, data, size, 100, 200 * 1024));
    CU_ASSERT(stream_equal(r, data, size, 100000));
    lors_reader_close(r);
    lors_cache_free(c);
    xnd_free(x);
    free(data);
    tt_free_all(&T, xnd);
}

/* A file of 300 KiB + 7 from seed uploaded (one copy of two fragments) and an empty directory
 * <xnd>.<name> (4200 bytes); the depots revived first. */
static void upload_and_dir(uint64_t seed, const char *name, char *src, char *xnd, char *dir)
{
    tt_revive(&T);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 300 * 1024 + 7, seed, 1, 2, T.depots, NULL, src, xnd),
                          0);
    snprintf(dir, 4200, "%s.%s", xnd, name);
    CU_ASSERT_EQUAL_FATAL(mkdir(dir, 0700), 0);
}

/* A lors_dir with the default reader options over a new cache (*c). */
static lors_dir_t *new_dir(lors_cache_t **c)
{
    lors_reader_opts_t ro;
    lors_reader_opts_init(&ro);
    *c = lors_cache_new(NULL);
    lors_dir_t *d = lors_dir_new(&ro, *c);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    return d;
}

/* lors_dir: names from a directory and a single file (the first given wins a name), lookups
 * that cannot escape the directory, a file kept while unchanged and opened anew once its
 * exNode is rewritten (holders of the old one still read it), a malformed exNode refused. */
static void test_dir(void)
{
    char src[4096], xnd[4096], dir[4200], p[4400], err[600];
    size_t size;
    int rc;
    upload_and_dir(11, "dir", src, xnd, dir);
    unsigned char *data = tt_read_whole(src, &size);
    unsigned char *xb = NULL;
    size_t xn;
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    CU_ASSERT_PTR_NOT_NULL_FATAL(xb = tt_read_whole(xnd, &xn));
    const char *names[] = {"b.xnd", "a.xnd", ".hidden.xnd", "notes.txt"};
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        CU_ASSERT_EQUAL(tt_write_file(p, xb, xn), 0);
    }
    snprintf(p, sizeof p, "%s/bad.xnd", dir);
    CU_ASSERT_EQUAL(tt_write_file(p, "<exnode", 7), 0);

    lors_cache_t *c;
    lors_dir_t *d = new_dir(&c);
    char single[4200];
    snprintf(single, sizeof single, "%s.b.xnd", xnd); /* shown as "<name>.b": a single file */
    CU_ASSERT_EQUAL(tt_write_file(single, xb, xn), 0);
    CU_ASSERT_EQUAL(lors_dir_add(d, dir, err, sizeof err), LORS_OK);
    CU_ASSERT_EQUAL(lors_dir_add(d, single, err, sizeof err), LORS_OK);
    CU_ASSERT_EQUAL(lors_dir_add(d, "/nonexistent/x.xnd", err, sizeof err), LORS_E_READ);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "/nonexistent/x.xnd"));
    size_t nd, nf, n;
    lors_dir_counts(d, &nd, &nf);
    CU_ASSERT(nd == 1 && nf == 1);
    char **v = lors_dir_names(d, &n);
    char want_single[4200];
    lors_dir_name_of(single, want_single, sizeof want_single);
    CU_ASSERT_EQUAL_FATAL(n, 4); /* a, b, bad, <single>: not .hidden, not notes.txt */
    CU_ASSERT_STRING_EQUAL(v[0], "a");
    CU_ASSERT_STRING_EQUAL(v[1], "b");
    CU_ASSERT_STRING_EQUAL(v[2], "bad");
    CU_ASSERT_STRING_EQUAL(v[3], want_single);
    lors_dir_names_free(v, n);

    const char *never[] = {"nope", ".hidden", "../a", "a/b", "", "a.xnd"};
    for (int i = 0; i < 6; i++) {
        CU_ASSERT_PTR_NULL(lors_dir_get(d, never[i], &rc, err, sizeof err));
        CU_ASSERT_EQUAL(rc, LORS_E_NOTFOUND);
    }
    CU_ASSERT_PTR_NULL(lors_dir_get(d, "bad", &rc, err, sizeof err));
    CU_ASSERT_EQUAL(rc, LORS_E_EXNODE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "bad.xnd"));

    lors_dir_file_t *a = lors_dir_get(d, "a", &rc, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL(a->size, (int64_t)size);
    CU_ASSERT_STRING_EQUAL(a->name, "a");
    CU_ASSERT_EQUAL(strlen(a->tag), 34);
    lors_dir_file_t *a2 = lors_dir_get(d, "a", &rc, err, sizeof err);
    CU_ASSERT_PTR_EQUAL(a, a2); /* unchanged: the same */
    lors_dir_put(d, a2);
    lors_dir_file_t *s = lors_dir_get(d, want_single, &rc, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL(s);
    CU_ASSERT_STRING_EQUAL(s->tag, a->tag); /* the same exNode bytes: the same tag */
    lors_dir_put(d, s);

    /* rewritten in place with other bytes (a comment): a new file, the old one still reads */
    snprintf(p, sizeof p, "%s/a.xnd", dir);
    FILE *fp = fopen(p, "a");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    fputs("<!-- rewritten -->\n", fp);
    fclose(fp);
    a2 = lors_dir_get(d, "a", &rc, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a2);
    CU_ASSERT_PTR_NOT_EQUAL(a, a2);
    CU_ASSERT_STRING_NOT_EQUAL(a->tag, a2->tag);
    unsigned char buf[1000];
    CU_ASSERT_EQUAL(lors_reader_pread(a->r, buf, 1000, 5000, &rc, err, sizeof err), 1000);
    CU_ASSERT_EQUAL(memcmp(buf, data + 5000, 1000), 0);
    lors_dir_put(d, a); /* the last reference of the old one: freed here */
    CU_ASSERT_EQUAL(lors_reader_pread(a2->r, buf, 1000, (int64_t)size - 1000, &rc, err,
                                      sizeof err), 1000);
    CU_ASSERT_EQUAL(memcmp(buf, data + size - 1000, 1000), 0);
    lors_dir_put(d, a2);
    lors_dir_free(d);
    lors_cache_free(c);

    tt_sh(&T, "rm -rf '%s' '%s'", dir, single);
    free(xb);
    free(data);
    tt_free_all(&T, xnd);
}

/* lors_dir_stat: a plain exNode's size and time from a scan of its bytes, as lors_dir_get
 * gives them, with nothing parsed or kept; where the scan cannot tell (a "size" only inside a
 * metadata list, or only inside a comment; a truncated exNode), the exNode is parsed as by
 * lors_dir_get: the length of its mappings, or its error. */
static void test_dir_stat(void)
{
    char src[4096], xnd[4096], dir[4200], p[4400], err[600];
    int rc;
    int64_t sz;
    struct timespec mt;
    upload_and_dir(12, "sdir", src, xnd, dir);
    const char *line = "<exnode:metadata name=\"size\" type=\"integer\">307207</exnode:metadata>";
    CU_ASSERT_EQUAL_FATAL(tt_sh(&T, "cd '%s' && grep -c '%s' '%s'", dir, line, xnd), 0);
    CU_ASSERT_STRING_EQUAL(T.out, "1\n");
    CU_ASSERT_EQUAL_FATAL(
        tt_sh(&T, "cd '%s' && cp '%s' plain.xnd && "
                  "sed 's|%s|<exnode:metadata name=\"info\" type=\"meta\">"
                  "<exnode:metadata name=\"size\" type=\"integer\">7</exnode:metadata>"
                  "</exnode:metadata>|' plain.xnd > nested.xnd && "
                  "sed 's|%s|<!-- <exnode:metadata name=\"size\" type=\"integer\">7"
                  "</exnode:metadata> -->|' plain.xnd > commented.xnd && "
                  "head -c 2000 plain.xnd > truncated.xnd && "
                  "! grep -q '>307207<' nested.xnd commented.xnd",
              dir, xnd, line, line), 0);
    lors_cache_t *c;
    lors_dir_t *d = new_dir(&c);
    CU_ASSERT_EQUAL(lors_dir_add(d, dir, err, sizeof err), LORS_OK);

    struct stat st;
    snprintf(p, sizeof p, "%s/plain.xnd", dir);
    CU_ASSERT_EQUAL(stat(p, &st), 0);
    CU_ASSERT_EQUAL(lors_dir_stat(d, "plain", &sz, &mt, &rc, err, sizeof err), 0);
    CU_ASSERT_EQUAL(sz, 300 * 1024 + 7);
    CU_ASSERT(mt.tv_sec == st.st_mtim.tv_sec && mt.tv_nsec == st.st_mtim.tv_nsec);
    CU_ASSERT_EQUAL(lors_dir_kept(d), 0); /* nothing parsed */
    lors_dir_file_t *f = lors_dir_get(d, "plain", &rc, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(f->size, sz);
    CU_ASSERT(f->mtime.tv_sec == mt.tv_sec && f->mtime.tv_nsec == mt.tv_nsec);
    lors_dir_put(d, f);
    /* kept now: the answer comes from the table */
    CU_ASSERT_EQUAL(lors_dir_stat(d, "plain", &sz, &mt, &rc, err, sizeof err), 0);
    CU_ASSERT_EQUAL(sz, 300 * 1024 + 7);

    const char *parsed[] = {"nested", "commented"};
    for (int i = 0; i < 2; i++) {
        sz = -1;
        CU_ASSERT_EQUAL(lors_dir_stat(d, parsed[i], &sz, &mt, &rc, err, sizeof err), 0);
        CU_ASSERT_EQUAL(sz, 300 * 1024 + 7); /* the mappings' end, not the 7 */
        CU_ASSERT_EQUAL(lors_dir_kept(d), (size_t)i + 2);
    }
    CU_ASSERT_EQUAL(lors_dir_stat(d, "truncated", &sz, &mt, &rc, err, sizeof err), -1);
    CU_ASSERT_EQUAL(rc, LORS_E_EXNODE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "truncated.xnd"));
    CU_ASSERT_EQUAL(lors_dir_stat(d, "nope", &sz, &mt, &rc, err, sizeof err), -1);
    CU_ASSERT_EQUAL(rc, LORS_E_NOTFOUND);
    lors_dir_free(d);
    lors_cache_free(c);
    tt_sh(&T, "rm -rf '%s'", dir);
    tt_free_all(&T, xnd);
}

/* Spoil one byte of mapping m's allocation at off (WRITE in place). */
static void spoil(ibp_client_t *cli, const xnd_mapping_t *m, int64_t off)
{
    unsigned char b = 0;
    uint64_t w = 0;
    CU_ASSERT_EQUAL_FATAL(ibp_load(cli, m->cap[XND_READ], (uint64_t)off, 1, &b), IBP_OK);
    b ^= 0x5a;
    CU_ASSERT_EQUAL_FATAL(ibp_write(cli, m->cap[XND_WRITE], (uint64_t)off, &b, 1, &w), IBP_OK);
}

/* A read of len at off: 1 if it gave the source's bytes, 0 if it failed, -1 if it gave others. */
static int read_is(lors_reader_t *r, const unsigned char *data, int64_t off, size_t len)
{
    unsigned char b[8192];
    int rc;
    char err[512];
    int64_t got = lors_reader_pread(r, b, len, off, &rc, err, sizeof err);
    if (got < 0)
        return 0;
    return got == (int64_t)len && memcmp(b, data + off, len) == 0 ? 1 : -1;
}

/* The outboard (docs/lors.md, "Small verified reads"), with the upload's defaults (1 MiB
 * blocks, two copies): random 4 KiB reads are loaded and checked without their block; a byte
 * spoilt on one copy is read from the other; a chaining value spoilt on both leaves the read
 * to the whole block, which checks; data spoilt on both copies is an error, never the spoilt
 * bytes; a read across two blocks takes the blocks; a killed depot leaves the other copy. */
static void test_small_reads(void)
{
    char src[4096], xnd[4096];
    size_t size;
    xnd_t *x;
    unsigned char *data = uploaded(3 * 1024 * 1024 + 333, 23, 2, 1, tt_dlist(&T, 0, 1, -1),
                                   NULL, src, xnd, &x, &size);
    CU_ASSERT_EQUAL_FATAL(x->nmaps, 2);
    ibp_client_t *cli = ibp_client_new(NULL);
    lors_cache_t *c = lors_cache_new(NULL);
    lors_reader_t *r = open_reader(x, c, (int64_t)16 << 20);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    lors_cache_stats_t st;
    int n = 0, good = 0;
    for (int i = 0; i < 60; i++) {
        int64_t off = (int64_t)(next_rand() % (size - 4096));
        if (off / (1 << 20) != (off + 4095) / (1 << 20))
            continue;
        n++;
        good += read_is(r, data, off, 4096) == 1;
    }
    CU_ASSERT_EQUAL(good, n);
    lors_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.small, (uint64_t)n);
    CU_ASSERT_EQUAL(st.fetches, 0);
    /* the last block (2 MiB + 333 bytes... of 1 MiB) and its last, short group */
    CU_ASSERT_EQUAL(read_is(r, data, (int64_t)size - 100, 100), 1);
    /* across two blocks: the blocks */
    CU_ASSERT_EQUAL(read_is(r, data, (1 << 20) - 2000, 4096), 1);
    lors_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.small, (uint64_t)n + 1);
    CU_ASSERT(st.fetches >= 1);
    lors_reader_close(r);

    /* a byte of block 1 spoilt on copy 0: both turns read right, through the outboard */
    const int64_t p = (1 << 20) + 20000;
    spoil(cli, x->maps[0], p);
    r = open_reader(x, c, (int64_t)16 << 20);
    CU_ASSERT_EQUAL(read_is(r, data, p - 100, 4096), 1);
    CU_ASSERT_EQUAL(read_is(r, data, p - 100, 4096), 1);
    lors_reader_close(r);
    /* spoilt on both: an error, not the bytes */
    spoil(cli, x->maps[1], p);
    r = open_reader(x, c, (int64_t)16 << 20);
    CU_ASSERT_EQUAL(read_is(r, data, p - 100, 4096), 0);
    lors_reader_close(r);
    /* the CV of block 2's group 5 spoilt on both copies: reads in that block (group 5, and
     * group 6 whose CV is right but whose block no longer checks) come whole, and right */
    for (int k = 0; k < 2; k++) {
        const xnd_mapping_t *m = x->maps[k];
        spoil(cli, m, m->alloc_offset + m->logical_length + (2 * 64 + 5) * 32 + 3);
    }
    r = open_reader(x, c, (int64_t)16 << 20);
    lors_cache_stats(c, &st);
    uint64_t small0 = st.small;
    CU_ASSERT_EQUAL(read_is(r, data, (2 << 20) + 5 * 16384 + 10, 4096), 1);
    lors_reader_close(r);
    r = open_reader(x, c, (int64_t)16 << 20);
    CU_ASSERT_EQUAL(read_is(r, data, (2 << 20) + 6 * 16384 + 10, 4096), 1);
    lors_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.small, small0);
    lors_reader_close(r);
    /* copy 0's depot killed: block 0 still comes through copy 1's outboard */
    int port = tt_cap_port(x->maps[0]->cap[XND_READ]);
    for (int d = 0; d < ND; d++)
        if (T.dep[d].port == port)
            CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[d].srv, SIGKILL), 0);
    r = open_reader(x, c, (int64_t)16 << 20);
    for (int i = 0; i < 4; i++)
        CU_ASSERT_EQUAL(read_is(r, data, 1000 + i * 50000, 4096), 1);
    lors_cache_stats(c, &st);
    CU_ASSERT_EQUAL(st.small, small0 + 4);
    lors_reader_close(r);
    lors_cache_free(c);
    ibp_client_free(cli);
    tt_revive(&T);
    xnd_free(x);
    free(data);
    tt_free_all(&T, xnd);
}

static const lns_test_case tests[] = {
    {"replicated: random reads, ends, a sequential stream read ahead",
     test_replicated_random_and_sequential},
    {"a seek stops read-ahead stuck on a stopped depot", test_seek_stops_read_ahead},
    {"8 streams at once inside the cache's bound, a depot killed", test_concurrent_streams_bounded},
    {"no live copy: the bytes named; back again: read", test_no_live_copy},
    {"erasure coded (2 depots lost) and compressed + encrypted", test_erasure_coded_and_transformed},
    {"lors_dir: names, lookups, a rewritten exNode, a malformed one", test_dir},
    {"lors_dir_stat: a plain exNode scanned, not parsed; the others parsed", test_dir_stat},
    {"a 64 KiB checksum block: a 20 KiB read fetches 64 KiB", test_small_checksum_block},
    {"small reads through the outboard: spoilt bytes, CVs, a killed depot", test_small_reads},
};

TT_MAIN(&T, "random-access reader", ND, tests)
