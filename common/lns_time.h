/* lns_time.h -- clocks: monotonic for deadlines and durations, real time for logs and expiry. */
#ifndef LNS_TIME_H
#define LNS_TIME_H

#include <stdint.h>
#include <time.h>

/* Nanoseconds on the monotonic clock (never jumps; for timeouts and durations). */
int64_t lns_mono_ns(void);
/* Milliseconds on the monotonic clock. */
int64_t lns_mono_ms(void);
/* Seconds since the epoch on the real-time clock (for expiry times kept on disk). */
int64_t lns_now_s(void);
/* Real time split into seconds and nanoseconds (for NetLogger time stamps). */
void lns_now_split(int64_t *sec, long *nsec);
/* For tests only: move this process's real-time clock (lns_now_s, lns_now_split) s seconds
 * ahead, as if they had passed, so that a test sees a lease or a date run out without
 * sleeping for it.  Timeouts (the monotonic clock) are not moved.  No program calls it.
 * A test moves a daemon's clock the same way from outside: LNS_TEST_CLOCK_FILE=FILE in its
 * environment (read once) adds the seconds FILE holds, read again at every call, so a test
 * writes "700" there and the daemon lives 700 s later.  Unset (every production run), it
 * costs a pthread_once and a branch. */
void lns_now_advance_s(int64_t s);
/* A deadline timeout_ms from now on the monotonic clock; timeout_ms < 0: never (INT64_MAX). */
int64_t lns_deadline_ms(int timeout_ms);
/* Milliseconds left until deadline (0 if passed; INT32_MAX-ish for "never"), for poll(). */
int lns_ms_left(int64_t deadline_ms);

/* The absolute CLOCK_REALTIME time ns nanoseconds from now, as pthread_cond_timedwait()
 * takes it (condition variables wait on the real-time clock by default). */
void lns_cond_deadline(struct timespec *ts, int64_t ns);

#endif
