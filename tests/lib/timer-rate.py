#!/usr/bin/env python3
"""The TSC rate a trace's own timers show, from `trace-cmd report -t FILE` (times in cycles):
hrtimer_expire_entry's now= (CLOCK_MONOTONIC ns) at the first and the last expiry against
their timestamps, Hz rounded. Prints it, or nothing when under 10 ms of expiries.

Usage: timer-rate.py TRACE_CMD_REPORT.txt
"""
import re
import sys

exp = re.compile(r"\]\s*(\d+): hrtimer_expire_entry:.*\snow=(\d+)")
first = last = None
for l in open(sys.argv[1], errors="replace"):
    m = exp.search(l)
    if m:
        t, n = int(m.group(1)), int(m.group(2))
        if first is None or t < first[0]:
            first = (t, n)
        if last is None or t > last[0]:
            last = (t, n)
if first and last and last[1] - first[1] >= 10000000 and last[0] > first[0]:
    print(int(1e9 / ((last[1] - first[1]) / (last[0] - first[0])) + 0.5))
