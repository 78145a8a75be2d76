/* lors_share_engine.c -- a read-only share of a network file: an exNode of alias read caps.
 *
 * Each mapping holding bytes of the range gets an alias (ACCRE 1.4's alias capabilities,
 * libibp's ibp_alias_allocate) onto exactly those bytes of its allocation; the shared exNode
 * lists the aliases' READ capabilities only, so whoever holds it can read the range and
 * nothing else, and the owner, who keeps the aliases' MANAGE capabilities and the
 * allocations', revokes them without touching the data.  Reading through an alias counts
 * from its first byte, so a shared mapping's allocation offset is 0.
 *
 * The rule of issue 12 holds: a share that fails or is stopped revokes every alias it made
 * before it returns, so no capability is left that no file lists.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lors.h"
#include "lors_e2e_int.h"
#include "lns_time.h"

void lors_share_opts_init(lors_share_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->length = -1;
    o->timeout_s = 30;
}

void lors_share_report_free(lors_share_report_t *r)
{
    if (!r)
        return;
    free(r->keys);
    free(r->skipped);
    r->keys = NULL;
    r->skipped = NULL;
    r->nkeys = r->nskipped = 0;
}

static ibp_client_t *share_client(int timeout_s)
{
    ibp_client_opts_t co;
    ibp_client_opts_init(&co);
    if (timeout_s > 0) {
        co.io_timeout_ms = timeout_s * 1000;
        co.connect_timeout_ms = timeout_s < 5 ? timeout_s * 1000 : 5000;
        co.server_timeout_s = timeout_s;
    }
    return ibp_client_new(&co);
}

static void depot_of(const char *cap, char *buf, size_t size)
{
    ibp_cap_t c;
    if (cap && ibp_cap_parse(cap, &c) == IBP_OK)
        snprintf(buf, size, "%s:%d", c.host, c.port);
    else
        snprintf(buf, size, "-");
}

static int only_checksum(const xnd_func_t *f)
{
    return f && strcmp(f->name, LORS_CHECKSUM_FUNC) == 0 && f->nsubs == 0;
}

static int count_all(const xnd_mapping_t *m, void *arg)
{
    (void)m;
    (void)arg;
    return 1;
}

/* 1 if every byte of [0, len) of s is held by a mapping. */
static int covered(const xnd_t *s, int64_t len)
{
    xnd_range_t *r = NULL;
    size_t n = 0;
    int ok = 1;
    if (len == 0)
        return 1;
    if (xnd_coverage(s, count_all, NULL, &r, &n) != XND_OK)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (r[i].count == 0 && r[i].offset < len)
            ok = 0;
    free(r);
    return ok && n > 0;
}

static int add_skip(lors_share_report_t *r, int mapping, int err, const char *cap,
                    const char *why)
{
    lors_share_skip_t *s = realloc(r->skipped, (r->nskipped + 1) * sizeof *s);
    if (!s)
        return LORS_E_NOMEM;
    r->skipped = s;
    s += r->nskipped++;
    memset(s, 0, sizeof *s);
    s->mapping = mapping;
    s->ibp_err = err;
    depot_of(cap, s->depot, sizeof s->depot);
    snprintf(s->why, sizeof s->why, "%s", why ? why : ibp_strerror(err));
    return LORS_OK;
}

/* The depots that could not make aliases, for the error line: "a:1, b:2". */
static void skipped_depots(const lors_share_report_t *r, char *buf, size_t size)
{
    size_t k = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < r->nskipped && k + 1 < size; i++) {
        int seen = 0;
        for (size_t j = 0; j < i; j++)
            seen |= strcmp(r->skipped[j].depot, r->skipped[i].depot) == 0 &&
                    strcmp(r->skipped[j].why, r->skipped[i].why) == 0;
        if (!seen)
            k += (size_t)snprintf(buf + k, size - k, "%s%s (%s)", k ? ", " : "",
                                  r->skipped[i].depot, r->skipped[i].why);
    }
}

