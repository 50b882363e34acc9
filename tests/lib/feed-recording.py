#!/usr/bin/env python3
"""Feed finished trace.dat files to a flight recorder as if they were being recorded.

feed-recording.py HGTRACE STEPS PAUSE FILE:OUTPUT...

For each FILE (version 7 or 6, uncompressed), OUTPUT.recording/ is made as hgtrace record
makes it: head.dat (FILE itself: its top buffer's pages are never read from it) and one
file of pages per CPU. The pages are then appended in STEPS steps PAUSE seconds apart:
at step i, each CPU file gets its pages whose last event is at most i/STEPS of the way
through that file's times, as a recorder writes a page once its events are in (a host and
its guest cover the same session, so they advance together). Before "ready" it prints
"lag FILE N" per FILE: the longest an event waits for its page, in the file's time units
(from step times on the same scale), which a flight recorder must be told as its flush
interval. Prints "ready" once every file exists (but a FEED_LATE one), "step I T BYTES" after each step (T:
CLOCK_MONOTONIC in seconds, BYTES: fed so far) and "fed N pages" at the end; the
directories are left for the caller.

FEED_HOLD=CPU:K in the environment holds CPU's pages back by K steps (all of them come at
the last step): a recorder whose reader of that CPU writes its pages late, as a guest
agent's partial pages come up to its flush interval after the events in them.
FEED_LATE=FILE:K makes FILE's OUTPUT.recording/ only at step K, with the pages due by
then: a guest whose recording begins after its host's (its agent slow to start).
FEED_GO=PATH: after "ready", the first step waits until PATH exists (the caller makes it
once its flight recorder has started: no page is older than the recorder's start).
"""
import os
import re
import struct
import subprocess
import sys
import time


def cpu_sections(hgtrace, path):
    """[(cpu, offset, size)] of the top buffer, as hgtrace dump prints them."""
    out = subprocess.run([hgtrace, "dump", path], capture_output=True, text=True,
                         check=True).stdout
    secs, top = [], False
    for line in out.splitlines():
        m = re.match(r'\s*buffer "(.*)":.*page size (\d+)', line)
        if m:
            top = m.group(1) == ""
            page = int(m.group(2))
            continue
        m = re.match(r"\s*cpu (\d+): @ 0x([0-9a-f]+), (\d+) bytes", line)
        if m and top:
            secs.append((int(m.group(1)), int(m.group(2), 16), int(m.group(3)), page))
    if not secs:
        sys.exit("feed-recording: %s: no CPU data in hgtrace dump's output" % path)
    return secs


def page_times(page):
    """(first, last): the times of a ring-buffer page's first and last events, walked as
    the kernel lays them out (a 64-bit kernel's page: u64 time stamp, u64 commit; each event
    a u32 of type_len:5 and time_delta:27)."""
    ts, commit = struct.unpack_from("<QQ", page)
    end = 16 + (commit & ((1 << 30) - 1))
    first = last = ts
    at, seen = 16, False
    while at + 4 <= min(end, len(page)):
        (h,) = struct.unpack_from("<I", page, at)
        kind, delta = h & 31, h >> 5
        if kind == 29:  # padding: array[0] bytes after the header (0: the page's end)
            (n,) = struct.unpack_from("<I", page, at + 4)
            at += 4 + (n if n else end)
            continue
        if kind == 30:  # time extend
            (x,) = struct.unpack_from("<I", page, at + 4)
            ts += (x << 27) + delta
            at += 8
            continue
        if kind == 31:  # absolute time stamp, the page's top bits kept
            (x,) = struct.unpack_from("<I", page, at + 4)
            ts = (ts & ~((1 << 59) - 1)) | (x << 27) | delta
            at += 8
            continue
        ts += delta
        if kind == 0:
            (n,) = struct.unpack_from("<I", page, at + 4)
            at += 4 + ((n + 3) & ~3)
        else:
            at += 4 + kind * 4
        if not seen:
            first, seen = ts, True
        last = ts
    return first, last


