/* lbone_geo_table.c -- load the gazetteer's records into sorted tables, and look things up.
 *
 * The records (format in lbone/gazetteer/gen_gazetteer.py) are read once from a data file
 * (lbone_geo.h says which) into a private buffer whose separators become NULs, so every table
 * entry points into it.  Each table is sorted for binary search: airports by code, zips by
 * number, cities under each of their spellings, zips again by town.  Loading the default
 * file's 84,000 records takes a few tens of ms; after that the tables are read-only, so
 * lookups need no lock.  A default file that fails is remembered, so it is logged once and
 * lookups do not retry it on every request.
 */
#include "lbone_geo.h"
#include "lbone_geo_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lns_err.h"
#include "lns_io.h"
#include "lns_log.h"

#define GEO_MAX_FIELDS 8
#define GEO_MAX_FILE (64u << 20)
#define GEO_ENV "LNS_GAZETTEER"
#define GEO_DEFAULT_REL "share/lns/gazetteer.txt" /* from the program's bin/'s parent */

static pthread_mutex_t geo_lock = PTHREAD_MUTEX_INITIALIZER;
/* Written under geo_lock; read without it once set (the tables never change after). */
static _Atomic(geo_tables_t *) geo_tables;
/* Under geo_lock: the errno of the default file's failure (0: not tried, or loaded). */
static int geo_failed_errno;

static void tables_free(geo_tables_t *t)
{
    if (!t)
        return;
    free(t->text);
    free(t->airports);
    free(t->zips);
    free(t->cities);
    free(t->city_keys);
    free(t->zip_towns);
    free(t->states);
    free(t->countries);
    free(t);
}

static int parse_deg(const char *s, double limit, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || v < -limit || v > limit)
        return -1;
    *out = v;
    return 0;
}

/* One record: fields split in place.  -1 on a malformed record. */
static int add_record(geo_tables_t *t, char **f, int nf)
{
    char *end;
    switch (f[0][0]) {
    case 'A': {
        geo_airport_t *a = &t->airports[t->n_airports];
        if (nf != 7 || strlen(f[1]) != 3 || parse_deg(f[2], 90, &a->lat) ||
            parse_deg(f[3], 180, &a->lon))
            return -1;
        memcpy(a->code, f[1], 4);
        a->name = f[4], a->city = f[5], a->country = f[6];
        t->n_airports++;
        return 0;
    }
    case 'Z': {
        geo_zip_t *z = &t->zips[t->n_zips];
        if (nf != 6 || strlen(f[1]) != 5 || strspn(f[1], "0123456789") != 5 ||
            parse_deg(f[2], 90, &z->lat) || parse_deg(f[3], 180, &z->lon))
            return -1;
        z->zip = (unsigned)strtoul(f[1], NULL, 10);
        z->city = f[4], z->state = f[5];
        t->n_zips++;
        return 0;
    }
    case 'C': {
        geo_city_t *c = &t->cities[t->n_cities];
        if (nf != 8 || parse_deg(f[5], 90, &c->lat) || parse_deg(f[6], 180, &c->lon))
            return -1;
        errno = 0;
        c->population = strtol(f[7], &end, 10);
        if (errno || end == f[7] || *end || c->population < 0 || !*f[3])
            return -1;
        c->country = f[1], c->admin1 = f[2], c->name = f[3], c->ascii = f[4];
        t->n_cities++;
        return 0;
    }
    case 'S': {
        geo_region_t *r = &t->states[t->n_states];
        if (nf != 5 || parse_deg(f[3], 90, &r->lat) || parse_deg(f[4], 180, &r->lon))
            return -1;
        r->code = f[1], r->code3 = "", r->name = f[2];
        t->n_states++;
        return 0;
    }
    case 'N': {
        geo_region_t *r = &t->countries[t->n_countries];
        if (nf != 6 || parse_deg(f[4], 90, &r->lat) || parse_deg(f[5], 180, &r->lon))
            return -1;
        r->code = f[1], r->code3 = f[2], r->name = f[3];
        t->n_countries++;
        return 0;
    }
    }
    return -1;
}

static int cmp_airport(const void *a, const void *b)
{
    return strcmp(((const geo_airport_t *)a)->code, ((const geo_airport_t *)b)->code);
}

static int cmp_zip(const void *a, const void *b)
{
    unsigned x = ((const geo_zip_t *)a)->zip, y = ((const geo_zip_t *)b)->zip;
    return (x > y) - (x < y);
}

