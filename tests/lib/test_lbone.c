/* test_lbone.c -- start, kill and restart real lbone_server processes, and talk HTTP to them.
 *
 * The servers speak HTTPS, their default: each port started here is remembered with its pin,
 * and a request to it goes through lns_tls with that pin (a wrong key is refused before a
 * byte of the request goes); a port not in the table, or one started --plain-http, gets the
 * bytes as they are. */
#include "test_lbone.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lns_array.h"
#include "lns_net.h"
#include "lns_test.h"
#include "lns_time.h"
#include "lns_tls.h"

static int lbone_seq;

/* The HTTPS servers started here: port and pin. */
#define MAX_PINNED 64
static struct {
    int port;
    char pin[LNS_PIN_LEN];
} pinned[MAX_PINNED];
static int npinned;
static lns_tls_ctx_t *client_ctx;

void tlb_pin_remember(int port, const char *pin)
{
    int i = 0;
    while (i < npinned && pinned[i].port != port)
        i++;
    if (i == MAX_PINNED)
        i = (int)(port % MAX_PINNED); /* a long run: forget one */
    else if (i == npinned)
        npinned++;
    pinned[i].port = port;
    snprintf(pinned[i].pin, sizeof pinned[i].pin, "%s", pin);
}

const char *tlb_pin_of(int port)
{
    for (int i = 0; i < npinned; i++)
        if (pinned[i].port == port)
            return pinned[i].pin;
    return NULL;
}

static int spawn(test_lbone_t *l, int port, int tries)
{
    char pin_file[PATH_MAX + 8];
    snprintf(pin_file, sizeof pin_file, "%s/pin", l->dir);
    const char *args[] = {"--db", l->db, "--token-file", l->token_file, "--log-level", "info",
                          "--pin-file", pin_file, NULL};
    if (l->plain)
        args[6] = NULL; /* no pin to write */
    unlink(pin_file);
    if (lns_test_server_spawn(&l->srv, "lbone_server", port, args, tries) != 0)
        return -1;
    if (l->plain) {
        snprintf(l->url, sizeof l->url, "http://127.0.0.1:%d", l->port);
        l->pin[0] = 0;
        return 0;
    }
    FILE *f = fopen(pin_file, "r");
    char line[128] = "";
    if (f) {
        if (!fgets(line, sizeof line, f))
            line[0] = 0;
        fclose(f);
    }
    line[strcspn(line, "\n")] = 0;
    if (!lns_tls_pin_valid(line)) {
        fprintf(stderr, "tlb_start: no pin in %s\n", pin_file);
        return -1;
    }
    memcpy(l->pin, line, strlen(line) + 1); /* a pin: 71 characters and its NUL */
    snprintf(l->url, sizeof l->url, "https://127.0.0.1:%d#%s", l->port, l->pin);
    tlb_pin_remember(l->port, l->pin);
    return 0;
}

int tlb_start(test_lbone_t *l, const char *extra)
{
    memset(l, 0, sizeof *l);
    int seq = lbone_seq++;
    if (lns_test_server_init(&l->srv, "lbone", seq, extra) != 0 ||
        snprintf(l->db, sizeof l->db, "%s/lbone.db", l->dir) >= (int)sizeof l->db ||
        snprintf(l->token_file, sizeof l->token_file, "%s/token", l->dir) >=
            (int)sizeof l->token_file)
        return -1;
    snprintf(l->token, sizeof l->token, "test-registry-token-%d-%d", (int)getpid(), seq);
    l->plain = extra && strstr(extra, "--plain-http") != NULL;
    FILE *f = fopen(l->token_file, "w");
    if (!f || fprintf(f, "%s\n", l->token) < 0 || fclose(f) != 0) {
        fprintf(stderr, "tlb_start: cannot write %s\n", l->token_file);
        return -1;
    }
    return spawn(l, 0, 1);
}

int tlb_restart(test_lbone_t *l)
{
    return spawn(l, l->port, 50);
}

/* One exchange with the server on port: the request sent whole (or as much as the server
 * takes: it may answer, 413, before), then its reply until it closes, malloc'd and
 * NUL-terminated.  With a pin the socket is sealed first, pinned to the server's key, and the
 * request goes only once the key matched; lns_net reads and writes both alike. */
