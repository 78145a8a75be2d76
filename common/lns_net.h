/* lns_net.h -- TCP sockets that never wait forever.
 *
 * Every socket made here is non-blocking; every read and write waits in poll() for at most
 * idle_ms for progress and never past deadline_ms (a monotonic ms time from lns_deadline_ms,
 * or INT64_MAX for none).  Progress is the socket becoming ready, or our bytes leaving its
 * send queue (the peer acknowledging them): a wait for an answer behind megabytes still
 * crossing a slow link counts from when the link stopped taking them, not from our last
 * write.  Errors come back as -1 with errno set: ETIMEDOUT when a wait ran
 * out, ECONNRESET when the peer closed before we had all we needed, and whatever the kernel
 * said otherwise.  lns_rbuf adds a read buffer for line-oriented protocols.
 *
 * A socket sealed by lns_tls (lns_tls_accept, lns_tls_connect) is read, written, sent a file
 * and waited for through TLS by these same calls; close it with lns_sock_close.
 */
#ifndef LNS_NET_H
#define LNS_NET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Listen on addr (NULL or "" = all IPv4 and IPv6 addresses) and port (0 = any free port).
 * *bound_port (may be NULL) gets the port.  Returns the fd or -1 (errno set, and a reason
 * in err[errlen] if err is not NULL). */
int lns_listen(const char *addr, int port, int backlog, int *bound_port, char *err, size_t errlen);
/* Connect with a timeout; the socket comes back non-blocking with TCP_NODELAY.  Returns the
 * fd or -1 (errno set; EHOSTUNREACH also for a host name that does not resolve). */
int lns_connect(const char *host, int port, int timeout_ms);
/* The same, interruptible: watch(arg, fd) is called with each socket before its connection is
 * waited for (so another thread can shutdown() it to cut the wait short; a negative return
 * gives up at once, errno ECANCELED), and watch(arg, -1) before that socket is closed. */
int lns_connect_watched(const char *host, int port, int timeout_ms,
                        int (*watch)(void *arg, int fd), void *arg);
int lns_set_nonblock(int fd);
int lns_set_nodelay(int fd);
/* "a.b.c.d:port" or "[v6]:port" of the peer, for logs. */
void lns_peer_name(int fd, char *buf, size_t size);

/* Wait until fd is readable (events = POLLIN) or writable (POLLOUT). 0 ok, -1 timeout/error. */
int lns_wait(int fd, short events, int idle_ms, int64_t deadline_ms);

/* Read at least one byte (up to n).  Returns bytes read, 0 on orderly EOF, -1 on error. */
ssize_t lns_read_some(int fd, void *buf, size_t n, int idle_ms, int64_t deadline_ms);
/* Read exactly n bytes.  0 ok, -1 error (ECONNRESET on early EOF). */
int lns_read_full(int fd, void *buf, size_t n, int idle_ms, int64_t deadline_ms);
/* Write all n bytes; flags are send() flags (MSG_MORE to hold a header for what follows). */
int lns_write_full(int fd, const void *buf, size_t n, int flags, int idle_ms, int64_t deadline_ms);
/* sendfile() n bytes of file_fd from *offset (advanced) to sock.  0 ok, -1 error. */
int lns_sendfile_full(int sock, int file_fd, off_t *offset, size_t n, int idle_ms,
                      int64_t deadline_ms);

/* Bytes a sealed socket has decrypted and not yet given (0 for a plain one): a poll() of
 * the fd does not see them. */
size_t lns_sock_pending(int fd);
/* For an idle pooled socket: 1 if nothing came on it meanwhile (a sealed one may take TLS
 * session tickets), 0 if it closed or has bytes nobody asked for. */
int lns_sock_idle_ok(int fd);
/* Remove a seal (if any) and close. */
int lns_sock_close(int fd);

/* A read buffer over a socket. */
typedef struct lns_rbuf {
    int fd;
    char *buf;
    size_t cap;
    size_t start; /* first unread byte */
    size_t end;   /* one past the last buffered byte */
} lns_rbuf_t;

int lns_rbuf_init(lns_rbuf_t *rb, int fd, size_t cap);
void lns_rbuf_free(lns_rbuf_t *rb);
/* Bytes already buffered and not yet consumed. */
size_t lns_rbuf_pending(const lns_rbuf_t *rb);
/* Read one line of at most max bytes ('\n' included).  On success *line points at it inside
 * the buffer (valid until the next call), *len excludes the '\n', and 1 is returned.
 * Returns 0 on EOF before any byte of a line, -1 on error: EMSGSIZE for an overlong line,
 * ECONNRESET for EOF inside a line, ETIMEDOUT.  The idle/deadline apply as in lns_read_some;
 * first_byte_ms (< 0 = same as idle_ms) bounds the wait for the first byte of the line, so a
 * keep-alive connection can idle longer than a started request may stall.  A line longer
 * than the buffer grows it (doubling, never past max); the buffer keeps that size. */
int lns_rbuf_readline(lns_rbuf_t *rb, char **line, size_t *len, size_t max, int first_byte_ms,
                      int idle_ms, int64_t deadline_ms);
/* Read exactly n bytes, buffered ones first. 0 ok, -1 error. */
int lns_rbuf_read(lns_rbuf_t *rb, void *dst, size_t n, int idle_ms, int64_t deadline_ms);
/* The buffered bytes, without copying: *data points at them; returns how many.  Pair with
 * lns_rbuf_consume() once they have been used (e.g. written to a file). */
size_t lns_rbuf_peek(const lns_rbuf_t *rb, const char **data);
void lns_rbuf_consume(lns_rbuf_t *rb, size_t n);
/* Take up to n buffered bytes without touching the socket; returns how many. */
size_t lns_rbuf_take(lns_rbuf_t *rb, void *dst, size_t n);

#endif
