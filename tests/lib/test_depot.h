/* test_depot.h -- start, kill and restart real ibp_depot processes for system tests.
 *
 * A depot is started on 127.0.0.1 with --port 0 (or the port it had, on restart) and
 * --port-file, so the kernel picks a free port and the file tells us when it listens.
 * Every depot is tracked and SIGKILLed at exit, pass or fail.
 */
#ifndef LNS_TEST_DEPOT_H
#define LNS_TEST_DEPOT_H

#include <limits.h>
#include <stddef.h>

#include "lns_test.h"

typedef struct test_depot {
    union {
        lns_test_server srv; /* for lns_test_server_kill, _stop, _log_clean */
        struct {
            LNS_TEST_SERVER_FIELDS
        };
    };
    char events[PATH_MAX]; /* event log */
} test_depot_t;

/* Start a depot with one resource in a fresh directory under the test tmpdir.  extra: more
 * arguments, space-separated (NULL for none), e.g. "--admin-password pw".  The resource
 * defaults to hard=64M,soft=64M,max-duration=3600 unless extra has its own --resource.
 * Returns 0, or -1 after printing why. */
int td_start(test_depot_t *d, const char *extra);
/* Start again with the same directory, arguments and port (after lns_test_server_kill). */
int td_restart(test_depot_t *d);
/* The same, tried once: for a start that is meant to fail (0 if it started after all). */
int td_restart_once(test_depot_t *d);
/* The depot's TLS pin from its log ("pin sha256:..." of its last start, waited for up to 5 s)
 * into out[72].  0, or -1. */
int td_pin(const test_depot_t *d, char *out);
/* Connect a raw TCP socket to it (blocking, 10 s send/receive timeouts). -1 on failure. */
int td_connect(const test_depot_t *d);
/* The same inside a test, where a failure to connect ends it (CU_ASSERT_FATAL). */
int td_conn(const test_depot_t *d);
/* A depot whose clock the test moves: started with LNS_TEST_CLOCK_FILE naming a file of its
 * own (path in clock, PATH_MAX bytes), at 0 seconds past the real clock.  0 or -1. */
int td_start_clocked(test_depot_t *d, const char *extra, char *clock);
/* Its clock, seconds past the real one from now on (the depot reads the file at each call). */
void td_clock_set(const char *clock, int seconds);
/* Count the lines of the depot's event log that contain needle. */
int td_count_events(const test_depot_t *d, const char *needle);
/* Lines of event `event` (the first word, e.g. "IBP_REQ") containing needle. */
int td_count_events_of(const test_depot_t *d, const char *event, const char *needle);

/* A listening TCP socket on 127.0.0.1 and a port the kernel picked (for scripted peers).
 * Returns the fd (and *port), or -1. */
int raw_listen_loopback(int *port);
/* A port on 127.0.0.1 where nothing listens, 0 if none could be had.  It stays dead for the
 * life of the test program: a socket of ours keeps it bound (not listening, so a connect is
 * refused), so that no other program -- another test running beside this one -- is given
 * it and answers there. */
int raw_dead_port(void);

/* Raw protocol helpers for replaying exchanges byte by byte. */
int raw_send(int fd, const void *buf, size_t n);
/* Read one line ('\n' excluded) into buf; returns its length or -1. */
int raw_readline(int fd, char *buf, size_t size);
/* Read exactly n bytes; 0 or -1. */
int raw_read(int fd, void *buf, size_t n);
/* Send a request line (adds nothing: pass the '\n') and read one reply line into reply. */
int raw_cmd(int fd, const char *line, char *reply, size_t size);
/* The status code at the start of a reply line, or -1000 if there is none. */
int raw_code(const char *line);
/* printf a request line, send it, read the reply (into reply if not NULL), return its code
 * (-1000 when the connection failed).  A version-1 STATUS answer ("1 <n> \n" + n bytes) is
 * read whole: reply holds "1 <n> VS:... RE". */
int raw_reqf(int fd, char *reply, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* raw_reqf on a connection of its own to d, closed after the reply (the depot closes one
 * after most refusals): the reply's code, -1000 when the connection failed. */
int td_reqf(const test_depot_t *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 1 if the peer closed the connection (EOF, nothing more to read) within ms. */
int raw_closed_by_peer(int fd, int ms);

/* A capability set as ACCRE 1.4's client sends it back: the whole capabilities, and per
 * kind (0 read, 1 write, 2 manage) "<rid>#<key>" and the type key. */
typedef struct raw_caps {
    char cap[3][700];
    char key[3][400];
    char tk[3][64];
} raw_caps_t;
/* An ALLOCATE-style answer "1 <read> <write> <manage>" into c; 0 or -1. */
int raw_caps(const char *reply, raw_caps_t *c);
/* printf an allocating request line (ALLOCATE, ALIAS_ALLOCATE, ...), send it and read its
 * capabilities into c: 1, the depot's error code, or -1000 for an answer that is not three
 * capabilities. */
int raw_allocate(int fd, raw_caps_t *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* STORE (off < 0: append) or WRITE of n bytes as ACCRE's client sends them: 1, the error
 * code, or -1000 when the connection failed. */
int raw_put(int fd, const raw_caps_t *c, long off, const void *s, size_t n);
/* LOAD n bytes at off into buf (n + 1 bytes: NUL-terminated): 1, the error code, or -1000. */
int raw_get(int fd, const raw_caps_t *c, long off, size_t n, char *buf);

#endif
