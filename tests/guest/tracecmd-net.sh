#!/usr/bin/env bash
# Across the guest boundary: hgtrace record on this machine drives `trace-cmd agent` (Debian's
# 3.1.6, in the initramfs) inside a QEMU TCG guest over TCP. The guest's network is a tap
# device inside a network namespace this test creates (10.77.0.1 host, 10.77.0.2 guest);
# QEMU and the recorder run in it, never on the machine's own network. QEMU names its vCPU
# threads (-name g,debug-threads=on): their running intervals on the host are the truth the
# guest's events must fall in. Checked:
# 1. the session: exit 0, both files, the summary's trace-cmd ptp line with its bound;
# 2. the host's file names guest g and its 2 vCPU threads;
# 3. the merged report: trace-cmd = hgtrace --no-latency;
# 4. the session's containment check: 0 guest events outside their vCPU threads' running
#    intervals (widened by the bound), over 100 inside;
# 5. recounted from trace-cmd's merged report at zero tolerance (tests/lib/runwindows.awk)
#    after the session refined the sync by those windows: 0 outside, over 100 inside, at
#    most a tenth as many unchecked, the refined bound at most 50 us;
# 6. and the check has teeth: the guest 10 ms off is caught.
# Usage: tracecmd-net.sh HGTRACE BUILDDIR
HGTRACE=$(realpath "$1")
build=$(realpath "$2")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/record.sh"
. "$here/guest/boot.sh"
guest_prereqs "$build"
why=$(tracefs_ready) || tap_skip_all "$why"
command -v ip > /dev/null || tap_skip_all "ip (iproute2) is missing"
[ -c /dev/net/tun ] || tap_skip_all "no /dev/net/tun"
tap_workdir
ns=hgt-tc-$$
ip netns add "$ns" || tap_skip_all "cannot create a network namespace"
qpid=
cleanup() {
	[ -n "$qpid" ] && kill "$qpid" 2> /dev/null && wait "$qpid" 2> /dev/null
	ip netns del "$ns" 2> /dev/null
	_tap_cleanup
}
trap cleanup EXIT
ip -n "$ns" link set lo up
ip -n "$ns" tuntap add dev tap0 mode tap || tap_skip_all "cannot create a tap device"
ip -n "$ns" addr add 10.77.0.1/24 dev tap0
ip -n "$ns" link set tap0 up

guest_kernel
guest_bins=$(command -v trace-cmd)
guest_initramfs "$HGTRACE" initramfs.gz << 'INIT'
for m in failover net_failover virtio_net; do insmod /lib/mods/$m.ko 2> /dev/null; done
ip link set lo up
ip addr add 10.77.0.2/24 dev eth0
ip link set eth0 up
echo "guest: serving"
trace-cmd agent -N 10.77.0.1 -p 823
echo "guest: agent exit $?"
poweroff -f
INIT
ip netns exec "$ns" timeout 600 qemu-system-x86_64 -accel tcg,thread=multi -M pc -cpu max \
	-m 1024 -smp 2 -nographic -no-reboot -name g,debug-threads=on \
	-kernel "$kernel" -initrd initramfs.gz \
	-append "$guest_cmdline tsc=reliable" \
	-netdev tap,id=n0,ifname=tap0,script=no,downscript=no -device virtio-net-pci,netdev=n0 \
	< /dev/null > serial.log 2>&1 &
qpid=$!
# the agent listens once the guest has booted: wait for its port
up=0
for i in $(seq 600); do
	if grep -q 'guest: serving' serial.log &&
		ip netns exec "$ns" timeout 2 bash -c 'exec 3<> /dev/tcp/10.77.0.2/823' 2> /dev/null; then
		up=1
		break
	fi
	kill -0 $qpid 2> /dev/null || break
	sleep 0.2
done
[ $up = 1 ] || tap_skip_all "the guest's agent never listened: $(tail -3 serial.log | tr '\n' '|')"

# 1. the session
ip netns exec "$ns" timeout 300 "$HGTRACE" record -e sched:sched_switch -o "$t/h.dat" \
	-A g@tcp:10.77.0.2:823 --peer trace-cmd -e sched:sched_switch -- sleep 3 2> rec.log
