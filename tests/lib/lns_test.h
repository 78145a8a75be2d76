/* lns_test.h -- what every test program shares: the CUnit main and small helpers.
 *
 * A test file defines lns_test_register(), which adds its suites: a table of lns_test_case
 * per suite handed to LNS_TEST_SUITE (or CU_add_suite / CU_add_test where the tests depend on
 * what the machine has); a program of one suite says only LNS_TEST_MAIN(name, table).
 * tests/lib/cu_main.c provides main().  Each program prints CUnit's report and,
 * last, one line "RESULT <program> <passed> <failed>" that tests/run.sh adds up.
 */
#ifndef LNS_TEST_H
#define LNS_TEST_H

#include <CUnit/CUnit.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* Defined by each test program. */
void lns_test_register(void);

/* One test of a suite's table: the name CUnit reports and the function. */
typedef struct {
    const char *name;
    CU_TestFunc fn;
} lns_test_case;

/* Add a suite (init and clean may be NULL) and its n tests in order; the suite.  A failure
 * sets CUnit's error, which main() counts as a failed test. */
CU_pSuite lns_test_add_suite(const char *name, CU_InitializeFunc init, CU_CleanupFunc clean,
                             const lns_test_case *tests, size_t n);
/* The same for a table that is an array in scope. */
#define LNS_TEST_SUITE(name, init, clean, table) \
    lns_test_add_suite((name), (init), (clean), (table), sizeof(table) / sizeof((table)[0]))
/* Add the n tests to the suite s (those LNS_TEST_ONLY names, when it is set). */
void lns_test_add_tests(CU_pSuite s, const lns_test_case *tests, size_t n);
/* The same for a table that is an array in scope (tests a machine may lack the tools for). */
#define LNS_TEST_ADD(s, table) lns_test_add_tests((s), (table), sizeof(table) / sizeof((table)[0]))
/* lns_test_register() of a program that is one suite: the table, with init and clean. */
#define LNS_TEST_MAIN_WITH(name, init, clean, table) \
    void lns_test_register(void) { LNS_TEST_SUITE((name), (init), (clean), table); }
/* The same without init and clean. */
#define LNS_TEST_MAIN(name, table) LNS_TEST_MAIN_WITH(name, NULL, NULL, table)

/* Directory of the programs under test (the build's bin/): $LNS_BIN, else <dir of argv[0]>/../bin. */
const char *lns_test_bindir(void);
/* A fresh temporary directory, removed (recursively) at exit even when tests fail. */
const char *lns_test_tmpdir(void);
/* <tmpdir>/<name>; the result lives until 16 more calls. */
const char *lns_test_path(const char *name);
/* The start of a file as a string: at most size - 1 bytes, NUL-terminated ("" if unreadable). */
void lns_test_slurp(const char *path, char *buf, size_t size);
/* CU_ASSERT that text holds each of the needles (strings), one assertion for each, a failure
 * reported at the caller's line with the needle missed. */
#define LNS_TEST_HAS(text, ...) \
    lns_test_has(__FILE__, __LINE__, (text), __VA_ARGS__, (const char *)NULL)
void lns_test_has(const char *file, int line, const char *text, ...);
/* Read fd (lns_read_some: sealed or not) until its end, an error or a read that waits ms:
 * how many bytes came. */
int64_t lns_test_drain(int fd, int ms);
/* A file of the source tree (e.g. "tests/wan/short.sh"), found relative to the current
 * directory (make test runs from the root) or to the bin directory (build/<kind>/bin/../../..).
 * 0 with its path in out, or -1 if it is not there (or not executable). */
int lns_test_find_file(const char *rel, char *out, size_t size);
/* Run a shell command, print its output indented; its exit status, or -1 without one. */
int lns_test_run_echo(const char *cmd);
/* Run the printf-formatted command through sh with $B = the bin directory and $D = the tmpdir,
 * after the shell assignments vars (e.g. "L='...'"), stdin /dev/null, stdout and stderr into
 * run.out and run.err in the tmpdir.  The exit code, or -1 without one. */
int lns_test_vsh(const char *vars, const char *fmt, va_list ap);
/* Run a test script with the bin directory as its one argument and print its output; it must
 * exit 0.  Exit 77 means it could not run here: skip_why is printed first, and the test still
 * fails. */
void lns_test_script(const char *path, const char *skip_why);
/* Fill buf with deterministic pseudo-random bytes from seed. */
void lns_test_fill(void *buf, size_t n, uint64_t seed);
/* The next number of a xorshift64 sequence in *state (never 0: start it at any non-zero). */
uint64_t lns_test_rand(uint64_t *state);
/* A pipe fed from a thread: lns_test_feed_start makes the pipe and starts a thread that writes
 * data[0..n) into it in writes of at most chunk bytes, then closes its end; the reader reads
 * f->rfd.  -1 if the pipe cannot be made.  lns_test_feed_end joins the thread and closes rfd. */
