#!/usr/bin/env bash
# hgtrace gen as a drop-in for QEMU's tracetool, on a trace-events file written for this
# test with the grammar and type cases QEMU's files use: every C integer spelling, pointer
# qualifiers, format macros of the program's own (HWADDR_PRIx), argument names that are D
# or SystemTap words, 'disable', events without a format, ten arguments. Every format with
# every backend this machine can build; the C compiled with QEMU's warning flags and
# -Werror; the values the simple backend recorded, each width and sign, against numbers
# written here by hand.
# Usage: qemu-compat.sh HGTRACE BUILD-ROOT
HGTRACE=$(realpath "$1")
BUILD=$(realpath "$2")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/build.sh"
command -v cc > /dev/null || tap_skip_all "no C compiler"
SAN=$(sanitize_flags "$BUILD")
export PKG_CONFIG_PATH=$BUILD/meson-uninstalled
tap_workdir

# QEMU's warning flags (meson.build, warn_flags), with -Werror.
QFLAGS="-Wundef -Wwrite-strings -Wmissing-prototypes -Wstrict-prototypes -Wredundant-decls
	-Wold-style-declaration -Wold-style-definition -Wtype-limits -Wformat-security
	-Winit-self -Wignored-qualifiers -Wempty-body -Wnested-externs -Wendif-labels
	-Wmissing-format-attribute -Wall -Werror"

cat > trace-events << 'EOF'
# <hw/fake.c>
qc_ints(long unsigned int a, unsigned short int b, signed short c, unsigned long int d, long long int e, unsigned long long int f, signed long g, int long unsigned h, short unsigned i, signed j) "a=%lu b=%u c=%d d=%lu e=%lld f=%llu g=%ld h=%lu i=%u j=%d"
qc_small(unsigned char u, signed char s, char c, _Bool b, bool t, volatile uint16_t v) "u=%u s=%d c=%d b=%d t=%d v=%u"

qc_ptrs(void * const p, const char * const s, const void *q, char *w) "p=%p s=%s q=%p w=%s"
qc_macro(uint64_t addr, unsigned size) "addr 0x%" HWADDR_PRIx " size %u"
qc_words(int self, int string, int probe, int in, int provider) "self=%d string=%d probe=%d in=%d provider=%d"
qc_nofmt(void)
disable qc_off(int x) "x=%d"
qc_ten(int8_t a0, int16_t a1, int32_t a2, int64_t a3, uint8_t a4, uint16_t a5, uint32_t a6, uint64_t a7, size_t a8, ssize_t a9) "%" PRId8 " %" PRId16 " %" PRId32 " %" PRId64 " %" PRIu8 " %" PRIu16 " %" PRIu32 " %" PRIu64 " %zu %zd"
EOF

# The program's own format macros come from its headers, included first where the
# generated C is compiled (QEMU: qemu/osdep.h).
echo '#include <inttypes.h>
#define HWADDR_PRIx PRIx64 /* as QEMU'"'"'s exec/hwaddr.h */' > qc-osdep.h

cat > main.c << 'EOF'
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include "trace-qc.h"

int main(void)
{
	trace_qc_ints(ULONG_MAX, 65535, -2, 123456789012ul, -5000000000ll, ULLONG_MAX, -7, 8, 65534, -9);
	trace_qc_small(255, -128, 'A', 1, 0, 65533);
	trace_qc_ptrs((void *)0x1234, "str", (const void *)0x10, (char *)"q'\\");
	trace_qc_macro(0xfee00000, 4);
	trace_qc_words(1, 2, 3, 4, 5);
	trace_qc_nofmt();
	trace_qc_off(1);
	trace_qc_ten(-1, -2, -3, -4, 250, 65000, 4000000000u, 18000000000000000000ull, 7, -8);
	return 0;
}
EOF

