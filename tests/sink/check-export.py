#!/usr/bin/env python3
"""Check `hgtrace export` JSON against trace-cmd's report of the same files.

Usage: check-export.py OUT.json TRACE_CMD_REPORT.txt [--guest-mode] [--tcg PID=VCPU,...]
                       [--raw TRACE_CMD_RAW_REPORT.txt --formats DUMP.txt [--want-negative]
                        [--want-bytes]]
TRACE_CMD_REPORT.txt is `trace-cmd report -t -i F1 [-i F2 ...]` (file column when several);
the raw one the same with -R (each event's fields as name=value); DUMP.txt is `trace-cmd
dump --events` of each input, one after the other: the fields' sizes and signs, and the
print formats by which libtraceevent prints a raw field.
Prints one line per check; exits 1 on the first failed one.
"""
import json, re, sys
import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tcreport import fail, ns, report_events  # noqa: E402
from collections import Counter

data = json.load(open(sys.argv[1]), parse_float=str)
evs = data["traceEvents"]
procs = {e["pid"]: e["args"]["name"] for e in evs if e["ph"] == "M" and e["name"] == "process_name"}
got = Counter()
for e in evs:
    if e["ph"] == "i":
        got[(procs[e["pid"]], (e["tid"] - 1) // 3, ns(e["ts"]) , e["name"])] += 1
# trace-cmd: "[FILE: ]comm-pid [cpu] ts: event: ..."
want = Counter(report_events(sys.argv[2], procs[min(procs)]))
if sum(want.values()) < 100:
    fail("trace-cmd's report has only %d events" % sum(want.values()))
if got != want:
    extra, missing = got - want, want - got
    fail("instants differ from trace-cmd's events: %d extra (e.g. %s), %d missing (e.g. %s)" % (
        sum(extra.values()), list(extra)[:2], sum(missing.values()), list(missing)[:2]))
print("ok every one of %d events is an instant once, at trace-cmd's time, on its file and CPU"
      % sum(want.values()))
# and carries the task and the text trace-cmd prints for it
got = Counter()
for e in evs:
    if e["ph"] == "i":
        a = e["args"]
        got[(procs[e["pid"]], (e["tid"] - 1) // 3, ns(e["ts"]), e["name"],
             "%s-%d" % (a["common_comm"], a["common_pid"]), a["common_info"].strip())] += 1
want = Counter(report_events(sys.argv[2], procs[min(procs)], text=True))
if got != want:
    extra, missing = got - want, want - got
    fail("instants' task or text differ from trace-cmd's lines: %d extra (e.g. %s), %d missing (e.g. %s)" % (
        sum(extra.values()), list(extra)[:1], sum(missing.values()), list(missing)[:1]))
print("ok every one of %d instants has trace-cmd's comm-pid and text (args common_comm, common_pid, common_info)"
      % sum(want.values()))
# and its fields: each of an instant's args but the common_ ones has the value trace-cmd's
# raw report (-R) prints for that field: numbers (decimal or hex there) equal, strings equal
layout = {}  # event name: {field: (offset, size, dynamic)}, from print_formats


def print_formats(path):
    """From `trace-cmd dump --events` output: for each event name, {field: (size, signed,
    conversion)}, the conversion (length and letter: "lx", "hd", ...) the print format gives
    the field when one of its arguments is the field alone (REC->name), else None. Where it
    is, libtraceevent's raw report (-R) prints the field with that conversion (an inode as
    "%lx": hex, no 0x; a mode as "0%o": octal); else signed fields in decimal and unsigned
    ones in decimal, or "0x" and hex for longs. Two inputs that disagree: a failure. Each
    field's offset and size go into layout."""
    import re
    conv = re.compile(r"%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d+))?(hh|h|ll|l|z|j|t|L)?([diouxXcspfeEgG%])")
    fmts, name, fields = {}, None, {}

    def split_args(a):
        out, depth, cur, q = [], 0, "", False
        for i, c in enumerate(a):
            if q:
                q = not (c == '"' and a[i - 1] != "\\")
            elif c == '"':
                q = True
            elif c in "({[":
                depth += 1
            elif c in ")}]":
                depth -= 1
            elif c == "," and depth == 0:
                out.append(cur.strip())
                cur = ""
                continue
            cur += c
        return out + [cur.strip()] if cur.strip() else out

    def finish(text):
        m = re.match(r'^"((?:[^"\\]|\\.)*)"\s*,?(.*)$', text)
        # the format as libtraceevent parses it: pieces of text (None) and conversions
        pieces, at = [], 0
        for c in conv.finditer(m.group(1) if m else ""):
            if c.group(5) == "%":
                continue
            if c.start() > at:
                pieces.append(None)
            pieces += [False] * ((c.group(2) == "*") + (c.group(3) == "*"))
            pieces.append((c.group(4) or "") + c.group(5))
            at = c.end()
        if m and at < len(m.group(1)):
            pieces.append(None)
        args = split_args(m.group(2)) if m else []
        convs = [p for p in pieces if p is not None]
        # libtraceevent's raw print walks the pieces with a cursor: each field, in the
        # format's order, takes the first conversion of it alone from the cursor on
        # (round to the cursor again), and the cursor goes to the piece after it; past
        # the last piece, the fields left print as libtraceevent's own
        ents, k = [], 0
        for p in pieces if len(args) == len(convs) else []:
            if p is None:
                ents.append((None, None))
                continue
            f = re.fullmatch(r"REC->(\w+)", args[k])
            k += 1
            if p:  # a "*" width is an argument of its conversion
                ents.append((f.group(1) if f else None, p))
        by, cur = {}, 0 if ents else None
        for n in fields:
            if n.startswith("common_") or cur is None:
                continue
            for k in list(range(cur, len(ents))) + list(range(cur)):
                if ents[k][0] == n:
                    by[n] = ents[k][1]
                    cur = k + 1 if k + 1 < len(ents) else None
                    break
        got = {n: (sz, sg, by.get(n)) for n, (sz, sg) in fields.items()}
        if name in fmts and fmts[name] != got:
            fail("%s: two inputs' formats of event %s differ" % (path, name))
        fmts[name] = got

    for l in open(path, errors="replace"):
        if l.startswith("name: "):
            name, fields = l[6:].strip(), {}
        f = re.match(r"^\s*field:(.*?)(\w+)(?:\[[^]]*\])?;\s*offset:(\d+);\s*size:(\d+);\s*signed:(\d);", l)
        if f and name:
            fields[f.group(2)] = (int(f.group(4)), f.group(5) == "1")
            layout.setdefault(name, {})[f.group(2)] = (int(f.group(3)), int(f.group(4)),
                                                       "_loc " in f.group(1))
        if l.startswith("print fmt: ") and name:
            finish(l[len("print fmt: "):].strip())
            name = None
    return fmts


if "--raw" in sys.argv:
    if "--formats" not in sys.argv:
        fail("--raw needs --formats")
    fmts = print_formats(sys.argv[sys.argv.index("--formats") + 1])
    if len(fmts) < 5:
        fail("only %d event formats in %s" % (len(fmts), sys.argv[sys.argv.index("--formats") + 1]))
    raw = {}
    for k in report_events(sys.argv[sys.argv.index("--raw") + 1], procs[min(procs)], text=True):
        raw.setdefault(k[:4], []).append(k[5])

    def raw_fields(text, names):
        """The value of each of @names in @text ("a=1 b=x y c=0x3"), by where each name=
        starts, in order."""
        at, pos = [], 0
        for n in names:
            j = 0 if pos == 0 and text.startswith(n + "=") else text.find(" " + n + "=", pos) + 1
            if j <= 0 and not (j == 0 and pos == 0 and text.startswith(n + "=")):
                return None
            at.append((n, j))
            pos = j + len(n) + 1
        return {n: text[j + len(n) + 1:(at[i + 1][1] - 1 if i + 1 < len(at) else len(text))].strip()
                for i, (n, j) in enumerate(at)}

    def number(r, c):
        """trace-cmd's text @r of a number printed with conversion @c (None: libtraceevent's
        own, decimal or 0x and hex)."""
        try:
            if c and c[-1] in "xX":
                return int(r, 16)
            if c and c[-1] == "o":
                return int(r, 8)
            if c and c[-1] in "diu":
                return int(r, 10)
            return int(r, 16) if r.lower().startswith(("0x", "-0x")) else int(r, 10)
        except ValueError:
            return None

    def array(j):
        """The bytes of "ARRAY[02, 00]"."""
        return bytes(int(x, 16) for x in j[6:-1].split(", ")) if j != "ARRAY[]" else b""

    def field_bytes(j, size):
        """The bytes of a field of @size from its JSON value @j, to its first NUL where it
        has one (None: not known, as a field the export leaves out)."""
        if isinstance(j, bool) or not isinstance(j, (int, str)):
            return None
        if isinstance(j, int):
            return (j % (1 << 8 * size)).to_bytes(size, "little")
        b = array(j) if j.startswith("ARRAY[") else j.encode("latin-1", "replace") + b"\0"
        return b[:size] if len(b) >= size else b if b"\0" in b else None

    def over_read(name, args, n):
        """The text libtraceevent prints with "%s" for string field @n of event @name when
        the field's bytes hold no NUL: it reads on past the field, to the first NUL of the
        record's next bytes (an over-read of libtraceevent's: fib_table_lookup's gw4 of
        "ff_h" prints as "ff_head_cache", gw6 holding "ead_cache\0"). Those bytes are
        rebuilt from the event's next fields, by the format's offsets; None where a byte on
        the way is not known (padding, a field the export leaves out, the record's end)."""
        fields = sorted(layout.get(name, {}).items(), key=lambda f: f[1][0])
        out, at = b"", None
        for f, (off, size, dyn) in fields:
            if f == n:
                at = off
            if at is None:
                continue
            b = field_bytes(args.get(f), size) if off == at and not dyn else None
            if b is None:
                return None
            if b"\0" in b:
                # as the report is read: UTF-8, a byte that is not as U+FFFD
                return (out + b.split(b"\0")[0]).decode("utf-8", "replace")
            out, at = out + b, at + size
        return None

    def same(j, r, fmt, over):
        """JSON value @j against trace-cmd's @r, the field being @fmt (size, signed,
        conversion): None when trace-cmd printed a number as a symbol (a function pointer's
        name), which is not compared, or read past a string field into bytes not known;
        "over" when it read past the field (@over() gives what it read) and that is @r.
        The JSON value is the field's, by its size and sign; trace-cmd's is by the
        conversion: the same number, or, where the conversion is of the other sign or
        narrower, the same bits as far as it reaches."""
        if isinstance(j, str) and not (j.startswith("ARRAY[") and r.startswith("ARRAY[")):
            # a fixed string field (a char or __u8 array) with no NUL in it: read past
            b = field_bytes(j, fmt[0]) if over else None
            if b is not None and b"\0" not in b:
                t = over()
                # (a newline read is in the text: the report's next line is its rest)
                return None if t is None else ("over" + "\n" * ("\n" in t)) if t.strip() == r else False
            if j.startswith("ARRAY["):
                # a byte array (__u8 x[N]): libtraceevent printed it as text, its bytes
                # being printable up to a NUL (and until one of that field's was not)
                return array(j).split(b"\0")[0].decode("latin-1").strip() == r
            return j.strip() == r
        if isinstance(j, str):
            return j.strip() == r
        size, signed, c = fmt
        v = number(r, c)
        if v is None:
            return None
        if j < 0 and not signed:
            return False
        if c is None:
            return v == j
        width = {"hh": 1, "h": 2, "l": 8, "ll": 8, "z": 8, "j": 8, "t": 8, "L": 8}.get(c[:-1], 4)
        if (c[-1] in "di") == signed and width >= size:
            return v == j
        return (v - j) % (1 << (8 * min(size, width))) == 0

    nf = nev = nsym = nneg = nbytes = nover = nover_nl = 0
    for e in evs:
        if e["ph"] != "i":
            continue
        names = [k for k in e["args"] if not k.startswith("common_")]
        if not names:
            continue
        key = (procs[e["pid"]], (e["tid"] - 1) // 3, ns(e["ts"]), e["name"])
        texts = raw.get(key)
        if not texts:
            fail("instant %s: not in trace-cmd's raw report" % (key,))
        fm = fmts.get(e["name"])
        if fm is None or any(n not in fm for n in names):
            fail("instant %s: fields %s, not all in the format of %s" % (key, names, e["name"]))
        vals = [raw_fields(t, names) for t in texts]
        a = e["args"]

        def cmp(v, n):
            fixed = not layout.get(e["name"], {}).get(n, (0, 0, True))[2]
            return same(a[n], v[n], fm[n], fixed and (lambda: over_read(e["name"], a, n)))
        ok = [v for v in vals if v and all(cmp(v, n) is not False for n in names)]
        if not ok:
            fail("instant %s: fields %s, trace-cmd's raw report: %s" % (
                key, {n: e["args"][n] for n in names}, texts))
        got = [cmp(ok[0], n) for n in names]
        sym = sum(g is None for g in got)
        nover += sum(g in ("over", "over\n") for g in got)
        nover_nl += sum(g == "over\n" for g in got)
        nneg += sum(isinstance(e["args"][n], int) and e["args"][n] < 0 and fm[n][0] < 8 for n in names)
        nbytes += sum(str(e["args"][n]).startswith("ARRAY[") for n in names)
        nsym += sym
        nf += len(names) - sym
        nev += 1
    if nev < 100:
        fail("only %d instants with fields" % nev)
    if "--want-negative" in sys.argv and not nneg:
        fail("no negative value of a signed field narrower than 64 bits among %d fields" % nf)
    if "--want-bytes" in sys.argv and not nbytes:
        fail("no byte array field (__u8 x[N], as tcp_probe's saddr) among %d fields" % nf)
    if "--want-bytes" in sys.argv and not nover:
        fail("no string field trace-cmd read past (fib_table_lookup's src of 65.66.67.68 "
             "before a dst of 69.70.71.72: \"ABCDEFGH\") among %d fields" % nf)
    if "--want-bytes" in sys.argv and not nover_nl:
        fail("no string field trace-cmd read past into a newline (icmp_send's saddr from "
             "port 37130: \"ABCDEFGH\\n...\") among %d read past" % nover)
    print("ok %d fields of %d instants have the values trace-cmd's raw report prints (%d "
          "negative in signed fields narrower than 64 bits; %d byte arrays; %d strings "
          "trace-cmd read past, as the next fields rebuild, %d of them into a newline; %d it "
          "prints as symbols not compared)" % (nf, nev, nneg, nbytes, nover, nover_nl, nsym))
# complete events: none overlaps another of its thread
threads = {}
for e in evs:
    if e["ph"] == "X":
        threads.setdefault((e["pid"], e["tid"]), []).append((ns(e["ts"]), ns(e["dur"])))
# and each lies within its file's span: from its first event to its last (a slice that
# ended before it began would stretch past the end)
span = {}
for e in evs:
    if e["ph"] == "i":
        t = ns(e["ts"])
        lo, hi = span.get(e["pid"], (t, t))
        span[e["pid"]] = (min(lo, t), max(hi, t))
for (pid, tid), v in threads.items():
    lo, hi = span.get(pid, (0, -1))
    for a, d in v:
        if a < lo or a + d > hi or d < 0:
            fail("thread %s: [%d, +%d] is not within its file's events, [%d, %d]" % ((pid, tid), a, d, lo, hi))
n = 0
for k, v in threads.items():
    v.sort()
    for (a, d), (b, _) in zip(v, v[1:]):
        if a + d > b:
            fail("thread %s: [%d, +%d] overlaps the next at %d" % (k, a, d, b))
    n += len(v)
if n == 0:
    fail("no complete events")
print("ok %d complete events on %d threads, none overlapping, each within its file's events" % (n, len(threads)))
# a slice that ends at an event names it: "exit" (guest mode, ended by a kvm_exit) and
# "switch" (a TCG vCPU thread's run, ended by a sched_switch) hold that event's info text,
# the common_info of its instant at the slice's end on the same file and CPU (thread
# CPU * 3 + 1 for the events, + 2 for tasks, + 3 for guest mode)
ends = {}
for e in evs:
    if e["ph"] == "i" and e["name"] in ("kvm_exit", "sched_switch"):
        key = (e["pid"], (e["tid"] - 1) // 3, ns(e["ts"]), e["name"])
        ends.setdefault(key, []).append(e["args"].get("common_info"))
named = 0
for e in evs:
    if e["ph"] != "X":
        continue
    for arg, ev in (("exit", "kvm_exit"), ("switch", "sched_switch")):
        if arg not in e.get("args", {}):
            continue
        key = (e["pid"], (e["tid"] - 1) // 3, ns(e["ts"]) + ns(e["dur"]), ev)
        if e["args"][arg] not in ends.get(key, []):
            fail("%s slice at %s on thread %s: %s %r, not the info of a %s ending it (%s)" % (
                e["name"], e["ts"], (e["pid"], e["tid"]), arg, e["args"][arg], ev, ends.get(key)))
        named += 1
if "--guest-mode" in sys.argv and not named:
    fail("no slice names the event that ended it")
print("ok %d slices name the event that ended them: its info text, as its instant's" % named)
if "--guest-mode" in sys.argv:
    gm = [e for e in evs if e["ph"] == "X" and e["name"].startswith("vCPU ")]
    exits = sum(c for k, c in want.items() if k[3] == "kvm_exit")
    if not gm or len(gm) > exits:
        fail("%d guest-mode intervals for %d kvm_exit events" % (len(gm), exits))
    print("ok %d guest-mode intervals (kvm_entry to kvm_exit) for %d kvm_exit events" % (len(gm), exits))
if "--tcg" in sys.argv:
    # A TCG host: guest mode is when a vCPU thread runs. The intervals, derived here from
    # trace-cmd's sched_switch lines of the host file: from a vCPU thread's switch-in to its
    # switch-out on that CPU (from the CPU's first event for a thread running when the
    # trace began); one still running at the end is left out (exported by another name).
    import re
    vmap = {int(p): int(i) for p, i in (kv.split("=") for kv in sys.argv[sys.argv.index("--tcg") + 1].split(","))}
    host = procs[min(procs)]
    first = {}
    for col, cpu, t, _ in report_events(sys.argv[2], host):
        if col == host:
            first.setdefault(cpu, t)
    sw = re.compile(r"^\s*(\S+): .*?\[(\d+)\]\s*(\d+(?:\.\d+)?): sched_switch:\s+.*:(\d+) \[-?\d+\] \S+ ==> .*:(\d+) \[-?\d+\]\s*$")
    running, switched, want_iv = {}, set(), Counter()
    for l in open(sys.argv[2], errors="replace"):
        m = sw.match(l)
        if not m or m.group(1) != host + ":" and m.group(1) != host:
            continue
        cpu, t, prev, nxt = int(m.group(2)), ns(m.group(3)), int(m.group(4)), int(m.group(5))
        if prev in vmap:
            pid, start = running.pop(cpu, (prev, None))
            if start is None and cpu not in switched:
                start = first[cpu]
            if pid == prev and start is not None and t > start:
                want_iv[(cpu, start, t, vmap[prev])] += 1
        running.pop(cpu, None)
        switched.add(cpu)
        if nxt in vmap:
            running[cpu] = (nxt, t)
    hp = min(procs)
    got_iv = Counter()
    for e in evs:
        if e["ph"] == "X" and e["pid"] == hp and e["tid"] % 3 == 0 and e["name"].startswith("vCPU "):
            a = ns(e["ts"])
            got_iv[((e["tid"] - 1) // 3, a, a + ns(e["dur"]), int(e["name"][5:]))] += 1
    if not want_iv:
        fail("trace-cmd's report shows no vCPU thread running")
    if got_iv != want_iv:
        extra, missing = got_iv - want_iv, want_iv - got_iv
        fail("guest mode differs from the vCPU threads' running intervals: %d extra (e.g. %s), %d missing (e.g. %s)" % (
            sum(extra.values()), sorted(extra)[:2], sum(missing.values()), sorted(missing)[:2]))
    print("ok TCG guest mode: %d intervals, each a vCPU thread's run in trace-cmd's sched_switch lines (%d vCPUs)"
          % (sum(want_iv.values()), len(set(k[3] for k in want_iv))))
