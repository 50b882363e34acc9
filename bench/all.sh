#!/usr/bin/env bash
# make bench: every benchmark twice, on the machine as it is and again with one core kept
# busy by stress-ng (--cpu 1), then one table of what each measured: hgtrace's figure, its
# peer's (trace-cmd, LTTng-UST, or a goal where no peer does the same), and the ratio in
# hgtrace's favour in both runs. Each benchmark prints its own details as it goes.
# Usage: all.sh BUILDDIR [BENCH...]   (BENCH: run hostguest agent ...; default all)
set -uo pipefail
builddir=${1:-build}
shift
here=$(cd "$(dirname "$0")" && pwd)
benches=("$@")
[ ${#benches[@]} -gt 0 ] || benches=(run hostguest agent probes session infer view-why export flight flight-soak flight-soak-listen crash soak)
mkdir -p "$here/out"
quiet=$here/out/summary-quiet.tsv busy=$here/out/summary-busy.tsv
rm -f "$quiet" "$busy"

pass() { # pass SUMMARY: every benchmark once, its rows to SUMMARY
	for b in "${benches[@]}"; do
		BENCH_SUMMARY=$1 "$here/$b.sh" "$builddir" || echo "bench $b: exit $?"
	done
}

echo "==== make bench, pass 1 of 2: the machine as it is (load average $(cut -d' ' -f1 /proc/loadavg))"
pass "$quiet"
if command -v stress-ng > /dev/null; then
	echo "==== make bench, pass 2 of 2: with one core busy (stress-ng --cpu 1)"
	stress-ng --cpu 1 --timeout 7200 > /dev/null 2>&1 &
	sp=$!
	pass "$busy"
	kill $sp 2> /dev/null
	wait $sp 2> /dev/null
else
	echo "==== make bench: no stress-ng (scripts/deps.sh installs it): no pass with one core busy"
fi

echo
echo "==== summary: measure, hgtrace, peer, ratio (> 1: hgtrace better)"
awk -F'\t' -v busy="$busy" '
	BEGIN {
		while ((getline l < busy) > 0) {
			split(l, f, "\t")
			b[f[1]] = f[4]
		}
		printf "%-46s %-22s %-30s %8s %8s\n", "measure", "hgtrace", "peer", "as is", "1 busy"
	}
	{ printf "%-46s %-22s %-30s %7.2fx %8s\n", $1, $2, $3, $4, ($1 in b) ? sprintf("%.2fx", b[$1]) : "-" }
' "$quiet"
# a paced writer's own rate with one core busy: the table's peer column is the first pass's
[ -s "$busy" ] && awk -F'\t' '$3 ~ /writer did/ { printf "1 busy: %s: %s (%s)\n", $1, $2, $3 }' "$busy"
