#!/usr/bin/env bash
# listen --record-host --flight: a flight recorder on each guest-driven session. On this
# machine the "guest" is hgtrace agent --now over TCP (127.0.0.1), recording in an
# instance of its own; its command writes numbered markers into that instance's
# trace_marker every 5 ms for 5 s, and "app: hgt-late 7" 2.5 s in. A second session
# writes markers only. Checked, in the trace's own times (trace-cmd report):
#  - session 1: marker:hgt-late fires on the guest's marker, and its window is saved as
#    NAME-flight-1.dat (the host) and NAME-flight-1-trace-NAME.dat (the guest), both read
#    by trace-cmd, the log's lines naming the guest; the marker is taken once, and found
#    again in the saved window (the guest's times move with its sync between searches); the guest's markers in it run without a gap from at least 0.9 s before
#    the trigger to the after time (1 s) after it, and hold the trigger's marker;
#  - the host's window is the host's recording: its sched_switch events span the window;
#  - session 2: no trigger, no window saved (the two files of session 1 are all); each
#    session's summary;
#  - a session whose command's last acts are a pair (a marker to its task's exit, 60 ms):
#    the last search, with the guest's stream at its end and the host's tracing halted,
#    takes it and saves its window;
#  - --flight without --record-host, and --trigger without --flight: one error line each.
# Usage: listen.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/record.sh"
why=$(tracefs_ready) || tap_skip_all "$why"
tap_workdir

inst=hgt_fl_listen$$
# listener_end LOG PATTERN: once LOG has a line of PATTERN (its session's files written;
# 30 s at most), the listener $lp stopped (SIGINT) and waited for
listener_end() {
	for _ in $(seq 1 300); do
		grep -q "$2" "$1" && break
		sleep 0.1
	done
	kill -INT $lp
	wait_exit $lp 30 > /dev/null
}
cat > drive.py << EOF
import os, sys, time
fd = os.open("/sys/kernel/tracing/instances/$inst/trace_marker", os.O_WRONLY)
start = time.monotonic()
n, late = 0, sys.argv[1] == "late"
while time.monotonic() - start < 5:
    n += 1
    os.write(fd, b"hgt-mark %d\n" % n)
    if late and time.monotonic() - start > 2.5:
        os.write(fd, b"app: hgt-late 7\n")
        late = False
    time.sleep(0.005)
print("written", n)
EOF
mkdir out
port=$(free_port)
"$HGTRACE" listen -o out --tcp $port --record-host -e sched:sched_switch --flight \
	--window 1 --after 1 --tick 0.1 --trigger 'marker:hgt-late' 2> listen.log &
lp=$!
wait_listen $port $lp
for s in late quiet; do
	"$HGTRACE" agent --now --tcp 127.0.0.1:$port -B $inst -e sched:sched_process_exit -- \
		python3 drive.py $s > drive-$s.out 2> agent-$s.log
	echo "agent $s: exit $?" >> drive-$s.out
	n=$([ $s = late ] && echo 1 || echo 2)
	wait_for_line listen.log 'wrote .*trace-.*\.dat' 30 > /dev/null
	# the session's end: its guest file written (the n-th "wrote ... trace-")
	for _ in $(seq 1 300); do
		[ "$(grep -c 'wrote .*/trace-[^ ]*\.dat$' listen.log)" -ge $n ] && break
		sleep 0.1
	done
done
kill -INT $lp
wait_exit $lp 30 > /dev/null
rc=$?
[ $rc = 0 ] && grep -q 'exit 0' drive-late.out && grep -q 'exit 0' drive-quiet.out &&
	tap_ok "listen --record-host --flight: 2 sessions of agent --now, both exit 0, the listener too" ||
	tap_fail "listen: exit $rc; $(cat drive-*.out | tr '\n' '|') $(grep -v '^ ' listen.log | tail -8 | tr '\n' '|')"

