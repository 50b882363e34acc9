#!/usr/bin/env python3
"""Check `hgtrace export` JSON against trace-cmd's report of the same files.

Usage: check-export.py OUT.json TRACE_CMD_REPORT.txt [--guest-mode] [--tcg PID=VCPU,...]
                       [--raw TRACE_CMD_RAW_REPORT.txt]
TRACE_CMD_REPORT.txt is `trace-cmd report -t -i F1 [-i F2 ...]` (file column when several);
the raw one the same with -R (each event's fields as name=value).
Prints one line per check; exits 1 on the first failed one.
"""
import json, re, sys
import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tcreport import fail, ns, report_events  # noqa: E402
from collections import Counter

data = json.load(open(sys.argv[1]), parse_float=str)
evs = data["traceEvents"]
procs = {e["pid"]: e["args"]["name"] for e in evs if e["ph"] == "M" and e["name"] == "process_name"}
got = Counter()
for e in evs:
    if e["ph"] == "i":
        got[(procs[e["pid"]], (e["tid"] - 1) // 3, ns(e["ts"]) , e["name"])] += 1
# trace-cmd: "[FILE: ]comm-pid [cpu] ts: event: ..."
want = Counter(report_events(sys.argv[2], procs[min(procs)]))
if sum(want.values()) < 100:
    fail("trace-cmd's report has only %d events" % sum(want.values()))
if got != want:
    extra, missing = got - want, want - got
    fail("instants differ from trace-cmd's events: %d extra (e.g. %s), %d missing (e.g. %s)" % (
        sum(extra.values()), list(extra)[:2], sum(missing.values()), list(missing)[:2]))
print("ok every one of %d events is an instant once, at trace-cmd's time, on its file and CPU"
      % sum(want.values()))
# and carries the task and the text trace-cmd prints for it
got = Counter()
for e in evs:
    if e["ph"] == "i":
        a = e["args"]
        got[(procs[e["pid"]], (e["tid"] - 1) // 3, ns(e["ts"]), e["name"],
             "%s-%d" % (a["common_comm"], a["common_pid"]), a["common_info"].strip())] += 1
want = Counter(report_events(sys.argv[2], procs[min(procs)], text=True))
if got != want:
    extra, missing = got - want, want - got
    fail("instants' task or text differ from trace-cmd's lines: %d extra (e.g. %s), %d missing (e.g. %s)" % (
        sum(extra.values()), list(extra)[:1], sum(missing.values()), list(missing)[:1]))
print("ok every one of %d instants has trace-cmd's comm-pid and text (args common_comm, common_pid, common_info)"
      % sum(want.values()))
# and its fields: each of an instant's args but the common_ ones has the value trace-cmd's
# raw report (-R) prints for that field: numbers (decimal or hex there) equal, strings equal
if "--raw" in sys.argv:
    raw = {}
    for k in report_events(sys.argv[sys.argv.index("--raw") + 1], procs[min(procs)], text=True):
        raw.setdefault(k[:4], []).append(k[5])

    def raw_fields(text, names):
        """The value of each of @names in @text ("a=1 b=x y c=0x3"), by where each name=
        starts, in order."""
        at, pos = [], 0
        for n in names:
            j = 0 if pos == 0 and text.startswith(n + "=") else text.find(" " + n + "=", pos) + 1
            if j <= 0 and not (j == 0 and pos == 0 and text.startswith(n + "=")):
                return None
            at.append((n, j))
            pos = j + len(n) + 1
        return {n: text[j + len(n) + 1:(at[i + 1][1] - 1 if i + 1 < len(at) else len(text))].strip()
                for i, (n, j) in enumerate(at)}

    def number(r):
        try:
            return int(r, 16) if r.lower().startswith(("0x", "-0x")) else int(r, 10)
        except ValueError:
            return None

    def same(j, r):
        """JSON value @j against trace-cmd's @r: None when trace-cmd printed a number as a
        symbol (a function pointer's name), which is not compared."""
        if isinstance(j, str):
            return j.strip() == r
        v = number(r)
        if v is None:
            return None
        return v == j or any(j < 0 and j % (1 << b) == v for b in (8, 16, 32, 64))

    nf = nev = nsym = 0
    for e in evs:
        if e["ph"] != "i":
            continue
        names = [k for k in e["args"] if not k.startswith("common_")]
        if not names:
            continue
        key = (procs[e["pid"]], (e["tid"] - 1) // 3, ns(e["ts"]), e["name"])
        texts = raw.get(key)
        if not texts:
            fail("instant %s: not in trace-cmd's raw report" % (key,))
        vals = [raw_fields(t, names) for t in texts]
        ok = [v for v in vals if v and all(same(e["args"][n], v[n]) is not False for n in names)]
        if not ok:
            fail("instant %s: fields %s, trace-cmd's raw report: %s" % (
                key, {n: e["args"][n] for n in names}, texts))
        sym = sum(same(e["args"][n], ok[0][n]) is None for n in names)
        nsym += sym
        nf += len(names) - sym
        nev += 1
    if nev < 100:
        fail("only %d instants with fields" % nev)
    print("ok %d fields of %d instants have the values trace-cmd's raw report prints (%d it "
          "prints as symbols not compared)" % (nf, nev, nsym))
# complete events: none overlaps another of its thread
threads = {}
for e in evs:
    if e["ph"] == "X":
        threads.setdefault((e["pid"], e["tid"]), []).append((ns(e["ts"]), ns(e["dur"])))
# and each lies within its file's span: from its first event to its last (a slice that
# ended before it began would stretch past the end)
span = {}
for e in evs:
    if e["ph"] == "i":
        t = ns(e["ts"])
        lo, hi = span.get(e["pid"], (t, t))
        span[e["pid"]] = (min(lo, t), max(hi, t))
for (pid, tid), v in threads.items():
    lo, hi = span.get(pid, (0, -1))
    for a, d in v:
        if a < lo or a + d > hi or d < 0:
            fail("thread %s: [%d, +%d] is not within its file's events, [%d, %d]" % ((pid, tid), a, d, lo, hi))
n = 0
for k, v in threads.items():
    v.sort()
    for (a, d), (b, _) in zip(v, v[1:]):
        if a + d > b:
            fail("thread %s: [%d, +%d] overlaps the next at %d" % (k, a, d, b))
    n += len(v)
if n == 0:
    fail("no complete events")
print("ok %d complete events on %d threads, none overlapping, each within its file's events" % (n, len(threads)))
if "--guest-mode" in sys.argv:
    gm = [e for e in evs if e["ph"] == "X" and e["name"].startswith("vCPU ")]
    exits = sum(c for k, c in want.items() if k[3] == "kvm_exit")
    if not gm or len(gm) > exits:
        fail("%d guest-mode intervals for %d kvm_exit events" % (len(gm), exits))
    print("ok %d guest-mode intervals (kvm_entry to kvm_exit) for %d kvm_exit events" % (len(gm), exits))
if "--tcg" in sys.argv:
    # A TCG host: guest mode is when a vCPU thread runs. The intervals, derived here from
    # trace-cmd's sched_switch lines of the host file: from a vCPU thread's switch-in to its
    # switch-out on that CPU (from the CPU's first event for a thread running when the
    # trace began); one still running at the end is left out (exported by another name).
    import re
    vmap = {int(p): int(i) for p, i in (kv.split("=") for kv in sys.argv[sys.argv.index("--tcg") + 1].split(","))}
    host = procs[min(procs)]
    first = {}
    for col, cpu, t, _ in report_events(sys.argv[2], host):
        if col == host:
            first.setdefault(cpu, t)
    sw = re.compile(r"^\s*(\S+): .*?\[(\d+)\]\s*(\d+(?:\.\d+)?): sched_switch:\s+.*:(\d+) \[-?\d+\] \S+ ==> .*:(\d+) \[-?\d+\]\s*$")
    running, switched, want_iv = {}, set(), Counter()
    for l in open(sys.argv[2], errors="replace"):
        m = sw.match(l)
        if not m or m.group(1) != host + ":" and m.group(1) != host:
            continue
        cpu, t, prev, nxt = int(m.group(2)), ns(m.group(3)), int(m.group(4)), int(m.group(5))
        if prev in vmap:
            pid, start = running.pop(cpu, (prev, None))
            if start is None and cpu not in switched:
                start = first[cpu]
            if pid == prev and start is not None and t > start:
                want_iv[(cpu, start, t, vmap[prev])] += 1
        running.pop(cpu, None)
        switched.add(cpu)
        if nxt in vmap:
            running[cpu] = (nxt, t)
    hp = min(procs)
    got_iv = Counter()
    for e in evs:
        if e["ph"] == "X" and e["pid"] == hp and e["tid"] % 3 == 0 and e["name"].startswith("vCPU "):
            a = ns(e["ts"])
            got_iv[((e["tid"] - 1) // 3, a, a + ns(e["dur"]), int(e["name"][5:]))] += 1
    if not want_iv:
        fail("trace-cmd's report shows no vCPU thread running")
    if got_iv != want_iv:
        extra, missing = got_iv - want_iv, want_iv - got_iv
        fail("guest mode differs from the vCPU threads' running intervals: %d extra (e.g. %s), %d missing (e.g. %s)" % (
            sum(extra.values()), sorted(extra)[:2], sum(missing.values()), sorted(missing)[:2]))
    print("ok TCG guest mode: %d intervals, each a vCPU thread's run in trace-cmd's sched_switch lines (%d vCPUs)"
          % (sum(want_iv.values()), len(set(k[3] for k in want_iv))))
