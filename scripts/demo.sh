#!/usr/bin/env bash
# make demo: report a bundled real recording (x86-tsc host trace made with trace-cmd).
set -eu  # no pipefail: head closes the pipes on purpose
builddir=${1:-build}
hg=$builddir/tools/hgtrace/hgtrace
data=tests/data
echo "== hgtrace dump $data/tsc.dat (first lines)"
"$hg" dump "$data/tsc.dat" | head -12
echo
echo "== hgtrace report $data/tsc.dat (first 15 events)"
"$hg" report "$data/tsc.dat" | head -16
echo
echo "== three recordings merged by time (mono clock, local clock, an instance that overran)"
"$hg" report -i "$data/mono.dat" -i "$data/local-v7none.dat" -i "$data/inst.dat" | grep -m3 -B1 -A1 'EVENTS DROPPED' || true
echo
echo "Try: $hg report -i $data/mono.dat -i $data/inst.dat --ts-diff | less"
