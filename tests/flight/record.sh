#!/usr/bin/env bash
# record --flight on this machine's real tracefs: numbered trace_marker writes every 5 ms
# for 8 s, a "usr1" marker and SIGUSR1 to the recorder 3 s in (a trigger by hand; window
# 1 s, after 1 s, flush 100 ms), and at 5.5 s a marker that --trigger marker:hgt-slow
# catches (trigger 2, its window saved with the marker in it). Checked, in the trace's own
# times (trace-cmd report):
#  - the saved flight-1.dat: trace-cmd reads it; its markers run without a gap over the
#    window before the usr1 marker and the after time after it (the window is saved the
#    flush interval later, for its last pages to be written), and it reaches back further
#    (each CPU's pages begin with the page it was writing when the window began, so before
#    the window one CPU can reach further back than another: markers there need not be
#    whole);
#  - the final file holds the kept span only: the first markers are gone (punched out of
#    the recording), the rest run without a gap to the last one written, over at least
#    the window and the after time. The span is kept per CPU from a page boundary, so
#    until the CPU that starts latest starts, the other one's markers stand alone: a writer
#    that moved between the CPUs then left its markers on the earlier one only (seen on
#    a busy machine: markers 678 to 1545 with a gap). "Without a gap" holds from there;
#  - the recording's last records, a marker and a pair (a shell's marker to its exit, 60
#    ms), written just before the stop: the stop writes their pages before the last
#    search, which takes both (a search while recording waits a flush interval and a tick
#    for a delay's end), and saves their windows;
#  - a search's file (copied between two ticks) holds no kallsyms, the saved window's do;
#  - the summary names the trigger and the cost.
# Usage: record.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/record.sh"
why=$(tracefs_ready) || tap_skip_all "$why"
tap_workdir

python3 - "$HGTRACE" "$here/flight/hgtpair.py" << 'EOF' > drive.out 2>&1
import glob, os, shutil, signal, subprocess, sys, time
hg, pair = sys.argv[1:3]
p = subprocess.Popen([hg, "record", "--flight", "--window", "1", "--after", "1", "--tick",
                      "0.1", "--flush-ms", "100", "--trigger", "wakeup>900ms", "--trigger",
                      "marker:hgt-slow", "--trigger",
                      "pair:print,sched_process_exit>50ms", "--holdoff", "0", "-e",
                      "sched:sched_process_exit", "-f", 'comm == "hgtpair"', "-o", "r.dat"],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=open("r.log", "w"))
t0 = time.monotonic()
# tracing is on (trace_marker refuses writes before) once the log says so
while not (os.path.exists("r.dat.recording/head.dat") and
           "event types enabled" in open("r.log").read()):
    if time.monotonic() - t0 > 20 or p.poll() is not None:
        p.kill()
        sys.exit("the recorder did not start (exit %s)" % p.poll())
    time.sleep(0.01)
fd = os.open("/sys/kernel/tracing/instances/hgtrace-%d/trace_marker" % p.pid, os.O_WRONLY)
start = time.monotonic()
n = 0
sent = slow = False
cpus = sorted(os.sched_getaffinity(0))
while time.monotonic() - start < 8:
    n += 1
    # each marker on the next CPU: every CPU's kept pages hold markers from the trim on (a
    # writer left on one CPU for seconds left the other's first kept marker 2.5 s late)
    os.sched_setaffinity(0, {cpus[n % len(cpus)]})
    os.write(fd, b"hgt-mark %d\n" % n)
    if not sent and time.monotonic() - start > 3:
        # a search's file, as it is between two ticks (each is written anew and renamed)
        for f in glob.glob("r.dat.flight-*/0.dat")[:1]:
            shutil.copy(f, "search.dat")
        os.write(fd, b"hgt-usr1\n")
        p.send_signal(signal.SIGUSR1)
        sent = True
    if not slow and time.monotonic() - start > 5.5:
        os.write(fd, b"app: hgt-slow request 42\n")
        slow = True
    time.sleep(0.005)
