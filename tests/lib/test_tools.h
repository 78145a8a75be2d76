/* test_tools.h -- running the LoRS programs as a user runs them, for the CLI system tests.
 *
 * A tt_env_t is the fixture of one test program: a fleet of real depots, a libibp client to
 * look at them, and the stdout and stderr of the last program run.  Programs run either
 * straight (tt_run: fork and exec, no shell) or through sh -c (tt_sh: pipes, redirections,
 * "VAR=x prog").  HOME is the test tmpdir and LNS_RC, LNS_KEY, LNS_KEY_FILE are unset for the
 * whole process, so the tester's own ~/.xndrc and keys never leak into a run.
 */
#ifndef LNS_TEST_TOOLS_H
#define LNS_TEST_TOOLS_H

#include <CUnit/CUnit.h>
#include <stddef.h>
#include <stdint.h>

#include "ibp.h"
#include "lns_test.h"
#include "lors.h"
#include "test_depot.h"
#include "xnd.h"

#define TT_MAXD 8   /* depots in one fixture */
#define TT_MAXM 16  /* mappings tt_ls_json reads */

typedef struct tt_env {
    int n;                        /* depots dep[0..n) */
    test_depot_t dep[TT_MAXD];
    lors_depot_t ldep[TT_MAXD];
    ibp_client_t *cli;
    char depots[512];             /* all of them, "127.0.0.1:p0,127.0.0.1:p1 127.0.0.1:p2,...":
                                   * commas and a space, both separators users write */
    char out[1 << 17], err[1 << 14]; /* the last run's stdout and stderr (cut, NUL-ended) */
    int seq;                      /* makes the names of files the helpers create unique */
} tt_env_t;

/* Add the CUnit suite of the ntests tests that use *t: its init sets up the environment and
 * starts n depots (tl_fleet_start), its cleanup stops them and fails if a depot's log holds a
 * sanitizer report.  One such suite per program; NULL if there is one already. */
CU_pSuite tt_add_suite(tt_env_t *t, const char *name, int n, const lns_test_case *tests,
                       size_t ntests);
/* lns_test_register() of a CLI test program: that one suite, the tests of table (an array of
 * lns_test_case in scope) over the fixture *t of n depots. */
#define TT_MAIN(t, name, n, table)                                                  \
    _Static_assert((n) >= 1 && (n) <= TT_MAXD, "depots of one fixture");           \
    void lns_test_register(void)                                                    \
    {                                                                               \
        tt_add_suite((t), (name), (n), (table), sizeof(table) / sizeof((table)[0])); \
    }
/* Restart the depots an earlier test killed, wake those it stopped with SIGSTOP (it may have
 * ended at a failed assertion). */
void tt_revive(tt_env_t *t);

/* Run bin/<prog> with the NULL-terminated arguments (a NULL argument ends them early); stdin
 * from in (NULL: /dev/null), env "NAME=value" added (NULL: none).  The exit code, or -1. */
int tt_run(tt_env_t *t, const char *env, const char *in, const char *prog, ...)
    __attribute__((sentinel));
/* Run "sh -c <cmd>" with $B the programs' directory, $D the tmpdir and $L t->depots, stdin
 * from /dev/null.  The exit code, or -1. */
int tt_sh(tt_env_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "127.0.0.1:p1,127.0.0.1:p2" for the depots listed by index, -1 ending the list; the
 * result lives until 4 more calls. */
const char *tt_dlist(tt_env_t *t, int first, ...);
/* The port of a capability, or -1. */
int tt_cap_port(const char *cap);
/* The port of "host:port[/rid]", or -1. */
int tt_port_of(const char *depot);
/* How often needle occurs in text (tt_count(s, "\n"): its lines). */
int tt_count(const char *text, const char *needle);

/* Write n bytes to path; 0 or -1. */
int tt_write_file(const char *path, const void *p, size_t n);
/* A file of n pseudo-random bytes from seed; 0 or -1. */
int tt_make_file(const char *path, size_t n, uint64_t seed);
/* 1 if both files can be read and hold the same bytes, else 0. */
int tt_same_file(const char *a, const char *b);
/* Read an exNode file; NULL after a line on stderr. */
xnd_t *tt_load(const char *path);
/* DECR every allocation of an exNode file, so the depots do not fill up. */
void tt_free_all(tt_env_t *t, const char *xnd);

/* A file of n bytes from seed, uploaded by lors_upload -c copies -F frags -d 10m to depots
 * (a tt_dlist) with extra flags (or NULL); its paths in src[] and xnd[] (4096 bytes each).
 * lors_upload's exit code (printed when not 0), or -1. */
int tt_upload(tt_env_t *t, size_t n, uint64_t seed, int copies, int frags, const char *depots,
              const char *extra, char *src, char *xnd);
/* The bytes of the file path, malloc'd, their number in *n; NULL if it cannot be opened. */
unsigned char *tt_read_whole(const char *path, size_t *n);
/* 1 if lors_download gives back the bytes of src from xnd, else 0. */
int tt_downloads_equal(tt_env_t *t, const char *xnd, const char *src);

/* A program running in the background, its stdin a pipe the test writes (tt_spawn). */
typedef struct tt_bg {
    int pid;   /* 0 once reaped */
    int in;    /* the write end of its stdin; -1 once closed */
    char out[PATH_MAX], err[PATH_MAX]; /* its stdout and stderr: bg.out.PID, bg.err.PID */
} tt_bg_t;

/* Start bin/<prog> with the NULL-terminated arguments in the background: stdin a pipe
 * (bg->in), stdout and stderr into files of the tmpdir (tt_wait reads them into t->out and
 * t->err); tracked, so it is killed at exit whatever happens.  0, or -1 after a line. */
int tt_spawn(tt_env_t *t, tt_bg_t *bg, const char *prog, ...) __attribute__((sentinel));
/* Close its stdin (if still open) and wait for it, at most ms (then SIGKILL); its stdout
 * and stderr into t->out and t->err.  The exit code; TT_SIGNALLED + the signal that ended
 * it (never an exit code, so 130 is an exit(130) and not a death by SIGINT); or -1. */
#define TT_SIGNALLED 1000
int tt_wait(tt_env_t *t, tt_bg_t *bg, int ms);
/* Start lors_serve in the background on dir with up to 4 extra flags (NULL ends them): port
 * 0 through a port file, its log in log (PATH_MAX bytes; the file is made anew), -T 3s unless
 * a flag says otherwise.  0 once it listens, with the port in *port; -1 if it did not. */
int tt_serve(tt_env_t *t, tt_bg_t *bg, const char *dir, char *log, int *port, const char *a1,
             const char *a2, const char *a3, const char *a4);
/* Poll every 10 ms, at most ms, until the file path holds at least n lines containing
 * needle.  1 when it does, else 0. */
int tt_wait_lines(const char *path, const char *needle, int n, int ms);
/* The number of allocations depot i holds (its STATUS: NA), or -1. */
int tt_depot_allocs(tt_env_t *t, int i);

/* A mapping as lors_ls --json shows it. */
typedef struct tt_lsmap {
    char depot[128];
    long long off, len, expires;
} tt_lsmap_t;

/* lors_ls --json of xnd into m[TT_MAXM]: the number of mappings, or -1. */
int tt_ls_json(tt_env_t *t, const char *xnd, tt_lsmap_t *m);
/* The value of key in one event line ("... key=N ..."); LLONG_MIN if absent or "-". */
long long tt_ev_int(const char *line, const char *key);

#endif
