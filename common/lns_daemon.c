/* lns_daemon.c -- a daemon's fatal errors, pid and port files and signals (see lns_daemon.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "lns_daemon.h"
#include "lns_log.h"

void lns_daemon_die(const lns_daemon_t *d, int code, const char *fmt, ...)
{
    char msg[PATH_MAX + 512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (d->ready_fd >= 0) {
        char buf[sizeof msg + 16];
        int n = snprintf(buf, sizeof buf, "%d %s", code, msg);
        ssize_t w = write(d->ready_fd, buf,
                          (size_t)(n < (int)sizeof buf ? n : (int)sizeof buf - 1));
        (void)w;
    } else {
        fprintf(stderr, "%s: %s\n", d->prog, msg);
    }
    if (d->log_file && d->log_file[0]) /* else the line above already went to stderr */
        lns_log(LNS_LOG_ERROR, "%s", msg);
    exit(code);
}

void lns_daemon_write_text(const lns_daemon_t *d, int code, const char *path, const char *text,
                           const char *what)
{
    char tmp[PATH_MAX + 8], buf[256];
    int n = snprintf(buf, sizeof buf, "%s\n", text);
    if (n < 0 || (size_t)n >= sizeof buf)
        lns_daemon_die(d, code, "%s: %s: text too long", what, path);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, buf, (size_t)n) != n || close(fd) < 0 || rename(tmp, path) < 0)
        lns_daemon_die(d, code, "%s: cannot write %s: %s", what, path, strerror(errno));
}

void lns_daemon_write_file(const lns_daemon_t *d, int code, const char *path, long value,
                           const char *what)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%ld", value);
    lns_daemon_write_text(d, code, path, buf, what);
}

void lns_daemon_ready(lns_daemon_t *d)
{
    if (d->ready_fd >= 0) {
        ssize_t w = write(d->ready_fd, "0 ready", 7);
        (void)w;
        close(d->ready_fd);
        d->ready_fd = -1;
    }
}

void lns_daemon_signals(sigset_t *sigs, int extra)
{
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(sigs);
    sigaddset(sigs, SIGTERM);
    sigaddset(sigs, SIGINT);
    if (extra)
        sigaddset(sigs, extra);
    pthread_sigmask(SIG_BLOCK, sigs, NULL);
}

long lns_daemon_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return -1;
    if (rl.rlim_cur < rl.rlim_max) {
        struct rlimit up = {rl.rlim_max, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &up) == 0)
            rl = up;
    }
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (rlim_t)LONG_MAX)
        return LONG_MAX;
    return (long)rl.rlim_cur;
}
