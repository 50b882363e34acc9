#!/usr/bin/env python3
"""A stand-in for a hybrid-vsock VMM (Firecracker's and Cloud Hypervisor's vsock device),
written from Firecracker's docs/vsock.md: the VMM listens on a UNIX socket UDS; a host
program connects to it and writes "CONNECT PORT\\n" (PORT in decimal); the VMM connects to
the guest's vsock port PORT and answers "OK HOSTPORT\\n", after which the connection is the
guest's; when nothing listens on that guest port it closes the connection. A guest's
connection to host vsock port P reaches the UNIX socket "UDS_P" that host software
listens on.

Here "the guest" is this machine: its vsock port N is 127.0.0.1:N (TCP), and a guest's
connection to host port P arrives on 127.0.0.1:GPORT (--guest-port GPORT:P).

Usage: fake-hvsock.py UDS [--mode ok|refuse|garbage|mute] [--guest-port GPORT:P]
Prints "ready" once listening, then one line per connection: "connect N ok", "connect N
refused" (nothing on that port), "connect N closed" (--mode refuse), "connect N garbage",
"connect N mute", "bad request", or "guest to P" for a guest's connection.
"""
import os
import signal
import socket
import sys
import threading

uds = sys.argv[1]
mode = "ok"
guest = None
args = sys.argv[2:]
while args:
    if args[0] == "--mode":
        mode = args[1]
    elif args[0] == "--guest-port":
        g, p = args[1].split(":")
        guest = (int(g), int(p))
    args = args[2:]
lock = threading.Lock()
hostport = [1073741824]
held = []


def say(s):
    with lock:
        print(s, flush=True)


def pump(a, b):
    # a real vsock has no delayed ACKs: the TCP leg standing in for it acknowledges at
    # once (else a peer writing a message in two parts waits 40 ms for each)
    tcp = a.family in (socket.AF_INET, socket.AF_INET6)
    try:
        while True:
            if tcp:
                a.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    for s in (b,):
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def relay(a, b):
    t = threading.Thread(target=pump, args=(b, a), daemon=True)
    t.start()
    pump(a, b)
    t.join()
    a.close()
    b.close()


def host_conn(c):
    line = b""
    while not line.endswith(b"\n") and len(line) < 64:
        d = c.recv(1)
        if not d:
            break
        line += d
    parts = line.decode("ascii", "replace").split()
    if len(parts) != 2 or parts[0] != "CONNECT" or not parts[1].isdigit():
        say("bad request")
        c.close()
        return
    port = int(parts[1])
    if mode == "refuse":
        say("connect %d closed" % port)
        c.close()
        return
    if mode == "garbage":
        say("connect %d garbage" % port)
        c.sendall(b"NO\n")  # only "OK" may start an answer
        c.close()
        return
    if mode == "mute":
        say("connect %d mute" % port)
        held.append(c)  # open, never answered
        return
    try:
        g = socket.create_connection(("127.0.0.1", port))
    except OSError:
        say("connect %d refused" % port)
        c.close()
        return
    with lock:
        hostport[0] += 1
        hp = hostport[0]
    c.sendall(b"OK %d\n" % hp)
    say("connect %d ok" % port)
    relay(c, g)


def guest_conn(c, p):
    u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        u.connect("%s_%d" % (uds, p))
    except OSError as e:
        say("guest to %d: %s" % (p, e))
        c.close()
        return
    say("guest to %d" % p)
    relay(c, u)


def serve(ls, fn, *a):
    while True:
        c, _ = ls.accept()
        threading.Thread(target=fn, args=(c,) + a, daemon=True).start()


hs = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
hs.bind(uds)
hs.listen(64)
threading.Thread(target=serve, args=(hs, host_conn), daemon=True).start()
if guest:
    gs = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    gs.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    gs.bind(("127.0.0.1", guest[0]))
    gs.listen(64)
    threading.Thread(target=serve, args=(gs, guest_conn, guest[1]), daemon=True).start()
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
say("ready")
try:
    threading.Event().wait()
finally:
    os.unlink(uds)
