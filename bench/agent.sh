#!/usr/bin/env bash
# make bench (part 3): agent throughput on this machine's real ring buffer, over FIFO pairs
# and over TCP loopback: pages spliced (the default: no copy, but a fresh page the kernel
# clears for the ring each time), from the ring buffer's mapping (--mmap, Linux 6.10 on:
# one copy a page) and read/write (--no-splice: two copies), side by side in one run.
# Load: MB of 1000-byte trace_marker writes into the agent's instance. Prints MB/s (marker
# payload that reached the host's file / time from the first write until the agent has
# sent its last page: its "stopped" line, stamped by the reader of its log as it comes),
# the agent's CPU seconds per GB delivered, and the events the ring buffer overwrote
# because the agent fell behind.
set -uo pipefail
builddir=$(realpath "${1:-build}")
hg=$builddir/tools/hgtrace/hgtrace
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
MB=${AGENT_MB:-200}
T=/sys/kernel/tracing
[ "$(id -u)" = 0 ] && [ -e $T/trace_marker ] || { echo "bench agent: needs root and tracefs"; exit 0; }
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cd "$w" || exit 1
# the run rows' writer: C, one thread (bench/marker-write.c)
writer=$w/marker-write
cc -O2 -o "$writer" "$here/marker-write.c" ||
	{ echo "bench agent: cannot build bench/marker-write.c"; exit 1; }
"$hg" setup-guest g --cpus "$(nproc)" --dir . > /dev/null
port=$((30000 + $$ % 20000))
# the listener's limit per guest (1 GiB by default) above what a run sends: 1000-byte
# markers fill 4 KB pages three at a time (1.4 MB of pages per MB written), and a guest
# stopped at its limit is read no more (its agent then never says it stopped)
lim=$((MB * 2 + 64))
# end_listener PID: a run that failed ends its listener too (else it outlives the bench)
end_listener() {
	kill -INT "$1" $(pgrep -P "$1") 2> /dev/null
	wait "$1" 2> /dev/null
}

