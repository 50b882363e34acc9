#!/usr/bin/env bash
# hgtrace why on known causes: simulated sessions with injected causes of guest latency
# (a vCPU thread preempted by a host task, a burst of exits of one reason, a host IRQ storm,
# a softirq storm, a delay of the guest's own, and a halted vCPU thread woken from another
# CPU while a host task holds its own, with and without the switches out of idle in the
# trace). Each must be found with its cause as the top part and
# the duration given on simulate's command line within 1 us; the guest's own delay must
# be called the guest's. Every delay why reports, and its split, must equal what
# check-why.py derives on its own from trace-cmd's report of the same files, to the ns,
# and why's worst N must be the N longest. Through --embed-sync, through attach, and with
# a scaled TSC (the causes alone there); a --from/--to pair; bad options refused.
# Usage: why.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/sim.sh"
command -v trace-cmd > /dev/null || tap_skip_all "trace-cmd is not installed"
command -v python3 > /dev/null || tap_skip_all "python3 is not installed"
tap_workdir

# check WHAT ARGS...: check-why.py, one TAP line per line it prints
check() {
	local what=$1
	shift
	if python3 "$here/sink/check-why.py" "$@" > check.out 2>&1; then
		while read -r l; do tap_ok "$what: ${l#ok }"; done < check.out
	else
		tap_fail "$what: $(tr '\n' ' ' < check.out)"
	fi
}

# the causes, and their durations in ns as this command line gives them
inject="--inject preempt:500 --inject exits:IO_INSTRUCTION:20:25 --inject irqs:10:30
	--inject guest:400 --inject preempt:77 --inject exits:EPT_VIOLATION:8:40
	--inject irqs:50:3 --inject guest:1500 --inject softirqs:12:20"
expect="500000 500000 300000 400000 77000 320000 150000 1500000 240000"

# 1. Synced as a recording would be (TIME_SHIFT and GUEST in the files).
# shellcheck disable=SC2086
simulate a --seed 5 --duration-ms 400 --embed-sync $inject || tap_fail "simulate"
grep '^injected:' a.out > a.inj
[ "$(wc -l < a.inj)" = 9 ] && tap_ok "simulate placed the 9 causes" ||
	tap_fail "simulate placed $(wc -l < a.inj) of 9 causes: $(tail -2 a.out)"
trace-cmd report -t -i a-host.dat -i a-guest.dat > a.tc 2> /dev/null
if "$HGTRACE" why --json --threshold 1 a-host.dat a-guest.dat > a-all.json 2> err.txt; then
	check "embedded sync, every delay" a-all.json a.tc a-host.dat a-guest.dat "$pids" \
		--injected a.inj "$expect"
else
	tap_fail "why --threshold 1: $(cat err.txt)"
fi
"$HGTRACE" why --json --top 25 a-host.dat a-guest.dat > a-top.json 2> err.txt &&
	check "embedded sync, --top 25" a-top.json a.tc a-host.dat a-guest.dat "$pids" --worst ||
	tap_fail "why --top 25: $(cat err.txt)"
