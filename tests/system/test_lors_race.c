/* test_lors_race.c -- no allocation is left that no exNode names: concurrent writers of one
 * exNode (two keepers, two augments, a keeper and an augment started at once) and tools
 * SIGKILLed at random points (lors_upload, lors_upload --ec, lors_augment, lors_keep), and
 * lors_download -R killed at random points and run again.
 *
 * Four real depots of their own with the depots' default 30-day maximum, so that a leak looks
 * as it does in use: an allocation with weeks left that nobody can name.  The judge is each
 * depot's metadata database (res/depot.db, table alloc): every allocation it holds with time
 * left that is new since the round began must be named by the round's exNode (by depot port
 * and allocation id, the first 16 hex digits of a capability's key), or end within
 * LEAK_S (the tools' provisional lease, 10 minutes, and some slack).  Each round also checks
 * that the exNode left is valid and downloads the file's bytes, and that every process either
 * exited 0 or failed loudly with exit 12 (the exNode changed under it).
 *
 * Rounds: LNS_RACE_ROUNDS concurrent rounds (default 3) and LNS_RACE_KILLS kills per tool
 * (default 2); make soak runs 30 and 22.  The kill test prints, per tool, the orphans and the
 * orphan-minutes per kill (docs/PERFORMANCE.md has the numbers before and after).
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "lns_time.h"
#include "test_tools.h"

#define NR 4                  /* the race's own depots */
#define MAXROWS 4096
#define LEAK_S (15 * 60)      /* an orphan ending later than this is a leak */
#define EXIT_CHANGED 12       /* docs/lors-tools.md: the exNode changed under the tool */

static tt_env_t T;
static test_depot_t R[NR];
static char rdir[NR][PATH_MAX - 16], rlist[NR * 24];
static int r_up;

static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    return v && atoi(v) > 0 ? atoi(v) : dflt;
}

/* Start the depots once: no --resource max-duration, so 30 days as in a default depot. */
static int race_depots(void)
{
    char extra[PATH_MAX + 64];
    for (; r_up < NR; r_up++) {
        snprintf(rdir[r_up], sizeof rdir[r_up], "%s/race%d", lns_test_tmpdir(), r_up);
        snprintf(extra, sizeof extra, "--resource %s,hard=512M,soft=64M", rdir[r_up]);
        if (mkdir(rdir[r_up], 0700) != 0 || td_start(&R[r_up], extra) != 0)
            return -1;
        snprintf(rlist + strlen(rlist), sizeof rlist - strlen(rlist), "%s127.0.0.1:%d",
                 r_up ? "," : "", R[r_up].port);
    }
    return 0;
}

/* ---- what the depots hold ---------------------------------------------------------------- */

typedef struct row {
    int port;
    uint64_t id;
    int64_t expires;
} row_t;

/* Every allocation (not alias) with time left on the race depots, from their databases.  A
 * depot holds its database in SQLite's exclusive locking mode, so each is stopped (SIGTERM:
 * everything it answered is committed), read and started again on its port. */
static size_t depot_rows(row_t *out)
{
    size_t n = 0;
    int64_t now = time(NULL);
    for (int d = 0; d < NR; d++) {
        char path[PATH_MAX];
        sqlite3 *db = NULL;
        sqlite3_stmt *q = NULL;
        snprintf(path, sizeof path, "%.4000s/depot.db", rdir[d]);
        if (lns_test_server_kill(&R[d].srv, SIGTERM) != 0)
            fprintf(stderr, "cannot stop the depot on port %d\n", R[d].port);
        if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
            sqlite3_prepare_v2(db, "SELECT id, expires FROM alloc WHERE master = 0", -1, &q,
                               NULL) == SQLITE_OK)
            while (sqlite3_step(q) == SQLITE_ROW && n < MAXROWS) {
                row_t r = {R[d].port, (uint64_t)sqlite3_column_int64(q, 0),
                           sqlite3_column_int64(q, 1)};
                if (r.expires > now)
                    out[n++] = r;
            }
        else
            fprintf(stderr, "cannot read %s: %s\n", path, sqlite3_errmsg(db));
        sqlite3_finalize(q);
        sqlite3_close(db);
        if (td_restart(&R[d]) != 0)
            fprintf(stderr, "cannot restart the depot on port %d\n", R[d].port);
    }
    return n;
}

