/* test_slow.c -- see test_slow.h. */
#include "test_slow.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "lns_test.h"
#include "lns_time.h"

int ts_connect_from(const char *src, int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    struct timeval tv = {2, 0};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    inet_pton(AF_INET, src, &sa.sin_addr);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
        goto fail;
    sa.sin_port = htons((unsigned short)port);
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
        goto fail;
    return fd;
fail:
    close(fd);
    return -1;
}

int ts_connect_nowait(const char *src, int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    inet_pton(AF_INET, src, &sa.sin_addr);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
        goto fail;
    sa.sin_port = htons((unsigned short)port);
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0 && errno != EINPROGRESS)
        goto fail;
    return fd;
fail:
    close(fd);
    return -1;
}

int ts_read_reply(int fd, int wait_ms)
{
    return ts_read_reply_why(fd, wait_ms, NULL, 0);
}

/* Fill why (if any) for a reply that is not whole: n bytes in, of which a body of got/len. */
static int not_whole(char *why, size_t size, const char *end, int err, size_t n, long len,
                     long got, int64_t t0)
{
    if (why && size)
        snprintf(why, size, "%s%s%s after %lld ms: %zu bytes in, %s %ld of %ld", end,
                 err ? ": " : "", err ? strerror(err) : "", (long long)(lns_mono_ms() - t0), n,
                 len >= 0 ? "body" : "no whole head;", got, len);
    return 0;
}

int ts_read_reply_why(int fd, int wait_ms, char *why, size_t size)
{
    char buf[1 << 14];
    size_t n = 0;
    int status = 0;
    long len = -1, got = 0; /* len: the Content-Length once the head is in */
    int64_t t0 = lns_mono_ms(), end = t0 + wait_ms;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int left = (int)(end - lns_mono_ms());
        if (left <= 0 || poll(&p, 1, left) <= 0)
            return not_whole(why, size, "no more within the wait", 0, n, len, got, t0);
        if (len >= 0) { /* the body: counted, not kept */
            ssize_t r = recv(fd, buf, sizeof buf, 0);
            if (r <= 0)
                return not_whole(why, size, r ? "recv" : "EOF", r ? errno : 0, n, len, got, t0);
            got += r;
        } else {
            ssize_t r = recv(fd, buf + n, sizeof buf - 1 - n, 0);
            if (r <= 0)
                return not_whole(why, size, r ? "recv" : "EOF", r ? errno : 0, n, len, got, t0);
            n += (size_t)r;
            buf[n] = 0;
            char *body = strstr(buf, "\r\n\r\n"), *cl;
            if (!body) {
                if (n == sizeof buf - 1)
                    return 0;
                continue;
            }
            body += 4;
            if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
                return 0;
            len = 0;
            for (cl = buf; (cl = strchr(cl, '\n')) && cl < body; cl++)
                if (strncasecmp(cl + 1, "Content-Length:", 15) == 0)
                    len = atol(cl + 16);
            got = (long)(buf + n - body);
        }
        if (got >= len)
            return status;
    }
}

int ts_get(const char *src, int port, const char *path, int wait_ms, int64_t *ms)
{
    char req[512];
    int len = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
                       path);
    int64_t t0 = lns_mono_ms();
    int ok = 0, fd = ts_connect_from(src, port);
    if (fd >= 0 && send(fd, req, (size_t)len, MSG_NOSIGNAL) == len)
        ok = ts_read_reply(fd, wait_ms) == 200;
    if (fd >= 0)
        close(fd);
    *ms = lns_mono_ms() - t0;
    return ok;
}

void ts_get_for(int port, const char *path, int ms, int wait_ms, int *ok, int *fast, int *tries,
                int64_t *worst)
{
    int64_t end = lns_mono_ms() + ms, dt;
    *ok = *fast = *tries = 0;
    *worst = 0;
    while (lns_mono_ms() < end || *tries < 5) {
        int got = ts_get("127.0.0.2", port, path, wait_ms, &dt);
        *ok += got;
        *fast += got && dt <= 1000;
        (*tries)++;
        *worst = dt > *worst ? dt : *worst;
        usleep(100 * 1000);
    }
}

void ts_judge(const char *what, int target, int ok, int fast, int tries, int64_t worst)
{
    const char *strict = getenv("LNS_ABUSE_STRICT");
    printf("\n  %s: %d of %d GETs answered, %d within 1 s, slowest %lld ms%s\n", what, ok,
           tries, fast, (long long)worst, target ? " (target)" : "");
    CU_ASSERT(ok * 100 >= tries * 95);
    if (target && strict && strcmp(strict, "1") == 0)
        CU_ASSERT(fast * 100 >= tries * 95);
}

