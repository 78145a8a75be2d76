/* lors_e2e_key.c -- where the aes key comes from: a key file, or the environment.
 *
 * A key never comes from the command line (other users see it in ps) and there is no call
 * that takes one as text from argv: a file, LNS_KEY or LNS_KEY_FILE.  A key file readable by
 * group or others is refused rather than used, so a leaked key is the owner's decision, not
 * an accident of a umask.  Messages name the file and the rule, never any key material, and
 * every copy of the key we make on the way is wiped.
 */
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lors_e2e_int.h"
#include "lns_err.h"

#define KEY_FILE_MAX 80 /* more than 64 hex digits and a CRLF: not a key file */

/* 32 raw bytes, or 64 hex digits with an optional "\n" or "\r\n". */
static int key_from_bytes(const unsigned char *b, size_t n, unsigned char key[LORS_KEY_BYTES])
{
    if (n == LORS_KEY_BYTES) {
        memcpy(key, b, LORS_KEY_BYTES);
        return 0;
    }
    if (n > 0 && b[n - 1] == '\n')
        n--;
    if (n > 0 && b[n - 1] == '\r')
        n--;
    return lors__e2e_from_hex((const char *)b, n, key, LORS_KEY_BYTES);
}

static int key_from_file(const char *path, const char *via, unsigned char key[LORS_KEY_BYTES],
                         char *err, size_t errlen)
{
    unsigned char buf[KEY_FILE_MAX + 1];
    size_t n = 0;
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        lns_err_set(err, errlen, "key file %s%s: %s", path, via, strerror(errno));
        return LORS_E_KEY;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        lns_err_set(err, errlen, "key file %s%s: not a regular file", path, via);
        close(fd);
        return LORS_E_KEY;
    }
    if (st.st_mode & (S_IRGRP | S_IROTH)) {
        lns_err_set(err, errlen, "key file %s%s is readable by group or others (mode %04o): "
                    "refusing it; chmod 600 it (and make a new key if others may have read it)",
                    path, via, (unsigned)(st.st_mode & 07777));
        close(fd);
        return LORS_E_KEY;
    }
    for (;;) {
        ssize_t r = read(fd, buf + n, sizeof buf - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            lns_err_set(err, errlen, "key file %s%s: %s", path, via, strerror(errno));
            close(fd);
            OPENSSL_cleanse(buf, sizeof buf);
            return LORS_E_KEY;
        }
        if (r == 0 || (n += (size_t)r) == sizeof buf)
            break;
    }
    close(fd);
    int bad = n > KEY_FILE_MAX || key_from_bytes(buf, n, key) != 0;
    OPENSSL_cleanse(buf, sizeof buf);
    if (bad) {
        OPENSSL_cleanse(key, LORS_KEY_BYTES);
        lns_err_set(err, errlen, "key file %s%s: not a key (%d raw bytes, or %d hex digits and "
                    "an optional newline)", path, via, LORS_KEY_BYTES, 2 * LORS_KEY_BYTES);
        return LORS_E_KEY;
    }
    return LORS_OK;
}

int lors_key_load(const char *path, unsigned char key[LORS_KEY_BYTES], char *err, size_t errlen)
{
    char dummy[8];
    if (!err || errlen == 0) {
        err = dummy;
        errlen = sizeof dummy;
    }
    if (path)
        return key_from_file(path, "", key, err, errlen);
    const char *hex = getenv("LNS_KEY");
    if (hex && *hex) {
        if (lors__e2e_from_hex(hex, strlen(hex), key, LORS_KEY_BYTES) != 0) {
            OPENSSL_cleanse(key, LORS_KEY_BYTES);
            lns_err_set(err, errlen, "LNS_KEY: not a key (%d hex digits)", 2 * LORS_KEY_BYTES);
            return LORS_E_KEY;
        }
        return LORS_OK;
    }
    const char *file = getenv("LNS_KEY_FILE");
    if (file && *file)
        return key_from_file(file, " (LNS_KEY_FILE)", key, err, errlen);
    lns_err_set(err, errlen, "no key: give a key file, or set LNS_KEY (%d hex digits) or "
                "LNS_KEY_FILE", 2 * LORS_KEY_BYTES);
    return LORS_E_KEY;
}
