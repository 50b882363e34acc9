#!/usr/bin/env bash
# attach --refine: a channel's sync (simulate --channel: 2 samples per vCPU, each off the
# simulator's true offset by up to the bound) narrowed by the vCPU windows. Checked against
# the simulator's truth, not hgtrace: the true offset lies within every refined estimate's
# bound, the bound shrinks at least tenfold, a recount from trace-cmd's report at zero
# tolerance finds no guest event outside its windows (tests/lib/windows.awk, runwindows.awk),
# and sync-check agrees. A channel biased past its own bound is refused (DISAGREE, the file
# unchanged); a TIME_SHIFT with no stored bound (as trace-cmd's) is refined to the windows
# when its samples lie inside them; a pair with nothing to refine is one error line.
# KVM hosts (kvm windows) and TCG hosts (sched_switch running intervals).
# Usage: refine.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/sim.sh"
tap_workdir

# recount P HOST GUEST: "N inside, M outside" at zero tolerance from trace-cmd's report
recount() {
	local awkf=windows.awk
	[ "$1" = tcg ] && awkf=runwindows.awk
	trace-cmd report -t -i "$2" -i "$3" 2> /dev/null |
		awk -v host="$2" -v pids="$pids" -f "$here/lib/$awkf"
}

for mode in kvm tcg; do
	flags=
	[ $mode = tcg ] && flags=--tcg
	simulate $mode $flags --channel 300000 --seed 7 --duration-ms 100
	if ! "$HGTRACE" attach --refine $mode-host.dat $mode-guest.dat > $mode.ref 2>&1; then
		tap_fail "$mode: attach --refine: $(cat $mode.ref)"
		continue
	fi
	# the offsets stored, as trace-cmd reads the last TIME_SHIFT, each against the truth
	# within its vCPU's printed bound
	trace-cmd dump --options $mode-guest.dat 2> /dev/null |
		sed -n 's/^[[:space:]]*\(-\{0,1\}[0-9]*\) [0-9]* [0-9]* [0-9]*\[offset.*/\1/p' | tail -4 > $mode.stored
	sed -n 's/.*: refined; offset [0-9-]* +- \([0-9]*\)$/\1/p' $mode.ref > $mode.bounds
	n=0 bad=0 worst=0
	while read -r est b; do
		n=$((n + 1))
		d=$((est - off))
		[ ${d#-} -le "$b" ] || bad=$((bad + 1))
		[ "$b" -gt $worst ] && worst=$b
	done < <(paste -d' ' $mode.stored $mode.bounds)
	# what both allow lies inside the windows' set, so its middle is no farther from the
	# truth than the windows' own bound (+1 for the rounding of each): an offset stored at
	# an edge of that set (twice the reach) is caught
	wb=$(sed -n 's/.*(4 of 4 CPUs): channel +-300000, windows +-\([0-9]*\), both +-'"$worst"': TIME_SHIFT appended.*/\1/p' $mode.ref)
	if [ $n = 4 ] && [ $bad = 0 ] && [ $worst -le 30000 ] && [ -n "$wb" ] && [ "$worst" -le $((wb + 1)) ]; then
		tap_ok "$mode: 4 vCPUs refined: the offsets stored (trace-cmd dump) hold the truth $off within each bound (+-300000 -> +-$worst, the windows' +-$wb)"
	else
		tap_fail "$mode: $n refined, $bad miss the truth $off, worst +-$worst: $(cat $mode.ref)"
	fi
	rc=$(recount $mode $mode-host.dat $mode-guest.dat)
	inside=${rc%% inside*}
	echo "$rc" | grep -q ' 0 outside' && [ "${inside:-0}" -gt 10000 ] &&
		tap_ok "$mode: at zero tolerance (trace-cmd's report, recounted): $rc" ||
		tap_fail "$mode: zero tolerance recount: $rc"
	"$HGTRACE" sync-check $mode-host.dat $mode-guest.dat > $mode.sc
	grep -q "synced, refined by the trace +-$worst;.*(consistent)" $mode.sc && [ "$(tail -1 $mode.sc)" = "hgtrace: sync check: consistent" ] &&
		tap_ok "$mode: sync-check: consistent, $(grep -o 'refined by the trace +-[0-9]*' $mode.sc)" ||
		tap_fail "$mode: sync-check after refine: $(cat $mode.sc)"

	# a channel biased by 2,000,000 cycles past its bound of 3,000: the two disagree
	simulate $mode-w $flags --channel 3000,2000000 --seed 7 --duration-ms 100
	cp $mode-w-guest.dat w-orig.dat
	"$HGTRACE" attach --refine $mode-w-host.dat $mode-w-guest.dat > $mode-w.ref 2>&1
	nd=$(grep -c 'DISAGREE' $mode-w.ref)
	[ "$nd" = 5 ] && cmp -s w-orig.dat $mode-w-guest.dat && grep -q ': unchanged$' $mode-w.ref &&
		tap_ok "$mode: a channel 2,000,000 cycles off its bound: DISAGREE on 4 vCPUs, the file unchanged" ||
		tap_fail "$mode: biased channel: $nd DISAGREE lines: $(cat $mode-w.ref)"
done

# An offset that moves (20 ppm over 1 s): no single offset fits, so each vCPU is refined
# over time (8 slices, interpolated). Checked against the simulator's truth, by the test's
# own reading of the stored samples (trace-cmd dump) interpolated as trace-cmd does
# (tests/lib/shift-vs-truth.awk): every guest event within the printed bound of its true
# host time; the channel's own samples miss that bound; trace-cmd's merged report, recounted
# at zero tolerance, puts no guest event outside its windows.
for mode in kvm tcg; do
	flags=
	[ $mode = tcg ] && flags=--tcg
	simulate d$mode $flags --drift-ppb 20000 --channel 300000 --seed 7 --duration-ms 1000 --truth
	trace-cmd dump --options d$mode-guest.dat > d$mode.before 2> /dev/null
	"$HGTRACE" attach --refine d$mode-host.dat d$mode-guest.dat > d$mode.ref 2>&1
	b=$(sed -n 's/.*both +-\([0-9]*\): TIME_SHIFT appended$/\1/p' d$mode.ref)
	trace-cmd dump --options d$mode-guest.dat > d$mode.after 2> /dev/null
	vt=$(awk -v bound="${b:-0}" -f "$here/lib/shift-vs-truth.awk" d$mode.after d$mode-truth.txt)
	vc=$(awk -v bound="${b:-0}" -f "$here/lib/shift-vs-truth.awk" d$mode.before d$mode-truth.txt)
	rc=$(recount $mode d$mode-host.dat d$mode-guest.dat)
	if [ -n "$b" ] && [ "$b" -le 30000 ] && [ "$(grep -c ': refined over time: [0-9]* points' d$mode.ref)" = 4 ] &&
		echo "$vt" | grep -q '^[1-9][0-9]\{4,\} events, 0 beyond' && ! echo "$vc" | grep -q ' 0 beyond' &&
		echo "$rc" | grep -q ' 0 outside'; then
		tap_ok "$mode, 20 ppm drift: 4 vCPUs refined over time (+-300000 -> +-$b); against the truth: $vt (the channel's samples: $vc); zero tolerance: $rc"
	else
		tap_fail "$mode, 20 ppm drift: bound '$b'; truth: $vt; channel: $vc; zero tolerance: $rc; $(cat d$mode.ref)"
	fi
done
# Sparse sessions (5 ms: 100-220 guest events per vCPU, a few host windows each): the
# windows are sought within the channel's set and no offset there that fits is dropped as
# weakly supported, so every vCPU is refined, none called a disagreement, and each stored
# offset holds the simulator's truth within the bound stored (shift-vs-truth.awk). Seed 4
# once made vCPU 0 "DISAGREE" (the true offset's piece dropped as weak); seed 7 stored
# nothing (an offset moved into the best-supported piece, far from the middle, widened
# the bound past the channel's).
for seed in 4 7; do
	simulate sp$seed --tcg --channel 300000 --seed $seed --duration-ms 5 --truth
	"$HGTRACE" attach --refine sp$seed-host.dat sp$seed-guest.dat > sp$seed.ref 2>&1
	b=$(sed -n 's/.*(4 of 4 CPUs): channel +-300000, .* both +-\([0-9]*\): TIME_SHIFT appended$/\1/p' sp$seed.ref)
	vt=$(trace-cmd dump --options sp$seed-guest.dat 2> /dev/null |
		awk -v bound="${b:-0}" -f "$here/lib/shift-vs-truth.awk" - sp$seed-truth.txt)
	if [ -n "$b" ] && [ "$b" -lt 300000 ] && ! grep -q DISAGREE sp$seed.ref &&
		echo "$vt" | grep -q ' 0 beyond'; then
		tap_ok "sparse session (seed $seed, 5 ms): 4 of 4 vCPUs refined to +-$b, none disagreeing; against the truth: $vt"
	else
		tap_fail "sparse session (seed $seed): bound '$b', truth: $vt; $(tr '\n' '|' < sp$seed.ref)"
	fi
done

# A real session (tests/data/sessions/README): -C local, a TCG guest right after its boot,
# 2 s of sched_switch alone. Guest CPU 0's 159 events fit no constant offset; in 8 slices
# some slices had 4 events in long windows, as wide as the channel's set, and the bound
# stayed the channel's. As one line through its events it is refined: the bound at most a
# tenth of the channel's, and at zero tolerance (trace-cmd's report, recounted by
# runwindows.awk) no event outside its vCPU thread's running intervals.
cp "$here/data/sessions/local-drift.dat" "$here/data/sessions/local-drift-g.dat" .
"$HGTRACE" attach --refine local-drift.dat local-drift-g.dat > ld.ref 2>&1
b=$(sed -n 's/.*(2 of 2 CPUs, 1 over time (1 as one line.*channel +-188184, .* both +-\([0-9]*\): TIME_SHIFT appended$/\1/p' ld.ref)
pids=$(trace-cmd report local-drift.dat 2> /dev/null | grep -o 'CPU [0-9]*/TCG-[0-9]*' | sort -u |
	sed 's/CPU \([0-9]*\)\/TCG-\([0-9]*\)/\1 \2/' | sort -n | cut -d' ' -f2 | tr '\n' ' ')
rc=$(recount tcg local-drift.dat local-drift-g.dat)
if [ -n "$b" ] && [ "$b" -le 18818 ] && echo "$rc" | grep -q '^319 inside, 0 outside'; then
	tap_ok "a real -C local session, guest CPU 0 fitting no constant offset: refined as one line, +-188184 -> +-$b; zero tolerance (threads $pids): $rc"
else
	tap_fail "a real -C local session: bound '$b'; zero tolerance (threads $pids): $rc; $(tr '\n' '|' < ld.ref)"
fi
# The bound against every line the data allows, found on a grid of rates by the test's own
# reader (tests/lib/line-reach.py): each within the bound of the line stored.
trace-cmd report -t local-drift.dat > ld-host.txt 2> /dev/null
trace-cmd report --raw-ts local-drift-g.dat > ld-graw.txt 2> /dev/null
trace-cmd dump --options "$here/data/sessions/local-drift-g.dat" > ld-before.txt 2> /dev/null
trace-cmd dump --options local-drift-g.dat > ld-after.txt 2> /dev/null
lr=$(python3 "$here/lib/line-reach.py" ld-host.txt ld-graw.txt "${pids%% *}" 0 ld-before.txt ld-after.txt 188184 2>&1)
case $lr in
ok*) tap_ok "a real -C local session, guest CPU 0: ${lr#ok }" ;;
*) tap_fail "a real -C local session, guest CPU 0: $lr" ;;
esac

