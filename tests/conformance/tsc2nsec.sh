#!/usr/bin/env bash
# -C tsc2nsec, trace-cmd's clock (the TSC, with the kernel's ns conversion stored), against
# Debian's trace-cmd on this machine: where trace-cmd can record it, hgtrace records it too,
# with the same TSC2NSEC mult/shift, and both report in microseconds; where trace-cmd says
# "TSC to nanosecond is not supported" (perf cap_user_time 0, as on this project's
# machines), hgtrace refuses in one line with exit 1 and writes no file.
# Usage: tsc2nsec.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/record.sh"
why=$(tracefs_ready) || tap_skip_all "$why"
tap_workdir
(
	flock 9
	trace-cmd record -d --no-filter -C tsc2nsec -e sched:sched_switch -o tc.dat -- sleep 0.1 > tc.log 2>&1
) 9> /tmp/hgtrace-tracefs-top.lock
"$HGTRACE" record -C tsc2nsec -e sched:sched_switch -o h.dat -- sleep 0.1 > h.log 2>&1 &
hp=$!
wait $hp
rc=$?
if [ -s tc.dat ]; then
	tc=$(trace-cmd dump --options tc.dat 2> /dev/null | grep -A2 -i 'tsc2nsec' | grep -o '[0-9]\+' | head -2 | tr '\n' ' ')
	hg=$("$HGTRACE" dump h.dat | grep -A1 'TSC2NSEC' | grep -o 'mult [0-9]* shift [0-9]*')
	[ $rc = 0 ] && [ -s h.dat ] && tap_ok "trace-cmd records -C tsc2nsec here, and so does hgtrace" ||
		tap_fail "hgtrace record -C tsc2nsec: exit $rc: $(cat h.log)"
	echo "# trace-cmd TSC2NSEC: $tc; hgtrace: $hg"
	[ -n "$hg" ] && [ "$(echo "$hg" | awk '{ print $2, $4 }')" = "$(echo "$tc" | awk '{ print $1, $2 }')" ] &&
		tap_ok "the same mult and shift as trace-cmd ($hg)" || tap_fail "TSC2NSEC differs: trace-cmd $tc, hgtrace $hg"
	trace-cmd report h.dat 2> /dev/null | grep -m1 sched_switch | grep -qE ' [0-9]+\.[0-9]{6}: ' &&
		tap_ok "trace-cmd reports hgtrace's file in microseconds" || tap_fail "not in microseconds"
else
	grep -q 'TSC to nanosecond is not supported' tc.log &&
		tap_ok "trace-cmd: TSC to nanosecond is not supported here" ||
		tap_fail "trace-cmd failed otherwise: $(tail -2 tc.log | tr '\n' '|')"
	# (a notice that it removed a dead recorder's instance, another test's, is no error)
	grep -v 'hgtrace: removed tracefs instance .*, left behind by process' h.log > h.err
	[ $rc = 1 ] && [ ! -e h.dat ] && [ "$(wc -l < h.err)" = 1 ] && grep -q 'TSC to nanosecond is not supported' h.err &&
		tap_ok "hgtrace refuses too: one line, exit 1, no file ($(cat h.err))" ||
		tap_fail "hgtrace record -C tsc2nsec: exit $rc, $(wc -l < h.log) lines: $(tr '\n' '|' < h.log)"
fi
# its own instance, hgtrace-PID by default (tests beside it have theirs)
inst=hgtrace-$hp
[ -d "$TRACEFS/instances/$inst" ] && tap_fail "its instance $inst is left" ||
	tap_ok "no instance of its own left ($inst)"
tap_done
