/* lors_small.h -- liblors internal: a small read checked through a mapping's outboard.
 *
 * The reader's blocks follow the checksum block (1 MiB by default), so a 4 KiB read would
 * load and hash a whole MiB.  A mapping uploaded with the outboard (lors_b3tree.h) lets it
 * load only the 16 KiB groups around the bytes and the block's chaining values (2 KiB per
 * MiB of block), check the groups against their CVs and the CVs against the block's digest
 * in the exNode: one request of a few KiB (a vector LOAD, VEC_READ, of the groups and the
 * CVs; two LOADs for a depot without it), and the bytes are as trusted as a whole block's.
 */
#ifndef LNS_LORS_SMALL_H
#define LNS_LORS_SMALL_H

#include <stddef.h>
#include <stdint.h>

#include "ibp.h"
#include "lors_func_int.h"
#include "xnd.h"

/* 1 if some mapping of x (fn: what each means, lors__func_read) holds an outboard. */
int lors__small_possible(const xnd_t *x, const lors__func_t *fn);
/* Bytes [off, off + len) of x into buf, if they lie in one checksum block of a mapping with
 * an outboard, loaded with c and checked: 1 when buf holds them.  0 when no such mapping
 * holds them or the two tried failed (a depot's error, or bytes that do not check): the
 * caller then reads the usual way, which retries, fails over and names what failed.  *turn
 * spreads the reads over the replicas (any counter the caller keeps).  Never wrong bytes. */
int lors__small_read(ibp_client_t *c, const xnd_t *x, const lors__func_t *fn, unsigned *turn,
                     void *buf, int64_t off, size_t len);

#endif
