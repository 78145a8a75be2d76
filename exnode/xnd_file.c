/* xnd_file.c -- exNode files: read with a size limit, write atomically.
 *
 * A write goes to a temporary file in the target's directory, is fsync'ed, renamed over the
 * target and the directory fsync'ed: a crash leaves either the old exNode or the new one,
 * never half of one, and the temporary name (".<name>.XXXXXX") is never the target's.
 * xnd_write_file_excl puts the file in place only where there is none: renameat2 with
 * RENAME_NOREPLACE, or link(2) where the filesystem has no such rename; either fails with
 * EEXIST, so a file that appears meanwhile is never replaced.
 * "-" is stdin for reading and stdout for writing.
 */
#include "xnd_internal.h"
#include "lns_io.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int xnd_read_all(int fd, size_t max, char **out, size_t *len)
{
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    if (!buf)
        return XND_E_NOMEM;
    for (;;) {
        ssize_t r;
        if (n == cap) {
            char *nb;
            if (cap > max) {
                free(buf);
                return XND_E_LIMIT;
            }
            if (!(nb = realloc(buf, cap * 2))) {
                free(buf);
                return XND_E_NOMEM;
            }
            buf = nb;
            cap *= 2;
        }
        r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            free(buf);
            return XND_E_IO;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    if (n > max) {
        free(buf);
        return XND_E_LIMIT;
    }
    *out = buf;
    *len = n;
    return XND_OK;
}

int xnd_read_bytes(const char *path, size_t max, char **buf, size_t *len, char *err,
                   size_t errlen)
{
    int fd, rc, saved;
    *buf = NULL;
    *len = 0;
    fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return xnd_seterr(err, errlen, XND_E_IO, 0, "%s: %s", path, strerror(errno));
    rc = xnd_read_all(fd, max, buf, len);
    saved = errno;
    if (fd != STDIN_FILENO)
        close(fd);
    if (rc == XND_E_IO)
        return xnd_seterr(err, errlen, rc, 0, "%s: %s", path, strerror(saved));
    if (rc == XND_E_LIMIT)
        return xnd_seterr(err, errlen, rc, 0, "%s: larger than the limit of %zu bytes", path,
                          max);
    if (rc != XND_OK)
        return xnd_seterr(err, errlen, rc, 0, "%s: out of memory", path);
    return XND_OK;
}

int xnd_read_fd_opts(int fd, const xnd_opts_t *opts, xnd_t **out, char **raw, size_t *rawlen,
                     char *err, size_t errlen)
{
    size_t max = opts && opts->max_size ? opts->max_size : XND_DEFAULT_MAX_SIZE;
    char *buf = NULL;
    size_t len = 0;

    if (out)
        *out = NULL;
    if (!out)
        return xnd_seterr(err, errlen, XND_E_INVAL, 0, "no output");
    int rc = xnd_read_all(fd, max, &buf, &len);
    if (rc == XND_E_IO)
        return xnd_seterr(err, errlen, rc, 0, "%s", strerror(errno));
    if (rc == XND_E_LIMIT)
        return xnd_seterr(err, errlen, rc, 0, "larger than the limit of %zu bytes", max);
    if (rc != XND_OK)
        return xnd_seterr(err, errlen, rc, 0, "out of memory");
    rc = xnd_parse_buf_opts(buf, len, opts, out, err, errlen);
    if (rc == XND_OK && raw) {
        *raw = buf;
        *rawlen = len;
    } else {
        free(buf);
    }
    return rc;
}

int xnd_read_file_raw(const char *path, const xnd_opts_t *opts, xnd_t **out, char **bytes,
                      size_t *nbytes, char *err, size_t errlen)
{
    char msg[256];

    if (out)
        *out = NULL;
    if (!path || !out)
        return xnd_seterr(err, errlen, XND_E_INVAL, 0, "no path");
    int fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return xnd_seterr(err, errlen, XND_E_IO, 0, "%s: %s", path, strerror(errno));
    int rc = xnd_read_fd_opts(fd, opts, out, bytes, nbytes, msg, sizeof msg);
    if (fd != STDIN_FILENO)
        close(fd);
    if (rc != XND_OK)
        return xnd_seterr(err, errlen, rc, 0, "%s: %s", path, msg);
    return XND_OK;
}

int xnd_read_file_opts(const char *path, const xnd_opts_t *opts, xnd_t **out, char *err,
                       size_t errlen)
{
    return xnd_read_file_raw(path, opts, out, NULL, NULL, err, errlen);
}

int xnd_read_file(const char *path, xnd_t **out, char *err, size_t errlen)
{
    return xnd_read_file_opts(path, NULL, out, err, errlen);
}

/* Put tmp in place at path without replacing anything: 0, or -1 with errno (EEXIST). */
static int place_new(const char *tmp, const char *path)
{
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
        return -1;
    if (link(tmp, path) < 0)
        return -1;
    unlink(tmp);
    return 0;
}

int xnd_write_text(const char *text, size_t len, const char *path, int excl, char *err,
                   size_t errlen)
{
    char dir[PATH_MAX], base[PATH_MAX], tmp[PATH_MAX * 2 + 16];
    char dirbuf[PATH_MAX];
    struct stat st;
    int fd = -1, dfd, rc;
    const char *step;

    if (strcmp(path, "-") == 0) {
        rc = lns_fd_write_all(STDOUT_FILENO, text, len, -1);
        if (rc < 0)
            return xnd_seterr(err, errlen, XND_E_IO, 0, "stdout: %s", strerror(errno));
        return XND_OK;
    }
    if (strlen(path) >= PATH_MAX)
        return xnd_seterr(err, errlen, XND_E_INVAL, 0, "path too long");
    strcpy(dir, path);
    strcpy(base, path);
    /* dirname() may return a static "." or cut dir in place: keep a copy */
    snprintf(dirbuf, sizeof dirbuf, "%s", dirname(dir));
    snprintf(tmp, sizeof tmp, "%s/.%s.XXXXXX", dirbuf, basename(base));

    if (excl && lstat(path, &st) == 0)
        return xnd_seterr(err, errlen, XND_E_EXISTS, 0, "%s: exists", path);
    step = "create temporary file";
    if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0)
        goto fail_notmp;
    /* mkostemp made it 0600; a replaced exNode keeps its mode. */
    step = "set mode";
    if (!excl && stat(path, &st) == 0 && fchmod(fd, st.st_mode & 07777) < 0)
        goto fail;
    step = "write";
    if (lns_fd_write_all(fd, text, len, -1) < 0)
        goto fail;
    step = "fsync";
    if (fsync(fd) < 0)
        goto fail;
    step = "close";
    rc = close(fd);
    fd = -1;
    if (rc < 0)
        goto fail;
    step = "rename";
    if ((excl ? place_new(tmp, path) : rename(tmp, path)) < 0)
        goto fail;
    /* The rename is durable only once the directory is. */
    if ((dfd = open(dirbuf, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
        rc = fsync(dfd);
        close(dfd);
        if (rc < 0 && errno != EINVAL)
            return xnd_seterr(err, errlen, XND_E_IO, 0, "%s: fsync of directory: %s", path,
                              strerror(errno));
    }
    return XND_OK;
fail: {
    int e = errno;
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    errno = e;
}
fail_notmp:
    rc = errno;
    if (excl && rc == EEXIST)
        return xnd_seterr(err, errlen, XND_E_EXISTS, 0, "%s: exists", path);
    return xnd_seterr(err, errlen, XND_E_IO, 0, "%s: %s: %s", path, step, strerror(rc));
}

static int write_file(const xnd_t *x, const char *path, int excl, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len;
    int rc;
    if (!path || !*path)
        return xnd_seterr(err, errlen, XND_E_INVAL, 0, "no path");
    if ((rc = xnd_serialize(x, &text, &len, err, errlen)) != XND_OK)
        return rc;
    rc = xnd_write_text(text, len, path, excl, err, errlen);
    free(text);
    return rc;
}

int xnd_write_file(const xnd_t *x, const char *path, char *err, size_t errlen)
{
    return write_file(x, path, 0, err, errlen);
}

int xnd_write_file_excl(const xnd_t *x, const char *path, char *err, size_t errlen)
{
    return write_file(x, path, 1, err, errlen);
}
