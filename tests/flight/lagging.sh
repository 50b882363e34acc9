#!/usr/bin/env bash
# The flight recorder when one CPU's pages come late: a guest agent writes a CPU's partial
# page up to its flush interval after the events in it, so a live search can hold a CPU's
# newer pages and not yet another's. A task whose wakeup is seen on one CPU and whose run
# is on the CPU not yet written looks woken and not running until it next runs where the
# pages are (seen in guest-flight: a 50 ms "delay" of the agent's thread that no saved file
# held). Recorded here on this machine's real tracefs: task B reads a pipe; A, on CPU 1,
# writes to it every 5 ms and moves B between CPUs 0 and 1 while it sleeps; nice 19 busy
# loops keep both CPUs from idle; twice (A's first step, and 1 s in), a SCHED_FIFO loop
# holds CPU 0 while B is woken there and 10 ms after (a real delay). The recording keeps
# A's, B's and the hog's events only and begins just before A's first step, so the first
# delay lies in the recording's first pages (a search must take it: no page before them).
# Steps wait on events (a child's state, a pipe), never on a sleep's length: a busy machine
# may run any step late. The recording is fed to hgtrace flight as one in progress, with
# one CPU's pages 8 steps of 50 late, and --flush the longest any event then waits for its
# page (as a recorder's flush interval bounds it). Checked:
#  - the premise, by trace-cmd's reading: B was woken from CPU 1 onto CPU 0 again and
#    again; the hog ran twice for 9 ms or more on CPU 0 (from its switch in to its sleep: a
#    task of a higher class taking the CPU meanwhile does not end the run), and each time one
#    delay of B there (why on the whole file) overlaps that run by 5 ms (a busy machine gives
#    B other delays of its own); the first begins before some CPU's first page ends (the
#    file's pages); when not, the line says what the hog and B did around the two runs;
#  - CPU 0's pages late (the window's end: B's run on CPU 0 not come yet) and CPU 1's (the
#    window's start: a wakeup on CPU 1 in its first page, B's run on CPU 0 in a page
#    before the window): every trigger of wakeup>3ms:B is a delay why finds in the whole
#    file (its CPU and times to the ns), the hog's two among them, each once, and every such
#    delay that ends the flush interval and a tick before the last record is one, or lies
#    in a time the recorder said no search held (a machine too busy for its searches: the
#    hog's too);
#  - the same recording fed as the host beside a (simulated) guest, with no GUEST option
#    to say the guest's vCPU threads (as a session's first searches see it): B is a host
#    task, and wakeup>3ms fires for the guest's tasks only; also in the searches before
#    the guest's recording begins (20 steps late), which hold the host alone (seen in
#    guest-flight on a loaded machine: a host task's 94 ms wakeup taken as a guest's).
# Usage: lagging.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/record.sh"
why=$(tracefs_ready) || tap_skip_all "$why"
[ "$(nproc)" -ge 2 ] || tap_skip_all "one CPU: nothing moves between CPUs"
tap_workdir

cat > work.py << 'EOF'
import os, time
DUR = 4.0
r, w = os.pipe()
hr, hw = os.pipe()
rr, ready = os.pipe()


def child(fn):
    pid = os.fork()
    if pid == 0:  # the writers' ends stay with A alone: their readers see the end
        os.close(w)
        os.close(hw)
        fn()
        os._exit(0)
    return pid


def spin(cpu):
    os.sched_setaffinity(0, {cpu})
    os.nice(19)
    end = time.monotonic() + DUR + 0.3
    while time.monotonic() < end:
        pass


def wait_state(pid, state):  # S: in its blocking read (a write wakes it); R: running
    while True:
        with open("/proc/%d/stat" % pid) as f:
            if f.read().rsplit(")", 1)[1].split()[0] == state:
                return
        os.sched_yield()


def hog():  # each time woken: holds CPU 0 until told B is woken, then 10 ms more
    os.sched_setaffinity(0, {0})
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))
    os.write(ready, b"h")
    while os.read(hr, 1):
        os.set_blocking(hr, False)
        while True:
            try:
                os.read(hr, 1)  # B's wakeup done (or the end)
                break
            except BlockingIOError:
                pass
        os.set_blocking(hr, True)
        end = time.monotonic() + 0.01
        while time.monotonic() < end:
            pass