# --host-only: only host verdicts; the 7 host causes are among them, the guest's 2 are not.
"$HGTRACE" why --json --host-only --threshold 1 a-host.dat a-guest.dat > a-host.json 2> err.txt
r=$(python3 - a-host.json a-all.json a.inj << 'EOF'
import json, sys
h, a = (json.load(open(f))["delays"] for f in sys.argv[1:3])
key = lambda d: (d["kind"], d["cpu"], d["from_ns"], d["to_ns"])
want = {key(d) for d in a if d["verdict"] == "host"}
inj = [(l.split()[1], dict(x.split("=") for x in l.split()[2:])) for l in open(sys.argv[3])]
found = [(c, any(abs(d["to_ns"] - int(f["to_ns"])) <= 1000 and d["cpu"] == int(f["guest_cpu"])
                 for d in h)) for c, f in inj]
hosts = sum(x for c, x in found if c != "guest")
guests = sum(x for c, x in found if c == "guest")
ok = ({key(d) for d in h} == want and all(d["verdict"] == "host" for d in h) and h
      and hosts == 7 and guests == 0)
print("%s %d delays, those of --threshold 1 with the host's verdict (of %d); host causes in: "
      "%d of 7, the guest's: %d of 2" % ("ok" if ok else "FAIL", len(h), len(a), hosts, guests))
EOF
)
case $r in ok*) tap_ok "--host-only: ${r#ok }" ;; *) tap_fail "--host-only: $r $(cat err.txt)" ;; esac
# The table: 10 delays by default, each with its cause.
"$HGTRACE" why a-host.dat a-guest.dat > a.txt 2> err.txt
n=$(grep -c '^#[0-9]* ' a.txt)
c=$(grep -c '^   cause: ' a.txt)
[ "$n" = 10 ] && [ "$c" = 10 ] && tap_ok "the table: 10 delays, 10 causes named" ||
	tap_fail "the table: $n delays, $c causes: $(head -3 a.txt) $(cat err.txt)"
# The preemption as the table says it (cause 1 is on guest CPU 0, thread 5001).
"$HGTRACE" why --threshold 400 a-host.dat a-guest.dat > a400.txt
hp=$(sed -n '1s/.* host_pid=\([0-9]*\).*/\1/p' a.inj)
grep -q "cause: the host, vCPU thread 5001: preempted by stress-ng (pid $hp)" a400.txt &&
	tap_ok "the table names the preemption: vCPU thread 5001 preempted by stress-ng (pid $hp)" ||
	tap_fail "the table does not name the preemption by stress-ng (pid $hp)"

# 1b. A host kernel that leaves switches out of idle out of its trace, on CPUs 1 and 3 (this
# project's VMs do on CPU 1): why must learn each CPU's task from every record's task too.
# shellcheck disable=SC2086
simulate q --seed 5 --duration-ms 400 --embed-sync --no-idle-exit 1 --no-idle-exit 3 $inject ||
	tap_fail "simulate --no-idle-exit"
grep '^injected:' q.out > q.inj
trace-cmd report -t -i q-host.dat -i q-guest.dat > q.tc 2> /dev/null
# switches out of idle per host CPU, as trace-cmd reads them: "0:N 2:N" only
outs=$(awk '$1 == "q-host.dat:" && $2 == "<idle>-0" && / sched_switch: / { n[substr($3, 2, 3) + 0]++ }
	END { for (c = 0; c < 4; c++) if (n[c]) printf "%d:%d ", c, n[c] }' q.tc)
case $outs in
"0:"*" 2:"*" ") [ "$(echo $outs | wc -w)" = 2 ] && tap_ok "--no-idle-exit 1 and 3: switches out of idle only on CPUs 0 and 2 ($outs)" ||
	tap_fail "--no-idle-exit: switches out of idle per CPU: $outs" ;;
*) tap_fail "--no-idle-exit: switches out of idle per CPU: $outs" ;;
esac
"$HGTRACE" why --json --threshold 1 q-host.dat q-guest.dat > q-all.json 2> err.txt &&
	check "no switches out of idle on CPUs 1, 3" q-all.json q.tc q-host.dat q-guest.dat "$pids" \
		--injected q.inj "$expect" ||
	tap_fail "why without switches out of idle: $(cat err.txt)"

