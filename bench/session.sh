#!/usr/bin/env bash
# make bench (part 5): one-command host + guest sessions (hgtrace record -A). Per transport,
# N sessions of a 0.5 s workload; medians of
#   start latency: from launching record until the workload runs (host and guest recording),
#   stop latency:  from the workload's end until record exits with every file written,
#   the sync bound and best round trip the session measured (cycles of x86-tsc), and the
#   bound after the session refined the channel's samples with the vCPU threads' windows
#   (only where the host knows them: the TCG guest, run with -name vm,debug-threads=on).
# Transports: FIFO pairs and TCP loopback to an agent --serve on this machine (host and
# "guest" on one TSC, so the true offset is 0 and the largest stored offset is printed
# beside the bound), and virtio-serial ports of a real guest under QEMU TCG. Side by side in the same run, the same
# workload under a host-only recording: trace-cmd record and hgtrace record. Debian's
# trace-cmd cannot run a host + guest session here: its record -A needs vsock to the guest
# (no vhost-vsock on these machines) or a TCP agent inside a guest with networking.
set -uo pipefail
builddir=$(realpath "${1:-build}")
hg=$builddir/tools/hgtrace/hgtrace
here=$(cd "$(dirname "$0")" && pwd)
N=${BENCH_SESSIONS:-5}
T=/sys/kernel/tracing
[ "$(id -u)" = 0 ] && [ -e $T/trace_marker ] || { echo "bench session: needs root and tracefs"; exit 0; }
. "$here/../tests/lib/tap.sh"
tap_workdir # $t, removed at exit with the background jobs
w=$t
now() { date +%s%N; }
workload='date +%s%N > w0; sleep 0.5; date +%s%N > w1'
median() { sort -n | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "-" }'; }

# one CMD...: runs CMD (a recording of the workload), appends "start_ms stop_ms" to lat.txt
one() {
	local t0 t1
	rm -f w0 w1
	t0=$(now)
	"$@" > /dev/null 2> rec.log
	t1=$(now)
	[ -s w0 ] && [ -s w1 ] || { echo "bench session: a run failed: $(tail -3 rec.log | tr '\n' '|')"; return 1; }
	echo "$((($(cat w0) - t0) / 1000000)) $((($t1 - $(cat w1)) / 1000000))" >> lat.txt
}

# report NAME: medians of lat.txt (and of the sync figures in sync.txt, if any)
report() {
	local s st b r
	s=$(cut -d" " -f1 lat.txt | median)
	st=$(cut -d" " -f2 lat.txt | median)
	if [ -s sync.txt ]; then
		b=$(cut -d" " -f1 sync.txt | median)
		r=$(cut -d" " -f2 sync.txt | median)
		f=$(cut -d" " -f3 sync.txt | grep -v '^-$' | median)
		printf "%-34s start %5s ms  stop %5s ms  bound +-%8s  refined +-%8s  best rtt %8s  (%d runs)\n" "$1" "$s" "$st" "$b" "$f" "$r" "$(wc -l < lat.txt)"
	else
		printf "%-34s start %5s ms  stop %5s ms  (%d runs)\n" "$1" "$s" "$st" "$(wc -l < lat.txt)"
	fi
	rm -f lat.txt sync.txt
}

syncfig() { # from rec.log: "bound best_rtt refined" (refined: - when not refined)
	local f
	f=$(sed -n 's/.*sync: refined by the vCPU windows.* both +-\([0-9]*\).*/\1/p' rec.log | head -1)
	sed -n 's/.*sync: agent channel.*best round trip \([0-9]*\), bound +-\([0-9]*\).*/\2 \1/p' rec.log |
		head -1 | sed "s/\$/ ${f:--}/" >> sync.txt
}

echo "== sessions: record -A (median of $N), beside host-only recordings in the same run =="
for i in $(seq "$N"); do
	one trace-cmd record -d --no-filter -e sched:sched_switch -o tc.dat -- sh -c "$workload" || true
done
report "trace-cmd record (host only)"
for i in $(seq "$N"); do
	one "$hg" record -e sched:sched_switch -o h.dat -- sh -c "$workload"
done
report "hgtrace record (host only)"

"$hg" setup-guest g --cpus "$(nproc)" --dir . > /dev/null
"$hg" agent --serve --fifos g -e sched:sched_switch 2> agent.log &
apid=$!
worst=0
for i in $(seq "$N"); do
	one "$hg" record -e sched:sched_switch -A "g@fifo:$w/g" -o s.dat -- sh -c "$workload" && syncfig
	o=$("$hg" dump s-g.dat | awk '/time [0-9]+ offset/ { v = $4 < 0 ? -$4 : $4; if (v > m) m = v } END { print m + 0 }')
	[ "$o" -gt "$worst" ] && worst=$o
done
report "hgtrace record -A, FIFO, this host"
echo "   (truth 0: the largest stored offset over the runs was $worst cycles)"
kill -INT $apid
wait $apid

port=$((30000 + $$ % 20000))
"$hg" agent --serve --listen "tcp:127.0.0.1:$port" -e sched:sched_switch 2> tagent.log &
tpid=$!
sleep 0.3
for i in $(seq "$N"); do
	one "$hg" record -e sched:sched_switch -A "t@tcp:127.0.0.1:$port" -o t.dat -- sh -c "$workload" && syncfig
done
report "hgtrace record -A, TCP, this host"
kill -INT $tpid
wait $tpid

# A real guest under QEMU TCG (tests/guest/boot.sh builds its kernel and initramfs).
tap_skip_all() { echo "bench session: no TCG guest: $*"; exit 0; }
. "$here/../tests/guest/boot.sh"
guest_prereqs "$builddir"
guest_kernel
guest_initramfs "$builddir/tools/hgtrace/hgtrace-static" initramfs.gz << 'INIT'
echo "guest: serving"
hgtrace agent --serve --ports /dev/virtio-ports -e sched:sched_switch
poweroff -f
INIT
"$hg" setup-guest vm --cpus 2 --dir . > setup.txt
args=$(sed -n 's/ \\$//; /^-/p' setup.txt | tr '\n' ' ')
# shellcheck disable=SC2086
timeout 600 qemu-system-x86_64 -accel tcg,thread=multi -M pc -cpu max -m 512 -smp 2 -nographic \
	-no-reboot -kernel "$kernel" -initrd initramfs.gz -name vm,debug-threads=on \
	-append "$guest_cmdline tsc=reliable" $args < /dev/null > serial.log 2>&1 &
i=0
while ! grep -q 'guest: serving' serial.log && [ $i -lt 600 ]; do
	sleep 0.1
	i=$((i + 1))
done
for i in $(seq "$N"); do
	one "$hg" record -e sched:sched_switch -A "vm@fifo:$w/vm" -o v.dat -- sh -c "$workload" && syncfig
done
report "hgtrace record -A, TCG guest"
