#!/usr/bin/env bash
# Hostile peers against the listener, with no tracefs needed: six connections that send a
# 60 MB META message each, no HELLO, to a listener allowed 100 MB per guest and 150 MB in
# total. Past the total the guest holding the most is cut (one line each): of the 360 MB
# sent at most 150 MB may be held, and a cut frees at most 60 MB, so at least 4 cuts. The
# listener's peak memory stays near the budget (before, all 360 MB were held); measured
# only without sanitizers, whose allocator keeps freed memory in quarantine. Then a guest
# silent after its HELLO (no heartbeat) is closed at --silent-timeout, and an older
# protocol's HELLO is refused saying so.
# Usage: hostile.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
command -v python3 > /dev/null || tap_skip_all "python3 is not installed"
tap_workdir
port=$(free_port)
"$HGTRACE" listen -o . --tcp $port --max-mb 100 --max-total-mb 150 2> listen.log &
lpid=$!
wait_listen $port $lpid
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
# A network guest that says READY and a well-formed HELLO (protocol 2) and then nothing,
# no heartbeat: past --silent-timeout (10 s) it is closed, in one line, and its slot is
# free. One that speaks an older protocol is told so, one whose HELLO names another
# session than its READY is refused. All with real sockets on 127.0.0.1.
port=$(free_port)
"$HGTRACE" listen -o . --tcp $port --silent-timeout 10 2> silent.log &
lpid=$!
python3 -c 'import socket, struct, sys, time
def msg(t, p): return struct.pack("<IHHI", 0x43544748, t, 0, len(p)) + p
port = int(sys.argv[1])
def conn():  # the listener is up once it accepts (a hang guard of 60 s)
    end = time.time() + 60
    while True:
        try: return socket.create_connection(("127.0.0.1", port))
        except ConnectionRefusedError:
            if time.time() > end: raise
            time.sleep(0.02)
old = conn()
old.sendall(msg(5, struct.pack("<Q", 3)) + msg(1, struct.pack("<IIIIQ", 1, 2, 4096, 8, 3) + b"local\0"))
other = conn()  # READY for session 7, HELLO for session 8
other.sendall(msg(5, struct.pack("<Q", 7)) + msg(1, struct.pack("<IIIIQ", 3, 2, 4096, 8, 8) + b"local\0"))
s = conn()
s.sendall(msg(5, struct.pack("<Q", 5)) + msg(1, struct.pack("<IIIIQ", 2, 2, 4096, 8, 5) + b"local\0"))
t0 = time.time()
s.settimeout(20)
try:
    while s.recv(4096): pass
except OSError: pass
print("closed after %.1f s" % (time.time() - t0))' $port > silent.out 2>&1
kill -INT $lpid
wait $lpid 2> /dev/null
secs=$(sed -n 's/closed after \([0-9.]*\) s/\1/p' silent.out)
if grep -q 'silent for 10 s (no data, no heartbeat): closed' silent.log &&
	[ -n "$secs" ] && [ "${secs%.*}" -ge 10 ] && [ "${secs%.*}" -lt 15 ]; then
	tap_ok "a guest silent after its HELLO is closed after $secs s: $(grep -m1 silent silent.log)"
else
	tap_fail "silent guest: $(cat silent.out) $(tr '\n' ' ' < silent.log)"
fi
if grep -q 'HELLO names another session than READY' silent.log; then
	tap_ok "a HELLO of another session than its READY is refused: $(grep -m1 'another session' silent.log)"
else
	tap_fail "HELLO of another session: $(tr '\n' ' ' < silent.log)"
fi
if grep -q 'HELLO rejected: protocol version 1, this listener speaks 2 to 3' silent.log; then
	tap_ok "an agent of an older protocol is told: $(grep -m1 'protocol version' silent.log)"
else
	tap_fail "old protocol: $(tr '\n' ' ' < silent.log)"
fi
tap_done
