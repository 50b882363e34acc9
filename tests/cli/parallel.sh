#!/usr/bin/env bash
# Parallel formatting (worker threads, each with its own libtraceevent handles) must print
# byte for byte what one thread prints: committed recordings (sched_switch comms registered
# by the plugin across batches) and a simulated host+guest merge (guest symbols in kvm lines).
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
		HGT_THREADS=1 "$HGTRACE" report $o $f > one 2>&1
		# shellcheck disable=SC2086
		HGT_THREADS=3 "$HGTRACE" report $o $f > three 2>&1
		lines=$(wc -l < one)
		if [ -z "$o" ] && [ "$lines" -lt 5 ]; then
			tap_fail "$(basename "${f%% *}") $o: only $lines lines"
		else
			tap_cmp "$(basename "${f%% *}") $o: 3 threads print the $lines lines of 1" three one
		fi
	done
done
tap_done
