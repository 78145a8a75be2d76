/* test_lors_mount.c -- lors_mount on real depots through the real kernel FUSE: the mounted
 * directory lists the exNodes' names with their sizes; cmp of a mounted file against its
 * source; 1,000 preads at random offsets; mmap; --direct-io (shared mmap refused); tar tf of a mounted tarball; writes refused; a depot
 * SIGKILLed during reads costs nothing; a reader blocked on a SIGSTOPped depot gets EIO
 * within a few timeouts, with a log line naming the bytes, and fusermount3 -u then unmounts and
 * the program exits 0; started without -f it detaches once mounted; 5,000 exNodes listed twice
 * leave the table of parsed exNodes at its bound; ls -l takes plain exNodes' sizes from a scan
 * (none parsed) and parses the others (compressed, without "size", broken) as before.
 *
 * Without /dev/fuse or fusermount3 (Debian fuse3) nothing can be mounted: the program
 * registers no test and prints a "SKIP" line. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lns_time.h"
#include "lors.h"
#include "test_tools.h"

#define ND 4

static tt_env_t T;
static tt_bg_t mnt_bg;
static char dir[4096], mnt[4096], logp[4200];

/* fusermount3 -u -z at exit, before the tracked programs are killed: a mount whose program
 * died would be left behind "not connected". */
static void lazy_unmount(void)
{
    char cmd[4200];
    if (!mnt[0])
        return;
    snprintf(cmd, sizeof cmd, "fusermount3 -u -z '%s' 2>/dev/null", mnt);
    if (system(cmd) != 0) { /* not mounted: nothing to do */
    }
}

/* 1 once mnt is a FUSE mount (its device differs from its parent's), polling up to ms. */
static int mounted(int ms)
{
    char parent[4200];
    snprintf(parent, sizeof parent, "%s/..", mnt);
    int64_t end = lns_test_deadline(ms);
    do {
        struct stat a, b;
        if (stat(mnt, &a) == 0 && stat(parent, &b) == 0 && a.st_dev != b.st_dev)
            return 1;
    } while (lns_test_poll(end));
    return 0;
}

/* lors_mount -f of dir on mnt, with extra flags (up to 2); 0 once mounted. */
static int start_mount(const char *a1, const char *a2)
{
    static int registered;
    if (!registered++)
        atexit(lazy_unmount);
    snprintf(mnt, sizeof mnt, "%s/mnt", lns_test_tmpdir());
    snprintf(logp, sizeof logp, "%s/mount.log", lns_test_tmpdir());
    mkdir(mnt, 0755);
    unlink(logp);
    if (tt_spawn(&T, &mnt_bg, "lors_mount", "--no-rc", "-f", "--log", logp, dir, mnt, a1, a2,
                 (char *)NULL) != 0)
        return -1;
    return mounted(LNS_TEST_WAIT_MS) ? 0 : -1;
}

/* fusermount3 -u, retried while busy for up to ms; then lors_mount's exit code. */
static int stop_mount(int ms)
{
    int rc = -1;
    for (int i = 0; i <= ms / 50 && rc != 0; i++) {
        rc = tt_sh(&T, "fusermount3 -u '%s' 2>&1", mnt);
        if (rc != 0)
            usleep(50000);
    }
    if (rc != 0)
        fprintf(stderr, "fusermount3 -u: %s\n", T.out);
    rc = tt_wait(&T, &mnt_bg, 5000);
    CU_ASSERT_PTR_NULL(strstr(T.err, "Sanitizer")); /* under make test's ASan build: no report */
    if (strstr(T.err, "Sanitizer"))
        fprintf(stderr, "lors_mount: %s\n", T.err);
    return rc;
}

/* A file of n bytes uploaded into dir as NAME.xnd; its source path in src. */
static void put_file(const char *name, size_t n, uint64_t seed, int copies, const char *depots,
                     char *src)
{
    char xnd[4096], dst[8400];
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, n, seed, copies, 4, depots, NULL, src, xnd), 0);
    snprintf(dst, sizeof dst, "%s/%s.xnd", dir, name);
    CU_ASSERT_EQUAL_FATAL(rename(xnd, dst), 0);
}

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t next_rand(void)
{
    return lns_test_rand(&rng);
}