# A recording cut by a kill (tests/lib/cut-recording.py: host CPU 1's pages stop at 30 % and
# 60 % of them) and restored: the restore marks the span every CPU covers, and refines the
# guest beside it. A vCPU thread may have run unseen on CPU 1 after its pages end, so the
# windows know nothing outside that span: one constant offset fits, holding the truth.
# Before, CPU 1's events there lay outside every window: refined over time to +-62,767 at
# 60 %, nothing refined at 30 %.
simulate cut --tcg --vcpus 2 --host-cpus 2 --channel 300000 --seed 7 --duration-ms 200 --truth \
	--compression none
for frac in 0.3 0.6; do
	rm -rf c && mkdir c && cp cut-guest.dat c/guest.dat
	kept=$(python3 "$here/lib/cut-recording.py" "$HGTRACE" cut-host.dat c/host.dat 1 $frac)
	"$HGTRACE" restore c/host.dat > c.log 2>&1
	w=$(trace-cmd report --stat c/host.dat 2> /dev/null | grep -c 'hgtrace window: ')
	b=$(sed -n 's/.*sync refined by the vCPU windows (2 of 2 CPUs): channel +-300000, .* both +-\([0-9]*\)$/\1/p' c.log)
	vt=$(trace-cmd dump --options c/guest.dat 2> /dev/null |
		awk -v bound="${b:-0}" -f "$here/lib/shift-vs-truth.awk" - cut-truth.txt)
	read -r from to < <(trace-cmd report -t c/host.dat 2> /dev/null | awk -f "$here/lib/cut-span.awk")
	rc=$(trace-cmd report -t -i c/host.dat -i c/guest.dat 2> /dev/null |
		awk -v host=host.dat -v pids="$pids" -v from="$from" -v to="$to" -f "$here/lib/runwindows.awk")
	if [ "$w" = 1 ] && [ -n "$b" ] && [ "$b" -le 30000 ] && echo "$vt" | grep -q ' 0 beyond' &&
		echo "$rc" | grep -q ' 0 outside'; then
		tap_ok "cut by a kill at $frac of CPU 1's pages ($kept), restored: the span marked, one offset +-$b; against the truth: $vt; zero tolerance within the span: $rc"
	else
		tap_fail "cut by a kill at $frac ($kept): window marks $w, bound '$b', truth: $vt; zero tolerance: $rc; $(tr '\n' '|' < c.log)"
	fi
