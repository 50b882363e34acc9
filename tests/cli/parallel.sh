#!/usr/bin/env bash
# Parallel formatting (worker threads, each with its own libtraceevent handles) and the info
# memo (texts of payloads printed before) must print byte for byte what one thread printing
# every record prints: committed recordings (sched_switch comms registered by the plugin
# across batches) and a simulated host+guest merge (guest symbols in kvm lines). The same
# for export in both formats: what the workers make is the one thread's, byte for byte
# (sink/export.sh checks the workers' output against trace-cmd).
# Usage: parallel.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
cd "$t" || exit 1
"$HGTRACE" simulate -o s --vcpus 4 --events 300000 --embed-sync > /dev/null
for f in "$here"/data/*.dat "s-host.dat s-guest.dat"; do
	for o in "" "-t" "-N" "-R" "--ts-diff" "--boundary" "-F sched_switch" "--cpu 1"; do
		# shellcheck disable=SC2086
		HGT_INFO_MEMO=0 HGT_THREADS=1 "$HGTRACE" report $o $f > one 2> one.err
		# shellcheck disable=SC2086
		HGT_INFO_MEMO=stats HGT_THREADS=1 "$HGTRACE" report $o $f > memo 2> memo.err
		# shellcheck disable=SC2086
		HGT_THREADS=3 "$HGTRACE" report $o $f > three 2> three.err
		lines=$(wc -l < one)
		name="$(basename "${f%% *}") $o"
		if [ -z "$o" ] && [ "$lines" -lt 5 ]; then
			tap_fail "$name: only $lines lines"
			continue
		fi
		cat one.err >> one
		cat three.err >> three
		tap_cmp "$name: 3 threads print the $lines lines of 1" three one
		hits=$(sed -n 's/^info memo: .* \([0-9]*\) hits.*/\1/p' memo.err)
		grep -v '^info memo: ' memo.err >> memo
		tap_cmp "$name: with the memo (${hits:-0} hits) as without" memo one
		if [ -z "$o" ] && [ "${hits:-0}" -eq 0 ] && [ "$lines" -gt 1000 ]; then
			tap_fail "$name: the memo never hit in $lines lines"
		fi
	done
	for fmt in chrome-json perfetto; do
		name="$(basename "${f%% *}") export --format $fmt"
		# shellcheck disable=SC2086
		HGT_THREADS=1 "$HGTRACE" export --format $fmt -o one $f 2> one.err
		# shellcheck disable=SC2086
		HGT_THREADS=3 "$HGTRACE" export --format $fmt -o three $f 2> three.err
		bytes=$(stat -c %s one)
		if [ "$bytes" -lt 1000 ]; then
			tap_fail "$name: only $bytes bytes"
			continue
		fi
		cat one.err >> one
		cat three.err >> three
		tap_cmp "$name: 3 threads write the $bytes bytes of 1" three one
	done
done
tap_done
