#!/usr/bin/env bash
# Pages spliced into a FIFO stay the ring buffer's until they are read: an instance removed
# before then makes the read crash the kernel (ring_buffer_free_read_page(), seen on this
# machine's 6.18 kernel). Inside a real guest under QEMU TCG, so that a regression oopses the
# guest, never the machine running the suite (its kernel panics on the oops: oops=panic),
# a shell plays the host of `hgtrace agent --fifos` and reads the data FIFOs only after the
# agent says it stopped:
#  1. stopped by the host ("0"): the agent waits with its instance for the read; once the
#     FIFOs are read it removes the instance and exits, and every CPU's bytes (header and
#     pages) are the count its END message gives;
#  2. stopped by SIGINT with nothing read: the agent keeps its instance and says so;
#     `hgtrace reset` leaves it while its pages wait in the FIFO the shell holds, and
#     removes it once they are read.
# Checked from the guest's console; no guest kernel BUG or oops in either.
# Usage: unread.sh HGTRACE BUILDDIR
HGTRACE=$(realpath "$1")
build=$(realpath "$2")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/guest/boot.sh"
guest_prereqs "$build"
tap_workdir

guest_kernel
[ -n "$kernel" ] || tap_skip_all "no kernel"
gbin=$build/tools/hgtrace/hgtrace-static
[ -x "$gbin" ] || tap_skip_all "no hgtrace-static in $build (meson -Dstatic_agent=true)"
guest_initramfs "$gbin" initramfs.gz < <(guest_fifo_host; cat << 'INIT'
# start_agent N: the agent on the FIFOs, opened in its order (each open waits for the
# other end); the control stream read all along, the data FIFOs held open, unread
start_agent() {
	hgtrace agent --fifos $D -e sched:sched_switch -C x86-tsc 2> agent$1.log &
	apid=$!
	exec 3> agent-ctl-path.in 4< agent-ctl-path.out 5< trace-path-cpu0.out 6< trace-path-cpu1.out
	cat <&4 > ctl$1.bin &
	cpid=$!
	wait_line "waiting for the host's start" agent$1.log
	echo 1 >&3
	wait_line "hgtrace agent: recording" agent$1.log
	i=0
	while [ $i -lt 10 ]; do sleep 0.02; i=$((i + 1)); done
}
# the data FIFOs read to their end (the agent's close)
read_data() {
	cat <&5 > cpu0-$1.bin &
	r0=$!
	cat <&6 > cpu1-$1.bin &
	r1=$!
}
instance() { ls /sys/kernel/tracing/instances | grep -c "^hgtrace-$apid\$"; }

# 1: the host stops it, then reads
start_agent 1
echo 0 >&3
wait_line "hgtrace agent: stopped" agent1.log && echo "guest: 1: stopped said"
# an agent that removed its instance at once would exit now: 3 s for that
i=0
while [ $i -lt 60 ] && kill -0 $apid 2> /dev/null; do sleep 0.05; i=$((i + 1)); done
kill -0 $apid 2> /dev/null && echo "guest: 1: before the read: agent running, instance $(instance)"
read_data 1
wait $apid
echo "guest: 1: agent exit $?, instance after $(instance)"
wait $r0 $r1 $cpid
exec 3>&- 4<&- 5<&- 6<&-
echo "guest: 1: read $(wc -c < cpu0-1.bin) $(wc -c < cpu1-1.bin); END says $(tail -c 16 ctl1.bin | od -An -tu8 | tr -s ' ')"

# 2: SIGINT, nobody reads: kept; reset leaves it while the pages wait, then removes it
start_agent 2
kill -INT $apid
wait $apid
echo "guest: 2: agent exit $?, instance $(instance)"
grep -q "instance hgtrace-$apid kept" agent2.log && echo "guest: 2: kept said"
hgtrace reset > reset1.log 2>&1
echo "guest: 2: after reset, pages unread: instance $(instance): $(cat reset1.log)"
read_data 2
wait $r0 $r1 $cpid
exec 3>&- 4<&- 5<&- 6<&-
hgtrace reset > reset2.log 2>&1
echo "guest: 2: after reset, pages read: instance $(instance): $(cat reset2.log)"
echo "guest: 2: read $(wc -c < cpu0-2.bin) $(wc -c < cpu1-2.bin)"
echo "guest: done"
poweroff -f
INIT
)

guest_run_init "both cases"
if grep -aqE 'BUG:|Oops|general protection|Kernel panic' serial.log; then
	tap_fail "no kernel BUG or oops in the guest: $(grep -a -m2 -E 'BUG:|Oops|RIP:' serial.log | tr '\n' '|')"
else
	tap_ok "no kernel BUG or oops in the guest ($(grep -ac . serial.log) console lines read)"
fi
[ -n "$(line '1: stopped said')" ] && [ -n "$(line '1: before the read: agent running, instance 1')" ] &&
	tap_ok "stopped by the host, pages unread: the agent waits with its instance ($(line '1: before the read'))" ||
	tap_fail "the agent waits with its instance while its pages are unread: $(line 1:)"
[ -n "$(line '1: agent exit 0, instance after 0')" ] &&
	tap_ok "once they are read the agent removes its instance and exits 0" ||
	tap_fail "instance removed after the read: $(line '1: agent exit')"
# each CPU's FIFO: the 24-byte header, then the pages END counted
read -r g0 g1 e0 e1 < <(line '1: read' | sed 's/.*read \([0-9]*\) \([0-9]*\); END says *\([0-9]*\) \([0-9]*\).*/\1 \2 \3 \4/')
if [ -n "${e1:-}" ] && [ "$g0" = $((e0 + 24)) ] && [ "$g1" = $((e1 + 24)) ] && [ $((e0 + e1)) -gt 0 ]; then
	tap_ok "every byte of both CPUs came: $g0 and $g1 bytes, END's $e0 and $e1 plus the headers"
else
	tap_fail "bytes read against END's counts: $(line '1: read')"
fi
[ -n "$(line '2: agent exit 0, instance 1')" ] && [ -n "$(line '2: kept said')" ] &&
	tap_ok "stopped by SIGINT with nothing read: the instance is kept, and the agent says so" ||
	tap_fail "SIGINT, nothing read: instance kept and said: $(line '2: agent exit') $(line '2: kept')"
[ -n "$(line '2: after reset, pages unread: instance 1:.*kept: [0-9]* bytes of its pages wait unread')" ] &&
	tap_ok "hgtrace reset leaves it while the pages wait, and says why" ||
	tap_fail "reset with pages unread: $(line '2: after reset, pages unread')"
[ -n "$(line '2: after reset, pages read: instance 0:.*removed tracefs instance')" ] &&
	tap_ok "hgtrace reset removes it once they are read ($(line '2: read'))" ||
	tap_fail "reset after the read: $(line '2: after reset, pages read')"
tap_done
