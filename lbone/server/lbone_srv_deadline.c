/* lbone_srv_deadline.c -- the request deadline: a whole request within request-timeout.
 *
 * libmicrohttpd's connection timeout counts only inactivity, so a client that sends one byte
 * of a request head every few seconds holds its connection for ever, and a thousand of them
 * hold every connection the server has (slowloris).  Here each connection is on a clock from
 * its opening, or from the end of its previous answer, until its request (head and body) is
 * in; the clock is off while the answer is being made and sent.  A clock thread shuts down
 * the socket of any connection whose clock passes the timeout, and libmicrohttpd, which then
 * reads the end of the stream, closes it.  An idle keep-alive connection cannot be told from
 * a slow request (libmicrohttpd does not say when the next request's first byte arrives), so
 * it is closed after the same time.
 *
 * The connections on the clock form one list in the order their clocks started, so the
 * thread looks only at its head.  One mutex guards the list; libmicrohttpd tells us a
 * connection is closed (lbone_deadline_close) before it closes the socket, so the thread
 * never shuts down a descriptor that has been reused.
 */
#include "lbone_srv.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "lns_err.h"
#include "lns_log.h"
#include "lns_time.h"

struct lbone_dl_conn {
    lbone_dl_conn_t *prev, *next; /* on the list while its clock runs */
    int on;
    int fd;
    int64_t since_ms;
};

struct lbone_deadline {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    int64_t timeout_ms;
    lbone_dl_conn_t *head, *tail; /* oldest clock first */
    pthread_t th;
    int cut;            /* connections cut since the last log line */
    int64_t logged_ms;
};

#define LOG_EVERY_MS 60000

/* With d->mu held. */
static void clock_off(lbone_deadline_t *d, lbone_dl_conn_t *c)
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

static void clock_on(lbone_deadline_t *d, lbone_dl_conn_t *c)
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

static void *clock_main(void *arg)
{
    lbone_deadline_t *d = arg;
    int64_t tick_ms = d->timeout_ms / 4 < 250 ? d->timeout_ms / 4 : 250;

    pthread_mutex_lock(&d->mu);
    while (!d->stop) {
        struct timespec ts;
        lns_cond_deadline(&ts, tick_ms * 1000000LL);
        pthread_cond_timedwait(&d->cv, &d->mu, &ts);
        int64_t now = lns_mono_ms();
        while (d->head && now - d->head->since_ms >= d->timeout_ms) {
            lbone_dl_conn_t *c = d->head;
            shutdown(c->fd, SHUT_RDWR);
            clock_off(d, c);
            d->cut++;
        }
        if (d->cut && now - d->logged_ms >= LOG_EVERY_MS) {
            lns_log(LNS_LOG_INFO, "http: %d connections closed that had not sent a whole "
                    "request within %llds (request-timeout)", d->cut,
                    (long long)(d->timeout_ms / 1000));
            d->cut = 0;
            d->logged_ms = now;
        }
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

lbone_deadline_t *lbone_deadline_start(int timeout_s, char *err, size_t errlen)
{
    lbone_deadline_t *d = calloc(1, sizeof *d);
    if (!d) {
        lns_err_set(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    d->timeout_ms = (int64_t)(timeout_s > 0 ? timeout_s : 1) * 1000;
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

void lbone_deadline_stop(lbone_deadline_t *d)
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

lbone_dl_conn_t *lbone_deadline_open(lbone_deadline_t *d, int fd)
{
    lbone_dl_conn_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->fd = fd;
    pthread_mutex_lock(&d->mu);
    clock_on(d, c);
    pthread_mutex_unlock(&d->mu);
    return c;
}

void lbone_deadline_received(lbone_deadline_t *d, lbone_dl_conn_t *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&d->mu);
    clock_off(d, c);
    pthread_mutex_unlock(&d->mu);
}

void lbone_deadline_next(lbone_deadline_t *d, lbone_dl_conn_t *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&d->mu);
    clock_on(d, c);
    pthread_mutex_unlock(&d->mu);
}

void lbone_deadline_close(lbone_deadline_t *d, lbone_dl_conn_t *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&d->mu);
    clock_off(d, c);
    pthread_mutex_unlock(&d->mu);
    free(c);
}
