#!/usr/bin/env bash
# make bench-big: peak RSS of hgtrace reading a multi-GB trace.dat (streaming: it must not
# grow with the file), next to trace-cmd on the same file. Files are simulated host traces.
# BIG_EVENTS sets the size of the large file (default 800 million events, about 5.3 GB).
set -uo pipefail
builddir=$(realpath "${1:-build}")
hg=$builddir/tools/hgtrace/hgtrace
out=$(cd "$(dirname "$0")" && pwd)/out
mkdir -p "$out"
small=${SMALL_EVENTS:-8000000}
big=${BIG_EVENTS:-800000000}
for n in "$small" "$big"; do
	f=$out/rss-$n
	if [ ! -s "$f-host.dat" ]; then
		"$hg" simulate -o "$f" --events "$n" --vcpus 4 --host-cpus 4 --compression none \
			> /dev/null || exit 1
		rm -f "$f-guest.dat"
	fi
	size=$(stat -c %s "$f-host.dat")
	# A filter nothing matches: every event of every CPU is read and tested, none printed.
	flt='sched_switch: prev_pid == -12345'
	read -r s m < <( { /usr/bin/time -f "%e %M" "$hg" report -F "$flt" "$f-host.dat" \
		> /dev/null; } 2>&1 | tail -1)
	read -r s2 m2 < <( { /usr/bin/time -f "%e %M" trace-cmd report -F "$flt" "$f-host.dat" \
		> /dev/null; } 2>&1 | tail -1)
	printf "%6.2f GB: hgtrace %7.1f s, peak RSS %7d KB; trace-cmd %7.1f s, peak RSS %7d KB\n" \
		"$(echo "$size / 1000000000" | bc -l)" "$s" "$m" "$s2" "$m2"
done
