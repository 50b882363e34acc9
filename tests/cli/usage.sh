#!/usr/bin/env bash
# Command-line handling: help, unknown commands and options, bad values.
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
data=$here/data
tap_workdir

check() { # WHAT WANT_RC NEEDLE ARGS...
	local what=$1 want=$2 needle=$3 out rc
	shift 3
	out=$("$HGTRACE" "$@" 2>&1)
	rc=$?
	if [ $rc -eq "$want" ] && grep -qF -- "$needle" <<<"$out"; then
		tap_ok "$what"
	else
		tap_fail "$what (exit $rc)"
		head -3 <<<"$out" | sed 's/^/# /'
	fi
}
check "no command prints usage" 2 "usage: hgtrace" 
check "--help" 0 "report" --help
check "unknown command" 2 "unknown command 'frob'" frob
check "report -h" 0 "--ts-offset" report -h
check "gen -h" 0 "--backends LIST" gen -h
check "gen without --format" 2 "--format is required" gen -o x.h "$here/probes/sample.trace-events"
check "gen bad --format" 2 "'x' is not h, c, d, stp, ust, ust-c, log-stap, simpletrace-stap or rs" gen --format x -o x.h "$here/probes/sample.trace-events"
check "gen stp without --binary" 1 "--format stp needs --binary and --probe-prefix" gen --format stp -o /dev/null "$here/probes/sample.trace-events"
check "gen bad --group" 1 "--group: '1x' is not a C identifier" gen --format h --group 1x -o /dev/null "$here/probes/sample.trace-events"
check "gen missing events file" 1 "nosuch.events: No such file or directory" gen --format h -o /dev/null nosuch.events
check "simpletrace without a file" 2 "usage: hgtrace simpletrace" simpletrace
check "simpletrace of a trace.dat" 1 "not a simple trace" simpletrace "$data/tsc.dat"
check "ctl without a command" 2 "usage: hgtrace ctl" ctl /nonexistent
check "ctl to no socket" 1 "hgtrace: ctl: /nonexistent/sock: No such file or directory" ctl /nonexistent/sock info trace-events
check "listen -o a missing directory: said at once" 1 "listen: output directory /nonexistent: No such file or directory" listen -o /nonexistent --tcp 39125
check "listen -o a file: said at once" 1 "output directory /etc/passwd: not a directory" listen -o /etc/passwd --tcp 39125
# listen --bind: the TCP port listens on that address only (/proc/net/tcp: 0100007F = 127.0.0.1)
port=$(free_port)
"$HGTRACE" listen -o "$(mktemp -d)" --bind 127.0.0.1 --tcp $port 2> /dev/null &
lpid=$!
hex=$(printf '%04X' $port)
for i in $(seq 50); do grep -q ":$hex 00000000:0000 0A" /proc/net/tcp && break; sleep 0.1; done
local_addr=$(awk -v p=":$hex" '$2 ~ p"$" && $4 == "0A" { print $2 }' /proc/net/tcp)
kill -INT $lpid
wait $lpid
[ "$local_addr" = "0100007F:$hex" ] && tap_ok "listen --bind 127.0.0.1: listening on $local_addr only" ||
	tap_fail "listen --bind: '$local_addr'"
check "listen --bind that is not an address" 1 "listen: --bind 'nope': not an IPv4 address" listen --bind nope --tcp $port
check "sync-check -h" 0 "usage: hgtrace sync-check" sync-check -h
check "sync-check with one file" 2 "usage: hgtrace sync-check" sync-check "$data/tsc.dat"
check "sync-check with no pair" 1 "no host + guest pair" sync-check "$data/tsc.dat" "$data/mono.dat"
check "attach --drift 1" 2 "--drift '1'" attach --drift=1 a b
check "attach -s ,SCALE without FRAC" 2 "expected ,SCALE,FRAC" attach -s ,5 a b
check "report unknown option" 2 "usage: hgtrace report" report --bogus
check "--ts-offset before -i" 2 "--ts-offset must come after -i" report --ts-offset 5 "$data/tsc.dat"
check "--ts-offset not a number" 2 "expected an integer" report -i "$data/tsc.dat" --ts-offset 5x
check "--cpu garbage" 2 "--cpu 'x1'" report --cpu x1 "$data/tsc.dat"
check "filter syntax error" 1 "filter \"sched_switch: (\"" report -F 'sched_switch: (' "$data/tsc.dat"
if [ "$("$HGTRACE" report -F 'sched_switch: nosuchfield == 1' "$data/tsc.dat" | wc -l)" -eq 1 ]; then
	tap_ok "filter on an unknown field matches nothing (as trace-cmd)"
