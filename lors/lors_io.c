/* lors_io.c -- the I/O helpers the engines share (lors_io_int.h). */
#include "lors_io_int.h"

#include <errno.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include "lns_io.h"

int64_t lors__read_stoppable(int fd, unsigned char *buf, int64_t want,
                             const volatile sig_atomic_t *stop)
{
    if (!stop)
        return lns_fd_read_full(fd, buf, (size_t)want, -1);
    int64_t got = 0;
    while (got < want) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, STOP_POLL_MS);
        if (*stop)
            return -2;
        if (r < 0 && errno != EINTR)
            return -1;
        if (r <= 0)
            continue;
        ssize_t n = read(fd, buf + got, (size_t)(want - got));
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        got += n;
    }
    return got;
}

void lors__cond_wait(pthread_cond_t *cv, pthread_mutex_t *mu, int poll)
{
    if (!poll) {
        pthread_cond_wait(cv, mu);
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)STOP_POLL_MS * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(cv, mu, &ts);
}

/* SIGPIPE held back in the calling thread: a closed pipe is EPIPE.  *was_pending: whether a
 * SIGPIPE was already pending (then it is not ours to consume). */
void lors__sigpipe_hold(sigset_t *old, int *was_pending)
{
    sigset_t set, pending;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, old);
    sigpending(&pending);
    *was_pending = sigismember(&pending, SIGPIPE);
}

void lors__sigpipe_release(const sigset_t *old, int was_pending)
{
    sigset_t set, pending;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    if (!was_pending) {
        struct timespec zero = {0, 0};
        sigpending(&pending);
        if (sigismember(&pending, SIGPIPE))
            sigtimedwait(&set, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, old, NULL);
}
