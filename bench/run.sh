#!/usr/bin/env bash
# make bench: hgtrace report vs trace-cmd report on the same large real recordings, to
# /dev/null, run alternately; prints both times, the ratio and both peak RSS.
# Two recordings (>= 2 million events each) are made with trace-cmd on this machine (root,
# tracefs): syscalls of a one-byte dd (payloads repeat: the info memo's best case) and a
# mixed one (file-system walks, many small processes, compression; sched, irq, timer,
# syscalls and workqueue events), where fewer payloads repeat. hgtrace also runs with one
# thread (HGT_THREADS=1: the CPU-time goal), and with one thread and its compiled print
# formats off (HGT_FASTFMT=0: libtraceevent prints every info text) to show what they are
# worth.
set -uo pipefail
builddir=$(realpath "${1:-build}")
hg=$builddir/tools/hgtrace/hgtrace
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../tests/lib/record.sh"
out=$here/out
mkdir -p "$out"
. "$here/lib.sh"
runs=${BENCH_RUNS:-3}

record() { # record OUT BUFFER_KB EVENTS... -- CMD...
	local f=$1 kb=$2
	shift 2
	[ -s "$f" ] && return 0
	why=$(tracefs_ready) || { echo "bench: cannot record: $why"; exit 1; }
	(
		flock 9
		trace-cmd record -d --no-filter -b "$kb" "$@" >/dev/null 2>&1 || true
	) 9>/tmp/hgtrace-tracefs-top.lock
	[ -s "$f" ] || { echo "bench: recording $f failed"; exit 1; }
}

measure() { # prints "wall_seconds cpu_seconds maxrss_kb"
	/usr/bin/time -f "%e %U %S %M" "$@" > /dev/null 2> "$out/time.txt"
	tail -1 "$out/time.txt" | awk '{ print $1, $2 + $3, $4 }'
}

bench_file() { # bench_file NAME FILE
	local name=$1 big=$2 events hits ht=0 tt=0 hc=0 tc=0 oc=0 nc=0 hm tm i
	events=$(trace-cmd report "$big" 2>/dev/null | grep -vc '^cpus=')
	echo "bench $name: $big: $(stat -c %s "$big") bytes, $events events"
	[ "$events" -ge 2000000 ] || echo "bench $name: warning: fewer than 2 million events"

	# Identical output first (latency column removed).
	"$hg" report --no-latency "$big" > "$out/hg.txt"
	trace-cmd report "$big" > "$out/tc.txt" 2>/dev/null
	if cmp -s "$out/hg.txt" "$out/tc.txt"; then echo "bench $name: outputs identical"; else
		echo "bench $name: OUTPUTS DIFFER"; fi
	rm -f "$out/hg.txt" "$out/tc.txt"
	hits=$(HGT_INFO_MEMO=stats HGT_THREADS=1 "$hg" report "$big" 2>&1 >/dev/null |
		sed -n 's/^info memo: .*(\(.*\)).*/\1/p')
	echo "bench $name: info memo hit rate ${hits:-unknown}"

	for i in $(seq 1 "$runs"); do
		read -r s1 c1 m1 < <(measure "$hg" report "$big")
		read -r s2 c2 m2 < <(measure trace-cmd report "$big")
		read -r _ c3 _ < <(measure env HGT_THREADS=1 "$hg" report "$big")
		read -r _ c4 _ < <(measure env HGT_THREADS=1 HGT_FASTFMT=0 "$hg" report "$big")
		printf "run %d: hgtrace %6.2fs wall %6.2fs cpu %7d KB   trace-cmd %6.2fs wall %6.2fs cpu %7d KB   (hgtrace, one thread: %5.2fs cpu; and no compiled formats: %5.2fs cpu)\n" \
			"$i" "$s1" "$c1" "$m1" "$s2" "$c2" "$m2" "$c3" "$c4"
		ht=$(echo "$ht + $s1" | bc -l); tt=$(echo "$tt + $s2" | bc -l)
		hc=$(echo "$hc + $c1" | bc -l); tc=$(echo "$tc + $c2" | bc -l)
		oc=$(echo "$oc + $c3" | bc -l); nc=$(echo "$nc + $c4" | bc -l)
		hm=$m1 tm=$m2
	done
	printf "%s report, %d events, mean of %d: hgtrace %.2fs wall / %.2fs cpu, trace-cmd %.2fs wall / %.2fs cpu\n" \
		"$name" "$events" "$runs" "$(echo "$ht / $runs" | bc -l)" "$(echo "$hc / $runs" | bc -l)" \
		"$(echo "$tt / $runs" | bc -l)" "$(echo "$tc / $runs" | bc -l)"
	printf "%s ratio: %.2fx faster (wall), %.2fx less cpu; one thread %.2fx less cpu (%.2fx without compiled formats); peak RSS %d KB vs %d KB (%.1fx less)\n" \
		"$name" "$(echo "$tt / $ht" | bc -l)" "$(echo "$tc / $hc" | bc -l)" "$(echo "$tc / $oc" | bc -l)" \
		"$(echo "$tc / $nc" | bc -l)" "$hm" "$tm" "$(echo "$tm / $hm" | bc -l)"
	bench_row "report, $name, $events events: wall" "$(printf '%.2f s' "$(echo "$ht / $runs" | bc -l)")" \
		"$(printf '%.2f s trace-cmd' "$(echo "$tt / $runs" | bc -l)")" "$(echo "$tt / $ht" | bc -l)"
	bench_row "report, $name: CPU time" "$(printf '%.2f s' "$(echo "$hc / $runs" | bc -l)")" \
		"$(printf '%.2f s trace-cmd' "$(echo "$tc / $runs" | bc -l)")" "$(echo "$tc / $hc" | bc -l)"
	bench_row "report, $name: CPU time, one thread" "$(printf '%.2f s' "$(echo "$oc / $runs" | bc -l)")" \
		"$(printf '%.2f s trace-cmd' "$(echo "$tc / $runs" | bc -l)")" "$(echo "$tc / $oc" | bc -l)"
}

big=$out/big.dat
mixed=$out/mixed.dat
[ -s "$big" ] || echo "bench: recording syscalls of dd (1.5M one-byte copies) with trace-cmd..."
record "$big" 20000 -e syscalls -e sched -o "$big" -- \
	dd if=/dev/zero of=/dev/null bs=1 count=1500000
[ -s "$mixed" ] || echo "bench: recording a mixed workload with trace-cmd..."
record "$mixed" 60000 -e sched -e irq -e timer -e syscalls -e workqueue -o "$mixed" -- \
	sh -c 'for k in 1 2; do find /usr -xdev > /dev/null 2>&1
		for i in $(seq 300); do ls /usr/share/doc > /dev/null; date > /dev/null; done
		tar cf - /usr/share/doc /usr/include 2>/dev/null | gzip -1 | wc -c > /dev/null; done'
bench_file dd "$big"
bench_file mixed "$mixed"
