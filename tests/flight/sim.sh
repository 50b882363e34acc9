#!/usr/bin/env bash
# The flight recorder on a simulated session fed as a recording in progress
# (lib/feed-recording.py writes its pages into OUTPUT.recording/ step by step, as a
# recorder would), through the same path as record --flight: causes of guest latency are
# injected (a vCPU thread preempted 30 ms by a host task, the guest's own 40 ms, and two
# under the threshold: 8 ms and 0.5 ms of preemption). Checked:
#  - every guest wakeup delay over 15 ms, and rt-app's over 8 ms (a second trigger), as
#    why finds them in the whole files, triggers once and only once, under its trigger, or
#    lies in a time the recorder said no search held (a machine too busy for its searches),
#    and nothing else does; the injected causes over 15 ms are among them with their cause (the
#    host task's pid; inside the guest), those under are not;
#  - preempt>20ms fires once, for the 30 ms preemption, on its vCPU thread, by its task;
#  - each trigger's saved pair: trace-cmd reads both; why on it finds the same delay, its
#    host file carries the trigger's mark, why --flight --top 1 shows that delay, and the
#    merged report's sync check says consistent; view's page carries the trigger;
#  - the disk holds no more than the pages fed in the kept span (window, after, 2 ticks,
#    2 s), two ticks and the lag, though the feed is three times as long;
#  - --max-triggers 2 saves two and says the rest; SIGUSR1 saves a window by hand;
#  - a guest whose pages come after 2.9 s of its host's: its wakeups over 50 ms, as why
#    finds them in the whole pair, trigger once each (a search reads the window again);
#  - a save that takes seconds: the disk keeps to the kept span and what the save has yet
#    to copy, the saved pair holds every event of its window, and the searches go on
#    meanwhile (every wakeup over 15 ms is taken, those of the save's own time too);
#  - searches slower than a tick: the trims go on a quarter tick apart, and the disk
#    holds no more than the pages fed in the kept span and half a tick; a search longer
#    than the kept span leaves before its pages: none is punched out as it reads them;
#    searches further apart than their spans read from where the last one did: no time
#    unsearched, every delay taken; a save among them leaves its copy time between them;
#  - a window saved when it is due, not at the tick after: the disk holds the kept span
#    and half a tick, when the window due spans the kept span;
#  - bad triggers and options: one error line each.
# Usage: sim.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/sim.sh"
command -v trace-cmd > /dev/null || tap_skip_all "trace-cmd is not installed"
command -v python3 > /dev/null || tap_skip_all "python3 is not installed"
tap_workdir

simulate s --seed 5 --duration-ms 6000 --embed-sync --inject preempt:30000 --inject preempt:500 \
	--inject guest:40000 --inject preempt:8000 --file-version 7 --compression none ||
	tap_fail "simulate"
grep '^injected:' s.out > s.inj
[ "$(wc -l < s.inj)" = 4 ] && tap_ok "simulate placed the 4 causes" ||
	tap_fail "simulate placed $(wc -l < s.inj) of 4 causes"

# feed RUN STEPS FLIGHT-ARGS...: the pair fed to OUT/t.dat and OUT/t-g.dat in STEPS steps
# of 0.1 s with hgtrace flight on them, the first once the flight recorder has started;
# its log in RUN.log, the feeder's in RUN.feed. SIGUSR1 goes to the flight recorder when
# $usr1_at steps are fed.
feed() {
	local run=$1 steps=$2
	shift 2
	mkdir "$run"
	FEED_GO=$run.go python3 "$here/lib/feed-recording.py" "$HGTRACE" "$steps" 0.1 \
		s-host.dat:"$run/t.dat" s-guest.dat:"$run/t-g.dat" > "$run.feed" &
	local fp=$!
	# the feeder makes both directories and every CPU file before its first step
	while ! grep -q '^ready' "$run.feed" 2> /dev/null; do
		kill -0 $fp 2> /dev/null || break
		sleep 0.02
	done
	"$HGTRACE" flight --flight-prefix "$run/flight" "$@" "$run/t.dat" "$run/t-g.dat" \
		2> "$run.log" &
	local flp=$!
	# its first line is said once it keeps time (a bad option: it has exited)
	while ! grep -q 'keeping the last' "$run.log" 2> /dev/null && kill -0 $flp 2> /dev/null; do
		sleep 0.02
	done
	touch "$run.go"
	if [ -n "${usr1_at:-}" ]; then
		while ! grep -q "^step $usr1_at " "$run.feed" && kill -0 $fp 2> /dev/null; do
			sleep 0.02
		done
		kill -USR1 $flp
	fi
	wait $fp
	kill -INT $flp
	wait $flp
	echo $? > "$run.rc"
}

