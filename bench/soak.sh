#!/usr/bin/env bash
# make bench (listener soak): one `hgtrace listen` serves 8 good guests at once, 4 over FIFO
# pairs and 4 over TCP, each sending SOAK_MB (default 1280: 10 GB in all) of real ring-buffer
# pages, while hostile peers come and go on the same port: guests that vanish mid-stream,
# a byte every 100 ms, silent after HELLO, garbage, 100 MB floods. The good guests replay
# what a real `hgtrace agent` sent (its description and pages, captured first through
# FIFOs), with the protocol's END byte counts. Prints the listener's peak RSS, CPU time,
# wall time and throughput, the faults it reported per kind, and for each good guest the
# page bytes it sent and the bytes its file holds: lost bytes must be 0.
# Usage: soak.sh [BUILDDIR]   (SOAK_KEEP=1 keeps the work directory, named at the end)
set -uo pipefail
builddir=$(realpath "${1:-build}")
hg=$builddir/tools/hgtrace/hgtrace
here=$(cd "$(dirname "$0")" && pwd)
peer=$here/soak-peer.py
mb=${SOAK_MB:-1280}
T=/sys/kernel/tracing
[ "$(id -u)" = 0 ] && [ -e $T/trace_marker ] || { echo "bench soak: needs root and tracefs"; exit 0; }
w=$(mktemp -d /var/tmp/hgtrace-soak.XXXXXX)
trap 'pkill -P $$ 2> /dev/null; [ -n "${SOAK_KEEP:-}" ] || rm -rf "$w"' EXIT
cd "$w" || exit 1
port=$((30000 + $$ % 20000))

# 1. What a real agent sends: its description and 2 s of its pages (sched, irq, timer).
"$hg" setup-guest cap --cpus 2 --dir . > /dev/null
python3 "$peer" capture cap cap &
sleep 0.3
timeout 30 "$hg" agent --fifos cap -e sched -e irq -e timer -B hgt_soak_$$ 2> cap-agent.log
wait
[ -s cap.cpu0 ] || { echo "bench soak: capture failed: $(cat cap-agent.log)"; exit 1; }
echo "soak: captured a real agent's description ($(stat -c %s cap.ctl) bytes) and $(($(stat -c %s cap.cpu0) + $(stat -c %s cap.cpu1))) bytes of pages"

# 2. The listener, the good guests and the hostile peers.
mkdir out
fifos=()
for i in 1 2 3 4; do
	"$hg" setup-guest g$i --cpus 2 --dir . > /dev/null
	fifos+=(--fifo g$i:g$i)
done
# control data of all guests held together: 512 MB (the good ones hold about 6 MB each)
"$hg" listen -o out "${fifos[@]}" --tcp $port --start --max-mb $((mb + 256)) --max-total-mb 512 \
	--silent-timeout 10 2> listen.log &
lpid=$!
sleep 0.5
t0=$(date +%s.%N)
goods=()
for i in 1 2 3 4; do
	python3 "$peer" good fifo g$i cap "$mb" > sent-g$i.txt &
	goods+=($!)
	# sizes differ by a MB, so each network guest's file is known by its bytes
	python3 "$peer" good tcp $port cap $((mb + i)) > sent-t$i.txt &
	goods+=($!)
done
hostile=()
for m in disconnect slow silent garbage flood; do
	python3 "$peer" $m $port cap 3600 > /dev/null 2>&1 &
	hostile+=($!)
done
# every good guest written: the 4 FIFO ones, and the 4 network guests that said END
# (hostile peers never do) each with its file
good_done() {
	local n=0 g
	for g in $(sed -n 's/.*guest \(net-[0-9]*\): stopped$/\1/p' listen.log); do
		grep -q "guest $g: wrote " listen.log && n=$((n + 1))
	done
	[ "$(grep -c 'wrote out/trace-g[0-9]\.dat' listen.log)" = 4 ] && [ $n = 4 ]
}
# a good peer that fails (the listener cut it) never sees its guest written: stop then
failed=0
until good_done; do
	kill -0 $lpid 2> /dev/null || break
	for k in "${!goods[@]}"; do
		kill -0 "${goods[$k]}" 2> /dev/null && continue
		wait "${goods[$k]}" || failed=$((failed + 1))
		unset "goods[$k]"
	done
	[ $failed = 0 ] || break
	sleep 1
done
[ $failed = 0 ] || echo "soak: $failed good peers failed (the listener cut them): not all written"
t1=$(date +%s.%N)
read -r ut st < <(awk '{ print $14, $15 }' /proc/$lpid/stat)
hwm=$(awk '/VmHWM/ { print $2 }' /proc/$lpid/status)
kill "${hostile[@]}" 2> /dev/null
kill -INT $lpid
wait $lpid
cp listen.log "$here/out/soak-listen.log" 2> /dev/null
secs=$(echo "$t1 - $t0" | bc)
tck=$(getconf CLK_TCK)
echo "soak: 8 good guests x $mb MB (+1..4 MB for the network ones) with hostile peers: $secs s wall, listener CPU $(echo "scale=1; ($ut + $st) / $tck" | bc) s, peak RSS $((hwm / 1024)) MB, $(echo "scale=0; (8 * $mb + 10) / $secs" | bc) MB/s"
for k in "no hgtrace header" "no HELLO within" "silent for" "bad message header\|rejected" \
	"control channel closed before the end" "guest's limit\|over its"; do
	echo "soak: hostile, '$k': $(grep -c "$k" listen.log) guests cut"
done

# 3. Lost bytes per good guest: page bytes sent (END's counts) against its file's.
lost_all=0
for s in sent-g1 sent-g2 sent-g3 sent-g4 sent-t1 sent-t2 sent-t3 sent-t4; do
	read -r s0 s1 < "$s.txt"
	if [ -z "${s0:-}" ]; then
		echo "soak: ${s#sent-}: its sender failed (the listener cut it?): all lost"
		lost_all=$((lost_all + 1))
		continue
	fi
	if [ "${s%?}" = sent-g ]; then
		f=out/trace-g${s#sent-g}.dat
	else
		# a network guest's file: the one whose CPU 0 holds exactly what it sent
		f=$(for x in out/trace-net-*.dat; do
			# (grep reads it all: with -q, an early exit would fail the pipe)
			"$hg" dump "$x" 2> /dev/null | grep "cpu 0: .*($s0 uncompressed)" > /dev/null &&
				echo "$x"
		done | head -1)
	fi
	got=$("$hg" dump "$f" 2> /dev/null | sed -n 's/.*cpu [01]: .*(\([0-9]*\) uncompressed)/\1/p' |
		paste -sd+ | bc)
	lost=$((s0 + s1 - ${got:-0}))
	lost_all=$((lost_all + lost))
	echo "soak: ${s#sent-}: sent $((s0 + s1)) page bytes, ${f:-no file} holds ${got:-0}: $lost lost"
done
echo "soak: lost bytes for good guests: $lost_all"
[ -z "${SOAK_KEEP:-}" ] || echo "soak: kept $w"
[ $failed = 0 ] && [ $lost_all = 0 ]
