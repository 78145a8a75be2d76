/* lns_net.c -- TCP sockets that never wait forever.
 *
 * All sockets are non-blocking and every wait goes through lns_wait(), so the one rule
 * "no socket operation without a timeout" is enforced in a single place. */
#include "lns_err.h"
#include "lns_net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/sockios.h>

#include "lns_time.h"
#include "lns_tls.h"

#define DRAIN_LOOK_MS 100 /* how often a wait looks at a send queue that is draining */

int lns_set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL, 0);
    if (fl < 0)
        return -1;
    return fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

int lns_set_nodelay(int fd)
{
    int one = 1;
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int lns_listen(const char *addr, int port, int backlog, int *bound_port, char *err, size_t errlen)
{
    struct addrinfo hints, *res = NULL, *ai;
    char portstr[16];
    int fd = -1, rc, saved = 0;

    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    snprintf(portstr, sizeof portstr, "%d", port);
    if (addr && !*addr)
        addr = NULL;
    rc = getaddrinfo(addr, portstr, &hints, &res);
    if (rc != 0) {
        if (err)
            lns_err_set(err, errlen, "cannot resolve listen address %s: %s", addr ? addr : "*",
                        gai_strerror(rc));
        errno = EADDRNOTAVAIL;
        return -1;
    }
    /* With no address, prefer the IPv6 wildcard with dual stack so one socket takes both. */
    for (int pass = 0; pass < 2 && fd < 0; pass++) {
        for (ai = res; ai; ai = ai->ai_next) {
            if (!addr && pass == 0 && ai->ai_family != AF_INET6)
                continue;
            fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
            if (fd < 0) {
                saved = errno;
                continue;
            }
            int one = 1, zero = 0;
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
            if (ai->ai_family == AF_INET6 && !addr)
                setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
            if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, backlog) == 0)
                break;
            saved = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) {
        if (err)
            lns_err_set(err, errlen, "cannot listen on %s port %d: %s", addr ? addr : "*", port,
                        strerror(saved));
        errno = saved;
        return -1;
    }
    lns_set_nonblock(fd);
    if (bound_port) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        *bound_port = port;
        if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
            if (ss.ss_family == AF_INET)
                *bound_port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
            else if (ss.ss_family == AF_INET6)
                *bound_port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
        }
    }
    return fd;
}

/* Our bytes the peer has not acknowledged yet (SIOCOUTQ), or -1 (not a TCP socket). */
static int unsent_bytes(int fd)
{
    int n = 0;
    return ioctl(fd, SIOCOUTQ, &n) == 0 ? n : -1;
}

int lns_wait(int fd, short events, int idle_ms, int64_t deadline_ms)
{
    if ((events & POLLIN) && lns_sock_pending(fd) > 0)
        return 0; /* decrypted bytes wait in the seal */
    int unsent = idle_ms >= 0 ? unsent_bytes(fd) : -1;
    int64_t idle_end = idle_ms >= 0 ? lns_deadline_ms(idle_ms) : INT64_MAX;
    for (;;) {
        int64_t end = idle_end < deadline_ms ? idle_end : deadline_ms;
        int wait = end == INT64_MAX ? -1 : lns_ms_left(end);
        /* while our bytes are still leaving, look at the queue often: each step out of it
         * is progress and starts the idle time again */
        if (unsent > 0 && (wait < 0 || wait > DRAIN_LOOK_MS))
            wait = DRAIN_LOOK_MS;
        struct pollfd p = {.fd = fd, .events = events};
        int rc = poll(&p, 1, wait);
        if (rc > 0)
            return 0; /* readable, writable, or an error the next call will report */
        if (rc < 0 && errno != EINTR)
            return -1;
        if (rc == 0 && unsent > 0) {
            int now = unsent_bytes(fd);
            if (now < unsent && idle_ms >= 0)
                idle_end = lns_deadline_ms(idle_ms);
            unsent = now;
        }
        if (rc == 0 && lns_ms_left(end) == 0) {
            errno = ETIMEDOUT;
            return -1;
        }
    }
}

int lns_connect(const char *host, int port, int timeout_ms)
{
    return lns_connect_watched(host, port, timeout_ms, NULL, NULL);
}

