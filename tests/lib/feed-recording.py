#!/usr/bin/env python3
"""Feed finished trace.dat files to a flight recorder as if they were being recorded.

feed-recording.py HGTRACE STEPS PAUSE FILE:OUTPUT...

For each FILE (version 7 or 6, uncompressed), OUTPUT.recording/ is made as hgtrace record
makes it: head.dat (FILE itself: its top buffer's pages are never read from it) and one
file of pages per CPU. The pages are then appended in STEPS steps PAUSE seconds apart:
at step i, each CPU file gets its pages whose page time is at most i/STEPS of the way
through that file's times (a host and its guest cover the same session, so they advance
together). Prints "ready" once every file exists, "step I T BYTES" after each step (T:
CLOCK_MONOTONIC in seconds, BYTES: fed so far) and "fed N pages" at the end; the
directories are left for the caller.

FEED_HOLD=CPU:K in the environment holds CPU's pages back by K steps (all of them come at
the last step): a recorder whose reader of that CPU writes its pages late, as a guest
agent's partial pages come up to its flush interval after the events in them.
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


def main():
    hgtrace, steps, pause = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    hold_cpu, hold = -1, 0
    if os.environ.get("FEED_HOLD"):
        hold_cpu, hold = (int(x) for x in os.environ["FEED_HOLD"].split(":"))
    feeds = []
    for arg in sys.argv[4:]:
        src, out = arg.split(":", 1)
        d = out + ".recording"
        os.mkdir(d)
        with open(src, "rb") as f:
            data = f.read()
        with open(os.path.join(d, "head.dat"), "wb") as f:
            f.write(data)
        for cpu, off, size, page in cpu_sections(hgtrace, src):
            pages = [data[off + k:off + k + page] for k in range(0, size - size % page, page)]
            ts = [struct.unpack_from("<Q", p)[0] for p in pages]
            dst = open(os.path.join(d, "cpu%d" % cpu), "wb")
            feeds.append({"pages": pages, "ts": ts, "dst": dst, "at": 0,
                          "hold": hold if cpu == hold_cpu else 0})
    # each CPU's span of page times
    for fd in feeds:
        fd["lo"] = min(fd["ts"]) if fd["ts"] else 0
        fd["hi"] = max(fd["ts"]) if fd["ts"] else 0
    print("ready", flush=True)
    total = nbytes = 0
    for i in range(1, steps + 1):
        for fd in feeds:
            limit = fd["lo"] + (fd["hi"] - fd["lo"]) * (i - fd["hold"]) // steps
            while fd["at"] < len(fd["pages"]) and (fd["ts"][fd["at"]] <= limit or i == steps):
                fd["dst"].write(fd["pages"][fd["at"]])
                nbytes += len(fd["pages"][fd["at"]])
                fd["at"] += 1
                total += 1
            fd["dst"].flush()
        print("step %d %.6f %d" % (i, time.monotonic(), nbytes), flush=True)
        time.sleep(pause)
    for fd in feeds:
        fd["dst"].close()
    print("fed %d pages" % total)


main()
