/* test_lors_tools.c -- the lors_upload and lors_download programs, run as a user runs them.
 *
 * Four depots live for the whole program.  Each run is a real process of the build's bin/
 * (tests/lib/test_tools.h): tt_run() forks and execs a program with stdin from a file (or
 * /dev/null) and stdout and stderr in files of the test tmpdir; tt_sh() goes through /bin/sh -c
 * for pipelines ("cat f | lors_upload -i", "lors_download x | sha256sum").  Checked: data
 * equality by SHA-256, exit codes, the one-line error format, the rc file, resume, and the
 * event stream.  HOME points at the tmpdir and LNS_RC is unset, so the tester's own ~/.xndrc
 * never leaks in. */
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lns_test.h"
#include "lors.h"
#include "test_lors.h"
#include "test_tools.h"
#include "xnd.h"
#include "lns_version.h"

#define ND 4
#define MIB (1 << 20)

static tt_env_t T;

/* A file of n pseudo-random bytes at tmpdir/name. */
static void make_file(const char *name, size_t n, uint64_t seed)
{
    CU_ASSERT_EQUAL_FATAL(tt_make_file(lns_test_path(name), n, seed), 0);
}
/* SHA-256 of [off, off+len) of a file (len -1: to the end), as hex. */
static void sha_file(const char *path, long off, long len, char hex[65])
{
    unsigned char buf[65536], md[32];
    unsigned int mdl = 0;
    FILE *f = fopen(path, "r");
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    hex[0] = 0;
    if (!f || !c || fseek(f, off, SEEK_SET) != 0) {
        if (f)
            fclose(f);
        EVP_MD_CTX_free(c);
        return;
    }
    EVP_DigestInit_ex(c, EVP_sha256(), NULL);
    for (;;) {
        size_t want = len < 0 || (size_t)len > sizeof buf ? sizeof buf : (size_t)len;
        size_t n = want ? fread(buf, 1, want, f) : 0;
        if (n == 0)
            break;
        EVP_DigestUpdate(c, buf, n);
        if (len >= 0)
            len -= (long)n;
    }
    EVP_DigestFinal_ex(c, md, &mdl);
    for (unsigned int i = 0; i < mdl; i++)
        sprintf(hex + 2 * i, "%02x", md[i]);
    EVP_MD_CTX_free(c);
    fclose(f);
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Upload tmpdir/src to tmpdir/xnd over the fleet; 0 or the exit code (printed). */
static int upload(const char *src, const char *xnd, const char *extra1, const char *extra2)
{
    int rc = tt_run(&T, NULL, NULL, "lors_upload", "--no-rc", "--depot-list", T.depots, "-d", "10m",
                    "-o", lns_test_path(xnd), lns_test_path(src), extra1, extra2, (char *)NULL);
    if (rc != 0)
        fprintf(stderr, "lors_upload: exit %d: %s", rc, T.err);
    return rc;
}

/* ---- tests ----------------------------------------------------------------------------- */

static void test_help_version(void)
{
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_upload", "--help", (char *)NULL), 0);
    CU_ASSERT(strstr(T.out, "Usage: lors_upload") != NULL);
    CU_ASSERT(strstr(T.out, "--depot-list") != NULL);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--help", (char *)NULL), 0);
    CU_ASSERT(strstr(T.out, "Usage: lors_download") != NULL);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--version", (char *)NULL), 0);
    CU_ASSERT_STRING_EQUAL(T.out, "lors_download (lns) " LNS_VERSION "\n");
    /* -a with no key anywhere: exit 7 and one line, before any depot is asked */
    make_file("nokey.bin", 1000, 3);
    CU_ASSERT_EQUAL(tt_sh(&T, "env -u LNS_KEY -u LNS_KEY_FILE \"$B/lors_upload\" --no-rc -a "
                              "--depot-list \"$L\" -o \"$D/nokey.xnd\" \"$D/nokey.bin\""), 7);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "lors_upload: the aes key: "));
    CU_ASSERT_EQUAL(access(lns_test_path("nokey.xnd"), F_OK), -1);
}

static void test_roundtrip(void)
{
    char a[65], b[65];
    make_file("rt.bin", 5 * MIB + 12345, 1);
    /* LoRS spelling: single-dash long options */
    CU_ASSERT_EQUAL_FATAL(upload("rt.bin", "rt.xnd", "-c", "2") , 0);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_upload", "--no-rc", "--depot-list", T.depots, "-d",
                           "10m", "-c", "2", "-F", "3", "-bs", "1M", "-t", "3", "-o",
                           lns_test_path("rt3.xnd"), lns_test_path("rt.bin"), (char *)NULL), 0);
    CU_ASSERT_STRING_EQUAL(T.out, ""); /* silent on success */
    CU_ASSERT_STRING_EQUAL(T.err, "");
    struct stat st;
    CU_ASSERT_EQUAL(stat(lns_test_path("rt3.xnd"), &st), 0);
    CU_ASSERT_EQUAL(st.st_mode & 0777, 0600); /* it holds capabilities */
    xnd_t *x = tt_load(lns_test_path("rt3.xnd"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(x->nmaps, 6); /* 3 fragments x 2 copies */
    CU_ASSERT_EQUAL(xnd_size(x), 5 * MIB + 12345);
    /* BLAKE3 with the outboard after the data: each allocation 2 KiB per MiB longer */
    for (size_t i = 0; i < x->nmaps; i++) {
        int64_t ob = 0;
        CU_ASSERT_PTR_NOT_NULL_FATAL(x->maps[i]->func);
        CU_ASSERT_EQUAL(xnd_meta_get_int(&x->maps[i]->func->args, "outboard", &ob), XND_OK);
        CU_ASSERT_EQUAL(ob, 16384);
        CU_ASSERT(x->maps[i]->alloc_length > x->maps[i]->logical_length);
    }
    xnd_free(x);
    /* --no-outboard: none, the allocations just the data */
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_upload", "--no-rc", "--depot-list", T.depots,
                           "-d", "10m", "--no-outboard", "-o", lns_test_path("rt4.xnd"),
                           lns_test_path("rt.bin"), (char *)NULL), 0);
    x = tt_load(lns_test_path("rt4.xnd"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    for (size_t i = 0; i < x->nmaps; i++) {
        CU_ASSERT_PTR_NULL(xnd_meta_find(&x->maps[i]->func->args, "outboard"));
        CU_ASSERT_EQUAL(x->maps[i]->alloc_length, x->maps[i]->logical_length);
    }
    xnd_free(x);
    tt_free_all(&T, lns_test_path("rt4.xnd"));

    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "-o",
                           lns_test_path("rt.out"), lns_test_path("rt3.xnd"), (char *)NULL), 0);
    CU_ASSERT_STRING_EQUAL(T.err, "");
    sha_file(lns_test_path("rt.bin"), 0, -1, a);
    sha_file(lns_test_path("rt.out"), 0, -1, b);
    CU_ASSERT_STRING_EQUAL(a, b);
    CU_ASSERT_EQUAL(file_size(lns_test_path("rt.out")), 5 * MIB + 12345);
    tt_free_all(&T, lns_test_path("rt.xnd"));
    tt_free_all(&T, lns_test_path("rt3.xnd"));
}

