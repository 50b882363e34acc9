#!/usr/bin/env bash
# make bench (part 3): agent throughput on this machine's real ring buffer, over FIFO pairs
# and over TCP loopback, splice (zero copy) vs read/write copy, side by side in one run.
# Load: MB of 1000-byte trace_marker writes into the agent's instance. Prints MB/s (marker
# payload that reached the host's file / time from the first write until the agent has
# drained and exited), the agent's CPU seconds per GB delivered, and the events the ring
# buffer overwrote because the agent fell behind.
set -uo pipefail
builddir=$(realpath "${1:-build}")
hg=$builddir/tools/hgtrace/hgtrace
. "$(dirname "$0")/lib.sh"
MB=${AGENT_MB:-200}
T=/sys/kernel/tracing
[ "$(id -u)" = 0 ] && [ -e $T/trace_marker ] || { echo "bench agent: needs root and tracefs"; exit 0; }
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cd "$w" || exit 1
"$hg" setup-guest g --cpus "$(nproc)" --dir . > /dev/null
port=$((30000 + $$ % 20000))

run() { # TRANSPORT MODE
	local inst=hgt_bench_$$_$1_$2 lpid apid
	rm -f trace-*.dat
	if [ "$1" = fifo ]; then
		"$hg" listen -o . --fifo g:g --start 2> listen.log &
	else
		"$hg" listen -o . --tcp $port --start 2> listen.log &
	fi
	lpid=$!
	sleep 0.3
	local flags=""
	[ "$2" = copy ] && flags=--no-splice
	if [ "$1" = fifo ]; then
		/usr/bin/time -f "%e %U %S" -o time.txt "$hg" agent --fifos g -B $inst -b 16384 $flags 2> agent.log &
	else
		/usr/bin/time -f "%e %U %S" -o time.txt "$hg" agent --tcp 127.0.0.1:$port -B $inst -b 16384 $flags 2> agent.log &
	fi
	apid=$!
	while [ ! -e $T/instances/$inst/trace_marker ]; do sleep 0.05; done
	local t0 t1 tw
	# from the first write (the writer's own clock: Python's start-up is not the agent's);
	# tw: the writer's own time for its writes
	read -r t0 tw < <(python3 -c "
import os, sys, time
fd = os.open('$T/instances/$inst/trace_marker', os.O_WRONLY)
line = b'x' * 999 + b'\n'
t0 = time.time()
for i in range($MB * 1000): os.write(fd, line)
print('%.6f %.6f' % (t0, time.time() - t0))
")
	# the agent is time's only child: ended by its PID
	kill -INT "$(pgrep -P $apid)"
	wait $apid
	t1=$(date +%s.%N)
	if [ "$1" = fifo ]; then wait $lpid; else sleep 0.5; kill -INT $lpid; wait $lpid; fi
	local f bytes cpu lost u s
	f=$(ls trace-*.dat | head -1)
	# payload delivered: the 1000-byte markers that arrived
	bytes=$(( $("$hg" report "$f" | grep -c 'xxxxxxxxxx') * 1000 ))
	lost=$("$hg" report --stat "$f" | awk '/^overrun:/ { s += $2 } END { print s + 0 }')
	read -r _ u s < time.txt
	cpu=$(echo "$u + $s" | bc -l)
	printf "agent %-4s %-6s: %7.1f MB of markers in %5.2f s = %7.1f MB/s; agent CPU %5.2f s = %6.2f s/GB; %s events overwritten\n" \
		"$1" "$2" "$(echo "$bytes / 1000000" | bc -l)" "$(echo "$t1 - $t0" | bc -l)" \
		"$(echo "$bytes / 1000000 / ($t1 - $t0)" | bc -l)" "$cpu" \
		"$(echo "$cpu / ($bytes / 1000000000)" | bc -l)" "$lost"
	# nothing lost: the agent took all but what the rings hold (16 MB per CPU) while the
	# writer wrote
	[ "$lost" = 0 ] && printf "agent %-4s %-6s: nothing lost while the writer wrote %d MB in %.3f s: the agent kept up with %.1f MB/s at least\n" \
		"$1" "$2" "$MB" "$tw" "$(echo "($MB - 16 * $(nproc)) / $tw" | bc -l)"
	# no peer runs here (trace-cmd agent cannot, this machine): against the goal, 1 GB/s
	bench_row "agent -> listener, $1 $2: MB/s" \
		"$(printf '%.1f MB/s' "$(echo "$bytes / 1000000 / ($t1 - $t0)" | bc -l)")" "1000 MB/s (goal, no peer)" \
		"$(echo "$bytes / 1000000 / ($t1 - $t0) / 1000" | bc -l)"
}
# The agent's own rate, with no writer beside it: the markers are written while the agent
# is stopped (SIGSTOP) into rings that hold them all (three 1000-byte markers fill a 4 KB
# page: 1.5 KB of ring per KB written); then it is continued and told to stop, and the
# time until it has sent everything is its rate (its stop's own steps included). The
# listener's CPU per GB (the agent's own figure counts until the stop, not its drain).
drain() { # TRANSPORT
	local inst=hgt_bench_$$_$1_drain lpid apid agent lost bytes t0 t1 lu ls
	rm -f trace-*.dat
	if [ "$1" = fifo ]; then
		/usr/bin/time -f "%e %U %S" -o ltime.txt "$hg" listen -o . --fifo g:g --start 2> listen.log &
	else
		/usr/bin/time -f "%e %U %S" -o ltime.txt "$hg" listen -o . --tcp $port --start 2> listen.log &
	fi
	lpid=$!
	sleep 0.3
	if [ "$1" = fifo ]; then
		/usr/bin/time -f "%e %U %S" -o time.txt "$hg" agent --fifos g -B $inst -b $((MB * 1536 + 8192)) 2> agent.log &
	else
		/usr/bin/time -f "%e %U %S" -o time.txt "$hg" agent --tcp 127.0.0.1:$port -B $inst -b $((MB * 1536 + 8192)) 2> agent.log &
	fi
	apid=$!
	# stopped once it records (its readers started), not once tracing is on: stopped in
	# its set-up, its run would time the rest of the set-up too
	while ! grep -q '^hgtrace agent: recording' agent.log && kill -0 $apid 2> /dev/null; do
		sleep 0.01
	done
	agent=$(pgrep -P $apid)
	kill -STOP "$agent"
	python3 -c "
import os
fd = os.open('$T/instances/$inst/trace_marker', os.O_WRONLY)
line = b'x' * 999 + b'\n'
for i in range($MB * 1000): os.write(fd, line)
"
	t0=$(date +%s.%N)
	kill -CONT "$agent"
	kill -INT "$agent"
	# its last page sent: the line it prints then, before it frees the rings (a ring this
	# large takes a while to free, and that is no part of the rate)
	while ! grep -q '^hgtrace agent: stopped: [0-9.]* ms of CPU' agent.log && kill -0 "$agent" 2> /dev/null; do
		sleep 0.01
	done
	t1=$(date +%s.%N)
	wait $apid
	if [ "$1" = fifo ]; then wait $lpid; else sleep 0.5; kill -INT "$(pgrep -P $lpid)"; wait $lpid; fi
	f=$(ls trace-*.dat | head -1)
	bytes=$(( $("$hg" report "$f" | grep -c 'xxxxxxxxxx') * 1000 ))
	lost=$("$hg" report --stat "$f" | awk '/^overrun:/ { s += $2 } END { print s + 0 }')
	read -r _ lu ls < ltime.txt
	printf "agent %-4s drain : %7.1f MB of markers in %5.2f s = %7.1f MB/s; listener CPU %5.2f s/GB (its file's assembly included); %s events overwritten\n" \
		"$1" "$(echo "$bytes / 1000000" | bc -l)" "$(echo "$t1 - $t0" | bc -l)" \
		"$(echo "$bytes / 1000000 / ($t1 - $t0)" | bc -l)" \
		"$(echo "($lu + $ls) / ($bytes / 1000000000)" | bc -l)" "$lost"
	bench_row "agent -> listener, $1 drain: MB/s" \
		"$(printf '%.1f MB/s' "$(echo "$bytes / 1000000 / ($t1 - $t0)" | bc -l)")" "1000 MB/s (goal, no peer)" \
		"$(echo "$bytes / 1000000 / ($t1 - $t0) / 1000" | bc -l)"
}
# AGENT_TR: the transports (fifo tcp); AGENT_MODES: splice, copy and drain, or some
for tr in ${AGENT_TR:-fifo tcp}; do
	for mode in ${AGENT_MODES:-splice copy drain}; do
		if [ "$mode" = drain ]; then drain $tr; else run $tr $mode; fi
	done
done
