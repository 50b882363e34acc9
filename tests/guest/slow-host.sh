#!/usr/bin/env bash
# A host that reads the agent's FIFOs slower than the guest traces gets every page, in
# order, the last ones of the stop included. libtracefs' tracefs_cpu_write() left what a
# full FIFO did not take in a pipe of its own, unaccounted, and the stop wrote the partial
# page past it: pages lost with nothing overwritten (seen with bench/agent.sh's writer,
# 6 of 200,000 markers missing just before the last two). Inside a real guest under QEMU
# TCG, as guest-unread: the agent's pages wait in the FIFOs for the host.
# In the guest a shell plays the host of `hgtrace agent --fifos`: it reads each data FIFO
# a page at a time with a pause between reads, while the guest writes numbered 1000-byte
# markers into the agent's instance (a ring large enough that nothing is overwritten),
# then stops the agent with "0" while pages still wait, and reads to the end. Checked:
# the numbers that came are 0..N-1, each once, in order per CPU; the bytes are END's.
# Usage: slow-host.sh HGTRACE BUILDDIR
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
N=600
# the init's text, with N in it
guest_initramfs "$gbin" initramfs.gz < <(guest_fifo_host; sed "s/@N@/$N/" << 'INIT'
N=@N@
# a slow host: reads of at most 8 pages with a pause between, until the agent closes
# (a FIFO with room for some of the pages the agent has, not all, now and then)
slow_read() {
	while :; do
		n=$(dd bs=32768 count=1 2> /dev/null | tee -a "$1" | wc -c)
		[ "$n" -gt 0 ] || break
		sleep 0.05
	done
}
# a ring of 4 MB a CPU: the N markers (about 1.4 KB of ring each) never overwrite
hgtrace agent --fifos $D -b 4096 2> agent.log &
apid=$!
exec 3> agent-ctl-path.in 4< agent-ctl-path.out 5< trace-path-cpu0.out 6< trace-path-cpu1.out
cat <&4 > ctl.bin &
cpid=$!
wait_line "waiting for the host's start" agent.log
echo 1 >&3
wait_line "hgtrace agent: recording" agent.log || echo "guest: agent never recorded: $(cat agent.log)"
slow_read cpu0.bin <&5 &
r0=$!
slow_read cpu1.bin <&6 &
r1=$!
pad=$(printf '%0990d' 0)
exec 7> /sys/kernel/tracing/instances/hgtrace-$apid/trace_marker
i=0
while [ $i -lt $N ]; do
	n=$((1000000 + i)) # six digits, no fork: a writer faster than the host
	echo "m${n#1}: $pad" >&7
	i=$((i + 1))
done
exec 7>&-
# stopped while the host is still behind: what it has read by then
echo "guest: written $N, read at the stop $(cat cpu0.bin cpu1.bin | wc -c)"
echo 0 >&3
wait $apid
echo "guest: agent exit $?"
wait $r0 $r1 $cpid
exec 3>&- 4<&- 5<&- 6<&-
for c in 0 1; do
	grep -ao 'm[0-9]\{6\}:' cpu$c.bin | tr -d 'm:' > seq$c.txt
	echo "guest: cpu$c: $(wc -c < cpu$c.bin) bytes, $(wc -l < seq$c.txt) markers, in order: $(sort -n seq$c.txt | cmp -s - seq$c.txt && echo yes || echo no)"
done
# of 0..N-1: how many came, how many did not (and the first), how many came twice (the
# zeros in front taken off: busybox's awk reads 000400 as octal)
echo "guest: all: $(cat seq0.txt seq1.txt | awk -v n=$N '{ v = $1; sub(/^0+/, "", v); c[v + 0]++; k++ }
	END { for (i = 0; i < n; i++) { if (!(i in c)) { if (!m++) f = i } else if (c[i] > 1) d++ }
	      printf "%d markers, missing %d, twice %d, first missing %s", k, m, d, m ? f : "none" }')"
echo "guest: END says $(tail -c 16 ctl.bin | od -An -tu8 | tr -s ' ')"
grep -E 'not delivered|stopped:' agent.log | sed 's/^/guest: log: /'
echo "guest: done"
poweroff -f
INIT
)

guest_run_init "the slow host"
# the case is only one if the host was behind at the stop: it had read less than it got
w=$(line 'written')
r=$(echo "$w" | sed -n 's/.*at the stop \([0-9]*\).*/\1/p')
got=$(($(line 'cpu0:' | sed 's/.*: \([0-9]*\) bytes.*/\1/') + $(line 'cpu1:' | sed 's/.*: \([0-9]*\) bytes.*/\1/')))
[ "${r:-$got}" -lt $((got - 4096 * 16)) ] &&
	tap_ok "the host was behind when the agent stopped: it had read $r of its $got bytes" ||
	tap_fail "the host was behind when the agent stopped: $w, $got bytes in the end"
[ -n "$(line 'agent exit 0')" ] && tap_ok "the agent exited 0" || tap_fail "agent exit: $(line 'agent exit')"
a=$(line 'all:')
[ -n "$(echo "$a" | grep "all: $N markers, missing 0, twice 0")" ] &&
	tap_ok "every marker came once: $N of $N" || tap_fail "every marker came once: $a; $(line 'cpu')"
o=$(line 'cpu[01]:')
[ "$(echo "$o" | grep -c 'in order: yes')" = 2 ] && tap_ok "in order on both CPUs ($(echo "$o" | tr '\n' ';'))" ||
	tap_fail "in order per CPU: $o"
read -r g0 g1 < <(line 'cpu[01]:' | sed 's/.*: \([0-9]*\) bytes.*/\1/' | xargs)
read -r e0 e1 < <(line 'END says' | sed 's/.*says *//')
if [ -n "${e1:-}" ] && [ "$g0" = $((e0 + 24)) ] && [ "$g1" = $((e1 + 24)) ]; then
	tap_ok "the bytes read are END's: $g0 and $g1, END's $e0 and $e1 plus the headers"
else
	tap_fail "bytes read against END's counts: $g0 $g1 against $(line 'END says')"
fi
[ -z "$(line 'log: .*not delivered')" ] && tap_ok "no page left undelivered said" ||
	tap_fail "pages undelivered: $(line 'log: .*not delivered')"
tap_done
