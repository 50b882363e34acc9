#!/usr/bin/env bash
# Conformance on real recordings made now: trace-cmd records this machine (clocks x86-tsc,
# local, mono; an overrun instance), converts each to v6 and v7 none (its record output is v7
# zstd), and `hgtrace report` must print what `trace-cmd report` prints, option by option.
# zlib copies are written by hgtrace convert (this trace-cmd has no zlib) and compared with
# trace-cmd's report of the original.
# Usage: live.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(dirname "$0")/..
. "$here/lib/tap.sh"
. "$here/lib/record.sh"
. "$here/lib/compare.sh"
why=$(tracefs_ready) || tap_skip_all "$why"
dir=$(mktemp -d /tmp/hgtrace-live.XXXXXX)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1

bases=()
for clock in x86-tsc local mono; do
	if record_top "$dir/$clock.dat" "$clock"; then
		tap_ok "trace-cmd recorded clock $clock"
		bases+=("$clock")
	else
		tap_fail "trace-cmd recorded clock $clock"
	fi
done
if record_instance_overrun "$dir/inst.dat" "hgt_live_$$"; then
	tap_ok "instance with a tiny buffer recorded and extracted"
	bases+=(inst)
	if trace-cmd report inst.dat 2>/dev/null | grep -q 'EVENTS DROPPED'; then
		tap_ok "the instance recording overran (pages carry missed events)"
	else
		tap_fail "the instance recording overran (pages carry missed events)"
	fi
else
	tap_fail "instance with a tiny buffer recorded and extracted"
fi

files=()
for b in "${bases[@]}"; do
	files+=("$b.dat")
	for v in "6 none" "7 none"; do
		set -- $v
		out="$b-v$1-$2.dat"
		if trace-cmd convert -i "$b.dat" -o "$out" --file-version "$1" --compression "$2" \
			>/dev/null 2>&1; then
			files+=("$out")
		else
			tap_fail "trace-cmd convert $b to v$1 $2"
		fi
	done
done

for f in "${files[@]}"; do
	for o in "${SINGLE_OPTS[@]}"; do
		# shellcheck disable=SC2086
		compare_live "$f report $o" $o "$f"
	done
	# The latency column is the only difference from the pre-3.3 line format.
	"$HGTRACE" report "$f" | strip_latency > got
	"$HGTRACE" report --no-latency "$f" > want
	tap_cmp "$f: stripping the latency column gives the --no-latency lines" got want
done

# zlib: Debian's trace-cmd 3.1.6 can neither write nor read it, so hgtrace writes the zlib
# copy and its report must equal trace-cmd's report of the original (--stat excluded: it
# prints file offsets and compressed sizes, which differ by design).
mkdir -p zlib
for b in "${bases[@]}"; do
	if ! "$HGTRACE" convert -i "$b.dat" -o "zlib/$b.dat" --compression zlib 2> err; then
		tap_fail "hgtrace convert $b to v7 zlib: $(cat err)"
		continue
	fi
	for o in "${SINGLE_OPTS[@]}"; do
		[ "$o" = "--stat" ] && continue
		# shellcheck disable=SC2086
		compare_as "zlib/$b.dat report $o (= trace-cmd on $b.dat)" "zlib/$b.dat" "$b.dat" $o
	done
done

if [ ${#bases[@]} -ge 3 ]; then
	a=${bases[0]}.dat b=${bases[1]}-v6-none.dat c=${bases[2]}-v7-none.dat
	compare_live "2-file merge" -i "$a" -i "$b"
	compare_live "3-file merge" -i "$a" -i "$b" -i "$c"
	compare_live "2-file merge --ts-offset" -i "$b" -i "$c" --ts-offset 123456
	compare_live "3-file merge --ts-offset on two" -i "$a" -i "$b" --ts-offset -5000 -i "$c" --ts-offset 70000
	compare_live "2-file merge --ts2secs global" --ts2secs 2000000000 -i "$b" -i "$c"
	compare_live "2-file merge --ts2secs per file" -i "$b" -i "$c" --ts2secs 500000000
	compare_live "2-file merge --ts-diff" --ts-diff -i "$b" -i "$c"
	compare_live "3-file merge -t" -t -i "$a" -i "$b" -i "$c"
	compare_live "2-file merge --cpu (global indexes)" --cpu 1-2 -i "$b" -i "$c"
	compare_live "2-file merge, filter after first -i" -i "$b" -F sched_switch -i "$c"
	[ -e inst.dat ] && compare_live "merge with an instance file" -i "$b" -i inst.dat
fi
tap_done
