# Sourced by the benchmarks: bench_row adds one line to the summary table that
# bench/all.sh prints at the end of `make bench` ($BENCH_SUMMARY; none when unset).
# bench_row MEASURE HGTRACE PEER RATIO: what was measured, hgtrace's figure and the peer's
# (with their units, e.g. "0.71 s" and "3.52 s (trace-cmd)"), and the ratio in hgtrace's
# favour (> 1: hgtrace better), as a number.
bench_row() {
	[ -n "${BENCH_SUMMARY:-}" ] || return 0
	printf '%s\t%s\t%s\t%.2f\n' "$1" "$2" "$3" "$4" >> "$BENCH_SUMMARY"
}
