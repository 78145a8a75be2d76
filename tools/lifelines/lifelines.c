/* lifelines.c -- follow blocks through NetLogger event logs and sum them up per depot.
 *
 * Lines are read in any order and from any number of files (client and depot logs).  Client
 * lines (LORS_*) are gathered per fetch id; depot LOAD lines (IBP_LOAD_*) per depot request,
 * a request being an IBP_LOAD_RECV and the READ_START / SEND_END of the same key and client
 * that follow it.  lors_ll_analyze then pairs fetches and requests of equal key (alloc, offset,
 * length) in time order and computes the per-depot table.  The key rule is documented in
 * docs/netlogger.md: the client cannot put an id on the IBP wire, so the allocation id (the
 * public first half of the capability key, which depots log) with the range is the id.
 *
 * The fit of delay = latency + size / throughput: a download's blocks mostly have one size, so
 * a regression of delay on size has nothing to stand on.  LORS_REPLY (the depot's reply header
 * is in) cuts each fetch's delay into its two terms, measured rather than inferred: the wait
 * for the reply is the latency (round trip plus the depot's queueing), the rest moves the
 * bytes.  Medians, because one stalled fetch must not move a depot's figures.  Logs from
 * before LORS_REPLY keep the least-squares fit, but only where the sizes differ enough to
 * carry it (docs/netlogger.md, "The fit").
 */
#include "lifelines.h"
#include "lns_array.h"
#include "lns_err.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

const char *const lors_ll_point_names[LORS_LL_NPOINTS] = {
    "REQ SENT", "DEPOT RECV", "READ START", "CLIENT REPLY", "SEND END", "CLIENT RECV",
    "COMMITTED", "RELEASED",
};
const char *const lors_ll_fit_names[3] = {"-", "ls", "reply"};

struct lors_ll_dreq {
    char alloc[24], client[64];
    int64_t off, len;
    int64_t t[3]; /* RECV, READ_START, SEND_END; -1 none */
    int used;
};

void lors_ll_init(lors_ll_t *ll)
{
    memset(ll, 0, sizeof *ll);
    ll->t0 = -1;
}

void lors_ll_free(lors_ll_t *ll)
{
    free(ll->f);
    free(ll->r);
    free(ll->d);
    lors_ll_init(ll);
}

/* The value of key in the fields "k=v k=v ..." into buf; 1 found, 0 not. */
static int field(const char *fields, const char *key, char *buf, size_t size)
{
    size_t kl = strlen(key);
    for (const char *p = fields; p && *p;) {
        while (*p == ' ')
            p++;
        const char *end = strchr(p, ' ');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n > kl && strncmp(p, key, kl) == 0 && p[kl] == '=') {
            size_t vl = n - kl - 1;
            if (vl >= size)
                vl = size - 1;
            memcpy(buf, p + kl + 1, vl);
            buf[vl] = 0;
            return 1;
        }
        p = end;
    }
    return 0;
}

static int field_i64(const char *fields, const char *key, int64_t *v)
{
    char b[32], *e;
    if (!field(fields, key, b, sizeof b))
        return 0;
    errno = 0;
    long long x = strtoll(b, &e, 10);
    if (errno || *e || e == b)
        return 0;
    *v = x;
    return 1;
}

/* "<sec>.<nsec>" -> ns; -1 if malformed. */
static int64_t parse_time(const char *s, size_t n)
{
    int64_t sec = 0, ns = 0;
    size_t i = 0;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
        sec = sec * 10 + (s[i] - '0');
    if (i == 0 || i >= n || s[i] != '.')
        return -1;
    size_t digits = 0;
    for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++)
        if (digits < 9)
            ns = ns * 10 + (s[i] - '0');
    if (i != n || digits == 0)
        return -1;
    for (; digits < 9; digits++)
        ns *= 10;
    return sec * 1000000000 + ns;
}

static lors_ll_fetch_t *fetch_get(lors_ll_t *ll, const char *id)
{
    /* from the end: a fetch's lines are close together in time */
    for (size_t i = ll->nf; i-- > 0;)
        if (strcmp(ll->f[i].id, id) == 0)
            return &ll->f[i];
    if (lns_grow(&ll->f, &ll->capf, ll->nf + 1, sizeof *ll->f, 64) < 0)
        return NULL;
    lors_ll_fetch_t *f = &ll->f[ll->nf++];
    memset(f, 0, sizeof *f);
    snprintf(f->id, sizeof f->id, "%s", id);
    for (int k = 0; k < LORS_LL_NPOINTS; k++)
        f->t[k] = -1;
    f->t_stop = -1;
    return f;
}