# 1c. A halted vCPU thread woken from another host CPU while a host task it never saw come
# in (no switches out of idle on any CPU) holds its own: it waited for that task, not for
# idle. The same causes with every switch out of idle in the trace, for comparison.
woken="--inject woken:300 --inject woken:120 --inject preempt:77 --inject woken:45"
for idle in "" "--no-idle-exit 0 --no-idle-exit 1 --no-idle-exit 2 --no-idle-exit 3"; do
	# shellcheck disable=SC2086
	simulate w --seed 11 --duration-ms 300 --embed-sync $idle $woken || tap_fail "simulate $woken"
	grep '^injected:' w.out > w.inj
	trace-cmd report -t -i w-host.dat -i w-guest.dat > w.tc 2> /dev/null
	n=$(grep -c 'sched_waking: .*KVM' w.tc)
	outs=$(awk '$1 == "w-host.dat:" && $2 == "<idle>-0" && / sched_switch: / { n++ } END { print n + 0 }' w.tc)
	what="woken while a host task holds the CPU, ${idle:+no }switches out of idle ($outs in the trace; $n vCPU threads' wakeups)"
	if [ "$n" != 3 ] || { [ -n "$idle" ] && [ "$outs" != 0 ]; } || { [ -z "$idle" ] && [ "$outs" = 0 ]; }; then
		tap_fail "$what: want 3 wakeups, and switches out of idle only without --no-idle-exit"
	elif "$HGTRACE" why --json --threshold 1 w-host.dat w-guest.dat > w.json 2> err.txt; then
		check "$what" w.json w.tc w-host.dat w-guest.dat "$pids" --injected w.inj "300000 120000 77000 45000"
	else
		tap_fail "$what: why: $(cat err.txt)"
	fi
done

# 2. Through attach (its GUEST option maps the vCPUs).
# shellcheck disable=SC2086
simulate b --seed 8 --duration-ms 300 $inject || tap_fail "simulate"
grep '^injected:' b.out > b.inj
# shellcheck disable=SC2086
"$HGTRACE" attach -s "$off" b-host.dat b-guest.dat $pids > /dev/null 2> err.txt ||
	tap_fail "attach: $(cat err.txt)"
trace-cmd report -t -i b-host.dat -i b-guest.dat > b.tc 2> /dev/null
"$HGTRACE" why --json --threshold 1 b-host.dat b-guest.dat > b-all.json 2> err.txt &&
	check "attached" b-all.json b.tc b-host.dat b-guest.dat "$pids" --injected b.inj "$expect" ||
	tap_fail "why on the attached pair: $(cat err.txt)"
# 2b. --save: the three worst delays' windows (20 ms around each) as pairs, checked against
# trace-cmd's report of the whole pair by check-window.py; why on a saved pair finds the
# delay again, split the same way, and its sync check still calls the pair consistent.
if "$HGTRACE" why --top 3 --save w --save-around 20 b-host.dat b-guest.dat > w.txt 2> w.err; then
	for k in 1 2 3; do
		read -r from to < <(sed -n "s/^#$k .*: *[0-9.]* us, *\([0-9.]*\) -> *\([0-9.]*\)\$/\1 \2/p" w.txt)
		trace-cmd report -t -i "w-$k.dat" -i "w-$k-b-guest.dat" > "w$k.tc" 2> /dev/null
		if python3 "$here/sink/check-window.py" b.tc b-host.dat b-guest.dat "w$k.tc" "w-$k.dat" \
			"w-$k-b-guest.dat" "$from" "$to" 20000000 > check.out 2>&1; then
			while read -r l; do tap_ok "--save, delay $k: ${l#ok }"; done < check.out
		else
			tap_fail "--save, delay $k ($from -> $to): $(tr '\n' ' ' < check.out)"
		fi
		# why on the saved pair finds delay k again, split the same: its block (header and
		# parts) among the saved pair's delays, the guest file's name aside
		"$HGTRACE" why --top 20 "w-$k.dat" "w-$k-b-guest.dat" > "w$k.txt" 2> /dev/null
		blocks() { awk '/^#[0-9]+ / { n++; sub(/^#[0-9]+ /, "") } n { print n "\t" $0 }' "$1"; }
		want=$(blocks w.txt | awk -F'\t' -v k="$k" '$1 == k { print $2 }' | sed "s/b-guest\.dat/w-$k-b-guest.dat/")
		found=0
		for j in $(seq 1 20); do
			[ "$(blocks "w$k.txt" | awk -F'\t' -v k="$j" '$1 == k { print $2 }')" = "$want" ] && found=$j
		done
		if [ -n "$want" ] && [ "$found" != 0 ]; then
			tap_ok "--save, delay $k: why on the saved pair finds it again (its #$found), split the same ($(head -1 <<< "$want" | cut -c1-50))"
		else
			tap_fail "--save, delay $k: not among the saved pair's delays: '$(head -1 <<< "$want")'"
		fi
		sc=$("$HGTRACE" report "w-$k.dat" "w-$k-b-guest.dat" 2>&1 > /dev/null | grep -m1 ': time: ')
		inside=$(sed -n 's/.*, \([0-9]*\) inside, .*/\1/p' <<< "$sc")
		if grep -q ': 0 outside .*(consistent)' <<< "$sc" && [ "${inside:-0}" -gt 1000 ]; then
			tap_ok "--save, delay $k: the saved pair's sync check: consistent, $inside events inside"
		else
			tap_fail "--save, delay $k: sync check of the saved pair: $sc"
		fi
	done
	[ "$(grep -c 'saved w-[123]' w.err)" = 6 ] && tap_ok "--save: six files, each said" ||
		tap_fail "--save said: $(cat w.err)"
