# Recount, independently of hgtrace's sync check, from trace-cmd's merged report (`report -t`,
# full timestamps) of a TCG host and its guest, at zero tolerance: a guest event is inside
# when its vCPU's host thread runs, between a sched_switch to it and the next one away from
# it, bounds included. A thread switched out with no switch to it seen (this machine's kernel
# often records no switch from the idle task) ran since the previous switch on that CPU, no
# earlier; one that another switch on its CPU replaced ran until then. Events of a thread not yet seen
# switching are unchecked (it may have run since before the host's recording), and so are
# those after the host's last record with no window after them. Prints "N
# inside, M outside, K unchecked".
# Variables: host=FILE (the host's file name as trace-cmd prints it), pids="P0 P1 ..." (guest
# CPU i runs in the i-th thread); from=TS, to=TS (both or neither, the report's stamps
# without their dot): guest events outside them are unchecked (a recording cut by a kill,
# whose CPUs' pages end at different times: see cut-span.awk).
BEGIN { n = split(pids, p, " "); for (i = 1; i <= n; i++) { thread[i - 1] = p[i]; watch[p[i]] = 1 } }
{
	file = $1; sub(/:$/, "", file)
	if (!match($0, /-[0-9]+ +\[[0-9]+\] *[0-9.]+: +[a-z_]+:/)) next
	split(substr($0, RSTART, RLENGTH), f, /[][ :]+/)
	# "SEC.NSEC" (report -t) as integer ns, exact in awk's doubles; cycles as they are. Keys
	# keep the digits (mawk makes a large number a key by CONVFMT, "%.6g")
	cpu = f[2] + 0; tss = f[3]; ev = f[4]; gsub(/\./, "", tss); ts = tss + 0
	if (file == host) {
		hlast = ts
		if (ev != "sched_switch") next
		# "PREV_COMM:PREV_PID [PRIO] STATE ==> NEXT_COMM:NEXT_PID [PRIO]" (comms may hold
		# blanks: "CPU 0/TCG"), or the raw "prev_pid=P ... next_pid=Q"
		rest = substr($0, RSTART + RLENGTH)
		if (index(rest, "prev_pid=")) {
			prev = rest; sub(/.*prev_pid=/, "", prev); sub(/ .*/, "", prev)
			next_ = rest; sub(/.*next_pid=/, "", next_); sub(/ .*/, "", next_)
		} else {
			k = index(rest, " ==> ")
			prev = pid_of(substr(rest, 1, k - 1)); next_ = pid_of(substr(rest, k + 5))
		}
		if (prev in watch) {
			if (seen[prev] && !run[prev] && (cpu in last_sw))
				settle(prev, last_sw[cpu], 2) # its switch-in lost: running since then
			settle(prev, ts, 0); run[prev] = 0; last_out[prev] = ts; seen[prev] = 1
		}
		# a thread running here that this switch does not switch out: its switch-out was
		# lost, it ran until now
		for (w in watch)
			if (run[w] && on[w] == cpu && w != prev) { run[w] = 0; last_out[w] = ts }
		if (next_ in watch) { settle(next_, ts, 1); run[next_] = 1; seen[next_] = 1; on[next_] = cpu }
		last_sw[cpu] = ts
		next
	}
	t = thread[cpu]
	if (to != "" && (ts < from + 0 || ts > to + 0)) unchecked++
	else if (run[t] || (seen[t] && last_out[t] == ts)) inside++
	else pend[t, tss]++
}
# the pid of "COMM:PID [PRIO]..." (the last ":PID [" in S)
function pid_of(s,   r) {
	r = ""
	while (match(s, /:[0-9]+ \[/)) { r = substr(s, RSTART + 1, RLENGTH - 3); s = substr(s, RSTART + RLENGTH) }
	return r
}
# the pending events of thread T at its switch at TS (IN: 1 a switch to it; 0 away from
# it; 2 it ran since TS, up to now: those at or after TS are inside, the others stay)
function settle(t, ts, in_,   k, q) {
	for (k in pend) {
		split(k, q, SUBSEP)
		if (q[1] != t) continue
		if (in_ == 2) { if (q[2] + 0 >= ts) { inside += pend[k]; delete pend[k] } continue }
		if (!seen[t]) unchecked += pend[k]
		else if (in_ && q[2] + 0 == ts) inside += pend[k]
		else outside += pend[k]
		delete pend[k]
	}
}
END {
	# still waiting: outside when the host recorded past them, else nothing can be said
	for (k in pend) {
		split(k, q, SUBSEP)
		if (seen[q[1]] && q[2] + 0 <= hlast) outside += pend[k]
		else unchecked += pend[k]
	}
	printf "%d inside, %d outside, %d unchecked\n", inside, outside, unchecked
}
