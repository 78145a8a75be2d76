/* lors_ec.c -- erasure coding: the stripe layout, the ISA-L codec, and its exNode description.
 *
 * The code is systematic Reed-Solomon over GF(2^8) with ISA-L's Cauchy matrix
 * (gf_gen_cauchy1_matrix): rows 0..k-1 are the identity (data pieces are the file's bytes),
 * rows k..k+m-1 make the parity.  Every k x k submatrix of a Cauchy-extended identity is
 * invertible, so any k pieces decode; ISA-L's Vandermonde generator does not promise that for
 * every k + m, which is why it is not used.  Decoding inverts the k rows of the pieces at hand
 * (at most 32 x 32: microseconds) and runs ISA-L's SIMD multiply over the bytes.
 */
#include <isa-l/erasure_code.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lors_checksum.h"
#include "lors_ec_int.h"
#include "lns_err.h"

int lors__ec_init(lors__ec_t *ec, int k, int m, int64_t piece, int64_t size)
{
    memset(ec, 0, sizeof *ec);
    if (k < 1 || k > LORS_EC_MAX_K || m < 1 || m > LORS_EC_MAX_M || piece < 1 ||
        piece > LORS_EC_MAX_PIECE || size < 0 || lors__ec_count(size, (int64_t)k * piece) >
        LORS_EC_MAX_STRIPES)
        return LORS_E_INVAL;
    ec->version = LORS_EC_VERSION;
    ec->k = k;
    ec->m = m;
    ec->piece = piece;
    ec->size = size;
    ec->stripes = lors__ec_count(size, (int64_t)k * piece);
    ec->matrix = malloc((size_t)(k + m) * (size_t)k);
    ec->tables = malloc((size_t)32 * (size_t)k * (size_t)m);
    if (!ec->matrix || !ec->tables) {
        lors__ec_free(ec);
        return LORS_E_NOMEM;
    }
    gf_gen_cauchy1_matrix(ec->matrix, k + m, k);
    ec_init_tables(k, m, ec->matrix + (size_t)k * (size_t)k, ec->tables);
    return LORS_OK;
}

void lors__ec_free(lors__ec_t *ec)
{
    free(ec->matrix);
    free(ec->tables);
    ec->matrix = ec->tables = NULL;
}

int64_t lors__ec_count(int64_t bytes, int64_t unit)
{
    return bytes / unit + (bytes % unit != 0);
}

int64_t lors__ec_stripe_bytes(const lors__ec_t *ec, int64_t s)
{
    if (s < 0 || s >= ec->stripes)
        return 0;
    int64_t stripe = (int64_t)ec->k * ec->piece, a = s * stripe;
    return ec->size - a < stripe ? ec->size - a : stripe;
}

int64_t lors__ec_piece_len(const lors__ec_t *ec, int64_t s)
{
    int64_t b = lors__ec_stripe_bytes(ec, s);
    return (b + ec->k - 1) / ec->k;
}

void lors__ec_data_range(const lors__ec_t *ec, int64_t s, int i, int64_t *off, int64_t *len)
{
    int64_t b = lors__ec_stripe_bytes(ec, s), p = lors__ec_piece_len(ec, s);
    int64_t a = (int64_t)i * p, e = a + p;
    if (a > b)
        a = b;
    if (e > b)
        e = b;
    *off = b > 0 ? s * (int64_t)ec->k * ec->piece + a : 0;
    *len = e - a;
}

void lors__ec_encode(const lors__ec_t *ec, int64_t len, unsigned char **data,
                     unsigned char **parity)
{
    ec_encode_data((int)len, ec->k, ec->m, ec->tables, data, parity);
}

