#!/usr/bin/env bash
# hgtrace convert against trace-cmd: every committed recording rewritten as v6 and as v7
# none/zlib/zstd must report exactly as the original, under hgtrace and under Debian's
# trace-cmd, and `trace-cmd dump` must accept it.
# Usage: convert.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
command -v trace-cmd > /dev/null || tap_skip_all "trace-cmd is not installed"
data=$here/data
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

# Can this trace-cmd read zlib at all? (Debian's 3.1.6 is built without it.) Ask it with a
# file it wrote itself.
if trace-cmd convert -i "$data/tsc.dat" -o "$t/probe.dat" --compression zlib > /dev/null 2>&1 &&
	trace-cmd report -i "$t/probe.dat" > /dev/null 2>&1; then
	tc_zlib=1
else
	tc_zlib=0
fi

for f in tsc tsc-v6 local-v7none mono inst; do
	in=$data/$f.dat
	"$HGTRACE" report "$in" > "$t/h0" 2>&1
	trace-cmd report -i "$in" > "$t/t0" 2> /dev/null
	for v in 6-none 7-none 7-zlib 7-zstd; do
		out=$t/$f-$v.dat
		if ! "$HGTRACE" convert -i "$in" -o "$out" --file-version "${v%-*}" \
			--compression "${v#*-}" 2> "$t/err"; then
			tap_fail "$f -> $v: convert failed: $(cat "$t/err")"
			continue
		fi
		"$HGTRACE" report "$out" > "$t/h1" 2>&1
		tap_cmp "$f -> $v: hgtrace report unchanged" "$t/h1" "$t/h0"
		if [ "${v#*-}" = zlib ] && [ $tc_zlib = 0 ]; then
			tap_skip "$f -> $v: trace-cmd report" "this trace-cmd cannot read zlib files"
			continue
		fi
		trace-cmd report -i "$out" > "$t/t1" 2> /dev/null
		tap_cmp "$f -> $v: trace-cmd report unchanged" "$t/t1" "$t/t0"
		if trace-cmd dump --all -i "$out" > /dev/null 2> "$t/err"; then
			tap_ok "$f -> $v: trace-cmd dump reads it"
		else
			tap_fail "$f -> $v: trace-cmd dump reads it: $(head -c 200 "$t/err")"
		fi
	done
done

# Round trip through every format back to v7 zstd: same report.
"$HGTRACE" convert -i "$data/inst.dat" -o "$t/a.dat" --file-version 6 &&
	"$HGTRACE" convert -i "$t/a.dat" -o "$t/b.dat" --compression zlib &&
	"$HGTRACE" convert -i "$t/b.dat" -o "$t/c.dat" --compression zstd
"$HGTRACE" report "$data/inst.dat" > "$t/h0" 2>&1
"$HGTRACE" report "$t/c.dat" > "$t/h1" 2>&1
tap_cmp "inst: v7 -> v6 -> zlib -> zstd round trip" "$t/h1" "$t/h0"

# Refusals: one line each, non-zero, nothing written.
if "$HGTRACE" convert -i "$data/tsc.dat" -o "$t/x.dat" --file-version 6 --compression zstd \
	2> "$t/err"; then
	tap_fail "v6 with compression is refused"
elif [ -e "$t/x.dat" ] || [ "$(wc -l < "$t/err")" != 1 ]; then
	tap_fail "v6 with compression is refused with one line and no file"
else
	tap_ok "v6 with compression is refused with one line and no file"
fi
printf 'garbage' > "$t/bad.dat"
if "$HGTRACE" convert -i "$t/bad.dat" -o "$t/y.dat" 2> "$t/err" || [ -e "$t/y.dat" ]; then
	tap_fail "a corrupt input leaves no output"
else
	tap_ok "a corrupt input leaves no output ($(cat "$t/err"))"
fi
tap_done