static void test_files(void)
{
    char src[4096], tarsrc[4096], path[8400];
    tt_revive(&T);
    snprintf(dir, sizeof dir, "%s/mounted", lns_test_tmpdir());
    mkdir(dir, 0755);
    put_file("data.bin", 9 * 1024 * 1024 + 4321, 31, 2, T.depots, src);
    /* a tarball of a few files, uploaded as any file */
    CU_ASSERT_EQUAL_FATAL(tt_sh(&T, "cd $D && mkdir -p tree/sub && head -c 300000 /dev/urandom "
                                    "> tree/a && echo hello > tree/sub/b && head -c 2000000 "
                                    "/dev/urandom > tree/sub/c && tar cf tree.tar tree && "
                                    "tar tf tree.tar > tree.list"), 0);
    char xnd[8400];
    snprintf(tarsrc, sizeof tarsrc, "%s/tree.tar", lns_test_tmpdir());
    snprintf(xnd, sizeof xnd, "%s/tree.tar.xnd", dir);
    CU_ASSERT_EQUAL_FATAL(tt_run(&T, NULL, NULL, "lors_upload", "--no-rc", "-q", "-d", "10m",
                                 "-c", "2", "--depot-list", T.depots, "-o", xnd, tarsrc,
                                 (char *)NULL), 0);
    CU_ASSERT_EQUAL_FATAL(start_mount(NULL, NULL), 0);

    /* the listing: names and sizes */
    CU_ASSERT_EQUAL(tt_sh(&T, "ls '%s'", mnt), 0);
    CU_ASSERT_STRING_EQUAL(T.out, "data.bin\ntree.tar\n");
    struct stat st;
    snprintf(path, sizeof path, "%s/data.bin", mnt);
    CU_ASSERT_EQUAL(stat(path, &st), 0);
    CU_ASSERT_EQUAL(st.st_size, 9 * 1024 * 1024 + 4321);
    CU_ASSERT(S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0444);

    /* the whole file, then 1,000 preads at random offsets */
    CU_ASSERT_EQUAL(tt_sh(&T, "cmp '%s' '%s'", path, src), 0);
    size_t size;
    unsigned char *data = tt_read_whole(src, &size);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    int fd = open(path, O_RDONLY);
    CU_ASSERT_FATAL(fd >= 0);
    unsigned char buf[70000];
    int bad = 0;
    for (int i = 0; i < 1000 && bad < 3; i++) {
        off_t off = (off_t)(next_rand() % (size + 100));
        size_t len = 1 + (size_t)(next_rand() % sizeof buf);
        ssize_t got = pread(fd, buf, len, off);
        ssize_t want = off >= (off_t)size ? 0
                       : (off_t)(size - (size_t)off) < (off_t)len ? (ssize_t)(size - (size_t)off)
                                                                  : (ssize_t)len;
        if (got != want || (want > 0 && memcmp(buf, data + off, (size_t)want) != 0)) {
            fprintf(stderr, "pread %zu at %lld: %zd of %zd\n", len, (long long)off, got, want);
            bad++;
        }
    }
    CU_ASSERT_EQUAL(bad, 0);
    /* through the page cache: mmap works */
    unsigned char *mp = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    CU_ASSERT_FATAL(mp != MAP_FAILED);
    CU_ASSERT_EQUAL(memcmp(mp + 5000000, data + 5000000, 100000), 0);
    munmap(mp, size);
    close(fd);
    free(data);

    /* tar reads the mounted tarball as any file */
    CU_ASSERT_EQUAL(tt_sh(&T, "tar tf '%s/tree.tar' | cmp - $D/tree.list", mnt), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "cd $D && mkdir -p x && tar xf '%s/tree.tar' -C x && "
                              "diff -r tree x/tree", mnt), 0);

    /* read-only; no such name */
    errno = 0;
    CU_ASSERT_EQUAL(open(path, O_WRONLY), -1);
    CU_ASSERT(errno == EROFS || errno == EACCES);
    snprintf(path, sizeof path, "%s/new", mnt);
    errno = 0;
    CU_ASSERT_EQUAL(open(path, O_WRONLY | O_CREAT, 0644), -1);
    CU_ASSERT(errno == EROFS || errno == EACCES);
    snprintf(path, sizeof path, "%s/nothing", mnt);
    errno = 0;
    CU_ASSERT_EQUAL(open(path, O_RDONLY), -1);
    CU_ASSERT_EQUAL(errno, ENOENT);

    CU_ASSERT_EQUAL(stop_mount(3000), 0);
    CU_ASSERT(!mounted(0));
}

