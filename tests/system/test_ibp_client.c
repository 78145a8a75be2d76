/* test_ibp_client.c -- every libibp call end to end against real depots, in both protocol
 * versions, and the depot's errors coming back through the library.
 *
 * Two depots (A with an admin password, B) live for the whole program; each test makes its
 * own allocations.  Every test body takes the protocol version, and is registered once per
 * version, so version 0 and version 1 run the same checks except where the contract says
 * they differ (WRITE, TRUNCATE and the alias calls exist only in version 1). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ibp.h"
#include "lns_test.h"
#include "lns_time.h"
#include "test_depot.h"

#define MiB (1024u * 1024u)

static test_depot_t dA, dB;
static int depots_up;

static int suite_init(void)
{
    if (td_start(&dA, "--admin-password pw") < 0 || td_start(&dB, NULL) < 0)
        return -1;
    depots_up = 1;
    return 0;
}

static int suite_depots_up(void)
{
    return depots_up ? 0 : -1;
}

static int suite_clean(void)
{
    lns_test_server_stop(&dA.srv);
    lns_test_server_stop(&dB.srv);
    return 0;
}

static ibp_client_t *client(int version)
{
    ibp_client_opts_t o;
    ibp_client_opts_init(&o);
    o.version = version;
    o.io_timeout_ms = 20000;
    return ibp_client_new(&o);
}

static int alloc(ibp_client_t *c, const test_depot_t *d, uint64_t size, int64_t dur, int rel,
                 ibp_caps_t *caps)
{
    ibp_attr_t a = {size, dur, rel, IBP_BYTEARRAY};
    return ibp_allocate(c, "127.0.0.1", d->port, NULL, &a, caps);
}

static char *tmpfile_with(const void *data, size_t n, const char *name)
{
    static char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", lns_test_tmpdir(), name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, data, n) != (ssize_t)n)
        return NULL;
    close(fd);
    return path;
}

/* ---- allocate and probe ---- */

static void do_allocate_probe(int v)
{
    ibp_client_t *c = client(v);
    ibp_caps_t caps;
    ibp_cap_t rc, wc, mc;
    ibp_probe_t p;

    CU_ASSERT_EQUAL_FATAL(alloc(c, &dA, MiB, 600, IBP_HARD, &caps), IBP_OK);
    CU_ASSERT_EQUAL_FATAL(ibp_cap_parse(caps.read, &rc), IBP_OK);
    CU_ASSERT_EQUAL_FATAL(ibp_cap_parse(caps.write, &wc), IBP_OK);
    CU_ASSERT_EQUAL_FATAL(ibp_cap_parse(caps.manage, &mc), IBP_OK);
    CU_ASSERT_EQUAL(rc.type, IBP_READCAP);
    CU_ASSERT_EQUAL(wc.type, IBP_WRITECAP);
    CU_ASSERT_EQUAL(mc.type, IBP_MANAGECAP);
    CU_ASSERT_STRING_EQUAL(rc.host, "127.0.0.1");
    CU_ASSERT_EQUAL(rc.port, dA.port);
    CU_ASSERT(strcmp(rc.key, wc.key) != 0 || strcmp(rc.typekey, wc.typekey) != 0);

    /* PROBE works with every capability of the allocation */
    const char *all[3] = {caps.read, caps.write, caps.manage};
    for (int i = 0; i < 3; i++) {
        memset(&p, 0xff, sizeof p);
        CU_ASSERT_EQUAL_FATAL(ibp_probe(c, all[i], &p), IBP_OK);
        CU_ASSERT_EQUAL(p.read_refs, 1);
        CU_ASSERT_EQUAL(p.write_refs, 1);
        CU_ASSERT_EQUAL(p.cur_size, 0);
        CU_ASSERT_EQUAL(p.max_size, MiB);
        CU_ASSERT(p.seconds_left > 590 && p.seconds_left <= 600);
        CU_ASSERT_EQUAL(p.reliability, IBP_HARD);
        CU_ASSERT_EQUAL(p.type, IBP_BYTEARRAY);
    }
    /* soft, and -1 = the resource maximum (3600 in the harness) */
    CU_ASSERT_EQUAL_FATAL(alloc(c, &dA, 1000, -1, IBP_SOFT, &caps), IBP_OK);
    CU_ASSERT_EQUAL_FATAL(ibp_probe(c, caps.manage, &p), IBP_OK);
    CU_ASSERT_EQUAL(p.reliability, IBP_SOFT);
    CU_ASSERT(p.seconds_left > 3590 && p.seconds_left <= 3600);
    ibp_client_free(c);
}

/* ---- store (buffer, fd, file) and load (buffer, fd) ---- */

typedef struct pipe_drain {
    int fd;
    unsigned char *data;
    size_t cap, n;
} pipe_drain_t;

static void *drainer(void *arg)
{
    pipe_drain_t *d = arg;
    for (;;) {
        ssize_t r = read(d->fd, d->data + d->n, d->cap - d->n);
        if (r <= 0)
            break;
        d->n += (size_t)r;
    }
    return NULL;
}

