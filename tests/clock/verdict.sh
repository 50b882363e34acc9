#!/usr/bin/env bash
# One verdict on every pair: report (stderr), view (the page's sync text) and sync-check
# print the same sync-check lines for the same files, and their verdict is the one the pair
# was built to have (the expected verdict comes from how the test made the pair, not from
# hgtrace): synced pairs consistent; a guest whose clock nothing maps (no TIME_SHIFT, the
# host's GUEST option only, as a session whose sync failed) NOT SYNCED, whatever its raw
# times happen to fall on; a wrong offset INCONSISTENT; another session's guest NOT SYNCED;
# a synced guest wholly outside the host's recording UNCHECKED by its windows (sync-check,
# which also infers the offsets that fit, then finds the stored one OUTSIDE them:
# INCONSISTENT). Each for a KVM host (kvm windows) and a TCG host (sched_switch running
# intervals of "CPU N/TCG").
# Usage: verdict.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/sim.sh"
tap_workdir

# the sync-check lines of a page: its "sync" JSON string
page_sync() {
	python3 - "$1" <<'PY'
import json, re, sys
s = open(sys.argv[1], encoding='utf-8').read()
m = re.search(r'"sync":("(?:[^"\\]|\\.)*")', s)
print(json.loads(m.group(1)) if m else "", end='')
PY
}
# the per-input lines (the verdicts), without sync-check's feasible-offset lines
verdict_lines() { grep -E '^hgtrace: sync check: input [0-9]+: (time|guest CPU [0-9]+: [0-9]+ outside$)' "$1" | sort; }

# check NAME EXPECTED HOST GUEST [SYNC-CHECK'S LAST WORD, if not EXPECTED]
check() {
	local name=$1 want=$2 h=$3 g=$4 want_sc=${5:-$2} last rc
	"$HGTRACE" report "$h" "$g" > /dev/null 2> "$name.rep" || {
		tap_fail "$name: report failed: $(tail -1 "$name.rep")"
		return
	}
	"$HGTRACE" view -o "$name.html" "$h" "$g" 2> "$name.verr" || {
		tap_fail "$name: view failed: $(tail -1 "$name.verr")"
		return
	}
	page_sync "$name.html" > "$name.view"
	"$HGTRACE" sync-check "$h" "$g" > "$name.sc" 2>&1
	rc=$?
	last=$(tail -1 "$name.sc" | sed 's/^hgtrace: sync check: //')
	verdict_lines "$name.rep" > "$name.r"
	verdict_lines "$name.view" > "$name.v"
	verdict_lines "$name.sc" > "$name.s"
	local n
	n=$(grep -c . "$name.r")
	if [ "$n" -lt 1 ]; then
		tap_fail "$name: report printed no sync-check line: $(cat "$name.rep")"
	elif ! cmp -s "$name.r" "$name.v" || ! cmp -s "$name.r" "$name.s"; then
		tap_fail "$name: report, view and sync-check differ"
		diff "$name.r" "$name.v" | head -4 | sed 's/^/# view: /'
		diff "$name.r" "$name.s" | head -4 | sed 's/^/# sync-check: /'
	elif ! grep -q "($want\|: $want" "$name.r"; then
		tap_fail "$name: verdict of the lines, want '$want': $(head -1 "$name.r")"
	elif [ "$last" != "$want_sc" ]; then
		tap_fail "$name: sync-check's verdict '$last', want '$want_sc'"
	elif [ "$want_sc" = consistent ] && [ $rc -ne 0 ] || [ "$want_sc" != consistent ] && [ $rc -ne 1 ]; then
		tap_fail "$name: sync-check exit $rc for '$want_sc'"
	else
		tap_ok "$name: report, view and sync-check agree on $n line(s): $want${5:+ (sync-check: $5)}"
	fi
}