done

# --drift: over time even where one offset fits (no drift), the truth still within the bound
simulate f --channel 300000 --seed 7 --duration-ms 200 --truth
"$HGTRACE" attach --refine --drift=4 f-host.dat f-guest.dat > f.ref 2>&1
b=$(sed -n 's/.*both +-\([0-9]*\): TIME_SHIFT appended$/\1/p' f.ref)
vt=$(trace-cmd dump --options f-guest.dat 2> /dev/null | awk -v bound="${b:-0}" -f "$here/lib/shift-vs-truth.awk" - f-truth.txt)
[ -n "$b" ] && [ "$(grep -c ': refined over time: [0-9]* points' f.ref)" = 4 ] && echo "$vt" | grep -q ' 0 beyond' &&
	tap_ok "--drift=4 with no drift: 4 vCPUs over time, +-$b; against the truth: $vt" ||
	tap_fail "--drift=4: bound '$b', truth: $vt; $(cat f.ref)"

# a TIME_SHIFT with no bound stored (attach -s, as trace-cmd's): refined to the windows,
# its offsets inside them
simulate n --seed 7 --duration-ms 100
# shellcheck disable=SC2086
"$HGTRACE" attach -s "$off" n-host.dat n-guest.dat $pids > /dev/null
if "$HGTRACE" attach --refine n-host.dat n-guest.dat > n.ref 2>&1 &&
	[ "$(grep -c ': refined; offset' n.ref)" = 4 ] && grep -q 'CPUs): channel unknown, .*: TIME_SHIFT appended$' n.ref; then
	tap_ok "no stored bound: $(tail -1 n.ref)"