static void do_store_load(int v)
{
    const size_t n1 = 100000, n2 = 3 * MiB + 17, n3 = 2 * MiB, foff = 4096;
    const size_t total = n1 + n2 + n3;
    unsigned char *src = malloc(total + foff), *back = malloc(total);
    ibp_client_t *c = client(v);
    ibp_caps_t caps;
    ibp_probe_t p;
    uint64_t done = 0;
    int pfd[2];

    CU_ASSERT_PTR_NOT_NULL_FATAL(src);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    lns_test_fill(src, total + foff, 42 + (uint64_t)v);
    CU_ASSERT_EQUAL_FATAL(alloc(c, &dA, 8 * MiB, 600, IBP_HARD, &caps), IBP_OK);

    /* 1: from a buffer */
    CU_ASSERT_EQUAL(ibp_store(c, caps.write, src, n1, &done), IBP_OK);
    CU_ASSERT_EQUAL(done, n1);
    /* 2: from a pipe, fed by another thread */
    lns_test_feed feed;
    CU_ASSERT_EQUAL_FATAL(lns_test_feed_start(&feed, src + n1, n2, 65536), 0);
    CU_ASSERT_EQUAL(ibp_store_fd(c, caps.write, feed.rfd, n2, &done), IBP_OK);
    CU_ASSERT_EQUAL(done, n2);
    lns_test_feed_end(&feed);
    /* 3: sendfile from a file offset; the file position must not move */
    char *path = tmpfile_with(src + n1 + n2 - foff, n3 + foff, "store3");
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    int ffd = open(path, O_RDONLY);
    CU_ASSERT_EQUAL(ibp_store_file(c, caps.write, ffd, foff, n3, &done), IBP_OK);
    CU_ASSERT_EQUAL(done, n3);
    CU_ASSERT_EQUAL(lseek(ffd, 0, SEEK_CUR), 0);
    close(ffd);
    /* zero-length STORE is allowed and changes nothing */
    CU_ASSERT_EQUAL(ibp_store(c, caps.write, src, 0, &done), IBP_OK);
    CU_ASSERT_EQUAL(done, 0);

    CU_ASSERT_EQUAL_FATAL(ibp_probe(c, caps.manage, &p), IBP_OK);
    CU_ASSERT_EQUAL(p.cur_size, total);

    /* load all, then pieces */
    memset(back, 0, total);
    CU_ASSERT_EQUAL(ibp_load(c, caps.read, 0, total, back), IBP_OK);
    CU_ASSERT(memcmp(back, src, total) == 0);
    memset(back, 0, total);
    CU_ASSERT_EQUAL(ibp_load(c, caps.read, n1 - 10, 20, back), IBP_OK);
    CU_ASSERT(memcmp(back, src + n1 - 10, 20) == 0);
    CU_ASSERT_EQUAL(ibp_load(c, caps.read, total - 1, 1, back), IBP_OK);
    CU_ASSERT_EQUAL(back[0], src[total - 1]);
    CU_ASSERT_EQUAL(ibp_load(c, caps.read, total, 0, back), IBP_OK);

    /* load to a file */
    char out[PATH_MAX];
    snprintf(out, sizeof out, "%s/load_out", lns_test_tmpdir());
    int ofd = open(out, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CU_ASSERT_EQUAL(ibp_load_fd(c, caps.read, 1000, total - 1000, ofd), IBP_OK);
    memset(back, 0, total);
    CU_ASSERT_EQUAL(pread(ofd, back, total, 0), (ssize_t)(total - 1000));
    CU_ASSERT(memcmp(back, src + 1000, total - 1000) == 0);
    close(ofd);
    /* load to a pipe, drained by another thread */
    CU_ASSERT_EQUAL_FATAL(pipe(pfd), 0);
    pthread_t th;
    pipe_drain_t dr = {pfd[0], back, total, 0};
    memset(back, 0, total);
    pthread_create(&th, NULL, drainer, &dr);
    CU_ASSERT_EQUAL(ibp_load_fd(c, caps.read, 0, total, pfd[1]), IBP_OK);
    close(pfd[1]);
    pthread_join(th, NULL);
    close(pfd[0]);
    CU_ASSERT_EQUAL(dr.n, total);
    CU_ASSERT(memcmp(back, src, total) == 0);

    ibp_client_free(c);
    free(src);
    free(back);
}

/* ---- write ---- */

static void do_write(int v)
{
    ibp_client_t *c = client(v);
    ibp_caps_t caps;
    unsigned char a[3000], back[10000];
    uint64_t done = 1;
    ibp_probe_t p;

    lns_test_fill(a, sizeof a, 7);
    CU_ASSERT_EQUAL_FATAL(alloc(c, &dA, 10000, 600, IBP_HARD, &caps), IBP_OK);
    if (v == 0) {
        /* no WRITE in version 0: refused locally, even for a depot that is not there */
        CU_ASSERT_EQUAL(ibp_write(c, caps.write, 0, a, 10, &done), IBP_E_INVALID_CMD);
        CU_ASSERT_EQUAL(done, 0);
        CU_ASSERT_EQUAL(ibp_write(c, "ibp://127.0.0.1:1/0#k/1/WRITE", 0, a, 10, NULL),
                        IBP_E_INVALID_CMD);
        CU_ASSERT_EQUAL(ibp_write_fd(c, "ibp://127.0.0.1:1/0#k/1/WRITE", 0, 0, 10, NULL),
                        IBP_E_INVALID_CMD);
        ibp_client_free(c);
        return;
    }
    CU_ASSERT_EQUAL(ibp_store(c, caps.write, a, 1000, NULL), IBP_OK);
    /* past the end: the gap reads as zeros */
    CU_ASSERT_EQUAL(ibp_write(c, caps.write, 5000, a + 1000, 2000, &done), IBP_OK);
    CU_ASSERT_EQUAL(done, 2000);
    /* inside: overwrite */
    CU_ASSERT_EQUAL(ibp_write(c, caps.write, 10, a + 500, 100, &done), IBP_OK);
    CU_ASSERT_EQUAL_FATAL(ibp_probe(c, caps.read, &p), IBP_OK);
    CU_ASSERT_EQUAL(p.cur_size, 7000);
    CU_ASSERT_EQUAL_FATAL(ibp_load(c, caps.read, 0, 7000, back), IBP_OK);
    CU_ASSERT(memcmp(back, a, 10) == 0);
    CU_ASSERT(memcmp(back + 10, a + 500, 100) == 0);
    CU_ASSERT(memcmp(back + 110, a + 110, 890) == 0);
    for (int i = 1000; i < 5000; i++)
        if (back[i] != 0) {
            CU_FAIL("gap not zero");
            break;
        }
    CU_ASSERT(memcmp(back + 5000, a + 1000, 2000) == 0);
    /* write from an fd */
    char *path = tmpfile_with(a, 3000, "write_fd");
    int fd = open(path, O_RDONLY);
    CU_ASSERT_EQUAL(ibp_write_fd(c, caps.write, 7000, fd, 3000, &done), IBP_OK);
    close(fd);
    CU_ASSERT_EQUAL(done, 3000);
    CU_ASSERT_EQUAL(ibp_load(c, caps.read, 7000, 3000, back), IBP_OK);
    CU_ASSERT(memcmp(back, a, 3000) == 0);
    /* beyond the maximum size */
    CU_ASSERT_EQUAL(ibp_write(c, caps.write, 9999, a, 2, NULL), IBP_E_WOULD_EXCEED_LIMIT);
    ibp_client_free(c);
}

/* ---- send (third-party copy) ---- */

static void do_send(int v)
{
    ibp_client_t *c = client(v);
    ibp_caps_t src, dst;
    unsigned char *data = malloc(2 * MiB), *back = malloc(2 * MiB);
    uint64_t copied = 0;
    ibp_probe_t p;

    lns_test_fill(data, 2 * MiB, 99);
    CU_ASSERT_EQUAL_FATAL(alloc(c, &dA, 2 * MiB, 600, IBP_HARD, &src), IBP_OK);
    CU_ASSERT_EQUAL_FATAL(alloc(c, &dB, 4 * MiB, 600, IBP_HARD, &dst), IBP_OK);
    CU_ASSERT_EQUAL_FATAL(ibp_store(c, src.write, data, 2 * MiB, NULL), IBP_OK);
    CU_ASSERT_EQUAL(ibp_send(c, src.read, dst.write, 0, 2 * MiB, &copied), IBP_OK);
    CU_ASSERT_EQUAL(copied, 2 * MiB);
    CU_ASSERT_EQUAL(ibp_send(c, src.read, dst.write, 1000, 5000, &copied), IBP_OK);
    CU_ASSERT_EQUAL(copied, 5000);
    CU_ASSERT_EQUAL_FATAL(ibp_probe(c, dst.manage, &p), IBP_OK);
    CU_ASSERT_EQUAL(p.cur_size, 2 * MiB + 5000);
    CU_ASSERT_EQUAL(ibp_load(c, dst.read, 0, 2 * MiB, back), IBP_OK);
    CU_ASSERT(memcmp(back, data, 2 * MiB) == 0);
    CU_ASSERT_EQUAL(ibp_load(c, dst.read, 2 * MiB, 5000, back), IBP_OK);
    CU_ASSERT(memcmp(back, data + 1000, 5000) == 0);
    /* wrong kinds are refused locally */
    CU_ASSERT_EQUAL(ibp_send(c, src.write, dst.write, 0, 1, NULL), IBP_E_INVALID_READ_CAP);
    CU_ASSERT_EQUAL(ibp_send(c, src.read, dst.read, 0, 1, NULL), IBP_E_INVALID_WRITE_CAP);
    /* past the end of the source */
    CU_ASSERT_EQUAL(ibp_send(c, src.read, dst.write, 2 * MiB - 1, 2, NULL),
                    IBP_E_INVALID_PARAMETER);
    /* a target that is not there */
    char dead[IBP_MAX_CAP];
    ibp_cap_t dc;
    CU_ASSERT_EQUAL_FATAL(ibp_cap_parse(dst.write, &dc), IBP_OK);
    dc.port = 1;
    CU_ASSERT_EQUAL_FATAL(ibp_cap_format(&dc, dead, sizeof dead), IBP_OK);
    CU_ASSERT_EQUAL(ibp_send(c, src.read, dead, 0, 10, NULL), IBP_E_CONNECTION);
    ibp_client_free(c);
    free(data);
    free(back);
}

/* ---- reference counts ---- */

static void do_refcounts(int v)
{
    ibp_client_t *c = client(v);
    ibp_caps_t caps;
    ibp_probe_t p;

    CU_ASSERT_EQUAL_FATAL(alloc(c, &dA, 1000, 600, IBP_HARD, &caps), IBP_OK);
    CU_ASSERT_EQUAL(ibp_incr(c, caps.manage, IBP_READCAP), IBP_OK);
    CU_ASSERT_EQUAL(ibp_incr(c, caps.manage, IBP_WRITECAP), IBP_OK);
    CU_ASSERT_EQUAL_FATAL(ibp_probe(c, caps.manage, &p), IBP_OK);
    CU_ASSERT_EQUAL(p.read_refs, 2);
    CU_ASSERT_EQUAL(p.write_refs, 2);
    CU_ASSERT_EQUAL(ibp_decr(c, caps.manage, IBP_WRITECAP), IBP_OK);
    CU_ASSERT_EQUAL(ibp_decr(c, caps.manage, IBP_WRITECAP), IBP_OK);
    CU_ASSERT_EQUAL_FATAL(ibp_probe(c, caps.manage, &p), IBP_OK);
    CU_ASSERT_EQUAL(p.write_refs, 0);
    /* write count 0: a count only, as in ACCRE 1.4 and LoCI 1.3.1; writes go on */
    CU_ASSERT_EQUAL(ibp_store(c, caps.write, "x", 1, NULL), IBP_OK);
    CU_ASSERT_EQUAL(ibp_decr(c, caps.manage, IBP_READCAP), IBP_OK);
    CU_ASSERT_EQUAL(ibp_probe(c, caps.read, &p), IBP_OK);
    CU_ASSERT_EQUAL(p.read_refs, 1);
    /* read count to 0 frees the allocation */
    CU_ASSERT_EQUAL(ibp_decr(c, caps.manage, IBP_READCAP), IBP_OK);
    CU_ASSERT_EQUAL(ibp_probe(c, caps.manage, &p), IBP_E_CAP_NOT_FOUND);
    CU_ASSERT_EQUAL(ibp_load(c, caps.read, 0, 0, &p), IBP_E_CAP_NOT_FOUND);
    /* local checks */
    CU_ASSERT_EQUAL(ibp_incr(c, caps.read, IBP_READCAP), IBP_E_INVALID_MANAGE_CAP);
    CU_ASSERT_EQUAL(ibp_incr(c, caps.manage, IBP_MANAGECAP), IBP_E_INVALID_PARAMETER);
    ibp_client_free(c);
}

/* ---- change and truncate ---- */

static void do_change(int v)
{
    ibp_client_t *c = client(v);
    ibp_caps_t caps;
    ibp_probe_t p;
    char data[4000];

    lns_test_fill(data, sizeof data, 5);
    CU_ASSERT_EQUAL_FATAL(alloc(c, &dA, 4000, 100, IBP_SOFT, &caps), IBP_OK);
    CU_ASSERT_EQUAL(ibp_store(c, caps.write, data, 3000, NULL), IBP_OK);
    CU_ASSERT_EQUAL(ibp_change(c, caps.manage, 8000, 0, 0), IBP_OK);
    CU_ASSERT_EQUAL_FATAL(ibp_probe(c, caps.manage, &p), IBP_OK);
    CU_ASSERT_EQUAL(p.max_size, 8000);
    CU_ASSERT(p.seconds_left <= 100);
    CU_ASSERT_EQUAL(p.reliability, IBP_SOFT);
    CU_ASSERT_EQUAL(ibp_change(c, caps.manage, 0, 1000, IBP_HARD), IBP_OK);
    CU_ASSERT_EQUAL_FATAL(ibp_probe(c, caps.manage, &p), IBP_OK);
    CU_ASSERT_EQUAL(p.max_size, 8000);
    CU_ASSERT(p.seconds_left > 990 && p.seconds_left <= 1000);
    CU_ASSERT_EQUAL(p.reliability, IBP_HARD);
    /* below the current size, beyond the maximum duration: nothing changes */
    CU_ASSERT_EQUAL(ibp_change(c, caps.manage, 2000, 0, 0), IBP_E_WOULD_DAMAGE_DATA);
    CU_ASSERT_EQUAL(ibp_change(c, caps.manage, 0, 100000, 0), IBP_E_LONG_DURATION);
    CU_ASSERT_EQUAL_FATAL(ibp_probe(c, caps.manage, &p), IBP_OK);
    CU_ASSERT_EQUAL(p.max_size, 8000);
    CU_ASSERT_EQUAL(p.cur_size, 3000);
    CU_ASSERT_EQUAL(ibp_change(c, caps.write, 0, 10, 0), IBP_E_INVALID_MANAGE_CAP);

    if (v == 0) {
        CU_ASSERT_EQUAL(ibp_truncate(c, caps.manage, 10), IBP_E_INVALID_CMD);
        CU_ASSERT_EQUAL(ibp_truncate(c, "ibp://127.0.0.1:1/0#k/1/MANAGE", 10), IBP_E_INVALID_CMD);
        ibp_client_free(c);
        return;
    }
    /* TRUNCATE, as ACCRE 1.4: the maximum size becomes the new size, the current size is
     * cut to it; growing changes only the maximum */
    char back[1000];
    CU_ASSERT_EQUAL(ibp_truncate(c, caps.manage, 1000), IBP_OK);
    CU_ASSERT_EQUAL_FATAL(ibp_probe(c, caps.manage, &p), IBP_OK);
    CU_ASSERT_EQUAL(p.cur_size, 1000);
    CU_ASSERT_EQUAL(p.max_size, 1000);
    CU_ASSERT_EQUAL(ibp_truncate(c, caps.manage, 5000), IBP_OK);
    CU_ASSERT_EQUAL_FATAL(ibp_probe(c, caps.manage, &p), IBP_OK);
    CU_ASSERT_EQUAL(p.cur_size, 1000);
    CU_ASSERT_EQUAL(p.max_size, 5000);
    CU_ASSERT_EQUAL_FATAL(ibp_load(c, caps.read, 0, 1000, back), IBP_OK);
    CU_ASSERT(memcmp(back, data, 1000) == 0);
    CU_ASSERT_EQUAL(ibp_truncate(c, caps.manage, 1ULL << 50), IBP_E_WOULD_EXCEED_LIMIT);
    CU_ASSERT_EQUAL(ibp_truncate(c, caps.read, 0), IBP_E_INVALID_MANAGE_CAP);
    ibp_client_free(c);
}

/* ---- status ---- */

static void do_status(int v)
{
    ibp_client_t *c = client(v);
    ibp_depot_status_t s;
    ibp_caps_t caps;

    CU_ASSERT_EQUAL_FATAL(alloc(c, &dB, 3 * MiB, 600, IBP_HARD, &caps), IBP_OK);
    memset(&s, 0xff, sizeof s);
    CU_ASSERT_EQUAL_FATAL(ibp_status(c, "127.0.0.1", dB.port, NULL, NULL, &s), IBP_OK);
    CU_ASSERT_EQUAL(s.hard_total, 64ull * MiB);
    CU_ASSERT_EQUAL(s.soft_total, 64ull * MiB);
    CU_ASSERT(s.hard_used >= 3 * MiB && s.hard_used < 64ull * MiB);
    CU_ASSERT_EQUAL(s.max_duration_s, 3600);
    CU_ASSERT_STRING_EQUAL(s.rid, "0");
    if (v == 1) {
        CU_ASSERT(s.allocations >= 1);
        CU_ASSERT(s.version[0] != 0);
    }
    /* twice more: version 0 STATUS closes its connection, version 1 keeps it */
    CU_ASSERT_EQUAL(ibp_status(c, "127.0.0.1", dB.port, "0", "anything", &s), IBP_OK);
    CU_ASSERT_EQUAL(ibp_status(c, "127.0.0.1", dB.port, NULL, NULL, &s), IBP_OK);
    if (v == 1)
        CU_ASSERT_EQUAL(ibp_status(c, "127.0.0.1", dB.port, "7", NULL, &s), IBP_E_INVALID_RID);
    CU_ASSERT_EQUAL(ibp_status(c, "127.0.0.1", dB.port, "bad rid", NULL, &s), IBP_E_INVALID_RID);
    CU_ASSERT_EQUAL(ibp_status(c, NULL, dB.port, NULL, NULL, &s), IBP_E_INV_PAR_HOST);
    CU_ASSERT_EQUAL(ibp_status(c, "127.0.0.1", 0, NULL, NULL, &s), IBP_E_INV_PAR_PORT);
    ibp_client_free(c);
}

static void do_status_change(int v)
{
    ibp_client_t *c = client(v);
    ibp_depot_status_t s;

    CU_ASSERT_EQUAL(ibp_status_change(c, "127.0.0.1", dA.port, NULL, "wrong", 100 * MiB, 0, 0, &s),
                    IBP_E_WRONG_PASSWD);
    /* the depot without a password refuses every password */
    CU_ASSERT_EQUAL(ibp_status_change(c, "127.0.0.1", dB.port, NULL, "pw", 100 * MiB, 0, 0, &s),
                    IBP_E_WRONG_PASSWD);
    CU_ASSERT_EQUAL_FATAL(ibp_status(c, "127.0.0.1", dA.port, NULL, NULL, &s), IBP_OK);
    CU_ASSERT_EQUAL(s.hard_total, 64ull * MiB);

    memset(&s, 0, sizeof s);
    /* version 0 counts the duration in days (LoCI 1.3.1), rounded up */
    int64_t d1 = v == 0 ? 86400 : 1800, d2 = v == 0 ? 2 * 86400 : 3600;
    CU_ASSERT_EQUAL(ibp_status_change(c, "127.0.0.1", dA.port, NULL, "pw", 100 * MiB, 80 * MiB,
                                      v == 0 ? 1800 : d1, &s), IBP_OK);
    CU_ASSERT_EQUAL(s.hard_total, 100ull * MiB);
    CU_ASSERT_EQUAL(s.soft_total, 80ull * MiB);
    CU_ASSERT_EQUAL(s.max_duration_s, d1);
    /* 0 leaves a setting alone */
    CU_ASSERT_EQUAL(ibp_status_change(c, "127.0.0.1", dA.port, NULL, "pw", 0, 0, d2, &s), IBP_OK);
    CU_ASSERT_EQUAL(s.hard_total, 100ull * MiB);
    CU_ASSERT_EQUAL(s.max_duration_s, d2);
    CU_ASSERT_EQUAL(ibp_status_change(c, "127.0.0.1", dA.port, NULL, "pw", 64 * MiB, 64 * MiB, 0,
                                      NULL), IBP_OK);
    CU_ASSERT_EQUAL_FATAL(ibp_status(c, "127.0.0.1", dA.port, NULL, NULL, &s), IBP_OK);
    CU_ASSERT_EQUAL(s.hard_total, 64ull * MiB);
    CU_ASSERT_EQUAL(s.soft_total, 64ull * MiB);
    CU_ASSERT_EQUAL(s.max_duration_s, d2);
    /* the connection is still good after the refused change */
    CU_ASSERT_EQUAL(ibp_status(c, "127.0.0.1", dA.port, NULL, NULL, &s), IBP_OK);
    ibp_client_free(c);
    /* the later tests want the hour the depot started with, which version 0 cannot say */
    c = client(1);
    CU_ASSERT_EQUAL(ibp_status_change(c, "127.0.0.1", dA.port, NULL, "pw", 0, 0, 3600, NULL),
                    IBP_OK);
    ibp_client_free(c);
}

/* ---- errors from the depot and from local checks ---- */

static void do_errors(int v)
{
    ibp_client_t *c = client(v);
    ibp_caps_t caps;
    ibp_probe_t p;
    char buf[100];
    uint64_t done = 7;

    CU_ASSERT_EQUAL_FATAL(alloc(c, &dA, 100, 600, IBP_HARD, &caps), IBP_OK);
    CU_ASSERT_EQUAL(ibp_store(c, caps.write, "0123456789", 10, NULL), IBP_OK);
    /* LOAD beyond the end */
    if (v == 0) {
        /* version 0 waits for the missing byte as LoCI 1.3.1 does (here 1 s), then the depot
         * sends the 5 there are, which ibp_load (it wants 6) refuses */
        ibp_client_opts_t o;
        ibp_client_opts_init(&o);
        o.version = 0;
        o.server_timeout_s = 1;
        ibp_client_t *c1 = ibp_client_new(&o);
        CU_ASSERT_NOT_EQUAL(ibp_load(c1, caps.read, 5, 6, buf), IBP_OK);
        ibp_client_free(c1);
    } else {
        CU_ASSERT_EQUAL(ibp_load(c, caps.read, 5, 6, buf), IBP_E_INVALID_PARAMETER);
    }
    CU_ASSERT_EQUAL(ibp_load(c, caps.read, 11, 0, buf), IBP_E_INVALID_PARAMETER);
    /* the pool is still in step after an error */
    CU_ASSERT_EQUAL(ibp_load(c, caps.read, 5, 5, buf), IBP_OK);
    CU_ASSERT(memcmp(buf, "56789", 5) == 0);
    /* STORE beyond the maximum size */
    CU_ASSERT_EQUAL(ibp_store(c, caps.write, buf, 91, &done), IBP_E_WOULD_EXCEED_LIMIT);
    CU_ASSERT_EQUAL(done, 0);
    CU_ASSERT_EQUAL(ibp_store(c, caps.write, buf, 90, &done), IBP_OK);
    CU_ASSERT_EQUAL(done, 90);
    /* A refused STORE whose 64 KiB were sent behind the request line (pipelined) still
     * gets the depot's own error, not a reset, ten times over; and the allocation is intact. */
    {
        char *big = calloc(1, 64 * 1024);
        for (int i = 0; i < 10; i++)
            CU_ASSERT_EQUAL(ibp_store(c, caps.write, big, 64 * 1024, NULL),
                            IBP_E_WOULD_EXCEED_LIMIT);
        free(big);
        CU_ASSERT_EQUAL(ibp_load(c, caps.read, 0, 10, buf), IBP_OK);
        CU_ASSERT(memcmp(buf, "0123456789", 10) == 0);
    }
    /* capacity of the depot (64M hard) */
    CU_ASSERT_EQUAL(alloc(c, &dA, 65 * MiB, 600, IBP_HARD, &caps), IBP_E_WOULD_EXCEED_LIMIT);
    /* attributes out of range */
    CU_ASSERT_EQUAL(alloc(c, &dA, 0, 600, IBP_HARD, &caps), IBP_E_INV_PAR_SIZE);
    CU_ASSERT_EQUAL(alloc(c, &dA, 10, 0, IBP_HARD, &caps), IBP_E_INV_PAR_ATDR);
    CU_ASSERT_EQUAL(alloc(c, &dA, 10, 7200, IBP_HARD, &caps), IBP_E_LONG_DURATION);
    CU_ASSERT_EQUAL(alloc(c, &dA, 10, 60, 3, &caps), IBP_E_INV_PAR_ATRL);
    if (v == 1) {
        ibp_attr_t a = {10, 60, IBP_HARD, IBP_BYTEARRAY};
        CU_ASSERT_EQUAL(ibp_allocate(c, "127.0.0.1", dA.port, "9", &a, &caps), IBP_E_INVALID_RID);
    }
    /* a capability whose key was tampered with */
    CU_ASSERT_EQUAL_FATAL(alloc(c, &dA, 100, 600, IBP_HARD, &caps), IBP_OK);
    ibp_cap_t cap;
    char forged[IBP_MAX_CAP];
    CU_ASSERT_EQUAL_FATAL(ibp_cap_parse(caps.read, &cap), IBP_OK);
    cap.key[20] = cap.key[20] == 'a' ? 'b' : 'a';
    CU_ASSERT_EQUAL_FATAL(ibp_cap_format(&cap, forged, sizeof forged), IBP_OK);
    CU_ASSERT_EQUAL(ibp_probe(c, forged, &p), IBP_E_CAP_NOT_FOUND);
    /* local refusals */
    CU_ASSERT_EQUAL(ibp_store(c, caps.read, "x", 1, NULL), IBP_E_INVALID_WRITE_CAP);
    CU_ASSERT_EQUAL(ibp_store(c, caps.manage, "x", 1, NULL), IBP_E_INVALID_WRITE_CAP);
    CU_ASSERT_EQUAL(ibp_load(c, caps.write, 0, 1, buf), IBP_E_INVALID_READ_CAP);
    CU_ASSERT_EQUAL(ibp_load_fd(c, caps.manage, 0, 1, 1), IBP_E_INVALID_READ_CAP);
    CU_ASSERT_EQUAL(ibp_decr(c, caps.write, IBP_READCAP), IBP_E_INVALID_MANAGE_CAP);
    CU_ASSERT_EQUAL(ibp_store(c, NULL, "x", 1, NULL), IBP_E_WRONG_CAP_FORMAT);
    CU_ASSERT_EQUAL(ibp_load(c, "not a cap", 0, 1, buf), IBP_E_WRONG_CAP_FORMAT);
    CU_ASSERT_EQUAL(ibp_probe(c, "ibp://127.0.0.1:6714/0#k/1/READ ", &p), IBP_E_WRONG_CAP_FORMAT);
    CU_ASSERT_EQUAL(ibp_store(c, caps.write, NULL, 1, NULL), IBP_E_INV_PAR_PTR);
    CU_ASSERT_EQUAL(ibp_allocate(c, "127.0.0.1", dA.port, NULL, NULL, &caps), IBP_E_INV_PAR_PTR);
    /* an allocation that expired: on a depot of its own whose clock the test moves
     * (LNS_TEST_CLOCK_FILE), so no busy machine ends the lease before the STORE */
    char clock[PATH_MAX];
    test_depot_t dx;
    CU_ASSERT_EQUAL_FATAL(td_start_clocked(&dx, NULL, clock), 0);
    CU_ASSERT_EQUAL_FATAL(alloc(c, &dx, 100, 600, IBP_HARD, &caps), IBP_OK);
    CU_ASSERT_EQUAL(ibp_store(c, caps.write, "abc", 3, NULL), IBP_OK);
    CU_ASSERT_EQUAL(ibp_probe(c, caps.manage, &p), IBP_OK);
    td_clock_set(clock, 601);
    CU_ASSERT_EQUAL(ibp_probe(c, caps.manage, &p), IBP_E_CAP_NOT_FOUND);
    CU_ASSERT_EQUAL(ibp_load(c, caps.read, 0, 3, buf), IBP_E_CAP_NOT_FOUND);
    CU_ASSERT_EQUAL(ibp_store(c, caps.write, "abc", 3, NULL), IBP_E_CAP_NOT_FOUND);
    lns_test_server_finish(&dx.srv);
    /* nobody listening */
    CU_ASSERT_EQUAL(ibp_status(c, "127.0.0.1", 1, NULL, NULL, &(ibp_depot_status_t){0}),
                    IBP_E_CONNECTION);
    ibp_client_free(c);
}

/* ---- alias capabilities (ACCRE's requests 14 and 15; version 1 only) ---- */

static void do_alias(int v)
{
    ibp_client_t *c = client(v);
    ibp_caps_t m, m2, a, whole;
    ibp_alias_probe_t ap;
    ibp_probe_t p;
    char buf[64];
    CU_ASSERT_EQUAL_FATAL(alloc(c, &dA, 100, 600, IBP_HARD, &m), IBP_OK);
    CU_ASSERT_EQUAL_FATAL(ibp_store(c, m.write, "0123456789abcdefghij", 20, NULL), IBP_OK);
    if (v == 0) { /* no alias in version 0: refused before anything is sent */
        CU_ASSERT_EQUAL(ibp_alias_allocate(c, m.manage, 0, 0, 0, &a), IBP_E_INVALID_CMD);
        ibp_client_free(c);
        return;
    }
    /* local checks: the master's manage capability, a range that does not overflow */
    CU_ASSERT_EQUAL(ibp_alias_allocate(c, m.read, 0, 5, 0, &a), IBP_E_INVALID_MANAGE_CAP);
    CU_ASSERT_EQUAL(ibp_alias_allocate(c, m.manage, UINT64_MAX, 5, 0, &a), IBP_E_INV_PAR_SIZE);
    CU_ASSERT_EQUAL(ibp_alias_allocate(c, m.manage, 0, 5, 0, NULL), IBP_E_INV_PAR_PTR);
    /* bytes 5..15 of the master: offsets through the alias start at its range */
    CU_ASSERT_EQUAL_FATAL(ibp_alias_allocate(c, m.manage, 5, 10, 0, &a), IBP_OK);
    CU_ASSERT_EQUAL(ibp_load(c, a.read, 0, 10, buf), IBP_OK);
    CU_ASSERT_EQUAL(memcmp(buf, "56789abcde", 10), 0);
    CU_ASSERT_EQUAL(ibp_load(c, a.read, 5, 6, buf), IBP_E_WOULD_EXCEED_LIMIT);
    CU_ASSERT_EQUAL(ibp_alias_probe(c, a.manage, &ap), IBP_OK);
    CU_ASSERT_EQUAL(ap.offset, 5);
    CU_ASSERT_EQUAL(ap.length, 10);
    CU_ASSERT_EQUAL(ap.read_refs, 1);
    CU_ASSERT(ap.seconds_left > 500 && ap.seconds_left <= 600);
    /* an allocation's manage capability is not an alias's */
    CU_ASSERT_EQUAL(ibp_alias_probe(c, m.manage, &ap), IBP_E_INVALID_CMD);
    CU_ASSERT_EQUAL(ibp_alias_probe(c, a.read, &ap), IBP_E_INVALID_MANAGE_CAP);
    /* CHNG: a new range and a shorter life */
    CU_ASSERT_EQUAL(ibp_alias_change(c, a.manage, m.manage, 2, 3, 100), IBP_OK);
    CU_ASSERT_EQUAL(ibp_alias_probe(c, a.manage, &ap), IBP_OK);
    CU_ASSERT_EQUAL(ap.offset, 2);
    CU_ASSERT_EQUAL(ap.length, 3);
    CU_ASSERT(ap.seconds_left > 50 && ap.seconds_left <= 100);
    CU_ASSERT_EQUAL(ibp_load(c, a.read, 0, 3, buf), IBP_OK);
    CU_ASSERT_EQUAL(memcmp(buf, "234", 3), 0);
    /* INCR/DECR need the master's manage capability, not another allocation's */
    CU_ASSERT_EQUAL_FATAL(alloc(c, &dA, 10, 600, IBP_HARD, &m2), IBP_OK);
    CU_ASSERT_EQUAL(ibp_alias_incr(c, a.manage, m2.manage, IBP_READCAP), IBP_E_INVALID_MANAGE_CAP);
    CU_ASSERT_EQUAL(ibp_alias_revoke(c, a.manage, m2.manage), IBP_E_INVALID_MANAGE_CAP);
    CU_ASSERT_EQUAL(ibp_alias_incr(c, a.manage, m.manage, IBP_READCAP), IBP_OK);
    CU_ASSERT_EQUAL(ibp_alias_probe(c, a.manage, &ap), IBP_OK);
    CU_ASSERT_EQUAL(ap.read_refs, 2);
    /* revoke: gone however many references it had; the master stays */
    CU_ASSERT_EQUAL(ibp_alias_revoke(c, a.manage, m.manage), IBP_OK);
    CU_ASSERT_EQUAL(ibp_load(c, a.read, 0, 3, buf), IBP_E_CAP_NOT_FOUND);
    CU_ASSERT_EQUAL(ibp_alias_probe(c, a.manage, &ap), IBP_E_CAP_NOT_FOUND);
    CU_ASSERT_EQUAL(ibp_alias_revoke(c, a.manage, m.manage), IBP_E_CAP_NOT_FOUND);
    CU_ASSERT_EQUAL(ibp_load(c, m.read, 0, 20, buf), IBP_OK);
    /* a whole-allocation alias appends; the master freed, its aliases answer -4 */
    CU_ASSERT_EQUAL_FATAL(ibp_alias_allocate(c, m.manage, 0, 0, 0, &whole), IBP_OK);
    CU_ASSERT_EQUAL(ibp_store(c, whole.write, "KL", 2, NULL), IBP_OK);
    CU_ASSERT_EQUAL(ibp_probe(c, m.manage, &p), IBP_OK);
    CU_ASSERT_EQUAL(p.cur_size, 22);
    CU_ASSERT_EQUAL(ibp_alias_allocate(c, m.manage, 0, 101, 0, &a), IBP_E_WOULD_EXCEED_LIMIT);
    CU_ASSERT_EQUAL(ibp_alias_allocate(c, m.manage, 0, 0, 700, &a), IBP_E_LONG_DURATION);
    CU_ASSERT_EQUAL(ibp_alias_allocate(c, whole.manage, 0, 0, 0, &a), IBP_E_INVALID_CMD);
    CU_ASSERT_EQUAL(ibp_decr(c, m.manage, IBP_READCAP), IBP_OK);
    CU_ASSERT_EQUAL(ibp_load(c, whole.read, 0, 2, buf), IBP_E_CAP_NOT_FOUND);
    CU_ASSERT_EQUAL(ibp_decr(c, m2.manage, IBP_READCAP), IBP_OK);
    ibp_client_free(c);
}

/* VEC_READ: three ranges of an allocation (one empty) in one request, as LOADs give them;
 * a version-0 client is told INVALID_CMD without a word to the depot; bad ranges refused
 * before it. */
static void do_load_ranges(int version)
{
    ibp_client_t *c = client(version);
    ibp_caps_t caps;
    unsigned char data[100000], got[100000], want[100000];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (unsigned char)(i * 7 + 3);
    CU_ASSERT_EQUAL_FATAL(alloc(c, &dA, sizeof data, 600, IBP_HARD, &caps), IBP_OK);
    CU_ASSERT_EQUAL_FATAL(ibp_store(c, caps.write, data, sizeof data, NULL), IBP_OK);
    ibp_range_t r[3] = {{90000, 5000}, {7, 0}, {100, 20000}};
    int rc = ibp_load_ranges(c, caps.read, r, 3, got);
    if (version == 0) {
        CU_ASSERT_EQUAL(rc, IBP_E_INVALID_CMD);
    } else {
        CU_ASSERT_EQUAL(rc, IBP_OK);
        memcpy(want, data + 90000, 5000);
        memcpy(want + 5000, data + 100, 20000);
        CU_ASSERT_EQUAL(memcmp(got, want, 25000), 0);
        /* past the end: the depot's error, and the connection still good for a LOAD */
        ibp_range_t past[2] = {{0, 10}, {99990, 20}};
        CU_ASSERT_NOT_EQUAL(ibp_load_ranges(c, caps.read, past, 2, got), IBP_OK);
        CU_ASSERT_EQUAL(ibp_load(c, caps.read, 10, 10, got), IBP_OK);
        CU_ASSERT_EQUAL(memcmp(got, data + 10, 10), 0);
    }
    CU_ASSERT_EQUAL(ibp_load_ranges(c, caps.read, r, 0, got), IBP_E_INVALID_PARAMETER);
    CU_ASSERT_EQUAL(ibp_load_ranges(c, caps.read, r, 17, got), IBP_E_INVALID_PARAMETER);
    ibp_range_t wrap = {UINT64_MAX - 5, 10};
    CU_ASSERT_EQUAL(ibp_load_ranges(c, caps.read, &wrap, 1, got), IBP_E_INV_PAR_SIZE);
    CU_ASSERT_EQUAL(ibp_decr(c, caps.manage, IBP_READCAP), IBP_OK);
    ibp_client_free(c);
}

/* ---- an abort that broke a handshake leaves nothing to shut down ---------------------------- */

typedef struct {
    ibp_loader_t *l;
    const char *cap;
    int rc;
} start_arg_t;

static void *start_thread(void *arg)
{
    start_arg_t *a = arg;
    a->rc = ibp_loader_start(a->l, a->cap, 0, 4);
    return NULL;
}

/* 1 once this process has a socket connected to port. */
static int connected_to(int port)
{
    for (int fd = 3; fd < 1024; fd++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0 && ss.ss_family == AF_INET &&
            ntohs(((struct sockaddr_in *)&ss)->sin_port) == port)
            return 1;
    }
    return 0;
}

