#!/usr/bin/env bash
# make bench (part): hgtrace why on a simulated host + 4-vCPU guest session of over 2 million
# events with injected causes, next to hgtrace report and trace-cmd report of the same
# files, alternating runs: wall time, CPU time and peak RSS. (hgtrace view joins when it
# lands.)
set -uo pipefail
builddir=$(realpath "${1:-build}")
hg=$builddir/tools/hgtrace/hgtrace
here=$(cd "$(dirname "$0")" && pwd)
out=$here/out
mkdir -p "$out"
runs=${BENCH_RUNS:-3}
p=$out/why-session
inject="--inject preempt:500 --inject exits:IO_INSTRUCTION:20:25 --inject irqs:10:30 --inject guest:400"
if [ ! -s "$p-guest.dat" ] || [ ! -s "$p.sim" ]; then
	# shellcheck disable=SC2086
	"$hg" simulate -o "$p" --vcpus 4 --host-cpus 4 --events 2200000 --seed 12 --embed-sync \
		$inject > "$p.sim" || exit 1
fi
events=$(( $(grep -o '([0-9]* events' "$p.sim" | tr -dc '0-9\n' | paste -sd+ | bc) ))
echo "bench: why on $p-host.dat + $p-guest.dat: $events events, $(grep -c '^injected' "$p.sim") causes injected"
measure() {
	/usr/bin/time -f "%e %U %S %M" "$@" > /dev/null 2> "$out/time.txt"
	tail -1 "$out/time.txt" | awk '{ print $1, $2 + $3, $4 }'
}
declare -A wall cpu rss
names=("why (top 10)" "why --threshold 1 --json" "hgtrace report" "trace-cmd report")
for i in $(seq 1 "$runs"); do
	for k in 0 1 2 3; do
		case $k in
		0) set -- "$hg" why "$p-host.dat" "$p-guest.dat" ;;
		1) set -- "$hg" why --threshold 1 --json "$p-host.dat" "$p-guest.dat" ;;
		2) set -- "$hg" report "$p-host.dat" "$p-guest.dat" ;;
		3) set -- trace-cmd report -i "$p-host.dat" -i "$p-guest.dat" ;;
		esac
		read -r s c m < <(measure "$@")
		wall[$k]=$(echo "${wall[$k]:-0} + $s" | bc -l)
		cpu[$k]=$(echo "${cpu[$k]:-0} + $c" | bc -l)
		rss[$k]=$m
		printf "run %d: %-26s %6.2fs wall %6.2fs cpu %8d KB\n" "$i" "${names[$k]}" "$s" "$c" "$m"
	done
done
for k in 0 1 2 3; do
	printf "%-26s mean of %d: %6.2fs wall, %6.2fs cpu, peak RSS %8d KB; %5.2fx trace-cmd report's time\n" \
		"${names[$k]}" "$runs" "$(echo "${wall[$k]} / $runs" | bc -l)" \
		"$(echo "${cpu[$k]} / $runs" | bc -l)" "${rss[$k]}" \
		"$(echo "${wall[$k]} / ${wall[3]}" | bc -l)"
done
"$hg" why --threshold 1 --json "$p-host.dat" "$p-guest.dat" |
	python3 -c 'import json, sys; d = json.load(sys.stdin); print("why: %d wakeups, %d timers; %d delays over 1 us" % (d["found"]["wakeup"], d["found"]["timer"], len(d["delays"])))'
