/* lns_log.c -- diagnostic log lines and NetLogger-style event lines.
 *
 * A diagnostic line is formatted on the stack and written with one write(2): rare, and
 * wanted on disk at once.  Event lines are many (one per request), so they are formatted on
 * the stack, appended to a shared buffer under a mutex, and written in large pieces by a
 * writer thread every EV_FLUSH_MS: one system call per batch instead of per line, which
 * keeps a busy depot's event log to a few percent of its CPU.  The price: a SIGKILL loses at
 * most the last EV_FLUSH_MS of events; lns_event_close() (on SIGTERM) writes them all.  The
 * writer starts with the first event, so a process may daemonize after lns_event_open(). */
#include "lns_log.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lns_err.h"
#include "lns_io.h"
#include "lns_time.h"

static char log_prog[64] = "lns";
static int log_fd = 2;
static int log_level = LNS_LOG_INFO;

static int ev_fd = -1;
static char ev_host[256] = "localhost";
static int ev_sample = 0;
static atomic_uint ev_counter;

#define EV_BUF (256 * 1024)
#define EV_FLUSH_MS 50

/* The event buffer.  ev_buf fills while the writer thread writes ev_spare out; they swap. */
static pthread_mutex_t ev_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ev_cv = PTHREAD_COND_INITIALIZER;
static char *ev_buf, *ev_spare;
static size_t ev_len;
static int ev_writer_on, ev_stop;
static pthread_t ev_writer;

static int open_append(const char *path)
{
    return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
}

int lns_log_open(const char *prog, const char *path, int level, char *err, size_t errlen)
{
    snprintf(log_prog, sizeof log_prog, "%s", prog);
    log_level = level;
    if (path && *path && strcmp(path, "-") != 0) {
        int fd = open_append(path);
        if (fd < 0)
            return lns_err_set(err, errlen, "log-file: cannot open %s: %s", path,
                               strerror(errno));
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

/* A log line is one line: what a client sent ("%0a" in a URL, decoded) must not start a
 * forged one.  Control bytes become \xHH; the rest is copied.  dst always ends in NUL. */
static void log_escape(const char *src, char *dst, size_t size)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)src; *p && n + 5 < size; p++) {
        if (*p < 0x20 || *p == 0x7f)
            n += (size_t)snprintf(dst + n, size - n, "\\x%02x", *p);
        else
            dst[n++] = (char)*p;
    }
    dst[n] = 0;
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
        char msg[2048];
        vsnprintf(msg, sizeof msg, fmt, ap);
        log_escape(msg, line + n, sizeof line - n - 1);
        n += strlen(line + n);
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

static void *ev_writer_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&ev_mu);
    for (;;) {
        while (ev_len == 0 && !ev_stop)
            pthread_cond_wait(&ev_cv, &ev_mu);
        if (ev_len == 0)
            break; /* stopping, nothing left */
        if (!ev_stop && ev_len < EV_BUF / 2) {
            struct timespec until;
            lns_cond_deadline(&until, EV_FLUSH_MS * 1000000LL);
            while (!ev_stop && ev_len < EV_BUF / 2 &&
                   pthread_cond_timedwait(&ev_cv, &ev_mu, &until) == 0)
                ;
        }
        char *out = ev_buf;
        size_t n = ev_len;
        ev_buf = ev_spare;
        ev_spare = NULL;
        ev_len = 0;
        pthread_mutex_unlock(&ev_mu);
        /* idle 0: a full non-blocking reader (fd:N) loses events instead of stalling us */
        (void)lns_fd_write_all(ev_fd, out, n, 0);
        pthread_mutex_lock(&ev_mu);
        ev_spare = out;
    }
    pthread_mutex_unlock(&ev_mu);
    return NULL;
}

int lns_event_open(const char *path, const char *host, int sample, char *err, size_t errlen)
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
    if (ev_fd < 0)
        return lns_err_set(err, errlen, "event-log: cannot open %s: %s", path, strerror(errno));
    ev_buf = malloc(EV_BUF);
    ev_spare = malloc(EV_BUF);
    if (!ev_buf || !ev_spare) {
        lns_event_close();
        return lns_err_set(err, errlen, "event-log: cannot open %s: %s", path,
                           strerror(ENOMEM));
    }
    ev_len = 0;
    ev_stop = 0;
    return 0;
}