# the recording's last records, no page of which is written before the stop: a pair of
# 60 ms or more (a process's marker to its exit, a sleep of 60 ms between: whatever the
# machine, no shorter) and a marker, all on CPU 0, so that CPU 1's records end before
# them (its pages then say nothing of when CPU 0's are all there)
os.sched_setaffinity(0, {0})
subprocess.run([sys.executable, pair,
                "/sys/kernel/tracing/instances/hgtrace-%d/trace_marker" % p.pid], check=True)
os.write(fd, b"app: hgt-slow at the end\n")
os.close(fd)
p.send_signal(signal.SIGINT)
print("written %d, exit %d" % (n, p.wait()))
EOF
grep -q 'exit 0' drive.out && tap_ok "record --flight: $(cat drive.out)" ||
	tap_fail "record --flight: $(cat drive.out) $(tr '\n' '|' < r.log)"
grep -q '^hgtrace flight: trigger 2: marker:hgt-slow: "app: hgt-slow request 42" by python3-[0-9]* on CPU [0-9] at [0-9.]*; its window' r.log &&
	grep -q '^hgtrace flight: trigger 2: saved flight-2.dat$' r.log &&
	[ "$(trace-cmd report flight-2.dat 2> /dev/null | grep -c 'hgt-slow request 42$')" = 1 ] &&
	tap_ok "marker:hgt-slow: trigger 2 by the marker, saved flight-2.dat with it" ||
	tap_fail "marker:hgt-slow: $(grep 'trigger 2' r.log | tr '\n' '|')"
# the recording's last records: their pages are written by the stop's drain, and the last
# search, after it, takes them (a search while recording would wait a flush interval and
# a tick for a delay's end: the pair's)
# (its writer by any name: on a busy machine the kernel's saved task names, which the
# recorder copies, had lost it by the end once: "<...>-5483")
m=$(sed -n 's/^hgtrace flight: trigger \([0-9]*\): marker:hgt-slow: "app: hgt-slow at the end" by [^ ]*-[0-9]* on CPU [0-9] at [0-9.]*; its window.*/\1/p' r.log)
p=$(sed -n 's/^hgtrace flight: trigger \([0-9]*\): pair:.* late: \([0-9.]*\) ms.*/\1 \2/p' r.log)
read -r pn pms <<< "$p"
grep -q "^hgtrace flight: trigger $m: saved flight-$m.dat\$" r.log &&
	[ "$(trace-cmd report flight-$m.dat 2> /dev/null | grep -c 'hgt-slow at the end$')" = 1 ] &&
	[ -n "$pn" ] && grep -q "^hgtrace flight: trigger $pn: saved flight-$pn.dat\$" r.log &&
	[ "$(trace-cmd report flight-$pn.dat 2> /dev/null | grep -c 'hgt-begin$')" = 1 ] &&
	! grep -q 'not taken' r.log &&
	tap_ok "the last records: the marker is trigger $m, the pair of $pms ms trigger $pn, each saved with it (trace-cmd reads them), nothing left untaken" ||
	tap_fail "the last records: marker trigger '$m', pair trigger '$p': $(grep 'trigger [3-9]\|not taken' r.log | tr '\n' '|')"
grep -q '^hgtrace flight: trigger 1: by hand' r.log &&
	grep -q '^hgtrace flight: trigger 1: saved flight-1.dat$' r.log &&
	tap_ok "SIGUSR1: trigger 1 by hand, saved flight-1.dat" ||
	tap_fail "SIGUSR1: $(tr '\n' '|' < r.log)"
written=$(sed -n 's/written \([0-9]*\).*/\1/p' drive.out)
# a search's file: the head and options, no page, and no kallsyms (no search looks up a
# kernel function; 5 MB here, written and read again at every tick); the saved window's
# file keeps them
ksyms() { "$HGTRACE" dump "$1" 2> /dev/null | sed -n 's/.* kallsyms \([0-9]*\) bytes.*/\1/p'; }
k=$(ksyms search.dat)
kh=$(ksyms flight-1.dat)
[ "$k" = 0 ] && [ "${kh:-0}" -gt 10000 ] &&
	tap_ok "a search's file: no kallsyms, $(stat -c %s search.dat) bytes in all; the saved window's: $kh bytes of kallsyms" ||
	tap_fail "a search's file: kallsyms '$k' bytes ($(stat -c %s search.dat 2> /dev/null) in all); the saved window's '$kh'"