/* A LOAD aborted during its TLS handshake (the depot stopped: the kernel accepts, nothing
 * answers) fails, and a second ibp_loader_abort reaches no socket: not the one that took the
 * closed connection's number.  It did (issue 39): the socket stayed attached to the abort
 * after the failed handshake closed it, and lors_serve's engine, aborting a loser twice,
 * shut down a client's HTTP connection before its answer (EOF, no byte). */
static void do_abort_reuse(int version)
{
    ibp_client_opts_t o;
    ibp_client_opts_init(&o);
    o.version = version;
    o.io_timeout_ms = 20000;
    o.max_idle_per_depot = 0; /* a fresh connection, and its handshake, for the LOAD */
    o.tls = IBP_TLS_REQUIRE;  /* sealed to the depot's pin, whatever this process learned */
    ibp_client_t *c = ibp_client_new(&o);
    ibp_caps_t caps;
    ibp_depot_status_t st;
    ibp_client_t *c1 = client(1);
    CU_ASSERT_EQUAL_FATAL(ibp_status(c1, "127.0.0.1", dB.port, NULL, NULL, &st), IBP_OK);
    ibp_client_free(c1);
    CU_ASSERT_FATAL(st.pin[0] != '\0');
    CU_ASSERT_EQUAL_FATAL(ibp_tls_pin("127.0.0.1", dB.port, st.pin), IBP_OK);
    CU_ASSERT_EQUAL_FATAL(alloc(c, &dB, 100, 600, IBP_HARD, &caps), IBP_OK);
    CU_ASSERT_EQUAL_FATAL(ibp_store(c, caps.write, "abcd", 4, NULL), IBP_OK);
    CU_ASSERT_EQUAL_FATAL(lns_test_server_kill(&dB.srv, SIGSTOP), 0);
    ibp_loader_t *l = ibp_loader_new(c);
    start_arg_t a = {l, caps.read, IBP_OK};
    pthread_t th;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, start_thread, &a), 0);
    for (int64_t end = lns_test_deadline(LNS_TEST_WAIT_MS);
         !connected_to(dB.port) && lns_test_poll(end);)
        ;
    CU_ASSERT(connected_to(dB.port));
    ibp_loader_abort(l);
    pthread_join(th, NULL);
    CU_ASSERT_NOT_EQUAL(a.rc, IBP_OK);
    int sp[2];
    CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
    ibp_loader_abort(l); /* again: the engine's stop after its cancel */
    char ch = 'x', got[2] = {0};
    CU_ASSERT_EQUAL(send(sp[0], &ch, 1, MSG_NOSIGNAL), 1);
    CU_ASSERT_EQUAL(send(sp[1], &ch, 1, MSG_NOSIGNAL), 1);
    CU_ASSERT_EQUAL(recv(sp[0], got, 1, MSG_DONTWAIT), 1);
    CU_ASSERT_EQUAL(recv(sp[1], got + 1, 1, MSG_DONTWAIT), 1);
    close(sp[0]);
    close(sp[1]);
    ibp_loader_free(l);
    CU_ASSERT_EQUAL(lns_test_server_kill(&dB.srv, SIGCONT), 0);
    CU_ASSERT_EQUAL(ibp_decr(c, caps.manage, IBP_READCAP), IBP_OK);
    ibp_client_free(c);
}