/* The allocation a capability names: its depot's port and the id in its key. */
static int cap_row(const char *cap, row_t *r)
{
    ibp_cap_t c;
    char hex[17];
    if (!cap || ibp_cap_parse(cap, &c) != IBP_OK || strlen(c.key) < 16)
        return -1;
    memcpy(hex, c.key, 16);
    hex[16] = '\0';
    r->port = c.port;
    r->id = strtoull(hex, NULL, 16);
    return 0;
}

static int row_in(const row_t *rows, size_t n, const row_t *r)
{
    for (size_t i = 0; i < n; i++)
        if (rows[i].port == r->port && rows[i].id == r->id)
            return 1;
    return 0;
}

typedef struct tally {
    int orphans;      /* new allocations no exNode names */
    int leaks;        /* ... of them ending more than LEAK_S from now */
    double minutes;   /* their lease left, summed */
} tally_t;

static row_t before[MAXROWS], after[MAXROWS], named[MAXROWS];
static size_t nbefore;
static int counted;

/* What the depots hold before a round: what the last round left, read once at the start (a
 * round's own upload is named by the exNode the round ends with). */
static void round_begin(void)
{
    if (!counted++)
        nbefore = depot_rows(before);
}

/* The allocations new since round_begin that the exNode xnd (missing: none) does not name. */
static void round_end(const char *xnd, tally_t *t, const char *what)
{
    size_t na = depot_rows(after), nn = 0;
    int64_t now = time(NULL);
    xnd_t *x = NULL;
    char err[256];
    if (access(xnd, F_OK) == 0 && xnd_read_file(xnd, &x, err, sizeof err) != XND_OK)
        fprintf(stderr, "%s: %s\n", what, err);
    for (size_t i = 0; x && i < x->nmaps && nn < MAXROWS; i++)
        if (cap_row(x->maps[i]->cap[XND_MANAGE], &named[nn]) == 0)
            nn++;
    xnd_free(x);
    for (size_t i = 0; i < na; i++) {
        if (row_in(before, nbefore, &after[i]) || row_in(named, nn, &after[i]))
            continue;
        t->orphans++;
        t->minutes += (double)(after[i].expires - now) / 60.0;
        if (after[i].expires - now > LEAK_S) {
            t->leaks++;
            fprintf(stderr, "%s: leaked: allocation %016" PRIx64 " on port %d, %" PRId64
                    " s left, named by no exNode\n", what, after[i].id, after[i].port,
                    after[i].expires - now);
        }
    }
    memcpy(before, after, na * sizeof *after);
    nbefore = na;
}

/* Free what the exNode names, and remove it. */
static void drop(const char *xnd)
{
    tt_free_all(&T, xnd);
    unlink(xnd);
}

/* A valid exNode that gives back src's bytes. */
static int good(const char *xnd, const char *src)
{
    xnd_t *x = tt_load(xnd);
    int ok = x != NULL;
    xnd_free(x);
    return ok && tt_downloads_equal(&T, xnd, src);
}

static int upload(const char *src, const char *xnd, const char *how)
{
    int rc = tt_sh(&T, "$B/lors_upload --no-rc -q --depot-list '%s' -d 30d %s -o '%s' '%s'",
                   rlist, how, xnd, src);
    if (rc != 0)
        fprintf(stderr, "lors_upload %s: exit %d: %s", how, rc, T.err);
    return rc;
}

/* ---- concurrent writers ------------------------------------------------------------------ */

