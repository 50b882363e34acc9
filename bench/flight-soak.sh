#!/usr/bin/env bash
# make bench (part): record --flight kept going at the full rate of this machine's trace
# buffer (issue 23's bounded run). A writer fills the recorder's instance with numbered
# 1000-byte trace_marker writes as fast as it can for FLIGHT_SOAK_S seconds (60; issue 23
# asks 600), SIGUSR1 every 20 s; window 10 s, after 1 s. Printed: the rate recorded, the
# recorder's peak RSS and CPU, the most the disk held (the flight's own figure, and the
# recording directory's blocks sampled every second) against the kept span's bytes at
# that rate, the windows saved, and whether the final file's markers (the last window)
# run without a gap: nothing lost inside the window.
set -uo pipefail
builddir=$(realpath "${1:-build}")
hg=$builddir/tools/hgtrace/hgtrace
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
S=${FLIGHT_SOAK_S:-60}
T=/sys/kernel/tracing
[ "$(id -u)" = 0 ] && [ -e $T/trace_marker ] || { echo "bench flight-soak: needs root and tracefs"; exit 0; }
w=$(dirname "$0")/out/flight-soak
rm -rf "$w"
mkdir -p "$w"
cd "$w" || exit 1
inst=hgt_flight_soak$$
"$hg" record --flight --window 10 --after 1 \
	--trigger 'marker:no-such-marker' -B $inst -b 8192 -e sched:sched_process_exit -o soak.dat \
	2> rec.log &
rp=$!
while ! grep -q 'event types enabled' rec.log 2> /dev/null; do
	kill -0 $rp 2> /dev/null || { echo "bench flight-soak: record failed: $(cat rec.log)"; exit 0; }
	sleep 0.05
done
python3 "$here/marker-writer.py" "$T/instances/$inst/trace_marker" "$S" "$rp" > writer.txt &
wp=$!
peak=0
dir=soak.dat.recording
while kill -0 $wp 2> /dev/null; do
	b=$(du -sk "$dir" 2> /dev/null | cut -f1)
	[ "${b:-0}" -gt "$peak" ] && peak=$b
	sleep 1
done
wait $wp
read -r rss < <(awk '/^VmHWM:/ { print $2 }' /proc/$rp/status)
read -r u s < <(awk '{ print $14 / 100, $15 / 100 }' /proc/$rp/stat)
kill -INT $rp
wait $rp
written=$(cat writer.txt)
bytes=$(grep -o 'soak.dat: [0-9]* bytes of ring-buffer pages' rec.log | grep -o '[0-9]* bytes' | tr -dc 0-9)
keep=$(sed -n 's/.*keeping the last \([0-9.]*\) s.*/\1/p' rec.log)
flight_disk=$(sed -n 's/.*at most \([0-9.]*\) MB of pages on disk.*/\1/p' rec.log)
rate=$(echo "$written * 1000 / $S / 1000000" | bc -l)
# grep -o, not sed 's/.*...\(N\) .*/': its leading .* over lines of 1,000 bytes took 14
# minutes of CPU for 4 M lines here, grep with hgtrace's report 32 s
"$hg" report soak.dat 2> /dev/null | grep -o 'tracing_mark_write: m [0-9]*' | cut -d' ' -f3 > marks.txt
gap=$(awk 'NR > 1 && $1 != p + 1 { g++ } { p = $1 } END { print g + 0 }' marks.txt)
first=$(head -1 marks.txt)
last=$(tail -1 marks.txt)
printf "bench: flight soak %d s: %d markers written (%.1f MB/s); recorder peak RSS %d KB, CPU %.1f s\n" \
	"$S" "$written" "$rate" "$rss" "$(echo "$u + $s" | bc -l)"
printf "bench: flight soak: disk held at most %s MB (flight's figure), %.1f MB (du, each second); the kept span %s s is %.1f MB at that rate\n" \
	"$flight_disk" "$(echo "$peak / 1000" | bc -l)" "$keep" "$(echo "$rate * $keep" | bc -l)"
rm -rf soak.dat.recording
printf "bench: flight soak: %s windows saved; the final file: markers %s to %s, %d gaps (%s MB of pages)\n" \
	"$(grep -c '^hgtrace flight: trigger [0-9]*: saved' rec.log)" "$first" "$last" "$gap" \
	"$(echo "${bytes:-0} / 1000000" | bc -l | cut -c1-6)"
bench_row "flight soak: disk held / kept span at the rate" "$(echo "$peak / 1000" | bc) MB" "$(echo "$rate * $keep" | bc) MB (span)" "$(echo "$rate * $keep * 1000 / ($peak + 1)" | bc -l)"
