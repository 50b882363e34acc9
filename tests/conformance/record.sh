#!/usr/bin/env bash
# hgtrace record on this machine's real tracefs (root): trace-cmd reads what it writes, the
# event counts match the kernel's per-CPU "read events", hgtrace and trace-cmd report it
# alike, -P/-M/-C/-B/-f do what they say, losses are reported, and tracefs is left as found.
# Usage: record.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/record.sh"
why=$(tracefs_ready) || tap_skip_all "$why"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
cd "$t" || exit 1

# What the top level looks like; it must not change. Instances: those this test's recorders
# left (hgtrace-PID and hgtrace-PID-clock of their pids; the tests running beside this one
# have recorders of their own). The top level is shared with the tests that record on it
# (tests/lib/record.sh's record_top): it is read under their lock.
hgt() { # hgtrace, its pid noted: hgt record ...
	"$HGTRACE" "$@" &
	local p=$!
	echo $p >> "$t/pids"
	wait $p
}
: > "$t/pids"
own_instances() {
	[ -s "$t/pids" ] || return 0
	ls $TRACEFS/instances | grep -E "^hgtrace-($(paste -sd'|' "$t/pids"))(-clock)?\$" | sort
}
top_state() {
	(
		flock 9
		for f in trace_clock buffer_size_kb tracing_on set_event_pid current_tracer tracing_cpumask; do
			printf '%s: %s\n' $f "$(cat $TRACEFS/$f 2>/dev/null)"
		done
	) 9>/tmp/hgtrace-tracefs-top.lock
	echo "instances left: $(own_instances | tr '\n' ' ')"
}
top_state > before

# 1. A recording with a workload.
if hgt record -e sched -e irq -e timer -o rec.dat -- sh -c '
	for i in $(seq 100); do ls /usr/share/doc > /dev/null; done' 2> log; then
	tap_ok "record -e sched -e irq -e timer -- workload ($(tail -1 log))"
else
	tap_fail "record: $(cat log)"
	tap_done
fi
if trace-cmd report rec.dat > t.txt 2> /dev/null; then
	tap_ok "trace-cmd reads the recording ($(grep -vc '^cpus=' t.txt) events)"
else
	tap_fail "trace-cmd reads the recording"
fi
"$HGTRACE" report --no-latency rec.dat > h.txt
tap_cmp "hgtrace report = trace-cmd report" h.txt t.txt
# per CPU: events in the file = the kernel's "read events"
bad=0
for cpu in $("$HGTRACE" report --cpus rec.dat | sed -n 's/^  \([0-9]*\)$/\1/p'); do
	got=$(trace-cmd report --cpu "$cpu" rec.dat 2> /dev/null | grep -vc '^cpus=')
	want=$(trace-cmd report --stat rec.dat 2> /dev/null |
		awk -v c="CPU: $cpu" '$0 == c { f = 1 } f && /^read events:/ { print $3; exit }')
	lost=$(trace-cmd report --stat rec.dat 2> /dev/null |
		awk -v c="CPU: $cpu" '$0 == c { f = 1 } f && /^overrun:/ { print $2; exit }')
	[ "$got" = "$want" ] || { bad=1; echo "# cpu $cpu: $got events in the file, kernel read $want (overrun $lost)"; }
done
[ $bad = 0 ] && tap_ok "events per CPU = the kernel's read events" ||
	tap_fail "events per CPU = the kernel's read events"
top_state > after
tap_cmp "top-level tracefs untouched and no instance left" after before

# 2. -P: only that task's events.
sh -c 'while :; do cat /proc/self/stat > /dev/null; done' &
busy=$!
hgt record -e raw_syscalls -P $busy -o pid.dat -- sleep 0.3 2> log
kill $busy
wait $busy 2> /dev/null
others=$("$HGTRACE" report pid.dat | grep -v '^cpus=' | grep -vc -- "-$busy ")
n=$("$HGTRACE" report pid.dat | grep -vc '^cpus=')
if [ "$n" -gt 0 ] && [ "$others" = 0 ]; then
	tap_ok "-P $busy: all $n events are that task's"