# marks FILE: "N T" per hgt-mark (T: its time in s), "U T" for the usr1 marker
marks() {
	trace-cmd report -t "$1" 2> /dev/null |
		sed -n 's/.* \([0-9]*\.[0-9]*\): .*hgt-mark \([0-9]*\)$/\2 \1/p; s/.* \([0-9]*\.[0-9]*\): .*hgt-usr1$/U \1/p'
}
marks flight-1.dat > f.txt
marks r.dat > r.txt
# the CPU of each marker of r.dat: "N CPU"
trace-cmd report -t r.dat 2> /dev/null | sed -n 's/.*\[\([0-9]*\)\] *[0-9]*\.[0-9]*: .*hgt-mark \([0-9]*\)$/\2 \1/p' > rc.txt
r=$(python3 - f.txt r.txt "$written" rc.txt << 'EOF'
import sys
def load(p):
    m, u = [], None
    for l in open(p):
        a, t = l.split()
        if a == "U":
            u = float(t)
        else:
            m.append((int(a), float(t)))
    return m, u
f, fu = load(sys.argv[1])
r, ru = load(sys.argv[2])
written = int(sys.argv[3])
gapless = lambda m: bool(m) and [a for a, _ in m] == list(range(m[0][0], m[-1][0] + 1))
# the window: the usr1 marker's second before it to the after time (1 s) after it. Every
# marker written then is there (and the next one, later): the window was saved from the
# pages written since 1.3 s before the trigger (window, two ticks, flush). Before it, a
# CPU's pages begin with the page it was writing then, so one CPU can reach further back
# than another, and markers there need not be whole; at least one is there.
inw = [m for m in f if fu is not None and fu - 1.0 <= m[1] <= fu + 1.0]
nums = set(a for a, _ in f)
ok = (fu is not None and gapless(inw) and inw[-1][0] + 1 in nums and
      any(t < fu - 1.0 for _, t in f))
print("%s flight-1.dat: markers %s to %s without a gap (%d), from the usr1 marker's second "
      "before it (the file reaching back %.3f s) to the after time (1 s) after it, and "
      "marker %s after that" %
      ("ok" if ok else "FAIL", inw[0][0] if inw else "-", inw[-1][0] if inw else "-",
       len(inw), fu - f[0][1] if f and fu else -1, inw[-1][0] + 1 if inw else "-"))
# from the first marker of the CPU that starts latest
first = {}
for l in open(sys.argv[4]):
    n, c = map(int, l.split())
    first.setdefault(c, n)
start = max(first.values()) if first else 0
whole = [m for m in r if m[0] >= start]
ok = (gapless(whole) and r[0][0] > 1 and whole[-1][0] == written and
      whole[-1][1] - whole[0][1] >= 2.0)
print("%s r.dat: markers %s to %s of %d without a gap, %.3f s of them, from the first of "
      "the CPU that starts latest (first markers by CPU: %s); the first %s gone" %
      ("ok" if ok else "FAIL", whole[0][0] if whole else "-", whole[-1][0] if whole else "-",
       written, whole[-1][1] - whole[0][1] if whole else -1,
       " ".join("%d: %d" % kv for kv in sorted(first.items())), r[0][0] - 1 if r else "-"))
EOF
)
while read -r l; do
	case $l in ok*) tap_ok "${l#ok }" ;; *) tap_fail "$l" ;; esac
done <<< "$r"
grep -q '^hgtrace flight: cost: [0-9]* searches, ' r.log && grep -q '^hgtrace flight:   1: by hand' r.log &&
	tap_ok "the summary: $(grep '^hgtrace flight: cost' r.log | sed 's/^hgtrace flight: //')" ||
	tap_fail "the summary: $(tr '\n' '|' < r.log)"
tap_done
