#!/usr/bin/env bash
# A real guest kernel: Debian's cloud kernel boots under QEMU TCG (never -accel kvm here)
# with an initramfs holding our agent and virtio-serial ports backed by host FIFOs made by
# `hgtrace setup-guest`; `hgtrace listen` starts and stops the guest's recording and writes
# trace-g.dat; trace-cmd reads it and prints what hgtrace prints.
# Usage: qemu.sh HGTRACE BUILDDIR
HGTRACE=$(realpath "$1")
build=$(realpath "$2")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
[ "$(id -u)" -eq 0 ] || tap_skip_all "not root"
for c in qemu-system-x86_64 busybox cpio trace-cmd apt-get dpkg-deb; do
	command -v $c > /dev/null || tap_skip_all "$c is missing (scripts/deps.sh installs it)"
done
san=$(meson introspect --buildoptions "$build" 2> /dev/null |
	python3 -c 'import json,sys; print(next((o["value"] for o in json.load(sys.stdin) if o["name"] == "b_sanitize"), "none"))')
[ "$san" = none ] || tap_skip_all "sanitized build ($san): the guest test runs with the plain build"
t=$(mktemp -d)
cleanup() {
	jobs -p | xargs -r kill 2> /dev/null
	rm -rf "$t"
}
trap cleanup EXIT
cd "$t" || exit 1

# The kernel: resolved through linux-image-cloud-amd64, downloaded (never installed), cached.
cache=${HGT_GUEST_CACHE:-/var/cache/hgtrace-guest}
mkdir -p "$cache"
kpkg=$(apt-cache depends linux-image-cloud-amd64 2> /dev/null |
	awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
[ -n "$kpkg" ] || { apt-get update -qq > /dev/null 2>&1; kpkg=$(apt-cache depends linux-image-cloud-amd64 2> /dev/null |
	awk '/Depends: linux-image-[0-9]/ { print $2; exit }'); }
[ -n "$kpkg" ] || tap_skip_all "apt knows no linux-image-cloud-amd64"
deb=$(ls "$cache"/"$kpkg"_*.deb 2> /dev/null | head -1)
if [ -z "$deb" ]; then
	(cd "$cache" && apt-get download "$kpkg" > /dev/null 2>&1) || tap_skip_all "cannot download $kpkg"
	deb=$(ls "$cache"/"$kpkg"_*.deb | head -1)
fi
mkdir kroot
dpkg-deb --fsys-tarfile "$deb" | tar -x -C kroot --wildcards './boot/vmlinuz-*' \
	'./lib/modules/*/kernel/drivers/virtio/*' './lib/modules/*/kernel/drivers/char/virtio_console.ko*'
kernel=$(ls kroot/boot/vmlinuz-* | head -1)
[ -n "$kernel" ] && tap_ok "kernel $kpkg extracted" || tap_fail "kernel extracted"

# The initramfs: busybox, hgtrace with the libraries it loads, the modules, /init.
mkdir -p ir/bin ir/lib/mods ir/proc ir/sys ir/dev ir/tmp
cp "$(command -v busybox)" ir/bin/busybox
cp "$HGTRACE" ir/bin/hgtrace
mkdir -p ir/lib64
for lib in $(ldd "$HGTRACE" | awk '/=>/ { print $3 }'); do
	cp -L "$lib" ir/lib/
done
cp -L /lib64/ld-linux-x86-64.so.2 ir/lib64/
find kroot/lib/modules -name '*.ko*' -exec cp {} ir/lib/mods/ \;
cat > ir/init << 'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci virtio_console; do
	insmod /lib/mods/$m.ko 2> /dev/null
done
mkdir -p /dev/virtio-ports
i=0
while [ $i -lt 300 ]; do
	for p in /sys/class/virtio-ports/vport*; do
		[ -e "$p/name" ] && ln -sf /dev/$(basename $p) /dev/virtio-ports/$(cat $p/name) 2> /dev/null
	done
	[ -e /dev/virtio-ports/agent-ctl-path ] && [ -e /dev/virtio-ports/trace-path-cpu1 ] && break
	sleep 0.01
	i=$((i + 1))
done
mount -t tracefs nodev /sys/kernel/tracing
echo "guest: ports: $(ls /dev/virtio-ports | tr '\n' ' ')"
LD_LIBRARY_PATH=/lib \
	hgtrace agent --ports /dev/virtio-ports -e sched -C x86-tsc
echo "guest: agent exit $?"
poweroff -f
INIT
chmod +x ir/init
(cd ir && find . | cpio -o -H newc 2> /dev/null | gzip -1) > initramfs.gz

# The host: FIFOs, listener, QEMU.
"$HGTRACE" setup-guest g --cpus 2 --dir "$t" > setup.txt
args=$(sed -n 's/ \\$//; /^-/p' setup.txt | tr '\n' ' ')
"$HGTRACE" listen -o "$t" --fifo "g:$t/g" --start --stop-after 1500 2> listen.log &
lpid=$!
start=$(date +%s.%N)
# shellcheck disable=SC2086
timeout 120 qemu-system-x86_64 -accel tcg -M pc -cpu max -m 512 -smp 2 -nographic -no-reboot \
	-kernel "$kernel" -initrd initramfs.gz -append "console=ttyS0 rdinit=/init panic=-1 quiet" \
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
