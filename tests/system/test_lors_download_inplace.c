/* test_lors_download_inplace.c -- a download to a file is written in place (issue 16): with
 * the first fragment's only copy on a SIGSTOPped depot and a reorder buffer of 4 MiB, every
 * other block still reaches the file (in order, nothing could be written at all); once the
 * depot answers the file is complete and exact.  A run SIGKILLed with a hole at the start of
 * its file has its 18 MiB recorded in OUT.lnsdl, and -R fetches only the 6 MiB missing (and
 * cuts what lies past the file's end).  Ctrl-C before any byte, with half of the file and with
 * three quarters of it written leaves a record of exactly those bytes, named by the one line
 * it prints, and -R fetches only the others (issue 36).  The library writes from the fd's
 * position and leaves it after the bytes.  (Pipes, in order, are test_lors_download's.) */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lns_time.h"
#include "test_tools.h"

#define ND 4
#define MIB (1024 * 1024)

static tt_env_t T;

/* The test's depot index holding byte off (the first mapping listed). */
static int depot_index_of(const xnd_t *x, int64_t off)
{
    for (size_t i = 0; i < x->nmaps; i++) {
        const xnd_mapping_t *m = x->maps[i];
        if (off >= m->exnode_offset && off < m->exnode_offset + m->logical_length) {
            int port = tt_cap_port(m->cap[XND_READ]);
            for (int d = 0; d < T.n; d++)
                if (T.dep[d].port == port)
                    return d;
        }
    }
    return -1;
}

/* Bytes of path on disk (a file with holes has fewer than its size). */
static int64_t allocated(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t)st.st_blocks * 512 : -1;
}

/* Poll up to ms until path has at least n bytes on disk; its bytes then. */
static int64_t wait_allocated(const char *path, int64_t n, int ms)
{
    int64_t a = -1, end = lns_test_deadline(ms);
    while ((a = allocated(path)) < n && lns_test_poll(end))
        ;
    return a;
}

/* 24 MiB in 4 fragments of one copy over the 4 depots; the depot holding byte 0. */
static int setup(char *src, char *xnd)
{
    tt_revive(&T);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 24 * MIB, 77, 1, 4, T.depots, NULL, src, xnd), 0);
    xnd_t *x = tt_load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    int d = depot_index_of(x, 0);
    CU_ASSERT_FATAL(d >= 0 && depot_index_of(x, 12 * MIB) != d);
    xnd_free(x);
    return d;
}

/* setup(), the download's file out (4200 bytes) named src.out, and the depot holding byte 0
 * stopped (SIGSTOP); that depot. */
static int setup_stopped(char *src, char *xnd, char *out)
{
    int d = setup(src, xnd);
    snprintf(out, 4200, "%s.out", src);
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[d].srv, SIGSTOP), 0);
    return d;
}

static void test_stalled_depot(void)
{
    char src[4096], xnd[4096], out[4200];
    int d = setup_stopped(src, xnd, out);
    tt_bg_t bg;
    CU_ASSERT_EQUAL_FATAL(tt_spawn(&T, &bg, "lors_download", "--no-rc", "--quiet", "-M", "4M",
                                   "-T", "60s", "-o", out, xnd, (char *)NULL), 0);
    /* the three other fragments (18 MiB) reach the file while the first waits */
    int64_t a = wait_allocated(out, 18 * MIB, LNS_TEST_WAIT_MS);
    CU_ASSERT(a >= 18 * MIB);
    if (a < 18 * MIB)
        fprintf(stderr, "only %lld bytes written behind the stopped depot\n", (long long)a);
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[d].srv, SIGCONT), 0);
    CU_ASSERT_EQUAL(tt_wait(&T, &bg, 60000), 0);
    CU_ASSERT(tt_same_file(out, src));
    unlink(out);
    tt_free_all(&T, xnd);
}

