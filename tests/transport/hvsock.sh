#!/usr/bin/env bash
# Hybrid vsock (Firecracker, Cloud Hypervisor), both directions, through a stand-in VMM
# written from Firecracker's documented handshake (tests/transport/fake-hvsock.py), with
# "the guest" on this machine (its vsock port N is 127.0.0.1:N), so the true offset is 0:
# 1. host-initiated: record -A NAME@unix:PATH:PORT dials the VMM's socket, CONNECT PORT, and
#    runs a session with agent --serve --listen behind it: one CONNECT per connection
#    (control, then one per CPU), the pair as trace-cmd reads it, every stored offset within
#    the printed bound of 0;
# 2. the VMM's refusals (closed, a wrong answer, no answer, no socket, nothing on the guest
#    port): the host still records, names the guest and the VMM's answer, exits 1;
# 3. guest-initiated: listen --unix PATH:PORT listens on PATH_PORT, where the VMM forwards a
#    guest's connection to host port PORT; the guest-driven session is written and synced;
#    the socket goes at the end;
# 4. listen --unix never removes what is not its own stale socket (a file, a symbolic
#    link, a socket someone listens on, even one not accepting now).
# Usage: hvsock.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/record.sh"
why=$(tracefs_ready) || tap_skip_all "$why"
command -v python3 > /dev/null || tap_skip_all "python3 is missing"
tap_workdir

vmm() { # LOG UDS ARGS...: a stand-in VMM, its pid in $vpid once it says "ready"
	local log=$1
	shift
	python3 "$here/transport/fake-hvsock.py" "$@" > "$log" 2>&1 &
	vpid=$!
	wait_for_line "$log" '^ready$' 20 || tap_fail "the stand-in VMM did not start: $(cat "$log")"
}
cpus_of() { trace-cmd report "$1" 2> /dev/null | sed -n '1s/^cpus=//p'; }

# 1. host-initiated
aport=$(free_port)
"$HGTRACE" agent --serve --listen "tcp:127.0.0.1:$aport" -e sched:sched_switch 2> agent.log &
apid=$!
wait_listen "$aport" $apid || tap_fail "the agent does not listen: $(cat agent.log)"
vmm vmm1.log "$t/v.sock"
"$HGTRACE" record -e sched:sched_switch -A "fc@unix:$t/v.sock:$aport" -o h.dat -- sleep 1 2> rec.log
rc=$?
bound=$(sed -n 's/.*sync: agent channel.* bound +-\([0-9]*\).*/\1/p' rec.log)
"$HGTRACE" dump h-fc.dat | sed -n 's/.*time [0-9]* offset \(-\{0,1\}[0-9]*\) scaling.*/\1/p' > off.txt
ns=$(wc -l < off.txt)
worst=$(awk '{ v = $1 < 0 ? -$1 : $1; if (v > m) m = v } END { print m + 0 }' off.txt)
gn=$(trace-cmd report h-fc.dat 2> /dev/null | grep -c sched_switch)
gcpus=$(cpus_of h-fc.dat)
conns=$(grep -c "^connect $aport ok$" vmm1.log)
if [ $rc = 0 ] && [ "$gn" -gt 0 ] && [ -n "$bound" ] && [ "$ns" -ge 2 ] && [ "$worst" -le "$bound" ]; then
	tap_ok "unix:PATH:PORT session: $gn guest events, $ns samples within the bound of the truth 0 (worst $worst, +-$bound)"
else
	tap_fail "unix:PATH:PORT session: exit $rc, $gn events, $ns samples, worst $worst, bound '$bound': $(tr '\n' '|' < rec.log)"
fi
if [ -n "$gcpus" ] && [ "$conns" = $((gcpus + 1)) ] && [ "$(grep -vc '^ready$' vmm1.log)" = "$conns" ]; then
	tap_ok "one CONNECT $aport per connection, each answered OK: $conns (control + $gcpus CPUs, trace-cmd's count)"
else
	tap_fail "CONNECTs: $conns for $gcpus CPUs: $(tr '\n' '|' < vmm1.log)"
fi
"$HGTRACE" report --no-latency h.dat h-fc.dat > hr.txt 2> /dev/null
trace-cmd report -i h.dat -i h-fc.dat > tr.txt 2> /dev/null
tap_cmp "unix:PATH:PORT: merged report = trace-cmd's ($(wc -l < hr.txt) lines)" hr.txt tr.txt
kill $vpid
wait $vpid 2> /dev/null

