#!/usr/bin/env bash
# Hostile peers against the listener, with no tracefs needed: six connections that send a
# 60 MB META message each, no HELLO, to a listener allowed 100 MB per guest and 150 MB in
# total. Past the total the guest holding the most is cut (one line each): of the 360 MB
# sent at most 150 MB may be held, and a cut frees at most 60 MB, so at least 4 cuts. The
# listener's peak memory stays near the budget (before, all 360 MB were held); measured
# only without sanitizers, whose allocator keeps freed memory in quarantine.
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
for i in range(6):
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
if [ "$cut" -ge 4 ]; then
	tap_ok "6 x 60 MB of control data, 150 MB in total allowed: $cut guests cut, the biggest first"
else
	tap_fail "total memory budget: $cut cut: $(tr '\n' ' ' < listen.log)"
fi
if ldd "$HGTRACE" | grep -q 'libasan\|libubsan'; then
	tap_skip "peak RSS under the budget" "a sanitizer build keeps freed memory in quarantine"
elif [ "${hwm:-999999}" -lt $((250 * 1024)) ]; then
	tap_ok "... the listener's peak RSS $((hwm / 1024)) MB for 360 MB sent"
else
	tap_fail "peak RSS $((hwm / 1024)) MB for 360 MB sent, 150 MB allowed"
fi
tap_done