else
	tap_fail "why --save: $(cat w.err)"
fi
# A scaled TSC (ratio 1.25): trace-cmd maps such a guest otherwise, so the causes alone.
# shellcheck disable=SC2086
simulate c --seed 9 --duration-ms 300 --scale 1.25,48 --embed-sync $inject ||
	tap_fail "simulate scaled"
grep '^injected:' c.out > c.inj
trace-cmd report -t -i c-host.dat -i c-guest.dat > c.tc 2> /dev/null
"$HGTRACE" why --json --threshold 1 c-host.dat c-guest.dat > c-all.json 2> err.txt &&
	check "scaled TSC" c-all.json c.tc c-host.dat c-guest.dat "$pids" --injected-only \
		--injected c.inj "$expect" ||
	tap_fail "why on the scaled pair: $(cat err.txt)"

# With an event budget (--events: the run's length is not known in advance) the causes
# are spread over its events; before, none was placed.
simulate e --seed 4 --events 150000 --embed-sync --inject preempt:300 --inject irqs:5:20 ||
	tap_fail "simulate --events"
grep '^injected: [a-z]* guest_cpu' e.out > e.inj
trace-cmd report -t -i e-host.dat -i e-guest.dat > e.tc 2> /dev/null
"$HGTRACE" why --json --threshold 1 e-host.dat e-guest.dat > e-all.json 2> err.txt &&
	check "--events 150000" e-all.json e.tc e-host.dat e-guest.dat "$pids" --injected e.inj "300000 100000" ||
	tap_fail "why on the --events session: $(cat err.txt)"

# 3. A pair: from the timer's start to its expiry, per CPU. The burst of cause 2 lies in
# the pair ending where its timer fired: 20 IO_INSTRUCTION exits of 25 us on top.
to=$(sed -n '2s/.* to_ns=\([0-9]*\).*/\1/p' a.inj)
if "$HGTRACE" why --json --from hrtimer_start --to 'hrtimer_expire_entry:now>0' --per-cpu \
	--threshold 100 a-host.dat a-guest.dat > pair.json 2> err.txt; then
	r=$(python3 - pair.json "$to" a.tc << 'EOF'
import json, re, sys
d = json.load(open(sys.argv[1]))
to = int(sys.argv[2])
m = [x for x in d["delays"] if x["kind"] == "pair" and abs(x["to_ns"] - to) <= 1000]
if len(m) != 1:
    print("FAIL %d pairs end at %d" % (len(m), to)); sys.exit()
x = m[0]
# trace-cmd's report: the hrtimer_start on that CPU closest before the end
starts = [int(a + b) for a, b, c in re.findall(
    r"a-guest.dat: .*\[0*%d\]\s+(\d+)\.(\d+): hrtimer_start:()" % x["cpu"], open(sys.argv[3]).read())]
start = max(s for s in starts if s < x["to_ns"])
top = x["parts"][0]
ok = (x["from_ns"] == start and top["what"] == "exit IO_INSTRUCTION"
      and abs(top["ns"] - 500000) <= 1000 and x["verdict"] == "host")
print("%s pair %d -> %d (trace-cmd's hrtimer_start at %d), top %s %d ns of %d pairs found" % (
    "ok" if ok else "FAIL", x["from_ns"], x["to_ns"], start, top["what"], top["ns"],
    d["found"]["pair"]))
EOF
	)
	case $r in ok*) tap_ok "--from/--to --per-cpu: ${r#ok }" ;; *) tap_fail "--from/--to: $r" ;; esac
