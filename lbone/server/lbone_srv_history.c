/* lbone_srv_history.c -- measured bandwidth per (client network, depot), and its forecasts.
 *
 * A client network is the reporter's address cut to /24 (IPv4) or /48 (IPv6): hosts of one
 * site share their paths to a depot, and the cut keeps one busy host from owning a series.
 * Pairs live in a hash table under one mutex, at most max_pairs of them; a report for a new
 * pair beyond that is refused rather than evicting, so flooding cannot erase good history.
 */
#include "lbone_srv.h"

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef struct pair {
    char net[64];
    char depot[LBONE_ID_LEN + 1];
    lbone_fc_t fc;
    struct pair *next;
} pair_t;

struct lbone_hist {
    pthread_mutex_t mu;
    pair_t **b;
    size_t nb, n, max;
};

static size_t bucket(const lbone_hist_t *h, const char *net, const char *depot)
{
    uint64_t x = 0xcbf29ce484222325ULL;
    for (const char *s = net; *s; s++)
        x = (x ^ (unsigned char)*s) * 0x100000001b3ULL;
    x = (x ^ '|') * 0x100000001b3ULL;
    for (const char *s = depot; *s; s++)
        x = (x ^ (unsigned char)*s) * 0x100000001b3ULL;
    return (size_t)(x % h->nb);
}

lbone_hist_t *lbone_hist_new(int max_pairs)
{
    lbone_hist_t *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->max = max_pairs > 0 ? (size_t)max_pairs : 1;
    h->nb = h->max < 4096 ? 4096 : h->max;
    h->b = calloc(h->nb, sizeof *h->b);
    if (!h->b) {
        free(h);
        return NULL;
    }
    pthread_mutex_init(&h->mu, NULL);
    return h;
}

void lbone_hist_free(lbone_hist_t *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->nb; i++)
        for (pair_t *p = h->b[i], *nx; p; p = nx) {
            nx = p->next;
            free(p);
        }
    free(h->b);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

static pair_t *find(const lbone_hist_t *h, const char *net, const char *depot)
{
    for (pair_t *p = h->b[bucket(h, net, depot)]; p; p = p->next)
        if (strcmp(p->depot, depot) == 0 && strcmp(p->net, net) == 0)
            return p;
    return NULL;
}

int lbone_hist_add(lbone_hist_t *h, const char *net, const char *depot_id, double mbps)
{
    int rc = 0;
    pthread_mutex_lock(&h->mu);
    pair_t *p = find(h, net, depot_id);
    if (!p) {
        if (h->n >= h->max || strlen(net) >= sizeof p->net ||
            strlen(depot_id) >= sizeof p->depot || !(p = calloc(1, sizeof *p))) {
            rc = -1;
            goto out;
        }
        strcpy(p->net, net);
        strcpy(p->depot, depot_id);
        lbone_fc_init(&p->fc);
        size_t bi = bucket(h, net, depot_id);
        p->next = h->b[bi];
        h->b[bi] = p;
        h->n++;
    }
    lbone_fc_add(&p->fc, mbps);
out:
    pthread_mutex_unlock(&h->mu);
    return rc;
}

double lbone_hist_forecast(lbone_hist_t *h, const char *net, const char *depot_id)
{
    double v = NAN;
    pthread_mutex_lock(&h->mu);
    pair_t *p = find(h, net, depot_id);
    if (p)
        v = lbone_fc_forecast(&p->fc, NULL);
    pthread_mutex_unlock(&h->mu);
    return v;
}

void lbone_hist_put_depot(lbone_hist_t *h, const char *depot_id, lns_buf_t *b)
{
    int first = 1;
    lns_buf_puts(b, "[");
    pthread_mutex_lock(&h->mu);
    for (size_t i = 0; i < h->nb; i++)
        for (pair_t *p = h->b[i]; p; p = p->next) {
            if (strcmp(p->depot, depot_id) != 0)
                continue;
            int pred;
            double fc = lbone_fc_forecast(&p->fc, &pred);
            lns_buf_puts(b, first ? "{\"network\":" : ",{\"network\":");
            first = 0;
            lbone_json_put_string(b, p->net);
            lns_buf_printf(b, ",\"measurements\":%lld,\"last_mbps\":", (long long)p->fc.n);
            lbone_json_put_number(b, lbone_fc_predict(&p->fc, LBONE_FC_LAST));
            lns_buf_puts(b, ",\"forecast_mbps\":");
            lbone_json_put_number(b, fc);
            lns_buf_puts(b, ",\"predictor\":");
            lbone_json_put_string(b, lbone_fc_name(pred));
            lns_buf_puts(b, ",\"recent_error\":");
            lbone_json_put_number(b, lbone_fc_recent_error(&p->fc, pred));
            lns_buf_puts(b, ",\"mean_error\":");
            lbone_json_put_number(b, lbone_fc_cum_error(&p->fc, pred));
            lns_buf_puts(b, "}");
        }
    pthread_mutex_unlock(&h->mu);
    lns_buf_puts(b, "]");
}

void lbone_hist_forget_depot(lbone_hist_t *h, const char *depot_id)
{
    pthread_mutex_lock(&h->mu);
    for (size_t i = 0; i < h->nb; i++)
        for (pair_t **pp = &h->b[i]; *pp;) {
            if (strcmp((*pp)->depot, depot_id) == 0) {
                pair_t *dead = *pp;
                *pp = dead->next;
                free(dead);
                h->n--;
            } else {
                pp = &(*pp)->next;
            }
        }
    pthread_mutex_unlock(&h->mu);
}

size_t lbone_hist_pairs(lbone_hist_t *h)
{
    pthread_mutex_lock(&h->mu);
    size_t n = h->n;
    pthread_mutex_unlock(&h->mu);
    return n;
}

int lbone_client_net(const void *sockaddr, char *out, size_t size)
{
    const struct sockaddr *sa = sockaddr;
    char txt[INET6_ADDRSTRLEN];
    if (!sa)
        return -1;
    if (sa->sa_family == AF_INET6) {
        struct in6_addr a;
        memcpy(&a, &((const struct sockaddr_in6 *)sockaddr)->sin6_addr, sizeof a);
        if (IN6_IS_ADDR_V4MAPPED(&a)) {
            struct in_addr v4;
            memcpy(&v4, &a.s6_addr[12], 4);
            ((unsigned char *)&v4)[3] = 0;
            inet_ntop(AF_INET, &v4, txt, sizeof txt);
            return snprintf(out, size, "%s/24", txt) < (int)size ? 0 : -1;
        }
        memset(&a.s6_addr[6], 0, 10);
        inet_ntop(AF_INET6, &a, txt, sizeof txt);
        return snprintf(out, size, "%s/48", txt) < (int)size ? 0 : -1;
    }
    if (sa->sa_family == AF_INET) {
        struct in_addr v4 = ((const struct sockaddr_in *)sockaddr)->sin_addr;
        ((unsigned char *)&v4)[3] = 0;
        inet_ntop(AF_INET, &v4, txt, sizeof txt);
        return snprintf(out, size, "%s/24", txt) < (int)size ? 0 : -1;
    }
    return -1;
}
