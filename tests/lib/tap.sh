# TAP helpers for hgtrace's shell tests. Each check prints "ok N - what" or "not ok N - what";
# the plan line comes last. A test that cannot run prints "1..0 # SKIP reason" and exits 0
# (meson reads the plan as a skip; it would call exit status 77 an error under TAP).
_tap_n=0
_tap_fail=0
tap_ok() { _tap_n=$((_tap_n + 1)); echo "ok $_tap_n - $*"; }
tap_fail() { _tap_n=$((_tap_n + 1)); _tap_fail=$((_tap_fail + 1)); echo "not ok $_tap_n - $*"; }
tap_skip() { _tap_n=$((_tap_n + 1)); echo "ok $_tap_n - $1 # SKIP ${2:-}"; }
tap_skip_all() { echo "1..0 # SKIP $*"; exit 0; }
# tap_check WHAT CMD...: ok when CMD succeeds.
tap_check() {
	local what=$1
	shift
	if "$@"; then tap_ok "$what"; else tap_fail "$what"; fi
}
tap_done() { echo "1..$_tap_n"; [ "$_tap_fail" -eq 0 ]; exit $?; }

# Compare two files; on a difference show the first lines of the diff as TAP comments. Two
# empty files are no agreement: the want file must hold something.
tap_cmp() {
	local what=$1 got=$2 want=$3
	if [ ! -s "$want" ]; then
		tap_fail "$what (nothing to compare: $want is empty)"
	elif cmp -s "$got" "$want"; then
		tap_ok "$what"
	else
		tap_fail "$what"
		diff "$got" "$want" | head -8 | sed 's/^/# /'
	fi
}

# trace-cmd 3.1.6 prints no latency column; remove exactly that column from hgtrace's lines:
# " xxxxx" (5 chars) or, with -R, "-0xFLAGS" right after "[CPU]".
strip_latency() {
	sed -E 's/^(.*-[0-9]+ +\[[0-9]{3}\])( [^ ]{5}|-0x[0-9a-f]{1,2})/\1/'
}

# tap_workdir: work in a new temporary directory ($t), removed at exit with the test's
# background jobs killed; HGT_KEEP=1 keeps it (and says where).
tap_workdir() {
	t=$(mktemp -d)
	trap _tap_cleanup EXIT
	cd "$t" || exit 1
}
_tap_cleanup() {
	jobs -p | xargs -r kill 2> /dev/null
	if [ -n "${HGT_KEEP:-}" ]; then echo "# kept $t"; else rm -rf "$t"; fi
}

# tap_refuses WHAT "FILE..." CMD...: CMD must fail with exactly one line on stderr and leave
# every FILE byte-identical; with TAP_WANT=TEXT set (TAP_WANT=... tap_refuses ...), that
# line must also say TEXT (a fixed string), one check in all.
tap_refuses() {
	local what=$1 files=$2 f
	shift 2
	for f in $files; do cp "$f" "$f.tap-orig"; done
	if "$@" > tap-out.txt 2> tap-err.txt; then
		tap_fail "$what: refused (it exited 0: $(head -c 300 tap-out.txt))"
		return
	fi
	if [ "$(wc -l < tap-err.txt)" != 1 ]; then
		tap_fail "$what: one error line, got: $(cat tap-err.txt)"
		return
	fi
	for f in $files; do
		if ! cmp -s "$f" "$f.tap-orig"; then
			tap_fail "$what: $f unchanged"
			return
		fi
	done
	if [ -n "${TAP_WANT:-}" ] && ! grep -qF -- "$TAP_WANT" tap-err.txt; then
		tap_fail "$what: the error line should say '$TAP_WANT': $(cat tap-err.txt)"
		return
	fi
	tap_ok "$what: refused, files unchanged${TAP_WANT:+, saying '$TAP_WANT'} ($(cat tap-err.txt))"
}

# wait_for_line FILE REGEX [SECONDS]: until a line of FILE matches REGEX (grep -E); the
# seconds (60) are only a hang guard. Returns 1 when they passed.
wait_for_line() {
	local f=$1 re=$2 end=$((SECONDS + ${3:-60}))
	until grep -qE -- "$re" "$f" 2> /dev/null; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.02
	done
}

# wait_exit PID [SECONDS]: wait for background job PID; its exit status, or 124 (and the
# job killed) when it outlived the seconds (60), a hang guard.
wait_exit() {
	local p=$1 end=$((SECONDS + ${2:-60}))
	while kill -0 "$p" 2> /dev/null; do
		if [ $SECONDS -ge $end ]; then
			kill -9 "$p" 2> /dev/null
			wait "$p" 2> /dev/null
			return 124
		fi
		sleep 0.02
	done
	wait "$p"
}

# free_port: a TCP port on 127.0.0.1 nothing listens on now, chosen by the kernel (never
# one derived from $$: tests running side by side would pick neighbours).
free_port() {
	python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_listen PORT [PID]: until a TCP socket listens on PORT (/proc/net/tcp, state 0A:
# nothing connects to it); with PID, that process must still run (a listener that could not
# bind is not mistaken for another's socket). 60 s at most, a hang guard. Returns 1 then.
wait_listen() {
	local hex end=$((SECONDS + 60))
	hex=$(printf '%04X' "$1")
	until awk -v p=":$hex" '$2 ~ p"$" && $4 == "0A" { f = 1 } END { exit !f }' /proc/net/tcp /proc/net/tcp6 2> /dev/null; do
		[ $SECONDS -ge $end ] && return 1
		[ -n "${2:-}" ] && ! kill -0 "$2" 2> /dev/null && return 1
		sleep 0.02
	done
	[ -z "${2:-}" ] || kill -0 "$2" 2> /dev/null
}
