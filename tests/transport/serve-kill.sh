#!/usr/bin/env bash
# An agent --serve over FIFOs outlives hosts that die mid-session (issue 22, item 2): the
# host (record -A) is SIGKILLed at a random moment of a session, K times; after each kill
# the next host's session succeeds (exit 0, a guest file with the guest's events, read by
# trace-cmd). Half the next hosts come at once (the agent learns from their CONFIG that the
# old host is gone, the listener skips the old session's bytes), half after the agent said
# the host was silent (it drops what its readers were blocked writing). Then SIGTERM ends
# the agent within 2 s and its instance is gone. A host that reads nothing, and one that
# stops mid-session, end neither the agent's service nor its response to SIGTERM.
# Usage: serve-kill.sh HGTRACE [K]
HGTRACE=$(realpath "$1")
K=${2:-10}
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/record.sh"
why=$(tracefs_ready) || tap_skip_all "$why"
tap_workdir

"$HGTRACE" setup-guest w --cpus "$(nproc)" --dir . > /dev/null
inst=hgt_skill_$$
"$HGTRACE" agent --serve --fifos w -B $inst -e sched:sched_switch --silent-timeout 10 \
	2> agent.log &
apid=$!

# ok_session N: a whole session through the agent, checked
ok_session() {
	local rc gn
	timeout 60 "$HGTRACE" record -e sched:sched_switch -A "w@fifo:$t/w" -o "ok$1.dat" \
		-- sleep 0.5 > /dev/null 2> "ok$1.log"
	rc=$?
	gn=$(trace-cmd report "ok$1-w.dat" 2> /dev/null | grep -c 'sched_switch:')
	if [ $rc = 0 ] && [ "$gn" -gt 0 ]; then
		tap_ok "after kill $1 ($2): the next session succeeds, $gn guest events read by trace-cmd ($(grep -oE '[0-9]+ (stale )?bytes of an earlier session' "ok$1.log" | awk '{ s += $1 } END { print s + 0 }') old bytes dropped)"
	else
		tap_fail "after kill $1 ($2): exit $rc, $gn guest events: $(tr '\n' '|' < "ok$1.log") agent: $(tail -5 agent.log | tr '\n' '|')"
	fi
}

RANDOM=$$
for k in $(seq 1 "$K"); do
	n0=$(grep -c 'recording (clock' agent.log)
	"$HGTRACE" record -e sched:sched_switch -A "w@fifo:$t/w" -o "k$k.dat" -- sleep 30 \
		> /dev/null 2> "k$k.log" &
	rp=$!
	# a random moment: up to 1.5 s into the recording; or, for a next host that comes at
	# once, half the time as early as it can be (the host may not even have reached the
	# agent: then the agent has no session to find silent, and the next must just work)
	if [ $((k % 2)) = 1 ] && [ $((RANDOM % 2)) = 0 ]; then
		wait_for_line agent.log 'serving sessions' > /dev/null
		sleep 0.0$((RANDOM % 10))
	else
		end=$((SECONDS + 60))
		until [ "$(grep -c 'recording (clock' agent.log)" -gt "$n0" ] || [ $SECONDS -ge $end ]; do
			sleep 0.02
		done
		sleep "$((RANDOM % 2)).$((RANDOM % 10))"
	fi
	kill -KILL $rp
	wait $rp 2> /dev/null
	if [ $((k % 2)) = 0 ]; then
		s0=$(grep -c 'silent for' agent.log)
		end=$((SECONDS + 60))
		until [ "$(grep -c 'silent for' agent.log)" -gt "$s0" ] || [ $SECONDS -ge $end ]; do
			sleep 0.1
		done
		if [ "$(grep -c 'silent for' agent.log)" -gt "$s0" ]; then
			ok_session "$k" "after the agent found its host silent"
		else
			tap_fail "kill $k: the agent never found its host silent: $(tail -3 agent.log | tr '\n' '|')"
		fi
	else
		ok_session "$k" "at once"
	fi
done

# A session longer than the agent's silence limit (10 s) with no sync round after the first
# (--sync-interval 60 s): only the host's heartbeats (every 5 s) tell the agent it is there.
# The agent must not end the session as silent, and the session must end well.
s0=$(grep -c 'silent for' agent.log)
timeout 60 "$HGTRACE" record -e sched:sched_switch -A "w@fifo:$t/w" -o long.dat --sync-interval 60000 \
	-- sleep 13 > /dev/null 2> long.log
rc=$?
gn=$(trace-cmd report long-w.dat 2> /dev/null | grep -c 'sched_switch:')
if [ $rc = 0 ] && [ "$gn" -gt 0 ] && [ "$(grep -c 'silent for' agent.log)" = "$s0" ]; then
	tap_ok "a 13 s session quiet but for the host's heartbeats: the agent (silent after 10 s) kept it; $gn guest events"
