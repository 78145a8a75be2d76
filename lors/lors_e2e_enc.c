/* lors_e2e_enc.c -- the upload side's frame encoder: read once, transform in parallel, write in order.
 *
 * zlib at level 6 runs at tens of MB/s per core, far below what the upload engine stores, so
 * frames are transformed by up to ENC_MAX_WORKERS threads at once, each with its own codec
 * (AES-GCM nonces depend only on the frame index, so any thread may encode any frame).
 *
 * Three roles share a ring of slots; frame f lives in slot f % nslots:
 *   the reader (the thread that calls lors__e2e_encoder) reads frame after frame into free
 *   slots, exactly once and in order; the workers take read frames, lowest first, and encode
 *   them; the writer emits encoded frames strictly in frame order into the pipe, appends
 *   them to the frame table and frees their slots.  The ring bounds memory to nslots frames
 *   (plain + stored) however fast the input is.
 *
 * Stopping: the first error (input, encode, pipe) is kept in e->rc and sets stop; everyone
 * leaves at the next wait.  The reader also notices a pipe whose reader (the engine) left
 * while it waits for input, so a failed upload never waits on a silent input.
 * Locking: one mutex around slot states and the counters; no read, encode or write runs
 * with it held.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lns_err.h"
#include "lns_io.h"
#include "lors_e2e_int.h"
#include "lors_io_int.h"

#define ENC_MAX_WORKERS 4

enum { SLOT_FREE = 0, SLOT_READ, SLOT_BUSY, SLOT_DONE };

typedef struct slot {
    unsigned char *plain;       /* owned buffer (NULL when the input is memory) */
    const unsigned char *src;   /* the frame's plain bytes */
    unsigned char *st;          /* its stored bytes */
    int64_t n;                  /* plain length */
    size_t sl;                  /* stored length */
    int64_t frame;
    int state;
} slot_t;

typedef struct pipeline {
    lors__e2e_enc_t *e;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    slot_t *slots;
    int nslots;
    int64_t next_write;         /* the frame the writer emits next */
    int64_t frames_read;        /* frames the reader has published */
    int eof;                    /* the reader is done: there are frames_read frames */
    int stop;
} pipeline_t;

