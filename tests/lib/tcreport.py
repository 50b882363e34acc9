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
