#!/usr/bin/env bash
# make bench: hgtrace report vs trace-cmd report on the same large real recording, to
# /dev/null, run alternately; prints both times, the ratio and both peak RSS.
# The recording (>= 2 million events) is made with trace-cmd on this machine (root, tracefs).
set -uo pipefail
builddir=$(realpath "${1:-build}")
hg=$builddir/tools/hgtrace/hgtrace
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../tests/lib/record.sh"
out=$here/out
mkdir -p "$out"
big=$out/big.dat
runs=${BENCH_RUNS:-3}

if [ ! -s "$big" ]; then
	why=$(tracefs_ready) || { echo "bench: cannot record: $why"; exit 1; }
	echo "bench: recording syscalls of dd (1.5M one-byte copies) with trace-cmd..."
	(
		flock 9
		trace-cmd record -d --no-filter -b 20000 -e syscalls -e sched -o "$big" -- \
			dd if=/dev/zero of=/dev/null bs=1 count=1500000 >/dev/null 2>&1 || true
	) 9>/tmp/hgtrace-tracefs-top.lock
fi
events=$(trace-cmd report "$big" 2>/dev/null | grep -vc '^cpus=')
echo "bench: $big: $(stat -c %s "$big") bytes, $events events"
[ "$events" -ge 2000000 ] || echo "bench: warning: fewer than 2 million events"

# Identical output first (latency column removed).
"$hg" report --no-latency "$big" > "$out/hg.txt"
trace-cmd report "$big" > "$out/tc.txt" 2>/dev/null
if cmp -s "$out/hg.txt" "$out/tc.txt"; then echo "bench: outputs identical"; else
	echo "bench: OUTPUTS DIFFER"; fi
rm -f "$out/hg.txt" "$out/tc.txt"

measure() { # prints "wall_seconds cpu_seconds maxrss_kb"
	/usr/bin/time -f "%e %U %S %M" "$@" > /dev/null 2> "$out/time.txt"
	tail -1 "$out/time.txt" | awk '{ print $1, $2 + $3, $4 }'
}
ht=0 tt=0 hc=0 tc=0
for i in $(seq 1 "$runs"); do
	read -r s1 c1 m1 < <(measure "$hg" report "$big")
	read -r s2 c2 m2 < <(measure trace-cmd report "$big")
	printf "run %d: hgtrace %6.2fs wall %6.2fs cpu %7d KB   trace-cmd %6.2fs wall %6.2fs cpu %7d KB\n" \
		"$i" "$s1" "$c1" "$m1" "$s2" "$c2" "$m2"
	ht=$(echo "$ht + $s1" | bc -l); tt=$(echo "$tt + $s2" | bc -l)
	hc=$(echo "$hc + $c1" | bc -l); tc=$(echo "$tc + $c2" | bc -l)
	hm=$m1 tm=$m2
done
printf "report, %d events, mean of %d: hgtrace %.2fs wall / %.2fs cpu, trace-cmd %.2fs wall / %.2fs cpu\n" \
	"$events" "$runs" "$(echo "$ht / $runs" | bc -l)" "$(echo "$hc / $runs" | bc -l)" \
	"$(echo "$tt / $runs" | bc -l)" "$(echo "$tc / $runs" | bc -l)"
printf "ratio: %.2fx faster (wall), %.2fx less cpu; peak RSS %d KB vs %d KB (%.1fx less)\n" \
	"$(echo "$tt / $ht" | bc -l)" "$(echo "$tc / $hc" | bc -l)" "$hm" "$tm" "$(echo "$tm / $hm" | bc -l)"
