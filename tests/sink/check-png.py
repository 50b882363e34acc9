#!/usr/bin/env python3
"""A screenshot of a page that drew something: a PNG of the expected size (Debian's
chromium --screenshot), decoded here (zlib and PNG's five row filters; no image library),
whose timeline area (below TOP % of the height, default 12: the header, the bar and the
delays list above it; right of the search box and the track labels: from 16 % of the
width) holds at least MIN distinct colours. A blank page, or one whose script failed
before drawing its canvas, shows a few there.

Usage: check-png.py FILE.png WIDTH HEIGHT MIN_COLOURS [TOP]
"""
import struct
import sys
import zlib


def fail(msg):
    print("FAIL " + msg)
    sys.exit(1)


path, want_w, want_h, min_colours = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
top = int(sys.argv[5]) if len(sys.argv) > 5 else 12
data = open(path, "rb").read()
if data[:8] != b"\x89PNG\r\n\x1a\n":
    fail("%s is not a PNG" % path)
at, idat, w = 8, b"", None
while at + 8 <= len(data):
    n, kind = struct.unpack(">I4s", data[at:at + 8])
    body = data[at + 8:at + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat += body
    at += 12 + n
if w is None or (w, h) != (want_w, want_h):
    fail("%s: %sx%s, want %dx%d" % (path, w, w and h, want_w, want_h))
if depth != 8 or ctype not in (2, 6) or interlace:
    fail("%s: depth %d colour type %d interlace %d: not an 8-bit RGB(A) PNG" % (path, depth, ctype, interlace))
bpp = 3 if ctype == 2 else 4
raw = zlib.decompress(idat)
stride = w * bpp
prev = bytearray(stride)
colours = set()
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if f == 1:
            line[i] = (line[i] + a) & 255
        elif f == 2:
            line[i] = (line[i] + b) & 255
        elif f == 3:
            line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        elif f != 0:
            fail("%s: row %d has filter %d" % (path, y, f))
    if y >= h * top // 100:
        for x in range(w * 16 // 100 * bpp, stride, bpp):
            colours.add(bytes(line[x:x + 3]))
    prev = line
if len(colours) < min_colours:
    fail("%s: the timeline area has %d colours, a drawn timeline has %d at least" % (path, len(colours), min_colours))
print("ok %s: %dx%d, %d colours in its timeline area (drawn)" % (path.split("/")[-1], w, h, len(colours)))