/* -z is zstd, --zlib zlib, --level sets the compressor's level (and is checked); each file
 * says its chain and downloads whole. */
static void test_compress(void)
{
    static const struct { const char *opt, *level, *chain; } c[] = {
        {"-z", NULL, "zstd"}, {"--zlib", NULL, "zlib"}, {"-z", "--level=19", "zstd"},
        {"--zlib", "--level=1", "zlib"}};
    char a[65], b[65];
    long stored[4];
    /* about 1 MB of words of a 3,000-word vocabulary: text on which the levels differ */
    FILE *t = fopen(lns_test_path("z.txt"), "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    uint64_t r = 5;
    for (int i = 0; i < 150000; i++) {
        uint64_t w = (r = r * 6364136223846793005ull + 1442695040888963407ull) >> 33;
        w %= 3000;
        for (uint64_t k = 0, n = 2 + w % 8; k < n; k++, w = w * 31 + 7)
            fputc('a' + (int)(w % 26), t);
        fputc(' ', t);
    }
    CU_ASSERT_EQUAL_FATAL(fclose(t), 0);
    sha_file(lns_test_path("z.txt"), 0, -1, a);
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(upload("z.txt", "z.xnd", c[i].opt, c[i].level), 0);
        xnd_t *x = tt_load(lns_test_path("z.xnd"));
        CU_ASSERT_PTR_NOT_NULL_FATAL(x);
        lors_e2e_info_t info;
        char err[256];
        CU_ASSERT_EQUAL(lors_e2e_info(x, &info, err, sizeof err), LORS_OK);
        CU_ASSERT_STRING_EQUAL(info.chain, c[i].chain);
        CU_ASSERT_EQUAL(info.frame_size, LORS_E2E_PACK_FRAME); /* a compressor's frames */
        stored[i] = (long)xnd_size(x);
        xnd_free(x);
        unlink(lns_test_path("z.out"));
        CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "-o",
                               lns_test_path("z.out"), lns_test_path("z.xnd"), (char *)NULL), 0);
        sha_file(lns_test_path("z.out"), 0, -1, b);
        CU_ASSERT_STRING_EQUAL(a, b);
        unlink(lns_test_path("z.xnd"));
    }
    CU_ASSERT(stored[2] < stored[0]); /* zstd 19 below zstd 3 */
    CU_ASSERT(stored[3] > stored[1]); /* zlib 1 above zlib 6 */
    /* -V says the frames the upload used: a compressor's 4 MiB, or what -E says */
    CU_ASSERT_EQUAL(upload("z.txt", "z.xnd", "-zV", NULL), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "transforms zstd per 4194304 bytes"));
    unlink(lns_test_path("z.xnd"));
    CU_ASSERT_EQUAL(upload("z.txt", "z.xnd", "-zV", "-E64K"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "transforms zstd per 65536 bytes"));
    unlink(lns_test_path("z.xnd"));
    /* out of range, or no compressor: exit 2, one line, nothing stored */
    CU_ASSERT_EQUAL(upload("z.txt", "z.xnd", "-z", "--level=20"), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "zstd takes 1 to 19"));
    CU_ASSERT_EQUAL(upload("z.txt", "z.xnd", "--zlib", "--level=12"), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "zlib takes 1 to 9"));
    CU_ASSERT_EQUAL(upload("z.txt", "z.xnd", "--level=3", NULL), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "no compressor"));
    CU_ASSERT_EQUAL(upload("z.txt", "z.xnd", "-z", "--zlib"), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "one compressor"));
    CU_ASSERT_EQUAL(access(lns_test_path("z.xnd"), F_OK), -1);
}

