/* lbone_geo.c -- resolve an L-Bone location string to a place, and measure distances.
 *
 * A location is either "lat,lon" or a list of "keyword= value" pairs whose values may hold
 * blanks ("city= New York state= NY"): a value runs until the next word that is directly
 * followed by '='.  Parsing is strict (unknown or repeated keywords, stray text, bad numbers
 * are errors naming the culprit); resolution is forgiving the way the LoRS L-Bone was: an
 * unknown zip becomes the nearest known number, an unknown city its state or country.
 */
#include "lbone_geo.h"
#include "lbone_geo_int.h"
#include "lns_err.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define GEO_EARTH_RADIUS_KM 6371.0088
#define GEO_MAX_LOCATION 256

enum { K_AIRPORT, K_ZIP, K_CITY, K_STATE, K_COUNTRY, K_HOST, K_COUNT };
static const char *const keyword_names[K_COUNT] = {"airport", "zip", "city", "state", "country",
                                                   "host"};

static void set_place(lbone_place_t *out, double lat, double lon, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void set_place(lbone_place_t *out, double lat, double lon, const char *fmt, ...)
{
    va_list ap;
    out->lat = lat;
    out->lon = lon;
    va_start(ap, fmt);
    vsnprintf(out->name, sizeof out->name, fmt, ap);
    va_end(ap);
}

double lbone_geo_distance_km(double lat1, double lon1, double lat2, double lon2)
{
    const double rad = M_PI / 180.0;
    double dlat = (lat2 - lat1) * rad, dlon = (lon2 - lon1) * rad;
    double a = sin(dlat / 2) * sin(dlat / 2) +
               cos(lat1 * rad) * cos(lat2 * rad) * sin(dlon / 2) * sin(dlon / 2);
    if (a > 1)
        a = 1; /* rounding, for antipodes */
    return 2 * GEO_EARTH_RADIUS_KM * atan2(sqrt(a), sqrt(1 - a));
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = 0;
    return s;
}

/* "lat,lon": 1 and the place if s is that form, 0 if it is not, -1 if it is but out of range. */
static int parse_latlon(const char *s, lbone_place_t *out, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    double lat = strtod(s, &end);
    if (end == s || errno)
        return 0;
    while (isspace((unsigned char)*end))
        end++;
    if (*end != ',')
        return 0;
    const char *p = end + 1;
    double lon = strtod(p, &end);
    if (end == p || errno)
        return 0;
    while (isspace((unsigned char)*end))
        end++;
    if (*end)
        return 0;
    if (!isfinite(lat) || !isfinite(lon) || lat < -90 || lat > 90 || lon < -180 || lon > 180)
        return lns_err_set(err, errlen, "location '%s': latitude must be in [-90,90], longitude in "
                           "[-180,180]", s);
    set_place(out, lat, lon, "%.4f,%.4f", lat, lon);
    return 1;
}

/* Split "kw= value kw= value" (in place) into vals[keyword]. */
static int parse_keywords(char *s, const char *loc, char *vals[K_COUNT], char *err, size_t errlen)
{
    char *p = s;
    for (int k = 0; k < K_COUNT; k++)
        vals[k] = NULL;
    while (*p) {
        /* p is at a keyword: letters, blanks, '='. */
        char *kw = p;
        while (isalpha((unsigned char)*p))
            p++;
        char *kwend = p;
        while (isspace((unsigned char)*p))
            p++;
        if (kwend == kw || *p != '=') {
            char *eq = strchr(kw, '=');
            if (eq)
                *eq = 0;
            return lns_err_set(err, errlen, "location '%s': expected 'keyword= value' at '%s'", loc,
                               trim(kw));
        }
        *kwend = 0;
        char *val = ++p;
        /* The value ends where the next "word=" starts. */
        char *next = strchr(val, '=');
        if (next) {
            char *w = next;
            while (w > val && isspace((unsigned char)w[-1]))
                w--;
            while (w > val && isalpha((unsigned char)w[-1]))
                w--;
            if (w > val && !isspace((unsigned char)w[-1]))
                return lns_err_set(err, errlen, "location '%s': '=' inside a value", loc);
            p = w;
            if (w > val)
                w[-1] = 0; /* cut the value before the next keyword */
        } else {
            p = val + strlen(val);
        }
        int k;
        for (k = 0; k < K_COUNT; k++)
            if (strcasecmp(kw, keyword_names[k]) == 0)
                break;
        if (k == K_COUNT)
            return lns_err_set(err, errlen,
                               "location '%s': unknown keyword '%s' (airport, zip, city, "
                               "state, country)", loc, kw);
        if (vals[k])
            return lns_err_set(err, errlen, "location '%s': '%s=' given twice", loc,
                               keyword_names[k]);
        if (p == val && next)
            return lns_err_set(err, errlen, "location '%s': '%s=' has no value", loc,
                               keyword_names[k]);
        vals[k] = trim(val);
        if (!*vals[k])
            return lns_err_set(err, errlen, "location '%s': '%s=' has no value", loc,
                               keyword_names[k]);
    }
    return 0;
}

static int resolve_zip(const geo_tables_t *t, const char *v, const char *loc, lbone_place_t *out,
                       char *err, size_t errlen)
{
    /* Five digits, or ZIP+4 whose extra four digits say nothing more about the place. */
    if (strspn(v, "0123456789") != 5 || (v[5] && (v[5] != '-' || strspn(v + 6, "0123456789") != 4 ||
                                                  v[10])))
        return lns_err_set(err, errlen, "location '%s': zip '%s' is not a 5-digit US zip code", loc,
                           v);
    unsigned zip = (unsigned)strtoul(v, NULL, 10);
    const geo_zip_t *z = lbone_geo__zip_nearest(t, zip);
    if (!z)
        return lns_err_set(err, errlen, "location '%s': the gazetteer has no zip codes", loc);
    if (z->zip == zip)
        set_place(out, z->lat, z->lon, "zip %05u (%s, %s)", z->zip, z->city, z->state);
    else
        set_place(out, z->lat, z->lon, "zip %05u (nearest known to %05u; %s, %s)", z->zip, zip,
                  z->city, z->state);
    return 0;
}

/* City, then the state or country as a fallback; 0, or -1 with err. */
static int resolve_city(const geo_tables_t *t, char *vals[K_COUNT], const char *loc,
                        lbone_place_t *out, char *err, size_t errlen)
{
    const char *city = vals[K_CITY];
    const geo_region_t *state = NULL, *country = NULL;
    if (vals[K_STATE] && !(state = lbone_geo__state(t, vals[K_STATE])))
        return lns_err_set(err, errlen, "location '%s': unknown US state '%s'", loc, vals[K_STATE]);
    if (vals[K_COUNTRY] && !(country = lbone_geo__country(t, vals[K_COUNTRY])))
        return lns_err_set(err, errlen, "location '%s': unknown country '%s'", loc,
                           vals[K_COUNTRY]);
    if (state && country && strcmp(country->code, "US") != 0)
        return lns_err_set(err, errlen, "location '%s': state= is a US state, but country= is %s",
                           loc,
                           country->code);
    const char *cc = state ? "US" : country ? country->code : NULL;
    const geo_city_t *c = lbone_geo__city(t, city, cc, state ? state->code : NULL);
    if (c) {
        if (*c->admin1 && strcmp(c->country, "US") == 0)
            set_place(out, c->lat, c->lon, "%s, %s, US", c->name, c->admin1);
        else
            set_place(out, c->lat, c->lon, "%s, %s", c->name, c->country);
        return 0;
    }
    /* US towns below the cities' population threshold still have zip codes. */
    if (!cc || strcmp(cc, "US") == 0) {
        double lat, lon;
        const geo_zip_t *z;
        size_t n = lbone_geo__zip_town(t, city, state ? state->code : NULL, &lat, &lon, &z);
        if (n) {
            set_place(out, lat, lon, "%s, %s, US (centre of %zu zip code%s)", z->city, z->state,
                      n, n == 1 ? "" : "s");
            return 0;
        }
    }
    if (state) {
        set_place(out, state->lat, state->lon, "state %s (%s; city '%s' not found)", state->code,
                  state->name, city);
        return 0;
    }
    if (country) {
        set_place(out, country->lat, country->lon, "country %s (%s; city '%s' not found)",
                  country->code, country->name, city);
        return 0;
    }
    return lns_err_set(err, errlen, "location '%s': city '%s' not found", loc, city);
}

int lbone_geo_resolve(const char *location, lbone_place_t *out, char *err, size_t errlen)
{
    char buf[GEO_MAX_LOCATION + 1];
    char *vals[K_COUNT];

    if (!location)
        return lns_err_set(err, errlen, "location: none given");
    if (strlen(location) > GEO_MAX_LOCATION)
        return lns_err_set(err, errlen, "location: longer than %d characters", GEO_MAX_LOCATION);
    for (const char *c = location; *c; c++)
        if ((unsigned char)*c < 32 && *c != '\t')
            return lns_err_set(err, errlen, "location: contains a control character");
    memcpy(buf, location, strlen(location) + 1);
    char *s = trim(buf);
    if (!*s)
        return lns_err_set(err, errlen, "location: empty");
    if (!strchr(s, '=')) {
        int rc = parse_latlon(s, out, err, errlen);
        if (rc < 0)
            return -1;
        if (rc == 0)
            return lns_err_set(err, errlen, "location '%s': neither 'lat,lon' nor 'keyword= value'",
                               s);
        return 0;
    }
    char loc[GEO_MAX_LOCATION + 1];
    memcpy(loc, s, strlen(s) + 1); /* for messages: s is cut up below */
    if (parse_keywords(s, loc, vals, err, errlen) < 0)
        return -1;
    if (vals[K_HOST])
        return lns_err_set(err, errlen,
                           "location '%s': 'host=' is resolved by the L-Bone server from its "
                           "registry, not by the gazetteer", loc);

    const geo_tables_t *t = lbone_geo__tables(err, errlen);
    if (!t)
        return LBONE_GEO_UNAVAILABLE;
    if (vals[K_ZIP])
        return resolve_zip(t, vals[K_ZIP], loc, out, err, errlen);
    if (vals[K_AIRPORT]) {
        const geo_airport_t *a = lbone_geo__airport(t, vals[K_AIRPORT]);
        if (!a)
            return lns_err_set(err, errlen, "location '%s': no airport with IATA code '%s'", loc,
                               vals[K_AIRPORT]);
        set_place(out, a->lat, a->lon, "airport %s (%s, %s)", a->code, a->city, a->country);
        return 0;
    }
    if (vals[K_CITY])
        return resolve_city(t, vals, loc, out, err, errlen);
    if (vals[K_STATE]) {
        const geo_region_t *r = lbone_geo__state(t, vals[K_STATE]);
        if (!r)
            return lns_err_set(err, errlen, "location '%s': unknown US state '%s'", loc,
                               vals[K_STATE]);
        set_place(out, r->lat, r->lon, "state %s (%s)", r->code, r->name);
        return 0;
    }
    const geo_region_t *r = lbone_geo__country(t, vals[K_COUNTRY]);
    if (!r)
        return lns_err_set(err, errlen, "location '%s': unknown country '%s'", loc,
                           vals[K_COUNTRY]);
    set_place(out, r->lat, r->lon, "country %s (%s)", r->code, r->name);
    return 0;
}
