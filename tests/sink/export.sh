#!/usr/bin/env bash
# hgtrace export (Trace Event Format JSON) against Debian's trace-cmd: for a simulated
# host + guest pair attached by hgtrace, and for the committed real recordings (x86-tsc raw
# cycles, mono, local, v6, a buffer instance with dropped events), the JSON parses, every
# event trace-cmd's report prints is an instant exactly once, at trace-cmd's time (to the
# nanosecond), on its file or instance and CPU, and nothing else is; complete events
# (running tasks, guest mode) never overlap on their thread; on the host there is one
# guest-mode interval per kvm_exit at most, and some; on a TCG host guest mode is exactly
# the vCPU threads' running intervals trace-cmd's sched_switch lines show; x86-tsc cycles
# are ns at the timers' rate (or --ts2secs), both as trace-cmd's --ts2secs prints them;
# every field's value is what trace-cmd's raw report (-R) prints, on these and on a
# recording of every event this kernel has, made now (where tracefs is), which must hold
# negative values of signed fields narrower than 64 bits; a slice ended by a kvm_exit or a
# sched_switch names it with that event's info text, its instant's. Checks in
# check-export.py. The
# same for --format perfetto, decoded with Google's protobuf library. The host + guest
# pairs are exported by worker threads (HGT_THREADS=3: whatever the size), the single
# files by the main thread alone (small: no workers).
# Usage: export.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/sim.sh"
. "$here/lib/record.sh"
command -v trace-cmd > /dev/null || tap_skip_all "trace-cmd is not installed"
command -v python3 > /dev/null || tap_skip_all "python3 is not installed"
tap_workdir

# formats OUT FILE...: the event formats of the FILEs (trace-cmd dump --events), for --raw
formats() {
	local out=$1 f
	shift
	for f; do trace-cmd dump --events "$f" 2> /dev/null; done > "$out"
}

check() { # WHAT JSON TRACE-CMD-REPORT [--guest-mode]
	local what=$1
	shift
	if python3 "$here/sink/check-export.py" "$@" > check.out 2>&1; then
		while read -r l; do tap_ok "$what: ${l#ok }"; done < check.out
	else
		tap_fail "$what: $(tr '\n' ' ' < check.out)"
	fi
}

simulate s --vcpus 4 --seed 3 || tap_fail "simulate"
# shellcheck disable=SC2086
"$HGTRACE" attach -s "$off" s-host.dat s-guest.dat $pids > /dev/null || tap_fail "attach"
if HGT_THREADS=3 "$HGTRACE" export -o s.json s-host.dat s-guest.dat 2> err.txt; then
	trace-cmd report -t -i s-host.dat -i s-guest.dat > s.tc 2> /dev/null
	trace-cmd report -R -t -i s-host.dat -i s-guest.dat > s.raw 2> /dev/null
	formats s.fmt s-host.dat s-guest.dat
	check "host + guest" s.json s.tc --guest-mode --raw s.raw --formats s.fmt
else
	tap_fail "export host + guest: $(cat err.txt)"
fi
for f in tsc mono local-v7none tsc-v6 inst; do
	if "$HGTRACE" export "$here/data/$f.dat" > "$f.json" 2> err.txt; then
		trace-cmd report -t "$here/data/$f.dat" > "$f.tc" 2> /dev/null
		# x86-tsc cycles with no rate stored: ns at the rate the file's timers show,
		# derived by the test from trace-cmd's lines (tests/lib/timer-rate.py)
		hz=$(python3 "$here/lib/timer-rate.py" "$f.tc")
		case $f in tsc*) [ -n "$hz" ] || tap_fail "$f.dat: no timer rate in trace-cmd's report" ;; esac
		[ -n "$hz" ] && trace-cmd report -t --ts2secs "$hz" "$here/data/$f.dat" > "$f.tc" 2> /dev/null
		trace-cmd report -R -t ${hz:+--ts2secs "$hz"} "$here/data/$f.dat" > "$f.raw" 2> /dev/null
		formats "$f.fmt" "$here/data/$f.dat"
		check "$f.dat${hz:+ (ns at the rate of its timers, $hz Hz)}" "$f.json" "$f.tc" --raw "$f.raw" --formats "$f.fmt"
	else
		tap_fail "export $f.dat: $(cat err.txt)"
	fi
done
# --ts2secs HZ: at that rate, as trace-cmd's --ts2secs
if "$HGTRACE" export --ts2secs 3000000000 -o hz.json "$here/data/tsc.dat" 2> err.txt; then
	trace-cmd report -t --ts2secs 3000000000 "$here/data/tsc.dat" > hz.tc 2> /dev/null
	check "--ts2secs 3000000000" hz.json hz.tc
else
	tap_fail "export --ts2secs: $(cat err.txt)"
fi
tap_refuses "export --ts2secs 0" "" "$HGTRACE" export --ts2secs 0 "$here/data/tsc.dat"

# A TCG host (no kvm events, vCPU ids 0, 2, 4): guest mode is when a vCPU thread runs, the
# threads from the host's GUEST option as trace-cmd dump prints it.
simulate t --tcg --embed-sync --vcpus 3 --sparse-vcpu-ids --host-cpus 2 --seed 5 || tap_fail "simulate --tcg"
tcgmap=$(trace-cmd dump --options t-host.dat 2> /dev/null |
	sed -n 's/^ *\([0-9]*\) \([1-9][0-9]*\) \[guest cpu, host pid\]/\2=\1/p' | paste -sd,)
