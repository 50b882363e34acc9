#!/usr/bin/env bash
# make bench (part): the flight recorder of a guest-driven session (listen --record-host
# --flight) kept going at the agent's full rate (issue 23's bounded run, with a guest).
# The "guest" is hgtrace agent --now on this machine over TCP (127.0.0.1), recording an
# instance of its own that a writer fills with numbered 1000-byte trace_marker writes as
# fast as it can for FLIGHT_SOAK_S seconds (60; issue 23 asks 600), SIGUSR1 to the
# listener every 20 s; window 10 s, after 1 s; the host recorded with sched events.
# Printed: the rate the listener received, its peak RSS and CPU and the agent's, the most
# the listener's recordings and its flight recorder's files held on disk (sampled every
# second) against the pages written in the kept span (plus a tick) before that sample, the
# windows saved, and the gaps in the guest's final file (the last span): each must be where
# the kernel's own ring dropped events (the writer outran the agent there), none elsewhere
# (bench/marker-gaps.py): nothing lost or misplaced inside the window by the agent, the
# listener, their clock sync or the flight recorder.
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
arss=0 acpu=0
while kill -0 $ap 2> /dev/null; do
	bench_disk_sample out/*.recording out/*.flight-* >> disk.txt
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
tick=$(sed -n 's/.* 2 ticks of \([0-9.]*\) s.*/\1/p' listen.log | head -1)
read -r held span ratio nsamp < <(awk -v K="$(echo "${keep:-0} + ${tick:-0}" | bc -l)" -f "$here/disk-bound.awk" disk.txt)
read -r first last gap other drops < <("$hg" report "$g" 2> /dev/null | python3 "$here/marker-gaps.py")
printf "bench: flight soak, listen --record-host with agent --now, %d s: %d markers written (%.1f MB/s), agent exit %d\n" \
	"$S" "${written:-0}" "$rate" "$arc"
printf "bench: flight soak, listen: peak RSS %d KB, CPU %.1f s; agent: peak RSS %d KB, CPU %.1f s\n" \
	"$lrss" "$(echo "$lu + $ls" | bc -l)" "$arss" "$acpu"
printf "bench: flight soak, listen: of %d disk samples, the fullest against its span: %s MB held, %s MB of pages written in the %s s + a %s s tick before it\n" \
	"$nsamp" "$held" "$span" "${keep:-?}" "${tick:-?}"
printf "bench: flight soak, listen: %s windows saved; the guest's final file %s: markers %s to %s, %d gaps, %d of them not where the kernel's ring dropped events (%d drops)\n" \
	"$(grep -c '^hgtrace flight: [^ ]*: trigger [0-9]*: saved' listen.log)" "$(basename "${g:-none}")" \
	"$first" "$last" "$gap" "$other" "$drops"
bench_row "flight + guest: disk held / kept span's pages" "$held MB" "$span MB (span)" "$ratio"
bench_row "flight + guest: gaps not the kernel's drops" "$other of $gap" "0" "$([ "$other" = 0 ] && echo 1 || echo 0)"
