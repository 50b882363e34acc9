#!/usr/bin/env bash
# Two real guests with one name: two QEMU TCG guests both named "d" (-name d), their
# virtio-serial ports on FIFOs in a/d and b/d, each running `hgtrace agent --serve`.
# `record -A d@fifo:a/d` must take the vCPU threads of the QEMU whose command line names
# a/d, never the other's, and the same for b/d. Checked against what the test reads
# itself: each QEMU's "CPU N/TCG" threads from /proc/PID/task/*/comm, and the GUEST option
# of each host file as trace-cmd dump prints it; and each pair merges as trace-cmd merges
# it with every guest event inside its vCPU thread's running intervals at zero tolerance
# (tests/lib/runwindows.awk over trace-cmd's report).
# Usage: two-vms.sh HGTRACE BUILDDIR
HGTRACE=$(realpath "$1")
build=$(realpath "$2")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/record.sh"
. "$here/guest/boot.sh"
guest_prereqs "$build"
why=$(tracefs_ready) || tap_skip_all "$why"
tap_workdir

guest_kernel
[ -n "$kernel" ] || tap_skip_all "no kernel"
gbin=$build/tools/hgtrace/hgtrace-static
[ -x "$gbin" ] || tap_skip_all "no hgtrace-static in $build (meson -Dstatic_agent=true)"
guest_initramfs "$gbin" initramfs.gz << 'INIT'
echo "guest: serving"
hgtrace agent --serve --ports /dev/virtio-ports -e sched:sched_switch
echo "guest: agent exit $?"
poweroff -f
INIT

declare -A qpid
for d in a b; do
	mkdir -p $d
	"$HGTRACE" setup-guest d --cpus 2 --dir "$t/$d" > setup-$d.txt
	args=$(sed -n 's/ \\$//; /^-/p' setup-$d.txt | tr '\n' ' ')
	grep -q -- "-name d,debug-threads=on" setup-$d.txt || tap_fail "setup-guest $d: no -name d"
	# shellcheck disable=SC2086
	timeout 600 qemu-system-x86_64 -accel tcg,thread=multi -M pc -cpu max -m 512 -smp 2 \
		-nographic -no-reboot -kernel "$kernel" -initrd initramfs.gz \
		-append "$guest_cmdline tsc=reliable" \
		$args < /dev/null > serial-$d.log 2>&1 &
	qpid[$d]=$!
done
stop_guests() {
	for d in a b; do kill "${qpid[$d]}" 2> /dev/null; done
	for d in a b; do wait "${qpid[$d]}" 2> /dev/null; done
}
for d in a b; do
	if ! wait_for_line serial-$d.log 'guest: serving' 120; then
		stop_guests
		tap_skip_all "guest $d did not boot: $(tail -3 serial-$d.log | tr '\n' '|')"
	fi
done

# tcg_threads PID: "vcpu=tid," of the QEMU's CPU N/TCG threads, by vCPU number
tcg_threads() {
	for task in /proc/$1/task/*; do
		sed -n 's|^CPU \([0-9]*\)/TCG$|\1|p' "$task/comm" | while read -r v; do
			echo "$v=${task##*/},"
		done
	done | sort -n | tr -d '\n'
}
# guest_map FILE: "vcpu=pid," of the host file's GUEST option, as trace-cmd dump reads it
guest_map() {
	trace-cmd dump --options "$1" 2> /dev/null |
		awk '/\[guest cpu, host pid\]/ { m = m $1 "=" $2 "," } END { print m }'
}
for d in a b; do
	qemu=$(pgrep -P "${qpid[$d]}" qemu-system) # timeout's child
	want=$(tcg_threads "$qemu")
	"$HGTRACE" record -e sched:sched_switch -A "d@fifo:$t/$d/d" -e sched:sched_switch -o $d.dat \
		-- sleep 1 2> rec-$d.log
	rc=$?
	got=$(guest_map $d.dat)
	vp=$(echo "$want" | tr ',' '\n' | sed -n 's/.*=//p' | tr '\n' ' ')
	zt=$(trace-cmd report -t -i $d.dat -i $d-d.dat 2> /dev/null |
		awk -v host="$d.dat" -v pids="$vp" -f "$here/lib/runwindows.awk")
	"$HGTRACE" report --no-latency $d.dat $d-d.dat > $d.h 2> /dev/null
	trace-cmd report -i $d.dat -i $d-d.dat > $d.t 2> /dev/null
	if [ $rc = 0 ] && [ -n "$want" ] && [ "$got" = "$want" ] && cmp -s $d.h $d.t &&
		echo "$zt" | grep -q ' 0 outside' && [ "${zt%% inside*}" -gt 10 ]; then
		tap_ok "record -A d@fifo:$d/d took QEMU $qemu's vCPU threads ($got), not the other's; merge = trace-cmd's ($(wc -l < $d.h) lines); at zero tolerance: $zt"
	else
		tap_fail "record -A d@fifo:$d/d: exit $rc, GUEST '$got', QEMU $qemu's CPU N/TCG '$want', merge $(cmp -s $d.h $d.t && echo same || echo differs), zero tolerance: $zt; $(grep -i 'vmm\|vcpu\|guest' rec-$d.log | head -4 | tr '\n' '|')"
	fi
done
stop_guests
tap_done
