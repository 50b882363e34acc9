#!/usr/bin/env python3
"""What hgtrace gen must write, worked out from the trace-events files by this test's own
reader, never from an earlier output of the generator.

Usage: check-gen.py DIR TRACE-EVENTS...
DIR holds what probes.sh generated: BACKENDS.h and BACKENDS.c per backend set (nop, log,
simple, ftrace, syslog, ust, dtrace, all), probes.d, probes-ust.h and probes.stp (binary
/usr/bin/sample, prefix sample). Prints "ok TEXT" or "not ok TEXT" per file, each with the
number of facts it checked; exit 1 when one is wrong.

The rules (doc/userspace-tracing in the spec: QEMU's tracetool, and our generator's own
contract in hgtrace-gen(1)):
- each event, or each half of a 'tcg' event (X_trans: no TCGv argument, the first format;
  X_exec: TCGv_* become uint64_t, the second format), gets trace_X(declared arguments),
  with 'vcpu' adding a first 'void *__cpu' and "cpu=%p " before its format;
- 'disable': TRACE_X_ENABLED 0, an empty body, no backend code, left out of .d and .stp;
- the body calls the backends that keep their own state first (dtrace, then ust), then
  one 'if (trace_event_get_state(TRACE_X))' around the out-of-line printf/simple writer;
- the .c's event: name, the format pasted verbatim after '#line LINE "FILE"', the id
  FNV-1a-32 of the name, the argument kinds of LP64 C, the flags;
- log/ftrace/syslog print "X " FORMAT with the arguments in order; simple reserves 24
  bytes of header, 8 per scalar and HGT_PROBE_STR_SIZE per string (a string is exactly
  'char *' or 'const char *').
"""
import os
import re
import sys

B_STATE = ["log", "simple", "ftrace", "syslog"]  # the state-keeping backends, in order
B_BITS = {"log": 0x1, "simple": 0x2, "ftrace": 0x4, "syslog": 0x8, "ust": 0x10, "dtrace": 0x20}
SETS = {b: [b] for b in ["nop"] + B_STATE + ["ust", "dtrace"]}
SETS["nop"] = []
SETS["all"] = ["log", "simple", "ftrace", "syslog", "ust", "dtrace"]