for mode in kvm tcg; do
	flags=
	[ $mode = tcg ] && flags=--tcg
	# synced as a recording does
	simulate $mode-s $flags --embed-sync --seed 3 --duration-ms 100
	check $mode-synced consistent $mode-s-host.dat $mode-s-guest.dat
	# the session knew the vCPU threads and synced nothing (the README's guest-driven
	# commands with the local clock on both sides)
	simulate $mode-u $flags --embed-guest --seed 3 --duration-ms 100
	check $mode-unsynced "NOT SYNCED" $mode-u-host.dat $mode-u-guest.dat
	# attached by hand: the true offset, one 1,000,000 cycles off, one 10^12 cycles early
	# (the guest wholly before the host's recording)
	simulate $mode-a $flags --seed 3 --duration-ms 100
	for k in true wrong early; do
		cp $mode-a-host.dat $mode-$k-host.dat
		cp $mode-a-guest.dat $mode-$k-guest.dat
	done
	# shellcheck disable=SC2086
	"$HGTRACE" attach -s "$off" $mode-true-host.dat $mode-true-guest.dat $pids > /dev/null
	# shellcheck disable=SC2086
	"$HGTRACE" attach -s $((off + 1000000)) $mode-wrong-host.dat $mode-wrong-guest.dat $pids > /dev/null
	# shellcheck disable=SC2086
	"$HGTRACE" attach -s $((off - 1000000000000)) $mode-early-host.dat $mode-early-guest.dat $pids > /dev/null
	check $mode-attached consistent $mode-true-host.dat $mode-true-guest.dat
	check $mode-wrong-offset INCONSISTENT $mode-wrong-host.dat $mode-wrong-guest.dat
	check $mode-guest-before-host UNCHECKED $mode-early-host.dat $mode-early-guest.dat INCONSISTENT
	# another session's guest: synced, but to another host
	simulate $mode-o $flags --embed-sync --seed 4 --duration-ms 100
	check $mode-other-session "NOT SYNCED" $mode-s-host.dat $mode-o-guest.dat
done
# no mapping at all, no GUEST option: it looks like this host's guest (kvm events there)
check kvm-lookalike "NOT SYNCED" kvm-a-host.dat kvm-a-guest.dat

# A guest attached 300 ms late on a host whose vCPU 0 thread is preempted for 300 ms: the
# guest's events of the 300 ms before the preemption land in it, thousands of them waiting
# for the thread's next window; all are decided (outside). Those the shift puts after the
# host's last record cannot be decided: unchecked, unless their thread was in guest mode
# when the host stopped (then inside). How many that is comes from the simulator's truth
# (the host TSC of each guest event) plus the shift, against the host's last record and
# each vCPU thread's last kvm event in trace-cmd's report (ns at the truth's rate).
simulate late --seed 5 --vcpus 2 --duration-ms 1000 --inject preempt:300000 --truth
khz=$(awk '/^# seed/ { for (i = 1; i < NF; i++) if ($i == "tsc_khz") print $(i + 1) }' late-truth.txt)
shift_cy=$((300 * khz)) # khz: cycles per ms
trace-cmd report -t late-host.dat 2> /dev/null > late-host.tc
hlast=$(awk '$4 ~ /^[0-9]+\.[0-9]+:$/ { t = $4 } END { sub(":", "", t); split(t, p, "."); print p[1] p[2] }' late-host.tc)
# the vCPU threads in guest mode at the end (their last kvm event a kvm_entry): "pid pid"
inside_end=$(awk '$5 == "kvm_entry:" || $5 == "kvm_exit:" { n = split($1, a, "-"); last[a[n]] = $5 }
	END { for (p in last) if (last[p] == "kvm_entry:") printf "%s ", p }' late-host.tc)
read -r ulo uhi < <(awk -v d="$shift_cy" -v h="$hlast" -v k="$khz" -v pids="$pids" -v inside="$inside_end" '
	BEGIN { n = split(pids, p, " "); for (i = 1; i <= n; i++) pid[i - 1] = p[i]; split(inside, q, " "); for (i in q) in_end[q[i]] = 1 }
	!/^#/ && !(pid[$1] in in_end) { t = $3 + d; e = h * k / 1000000; if (t > e + 100) lo++; if (t > e - 100) hi++ }
	END { print lo + 0, hi + 0 }' late-truth.txt)
# shellcheck disable=SC2086
"$HGTRACE" attach -s $((off + shift_cy)) late-host.dat late-guest.dat $pids > /dev/null
"$HGTRACE" sync-check late-host.dat late-guest.dat > late.sc 2>&1
line=$(grep -m1 ': time: ' late.sc)
unchecked=$(sed -n 's/.*, \([0-9]*\) unchecked$/\1/p' <<< "$line")
outside=$(sed -n 's/.*events: \([0-9]*\) outside.*/\1/p' <<< "$line")
if [ "$ulo" -lt 1000 ]; then
	tap_fail "guest late, host preempted: only $ulo events after the host's end by the truth"
elif [ -z "$unchecked" ] || [ "$unchecked" -lt "$ulo" ] || [ "$unchecked" -gt "$uhi" ] || [ "${outside:-0}" -lt 8192 ]; then
	tap_fail "guest late, host preempted: want $ulo..$uhi unchecked (after the host's end, by the truth) and over 8192 outside: $line"
else
	tap_ok "guest late, host preempted: $unchecked unchecked = the truth's events after the host's end ($ulo..$uhi), $outside outside"
fi
tap_done
