#!/usr/bin/env bash
# Damaged files: each must give one clear error line naming the file and the offset, a
# non-zero exit, and no crash (run under ASan in CI).
# Usage: bad-input.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
data=$here/data
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

# expect_error WHAT FILE NEEDLE [report|dump]: exit 1, stderr is exactly one line naming
# FILE and containing NEEDLE.
expect_error() {
	local what=$1 f=$2 needle=$3 cmd=${4:-report} rc lines
	"$HGTRACE" "$cmd" "$f" > "$t/out" 2> "$t/err"
	rc=$?
	lines=$(wc -l < "$t/err")
	if [ $rc -eq 1 ] && [ "$lines" -eq 1 ] && grep -qF "$f" "$t/err" && grep -qF -- "$needle" "$t/err"; then
		tap_ok "$what"
	else
		tap_fail "$what (exit $rc, $lines stderr lines)"
		sed 's/^/# /' "$t/err" | head -3
	fi
}

patch() { # FILE OFFSET HEXBYTES
	printf "$(echo "$3" | sed 's/\(..\)/\\x\1/g')" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# Section offsets from hgtrace dump (0xOFFSET id N NAME size S).
sections() {
	"$HGTRACE" dump "$1" | awk '/^  0x[0-9a-f]+ id/ { print $1, $3, $6 }' |
		while read -r o id s; do echo "$((o)) $id $s"; done
}
cpu0_offset() { local o; o=$("$HGTRACE" dump "$1" | awk '/cpu 0: @/ { print $4; exit }'); echo $((${o%,})); }

for src in tsc.dat tsc-v6.dat local-v7none.dat; do
	size=$(stat -c %s "$data/$src")
	n=0
	while read -r off id ssize; do
		for cut in "$off" $((off + 8)) $((off + 17)); do
			[ "$cut" -ge "$size" ] && continue
			head -c "$cut" "$data/$src" > "$t/cut.dat"
			if [ "$id" = 15 ] && [ "$cut" -eq "$off" ] && [ $((off + 16 + ssize)) -eq "$size" ]; then
				# Only the trailing STRINGS section (descriptions) is gone: still readable.
				if "$HGTRACE" report "$t/cut.dat" > /dev/null 2>&1; then
					tap_ok "$src without its trailing STRINGS section is still read"
				else
					tap_fail "$src without its trailing STRINGS section is still read"
				fi
				continue
			fi
			expect_error "$src truncated at $cut (section $id)" "$t/cut.dat" "offset 0x"
			n=$((n + 1))
		done
	done < <(sections "$data/$src")
	[ $n -gt 5 ] && tap_ok "$src: $n truncation points tried" || tap_fail "$src: only $n truncation points"
done

cp "$data/tsc.dat" "$t/magic.dat"; patch "$t/magic.dat" 0 18
expect_error "bad magic" "$t/magic.dat" "bad magic"
cp "$data/tsc.dat" "$t/ver.dat"; patch "$t/ver.dat" 10 38
expect_error "unknown version" "$t/ver.dat" 'unsupported file version "8"'
cp "$data/tsc.dat" "$t/comp.dat"; patch "$t/comp.dat" 21 78
expect_error "unknown compression" "$t/comp.dat" 'unknown compression "zstx"'
expect_error "missing file" "$t/nonexistent.dat" "cannot open"

# A v7 section whose size runs past the end of the file.
cp "$data/local-v7none.dat" "$t/secsize.dat"
read -r off _ < <(sections "$t/secsize.dat" | sed -n 2p)
patch "$t/secsize.dat" $((off + 8)) ffffff7f00000000
expect_error "section size past the end of the file" "$t/secsize.dat" "remain in the file"

# An option whose size runs past its OPTIONS section (v7) and past the file (v6).
cp "$data/local-v7none.dat" "$t/optsize.dat"
read -r off _ < <(sections "$t/optsize.dat" | awk '$2 == 0' | head -1)
patch "$t/optsize.dat" $((off + 18)) ffff0000
expect_error "v7 option size past its section" "$t/optsize.dat" "remain in its section"
cp "$data/tsc-v6.dat" "$t/optsize6.dat"
read -r off _ < <(sections "$t/optsize6.dat" | awk '$2 == 0' | head -1)
patch "$t/optsize6.dat" $((off + 12)) ffffff7f
expect_error "v6 option size past the file" "$t/optsize6.dat" "remain in its section"

# A CPU whose data size would wrap past 2^64 (2^64 - 2 bytes: offset + size + the chunk
# count's 4 bytes lands 2 bytes after the offset): the BUFFER option's cpu 0 entry, found
# by the offset and size trace-cmd dump gives for it.
cp "$data/tsc.dat" "$t/wrap.dat"
read -r doff dsize < <(trace-cmd dump --options "$t/wrap.dat" 2> /dev/null |
	awk '$1 == 0 && /data offset and size/ { print $2, $3; exit }')
python3 - "$t/wrap.dat" "$doff" "$dsize" << 'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
entry = struct.pack("<IQQ", 0, int(sys.argv[2]), int(sys.argv[3]))
assert d.count(entry) == 1
i = d.index(entry)
struct.pack_into("<Q", d, i + 12, (1 << 64) - 2)
open(sys.argv[1], "wb").write(d)
PY
expect_error "cpu data size that wraps past 2^64" "$t/wrap.dat" "bytes lies past the end of the file"

# A page whose commit size exceeds the page (uncompressed v6: cpu 0's first page).
cp "$data/tsc-v6.dat" "$t/commit.dat"
coff=$(cpu0_offset "$t/commit.dat")
patch "$t/commit.dat" $((coff + 8)) 00ff0000
expect_error "page commit size beyond the page" "$t/commit.dat" "exceeds the page"

# A corrupt zstd chunk (cpu 0's first chunk of the zstd file).
cp "$data/tsc.dat" "$t/chunk.dat"
coff=$(cpu0_offset "$t/chunk.dat")
patch "$t/chunk.dat" $((coff + 12)) deadbeefdeadbeef
expect_error "corrupt compressed chunk" "$t/chunk.dat" "corrupt zstd"

# damaged_dir DIR NEEDLE WHAT: every file of DIR reports NEEDLE and exits 0 or 1, no crash.
damaged_dir() {
	local f rc
	for f in "$1"/*.dat; do
		"$HGTRACE" report "$f" > /dev/null 2> "$t/err"
		rc=$?
		if [ $rc -le 1 ] && grep -q "$2" "$t/err"; then
			tap_ok "$(basename "$f"): $3 (exit $rc)"
		else
			tap_fail "$(basename "$f"): exit $rc, $(head -c 300 "$t/err")"
		fi
	done
}

# Damaged event formats that crash libtraceevent 1.7's tep_parse_event (one found by the
# fuzzer, one by the random flips below): each is reported and skipped, never a crash.
damaged_dir "$data/damaged" "crashes libtraceevent's parser: skipped" \
	"the format libtraceevent crashes on is skipped"
# printk-format lines that make libtraceevent 1.7's printk parser read outside its buffers
# (found by the fuzzer): skipped with a warning, never handed over.
damaged_dir "$data/damaged-printk" 'printk formats: [0-9]* lines\? without "ADDR : format": skipped' \
	"the bad printk lines are skipped"

# Inputs the fuzzer (fuzz/run.sh) found a memory error on, fixed since: one line naming the
# offset, exit 1; the sanitizer run (CI) checks the memory.
#   time-shift-frac-uaf.dat  a TIME_SHIFT fraction out of range: its message read the freed
#                            samples (heap-use-after-free in peer.c)
#   print-short-record.dat   a record shorter than its format: libtraceevent copied a
#                            negative length (SIGSEGV); printed as [SHORT RECORD ...] now
#   print-fmt-modulo.dat     a print format "REC->ve%tor": a modulo by 0 (SIGFPE); the
#                            event is printed by its fields now
damaged_dir "$data/damaged-fuzz" 'offset 0x[0-9a-f]*: ' "reported in one line"
n=$("$HGTRACE" report "$data/damaged-fuzz/print-fmt-modulo.dat" 2> "$t/err" | grep -c 'local_timer_exit: *vector=236$')
if [ "$n" -gt 0 ] && grep -q 'local_timer_exit: its print format divides by something other than a nonzero constant' "$t/err"; then
	tap_ok "a print format dividing by a field: said once, $n events printed by their fields"
else
	tap_fail "print-fmt-modulo.dat: $n lines; $(head -c 300 "$t/err")"
fi
if "$HGTRACE" report "$data/damaged-fuzz/print-short-record.dat" 2> /dev/null |
	grep -q 'print: *\[SHORT RECORD: 12 bytes, its format needs 16\]'; then
	tap_ok "the 12-byte print record is printed as a short record"
else
	tap_fail "print-short-record.dat: no SHORT RECORD line"
fi
# A string field (__data_loc) whose length runs past its record: the first
# sched_process_exec record of tsc-v6.dat (found by walking CPU 0's pages, at the offset
# trace-cmd dump gives; its pid checked against trace-cmd's report) gets a filename of
# 0x7fff bytes. The record is printed as short, with the bytes it has and those its
# filename would need; the records around it as before.
off=$(trace-cmd dump --flyrecord "$data/tsc-v6.dat" 2> /dev/null | awk '$6 == "cpu" && $7 == "0]" { print $1 }')
want_pid=$(trace-cmd report --cpu 0 "$data/tsc-v6.dat" 2> /dev/null | awk '/ sched_process_exec: / { sub(/.*pid=/, ""); print $1 + 0; exit }')
short=$(python3 - "$data/tsc-v6.dat" "$t/dl.dat" "${off:-0}" 365 << 'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
page, want = int(sys.argv[3]), int(sys.argv[4])
while page:
    commit = struct.unpack_from("<Q", d, page + 8)[0] & 0xfffff
    at, end = page + 16, page + 16 + commit
    while at < end:
        w = struct.unpack_from("<I", d, at)[0]
        tl = w & 31
        if tl == 0 or tl == 29:  # length in the next word, which counts itself
            n = struct.unpack_from("<I", d, at + 4)[0] - 4
            data, at = at + 8, at + 4 + 4 + n
        elif tl >= 30:  # a time extend or a time stamp
            at += 8
            continue
        else:
            n = tl * 4
            data, at = at + 4, at + 4 + n
        if tl != 29 and struct.unpack_from("<H", d, data)[0] == want:
            loc = struct.unpack_from("<I", d, data + 8)[0]
            struct.pack_into("<I", d, data + 8, (loc & 0xffff) | 0x7fff << 16)
            open(sys.argv[2], "wb").write(d)
            pid = struct.unpack_from("<i", d, data + 12)[0]
            print(pid, n, (loc & 0xffff) + 0x7fff)
            sys.exit(0)
    page += 4096
    if page - int(sys.argv[3]) > 1 << 20:
        break
PY
)
read -r pid size need <<< "$short"
if [ -z "$pid" ] || [ "$pid" != "$want_pid" ]; then
	tap_fail "tsc-v6.dat: the first sched_process_exec on CPU 0 not found ('$short', trace-cmd's pid '$want_pid')"
elif "$HGTRACE" report "$t/dl.dat" > "$t/dl.txt" 2> "$t/err" &&
	grep -q "sched_process_exec: *\[SHORT RECORD: $size bytes, its format needs $need\]\$" "$t/dl.txt"; then
	"$HGTRACE" report "$data/tsc-v6.dat" > "$t/dl0.txt"
	if [ "$(diff "$t/dl0.txt" "$t/dl.txt" | grep -c '^[<>]')" = 2 ]; then
		tap_ok "a string field past its record (pid $pid): [SHORT RECORD: $size bytes, its format needs $need], the other lines as before"
	else
		tap_fail "a string field past its record: other lines differ ($(diff "$t/dl0.txt" "$t/dl.txt" | head -4 | tr '\n' ' '))"
	fi
else
	tap_fail "a string field past its record: no SHORT RECORD line ($(grep -m1 sched_process_exec "$t/dl.txt"); $(head -c 200 "$t/err"))"
fi
# A padding whose length (-4) leads the page's walk back to itself, as the second event of
# CPU 0's first page: libtraceevent's kbuffer walks it for ever (trace-cmd report hangs),
# hgtrace says where in one line. What came before it is printed as from the intact file.
python3 - "$data/tsc-v6.dat" "$t/loop.dat" "${off:-0}" << 'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
page = int(sys.argv[3])
if page:
    first = struct.unpack_from("<I", d, page + 16)[0] & 31  # a data event of that many words
    struct.pack_into("<II", d, page + 16 + 4 + 4 * first, 29, 0xfffffffc)
    open(sys.argv[2], "wb").write(d)
PY
timeout 60 "$HGTRACE" report "$t/loop.dat" > "$t/loop.txt" 2> "$t/err"
rc=$?
lines=$(wc -l < "$t/loop.txt")
if [ $rc = 1 ] && [ "$(wc -l < "$t/err")" = 1 ] &&
	grep -q "offset 0x[0-9a-f]*: cpu 0: padding at page offset 36 leads back to offset 36" "$t/err" &&
	[ "$lines" -gt 0 ] && "$HGTRACE" report "$data/tsc-v6.dat" | head -n "$lines" | cmp -s - "$t/loop.txt"; then
	tap_ok "a padding that leads back: one error line, the $lines lines before it as from the intact file"
else
	tap_fail "a padding that leads back: exit $rc, $lines lines, $(head -c 300 "$t/err")"
fi
for f in "$data"/damaged-fuzz/*.dat; do
	n=$(grep -c "^$(basename "$f") " "$data/damaged-fuzz/README" 2> /dev/null)
	[ "$n" = 1 ] || tap_fail "$(basename "$f") is not in damaged-fuzz/README"
done

# A GUEST option mapping a vCPU past its count (vCPU 1 of 2 made 2, the first past it):
# trace-cmd drops the option and reads on; so must hgtrace, with one warning line in the
# convention of parts left out ("...: skipped"), the report equal to trace-cmd's of the
# same file. The option is found by its bytes as trace-cmd dump prints them (name, trace
# id, count, cpu/pid pairs).
g=$data/sessions/local-drift.dat
cp "$g" "$t/guestopt.dat"
read -r goff gid < <(python3 - "$g" "$(trace-cmd dump --options "$g" 2> /dev/null)" << 'EOF2'
import re, struct, sys
d = open(sys.argv[1], "rb").read()
o = sys.argv[2]
name = re.search(r"\n(\S+) \[Guest name\]", o).group(1).encode()
tid = int(re.search(r"\n(0x[0-9A-Fa-f]+) \[trace id\]", o).group(1), 16)
pairs = [(int(c), int(p)) for c, p in re.findall(r"\n\s+(\d+) (\d+) \[guest cpu, host pid\]", o)]
pat = name + b"\0" + struct.pack("<QI", tid, len(pairs)) + b"".join(struct.pack("<II", c, p) for c, p in pairs)
at = d.find(pat) if len(pairs) == 2 and d.count(pat) == 1 else -1
# the second pair's vCPU field
print(at + len(name) + 1 + 12 + 8 if at >= 0 else -1, len(pairs))
EOF2
)
if [ "$goff" -gt 0 ]; then
	patch "$t/guestopt.dat" "$goff" 02000000
	"$HGTRACE" report --no-latency "$t/guestopt.dat" > "$t/go.txt" 2> "$t/go.err"
	rc=$?
	trace-cmd report "$t/guestopt.dat" 2> /dev/null | tail -n +2 > "$t/go-tc.txt"
	if [ $rc = 0 ] && [ "$(wc -l < "$t/go.err")" = 1 ] &&
		grep -q "^hgtrace: $t/guestopt.dat: offset 0x[0-9a-f]*: GUEST option maps vCPU 2 but counts 2 vCPUs: skipped$" "$t/go.err" &&
		[ -s "$t/go-tc.txt" ] && cmp -s <(tail -n +2 "$t/go.txt") "$t/go-tc.txt"; then
		tap_ok "a GUEST option's vCPU past its count: one warning ($(cut -d: -f4- "$t/go.err")), the report as trace-cmd's ($(wc -l < "$t/go-tc.txt") lines)"
	else
		tap_fail "a GUEST option's vCPU past its count: exit $rc, $(wc -l < "$t/go.err") stderr lines: $(head -2 "$t/go.err" | tr '\n' '|'); report differs from trace-cmd's: $(diff <(tail -n +2 "$t/go.txt") "$t/go-tc.txt" | head -3 | tr '\n' ' ')"
	fi
else
	tap_fail "the GUEST option of $g not found by its bytes ($gid pairs)"
fi

# Random byte flips must never crash: exit 0 or 1 only.
crashes=0
for i in $(seq 1 40); do
	cp "$data/tsc-v6.dat" "$t/flip.dat"
	size=$(stat -c %s "$t/flip.dat")
	for j in 1 2 3 4; do
		patch "$t/flip.dat" $(( (RANDOM * 32768 + RANDOM) % size )) "$(printf %02x $((RANDOM % 256)))"
	done
	"$HGTRACE" report "$t/flip.dat" > /dev/null 2>&1
	rc=$?
	[ $rc -gt 1 ] && { crashes=$((crashes + 1)); cp "$t/flip.dat" "/tmp/hgtrace-crash-$i.dat"; }
done
[ $crashes -eq 0 ] && tap_ok "40 randomly damaged files: no crash" || tap_fail "$crashes of 40 damaged files crashed (kept in /tmp/hgtrace-crash-*.dat)"

# A v7 file padded with 2 GiB of zeros after its sections (sparse, so cheap): read as if
# the zeros were not there, in the time and memory of the file itself.
cp "$data/tsc.dat" "$t/pad.dat"
truncate -s +2G "$t/pad.dat"
for cmd in dump report; do
	/usr/bin/time -f "%e %M" -o "$t/time" "$HGTRACE" $cmd "$t/pad.dat" > "$t/pad.out" 2> "$t/pad.err"
	rc=$?
	read -r secs kb < "$t/time"
	# the same command on the file without the zeros: the padded one may cost a little more
	# (sanitizer builds cost more for both), never in proportion to the 2 GiB
	/usr/bin/time -f "%e %M" -o "$t/time" "$HGTRACE" $cmd "$data/tsc.dat" > "$t/pad.want" 2> /dev/null
	read -r wsecs wkb < "$t/time"
	# the report's lines: trace-cmd's of the file without the zeros
	[ $cmd = report ] && "$HGTRACE" report --no-latency "$t/pad.dat" > "$t/pad.out" 2> /dev/null &&
		trace-cmd report "$data/tsc.dat" > "$t/pad.want" 2> /dev/null
	if [ $rc = 0 ] && [ ! -s "$t/pad.err" ] && { [ $cmd = dump ] || cmp -s "$t/pad.out" "$t/pad.want"; } &&
		[ "${kb:-999999}" -lt $((wkb * 3 / 2 + 8192)) ] && [ "$(echo "$secs < $wsecs + 2" | bc)" = 1 ]; then
		tap_ok "$cmd of a file with 2 GiB of zeros after it: ${secs} s, ${kb} KB (${wsecs} s, ${wkb} KB without them)$([ $cmd = report ] && echo "; its $(wc -l < "$t/pad.out") lines = trace-cmd's of the file without them")"
	else
		tap_fail "$cmd of a padded file: exit $rc, ${secs} s, ${kb} KB (${wsecs} s, ${wkb} KB without): $(head -2 "$t/pad.err")"
	fi
done
rm -f "$t/pad.dat"

# refused_once WHAT NEEDLE OUT CMD...: CMD (its output to OUT) exits 1 with one line on
# stderr that contains NEEDLE.
refused_once() {
	local what=$1 needle=$2 out=$3 rc
	shift 3
	"$@" > "$out" 2> "$t/err"
	rc=$?
	if [ $rc = 1 ] && [ "$(wc -l < "$t/err")" = 1 ] && grep -qF -- "$needle" "$t/err"; then
		tap_ok "$what: exit 1 ($(cat "$t/err"))"
	else
		tap_fail "$what: exit $rc: $(head -2 "$t/err")"
	fi
}

# A FIFO with no writer: refused at once, one line, for every command that reads files.
mkfifo "$t/fifo"
for c in report dump simpletrace "convert -o $t/x.dat -i" "attach $data/tsc.dat" "sync-check $data/tsc.dat" \
	export why; do
	# shellcheck disable=SC2086 # exit 124: the timeout's, it hung
	refused_once "${c%% *} on a FIFO with no writer, refused at once" \
		"fifo: not a regular file" /dev/null timeout 10 "$HGTRACE" $c "$t/fifo"
done

# Standard output on a full device: every command that prints to it says so in one line and
# exits 1 (a command that did not look at its writes included: main.c checks at the end).
"$HGTRACE" simulate -o "$t/s" --vcpus 2 --events 2000 --embed-sync > /dev/null
for c in "report $data/tsc.dat" "dump $data/tsc.dat" "sync-check $t/s-host.dat $t/s-guest.dat" \
	"simulate -o - --events 100" \
	"report --stat $data/tsc.dat" "why --json $t/s-host.dat $t/s-guest.dat"; do
	# shellcheck disable=SC2086
	refused_once "${c%% *} > /dev/full" "${c%% *}: write failed: No space left on device" \
		/dev/full "$HGTRACE" $c
done
tap_done
