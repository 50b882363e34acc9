"""What a flight recorder's log says, for the flight tests' checks (imported: sys.path)."""
import json
import re


def ns(s):
    """A time as the log prints it (seconds, 9 decimals) in ns."""
    return int(s.replace(".", ""))


def wakeups_taken(log, trig):
    """(guest CPU, from, to) of each wakeup the log took under the trigger TRIG, saved or
    not ("not saved (...)")."""
    return [(int(c), ns(a), ns(b)) for c, a, b in re.findall(
        r"(?:trigger \d+|not saved \([^)]*\)): " + re.escape(trig) +
        r": \S+ on g CPU (\d+) late: [0-9.]+ ms, ([0-9.]+) -> ([0-9.]+);", log)]


def wakeups_why(path):
    """(guest CPU, from, to) of each wakeup delay in why --json's output at PATH, sorted."""
    return sorted((d["cpu"], d["from_ns"], d["to_ns"]) for d in json.load(open(path))["delays"]
                  if d["kind"] == "wakeup")


def span_said(log):
    """How many times the log said time was in no search's span, and its summary's seconds
    unsearched (None: no summary)."""
    u = re.search(r"([0-9.]+) s unsearched", log)
    return log.count("in no search's span"), float(u.group(1)) if u else None
