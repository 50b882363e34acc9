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

# filter_lines EXPR [v]: of a report on stdin, the lines trace-cmd's `[-v] -F EXPR` keeps:
# `EVENT` keeps that event's lines (`v` drops them instead), `.*:common_pid!=0` drops pid 0's.
# The cpus= headers stay. An "[EVENTS DROPPED]" line is printed with the record after it
# (the first after the loss): it stays only when that record does. Returns 2 for other
# filters.
filter_lines() {
	local a
	case $1 in
	.\*:common_pid!=0) a='$0 !~ /-0 +\[[0-9]+\] /' ;;
	*[!a-z_]*) return 2 ;;
	*) a="index(\$0, \": $1: \")"; [ "${2:-}" = v ] && a="!$a" ;;
	esac
	awk "/cpus=[0-9]+\$/ { print; next }
	     /CPU:[0-9]+ \\[([0-9]+ )?EVENTS DROPPED\\]/ { drop = \$0; next }
	     { keep = $a; if (keep && drop != \"\") print drop; drop = \"\"; if (keep) print }"
}

# _unfiltered_want DIR ARGS...: when trace-cmd crashed on a -F filter, DIR/want becomes its
# report without the filter (the same ARGS less -F EXPR and -v), filtered by filter_lines.
# Returns 1 for other filters, when none was given, or when no line is left.
_unfiltered_want() {
	local t=$1 expr="" inv=""
	shift
	local args=()
	while [ $# -gt 0 ]; do
		case $1 in
		-F) expr=$2; shift 2 ;;
		-v) inv=v; shift ;;
		*) args+=("$1"); shift ;;
		esac
	done
	[ -n "$expr" ] || return 1
	trace-cmd report "${args[@]}" 2> /dev/null | filter_lines "$expr" $inv > "$t/want" ||
		return 1
	[ "$(grep -vc 'cpus=' "$t/want")" -gt 0 ] || return 1
	echo "exit status: 0" >> "$t/want"
}

# _judge WHAT DIR RC ARGS...: compare DIR/got (hgtrace, with its exit line) and DIR/want
# (trace-cmd on ARGS, which exited with RC).
_judge() {
	local what=$1 t=$2 rc=$3
	shift 3
	if [ "$rc" -ge 128 ]; then
		# trace-cmd 3.1.6 crashes here (-F on files with instances): its unfiltered
		# report, filtered by the test, is the answer.
		if _unfiltered_want "$t" "$@"; then
			tap_cmp "$what (trace-cmd crashes, status $rc: compared with its unfiltered lines)" \
				"$t/got" "$t/want"
		else
			tap_fail "$what: trace-cmd crashes (status $rc) and no expectation can be derived"
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
	_judge "$what" "$t" $? "$@"
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
	_judge "$what" "$t" $? "$@" "$tf"
	rm -rf "$t"
}
