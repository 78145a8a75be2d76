/* lns_time.c -- clocks.  Everything that times out works on CLOCK_MONOTONIC, so a clock
 * step (NTP, an admin) never fires or stretches a timeout; only expiry dates, which must
 * survive a restart, use the real-time clock. */
#include "lns_time.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* lns_now_advance_s's offset and LNS_TEST_CLOCK_FILE: 0 and NULL in every program, so the
 * clocks read the system's. */
static _Atomic int64_t now_offset_s;
static const char *clock_file;
static pthread_once_t clock_once = PTHREAD_ONCE_INIT;

static void clock_setup(void)
{
    const char *f = getenv("LNS_TEST_CLOCK_FILE");
    clock_file = f && *f ? f : NULL;
}

/* The seconds a test has moved this process's real-time clock by. */
static int64_t now_offset(void)
{
    pthread_once(&clock_once, clock_setup);
    int64_t off = atomic_load_explicit(&now_offset_s, memory_order_relaxed);
    if (clock_file) {
        char buf[32];
        int fd = open(clock_file, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
        if (fd >= 0)
            close(fd);
        if (n > 0) {
            buf[n] = 0;
            off += strtoll(buf, NULL, 10);
        }
    }
    return off;
}

int64_t lns_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t lns_mono_ms(void)
{
    return lns_mono_ns() / 1000000LL;
}

int64_t lns_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec + now_offset();
}

void lns_now_split(int64_t *sec, long *nsec)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    *sec = (int64_t)ts.tv_sec + now_offset();
    *nsec = ts.tv_nsec;
}

void lns_now_advance_s(int64_t s)
{
    atomic_fetch_add(&now_offset_s, s);
}

int64_t lns_deadline_ms(int timeout_ms)
{
    if (timeout_ms < 0)
        return INT64_MAX;
    return lns_mono_ms() + timeout_ms;
}

int lns_ms_left(int64_t deadline_ms)
{
    if (deadline_ms == INT64_MAX)
        return -1; /* poll(): wait forever */
    int64_t left = deadline_ms - lns_mono_ms();
    if (left <= 0)
        return 0;
    if (left > INT_MAX)
        return INT_MAX;
    return (int)left;
}

void lns_cond_deadline(struct timespec *ts, int64_t ns)
{
    clock_gettime(CLOCK_REALTIME, ts);
    if (ns < 0)
        ns = 0;
    ts->tv_sec += (time_t)(ns / 1000000000LL);
    ts->tv_nsec += (long)(ns % 1000000000LL);
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}
