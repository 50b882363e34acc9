#!/usr/bin/env python3
"""The flight soaks' check of a final file (bench/flight-soak.sh, flight-soak-listen.sh):
reads `hgtrace report` of it on stdin and prints "FIRST LAST GAPS OTHER DROPS": the first
and last numbered marker (marker-writer.py's "m N"), the gaps in their numbers, how many
of those gaps are not where the kernel's own ring dropped events, and the records flagged
so.

A "CPU:N [... EVENTS DROPPED]" line flags that CPU's next record: the writer outran the
reader there. A gap is the kernel's when some CPU's next record from the gap on has that
flag. Counting starts at the first record of the CPU whose pages start last: before it,
the other CPUs reach back further (a span kept begins with the page each CPU was writing).
A marker out of order (a CPU's events placed before another's that came first) is two
gaps that are no one's drop.
"""
import re
import sys

recs, pend = [], set()  # (cpu, marker, dropped before it)
for l in sys.stdin:
    m = re.match(r"CPU:(\d+) \[.*EVENTS DROPPED\]$", l)
    if m:
        pend.add(int(m.group(1)))
        continue
    m = re.search(r"\[(\d+)\] .*tracing_mark_write: m (\d+) ", l)
    if m:
        c = int(m.group(1))
        recs.append((c, int(m.group(2)), c in pend))
        pend.discard(c)
cpus = sorted({c for c, _, _ in recs})
# for each position, the next record of each CPU from there on
nxt = {c: [None] * (len(recs) + 1) for c in cpus}
for i in range(len(recs) - 1, -1, -1):
    for c in cpus:
        nxt[c][i] = i if recs[i][0] == c else nxt[c][i + 1]
start = max((next(i for i, r in enumerate(recs) if r[0] == c) for c in cpus), default=0)
gaps = other = 0
for i in range(start + 1, len(recs)):
    if recs[i][1] != recs[i - 1][1] + 1:
        gaps += 1
        if not any(nxt[c][i] is not None and recs[nxt[c][i]][2] for c in cpus):
            other += 1
drops = sum(1 for r in recs if r[2])
print(recs[start][1] if recs else "-", recs[-1][1] if recs else "-", gaps, other, drops)
