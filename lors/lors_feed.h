/* lors_feed.h -- internal to liblors: a download on a thread of its own, into a pipe.
 *
 * Two callers read a network file as a stream while they work on it: the download of a
 * transformed file (lors_e2e.c: the stored bytes, decoded frame by frame) and lors_convert
 * (the file's bytes, stored again in another layout).  The feeder runs the download engine
 * into the pipe's write end and closes it when done, so the reader sees the end of the
 * stream; a reader that stops early closes the read end, and the feeder, its next write
 * failing with EPIPE, stops too.
 */
#ifndef LNS_LORS_FEED_H
#define LNS_LORS_FEED_H

#include <pthread.h>

#include "lors.h"

/* A pipe (close-on-exec) whose buffer is asked to hold 1 MiB: fewer context switches per
 * MiB than the default 64 KiB.  0, or -1 with errno. */
int lors__pipe(int p[2]);

typedef struct lors__feed {
    /* set by the caller */
    lors_download_opts_t o;
    const xnd_t *x;
    int (*run)(const lors_download_opts_t *o, const xnd_t *x, int out_fd,
               lors_dl_report_t *rep);
    /* the result, after lors__feed_join */
    int rc;
    lors_dl_report_t rep;
    /* private */
    int fd;
    pthread_t tid;
} lors__feed_t;

/* Start the feeder: *read_fd gets the pipe's read end (the caller reads it, and closes it
 * before lors__feed_join).  LORS_OK; LORS_E_THREAD with err set (no pipe, no thread; nothing
 * left open). */
int lors__feed_start(lors__feed_t *f, int *read_fd, char *err, size_t errlen);
/* Wait for the feeder (its rc and rep are then set). */
void lors__feed_join(lors__feed_t *f);

#endif
