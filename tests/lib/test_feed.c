/* test_feed.c -- a pipe fed by a thread, for tests of readers of a stream of unknown length. */
#include "lns_test.h"

#include <unistd.h>

static void *feed_main(void *arg)
{
    lns_test_feed *f = arg;
    size_t off = 0;
    while (off < f->n) {
        size_t want = f->n - off < f->chunk ? f->n - off : f->chunk;
        ssize_t w = write(f->wfd, f->data + off, want);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    close(f->wfd);
    return NULL;
}

int lns_test_feed_start(lns_test_feed *f, const void *data, size_t n, size_t chunk)
{
    int p[2];
    if (pipe(p) != 0)
        return -1;
    f->rfd = p[0];
    f->wfd = p[1];
    f->data = data;
    f->n = n;
    f->chunk = chunk;
    if (pthread_create(&f->th, NULL, feed_main, f) != 0) {
        close(p[0]);
        close(p[1]);
        return -1;
    }
    return 0;
}

void lns_test_feed_end(lns_test_feed *f)
{
    pthread_join(f->th, NULL);
    close(f->rfd);
}
