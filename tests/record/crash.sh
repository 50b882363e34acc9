#!/usr/bin/env bash
# Crash safety of hgtrace record and listen on this machine's real tracefs. The recorder is
# killed with SIGKILL at 20 random moments while a writer puts numbered markers into its
# instance's trace_marker (in 5 of them, SIGINT first and SIGKILL up to 600 ms later, in
# the stop or after it); then a listener, receiving a FIFO agent's stream, is killed at 20
# random moments. Each time, after 'hgtrace restore' where the output was not written,
# hgtrace and trace-cmd read the file and every marker written more than one flush
# interval (--flush-ms 200) before the kill is there, in order, once. Then: SIGHUP stops
# like SIGINT, the instances left behind are removed by the next record and by reset, a
# running recording cannot be restored, a second recorder to the same file is refused, a
# cut on either side of the output's rename is restored as what it was, and a CPU's pages
# in 12 streams are restored in their order.
# Usage: crash.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/record.sh"
why=$(tracefs_ready) || tap_skip_all "$why"
tap_workdir

# One run: record to $1, kill as $2 (kill: SIGKILL only; stop: SIGINT then SIGKILL after
# a random 0-600 ms) after a random 0.3-2.3 s of markers every 2 ms; seed $3. Prints
# "written N, must M (last written before the deadline), killed-at-ms K" and leaves
# marks.txt: "N T_ms" per marker (T relative to the kill).
run_one() {
	python3 - "$HGTRACE" "$1" "$2" "$3" << 'PYEOF'
import os, random, signal, subprocess, sys, time
hg, out, mode, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rnd = random.Random(seed)
p = subprocess.Popen([hg, "record", "-e", "sched:sched_process_exit", "--flush-ms", "200",
                      "-o", out], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=open(out + ".log", "w"))
def fail(why):  # on any failure the recorder goes too, and the reason is the output
    p.kill()
    print("failed: %s (recorder log: %s)" % (why, open(out + ".log").read().replace("\n", " ")))
    sys.exit(1)
sys.excepthook = lambda t, v, tb: fail("%s: %s" % (t.__name__, v))
marker = "/sys/kernel/tracing/instances/hgtrace-%d/trace_marker" % p.pid
head = out + ".recording/head.dat"
t0 = time.monotonic()
# tracing is on (trace_marker refuses writes with EBADF before) once the log says so
while not (os.path.exists(head) and "event types enabled" in open(out + ".log").read()):
    if time.monotonic() - t0 > 20 or p.poll() is not None:
        fail("the recorder did not start in %.1f s (exit %s)" % (time.monotonic() - t0, p.poll()))
    time.sleep(0.01)
fd = os.open(marker, os.O_WRONLY)
dur = rnd.uniform(0.3, 2.3)
marks = []
n = 0
start = time.monotonic()
while time.monotonic() - start < dur:
    n += 1
    os.write(fd, b"hgt-mark %d\n" % n)
    marks.append((n, time.monotonic()))
    time.sleep(0.002)
if mode == "stop":
    p.send_signal(signal.SIGINT)
    tk = time.monotonic()
    time.sleep(rnd.uniform(0, 0.6))
else:
    tk = time.monotonic()
p.send_signal(signal.SIGKILL)
p.wait()
os.close(fd)
deadline = tk - 0.200
must = max([m for m, t in marks if t <= deadline] or [0])
with open("marks.txt", "w") as f:
    for m, t in marks:
        f.write("%d %.1f\n" % (m, (t - tk) * 1000))
print("written %d, must %d, killed-at-ms %.0f" % (n, must, (tk - start) * 1000))
PYEOF
}

# start_rec FILE: a recorder to FILE in the background ($rp), once it records.
start_rec() {
	rm -rf "$1" "$1.recording"
	"$HGTRACE" record -e sched:sched_process_exit -o "$1" 2> "$1.log" &
	rp=$!
	for _ in $(seq 200); do grep -q "event types enabled" "$1.log" 2> /dev/null && break; sleep 0.05; done
}

# The markers a report shows, in its order.
marks_of() { grep -o 'hgt-mark [0-9]*' | awk '{ print $2 }'; }

