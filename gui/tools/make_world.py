#!/usr/bin/env python3
"""make_world.py -- convert Natural Earth 110m country outlines into gui/world.txt for lns_gui.

Run once; the output is committed.  The source is the public-domain Natural Earth 1:110m
admin-0 countries shapefile as bundled by the geopandas 0.14.x wheel
(geopandas/datasets/naturalearth_lowres/naturalearth_lowres.shp), see gui/ATTRIBUTION.md:

    pip download geopandas==0.14.4 --no-deps -d /tmp/gp
    cd /tmp/gp && unzip -q geopandas-0.14.4-py3-none-any.whl 'geopandas/datasets/*'
    gui/tools/make_world.py /tmp/gp/geopandas/datasets/naturalearth_lowres/naturalearth_lowres.shp > gui/world.txt

Key idea: the shapefile format is simple enough to read without GIS libraries (a 100-byte
header, then records: big-endian record header, little-endian polygon with parts and points).
Each ring (outer boundary or hole; holes are drawn as outlines too, the map is not filled with
even-odd rules) becomes one line "lon lat lon lat ...", coordinates rounded to 0.1 degree,
simplified with Douglas-Peucker at 0.1 degree so the file stays small.
"""
import struct
import sys

TOL = 0.1  # degrees: simplification tolerance and rounding step


def read_rings(path):
    """Yield every ring of every polygon record of a shapefile as a list of (lon, lat)."""
    with open(path, "rb") as f:
        data = f.read()
    code, = struct.unpack(">i", data[0:4])
    if code != 9994:
        raise SystemExit(f"make_world: {path}: not a shapefile (file code {code})")
    length = struct.unpack(">i", data[24:28])[0] * 2
    pos = 100
    while pos + 8 <= min(length, len(data)):
        _num, clen = struct.unpack(">ii", data[pos:pos + 8])
        rec = data[pos + 8:pos + 8 + clen * 2]
        pos += 8 + clen * 2
        stype, = struct.unpack("<i", rec[0:4])
        if stype not in (5, 15, 25):  # polygon, polygonZ, polygonM: same prefix
            continue
        nparts, npoints = struct.unpack("<ii", rec[36:44])
        parts = list(struct.unpack(f"<{nparts}i", rec[44:44 + 4 * nparts]))
        base = 44 + 4 * nparts
        pts = [struct.unpack("<dd", rec[base + 16 * i:base + 16 * i + 16]) for i in range(npoints)]
        parts.append(npoints)
        for a, b in zip(parts, parts[1:]):
            yield pts[a:b]


def dp(pts, tol):
    """Douglas-Peucker simplification (iterative, keeps both ends)."""
    if len(pts) < 3:
        return pts
    keep = [False] * len(pts)
    keep[0] = keep[-1] = True
    stack = [(0, len(pts) - 1)]
    while stack:
        a, b = stack.pop()
        (x1, y1), (x2, y2) = pts[a], pts[b]
        dx, dy = x2 - x1, y2 - y1
        norm = (dx * dx + dy * dy) ** 0.5
        best, bi = -1.0, -1
        for i in range(a + 1, b):
            x, y = pts[i]
            if norm == 0:
                d = ((x - x1) ** 2 + (y - y1) ** 2) ** 0.5
            else:
                d = abs(dy * (x - x1) - dx * (y - y1)) / norm
            if d > best:
                best, bi = d, i
        if bi >= 0 and best > tol:
            keep[bi] = True
            stack.append((a, bi))
            stack.append((bi, b))
    return [p for p, k in zip(pts, keep) if k]


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: make_world.py naturalearth_lowres.shp > gui/world.txt")
    out = sys.stdout
    out.write("# lns_gui world outlines: Natural Earth 1:110m admin-0 countries (public domain),\n")
    out.write("# via the geopandas 0.14.4 package; made by gui/tools/make_world.py.\n")
    out.write("# One ring per line: lon lat lon lat ... (degrees, 0.1 degree steps).\n")
    nrings = npts = 0
    for ring in read_rings(sys.argv[1]):
        ring = dp(ring, TOL)
        r = []
        for lon, lat in ring:
            p = (round(lon, 1), round(lat, 1))
            if not r or r[-1] != p:
                r.append(p)
        if len(r) < 4:  # a closed ring needs 3 distinct points plus the closing one
            continue
        out.write(" ".join(f"{x:g} {y:g}" for x, y in r) + "\n")
        nrings += 1
        npts += len(r)
    print(f"make_world: {nrings} rings, {npts} points", file=sys.stderr)


if __name__ == "__main__":
    main()
