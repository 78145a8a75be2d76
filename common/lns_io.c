/* lns_io.c -- reading and writing local descriptors completely. */
#include "lns_io.h"

#include <errno.h>
#include <poll.h>
#include <unistd.h>

static int fd_wait(int fd, short events, int ms)
{
    struct pollfd p = {.fd = fd, .events = events};
    int rc;
    do {
        rc = poll(&p, 1, ms);
    } while (rc < 0 && errno == EINTR);
    if (rc == 0)
        errno = ETIMEDOUT;
    return rc > 0 ? 0 : -1;
}

ssize_t lns_fd_read_some(int fd, void *buf, size_t n, int idle_ms)
{
    for (;;) {
        ssize_t r = read(fd, buf, n);
        if (r >= 0)
            return r;
        if (errno == EINTR)
            continue;
        if ((errno != EAGAIN && errno != EWOULDBLOCK) || fd_wait(fd, POLLIN, idle_ms) < 0)
            return -1;
    }
}

ssize_t lns_fd_read_full(int fd, void *buf, size_t n, int idle_ms)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = lns_fd_read_some(fd, (char *)buf + got, n - got, idle_ms);
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

int lns_fd_write_all(int fd, const void *buf, size_t n, int idle_ms)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w == 0)
            errno = EIO;
        if (w == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) ||
            fd_wait(fd, POLLOUT, idle_ms) < 0)
            return -1;
    }
    return 0;
}

int lns_pwrite_all(int fd, const void *buf, size_t n, uint64_t off)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = pwrite(fd, p, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return -1;
        }
        p += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}