int lors__ec_decode(const lors__ec_t *ec, int64_t len, const int *have, unsigned char **src,
                    const int *want, int nwant, unsigned char **dst)
{
    int k = ec->k, n = ec->k + ec->m;
    if (nwant < 1 || nwant > n || len < 0 || len > INT32_MAX)
        return LORS_E_INVAL;
    unsigned char seen[LORS_EC_MAX_K + LORS_EC_MAX_M] = {0};
    for (int i = 0; i < k; i++) {
        if (have[i] < 0 || have[i] >= n || seen[have[i]])
            return LORS_E_INVAL;
        seen[have[i]] = 1;
    }
    for (int i = 0; i < nwant; i++)
        if (want[i] < 0 || want[i] >= n)
            return LORS_E_INVAL;
    size_t kk = (size_t)k * (size_t)k;
    unsigned char *sub = malloc(kk), *inv = malloc(kk);
    unsigned char *rows = malloc((size_t)nwant * (size_t)k);
    unsigned char *tables = malloc((size_t)32 * (size_t)k * (size_t)nwant);
    int rc = sub && inv && rows && tables ? LORS_OK : LORS_E_NOMEM;
    if (rc == LORS_OK) {
        for (int i = 0; i < k; i++)
            memcpy(sub + (size_t)i * k, ec->matrix + (size_t)have[i] * k, (size_t)k);
        if (gf_invert_matrix(sub, inv, k) != 0)
            rc = LORS_E_INVAL; /* cannot happen with a Cauchy matrix and distinct rows */
    }
    if (rc == LORS_OK) {
        /* piece w = row w of the matrix x data = (row w x inv) x the pieces at hand */
        for (int w = 0; w < nwant; w++) {
            const unsigned char *r = ec->matrix + (size_t)want[w] * k;
            for (int j = 0; j < k; j++) {
                unsigned char acc = 0;
                for (int t = 0; t < k; t++)
                    acc ^= gf_mul(r[t], inv[(size_t)t * k + j]);
                rows[(size_t)w * k + j] = acc;
            }
        }
        ec_init_tables(k, nwant, rows, tables);
        ec_encode_data((int)len, k, nwant, tables, src, dst);
    }
    free(sub);
    free(inv);
    free(rows);
    free(tables);
    return rc;
}

/* ---- the exNode ------------------------------------------------------------------------- */

static int get_int(const xnd_meta_list_t *l, const char *name, int64_t lo, int64_t hi,
                   int64_t *v, char *err, size_t errlen)
{
    if (xnd_meta_get_int(l, name, v) != XND_OK) {
        lns_err_set(err, errlen, "%s: no integer \"%s\"", LORS_EC_META, name);
        return LORS_E_EXNODE;
    }
    if (*v < lo || *v > hi) {
        lns_err_set(err, errlen, "%s: %s %lld is out of range (%lld..%lld)", LORS_EC_META, name,
                    (long long)*v, (long long)lo, (long long)hi);
        return LORS_E_EXNODE;
    }
    return LORS_OK;
}

int lors__ec_read(const xnd_t *x, lors__ec_t *ec, int *present, char *err, size_t errlen)
{
    memset(ec, 0, sizeof *ec);
    *present = 0;
    const xnd_meta_t *md = xnd_meta_find(&x->meta, LORS_EC_META);
    if (!md)
        return LORS_OK;
    *present = 1;
    if (md->type != XND_META) {
        lns_err_set(err, errlen, "%s is not a metadata list", LORS_EC_META);
        return LORS_E_EXNODE;
    }
    const xnd_meta_list_t *l = &md->sub;
    int64_t ver, k, m, piece, stripes, size = xnd_size(x);
    const char *code;
    int rc = get_int(l, "version", 1, INT64_MAX, &ver, err, errlen);
    if (rc == LORS_OK && ver > LORS_EC_VERSION) {
        lns_err_set(err, errlen, "%s version %lld: this lns reads versions %d to %d",
                    LORS_EC_META, (long long)ver, LORS_EC_VERSION_UNBOUND, LORS_EC_VERSION);
        rc = LORS_E_EXNODE;
    }
    if (rc == LORS_OK && (xnd_meta_get_string(l, "code", &code) != XND_OK ||
                          strcmp(code, LORS_EC_CODE) != 0)) {
        lns_err_set(err, errlen, "%s: code is not \"%s\"", LORS_EC_META, LORS_EC_CODE);
        rc = LORS_E_EXNODE;
    }
    if (rc == LORS_OK)
        rc = get_int(l, "k", 1, LORS_EC_MAX_K, &k, err, errlen);
    if (rc == LORS_OK)
        rc = get_int(l, "m", 1, LORS_EC_MAX_M, &m, err, errlen);
    if (rc == LORS_OK)
        rc = get_int(l, "piece_size", 1, LORS_EC_MAX_PIECE, &piece, err, errlen);
    if (rc == LORS_OK)
        rc = get_int(l, "stripes", 0, INT64_MAX, &stripes, err, errlen);
    if (rc == LORS_OK && size < 0) {
        lns_err_set(err, errlen, "%s: the exNode has no size", LORS_EC_META);
        rc = LORS_E_EXNODE;
    }
    if (rc == LORS_OK && lors__ec_count(size, k * piece) > LORS_EC_MAX_STRIPES) {
        lns_err_set(err, errlen, "%s: a size of %lld in stripes of %lld bytes makes more than "
                    "the %lld stripes lns reads", LORS_EC_META, (long long)size,
                    (long long)(k * piece), (long long)LORS_EC_MAX_STRIPES);
        rc = LORS_E_EXNODE;
    }
    if (rc == LORS_OK && (rc = lors__ec_init(ec, (int)k, (int)m, piece, size)) != LORS_OK)
        lns_err_set(err, errlen, "%s: %s", LORS_EC_META, lors_strerror(rc));
    if (rc == LORS_OK)
        ec->version = (int)ver;
    if (rc == LORS_OK && ec->stripes != stripes) {
        lns_err_set(err, errlen, "%s: %lld stripes, but a size of %lld makes %lld", LORS_EC_META,
                    (long long)stripes, (long long)size, (long long)ec->stripes);
        rc = LORS_E_EXNODE;
    }
    if (rc != LORS_OK)
        lors__ec_free(ec);
    return rc == LORS_E_NOMEM ? rc : rc != LORS_OK ? LORS_E_EXNODE : LORS_OK;
}

