#!/usr/bin/env bash
# trace-cmd's agent protocol both ways inside one real guest (QEMU TCG), on its loopback,
# against Debian's trace-cmd 3.1.6 (its binary and libraries in the guest's initramfs),
# where it runs as anywhere (no -d needed):
#   A. trace-cmd record -A -> trace-cmd agent (the reference; Z: the same without -C);
#   B. trace-cmd record -A -> hgtrace agent --trace-cmd;
#   C. hgtrace record -A --peer trace-cmd -> trace-cmd agent.
# The guest writes its files as a tar onto a virtio disk the host reads back. One kernel
# records itself twice in each, in one clock (global, or local for C): the true offset is
# 0. trace-cmd's host is given -C: without it (Z) trace-cmd 3.1.6 stamps its ptp probes in
# another clock than the one it records in, as printed at the end. Checked:
# 1. every command in the guest exits 0, the agents too;
# 2. B and C: the merged report of the pair, trace-cmd = hgtrace --no-latency;
# 3. B and C: the TIME_SHIFT as trace-cmd reads it back, the same sample count on each CPU
#    (a start and an end round at least; trace-cmd 3.1.6 cannot read its own option when
#    the counts differ, which an agent that lets a round fail causes), every stored offset
#    within the session's bound of 0 (B: half the slowest round trip our agent picked; C:
#    the bound our host states);
# 4. B and C: the events both files hold (tests/lib/pair-events.awk; at least half of the
#    guest's), each corrected guest time within that bound of its host time;
# 5. A (and Z), for comparison: offsets and the same events' distances, printed.
# Usage: tracecmd.sh HGTRACE BUILDDIR
HGTRACE=$(realpath "$1")
build=$(realpath "$2")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/guest/boot.sh"
. "$here/lib/record.sh"
guest_prereqs "$build"
tap_workdir

guest_kernel
guest_bins=$(command -v trace-cmd)
guest_initramfs "$HGTRACE" initramfs.gz << 'INIT'
insmod /lib/mods/virtio_blk.ko 2> /dev/null
ip link set lo up
cd /tmp
listening() {
	i=0
	while [ $i -lt 1000 ]; do
		netstat -ltn 2> /dev/null | grep -q ":$1 " && return 0
		sleep 0.02
		i=$((i + 1))
	done
	return 1
}
trace-cmd agent -N 127.0.0.1 -p 8823 > /tmp/a-agent.log 2>&1 &
A=$!
listening 8823
trace-cmd record -C global -e sched:sched_switch -o /tmp/a.dat -A 127.0.0.1:8823 -e sched:sched_switch -- sleep 2 > /tmp/a.log 2>&1
echo "guest: A trace-cmd record exit $?"
trace-cmd record -e sched:sched_switch -o /tmp/z.dat -A 127.0.0.1:8823 -e sched:sched_switch -- sleep 2 > /tmp/z.log 2>&1
echo "guest: Z trace-cmd record exit $?"
kill $A
hgtrace agent --trace-cmd tcp:127.0.0.1:8824 2> /tmp/b-agent.log &
H=$!
listening 8824
trace-cmd record -C global -e sched:sched_switch -o /tmp/b.dat -A 127.0.0.1:8824 -e sched:sched_switch -- sleep 2 > /tmp/b.log 2>&1
echo "guest: B trace-cmd record exit $?"
kill -INT $H
wait $H
echo "guest: B hgtrace agent exit $?"
trace-cmd agent -N 127.0.0.1 -p 8825 > /tmp/c-agent.log 2>&1 &
A=$!
listening 8825
hgtrace record -C local -e sched:sched_switch -o /tmp/c.dat -A g@tcp:127.0.0.1:8825 --peer trace-cmd -- sleep 2 2> /tmp/c.log
echo "guest: C hgtrace record exit $?"
kill $A
tar -cf /dev/vda -C /tmp . && echo "guest: tar written"
sync
poweroff -f
INIT

truncate -s 256M out.img
timeout 600 qemu-system-x86_64 -accel tcg -M pc -cpu max -m 1024 -smp 2 -nographic -no-reboot \
	-kernel "$kernel" -initrd initramfs.gz -append "$guest_cmdline" \
	-drive file=out.img,format=raw,if=virtio < /dev/null > serial.log 2>&1
