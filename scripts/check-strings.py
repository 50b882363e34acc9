#!/usr/bin/env python3
"""A message is grepped for whole: report (TAP) every C string literal of the tree that is
cut in two across a line break (two literals with only a line break between them, the
first not ending in \\n). With --join, rejoin them in place.

Usage: scripts/check-strings.py [--join] FILE...
"""
import sys


def literals(src):
    """(start, end) of each string literal of C source @src (comments and chars skipped)."""
    out, i, n = [], 0, len(src)
    while i < n:
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            i = src.find("*/", i + 2) + 2
        elif src[i] in "'\"":
            q, j = src[i], i + 1
            while src[j] != q:
                j += 2 if src[j] == "\\" else 1
            if q == '"':
                out.append((i, j + 1))
            i = j + 1
        else:
            i += 1
    return out


def cuts(src):
    """Where a literal is cut: (end of the first, start of the second)."""
    lits = literals(src)
    return [(b, c) for (a, b), (c, _) in zip(lits, lits[1:])
            if src[b:c].strip() == "" and src[b:c].count("\n") == 1 and not src[a:b].endswith('\\n"')]


def main(argv):
    join = argv[:1] == ["--join"]
    files = argv[1:] if join else argv
    n = bad = 0
    for f in files:
        src = open(f).read()
        found = cuts(src)
        if join and found:
            out, last = [], 0
            for b, c in found:
                out.append(src[last:b - 1])
                last = c + 1
            out.append(src[last:])
            open(f, "w").write("".join(out))
            continue
        for b, _ in found:
            n += 1
            bad += 1
            print("not ok %d - %s:%d: a string cut across lines" % (n, f, src.count("\n", 0, b) + 1))
        if not found:
            n += 1
            print("ok %d - %s: no string cut across lines" % (n, f))
    print("1..%d" % n)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