static void test_stdin_and_stdout_pipes(void)
{
    char a[65], got[65];
    make_file("pipe.bin", 3 * MIB + 777, 2);
    sha_file(lns_test_path("pipe.bin"), 0, -1, a);
    /* a pipe: the length is unknown, fragments of -bs; the exNode goes to stdout */
    CU_ASSERT_EQUAL_FATAL(tt_sh(&T, "cat \"$D/pipe.bin\" | \"$B/lors_upload\" --no-rc "
                                "--depot-list \"$L\" -d 10m -c 2 -bs 1M -i > \"$D/pipe.xnd\""), 0);
    CU_ASSERT_STRING_EQUAL(T.err, "");
    xnd_t *x = tt_load(lns_test_path("pipe.xnd"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(x->nmaps, 8); /* 4 fragments of at most 1 MiB, 2 copies */
    CU_ASSERT_EQUAL(xnd_size(x), 3 * MIB + 777);
    xnd_free(x);
    /* "-" as the file is stdin too */
    CU_ASSERT_EQUAL(tt_sh(&T, "\"$B/lors_upload\" --no-rc --depot-list \"$L\" -d 10m - "
                          "< \"$D/pipe.bin\" > \"$D/pipe2.xnd\""), 0);

    /* the default output is stdout: straight into sha256sum */
    CU_ASSERT_EQUAL(tt_sh(&T, "\"$B/lors_download\" --no-rc \"$D/pipe.xnd\" | sha256sum"), 0);
    CU_ASSERT(sscanf(T.out, "%64s", got) == 1);
    CU_ASSERT_STRING_EQUAL(got, a);
    CU_ASSERT_EQUAL(tt_sh(&T, "\"$B/lors_download\" --no-rc -f - < \"$D/pipe2.xnd\" | sha256sum"),
                    0);
    CU_ASSERT(sscanf(T.out, "%64s", got) == 1);
    CU_ASSERT_STRING_EQUAL(got, a);
    /* a reader that leaves early is a write error (4), not a crash */
    CU_ASSERT_EQUAL(tt_sh(&T,
                          "(\"$B/lors_download\" --no-rc \"$D/pipe.xnd\"; echo $? >\"$D/pipe.rc\")"
                          " | head -c 10 >/dev/null"), 0);
    lns_test_slurp(lns_test_path("pipe.rc"), T.out, sizeof T.out);
    CU_ASSERT_STRING_EQUAL(T.out, "4\n");
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    tt_free_all(&T, lns_test_path("pipe.xnd"));
    tt_free_all(&T, lns_test_path("pipe2.xnd"));
}

static void test_subrange(void)
{
    char a[65], b[65];
    make_file("sub.bin", 4 * MIB + 3, 3);
    CU_ASSERT_EQUAL_FATAL(upload("sub.bin", "sub.xnd", "-c", "2"), 0);
    /* across fragment boundaries, unaligned */
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "-O", "1000", "-L",
                           "3000000", "-o", lns_test_path("sub.out"), lns_test_path("sub.xnd"),
                           (char *)NULL), 0);
    CU_ASSERT_EQUAL(file_size(lns_test_path("sub.out")), 3000000);
    sha_file(lns_test_path("sub.bin"), 1000, 3000000, a);
    sha_file(lns_test_path("sub.out"), 0, -1, b);
    CU_ASSERT_STRING_EQUAL(a, b);
    /* -O alone: to the end; K/M suffixes */
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "-O", "3M", "-o",
                           lns_test_path("sub2.out"), lns_test_path("sub.xnd"), (char *)NULL), 0);
    sha_file(lns_test_path("sub.bin"), 3 * MIB, -1, a);
    sha_file(lns_test_path("sub2.out"), 0, -1, b);
    CU_ASSERT_STRING_EQUAL(a, b);
    /* past the end: a usage error, one line */
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "-O", "4M", "-L", "4", "-o",
                           lns_test_path("sub3.out"), lns_test_path("sub.xnd"), (char *)NULL), 2);
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    tt_free_all(&T, lns_test_path("sub.xnd"));
}

static void test_resume(void)
{
    char a[65], b[65], f[PATH_MAX];
    snprintf(f, sizeof f, "%s", lns_test_path("res.out"));
    /* 6 MiB in 3 fragments of 2 MiB: the checksum blocks (1 MiB) are on a 1 MiB grid */
    make_file("res.bin", 6 * MIB, 4);
    sha_file(lns_test_path("res.bin"), 0, -1, a);
    CU_ASSERT_EQUAL_FATAL(upload("res.bin", "res.xnd", "-F", "3"), 0);
    CU_ASSERT_EQUAL_FATAL(tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "-o", f,
                                 lns_test_path("res.xnd"), (char *)NULL), 0);

    /* an interrupted run: 3 MiB there, and its last 4 KiB damaged */
    CU_ASSERT_EQUAL_FATAL(truncate(f, 3 * MIB), 0);
    int fd = open(f, O_WRONLY);
    char junk[4096];
    memset(junk, 0x5a, sizeof junk);
    CU_ASSERT_EQUAL(pwrite(fd, junk, sizeof junk, 3 * MIB - (long)sizeof junk),
                    (ssize_t)sizeof junk);
    close(fd);

    /* without checking, the damage stays */
    CU_ASSERT_EQUAL(tt_sh(&T, "cp \"$D/res.out\" \"$D/res.nv\" && \"$B/lors_download\" --no-rc "
                          "--no-verify -R -o \"$D/res.nv\" \"$D/res.xnd\""), 0);
    sha_file(lns_test_path("res.nv"), 0, -1, b);
    CU_ASSERT_STRING_NOT_EQUAL(a, b);

    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "-R", "-o", f,
                           lns_test_path("res.xnd"), (char *)NULL), 0);
    CU_ASSERT(strstr(T.err, "first 2097152 of its 3145728 bytes") != NULL); /* it says it cut */
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    sha_file(f, 0, -1, b);
    CU_ASSERT_STRING_EQUAL(a, b);

    /* complete: nothing to do */
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "-R", "-o", f,
                           lns_test_path("res.xnd"), (char *)NULL), 0);
    CU_ASSERT(strstr(T.err, "nothing to do") != NULL);
    sha_file(f, 0, -1, b);
    CU_ASSERT_STRING_EQUAL(a, b);

    /* -R needs a file */
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "-R",
                           lns_test_path("res.xnd"), (char *)NULL), 2);
    tt_free_all(&T, lns_test_path("res.xnd"));
}

/* n bytes of junk after the end of the file path: what an older, longer file of the same
 * name leaves. */
static void append_junk(const char *path, size_t n)
{
    char junk[8192];
    memset(junk, 0x5a, sizeof junk);
    int fd = open(path, O_WRONLY | O_APPEND);
    CU_ASSERT_FATAL(fd >= 0 && n <= sizeof junk);
    CU_ASSERT_EQUAL(write(fd, junk, n), (ssize_t)n);
    close(fd);
}

/* -R into an OUT longer than the range: it ends as the range's bytes exactly, as a download
 * without -R (which truncates OUT first) leaves it, whether OUT was checked (written in
 * place) or not (--no-verify), and for a sub-range. */
