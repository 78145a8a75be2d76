/* lors_feed.c -- a download on a thread of its own, into a pipe (lors_feed.h). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "lns_err.h"
#include "lors_feed.h"

#define PIPE_BYTES (1 << 20)

int lors__pipe(int p[2])
{
    if (pipe2(p, O_CLOEXEC) != 0)
        return -1;
    (void)fcntl(p[1], F_SETPIPE_SZ, PIPE_BYTES); /* best effort: the default works too */
    return 0;
}

static void *feeder(void *arg)
{
    lors__feed_t *f = arg;
    f->rc = f->run(&f->o, f->x, f->fd, &f->rep);
    close(f->fd);
    return NULL;
}

int lors__feed_start(lors__feed_t *f, int *read_fd, char *err, size_t errlen)
{
    int p[2];
    memset(&f->rep, 0, sizeof f->rep);
    f->rc = LORS_OK;
    if (lors__pipe(p) != 0) {
        lns_err_set(err, errlen, "no pipe for the bytes read: %s", strerror(errno));
        return LORS_E_THREAD;
    }
    f->fd = p[1];
    if (pthread_create(&f->tid, NULL, feeder, f) != 0) {
        close(p[0]);
        close(p[1]);
        lns_err_set(err, errlen, "cannot start the download thread");
        return LORS_E_THREAD;
    }
    *read_fd = p[0];
    return LORS_OK;
}

void lors__feed_join(lors__feed_t *f)
{
    pthread_join(f->tid, NULL);
}
