#!/usr/bin/env bash
# Hostile peers against the listener, with no tracefs needed: three connections that send a
# 60 MB META message each, no HELLO, to a listener allowed 100 MB per guest and 150 MB in
# total. Past the total the guest holding the most is cut (one line), and the listener's
# peak memory stays near the budget (before, each held its 60 MB: no total at all).
# Usage: hostile.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
command -v python3 > /dev/null || tap_skip_all "python3 is not installed"
tap_workdir
port=$((20000 + $$ % 30000))
"$HGTRACE" listen -o . --tcp $port --max-mb 100 --max-total-mb 150 2> listen.log &
lpid=$!
sleep 0.3
python3 -c 'import socket, struct, sys, time
meta = struct.pack("<IHHI", 0x43544748, 2, 0, 4 + (60 << 20)) + struct.pack("<I", 21)
c = []
for i in range(3):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.sendall(b"HGTC"[0:0] + meta)
    try:
        s.sendall(b"x" * (60 << 20))
    except OSError:
        pass
    c.append(s)
    time.sleep(0.5)
time.sleep(2)' $port
hwm=$(awk '/VmHWM/ { print $2 }' /proc/$lpid/status)
kill -INT $lpid
wait $lpid 2> /dev/null
cut=$(grep -c 'over its 150 MB: this guest holds the most' listen.log)
if [ "$cut" -ge 1 ] && [ "${hwm:-999999}" -lt $((220 * 1024)) ]; then
	tap_ok "3 x 60 MB of control data, 150 MB in total allowed: $cut guest cut, peak RSS $((hwm / 1024)) MB"
else
	tap_fail "total memory budget: $cut cut, peak RSS $((hwm / 1024)) MB: $(tr '\n' ' ' < listen.log)"
fi
tap_done