static void test_resume_longer(void)
{
    char a[65], b[65], f[PATH_MAX];
    struct stat st;
    snprintf(f, sizeof f, "%s", lns_test_path("long.out"));
    make_file("long.bin", 3 * MIB, 5);
    sha_file(lns_test_path("long.bin"), 0, -1, a);
    CU_ASSERT_EQUAL_FATAL(upload("long.bin", "long.xnd", "-F", "3"), 0);
    for (int nv = 0; nv < 2; nv++) {
        CU_ASSERT_EQUAL_FATAL(tt_sh(&T, "cp \"$D/long.bin\" \"$D/long.out\""), 0);
        append_junk(f, 5000);
        CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "-R", "-o", f,
                               lns_test_path("long.xnd"), nv ? "--no-verify" : NULL,
                               (char *)NULL), 0);
        CU_ASSERT_EQUAL(stat(f, &st), 0);
        CU_ASSERT_EQUAL(st.st_size, 3 * MIB);
        sha_file(f, 0, -1, b);
        CU_ASSERT_STRING_EQUAL(a, b);
        CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "cut the 5000 bytes after them"));
    }
    /* a sub-range: OUT holds bytes 1M-2M of the file and the next MiB after them */
    CU_ASSERT_EQUAL_FATAL(tt_sh(&T, "tail -c +%d \"$D/long.bin\" > \"$D/long.out\"", MIB + 1),
                          0);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "-R", "-O", "1M", "-L",
                           "1M", "-o", f, lns_test_path("long.xnd"), (char *)NULL), 0);
    CU_ASSERT_EQUAL(stat(f, &st), 0);
    CU_ASSERT_EQUAL(st.st_size, MIB);
    sha_file(lns_test_path("long.bin"), MIB, MIB, a);
    sha_file(f, 0, -1, b);
    CU_ASSERT_STRING_EQUAL(a, b);
    tt_free_all(&T, lns_test_path("long.xnd"));
}

static void test_bad_exnode(void)
{
    const char *bad = "<?xml version=\"1.0\"?>\n<exnode xmlns=\"http://loci.cs.utk.edu/exnode\">"
                      "<mapping>\n";
    CU_ASSERT_EQUAL_FATAL(tt_write_file(lns_test_path("bad.xnd"), bad, strlen(bad)), 0);
    unlink(lns_test_path("bad.out"));
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "-o",
                           lns_test_path("bad.out"), lns_test_path("bad.xnd"), (char *)NULL), 3);
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    CU_ASSERT(strncmp(T.err, "lors_download: ", 15) == 0);
    CU_ASSERT_EQUAL(access(lns_test_path("bad.out"), F_OK), -1); /* no output file created */
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "-o",
                           lns_test_path("bad.out"), lns_test_path("missing.xnd"), (char *)NULL),
                    3);
    CU_ASSERT_EQUAL(access(lns_test_path("bad.out"), F_OK), -1);
}

