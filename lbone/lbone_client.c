/* lbone_client.c -- liblbone's transport: server names to URLs, one HTTP exchange over
 * libcurl, and the mapping of HTTP answers to lbone_code.
 *
 * Each call makes its own curl handle: the L-Bone is asked a few times per tool run or once
 * per heartbeat interval, so a connection pool would only add shared state between threads.
 * Answers are capped (LBONE_MAX_ANSWER) and redirects are not followed, so a wrong URL
 * cannot make a client read without end or wander off to another host.  A request with a
 * credential goes over https://, or over http:// only to this host by name and never through
 * a proxy (lbone_secret_ok, decided before any connection).
 */
#include "lbone_client_int.h"
#include "lns_err.h"
#include "lns_hex.h"
#include "lns_tls.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static atomic_int connect_timeout_ms = 3000;
static atomic_int total_timeout_ms = 15000;
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

const char *lbone_strerror(int code)
{
    switch (code) {
    case LBONE_OK:
        return "success";
    case LBONE_E_ARG:
        return "bad argument";
    case LBONE_E_NOMEM:
        return "out of memory";
    case LBONE_E_CONNECT:
        return "no answer from the L-Bone";
    case LBONE_E_PROTOCOL:
        return "not an L-Bone answer";
    case LBONE_E_REFUSED:
        return "request refused by the L-Bone";
    case LBONE_E_AUTH:
        return "token or secret refused by the L-Bone";
    case LBONE_E_NOTFOUND:
        return "depot not registered at the L-Bone";
    case LBONE_E_SERVER:
        return "the L-Bone failed";
    }
    return "unknown error";
}

void lbone_set_timeouts(int connect_ms, int total_ms)
{
    if (connect_ms > 0)
        atomic_store(&connect_timeout_ms, connect_ms);
    if (total_ms > 0)
        atomic_store(&total_timeout_ms, total_ms);
}

int lbone__fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lns_err_vset(err, errlen, fmt, ap);
    va_end(ap);
    return code;
}

int lbone__try_next(int code)
{
    return code == LBONE_E_CONNECT || code == LBONE_E_SERVER || code == LBONE_E_PROTOCOL;
}

static int host_char(int c)
{
    return isalnum(c) || c == '.' || c == '-' || c == '_';
}

int lbone__base_url(const char *server, char *out, size_t size, char *err, size_t errlen)
{
    size_t n = server ? strlen(server) : 0;
    if (!n)
        return lbone__fail(err, errlen, -1, "L-Bone server: empty name");
    for (size_t i = 0; i < n; i++)
        if (!isgraph((unsigned char)server[i]))
            return lbone__fail(err, errlen, -1, "L-Bone server '%s': blank or control character",
                               server);
    if (strstr(server, "://")) {
        /* A URL is taken as it is (port 80 when none), less a trailing '/'. */
        if (strncasecmp(server, "http://", 7) != 0 && strncasecmp(server, "https://", 8) != 0)
            return lbone__fail(err, errlen, -1, "L-Bone server '%s': only http:// and https://",
                               server);
        while (n && server[n - 1] == '/')
            n--;
        if (n >= size || n <= 8)
            return lbone__fail(err, errlen, -1, "L-Bone server '%s': bad URL", server);
        memcpy(out, server, n);
        out[n] = 0;
        return 0;
    }
    /* host, host:port, [v6], [v6]:port */
    const char *host = server, *hend, *port = NULL;
    if (*server == '[') {
        host = server + 1;
        hend = strchr(host, ']');
        if (!hend || hend == host || (hend[1] && hend[1] != ':'))
            return lbone__fail(err, errlen, -1, "L-Bone server '%s': bad [address]", server);
        for (const char *p = host; p < hend; p++)
            if (!isxdigit((unsigned char)*p) && *p != ':' && *p != '.')
                return lbone__fail(err, errlen, -1, "L-Bone server '%s': bad [address]", server);
        if (hend[1] == ':')
            port = hend + 2;
    } else {
        hend = strchr(server, ':');
        if (hend)
            port = hend + 1;
        else
            hend = server + n;
        for (const char *p = host; p < hend; p++)
            if (!host_char((unsigned char)*p))
                return lbone__fail(err, errlen, -1, "L-Bone server '%s': bad host name", server);
        if (hend == host)
            return lbone__fail(err, errlen, -1, "L-Bone server '%s': no host", server);
    }
    long p = LBONE_DEFAULT_PORT;
    if (port) {
        char *end;
        p = strtol(port, &end, 10);
        if (!isdigit((unsigned char)*port) || *end || p < 1 || p > 65535)
            return lbone__fail(err, errlen, -1, "L-Bone server '%s': port must be 1 to 65535",
                               server);
    }
    int w = snprintf(out, size, "http://%s%.*s%s:%ld", *server == '[' ? "[" : "",
                     (int)(hend - host), host, *server == '[' ? "]" : "", p);
    if (w < 0 || (size_t)w >= size)
        return lbone__fail(err, errlen, -1, "L-Bone server '%s': name too long", server);
    return 0;
}

