#!/usr/bin/env python3
"""Peers for bench/soak.sh, speaking hgtrace's agent protocol (lib/transport/proto.h, v2).

  capture DIR OUT      be the host of a real `hgtrace agent --fifos DIR`: start it, stop it
                       after 2 s, keep its control stream and each CPU's pages in OUT.*
  good fifo DIR CAP MB a guest over the FIFOs of DIR: the captured description, then MB of
  good tcp PORT CAP MB the captured pages (repeated) over its CPUs, then END; prints the page
                       bytes sent per CPU; waits 3 s before it closes (LINGER=0: closes at
                       once, its last pages still in the sockets)
  disconnect|slow|silent|garbage|flood PORT CAP   hostile TCP peers (see each function)
"""
import os, random, select, socket, struct, sys, time

CTL, DATA, V = 0x43544748, 0x44544748, 2
HELLO, META, OPTION, END, READY, PROBE_REPLY, RECORDING = 1, 2, 3, 4, 5, 8, 11


def msg(t, p):
    return struct.pack("<IHHI", CTL, t, 0, len(p)) + p


def parse(buf):
    k, out = 0, []
    while k + 12 <= len(buf):
        _, t, _, n = struct.unpack("<IHHI", buf[k:k + 12])
        out.append((t, buf[k + 12:k + 12 + n]))
        k += 12 + n
    return out


