#!/usr/bin/env bash
# hgtrace record -A NAME@tcp:... --peer trace-cmd driving Debian's `trace-cmd agent -N`
# on this machine's loopback. One kernel records itself twice, once as our host (h.dat)
# and once through trace-cmd's agent (h-g.dat), in one clock, so the truth is known: the
# true guest->host offset is 0. trace-cmd's agent records here only with -d --no-filter
# (ftrace_enabled is read-only), sent with --peer-arg; it then dies at its end on the same
# EPERM, before its CLOSE_RESP, which the host must survive. Checked:
# 1. a session in clock local: exit 0, the guest file written and no recording directory
#    left; the summary gives trace-cmd ptp's rounds and their bound;
# 2. the TIME_SHIFT we stored from the agent's answers: a sample at the start and at the
#    end of every CPU, every offset within the bound of the truth 0;
# 3. the events both files hold (paired per CPU and event text, as read by trace-cmd
#    report): at least half of the guest's (and 100), each corrected guest time within the bound of its host time;
#    the guest's -f 'next_comm != "tcwork"' held in its file;
# 4. the merged report: trace-cmd report and hgtrace report --no-latency, byte for byte;
# 5. a session in the default clock (x86-tsc): the same offsets check, in cycles;
# 6. an agent that is not there: the session says which guest and port, exits 1, and the
#    host's file is still written; no directory of the guest left;
# 6b. the same session through a stand-in hybrid-vsock VMM (Firecracker's handshake);
# 7. agents that answer garbage, close, send metadata that is no trace.dat or for other
#    CPUs: the same, with the fault named.
# Usage: tracecmd-host.sh HGTRACE
hg=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/record.sh"
why=$(tracefs_ready) || tap_skip_all "$why"
tap_workdir
T=/sys/kernel/tracing
before=$(ls "$T/instances")
ncpu=$(getconf _NPROCESSORS_CONF)
apid=
stop_agent() {
	[ -n "$apid" ] && kill -- -"$apid" 2> /dev/null
	[ -n "$apid" ] && wait "$apid" 2> /dev/null
	apid=
	tc_sync_leftovers "$before"
}
trap 'stop_agent; _tap_cleanup' EXIT
# tc_agent: trace-cmd's agent on a free port ($port), in its own process group ($apid)
tc_agent() {
	port=$(free_port)
	setsid trace-cmd agent -N 127.0.0.1 -p "$port" > "tca-$1.log" 2>&1 &
	apid=$!
	wait_listen "$port" $apid || tap_fail "trace-cmd agent does not listen: $(cat "tca-$1.log")"
}
# the session's command: a shell named tcwork that waits for ten 0.1 s sleeps, so it is
# switched away from and back to all through the session (not only at its ends, which a
# recording may just miss)
cp "$(command -v sh)" "$t/tcwork"

# offsets_check FILE BOUND: "samples cpus min_per_cpu beyond" of FILE's TIME_SHIFT
offsets_check() {
	trace-cmd dump --options -i "$1" 2>&1 | awk -v b="$2" '
		/samples count for CPU/ { n[$NF] = $1; c++ }
		/offset \* scaling/ { s++; o = $1 + 0; if (o < 0) o = -o; if (o > b) bad++ }
		END { m = 1e9; for (k in n) if (n[k] + 0 < m) m = n[k] + 0
			print s + 0, c + 0, (c ? m : 0), bad + 0 }'
}

# 1. clock local
tc_agent 1
timeout 120 "$hg" record -C local -e sched:sched_switch -o "$t/h.dat" \
	-A "g@tcp:127.0.0.1:$port" --peer trace-cmd --peer-arg -d --peer-arg --no-filter \
	-e sched:sched_switch -f 'next_comm != "tcwork"' -- "$t/tcwork" -c 'for i in 1 2 3 4 5 6 7 8 9 10; do sleep 0.1; done' 2> rec1.log
