#!/usr/bin/env python3
"""Check `hgtrace why --json` against the test's own reading of trace-cmd's report.

Usage: check-why.py WHY.json TRACE_CMD_REPORT.txt HOST_FILE GUEST_FILE PIDS [--worst]
                    [--injected INJECTED.txt]
TRACE_CMD_REPORT.txt is `trace-cmd report -t -i HOST -i GUEST` (host time, ns; a file column).
PIDS: the vCPU threads, guest CPU 0 first ("5001 5002 ...").
--injected-only: check the injected causes alone (trace-cmd maps a scaled guest otherwise).
--worst: WHY.json is `why --top N`: its N must be the N longest delays.
--injected INJECTED.txt EXPECT: the "injected: ..." lines of `hgtrace simulate --inject`
and, in their order, each cause's duration in ns from simulate's command line ("500000
300000 ..."); each must be found with its cause on top, that long within 1 us, and the
verdict "guest" only for the guest's own cause.

From trace-cmd's lines this script derives, on its own, every guest delay (wakeup: first
sched_waking/sched_wakeup of a task not running -> its sched_switch in; timer:
hrtimer_expire_entry now - the expires of its hrtimer_start) and what each vCPU thread did
over time (guest mode from kvm_entry to kvm_exit, the exit's reason until the next entry,
preempted (switched out in state R, or woken on the host) by the tasks that ran on its CPU
(from the switches, and from any record of another task than the one switched in; such a
task on a CPU thought idle takes over the wait of a thread waiting there since it began),
halted (asleep after a HLT exit) or blocked, host IRQs).
Every delay why reports must be one of them, with the same parts to the nanosecond, and
why's worst N must be the N longest. Prints one line per check; exits 1 on the first failure.
"""
import bisect, json, re, sys
import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tcreport import fail, ns  # noqa: E402
from collections import defaultdict

why = json.load(open(sys.argv[1]))
host_file, guest_file = sys.argv[3], sys.argv[4]
pids = [int(p) for p in sys.argv[5].split()]
thread_cpu = {p: i for i, p in enumerate(pids)}
# the sched_switch plugin: "PREV_COMM:PID [PRIO] STATE ==> NEXT_COMM:PID [PRIO]"
switch = re.compile(r"^.*:(\d+) \[-?\d+\] (\S+) ==> (.*):(\d+) \[-?\d+\]")
line = re.compile(r"^\s*(\S+): \s*(.*?)-(\d+)\s+\[(\d+)\]\s*(\d+(?:\.\d+)?): ([^:\s]+):\s*(.*)$")

# ---- the host: segments per vCPU thread ----
seg = {p: [] for p in pids}  # pid -> [(ts, key)], key = (state, what, id)
st = {p: {"waiting": False, "waking": False, "wcpu": -1, "irq": 0, "saved": None, "exit": None}
      for p in pids}
cpu_by = {}  # host cpu -> preempted-by key of its current task
cpu_cur = {}  # host cpu -> the pid of that task
host_end = 0
GUEST = ("guest", "guest running", -1)
BLOCKED = ("blocked", "blocked in the host (sleeping)", -1)
HOST = ("host", "in the host", -1)
UNKNOWN = ("unknown", "not in the host trace", -1)
HALTED = ("halted", "halted (the guest's HLT: idle)", -1)


def put(p, key, ts):
    s = seg[p]
    if s and s[-1][1] == key:
        return
    if s and s[-1][0] == ts:
        s[-1] = (ts, key)
        return
    s.append((ts, key))


def runs(cpu, p, comm, ts, late):
    """Host CPU cpu runs task p from ts: at a switch in, or (late) at a record of a task
    other than the one the CPU was known to run (a kernel may leave switches out of its
    trace). A task seen so on a CPU thought idle came in unseen: a thread waiting there
    waited for it since its wait began, not for idle."""
    by = ("preempted", comm if p else "idle", p)
    if late and p and cpu_cur.get(cpu) == 0:
        for q in pids:
            if st[q]["waiting"] and st[q]["wcpu"] == cpu and q != p and seg[q] and \
                    seg[q][-1][1] == cpu_by[cpu]:
                seg[q][-1] = (seg[q][-1][0], by)
    cpu_by[cpu], cpu_cur[cpu] = by, p
    for q in pids:
        if st[q]["waiting"] and st[q]["wcpu"] == cpu and q != p:
            put(q, by, ts)
    if p in seg:
        t = st[p]
        t["waiting"] = False
        t["irq"] = 0
        put(p, (t["exit"] or HOST) if kvm else GUEST, ts)