int lors__ec_read_valid(const xnd_t *x, lors__ec_t *ec)
{
    int present = 0;
    char err[128];
    return lors__ec_read(x, ec, &present, err, sizeof err) == LORS_OK && present;
}

int lors__ec_write(xnd_t *x, const lors__ec_t *ec)
{
    xnd_meta_list_t *l;
    int rc = xnd_meta_set_meta(&x->meta, LORS_EC_META, &l);
    if (rc == XND_OK)
        rc = xnd_meta_set_int(l, "version", ec->version);
    if (rc == XND_OK)
        rc = xnd_meta_set_string(l, "code", LORS_EC_CODE);
    if (rc == XND_OK)
        rc = xnd_meta_set_int(l, "k", ec->k);
    if (rc == XND_OK)
        rc = xnd_meta_set_int(l, "m", ec->m);
    if (rc == XND_OK)
        rc = xnd_meta_set_int(l, "piece_size", ec->piece);
    if (rc == XND_OK)
        rc = xnd_meta_set_int(l, "stripes", ec->stripes);
    return rc;
}

xnd_func_t *lors__ec_func(const lors__ec_t *ec, int column, const char *alg, const char *digests)
{
    xnd_func_t *f = xnd_func_new(LORS_EC_FUNC);
    /* blocksize first: LoRS 0.82 reads it from any function of a mapping with an
     * e2e_blocksize, then finds no conditioning named lns_ec and refuses the mapping */
    int rc = f ? xnd_meta_set_int(&f->args, "blocksize", ec->piece) : XND_E_NOMEM;
    if (rc == XND_OK)
        rc = xnd_meta_set_int(&f->args, "k", ec->k);
    if (rc == XND_OK)
        rc = xnd_meta_set_int(&f->args, "m", ec->m);
    if (rc == XND_OK)
        rc = xnd_meta_set_int(&f->args, "piece", column);
    if (rc == XND_OK && alg && digests && *digests) {
        rc = xnd_meta_set_string(&f->args, "algorithm", alg);
        if (rc == XND_OK)
            rc = xnd_meta_set_string(&f->args, "digests", digests);
    }
    if (rc != XND_OK) {
        xnd_func_free(f);
        return NULL;
    }
    return f;
}

