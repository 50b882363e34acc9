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
  slowsync  a whole session in clock mono, with ptp time sync (TIME_SYNC 9) as trace-cmd's
            host runs it: a round on each CPU at the start; then CLOSE, and the last round
            on each CPU as a slow host runs it after its CLOSE (each probe answered 16 ms
            late: 5.4 s a round, never silent for long), STOP, and the CLOSE_RESP awaited.
            The host stamps each probe with CLOCK_MONOTONIC (the agent's clock mono).
Prints what it got ("resp cpus=N ports=...", "meta BYTES", "pages BYTES", "round CPU
SERIES ts=TS offset=OFFSET" for each OFFSET, "close_resp") and exits 0.
Usage: tc-host.py PORT MODE
"""
import socket, struct, sys, threading, time

port, mode = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port), timeout=30)


def msg(cmd, fixed=b"", buf=b""):
    return struct.pack(">III", 12 + len(fixed) + len(buf), cmd, len(fixed)) + fixed + buf


def recv_exact(n, sock=None):
    b = b""
    while len(b) < n:
        c = (sock or s).recv(n - len(b))
        if not c:
            raise EOFError("closed")
        b += c
    return b


def recv_msg(sock=None):
    size, cmd, cmd_size = struct.unpack(">III", recv_exact(12, sock))
    rest = recv_exact(size - 12, sock)
    return cmd, rest[:cmd_size], rest[cmd_size:]


def trace_req():
    clock = b"mono" if mode == "slowsync" else b"local"
    args = [b"-C", clock, b"-e", b"sched:sched_switch"]
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
tsync_port = struct.unpack(">I", fixed[36:40])[0]
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
def sync_msg(proto, cmd, data=b""):
    return msg(9, proto.ljust(16, b"\0") + struct.pack(">I", cmd), data)


def recv_sync(t):
    cmd, fixed, buf = recv_msg(t)
    assert cmd == 9, cmd
    return fixed[:16].rstrip(b"\0"), struct.unpack(">I", fixed[16:20])[0], buf


def ptp_round(t, cpu, delay):
    """One round on guest CPU cpu, as trace-cmd's host (ptp's client) runs it."""
    t.sendall(sync_msg(b"none", 1, struct.pack("=H", cpu)))
    proto, cmd, buf = recv_sync(t)
    assert proto == b"ptp" and cmd == 1, (proto, cmd)
    series = struct.unpack(">I", buf[:4])[0]
    t.sendall(sync_msg(b"ptp", 1, buf[:8]))
    stamps = []
    while True:
        proto, cmd, buf = recv_sync(t)
        if cmd == 5:
            break
        assert cmd == 2, cmd
        k = struct.unpack(">I", buf[:4])[0]
        stamps.append((time.monotonic_ns(), k))
        time.sleep(delay)
        t.sendall(sync_msg(b"ptp", 2, buf[:4]))
    probes = struct.pack(">II", series, len(stamps)) + b"".join(
        struct.pack(">QI", ts, k) for ts, k in stamps)
    t.sendall(sync_msg(b"ptp", 3, probes))
    proto, cmd, buf = recv_sync(t)
    assert cmd == 4, cmd
    ts, off = struct.unpack(">Qq", buf[:16])
    print(f"round {cpu} {series} ts={ts} offset={off}", flush=True)


def drain(d):
    d.settimeout(None)
    while d.recv(65536):
        pass


def slowsync():
    t = socket.create_connection(("127.0.0.1", tsync_port), timeout=30)
    t.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    data = [socket.create_connection(("127.0.0.1", p), timeout=30) for p in ports]
    for d in data:
        threading.Thread(target=drain, args=(d,), daemon=True).start()
    for cpu in range(cpus):
        ptp_round(t, cpu, 0)
    s.sendall(msg(0))
    for cpu in range(cpus):
        ptp_round(t, cpu, 0.016)
    t.sendall(sync_msg(b"none", 2))
    while True:
        cmd, fixed, buf = recv_msg()
        if cmd == 8:
            print("close_resp", flush=True)
            break


if mode == "slowsync":
    slowsync()
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
