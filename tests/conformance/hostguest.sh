#!/usr/bin/env bash
# Host + guest on one timeline, against Debian's trace-cmd: simulated sessions (1, 4 and 16
# vCPUs; attach -s, kvm_write_tsc_offset, embedded interpolated sync; v6 input with sparse
# vCPU ids; an offset nobody recorded, inferred) attached by hgtrace, then merged by both
# tools: identical lines (latency column removed). trace-cmd dump must read every attached file. The sync check must
# place every simulated guest event inside its vCPU's windows, none unchecked, and a recount of
# trace-cmd's merged lines (lib/windows.awk) must agree; with a wrong offset both count the same
# events outside. Bad attach input leaves both files
# byte-identical.
# Usage: hostguest.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/sim.sh"
command -v trace-cmd > /dev/null || tap_skip_all "trace-cmd is not installed"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
cd "$t" || exit 1


n=0
for args in "--vcpus 1 --host-cpus 2" "--vcpus 4" "--vcpus 16 --host-cpus 4" \
	"--vcpus 4 --write-tsc-offset" "--vcpus 4 --embed-sync --drift-ppb 3000" \
	"--vcpus 4 --file-version 6 --sparse-vcpu-ids" "--vcpus 4 --compression none" \
	"--vcpus 4 --tsc-offset 77777777"; do
	n=$((n + 1))
	p=s$n
	# shellcheck disable=SC2086
	if ! simulate $p --seed $n $args; then
		tap_fail "simulate $args"
		continue
	fi
	case "$args" in
	*embed-sync*) how="embedded sync" ;;
	*tsc-offset\ 7*)
		# nothing recorded the offset: inferred from the kvm windows (a scaled guest is
		# checked against the ground truth in unit-sim: trace-cmd scales differently)
		how="attach, offset inferred"
		# shellcheck disable=SC2086
		"$HGTRACE" attach $p-host.dat $p-guest.dat $pids > $p.att 2>&1 ||
			tap_fail "attach $args: $(cat $p.att)"
		;;
	*write-tsc-offset*)
		how="attach from kvm_write_tsc_offset"
		# shellcheck disable=SC2086
		"$HGTRACE" attach $p-host.dat $p-guest.dat $pids > $p.att 2>&1 ||
			tap_fail "attach $args: $(cat $p.att)"
		# each vCPU's offset from the host's event, not inferred (which would agree here)
		k=$(grep -c '^guest CPU [0-9]*: 1 sample, first offset [0-9]* (from kvm_write_tsc_offset)$' $p.att)
		[ "$k" = 4 ] && tap_ok "$args: all 4 offsets taken from kvm_write_tsc_offset" ||
			tap_fail "$args: $k of 4 offsets from kvm_write_tsc_offset: $(cat $p.att)"
		;;
	*)
		how="attach -s"
		# shellcheck disable=SC2086
		"$HGTRACE" attach -s "$off" $p-host.dat $p-guest.dat $pids 999999 > $p.att 2>&1 ||
			tap_fail "attach $args: $(cat $p.att)"
		;;
	esac
	"$HGTRACE" report $p-host.dat $p-guest.dat 2> $p.sync | strip_latency > $p.h
	trace-cmd report -i $p-host.dat -i $p-guest.dat > $p.t 2> /dev/null
	lines=$(wc -l < $p.h)
	if [ "$lines" -gt 1000 ]; then
		tap_cmp "$args ($how): merged report = trace-cmd's ($lines lines)" $p.h $p.t
	else
		tap_fail "$args: only $lines lines"
	fi
	# hgtrace's sync check must place every guest event (the simulator's count) inside its
	# vCPU's windows, none unchecked; the recount from trace-cmd's own merged lines must agree.
	guest_events=$(sed -n 's/^guest: .*(\([0-9]*\) events.*/\1/p' $p.out)
	said=$(sed -n 's/.* \([0-9]*\) events: \([0-9]*\) outside.*, \([0-9]*\) inside, \([0-9]*\) unchecked.*/\1 \2 \3 \4/p' $p.sync)
	if [ "${guest_events:-0}" -gt 1000 ] && [ "$said" = "$guest_events 0 $guest_events 0" ]; then
		tap_ok "$args: sync check: all $guest_events guest events inside their vCPU's windows, 0 unchecked"
	else
		tap_fail "$args: sync check (simulated $guest_events guest events): $(cat $p.sync)"
	fi
	recount=$(trace-cmd report -t -i $p-host.dat -i $p-guest.dat 2> /dev/null |
		awk -v host=$p-host.dat -v pids="$pids" -f "$here/lib/windows.awk")
	if [ "$recount" = "$guest_events inside, 0 outside" ]; then
		tap_ok "$args: trace-cmd's merged lines, recounted: $recount"
	else
		tap_fail "$args: trace-cmd's merged lines, recounted: $recount (of $guest_events)"
	fi
	for f in $p-host.dat $p-guest.dat; do
		if trace-cmd dump --all -i $f > /dev/null 2>&1; then
			tap_ok "$args: trace-cmd dump reads $f"
		else
			tap_fail "$args: trace-cmd dump reads $f"
		fi
	done
done

# A wrong offset (120 us off): the sync check says so.
simulate w --vcpus 4
w=$((off + 312000))
# shellcheck disable=SC2086
"$HGTRACE" attach -s $w w-host.dat w-guest.dat $pids > /dev/null
"$HGTRACE" report w-host.dat w-guest.dat 2> w.sync > /dev/null
outside=$(sed -n 's/.*events: \([0-9]*\) outside.*/\1/p' w.sync)
unchecked=$(sed -n 's/.*, \([0-9]*\) unchecked$/\1/p' w.sync | head -1)
recount=$(trace-cmd report -t -i w-host.dat -i w-guest.dat 2> /dev/null |
	awk -v host=w-host.dat -v pids="$pids" -f "$here/lib/windows.awk")
want="$outside outside"
[ "${unchecked:-0}" != 0 ] && want="$want, $unchecked unchecked"
if [ "${outside:-0}" -gt 1000 ] && [ "${recount#*, }" = "$want" ]; then
	tap_ok "a wrong offset puts $outside guest events outside their windows${unchecked:+, $unchecked unchecked} (trace-cmd's lines: $recount)"
else
	tap_fail "a wrong offset is noticed: $(cat w.sync); trace-cmd's lines: $recount"
fi

# Bad input: one line, non-zero, both files unchanged.
simulate b --vcpus 2
cp "$here/data/tsc.dat" plain.dat
cp "$here/data/local-v7none.dat" local.dat
bad() { # WHAT HOST GUEST OPTIONS... (PIDs from $pids)
	local what=$1 host=$2 guest=$3
	shift 3
	# shellcheck disable=SC2086
	tap_refuses "$what" "$host $guest" "$HGTRACE" attach "$@" "$host" "$guest" $pids
}
bad "host without kvm events" plain.dat b-guest.dat -s "$off"
pids_save=$pids
pids="4242 4343"
bad "PIDs that ran no vCPU" b-host.dat b-guest.dat -s "$off"
pids=$pids_save
bad "guest with another clock (local)" b-host.dat local.dat -s "$off"
bad "-s that does not parse" b-host.dat b-guest.dat -s "12,abc"
simulate o --vcpus 2 --seed 99
bad "no -s, nothing recorded, and the guest file of another session" b-host.dat o-guest.dat
tap_done
