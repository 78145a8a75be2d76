/* tool_events.c -- the event stream (--events FILE|fd:N): one line per event, for the GUI
 * and for scripts.  The format is docs/events.md; tool_events_line() is its one writer.
 *
 * The engine calls us from its worker threads and must never wait for a slow reader, so the
 * callers only append to a bounded ring buffer under a mutex and a writer thread of our own
 * drains it to the descriptor.  When the ring is full, a line is dropped whole and counted
 * (never cut); the END line reports the count.  Lines from the tool itself (BEGIN, END, ...)
 * may use a reserve at the top of the ring that library events may not, so END still fits
 * after a flood of dropped events.
 *
 * The writer writes at most PIPE_BUF bytes after poll() says the descriptor is writable, so
 * a write never blocks for long even on a blocking pipe shared with others (fd:2), and it
 * can give up at close time when the reader has stopped reading.  SIGPIPE is blocked in it:
 * a reader that went away is a write error, after which everything is dropped.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lns_time.h"
#include "tool.h"
#include "lns_err.h"

#define RING_BYTES (1u << 20)     /* events in flight to the reader */
#define RESERVE_BYTES (16u << 10) /* the tool's own lines may use this; events may not */
#define LINE_MAX_BYTES 4096
#define CLOSE_GRACE_MS 3000       /* close: how long a reader that stopped gets to read on */

struct tool_events {
    int fd, own_fd;
    int64_t t0_ms;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *ring;
    size_t head, len;             /* bytes [head, head+len) mod RING_BYTES wait for the reader */
    uint64_t dropped;             /* lines dropped: ring full, or after a write error */
    int closing, werr;
    pthread_t writer;
};

void tool_events_encode(const char *in, char *out, size_t size)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    if (size == 0)
        return;
    if (!in || !*in)
        in = "-";
    for (const unsigned char *p = (const unsigned char *)in; *p && o + 1 < size; p++) {
        if (*p <= ' ' || *p >= 0x7f || *p == '%') {
            if (o + 3 >= size)
                break;
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        } else {
            out[o++] = (char)*p;
        }
    }
    out[o] = '\0';
}

static const char *kind_name(lors_event_kind k)
{
    switch (k) {
    case LORS_EV_ALLOCATE: return "ALLOCATE";
    case LORS_EV_STORE_START: return "STORE_START";
    case LORS_EV_STORE_END: return "STORE_END";
    case LORS_EV_FAILURE: return "FAILURE";
    case LORS_EV_COPY_DONE: return "COPY_DONE";
    case LORS_EV_FETCH_START: return "FETCH_START";
    case LORS_EV_FETCH_END: return "FETCH_END";
    case LORS_EV_FETCH_FAIL: return "FETCH_FAIL";
    case LORS_EV_BAD_MAPPING: return "BAD_MAPPING";
    case LORS_EV_WRITE: return "WRITE";
    case LORS_EV_SEND_START: return "SEND_START";
    case LORS_EV_SEND_END: return "SEND_END";
    case LORS_EV_RELAY: return "RELAY";
    case LORS_EV_TRIM: return "TRIM";
    case LORS_EV_REFRESH: return "REFRESH";
    case LORS_EV_REBUILD: return "REBUILD";
    }
    return NULL;
}

static void depot_value(const lors_depot_t *d, char *out, size_t size)
{
    char raw[IBP_MAX_HOST + IBP_MAX_RID + 16];
    lors_depot_format(d, raw, sizeof raw);
    tool_events_encode(raw, out, size);
}

