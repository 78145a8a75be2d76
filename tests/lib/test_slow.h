/* test_slow.h -- clients of an HTTP server from many loopback addresses, for the abuse tests
 * of lbone_server and lors_serve: quick requests timed, and slow connections (slowloris) that
 * send a request one byte per 100 ms, all fed by one thread, reopened when cut if asked.
 *
 * The whole of 127.0.0.0/8 is loopback, so a socket bound to 127.0.0.2 before it connects to
 * the server on 127.0.0.1 is a client from another address. */
#ifndef TEST_SLOW_H
#define TEST_SLOW_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* A TCP connection from address src to 127.0.0.1:port (2 s send/receive timeouts); -1 on
 * failure. */
int ts_connect_from(const char *src, int port);
/* The same without waiting for the handshake (the listen queue may be full). */
int ts_connect_nowait(const char *src, int port);
/* The status of a whole reply (head and Content-Length bytes) read within wait_ms; 0 if
 * none. */
int ts_read_reply(int fd, int wait_ms);
/* The same; when it is not a whole reply (0), why into why: what came (bytes, of a head or
 * body), what ended it (EOF, an errno, the wait) and after how long. */
int ts_read_reply_why(int fd, int wait_ms, char *why, size_t size);
/* GET path from src with "Connection: close": 1 for a whole 200 within wait_ms (*ms: how
 * long it took). */
int ts_get(const char *src, int port, const char *path, int wait_ms, int64_t *ms);
/* GETs of path from 127.0.0.2 every 100 ms for ms, and at least 5: how many were answered
 * within wait_ms (*ok), how many of them within 1 s (*fast), of how many, and the slowest. */
void ts_get_for(int port, const char *path, int ms, int wait_ms, int *ok, int *fast, int *tries,
                int64_t *worst);
/* Print what ts_get_for found ("WHAT: 30 of 30 GETs answered, 29 within 1 s, slowest 1203
 * ms") and judge it: at least 95% answered; for a case of the target (target 1: the
 * default limits against 2,000 slow connections) with LNS_ABUSE_STRICT=1 in the environment
 * (make bench-abuse), 95% within 1 s too, which a test on a busy machine cannot promise. */
void ts_judge(const char *what, int target, int ok, int fast, int tries, int64_t worst);
/* ts_get_for (wait_ms 5000) and ts_judge of what it found; 1 if every GET was answered. */
int ts_judged_gets(int port, const char *path, int ms, const char *what, int target);

/* Room for n more descriptors in this process (the soft limit raised to the hard one)? */
int ts_fds_for(int n);

#define TS_MAX_SLOW 2048

typedef struct ts_slow {
    int fd;
    const char *req; /* the bytes to send, one per tick; at the end, X-headers forever */
    size_t sent;
    int64_t opened_ms, closed_ms; /* closed_ms 0: still open */
    char src[16];                 /* its address, to reconnect from */
} ts_slow_t;

typedef struct ts_slow_set {
    ts_slow_t c[TS_MAX_SLOW];
    int n;
    int port;
    int again; /* reopen a connection the server closed, as an attacker would */
    long reopened;
    atomic_int stop;
    pthread_mutex_t mu;
    pthread_t th;
} ts_slow_set_t;

void ts_slow_start(ts_slow_set_t *s);
/* One more slow connection from src sending req, its first fast bytes at once; 0 or -1. */
int ts_slow_add(ts_slow_set_t *s, const char *src, int port, const char *req, size_t fast);
/* n slow connections sending req from addresses 127.0.2.1 ... (per_address on each),
 * reopened as soon as they are closed; how many were made. */
int ts_slow_flood(ts_slow_set_t *s, int port, int n, int per_address, const char *req);
int ts_slow_open_count(ts_slow_set_t *s);
/* Stop feeding them (then s->c may be read without the lock). */
void ts_slow_stop(ts_slow_set_t *s);
void ts_slow_end(ts_slow_set_t *s);

/* The attack and its judgement: ts_slow_flood of n connections sending req to port,
 * settle_ms to let them settle, then ts_judged_gets of path for 3 s as what (target 1: the
 * issue's target) while the flood goes on.  How many were made; in *reopened how often the
 * server's cuts were reopened by then. */
int ts_flood_judged(int port, int n, int per_address, const char *req, int settle_ms,
                    const char *path, const char *what, int target, long *reopened);

#endif
