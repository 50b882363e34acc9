#!/usr/bin/env bash
# Compiled print formats (lib/report/fmt-compile.c) against libtraceevent, record by record:
# with HGT_FASTFMT=verify every record a compiled format prints is printed by libtraceevent
# too and the two texts compared; hgtrace counts the differences. 0 differences are
# required on every recording in tests/data, on 10 simulated sessions (host, guest and the
# two merged), and on a fresh recording of every event this kernel has (where tracefs is
# there), whose whole report must also be trace-cmd's. Each check says how many records the
# compiled formats printed, so a check that compared nothing cannot pass unseen.
# Usage: fastfmt.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/record.sh"
command -v trace-cmd > /dev/null || tap_skip_all "trace-cmd is not installed"
tap_workdir

# verify WHAT MIN ARGS...: hgtrace report ARGS with every compiled text checked; ok when
# nothing differs and at least MIN records were printed by compiled formats.
verify() {
	local what=$1 min=$2 sums
	shift 2
	HGT_FASTFMT=verify "$HGTRACE" report "$@" > /dev/null 2> verify.err
	# one summary per formatting thread; add them up
	sums=$(awk '/^fastfmt verify: [0-9]+ records/ { c += $3; f += $9; d += $12; n++ }
		END { print n + 0, c + 0, f + 0, d + 0 }' verify.err)
	read -r nsum comp back diff <<< "$sums"
	if [ "$nsum" -eq 0 ]; then
		tap_fail "$what: no verify summary ($(head -c 300 verify.err))"
	elif [ "$diff" -ne 0 ]; then
		tap_fail "$what: $diff of $comp compiled texts differ from libtraceevent's"
		grep 'compiled "' verify.err | head -5 | sed 's/^/# /'
	elif [ "$comp" -lt "$min" ]; then
		tap_fail "$what: only $comp records printed by compiled formats (want >= $min)"
	else
		tap_ok "$what: $comp compiled texts equal libtraceevent's ($back printed by libtraceevent)"
	fi
}

# 1. Every recording in tests/data. The real recordings hold syscall, irq and timer events
# without plugin handlers: most of their records must go through compiled formats.
total=0
while read -r f; do
	case $f in
	*/tsc.dat | */mono.dat | */tsc-v6.dat | */local-v7none.dat) min=1000 ;;
	*) min=0 ;;
	esac
	verify "tests/data/${f#"$here/data/"}" "$min" "$f"
	total=$((total + comp))
done < <(find "$here/data" -name '*.dat' | sort)
[ "$total" -ge 8000 ] && tap_ok "tests/data: $total compiled texts checked in all" ||
	tap_fail "tests/data: only $total compiled texts checked in all"

# 2. Ten simulated sessions, each one's host, guest and merged report.
sims=("--seed 1" "--seed 2 --tcg" "--seed 3 --scale 1.25,48" "--seed 4 --vcpus 8 --host-cpus 2"
	"--seed 5 --inject preempt:300 --inject irqs:20:10 --inject softirqs:8:30"
	"--seed 6 --file-version 6 --compression none" "--seed 7 --compression zlib"
	"--seed 8 --sparse-vcpu-ids --embed-sync" "--seed 9 --drift-ppb 20000 --tcg"
	"--seed 10 --inject exits:EPT_VIOLATION:10:20 --inject guest:200")
for i in "${!sims[@]}"; do
	# shellcheck disable=SC2086
	if ! "$HGTRACE" simulate -o "s$i" --duration-ms 150 ${sims[$i]} > /dev/null 2>&1; then
		tap_fail "simulate ${sims[$i]}"
		continue
	fi
	verify "simulated (${sims[$i]}): host" 100 "s$i-host.dat"
	verify "simulated (${sims[$i]}): guest" 100 "s$i-guest.dat"
	verify "simulated (${sims[$i]}): host and guest merged" 200 -i "s$i-host.dat" -i "s$i-guest.dat"
done

# 3. A recording of every event this kernel has, made now: hundreds of print formats the
# committed recordings do not have (block, kmem, net, workqueue, ...).
if why=$(tracefs_ready); then
	record_all_events all.dat record.log
	if [ -s all.dat ]; then
		kinds=$(trace-cmd report all.dat 2> /dev/null | awk '{ for (i = 1; i < NF; i++)
			if ($i ~ /^[0-9]+\.[0-9]+:$/) { print $(i + 1); break } }' | sort -u | wc -l)
		verify "every event recorded now ($kinds kinds of event)" 1000 all.dat
		"$HGTRACE" report --no-latency all.dat > got 2> /dev/null
		trace-cmd report all.dat > want 2> /dev/null
		tap_cmp "every event recorded now: hgtrace's report is trace-cmd's ($(wc -l < want) lines)" got want
		# the deadline task: negative prios through the sched plugin's compiled texts
		if dl_task_ok; then
			n=$(grep -c 'sched_switch: .*\[-1\]' want)
			[ "$n" -gt 0 ] && tap_ok "every event recorded now: $n sched_switch lines with prio -1 (a SCHED_DEADLINE task) among them" ||
				tap_fail "every event recorded now: no sched_switch line with prio -1, though chrt -d runs"
		else
			tap_skip "a SCHED_DEADLINE task's prio -1" "chrt -d does not run here"
		fi
	else
		tap_fail "trace-cmd record -e all made nothing: $(tail -2 record.log | tr '\n' ' ')"
	fi
else
	tap_skip "a recording of every event" "$why"
fi
tap_done