else
	tap_fail "why --from/--to: $(cat err.txt)"
fi

# 4. Bad options and input: one line, no output.
tap_refuses "an event no input has" "" "$HGTRACE" why --from no_such_event --to sched_switch \
	a-host.dat a-guest.dat
tap_refuses "not a trace file" "" "$HGTRACE" why /etc/passwd
for bad in "--from sched_switch" "--top 0" "--threshold -3" "--per-cpu"; do
	# shellcheck disable=SC2086
	rc=$("$HGTRACE" why $bad a-host.dat > /dev/null 2> err.txt; echo $?)
	[ "$rc" = 2 ] && [ "$(wc -l < err.txt)" = 1 ] &&
		tap_ok "why $bad: exit 2, one line ($(cat err.txt))" ||
		tap_fail "why $bad: exit $rc, $(cat err.txt)"
done
# Damaged files never crash it (nor view) nor hang it: 40 pairs with 6 random bytes flipped in
# each file (an uncompressed session, so the flips reach the events; pair i from seed i, the
# same every run): exit 0 or 1 within 60 s, one error line (after any warnings of parts
# skipped).
simulate f --seed 3 --duration-ms 40 --embed-sync --compression none --inject preempt:100 ||
	tap_fail "simulate"
crashes=0 ones=0 why=""
for i in $(seq 1 40); do
	RANDOM=$i
	for w in host guest; do
		cp "f-$w.dat" "x-$w.dat"
		size=$(stat -c %s "x-$w.dat")
		for j in 1 2 3 4 5 6; do
			# RANDOM read here, not in $(...) nor a pipeline's command: a subshell's
			# RANDOM is seeded anew
			byte=$((RANDOM % 256))
			off=$(((RANDOM * 32768 + RANDOM) % size))
			printf "\\x$(printf %02x $byte)" |
				dd of="x-$w.dat" bs=1 seek=$off conv=notrunc 2> /dev/null
		done
	done
	for cmd in "why --threshold 1" "view -o x.html"; do
		# shellcheck disable=SC2086
		timeout 60 "$HGTRACE" $cmd x-host.dat x-guest.dat > /dev/null 2> err.txt
		rc=$?
		[ $rc = 124 ] && echo "hgtrace: did not end in 60 s" >> err.txt
		# exit 1: one error line, last; before it only warnings of parts skipped (as the
		# report prints them: "hgtrace: FILE: offset ...: ... skipped")
		if [ $rc -gt 1 ] || { [ $rc = 1 ] && { [ "$(grep -vc 'skipped$' err.txt)" != 1 ] ||
			tail -1 err.txt | grep -q 'skipped$' || grep -vq '^hgtrace: ' err.txt; }; }; then
			crashes=$((crashes + 1))
			cp x-host.dat "/tmp/why-crash-$i-host.dat"
			cp x-guest.dat "/tmp/why-crash-$i-guest.dat"
			why="$why [pair $i, ${cmd%% *}: exit $rc, $(tail -1 err.txt)]"
		fi
		[ $rc = 1 ] && ones=$((ones + 1))
	done
done
[ $crashes = 0 ] && tap_ok "40 damaged pairs, why and view: no crash ($ones of 80 runs refused in one line, the others read)" ||
	tap_fail "$crashes of 80 runs on damaged pairs crashed, hung or said more than one line (kept in /tmp/why-crash-*):$why"
tap_done
