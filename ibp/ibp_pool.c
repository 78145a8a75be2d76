/* ibp_pool.c -- idle keep-alive connections, kept per depot and shared by all threads.
 *
 * Each depot (host, port) the client has finished an exchange with has an entry with up to
 * max_idle idle connections, oldest first.  A request takes the newest one (the least likely
 * to have been closed by the depot's idle timeout) and gives it back only after a clean,
 * complete exchange, so a pooled connection never holds unread bytes.  Before handing one out
 * we poll it: an idle connection has nothing to say, so if it is readable the depot has
 * closed it (EOF, reset, or a 1.4 depot's parting "-66") and it is dropped.  Connections idle
 * longer than max_idle_s are not reused.
 *
 * The entries are bounded, for a long-lived client such as a depot SENDing to whatever
 * target its clients name: an entry is made only when a connection is given back (a depot
 * that never answered leaves nothing), there are at most IBP_POOL_MAX_DEPOTS of them in a
 * hash table (a lookup is O(1)), the least recently used goes when a new one needs room,
 * and every get or put first drops the entries unused for max_idle_s, with their
 * connections.  The entries form a list from the most to the least recently used, so both
 * evictions take from its tail.
 *
 * One mutex guards the table; no socket call is made while holding it (connections to be
 * closed are collected and closed after it is released).  A connection in use names its
 * depot, not its entry, so an entry can go while one of its connections is out.
 */
#include "ibp_client_int.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lns_time.h"

struct ibp_slot {
    ibp_slot_t *hnext;        /* hash chain */
    ibp_slot_t *newer, *older; /* the recency list */
    char *host;
    int port;
    int64_t used_ms;     /* last get or put (monotonic) */
    int n;               /* idle connections in idle[0..n), oldest first */
    ibp_conn_t **idle;   /* max_idle entries */
};

struct ibp_pool {
    pthread_mutex_t mu;
    int max_idle;
    int64_t max_idle_ms;
    int nslots;
    ibp_slot_t *newest, *oldest;
    unsigned mask;        /* buckets - 1 */
    ibp_slot_t **buckets; /* at least IBP_POOL_MAX_DEPOTS, a power of two */
};

ibp_pool_t *ibp_pool_new(int max_idle, int max_idle_s)
{
    ibp_pool_t *p = calloc(1, sizeof *p);
    unsigned nb = 1;
    if (!p)
        return NULL;
    while (nb < IBP_POOL_MAX_DEPOTS)
        nb <<= 1;
    p->buckets = calloc(nb, sizeof *p->buckets);
    if (!p->buckets) {
        free(p);
        return NULL;
    }
    p->mask = nb - 1;
    pthread_mutex_init(&p->mu, NULL);
    p->max_idle = max_idle > 0 ? max_idle : 0;
    p->max_idle_ms = (int64_t)(max_idle_s > 0 ? max_idle_s : 0) * 1000;
    return p;
}

void ibp_conn_close(ibp_conn_t *conn)
{
    if (!conn)
        return;
    lns_sock_close(conn->fd);
    lns_rbuf_free(&conn->rb);
    free(conn->host);
    free(conn);
}

/* An entry already out of the table: close its connections and free it. */
static void slot_free(ibp_slot_t *s)
{
    for (int i = 0; i < s->n; i++)
        ibp_conn_close(s->idle[i]);
    free(s->idle);
    free(s->host);
    free(s);
}

/* Entries taken out by slot_remove, chained through hnext: freed once the mutex is released. */
static void slots_free(ibp_slot_t *list)
{
    while (list) {
        ibp_slot_t *next = list->hnext;
        slot_free(list);
        list = next;
    }
}