static int client_line(lors_ll_t *ll, const char *ev, int64_t t, const char *fields)
{
    static const char *const names[] = {"LORS_REQ_SENT", "LORS_RECV_END", "LORS_COMMIT",
                                        "LORS_RELEASE", "LORS_REDUNDANT", "LORS_CANCEL",
                                        "LORS_FAIL",     "LORS_REPLY"};
    int kind = -1;
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
        if (strcmp(ev, names[i]) == 0)
            kind = i;
    if (kind < 0)
        return 0;
    char id[64];
    int64_t block;
    if (!field(fields, "fetch", id, sizeof id) || !field_i64(fields, "block", &block))
        return -1;
    lors_ll_fetch_t *f = fetch_get(ll, id);
    if (!f)
        return -1;
    f->block = (uint32_t)block;
    field_i64(fields, "off", &f->off);
    field_i64(fields, "len", &f->len);
    field(fields, "depot", f->depot, sizeof f->depot);
    if (field(fields, "alloc", f->alloc, sizeof f->alloc)) {
        field_i64(fields, "aoff", &f->aoff);
        field_i64(fields, "alen", &f->alen);
    }
    switch (kind) {
    case 0: f->t[LORS_LL_REQ_SENT] = t; break;
    case 1: f->t[LORS_LL_RECV_END] = t; break;
    case 2: f->t[LORS_LL_COMMIT] = t; f->committed = 1; break;
    case 3: f->t[LORS_LL_RELEASE] = t; break;
    case 4: f->redundant = 1; break;
    case 5: f->cancelled = 1; f->t_stop = t; break;
    case 6: f->failed = 1; f->t_stop = t; break;
    default: f->t[LORS_LL_REPLY] = t; ll->replies++; break;
    }
    return 1;
}

static int depot_line(lors_ll_t *ll, const char *ev, int64_t t, const char *fields)
{
    int kind = strcmp(ev, "IBP_LOAD_RECV") == 0        ? 0
               : strcmp(ev, "IBP_LOAD_READ_START") == 0 ? 1
               : strcmp(ev, "IBP_LOAD_SEND_END") == 0   ? 2
                                                        : -1;
    if (kind < 0)
        return 0;
    lors_ll_dreq_t k;
    memset(&k, 0, sizeof k);
    if (!field(fields, "alloc", k.alloc, sizeof k.alloc) || !field_i64(fields, "off", &k.off) ||
        !field_i64(fields, "len", &k.len))
        return -1;
    field(fields, "client", k.client, sizeof k.client);
    if (kind > 0) { /* the latest request of this key and client still without this point */
        for (size_t i = ll->nr; i-- > 0;) {
            lors_ll_dreq_t *r = &ll->r[i];
            if (r->t[kind] < 0 && r->off == k.off && r->len == k.len &&
                strcmp(r->alloc, k.alloc) == 0 && strcmp(r->client, k.client) == 0) {
                r->t[kind] = t;
                return 1;
            }
        }
        return 1; /* its RECV is not in the logs (sampled out, or the log began later) */
    }
    if (lns_grow(&ll->r, &ll->capr, ll->nr + 1, sizeof *ll->r, 64) < 0)
        return -1;
    k.t[0] = t;
    k.t[1] = k.t[2] = -1;
    ll->r[ll->nr++] = k;
    return 1;
}

int lors_ll_add_line(lors_ll_t *ll, const char *line)
{
    char ev[48];
    const char *p = line, *sp;
    ll->lines++;
    /* <EVENT> <host> <sec>.<nsec> fields */
    if (!(sp = strchr(p, ' ')) || (size_t)(sp - p) >= sizeof ev)
        return strncmp(line, "LORS_", 5) == 0 || strncmp(line, "IBP_", 4) == 0 ? (ll->bad++, -1)
                                                                                 : 0;
    memcpy(ev, p, (size_t)(sp - p));
    ev[sp - p] = 0;
    if (strncmp(ev, "LORS_", 5) != 0 && strncmp(ev, "IBP_LOAD_", 9) != 0)
        return 0;
    p = sp + 1;
    if (!(sp = strchr(p, ' ')))
        return ll->bad++, -1;
    p = sp + 1;
    sp = strchr(p, ' ');
    size_t tl = sp ? (size_t)(sp - p) : strlen(p);
    int64_t t = parse_time(p, tl);
    if (t < 0)
        return ll->bad++, -1;
    char fields[1024];
    snprintf(fields, sizeof fields, "%s", sp ? sp + 1 : "");
    fields[strcspn(fields, "\r\n")] = 0;
    int rc = ev[0] == 'L' ? client_line(ll, ev, t, fields) : depot_line(ll, ev, t, fields);
    if (rc < 0)
        ll->bad++;
    else if (rc > 0)
        ll->used++;
    return rc;
}