backends="nop,log,simple,ftrace,syslog"
pkg-config --exists lttng-ust 2> /dev/null && backends="$backends,ust"
command -v dtrace > /dev/null && backends="$backends,dtrace"
gen() { # FORMAT OUT [ARGS]
	local f=$1 o=$2
	shift 2
	"$HGTRACE" gen --backends "$backends" --group hw_fake --provider qemu --format "$f" -o "$o" "$@" trace-events
}
ok=1
for f in h c d stp ust ust-c; do
	case $f in
	h) out=trace-qc.h ;;
	c) out=trace-qc.c ;;
	d) out=trace-qc.d ;;
	stp) out=trace-qc.stp ;;
	ust-c) out=qemu-ust.c ;;
	ust) out=qemu-ust.h ;;
	esac
	args=()
	[ $f = stp ] && args=(--binary /usr/bin/qemu-fake --probe-prefix qemu.fake)
	[ $f = c ] && args=(--header trace-qc.h)
	if ! gen $f $out "${args[@]}" 2> gen.err; then
		tap_fail "gen --format $f: $(cat gen.err)"
		ok=0
	fi
done
[ $ok = 1 ] && tap_ok "every format (h c d stp ust ust-c) with backends $backends, provider qemu"
[ "$(stat -c %a trace-qc.h)" = "$(printf '%o' $((0666 & ~$(umask))))" ] &&
	tap_ok "generated files have the mode the umask gives ($(stat -c %a trace-qc.h))" ||
	tap_fail "mode $(stat -c %a trace-qc.h) with umask $(umask)"

# The D file: QEMU's provider, one word per type (SystemTap's dtrace parses no more), bool
# as bool, D's reserved words renamed.
if grep -q '^provider qemu {' trace-qc.d &&
	grep -q 'probe qc_ints(uint64_t a, uint16_t b, int16_t c, uint64_t d, int64_t e, uint64_t f, int64_t g, uint64_t h, uint16_t i, int32_t j);' trace-qc.d &&
	grep -q 'probe qc_small(uint8_t u, int8_t s, int8_t c, bool b, bool t, uint16_t v);' trace-qc.d &&
	grep -q 'probe qc_ptrs(void \*p, const char \*s, void \*q, const char \*w);' trace-qc.d &&
	grep -q 'probe qc_words(int32_t self_, int32_t string_, int32_t probe_, int32_t in, int32_t provider_);' trace-qc.d &&
	! grep -q qc_off trace-qc.d; then
	tap_ok "d: provider qemu, each type as its width and sign, bool kept, self/string/probe/provider renamed, disabled event left out"
else
	tap_fail "d: $(grep -E 'provider|qc_small|qc_words' trace-qc.d)"
fi
if grep -q '^  self_ = \$arg1;' trace-qc.stp && grep -q '^  string_ = \$arg2;' trace-qc.stp &&
	grep -q '^  in_ = \$arg4;' trace-qc.stp; then
	tap_ok "stp: self, string and in renamed as tracetool renames them"
else
	tap_fail "stp: $(grep -A6 qc_words trace-qc.stp | tr '\n' ' ')"
fi

# log-stap and simpletrace-stap (qemu-trace-stap's and the flight recorder's): the printf a
# probe makes, written here by hand from QEMU's formats: literals joined, PRI macros and
# HWADDR_PRIx their conversion letter, %lu/%lld/%zu without length (SystemTap's values are
# 64-bit); QEMU's binary record: type 1, the event's index, time, 24 + 8 per value + 4 +
# length per string, pid, values.
"$HGTRACE" gen --format log-stap --probe-prefix qemu.fake -o trace-qc-log.stp trace-events &&
	"$HGTRACE" gen --format simpletrace-stap --probe-prefix qemu.fake -o trace-qc-st.stp trace-events ||
	tap_fail "gen --format log-stap / simpletrace-stap"