int lbone_server_url(const char *server, char *url, size_t size, char *err, size_t errlen)
{
    return lbone__base_url(server, url, size, err, errlen);
}

/* 1 if the host of an http:// base URL is this host by its name alone: a loopback address,
 * or "localhost", which libcurl resolves to loopback itself, never through DNS. */
static int loopback_host(const char *base)
{
    const char *h = base + 7, *end;
    char host[256];
    if (*h == '[') {
        h++;
        end = strchr(h, ']');
    } else {
        end = h + strcspn(h, ":/#?");
    }
    if (!end || end == h || (size_t)(end - h) >= sizeof host)
        return 0;
    memcpy(host, h, (size_t)(end - h));
    host[end - h] = 0;
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, host, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6) ||
               (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
    return strcasecmp(host, "localhost") == 0;
}

int lbone_secret_ok(const char *server, char *err, size_t errlen)
{
    char base[LBONE_MAX_BASE];
    if (lbone__base_url(server, base, sizeof base, err, errlen) < 0)
        return LBONE_E_ARG;
    if (strncasecmp(base, "https://", 8) == 0 || loopback_host(base))
        return LBONE_OK;
    return lbone__fail(err, errlen, LBONE_E_ARG, "%s: no token or secret in cleartext to another "
                       "host: name the L-Bone https://HOST:PORT#sha256:... (the pin lbone_server "
                       "logs)", base);
}

static size_t on_data(char *data, size_t size, size_t nmemb, void *arg)
{
    lns_buf_t *b = arg;
    size_t n = size * nmemb;
    if (b->len + n > LBONE_MAX_ANSWER)
        return 0; /* curl stops with CURLE_WRITE_ERROR */
    lns_buf_add(b, data, n);
    return b->oom ? 0 : n;
}

static int add_header(struct curl_slist **list, const char *line)
{
    struct curl_slist *n = curl_slist_append(*list, line);
    if (!n)
        return -1;
    *list = n;
    return 0;
}

/* "https://host:port#sha256:<64 hex>": the L-Bone's key pinned (lbone_server logs its pin).
 * The URL without the pin into url, and curl's form of the pin ("sha256//<base64>") into
 * pinned ("" when there is none).  0, or -1 for a pin that is not one or not on https. */
static int split_pin(const char *base, const char *path, char *url, size_t size, char *pinned,
                     size_t psize)
{
    const char *hash = strchr(base, '#');
    size_t blen = hash ? (size_t)(hash - base) : strlen(base);
    pinned[0] = 0;
    if (hash) {
        const char *pin = hash + 1;
        unsigned char bin[32];
        if (strncasecmp(base, "https://", 8) != 0 || !lns_tls_pin_valid(pin) ||
            lns_unhex(pin + 7, 64, bin, sizeof bin, 0) < 0 || psize < 8 + 45)
            return -1;
        memcpy(pinned, "sha256//", 8);
        EVP_EncodeBlock((unsigned char *)pinned + 8, bin, 32);
    }
    int w = snprintf(url, size, "%.*s%s", (int)blen, base, path);
    return w < 0 || (size_t)w >= size ? -2 : 0;
}