# under TCG (no kvm events) a vCPU thread runs the guest whenever it runs
text = open(sys.argv[2], errors="replace").read()
kvm = " kvm_entry: " in text
# sched_wakeup where the guest has it (as why), else sched_waking
wake_event = "sched_wakeup" if re.search(r"^\s*%s: .* sched_wakeup: " % re.escape(guest_file), text, re.M) else "sched_waking"
del text
delays = []  # (kind, cpu, from, to, (pid, comm))
pending, running, timers = {}, {}, {}
n_host = n_guest = 0
for l in open(sys.argv[2], errors="replace"):
    m = line.match(l)
    if not m:
        continue
    f, comm, pid, cpu, ts, ev, rest = m.groups()
    pid, cpu, ts = int(pid), int(cpu), ns(ts)
    if f.rstrip(":") == host_file:
        n_host += 1
        host_end = max(host_end, ts)
        if cpu_cur.get(cpu) != pid:
            runs(cpu, pid, comm, ts, True)
        if ev == "kvm_entry" and pid in seg:
            st[pid]["irq"] = 0
            put(pid, GUEST, ts)
        elif ev == "kvm_exit" and pid in seg:
            r = re.match(r"reason (\S+)", rest)
            key = ("exit", "exit " + (r.group(1) if r else "?"), None)
            st[pid]["exit"] = key
            st[pid]["irq"] = 0
            put(pid, key, ts)
        elif ev == "sched_switch":
            s = switch.match(rest)
            prev, state, ncomm, nxt = int(s.group(1)), s.group(2), s.group(3), int(s.group(4))
            if prev in seg:
                t = st[prev]
                t["irq"] = 0
                if not t["waiting"] and state.startswith("R"):
                    t["waiting"], t["waking"], t["wcpu"] = True, False, cpu
                if not t["waiting"]:
                    # asleep after a HLT exit (under TCG: any sleep) is the guest idling
                    idle = not kvm or (t["exit"] and t["exit"][1] == "exit HLT")
                    put(prev, HALTED if idle else BLOCKED, ts)
            runs(cpu, nxt, ncomm, ts, False)
        elif ev in ("sched_waking", "sched_wakeup"):
            # a vCPU thread woken: runnable, waiting for its target CPU's current task. The
            # kernel's sched_waking comes before it picks the CPU (target_cpu: the last one
            # the task ran on), sched_wakeup after (the CPU it was put on): that one moves
            # the wait
            w = re.match(r"comm=.* pid=(\d+) prio=-?\d+ target_cpu=(\d+)|.*:(\d+) \[-?\d+\].* CPU:(\d+)", rest)
            p, target = (int(w.group(1)), int(w.group(2))) if w.group(1) else (int(w.group(3)), int(w.group(4)))
            if p not in seg:
                continue
            t = st[p]
            if not t["waiting"] or (t["waking"] and ev == "sched_wakeup"):
                # (a wait begun by a sched_waking: its target was the last CPU)
                t["waiting"], t["wcpu"], t["waking"] = True, target, ev == "sched_waking"
                put(p, cpu_by.get(target, UNKNOWN), ts)
            elif ev == "sched_wakeup":
                t["waking"] = False
        elif ev in ("irq_handler_entry", "irq_handler_exit", "softirq_entry", "softirq_exit") and pid in seg:
            t = st[pid]
            if t["waiting"] or not seg[pid]:
                continue
            if ev.endswith("_entry"):
                if ev == "irq_handler_entry":
                    r = re.match(r"irq=(\d+) name=(.*)$", rest)
                    key = ("irq", "irq %s %s" % (r.group(1), r.group(2).strip()), int(r.group(1)))
                else:  # "vec=3 [action=NET_RX]"
                    r = re.match(r"vec=(\d+) \[action=(\w+)\]", rest)
                    key = ("irq", "softirq " + r.group(2), 1000 + int(r.group(1)))
                if t["irq"] == 0:
                    t["saved"] = seg[pid][-1][1]
                t["irq"] += 1
                put(pid, key, ts)
            elif t["irq"]:
                t["irq"] -= 1
                if t["irq"] == 0:
                    put(pid, t["saved"], ts)
        continue
    if f.rstrip(":") != guest_file:
        continue
    n_guest += 1
    if ev == wake_event:
        # "comm=C pid=P prio=..." or the sched_wakeup plugin's "C:P [PRIO] ..."
        w = re.match(r"comm=.* pid=(\d+) prio=|.*:(\d+) \[-?\d+\]", rest)
        p = int(w.group(1) or w.group(2))
        if p and p not in running.values() and p not in pending:
            pending[p] = ts
    elif ev == "sched_switch":
        s = switch.match(rest)
        prev, nxt = int(s.group(1)), int(s.group(4))
        running[cpu] = nxt
        pending.pop(prev, None)
        if nxt in pending:
            delays.append(("wakeup", cpu, pending.pop(nxt), ts, (nxt, s.group(3))))
    elif ev == "hrtimer_start":
        timers[re.search(r"hrtimer=(\S+)", rest).group(1)] = int(re.search(r"expires=(\d+)", rest).group(1))
    elif ev == "hrtimer_expire_entry":
        h = re.search(r"hrtimer=(\S+)", rest).group(1)
        if h in timers:
            late = int(re.search(r"now=(\d+)", rest).group(1)) - timers.pop(h)
            if late > 0:
                delays.append(("timer", cpu, ts - late, ts, (pid, comm)))
if n_host < 1000 or n_guest < 1000:
    fail("trace-cmd's report has only %d host and %d guest events" % (n_host, n_guest))
if not delays:
    fail("no delay in trace-cmd's report")


starts = {p: [t for t, _ in s] for p, s in seg.items()}


