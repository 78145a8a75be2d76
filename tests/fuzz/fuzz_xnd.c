/* fuzz_xnd.c -- libFuzzer target for the exNode parser (make fuzz).
 *
 * Checks more than "does not crash": whatever the parser accepts must serialize, and the
 * text must parse back to the same mappings and metadata, and serialize to the same bytes
 * again, so parser and writer cannot drift apart.  Inputs are parsed in both strict and
 * lax mode. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xnd.h"
#include "../lib/xnd_same.h"

static void check(const uint8_t *data, size_t size, int lax)
{
    xnd_opts_t o = {.lax = lax};
    xnd_t *x = NULL, *y = NULL;
    char *t1, *t2;
    size_t l1, l2;

    if (xnd_parse_buf_opts((const char *)data, size, &o, &x, NULL, 0) != XND_OK)
        return;
    if (xnd_serialize(x, &t1, &l1, NULL, 0) != XND_OK)
        abort();
    if (xnd_parse_buf_opts(t1, l1, &o, &y, NULL, 0) != XND_OK || x->nmaps != y->nmaps)
        abort();
    for (size_t i = 0; i < x->nmaps; i++)
        if (!same_mapping(x->maps[i], y->maps[i]))
            abort();
    /* file-level metadata: the same, plus lorsversion if it was missing */
    if (y->meta.n != x->meta.n + !xnd_meta_find(&x->meta, "lorsversion"))
        abort();
    if (xnd_serialize(y, &t2, &l2, NULL, 0) != XND_OK || l1 != l2 || memcmp(t1, t2, l1) != 0)
        abort();
    /* the range queries on whatever came in */
    {
        xnd_range_t *r;
        xnd_mapping_t **f;
        size_t n;
        if (xnd_coverage(x, NULL, NULL, &r, &n) == XND_OK)
            free(r);
        if (x->nmaps && xnd_find(x, x->maps[0]->exnode_offset, 1, &f, &n) == XND_OK) {
            if (x->maps[0]->logical_length > 0 && n == 0)
                abort();
            free(f);
        }
    }
    free(t1);
    free(t2);
    xnd_free(x);
    xnd_free(y);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check(data, size, 0);
    check(data, size, 1);
    return 0;
}