/* Keep the first error; with p->mu held. */
static void fail_locked(pipeline_t *p, int rc, int engine_gone, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fail_locked(pipeline_t *p, int rc, int engine_gone, const char *fmt, ...)
{
    if (p->e->rc == LORS_OK) {
        p->e->rc = rc;
        p->e->engine_gone = engine_gone;
        if (fmt) {
            va_list ap;
            va_start(ap, fmt);
            lns_err_vset(p->e->err, sizeof p->e->err, fmt, ap);
            va_end(ap);
        }
    }
    p->stop = 1;
    pthread_cond_broadcast(&p->cv);
}

/* Read n bytes (fewer only at the end of the input); gives up (-2) as soon as the engine has
 * stopped reading the pipe (its read end closed: POLLERR on the write end). */
static int64_t read_input(int fd, int pipe_wr, unsigned char *buf, int64_t n)
{
    int64_t got = 0;
    while (got < n) {
        struct pollfd pf[2] = {{.fd = fd, .events = POLLIN}, {.fd = pipe_wr, .events = 0}};
        if (poll(pf, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (pf[1].revents & (POLLERR | POLLHUP | POLLNVAL))
            return -2;
        if (!pf[0].revents)
            continue;
        ssize_t r = lns_fd_read_some(fd, buf + got, (size_t)(n - got), -1);
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        got += r;
    }
    return got;
}

typedef struct worker_arg {
    pipeline_t *p;
    lors__e2e_codec_t codec;
} worker_arg_t;

static void *worker(void *arg)
{
    worker_arg_t *w = arg;
    pipeline_t *p = w->p;
    char why[256];

    pthread_mutex_lock(&p->mu);
    for (;;) {
        slot_t *s = NULL;
        for (int i = 0; i < p->nslots; i++)
            if (p->slots[i].state == SLOT_READ && (!s || p->slots[i].frame < s->frame))
                s = &p->slots[i];
        if (p->stop || (!s && p->eof))
            break;
        if (!s) {
            pthread_cond_wait(&p->cv, &p->mu);
            continue;
        }
        s->state = SLOT_BUSY;
        pthread_mutex_unlock(&p->mu);
        int rc = lors__e2e_encode(&w->codec, (uint32_t)s->frame, s->src, (size_t)s->n, s->st,
                                  &s->sl, why, sizeof why);
        pthread_mutex_lock(&p->mu);
        if (rc != LORS_OK) {
            int64_t first = s->frame * p->e->d->frame_size;
            fail_locked(p, rc, 0, "frame %lld (plain bytes %lld-%lld): %s", (long long)s->frame,
                        (long long)first, (long long)(first + s->n - 1), why);
            break;
        }
        s->state = SLOT_DONE;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void *writer(void *arg)
{
    pipeline_t *p = arg;
    lors__e2e_enc_t *e = p->e;
    sigset_t old;
    int was_pending;

    lors__sigpipe_hold(&old, &was_pending);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        slot_t *s = &p->slots[p->next_write % p->nslots];
        if (p->stop || (p->eof && p->next_write == p->frames_read))
            break;
        if (s->state != SLOT_DONE || s->frame != p->next_write) {
            pthread_cond_wait(&p->cv, &p->mu);
            continue;
        }
        pthread_mutex_unlock(&p->mu);
        int rc = lors__e2e_desc_add(e->d, s->n, (int64_t)s->sl);
        int wr = rc == LORS_OK ? lns_fd_write_all(e->out_fd, s->st, s->sl, -1) : 0;
        pthread_mutex_lock(&p->mu);
        if (rc != LORS_OK) {
            fail_locked(p, rc, 0, "out of memory for the frame table");
            break;
        }
        if (wr < 0) {
            fail_locked(p, LORS_E_WRITE, 1, NULL);
            break;
        }
        s->state = SLOT_FREE;
        p->next_write++;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    lors__sigpipe_release(&old, was_pending);
    return NULL;
}

/* The reader's loop: frames in order into free slots, until the end of the input or a stop. */
static void read_frames(pipeline_t *p)
{
    lors__e2e_enc_t *e = p->e;
    int64_t fs = e->d->frame_size;

    for (int64_t f = 0;; f++) {
        slot_t *s = &p->slots[f % p->nslots];
        pthread_mutex_lock(&p->mu);
        while (!p->stop && s->state != SLOT_FREE)
            pthread_cond_wait(&p->cv, &p->mu);
        int stop = p->stop;
        pthread_mutex_unlock(&p->mu);
        if (stop)
            return;

        int64_t want = e->length >= 0 && e->length - e->plain_read < fs
                           ? e->length - e->plain_read : fs;
        int64_t n;
        if (e->mem) {
            s->src = e->mem + e->plain_read;
            n = want;
        } else {
            s->src = s->plain;
            n = want > 0 ? read_input(e->in_fd, e->out_fd, s->plain, want) : 0;
        }
        pthread_mutex_lock(&p->mu);
        if (n == -2) {
            fail_locked(p, LORS_E_WRITE, 1, NULL);
        } else if (n < 0) {
            fail_locked(p, LORS_E_READ, 0, "reading the input at byte %lld: %s",
                        (long long)e->plain_read, strerror(errno));
        } else if (n < want && e->length >= 0) {
            fail_locked(p, LORS_E_SHORT, 0, "the input ended at byte %lld, before its length %lld",
                        (long long)(e->plain_read + n), (long long)e->length);
        } else if (n > 0 && f >= LORS_E2E_MAX_FRAMES) {
            fail_locked(p, LORS_E_INVAL, 0, "the input needs more than %lld frames of %lld bytes: "
                        "use a larger e2e frame size", (long long)LORS_E2E_MAX_FRAMES,
                        (long long)fs);
        } else if (n > 0) {
            e->plain_read += n;
            s->n = n;
            s->frame = f;
            s->state = SLOT_READ;
            p->frames_read = f + 1;
        }
        int done = p->stop || n == 0 || n < want;
        if (done)
            p->eof = 1;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        if (done)
            return;
    }
}

void lors__e2e_encoder_run(lors__e2e_enc_t *e)
{
    pipeline_t p;
    worker_arg_t w[ENC_MAX_WORKERS];
    pthread_t wt[ENC_MAX_WORKERS], tw;
    int nw = 0, writer_up = 0;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int want_workers = cpus < 1 ? 1 : cpus > ENC_MAX_WORKERS ? ENC_MAX_WORKERS : (int)cpus;
    int64_t fs = e->d->frame_size;
    size_t stmax = (size_t)lors__e2e_max_stored(&e->d->chain, fs);

    memset(&p, 0, sizeof p);
    p.e = e;
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    p.nslots = 2 * want_workers;
    p.slots = calloc((size_t)p.nslots, sizeof *p.slots);
    int ok = p.slots != NULL;
    for (int i = 0; ok && i < p.nslots; i++) {
        p.slots[i].st = malloc(stmax);
        p.slots[i].plain = e->mem ? NULL : malloc((size_t)fs);
        ok = p.slots[i].st && (e->mem || p.slots[i].plain);
    }
    for (int i = 0; ok && i < want_workers; i++) {
        w[nw].p = &p;
        if (lors__e2e_codec_init(&w[nw].codec, &e->d->chain, e->key, e->d->salt) != LORS_OK) {
            lors__e2e_codec_free(&w[nw].codec);
            break;
        }
        if (pthread_create(&wt[nw], NULL, worker, &w[nw]) != 0) {
            lors__e2e_codec_free(&w[nw].codec);
            break;
        }
        nw++;
    }
    writer_up = ok && nw > 0 && pthread_create(&tw, NULL, writer, &p) == 0;

    if (writer_up) {
        read_frames(&p);
    } else {
        pthread_mutex_lock(&p.mu);
        fail_locked(&p, LORS_E_NOMEM, 0, "out of memory or threads for the encoder (%lld-byte "
                    "frames)", (long long)fs);
        pthread_mutex_unlock(&p.mu);
    }
    for (int i = 0; i < nw; i++) {
        pthread_join(wt[i], NULL);
        lors__e2e_codec_free(&w[i].codec);
    }
    if (writer_up)
        pthread_join(tw, NULL);
    close(e->out_fd);
    for (int i = 0; p.slots && i < p.nslots; i++) {
        free(p.slots[i].st);
        free(p.slots[i].plain);
    }
    free(p.slots);
    pthread_cond_destroy(&p.cv);
    pthread_mutex_destroy(&p.mu);
}