run() { # TRANSPORT MODE [PACE]: PACE, the writer's MB/s (none: as fast as it can)
	local inst=hgt_bench_$$_$1_$2 lpid apid
	rm -f trace-*.dat stopped.t agent.log
	if [ "$1" = fifo ]; then
		"$hg" listen -o . --fifo g:g --start --max-mb $lim 2> listen.log &
	else
		"$hg" listen -o . --tcp $port --start --max-mb $lim 2> listen.log &
	fi
	lpid=$!
	sleep 0.3
	local flags=""
	[ "$2" = copy ] && flags=--no-splice
	[ "$2" = map ] && flags=--mmap
	if [ "$1" = fifo ]; then
		/usr/bin/time -f "%e %U %S" -o time.txt "$hg" agent --fifos g -B $inst -b 16384 $flags 2> >(stamp_stop) &
	else
		/usr/bin/time -f "%e %U %S" -o time.txt "$hg" agent --tcp 127.0.0.1:$port -B $inst -b 16384 $flags 2> >(stamp_stop) &
	fi
	apid=$!
	while [ ! -e $T/instances/$inst/trace_marker ]; do sleep 0.05; done
	# a write before the agent switches tracing on fails (EBADF)
	until [ "$(cat $T/instances/$inst/tracing_on 2> /dev/null)" = 1 ]; do sleep 0.01; done
	local t0 t1 tw
	# from the first write (the writer's own clock: its start-up is not the agent's);
	# tw: the writer's own time for its writes
	read -r t0 tw < <("$writer" $T/instances/$inst/trace_marker "$MB" x ${3:-})
	# the agent is time's only hgtrace child (the other is its log's reader): ended by its
	# PID; until it has sent its last page (the "stopped" line)
	kill -INT "$(pgrep -x -P $apid hgtrace)"
	wait $apid
	t1=$(stopped_at) || {
		echo "bench agent: $1 $2: the agent never said it stopped"
		cat agent.log
		end_listener $lpid
		return
	}
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
	if [ -n "${3:-}" ]; then
		# the goal's other half: nothing lost below the ring's own rate
		printf "agent %-4s %-6s: writer paced at %s MB/s (it took %.3f s): %d of %d markers came\n" \
			"$1" "$2" "$3" "$tw" "$((bytes / 1000))" "$((MB * 1000))"
		# the row says the rate the writer reached: beside the agent and the listener on
		# the same CPUs it may fall short of the pace, and then the row did not test it
		bench_row "agent -> listener, $1 paced $3 MB/s: kept" \
			"$((bytes / 1000)) of $((MB * 1000))" \
			"$(printf 'all; writer did %.0f MB/s' "$(echo "$MB / $tw" | bc -l)")" \
			"$(echo "$bytes / 1000 / ($MB * 1000)" | bc -l)"
		return
	fi
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
drain() { # TRANSPORT [AGENT-FLAGS]
	local inst=hgt_bench_$$_$1_drain lpid apid agent lost bytes t0 t1 lu ls
	rm -f trace-*.dat
	if [ "$1" = fifo ]; then
		/usr/bin/time -f "%e %U %S" -o ltime.txt "$hg" listen -o . --fifo g:g --start --max-mb $lim \
			2> listen.log &
	else
		/usr/bin/time -f "%e %U %S" -o ltime.txt "$hg" listen -o . --tcp $port --start --max-mb $lim \
			2> listen.log &
	fi
	lpid=$!
	sleep 0.3
	# the agent's log read line by line as it comes: the moment its last page went is
	# stamped by that reader (no process polling the log beside the agent, taking the
	# CPU the agent and the listener share)
	rm -f stopped.t agent.log
	if [ "$1" = fifo ]; then
		/usr/bin/time -f "%e %U %S" -o time.txt "$hg" agent --fifos g -B $inst -b $((MB * 1536 + 8192)) ${2:-} 2> >(stamp_stop) &
	else
		/usr/bin/time -f "%e %U %S" -o time.txt "$hg" agent --tcp 127.0.0.1:$port -B $inst -b $((MB * 1536 + 8192)) ${2:-} 2> >(stamp_stop) &
	fi
	apid=$!
	# stopped once it records (its readers started), not once tracing is on: stopped in
	# its set-up, its run would time the rest of the set-up too
	while ! grep -qs '^hgtrace agent: recording' agent.log && kill -0 $apid 2> /dev/null; do
		sleep 0.01
	done
	agent=$(pgrep -x -P $apid hgtrace)
	kill -STOP "$agent"
	python3 -c "
import os
fd = os.open('$T/instances/$inst/trace_marker', os.O_WRONLY)
line = b'x' * 999 + b'\n'
for i in range($MB * 1000): os.write(fd, line)
"
	t0=$EPOCHREALTIME
	kill -CONT "$agent"
	kill -INT "$agent"
	wait $apid
	# its last page sent: the line it prints then, before it frees the rings (a ring this
	# large takes a while to free, and that is no part of the rate); the log's reader
	# ends with the agent's stderr
	t1=$(stopped_at) || {
		echo "bench agent: $1 drain: the agent never said it stopped"
		cat agent.log
		end_listener $lpid
		return 1
	}
	if [ "$1" = fifo ]; then wait $lpid; else sleep 0.5; kill -INT "$(pgrep -P $lpid)"; wait $lpid; fi
	f=$(ls trace-*.dat | head -1)
	bytes=$(( $("$hg" report "$f" | grep -c 'xxxxxxxxxx') * 1000 ))
	lost=$("$hg" report --stat "$f" | awk '/^overrun:/ { s += $2 } END { print s + 0 }')
	read -r _ lu ls < ltime.txt
	printf "agent %-4s drain%s: %7.1f MB of markers in %5.2f s = %7.1f MB/s; listener CPU %5.2f s/GB (its file's assembly included); %s events overwritten\n" \
		"$1" "${2:+ $2}" "$(echo "$bytes / 1000000" | bc -l)" "$(echo "$t1 - $t0" | bc -l)" \
		"$(echo "$bytes / 1000000 / ($t1 - $t0)" | bc -l)" \
		"$(echo "($lu + $ls) / ($bytes / 1000000000)" | bc -l)" "$lost"
	echo "$bytes / 1000000 / ($t1 - $t0)" | bc -l >> rates.txt
}
# The drain, AGENT_RUNS times (3): its row is the median rate. Spliced it is bimodal on
# this VM (206 to 1322 MB/s into FIFOs in one set of 7 runs, 1206 to 1498 in the next 6):
# in a slow run the kernel's fresh page for each spliced ring page
# (ring_buffer_alloc_read_page) is slow to clear, memory the host took back. From the
# mapping (--mmap) no page is allocated: 628 to 848 MB/s in all 13.
drains() { # TRANSPORT [AGENT-FLAGS]
	local n=${AGENT_RUNS:-3} r
	rm -f rates.txt
	for _ in $(seq "$n"); do drain "$1" "${2:-}" || return; done
	r=$(sort -g rates.txt | sed -n "$(((n + 1) / 2))p")
	echo "agent $1 drain${2:+ $2}: median of $n: $(printf '%.1f' "$r") MB/s (runs: $(sort -g rates.txt | xargs printf '%.1f ' | sed 's/ $//'))"
	bench_row "agent -> listener, $1 drain${2:+ $2}: MB/s" "$(printf '%.1f MB/s' "$r")" "1000 MB/s (goal, no peer)" \
		"$(echo "$r / 1000" | bc -l)"
}
# The agent's log from stdin to agent.log; the time its "stopped" line came to stopped.t.
stamp_stop() {
	local l
	while IFS= read -r l; do
		printf '%s\n' "$l" >> agent.log
		case $l in "hgtrace agent: stopped: "[0-9]*" ms of CPU"*) echo "$EPOCHREALTIME" > stopped.t ;; esac
	done
}
# The time in stopped.t, once the log's reader has ended (the agent has exited); 1 when the
# agent never said it stopped.
stopped_at() {
	for _ in $(seq 500); do [ -s stopped.t ] && break; sleep 0.01; done
	cat stopped.t 2> /dev/null
}
# AGENT_TR: the transports (fifo tcp); AGENT_MODES: splice, map, copy, paced (spliced, the
# writer at AGENT_PACE MB/s, 1000: the goal's rate, below the ring's own), drain (spliced)
# and drain-map, or some
for tr in ${AGENT_TR:-fifo tcp}; do
	for mode in ${AGENT_MODES:-splice map copy paced drain drain-map}; do
		case $mode in
		drain) drains $tr ;;
		drain-map) drains $tr --mmap ;;
		paced) run $tr paced "${AGENT_PACE:-1000}" ;;
		*) run $tr $mode ;;
		esac
	done
done