static void test_rc_file(void)
{
    char rcfile[2048], env[PATH_MAX + 16];
    snprintf(rcfile, sizeof rcfile, "# settings for the tests\nCOPIES 2\nDURATION=10m\n"
             "DEPOT %s\nTHREADS 3\n", T.depots);
    CU_ASSERT_EQUAL_FATAL(tt_write_file(lns_test_path("rc.good"), rcfile, strlen(rcfile)), 0);
    make_file("rc.bin", MIB + 5, 5);
    snprintf(env, sizeof env, "LNS_RC=%s", lns_test_path("rc.good"));
    CU_ASSERT_EQUAL_FATAL(tt_run(&T, env, NULL, "lors_upload", "-o", lns_test_path("rc.xnd"),
                                 lns_test_path("rc.bin"), (char *)NULL), 0);
    xnd_t *x = tt_load(lns_test_path("rc.xnd"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(x->nmaps, 8); /* 4 fragments (default -F) x 2 copies (rc) */
    for (size_t i = 0; i < x->nmaps; i++) {
        xnd_mapping_t **reps = NULL;
        size_t n = 0;
        xnd_replicas(x, x->maps[i]->exnode_offset, x->maps[i]->logical_length, &reps, &n);
        CU_ASSERT_EQUAL(n, 2);
        free(reps);
    }
    xnd_free(x);
    tt_free_all(&T, lns_test_path("rc.xnd"));
    /* a flag beats the rc file */
    CU_ASSERT_EQUAL(tt_run(&T, env, NULL, "lors_upload", "-c", "1", "-F", "2", "-o",
                           lns_test_path("rc1.xnd"), lns_test_path("rc.bin"), (char *)NULL), 0);
    x = tt_load(lns_test_path("rc1.xnd"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(x->nmaps, 2);
    xnd_free(x);
    tt_free_all(&T, lns_test_path("rc1.xnd"));

    /* --rc names one, --no-rc skips it: then there are no depots */
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_upload", "--rc", lns_test_path("rc.good"), "-o",
                           lns_test_path("rc2.xnd"), lns_test_path("rc.bin"), (char *)NULL), 0);
    tt_free_all(&T, lns_test_path("rc2.xnd"));
    CU_ASSERT_EQUAL(tt_run(&T, env, NULL, "lors_upload", "--no-rc", "-o", lns_test_path("rc3.xnd"),
                           lns_test_path("rc.bin"), (char *)NULL), 5);

    /* a bad line: exit 2 naming file:line, nothing uploaded */
    const char *bad = "COPIES 2\n# fine\nCOPIES two\n";
    CU_ASSERT_EQUAL_FATAL(tt_write_file(lns_test_path("rc.bad"), bad, strlen(bad)), 0);
    snprintf(env, sizeof env, "LNS_RC=%s", lns_test_path("rc.bad"));
    CU_ASSERT_EQUAL(tt_run(&T, env, NULL, "lors_upload", "--depot-list", T.depots, "-o",
                           lns_test_path("rc4.xnd"), lns_test_path("rc.bin"), (char *)NULL), 2);
    char where[PATH_MAX + 8];
    snprintf(where, sizeof where, "%s:3:", lns_test_path("rc.bad"));
    CU_ASSERT(strstr(T.err, where) != NULL);
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    CU_ASSERT_EQUAL(access(lns_test_path("rc4.xnd"), F_OK), -1);
    /* the download reads the rc file too */
    CU_ASSERT_EQUAL(tt_run(&T, env, NULL, "lors_download", "-o", lns_test_path("rc.out"),
                           lns_test_path("rc1.xnd"), (char *)NULL), 2);
}

/* [off, off+len) of every "KIND ... off=N len=N" line, for a coverage check */
typedef struct span {
    long long off, len;
} span_t;

static int by_off(const void *a, const void *b)
{
    const span_t *x = a, *y = b;
    return (x->off > y->off) - (x->off < y->off);
}

static void test_events(void)
{
    long size = 3 * MIB + 99;
    make_file("ev.bin", (size_t)size, 6);
    CU_ASSERT_EQUAL_FATAL(tt_run(&T, NULL, NULL, "lors_upload", "--no-rc", "--depot-list", T.depots,
                                 "-d", "10m", "-c", "2", "-E", "256K", "--events",
                                 lns_test_path("ev.up"), "-o", lns_test_path("ev.xnd"),
                                 lns_test_path("ev.bin"), (char *)NULL), 0);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "-bs", "256K", "--events",
                           lns_test_path("ev.dl"), "-o", lns_test_path("ev.out"),
                           lns_test_path("ev.xnd"), (char *)NULL), 0);

    FILE *f = fopen(lns_test_path("ev.dl"), "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    char line[2048];
    int pid = 0, nend = 0, nbegin = 0, bad = 0;
    long long t = 0;
    size_t nsp = 0;
    span_t *sp = calloc(4096, sizeof *sp);
    CU_ASSERT_FATAL(fgets(line, sizeof line, f) != NULL);
    CU_ASSERT(sscanf(line, "LNS-EVENTS 1 tool=lors_download pid=%d time=%lld", &pid, &t) == 2);
    CU_ASSERT(pid > 0 && t > 1600000000);
    while (fgets(line, sizeof line, f)) {
        long long ms, off, len;
        char kind[32] = "";
        if (sscanf(line, "%lld %31s", &ms, kind) != 2 || ms < 0 || !strchr(line, '\n'))
            bad++;
        if (strstr(line, "  ") || strchr(line, '\t'))
            bad++; /* single spaces between fields only */
        if (strcmp(kind, "FETCH_END") == 0) {
            const char *o = strstr(line, " off="), *l = strstr(line, " len=");
            CU_ASSERT(strstr(line, " depot=") != NULL && strstr(line, " copy=") != NULL);
            if (o && l && sscanf(o, " off=%lld", &off) == 1 && sscanf(l, " len=%lld", &len) == 1 &&
                nsp < 4096)
                sp[nsp++] = (span_t){off, len};
        } else if (strcmp(kind, "BEGIN") == 0) {
            nbegin++;
            CU_ASSERT(strstr(line, "op=download") != NULL);
        } else if (strcmp(kind, "END") == 0) {
            nend++;
            char want[64];
            snprintf(want, sizeof want, " bytes=%ld ", size);
            CU_ASSERT(strstr(line, want) != NULL);
            CU_ASSERT(strstr(line, " rc=0") != NULL);
            CU_ASSERT(strstr(line, " dropped=0") != NULL);
        }
    }
    fclose(f);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(nbegin, 1);
    CU_ASSERT_EQUAL(nend, 1);
    /* the winning fetches cover every byte, each exactly once */
    qsort(sp, nsp, sizeof *sp, by_off);
    long long covered = 0;
    for (size_t i = 0; i < nsp; i++) {
        CU_ASSERT_EQUAL(sp[i].off, covered);
        covered = sp[i].off + sp[i].len;
    }
    CU_ASSERT_EQUAL(covered, size);
    CU_ASSERT(nsp >= 13); /* 256 KiB blocks (checksum blocks of 256 KiB: -E) */
    free(sp);

    /* the upload's stream: ALLOCATE and COPY_DONE for every copy of every fragment */
    f = fopen(lns_test_path("ev.up"), "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    int nalloc = 0, ndone = 0, up_end = 0;
    while (fgets(line, sizeof line, f)) {
        nalloc += strstr(line, " ALLOCATE depot=") != NULL;
        ndone += strstr(line, " COPY_DONE depot=") != NULL;
        up_end += strstr(line, " END bytes=") != NULL && strstr(line, " rc=0 ") != NULL;
    }
    fclose(f);
    CU_ASSERT_EQUAL(nalloc, 8);
    CU_ASSERT_EQUAL(ndone, 8);
    CU_ASSERT_EQUAL(up_end, 1);
    tt_free_all(&T, lns_test_path("ev.xnd"));
}

static void test_usage_errors(void)
{
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_upload", "--no-rc", "--frobnicate", "x",
                           (char *)NULL), 2);
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    CU_ASSERT(strncmp(T.err, "lors_upload: ", 13) == 0);
    CU_ASSERT(strstr(T.err, "--frobnicate") != NULL);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "-Z", "x.xnd", (char *)NULL),
                    2);
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_upload", "--no-rc", "-c", "zero", "x",
                           (char *)NULL), 2);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_upload", "--no-rc", "-e", "x", (char *)NULL), 2);
    CU_ASSERT(strstr(T.err, "DES") != NULL);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_upload", "--no-rc", "-n", "-z", "x", (char *)NULL),
                    2);
    /* no input */
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_upload", "--no-rc", (char *)NULL), 2);
    /* no depots: 5, also when the L-Bone asked for does not answer (a closed loopback port) */
    make_file("nd.bin", 1000, 7);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_upload", "--no-rc", lns_test_path("nd.bin"),
                           (char *)NULL), 5);
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_upload", "--no-rc", "-H", "127.0.0.1", "-P", "1",
                           lns_test_path("nd.bin"), (char *)NULL), 5);
    CU_ASSERT(strstr(T.err, "L-Bone") != NULL);
    /* an unreadable input: 4, before any depot is touched */
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_upload", "--no-rc", "--depot-list", T.depots,
                           lns_test_path("no-such-file"), (char *)NULL), 4);
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
}

