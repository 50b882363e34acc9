#!/usr/bin/env bash
# Host and guest in one command, with a real guest: Debian's cloud kernel under QEMU TCG
# runs `hgtrace agent --serve` on virtio-serial ports backed by FIFOs from
# `hgtrace setup-guest`; `hgtrace record -A g@fifo:DIR` records the host and the guest
# together, twice on the same agent. Checked: both files exist and trace-cmd reads them;
# the merged report orders them as trace-cmd does; the sync bound is printed; every guest
# event lies in a running interval of its vCPU thread ("CPU N/TCG") widened by that bound,
# and a guest shifted by 10 ms is caught; the channel's sync refined by the vCPU windows
# puts every guest event inside them at zero tolerance (recounted from trace-cmd's report)
# with a bound of at most 50 us; the offset inferred from the trace alone agrees
# with the agent channel's within both bounds, and sync-check agrees; hgtrace why's delays
# and splits equal those derived from trace-cmd's report, also with the vCPU threads moved
# between host CPUs (sched_waking and sched_wakeup naming different CPUs); the agent's share of guest CPU time, from the
# guest's own sched_switch events, stays under 5 %.
# Usage: session.sh HGTRACE BUILDDIR
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
# The guest gets the static build alone: no library beside it in the initramfs.
gbin=$build/tools/hgtrace/hgtrace-static
[ -x "$gbin" ] || tap_skip_all "no hgtrace-static in $build (meson -Dstatic_agent=true)"
guest_initramfs "$gbin" initramfs.gz << 'INIT'
if grep -q hgt_mode=now /proc/cmdline; then
	# guest-driven, as the README: record while a command runs, no -C (the agent takes a
	# clock the host can sync); the host records its side (listen --record-host)
	hgtrace agent --now -e sched:sched_switch -- sleep 2
else
	echo "guest: serving"
	hgtrace agent --serve --ports /dev/virtio-ports -e sched:sched_switch
fi
echo "guest: agent exit $?"
poweroff -f
INIT

libs=$(find ir/lib -name '*.so*' | wc -l)
[ "$libs" = 0 ] && ! ldd "$gbin" > /dev/null 2>&1 &&
	tap_ok "the guest runs hgtrace-static ($(stat -c %s "$gbin") bytes) with no shared library in its initramfs" ||
	tap_fail "hgtrace-static: $libs libraries copied"
"$HGTRACE" setup-guest g --cpus 2 --dir "$t" > setup.txt
grep -q -- '-name g,debug-threads=on' setup.txt && tap_ok "setup-guest prints -name g,debug-threads=on" ||
	tap_fail "setup-guest prints -name g,debug-threads=on"
args=$(sed -n 's/ \\$//; /^-/p' setup.txt | tr '\n' ' ')
# boot [KERNEL ARGS]: the guest in the background ($qpid), its console in serial.log
boot() {
	# shellcheck disable=SC2086
	timeout 300 qemu-system-x86_64 -accel tcg,thread=multi -M pc -cpu max -m 512 -smp 2 \
		-nographic -no-reboot -kernel "$kernel" -initrd initramfs.gz \
		-append "$guest_cmdline tsc=reliable $*" \
		$args < /dev/null > serial.log 2>&1 &
	qpid=$!
}
boot
i=0
while ! grep -q 'guest: serving' serial.log && [ $i -lt 600 ]; do
	sleep 0.1
	i=$((i + 1))
done
grep -q 'guest: serving' serial.log || tap_skip_all "the guest did not boot: $(tail -3 serial.log | tr '\n' '|')"

# session N OUT SECONDS [GUEST-EVENTS [HOST-EVENTS]]: one record -A session; checks its files
session() {
	local n=$1 out=$2 secs=$3 base=${2%.dat} gev=${4:--e sched:sched_switch} hev=${5:-}
	local start end
	start=$(date +%s.%N)
	# shellcheck disable=SC2086
	"$HGTRACE" record -e sched:sched_switch -e sched:sched_wakeup $hev -A "g@fifo:$t/g" $gev -o "$out" \
		-- sleep "$secs" 2> "rec$n.log"
	rc=$?
	end=$(date +%s.%N)
	if [ $rc = 0 ] && [ -s "$out" ] && [ -s "$base-g.dat" ]; then
		tap_ok "session $n: record -A wrote $out and $base-g.dat ($(echo "$end - $start" | bc) s for a ${secs} s command)"
	else
		tap_fail "session $n: record -A exit $rc: $(tr '\n' '|' < "rec$n.log") guest: $(tail -5 serial.log | tr '\n' '|')"
		return 1
	fi
	hn=$(trace-cmd report "$out" 2> /dev/null | grep -c sched_switch)
	gn=$(trace-cmd report "$base-g.dat" 2> /dev/null | grep -c sched_switch)
	[ "$hn" -gt 0 ] && [ "$gn" -gt 0 ] &&
		tap_ok "session $n: trace-cmd reads both files: $hn host, $gn guest sched_switch events" ||
		tap_fail "session $n: trace-cmd reads both ($hn host, $gn guest events)"
}