/* The writer kinds: 0 lors_keep (a third copy of each fragment), 1 lors_augment in place. */
static int spawn_writer(tt_bg_t *bg, int kind, const char *xnd, int n)
{
    char state[PATH_MAX];
    snprintf(state, sizeof state, "%s/keep%d.db", lns_test_tmpdir(), n);
    if (kind == 0)
        return tt_spawn(&T, bg, "lors_keep", "--no-rc", "-q", "--copies", "3", "-d", "30d",
                        "--state", state, "--depot-list", rlist, "-T", "20s", xnd, NULL);
    return tt_spawn(&T, bg, "lors_augment", "--no-rc", "-q", "-c", "1", "-d", "30d",
                    "--depot-list", rlist, "-T", "20s", xnd, NULL);
}

/* A writer's end: 0, or exit 12 with one line that says why (besides a failpoint's own). */
static int loud_or_ok(int rc, const char *err, const char *what)
{
    if (rc == 0)
        return 1;
    if (rc == EXIT_CHANGED && tt_count(err, "\n") - tt_count(err, " failpoint ") == 1 &&
        strstr(err, "changed"))
        return 1;
    fprintf(stderr, "%s: exit %d: %s", what, rc, err);
    return 0;
}

/* One keeper stopped just before it writes (failpoint keep.write=stop) while another does the
 * same pass and writes; then the first goes on.  Its exNode is older than the file's: it must
 * not replace it, and must free the copies it made. */
static void test_keeper_stopped_before_write(void)
{
    char src[PATH_MAX], xnd[PATH_MAX], stpath[PATH_MAX];
    tt_bg_t a = {0};
    tally_t t = {0};
    CU_ASSERT_EQUAL_FATAL(race_depots(), 0);
    snprintf(src, sizeof src, "%s/stopped.bin", lns_test_tmpdir());
    snprintf(xnd, sizeof xnd, "%s/stopped.xnd", lns_test_tmpdir());
    CU_ASSERT_EQUAL_FATAL(tt_make_file(src, 600000, 31), 0);
    CU_ASSERT_EQUAL_FATAL(upload(src, xnd, "-c 2 -F 2"), 0);
    round_begin();

    setenv("LNS_FAILPOINTS", "keep.write=stop", 1);
    int sp = spawn_writer(&a, 0, xnd, 1000);
    unsetenv("LNS_FAILPOINTS");
    CU_ASSERT_EQUAL_FATAL(sp, 0);
    /* stopped at the failpoint: /proc/PID/stat says T */
    snprintf(stpath, sizeof stpath, "/proc/%d/stat", a.pid);
    int stopped = 0;
    for (int waited = 0; waited < 60000 && !stopped; waited += 20) {
        char buf[512];
        lns_test_slurp(stpath, buf, sizeof buf);
        const char *p = strrchr(buf, ')');
        stopped = p && p[1] == ' ' && p[2] == 'T';
        if (!stopped)
            lns_test_sleep_ms(20);
    }
    CU_ASSERT_FATAL(stopped);
    char state[PATH_MAX];
    snprintf(state, sizeof state, "%s/keep1001.db", lns_test_tmpdir());
    int rc = tt_sh(&T, "$B/lors_keep --no-rc -q --copies 3 -d 30d --state '%s' "
                       "--depot-list '%s' '%s'", state, rlist, xnd);
    CU_ASSERT_EQUAL(rc, 0);
    kill(a.pid, SIGCONT);
    rc = tt_wait(&T, &a, 60000);
    CU_ASSERT_EQUAL(rc, EXIT_CHANGED);
    CU_ASSERT(loud_or_ok(rc, T.err, "the stopped keeper"));
    CU_ASSERT(good(xnd, src));
    xnd_t *x = tt_load(xnd);
    CU_ASSERT(x && x->nmaps == 6); /* the second keeper's pass: 2 fragments x 3 copies */
    xnd_free(x);
    round_end(xnd, &t, "stopped keeper");
    CU_ASSERT_EQUAL(t.leaks, 0);
    CU_ASSERT_EQUAL(t.orphans, 0);
    drop(xnd);
}

