# Compare `hgtrace report` with `trace-cmd report` (or a stored copy of its output).
# Single-file option sets exercised on every file:
SINGLE_OPTS=("" "-t" "-N" "-R" "--cpu 1" "--cpu 0" "-F sched_switch" "-F .*:common_pid!=0"
	"-v -F sched_switch" "--ts-diff" "--nodate" "--raw-ts" "--stat" "--first-event"
	"--last-event" "--cpus")

# Is FILE printed with raw counters (x86-tsc without TSC2NSEC)?
raw_counter_file() {
	"$HGTRACE" dump "$1" | grep -q '(raw counter)'
}

# hgtrace's output with the latency column removed. With -R on a raw-counter file the
# "-0xFLAGS" column is glued to the counter's digits, so there the --no-latency line format
# (the same lines without the column) is used instead of text surgery.
hgt_report_nolat() {
	local f
	for f in "$@"; do :; done
	if [[ " $* " == *" -R "* ]] && raw_counter_file "$f"; then
		"$HGTRACE" report --no-latency "$@"
	else
		"$HGTRACE" report "$@" | strip_latency
		return "${PIPESTATUS[0]}"
	fi
}

# _judge WHAT DIR RC: compare DIR/got (hgtrace, with its exit line) and DIR/want (trace-cmd,
# which exited with RC).
_judge() {
	local what=$1 t=$2 rc=$3
	if [ "$rc" -ge 128 ]; then
		# trace-cmd 3.1.6 crashes here (e.g. -F on files with instances): nothing to
		# compare with, but hgtrace must succeed.
		if grep -q "exit status: 0" "$t/got"; then
			tap_ok "$what: succeeds where trace-cmd crashes (status $rc)"
		else
			tap_fail "$what: succeeds where trace-cmd crashes (status $rc)"
		fi
		return
	fi
	echo "exit status: $([ "$rc" -eq 0 ] && echo 0 || echo non-zero)" >> "$t/want"
	tap_cmp "$what" "$t/got" "$t/want"
}

# compare_live WHAT ARGS...: hgtrace vs trace-cmd run now on the same ARGS.
compare_live() {
	local what=$1 t
	shift
	t=$(mktemp -d)
	hgt_report_nolat "$@" > "$t/got" 2> "$t/err"
	echo "exit status: $([ $? -eq 0 ] && echo 0 || echo non-zero)" >> "$t/got"
	trace-cmd report "$@" > "$t/want" 2>/dev/null
	_judge "$what" "$t" $?
	rm -rf "$t"
}

# compare_as WHAT HGFILE TCFILE ARGS...: hgtrace on HGFILE vs trace-cmd on TCFILE, same
# ARGS (for files trace-cmd cannot read, e.g. zlib here, written from TCFILE by hgtrace;
# give both the same base name, which some outputs print).
compare_as() {
	local what=$1 hf=$2 tf=$3 t
	shift 3
	t=$(mktemp -d)
	hgt_report_nolat "$@" "$hf" > "$t/got" 2> "$t/err"
	echo "exit status: $([ $? -eq 0 ] && echo 0 || echo non-zero)" >> "$t/got"
	trace-cmd report "$@" "$tf" > "$t/want" 2>/dev/null
	_judge "$what" "$t" $?
	rm -rf "$t"
}