[ "$(echo "$tcgmap" | tr ',' '\n' | grep -c .)" = 3 ] || tap_fail "trace-cmd dump: vCPU threads '$tcgmap'"
trace-cmd report -t -i t-host.dat -i t-guest.dat > t.tc 2> /dev/null
if HGT_THREADS=3 "$HGTRACE" export -o t.json t-host.dat t-guest.dat 2> err.txt; then
	check "TCG host + guest" t.json t.tc --tcg "$tcgmap"
else
	tap_fail "export TCG host + guest: $(cat err.txt)"
fi
# A page stamped back in time (damaged, or a clock that stepped back): CPU 0's third page
# of the host file begins before its second did, as trace-cmd's report shows; the slices
# across the step would end before they began, so there are none, and every event is still
# an instant at trace-cmd's time. The page's place from trace-cmd dump.
simulate b --seed 3 --duration-ms 100 --compression none || tap_fail "simulate b"
cpu0=$(trace-cmd dump --flyrecord -i b-host.dat 2> /dev/null | awk '$1 == 0 && $4 == "[id," { print $2 }')
python3 - b-host.dat "$cpu0" << 'PY'
import struct, sys
f, at = open(sys.argv[1], "r+b"), int(sys.argv[2])
f.seek(at + 4096)
t1 = struct.unpack("<Q", f.read(8))[0]
f.seek(at + 2 * 4096)
f.write(struct.pack("<Q", t1 - 1))
PY
trace-cmd report -t b-host.dat > b.tc 2> /dev/null
back=$(awk '$2 == "[000]" { t = $3 + 0; if (n++ && t < l) b++; l = t } END { print b + 0 }' b.tc)
if [ -z "$cpu0" ] || [ "$back" != 1 ]; then
	tap_fail "a page stamped back: trace-cmd's report shows $back step(s) back on CPU 0 (cpu 0 data at '$cpu0')"
elif "$HGTRACE" export -o b.json b-host.dat 2> err.txt; then
	check "a page stamped back" b.json b.tc
else
	tap_fail "export of a page stamped back: $(cat err.txt)"
fi
# Bad input: one line, non-zero, no output file.
tap_refuses "export of a file that is not a trace" "" "$HGTRACE" export -o bad.json /etc/passwd
[ -e bad.json ] && tap_fail "a failed export left bad.json"
check_rc=$("$HGTRACE" export --format protobuf s-host.dat > /dev/null 2> err.txt; echo $?)
[ "$check_rc" = 2 ] && tap_ok "--format protobuf: exit 2 ($(cat err.txt))" || tap_fail "--format protobuf: exit $check_rc"

# Every event this kernel has, recorded now (where tracefs is) of a workload's own tasks
# (the machine's others would make the file, and the checks' time, grow with how busy it
# is): every field of hundreds of kinds of event against trace-cmd's raw report, read by
# each field's conversion in the print format as libtraceevent prints it there; negative
# values of signed fields narrower than 64 bits must be among them (node=-1 of kmem
# events, a syscall's -errno), so that a sign extension missed is seen. Perfetto below too.
if why=$(tracefs_ready); then
	if record_workload_events all.dat all.log; then
		trace-cmd report -t all.dat > all.tc 2> /dev/null
		trace-cmd report -R -t all.dat > all.raw 2> /dev/null
		formats all.fmt all.dat
		if "$HGTRACE" export -o all.json all.dat 2> err.txt; then
			check "every event recorded now" all.json all.tc --raw all.raw --formats all.fmt --want-negative --want-bytes
		else
			tap_fail "export of every event recorded now: $(cat err.txt)"
		fi
	else
		tap_fail "every event of a workload made nothing: $(tail -2 all.log | tr '\n' ' ')"
	fi
else
	tap_skip "every event recorded now" "$why"
fi

# --format perfetto: decoded by Google's protobuf library (Debian's protoc and
# python3-protobuf, with perfetto.proto: Perfetto's field numbers), turned into the same
# JSON and checked the same way against trace-cmd.
if command -v protoc > /dev/null && /usr/bin/python3 -c 'import google.protobuf' 2> /dev/null; then
	protoc --python_out=. -I"$here/sink" "$here/sink/perfetto.proto"
	for f in s t tsc inst b all; do
		[ $f = all ] && [ ! -s all.dat ] && continue
		threads=
		case $f in
		s | t) set -- $f-host.dat $f-guest.dat && threads=3 ;;
		b) set -- b-host.dat ;;
		all) set -- all.dat ;;
		*) set -- "$here/data/$f.dat" ;;
		esac
		if env ${threads:+HGT_THREADS=$threads} "$HGTRACE" export --format perfetto -o "$f.pftrace" "$@" 2> err.txt &&
			PYTHONPATH=. /usr/bin/python3 "$here/sink/perfetto-to-json.py" "$f.pftrace" "$f.pf.json" > dec.txt 2>&1; then
			tap_ok "perfetto $f: $(cat dec.txt)"
			# shellcheck disable=SC2046
			check "perfetto $f" "$f.pf.json" "$f.tc" $([ $f = s ] && echo --guest-mode) \
				$([ -e $f.raw ] && echo --raw $f.raw --formats $f.fmt) \
				$([ $f = all ] && echo --want-negative --want-bytes) \
				$([ $f = t ] && echo --tcg "$tcgmap")
		else
			tap_fail "perfetto $f: $(cat err.txt dec.txt)"
		fi
	done
else
	tap_skip "--format perfetto decoded by protobuf" "protoc or python3-protobuf is missing (scripts/deps.sh installs them)"
fi
tap_done
