/* lbone_geo.h -- the L-Bone's gazetteer: place names to coordinates, and distances.
 *
 * The data (airports with an IATA code, US zip codes, world cities, US state and country
 * centroids) is compiled into the library from lbone/lbone_geo_data.c, which
 * lbone/gazetteer/gen_gazetteer.py generates; nothing is read from disk unless a caller asks.
 * The tables are loaded once and then only read, so lookups may run from many threads.
 *
 * Location strings (keywords case-insensitive, blanks after '=' optional):
 *     "35.96,-83.92"                      latitude,longitude in degrees
 *     "airport= TYS"                      IATA code
 *     "zip= 37996"                        US zip; an unknown one resolves to the nearest known number
 *     "city= Knoxville state= TN"         US city (state code or name)
 *     "city= Amsterdam country= NL"       city in a country (ISO 3166 alpha-2/3 code or name)
 *     "city= Amsterdam"                   the most populous city of that name
 *     "state= TN", "country= NL"          centroid
 * When several keywords are given the most precise wins: zip, airport, city, state, country.
 * A city that is not found falls back to its state or country when one was given (the name
 * of the result says so), as the L-Bone of LoRS did.  "host= name" is not handled here: the
 * L-Bone server resolves it from its registry.
 */
#ifndef LBONE_GEO_H
#define LBONE_GEO_H

#include <stddef.h>

typedef struct lbone_place {
    double lat, lon;  /* degrees; north and east positive */
    char name[128];   /* what the location resolved to, e.g. "airport TYS (Knoxville, US)" */
} lbone_place_t;

/* Load the gazetteer.  datafile: NULL for the built-in data, or a file of records in the
 * format of lbone/gazetteer/gen_gazetteer.py (one record per line).  The first successful
 * call wins; later calls return 0 and change nothing.  lbone_geo_resolve opens the built-in
 * data itself when nothing was opened.  0, or -1 with errno (ENOENT, EINVAL: a bad record). */
int lbone_geo_open(const char *datafile);

/* Free the tables (tests, leak checkers); a later lookup opens the built-in data again.
 * Not safe while another thread resolves. */
void lbone_geo_close(void);

/* Resolve a location string (above).  0 and *out, or -1 and a one-line reason in err. */
int lbone_geo_resolve(const char *location, lbone_place_t *out, char *err, size_t errlen);

/* Great-circle distance in km (haversine, mean Earth radius 6371.0088 km). */
double lbone_geo_distance_km(double lat1, double lon1, double lat2, double lon2);

#endif