static void test_killed_then_resumed(void)
{
    char src[4096], xnd[4096], out[4200];
    int d = setup_stopped(src, xnd, out);
    tt_bg_t bg;
    CU_ASSERT_EQUAL_FATAL(tt_spawn(&T, &bg, "lors_download", "--no-rc", "--quiet", "-T", "60s",
                                   "-o", out, xnd, (char *)NULL), 0);
    CU_ASSERT(wait_allocated(out, 18 * MIB, LNS_TEST_WAIT_MS) >= 18 * MIB);
    /* the control file records the 18 MiB soon (within a second or so; polled for as long as
     * a busy machine may take) */
    char ctl[4300];
    snprintf(ctl, sizeof ctl, "%s.lnsdl", out);
    int recorded = 0;
    int64_t end = lns_test_deadline(LNS_TEST_WAIT_MS);
    while (recorded < 18 * MIB && lns_test_poll(end)) {
        if (tt_sh(&T, "awk '/^have/ { n += $3 } END { print n + 0 }' '%s' 2>/dev/null", ctl) == 0)
            recorded = atoi(T.out);
    }
    CU_ASSERT_EQUAL(recorded, 18 * MIB);
    kill(bg.pid, SIGKILL); /* a hole at the start, blocks after it */
    CU_ASSERT_EQUAL(tt_wait(&T, &bg, 5000), TT_SIGNALLED + SIGKILL);
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[d].srv, SIGCONT), 0);
    CU_ASSERT_FALSE(tt_same_file(out, src));
    /* and bytes past the file's end, as an older, longer file of the name leaves */
    int fd = open(out, O_WRONLY);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(pwrite(fd, "junk", 4, 24 * MIB + 4092), 4);
    /* and recorded bytes that are not the data (as a crash of the machine that lost pages of
     * the file, neither synced, leaves them): the record is not taken on trust */
    CU_ASSERT_EQUAL(pwrite(fd, "lost", 4, 20 * MIB + 100), 4);
    close(fd);
    /* -R fetches only what the record lacks (the first fragment's 6 blocks), and what of it
     * the checksums do not vouch for (the 4 blocks from the damaged one to the run's end),
     * and cuts the bytes after the file's */
    char ev[4300];
    snprintf(ev, sizeof ev, "%s.events", out);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "-R", "--events", ev,
                           "-o", out, xnd, (char *)NULL), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "14680064 of the 25165824 bytes are there already"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "checked); the others it names do not match"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "cut the 4096 bytes after the 25165824 asked for"));
    CU_ASSERT(tt_same_file(out, src));
    CU_ASSERT_EQUAL(tt_sh(&T, "grep -c ' FETCH_END ' '%s'", ev), 0);
    CU_ASSERT_EQUAL(atoi(T.out), 10);
    CU_ASSERT_NOT_EQUAL(access(ctl, F_OK), 0); /* complete: the record is gone */
    /* without the record, -R falls back on the checksums (and keeps the prefix they pass) */
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "-R", "-o", out, xnd,
                           (char *)NULL), 0);
    CU_ASSERT(tt_same_file(out, src));
    unlink(out);
    unlink(ev);
    tt_free_all(&T, xnd);
}

/* The bytes a control file records ("have OFF LEN" lines), each checked against src: -1 if
 * the file is missing or a recorded run differs from src's bytes. */
static long long recorded_bytes(const char *ctl, const char *out, const char *src)
{
    FILE *f = fopen(ctl, "r");
    size_t no = 0, ns = 0;
    unsigned char *o = tt_read_whole(out, &no), *s = tt_read_whole(src, &ns);
    long long sum = f && o && s ? 0 : -1, a, n;
    char line[256];
    while (f && sum >= 0 && fgets(line, sizeof line, f))
        if (sscanf(line, "have %lld %lld", &a, &n) == 2) {
            if (a < 0 || n < 0 || (size_t)(a + n) > no || (size_t)(a + n) > ns ||
                memcmp(o + a, s + a, (size_t)n) != 0)
                sum = -1;
            else
                sum += n;
        }
    if (f)
        fclose(f);
    free(o);
    free(s);
    return sum;
}

/* Ctrl-C with the depots of the fragments in the bit mask stop (of 4, 6 MiB each) SIGSTOPped,
 * once the others are written (all 4: once the download began, before any byte): one line
 * naming the bytes held, the record of exactly those, and -R fetching only the rest. */