# LP64 x86-64 C: signed?, bytes
SCALARS = {
    "char": ("S", 1), "signed char": ("S", 1), "unsigned char": ("U", 1),
    "short": ("S", 2), "short int": ("S", 2), "unsigned short": ("U", 2),
    "int": ("S", 4), "signed": ("S", 4), "unsigned": ("U", 4), "unsigned int": ("U", 4),
    "long": ("S", 8), "long int": ("S", 8), "unsigned long": ("U", 8),
    "long long": ("S", 8), "unsigned long long": ("U", 8),
    "size_t": ("U", 8), "ssize_t": ("S", 8), "uintptr_t": ("U", 8), "intptr_t": ("S", 8),
    "ptrdiff_t": ("S", 8), "off_t": ("S", 8), "pid_t": ("S", 4),
}
for n in (8, 16, 32, 64):
    SCALARS["int%d_t" % n] = ("S", n // 8)
    SCALARS["uint%d_t" % n] = ("U", n // 8)


def fnv1a(s):
    h = 0x811C9DC5
    for c in s.encode():
        h = ((h ^ c) * 0x01000193) & 0xFFFFFFFF
    return h


class Arg:
    def __init__(self, typ, name):
        self.type = " ".join(typ.replace("*", " * ").split()).replace(" *", "*").replace("*", " *")
        self.type = self.type.replace("* ", "*").strip()
        self.name = name

    def decl(self):
        return self.type + ("" if self.type.endswith("*") else " ") + self.name

    def kind(self):
        t = self.type
        if "*" in t:
            return "STR" if t in ("char *", "const char *") else "PTR"
        if t in ("bool", "_Bool"):
            return "BOOL"
        base = " ".join(w for w in t.split() if w not in ("const", "volatile"))
        sign, size = SCALARS[base]
        return "%s%d" % (sign, size * 8)


class Half:
    """One event as the generated code sees it."""

    def __init__(self, name, args, fmt, flags, line, file):
        self.name, self.args, self.fmt, self.flags = name, args, fmt, flags
        self.line, self.file = line, file
        self.disabled = bool(flags & 0x1)

    @property
    def upper(self):
        return self.name.upper()

    def params(self):
        return ", ".join(a.decl() for a in self.args) or "void"

    def names(self):
        return ", ".join(a.name for a in self.args)


def split_formats(rest):
    """'"a" PRIx64 " b", "c"' -> ['"a" PRIx64 " b"', '"c"'] (commas outside quotes)."""
    out, cur, q = [], "", False
    for c in rest:
        if c == '"':
            q = not q
        if c == "," and not q:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
    if cur.strip():
        out.append(cur.strip())
    return out


def read_events(paths):
    halves = []
    for path in paths:
        for n, line in enumerate(open(path), 1):
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            m = re.match(r"((?:(?:disable|vcpu|tcg)\s+)*)(\w+)\((.*?)\)\s*(.*)$", s)
            if not m:
                sys.exit("check-gen: %s:%d: cannot read %r" % (path, n, s))
            props, name, argtext, rest = m.group(1).split(), m.group(2), m.group(3), m.group(4)
            args = []
            if argtext.strip() != "void":
                for a in argtext.split(","):
                    a = a.strip()
                    am = re.match(r"(.*?[\s*])(\w+)$", a)
                    args.append(Arg(am.group(1), am.group(2)))
            fmts = split_formats(rest)
            flags = 0x1 if "disable" in props else 0
            base = os.path.basename(path)
            if "vcpu" in props:
                args = [Arg("void *", "__cpu")] + args
                fmts = ['"cpu=%p " ' + f for f in fmts]
                flags |= 0x2
            if "tcg" in props:
                trans = [a for a in args if not a.type.startswith("TCGv")]
                ex = [Arg("uint64_t", a.name) if a.type.startswith("TCGv") else a for a in args]
                halves.append(Half(name + "_trans", trans, fmts[0], flags | 0x4, n, base))
                halves.append(Half(name + "_exec", ex, fmts[1], flags | 0x8, n, base))
            else:
                halves.append(Half(name, args, fmts[0] if fmts else None, flags, n, base))
    return halves


def conversions(fmt):
    """The conversion letters of a C format with PRI macros, in order."""
    s = ""
    for tok in re.findall(r'"((?:[^"\\]|\\.)*)"|(PRI[a-zA-Z]+\w*)', fmt or ""):
        s += tok[0] if tok[0] else "@" + re.match(r"PRI([diouxX])", tok[1]).group(1)
    convs = []
    for m in re.finditer(r"%(%|[-+ #0-9.]*(?:hh|h|ll|l|z|t|j)?([a-zA-Z@])(\w)?)", s):
        if m.group(1) == "%":
            continue
        c = m.group(2)
        convs.append(m.group(3) if c == "@" else c)
    return convs


def norm(s):
    return " ".join(s.split())


class Checker:
    def __init__(self):
        self.facts = 0
        self.errors = []

    def eq(self, what, got, want):
        self.facts += 1
        if norm(str(got)) != norm(str(want)):
            self.errors.append("%s: %r, want %r" % (what, got, want))

    def true(self, what, cond):
        self.facts += 1
        if not cond:
            self.errors.append(what)


def statements(body):
    """A C body as a list of normalized statements ('if (C) S;' kept whole)."""
    body = re.sub(r"#line[^\n]*\n", "", body)
    return [norm(st) for st in re.findall(r"[^;{}]+;", body)]


def check_h(ck, text, halves, backends):
    state = [b for b in B_STATE if b in backends]
    for h in halves:
        u, n = h.upper, h.name
        m = re.search(r"#define TRACE_%s_ENABLED (\d)\n" % u, text)
        ck.eq(n + ": TRACE_%s_ENABLED" % u, m and m.group(1), "0" if h.disabled else "1")
        m = re.search(r"#define TRACE_%s_BACKEND_DSTATE\(\) (.*)\n" % u, text)
        d = m.group(1) if m else ""
        if h.disabled:
            ck.eq(n + ": BACKEND_DSTATE of a disabled event", d, "0")
        else:
            terms = ["__atomic_load_n(&_TRACE_%s_DSTATE, __ATOMIC_RELAXED)" % u]
            if "dtrace" in backends:
                terms.append("PROBES_%s_ENABLED()" % u)
            if "ust" in backends:
                terms.append("tracepoint_enabled(probes, %s)" % n)
            ck.eq(n + ": BACKEND_DSTATE", d, "(" + " || ".join(terms) + ")")
        m = re.search(r"static inline void trace_%s\((.*?)\)\n\{\n(.*?)\}\n" % n, text, re.S)
        ck.true(n + ": no 'static inline void trace_%s(...)'" % n, m)
        if not m:
            continue
        ck.eq(n + ": trace_%s's parameters" % n, m.group(1), h.params())
        body = statements(m.group(2))
        voids = ["(void)%s;" % a.name for a in h.args]
        want = []
        if not h.disabled:
            if "dtrace" in backends:
                want.append("if (PROBES_%s_ENABLED()) PROBES_%s(%s);" % (u, u, h.names()))
            if "ust" in backends:
                want.append("tracepoint(probes, %s);" % ", ".join([n] + [a.name for a in h.args]))
            if state:
                want.append("if (trace_event_get_state(TRACE_%s)) _hgt_trace_%s(%s);"
                            % (u, n, h.names()))
        if not want:
            want = voids  # nothing to call: the arguments are only marked used
        ck.eq(n + ": trace_%s's body" % n, " ".join(body), " ".join(want))
        if not h.disabled and state:
            ck.true(n + ": no prototype of _hgt_trace_%s" % n,
                    norm("void _hgt_trace_%s(%s);" % (n, h.params())) in norm(text))


def reserve_terms(expr):
    """'24 + 8 + HGT_PROBE_STR_SIZE(_l0)' -> (32, ['_l0'])."""
    const, strs = 0, []
    for t in expr.split("+"):
        t = t.strip()
        m = re.match(r"HGT_PROBE_STR_SIZE\((\w+)\)$", t)
        if m:
            strs.append(m.group(1))
        else:
            const += int(t, 0)
    return const, strs


def check_simple(ck, n, body, h):
    m = re.search(r"hgt__probe_reserve\((0x[0-9a-f]+)u, (.*?)\);", body)
    ck.true(n + ": simple: no hgt__probe_reserve", m)
    if not m:
        return
    ck.eq(n + ": simple: the record's id", int(m.group(1), 16), fnv1a(n))
    const, strs = reserve_terms(m.group(2))
    scal = [a for a in h.args if a.kind() != "STR"]
    sargs = [a for a in h.args if a.kind() == "STR"]
    ck.eq(n + ": simple: fixed bytes reserved", const, 24 + 8 * len(scal))
    ck.eq(n + ": simple: strings sized", len(strs), len(sargs))
    lens = dict(re.findall(r"uint32_t (\w+) = hgt__probe_strlen\((\w+)\);", body))
    ck.eq(n + ": simple: the strings measured", [lens.get(v, "?") for v in strs],
          [a.name for a in sargs])
    puts = re.findall(r"(?:_p = hgt__probe_put_str\(_p, (\w+), \w+\)|\*_p\+\+ = (\(.*?\))(\w+));",
                      body)
    want = []
    for a in h.args:
        k = a.kind()
        if k == "STR":
            want.append((a.name, "", ""))
        elif k == "PTR":
            want.append(("", "(uint64_t)(uintptr_t)", a.name))
        elif k.startswith("S"):
            want.append(("", "(uint64_t)(int64_t)", a.name))
        else:
            want.append(("", "(uint64_t)", a.name))
    ck.eq(n + ": simple: the values written, in order", puts, want)


def check_c(ck, text, halves, backends, fname):
    state = [b for b in B_STATE if b in backends]
    for h in halves:
        u, n = h.upper, h.name
        m = re.search(r"struct hgt_probe_event _TRACE_%s_EVENT = \{\n(.*?)\n\};" % u, text, re.S)
        ck.true(n + ": no _TRACE_%s_EVENT" % u, m)
        if not m:
            continue
        ev = m.group(1)
        f = dict(re.findall(r"\t\.(\w+) = ([^\n]*),\n", ev + ",\n"))
        ck.eq(n + ": .name", f.get("name"), '"%s"' % n)
        ck.eq(n + ": .id", f.get("id"), "%#xu" % fnv1a(n))
        ck.eq(n + ": .nargs", f.get("nargs"), len(h.args))
        ck.eq(n + ": .flags", int(f.get("flags", "-1"), 0), h.flags)
        fm = re.search(r"\.fmt = \n#line (\d+) \"([^\"]+)\"\n(.*?)\n#line", ev, re.S)
        if h.fmt is None:
            ck.eq(n + ": .fmt", f.get("fmt"), '""')
        else:
            ck.eq(n + ": .fmt with its #line", fm and (fm.group(1), fm.group(2), fm.group(3)),
                  (str(h.line), h.file, h.fmt))
        if h.args:
            t = re.search(r"_hgt_args_%s\[\] = \{\n(.*?)\n\};" % n, text, re.S)
            rows = re.findall(r'\{ "([^"]*)", "(\w+)", HGT_PROBE_(\w+) \}', t.group(1) if t else "")
            ck.eq(n + ": argument table", rows,
                  [(a.type, a.name, a.kind()) for a in h.args])
        fn = re.search(r"\nvoid _hgt_trace_%s\((.*?)\)\n\{\n(.*?)\n\}\n" % n, text, re.S)
        if h.disabled or not state:
            ck.true(n + ": _hgt_trace_%s written with no backend to call" % n, not fn)
            continue
        ck.true(n + ": no _hgt_trace_%s" % n, fn)
        if not fn:
            continue
        ck.eq(n + ": _hgt_trace_%s's parameters" % n, fn.group(1), h.params())
        body = fn.group(2) + "\n"
        calls = re.findall(r"#line (\d+) \"([^\"]+)\"\n\thgt_probe_(\w+)\((\"%s \" .*?)\);\n#line (\d+) \"%s\"\n"
                           % (n, re.escape(fname)), body, re.S)
        want = [(str(h.line), h.file, b, '"%s " %s' % (n, h.fmt or '""')
                 + "".join(", " + a.name for a in h.args))
                for b in state if b != "simple"]
        ck.eq(n + ": the printf backends' calls", [c[:4] for c in calls], want)
        if "simple" in state:
            check_simple(ck, n, body, h)
    # every '#line N "FILE.c"' names the line that follows it
    for i, line in enumerate(text.split("\n"), 1):
        m = re.match(r'#line (\d+) "%s"$' % re.escape(fname), line)
        if m:
            ck.eq("line %d: #line back to %s" % (i, fname), int(m.group(1)), i + 1)
    names = re.findall(r"&_TRACE_(\w+)_EVENT,", text)
    ck.eq("the group's events, in order", names, [h.upper for h in halves])
    m = re.search(r"\.nevents = (\d+),\n\t\.backends = (\w+),", text)
    bits = 0
    for b in backends:
        bits |= B_BITS[b]
    ck.eq("the group's count and backends", m and (int(m.group(1)), int(m.group(2), 0)),
          (len(halves), bits))


D_TYPES = {"S8": "int8_t", "S16": "int16_t", "S32": "int32_t", "S64": "int64_t",
           "U8": "uint8_t", "U16": "uint16_t", "U32": "uint32_t", "U64": "uint64_t",
           "STR": "const char *", "PTR": "void *", "BOOL": "bool"}


def check_d(ck, text, halves):
    got = re.findall(r"\tprobe (\w+)\((.*?)\);", text)
    want = [(h.name, ", ".join(Arg(D_TYPES[a.kind()], a.name).decl() for a in h.args))
            for h in halves if not h.disabled]
    ck.eq("provider", re.search(r"provider (\w+) \{", text).group(1), "probes")
    ck.eq("probes (disabled ones left out), LP64 types", got, want)
    ck.facts += sum(len(h.args) for h in halves if not h.disabled)


def check_stp(ck, text, halves):
    got = re.findall(r'probe sample\.(\w+) = process\("/usr/bin/sample"\)\.mark\("(\w+)"\)\n\{\n(.*?)\}',
                     text, re.S)
    want = []
    for h in halves:
        if h.disabled:
            continue
        want.append((h.name, h.name, "".join("  %s = $arg%d;\n" % (a.name, i + 1)
                                             for i, a in enumerate(h.args))))
    ck.eq("tapset probes (disabled ones left out), $argN in order", got, want)
    ck.facts += sum(len(h.args) for h in halves if not h.disabled)


def check_ust(ck, text, halves):
    got = re.findall(r"TRACEPOINT_EVENT\(\n\tprobes,\n\t(\w+),\n\tTP_ARGS\((.*?)\),\n\tTP_FIELDS\((.*?)\)\n\)",
                     text, re.S)
    want = []
    for h in halves:  # 'disable' events too, as QEMU's ust generator does
        targs = ", ".join("%s, %s" % (a.type, a.name) for a in h.args)
        convs = conversions(h.fmt)
        fields = []
        for i, a in enumerate(h.args):
            k = a.kind()
            hexa = i < len(convs) and convs[i] in ("x", "X", "p")
            if k == "STR":
                fields.append("ctf_string(%s, %s)" % (a.name, a.name))
            elif k == "PTR":
                fields.append("ctf_integer_hex(uintptr_t, %s, (uintptr_t)%s)" % (a.name, a.name))
            elif k == "BOOL":
                fields.append("ctf_integer(int, %s, %s)" % (a.name, a.name))
            else:
                fields.append("ctf_integer%s(%s, %s, %s)" % ("_hex" if hexa else "", a.type, a.name, a.name))
        want.append((h.name, targs, " ".join(fields)))
    ck.eq("LTTng tracepoints: arguments and fields (hex where the format prints hex)",
          [(g[0], norm(g[1]), norm(g[2])) for g in got], want)
    ck.facts += sum(len(h.args) for h in halves)


def main():
    d, paths = sys.argv[1], sys.argv[2:]
    halves = read_events(paths)
    bad = 0
    files = [("%s.%s" % (s, x), s, x) for s in SETS for x in ("h", "c")]
    files += [("probes.d", None, "d"), ("probes.stp", None, "stp"), ("probes-ust.h", None, "ust")]
    for fname, s, x in files:
        ck = Checker()
        try:
            text = open(os.path.join(d, fname)).read()
        except OSError as e:
            print("not ok gen %s: %s" % (fname, e))
            bad += 1
            continue
        if x == "h":
            check_h(ck, text, halves, SETS[s])
        elif x == "c":
            check_c(ck, text, halves, SETS[s], fname)
        elif x == "d":
            check_d(ck, text, halves)
        elif x == "stp":
            check_stp(ck, text, halves)
        else:
            check_ust(ck, text, halves)
        what = "gen %s (--backends %s): %d events, %d facts" % (
            fname, ",".join(SETS[s]) if s and SETS[s] else "nop", len(halves), ck.facts)
        if ck.errors:
            bad += 1
            print("not ok %s; wrong: %s" % (what, "; ".join(ck.errors[:3])))
        else:
            print("ok %s" % what)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
