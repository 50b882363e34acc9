# Recount, independently of hgtrace's sync check, from trace-cmd's merged report (`report -t`,
# full timestamps) of a host and its guest: a guest event is inside when its vCPU's host thread
# is between a kvm_entry and the next kvm_exit, bounds included (an event stamped the same
# nanosecond as an entry may be printed before it); outside when the host recorded past it
# and no window of its thread held it; unchecked when nothing can be said: before its
# thread's first kvm event (unless the first is an entry at that very time), or after the
# host's last record with its thread out of guest mode. Prints "N inside, M outside", and
# ", K unchecked" when K > 0.
# Variables: host=FILE (the host's file name as trace-cmd prints it), pids="P0 P1 ..." (guest
# CPU i runs in the i-th thread).
BEGIN { n = split(pids, p, " "); for (i = 1; i <= n; i++) thread[i - 1] = p[i] }
function settle(pid, ts, first,    k, q) {
	for (k in pend) {
		split(k, q, SUBSEP)
		if (q[1] != pid) continue
		if (q[2] == ts) inside += pend[k]
		else if (q[3]) unchecked += pend[k]
		else outside += pend[k]
		delete pend[k]
	}
}
{
	file = $1; sub(/:$/, "", file)
	if (!match($0, /-[0-9]+ +\[[0-9]+\] +[0-9.]+: +[a-z_]+:/)) next
	split(substr($0, RSTART, RLENGTH), f, /[][ :]+/)
	pid = substr(f[1], 2); cpu = f[2] + 0; ts = f[3]; ev = f[4]
	if (file == host) {
		hlast = ts
		if (ev == "kvm_entry") {
			settle(pid, ts)
			in_guest[pid] = 1; seen[pid] = 1
		} else if (ev == "kvm_exit") {
			# a first exit: what waited before it cannot be placed
			if (!seen[pid]) settle(pid, "")
			in_guest[pid] = 0; last_exit[pid] = ts; seen[pid] = 1
		}
		next
	}
	t = thread[cpu]
	if (in_guest[t] || last_exit[t] == ts) inside++
	else pend[t, ts, !seen[t]]++
}
END {
	for (k in pend) {
		split(k, q, SUBSEP)
		if (q[3] || q[2] + 0 > hlast + 0) unchecked += pend[k]
		else outside += pend[k]
	}
	printf "%d inside, %d outside%s\n", inside, outside, unchecked ? ", " unchecked " unchecked" : ""
}
