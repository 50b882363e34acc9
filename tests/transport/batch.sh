#!/usr/bin/env bash
# The listener's TCP data channels batched (SO_RCVLOWAT: the poll woken once 256 KB wait,
# not per segment), and what waits below that still read while the guest records. On this
# machine the guest is hgtrace agent over TCP (127.0.0.1), recording in an instance of its
# own; markers are written into its trace_marker. Checked:
#  - while it records, the listener's connected TCP sockets as the kernel holds them
#    (getsockopt on duplicates, tests/transport/sockopt.py): the control channel at 1 byte,
#    each CPU's data channel at 262144;
#  - one marker, far less than that, reaches the listener's recording directory while
#    the agent still records (its poke, within 5 s; 0.6-0.8 s here, most of it the
#    agent's flush of a partial page);
#  - at the stop, every marker of a burst and the one before it are in the guest's file,
#    as Debian's trace-cmd reads it.
# Usage: batch.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/record.sh"
why=$(tracefs_ready) || tap_skip_all "$why"
tap_workdir

inst=hgt_batch$$
T=/sys/kernel/tracing
mkdir out
port=$(free_port)
"$HGTRACE" listen -o out --tcp $port --start 2> listen.log &
lp=$!
wait_listen $port $lp || tap_fail "the listener does not listen on $port: $(tail -3 listen.log | tr '\n' '|')"
"$HGTRACE" agent --tcp 127.0.0.1:$port -B $inst 2> agent.log &
ap=$!
wait_for_line listen.log 'recording$' 30 || tap_fail "the guest never recorded: $(tail -3 listen.log | tr '\n' '|')"
ncpu=$(grep -o '[0-9]* CPUs' listen.log | head -1 | cut -d' ' -f1)
want="1$(printf ' 262144%.0s' $(seq "$ncpu"))"
# each data channel is taken in on its own connection: until all are (10 s at most)
for _ in $(seq 100); do
	got=$(python3 "$here/transport/sockopt.py" $lp lowat)
	[ "$got" = "$want" ] && break
	sleep 0.1
done
[ "$got" = "$want" ] &&
	tap_ok "the listener's TCP sockets' SO_RCVLOWAT: $got (the control channel, $ncpu data channels)" ||
	tap_fail "the listener's TCP sockets' SO_RCVLOWAT: '$got', want '$want'"

# one marker, its page flushed by the agent: read by the listener's poke, not a wake-up
t0=$EPOCHREALTIME
echo hgt-batch-one > $T/instances/$inst/trace_marker
for _ in $(seq 100); do
	grep -rqa hgt-batch-one out && break
	sleep 0.05
done
if grep -rqa hgt-batch-one out; then
	tap_ok "one marker reached the listener's files while the agent records ($(echo "$EPOCHREALTIME - $t0" | bc) s)"
else
	tap_fail "one marker never reached the listener's files in 5 s while the agent recorded"
fi

# a burst, then the stop: all of it in the file
python3 -c "
import os
fd = os.open('$T/instances/$inst/trace_marker', os.O_WRONLY)
for i in range(3000): os.write(fd, b'hgt-batch-burst %d %s\n' % (i, b'x' * 80))
"
kill -INT $ap
wait_exit $ap 30 > /dev/null || tap_fail "the agent did not exit: $(tail -3 agent.log | tr '\n' '|')"
wait_for_line listen.log 'wrote ' 30
kill -INT $lp
wait_exit $lp 30 > /dev/null
f=$(ls out/*.dat 2> /dev/null | head -1)
trace-cmd report "$f" 2> /dev/null > report.txt
burst=$(grep -c 'hgt-batch-burst' report.txt)
one=$(grep -c 'hgt-batch-one' report.txt)
[ "$burst $one" = "3000 1" ] &&
	tap_ok "all 3000 markers of the burst and the one before it in $f (trace-cmd report)" ||
	tap_fail "in $f (trace-cmd report): $burst of 3000 markers of the burst, $one of 1 before it"
tap_done
