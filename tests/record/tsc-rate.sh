#!/usr/bin/env bash
# record -C x86-tsc stores the TSC rate (a CPUSTAT line "hgtrace clock: x86-tsc at HZ Hz,
# ..."): the report still shows cycles, as trace-cmd's does, and why, view and export show
# ns at that rate. The rate is checked against one the test measures itself: markers the
# workload writes at the start and the end, each between two CLOCK_MONOTONIC_RAW reads,
# their TSC times from trace-cmd's report; the tolerance is what those brackets allow.
# Usage: tsc-rate.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
command -v trace-cmd > /dev/null || tap_skip_all "trace-cmd is not installed"
[ -e /sys/kernel/tracing/trace_clock ] || tap_skip_all "no tracefs"
grep -qw x86-tsc /sys/kernel/tracing/trace_clock || tap_skip_all "no x86-tsc trace clock"
tap_workdir

# The workload: 20 markers at the start and 20 after 1.5 s, each bracketed by
# CLOCK_MONOTONIC_RAW reads; the recorder (its parent) records into hgtrace-PARENT_PID.
cat > work.py << 'PYEOF'
import os, time
fd = os.open("/sys/kernel/tracing/instances/hgtrace-%d/trace_marker" % os.getppid(), os.O_WRONLY)
raw = lambda: time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
with open("brackets.txt", "w") as f:
    for tag in ("A", "B"):
        for i in range(20):
            a = raw()
            os.write(fd, b"rate-%s-%d\n" % (tag.encode(), i))
            b = raw()
            f.write("%s %d %d %d\n" % (tag, i, a, b))
        if tag == "A":
            time.sleep(1.5)
PYEOF
if ! "$HGTRACE" record -C x86-tsc -e sched:sched_switch -o r.dat -- python3 work.py > rec.log 2>&1; then
	tap_fail "record -C x86-tsc: $(tail -3 rec.log)"
	tap_done
fi
line=$(trace-cmd report --stat r.dat 2> /dev/null | grep '^hgtrace clock: x86-tsc at ')
hz=$(echo "$line" | sed -n 's/^hgtrace clock: x86-tsc at \([0-9]*\) Hz.*/\1/p')
ppm=$(echo "$line" | sed -n 's/.*+-\([0-9.]*\) ppm.*/\1/p')
if [ -z "$hz" ]; then
	tap_fail "no 'hgtrace clock:' line in trace-cmd report --stat: $(trace-cmd report --stat r.dat 2>&1 | tail -5 | tr '\n' '|')"
	tap_done
fi
tap_ok "trace-cmd report --stat shows the stored rate: $line"

# The test's own rate: per end, the marker with the tightest bracket.
trace-cmd report -t r.dat > r.tc 2> /dev/null
if res=$(python3 - "$hz" "${ppm:-0}" << 'PYEOF'
import re, sys
hz, ppm = int(sys.argv[1]), float(sys.argv[2])
ts = {}
for l in open("r.tc"):
    m = re.search(r"\]\s*(\d+): \S+:\s+(?:\S+: )?rate-([AB])-(\d+)", l)
    if m:
        ts[(m.group(2), int(m.group(3)))] = int(m.group(1))
best = {}
for l in open("brackets.txt"):
    tag, i, a, b = l.split()
    i, a, b = int(i), int(a), int(b)
    if (tag, i) in ts and (tag not in best or b - a < best[tag][1] - best[tag][0]):
        best[tag] = (a, b, ts[(tag, i)])
if len(best) != 2:
    print("markers missing from trace-cmd's report: %d of 40 found" % len(ts)); sys.exit(1)
(a0, b0, t0), (a1, b1, t1) = best["A"], best["B"]
span = (a1 + b1) / 2 - (a0 + b0) / 2
mine = (t1 - t0) / span * 1e9
tol = 1e6 * ((b0 - a0) / 2 + (b1 - a1) / 2) / span + ppm + 1
d = 1e6 * (hz / mine - 1)
print("stored %d Hz, measured here %.0f Hz over %.3f s: %+.2f ppm (allowed +-%.2f: the brackets %d and %d ns, the stored +-%.2f, 1 of rounding)"
      % (hz, mine, span / 1e9, d, tol, b0 - a0, b1 - a1, ppm))
sys.exit(0 if abs(d) <= tol else 1)
PYEOF
); then
	tap_ok "the rate: $res"
else
	tap_fail "the rate: $res"
fi

# The report is trace-cmd's: cycles, line for line.
"$HGTRACE" report --no-latency r.dat > h.txt 2> /dev/null
trace-cmd report r.dat > t.txt 2> /dev/null
n=$(grep -c 'rate-' t.txt)
[ "$n" = 40 ] && tap_cmp "report: trace-cmd's lines, in cycles ($(wc -l < t.txt) lines, 40 markers)" h.txt t.txt ||
	tap_fail "trace-cmd's report shows $n of 40 markers"

# export: every event at trace-cmd's --ts2secs time for the stored rate.
trace-cmd report -t --ts2secs "$hz" r.dat > r.ns 2> /dev/null
if "$HGTRACE" export -o r.json r.dat 2> err.txt &&
	python3 "$here/sink/check-export.py" r.json r.ns > chk.txt 2>&1; then
	while read -r l; do tap_ok "export at the stored rate: ${l#ok }"; done < chk.txt
else
	tap_fail "export at the stored rate: $(cat err.txt chk.txt | tr '\n' ' ')"
fi
# view and why: the stored rate, said to be the recorder's.
if "$HGTRACE" view -o r.html r.dat 2> err.txt &&
	grep -q "\"ns\":true,\"tscHz\":$hz,\"tscFrom\":\"the recorder's\"" r.html; then
	tap_ok "view: ns at $hz Hz, the recorder's rate"
else
	tap_fail "view: $(cat err.txt) $(grep -o '"ns":[a-z]*,"tscHz":[0-9]*,"tscFrom":"[^"]*"' r.html)"
fi
if "$HGTRACE" why --json r.dat > why.json 2> err.txt &&
	[ "$(python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print(r["tsc_hz"], r["tsc_rate_from"])' why.json)" = "$hz the recorder's" ]; then
	tap_ok "why: ns at $hz Hz, the recorder's rate"
else
	tap_fail "why: $(cat err.txt) $(head -c 200 why.json)"
fi
tap_done