/* Alias bytes [s, t) of the file held by mapping m; the new mapping into *out. */
static int share_mapping(ibp_client_t *c, const lors_share_opts_t *o, const xnd_mapping_t *m,
                         int64_t s, int64_t t, int64_t base, xnd_mapping_t **out,
                         lors_share_key_t *key, int *ibp_rc, const char **why)
{
    int whole = s == m->exnode_offset && t == m->exnode_offset + m->logical_length;
    uint64_t aoff, alen;
    ibp_caps_t caps;
    ibp_alias_probe_t p;
    xnd_mapping_t *n;
    int rc;

    *out = NULL;
    *why = NULL;
    *ibp_rc = 0;
    if (!m->cap[XND_MANAGE]) {
        *why = "no manage capability";
        return 0;
    }
    if (m->func && !whole && !only_checksum(m->func)) {
        *why = "an end-to-end function, cut by the range";
        return 0;
    }
    if (m->func && whole) { /* the stored bytes as they are: the allocation from 0 */
        aoff = 0;
        alen = (uint64_t)m->alloc_length;
    } else {
        aoff = (uint64_t)(m->alloc_offset + (s - m->exnode_offset));
        alen = (uint64_t)(t - s);
    }
    rc = ibp_alias_allocate(c, m->cap[XND_MANAGE], aoff, alen, o->duration_s, &caps);
    if (rc == IBP_E_LONG_DURATION && o->duration_s > 0) /* the allocation ends sooner */
        rc = ibp_alias_allocate(c, m->cap[XND_MANAGE], aoff, alen, 0, &caps);
    if (rc != IBP_OK) {
        *ibp_rc = rc;
        if (rc == IBP_E_INVALID_CMD)
            *why = "no alias capabilities on this depot";
        return 0;
    }
    snprintf(key->alias, sizeof key->alias, "%s", caps.manage);
    snprintf(key->master, sizeof key->master, "%s", m->cap[XND_MANAGE]);
    if ((rc = ibp_alias_probe(c, caps.manage, &p)) != IBP_OK)
        p.seconds_left = -1;
    if (!(n = xnd_mapping_copy(m)))
        return -1;
    n->exnode_offset = s - base;
    n->logical_length = t - s;
    if (!(m->func && whole)) {
        n->alloc_offset = 0;
        n->alloc_length = t - s;
    }
    if (m->func && !whole) {
        /* the digests are of blocks this piece cuts; frames keep the mark that makes the
         * original tools refuse them (lors_e2e.c) */
        xnd_func_t *mark = n->e2e_blocksize ? xnd_func_new(LORS_E2E_FUNC) : NULL;
        if (n->e2e_blocksize && !mark) {
            xnd_mapping_free(n);
            return -1;
        }
        xnd_mapping_set_func(n, mark);
    }
    if (xnd_mapping_set_cap(n, XND_READ, caps.read) != XND_OK ||
        xnd_mapping_set_cap(n, XND_WRITE, NULL) != XND_OK ||
        xnd_mapping_set_cap(n, XND_MANAGE, NULL) != XND_OK) {
        xnd_mapping_free(n);
        return -1;
    }
    int64_t now = lns_now_s();
    xnd_mapping_set_time(n, 0, now);
    if (p.seconds_left >= 0)
        xnd_mapping_set_time(n, 1, now + p.seconds_left);
    *out = n;
    return 1;
}