static void test_concurrent_writers(void)
{
    int rounds = env_int("LNS_RACE_ROUNDS", 3), leaks = 0, orphans = 0, lost = 0, bad = 0;
    int refused = 0;
    static const char *const pair_name[] = {"two keepers", "two augments", "keeper+augment"};
    CU_ASSERT_EQUAL_FATAL(race_depots(), 0);
    for (int r = 0; r < rounds; r++) {
        char src[PATH_MAX], xnd[PATH_MAX], what[64];
        tt_bg_t w[2];
        int pair = r % 3, kinds[2] = {pair == 1, pair != 0};
        tally_t t = {0};
        memset(w, 0, sizeof w);
        snprintf(src, sizeof src, "%s/cw%d.bin", lns_test_tmpdir(), r);
        snprintf(xnd, sizeof xnd, "%s/cw%d.xnd", lns_test_tmpdir(), r);
        snprintf(what, sizeof what, "round %d (%s)", r, pair_name[pair]);
        CU_ASSERT_EQUAL_FATAL(tt_make_file(src, 900000, 40 + (uint64_t)r), 0);
        CU_ASSERT_EQUAL_FATAL(upload(src, xnd, "-c 2 -F 3"), 0);
        round_begin();
        for (int k = 0; k < 2; k++)
            CU_ASSERT_EQUAL_FATAL(spawn_writer(&w[k], kinds[k], xnd, 2 * r + k), 0);
        for (int k = 0; k < 2; k++) {
            int rc = tt_wait(&T, &w[k], 120000);
            refused += rc == EXIT_CHANGED;
            if (!loud_or_ok(rc, T.err, what))
                bad++;
        }
        if (!good(xnd, src)) {
            fprintf(stderr, "%s: the exNode left is not good\n", what);
            lost++;
        }
        round_end(xnd, &t, what);
        leaks += t.leaks;
        orphans += t.orphans;
        drop(xnd);
    }
    printf("\n  concurrent writers: %d rounds, %d writers refused (exit 12), %d orphaned "
           "allocations, %d of them leaked (more than %d min left)\n", rounds, refused, orphans,
           leaks, LEAK_S / 60);
    CU_ASSERT_EQUAL(leaks, 0);
    CU_ASSERT_EQUAL(lost, 0);
    CU_ASSERT_EQUAL(bad, 0);
}

/* ---- SIGKILL at random points ------------------------------------------------------------ */

typedef enum { K_UPLOAD, K_UPLOAD_EC, K_AUGMENT, K_KEEP, K_KINDS } kill_kind_t;
static const char *const kind_name[] = {"lors_upload", "lors_upload --ec", "lors_augment",
                                        "lors_keep"};

/* Start the tool of kind on src (xnd: its output, or the exNode it works on). */
static int spawn_kind(tt_bg_t *bg, kill_kind_t kind, const char *src, const char *xnd, int n)
{
    char state[PATH_MAX];
    switch (kind) {
    case K_UPLOAD:
        return tt_spawn(&T, bg, "lors_upload", "--no-rc", "-q", "--depot-list", rlist, "-c", "2",
                        "-F", "8", "-d", "30d", "-o", xnd, src, NULL);
    case K_UPLOAD_EC:
        return tt_spawn(&T, bg, "lors_upload", "--no-rc", "-q", "--depot-list", rlist, "--ec",
                        "2+2", "--ec-piece", "64K", "-d", "30d", "-o", xnd, src, NULL);
    case K_AUGMENT:
        return tt_spawn(&T, bg, "lors_augment", "--no-rc", "-q", "-c", "1", "-d", "30d",
                        "--depot-list", rlist, xnd, NULL);
    default:
        snprintf(state, sizeof state, "%s/kill%d.db", lns_test_tmpdir(), n);
        return tt_spawn(&T, bg, "lors_keep", "--no-rc", "-q", "--copies", "3", "-d", "30d",
                        "--state", state, "--depot-list", rlist, xnd, NULL);
    }
}