/* The line of one library event into buf (with its newline): its length, or -1. */
static int event_line(int64_t ms, const lors_event_t *ev, char *buf, size_t size)
{
    const char *kind = kind_name(ev->kind);
    char d[3 * (IBP_MAX_HOST + IBP_MAX_RID + 16)], v[384];
    size_t n = 0;

#define ADD(...)                                                                        \
    do {                                                                                \
        int w_ = snprintf(buf + n, n < size ? size - n : 0, __VA_ARGS__);               \
        if (w_ < 0 || (size_t)w_ >= (n < size ? size - n : 0))                          \
            return -1;                                                                  \
        n += (size_t)w_;                                                                \
    } while (0)

    if (!kind || size == 0)
        return -1;
    ADD("%lld %s", (long long)ms, kind);
    if (ev->depot) {
        depot_value(ev->depot, d, sizeof d);
        ADD(" depot=%s", d);
    }
    ADD(" frag=%d", ev->fragment);
    if (ev->copy >= 0)
        ADD(" copy=%d", ev->copy);
    ADD(" off=%lld len=%lld", (long long)ev->offset, (long long)ev->length);
    if (ev->op) {
        tool_events_encode(ev->op, v, sizeof v);
        ADD(" op=%s", v);
    }
    if (ev->kind == LORS_EV_FAILURE || ev->kind == LORS_EV_FETCH_FAIL ||
        ev->kind == LORS_EV_RELAY || (ev->kind == LORS_EV_TRIM && ev->freed == 0)) {
        ADD(" err=%d", ev->ibp_err);
        if (ev->ibp_err != 0) {
            tool_events_encode(ibp_strerror(ev->ibp_err), v, sizeof v);
            ADD(" why=%s", v);
        }
    }
    if (ev->moved_to) {
        depot_value(ev->moved_to, d, sizeof d);
        ADD(" to=%s", d);
    } else if (ev->kind == LORS_EV_FAILURE) {
        ADD(" to=-");
    }
    /* the keys of one kind only come after the common ones */
    if (ev->kind == LORS_EV_TRIM) {
        if (ev->freed < 0)
            ADD(" freed=-");
        else
            ADD(" freed=%d", ev->freed);
    }
    if (ev->kind == LORS_EV_REFRESH) {
        const int64_t t[2] = {ev->old_end, ev->new_end};
        for (int i = 0; i < 2; i++) {
            if (t[i] == XND_TIME_UNKNOWN)
                ADD(" %s=-", i ? "new_end" : "old_end");
            else
                ADD(" %s=%lld", i ? "new_end" : "old_end", (long long)t[i]);
        }
    }
    ADD("\n");
#undef ADD
    return (int)n;
}

/* Append one whole line, or count it dropped.  reserve: may the line use the reserve? */
static void put_line(tool_events_t *es, const char *line, size_t n, int reserve)
{
    size_t limit = RING_BYTES - (reserve ? 0 : RESERVE_BYTES);
    pthread_mutex_lock(&es->mu);
    if (es->werr || es->closing || es->len + n > limit) {
        es->dropped++;
    } else {
        size_t tail = (es->head + es->len) % RING_BYTES;
        size_t first = RING_BYTES - tail < n ? RING_BYTES - tail : n;
        memcpy(es->ring + tail, line, first);
        memcpy(es->ring, line + first, n - first);
        es->len += n;
        pthread_cond_signal(&es->cv);
    }
    pthread_mutex_unlock(&es->mu);
}

static void *writer_main(void *arg)
{
    tool_events_t *es = arg;
    char chunk[PIPE_BUF];
    int64_t give_up = 0;

    pthread_mutex_lock(&es->mu);
    for (;;) {
        while (es->len == 0 && !es->closing)
            pthread_cond_wait(&es->cv, &es->mu);
        if (es->len == 0 || es->werr)
            break;
        size_t n = es->len < sizeof chunk ? es->len : sizeof chunk;
        size_t first = RING_BYTES - es->head < n ? RING_BYTES - es->head : n;
        memcpy(chunk, es->ring + es->head, first);
        memcpy(chunk + first, es->ring, n - first);
        pthread_mutex_unlock(&es->mu);

        struct pollfd pfd = {.fd = es->fd, .events = POLLOUT};
        int pr = poll(&pfd, 1, 100);
        ssize_t w = 0;
        int err = 0;
        if (pr > 0) {
            w = write(es->fd, chunk, n);
            if (w < 0 && errno != EINTR && errno != EAGAIN)
                err = errno ? errno : EIO;
        } else if (pr < 0 && errno != EINTR) {
            err = errno;
        }

        pthread_mutex_lock(&es->mu);
        if (w > 0) {
            es->head = (es->head + (size_t)w) % RING_BYTES;
            es->len -= (size_t)w;
        }
        /* at close, a reader gets CLOSE_GRACE_MS to read on after each write it allowed */
        if (!err && es->closing && (give_up == 0 || w > 0))
            give_up = lns_mono_ms() + CLOSE_GRACE_MS;
        if (!err && give_up && es->len > 0 && lns_mono_ms() > give_up)
            err = ETIMEDOUT;
        if (err) {
            /* count the lines that will never be read (a line may be partly out already) */
            for (size_t i = 0; i < es->len; i++)
                if (es->ring[(es->head + i) % RING_BYTES] == '\n')
                    es->dropped++;
            es->werr = err;
            es->len = 0;
        }
    }
    pthread_mutex_unlock(&es->mu);
    return NULL;
}

