#!/usr/bin/env bash
# make fuzz: build the libFuzzer targets with clang + ASan/UBSan and run each on its corpus:
#   reader  any bytes as a trace.dat: every event of every CPU printed
#   probes  any bytes as a simple-backend file and as a trace-events file
#   listen  any bytes as a guest agent's control stream (written out when complete)
#   ctl     any bytes as a probe-runtime control command
# Corpora: fuzz/corpus/TARGET (committed, minimized) plus seeds made now (hgtrace simulate
# files, the tests' recordings and trace-events files); new inputs go to fuzz/corpus-run/.
# The reader's committed corpus (hundreds of files, each parsed by libtraceevent) loads in
# tens of seconds, all of a 60 s run: by default it gets every 10th of them (by name);
# FUZZ_FULL=1 (make bench-fuzz) loads them all.
# Each target stops after FUZZ_RUNS_<TARGET> executions (default FUZZ_RUNS, default
# unlimited) or FUZZ_SECONDS (default 60), whichever comes first. FUZZ_MERGE=1 merges what
# was found back into fuzz/corpus (minimized). Prints one line per target: executions,
# rate, findings (crash, leak, timeout and oom files written under fuzz/).
# Exit status: 1 when any target found something.
set -uo pipefail
cd "$(dirname "$0")/.."
top=$PWD
[ -f build-fuzz/build.ninja ] || CC=clang meson setup build-fuzz -Dfuzz=true -Dtests=false \
	-Db_sanitize=address,undefined -Db_lundef=false > /dev/null
ninja -C build-fuzz > /dev/null || { echo "fuzz: build failed"; exit 2; }
ninja -C build tools/hgtrace/hgtrace > /dev/null 2>&1 || ninja -C build > /dev/null
hg=$top/build/tools/hgtrace/hgtrace
run=$top/fuzz/corpus-run
mkdir -p "$run"/{reader,probes,listen,ctl}

# Seeds made now: small simulated host/guest pairs in each file version and compression
# (ten real event formats each: the fast inputs). FUZZ_REAL=1 adds two real recordings
# (hundreds of formats, each parsed by libtraceevent: about 20 ms an execution).
if [ -x "$hg" ]; then
	i=0
	for a in "--vcpus 1 --host-cpus 1" "--vcpus 2 --file-version 6" "--vcpus 2 --compression none" \
		"--vcpus 2 --compression zlib" "--vcpus 2 --embed-sync" \
		"--vcpus 2 --scale 1.25,48 --embed-sync"; do
		i=$((i + 1))
		# shellcheck disable=SC2086
		"$hg" simulate -o "$run/reader/sim$i" --events 300 --duration-ms 20 $a > /dev/null
	done
fi
[ "${FUZZ_REAL:-0}" = 1 ] && cp -n tests/data/tsc.dat tests/data/mono.dat "$run/reader/"
corpus() { # TARGET: the committed corpus to load
	if [ "$1" != reader ] || [ "${FUZZ_FULL:-0}" = 1 ]; then
		echo "$top/fuzz/corpus/$1"
		return
	fi
	rm -rf "$run/reader-sample"
	mkdir -p "$run/reader-sample"
	find "$top/fuzz/corpus/reader" -type f | sort | awk 'NR % 10 == 1' |
		xargs -r cp -t "$run/reader-sample"
	echo "$run/reader-sample"
}
cp -n tests/data/probes-sample.trace tests/probes/*.trace-events lib/transport/trace-events \
	"$run/probes/" 2> /dev/null

# Leaks inside libtraceevent itself are not ours (tests/lsan.supp). A 16 MB quarantine (not
# 256) and 8-frame allocation stacks keep the process small: the format probe's helper is
# forked again after each format that kills it, and a fork copies the page tables (1,336
# against 910 reader executions a second in a 60 s run).
export LSAN_OPTIONS="suppressions=$top/tests/lsan.supp:print_suppressions=0"
export ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=16:malloc_context_size=8}
found=0
for t in reader probes listen ctl; do
	case $t in
	reader) max_len=65536 ;;
	probes) max_len=65536 ;;
	listen) max_len=65536 ;;
	ctl) max_len=4096 ;;
	esac
	var=FUZZ_RUNS_${t^^}
	runs=${!var:-${FUZZ_RUNS:--1}}
	before=$(find fuzz -maxdepth 1 -name 'crash-*' -o -maxdepth 1 -name 'leak-*' \
		-o -maxdepth 1 -name 'timeout-*' -o -maxdepth 1 -name 'oom-*' | wc -l)
	# absolute paths: the ctl target works in a directory of its own
	build-fuzz/fuzz/fuzz-$t -artifact_prefix="$top/fuzz/" -max_total_time="${FUZZ_SECONDS:-60}" \
		-runs="$runs" -max_len=$max_len -rss_limit_mb=2048 -timeout=20 -print_final_stats=1 \
		"$run/$t" "$(corpus $t)" > "$run/$t.log" 2>&1
	rc=$?
	after=$(find fuzz -maxdepth 1 -name 'crash-*' -o -maxdepth 1 -name 'leak-*' \
		-o -maxdepth 1 -name 'timeout-*' -o -maxdepth 1 -name 'oom-*' | wc -l)
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$run/$t.log")
	secs=$(sed -n 's/^stat::\(average_exec_per_sec\): *//p' "$run/$t.log")
	cov=$(grep -o 'cov: [0-9]*' "$run/$t.log" | tail -1)
	echo "fuzz $t: ${execs:-0} executions, ${secs:-0} exec/s, ${cov:-cov: ?}, $((after - before)) findings (exit $rc)"
	[ $((after - before)) = 0 ] && [ $rc = 0 ] || { found=1; tail -30 "$run/$t.log"; }
	if [ "${FUZZ_MERGE:-0}" = 1 ]; then
		mkdir -p "fuzz/corpus/$t.new"
		build-fuzz/fuzz/fuzz-$t -merge=1 -max_len=$max_len "$top/fuzz/corpus/$t.new" \
			"$top/fuzz/corpus/$t" "$run/$t" > /dev/null 2>&1 &&
			rm -rf "fuzz/corpus/$t" && mv "fuzz/corpus/$t.new" "fuzz/corpus/$t"
		rm -rf "fuzz/corpus/$t.new"
	fi
done
rm -rf /tmp/hgt-fuzz-listen.* /tmp/hgt-fuzz-ctl.*
exit $found
