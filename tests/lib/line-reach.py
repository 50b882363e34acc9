#!/usr/bin/env python3
"""Every line the data allows, against the one hgtrace stored and its bound.

Usage: line-reach.py HOST_REPORT GUEST_RAW PID CPU BEFORE AFTER BOUND
HOST_REPORT: `trace-cmd report -t HOST` (its sched_switch lines are read);
GUEST_RAW: `trace-cmd report --raw-ts GUEST` (guest CPU CPU's events, in ns);
PID: the vCPU thread of guest CPU CPU; BEFORE, AFTER: `trace-cmd dump --options` of the
guest file before and after the refinement (the channel's samples: the first TIME_SHIFT;
the stored line: the last); BOUND: the channel's bound (ns).

On its own, from trace-cmd's text: the thread's running windows (a switch to it -> the
next away from it; a switch away with none to it seen: since the previous switch on that
CPU; one it was not switched out of: until the next switch there), and for each rate rho
on a grid of 0.1 ppm over +-1000 ppm, every offset c at the events' middle tm for which
the line o(t) = c + rho (t - tm) puts each event inside a window (or beyond the host's
span of the thread, where nothing is known) and passes within BOUND of every channel
sample. The truth is one of those lines. Prints "ok ..." when every line found is within
the bound stored of the stored line at both ends of the events' span, else "FAIL ...".
"""
import bisect
import re
import sys

host_rep, guest_raw, pid, gcpu, before, after, chbound = sys.argv[1:8]
pid, gcpu, chbound = int(pid), int(gcpu), int(chbound)

sw = re.compile(r"^\s*.*?-\d+\s+\[(\d+)\]\s+(\d+)\.(\d+): sched_switch:\s+.*:(\d+) \[-?\d+\] \S+ ==> .*:(\d+) \[")
wins, last_sw, state, opened, oncpu, first, last = [], {}, None, None, None, None, None
for line in open(host_rep, errors="replace"):
    m = sw.match(line)
    if not m:
        continue
    cpu, ts = int(m.group(1)), int(m.group(2)) * 10**9 + int(m.group(3).ljust(9, "0")[:9])
    prev, nxt = int(m.group(4)), int(m.group(5))
    if prev == pid or nxt == pid:
        first = ts if first is None else first
        last = ts
    if prev == pid:
        if state == "in" and oncpu == cpu:
            wins.append((opened, ts))
        elif cpu in last_sw:
            wins.append((last_sw[cpu], ts))
        state = "out"
    elif state == "in" and oncpu == cpu:
        wins.append((opened, ts))
        state = "out"
    if nxt == pid:
        state, opened, oncpu = "in", ts, cpu
    last_sw[cpu] = ts
wins.sort()
starts = [w[0] for w in wins]
most_len = max(w[1] - w[0] for w in wins)

ev = []
for line in open(guest_raw, errors="replace"):
    m = re.match(r"^\s*.*?-\d+\s+\[(\d+)\]\s+(\d+):", line)
    if m and int(m.group(1)) == gcpu:
        ev.append(int(m.group(2)))
ev.sort()


def shifts(path):
    """The TIME_SHIFTs of `trace-cmd dump --options`: [per CPU [(time, offset)]]."""
    out, cnt, samples = [], [], []
    for line in open(path, errors="replace"):
        if "Option TimeShift" in line:
            cnt, samples = [], []
            out.append((cnt, samples))
        m = re.match(r"^(\d+) \[samples count for CPU", line.strip())
        if m:
            cnt.append(int(m.group(1)))
        m = re.match(r"^(-?\d+) \S+ \S+ (\d+)\[offset", line.strip())
        if m:
            samples.append((int(m.group(2)), int(m.group(1))))
    res = []
    for cnt, samples in out:
        per, k = [], 0
        for n in cnt:
            per.append(samples[k:k + n])
            k += n
        res.append(per)
    return res


channel = shifts(before)[0][gcpu]
stored = shifts(after)[-1][gcpu]
m = re.search(r"bound=(\d+)", open(after, errors="replace").read().split("refined by the trace")[-1])
bound = int(m.group(1)) if m else -1


def stored_at(t):
    if len(stored) == 1:
        return stored[0][1]
    (t0, o0), (t1, o1) = stored[0], stored[-1]
    return o0 + (t - t0) * (o1 - o0) / (t1 - t0)


g0, gn = ev[0], ev[-1]
tm = (g0 + gn) // 2


def feasible(rho):
    """The offsets c (at tm) of rate rho: a list of [lo, hi]."""
    lo, hi = -2**62, 2**62
    for t, o in channel:
        at = o - rho * (t - tm)
        lo, hi = max(lo, at - chbound), min(hi, at + chbound)
    if lo > hi:
        return []
    cur = [(lo, hi)]
    for g in ev:
        gp = g + rho * (g - tm)
        # c such that gp + c is in a window, or outside [first, last]
        a, b = gp + cur[0][0], gp + cur[-1][1]
        allowed = [(-2**62, first - 1 - gp), (last + 1 - gp, 2**62)]
        i = bisect.bisect_left(starts, a - most_len)
        while i < len(wins) and wins[i][0] <= b:
            allowed.append((wins[i][0] - gp, wins[i][1] - gp))
            i += 1
        nxt = []
        for x, y in cur:
            for p, q in allowed:
                u, v = max(x, p), min(y, q)
                if u <= v:
                    nxt.append((u, v))
        if not nxt:
            return []
        nxt.sort()
        cur = [nxt[0]]
        for u, v in nxt[1:]:
            if u <= cur[-1][1]:
                cur[-1] = (cur[-1][0], max(cur[-1][1], v))
            else:
                cur.append((u, v))
    return cur


worst, rates, seen = 0.0, 0, None
for k in range(-10000, 10001):
    rho = k * 1e-7
    pieces = feasible(rho)
    if not pieces:
        continue
    rates += 1
    seen = (seen[0], rho) if seen else (rho, rho)
    for lo, hi in pieces:
        for c in (lo, hi):
            for t in (g0, gn):
                worst = max(worst, abs(c + rho * (t - tm) - stored_at(t)))
ok = rates > 0 and bound >= 0 and worst <= bound
print("%s %d events, %d windows; %d rates of 20001 hold a line (%.1f..%.1f ppm); the farthest "
      "such line %.0f ns from the stored one at the span's ends, bound %d" %
      ("ok" if ok else "FAIL", len(ev), len(wins), rates, (seen or (0, 0))[0] * 1e6,
       (seen or (0, 0))[1] * 1e6, worst, bound))
sys.exit(0 if ok else 1)