/* A depot of two copies killed before the download: the other copy serves, exit 0. */
static void test_depot_killed(void)
{
    test_depot_t victim;
    char list[256], a[65], b[65];
    CU_ASSERT_EQUAL_FATAL(tl_start_depot(&victim, "victim", "64M"), 0);
    snprintf(list, sizeof list, "127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", victim.port,
             T.dep[0].port, T.dep[1].port);
    make_file("kill.bin", 2 * MIB + 1, 8);
    CU_ASSERT_EQUAL_FATAL(tt_run(&T, NULL, NULL, "lors_upload", "--no-rc", "--depot-list", list,
                                 "-d", "10m", "-c", "2", "-o", lns_test_path("kill.xnd"),
                                 lns_test_path("kill.bin"), (char *)NULL), 0);
    xnd_t *x = tt_load(lns_test_path("kill.xnd"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    int on_victim = 0;
    char needle[32];
    snprintf(needle, sizeof needle, ":%d/", victim.port);
    for (size_t i = 0; i < x->nmaps; i++)
        on_victim += strstr(x->maps[i]->cap[XND_READ], needle) != NULL;
    CU_ASSERT(on_victim > 0); /* the victim holds copies that now must come from elsewhere */
    xnd_free(x);
    lns_test_server_kill(&victim.srv, SIGKILL);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "-T", "5", "-o",
                           lns_test_path("kill.out"), lns_test_path("kill.xnd"), (char *)NULL), 0);
    sha_file(lns_test_path("kill.bin"), 0, -1, a);
    sha_file(lns_test_path("kill.out"), 0, -1, b);
    CU_ASSERT_STRING_EQUAL(a, b);
    tt_free_all(&T, lns_test_path("kill.xnd"));
    lns_test_server_stop(&victim.srv);
}

/* Lost redundancy: two copies on two depots, one of them killed.  The download works around
 * it and exits 0 with the right bytes, but says so in one line, under --quiet too (a warning
 * about the data, not chatter); lors_ls, which probes, flags the file with exit 10; with
 * --no-probe it asks no depot and sees both copies. */
static void test_lost_copy(void)
{
    test_depot_t victim;
    char list[256], needle[96], a[65], b[65];
    CU_ASSERT_EQUAL_FATAL(tl_start_depot(&victim, "lost", "64M"), 0);
    snprintf(list, sizeof list, "127.0.0.1:%d,127.0.0.1:%d", victim.port, T.dep[0].port);
    make_file("lost.bin", 4 * MIB, 21);
    CU_ASSERT_EQUAL_FATAL(tt_run(&T, NULL, NULL, "lors_upload", "--no-rc", "--depot-list", list,
                                 "-d", "10m", "-c", "2", "-F", "2", "-o",
                                 lns_test_path("lost.xnd"), lns_test_path("lost.bin"),
                                 (char *)NULL), 0);
    lns_test_server_kill(&victim.srv, SIGKILL);
    sha_file(lns_test_path("lost.bin"), 0, -1, a);
    snprintf(needle, sizeof needle, "lors_download: warning: depot 127.0.0.1:%d failed (",
             victim.port);
    /* two streams, one a depot: the first two blocks go one to each depot, so the dead one
     * is asked */
    for (int quiet = 0; quiet < 2; quiet++) {
        unlink(lns_test_path("lost.out"));
        CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "-t", "2", "-a", "1",
                               "-o", lns_test_path("lost.out"), lns_test_path("lost.xnd"),
                               quiet ? "--quiet" : (char *)NULL, (char *)NULL), 0);
        sha_file(lns_test_path("lost.out"), 0, -1, b);
        CU_ASSERT_STRING_EQUAL(a, b);
        CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
        CU_ASSERT(strncmp(T.err, needle, strlen(needle)) == 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "; bytes 0-4194303 had 1 of 2 copies left\n"));
        if (strncmp(T.err, needle, strlen(needle)) != 0)
            fprintf(stderr, "stderr: %s\n", T.err);
    }
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_ls", "--no-rc", "-T", "5", "-l",
                           lns_test_path("lost.xnd"), (char *)NULL), 10);
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "fewer than 2 live copies"));
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_ls", "--no-rc", "--no-probe",
                           lns_test_path("lost.xnd"), (char *)NULL), 0);
    CU_ASSERT_STRING_EQUAL(T.err, "");
    tt_free_all(&T, lns_test_path("lost.xnd"));
    lns_test_server_stop(&victim.srv);
}

/* -c 3 over three depots, one of which refuses every connection: each fragment's third copy
 * goes to a depot that already holds one, so the bytes are on two depots, not the three
 * asked.  The upload keeps the exNode (every byte is stored and downloads) but says so in one
 * warning line, under --quiet too, and exits 10 (as lors_ls does for bytes below their copy
 * count): a script that goes on to delete the original must be able to tell.  Three copies
 * asked of two depots is the user's choice: the old warning, exit 0. */
static void test_copies_short(void)
{
    char list[256], want[160], a[65], b[65];
    snprintf(list, sizeof list, "127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:1", T.dep[0].port,
             T.dep[1].port);
    make_file("short.bin", 2 * MIB, 31);
    snprintf(want, sizeof want, "lors_upload: warning: depot 127.0.0.1:1 failed (ALLOCATE: ");
    for (int quiet = 0; quiet < 2; quiet++) {
        unlink(lns_test_path("short.xnd"));
        CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_upload", "--no-rc", "--depot-list", list,
                               "-d", "10m", "-c", "3", "-F", "2", "-o", lns_test_path("short.xnd"),
                               lns_test_path("short.bin"), quiet ? "-q" : (char *)NULL,
                               (char *)NULL), 10);
        const char *w = strstr(T.err, want);
        CU_ASSERT_PTR_NOT_NULL(w);
        CU_ASSERT(w && strstr(w, "; bytes 0-2097151 have copies on 2 depots, not 3; "
                                 "lors_augment can add copies\n"));
        if (quiet)
            CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
        if (!w)
            fprintf(stderr, "stderr: %s\n", T.err);
        CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "--quiet", "-o",
                               lns_test_path("short.out"), lns_test_path("short.xnd"),
                               (char *)NULL), 0);
        sha_file(lns_test_path("short.bin"), 0, -1, a);
        sha_file(lns_test_path("short.out"), 0, -1, b);
        CU_ASSERT_STRING_EQUAL(a, b);
        tt_free_all(&T, lns_test_path("short.xnd"));
    }
    snprintf(list, sizeof list, "127.0.0.1:%d,127.0.0.1:%d", T.dep[0].port, T.dep[1].port);
    unlink(lns_test_path("short.xnd"));
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_upload", "--no-rc", "--depot-list", list, "-d",
                           "10m", "-c", "3", "-F", "2", "-o", lns_test_path("short.xnd"),
                           lns_test_path("short.bin"), (char *)NULL), 0);
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "some copies share a depot"));
    tt_free_all(&T, lns_test_path("short.xnd"));
}

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A stopped depot (SIGSTOP: the kernel still accepts connections into its backlog, nothing
 * ever answers) among three, -c 2 -T 60s: the upload gives the depot up after a short silence
 * and puts its copies on the other two, long before -T (a 60 s wait is what it did before),
 * says so in one line naming the depot, and exits 0: every fragment still has its two copies
 * on distinct depots.  The exNode downloads whole. */
