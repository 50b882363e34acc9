#!/usr/bin/env bash
# A real guest kernel: Debian's cloud kernel boots under QEMU TCG (never -accel kvm here)
# with an initramfs holding our agent and virtio-serial ports backed by host FIFOs made by
# `hgtrace setup-guest`; `hgtrace listen` starts and stops the guest's recording and writes
# trace-g.dat; trace-cmd reads it and prints what hgtrace prints. The guest has no udev:
# the agent finds its ports in /sys/class/virtio-ports.
# Usage: qemu.sh HGTRACE BUILDDIR
HGTRACE=$(realpath "$1")
build=$(realpath "$2")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/guest/boot.sh"
guest_prereqs "$build"
tap_workdir

guest_kernel
[ -n "$kernel" ] && tap_ok "kernel $kpkg extracted" || tap_fail "kernel extracted"
guest_initramfs "$HGTRACE" initramfs.gz << 'INIT'
hgtrace agent --ports /dev/virtio-ports -e sched -C x86-tsc
echo "guest: agent exit $?"
poweroff -f
INIT

# The host: FIFOs, listener, QEMU.
"$HGTRACE" setup-guest g --cpus 2 --dir "$t" > setup.txt
args=$(sed -n 's/ \\$//; /^-/p' setup.txt | tr '\n' ' ')
"$HGTRACE" listen -o "$t" --fifo "g:$t/g" --start --stop-after 1500 2> listen.log &
lpid=$!
start=$(date +%s.%N)
# shellcheck disable=SC2086
timeout 120 qemu-system-x86_64 -accel tcg -M pc -cpu max -m 512 -smp 2 -nographic -no-reboot \
	-kernel "$kernel" -initrd initramfs.gz -append "$guest_cmdline" \
	$args < /dev/null > serial.log 2>&1
qrc=$?
end=$(date +%s.%N)
timeout 20 tail --pid=$lpid -f /dev/null
kill $lpid 2> /dev/null
wait $lpid 2> /dev/null
if [ $qrc = 0 ] && grep -q 'guest: agent exit 0' serial.log; then
	tap_ok "guest booted, ran the agent and powered off ($(echo "$end - $start" | bc) s)"
else
	tap_fail "guest run (qemu $qrc): $(tail -5 serial.log | tr '\n' '|') listen: $(cat listen.log | tr '\n' '|')"
fi
# the guest has no udev: its agent found the ports by their names in sysfs
if grep -q 'guest: ports: .*agent-ctl-path.*/dev/virtio-ports: none' serial.log && [ -s trace-g.dat ]; then
	tap_ok "no /dev/virtio-ports in the guest: the agent found its ports in /sys/class/virtio-ports"
else
	tap_fail "ports without udev: $(grep 'guest: ports' serial.log)"
fi
if [ -s trace-g.dat ] && trace-cmd report trace-g.dat > t.txt 2> /dev/null; then
	n=$(grep -c 'sched_switch' t.txt)
	[ "$n" -gt 0 ] && tap_ok "trace-cmd reads the guest's file: $n sched_switch events" ||
		tap_fail "the guest's file has no sched_switch events"
else
	tap_fail "trace-g.dat readable by trace-cmd ($(cat listen.log | tr '\n' '|'))"
fi
"$HGTRACE" report --no-latency trace-g.dat > h.txt 2>&1
tap_cmp "hgtrace report = trace-cmd report on the guest's file" h.txt t.txt
if "$HGTRACE" dump trace-g.dat | grep -q 'x86-tsc'; then
	tap_ok "the guest's clock (x86-tsc) is in the file"
else
	tap_fail "the guest's clock (x86-tsc) is in the file"
fi
tap_done