int lors_ll_add_file(lors_ll_t *ll, const char *path, char *err, size_t errlen)
{
    FILE *fp = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (!fp) {
        lns_err_set(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char line[2048];
    while (fgets(line, sizeof line, fp))
        lors_ll_add_line(ll, line);
    int bad = ferror(fp);
    if (fp != stdin)
        fclose(fp);
    if (bad) {
        lns_err_set(err, errlen, "%s: read error", path);
        return -1;
    }
    return 0;
}

static int by_req_time(const void *a, const void *b)
{
    const lors_ll_fetch_t *x = a, *y = b;
    return (x->t[0] > y->t[0]) - (x->t[0] < y->t[0]);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const lors_ll_depot_t *)a)->name, ((const lors_ll_depot_t *)b)->name);
}

static lors_ll_depot_t *depot_get(lors_ll_t *ll, const char *name, size_t cap)
{
    for (size_t i = 0; i < ll->nd; i++)
        if (strcmp(ll->d[i].name, name) == 0)
            return &ll->d[i];
    if (ll->nd == cap)
        return NULL;
    lors_ll_depot_t *d = &ll->d[ll->nd++];
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", name);
    return d;
}

/* Does fetch f of depot d have the points the fits need: its request, its last byte, and a
 * size (the LOAD's, alen: what crossed the wire)? */
static int fit_sample(const lors_ll_fetch_t *f, const lors_ll_depot_t *d)
{
    return strcmp(f->depot, d->name) == 0 && f->t[LORS_LL_REQ_SENT] >= 0 &&
           f->t[LORS_LL_RECV_END] >= 0 && f->alen > 0;
}

static int by_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n), n > 0; sorts v. */
static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, by_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* From LORS_REPLY: latency = median of (REPLY - REQ_SENT), throughput = 1 / median of the
 * time per byte (RECV_END - REPLY) / size, which is size / median (RECV_END - REPLY) when the
 * sizes are equal and stays meaningful when they are not.  a and b hold nf doubles each.
 * 1 if d got a fit. */
static int fit_reply(const lors_ll_t *ll, lors_ll_depot_t *d, double *a, double *b)
{
    size_t n = 0;
    for (size_t i = 0; i < ll->nf; i++) {
        const lors_ll_fetch_t *f = &ll->f[i];
        if (!fit_sample(f, d) || f->t[LORS_LL_REPLY] < 0)
            continue;
        a[n] = (double)(f->t[LORS_LL_REPLY] - f->t[LORS_LL_REQ_SENT]) / 1e9;
        b[n] = (double)(f->t[LORS_LL_RECV_END] - f->t[LORS_LL_REPLY]) / 1e9 / (double)f->alen;
        n++;
    }
    if (n == 0)
        return 0;
    double lat = median(a, n), per_byte = median(b, n);
    if (lat < 0 || per_byte <= 0) /* clocks stepped, or bytes faster than the clock ticks */
        return 0;
    d->fit = LORS_LL_FIT_REPLY;
    d->fit_n = (int)n;
    d->latency_s = lat;
    d->fit_mbps = 1.0 / per_byte / 1e6;
    return 1;
}

/* Least squares of delay = latency + size / throughput (delay REQ_SENT -> RECV_END), centred
 * (sums of deviations) so that sizes of a few MB lose no precision.  Taken only when the data
 * carry it: the sizes span a factor of 2 or more (a 10% spread, as between a file's last block
 * and the others, leaves the slope to the noise of the delays), the slope is positive, and,
 * with more than 2 fetches, at least twice its standard error. */
