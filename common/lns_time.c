/* lns_time.c -- clocks.  Everything that times out works on CLOCK_MONOTONIC, so a clock
 * step (NTP, an admin) never fires or stretches a timeout; only expiry dates, which must
 * survive a restart, use the real-time clock. */
#include "lns_time.h"

#include <limits.h>
#include <stdatomic.h>
#include <time.h>

/* lns_now_advance_s's offset: 0 in every program, so the clocks read the system's. */
static _Atomic int64_t now_offset_s;

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
    return (int64_t)ts.tv_sec + atomic_load_explicit(&now_offset_s, memory_order_relaxed);
}

void lns_now_split(int64_t *sec, long *nsec)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    *sec = (int64_t)ts.tv_sec + atomic_load_explicit(&now_offset_s, memory_order_relaxed);
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