def main():
    hgtrace, steps, pause = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    hold_cpu, hold = -1, 0
    if os.environ.get("FEED_HOLD"):
        hold_cpu, hold = (int(x) for x in os.environ["FEED_HOLD"].split(":"))
    late_src, late = None, 0
    if os.environ.get("FEED_LATE"):
        late_src, late = os.environ["FEED_LATE"].rsplit(":", 1)
        late = int(late)
    feeds, made = [], {}
    for arg in sys.argv[4:]:
        src, out = arg.split(":", 1)
        d = out + ".recording"
        with open(src, "rb") as f:
            data = f.read()
        made[src] = (d, data, False)
        for cpu, off, size, page in cpu_sections(hgtrace, src):
            pages = [data[off + k:off + k + page] for k in range(0, size - size % page, page)]
            spans = [page_times(p) for p in pages]
            feeds.append({"pages": pages, "spans": spans, "dst": None, "at": 0, "file": src,
                          "cpu": cpu, "hold": hold if cpu == hold_cpu else 0,
                          "from": late if src == late_src else 0})

    def make(src):  # the recording's directory, its head and its (empty) CPU files
        d, data, done = made[src]
        if done:
            return
        os.mkdir(d)
        with open(os.path.join(d, "head.dat"), "wb") as f:
            f.write(data)
        for fd in feeds:
            if fd["file"] == src:
                fd["dst"] = open(os.path.join(d, "cpu%d" % fd["cpu"]), "wb")
        made[src] = (d, data, True)

    for src in made:
        if src != late_src:
            make(src)
    # each file's span of event times (its CPUs advance together, as one recorder's do)
    for src in {fd["file"] for fd in feeds}:
        mine = [fd for fd in feeds if fd["file"] == src]
        lo = min((s[0] for fd in mine for s in fd["spans"]), default=0)
        hi = max((s[1] for fd in mine for s in fd["spans"]), default=0)
        for fd in mine:
            fd["lo"], fd["hi"] = lo, hi
    # how long each file's events wait for their pages, in its own time units: the most a
    # recorder reading it may be said to lag (its flush interval)
    for src in sorted({fd["file"] for fd in feeds}):
        lag = 0
        for fd in (fd for fd in feeds if fd["file"] == src):
            k = 0
            for i in range(1, steps + 1):
                limit = fd["lo"] + (fd["hi"] - fd["lo"]) * (i - fd["hold"]) // steps
                now = fd["lo"] + (fd["hi"] - fd["lo"]) * i // steps
                while k < len(fd["spans"]) and (fd["spans"][k][1] <= limit or i == steps):
                    lag = max(lag, now - fd["spans"][k][0])
                    k += 1
        print("lag %s %d" % (src, lag))
    print("ready", flush=True)
    go = os.environ.get("FEED_GO")
    while go and not os.path.exists(go):
        time.sleep(0.01)
    total = nbytes = 0
    for i in range(1, steps + 1):
        for fd in feeds:
            if i < fd["from"]:
                continue
            make(fd["file"])
            # a page is written once its last event has come, as a recorder writes it
            limit = fd["lo"] + (fd["hi"] - fd["lo"]) * (i - fd["hold"]) // steps
            while fd["at"] < len(fd["pages"]) and (fd["spans"][fd["at"]][1] <= limit or i == steps):
                fd["dst"].write(fd["pages"][fd["at"]])
                nbytes += len(fd["pages"][fd["at"]])
                fd["at"] += 1
                total += 1
            fd["dst"].flush()
        print("step %d %.6f %d" % (i, time.monotonic(), nbytes), flush=True)
        time.sleep(pause)
    for fd in feeds:
        make(fd["file"])
        fd["dst"].close()
    print("fed %d pages" % total)


if __name__ == "__main__":
    main()