int lbone__http(const char *base, const char *path, lbone_http_t *h, char *err, size_t errlen)
{
    char url[LBONE_MAX_URL], auth[256], cerr[CURL_ERROR_SIZE] = "", pinned[64];
    struct curl_slist *hdrs = NULL;
    int rc = LBONE_OK;

    h->status = 0;
    lns_buf_init(&h->answer);
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK)
        return lbone__fail(err, errlen, LBONE_E_NOMEM, "libcurl: %s",
                           curl_easy_strerror(curl_init_rc));
    int sp = split_pin(base, path, url, sizeof url, pinned, sizeof pinned);
    if (sp == -1)
        return lbone__fail(err, errlen, LBONE_E_ARG, "%s: a pin is https://HOST:PORT#sha256: "
                                                     "and 64 hex digits", base);
    if (sp < 0)
        return lbone__fail(err, errlen, LBONE_E_ARG, "%s: request URL too long", base);
    if (h->bearer) {
        /* A token is one line of printable characters; anything else would forge headers. */
        for (const char *p = h->bearer; *p; p++)
            if (!isgraph((unsigned char)*p))
                return lbone__fail(err, errlen, LBONE_E_ARG, "%s: token holds a blank or control "
                                                             "character", base);
        if (snprintf(auth, sizeof auth, "Authorization: Bearer %s", h->bearer) >= (int)sizeof auth)
            return lbone__fail(err, errlen, LBONE_E_ARG, "%s: token too long", base);
    }
    if (h->bearer && lbone_secret_ok(base, err, errlen) != LBONE_OK)
        return LBONE_E_ARG; /* before any connection */
    CURL *c = curl_easy_init();
    if (!c)
        return lbone__fail(err, errlen, LBONE_E_NOMEM, "%s: libcurl: out of memory", base);
    /* "Expect:" (empty) saves the 100-continue round trip of a POST or PUT */
    if (add_header(&hdrs, "Accept: application/json") < 0 || add_header(&hdrs, "Expect:") < 0 ||
        (h->body && add_header(&hdrs, "Content-Type: application/json") < 0) ||
        (h->bearer && add_header(&hdrs, auth) < 0)) {
        curl_slist_free_all(hdrs);
        curl_easy_cleanup(c);
        return lbone__fail(err, errlen, LBONE_E_NOMEM, "%s: out of memory", base);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    if (pinned[0]) {
        /* the key is the identity: checked before a byte of the request is sent, whatever
         * the certificate (self-signed) says */
        curl_easy_setopt(c, CURLOPT_PINNEDPUBLICKEY, pinned);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (h->bearer && strncasecmp(url, "http://", 7) == 0)
        curl_easy_setopt(c, CURLOPT_PROXY, ""); /* a proxy (http_proxy) would see the token */
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(c, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)atomic_load(&connect_timeout_ms));
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)atomic_load(&total_timeout_ms));
    curl_easy_setopt(c, CURLOPT_USERAGENT, "liblbone");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &h->answer);
    if (strcmp(h->method, "GET") != 0) {
        if (strcmp(h->method, "POST") != 0)
            curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, h->method);
        if (h->body || strcmp(h->method, "DELETE") != 0) {
            curl_easy_setopt(c, CURLOPT_POST, 1L);
            curl_easy_setopt(c, CURLOPT_POSTFIELDS, h->body ? h->body : "");
            curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)(h->body ? h->body_len : 0));
        }
    }
    CURLcode cc = curl_easy_perform(c);
    if (cc == CURLE_OK) {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &h->status);
    } else if (cc == CURLE_WRITE_ERROR && h->answer.oom) {
        rc = lbone__fail(err, errlen, LBONE_E_NOMEM, "%s: out of memory for the answer", base);
    } else if (cc == CURLE_WRITE_ERROR) {
        rc = lbone__fail(err, errlen, LBONE_E_PROTOCOL, "%s: answer longer than %u MiB", base,
                         LBONE_MAX_ANSWER >> 20);
    } else if ((cc == CURLE_GOT_NOTHING || cc == CURLE_WEIRD_SERVER_REPLY ||
                cc == CURLE_RECV_ERROR) && strncasecmp(url, "http://", 7) == 0) {
        /* what plain HTTP to a TLS server looks like: say what the name should be */
        rc = lbone__fail(err, errlen, LBONE_E_CONNECT, "%s: %s (an L-Bone speaks HTTPS unless "
                         "run --plain-http: name it https://HOST:PORT#sha256:..., the pin it "
                         "logs)", base, cerr[0] ? cerr : curl_easy_strerror(cc));
    } else {
        rc = lbone__fail(err, errlen, LBONE_E_CONNECT, "%s: %s", base,
                         cerr[0] ? cerr : curl_easy_strerror(cc));
    }
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    return rc;
}

int lbone__status_error(const char *base, const lbone_http_t *h, char *err, size_t errlen)
{
    char reason[256] = "";
    long st = h->status;
    if (h->answer.p && h->answer.len) {
        char jerr[64];
        json_t *doc = lbone_json_parse(h->answer.p, h->answer.len, jerr, sizeof jerr);
        const char *e = json_string_value(json_object_get(doc, "error"));
        if (e)
            snprintf(reason, sizeof reason, "%s", e);
        json_decref(doc);
    }
    int code = st == 401 || st == 403 ? LBONE_E_AUTH
             : st == 404              ? LBONE_E_NOTFOUND
             : st >= 400 && st < 500  ? LBONE_E_REFUSED
             : st >= 500 && st < 600  ? LBONE_E_SERVER
                                      : LBONE_E_PROTOCOL;
    if (reason[0])
        return lbone__fail(err, errlen, code, "%s: %ld: %s", base, st, reason);
    return lbone__fail(err, errlen, code, "%s: unexpected HTTP status %ld", base, st);
}

json_t *lbone__parse_answer(const char *base, const lbone_http_t *h, char *err, size_t errlen)
{
    char jerr[160];
    json_t *doc = NULL;
    if (!h->answer.p || !h->answer.len) {
        lbone__fail(err, errlen, 0, "%s: empty answer", base);
        return NULL;
    }
    doc = lbone_json_parse(h->answer.p, h->answer.len, jerr, sizeof jerr);
    if (!doc) {
        lbone__fail(err, errlen, 0, "%s: answer is not JSON: %s", base, jerr);
        return NULL;
    }
    if (!json_is_object(doc)) {
        json_decref(doc);
        lbone__fail(err, errlen, 0, "%s: answer is not a JSON object", base);
        return NULL;
    }
    return doc;
}