void lns_event_close(void)
{
    pthread_mutex_lock(&ev_mu);
    int running = ev_writer_on;
    ev_stop = 1;
    pthread_cond_signal(&ev_cv);
    pthread_mutex_unlock(&ev_mu);
    if (running)
        pthread_join(ev_writer, NULL);
    ev_writer_on = 0;
    if (ev_fd >= 0 && ev_buf && ev_len > 0)
        (void)lns_fd_write_all(ev_fd, ev_buf, ev_len, 0);
    ev_len = 0;
    free(ev_buf);
    free(ev_spare);
    ev_buf = ev_spare = NULL;
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

/* One event line, "<EVENT> <host> <sec>.<nsec> fields\n", into line; its length. */
static int ev_format(char *line, size_t size, const char *event, const char *host,
                     const char *fmt, va_list ap)
{
    int64_t sec;
    long nsec;
    int n, k;
    lns_now_split(&sec, &nsec);
    n = snprintf(line, size, "%s %s %lld.%09ld ", event, host, (long long)sec, nsec);
    if (n < 0 || n >= (int)size - 1)
        n = 0;
    k = vsnprintf(line + n, size - (size_t)n, fmt, ap);
    n = k < 0 ? n : n + k;
    if (n >= (int)size - 1)
        n = (int)size - 2;
    line[n++] = '\n';
    return n;
}

void lns_event(const char *event, const char *fmt, ...)
{
    char line[1024];
    int n;
    va_list ap;

    if (ev_fd < 0)
        return;
    va_start(ap, fmt);
    n = ev_format(line, sizeof line, event, ev_host, fmt, ap);
    va_end(ap);

    pthread_mutex_lock(&ev_mu);
    if (!ev_writer_on && !ev_stop &&
        pthread_create(&ev_writer, NULL, ev_writer_main, NULL) == 0)
        ev_writer_on = 1;
    if (!ev_writer_on || ev_len + (size_t)n > EV_BUF) {
        /* No writer, or it cannot keep up: write this batch ourselves, in order. */
        if (ev_len > 0)
            (void)lns_fd_write_all(ev_fd, ev_buf, ev_len, 0);
        ev_len = 0;
        (void)lns_fd_write_all(ev_fd, line, (size_t)n, 0);
    } else {
        memcpy(ev_buf + ev_len, line, (size_t)n);
        if (ev_len == 0 || ev_len + (size_t)n >= EV_BUF / 2)
            pthread_cond_signal(&ev_cv);
        ev_len += (size_t)n;
    }
    pthread_mutex_unlock(&ev_mu);
}

/* ---- private event logs ---------------------------------------------------------------- */

struct lns_evlog {
    int fd;
    char host[256];
    pthread_mutex_t mu;
};

lns_evlog_t *lns_evlog_open(const char *path, const char *host)
{
    lns_evlog_t *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    if (!path || !*path) {
        free(l);
        errno = EINVAL;
        return NULL;
    }
    l->fd = strncmp(path, "fd:", 3) == 0 ? dup(atoi(path + 3)) : open_append(path);
    if (l->fd < 0) {
        int e = errno;
        free(l);
        errno = e;
        return NULL;
    }
    if (host && *host)
        snprintf(l->host, sizeof l->host, "%s", host);
    else if (gethostname(l->host, sizeof l->host - 1) != 0 || !l->host[0])
        snprintf(l->host, sizeof l->host, "localhost");
    for (char *p = l->host; *p; p++)
        if (*p == ' ')
            *p = '_'; /* the host is one field */
    pthread_mutex_init(&l->mu, NULL);
    return l;
}

void lns_evlog_write(lns_evlog_t *l, const char *event, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    if (!l)
        return;
    /* stamped and written under the mutex: the file's lines are in time order */
    pthread_mutex_lock(&l->mu);
    va_start(ap, fmt);
    int n = ev_format(line, sizeof line, event, l->host, fmt, ap);
    va_end(ap);
    (void)lns_fd_write_all(l->fd, line, (size_t)n, 0);
    pthread_mutex_unlock(&l->mu);
}

void lns_evlog_close(lns_evlog_t *l)
{
    if (!l)
        return;
    close(l->fd);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

void lns_log_line(FILE *f, const char *fmt, va_list ap)
{
    if (!f)
        return;
    char when[32], msg[4096], safe[4096];
    time_t now = time(NULL);
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
    vsnprintf(msg, sizeof msg, fmt, ap);
    log_escape(msg, safe, sizeof safe);
    flockfile(f);
    fprintf(f, "%s %s\n", when, safe);
    fflush(f);
    funlockfile(f);
}