tool_events_t *tool_events_open(const char *spec, const char *tool, char *err, size_t errlen)
{
    tool_events_t *es;
    int fd;

    if (!spec || !*spec) {
        lns_err_set(err, errlen, "no file or fd:N given");
        return NULL;
    }
    if (strncmp(spec, "fd:", 3) == 0) {
        char *end;
        errno = 0;
        long v = strtol(spec + 3, &end, 10);
        if (errno || end == spec + 3 || *end || v < 0 || v > INT_MAX) {
            lns_err_set(err, errlen, "%s: expected fd:N with N a descriptor number", spec);
            return NULL;
        }
        fd = (int)v;
        if (fcntl(fd, F_GETFL) < 0 || (fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDONLY) {
            lns_err_set(err, errlen, "%s: descriptor %d is not open for writing", spec, fd);
            return NULL;
        }
    } else {
        fd = open(spec, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
            lns_err_set(err, errlen, "%s: %s", spec, strerror(errno));
            return NULL;
        }
    }
    es = calloc(1, sizeof *es);
    if (es)
        es->ring = malloc(RING_BYTES);
    if (!es || !es->ring) {
        lns_err_set(err, errlen, "out of memory");
        goto fail;
    }
    es->fd = fd;
    es->own_fd = strncmp(spec, "fd:", 3) != 0;
    es->t0_ms = lns_mono_ms();
    pthread_mutex_init(&es->mu, NULL);
    pthread_cond_init(&es->cv, NULL);

    /* the writer takes no signal: SIGPIPE from its writes must not kill the process */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int prc = pthread_create(&es->writer, NULL, writer_main, es);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (prc != 0) {
        lns_err_set(err, errlen, "cannot start the writer thread: %s", strerror(prc));
        pthread_cond_destroy(&es->cv);
        pthread_mutex_destroy(&es->mu);
        goto fail;
    }

    char t[128], line[256];
    tool_events_encode(tool ? tool : "lors", t, sizeof t);
    int n = snprintf(line, sizeof line, "LNS-EVENTS %d tool=%s pid=%ld time=%lld\n",
                     TOOL_EVENTS_VERSION, t, (long)getpid(), (long long)lns_now_s());
    put_line(es, line, (size_t)n, 1);
    return es;

fail:
    if (es)
        free(es->ring);
    free(es);
    if (strncmp(spec, "fd:", 3) != 0)
        close(fd);
    return NULL;
}

void tool_events_event(void *stream, const lors_event_t *ev)
{
    tool_events_t *es = stream;
    char line[LINE_MAX_BYTES];
    if (!es || !ev)
        return;
    int n = event_line(lns_mono_ms() - es->t0_ms, ev, line, sizeof line);
    if (n > 0)
        put_line(es, line, (size_t)n, 0);
}

void tool_events_printf(tool_events_t *es, const char *kind, const char *fmt, ...)
{
    char line[LINE_MAX_BYTES];
    va_list ap;
    if (!es || !kind)
        return;
    int is_end = strcmp(kind, "END") == 0;
    int n = snprintf(line, sizeof line, "%lld %s", (long long)(lns_mono_ms() - es->t0_ms), kind);
    if (n < 0 || (size_t)n >= sizeof line)
        return;
    if (fmt && *fmt) {
        line[n++] = ' ';
        va_start(ap, fmt);
        int w = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
        va_end(ap);
        if (w < 0 || (size_t)w >= sizeof line - (size_t)n - 32)
            return; /* too long for one line: never cut one */
        n += w;
        /* a value never holds a space; but a newline in fmt's output would split the line */
        for (int i = 0; i < n; i++)
            if (line[i] == '\n' || line[i] == '\r')
                line[i] = ' ';
    }
    if (is_end) {
        pthread_mutex_lock(&es->mu);
        uint64_t dropped = es->dropped;
        pthread_mutex_unlock(&es->mu);
        n += snprintf(line + n, sizeof line - (size_t)n, " dropped=%llu",
                      (unsigned long long)dropped);
    }
    line[n++] = '\n';
    put_line(es, line, (size_t)n, 1);
}

void tool_events_close(tool_events_t *es)
{
    if (!es)
        return;
    pthread_mutex_lock(&es->mu);
    es->closing = 1;
    pthread_cond_signal(&es->cv);
    pthread_mutex_unlock(&es->mu);
    pthread_join(es->writer, NULL);
    if (es->own_fd)
        close(es->fd);
    pthread_cond_destroy(&es->cv);
    pthread_mutex_destroy(&es->mu);
    free(es->ring);
    free(es);
}
