#!/usr/bin/env bash
# make bench (part): the flight recorder (issue 23).
#  1. The live path: a simulated host + 4-vCPU guest session of 20 s fed in real time as a
#     recording in progress (tests/lib/feed-recording.py) to `hgtrace flight` with a 10 s
#     window and a 1 s tick: the CPU it takes per event recorded, and its worst lag, next
#     to `hgtrace why` over the finished files (the offline rate). The live path searches
#     each event about window/tick times, so its cost per event is that many offline passes.
#  2. Trigger latency on this machine's tracefs: record --flight with a marker:TEXT trigger
#     and --after 0; a trace_marker write, then the time until the trigger is said and
#     until its window is saved, with the defaults (tick 1 s, flush 1 s) and with
#     --tick 0.1 --flush-ms 100.
set -uo pipefail
builddir=$(realpath "${1:-build}")
hg=$builddir/tools/hgtrace/hgtrace
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
out=$here/out/flight
rm -rf "$out"
mkdir -p "$out"

# 1. live path
p=$out/s
"$hg" simulate -o "$p" --vcpus 4 --host-cpus 4 --duration-ms 20000 --seed 3 --embed-sync \
	--inject preempt:30000 --inject preempt:20000 --file-version 7 --compression none > "$p.sim" ||
	exit 1
events=$(( $(grep -o '([0-9]* events' "$p.sim" | tr -dc '0-9\n' | paste -sd+ | bc) ))
mkdir "$out/rec"
python3 "$here/../tests/lib/feed-recording.py" "$hg" 200 0.1 "$p-host.dat:$out/rec/t.dat" \
	"$p-guest.dat:$out/rec/t-g.dat" > "$out/feed.txt" &
fp=$!
while ! grep -q '^ready' "$out/feed.txt" 2> /dev/null && kill -0 $fp 2> /dev/null; do sleep 0.05; done
"$hg" flight --window 10 --after 1 --tick 1 --flight-prefix "$out/rec/flight" \
	--trigger 'wakeup>15ms' --trigger 'preempt>15ms' "$out/rec/t.dat" "$out/rec/t-g.dat" \
	2> "$out/flight.log" &
flp=$!
wait $fp
kill -INT $flp
wait $flp
cost=$(sed -n 's/^hgtrace flight: cost: //p' "$out/flight.log")
cpu=$(echo "$cost" | sed -n 's/.* searches, \([0-9.]*\) s of CPU.*/\1/p')
lag=$(echo "$cost" | sed -n 's/.*worst lag \([0-9.]*\) s.*/\1/p')
fed=$(awk '/^step/ { a = a ? a : $3; b = $3 } END { print b - a }' "$out/feed.txt")
read -r ws wc wm < <(bench_measure "$hg" why --threshold 15000 "$p-host.dat" "$p-guest.dat")
echo "bench: flight live path: $events events fed in $fed s ($(echo "$events / $fed" | bc) events/s); flight: $cost"
echo "bench: flight: $(grep -c '^hgtrace flight: trigger [0-9]*: saved' "$out/flight.log") windows saved"
live=$(echo "$events / $cpu" | bc)
off=$(echo "$events / $wc" | bc)
printf "bench: live path %d events per CPU second (%.2f us of CPU per event), offline why %d events per CPU second (%.2f us): %.1f offline passes per event; worst lag %s s\n" \
	"$live" "$(echo "$cpu * 1000000 / $events" | bc -l)" "$off" \
	"$(echo "$wc * 1000000 / $events" | bc -l)" "$(echo "$cpu / $wc" | bc -l)" "$lag"
bench_row "flight: live search, events per CPU s (goal: keeps up, lag < tick)" "$live/s, lag $lag s" "$off/s (why offline)" "$(echo "$live / $off" | bc -l)"

# 2. trigger latency on real tracefs
latency() { # latency NAME RECORD-ARGS...: prints "NAME: said X s, saved Y s"
	local name=$1
	shift
	python3 - "$hg" "$out/$name" "$@" << 'EOF'
import os, selectors, subprocess, sys, time
hg, base = sys.argv[1], sys.argv[2]
p = subprocess.Popen([hg, "record", "--flight", "--after", "0", "--flight-prefix", base,
                      "--trigger", "marker:hgt-spike", "-e", "sched:sched_process_exit",
                      "-o", base + ".dat"] + sys.argv[3:],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.PIPE, text=True)
lines, said, saved, t0 = [], None, None, None
deadline = time.monotonic() + 30
marker = "/sys/kernel/tracing/instances/hgtrace-%d/trace_marker" % p.pid
for line in p.stderr:
    now = time.monotonic()
    lines.append(line)
    if "event types enabled" in line and t0 is None:
        time.sleep(1.5)
        fd = os.open(marker, os.O_WRONLY)
        t0 = time.monotonic()
        os.write(fd, b"hgt-spike\n")
        os.close(fd)
    elif t0 is not None and "trigger 1: marker:hgt-spike" in line and said is None:
        said = now - t0
    elif t0 is not None and "trigger 1: saved" in line:
        saved = now - t0
        p.send_signal(2)
    if now > deadline:
        p.kill()
        break
p.wait()
if said is None or saved is None:
    print("%s: no trigger: %s" % (os.path.basename(base), " | ".join(lines[-4:]).strip()))
else:
    print("%s: said %.3f s, saved %.3f s after the marker" % (os.path.basename(base), said, saved))
EOF
}
for r in 1 2 3; do
	latency "default-$r"
	latency "fast-$r" --tick 0.1 --flush-ms 100
done | tee "$out/latency.txt" | sed 's/^/bench: flight trigger latency, /'
for k in default fast; do
	m=$(grep "^$k-" "$out/latency.txt" | sed -n 's/.* saved \([0-9.]*\) s.*/\1/p' | sort -n | tail -1)
	[ -n "$m" ] && echo "bench: flight: the marker to its saved window, worst of 3 ($k): $m s"
done
rm -rf "$out/rec"
