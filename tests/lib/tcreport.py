"""Helpers of the checkers that read trace-cmd's report (tests/sink/check-*.py)."""
import sys


def fail(msg):
    """One FAIL line, exit 1."""
    print("FAIL " + msg)
    sys.exit(1)


def ns(text):
    """A timestamp as text ("sec.nnnnnnnnn", "usec.nnn" or raw) to an integer, exactly."""
    a, _, b = text.partition(".")
    return int(a + b) if b else int(a)


def report_events(path, default, text=False):
    """The events of `trace-cmd report -t [-i F]...` at @path: (column, cpu, ns, event) in
    order, column the file (or instance) column, @default where there is none (one input, or
    the blank one of an input's top buffer when it has instances). trace-cmd prints the event
    after a tagged "EVENTS DROPPED" line without its tag: it gets the tag back. With @text,
    (column, cpu, ns, event, comm-pid, info): the task and the event's text as printed,
    without the blanks around them."""
    import re
    line = re.compile(r"^\s*(?:(\S+): )?\s*(.*?-\d+)\s+\[(\d+)\]\s*(\d+(?:\.\d+)?): ([^:\s]+):(.*)$")
    dropped = re.compile(r"^(\S+): CPU:\d+ \[(?:\d+ )?EVENTS DROPPED\]")
    out, after_drop = [], None
    for l in open(path, errors="replace"):
        d = dropped.match(l)
        if d:
            after_drop = d.group(1)
            continue
        m = line.match(l.rstrip("\n"))
        if m:
            key = (m.group(1) or after_drop or default, int(m.group(3)), ns(m.group(4)), m.group(5))
            out.append(key + (m.group(2).strip(), m.group(6).strip()) if text else key)
            after_drop = None
    return out