else
	tap_fail "-P $busy: $others of $n events from other tasks"
fi

# 3. -M 1: only CPU 0.
# The workload is pinned to CPU 0, so that CPU has events to record.
hgt record -e sched -e irq -M 1 -o mask.dat -- taskset -c 0 sh -c 'ls -R /usr/share/doc > /dev/null' 2> log
on=$("$HGTRACE" report mask.dat | grep -v '^cpus=' | grep -c ' \[000\] ')
off=$("$HGTRACE" report mask.dat | grep -v '^cpus=' | grep -vc ' \[000\] ')
if [ "$on" -gt 0 ] && [ "$off" = 0 ]; then
	tap_ok "-M 1: all $on events on CPU 0"
else
	tap_fail "-M 1: $on events on CPU 0, $off on other CPUs"
fi
# v7 lists only CPU 0 in its buffer; its CPUCOUNT says 2: the report says what trace-cmd's does
"$HGTRACE" report --no-latency mask.dat > h.txt
trace-cmd report mask.dat > t.txt 2> /dev/null
tap_cmp "-M 1: hgtrace report = trace-cmd report ($(head -1 t.txt), $(wc -l < t.txt) lines)" h.txt t.txt

# 4. -C x86-tsc: the file says so, trace-cmd prints raw counters as we do.
hgt record -e sched -C x86-tsc -o tsc.dat -- sleep 0.1 2> log
if "$HGTRACE" dump tsc.dat | grep -q 'x86-tsc'; then
	tap_ok "-C x86-tsc is stored"
else
	tap_fail "-C x86-tsc is stored"
fi
"$HGTRACE" report --no-latency tsc.dat > h.txt
trace-cmd report tsc.dat > t.txt 2> /dev/null
tap_cmp "x86-tsc recording: hgtrace report = trace-cmd report" h.txt t.txt

# 5. -B: an existing instance keeps its settings; a new one is removed.
name=hgt_rec_$$
mkdir $TRACEFS/instances/$name
echo 77 > $TRACEFS/instances/$name/buffer_size_kb
echo mono > $TRACEFS/instances/$name/trace_clock
kb=$(cat $TRACEFS/instances/$name/buffer_size_kb)
hgt record -e sched -B $name -b 512 -C local -o inst.dat -- sleep 0.1 2> log
n=$("$HGTRACE" report inst.dat | grep -c 'sched_')
if [ "$n" -gt 0 ] && [ "$(cat $TRACEFS/instances/$name/buffer_size_kb)" = "$kb" ] &&
	grep -q '\[mono\]' $TRACEFS/instances/$name/trace_clock &&
	[ "$(cat $TRACEFS/instances/$name/events/sched/enable)" = 0 ]; then
	tap_ok "-B existing instance: $n sched events recorded; buffer size, clock and events put back"
else
	tap_fail "-B existing instance: $n sched events; $(cat $TRACEFS/instances/$name/buffer_size_kb) KB, $(cat $TRACEFS/instances/$name/trace_clock)"
fi
rmdir $TRACEFS/instances/$name
hgt record -e sched -B hgt_new_$$ -o inst2.dat -- sleep 0.1 2> log
n=$("$HGTRACE" report inst2.dat | grep -c 'sched_')
if [ -d $TRACEFS/instances/hgt_new_$$ ]; then
	tap_fail "-B new instance removed"
	rmdir $TRACEFS/instances/hgt_new_$$
elif [ "$n" -gt 0 ]; then
	tap_ok "-B new instance: $n sched events recorded, instance removed at the end"
else
	tap_fail "-B new instance: nothing recorded: $(cat log)"
fi

# 6. A tiny buffer and a burst: losses are reported, never silent.
hgt record -e raw_syscalls -e sched -b 4 -o small.dat -- sh -c '
	for i in $(seq 3000); do :; done; ls -R /usr > /dev/null 2>&1' 2> log
