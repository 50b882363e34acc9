#!/usr/bin/env bash
# make fuzz: build the libFuzzer targets with clang + ASan/UBSan (the trace.dat reader; probe
# files and trace-events files) and run each on a corpus seeded from the tests. FUZZ_SECONDS
# (default 60) bounds each run.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build-fuzz/build.ninja ] || CC=clang meson setup build-fuzz -Dfuzz=true -Dtests=false \
	-Db_sanitize=address,undefined -Db_lundef=false
ninja -C build-fuzz fuzz/fuzz-reader fuzz/fuzz-probes
mkdir -p fuzz/corpus-run fuzz/corpus-probes
cp -n tests/data/*.dat fuzz/corpus-run/ 2>/dev/null || true
# the probe target: simple-backend files and trace-events files
cp -n tests/data/probes-sample.trace tests/probes/*.trace-events lib/transport/trace-events \
	fuzz/corpus-probes/ 2>/dev/null || true
# Leaks inside libtraceevent itself are not ours (tests/lsan.supp).
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
build-fuzz/fuzz/fuzz-reader -artifact_prefix=fuzz/ -max_total_time="${FUZZ_SECONDS:-60}" -max_len=1048576 \
	-rss_limit_mb=2048 fuzz/corpus-run
exec build-fuzz/fuzz/fuzz-probes -artifact_prefix=fuzz/ -max_total_time="${FUZZ_SECONDS:-60}" \
	-max_len=65536 -rss_limit_mb=2048 fuzz/corpus-probes
