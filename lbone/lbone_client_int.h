/* lbone_client_int.h -- what the client's files share: one HTTP exchange, the failover loop,
 * and error reporting.  Not installed; the public face is lbone.h. */
#ifndef LBONE_CLIENT_INT_H
#define LBONE_CLIENT_INT_H

#include <stddef.h>

#include "lbone.h"
#include "lns_buf.h"
#include "lbone_json.h"

#define LBONE_MAX_ANSWER (32u << 20) /* 10,000 depots are about 4 MB of JSON */
#define LBONE_MAX_URL 2048 /* a request: base and path with its query */
#define LBONE_MAX_BASE 512 /* a server: "http://host:port", as lbone_result_t.server */

typedef struct lbone_http {
    const char *method;     /* "GET", "POST", "PUT", "DELETE" */
    const char *bearer;     /* Authorization: Bearer ..., or NULL */
    const char *body;       /* JSON, or NULL */
    size_t body_len;
    long status;            /* out: HTTP status, 0 if none */
    lns_buf_t answer;     /* out: the body (caller frees) */
} lbone_http_t;

/* base: "http://host:port" (no trailing '/') from a server name.  0, or -1 with err. */
int lbone__base_url(const char *server, char *out, size_t size, char *err, size_t errlen);

/* One exchange with base + path.  LBONE_OK when any HTTP status came back (in h->status),
 * or LBONE_E_CONNECT / LBONE_E_NOMEM / LBONE_E_PROTOCOL with err. */
int lbone__http(const char *base, const char *path, lbone_http_t *h, char *err, size_t errlen);

/* Map a status that is not the expected one to an lbone_code, with the server's {"error"}
 * reason (or the status) in err after "base: ". */
int lbone__status_error(const char *base, const lbone_http_t *h, char *err, size_t errlen);

/* 1 when a failed attempt should move on to the next server (no answer, 5xx, not the API). */
int lbone__try_next(int code);

/* Parse h's answer as a JSON object; NULL with err ("base: ...") if it is not one. */
json_t *lbone__parse_answer(const char *base, const lbone_http_t *h, char *err, size_t errlen);

int lbone__fail(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