static void test_upload_depot_stopped(void)
{
    char want[64], needle[32], a[65], b[65];
    tt_revive(&T);
    make_file("stop.bin", 3 * MIB + 5, 41);
    int sport = T.dep[2].port;
    CU_ASSERT_EQUAL_FATAL(lns_test_server_kill(&T.dep[2].srv, SIGSTOP), 0);
    long long t0 = mono_ms();
    int rc = tt_run(&T, NULL, NULL, "lors_upload", "--no-rc", "--depot-list",
                    tt_dlist(&T, 0, 1, 2, -1), "-d", "10m", "-c", "2", "-T", "60s", "-o",
                    lns_test_path("stop.xnd"), lns_test_path("stop.bin"), (char *)NULL);
    long long took = mono_ms() - t0;
    kill(T.dep[2].pid, SIGCONT);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT(took < 30000);
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    snprintf(want, sizeof want, "lors_upload: depot 127.0.0.1:%d failed (", sport);
    CU_ASSERT(strncmp(T.err, want, strlen(want)) == 0);
    if (rc != 0 || took >= 30000 || tt_count(T.err, "\n") != 1)
        fprintf(stderr, "exit %d after %lld ms: %s", rc, took, T.err);
    xnd_t *x = tt_load(lns_test_path("stop.xnd"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    snprintf(needle, sizeof needle, ":%d/", sport);
    for (size_t i = 0; i < x->nmaps; i++)
        CU_ASSERT_PTR_NULL(strstr(x->maps[i]->cap[XND_READ], needle));
    xnd_free(x);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "--quiet", "-o",
                           lns_test_path("stop.out"), lns_test_path("stop.xnd"), (char *)NULL), 0);
    sha_file(lns_test_path("stop.bin"), 0, -1, a);
    sha_file(lns_test_path("stop.out"), 0, -1, b);
    CU_ASSERT_STRING_EQUAL(a, b);
    tt_free_all(&T, lns_test_path("stop.xnd"));
}

/* -c 2 over two depots, one refusing connections: both copies on the survivor.  That is said
 * once, in the warning that fewer distinct depots than copies remain (naming the failed
 * depot), not again per copy that moved. */
static void test_upload_one_of_two_dead(void)
{
    char list[128];
    snprintf(list, sizeof list, "127.0.0.1:%d,127.0.0.1:1", T.dep[0].port);
    make_file("half.bin", 3 * MIB, 43);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_upload", "--no-rc", "--depot-list", list, "-d",
                           "10m", "-c", "2", "-o", lns_test_path("half.xnd"),
                           lns_test_path("half.bin"), (char *)NULL), 10);
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    CU_ASSERT_EQUAL(tt_count(T.err, "127.0.0.1:1 "), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "lors_upload: warning: depot 127.0.0.1:1 failed ("));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "have copies on 1 depot, not 2"));
    if (tt_count(T.err, "\n") != 1)
        fprintf(stderr, "stderr: %s", T.err);
    tt_free_all(&T, lns_test_path("half.xnd"));
}

/* Ctrl-C during a download: one line naming the bytes the output holds, as its control file
 * records them, and -R, then death by SIGINT (a shell's $? is 130).  The second fragment's capability points at a port that
 * accepts and never answers, so the download is stuck after the first fragment's bytes. */