static void fit_ls(const lors_ll_t *ll, lors_ll_depot_t *d)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0, xmin = 0, xmax = 0;
    int n = 0;
    for (int pass = 0; pass < 2; pass++) {
        double mx = n ? sx / n : 0, my = n ? sy / n : 0;
        for (size_t i = 0; i < ll->nf; i++) {
            const lors_ll_fetch_t *f = &ll->f[i];
            if (!fit_sample(f, d))
                continue;
            double x = (double)f->alen;
            double y = (double)(f->t[LORS_LL_RECV_END] - f->t[LORS_LL_REQ_SENT]) / 1e9;
            if (pass == 0) {
                if (n == 0 || x < xmin)
                    xmin = x;
                if (n == 0 || x > xmax)
                    xmax = x;
                sx += x;
                sy += y;
                n++;
            } else {
                sxx += (x - mx) * (x - mx);
                sxy += (x - mx) * (y - my);
                syy += (y - my) * (y - my);
            }
        }
    }
    d->fit_n = n;
    if (n < 2 || xmax < 2 * xmin || sxx <= 0 || sxy <= 0)
        return;
    double slope = sxy / sxx, rss = syy - slope * sxy;
    /* slope / stderr >= 2, stderr^2 = rss / (n - 2) / sxx; no division, rss may be 0 */
    if (n > 2 && slope * slope * sxx * (n - 2) < 4 * rss)
        return;
    d->latency_s = sy / n - slope * sx / n;
    d->fit_mbps = 1.0 / slope / 1e6;
    d->fit = LORS_LL_FIT_LS;
}

int lors_ll_analyze(lors_ll_t *ll)
{
    qsort(ll->f, ll->nf, sizeof *ll->f, by_req_time);
    /* pair: the n-th fetch of a key (by REQ_SENT) with the n-th depot request of that key
     * (in log order, which is time order within one depot's log) */
    for (size_t i = 0; i < ll->nr; i++)
        ll->r[i].used = 0;
    ll->matched = ll->released = ll->complete = 0;
    for (size_t i = 0; i < ll->nf; i++) {
        lors_ll_fetch_t *f = &ll->f[i];
        if (f->alloc[0] && f->t[LORS_LL_REQ_SENT] >= 0)
            for (size_t j = 0; j < ll->nr; j++) {
                lors_ll_dreq_t *r = &ll->r[j];
                if (!r->used && r->off == f->aoff && r->len == f->alen &&
                    strcmp(r->alloc, f->alloc) == 0) {
                    r->used = 1;
                    f->t[LORS_LL_DEPOT_RECV] = r->t[0];
                    f->t[LORS_LL_READ_START] = r->t[1];
                    f->t[LORS_LL_SEND_END] = r->t[2];
                    ll->matched++;
                    break;
                }
            }
        if (f->t[LORS_LL_RELEASE] >= 0) {
            ll->released++;
            int all = 1;
            for (int k = 0; k < LORS_LL_NPOINTS; k++)
                all &= f->t[k] >= 0 || (k == LORS_LL_REPLY && ll->replies == 0);
            ll->complete += (size_t)all;
        }
        for (int k = 0; k <= LORS_LL_NPOINTS; k++) {
            int64_t t = k < LORS_LL_NPOINTS ? f->t[k] : f->t_stop;
            if (t < 0)
                continue;
            if (ll->t0 < 0 || t < ll->t0)
                ll->t0 = t;
            if (t > ll->t1)
                ll->t1 = t;
        }
    }

    free(ll->d);
    ll->d = calloc(ll->nf ? ll->nf : 1, sizeof *ll->d);
    ll->nd = 0;
    double *fa = malloc(2 * (ll->nf ? ll->nf : 1) * sizeof *fa); /* fit_reply's samples */
    if (!ll->d || !fa) {
        free(fa);
        return -1;
    }
    for (size_t i = 0; i < ll->nf; i++) {
        const lors_ll_fetch_t *f = &ll->f[i];
        lors_ll_depot_t *d = depot_get(ll, f->depot[0] ? f->depot : "-", ll->nf);
        d->fetches += f->t[LORS_LL_REQ_SENT] >= 0;
        d->failures += (uint64_t)f->failed;
        d->wasted += (uint64_t)f->cancelled;
        d->redundant += (uint64_t)f->redundant;
        if (f->committed) {
            d->blocks++;
            d->bytes += (uint64_t)f->len;
            d->redundant_won += (uint64_t)f->redundant;
        }
    }
    for (size_t k = 0; k < ll->nd; k++) {
        lors_ll_depot_t *d = &ll->d[k];
        int64_t first = -1, last = -1;
        for (size_t i = 0; i < ll->nf; i++) {
            const lors_ll_fetch_t *f = &ll->f[i];
            if (!f->committed || strcmp(f->depot, d->name) != 0 || f->t[LORS_LL_REQ_SENT] < 0 ||
                f->t[LORS_LL_RECV_END] < 0)
                continue;
            if (first < 0 || f->t[LORS_LL_REQ_SENT] < first)
                first = f->t[LORS_LL_REQ_SENT];
            if (f->t[LORS_LL_RECV_END] > last)
                last = f->t[LORS_LL_RECV_END];
        }
        if (first >= 0 && last > first)
            d->mbps = (double)d->bytes / ((double)(last - first) / 1e9) / 1e6;
        if (!fit_reply(ll, d, fa, fa + ll->nf))
            fit_ls(ll, d);
        d->fit_ok = d->fit != LORS_LL_FIT_NONE;
    }
    free(fa);
    qsort(ll->d, ll->nd, sizeof *ll->d, by_name);
    return 0;
}

