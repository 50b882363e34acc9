#!/usr/bin/env bash
# An agent's TCP connections to a host on the same machine send with a congestion control
# that does not pace (lib/transport/sock.c says why: BBR's pacing over loopback lost pages
# at 1000 MB/s); to another machine they keep the system's. Run in a network namespace of
# the test's own whose default is bbr, so that no check passes by the default alone, with
# a second namespace joined by a veth pair standing for another machine. Checked on every
# connected TCP socket the agent holds while it records (the kernel's getsockopt
# TCP_CONGESTION on duplicates of them, tests/transport/sockopt.py):
#  1. agent --tcp 127.0.0.1:PORT (it dials): cubic on the control and each CPU's channel;
#  2. agent --tcp to the namespace's own veth address (not a loopback one): cubic;
#  3. agent --tcp to the other namespace's address: bbr, the default, on all;
#  4. agent --serve --listen tcp:PORT (every address), dialed by record -A from 127.0.0.1:
#     its listening socket bbr (it may be dialed from anywhere), cubic on the connections
#     it accepted;
#  5. agent --serve --listen tcp:127.0.0.1:PORT: its listening socket cubic (what it
#     accepts sends so from its first byte).
# (reno instead of cubic where this kernel has no cubic.)
# Usage: unpaced.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/record.sh"
why=$(tracefs_ready) || tap_skip_all "$why"
if [ -z "${HGT_UNPACED_NS:-}" ]; then
	command -v ip > /dev/null || tap_skip_all "no ip(8) (iproute2)"
	exec unshare -n env HGT_UNPACED_NS=1 bash "$0" "$@"
fi
modprobe -q tcp_bbr 2> /dev/null
sysctl -qw net.ipv4.tcp_congestion_control=bbr 2> /dev/null ||
	tap_skip_all "this kernel has no bbr congestion control: nothing to tell the rule from the default"
ip link set lo up || tap_skip_all "cannot bring up lo in a network namespace"
want=cubic
grep -qw cubic /proc/sys/net/ipv4/tcp_available_congestion_control || want=reno
tap_workdir
ncpu=$(nproc)

# the other machine: a namespace of its own (a process sleeping in it), a veth pair
unshare -n sleep 600 &
other=$!
until [ "$(readlink /proc/$other/ns/net)" != "$(readlink /proc/self/ns/net)" ]; do
	kill -0 $other 2> /dev/null || tap_skip_all "cannot create a second network namespace"
	sleep 0.01
done
ip link add hgtva type veth peer name hgtvb netns $other ||
	tap_skip_all "cannot create a veth pair"
ip addr add 10.88.0.1/24 dev hgtva && ip link set hgtva up &&
	nsenter -t $other -n sh -c 'ip addr add 10.88.0.2/24 dev hgtvb && ip link set hgtvb up && ip link set lo up' ||
	tap_skip_all "cannot address the veth pair"

# listening PORT PID: until PID listens on TCP PORT, as its own namespace sees it (10 s)
listening() {
	local hex i
	hex=$(printf '%04X' "$1")
	for i in $(seq 500); do
		awk -v p=":$hex" '$2 ~ p"$" && $4 == "0A" { f = 1 } END { exit !f }' \
			/proc/$2/net/tcp 2> /dev/null && return 0
		kill -0 "$2" 2> /dev/null || return 1
		sleep 0.02
	done
	return 1
}

# agent_cc PID N: the congestion controls of PID's connected TCP sockets, once it holds N
# (10 s); what it holds then
agent_cc() {
	local got i
	for i in $(seq 100); do
		got=$(python3 "$here/transport/sockopt.py" "$1" cc)
		[ "$(wc -w <<< "$got")" -ge "$2" ] && break
		sleep 0.1
	done
	echo "$got"
}

