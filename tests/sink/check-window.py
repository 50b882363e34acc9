#!/usr/bin/env python3
"""Check a window that `hgtrace why --save` wrote against the full pair, both as trace-cmd
reports them (`trace-cmd report -t -i HOST -i GUEST`).

Usage: check-window.py FULL.tc HOST GUEST WINDOW.tc WHOST WGUEST FROM TO AROUND_NS
FROM and TO: the delay as why printed it (seconds.nanoseconds).
Every event of the window is one of the full pair's, on the same side, at the same time, with
the same text; every event of the full pair from AROUND_NS before FROM to AROUND_NS after TO
is in the window; the window leaves some out. Prints one line per check; exits 1 on the
first failed one.
"""
import re
import sys
from collections import Counter

line = re.compile(r"^\s*(\S+?): (.*\[\d+\]\s+(\d+)\.(\d+):.*)$")


def fail(msg):
    print("FAIL " + msg)
    sys.exit(1)


def events(path, roles):
    out = []
    for l in open(path, errors="replace"):
        m = line.match(l.rstrip("\n"))
        if not m or m.group(1) not in roles:
            continue
        out.append((roles[m.group(1)], m.group(2), int(m.group(3)) * 10**9 + int(m.group(4).ljust(9, "0"))))
    return out


def ns(s):
    a, b = s.split(".")
    return int(a) * 10**9 + int(b.ljust(9, "0"))


full_tc, host, guest, win_tc, whost, wguest, frm, to, around = sys.argv[1:10]
full = events(full_tc, {host: "host", guest: "guest"})
win = events(win_tc, {whost: "host", wguest: "guest"})
lo, hi = ns(frm) - int(around), ns(to) + int(around)
if len(full) < 1000:
    fail("the full pair has only %d events" % len(full))
cf, cw = Counter((r, t) for r, t, _ in full), Counter((r, t) for r, t, _ in win)
extra = cw - cf
if extra:
    fail("%d events of the window are not the full pair's (e.g. %s)" % (sum(extra.values()), list(extra)[:1]))
print("ok all %d events of the window are the full pair's, same side, time and text" % len(win))
need = Counter((r, t) for r, t, ts in full if lo <= ts <= hi)
missing = need - cw
if missing:
    fail("%d of the full pair's %d events within the window's span are missing (e.g. %s)" % (
        sum(missing.values()), sum(need.values()), list(missing)[:1]))
if sum(need.values()) < 10:
    fail("only %d events within the window's span" % sum(need.values()))
print("ok all %d events of the full pair from %.3f ms before the delay to as long after are in it"
      % (sum(need.values()), int(around) / 1e6))
if len(win) >= len(full):
    fail("the window has %d events, the full pair %d" % (len(win), len(full)))
print("ok the window leaves out %d of the full pair's %d events" % (len(full) - len(win), len(full)))
