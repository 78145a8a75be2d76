/* ibp_tls.c -- the sealed wire on the client side: which depots are spoken to over TLS, with
 * which pin, and the handshake on each fresh connection.
 *
 * The pins are the process's (like ibp_version_pin): whoever learns a depot's pin (from an
 * exNode, the L-Bone, a depot list) sets it once and every client of the process uses it.
 * A fresh connection to a depot with a pin is sealed before its first request, and a key
 * that is not the pinned one ends it before anything was sent; there is no fallback to
 * plaintext for a pinned depot.  Without a pin: plaintext in IBP_TLS_AUTO (the old IBP
 * world), a handshake verified by the system's trust store in IBP_TLS_REQUIRE.  The TLS
 * context (and the sessions it resumes) is the client's, made at its first handshake.
 */
#include "ibp_client_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lns_time.h"
#include "lns_tls.h"

#define PIN_MAX 1024 /* depots whose pins a process keeps; past that the oldest goes */

static struct {
    pthread_mutex_t mu;
    int n;
    struct pent {
        char host[IBP_MAX_HOST];
        int port;
        char pin[LNS_PIN_LEN];
        int64_t since_ms;
    } e[PIN_MAX];
} pins = {.mu = PTHREAD_MUTEX_INITIALIZER};

static __thread char detail[512];

const char *ibp_tls_error(void)
{
    return detail;
}

static int pin_find(const char *host, int port)
{
    for (int i = 0; i < pins.n; i++)
        if (pins.e[i].port == port && strcmp(pins.e[i].host, host) == 0)
            return i;
    return -1;
}

int ibp_tls_pin(const char *host, int port, const char *pin)
{
    if (!host || !host[0] || strlen(host) >= IBP_MAX_HOST)
        return IBP_E_INV_PAR_HOST;
    if (port < 1 || port > 65535)
        return IBP_E_INV_PAR_PORT;
    if (pin && *pin && !lns_tls_pin_valid(pin))
        return IBP_E_INVALID_PARAMETER;
    pthread_mutex_lock(&pins.mu);
    int i = pin_find(host, port);
    if (!pin || !*pin) {
        if (i >= 0)
            pins.e[i] = pins.e[--pins.n];
    } else {
        if (i < 0 && pins.n < PIN_MAX)
            i = pins.n++;
        if (i < 0) {
            i = 0;
            for (int j = 1; j < pins.n; j++)
                if (pins.e[j].since_ms < pins.e[i].since_ms)
                    i = j;
        }
        snprintf(pins.e[i].host, sizeof pins.e[i].host, "%s", host);
        pins.e[i].port = port;
        snprintf(pins.e[i].pin, sizeof pins.e[i].pin, "%s", pin);
        pins.e[i].since_ms = lns_mono_ms();
    }
    pthread_mutex_unlock(&pins.mu);
    return IBP_OK;
}

int ibp_tls_pin_get(const char *host, int port, char *pin, size_t size)
{
    int found = 0;
    pthread_mutex_lock(&pins.mu);
    int i = pin_find(host, port);
    if (i >= 0) {
        snprintf(pin, size, "%s", pins.e[i].pin);
        found = 1;
    }
    pthread_mutex_unlock(&pins.mu);
    return found;
}

static lns_tls_ctx_t *client_ctx(ibp_client_t *c)
{
    pthread_mutex_lock(&c->tls_mu);
    if (!c->tls)
        c->tls = lns_tls_client_new(detail, sizeof detail);
    lns_tls_ctx_t *t = c->tls;
    pthread_mutex_unlock(&c->tls_mu);
    return t;
}

int ibp_tls_wanted(ibp_client_t *c, const char *host, int port)
{
    char pin[LNS_PIN_LEN];
    if (c->o.tls == IBP_TLS_OFF)
        return 0;
    return c->o.tls == IBP_TLS_REQUIRE || ibp_tls_pin_get(host, port, pin, sizeof pin);
}

int ibp_tls_open(ibp_client_t *c, ibp_conn_t *conn)
{
    char pin[LNS_PIN_LEN];
    int pinned = ibp_tls_pin_get(conn->host, conn->port, pin, sizeof pin);
    if (c->o.tls == IBP_TLS_OFF || (!pinned && c->o.tls == IBP_TLS_AUTO))
        return IBP_OK;
    lns_tls_ctx_t *ctx = client_ctx(c);
    if (!ctx)
        return IBP_E_TLS;
    int64_t deadline = lns_deadline_ms(c->o.connect_timeout_ms);
    if (lns_tls_connect(ctx, conn->fd, conn->host, conn->port, pinned ? pin : NULL, NULL,
                        c->idle_ms, deadline, detail, sizeof detail) < 0) {
        if (errno == EACCES)
            return IBP_E_TLS_PIN;
        if (errno == ETIMEDOUT)
            return IBP_E_CLIENT_TIMEOUT;
        return IBP_E_TLS;
    }
    conn->sealed = 1;
    return IBP_OK;
}
