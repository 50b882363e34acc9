#!/usr/bin/env bash
# A guest's end (--record-host: the host's recording stopped and written, a flight
# recorder's last search and windows) runs beside the listener's loop, not in it: while
# it is held up, a second guest is still taken in. tests/transport/listen-ending.c holds
# the first guest's end until the host's recording of the second has started; the second
# agent (hgtrace agent --now over TCP, 127.0.0.1) is started only once that end began.
# Checked: the second start seen from inside the first end, both files written, both read
# by trace-cmd.
# Usage: listen-ending.sh HGTRACE LISTEN_ENDING
HGTRACE=$(realpath "$1")
DRIVER=$(realpath "$2")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/record.sh"
why=$(tracefs_ready) || tap_skip_all "$why"
tap_workdir

mkdir out
port=$(free_port)
"$DRIVER" $port out > driver.tap 2> driver.log &
dp=$!
wait_listen $port $dp || tap_fail "the driver does not listen on $port: $(tail -3 driver.log | tr '\n' '|')"
"$HGTRACE" agent --now --tcp 127.0.0.1:$port -B hgt_lend_a$$ -e sched:sched_switch -- true 2> agent-a.log
echo "agent a: exit $?" > agents.out
if wait_for_line driver.tap '^# ending ' 60; then
	"$HGTRACE" agent --now --tcp 127.0.0.1:$port -B hgt_lend_b$$ -e sched:sched_switch -- true 2> agent-b.log
	echo "agent b: exit $?" >> agents.out
else
	tap_fail "the first guest's end never began: $(tail -5 driver.log | tr '\n' '|')"
fi
wait_exit $dp 90
rc=$?
[ $rc = 0 ] && [ "$(grep -c 'exit 0' agents.out)" = 2 ] &&
	tap_ok "driver and both agents exit 0" ||
	tap_fail "driver exit $rc; $(tr '\n' ' ' < agents.out); $(tail -5 driver.log | tr '\n' '|')"
# the driver's own checks, renumbered into this test's
while read -r line; do
	case $line in
	"ok "*) tap_ok "${line#ok [0-9]* - }" ;;
	"not ok "*) tap_fail "${line#not ok [0-9]* - }" ;;
	esac
done < driver.tap
n=0
for f in out/trace-*.dat; do
	[ -e "$f" ] || continue
	if trace-cmd report "$f" > /dev/null 2>&1; then n=$((n + 1)); fi
done
[ $n = 2 ] && tap_ok "trace-cmd reads both guests' files" ||
	tap_fail "trace-cmd reads $n guest files: $(ls out | tr '\n' ' ')"
grep -qE '^(not )?ok 1 - ' driver.tap || tap_fail "the driver printed no result"
tap_done
