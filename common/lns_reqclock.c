/* lns_reqclock.c -- the request clock (see lns_reqclock.h).
 *
 * Each connection is on a clock from its opening, or from the end of its previous answer,
 * until its request (head and body) is in; the clock is off while the answer is being made
 * and sent.  A clock thread shuts down the socket of any connection whose clock passes the
 * timeout, and the server, which then reads the end of the stream, closes it.  An idle
 * keep-alive connection cannot be told from a slow request (libmicrohttpd does not say when
 * the next request's first byte arrives), so it is closed after the same time.
 *
 * The connections on the clock form one list in the order their clocks started, so the
 * thread looks only at its head, and shedding takes the head too.  One mutex guards the list;
 * the server tells us a connection is closed (lns_reqclock_close) before it closes the
 * socket, so a descriptor that has been reused is never shut down.
 */
#include "lns_reqclock.h"

#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "lns_err.h"
#include "lns_log.h"
#include "lns_time.h"

struct lns_reqclock_conn {
    lns_reqclock_conn_t *prev, *next; /* on the list while its clock runs */
    int on;
    int dying; /* shut down by us, not yet closed */
    int fd;
    int64_t since_ms;
};

struct lns_reqclock {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    char what[32];
    FILE *log; /* NULL: the daemon's log (lns_log) */
    int64_t timeout_ms;
    int shed_above;
    int open;  /* connections open (on the clock or not) */
    int dying; /* of them, shut down by us and not yet closed */
    lns_reqclock_conn_t *head, *tail; /* oldest clock first */
    pthread_t th;
    long cut, shed;               /* in all */
    long cut_logged, shed_logged; /* as of the last log line */
    int64_t logged_ms;
};

#define LOG_EVERY_MS 60000
/* A request younger than this is never shed: a client that is not under attack sends its
 * request head within milliseconds, so only connections that have trickled for a while
 * make room, and a burst of new clients does not shed itself. */
#define SHED_MIN_AGE_MS 1000

/* With d->mu held. */
static void clock_off(lns_reqclock_t *d, lns_reqclock_conn_t *c)
{
    if (!c->on)
        return;
    if (c->prev)
        c->prev->next = c->next;
    else
        d->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        d->tail = c->prev;
    c->prev = c->next = NULL;
    c->on = 0;
}

static void clock_on(lns_reqclock_t *d, lns_reqclock_conn_t *c)
{
    clock_off(d, c);
    c->since_ms = lns_mono_ms();
    c->prev = d->tail;
    if (d->tail)
        d->tail->next = c;
    else
        d->head = c;
    d->tail = c;
    c->on = 1;
}

/* With d->mu held: shut down c's socket and take it off the clock. */
static void cut_off(lns_reqclock_t *d, lns_reqclock_conn_t *c)
{
    shutdown(c->fd, SHUT_RDWR);
    clock_off(d, c);
    if (!c->dying) {
        c->dying = 1;
        d->dying++;
    }
}

/* With d->mu held: while more than shed_above connections are open, the request timeout is
 * SHED_MIN_AGE_MS: up to max of the oldest unfinished requests that are older are shut down
 * (not just enough to fall below shed_above, so that a listen queue full of slow clients
 * drains at once rather than a few a tick). */
static void shed(lns_reqclock_t *d, int64_t now, int max)
{
    if (!d->shed_above || d->open - d->dying <= d->shed_above)
        return;
    while (max-- > 0 && d->head && now - d->head->since_ms >= SHED_MIN_AGE_MS) {
        cut_off(d, d->head);
        d->shed++;
    }
}