lost=$(trace-cmd report --stat small.dat 2> /dev/null | awk '/^overrun:/ { s += $2 } END { print s + 0 }')
if [ "$lost" -gt 0 ]; then
	if grep -q "LOST" log; then
		tap_ok "a 4 KB buffer overran ($lost events) and record said so"
	else
		tap_fail "overrun of $lost events not reported: $(cat log)"
	fi
	# the pages flagged as after a loss, as record counted them while writing the file,
	# against trace-cmd's report of the file: one "[N EVENTS DROPPED]" line per such page
	marks=$(sed -n 's/^hgtrace record: \([0-9]*\) pages carry missed-events marks$/\1/p' log)
	dropped=$(trace-cmd report small.dat 2> /dev/null | grep -c 'EVENTS DROPPED\]$')
	if [ "$dropped" -gt 0 ] && [ "${marks:-0}" = "$dropped" ]; then
		tap_ok "record counted $marks pages flagged after a loss, as trace-cmd report shows"
	else
		tap_fail "record said ${marks:-no} pages flagged after a loss, trace-cmd report shows $dropped"
	fi
else
	tap_skip "loss reporting" "the 4 KB buffer did not overrun this time"
	tap_skip "pages flagged after a loss" "the 4 KB buffer did not overrun this time"
fi

# 7. Bad input: one line, non-zero, nothing left behind.
if hgt record -e nosuchsystem -o bad.dat -- true 2> err; then
	tap_fail "an unknown event system is refused"
elif [ "$(wc -l < err)" = 1 ] && [ ! -e bad.dat ]; then
	tap_ok "an unknown event system is refused ($(cat err))"
else
	tap_fail "an unknown event system: $(cat err)"
fi
# 8. -f: the kernel's filter of the -e before it. The command (a copy of sleep named for
# the test) runs: switches away from it are in the file, none to it; a filter the kernel
# refuses is one line naming it, and no file.
cp "$(command -v sleep)" "$t/fwork"
if hgt record -e sched:sched_switch -f 'next_comm != "fwork"' -o f.dat -- "$t/fwork" 0.2 2> log; then
	trace-cmd report f.dat > f.txt 2> /dev/null
	switches_held "record" fwork f.txt
else
	tap_fail "record -f: $(cat log)"
fi
if hgt record -e sched:sched_switch -f 'no_such_field == 1' -o fbad.dat -- true 2> err; then
	tap_fail "a filter the kernel refuses is refused"
elif [ "$(wc -l < err)" = 1 ] && grep -q "the kernel refused it as a filter of sched:sched_switch" err &&
	[ ! -e fbad.dat ]; then
	tap_ok "a filter the kernel refuses: $(cat err)"
else
	tap_fail "a refused filter: $(cat err)"
fi
# 9. An idle recorder whose ring holds a partial page does not spin: its readers poll()
# until 1 % of the ring is written, with a timeout for the partial page's flush and the
# stop (no timeout, or a poll that returns at once for a partial page, would take a CPU
# per reader). Its CPU time over 3 s from /proc, and the marker of the partial page in
# the file at the end (trace-cmd report).
inst=hgt_rec_idle$$
"$HGTRACE" record -B $inst -e sched:sched_process_exit -o idle.dat 2> idle.log &
rpid=$!
wait_for_line idle.log 'record: recording' 30 # tracing is on: a marker is taken
echo "one partial page" > $TRACEFS/instances/$inst/trace_marker
cpu0=$(awk '{ print $14 + $15 }' /proc/$rpid/stat)
sleep 3
cpu1=$(awk '{ print $14 + $15 }' /proc/$rpid/stat)
kill -INT $rpid
wait $rpid
ticks=$((cpu1 - cpu0))
if [ "$ticks" -le 30 ] && trace-cmd report idle.dat 2> /dev/null | grep -q 'one partial page'; then
	tap_ok "an idle recorder with a partial page used $ticks clock ticks in 3 s (one busy CPU: 300), and wrote the page"
else
	tap_fail "an idle recorder with a partial page used $ticks clock ticks in 3 s (30 at most; one busy CPU: 300); the page: $(trace-cmd report idle.dat 2>&1 | grep -c 'one partial page') / $(tr '\n' ' ' < idle.log)"
fi
top_state > after
tap_cmp "top-level tracefs still untouched" after before
tap_done
