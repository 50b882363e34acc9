#!/usr/bin/env python3
"""A guest agent that misbehaves during sync, for tests/transport/session.sh.

Speaks hgtrace's agent protocol (lib/transport/proto.h) over FIFO pairs like
`hgtrace agent --serve --fifos DIR`: waits for the host's CONFIG and '1', says READY,
HELLO, metadata and TRACEID, then answers the host's probes as MODE says:
  lie     answers with random timestamps
  runaway answers with timestamps that always increase, far faster than any clock
  fast    answers with a clock that runs 100 ns-ticks a ns: 25 to 100 times a 1-4 GHz TSC,
          past the host's 1/10..10 sanity bound but well inside a 1/1000..1000 one
  mute    never answers
  unsent  answers a probe that was never sent
  flood   sends garbage on the control channel without end
  stale   puts an earlier session's whole data header and a page (4,120 bytes) before
          cpu 0's header, as a FIFO a killed host left unread holds them, and the tail of
          an earlier session's control stream before READY (40 bytes from the middle of
          a message, then a whole OPTION of 32: 72 bytes); never answers
  spikes  records with clock mono_raw and answers each probe with it, truly (the host's
          offset is 0), but holds back every answer of the second, fourth, ... round by
          30 ms after reading its clock: those rounds' samples come out about 15 ms off,
          within their bound (half their round trip), as a machine busy elsewhere makes them
  remeta  sends its kallsyms again after TRACEID, other than the first ("second_sym"
          instead of "first_sym"), then a UNAME option (the host writes its head again);
          never answers
and stops on '0' (sending END), or when killed.
Usage: fake-agent.py DIR MODE
"""
import os, random, select, struct, sys, time

d, mode = sys.argv[1], sys.argv[2]
ctl_in = os.open(f"{d}/agent-ctl-path.in", os.O_RDWR)
ctl_out = os.open(f"{d}/agent-ctl-path.out", os.O_RDWR)
data = [os.open(f"{d}/trace-path-cpu{i}.out", os.O_RDWR) for i in range(2)]
MAGIC = 0x43544748
if mode == "flood":
    os.set_blocking(ctl_out, False)


def send(t, payload):
    os.write(ctl_out, struct.pack("<IHHI", MAGIC, t, 0, len(payload)) + payload)


buf = b""


def messages(timeout):
    """Yield host commands: ('cmd', c) or ('msg', type, payload)."""
    global buf
    r, _, _ = select.select([ctl_in], [], [], timeout)
    if r:
        buf += os.read(ctl_in, 65536)
    while buf:
        if buf[:1] in (b"0", b"1"):
            yield ("cmd", buf[:1])
            buf = buf[1:]
        elif buf[:1] == b"H":
            if len(buf) < 12:
                return
            magic, t, _, n = struct.unpack("<IHHI", buf[:12])
            if len(buf) < 12 + n:
                return
            yield ("msg", t, buf[12:12 + n])
            buf = buf[12 + n:]
        else:
            buf = buf[1:]


session = random.getrandbits(63) | 1
KSYM1 = b"ffffffff81000000 T first_sym\n"
KSYM2 = b"ffffffff81000000 T second_sym\n"
runaway = 1 << 40
state = "config"
deadline = time.time() + 60
while time.time() < deadline:
    for m in messages(0.05):
        if state == "config" and m[0] == "msg" and m[1] == 6:
            if mode == "stale":  # an earlier session still writing: a message's end, one more
                os.write(ctl_out, b"rnal text, HGx: the end of an old META.\n")  # 40 bytes
                send(3, struct.pack("<I", 7) + b"earlier option..")  # 12 + 20 bytes
            send(5, struct.pack("<Q", session))  # READY
            if mode == "stale":
                os.write(data[0], struct.pack("<IIIIQ", 0x44544748, 2, 0, 4096, session ^ 2)
                         + os.urandom(4096))
            for i, fd in enumerate(data):
                os.write(fd, struct.pack("<IIIIQ", 0x44544748, 2, i, 4096, session))
            state = "wait"
        elif state == "wait" and m == ("cmd", b"1"):
            clock = b"mono_raw\0" if mode == "spikes" else b"x86-tsc\0"
            send(1, struct.pack("<IIIIQ", 2, 2, 4096, 8, session) + clock)  # HELLO (protocol 2)
            for item in range(16, 22):
                if mode == "remeta" and item == 19:  # KALLSYMS: u32 size, text
                    send(2, struct.pack("<II", item, len(KSYM1)) + KSYM1)
                else:
                    send(2, struct.pack("<I", item) + b"\0" * 8)  # META, empty items
            send(3, struct.pack("<I", 11) + struct.pack("<Q", session))  # TRACEID
            if mode == "remeta":
                send(2, struct.pack("<II", 19, len(KSYM2)) + KSYM2)
                send(3, struct.pack("<I", 5) + b"Linux remeta 6.1.0 x86_64\0")  # UNAME
            state = "rec"
        elif state == "rec" and m[0] == "msg" and m[1] == 7:
            seq, cpu = struct.unpack("<II", m[2])
            if mode == "lie":
                send(8, struct.pack("<IIQ", seq, cpu, random.getrandbits(62)))
            elif mode == "runaway":
                runaway += (1 << 44) + random.getrandbits(40)
                send(8, struct.pack("<IIQ", seq, cpu, runaway))
            elif mode == "fast":
                send(8, struct.pack("<IIQ", seq, cpu, 100 * time.monotonic_ns()))
            elif mode == "spikes":
                # rounds: 16 probes a CPU first (seq 1-32), then 8 a CPU (16 a round)
                ts = time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
                if seq > 32 and (seq - 33) // 16 % 2 == 0:
                    time.sleep(0.03)
                send(8, struct.pack("<IIQ", seq, cpu, ts))
            elif mode == "unsent":
                send(8, struct.pack("<IIQ", seq + 1000, cpu, 1))
        elif state == "rec" and m == ("cmd", b"0"):
            send(4, struct.pack("<Q", 0))  # END
            sys.exit(0)
    if state == "rec" and mode == "flood":
        try:
            os.write(ctl_out, os.urandom(4096))
        except BlockingIOError:
            pass