/* One run of kind, SIGKILLed after delay_ms (-1: never): its exit, and the tally. */
static int kill_run(kill_kind_t kind, int n, int delay_ms, tally_t *t, int64_t *ms)
{
    char src[PATH_MAX], xnd[PATH_MAX], what[96];
    tt_bg_t bg = {0};
    snprintf(src, sizeof src, "%s/k%d.bin", lns_test_tmpdir(), n);
    snprintf(xnd, sizeof xnd, "%s/k%d.xnd", lns_test_tmpdir(), n);
    snprintf(what, sizeof what, "%s killed after %d ms", kind_name[kind], delay_ms);
    if (tt_make_file(src, 2000000, 60 + (uint64_t)n) != 0)
        return -1;
    if (kind == K_AUGMENT && upload(src, xnd, "-c 1 -F 8") != 0)
        return -1;
    if (kind == K_KEEP && upload(src, xnd, "-c 2 -F 4") != 0)
        return -1;
    round_begin();
    int64_t t0 = lns_mono_ms();
    if (spawn_kind(&bg, kind, src, xnd, n) != 0)
        return -1;
    if (delay_ms >= 0) {
        lns_test_sleep_ms(delay_ms);
        kill(bg.pid, SIGKILL);
    }
    int rc = tt_wait(&T, &bg, 120000);
    if (ms)
        *ms = lns_mono_ms() - t0;
    /* whatever exNode is left is whole: the old one, or the new one complete */
    if (access(xnd, F_OK) == 0 && !good(xnd, src)) {
        fprintf(stderr, "%s: the exNode left is not good\n", what);
        rc = -2;
    }
    round_end(xnd, t, what);
    drop(xnd);
    return rc;
}

static void test_sigkill_random_points(void)
{
    int kills = env_int("LNS_RACE_KILLS", 2);
    uint64_t seed = (uint64_t)env_int("LNS_RACE_SEED", (int)(time(NULL) & 0x7fffffff));
    uint64_t rs = seed;
    int n = 0, leaks = 0;
    CU_ASSERT_EQUAL_FATAL(race_depots(), 0);
    printf("\n  SIGKILL at random points (LNS_RACE_SEED=%" PRIu64 "):\n", seed);
    for (int kind = 0; kind < K_KINDS; kind++) {
        tally_t clean = {0}, t = {0};
        int64_t ms = 0;
        /* a run to the end sets the range of the kills: from 0 to a bit past its length */
        int rc = kill_run((kill_kind_t)kind, n++, -1, &clean, &ms);
        CU_ASSERT_EQUAL(rc, 0);
        CU_ASSERT_EQUAL(clean.orphans, 0);
        for (int k = 0; k < kills; k++) {
            int delay = (int)(lns_test_rand(&rs) % (uint64_t)(ms * 12 / 10 + 1));
            rc = kill_run((kill_kind_t)kind, n++, delay, &t, NULL);
            CU_ASSERT(rc == TT_SIGNALLED + SIGKILL || rc == 0);
        }
        printf("    %-18s %d kills (runs of %" PRId64 " ms): %d orphans, %.1f orphan-minutes "
               "per kill, %d leaked\n", kind_name[kind], kills, ms, t.orphans,
               t.minutes / kills, t.leaks);
        leaks += t.leaks;
    }
    CU_ASSERT_EQUAL(leaks, 0);
}

/* lors_download -R SIGKILLed at random points and run again, as a user does after each kill:
 * whatever the kills left (blocks written out of order, the control file OUT.lnsdl, the stale
 * tail of an older and longer OUT), the last run ends with exit 0, OUT is the file exactly,
 * and the control file is gone. */
