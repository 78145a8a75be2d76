/* test_capture.c -- see test_capture.h. */
#include "test_capture.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int ours(const tc_capture_t *c, int port)
{
    for (int i = 0; i < c->nports; i++)
        if (c->ports[i] == port)
            return 1;
    return 0;
}

static void *capture_main(void *arg)
{
    tc_capture_t *c = arg;
    static __thread unsigned char pkt[70000];
    while (!atomic_load(&c->stop)) {
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0)
            continue;
        struct sockaddr_ll from;
        socklen_t fl = sizeof from;
        ssize_t n = recvfrom(c->fd, pkt, sizeof pkt, 0, (struct sockaddr *)&from, &fl);
        if (n < (ssize_t)sizeof(struct iphdr) || from.sll_pkttype == PACKET_OUTGOING)
            continue; /* each loopback packet once: as it comes in */
        struct iphdr *ip = (struct iphdr *)pkt;
        if (ip->version != 4 || ip->protocol != IPPROTO_TCP)
            continue;
        size_t ihl = (size_t)ip->ihl * 4;
        if ((size_t)n < ihl + sizeof(struct tcphdr))
            continue;
        struct tcphdr *th = (struct tcphdr *)(pkt + ihl);
        int sport = ntohs(th->source), dport = ntohs(th->dest);
        if (!ours(c, sport) && !ours(c, dport))
            continue;
        size_t off = ihl + (size_t)th->doff * 4;
        if ((size_t)n <= off)
            continue;
        size_t plen = (size_t)n - off;
        if (ours(c, dport))
            c->first_bytes[pkt[off] == 0x16 ? 0 : 1]++;
        if (c->len + plen > c->cap)
            continue;
        memcpy(c->buf + c->len, pkt + off, plen);
        c->len += plen;
    }
    return NULL;
}

int tc_start(tc_capture_t *c, const int *ports, int n, size_t cap)
{
    memset(c, 0, sizeof *c);
    for (int i = 0; i < n && i < TC_MAXPORTS; i++)
        c->ports[c->nports++] = ports[i];
    c->fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, htons(ETH_P_IP));
    if (c->fd < 0)
        return -1;
    struct sockaddr_ll ll = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IP),
                             .sll_ifindex = (int)if_nametoindex("lo")};
    int rcv = 64 << 20;
    setsockopt(c->fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof rcv);
    c->cap = cap;
    c->buf = malloc(c->cap);
    if (!c->buf || bind(c->fd, (struct sockaddr *)&ll, sizeof ll) < 0 ||
        pthread_create(&c->th, NULL, capture_main, c) != 0) {
        int e = errno;
        close(c->fd);
        free(c->buf);
        c->buf = NULL;
        errno = e;
        return -1;
    }
    return 0;
}

void tc_end(tc_capture_t *c)
{
    usleep(200000); /* the last packets */
    atomic_store(&c->stop, 1);
    pthread_join(c->th, NULL);
    close(c->fd);
}

void tc_free(tc_capture_t *c)
{
    free(c->buf);
    c->buf = NULL;
}

int tc_seen(const tc_capture_t *c, const void *needle, size_t n)
{
    return memmem(c->buf, c->len, needle, n) != NULL;
}

void tc_cap_key(const char *cap, char *key, size_t size)
{
    const char *p = strstr(cap, "://");
    p = p ? strchr(p + 3, '/') : NULL;
    const char *k = p ? p + 1 : "";
    const char *hash = strchr(k, '#'), *end = strchr(k, '/');
    if (hash && (!end || hash < end))
        k = hash + 1;
    end = strchr(k, '/');
    snprintf(key, size, "%.*s", end ? (int)(end - k) : (int)strlen(k), k);
}
