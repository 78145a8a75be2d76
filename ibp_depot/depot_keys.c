/* depot_keys.c -- capability keys: random ids, secrets and type keys, digests, verification.
 *
 * A key is "<16 hex allocation id><32 hex secret>".  The id only finds the allocation; the
 * 128-bit secret proves the right to it.  The depot keeps SHA-256 digests of the three
 * secrets, never the secrets, and checks a presented secret against all three digests with
 * CRYPTO_memcmp, so neither a stolen database nor the response time tells a guesser anything.
 */
#include "depot.h"
#include "lns_units.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <string.h>

#include "lns_hex.h"

int depot_random(void *buf, size_t n)
{
    return RAND_bytes(buf, (int)n) == 1 ? 0 : -1;
}

int depot_typekey_new(uint32_t *tk)
{
    uint32_t v;
    do {
        if (depot_random(&v, sizeof v) < 0)
            return -1;
        v &= 0x7fffffffu;
    } while (v == 0);
    *tk = v;
    return 0;
}

void depot_digest(const uint8_t secret[DEPOT_SECRET_LEN], uint8_t digest[DEPOT_DIGEST_LEN])
{
    unsigned int n = DEPOT_DIGEST_LEN;
    if (EVP_Digest(secret, DEPOT_SECRET_LEN, digest, &n, EVP_sha256(), NULL) != 1)
        memset(digest, 0xff, DEPOT_DIGEST_LEN); /* matches no secret's digest in practice */
}

void depot_key_format(uint64_t id, const uint8_t secret[DEPOT_SECRET_LEN], char *buf)
{
    uint8_t be[8];
    for (int i = 0; i < 8; i++)
        be[i] = (uint8_t)(id >> (56 - 8 * i));
    lns_hex(be, sizeof be, buf);
    lns_hex(secret, DEPOT_SECRET_LEN, buf + 16);
}

int depot_key_parse(const char *key, uint64_t *id, uint8_t secret[DEPOT_SECRET_LEN])
{
    uint8_t be[8];
    if (strlen(key) != DEPOT_KEY_HEX || lns_unhex(key, 16, be, sizeof be, 0) < 0 ||
        lns_unhex(key + 16, DEPOT_KEY_HEX - 16, secret, DEPOT_SECRET_LEN, 0) < 0)
        return -1;
    *id = 0;
    for (int i = 0; i < 8; i++)
        *id = *id << 8 | be[i];
    return 0;
}

/* Strict decimal 1..2^31-1, as we hand them out; anything else matches nothing. */
static int64_t typekey_value(const char *s)
{
    int64_t v = lns_parse_digits(s, strlen(s), 10);
    return v <= 0x7fffffff ? v : -1;
}

int depot_key_match(const uint8_t digests[3][DEPOT_DIGEST_LEN], const uint32_t typekeys[3],
                    const uint8_t secret[DEPOT_SECRET_LEN], const char *typekey)
{
    uint8_t d[DEPOT_DIGEST_LEN];
    int64_t tk = typekey_value(typekey);
    int kind = -1;

    depot_digest(secret, d);
    for (int i = 0; i < 3; i++) {
        int same = CRYPTO_memcmp(d, digests[i], DEPOT_DIGEST_LEN) == 0;
        if (same && tk == (int64_t)typekeys[i])
            kind = i;
    }
    return kind;
}

int depot_password_ok(const char *configured, const char *given)
{
    uint8_t a[DEPOT_DIGEST_LEN], b[DEPOT_DIGEST_LEN];
    unsigned int n = DEPOT_DIGEST_LEN;

    /* Digests of both, so that neither the length nor the first differing byte shows. */
    if (!configured[0] ||
        EVP_Digest(configured, strlen(configured), a, &n, EVP_sha256(), NULL) != 1 ||
        EVP_Digest(given, strlen(given), b, &n, EVP_sha256(), NULL) != 1)
        return 0;
    return CRYPTO_memcmp(a, b, DEPOT_DIGEST_LEN) == 0;
}