def reader():
    os.write(ready, b"b")
    while os.read(r, 1):
        pass


kids = [child(lambda: spin(0)), child(lambda: spin(1)), child(hog)]
h = kids[2]
b = child(reader)
os.sched_setaffinity(0, {1})
got = b""
while len(got) < 2:  # the hog is SCHED_FIFO on CPU 0, and B about to read
    got += os.read(rr, 2)
print(os.getpid(), b, h, flush=True)  # what the recording keeps: these three's events
with open("go") as f:  # the recording's command, once the recording has begun
    f.read(1)
i = 0
end = time.monotonic() + DUR
while time.monotonic() < end:
    if i:
        time.sleep(0.005)
    cpu = i % 2
    if i in (0, 200):  # B woken on CPU 0 while the hog holds it
        cpu = 0
        wait_state(h, "S")
        wait_state(b, "S")
        os.write(hw, b"h")
        wait_state(h, "R")
    os.sched_setaffinity(b, {cpu})
    os.write(w, b"x")
    if i in (0, 200):  # B left on CPU 0 until it has run there (after the hog: a busy
        os.write(hw, b"e")  # CPU 0 may run others first), and read, and sleeps again
        wait_state(b, "S")
    i += 1
os.close(w)
os.close(hw)
for k in kids + [b]:
    os.waitpid(k, 0)
print(b, i, h)
EOF
# the workload is set up before the recording, and its first step is the hog's: its delay
# of B lies in the recording's first pages (the recording's command says go, then waits)
# (only the events of A, B and the hog: another's would fill the first pages first)
# (a workload that dies ends what reads its output, and the command's wait: no hang)
mkfifo go
exec 4< <(exec python3 work.py 2> work.err)
wp=$!
read -r pa pb ph <&4
on="pid == $pa || pid == $pb || pid == $ph"
sw="prev_pid == $pa || prev_pid == $pb || prev_pid == $ph || next_pid == $pa || next_pid == $pb || next_pid == $ph"
"$HGTRACE" record --compression none -e sched:sched_waking -f "$on" -e sched:sched_wakeup -f "$on" \
	-e sched:sched_switch -f "$sw" -o rec.dat \
	-- sh -c "exec 3<> go; echo g >&3; exec tail --pid=$wp -s 0.05 -f /dev/null" > /dev/null 2> rec.log
rc=$?
kill $wp 2> /dev/null # (a recording that never ran its command: the workload waits for good)
cat <&4 > work.out
exec 4<&-
read -r b n hog < work.out
[ $rc = 0 ] && [ -n "$hog" ] && [ -s rec.dat ] &&
	tap_ok "recorded: B is pid $b, woken $n times; the hog is pid $hog" ||
	tap_fail "record: exit $rc, '$(cat work.out)': $(tail -3 rec.log | tr '\n' '|')"

