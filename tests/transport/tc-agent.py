#!/usr/bin/env python3
"""A trace-cmd agent that misbehaves, for tests/transport/tracecmd-host.sh.

Listens on 127.0.0.1:PORT for one host (hgtrace record -A ... --peer trace-cmd), reads its
TRACE_REQ (trace-cmd's protocol: lib/transport/tcmsg.h), then as MODE says:
  garbage  answers with a header that claims a 5-byte message
  close    closes without an answer
  badmeta  a TRACE_RESP (2 CPUs, no time sync, two data ports it listens on), then 100
           bytes of metadata that are no trace.dat, then FIN_DATA
  cpus     a TRACE_RESP of 64 CPUs, then the trace.dat file HEAD (of fewer) as metadata
Prints "listening" once it listens, "req" once the request came; exits 0.
Usage: tc-agent.py PORT MODE [HEAD]
"""
import socket, struct, sys

port, mode = int(sys.argv[1]), sys.argv[2]
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", port))
ls.listen(4)
print("listening", flush=True)
ls.settimeout(60)
s, _ = ls.accept()
s.settimeout(30)


def recv_exact(n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise EOFError
        b += c
    return b


size, cmd, cmd_size = struct.unpack(">III", recv_exact(12))
recv_exact(size - 12)
print("req", flush=True)


def msg(cmd, fixed=b"", buf=b""):
    return struct.pack(">III", 12 + len(fixed) + len(buf), cmd, len(fixed)) + fixed + buf


def resp(cpus, ports):
    fixed = struct.pack(">IIIQ", 0, cpus, 4096, 0x5EED) + b"\0" * 16 + struct.pack(">I", 0)
    return msg(7, fixed, b"".join(b"%d\0" % p for p in ports))


if mode == "garbage":
    s.sendall(struct.pack(">III", 5, 7, 0))
elif mode in ("badmeta", "cpus"):
    cpus = 2 if mode == "badmeta" else 64
    data = []
    for _ in range(cpus):
        d = socket.socket()
        d.bind(("127.0.0.1", 0))
        d.listen(1)
        data.append(d)
    s.sendall(resp(cpus, [d.getsockname()[1] for d in data]))
    if mode == "badmeta":
        head = b"not a trace.dat " * 6 + b"...."
    else:
        head = open(sys.argv[3], "rb").read()
    for i in range(0, len(head), 8000):
        s.sendall(msg(3, b"", head[i:i + 8000]))
    s.sendall(msg(4))
    try:
        s.recv(1)  # the host leaves
    except OSError:
        pass
s.close()
