/* depot_line.c -- the fields of the request lines ibp_req_parse does not know: ACCRE 1.4's
 * alias (14, 15), rename (16), split/merge (18, 19) and push/pull (20, 21) requests.
 *
 * A line is split on runs of spaces by ibp_req_split, as ACCRE's server reads it (its client
 * sends an empty path field as two spaces); control bytes are refused, as ibp_req_parse
 * refuses them.
 */
#include "depot.h"

#include <stdio.h>
#include <string.h>

int depot_line_split(const char *line, size_t len, depot_field_t *f, int max)
{
    if (len > 0 && line[len - 1] == '\r')
        len--;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
            return -1;
    int n = ibp_req_split(line, len, f, max);
    return n > max ? -1 : n;
}

int depot_line_num(const depot_field_t *f, int64_t *v)
{
    return ibp_parse_i64(f->p, f->n, v);
}

int depot_line_cap(const depot_field_t *k, const depot_field_t *t, char *rid, char *key, char *tk)
{
    const char *h = memchr(k->p, '#', k->n);
    size_t rn = h ? (size_t)(h - k->p) : 0, kn = h ? k->n - rn - 1 : k->n;
    if (rn >= IBP_MAX_RID || kn >= IBP_MAX_KEY || t->n >= IBP_MAX_KEY)
        return -1;
    memcpy(rid, k->p, rn);
    rid[rn] = '\0';
    memcpy(key, h ? h + 1 : k->p, kn);
    key[kn] = '\0';
    memcpy(tk, t->p, t->n);
    tk[t->n] = '\0';
    return 0;
}

int depot_line_head(const char *line, size_t len, long v[2], size_t *end)
{
    size_t i = 0;
    for (int k = 0; k < 2; k++) {
        while (i < len && line[i] == ' ')
            i++;
        if (i == len || line[i] < '0' || line[i] > '9')
            return -1;
        for (v[k] = 0; i < len && line[i] >= '0' && line[i] <= '9' && v[k] < 1000; i++)
            v[k] = v[k] * 10 + (line[i] - '0');
        if (i < len && line[i] != ' ')
            return -1;
    }
    *end = i;
    return 0;
}

int depot_line_command(const char *line, size_t len)
{
    long v[2];
    size_t end;
    if (depot_line_head(line, len, v, &end) < 0)
        return -1;
    return v[0] == 0 || v[0] == 1 ? (int)v[1] : -1;
}

int depot_line_request(const char *line, size_t len, depot_field_t *f, int max, ibp_req_t *req)
{
    int64_t v, cmd;
    int n = depot_line_split(line, len, f, max);
    memset(req, 0, sizeof *req);
    req->cmd = -1;
    if (n >= 2 && depot_line_num(&f[0], &v) == 0 && depot_line_num(&f[1], &cmd) == 0) {
        req->version = (int)v;
        req->cmd = (int)cmd;
    }
    return n;
}
