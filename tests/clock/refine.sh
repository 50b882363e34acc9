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
	if [ $n = 4 ] && [ $bad = 0 ] && [ $worst -le 30000 ] &&
		grep -q 'refined by the vCPU windows (4 of 4 CPUs): channel +-300000, windows +-[0-9]*, both +-'"$worst"': TIME_SHIFT appended' $mode.ref; then
		tap_ok "$mode: 4 vCPUs refined: the offsets stored (trace-cmd dump) hold the truth $off within each bound (+-300000 -> +-$worst)"
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
# nothing to refine: one line, exit 1, the files as they were
simulate z --seed 7 --duration-ms 50
TAP_WANT='no TIME_SHIFT to refine' tap_refuses "attach --refine with no TIME_SHIFT" "z-host.dat z-guest.dat" \
	"$HGTRACE" attach --refine z-host.dat z-guest.dat
tap_refuses "attach --refine with another option" "" "$HGTRACE" attach --refine -c 2 z-host.dat z-guest.dat
tap_done