# fed_disk RUN STEPS EXTRA FLIGHT-ARGS...: feed RUN (as feed()) while the blocks its CPU
# files hold are sampled every 50 ms (RUN.du); then prints "FLIGHT SAMPLED SPAN KEEP": the
# most the disk held (the flight's own figure, and the samples' largest; bytes), the most
# the feed's log says was fed in any KEEP + EXTRA s (KEEP: the span the flight keeps).
fed_disk() {
	local run=$1 steps=$2 extra=$3 sp
	shift 3
	(
		while [ ! -e "$run.rc" ]; do
			find "$run" -path '*.recording/cpu*' -printf '%b\n' 2> /dev/null |
				awk '{ s += $1 * 512 } END { print s + 0 }'
			sleep 0.05
		done
	) > "$run.du" &
	sp=$!
	feed "$run" "$steps" "$@"
	wait $sp
	python3 - "$run.feed" "$run.log" "$run.du" "$extra" << 'EOF'
import re, sys
steps = [(float(s[2]), int(s[3])) for s in
         (l.split() for l in open(sys.argv[1]) if l.startswith("step "))]
log = open(sys.argv[2]).read()
keep = float(re.search(r"keeping the last ([0-9.]+) s", log).group(1))
flight = float(re.search(r"at most ([0-9.]+) MB of pages on disk", log).group(1)) * 1e6
sampled = max(int(x) for x in open(sys.argv[3]).read().split())
span = 0
for t, fed in steps:
    older = [b for u, b in steps if u <= t - keep - float(sys.argv[4])]
    span = max(span, fed - (max(older) if older else 0))
print("%d %d %d %s" % (flight, sampled, span, keep))
EOF
}

# 1. Wakeups over 15 ms and preemptions over 20 ms, every trigger saved (no hold-off).
feed a 60 --tick 0.1 --window 1 --after 0.2 --holdoff 0 --max-triggers 100 \
	--trigger 'wakeup>15ms' --trigger 'preempt>20ms' --trigger 'wakeup>8ms:rt-app'
[ "$(cat a.rc)" = 0 ] && tap_ok "flight ran to its stop: $(grep -c 'saved a/flight' a.log) files saved" ||
	tap_fail "flight exit $(cat a.rc): $(tail -3 a.log | tr '\n' '|')"
"$HGTRACE" why --json --threshold 8000.001 s-host.dat s-guest.dat > whole.json
r=$(python3 - a.log whole.json s.inj << 'EOF'
import json, re, sys
log = open(sys.argv[1]).read()
whole = json.load(open(sys.argv[2]))["delays"]
inj = [(l.split()[1], dict(x.split("=") for x in l.split()[2:])) for l in open(sys.argv[3])]
ns = lambda s: int(s.replace(".", ""))
trig = re.findall(r"trigger (\d+): (wakeup>15ms|wakeup>8ms:rt-app): (\S+)-(\d+) on g CPU (\d+) "
                  r"late: [0-9.]+ ms, ([0-9.]+) -> ([0-9.]+); cause: (.*); its window", log)
got = [(int(cpu), int(pid), ns(a), ns(b), cause, text)
       for _, text, comm, pid, cpu, a, b, cause in trig]
# over 15 ms: the first trigger's; else rt-app's over 8 ms: the other's
want = sorted((d["cpu"], d["pid"], d["from_ns"], d["to_ns"],
               "wakeup>15ms" if d["to_ns"] - d["from_ns"] > 15000000 else "wakeup>8ms:rt-app")
              for d in whole if d["kind"] == "wakeup" and
              (d["to_ns"] - d["from_ns"] > 15000000 or d["comm"] == "rt-app"))
keys = sorted(g[:4] + g[5:] for g in got)
# a machine too busy for the searches: a delay in a time the recorder said no search's span
# held may go untaken (said, so not silently)
gaps = [(ns(a), ns(z)) for a, z in re.findall(r"behind: the recording from ([0-9.]+) to ([0-9.]+) ", log)]
said = [w for w in want if w not in keys and any(w[2] < z and w[3] > a for a, z in gaps)]
ok = sorted(keys + said) == want and len(set(keys)) == len(keys) and len(want) > 6
print("%s %d wakeup triggers, %d distinct, %d of them rt-app's under 15 ms; why over the whole "
      "files: %d over 15 ms or rt-app's over 8 ms (%d not taken, in %d times said unsearched)" %
      ("ok" if ok else "FAIL", len(got), len(set(keys)),
       sum(k[4] != "wakeup>15ms" for k in keys), len(want), len(said), len(gaps)))
got = [g for g in got if g[5] == "wakeup>15ms"]
# the injected causes: over 15 ms, found with their cause; under, not found
for c, f in inj:
    cause_ns, to = int(f["cause_ns"]), int(f["to_ns"])
    mine = [g for g in got if g[0] == int(f["guest_cpu"]) and abs(g[3] - to) <= 1000]
    if cause_ns > 15000000:
        want_cause = ("preempted by stress-ng (pid %s)" % f["host_pid"]) if c == "preempt" \
            else "inside the guest"
        good = len(mine) == 1 and mine[0][4] == want_cause
        print("%s injected %s of %.3f ms on CPU %s: triggered %d time(s), cause '%s'" %
              ("ok" if good else "FAIL", c, cause_ns / 1e6, f["guest_cpu"], len(mine),
               mine[0][4] if mine else "-"))
    else:
        print("%s injected %s of %.3f ms (under 15 ms): %d trigger(s)" %
              ("ok" if not mine else "FAIL", c, cause_ns / 1e6, len(mine)))
pre = re.findall(r"trigger \d+: preempt>20ms: vCPU (\d+) of g \(thread (\d+)\) preempted, "
                 r"longest by stress-ng \(pid (\d+)\): ([0-9.]+) ms", log)
p30 = [f for c, f in inj if c == "preempt" and int(f["cause_ns"]) > 20000000][0]
good = len(pre) == 1 and pre[0][0] == p30["guest_cpu"] and pre[0][2] == p30["host_pid"] and \
    abs(float(pre[0][3]) * 1e6 - int(p30["cause_ns"])) <= 2000
print("%s preempt>20ms: %d trigger(s) %s; injected: vCPU %s by pid %s for %.3f ms" %
      ("ok" if good else "FAIL", len(pre), pre, p30["guest_cpu"], p30["host_pid"],
       int(p30["cause_ns"]) / 1e6))
EOF
)
while read -r l; do
	case $l in ok*) tap_ok "${l#ok }" ;; *) tap_fail "$l" ;; esac