int ts_judged_gets(int port, const char *path, int ms, const char *what, int target)
{
    int ok, fast, tries;
    int64_t worst;
    ts_get_for(port, path, ms, 5000, &ok, &fast, &tries, &worst);
    ts_judge(what, target, ok, fast, tries, worst);
    return ok == tries;
}

int ts_fds_for(int n)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 0;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    return rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= (rlim_t)n + 256;
}

/* ---- slow connections, all fed by one thread ---- */

/* Has the server closed it?  (An idle slow connection has nothing to read otherwise.) */
static int closed_by_server(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char b[256];
    if (poll(&p, 1, 0) <= 0)
        return 0;
    ssize_t r = recv(fd, b, sizeof b, MSG_DONTWAIT);
    return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

static void *slow_main(void *arg)
{
    ts_slow_set_t *s = arg;
    while (!s->stop) {
        pthread_mutex_lock(&s->mu);
        for (int i = 0; i < s->n; i++) {
            ts_slow_t *c = &s->c[i];
            if (c->closed_ms && s->again) {
                close(c->fd);
                c->fd = ts_connect_nowait(c->src, s->port);
                c->sent = 0;
                c->closed_ms = c->fd < 0 ? lns_mono_ms() : 0;
                s->reopened += c->fd >= 0;
                continue;
            }
            if (c->closed_ms)
                continue;
            size_t len = strlen(c->req);
            char b = c->sent < len ? c->req[c->sent] : "X-a: b\r\n"[(c->sent - len) % 8];
            if (closed_by_server(c->fd))
                c->closed_ms = lns_mono_ms();
            else if (send(c->fd, &b, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1)
                c->sent++;
            else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOTCONN)
                c->closed_ms = lns_mono_ms(); /* (still connecting: try again next tick) */
        }
        pthread_mutex_unlock(&s->mu);
        usleep(100 * 1000);
    }
    return NULL;
}

void ts_slow_start(ts_slow_set_t *s)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    CU_ASSERT_FATAL(pthread_create(&s->th, NULL, slow_main, s) == 0);
}

int ts_slow_add(ts_slow_set_t *s, const char *src, int port, const char *req, size_t fast)
{
    int fd = ts_connect_from(src, port);
    if (fd >= 0 && fast && send(fd, req, fast, MSG_NOSIGNAL) != (ssize_t)fast) {
        close(fd);
        fd = -1;
    }
    if (fd < 0 || s->n == TS_MAX_SLOW) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    pthread_mutex_lock(&s->mu);
    s->port = port;
    s->c[s->n] = (ts_slow_t){.fd = fd, .req = req, .sent = fast, .opened_ms = lns_mono_ms()};
    snprintf(s->c[s->n].src, sizeof s->c[s->n].src, "%s", src);
    s->n++;
    pthread_mutex_unlock(&s->mu);
    return 0;
}

int ts_slow_flood(ts_slow_set_t *s, int port, int n, int per_address, const char *req)
{
    char src[32];
    int made = 0;
    s->again = 1;
    for (int i = 0; i < n; i++) {
        int a = i / per_address;
        snprintf(src, sizeof src, "127.0.%d.%d", 2 + a / 250, 1 + a % 250);
        made += ts_slow_add(s, src, port, req, 0) == 0;
    }
    return made;
}

int ts_slow_open_count(ts_slow_set_t *s)
{
    int n = 0;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->n; i++)
        n += s->c[i].closed_ms == 0;
    pthread_mutex_unlock(&s->mu);
    return n;
}

void ts_slow_stop(ts_slow_set_t *s)
{
    if (!s->stop) {
        s->stop = 1;
        pthread_join(s->th, NULL);
    }
}

void ts_slow_end(ts_slow_set_t *s)
{
    ts_slow_stop(s);
    for (int i = 0; i < s->n; i++)
        close(s->c[i].fd);
    pthread_mutex_destroy(&s->mu);
}

int ts_flood_judged(int port, int n, int per_address, const char *req, int settle_ms,
                    const char *path, const char *what, int target, long *reopened)
{
    ts_slow_set_t *s = malloc(sizeof *s);
    CU_ASSERT_FATAL(s != NULL);
    ts_slow_start(s);
    int made = ts_slow_flood(s, port, n, per_address, req);
    usleep((useconds_t)settle_ms * 1000);
    ts_judged_gets(port, path, 3000, what, target);
    *reopened = s->reopened;
    ts_slow_end(s);
    free(s);
    return made;
}
