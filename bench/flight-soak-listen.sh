#!/usr/bin/env bash
# make bench (part): the flight recorder of a guest-driven session (listen --record-host
# --flight) kept going at the agent's full rate (issue 23's bounded run, with a guest).
# The "guest" is hgtrace agent --now on this machine over TCP (127.0.0.1), recording an
# instance of its own that a writer fills with numbered 1000-byte trace_marker writes as
# fast as it can for FLIGHT_SOAK_S seconds (60; issue 23 asks 600), SIGUSR1 to the
# listener every 20 s; window 10 s, after 1 s; the host recorded with sched events.
# Printed: the rate the listener received, its peak RSS and CPU and the agent's, the most
# the listener's directory held on disk (sampled every second) against the kept span's
# bytes at that rate, the windows saved, and the gaps in the guest's final file (the last
# span): each must be where the kernel's own ring dropped events (the writer outran the
# agent there), none elsewhere: nothing lost inside the window by the agent, the listener
# or the flight recorder.
set -uo pipefail
builddir=$(realpath "${1:-build}")
hg=$builddir/tools/hgtrace/hgtrace
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
S=${FLIGHT_SOAK_S:-60}
T=/sys/kernel/tracing
[ "$(id -u)" = 0 ] && [ -e $T/trace_marker ] || { echo "bench flight-soak-listen: needs root and tracefs"; exit 0; }
w=$(dirname "$0")/out/flight-soak-listen
rm -rf "$w"
mkdir -p "$w/out"
cd "$w" || exit 1
inst=hgt_flsoak_g$$
port=$(python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$hg" listen -o out --tcp "$port" --bind 127.0.0.1 --max-mb 1000000 --record-host -e sched:sched_switch \
	--flight --window 10 --after 1 --trigger 'marker:no-such-marker' 2> listen.log &
lp=$!
hex=$(printf '%04X' "$port")
until awk -v p=":$hex" '$2 ~ p"$" && $4 == "0A" { f = 1 } END { exit !f }' /proc/net/tcp; do
	kill -0 $lp 2> /dev/null || { echo "bench flight-soak-listen: listen failed: $(tail -3 listen.log)"; exit 0; }
	sleep 0.05
done
"$hg" agent --now --tcp "127.0.0.1:$port" -B $inst -b 8192 -e sched:sched_process_exit -- \
	python3 "$here/marker-writer.py" "$T/instances/$inst/trace_marker" "$S" "$lp" > writer.txt 2> agent.log &
ap=$!
peak=0 arss=0 acpu=0
while kill -0 $ap 2> /dev/null; do
	b=$(du -sk out 2> /dev/null | cut -f1)
	[ "${b:-0}" -gt "$peak" ] && peak=$b
	r=$(awk '/^VmHWM:/ { print $2 }' /proc/$ap/status 2> /dev/null)
	[ "${r:-0}" -gt "$arss" ] && arss=$r
	c=$(awk '{ print ($14 + $15) / 100 }' /proc/$ap/stat 2> /dev/null)
	[ -n "$c" ] && acpu=$c
	sleep 1
done
wait $ap
arc=$?
# the session's end: the guest's file written ("wrote .../trace-NAME.dat")
for _ in $(seq 1 600); do
	grep -q 'wrote .*/trace-[^ ]*\.dat$' listen.log && break
	sleep 0.1
done
read -r lrss < <(awk '/^VmHWM:/ { print $2 }' /proc/$lp/status)
read -r lu ls < <(awk '{ print $14 / 100, $15 / 100 }' /proc/$lp/stat)
kill -INT $lp
wait $lp
written=$(cat writer.txt)
rate=$(echo "${written:-0} * 1000 / $S / 1000000" | bc -l)
keep=$(sed -n 's/.*keeping the last \([0-9.]*\) s.*/\1/p' listen.log | head -1)
g=$(ls out/trace-*.dat 2> /dev/null | head -1)
# the markers in order and the kernel's drops, where every CPU has its pages: a "CPU:N
# [... EVENTS DROPPED]" line flags that CPU's next record (the writer outran the agent
# there). A gap is the kernel's when some CPU's next record from the gap on has that flag.
read -r first last gap other drops < <("$hg" report "$g" 2> /dev/null | python3 -c '
import re, sys
# records: (cpu, marker, dropped-before); a drop line flags its CPU"s next record
recs, pend = [], set()
for l in sys.stdin:
    m = re.match(r"CPU:(\d+) \[.*EVENTS DROPPED\]$", l)
    if m:
        pend.add(int(m.group(1)))
        continue
    m = re.search(r"\[(\d+)\] .*tracing_mark_write: m (\d+) ", l)
    if m:
        c = int(m.group(1))
        recs.append((c, int(m.group(2)), c in pend))
        pend.discard(c)
cpus = sorted({c for c, _, _ in recs})
# for each position, the next record of each CPU from there on
nxt = {c: [None] * (len(recs) + 1) for c in cpus}
for i in range(len(recs) - 1, -1, -1):
    for c in cpus:
        nxt[c][i] = i if recs[i][0] == c else nxt[c][i + 1]
# from the first record of the CPU whose pages start last: before it, the other CPUs
# reach back further (the span kept begins with the page each CPU was writing)
start = max((next(i for i, r in enumerate(recs) if r[0] == c) for c in cpus), default=0)
gaps = other = 0
for i in range(start + 1, len(recs)):
    if recs[i][1] != recs[i - 1][1] + 1:
        gaps += 1
        if not any(nxt[c][i] is not None and recs[nxt[c][i]][2] for c in cpus):
            other += 1
drops = sum(1 for r in recs if r[2])
first = recs[start][1] if recs else "-"
last = recs[-1][1] if recs else "-"
print(first, last, gaps, other, drops)
')
printf "bench: flight soak, listen --record-host with agent --now, %d s: %d markers written (%.1f MB/s), agent exit %d\n" \
	"$S" "${written:-0}" "$rate" "$arc"
printf "bench: flight soak, listen: peak RSS %d KB, CPU %.1f s; agent: peak RSS %d KB, CPU %.1f s\n" \
	"$lrss" "$(echo "$lu + $ls" | bc -l)" "$arss" "$acpu"
printf "bench: flight soak, listen: disk held at most %.1f MB (du, each second); the kept span %s s is %.1f MB at that rate\n" \
	"$(echo "$peak / 1000" | bc -l)" "${keep:-?}" "$(echo "$rate * ${keep:-0}" | bc -l)"
printf "bench: flight soak, listen: %s windows saved; the guest's final file %s: markers %s to %s, %d gaps, %d of them not where the kernel's ring dropped events (%d drops)\n" \
	"$(grep -c '^hgtrace flight: [^ ]*: trigger [0-9]*: saved' listen.log)" "$(basename "${g:-none}")" \
	"$first" "$last" "$gap" "$other" "$drops"
bench_row "flight soak with a guest: disk held / kept span at the rate" "$(echo "$peak / 1000" | bc) MB" \
	"$(echo "$rate * ${keep:-0}" | bc) MB (span)" "$(echo "$rate * ${keep:-0} * 1000 / ($peak + 1)" | bc -l)"
