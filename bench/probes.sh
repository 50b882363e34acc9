#!/usr/bin/env bash
# Userspace probes: cost per event of a disabled probe and of an enabled simple-backend probe
# (1 and 2 threads), beside LTTng-UST's enabled cost measured in the same run on the same
# loop (a tracepoint with the same two integer fields, an LTTng session recording it).
# Each figure is the median of 5 runs of 2,000,000 events per thread. For the cost figures
# the simple backend's rings hold the whole run (populated at the thread's first event,
# outside the timing), so no event is dropped (the file is checked); a last line shows what
# the default 1 MB rings keep when a producer runs flat out. LTTng's discarded-event count
# is printed beside its figure.
# Usage: bench/probes.sh BUILDDIR
set -euo pipefail
BUILD=$(realpath "${1:-build}")
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
HGTRACE=$BUILD/tools/hgtrace/hgtrace
N=${HGT_BENCH_EVENTS:-2000000}
t=$(mktemp -d)
session=
cleanup() {
	[ -n "$session" ] && lttng destroy "$session" > /dev/null 2>&1
	rm -rf "$t"
}
trap cleanup EXIT
export PKG_CONFIG_PATH=$BUILD/meson-uninstalled

build() { # NAME BACKENDS [extra cc args]
	local d=$t/$1
	mkdir -p "$d"
	(cd "$here" && "$HGTRACE" gen --backends "$2" --format h -o "$d/trace-bench.h" probes.trace-events &&
		"$HGTRACE" gen --backends "$2" --format c -o "$d/trace-bench.c" probes.trace-events)
	[[ $2 == *ust* ]] && (cd "$here" && "$HGTRACE" gen --format ust -o "$d/probes-ust.h" probes.trace-events)
	cc -O2 -I"$d" -o "$d/bench" "$here/probes-bench.c" "$d/trace-bench.c" \
		$(pkg-config --cflags --libs hgtrace-probes-uninstalled) -Wl,-rpath,"$BUILD/lib" -lpthread "${@:3}"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# run NAME THREADS [env...]: median ns/event of 5 runs
run() {
	local name=$1 th=$2
	shift 2
	for i in 1 2 3 4 5; do
		env "$@" "$t/$name/bench" "$th" "$N" | awk '{ print $2 }'
	done | median
}

build simple simple
echo "== userspace probes: ns per event, median of 5 runs x $N events per thread =="
dis=$(run simple 1)
printf '%-44s %8s ns\n' "disabled probe (simple backend built in)" "$dis"
ring_kb=$((N * 32 / 1024 * 2))
# recorded_dropped FILE: "R recorded, D dropped" as the file says
recorded_dropped() {
	"$HGTRACE" simpletrace "$1" | awk '/^Dropped_Event/ { split($4, a, "="); d += a[2] }
		/^bench_ev/ { n++ } END { printf "%d recorded, %d dropped", n, d }'
}
declare -A simple lttng
for th in 1 2; do
	simple[$th]=$(run simple $th HGTRACE_EVENTS=bench_ev HGTRACE_FILE=$t/s.trace HGTRACE_RING_KB=$ring_kb)
	printf '%-44s %8s ns   (last run: %s)\n' "enabled, simple backend, $th thread(s)" \
		"${simple[$th]}" "$(recorded_dropped "$t/s.trace")"
done

if pkg-config --exists lttng-ust && command -v lttng > /dev/null; then
	build ust ust $(pkg-config --cflags --libs lttng-ust)
	pgrep -x lttng-sessiond > /dev/null || lttng-sessiond --daemonize --no-kernel > /dev/null 2>&1
	session=hgt_bench_$$
	lttng create $session --output="$t/lttng" > /dev/null
	lttng enable-channel -s $session -u --subbuf-size=4M --num-subbuf=8 ch > /dev/null
	lttng enable-event -s $session -u -c ch 'probes:bench_ev' > /dev/null
	lttng start $session > /dev/null
	for th in 1 2; do
		lttng[$th]=$(run ust $th)
	done
	lttng stop $session > /dev/null
	discarded=$(lttng list $session 2> /dev/null | grep -o 'Discarded events: [0-9]*' | awk '{ s += $3 } END { print s + 0 }')
	lttng destroy $session > /dev/null && session=
	for th in 1 2; do
		printf '%-44s %8s ns\n' "enabled, LTTng-UST 2.13, $th thread(s)" "${lttng[$th]}"
	done
	echo "(LTTng discarded $discarded events over its 10 runs)"
	for th in 1 2; do
		echo "ratio LTTng-UST / hgtrace simple, $th thread(s): $(echo "scale=2; ${lttng[$th]} / ${simple[$th]}" | bc)x"
		bench_row "probe, enabled, $th thread(s): ns per event" "${simple[$th]} ns" \
			"${lttng[$th]} ns LTTng-UST" "$(echo "${lttng[$th]} / ${simple[$th]}" | bc -l)"
	done
else
	echo "LTTng-UST not installed: no comparison (scripts/deps.sh installs liblttng-ust-dev lttng-tools)"
fi
HGTRACE_EVENTS=bench_ev HGTRACE_FILE=$t/d.trace "$t/simple/bench" 1 $((N * 4)) > "$t/d.out"
echo "flat out into the default 1 MB ring, 1 thread, $((N * 4)) events: $(awk '{ print $2 }' "$t/d.out") ns/event, $(recorded_dropped "$t/d.trace")"