done <<< "$r"

# Each saved pair: trace-cmd reads it, why finds the trigger's delay in it, and the host
# file carries the mark.
n=0 good=0 bad=""
for h in a/flight-[0-9]*.dat; do
	case $h in *-g.dat) continue ;; esac
	k=${h#a/flight-}
	k=${k%.dat}
	n=$((n + 1))
	line=$(grep "^hgtrace flight: trigger $k: wakeup>" a.log | head -1)
	from=$(echo "$line" | sed -n 's/.* \([0-9]*\)\.\([0-9]*\) -> .*/\1\2/p')
	to=$(echo "$line" | sed -n 's/.* -> \([0-9]*\)\.\([0-9]*\);.*/\1\2/p')
	hn=$(trace-cmd report "$h" 2> /dev/null | grep -c ' sched_switch: ')
	gn=$(trace-cmd report "a/flight-$k-g.dat" 2> /dev/null | grep -c ' sched_switch: ')
	mark=$(trace-cmd dump --options "$h" 2> /dev/null | grep -c "hgtrace flight: trigger $k: ")
	found=1 first=1
	if [ -n "$from" ]; then
		"$HGTRACE" why --json --threshold 8000.001 "$h" "a/flight-$k-g.dat" > w.json
		found=$(python3 -c 'import json, sys; print(sum(d["from_ns"] == int(sys.argv[2]) for d in json.load(open(sys.argv[1]))["delays"]))' w.json "$from")
		# why --flight: the marked delay first, whatever its rank
		"$HGTRACE" why --json --flight --top 1 "$h" "a/flight-$k-g.dat" > wf.json
		first=$(python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print(int(r["flight_first"] and r["flight"].startswith("trigger %s: " % sys.argv[3]) and r["delays"][0]["from_ns"] == int(sys.argv[2]) and (r["flight_from_ns"], r["flight_to_ns"]) == (int(sys.argv[2]), int(sys.argv[4]))))' wf.json "$from" "$k" "$to")
	fi
	# the merged report's sync check: consistent (the saved span of every CPU is marked)
	sync=$("$HGTRACE" report "$h" "a/flight-$k-g.dat" 2>&1 > /dev/null | grep -c 'sync check: .* 0 outside .*(consistent)')
	if [ "$hn" -gt 0 ] && [ "$gn" -gt 0 ] && [ "$mark" -ge 1 ] && [ "$found" = 1 ] &&
		[ "$first" = 1 ] && [ "$sync" = 1 ]; then
		good=$((good + 1))
	else
		bad="$bad $k(host $hn, guest $gn events, mark $mark, delay found $found, first with --flight $first, consistent $sync)"
	fi
done
[ "$n" -ge 7 ] && [ "$good" = "$n" ] &&
	tap_ok "each of the $n saved pairs: trace-cmd reads both, why finds the trigger's delay in it, the host file is marked, why --flight --top 1 shows that delay, the report's sync check says consistent" ||
	tap_fail "saved pairs: $good of $n good:$bad"
# view of the first: its page carries the trigger (the band and the line above the delays)
"$HGTRACE" view -o f1.html a/flight-1.dat a/flight-1-g.dat 2> /dev/null
t1=$(sed -n 's/^hgtrace flight: trigger 1: \([a-z>0-9:-]*\): .*its window.*/\1/p' a.log)
grep -qF "\"flight\":{\"title\":\"trigger 1: $t1\"" f1.html &&
	tap_ok "view of flight-1: the page carries trigger 1 ($t1) to highlight" ||
	tap_fail "view of flight-1: no trigger 1 ($t1) in the page: $(grep -o '"flight":[^,]*' f1.html)"

# 2. --max-triggers 2: two saved, the others said and not saved; SIGUSR1 by hand.
# Fed over 10 s (the kept span is 3.4 s), which the disk check below needs.
feed b 100 --tick 0.1 --window 1 --after 0.2 --holdoff 0 --max-triggers 2 \
	--trigger 'wakeup>15ms'
saved=$(grep -c '^hgtrace flight: trigger [0-9]*: saved' b.log)
notsaved=$(grep -c '^hgtrace flight: not saved (--max-triggers reached)' b.log)
[ "$saved" = 2 ] && [ "$notsaved" = 4 ] && [ "$(ls b/flight-*.dat | wc -l)" = 4 ] &&
	tap_ok "--max-triggers 2: 2 windows saved, the other $notsaved triggers said as not saved" ||
	tap_fail "--max-triggers 2: $saved saved, $notsaved not: $(ls b)"
# The disk: only what was fed in the kept span before the last step (the recorder's lag on
# top), though the feed lasted longer than that span.
r=$(python3 - b.feed b.log b/t.dat.recording b/t-g.dat.recording << 'EOF'
import os, re, sys
steps = [l.split() for l in open(sys.argv[1]) if l.startswith("step ")]
log = open(sys.argv[2]).read()
keep = float(re.search(r"keeping the last ([0-9.]+) s", log).group(1))
lag = float(re.search(r"worst lag ([0-9.]+) s", log).group(1))
end = float(steps[-1][2])
total = int(steps[-1][3])
since = [int(s[3]) for s in steps if float(s[2]) <= end - keep - 0.2 - lag]
bound = total - (since[-1] if since else 0)
disk = 0
for d in sys.argv[3:]:
    for f in os.listdir(d):
        if f.startswith("cpu"):
            disk += os.stat(os.path.join(d, f)).st_blocks * 512
ok = disk <= bound and bound < total * 0.8
print("%s %.1f MB of pages on disk at the end, at most %.1f MB fed in the last %.1f s "
      "(kept %.1f s + 2 ticks + lag %.3f s) of %.1f MB in %.1f s" %
      ("ok" if ok else "FAIL", disk / 1e6, bound / 1e6, keep + 0.2 + lag, keep, lag,
       total / 1e6, end - float(steps[0][2])))
EOF
)
case $r in ok*) tap_ok "bounded: ${r#ok }" ;; *) tap_fail "bounded: $r" ;; esac

