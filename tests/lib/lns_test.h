/* lns_test.h -- what every test program shares: the CUnit main and small helpers.
 *
 * A test file defines lns_test_register(), which adds its suites with CU_add_suite /
 * CU_add_test; tests/lib/cu_main.c provides main().  Each program prints CUnit's report and,
 * last, one line "RESULT <program> <passed> <failed>" that tests/run.sh adds up.
 */
#ifndef LNS_TEST_H
#define LNS_TEST_H

#include <CUnit/CUnit.h>
#include <stddef.h>
#include <stdint.h>

/* Defined by each test program. */
void lns_test_register(void);

/* Directory of the programs under test (the build's bin/): $LNS_BIN, else <dir of argv[0]>/../bin. */
const char *lns_test_bindir(void);
/* A fresh temporary directory, removed (recursively) at exit even when tests fail. */
const char *lns_test_tmpdir(void);
/* <tmpdir>/<name>; the result lives until 16 more calls. */
const char *lns_test_path(const char *name);
/* The start of a file as a string: at most size - 1 bytes, NUL-terminated ("" if unreadable). */
void lns_test_slurp(const char *path, char *buf, size_t size);
/* A file of the source tree (e.g. "tests/wan/short.sh"), found relative to the current
 * directory (make test runs from the root) or to the bin directory (build/<kind>/bin/../../..).
 * 0 with its path in out, or -1 if it is not there (or not executable). */
int lns_test_find_file(const char *rel, char *out, size_t size);
/* Run a shell command, print its output indented; its exit status, or -1 without one. */
int lns_test_run_echo(const char *cmd);
/* Fill buf with deterministic pseudo-random bytes from seed. */
void lns_test_fill(void *buf, size_t n, uint64_t seed);
/* Sleep ms milliseconds. */
void lns_test_sleep_ms(int ms);
/* Send sig to the child *pid.  For SIGKILL, SIGTERM and SIGINT also reap it (SIGKILL after
 * 10 s if it has not gone), untrack it and set *pid to 0.  0, or -1 if there is no child or
 * kill fails. */
int lns_test_signal_child(int *pid, int sig);
/* 1 if the log at path holds no sanitizer report (a missing log is clean), else 0 after a
 * line on stderr. */
int lns_test_log_clean(const char *path);
/* Register a child process to be SIGKILLed at exit (crash or not). */
void lns_test_track_pid(int pid);
void lns_test_untrack_pid(int pid);

#endif