int lns_connect_watched(const char *host, int port, int timeout_ms,
                        int (*watch)(void *arg, int fd), void *arg)
{
    struct addrinfo hints, *res = NULL, *ai;
    char portstr[16];
    int fd = -1, saved = ECONNREFUSED;
    int64_t deadline = lns_deadline_ms(timeout_ms);

    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    snprintf(portstr, sizeof portstr, "%d", port);
    if (getaddrinfo(host, portstr, &hints, &res) != 0) {
        errno = EHOSTUNREACH;
        return -1;
    }
    for (ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                    ai->ai_protocol);
        if (fd < 0) {
            saved = errno;
            continue;
        }
        if (watch && watch(arg, fd) < 0) {
            saved = ECANCELED;
            close(fd);
            fd = -1;
            break;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        if (errno == EINPROGRESS) {
            if (lns_wait(fd, POLLOUT, -1, deadline) == 0) {
                int soerr = 0;
                socklen_t sl = sizeof soerr;
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
                if (soerr == 0)
                    break;
                saved = soerr;
            } else {
                saved = errno;
            }
        } else {
            saved = errno;
        }
        if (watch)
            watch(arg, -1);
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        errno = saved;
        return -1;
    }
    lns_set_nodelay(fd);
    return fd;
}

void lns_peer_name(int fd, char *buf, size_t size)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;

    if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET) {
            struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &s4->sin_addr, host, sizeof host);
            port = ntohs(s4->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof host);
            port = ntohs(s6->sin6_port);
            if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
                inet_ntop(AF_INET, &s6->sin6_addr.s6_addr[12], host, sizeof host);
                ss.ss_family = AF_INET;
            }
        }
    }
    if (ss.ss_family == AF_INET6)
        snprintf(buf, size, "[%s]:%d", host, port);
    else
        snprintf(buf, size, "%s:%d", host, port);
}

/* After a socket call failed with errno: 0 to call again (interrupted, or the socket is ready
 * within the timeouts), -1 to give up (a real error, or ETIMEDOUT from lns_wait). */
static int try_again(int fd, short events, int idle_ms, int64_t deadline_ms)
{
    if (errno == EINTR)
        return 0;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
        return -1;
    return lns_wait(fd, events, idle_ms, deadline_ms) < 0 ? -1 : 0;
}

ssize_t lns_read_some(int fd, void *buf, size_t n, int idle_ms, int64_t deadline_ms)
{
    lns_tls_t *t = lns_tls_of(fd);
    if (t)
        return lns_tls_read_some(t, buf, n, idle_ms, deadline_ms);
    for (;;) {
        ssize_t r = read(fd, buf, n);
        if (r >= 0)
            return r;
        if (try_again(fd, POLLIN, idle_ms, deadline_ms) < 0)
            return -1;
    }
}