int lors_share(const lors_share_opts_t *o, const xnd_t *x, xnd_t **shared,
               lors_share_report_t *report)
{
    lors_share_report_t dummy;
    lors_share_report_t *r = report ? report : &dummy;
    int64_t size, a, b;
    ibp_client_t *c = NULL;
    xnd_t *s = NULL;
    lors_e2e_info_t e2e;
    int rc = LORS_OK;

    memset(r, 0, sizeof *r);
    if (!o || !x || !shared)
        return LORS_E_INVAL;
    *shared = NULL;
    size = xnd_size(x);
    if (size < 0)
        return snprintf(r->error, sizeof r->error, "the exNode has no size"), LORS_E_EXNODE;
    a = o->offset;
    b = o->length < 0 ? size : a + o->length;
    if (a < 0 || a > size || b < a || b > size) {
        snprintf(r->error, sizeof r->error, "range %lld+%lld is not inside the file (%lld bytes)",
                 (long long)a, (long long)(b - a), (long long)size);
        return LORS_E_INVAL;
    }
    if (lors_e2e_info(x, &e2e, r->error, sizeof r->error) != LORS_OK)
        return LORS_E_EXNODE;
    if (e2e.present && (a != 0 || b != size)) {
        snprintf(r->error, sizeof r->error,
                 "a transformed file (%s) is shared whole only: its frames do not follow the "
                 "file's bytes", e2e.chain);
        return LORS_E_INVAL;
    }
    if (!(s = xnd_new()) || !(c = share_client(o->timeout_s)) ||
        xnd_meta_list_copy(&s->meta, &x->meta) != XND_OK || xnd_set_size(s, b - a) != XND_OK) {
        rc = LORS_E_NOMEM;
        goto fail;
    }
    for (size_t i = 0; i < x->nmaps; i++) {
        const xnd_mapping_t *m = x->maps[i];
        int64_t lo = m->exnode_offset > a ? m->exnode_offset : a;
        int64_t hi = m->exnode_offset + m->logical_length < b ? m->exnode_offset + m->logical_length
                                                              : b;
        xnd_mapping_t *n;
        const char *why;
        int err, got;
        if (lo >= hi)
            continue;
        if (o->stop && *o->stop) {
            snprintf(r->error, sizeof r->error, "stopped");
            rc = LORS_E_STOPPED;
            goto fail;
        }
        lors_share_key_t *k = realloc(r->keys, (r->nkeys + 1) * sizeof *k);
        if (!k) {
            rc = LORS_E_NOMEM;
            goto fail;
        }
        r->keys = k;
        got = share_mapping(c, o, m, lo, hi, a, &n, &r->keys[r->nkeys], &err, &why);
        if (got < 0 || (got == 0 && add_skip(r, (int)i, err, m->cap[XND_MANAGE] ? m->cap[XND_MANAGE]
                                                                  : m->cap[XND_READ], why) < 0)) {
            rc = LORS_E_NOMEM;
            goto fail;
        }
        if (got == 0)
            continue;
        r->nkeys++; /* made: from here on the alias is revoked if the call fails */
        if (xnd_append(s, n) != XND_OK) {
            rc = LORS_E_NOMEM;
            goto fail;
        }
    }
    if (!covered(s, b - a)) {
        char deps[400];
        skipped_depots(r, deps, sizeof deps);
        snprintf(r->error, sizeof r->error, "some bytes could not be shared: %s",
                 deps[0] ? deps : "no mapping holds them");
        rc = LORS_E_NO_REPLICA;
        goto fail;
    }
    ibp_client_free(c);
    *shared = s;
    if (!report)
        lors_share_report_free(r);
    return LORS_OK;

fail:
    if (r->nkeys) {
        int *rcs = calloc(r->nkeys, sizeof *rcs);
        if (rcs)
            lors_share_revoke(r->keys, r->nkeys, o->timeout_s, rcs);
        for (size_t i = 0; i < r->nkeys; i++)
            if (rcs && (rcs[i] == IBP_OK || rcs[i] == IBP_E_CAP_NOT_FOUND))
                r->revoked++;
            else
                r->unrevoked++;
        free(rcs);
    }
    free(r->keys);
    r->keys = NULL;
    r->nkeys = 0;
    if (!r->error[0])
        snprintf(r->error, sizeof r->error, "%s", lors_strerror(rc));
    ibp_client_free(c);
    xnd_free(s);
    if (!report)
        lors_share_report_free(r);
    return rc;
}

int lors_share_revoke(const lors_share_key_t *keys, size_t n, int timeout_s, int *rc)
{
    ibp_client_t *c = share_client(timeout_s);
    int all = LORS_OK;
    if (!c)
        return LORS_E_NOMEM;
    for (size_t i = 0; i < n; i++) {
        rc[i] = ibp_alias_revoke(c, keys[i].alias, keys[i].master);
        if (rc[i] != IBP_OK && rc[i] != IBP_E_CAP_NOT_FOUND)
            all = LORS_E_PARTIAL;
    }
    ibp_client_free(c);
    return all;
}
