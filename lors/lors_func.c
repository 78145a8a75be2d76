/* lors_func.c -- what a mapping's function means: the kinds lns reads, and why it refuses the
 * rest.
 *
 * A function (or an e2e_blocksize) changes what a mapping's allocation holds, so a reader
 * that read past one it does not fully understand would hand out wrong bytes with nothing to
 * show for it.  The rule is therefore strict: a function is understood only as exactly what
 * lns writes (lns_checksum, lns_ec) or what lors_func_loci.c decodes, every argument known and
 * well formed, nothing nested or foreign inside; everything else is UNKNOWN and never read.
 */
#include <stdio.h>
#include <string.h>

#include "lors_b3tree.h"
#include "lors_checksum.h"
#include "lors_e2e_int.h"
#include "lors_ec_int.h"
#include "lors_func_int.h"
#include "lns_err.h"

/* 1 if f has exactly the arguments named in names (NULL-terminated), nothing else inside. */
static int only_args(const xnd_func_t *f, const char *const *names)
{
    if (f->nsubs || f->meta.n || f->extra)
        return 0;
    for (size_t i = 0; i < f->args.n; i++) {
        const char *a = f->args.items[i].name;
        size_t k = 0;
        while (names[k] && strcmp(names[k], a) != 0)
            k++;
        if (!names[k])
            return 0;
        for (size_t j = 0; j < i; j++) /* each at most once */
            if (strcmp(f->args.items[j].name, a) == 0)
                return 0;
    }
    return 1;
}

/* lns_checksum over the bytes as they are: well formed, known algorithm, one digest per
 * block of the mapping's range. */
static int read_checksum(const xnd_mapping_t *m, lors__func_t *fk, char *why, size_t whylen)
{
    static const char *const names[] = {"algorithm", "blocksize", "digests", LORS_CK_OUTBOARD,
                                        NULL};
    const xnd_func_t *f = m->func;
    const char *alg, *dig;
    int64_t bs, group;
    if (!only_args(f, names))
        return lns_err_set(why, whylen, "function %s: arguments or content lns does not know",
                           LORS_CHECKSUM_FUNC);
    if (xnd_meta_get_string(&f->args, "algorithm", &alg) != XND_OK ||
        xnd_meta_get_int(&f->args, "blocksize", &bs) != XND_OK || bs <= 0 ||
        xnd_meta_get_string(&f->args, "digests", &dig) != XND_OK)
        return lns_err_set(why, whylen, "function %s: algorithm, blocksize or digests missing "
                           "or malformed", LORS_CHECKSUM_FUNC);
    int hl = lors_ck_hexlen(alg);
    if (hl <= 0)
        return lns_err_set(why, whylen, "function %s: unknown algorithm \"%s\"",
                           LORS_CHECKSUM_FUNC, alg);
    int64_t nb = m->logical_length / bs + (m->logical_length % bs != 0);
    if ((int64_t)strlen(dig) != nb * hl)
        return lns_err_set(why, whylen, "function %s: %zu hex digits of digests for %lld "
                           "blocks of %d", LORS_CHECKSUM_FUNC, strlen(dig), (long long)nb, hl);
    if (!xnd_meta_find(&f->args, LORS_CK_OUTBOARD))
        return 0;
    /* the outboard: BLAKE3's CVs of 16 KiB, right after the data, inside the allocation */
    int64_t ob = lors__b3_outboard_len(m->logical_length, bs);
    if (xnd_meta_get_int(&f->args, LORS_CK_OUTBOARD, &group) != XND_OK ||
        group != LORS_B3_GROUP || strcmp(alg, LORS_CK_BLAKE3) != 0 || ob <= 0 ||
        m->alloc_offset < 0 || m->alloc_length < m->alloc_offset + m->logical_length + ob)
        return lns_err_set(why, whylen, "function %s: an outboard lns does not know (%s of "
                           "algorithm %s, blocksize %lld, in an allocation of %lld bytes)",
                           LORS_CHECKSUM_FUNC, LORS_CK_OUTBOARD, alg, (long long)bs,
                           (long long)m->alloc_length);
    fk->ob_off = m->alloc_offset + m->logical_length;
    fk->ob_len = ob;
    return 0;
}