# 1. A session of 2 s.
session 1 host.dat 2 || { kill $qpid; tap_done; }
bound=$(sed -n 's/.*sync: agent channel.* bound +-\([0-9]*\).*/\1/p' rec1.log)
rtt=$(sed -n 's/.*best round trip \([0-9]*\).*/\1/p' rec1.log)
[ -n "$bound" ] && [ "$bound" -gt 0 ] &&
	tap_ok "the sync bound is printed: +-$bound cycles (best round trip $rtt)" ||
	tap_fail "no sync bound: $(tr '\n' '|' < rec1.log)"
vt=$("$HGTRACE" dump host.dat | grep -c 'vcpu [0-9]* -> host pid [1-9]')
"$HGTRACE" dump host.dat | grep -A4 'GUEST' > guest-opt.txt
grep -q '"g"' guest-opt.txt && [ "$vt" = 2 ] &&
	tap_ok "host.dat names guest g and its 2 vCPU threads (CPU N/TCG)" ||
	tap_fail "host GUEST option: $(tr '\n' '|' < guest-opt.txt)"

# The merged report: ordered as trace-cmd orders it (latency column aside).
"$HGTRACE" report --no-latency host.dat host-g.dat > h.txt 2> sync.txt
trace-cmd report -i host.dat -i host-g.dat > tc.txt 2> /dev/null
lines=$(wc -l < h.txt)
[ "$lines" -gt 100 ] && cmp -s h.txt tc.txt &&
	tap_ok "hgtrace report host.dat host-g.dat = trace-cmd report -i ... -i ... ($lines lines)" ||
	{ tap_fail "merged report differs from trace-cmd's ($lines lines)"; diff h.txt tc.txt | head -5 | sed 's/^/# /'; }

# The same session exported (hgtrace export): every event trace-cmd prints, once, at its time.
if "$HGTRACE" export -o session.json host.dat host-g.dat 2> export.err; then
	trace-cmd report -t -i host.dat -i host-g.dat > tct.txt 2> /dev/null
	if python3 "$here/sink/check-export.py" session.json tct.txt > export.out 2>&1; then
		tap_ok "export of the real session: $(head -1 export.out | sed 's/^ok //')"
	else
		tap_fail "export of the real session: $(tr '\n' ' ' < export.out)"
	fi
else
	tap_fail "export of the real session: $(cat export.err)"
fi

# Containment: every guest event within its vCPU thread's running intervals +- bound.
line=$(grep 'sync check' sync.txt)
outside=$(echo "$line" | sed -n 's/.* events: \([0-9]*\) outside.*/\1/p')
inside=$(echo "$line" | sed -n 's/.*, \([0-9]*\) inside.*/\1/p')
if [ "$outside" = 0 ] && [ "${inside:-0}" -gt 100 ]; then
	tap_ok "containment: $inside guest events inside their vCPU thread's running intervals (+-$bound), 0 outside"
else
	tap_fail "containment: $line"
fi
# The channel's samples refined by the vCPU windows: every guest event inside its thread's
# running intervals with no tolerance at all, and a stored bound of at most 50 us.
mhz=$(sed -n 's/^cpu MHz[[:space:]]*: //p' /proc/cpuinfo | head -1)
refined=$(sed -n 's/.*sync: refined by the vCPU windows.* both +-\([0-9]*\).*/\1/p' rec1.log)
zt=$(guest_zero_tol host.dat host-g.dat)
zin=${zt%% inside*}
if [ -n "$refined" ] && awk -v b="$refined" -v m="$mhz" 'BEGIN { exit !(b <= 50 * m) }' &&
	echo "$zt" | grep -q ' 0 outside' && [ "${zin:-0}" -gt 100 ]; then
	tap_ok "refined sync: bound +-$refined cycles ($(awk -v b="$refined" -v m="$mhz" 'BEGIN { printf "%.1f", b / m }') us, channel +-$bound); at zero tolerance: $zt"
