/* ibp_pool.c -- idle keep-alive connections, kept per depot and shared by all threads.
 *
 * Each depot (host, port) has a slot with up to max_idle idle connections, oldest first.
 * A request takes the newest one (the least likely to have been closed by the depot's idle
 * timeout) and gives it back only after a clean, complete exchange, so a pooled connection
 * never holds unread bytes.  Before handing one out we poll it: an idle connection has
 * nothing to say, so if it is readable the depot has closed it (EOF, reset, or a 1.4
 * depot's parting "-66") and it is dropped.  Connections idle longer than max_idle_s are
 * not reused.  One mutex guards all slots; no socket call is made while holding it.
 */
#include "ibp_client_int.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lns_time.h"

#define POOL_BUCKETS 64

struct ibp_slot {
    ibp_slot_t *next;
    char *host;
    int port;
    int n;               /* idle connections in idle[0..n), oldest first */
    ibp_conn_t **idle;   /* max_idle entries */
};

struct ibp_pool {
    pthread_mutex_t mu;
    int max_idle;
    int64_t max_idle_ms;
    ibp_slot_t *buckets[POOL_BUCKETS];
};

ibp_pool_t *ibp_pool_new(int max_idle, int max_idle_s)
{
    ibp_pool_t *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    pthread_mutex_init(&p->mu, NULL);
    p->max_idle = max_idle > 0 ? max_idle : 0;
    p->max_idle_ms = (int64_t)(max_idle_s > 0 ? max_idle_s : 0) * 1000;
    return p;
}

void ibp_conn_close(ibp_conn_t *conn)
{
    if (!conn)
        return;
    close(conn->fd);
    lns_rbuf_free(&conn->rb);
    free(conn);
}

void ibp_pool_free(ibp_pool_t *p)
{
    if (!p)
        return;
    for (int b = 0; b < POOL_BUCKETS; b++) {
        ibp_slot_t *s = p->buckets[b], *next;
        for (; s; s = next) {
            next = s->next;
            for (int i = 0; i < s->n; i++)
                ibp_conn_close(s->idle[i]);
            free(s->idle);
            free(s->host);
            free(s);
        }
    }
    pthread_mutex_destroy(&p->mu);
    free(p);
}

static unsigned slot_hash(const char *host, int port)
{
    unsigned h = 2166136261u;
    for (const unsigned char *s = (const unsigned char *)host; *s; s++)
        h = (h ^ *s) * 16777619u;
    return (h ^ (unsigned)port) % POOL_BUCKETS;
}

/* With p->mu held. */
static ibp_slot_t *slot_find_or_add(ibp_pool_t *p, const char *host, int port)
{
    unsigned b = slot_hash(host, port);
    ibp_slot_t *s;
    for (s = p->buckets[b]; s; s = s->next)
        if (s->port == port && strcmp(s->host, host) == 0)
            return s;
    s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->host = strdup(host);
    s->idle = calloc(p->max_idle > 0 ? (size_t)p->max_idle : 1, sizeof *s->idle);
    if (!s->host || !s->idle) {
        free(s->host);
        free(s->idle);
        free(s);
        return NULL;
    }
    s->port = port;
    s->next = p->buckets[b];
    p->buckets[b] = s;
    return s;
}

/* An idle connection has nothing to read; anything readable means it is finished. */
static int conn_looks_alive(const ibp_conn_t *conn)
{
    struct pollfd pfd = {.fd = conn->fd, .events = POLLIN};
    int rc;
    do {
        rc = poll(&pfd, 1, 0);
    } while (rc < 0 && errno == EINTR);
    return rc == 0;
}

/* Pop the newest idle connection of slot s that is young enough, or NULL.  Stale ones
 * (and all older than them) are closed. */
static ibp_conn_t *slot_take(ibp_pool_t *p, ibp_slot_t *s)
{
    ibp_conn_t *conn = NULL, *stale[64];
    int nstale = 0;
    int64_t now = lns_mono_ms();

    pthread_mutex_lock(&p->mu);
    if (s->n > 0) {
        ibp_conn_t *top = s->idle[s->n - 1];
        if (now - top->idle_since_ms <= p->max_idle_ms) {
            conn = top;
            s->n--;
        } else {
            /* everything below the newest is older still */
            while (s->n > 0 && nstale < 64)
                stale[nstale++] = s->idle[--s->n];
        }
    }
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < nstale; i++)
        ibp_conn_close(stale[i]);
    return conn;
}

/* A connect that ibp_intr_abort can cut short: the socket is attached while it connects. */
static int watch_intr(void *arg, int fd)
{
    if (fd < 0) {
        ibp_intr_detach(arg);
        return 0;
    }
    return ibp_intr_attach(arg, fd);
}

int ibp_pool_get(ibp_pool_t *p, const char *host, int port, int reuse, int connect_timeout_ms,
                 struct ibp_intr *intr, ibp_conn_t **out)
{
    ibp_slot_t *s;
    ibp_conn_t *conn;
    int fd;

    pthread_mutex_lock(&p->mu);
    s = slot_find_or_add(p, host, port);
    pthread_mutex_unlock(&p->mu);
    if (!s)
        return IBP_E_ALLOC_FAILED;

    while (reuse && (conn = slot_take(p, s)) != NULL) {
        if (conn_looks_alive(conn)) {
            conn->reused = 1;
            *out = conn;
            return IBP_OK;
        }
        ibp_conn_close(conn);
    }

    fd = intr ? lns_connect_watched(host, port, connect_timeout_ms, watch_intr, intr)
              : lns_connect(host, port, connect_timeout_ms);
    if (fd < 0)
        return IBP_E_CONNECTION;
    conn = calloc(1, sizeof *conn);
    if (!conn || lns_rbuf_init(&conn->rb, fd, IBP_CONN_RBUF) < 0) {
        if (intr)
            ibp_intr_detach(intr);
        free(conn);
        close(fd);
        return IBP_E_ALLOC_FAILED;
    }
    conn->fd = fd;
    conn->slot = s;
    *out = conn;
    return IBP_OK;
}

void ibp_pool_put(ibp_pool_t *p, ibp_conn_t *conn)
{
    ibp_slot_t *s = conn->slot;
    ibp_conn_t *evicted = NULL;

    if (p->max_idle == 0 || lns_rbuf_pending(&conn->rb) > 0) {
        ibp_conn_close(conn);
        return;
    }
    conn->idle_since_ms = lns_mono_ms();
    conn->reused = 0;
    pthread_mutex_lock(&p->mu);
    if (s->n == p->max_idle) {
        evicted = s->idle[0];
        memmove(s->idle, s->idle + 1, (size_t)(s->n - 1) * sizeof *s->idle);
        s->n--;
    }
    s->idle[s->n++] = conn;
    pthread_mutex_unlock(&p->mu);
    ibp_conn_close(evicted);
}
