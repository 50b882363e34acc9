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
# A guest whose saved cmdlines lack the sshd tasks (their pids renamed, the same length:
# v6, uncompressed, so no offset moves): their comms come only from the sched_switch
# plugin's registrations, which a worker must apply from the batches before its own.
"$HGTRACE" simulate -o c --vcpus 4 --events 300000 --file-version 6 --compression none > /dev/null
python3 - c-guest.dat << 'PY' || tap_fail "c-guest.dat: cmdlines not renamed"
import re, sys
d = open(sys.argv[1], "rb").read()
n = len(re.findall(rb"\n10(\d)2 sshd\n", d))
d = re.sub(rb"\n10(\d)2 sshd\n", rb"\n90\g<1>2 sshd\n", d)
open(sys.argv[1], "wb").write(d)
print("# c-guest.dat: %d sshd pids taken out of the saved cmdlines" % n)
sys.exit(n < 2)
PY
# c-guest.dat's twin with its sshd tasks named sshX: merged with it, each of those pids has
# two comms, one per input, both registered only by the plugin; a worker must apply each
# input's own.
python3 - c-guest.dat c2-guest.dat << 'PY' || tap_fail "c2-guest.dat: comms not renamed"
import sys
d = open(sys.argv[1], "rb").read()
n = d.count(b"sshd")
open(sys.argv[2], "wb").write(d.replace(b"sshd", b"sshX"))
print("# c2-guest.dat: %d sshd comms renamed sshX" % n)
sys.exit(n < 2)
PY
HGT_THREADS=1 "$HGTRACE" report c-guest.dat c2-guest.dat 2> /dev/null |
	awk '$2 ~ /^ssh[dX]-10[0-9]2$/ { s[substr($2, 6), substr($2, 4, 1)] = 1 }
		END { for (k in s) { split(k, a, SUBSEP); if (a[2] == "d" && ((a[1], "X") in s)) n++ } print n + 0 }' > twins
[ "$(cat twins)" -ge 2 ] && tap_ok "c-guest.dat + c2-guest.dat: $(cat twins) pids print as sshd in one input, sshX in the other" ||
	tap_fail "c-guest.dat + c2-guest.dat: $(cat twins) pids with both comms"
for f in "$here"/data/*.dat "s-host.dat s-guest.dat" c-guest.dat "c-guest.dat c2-guest.dat"; do
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
# and the comms are trace-cmd's: "<...>" where no sched_switch has named the pid yet, and
# always with -R (no plugin runs)
if command -v trace-cmd > /dev/null; then
	for o in "" "-R"; do
		# shellcheck disable=SC2086
		trace-cmd report $o c-guest.dat 2> /dev/null | awk 'NR > 1 { print $1 }' > want
		# shellcheck disable=SC2086
		HGT_THREADS=3 "$HGTRACE" report $o c-guest.dat 2> /dev/null | awk 'NR > 1 { print $1 }' > got
		tap_cmp "c-guest.dat $o: 3 threads print trace-cmd's $(grep -c '<\.\.\.>-' want) <...> and $(wc -l < want) comm-pid columns" got want
	done
else
	tap_skip "c-guest.dat: comms against trace-cmd" "trace-cmd is not installed"
fi

# A full device (writes fail with ENOSPC): one line that says so, exit 1, with one thread
# and with workers; a reader gone (| head): the end SIGPIPE gives a lone writer, no message,
# for report and export (whose writes run in a thread of its own, signals blocked).
for th in 1 3; do
	TAP_WANT="report: write failed: No space left on device" tap_refuses \
		"report > /dev/full, HGT_THREADS=$th" "" \
		sh -c 'HGT_THREADS=$1 exec "$0" report s-host.dat s-guest.dat > /dev/full' "$HGTRACE" $th
	HGT_THREADS=$th "$HGTRACE" report s-host.dat s-guest.dat 2> pipe.err | head -c 100 > /dev/null
	st=${PIPESTATUS[0]}
	[ "$st" = 141 ] && [ ! -s pipe.err ] &&
		tap_ok "report | head, HGT_THREADS=$th: ended by SIGPIPE (status $st), nothing said" ||
		tap_fail "report | head, HGT_THREADS=$th: status $st (want 141), said: $(cat pipe.err)"
done
"$HGTRACE" export --format chrome-json s-host.dat s-guest.dat 2> pipe.err | head -c 100 > /dev/null
st=${PIPESTATUS[0]}
[ "$st" = 141 ] && [ ! -s pipe.err ] &&
	tap_ok "export | head: ended by SIGPIPE (status $st), nothing said" ||
	tap_fail "export | head: status $st (want 141), said: $(cat pipe.err)"

# How many threads by default: one per free CPU (its affinity's, less the tasks running
# elsewhere), so none beside the main one on one CPU, or with every CPU busy. Counted in
# /proc once the report's output has begun (its workers start before it prints, and none
# ends before the output that waits on this reader does). HGT_THREADS=2 shows the count
# sees a worker. The inputs must hold the 8 MiB of pages a default run needs for workers.
threads_of() { # threads_of CMD...: the report's threads, run as CMD... hgtrace report
	local pid n
	exec 5< <(exec "$@" "$HGTRACE" report c-host.dat c-guest.dat 2> /dev/null)
	pid=$!
	read -r _ <&5
	n=$(awk '/^Threads:/ { print $2 }' /proc/$pid/status)
	cat <&5 > /dev/null
	exec 5<&-
	echo "${n:-none}"
}
pages=$(for f in c-host.dat c-guest.dat; do "$HGTRACE" dump $f; done |
	awk '/^ *cpu [0-9]+: @/ { n += $4 } END { print n + 0 }')
ncpu=$(nproc)
one=$(threads_of taskset -c 0)
two=$(threads_of env HGT_THREADS=2)
spin=()
for ((k = 0; k < ncpu; k++)); do
	taskset -c $k sh -c 'while :; do :; done' &
	spin+=($!)
done
busy=$(threads_of env)
kill "${spin[@]}"
wait "${spin[@]}" 2> /dev/null
[ "$pages" -ge $((8 << 20)) ] && [ "$one" = 1 ] && [ "$busy" = 1 ] && [ "$two" = 2 ] &&
	tap_ok "default threads: 1 on one CPU (taskset), 1 with all $ncpu CPUs busy; HGT_THREADS=2 seen as 2 ($pages bytes of pages)" ||
	tap_fail "default threads: $one on one CPU (want 1), $busy with all $ncpu CPUs busy (want 1), $two for HGT_THREADS=2 (want 2); $pages bytes of pages (want 8 MiB or more)"
tap_done
