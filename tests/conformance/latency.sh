#!/usr/bin/env bash
# Latency (ASCII) traces against Debian's trace-cmd. This machine's kernel has no latency
# tracer (irqsoff, wakeup), so the test builds a v6 latency file the way trace-cmd's
# tracecmd_create_file_latency() lays it out (the metadata of a committed recording, a CPU
# count, an options block, "latency  \0", then the text of the trace file), lets trace-cmd
# convert it to v7 (none, zstd: a BUFFER_TEXT section), and requires hgtrace report to
# print what trace-cmd report prints for each. Then hgtrace convert rewrites it in every
# version and compression, and both tools must still print the same.
# Usage: latency.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
command -v trace-cmd > /dev/null || tap_skip_all "trace-cmd is not installed"
command -v python3 > /dev/null || tap_skip_all "python3 is not installed"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
cd "$t" || exit 1

# The text of a latency trace: a header and 3000 lines (160 KB: several compressed chunks).
{
	printf '# tracer: irqsoff\n#\n# irqsoff latency trace v1.1.5 on 6.1.0\n'
	printf '# --------------------------------------------------------------------\n'
	printf '# latency: 259 us, #%d/%d, CPU#1 | (M:server VP:0, KP:0, SP:0 HP:0 #P:2)\n' 3000 3000
	printf '#\n#                    _------=> CPU#\n#                   / _-----=> irqs-off\n'
	for i in $(seq 1 3000); do
		printf '  bash-%-5d   1d..%d.  %3dus : func_%d <-caller_%d\n' $((1000 + i % 7)) $((i % 3)) "$i" "$i" "$i"
	done
} > text

# make_v6 OUT [keep]: the committed v6 recording's metadata, then the latency data. With
# "keep", its own options block (it has a TRACECLOCK option) is kept, else an empty one.
make_v6() {
	python3 - "$here/data/tsc-v6.dat" "$1" "${2:-}" << 'PY'
import sys
src, out, keep = sys.argv[1], sys.argv[2], sys.argv[3] == "keep"
d = open(src, "rb").read()
o = d.find(b"options  \0")
f = d.find(b"flyrecord\0")
assert 0 < o < f
opts = d[o:f] if keep else b"options  \0" + b"\0\0"
open(out, "wb").write(d[:o] + opts + b"latency  \0" + open("text", "rb").read())
PY
}

make_v6 lat-6.dat || tap_fail "building the v6 latency file"
for v in 6 7-none 7-zstd; do
	f=lat-$v.dat
	if [ "$v" != 6 ] && ! trace-cmd convert --file-version 7 --compression "${v#7-}" \
		-i lat-6.dat -o "$f" > /dev/null 2>&1; then
		tap_fail "trace-cmd convert to v$v"
		continue
	fi
	trace-cmd report "$f" > tc.txt 2> /dev/null
	"$HGTRACE" report "$f" > hg.txt 2> hg.err
	if [ "$(wc -l < tc.txt)" -lt 3000 ]; then
		tap_fail "v$v: trace-cmd printed only $(wc -l < tc.txt) lines"
		continue
	fi
	tap_cmp "v$v: hgtrace report prints trace-cmd's $(wc -l < tc.txt) lines" hg.txt tc.txt
	"$HGTRACE" dump "$f" > dump.txt 2>&1
	if [ "$v" = 6 ]; then
		tap_check "v6: dump names the latency data" grep -q -i "latency" dump.txt
	else
		tap_check "v$v: dump lists the BUFFER_TEXT section" grep -q "BUFFER_TEXT" dump.txt
	fi
done

# hgtrace convert: every version and compression, read back by both tools.
trace-cmd report lat-6.dat > want.txt 2> /dev/null
for v in 6-none 7-none 7-zstd 7-zlib; do
	f=conv-$v.dat
	if ! "$HGTRACE" convert -i lat-6.dat -o "$f" --file-version "${v%-*}" \
		--compression "${v#*-}" 2> err.txt; then
		tap_fail "convert to $v: $(cat err.txt)"
		continue
	fi
	"$HGTRACE" report "$f" > hg.txt 2>&1
	tap_cmp "convert to $v: hgtrace report unchanged" hg.txt want.txt
	if [ "$v" = 7-zlib ] && ! trace-cmd report "$f" > /dev/null 2>&1; then
		tap_skip "convert to $v: trace-cmd report" "this trace-cmd cannot read zlib files"
		continue
	fi
	trace-cmd report "$f" > tc.txt 2> /dev/null
	tap_cmp "convert to $v: trace-cmd report prints the same" tc.txt want.txt
	tap_check "convert to $v: trace-cmd dump reads it" eval "trace-cmd dump $f > /dev/null 2>&1"
done

# A TRACECLOCK option in a v6 latency file makes trace-cmd 3.1.6 read the text's first 8
# bytes as the length of a trace-clock block (it warns "File has trace_clock bug") and
# print the rest; hgtrace prints the whole text (hgtrace-report(1), DIFFERENCES).
make_v6 lat-clock.dat keep
{
	echo "cpus=2"
	cat text
	echo
} > want.txt
"$HGTRACE" report lat-clock.dat > hg.txt 2>&1
tap_cmp "v6 with a TRACECLOCK option: the whole text" hg.txt want.txt

# Several inputs: refused, as trace-cmd refuses them.
if "$HGTRACE" report lat-6.dat "$here/data/tsc.dat" > /dev/null 2> err.txt; then
	tap_fail "a latency trace among several inputs is refused"
else
	tap_check "a latency trace among several inputs is refused in one line: $(head -1 err.txt)" \
		test "$(wc -l < err.txt)" -eq 1
fi
tap_done
