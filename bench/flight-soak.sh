#!/usr/bin/env bash
# make bench (part): record --flight kept going at the full rate of this machine's trace
# buffer (issue 23's bounded run). A writer fills the recorder's instance with numbered
# 1000-byte trace_marker writes as fast as it can for FLIGHT_SOAK_S seconds (60; issue 23
# asks 600), SIGUSR1 every 20 s; window 10 s, after 1 s. Printed: the rate recorded, the
# recorder's peak RSS and CPU, the most the disk held (the flight's own figure, and the
# blocks of the recording directory and the recorder's search files, sampled every second)
# against the pages written in the kept span (plus a tick) before that sample, the windows
# saved, and the gaps in the final file's markers (the last window): each must be where
# the kernel's own ring dropped events (the writer outran the recorder there), none
# elsewhere: nothing lost inside the window by the recorder or the flight recorder.
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
while kill -0 $wp 2> /dev/null; do
	bench_disk_sample soak.dat.recording soak.dat.flight-* >> disk.txt
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
tick=$(sed -n 's/.* 2 ticks of \([0-9.]*\) s.*/\1/p' rec.log)
flight_disk=$(sed -n 's/.*at most \([0-9.]*\) MB of pages on disk.*/\1/p' rec.log)
rate=$(echo "$written * 1000 / $S / 1000000" | bc -l)
read -r held span ratio nsamp < <(awk -v K="$(echo "${keep:-0} + ${tick:-0}" | bc -l)" -f "$here/disk-bound.awk" disk.txt)
read -r first last gap other drops < <("$hg" report soak.dat 2> /dev/null | python3 "$here/marker-gaps.py")
lost=$(grep -o 'CPU [0-9]*: [0-9]* events LOST' rec.log | awk '{ s += $3 } END { print s + 0 }')
printf "bench: flight soak %d s: %d markers written (%.1f MB/s); recorder peak RSS %d KB, CPU %.1f s; %d events lost to the kernel's ring (the writer outran the recorder)\n" \
	"$S" "$written" "$rate" "$rss" "$(echo "$u + $s" | bc -l)" "$lost"
printf "bench: flight soak: disk held at most %s MB (flight's figure); of %d samples, the fullest against its span: %s MB held, %s MB of pages written in the %s s + a %s s tick before it\n" \
	"$flight_disk" "$nsamp" "$held" "$span" "$keep" "$tick"
rm -rf soak.dat.recording
printf "bench: flight soak: %s windows saved; the final file: markers %s to %s, %d gaps, %d of them not where the kernel's ring dropped events (%d drops; %.1f MB of pages)\n" \
	"$(grep -c '^hgtrace flight: trigger [0-9]*: saved' rec.log)" "$first" "$last" "$gap" "$other" "$drops" \
	"$(echo "${bytes:-0} / 1000000" | bc -l)"
bench_row "flight soak: disk held / kept span's pages" "$held MB" "$span MB (span)" "$ratio"
bench_row "flight soak: gaps not the kernel's drops" "$other of $gap" "0" "$([ "$other" = 0 ] && echo 1 || echo 0)"
