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

/* Start a depot with one resource <tmpdir>/<name>, hard=<hard>, soft=64M, max-duration=3600. */
int tl_start_depot(test_depot_t *d, const char *name, const char *hard);
/* Describe a running test depot as liblors wants it (127.0.0.1:port). */
void tl_lors_depot(const test_depot_t *d, lors_depot_t *l);
/* Start n depots and a client (io timeout 20 s).  0 or -1. */
int tl_fleet_start(test_depot_t *dep, lors_depot_t *ldep, int n, ibp_client_t **cli);
/* Stop them; 0 if every depot's log is free of sanitizer reports, else -1. */
int tl_fleet_stop(test_depot_t *dep, int n, ibp_client_t *cli);

#endif
