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
    without the blanks around them. An event's text may hold a newline (libtraceevent's "%s"
    of a string field with no NUL reads on into the next fields' bytes, whatever they are):
    a line that is not an event's, after an event's, is the rest of that event's text."""
    import re
    line = re.compile(r"^\s*(?:(\S+): )?\s*(.*?-\d+)\s+\[(\d+)\]\s*(\d+(?:\.\d+)?): ([^:\s]+):(.*)$")
    dropped = re.compile(r"^(?:(\S+): )?CPU:\d+ \[(?:\d+ )?EVENTS DROPPED\]")
    out, after_drop, last = [], None, None
    # only "\n" ends a line: a "\r" in an event's text is a byte of that text
    for l in open(path, errors="replace", newline="\n"):
        l = l[:-1] if l.endswith("\n") else l
        d = dropped.match(l)
        if d:
            after_drop, last = d.group(1), None
            continue
        m = line.match(l)
        if m:
            key = (m.group(1) or after_drop or default, int(m.group(3)), ns(m.group(4)), m.group(5))
            last = [key, m.group(2).strip(), m.group(6)]
            out.append(last)
            after_drop = None
        elif last is not None:
            last[2] += "\n" + l
    return [k + (c, t.strip()) if text else k for k, c, t in out]