usr1_at=10 feed c 20 --tick 0.1 --window 1 --after 0.2 --trigger 'wakeup>900ms'
grep -q '^hgtrace flight: trigger 1: by hand' c.log && [ -s c/flight-1.dat ] &&
	[ -s c/flight-1-g.dat ] && [ "$(trace-cmd report c/flight-1-g.dat 2> /dev/null | wc -l)" -gt 100 ] &&
	tap_ok "SIGUSR1: a window saved by hand, trace-cmd reads it" ||
	tap_fail "SIGUSR1: $(tr '\n' '|' < c.log)"

# 2b. --search-max-mb 1: each search reads the newest 1 MB of pages at most (the window is
# about 9 MB), what it leaves that no search read is said (less than was recorded: a page
# is counted once), and the summary's count of it is the sum of what was said.
feed d 60 --tick 0.1 --window 1 --after 0.2 --holdoff 0 --trigger 'wakeup>15ms' --search-max-mb 1
r=$(python3 - d.log << 'EOF'
import re, sys
log = open(sys.argv[1]).read()
m = re.search(r"cost: (\d+) searches, .* ([0-9.]+) MB of pages searched of ([0-9.]+) MB recorded, "
              r"([0-9.]+) MB left unsearched behind", log)
said = [float(x) for x in re.findall(r"behind: ([0-9.]+) MB of pages went unsearched", log)]
if not m:
    print("FAIL no summary: %s" % log[-300:]); sys.exit()
n, searched, recorded, left = int(m.group(1)), float(m.group(2)), float(m.group(3)), float(m.group(4))
once = log.count("the window holds more than a search reads")
# what no search read is some of what was recorded, once
ok = (n >= 20 and searched <= n * 1.0486 + 0.05 and 0 < left < recorded and said and
      abs(sum(said) - left) <= 0.05 * len(said) + 0.05 and once <= 1)
print("%s %d searches read %.1f MB (at most 1 MiB each: %.1f MB) of %.1f MB recorded; %.1f MB "
      "left unsearched, said in %d lines (%.1f MB)" %
      ("ok" if ok else "FAIL", n, searched, n * 1.0486, recorded, left, len(said), sum(said)))
EOF
)
case $r in ok*) tap_ok "--search-max-mb 1: ${r#ok }" ;; *) tap_fail "--search-max-mb 1: $r" ;; esac