cat > want-stap.txt << 'EOF'
    printf("%d@%d qc_ints a=%u b=%u c=%d d=%u e=%d f=%u g=%d h=%u i=%u j=%d\n", pid(), gettimeofday_ns(), a, b, c, d, e, f, g, h, i, j)
    printf("%d@%d qc_macro addr 0x%x size %u\n", pid(), gettimeofday_ns(), addr, size)
    printf("%d@%d qc_words self=%d string=%d probe=%d in=%d provider=%d\n", pid(), gettimeofday_ns(), self_, string_, probe_, in_, provider)
    printf("%d@%d qc_ten %d %d %d %d %u %u %u %u %u %d\n", pid(), gettimeofday_ns(), a0, a1, a2, a3, a4, a5, a6, a7, a8, a9)
    printf("%8b%8b%8b%4b%4b%8b%4b%.*s%8b%4b%.*s", 1, 2, gettimeofday_ns(), 24 + 8 + 4 + args_len + 8 + 4 + argw_len, pid(), p, args_len, args_len, args_str, q, argw_len, argw_len, argw_str)
    printf("%8b%8b%8b%4b%4b%8b%8b", 1, 3, gettimeofday_ns(), 24 + 8 + 8, pid(), addr, size)
    printf("%8b%8b%8b%4b%4b", 1, 5, gettimeofday_ns(), 24, pid())
    printf("%8b%8b%8b%4b%4b%8b%8b%8b%8b%8b%8b%8b%8b%8b%8b", 1, 7, gettimeofday_ns(), 24 + 8 + 8 + 8 + 8 + 8 + 8 + 8 + 8 + 8 + 8, pid(), a0, a1, a2, a3, a4, a5, a6, a7, a8, a9)
EOF
grep -hE 'printf\(.*(qc_ints|qc_macro|qc_words|qc_ten) |printf\("%8b.*, 1, [2357], ' trace-qc-log.stp trace-qc-st.stp > got-stap.txt
tap_cmp "log-stap and simpletrace-stap: the probes' printf as QEMU's formats give them ($(wc -l < want-stap.txt) lines)" got-stap.txt want-stap.txt
printf 'ev_m(int x) "x=%%" FOO_FMT\n' > nomacro.te
if ! "$HGTRACE" gen --format log-stap --probe-prefix q -o nomacro.stp nomacro.te 2> nomacro.err &&
	[ ! -e nomacro.stp ] && grep -q "nomacro.te:1: 'FOO_FMT' in a format: a SystemTap format needs the conversion" nomacro.err; then
	tap_ok "log-stap: a macro that names no conversion is one error line: $(cat nomacro.err)"
else
	tap_fail "log-stap with FOO_FMT: $(cat nomacro.err)"
fi
if ! grep -q qc_off trace-qc-log.stp && ! grep -q qc_off trace-qc-st.stp &&
	grep -q 'args_str = s ? user_string_n(s, 512) : "<null>"' trace-qc-st.stp; then
	tap_ok "stap formats: the disabled event left out (its index still counted), strings read with user_string_n"
else
	tap_fail "stap formats: qc_off or strings"
fi

# Compile with QEMU's flags.
extra=()
if [[ $backends == *ust* ]]; then
	# the provider qemu is shared by groups: defined once, by the ust-c file
	extra+=(qemu-ust.c $(pkg-config --cflags --libs lttng-ust))
fi
if [[ $backends == *dtrace* ]]; then
	if dtrace -h -s trace-qc.d -o hw_fake-dtrace.h 2> dtrace.err && dtrace -G -s trace-qc.d -o trace-qc-dtrace.o 2>> dtrace.err; then
		extra+=(trace-qc-dtrace.o)
	else
		tap_fail "dtrace on the generated .d: $(cat dtrace.err)"
	fi
fi
# shellcheck disable=SC2086
if cc -O2 $QFLAGS $SAN -include qc-osdep.h -I. -o qc main.c trace-qc.c \
	$(pkg-config --cflags --libs hgtrace-probes-uninstalled) -Wl,-rpath,"$BUILD/lib" \
	-lpthread "${extra[@]}" 2> cc.log; then
	tap_ok "the generated C (backends $backends) compiles with QEMU's warning flags and -Werror"
else
	tap_fail "compile with QEMU's flags: $(head -5 cc.log)"
	tap_done
fi

# What the simple backend recorded, against the values written by hand above (a build with
# it alone: the others would write to syslog and the top-level trace_marker).
mkdir simple
"$HGTRACE" gen --backends simple --group hw_fake --format h -o simple/trace-qc.h trace-events &&
	"$HGTRACE" gen --backends simple --group hw_fake --format c -o simple/trace-qc.c trace-events &&
	cp main.c simple/ &&
	cc -O2 $QFLAGS $SAN -include qc-osdep.h -o qcs simple/main.c simple/trace-qc.c \
		$(pkg-config --cflags --libs hgtrace-probes-uninstalled) -Wl,-rpath,"$BUILD/lib" \
		-lpthread 2> cc2.log || tap_fail "the simple build: $(head -3 cc2.log)"