else
	tap_fail "a 13 s session with heartbeats only: exit $rc, $gn guest events: $(tr '\n' '|' < long.log) agent: $(tail -3 agent.log | tr '\n' '|')"
fi

# A host that sends its settings and its start, then reads nothing: the agent's HELLO and
# metadata (kallsyms: more than a FIFO holds) wait for room. The agent gives up after its
# silence limit (10 s), says so, and serves the next host. The CONFIG is written here by
# hand from the protocol: "HGTC", type 6, flags 0, 9 bytes (buffer 0 KiB, flags 0, clock
# ""), then the start "1".
exec 3<> w/agent-ctl-path.in
printf 'HGTC\x06\x00\x00\x00\x09\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00' >&3
printf '1\n' >&3
if wait_for_line agent.log 'control channel: the host read nothing for 10000 ms' 60; then
	tap_ok "a host that reads nothing: the agent, blocked writing its metadata, gave up after 10 s and said so"
	ok_session stall "after a host that read nothing"
else
	tap_fail "a host that reads nothing: the agent never gave up: $(tail -3 agent.log | tr '\n' '|')"
fi
exec 3>&-

kill -TERM $apid
t0=$(date +%s%N)
wait_exit $apid 10
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
if [ $rc = 0 ] && [ $ms -le 2000 ] && [ ! -d "$TRACEFS/instances/$inst" ]; then
	tap_ok "SIGTERM ends the agent in $ms ms; its instance is gone"
else
	tap_fail "SIGTERM: agent still running or its instance left (wait $rc, $ms ms)"
fi

# ring_entries INSTANCE CPU: the events CPU's ring buffer holds that no reader has taken yet
ring_entries() {
	awk '/^entries:/ { print $2 }' "$TRACEFS/instances/$1/per_cpu/cpu$2/stats" 2> /dev/null || echo 0
}
# fifo_full FIFO: the FIFO has no room for one more page (poll, not ready for POLLOUT: what
# the agent's reader waits on); opened for writing, nothing written
fifo_full() {
	python3 -c 'import os, select, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_NONBLOCK)
p = select.poll()
p.register(fd, select.POLLOUT)
sys.exit(1 if p.poll(0) else 0)' "$1"
}

# A host that stops (SIGSTOP) mid-session while the guest writes more than the FIFOs hold:
# the agent's readers wait for room (in poll(): they never block in a write). SIGTERM still ends the agent: the host has 2 s to take
# the tail, then what waits is dropped (an agent that waited for good would never end).
"$HGTRACE" setup-guest v --cpus "$(nproc)" --dir . > /dev/null
inst2=hgt_sstop_$$
"$HGTRACE" agent --serve --fifos v -B $inst2 -e sched:sched_switch 2> agent2.log &
apid2=$!
"$HGTRACE" record -e sched:sched_switch -A "v@fifo:$t/v" -o st.dat -- sleep 60 > /dev/null 2> st.log &
rp=$!
wait_for_line agent2.log 'recording (clock' 60 > /dev/null
kill -STOP $rp
# markers into the agent's instance from CPU 0, 64 KiB (65 markers) a round, until CPU 0's
# FIFO (1 MiB, the host's size) has no room and its ring still holds events: its reader
# waits for room, and nothing but the stopped host can change that (a ring's count alone
# falls again when a reader that was merely slow takes its pages)
full=no
for i in $(seq 1 400); do
	if fifo_full v/trace-path-cpu0.out && [ "$(ring_entries $inst2 0)" -gt 0 ]; then
		full=yes
		break
	fi
	taskset -c 0 sh -c 'head -c 65536 /dev/zero | tr "\0" x | fold -w 1000 > "$1"' sh \
		"$TRACEFS/instances/$inst2/trace_marker"
done
if [ $full = yes ]; then
	held=$(ring_entries $inst2 0)
	kill -TERM $apid2
	t0=$(date +%s%N)
	wait_exit $apid2 10
	rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	if [ $rc = 0 ] && [ $ms -le 4000 ]; then
		tap_ok "a stopped host, the agent waiting for room (CPU 0's FIFO full after $i rounds, $held events in its ring): SIGTERM ends it in $ms ms ($(grep -o 'dropped ([0-9]* bytes)' agent2.log))"
	else
		tap_fail "a stopped host: SIGTERM left the agent running (wait $rc, $ms ms): $(tail -3 agent2.log | tr '\n' '|')"
	fi
else
	tap_fail "a stopped host: CPU 0's FIFO never filled with events left in its ring ($(ring_entries $inst2 0) events after $i rounds): $(tail -3 agent2.log | tr '\n' '|')"
fi
kill -KILL $rp 2> /dev/null
kill -CONT $rp 2> /dev/null
wait $rp 2> /dev/null
"$HGTRACE" reset > /dev/null 2>&1
tap_done