"$HGTRACE" why --json --threshold 3000 rec.dat > whole.json 2> why.err
trace-cmd report -t -i rec.dat > tc.txt 2> /dev/null
# From trace-cmd's reading: B's wakeups from CPU 1 onto CPU 0, the hog's longest run on
# CPU 0, and (why's, on the whole file) B's delays on CPU 0 that overlap it by 5 ms.
read -r moved hog_ms hogged first_page sched < <(python3 - tc.txt whole.json "$b" "$hog" "$HGTRACE" \
	"$here/lib/feed-recording.py" << 'EOF'
import importlib.util, json, re, sys
b, hog = int(sys.argv[3]), int(sys.argv[4])
spec = importlib.util.spec_from_file_location("feed", sys.argv[6])
feed = importlib.util.module_from_spec(spec)
spec.loader.exec_module(feed)
sw = re.compile(r"\[000\] +(\d+)\.(\d{9}): sched_switch: +.*:(\d+) \[-?\d+\] (\S+) ==> .*:(\d+) \[")
moved, runs, since = 0, [], None
lines = open(sys.argv[1]).read().splitlines()
for line in lines:
    if re.search(r"\[001\] .* sched_wakeup: +.*:%d \[-?\d+\] CPU:000" % b, line):
        moved += 1
    m = sw.search(line)
    if m:
        t = int(m[1] + m[2])
        # a run: from the hog's switch in to its sleep (preempted, R: it holds on)
        if int(m[3]) == hog and since is not None and not m[4].startswith("R"):
            runs.append((since, t))
            since = None
        if int(m[5]) == hog and since is None:
            since = t
# the hog's two longest runs, in time order, and B's delays on CPU 0 over each by 5 ms
two = sorted(sorted(runs, key=lambda r: r[1] - r[0])[-2:]) if len(runs) >= 2 else [(0, 0)] * 2
delays = [d for d in json.load(open(sys.argv[2]))["delays"] if d["pid"] == b and d["cpu"] == 0]
over = [[d for d in delays if min(r[1], d["to_ns"]) - max(r[0], d["from_ns"]) >= 5000000]
        for r in two]
# the latest of the CPUs' first pages' last records (from the file's own pages)
data = open("rec.dat", "rb").read()
first_page = max(feed.page_times(data[off:off + page])[1]
                 for _, off, size, page in feed.cpu_sections(sys.argv[5], "rec.dat") if size)
# for a premise that fails: the hog's and B's scheduling from 2 ms before each run to 30 ms
# after ("wake|in|out-WHO[-STATE]@CPU+MS"), 14 records at most
ev = re.compile(r"\[(\d+)\] +(\d+)\.(\d{9}): (sched_wakeup|sched_switch): +(.*)")
seen = []
who = lambda p: {b: "B", hog: "hog"}.get(int(p))
for r in two:
    got = []
    for line in lines:
        m = ev.search(line)
        if not m or not r[0] - 2000000 <= int(m[2] + m[3]) <= r[1] + 30000000:
            continue
        at = "%d%+.1f" % (int(m[1]), (int(m[2] + m[3]) - r[0]) / 1e6)
        w = re.match(r".*:(\d+) \[-?\d+\] CPU:(\d+)", m[5]) if m[4] == "sched_wakeup" else None
        s = re.match(r".*:(\d+) \[-?\d+\] (\S+) ==> .*:(\d+) \[", m[5]) if not w else None
        if w and who(w[1]):
            got.append("wake-%s-to%d@%s" % (who(w[1]), int(w[2]), at))
        if s and who(s[1]):
            got.append("out-%s-%s@%s" % (who(s[1]), s[2], at))
        if s and who(s[3]):
            got.append("in-%s@%s" % (who(s[3]), at))
    seen.append(",".join(got[:14]))
print(moved, min(r[1] - r[0] for r in two) // 1000000,
      ",".join("%d-%d" % (o[0]["from_ns"], o[0]["to_ns"]) if len(o) == 1 else "none" for o in over),
      first_page, "|".join(seen))
EOF
)
hog1=${hogged%%-*}
[ "$moved" -ge 100 ] && [ "$hog_ms" -ge 9 ] && [ "${hogged/none/}" = "$hogged" ] &&
	[ "$hog1" -lt "$first_page" ] &&
	tap_ok "the premise (trace-cmd): B woken from CPU 1 onto CPU 0 $moved times; the hog ran twice for $hog_ms ms or more on CPU 0, each time in one delay of B there (why, whole file), the first from $(((first_page - hog1) / 1000)) us before a CPU's first page ends" ||
	tap_fail "the premise: B woken onto CPU 0 from CPU 1 $moved times (want >= 100), the hog's two longest runs $hog_ms ms or more (want >= 9), B's delays over each: $hogged (want one each, the first from before $first_page, the latest of the CPUs' first pages' last records); around the hog's runs (CPU+ms from each run's start): $sched"