typedef struct lns_test_feed {
    int rfd, wfd;
    const unsigned char *data;
    size_t n, chunk;
    pthread_t th;
} lns_test_feed;
int lns_test_feed_start(lns_test_feed *f, const void *data, size_t n, size_t chunk);
void lns_test_feed_end(lns_test_feed *f);
/* Sleep ms milliseconds. */
void lns_test_sleep_ms(int ms);
/* Waiting for an event (a file, a log line, a child, a job's end) polls for it with a
 * deadline that only a hang reaches, never a fixed sleep that a busy machine outlasts:
 *     int64_t end = lns_test_deadline(LNS_TEST_WAIT_MS);
 *     while (!condition && lns_test_poll(end))
 *         refresh what condition reads;
 * lns_test_deadline: the monotonic millisecond ms from now.  lns_test_poll: 0 once the
 * deadline has passed, else 1 after 10 ms of sleep. */
#define LNS_TEST_WAIT_MS 30000
int64_t lns_test_deadline(int ms);
int lns_test_poll(int64_t deadline);
/* Seconds of CPU this process has used (all its threads): what a test judges cost by, with
 * a wide margin, where wall time would judge how busy the machine is. */
double lns_test_cpu_s(void);
/* Send sig to the child *pid.  For SIGKILL, SIGTERM and SIGINT also reap it (SIGKILL after
 * 10 s if it has not gone), untrack it and set *pid to 0; for SIGSTOP wait until every
 * thread of it has stopped (kill only queues the signal; 2 s at most).  0, or -1 if there
 * is no child, kill fails or it did not stop. */
int lns_test_signal_child(int *pid, int sig);
/* 1 if the log at path holds no sanitizer report (a missing log is clean), else 0 after a
 * line on stderr. */
int lns_test_log_clean(const char *path);
/* Start the server program prog of the bin directory: --listen 127.0.0.1 --port port (0: the
 * kernel picks) --port-file dir/port, then the NULL-terminated args and the space-separated
 * words of extra; its stdout and stderr appended to log.  Waits up to 15 s for the port file;
 * tries times in all, 100 ms apart (a restart's old port may sit in TIME_WAIT).  The port, the
 * process in *pid and tracked; or -1 after printing why, with no process left. */
int lns_test_start_server(const char *prog, const char *dir, int port, const char *const *args,
                          const char *extra, const char *log, int tries, int *pid);
/* What every server process a test starts has.  test_depot_t and test_lbone_t put it in a
 * union with the same fields unnamed, so d->port and &d->srv both work. */
#define LNS_TEST_SERVER_FIELDS                                                     \
    int pid;             /* 0 when not running */                                  \
    int port;                                                                      \
    char dir[PATH_MAX];  /* its own directory: port file, logs, data */            \
    char log[PATH_MAX];  /* its stdout and stderr */                               \
    char args[2048];     /* extra arguments, space-separated */
typedef struct lns_test_server {
    LNS_TEST_SERVER_FIELDS
} lns_test_server;
/* Clear *s and give it a fresh directory <tmpdir>/<kind><seq>, the log <kind>.log in it and
 * the extra arguments (NULL: none).  0, or -1 if a path is too long. */
int lns_test_server_init(lns_test_server *s, const char *kind, int seq, const char *extra);
/* lns_test_start_server of prog with s's directory, port, extra arguments and log; s->port
 * set.  0, or -1 after printing why. */
int lns_test_server_spawn(lns_test_server *s, const char *prog, int port,
                          const char *const *args, int tries);
/* Send sig (lns_test_signal_child: SIGKILL, SIGTERM, SIGINT also wait for the end, SIGSTOP
 * until it has stopped). */
int lns_test_server_kill(lns_test_server *s, int sig);
/* SIGTERM, wait, forget; nothing when it is not running. */
void lns_test_server_stop(lns_test_server *s);
/* 1 if its log holds no sanitizer report (ASan, LSan, UBSan); else prints and 0. */
int lns_test_server_log_clean(const lns_test_server *s);
/* The end of a test's server: stop it, and CU_ASSERT that its log is clean. */
void lns_test_server_finish(lns_test_server *s);
/* Register a child process to be SIGKILLed at exit (crash or not). */
void lns_test_track_pid(int pid);
void lns_test_untrack_pid(int pid);

#endif