# dial CASE ADDR [NETNS-PID] WANT: a listener (in the other namespace with NETNS-PID) and
# an agent dialing ADDR; WANT on each of its 1 + ncpu connections
dial() {
	local name=$1 addr=$2 ns=$3 cc=$4 port lp ap got expect
	port=$(free_port)
	mkdir -p "out-$name"
	if [ -n "$ns" ]; then
		nsenter -t "$ns" -n "$HGTRACE" listen -o "out-$name" --tcp "$port" --start \
			2> "listen-$name.log" &
	else
		"$HGTRACE" listen -o "out-$name" --tcp "$port" --start 2> "listen-$name.log" &
	fi
	lp=$!
	if ! listening "$port" $lp; then
		tap_fail "$name: the listener does not listen on $port: $(tr '\n' '|' < "listen-$name.log")"
		kill -INT $lp 2> /dev/null
		return
	fi
	"$HGTRACE" agent --tcp "$addr:$port" -B "hgt_unpaced_$$_$name" -e sched:sched_switch \
		2> "agent-$name.log" &
	ap=$!
	wait_for_line "listen-$name.log" 'recording$' 30
	got=$(agent_cc $ap $((ncpu + 1)))
	expect=$(printf "$cc %.0s" $(seq $((ncpu + 1))) | sed 's/ $//')
	[ "$got" = "$expect" ] &&
		tap_ok "$name: agent --tcp $addr: its control and $ncpu data connections send with $cc" ||
		tap_fail "$name: agent --tcp $addr: its connections' congestion control '$got', want '$expect' (agent: $(tail -2 "agent-$name.log" | tr '\n' '|'))"
	kill -INT $ap 2> /dev/null
	wait_exit $ap 30 > /dev/null
	kill -INT $lp 2> /dev/null
	wait_exit $lp 30 > /dev/null
}

dial loopback 127.0.0.1 "" $want
dial own-address 10.88.0.1 "" $want
dial other-machine 10.88.0.2 $other bbr

# 4. the agent serves on every address; the host dials it from 127.0.0.1
port=$(free_port)
"$HGTRACE" agent --serve --listen tcp:$port -B hgt_unpaced_$$_serve 2> agent-serve.log &
ap=$!
if listening "$port" $ap; then
	"$HGTRACE" record -e sched:sched_switch -A "g@tcp:127.0.0.1:$port" -e sched:sched_switch \
		-o serve.dat -- sleep 600 > /dev/null 2> record-serve.log &
	rp=$!
	wait_for_line agent-serve.log 'recording \(clock' 30
	got=$(python3 "$here/transport/sockopt.py" $ap cc-listen)
	[ "$got" = bbr ] &&
		tap_ok "served on every address: its listening socket keeps the default, bbr" ||
		tap_fail "served on every address: its listening socket's congestion control '$got', want bbr"
	got=$(agent_cc $ap $((ncpu + 1)))
	n=$(wc -w <<< "$got")
	if [ "$n" -ge $((ncpu + 1)) ] && [ -z "$(tr ' ' '\n' <<< "$got" | grep -vx "$want")" ]; then
		tap_ok "served: the agent's $n connections accepted from 127.0.0.1 send with $want"
	else
		tap_fail "served: the agent's accepted connections' congestion control '$got', want $want on $((ncpu + 1)) at least (agent: $(tail -2 agent-serve.log | tr '\n' '|'))"
	fi
	kill -INT $rp 2> /dev/null
	wait_exit $rp 60 > /dev/null
else
	tap_fail "served: the agent does not listen on $port: $(tr '\n' '|' < agent-serve.log)"
fi
kill -INT $ap 2> /dev/null
wait_exit $ap 30 > /dev/null

# 5. served on 127.0.0.1 only
port=$(free_port)
"$HGTRACE" agent --serve --listen tcp:127.0.0.1:$port -B hgt_unpaced_$$_serve2 \
	2> agent-serve2.log &
ap=$!
if listening "$port" $ap; then
	got=$(python3 "$here/transport/sockopt.py" $ap cc-listen)
	[ "$got" = $want ] &&
		tap_ok "served on 127.0.0.1: its listening socket sends with $want" ||
		tap_fail "served on 127.0.0.1: its listening socket's congestion control '$got', want $want"
else
	tap_fail "served on 127.0.0.1: the agent does not listen on $port: $(tr '\n' '|' < agent-serve2.log)"
fi
kill -INT $ap 2> /dev/null
wait_exit $ap 30 > /dev/null
kill $other 2> /dev/null
tap_done
