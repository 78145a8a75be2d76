/* lors_probe.c -- is each mapping of an exNode still there?  And the logical view built on it.
 *
 * One question per mapping, all at once on a few threads: PROBE with the manage capability
 * (which also tells how long the allocation lives and how many bytes it holds), else a
 * 1-byte LOAD of the mapping's last byte with the read capability (if that byte is there, the
 * ones before it are: allocations only grow by appending), else, for a mapping of no bytes,
 * the depot's STATUS.  A mapping whose end has passed is dead without asking: the depot has
 * reclaimed it, or will at any moment.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lns_err.h"
#include "lns_time.h"
#include "lors_ec_int.h"
#include "lors_func_int.h"
#include "lors_manage_int.h"

typedef struct probe_run {
    const xnd_t *x;
    ibp_client_t *ibp;
    lors_probe_t *out;
    int64_t now;
    const lors__ec_t *ec; /* an erasure-coded file: its columns hold pieces, not the range */
} probe_run_t;

/* The bytes mapping m's allocation must hold: its range, for a column of an erasure-coded
 * file its pieces, for a 1.3.1 chain everything it stored; for a function lns does not
 * understand the allocation as the exNode sizes it (its range means nothing known: an lns_ec
 * column that does not fit the file holds pieces, not its range, and must not look
 * incomplete, hence dead, for it). */
static uint64_t stored_need(const probe_run_t *r, const xnd_mapping_t *m)
{
    lors__ec_col_t c;
    lors__func_t f;
    lors__func_read(r->x, r->ec, m, &f, NULL, 0);
    if (f.kind == LORS_FUNC_LORS131 || f.kind == LORS_FUNC_UNKNOWN)
        return (uint64_t)m->alloc_length;
    if (r->ec) {
        lors__ec_col(r->ec, m, &c);
        if (c.ok)
            return (uint64_t)lors__ec_alloc_off(r->ec, m, &c, c.first + c.n - 1) +
                   (uint64_t)lors__ec_piece_len(r->ec, c.first + c.n - 1);
    }
    return (uint64_t)m->alloc_offset + (uint64_t)m->logical_length;
}

static void dead(lors_probe_t *p, int err, const char *why)
{
    p->alive = 0;
    p->ibp_err = err;
    lns_err_set(p->why, sizeof p->why, "%s", why);
}

static void probe_one(void *arg, size_t i)
{
    probe_run_t *r = arg;
    const xnd_mapping_t *m = r->x->maps[i];
    lors_probe_t *p = &r->out[i];
    int rc;

    p->mapping = (int)i;
    p->expires = m->end.epoch;
    if (lors__map_depot(m, &p->depot) < 0) {
        dead(p, 0, "no usable capability");
        return;
    }
    if (m->end.epoch != XND_TIME_UNKNOWN && m->end.epoch <= r->now) {
        dead(p, 0, "expired");
        return;
    }
    if (m->cap[XND_MANAGE]) {
        rc = ibp_probe(r->ibp, m->cap[XND_MANAGE], &p->probe);
        if (rc != IBP_OK) {
            dead(p, rc, lors__why(rc));
            return;
        }
        p->probed = 1;
        p->expires = p->probe.seconds_left >= 0 ? lns_now_s() + p->probe.seconds_left
                                                : XND_TIME_UNKNOWN;
        uint64_t need = stored_need(r, m);
        if (p->probe.cur_size < need) {
            char why[96];
            snprintf(why, sizeof why, "incomplete: the allocation holds %llu of %llu bytes",
                     (unsigned long long)p->probe.cur_size, (unsigned long long)need);
            dead(p, 0, why);
            return;
        }
    } else if (m->cap[XND_READ] && m->logical_length > 0) {
        unsigned char b;
        rc = ibp_load(r->ibp, m->cap[XND_READ], stored_need(r, m) - 1, 1, &b);
        if (rc != IBP_OK) {
            dead(p, rc, rc == IBP_E_INVALID_PARAMETER ? "incomplete: bytes missing"
                                                      : lors__why(rc));
            return;
        }
    } else {
        ibp_depot_status_t st;
        rc = ibp_status(r->ibp, p->depot.host, p->depot.port, p->depot.rid[0] ? p->depot.rid : NULL,
                        NULL, &st);
        if (rc != IBP_OK) {
            dead(p, rc, lors__why(rc));
            return;
        }
    }
    p->alive = 1;
}

