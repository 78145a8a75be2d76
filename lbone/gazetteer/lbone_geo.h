/* lbone_geo.h -- the L-Bone's gazetteer: place names to coordinates, and distances.
 *
 * A layer of the daemons (liblbone_geo.a, linked by lbone_server and ibp_depot), not of
 * liblbone: clients send place names to the L-Bone, which resolves them.
 *
 * The data (airports with an IATA code, US zip codes, world cities, US state and country
 * centroids) is a text file, gazetteer.txt, that lbone/gazetteer/gen_gazetteer.py generates.
 * Unless a caller opens another file, the first lookup reads the default one:
 *     $LNS_GAZETTEER                       when set and not empty (no other file is tried)
 *     DIR/../share/lns/gazetteer.txt       else; DIR: the running program's directory
 *                                          (/proc/self/exe)
 * which is $(PREFIX)/share/lns once installed and build/<release|asan>/share/lns in the build
 * (the build stages it there for the daemons and tests).  When the default file cannot be
 * read or parsed, one log line (lns_log, warn) says which file and why, and every lookup that
 * needs the data fails with LBONE_GEO_UNAVAILABLE until lbone_geo_close: "lat,lon" still
 * resolves.  The tables are loaded once and then only read, so lookups may run from many
 * threads.
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

/* lbone_geo_resolve's answer when the gazetteer's data could not be loaded: the location was
 * not judged (a caller that only checks places may let it pass). */
#define LBONE_GEO_UNAVAILABLE (-2)

/* Load the gazetteer.  datafile: NULL for the default file (above), or a file of records in
 * the format of lbone/gazetteer/gen_gazetteer.py (one record per line, '#' lines are
 * comments).  The first successful call wins; later calls return 0 and change nothing.
 * lbone_geo_resolve opens the default file itself when nothing was opened.  0, or -1 with
 * errno (ENOENT, EINVAL: a bad record); a failed default file is logged (once), a failed
 * datafile is not (the caller says what it was for). */
int lbone_geo_open(const char *datafile);

/* Free the tables (tests, leak checkers) and forget a failed default file; a later lookup
 * opens the default file again.  Not safe while another thread resolves. */
void lbone_geo_close(void);

/* Resolve a location string (above).  0 and *out; -1 and a one-line reason in err (a bad or
 * unknown location); LBONE_GEO_UNAVAILABLE and the reason when the data could not be loaded. */
int lbone_geo_resolve(const char *location, lbone_place_t *out, char *err, size_t errlen);

/* Great-circle distance in km (haversine, mean Earth radius 6371.0088 km). */
double lbone_geo_distance_km(double lat1, double lon1, double lat2, double lon2);

#endif
