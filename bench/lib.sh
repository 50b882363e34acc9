# Sourced by the benchmarks: bench_row adds one line to the summary table that
# bench/all.sh prints at the end of `make bench` ($BENCH_SUMMARY; none when unset).
# bench_row MEASURE HGTRACE PEER RATIO: what was measured, hgtrace's figure and the peer's
# (with their units, e.g. "0.71 s" and "3.52 s (trace-cmd)"), and the ratio in hgtrace's
# favour (> 1: hgtrace better), as a number.
bench_row() {
	[ -n "${BENCH_SUMMARY:-}" ] || return 0
	printf '%s\t%s\t%s\t%.2f\n' "$1" "$2" "$3" "$4" >> "$BENCH_SUMMARY"
}

# bench_measure CMD...: "WALL CPU MAXRSS_KB" of one run of CMD (its output to /dev/null);
# $out/time.txt is used on the way.
bench_measure() {
	/usr/bin/time -f "%e %U %S %M" "$@" > /dev/null 2> "$out/time.txt"
	tail -1 "$out/time.txt" | awk '{ print $1, $2 + $3, $4 }'
}

# bench_why_session: the simulated host + 4-vCPU guest session with injected causes of
# view-why.sh and export.sh ($out/why-session-{host,guest}.dat, made once): sets $p to its
# path prefix and $events to its event count.
bench_why_session() {
	local inject="--inject preempt:500 --inject exits:IO_INSTRUCTION:20:25 --inject irqs:10:30 --inject guest:400"
	p=$out/why-session
	if [ ! -s "$p-guest.dat" ] || [ ! -s "$p.sim" ] || grep -q '^injected: [0-9]* of' "$p.sim"; then
		# shellcheck disable=SC2086
		"$hg" simulate -o "$p" --vcpus 4 --host-cpus 4 --events 2200000 --seed 12 \
			--embed-sync $inject > "$p.sim" || return 1
	fi
	events=$(( $(grep -o '([0-9]* events' "$p.sim" | tr -dc '0-9\n' | paste -sd+ | bc) ))
}

# bench_disk_sample PATH...: one line for bench/disk-bound.awk: the time, the apparent size
# of the files under the PATHs that are recordings (NAME.recording: every page they were
# given) and the blocks all PATHs' files hold (KB; the flight recorder's own files
# included). Each file is looked at once for both (two passes a few ms apart, at the
# trace buffer's rate, put megabytes between them).
bench_disk_sample() {
	local t=$EPOCHREALTIME
	find "$@" -type f -printf '%s %b %p\n' 2> /dev/null |
		awk -v t="$t" '$3 ~ /\.recording\// { a += $1 } { u += $2 * 512 }
			END { printf "%s %.0f %.0f\n", t, a, u / 1024 }'
}