static char *exchange(int port, const char *pin, const char *p, size_t len)
{
    char err[256], *buf = NULL;
    size_t cap = 0, n = 0;
    int64_t deadline = lns_deadline_ms(20000);
    if (pin && !client_ctx && !(client_ctx = lns_tls_client_new(err, sizeof err))) {
        fprintf(stderr, "tlb_http: %s\n", err);
        return NULL;
    }
    int fd = lns_connect("127.0.0.1", port, 5000);
    if (fd < 0)
        return NULL;
    if (pin && lns_tls_connect(client_ctx, fd, "127.0.0.1", port, pin, NULL, 20000, deadline,
                               err, sizeof err) < 0) {
        fprintf(stderr, "tlb_http: port %d: %s\n", port, err);
        lns_sock_close(fd);
        return NULL;
    }
    lns_write_full(fd, p, len, 0, 20000, deadline);
    while (lns_grow(&buf, &cap, n + 4097, 1, 8192) == 0) {
        ssize_t r = lns_read_some(fd, buf + n, cap - 1 - n, 20000, deadline);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    if (buf)
        buf[n] = 0;
    lns_sock_close(fd);
    return buf;
}

int tlb_http_raw(int port, const void *req, size_t len, char **resp)
{
    const char *pin = tlb_pin_of(port);
    int code = -1;

    if (resp)
        *resp = NULL;
    char *buf = exchange(port, pin, req, len);
    if (!buf)
        return -1;
    if (sscanf(buf, "HTTP/1.%*d %d", &code) != 1)
        code = -1;
    char *body = strstr(buf, "\r\n\r\n");
    if (resp)
        *resp = strdup(body ? body + 4 : "");
    free(buf);
    return code;
}

int tlb_http_plain(int port, const void *req, size_t len, char **resp)
{
    int code = -1;
    if (resp)
        *resp = NULL;
    char *buf = exchange(port, NULL, req, len);
    if (!buf)
        return -1;
    if (sscanf(buf, "HTTP/1.%*d %d", &code) != 1)
        code = -1;
    if (resp)
        *resp = buf;
    else
        free(buf);
    return code;
}

int tlb_http(int port, const char *method, const char *path, const char *bearer,
             const char *body, char **resp)
{
    size_t blen = body ? strlen(body) : 0;
    size_t cap = blen + 1024 + strlen(path);
    char *req = malloc(cap);
    char auth[600] = "";
    if (!req)
        return -1;
    if (bearer)
        snprintf(auth, sizeof auth, "Authorization: Bearer %s\r\n", bearer);
    int n = snprintf(req, cap,
                     "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n%s%s",
                     method, path, port, auth, body ? "Content-Type: application/json\r\n" : "");
    if (body)
        n += snprintf(req + n, cap - (size_t)n, "Content-Length: %zu\r\n\r\n", blen);
    else
        n += snprintf(req + n, cap - (size_t)n, "\r\n");
    if (body) {
        memcpy(req + n, body, blen);
        n += (int)blen;
    }
    int code = tlb_http_raw(port, req, (size_t)n, resp);
    free(req);
    return code;
}

int tlb_json_str(const char *text, const char *key, int n, char *out, size_t size)
{
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    const char *p = text;
    for (int i = 0; p; i++) {
        p = strstr(p, pat);
        if (!p)
            return -1;
        p += strlen(pat);
        if (i == n) {
            size_t k = strcspn(p, "\"");
            if (k >= size)
                return -1;
            memcpy(out, p, k);
            out[k] = 0;
            return 0;
        }
    }
    return -1;
}

int tlb_count(const char *text, const char *needle)
{
    int n = 0;
    size_t k = strlen(needle);
    for (const char *p = text; k && (p = strstr(p, needle)); p += k)
        n++;
    return n;
}

int tlb_register(const test_lbone_t *l, const char *json, char *id, char *secret)
{
    char *resp = NULL;
    int code = tlb_http(l->port, "POST", "/v1/depots", l->token, json, &resp);
    if (code == 201 && resp) {
        if (id && tlb_json_str(resp, "id", 0, id, 17) < 0)
            code = -1;
        if (secret && tlb_json_str(resp, "secret", 0, secret, 65) < 0)
            code = -1;
    }
    free(resp);
    return code;
}

void tlb_depot_json(char *buf, size_t size, const char *host, int port, double lat, double lon,
                    unsigned long long hard_free, unsigned long long soft_free,
                    long long max_duration, const char *extra)
{
    snprintf(buf, size,
             "{\"host\":\"%s\",\"port\":%d,\"rid\":\"0\",\"hard_total\":%llu,\"hard_free\":%llu,"
             "\"soft_total\":%llu,\"soft_free\":%llu,\"max_duration\":%lld,\"lat\":%.6f,"
             "\"lon\":%.6f%s}",
             host, port, hard_free * 2, hard_free, soft_free * 2, soft_free, max_duration, lat,
             lon, extra ? extra : "");
}
