#!/usr/bin/env python3
"""A trace-cmd host that misbehaves, for tests/transport/tracecmd-agent.sh.

Speaks trace-cmd's agent protocol (lib/transport/tcmsg.h: 12-byte big-endian header
{size, cmd, cmd_size}, TRACE_REQ 6, TRACE_RESP 7, SEND_DATA 3, FIN_DATA 4) to
`hgtrace agent --trace-cmd tcp:127.0.0.1:PORT`, as MODE says:
  huge      a header that claims a 4 GB message
  silent    connects and closes at once
  resp      a TRACE_REQ, the TRACE_RESP read, then closes (before the metadata)
  meta      a TRACE_REQ, the response and the metadata read, then closes without
            dialing a data port
  recording the whole start (data ports dialed, some pages read), then closes without
            CLOSE
Prints what it got ("resp cpus=N ports=...", "meta BYTES", "pages BYTES") and exits 0.
Usage: tc-host.py PORT MODE
"""
import socket, struct, sys, time

port, mode = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port), timeout=30)


def msg(cmd, fixed=b"", buf=b""):
    return struct.pack(">III", 12 + len(fixed) + len(buf), cmd, len(fixed)) + fixed + buf


def recv_exact(n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise EOFError("closed")
        b += c
    return b


def recv_msg():
    size, cmd, cmd_size = struct.unpack(">III", recv_exact(12))
    rest = recv_exact(size - 12)
    return cmd, rest[:cmd_size], rest[cmd_size:]


def trace_req():
    args = [b"-C", b"local", b"-e", b"sched:sched_switch"]
    a = struct.pack(">I", len(args)) + b"".join(x + b"\0" for x in args)
    p = b"ptp\0\0"
    buf = struct.pack(">II", 0, len(a)) + a + struct.pack(">II", 1, len(p)) + p
    return msg(6, struct.pack(">IIQ", 0, 0, 0x1234), buf)


if mode == "huge":
    s.sendall(struct.pack(">III", 0xFFFFFFFF, 6, 16))
    time.sleep(0.2)
    sys.exit(0)
if mode == "silent":
    s.close()
    sys.exit(0)

s.sendall(trace_req())
cmd, fixed, buf = recv_msg()
assert cmd == 7, cmd
flags, cpus, page = struct.unpack(">III", fixed[:12])
ports = [int(x) for x in buf.split(b"\0") if x]
print(f"resp cpus={cpus} ports={','.join(map(str, ports))}", flush=True)
if mode == "resp":
    s.close()
    sys.exit(0)
meta = 0
while True:
    cmd, fixed, buf = recv_msg()
    if cmd == 4:
        break
    assert cmd == 3, cmd
    meta += len(buf)
print(f"meta {meta}", flush=True)
if mode == "meta":
    s.close()
    sys.exit(0)
data = [socket.create_connection(("127.0.0.1", p), timeout=30) for p in ports]
got = 0
end = time.time() + 2
while time.time() < end and got < 4096:
    for d in data:
        d.settimeout(0.2)
        try:
            got += len(d.recv(65536))
        except socket.timeout:
            pass
print(f"pages {got}", flush=True)
s.close()
time.sleep(0.5)
for d in data:
    d.close()