int lors_probe_all(const xnd_t *x, int threads, int timeout_s, lors_probe_t **out)
{
    if (!out)
        return LORS_E_INVAL;
    *out = NULL;
    if (!x)
        return LORS_E_INVAL;
    lors_probe_t *pr = calloc(x->nmaps ? x->nmaps : 1, sizeof *pr);
    if (!pr)
        return LORS_E_NOMEM;
    probe_run_t r = {x, NULL, pr, lns_now_s(), NULL};
    lors__ec_t ec;
    if (lors__ec_read_valid(x, &ec))
        r.ec = &ec;
    if (x->nmaps > 0) {
        if (threads < 1)
            threads = 1;
        r.ibp = lors__client(timeout_s, threads);
        if (!r.ibp) {
            if (r.ec)
                lors__ec_free(&ec);
            free(pr);
            return LORS_E_NOMEM;
        }
        lors__parallel(x->nmaps, threads, probe_one, &r);
        ibp_client_free(r.ibp);
    }
    if (r.ec)
        lors__ec_free(&ec);
    *out = pr;
    return LORS_OK;
}

/* ---- the logical view ------------------------------------------------------------------ */

typedef struct live_arg {
    lors__mapidx_t mi;
    const lors_probe_t *probes;
    size_t *depot; /* per mapping (document order): its depot's number */
    unsigned char *unread; /* per mapping: 1 if lns does not read its function */
} live_arg_t;

static int count_live(const xnd_mapping_t *m, void *arg)
{
    live_arg_t *a = arg;
    size_t i = lors__mapidx_find(&a->mi, m);
    return i != (size_t)-1 && (!a->probes || a->probes[i].alive) && !a->unread[i];
}

static size_t depot_of(const xnd_mapping_t *m, void *arg)
{
    live_arg_t *a = arg;
    return a->depot[lors__mapidx_find(&a->mi, m)];
}

typedef struct depot_key {
    char name[IBP_MAX_HOST + 16]; /* "host:port"; "" when no capability parses */
    size_t i;
} depot_key_t;

static int cmp_key(const void *a, const void *b)
{
    return strcmp(((const depot_key_t *)a)->name, ((const depot_key_t *)b)->name);
}

/* Number the depots of x's mappings (host and port: two resources of one depot are one
 * place to lose); a mapping whose depot is unknown is a number of its own. */
static int number_depots(const xnd_t *x, size_t *depot)
{
    depot_key_t *k = malloc((x->nmaps ? x->nmaps : 1) * sizeof *k);
    if (!k)
        return LORS_E_NOMEM;
    for (size_t i = 0; i < x->nmaps; i++) {
        lors_depot_t d;
        k[i].i = i;
        k[i].name[0] = '\0';
        if (lors__map_depot(x->maps[i], &d) == 0)
            snprintf(k[i].name, sizeof k[i].name, "%s:%d", d.host, d.port);
    }
    qsort(k, x->nmaps, sizeof *k, cmp_key);
    size_t g = 0;
    for (size_t j = 0; j < x->nmaps; j++) {
        if (j > 0 && (k[j].name[0] == '\0' || strcmp(k[j].name, k[j - 1].name) != 0))
            g++;
        depot[k[j].i] = g;
    }
    free(k);
    return LORS_OK;
}

int lors_ls_logical(const xnd_t *x, const lors_probe_t *probes, xnd_range_t **out, size_t *n)
{
    if (!out || !n)
        return LORS_E_INVAL;
    *out = NULL;
    *n = 0;
    if (!x)
        return LORS_E_INVAL;
    live_arg_t a = {.probes = probes};
    int rc;
    a.depot = malloc((x->nmaps ? x->nmaps : 1) * sizeof *a.depot);
    a.unread = malloc(x->nmaps ? x->nmaps : 1);
    if (!a.depot || !a.unread) {
        free(a.depot);
        free(a.unread);
        return LORS_E_NOMEM;
    }
    lors__ec_t ec;
    int ec_present = lors__ec_read_valid(x, &ec);
    for (size_t i = 0; i < x->nmaps; i++) {
        lors__func_t f;
        lors__func_read(x, ec_present ? &ec : NULL, x->maps[i], &f, NULL, 0);
        a.unread[i] = f.kind == LORS_FUNC_UNKNOWN;
    }
    if (ec_present)
        lors__ec_free(&ec);
    if ((rc = number_depots(x, a.depot)) != LORS_OK ||
        (rc = lors__mapidx_build(x, &a.mi)) != LORS_OK) {
        free(a.depot);
        free(a.unread);
        return rc;
    }
    rc = xnd_coverage_by(x, count_live, depot_of, &a, out, n);
    lors__mapidx_free(&a.mi);
    free(a.depot);
    free(a.unread);
    if (rc == XND_OK)
        return LORS_OK;
    return rc == XND_E_NOMEM ? LORS_E_NOMEM : LORS_E_EXNODE;
}