# 2c. A guest whose pages come late (its agent slow to start): the host's come alone for
# 2.9 s of a 3 s session, then the guest's of those 2.9 s at once. The searches of the host
# alone have moved on; the first that holds the guest reads the window again, so the
# guest's delays from before then are taken: every guest wakeup over 50 ms that why finds
# in the whole pair (two, one the injected 60 ms) triggers, once.
"$HGTRACE" simulate -o l --duration-ms 3000 --vcpus 2 --host-cpus 2 --seed 4 --embed-sync \
	--inject guest:60000 --file-version 7 --compression none > l.out || tap_fail "simulate l"
mkdir e
FEED_LATE=l-guest.dat:29 python3 "$here/lib/feed-recording.py" "$HGTRACE" 30 0.1 \
	l-host.dat:e/t.dat l-guest.dat:e/t-g.dat > e.feed &
fp=$!
while ! grep -q '^ready' e.feed 2> /dev/null && kill -0 $fp 2> /dev/null; do sleep 0.02; done
# --flush: the longest any event waits for its page (the feeder's "lag"), 50 ms at least
flush=$(awk '/^lag / && $3 > m { m = $3 } END { n = int((m + 9999999) / 10000000); printf "%.2f", (n < 5 ? 5 : n) / 100 }' e.feed)
"$HGTRACE" flight --flight-prefix e/flight --window 3 --after 0.1 --tick 0.1 --flush "$flush" \
	--holdoff 0 --max-triggers 100 --trigger 'wakeup>50ms' e/t.dat e/t-g.dat 2> e.log &
flp=$!
wait $fp
kill -INT $flp
wait $flp
rc=$?
"$HGTRACE" why --json --threshold 50000.001 l-host.dat l-guest.dat > l.json
r=$(python3 - e.log l.json << 'EOF'
import json, re, sys
ns = lambda s: int(s.replace(".", ""))
got = [(int(c), ns(a), ns(b)) for c, a, b in re.findall(
    r"trigger \d+: wakeup>50ms: \S+ on g CPU (\d+) late: [0-9.]+ ms, ([0-9.]+) -> ([0-9.]+);",
    open(sys.argv[1]).read())]
want = sorted((d["cpu"], d["from_ns"], d["to_ns"]) for d in json.load(open(sys.argv[2]))["delays"]
              if d["kind"] == "wakeup")
print("%s %d triggers, %d distinct; why over the whole pair: %d wakeups over 50 ms" %
      ("ok" if sorted(got) == want and len(set(got)) == len(got) and want else "FAIL",
       len(got), len(set(got)), len(want)))
EOF
)
case $r in
ok*) [ "$rc" = 0 ] && tap_ok "a guest whose pages come late: ${r#ok }" ||
	tap_fail "a guest whose pages come late: flight exit $rc" ;;
*) tap_fail "a guest whose pages come late: $r: $(grep -c 'trigger [0-9]*: wakeup' e.log) lines" ;;
esac

# 2d. A save that takes seconds (its copy paced at 0.5 MB/s: HGT_FLIGHT_SAVE_MBPS, a slow
# disk) while the feed goes on for 15 s: the pages it has copied, and those newer than its
# window but older than the kept span, are punched out meanwhile; those it has yet to copy
# are not. Checked against the feed's own log: the most the disk held (the flight's figure
# and this test's own samples of the CPU files' blocks) is no more than what was fed in
# the kept span and 0.3 s, plus the window (fed by 0.7 s after the SIGUSR1: the window ends
# at the next tick, the after time, the flush and a tick); each CPU of the saved pair, as
# trace-cmd reads it, is the source's own events from its first on, none missing.
read -r flight sampled span keep < <(HGT_FLIGHT_SAVE_MBPS=0.5 usr1_at=10 fed_disk f 150 0.3 \
	--tick 0.1 --window 1 --after 0.2 --flush 0.2 --trigger 'wakeup>900ms')
