/* lors_lease_int.h -- internal to liblors: provisional leases, what upload, augment and the
 * keeper share so that a process killed before its exNode is safe leaks only minutes.
 *
 * A new allocation first gets the provisional lease (lors__first_lease); while the call
 * that made it runs, a keep-alive thread extends every allocation it was given to the
 * provisional lease again every third of it, so a long upload's first allocations never
 * end before its last; once the exNode that names them is written the caller extends them
 * to the duration asked (lors_lease_extend, lors.h).  A SIGKILL stops the keep-alive with
 * the process: what no exNode names ends within one provisional lease.
 */
#ifndef LNS_LORS_LEASE_INT_H
#define LNS_LORS_LEASE_INT_H

#include <stdint.h>

#include "lors.h"

/* The lease a new allocation gets first: the provisional one when it is shorter than the
 * duration asked (-1: each depot's maximum), else the duration. */
int64_t lors__first_lease(int64_t duration_s, int64_t provisional_s);

typedef struct lors__alive lors__alive_t;
/* A keep-alive for the allocations of one call: NULL when no provisional lease is in effect
 * (then the calls below do nothing) or on no memory/thread (then the leases are only as long
 * as the first one: the caller's extension still comes). */
lors__alive_t *lors__alive_start(int64_t duration_s, int64_t provisional_s, int timeout_s);
/* Keep the allocation of this manage capability alive (copied); thread-safe. */
void lors__alive_add(lors__alive_t *a, const char *mcap);
/* Stop the thread and free it (NULL is fine). */
void lors__alive_stop(lors__alive_t *a);

#endif