# flight_on RUN FEEDS TRIGGER...: FEEDS (FILE:NAME.dat, space-separated) fed to RUN/NAME.dat
# in 50 steps of 0.1 s (FEED_HOLD, FEED_PAUSE for 0.1 from the environment) with hgtrace
# flight on them (a window of 2.5 s), one
# trigger per TRIGGER, its --flush the longest any event waits for its page (the feeder's
# "lag", 1 s at least); its log in RUN.log, its exit status in $rc, its flush in $flush.
flight_on() {
	local run=$1 feeds=$2 fp flp args=() outs=() f
	shift 2
	for f in "$@"; do args+=(--trigger "$f"); done
	for f in $feeds; do outs+=("$run/${f#*:}"); done
	mkdir "$run"
	# shellcheck disable=SC2086
	python3 "$here/lib/feed-recording.py" "$HGTRACE" 50 "${FEED_PAUSE:-0.1}" ${feeds//:/:$run/} > "$run.feed" &
	fp=$!
	while ! grep -q '^ready' "$run.feed" 2> /dev/null; do
		kill -0 $fp 2> /dev/null || break
		sleep 0.02
	done
	flush=$(awk '/^lag / && $3 > m { m = $3 } END { n = int((m + 9999999) / 10000000); printf "%.2f", (n < 100 ? 100 : n) / 100 }' "$run.feed")
	"$HGTRACE" flight --flight-prefix "$run/flight" --tick 0.1 --window 2.5 --after 0.2 \
		--flush "$flush" --holdoff 0 --max-triggers 1000 "${args[@]}" "${outs[@]}" 2> "$run.log" &
	flp=$!
	wait $fp
	kill -INT $flp
	wait $flp
	rc=$?
}

# first, last: the recording's first and last records, ns (a delay ending within the flush
# interval and a tick of the last is not taken: counted at the stop)
read -r first last < <(awk '/^ *[^ ]+ +\[[0-9]+\] +[0-9]+\.[0-9]+:/ { if (!f) f = $3; t = $3 } END { sub(":", "", t); sub("\\.", "", t); sub(":", "", f); sub("\\.", "", f); print f, t }' tc.txt)
# held CPU WHAT: the recording fed with CPU's pages 8 steps late; every trigger of
# wakeup>3ms:B must be a delay of B that why finds in the whole file (its CPU and times to
# the ns), once, the hog's two among them, and every such delay ending the flush interval and
# a tick before the recording's last record must be one, or lie in part in a time the
# recorder said was in no search's span ("behind: the recording from A to B", a machine
# too busy for its searches).
held() {
	local v ntrig nbad ntwice nhog hsaid nmiss nsaid ngaps ndue early rest
	FEED_HOLD=$1:8 flight_on "f$1$3" rec.dat:t.dat "wakeup>3ms:$b"
	v=$(python3 - "f$1$3.log" whole.json "$b" "$hogged" "$last" "$flush" "$first" << 'EOF'
import json, re, sys
log = open(sys.argv[1]).read()
b, last, edge = int(sys.argv[3]), int(sys.argv[5]), int(float(sys.argv[6]) * 1e9) + 100000000
first = int(sys.argv[7])
hogged = [tuple(int(x) for x in h.split("-")) for h in sys.argv[4].split(",") if "-" in h]
whole = {(d["cpu"], d["from_ns"], d["to_ns"]) for d in json.load(open(sys.argv[2]))["delays"]
         if d["pid"] == b}
ns = lambda s: int(s.replace(".", ""))
got = [(int(c), ns(x), ns(y)) for c, x, y in re.findall(
    r"trigger \d+: wakeup>3ms:\d+: \S+ on +CPU (\d+) late: [0-9.]+ ms, ([0-9.]+) -> ([0-9.]+);",
    log)]
bad = [g for g in got if g not in whole]
twice = len(got) - len(set(got))
due = [d for d in whole if d[2] - d[1] > 3000000 and d[2] <= last - edge]
gaps = [(ns(a), ns(z)) for a, z in re.findall(r"behind: the recording from ([0-9.]+) to ([0-9.]+) ", log)]
miss = [d for d in due if d not in got]
said = [d for d in miss if any(d[1] < z and d[2] > a for a, z in gaps)]
miss = [d for d in miss if d not in said]
# the hog's delays not taken but in a time the recorder said it did not search
hsaid = sum(1 for d in said if d[1:] in hogged)
print("%d %d %d %d %d %d %d %d %d %.1f %s" % (len(got), len(bad), twice, sum(1 for g in got if g[1:] in hogged),
                                       hsaid, len(miss), len(said), len(gaps), len(due),
                                       (min(d[1] for d in due) - first) / 1e6 if due else -1,
                                       (bad + miss)[:3]))
EOF
	)
	read -r ntrig nbad ntwice nhog hsaid nmiss nsaid ngaps ndue early rest <<< "$v"
	if [ -n "$3" ]; then # slower than its time: what is missed is said
		[ $rc = 0 ] && [ "$nbad" = 0 ] && [ "$ntwice" = 0 ] && [ "$nmiss" = 0 ] && [ "$ngaps" -gt 0 ] &&
			tap_ok "CPU $1's pages 8 steps late, fed at a third of their pace ($2): $ntrig triggers, each a delay of B in the whole file (once); $ngaps times said in no search's span, and the $nsaid of $ndue due delays missed lie in them" ||
			tap_fail "CPU $1's pages late, fed slowly ($2): exit $rc, $ntrig triggers, $nbad not in the whole file, $ntwice twice, $nmiss of $ndue due missed and not said ($nsaid said, in $ngaps times said) ($rest)"
		return
	fi
	# a machine too busy for the searches: the hog's delay in a time said unsearched is said
	[ $rc = 0 ] && [ "$nbad" = 0 ] && [ "$ntwice" = 0 ] && [ $((nhog + hsaid)) = 2 ] && [ "$nmiss" = 0 ] &&
		tap_ok "CPU $1's pages 8 steps late ($2; --flush $flush): $ntrig triggers, each a delay of B in the whole file (once), the hog's two among them ($hsaid of them in time said unsearched); none of its $ndue delays over 3 ms ending the flush and a tick before the last record missed unsaid ($nsaid in time said unsearched; the first $early ms after the first record)" ||
		tap_fail "CPU $1's pages late ($2): exit $rc, $ntrig triggers, $nbad not in the whole file, $ntwice twice, $nhog of the hog ($hsaid said unsearched), $nmiss of $ndue due missed and not said ($nsaid said) ($rest): $(grep -c 'trigger [0-9]*: wakeup' "f$1$3.log") lines"
}
held 0 "a wakeup on CPU 1 whose run on CPU 0 has not come: the window's end"
held 1 "a wakeup on CPU 1 from before CPU 0's first page: the window's start"
FEED_PAUSE=0.3 held 0 "the searches' spans leave time between them" slow

"$HGTRACE" simulate -o s --seed 5 --duration-ms 3000 --inject guest:40000 --file-version 7 \
	--compression none > s.out || tap_fail "simulate"
FEED_LATE=s-guest.dat:20 flight_on h "rec.dat:t.dat s-guest.dat:t-g.dat" "wakeup>3ms:$b" "wakeup>50ms"
# trigger lines name the guest's file by its name (g): the host's by none
guest=$(grep -c '^hgtrace flight: trigger [0-9]*: wakeup>50ms: .* on g CPU' h.log)
host=$(grep '^hgtrace flight: trigger [0-9]*: wakeup>' h.log | grep -vc ' on g CPU')
host_delays=$(python3 -c "
import json
print(sum(1 for d in json.load(open('whole.json'))['delays']
          if d['pid'] == $b and d['to_ns'] - d['from_ns'] > 3000000))")
[ $rc = 0 ] && [ "$guest" -gt 0 ] && [ "$host" = 0 ] && [ "$host_delays" -gt 0 ] &&
	tap_ok "beside a guest whose recording begins 20 steps late: $guest triggers of wakeup>50ms, all the guest's; none for B's $host_delays wakeups over 3 ms (a host task, also while the host's pages were searched alone)" ||
	tap_fail "beside a guest whose recording begins 20 steps late: exit $rc, $guest of the guest's triggers (want > 0), $host of the host's (want 0; B has $host_delays wakeups over 3 ms)"
tap_done
