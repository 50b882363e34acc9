# Recount, independently of hgtrace's sync check, from trace-cmd's merged report (`report -t`,
# full timestamps) of a host and its guest: a guest event is inside when its vCPU's host thread
# is between a kvm_entry and the next kvm_exit, bounds included (an event stamped the same
# nanosecond as an entry may be printed before it). Prints "N inside, M outside".
# Variables: host=FILE (the host's file name as trace-cmd prints it), pids="P0 P1 ..." (guest
# CPU i runs in the i-th thread).
BEGIN { n = split(pids, p, " "); for (i = 1; i <= n; i++) thread[i - 1] = p[i] }
{
	file = $1; sub(/:$/, "", file)
	if (!match($0, /-[0-9]+ +\[[0-9]+\] +[0-9.]+: +[a-z_]+:/)) next
	split(substr($0, RSTART, RLENGTH), f, /[][ :]+/)
	pid = substr(f[1], 2); cpu = f[2] + 0; ts = f[3]; ev = f[4]
	if (file == host) {
		if (ev == "kvm_entry") {
			in_guest[pid] = 1
			for (k in pend) {
				split(k, q, SUBSEP)
				if (q[1] != pid) continue
				if (q[2] == ts) inside += pend[k]
				else outside += pend[k]
				delete pend[k]
			}
		} else if (ev == "kvm_exit") {
			in_guest[pid] = 0; last_exit[pid] = ts
		}
		next
	}
	t = thread[cpu]
	if (in_guest[t] || last_exit[t] == ts) inside++
	else pend[t, ts]++
}
END {
	for (k in pend) outside += pend[k]
	printf "%d inside, %d outside\n", inside, outside
}
