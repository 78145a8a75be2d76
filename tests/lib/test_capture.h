/* test_capture.h -- a capture of the loopback that a test makes itself: an AF_PACKET socket on
 * "lo" (needs CAP_NET_RAW) keeping the TCP payloads to or from the given ports, to show what
 * crossed the wire in the clear.
 */
#ifndef LNS_TEST_CAPTURE_H
#define LNS_TEST_CAPTURE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#define TC_MAXPORTS 8

typedef struct tc_capture {
    int fd, ports[TC_MAXPORTS], nports;
    pthread_t th;
    atomic_int stop;
    unsigned char *buf;
    size_t len, cap;
    long first_bytes[2]; /* payloads toward a port starting 0x16 (TLS) / anything else */
} tc_capture_t;

/* Start capturing the payloads of TCP to or from ports[0..n) (at most cap bytes kept).  0, or
 * -1 with errno when this process may not capture (the caller says SKIP). */
int tc_start(tc_capture_t *c, const int *ports, int n, size_t cap);
/* Stop (after the last packets) and keep what was seen; tc_free then. */
void tc_end(tc_capture_t *c);
void tc_free(tc_capture_t *c);
/* 1 if the n bytes at needle crossed in one payload run (as captured, concatenated). */
int tc_seen(const tc_capture_t *c, const void *needle, size_t n);
/* The key of a capability "ibp://host:port/[rid#]KEY/TYPEKEY/KIND" into key[size]. */
void tc_cap_key(const char *cap, char *key, size_t size);

#endif
