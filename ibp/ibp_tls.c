/* ibp_tls.c -- the sealed wire on the client side: which depots are spoken to over TLS, with
 * which pin, and the handshake on each fresh connection.
 *
 * The pins are the process's (like ibp_version_pin): whoever learns a depot's pin (from an
 * exNode, the L-Bone, a depot list) sets it once and every client of the process uses it.
 * A fresh connection to a depot with a pin is sealed before its first request, and a key
 * that is not the pinned one ends it before anything was sent; there is no fallback to
 * plaintext for a pinned depot.  Without a pin, IBP_TLS_AUTO asks the depot's STATUS once (a
 * plaintext request with no secret in it): an lns depot names its pin there (or refuses
 * plaintext, and its handshake shows the pin), which is then kept like a pin set by the
 * program; a depot that names none is the old IBP world, spoken to in plaintext and asked
 * again after 10 minutes.  IBP_TLS_REQUIRE verifies a depot without a pin by the system's
 * trust store.  The TLS
 * context (and the sessions it resumes) is the client's, made at its first handshake.
 *
 * A thread may name the pin one depot must have for its calls (ibp_tls_expect), over the
 * process's: a depot copying to the target its client named in a SEND checks the pin that
 * client knows, not what it learned itself, and a pooled connection sealed to another key is
 * not taken for it.
 */
#include "ibp_client_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lns_time.h"
#include "lns_tls.h"

#define PIN_MAX 1024 /* depots a process knows about; past that the oldest goes */
#define PLAIN_TTL_MS (10 * 60 * 1000) /* a depot that named no pin is asked again after this */

/* What the process knows of each depot: its pin, or that it named none (pin "": spoken to in
 * plaintext, asked again after PLAIN_TTL_MS). */
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

/* This thread's expectation (ibp_tls_expect): port 0 none. */
static __thread struct {
    char host[IBP_MAX_HOST];
    int port;
    char pin[LNS_PIN_LEN];
} expect;
static int process_mode = IBP_TLS_AUTO; /* set once, before clients are made */

int ibp_tls_mode(int mode)
{
    if (mode < IBP_TLS_AUTO || mode > IBP_TLS_OFF)
        return IBP_E_INVALID_PARAMETER;
    process_mode = mode;
    return IBP_OK;
}

int ibp_tls_mode_default(void)
{
    return process_mode;
}

const char *ibp_tls_error(void)
{
    return detail;
}

/* With pins.mu held: the entry of host:port, or -1. */
static int pin_find(const char *host, int port)
{
    for (int i = 0; i < pins.n; i++)
        if (pins.e[i].port == port && strcmp(pins.e[i].host, host) == 0)
            return i;
    return -1;
}