HGTRACE_EVENTS='qc_*' HGTRACE_FILE=$t/qc.trace ./qcs 2> run.err > /dev/null
"$HGTRACE" simpletrace qc.trace 2> st.err | awk '{ $2 = ""; $3 = ""; print }' | sed -E 's/  +/ /g; s/ $//' > got.txt
cat > want.txt << 'EOF'
qc_ints a=18446744073709551615 b=65535 c=-2 d=123456789012 e=-5000000000 f=18446744073709551615 g=-7 h=8 i=65534 j=-9
qc_small u=255 s=-128 c=65 b=1 t=0 v=65533
qc_ptrs p=0x1234 s=str q=0x10 w=q'\
qc_macro addr=4276092928 size=4
qc_words self=1 string=2 probe=3 in=4 provider=5
qc_nofmt
qc_ten a0=-1 a1=-2 a2=-3 a3=-4 a4=250 a5=65000 a6=4000000000 a7=18000000000000000000 a8=7 a9=-8
EOF
tap_cmp "simple backend: every width and sign recorded as written ($(wc -l < want.txt) events; qc_off compiled out)" got.txt want.txt
# The same file printed as QEMU's simpletrace.py prints: every value but strings as its 64
# bits in hex, strings as Python bytes (computed by hand: -2 as a short is 0xff..fe).
"$HGTRACE" simpletrace --qemu qc.trace 2> /dev/null | awk '{ $2 = ""; $3 = ""; print }' | sed -E 's/  +/ /g; s/ $//' > gotq.txt
cat > wantq.txt << 'EOF'
qc_ints a=0xffffffffffffffff b=0xffff c=0xfffffffffffffffe d=0x1cbe991a14 e=0xfffffffed5fa0e00 f=0xffffffffffffffff g=0xfffffffffffffff9 h=0x8 i=0xfffe j=0xfffffffffffffff7
qc_small u=0xff s=0xffffffffffffff80 c=0x41 b=0x1 t=0x0 v=0xfffd
qc_ptrs p=0x1234 s=b'str' q=0x10 w=b"q'\\"
qc_macro addr=0xfee00000 size=0x4
qc_words self=0x1 string=0x2 probe=0x3 in=0x4 provider=0x5
qc_nofmt
qc_ten a0=0xffffffffffffffff a1=0xfffffffffffffffe a2=0xfffffffffffffffd a3=0xfffffffffffffffc a4=0xfa a5=0xfde8 a6=0xee6b2800 a7=0xf9ccd8a1c5080000 a8=0x7 a9=0xfffffffffffffff8
EOF
tap_cmp "simpletrace --qemu: values as QEMU's simpletrace.py prints them ($(wc -l < wantq.txt) events)" gotq.txt wantq.txt

# rs: the Rust functions QEMU's Rust devices call, over the C file's functions; a Rust
# program fires the same events with the same values as main.c.
if command -v rustc > /dev/null; then
	mkdir rs
	"$HGTRACE" gen --backends simple --group hw_fake --format rs -o rs/trace-qc.rs trace-events &&
		"$HGTRACE" gen --backends simple --group hw_fake --format h -o rs/trace-qc.h trace-events &&
		"$HGTRACE" gen --backends simple --group hw_fake --format c -o rs/trace-qc.c trace-events ||
		tap_fail "gen --format rs"
	cat > rs/main.rs << 'EOF'
include!("trace-qc.rs");