static void say(lns_reqclock_t *d, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(lns_reqclock_t *d, int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (d->log)
        lns_log_line(d->log, fmt, ap);
    else
        lns_vlog(level, fmt, ap);
    va_end(ap);
}

/* With d->mu held: one line a minute at most about what was closed. */
static void log_closed(lns_reqclock_t *d, int64_t now)
{
    long cut = d->cut - d->cut_logged, shed = d->shed - d->shed_logged;
    if ((!cut && !shed) || now - d->logged_ms < LOG_EVERY_MS)
        return;
    if (cut)
        say(d, LNS_LOG_INFO, "%s: %ld connections closed that had not sent a whole request "
            "within %llds (request-timeout)", d->what, cut, (long long)(d->timeout_ms / 1000));
    if (shed)
        say(d, LNS_LOG_WARN, "%s: %ld unfinished requests closed, oldest first, to make room "
            "(more than %d connections open)", d->what, shed, d->shed_above);
    d->cut_logged = d->cut;
    d->shed_logged = d->shed;
    d->logged_ms = now;
}

static void *clock_main(void *arg)
{
    lns_reqclock_t *d = arg;
    int64_t tick_ms = d->timeout_ms / 4 < 250 ? d->timeout_ms / 4 : 250;

    pthread_mutex_lock(&d->mu);
    while (!d->stop) {
        struct timespec ts;
        lns_cond_deadline(&ts, tick_ms * 1000000LL);
        pthread_cond_timedwait(&d->cv, &d->mu, &ts);
        int64_t now = lns_mono_ms();
        while (d->head && now - d->head->since_ms >= d->timeout_ms) {
            cut_off(d, d->head);
            d->cut++;
        }
        shed(d, now, INT_MAX);
        log_closed(d, now);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

lns_reqclock_t *lns_reqclock_start(const char *what, FILE *log, int timeout_s, int shed_above,
                                   char *err, size_t errlen)
{
    lns_reqclock_t *d = calloc(1, sizeof *d);
    if (!d) {
        lns_err_set(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    snprintf(d->what, sizeof d->what, "%s", what);
    d->log = log;
    d->timeout_ms = (int64_t)(timeout_s > 0 ? timeout_s : 1) * 1000;
    d->shed_above = shed_above > 0 ? shed_above : 0;
    d->logged_ms = lns_mono_ms() - LOG_EVERY_MS;
    if (pthread_create(&d->th, NULL, clock_main, d) != 0) {
        pthread_cond_destroy(&d->cv);
        pthread_mutex_destroy(&d->mu);
        free(d);
        lns_err_set(err, errlen, "cannot start the request clock thread");
        return NULL;
    }
    return d;
}

void lns_reqclock_stop(lns_reqclock_t *d)
{
    if (!d)
        return;
    pthread_mutex_lock(&d->mu);
    d->stop = 1;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->th, NULL);
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    free(d);
}

lns_reqclock_conn_t *lns_reqclock_open(lns_reqclock_t *d, int fd)
{
    lns_reqclock_conn_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->fd = fd;
    pthread_mutex_lock(&d->mu);
    d->open++;
    /* Near the limit: the request that has waited longest makes room for this one. */
    shed(d, lns_mono_ms(), 1);
    clock_on(d, c);
    pthread_mutex_unlock(&d->mu);
    return c;
}

void lns_reqclock_received(lns_reqclock_t *d, lns_reqclock_conn_t *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&d->mu);
    clock_off(d, c);
    pthread_mutex_unlock(&d->mu);
}

void lns_reqclock_next(lns_reqclock_t *d, lns_reqclock_conn_t *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&d->mu);
    clock_on(d, c);
    pthread_mutex_unlock(&d->mu);
}

void lns_reqclock_close(lns_reqclock_t *d, lns_reqclock_conn_t *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&d->mu);
    clock_off(d, c);
    d->open--;
    d->dying -= c->dying;
    pthread_mutex_unlock(&d->mu);
    free(c);
}

void lns_reqclock_counts(lns_reqclock_t *d, long *timed_out, long *shed)
{
    pthread_mutex_lock(&d->mu);
    if (timed_out)
        *timed_out = d->cut;
    if (shed)
        *shed = d->shed;
    pthread_mutex_unlock(&d->mu);
}
