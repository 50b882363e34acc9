# Making real recordings with Debian's trace-cmd, for conformance tests and tests/data.
# A bind-mounted short kallsyms keeps the files small (the full one is ~5 MB).

TRACEFS=/sys/kernel/tracing

tracefs_ready() {
	[ "$(id -u)" -eq 0 ] || { echo "not root"; return 1; }
	command -v trace-cmd >/dev/null || { echo "trace-cmd is not installed"; return 1; }
	if [ ! -e $TRACEFS/trace_clock ]; then
		mount -t tracefs nodev $TRACEFS 2>/dev/null || { echo "no tracefs"; return 1; }
	fi
	[ -w $TRACEFS/trace_clock ] || { echo "tracefs is not writable"; return 1; }
	command -v unshare >/dev/null || { echo "unshare missing"; return 1; }
	return 0
}

# A short kallsyms: the symbols our events print (timers, scheduler, syscalls).
small_kallsyms() {
	grep -E ' [tT] (hrtimer|tick_|process_timeout|__x64_sys|schedule|do_|delayed_work|rcu_|it_real)' \
		/proc/kallsyms > "$1.all" || true
	head -3000 "$1.all" > "$1"
	rm -f "$1.all"
}

# The workload recorded: file system walks, small processes, a sleep.
write_workload() {
	cat > "$1" <<'WL'
ls -R /usr/share/doc/coreutils /usr/share/doc/trace-cmd >/dev/null 2>&1
for i in 1 2 3; do cat /proc/self/stat >/dev/null; done
sleep 0.05
WL
}

workload() {
	local w
	w=$(mktemp)
	write_workload "$w"
	sh "$w"
	rm -f "$w"
}

# record_top OUT CLOCK: trace-cmd record on the top instance (serialized by a lock, since
# tests run in parallel and the top instance is shared).
record_top() {
	local out=$1 clock=$2 ks w
	ks=$(mktemp)
	w=$(mktemp)
	small_kallsyms "$ks"
	write_workload "$w"
	(
		flock 9
		unshare -m sh -c "mount --bind '$ks' /proc/kallsyms && \
			trace-cmd record -d --no-filter -C $clock -e sched -e irq -e timer \
			-e syscalls -o '$out' -- sh '$w'" >/dev/null 2>&1 || true
	) 9>/tmp/hgtrace-tracefs-top.lock
	rm -f "$ks" "$w"
	[ -s "$out" ]
}

# record_all_events OUT LOG: trace-cmd record -e all on the top instance (under its lock),
# with a workload of file system walks, block writes, small processes and, where the
# kernel lets it run (dl_task_ok), a SCHED_DEADLINE task: its prio is -1 in the sched
# events.
DL_CHRT='chrt -d --sched-runtime 200000 --sched-deadline 1000000 --sched-period 1000000 0'
dl_task_ok() { $DL_CHRT true 2> /dev/null; }
# (and TCP over 127.0.0.1, for tcp_probe: its addresses are __u8 arrays, bytes not text)
LOOPBACK_TCP='import socket
s = socket.create_server(("127.0.0.1", 0))
c = socket.create_connection(s.getsockname())
a = s.accept()[0]
for i in range(20):
    c.sendall(b"x" * 1000)
    a.recv(1000, socket.MSG_WAITALL)
    a.sendall(b"y" * 100)
    c.recv(100, socket.MSG_WAITALL)'
