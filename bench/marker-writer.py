#!/usr/bin/env python3
"""The flight soaks' writer (bench/flight-soak.sh, flight-soak-listen.sh): numbered
1000-byte trace_marker writes into FILE as fast as it can for SECONDS, SIGUSR1 to PID every
20 s; prints how many it wrote.
Usage: marker-writer.py FILE SECONDS PID"""
import os, signal, sys, time

fd = os.open(sys.argv[1], os.O_WRONLY)
end = time.monotonic() + float(sys.argv[2])
pad = b"x" * 980
n = 0
usr1 = time.monotonic() + 20
while time.monotonic() < end:
    for _ in range(1000):
        n += 1
        os.write(fd, b"m %d %s\n" % (n, pad))
    if time.monotonic() > usr1:
        os.kill(int(sys.argv[3]), signal.SIGUSR1)
        usr1 += 20
print(n)