/* Set host:port's entry to pin ("" for none named), or remove it (pin NULL). */
static void pin_set(const char *host, int port, const char *pin)
{
    pthread_mutex_lock(&pins.mu);
    int i = pin_find(host, port);
    if (!pin) {
        if (i >= 0)
            pins.e[i] = pins.e[--pins.n];
    } else {
        if (i < 0 && pins.n < PIN_MAX)
            i = pins.n++;
        if (i < 0) { /* full: the oldest goes */
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
}

int ibp_tls_pin(const char *host, int port, const char *pin)
{
    if (!host || !host[0] || strlen(host) >= IBP_MAX_HOST)
        return IBP_E_INV_PAR_HOST;
    if (port < 1 || port > 65535)
        return IBP_E_INV_PAR_PORT;
    if (pin && *pin && !lns_tls_pin_valid(pin))
        return IBP_E_INVALID_PARAMETER;
    pin_set(host, port, pin && *pin ? pin : NULL);
    return IBP_OK;
}

int ibp_tls_pin_valid(const char *pin)
{
    return lns_tls_pin_valid(pin);
}

int ibp_tls_pin_get(const char *host, int port, char *pin, size_t size)
{
    int found = 0;
    pthread_mutex_lock(&pins.mu);
    int i = pin_find(host, port);
    if (i >= 0 && pins.e[i].pin[0]) {
        snprintf(pin, size, "%s", pins.e[i].pin);
        found = 1;
    }
    pthread_mutex_unlock(&pins.mu);
    return found;
}

int ibp_tls_expect(const char *host, int port, const char *pin)
{
    if (!pin || !*pin) {
        expect.port = 0;
        return IBP_OK;
    }
    if (!host || !*host || strlen(host) >= sizeof expect.host)
        return IBP_E_INV_PAR_HOST;
    if (port <= 0 || port > 65535)
        return IBP_E_INV_PAR_PORT;
    if (!lns_tls_pin_valid(pin))
        return IBP_E_INVALID_PARAMETER;
    snprintf(expect.host, sizeof expect.host, "%s", host);
    snprintf(expect.pin, sizeof expect.pin, "%s", pin);
    expect.port = port;
    return IBP_OK;
}

/* The pin host:port must have for this thread: its expectation, else the process's. */
static int pin_for(const char *host, int port, char *pin, size_t size)
{
    if (expect.port == port && strcmp(expect.host, host) == 0) {
        snprintf(pin, size, "%s", expect.pin);
        return 1;
    }
    return ibp_tls_pin_get(host, port, pin, size);
}

/* 1 if host:port named no pin less than PLAIN_TTL_MS ago. */
static int plain_known(const char *host, int port)
{
    pthread_mutex_lock(&pins.mu);
    int i = pin_find(host, port);
    int known = i >= 0 && !pins.e[i].pin[0] && lns_mono_ms() - pins.e[i].since_ms < PLAIN_TTL_MS;
    pthread_mutex_unlock(&pins.mu);
    return known;
}

size_t ibp_tls_plain_depots(char *buf, size_t size)
{
    size_t n = 0, at = 0;
    if (size)
        buf[0] = 0;
    pthread_mutex_lock(&pins.mu);
    for (int i = 0; i < pins.n; i++)
        if (!pins.e[i].pin[0] && at < size)
            at += (size_t)snprintf(buf + at, size - at, "%s%s:%d", n++ ? ", " : "",
                                   pins.e[i].host, pins.e[i].port);
        else if (!pins.e[i].pin[0])
            n++;
    pthread_mutex_unlock(&pins.mu);
    if (at >= size && size > 4)
        memcpy(buf + size - 4, "...", 4);
    return n;
}

static __thread int learning; /* the STATUS that learns a pin is itself plaintext */

/* AUTO and a depot without a pin: ask its STATUS.  1 its pin was learned (sealing follows),
 * 0 plaintext (it named none, or could not be asked), -1 it refuses plaintext (the caller
 * takes its pin from the handshake). */
static int learn(ibp_client_t *c, const char *host, int port)
{
    ibp_depot_status_t st;
    learning = 1;
    int rc = ibp_status(c, host, port, NULL, NULL, &st);
    learning = 0;
    if (rc == IBP_OK && st.pin[0])
        return ibp_tls_pin(host, port, st.pin) == IBP_OK;
    if (rc == IBP_E_CAP_ACCESS_DENIED)
        return -1;
    /* an answer without a pin, or an error of its own (an old depot that wants a password):
     * the old IBP world.  No answer at all says nothing: the call that follows fails too. */
    if (rc != IBP_E_CONNECTION && rc != IBP_E_CLIENT_TIMEOUT && rc != IBP_E_SOCK_READ &&
        rc != IBP_E_SOCK_WRITE)
        pin_set(host, port, "");
    return 0;
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
    return c->o.tls == IBP_TLS_REQUIRE || pin_for(host, port, pin, sizeof pin);
}

int ibp_tls_reusable(ibp_client_t *c, const ibp_conn_t *conn)
{
    char pin[LNS_PIN_LEN];
    if (!conn->sealed)
        return !ibp_tls_wanted(c, conn->host, conn->port);
    return !pin_for(conn->host, conn->port, pin, sizeof pin) || strcmp(pin, conn->pin) == 0;
}

int ibp_tls_pin_of(ibp_client_t *c, const char *host, int port, char *pin, size_t size)
{
    if (c->o.tls == IBP_TLS_OFF)
        return 0;
    if (!pin_for(host, port, pin, size) && c->o.tls == IBP_TLS_AUTO && !plain_known(host, port))
        learn(c, host, port); /* what it learns, it keeps as the depot's pin */
    return pin_for(host, port, pin, size);
}

int ibp_tls_open(ibp_client_t *c, ibp_conn_t *conn)
{
    char pin[LNS_PIN_LEN], got[LNS_PIN_LEN] = "";
    int pinned = pin_for(conn->host, conn->port, pin, sizeof pin), tofu = 0;
    if (c->o.tls == IBP_TLS_OFF || learning)
        return IBP_OK;
    if (!pinned && c->o.tls == IBP_TLS_AUTO) {
        if (plain_known(conn->host, conn->port))
            return IBP_OK;
        int l = learn(c, conn->host, conn->port);
        if (l == 0)
            return IBP_OK;
        pinned = l > 0 && pin_for(conn->host, conn->port, pin, sizeof pin);
        tofu = !pinned;
    }
    lns_tls_ctx_t *ctx = client_ctx(c);
    if (!ctx)
        return IBP_E_TLS;
    int64_t deadline = lns_deadline_ms(c->o.connect_timeout_ms);
    if (lns_tls_connect(ctx, conn->fd, conn->host, conn->port, tofu ? "*" : pinned ? pin : NULL,
                        got, c->idle_ms, deadline, detail, sizeof detail) < 0) {
        if (errno == EACCES)
            return IBP_E_TLS_PIN;
        if (errno == ETIMEDOUT)
            return IBP_E_CLIENT_TIMEOUT;
        return IBP_E_TLS;
    }
    if (tofu)
        ibp_tls_pin(conn->host, conn->port, got);
    snprintf(conn->pin, sizeof conn->pin, "%s", got);
    conn->sealed = 1;
    return IBP_OK;
}