# (and, in a network namespace of its own, UDP from 65.66.67.68 to 69.70.71.72: the
# route lookup's fib_table_lookup has src "ABCD" with no NUL, then dst "EFGH", which
# libtraceevent prints as the text "ABCDEFGH..." read on past src; icmp_send's saddr
# reads on through daddr into sport, __u16 in the machine's order: from port 18761 "IJ",
# from port 37130 a newline, which cuts the report's line)
PRINTABLE_ROUTE='ip link set lo up && ip addr add 65.66.67.68/32 dev lo && ip addr add 69.70.71.72/32 dev lo && python3 -c "import socket
for port in (18761, 37130):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((\"65.66.67.68\", port))
    s.connect((\"69.70.71.72\", 9))
    s.send(b\"x\")"'
# all_events_workload: the command line of that workload (Debian's own commands: a python3
# found first elsewhere in PATH may be a wrapper script, pyenv's, whose shells and helpers
# would outnumber the workload's events five to one).
all_events_workload() {
	local dl=:
	dl_task_ok && dl="$DL_CHRT sleep 0.01"
	echo "PATH=/usr/sbin:/usr/bin:/sbin:/bin; ls -R /usr/share/doc/coreutils > /dev/null; dd if=/dev/zero of=dd.out bs=4k count=50 conv=fsync 2> /dev/null; rm -f dd.out; $dl; python3 -c '$LOOPBACK_TCP'; unshare -n sh -c '$PRINTABLE_ROUTE'; sleep 0.05"
}
record_all_events() {
	(
		flock 9
		trace-cmd record -d --no-filter -e all -o "$1" -- sh -c "$(all_events_workload)" > "$2" 2>&1
	) 9> /tmp/hgtrace-tracefs-top.lock
	[ -s "$1" ]
}

# record_workload_events OUT LOG: the same events of the workload's own tasks only (the
# instance's set_event_pid, with event-fork: its children too), in an instance of its own
# (8 MB a CPU, more than the workload fills), taken by trace-cmd extract (which deletes
# the instance): as big wherever it runs, where record_all_events also takes whatever the
# machine's other tasks do meanwhile (430,000 events on a quiet machine, more when busy).
record_workload_events() {
	local inst=hgt_allev$$
	local d=$TRACEFS/instances/$inst
	# (the events enabled with tracing off: enabling them is work of their own)
	mkdir "$d" || return 1
	if ! { echo 0 > "$d/tracing_on" && echo 8192 > "$d/buffer_size_kb" &&
		echo 1 > "$d/options/event-fork" && echo 1 > "$d/events/enable"; }; then
		rmdir "$d"
		return 1
	fi
	# shellcheck disable=SC2016
	sh -c 'echo $$ > "$1/set_event_pid" && echo 1 > "$1/tracing_on" && exec sh -c "$2"' \
		sh "$d" "$(all_events_workload)" > "$2" 2>&1
	echo 0 > "$d/tracing_on"
	trace-cmd extract -B "$inst" -o "$1" >> "$2" 2>&1
	[ ! -d "$d" ] || rmdir "$d"
	[ -s "$1" ]
}

# record_instance_overrun OUT NAME: an instance with a tiny buffer, filled until it overruns,
# then extracted (trace-cmd extract -B deletes the instance).
record_instance_overrun() {
	local out=$1 name=$2 ks i=$TRACEFS/instances/$2
	ks=$(mktemp)
	small_kallsyms "$ks"
	rmdir "$i" 2>/dev/null || true
	mkdir "$i" || return 1
	echo 8 > "$i/buffer_size_kb"
	echo x86-tsc > "$i/trace_clock"
	for s in sched irq timer syscalls; do echo 1 > "$i/events/$s/enable"; done
	echo 1 > "$i/tracing_on"
	workload; workload
	echo 0 > "$i/tracing_on"
	unshare -m sh -c "mount --bind '$ks' /proc/kallsyms && trace-cmd extract -B $name -o '$out'" \
		>/dev/null 2>&1 || true
	rmdir "$i" 2>/dev/null || true
	rm -f "$ks"
	[ -s "$out" ]
}

# tc_sync_leftovers BEFORE: remove the tracefs instances trace-cmd's time sync made and left
# (clock_synch*) that are not in BEFORE (the list of instances at the test's start).
tc_sync_leftovers() {
	local i
	for i in $(ls /sys/kernel/tracing/instances); do
		grep -qx -- "$i" <<< "$1" || case $i in clock_synch*) rmdir "/sys/kernel/tracing/instances/$i" ;; esac
	done
}

# tc_run SECONDS LOG CMD...: run CMD (trace-cmd) in a process group of its own, its output
# in LOG; its exit status (124 when it outlived SECONDS, a hang guard). Whatever of the
# group is left then is killed: trace-cmd's recorder children can outlive a trace-cmd that
# died (they would go on reading, orphans, after the test).
tc_run() {
	local secs=$1 log=$2 pid st
	shift 2
	setsid "$@" > "$log" 2>&1 &
	pid=$!
	wait_exit "$pid" "$secs"
	st=$?
	kill -KILL -- -"$pid" 2> /dev/null
	return $st
}

# switches_held WHAT COMM REPORT: a check that REPORT (trace-cmd report lines) was recorded
# with -f 'next_comm != "COMM"': COMM ran (switches away from it are there), yet no switch
# to it is
switches_held() {
	local to from
	to=$(grep -c "==> $2:" "$3")
	from=$(grep -c "sched_switch: *$2:" "$3")
	if [ "$to" -eq 0 ] && [ "$from" -gt 0 ]; then
		tap_ok "$1 -f 'next_comm != \"$2\"': of $(wc -l < "$3") events, $from switches away from $2, none to it"
	else
		tap_fail "$1 -f 'next_comm != \"$2\"': $to switches to $2, $from away from it"
	fi
}

# pair_check HOST GUEST BOUND: the events both files of one kernel hold (pair-events.awk,
# from trace-cmd's reports: hraw.txt, graw.txt and gcor.txt are left for more checks): at
# least half of the guest's paired (and 100: a quiet machine switches little), each
# corrected guest time within BOUND ns of its raw time (the truth: one kernel's clock)
pair_check() {
	local m far ng worst skew
	trace-cmd report --raw-ts -i "$1" 2> /dev/null | tail -n +2 > hraw.txt
	trace-cmd report --raw-ts -i "$2" 2> /dev/null | tail -n +2 > graw.txt
	trace-cmd report -t -i "$2" 2> /dev/null | tail -n +2 > gcor.txt
	read -r m far ng worst skew < <(awk -v b="$3" -f "$here/lib/pair-events.awk" \
		hraw.txt graw.txt gcor.txt)
	if [ "$m" -ge 100 ] && [ $((2 * m)) -ge "$ng" ] && [ "$far" -eq 0 ]; then
		tap_ok "$m of $ng guest events also in the host's file (same CPU and fields; raw times up to $skew ns apart): trace-cmd's correction of each within $worst ns of the truth 0, bound $3 ns"
	else
		tap_fail "events in both: $m of $ng (want half, and 100), $far beyond $3 ns (worst $worst, raw skew $skew)"
	fi
}

# time_shift_check WHAT FILE NCPU BOUND [MIN [CONTEXT]]: FILE's TIME_SHIFT as trace-cmd dump reads it:
# NCPU CPUs, each with the same sample count (at least MIN, 1 unless given; trace-cmd
# 3.1.6 writes each CPU's count as the last CPU's, so from trace-cmd's host counts that
# differ make an option
# it cannot read; TS_ANY_COUNTS=1 for a file hgtrace wrote, whose counts may differ),
# every sample printed, and every offset within BOUND ns of the truth 0; CONTEXT (a log's
# lines, say) ends the message of a failure
time_shift_check() {
	local what=$1 f=$2 ncpu=$3 bound=$4 min=${5:-1} ctx=${6:-} r
	trace-cmd dump --options -i "$f" > ts-dump.txt 2>&1
	r=$(awk -v b="$bound" -v want="$ncpu" -v min="$min" -v any="${TS_ANY_COUNTS:-0}" '
		/samples count for CPU/ { n[c++] = $1 + 0 }
		/offset \* scaling/ { s++; o = $1 + 0; if (o < 0) o = -o; if (o > b) bad++; offs = offs " " $1 }
		/Broken time shift/ { broken++ }
		END {
			for (i = 0; i < c; i++) { sum += n[i]; cnts = cnts (i ? "+" : "") n[i]; if (i && n[i] != n[0] && !any) uneq++; if (n[i] < min) few++ }
			ok = (c == want && !uneq && !few && s == sum && !broken && !bad && b > 0)
			printf "%d %d CPUs, %s samples (%d printed):%s\n", ok, c, cnts, s + 0, offs
		}' ts-dump.txt)
	if [ "${r%% *}" = 1 ]; then
		tap_ok "$what: TIME_SHIFT read back by trace-cmd, ${r#* }; each within $bound ns of the truth 0"
	else
		tap_fail "$what: TIME_SHIFT: want $ncpu CPUs with equal counts (at least $min), all printed, within $bound ns; got ${r#* }: $(sed -n '/TimeShift/,$p' ts-dump.txt | tr '\n' '|' | tail -c 500)${ctx:+ / $ctx}"
	fi
}
