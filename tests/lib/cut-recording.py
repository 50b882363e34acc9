#!/usr/bin/env python3
"""Make the recording directory a kill leaves, from a finished trace.dat.

cut-recording.py HGTRACE FILE OUTPUT CPU FRACTION

FILE (version 7 or 6, uncompressed) becomes OUTPUT.recording/ as hgtrace record makes it:
head.dat (FILE itself: its top buffer's pages are never read from it), one file of pages
per CPU, and a state file naming a process that is not running. CPU's pages stop after
FRACTION of them (at least one), as a kill finds a CPU whose last pages were not written
yet; the other CPUs keep all theirs. `hgtrace restore OUTPUT` then writes OUTPUT. Prints
"cpuN:PAGES" per CPU.
"""
import os
import re
import subprocess
import sys

hg, src, out, cut_cpu, frac = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
d = out + ".recording"
os.mkdir(d)
data = open(src, "rb").read()
with open(os.path.join(d, "head.dat"), "wb") as f:
    f.write(data)
dump = subprocess.run([hg, "dump", src], capture_output=True, text=True, check=True).stdout
top, page, kept = False, 4096, {}
for line in dump.splitlines():
    m = re.match(r'\s*buffer "(.*)":.*page size (\d+)', line)
    if m:
        top, page = m.group(1) == "", int(m.group(2))
        continue
    m = re.match(r"\s*cpu (\d+): @ 0x([0-9a-f]+), (\d+) bytes", line)
    if m and top:
        cpu, off, size = int(m.group(1)), int(m.group(2), 16), int(m.group(3))
        pages = [data[off + k:off + k + page] for k in range(0, size - size % page, page)]
        if cpu == cut_cpu:
            pages = pages[:max(1, int(len(pages) * frac))]
        kept[cpu] = len(pages)
        with open(os.path.join(d, "cpu%d" % cpu), "wb") as f:
            f.write(b"".join(pages))
# pid 4194305 is past PID_MAX_LIMIT (4194304): never a running process
with open(os.path.join(d, "state"), "w") as f:
    f.write("hgtrace recording\npid 4194305\nstart 1\ninstance \n")
print(" ".join("cpu%d:%d" % kv for kv in sorted(kept.items())))
