# A real guest under QEMU TCG for the guest tests (sourced): Debian's cloud kernel (resolved
# through linux-image-cloud-amd64, downloaded, never installed, cached) and an initramfs
# with busybox, hgtrace and the libraries it loads, the virtio modules and an /init whose
# last part the test gives. Needs tap.sh; skips the whole test where a piece is missing.
# Never -accel kvm on these machines.

# The guest kernel's command line. trace_event= switches on, at boot while one CPU runs,
# the tracepoints the tests use: under this QEMU's multi-threaded TCG the guest kernel now
# and then livelocks when a tracepoint's static key flips with both vCPUs running (one
# vCPU waits in smp_call_function_many_cond, the other loops through exc_int3 with
# interrupts off; RCU stalls and soft lockups follow). Seen in guest-session's sessions,
# in guest-tracecmd's trace-cmd record, and in the init's own "echo 1 > .../enable".
# The init then holds them on in an instance of its own, so that no session flips them
# (hgtrace-agent(1), BUGS).
guest_cmdline="console=ttyS0 rdinit=/init panic=-1 quiet trace_event=sched:*,timer:*,irq:*"

# guest_prereqs BUILDDIR: skip unless root, the tools and a plain (unsanitized) build.
guest_prereqs() {
	local c san
	[ "$(id -u)" -eq 0 ] || tap_skip_all "not root"
	for c in qemu-system-x86_64 busybox cpio trace-cmd apt-get dpkg-deb; do
		command -v $c > /dev/null || tap_skip_all "$c is missing (scripts/deps.sh installs it)"
	done
	san=$(meson introspect --buildoptions "$1" 2> /dev/null |
		python3 -c 'import json,sys; print(next((o["value"] for o in json.load(sys.stdin) if o["name"] == "b_sanitize"), "none"))')
	[ "$san" = none ] || tap_skip_all "sanitized build ($san): the guest test runs with the plain build"
}