rst=$?
line=$(grep -m1 'sync: trace-cmd ptp, clock' rec.log | sed 's/^ *//')
bound=$(sed -n 's/.*bound +-\([0-9]*\) .*/\1/p' <<< "$line")
if [ $rst -eq 0 ] && [ -s h.dat ] && [ -s h-g.dat ] && [ -n "$bound" ]; then
	tap_ok "record -A g@tcp:10.77.0.2:823 --peer trace-cmd across the boundary: exit 0; $line"
else
	tap_fail "session: exit $rst: $(tr '\n' '|' < rec.log) guest: $(tail -5 serial.log | tr '\n' '|')"
fi

# 2. the host's file names the guest and its vCPU threads
vt=$("$HGTRACE" dump h.dat | grep -c 'vcpu [0-9]* -> host pid [1-9]')
"$HGTRACE" dump h.dat | grep -A4 'GUEST' > guest-opt.txt
grep -q '"g"' guest-opt.txt && [ "$vt" = 2 ] &&
	tap_ok "h.dat names guest g and its 2 vCPU threads (CPU N/TCG)" ||
	tap_fail "host GUEST option: $(tr '\n' '|' < guest-opt.txt)"

# 3. merged report
trace-cmd report -i h.dat -i h-g.dat > tc.txt 2> /dev/null
"$HGTRACE" report --no-latency -i h.dat -i h-g.dat > hg.txt 2> sync.txt
tap_cmp "merged report: hgtrace --no-latency = trace-cmd ($(wc -l < tc.txt) lines)" hg.txt tc.txt

# 4. the session's containment check
sum=$(grep -o 'containment: [0-9]* guest events inside[^,]*, [0-9]* outside' rec.log)
sin=$(sed -n 's/containment: \([0-9]*\).*/\1/p' <<< "$sum")
if grep -q ', 0 outside' <<< "$sum" && [ "${sin:-0}" -gt 100 ]; then
	tap_ok "the session's check: $sum"
else
	tap_fail "the session's containment: '$sum': $(grep 'sync' rec.log | tr '\n' '|')"
fi

# 5. the independent recount at zero tolerance (after the refinement by the windows)
zt=$(guest_zero_tol h.dat h-g.dat)
zin=${zt%% inside*}
zun=$(sed -n 's/.* \([0-9]*\) unchecked.*/\1/p' <<< "$zt")
refined=$(grep -m1 'sync: refined by the vCPU windows' rec.log | sed 's/^ *//')
both=$(sed -n 's/.* both +-\([0-9]*\).*/\1/p' <<< "$refined")
mhz=$(sed -n 's/^cpu MHz[[:space:]]*: //p' /proc/cpuinfo | head -1)
# the refined bound at most 50 us (as guest-session asks), and at most a tenth of the
# guest's events left unchecked
if [ -n "$both" ] && awk -v b="$both" -v m="$mhz" 'BEGIN { exit !(b <= 50 * m) }' &&
	grep -q ' 0 outside' <<< "$zt" && [ "${zin:-0}" -gt 100 ] && [ $((10 * ${zun:-0})) -le "${zin:-0}" ]; then
	tap_ok "recount from trace-cmd's report at zero tolerance: $zt; $refined"
else
	tap_fail "zero tolerance: $zt; refined: '$refined'; $(grep 'sync' rec.log | tr '\n' '|')"
fi

# 6. teeth: 10 ms off (in the report's units: x86-tsc cycles, or ns)
shift=$(grep -q 'clock x86-tsc' <<< "$line" && awk -v m="$mhz" 'BEGIN { printf "%d", 10000 * m }' || echo 10000000)
"$HGTRACE" report -i h.dat -i h-g.dat --ts-offset "$shift" > /dev/null 2> off.txt
off_out=$(sed -n 's/.* events: \([0-9]*\) outside.*/\1/p' off.txt)
[ "${off_out:-0}" -gt 10 ] && tap_ok "the guest 10 ms off: $off_out events outside" ||
	tap_fail "a guest 10 ms off is not caught: $(cat off.txt)"
tap_done