r=$(python3 - f.feed f.log "$flight" "$sampled" "$span" "$keep" << 'EOF'
import re, sys
steps = {int(s[1]): int(s[3]) for s in
         (l.split() for l in open(sys.argv[1]) if l.startswith("step "))}
took = max([float(x) for x in re.findall(r"behind: a tick took ([0-9.]+) s",
                                         open(sys.argv[2]).read())] or [0])
flight, sampled, span = (int(x) for x in sys.argv[3:6])
window = steps[17]
bound = span + window
ok = took >= 6 and flight <= bound and sampled <= bound and window > 4e6
print("%s the save took %.1f s; disk at most %.1f MB (flight's figure), %.1f MB (sampled), "
      "against %.1f MB fed in the kept span (%s s) and 0.3 s and %.1f MB of the window" %
      ("ok" if ok else "FAIL", took, flight / 1e6, sampled / 1e6, span / 1e6, sys.argv[6],
       window / 1e6))
EOF
)
case $r in ok*) tap_ok "a slow save: ${r#ok }" ;; *) tap_fail "a slow save: $r" ;; esac
r=$(python3 - f/flight-1.dat s-host.dat f/flight-1-g.dat s-guest.dat << 'EOF'
import re, subprocess, sys
def by_cpu(path):
    out = subprocess.run(["trace-cmd", "report", "-t", path], capture_output=True,
                         text=True).stdout
    by = {}
    for l in out.splitlines():
        m = re.search(r"\[(\d{3})\]", l)
        if m:
            by.setdefault(int(m.group(1)), []).append(l)
    return by
bad, n, cpus = [], 0, 0
for saved, src in zip(sys.argv[1::2], sys.argv[2::2]):
    got, want = by_cpu(saved), by_cpu(src)
    for c in sorted(want):
        g = got.get(c, [])
        n += len(g)
        cpus += 1
        if not g or g != want[c][:len(g)]:
            k = next((i for i, (x, y) in enumerate(zip(g, want[c])) if x != y), len(g))
            bad.append("%s CPU %d: %d events, the source's from its first differ at %d" %
                       (saved, c, len(g), k))
print("%s %d events on %d CPUs%s" % ("FAIL" if bad or n < 50000 else "ok", n, cpus,
                                      ": " + "; ".join(bad) if bad else ""))
EOF
)
case $r in
ok*) tap_ok "a slow save's pair: each CPU the source's events from its first, none missing: ${r#ok }" ;;
*) tap_fail "a slow save's pair: $r" ;;
esac

# 2e. Searches during a save longer than the window: the first wakeup over 15 ms (1.2 s in)
# saves its window, paced at 4 MB/s (about 14 MB: 3.5 s, against a window less the pages'
# lag of 0.7 s); the second trigger (the injected guest delay, 3.6 s in: after the 1 s
# hold-off) is taken during that save, and saved after it; --max-triggers 2 saves no
# other. Every wakeup over 15 ms that why finds in the whole files is still taken, once
# (a trigger, or "not saved"), those of the save's time too, and no time is said to be in
# no search's span.
HGT_FLIGHT_SAVE_MBPS=4 feed g 60 --tick 0.1 --window 1 --after 0.2 --flush 0.2 --holdoff 1 \
	--max-triggers 2 --trigger 'wakeup>15ms'
"$HGTRACE" why --json --threshold 15000.001 s-host.dat s-guest.dat > g.json
r=$(python3 - g.log g.json "$here/flight" << 'EOF'
import re, sys
sys.path.insert(0, sys.argv[3])
from flightlog import span_said, wakeups_taken, wakeups_why
log = open(sys.argv[1]).read()
got, want = wakeups_taken(log, "wakeup>15ms"), wakeups_why(sys.argv[2])
took = max([float(x) for x in re.findall(r"behind: a tick took ([0-9.]+) s", log)] or [0])
gaps, unsearched = span_said(log)
saved = len(re.findall(r"trigger \d+: saved", log))
# the second taken while the first was being saved (f->tr grows during a save)
during = "trigger 2: wakeup" in log and log.find("trigger 2: wakeup") < log.find("trigger 1: saved")
ok = (sorted(got) == want and len(set(got)) == len(got) and len(want) >= 5 and took >= 2 and
      not gaps and unsearched == 0 and saved == 2 and during)
print("%s the longest tick took %.1f s; %d wakeups over 15 ms taken (%d distinct), why over "
      "the whole files: %d; %d windows saved, the second taken %s the first was saved; %d lines "
      "of time in no search's span, %s s unsearched" %
      ("ok" if ok else "FAIL", took, len(got), len(set(got)), len(want), saved,
       "while" if during else "not while", gaps, unsearched))
EOF
)
case $r in ok*) tap_ok "searches during a slow save: ${r#ok }" ;; *) tap_fail "searches during a slow save: $r" ;; esac

# 2f. Searches slower than a tick (HGT_FLIGHT_SEARCH_MS: each search 1.5 s longer, a slow
# disk or machine; ticks of 1 s): the trimmer's thread waits for none, and trims a quarter
# tick apart, each up to its last sample before the kept span, so the disk holds the kept
# span and half a tick. Trimmed by the ticks (once a tick, or after each search), it holds
# a tick or the search's time more. Checked against the feed's own log, as in 2d: the most
# the disk held (the flight's figure, taken just before each trim, and this test's own
# samples) is no more than what was fed in the kept span, half a tick and 0.3 s; and the
# searches did take 1.5 s each.
read -r flight sampled span keep < <(HGT_FLIGHT_SEARCH_MS=1500 fed_disk h 150 0.8 --tick 1 \
	--window 1 --after 0.5 --flush 0.5 --trigger 'wakeup>900ms')