qrc=$?
mkdir res && tar -xf out.img -C res 2> /dev/null
cd res || exit 1
exits=$(grep -c 'guest: .* exit 0' ../serial.log)
if [ $qrc = 0 ] && [ "$exits" -eq 5 ] && grep -q 'guest: tar written' ../serial.log; then
	tap_ok "in the guest: trace-cmd -> trace-cmd, trace-cmd -> hgtrace agent, hgtrace -> trace-cmd agent: every one exits 0"
else
	tap_fail "guest (qemu $qrc): $(grep 'guest:' ../serial.log | tr '\n' '|') $(tail -5 ../serial.log | tr '\n' '|')"
fi

# offsets FILE: the TIME_SHIFT's offsets, space-separated
offsets() { trace-cmd dump --options -i "$1" 2>&1 | awk '/offset \* scaling/ { printf "%s ", $1 }'; }
# pair HOST GUEST BOUND: "pairs far guests worst skew" (pair-events.awk)
pair() {
	trace-cmd report --raw-ts -i "$1" 2> /dev/null | tail -n +2 > hraw.txt
	trace-cmd report --raw-ts -i "$2" 2> /dev/null | tail -n +2 > graw.txt
	trace-cmd report -t -i "$2" 2> /dev/null | tail -n +2 > gcor.txt
	awk -v b="$3" -f "$here/lib/pair-events.awk" hraw.txt graw.txt gcor.txt
}
# check NAME HOST GUEST BOUND LOG: LOG's sync lines end the message of a failure (with
# TS_ANY_COUNTS=1, the guest's TIME_SHIFT may hold a different count on each CPU)
check() {
	local name=$1 host=$2 guest=$3 bound=$4 m far ng worst skew ctx
	ctx=$(grep -h 'ptp' "$5" | tail -2 | tr '\n' '|')
	trace-cmd report -i "$host" -i "$guest" > "$name-tc.txt" 2> /dev/null
	"$HGTRACE" report --no-latency -i "$host" -i "$guest" > "$name-hg.txt" 2> /dev/null
	tap_cmp "$name: merged report, hgtrace --no-latency = trace-cmd ($(wc -l < "$name-tc.txt") lines)" \
		"$name-hg.txt" "$name-tc.txt"
	# every guest CPU: a round at the start and one at the end
	time_shift_check "$name" "$guest" 2 "$bound" 2 "$ctx"
	read -r m far ng worst skew < <(pair "$host" "$guest" "$bound")
	# a TCG guest records few events: at least half of the guest's, and 100, paired
	if [ "$m" -ge 100 ] && [ $((2 * m)) -ge "$ng" ] && [ "$far" -eq 0 ]; then
		tap_ok "$name: $m of $ng guest events also in the host's file, corrected within $worst ns of their host times (bound $bound; raw skew up to $skew)"
	else
		tap_fail "$name: events in both: $m of $ng, $far beyond $bound (worst $worst) / $ctx"
	fi
}
bb=$(sed -n 's/.*round trips [0-9]*\.\.\([0-9]*\) ns.*/\1/p' b-agent.log | tail -1)
check "B (trace-cmd host, hgtrace agent)" b.dat b-127.0.0.1.dat $(((${bb:-0} + 1) / 2)) b-agent.log
cb=$(sed -n 's/.*sync: trace-cmd ptp, clock local: .*bound +-\([0-9]*\) .*/\1/p' c.log | head -1)
TS_ANY_COUNTS=1 check "C (hgtrace host, trace-cmd agent)" c.dat c-g.dat "${cb:-0}" c.log
read -r m far ng worst skew < <(pair a.dat a-127.0.0.1.dat 0)
echo "# A (trace-cmd both sides, -C global), for comparison: offsets $(offsets a-127.0.0.1.dat)(no bound); $m of its $ng guest events also in the host's file, corrected within $worst ns of their host times"
# trace-cmd 3.1.6 without -C in this guest (its TSC unstable): it records in clock global
# but stamps its ptp probes in its time-sync instance's default clock (local), so the
# offsets it stores are the two clocks' distance (~50 ms seen), not the guest's
read -r m far ng worst skew < <(pair z.dat z-127.0.0.1.dat 0)
echo "# Z (trace-cmd both sides, no -C: clock $(trace-cmd dump --options -i z.dat 2>&1 | grep -o '\[[a-z0-9-]*\]' | head -1)), for the record: offsets $(offsets z-127.0.0.1.dat); $m events in both, corrected within $worst ns of their host times"
tap_done