else
	tap_fail "filter on an unknown field matches nothing (as trace-cmd)"
fi
check "dump of a good file" 0 "buffers (1):" dump "$data/tsc.dat"
check "positional inputs merge" 0 "mono.dat: cpus=2" report "$data/tsc.dat" "$data/mono.dat"
# record -A and listen: usage errors, and a listener that starts and stops cleanly with
# malloc filling new memory with garbage (a guest entry left half-initialised crashed it
# with SIGBUS: exit 135).
check "record -A over TCP without a port" 2 "expected NAME@tcp:HOST:PORT" record -e sched -A g@tcp:h
check "record -A vsock CID not a number" 2 "CID 'x' is not a number" record -e sched -A g@vsock:x:5
check "agent --listen bad" 2 "tcp:[ADDR:]PORT or vsock:PORT" agent --serve --listen udp:5
check "record -A bad transport" 2 "expected NAME[@fifo:DIR]" record -e sched -A g@bogus
check "listen -e without --record-host" 2 "give --record-host" listen -e sched --tcp 1
check "listen --record-host without -e" 2 "needs the host's events" listen --record-host --tcp 1
check "listen --tcp 0" 2 "hgtrace: listen: port '0': a port from 1 to 65535" listen --tcp 0
# a flight trigger as long as the window can never fire: refused before anything starts
check "listen --flight: a trigger as long as --window" 2 "hgtrace: listen: trigger 'wakeup>2s': not shorter than the window (2.000 s)" listen --record-host -e sched --tcp 1 --flight --window 2 --trigger 'wakeup>2s'
check "record --flight: a trigger longer than the default window" 2 "hgtrace: record: trigger 'timer>10s': not shorter than the window (10.000 s)" record --flight --trigger 'timer>10s' -e sched -o x.dat -- true
check "agent: a command with --serve" 2 "do not go together" agent --serve -- true
# numbers: out of range, not a number, trailing junk, each refused by name (exit 2)
check "attach -c 0" 2 "attach: -c '0': expected a CPU count" attach -c 0 a b
check "attach --drift=1" 2 "attach: --drift '1': expected a slice count from 2 to 4096" attach --drift=1 a b
check "attach PID 12x" 2 "attach: PID '12x': expected a thread id" attach a b 12x
check "record -b 0" 2 "record: -b '0': expected KB > 0" record -b 0 -- true
check "record -P x" 2 "record: -P 'x': expected a PID" record -P x -- true
check "record --sync-interval 3600001" 2 "record: --sync-interval '3600001': expected 1 to 3600000 ms" record --sync-interval 3600001 -- true
check "convert --file-version 8" 2 "convert: --file-version '8': expected 6 or 7" convert --file-version 8 -i a -o b
lt=$(mktemp -d)
# a name that is a directory of its own: refused, nothing written beside --dir
mkdir "$lt/inner"
check "setup-guest '..' is not a name" 1 "name [A-Za-z0-9_.-] (not . or ..)" setup-guest .. --cpus 1 --dir "$lt/inner"
[ "$(ls -A "$lt" | tr '\n' ' ')" = "inner " ] && [ -z "$(ls -A "$lt/inner")" ] &&
	tap_ok "setup-guest '..' wrote nothing" || tap_fail "setup-guest '..' wrote: $(ls -R "$lt" | tr '\n' ' ')"