# 2. what the VMM can answer instead; each time the host records its side and exits 1
refused() { # WHAT NEEDLE SPEC
	local what=$1 needle=$2 spec=$3 rc hn
	"$HGTRACE" record -e sched:sched_switch -A "x@unix:$spec" -o nx.dat -- sleep 0.3 2> nx.log
	rc=$?
	hn=$(trace-cmd report nx.dat 2> /dev/null | grep -c sched_switch)
	if [ $rc = 1 ] && [ "$hn" -gt 0 ] && grep -qF "guest x: cannot connect to unix:$spec: $needle" nx.log; then
		tap_ok "$what: the host recorded ($hn events), named the guest and the VMM's answer, exit 1"
	else
		tap_fail "$what: exit $rc, $hn host events: $(tr '\n' '|' < nx.log)"
	fi
}
for mode in refuse garbage mute; do
	vmm vmm-$mode.log "$t/v-$mode.sock" --mode $mode
	case $mode in
	refuse) needle="the VMM closed the connection without OK" seen=closed ;;
	garbage) needle='the VMM'"'"'s answer to CONNECT is not "OK [PORT]"' seen=garbage ;;
	mute) needle="the VMM did not answer CONNECT within 10 s" seen=mute ;;
	esac
	refused "a VMM that answers CONNECT by $mode" "$needle" "$t/v-$mode.sock:$aport"
	grep -q "^connect $aport $seen\$" vmm-$mode.log || tap_fail "$mode: the VMM saw no CONNECT $aport: $(cat vmm-$mode.log)"
	kill $vpid
	wait $vpid 2> /dev/null
done
refused "no VMM socket" "No such file or directory" "$t/none.sock:$aport"
# the VMM closes: nothing listens on that guest port
vmm vmm-empty.log "$t/v-empty.sock"
noport=$(free_port)
refused "nothing on the guest's port" "the VMM closed the connection without OK" "$t/v-empty.sock:$noport"
grep -q "^connect $noport refused$" vmm-empty.log || tap_fail "the VMM did not try port $noport: $(cat vmm-empty.log)"
kill $vpid $apid
wait $vpid $apid 2> /dev/null

# 3. guest-initiated: the agent connects to host port 5000, which the VMM forwards to
# v2.sock_5000 (here: the agent's TCP connection to $gport)
gport=$(free_port)
mkdir gd
vmm vmm2.log "$t/v2.sock" --guest-port "$gport:5000"
"$HGTRACE" listen -o gd --unix "$t/v2.sock:5000" --record-host -e sched:sched_switch 2> gd/listen.log &
lpid=$!
end=$((SECONDS + 60)) # a hang guard: the socket is the event waited on
until [ -S "$t/v2.sock_5000" ] || ! kill -0 $lpid 2> /dev/null || [ $SECONDS -ge $end ]; do sleep 0.02; done
"$HGTRACE" agent --tcp "127.0.0.1:$gport" -e sched:sched_switch -C x86-tsc -- sleep 0.5 2> gd/agent.log
arc=$?
wait_for_line gd/listen.log 'wrote gd/trace-.*\.dat$' 60
kill -INT $lpid
wait $lpid
lrc=$?
gf=$(sed -n 's/.*wrote \(gd\/trace-.*\.dat\)$/\1/p' gd/listen.log | head -1)
hf=$(sed -n 's/.*wrote \(gd\/.*-host\.dat\) (the host.s side)$/\1/p' gd/listen.log | head -1)
gn=$(trace-cmd report "$gf" 2> /dev/null | grep -c sched_switch)
hn=$(trace-cmd report "$hf" 2> /dev/null | grep -c sched_switch)
bound=$(sed -n 's/.*hgtrace sync: agent channel.*bound=\([0-9]*\).*/\1/p' <("$HGTRACE" dump "$gf" 2> /dev/null))
gcpus=$(cpus_of "$gf")
conns=$(grep -c '^guest to 5000$' vmm2.log)
if [ $arc = 0 ] && [ $lrc = 0 ] && [ "${gn:-0}" -gt 0 ] && [ "${hn:-0}" -gt 0 ] && [ -n "$bound" ]; then
	tap_ok "listen --unix PATH:PORT: the guest's session through the VMM: $gn guest, $hn host events, synced (+-$bound)"