static int cmp_city_key(const void *a, const void *b)
{
    return strcasecmp(((const geo_city_key_t *)a)->key, ((const geo_city_key_t *)b)->key);
}

static int cmp_zip_town(const void *a, const void *b)
{
    const geo_zip_t *x = *(const geo_zip_t *const *)a, *y = *(const geo_zip_t *const *)b;
    int c = strcasecmp(x->city, y->city);
    return c ? c : strcmp(x->state, y->state);
}

static void build_indexes(geo_tables_t *t)
{
    qsort(t->airports, t->n_airports, sizeof *t->airports, cmp_airport);
    qsort(t->zips, t->n_zips, sizeof *t->zips, cmp_zip);
    for (size_t i = 0; i < t->n_cities; i++) {
        t->city_keys[t->n_city_keys++] = (geo_city_key_t){t->cities[i].name, &t->cities[i]};
        if (*t->cities[i].ascii)
            t->city_keys[t->n_city_keys++] = (geo_city_key_t){t->cities[i].ascii, &t->cities[i]};
    }
    qsort(t->city_keys, t->n_city_keys, sizeof *t->city_keys, cmp_city_key);
    for (size_t i = 0; i < t->n_zips; i++)
        t->zip_towns[i] = &t->zips[i];
    qsort(t->zip_towns, t->n_zips, sizeof *t->zip_towns, cmp_zip_town);
}

/* Parse text (NUL-terminated, owned by the result), read from path.  NULL and errno on
 * failure. */
static geo_tables_t *tables_parse(char *text, const char *path, char *err, size_t errlen)
{
    geo_tables_t *t = calloc(1, sizeof *t);
    size_t count[128] = {0};
    if (!t) {
        free(text);
        errno = ENOMEM;
        lns_err_set(err, errlen, "gazetteer %s: out of memory", path);
        return NULL;
    }
    t->text = text;
    /* First pass: how many records of each kind, to allocate each table once. */
    for (char *p = text; *p; p++) {
        if (p == text || p[-1] == '\n')
            count[(unsigned char)*p & 127]++;
    }
    t->airports = calloc(count['A'] + 1, sizeof *t->airports);
    t->zips = calloc(count['Z'] + 1, sizeof *t->zips);
    t->cities = calloc(count['C'] + 1, sizeof *t->cities);
    t->city_keys = calloc(2 * count['C'] + 1, sizeof *t->city_keys);
    t->zip_towns = calloc(count['Z'] + 1, sizeof *t->zip_towns);
    t->states = calloc(count['S'] + 1, sizeof *t->states);
    t->countries = calloc(count['N'] + 1, sizeof *t->countries);
    if (!t->airports || !t->zips || !t->cities || !t->city_keys || !t->zip_towns || !t->states ||
        !t->countries) {
        tables_free(t);
        errno = ENOMEM;
        lns_err_set(err, errlen, "gazetteer %s: out of memory", path);
        return NULL;
    }
    size_t line = 0;
    for (char *p = text; *p;) {
        char *nl = strchr(p, '\n');
        char *f[GEO_MAX_FIELDS];
        int nf = 0;
        line++;
        if (nl)
            *nl = 0;
        if (*p && *p != '#') {
            for (char *q = p;; q++) {
                if (*q == '|' || !*q) {
                    if (nf == GEO_MAX_FIELDS)
                        break;
                    f[nf++] = p;
                    if (!*q)
                        break;
                    *q = 0;
                    p = q + 1;
                }
            }
            if (nf < 2 || strlen(f[0]) != 1 || add_record(t, f, nf) < 0) {
                lns_err_set(err, errlen, "gazetteer %s: line %zu is malformed", path, line);
                tables_free(t);
                errno = EINVAL;
                return NULL;
            }
        }
        if (!nl)
            break;
        p = nl + 1;
    }
    build_indexes(t);
    return t;
}

static char *read_file(const char *path, char *err, size_t errlen)
{
    struct stat st;
    char *buf = NULL;
    ssize_t n = -1;
    int e = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0)
        e = errno;
    else if (!S_ISREG(st.st_mode))
        e = EINVAL;
    else if (st.st_size > GEO_MAX_FILE)
        e = EFBIG;
    else if (!(buf = malloc((size_t)st.st_size + 1)))
        e = ENOMEM;
    else if ((n = lns_fd_read_full(fd, buf, (size_t)st.st_size, -1)) < 0)
        e = errno;
    else if (n != st.st_size || memchr(buf, 0, (size_t)n))
        e = EINVAL; /* shrank while read, or not text */
    if (fd >= 0)
        close(fd);
    if (e) {
        free(buf);
        lns_err_set(err, errlen, "gazetteer %s: %s", path, strerror(e));
        errno = e;
        return NULL;
    }
    buf[st.st_size] = 0;
    return buf;
}