fn main() {
    trace_qc_ints(u64::MAX, 65535, -2, 123456789012, -5000000000, u64::MAX, -7, 8, 65534, -9);
    trace_qc_small(255, -128, 65, true, false, 65533);
    trace_qc_ptrs(0x1234 as *const c_void, CStr::from_bytes_with_nul(b"str\0").unwrap(),
                  0x10 as *const c_void, CStr::from_bytes_with_nul(b"q'\\\0").unwrap());
    trace_qc_macro(0xfee00000, 4);
    trace_qc_words(1, 2, 3, 4, 5);
    trace_qc_nofmt();
    trace_qc_off(1);
    trace_qc_ten(-1, -2, -3, -4, 250, 65000, 4000000000, 18000000000000000000, 7, -8);
}
EOF
	# Under sanitizers the C parts need their runtimes, which rustc's link puts after the
	# libraries that use them: named for the link, preloaded for the run.
	rsl=()
	pre=
	if [[ $SAN == *address* ]]; then
		rsl+=(-l dylib=asan)
		pre=$(cc -print-file-name=libasan.so)
	fi
	if [[ $SAN == *undefined* ]]; then
		rsl+=(-l dylib=ubsan)
		pre="$pre $(cc -print-file-name=libubsan.so)"
	fi
	if cc -O2 -c $QFLAGS $SAN -fPIC -include qc-osdep.h -o rs/trace-qc.o rs/trace-qc.c \
		$(pkg-config --cflags hgtrace-probes-uninstalled) 2> rs/cc.log &&
		ar rcs rs/libqc.a rs/trace-qc.o &&
		rustc --edition 2021 -O -o rs/qcr rs/main.rs -L native=rs -l static=qc \
			-L native="$BUILD/lib" -l dylib=hgtrace-probes "${rsl[@]}" \
			-C link-args="-Wl,-rpath,$BUILD/lib" 2> rs/rustc.log; then
		LD_PRELOAD=$pre HGTRACE_EVENTS='qc_*' HGTRACE_FILE=$t/rs/qc.trace rs/qcr 2> rs/run.err
		"$HGTRACE" simpletrace rs/qc.trace 2> /dev/null | awk '{ $2 = ""; $3 = ""; print }' |
			sed -E 's/  +/ /g; s/ $//' > rs/got.txt
		tap_cmp "rs: a Rust program's events recorded as main.c's ($(wc -l < want.txt) events)" rs/got.txt want.txt
		[ -s rs/run.err ] && echo "# rs program's stderr: $(head -3 rs/run.err | tr '\n' ' ')"
	else
		tap_fail "rs: build: $(cat rs/cc.log rs/rustc.log | grep -m3 -i error | tr '\n' ' ')"
	fi
else
	tap_skip "rs: a Rust program's events" "no rustc here"
fi

# HGTRACE_SIMPLE_FORMAT=qemu: the same run written in QEMU's simple trace format (v4), read
# by this test's own reader of QEMU's documented layout (header ~0, magic, 4; mapping
# records; event records id, ns, length, pid, u64 values or u32-length strings), values
# printed as simpletrace.py prints them; then by hgtrace simpletrace given trace-events.
HGTRACE_SIMPLE_FORMAT=qemu HGTRACE_EVENTS='qc_*' HGTRACE_FILE=$t/qemu.trace ./qcs 2> runq.err > /dev/null
python3 - trace-events qemu.trace > readq.txt 2> readq.err << 'PYEOF2'
import re, struct, sys
kinds = {}
for line in open(sys.argv[1]):
    m = re.match(r'\s*(?:disable\s+)?(\w+)\((.*?)\)', line)
    if not m or line.lstrip().startswith('#'):
        continue
    args = [] if m.group(2).strip() == 'void' else [a.strip() for a in m.group(2).split(',')]
    k = []
    for a in args:
        if '*' in a:
            t, n = a[:a.rindex('*') + 1], a[a.rindex('*') + 1:].split()[-1]
        else:
            t, n = a.rsplit(None, 1)
        k.append((n, re.sub(r'\bconst\b|\s', '', t) == 'char*'))
    kinds[m.group(1)] = k
b = open(sys.argv[2], 'rb').read()
hid, magic, ver = struct.unpack_from('<QQQ', b, 0)
assert (hid, magic, ver) == (2**64 - 1, 0xf2b177cb0aa429b4, 4), (hid, magic, ver)
off, names, last, pids, n = 24, {}, 0, set(), 0
while off < len(b):
    typ, = struct.unpack_from('<Q', b, off)
    if typ == 0:
        eid, ln = struct.unpack_from('<QI', b, off + 8)
        names[eid] = b[off + 20:off + 20 + ln].decode()
        off += 20 + ln
        continue
    assert typ == 1, typ
    eid, ts, length, pid = struct.unpack_from('<QQII', b, off + 8)
    assert ts >= last, "time went back"
    last = ts
    pids.add(pid)
    p, out = off + 32, [names[eid]]
    for name, is_str in kinds[names[eid]]:
        if is_str:
            sl, = struct.unpack_from('<I', b, p)
            out.append('%s=%r' % (name, b[p + 4:p + 4 + sl]))
            p += 4 + sl
        else:
            out.append('%s=0x%x' % (name, struct.unpack_from('<Q', b, p)[0]))
            p += 8
    assert p == off + 8 + length, "length field"
    off += 8 + length
    n += 1
    print(' '.join(out))