static void test_interrupt(void)
{
    char a[65], b[65], want[4 * PATH_MAX];
    int lport, st = 0;
    make_file("int.bin", 2 * MIB, 22);
    CU_ASSERT_EQUAL_FATAL(tt_run(&T, NULL, NULL, "lors_upload", "--no-rc", "--depot-list",
                                 tt_dlist(&T, 0, -1), "-d", "10m", "-F", "2", "-o",
                                 lns_test_path("int.xnd"), lns_test_path("int.bin"),
                                 (char *)NULL), 0);
    int lfd = raw_listen_loopback(&lport);
    CU_ASSERT_FATAL(lfd >= 0);
    xnd_t *x = tt_load(lns_test_path("int.xnd"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    for (size_t i = 0; i < x->nmaps; i++)
        if (x->maps[i]->exnode_offset == MIB) {
            char cap[512], *p = strstr(x->maps[i]->cap[XND_READ], "/");
            p = p ? strchr(p + 2, '/') : NULL; /* after "ibp://host:port" */
            CU_ASSERT_PTR_NOT_NULL_FATAL(p);
            snprintf(cap, sizeof cap, "ibp://127.0.0.1:%d%s", lport, p);
            CU_ASSERT_EQUAL(xnd_mapping_set_cap(x->maps[i], XND_READ, cap), XND_OK);
        }
    CU_ASSERT_EQUAL_FATAL(xnd_write_file(x, lns_test_path("stuck.xnd"), NULL, 0), XND_OK);
    xnd_free(x);

    const char *out = lns_test_path("int.out");
    char outp[PATH_MAX], xndp[PATH_MAX];
    snprintf(outp, sizeof outp, "%s", out);
    snprintf(xndp, sizeof xndp, "%s", lns_test_path("stuck.xnd"));
    tt_bg_t bg;
    CU_ASSERT_FATAL(tt_spawn(&T, &bg, "lors_download", "--no-rc", "-o", outp, xndp,
                             (char *)NULL) == 0);
    int pid = bg.pid;
    int64_t end = lns_test_deadline(LNS_TEST_WAIT_MS);
    while (file_size(outp) < MIB && lns_test_poll(end))
        ;
    CU_ASSERT_EQUAL(file_size(outp), MIB);
    lns_test_sleep_ms(100);
    kill(pid, SIGINT);
    CU_ASSERT_EQUAL(waitpid(pid, &st, 0), pid);
    lns_test_untrack_pid(pid);
    close(bg.in);
    CU_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGINT);
    lns_test_slurp(bg.err, T.err, sizeof T.err);
    /* written in place: the bytes its control file records, saved on the way out */
    snprintf(want, sizeof want, "lors_download: %s: interrupted; %s holds 1048576 of the "
             "2097152 bytes (bytes 0-1048575), which %s.lnsdl records (resume with -R)\n",
             xndp, outp, outp);
    CU_ASSERT_STRING_EQUAL(T.err, want);
    close(lfd);

    /* and -R does resume it, from the exNode whose copies all answer */
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "-R", "-o", outp,
                           lns_test_path("int.xnd"), (char *)NULL), 0);
    sha_file(lns_test_path("int.bin"), 0, -1, a);
    sha_file(outp, 0, -1, b);
    CU_ASSERT_STRING_EQUAL(a, b);
    tt_free_all(&T, lns_test_path("int.xnd"));
}

/* To a terminal, as curl: refused unless -o - says so (script(1) gives the tool a pty). */
static void test_terminal(void)
{
    if (access("/usr/bin/script", X_OK) != 0) {
        fprintf(stderr, "no script(1): terminal test skipped\n");
        return;
    }
    make_file("tty.bin", 1000, 23);
    CU_ASSERT_EQUAL_FATAL(upload("tty.bin", "tty.xnd", NULL, NULL), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "script -qec \"'$B/lors_download' --no-rc '$D/tty.xnd'\" /dev/null"),
                    2);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "lors_download: refusing to write binary data to a "
                                         "terminal; give -o FILE, or -o - to write it anyway"));
    CU_ASSERT_EQUAL(tt_count(T.out, "\n"), 1);
    CU_ASSERT_EQUAL(tt_sh(&T, "script -qec \"'$B/lors_download' --no-rc -o - '$D/tty.xnd'\" "
                              "/dev/null"), 0);
    CU_ASSERT(strlen(T.out) >= 100);
    /* a terminal on stderr only is fine: the bytes go to a file */
    CU_ASSERT_EQUAL(tt_sh(&T, "script -qec \"'$B/lors_download' --no-rc '$D/tty.xnd' > "
                              "'$D/tty.out'\" /dev/null"), 0);
    CU_ASSERT_EQUAL(file_size(lns_test_path("tty.out")), 1000);
    tt_free_all(&T, lns_test_path("tty.xnd"));
}

/* An exNode whose size is near INT64_MAX and whose one mapping holds 100000 bytes: the
 * download fails at once on the bytes no mapping holds, instead of planning 2^43 blocks.
 * Run under a memory cap, so that the old behaviour fails instead of eating the machine. */
static void test_huge_size(void)
{
    make_file("huge.bin", 100000, 24);
    CU_ASSERT_EQUAL_FATAL(upload("huge.bin", "huge.xnd", "-F", "1"), 0);
    xnd_t *x = tt_load(lns_test_path("huge.xnd"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(xnd_set_size(x, INT64_MAX), XND_OK);
    CU_ASSERT_EQUAL_FATAL(xnd_write_file(x, lns_test_path("huge2.xnd"), NULL, 0), XND_OK);
    xnd_free(x);
#if defined(__SANITIZE_ADDRESS__)
    const char *cap = "ASAN_OPTIONS=$ASAN_OPTIONS:hard_rss_limit_mb=1500:allocator_may_return_null=1";
#else
    const char *cap = "ulimit -v 1500000;";
#endif
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CU_ASSERT_EQUAL(tt_sh(&T, "%s timeout 60 \"$B/lors_download\" --no-rc -o \"$D/huge.out\" "
                              "\"$D/huge2.xnd\"", cap), 6);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CU_ASSERT(t1.tv_sec - t0.tv_sec < 30); /* a hang only: the error, not a plan, ends it */
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "bytes 100000-9223372036854775806: no mapping holds "
                                         "them"));
    tt_free_all(&T, lns_test_path("huge.xnd"));
}

static const lns_test_case tests[] = {
    {"help and version", test_help_version},
    {"upload and download a file", test_roundtrip},
    {"-z (zstd), --zlib, --level", test_compress},
    {"stdin and stdout pipes", test_stdin_and_stdout_pipes},
    {"sub-range -O/-L", test_subrange},
    {"resume -R cuts a damaged prefix", test_resume},
    {"resume -R into a longer file leaves the range exactly", test_resume_longer},
    {"malformed exNode", test_bad_exnode},
    {"rc file", test_rc_file},
    {"event stream", test_events},
    {"usage errors and exit codes", test_usage_errors},
    {"a depot killed before the download", test_depot_killed},
    {"a lost copy: a warning, exit 0; lors_ls exit 10", test_lost_copy},
    {"upload: copies on fewer depots than asked: a warning, exit 10", test_copies_short},
    {"upload: a stopped depot is given up quickly, one line", test_upload_depot_stopped},
    {"upload: -c 2, one of two depots dead: said once", test_upload_one_of_two_dead},
    {"SIGINT: where it stopped, -R resumes", test_interrupt},
    {"refuses to write to a terminal unless -o -", test_terminal},
    {"an exNode of size near INT64_MAX: fails at once", test_huge_size},
};

TT_MAIN(&T, "lors_tools", ND, tests)
