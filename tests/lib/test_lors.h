/* test_lors.h -- real depots as liblors sees them, for the lors system tests.
 *
 * A fleet is n depots (resources res0..res<n-1> of 256 MiB hard under the test tmpdir),
 * their lors_depot_t descriptions and one pooled libibp client to check their contents.
 */
#ifndef LNS_TEST_LORS_H
#define LNS_TEST_LORS_H

#include "ibp.h"
#include "lors.h"
#include "test_depot.h"
#include "xnd.h"

/* Start a depot with one resource <tmpdir>/<name>, hard=<hard>, soft=64M, max-duration=3600. */
int tl_start_depot(test_depot_t *d, const char *name, const char *hard);
/* Describe a running test depot as liblors wants it (127.0.0.1:port). */
void tl_lors_depot(const test_depot_t *d, lors_depot_t *l);
/* Start n depots and a client (io timeout 20 s).  0 or -1. */
int tl_fleet_start(test_depot_t *dep, lors_depot_t *ldep, int n, ibp_client_t **cli);
/* Stop them; 0 if every depot's log is free of sanitizer reports, else -1. */
int tl_fleet_stop(test_depot_t *dep, int n, ibp_client_t *cli);
/* A program's one fleet of n depots: the statics dep, ldep and cli, and fleet_start and
 * fleet_stop to start and stop it (as CUnit suite functions, or called from them). */
#define TL_FLEET(n)                                                                            \
    static test_depot_t dep[n];                                                                \
    static lors_depot_t ldep[n];                                                               \
    static ibp_client_t *cli;                                                                  \
    static int fleet_start(void) { return tl_fleet_start(dep, ldep, n, &cli); }                \
    static int fleet_stop(void) { return tl_fleet_stop(dep, n, cli); }

/* n deterministic bytes from seed, malloc'd (at least 1 byte, so n may be 0); NULL without
 * the memory. */
unsigned char *tl_data(size_t n, uint64_t seed);
/* Upload options over depots d[0..nd) with copies x frags, 600 s, a 20 s timeout; the rest
 * liblors's defaults. */
void tl_upload_opts(lors_upload_opts_t *o, const lors_depot_t *d, size_t nd, int copies,
                    int frags);
/* Download x into memory through an unlinked temporary file; *out malloc'd, *outlen its
 * length; lors_download_fd's code. */
int tl_download_mem(const lors_download_opts_t *o, const xnd_t *x, unsigned char **out,
                    size_t *outlen, lors_dl_report_t *rep);
/* A download into memory: the options tl_dl uses, then the bytes and the report it gives. */
typedef struct tl_dl {
    lors_download_opts_t o;
    unsigned char *out; /* malloc'd, outlen bytes */
    size_t outlen;
    lors_dl_report_t rep;
} tl_dl_t;
/* tl_download_mem of x with d->o into d->out, d->outlen and d->rep; its code. */
int tl_dl(tl_dl_t *d, const xnd_t *x);
/* Free d's bytes and report; its options stay for the next tl_dl. */
void tl_dl_end(tl_dl_t *d);
/* Download [off, off+len) of x (len -1: to the end) with o's other settings and assert that
 * it succeeds with exactly src's bytes there, all written, none bad; the report in *rep (the
 * caller frees it). */
void tl_check_range(const lors_download_opts_t *o, const xnd_t *x, const unsigned char *src,
                    size_t n, int64_t off, int64_t len, lors_dl_report_t *rep);
/* DECR the allocations x still has a manage capability for (errors ignored: depots may be
 * dead), then free x (may be NULL). */
void tl_free_xnd(ibp_client_t *cli, xnd_t *x);

#endif
