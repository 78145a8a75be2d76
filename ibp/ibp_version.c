/* ibp_version.c -- which protocol version each depot speaks: pinned by the program, or learned.
 *
 * LoCI 1.3 depots speak version 0 only and drop a version-1 line without a word; lns and
 * ACCRE 1.4 depots speak both.  A client that was not told which version to use (opts.version
 * -1) starts in version 1 and, when a depot closes a fresh connection before any reply byte
 * or answers -27/-25, asks again in version 0 (ibp_call.c).  Whichever version got a real
 * answer is remembered here per host:port, so the detection costs one round trip per depot
 * and client.  A program can pin a depot's version for the whole process (ibp_version_pin:
 * the tools' --ibp-version and IBP_VERSION), which no detection overrides.
 *
 * Both tables are bounded (IBP_VTAB_MAX entries; a full table forgets its oldest entry) and
 * guarded by their own mutex; a lookup scans at most IBP_VTAB_MAX entries, nothing next to
 * the network round trip it saves.  A learned answer is trusted for IBP_VTAB_TTL_S only, so a
 * depot that was upgraded in place is asked again.
 */
#include "ibp_client_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lns_time.h"

struct ibp_vtab {
    pthread_mutex_t mu;
    int n;
    struct vent {
        char host[IBP_MAX_HOST];
        int port;
        int version;
        int64_t since_ms; /* when it was set (monotonic) */
    } e[IBP_VTAB_MAX];
};

ibp_vtab_t *ibp_vtab_new(void)
{
    ibp_vtab_t *t = calloc(1, sizeof *t);
    if (t)
        pthread_mutex_init(&t->mu, NULL);
    return t;
}

void ibp_vtab_free(ibp_vtab_t *t)
{
    if (!t)
        return;
    pthread_mutex_destroy(&t->mu);
    free(t);
}

/* The process's pins: static, so they need no set-up and outlive every client. */
static ibp_vtab_t pins = {.mu = PTHREAD_MUTEX_INITIALIZER};

static int find(const ibp_vtab_t *t, const char *host, int port)
{
    for (int i = 0; i < t->n; i++)
        if (t->e[i].port == port && strcmp(t->e[i].host, host) == 0)
            return i;
    return -1;
}

/* version -1 removes the entry. */
static void vtab_set(ibp_vtab_t *t, const char *host, int port, int version)
{
    pthread_mutex_lock(&t->mu);
    int i = find(t, host, port);
    if (version < 0) {
        if (i >= 0)
            t->e[i] = t->e[--t->n];
    } else {
        if (i < 0 && t->n < IBP_VTAB_MAX)
            i = t->n++;
        if (i < 0) { /* full: the oldest answer goes */
            i = 0;
            for (int j = 1; j < t->n; j++)
                if (t->e[j].since_ms < t->e[i].since_ms)
                    i = j;
        }
        snprintf(t->e[i].host, sizeof t->e[i].host, "%s", host);
        t->e[i].port = port;
        t->e[i].version = version;
        t->e[i].since_ms = lns_mono_ms();
    }
    pthread_mutex_unlock(&t->mu);
}

/* The entry's version, or -1; entries older than ttl_ms (> 0) count as absent. */
static int vtab_get(ibp_vtab_t *t, const char *host, int port, int64_t ttl_ms)
{
    int v = -1;
    pthread_mutex_lock(&t->mu);
    int i = find(t, host, port);
    if (i >= 0 && (ttl_ms <= 0 || lns_mono_ms() - t->e[i].since_ms <= ttl_ms))
        v = t->e[i].version;
    pthread_mutex_unlock(&t->mu);
    return v;
}

int ibp_version_pin(const char *host, int port, int version)
{
    if (!host || !host[0] || strlen(host) >= IBP_MAX_HOST)
        return IBP_E_INV_PAR_HOST;
    if (port < 1 || port > 65535)
        return IBP_E_INV_PAR_PORT;
    if (version < -1 || version > 1)
        return IBP_E_INVALID_PARAMETER;
    vtab_set(&pins, host, port, version);
    return IBP_OK;
}

void ibp_version_learn(ibp_client_t *c, const char *host, int port, int version)
{
    if (c->o.version < 0 && c->versions)
        vtab_set(c->versions, host, port, version);
}

void ibp_version_for(ibp_client_t *c, const char *host, int port, ibp_vsel_t *vs)
{
    int v = vtab_get(&pins, host, port, 0);
    vs->detect = 0;
    if (v < 0 && c->o.version >= 0)
        v = c->o.version;
    if (v < 0 && c->versions)
        v = vtab_get(c->versions, host, port, (int64_t)IBP_VTAB_TTL_S * 1000);
    if (v < 0) {
        v = 1;
        vs->detect = 1;
    }
    vs->version = v;
}
