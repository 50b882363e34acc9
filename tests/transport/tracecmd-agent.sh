#!/usr/bin/env bash
# hgtrace agent --serve --trace-cmd against Debian's trace-cmd record -A on this machine's
# loopback: one kernel records itself twice, once as trace-cmd's host (h.dat) and once as
# the guest our agent serves (h-127.0.0.1.dat), both in the clock trace-cmd gives (local).
# So the truth is known: the same event carries the same raw time in both files, and the
# true guest->host offset is 0. Checked:
# 1. a host asking for an option the agent does not take (-p function) is refused, the
#    option named in the agent's log, and the agent serves the next host;
# 1b. hosts that send a 4 GB header, say nothing, leave after the response, after the
#    metadata, or while recording (without CLOSE): each said, the instance removed;
# 1c. a slow host's last rounds, after its CLOSE, are all answered (tc-host.py slowsync);
# 2. the session (trace-cmd given -C: without it, trace-cmd 3.1.6 may tell the guest the
#    top instance's clock while it stamps its ptp probes in local; see hgtrace-agent(1)):
#    trace-cmd exits as a plain trace-cmd record exits here; the agent's log
#    says the host's CLOSE was answered and how many ptp rounds it served (the round trip
#    each picked, the fastest of its 339 probes, under 1 ms on a loopback), and no fault;
# 3. the host tied the guest file to itself: its GUEST option names the guest's TRACEID;
# 4. the TIME_SHIFT trace-cmd's host stored from our ptp answers: a sample at the start
#    and the end for every CPU, every offset within the agent's bound (half its slowest
#    picked round trip) of the truth, 0;
# 5. the events both files hold (matched by CPU, raw time and fields, read by trace-cmd
#    report --raw-ts): at least half of the guest's (and 100), and each one's corrected guest time within the
#    bound of its host time; every guest event of a CPU lies on the CPU it was recorded on;
#    the guest's -f 'next_comm != "tcwork"' held: no switch to the command in its file;
# 6. the merged report: trace-cmd report and hgtrace report --no-latency, byte for byte;
# 7. the agent ends on SIGINT with status 0 and leaves no tracefs instance.
# Usage: tracecmd-agent.sh HGTRACE
hg=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/record.sh"
why=$(tracefs_ready) || tap_skip_all "$why"
tap_workdir
T=/sys/kernel/tracing
before=$(ls "$T/instances")
ncpu=$(getconf _NPROCESSORS_CONF)

port=$(free_port)
"$hg" agent --trace-cmd "tcp:127.0.0.1:$port" 2> agent.log &
apid=$!
stop_agent() {
	kill -INT "$apid" 2> /dev/null
	wait_exit "$apid" 30
}
trap 'kill -KILL $apid 2> /dev/null; _tap_cleanup' EXIT
wait_listen "$port" $apid || tap_fail "the agent does not listen: $(cat agent.log)"


# 1. an option the agent does not take
tc_run 60 f.log trace-cmd record -d --no-filter -o "$t/f.dat" -e sched:sched_switch \
	-A "127.0.0.1:$port" -e sched:sched_switch -p function -- true
fst=$?
tc_sync_leftovers "$before"
if [ $fst -ne 0 ] && [ $fst -ne 124 ] && grep -q "Failed to receive trace response" f.log &&
	grep -q "refused: trace-cmd host asked for '-p': not supported here" agent.log; then
	tap_ok "host asking for -p function: refused (trace-cmd exit $fst: $(grep -m1 Failed f.log)), named in the agent's log"
else
	tap_fail "-p: trace-cmd exit $fst: $(tr '\n' '|' < f.log) agent: $(tr '\n' '|' < agent.log)"
fi

# 1b. hosts that misbehave (tc-host.py): each one said in the agent's log, its recording
# instance gone, and the agent serves the next
inst_gone() {
	local end=$((SECONDS + 20))
	while [ -d "$T/instances/hgtrace-$apid" ]; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.02
	done
}
hostile() {
	local mode=$1 re=$2
	timeout 60 python3 "$here/transport/tc-host.py" "$port" "$mode" > "host-$mode.out" 2>&1
	if wait_for_line agent.log "$re" 40 && inst_gone; then
		tap_ok "host '$mode': $(grep -E -m1 "$re" agent.log | sed 's/^hgtrace agent: //') $(tr '\n' ' ' < "host-$mode.out")"
	else
		tap_fail "host '$mode': no '$re' (or instance hgtrace-$apid left): $(tr '\n' '|' < agent.log) host: $(cat "host-$mode.out")"
	fi
}
hostile huge "refused: trace-cmd message: size 4294967295, not within 12\.\.8192"
hostile silent "refused: 127\.0\.0\.1:[0-9]+: the connection closed"
hostile resp "failed: 127\.0\.0\.1:[0-9]+: (Broken pipe|Connection reset by peer)"
hostile meta "failed: 127\.0\.0\.1:[0-9]+: the host left before it dialed the data port of cpu 0"
hostile recording "[0-9]+: session ended$"
if grep -q '^pages [1-9]' host-recording.out; then
	tap_ok "host 'recording' read pages before it left: $(grep '^pages' host-recording.out)"
else
	tap_fail "host 'recording': $(cat host-recording.out)"
fi

