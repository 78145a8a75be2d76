/* test_depot.c -- start, kill and restart real ibp_depot processes for system tests. */
#include "test_depot.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "lns_test.h"

static int depot_seq;

static int spawn(test_depot_t *d, int port, int tries)
{
    char res[PATH_MAX + 64];
    const char *args[] = {"--public-host", "127.0.0.1", "--event-log", d->events,
                          "--log-level", "info", NULL, NULL, NULL};
    if (!strstr(d->args, "--resource")) {
        snprintf(res, sizeof res, "%s/res0,hard=64M,soft=64M,max-duration=3600", d->dir);
        args[6] = "--resource";
        args[7] = res;
    }
    return lns_test_server_spawn(&d->srv, "ibp_depot", port, args, tries);
}

int td_start(test_depot_t *d, const char *extra)
{
    memset(d, 0, sizeof *d);
    if (lns_test_server_init(&d->srv, "depot", depot_seq++, extra) != 0 ||
        snprintf(d->events, sizeof d->events, "%s/events.log", d->dir) >= (int)sizeof d->events)
        return -1;
    return spawn(d, 0, 1);
}

int td_restart(test_depot_t *d)
{
    /* The old port may sit in TIME_WAIT for a moment; SO_REUSEADDR covers that, retry anyway. */
    return spawn(d, d->port, 50);
}

int td_restart_once(test_depot_t *d)
{
    return spawn(d, d->port, 1);
}

int td_pin(const test_depot_t *d, char *out)
{
    static char log[1 << 16];
    for (int i = 0; i < 500; i++) { /* the line comes just after the port file */
        lns_test_slurp(d->log, log, sizeof log);
        const char *p = NULL, *q = log;
        while ((q = strstr(q, "pin sha256:")))
            p = q++;
        if (p) {
            snprintf(out, 72, "%.*s", 7 + 64, p + 4);
            return strlen(out) == 71 ? 0 : -1;
        }
        lns_test_sleep_ms(10);
    }
    return -1;
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

int td_conn(const test_depot_t *d)
{
    int fd = td_connect(d);
    CU_ASSERT_FATAL(fd >= 0);
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

/* Send (sending) or receive all n bytes, again after EINTR; 0, or -1 on error or EOF. */
static int raw_all(int fd, char *p, size_t n, int sending)
{
    while (n > 0) {
        ssize_t r = sending ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

int raw_send(int fd, const void *buf, size_t n)
{
    return raw_all(fd, (char *)buf, n, 1);
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
    return raw_all(fd, buf, n, 0);
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

/* raw_reqf with the arguments in ap. */
static int raw_vreqf(int fd, char *reply, size_t size, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));
static int raw_vreqf(int fd, char *reply, size_t size, const char *fmt, va_list ap)
{
    char line[8192], tmp[4096];
    vsnprintf(line, sizeof line, fmt, ap);
    if (!reply) {
        reply = tmp;
        size = sizeof tmp;
    }
    if (raw_cmd(fd, line, reply, size) < 0)
        return -1000;
    /* A version-1 STATUS answer is "1 <n> \n" and n bytes of KEY:value: append them. */
    int n, used;
    if (strncmp(line, "1 4 ", 4) == 0 && sscanf(reply, "1 %d %n", &n, &used) == 1 &&
        reply[used] == 0 && n > 0) {
        size_t have = strlen(reply);
        if (have + (size_t)n >= size || raw_read(fd, reply + have, (size_t)n) < 0)
            return -1000;
        reply[have + (size_t)n] = 0;
        if (reply[have + (size_t)n - 1] == '\n')
            reply[have + (size_t)n - 1] = 0;
    }
    return raw_code(reply);
}

int raw_reqf(int fd, char *reply, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = raw_vreqf(fd, reply, size, fmt, ap);
    va_end(ap);
    return rc;
}

int td_reqf(const test_depot_t *d, const char *fmt, ...)
{
    int fd = td_connect(d);
    if (fd < 0)
        return -1000;
    va_list ap;
    va_start(ap, fmt);
    int rc = raw_vreqf(fd, NULL, 0, fmt, ap);
    va_end(ap);
    close(fd);
    return rc;
}

int raw_closed_by_peer(int fd, int ms)
{
    char c;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, ms) <= 0)
        return 0;
    return recv(fd, &c, 1, 0) == 0;
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

int raw_caps(const char *reply, raw_caps_t *c)
{
    char rid[64], key[300], tk[64], kind[16], host[300];
    int port;
    if (sscanf(reply, "1 %699s %699s %699s", c->cap[0], c->cap[1], c->cap[2]) != 3)
        return -1;
    for (int k = 0; k < 3; k++) {
        if (sscanf(c->cap[k], "ibp://%299[^:]:%d/%63[^#]#%299[^/]/%63[^/]/%15s", host, &port, rid,
                   key, tk, kind) != 6)
            return -1;
        snprintf(c->key[k], sizeof c->key[k], "%s#%s", rid, key);
        snprintf(c->tk[k], sizeof c->tk[k], "%s", tk);
    }
    return 0;
}

int raw_allocate(int fd, raw_caps_t *c, const char *fmt, ...)
{
    char line[1024], reply[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    int rc = raw_reqf(fd, reply, sizeof reply, "%s", line);
    if (rc != 1)
        return rc;
    return raw_caps(reply, c) == 0 ? 1 : -1000;
}

int raw_put(int fd, const raw_caps_t *c, long off, const void *s, size_t n)
{
    char reply[256], want[64];
    int rc = off < 0 ? raw_reqf(fd, reply, sizeof reply, "1 2 %s %s %zu 30\n", c->key[1], c->tk[1], n)
                     : raw_reqf(fd, reply, sizeof reply, "1 13 %s %s %ld %zu 30\n", c->key[1],
                                c->tk[1], off, n);
    if (rc != 1)
        return rc;
    if (raw_send(fd, s, n) < 0 || raw_readline(fd, reply, sizeof reply) < 0)
        return -1000;
    snprintf(want, sizeof want, "1 %zu", n);
    return strcmp(reply, want) == 0 ? 1 : raw_code(reply);
}

int raw_get(int fd, const raw_caps_t *c, long off, size_t n, char *buf)
{
    char reply[256];
    int rc = raw_reqf(fd, reply, sizeof reply, "1 8 %s %s %ld %zu 30\n", c->key[0], c->tk[0], off, n);
    if (rc != 1)
        return rc;
    if (raw_read(fd, buf, n) < 0)
        return -1000;
    buf[n] = '\0';
    return 1;
}

void td_clock_set(const char *clock, int seconds)
{
    char tmp[PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", clock);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d\n", seconds) < 0 || fclose(f) != 0 || rename(tmp, clock) != 0)
        fprintf(stderr, "td_clock_set %s: %s\n", clock, strerror(errno));
}

int td_start_clocked(test_depot_t *d, const char *extra, char *clock)
{
    static int n;
    char name[64];
    snprintf(name, sizeof name, "depot%d.clock", ++n);
    snprintf(clock, PATH_MAX, "%s", lns_test_path(name));
    td_clock_set(clock, 0);
    setenv("LNS_TEST_CLOCK_FILE", clock, 1);
    int rc = td_start(d, extra);
    unsetenv("LNS_TEST_CLOCK_FILE");
    return rc;
}

int raw_dead_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &al) < 0) {
        close(fd);
        return 0;
    }
    return ntohs(a.sin_port); /* fd stays open, bound, until the program exits */
}