def explain(cpu, a, b):
    s = seg[pids[cpu]]
    acc = defaultdict(int)
    i = bisect.bisect_right(starts[pids[cpu]], a) - 1
    if i < 0:
        e = min(s[0][0], b) if s and s[0][0] < b else b
        acc[UNKNOWN] += e - a
        a, i = e, 0
    for j in range(i, len(s)):
        if a >= b:
            break
        e = min(s[j + 1][0] if j + 1 < len(s) else host_end, b)
        if e > a:
            acc[s[j][1]] += e - a
            a = e
    if a < b:
        acc[UNKNOWN] += b - a
    return acc


def key_of(part):
    if part["state"] == "exit":
        return ("exit", part["what"], None)
    return (part["state"], part["what"], part["id"])


mine = {(k, c, a, b): p for k, c, a, b, p in delays}
got = why["delays"]
if not got:
    fail("why reported no delay")
checked = 0
# --injected-only: trace-cmd maps the guest's times otherwise (a scaled TSC)
for d in ([] if "--injected-only" in sys.argv else got):
    k = (d["kind"], d["cpu"], d["from_ns"], d["to_ns"])
    if k not in mine:
        fail("why's %s delay on CPU %d %d -> %d is not one the report shows" % k)
    if (d["pid"], d["comm"]) != mine[k]:
        fail("delay %s: task %s-%d, the report has %s-%d" % (k, d["comm"], d["pid"], mine[k][1], mine[k][0]))
    if d["vcpu_thread"] != pids[d["cpu"]]:
        fail("CPU %d: vCPU thread %d, want %d" % (d["cpu"], d["vcpu_thread"], pids[d["cpu"]]))
    want = explain(d["cpu"], d["from_ns"], d["to_ns"])
    have = {key_of(p): p["ns"] for p in d["parts"]}
    if have != dict(want):
        fail("delay %s: parts %s, the report gives %s" % (k, sorted(have.items()), sorted(want.items())))
    checked += 1
if checked:
    print("ok %d delays: each one the report shows, its task and parts equal to the report's to the ns"
          % checked)
if "--worst" in sys.argv:
    n = len(got)
    longest = sorted((b - a for _, _, a, b, _ in delays), reverse=True)[:n]
    if sorted((d["delay_ns"] for d in got), reverse=True) != longest:
        fail("why's worst %d are not the %d longest of the report's %d" % (n, n, len(delays)))
    print("ok why's worst %d are the %d longest of the %d delays in the report" % (n, n, len(delays)))
kinds = {"wakeup": 0, "timer": 0}
for kd, *_ in delays:
    kinds[kd] += 1
if "--injected-only" in sys.argv:
    pass
elif (why["found"]["wakeup"], why["found"]["timer"]) != (kinds["wakeup"], kinds["timer"]):
    fail("found %s, the report has %s" % (why["found"], kinds))
else:
    print("ok found %d wakeups and %d timer expiries, as the report" % (kinds["wakeup"], kinds["timer"]))
if "--injected" in sys.argv:
    n = 0
    at = sys.argv.index("--injected")
    expect = [int(x) for x in sys.argv[at + 2].split()]
    lines = open(sys.argv[at + 1]).read().splitlines()
    if len(lines) != len(expect):
        fail("%d causes injected, %d on the command line" % (len(lines), len(expect)))
    for l, exp in zip(lines, expect):
        f = dict(x.split("=") for x in l.split()[2:])
        cause = l.split()[1]
        m = [d for d in got if d["kind"] == f["delay"] and d["cpu"] == int(f["guest_cpu"])
             and abs(d["from_ns"] - int(f["from_ns"])) <= 1000
             and abs(d["to_ns"] - int(f["to_ns"])) <= 1000]
        if len(m) != 1:
            fail("injected %s: %d delays of why match %s" % (cause, len(m), l.strip()))
        top = m[0]["parts"][0]
        want = {"preempt": ("preempted", "id", int(f.get("host_pid", -2))),
                "irqs": ("irq", "id", int(f.get("irq", -2))),
                "softirqs": ("irq", "id", 1000 + int(f.get("softirq", -2000))),
                "woken": ("preempted", "id", int(f.get("host_pid", -2))),
                "exits": ("exit", None, None), "guest": ("guest", None, None)}[cause]
        if top["state"] != want[0] or (want[1] and top[want[1]] != want[2]):
            fail("injected %s: why's top part is %s" % (cause, top))
        if abs(top["ns"] - exp) > 1000 or abs(int(f["cause_ns"]) - exp) > 1000:
            fail("injected %s: top part %d ns, simulate says %s, its command line %d" % (
                cause, top["ns"], f["cause_ns"], exp))
        verdict = "guest" if cause == "guest" else "host"
        if m[0]["verdict"] != verdict:
            fail("injected %s: verdict %s" % (cause, m[0]["verdict"]))
        print("ok injected %s on CPU %s: top cause %s %s, %d ns (injected %d), verdict %s" % (
            cause, f["guest_cpu"], top["state"], top["what"], top["ns"], exp, verdict))
        n += 1
    if n == 0:
        fail("no injected cause to check")