assert len(pids) == 1 and 0 not in pids, pids
PYEOF2
if [ -s readq.err ] || ! cmp -s readq.txt wantq.txt; then
	tap_fail "HGTRACE_SIMPLE_FORMAT=qemu: $(cat readq.err) $(diff readq.txt wantq.txt | head -4)"
else
	tap_ok "HGTRACE_SIMPLE_FORMAT=qemu: QEMU v4 as documented, read by the test's own reader: the $(wc -l < readq.txt) events' values as computed by hand"
fi
"$HGTRACE" simpletrace --qemu trace-events qemu.trace 2> /dev/null | awk '{ $2 = ""; $3 = ""; print }' | sed -E 's/  +/ /g; s/ $//' > gotq2.txt
tap_cmp "hgtrace simpletrace trace-events FILE reads the QEMU-format file alike" gotq2.txt wantq.txt

# Groups are namespaces: QEMU's linux-user and bsd-user both declare some events. Two groups
# with one event name build and link into one program; registering both is the clash, told
# with both group names, and a program with one of them hears nothing.
mkdir dup
for g in hw_a hw_b; do
	printf 'dup_ev(int x) "x=%%d"\nonly_%s(void)\n' $g > dup/$g.trace-events
	"$HGTRACE" gen --backends simple --group $g --format h -o dup/trace-$g.h dup/$g.trace-events &&
		"$HGTRACE" gen --backends simple --group $g --format c -o dup/trace-$g.c dup/$g.trace-events ||
		tap_fail "gen of group $g"
	printf '#include "trace-%s.h"\nvoid fire_%s(void);\nvoid fire_%s(void) { trace_dup_ev(1); trace_only_%s(); }\n' \
		$g $g $g $g > dup/use-$g.c
done
printf 'void fire_hw_a(void);\nvoid fire_hw_b(void);\nint main(void) { fire_hw_a(); %s return 0; }\n' \
	'fire_hw_b();' > dup/both.c
printf 'void fire_hw_a(void);\nint main(void) { fire_hw_a(); return 0; }\n' > dup/one.c
link() { # OUT SOURCES...
	local out=$1
	shift
	cc -O2 $QFLAGS $SAN -o "$out" "$@" $(pkg-config --cflags --libs hgtrace-probes-uninstalled) \
		-Wl,-rpath,"$BUILD/lib" -lpthread 2>> dup/cc.log
}
if link dup/both dup/both.c dup/use-hw_a.c dup/trace-hw_a.c dup/use-hw_b.c dup/trace-hw_b.c &&
	link dup/one dup/one.c dup/use-hw_a.c dup/trace-hw_a.c; then
	HGTRACE_EVENTS='*' HGTRACE_FILE=$t/dup/both.trace dup/both 2> dup/both.err > /dev/null
	HGTRACE_EVENTS='*' HGTRACE_FILE=$t/dup/one.trace dup/one 2> dup/one.err > /dev/null
	if grep -qE 'event dup_ev is declared by group hw_[ab] and by group hw_[ab], both linked' dup/both.err &&
		grep -q hw_a dup/both.err && grep -q hw_b dup/both.err && [ ! -s dup/one.err ] &&
		[ "$("$HGTRACE" simpletrace dup/one.trace | grep -c 'dup_ev\|only_hw_a')" = 2 ]; then
		tap_ok "two groups declaring dup_ev link into one program; registration says: $(grep dup_ev dup/both.err)"
	else
		tap_fail "groups as namespaces: both: $(cat dup/both.err); one: $(cat dup/one.err)"
	fi
else
	tap_fail "two groups with one event name do not link: $(head -3 dup/cc.log)"
fi

tap_done
