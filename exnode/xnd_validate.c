/* xnd_validate.c -- the rules an exNode must keep, checked on the model.
 *
 * The parser only checks syntax and types; the rules live here so that a tool can check an
 * exNode it built before writing it.  Messages name the source line of the offending part
 * when the mapping came from a file, and the mapping number (document order, from 0).
 * Gaps (bytes no mapping holds) are allowed: xnd_coverage() reports them.
 */
#include "xnd_internal.h"

#include <ibp.h>
#include <inttypes.h>
#include <string.h>

static const char *const cap_names[3] = {"read", "write", "manage"};
static const char *const cap_kinds[3] = {"READ", "WRITE", "MANAGE"};

/* The first line known among the given line indexes, else the mapping's own. */
static int where(const xnd_mapping_t *m, int a)
{
    return m->line[a] ? m->line[a] : m->line[XND_L_MAPPING];
}

static int check_caps(const xnd_mapping_t *m, size_t no, char *err, size_t errlen)
{
    int have = 0;
    for (int k = 0; k < 3; k++) {
        ibp_cap_t cap;
        const char *s = m->cap[k];
        if (!s)
            continue;
        have = 1;
        if (ibp_cap_parse(s, &cap) != IBP_OK)
            return xnd_seterr(err, errlen, XND_E_CAP, where(m, XND_L_READ + k),
                              "mapping %zu: %s capability \"%.80s\" is not an IBP capability",
                              no, cap_names[k], s);
        if ((int)cap.type != k + 1)
            return xnd_seterr(err, errlen, XND_E_CAP, where(m, XND_L_READ + k),
                              "mapping %zu: %s capability ends in /%s, not /%s", no,
                              cap_names[k], ibp_captype_name(cap.type), cap_kinds[k]);
    }
    if (!have)
        return xnd_seterr(err, errlen, XND_E_CAP, m->line[XND_L_MAPPING],
                          "mapping %zu has no capability (read, write or manage)", no);
    return XND_OK;
}

static int check_mapping(const xnd_mapping_t *m, size_t no, int64_t size, int lax, char *err,
                         size_t errlen)
{
    static const struct {
        const char *name;
        int line_idx;
        size_t off;
    } nums[] = {
        {"exnode_offset", XND_L_EXNODE_OFFSET, offsetof(xnd_mapping_t, exnode_offset)},
        {"logical_length", XND_L_LOGICAL_LENGTH, offsetof(xnd_mapping_t, logical_length)},
        {"alloc_offset", XND_L_ALLOC_OFFSET, offsetof(xnd_mapping_t, alloc_offset)},
        {"alloc_length", XND_L_ALLOC_LENGTH, offsetof(xnd_mapping_t, alloc_length)},
        {"e2e_blocksize", XND_L_E2E_BLOCKSIZE, offsetof(xnd_mapping_t, e2e_blocksize)},
    };
    int64_t end;
    int rc;

    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        int64_t v = *(const int64_t *)((const char *)m + nums[i].off);
        if (v < 0)
            return xnd_seterr(err, errlen, XND_E_NUMBER, where(m, nums[i].line_idx),
                              "mapping %zu: %s is negative (%" PRId64 ")", no, nums[i].name, v);
    }
    if (m->exnode_offset > INT64_MAX - m->logical_length)
        return xnd_seterr(err, errlen, XND_E_RANGE, where(m, XND_L_LOGICAL_LENGTH),
                          "mapping %zu: exnode_offset + logical_length overflows", no);
    end = m->exnode_offset + m->logical_length;
    if (lax)
        return XND_OK;
    if (size >= 0 && end > size)
        return xnd_seterr(err, errlen, XND_E_RANGE, where(m, XND_L_LOGICAL_LENGTH),
                          "mapping %zu: runs past the end of the file (ends at %" PRId64
                          ", size %" PRId64 ")", no, end, size);
    /* A function (compression, checksum headers) may change the stored length. */
    if (!m->func && (m->alloc_offset > INT64_MAX - m->logical_length ||
                     m->alloc_offset + m->logical_length > m->alloc_length))
        return xnd_seterr(err, errlen, XND_E_RANGE, where(m, XND_L_ALLOC_LENGTH),
                          "mapping %zu: alloc_offset %" PRId64 " + logical_length %" PRId64
                          " is past alloc_length %" PRId64, no, m->alloc_offset,
                          m->logical_length, m->alloc_length);
    if ((rc = check_caps(m, no, err, errlen)) != XND_OK)
        return rc;
    return XND_OK;
}

int xnd_validate(const xnd_t *x, int lax, char *err, size_t errlen)
{
    const xnd_meta_t *sm;
    int64_t size = -1;
    if (!x)
        return xnd_seterr(err, errlen, XND_E_INVAL, 0, "no exNode");
    if ((sm = xnd_meta_find(&x->meta, "size"))) {
        if (sm->type != XND_INTEGER && !lax)
            return xnd_seterr(err, errlen, XND_E_NUMBER, sm->line,
                              "metadata 'size' has type %s, not integer",
                              sm->type_name ? sm->type_name : xnd_type_name(sm->type));
        if (sm->type == XND_INTEGER && sm->i < 0)
            return xnd_seterr(err, errlen, XND_E_NUMBER, sm->line,
                              "metadata 'size' is negative (%" PRId64 ")", sm->i);
        if (sm->type == XND_INTEGER)
            size = sm->i;
    }
    for (size_t i = 0; i < x->nmaps; i++) {
        int rc = check_mapping(x->maps[i], i, size, lax, err, errlen);
        if (rc != XND_OK)
            return rc;
    }
    return XND_OK;
}
