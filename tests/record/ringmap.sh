#!/usr/bin/env bash
# record --mmap takes pages from the ring buffer's mapping (Linux 6.10 on:
# lib/record/ringmap.c), and a page the writer is still on goes out in parts: the flush of a quiet CPU stores the
# events so far, the rest follows behind a header that must carry the time of the events
# before them. The workload writes markers in groups of 10 and after each group waits until
# its last marker is in the recording's files (the flush, --flush-ms 20, mid-page: ten
# markers fill a tenth of a page), so the next group lands on a page that was cut. Every
# marker holds the CLOCK_MONOTONIC time read just before its write and the recording's
# clock is mono: trace-cmd's report (the oracle) must show each marker once, in order, at
# a time between the reads before and after its write. A page time taken from the page's
# start instead of the cut puts the events after a cut 20 ms and more too early. The same
# by default (spliced pages, the kernel's own partial reads of the pages cut).
# Usage: ringmap.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
command -v trace-cmd > /dev/null || tap_skip_all "trace-cmd is not installed"
[ -e /sys/kernel/tracing/trace_clock ] || tap_skip_all "no tracefs"
grep -qw mono /sys/kernel/tracing/trace_clock || tap_skip_all "no mono trace clock"
tap_workdir

N=300
cat > work.py << 'PYEOF'
import glob, os, sys, time
n = int(sys.argv[1])
fd = os.open("/sys/kernel/tracing/instances/hgtrace-%d/trace_marker" % os.getppid(), os.O_WRONLY)
mono = lambda: time.clock_gettime_ns(time.CLOCK_MONOTONIC)

def stored(text):
    for f in glob.glob("r.dat.recording/cpu*"):
        with open(f, "rb") as h:
            if text in h.read():
                return True
    return False

with open("brackets.txt", "w") as out:
    for i in range(n):
        a = mono()
        os.write(fd, b"rm-%d-%d\n" % (i, a))
        b = mono()
        out.write("%d %d %d\n" % (i, a, b))
        if i % 10 == 9:
            deadline = time.monotonic() + 10
            while not stored(b"rm-%d-" % i):
                if time.monotonic() > deadline:
                    sys.exit("marker %d not stored within 10 s" % i)
                time.sleep(0.002)
PYEOF

# check MODE: trace-cmd's report of r.dat against brackets.txt
check() {
	trace-cmd report -t r.dat > r.tc 2> /dev/null
	python3 - "$N" << 'PYEOF'
import re, sys
n = int(sys.argv[1])
br = {}
for l in open("brackets.txt"):
    i, a, b = map(int, l.split())
    br[i] = (a, b)
seen, bad, last = [], [], -1
for l in open("r.tc"):
    m = re.search(r"\]\s*(\d+)\.(\d{9}): \S+:\s+(?:\S+: )?rm-(\d+)-(\d+)", l)
    if not m:
        continue
    ts, i = int(m.group(1)) * 10**9 + int(m.group(2)), int(m.group(3))
    seen.append(i)
    a, b = br[i]
    if not a <= ts <= b:
        bad.append("marker %d at %d, written between %d and %d (%+d ns)" %
                   (i, ts, a, b, ts - a if ts < a else ts - b))
if sorted(seen) != list(range(n)) or len(seen) != n:
    print("markers: %d shown, %d distinct, want 0..%d once each" % (len(seen), len(set(seen)), n - 1))
    sys.exit(1)
if bad:
    print("%d of %d markers outside their write: %s" % (len(bad), n, "; ".join(bad[:3])))
    sys.exit(1)
print("%d markers once each, each between the reads around its write" % n)
PYEOF
}

for mode in map splice; do
	rm -rf r.dat r.dat.recording brackets.txt
	flags=
	[ $mode = map ] && flags=--mmap
	# a job: a test ended by its timeout ends the recorder too (tap.sh's cleanup)
	"$HGTRACE" record -C mono --flush-ms 20 $flags -e sched:sched_process_exit -o r.dat \
		-- python3 work.py $N > rec.log 2>&1 &
	if ! wait $!; then
		tap_fail "$mode: record: $(tail -3 rec.log | tr '\n' '|')"
		continue
	fi
	how=$(sed -n 's/.*bytes of ring-buffer pages (\(.*\))$/\1/p' rec.log)
	if [ $mode = map ]; then
		major=$(uname -r | cut -d. -f1)
		minor=$(uname -r | cut -d. -f2)
		if [ "$major" -gt 6 ] || { [ "$major" = 6 ] && [ "$minor" -ge 10 ]; }; then
			[ "$how" = "from the ring buffer's mapping" ] ||
				tap_fail "map: Linux $(uname -r) maps the ring buffer, yet the pages were: $how"
		elif [ "$how" != "from the ring buffer's mapping" ]; then
			tap_skip "map: the pages of Linux $(uname -r)" "no ring-buffer mapping before 6.10 ($how)"
			continue
		fi
	else
		[ "$how" = spliced ] || tap_fail "$mode: no option, yet the pages were: $how"
	fi
	if res=$(check); then
		tap_ok "$mode ($how): $res"
	else
		tap_fail "$mode ($how): $res"
	fi
done
tap_done
