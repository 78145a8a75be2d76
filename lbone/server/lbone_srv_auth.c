/* lbone_srv_auth.c -- the registry token and the per-depot secrets.
 *
 * Neither is kept in the clear: the token's SHA-256 is computed once at startup, a depot's
 * secret is handed out once at registration and only its SHA-256 is stored.  A presented
 * credential is hashed and the two digests compared with CRYPTO_memcmp, so the time taken
 * tells nothing about how many leading bytes matched (or how long the secret is).
 */
#include "lbone_srv.h"
#include "lns_conf.h"
#include "lns_err.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

void lbone_sha256(const void *data, size_t len, uint8_t out[LBONE_HASH_LEN])
{
    unsigned int n = 0;
    if (EVP_Digest(data, len, out, &n, EVP_sha256(), NULL) != 1 || n != LBONE_HASH_LEN)
        memset(out, 0xff, LBONE_HASH_LEN); /* matches no SHA-256 of anything we compare */
}

int lbone_random_hex(char *out, size_t nbytes)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[64];
    size_t got = 0;
    if (nbytes > sizeof raw)
        return -1;
    while (got < nbytes) {
        ssize_t r = getrandom(raw + got, nbytes - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    for (size_t i = 0; i < nbytes; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[2 * nbytes] = 0;
    return 0;
}

int lbone_secret_matches(const char *presented, const uint8_t hash[LBONE_HASH_LEN])
{
    uint8_t h[LBONE_HASH_LEN];
    if (!presented || !*presented)
        return 0;
    lbone_sha256(presented, strlen(presented), h);
    return CRYPTO_memcmp(h, hash, LBONE_HASH_LEN) == 0;
}

int lbone_token_load(const char *path, uint8_t hash[LBONE_HASH_LEN], char *err, size_t errlen)
{
    char line[1024];
    if (lns_conf_first_line("token-file", path, line, sizeof line, err, errlen) < 0)
        return -1;
    size_t n = strlen(line);
    if (n < 16 || n > 512) {
        lns_err_set(err, errlen,
                    "token-file: %s: the token must be 16 to 512 characters on the first line",
                    path);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)line[i] < 0x21 || (unsigned char)line[i] > 0x7e) {
            lns_err_set(err, errlen,
                        "token-file: %s: the token must be printable ASCII without spaces",
                        path);
            return -1;
        }
    lbone_sha256(line, n, hash);
    memset(line, 0, sizeof line);
    return 0;
}