/* The default file: $LNS_GAZETTEER, else share/lns/gazetteer.txt under the parent of the
 * running program's directory (/proc/self/exe has no symlinks left, so its parent is the
 * prefix the program was installed to, or build/<release|asan>).  0, or -1 with err. */
static int default_path(char *out, size_t size, char *err, size_t errlen)
{
    const char *env = getenv(GEO_ENV);
    char exe[PATH_MAX];
    if (env && *env) {
        if (strlen(env) >= size) {
            errno = ENAMETOOLONG;
            return lns_err_set(err, errlen, "gazetteer: %s is longer than %zu characters", GEO_ENV,
                               size - 1);
        }
        memcpy(out, env, strlen(env) + 1);
        return 0;
    }
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        if (n == 0)
            errno = ENOENT;
        return lns_err_set(err, errlen, "gazetteer: cannot find the running program "
                           "(/proc/self/exe: %s)", strerror(errno));
    }
    exe[n] = 0;
    for (int up = 0; up < 2; up++) { /* the program's name, then its directory (bin/) */
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = 0;
    }
    if ((size_t)snprintf(out, size, "%s/%s", exe, GEO_DEFAULT_REL) >= size) {
        errno = ENAMETOOLONG;
        return lns_err_set(err, errlen, "gazetteer: the path under %s is too long", exe);
    }
    return 0;
}

/* Load the default file, or remember (and log, once) that it cannot be.  The reason goes to
 * the log, not to err: a lookup's error may reach a client, who need not see server paths. */
static int geo_open_default_locked(char *err, size_t errlen)
{
    char path[PATH_MAX], why[PATH_MAX + 128];
    if (!geo_failed_errno) {
        char *text = NULL;
        geo_tables_t *t = NULL;
        if (default_path(path, sizeof path, why, sizeof why) == 0 &&
            (text = read_file(path, why, sizeof why)) != NULL)
            t = tables_parse(text, path, why, sizeof why); /* frees text on failure */
        if (t) {
            atomic_store(&geo_tables, t);
            return 0;
        }
        geo_failed_errno = errno ? errno : EINVAL;
        lns_log(LNS_LOG_WARN, "%s: place names will not resolve (%s= names another data file)",
                why, GEO_ENV);
    }
    lns_err_set(err, errlen, "place lookup unavailable: the gazetteer's data file could not be "
                "loaded (the log says why)");
    errno = geo_failed_errno;
    return -1;
}

static int geo_open_locked(const char *datafile, char *err, size_t errlen)
{
    if (atomic_load(&geo_tables))
        return 0;
    if (!datafile)
        return geo_open_default_locked(err, errlen);
    char *text = read_file(datafile, err, errlen);
    if (!text)
        return -1;
    geo_tables_t *t = tables_parse(text, datafile, err, errlen);
    atomic_store(&geo_tables, t);
    return t ? 0 : -1;
}

int lbone_geo_open(const char *datafile)
{
    char err[PATH_MAX + 128];
    pthread_mutex_lock(&geo_lock);
    int rc = geo_open_locked(datafile, err, sizeof err);
    pthread_mutex_unlock(&geo_lock);
    return rc;
}

void lbone_geo_close(void)
{
    pthread_mutex_lock(&geo_lock);
    tables_free(atomic_exchange(&geo_tables, NULL));
    geo_failed_errno = 0;
    pthread_mutex_unlock(&geo_lock);
}

const geo_tables_t *lbone_geo__tables(char *err, size_t errlen)
{
    const geo_tables_t *ready = atomic_load(&geo_tables);
    if (ready)
        return ready;
    pthread_mutex_lock(&geo_lock);
    int rc = geo_open_locked(NULL, err, errlen);
    const geo_tables_t *t = atomic_load(&geo_tables);
    pthread_mutex_unlock(&geo_lock);
    return rc < 0 ? NULL : t;
}

const geo_airport_t *lbone_geo__airport(const geo_tables_t *t, const char *code)
{
    geo_airport_t key;
    if (strlen(code) != 3)
        return NULL;
    for (int i = 0; i < 4; i++)
        key.code[i] = (char)(code[i] >= 'a' && code[i] <= 'z' ? code[i] - 32 : code[i]);
    return bsearch(&key, t->airports, t->n_airports, sizeof key, cmp_airport);
}