#define BOTH(fn)                                                                             \
    static void fn##_v0(void) { do_##fn(0); }                                                \
    static void fn##_v1(void) { do_##fn(1); }

BOTH(allocate_probe)
BOTH(store_load)
BOTH(write)
BOTH(send)
BOTH(refcounts)
BOTH(change)
BOTH(status)
BOTH(status_change)
BOTH(errors)
BOTH(alias)
BOTH(abort_reuse)
BOTH(load_ranges)

void lns_test_register(void)
{
    static const struct {
        const char *name;
        void (*v0)(void), (*v1)(void);
    } tests[] = {
        {"allocate, probe", allocate_probe_v0, allocate_probe_v1},
        {"store, store_fd, store_file, load, load_fd", store_load_v0, store_load_v1},
        {"write", write_v0, write_v1},
        {"send between depots", send_v0, send_v1},
        {"incr, decr, decr to free", refcounts_v0, refcounts_v1},
        {"change, truncate", change_v0, change_v1},
        {"status", status_v0, status_v1},
        {"status change", status_change_v0, status_change_v1},
        {"depot errors and local checks", errors_v0, errors_v1},
        {"alias allocate, probe, change, revoke", alias_v0, alias_v1},
        {"an abort that broke a handshake reaches no later socket", abort_reuse_v0,
         abort_reuse_v1},
        {"load_ranges: VEC_READ in one request", load_ranges_v0, load_ranges_v1},
    };
    /* the depots outlive the first suite; the second one stops them */
    CU_pSuite s0 = CU_add_suite("libibp version 0", suite_init, NULL);
    CU_pSuite s1 = CU_add_suite("libibp version 1", suite_depots_up, suite_clean);
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        CU_add_test(s0, tests[i].name, tests[i].v0);
        CU_add_test(s1, tests[i].name, tests[i].v1);
    }
}
