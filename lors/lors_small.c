/* lors_small.c -- a small read checked through a mapping's outboard (lors_small.h).
 *
 * For a read inside block b of a mapping: the groups g0..g1 around it are loaded from the
 * data and, in the same request (VEC_READ; two LOADs for a depot without it), the block's G
 * group CVs from the outboard (which holds every earlier block's, all of
 * one full block's size, before them), the loaded groups' CVs are computed and compared, and
 * the root of the G CVs is compared with the block's digest.  A block of one group has no
 * CVs: it is loaded whole and hashed.  Anything that does not check is only a reason to try
 * another replica, then the usual path: this never answers with bytes it has not checked.
 */
#include <stdlib.h>
#include <string.h>

#include "lns_hex.h"
#include "lors_b3tree.h"
#include "lors_checksum.h"
#include "lors_small.h"

#define TRIES 2 /* replicas tried before the usual path takes over */

int lors__small_possible(const xnd_t *x, const lors__func_t *fn)
{
    for (size_t i = 0; i < x->nmaps; i++)
        if (fn[i].kind == LORS_FUNC_CHECKSUM && fn[i].ob_off >= 0)
            return 1;
    return 0;
}

/* The digest of block b of m, from its lns_checksum (already checked by lors__func_read). */
static int block_digest(const xnd_mapping_t *m, int64_t b, unsigned char d[LORS_B3_CV])
{
    const char *hex;
    if (xnd_meta_get_string(&m->func->args, "digests", &hex) != XND_OK)
        return -1;
    return lns_unhex(hex + b * 2 * LORS_B3_CV, 2 * LORS_B3_CV, d, LORS_B3_CV, 0);
}

/* Bytes [off, off + len) of the mapping's range (mapping-relative off), checked. */
static int from_mapping(ibp_client_t *c, const xnd_mapping_t *m, const lors__func_t *f,
                        unsigned char *buf, int64_t off, size_t len)
{
    int64_t bs;
    if (xnd_meta_get_int(&m->func->args, "blocksize", &bs) != XND_OK || bs <= LORS_B3_GROUP)
        return 0;
    int64_t b = off / bs, b0 = b * bs;
    int64_t blen = m->logical_length - b0 < bs ? m->logical_length - b0 : bs;
    if (off + (int64_t)len > b0 + blen)
        return 0; /* past the block: the usual path */
    int64_t g = lors__b3_groups(blen), g0 = (off - b0) / LORS_B3_GROUP,
            g1 = (off + (int64_t)len - 1 - b0) / LORS_B3_GROUP;
    int64_t from = b0 + g0 * LORS_B3_GROUP;
    int64_t to = b0 + (g1 + 1) * LORS_B3_GROUP < b0 + blen ? b0 + (g1 + 1) * LORS_B3_GROUP
                                                           : b0 + blen;
    /* one buffer: the groups, then the block's CVs as they come (one VEC_READ fills both),
     * then the loaded groups' own CVs */
    size_t dlen = (size_t)(to - from), ng = (size_t)(g1 - g0 + 1);
    size_t cvlen = g > 1 ? (size_t)g * LORS_B3_CV : 0;
    unsigned char want[LORS_B3_CV], got[LORS_B3_CV];
    unsigned char *data = malloc(dlen + cvlen + (g > 1 ? ng * LORS_B3_CV : 0));
    const char *rcap = m->cap[XND_READ];
    int ok = data && rcap && block_digest(m, b, want) == 0;
    unsigned char (*cvs)[LORS_B3_CV] = ok ? (unsigned char (*)[LORS_B3_CV])(data + dlen) : NULL;
    unsigned char (*mine)[LORS_B3_CV] = ok ? cvs + g : NULL;
    ibp_range_t r[2] = {{(uint64_t)(m->alloc_offset + from), dlen},
                        {(uint64_t)(f->ob_off + b * lors__b3_groups(bs) * LORS_B3_CV), cvlen}};
    if (ok && g == 1) { /* the whole block, hashed as it is */
        ok = ibp_load(c, rcap, r[0].offset, r[0].length, data) == IBP_OK;
        if (ok) {
            lors__b3_small(data, (size_t)blen, got);
            ok = memcmp(got, want, LORS_B3_CV) == 0;
        }
    } else if (ok) {
        /* the groups and the block's CVs in one request (VEC_READ); two LOADs where the
         * depot has no vector LOAD (LoCI) */
        int rc = ibp_load_ranges(c, rcap, r, 2, data);
        if (rc == IBP_E_INVALID_CMD) {
            rc = ibp_load(c, rcap, r[0].offset, r[0].length, data);
            if (rc == IBP_OK)
                rc = ibp_load(c, rcap, r[1].offset, r[1].length, cvs);
        }
        ok = rc == IBP_OK;
        if (ok) {
            lors__b3_group_cvs(data, dlen, (uint64_t)g0, mine);
            lors__b3_root((const unsigned char (*)[LORS_B3_CV])cvs, (size_t)g, got);
            ok = memcmp(got, want, LORS_B3_CV) == 0 &&
                 memcmp(mine, cvs + g0, ng * LORS_B3_CV) == 0;
        }
    }
    if (ok)
        memcpy(buf, data + (off - from), len);
    free(data);
    return ok;
}

int lors__small_read(ibp_client_t *c, const xnd_t *x, const lors__func_t *fn, unsigned *turn,
                     void *buf, int64_t off, size_t len)
{
    size_t n = x->nmaps, start = n ? *turn % n : 0;
    int tries = 0;
    (*turn)++;
    for (size_t k = 0; k < n && tries < TRIES; k++) {
        size_t i = (start + k) % n;
        const xnd_mapping_t *m = x->maps[i];
        if (fn[i].kind != LORS_FUNC_CHECKSUM || fn[i].ob_off < 0 || off < m->exnode_offset ||
            off + (int64_t)len > m->exnode_offset + m->logical_length)
            continue;
        tries++;
        if (from_mapping(c, m, &fn[i], buf, off - m->exnode_offset, len))
            return 1;
    }
    return 0;
}
