#!/usr/bin/env bash
# trace-cmd's agent protocol (lib/transport/tcmsg.c) against Debian's trace-cmd on this
# machine's loopback, through tcmsg-peer (tests/transport/tcmsg-peer.c):
# 1. hgtrace's TRACE_REQ to `trace-cmd agent -N 127.0.0.1 -p P`, ptp offered: its
#    TRACE_RESP parsed: as many CPUs as this machine has, its page size, ptp agreed on a
#    time-sync port, one data port per CPU, each one trace-cmd's agent is seen listening on
#    (/proc/net/tcp) in its search range 1500..6000; with no protocol offered, none agreed;
# 2. trace-cmd record -A's TRACE_REQ to tcmsg-peer agent: the guest's options as given on
#    trace-cmd's command line (after the -C trace-cmd adds), ptp offered, a trace id.
# The agent cannot record here (ftrace_enabled is read-only): it answers, then waits for
# the data connections; it is stopped, and any tsync instance it left removed.
# Usage: tracecmd-msg.sh HGTRACE TCMSG-PEER
peer=$(realpath "$2")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/record.sh"
why=$(tracefs_ready) || tap_skip_all "$why"
command -v python3 > /dev/null || tap_skip_all "python3 is missing"
tap_workdir
T=/sys/kernel/tracing
before=$(ls "$T/instances")

# listening PORT: whether a TCP socket listens on PORT
listening() {
	awk -v p=":$(printf '%04X' "$1")" '$2 ~ p"$" && $4 == "0A" { f = 1 } END { exit !f }' \
		/proc/net/tcp /proc/net/tcp6 2> /dev/null
}
# tc_agent: trace-cmd's agent on a free port ($aport), in its own process group ($apid)
tc_agent() {
	aport=$(free_port)
	setsid trace-cmd agent -N 127.0.0.1 -p "$aport" > tca.log 2>&1 &
	apid=$!
	wait_listen "$aport" $apid || tap_fail "trace-cmd agent does not listen: $(cat tca.log)"
}
stop_agent() {
	kill -- -"$apid" 2> /dev/null
	wait "$apid" 2> /dev/null
	# what trace-cmd's tsync made for this session (never another's)
	tc_sync_leftovers "$before"
}
trap 'stop_agent; _tap_cleanup' EXIT

# 1. hgtrace -> trace-cmd's agent
tc_agent
"$peer" host "$aport" -p ptp -- -e sched:sched_switch -b 1024 > h1.out 2> h1.err
out=$(cat h1.out)
ncpu=$(getconf _NPROCESSORS_ONLN)
psz=$(getconf PAGESIZE)
read -r cpus page proto tport ports < <(sed -n 's/^cpus=\([0-9]*\) page_size=\([0-9]*\) trace_id=0x[0-9a-f]* proto=\([a-z]*\) tsync_port=\([0-9]*\) ports=\([0-9,]*\)$/\1 \2 \3 \4 \5/p' h1.out)
nl=0 bad=""
for p in ${ports//,/ }; do
	if listening "$p" && [ "$p" -ge 1500 ] && [ "$p" -le 6000 ]; then nl=$((nl + 1)); else bad="$bad $p"; fi
done
if [ "$cpus" = "$ncpu" ] && [ "$page" = "$psz" ] && [ "$proto" = ptp ] && [ "${tport:-0}" -gt 0 ] &&
	[ "$nl" = "$ncpu" ] && [ -z "$bad" ]; then
	tap_ok "trace-cmd agent's TRACE_RESP: $cpus CPUs (nproc $ncpu), page $page (getconf $psz), ptp on port $tport, data ports $ports, each listening"
else
	tap_fail "TRACE_RESP: '$out' (nproc $ncpu, page $psz; ports not listening or out of 1500..6000:$bad): $(cat h1.err)"
fi
stop_agent

tc_agent
"$peer" host "$aport" -- -e sched:sched_switch > h2.out 2> h2.err
grep -qE "^cpus=$ncpu page_size=$psz trace_id=0x[0-9a-f]+ proto= tsync_port=0 ports=" h2.out &&
	tap_ok "no time-sync protocol offered: none agreed ($(cut -d' ' -f4-5 h2.out))" ||
	tap_fail "no protocol offered: '$(cat h2.out)' $(cat h2.err)"
stop_agent

# 2. trace-cmd record -A -> hgtrace's parse. trace-cmd is refused (NOT_SUPP) and gives up;
# only what it sent is checked.
gport=$(free_port)
"$peer" agent "$gport" > g.out 2> g.err &
gpid=$!
wait_for_line g.out '^listening$' 30 || tap_fail "tcmsg-peer agent: $(cat g.err)"
# (in sh -c: trace-cmd 3.1.6 dies of SIGSEGV on the NOT_SUPP, said in rec.log, not here)
tc_run 60 rec.log sh -c 'trace-cmd record -d --no-filter -o "$1/h.dat" -A "127.0.0.1:$2" \
	-e sched:sched_wakeup -b 2048 -- true; echo "exit $?"' sh "$t" "$gport"
wait_exit $gpid 60 > /dev/null
line=$(grep '^flags=' g.out)
if grep -qE '^flags=0 trace_id=0x[0-9a-f]+ argv=\[-C\|[a-z0-9-]+\|-e\|sched:sched_wakeup\|-b\|2048\] protos=\[([a-z]+\|)*ptp(\|[a-z]+)*\]$' <<< "$line" &&
	! grep -q 'trace_id=0x0 ' <<< "$line"; then
	tap_ok "trace-cmd record -A's TRACE_REQ: $line"
else
	tap_fail "trace-cmd's TRACE_REQ: '$line' $(cat g.err) record: $(tail -3 rec.log | tr '\n' '|')"
fi
tap_done
