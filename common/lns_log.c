/* lns_log.c -- diagnostic log lines and NetLogger-style event lines.
 *
 * Each line is formatted into a stack buffer and written with one write(2), which keeps the
 * cost per event to a snprintf and a system call (no lock, no stdio buffering to lose on a
 * crash) and keeps concurrent lines whole. */
#include "lns_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lns_time.h"

static char log_prog[64] = "lns";
static int log_fd = 2;
static int log_level = LNS_LOG_INFO;

static int ev_fd = -1;
static char ev_host[256] = "localhost";
static int ev_sample = 0;
static atomic_uint ev_counter;

static int open_append(const char *path)
{
    return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
}

int lns_log_open(const char *prog, const char *path, int level)
{
    snprintf(log_prog, sizeof log_prog, "%s", prog);
    log_level = level;
    if (path && *path && strcmp(path, "-") != 0) {
        int fd = open_append(path);
        if (fd < 0)
            return -1;
        if (log_fd > 2)
            close(log_fd);
        log_fd = fd;
    }
    return 0;
}

void lns_log_close(void)
{
    if (log_fd > 2)
        close(log_fd);
    log_fd = 2;
}

int lns_log_level_parse(const char *s)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

void lns_log_set_level(int level)
{
    log_level = level;
}

int lns_log_enabled(int level)
{
    return level <= log_level;
}

void lns_vlog(int level, const char *fmt, va_list ap)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    char line[2048];
    struct tm tm;
    time_t now = time(NULL);
    size_t n;

    if (level > log_level)
        return;
    gmtime_r(&now, &tm);
    n = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%SZ ", &tm);
    n += (size_t)snprintf(line + n, sizeof line - n, "%s[%d] %s: ", log_prog, (int)getpid(),
                          names[level < 0 ? 0 : level > 3 ? 3 : level]);
    if (n < sizeof line) {
        int k = vsnprintf(line + n, sizeof line - n, fmt, ap);
        n = k < 0 ? n : n + (size_t)k;
    }
    if (n >= sizeof line - 1)
        n = sizeof line - 2;
    line[n++] = '\n';
    ssize_t w = write(log_fd, line, n);
    (void)w;
}

void lns_log(int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lns_vlog(level, fmt, ap);
    va_end(ap);
}

int lns_event_open(const char *path, const char *host, int sample)
{
    lns_event_close();
    if (host && *host)
        snprintf(ev_host, sizeof ev_host, "%s", host);
    ev_sample = sample;
    if (sample <= 0 || !path || !*path)
        return 0;
    if (strcmp(path, "-") == 0) {
        ev_fd = dup(2);
    } else if (strncmp(path, "fd:", 3) == 0) {
        ev_fd = dup(atoi(path + 3));
    } else {
        ev_fd = open_append(path);
    }
    return ev_fd < 0 ? -1 : 0;
}

void lns_event_close(void)
{
    if (ev_fd >= 0)
        close(ev_fd);
    ev_fd = -1;
}

int lns_event_on(void)
{
    return ev_fd >= 0;
}

int lns_event_sampled(void)
{
    if (ev_fd < 0)
        return 0;
    if (ev_sample <= 1)
        return 1;
    return atomic_fetch_add_explicit(&ev_counter, 1, memory_order_relaxed) % (unsigned)ev_sample
           == 0;
}

void lns_event(const char *event, const char *fmt, ...)
{
    char line[1024];
    int64_t sec;
    long nsec;
    int n, k;
    va_list ap;

    if (ev_fd < 0)
        return;
    lns_now_split(&sec, &nsec);
    n = snprintf(line, sizeof line, "%s %s %lld.%09ld ", event, ev_host, (long long)sec, nsec);
    va_start(ap, fmt);
    k = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    n = k < 0 ? n : n + k;
    if (n >= (int)sizeof line - 1)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    ssize_t w = write(ev_fd, line, (size_t)n);
    (void)w;
}
