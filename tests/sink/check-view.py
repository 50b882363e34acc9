#!/usr/bin/env python3
"""Check the state an `hgtrace view` page reports in a real browser against trace-cmd.

Usage: check-view.py DOM.html TRACE_CMD_REPORT.txt FILE... [--zoom A,B] [--expect-label TRACK=LABEL]...
                     [--search EVENT] [--click TRACK,NS,LINE]
DOM.html: `chromium --headless --dump-dom PAGE#zoom=A,B&search=EVENT` (the page writes its own
state, JSON, into <pre id="state">). TRACE_CMD_REPORT.txt: `trace-cmd report -t -i F1 [-i F2]`
(a file column when several files; -t: ns). FILE...: the trace.dat files, in order.

Checked: per file and CPU an events track holding exactly as many events as trace-cmd
prints for it, and a tasks track with one interval per sched_switch-delimited stretch
(derived here from the same lines); after zooming to [A, B] (absolute ns), each events
track shows exactly the events trace-cmd prints in [A, B] for its file and CPU, and the
labels asked for are among those visible on their track ("GROUP/TRACK=LABEL"); a search for
an event name counts every one of its events; a click (#click=TRACK,NS) on an event shows
the line trace-cmd prints for it (blanks aside); the key of exit colours lists exactly the
reasons trace-cmd prints for kvm_exit. Prints one line per check; exits 1 on the
first failed one.
"""
import html, json, re, sys
import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tcreport import fail, ns, report_events  # noqa: E402
from collections import Counter, defaultdict

dom = open(sys.argv[1]).read()
m = re.search(r'<pre id="state">(.*?)</pre>', dom, re.S)
if not m or not m.group(1).strip():
    fail("the page wrote no state (did its script run?)")
st = json.loads(html.unescape(m.group(1)))
args = sys.argv[3:]
files = [a for a in args[: next((i for i, a in enumerate(args) if a.startswith("--")), len(args))]]
opt = lambda k: [args[i + 1] for i, a in enumerate(args) if a == k]
names = [f.rsplit("/", 1)[-1] for f in files]
events = defaultdict(list)  # (group, cpu) -> [(ts, name)]
for f, cpu, ts, name in report_events(sys.argv[2], names[0]):
    # an instance's column is its name: the page's group is "FILE: instance NAME"
    g = f if f in names else "%s: instance %s" % (names[0], f)
    events[(g, cpu)].append((ts, name))
total = sum(len(v) for v in events.values())
if total < 100:
    fail("trace-cmd's report has only %d events" % total)
tracks = {(t["group"], t["name"]): (i, t) for i, t in enumerate(st["tracks"])}
# events and tasks tracks per file and CPU
n_ev = n_iv = 0
for (f, cpu), evs in sorted(events.items()):
    i, t = tracks.get((f, "CPU %d" % cpu), (None, None))
    if t is None or t["n"] != len(evs):
        fail("%s CPU %d: the page has %s events, trace-cmd prints %d" % (f, cpu, t and t["n"], len(evs)))
    n_ev += len(evs)
    sw = [ts for ts, e in evs if e == "sched_switch"]
    want, since = 0, evs[0][0]
    for ts in sw:
        want += ts > since
        since = ts
    want += bool(sw) and evs[-1][0] > since
    _, tt = tracks.get((f, "CPU %d tasks" % cpu), (None, {"n": 0}))
    if tt["n"] != want:
        fail("%s CPU %d: %d task intervals on the page, %d sched_switch stretches" % (f, cpu, tt["n"], want))
    n_iv += want
if st["events"] != total:
    fail("the page counts %d events, trace-cmd prints %d" % (st["events"], total))
print("ok the page's tracks hold every one of %d events (per file and CPU as trace-cmd prints them) "
      "and %d task intervals" % (n_ev, n_iv))
if opt("--zoom"):
    a, b = (int(x) for x in opt("--zoom")[0].split(","))
    t0 = st["zoom"][0]
    shown = 0
    for (f, cpu), evs in sorted(events.items()):
        i, t = tracks[(f, "CPU %d" % cpu)]
        want = sum(1 for ts, _ in evs if a <= ts <= b)
        if st["visible"][i] != want:
            fail("zoomed to [%d, %d]: %s CPU %d shows %d events, trace-cmd has %d there" % (
                a, b, f, cpu, st["visible"][i], want))
        if st["drawn"][i] != "raw":
            fail("zoomed in, %s CPU %d is drawn from a summary, not its events" % (f, cpu))
        shown += want
    if shown == 0:
        fail("nothing in [%d, %d]" % (a, b))
    print("ok zoomed to [%d, %d]: every events track shows exactly trace-cmd's %d events there, drawn one by one"
          % (a, b, shown))
    for spec in opt("--expect-label"):
        key, label = spec.split("=", 1)
        g, name = key.rsplit("/", 1)
        if (g, name) not in tracks:
            fail("no track %s" % key)
        i, _ = tracks[(g, name)]
        if label not in st["visibleLabels"][i]:
            fail("zoomed: %s shows %s, not %s" % (key, st["visibleLabels"][i], label))
        print("ok zoomed: %s shows %s" % (key, label))
for ev in opt("--search"):
    want = sum(1 for v in events.values() for _, e in v if e == ev)
    if st.get("search") != want or want == 0:
        fail("search %s: %s matches on the page, trace-cmd has %d" % (ev, st.get("search"), want))
    print("ok search %s: %d matches, every one of trace-cmd's" % (ev, want))
for spec in opt("--click"):
    # TRACK-INDEX,NS,WANT-LINE: the report line trace-cmd prints for that event
    k, t, want = spec.split(",", 2)
    norm = lambda x: " ".join(x.split())
    if norm(st.get("click", "")) != norm(want) or not want:
        fail("click on track %s at %s: the page shows %r, trace-cmd prints %r" % (k, t, st.get("click"), want))
    print("ok a click on an event shows trace-cmd's line for it: %s" % norm(want)[:100])
# the key of exit colours: one entry per exit reason trace-cmd prints for kvm_exit, no other
reasons = {m.group(1) for m in re.finditer(r"kvm_exit:\s+reason (\S+)", open(sys.argv[2], errors="replace").read())}
key = st.get("exitKey")
if key is None or sorted(key) != sorted("exit " + r for r in reasons):
    fail("the exit key lists %s, trace-cmd's kvm_exit reasons are %s" % (key, sorted(reasons)))
if reasons:
    print("ok the exit key lists each of the %d exit reasons trace-cmd prints (%s)" % (
        len(reasons), ", ".join(sorted(reasons))))
# the page painted before it finished loading (a script that failed never sets these)
fp, ld = st.get("firstPaintMs"), st.get("loadMs")
if not isinstance(fp, int) or not isinstance(ld, int) or not 0 <= fp <= ld:
    fail("first paint %r ms, loaded %r ms: not a paint within the load" % (fp, ld))
print("ok first paint after %d ms, within the load of %d ms (%d tracks, %d delays listed)" % (
    fp, ld, len(st["tracks"]), st["why"]))