else
	tap_fail "refined sync: bound '$refined' (<= 50 us at $mhz MHz?), zero tolerance: $zt; $(grep 'sync:' rec1.log | tr '\n' '|')"
fi
# The session's own summary ran the same check on its files: 0 outside, and as many inside
# as the test's recount from trace-cmd's report (runwindows.awk, zero tolerance) finds,
# give or take the events that recount leaves unchecked (the summary's bound may place some
# of them: never more).
sum=$(grep -o 'containment: [0-9]* guest events inside[^,]*, [0-9]* outside' rec1.log)
sin=$(echo "$sum" | sed -n 's/containment: \([0-9]*\).*/\1/p')
zun=$(echo "$zt" | sed -n 's/.* \([0-9]*\) unchecked.*/\1/p')
[ -n "$sum" ] && [ -n "$zun" ] && [ "${sin:-0}" -ge "${zin:-0}" ] && [ "${sin:-0}" -le $((zin + zun)) ] &&
	echo "$sum" | grep -q ', 0 outside' &&
	tap_ok "the session summary's containment check agrees with trace-cmd's report: $sum (recount: $zt)" ||
	tap_fail "session summary containment: '$sum', the recount from trace-cmd's report: $zt"
# ... and the check has teeth: 10 ms off (26 M cycles) is caught.
"$HGTRACE" report -i host.dat -i host-g.dat --ts-offset 26000000 > /dev/null 2> off.txt
off_out=$(sed -n 's/.* events: \([0-9]*\) outside.*/\1/p' off.txt)
[ "${off_out:-0}" -gt 10 ] && tap_ok "a guest 10 ms off: $off_out events outside" ||
	tap_fail "a guest 10 ms off is not caught: $(cat off.txt)"
per=$(sed -n 's/.*guest CPU [0-9]*: \([0-9]*\) outside/\1/p' off.txt | awk '{ s += $1 } END { print s + 0 }')
[ "$per" = "$off_out" ] && tap_ok "... named per vCPU: $(grep -o 'guest CPU [0-9]*: [0-9]* outside' off.txt | tr '\n' ';')" ||
	tap_fail "per-vCPU outside counts add up to $per, not $off_out: $(cat off.txt)"

# The agent's share of the guest's CPU time, from the guest's own sched_switch events:
# per CPU, the time each task ran (between switches), over the span of the session.
"$HGTRACE" report --no-latency -t host-g.dat 2> /dev/null |
	sed -nE 's/.*\[([0-9]+)\] *([0-9]+)\.?([0-9]*): sched_switch: *([^:]+):.*/\1 \2\3 \4/p' | awk '
	{
		if ($1 in last) { d = $2 - last[$1]; all += d; if ($3 == "hgtrace") agent += d }
		last[$1] = $2
	}
	END { if (all > 0) printf "%.3f %.0f\n", 100 * agent / all, all; else print "none" }' > share.txt
share=$(cut -d" " -f1 share.txt)
if [ "$share" != none ] && awk -v s="$share" 'BEGIN { exit !(s < 5) }'; then
	tap_ok "the agent took $share % of the guest's CPU time (its sched_switch events; summary: $(grep -o '[0-9.]*% of one guest CPU' rec1.log))"
else
	tap_fail "the agent's share of guest CPU time: $(cat share.txt)"
fi

# 2. A second session on the same agent, the guest recording -e sched (as the README).
session 2 host2.dat 1 "-e sched"
"$HGTRACE" report host2.dat host2-g.dat > /dev/null 2> sync2.txt
line=$(grep 'sync check' sync2.txt)
outside=$(echo "$line" | sed -n 's/.* events: \([0-9]*\) outside.*/\1/p')
[ "$outside" = 0 ] && tap_ok "session 2: 0 guest events outside their vCPU thread's intervals" ||
	tap_fail "session 2: $line"
