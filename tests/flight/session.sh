#!/usr/bin/env bash
# record --flight -A: the last records of a session with a guest. The host records its
# trace_marker writes alone (its pages written whole, or 3 s late). The "guest" is hgtrace
# agent --serve on this machine over FIFO pairs, recording in an instance of its own
# sched_switch, sched_process_exit and every trace_marker write into that instance. The
# session's command sleeps 1.5 s in steps of 5 ms, then, as its last acts, writes a pair
# (a task hgtpair's marker to its exit, a sleep of 60 ms between) and the marker "app:
# hgt-gend" into the guest's instance, then "app: hgt-hend" into the host's, and exits:
# the session stops at once (the pair trigger takes hgtpair's exit only: this command's
# own marker and exit are a pair too, one longer than 50 ms on a slow machine). The guest's
# records reach the listener only with its last pages, after the stop (the agent sends a
# partial page when its flush interval comes, or at its end), the host's marker only when
# the host's last partial page is written, and a delay ending there is in the last flush
# interval and tick. Checked: the flight
# recorder's last search, once every guest page is in and the host's tracing is halted,
# takes all three and saves each window as a pair that holds the trigger's records
# (trace-cmd report); no delay is left untaken (spans a busy machine left unsearched are
# said); the session's files are written and trace-cmd reads them.
# Usage: session.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/record.sh"
why=$(tracefs_ready) || tap_skip_all "$why"
command -v python3 > /dev/null || tap_skip_all "python3 is missing"
tap_workdir

inst=hgt_fl_sess$$
"$HGTRACE" setup-guest g --cpus "$(nproc)" --dir . > /dev/null
"$HGTRACE" agent --serve --fifos g -B $inst -e sched:sched_switch 2> agent.log &
apid=$!
cat > drive.py << EOF
import os, subprocess, sys, time
marker = "/sys/kernel/tracing/instances/$inst/trace_marker"
fd = os.open(marker, os.O_WRONLY)
start, n = time.monotonic(), 0
while time.monotonic() - start < 1.5:
    n += 1
    time.sleep(0.005)
# the last records, all on CPU 0: the pair (60 ms or more, whatever the machine), then the
# marker
os.sched_setaffinity(0, {0})
subprocess.run([sys.executable, "$here/flight/hgtpair.py", marker], check=True)
print("slept", n, flush=True)
os.write(fd, b"app: hgt-gend\n")
# and the host's (the recorder's instance; it is this command's parent)
os.write(os.open("/sys/kernel/tracing/instances/hgtrace-%d/trace_marker" % os.getppid(),
                 os.O_WRONLY), b"app: hgt-hend\n")
EOF
"$HGTRACE" record --flight --window 2 --after 0.5 --tick 0.1 --flush-ms 3000 --holdoff 0 \
	--trigger 'marker:hgt-gend' --trigger 'marker:hgt-hend' \
	--trigger 'pair:print,sched_process_exit:comm == "hgtpair">50ms' \
	-e sched:sched_process_exit -f 'comm == "hgt-none"' -A "g@fifo:$t/g" -e sched:sched_switch \
	-e sched:sched_process_exit \
	-o s.dat -- python3 drive.py > drive.out 2> rec.log
rc=$?
kill $apid 2> /dev/null
wait $apid 2> /dev/null
hn=$(trace-cmd report s.dat 2> /dev/null | grep -c 'app: hgt-hend$')
gn=$(trace-cmd report s-g.dat 2> /dev/null | grep -c sched_switch)
[ $rc = 0 ] && grep -q '^slept [0-9]' drive.out && [ "$hn" = 1 ] && [ "$gn" -gt 0 ] &&
	tap_ok "record --flight -A g: exit 0; s.dat and s-g.dat written, trace-cmd reads them (the host's marker; $gn sched_switch in the guest's)" ||
	tap_fail "record --flight -A g: exit $rc, $hn/$gn events: $(grep -v '^ ' rec.log | tail -6 | tr '\n' '|')"

