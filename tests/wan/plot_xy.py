#!/usr/bin/env python3
"""plot_xy.py -- a small line plot as a PNG, Python standard library only (zlib + struct).

    tests/wan/plot_xy.py OUT.png TITLE XLABEL YLABEL SERIES...

Each SERIES is "NAME=x1:y1,x2:y2,..."; series are drawn in order in black, blue, red, green,
with a point at each value and a legend.  Used for the WAN testbed's scaling plot
(docs/wan-scaling.png).  Key idea: a tiny 5x7 bitmap font (digits, capitals, a few signs;
lower case is drawn as capitals) is enough for axis ticks and labels, so no plotting library
or Debian package is needed.
"""
import struct
import sys
import zlib

FONT = {  # 5x7, each row 5 bits, MSB left
    '0': [14, 17, 19, 21, 25, 17, 14], '1': [4, 12, 4, 4, 4, 4, 14], '2': [14, 17, 1, 2, 4, 8, 31],
    '3': [31, 2, 4, 2, 1, 17, 14], '4': [2, 6, 10, 18, 31, 2, 2], '5': [31, 16, 30, 1, 1, 17, 14],
    '6': [6, 8, 16, 30, 17, 17, 14], '7': [31, 1, 2, 4, 8, 8, 8], '8': [14, 17, 17, 14, 17, 17, 14],
    '9': [14, 17, 17, 15, 1, 2, 12], 'A': [14, 17, 17, 31, 17, 17, 17], 'B': [30, 17, 17, 30, 17, 17, 30],
    'C': [14, 17, 16, 16, 16, 17, 14], 'D': [30, 17, 17, 17, 17, 17, 30], 'E': [31, 16, 16, 30, 16, 16, 31],
    'F': [31, 16, 16, 30, 16, 16, 16], 'G': [14, 17, 16, 23, 17, 17, 15], 'H': [17, 17, 17, 31, 17, 17, 17],
    'I': [14, 4, 4, 4, 4, 4, 14], 'J': [7, 2, 2, 2, 2, 18, 12], 'K': [17, 18, 20, 24, 20, 18, 17],
    'L': [16, 16, 16, 16, 16, 16, 31], 'M': [17, 27, 21, 21, 17, 17, 17], 'N': [17, 17, 25, 21, 19, 17, 17],
    'O': [14, 17, 17, 17, 17, 17, 14], 'P': [30, 17, 17, 30, 16, 16, 16], 'Q': [14, 17, 17, 17, 21, 18, 13],
    'R': [30, 17, 17, 30, 20, 18, 17], 'S': [15, 16, 16, 14, 1, 1, 30], 'T': [31, 4, 4, 4, 4, 4, 4],
    'U': [17, 17, 17, 17, 17, 17, 14], 'V': [17, 17, 17, 17, 17, 10, 4], 'W': [17, 17, 17, 21, 21, 21, 10],
    'X': [17, 17, 10, 4, 10, 17, 17], 'Y': [17, 17, 10, 4, 4, 4, 4], 'Z': [31, 1, 2, 4, 8, 16, 31],
    '.': [0, 0, 0, 0, 0, 12, 12], ',': [0, 0, 0, 0, 12, 4, 8], '-': [0, 0, 0, 31, 0, 0, 0],
    '/': [1, 1, 2, 4, 8, 16, 16], '(': [2, 4, 8, 8, 8, 4, 2], ')': [8, 4, 2, 2, 2, 4, 8],
    ':': [0, 12, 12, 0, 12, 12, 0], '=': [0, 0, 31, 0, 31, 0, 0], '%': [24, 25, 2, 4, 8, 19, 3],
    '_': [0, 0, 0, 0, 0, 0, 31], 'x': [0, 17, 10, 4, 10, 17, 0], '+': [0, 4, 4, 31, 4, 4, 0], ' ': [0] * 7,
}
COLOURS = [(0, 0, 0), (30, 80, 220), (210, 40, 40), (30, 150, 60)]