# 2b. The offset inferred from the trace alone (the vCPU threads' sched_switch running
# intervals, a TCG guest having no kvm events) agrees with the agent channel's samples
# within the two bounds, per vCPU and sample; sync-check finds the pair consistent. The
# guest records sched, timer and irq events here: with the ~60 sched_switch events per
# vCPU of session 1 alone, a TCG thread's long running intervals can fit an offset 2 s
# away as well, and attach refuses the pair as ambiguous.
session 3 host3.dat 2 "-e sched -e timer -e irq" || { kill $qpid; tap_done; }
bound=$(sed -n 's/.*sync: agent channel.* bound +-\([0-9]*\).*/\1/p' rec3.log)
cp host3.dat inf-host.dat
cp host3-g.dat inf-g.dat
"$HGTRACE" attach --infer inf-host.dat inf-g.dat > inf.txt 2>&1
"$HGTRACE" dump host3-g.dat | sed -n '/TIME_SHIFT/,/fraction/p' |
	awk '/cpu [0-9]*:/ { c = $2 + 0 } /offset/ { print c, $4 }' > agent-off.txt
agree=0 disagree=0
while read -r cpu est ib; do
	while read -r c o; do
		[ "$c" = "$cpu" ] || continue
		d=$((est - o))
		if [ ${d#-} -le $((ib + bound)) ]; then agree=$((agree + 1)); else disagree=$((disagree + 1)); fi
		echo "# guest CPU $cpu: inferred $est +- $ib, agent sample $o +- $bound: $d apart"
	done < agent-off.txt
done < <(sed -n 's/^guest CPU \([0-9]*\): offset \([0-9-]*\) +- \([0-9]*\) .*/\1 \2 \3/p' inf.txt)
ibs=$(sed -n 's/^guest CPU \([0-9]*\): offset [0-9-]* +- \([0-9]*\) .*/\2/p' inf.txt | tr '\n' ' ')
if [ "$agree" -ge 2 ] && [ "$disagree" = 0 ]; then
	tap_ok "the offset inferred from sched_switch (bounds $ibs cycles) agrees with all $agree agent samples (+-$bound) within the two bounds"
else
	tap_fail "inferred vs agent: $agree agree, $disagree not: $(tr '\n' '|' < inf.txt)"
fi
"$HGTRACE" sync-check host3.dat host3-g.dat > sc.txt 2>&1
rc=$?
[ $rc = 0 ] && [ "$(grep -c 'events fit offsets' sc.txt)" = 2 ] &&
	tap_ok "sync-check host3.dat host3-g.dat: consistent, the feasible offsets of 2 vCPUs hold the agent's samples" ||
	tap_fail "sync-check (exit $rc): $(tr '\n' '|' < sc.txt)"
# why on the real session: every guest delay (wakeups, timer expiries) and its split by
# what the vCPU threads (CPU N/TCG: running them runs the guest) did, as check-why.py
# derives them on its own from trace-cmd's report of the same files. The host records its
# own sched_wakeup too: those are not the guest's delays, and must not be counted.
vpids=$("$HGTRACE" dump host3.dat | sed -n 's/.*vcpu [0-9]* -> host pid \([0-9]*\).*/\1/p' | tr '\n' ' ')
if "$HGTRACE" why --json --threshold 0.001 host3.dat host3-g.dat > why3.json 2> why3.err; then
	# x86-tsc: the session stored TSC2NSEC (this kernel gives none: measured against
	# CLOCK_MONOTONIC_RAW), so why works in ns as trace-cmd prints them, with no rate of its own
	hz=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["tsc_hz"])' why3.json)
	read -r mult shift < <(trace-cmd dump --options host3.dat 2> /dev/null |
		sed -n 's/^\([0-9]*\) \([0-9]*\) [0-9-]* \[multiplier.*/\1 \2/p' | tail -1)
	# against the kernel's own figure (/proc/cpuinfo: a VM's TSC rate), within 20 ppm
	mhz=$(sed -n 's/^cpu MHz[[:space:]]*: //p' /proc/cpuinfo | head -1)
	if [ "$hz" = 0 ] && [ -n "$mult" ] && awk -v mu="$mult" -v sh="$shift" -v m="$mhz" \
		'BEGIN { h = 2 ^ sh * 1e9 / mu; d = h / (m * 1e6) - 1; exit !(d < 2e-5 && d > -2e-5) }'; then
		tap_ok "the session's TSC2NSEC (mult $mult shift $shift, trace-cmd dump): $(awk -v mu="$mult" -v sh="$shift" 'BEGIN { printf "%.0f", 2 ^ sh * 1e9 / mu }') Hz, cpuinfo $mhz MHz; why needs no rate of its own"
	else
		tap_fail "TSC2NSEC '$mult $shift' (cpuinfo $mhz MHz), why's own rate $hz: $(grep 'times in' rec3.log)"
	fi
	trace-cmd report -t -i host3.dat -i host3-g.dat > tc3.txt 2> /dev/null
	if python3 "$here/sink/check-why.py" why3.json tc3.txt host3.dat host3-g.dat "$vpids" \
		> why3.out 2>&1; then
		while read -r l; do tap_ok "why on the real session: ${l#ok }"; done < why3.out
	else
		tap_fail "why on the real session: $(tr '\n' ' ' < why3.out)"
	fi
else
	tap_fail "why on the real session: $(cat why3.err)"
fi
# The README's -e sched session (session 2, no timer events in the guest): why finds its
# delays in ns, with no --ts2secs, and view has both vCPU tracks on a ns axis.
if "$HGTRACE" why --json host2.dat host2-g.dat > why1.json 2> why1.err &&
	[ "$(python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print(r["tsc_hz"], len(r["delays"]) > 0)' why1.json)" = "0 True" ]; then
	tap_ok "why on the -e sched session: $(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["delays"]))' why1.json) delays in ns, no rate asked for"
else
	tap_fail "why on the -e sched session: $(cat why1.err) $(head -c 300 why1.json)"
fi
if command -v chromium > /dev/null && "$HGTRACE" view -o s1.html host2.dat host2-g.dat 2> view1.err; then
	timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
		--user-data-dir="$t/chrome1" --dump-dom "file://$t/s1.html" > s1.dom 2> /dev/null
	vt1=$(grep -o 'vCPU [0-9] (thread [0-9]*)' s1.dom | sort -u | wc -l)
	grep -q '"ns":true' s1.html && [ "$vt1" = 2 ] &&
		tap_ok "view of the -e sched session: ns axis, 2 vCPU tracks" ||
		tap_fail "view of the -e sched session: ns $(grep -o '"ns":[a-z]*' s1.html), $vt1 vCPU tracks: $(cat view1.err)"
else
	tap_skip "view of the -e sched session" "chromium missing, or view failed: $(cat view1.err 2> /dev/null)"
fi
# hgtrace view of the same session in Debian's chromium: the page's own state holds every
# event trace-cmd prints (per file and CPU) and, zoomed to the middle of the session, shows
# exactly trace-cmd's events there; the vCPU tracks are those of CPU N/TCG. Screenshot kept
# in BUILDDIR/artifacts.
if command -v chromium > /dev/null; then
	if "$HGTRACE" view -o s3.html host3.dat host3-g.dat 2> view3.err; then
		read -r a b < <(sed -nE 's/^.*\] *([0-9]+)\.?([0-9]*): .*/\1\2/p' tc3.txt | sort -n |
			awk '{ v[NR] = $1 } END { print v[int(NR * 0.5)], v[int(NR * 0.52)] }')
		timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
			--user-data-dir="$t/chrome" --dump-dom "file://$t/s3.html#zoom=$a,$b" > s3.dom 2> /dev/null
		vt=$(grep -o 'vCPU [0-9] (thread [0-9]*)' s3.dom | sort -u | wc -l)
		if python3 "$here/sink/check-view.py" s3.dom tc3.txt host3.dat host3-g.dat --zoom "$a,$b" \
			> view3.out 2>&1 && [ "$vt" = 2 ]; then
			while read -r l; do tap_ok "view of the real session: ${l#ok }"; done < view3.out
			tap_ok "view of the real session: 2 vCPU tracks (CPU N/TCG threads $vpids)"
		else
			tap_fail "view of the real session ($vt vCPU tracks): $(tr '\n' ' ' < view3.out)"
		fi
		mkdir -p "$build/artifacts"
		timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
			--user-data-dir="$t/chrome" --window-size=1600,1000 \
			--screenshot="$build/artifacts/view-guest-session.png" "file://$t/s3.html" > /dev/null 2>&1
	else
		tap_fail "view of the real session: $(cat view3.err)"
	fi
else
	tap_skip "view of the real session" "chromium is not installed"
fi

# 2b''. vCPU threads woken onto another host CPU than they last ran on (taskset moves each
# every 20 ms, the two on different CPUs, as a host's scheduler moves them): the kernel's
# sched_waking names the CPU a thread last ran on, its sched_wakeup the one it was put on,
# and the wait is there. why's delays and splits must equal check-why.py's, which reads
# both events so from trace-cmd's report; the host's moves are counted from the same lines.
qemu=$(pgrep -P $qpid qemu-system)
tids=$(grep -l '^CPU [0-9]*/TCG' /proc/$qemu/task/*/comm 2> /dev/null | cut -d/ -f5 | tr '\n' ' ')
(
	c=0
	while :; do
		for tid in $tids; do
			taskset -pc $c "$tid" > /dev/null 2>&1
			c=$((1 - c))
		done
		c=$((1 - c))
		sleep 0.02
	done
) &
mover=$!
session 4 host4.dat 2 "-e sched -e timer -e irq" "-e sched:sched_waking"
s4=$?
kill $mover
wait $mover 2> /dev/null
for tid in $tids; do taskset -pc 0-$(($(nproc) - 1)) "$tid" > /dev/null 2>&1; done
if [ $s4 = 0 ]; then
	vpids4=$("$HGTRACE" dump host4.dat | sed -n 's/.*vcpu [0-9]* -> host pid \([0-9]*\).*/\1/p' | tr '\n' ' ')
	trace-cmd report -t -i host4.dat -i host4-g.dat > tc4.txt 2> /dev/null
	moved=$(python3 - tc4.txt "$vpids4" << 'EOF'
import re, sys
vcpu, last, moved = {int(p) for p in sys.argv[2].split()}, {}, 0
for line in open(sys.argv[1], errors="replace"):
    if not line.lstrip().startswith("host4.dat:"):
        continue
    m = re.search(r" sched_waking: +comm=.* pid=(\d+) prio=-?\d+ target_cpu=(\d+)", line)
    if m and int(m[1]) in vcpu:
        last[int(m[1])] = int(m[2])
    m = re.search(r" sched_wakeup: +.*:(\d+) \[-?\d+\] CPU:(\d+)", line)
    if m and int(m[1]) in last:
        moved += last.pop(int(m[1])) != int(m[2])
print(moved)
EOF
	)
	if [ "${moved:-0}" -lt 10 ]; then
		tap_fail "vCPU threads moved between CPUs: woken $moved times onto another CPU than their last (want >= 10; threads '$tids', vCPUs '$vpids4')"
	elif "$HGTRACE" why --json --threshold 0.001 host4.dat host4-g.dat > why4.json 2> why4.err &&
		python3 "$here/sink/check-why.py" why4.json tc4.txt host4.dat host4-g.dat "$vpids4" > why4.out 2>&1; then
		while read -r l; do tap_ok "why, vCPU threads woken $moved times onto another CPU: ${l#ok }"; done < why4.out
	else
		tap_fail "why, vCPU threads woken $moved times onto another CPU: $(cat why4.err) $(tr '\n' ' ' < why4.out)"
	fi
fi

# 2b'. A session in the kernel-only clock "local" (-C local): host and guest each read it
# through the trace (a raw marker's ring-buffer stamp), the channel syncs it, the end
# refines it; checked as session 1 at zero tolerance from trace-cmd's report, and the merge
# is trace-cmd's.
"$HGTRACE" record -C local -e sched:sched_switch -A "g@fifo:$t/g" -e sched:sched_switch -o loc.dat \
	-- sleep 2 2> recl.log
lrc=$?
"$HGTRACE" report --no-latency loc.dat loc-g.dat > loc.h 2> /dev/null
trace-cmd report -i loc.dat -i loc-g.dat > loc.t 2> /dev/null
lb=$(trace-cmd report --stat loc-g.dat 2> /dev/null | sed -n 's/.*hgtrace sync: .*bound=\([0-9]*\).*/\1/p' | tail -1)
lc=$(trace-cmd report --stat loc.dat 2> /dev/null | sed -n 's/.*trace clock: \[*\([a-z0-9-]*\)\]*.*/\1/p' | head -1)
zt=$(guest_zero_tol loc.dat loc-g.dat)
zin=${zt%% inside*}
if [ $lrc = 0 ] && [ -n "$lb" ] && [ "$lb" -le 50000 ] && cmp -s loc.h loc.t &&
	grep -q 'local' <(trace-cmd dump --options loc-g.dat 2> /dev/null | grep -A1 TRACECLOCK) &&
	echo "$zt" | grep -q ' 0 outside' && [ "${zin:-0}" -gt 20 ]; then
	tap_ok "-C local: synced through the trace and refined, bound +-$lb ns; merge = trace-cmd's ($(wc -l < loc.h) lines); at zero tolerance: $zt"
else
	tap_fail "-C local: exit $lrc, bound '$lb' ns (<= 50 us?), clock '$lc', merge $(cmp -s loc.h loc.t && echo same || echo differs), zero tolerance: $zt; record: $(grep -E 'sync|refined|WARNING|containment|span' recl.log | tr '\n' '|') guest: $(tail -5 serial.log | tr -d '\r' | tr '\n' '|')"
fi

# 2c. A session killed (SIGKILL) once both sides have pages on disk, then restored: the
# second restore refines the pair as the session's end would have. Checked against what
# the test computes itself: at zero tolerance (trace-cmd's report, recounted) no guest event
# outside its vCPU thread's windows, within the span every host CPU covers (the kill cuts
# each CPU's pages at a different time: a vCPU thread may have run unseen on a CPU whose
# pages ended; once in 8 kills here, and once in CI, hgtrace's refinement failed there:
# DISAGREE); the restored offsets (trace-cmd dump) within both
# bounds of session 1's refined ones (TCG's guest TSC is the host's plus a constant, so the
# two sessions share one truth); a bound of at most 50 us.
# pages DIR: bytes of ring-buffer pages a recording directory holds
pages() { cat "$1"/cpu* 2> /dev/null | wc -c; }
# least_cpu DIR: bytes of pages of the CPU holding the fewest (its files cpuN, cpuN.K), 0
# before there are two (each vCPU's windows need events of their own to be narrowed)
least_cpu() {
	ls -l "$1" 2> /dev/null | awk '$NF ~ /^cpu[0-9]+(\.[0-9]+)?$/ {
		c = $NF; sub(/\..*/, "", c); b[c] += $5 }
		END { n = 0; for (c in b) { n++; if (min == "" || b[c] < min) min = b[c] }
		      print (n >= 2 ? min : 0) }'
}
"$HGTRACE" record -e sched:sched_switch -e sched:sched_wakeup -A "g@fifo:$t/g" -e sched:sched_switch \
	-o kill.dat -- sleep 120 2> reck.log &
rp=$!
end=$((SECONDS + 100))
until [ -e kill-g.dat.recording/options ] && [ "$(least_cpu kill-g.dat.recording)" -ge 16384 ] &&
	[ "$(pages kill.dat.recording)" -ge 65536 ] || [ $SECONDS -ge $end ]; do sleep 0.1; done
kill -KILL $rp
wait $rp 2> /dev/null
"$HGTRACE" restore kill.dat 2> rest1.log && "$HGTRACE" restore kill-g.dat 2> rest2.log
# stored offsets of FILE's last TIME_SHIFT, one per guest CPU, as trace-cmd dump reads them
last_offsets() {
	trace-cmd dump --options "$1" 2> /dev/null | awk '
		/Option TimeShift/ { n = 0 } /\[offset \*/ { o[n++] = $1 }
		END { for (i = 0; i < n; i++) print o[i] }'
}
kb=$(trace-cmd report --stat kill-g.dat 2> /dev/null | sed -n 's/.*hgtrace sync: refined by the trace.*bound=\([0-9]*\).*/\1/p' | tail -1)
b1=$(trace-cmd report --stat host-g.dat 2> /dev/null | sed -n 's/.*hgtrace sync: refined by the trace.*bound=\([0-9]*\).*/\1/p' | tail -1)
zt=$(guest_zero_tol kill.dat kill-g.dat cut)
zin=${zt%% inside*}
far=$(paste -d' ' <(last_offsets kill-g.dat) <(last_offsets host-g.dat) |
	awk -v a="${kb:-0}" -v b="${b1:-0}" '{ d = $1 - $2; if (d < 0) d = -d; if (d > a + b) bad++; n++ }
		END { print n + 0, bad + 0 }')
if grep -q 'sync refined by the vCPU windows' rest2.log && [ -n "$kb" ] && [ -n "$b1" ] &&
	awk -v b="$kb" -v m="$mhz" 'BEGIN { exit !(b <= 50 * m) }' && [ "$far" = "2 0" ] &&
	echo "$zt" | grep -q ' 0 outside' && [ "${zin:-0}" -gt 20 ]; then
	tap_ok "SIGKILL + restore: the second restore refined the pair (+-$kb cycles; session 1 +-$b1): both vCPUs' offsets within both bounds of session 1's; at zero tolerance: $zt"
else
	tap_fail "SIGKILL + restore: bound '$kb' (session 1 '$b1'), offsets compared/apart '$far', zero tolerance: $zt; restore: $(tr '\n' '|' < rest2.log) $(tr '\n' '|' < rest1.log) record: $(tail -6 reck.log | tr '\n' '|') guest: $(tail -5 serial.log | tr -d '\r' | tr '\n' '|')"
fi

kill $qpid 2> /dev/null
wait $qpid 2> /dev/null

# 3. Guest-driven: the guest's agent records while its command runs; the host's listener
# records its own side for the same span and syncs the guest (listen --record-host).
mkdir gd
"$HGTRACE" listen -o gd --fifo "g:$t/g" --record-host -e sched:sched_switch 2> gd/listen.log &
lpid=$!
# waitfor FILE: until the listener says it wrote FILE (50 s at most)
waitfor() {
	local i=0
	while ! grep -q "wrote $1\$" gd/listen.log && [ $i -lt 500 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}
# waitq WHAT: the guest powers off after its session (50 s at most): a guest or listener
# that hangs is one failure line with what both said, within the test's time
waitq() {
	local i=0
	while kill -0 $qpid 2> /dev/null && [ $i -lt 500 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if kill -0 $qpid 2> /dev/null; then
		kill $qpid
		tap_fail "guest-driven $1: the guest did not power off in 50 s: listener: $(tail -3 gd/listen.log | tr '\n' '|') guest: $(tail -5 serial.log | tr -d '\r' | tr '\n' '|')"
	fi
	wait $qpid 2> /dev/null
}
boot hgt_mode=now
waitfor gd/trace-g.dat
waitq "session 1"
# the listener serves the guest's next session too: a second boot, numbered files
boot hgt_mode=now
waitfor gd/trace-g-2.dat
waitq "session 2"
kill -INT $lpid
wait $lpid
lrc=$?
[ -s gd/g-host-2.dat ] && [ -s gd/trace-g-2.dat ] &&
	[ "$(trace-cmd report gd/trace-g-2.dat 2> /dev/null | grep -c sched_switch)" -gt 0 ] &&
	tap_ok "guest-driven: one listener served a second session (g-host-2.dat, trace-g-2.dat)" ||
	tap_fail "guest-driven second session: $(tr '\n' '|' < gd/listen.log)"
hn=$(trace-cmd report gd/g-host.dat 2> /dev/null | grep -c sched_switch)
gn=$(trace-cmd report gd/trace-g.dat 2> /dev/null | grep -c sched_switch)
[ $lrc = 0 ] && [ "$hn" -gt 0 ] && [ "$gn" -gt 0 ] &&
	tap_ok "guest-driven: listen --record-host wrote g-host.dat and trace-g.dat ($hn and $gn events)" ||
	tap_fail "guest-driven: listen exit $lrc, $hn/$gn events: $(tr '\n' '|' < gd/listen.log) guest: $(tail -4 serial.log | tr '\n' '|')"
"$HGTRACE" report --no-latency gd/g-host.dat gd/trace-g.dat > gd/h.txt 2> gd/sync.txt
trace-cmd report -i gd/g-host.dat -i gd/trace-g.dat > gd/t.txt 2> /dev/null
tap_cmp "guest-driven: merged report = trace-cmd's ($(wc -l < gd/h.txt) lines)" gd/h.txt gd/t.txt
line=$(grep 'sync check' gd/sync.txt)
outside=$(echo "$line" | sed -n 's/.* events: \([0-9]*\) outside.*/\1/p')
inside=$(echo "$line" | sed -n 's/.*, \([0-9]*\) inside.*/\1/p')
[ "$outside" = 0 ] && [ "${inside:-0}" -gt 50 ] &&
	tap_ok "guest-driven: $inside guest events inside their vCPU thread's running intervals, 0 outside" ||
	tap_fail "guest-driven: $line"
zt=$(guest_zero_tol gd/g-host.dat gd/trace-g.dat)
zin=${zt%% inside*}
grep -q 'guest g: sync refined by the vCPU windows' gd/listen.log && echo "$zt" | grep -q ' 0 outside' &&
	[ "${zin:-0}" -gt 50 ] &&
	tap_ok "guest-driven: refined ($(grep -o 'sync refined by.*' gd/listen.log | head -1)); at zero tolerance: $zt" ||
	tap_fail "guest-driven refinement: zero tolerance: $zt; $(grep 'sync' gd/listen.log | tr '\n' '|')"
kill $qpid 2> /dev/null
wait $qpid 2> /dev/null
tap_done
