#!/usr/bin/env bash
# hgtrace record onto a file system that fills up, then gets space back (issue 22, item 3):
# the recorder says at once that a CPU's pages cannot be stored and why (ENOSPC, not a
# ring-buffer overrun), goes on, and stores pages again once there is space: a marker
# written after the space returned is in the file, the file is read by trace-cmd and
# hgtrace's report equals trace-cmd's, and any events LOST are blamed on the disk, never on
# -b (the command makes more events than the rings hold while the disk is full). A 12 MB tmpfs of the test's own; a filler file leaves about 1.5 MB for the pages.
# Usage: full-disk.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/record.sh"
why=$(tracefs_ready) || tap_skip_all "$why"
tap_workdir
mkdir fs
mount -t tmpfs -o size=12m tmpfs fs 2> /dev/null || tap_skip_all "cannot mount a tmpfs"
trap 'cd /; umount "$t/fs"; _tap_cleanup' EXIT
inst=hgt_full_$$

# the head (formats, kallsyms: ~5.5 MB) fits; what is left is filled, then the filler goes
avail=$(df -k --output=avail fs | tail -1)
dd if=/dev/zero of=fs/filler bs=1K count=$((avail - 7000)) 2> /dev/null

# The command: load until the recorder said it cannot store, then space back, then load
# until it stores again, then the marker. Each wait is on the log line (60 s: a hang guard).
cat > work.sh << EOF
. "$here/lib/tap.sh"
load_until() {
	local end=\$((SECONDS + 60))
	until grep -q "\$1" rec.log || [ \$SECONDS -ge \$end ]; do
		for i in 1 2 3 4 5 6 7 8; do ls /usr/bin > /dev/null; done
	done
}
load_until 'cannot store its pages'
# more events than the 256 KB rings hold while nothing is stored: losses to blame
for i in \$(seq 1 1500); do ls /usr/bin > /dev/null; done
rm -f fs/filler
load_until 'storing its pages again'
echo hgt-after-space > $TRACEFS/instances/$inst/trace_marker
EOF
"$HGTRACE" record -B $inst -b 256 -e sched -o fs/r.dat -- bash work.sh > /dev/null 2> rec.log
rc=$?

line=$(grep -m1 'cannot store its pages' rec.log)
if [ $rc = 0 ] && echo "$line" | grep -q 'No space left on device'; then
	tap_ok "said at once: $line"
else
	tap_fail "no ENOSPC line (exit $rc): $(tr '\n' '|' < rec.log)"
fi
grep -q 'storing its pages again' rec.log &&
	tap_ok "space back: $(grep -m1 'storing its pages again' rec.log)" ||
	tap_fail "never stored again: $(tr '\n' '|' < rec.log)"
lost=$(grep -c 'events LOST' rec.log)
blamed=$(grep 'events LOST' rec.log | grep -c 'could not be stored .*No space left on device')
if [ "$lost" -gt 0 ] && [ "$lost" = "$blamed" ] && ! grep -q 'use a larger -b' rec.log; then
	tap_ok "$lost CPUs lost events, each blamed on the disk, none on -b"
else
	tap_fail "losses blamed wrong: $(grep 'events LOST' rec.log | tr '\n' '|')"
fi
trace-cmd report fs/r.dat > tc.txt 2> tc.err
if [ -s tc.txt ] && grep -q 'hgt-after-space' tc.txt; then
	tap_ok "the marker written after the space returned is in the file; trace-cmd reads it ($(wc -l < tc.txt) lines)"
else
	tap_fail "marker missing or file unreadable: $(head -3 tc.err | tr '\n' ' ')"
fi
"$HGTRACE" report --no-latency fs/r.dat > hg.txt 2> /dev/null
tap_cmp "hgtrace report = trace-cmd report" hg.txt tc.txt
[ -d "$TRACEFS/instances/$inst" ] && tap_fail "instance $inst left" || tap_ok "instance removed"

# The listener's disk fills while an agent streams to it over TCP (its pages spliced from
# the socket into the guest's file): one line naming the CPU and ENOSPC, the listener and
# the agent end (each wait a hang guard), and what was stored is kept: restored once there
# is space, trace-cmd reads the writer's markers from the first (or from where the ring
# dropped the first ones), in order, and every gap is one the kernel's ring made (a "[N EVENTS DROPPED]" line of trace-cmd's right before it: a
# slow agent, under a sanitizer on a busy machine). The writer is pinned to CPU 0, so its
# markers are one CPU's pages.
rm -rf fs/*
avail=$(df -k --output=avail fs | tail -1)
dd if=/dev/zero of=fs/filler bs=1K count=$((avail - 7000)) 2> /dev/null
inst=hgt_fullag_$$
port=$(free_port)
"$HGTRACE" listen -o fs --tcp $port --start 2> lis.log &
lpid=$!
wait_listen $port $lpid
"$HGTRACE" agent --tcp 127.0.0.1:$port -B $inst -b 4096 2> ag.log &
apid=$!
wait_for_line ag.log 'agent: recording' 60
python3 -c '
import os, sys, time
os.sched_setaffinity(0, {0})
fd = os.open(sys.argv[1], os.O_WRONLY)
end, i = time.time() + 60, 0
while time.time() < end:
    os.write(fd, b"hgt-m %08d " % i + b"p" * 980 + b"\n")
    i += 1
    if i % 500 == 0 and "cannot store" in open("lis.log").read():
        break
' $TRACEFS/instances/$inst/trace_marker
kill -INT $apid
wait_exit $apid 60 > /dev/null
arc=$?
kill -INT $lpid
wait_exit $lpid 60 > /dev/null
lrc=$?
line=$(grep -m1 "cannot store cpu 0's pages" lis.log)
if echo "$line" | grep -q 'No space left on device' && [ $arc != 124 ] && [ $lrc != 124 ]; then
	tap_ok "listener, disk full: said in one line: ${line#hgtrace listen: }; both ended (agent $arc, listener $lrc)"
else
	tap_fail "listener, disk full: agent $arc, listener $lrc: $(tr '\n' '|' < lis.log)"
fi
rm -f fs/filler
"$HGTRACE" restore fs/trace-net-1.dat 2> restore.log
r=$(trace-cmd report fs/trace-net-1.dat 2> /dev/null | awk '
	/EVENTS DROPPED\]$/ { drop = 1; d++ }
	match($0, /hgt-m [0-9]+/) {
		v = substr($0, RSTART + 6, RLENGTH - 6) + 0
		if (!n) { f = v; fd = drop } else if (v != p + 1 && !drop) g++
		n++; p = v; drop = 0
	}
	END { printf "%d %d %d %d %d %d", n, f, p, g, d, fd }')
read -r n first last gaps drops fdrop <<< "$r"
# from marker 0, or from where the ring dropped the first ones (the agent slower than the
# writer from the start: a sanitizer on a busy machine)
if [ "${n:-0}" -gt 100 ] && { [ "$first" = 0 ] || [ "$fdrop" = 1 ]; } && [ "$gaps" = 0 ]; then
	tap_ok "listener, disk full: what it stored is kept: $n markers from $first to $last${fdrop:+$([ "$fdrop" = 1 ] && echo " (the kernel dropped the first $first)")}, no gap but the kernel's $drops drops ($(cat restore.log))"
else
	tap_fail "listener, disk full: restored markers: ${r:-none} (count first last unexplained-gaps drops dropped-before-the-first); $(cat restore.log)"
fi
tap_done