class Canvas:
    def __init__(self, w, h):
        self.w, self.h = w, h
        self.px = bytearray(b'\xff' * (w * h * 3))

    def dot(self, x, y, c):
        if 0 <= x < self.w and 0 <= y < self.h:
            i = (y * self.w + x) * 3
            self.px[i:i + 3] = bytes(c)

    def line(self, x0, y0, x1, y1, c, width=1):
        n = max(abs(x1 - x0), abs(y1 - y0), 1)
        for k in range(n + 1):
            x = round(x0 + (x1 - x0) * k / n)
            y = round(y0 + (y1 - y0) * k / n)
            for dx in range(width):
                for dy in range(width):
                    self.dot(x + dx - width // 2, y + dy - width // 2, c)

    def text(self, x, y, s, c=(0, 0, 0), scale=2, vertical=False):
        for ch in s:
            g = FONT.get(ch, FONT.get(ch.upper(), FONT[' ']))
            for r, bits in enumerate(g):
                for col in range(5):
                    if bits >> (4 - col) & 1:
                        for sx in range(scale):
                            for sy in range(scale):
                                if vertical:
                                    self.dot(x + r * scale + sy, y - col * scale - sx, c)
                                else:
                                    self.dot(x + col * scale + sx, y + r * scale + sy, c)
            if vertical:
                y -= 6 * scale
            else:
                x += 6 * scale

    def png(self, path):
        raw = b''.join(b'\x00' + bytes(self.px[y * self.w * 3:(y + 1) * self.w * 3]) for y in range(self.h))

        def chunk(t, d):
            return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
        with open(path, 'wb') as f:
            f.write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', self.w, self.h, 8, 2, 0, 0, 0))
                    + chunk(b'IDAT', zlib.compress(raw, 9)) + chunk(b'IEND', b''))


def nice_step(span):
    for s in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000):
        if span / s <= 8:
            return s
    return span / 8


def main(argv):
    if len(argv) < 6:
        sys.exit('usage: plot_xy.py OUT.png TITLE XLABEL YLABEL NAME=x:y,x:y...')
    out, title, xl, yl = argv[1:5]
    series = []
    for a in argv[5:]:
        name, pts = a.split('=', 1)
        series.append((name, [tuple(float(v) for v in p.split(':')) for p in pts.split(',') if p]))
    xs = [p[0] for _, s in series for p in s]
    ys = [p[1] for _, s in series for p in s]
    xmax, ymax = max(xs), max(ys) * 1.08
    W, H, L, R, T, B = 900, 560, 90, 30, 50, 70
    cv = Canvas(W, H)
    X = lambda x: round(L + x / xmax * (W - L - R))
    Y = lambda y: round(H - B - y / ymax * (H - T - B))
    cv.line(L, T, L, H - B, (0, 0, 0))
    cv.line(L, H - B, W - R, H - B, (0, 0, 0))
    ys_ = nice_step(ymax)
    v = 0
    while v <= ymax:
        cv.line(L - 5, Y(v), W - R, Y(v), (225, 225, 225))
        cv.line(L - 5, Y(v), L, Y(v), (0, 0, 0))
        s = '%g' % v
        cv.text(L - 10 - len(s) * 12, Y(v) - 7, s)
        v += ys_
    for x in sorted(set(xs)):
        cv.line(X(x), H - B, X(x), H - B + 5, (0, 0, 0))
        s = '%g' % x
        cv.text(X(x) - len(s) * 6, H - B + 10, s)
    cv.text(L, 15, title, scale=2)
    cv.text((W - len(xl) * 12) // 2, H - 28, xl)
    cv.text(12, (H + len(yl) * 12) // 2, yl, vertical=True)
    for k, (name, pts) in enumerate(series):
        c = COLOURS[k % len(COLOURS)]
        pts.sort()
        for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
            cv.line(X(x0), Y(y0), X(x1), Y(y1), c, width=2)
        for x, y in pts:
            for d in range(-4, 5):
                cv.line(X(x) - 4, Y(y) + d, X(x) + 4, Y(y) + d, c)
        cv.line(L + 20, T + 15 + 22 * k, L + 50, T + 15 + 22 * k, c, width=3)
        cv.text(L + 60, T + 8 + 22 * k, name, c)
    cv.png(out)


if __name__ == '__main__':
    main(sys.argv)
