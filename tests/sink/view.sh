#!/usr/bin/env bash
# hgtrace view in a real browser: Debian's chromium (headless) opens the page of a
# simulated host + guest session with injected causes, and of real recordings; the page's
# own state (it writes it into the DOM) must hold every event trace-cmd prints, per file and
# CPU, and the task intervals; zoomed to a known interval (an injected preemption), each
# events track must show exactly trace-cmd's events there, the vCPU track the preemption
# and the host CPU the task that preempted it; a search for kvm_exit must count them all.
# Screenshots go to BUILDDIR/artifacts (CI keeps them; never committed).
# Usage: view.sh HGTRACE BUILDDIR
HGTRACE=$(realpath "$1")
build=$(realpath "${2:-.}")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/sim.sh"
command -v trace-cmd > /dev/null || tap_skip_all "trace-cmd is not installed"
command -v python3 > /dev/null || tap_skip_all "python3 is not installed"
command -v chromium > /dev/null || tap_skip_all "chromium is not installed (scripts/deps.sh installs it)"
tap_workdir
art=$build/artifacts
mkdir -p "$art"

# browse PAGE HASH OUT: the page's DOM after its scripts ran (up to 20 s of virtual time)
browse() {
	timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
		--user-data-dir="$t/chrome" --virtual-time-budget=20000 --dump-dom "file://$t/$1#$2" \
		> "$3" 2> chrome.err
}
# shot PAGE PNG: a screenshot, 1600x1000
shot() { # PAGE PNG [TOP %: where the tracks are sure to be drawn]
	timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
		--hide-scrollbars --user-data-dir="$t/chrome" --virtual-time-budget=20000 \
		--window-size=1600,1000 --screenshot="$2" "file://$t/$1" > /dev/null 2>&1
	# the PNG decoded by the test: its size, and a timeline drawn (tests/sink/check-png.py)
	if [ -s "$2" ] && python3 "$here/sink/check-png.py" "$2" 1600 1000 8 "${3:-12}" > png.out 2>&1; then
		tap_ok "screenshot $(cat png.out | sed 's/^ok //')"
	else
		tap_fail "screenshot of $1: $(cat png.out 2> /dev/null)"
	fi
}
check() { # WHAT ARGS...
	local what=$1
	shift
	if python3 "$here/sink/check-view.py" "$@" > check.out 2>&1; then
		while read -r l; do tap_ok "$what: ${l#ok }"; done < check.out
	else
		tap_fail "$what: $(tr '\n' ' ' < check.out) $(grep -i 'console' chrome.err | head -3)"
	fi
}

# 1. A simulated session with a preemption (guest CPU 0) and a burst of exits (CPU 1).
simulate s --seed 5 --duration-ms 300 --embed-sync --inject preempt:500 \
	--inject exits:IO_INSTRUCTION:20:25 || tap_fail "simulate"
if "$HGTRACE" view -o s.html s-host.dat s-guest.dat 2> err.txt; then
	tap_ok "view wrote s.html ($(stat -c %s s.html) bytes for $(grep -o '([0-9]* events' s.out | tr -dc '0-9\n' | paste -sd+ | bc) events)"
else
	tap_fail "view: $(cat err.txt)"