r=$(python3 - h.feed h.log "$flight" "$sampled" "$span" "$keep" << 'EOF'
import re, sys
fed = max(int(l.split()[3]) for l in open(sys.argv[1]) if l.startswith("step "))
n, ran = re.search(r"cost: (\d+) searches, [0-9.]+ s of CPU in ([0-9.]+) s",
                   open(sys.argv[2]).read()).groups()
flight, sampled, span = (int(x) for x in sys.argv[3:6])
# trims did happen (more was fed than twice the bound); the searches took their 1.5 s each
ok = flight <= span and sampled <= span and fed > 2 * span and int(n) <= float(ran) / 1.5 + 1
print("%s disk at most %.1f MB (flight's figure), %.1f MB (sampled), against %.1f MB fed "
      "in the kept span (%s s), half a tick and 0.3 s, of %.1f MB fed; %s searches in %s s" %
      ("ok" if ok else "FAIL", flight / 1e6, sampled / 1e6, span / 1e6, sys.argv[6],
       fed / 1e6, n, ran))
EOF
)
case $r in ok*) tap_ok "slow searches: ${r#ok }" ;; *) tap_fail "slow searches: $r" ;; esac

# 2g. A search that reads its pages for longer than the kept span leaves before them
# (HGT_FLIGHT_SEARCH_MS=5000 between the head's writing and the reading; the kept span is
# 6 s, the window and a tick 2 s: from 4 s in, the trimmer would punch out the oldest
# pages the search reads): the trimmer keeps them until it is done. Checked: no search
# says its pages were punched out as it read them, none failed, and the searches did take
# their 5 s (so two or more read while the trimmer ran past 4 s).
HGT_FLIGHT_SEARCH_MS=5000 feed p 150 --tick 1 --window 1 --after 0.5 --flush 0.5 \
	--trigger 'wakeup>900ms'
r=$(python3 - p.log << 'EOF'
import re, sys
log = open(sys.argv[1]).read()
n, ran = re.search(r"cost: (\d+) searches, [0-9.]+ s of CPU in ([0-9.]+) s", log).groups()
punched = log.count("punched out as it read them")
failed = log.count("a search failed")
ok = not punched and not failed and 3 <= int(n) <= float(ran) / 5 + 1
print("%s %s searches in %s s; %d said their pages were punched out as they read them, "
      "%d failed" % ("ok" if ok else "FAIL", n, ran, punched, failed))
EOF
)
case $r in
ok*) tap_ok "a search longer than the kept span leaves: ${r#ok }" ;;
*) tap_fail "a search longer than the kept span leaves: $r" ;;
esac

# 2i. Searches further apart than their spans (HGT_FLIGHT_SEARCH_MS=1800: each search 1.8 s
# longer, ticks of 0.5 s, a window of 1 s and a lag of 0.7 s: each span about 1.5 s; the
# kept span, 6.7 s, holds the pages back to the last search's): each reads from where the
# last one did, so no time is said to be in no search's span and every wakeup over 15 ms
# that why finds in the whole files is taken once (a trigger, or "not saved"); the save of
# the one trigger kept leaves its copy time between searches: a tick between two searches
# (so a tick of N searches takes N * 1.8 s and N - 1 ticks at least), not one search per
# step of the copy. Checked: searches did take 1.8 s each.
HGT_FLIGHT_SEARCH_MS=1800 feed i 60 --tick 0.5 --window 1 --after 2.5 --flush 0.2 --holdoff 0 \
	--max-triggers 1 --trigger 'wakeup>15ms'
r=$(python3 - i.log g.json "$here/flight" << 'EOF'
import re, sys
sys.path.insert(0, sys.argv[3])
from flightlog import span_said, wakeups_taken, wakeups_why
log = open(sys.argv[1]).read()
got, want = wakeups_taken(log, "wakeup>15ms"), wakeups_why(sys.argv[2])
ticks = [(float(t), int(n))
         for t, n in re.findall(r"behind: a tick took ([0-9.]+) s \((\d+) search", log)]
# the searches took their 1.8 s each (a tick is said only when it is the slowest yet)
n, ran = (float(x) for x in re.search(r"cost: (\d+) searches, [0-9.]+ s of CPU in ([0-9.]+) s",
                                      log).groups())
# a tick of N searches took N * 1.8 s and a tick between each two at least; searches at
# each step of a save's copy have no tick between them
crowded = [(t, k) for t, k in ticks if k > (t + 0.5) / 2.3]
most = max(ticks, key=lambda x: x[1], default=(0, 0))
gaps, unsearched = span_said(log)
saved = len(re.findall(r"trigger \d+: saved", log))
ok = (sorted(got) == want and len(set(got)) == len(got) and len(want) >= 5 and
      3 <= n <= ran / 1.8 + 1 and not gaps and unsearched == 0 and saved == 1 and not crowded)
print("%s %d searches in %.1f s; %d wakeups over 15 ms taken (%d distinct), why over the "
      "whole files: %d; %d times said in no search's span, %s s unsearched; %d saved; the most "
      "searches in a tick %d (in %.1f s), %d ticks with searches less than a tick apart" %
      ("ok" if ok else "FAIL", n, ran, len(got), len(set(got)), len(want), gaps, unsearched,
       saved, most[1], most[0], len(crowded)))
EOF
)
case $r in ok*) tap_ok "searches further apart than their spans: ${r#ok }" ;; *) tap_fail "searches further apart than their spans: $r" ;; esac

