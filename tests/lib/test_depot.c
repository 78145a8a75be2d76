/* test_depot.c -- start, kill and restart real ibp_depot processes for system tests. */
#include "test_depot.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lns_test.h"

static int depot_seq;

static int spawn(test_depot_t *d, int port)
{
    char portfile[PATH_MAX + 16], portstr[16], cmd[PATH_MAX];
    char argbuf[sizeof d->args];
    char *argv[128];
    int argc = 0;

    snprintf(portfile, sizeof portfile, "%s/port", d->dir);
    unlink(portfile);
    snprintf(portstr, sizeof portstr, "%d", port);
    snprintf(cmd, sizeof cmd, "%s/ibp_depot", lns_test_bindir());

    argv[argc++] = cmd;
    argv[argc++] = "--listen";
    argv[argc++] = "127.0.0.1";
    argv[argc++] = "--port";
    argv[argc++] = portstr;
    argv[argc++] = "--port-file";
    argv[argc++] = portfile;
    argv[argc++] = "--public-host";
    argv[argc++] = "127.0.0.1";
    argv[argc++] = "--event-log";
    argv[argc++] = d->events;
    argv[argc++] = "--log-level";
    argv[argc++] = "info";
    snprintf(argbuf, sizeof argbuf, "%s", d->args);
    int has_resource = strstr(d->args, "--resource") != NULL;
    static char resbuf[PATH_MAX + 64];
    if (!has_resource) {
        snprintf(resbuf, sizeof resbuf, "%s/res0,hard=64M,soft=64M,max-duration=3600", d->dir);
        argv[argc++] = "--resource";
        argv[argc++] = resbuf;
    }
    for (char *tok = strtok(argbuf, " "); tok && argc < 126; tok = strtok(NULL, " "))
        argv[argc++] = tok;
    argv[argc] = NULL;

    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open(d->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execv(cmd, argv);
        _exit(127);
    }
    d->pid = pid;
    lns_test_track_pid(pid);

    /* Wait up to 15 s for the port file (the ASan build starts slowly). */
    for (int i = 0; i < 1500; i++) {
        FILE *f = fopen(portfile, "r");
        if (f) {
            int p = 0;
            int ok = fscanf(f, "%d", &p) == 1 && p > 0;
            fclose(f);
            if (ok) {
                d->port = p;
                return 0;
            }
        }
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            fprintf(stderr, "td_start: ibp_depot exited (status %d); log %s:\n", st, d->log);
            char c[PATH_MAX + 16];
            snprintf(c, sizeof c, "tail -20 '%s' >&2", d->log);
            if (system(c) != 0)
                fprintf(stderr, "(no log)\n");
            lns_test_untrack_pid(pid);
            d->pid = 0;
            return -1;
        }
        lns_test_sleep_ms(10);
    }
    fprintf(stderr, "td_start: ibp_depot did not write %s within 15 s\n", portfile);
    td_kill(d, SIGKILL);
    return -1;
}

int td_start(test_depot_t *d, const char *extra)
{
    memset(d, 0, sizeof *d);
    snprintf(d->dir, sizeof d->dir, "%s/depot%d", lns_test_tmpdir(), depot_seq++);
    mkdir(d->dir, 0755);
    if (snprintf(d->log, sizeof d->log, "%s/depot.log", d->dir) >= (int)sizeof d->log ||
        snprintf(d->events, sizeof d->events, "%s/events.log", d->dir) >= (int)sizeof d->events)
        return -1;
    snprintf(d->args, sizeof d->args, "%s", extra ? extra : "");
    return spawn(d, 0);
}

int td_restart(test_depot_t *d)
{
    /* The old port may sit in TIME_WAIT for a moment; SO_REUSEADDR covers that, retry anyway. */
    for (int i = 0; i < 50; i++) {
        if (spawn(d, d->port) == 0)
            return 0;
        lns_test_sleep_ms(100);
    }
    return -1;
}

int td_kill(test_depot_t *d, int sig)
{
    return lns_test_signal_child(&d->pid, sig);
}

void td_stop(test_depot_t *d)
{
    if (d->pid > 0)
        td_kill(d, SIGTERM);
}

int td_connect(const test_depot_t *d)
{
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((unsigned short)d->port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int td_count_events_of(const test_depot_t *d, const char *event, const char *needle)
{
    FILE *f = fopen(d->events, "r");
    char line[4096];
    size_t el = event ? strlen(event) : 0;
    int n = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if ((!event || (strncmp(line, event, el) == 0 && line[el] == ' ')) && strstr(line, needle))
            n++;
    fclose(f);
    return n;
}

int td_count_events(const test_depot_t *d, const char *needle)
{
    return td_count_events_of(d, NULL, needle);
}

int raw_send(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int raw_readline(int fd, char *buf, size_t size)
{
    size_t n = 0;
    while (n + 1 < size) {
        char c;
        ssize_t r = recv(fd, &c, 1, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return n > 0 ? (int)n : -1;
        if (c == '\n') {
            buf[n] = 0;
            return (int)n;
        }
        buf[n++] = c;
    }
    buf[n] = 0;
    return (int)n;
}

int raw_read(int fd, void *buf, size_t n)
{
    char *p = buf;
    while (n > 0) {
        ssize_t r = recv(fd, p, n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

int raw_cmd(int fd, const char *line, char *reply, size_t size)
{
    if (raw_send(fd, line, strlen(line)) < 0)
        return -1;
    return raw_readline(fd, reply, size);
}

int raw_code(const char *line)
{
    char *end;
    long v = strtol(line, &end, 10);
    return end == line ? -1000 : (int)v;
}

int raw_reqf(int fd, char *reply, size_t size, const char *fmt, ...)
{
    char line[8192], tmp[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (!reply) {
        reply = tmp;
        size = sizeof tmp;
    }
    if (raw_cmd(fd, line, reply, size) < 0)
        return -1000;
    return raw_code(reply);
}

int raw_closed_by_peer(int fd, int ms)
{
    char c;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, ms) <= 0)
        return 0;
    return recv(fd, &c, 1, 0) == 0;
}

int td_log_clean(const test_depot_t *d)
{
    return lns_test_log_clean(d->log);
}

int raw_listen_loopback(int *port)
{
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 16) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(sa.sin_port);
    return fd;
}