void lors__func_read(const xnd_t *x, const lors__ec_t *ec, const xnd_mapping_t *m,
                     lors__func_t *f, char *why, size_t whylen)
{
    memset(f, 0, sizeof *f);
    f->ob_off = -1;
    if (why && whylen)
        why[0] = '\0';
    f->kind = LORS_FUNC_UNKNOWN;
    const xnd_func_t *fn = m->func;
    if (!fn) {
        if (m->e2e_blocksize != 0)
            lns_err_set(why, whylen, "e2e_blocksize %lld without a function: the bytes are "
                        "encoded some way this exNode does not say", (long long)m->e2e_blocksize);
        else
            f->kind = LORS_FUNC_NONE;
        return;
    }
    if (strcmp(fn->name, LORS_CHECKSUM_FUNC) == 0) {
        /* the bytes as they are; e2e_blocksize on an lns_checksum mapping is there for the
         * original tools only (it makes them refuse frames they cannot undo: lors_e2e.c) */
        if (read_checksum(m, f, why, whylen) == 0)
            f->kind = LORS_FUNC_CHECKSUM;
        return;
    }
    if (strcmp(fn->name, LORS_E2E_FUNC) == 0) {
        /* frames as they are: a mark that only makes the original tools refuse them */
        static const char *const none[] = {NULL};
        if (!xnd_meta_find(&x->meta, LORS_E2E_META))
            lns_err_set(why, whylen, "function %s in a file without %s", LORS_E2E_FUNC,
                        LORS_E2E_META);
        else if (!only_args(fn, none))
            lns_err_set(why, whylen, "function %s: content lns does not know", LORS_E2E_FUNC);
        else
            f->kind = LORS_FUNC_NONE;
        return;
    }
    if (strcmp(fn->name, LORS_EC_FUNC) == 0) {
        lors__ec_col_t c;
        if (!ec) {
            lns_err_set(why, whylen, "function %s in a file that is not erasure coded",
                        LORS_EC_FUNC);
            return;
        }
        lors__ec_col(ec, m, &c);
        if (c.ok)
            f->kind = LORS_FUNC_EC;
        else
            lns_err_set(why, whylen, "function %s that does not fit the file's coding",
                        LORS_EC_FUNC);
        return;
    }
    if (lors__loci_parse(m, &f->loci, why, whylen) == LORS_OK)
        f->kind = LORS_FUNC_LORS131;
}

static int same_list(const xnd_meta_list_t *a, const xnd_meta_list_t *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++) {
        const xnd_meta_t *x = &a->items[i], *y = &b->items[i];
        if (strcmp(x->name, y->name) != 0 || x->type != y->type ||
            strcmp(x->text ? x->text : "", y->text ? y->text : "") != 0 ||
            (x->type == XND_META && !same_list(&x->sub, &y->sub)))
            return 0;
    }
    return 1;
}

int lors__func_same(const xnd_func_t *a, const xnd_func_t *b)
{
    if (!a || !b)
        return a == b;
    if (strcmp(a->name, b->name) != 0 || a->nsubs != b->nsubs || !same_list(&a->args, &b->args) ||
        !same_list(&a->meta, &b->meta) || (a->extra != NULL) != (b->extra != NULL))
        return 0;
    for (size_t i = 0; i < a->nsubs; i++)
        if (!lors__func_same(a->subs[i], b->subs[i]))
            return 0;
    return 1;
}

void lors__func_name(const xnd_mapping_t *m, char *buf, size_t size)
{
    size_t n = 0;
    const xnd_func_t *chain[LORS_LOCI_MAX_STEPS];
    int depth = 0;
    buf[0] = '\0';
    /* outermost first in the exNode; shown in the order applied, innermost first */
    for (const xnd_func_t *f = m->func; f && depth < LORS_LOCI_MAX_STEPS;
         f = f->nsubs ? f->subs[0] : NULL)
        chain[depth++] = f;
    for (int i = depth - 1; i >= 0 && n < size; i--) {
        int w = snprintf(buf + n, size - n, "%s%s", n ? "," : "", chain[i]->name);
        if (w < 0)
            break;
        n += (size_t)w;
    }
}

int lors_func_info(const xnd_t *x, size_t i, lors_func_info_t *info)
{
    memset(info, 0, sizeof *info);
    if (!x || i >= x->nmaps)
        return LORS_E_INVAL;
    /* only an lns_ec mapping needs the file's coding */
    const xnd_func_t *fn = x->maps[i]->func;
    lors__ec_t ec;
    int present = fn && strcmp(fn->name, LORS_EC_FUNC) == 0 && lors__ec_read_valid(x, &ec);
    lors__func_t f;
    lors__func_read(x, present ? &ec : NULL, x->maps[i], &f, info->why, sizeof info->why);
    if (present)
        lors__ec_free(&ec);
    info->kind = f.kind;
    lors__func_name(x->maps[i], info->name, sizeof info->name);
    return LORS_OK;
}