# 2h. A window saved when it is due, not at the tick after: the trimmer holds a window
# until its save copies it, and with --flush 1 --tick 1 a window due (1 s, two ticks and
# the flush before the SIGUSR1; the after time, the flush and a tick after it) spans the
# kept span (6.1 s) exactly. SIGUSR1 when 10 s are fed, ticks a tick apart from it (a tick
# takes it): due 2.1 s after, 0.9 s before the next tick (the search before the save takes
# some 50 ms). Checked against the feed's own log, as in 2d: the disk (the flight's figure
# and this test's own samples) holds no more than was fed in the kept span, half a tick
# and 0.1 s; the window was saved.
read -r flight sampled span keep < <(usr1_at=100 fed_disk k 150 0.6 --tick 1 --window 1 \
	--after 0.1 --flush 1 --trigger 'wakeup>900ms')
saved=$(grep -c 'trigger 1: saved' k.log)
if [ "$flight" -le "$span" ] && [ "$sampled" -le "$span" ] && [ "$saved" = 1 ] &&
	[ "$(cat k.rc)" = 0 ]; then
	tap_ok "a window saved when due: disk at most $flight B (flight's figure), $sampled B (sampled), against $span B fed in the kept span ($keep s), half a tick and 0.1 s; $saved saved"
else
	tap_fail "a window saved when due: disk at most $flight B (flight's figure), $sampled B (sampled), against $span B fed in the kept span ($keep s), half a tick and 0.1 s; $saved saved; exit $(cat k.rc)"
fi

# 3. Bad input: one line each.
for bad in 'wakeup>5' 'wakeup=5ms' 'pair:sched_switch>5ms' 'exit>5ms' 'bogus>1ms' \
	'wakeup>5ms:a-name-longer-than-15'; do
	"$HGTRACE" flight --trigger "$bad" a/t.dat > out.txt 2>&1
	rc=$?
	if [ $rc = 2 ] && [ "$(wc -l < out.txt)" = 1 ] && grep -q "trigger '$bad'" out.txt; then
		tap_ok "--trigger '$bad': exit 2, one line: $(cat out.txt)"
	else
		tap_fail "--trigger '$bad': exit $rc: $(tr '\n' '|' < out.txt)"
	fi
done
"$HGTRACE" flight --trigger 'wakeup>5ms' nothing.dat > out.txt 2>&1
rc=$?
[ $rc = 1 ] && [ "$(wc -l < out.txt)" = 1 ] && grep -q 'no recording in progress' out.txt &&
	tap_ok "flight on no recording: exit 1, one line: $(cat out.txt)" ||
	tap_fail "flight on no recording: exit $rc: $(cat out.txt)"
"$HGTRACE" flight --window 2 --trigger 'wakeup>5ms' --window 5x a/t.dat > out.txt 2>&1
rc=$?
[ $rc = 2 ] && [ "$(wc -l < out.txt)" = 1 ] && grep -q -- "--window '5x'" out.txt &&
	tap_ok "--window 5x: exit 2, one line" || tap_fail "--window 5x: exit $rc: $(cat out.txt)"
# a trigger as long as the window is never found whole in one: refused; a marker is one
# record, whatever the window
"$HGTRACE" flight --window 0.5 --trigger 'marker:x' --trigger 'preempt>500ms' a/t.dat > out.txt 2>&1
rc=$?
[ $rc = 2 ] && [ "$(wc -l < out.txt)" = 1 ] &&
	grep -q "trigger 'preempt>500ms': not shorter than the window (0.500 s)" out.txt &&
	tap_ok "--window 0.5 --trigger 'preempt>500ms': exit 2, one line: $(cat out.txt)" ||
	tap_fail "--window 0.5 --trigger 'preempt>500ms': exit $rc: $(cat out.txt)"
"$HGTRACE" flight --window 0.5 --trigger 'marker:x' --trigger 'preempt>499ms' nothing.dat > out.txt 2>&1
rc=$?
[ $rc = 1 ] && grep -q 'no recording in progress' out.txt &&
	tap_ok "--window 0.5 --trigger 'marker:x' --trigger 'preempt>499ms': taken (then: no recording)" ||
	tap_fail "--window 0.5, a marker and preempt>499ms: exit $rc: $(cat out.txt)"
tap_done