/* Two copies: a depot SIGKILLed while a reader goes through the file costs it nothing. */
static void test_depot_killed(void)
{
    char src[4096];
    tt_revive(&T);
    snprintf(dir, sizeof dir, "%s/killed", lns_test_tmpdir());
    mkdir(dir, 0755);
    put_file("big.bin", 24 * 1024 * 1024, 41, 2, tt_dlist(&T, 0, 1, -1), src);
    CU_ASSERT_EQUAL_FATAL(start_mount("--readahead", "4M"), 0);
    char path[8400];
    snprintf(path, sizeof path, "%s/big.bin", mnt);
    size_t size;
    unsigned char *data = tt_read_whole(src, &size);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    int fd = open(path, O_RDONLY);
    CU_ASSERT_FATAL(fd >= 0);
    unsigned char *buf = malloc(128 * 1024);
    int bad = 0;
    for (size_t off = 0; off < size && !bad; off += 128 * 1024) {
        if (off == 6 * 1024 * 1024)
            CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[1].srv, SIGKILL), 0);
        ssize_t got = pread(fd, buf, 128 * 1024, (off_t)off);
        if (got != 128 * 1024 || memcmp(buf, data + off, 128 * 1024) != 0) {
            fprintf(stderr, "read at %zu: %zd (%s)\n", off, got, got < 0 ? strerror(errno) : "");
            bad = 1;
        }
    }
    CU_ASSERT_EQUAL(bad, 0);
    close(fd);
    free(buf);
    free(data);
    CU_ASSERT_EQUAL(stop_mount(3000), 0);
}

/* One copy on a SIGSTOPped depot: a reader blocks, gets EIO within the timeout (the log names
 * the bytes), and fusermount3 -u, retried as a user would while the reader holds the file,
 * unmounts once it is let go; the program exits 0. */
static void test_blocked_reader_unmount(void)
{
    char src[4096];
    tt_revive(&T);
    snprintf(dir, sizeof dir, "%s/stopped", lns_test_tmpdir());
    mkdir(dir, 0755);
    put_file("held.bin", 2 * 1024 * 1024, 51, 1, tt_dlist(&T, 2, -1), src);
    CU_ASSERT_EQUAL_FATAL(start_mount("-T", "2s"), 0);
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[2].srv, SIGSTOP), 0);
    int64_t t0 = lns_mono_ns();
    /* the reader: cat in the background, its status into a file */
    CU_ASSERT_EQUAL(tt_sh(&T, "(cat '%s/held.bin' > /dev/null 2> $D/cat.err; echo $? > "
                              "$D/cat.rc) & sleep 0.3", mnt), 0);
    int rc = stop_mount(10000);
    double secs = (double)(lns_mono_ns() - t0) / 1e9;
    CU_ASSERT_EQUAL(rc, 0);
    /* not forever: each read fails after the engine's two tries of 2 s, and the kernel
     * tries a failed read-ahead again with one page */
    CU_ASSERT(secs < 14.0);
    CU_ASSERT(!mounted(0));
    CU_ASSERT_EQUAL(tt_sh(&T, "sleep 0.2; cat $D/cat.rc $D/cat.err"), 0);
    CU_ASSERT(atoi(T.out) != 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "Input/output error"));
    CU_ASSERT_EQUAL(tt_sh(&T, "cat '%s'", logp), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "held.bin: read of bytes 0-"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "failed (EIO)"));
    if (secs >= 14.0 || !strstr(T.out, "failed (EIO)"))
        fprintf(stderr, "unmounted after %.1f s; log: %s\n", secs, T.out);
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[2].srv, SIGCONT), 0);
}

/* --direct-io: the same bytes, read as asked (no kernel read-ahead); a shared mmap refused,
 * a private one served. */
