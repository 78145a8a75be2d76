/* lbone_srv_page.c -- GET /: the status page, plain HTML for people (no JavaScript).
 *
 * Every depot with its state, free space, location and when it was last heard, sorted by
 * host and port.  All text that came from a depot (host, place, contact, probe error) goes
 * through lns_buf_html, and the server sends a Content-Security-Policy that forbids
 * scripts, so a registration cannot turn the page into an attack on its readers.
 */
#include "lbone_srv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "ibp.h"
#include "lns_time.h"
#include "lns_version.h"

static int cmp_host(const void *a, const void *b)
{
    const lbone_depot_t *x = *(lbone_depot_t *const *)a, *y = *(lbone_depot_t *const *)b;
    int c = strcasecmp(x->host, y->host);
    if (c)
        return c;
    if (x->port != y->port)
        return x->port < y->port ? -1 : 1;
    return strcmp(x->rid, y->rid);
}

static void human(lns_buf_t *b, uint64_t v)
{
    static const char units[] = "KMGTPE";
    double x = (double)v;
    int u = -1;
    while (x >= 1024 && u < 5) {
        x /= 1024;
        u++;
    }
    if (u < 0)
        lns_buf_printf(b, "%llu B", (unsigned long long)v);
    else
        lns_buf_printf(b, "%.1f %ciB", x, units[u]);
}

/* Ends the cell before it and writes a "free / total" cell (hard or soft storage). */
static void free_of_total(lns_buf_t *b, uint64_t avail, uint64_t total)
{
    lns_buf_puts(b, "</td><td class=\"num\">");
    human(b, avail);
    lns_buf_puts(b, " / ");
    human(b, total);
}

static void ago(lns_buf_t *b, int64_t secs)
{
    if (secs < 0)
        secs = 0;
    if (secs < 120)
        lns_buf_printf(b, "%llds ago", (long long)secs);
    else if (secs < 7200)
        lns_buf_printf(b, "%lldm ago", (long long)(secs / 60));
    else if (secs < 172800)
        lns_buf_printf(b, "%lldh ago", (long long)(secs / 3600));
    else
        lns_buf_printf(b, "%lldd ago", (long long)(secs / 86400));
}

static const char head[] =
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
    "<title>L-Bone depot registry</title>\n"
    "<style>\n"
    "body{font-family:sans-serif;margin:1.5em;color:#222}\n"
    "table{border-collapse:collapse;font-size:0.9em}\n"
    "th,td{border:1px solid #ccc;padding:0.25em 0.6em;text-align:left;vertical-align:top}\n"
    "th{background:#eee}\n"
    "td.num{text-align:right;white-space:nowrap}\n"
    ".up{color:#070;font-weight:bold}.down,.unreachable{color:#b00;font-weight:bold}"
    ".probing{color:#a60}\n"
    "</style></head><body>\n"
    "<h1>L-Bone depot registry</h1>\n";

int lbone_page_status(lbone_srv_t *s, lns_buf_t *out)
{
    int64_t now = lns_now_s();
    int counts[4] = {0, 0, 0, 0};
    char when[64];
    time_t t = (time_t)now;
    struct tm tm;

    lns_buf_puts(out, head);
    pthread_rwlock_rdlock(&s->reg.lock);
    lbone_depot_t **v = s->reg.n ? malloc(s->reg.n * sizeof *v) : NULL;
    size_t n = v ? s->reg.n : 0;
    if (n)
        memcpy(v, s->reg.v, n * sizeof *v);
    if (n > 1)
        qsort(v, n, sizeof *v, cmp_host);
    for (size_t i = 0; i < n; i++)
        counts[lbone_srv_status(s, v[i], now * 1000)]++;
    gmtime_r(&t, &tm);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    lns_buf_printf(out,
                     "<p>%zu depot%s registered: %d up, %d down, %d unreachable, %d being "
                     "probed. lns %s, %s. Heartbeat every %d s; down after %d s; dropped "
                     "after %d s.</p>\n",
                     n, n == 1 ? "" : "s", counts[LBONE_ST_UP], counts[LBONE_ST_DOWN],
                     counts[LBONE_ST_UNREACHABLE], counts[LBONE_ST_PROBING], LNS_VERSION, when,
                     s->cfg->heartbeat_s, lbone_srv_down_after_s(s->cfg), s->cfg->drop_after_s);
    lns_buf_puts(out, "<table>\n<tr><th>status</th><th>depot</th><th>resource</th>"
                        "<th>hard free / total</th><th>soft free / total</th>"
                        "<th>max duration</th><th>location</th><th>contact</th>"
                        "<th>last heard</th></tr>\n");
    for (size_t i = 0; i < n; i++) {
        const lbone_depot_t *d = v[i];
        const char *st = lbone_status_name(lbone_srv_status(s, d, now * 1000));
        lns_buf_printf(out, "<tr><td class=\"%s\">%s", st, st);
        if (d->probe_error[0]) {
            lns_buf_puts(out, "<br><small>");
            lns_buf_html(out, d->probe_error);
            lns_buf_puts(out, "</small>");
        }
        lns_buf_puts(out, "</td><td>");
        lns_buf_html(out, d->host);
        lns_buf_printf(out, ":%d</td><td>", d->port);
        lns_buf_html(out, d->rid);
        free_of_total(out, d->hard_free, d->hard_total);
        free_of_total(out, d->soft_free, d->soft_total);
        lns_buf_printf(out, "</td><td class=\"num\">%lld d %02lld h</td><td>",
                         (long long)(d->max_duration / 86400),
                         (long long)(d->max_duration % 86400 / 3600));
        if (d->place[0])
            lns_buf_html(out, d->place);
        if (d->has_loc)
            lns_buf_printf(out, "%s(%.4f, %.4f)", d->place[0] ? "<br>" : "", d->lat, d->lon);
        lns_buf_puts(out, "</td><td>");
        lns_buf_html(out, d->contact);
        lns_buf_puts(out, "</td><td class=\"num\">");
        ago(out, now - d->last_heard_ms / 1000);
        lns_buf_puts(out, "</td></tr>\n");
    }
    pthread_rwlock_unlock(&s->reg.lock);
    free(v);
    lns_buf_puts(out, "</table>\n<p>API: <code>GET /v1/depots</code> (see lbone-api.md)."
                        "</p>\n</body></html>\n");
    return 200;
}
