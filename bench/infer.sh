#!/usr/bin/env bash
# make bench (part 6): the offset inferred from the trace (hgtrace attach with nothing
# recorded) on a simulated 4-vCPU session of about 0.8 M host + 1.2 M guest events, side by
# side with a plain attach given the offset (hgtrace attach -s) and, as the peer's cost of
# reading the same pair once, trace-cmd report -i HOST -i GUEST (Debian's trace-cmd 3.1.6
# has no attach, and no tool infers the offset). Each on fresh copies, alternating, mean of
# BENCH_RUNS (3). Also printed: how far the inferred offset is from the simulator's truth,
# and its bound.
set -uo pipefail
builddir=$(realpath "${1:-build}")
hg=$builddir/tools/hgtrace/hgtrace
here=$(cd "$(dirname "$0")" && pwd)
runs=${BENCH_RUNS:-3}
. "$here/../tests/lib/tap.sh"
tap_workdir
"$hg" simulate -o s --vcpus 4 --host-cpus 4 --events 2000000 --seed 13 > s.sim || exit 1
off=$(sed -n 's/.*attach with -s \(.*\))/\1/p' s.sim)
pids=$(grep '^vcpus:' s.sim | grep -o 'pid[0-9]*' | tr -d pid | tr '\n' ' ')
he=$(sed -n 's/^host: .*(\([0-9]*\) events.*/\1/p' s.sim)
ge=$(sed -n 's/^guest: .*(\([0-9]*\) events.*/\1/p' s.sim)
echo "bench infer: $he host + $ge guest events, 4 vCPUs"
secs() { # CMD...: wall seconds of CMD on fresh copies h.dat g.dat
	cp s-host.dat h.dat
	cp s-guest.dat g.dat
	local t0 t1
	t0=$(date +%s%N)
	"$@" > run.out 2>&1 || { echo "bench infer: failed: $* $(head -3 run.out)" >&2; echo 0; return; }
	t1=$(date +%s%N)
	echo "scale=3; ($t1 - $t0) / 1000000000" | bc
}
ti=0 tp=0 tt=0
have_tc=$(command -v trace-cmd > /dev/null && echo 1)
for i in $(seq 1 "$runs"); do
	# shellcheck disable=SC2086
	a=$(secs "$hg" attach h.dat g.dat $pids)
	cp run.out infer.out
	# shellcheck disable=SC2086
	b=$(secs "$hg" attach -s "$off" h.dat g.dat $pids)
	c=0
	# shellcheck disable=SC2086
	[ -n "$have_tc" ] && c=$(secs trace-cmd report -i h.dat -i g.dat)
	echo "run $i: hgtrace attach (inferred) ${a}s, hgtrace attach -s ${b}s, trace-cmd report of the pair ${c}s"
	ti=$(echo "$ti + $a" | bc -l); tp=$(echo "$tp + $b" | bc -l); tt=$(echo "$tt + $c" | bc -l)
done
worst=0 wb=0
while read -r est bound; do
	d=$((est - off)); d=${d#-}
	[ "$d" -gt "$worst" ] && worst=$d
	[ "$bound" -gt "$wb" ] && wb=$bound
done < <(sed -n 's/^guest CPU [0-9]*: offset \([0-9-]*\) +- \([0-9]*\) .*/\1 \2/p' infer.out)
printf "inference on %d + %d events, mean of %d: %.3fs; hgtrace attach -s %.3fs; trace-cmd report of the pair %.3fs (inference = %.0fx the plain attach, %.2fx trace-cmd's report); offset %d cycles from the truth, bound +-%d\n" \
	"$he" "$ge" "$runs" "$(echo "$ti / $runs" | bc -l)" "$(echo "$tp / $runs" | bc -l)" \
	"$(echo "$tt / $runs" | bc -l)" "$(echo "$ti / $tp" | bc -l)" \
	"$(if [ -n "$have_tc" ]; then echo "$ti / $tt" | bc -l; else echo 0; fi)" "$worst" "$wb"
