/* test_lbone.h -- start, kill and restart real lbone_server processes, and talk HTTP to them.
 *
 * A server is started on 127.0.0.1 with --port 0 and --port-file in a fresh directory under
 * the test tmpdir, with its own database and registry token, and serves HTTPS, its default
 * (its key DB.key made there; --pin-file gives the pin, url names it pinned), unless extra
 * says --plain-http.  Every server is tracked and SIGKILLed at exit, pass or fail.  The HTTP
 * helpers send one request per connection ("Connection: close"), byte for byte as the test
 * wrote it, through TLS pinned to the server's key when it serves HTTPS, so a test sees
 * exactly what went over the wire.
 */
#ifndef LNS_TEST_LBONE_H
#define LNS_TEST_LBONE_H

#include <limits.h>
#include <stddef.h>

#include "lns_test.h"

typedef struct test_lbone {
    union {
        lns_test_server srv; /* for lns_test_server_kill, _stop, _log_clean */
        struct {
            LNS_TEST_SERVER_FIELDS
        };
    };
    char db[PATH_MAX];
    char token[64];       /* the registry token */
    char token_file[PATH_MAX];
    char url[160];        /* "https://127.0.0.1:<port>#sha256:<pin>" ("http://..." plain) */
    char pin[72];         /* "sha256:<64 hex>", "" with --plain-http (LNS_PIN_LEN) */
    int plain;            /* started --plain-http */
} test_lbone_t;

/* Start a server in a fresh directory.  extra: more arguments, space-separated (NULL for
 * none), e.g. "--heartbeat 1 --probe-interval 0".  0, or -1 after printing why. */
int tlb_start(test_lbone_t *l, const char *extra);
/* Start again with the same directory, database, token, arguments and port. */
int tlb_restart(test_lbone_t *l);

/* One HTTP request to port on 127.0.0.1.  bearer: the Authorization token or NULL; body:
 * NULL for none (sent as application/json otherwise).  Returns the status code (-1 when
 * the exchange failed); *resp (may be NULL) gets the malloc'd body, NUL-terminated. */
int tlb_http(int port, const char *method, const char *path, const char *bearer,
             const char *body, char **resp);
/* Send raw bytes as a request and return the status code of the reply (-1 on failure);
 * *resp as above.  Through TLS when port is an HTTPS server started here. */
int tlb_http_raw(int port, const void *req, size_t len, char **resp);
/* The bytes over plain TCP whatever the server speaks; *resp (may be NULL) gets the whole
 * reply as it came (headers too; "" when the server closed without one).  The status code,
 * or -1 when no HTTP reply came. */
int tlb_http_plain(int port, const void *req, size_t len, char **resp);
/* The pin of an HTTPS server started here on port, or NULL. */
const char *tlb_pin_of(int port);
/* Speak HTTPS with this pin to port (a server started another way). */
void tlb_pin_remember(int port, const char *pin);

/* POST /v1/depots with the registry token.  On 201 the id and secret are copied out
 * (id: 17 bytes, secret: 65 bytes).  Returns the status code. */
int tlb_register(const test_lbone_t *l, const char *json, char *id, char *secret);
/* A registration body for host:port with coordinates and free space (bytes), max duration
 * (s); extra: more members to append (",\"env\":{...}") or "". */
void tlb_depot_json(char *buf, size_t size, const char *host, int port, double lat, double lon,
                    unsigned long long hard_free, unsigned long long soft_free,
                    long long max_duration, const char *extra);
/* The string value of the n-th (from 0) "key":"value" in text, copied to out; -1 if none.
 * A plain text search, enough for our flat answers. */
int tlb_json_str(const char *text, const char *key, int n, char *out, size_t size);
/* Count the occurrences of needle in text. */
int tlb_count(const char *text, const char *needle);

#endif