static void interrupt_at(const char *src, const char *xnd, unsigned stop)
{
    char out[4200], ctl[4300], ev[4300], want[64];
    int stopped[4], nstop = 0;
    for (int k = 0; k < 4; k++)
        nstop += (stop >> k) & 1;
    long long held = (4 - nstop) * 6LL * MIB;
    snprintf(out, sizeof out, "%s.int%x", src, stop);
    snprintf(ctl, sizeof ctl, "%s.lnsdl", out);
    snprintf(ev, sizeof ev, "%s.events", out);
    xnd_t *x = tt_load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    for (int k = 0, i = 0; k < 4; k++)
        if (stop & (1u << k)) {
            stopped[i] = depot_index_of(x, k * 6LL * MIB);
            CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[stopped[i++]].srv, SIGSTOP), 0);
        }
    xnd_free(x);
    tt_bg_t bg;
    CU_ASSERT_EQUAL_FATAL(tt_spawn(&T, &bg, "lors_download", "--no-rc", "-T", "60s", "--events",
                                   ev, "-o", out, xnd, (char *)NULL), 0);
    int began = held == 0 ? tt_wait_lines(ev, " BEGIN ", 1, LNS_TEST_WAIT_MS)
                          : wait_allocated(out, held, LNS_TEST_WAIT_MS) >= held;
    CU_ASSERT(began);
    kill(bg.pid, SIGINT);
    CU_ASSERT_EQUAL(tt_wait(&T, &bg, 5000), TT_SIGNALLED + SIGINT);
    for (int k = 0; k < nstop; k++)
        CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[stopped[k]].srv, SIGCONT), 0);
    /* one line, and the record holds what it says, every recorded byte right */
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "interrupted; "));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "(resume with -R)"));
    snprintf(want, sizeof want, " holds %lld of the 25165824 bytes", held);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, want));
    CU_ASSERT_EQUAL(recorded_bytes(ctl, out, src), held);
    if (!strstr(T.err, want) || recorded_bytes(ctl, out, src) != held)
        fprintf(stderr, "fragments %x stopped: %s; recorded %lld\n", stop, T.err,
                recorded_bytes(ctl, out, src));
    /* -R fetches the missing 1 MiB blocks only, and the file is exact */
    unlink(ev);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "-R", "--events", ev,
                           "-o", out, xnd, (char *)NULL), 0);
    CU_ASSERT(tt_same_file(out, src));
    CU_ASSERT_EQUAL(tt_sh(&T, "grep -c ' FETCH_END ' '%s'", ev), held < 24LL * MIB ? 0 : 1);
    CU_ASSERT_EQUAL(atoi(T.out), nstop * 6);
    CU_ASSERT_NOT_EQUAL(access(ctl, F_OK), 0);
    unlink(out);
    unlink(ev);
}

static void test_interrupted_then_resumed(void)
{
    char src[4096], xnd[4096];
    setup(src, xnd);
    interrupt_at(src, xnd, 0xf); /* before any byte */
    interrupt_at(src, xnd, 0x5); /* midway, two runs held */
    interrupt_at(src, xnd, 0x1); /* late */
    tt_free_all(&T, xnd);
}

/* The library: in place from the fd's position, which it leaves after the bytes. */
static void test_library(void)
{
    char src[4096], xnd[4096], out[4200];
    size_t size;
    tt_revive(&T);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 5 * MIB + 123, 78, 2, 3, T.depots, NULL, src, xnd), 0);
    xnd_t *x = tt_load(xnd);
    unsigned char *data = tt_read_whole(src, &size);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    snprintf(out, sizeof out, "%s.lib", src);
    int fd = open(out, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(write(fd, "head", 4), 4);
    lors_download_opts_t o;
    lors_download_opts_init(&o);
    o.in_place = 1;
    o.offset = 1000;
    lors_dl_report_t rep;
    CU_ASSERT_EQUAL(lors_download_fd(&o, x, fd, &rep), LORS_OK);
    CU_ASSERT_EQUAL(rep.bytes_prefix, (int64_t)size - 1000);
    CU_ASSERT_EQUAL(rep.bytes_written, (int64_t)size - 1000);
    CU_ASSERT_EQUAL(lseek(fd, 0, SEEK_CUR), 4 + (off_t)size - 1000);
    lors_dl_report_free(&rep);
    close(fd);
    size_t n;
    unsigned char *got = tt_read_whole(out, &n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    CU_ASSERT_EQUAL(n, 4 + size - 1000);
    CU_ASSERT(memcmp(got, "head", 4) == 0 && memcmp(got + 4, data + 1000, size - 1000) == 0);
    free(got);
    unlink(out);
    xnd_free(x);
    free(data);
    tt_free_all(&T, xnd);
}

static const lns_test_case tests[] = {
    {"a stopped depot's block holds up no other block", test_stalled_depot},
    {"SIGKILLed with holes, finished by -R", test_killed_then_resumed},
    {"Ctrl-C early, midway, late: the record is what is written, -R fetches the rest",
     test_interrupted_then_resumed},
    {"the library: in place from the fd's position, left after the bytes", test_library},
};

TT_MAIN(&T, "in-place downloads", ND, tests)