rst=$?
stop_agent
line=$(grep -m1 'sync: trace-cmd ptp, clock local:' rec1.log)
bound=$(sed -n 's/.*bound +-\([0-9]*\) .*/\1/p' <<< "$line")
if [ $rst -eq 0 ] && [ -s h-g.dat ] && [ -n "$bound" ] && [ ! -e h-g.dat.recording ] &&
	[ ! -e h.dat.recording ]; then
	tap_ok "record -A g --peer trace-cmd: exit 0, h-g.dat written, $(sed "s/^ *//" <<< "$line")"
else
	tap_fail "session (local): exit $rst, bound '$bound': $(tr '\n' '|' < rec1.log) agent: $(cat tca-1.log)"
fi

# 2. the stored offsets against the truth (0)
read -r nsh ncount nmin bad < <(offsets_check h-g.dat "${bound:-0}")
if [ "$ncount" -eq "$ncpu" ] && [ "$nmin" -ge 2 ] && [ "$bad" -eq 0 ] && [ "${bound:-0}" -gt 0 ]; then
	tap_ok "TIME_SHIFT: $nsh samples over $ncount CPUs (at least $nmin each), every offset within $bound ns of the truth 0: $(trace-cmd dump --options -i h-g.dat 2>&1 | awk '/offset \*/ {printf "%s ", $1}')"
else
	tap_fail "TIME_SHIFT: $ncount CPUs (want $ncpu), $nsh samples, min $nmin per CPU, $bad beyond $bound"
fi

# 3. the same events in both files (each instance stamps an event with its own clock read:
# the two raw times of one event differ by the kernel's writes in between)
pair_check h.dat h-g.dat "${bound:-0}"

# 3b. the guest's -f went to trace-cmd's agent: tcwork ran (switches away from it in the
# guest's file), yet no switch to it is there
switches_held "the guest's (sent as trace-cmd's)" tcwork graw.txt

# 4. merged report
trace-cmd report -i h.dat -i h-g.dat > tc.txt 2> tc.err
"$hg" report --no-latency -i h.dat -i h-g.dat > hg.txt 2> hg.err
tap_cmp "merged report of the pair: hgtrace --no-latency = trace-cmd ($(wc -l < tc.txt) lines)" hg.txt tc.txt

# 5. the default clock (x86-tsc where it exists: offsets and bound in cycles)
tc_agent 2
timeout 120 "$hg" record -e sched:sched_switch -o "$t/x.dat" \
	-A "g@tcp:127.0.0.1:$port" --peer trace-cmd --peer-arg -d --peer-arg --no-filter \
	-- "$t/tcwork" -c 'for i in 1 2 3 4 5 6 7 8 9 10; do sleep 0.1; done' 2> rec2.log
rst=$?
stop_agent
line=$(grep -m1 'sync: trace-cmd ptp, clock' rec2.log)
xb=$(sed -n 's/.*bound +-\([0-9]*\) .*/\1/p' <<< "$line")
read -r nsh ncount nmin bad < <(offsets_check x-g.dat "${xb:-0}")
if [ $rst -eq 0 ] && [ -n "$xb" ] && [ "$ncount" -eq "$ncpu" ] && [ "$nmin" -ge 2 ] && [ "$bad" -eq 0 ]; then
	tap_ok "default clock: $(sed "s/^ *//" <<< "$line"); $nsh offsets, each within it of 0"
else
	tap_fail "session (default clock): exit $rst, '$line', $ncount CPUs, min $nmin, $bad beyond: $(tail -5 rec2.log | tr '\n' '|')"
fi

# 6. no agent
dead=$(free_port)
timeout 60 "$hg" record -C local -e sched:sched_switch -o "$t/d.dat" \
	-A "g@tcp:127.0.0.1:$dead" --peer trace-cmd -- true 2> rec3.log
rst=$?
if [ $rst -eq 1 ] && grep -q "guest g: 127.0.0.1:$dead: port $dead: Connection refused" rec3.log &&
	[ -s d.dat ] && [ ! -e d-g.dat ] && [ ! -e d-g.dat.recording ]; then
	tap_ok "no agent on port $dead: exit 1, '$(grep -m1 'Connection refused' rec3.log)', the host's file written"
else
	tap_fail "no agent: exit $rst: $(tr '\n' '|' < rec3.log); $(ls)"
