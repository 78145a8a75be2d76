/* lors_download_ctl.h -- lors_download's control file, OUT.lnsdl: which bytes of a file
 * being written in place are already there, for -R (see lors_download_ctl.c). */
#ifndef LNS_LORS_DOWNLOAD_CTL_H
#define LNS_LORS_DOWNLOAD_CTL_H

#include <limits.h>
#include <stdint.h>

#include "lors.h"
#include "xnd.h"

typedef struct dl_ctl {
    char path[PATH_MAX + 8];   /* OUT.lnsdl */
    int out_fd;                /* OUT: runs of it the record names are checked on -R */
    char id[65];               /* the exNode's data (lors_download_ctl.c) */
    int64_t off, len;          /* the range */
    lors_span_t *spans;        /* written, sorted, merged */
    size_t n, cap;
    int64_t unsaved;           /* bytes placed since the last save */
    int64_t saved_ns;
    int err;                   /* errno of the first save that failed, 0 */
} dl_ctl_t;

/* Set up the control file of out (written through out_fd) for x's bytes [off, off+len). */
void dl_ctl_init(dl_ctl_t *c, const char *out, int out_fd, const xnd_t *x, int64_t off,
                 int64_t len);
/* -R: read the control file.  1 with c->spans set when it is there and describes this
 * exNode and range; 0 when there is none; -1 when it is there but does not (a line in why). */
int dl_ctl_load(dl_ctl_t *c, char *why, size_t whylen);
/* -R: keep of each run loaded only its prefix that x's digests vouch for in OUT (whole
 * checksum blocks; lors_verify_at); the bytes dropped (to be fetched again). */
int64_t dl_ctl_check(dl_ctl_t *c, const xnd_t *x);
/* The engine's on_placed: record [off, off+len) (len 0: a tick); once a second or 64 MiB
 * has come since the last save, save. */
void dl_ctl_placed(void *arg, int64_t off, int64_t len);
/* Replace the control file atomically (not synced: -R checks what it says).  0, or -1. */
int dl_ctl_save(dl_ctl_t *c);
/* The download is complete: the control file goes. */
void dl_ctl_remove(const dl_ctl_t *c);
/* Bytes recorded, in all. */
int64_t dl_ctl_bytes(const dl_ctl_t *c);
void dl_ctl_free(dl_ctl_t *c);

#endif
