/* lbone_geo_int.h -- the gazetteer's tables, shared by the loader (lbone_geo_table.c) and the
 * resolver (lbone_geo.c).  Not installed; the public face is lbone_geo.h.
 *
 * Every string points into one private copy of the data, so a table entry is a few words and
 * freeing the gazetteer is freeing two handfuls of arrays.
 */
#ifndef LBONE_GEO_INT_H
#define LBONE_GEO_INT_H

#include <stddef.h>

typedef struct geo_airport {
    char code[4];
    double lat, lon;
    const char *name, *city, *country;
} geo_airport_t;

typedef struct geo_zip {
    unsigned zip;
    double lat, lon;
    const char *city, *state;
} geo_zip_t;

typedef struct geo_city {
    const char *country, *admin1, *name, *ascii;  /* ascii: "" when the name is ASCII */
    double lat, lon;
    long population;
} geo_city_t;

/* A US state or a country: code (TN, NL), code3 (country only, else ""), name. */
typedef struct geo_region {
    const char *code, *code3, *name;
    double lat, lon;
} geo_region_t;

/* One name under which a city can be found (its name, or its ASCII spelling). */
typedef struct geo_city_key {
    const char *key;
    const geo_city_t *city;
} geo_city_key_t;

typedef struct geo_tables {
    char *text;                   /* the records, '|' and '\n' replaced by NULs */
    geo_airport_t *airports;      /* sorted by code */
    geo_zip_t *zips;              /* sorted by number */
    geo_city_t *cities;
    geo_city_key_t *city_keys;    /* sorted by key, case-insensitively */
    const geo_zip_t **zip_towns;  /* zips sorted by city name, then state */
    geo_region_t *states, *countries;
    size_t n_airports, n_zips, n_cities, n_city_keys, n_states, n_countries;
} geo_tables_t;

/* The loaded tables, opening the default file on first use; NULL and err when they cannot be
 * had (the default file failed, now or before). */
const geo_tables_t *lbone_geo__tables(char *err, size_t errlen);

const geo_airport_t *lbone_geo__airport(const geo_tables_t *t, const char *code);
/* The zip with this number, or the nearest number (ties: the lower). NULL if no zips. */
const geo_zip_t *lbone_geo__zip_nearest(const geo_tables_t *t, unsigned zip);
/* The most populous city called name (or its ASCII spelling), optionally in a country
 * (alpha-2) and an admin1 code (the US state). */
const geo_city_t *lbone_geo__city(const geo_tables_t *t, const char *name, const char *country,
                                  const char *admin1);
/* The centroid of the zip codes of a town (state may be NULL: the state with the most zips of
 * that name).  The number of zips (0: none), and one of them in *some (for its spelling). */
size_t lbone_geo__zip_town(const geo_tables_t *t, const char *name, const char *state,
                           double *lat, double *lon, const geo_zip_t **some);
/* By code or name, case-insensitively; countries also by alpha-3 and without "The ". */
const geo_region_t *lbone_geo__state(const geo_tables_t *t, const char *s);
const geo_region_t *lbone_geo__country(const geo_tables_t *t, const char *s);

#endif