else
	tap_fail "listen --unix: agent exit $arc, listen exit $lrc, files '$gf' ($gn) '$hf' ($hn), bound '$bound': $(tr '\n' '|' < gd/listen.log) $(tr '\n' '|' < gd/agent.log)"
fi
[ -n "$gcpus" ] && [ "$conns" = $((gcpus + 1)) ] &&
	tap_ok "each of the guest's connections reached PATH_5000: $conns (control + $gcpus CPUs)" ||
	tap_fail "guest connections: $conns for '$gcpus' CPUs: $(tr '\n' '|' < vmm2.log)"
"$HGTRACE" report --no-latency "$hf" "$gf" > hr.txt 2> /dev/null
trace-cmd report -i "$hf" -i "$gf" > tr.txt 2> /dev/null
if [ "$(wc -l < tr.txt)" -gt 100 ]; then
	tap_cmp "listen --unix: merged report = trace-cmd's ($(wc -l < hr.txt) lines)" hr.txt tr.txt
else
	tap_fail "listen --unix: trace-cmd's merged report has $(wc -l < tr.txt) lines"
fi
[ ! -e "$t/v2.sock_5000" ] && tap_ok "listen --unix removed its socket at the end" ||
	tap_fail "$t/v2.sock_5000 is still there"
kill $vpid
wait $vpid 2> /dev/null

# 4. what listen --unix must not take: a file, a link (to a file), a socket in use; a stale
# socket (its listener gone) is replaced
echo keep > "$t/f_1"
ln -s "$t/f_1" "$t/l_1"
TAP_WANT="a file that is not a socket" tap_refuses "listen --unix on a file" "$t/f_1" \
	"$HGTRACE" listen -o gd --unix "$t/f:1"
TAP_WANT="a file that is not a socket" tap_refuses "listen --unix on a symbolic link" "$t/f_1" \
	"$HGTRACE" listen -o gd --unix "$t/l:1"
[ -L "$t/l_1" ] || tap_fail "the link was removed"
vmm vmm3.log "$t/live_7" # someone listens on live_7
TAP_WANT="a socket someone listens on" tap_refuses "listen --unix on a socket in use" "" \
	"$HGTRACE" listen -o gd --unix "$t/live:7"
kill $vpid
wait $vpid 2> /dev/null
# a VMM that listens but is not accepting now: its backlog full, a connection to it would
# wait (the check must neither hang nor take it for stale)
python3 - "$t/busy_7" > busy.out << 'PY' &
import socket, sys, threading
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(0)
held = []
while True:  # fill the backlog: until a connection would wait
    c = socket.socket(socket.AF_UNIX)
    c.setblocking(False)
    try:
        c.connect(sys.argv[1])
        held.append(c)
    except BlockingIOError:
        break
print("full", len(held), flush=True)
threading.Event().wait()
PY
bpid=$!
wait_for_line busy.out '^full' 20 || tap_fail "the busy socket's backlog did not fill"
TAP_WANT="a socket someone listens on" tap_refuses "listen --unix on a socket whose backlog is full" "" \
	timeout 30 "$HGTRACE" listen -o gd --unix "$t/busy:7"
[ -S "$t/busy_7" ] || tap_fail "the busy socket was removed"
kill $bpid
wait $bpid 2> /dev/null
python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$t/stale_7"
"$HGTRACE" listen -o gd --unix "$t/stale:7" 2> stale.log &
lpid=$!
python3 - "$t/stale_7" << 'PY' && tap_ok "listen --unix replaced a stale socket and accepts on it" || tap_fail "stale socket: $(cat stale.log)"
import socket, sys, time
end = time.time() + 30
while True:  # until the listener's socket answers (the stale one refuses)
    try:
        socket.socket(socket.AF_UNIX).connect(sys.argv[1])
        break
    except OSError:
        if time.time() > end:
            sys.exit(1)
        time.sleep(0.02)
PY
kill -INT $lpid
wait $lpid 2> /dev/null
TAP_WANT="expected PATH:PORT" tap_refuses "listen --unix without a port" "" "$HGTRACE" listen --unix "$t/x"
TAP_WANT="expected NAME@unix:PATH:PORT" tap_refuses "record -A NAME@unix:PATH (no port)" "" \
	"$HGTRACE" record -e sched -A "g@unix:$t/v.sock" -- true
tap_done
