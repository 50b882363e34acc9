#!/usr/bin/env python3
"""hgtpair.py TRACE_MARKER: the pair the flight tests' pair triggers catch. A task named
hgtpair (the comm its sched_process_exit carries, which the recordings keep) writes
"hgt-begin" into TRACE_MARKER, sleeps 60 ms (so the pair is no shorter, whatever the
machine) and exits."""
import ctypes
import os
import sys
import time

ctypes.CDLL(None).prctl(15, b"hgtpair")  # PR_SET_NAME
os.write(os.open(sys.argv[1], os.O_WRONLY), b"hgt-begin\n")
time.sleep(0.06)