# 1c. a slow host (tc-host.py slowsync): trace-cmd's host runs its last ptp round on each
# CPU after its CLOSE; this one takes 5.4 s a round, never silent for long. Every round is
# answered with a sample (a round cut short would leave trace-cmd's CPUs with different
# sample counts, and its TIME_SHIFT unreadable), each offset within half the slowest
# picked round trip of the truth 0 (one clock, CLOCK_MONOTONIC, both sides), then the
# CLOSE_RESP
timeout 120 python3 "$here/transport/tc-host.py" "$port" slowsync > host-slow.out 2>&1
wait_for_line agent.log "ptp: .*rounds answered" 30
slow=$(grep 'ptp: .*rounds answered' agent.log | tail -1)
sworst=$(sed -n 's/.*round trips [0-9]*\.\.\([0-9]*\) ns.*/\1/p' <<< "$slow")
read -r nr nbad < <(awk -v b="$(((${sworst:-0} + 1) / 2))" '/^round / {
	n++; split($4, t, "="); split($5, o, "="); v = o[2] + 0; if (v < 0) v = -v
	if (t[2] + 0 == 0 || v > b) bad++ } END { print n + 0, bad + 0 }' host-slow.out)
if [ "$nr" -eq $((2 * ncpu)) ] && [ "$nbad" -eq 0 ] && grep -q '^close_resp' host-slow.out &&
	grep -q "ptp: $((2 * ncpu)) rounds answered, round trips [0-9]*\.\.[0-9]* ns, last offset -\?[0-9]*$" <<< "$slow"; then
	tap_ok "slow host: $nr rounds answered, the last $ncpu after its CLOSE at 5.4 s each, offsets within $((sworst / 2)) ns of 0, then its CLOSE answered"
else
	tap_fail "slow host: $nr rounds ($nbad bad; want $((2 * ncpu))): $(tr '\n' '|' < host-slow.out) agent: $slow"
fi

# what a plain trace-cmd record exits with here (ftrace files it may not reset)
tc_run 60 plain.log trace-cmd record -d --no-filter -o "$t/plain.dat" -e sched:sched_switch true
plain=$?

# 2. the session
# the session's command: a shell named tcwork that waits for ten 0.1 s sleeps, so it is
# switched away from and back to all through the session (not only at its ends, which a
# recording may just miss)
cp "$(command -v sh)" "$t/tcwork"
tc_run 120 rec.log trace-cmd record -d --no-filter -C local -o "$t/h.dat" -e sched:sched_switch \
	-A "127.0.0.1:$port" -e sched:sched_switch -f 'next_comm != "tcwork"' -- "$t/tcwork" -c 'for i in 1 2 3 4 5 6 7 8 9 10; do sleep 0.1; done'
rst=$?
tc_sync_leftovers "$before"
g=h-127.0.0.1.dat
rounds=$(sed -n 's/.*ptp: \([0-9]*\) rounds answered.*/\1/p' agent.log | tail -1)
worst=$(sed -n 's/.*round trips [0-9]*\.\.\([0-9]*\) ns.*/\1/p' agent.log | tail -1)
if [ $rst -eq "$plain" ] && [ -s "$g" ] && grep -q "session ended (the host's CLOSE answered)" agent.log &&
	[ "${rounds:-0}" -ge $((2 * ncpu)) ] && [ -n "$worst" ] && [ "$worst" -le 1000000 ] &&
	! grep -q 'ptp: .*rounds answered.*; ' agent.log; then
	tap_ok "trace-cmd record -A: exit $rst (a plain record here: $plain); the agent answered its CLOSE, $rounds ptp rounds, round trips up to $worst ns"
else
	tap_fail "session: trace-cmd exit $rst (plain $plain): $(tail -5 rec.log | tr '\n' '|') agent: $(tr '\n' '|' < agent.log)"
fi
bound=$(((${worst:-0} + 1) / 2))

# 3. the host's GUEST option names the guest file's trace id
gid=$(trace-cmd dump --options -i "$g" 2>/dev/null | awk '/Option TRACEID/ { getline; print tolower($1) }')
hid=$(trace-cmd dump --options -i h.dat 2>/dev/null | awk '/Option GUEST/ { getline; getline; print tolower($1) }')
if [ -n "$gid" ] && [ "$gid" = "$hid" ]; then
	tap_ok "the host's GUEST option names the guest's TRACEID $gid"
else
	tap_fail "trace ids: guest '$gid', host's GUEST '$hid'"
fi

# 4. the stored offsets against the truth (0): a start and an end round on each CPU
time_shift_check "the guest file" "$g" "$ncpu" "$bound" 2

# 5. the same events in both files. Each instance stamps an event with its own clock read,
# so one event's raw times differ by the kernel's writes in between (< 1 us seen): per CPU
# and event text, the two files' events are paired in order within 20 us.
pair_check h.dat "$g" "$bound"

# 5b. the guest's -f: tcwork ran (switches away from it in the guest's file), yet no switch
# to it is there
switches_held "the guest's" tcwork graw.txt

# 6. merged report
trace-cmd report -i h.dat -i "$g" > tc.txt 2> tc.err
"$hg" report --no-latency -i h.dat -i "$g" > hg.txt 2> hg.err
tap_cmp "merged report of the trace-cmd host's pair: hgtrace --no-latency = trace-cmd" tc.txt hg.txt

# 7. the agent's end
stop_agent
ast=$?
left=""
for i in $(ls "$T/instances"); do
	grep -qx -- "$i" <<< "$before" || case $i in hgtrace-$apid*) left="$left $i" ;; esac
done
if [ $ast -eq 0 ] && [ -z "$left" ]; then
	tap_ok "the agent ends on SIGINT (status 0), no tracefs instance of its own left"
else
	tap_fail "agent end: status $ast, instances left:$left $(tail -3 agent.log | tr '\n' '|')"
fi
tap_done