void lors__ec_col(const lors__ec_t *ec, const xnd_mapping_t *m, lors__ec_col_t *c)
{
    memset(c, 0, sizeof *c);
    const xnd_func_t *f = m->func;
    int64_t v, stripe = (int64_t)ec->k * ec->piece;
    if (!f || strcmp(f->name, LORS_EC_FUNC) != 0)
        return;
    if (xnd_meta_get_int(&f->args, "k", &v) != XND_OK || v != ec->k ||
        xnd_meta_get_int(&f->args, "m", &v) != XND_OK || v != ec->m ||
        xnd_meta_get_int(&f->args, "blocksize", &v) != XND_OK || v != ec->piece ||
        xnd_meta_get_int(&f->args, "piece", &v) != XND_OK || v < 0 || v >= ec->k + ec->m)
        return;
    c->column = (int)v;
    if (m->exnode_offset < 0 || m->exnode_offset % stripe != 0 || m->logical_length <= 0)
        return;
    /* each bound checked before the next sum, so that none overflows whatever the numbers */
    c->first = m->exnode_offset / stripe;
    c->n = lors__ec_count(m->logical_length, stripe);
    if (c->first > ec->stripes || c->n > ec->stripes - c->first)
        return;
    /* the mapping ends at a stripe boundary, or at the end of the file */
    int64_t end = m->exnode_offset + m->logical_length;
    if (end % stripe != 0 && end != ec->size)
        return;
    /* its allocation holds every piece */
    int64_t last = c->first + c->n - 1;
    int64_t need = (c->n - 1) * ec->piece + lors__ec_piece_len(ec, last);
    if (m->alloc_offset < 0 || m->alloc_length < need || m->alloc_offset > m->alloc_length - need)
        return;
    if (xnd_meta_get_string(&f->args, "algorithm", &c->alg) == XND_OK &&
        xnd_meta_get_string(&f->args, "digests", &c->digests) == XND_OK) {
        size_t dl = strlen(c->digests);
        if (dl % (size_t)c->n != 0 || dl == 0)
            return;
        c->hexlen = dl / (size_t)c->n;
    } else {
        c->alg = c->digests = NULL;
    }
    c->ok = 1;
}

int64_t lors__ec_alloc_off(const lors__ec_t *ec, const xnd_mapping_t *m, const lors__ec_col_t *c,
                           int64_t s)
{
    return m->alloc_offset + (s - c->first) * ec->piece;
}

/* ---- public ----------------------------------------------------------------------------- */

int lors_ec_info(const xnd_t *x, lors_ec_info_t *info, char *err, size_t errlen)
{
    lors__ec_t ec;
    int present;
    memset(info, 0, sizeof *info);
    int rc = lors__ec_read(x, &ec, &present, err, errlen);
    if (rc != LORS_OK || !present)
        return rc;
    info->present = 1;
    info->k = ec.k;
    info->m = ec.m;
    info->piece_size = ec.piece;
    info->stripe_size = (int64_t)ec.k * ec.piece;
    info->stripes = ec.stripes;
    info->size = ec.size;
    info->version = ec.version;
    info->bound = ec.version != LORS_EC_VERSION_UNBOUND;
    lors__ec_free(&ec);
    return LORS_OK;
}

/* 1 if mapping k counts: no probes given, or its probe found it alive. */
static int counts(const lors_probe_t *probes, size_t k)
{
    return !probes || probes[k].alive;
}

int lors_ec_stripes(const xnd_t *x, const lors_probe_t *probes, lors_ec_stripe_t **out,
                    size_t *n)
{
    lors__ec_t ec;
    int present;
    char err[128];
    *out = NULL;
    *n = 0;
    int rc = lors__ec_read(x, &ec, &present, err, sizeof err);
    if (rc != LORS_OK)
        return rc;
    if (!present)
        return LORS_E_INVAL;
    size_t ns = (size_t)ec.stripes, cols = (size_t)(ec.k + ec.m);
    unsigned char *has = calloc(ns ? ns * cols : 1, 1);
    lors_ec_stripe_t *v = calloc(ns ? ns : 1, sizeof *v);
    if (!has || !v) {
        free(has);
        free(v);
        lors__ec_free(&ec);
        return LORS_E_NOMEM;
    }
    for (size_t k = 0; k < x->nmaps; k++) {
        lors__ec_col_t c;
        lors__ec_col(&ec, x->maps[k], &c);
        if (!c.ok || !counts(probes, k))
            continue;
        for (int64_t s = c.first; s < c.first + c.n; s++)
            has[(size_t)s * cols + (size_t)c.column] = 1;
    }
    for (size_t s = 0; s < ns; s++) {
        v[s].offset = (int64_t)s * ec.k * ec.piece;
        v[s].length = lors__ec_stripe_bytes(&ec, (int64_t)s);
        for (size_t j = 0; j < cols; j++)
            v[s].alive += has[s * cols + j];
        v[s].margin = v[s].alive - ec.k;
    }
    free(has);
    lors__ec_free(&ec);
    *out = v;
    *n = ns;
    return LORS_OK;
}