fi
# 6b. through a hybrid-vsock VMM (fake-hvsock.py: Firecracker's CONNECT PORT / OK; its
# guest port N is this machine's 127.0.0.1:N): control, time sync and every data port
tc_agent 3
python3 "$here/transport/fake-hvsock.py" "$t/v.sock" > vmm.log 2>&1 &
vpid=$!
wait_for_line vmm.log '^ready$' 20 || tap_fail "the stand-in VMM did not start: $(cat vmm.log)"
timeout 120 "$hg" record -C local -e sched:sched_switch -o "$t/u.dat" \
	-A "g@unix:$t/v.sock:$port" --peer trace-cmd --peer-arg -d --peer-arg --no-filter \
	-- "$t/tcwork" -c 'for i in 1 2 3 4 5 6 7 8 9 10; do sleep 0.1; done' 2> rec4.log
rst=$?
stop_agent
kill $vpid 2> /dev/null
nport=$(grep -c '^connect [0-9]* ok' vmm.log)
line=$(grep -m1 'sync: trace-cmd ptp, clock local:' rec4.log | sed 's/^ *//')
ub=$(sed -n 's/.*bound +-\([0-9]*\) .*/\1/p' <<< "$line")
read -r nsh ncount nmin bad < <(offsets_check u-g.dat "${ub:-0}")
if [ $rst -eq 0 ] && [ "$nport" -eq $((ncpu + 2)) ] && [ "$ncount" -eq "$ncpu" ] &&
	[ "$nmin" -ge 2 ] && [ "$bad" -eq 0 ] && [ -n "$ub" ]; then
	tap_ok "through a hybrid-vsock VMM: $nport CONNECTs (control, ptp, $ncpu data), exit 0; $line; $nsh offsets within it of 0"
else
	tap_fail "hybrid vsock: exit $rst, $nport CONNECTs, '$line', $ncount CPUs, $bad beyond: $(tail -4 rec4.log | tr '\n' '|') vmm: $(tr '\n' '|' < vmm.log)"
fi

# 7. agents that misbehave (tc-agent.py): each session says what is wrong in one line
# naming the guest, exits 1, writes the host's file, leaves no guest file or directory
bad_agent() {
	local mode=$1 re=$2 bport out=$t/m-$1.dat
	bport=$(free_port)
	python3 "$here/transport/tc-agent.py" "$bport" "$mode" "$t/h.dat" > "ta-$mode.out" 2>&1 &
	local fpid=$!
	wait_for_line "ta-$mode.out" '^listening$' 30
	timeout 120 "$hg" record -C local -e sched:sched_switch -o "$out" \
		-A "g@tcp:127.0.0.1:$bport" --peer trace-cmd -- true 2> "bad-$mode.log"
	local st=$?
	wait_exit $fpid 30 > /dev/null
	if [ $st -eq 1 ] && grep -qE "^hgtrace record: guest g: .*$re" "bad-$mode.log" && [ -s "$out" ] &&
		[ ! -e "${out%.dat}-g.dat" ] && [ ! -e "${out%.dat}-g.dat.recording" ]; then
		tap_ok "agent '$mode': exit 1, '$(grep -m1 -E "$re" "bad-$mode.log")', the host's file written"
	else
		tap_fail "agent '$mode': exit $st: $(tr '\n' '|' < "bad-$mode.log") fake: $(cat "ta-$mode.out"); $(ls "$t")"
	fi
}
bad_agent garbage "size 5, not within 12\.\.8192"
bad_agent close "the connection closed"
bad_agent badmeta "its metadata is not a trace\.dat head \(.*bad magic"
bad_agent cpus "its metadata says [0-9]+ CPUs, its response 64"

# an instance of ours left behind is one whose process has ended (other tests' recorders
# may run beside this one)
left=""
for i in $(ls "$T/instances"); do
	grep -qx -- "$i" <<< "$before" && continue
	case $i in
	hgtrace-*)
		p=${i#hgtrace-}
		p=${p%-clock}
		kill -0 "$p" 2> /dev/null || left="$left $i"
		;;
	clock_synch*) left="$left $i" ;;
	esac
done
[ -z "$left" ] && tap_ok "no tracefs instance of an ended process left" || tap_fail "instances left:$left"
tap_done