rmdir "$lt/inner"
"$HGTRACE" setup-guest g --cpus 2 --dir "$lt" > /dev/null
MALLOC_PERTURB_=165 timeout --preserve-status -s INT 1 "$HGTRACE" listen -o "$lt" --fifo "g:$lt/g" --start > "$lt/out" 2>&1
rc=$?
if [ $rc = 1 ] && grep -q 'guest g: the listener was stopped' "$lt/out"; then
	tap_ok "listen with MALLOC_PERTURB_: stops on SIGINT, says why the guest has no file (exit 1)"
else
	tap_fail "listen with MALLOC_PERTURB_: exit $rc: $(tr '\n' '|' < "$lt/out")"
fi
rm -rf "$lt"
# One convention for every subcommand: --help and -h print its usage on stdout, exit 0;
# and each has a man page of its own. The commands are those of the man pages
# (docs/hgtrace-COMMAND.1, written apart from the binary), and hgtrace --help lists the
# same ones.
n=0 bad=
cmds=$(cd "$here/../docs" && ls hgtrace-*.1 | sed 's/^hgtrace-//; s/\.1$//' | sort)
listed=$("$HGTRACE" --help | sed -n 's/^  \([a-z-]*\) .*/\1/p' | sort)
# hgtrace(1) names every command's page
miss=
for c in $cmds; do grep -qx ".BR hgtrace-$c (1)" "$here/../docs/hgtrace.1" || miss="$miss $c"; done
[ -z "$miss" ] && tap_ok "hgtrace(1) names all $(echo "$cmds" | wc -l) command pages" ||
	tap_fail "hgtrace(1) misses:$miss"
[ "$cmds" = "$listed" ] && tap_ok "hgtrace --help lists the $(echo "$cmds" | wc -l) commands that have man pages" ||
	tap_fail "hgtrace --help lists [$(echo $listed)], the man pages [$(echo $cmds)]"
for c in $cmds; do
	n=$((n + 1))
	for h in --help -h; do
		"$HGTRACE" "$c" $h > h.out 2> /dev/null && grep -q "^usage: hgtrace $c" h.out || bad="$bad $c$h"
	done
	head -1 "$here/../docs/hgtrace-$c.1" 2>/dev/null | grep -q '^\.TH' || bad="$bad man:$c"
done
[ "$n" -ge 13 ] && [ -z "$bad" ] && tap_ok "all $n subcommands answer --help and -h, each with its own man page" ||
	tap_fail "--help/-h/man page missing:$bad ($n commands)"
# simulate without -o writes nothing where the user did not ask: usage, exit 2, no file
mkdir -p sim-here
(cd sim-here && "$HGTRACE" simulate --duration-ms 10 > out.txt 2> err.txt)
rc=$?
left=$(ls sim-here | grep -vc '^\(out\|err\).txt$')
[ $rc = 2 ] && [ "$left" = 0 ] && grep -q '^usage: hgtrace simulate -o PREFIX' sim-here/err.txt &&
	tap_ok "simulate without -o: usage, exit 2, no file written" ||
	tap_fail "simulate without -o: exit $rc, $left files: $(ls sim-here | tr '\n' ' ')"
# ctl gives up on a program that accepts and never answers
sock=$(mktemp -u /tmp/hgt-ctl-XXXXXX)
python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1)
c = s.accept(); time.sleep(30)' "$sock" &
spid=$!
for i in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
t0=$(date +%s)
check "ctl to a silent program: no answer within 5 s" 1 "no answer within 5 s" ctl "$sock" info trace-events
t1=$(date +%s)
kill $spid 2> /dev/null
rm -f "$sock"
[ $((t1 - t0)) -le 8 ] && tap_ok "... and it gave up after $((t1 - t0)) s" || tap_fail "ctl took $((t1 - t0)) s"
tap_done
