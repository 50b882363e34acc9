#!/usr/bin/env python3
"""A stand-in VMM for sessions on this machine: its command line names the guest
(-name NAME,debug-threads=on) and its FIFO transport (path=DIR/agent-ctl-path), and N of its
threads are named "CPU i/KVM", as QEMU names vCPU threads. Prints "ready TID0 TID1 ..." once
they are, then sleeps until killed.

Usage: fake-vmm.py N QEMU-LIKE-ARGS... (the arguments are only there to be read)
"""
import ctypes
import sys
import threading
import time

libc = ctypes.CDLL(None)
n = int(sys.argv[1])
tids = [None] * n
done = threading.Event()


def vcpu(i):
    libc.prctl(15, ("CPU %d/KVM" % i).encode(), 0, 0, 0)  # PR_SET_NAME
    tids[i] = threading.get_native_id()
    done.wait()


for i in range(n):
    threading.Thread(target=vcpu, args=(i,), daemon=True).start()
while None in tids:
    time.sleep(0.01)
print("ready", *tids, flush=True)
done.wait()
