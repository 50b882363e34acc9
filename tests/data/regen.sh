#!/usr/bin/env bash
# Regenerates the committed recordings and trace-cmd's outputs for them (root, tracefs,
# Debian's trace-cmd). The conformance-data test compares hgtrace against these outputs, so
# it also runs where tracefs is missing.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/record.sh"
. "$here/opts.sh"
why=$(tracefs_ready) || { echo "regen: $why" >&2; exit 1; }
cd "$here"
rm -rf expected && mkdir expected
record_top tsc.dat x86-tsc
record_top local.dat local
record_top mono.dat mono
record_instance_overrun inst.dat hgt_regen_$$
trace-cmd convert -i tsc.dat -o tsc-v6.dat --file-version 6 --compression none >/dev/null 2>&1
trace-cmd convert -i local.dat -o local-v7none.dat --file-version 7 --compression none >/dev/null 2>&1
rm -f local.dat
for f in *.dat; do
	for i in "${!DATA_OPTS[@]}"; do
		# shellcheck disable=SC2086
		trace-cmd report ${DATA_OPTS[$i]} "$f" > "expected/$f.$i.txt" 2>/dev/null && continue
		# trace-cmd 3.1.6 crashes on some inputs (-F on files with instances): say so.
		echo "trace-cmd report ${DATA_OPTS[$i]} exits with status $?" > "expected/$f.$i.crash"
		rm -f "expected/$f.$i.txt"
	done
done
trace-cmd report -i tsc.dat -i mono.dat -i inst.dat > expected/merge3.txt 2>/dev/null
trace-cmd report -i mono.dat -i local-v7none.dat --ts-offset 250000 --ts-diff \
	> expected/merge2-offset-diff.txt 2>/dev/null
trace-cmd --version 2>/dev/null | head -2 > expected/trace-cmd-version.txt || true
gzip -9 expected/*.txt
ls -la