def capture(d, out):
    ctl_in = os.open(f"{d}/agent-ctl-path.in", os.O_RDWR)
    ctl_out = os.open(f"{d}/agent-ctl-path.out", os.O_RDWR)
    data, i = [], 0
    while os.path.exists(f"{d}/trace-path-cpu{i}.out"):
        data.append(os.open(f"{d}/trace-path-cpu{i}.out", os.O_RDWR))
        i += 1
    buf, pages = b"", [b""] * len(data)
    t0, started, stopped = time.time(), None, False
    while time.time() - t0 < 60:
        r, _, _ = select.select([ctl_out] + data, [], [], 0.1)
        for fd in r:
            b = os.read(fd, 1 << 16)
            if fd == ctl_out:
                buf += b
            else:
                pages[data.index(fd)] += b
        # the start once the agent is there (its READY), the stop 2 s after it records
        # (RECORDING, after its metadata), not at fixed times: a slow agent got "1" and
        # "0" together and recorded nothing
        if started is None and any(t == READY for t, _ in parse(buf)):
            os.write(ctl_in, b"1\n")
            started = 0
        if started == 0 and any(t == RECORDING for t, _ in parse(buf)):
            started = time.time()
        if started and not stopped and time.time() - started > 2:
            os.write(ctl_in, b"0\n")
            stopped = True
        if any(t == END for t, _ in parse(buf)):
            break
    open(out + ".ctl", "wb").write(buf)
    for c, p in enumerate(pages):
        p = p[24:]  # the channel's header
        open(f"{out}.cpu{c}", "wb").write(p[:len(p) // 4096 * 4096])


def description(cap, session):
    """HELLO, META, OPTION and RECORDING messages of the capture, with @session (a listener
    closes a network guest that has not said RECORDING 10 s after the start)."""
    out = b""
    for t, p in parse(open(cap + ".ctl", "rb").read()):
        if t == HELLO:
            p = p[:16] + struct.pack("<Q", session) + p[24:]
        if t in (HELLO, META, OPTION, RECORDING):
            out += msg(t, p)
    return out


def ncpus(cap):
    hello = [p for t, p in parse(open(cap + ".ctl", "rb").read()) if t == HELLO][0]
    return struct.unpack("<I", hello[4:8])[0]


def good(kind, where, cap, mb):
    session = random.getrandbits(63) | 1
    n = ncpus(cap)
    pages = [open(f"{cap}.cpu{c}", "rb").read() for c in range(n)]
    pages = [p if p else open(f"{cap}.cpu0", "rb").read() for p in pages]
    if kind == "fifo":
        ctl_in = os.open(f"{where}/agent-ctl-path.in", os.O_RDWR)
        ctl = os.open(f"{where}/agent-ctl-path.out", os.O_RDWR)
        chans = [os.open(f"{where}/trace-path-cpu{c}.out", os.O_RDWR) for c in range(n)]
        send = lambda fd, b: os.write(fd, b)
        wait_fd = ctl_in
    else:
        s = socket.create_connection(("127.0.0.1", int(where)))
        ctl = s.fileno()
        chans = [socket.create_connection(("127.0.0.1", int(where))) for c in range(n)]
        send = lambda fd, b: (fd.sendall(b) if isinstance(fd, socket.socket) else os.write(fd, b))
        wait_fd = ctl
        s.sendall(msg(READY, struct.pack("<Q", session)))
    if kind == "fifo":
        os.write(ctl, msg(READY, struct.pack("<Q", session)))

    def put(fd, b):
        mv = memoryview(b)
        while mv:
            if isinstance(fd, socket.socket):
                fd.sendall(mv)
                return
            w = os.write(fd, mv)
            mv = mv[w:]

    for c, ch in enumerate(chans):
        put(ch, struct.pack("<IIIIQ", DATA, V, c, 4096, session))
    got = b""
    while b"1" not in got:  # the host's start
        if not select.select([wait_fd], [], [], 30)[0]:
            sys.exit("soak-peer: no start from the host in 30 s")
        b = os.read(wait_fd, 4096)
        if not b:
            sys.exit("soak-peer: the host closed the connection before its start: %r" % got)
        got += b
    put(ctl if kind == "fifo" else s, description(cap, session))
    per = mb * (1 << 20) // n // 4096 * 4096
    sent = [0] * n
    chunk = [(p * (1 + (1 << 20) // max(len(p), 1)))[:1 << 20] for p in pages]
    chunk = [c[:len(c) // 4096 * 4096] for c in chunk]
    if not all(chunk):  # nothing to send would loop below for good
        sys.exit("soak-peer: the capture %s holds no whole page" % cap)
    while any(sent[c] < per for c in range(n)):
        for c in range(n):
            k = min(len(chunk[c]), per - sent[c])
            if k > 0:
                put(chans[c], chunk[c][:k])
                sent[c] += k
    end = struct.pack("<QQQQQ", 0, 0, 0, 0, 0) + b"".join(struct.pack("<Q", x) for x in sent)
    put(ctl if kind == "fifo" else s, msg(END, end))
    print(" ".join(str(x) for x in sent), flush=True)
    time.sleep(float(os.environ.get("LINGER", "3")))


def conn(port):
    return socket.create_connection(("127.0.0.1", int(port)))


def hostile(mode, port, cap, seconds=60):
    """Hostile peers, one after another until @seconds pass."""
    t0 = time.time()
    while time.time() - t0 < seconds:
        try:
            session = random.getrandbits(63) | 1
            s = conn(port)
            if mode == "disconnect":  # a guest that describes itself, sends pages, vanishes
                s.sendall(msg(READY, struct.pack("<Q", session)) + description(cap, session))
                d = conn(port)
                d.sendall(struct.pack("<IIIIQ", DATA, V, 0, 4096, session))
                d.sendall(open(cap + ".cpu0", "rb").read()[:1 << 20])
                time.sleep(0.5)
                s.close()
                d.close()
            elif mode == "slow":  # a byte every 100 ms: a control message that never ends
                s.sendall(msg(READY, struct.pack("<Q", session)))
                for b in description(cap, session)[:300]:
                    s.sendall(bytes([b]))
                    time.sleep(0.1)
                s.close()
            elif mode == "silent":  # HELLO, then nothing: closed at --silent-timeout
                s.sendall(msg(READY, struct.pack("<Q", session)) + description(cap, session)[:200])
                s.settimeout(40)
                try:
                    while s.recv(4096):
                        pass
                except OSError:
                    pass
                s.close()
            elif mode == "garbage":
                s.sendall(os.urandom(65536))
                time.sleep(0.2)
                s.close()
            elif mode == "flood":  # six 100 MB META messages (all held) until it is cut
                s.sendall(msg(READY, struct.pack("<Q", session)))
                junk = b"x" * (1 << 20)
                for item in range(16, 22):
                    s.sendall(struct.pack("<IHHI", CTL, META, 0, 4 + (100 << 20)) +
                              struct.pack("<I", item))
                    for i in range(100):
                        s.sendall(junk)
                s.close()
        except OSError:
            time.sleep(0.2)


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[0] == "capture":
        capture(a[1], a[2])
    elif a[0] == "good":
        good(a[1], a[2], a[3], int(a[4]))
    else:
        hostile(a[0], a[1], a[2], float(a[3]) if len(a) > 3 else 60)
