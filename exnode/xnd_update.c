/* xnd_update.c -- updating an exNode file that others may update too: a digest of the bytes
 * read, and a compare-and-swap of the file under a POSIX record lock.
 *
 * Each version of an exNode is the only handle on its allocations, so a writer that replaced
 * a version it never read would leave that version's new allocations named by nothing.  A
 * program that rewrites an exNode in place keeps the digest (SHA-256) of the bytes it read; at the end,
 * holding an fcntl write lock on ".<name>.lock" beside the file, reads the file again and
 * renames its new version in only if the bytes still have that digest.  The lock makes the
 * check and the rename one step against other lns writers (two checks cannot both pass before
 * either renames); the check catches any writer at all whose rename came earlier.
 *
 * fcntl, not flock: NFS carries fcntl locks to its lock manager, so writers on two hosts that
 * share a directory exclude each other.  The lock file is never removed: a waiter could
 * otherwise lock a file that is no longer in the directory while a third process locks its
 * replacement.  A process that dies lets the lock go, so a SIGKILL never leaves it taken.
 * fcntl's rule that closing any descriptor of the lock file drops the process's lock is why
 * xnd_update_file takes the caller's descriptor instead of locking a second time.
 */
#include "xnd_internal.h"
#include "lns_time.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int digest_of(const void *buf, size_t len, xnd_digest_t *st)
{
    unsigned int n = sizeof st->sha256;
    return EVP_Digest(buf, len, st->sha256, &n, EVP_sha256(), NULL) == 1 ? XND_OK
                                                                          : XND_E_NOMEM;
}

int xnd_read_file_digest(const char *path, const xnd_opts_t *opts, xnd_t **out,
                        xnd_digest_t *digest, char *err, size_t errlen)
{
    char *bytes = NULL;
    size_t n = 0;
    int rc = xnd_read_file_raw(path, opts, out, &bytes, &n, err, errlen);
    if (rc != XND_OK)
        return rc;
    rc = digest_of(bytes, n, digest);
    free(bytes);
    if (rc != XND_OK) {
        xnd_free(*out);
        *out = NULL;
        return xnd_seterr(err, errlen, rc, 0, "%s: cannot compute its digest", path);
    }
    return XND_OK;
}

int xnd_digest(const xnd_t *x, xnd_digest_t *digest, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    int rc = xnd_serialize(x, &text, &len, err, errlen);
    if (rc == XND_OK && (rc = digest_of(text, len, digest)) != XND_OK)
        xnd_seterr(err, errlen, rc, 0, "cannot compute the digest");
    free(text);
    return rc;
}

/* ".<name>.lock" in path's directory. */
static int lock_path(const char *path, char *out, size_t size)
{
    char a[PATH_MAX], b[PATH_MAX], dir[PATH_MAX];
    if (strlen(path) >= PATH_MAX)
        return -1;
    strcpy(a, path);
    strcpy(b, path);
    snprintf(dir, sizeof dir, "%s", dirname(a)); /* dirname may return a static "." */
    return snprintf(out, size, "%s/.%s.lock", dir, basename(b)) < (int)size ? 0 : -1;
}

int xnd_lock_file(const char *path, int wait_ms, int *fd, char *err, size_t errlen)
{
    char lp[2 * PATH_MAX + 16];
    struct flock fl;
    *fd = -1;
    if (!path || !*path || strcmp(path, "-") == 0 || lock_path(path, lp, sizeof lp) < 0)
        return xnd_seterr(err, errlen, XND_E_INVAL, 0, "%s: no update lock for this path",
                          path ? path : "(null)");
    int f = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (f < 0)
        return xnd_seterr(err, errlen, XND_E_IO, 0, "%s: %s", lp, strerror(errno));
    /* F_SETLK polled, not F_SETLKW: the wait is bounded, and a holder stuck on a dead NFS
     * server or a stopped process costs a waiter wait_ms, not forever */
    int64_t until = lns_mono_ms() + (wait_ms > 0 ? wait_ms : 0);
    for (;;) {
        memset(&fl, 0, sizeof fl);
        fl.l_type = F_WRLCK;
        fl.l_whence = SEEK_SET;
        if (fcntl(f, F_SETLK, &fl) == 0) {
            *fd = f;
            return XND_OK;
        }
        if (errno != EACCES && errno != EAGAIN && errno != EINTR) {
            int e = errno;
            close(f);
            return xnd_seterr(err, errlen, XND_E_IO, 0, "%s: lock: %s", lp, strerror(e));
        }
        if (lns_mono_ms() >= until)
            break;
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    long pid = fcntl(f, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK ? (long)fl.l_pid : 0;
    close(f);
    return xnd_seterr(err, errlen, XND_E_BUSY, 0, "%s: another process (pid %ld) is updating "
                      "it (%s held for over %d s)", path, pid, lp, wait_ms / 1000);
}

void xnd_unlock_file(int fd)
{
    if (fd >= 0)
        close(fd); /* drops the lock */
}

int xnd_update_file(const xnd_t *x, const char *path, const xnd_digest_t *was, int lockfd,
                    xnd_digest_t *now, char *err, size_t errlen)
{
    char *text = NULL, *cur = NULL;
    size_t len = 0, clen = 0;
    xnd_digest_t st;
    int fd = lockfd, rc;

    if (!x || !path || !*path || !was || strcmp(path, "-") == 0)
        return xnd_seterr(err, errlen, XND_E_INVAL, 0, "update: no exNode, path or stamp");
    if ((rc = xnd_serialize(x, &text, &len, err, errlen)) != XND_OK)
        return rc;
    if (fd < 0 && (rc = xnd_lock_file(path, XND_LOCK_WAIT_MS, &fd, err, errlen)) != XND_OK)
        goto out;
    if (access(path, F_OK) != 0 && errno == ENOENT) {
        rc = xnd_seterr(err, errlen, XND_E_CHANGED, 0, "%s: removed since it was read: not "
                        "written again", path);
        goto out;
    }
    /* the file as it is now, whatever its size: it is compared, not parsed */
    if ((rc = xnd_read_bytes(path, SIZE_MAX / 2, &cur, &clen, err, errlen)) != XND_OK)
        goto out;
    if ((rc = digest_of(cur, clen, &st)) != XND_OK) {
        xnd_seterr(err, errlen, rc, 0, "%s: cannot compute its digest", path);
        goto out;
    }
    if (memcmp(st.sha256, was->sha256, sizeof st.sha256) != 0) {
        rc = xnd_seterr(err, errlen, XND_E_CHANGED, 0, "%s: changed since it was read "
                        "(another program wrote it): not replaced", path);
        goto out;
    }
    if ((rc = xnd_write_text(text, len, path, 0, err, errlen)) != XND_OK)
        goto out;
    if (now && (rc = digest_of(text, len, now)) != XND_OK)
        xnd_seterr(err, errlen, rc, 0, "%s: written, but its digest cannot be computed", path);
out:
    if (lockfd < 0)
        xnd_unlock_file(fd);
    free(cur);
    free(text);
    return rc;
}
