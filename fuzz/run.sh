#!/usr/bin/env bash
# make fuzz: build the reader's libFuzzer target with clang + ASan/UBSan and run it on a
# corpus seeded from tests/data. FUZZ_SECONDS (default 60) bounds the run.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build-fuzz/build.ninja ] || CC=clang meson setup build-fuzz -Dfuzz=true -Dtests=false \
	-Db_sanitize=address,undefined -Db_lundef=false
ninja -C build-fuzz fuzz/fuzz-reader
mkdir -p fuzz/corpus-run
cp -n tests/data/*.dat fuzz/corpus-run/ 2>/dev/null || true
# Leaks inside libtraceevent itself are not ours (tests/lsan.supp).
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
exec build-fuzz/fuzz/fuzz-reader -artifact_prefix=fuzz/ -max_total_time="${FUZZ_SECONDS:-60}" -max_len=1048576 \
	-rss_limit_mb=2048 fuzz/corpus-run