fi
trace-cmd report -t -i s-host.dat -i s-guest.dat > s.tc 2> /dev/null
from=$(sed -n '/^injected: preempt/s/.* from_ns=\([0-9]*\).*/\1/p' s.out)
to=$(sed -n '/^injected: preempt/s/.* to_ns=\([0-9]*\).*/\1/p' s.out)
hp=$(sed -n '/^injected: preempt/s/.* host_pid=\([0-9]*\).*/\1/p' s.out)
# a click on the guest's sched_waking that starts the injected delay (guest CPU 0)
browse s.html "" s0.dom
k=$(python3 -c 'import html, json, re, sys
st = json.loads(html.unescape(re.search(r"<pre id=\"state\">(.*?)</pre>", open(sys.argv[1]).read(), re.S).group(1)))
print([i for i, t in enumerate(st["tracks"]) if (t["group"], t["name"]) == ("s-guest.dat", "CPU 0")][0])' s0.dom)
line=$(grep "^s-guest.dat: .*\[000\] *$((from / 1000000000)).$(printf %09d $((from % 1000000000))): sched_waking:" s.tc)
# the host's tasks drawn as vCPU threads: exactly the simulator's vCPU threads
vt=$(python3 -c 'import html, json, re, sys
st = json.loads(html.unescape(re.search(r"<pre id=\"state\">(.*?)</pre>", open(sys.argv[1]).read(), re.S).group(1)))
print(" ".join(sorted({l.rsplit("-", 1)[1] for l in st["vcpuTasks"]})))' s0.dom)
want=$(tr ' ' '\n' <<< "$pids" | grep . | sort | tr '\n' ' ' | sed 's/ $//')
[ -n "$want" ] && [ "$vt" = "$want" ] && tap_ok "the page draws the simulator's $(wc -w <<< "$want") vCPU threads as such (pids $want)" ||
	tap_fail "the page's vCPU threads: pids '$vt', the simulator's '$want'"

browse s.html "zoom=$from,$to&search=kvm_exit&click=$k,$from" s.dom
check "simulated session" s.dom s.tc s-host.dat s-guest.dat --zoom "$from,$to" --click "$k,$from,$line" \
	--expect-label "s-guest.dat: its vCPUs on the host/vCPU 0 (thread 5001)=preempted by stress-ng-$hp" \
	--expect-label "s-host.dat/CPU $(( (hp - 4000) )) tasks=stress-ng-$hp" --search kvm_exit
# a click on a host kvm_entry: its line as trace-cmd prints it, the guest's symbol for the
# rip included (the kvm plugin asks for it: the host's GUEST option names the vCPU threads)
kl=$(grep -m1 '^ *s-host.dat: .*kvm_entry: .*+0x' s.tc)
kc=$(sed -n 's/^[^[]*\[0*\([0-9][0-9]*\)\].*/\1/p' <<< "$kl")
kt=$(sed -n 's/^[^]]*\] *\([0-9]*\)\.\([0-9]*\): kvm_entry.*/\1\2/p' <<< "$kl" | sed 's/^0*//')
kk=$(python3 -c 'import html, json, re, sys
st = json.loads(html.unescape(re.search(r"<pre id=\"state\">(.*?)</pre>", open(sys.argv[1]).read(), re.S).group(1)))
print([i for i, t in enumerate(st["tracks"]) if (t["group"], t["name"]) == ("s-host.dat", "CPU " + sys.argv[2])][0])' s0.dom "$kc")
browse s.html "zoom=$((kt - 1000)),$((kt + 1000))&click=$kk,$kt" s2.dom
check "a host kvm_entry" s2.dom s.tc s-host.dat s-guest.dat --click "$kk,$kt,$kl"
# a click on the last event of a long track: its item past the track's first chunk (16384
# items) and its line past its first chunk of lines (4096), both found by the page
simulate l --seed 7 --duration-ms 1500 --embed-sync || tap_fail "simulate (1.5 s)"
"$HGTRACE" view -o l.html l-host.dat l-guest.dat 2> err.txt || tap_fail "view (1.5 s): $(cat err.txt)"
trace-cmd report -t -i l-host.dat -i l-guest.dat > l.tc 2> /dev/null
browse l.html "" l0.dom
ll=$(grep '^ *l-guest.dat: .*\[000\]' l.tc | tail -1)
lt=$(sed -n 's/^[^]]*\] *\([0-9]*\)\.\([0-9]*\): .*/\1\2/p' <<< "$ll" | sed 's/^0*//')
read -r lk ln < <(python3 -c 'import html, json, re, sys
st = json.loads(html.unescape(re.search(r"<pre id=\"state\">(.*?)</pre>", open(sys.argv[1]).read(), re.S).group(1)))
print(*[(i, t["n"]) for i, t in enumerate(st["tracks"]) if (t["group"], t["name"]) == ("l-guest.dat", "CPU 0")][0])' l0.dom)
if [ "${ln:-0}" -gt 16384 ]; then
	browse l.html "zoom=$((lt - 1000)),$((lt + 1000))&click=$lk,$lt" l.dom
	check "the last of $ln events of l-guest.dat CPU 0" l.dom l.tc l-host.dat l-guest.dat --click "$lk,$lt,$ll"
else
	tap_fail "l-guest.dat CPU 0 has ${ln:-no} events, not over 16384: the click would not test a later chunk"
fi
# its delays list (up to 120 px) and a header of sync lines: the tracks from half way down
shot s.html "$art/view-simulated.png" 50
# The worst delay the host caused is listed and points at the right tracks.
gp=$(sed -n '/^injected: preempt/s/.* guest_pid=\([0-9]*\).*/\1/p' s.out)
grep -q "wakeup of [^ ]*-$gp on s-guest.dat CPU 0: 504.500 us: the host: preempted by stress-ng-$hp (500.000 us)" s.dom &&
	tap_ok "the page lists the injected preemption among the worst delays the host caused" ||
	tap_fail "the injected preemption is not listed"
# a click on that preemption on its vCPU's track: its start and length, from the host's two
# switches in trace-cmd's report (the vCPU thread out to stress-ng, and back)
read -r pm pwant < <(python3 -c 'import re, sys
ts = lambda l: int(re.search(r"\] +(\d+)\.(\d{9}):", l).group(1) + re.search(r"\] +(\d+)\.(\d{9}):", l).group(2))
out = back = None
for l in open(sys.argv[1]):
    if " s-host.dat: " not in l or "sched_switch:" not in l:
        continue
    if out is None and re.search(r"CPU 0/KVM:5001 \[\d+\] R ==> stress-ng:%s " % sys.argv[2], l):
        out = ts(l)
    elif out is not None and re.search(r"stress-ng:%s \[\d+\] \S+ ==> CPU 0/KVM:5001 " % sys.argv[2], l):
        back = ts(l)
        break
d = back - out
print((out + back) // 2, "s-guest.dat: its vCPUs on the host vCPU 0 (thread 5001): preempted by stress-ng-%s  from %d.%09d for %.3f us" % (sys.argv[2], out // 10**9, out % 10**9, d / 1e3))' s.tc "$hp")
pk=$(python3 -c 'import html, json, re, sys
st = json.loads(html.unescape(re.search(r"<pre id=\"state\">(.*?)</pre>", open(sys.argv[1]).read(), re.S).group(1)))
print([i for i, t in enumerate(st["tracks"]) if t["name"] == "vCPU 0 (thread 5001)"][0])' s0.dom)
browse s.html "zoom=$((pm - 1000)),$((pm + 1000))&click=$pk,$pm" s3.dom
check "the injected preemption" s3.dom s.tc s-host.dat s-guest.dat --click "$pk,$pm,$pwant"

# 2. Real recordings of this machine (x86-tsc cycles, CLOCK_MONOTONIC, a buffer instance
# with dropped events).
for f in tsc mono inst; do
	cp "$here/data/$f.dat" .
	if "$HGTRACE" view -o "$f.html" "$f.dat" 2> err.txt; then
		# x86-tsc cycles are made ns at the rate the file's timers show, derived by the
		# test from trace-cmd's lines (tests/lib/timer-rate.py); trace-cmd at that rate
		trace-cmd report -t "$f.dat" > "$f.tc" 2> /dev/null
		hz=$(python3 "$here/lib/timer-rate.py" "$f.tc")
		page=$(grep -o '"tscHz":[0-9]*' "$f.html" | head -1 | cut -d: -f2)
		if [ $f = tsc ] && [ -z "$hz" ]; then
			tap_fail "tsc.dat: no timer rate in trace-cmd's report"
		elif [ "${page:-0}" != "${hz:-0}" ]; then
			tap_fail "$f.dat: the page's rate '$page' Hz, the timers' '${hz:-none}'"
		elif [ -n "$hz" ]; then
			tap_ok "$f.dat: ns at the rate of its timers, $hz Hz"
			trace-cmd report -t --ts2secs "$hz" "$f.dat" > "$f.tc" 2> /dev/null
		fi
		# a window in the middle of the recording, from trace-cmd's own times
		read -r a b < <(sed -nE 's/^.*\] *([0-9]+)\.?([0-9]*): .*/\1\2/p' "$f.tc" |
			sort -n | awk '{ v[NR] = $1 } END { print v[int(NR * 0.4)], v[int(NR * 0.45)] }')
		browse "$f.html" "zoom=$a,$b" "$f.dom"
		check "$f.dat" "$f.dom" "$f.tc" "$f.dat" --zoom "$a,$b"
	else
		tap_fail "view $f.dat: $(cat err.txt)"
	fi
done
shot tsc.html "$art/view-tsc.png"
# --ts2secs HZ wins over the timers; without why the page says it did not analyse delays
# (it never states an absence it did not check)
if "$HGTRACE" view --no-why --ts2secs 3000000000 -o hz.html tsc.dat 2> err.txt &&
	grep -q '"ns":true,"tscHz":3000000000,"tscFrom":"--ts2secs","whyNote":"guest delays not analysed (--no-why)"' hz.html; then
	tap_ok "view --ts2secs 3000000000 --no-why: ns at that rate, delays said not analysed"
else
	tap_fail "view --ts2secs: $(cat err.txt) $(grep -o '"ns":[a-z]*,"tscHz":[0-9]*,"tscFrom":"[^"]*","whyNote":"[^"]*"' hz.html)"
fi

# 3. Bad input: one line, no page.
tap_refuses "view of a file that is not a trace" "" "$HGTRACE" view -o bad.html /etc/passwd
[ -e bad.html ] && tap_fail "a failed view left bad.html"
tap_done