int lns_read_full(int fd, void *buf, size_t n, int idle_ms, int64_t deadline_ms)
{
    char *p = buf;
    while (n > 0) {
        ssize_t r = lns_read_some(fd, p, n, idle_ms, deadline_ms);
        if (r < 0)
            return -1;
        if (r == 0) {
            errno = ECONNRESET;
            return -1;
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

int lns_write_full(int fd, const void *buf, size_t n, int flags, int idle_ms, int64_t deadline_ms)
{
    lns_tls_t *t = lns_tls_of(fd);
    if (t)
        return lns_tls_write_full(t, buf, n, flags, idle_ms, deadline_ms);
    const char *p = buf;
    while (n > 0) {
        ssize_t w = send(fd, p, n, flags | MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w == 0) /* nothing taken: wait for room, as for EAGAIN */
            errno = EAGAIN;
        if (try_again(fd, POLLOUT, idle_ms, deadline_ms) < 0)
            return -1;
    }
    return 0;
}

int lns_sendfile_full(int sock, int file_fd, off_t *offset, size_t n, int idle_ms,
                      int64_t deadline_ms)
{
    lns_tls_t *t = lns_tls_of(sock);
    if (t)
        return lns_tls_sendfile_full(t, file_fd, offset, n, idle_ms, deadline_ms);
    while (n > 0) {
        ssize_t w = sendfile(sock, file_fd, offset, n > (1u << 30) ? (1u << 30) : n);
        if (w > 0) {
            n -= (size_t)w;
            continue;
        }
        if (w == 0) { /* the file is shorter than promised */
            errno = EIO;
            return -1;
        }
        if (try_again(sock, POLLOUT, idle_ms, deadline_ms) < 0)
            return -1;
    }
    return 0;
}

size_t lns_sock_pending(int fd)
{
    lns_tls_t *t = lns_tls_of(fd);
    return t ? lns_tls_pending(t) : 0;
}

int lns_sock_idle_ok(int fd)
{
    lns_tls_t *t = lns_tls_of(fd);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int rc;
    if (lns_sock_pending(fd) > 0)
        return 0;
    do {
        rc = poll(&p, 1, 0);
    } while (rc < 0 && errno == EINTR);
    if (rc == 0)
        return 1;
    return t && rc > 0 && !(p.revents & (POLLERR | POLLHUP)) ? lns_tls_idle_ok(t) : 0;
}

int lns_sock_close(int fd)
{
    lns_tls_drop(fd);
    return close(fd);
}

int lns_rbuf_init(lns_rbuf_t *rb, int fd, size_t cap)
{
    rb->fd = fd;
    rb->cap = cap;
    rb->start = rb->end = 0;
    rb->buf = malloc(cap);
    return rb->buf ? 0 : -1;
}

void lns_rbuf_free(lns_rbuf_t *rb)
{
    free(rb->buf);
    rb->buf = NULL;
}

size_t lns_rbuf_pending(const lns_rbuf_t *rb)
{
    return rb->end - rb->start;
}

int lns_rbuf_readline(lns_rbuf_t *rb, char **line, size_t *len, size_t max, int first_byte_ms,
                      int idle_ms, int64_t deadline_ms)
{
    size_t scanned = 0;
    for (;;) {
        char *nl = memchr(rb->buf + rb->start + scanned, '\n', rb->end - rb->start - scanned);
        if (nl) {
            *line = rb->buf + rb->start;
            *len = (size_t)(nl - *line);
            if (*len + 1 > max) { /* one read brought the line and more: still too long */
                errno = EMSGSIZE;
                return -1;
            }
            rb->start += *len + 1;
            if (rb->start == rb->end)
                rb->start = rb->end = 0;
            return 1;
        }
        scanned = rb->end - rb->start;
        if (scanned >= max) {
            errno = EMSGSIZE;
            return -1;
        }
        if (rb->start > 0 && rb->end == rb->cap) {
            memmove(rb->buf, rb->buf + rb->start, scanned);
            rb->end = scanned;
            rb->start = 0;
        }
        if (rb->end == rb->cap) { /* a long line: grow, never past max */
            size_t ncap = rb->cap * 2 < max ? rb->cap * 2 : max;
            char *nb = realloc(rb->buf, ncap);
            if (!nb) {
                errno = ENOMEM;
                return -1;
            }
            rb->buf = nb;
            rb->cap = ncap;
        }
        int wait = (scanned == 0 && first_byte_ms >= 0) ? first_byte_ms : idle_ms;
        ssize_t r = lns_read_some(rb->fd, rb->buf + rb->end, rb->cap - rb->end, wait, deadline_ms);
        if (r < 0)
            return -1;
        if (r == 0) {
            if (scanned == 0)
                return 0;
            errno = ECONNRESET;
            return -1;
        }
        rb->end += (size_t)r;
    }
}

size_t lns_rbuf_peek(const lns_rbuf_t *rb, const char **data)
{
    *data = rb->buf + rb->start;
    return rb->end - rb->start;
}

void lns_rbuf_consume(lns_rbuf_t *rb, size_t n)
{
    if (n > rb->end - rb->start)
        n = rb->end - rb->start;
    rb->start += n;
    if (rb->start == rb->end)
        rb->start = rb->end = 0;
}

size_t lns_rbuf_take(lns_rbuf_t *rb, void *dst, size_t n)
{
    size_t have = rb->end - rb->start;
    if (n > have)
        n = have;
    memcpy(dst, rb->buf + rb->start, n);
    rb->start += n;
    if (rb->start == rb->end)
        rb->start = rb->end = 0;
    return n;
}

int lns_rbuf_read(lns_rbuf_t *rb, void *dst, size_t n, int idle_ms, int64_t deadline_ms)
{
    size_t got = lns_rbuf_take(rb, dst, n);
    if (got == n)
        return 0;
    return lns_read_full(rb->fd, (char *)dst + got, n - got, idle_ms, deadline_ms);
}