# trigger number and the file it saved, for the marker and for the pair
m=$(sed -n 's/^hgtrace flight: trigger \([0-9]*\): marker:hgt-gend: "app: hgt-gend" by [^ ]*-[0-9]* on g CPU [0-9]* at [0-9.]*; its window.*/\1/p' rec.log | head -1)
read -r pn pms < <(sed -n 's/^hgtrace flight: trigger \([0-9]*\): pair:.* on g CPU [0-9]* late: \([0-9.]*\) ms.*/\1 \2/p' rec.log | head -1)
ntrig=$(grep -c '^hgtrace flight: trigger [0-9]*: [mp]' rec.log)
[ -n "$m" ] && grep -q "^hgtrace flight: trigger $m: saved flight-$m.dat and flight-$m-g.dat\$" rec.log &&
	[ "$(trace-cmd report "flight-$m-g.dat" 2> /dev/null | grep -c 'app: hgt-gend$')" = 1 ] &&
	tap_ok "the guest's last marker: trigger $m, saved flight-$m.dat and flight-$m-g.dat, trace-cmd finds the marker in the guest's" ||
	tap_fail "the guest's last marker: trigger '$m': $(grep '^hgtrace flight: \(trigger\|[0-9]* not\)' rec.log | tr '\n' '|')"
hm=$(sed -n 's/^hgtrace flight: trigger \([0-9]*\): marker:hgt-hend: "app: hgt-hend" by [^ ]*-[0-9]* on CPU [0-9]* at [0-9.]*; its window.*/\1/p' rec.log | head -1)
[ -n "$hm" ] && grep -q "^hgtrace flight: trigger $hm: saved flight-$hm.dat and flight-$hm-g.dat\$" rec.log &&
	[ "$(trace-cmd report "flight-$hm.dat" 2> /dev/null | grep -c 'app: hgt-hend$')" = 1 ] &&
	tap_ok "the host's last marker (its page written by the halt before the last search): trigger $hm, trace-cmd finds it in flight-$hm.dat" ||
	tap_fail "the host's last marker: trigger '$hm': $(grep '^hgtrace flight: \(trigger\|[0-9]* not\)' rec.log | tr '\n' '|')"
[ -n "$pn" ] && awk -v p="$pms" 'BEGIN { exit !(p >= 60) }' &&
	grep -q "^hgtrace flight: trigger $pn: saved flight-$pn.dat and flight-$pn-g.dat\$" rec.log &&
	[ "$(trace-cmd report "flight-$pn-g.dat" 2> /dev/null | grep -c 'hgt-begin$')" = 1 ] &&
	[ "$(trace-cmd report "flight-$pn-g.dat" 2> /dev/null | grep -c 'sched_process_exit: .*comm=hgtpair')" = 1 ] &&
	tap_ok "the guest's last pair: trigger $pn, $pms ms (60 ms or more), saved with its marker and exit in the guest's file" ||
	tap_fail "the guest's last pair: trigger '$pn' '$pms': $(grep '^hgtrace flight: \(trigger\|[0-9]* not\)' rec.log | tr '\n' '|')"
# (a search may fall behind on a busy machine and say so: the last one, at the stop, reads
# the whole window whatever came before it)
unsearched=$(sed -n 's/^hgtrace flight: cost: .* \([0-9.]* s\) unsearched.*/\1/p' rec.log)
[ "$ntrig" = 3 ] && ! grep -q 'not taken' rec.log && [ -n "$unsearched" ] &&
	tap_ok "three triggers, each taken once; no delay left untaken at the stop ($unsearched said unsearched before it)" ||
	tap_fail "$ntrig triggers: $(grep '^hgtrace flight: \(trigger [0-9]*: [mp]\|cost\|behind\)\|not taken' rec.log | tr '\n' '|')"
tap_done