# guest_kernel: extracts the kernel and modules into ./kroot, sets $kernel and $kpkg.
guest_kernel() {
	local cache=${HGT_GUEST_CACHE:-/var/cache/hgtrace-guest} deb
	mkdir -p "$cache"
	kpkg=$(apt-cache depends linux-image-cloud-amd64 2> /dev/null |
		awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
	if [ -z "$kpkg" ]; then
		apt-get update -qq > /dev/null 2>&1
		kpkg=$(apt-cache depends linux-image-cloud-amd64 2> /dev/null |
			awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
	fi
	[ -n "$kpkg" ] || tap_skip_all "apt knows no linux-image-cloud-amd64"
	deb=$(ls "$cache"/"$kpkg"_*.deb 2> /dev/null | head -1)
	if [ -z "$deb" ]; then
		(cd "$cache" && apt-get download "$kpkg" > /dev/null 2>&1) || tap_skip_all "cannot download $kpkg"
		deb=$(ls "$cache"/"$kpkg"_*.deb | head -1)
	fi
	mkdir -p kroot
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C kroot --wildcards './boot/vmlinuz-*' \
		'./lib/modules/*/kernel/drivers/virtio/*' './lib/modules/*/kernel/drivers/char/virtio_console.ko*' \
		'./lib/modules/*/kernel/drivers/block/virtio_blk.ko*' './lib/modules/*/kernel/drivers/net/virtio_net.ko*' \
		'./lib/modules/*/kernel/drivers/net/net_failover.ko*' './lib/modules/*/kernel/net/core/failover.ko*'
	kernel=$(ls kroot/boot/vmlinuz-* | head -1)
}

# guest_initramfs HGTRACE OUT < TAIL: /init mounts, loads the modules, waits for the ports
# (no udev, so no /dev/virtio-ports/NAME: the agent finds them in /sys/class/virtio-ports),
# mounts tracefs, then runs TAIL (read from stdin). The programs in $guest_bins (paths)
# go into /bin too, with their libraries.
guest_initramfs() {
	local lib b
	rm -rf ir
	mkdir -p ir/bin ir/lib/mods ir/proc ir/sys ir/dev ir/tmp ir/lib64
	cp "$(command -v busybox)" ir/bin/busybox
	cp "$1" ir/bin/hgtrace
	for b in "$1" ${guest_bins:-}; do
		[ "$b" = "$1" ] || cp "$b" ir/bin/
		for lib in $(ldd "$b" 2> /dev/null | awk '/=>/ { print $3 }'); do
			cp -L "$lib" ir/lib/
		done
	done
	# glibc loads it for pthread_exit() (trace-cmd's threads end that way)
	lib=$(ldconfig -p | awk '/libgcc_s.so.1 .*x86-64/ { print $NF; exit }')
	[ -z "${guest_bins:-}" ] || [ -z "$lib" ] || cp -L "$lib" ir/lib/
	cp -L /lib64/ld-linux-x86-64.so.2 ir/lib64/
	find kroot/lib/modules -name '*.ko*' -exec cp {} ir/lib/mods/ \;
	{
		cat << 'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci virtio_console; do
	insmod /lib/mods/$m.ko 2> /dev/null
done
# no /dev/virtio-ports links (no udev): the agent finds its ports by their sysfs names
i=0
while [ $i -lt 300 ]; do
	grep -qx trace-path-cpu1 /sys/class/virtio-ports/vport*/name 2> /dev/null &&
		grep -qx agent-ctl-path /sys/class/virtio-ports/vport*/name && break
	sleep 0.01
	i=$((i + 1))
done
mount -t tracefs nodev /sys/kernel/tracing
# the tracepoints switched on at boot ($guest_cmdline) held on by an instance of their own:
# trace-cmd record, run in a guest by guest-tracecmd, resets the top level's events
on=$(cat /sys/kernel/tracing/events/sched/sched_switch/enable /sys/kernel/tracing/events/timer/hrtimer_start/enable /sys/kernel/tracing/events/irq/irq_handler_entry/enable | tr -d '\n')
echo "guest: tracepoints on at boot: $on"
mkdir /sys/kernel/tracing/instances/hgt-hold
for t in /sys/kernel/tracing /sys/kernel/tracing/instances/hgt-hold; do
	echo 0 > $t/tracing_on
	echo 1 > $t/buffer_size_kb
	for e in sched timer irq; do echo 1 > $t/events/$e/enable; done
done
echo "guest: ports: $(cat /sys/class/virtio-ports/vport*/name | tr '\n' ' '); /dev/virtio-ports: $(ls -d /dev/virtio-ports 2> /dev/null || echo none)"
export LD_LIBRARY_PATH=/lib
INIT
		cat
	} > ir/init
	chmod +x ir/init
	(cd ir && find . | cpio -o -H newc 2> /dev/null | gzip -1) > "$2"
}

# guest_fifo_host: the start of an init whose shell plays the host of `hgtrace agent --fifos`
# (guest-unread, guest-slow-host): /run, the FIFOs in $D (its working directory), and
# wait_line LINE FILE: until LINE appears in FILE (20 s at most), 0, else 1.
guest_fifo_host() {
	cat << 'INIT'
# /run, as every system has: instances' notes (hgtrace reset reads them)
mkdir -p /run
D=/tmp/ch
mkdir -p $D
cd $D || exit 1
for f in agent-ctl-path.in agent-ctl-path.out trace-path-cpu0.out trace-path-cpu1.out; do
	mkfifo $f
done
wait_line() {
	i=0
	while ! grep -q "$1" "$2" 2> /dev/null; do
		[ $i -ge 400 ] && return 1
		sleep 0.05
		i=$((i + 1))
	done
}
INIT
}

# guest_run_init WHAT: boots initramfs.gz with no devices (its kernel panics on an oops, so a
# regression ends the guest, never this machine) to serial.log, 240 s at most; one check
# that the init said "guest: done" (WHAT names what it ran); line PATTERN then gives the
# console's "guest: PATTERN..." lines.
guest_run_init() {
	local start qrc secs
	start=$(date +%s.%N)
	timeout 240 qemu-system-x86_64 -accel tcg,thread=multi -M pc -cpu max -m 512 -smp 2 \
		-nographic -no-reboot -kernel "$kernel" -initrd initramfs.gz \
		-append "$guest_cmdline tsc=reliable oops=panic" < /dev/null > serial.log 2>&1
	qrc=$?
	secs=$(echo "$(date +%s.%N) - $start" | bc)
	if grep -aq 'guest: done' serial.log; then
		tap_ok "the guest ran $1 and powered off (qemu $qrc, $secs s)"
	else
		tap_fail "the guest ran $1 (qemu $qrc, $secs s): $(grep -a -m3 -E 'BUG|Oops|guest:' serial.log | tail -3 | tr '\n' '|')"
	fi
}
line() { grep -a "^guest: $1" serial.log | tr -d '\r'; }

# guest_zero_tol HOST GUEST [cut]: the recount of tests/lib/runwindows.awk at zero tolerance,
# from trace-cmd's merged report, with the vCPU threads trace-cmd names "CPU N/TCG" in HOST;
# with "cut" (HOST restored after a kill), only within the span every host CPU covers
# (tests/lib/cut-span.awk)
guest_zero_tol() {
	local vp from="" to=""
	vp=$(trace-cmd report "$1" 2> /dev/null | grep -o 'CPU [0-9]*/TCG-[0-9]*' | sort -u |
		sed 's/CPU \([0-9]*\)\/TCG-\([0-9]*\)/\1 \2/' | sort -n | cut -d' ' -f2 | tr '\n' ' ')
	[ "${3:-}" = cut ] && read -r from to < <(trace-cmd report -t "$1" 2> /dev/null |
		awk -f "$here/lib/cut-span.awk")
	trace-cmd report -t -i "$1" -i "$2" 2> /dev/null |
		awk -v host="$(basename "$1")" -v pids="$vp" -v from="$from" -v to="$to" \
			-f "$here/lib/runwindows.awk"
}