void lors_ll_print_table(const lors_ll_t *ll, FILE *out)
{
    fprintf(out, "%-24s %6s %7s %12s %9s %6s %8s %7s %6s %5s %11s %9s %5s\n", "depot",
            "blocks", "fetches", "bytes", "MB/s", "fails", "red", "red_won", "wasted", "fit",
            "latency_ms", "fit_MB/s", "fit_n");
    for (size_t i = 0; i < ll->nd; i++) {
        const lors_ll_depot_t *d = &ll->d[i];
        char lat[32] = "-", fm[32] = "-";
        if (d->fit_ok) {
            snprintf(lat, sizeof lat, "%.3f", d->latency_s * 1e3);
            snprintf(fm, sizeof fm, "%.2f", d->fit_mbps);
        }
        fprintf(out, "%-24s %6" PRIu64 " %7" PRIu64 " %12" PRIu64 " %9.2f %6" PRIu64 " %8" PRIu64
                     " %7" PRIu64 " %6" PRIu64 " %5s %11s %9s %5d\n",
                d->name, d->blocks, d->fetches, d->bytes, d->mbps, d->failures, d->redundant,
                d->redundant_won, d->wasted, lors_ll_fit_names[d->fit], lat, fm, d->fit_n);
    }
    fprintf(out, "blocks released %zu, with every point %zu; fetches %zu, matched to depot "
                 "lines %zu; lines %zu, used %zu, malformed %zu\n",
            ll->released, ll->complete, ll->nf, ll->matched, ll->lines, ll->used, ll->bad);
}

void lors_ll_print_json(const lors_ll_t *ll, FILE *out)
{
    fprintf(out, "{\"released\": %zu, \"complete\": %zu, \"fetches\": %zu, \"matched\": %zu, "
                 "\"malformed\": %zu, \"depots\": [",
            ll->released, ll->complete, ll->nf, ll->matched, ll->bad);
    for (size_t i = 0; i < ll->nd; i++) {
        const lors_ll_depot_t *d = &ll->d[i];
        fprintf(out,
                "%s\n  {\"depot\": \"%s\", \"fetches\": %" PRIu64 ", \"blocks\": %" PRIu64
                ", \"bytes\": %" PRIu64 ", \"mbps\": %.6f, \"failures\": %" PRIu64
                ", \"redundant\": %" PRIu64 ", \"redundant_won\": %" PRIu64
                ", \"wasted\": %" PRIu64 ", \"fit_n\": %d, ",
                i ? "," : "", d->name, d->fetches, d->blocks, d->bytes, d->mbps, d->failures,
                d->redundant, d->redundant_won, d->wasted, d->fit_n);
        if (d->fit_ok)
            fprintf(out, "\"fit\": \"%s\", \"latency_ms\": %.6f, \"fit_mbps\": %.6f}",
                    lors_ll_fit_names[d->fit], d->latency_s * 1e3, d->fit_mbps);
        else
            fprintf(out, "\"fit\": null, \"latency_ms\": null, \"fit_mbps\": null}");
    }
    fprintf(out, "\n]}\n");
}
