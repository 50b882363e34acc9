#!/usr/bin/env bash
# The offset nobody recorded, from the command line: attach infers it (kvm windows, and
# sched_switch windows of threads named "CPU N/TCG"), refuses what does not fit with one
# line and both files unchanged, writes a trace id into a guest that has none, gives a
# host without TSC2NSEC a guest without one (both in cycles, also in trace-cmd), reads a
# v6 file with an empty clock string as trace-cmd does, and a merged report says how each
# guest's time was mapped. sync-check alone: consistent for the inferred and the true
# offset, INCONSISTENT (exit 1) for one 1,000,000 cycles off.
# Usage: infer.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/sim.sh"
tap_workdir


# 1. inferred vs true: the offsets printed per CPU hold the truth within their bound
simulate a --vcpus 4 --seed 5
cp a-host.dat t-host.dat
cp a-guest.dat t-guest.dat
# shellcheck disable=SC2086
if "$HGTRACE" attach a-host.dat a-guest.dat > a.att 2>&1; then
	n=0 bad=0
	while read -r cpu est bound; do
		n=$((n + 1))
		d=$((est - off))
		[ ${d#-} -le "$bound" ] || bad=$((bad + 1))
		echo "# guest CPU $cpu: $est +- $bound, truth $off"
	done < <(sed -n 's/^guest CPU \([0-9]*\): offset \([0-9-]*\) +- \([0-9]*\) .*/\1 \2 \3/p' a.att)
	if [ $n -eq 4 ] && [ $bad -eq 0 ]; then
		tap_ok "attach with no PIDs and no sync data: 4 vCPUs by name, truth inside every bound"
	else
		tap_fail "attach inferred: $n CPUs, $bad off: $(cat a.att)"
	fi
else
	tap_fail "attach with no PIDs: $(cat a.att)"
fi
# shellcheck disable=SC2086
"$HGTRACE" attach -s "$off" t-host.dat t-guest.dat $pids > /dev/null

# 1b. the merged reports with the inferred and with the true offset: per vCPU, the guest's
#     events and its thread's host events in the same order (times aside; events of other
#     CPUs may swap with them within the ~20 ns the estimates differ by)
#     (merged by trace-cmd, from the TIME_SHIFT each attach stored)
trace-cmd report -i a-host.dat -i a-guest.dat 2> /dev/null > ra.txt
trace-cmd report -i t-host.dat -i t-guest.dat 2> /dev/null | sed -E 's/t-(host|guest)\.dat:/a-\1.dat:/' > rt.txt
same=0 lines=0 k=0
for pid in $pids; do
	for f in ra.txt rt.txt; do
		awk -v pid="$pid" -v cpu="$(printf '[%03d]' $k)" '
			$1 == "a-host.dat:" && index($0, "/KVM-" pid " ") { print; next }
			$1 == "a-guest.dat:" && index($0, cpu) { print }' $f |
			sed -E 's/ [0-9]+\.[0-9]+: / /' > $f.$k
	done
	n=$(wc -l < ra.txt.$k)
	lines=$((lines + n))
	cmp -s ra.txt.$k rt.txt.$k && [ "$n" -gt 1000 ] && same=$((same + 1))
	k=$((k + 1))
done
diffl=$(diff <(sed -E 's/ [0-9]+\.[0-9]+: / /' ra.txt) <(sed -E 's/ [0-9]+\.[0-9]+: / /' rt.txt) | grep -c '^<')
if [ "$same" = 4 ]; then
	tap_ok "inferred vs true offset: each vCPU's guest and thread lines ($lines in all) in the same order; $diffl of $(wc -l < ra.txt) merged lines move (other CPUs' events within ~20 ns)"
else
	tap_fail "inferred vs true offset: $same of 4 vCPUs keep their order"
fi

# 1c. a known TSC ratio (-s ,SCALE,FRAC): the offset inferred in guest units, the truth
#     inside the bound
simulate s --vcpus 2 --seed 6 --scale 1.25,48
sc=$(sed -n 's/^scaling \([0-9]*,[0-9]*\) .*/\1/p' s.out)
if "$HGTRACE" attach -s ",$sc" s-host.dat s-guest.dat > s.att 2>&1; then
	n=0 bad=0
	while read -r est bound; do
		n=$((n + 1))
		d=$((est - off))
		[ ${d#-} -le "$bound" ] || bad=$((bad + 1))
	done < <(sed -n 's/^guest CPU [0-9]*: offset \([0-9-]*\) +- \([0-9]*\) .*/\1 \2/p' s.att)
	[ $n -eq 2 ] && [ $bad -eq 0 ] &&
		tap_ok "attach -s ,$sc: 2 offsets inferred with the ratio, truth $off inside the bounds" ||
		tap_fail "attach -s ,$sc: $n CPUs, $bad off: $(cat s.att)"
else
	tap_fail "attach -s ,$sc: $(cat s.att)"
fi

# 2. sync-check: consistent for both; inconsistent for a wrong offset
for p in a t; do
	if "$HGTRACE" sync-check $p-host.dat $p-guest.dat > $p.sc 2>&1 &&
		[ "$(grep -c ': inside\($\|;\)' $p.sc)" -eq 4 ] && grep -q ' 0 outside' $p.sc; then
		tap_ok "sync-check $p: consistent, 4 stored offsets inside what fits"
	else
		tap_fail "sync-check $p: $(cat $p.sc)"
	fi
done
simulate w --vcpus 4 --seed 5
# shellcheck disable=SC2086
"$HGTRACE" attach -s $((off + 1000000)) w-host.dat w-guest.dat $pids > /dev/null
"$HGTRACE" sync-check w-host.dat w-guest.dat > w.sc 2>&1
rc=$?
if [ $rc -eq 1 ] && [ "$(grep -c ': OUTSIDE$' w.sc)" -eq 4 ] && grep -q INCONSISTENT w.sc; then
	tap_ok "sync-check of an offset 1,000,000 cycles off: 4 CPUs OUTSIDE, exit 1"
else
	tap_fail "sync-check wrong offset (exit $rc): $(cat w.sc)"
fi

# 3. refusals: one line, exit 1, both files unchanged
simulate o --vcpus 4 --seed 77
rpids=
refuse() { # WHAT HOST GUEST OPTIONS... (PIDs from $rpids)
	local what=$1 h=$2 g=$3
	shift 3
	# shellcheck disable=SC2086
	tap_refuses "$what" "$h $g" "$HGTRACE" attach "$@" "$h" "$g" $rpids
}
simulate b --vcpus 4 --seed 5
refuse "another session's guest" b-host.dat o-guest.dat
# guest CPU 1 checked against vCPU 2's thread: vCPU 1's PID left out
# shellcheck disable=SC2086
set -- $pids
rpids="$1 $3 $4"
refuse "one vCPU's thread left out" b-host.dat b-guest.dat
rpids=
refuse "--max-bound below what the events allow" b-host.dat b-guest.dat --max-bound 100
refuse "-s OFFSET with --infer" b-host.dat b-guest.dat --infer -s 5

# 4. a guest without a trace id gets one; the host without TSC2NSEC gives none
python3 - b-guest.dat noid-guest.dat << 'PY'
import struct, sys
# v7: options sections hold (u16 id, u32 size, data); turn TRACEID (11) into id 0xff00
d = bytearray(open(sys.argv[1], 'rb').read())
n = 0
i = 0
while True:
    i = d.find(struct.pack('<HI', 11, 8), i)
    if i < 0:
        break
    d[i:i + 2] = struct.pack('<H', 0xff00)
    n += 1
    i += 6
open(sys.argv[2], 'wb').write(d)
assert n == 1
PY
cp b-host.dat c-host.dat
if "$HGTRACE" attach c-host.dat noid-guest.dat > c.att 2>&1 && grep -q "no trace id: wrote one" c.att &&
	"$HGTRACE" sync-check c-host.dat noid-guest.dat > /dev/null 2>&1; then
	tap_ok "a guest with no trace id: one written ($(grep 'no trace id' c.att)), then consistent"
else
	tap_fail "guest without a trace id: $(cat c.att)"
fi

# 5. host recorded with plain x86-tsc (no TSC2NSEC): host and guest both in cycles
simulate p --vcpus 2 --seed 9
python3 - p-host.dat << 'PY'
import struct, sys
# drop the host's TSC2NSEC (option 14): rename its id
d = bytearray(open(sys.argv[1], 'rb').read())
i = d.find(struct.pack('<HI', 14, 16))
assert i >= 0
d[i:i + 2] = struct.pack('<H', 0xff01)
open(sys.argv[1], 'wb').write(d)
PY
"$HGTRACE" attach p-host.dat p-guest.dat > p.att 2>&1 || tap_fail "attach to a cycles host: $(cat p.att)"
if "$HGTRACE" dump p-guest.dat | grep -q TSC2NSEC; then
	tap_fail "the guest of a host without TSC2NSEC got a TSC2NSEC option"
else
	tap_ok "the guest of a host without TSC2NSEC gets none"
fi
if command -v trace-cmd > /dev/null; then
	trace-cmd report -i p-host.dat -i p-guest.dat 2> /dev/null > p.t
	"$HGTRACE" report p-host.dat p-guest.dat 2> /dev/null | strip_latency > p.h
	# every timestamp column in cycles (an integer with no '.') in both tools
	secs=$(grep -cE '\] +[0-9]+\.[0-9]+: ' p.t)
	lines=$(wc -l < p.h)
	if [ "$lines" -gt 1000 ] && [ "$secs" -eq 0 ]; then
		tap_cmp "host without TSC2NSEC: merged report = trace-cmd's, all in cycles ($lines lines)" p.h p.t
	else
		tap_fail "host without TSC2NSEC: $secs lines in sec.usec in trace-cmd's report of $lines"
	fi
else
	tap_skip "host without TSC2NSEC, compared with trace-cmd" "trace-cmd is not installed"
fi

# 6. v6 with an empty clock string after the CPU offsets: its TRACECLOCK option's clock,
#    silently, as trace-cmd
python3 - "$here/data/tsc-v6.dat" empty-clock.dat << 'PY'
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
i = d.find(b'flyrecord\0')
p = i + 10 + 16 * 2
assert d[p + 8:p + 17] == b'[x86-tsc]'
struct.pack_into('<Q', d, p, 0)
open(sys.argv[2], 'wb').write(d)
PY
"$HGTRACE" report --no-latency empty-clock.dat > e.h 2> e.err
trace-cmd report empty-clock.dat > e.want 2> /dev/null
trace-cmd report "$here/data/tsc-v6.dat" > e.orig 2> /dev/null
if [ ! -s e.err ] && [ "$(wc -l < e.h)" -gt 100 ] && cmp -s e.h e.want && cmp -s e.want e.orig &&
	"$HGTRACE" dump empty-clock.dat | grep -q 'clock x86-tsc'; then
	tap_ok "v6 with an empty clock string: x86-tsc from its option, no warning ($(wc -l < e.h) lines, trace-cmd's, as before)"
else
	tap_fail "v6 empty clock string: $(head -2 e.err)"
fi

# 7. the merged report names each guest's mapping; an unattached guest gets what to run
"$HGTRACE" report o-host.dat o-guest.dat 2> m.err > /dev/null
if grep -q "looks like a guest of o-host.dat.*run hgtrace attach o-host.dat o-guest.dat" m.err; then
	tap_ok "an unattached guest: the report says what to run"
else
	tap_fail "unattached guest: $(cat m.err)"
fi
"$HGTRACE" report a-host.dat a-guest.dat 2> m2.err > /dev/null
if grep -q "inferred from the trace +-[0-9]*; [0-9]* events: 0 outside" m2.err; then
	tap_ok "an inferred guest: the report says so, with its bound"
else
	tap_fail "inferred guest mapping line: $(cat m2.err)"
fi

# 8. Gaps that differ: no guest event within 300 cycles after kvm_entry or 2000 before
#    kvm_exit. The middle of what fits is then off the simulator's truth by about
#    (2000 - 300) / 2, and attach says it assumes equal gaps. sync-check on another pair of
#    that kind, attached with its true offset, prints the gaps it leaves; attach --gaps with
#    them puts the estimate within 100 cycles of the truth (the gaps of two runs differ by
#    their last step, < 100 here), and the truth stays inside the bound in both.
simulate c --vcpus 2 --seed 11 --guest-gaps 300,2000
# shellcheck disable=SC2086
"$HGTRACE" attach -s "$off" c-host.dat c-guest.dat $pids > /dev/null
read -r ge gx < <("$HGTRACE" sync-check c-host.dat c-guest.dat 2>&1 |
	sed -n 's/.*the gaps it leaves: entry \([0-9]*\), exit \([0-9]*\)$/\1 \2/p' | head -1)
simulate g --vcpus 2 --seed 12 --guest-gaps 300,2000
truth=$off
cp g-host.dat g2-host.dat
cp g-guest.dat g2-guest.dat
# shellcheck disable=SC2086
"$HGTRACE" attach g-host.dat g-guest.dat $pids > mid.txt 2>&1
# shellcheck disable=SC2086
"$HGTRACE" attach --gaps "${ge:-0},${gx:-0}" g2-host.dat g2-guest.dat $pids > gaps.txt 2>&1
# per CPU: "off bound" as attach printed them, against the truth
errs() { sed -n 's/^guest CPU [0-9]*: offset \([0-9]*\) +- \([0-9]*\) .*/\1 \2/p' "$1" |
	awk -v t="$truth" '{ d = $1 - t; printf "%d/%d ", d, $2; if (d > $2 || -d > $2) bad = 1 }
		END { exit bad }'; }
me=$(errs mid.txt) && ok_mid=1 || ok_mid=0
gerr=$(errs gaps.txt) && ok_gaps=1 || ok_gaps=0
if [ -z "$ge" ]; then
	tap_fail "sync-check printed no gaps for a pair attached with its true offset"
elif [ $ok_mid = 1 ] && [ $ok_gaps = 1 ] && grep -q 'assumes the gap after kvm_entry equals the gap before kvm_exit' mid.txt &&
	echo "$me" | awk '{ for (i = 1; i <= NF; i++) { split($i, a, "/"); if (a[1] < 500) exit 1 } }' &&
	echo "$gerr" | awk '{ for (i = 1; i <= NF; i++) { split($i, a, "/"); if (a[1] > 100 || a[1] < -100) exit 1 } }' &&
	grep -q "estimate from the given gaps (entry $ge, exit $gx)" gaps.txt; then
	tap_ok "gaps 300/2000: the middle is off the truth by $me(error/bound per CPU) and says it assumes equal gaps; with the gaps sync-check measured on another pair ($ge, $gx): $gerr"
else
	tap_fail "gaps: sync-check gave '$ge' '$gx'; middle $me (in bound: $ok_mid); with gaps $gerr (in bound: $ok_gaps): $(cat mid.txt gaps.txt | tr '\n' '|')"
fi
tap_refuses "attach --gaps 300 (one number)" "g-host.dat g-guest.dat" "$HGTRACE" attach --gaps 300 g-host.dat g-guest.dat
tap_done