else
	tap_fail "no stored bound: $(cat n.ref)"
fi
# a vCPU whose thread is unknown (the host's GUEST entry names pid 9999 for vCPU 3, which
# never ran): its 3,000-odd events have only the channel's bound, so nothing is tighter and
# the file stays as it was (never an offset of 0 for that vCPU, or the others' bound for it)
simulate u --channel 300000 --seed 7 --duration-ms 100 --compression none
python3 -c '
import struct, sys
p = sys.argv[1]
d = open(p, "rb").read()
a, b = struct.pack("<II", 3, 5004), struct.pack("<II", 3, 9999)
assert d.count(a) == 1, d.count(a)
open(p, "wb").write(d.replace(a, b))' u-host.dat
cp u-guest.dat u-orig.dat
"$HGTRACE" attach --refine u-host.dat u-guest.dat > u.ref 2>&1
if cmp -s u-orig.dat u-guest.dat && grep -q 'thread 9999.*(3[0-9]* events): no offset from the vCPU windows (channel kept)$' u.ref &&
	grep -q '^  vCPU 3 (thread 9999) not refined: the host has no window of its thread (3[0-9]* events): the channel.s samples kept$' u.ref &&
	[ "$(grep -c ': refined; offset' u.ref)" = 3 ] && grep -q 'both +-300000; a vCPU not refined keeps the channel.s bound: unchanged$' u.ref; then
	tap_ok "a vCPU with events and no thread: 3 of 4 refined, its channel bound kept (\"$(grep -o 'not refined: [^(]*' u.ref)\"), the file unchanged"
else
	tap_fail "a vCPU with no thread: $(cat u.ref)"
fi
# nothing to refine: one line, exit 1, the files as they were
simulate z --seed 7 --duration-ms 50
TAP_WANT='no TIME_SHIFT to refine' tap_refuses "attach --refine with no TIME_SHIFT" "z-host.dat z-guest.dat" \
	"$HGTRACE" attach --refine z-host.dat z-guest.dat
tap_refuses "attach --refine with another option" "" "$HGTRACE" attach --refine -c 2 z-host.dat z-guest.dat
tap_done