bad=0
restored=0
complete=0
kills_restored=0
oldest_lost=0
for i in $(seq 20); do
	mode=kill
	[ $((i % 4)) = 0 ] && mode=stop
	rm -rf r.dat r.dat.recording
	info=$(run_one r.dat $mode $((i * 7919)))
	read -r _ n _ must _ at <<< "${info//,/}"
	if [[ $info == failed:* ]] || [ -z "$must" ]; then
		tap_fail "run $i ($mode): $info $(cat r.dat.log)"
		bad=1
		continue
	fi
	if [ -d r.dat.recording ]; then
		if ! "$HGTRACE" restore r.dat 2> restore.log; then
			tap_fail "run $i ($mode): restore failed: $(cat restore.log)"
			bad=1
			continue
		fi
		restored=$((restored + 1))
		[ $mode = kill ] && kills_restored=$((kills_restored + 1))
	else
		complete=$((complete + 1))
	fi
	"$HGTRACE" report r.dat 2> err.txt | marks_of > h.txt
	trace-cmd report r.dat 2> /dev/null | marks_of > t.txt
	got=$(wc -l < h.txt)
	sort -n h.txt > s.txt
	missing=$(seq "$must" | comm -23 <(seq "$must" | sort) <(sort -u h.txt) | sort -n | head -3 | tr '\n' ' ')
	if ! cmp -s h.txt t.txt; then
		tap_fail "run $i ($mode): hgtrace and trace-cmd disagree ($got vs $(wc -l < t.txt) markers)"
		bad=1
	elif ! cmp -s h.txt s.txt || [ "$(sort -u h.txt | wc -l)" != "$got" ]; then
		tap_fail "run $i ($mode): markers out of order or twice: $(uniq -d s.txt | head -3)"
		bad=1
	elif [ -n "$missing" ]; then
		tap_fail "run $i ($mode): $got of $n markers, but $missing missing (all up to $must must be there): $(grep -E "^(${missing// /|}-) " marks.txt | head -3)"
		bad=1
	elif [ "$must" -lt 1 ] && [ "$mode" = kill ]; then
		echo "# run $i: killed after ${at} ms: no marker was due yet ($got kept)"
	fi
	# how long before the kill the oldest marker that did not reach the disk was written
	lost=$(awk 'NR == FNR { k[$1] = 1; next } !($1 in k) { print -$2; exit }' h.txt marks.txt)
	[ -n "$lost" ] && [ "${lost%.*}" -gt "$oldest_lost" ] && oldest_lost=${lost%.*}
	echo "# run $i ($mode, killed ${at} ms into the markers): $n written, $got kept (both readers), all $must due kept; oldest lost written ${lost:-none} ms before the kill"
done
[ $bad = 0 ] && tap_ok "20 kills ($restored restored, $complete written out before the kill): every marker older than 200 ms kept (the oldest lost was $oldest_lost ms old), in order, once; trace-cmd reads the same" ||
	tap_fail "kills: see above"
[ "$kills_restored" = 15 ] && tap_ok "each of the 15 plain SIGKILLs left a recording that restore finished" ||
	tap_fail "only $kills_restored of the 15 plain SIGKILLs restored"

# The same for hgtrace listen, killed mid-stream 20 times: a FIFO agent (--flush-ms 200:
# a partial page is sent when no whole one came for that long) streams numbered markers;
# the listener writes what arrives to trace-g.dat.recording. After restore, every marker
# written more than 200 ms before the kill is there, in order, once.
listen_one() { # SEED
	python3 - "$HGTRACE" "$1" << 'PYEOF2'
import os, random, signal, subprocess, sys, time
hg, seed = sys.argv[1], int(sys.argv[2])
rnd = random.Random(seed)
os.makedirs("lk", exist_ok=True)
subprocess.run([hg, "setup-guest", "g", "--cpus", str(os.cpu_count()), "--dir", "lk"],
               stdout=subprocess.DEVNULL, check=True)
lp = subprocess.Popen([hg, "listen", "-o", "lk", "--fifo", "g:lk/g", "--start"],
                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                      stderr=open("lk/listen.log", "w"))
inst = "hgt_lk_%d" % os.getpid()
ap = subprocess.Popen([hg, "agent", "--fifos", "lk/g", "-B", inst, "-b", "1024", "-e",
                       "sched:sched_process_exit", "--flush-ms", "200"],
                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                      stderr=open("lk/agent.log", "w"))
def fail(why):  # on any failure both go too, and the reason is the output
    lp.kill()
    ap.kill()
    print("failed: %s (listen: %s; agent: %s)" % (why, open("lk/listen.log").read().replace("\n", " "),
                                                  open("lk/agent.log").read().replace("\n", " ")))
    sys.exit(1)
sys.excepthook = lambda t, v, tb: fail("%s: %s" % (t.__name__, v))
marker = "/sys/kernel/tracing/instances/%s/trace_marker" % inst
t0 = time.monotonic()
while not (os.path.exists(marker) and "recording" in open("lk/agent.log").read()):
    if time.monotonic() - t0 > 20:
        fail("the agent did not start in 20 s")
    time.sleep(0.01)
fd = os.open(marker, os.O_WRONLY)
dur = rnd.uniform(0.3, 1.8)
marks, n, start = [], 0, time.monotonic()
while time.monotonic() - start < dur:
    n += 1
    os.write(fd, b"hgt-mark %d\n" % n)
    marks.append((n, time.monotonic()))
    time.sleep(0.002)
tk = time.monotonic()
lp.send_signal(signal.SIGKILL)
lp.wait()
os.close(fd)
ap.send_signal(signal.SIGKILL)  # its host is gone; its instance is left to reset
ap.wait()
must = max([m for m, t in marks if t <= tk - 0.200] or [0])
with open("marks.txt", "w") as f:
    for m, t in marks:
        f.write("%d %.1f\n" % (m, (t - tk) * 1000))
print("written %d, must %d, killed-at-ms %.0f" % (n, must, (tk - start) * 1000))
PYEOF2
}
bad=0
oldest_lost=0
for i in $(seq 20); do
	rm -rf lk
	info=$(listen_one $((i * 104729)))
	read -r _ n _ must _ at <<< "${info//,/}"
	"$HGTRACE" reset > /dev/null 2>&1
	if [[ $info == failed:* ]] || [ -z "$must" ] || ! "$HGTRACE" restore lk/trace-g.dat 2> restore.log; then
		tap_fail "listen run $i: $info: $(cat restore.log 2> /dev/null) $(cat lk/listen.log)"
		bad=1
		continue
	fi
	"$HGTRACE" report lk/trace-g.dat 2> /dev/null | marks_of > h.txt
	trace-cmd report lk/trace-g.dat 2> /dev/null | marks_of > t.txt
	got=$(wc -l < h.txt)
	missing=$(comm -23 <(seq "$must" | sort) <(sort -u h.txt) | sort -n | head -3 | tr '\n' ' ')
	lost=$(awk 'NR == FNR { k[$1] = 1; next } !($1 in k) { print -$2; exit }' h.txt marks.txt)
	[ -n "$lost" ] && [ "${lost%.*}" -gt "$oldest_lost" ] && oldest_lost=${lost%.*}
	if ! cmp -s h.txt t.txt || ! cmp -s h.txt <(sort -n h.txt) ||
		[ "$(sort -u h.txt | wc -l)" != "$got" ] || [ -n "$missing" ]; then
		tap_fail "listen run $i: $got of $n kept (hgtrace), $(wc -l < t.txt) (trace-cmd); missing of the $must due: $missing"
		bad=1
	fi
	echo "# listen run $i (killed ${at} ms into the markers): $n written, $got kept, all $must due kept; oldest lost written ${lost:-none} ms before the kill"
done
[ $bad = 0 ] && tap_ok "listen killed 20 times: restore kept every marker older than 200 ms (the oldest lost was $oldest_lost ms old), in order, once; trace-cmd reads the same" ||
	tap_fail "listen kills: see above"

# The instances the killed recorders left: the next record removes them, saying so.
# (those of live processes are other tests' recorders: not counted)
dead_instances() {
	ls $TRACEFS/instances | sed -n 's/^hgtrace-\([0-9]*\)\(-clock\)\{0,1\}$/\1/p' |
		while read -r p; do kill -0 "$p" 2> /dev/null || echo "$p"; done | grep -c .
}
left=$(dead_instances)
"$HGTRACE" record -e sched:sched_process_exit -o again.dat -- true 2> again.log
removed=$(grep -c 'removed tracefs instance' again.log)
now=$(dead_instances)
echo "# $left hgtrace instances before, $removed removed, $now after"
[ "$now" = 0 ] && [ -s again.dat ] &&
	tap_ok "record removes instances of dead recorders ($removed removed; restore had removed the others)" ||
	tap_fail "stale instances: $left before, $now after: $(cat again.log)"

# reset: removes a dead recorder's instance, never another tool's; and the instance of a
# kernel-only clock's reader killed before its exit removed it (hgtrace-PID-clock: a pid
# no process has now)
mkdir $TRACEFS/instances/hgt_other_$$
sh -c 'exit 0' &
dp=$!
wait $dp
mkdir $TRACEFS/instances/hgtrace-$dp-clock
start_rec k.dat
kp=$rp
kill -KILL $kp
wait $kp 2> /dev/null
out=$("$HGTRACE" reset 2>&1)
if [ ! -e $TRACEFS/instances/hgtrace-$kp ] && [ -d $TRACEFS/instances/hgt_other_$$ ] &&
	grep -q "removed tracefs instance hgtrace-$kp" <<< "$out" &&
	[ ! -e $TRACEFS/instances/hgtrace-$dp-clock ]; then
	tap_ok "reset: hgtrace-$kp and hgtrace-$dp-clock removed, another tool's instance kept ($(tail -1 <<< "$out"))"
else
	tap_fail "reset: $out"
fi
rmdir $TRACEFS/instances/hgt_other_$$
rmdir $TRACEFS/instances/hgtrace-$dp-clock 2> /dev/null
"$HGTRACE" restore k.dat 2> /dev/null && [ ! -d k.dat.recording ] ||
	tap_fail "restore after reset"

# SIGHUP stops a recording as SIGINT does: one ordinary file, exit 0.
start_rec h.dat
hp=$rp
kill -HUP $hp
wait $hp
rc=$?
if [ $rc = 0 ] && [ -s h.dat ] && [ ! -e h.dat.recording ] && trace-cmd report h.dat > /dev/null 2>&1; then
	tap_ok "SIGHUP: exit 0, h.dat written and read by trace-cmd, no directory left"
else
	tap_fail "SIGHUP: exit $rc: $(cat h.dat.log)"
fi

# While it runs: restore and a second recorder to the same file are refused.
start_rec b.dat
bp=$rp
TAP_WANT="process $bp is still recording" tap_refuses "restore of a running recording" "" "$HGTRACE" restore b.dat
TAP_WANT="process $bp is recording to b.dat" tap_refuses "a second recorder to the same file" "" "$HGTRACE" record -e sched:sched_process_exit -o b.dat -- true
kill -INT $bp
wait $bp
[ -s b.dat ] && [ ! -e b.dat.recording ] && tap_ok "the first recorder finished b.dat undisturbed" ||
	tap_fail "b.dat after the refusals"

# After a cut recording, a new record to that file is refused until it is restored.
start_rec c.dat
kill -KILL $rp
wait $rp 2> /dev/null
TAP_WANT="a cut recording is there: run 'hgtrace restore c.dat'" tap_refuses "record over a cut recording" "" "$HGTRACE" record -e sched:sched_process_exit -o c.dat -- true
"$HGTRACE" restore c.dat 2> /dev/null || tap_fail "restore c.dat"
TAP_WANT="no cut recording beside it" tap_refuses "restore with nothing to restore" "c.dat" "$HGTRACE" restore c.dat

# A cut at the output's own rename, on either side of it. strace finds which rename(2)
# names k.dat in a run left alone, then, in two more runs, delays that call's return (the
# output has its name: the recorder is killed then) or kills the recorder as it enters it.
# After the rename, restore says k.dat was complete and removes the directory; before it,
# restore writes k.dat: neither "exists" nor a recording taken for written.
cut_at_rename() { # HOW (delay_exit=60s or signal=KILL) N: the recorder, tampered
	rm -rf k.dat k.dat.recording
	strace -f -qq -o k.st -e trace=rename -e "inject=rename:$1:when=$2" -- \
		sh -c 'echo $$ > k.pid; exec "$0" record -e sched:sched_process_exit -o k.dat -- true' \
		"$HGTRACE" > /dev/null 2> k.log &
	kp=$!
}
if command -v strace > /dev/null; then
	rm -rf k.dat k.dat.recording
	strace -f -qq -o k.st -e trace=rename -- "$HGTRACE" record -e sched:sched_process_exit -o k.dat -- true > /dev/null 2>&1
	# the main thread's renames, in order: the one naming k.dat
	nth=$(awk '/ rename\(/ && !/resumed>/ { n[$1]++ } / rename\(.*, "k.dat"\) = 0/ { print n[$1]; exit }' k.st)
	if [ -z "$nth" ]; then
		tap_fail "cut at the rename: no rename(2) to k.dat seen: $(tr '\n' '|' < k.st | head -c 400)"
	else
		cut_at_rename delay_exit=60s "$nth"
		end=$((SECONDS + 60))
		until [ -e k.dat ] || [ $SECONDS -ge $end ] || ! kill -0 $kp 2> /dev/null; do sleep 0.02; done
		[ -e k.dat ] && kill -KILL "$(cat k.pid)"
		wait $kp 2> /dev/null
		left=$([ -d k.dat.recording ] && echo yes)
		out=$("$HGTRACE" restore k.dat 2>&1)
		rc=$?
		if [ "$left" = yes ] && [ $rc = 0 ] && grep -q "k.dat was complete; removed what was left" <<< "$out" &&
			[ ! -e k.dat.recording ] && trace-cmd report k.dat > /dev/null 2>&1; then
			tap_ok "killed just after k.dat took its name (rename $nth held): restore says it was complete and removes the directory ($out)"
		else
			tap_fail "killed just after the rename: directory left: ${left:-no}, restore exit $rc: $out"
		fi
		cut_at_rename signal=KILL "$nth"
		wait $kp 2> /dev/null
		left=$([ -d k.dat.recording ] && [ ! -e k.dat ] && echo yes)
		out=$("$HGTRACE" restore k.dat 2>&1)
		rc=$?
		n=$(trace-cmd report k.dat 2> /dev/null | grep -c 'sched_process_exit:')
		if [ "$left" = yes ] && [ $rc = 0 ] && [ ! -e k.dat.recording ] && [ "$n" -ge 1 ]; then
			tap_ok "killed entering k.dat's rename: restore writes k.dat ($n sched_process_exit events in trace-cmd's report)"
		else
			tap_fail "killed entering the rename: directory and no k.dat: ${left:-no}; restore exit $rc: $out; $n events"
		fi
	fi
else
	tap_skip "a cut at the output's rename" "strace is not installed (scripts/deps.sh installs it)"
fi

# A CPU's pages in more than ten streams (cpuN, cpuN.1 .. cpuN.11: a guest's channel
# re-opened, as the listener writes them) are restored in the order they were opened: the
# same cut recording, split so, gives trace-cmd the same report as whole.
"$HGTRACE" record -e sched -o s.dat --flush-ms 50 2> s.dat.log &
rp=$!
wait_for_line s.dat.log 'event types enabled'
end=$((SECONDS + 120)) # a hang guard: the recorder's own events fill the pages
until [ -n "$(find s.dat.recording -name 'cpu*' -size +120k 2> /dev/null)" ]; do
	ls /proc > /dev/null
	kill -0 $rp 2> /dev/null && [ $SECONDS -lt $end ] || break
done
kill -KILL $rp
wait $rp 2> /dev/null
cp -r s.dat.recording w.dat.recording
split=0
for f in s.dat.recording/cpu*; do
	pages=$(($(stat -c %s "$f") / 4096))
	[ "$pages" -ge 12 ] || continue
	per=$((pages / 12))
	for k in $(seq 11 -1 1); do
		tail -c +$((k * per * 4096 + 1)) "$f" > "$f.$k"
		truncate -s $((k * per * 4096)) "$f"
	done
	split=$((split + 1))
done
# and files that only look like streams (cpu0.0, cpu0.-1: no writer names them so) are not
# taken, nor removed
head -c 8192 /dev/urandom > s.dat.recording/cpu0.0
cp s.dat.recording/cpu0.0 s.dat.recording/cpu0.-1
cp s.dat.recording/cpu0.0 foreign
"$HGTRACE" restore s.dat 2> /dev/null && "$HGTRACE" restore w.dat 2> /dev/null
trace-cmd report s.dat > s.txt 2> /dev/null
trace-cmd report w.dat 2> /dev/null | sed 's/^w\.dat/s.dat/' > w.txt
n=$(grep -c . w.txt)
if [ $split -ge 1 ] && [ "$n" -gt 1000 ] && cmp -s s.txt w.txt &&
	cmp -s foreign s.dat.recording/cpu0.0 && cmp -s foreign s.dat.recording/cpu0.-1; then
	tap_ok "restore: $split CPU(s) in 12 streams each, trace-cmd's report the same as whole ($n lines); cpu0.0 and cpu0.-1 neither taken nor removed"
else
	tap_fail "restore of 12 streams: $split split, $n lines, differ: $(diff s.txt w.txt | head -3 | tr '\n' '|')"
fi

# The output directory removed while recording (issue 22, item 6): the last line says the
# recording is gone, never that it is kept in a directory that no longer exists.
mkdir rmo
"$HGTRACE" record -e sched:sched_switch -o rmo/z.dat -- bash -c 'end=$((SECONDS + 60))
	until [ -e rmo/z.dat.recording/head.dat ] || [ $SECONDS -ge $end ]; do sleep 0.01; done
	rm -rf rmo' > /dev/null 2> rmo.log
rc=$?
if [ $rc = 1 ] && tail -1 rmo.log | grep -q 'rmo/z.dat.recording was removed while recording: nothing of it is kept' &&
	! grep -q 'is kept in' rmo.log; then
	tap_ok "output directory removed while recording: exit 1, '$(tail -1 rmo.log)'"
else
	tap_fail "output directory removed: exit $rc: $(tr '\n' '|' < rmo.log)"
fi
# A recording directory holding a CPU file beyond the CPUs its head.dat declares (cpuN for
# N CPUs, numbered from 0): restore refuses it in one line naming the file, and writes
# nothing.
"$HGTRACE" record -B hgt_crash_xc$$ -e sched:sched_switch -o xc.dat > /dev/null 2>&1 &
rp=$!
end=$((SECONDS + 60))
until [ -s xc.dat.recording/head.dat ] && [ -e xc.dat.recording/cpu0 ] || [ $SECONDS -ge $end ]; do sleep 0.02; done
kill -KILL $rp
wait $rp 2> /dev/null
ncpu=$(nproc)
cp xc.dat.recording/cpu0 "xc.dat.recording/cpu$ncpu"
"$HGTRACE" restore xc.dat > /dev/null 2> xc.log
rc=$?
if [ $rc = 1 ] && [ "$(wc -l < xc.log)" = 1 ] &&
	grep -q "cpu$ncpu: CPU $ncpu, but head.dat declares $ncpu CPUs" xc.log && [ ! -e xc.dat ]; then
	tap_ok "restore refuses cpu$ncpu of a $ncpu-CPU head: $(cat xc.log)"
else
	tap_fail "cpu$ncpu beyond the head's CPUs: exit $rc, xc.dat $( [ -e xc.dat ] && echo written || echo absent): $(tr '\n' '|' < xc.log)"
fi
"$HGTRACE" reset > /dev/null 2>&1
# A page whose commit size cannot fit in it (the page size less its 16-byte header, plus
# one): restore keeps the pages before it and says where it stopped, naming the damaged
# page; trace-cmd reads what was written.
"$HGTRACE" record -B hgt_crash_xp$$ -e sched:sched_switch -o xp.dat > /dev/null 2>&1 &
rp=$!
end=$((SECONDS + 60))
until [ "$(stat -c %s xp.dat.recording/cpu0 2> /dev/null || echo 0)" -ge 8192 ] || [ $SECONDS -ge $end ]; do
	ls /usr/bin > /dev/null
done
kill -KILL $rp
wait $rp 2> /dev/null
# the second page's commit field (offset 4096 + 8, 8 bytes, little endian): 4096 - 16 + 1
python3 -c 'import struct, sys
f = open(sys.argv[1], "r+b"); f.seek(4096 + 8); f.write(struct.pack("<Q", 4096 - 16 + 1))' xp.dat.recording/cpu0
"$HGTRACE" restore xp.dat > /dev/null 2> xp.log
rc=$?
if [ $rc = 0 ] && grep -q 'cpu0: 4096 bytes of pages kept, [0-9]* bytes after them dropped (a damaged page)' xp.log &&
	trace-cmd report xp.dat > /dev/null 2>&1; then
	tap_ok "restore stops at a page whose commit does not fit: $(grep -m1 'damaged page' xp.log)"
else
	tap_fail "oversized page commit: exit $rc: $(tr '\n' '|' < xp.log)"
fi
"$HGTRACE" reset > /dev/null 2>&1
tap_done
