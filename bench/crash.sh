#!/usr/bin/env bash
# make bench (part 7): what crash safety costs hgtrace record, side by side with trace-cmd
# record in one run on this machine's real ring buffer. Load: MB of 1000-byte
# trace_marker writes into the recorder's instance (-B). Each recorder: hgtrace record
# (pages in FILE.recording at most 1 s late, the default), hgtrace record --fsync (and
# fsync every second), trace-cmd record -d --no-filter, and the same with --poll (its readers
# do not block on the trace buffer). Prints MB/s of markers that reached
# the file (first write until the recorder exited with its file written), the recorder's
# CPU seconds, and the events the ring buffer overwrote; then the median of three rounds.
# CRASH_OLD=PATH also runs an older hgtrace binary (without crash safety) alongside.
set -uo pipefail
builddir=$(realpath "${1:-build}")
hg=$builddir/tools/hgtrace/hgtrace
. "$(dirname "$0")/lib.sh"
MB=${CRASH_MB:-200}
T=/sys/kernel/tracing
[ "$(id -u)" = 0 ] && [ -e $T/trace_marker ] && command -v trace-cmd > /dev/null ||
	{ echo "bench crash: needs root, tracefs and trace-cmd"; exit 0; }
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cd "$w" || exit 1

run() { # NAME CMD...
	local name=$1 inst=hgt_crashbench_$$ pid t0 t1 kept lost u s
	shift
	rm -rf out.dat out.dat.recording
	/usr/bin/time -f "%e %U %S" -o time.txt "$@" -B $inst -b 16384 -e sched:sched_process_exit \
		-o out.dat > rec.log 2>&1 &
	pid=$!
	while [ ! -e $T/instances/$inst/trace_marker ]; do sleep 0.05; done
	sleep 0.5
	t0=$(date +%s.%N)
	python3 -c "
import os
fd = os.open('$T/instances/$inst/trace_marker', os.O_WRONLY)
line = b'y' * 999 + b'\n'
for i in range($MB * 1000): os.write(fd, line)
"
	kill -INT $(pgrep -P $pid) $pid 2> /dev/null
	wait $pid
	t1=$(date +%s.%N)
	kept=$(trace-cmd report out.dat 2> /dev/null | grep -c 'yyyyyyyyyy')
	lost=$("$hg" report --stat out.dat | awk '/^overrun:/ { s += $2 } END { print s + 0 }')
	read -r _ u s < <(tail -1 time.txt)
	printf "record %-18s: %7.1f MB of markers in %5.2f s = %7.1f MB/s; recorder CPU %5.2f s; %s events overwritten\n" \
		"$name" "$(echo "$kept / 1000" | bc -l)" "$(echo "$t1 - $t0" | bc -l)" \
		"$(echo "$kept / 1000 / ($t1 - $t0)" | bc -l)" "$(echo "$u + $s" | bc -l)" "$lost"
	echo "$kept / 1000 / ($t1 - $t0)" | bc -l >> "rates-$name"
	[ -d $T/instances/$inst ] && rmdir $T/instances/$inst 2> /dev/null
	return 0
}

echo "== crash safety: $MB MB of 1000-byte markers, 16 MB ring per CPU; 3 rounds, each recorder once per round"
# recorder K of the round
run_k() {
	case $1 in
	0) run hgtrace "$hg" record ;;
	1) run "hgtrace --fsync" "$hg" record --fsync ;;
	2) run trace-cmd trace-cmd record -d --no-filter ;;
	3) run "trace-cmd --poll" trace-cmd record -d --no-filter --poll ;;
	4) run "before (${CRASH_OLD##*/})" "$CRASH_OLD" record ;;
	esac
}
# Each round starts with the next recorder: the first of a round was the slowest of its
# round (hgtrace 313 MB/s first, hgtrace --fsync 406 after it; with the two swapped, --fsync
# 339 first and hgtrace 368 after it), so no recorder may always come first. A median of
# three then leaves out the round it was first in.
n=4
[ -n "${CRASH_OLD:-}" ] && n=5
for round in 0 1 2; do
	for k in $(seq 0 $((n - 1))); do
		run_k $(((round + k) % n))
	done
done
# the median of each recorder's three MB/s
med() { sort -n "rates-$1" | sed -n 2p; }
printf "median MB/s: hgtrace %.1f, hgtrace --fsync %.1f, trace-cmd %.1f, trace-cmd --poll %.1f\n" \
	"$(med hgtrace)" "$(med 'hgtrace --fsync')" "$(med trace-cmd)" "$(med 'trace-cmd --poll')"
[ -n "${CRASH_OLD:-}" ] && printf "median MB/s before (%s): %.1f; hgtrace / before: %.2f\n" \
	"${CRASH_OLD##*/}" "$(med "before (${CRASH_OLD##*/})")" \
	"$(echo "$(med hgtrace) / $(med "before (${CRASH_OLD##*/})")" | bc -l)"
printf "ratio hgtrace / trace-cmd: %.2f; hgtrace --fsync / hgtrace: %.2f\n" \
	"$(echo "$(med hgtrace) / $(med trace-cmd)" | bc -l)" \
	"$(echo "$(med 'hgtrace --fsync') / $(med hgtrace)" | bc -l)"
bench_row "record, 1000-byte markers: MB/s" "$(printf '%.1f MB/s' "$(med hgtrace)")" \
	"$(printf '%.1f MB/s trace-cmd' "$(med trace-cmd)")" "$(echo "$(med hgtrace) / $(med trace-cmd)" | bc -l)"
# Debian's trace-cmd 3.1.6 record --poll stored none of the markers on this machine (0 bytes
# per CPU in its file, every event overwritten): no rate to compare with, said as such
if [ "$(echo "$(med 'trace-cmd --poll') > 0" | bc -l)" = 1 ]; then
	printf "ratio hgtrace / trace-cmd --poll: %.2f\n" "$(echo "$(med hgtrace) / $(med 'trace-cmd --poll')" | bc -l)"
	bench_row "record vs trace-cmd --poll: MB/s" "$(printf '%.1f MB/s' "$(med hgtrace)")" \
		"$(printf '%.1f MB/s trace-cmd --poll' "$(med 'trace-cmd --poll')")" \
		"$(echo "$(med hgtrace) / $(med 'trace-cmd --poll')" | bc -l)"
else
	echo "trace-cmd --poll stored none of the markers here (its readers never took a page): no ratio"
fi