static void test_download_resume_kills(void)
{
    int kills = 2 * env_int("LNS_RACE_KILLS", 2);
    uint64_t seed = (uint64_t)env_int("LNS_RACE_SEED", (int)(time(NULL) & 0x7fffffff));
    uint64_t rs = seed;
    char src[PATH_MAX], xnd[PATH_MAX], out[PATH_MAX], ctl[PATH_MAX + 8];
    CU_ASSERT_EQUAL_FATAL(race_depots(), 0);
    snprintf(src, sizeof src, "%s/dl.bin", lns_test_tmpdir());
    snprintf(xnd, sizeof xnd, "%s/dl.xnd", lns_test_tmpdir());
    snprintf(out, sizeof out, "%s/dl.out", lns_test_tmpdir());
    snprintf(ctl, sizeof ctl, "%s.lnsdl", out);
    CU_ASSERT_EQUAL_FATAL(tt_make_file(src, 8 << 20, 91), 0);
    CU_ASSERT_EQUAL_FATAL(upload(src, xnd, "-c 2 -F 8"), 0);
    /* an older, longer file where OUT goes */
    CU_ASSERT_EQUAL_FATAL(tt_make_file(out, (8 << 20) + 100000, 92), 0);
    /* a run to the end, timed, sets the range of the kills */
    int64_t t0 = lns_mono_ms();
    tt_bg_t bg = {0};
    CU_ASSERT_EQUAL_FATAL(tt_spawn(&T, &bg, "lors_download", "--no-rc", "--quiet", "-R", "-o", out,
                                   xnd, NULL), 0);
    CU_ASSERT_EQUAL(tt_wait(&T, &bg, 120000), 0);
    int64_t ms = lns_mono_ms() - t0;
    CU_ASSERT(tt_same_file(out, src));
    int killed = 0, right = 0;
    for (int k = 0; k < kills; k++) {
        /* a new round: the file's bytes spoiled again where they are, so that -R must find out
         * what is good (its digests) and fetch the rest */
        CU_ASSERT_EQUAL_FATAL(tt_make_file(out, (8 << 20) + 100000, 93 + (uint64_t)k), 0);
        for (int again = 0; again < 3; again++) {
            int delay = (int)(lns_test_rand(&rs) % (uint64_t)(ms + 1));
            memset(&bg, 0, sizeof bg);
            CU_ASSERT_EQUAL_FATAL(tt_spawn(&T, &bg, "lors_download", "--no-rc", "--quiet", "-R", "-o",
                                           out, xnd, NULL), 0);
            lns_test_sleep_ms(delay);
            kill(bg.pid, SIGKILL);
            int rc = tt_wait(&T, &bg, 120000);
            CU_ASSERT(rc == 0 || rc == TT_SIGNALLED + SIGKILL);
            killed += rc == TT_SIGNALLED + SIGKILL;
        }
        int rc = tt_run(&T, NULL, NULL, "lors_download", "--no-rc", "--quiet", "-R", "-o", out, xnd,
                        NULL);
        CU_ASSERT_EQUAL(rc, 0);
        if (rc != 0)
            fprintf(stderr, "lors_download -R after kills: exit %d: %s\n", rc, T.err);
        int same = tt_same_file(out, src);
        CU_ASSERT(same);
        right += same;
        CU_ASSERT_NOT_EQUAL(access(ctl, F_OK), 0);
    }
    printf("\n  lors_download -R (LNS_RACE_SEED=%" PRIu64 "): %d of %d runs killed (runs of %"
           PRId64 " ms), %d of %d files right after the kills\n", seed, killed, 3 * kills, ms,
           right, kills);
    drop(xnd);
}

static const lns_test_case tests[] = {
    {"a keeper stopped before its write does not replace the newer exNode",
     test_keeper_stopped_before_write},
    {"concurrent writers of one exNode leak nothing", test_concurrent_writers},
    {"SIGKILL at random points leaks nothing beyond minutes", test_sigkill_random_points},
    {"lors_download -R SIGKILLed at random points ends right", test_download_resume_kills},
};

TT_MAIN(&T, "lors_race", 1, tests)