const geo_zip_t *lbone_geo__zip_nearest(const geo_tables_t *t, unsigned zip)
{
    size_t lo = 0, hi = t->n_zips;
    if (!t->n_zips)
        return NULL;
    while (lo < hi) { /* first zip >= the one asked for */
        size_t mid = lo + (hi - lo) / 2;
        if (t->zips[mid].zip < zip)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == t->n_zips)
        return &t->zips[lo - 1];
    if (t->zips[lo].zip == zip || lo == 0)
        return &t->zips[lo];
    return zip - t->zips[lo - 1].zip <= t->zips[lo].zip - zip ? &t->zips[lo - 1] : &t->zips[lo];
}

/* The first index in a sorted array whose key is not below name (case-insensitive). */
#define LOWER_BOUND(arr, n, keyexpr, name, out)                                                  \
    do {                                                                                         \
        size_t lo_ = 0, hi_ = (n);                                                               \
        while (lo_ < hi_) {                                                                      \
            size_t mid_ = lo_ + (hi_ - lo_) / 2;                                                 \
            const char *k_ = (arr)[mid_] keyexpr;                                                \
            if (strcasecmp(k_, (name)) < 0)                                                      \
                lo_ = mid_ + 1;                                                                  \
            else                                                                                 \
                hi_ = mid_;                                                                      \
        }                                                                                        \
        (out) = lo_;                                                                             \
    } while (0)

const geo_city_t *lbone_geo__city(const geo_tables_t *t, const char *name, const char *country,
                                  const char *admin1)
{
    const geo_city_t *best = NULL;
    size_t i;
    LOWER_BOUND(t->city_keys, t->n_city_keys, .key, name, i);
    for (; i < t->n_city_keys && strcasecmp(t->city_keys[i].key, name) == 0; i++) {
        const geo_city_t *c = t->city_keys[i].city;
        if (country && strcasecmp(c->country, country) != 0)
            continue;
        if (admin1 && strcasecmp(c->admin1, admin1) != 0)
            continue;
        if (!best || c->population > best->population)
            best = c;
    }
    return best;
}

size_t lbone_geo__zip_town(const geo_tables_t *t, const char *name, const char *state,
                           double *lat, double *lon, const geo_zip_t **some)
{
    size_t i, best_first = 0, best_n = 0;
    LOWER_BOUND(t->zip_towns, t->n_zips, ->city, name, i);
    /* The matches are grouped by state; take the asked state, or the biggest group. */
    while (i < t->n_zips && strcasecmp(t->zip_towns[i]->city, name) == 0) {
        size_t first = i;
        const char *st = t->zip_towns[i]->state;
        while (i < t->n_zips && strcasecmp(t->zip_towns[i]->city, name) == 0 &&
               strcmp(t->zip_towns[i]->state, st) == 0)
            i++;
        if (state ? strcasecmp(st, state) == 0 : i - first > best_n)
            best_first = first, best_n = i - first;
    }
    if (!best_n)
        return 0;
    /* A town's zips are a few km apart: a plain mean of degrees is exact enough. */
    double sla = 0, slo = 0;
    for (size_t k = best_first; k < best_first + best_n; k++)
        sla += t->zip_towns[k]->lat, slo += t->zip_towns[k]->lon;
    *lat = sla / (double)best_n;
    *lon = slo / (double)best_n;
    *some = t->zip_towns[best_first];
    return best_n;
}

const geo_region_t *lbone_geo__state(const geo_tables_t *t, const char *s)
{
    for (size_t i = 0; i < t->n_states; i++)
        if (strcasecmp(t->states[i].code, s) == 0 || strcasecmp(t->states[i].name, s) == 0)
            return &t->states[i];
    return NULL;
}

const geo_region_t *lbone_geo__country(const geo_tables_t *t, const char *s)
{
    if (strncasecmp(s, "the ", 4) == 0)
        s += 4;
    for (size_t i = 0; i < t->n_countries; i++) {
        const geo_region_t *r = &t->countries[i];
        const char *name = strncasecmp(r->name, "the ", 4) == 0 ? r->name + 4 : r->name;
        if (strcasecmp(r->code, s) == 0 || strcasecmp(r->code3, s) == 0 || strcasecmp(name, s) == 0)
            return r;
    }
    return NULL;
}
