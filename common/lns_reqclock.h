/* lns_reqclock.h -- the request clock of an HTTP server: a whole request head (and body)
 * within a timeout, and the oldest unfinished requests shed when the server nears its limit.
 *
 * libmicrohttpd's connection timeout counts only inactivity, so a client that sends one byte
 * of a request every few seconds holds its connection for ever (slowloris).  Each connection
 * is on a clock from its opening, or the end of its previous answer, until its request is in
 * (received); a thread shuts down the socket of one whose clock passes the timeout.  When more
 * than shed_above connections are open, the timeout falls to one second: the requests that
 * have waited longer are shut down, oldest first, so a flood of slow connections from any
 * number of addresses cannot fill the server (nor its listen queue) for long, while a
 * request that arrives whole in milliseconds is never cut.  All but start and stop take the
 * connection NULL as a no-op. */
#ifndef LNS_REQCLOCK_H
#define LNS_REQCLOCK_H

#include <stddef.h>
#include <stdio.h>

typedef struct lns_reqclock lns_reqclock_t;
typedef struct lns_reqclock_conn lns_reqclock_conn_t;

/* what names the server in its log lines ("http", "lors_serve"), written to log (NULL: the
 * daemon's log, lns_log); shed_above 0: never shed. */
lns_reqclock_t *lns_reqclock_start(const char *what, FILE *log, int timeout_s, int shed_above,
                                   char *err, size_t errlen);
void lns_reqclock_stop(lns_reqclock_t *d);
/* A new connection on socket fd, its clock running; NULL when out of memory. */
lns_reqclock_conn_t *lns_reqclock_open(lns_reqclock_t *d, int fd);
/* Its request is in: the clock stops while the answer is made and sent. */
void lns_reqclock_received(lns_reqclock_t *d, lns_reqclock_conn_t *c);
/* Its answer is sent: the clock of its next request runs. */
void lns_reqclock_next(lns_reqclock_t *d, lns_reqclock_conn_t *c);
/* It is being closed (before its socket is): forget it. */
void lns_reqclock_close(lns_reqclock_t *d, lns_reqclock_conn_t *c);
/* Connections closed so far by the timeout and by shedding (for tests and status pages). */
void lns_reqclock_counts(lns_reqclock_t *d, long *timed_out, long *shed);

#endif