static void test_direct_io(void)
{
    char src[4096], path[8400];
    tt_revive(&T);
    snprintf(dir, sizeof dir, "%s/direct", lns_test_tmpdir());
    mkdir(dir, 0755);
    put_file("dio.bin", 5 * 1024 * 1024 + 17, 71, 2, T.depots, src);
    CU_ASSERT_EQUAL_FATAL(start_mount("--direct-io", NULL), 0);
    snprintf(path, sizeof path, "%s/dio.bin", mnt);
    CU_ASSERT_EQUAL(tt_sh(&T, "cmp '%s' '%s' && dd if='%s' bs=4k skip=777 count=3 status=none"
                              " > $D/dio.a && dd if='%s' bs=4k skip=777 count=3 status=none > "
                              "$D/dio.b && cmp $D/dio.a $D/dio.b", path, src, path, src), 0);
    int fd = open(path, O_RDONLY);
    CU_ASSERT_FATAL(fd >= 0);
    errno = 0;
    void *mp = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    CU_ASSERT(mp == MAP_FAILED); /* a shared mapping needs the page cache */
    CU_ASSERT_EQUAL(errno, ENODEV);
    if (mp != MAP_FAILED)
        munmap(mp, 4096);
    mp = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 777 * 4096); /* a private one works */
    CU_ASSERT_FATAL(mp != MAP_FAILED);
    CU_ASSERT_EQUAL(tt_sh(&T, "dd if='%s' bs=4k skip=777 count=1 status=none", src), 0);
    CU_ASSERT_EQUAL(memcmp(mp, T.out, 64), 0);
    munmap(mp, 4096);
    close(fd);
    CU_ASSERT_EQUAL(stop_mount(3000), 0);
}

/* 5,000 exNodes (copies of one) listed twice with ls -l: every name with its size, and the
 * table of exNodes kept parsed (statfs's inodes in use, df -i) stays at its bound
 * LORS_DIR_KEEP instead of growing with every file ever looked at (issue 36). */
static void test_many_files(void)
{
    char src[4096];
    enum { NF = 5000 };
    tt_revive(&T);
    snprintf(dir, sizeof dir, "%s/many", lns_test_tmpdir());
    mkdir(dir, 0755);
    put_file("f0", 1000, 81, 1, T.depots, src);
    /* half of them without the "size" metadata: each of those is parsed to be listed (its
     * length is its last mapping's end) and kept, up to the bound */
    CU_ASSERT_EQUAL_FATAL(tt_sh(&T, "cd '%s' && grep -v 'name=\"size\"' f0.xnd > g0.xnd && "
                                    "i=1; while [ $i -lt %d ]; do ln f0.xnd f$i.xnd && "
                                    "ln g0.xnd g$i.xnd || exit 1; i=$((i+1)); done",
                                dir, NF / 2),
                          0);
    CU_ASSERT_EQUAL_FATAL(start_mount(NULL, NULL), 0);
    for (int pass = 0; pass < 2; pass++) {
        CU_ASSERT_EQUAL(tt_sh(&T, "ls -l '%s' | awk '$5 == 1000' | wc -l", mnt), 0);
        CU_ASSERT_EQUAL(atoi(T.out), NF);
        CU_ASSERT_EQUAL(tt_sh(&T, "stat -f -c '%%c %%d' '%s'", mnt), 0);
        long total = -1, nfree = -1;
        CU_ASSERT_EQUAL(sscanf(T.out, "%ld %ld", &total, &nfree), 2);
        CU_ASSERT_EQUAL(total, LORS_DIR_KEEP);
        CU_ASSERT(total - nfree > 0 && total - nfree <= LORS_DIR_KEEP);
    }
    CU_ASSERT_EQUAL(stop_mount(3000), 0);
}

/* Without -f: lors_mount returns once mounted, and runs on until unmounted. */
static void test_detached(void)
{
    char src[4096], path[8400];
    tt_revive(&T);
    snprintf(dir, sizeof dir, "%s/detached", lns_test_tmpdir());
    mkdir(dir, 0755);
    put_file("d.bin", 1000000, 61, 1, T.depots, src);
    snprintf(mnt, sizeof mnt, "%s/mnt", lns_test_tmpdir());
    /* a relative source: resolved before the program leaves its directory */
    char bin[4096];
    CU_ASSERT_PTR_NOT_NULL_FATAL(realpath(lns_test_bindir(), bin));
    CU_ASSERT_EQUAL(tt_sh(&T, "cd '%s/..' && '%s/lors_mount' --no-rc detached '%s' && "
                              "cmp '%s/d.bin' '%s'", dir, bin, mnt, mnt, src), 0);
    CU_ASSERT(mounted(0));
    snprintf(path, sizeof path, "%s/d.bin", mnt);
    CU_ASSERT_EQUAL(tt_sh(&T, "fusermount3 -u '%s'", mnt), 0);
    CU_ASSERT(!mounted(0));
    /* usage: no mount point; a mount point that is not a directory */
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_mount", "--no-rc", dir, (char *)NULL), 2);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_mount", "--no-rc", dir, src, (char *)NULL), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "not a directory"));
}

