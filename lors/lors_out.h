/* lors_out.h -- internal to liblors: where a download's bytes go, in order.
 *
 * lors_download_fd writes to a file descriptor; the random-access reader (lors_reader.c)
 * takes them straight into its cache blocks, without a pipe and a copy through the kernel.
 * The engine's writers (lors_download_engine.c, lors_download_ec.c, lors_e2e.c) go through this.
 */
#ifndef LNS_LORS_OUT_H
#define LNS_LORS_OUT_H

#include <errno.h>
#include <stddef.h>

#include "lns_io.h"

typedef struct lors__out {
    int fd;                                             /* used when put is NULL */
    int (*put)(void *arg, const void *buf, size_t len); /* 0, or -errno: the download fails
                                                         * with LORS_E_WRITE */
    void *arg;
} lors__out_t;

/* All len bytes to out: 0, or -errno. */
static inline int lors__out_write(const lors__out_t *out, const void *buf, size_t len)
{
    if (out->put)
        return out->put(out->arg, buf, len);
    return lns_fd_write_all(out->fd, buf, len, -1) < 0 ? -errno : 0;
}

#endif