h=$(ls out/*-flight-1.dat 2> /dev/null | grep -v -- '-flight-1-' | head -1)
g=$(ls out/*-flight-1-*.dat 2> /dev/null | head -1)
if grep -q '^hgtrace flight: net-1: trigger 1: marker:hgt-late: "app: hgt-late 7" by [^ ]*-[0-9]* on trace-[^ ]* CPU [0-9]* at ' listen.log &&
	! grep -q ': not saved (\|not found again' listen.log &&
	[ -n "$h" ] && [ -n "$g" ] && trace-cmd report "$h" > h.txt 2> /dev/null &&
	trace-cmd report -t "$g" > g.txt 2> /dev/null; then
	tap_ok "session 1: marker:hgt-late fired once (its marker found again in the saved window, not taken twice); saved $(basename "$h") and $(basename "$g"), trace-cmd reads both"
else
	tap_fail "session 1: no window: $(ls out | tr '\n' ' '); $(grep 'flight' listen.log | tr '\n' '|')"
fi
r=$(python3 - g.txt << 'EOF'
import re, sys
m, late = [], None
for l in open(sys.argv[1]):
    x = re.search(r" (\d+\.\d+): .*hgt-mark (\d+)$", l)
    if x:
        m.append((int(x.group(2)), float(x.group(1))))
    x = re.search(r" (\d+\.\d+): .*hgt-late 7$", l)
    if x:
        late = float(x.group(1))
inw = [a for a in m if late is not None and late - 0.9 <= a[1] <= late + 1.0]
nums = [a for a, _ in inw]
ok = late is not None and nums and nums == list(range(nums[0], nums[-1] + 1)) and \
    min(t for _, t in m) <= late - 0.9 and max(t for _, t in m) >= late + 1.0
print("%s the guest's window: %d markers, %s to %s without a gap from %.3f s before the "
      "trigger's marker to %.3f s after it" %
      ("ok" if ok else "FAIL", len(m), nums[0] if nums else "-", nums[-1] if nums else "-",
       late - min(t for _, t in m) if m and late else -1,
       max(t for _, t in m) - late if m and late else -1))
EOF
)
case $r in ok*) tap_ok "session 1: ${r#ok }" ;; *) tap_fail "session 1: $r" ;; esac
sw=$(grep -c ' sched_switch: ' h.txt 2> /dev/null)
span=$(trace-cmd report -t "$h" 2> /dev/null | awk '/ sched_switch: / { t = $3 + 0; if (!a) a = t; b = t } END { printf "%.3f", b - a }')
[ "${sw:-0}" -gt 10 ] && awk -v s="$span" 'BEGIN { exit !(s >= 1.5) }' &&
	tap_ok "session 1: the host's window: $sw sched_switch events over $span s" ||
	tap_fail "session 1: the host's window: ${sw:-0} sched_switch events over $span s"
[ "$(ls out/*-flight-*.dat 2> /dev/null | wc -l)" = 2 ] && [ "$(grep -c '^hgtrace flight: net-[12]: cost: ' listen.log)" = 2 ] &&
	tap_ok "session 2: no trigger, no window saved; each session's summary ($(grep -c '^hgtrace flight: net-[12]: cost: ' listen.log))" ||
	tap_fail "session 2: $(ls out | tr '\n' ' '); summaries: $(grep -c '^hgtrace flight: net-[12]: cost: ' listen.log)"

# marker triggers alone: each search reads only the pages no search read before, so every
# page is searched once at most (a search of the whole window each tick would read each
# about window / tick = 10 times)
read -r sm rm < <(sed -n 's/^hgtrace flight: net-1: cost: .*, \([0-9.]*\) MB of pages searched of \([0-9.]*\) MB recorded, [0-9.]* MB left unsearched behind (each page once: marker triggers alone)$/\1 \2/p' listen.log)
[ -n "$sm" ] && awk -v s="$sm" -v r="$rm" 'BEGIN { exit !(s > 0 && s <= r + 0.1) }' &&
	tap_ok "session 1: its searches read $sm MB of the $rm MB of pages recorded: each page once at most" ||
	tap_fail "session 1: searched ${sm:-?} MB of ${rm:-?} MB: $(grep '^hgtrace flight: net-1: cost' listen.log)"

# --max-mb in a flight session counts what the guest's files hold, which the flight
# recorder keeps to its window (4.2 s here), not all the guest sent: 300 markers of 3000
# bytes a second (one a page: 1.2 MB/s whatever the agent's timing) for 20 s, 18 MB of
# markers alone, against a limit of 16 MB (the guest's metadata, its kallsyms, is 5 MB of
# it). The session must run to its end (no "the guest's limit"), the guest's file ending
# with the last marker. (The limit's cut, where nothing is punched out, is
# transport-hostile's.)
cat > pace.py << EOF
import os, time
fd = os.open("/sys/kernel/tracing/instances/$inst/trace_marker", os.O_WRONLY)
pad, n, start = b"x" * 2980, 0, time.monotonic()
while time.monotonic() - start < 20:
    for _ in range(3):
        n += 1
        os.write(fd, b"m %d %s\n" % (n, pad))
    time.sleep(max(0, start + n / 300 - time.monotonic()))
print(n)
EOF
mkdir out2
port=$(free_port)
"$HGTRACE" listen -o out2 --tcp $port --record-host -e sched:sched_switch --flight --max-mb 16 \
	--window 0.5 --after 0.5 --tick 0.1 --trigger 'marker:no-such-marker' 2> listen2.log &
lp=$!
wait_listen $port $lp
"$HGTRACE" agent --now --tcp 127.0.0.1:$port -B $inst -e sched:sched_process_exit -- \
	python3 pace.py > pace.out 2> agent2.log
listener_end listen2.log 'wrote .*/trace-[^ ]*\.dat$\|limit'
n=$(cat pace.out)
gf=$(ls out2/trace-*.dat 2> /dev/null | head -1)
last=$([ -n "$gf" ] && trace-cmd report "$gf" 2> /dev/null | grep -o ' m [0-9]* ' | tail -1 | tr -dc 0-9)
if [ $((${n:-0} * 3000)) -gt $((16 << 20)) ] && ! grep -q "limit" listen2.log && [ "${last:-0}" = "$n" ]; then
	tap_ok "--max-mb 16 in a flight session: $n markers of 3000 bytes sent, not cut; the guest's file ends with marker $last"
else
	tap_fail "--max-mb 16 in a flight session: ${n:-no} markers sent, last in the file ${last:-none}: $(grep -v '^hgtrace flight' listen2.log | tail -4 | tr '\n' '|')"
fi

# A session's last records: its command's last acts are a pair (a task hgtpair's marker to
# its exit, 60 ms or more, on CPU 0; the guest records that task alone) and its exit. The
# guest's stream is at its end and the host's
# tracing halted when the session's flight recorder searches last, so it takes the pair
# (a search while recording waits a flush interval, 1 s here, and a tick for its end).
cat > pair.py << EOF
import os, subprocess, sys, time
time.sleep(1)
os.sched_setaffinity(0, {0})  # the last records on one CPU: the other's end before them
subprocess.run([sys.executable, "$here/flight/hgtpair.py",
                "/sys/kernel/tracing/instances/$inst/trace_marker"], check=True)
print("paired")
EOF
mkdir out3
port=$(free_port)
"$HGTRACE" listen -o out3 --tcp $port --record-host -e sched:sched_switch --flight \
	--window 1 --after 0.5 --tick 0.1 --holdoff 0 \
	--trigger 'pair:print,sched_process_exit:comm == "hgtpair">50ms' 2> listen3.log &
lp=$!
wait_listen $port $lp
"$HGTRACE" agent --now --tcp 127.0.0.1:$port -B $inst -e sched:sched_process_exit \
	-f 'comm == "hgtpair"' -- python3 pair.py > pair.out 2> agent3.log
listener_end listen3.log 'wrote .*/trace-[^ ]*\.dat$'
read -r pn pms < <(sed -n 's/^hgtrace flight: net-1: trigger \([0-9]*\): pair:.* on trace-[^ ]* CPU [0-9]* late: \([0-9.]*\) ms.*/\1 \2/p' listen3.log | head -1)
g3=$(ls out3/*-flight-"${pn:-0}"-*.dat 2> /dev/null | head -1)
if grep -q paired pair.out && [ -n "$pn" ] && awk -v p="$pms" 'BEGIN { exit !(p >= 60) }' &&
	[ -n "$g3" ] && [ "$(trace-cmd report "$g3" 2> /dev/null | grep -c 'hgt-begin$')" = 1 ] &&
	[ "$(trace-cmd report "$g3" 2> /dev/null | grep -c 'sched_process_exit: .*comm=hgtpair')" = 1 ] &&
	! grep -q 'not taken' listen3.log; then
	tap_ok "a session's last records: the pair of $pms ms is trigger $pn, saved with its marker and exit in $(basename "$g3"); nothing left untaken"
else
	tap_fail "a session's last records: pair '$pn' '$pms', saved '$g3': $(grep '^hgtrace flight' listen3.log | tr '\n' '|')"
fi

tap_refuses "listen --flight without --record-host" "" \
	"$HGTRACE" listen --tcp 1 --flight --trigger marker:x
tap_refuses "listen --trigger without --flight" "" \
	"$HGTRACE" listen --tcp 1 --record-host -e sched --trigger marker:x
tap_done
