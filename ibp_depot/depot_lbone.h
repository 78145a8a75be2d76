/* depot_lbone.h -- the depot's L-Bone settings and the thread that registers it there.
 *
 * The settings are the config keys lbone, lbone-token-file, lbone-place, lbone-lat,
 * lbone-lon, lbone-contact, lbone-env-connection, lbone-env-monitoring, lbone-env-power,
 * lbone-env-firewall, lbone-interval and lbone-leaving (docs/depot.md).  They live in this module (one
 * depot per process) rather than in depot_config_t; depot_config_init resets them.
 */
#ifndef LNS_DEPOT_LBONE_H
#define LNS_DEPOT_LBONE_H

#include <stddef.h>

#include "depot.h"

/* Forget every L-Bone setting (depot_config_init). */
void depot_lbone_reset(void);
/* One "lbone..." setting.  0, or -1 with a reason in err. */
int depot_lbone_set(const char *key, const char *value, char *err, size_t errlen);
/* Once all settings are in: the checks that need several of them, and the token file is
 * read (so a bad one fails at start, on the terminal).  0, or -1 with a reason. */
int depot_lbone_check(char *err, size_t errlen);
/* Append ", L-Bone URL (place ...)" or nothing to a summary. */
void depot_lbone_summary(char *buf, size_t size);

/* Start announcing every resource of store at public_host:port, with the depot's TLS pin
 * (NULL: none), if an L-Bone is set (else nothing).  Never fails because the L-Bone is down: the thread logs and retries with
 * backoff while the depot serves.  0, or -1 if the thread cannot start. */
int depot_lbone_start(const depot_config_t *cfg, depot_store_t *store, int port,
                      const char *pin, char *err, size_t errlen);
/* Stop the thread and take the depot's registrations back (within a few seconds). */
void depot_lbone_stop(void);

#endif