/* ls -l takes a plain exNode's size from a scan of its bytes, opening none of them; an exNode
 * the scan cannot read plainly is parsed as before: one compressed (lns_e2e: its "size"
 * metadata is the stored length, not the file's), one without "size", one that is not an
 * exNode (ls says so for it, and lists the others).  An exNode replaced by rename shows its
 * new size at the next listing. */
static void test_listing_kinds(void)
{
    char src[4096], zsrc[4096], zxnd[4096], path[8400];
    tt_revive(&T);
    snprintf(dir, sizeof dir, "%s/kinds", lns_test_tmpdir());
    mkdir(dir, 0755);
    put_file("plain", 1000, 91, 1, T.depots, src);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 300000, 92, 1, 2, T.depots, "-z", zsrc, zxnd), 0);
    snprintf(path, sizeof path, "%s/zipped.xnd", dir);
    CU_ASSERT_EQUAL_FATAL(rename(zxnd, path), 0);
    /* its "size" is the stored length (random bytes grow a little compressed), not 300000 */
    CU_ASSERT_EQUAL_FATAL(tt_sh(&T, "cd '%s' && grep 'name=\"size\" type=\"integer\">' "
                                    "zipped.xnd | grep -qv '>300000<' && "
                                    "grep -v 'name=\"size\"' plain.xnd > "
                                    "nosize.xnd && printf '<exnode><oops' > bad.xnd", dir), 0);
    CU_ASSERT_EQUAL_FATAL(start_mount(NULL, NULL), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "ls -l '%s' | awk 'NR > 1 { print $NF, $5 }'", mnt), 0);
    CU_ASSERT_STRING_EQUAL(T.out, "bad ?\nnosize 1000\nplain 1000\nzipped 300000\n");
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "bad': Input/output error"));
    /* parsed and kept: zipped and nosize, not plain (nor bad, which failed) */
    CU_ASSERT_EQUAL(tt_sh(&T, "stat -f -c '%%c %%d' '%s'", mnt), 0);
    long total = -1, nfree = -1;
    CU_ASSERT_EQUAL(sscanf(T.out, "%ld %ld", &total, &nfree), 2);
    CU_ASSERT_EQUAL(total - nfree, 2);
    CU_ASSERT_EQUAL(tt_sh(&T, "cmp '%s/plain' '%s' && cmp '%s/zipped' '%s'", mnt, src, mnt,
                          zsrc), 0);
    /* replaced by rename: the next listing shows the new size */
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 2345, 93, 1, 1, T.depots, NULL, src, zxnd), 0);
    snprintf(path, sizeof path, "%s/plain.xnd", dir);
    CU_ASSERT_EQUAL_FATAL(rename(zxnd, path), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "ls -l '%s' | awk '$NF == \"plain\" { print $5 }'", mnt), 0);
    CU_ASSERT_STRING_EQUAL(T.out, "2345\n");
    CU_ASSERT_EQUAL(tt_sh(&T, "cmp '%s/plain' '%s'", mnt, src), 0);
    CU_ASSERT_EQUAL(stop_mount(3000), 0);
}

static const lns_test_case tests[] = {
    {"ls, cmp, 1000 preads, tar tf, read-only", test_files},
    {"a depot SIGKILLed during reads", test_depot_killed},
    {"a reader blocked on a stopped depot: EIO, then fusermount3 -u", test_blocked_reader_unmount},
    {"--direct-io: the same bytes, shared mmap refused", test_direct_io},
    {"detached once mounted; usage errors", test_detached},
    {"5000 exNodes listed twice: the kept table stays bounded", test_many_files},
    {"ls -l: plain exNodes by a scan, compressed, sizeless, broken ones parsed",
     test_listing_kinds},
};

void lns_test_register(void)
{
    if (access("/dev/fuse", R_OK | W_OK) != 0 ||
        system("command -v fusermount3 >/dev/null 2>&1") != 0) {
        printf("SKIP test_lors_mount: no /dev/fuse or no fusermount3 (scripts/install-deps.sh "
               "installs fuse3); lors_serve is the way in without FUSE\n");
        return;
    }
    tt_add_suite(&T, "lors_mount", ND, tests, sizeof tests / sizeof tests[0]);
}