int lors_ec_parse(const char *s, int *k, int *m)
{
    char *e;
    if (!s || *s < '0' || *s > '9')
        return LORS_E_INVAL;
    long a = strtol(s, &e, 10);
    if (*e != '+' || e[1] < '0' || e[1] > '9')
        return LORS_E_INVAL;
    long b = strtol(e + 1, &e, 10);
    if (*e || a < 1 || a > LORS_EC_MAX_K || b < 1 || b > LORS_EC_MAX_M)
        return LORS_E_INVAL;
    *k = (int)a;
    *m = (int)b;
    return LORS_OK;
}

/* alg over the len bytes at p, as hex into *hex.  LORS_OK or the first failure. */
static int digest(const char *alg, const void *p, size_t len, char **hex)
{
    lors_ck_t ck;
    *hex = NULL;
    int rc = lors_ck_init(&ck, alg, len ? (int64_t)len : 1);
    if (rc == LORS_OK)
        rc = lors_ck_update(&ck, p, len);
    if (rc == LORS_OK)
        rc = lors_ck_finish(&ck, hex);
    lors_ck_free(&ck);
    return rc;
}

int lors__ec_bind(const lors__ec_t *ec, int64_t s, int column, const char *alg, const char *own,
                  char **out)
{
    *out = NULL;
    if (ec->version == LORS_EC_VERSION_UNBOUND) {
        *out = strdup(own);
        return *out ? LORS_OK : LORS_E_NOMEM;
    }
    /* the place in decimal, one space apart, then the piece's own digest: a line anyone can
     * rebuild with printf and sha256sum, and no two places write the same one */
    char line[256];
    int n = snprintf(line, sizeof line, "lns_ec-piece %d %s %d %d %lld %lld %lld %d %s",
                     ec->version, LORS_EC_CODE, ec->k, ec->m, (long long)ec->piece,
                     (long long)ec->size, (long long)s, column, own);
    if (n < 0 || (size_t)n >= sizeof line)
        return LORS_E_DIGEST;
    return digest(alg, line, (size_t)n, out);
}

int lors__ec_bind_all(const lors__ec_t *ec, int64_t first, int column, const char *alg,
                      const char *own, char **out)
{
    int hl = lors_ck_hexlen(alg);
    size_t len = strlen(own), n = hl > 0 ? len / (size_t)hl : 0;
    *out = NULL;
    char one[2 * 64 + 1]; /* the longest OpenSSL digest, EVP_MAX_MD_SIZE bytes, in hex */
    if (hl <= 0 || (size_t)hl >= sizeof one || len % (size_t)hl != 0)
        return LORS_E_DIGEST;
    char *all = malloc(len + 1);
    int rc = all ? LORS_OK : LORS_E_NOMEM;
    for (size_t i = 0; rc == LORS_OK && i < n; i++) {
        char *b = NULL;
        memcpy(one, own + i * (size_t)hl, (size_t)hl);
        one[hl] = '\0';
        rc = lors__ec_bind(ec, first + (int64_t)i, column, alg, one, &b);
        if (rc == LORS_OK && strlen(b) != (size_t)hl)
            rc = LORS_E_DIGEST;
        if (rc == LORS_OK)
            memcpy(all + i * (size_t)hl, b, (size_t)hl);
        free(b);
    }
    if (rc != LORS_OK) {
        free(all);
        return rc;
    }
    all[len] = '\0';
    *out = all;
    return LORS_OK;
}

int lors__ec_piece_check(const lors__ec_t *ec, const lors__ec_col_t *c, int64_t s,
                         const unsigned char *p, int64_t len)
{
    if (!c->alg || !c->digests || c->hexlen == 0)
        return -1;
    char *own = NULL, *h = NULL;
    int ok = digest(c->alg, p, (size_t)len, &own) == LORS_OK &&
             lors__ec_bind(ec, s, c->column, c->alg, own, &h) == LORS_OK;
    if (ok)
        ok = strlen(h) == c->hexlen &&
             memcmp(h, c->digests + (size_t)(s - c->first) * c->hexlen, c->hexlen) == 0;
    else
        ok = -2;
    free(own);
    free(h);
    return ok;
}
