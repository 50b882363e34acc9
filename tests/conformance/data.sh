#!/usr/bin/env bash
# Conformance on committed real recordings (tests/data, made by data/regen.sh): hgtrace must
# print what Debian's trace-cmd printed for them (latency column removed), option by option.
# Usage: data.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/compare.sh"
. "$here/data/opts.sh"
data=$here/data
cd "$data" || exit 1
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

for f in *.dat; do
	for i in "${!DATA_OPTS[@]}"; do
		o=${DATA_OPTS[$i]}
		if [ -e "expected/$f.$i.crash" ] && [ "${o%% *}" = -F ]; then
			# trace-cmd crashed on this filter: the expected lines are its unfiltered
			# report's lines of that event (and the cpus= line).
			ev=${o#-F }
			zcat "expected/$f.0.txt.gz" | filter_lines "$ev" > "$t/want"
			# shellcheck disable=SC2086
			hgt_report_nolat $o "$f" > "$t/got"
			if [ "$(grep -c ": $ev: " "$t/want")" -gt 0 ]; then
				tap_cmp "$f report $o (trace-cmd 3.1.6 crashes): its unfiltered $ev lines" "$t/got" "$t/want"
			else
				tap_fail "$f report $o: trace-cmd's unfiltered report has no $ev line"
			fi
			continue
		fi
		if [ -e "expected/$f.$i.crash" ]; then
			# trace-cmd has no answer to compare with; hgtrace must still succeed.
			# shellcheck disable=SC2086
			if "$HGTRACE" report $o "$f" > "$t/got" 2>&1; then
				tap_ok "$f report $o: succeeds where trace-cmd 3.1.6 crashes"
			else
				tap_fail "$f report $o: succeeds where trace-cmd 3.1.6 crashes"
			fi
			continue
		fi
		# shellcheck disable=SC2086
		hgt_report_nolat $o "$f" > "$t/got"
		zcat "expected/$f.$i.txt.gz" > "$t/want"
		tap_cmp "$f report $o" "$t/got" "$t/want"
	done
done
hgt_report_nolat -i tsc.dat -i mono.dat -i inst.dat > "$t/got"
zcat expected/merge3.txt.gz > "$t/want"
tap_cmp "3-file merge (x86-tsc, mono, instance file)" "$t/got" "$t/want"
hgt_report_nolat -i mono.dat -i local-v7none.dat --ts-offset 250000 --ts-diff > "$t/got"
zcat expected/merge2-offset-diff.txt.gz > "$t/want"
tap_cmp "2-file merge with --ts-offset and --ts-diff" "$t/got" "$t/want"
if zcat expected/inst.dat.0.txt.gz | grep -q 'EVENTS DROPPED'; then
	tap_ok "the instance recording carries dropped-events markers"
else
	tap_fail "the instance recording carries dropped-events markers"
fi
# A page that lost exactly one event (the kernel's "missed events" flags with the count 1
# stored after its data), made here in a copy of local-v7none.dat at CPU 0's fourth page
# (offset from trace-cmd dump): the report prints "[1 EVENTS DROPPED]" as trace-cmd does.
off=$(trace-cmd dump --options local-v7none.dat 2> /dev/null | awk '$1 == 0 && /data offset and size/ { print $2; exit }')
python3 - "$off" "$t/m1.dat" << 'PY'
import struct, sys
d = bytearray(open("local-v7none.dat", "rb").read())
page = int(sys.argv[1]) + 3 * 4096
commit = struct.unpack_from("<Q", d, page + 8)[0]
assert commit + 16 + 8 <= 4096
struct.pack_into("<Q", d, page + 8, commit | 1 << 31 | 1 << 30)  # missed, count stored
struct.pack_into("<Q", d, page + 16 + commit, 1)
open(sys.argv[2], "wb").write(d)
PY
hgt_report_nolat "$t/m1.dat" > "$t/got"
trace-cmd report "$t/m1.dat" > "$t/want" 2> /dev/null
if grep -q '^CPU:0 \[1 EVENTS DROPPED\]$' "$t/want"; then
	tap_cmp "one event dropped on a page: '$(grep -m1 DROPPED "$t/want")' as trace-cmd ($(wc -l < "$t/want") lines)" "$t/got" "$t/want"
else
	tap_fail "the copy with one dropped event: trace-cmd prints no '[1 EVENTS DROPPED]' (offset '$off')"
fi
# --boundary marks each page's first event: as many marks per CPU as pages, counted from
# the CPU's data size that trace-cmd dump gives (uncompressed files; every page holds events)
for f in tsc-v6.dat local-v7none.dat; do
	want=$(trace-cmd dump --flyrecord --options "$f" 2> /dev/null | awk '
		/\[offset, size of cpu/ { sub(/\]/, "", $NF); print $NF ":" $2 / 4096 }
		/\[id, data offset and size\]/ && !seen[$1]++ { print $1 ":" $3 / 4096 }' | sort)
	got=$("$HGTRACE" report --boundary "$f" 2> /dev/null | sed -n 's/^CPU:\([0-9]*\) \[SUBBUFFER START\]$/\1/p' |
		sort | uniq -c | awk '{ print $2 ":" $1 }' | sort)
	[ -n "$want" ] && [ "$got" = "$want" ] &&
		tap_ok "$f report --boundary: a mark per page, per CPU as trace-cmd dump's sizes say ($(echo $want))" ||
		tap_fail "$f report --boundary: marks per CPU '$(echo $got)', pages '$(echo $want)'"
done
tap_done