void ibp_pool_free(ibp_pool_t *p)
{
    if (!p)
        return;
    for (ibp_slot_t *s = p->newest, *next; s; s = next) {
        next = s->older;
        slot_free(s);
    }
    free(p->buckets);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

static unsigned slot_hash(const char *host, int port)
{
    unsigned h = 2166136261u;
    for (const unsigned char *s = (const unsigned char *)host; *s; s++)
        h = (h ^ *s) * 16777619u;
    h = (h ^ (unsigned)port) * 16777619u;
    return h ^ (h >> 16);
}

/* The rest of this file's helpers run with p->mu held. */

static ibp_slot_t *slot_find(ibp_pool_t *p, const char *host, int port)
{
    for (ibp_slot_t *s = p->buckets[slot_hash(host, port) & p->mask]; s; s = s->hnext)
        if (s->port == port && strcmp(s->host, host) == 0)
            return s;
    return NULL;
}

static void lru_unlink(ibp_pool_t *p, ibp_slot_t *s)
{
    if (s->newer)
        s->newer->older = s->older;
    else
        p->newest = s->older;
    if (s->older)
        s->older->newer = s->newer;
    else
        p->oldest = s->newer;
    s->newer = s->older = NULL;
}

/* Mark s used now: the newest entry. */
static void slot_touch(ibp_pool_t *p, ibp_slot_t *s, int64_t now)
{
    s->used_ms = now;
    if (p->newest == s)
        return;
    if (s->newer || s->older || p->oldest == s)
        lru_unlink(p, s);
    s->older = p->newest;
    if (p->newest)
        p->newest->newer = s;
    p->newest = s;
    if (!p->oldest)
        p->oldest = s;
}

/* Take s out of the table and the list, onto *dead (to be freed by slots_free). */
static void slot_remove(ibp_pool_t *p, ibp_slot_t *s, ibp_slot_t **dead)
{
    ibp_slot_t **pp = &p->buckets[slot_hash(s->host, s->port) & p->mask];
    while (*pp != s)
        pp = &(*pp)->hnext;
    *pp = s->hnext;
    lru_unlink(p, s);
    p->nslots--;
    s->hnext = *dead;
    *dead = s;
}

/* Drop the entries unused for longer than max_idle_s: their connections are all older. */
static void slots_expire(ibp_pool_t *p, int64_t now, ibp_slot_t **dead)
{
    while (p->oldest && now - p->oldest->used_ms > p->max_idle_ms)
        slot_remove(p, p->oldest, dead);
}

/* A new entry for host:port, making room by dropping the least recently used; NULL when
 * out of memory. */
static ibp_slot_t *slot_add(ibp_pool_t *p, const char *host, int port, ibp_slot_t **dead)
{
    ibp_slot_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->host = strdup(host);
    s->idle = calloc((size_t)p->max_idle, sizeof *s->idle);
    if (!s->host || !s->idle) {
        free(s->host);
        free(s->idle);
        free(s);
        return NULL;
    }
    s->port = port;
    if (p->nslots >= IBP_POOL_MAX_DEPOTS)
        slot_remove(p, p->oldest, dead);
    unsigned b = slot_hash(host, port) & p->mask;
    s->hnext = p->buckets[b];
    p->buckets[b] = s;
    p->nslots++;
    return s;
}

/* An idle connection has nothing to read; anything readable means it is finished. */
static int conn_looks_alive(const ibp_conn_t *conn)
{
    return lns_sock_idle_ok(conn->fd); /* a sealed one may have taken session tickets */
}

/* Pop the newest idle connection to host:port that is young enough, or NULL.  Stale ones
 * (and all older than them) are closed, and so are the entries that expired. */
static ibp_conn_t *pool_take(ibp_pool_t *p, const char *host, int port)
{
    ibp_conn_t *conn = NULL, *stale[64];
    ibp_slot_t *dead = NULL, *s;
    int nstale = 0;

    pthread_mutex_lock(&p->mu);
    int64_t now = lns_mono_ms();
    slots_expire(p, now, &dead);
    if ((s = slot_find(p, host, port)) != NULL && s->n > 0) {
        ibp_conn_t *top = s->idle[s->n - 1];
        if (now - top->idle_since_ms <= p->max_idle_ms) {
            conn = top;
            s->n--;
            slot_touch(p, s, now);
        } else {
            /* everything below the newest is older still */
            while (s->n > 0 && nstale < 64)
                stale[nstale++] = s->idle[--s->n];
        }
    }
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < nstale; i++)
        ibp_conn_close(stale[i]);
    slots_free(dead);
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
    ibp_conn_t *conn;
    int fd;

    while (reuse && (conn = pool_take(p, host, port)) != NULL) {
        if (conn_looks_alive(conn)) {
            conn->reused = 1;
            *out = conn;
            return IBP_OK;
        }
        ibp_conn_close(conn);
    }
    if (!reuse) {
        ibp_slot_t *dead = NULL;
        pthread_mutex_lock(&p->mu);
        slots_expire(p, lns_mono_ms(), &dead);
        pthread_mutex_unlock(&p->mu);
        slots_free(dead);
    }

    fd = intr ? lns_connect_watched(host, port, connect_timeout_ms, watch_intr, intr)
              : lns_connect(host, port, connect_timeout_ms);
    if (fd < 0)
        return IBP_E_CONNECTION;
    conn = calloc(1, sizeof *conn);
    if (!conn || !(conn->host = strdup(host)) ||
        lns_rbuf_init(&conn->rb, fd, IBP_CONN_RBUF) < 0) {
        if (intr)
            ibp_intr_detach(intr);
        if (conn)
            free(conn->host);
        free(conn);
        close(fd);
        return IBP_E_ALLOC_FAILED;
    }
    conn->fd = fd;
    conn->port = port;
    *out = conn;
    return IBP_OK;
}

void ibp_pool_put(ibp_pool_t *p, ibp_conn_t *conn)
{
    ibp_conn_t *evicted = NULL;
    ibp_slot_t *dead = NULL, *s;

    if (p->max_idle == 0 || lns_rbuf_pending(&conn->rb) > 0) {
        ibp_conn_close(conn);
        return;
    }
    pthread_mutex_lock(&p->mu);
    int64_t now = lns_mono_ms();
    slots_expire(p, now, &dead);
    s = slot_find(p, conn->host, conn->port);
    if (!s)
        s = slot_add(p, conn->host, conn->port, &dead);
    if (s) {
        if (s->n == p->max_idle) {
            evicted = s->idle[0];
            memmove(s->idle, s->idle + 1, (size_t)(s->n - 1) * sizeof *s->idle);
            s->n--;
        }
        conn->idle_since_ms = now;
        conn->reused = 0;
        s->idle[s->n++] = conn;
        slot_touch(p, s, now);
        conn = NULL;
    }
    pthread_mutex_unlock(&p->mu);
    ibp_conn_close(conn); /* no room for it (out of memory) */
    ibp_conn_close(evicted);
    slots_free(dead);
}

int ibp_pool_entries(ibp_pool_t *p)
{
    pthread_mutex_lock(&p->mu);
    int n = p->nslots;
    pthread_mutex_unlock(&p->mu);
    return n;
}
